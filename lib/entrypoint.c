/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's first process is aisb-entrypoint (entrypoint/): it installs and verifies the
 * egress ruleset, drops every privilege, loads the seccomp filter and execs the command.
 * Here: the argv the library gives it, the capabilities the container must start with for
 * it, and the texts it would print for this policy (from the same netpolicy code it runs).
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "aisb-private.h"
#include "netpolicy.h"

/* The minimal set, each proved necessary (docs/entrypoint.md): NET_ADMIN for the ruleset,
 * SETGID/SETUID for the drop to the user, SETPCAP to empty the bounding set. */
const char *const entrypoint_capabilities[] = { "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID",
                                                "CAP_SETPCAP", NULL };

static int push_expect(char ***v, const char *path, unsigned long long dev, unsigned long long ino)
{
        _cleanup_free_ char *arg = NULL;
        if (asprintf(&arg, "%s:%llu:%llu", path, dev, ino) < 0)
                return -ENOMEM;
        int r = strv_push(v, "--expect-mount");
        return r < 0 ? r : strv_push(v, arg);
}

int entrypoint_argv(const aisb_policy *p, const sandbox_network *net, const harness_bridge *bridge,
                    const run_mounts *rm, char ***ret)
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
        if (r >= 0 && bridge && bridge->seed_dir) {
                r = strv_push(&v, "--seed");
                r = r < 0 ? r : strv_push(&v, AISB_SEED_IN_SANDBOX ":" AISB_PI_AGENT_IN_SANDBOX);
        }
        r = r < 0 ? r : strv_push(&v, "--");
        if (r < 0)
                return r;
        *ret = steal_pointer(&v);
        return 0;
}

int entrypoint_open(const aisb_policy *p, int *ret_fd, size_t *ret_size, aisb_error **err)
{
        _cleanup_close_ int fd = open(p->entrypoint, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return aisb_error_set(err, -errno,
                                      "aisb-entrypoint not found at %s (%s): reinstall aisb or set AISB_ENTRYPOINT",
                                      p->entrypoint, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "cannot stat %s: %s", p->entrypoint, strerror(errno));
        if (!S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024)
                return aisb_error_set(err, -EINVAL, "%s is not a regular file of at most 64 MiB",
                                      p->entrypoint);
        *ret_size = (size_t) st.st_size;
        *ret_fd = steal_fd(&fd);
        return 0;
}

/* Run one of netpolicy's printers over the argv this policy produces. */
static int netpolicy_text(const aisb_policy *p, void (*print)(const struct netpolicy *, FILE *),
                          char **ret_text, aisb_error **err)
{
        sandbox_network net = {};
        int r = sandbox_network_resolve(NULL, p, NULL, &net, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **argv = NULL;
        r = entrypoint_argv(p, &net, NULL, NULL, &argv);
        sandbox_network_done(&net);
        if (r < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        /* A stand-in command: the printers describe the sandbox, not what runs in it. */
        if (strv_push(&argv, "COMMAND") < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        struct netpolicy np;
        char message[256];
        if (netpolicy_parse((int) strv_length((const char *const *) argv), argv, &np, message,
                            sizeof message) < 0)
                return aisb_error_set(err, -EINVAL, "the entrypoint refuses this policy: %s", message);
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        print(&np, f);
        if (fclose(f) != 0) {
                free(text);
                return aisb_error_set(err, -ENOMEM, "out of memory");
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
