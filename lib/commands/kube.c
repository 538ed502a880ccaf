/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: the policy aisb run would enforce, as Kubernetes objects a cluster enforces.
 *
 * A cluster's "restricted" Pod Security Standard refuses NET_ADMIN, so the in-container
 * ruleset cannot be the enforcement there: the network is the NetworkPolicies' (the
 * sandbox's pod reaches only its gate and the address entries; the gate reaches the outside
 * on the allowed ports, minus the private, link-local and metadata ranges, and DNS only at
 * the cluster's resolver), and the entrypoint runs in its external mode, which checks that
 * the pod started without privileges instead of dropping them. The gate is its own pod
 * (NetworkPolicy applies per pod), with the squid configuration the local gate's generator
 * writes. Everything is built with json-c and printed as JSON documents between "---"
 * lines: YAML 1.2 takes JSON as it is, and no YAML emitter of our own can get quoting wrong.
 *
 * The sandbox is a rendering of the plan a run of the same policy has (plan.h): its
 * variables, the entrypoint's argv, its mounts and protected paths, the allowlist, with a
 * cluster's facts where they are not this machine's (kube_plan_make). What the plan has that
 * a pod cannot is refused in one line, never left out (kube_check_policy, kube_check_plan).
 * The harness's bridged configuration is what the local bridge writes for a fresh home, in a
 * ConfigMap the entrypoint's seed copies into the home, as for an ephemeral home.
 *
 * It reads what a run's plan reads (the allowlists, the project's settings and protected
 * paths, the harness's host configuration) and what the image's content tag covers, and
 * writes nothing but a directory of its own for the bridge's files, removed at once: the
 * same policy on the same machine prints the same bytes.
 *
 * kube-plan.c makes that plan and refuses, kube-gate.c and kube-pod.c render the gate's and the
 * sandbox's objects from it (of kube-objects.c's pieces); this file is the command: its
 * options, the documents' text, and the images' push to a registry.
 */
#include "image.h"
#include "jsonutil.h"
#include "kube.h"
#include "podman.h"
#include "service.h"

int kube_manifests(const aisb_policy *p, const kube_options *ko, char **ret_text, aisb_error **err)
{
        _cleanup_(kube_plan_done) kube_plan k = {};
        int r = kube_plan_make(p, ko, &k, err);
        if (r < 0)
                return r;
        unsigned parts = ko->parts ? ko->parts : KUBE_PART_GATE | KUBE_PART_SANDBOX;
        if ((parts & KUBE_PART_SANDBOX) && (r = kube_check_plan(p, ko, &k, err)) < 0)
                return r;
        _cleanup_json_ json_object *docs = json_object_new_array();
        if (!docs)
                return error_oom(err);
        /* The Service before the Pod: the pod's environment names it. */
        if (k.gate && (parts & KUBE_PART_GATE) && (r = kube_gate_objects(p, ko, &k, docs, err)) < 0)
                return r;
        if ((parts & KUBE_PART_SANDBOX) && p->project && !ko->podman && kube_workspace_claim(ko, &k.names, docs) < 0)
                return error_oom(err);
        if ((parts & KUBE_PART_SANDBOX) && (r = kube_sandbox_objects(p, ko, &k, docs, err)) < 0)
                return r;
        if (json_object_array_length(docs) == 0)
                return aisb_error_set(err, -EINVAL, "kube: this policy has no gate: nothing to print for the gate alone");

        _cleanup_(buffer_free) buffer b = {};
        for (size_t i = 0; i < json_object_array_length(docs); i++) {
                const char *text = json_text_checked(json_object_array_get_idx(docs, i),
                                                     JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
                _cleanup_free_ char *safe = NULL;
                if (!text || json_text_safe(text, &safe) < 0 || buffer_printf(&b, "---\n%s\n", safe) < 0)
                        return error_oom(err);
        }
        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : error_oom(err);
}

static int image_repo_check(const char *image_repo, aisb_error **err)
{
        if (!image_repo || !*image_repo || strspn(image_repo, "abcdefghijklmnopqrstuvwxyz0123456789.-_/:") !=
                                                     strlen(image_repo) || strlen(image_repo) > 200)
                return aisb_error_set(err, -EINVAL, "kube: --image-repo '%.64s': a registry path like "
                                                    "registry.example.com/team",
                                      image_repo ? image_repo : "");
        return 0;
}

/* One image of the plan's built (or found) here and pushed as REPO/NAME:TAG, the name the
 * objects give it. */
static int push_image(aisb_ctx *ctx, const image_facts *f, const kube_options *o, const char *name, bool tls_verify,
                      aisb_error **err)
{
        _cleanup_free_ char *remote = NULL;
        int r = image_ensure(ctx, f, NULL, err);
        if (r >= 0 && kube_image_name(f, o, name, &remote) < 0)
                r = error_oom(err);
        if (r >= 0) {
                aisb_log(ctx, AISB_LOG_INFO, "pushing %s", remote);
                r = podman_image_push(ctx, f->tag, remote, tls_verify, err);
        }
        return r;
}

#define KUBE_KNOWN_FLAGS                                                                                      \
        (AISB_KUBE_AS_SANDBOX | AISB_KUBE_PODMAN | AISB_KUBE_GATE_ONLY | AISB_KUBE_SANDBOX_ONLY |                \
         AISB_KUBE_NETFILTER_INIT | AISB_KUBE_TLS_NO_VERIFY)

static int kube_flags_check(unsigned flags, aisb_error **err)
{
        if ((flags & ~(unsigned) KUBE_KNOWN_FLAGS) || ((flags & AISB_KUBE_GATE_ONLY) && (flags & AISB_KUBE_SANDBOX_ONLY)))
                return aisb_error_set(err, -EINVAL, "kube: flags 0x%x: unknown, or both parts alone", flags);
        return 0;
}

int aisb_kube_push(aisb_ctx *ctx, const aisb_policy *p, const aisb_kube_options *options, aisb_error **err)
{
        const char *image_repo = options ? options->image_repo : NULL;
        int r = image_repo_check(image_repo, err);
        if (r < 0)
                return r;
        r = kube_flags_check(options->flags, err);
        if (r < 0)
                return r;
        bool tls_verify = !(options->flags & AISB_KUBE_TLS_NO_VERIFY);
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        kube_options o = { .image_repo = image_repo };
        /* The images of the plan's facts: the gate's too, when this policy has a gate. */
        _cleanup_(plan_facts_done) plan_facts f = {};
        r = plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN, .network_only = true }, &f, err);
        if (r >= 0)
                r = push_image(ctx, &f.built, &o, "aisb", tls_verify, err);
        if (r >= 0 && plan_needs_gate(p, &f) && f.built.gate)
                r = push_image(ctx, f.built.gate, &o, "aisb-gate", tls_verify, err);
        return r;
}

int aisb_policy_kube(const aisb_policy *p, const aisb_kube_options *options, char **ret_text, aisb_error **err)
{
        static const aisb_kube_options defaults = {};
        const aisb_kube_options *opt = options ? options : &defaults;
        unsigned flags = opt->flags;
        int r = kube_flags_check(flags, err);
        if (r < 0)
                return r;
        kube_options o = { .image_repo = opt->image_repo, .timeout_s = opt->timeout_s,
                           .as_sandbox = flags & AISB_KUBE_AS_SANDBOX, .podman = flags & AISB_KUBE_PODMAN,
                           .netfilter_init = flags & AISB_KUBE_NETFILTER_INIT,
                           .parts = flags & AISB_KUBE_GATE_ONLY      ? KUBE_PART_GATE
                                    : flags & AISB_KUBE_SANDBOX_ONLY ? KUBE_PART_SANDBOX
                                                                     : 0 };
        if (opt->image_repo && image_repo_check(opt->image_repo, err) < 0)
                return -EINVAL;
        return kube_manifests(p, &o, ret_text, err);
}
