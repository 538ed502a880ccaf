/* SPDX-License-Identifier: MIT */
/* Option parsing, the abstract ruleset and the descriptive texts of aisb-entrypoint. No
 * netlink, no seccomp, no output except to a FILE the caller gives: libaisb links this file
 * to print --print-ruleset and --print-plan itself, and the tests feed it hostile argv. */
#include "netpolicy.h"

#include "address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static bool streq_safe(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

#define ERR(...)                                                 \
        ({                                                       \
                if (errlen > 0)                                  \
                        (void) snprintf(err, errlen, __VA_ARGS__); \
                -EINVAL;                                         \
        })

const struct needed_capability netpolicy_needed_capabilities[] = {
        { "CAP_NET_ADMIN", "install table inet aisb in the container's network namespace" },
        { "CAP_SETPCAP", "empty the bounding set and lock the securebits (no root regains anything on exec)" },
        { "CAP_SETGID", "setgroups(0) and setresgid to --gid" },
        { "CAP_SETUID", "setresuid to --uid" },
};
const size_t netpolicy_n_needed_capabilities =
        sizeof(netpolicy_needed_capabilities) / sizeof(netpolicy_needed_capabilities[0]);

#define SETID_REASON "a setuid or setgid bit would reach the host's file"

const struct syscall_denial netpolicy_syscall_denials[] = {
        /* Namespaces: a user namespace hands back every capability we dropped, inside it, and
         * with that the kernel's namespaced attack surface (nftables, mounts, ...). */
        { "unshare", DENY_ALWAYS, EPERM, "new namespaces would hand back capabilities inside them" },
        { "setns", DENY_ALWAYS, EPERM, "joining another namespace" },
        { "clone", DENY_CLONE_NAMESPACES, EPERM, "clone with CLONE_NEW* flags: same as unshare" },
        /* clone3 passes its flags in memory, where a seccomp filter cannot look; ENOSYS makes
         * glibc (>= 2.34) fall back to clone, whose flags we can check. EPERM would not. */
        { "clone3", DENY_ALWAYS, ENOSYS, "flags are behind a pointer; ENOSYS makes libc fall back to clone" },
        /* The mount family: changing what the filesystem looks like. */
        { "mount", DENY_ALWAYS, EPERM, "mount family" },
        { "umount2", DENY_ALWAYS, EPERM, "mount family" },
        { "pivot_root", DENY_ALWAYS, EPERM, "mount family" },
        { "chroot", DENY_ALWAYS, EPERM, "mount family (classic chroot escapes need it)" },
        { "open_tree", DENY_ALWAYS, EPERM, "new mount API" },
        { "move_mount", DENY_ALWAYS, EPERM, "new mount API" },
        { "fsopen", DENY_ALWAYS, EPERM, "new mount API" },
        { "fsconfig", DENY_ALWAYS, EPERM, "new mount API" },
        { "fsmount", DENY_ALWAYS, EPERM, "new mount API" },
        { "fspick", DENY_ALWAYS, EPERM, "new mount API" },
        { "mount_setattr", DENY_ALWAYS, EPERM, "new mount API" },
        /* Kernel attack surface an agent has no use for. */
        { "bpf", DENY_ALWAYS, EPERM, "eBPF: large verifier attack surface" },
        { "perf_event_open", DENY_ALWAYS, EPERM, "perf: attack surface and side channels" },
        { "userfaultfd", DENY_ALWAYS, EPERM, "stalls kernel page faults: the classic race-exploit helper" },
        { "keyctl", DENY_ALWAYS, EPERM, "kernel keyrings are not namespaced" },
        { "add_key", DENY_ALWAYS, EPERM, "kernel keyrings are not namespaced" },
        { "request_key", DENY_ALWAYS, EPERM, "kernel keyrings are not namespaced" },
        { "io_uring_setup", DENY_ALWAYS, EPERM, "io_uring: history of exploits, its operations bypass seccomp" },
        { "io_uring_enter", DENY_ALWAYS, EPERM, "io_uring" },
        { "io_uring_register", DENY_ALWAYS, EPERM, "io_uring" },
        { "kexec_load", DENY_ALWAYS, EPERM, "loading a new kernel" },
        { "kexec_file_load", DENY_ALWAYS, EPERM, "loading a new kernel" },
        { "init_module", DENY_ALWAYS, EPERM, "kernel modules" },
        { "finit_module", DENY_ALWAYS, EPERM, "kernel modules" },
        { "delete_module", DENY_ALWAYS, EPERM, "kernel modules" },
        { "open_by_handle_at", DENY_ALWAYS, EPERM, "opens files by handle outside the mount tree (shocker escape)" },
        { "iopl", DENY_ALWAYS, EPERM, "raw I/O port access" },
        { "ioperm", DENY_ALWAYS, EPERM, "raw I/O port access" },
        { "swapon", DENY_ALWAYS, EPERM, "host administration" },
        { "swapoff", DENY_ALWAYS, EPERM, "host administration" },
        { "reboot", DENY_ALWAYS, EPERM, "host administration" },
        { "acct", DENY_ALWAYS, EPERM, "host administration" },
        { "quotactl", DENY_ALWAYS, EPERM, "host administration" },
        { "syslog", DENY_ALWAYS, EPERM, "the kernel log leaks host information and addresses" },
        /* Sockets: nftables sees only IP. Every other family (vsock to the hypervisor, packet
         * sockets, bluetooth, ...) would carry traffic past the ruleset. */
        { "socket", DENY_SOCKET_FAMILIES, EPERM, "families other than unix, inet, inet6, netlink bypass nftables" },
        { "socket", DENY_SOCKET_RAW, EPERM, "raw and packet sockets forge traffic (SOCK_RAW, SOCK_PACKET; netlink exempt)" },
        /* Pushing characters into a terminal we share with the user's shell. */
        { "ioctl", DENY_IOCTL_TIOCSTI, EPERM, "TIOCSTI/TIOCLINUX inject input into the user's terminal" },
        /* Setuid and setgid bits: the project is the host's directory, and a bit set here is
         * set on the host file, where nosuid no longer applies: another local user who runs it
         * runs as the user. Every call that sets a mode refuses them (a directory's setgid
         * too: the filter cannot tell a directory from a file). openat2 takes its mode in
         * memory, where the filter cannot look: ENOSYS, and callers fall back to openat. */
        { "chmod", DENY_MODE_SETID, EPERM, SETID_REASON, 1, 0 },
        { "fchmod", DENY_MODE_SETID, EPERM, SETID_REASON, 1, 0 },
        { "fchmodat", DENY_MODE_SETID, EPERM, SETID_REASON, 2, 0 },
        { "fchmodat2", DENY_MODE_SETID, EPERM, SETID_REASON, 2, 0 },
        { "creat", DENY_MODE_SETID, EPERM, SETID_REASON, 1, 0 },
        { "mknod", DENY_MODE_SETID, EPERM, SETID_REASON, 1, 0 },
        { "mknodat", DENY_MODE_SETID, EPERM, SETID_REASON, 2, 0 },
        { "open", DENY_CREATE_SETID, EPERM, SETID_REASON, 2, 1 },
        { "openat", DENY_CREATE_SETID, EPERM, SETID_REASON, 3, 2 },
        { "openat2", DENY_ALWAYS, ENOSYS, "its mode is behind a pointer; ENOSYS makes callers fall back to openat" },
};
const size_t netpolicy_n_syscall_denials =
        sizeof(netpolicy_syscall_denials) / sizeof(netpolicy_syscall_denials[0]);

/* Digits only, no sign, no spaces, value <= max. */
static int parse_number(const char *s, unsigned long long max, unsigned long long *ret)
{
        unsigned long long v = 0;

        if (!s || !*s || strlen(s) > 20)
                return -EINVAL;
        for (const char *c = s; *c; c++) {
                if (*c < '0' || *c > '9')
                        return -EINVAL;
                if (v > (max - (unsigned) (*c - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (unsigned) (*c - '0');
        }
        *ret = v;
        return 0;
}

int netpolicy_parse_allow(const char *s, struct allow_dest *ret, char *err, size_t errlen)
{
        struct address a;
        char why[160];
        if (!s || !*s)
                return ERR("--allow needs a destination (address, CIDR, optional :port)");
        if (strlen(s) > ADDRESS_TEXT_MAX)
                return ERR("--allow %.40s...: too long", s);
        int r = address_parse(s, &a, why, sizeof why);
        if (r < 0)
                return ERR("--allow %s: %s", s, why);
        *ret = (struct allow_dest) { .family = a.family, .prefix = a.prefix, .port = (uint16_t) a.port };
        memcpy(ret->addr, a.addr, sizeof ret->addr);
        return 0;
}

/* An address this host answers itself: over lo, which every ruleset accepts. */
static bool address_is_local(const struct allow_dest *d)
{
        static const uint8_t v6_loopback[16] = { [15] = 1 }, v6_any[16] = {},
                             v4_mapped[12] = { [10] = 0xff, [11] = 0xff };
        if (d->family == AF_INET)
                return d->addr[0] == 127 || (d->addr[0] | d->addr[1] | d->addr[2] | d->addr[3]) == 0;
        return memcmp(d->addr, v6_loopback, 16) == 0 || memcmp(d->addr, v6_any, 16) == 0 ||
               (memcmp(d->addr, v4_mapped, 12) == 0 && d->addr[12] == 127);
}

void netpolicy_parse_resolv_conf(const char *text, size_t size, struct resolvers *ret)
{
        static const char keyword[] = "nameserver";
        const size_t keyword_len = sizeof(keyword) - 1;
        size_t valid = 0;

        memset(ret, 0, sizeof(*ret));
        for (size_t pos = 0; pos < size && valid < NETPOLICY_MAX_RESOLVERS;) {
                const char *line = text + pos;
                const char *nl = memchr(line, '\n', size - pos);
                size_t len = nl ? (size_t) (nl - line) : size - pos;
                pos += len + 1;

                /* glibc: the keyword at the very start of the line, then a blank. */
                if (len <= keyword_len || memcmp(line, keyword, keyword_len) != 0 ||
                    (line[keyword_len] != ' ' && line[keyword_len] != '\t'))
                        continue;
                size_t i = keyword_len;
                while (i < len && (line[i] == ' ' || line[i] == '\t'))
                        i++;
                /* The address ends at a blank, a comment or the line's end (glibc cuts there). */
                char token[64];
                size_t n = 0;
                while (i < len && !strchr(";# \t", line[i]) && line[i] != '\0' && n < sizeof(token) - 1)
                        token[n++] = line[i++];
                if (n == 0 || n == sizeof(token) - 1)
                        continue;
                token[n] = '\0';
                /* Other whitespace (\r, \v, \f) makes glibc's exact parse refuse the line. */
                bool blank_inside = false;
                for (size_t k = 0; k < n; k++)
                        blank_inside |= token[k] == '\r' || token[k] == '\v' || token[k] == '\f';
                if (blank_inside)
                        continue;

                struct allow_dest d = {};
                struct in_addr a4;
                if (inet_aton(token, &a4)) {
                        d.family = AF_INET;
                        d.prefix = 32;
                        memcpy(d.addr, &a4, 4);
                } else {
                        char *scope = strchr(token, '%'); /* an interface: means nothing to a rule */
                        if (scope)
                                *scope = '\0';
                        if (inet_pton(AF_INET6, token, d.addr) != 1)
                                continue;
                        d.family = AF_INET6;
                        d.prefix = 128;
                }
                valid++;
                if (address_is_local(&d)) {
                        ret->n_local++;
                        continue;
                }
                bool seen = false;
                for (size_t k = 0; k < ret->n && !seen; k++)
                        seen = ret->addr[k].family == d.family && memcmp(ret->addr[k].addr, d.addr, 16) == 0;
                if (!seen)
                        ret->addr[ret->n++] = d;
        }
}

static int parse_id(const char *opt, const char *s, unsigned *ret, char *err, size_t errlen)
{
        unsigned long long v;

        /* (uid_t) -1 means "unchanged" to setresuid: never a valid target. */
        if (parse_number(s, 4294967294ULL, &v) < 0)
                return ERR("%s %s: must be a number from 0 to 4294967294", opt, s ? s : "");
        *ret = (unsigned) v;
        return 0;
}

/* The parser's state: the policy, and what the policy cannot say itself. */
struct parse_state {
        struct netpolicy p;
        bool net_given;
};

static int parse_uid(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        if (s->p.have_uid)
                return ERR("--uid given twice");
        if (parse_id("--uid", val, &s->p.uid, err, errlen) < 0)
                return -EINVAL;
        s->p.have_uid = true;
        return 0;
}

static int parse_gid(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        if (s->p.have_gid)
                return ERR("--gid given twice");
        if (parse_id("--gid", val, &s->p.gid, err, errlen) < 0)
                return -EINVAL;
        s->p.have_gid = true;
        return 0;
}

static int parse_net(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        static const struct {
                const char *name;
                enum net_mode mode;
        } modes[] = { { "none", NET_NONE }, { "allow", NET_ALLOW }, { "full", NET_FULL }, { "external", NET_EXTERNAL } };
        if (s->net_given)
                return ERR("--net given twice");
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
                if (streq_safe(val, modes[i].name)) {
                        s->p.net = modes[i].mode;
                        s->net_given = true;
                        return 0;
                }
        return ERR("--net %s: must be none, allow, full or external", val);
}

static int parse_allow(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        if (p->n_allow >= NETPOLICY_MAX_ALLOW)
                return ERR("too many --allow (at most %d)", NETPOLICY_MAX_ALLOW);
        if (netpolicy_parse_allow(val, &p->allow[p->n_allow], err, errlen) < 0)
                return -EINVAL;
        p->n_allow++;
        return 0;
}

static int parse_allow_env(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        const char *colon = strrchr(val, ':');
        unsigned long long port = 0;
        size_t len = colon ? (size_t) (colon - val) : 0;
        if (p->allow_env[0])
                return ERR("--allow-env given twice");
        if (!colon || len == 0 || len >= sizeof(p->allow_env) ||
            strspn(val, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != len || (val[0] >= '0' && val[0] <= '9') ||
            parse_number(colon + 1, 65535, &port) < 0 || port == 0)
                return ERR("--allow-env %s: must be VARIABLE:PORT (upper case, digits, _; port 1..65535)", val);
        memcpy(p->allow_env, val, len);
        p->allow_env[len] = '\0';
        p->allow_env_port = (uint16_t) port;
        return 0;
}

/* PATH:A:B, an absolute PATH (which may hold ':') and two numbers, B at most b_max: 0; -1
 * when it is not of that shape (or PATH is too long), -2 when A or B is not a number. */
static int parse_path_numbers(const char *val, char *path, size_t path_size, unsigned long long *a,
                              unsigned long long b_max, unsigned long long *b)
{
        const char *second = strrchr(val, ':');
        const char *first = NULL;
        for (const char *c = val; second && c < second; c++)
                if (*c == ':')
                        first = c;
        size_t len = first ? (size_t) (first - val) : 0;
        char number[32];
        if (!first || val[0] != '/' || len >= path_size || (size_t) (second - first - 1) >= sizeof(number))
                return -1;
        memcpy(number, first + 1, (size_t) (second - first - 1));
        number[second - first - 1] = '\0';
        if (parse_number(number, ~0ULL, a) < 0 || parse_number(second + 1, b_max, b) < 0)
                return -2;
        memcpy(path, val, len);
        path[len] = '\0';
        return 0;
}

static int parse_expect_mount(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        if (p->n_expect >= NETPOLICY_MAX_EXPECT)
                return ERR("too many --expect-mount (at most %d)", NETPOLICY_MAX_EXPECT);
        struct expect_mount *e = &p->expect[p->n_expect];
        int r = parse_path_numbers(val, e->path, sizeof(e->path), &e->dev, ~0ULL, &e->ino);
        if (r == -1)
                return ERR("--expect-mount %s: must be PATH:DEV:INO", val);
        if (r < 0)
                return ERR("--expect-mount %s: DEV and INO must be numbers", val);
        p->n_expect++;
        return 0;
}

static int parse_expect_file(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        if (p->n_expect >= NETPOLICY_MAX_EXPECT)
                return ERR("too many --expect-mount and --expect-file (at most %d)", NETPOLICY_MAX_EXPECT);
        struct expect_mount *e = &p->expect[p->n_expect];
        unsigned long long ns = 0;
        int r = parse_path_numbers(val, e->path, sizeof(e->path), &e->ino, (unsigned long long) LLONG_MAX, &ns);
        if (r == -1)
                return ERR("--expect-file %s: must be PATH:INO:CTIME_NS", val);
        if (r < 0)
                return ERR("--expect-file %s: INO and CTIME_NS must be numbers", val);
        e->file = true;
        e->ctime_ns = (long long) ns;
        p->n_expect++;
        return 0;
}

static int parse_seed(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        if (p->seed_source[0])
                return ERR("--seed given twice");
        const char *colon = strchr(val, ':');
        size_t source_len = colon ? (size_t) (colon - val) : 0;
        if (!colon || val[0] != '/' || colon[1] != '/' || strchr(colon + 1, ':') || strstr(val, "/.."))
                return ERR("--seed %s: must be SRC:DEST, two absolute paths", val);
        if (source_len >= sizeof(p->seed_source) || strlen(colon + 1) >= sizeof(p->seed_dest))
                return ERR("--seed: a path is longer than %d bytes", NETPOLICY_SEED_PATH_MAX - 1);
        memcpy(p->seed_source, val, source_len);
        p->seed_source[source_len] = '\0';
        memcpy(p->seed_dest, colon + 1, strlen(colon + 1) + 1);
        return 0;
}

static int parse_ca_bundle(struct parse_state *s, const char *val, char *err, size_t errlen)
{
        struct netpolicy *p = &s->p;
        if (p->ca_extra[0])
                return ERR("--ca-bundle given twice");
        if (val[0] != '/' || strstr(val, "/..") || strlen(val) >= sizeof(p->ca_extra))
                return ERR("--ca-bundle %s: must be an absolute path of at most %d bytes", val,
                           NETPOLICY_SEED_PATH_MAX - 1);
        memcpy(p->ca_extra, val, strlen(val) + 1);
        return 0;
}

/* The entrypoint's options: one with a value has a parser; one without sets its flag (given
 * again, it stays set). */
static const struct entrypoint_option {
        const char *name;
        int (*parse)(struct parse_state *s, const char *val, char *err, size_t errlen);
        size_t flag; /* offsetof(struct netpolicy, a bool) when parse is NULL */
} entrypoint_options[] = {
        { "--uid", parse_uid, 0 },
        { "--gid", parse_gid, 0 },
        { "--net", parse_net, 0 },
        { "--allow", parse_allow, 0 },
        { "--allow-env", parse_allow_env, 0 },
        { "--expect-mount", parse_expect_mount, 0 },
        { "--expect-file", parse_expect_file, 0 },
        { "--seed", parse_seed, 0 },
        { "--ca-bundle", parse_ca_bundle, 0 },
        { "--ruleset-only", NULL, offsetof(struct netpolicy, ruleset_only) },
        { "--allow-dns", NULL, offsetof(struct netpolicy, allow_dns) },
        { "--allow-unenforced", NULL, offsetof(struct netpolicy, allow_unenforced) },
        { "--keep-root", NULL, offsetof(struct netpolicy, keep_root) },
        { "--print-ruleset", NULL, offsetof(struct netpolicy, print_ruleset) },
        { "--print-plan", NULL, offsetof(struct netpolicy, print_plan) },
};

static const struct entrypoint_option *option_find(const char *name)
{
        for (size_t i = 0; i < sizeof(entrypoint_options) / sizeof(entrypoint_options[0]); i++)
                if (streq_safe(name, entrypoint_options[i].name))
                        return &entrypoint_options[i];
        return NULL;
}

/* What the options say together: combinations that mean nothing, or too much. */
static int netpolicy_check(const struct netpolicy *p, char *err, size_t errlen)
{
        if (p->net != NET_ALLOW && p->n_allow > 0)
                return ERR("--allow needs --net allow");
        if (p->net != NET_ALLOW && p->allow_dns)
                return ERR("--allow-dns needs --net allow");
        if (p->net != NET_ALLOW && p->allow_env[0])
                return ERR("--allow-env needs --net allow");
        if (p->ruleset_only && (p->net == NET_FULL || p->net == NET_EXTERNAL))
                return ERR("--ruleset-only installs a ruleset: --net none or allow");
        if (p->keep_root && (p->have_uid || p->have_gid))
                return ERR("--keep-root and --uid/--gid exclude each other");
        /* Started unprivileged: nothing may need root (the trust bundle is written to /run
         * before the drop), and the identity is the one it was started with. */
        if (p->net == NET_EXTERNAL && (p->keep_root || p->ca_extra[0]))
                return ERR("--net external starts without privileges: no --keep-root, no --ca-bundle");
        if (!p->keep_root) {
                /* The print modes describe a policy; they may leave out whom it runs as. */
                bool printing = p->print_ruleset || p->print_plan || p->ruleset_only;
                if ((!p->have_uid || !p->have_gid) && !printing)
                        return ERR("--uid and --gid are required (or --keep-root)");
                if (p->have_uid && p->uid == 0)
                        return ERR("--uid 0 is root: say --keep-root if that is meant");
        }
        if (p->print_ruleset && p->print_plan)
                return ERR("--print-ruleset and --print-plan exclude each other");
        if (p->ruleset_only && (p->command || p->have_uid || p->have_gid || p->keep_root || p->seed_source[0] ||
                                p->ca_extra[0] || p->n_expect))
                return ERR("--ruleset-only runs no command: no --uid, --gid, --keep-root, --seed, --ca-bundle, "
                           "--expect-mount, --expect-file or command");
        if (!p->print_ruleset && !p->print_plan && !p->ruleset_only && !p->command)
                return ERR("no command: usage is aisb-entrypoint [OPTIONS] -- COMMAND [ARG...]");
        return 0;
}

int netpolicy_parse(int argc, char *const *argv, struct netpolicy *ret, char *err, size_t errlen)
{
        struct parse_state s = { .p = { .net = NET_NONE } };
        int i;

        for (i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *val = NULL;
                char name[32];

                if (streq_safe(a, "--"))
                        break;
                if (strncmp(a, "--", 2) != 0)
                        return ERR("unexpected argument '%s' (the command goes after --)", a);

                /* Accept both --opt VALUE and --opt=VALUE. */
                const char *eq = strchr(a, '=');
                size_t n = eq ? (size_t) (eq - a) : strlen(a);
                if (n >= sizeof(name))
                        return ERR("unknown option '%.40s'", a);
                memcpy(name, a, n);
                name[n] = '\0';

                const struct entrypoint_option *o = option_find(name);
                if (o && o->parse) {
                        if (eq)
                                val = eq + 1;
                        else if (i + 1 < argc)
                                val = argv[++i];
                        else
                                return ERR("%s needs a value", name);
                } else if (eq) {
                        return ERR("%s takes no value", name);
                }
                if (!o)
                        return ERR("unknown option '%s'", name);
                if (o->parse && o->parse(&s, val, err, errlen) < 0)
                        return -EINVAL;
                if (!o->parse)
                        *(bool *) ((char *) &s.p + o->flag) = true;
        }

        if (i < argc && i + 1 < argc)
                s.p.command = &argv[i + 1];
        if (netpolicy_check(&s.p, err, errlen) < 0)
                return -EINVAL;
        *ret = s.p;
        return 0;
}

static void add_rule(struct netchain *c, struct netrule r)
{
        /* Bounded by NETPOLICY_MAX_ALLOW in the parser; this is the backstop. */
        if (c->n_rules < NETCHAIN_MAX_RULES)
                c->rules[c->n_rules++] = r;
}

void netpolicy_ruleset(const struct netpolicy *p, struct netruleset *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (p->net == NET_FULL || p->net == NET_EXTERNAL)
                return;

        struct netchain *in = &ret->chains[0], *fwd = &ret->chains[1], *out = &ret->chains[2];
        ret->n_chains = 3;
        *in = (struct netchain) { .name = "input", .hook = NF_INET_LOCAL_IN, .is_input = true };
        *fwd = (struct netchain) { .name = "forward", .hook = NF_INET_FORWARD };
        *out = (struct netchain) { .name = "output", .hook = NF_INET_LOCAL_OUT };

        /* Input: replies to what output let out, and loopback. Nothing in the sandbox is meant
         * to be reached from outside. Forward: the sandbox routes nothing. */
        add_rule(in, (struct netrule) { .kind = RULE_LOOPBACK });
        add_rule(in, (struct netrule) { .kind = RULE_CT_ESTABLISHED });

        add_rule(out, (struct netrule) { .kind = RULE_LOOPBACK });
        if (p->net == NET_NONE)
                return;
        add_rule(out, (struct netrule) { .kind = RULE_CT_ESTABLISHED });
        for (size_t i = 0; i < p->n_allow; i++) {
                const struct allow_dest *d = &p->allow[i];
                struct netrule r = { .kind = RULE_DEST, .family = d->family, .prefix = d->prefix,
                                     .port = d->port };
                memcpy(r.addr, d->addr, sizeof(r.addr));
                r.l4proto = IPPROTO_TCP;
                add_rule(out, r);
                if (d->port == 0) {
                        r.l4proto = IPPROTO_UDP;
                        add_rule(out, r);
                }
        }
        /* DNS only to the resolvers the sandbox was given: port 53 anywhere would be a plain
         * TCP tunnel to any host that listens there. */
        for (size_t i = 0; p->allow_dns && p->resolvers_read && i < p->resolvers.n; i++) {
                const struct allow_dest *d = &p->resolvers.addr[i];
                struct netrule r = { .kind = RULE_DEST, .family = d->family, .prefix = d->prefix,
                                     .l4proto = IPPROTO_UDP, .port = 53 };
                memcpy(r.addr, d->addr, sizeof(r.addr));
                add_rule(out, r);
                r.l4proto = IPPROTO_TCP;
                add_rule(out, r);
        }
}

int netrule_format(const struct netrule *r, bool is_input, char *buf, size_t len)
{
        char addr[INET6_ADDRSTRLEN], pfx[8] = "";
        const char *proto = r->l4proto == IPPROTO_UDP ? "udp" : "tcp";
        int n;

        switch (r->kind) {
        case RULE_LOOPBACK:
                return snprintf(buf, len, "%s \"lo\" accept", is_input ? "iif" : "oif");
        case RULE_CT_ESTABLISHED:
                return snprintf(buf, len, "ct state established,related accept");
        case RULE_DEST:
                break;
        }

        if (r->family == 0)
                return snprintf(buf, len, "%s dport %u accept", proto, r->port);

        if (r->prefix == 0) {
                /* A /0 matches the family alone: say it as nft lists it. */
                n = snprintf(buf, len, "meta nfproto %s ", r->family == AF_INET ? "ipv4" : "ipv6");
        } else {
                (void) inet_ntop(r->family, r->addr, addr, sizeof(addr));
                if (r->prefix != (r->family == AF_INET ? 32u : 128u))
                        (void) snprintf(pfx, sizeof(pfx), "/%u", r->prefix);
                n = snprintf(buf, len, "%s daddr %s%s ", r->family == AF_INET ? "ip" : "ip6", addr, pfx);
        }
        if (n < 0 || (size_t) n >= len)
                return n;
        if (r->port)
                return n + snprintf(buf + n, len - (size_t) n, "%s dport %u accept", proto, r->port);
        return n + snprintf(buf + n, len - (size_t) n, "meta l4proto %s accept", proto);
}

void netpolicy_print_ruleset(const struct netpolicy *p, FILE *f)
{
        struct netruleset *rs = calloc(1, sizeof(*rs));
        char line[256];

        if (!rs)
                return;
        netpolicy_ruleset(p, rs);
        if (rs->n_chains == 0) {
                fprintf(f, p->net == NET_EXTERNAL ? "# --net external: no ruleset; the network is enforced outside the container\n"
                                                  : "# --net full: no ruleset is installed\n");
                free(rs);
                return;
        }
        fprintf(f, "table inet %s {\n", NETPOLICY_TABLE);
        for (size_t c = 0; c < rs->n_chains; c++) {
                const struct netchain *ch = &rs->chains[c];
                if (c > 0)
                        fputc('\n', f);
                fprintf(f, "\tchain %s {\n", ch->name);
                fprintf(f, "\t\ttype filter hook %s priority filter; policy drop;\n", ch->name);
                for (size_t i = 0; i < ch->n_rules; i++) {
                        (void) netrule_format(&ch->rules[i], ch->is_input, line, sizeof(line));
                        fprintf(f, "\t\t%s\n", line);
                }
                /* Not yet known to whoever prints: the entrypoint reads them at start. */
                if (ch->hook == NF_INET_LOCAL_OUT && p->net == NET_ALLOW && p->allow_dns && !p->resolvers_read)
                        fprintf(f, "\t\t# udp/tcp dport 53 to each nameserver of %s, read at start "
                                   "(loopback ones need no rule)\n", NETPOLICY_RESOLV_CONF);
                if (ch->hook == NF_INET_LOCAL_OUT && p->allow_env[0])
                        fprintf(f, "\t\t# tcp dport %u to the address in $%s, read at start\n",
                                (unsigned) p->allow_env_port, p->allow_env);
                fprintf(f, "\t}\n");
        }
        fprintf(f, "}\n");
        free(rs);
}

static const char *denial_condition(enum denial_kind k)
{
        switch (k) {
        case DENY_ALWAYS:
                return "always";
        case DENY_CLONE_NAMESPACES:
                return "if flags has any CLONE_NEW*";
        case DENY_SOCKET_FAMILIES:
                return "if family is not AF_UNIX/AF_INET/AF_INET6/AF_NETLINK";
        case DENY_SOCKET_RAW:
                return "if type is SOCK_RAW or SOCK_PACKET, family not AF_NETLINK";
        case DENY_IOCTL_TIOCSTI:
                return "if request is TIOCSTI or TIOCLINUX";
        case DENY_MODE_SETID:
                return "if mode has S_ISUID or S_ISGID";
        case DENY_CREATE_SETID:
                return "if it creates (O_CREAT, O_TMPFILE) with S_ISUID or S_ISGID in mode";
        }
        return "?";
}

void netpolicy_print_plan(const struct netpolicy *p, FILE *f)
{
        struct netruleset *rs = calloc(1, sizeof(*rs));
        size_t nrules = 0;

        if (!rs)
                return;
        netpolicy_ruleset(p, rs);
        for (size_t c = 0; c < rs->n_chains; c++)
                nrules += rs->chains[c].n_rules;

        if (p->net == NET_EXTERNAL)
                fprintf(f, "capabilities: none; started as uid %u gid %u, not root, every capability set and the "
                           "bounding set empty, or nothing runs (exit %d)\n",
                        p->uid, p->gid, EP_EXIT_UNENFORCED);
        else {
                fprintf(f, "capabilities kept until the drop (the container must be created with exactly these):\n");
                for (size_t i = 0; i < netpolicy_n_needed_capabilities; i++)
                        fprintf(f, "  %-14s %s\n", netpolicy_needed_capabilities[i].name,
                                netpolicy_needed_capabilities[i].why);
        }
        fprintf(f, "steps:\n");
        for (size_t i = 0; i < p->n_expect; i++)
                if (p->expect[i].file)
                        fprintf(f, "  0. %s must be the file aisb chose (one link, inode %llu, changed at %lld ns): "
                                   "a project swapped for another while the container started exits %d\n",
                                p->expect[i].path, p->expect[i].ino, p->expect[i].ctime_ns, EP_EXIT_UNENFORCED);
                else
                        fprintf(f, "  0. %s must be the file aisb chose (device %llu, inode %llu): one swapped for "
                                   "a link while the container started exits %d\n",
                                p->expect[i].path, p->expect[i].dev, p->expect[i].ino, EP_EXIT_UNENFORCED);
        if (p->net == NET_EXTERNAL) {
                fprintf(f, "  1. network: --net external: no ruleset; the network is enforced outside the container\n");
                fprintf(f, "  2. verify: the identity and the empty capability sets, then no_new_privs\n");
        } else if (rs->n_chains == 0) {
                fprintf(f, "  1. network: --net full: no ruleset (warning on stderr)\n");
                fprintf(f, "  2. verify: nothing to verify\n");
        } else {
                fprintf(f, "  1. network: ");
                if (p->net == NET_ALLOW && p->allow_dns && !p->resolvers_read)
                        fprintf(f, "read %s (a regular file, no symlink, at most %d KiB) to allow "
                                   "udp/tcp dport 53 to each nameserver of %s, loopback ones needing no "
                                   "rule (none, or no such file: no DNS rule, said on stderr); ",
                                NETPOLICY_RESOLV_CONF, NETPOLICY_RESOLV_CONF_MAX / 1024, NETPOLICY_RESOLV_CONF);
                if (p->allow_env[0])
                        fprintf(f, "read $%s (an IP address, or nothing runs: exit %d) to allow tcp dport %u to it; ",
                                p->allow_env, EP_EXIT_UNENFORCED, (unsigned) p->allow_env_port);
                fprintf(f, "install table inet %s as one netlink batch: %zu chains "
                           "(policy drop), %zu rules%s; failure exits %d%s\n",
                        NETPOLICY_TABLE, rs->n_chains, nrules,
                        p->net == NET_ALLOW && p->allow_dns && !p->resolvers_read
                                ? ", plus two for each nameserver" : "",
                        EP_EXIT_UNENFORCED,
                        p->allow_unenforced ? " unless --allow-unenforced (then a warning)" : "");
                fprintf(f, "  2. verify: read table, chains (hook, priority, policy) and every rule back "
                           "over netlink and compare; a difference exits %d%s\n",
                        EP_EXIT_UNENFORCED, p->allow_unenforced ? " unless --allow-unenforced" : "");
        }
        if (p->net == NET_EXTERNAL) {
                fprintf(f, "  3. privileges: none to drop: check uid %u and gid %u (real, effective, saved), "
                           "no capability in any set, bounding and ambient included; PR_SET_NO_NEW_PRIVS; "
                           "failure exits %d\n",
                        (unsigned) p->uid, (unsigned) p->gid, EP_EXIT_UNENFORCED);
        } else {
                fprintf(f, "  3. privileges: empty the bounding set up to cap_last_cap; lock securebits "
                           "(noroot, no ambient raise); setgroups(0); ");
                if (p->keep_root)
                        fprintf(f, "stay uid 0 gid 0 (--keep-root); ");
                else if (p->have_uid && p->have_gid)
                        fprintf(f, "setresgid(%u); setresuid(%u); ", (unsigned) p->gid, (unsigned) p->uid);
                else
                        fprintf(f, "setresgid(--gid); setresuid(--uid); ");
                if (p->ca_extra[0])
                        fprintf(f, "(before: " NETPOLICY_CA_BUNDLE " = " NETPOLICY_SYSTEM_CAS " then %s, the gate's CA; "
                                   "failure exits %d) ", p->ca_extra, EP_EXIT_UNENFORCED);
                fprintf(f, "capset: effective, permitted, inheritable empty; clear ambient; "
                           "PR_SET_NO_NEW_PRIVS; check all of it; failure exits %d\n", EP_EXIT_UNENFORCED);
        }
        if (p->seed_source[0])
                fprintf(f, "     then, as that user: copy the regular files of %s into %s (created, mode 0700); "
                           "failure exits %d\n", p->seed_source, p->seed_dest, EP_EXIT_BAD_POLICY);
        fprintf(f, "  4. seccomp: load the filter last (default allow, native architecture only, "
                   "other architectures kill the process):\n");
        for (size_t i = 0; i < netpolicy_n_syscall_denials; i++) {
                const struct syscall_denial *d = &netpolicy_syscall_denials[i];
                fprintf(f, "       %-18s %-8s %s: %s\n", d->syscall,
                        d->errno_value == ENOSYS ? "ENOSYS" : "EPERM", denial_condition(d->kind),
                        d->reason);
        }
        if (p->ruleset_only)
                fprintf(f, "  (--ruleset-only: after step 2, exit 0; the ruleset stays in the network namespace)\n");
        else
                fprintf(f, "  5. exec: execvp the command with the environment unchanged "
                           "(not found %d, not executable %d)\n", EP_EXIT_NOT_FOUND, EP_EXIT_NOT_EXECUTABLE);
        free(rs);
}
