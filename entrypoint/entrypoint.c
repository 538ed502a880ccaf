/* SPDX-License-Identifier: MIT */
/* aisb-entrypoint: the first process in an aisb container. It installs and verifies the
 * network ruleset, drops every privilege it was started with, loads the seccomp filter and
 * execs the agent's command. Each step fails closed: if the ruleset is not in force nothing
 * runs (77) unless --allow-unenforced says otherwise, and a failed privilege drop or seccomp
 * load is never overridable.
 *
 * It is linked statically (libc, libnftnl, libmnl, libseccomp) so that it runs in any image,
 * bind-mounted read-only from the host. All its messages go to stderr, prefixed. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "netpolicy.h"
#include "nft.h"
#include "sandbox-seccomp.h"
#include "seed.h"
#include "trust.h"

#define PREFIX "aisb-entrypoint: "

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
        va_list ap;
        char line[1024];

        va_start(ap, fmt);
        (void) vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        /* One write per line so concurrent output never splits a message. */
        dprintf(STDERR_FILENO, PREFIX "%s\n", line);
}

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
        va_list ap;
        char line[1024];

        va_start(ap, fmt);
        (void) vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        dprintf(STDERR_FILENO, PREFIX "%s\n", line);
        _exit(code);
}

static int read_cap_last_cap(void)
{
        FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
        int last = -1;

        if (f) {
                if (fscanf(f, "%d", &last) != 1)
                        last = -1;
                (void) fclose(f);
        }
        /* Without /proc, walk the whole 64-bit space the kernel could know: PR_CAPBSET_READ
         * answers EINVAL past the last capability, which we then skip. */
        return last >= 0 && last < 64 ? last : 63;
}

static int capset_empty(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = {};
        return (int) syscall(SYS_capset, &h, d);
}

static bool caps_all_empty(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return false;
        for (int i = 0; i < 2; i++)
                if (d[i].effective || d[i].permitted || d[i].inheritable)
                        return false;
        return true;
}

/* The first capability up to last still in the bounding or the ambient set, or -1. */
static int bounding_or_ambient(int last)
{
        for (int cap = 0; cap <= last; cap++)
                if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 ||
                    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
                        return cap;
        return -1;
}

/* Each mount aisb planned is the file it chose (its device and inode), looked up with the
 * user's own file access when the sandbox runs as the user: a project the user keeps 0700 is
 * theirs to search, not the namespace's root's, which holds no DAC capability. */
static void check_mounts(const struct netpolicy *p)
{
        /* Already the user in --net external, where nothing could be switched back. */
        uid_t fsuid = (uid_t) setfsuid((uid_t) -1);
        gid_t fsgid = (gid_t) setfsgid((gid_t) -1);
        bool as_user = p->n_expect > 0 && !p->keep_root && p->have_uid && p->have_gid &&
                       (fsuid != p->uid || fsgid != p->gid);
        if (as_user) {
                (void) setfsgid(p->gid);
                (void) setfsuid(p->uid);
                if ((uid_t) setfsuid((uid_t) -1) != p->uid || (gid_t) setfsgid((gid_t) -1) != p->gid)
                        die(EP_EXIT_UNENFORCED, "cannot look at the mounts as uid %u: nothing was run", (unsigned) p->uid);
        }
        for (size_t i = 0; i < p->n_expect; i++) {
                struct stat st;
                if (lstat(p->expect[i].path, &st) < 0)
                        die(EP_EXIT_UNENFORCED, "%s: %s; nothing was run", p->expect[i].path, strerror(errno));
                const struct expect_mount *e = &p->expect[i];
                long long ctime_ns = (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
                bool same = e->file ? S_ISREG(st.st_mode) && st.st_nlink == 1 && ctime_ns == e->ctime_ns
                                    : (unsigned long long) st.st_dev == e->dev;
                if (!same || (unsigned long long) st.st_ino != e->ino)
                        die(EP_EXIT_UNENFORCED,
                            "%s is not what aisb chose to mount (it was swapped for a link while the "
                            "container started); nothing was run",
                            e->path);
        }
        if (as_user) {
                (void) setfsuid(fsuid);
                (void) setfsgid(fsgid);
                if ((uid_t) setfsuid((uid_t) -1) != fsuid || (gid_t) setfsgid((gid_t) -1) != fsgid)
                        die(EP_EXIT_UNENFORCED, "cannot take back the file access it started with after the mount checks");
        }
}

/* The order leaves no window (bubblewrap's drop_privs, crun): the bounding set and the
 * securebits need CAP_SETPCAP, so they go first; setgroups and setresgid need CAP_SETGID and
 * must precede setresuid, which (without SECBIT_KEEP_CAPS) clears the permitted set; capset
 * then covers --keep-root, where uid 0 keeps its capabilities until told otherwise. */
static void drop_privileges(const struct netpolicy *p)
{
        int last = read_cap_last_cap();
        uid_t uid = p->keep_root ? 0 : p->uid;
        gid_t gid = p->keep_root ? 0 : p->gid;

        for (int cap = 0; cap <= last; cap++) {
                int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
                if (in < 0 && errno == EINVAL)
                        continue;
                if (in != 0 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
                        die(EP_EXIT_UNENFORCED, "dropping capability %d from the bounding set: %s%s", cap,
                            strerror(errno), errno == EPERM ? " (create the container with CAP_SETPCAP)" : "");
        }

        /* With the bounding set empty, an exec as uid 0 gains nothing anyway; the securebits
         * say so a second time and lock it, and forbid raising ambient capabilities. */
        unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
                             SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                             SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
                die(EP_EXIT_UNENFORCED, "setting securebits: %s", strerror(errno));

        if (setgroups(0, NULL) < 0)
                die(EP_EXIT_UNENFORCED, "setgroups(0): %s%s", strerror(errno),
                    errno == EPERM ? " (create the container with CAP_SETGID)" : "");
        if (setresgid(gid, gid, gid) < 0)
                die(EP_EXIT_UNENFORCED, "setresgid(%u): %s", (unsigned) gid, strerror(errno));
        if (setresuid(uid, uid, uid) < 0)
                die(EP_EXIT_UNENFORCED, "setresuid(%u): %s%s", (unsigned) uid, strerror(errno),
                    errno == EPERM ? " (create the container with CAP_SETUID)" : "");
        if (capset_empty() < 0)
                die(EP_EXIT_UNENFORCED, "capset to empty: %s", strerror(errno));
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                die(EP_EXIT_UNENFORCED, "clearing ambient capabilities: %s", strerror(errno));
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                die(EP_EXIT_UNENFORCED, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

        /* Trust nothing above: read every part back. */
        uid_t ru, eu, su;
        gid_t rg, eg, sg;
        if (getresuid(&ru, &eu, &su) < 0 || ru != uid || eu != uid || su != uid ||
            getresgid(&rg, &eg, &sg) < 0 || rg != gid || eg != gid || sg != gid)
                die(EP_EXIT_UNENFORCED, "identity is not uid %u gid %u after the drop", (unsigned) uid,
                    (unsigned) gid);
        if (getgroups(0, NULL) != 0)
                die(EP_EXIT_UNENFORCED, "supplementary groups remain after setgroups(0)");
        if (!caps_all_empty())
                die(EP_EXIT_UNENFORCED, "capabilities remain after capset");
        int cap = bounding_or_ambient(last);
        if (cap >= 0)
                die(EP_EXIT_UNENFORCED, "capability %d remains in the bounding or ambient set", cap);
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                die(EP_EXIT_UNENFORCED, "no_new_privs is not set");
}

/* --net external: started without privileges (runAsNonRoot, drop ALL, no privilege
 * escalation), which is checked rather than trusted: the identity given, not root, no
 * supplementary group, every capability set empty, bounding and ambient included. Then
 * no_new_privs, which needs no privilege and makes the seccomp load possible. */
static void check_unprivileged(const struct netpolicy *p)
{
        int last = read_cap_last_cap();
        uid_t ru, eu, su;
        gid_t rg, eg, sg;
        if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
                die(EP_EXIT_UNENFORCED, "getresuid: %s", strerror(errno));
        if (ru == 0 || eu == 0 || su == 0)
                die(EP_EXIT_UNENFORCED, "--net external: started as root; run the container as uid %u "
                                        "(runAsUser, runAsNonRoot); nothing was run",
                    (unsigned) p->uid);
        if (ru != p->uid || eu != p->uid || su != p->uid || rg != p->gid || eg != p->gid || sg != p->gid)
                die(EP_EXIT_UNENFORCED, "--net external: started as uid %u gid %u, not %u:%u; nothing was run",
                    (unsigned) eu, (unsigned) eg, (unsigned) p->uid, (unsigned) p->gid);
        int groups = getgroups(0, NULL);
        if (groups < 0 || groups > 1 || (groups == 1 && (getgroups(1, &rg) != 1 || rg != p->gid)))
                die(EP_EXIT_UNENFORCED, "--net external: supplementary groups present; nothing was run");
        if (!caps_all_empty())
                die(EP_EXIT_UNENFORCED, "--net external: started with capabilities; drop ALL; nothing was run");
        int cap = bounding_or_ambient(last);
        if (cap >= 0)
                die(EP_EXIT_UNENFORCED, "--net external: capability %d in the bounding or ambient set; "
                                        "drop ALL; nothing was run",
                    cap);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                die(EP_EXIT_UNENFORCED, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
}

static void install_ruleset(const struct netpolicy *p)
{
        struct netruleset *rs = calloc(1, sizeof(*rs));
        char err[512] = "";
        int r;

        if (!rs)
                die(EP_EXIT_UNENFORCED, "out of memory");
        netpolicy_ruleset(p, rs);
        if (rs->n_chains == 0) {
                say("WARNING: --net full: no network ruleset, the command can reach any address");
                free(rs);
                return;
        }

        r = nft_install(rs, err, sizeof(err));
        if (r >= 0)
                r = nft_verify(rs, err, sizeof(err));
        free(rs);
        if (r >= 0)
                return;
        if (!p->allow_unenforced)
                die(EP_EXIT_UNENFORCED, "network ruleset not in force, nothing was run: %s", err);
        say("WARNING: ****************************************************************");
        say("WARNING: the network ruleset is NOT in force (%s)", err);
        say("WARNING: --allow-unenforced: running the command with unrestricted network");
        say("WARNING: ****************************************************************");
}

/* --allow-dns: the nameservers podman wrote into /etc/resolv.conf, read before the ruleset is
 * built and long before the command runs. The root filesystem is read-only and the file is
 * podman's, but it is read as if it were not: no symlink, nothing that blocks, a regular file,
 * bounded. Anything wrong means no DNS rule, said on stderr: closed, never open to all. */
static void read_resolvers(struct netpolicy *p)
{
        const char *path = NETPOLICY_RESOLV_CONF;
        struct stat st;
        char *buf = NULL;
        size_t size = 0;
        int fd;

        p->resolvers_read = true;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                say("cannot read %s (%s): no DNS rule, names resolve only through the loopback", path,
                    strerror(errno));
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > NETPOLICY_RESOLV_CONF_MAX ||
            !(buf = malloc(NETPOLICY_RESOLV_CONF_MAX + 1))) {
                say("%s is not a regular file of at most %d KiB: no DNS rule", path,
                    NETPOLICY_RESOLV_CONF_MAX / 1024);
                (void) close(fd);
                return;
        }
        /* One byte past the bound tells a file that grew since fstat from one that did not. */
        while (size <= NETPOLICY_RESOLV_CONF_MAX) {
                ssize_t n = read(fd, buf + size, NETPOLICY_RESOLV_CONF_MAX + 1 - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                size += (size_t) n;
        }
        (void) close(fd);
        if (size > NETPOLICY_RESOLV_CONF_MAX) {
                say("%s is larger than %d KiB: no DNS rule", path, NETPOLICY_RESOLV_CONF_MAX / 1024);
                free(buf);
                return;
        }
        netpolicy_parse_resolv_conf(buf, size, &p->resolvers);
        free(buf);
        if (p->resolvers.n == 0 && p->resolvers.n_local == 0)
                say("no nameserver in %s: no DNS rule, names do not resolve", path);
}

/* --allow-env VAR:PORT: the address a Kubernetes Service's variable holds, as one more
 * destination. Read as untrusted text: it must be an IP address and nothing else, or nothing
 * runs (an unset variable means the Service was not there when the pod started). */
static void allow_from_env(struct netpolicy *p)
{
        const char *value = getenv(p->allow_env);
        char dest[96], err[256];
        if (!value || !*value)
                die(EP_EXIT_UNENFORCED, "--allow-env: $%s is not set; nothing was run", p->allow_env);
        if (strlen(value) > 45 || strspn(value, "0123456789abcdefABCDEF.:") != strlen(value))
                die(EP_EXIT_UNENFORCED, "--allow-env: $%s is not an IP address; nothing was run", p->allow_env);
        snprintf(dest, sizeof(dest), strchr(value, ':') ? "[%s]:%u" : "%s:%u", value, (unsigned) p->allow_env_port);
        if (p->n_allow >= NETPOLICY_MAX_ALLOW)
                die(EP_EXIT_UNENFORCED, "--allow-env: too many destinations; nothing was run");
        if (netpolicy_parse_allow(dest, &p->allow[p->n_allow], err, sizeof(err)) < 0)
                die(EP_EXIT_UNENFORCED, "--allow-env: $%s: %s; nothing was run", p->allow_env, err);
        p->n_allow++;
}

/* execvp reports EACCES when any PATH entry was unreadable, even if the command exists
 * nowhere; a shell says "not found" (127) then, and so do we. */
static bool found_in_path(const char *name)
{
        const char *path = getenv("PATH");
        char candidate[4096];

        if (strchr(name, '/'))
                return access(name, F_OK) == 0;
        if (!path)
                path = "/bin:/usr/bin";
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                int n = snprintf(candidate, sizeof(candidate), "%.*s/%s", (int) (end - p),
                                 end == p ? "." : p, name);
                if (n > 0 && (size_t) n < sizeof(candidate) && access(candidate, F_OK) == 0)
                        return true;
                if (!*end)
                        return false;
                p = end;
        }
}

int main(int argc, char **argv)
{
        /* Large (the allowlist), and must not sit on the stack of a process whose stack
         * limit we do not choose. */
        struct netpolicy *p = calloc(1, sizeof(*p));
        scmp_filter_ctx filter = NULL;
        char err[512] = "";
        int r;

        if (!p)
                die(EP_EXIT_UNENFORCED, "out of memory");
        if (netpolicy_parse(argc, argv, p, err, sizeof(err)) < 0)
                die(EP_EXIT_BAD_POLICY, "%s", err);

        /* The printed texts are the answer asked for, so they go to stdout. */
        if (p->print_ruleset) {
                netpolicy_print_ruleset(p, stdout);
                return fflush(stdout) == 0 ? 0 : 1;
        }
        if (p->print_plan) {
                netpolicy_print_plan(p, stdout);
                return fflush(stdout) == 0 ? 0 : 1;
        }

        check_mounts(p);

        if (p->net == NET_ALLOW && p->allow_dns)
                read_resolvers(p);
        if (p->allow_env[0])
                allow_from_env(p);
        if (p->net != NET_EXTERNAL)
                install_ruleset(p);
        if (p->ruleset_only) {
                say("ruleset in force; --ruleset-only: nothing else runs here");
                return 0;
        }

        /* Build the filter while allocation is still unconstrained; load it last. */
        r = sandbox_seccomp_build(&filter, err, sizeof(err));
        if (r < 0)
                die(EP_EXIT_UNENFORCED, "%s", err);

        /* As root still: /run is the container's, its user cannot write there. */
        if (p->ca_extra[0] &&
            trust_bundle_write(NETPOLICY_SYSTEM_CAS, p->ca_extra, NETPOLICY_CA_BUNDLE, err, sizeof(err)) < 0)
                die(EP_EXIT_UNENFORCED, "the gate's CA: %s; nothing was run", err);

        if (p->keep_root)
                say("--keep-root: the command runs as uid 0, with no capabilities, the ruleset and seccomp");
        if (p->net == NET_EXTERNAL)
                check_unprivileged(p);
        else
                drop_privileges(p);

        /* As the user now, so the copy can do nothing the user could not. */
        if (p->seed_source[0] && seed_copy(p->seed_source, p->seed_dest, err, sizeof(err)) < 0)
                die(EP_EXIT_BAD_POLICY, "seeding %s: %s", p->seed_dest, err);

        r = seccomp_load(filter);
        if (r < 0)
                die(EP_EXIT_UNENFORCED, "loading the seccomp filter: %s", strerror(-r));
        seccomp_release(filter);

        execvp(p->command[0], p->command);
        int e = errno;
        bool missing = e == ENOENT || e == ENOTDIR || (e == EACCES && !found_in_path(p->command[0]));
        die(missing ? EP_EXIT_NOT_FOUND : EP_EXIT_NOT_EXECUTABLE, "%s: %s", p->command[0],
            missing ? "command not found" : strerror(e));
}
