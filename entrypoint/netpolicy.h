/* SPDX-License-Identifier: MIT */
/* The entrypoint's policy, without any kernel interface: option parsing into a struct
 * netpolicy, the abstract ruleset that policy implies, and the two texts that describe it
 * (nft syntax for --print-ruleset, the step list for --print-plan). The entrypoint builds its
 * netlink batch and its seccomp filter from the same tables, and libaisb links this file
 * alone so it can print both texts without netlink, libnftnl or libseccomp.
 *
 * Nothing here prints, exits or allocates: parse errors come back as one line in a caller's
 * buffer, texts are written to a caller's FILE. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes of the entrypoint, part of its interface. */
#define EP_EXIT_UNENFORCED 77 /* ruleset (or privilege drop, seccomp) not in force */
#define EP_EXIT_BAD_POLICY 78 /* malformed options */
#define EP_EXIT_NOT_EXECUTABLE 126
#define EP_EXIT_NOT_FOUND 127

/* Each --allow costs up to two rules and one netlink ack; this bound keeps every ack inside a
 * default-sized netlink receive buffer (see nft.c), and is far above any sane allowlist. */
#define NETPOLICY_MAX_ALLOW 64

#define NETPOLICY_TABLE "aisb"
#define NETPOLICY_SEED_PATH_MAX 256
/* The project, each --mount, and the protected paths' mounts (at most 256, lib/policy/protect.h). */
#define NETPOLICY_MAX_EXPECT 320
#define NETPOLICY_EXPECT_PATH_MAX 1024
#define NETPOLICY_SYSTEM_CAS "/etc/ssl/certs/ca-certificates.crt"
#define NETPOLICY_CA_BUNDLE "/run/aisb/ca-bundle.crt"

/* --expect-mount PATH:DEV:INO: PATH inside the container must be that very file (device and
 * inode as the host saw them), or nothing runs: a path podman resolved after aisb chose it
 * could have been swapped for a link in between.
 * --expect-file PATH:INO:CTIME_NS: PATH must be a regular file of one link with that inode and
 * change time (nanoseconds), on any device: a file at the top of a review run's project, seen
 * through the overlay, which shows a file's own inode and times on a device of its own. A
 * hard link to it made elsewhere counts two links and moves its change time; another file
 * elsewhere does not have both. */
struct expect_mount {
        char path[NETPOLICY_EXPECT_PATH_MAX];
        unsigned long long dev, ino;
        bool file;             /* --expect-file: no device; one link, ctime_ns */
        long long ctime_ns;
};

enum net_mode {
        NET_NONE,
        NET_ALLOW,
        NET_FULL,
        /* Enforced outside the container (a Kubernetes NetworkPolicy): no ruleset, and the
         * entrypoint starts without privileges, which it checks instead of dropping. */
        NET_EXTERNAL,
};

struct allow_dest {
        int family;           /* AF_INET or AF_INET6 */
        uint8_t addr[16];     /* network byte order; host bits are zero */
        unsigned prefix;      /* 0..32 or 0..128 */
        uint16_t port;        /* host order; 0 = any TCP or UDP port */
};

/* glibc asks at most three nameservers (MAXNS) and ignores the lines after them. */
#define NETPOLICY_MAX_RESOLVERS 3
/* /etc/resolv.conf is a few lines that podman writes; more than this is not one of those. */
#define NETPOLICY_RESOLV_CONF_MAX (64 * 1024)
#define NETPOLICY_RESOLV_CONF "/etc/resolv.conf"

/* The nameservers of a resolv.conf, as glibc reads them: the first NETPOLICY_MAX_RESOLVERS
 * valid "nameserver ADDR" lines. Those that are this host (loopback, unspecified) are counted
 * apart: they are reached over lo, which the ruleset accepts anyway. */
struct resolvers {
        struct allow_dest addr[NETPOLICY_MAX_RESOLVERS]; /* /32 or /128, port 0; no repeats */
        size_t n;
        size_t n_local;
};

struct netpolicy {
        enum net_mode net;
        struct allow_dest allow[NETPOLICY_MAX_ALLOW];
        size_t n_allow;
        /* --allow-dns: UDP and TCP port 53 to each of resolvers, which the entrypoint reads from
         * /etc/resolv.conf before it builds the ruleset (resolvers_read). The printers, which
         * read nothing, describe that instead of listing addresses. */
        bool allow_dns;
        /* --allow-env VAR:PORT: one more destination, the address in VAR when the entrypoint
         * starts (a Kubernetes Service's host variable), on PORT; a VAR unset or not an
         * address runs nothing. The printers name it instead. */
        char allow_env[NETPOLICY_SEED_PATH_MAX];
        uint16_t allow_env_port;
        /* --ruleset-only: install and verify the ruleset, then exit 0 (an init container
         * that sets up the pod's network for the containers after it). */
        bool ruleset_only;
        /* --seed SRC:DEST: after the drop, copy SRC's regular files into DEST (created) as the
         * user. Both absolute, or empty for none. */
        char seed_source[NETPOLICY_SEED_PATH_MAX];
        char seed_dest[NETPOLICY_SEED_PATH_MAX];
        /* --ca-bundle PEM: before the drop, NETPOLICY_CA_BUNDLE becomes the system's trusted CAs
         * followed by PEM (the gate's CA, when the gate intercepts TLS). Empty for none. */
        char ca_extra[NETPOLICY_SEED_PATH_MAX];
        struct expect_mount expect[NETPOLICY_MAX_EXPECT];
        size_t n_expect;
        struct resolvers resolvers;
        bool resolvers_read;
        bool allow_unenforced;
        bool keep_root;
        bool print_ruleset;
        bool print_plan;
        bool have_uid, have_gid;
        uid_t uid;
        gid_t gid;
        char *const *command; /* points into the argv given to netpolicy_parse; NULL if none */
};

/* Parse the entrypoint's argv (argv[0] is the program name). Returns 0, or -EINVAL with one
 * line (no program prefix, no newline) in err. Never uses getopt's global state. */
int netpolicy_parse(int argc, char *const *argv, struct netpolicy *ret, char *err, size_t errlen);

/* Parse one --allow value. Exposed for the tests and for libaisb's own validation. */
int netpolicy_parse_allow(const char *s, struct allow_dest *ret, char *err, size_t errlen);

/* Parse resolv.conf text (size bytes, not NUL-terminated) the way glibc's resolver does:
 * "nameserver" at the start of a line, blanks, an address (IPv4 as inet_aton reads it, IPv6
 * with an optional %scope, which is dropped), anything after it ignored; comment lines (# or
 * ;) and everything else skipped. Pure: no I/O, no allocation, any input. */
void netpolicy_parse_resolv_conf(const char *text, size_t size, struct resolvers *ret);

/* The abstract ruleset: what every chain of table inet aisb holds. */
enum netrule_kind {
        RULE_LOOPBACK,       /* oif "lo" (output) or iif "lo" (input): ifindex 1 */
        RULE_CT_ESTABLISHED, /* ct state established,related */
        RULE_DEST,           /* [ip|ip6 daddr PREFIX] l4proto P [dport N] */
};

struct netrule {
        enum netrule_kind kind;
        int family;       /* RULE_DEST: AF_INET, AF_INET6, or 0 = any */
        uint8_t addr[16];
        unsigned prefix;
        uint8_t l4proto;  /* IPPROTO_TCP or IPPROTO_UDP */
        uint16_t port;    /* 0 = any */
};

#define NETCHAIN_MAX_RULES (2 * NETPOLICY_MAX_ALLOW + 8)

struct netchain {
        const char *name;
        unsigned hook;    /* NF_INET_LOCAL_IN, ... */
        bool is_input;    /* loopback rule matches iif rather than oif */
        struct netrule rules[NETCHAIN_MAX_RULES];
        size_t n_rules;
};

struct netruleset {
        struct netchain chains[3]; /* input, forward, output: all type filter, priority 0, policy drop */
        size_t n_chains;           /* 0 for --net full: no table at all */
};

void netpolicy_ruleset(const struct netpolicy *p, struct netruleset *ret);

/* One rule in nft syntax, as `nft list` prints it (no newline). */
int netrule_format(const struct netrule *r, bool is_input, char *buf, size_t len);

/* --print-ruleset and --print-plan. */
void netpolicy_print_ruleset(const struct netpolicy *p, FILE *f);
void netpolicy_print_plan(const struct netpolicy *p, FILE *f);

/* The capabilities the container must be created with, and why (for the plan and docs). */
struct needed_capability {
        const char *name;
        const char *why;
};
extern const struct needed_capability netpolicy_needed_capabilities[];
extern const size_t netpolicy_n_needed_capabilities;

/* The seccomp denials, as data: seccomp.c turns them into a filter, the plan prints them. */
enum denial_kind {
        DENY_ALWAYS,            /* the syscall, whatever its arguments */
        DENY_CLONE_NAMESPACES,  /* clone with any CLONE_NEW* flag in its flags argument */
        DENY_SOCKET_FAMILIES,   /* socket/socketpair outside AF_UNIX, AF_INET, AF_INET6, AF_NETLINK */
        DENY_SOCKET_RAW,        /* socket with type SOCK_RAW or SOCK_PACKET, any family */
        DENY_IOCTL_TIOCSTI,     /* ioctl(fd, TIOCSTI) and ioctl(fd, TIOCLINUX) */
        DENY_MODE_SETID,        /* a mode argument (mode_arg) with S_ISUID or S_ISGID */
        DENY_CREATE_SETID,      /* the same, when the flags (flags_arg) create: O_CREAT or O_TMPFILE */
};

struct syscall_denial {
        const char *syscall;
        enum denial_kind kind;
        int errno_value;
        const char *reason;
        unsigned mode_arg, flags_arg; /* argument indexes, for the *_SETID kinds */
};
extern const struct syscall_denial netpolicy_syscall_denials[];
extern const size_t netpolicy_n_syscall_denials;
