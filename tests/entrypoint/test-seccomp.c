/* SPDX-License-Identifier: MIT */
/* The seccomp filter's verdicts, without loading it: libseccomp exports the classic BPF
 * program (seccomp_export_bpf) and a small interpreter here runs it over a struct
 * seccomp_data, as the kernel would (libseccomp's tools/scmp_bpf_sim.c does the same). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox-seccomp.h"
#include "suites.h"
#include "../suite-table.h"

static struct sock_filter *prog;
static size_t prog_len;

static void load_program(void)
{
        scmp_filter_ctx ctx = NULL;
        char err[256] = "";
        ck_assert_msg(sandbox_seccomp_build(&ctx, err, sizeof(err)) == 0, "%s", err);
        int fd = memfd_create("bpf", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(seccomp_export_bpf(ctx, fd), 0);
        seccomp_release(ctx);
        off_t size = lseek(fd, 0, SEEK_END);
        ck_assert_int_gt(size, 0);
        ck_assert_int_eq(size % (off_t) sizeof(struct sock_filter), 0);
        free(prog);
        prog = malloc((size_t) size);
        ck_assert_int_eq(pread(fd, prog, (size_t) size, 0), size);
        prog_len = (size_t) size / sizeof(struct sock_filter);
        close(fd);
}

/* Classic BPF as seccomp allows it: loads from seccomp_data, scratch memory, ALU and jumps
 * on constants or X, returns. Anything else fails the test rather than guessing. */
static uint32_t run(const struct seccomp_data *d)
{
        uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {};
        const uint8_t *data = (const uint8_t *) d;

        for (size_t pc = 0; pc < prog_len; pc++) {
                const struct sock_filter *f = &prog[pc];
                uint32_t k = f->k;
                switch (BPF_CLASS(f->code)) {
                case BPF_LD:
                        if (f->code == (BPF_LD | BPF_W | BPF_ABS)) {
                                ck_assert_uint_le(k + 4, sizeof(*d));
                                memcpy(&A, data + k, 4);
                        } else if (f->code == (BPF_LD | BPF_IMM)) {
                                A = k;
                        } else if (f->code == (BPF_LD | BPF_MEM)) {
                                A = M[k];
                        } else {
                                ck_abort_msg("unsupported ld 0x%x", f->code);
                        }
                        break;
                case BPF_LDX:
                        if (f->code == (BPF_LDX | BPF_IMM))
                                X = k;
                        else if (f->code == (BPF_LDX | BPF_MEM))
                                X = M[k];
                        else
                                ck_abort_msg("unsupported ldx 0x%x", f->code);
                        break;
                case BPF_ST:
                        M[k] = A;
                        break;
                case BPF_STX:
                        M[k] = X;
                        break;
                case BPF_ALU: {
                        uint32_t v = BPF_SRC(f->code) == BPF_X ? X : k;
                        switch (BPF_OP(f->code)) {
                        case BPF_ADD: A += v; break;
                        case BPF_SUB: A -= v; break;
                        case BPF_AND: A &= v; break;
                        case BPF_OR: A |= v; break;
                        case BPF_XOR: A ^= v; break;
                        case BPF_LSH: A <<= v; break;
                        case BPF_RSH: A >>= v; break;
                        case BPF_NEG: A = -A; break;
                        default: ck_abort_msg("unsupported alu 0x%x", f->code);
                        }
                        break;
                }
                case BPF_JMP: {
                        uint32_t v = BPF_SRC(f->code) == BPF_X ? X : k;
                        bool taken;
                        switch (BPF_OP(f->code)) {
                        case BPF_JA: pc += k; continue;
                        case BPF_JEQ: taken = A == v; break;
                        case BPF_JGT: taken = A > v; break;
                        case BPF_JGE: taken = A >= v; break;
                        case BPF_JSET: taken = (A & v) != 0; break;
                        default: ck_abort_msg("unsupported jmp 0x%x", f->code); return 0;
                        }
                        pc += taken ? f->jt : f->jf;
                        break;
                }
                case BPF_RET:
                        return BPF_RVAL(f->code) == BPF_A ? A : k;
                case BPF_MISC:
                        if (BPF_MISCOP(f->code) == BPF_TAX)
                                X = A;
                        else
                                A = X;
                        break;
                }
        }
        ck_abort_msg("program ran off its end");
        return 0;
}

static uint32_t native_arch(void)
{
        /* libseccomp's arch tokens are the AUDIT_ARCH_* values the kernel puts in seccomp_data. */
        return seccomp_arch_native();
}

static uint32_t verdict(long nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
        struct seccomp_data d = { .nr = (int) nr, .arch = native_arch(), .args = { a0, a1, a2 } };
        return run(&d);
}

#define ALLOW SECCOMP_RET_ALLOW
/* KILL_PROCESS where the kernel has it; libseccomp falls back to KILL_THREAD where it does not
 * (and under valgrind, which hides the seccomp system call). */
#define ck_assert_kills(v)                                                                       \
        do {                                                                                     \
                uint32_t v_ = (v);                                                               \
                ck_assert_msg(v_ == SECCOMP_RET_KILL_PROCESS || v_ == SECCOMP_RET_KILL_THREAD,   \
                              "verdict 0x%x is not a kill", v_);                                 \
        } while (0)
#define DENY(e) (SECCOMP_RET_ERRNO | (e))

START_TEST(denied_whole)
{
        static const long nrs[] = {
                __NR_unshare, __NR_setns, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
                __NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
                __NR_mount_setattr, __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_keyctl,
                __NR_add_key, __NR_request_key, __NR_io_uring_setup, __NR_io_uring_enter,
                __NR_io_uring_register, __NR_kexec_load, __NR_kexec_file_load, __NR_init_module,
                __NR_finit_module, __NR_delete_module, __NR_open_by_handle_at, __NR_swapon,
                __NR_reboot, __NR_syslog,
#ifdef __NR_iopl
                __NR_iopl, __NR_ioperm,
#endif
        };
        load_program();
        for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
                ck_assert_msg(verdict(nrs[i], 0, 0, 0) == DENY(EPERM), "syscall %ld not denied", nrs[i]);
                /* Arguments do not matter for these. */
                ck_assert_uint_eq(verdict(nrs[i], ~0ULL, 1, 2), DENY(EPERM));
        }
        /* clone3 answers ENOSYS so glibc falls back to clone, which the filter can inspect. */
        ck_assert_uint_eq(verdict(__NR_clone3, 0, 88, 0), DENY(ENOSYS));
}
END_TEST

START_TEST(allowed_everyday)
{
        static const long nrs[] = { __NR_read, __NR_write, __NR_openat, __NR_execve, __NR_ptrace,
                                    __NR_connect, __NR_getpid, __NR_mmap, __NR_wait4, __NR_prctl };
        load_program();
        for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
                ck_assert_msg(verdict(nrs[i], 3, 4, 5) == ALLOW, "syscall %ld not allowed", nrs[i]);
}
END_TEST

START_TEST(clone_flags)
{
        load_program();
        /* fork() and pthread_create() as glibc issues them. */
        ck_assert_uint_eq(verdict(__NR_clone, SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID, 0, 0), ALLOW);
        ck_assert_uint_eq(verdict(__NR_clone, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                              CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                                              CLONE_CHILD_CLEARTID, 0, 0), ALLOW);
        ck_assert_uint_eq(verdict(__NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0), ALLOW);
        static const uint64_t ns[] = { CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                       CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET };
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
                ck_assert_uint_eq(verdict(__NR_clone, ns[i] | SIGCHLD, 0, 0), DENY(EPERM));
                ck_assert_uint_eq(verdict(__NR_clone, ns[i] | CLONE_VM | SIGCHLD, 0, 0), DENY(EPERM));
        }
        ck_assert_uint_eq(verdict(__NR_clone, CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, 0, 0), DENY(EPERM));
}
END_TEST

START_TEST(socket_families_and_types)
{
        load_program();
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET, SOCK_STREAM, 0), ALLOW);
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), ALLOW);
        ck_assert_uint_eq(verdict(__NR_socket, AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0), ALLOW);
        /* glibc's getaddrinfo: netlink with SOCK_RAW stays allowed. */
        ck_assert_uint_eq(verdict(__NR_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), ALLOW);
        /* Raw and packet-type sockets, any IP family, any flags. */
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET, SOCK_RAW, 1), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 58), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET, SOCK_PACKET, 0), DENY(EPERM));
        /* Families nftables does not see. */
        static const uint64_t fam[] = { AF_UNSPEC, AF_PACKET, AF_VSOCK, AF_BLUETOOTH, AF_ALG, AF_XDP, AF_CAN,
                                        AF_TIPC, AF_KEY, AF_APPLETALK, AF_AX25, AF_IPX, AF_X25, AF_RDS, 255 };
        for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
                ck_assert_msg(verdict(__NR_socket, fam[i], SOCK_DGRAM, 0) == DENY(EPERM), "family %llu",
                              (unsigned long long) fam[i]);
        /* The kernel reads the family as an int: junk in the high half must not smuggle AF_PACKET. */
        ck_assert_uint_eq(verdict(__NR_socket, (1ULL << 32) | AF_PACKET, SOCK_DGRAM, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_socket, (1ULL << 32) | AF_VSOCK, SOCK_STREAM, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_socket, (0xffffffffULL << 32) | AF_ALG, SOCK_SEQPACKET, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_socket, AF_INET, (1ULL << 32) | SOCK_RAW, 0), DENY(EPERM));
}
END_TEST

START_TEST(ioctl_tiocsti)
{
        load_program();
        ck_assert_uint_eq(verdict(__NR_ioctl, 0, TIOCSTI, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_ioctl, 0, (1ULL << 32) | TIOCSTI, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_ioctl, 0, TIOCLINUX, 0), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_ioctl, 0, TCGETS, 0), ALLOW);
        ck_assert_uint_eq(verdict(__NR_ioctl, 1, TIOCGWINSZ, 0), ALLOW);
}
END_TEST

/* Whatever creates or changes a mode refuses S_ISUID and S_ISGID, alone, together, with other
 * bits, with junk above the mode; plain modes, and opens that do not create, stay allowed. */
START_TEST(setid_modes)
{
        long fchmodat2 = seccomp_syscall_resolve_name("fchmodat2");
        struct { long nr; unsigned mode_arg; } calls[] = {
                { __NR_fchmod, 1 }, { __NR_fchmodat, 2 }, { fchmodat2, 2 }, { __NR_mknodat, 2 },
#ifdef __NR_chmod
                { __NR_chmod, 1 }, { __NR_creat, 1 }, { __NR_mknod, 1 },
#endif
        };
        static const uint64_t refused[] = { 04755, 02755, 06755, 04000, 02000, 0104755, 02070,
                                            (1ULL << 32) | 04644, 0xffff0000ULL | 02711 };
        static const uint64_t allowed[] = { 0755, 0644, 01777, 0, 0777, 0100644, (1ULL << 40) | 0600 };

        ck_assert_int_gt(fchmodat2, 0);
        load_program();
        for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
                for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                        uint64_t a[3] = { 3, 4, 5 };
                        a[calls[c].mode_arg] = refused[i];
                        ck_assert_msg(verdict(calls[c].nr, a[0], a[1], a[2]) == DENY(EPERM),
                                      "syscall %ld mode 0%llo allowed", calls[c].nr, (unsigned long long) refused[i]);
                }
                for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
                        uint64_t a[3] = { 3, 4, 5 };
                        a[calls[c].mode_arg] = allowed[i];
                        ck_assert_msg(verdict(calls[c].nr, a[0], a[1], a[2]) == ALLOW,
                                      "syscall %ld mode 0%llo refused", calls[c].nr, (unsigned long long) allowed[i]);
                }
        }

        /* openat(dir, path, flags, mode): arg 3 is past verdict()'s three. */
        struct seccomp_data d = { .nr = __NR_openat, .arch = native_arch() };
        static const uint64_t creating[] = { O_CREAT, O_WRONLY | O_CREAT | O_EXCL, O_TMPFILE | O_RDWR,
                                             (1ULL << 32) | O_CREAT | O_CLOEXEC };
        for (size_t i = 0; i < sizeof(creating) / sizeof(creating[0]); i++) {
                d.args[2] = creating[i];
                d.args[3] = 04755;
                ck_assert_uint_eq(run(&d), DENY(EPERM));
                d.args[3] = 02755;
                ck_assert_uint_eq(run(&d), DENY(EPERM));
                d.args[3] = 0755;
                ck_assert_uint_eq(run(&d), ALLOW);
        }
        /* Not creating, the mode is not read: anything there passes. */
        d.args[2] = O_RDONLY | O_CLOEXEC | O_DIRECTORY;
        d.args[3] = 06777;
        ck_assert_uint_eq(run(&d), ALLOW);
#ifdef __NR_open
        ck_assert_uint_eq(verdict(__NR_open, 0, O_WRONLY | O_CREAT | O_TRUNC, 04755), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_open, 0, O_RDWR | O_TMPFILE, 02700), DENY(EPERM));
        ck_assert_uint_eq(verdict(__NR_open, 0, O_WRONLY | O_CREAT | O_TRUNC, 0644), ALLOW);
        ck_assert_uint_eq(verdict(__NR_open, 0, O_RDONLY, 04755), ALLOW);
#endif
        /* openat2's mode is in memory: it answers ENOSYS, and libc and programs use openat. */
        ck_assert_uint_eq(verdict(__NR_openat2, 3, 0, 24), DENY(ENOSYS));
}
END_TEST

START_TEST(other_architectures)
{
        load_program();
        /* A 32-bit system call from a 64-bit process (int 0x80) is not audited: it kills. */
        struct seccomp_data d = { .nr = 0, .arch = native_arch() == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64 };
        ck_assert_kills(run(&d));
#ifdef __x86_64__
        d.arch = AUDIT_ARCH_I386;
        d.nr = 310; /* unshare on i386 */
        ck_assert_kills(run(&d));
        /* x32 system calls carry __X32_SYSCALL_BIT under the x86_64 arch token. */
        d.arch = AUDIT_ARCH_X86_64;
        d.nr = (int) (0x40000000 | __NR_unshare);
        ck_assert_uint_ne(run(&d), ALLOW);
        d.nr = (int) (0x40000000 | __NR_socket);
        d.args[0] = AF_PACKET;
        ck_assert_uint_ne(run(&d), ALLOW);
#endif
}
END_TEST

Suite *seccomp_suite(void)
{
        return suite_of("seccomp", "verdicts", denied_whole, allowed_everyday, clone_flags, socket_families_and_types,
                        ioctl_tiocsti, setid_modes, other_architectures);
}
