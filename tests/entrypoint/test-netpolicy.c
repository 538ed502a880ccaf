/* SPDX-License-Identifier: MIT */
/* Option parsing of aisb-entrypoint against hostile input, the texts it prints, and the real
 * binary's exit code 78 for a malformed policy. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netpolicy.h"
#include "suites.h"
#include "../suite-table.h"

static int parse(struct netpolicy *p, char *err, size_t errlen, ...)
{
        /* Static: the policy's command points into this argv and outlives the call. */
        static const char *argv[64];
        int argc = 1;
        va_list ap;

        memset(argv, 0, sizeof(argv));
        argv[0] = "aisb-entrypoint";

        va_start(ap, errlen);
        for (const char *a; (a = va_arg(ap, const char *)) && argc < 63;)
                argv[argc++] = a;
        va_end(ap);
        argv[argc] = NULL;
        return netpolicy_parse(argc, (char *const *) argv, p, err, errlen);
}

START_TEST(allow_good)
{
        static const struct {
                const char *in;
                int family;
                const char *addr;
                unsigned prefix;
                unsigned port;
        } cases[] = {
                { "10.0.2.2:3128", AF_INET, "10.0.2.2", 32, 3128 },
                { "192.168.0.0/16", AF_INET, "192.168.0.0", 16, 0 },
                { "10.1.2.3/32:5432", AF_INET, "10.1.2.3", 32, 5432 },
                { "0.0.0.0/0", AF_INET, "0.0.0.0", 0, 0 },
                { "[fd00::1]:443", AF_INET6, "fd00::1", 128, 443 },
                { "[fd00::]/8", AF_INET6, "fd00::", 8, 0 },
                { "[fd00::]/8:22", AF_INET6, "fd00::", 8, 22 },
                { "fd00::1", AF_INET6, "fd00::1", 128, 0 },
                { "2001:db8::/32", AF_INET6, "2001:db8::", 32, 0 },
                { "1.2.3.4:65535", AF_INET, "1.2.3.4", 32, 65535 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct allow_dest d;
                uint8_t want[16] = {};
                char err[256] = "";
                ck_assert_msg(netpolicy_parse_allow(cases[i].in, &d, err, sizeof(err)) == 0, "%s: %s",
                              cases[i].in, err);
                ck_assert_int_eq(inet_pton(cases[i].family, cases[i].addr, want), 1);
                ck_assert_int_eq(d.family, cases[i].family);
                ck_assert_mem_eq(d.addr, want, 16);
                ck_assert_uint_eq(d.prefix, cases[i].prefix);
                ck_assert_uint_eq(d.port, cases[i].port);
        }
}
END_TEST

START_TEST(allow_hostile)
{
        static const char *const bad[] = {
                "", "10.0.2.2:0", "10.0.2.2:65536", "10.0.2.2:-1", "10.0.2.2:+80", "10.0.2.2: 80",
                "10.0.2.2:80x", "10.0.2.2:", "10.0.2.2:99999999999999999999999", "1.2.3.4/33",
                "1.2.3.4/", "1.2.3.4/-1", "1.2.3.4/+8", "1.2.3.4/8", "10.0.0.0/8/8", "1.2.3.4:80/32",
                "999.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4 ", " 1.2.3.4", "example.com", "localhost:80",
                "[fd00::1", "[fd00::1]x", "[fd00::1]:", "[fd00::1]:0", "[1.2.3.4]:80", "[::]/129",
                "[fd00::1]/64", "fd00::1/200", "[]", "[]:80", ":80", "/8", "garbage", "\x01\x02",
                "10.0.2.2:3128:3128", "1.2.3.4/8:80",
                "0000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                "0000000000000000000000000000000000000000000000000000000000000000000000000000000001",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct allow_dest d;
                char err[256] = "";
                ck_assert_msg(netpolicy_parse_allow(bad[i], &d, err, sizeof(err)) == -EINVAL,
                              "accepted '%s'", bad[i]);
                ck_assert_msg(strlen(err) > 0 && !strchr(err, '\n'), "'%s': no one-line message", bad[i]);
        }
}
END_TEST

START_TEST(options_good)
{
        struct netpolicy p;
        char err[256] = "";

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1000", "--gid=1000", "--net", "allow",
                               "--allow", "10.0.2.2:3128", "--allow=192.168.0.0/16", "--allow-dns", "--", "sh",
                               "-c", "true", NULL), 0);
        ck_assert_uint_eq(p.uid, 1000);
        ck_assert_uint_eq(p.gid, 1000);
        ck_assert_int_eq(p.net, NET_ALLOW);
        ck_assert_uint_eq(p.n_allow, 2);
        ck_assert(p.allow_dns);
        ck_assert(!p.allow_unenforced && !p.keep_root);
        ck_assert_str_eq(p.command[0], "sh");
        ck_assert_str_eq(p.command[2], "true");
        ck_assert_ptr_null(p.command[3]);

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--net", "full", "--", "x", NULL), 0);
        ck_assert(p.keep_root);
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1000", "--gid", "1000", "--net", "external", "--", "x",
                               NULL), 0);
        ck_assert_int_eq(p.net, NET_EXTERNAL);
        /* An init container's: the ruleset alone, one destination read from the environment. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--net", "allow", "--ruleset-only", "--allow-env",
                               "AISB_GATE_0123456789ABCDEF_SERVICE_HOST:3128", "--allow", "10.0.0.0/8", NULL), 0);
        ck_assert(p.ruleset_only);
        ck_assert_str_eq(p.allow_env, "AISB_GATE_0123456789ABCDEF_SERVICE_HOST");
        ck_assert_uint_eq(p.allow_env_port, 3128);
        ck_assert_ptr_null(p.command);
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", NULL), 0);
        ck_assert_int_eq(p.net, NET_NONE); /* the default is the strictest */
        /* Options after -- belong to the command. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1", "--gid", "1", "--", "--net", "full", NULL), 0);
        ck_assert_int_eq(p.net, NET_NONE);
        ck_assert_str_eq(p.command[0], "--net");
        ck_assert_str_eq(p.seed_source, "");

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1", "--gid", "1", "--seed",
                               "/run/aisb/pi-seed:/home/sandbox/.pi/agent", "--", "pi", NULL), 0);
        ck_assert_str_eq(p.seed_source, "/run/aisb/pi-seed");
        ck_assert_str_eq(p.seed_dest, "/home/sandbox/.pi/agent");

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1", "--gid", "1", "--expect-mount",
                               "/project:2049:12345", "--expect-mount=/a:b:7:18446744073709551615", "--", "pi", NULL), 0);
        ck_assert_uint_eq(p.n_expect, 2);
        ck_assert_str_eq(p.expect[0].path, "/project");
        ck_assert(p.expect[0].dev == 2049 && p.expect[0].ino == 12345);
        ck_assert_str_eq(p.expect[1].path, "/a:b");
        ck_assert(p.expect[1].dev == 7 && p.expect[1].ino == 18446744073709551615ULL);
        ck_assert(!p.expect[0].file && !p.expect[1].file);
        /* A review run's file at the project's top: inode and change time, any device. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--uid", "1", "--gid", "1", "--expect-file",
                               "/project/a:b:77:1733350000123456789", "--", "pi", NULL), 0);
        ck_assert_uint_eq(p.n_expect, 1);
        ck_assert_str_eq(p.expect[0].path, "/project/a:b");
        ck_assert(p.expect[0].file && p.expect[0].ino == 77 && p.expect[0].ctime_ns == 1733350000123456789LL);
}
END_TEST

START_TEST(options_hostile)
{
        static const char *const bad[][12] = {
                { "--uid", "1000", "--gid", "1000", NULL },                          /* no command */
                { "--uid", "1000", "--gid", "1000", "--", NULL },                    /* empty command */
                { "--uid", "1000", "--gid", "1000", "sh", NULL },                    /* missing -- */
                { "--uid", "1000", "--", "sh", NULL },                               /* no gid */
                { "--gid", "1000", "--", "sh", NULL },                               /* no uid */
                { "--uid", "abc", "--gid", "1", "--", "sh", NULL },
                { "--uid", "-1", "--gid", "1", "--", "sh", NULL },
                { "--uid", "4294967295", "--gid", "1", "--", "sh", NULL },
                { "--uid", "99999999999999999999999", "--gid", "1", "--", "sh", NULL },
                { "--uid", "", "--gid", "1", "--", "sh", NULL },
                { "--uid", "0", "--gid", "0", "--", "sh", NULL },                    /* root without --keep-root */
                { "--uid", "1", "--uid", "2", "--gid", "1", "--", "sh", NULL },
                { "--keep-root", "--uid", "1", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "bogus", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "none", "--net", "full", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--allow", "10.0.0.1", "--", "sh", NULL },      /* net none */
                { "--uid", "1", "--gid", "1", "--net", "full", "--allow", "10.0.0.1", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--allow-dns", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "allow", "--allow", "10.0.0.1/8", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "allow", "--allow", "--", "sh", NULL }, /* "--" is no address */
                { "--uid", "1", "--gid", "1", "--net", "allow", "--allow", NULL },
                { "--uid", "1", "--gid", "1", "--bogus", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--allow-dns=yes", "--net", "allow", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "-u", "--", "sh", NULL },
                { "--print-ruleset", "--print-plan", NULL },
                { "--uid", "1", "--gid", "1", "--keep-rootx", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--seed", "/a", "--", "sh", NULL },           /* no DEST */
                { "--uid", "1", "--gid", "1", "--expect-mount", "/p:1", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--expect-mount", "p:1:2", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--expect-mount", "/p:-1:2", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--expect-mount", "/p:1:", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--seed", "a:/b", "--", "sh", NULL },         /* relative */
                { "--uid", "1", "--gid", "1", "--seed", "/a:b", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--seed", "/a:/b:/c", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--seed", "/a:/b/../etc", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--seed", "/a:/b", "--seed", "/c:/d", "--", "sh", NULL },
                /* external: started unprivileged, so nothing that needs root, and no rules */
                { "--keep-root", "--net", "external", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "external", "--ca-bundle", "/run/ca.pem", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "external", "--allow", "10.0.0.1", "--", "sh", NULL },
                { "--uid", "1", "--gid", "1", "--net", "external", "--allow-dns", "--", "sh", NULL },
                { "--net", "external", "--", "sh", NULL },                            /* no identity */
                { "--uid", "0", "--gid", "0", "--net", "external", "--", "sh", NULL },
                /* --ruleset-only runs nothing, so takes nothing a run needs; --allow-env is strict */
                { "--net", "allow", "--ruleset-only", "--", "sh", NULL },
                { "--net", "allow", "--ruleset-only", "--uid", "1", "--gid", "1", NULL },
                { "--net", "full", "--ruleset-only", NULL },
                { "--net", "external", "--ruleset-only", NULL },
                { "--net", "none", "--ruleset-only", "--allow-env", "X:1", NULL },          /* needs allow */
                { "--net", "allow", "--ruleset-only", "--allow-env", "X", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "x:1", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "1X:1", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "X:0", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "X:65536", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", ":1", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "X;Y:1", NULL },
                { "--net", "allow", "--ruleset-only", "--allow-env", "X:1", "--allow-env", "Y:2", NULL },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *argv[16] = { "aisb-entrypoint" };
                int argc = 1;
                struct netpolicy p;
                char err[256] = "";
                for (; bad[i][argc - 1]; argc++)
                        argv[argc] = bad[i][argc - 1];
                ck_assert_msg(netpolicy_parse(argc, (char *const *) argv, &p, err, sizeof(err)) == -EINVAL,
                              "case %zu accepted", i);
                ck_assert_msg(strlen(err) > 0 && !strchr(err, '\n'), "case %zu: no one-line message", i);
        }
}
END_TEST

/* Each refusal's exact words: the entrypoint's messages are part of its interface (aisb
 * shows them), so a change to the parser must leave them as they are. */
START_TEST(options_messages)
{
        static const struct {
                const char *argv[12];
                const char *message;
        } cases[] = {
                { {  NULL }, "--uid and --gid are required (or --keep-root)" },
                { { "--uid", "1", "--gid", "1",  NULL }, "no command: usage is aisb-entrypoint [OPTIONS] -- COMMAND [ARG...]" },
                { { "sh",  NULL }, "unexpected argument 'sh' (the command goes after --)" },
                { { "--uid",  NULL }, "--uid needs a value" },
                { { "--gid",  NULL }, "--gid needs a value" },
                { { "--net",  NULL }, "--net needs a value" },
                { { "--allow",  NULL }, "--allow needs a value" },
                { { "--seed",  NULL }, "--seed needs a value" },
                { { "--expect-mount",  NULL }, "--expect-mount needs a value" },
                { { "--allow-env",  NULL }, "--allow-env needs a value" },
                { { "--ca-bundle",  NULL }, "--ca-bundle needs a value" },
                { { "--uid=1", "--uid=2",  NULL }, "--uid given twice" },
                { { "--gid=1", "--gid", "2",  NULL }, "--gid given twice" },
                { { "--uid", "x",  NULL }, "--uid x: must be a number from 0 to 4294967294" },
                { { "--uid=",  NULL }, "--uid : must be a number from 0 to 4294967294" },
                { { "--gid", "4294967295",  NULL }, "--gid 4294967295: must be a number from 0 to 4294967294" },
                { { "--net", "none", "--net=none",  NULL }, "--net given twice" },
                { { "--net", "bogus",  NULL }, "--net bogus: must be none, allow, full or external" },
                { { "--net=",  NULL }, "--net : must be none, allow, full or external" },
                { { "--net", "allow", "--allow", "bogus",  NULL }, "--allow bogus: not an IP address" },
                { { "--net", "allow", "--allow", "",  NULL }, "--allow needs a destination (address, CIDR, optional :port)" },
                { { "--net", "allow", "--allow", "10.0.0.1/8",  NULL }, "--allow 10.0.0.1/8: has host bits set beyond /8" },
                { { "--allow-env", "X",  NULL }, "--allow-env X: must be VARIABLE:PORT (upper case, digits, _; port 1..65535)" },
                { { "--net", "allow", "--allow-env", "X:1", "--allow-env", "Y:2",  NULL }, "--allow-env given twice" },
                { { "--expect-mount", "p:1:2",  NULL }, "--expect-mount p:1:2: must be PATH:DEV:INO" },
                { { "--expect-mount", "/p:x:2",  NULL }, "--expect-mount /p:x:2: DEV and INO must be numbers" },
                { { "--expect-mount", "/p:1:1111111111111111111111111111111111111111",  NULL }, "--expect-mount /p:1:1111111111111111111111111111111111111111: DEV and INO must be numbers" },
                { { "--expect-mount", "/p:*:2",  NULL }, "--expect-mount /p:*:2: DEV and INO must be numbers" },
                { { "--expect-file", "/p:2",  NULL }, "--expect-file /p:2: must be PATH:INO:CTIME_NS" },
                { { "--expect-file", "p:1:2",  NULL }, "--expect-file p:1:2: must be PATH:INO:CTIME_NS" },
                { { "--expect-file", "/p:1:-2",  NULL }, "--expect-file /p:1:-2: INO and CTIME_NS must be numbers" },
                { { "--expect-file", "/p:1:9223372036854775808",  NULL }, "--expect-file /p:1:9223372036854775808: INO and CTIME_NS must be numbers" },
                { { "--seed", "/a",  NULL }, "--seed /a: must be SRC:DEST, two absolute paths" },
                { { "--seed", "/a:/b", "--seed", "/c:/d",  NULL }, "--seed given twice" },
                { { "--seed", "/a:/b/../c",  NULL }, "--seed /a:/b/../c: must be SRC:DEST, two absolute paths" },
                { { "--ca-bundle", "rel",  NULL }, "--ca-bundle rel: must be an absolute path of at most 255 bytes" },
                { { "--ca-bundle", "/a", "--ca-bundle", "/b",  NULL }, "--ca-bundle given twice" },
                { { "--ca-bundle", "/a/../b",  NULL }, "--ca-bundle /a/../b: must be an absolute path of at most 255 bytes" },
                { { "--allow-dns=1",  NULL }, "--allow-dns takes no value" },
                { { "--keep-root=yes",  NULL }, "--keep-root takes no value" },
                { { "--print-plan=x",  NULL }, "--print-plan takes no value" },
                { { "--ruleset-only=x",  NULL }, "--ruleset-only takes no value" },
                { { "--allow-unenforced=x",  NULL }, "--allow-unenforced takes no value" },
                { { "--print-ruleset=x",  NULL }, "--print-ruleset takes no value" },
                { { "--bogus",  NULL }, "unknown option '--bogus'" },
                { { "--bogus=1",  NULL }, "--bogus takes no value" },
                { { "--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",  NULL }, "unknown option '--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'" },
                { { "--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx=1",  NULL }, "unknown option '--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'" },
                { { "-u",  NULL }, "unexpected argument '-u' (the command goes after --)" },
                { { "--allow-dnsx",  NULL }, "unknown option '--allow-dnsx'" },
                { { "--allow", "10.0.0.1", "--uid", "1", "--gid", "1", "--", "sh",  NULL }, "--allow needs --net allow" },
                { { "--uid", "1", "--gid", "1", "--allow-dns", "--", "sh",  NULL }, "--allow-dns needs --net allow" },
                { { "--uid", "1", "--gid", "1", "--allow-env", "X:1", "--", "sh",  NULL }, "--allow-env needs --net allow" },
                { { "--net", "full", "--ruleset-only",  NULL }, "--ruleset-only installs a ruleset: --net none or allow" },
                { { "--keep-root", "--uid", "1", "--", "sh",  NULL }, "--keep-root and --uid/--gid exclude each other" },
                { { "--keep-root", "--net", "external", "--", "sh",  NULL }, "--net external starts without privileges: no --keep-root, no --ca-bundle" },
                { { "--uid", "1", "--gid", "1", "--net", "external", "--ca-bundle", "/c", "--", "sh",  NULL }, "--net external starts without privileges: no --keep-root, no --ca-bundle" },
                { { "--uid", "1", "--", "sh",  NULL }, "--uid and --gid are required (or --keep-root)" },
                { { "--uid", "0", "--gid", "0", "--", "sh",  NULL }, "--uid 0 is root: say --keep-root if that is meant" },
                { { "--print-plan", "--print-ruleset",  NULL }, "--print-ruleset and --print-plan exclude each other" },
                { { "--net", "allow", "--ruleset-only", "--seed", "/a:/b",  NULL }, "--ruleset-only runs no command: no --uid, --gid, --keep-root, --seed, --ca-bundle, --expect-mount, --expect-file or command" },
                { { "--net", "allow", "--ruleset-only", "--expect-mount", "/a:1:2",  NULL }, "--ruleset-only runs no command: no --uid, --gid, --keep-root, --seed, --ca-bundle, --expect-mount, --expect-file or command" },
                { { "--uid", "1", "--gid", "1", "--",  NULL }, "no command: usage is aisb-entrypoint [OPTIONS] -- COMMAND [ARG...]" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *argv[13] = { "aisb-entrypoint" };
                int argc = 1;
                struct netpolicy p;
                char err[256] = "";
                for (; cases[i].argv[argc - 1]; argc++)
                        argv[argc] = cases[i].argv[argc - 1];
                ck_assert_msg(netpolicy_parse(argc, (char *const *) argv, &p, err, sizeof(err)) == -EINVAL,
                              "case %zu accepted", i);
                ck_assert_msg(strcmp(err, cases[i].message) == 0, "case %zu: '%s', not '%s'", i, err,
                              cases[i].message);
        }

        /* The bounds on lengths and counts. */
        static char long_path[NETPOLICY_SEED_PATH_MAX + 2], seed[2 * NETPOLICY_SEED_PATH_MAX + 8],
                mount_path[NETPOLICY_EXPECT_PATH_MAX + 16];
        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        struct netpolicy p;
        char err[256] = "";
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--ca-bundle", long_path, NULL), -EINVAL);
        ck_assert_msg(strncmp(err, "--ca-bundle /aaa", 16) == 0 && strlen(err) == sizeof(err) - 1, "%s", err);
        long_path[NETPOLICY_SEED_PATH_MAX - 1] = 0; /* 255 bytes: fits */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--ca-bundle", long_path, "--", "x", NULL), 0);
        ck_assert_str_eq(p.ca_extra, long_path);
        snprintf(seed, sizeof(seed), "%s:/b", long_path);
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--seed", seed, "--", "x", NULL), 0);
        ck_assert_str_eq(p.seed_source, long_path);
        snprintf(seed, sizeof(seed), "%sa:/b", long_path);
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--seed", seed, "--", "x", NULL), -EINVAL);
        ck_assert_str_eq(err, "--seed: a path is longer than 255 bytes");
        snprintf(seed, sizeof(seed), "/a:%sa", long_path);
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--seed", seed, "--", "x", NULL), -EINVAL);
        ck_assert_str_eq(err, "--seed: a path is longer than 255 bytes");
        memset(mount_path, 'm', sizeof(mount_path) - 1);
        mount_path[0] = '/';
        snprintf(mount_path + NETPOLICY_EXPECT_PATH_MAX, 16, ":1:2");
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--expect-mount", mount_path, "--", "x", NULL),
                         -EINVAL);
        ck_assert_msg(strncmp(err, "--expect-mount /mmm", 19) == 0, "%s", err);
        snprintf(mount_path + NETPOLICY_EXPECT_PATH_MAX - 1, 16, ":1:2");
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--keep-root", "--expect-mount", mount_path, "--", "x", NULL), 0);
        ck_assert_uint_eq(strlen(p.expect[0].path), NETPOLICY_EXPECT_PATH_MAX - 1);

        static const char *many[2 * NETPOLICY_MAX_EXPECT + 8] = { "aisb-entrypoint", "--keep-root" };
        int argc = 2;
        for (int i = 0; i <= NETPOLICY_MAX_EXPECT; i++) {
                many[argc++] = "--expect-mount";
                many[argc++] = "/p:1:2";
        }
        many[argc++] = "--";
        many[argc++] = "x";
        ck_assert_int_eq(netpolicy_parse(argc, (char *const *) many, &p, err, sizeof(err)), -EINVAL);
        ck_assert_str_eq(err, "too many --expect-mount (at most 320)");
        many[argc - 4] = "--";
        many[argc - 3] = "x";
        ck_assert_int_eq(netpolicy_parse(argc - 2, (char *const *) many, &p, err, sizeof(err)), 0);
        ck_assert_uint_eq(p.n_expect, NETPOLICY_MAX_EXPECT);

        /* A message cut to the caller's buffer, and none asked for. */
        char small[8];
        ck_assert_int_eq(parse(&p, small, sizeof(small), "--bogus", NULL), -EINVAL);
        ck_assert_str_eq(small, "unknown");
        ck_assert_int_eq(parse(&p, NULL, 0, "--bogus", NULL), -EINVAL);
}
END_TEST

START_TEST(too_many_allows)
{
        const char *argv[2 * NETPOLICY_MAX_ALLOW + 16] = { "aisb-entrypoint", "--uid", "1", "--gid", "1", "--net", "allow" };
        int argc = 7;
        char addrs[NETPOLICY_MAX_ALLOW + 1][32];
        struct netpolicy p;
        char err[256] = "";

        for (int i = 0; i <= NETPOLICY_MAX_ALLOW; i++) {
                snprintf(addrs[i], sizeof(addrs[i]), "10.0.%d.1:80", i);
                argv[argc++] = "--allow";
                argv[argc++] = addrs[i];
        }
        argv[argc++] = "--";
        argv[argc++] = "true";
        ck_assert_int_eq(netpolicy_parse(argc, (char *const *) argv, &p, err, sizeof(err)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "too many"));
        /* One fewer is fine. */
        argv[argc - 4] = "--";
        argv[argc - 3] = "true";
        ck_assert_int_eq(netpolicy_parse(argc - 2, (char *const *) argv, &p, err, sizeof(err)), 0);
        ck_assert_uint_eq(p.n_allow, NETPOLICY_MAX_ALLOW);
}
END_TEST

static char *capture(void (*print)(const struct netpolicy *, FILE *), const struct netpolicy *p)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        print(p, f);
        fclose(f);
        return text;
}

START_TEST(print_ruleset_text)
{
        struct netpolicy p;
        char err[256];
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", "--net", "allow", "--allow", "10.0.2.2:3128",
                               "--allow", "[fd00::]/8", NULL), 0);
        char *t = capture(netpolicy_print_ruleset, &p);
        ck_assert_str_eq(t,
                "table inet aisb {\n"
                "\tchain input {\n"
                "\t\ttype filter hook input priority filter; policy drop;\n"
                "\t\tiif \"lo\" accept\n"
                "\t\tct state established,related accept\n"
                "\t}\n\n"
                "\tchain forward {\n"
                "\t\ttype filter hook forward priority filter; policy drop;\n"
                "\t}\n\n"
                "\tchain output {\n"
                "\t\ttype filter hook output priority filter; policy drop;\n"
                "\t\toif \"lo\" accept\n"
                "\t\tct state established,related accept\n"
                "\t\tip daddr 10.0.2.2 tcp dport 3128 accept\n"
                "\t\tip6 daddr fd00::/8 meta l4proto tcp accept\n"
                "\t\tip6 daddr fd00::/8 meta l4proto udp accept\n"
                "\t}\n"
                "}\n");
        free(t);

        /* --net none: loopback only, not even established traffic out. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", NULL), 0);
        t = capture(netpolicy_print_ruleset, &p);
        ck_assert_ptr_nonnull(strstr(t, "policy drop;\n\t\toif \"lo\" accept\n\t}\n}\n"));
        free(t);

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", "--net", "full", NULL), 0);
        t = capture(netpolicy_print_ruleset, &p);
        ck_assert_ptr_null(strstr(t, "table"));
        free(t);

        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", "--net", "external", NULL), 0);
        t = capture(netpolicy_print_ruleset, &p);
        ck_assert_str_eq(t, "# --net external: no ruleset; the network is enforced outside the container\n");
        free(t);
}
END_TEST

START_TEST(print_plan_text)
{
        struct netpolicy p;
        char err[256];
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-plan", "--uid", "1000", "--gid", "100", NULL), 0);
        char *t = capture(netpolicy_print_plan, &p);
        static const char *const must[] = { "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP",
                                            "setresuid(1000)", "setresgid(100)", "PR_SET_NO_NEW_PRIVS",
                                            "clone3", "ENOSYS", "unshare", "bpf", "execvp" };
        for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
                ck_assert_msg(strstr(t, must[i]), "plan lacks %s", must[i]);
        /* Steps in the order they run. */
        ck_assert(strstr(t, "1. network") < strstr(t, "2. verify"));
        ck_assert(strstr(t, "2. verify") < strstr(t, "3. privileges"));
        ck_assert(strstr(t, "3. privileges") < strstr(t, "4. seccomp"));
        ck_assert(strstr(t, "4. seccomp") < strstr(t, "5. exec"));
        free(t);

        /* External: no capability kept, none dropped; checked instead. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-plan", "--net", "external", "--uid", "1000", "--gid",
                               "100", NULL), 0);
        t = capture(netpolicy_print_plan, &p);
        ck_assert_ptr_null(strstr(t, "CAP_NET_ADMIN"));
        ck_assert_ptr_null(strstr(t, "setresuid"));
        ck_assert_ptr_nonnull(strstr(t, "capabilities: none; started as uid 1000 gid 100"));
        ck_assert_ptr_nonnull(strstr(t, "3. privileges: none to drop: check uid 1000 and gid 100"));
        ck_assert_ptr_nonnull(strstr(t, "PR_SET_NO_NEW_PRIVS"));
        ck_assert(strstr(t, "3. privileges") < strstr(t, "4. seccomp"));
        free(t);
}
END_TEST

/* ---- resolv.conf, as glibc reads it ---- */

static char *resolvers_text(const struct resolvers *r)
{
        static char buf[512];
        size_t n = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < r->n; i++) {
                char a[INET6_ADDRSTRLEN];
                inet_ntop(r->addr[i].family, r->addr[i].addr, a, sizeof(a));
                ck_assert_uint_eq(r->addr[i].prefix, r->addr[i].family == AF_INET ? 32 : 128);
                ck_assert_uint_eq(r->addr[i].port, 0);
                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", a);
        }
        return buf;
}

START_TEST(resolv_conf_cases)
{
        static const struct {
                const char *text;
                const char *servers; /* space-separated, in order */
                size_t n_local;
        } cases[] = {
                /* podman's, with slirp4netns */
                { "nameserver 10.0.2.3\nnameserver 10.255.255.53\n", "10.0.2.3 10.255.255.53", 0 },
                /* comments, options, search, blank lines, no final newline */
                { "# Generated by podman\n; old style\n\nsearch example.com\noptions ndots:2\n"
                  "nameserver 192.0.2.53", "192.0.2.53", 0 },
                /* a comment or anything after the address; tabs */
                { "nameserver\t192.0.2.1\t# primary\nnameserver 192.0.2.2;secondary\nnameserver 192.0.2.3 x\n",
                  "192.0.2.1 192.0.2.2 192.0.2.3", 0 },
                /* commented out: not a nameserver */
                { "#nameserver 192.0.2.1\n;nameserver 192.0.2.2\n nameserver 192.0.2.3\n", "", 0 },
                /* IPv6, and a scope that means nothing to a rule */
                { "nameserver fd00::3\nnameserver fe80::1%eth0\nnameserver 2001:DB8::53\n",
                  "fd00::3 fe80::1 2001:db8::53", 0 },
                /* loopback and unspecified resolvers are this host: no rule, counted apart */
                { "nameserver 127.0.0.53\nnameserver ::1\nnameserver 192.0.2.1\n", "192.0.2.1", 2 },
                { "nameserver 0.0.0.0\nnameserver ::\nnameserver ::ffff:127.0.0.1\n", "", 3 },
                /* glibc's inet_aton forms: what glibc will ask is what the rule must name */
                { "nameserver 127.1\nnameserver 0x0a000203\nnameserver 012.0.0.1\n", "10.0.2.3 10.0.0.1", 1 },
                /* only the first three valid ones count, as for glibc; repeats once */
                { "nameserver 192.0.2.1\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n",
                  "192.0.2.1 192.0.2.2", 0 },
                /* garbage is skipped, not guessed at */
                { "nameserver\nnameserver \nnameserver   \nnameserverx 192.0.2.9\nnameserver 192.0.2.256\n"
                  "nameserver 192.0.2.1\r\nnameserver bogus\nnameserver 1.2.3.4.5\nnameserver [::1]\n"
                  "nameserver ::1::2\nnameserver 2001:db8::1%\nnameserver 192.0.2.7\n",
                  "2001:db8::1 192.0.2.7", 0 }, /* an empty scope is dropped, as by glibc */
                /* a NUL ends the address; an overlong token is no address */
                { "nameserver 192.0.2.4\0junk\nnameserver 1111111111111111111111111111111111111111111111111111111111111111\n",
                  "192.0.2.4", 0 },
                { "", "", 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct resolvers r;
                size_t len = strlen(cases[i].text);
                if (i == 10) /* the case with a NUL inside */
                        len = sizeof("nameserver 192.0.2.4\0junk\nnameserver ") - 1 + 64 + 1;
                memset(&r, 0xa5, sizeof(r));
                netpolicy_parse_resolv_conf(cases[i].text, len, &r);
                ck_assert_msg(strcmp(resolvers_text(&r), cases[i].servers) == 0, "case %zu: '%s', want '%s'", i,
                              resolvers_text(&r), cases[i].servers);
                ck_assert_msg(r.n_local == cases[i].n_local, "case %zu: %zu local", i, r.n_local);
                ck_assert_uint_le(r.n + r.n_local, NETPOLICY_MAX_RESOLVERS);
        }
}
END_TEST

/* Tens of thousands of lines, a line of a megabyte: nothing beyond the first three counts,
 * nothing is read past the size given. */
START_TEST(resolv_conf_large)
{
        size_t size = 4 * 1024 * 1024;
        char *text = malloc(size);
        size_t n = 0;
        for (unsigned line = 0; n + 32 < size / 2; line++)
                n += (size_t) snprintf(text + n, size - n, "nameserver 198.51.100.%u\n", line % 250 + 1);
        memset(text + n, 'a', size - n);
        struct resolvers r;
        netpolicy_parse_resolv_conf(text, size, &r);
        ck_assert_str_eq(resolvers_text(&r), "198.51.100.1 198.51.100.2 198.51.100.3");
        /* The size given is a bound: an address cut by it is not read past it. */
        static const char cut[] = "nameserver 10.0.2.35";
        netpolicy_parse_resolv_conf(cut, sizeof(cut) - 2, &r);
        ck_assert_str_eq(resolvers_text(&r), "10.0.2.3");
        memset(text, 'x', size);
        netpolicy_parse_resolv_conf(text, size, &r);
        ck_assert_uint_eq(r.n + r.n_local, 0);
        free(text);
}
END_TEST

/* What the printers say when they cannot know the addresses (libaisb prints without running
 * the entrypoint), and the rules once they are known. */
START_TEST(print_dns_text)
{
        struct netpolicy p;
        char err[256];
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", "--net", "allow", "--allow", "192.0.2.1:443",
                               "--allow-dns", NULL), 0);
        char *t = capture(netpolicy_print_ruleset, &p);
        ck_assert_ptr_nonnull(strstr(t, "\t\tip daddr 192.0.2.1 tcp dport 443 accept\n"
                                        "\t\t# udp/tcp dport 53 to each nameserver of /etc/resolv.conf, read at "
                                        "start (loopback ones need no rule)\n\t}\n}\n"));
        ck_assert_ptr_null(strstr(t, "\t\tudp dport 53"));
        ck_assert_ptr_null(strstr(t, "\t\ttcp dport 53"));
        free(t);
        t = capture(netpolicy_print_plan, &p);
        ck_assert_ptr_nonnull(strstr(t, "udp/tcp dport 53 to each nameserver of /etc/resolv.conf"));
        free(t);

        static const char conf[] = "nameserver 10.0.2.3\nnameserver 127.0.0.11\n";
        netpolicy_parse_resolv_conf(conf, sizeof(conf) - 1, &p.resolvers);
        p.resolvers_read = true;
        t = capture(netpolicy_print_ruleset, &p);
        ck_assert_ptr_nonnull(strstr(t, "\t\tip daddr 192.0.2.1 tcp dport 443 accept\n"
                                        "\t\tip daddr 10.0.2.3 udp dport 53 accept\n"
                                        "\t\tip daddr 10.0.2.3 tcp dport 53 accept\n\t}\n}\n"));
        ck_assert_ptr_null(strstr(t, "resolv.conf"));
        free(t);

        /* Without --allow-dns there is nothing about DNS at all. */
        ck_assert_int_eq(parse(&p, err, sizeof(err), "--print-ruleset", "--net", "allow", "--allow", "192.0.2.1:443",
                               NULL), 0);
        t = capture(netpolicy_print_ruleset, &p);
        ck_assert_ptr_null(strstr(t, "53"));
        free(t);
}
END_TEST

/* The real binary: a malformed policy exits 78 with one prefixed line on stderr, stdout empty. */
static int run_entrypoint(const char *const *args, char *out, size_t outlen)
{
        const char *exe = getenv("AISB_ENTRYPOINT");
        int pipefd[2];
        ck_assert_msg(exe, "AISB_ENTRYPOINT is not set (meson sets it)");
        ck_assert_int_eq(pipe(pipefd), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                const char *argv[32] = { exe };
                for (int i = 0; args[i] && i < 30; i++)
                        argv[i + 1] = args[i];
                dup2(pipefd[1], STDERR_FILENO);
                close(pipefd[0]);
                execv(exe, (char *const *) argv);
                _exit(99);
        }
        close(pipefd[1]);
        size_t n = 0;
        ssize_t k;
        while (n + 1 < outlen && (k = read(pipefd[0], out + n, outlen - 1 - n)) > 0)
                n += (size_t) k;
        out[n] = '\0';
        close(pipefd[0]);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

START_TEST(binary_exit_78)
{
        static const char *const cases[][10] = {
                { "--uid", "1000", "--gid", "1000", "--net", "allow", "--allow", "10.0.2.2:0", "--", "true" },
                { "--uid", "1000", "--gid", "1000", "--net", "allow", "--allow", "1.2.3.4/33", "--", "true" },
                { "--uid", "1000", "--gid", "1000", "--net", "allow", "--allow", "garbage", "--", "true" },
                { "--uid", "1000", "--gid", "1000", "--net", "sideways", "--", "true" },
                { "--uid", "1000", "--gid", "1000", "--frobnicate", "--", "true" },
                { "--uid", "1000", "--gid", "1000", NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char out[1024];
                int rc = run_entrypoint(cases[i], out, sizeof(out));
                ck_assert_msg(rc == 78, "case %zu: exit %d (%s)", i, rc, out);
                ck_assert_msg(strncmp(out, "aisb-entrypoint: ", 17) == 0, "case %zu: %s", i, out);
                ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "case %zu: not one line: %s", i, out);
        }
}
END_TEST

Suite *netpolicy_suite(void)
{
        Suite *s = suite_create("netpolicy");
        suite_add_tests(s, "allow", NULL, NULL, allow_good, allow_hostile);
        suite_add_tests(s, "options", NULL, NULL, options_good, options_hostile, options_messages, too_many_allows);
        suite_add_tests(s, "resolv.conf", NULL, NULL, resolv_conf_cases, resolv_conf_large);
        suite_add_tests(s, "texts", NULL, NULL, print_ruleset_text, print_plan_text, print_dns_text);
        suite_add_tests(s, "binary", NULL, NULL, binary_exit_78);
        return s;
}
