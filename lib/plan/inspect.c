/* SPDX-License-Identifier: MIT */
/*
 * What a policy would be, as text, for review: its key=value lines, its Containerfile, the
 * entrypoint's ruleset and plan (printed by the same netpolicy code the entrypoint runs, over
 * the plan's argv), and aisb inspect's summary and JSON. Each renders the plan a run would
 * make (inspect_plan); nothing here starts anything.
 */
#include <stdio.h>

#include "inspect.h"
#include "harness.h"
#include "image.h"
#include "jsonutil.h"
#include "netpolicy.h"

int aisb_policy_format(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        _cleanup_free_ char *tag = NULL;
        int r = aisb_image_tag(p, &tag, err);
        if (r < 0)
                return r;
        return policy_format(p, tag, ret_text, err);
}

int aisb_policy_containerfile(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        return image_containerfile(p, ret_text, err);
}

int inspect_plan(const aisb_policy *p, const char *image, bool network_only, plan_facts *ret_facts,
                 run_plan *ret_plan, aisb_error **err)
{
        _cleanup_(plan_facts_done) plan_facts f = {};
        _cleanup_free_ char *tag = NULL;
        int r = network_only || image ? 0 : aisb_image_tag(p, &tag, err);
        if (r >= 0)
                r = plan_gather(p,
                                &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = image ? image : tag,
                                                         .network_only = network_only },
                                &f, err);
        if (r < 0)
                return r;
        r = plan_build(p, &f, ret_plan, err);
        if (r < 0)
                return r;
        *ret_facts = f;
        f = (plan_facts) {};
        return 0;
}

int inspect_network(const aisb_policy *p, sandbox_network *ret, aisb_error **err)
{
        _cleanup_(plan_facts_done) plan_facts f = {};
        _cleanup_(run_plan_done) run_plan plan = {};
        int r = inspect_plan(p, NULL, true, &f, &plan, err);
        if (r < 0)
                return r;
        *ret = plan.net;
        plan.net = (sandbox_network) {};
        return 0;
}

/* Run one of netpolicy's printers over the argv the plan gives the entrypoint. */
static int netpolicy_text(const aisb_policy *p, void (*print)(const struct netpolicy *, FILE *), bool network_only,
                          char **ret_text, aisb_error **err)
{
        _cleanup_(plan_facts_done) plan_facts f = {};
        _cleanup_(run_plan_done) run_plan plan = {};
        int r = inspect_plan(p, NULL, network_only, &f, &plan, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **argv = strv_copy((const char *const *) plan.entrypoint);
        /* A stand-in command: the printers describe the sandbox, not what runs in it. */
        if (!argv || strv_push(&argv, "COMMAND") < 0)
                return error_oom(err);
        struct netpolicy np;
        char message[256];
        if (netpolicy_parse((int) strv_length((const char *const *) argv), argv, &np, message,
                            sizeof message) < 0)
                return aisb_error_set(err, -EINVAL, "the entrypoint refuses this policy: %s", message);
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        if (!out)
                return error_oom(err);
        print(&np, out);
        if (fclose(out) != 0) {
                free(text);
                return error_oom(err);
        }
        *ret_text = text;
        return 0;
}

int aisb_policy_ruleset(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        return netpolicy_text(p, netpolicy_print_ruleset, true, ret_text, err);
}

int aisb_policy_entrypoint_plan(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        return netpolicy_text(p, netpolicy_print_plan, false, ret_text, err);
}

int aisb_policy_inspect(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        /* The image hashed once, for the policy's text and the plan. */
        _cleanup_free_ char *tag = NULL, *policy = NULL;
        int r = aisb_image_tag(p, &tag, err);
        if (r >= 0)
                r = policy_format(p, tag, &policy, err);
        if (r < 0)
                return r;
        _cleanup_(plan_facts_done) plan_facts f = {};
        _cleanup_(run_plan_done) run_plan plan = {};
        /* A policy a run would refuse is still shown, with why. */
        _cleanup_error_ aisb_error *refused = NULL;
        r = inspect_plan(p, tag, false, &f, &plan, &refused);
        if (r == -ENOMEM)
                return error_oom(err);
        _cleanup_(buffer_free) buffer b = {};
        r = buffer_printf(&b, "%s", policy);
        if (refused)
                r = r < 0 ? r : buffer_printf(&b, "refused=%s\n", aisb_error_message(refused));
        _cleanup_free_ char *agents = NULL;
        if (harness_agents_dir(p, &agents, NULL) < 0 || !agents)
                r = r < 0 ? r : buffer_printf(&b, "agents=none\n");
        else
                r = r < 0 ? r : buffer_printf(&b, "agents=%s (read-only at " AISB_SANDBOX_HOME "/.agents)\n", agents);
        /* Where the agent's writes to the project go. */
        const bool review = plan_reviews(p);
        if (review)
                r = r < 0 ? r : buffer_printf(&b, "project-writes=a review layer of the run's own (aisb diff, "
                                                  "apply, discard)\n");
        else if (p->project && !p->project_read_only)
                r = r < 0 ? r : buffer_printf(&b, "project-writes=the project, at once (undo=%s)\n",
                                              p->undo == UNDO_ALWAYS ? "on" : p->undo == UNDO_NEVER ? "off" : "auto");
        /* What a run would keep from the agent (in a review run, a git directory is the layer's
         * like the rest, not bound over itself). */
        for (size_t i = 0; i < f.protect.n_mounts; i++)
                if (!review || f.protect.mounts[i].read_only)
                        r = r < 0 ? r : buffer_printf(&b, "protected=%s (%s)\n", f.protect.mounts[i].destination,
                                                      f.protect.mounts[i].read_only
                                                              ? "read-only"
                                                              : "read-write, over itself: not to be moved aside");
        if (f.protect.repository_top)
                r = r < 0 ? r : buffer_printf(&b, "repository=%s (above the project: the sandbox has no git)\n",
                                   f.protect.repository_top);
        if (harness_bridge_applies(p))
                r = r < 0 ? r : harness_describe(p, &b);
        else
                r = r < 0 ? r : buffer_printf(&b, "bridge=none\n");
        if (r < 0)
                return error_oom(err);
        *ret_text = buffer_steal(&b);
        return 0;
}

int aisb_policy_inspect_json(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        _cleanup_(plan_facts_done) plan_facts f = {};
        _cleanup_(run_plan_done) run_plan plan = {};
        int r = inspect_plan(p, NULL, false, &f, &plan, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *o = NULL;
        if (plan_to_json(&plan, &f, &o) < 0)
                return error_oom(err);
        const char *text = json_text_checked(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || json_text_safe(text, ret_text) < 0)
                return error_oom(err);
        return 0;
}
