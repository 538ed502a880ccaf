/* SPDX-License-Identifier: MIT */
/* Turn the denial table of netpolicy.c into a libseccomp filter. Default allow: the sandbox is
 * a normal Linux userland that must run compilers, package managers and test suites; the
 * filter removes the kernel interfaces that could undo the other layers (namespaces, mounts,
 * non-IP sockets) or that are attack surface an agent has no use for.
 *
 * Only the native architecture is in the filter. A 64-bit process can still issue 32-bit
 * system calls (int 0x80 on x86_64) and the x32 ABI (__X32_SYSCALL_BIT); those carry other
 * numbers and, for socket on i386, the socketcall multiplexer whose arguments sit behind a
 * pointer. Rather than audit three tables, a system call of any other architecture kills the
 * process (SCMP_FLTATR_ACT_BADARCH). The cost: 32-bit binaries do not run in the sandbox. */
#include "sandbox-seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "netpolicy.h"

#define SAY(...) ((void) (errlen > 0 ? snprintf(err, errlen, __VA_ARGS__) : 0))

/* Every CLONE_NEW* that clone(2) accepts. CLONE_NEWTIME (0x80) is missing on purpose: in
 * clone(2) that bit belongs to the exit signal; new time namespaces come only from unshare
 * and clone3, both denied whole. */
static const unsigned long clone_namespace_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* Families allowed: AF_UNIX 1, AF_INET 2, AF_INET6 10, AF_NETLINK 16. All others denied. */
static int add_socket_families(scmp_filter_ctx ctx, uint32_t action, int nr)
{
        int r;

        /* The kernel reads the family as an int: compare only the low 32 bits, or a caller
         * could slip AF_PACKET past an exact 64-bit compare with junk in the high half. */
        for (unsigned family = 0; family < AF_NETLINK; family++) {
                if (family == AF_UNIX || family == AF_INET || family == AF_INET6)
                        continue;
                r = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, family));
                if (r < 0)
                        return r;
        }
        /* Above AF_NETLINK everything goes; junk in the high half only makes this match more. */
        return seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_GT, (scmp_datum_t) AF_NETLINK));
}

/* A mode with S_ISUID or S_ISGID in argument mode_arg; with create_flag, only when argument
 * flags_arg has that flag too. Each bit its own rule: libseccomp ORs rules, ANDs comparisons. */
static int add_setid_modes(scmp_filter_ctx ctx, uint32_t action, int nr, const struct syscall_denial *d,
                           unsigned long create_flag)
{
        static const unsigned long bits[] = { S_ISUID, S_ISGID };
        int r = 0;

        for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]) && r >= 0; i++) {
                struct scmp_arg_cmp mode = { d->mode_arg, SCMP_CMP_MASKED_EQ, bits[i], bits[i] };
                struct scmp_arg_cmp flags = { d->flags_arg, SCMP_CMP_MASKED_EQ, create_flag, create_flag };
                r = create_flag ? seccomp_rule_add(ctx, action, nr, 2, mode, flags)
                                : seccomp_rule_add(ctx, action, nr, 1, mode);
        }
        return r;
}

int sandbox_seccomp_build(scmp_filter_ctx *ret, char *err, size_t errlen)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r = 0;

        if (!ctx) {
                SAY("seccomp_init failed");
                return -ENOMEM;
        }
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        /* Kernels before 4.14 (and valgrind) lack SECCOMP_RET_KILL_PROCESS: kill the thread. */
        if (r == -EINVAL)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
        if (r < 0) {
                SAY("seccomp: setting the bad-architecture action: %s", strerror(-r));
                goto fail;
        }

        for (size_t i = 0; i < netpolicy_n_syscall_denials; i++) {
                const struct syscall_denial *d = &netpolicy_syscall_denials[i];
                uint32_t action = SCMP_ACT_ERRNO((uint32_t) d->errno_value);
                int nr = seccomp_syscall_resolve_name(d->syscall);

                if (nr == __NR_SCMP_ERROR) {
                        r = -EINVAL;
                        SAY("seccomp: unknown system call %s", d->syscall);
                        goto fail;
                }
                switch (d->kind) {
                case DENY_ALWAYS:
                        r = seccomp_rule_add(ctx, action, nr, 0);
                        break;
                case DENY_CLONE_NAMESPACES:
                        for (size_t f = 0; f < sizeof(clone_namespace_flags) / sizeof(clone_namespace_flags[0]) && r >= 0; f++)
                                r = seccomp_rule_add(ctx, action, nr, 1,
                                                     SCMP_A0(SCMP_CMP_MASKED_EQ, clone_namespace_flags[f],
                                                             clone_namespace_flags[f]));
                        break;
                case DENY_SOCKET_FAMILIES:
                        r = add_socket_families(ctx, action, nr);
                        break;
                case DENY_SOCKET_RAW:
                        /* The type argument also carries SOCK_NONBLOCK and SOCK_CLOEXEC, hence
                         * the mask. Netlink is exempt: SOCK_RAW is its ordinary type (glibc's
                         * getaddrinfo opens one), and it carries no traffic past nftables. */
                        r = seccomp_rule_add(ctx, action, nr, 2, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t) AF_NETLINK),
                                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW));
                        if (r >= 0)
                                r = seccomp_rule_add(ctx, action, nr, 2,
                                                     SCMP_A0(SCMP_CMP_NE, (scmp_datum_t) AF_NETLINK),
                                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET));
                        break;
                case DENY_IOCTL_TIOCSTI:
                        r = seccomp_rule_add(ctx, action, nr, 1,
                                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI));
                        if (r >= 0)
                                r = seccomp_rule_add(ctx, action, nr, 1,
                                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX));
                        break;
                case DENY_MODE_SETID:
                        r = add_setid_modes(ctx, action, nr, d, 0);
                        break;
                case DENY_CREATE_SETID:
                        /* The kernel reads the mode only when the call creates; other opens
                         * may pass anything there. O_TMPFILE is __O_TMPFILE | O_DIRECTORY. */
                        r = add_setid_modes(ctx, action, nr, d, O_CREAT);
                        if (r >= 0)
                                r = add_setid_modes(ctx, action, nr, d, O_TMPFILE & ~O_DIRECTORY);
                        break;
                }
                if (r < 0) {
                        SAY("seccomp: rule for %s: %s", d->syscall, strerror(-r));
                        goto fail;
                }
        }
        *ret = ctx;
        return 0;
fail:
        seccomp_release(ctx);
        return r < 0 ? r : -EINVAL;
}
