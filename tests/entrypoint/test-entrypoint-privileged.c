/* SPDX-License-Identifier: MIT */
/* The real aisb-entrypoint, each test in a network namespace of its own (never the host's
 * ruleset): it installs and verifies the ruleset and runs the probe as the target user with
 * nothing left; sabotaged installs end in 77 with nothing run (the probe's marker file is
 * absent); --allow-unenforced goes on with a warning; a malformed option ends in 78.
 * Needs root on the host; exits 77 (skip) with the reason otherwise. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netfilter.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netpolicy.h"
#include "nft.h"
#include "../suite-table.h"

static const char *entrypoint, *probe;

/* What the test's /etc/resolv.conf is: text, or one of these. The child sees a directory of
 * the test's own as /etc (a mount namespace), so the entrypoint reads that, never the host's. */
#define RESOLV_SYMLINK "@symlink"
#define RESOLV_FIFO "@fifo"
#define RESOLV_MISSING "@missing"

struct run {
        char dir[64];
        char etc[80];   /* bound over /etc in the child; "" to leave /etc alone */
        int exit_code;
        char *out;      /* probe's stdout */
        char *err;      /* entrypoint's stderr */
        bool marker;    /* the command ran */
        char *state;    /* "ok" or how the kernel's table differs from the plan */
        char *nft_text; /* `nft list table inet aisb`, NULL without nft */
};

enum sabotage {
        SABOTAGE_NONE,
        SABOTAGE_TABLE_EXISTS,   /* table inet aisb already there, chain output hooked elsewhere */
        SABOTAGE_NO_NET_ADMIN,   /* CAP_NET_ADMIN gone from the bounding set */
        SABOTAGE_NO_SETPCAP,
        SABOTAGE_NO_SETUID,
        SABOTAGE_NO_SETGID,
        /* Only what podman gives aisb's sandbox: NET_ADMIN, SETUID, SETGID, SETPCAP (no DAC_*). */
        SABOTAGE_CONTAINER_CAPS,
        /* Started as uid 65534 with no capability, as a pod of aisb kube runs it. */
        SABOTAGE_AS_USER,
};

static char *slurp(const char *dir, const char *name)
{
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        char *buf = calloc(1, 65536);
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static int open_in(const char *dir, const char *name)
{
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

static void write_in(const char *dir, const char *name, const char *text)
{
        int fd = open_in(dir, name);
        if (fd >= 0) {
                (void) !write(fd, text, strlen(text));
                close(fd);
        }
}

static void sabotage_table(void)
{
        /* A table of our name whose chain "output" is hooked at postrouting with policy accept. */
        static struct netruleset rs;
        char err[256];
        memset(&rs, 0, sizeof(rs));
        rs.n_chains = 1;
        rs.chains[0] = (struct netchain) { .name = "output", .hook = NF_INET_POST_ROUTING };
        if (nft_install(&rs, err, sizeof(err)) < 0) {
                fprintf(stderr, "sabotage failed: %s\n", err);
                _exit(200);
        }
}

/* The child: a new network namespace, the sabotage, the entrypoint as a grandchild, then a
 * look at what the namespace holds before it goes away with us. */
static void child(struct run *r, const char *const *opts, enum sabotage s, const struct netpolicy *plan)
{
        if (unshare(CLONE_NEWNET) < 0)
                _exit(201);
        if (r->etc[0] && (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                          mount(r->etc, "/etc", NULL, MS_BIND, NULL) < 0))
                _exit(207);
        static const int drop[] = { [SABOTAGE_NO_NET_ADMIN] = CAP_NET_ADMIN, [SABOTAGE_NO_SETPCAP] = CAP_SETPCAP,
                                    [SABOTAGE_NO_SETUID] = CAP_SETUID, [SABOTAGE_NO_SETGID] = CAP_SETGID };
        if (s == SABOTAGE_TABLE_EXISTS)
                sabotage_table();

        pid_t pid = fork();
        if (pid < 0)
                _exit(202);
        if (pid == 0) {
                /* As root, exec grants every capability left in the bounding set: dropping one
                 * here makes the entrypoint start without it. */
                if (s >= SABOTAGE_NO_NET_ADMIN && s <= SABOTAGE_NO_SETGID && prctl(PR_CAPBSET_DROP, drop[s], 0, 0, 0) < 0)
                        _exit(203);
                for (int c = 0; (s == SABOTAGE_CONTAINER_CAPS || s == SABOTAGE_AS_USER) && c <= CAP_LAST_CAP; c++)
                        if ((s == SABOTAGE_AS_USER || (c != CAP_NET_ADMIN && c != CAP_SETUID && c != CAP_SETGID &&
                                                       c != CAP_SETPCAP)) &&
                            prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
                                _exit(203);
                if (s == SABOTAGE_AS_USER && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                                              setresuid(65534, 65534, 65534) < 0))
                        _exit(203);
                const char *argv[64] = { entrypoint };
                int argc = 1;
                for (; opts[argc - 1]; argc++)
                        argv[argc] = opts[argc - 1];
                char marker[128];
                snprintf(marker, sizeof(marker), "%s/marker", r->dir);
                argv[argc++] = "--";
                argv[argc++] = probe;
                argv[argc++] = "--marker";
                argv[argc++] = marker;
                argv[argc] = NULL;
                int out = open_in(r->dir, "out"), err = open_in(r->dir, "err");
                if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                        _exit(204);
                execv(entrypoint, (char *const *) argv);
                _exit(205);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                _exit(206);

        if (plan) {
                struct netruleset *rs = calloc(1, sizeof(*rs));
                struct nft_state want = {}, have = {};
                char err[512] = "ok";
                netpolicy_ruleset(plan, rs);
                if (nft_state_expected(rs, &want) < 0 || nft_read(&have, err, sizeof(err)) < 0 ||
                    nft_state_compare(&want, &have, err, sizeof(err)) < 0)
                        ;
                else
                        snprintf(err, sizeof(err), "ok");
                write_in(r->dir, "state", err);
                /* An independent reader: the nft tool, if the host has it. */
                if (access("/usr/sbin/nft", X_OK) == 0) {
                        pid_t n = fork();
                        if (n == 0) {
                                int fd = open_in(r->dir, "nft");
                                dup2(fd, 1);
                                execl("/usr/sbin/nft", "nft", "list", "ruleset", (char *) NULL);
                                _exit(127);
                        }
                        waitpid(n, NULL, 0);
                }
        }
        _exit(WEXITSTATUS(status));
}

/* resolv: the text of the child's /etc/resolv.conf, RESOLV_* for something else there, or
 * NULL to leave the host's /etc as it is. */
static struct run *run_with(const char *const *opts, enum sabotage s, bool check_state, const char *resolv)
{
        struct run *r = calloc(1, sizeof(*r));
        struct netpolicy plan;
        char err[256];
        snprintf(r->dir, sizeof(r->dir), "/tmp/aisb-ep-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(r->dir));
        /* The probe runs as nobody and must be able to leave its marker. */
        ck_assert_int_eq(chmod(r->dir, 0777), 0);
        if (resolv) {
                char path[128];
                snprintf(r->etc, sizeof(r->etc), "%s/etc", r->dir);
                ck_assert_int_eq(mkdir(r->etc, 0755), 0);
                snprintf(path, sizeof(path), "%s/resolv.conf", r->etc);
                if (strcmp(resolv, RESOLV_SYMLINK) == 0) {
                        write_in(r->etc, "real.conf", "nameserver 192.0.2.53\n");
                        ck_assert_int_eq(symlink("real.conf", path), 0);
                } else if (strcmp(resolv, RESOLV_FIFO) == 0) {
                        ck_assert_int_eq(mkfifo(path, 0644), 0);
                } else if (strcmp(resolv, RESOLV_MISSING) != 0) {
                        write_in(r->etc, "resolv.conf", resolv);
                }
        }

        if (check_state) {
                const char *argv[64] = { "aisb-entrypoint", "--print-ruleset" };
                int argc = 2;
                for (; opts[argc - 2]; argc++)
                        argv[argc] = opts[argc - 2];
                ck_assert_msg(netpolicy_parse(argc, (char *const *) argv, &plan, err, sizeof(err)) == 0, "%s", err);
                /* The plan holds what the entrypoint should have read: the same text. */
                if (plan.allow_dns) {
                        ck_assert_msg(resolv, "--allow-dns without a resolv.conf of the test's own");
                        bool text = resolv[0] != '@';
                        netpolicy_parse_resolv_conf(text ? resolv : "", text ? strlen(resolv) : 0, &plan.resolvers);
                        plan.resolvers_read = true;
                }
        }

        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                child(r, opts, s, check_state ? &plan : NULL);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        r->exit_code = WEXITSTATUS(status);
        ck_assert_msg(r->exit_code < 200, "test harness failed (%d)", r->exit_code);
        r->out = slurp(r->dir, "out");
        r->err = slurp(r->dir, "err");
        r->state = slurp(r->dir, "state");
        r->nft_text = slurp(r->dir, "nft");
        char *m = slurp(r->dir, "marker");
        r->marker = m != NULL;
        free(m);

        if (check_state) {
                char *t = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&t, &size);
                netpolicy_print_ruleset(&plan, f);
                fclose(f);
                /* --print-ruleset claims to be what nft would list: hold it to that. */
                if (r->nft_text && plan.net != NET_FULL)
                        ck_assert_msg(strcmp(t, r->nft_text) == 0, "nft lists:\n%s\nprinted:\n%s", r->nft_text, t);
                free(t);
        }
        return r;
}

static struct run *run(const char *const *opts, enum sabotage s, bool check_state)
{
        return run_with(opts, s, check_state, NULL);
}

static void run_free(struct run *r)
{
        static const char *const names[] = { "out", "err", "state", "nft", "marker", "etc/resolv.conf",
                                             "etc/real.conf", "etc" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                char path[128];
                snprintf(path, sizeof(path), "%s/%s", r->dir, names[i]);
                if (unlink(path) < 0)
                        rmdir(path);
        }
        rmdir(r->dir);
        free(r->out);
        free(r->err);
        free(r->state);
        free(r->nft_text);
        free(r);
}

#define HAS(text, what) ck_assert_msg((text) && strstr((text), (what)), "'%s' lacks '%s'", (text), (what))

static void check_confined(const struct run *r, const char *uid)
{
        char want[64];
        ck_assert_msg(r->exit_code == 0, "exit %d: %s", r->exit_code, r->err);
        ck_assert(r->marker);
        snprintf(want, sizeof(want), "uid=%s,%s,%s\n", uid, uid, uid);
        HAS(r->out, want);
        snprintf(want, sizeof(want), "gid=%s,%s,%s\n", uid, uid, uid);
        HAS(r->out, want);
        HAS(r->out, "groups=0\n");
        static const char *const zero[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
        for (size_t i = 0; i < 5; i++) {
                snprintf(want, sizeof(want), "%s=0000000000000000\n", zero[i]);
                HAS(r->out, want);
        }
        HAS(r->out, "NoNewPrivs=1\n");
        HAS(r->out, "Seccomp=2\n");
        HAS(r->out, "unshare_user=EPERM\n");
        HAS(r->out, "unshare_net=EPERM\n");
        HAS(r->out, "clone_newuser=EPERM\n");
        HAS(r->out, "mount=EPERM\n");
        HAS(r->out, "socket_raw=EPERM\n");
        HAS(r->out, "socket_packet=EPERM\n");
        HAS(r->out, "socket_vsock=EPERM\n");
        HAS(r->out, "socket_tcp=ok\n");
        HAS(r->out, "socket_netlink=ok\n");
}

#define AS_NOBODY "--uid", "65534", "--gid", "65534"
#define ROWS(table) ((int) (sizeof(table) / sizeof((table)[0])))

/* One run of the entrypoint with these options, started with the sabotage, and what must
 * come of it. */
struct outcome {
        const char *name;
        const char *opts[20];
        enum sabotage sabotage;
        const char *resolv;   /* the test's /etc/resolv.conf, for --allow-dns (run_with) */
        bool check_state;     /* the kernel's table read back: it must be the plan ("ok") */
        const char *confined; /* the uid the command ran as, confined (check_confined) */
        int exit_code;        /* without confined: the exit status; the command ran only on 0 */
        const char *says;     /* in its stderr ("": nothing there); NULL: not looked at */
};

static void expect_outcome(const struct outcome *c)
{
        struct run *r = run_with(c->opts, c->sabotage, c->check_state, c->resolv);
        if (c->confined)
                check_confined(r, c->confined);
        else {
                ck_assert_msg(r->exit_code == c->exit_code, "%s: exit %d, want %d: %s", c->name, r->exit_code,
                              c->exit_code, r->err);
                ck_assert_msg(r->marker == (c->exit_code == 0), "%s: the command %s", c->name,
                              r->marker ? "ran" : "did not run");
        }
        if (c->check_state)
                ck_assert_msg(r->state && strcmp(r->state, "ok") == 0, "%s: the table is not the plan: %s", c->name,
                              r->state);
        if (c->says && !c->says[0])
                ck_assert_msg(strcmp(r->err, "") == 0, "%s: said %s", c->name, r->err);
        else if (c->says)
                ck_assert_msg(strstr(r->err, c->says), "%s: '%s' lacks '%s'", c->name, r->err, c->says);
        run_free(r);
}

/* Enforced: the ruleset in force and verified (as the plan says for --net full: no table),
 * the command run confined. */
static const struct outcome enforced[] = {
        { "allow", { AS_NOBODY, "--net", "allow", "--allow", "10.0.2.2:3128", "--allow", "192.168.0.0/16", "--allow",
                     "[fd00::]/8", "--allow", "[fd00::1]:443", "--allow-dns" },
          .resolv = "nameserver 10.0.2.3\n", .check_state = true, .confined = "65534",
          .says = "" /* nothing to say when all went well */ },
        { "none", { AS_NOBODY, "--net", "none" }, .check_state = true, .confined = "65534" },
        /* --net external: started as the user with nothing to drop; the mount check leaves its
         * file access as it found it, and the command runs. */
        { "external as the user", { "--net", "external", "--uid", "65534", "--gid", "65534" }, SABOTAGE_AS_USER },
        { "keep root", { "--keep-root", "--net", "allow", "--allow", "10.0.2.2:3128" }, .check_state = true,
          .confined = "0", .says = "aisb-entrypoint: --keep-root" },
        { "full", { AS_NOBODY, "--net", "full" }, .check_state = true, .confined = "65534",
          .says = "aisb-entrypoint: WARNING: --net full" },
};

/* Sabotaged: 77 and nothing run; each capability of the minimal set is needed. With
 * --allow-unenforced, a warning and the command runs. */
static const struct outcome sabotaged[] = {
        { "table exists", { AS_NOBODY, "--net", "allow", "--allow", "10.0.2.2:3128" }, SABOTAGE_TABLE_EXISTS,
          .exit_code = 77,
          .says = "aisb-entrypoint: network ruleset not in force, nothing was run: table inet aisb: File exists" },
        { "unenforced goes on", { AS_NOBODY, "--net", "none", "--allow-unenforced" }, SABOTAGE_NO_NET_ADMIN,
          .confined = "65534", .says = "aisb-entrypoint: WARNING: the network ruleset is NOT in force" },
        { "without CAP_NET_ADMIN", { AS_NOBODY, "--net", "none" }, SABOTAGE_NO_NET_ADMIN, .exit_code = 77,
          .says = "CAP_NET_ADMIN" },
        { "without CAP_SETPCAP", { AS_NOBODY, "--net", "none" }, SABOTAGE_NO_SETPCAP, .exit_code = 77,
          .says = "CAP_SETPCAP" },
        { "without CAP_SETUID", { AS_NOBODY, "--net", "none" }, SABOTAGE_NO_SETUID, .exit_code = 77,
          .says = "CAP_SETUID" },
        { "without CAP_SETGID", { AS_NOBODY, "--net", "none" }, SABOTAGE_NO_SETGID, .exit_code = 77,
          .says = "CAP_SETGID" },
};

static const struct outcome failures[] = {
        { "malformed", { AS_NOBODY, "--net", "allow", "--allow", "10.0.2.2:65536" }, .exit_code = 78,
          .says = "aisb-entrypoint: --allow 10.0.2.2:65536: the port must be a number from 1 to 65535\n" },
};

START_TEST(enforced_outcome)
{
        expect_outcome(&enforced[_i]);
}
END_TEST

START_TEST(sabotaged_outcome)
{
        expect_outcome(&sabotaged[_i]);
}
END_TEST

START_TEST(failure_outcome)
{
        expect_outcome(&failures[_i]);
}
END_TEST

/* --allow-dns opens port 53 to the nameservers of /etc/resolv.conf and nowhere else: the
 * kernel's table, read back by the entrypoint and listed by nft, holds those addresses only. */
START_TEST(dns_to_resolvers_only)
{
        const char *opts[] = { "--uid", "65534", "--gid", "65534", "--net", "allow", "--allow", "192.0.2.1:443",
                               "--allow-dns", NULL };
        static const char resolv[] = "# Generated by podman\nsearch example\nnameserver 10.0.2.3\n"
                                     "nameserver 127.0.0.53\nnameserver fd00::3\n";
        struct run *r = run_with(opts, SABOTAGE_NONE, true, resolv);
        check_confined(r, "65534");
        /* The kernel's table is the plan, rule for rule ... */
        ck_assert_str_eq(r->state, "ok");
        /* ... and in the plan, port 53 goes to those two addresses only. */
        const char *argv[16] = { "aisb-entrypoint", "--print-ruleset" };
        int argc = 2;
        for (; opts[argc - 2]; argc++)
                argv[argc] = opts[argc - 2];
        struct netpolicy plan;
        char err[256];
        ck_assert_int_eq(netpolicy_parse(argc, (char *const *) argv, &plan, err, sizeof(err)), 0);
        netpolicy_parse_resolv_conf(resolv, sizeof(resolv) - 1, &plan.resolvers);
        plan.resolvers_read = true;
        static struct netruleset rs;
        netpolicy_ruleset(&plan, &rs);
        size_t dns = 0;
        for (size_t i = 0; i < rs.chains[2].n_rules; i++) {
                const struct netrule *rule = &rs.chains[2].rules[i];
                char text[256];
                if (rule->kind != RULE_DEST || rule->port != 53)
                        continue;
                dns++;
                (void) netrule_format(rule, false, text, sizeof(text));
                ck_assert_msg(strstr(text, "ip daddr 10.0.2.3 ") || strstr(text, "ip6 daddr fd00::3 "), "%s", text);
        }
        ck_assert_uint_eq(dns, 4);
        ck_assert_str_eq(r->err, "");
        if (r->nft_text) {
                HAS(r->nft_text, "\t\tip daddr 10.0.2.3 udp dport 53 accept\n\t\tip daddr 10.0.2.3 tcp dport 53 accept\n"
                                 "\t\tip6 daddr fd00::3 udp dport 53 accept\n\t\tip6 daddr fd00::3 tcp dport 53 accept\n");
                /* Six mentions of port 53 in all: those four rules and nothing else. */
                size_t n = 0;
                for (const char *p = r->nft_text; (p = strstr(p, "dport 53 ")); p++)
                        n++;
                ck_assert_uint_eq(n, 4);
                ck_assert_ptr_null(strstr(r->nft_text, "127.0.0.53"));
        }
        run_free(r);
}
END_TEST

/* Nothing usable in /etc/resolv.conf: no DNS rule at all, one line saying so, and the command
 * still runs (names do not resolve; nothing else changes). */
START_TEST(dns_without_resolvers)
{
        static const struct { const char *resolv, *says; } cases[] = {
                { "search example\n# nameserver 192.0.2.9\n", "aisb-entrypoint: no nameserver in /etc/resolv.conf: "
                                                              "no DNS rule, names do not resolve\n" },
                { RESOLV_MISSING, "aisb-entrypoint: cannot read /etc/resolv.conf (No such file or directory): no "
                                  "DNS rule" },
                { RESOLV_SYMLINK, "aisb-entrypoint: cannot read /etc/resolv.conf (Too many levels of symbolic "
                                  "links): no DNS rule" },
                { RESOLV_FIFO, "aisb-entrypoint: /etc/resolv.conf is not a regular file of at most 64 KiB: no DNS "
                               "rule\n" },
        };
        const char *opts[] = { "--uid", "65534", "--gid", "65534", "--net", "allow", "--allow", "192.0.2.1:443",
                               "--allow-dns", NULL };
        struct run *r = run_with(opts, SABOTAGE_NONE, true, cases[_i].resolv);
        check_confined(r, "65534");
        ck_assert_str_eq(r->state, "ok");
        HAS(r->err, cases[_i].says);
        ck_assert_msg(strchr(r->err, '\n') == r->err + strlen(r->err) - 1, "not one line: %s", r->err);
        if (r->nft_text)
                ck_assert_ptr_null(strstr(r->nft_text, "dport 53"));
        run_free(r);
}
END_TEST

/* A mount the entrypoint must refuse: 77, nothing run, and it says why. */
static void expect_mount_refused(const char *const *opts, enum sabotage s)
{
        struct run *r = run(opts, s, false);
        ck_assert_int_eq(r->exit_code, 77);
        ck_assert(!r->marker);
        HAS(r->err, "is not what aisb chose to mount");
        run_free(r);
}

/* A project the user keeps 0700: the entrypoint, holding only the sandbox's capabilities,
 * checks the mounts inside it with the user's file access, and runs. */
START_TEST(expect_mount_private_dir)
{
        char dir[] = "/tmp/aisb-ep-private-XXXXXX", file[64], expect[128];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/.vscode", dir);
        ck_assert_int_eq(mkdir(file, 0755), 0);
        ck_assert_int_eq(chown(file, 65534, 65534), 0);
        ck_assert_int_eq(chown(dir, 65534, 65534), 0);
        ck_assert_int_eq(chmod(dir, 0700), 0);
        struct stat st;
        ck_assert_int_eq(lstat(file, &st), 0);
        snprintf(expect, sizeof(expect), "%s:%llu:%llu", file, (unsigned long long) st.st_dev,
                 (unsigned long long) st.st_ino);
        const char *opts[] = { "--uid", "65534", "--gid", "65534", "--net", "none", "--expect-mount", expect, NULL };
        struct run *r = run(opts, SABOTAGE_CONTAINER_CAPS, true);
        check_confined(r, "65534");
        run_free(r);
        /* The same check still refuses another file there. */
        snprintf(expect, sizeof(expect), "%s:%llu:%llu", file, (unsigned long long) st.st_dev,
                 (unsigned long long) st.st_ino + 1);
        expect_mount_refused(opts, SABOTAGE_CONTAINER_CAPS);
        ck_assert_int_eq(rmdir(file), 0);
        ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* --expect-file's value for path: file's inode and change time (in ns, plus skew) now. */
static void expect_file_arg(char *expect, size_t size, const char *path, const char *file, long long skew)
{
        struct stat st;
        ck_assert_int_eq(lstat(file, &st), 0);
        snprintf(expect, size, "%s:%llu:%lld", path, (unsigned long long) st.st_ino,
                 (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec + skew);
}

/* --expect-file: the file must be a regular file of one link with that inode and change
 * time; a hard link made to it since (two links, a new change time), another file, or a
 * link are refused, and nothing runs. */
START_TEST(expect_file_checks)
{
        char dir[] = "/tmp/aisb-ep-file-XXXXXX", file[64], other[64], expect[160];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(chmod(dir, 0755), 0);
        snprintf(file, sizeof(file), "%s/README", dir);
        snprintf(other, sizeof(other), "%s/elsewhere", dir);
        int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
        expect_file_arg(expect, sizeof(expect), file, file, 0);
        const char *opts[] = { "--uid", "65534", "--gid", "65534", "--net", "none", "--expect-file", expect, NULL };
        struct run *r = run(opts, SABOTAGE_NONE, true);
        check_confined(r, "65534");
        run_free(r);
        /* Another change time (the same inode). */
        expect_file_arg(expect, sizeof(expect), file, file, 1);
        expect_mount_refused(opts, SABOTAGE_NONE);
        /* A hard link made to it: two links, and its change time moved. */
        ck_assert_int_eq(link(file, other), 0);
        expect_file_arg(expect, sizeof(expect), file, file, 0);
        expect_mount_refused(opts, SABOTAGE_NONE);
        /* A link to the very file. */
        ck_assert_int_eq(unlink(other), 0);
        ck_assert_int_eq(symlink(file, other), 0);
        expect_file_arg(expect, sizeof(expect), other, file, 0);
        expect_mount_refused(opts, SABOTAGE_NONE);
        ck_assert_int_eq(unlink(other), 0);
        ck_assert_int_eq(unlink(file), 0);
        ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static int exec_entrypoint(const char *cmd)
{
        pid_t pid = fork();
        if (pid == 0) {
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(201);
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 2);
                execl(entrypoint, entrypoint, "--uid", "65534", "--gid", "65534", "--", cmd, (char *) NULL);
                _exit(205);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(exec_failures)
{
        ck_assert_int_eq(exec_entrypoint("/nonexistent/command"), 127);
        ck_assert_int_eq(exec_entrypoint("no-such-command-in-path-aisb"), 127);
        char dir[] = "/tmp/aisb-ep-noexec-XXXXXX", file[64];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(chmod(dir, 0755), 0);
        snprintf(file, sizeof(file), "%s/script", dir);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(exec_entrypoint(file), 126); /* exists, not executable */
        unlink(file);
        rmdir(dir);
        ck_assert_int_eq(exec_entrypoint("/"), 126);
}
END_TEST

static Suite *privileged_suite(void)
{
        Suite *s = suite_create("entrypoint-privileged");
        TCase *tc = suite_add_tests(s, "enforced", NULL, NULL, expect_mount_private_dir, expect_file_checks,
                                    dns_to_resolvers_only);
        tcase_add_loop_test(tc, enforced_outcome, 0, ROWS(enforced));
        tcase_add_loop_test(tc, dns_without_resolvers, 0, 4);
        suite_add_loop(s, "sabotaged", NULL, NULL, sabotaged_outcome, ROWS(sabotaged));
        tc = suite_add_tests(s, "failures", NULL, NULL, exec_failures);
        tcase_add_loop_test(tc, failure_outcome, 0, ROWS(failures));
        return s;
}

int main(void)
{
        entrypoint = getenv("AISB_ENTRYPOINT");
        probe = getenv("AISB_ENTRYPOINT_PROBE");
        if (!entrypoint || !probe) {
                fprintf(stderr, "SKIP: AISB_ENTRYPOINT and AISB_ENTRYPOINT_PROBE must be set (meson test sets them)\n");
                return 77;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root on the host (network namespaces, nftables, setuid)\n");
                return 77;
        }
        pid_t pid = fork();
        if (pid == 0)
                _exit(unshare(CLONE_NEWNET) < 0 ? 1 : 0);
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "SKIP: cannot create a network namespace here\n");
                return 77;
        }
        return suites_run(privileged_suite());
}
