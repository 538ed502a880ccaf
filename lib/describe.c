/* SPDX-License-Identifier: MIT */
/*
 * What a policy would be, as text, for review: its key=value lines, its Containerfile, the
 * entrypoint's ruleset and plan (printed by the same netpolicy code the entrypoint runs),
 * and aisb inspect's summary. Nothing here starts anything: the gate's port is shown as a
 * placeholder, and the network is planned as it would be on podman 4.
 */
#include <stdio.h>

#include "describe.h"
#include "protect.h"
#include "entrypoint-args.h"
#include "harness.h"
#include "image.h"
#include "netpolicy.h"
#include "network.h"

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

int describe_network(const aisb_policy *p, sandbox_network *ret, aisb_error **err)
{
        const network_backend *backend = network_backend_for(p, 0);
        _cleanup_(network_inputs_done) network_inputs in = {};
        int r = network_gather(p, backend, NULL, &in, err);
        if (r < 0)
                return r;
        if (network_needs_gate(p, &in))
                in.gate_port = NETWORK_PLACEHOLDER_GATE_PORT;
        return network_plan(p, backend, &in, ret, err);
}

/* Run one of netpolicy's printers over the argv this policy produces. */
static int netpolicy_text(const aisb_policy *p, void (*print)(const struct netpolicy *, FILE *),
                          char **ret_text, aisb_error **err)
{
        sandbox_network net = {};
        int r = describe_network(p, &net, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **argv = NULL;
        r = entrypoint_argv(p, &net, NULL, &argv);
        sandbox_network_done(&net);
        if (r < 0)
                return error_oom(err);
        /* A stand-in command: the printers describe the sandbox, not what runs in it. */
        if (strv_push(&argv, "COMMAND") < 0)
                return error_oom(err);
        struct netpolicy np;
        char message[256];
        if (netpolicy_parse((int) strv_length((const char *const *) argv), argv, &np, message,
                            sizeof message) < 0)
                return aisb_error_set(err, -EINVAL, "the entrypoint refuses this policy: %s", message);
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return error_oom(err);
        print(&np, f);
        if (fclose(f) != 0) {
                free(text);
                return error_oom(err);
        }
        *ret_text = text;
        return 0;
}

int aisb_policy_ruleset(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        return netpolicy_text(p, netpolicy_print_ruleset, ret_text, err);
}

int aisb_policy_entrypoint_plan(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        return netpolicy_text(p, netpolicy_print_plan, ret_text, err);
}

int aisb_policy_inspect(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        _cleanup_free_ char *policy = NULL;
        int r = aisb_policy_format(p, &policy, err);
        if (r < 0)
                return r;
        _cleanup_(buffer_free) buffer b = {};
        r = buffer_printf(&b, "%s", policy);
        /* The agents directory is decided the same way a run decides it. */
        _cleanup_free_ char *agents = NULL;
        if (harness_agents_dir(p, &agents, NULL) < 0 || !agents)
                r |= buffer_printf(&b, "agents=none\n");
        else
                r |= buffer_printf(&b, "agents=%s (read-only at " AISB_SANDBOX_HOME "/.agents)\n", agents);
        /* What a run would keep from the agent, made the way a run makes it. */
        if (r >= 0 && p->project && p->protect && p->protect[0]) {
                _cleanup_(protect_plan_done) protect_plan plan = {};
                int k = protect_plan_make(p->project, p->project_is_cwd, (const char *const *) p->protect,
                                          (unsigned) getuid(), &plan, err);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < plan.n_mounts; i++)
                        r |= buffer_printf(&b, "protected=%s (%s)\n", plan.mounts[i].destination,
                                           plan.mounts[i].read_only ? "read-only"
                                                                    : "read-write, over itself: not to be moved aside");
                if (plan.repository_top)
                        r |= buffer_printf(&b, "repository=%s (above the project: the sandbox has no git)\n",
                                           plan.repository_top);
        }
        if (harness_bridge_applies(p))
                r |= harness_describe(p, &b);
        else
                r |= buffer_printf(&b, "bridge=none\n");
        if (r < 0)
                return error_oom(err);
        *ret_text = buffer_steal(&b);
        return 0;
}
