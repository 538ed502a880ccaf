/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's first process is aisb-entrypoint (entrypoint/): it installs and verifies the
 * egress ruleset, drops every privilege, loads the seccomp filter and execs the command.
 * Here, on the library's side: the argv the library gives it, and the capabilities the
 * container must start with for it.
 */
#include "entrypoint-args.h"
#include "protect.h"

/* The minimal set, each proved necessary (docs/entrypoint.md): NET_ADMIN for the ruleset,
 * SETGID/SETUID for the drop to the user, SETPCAP to empty the bounding set. */
const char *const entrypoint_capabilities[] = { "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID",
                                                "CAP_SETPCAP", NULL };

const char *const entrypoint_trust_env[] = { "SSL_CERT_FILE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE",
                                             "PIP_CERT", "NODE_EXTRA_CA_CERTS", NULL };

static int push_expect(char ***v, const char *path, unsigned long long dev, unsigned long long ino)
{
        _cleanup_free_ char *arg = NULL;
        if (asprintf(&arg, "%s:%llu:%llu", path, dev, ino) < 0)
                return -ENOMEM;
        int r = strv_push(v, "--expect-mount");
        return r < 0 ? r : strv_push(v, arg);
}

int entrypoint_argv(const aisb_policy *p, const sandbox_network *net, const run_mounts *rm, char ***ret)
{
        _cleanup_strv_free_ char **v = NULL;
        char uid[32], gid[32];
        snprintf(uid, sizeof uid, "%u", (unsigned) getuid());
        snprintf(gid, sizeof gid, "%u", (unsigned) getgid());
        int r = strv_push(&v, AISB_ENTRYPOINT_IN_IMAGE);
        if (r >= 0 && !p->keep_root) {
                r = strv_push(&v, "--uid");
                r = r < 0 ? r : strv_push(&v, uid);
                r = r < 0 ? r : strv_push(&v, "--gid");
                r = r < 0 ? r : strv_push(&v, gid);
        }
        if (r >= 0 && p->keep_root)
                r = strv_push(&v, "--keep-root");
        for (size_t i = 0; r >= 0 && net->entrypoint_args && net->entrypoint_args[i]; i++)
                r = strv_push(&v, net->entrypoint_args[i]);
        if (r >= 0 && p->allow_unenforced)
                r = strv_push(&v, "--allow-unenforced");
        /* Every bind mount the host named by a path someone else might swap meanwhile. */
        if (r >= 0 && rm && rm->have_project_id && p->project)
                r = push_expect(&v, AISB_PROJECT_DIR, rm->project_dev, rm->project_ino);
        for (size_t i = 0; r >= 0 && i < p->n_mounts; i++)
                r = push_expect(&v, p->mounts[i].destination, p->mounts[i].dev, p->mounts[i].ino);
        for (size_t i = 0; r >= 0 && rm && rm->protect && i < rm->protect->n_mounts; i++)
                r = push_expect(&v, rm->protect->mounts[i].destination, rm->protect->mounts[i].dev,
                                rm->protect->mounts[i].ino);
        if (r >= 0 && rm && rm->gate_ca) {
                r = strv_push(&v, "--ca-bundle");
                r = r < 0 ? r : strv_push(&v, AISB_GATE_CA_IN_SANDBOX);
        }
        if (r >= 0 && rm && rm->seed_dir) {
                r = strv_push(&v, "--seed");
                r = r < 0 ? r : strv_push(&v, AISB_SEED_IN_SANDBOX ":" AISB_PI_AGENT_IN_SANDBOX);
        }
        r = r < 0 ? r : strv_push(&v, "--");
        if (r < 0)
                return r;
        *ret = steal_pointer(&v);
        return 0;
}
