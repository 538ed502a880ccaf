/* SPDX-License-Identifier: MIT */
/* The allowlist: entry syntax (valid, canonical, hostile), the suffix and port rules, files,
 * the squid configuration, the gate hash and the entrypoint's --allow arguments. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "internal.h"
#include "allowlist.h"
#include "gate-squid.h"

/* The real parser of aisb-entrypoint, so the --allow arguments are checked against what the
 * entrypoint accepts rather than against a copy of its syntax. It is pure C and links alone. */
#include "../../entrypoint/netpolicy.c"
#include "../suite-table.h"
#include "unit.h"
#include "fileio.h"
#include "hostaddr.h"

_Static_assert(ALLOWLIST_MAX_ADDRESSES == NETPOLICY_MAX_ALLOW,
               "the allowlist must refuse what the entrypoint would refuse");

static void expect_refused(const char *text, const char *needle)
{
        allowlist l = {};
        aisb_error *err = NULL;
        int r = allowlist_add(&l, text, "--allow", &err);
        ck_assert_msg(r < 0, "'%s' was accepted as '%s'", text, l.n ? l.entries[0].host : "?");
        ck_assert_uint_eq(l.n, 0);
        ck_assert_ptr_nonnull(err);
        const char *m = aisb_error_message(err);
        ck_assert_msg(startswith(m, "--allow: '"), "'%s' lacks the origin", m);
        ck_assert_msg(!strchr(m, '\n'), "'%s' is more than one line", m);
        ck_assert_msg(strstr(m, needle), "'%s' lacks '%s'", m, needle);
        aisb_error_free(err);
        allowlist_done(&l);
}

static char *write_temp(const void *data, size_t size)
{
        char *path = strdup("/tmp/aisb-allow-XXXXXX");
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, data, size), 0);
        close(fd);
        return path;
}

static bool has_line(const char *text, const char *line)
{
        size_t n = strlen(line);
        for (const char *p = text; (p = strstr(p, line)); p++)
                if ((p == text || p[-1] == '\n') && p[n] == '\n')
                        return true;
        return false;
}

/* ---- entries ---- */

static const struct {
        const char *text;
        allow_kind kind;
        const char *host;
        int family;
        unsigned prefix, port;
} valid_entries[] = {
        { "example.com", ALLOW_DOMAIN, "example.com", 0, 0, 0 },
        { "Example.COM.", ALLOW_DOMAIN, "example.com", 0, 0, 0 },
        { "*.example.com", ALLOW_DOMAIN, "example.com", 0, 0, 0 },
        { "  api.example.com\t", ALLOW_DOMAIN, "api.example.com", 0, 0, 0 },
        { "example.com:8443", ALLOW_DOMAIN, "example.com", 0, 0, 8443 },
        { "*.Example.com.:443", ALLOW_DOMAIN, "example.com", 0, 0, 443 },
        { "xn--bcher-kva.example", ALLOW_DOMAIN, "xn--bcher-kva.example", 0, 0, 0 },
        { "a-b.c0.io", ALLOW_DOMAIN, "a-b.c0.io", 0, 0, 0 },
        { "1.2.3.example.com", ALLOW_DOMAIN, "1.2.3.example.com", 0, 0, 0 },
        { "192.0.2.1", ALLOW_ADDRESS, "192.0.2.1", AF_INET, 32, 0 },
        { "192.0.2.1:5432", ALLOW_ADDRESS, "192.0.2.1", AF_INET, 32, 5432 },
        { "192.0.2.1/32", ALLOW_ADDRESS, "192.0.2.1", AF_INET, 32, 0 },
        { "10.0.0.0/8", ALLOW_ADDRESS, "10.0.0.0/8", AF_INET, 8, 0 },
        { "10.0.0.0/8:443", ALLOW_ADDRESS, "10.0.0.0/8", AF_INET, 8, 443 },
        { "0.0.0.0/0:5432", ALLOW_ADDRESS, "0.0.0.0/0", AF_INET, 0, 5432 },
        { "2001:db8::1", ALLOW_ADDRESS, "2001:db8::1", AF_INET6, 128, 0 },
        { "2001:DB8:0::1", ALLOW_ADDRESS, "2001:db8::1", AF_INET6, 128, 0 },
        { "[2001:db8::1]", ALLOW_ADDRESS, "2001:db8::1", AF_INET6, 128, 0 },
        { "[2001:db8::1]:5432", ALLOW_ADDRESS, "2001:db8::1", AF_INET6, 128, 5432 },
        { "2001:db8::/32", ALLOW_ADDRESS, "2001:db8::/32", AF_INET6, 32, 0 },
        { "[2001:db8::]/32", ALLOW_ADDRESS, "2001:db8::/32", AF_INET6, 32, 0 },
        { "[2001:db8::]/32:443", ALLOW_ADDRESS, "2001:db8::/32", AF_INET6, 32, 443 },
        { "::ffff:192.0.2.1", ALLOW_ADDRESS, "::ffff:192.0.2.1", AF_INET6, 128, 0 },
        { "example.com:65535", ALLOW_DOMAIN, "example.com", 0, 0, 65535 },
};

START_TEST(test_valid)
{
        for (size_t i = 0; i < ELEMENTSOF(valid_entries); i++) {
                allowlist l = {};
                aisb_error *err = NULL;
                int r = allowlist_add(&l, valid_entries[i].text, "--allow", &err);
                ck_assert_msg(r == 0, "'%s' refused: %s", valid_entries[i].text,
                              aisb_error_message(err));
                ck_assert_uint_eq(l.n, 1);
                const allow_entry *e = &l.entries[0];
                ck_assert_int_eq(e->kind, valid_entries[i].kind);
                ck_assert_str_eq(e->host, valid_entries[i].host);
                ck_assert_int_eq(e->family, valid_entries[i].family);
                ck_assert_uint_eq(e->prefix, valid_entries[i].prefix);
                ck_assert_uint_eq(e->port, valid_entries[i].port);
                ck_assert_str_eq(e->origin, "--allow");
                allowlist_done(&l);
        }
}
END_TEST

static const struct {
        const char *text;
        const char *needle;
} invalid_entries[] = {
        { "", "empty" },
        { "   ", "empty" },
        { "-", "'-'" },
        { "..", "empty label" },
        { ".", "empty host name" },
        { ".example.com", "empty label" },
        { "example..com", "empty label" },
        { "com", "single label" },
        { "localhost", "single label" },
        { "*", "wildcard" },
        { "*.", "empty host name" },
        { "*.*.example.com", "wildcard" },
        { "api.*.example.com", "wildcard" },
        { "ex*ample.com", "wildcard" },
        { "*example.com", "wildcard" },
        { "my_host.example.com", "'_'" },
        { "https://example.com", "URL" },
        { "example.com/path", "path" },
        { "user@example.com", "'@'" },
        /* A blank ends the destination; what follows is its rules. */
        { "exa mple.com", "single label" },
        { "example.com mple.com", "'mple.com' is no method" },
        { "example.com GET, /x", "'' is no method" },
        { "example.com /x GET", "methods go before the paths" },
        { "example.com /a/../b", ". or .. segments" },
        { "example.com /a b", "methods go before the paths" },
        { "example.com /a\"b", "a path may hold" },
        { "example.com /a\\b", "a path may hold" },
        { "example.com /a(b", "a path may hold" },
        { "example.com /a%20b", "write it decoded, without %" },
        { "10.0.0.0/8 GET", "methods and paths apply to names only" },
        { "example.com CONNECT", "'CONNECT' is no method" },
        { "example.com get", "'get' is no method" },
        { "example.com\x01", "control" },
        { "ex\x7f" "ample.com", "control" },
        { "bücher.example", "non-ASCII" },
        { "-example.com", "'-'" },
        { "example-.com", "'-'" },
        { "example.com:0", "port" },
        { "example.com:65536", "port" },
        { "example.com:", "port" },
        { "example.com:08443", "port" },
        { "example.com:+443", "port" },
        { "example.com:http", "port" },
        { "example.com:443:443", "IPv6" },
        { ":443", "nothing before ':'" },
        { "[::1", "']'" },
        { "::1]", "']'" },
        { "[::1]x", "after ']'" },
        { "[192.0.2.1]:80", "IPv6" },
        { "[2001:db8::1]:0", "port" },
        { "[2001:db8::]/129", "prefix" },
        { "2001:db8::1%eth0", "IPv6" },
        { "2001:db8::g", "IPv6" },
        { "1.2.3.4/33", "prefix" },
        { "1.2.3.4/", "prefix" },
        { "1.2.3.4/08", "prefix" },
        { "1.2.3.4/-1", "" },
        { "1.2.3.4:0", "port" },
        { "300.1.1.1", "IPv4" },
        { "1.2.3", "IPv4" },
        { "1.2.3.4.5", "IPv4" },
        { "010.0.0.1", "IPv4" },
        { "1.02.3.4", "IPv4" },
        { "0x7f.1", "IP address" },
        { "0x7f000001.example.0x1", "IP address" },
        { "example.123", "IP address" },
        { "127.1", "IPv4" },
        { "2130706433", "IPv4" },
        { "10.0.0.1/8", "did you mean 10.0.0.0/8?" },
        { "10.0.0.1/8:443", "did you mean 10.0.0.0/8:443?" },
        { "2001:db8::1/32", "did you mean 2001:db8::/32?" },
        { "[2001:db8::1]/32:443", "did you mean [2001:db8::]/32:443?" },
        { "example.com#frag", "'#'" },
        { "example.com;rm", "';'" },
        { "\"example.com\"", "'\"'" },
};

START_TEST(test_invalid)
{
        for (size_t i = 0; i < ELEMENTSOF(invalid_entries); i++)
                expect_refused(invalid_entries[i].text, invalid_entries[i].needle);
}
END_TEST

START_TEST(test_hostile_lengths)
{
        char label[100], name[400];
        memset(label, 'a', 64);
        label[64] = 0;
        snprintf(name, sizeof name, "%s.example.com", label);
        expect_refused(name, "label longer than 63");
        label[63] = 0;
        snprintf(name, sizeof name, "%s.example.com", label);
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, name, "--allow", NULL), 0);
        allowlist_done(&l);

        /* 254 characters of valid labels: too long as a name, though every label is fine. */
        name[0] = 0;
        while (strlen(name) < 251)
                strcat(name, "abcdefghi.");
        strcat(name, "com");
        ck_assert_uint_gt(strlen(name), 253);
        expect_refused(name, "longer than 253");

        char *huge = malloc(100000);
        memset(huge, 'a', 99999);
        huge[99999] = 0;
        expect_refused(huge, "longer than");
        /* The message shows a bounded, escaped excerpt. */
        aisb_error *err = NULL;
        ck_assert_int_lt(allowlist_add(&l, huge, "--allow", &err), 0);
        ck_assert_uint_lt(strlen(aisb_error_message(err)), 200);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "..."));
        aisb_error_free(err);
        free(huge);

        err = NULL;
        ck_assert_int_lt(allowlist_add(&l, "a\x1b[31m.example.com", "--allow", &err), 0);
        ck_assert_ptr_null(strchr(aisb_error_message(err), '\x1b'));
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "\\x1b"));
        aisb_error_free(err);
}
END_TEST

START_TEST(test_duplicates)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "example.com", "first:1", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "*.EXAMPLE.com.", "second:2", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "example.com:443", "third:3", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "10.0.0.0/8", "a", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "10.0.0.0/8", "b", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "[2001:DB8::1]", "c", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "2001:db8:0:0::1", "d", NULL), 0);
        ck_assert_uint_eq(l.n, 4);
        ck_assert_str_eq(l.entries[0].origin, "first:1");
        ck_assert_uint_eq(l.entries[1].port, 443);
        ck_assert_str_eq(l.entries[2].origin, "a");
        ck_assert_str_eq(l.entries[3].origin, "c");
        ck_assert_uint_eq(allowlist_count_domains(&l), 2);
        ck_assert_uint_eq(allowlist_count_addresses(&l), 2);
        allowlist_done(&l);
}
END_TEST

/* Lists are plain structs that other code extends by hand with realloc to exactly n entries;
 * allowlist_add must not assume any spare room it did not see the allocator give. */
START_TEST(test_grown_by_hand)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "a.example", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "b.example", "--allow", NULL), 0);
        for (int i = 0; i < 3; i++) {
                /* Shrink to exactly n, then append one by hand, as a caller copying lists does. */
                l.entries = realloc(l.entries, (l.n + 1) * sizeof *l.entries);
                ck_assert_ptr_nonnull(l.entries);
                char host[32];
                snprintf(host, sizeof host, "hand%d.example", i);
                l.entries[l.n++] = (allow_entry) { .kind = ALLOW_DOMAIN, .host = strdup(host),
                                                   .origin = strdup("hand") };
                l.entries = realloc(l.entries, l.n * sizeof *l.entries);
                ck_assert_ptr_nonnull(l.entries);
                char text[32];
                snprintf(text, sizeof text, "c%d.example", i);
                ck_assert_int_eq(allowlist_add(&l, text, "--allow", NULL), 0);
        }
        ck_assert_uint_eq(l.n, 8);
        ck_assert_str_eq(l.entries[7].host, "c2.example");
        allowlist_done(&l);
}
END_TEST

START_TEST(test_limits)
{
        allowlist l = {};
        aisb_error *err = NULL;
        char text[64];
        for (unsigned i = 0; i < ALLOWLIST_MAX_ADDRESSES; i++) {
                snprintf(text, sizeof text, "10.0.%u.0/24", i);
                ck_assert_int_eq(allowlist_add(&l, text, "--allow", NULL), 0);
        }
        /* A duplicate is no new entry. */
        ck_assert_int_eq(allowlist_add(&l, "10.0.0.0/24", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "10.1.0.0/24", "--allow", &err), -E2BIG);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "at most 64"));
        aisb_error_free(err);
        err = NULL;
        for (unsigned i = 0; l.n < ALLOWLIST_MAX_ENTRIES; i++) {
                snprintf(text, sizeof text, "h%u.example.com", i);
                ck_assert_int_eq(allowlist_add(&l, text, "--allow", NULL), 0);
        }
        ck_assert_int_eq(allowlist_add(&l, "one-more.example.com", "--allow", &err), -E2BIG);
        aisb_error_free(err);
        allowlist_done(&l);
}
END_TEST

/* ---- the suffix and port rule ---- */

static const struct {
        const char *host;
        unsigned port;
        bool allowed;
} match_cases[] = {
        { "example.com", 443, true },
        { "example.com", 80, true },
        { "API.example.com.", 443, true },
        { "a.b.example.com", 80, true },
        { "example.com.", 443, true },
        { "badexample.com", 443, false },
        { "xexample.com", 443, false },
        { "example.com.evil.org", 443, false },
        { "example.co", 443, false },
        { "com", 443, false },
        { "", 443, false },
        { ".example.com", 443, false },
        { "a..example.com", 443, false },
        { "a_b.example.com", 443, false },
        { "example.com", 22, false },
        { "example.com", 8443, false },
        /* example.org:8443 only */
        { "example.org", 8443, true },
        { "www.example.org", 8443, true },
        { "example.org", 443, false },
        { "example.org", 80, false },
        /* An address entry is never a name. */
        { "192.0.2.1", 443, false },
        { "10.1.2.3", 443, false },
};

START_TEST(test_domain_allows)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "example.com", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "example.org:8443", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "192.0.2.1", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "10.0.0.0/8", "--allow", NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(match_cases); i++)
                ck_assert_msg(allowlist_request_allows(&l, match_cases[i].host, match_cases[i].port, NULL, NULL) ==
                                      match_cases[i].allowed,
                              "%s:%u should be %s", match_cases[i].host, match_cases[i].port,
                              match_cases[i].allowed ? "allowed" : "refused");
        ck_assert(!allowlist_request_allows(&l, NULL, 443, NULL, NULL));
        allowlist_done(&l);

        allowlist empty = {};
        ck_assert(!allowlist_request_allows(&empty, "example.com", 443, NULL, NULL));
}
END_TEST

/* ---- files ---- */

START_TEST(test_file_syntax)
{
        static const char text[] = "\xef\xbb\xbf# project allowlist\r\n"
                                   "\r\n"
                                   "example.com\r\n"
                                   "   api.example.org:8443   # the API\n"
                                   "\t\n"
                                   "# 10.0.0.0/8\n"
                                   "10.1.0.0/16#not-a-comment-but-refused\n";
        allowlist l = {};
        aisb_error *err = NULL;
        ck_assert_int_lt(allowlist_parse_text(&l, text, sizeof text - 1, "allow", 0, &err), 0);
        ck_assert_str_eq(aisb_error_message(err),
                         "allow:7: '10.1.0.0/16#not-a-comment-but-refused' is not a domain, IP or "
                         "CIDR (the prefix length must be a number from 0 to 32)");
        aisb_error_free(err);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_str_eq(l.entries[0].host, "example.com");
        ck_assert_str_eq(l.entries[0].origin, "allow:3");
        ck_assert_str_eq(l.entries[1].host, "api.example.org");
        ck_assert_uint_eq(l.entries[1].port, 8443);
        ck_assert_str_eq(l.entries[1].origin, "allow:4");
        allowlist_done(&l);

        /* A BOM anywhere but the start is a non-ASCII character like any other. */
        static const char bom_inside[] = "example.com\n\xef\xbb\xbf" "example.org\n";
        err = NULL;
        ck_assert_int_lt(allowlist_parse_text(&l, bom_inside, sizeof bom_inside - 1, "f", 0, &err), 0);
        ck_assert(startswith(aisb_error_message(err), "f:2: '\\xef\\xbb\\xbfexample.org'"));
        aisb_error_free(err);
        allowlist_done(&l);

        /* No final newline, only comments, empty. */
        ck_assert_int_eq(allowlist_parse_text(&l, "a.example", 9, "f", 0, NULL), 0);
        ck_assert_int_eq(allowlist_parse_text(&l, "# x\n#y", 6, "f", 0, NULL), 0);
        ck_assert_int_eq(allowlist_parse_text(&l, "", 0, "f", 0, NULL), 0);
        ck_assert_uint_eq(l.n, 1);
        allowlist_done(&l);
}
END_TEST

START_TEST(test_file_load)
{
        static const char text[] = "example.com\n\nbad entry\n";
        char *path = write_temp(text, sizeof text - 1);
        allowlist l = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(allowlist_load_file(&l, path, 0, &err), -EINVAL);
        char *want = NULL;
        ck_assert_int_ge(asprintf(&want, "%s:3: 'bad entry' is not a domain, IP or CIDR "
                                         "(a single label: give a full name such as example.com)", path), 0);
        ck_assert_str_eq(aisb_error_message(err), want);
        free(want);
        aisb_error_free(err);
        err = NULL;

        /* $HOME is shown as ~, as the documentation writes the user's file. */
        char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
        setenv("HOME", "/tmp", 1);
        ck_assert_int_eq(allowlist_load_file(&l, path, 0, &err), -EINVAL);
        ck_assert_msg(startswith(aisb_error_message(err), "~/aisb-allow-"), "%s",
                      aisb_error_message(err));
        aisb_error_free(err);
        err = NULL;
        if (saved_home)
                setenv("HOME", saved_home, 1);
        free(saved_home);
        unlink(path);
        free(path);
        allowlist_done(&l);

        /* Missing: fine when optional, an error otherwise. */
        ck_assert_int_eq(allowlist_load_file(&l, "/nonexistent/aisb/allow", ALLOWLIST_FILE_OPTIONAL, NULL), 0);
        ck_assert_int_eq(allowlist_load_file(&l, "/nonexistent/aisb/allow", 0, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "/nonexistent/aisb/allow"));
        aisb_error_free(err);
        err = NULL;

        /* NUL bytes: refused with the line they are on. */
        path = write_temp("example.com\nexa\0mple.org\n", 25);
        ck_assert_int_eq(allowlist_load_file(&l, path, 0, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), ":2: a NUL byte"));
        aisb_error_free(err);
        err = NULL;
        unlink(path);
        free(path);

        /* 2 MiB of valid-looking lines: refused for its size, before parsing. */
        size_t size = 2 * 1024 * 1024;
        char *big = malloc(size);
        for (size_t i = 0; i < size; i++)
                big[i] = (i % 16 == 15) ? '\n' : 'a';
        path = write_temp(big, size);
        free(big);
        ck_assert_int_eq(allowlist_load_file(&l, path, 0, &err), -EFBIG);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "larger than 1024 KiB"));
        aisb_error_free(err);
        err = NULL;
        unlink(path);
        free(path);

        /* Not a regular file: a directory, a FIFO (which must not block us). */
        ck_assert_int_eq(allowlist_load_file(&l, "/tmp", 0, &err), -EINVAL);
        aisb_error_free(err);
        err = NULL;
        char fifo[] = "/tmp/aisb-allow-fifo-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(fifo));
        char fifo_path[64];
        snprintf(fifo_path, sizeof fifo_path, "%s/allow", fifo);
        ck_assert_int_eq(mkfifo(fifo_path, 0600), 0);
        ck_assert_int_eq(allowlist_load_file(&l, fifo_path, ALLOWLIST_FILE_OPTIONAL, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "not a regular file"));
        aisb_error_free(err);
        unlink(fifo_path);
        rmdir(fifo);
        ck_assert_uint_eq(l.n, 0);
        allowlist_done(&l);
}
END_TEST

/* ---- squid.conf ---- */

static char *squid_config(const char *const *entries, const squid_options *o)
{
        allowlist l = {};
        for (size_t i = 0; entries[i]; i++)
                ck_assert_int_eq(allowlist_add(&l, entries[i], "--allow", NULL), 0);
        char *text = NULL;
        aisb_error *err = NULL;
        int r = gate_squid_config(&l, o, &text, &err);
        ck_assert_msg(r == 0, "%s", aisb_error_message(err));
        allowlist_done(&l);
        return text;
}

/* The http_access lines, in order. */
static char **http_access_lines(const char *text)
{
        char **lines = NULL;
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                ck_assert_ptr_nonnull(nl);
                if (startswith(p, "http_access ")) {
                        char *line = strndup(p, (size_t) (nl - p));
                        ck_assert_int_eq(strv_push(&lines, line), 0);
                        free(line);
                }
                p = nl + 1;
        }
        return lines;
}

START_TEST(test_squid_config)
{
        static const char *const entries[] = { "example.com", "api.example.com", "*.Example.org",
                                               "example.net:8443", "other.test:8443",
                                               "example.com:8080", "192.0.2.1:5432", NULL };
        static const char *const add_hosts[] = { "allowed.test:127.0.0.1", NULL };
        squid_options o = { .port = 3128, .hosts_file = "/etc/aisb/hosts", .add_hosts = add_hosts };
        char *text = squid_config(entries, &o);

        static const char *const expected[] = {
                "http_port 127.0.0.1:3128",
                "pid_filename none",
                "cache deny all",
                "shutdown_lifetime 1 seconds",
                "hosts_file /etc/aisb/hosts",
                ("logformat aisb " GATE_SQUID_LOGFORMAT),
                "access_log stdio:/var/log/squid/access.log logformat=aisb",
                "cache_log /var/log/squid/cache.log",
                "via off",
                "forwarded_for delete",
                "httpd_suppress_version_string on",
                "icp_port 0",
                "htcp_port 0",
                "snmp_port 0",
                "icp_access deny all",
                "htcp_access deny all",
                "http_reply_access allow all",
                "acl aisb_local_names dstdomain -n allowed.test",
                "acl aisb_ports port 80 443 8080 8443",
                /* api.example.com is inside .example.com and left out (squid warns otherwise). */
                "acl aisb_dst_web dstdomain -n .example.com .example.org",
                "acl aisb_port_web port 80 443",
                "acl aisb_dst_8080 dstdomain -n .example.com",
                "acl aisb_port_8080 port 8080",
                "acl aisb_dst_8443 dstdomain -n .example.net .other.test",
                /* every listed name, checked by name before anything resolves one */
                "acl aisb_listed dstdomain -n .example.com .example.net .example.org .other.test",
                "acl aisb_port_8443 port 8443",
        };
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_msg(has_line(text, expected[i]), "no line '%s' in:\n%s", expected[i], text);
        ck_assert_ptr_null(strstr(text, "192.0.2.1"));
        ck_assert_ptr_null(strstr(text, "api.example.com"));
        ck_assert_ptr_null(strstr(text, "cache_dir"));
        ck_assert_ptr_null(strstr(text, "dns_v4_first"));
        ck_assert_ptr_null(strstr(text, "/dev/stdout"));
        /* Every domain ACL refuses reverse lookups of IP literals. */
        for (const char *p = text; (p = strstr(p, "dstdomain")); p++)
                ck_assert(startswith(p, "dstdomain -n "));

        char **rules = http_access_lines(text);
        static const char *const expected_rules[] = {
                "http_access deny manager",
                "http_access deny !aisb_clients",
                "http_access deny aisb_ip_literal",
                "http_access deny !aisb_connect !aisb_schemes",
                "http_access deny !aisb_ports",
                "http_access deny !aisb_listed",
                "http_access deny aisb_local_dst !aisb_local_names",
                "http_access allow aisb_dst_web aisb_port_web",
                "http_access allow aisb_dst_8080 aisb_port_8080",
                "http_access allow aisb_dst_8443 aisb_port_8443",
                "http_access deny all",
        };
        ck_assert_uint_eq(strv_length((const char *const *) rules), ELEMENTSOF(expected_rules));
        for (size_t i = 0; i < ELEMENTSOF(expected_rules); i++)
                ck_assert_str_eq(rules[i], expected_rules[i]);
        /* Every allow pairs a name ACL with a port ACL: nothing opens a listed name on another
         * port, nor CONNECT anywhere by itself. */
        for (size_t i = 0; rules[i]; i++)
                if (startswith(rules[i], "http_access allow"))
                        ck_assert_msg(strstr(rules[i], " aisb_dst_") && strstr(rules[i], " aisb_port_"),
                                      "%s", rules[i]);
        strv_free(rules);
        free(text);
}
END_TEST


/* The values of every "acl NAME TYPE ..." line, in order, as one space-separated string. */
static char *acl_values(const char *text, const char *name_and_type)
{
        buffer b = {};
        char *prefix = NULL;
        ck_assert_int_ge(asprintf(&prefix, "acl %s ", name_and_type), 0);
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                ck_assert_ptr_nonnull(nl);
                if (startswith(p, prefix))
                        ck_assert_int_ge(buffer_printf(&b, "%s%.*s", b.size ? " " : "",
                                                       (int) ((size_t) (nl - p) - strlen(prefix)), p + strlen(prefix)), 0);
                p = nl + 1;
        }
        free(prefix);
        return b.data ? buffer_steal(&b) : strdup("");
}

/* What a listed name may not resolve to through the gate: the host and its surroundings,
 * and the host's own addresses; only --gate-add-host names are exempt. */
START_TEST(test_squid_config_local_dst)
{
        static const char *const entries[] = { "example.com", NULL };
        static const char *const add_hosts[] = { "allowed.test:127.0.0.1", NULL };
        static const char *const host_addresses[] = {
                "192.0.2.2", "2001:DB8:0::7", "127.0.0.1", "::1", "fe80::fc:ff:fe00:1",
                "10.1.2.3", "192.168.1.5", "100.64.0.9", "fd00::2", "192.0.2.2", "198.51.100.1", NULL
        };
        squid_options o = { .port = 3128, .add_hosts = add_hosts, .host_addresses = host_addresses };
        char *text = squid_config(entries, &o);
        char *values = acl_values(text, "aisb_local_dst dst");
        /* The ranges, then each host address not inside one, once, canonical. */
        ck_assert_str_eq(values, "0.0.0.0/8 127.0.0.0/8 169.254.0.0/16 10.0.0.0/8 172.16.0.0/12 "
                                 "192.168.0.0/16 100.64.0.0/10 ::/128 ::1 fe80::/10 fc00::/7 "
                         "64:ff9b::/104 64:ff9b::7f00:0/104 64:ff9b::a9fe:0/112 64:ff9b::a00:0/104 64:ff9b::ac10:0/108 "
                         "64:ff9b::c0a8:0/112 64:ff9b::6440:0/106 64:ff9b:1::/48 "
                         "168.63.129.16 64:ff9b::a83f:8110 "
                                 "192.0.2.2 2001:db8::7 198.51.100.1");
        free(values);
        char **rules = http_access_lines(text);
        ck_assert_str_eq(rules[5], "http_access deny !aisb_listed");
        ck_assert_str_eq(rules[6], "http_access deny aisb_local_dst !aisb_local_names");
        ck_assert_str_eq(rules[7], "http_access allow aisb_dst_web aisb_port_web");
        strv_free(rules);
        values = acl_values(text, "aisb_local_names dstdomain -n");
        ck_assert_str_eq(values, "allowed.test");
        free(values);
        free(text);

        /* Without add-host names nothing is exempt; without host addresses the ranges remain. */
        squid_options bare = { .port = 3128 };
        text = squid_config(entries, &bare);
        rules = http_access_lines(text);
        ck_assert_str_eq(rules[6], "http_access deny aisb_local_dst");
        strv_free(rules);
        values = acl_values(text, "aisb_local_dst dst");
        ck_assert(startswith(values, "0.0.0.0/8 127.0.0.0/8 169.254.0.0/16 10.0.0.0/8 172.16.0.0/12 "));
        ck_assert_ptr_nonnull(strstr(values, " fc00::/7"));
        ck_assert_ptr_null(strstr(values, "192.0.2.2"));
        free(values);
        free(text);

        /* A host address is checked like every other value of squid.conf. */
        static const char *const bad[] = { "192.0.2.256", "010.0.0.1", "fe80::1%eth0", "1.2.3.4 all",
                                           "x", "", "1.2.3.4\nhttp_access allow all" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                allowlist l = {};
                ck_assert_int_eq(allowlist_add(&l, "example.com", "--allow", NULL), 0);
                const char *const one[] = { bad[i], NULL };
                squid_options so = { .port = 3128, .host_addresses = one };
                char *out = NULL;
                aisb_error *err = NULL;
                ck_assert_msg(gate_squid_config(&l, &so, &out, &err) == -EINVAL, "'%s' accepted", bad[i]);
                ck_assert_ptr_null(out);
                ck_assert(startswith(aisb_error_message(err), "host address '"));
                ck_assert(!strchr(aisb_error_message(err), '\n'));
                aisb_error_free(err);
                allowlist_done(&l);
        }
}
END_TEST

START_TEST(test_squid_config_empty)
{
        static const char *const entries[] = { "10.0.0.0/8", NULL };
        squid_options o = { .port = 3128, .access_log = "/tmp/log/a.log", .cache_log = "/tmp/log/c.log" };
        char *text = squid_config(entries, &o);
        char **rules = http_access_lines(text);
        for (size_t i = 0; rules[i]; i++)
                ck_assert_msg(startswith(rules[i], "http_access deny "), "%s", rules[i]);
        ck_assert_str_eq(rules[strv_length((const char *const *) rules) - 1], "http_access deny all");
        strv_free(rules);
        ck_assert(has_line(text, "access_log stdio:/tmp/log/a.log logformat=aisb"));
        ck_assert(has_line(text, "cache_log /tmp/log/c.log"));
        ck_assert(has_line(text, "http_access deny aisb_local_dst"));
        ck_assert_ptr_null(strstr(text, "hosts_file"));
        ck_assert_ptr_null(strstr(text, "aisb_dst_"));
        free(text);
}
END_TEST

START_TEST(test_squid_config_long_acl)
{
        char *entries[30] = {};
        for (int i = 0; i < 20; i++)
                ck_assert_int_ge(asprintf(&entries[i], "h%02d.example.com", i), 0);
        squid_options o = { .port = 3128 };
        char *text = squid_config((const char *const *) entries, &o);
        /* Split over several lines of the same ACL, none of them long. */
        unsigned acl_lines = 0;
        for (const char *p = text; (p = strstr(p, "\nacl aisb_dst_web dstdomain -n ")); p++)
                acl_lines++;
        ck_assert_uint_eq(acl_lines, 3);
        for (int i = 0; i < 20; i++) {
                char needle[32];
                snprintf(needle, sizeof needle, " .h%02d.example.com", i);
                ck_assert_ptr_nonnull(strstr(text, needle));
                free(entries[i]);
        }
        for (const char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1)
                ck_assert_int_lt(nl - p, 1024);
        free(text);
}
END_TEST

START_TEST(test_squid_config_refused)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "example.com", "--allow", NULL), 0);
        const squid_options bad[] = {
                { .port = 0 },
                { .port = 65536 },
                { .port = 3128, .hosts_file = "relative/hosts" },
                { .port = 3128, .access_log = "/var/log/x\nhttp_access allow all" },
                { .port = 3128, .cache_log = "/var/log/a b" },
                { .port = 3128, .hosts_file = "/etc/hosts#" },
                { .port = 3128, .add_hosts = (const char *const[]) { "bad name:127.0.0.1", NULL } },
                { .port = 3128, .add_hosts = (const char *const[]) { "gate.test:1.2.3", NULL } },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *text = NULL;
                aisb_error *err = NULL;
                ck_assert_int_eq(gate_squid_config(&l, &bad[i], &text, &err), -EINVAL);
                ck_assert_ptr_null(text);
                ck_assert_ptr_nonnull(err);
                aisb_error_free(err);
        }
        allowlist_done(&l);
}
END_TEST

/* ---- method and path rules ---- */

START_TEST(test_rules_entries)
{
        static const struct {
                const char *text, *host, *rules, *written;
                unsigned port, methods;
        } cases[] = {
                { "api.github.com GET /repos/acme/", "api.github.com", "GET /repos/acme/",
                  "api.github.com GET /repos/acme/", 0, ALLOW_METHOD_GET },
                { "Api.GitHub.com.  read-only", "api.github.com", "GET,HEAD,OPTIONS",
                  "api.github.com GET,HEAD,OPTIONS", 0, ALLOW_METHODS_READ_ONLY },
                /* Methods in a fixed order, repeats left out; paths in the order given. */
                { "example.com POST,GET\tDELETE /b /a /b", "example.com", "GET,POST,DELETE /b /a",
                  "example.com GET,POST,DELETE /b /a", 0, ALLOW_METHOD_GET | ALLOW_METHOD_POST | ALLOW_METHOD_DELETE },
                { "example.com:8443 /x", "example.com", "/x", "example.com:8443 /x", 8443, 0 },
                { "example.com read-only PATCH /~u/a+b", "example.com", "GET,HEAD,OPTIONS,PATCH /~u/a+b",
                  "example.com GET,HEAD,OPTIONS,PATCH /~u/a+b", 0, ALLOW_METHODS_READ_ONLY | ALLOW_METHOD_PATCH },
                /* No rule words: every request, as before. */
                { "example.com ", "example.com", NULL, "example.com", 0, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                allowlist l = {};
                aisb_error *err = NULL;
                ck_assert_msg(allowlist_add(&l, cases[i].text, "--allow", &err) == 0, "'%s': %s", cases[i].text,
                              aisb_error_message(err));
                const allow_entry *e = &l.entries[0];
                ck_assert_str_eq(e->host, cases[i].host);
                ck_assert_uint_eq(e->port, cases[i].port);
                ck_assert_uint_eq(e->methods, cases[i].methods);
                if (cases[i].rules)
                        ck_assert_str_eq(e->rules, cases[i].rules);
                else
                        ck_assert_ptr_null(e->rules);
                char *text = NULL;
                ck_assert_int_eq(allowlist_entry_text(e, &text), 0);
                ck_assert_str_eq(text, cases[i].written);
                /* What is written is read back the same. */
                allowlist again = {};
                ck_assert_int_eq(allowlist_add(&again, text, "--allow", NULL), 0);
                ck_assert_str_eq(again.entries[0].rules ? again.entries[0].rules : "", e->rules ? e->rules : "");
                free(text);
                allowlist_done(&again);
                allowlist_done(&l);
        }
        /* Sixteen paths, not seventeen; a path of 128 characters, not 129. */
        char many[17 * 4 + 16] = "example.com";
        for (int i = 0; i < 16; i++)
                snprintf(many + strlen(many), sizeof many - strlen(many), " /%c", 'a' + i);
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, many, "--allow", NULL), 0);
        allowlist_done(&l);
        strcat(many, " /z");
        expect_refused(many, "more than 16 paths");
        char long_path[160] = "example.com /";
        memset(long_path + strlen(long_path), 'p', 127);
        ck_assert_int_eq(allowlist_add(&l, long_path, "--allow", NULL), 0);
        allowlist_done(&l);
        strcat(long_path, "p");
        expect_refused(long_path, "longer than 128");
}
END_TEST

START_TEST(test_path_odd)
{
        /* Decoded once, as squid decodes a path before it matches it. */
        static const char *const odd[] = {
                "/a/../b", "/a/..", "/..", "/a/./b", "/a/.", "/a/%2e%2e/b", "/a/%2E./b", "/a/.%2e",
                "/a/%2e/b", "/a/..;x", "/a/..?q", "/a/..#f", "/a%5cb", "/a\\b",
                /* the query too: a %3f decoded is no end of the path to a server */
                "/a/x%3f/../../b", "/a?p=/../",
                /* encoded twice */
                "/a/%252e%252e/b", "/a%252fb", "/a%255cb",
                /* what some servers read as a dot segment: dots and blanks after it (Windows),
                 * a NUL that ends it, IIS's %u, overlong and wide forms, controls */
                "/a/.../b", "/a/..%20/b", "/a/.. ", "/a/..%00/b", "/a/%u002e%u002e/b", "/a/%U005cb",
                "/a/%c0%ae%c0%ae/b", "/a/%ef%bc%8e%ef%bc%8e/b", "/a/.\x0b./b", "/a/b\x7f",
        };
        static const char *const plain[] = {
                "/", "/a/b", "/a/.b", "/a/b.", "/a/..b", "/a/b?x=%2f", "/a?../", "/a/b%20c", "/a/~u/x+y",
                "/a%2fb", "/a%2Fb/c", "/a%20b", "/a%2", "/a%", "",
        };
        for (size_t i = 0; i < ELEMENTSOF(odd); i++)
                ck_assert_msg(allowlist_path_odd(odd[i]), "'%s' not odd", odd[i]);
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                ck_assert_msg(!allowlist_path_odd(plain[i]), "'%s' odd", plain[i]);
}
END_TEST

START_TEST(test_request_allows)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "api.github.com GET,HEAD /repos/acme/ /user", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "example.com", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_add(&l, "ro.test:8443 read-only", "--allow", NULL), 0);
        static const struct {
                const char *host;
                unsigned port;
                const char *method, *path;
                bool allowed;
        } cases[] = {
                { "api.github.com", 443, "GET", "/repos/acme/x", true },
                { "API.github.com.", 80, "HEAD", "/user", true },
                { "api.github.com", 443, "GET", "/users/other", true }, /* "/user" is a prefix */
                { "deep.api.github.com", 443, "GET", "/repos/acme/", true },
                { "api.github.com", 443, "POST", "/repos/acme/x", false },
                { "api.github.com", 443, "get", "/repos/acme/x", false },
                { "api.github.com", 443, "GET", "/repos/other/x", false },
                { "api.github.com", 443, "GET", "/repos/acme", false },
                { "api.github.com", 443, "GET", "/repos/acme/../../orgs/x", false },
                { "api.github.com", 443, "GET", "/repos/acme/%2e%2e/x", false },
                { "api.github.com", 443, "GET", "/repos/acme/a%2Fb", true }, /* as squid: decoded */
                { "api.github.com", 443, "GET", "/repos%2facme/x", true },
                { "api.github.com", 443, "GET", "/rep%6fs/acme/x", true },
                { "api.github.com", 443, "GET", "/repos/acme/x%3f/../../orgs", false },
                { "api.github.com", 443, "GET", "/repos/acme/%252e%252e/orgs", false },
                { "api.github.com", 443, "GET", "/repos/acme/x?q=a%2Fb", true },
                { "api.github.com", 443, NULL, NULL, true }, /* a CONNECT: decided inside */
                { "api.github.com", 8443, NULL, NULL, false },
                { "github.com", 443, "GET", "/repos/acme/", false },
                { "example.com", 443, "DELETE", "/../anything", true }, /* no rules: everything */
                { "ro.test", 8443, "OPTIONS", "/", true },
                { "ro.test", 8443, "PUT", "/", false },
                { "ro.test", 443, "GET", "/", false },
                { "other.test", 443, NULL, NULL, false },
                { "bad name", 443, "GET", "/", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ck_assert_msg(allowlist_request_allows(&l, cases[i].host, cases[i].port, cases[i].method,
                                                       cases[i].path) == cases[i].allowed,
                              "%s %s:%u%s", cases[i].method ? cases[i].method : "CONNECT", cases[i].host,
                              cases[i].port, cases[i].path ? cases[i].path : "");
        allowlist_done(&l);
}
END_TEST

/* The squid.conf of a gate with rules: the host intercepted, each request checked against
 * its methods and paths, odd paths refused there, the refusal page saying why. */
START_TEST(test_squid_config_rules)
{
        static const char *const entries[] = { "api.github.com GET,HEAD /repos/acme/ /a+b.c", "example.com", NULL };
        squid_options o = { .port = 3128, .bump_cert = "/g/tls/ca.pem", .bump_key = "/g/tls/ca.key",
                            .bump_db = "/tmp/certs", .tunnel_helper = "/g/config/tunnel.awk" };
        char *text = squid_config(entries, &o);
        static const char *const expected[] = {
                "http_port 127.0.0.1:3128 ssl-bump tls-cert=/g/tls/ca.pem tls-key=/g/tls/ca.key "
                "generate-host-certificates=on dynamic_cert_mem_cache_size=4MB",
                /* an overloaded certificate helper fails handshakes; squid does not exit */
                "sslcrtd_children 3 startup=1 idle=1 queue-size=1024 on-persistent-overload=ERR",
                "acl aisb_rule0_dst dstdomain -n .api.github.com",
                "acl aisb_rule0_port port 80 443",
                "acl aisb_rule0_method method GET HEAD",
                "acl aisb_rule0_path urlpath_regex ^/repos/acme/ ^/a\\+b\\.c",
                "acl aisb_rule_hosts dstdomain -n .api.github.com",
                "acl aisb_bump dstdomain -n .api.github.com",
                "acl aisb_bump_sni ssl::server_name_regex --client-requested -i (^|\\.)api\\.github\\.com\\.?$",
                "acl aisb_step1 at_step SslBump1",
                "ssl_bump peek aisb_step1",
                "ssl_bump terminate !aisb_bump aisb_bump_sni",
                "acl aisb_plain_sni ssl::server_name --client-requested .example.com",
                "ssl_bump splice !aisb_bump aisb_plain_sni",
                /* a connection the gate opens is marked with where it goes, at the decision */
                "acl aisb_mark_tunnel annotate_client aisb_tunnel=\"%>rd:%>rP\"",
                "ssl_bump bump all aisb_mark_tunnel",
                "acl aisb_tunneled note aisb_tunnel",
                "external_acl_type aisb_tunnel ttl=0 negative_ttl=0 cache=0 children-max=1 children-startup=1 "
                "concurrency=32 queue-size=4096 %{aisb_tunnel}note %>rm %>rs %>rd %>rP %ssl::>sni "
                "/usr/bin/mawk -W interactive -f /g/config/tunnel.awk",
                "acl aisb_astray external aisb_tunnel",
                "deny_info ERR_AISB_ASTRAY aisb_astray",
                /* plain HTTP in a CONNECT: refused to the host with rules, tunnelled elsewhere */
                "on_unsupported_protocol tunnel !aisb_rule_hosts",
                "acl aisb_trace method TRACE",
                "deny_info ERR_AISB_TRACE aisb_trace",
                "request_header_access X-Original-Method deny aisb_rule_hosts",
                "deny_info ERR_AISB_RULE aisb_rule_hosts",
                "deny_info ERR_AISB_RULE aisb_path_odd",
                "request_header_access X-HTTP-Method-Override deny aisb_rule_hosts",
                "acl aisb_path_odd urlpath_regex -i /\\.\\.?[.[:space:]]*(/|\\?|;|#|$) \\\\ %(00|2e|2f|5c|u) [^[:print:]]",
                /* path overrides, and a body where a method carries none */
                "request_header_access X-Original-URL deny aisb_rule_hosts",
                "request_header_access X-Rewrite-URL deny aisb_rule_hosts",
                "request_header_access X-Forwarded-Prefix deny aisb_rule_hosts",
                "request_header_access X-Envoy-Original-Path deny aisb_rule_hosts",
                "acl aisb_bodiless method GET HEAD OPTIONS",
                "acl aisb_body_length req_header Content-Length [1-9]",
                "acl aisb_body_chunked req_header Transfer-Encoding .",
                "deny_info ERR_AISB_RULE aisb_body_length",
        };
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_msg(has_line(text, expected[i]), "no line '%s' in:\n%s", expected[i], text);
        /* The host with rules is in no plain allow. */
        ck_assert(has_line(text, "acl aisb_dst_web dstdomain -n .example.com"));
        char **rules = http_access_lines(text);
        static const char *const expected_rules[] = {
                "http_access deny manager",
                "http_access deny !aisb_clients",
                "http_access deny aisb_ip_literal",
                "http_access deny !aisb_connect !aisb_schemes",
                "http_access deny aisb_tunneled aisb_astray",
                "http_access deny aisb_rule_hosts aisb_trace",
                "http_access deny !aisb_ports",
                "http_access deny !aisb_listed",
                "http_access deny aisb_local_dst",
                "http_access allow aisb_dst_web aisb_port_web",
                "http_access deny aisb_rule_hosts aisb_path_odd",
                "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_length",
                "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_chunked",
                "http_access allow aisb_connect aisb_rule0_dst aisb_rule0_port",
                "http_access allow !aisb_connect aisb_rule0_dst aisb_rule0_port aisb_rule0_method aisb_rule0_path",
                "http_access deny aisb_rule_hosts",
                "http_access deny all",
        };
        ck_assert_uint_eq(strv_length((const char *const *) rules), ELEMENTSOF(expected_rules));
        for (size_t i = 0; i < ELEMENTSOF(expected_rules); i++)
                ck_assert_str_eq(rules[i], expected_rules[i]);
        strv_free(rules);
        free(text);

        /* Without rules or secrets nothing is intercepted and no CA is needed. */
        static const char *const plain[] = { "example.com", NULL };
        squid_options bare = { .port = 3128 };
        text = squid_config(plain, &bare);
        ck_assert(has_line(text, "http_port 127.0.0.1:3128"));
        ck_assert_ptr_null(strstr(text, "ssl_bump"));
        ck_assert_ptr_null(strstr(text, "aisb_path_odd"));
        free(text);
        /* With rules and no CA: refused, not a gate that silently cannot see the requests. */
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "api.github.com GET", "--allow", NULL), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(gate_squid_config(&l, &bare, &text, &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err), "the gate must intercept TLS here but has no CA");
        aisb_error_free(err);
        allowlist_done(&l);
}
END_TEST

/* The tunnel helper's verdicts, from mawk itself (the gate image's awk, Debian's on the host):
 * a request inside a connection the gate opened passes only to where that connection goes,
 * over https, with no other server named in the TLS hello; OK refuses. */
START_TEST(test_tunnel_helper)
{
        if (access("/usr/bin/mawk", X_OK) < 0) {
                /* scripts/setup installs it; a unit run without it cannot judge the helper. */
                ck_abort_msg("/usr/bin/mawk is missing (scripts/setup installs it)");
        }
        static const struct {
                const char *line, *answer;
        } cases[] = {
                { "0 api.test:443 GET https api.test 443 api.test -", "0 ERR" },
                { "1 api.test:443 POST https api.test 443 - -", "1 ERR" },          /* no hello name */
                { "2 api.test:443 GET https API.Test 443 API.TEST. -", "2 ERR" },   /* case, a trailing dot */
                { "3 evil.test:443 POST https api.test 443 - -", "3 OK" },          /* Host names another */
                { "4 api.test:443 GET https api.test 8443 api.test -", "4 OK" },    /* another port */
                { "5 api.test:8443 GET https api.test 443 api.test -", "5 OK" },
                { "6 api.test:443 GET http api.test 443 api.test -", "6 OK" },      /* http:// inside */
                { "7 api.test:443 CONNECT authority_form api.test 443 - -", "7 OK" }, /* a tunnel inside */
                { "8 evil.test:443 GET https evil.test 443 api.test -", "8 OK" },   /* hello names another */
                { "9 xapi.test:443 GET https api.test 443 - -", "9 OK" },           /* a suffix is another */
                { "10 api.test:443 GET https api.test.evil.test 443 - -", "10 OK" },
                { "11 api.test:443 GET", "11 OK" },                                  /* short: refused */
                { "12 api.test:443 GET https api.test 443 evil.test. -", "12 OK" },
        };
        char prog[] = "/tmp/aisb-tunnel-helper.XXXXXX", input[] = "/tmp/aisb-tunnel-input.XXXXXX";
        int pfd = mkstemp(prog), ifd = mkstemp(input);
        ck_assert_int_ge(pfd, 0);
        ck_assert_int_ge(ifd, 0);
        ck_assert_int_eq(write_all(pfd, gate_squid_tunnel_helper, strlen(gate_squid_tunnel_helper)), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ck_assert_int_eq(write_all(ifd, cases[i].line, strlen(cases[i].line)), 0);
                ck_assert_int_eq(write_all(ifd, "\n", 1), 0);
        }
        close(pfd);
        close(ifd);
        char *command = NULL;
        ck_assert_int_ge(asprintf(&command, GATE_TUNNEL_HELPER_AWK " %s < %s", prog, input), 0);
        FILE *out = popen(command, "r");
        ck_assert_ptr_nonnull(out);
        char line[128];
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ck_assert_msg(fgets(line, sizeof line, out), "no answer to '%s'", cases[i].line);
                line[strcspn(line, "\n")] = 0;
                ck_assert_msg(streq(line, cases[i].answer), "'%s': '%s', not '%s'", cases[i].line, line,
                              cases[i].answer);
        }
        ck_assert_ptr_null(fgets(line, sizeof line, out));
        ck_assert_int_eq(pclose(out), 0);
        free(command);
        unlink(prog);
        unlink(input);
}
END_TEST

/* --secret's syntax, the header each known host gets, and the values squid could misread. */
START_TEST(test_secret_parse)
{
        static const struct {
                const char *spec, *hosts, *header, *scheme;
        } valid[] = {
                { "K@api.anthropic.com", "api.anthropic.com", "x-api-key", NULL },
                { "K@api.openai.com", "api.openai.com", "Authorization", "Bearer" },
                { "K@generativelanguage.googleapis.com", "generativelanguage.googleapis.com", "x-goog-api-key", NULL },
                { "K@unknown.test", "unknown.test", "Authorization", "Bearer" },
                { "K@Api.Example.COM.,other.test/X-Token", "api.example.com other.test", "X-Token", NULL },
                { "GH_TOKEN@api.github.com/Authorization:token", "api.github.com", "Authorization", "token" },
        };
        char why[256];
        for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
                gate_secret g = {}, again = {};
                int r = gate_secret_parse(valid[i].spec, "sk-value_1.2", &g, why, sizeof why);
                ck_assert_msg(r == 0, "'%s': %s", valid[i].spec, why);
                buffer hosts = {};
                for (size_t k = 0; g.hosts[k]; k++)
                        ck_assert_int_ge(buffer_printf(&hosts, "%s%s", k ? " " : "", g.hosts[k]), 0);
                ck_assert_str_eq(hosts.data, valid[i].hosts);
                buffer_free(&hosts);
                ck_assert_str_eq(g.header, valid[i].header);
                ck_assert_str_eq(g.scheme ? g.scheme : "(none)", valid[i].scheme ? valid[i].scheme : "(none)");
                ck_assert_str_eq(g.value, "sk-value_1.2");
                ck_assert_uint_eq(strlen(g.placeholder), strlen("aisb-secret-") + 32);
                ck_assert(startswith(g.placeholder, "aisb-secret-"));
                ck_assert_uint_eq(strspn(g.placeholder + 12, "0123456789abcdef"), 32);
                /* A placeholder is the run's own. */
                ck_assert_int_eq(gate_secret_parse(valid[i].spec, "sk-value_1.2", &again, why, sizeof why), 0);
                ck_assert_str_ne(g.placeholder, again.placeholder);
                gate_secret_done(&again);
                gate_secret_done(&g);
                ck_assert_ptr_null(g.value);
        }
        static const struct {
                const char *spec, *value, *needle;
        } invalid[] = {
                { "K", "v", "expected NAME@HOST" },
                { "@a.test", "v", "expected NAME@HOST" },
                { "K@", "v", "no host after '@'" },
                { "K@,", "v", "no host after '@'" },
                { "K@*.a.test", "v", "is no host name" },
                { "K@a.test:443", "v", "is no host name" },
                { "K@10.0.0.1", "v", "is no host name" },
                { "K@a.test/X Y", "v", "is no header name" },
                { "K@a.test/", "v", "is no header name" },
                { "K@a.test/X:Bear er", "v", "is no scheme" },
                { "K@a.test/X:", "v", "is no scheme" },
                { "K@a.test/host", "v", "Host is no header for a credential" },
                { "K@a.test/Proxy-Authorization:Basic", "v", "Proxy-Authorization is no header" },
                { "K@a.test/content-length", "v", "Content-Length is no header" },
                { "K@a.test", "", "K is empty" },
                { "K@a.test", NULL, "K is empty" },
                { "K@a.test", "a b", "a character the gate cannot put" },
                { "K@a.test", "a\"b", "a character the gate cannot put" },
                { "K@a.test", "a%b", "a character the gate cannot put" },
                { "K@a.test", "a\\b", "a character the gate cannot put" },
                { "K@a.test", "a'b", "a character the gate cannot put" },
                { "K@a.test", "a\nhttp_access allow all", "a character the gate cannot put" },
                { "K@a.test", "\xc3\xa9", "a character the gate cannot put" },
        };
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
                gate_secret g = {};
                why[0] = 0;
                ck_assert_msg(gate_secret_parse(invalid[i].spec, invalid[i].value, &g, why, sizeof why) == -EINVAL,
                              "'%s' accepted", invalid[i].spec);
                ck_assert_msg(strstr(why, invalid[i].needle), "'%s': '%s' lacks '%s'", invalid[i].spec, why,
                              invalid[i].needle);
                ck_assert_ptr_null(g.value);
        }
        char *long_value = malloc(4098);
        memset(long_value, 'v', 4097);
        long_value[4097] = 0;
        gate_secret g = {};
        ck_assert_int_eq(gate_secret_parse("K@a.test", long_value, &g, why, sizeof why), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "longer than 4096"));
        long_value[4096] = 0;
        ck_assert_int_eq(gate_secret_parse("K@a.test", long_value, &g, why, sizeof why), 0);
        gate_secret_done(&g);
        free(long_value);
}
END_TEST

/* A gate holding secrets: the header replaced for their hosts over HTTPS only, those hosts
 * intercepted exactly (no names below them), and only clients with the run's key served. */
START_TEST(test_squid_config_secrets)
{
        char why[256];
        gate_secret g = {};
        ck_assert_int_eq(gate_secret_parse("K@api.openai.com,b.test", "sk-123", &g, why, sizeof why), 0);
        static const char *const entries[] = { "api.openai.com", "b.test", NULL };
        squid_options o = { .port = 3128, .bump_cert = "/g/c", .bump_key = "/g/k", .bump_db = "/tmp/d",
                            .tunnel_helper = "/g/t", .secrets = &g, .n_secrets = 1,
                            .client_key = "00ff00ff00ff00ff00ff00ff00ff00fe" };
        char *text = squid_config(entries, &o);
        static const char *const expected[] = {
                "acl aisb_https proto HTTPS",
                "acl aisb_secret0 dstdomain -n api.openai.com b.test",
                "request_header_access Authorization deny aisb_secret0",
                "request_header_add Authorization \"Bearer sk-123\" aisb_secret0 aisb_https",
                "acl aisb_bump dstdomain -n api.openai.com b.test",
                "acl aisb_bump_sni ssl::server_name_regex --client-requested -i ^api\\.openai\\.com\\.?$ ^b\\.test\\.?$",
                "ssl_bump splice !aisb_bump aisb_plain_sni",
                "acl aisb_trusted any-of aisb_keyed aisb_key",
                "access_log stdio:/var/log/squid/access.log logformat=aisb aisb_trusted",
                /* base64 of "aisb:00ff00ff00ff00ff00ff00ff00ff00fe" */
                "acl aisb_key req_header Proxy-Authorization "
                "^Basic[[:blank:]]+YWlzYjowMGZmMDBmZjAwZmYwMGZmMDBmZjAwZmYwMGZmMDBmZQ==$",
                "acl aisb_keyed note aisb_keyed yes",
                "acl aisb_mark_keyed annotate_client aisb_keyed=yes",
                "request_header_access Proxy-Authorization deny all",
                "acl aisb_trace method TRACE",
                /* plain HTTP in a CONNECT: no host has rules, so every one is tunnelled */
                "on_unsupported_protocol tunnel all",
        };
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_msg(has_line(text, expected[i]), "no line '%s' in:\n%s", expected[i], text);
        ck_assert_ptr_null(strstr(text, "!aisb_rule_hosts"));
        char **rules = http_access_lines(text);
        ck_assert_str_eq(rules[0], "http_access deny manager");
        ck_assert_str_eq(rules[1], "http_access deny !aisb_clients");
        ck_assert_str_eq(rules[2], "http_access deny !aisb_keyed !aisb_key");
        ck_assert_str_eq(rules[3], "http_access deny aisb_key aisb_mark_keyed !all");
        /* After the key (no stranger reaches the helper), before anything is allowed: a
         * request inside an opened connection goes only where that connection goes; TRACE
         * is refused where the secret would be added. */
        size_t astray_at = SIZE_MAX, trace_at = SIZE_MAX;
        for (size_t i = 0; rules[i]; i++) {
                if (streq(rules[i], "http_access deny aisb_tunneled aisb_astray"))
                        astray_at = i;
                else if (streq(rules[i], "http_access deny aisb_secret0 aisb_trace"))
                        trace_at = i;
                else
                        ck_assert_msg(!startswith(rules[i], "http_access allow") ||
                                              (astray_at != SIZE_MAX && trace_at != SIZE_MAX),
                                      "'%s' before the tunnel's and TRACE's rules", rules[i]);
        }
        ck_assert_uint_gt(astray_at, 3);
        ck_assert_uint_ne(trace_at, SIZE_MAX);
        strv_free(rules);
        free(text);
        /* Intercepting with no tunnel helper: refused, never a gate that sends a request
         * where its Host says. */
        squid_options no_helper = o;
        no_helper.tunnel_helper = NULL;
        allowlist one = {};
        ck_assert_int_eq(allowlist_add(&one, "api.openai.com", "--allow", NULL), 0);
        aisb_error *helper_err = NULL;
        text = NULL;
        ck_assert_int_eq(gate_squid_config(&one, &no_helper, &text, &helper_err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(helper_err), "the gate must intercept TLS here but has no tunnel helper");
        aisb_error_free(helper_err);
        allowlist_done(&one);

        /* A run's own gate: its helper is asked after the key is checked (a client without
         * it must not fill the helper's queue) and before anything is allowed; none of its
         * answers is kept (a kept "not held" would serve on after the run is gone). */
        squid_options held = o;
        held.held_helper = "/aisb-gate/config/held.sh";
        text = squid_config(entries, &held);
        ck_assert_msg(has_line(text, "external_acl_type aisb_held ttl=0 negative_ttl=0 cache=0 children-max=1 "
                                     "children-startup=1 concurrency=32 queue-size=4096 %>a /bin/sh "
                                     "/aisb-gate/config/held.sh"), "%s", text);
        ck_assert(has_line(text, "acl aisb_held external aisb_held"));
        ck_assert(has_line(text, "deny_info ERR_AISB_HELD aisb_held"));
        rules = http_access_lines(text);
        size_t held_at = SIZE_MAX;
        for (size_t i = 0; rules[i]; i++) {
                if (streq(rules[i], "http_access deny aisb_held"))
                        held_at = i;
                else
                        ck_assert_msg(!startswith(rules[i], "http_access allow") || held_at != SIZE_MAX,
                                      "'%s' before the held rule", rules[i]);
        }
        ck_assert_uint_ne(held_at, SIZE_MAX);
        ck_assert_uint_gt(held_at, 3);
        ck_assert_str_eq(rules[3], "http_access deny aisb_key aisb_mark_keyed !all");
        strv_free(rules);
        free(text);
        held.held_helper = "/aisb-gate/config/held.sh -c x";
        allowlist held_list = {};
        ck_assert_int_eq(allowlist_add(&held_list, "api.openai.com", "--allow", NULL), 0);
        aisb_error *held_err = NULL;
        text = NULL;
        ck_assert_int_eq(gate_squid_config(&held_list, &held, &text, &held_err), -EINVAL);
        ck_assert_ptr_null(text);
        aisb_error_free(held_err);
        allowlist_done(&held_list);

        /* A bad key is refused; no key, no key lines. */
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "api.openai.com", "--allow", NULL), 0);
        static const char *const bad_keys[] = { "", "00FF", "0 1", "0\nhttp_access allow all", "g" };
        for (size_t i = 0; i < ELEMENTSOF(bad_keys); i++) {
                squid_options so = o;
                so.client_key = bad_keys[i];
                aisb_error *err = NULL;
                text = NULL;
                ck_assert_msg(gate_squid_config(&l, &so, &text, &err) == -EINVAL, "key '%s' accepted", bad_keys[i]);
                ck_assert_ptr_null(text);
                aisb_error_free(err);
        }
        o.client_key = NULL;
        ck_assert_int_eq(gate_squid_config(&l, &o, &text, NULL), 0);
        ck_assert_ptr_null(strstr(text, "aisb_key"));
        ck_assert_ptr_null(strstr(text, "Proxy-Authorization"));
        ck_assert(has_line(text, "access_log stdio:/var/log/squid/access.log logformat=aisb"));
        free(text);
        allowlist_done(&l);
        gate_secret_done(&g);

        /* A secret for a host that has rules, and rules on a name and a name below it: each
         * name once in each list, none below another (squid refuses such a list). */
        ck_assert_int_eq(gate_secret_parse("K@api.github.com", "v", &g, why, sizeof why), 0);
        static const char *const overlap[] = { "api.github.com GET /repos/", "github.com read-only",
                                               "api.github.com POST /gists", NULL };
        squid_options so = { .port = 3128, .bump_cert = "/g/c", .bump_key = "/g/k", .bump_db = "/tmp/d",
                             .tunnel_helper = "/g/t", .secrets = &g, .n_secrets = 1 };
        text = squid_config(overlap, &so);
        ck_assert(has_line(text, "acl aisb_bump dstdomain -n .github.com"));
        ck_assert(has_line(text, "acl aisb_rule_hosts dstdomain -n .github.com"));
        ck_assert_ptr_null(strstr(text, "ssl::server_name --client-requested")); /* no entry without rules */
        free(text);
        gate_secret_done(&g);
}
END_TEST

/* ---- the gate's access log, counted ---- */

/* Real lines, written by Debian's squid 5.7 and 6.13 with this logformat, for the same
 * requests: a liveness probe; a refused name (GET and CONNECT); a listed name over GET and
 * CONNECT; a listed name on a port nothing listens on (GET, CONNECT); a listed name that does
 * not resolve (GET, CONNECT); the client gone before the answer and in the middle of it; a
 * tunnel the client closed; the origin's own 503; another probe; a request squid could not
 * parse. */
static const char *const squid_logs[] = {
                "1796136537.564 127.0.0.1 - -:- 0 NONE_NONE 0 ERR_CLIENT_GONE error:transaction-end-before-headers\n"
                "1796136537.571 127.0.0.1 GET denied.test:80 403 TCP_DENIED 1550 ERR_ACCESS_DENIED http://denied.test/\n"
                "1796136537.578 127.0.0.1 GET ok.test:41441 200 TCP_MISS 6211 - http://ok.test:41441/\n"
                "1796136537.584 127.0.0.1 CONNECT ok.test:41441 200 TCP_TUNNEL 6153 - ok.test:41441\n"
                "1796136537.589 127.0.0.1 GET ok.test:41442 503 TCP_MISS 1573 ERR_CONNECT_FAIL http://ok.test:41442/\n"
                "1796136537.597 127.0.0.1 CONNECT ok.test:41442 503 NONE_NONE 0 ERR_CONNECT_FAIL ok.test:41442\n"
                "1796136537.603 127.0.0.1 GET nodns.aisb.test:41441 502 TCP_MISS 1559 ERR_READ_ERROR http://nodns.aisb.test:41441/\n"
                "1796136537.611 127.0.0.1 CONNECT nodns.aisb.test:41441 500 NONE_NONE 0 ERR_CANNOT_FORWARD nodns.aisb.test:41441\n"
                "1796136538.618 127.0.0.1 GET ok.test:41441 0 TCP_MISS_ABORTED 0 ERR_CLIENT_GONE http://ok.test:41441/slow\n"
                "1796136539.627 127.0.0.1 GET ok.test:41441 200 TCP_MISS_ABORTED 311 ERR_CLIENT_GONE http://ok.test:41441/half\n"
                "1796136540.637 127.0.0.1 CONNECT ok.test:41441 200 TCP_TUNNEL 39 - ok.test:41441\n"
                "1796136540.645 127.0.0.1 CONNECT denied.test:443 403 TCP_DENIED 1554 ERR_ACCESS_DENIED denied.test:443\n"
                "1796136540.654 127.0.0.1 GET ok.test:41441 503 TCP_MISS 225 - http://ok.test:41441/err503\n"
                "1796136540.655 127.0.0.1 - -:- 0 NONE_NONE 0 ERR_CLIENT_GONE error:transaction-end-before-headers\n"
                "1796136540.676 127.0.0.1 garbage -:- 400 NONE_NONE 1519 - error:invalid-request\n",
                "1796136550.224 127.0.0.1 - -:- 0 NONE_NONE 0 ERR_CLIENT_GONE error:transaction-end-before-headers\n"
                "1796136550.231 127.0.0.1 GET denied.test:80 403 TCP_DENIED 3338 ERR_ACCESS_DENIED http://denied.test/\n"
                "1796136550.273 127.0.0.1 GET ok.test:41741 200 TCP_MISS 6179 - http://ok.test:41741/\n"
                "1796136550.283 127.0.0.1 CONNECT ok.test:41741 200 TCP_TUNNEL 6153 - ok.test:41741\n"
                "1796136550.293 127.0.0.1 GET ok.test:41742 503 TCP_MISS_ABORTED 3377 ERR_CONNECT_FAIL http://ok.test:41742/\n"
                "1796136550.300 127.0.0.1 CONNECT ok.test:41742 503 TCP_TUNNEL 0 ERR_CONNECT_FAIL ok.test:41742\n"
                "1796136550.343 127.0.0.1 GET nodns.aisb.test:41741 503 TCP_MISS_ABORTED 3515 ERR_DNS_FAIL http://nodns.aisb.test:41741/\n"
                "1796136550.391 127.0.0.1 CONNECT nodns.aisb.test:41741 503 TCP_TUNNEL 0 ERR_DNS_FAIL nodns.aisb.test:41741\n"
                "1796136551.415 127.0.0.1 GET ok.test:41741 0 TCP_MISS_ABORTED 0 ERR_CLIENT_GONE http://ok.test:41741/slow\n"
                "1796136552.422 127.0.0.1 GET ok.test:41741 200 TCP_MISS_ABORTED 279 ERR_CLIENT_GONE http://ok.test:41741/half\n"
                "1796136553.432 127.0.0.1 CONNECT ok.test:41741 200 TCP_TUNNEL 39 - ok.test:41741\n"
                "1796136553.442 127.0.0.1 CONNECT denied.test:443 403 TCP_DENIED 3342 ERR_ACCESS_DENIED denied.test:443\n"
                "1796136553.456 127.0.0.1 GET ok.test:41741 503 TCP_MISS 193 - http://ok.test:41741/err503\n"
                "1796136553.461 127.0.0.1 - -:- 0 NONE_NONE 0 ERR_CLIENT_GONE error:transaction-end-before-headers\n"
                "1796136553.533 127.0.0.1 - -:- 400 NONE_NONE 3307 ERR_PROTOCOL_UNKNOWN error:invalid-request\n",
};

/* Every shape of squid.conf against its golden file in tests/unit/squid/, byte for byte:
 * the generator may be rearranged, its text must stay the same. AISB_WRITE_GOLDEN=1 writes
 * the files instead (to capture a deliberate change). */
static void expect_squid_golden(const char *name, const char *const *entries, const squid_options *o)
{
        char *text = squid_config(entries, o);
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/unit/squid/%s.conf", getenv("AISB_SRC"), name);
        if (getenv("AISB_WRITE_GOLDEN")) {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
                ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
                close(fd);
                free(text);
                return;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        char *want = NULL;
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &want, NULL), 0);
        close(fd);
        if (!streq(text, want)) {
                char got[] = "/tmp/aisb-squid-got.XXXXXX";
                int out = mkstemp(got);
                if (out >= 0) {
                        (void) write_all(out, text, strlen(text));
                        close(out);
                }
                ck_abort_msg("%s.conf differs; what was made is in %s", name, got);
        }
        free(text);
        free(want);
}

START_TEST(test_squid_config_golden)
{
        static const char *const none[] = { NULL };
        static const char *const plain[] = { "example.com", "*.github.com", "api.github.com", "pypi.org",
                                             "files.pythonhosted.org", "Example.COM.", NULL };
        static const char *const ports[] = { "example.com",       "example.com:8443", "git.example.org:22",
                                             "a.example.net:443", "b.example.net:80", "*.z.example:8080",
                                             "y.example:8080",    "c.example.net:22", NULL };
        static const char *const only_ports[] = { "example.com:8443", "x.example.org:8443", "x.example.org:22", NULL };
        static const char *const addresses[] = { "example.com", "192.0.2.2", "198.51.100.0/24:5432", "[2001:db8::1]:443",
                                                 "2001:db8::/48", NULL };
        static const char *const many[] = { "a1.example", "a2.example", "a3.example", "a4.example", "a5.example",
                                            "a6.example", "a7.example", "a8.example", "a9.example", "b1.example",
                                            "b2.example", "b3.example", "b4.example", "b5.example", "b6.example",
                                            "b7.example", "b8.example", "b9.example", NULL };
        static const char *const rules[] = { "api.github.com GET,HEAD /repos/acme/ /a+b.c", "example.com",
                                             "github.com read-only", "api.github.com POST /gists",
                                             "upload.example.org:8443 PUT /up/", "*.docs.example GET",
                                             "mirror.example.org:8443", NULL };
        static const char *const only_rules[] = { "api.example.com GET /v1/", NULL };
        static const char *const add_hosts[] = { "registry.internal:10.0.0.5", "db.internal:192.168.1.9",
                                                 "registry.internal:10.0.0.5", "v6.internal:fd00::7", NULL };
        static const char *const host_addresses[] = { "203.0.113.7", "10.1.2.3", "2001:db8::99", "203.0.113.7",
                                                      "::1", "2001:0db8:0000::0099", "198.51.100.1", "198.51.100.2",
                                                      "198.51.100.3", "198.51.100.4", "198.51.100.5", NULL };
        static char *openai_hosts[] = { (char *) "api.openai.com", (char *) "b.test", NULL };
        static char *github_hosts[] = { (char *) "api.github.com", NULL };
        static char *anthropic_hosts[] = { (char *) "api.anthropic.com", (char *) "example.com", NULL };
        const gate_secret secrets[] = {
                { .name = (char *) "K", .hosts = openai_hosts, .header = (char *) "Authorization",
                  .scheme = (char *) "Bearer", .value = (char *) "sk-123", .placeholder = (char *) "p1" },
                { .name = (char *) "G", .hosts = github_hosts, .header = (char *) "Authorization",
                  .scheme = (char *) "token", .value = (char *) "ghp_abc", .placeholder = (char *) "p2" },
                { .name = (char *) "A", .hosts = anthropic_hosts, .header = (char *) "x-api-key",
                  .value = (char *) "ant-xyz", .placeholder = (char *) "p3" },
        };
        static const char *const secret_entries[] = { "api.openai.com", "b.test", "api.anthropic.com", "example.com",
                                                      "pypi.org", NULL };
        const squid_options bump = { .port = 3128, .bump_cert = "/g/tls/ca.pem", .bump_key = "/g/tls/ca.key",
                                     .bump_db = "/tmp/certs", .tunnel_helper = "/g/config/tunnel.awk" };

        expect_squid_golden("empty", none, &(squid_options) { .port = 3128 });
        expect_squid_golden("empty-logs", none,
                            &(squid_options) { .port = 1, .access_log = "/tmp/log/a.log", .cache_log = "/tmp/log/c.log" });
        expect_squid_golden("plain", plain, &(squid_options) { .port = 3128 });
        expect_squid_golden("plain-cluster", plain, &(squid_options) { .port = 65535, .cluster = true });
        expect_squid_golden("ports", ports, &(squid_options) { .port = 3128 });
        expect_squid_golden("only-ports", only_ports, &(squid_options) { .port = 3128 });
        expect_squid_golden("addresses", addresses, &(squid_options) { .port = 3128 });
        expect_squid_golden("only-addresses", addresses + 1, &(squid_options) { .port = 3128 });
        expect_squid_golden("long-acl", many, &(squid_options) { .port = 3128 });
        expect_squid_golden("local", plain,
                            &(squid_options) { .port = 3128, .hosts_file = "/etc/aisb/hosts", .add_hosts = add_hosts,
                                               .host_addresses = host_addresses });
        expect_squid_golden("keyed", plain,
                            &(squid_options) { .port = 41000, .client_key = "00ff00ff00ff00ff00ff00ff00ff00fe",
                                               .access_log = "/g/logs/access.log", .cache_log = "/g/logs/cache.log" });
        expect_squid_golden("held", plain,
                            &(squid_options) { .port = 41000, .client_key = "0123456789abcdef",
                                               .held_helper = "/g/config/held.sh" });
        expect_squid_golden("held-shared", ports, &(squid_options) { .port = 3128, .held_helper = "/g/held" });
        expect_squid_golden("rules", rules, &bump);
        expect_squid_golden("only-rules", only_rules, &bump);
        squid_options o = bump;
        o.cluster = true;
        expect_squid_golden("rules-cluster", rules, &o);
        o = bump;
        o.secrets = secrets;
        o.n_secrets = 1;
        expect_squid_golden("secret", secret_entries, &o);
        o.n_secrets = ELEMENTSOF(secrets);
        expect_squid_golden("secrets", secret_entries, &o);
        expect_squid_golden("secrets-no-entries", none, &o);
        expect_squid_golden("secrets-rules", rules, &o);
        o.client_key = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
        o.held_helper = "/g/config/held.sh";
        o.hosts_file = "/g/config/hosts";
        o.add_hosts = add_hosts;
        o.host_addresses = host_addresses;
        o.access_log = "/g/logs/access.log";
        o.cache_log = "/g/logs/cache.log";
        expect_squid_golden("everything", rules, &o);
        o.cluster = true;
        expect_squid_golden("everything-cluster", rules, &o);
}
END_TEST

/* The gate's port set: what kube's NetworkPolicy and squid's aisb_ports both say. */
START_TEST(test_gate_ports)
{
        static const struct {
                const char *entries[6];
                unsigned ports[6];
                size_t n;
        } cases[] = {
                { { NULL }, { 0 }, 0 },
                { { "192.0.2.1", "198.51.100.0/24:22", NULL }, { 0 }, 0 },
                { { "example.com", NULL }, { 80, 443 }, 2 },
                { { "a.example:8443", "b.example:22", "a.example:22", NULL }, { 22, 8443 }, 2 },
                { { "a.example:443", "b.example", "c.example:80", "d.example:1", "192.0.2.1:9", NULL }, { 1, 80, 443 }, 3 },
                { { "api.example.com GET /v1/", "up.example.com:8080 PUT", NULL }, { 80, 443, 8080 }, 3 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                allowlist l = {};
                for (size_t k = 0; cases[i].entries[k]; k++)
                        ck_assert_int_eq(allowlist_add(&l, cases[i].entries[k], "--allow", NULL), 0);
                unsigned *ports = NULL;
                size_t n = SIZE_MAX;
                ck_assert_int_eq(gate_squid_ports(&l, &ports, &n), 0);
                ck_assert_ptr_nonnull(ports);
                ck_assert_uint_eq(n, cases[i].n);
                for (size_t k = 0; k < n; k++)
                        ck_assert_uint_eq(ports[k], cases[i].ports[k]);
                free(ports);
                allowlist_done(&l);
        }
}
END_TEST

START_TEST(test_egress_real_lines)
{
        const char *log = squid_logs[_i];
        egress_summary s = {};
        for (const char *line = log; *line;) {
                const char *nl = strchr(line, '\n');
                char *one = strndup(line, (size_t) (nl - line + 1));
                ck_assert_int_eq(egress_count_line(&s, one), 0);
                free(one);
                line = nl + 1;
        }
        /* The listed name, the tunnel the client closed and the origin's 503 reached their
         * destination; the refusals are the gate's; the rest was let through and failed. */
        ck_assert_uint_eq(s.allowed, 4);
        ck_assert_uint_eq(s.denied, 2);
        ck_assert_uint_eq(s.failed, 7);
        /* Named as an allowlist entry would name them: the port unless it is 80 or 443. */
        ck_assert_uint_eq(s.n_denied_names, 1);
        ck_assert_str_eq(s.denied_names[0], "denied.test");
        const char *base = _i == 0 ? "4144" : "4174";
        char want[3][32];
        snprintf(want[0], sizeof want[0], "ok.test:%s2", base);
        snprintf(want[1], sizeof want[1], "nodns.aisb.test:%s1", base);
        snprintf(want[2], sizeof want[2], "ok.test:%s1", base);
        ck_assert_uint_eq(s.n_failed_names, 3);
        for (size_t i = 0; i < 3; i++)
                ck_assert_str_eq(s.failed_names[i], want[i]);
        /* The plain-HTTP refusal, whole; a CONNECT's is only a name. */
        ck_assert_uint_eq(s.n_denied_requests, 1);
        ck_assert_str_eq(s.denied_requests[0], "GET http://denied.test/");
}
END_TEST

START_TEST(test_egress_classes)
{
        static const struct {
                const char *line;
                int counted; /* 'a'llowed, 'd'enied, 'f'ailed, 0 for not counted, 'x' for refused */
        } cases[] = {
                /* squid 6.13, before the ERROR field: a refused CONNECT whose client left at once */
                { "1796136396.463 127.0.0.1 CONNECT denied.test:443 403 TCP_DENIED_ABORTED 288 denied.test:443\n", 'd' },
                /* the same format: a plain success, an origin's 403 (its answer, not the gate's) */
                { "1718000000.123 127.0.0.1 CONNECT example.com:443 200 TCP_TUNNEL 5120 example.com:443\n", 'a' },
                { "1718000000.123 127.0.0.1 GET example.com:80 403 TCP_MISS 120 - http://example.com/\n", 'a' },
                { "1718000000.123 127.0.0.1 GET example.com:80 403 TCP_MISS 120 http://example.com/\n", 'a' },
                /* squid 4's tag for nothing forwarded, a timeout, a read error page */
                { "1 127.0.0.1 CONNECT a.test:443 503 TAG_NONE 0 - a.test:443\n", 'f' },
                { "1 127.0.0.1 GET a.test:80 504 TCP_MISS_TIMEDOUT 0 - http://a.test/\n", 'f' },
                { "1 127.0.0.1 GET a.test:80 502 TCP_MISS 10 ERR_READ_ERROR http://a.test/\n", 'f' },
                { "1 127.0.0.1 GET a.test:80 000 TCP_MISS 0 - http://a.test/\n", 'f' },
                /* a CONNECT that got no tunnel, whatever its tag */
                { "1 127.0.0.1 CONNECT a.test:443 502 TCP_TUNNEL 0 - a.test:443\n", 'f' },
                /* a connection that sent nothing is no egress; one that sent garbage is */
                { "1 127.0.0.1 - -:- 000 NONE 0 - error:transaction-end-before-headers\n", 0 },
                { "1 127.0.0.1 - -:- 400 NONE_NONE 3307 ERR_PROTOCOL_UNKNOWN error:invalid-request\n", 'f' },
                /* aisb's own request to a run's gate, refused; the same refusal of another name */
                { "1 127.0.0.1 GET aisb-gate-probe.invalid:80 403 TCP_DENIED 3900 ERR_ACCESS_DENIED http://aisb-gate-probe.invalid/\n", 0 },
                { "1 127.0.0.1 GET aisb-gate-probe.invalid.test:80 403 TCP_DENIED 3900 ERR_ACCESS_DENIED http://aisb-gate-probe.invalid.test/\n", 'd' },
                /* (were that name ever let through, it would count) */
                { "1 127.0.0.1 GET aisb-gate-probe.invalid:80 200 TCP_MISS 10 - http://aisb-gate-probe.invalid/\n", 'a' },
                /* too short to say anything */
                { "1 127.0.0.1 GET a.test:80 200\n", 'x' },
                { "\n", 'x' },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                egress_summary s = {};
                int r = egress_count_line(&s, cases[i].line);
                int got = r < 0 ? 'x' : s.allowed ? 'a' : s.denied ? 'd' : s.failed ? 'f' : 0;
                ck_assert_msg(got == cases[i].counted, "%s counted as '%c', not '%c'", cases[i].line,
                              got ? got : '0', cases[i].counted ? cases[i].counted : '0');
                ck_assert_uint_le(s.allowed + s.denied + s.failed, 1);
        }

        /* A field longer than any buffer does not shift the fields after it. */
        char *line = NULL;
        ck_assert_int_ge(asprintf(&line, "1 127.0.0.1 %0300d a.test:80 403 TCP_DENIED 0 ERR_ACCESS_DENIED x\n", 7), 0);
        egress_summary s = {};
        ck_assert_int_eq(egress_count_line(&s, line), 0);
        ck_assert_uint_eq(s.denied, 1);
        ck_assert_str_eq(s.denied_names[0], "a.test");
        free(line);
}
END_TEST

/* ---- gate hash ---- */

static char *hash_of(const char *const *entries, const char *const *add_hosts)
{
        allowlist l = {};
        for (size_t i = 0; entries[i]; i++)
                ck_assert_int_eq(allowlist_add(&l, entries[i], "--allow", NULL), 0);
        char *hex = NULL;
        ck_assert_int_eq(gate_squid_hash(&l, add_hosts, &hex), 0);
        ck_assert_uint_eq(strlen(hex), 16);
        ck_assert_uint_eq(strspn(hex, "0123456789abcdef"), 16);
        allowlist_done(&l);
        return hex;
}

START_TEST(test_gate_hash)
{
        const char *const a[] = { "example.com", "example.org:8443", "10.0.0.0/8", NULL };
        const char *const b[] = { "*.EXAMPLE.org.:8443", "192.0.2.1", "Example.com", "example.com", NULL };
        const char *const c[] = { "example.com", "example.org:8444", NULL };
        const char *const d[] = { "example.com", NULL };
        const char *const none[] = { NULL };
        const char *const hosts1[] = { "gate.test:127.0.0.1", "b.test:::1", NULL };
        const char *const hosts2[] = { "b.test:[0::1]", "GATE.test:127.0.0.1", NULL };
        const char *const hosts3[] = { "gate.test:127.0.0.2", NULL };

        char *ha = hash_of(a, NULL), *hb = hash_of(b, NULL), *hc = hash_of(c, NULL);
        char *hd = hash_of(d, NULL), *he = hash_of(none, NULL);
        ck_assert_str_eq(ha, hb); /* order, spelling, duplicates, address entries: no change */
        ck_assert_str_ne(ha, hc);
        ck_assert_str_ne(ha, hd);
        ck_assert_str_ne(hd, he);
        char *h1 = hash_of(a, hosts1), *h2 = hash_of(b, hosts2), *h3 = hash_of(a, hosts3);
        ck_assert_str_eq(h1, h2);
        ck_assert_str_ne(h1, ha);
        ck_assert_str_ne(h1, h3);
        /* Stable across releases unless GATE_SQUID_VERSION changes. */
        char *again = hash_of(a, NULL);
        ck_assert_str_eq(ha, again);

        allowlist l = {};
        char *hex = NULL;
        const char *const bad[] = { "nocolon", NULL };
        ck_assert_int_eq(gate_squid_hash(&l, bad, &hex), -EINVAL);
        ck_assert_ptr_null(hex);
        free(ha), free(hb), free(hc), free(hd), free(he), free(h1), free(h2), free(h3), free(again);
}
END_TEST

/* ---- entrypoint arguments ---- */

static const struct {
        const char *text;
        const char *arg;
} entrypoint_cases[] = {
        { "10.0.0.0/8", "10.0.0.0/8" },
        { "192.0.2.1", "192.0.2.1" },
        { "192.0.2.1/32", "192.0.2.1" },
        { "192.0.2.1:5432", "192.0.2.1:5432" },
        { "10.0.0.0/8:443", "10.0.0.0/8:443" },
        { "0.0.0.0/0", "0.0.0.0/0" },
        { "2001:db8::1", "2001:db8::1" },
        { "[2001:DB8::1]:443", "[2001:db8::1]:443" },
        { "2001:db8::/32", "2001:db8::/32" },
        { "[2001:db8::]/32:443", "[2001:db8::]/32:443" },
        { "[2001:db8::1]/128:22", "[2001:db8::1]:22" },
        { "::/0", "::/0" },
        { "::ffff:192.0.2.1", "::ffff:192.0.2.1" },
};

START_TEST(test_entrypoint_args)
{
        for (size_t i = 0; i < ELEMENTSOF(entrypoint_cases); i++) {
                allowlist l = {};
                ck_assert_int_eq(allowlist_add(&l, entrypoint_cases[i].text, "--allow", NULL), 0);
                const allow_entry *e = &l.entries[0];
                char *arg = NULL;
                ck_assert_int_eq(allowlist_entrypoint_arg(e, &arg), 0);
                ck_assert_str_eq(arg, entrypoint_cases[i].arg);

                /* The entrypoint reads back exactly the entry. */
                struct allow_dest d;
                char why[256] = "";
                ck_assert_msg(netpolicy_parse_allow(arg, &d, why, sizeof why) == 0, "%s: %s", arg, why);
                ck_assert_int_eq(d.family, e->family);
                ck_assert_uint_eq(d.prefix, e->prefix);
                ck_assert_uint_eq(d.port, e->port);
                char addr[INET6_ADDRSTRLEN];
                ck_assert_ptr_nonnull(inet_ntop(d.family, d.addr, addr, sizeof addr));
                ck_assert_msg(startswith(e->host, addr), "%s vs %s", e->host, addr);

                /* And our own parser takes its argument back unchanged. */
                allowlist back = {};
                ck_assert_int_eq(allowlist_add(&back, arg, "--allow", NULL), 0);
                ck_assert_str_eq(back.entries[0].host, e->host);
                ck_assert_uint_eq(back.entries[0].port, e->port);
                allowlist_done(&back);
                free(arg);
                allowlist_done(&l);
        }

        allowlist l = {};
        char *arg = NULL;
        ck_assert_int_eq(allowlist_add(&l, "example.com", "--allow", NULL), 0);
        ck_assert_int_eq(allowlist_entrypoint_arg(&l.entries[0], &arg), -EINVAL);
        allowlist_done(&l);
}
END_TEST

/* ---- --gate-add-host ---- */

static const struct {
        const char *text;
        const char *name, *ip; /* NULL: refused */
} add_host_cases[] = {
        { "gate.test:127.0.0.1", "gate.test", "127.0.0.1" },
        { "Registry.Example.COM.:10.0.0.5", "registry.example.com", "10.0.0.5" },
        { "devbox:192.168.1.2", "devbox", "192.168.1.2" },
        { "v6.test:2001:DB8::1", "v6.test", "2001:db8::1" },
        { "v6.test:[::1]", "v6.test", "::1" },
        { "nocolon", NULL, NULL },
        { ":127.0.0.1", NULL, NULL },
        { "gate.test:", NULL, NULL },
        { "gate.test:010.0.0.1", NULL, NULL },
        { "gate.test:1.2.3", NULL, NULL },
        { "gate.test:127.0.0.1:80", NULL, NULL },
        { "*.gate.test:127.0.0.1", NULL, NULL },
        { "bad_name:127.0.0.1", NULL, NULL },
        { "10.0.0.1:127.0.0.1", NULL, NULL },
        { "gate.test:[::1", NULL, NULL },
        { "gate.test:fe80::1%lo", NULL, NULL },
};

START_TEST(test_add_host)
{
        for (size_t i = 0; i < ELEMENTSOF(add_host_cases); i++) {
                char *name = NULL, *ip = NULL;
                aisb_error *err = NULL;
                int r = allowlist_parse_add_host(add_host_cases[i].text, &name, &ip, &err);
                if (add_host_cases[i].name) {
                        ck_assert_msg(r == 0, "%s: %s", add_host_cases[i].text, aisb_error_message(err));
                        ck_assert_str_eq(name, add_host_cases[i].name);
                        ck_assert_str_eq(ip, add_host_cases[i].ip);
                } else {
                        ck_assert_msg(r == -EINVAL, "'%s' accepted", add_host_cases[i].text);
                        ck_assert(startswith(aisb_error_message(err), "--gate-add-host '"));
                        ck_assert_ptr_null(name);
                }
                free(name);
                free(ip);
                aisb_error_free(err);
        }

        const char *const hosts[] = { "gate.test:127.0.0.1", "v6.test:[::1]", NULL };
        char *text = NULL;
        ck_assert_int_eq(gate_squid_hosts_file(hosts, &text, NULL), 0);
        ck_assert(has_line(text, "127.0.0.1 gate.test"));
        ck_assert(has_line(text, "::1 v6.test"));
        free(text);
}
END_TEST


/* ---- host ranges: what an address entry may not reach ---- */

/* Each row of the table, and the catch-all bounds, from inside, on the edge and just outside.
 * what: a piece of the refusal, or NULL for an entry that must pass. */
static const struct {
        const char *entry;
        const char *what;
} host_range_cases[] = {
        /* 127.0.0.0/8 */
        { "127.0.0.1", "127.0.0.0/8, the host's loopback" },
        { "127.0.0.0/8", "127.0.0.0/8" },
        { "127.255.255.255:22", "127.0.0.0/8" },
        { "127.1.0.0/16:80", "127.0.0.0/8" },
        { "126.255.255.255", NULL },
        { "128.0.0.0", NULL },
        /* 0.0.0.0/8 */
        { "0.0.0.0", "0.0.0.0/8" },
        { "0.1.2.3:5432", "0.0.0.0/8" },
        { "1.0.0.0/8", NULL },
        /* 169.254.0.0/16: link-local, metadata, pasta */
        { "169.254.169.254", "169.254.0.0/16, link-local: cloud metadata" },
        { "169.254.169.254:80", "169.254.0.0/16" },
        { "169.254.1.2", "169.254.0.0/16" },
        { "169.254.1.1:53", "169.254.0.0/16" },
        { "169.254.0.0/16", "169.254.0.0/16" },
        { "169.0.0.0/8", "169.254.0.0/16" }, /* overlaps: contains it */
        { "169.253.255.255", NULL },
        { "169.255.0.0/16", NULL },
        /* 10.0.2.0/24: slirp4netns (and aisb's pasta mapping) */
        { "10.0.2.2", "10.0.2.0/24, slirp4netns: the host's loopback at 10.0.2.2" },
        { "10.0.2.2:8080", "10.0.2.0/24" },
        { "10.0.2.3", "10.0.2.0/24" },
        { "10.0.2.128/25", "10.0.2.0/24" },
        { "10.0.2.0/24:443", "10.0.2.0/24" },
        { "10.0.0.0/16", "10.0.2.0/24" },
        { "10.0.0.0/8", "10.0.2.0/24" },
        { "10.0.0.0/8:5432", "10.0.2.0/24" },
        { "10.0.1.255", NULL },
        { "10.0.3.0/24", NULL },
        { "10.1.0.0/16", NULL },
        /* ::1 and :: */
        { "::1", "::1, the host's loopback" },
        { "[::1]:22", "::1" },
        { "::", "::, which Linux connects to the local host" },
        { "::/128", "::," },
        /* IPv4 written as IPv6: the IPv4 rules decide; refused, the address is to be
         * written as IPv4 (red team round three). */
        { "::2", "IPv4-compatible" },
        { "::ffff:127.0.0.1", "IPv4-mapped" },
        { "[::ffff:10.0.2.2]:3128", "IPv4-mapped" },
        { "::ffff:0:0/96", "IPv4-mapped" },
        { "::ffff:8.8.8.8", "IPv4-mapped" },
        { "::1:0:0:2", NULL },
        /* fe80::/10 */
        { "fe80::1", "fe80::/10, link-local" },
        { "[fe80::]/64:22", "fe80::/10" },
        { "febf:ffff::1", "fe80::/10" },
        { "fe80::/16", "fe80::/10" },
        { "fe7f:ffff::1", NULL },
        { "fec0::/16", NULL },
        /* catch-alls: wider than /8 and /16 */
        { "0.0.0.0/0", "is a catch-all (wider than /8)" },
        { "0.0.0.0/0:5432", "is a catch-all (wider than /8)" },
        { "128.0.0.0/1", "is a catch-all" },
        { "192.0.0.0/2", "is a catch-all" },
        { "64.0.0.0/7", "is a catch-all" },
        { "8.0.0.0/8", NULL },
        { "::/0", "is a catch-all (wider than /16)" },
        { "[::]/0:443", "is a catch-all (wider than /16)" },
        { "2000::/3", "is a catch-all" },
        { "2000::/15", "is a catch-all" },
        { "2001::/16", NULL },
        /* ordinary destinations */
        { "192.168.0.0/16", NULL },
        { "172.16.0.0/12:5432", NULL },
        { "192.0.2.2", NULL },
        { "2001:db8::/32", NULL },
        { "[2001:db8::1]:443", NULL },
};

START_TEST(test_host_ranges)
{
        const char *entry = host_range_cases[_i].entry, *what = host_range_cases[_i].what;
        allowlist l = {};
        aisb_error *err = NULL;
        ck_assert_msg(allowlist_add(&l, "example.com", "--allow", NULL) == 0, "domain");
        ck_assert_msg(allowlist_add(&l, entry, "--allow", &err) == 0, "%s: %s", entry,
                      aisb_error_message(err));
        int r = allowlist_check_host_ranges(&l, false, &err);
        if (what) {
                ck_assert_msg(r == -EINVAL, "'%s' was let through", entry);
                const char *m = aisb_error_message(err);
                ck_assert_msg(startswith(m, "--allow: '"), "'%s' lacks the origin", m);
                ck_assert_msg(!strchr(m, '\n'), "'%s' is more than one line", m);
                ck_assert_msg(strstr(m, what), "'%s' lacks '%s'", m, what);
                ck_assert_msg(strstr(m, "--insecure-allow-host-ranges"), "'%s' does not name the flag", m);
                /* The one-address form agrees with the table for the entry's own block. */
                if (!strstr(what, "catch-all"))
                        ck_assert_ptr_nonnull(allowlist_host_range(l.entries[1].family, l.entries[1].addr,
                                                                   l.entries[1].prefix));
        } else {
                ck_assert_msg(r == 0, "'%s' refused: %s", entry, aisb_error_message(err));
                ck_assert_ptr_null(allowlist_host_range(l.entries[1].family, l.entries[1].addr,
                                                        l.entries[1].prefix));
        }
        aisb_error_free(err);
        err = NULL;
        /* The flag lets every one of them through, and says nothing. */
        ck_assert_int_eq(allowlist_check_host_ranges(&l, true, &err), 0);
        ck_assert_ptr_null(err);
        allowlist_done(&l);
}
END_TEST

START_TEST(test_host_range_lookup)
{
        uint8_t a[16] = {};
        ck_assert_int_eq(inet_pton(AF_INET, "10.0.2.2", a), 1);
        ck_assert_ptr_nonnull(strstr(allowlist_host_range(AF_INET, a, 32), "10.0.2.0/24"));
        memset(a, 0, sizeof a);
        ck_assert_int_eq(inet_pton(AF_INET, "169.254.1.2", a), 1);
        ck_assert_ptr_nonnull(strstr(allowlist_host_range(AF_INET, a, 32), "169.254.0.0/16"));
        memset(a, 0, sizeof a);
        ck_assert_int_eq(inet_pton(AF_INET, "93.184.215.14", a), 1);
        ck_assert_ptr_null(allowlist_host_range(AF_INET, a, 32));
        ck_assert_int_eq(inet_pton(AF_INET6, "::1", a), 1);
        ck_assert_ptr_nonnull(allowlist_host_range(AF_INET6, a, 128));
        /* The same bytes in the other family are another address (254.128.0.0). */
        ck_assert_int_eq(inet_pton(AF_INET6, "fe80::1", a), 1);
        ck_assert_ptr_nonnull(allowlist_host_range(AF_INET6, a, 128));
        ck_assert_ptr_null(allowlist_host_range(AF_INET, a, 32));
        ck_assert_int_eq(inet_pton(AF_INET6, "2606:2800::1", a), 1);
        ck_assert_ptr_null(allowlist_host_range(AF_INET6, a, 128));
}
END_TEST

/* The refusal names the entry's file and line when it came from one. */
START_TEST(test_host_ranges_origin)
{
        static const char text[] = "example.com\n# metadata\n169.254.169.254:80\n";
        char *path = write_temp(text, sizeof text - 1);
        allowlist l = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(allowlist_load_file(&l, path, 0, NULL), 0);
        ck_assert_int_eq(allowlist_check_host_ranges(&l, false, &err), -EINVAL);
        char *want = NULL;
        ck_assert_int_ge(asprintf(&want, "%s:3: '169.254.169.254:80' reaches the host itself "
                                         "(169.254.0.0/16, link-local: cloud metadata, pasta's host "
                                         "169.254.1.2 and resolver 169.254.1.1): refused unless "
                                         "--insecure-allow-host-ranges", path), 0);
        ck_assert_str_eq(aisb_error_message(err), want);
        free(want);
        aisb_error_free(err);
        allowlist_done(&l);
        unlink(path);
        free(path);
}
END_TEST

/* The project's file: names only, with or without a port; any address refuses the run. */
START_TEST(test_domains_only)
{
        static const char *const refused[] = { "10.0.2.2", "0.0.0.0/0", "10.0.2.2:8080", "192.0.2.1",
                                               "2001:db8::/32", "[::1]:22" };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                char *text = NULL;
                ck_assert_int_ge(asprintf(&text, "example.com\napi.example.org:8443\n%s  # a note\n",
                                          refused[i]), 0);
                char *path = write_temp(text, strlen(text));
                allowlist l = {};
                aisb_error *err = NULL;
                ck_assert_int_eq(allowlist_load_file(&l, path, ALLOWLIST_FILE_DOMAINS_ONLY, &err), -EINVAL);
                char *want = NULL;
                ck_assert_int_ge(asprintf(&want, "%s:3: '%s' is an address, and a project's allowlist "
                                                 "may name domains only: put it in --allow or "
                                                 "~/.config/ai-sandbox/allow", path, refused[i]), 0);
                ck_assert_str_eq(aisb_error_message(err), want);
                free(want);
                aisb_error_free(err);
                err = NULL;
                /* The same file is fine where addresses may be. */
                allowlist_done(&l);
                ck_assert_int_eq(allowlist_load_file(&l, path, 0, &err), 0);
                ck_assert_uint_eq(allowlist_count_addresses(&l), 1);
                allowlist_done(&l);
                unlink(path);
                free(path);
                free(text);
        }

        static const char names[] = "example.com\nexample.org:8443\n*.example.net\n";
        char *path = write_temp(names, sizeof names - 1);
        allowlist l = {};
        ck_assert_int_eq(allowlist_load_file(&l, path, ALLOWLIST_FILE_DOMAINS_ONLY, NULL), 0);
        ck_assert_uint_eq(l.n, 3);
        allowlist_done(&l);
        unlink(path);
        free(path);

        /* A broken entry still says what is wrong with it. */
        path = write_temp("10.0.2.02\n", 10);
        aisb_error *err = NULL;
        ck_assert_int_eq(allowlist_load_file(&l, path, ALLOWLIST_FILE_DOMAINS_ONLY, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "is not a domain, IP or CIDR"));
        aisb_error_free(err);
        unlink(path);
        free(path);
}
END_TEST

/* The three sources through the policy, as a run merges them: a project's address refuses
 * the run even with the flag; the flag lets --allow and the user's file reach the host;
 * aisb's own rules (the gate, a loopback --proxy) stay 10.0.2.2 without it. */
static char *make_project(const char *allow_text)
{
        char *dir = strdup("/tmp/aisb-project-XXXXXX"), *sub = NULL, *file = NULL;
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&sub, "%s/.ai-sandbox", dir), 0);
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        ck_assert_int_ge(asprintf(&file, "%s/allow", sub), 0);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, allow_text, strlen(allow_text)), 0);
        close(fd);
        free(sub);
        free(file);
        return dir;
}

static void remove_project(char *dir)
{
        char *file = NULL, *sub = NULL;
        ck_assert_int_ge(asprintf(&sub, "%s/.ai-sandbox", dir), 0);
        ck_assert_int_ge(asprintf(&file, "%s/allow", sub), 0);
        unlink(file);
        rmdir(sub);
        rmdir(dir);
        free(file);
        free(sub);
        free(dir);
}

static aisb_policy *policy_for(const char *project, const char *user_allowlist)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "user-allowlist", user_allowlist, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "net", "allow", NULL), 0);
        return p;
}

static char *network_args(aisb_policy *p)
{
        sandbox_network net = {};
        aisb_error *err = NULL;
        ck_assert_msg(inspect_network(p, &net, &err) == 0, "%s", aisb_error_message(err));
        buffer b = {};
        for (size_t i = 0; net.entrypoint_args[i]; i++)
                ck_assert_int_ge(buffer_printf(&b, "%s%s", i ? " " : "", net.entrypoint_args[i]), 0);
        sandbox_network_done(&net);
        return buffer_steal(&b);
}

START_TEST(test_sources)
{
        static const char *const attacks[] = { "10.0.2.2", "0.0.0.0/0", "10.0.2.2:8080" };
        for (size_t i = 0; i < ELEMENTSOF(attacks); i++) {
                char *text = NULL;
                ck_assert_int_ge(asprintf(&text, "example.com\n%s\n", attacks[i]), 0);
                char *project = make_project(text);
                aisb_policy *p = policy_for(project, "");
                for (int flag = 0; flag < 2; flag++) {
                        if (flag)
                                ck_assert_int_eq(aisb_policy_set(p, "insecure-allow-host-ranges", NULL, NULL), 0);
                        allowlist l = {};
                        aisb_error *err = NULL;
                        ck_assert_int_eq(policy_allowlist(p, NULL, &l, &err), -EINVAL);
                        char *want = NULL;
                        ck_assert_int_ge(asprintf(&want, "%s/.ai-sandbox/allow:2: '%s' is an address, and "
                                                         "a project's allowlist may name domains only: put "
                                                         "it in --allow or ~/.config/ai-sandbox/allow",
                                                  project, attacks[i]), 0);
                        ck_assert_str_eq(aisb_error_message(err), want);
                        free(want);
                        aisb_error_free(err);
                        /* The printers refuse the same way: nothing shows a policy that would not run. */
                        char *out = NULL;
                        err = NULL;
                        ck_assert_int_eq(aisb_policy_ruleset(p, &out, &err), -EINVAL);
                        ck_assert_ptr_null(out);
                        aisb_error_free(err);
                }
                aisb_policy_free(p);
                remove_project(project);
                free(text);
        }

        /* --allow and the user's file: refused without the flag, direct rules with it. */
        char *project = make_project("example.com\n");
        char *user = write_temp("10.0.2.2:8080\n", 14);
        aisb_policy *p = policy_for(project, user);
        allowlist l = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(policy_allowlist(p, NULL, &l, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), ":1: '10.0.2.2:8080' reaches the host itself"));
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(aisb_policy_set(p, "allow", "0.0.0.0/0", NULL), 0);
        ck_assert_int_eq(policy_allowlist(p, NULL, &l, &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err),
                         "--allow: '0.0.0.0/0' is a catch-all (wider than /8), which opens the host "
                         "itself with everything else: name the networks you need, or add "
                         "--insecure-allow-host-ranges");
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(aisb_policy_set(p, "insecure-allow-host-ranges", "true", NULL), 0);
        char *args = network_args(p);
        ck_assert_msg(strstr(args, "--allow 0.0.0.0/0") && strstr(args, "--allow 10.0.2.2:8080"), "%s", args);
        free(args);
        char *text = NULL;
        ck_assert_int_eq(aisb_policy_format(p, &text, NULL), 0);
        ck_assert(has_line(text, "insecure-allow-host-ranges=true"));
        free(text);
        ck_assert_int_eq(aisb_policy_set(p, "insecure-allow-host-ranges", "false", NULL), 0);
        aisb_policy_free(p);
        unlink(user);
        free(user);

        /* aisb's own rules are not allowlist entries: the gate's port and a loopback proxy. */
        p = policy_for(project, "");
        args = network_args(p);
        ck_assert_msg(strstr(args, "--net allow --allow 10.0.2.2:3128"), "%s", args);
        free(args);
        ck_assert_int_eq(aisb_policy_set(p, "proxy", "127.0.0.1:8888", NULL), 0);
        args = network_args(p);
        ck_assert_msg(strstr(args, "--net allow --allow 10.0.2.2:8888"), "%s", args);
        free(args);
        aisb_policy_free(p);
        remove_project(project);
}
END_TEST

/* --no-gate pins what the names resolve to on the host; a name is no way around the host
 * ranges. The names resolve through a hosts file of the test's own, bound over /etc/hosts in
 * a mount namespace of a child (a user namespace too when not root). */
static int pinned_child(const char *hosts, bool with_self)
{
        if (geteuid() != 0 && unshare(CLONE_NEWUSER) < 0)
                return 77;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount(hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0)
                return 77;
        static const struct {
                const char *name;
                const char *refused; /* NULL: pinned */
        } cases[] = {
                { "loop.aisb.test", "--no-gate: loop.aisb.test (--allow) resolves to 127.0.0.1, which "
                                    "reaches the host itself (127.0.0.0/8, the host's loopback): "
                                    "refused unless --insecure-allow-host-ranges" },
                { "metadata.aisb.test", "resolves to 169.254.169.254, which reaches the host itself "
                                        "(169.254.0.0/16, link-local: cloud metadata" },
                { "slirp.aisb.test", "resolves to 10.0.2.2, which reaches the host itself (10.0.2.0/24" },
                { "private.aisb.test", "--no-gate: private.aisb.test (--allow) resolves to 10.1.2.3 (10.0.0.0/8), "
                                       "where a name's owner could point it at your own networks" },
                { "shared.aisb.test", "resolves to 100.64.0.7 (100.64.0.0/10)" },
                { "nat64.aisb.test", "resolves to 64:ff9b::a00:5 (64:ff9b::a00:0/104)" },
                { "self.aisb.test", "(one of this host's own addresses)" },
                { "fine.aisb.test", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (!with_self && streq(cases[i].name, "self.aisb.test"))
                        continue;
                for (int flag = 0; flag < 2; flag++) {
                        aisb_policy *p = policy_for("/tmp", "");
                        if (aisb_policy_set(p, "no-gate", NULL, NULL) < 0 ||
                            aisb_policy_set(p, "allow", cases[i].name, NULL) < 0 ||
                            (flag && aisb_policy_set(p, "insecure-allow-host-ranges", NULL, NULL) < 0))
                                return 1;
                        sandbox_network net = {};
                        aisb_error *err = NULL;
                        int r = inspect_network(p, &net, &err);
                        if (cases[i].refused && !flag) {
                                if (r != -EINVAL || !strstr(aisb_error_message(err), cases[i].refused)) {
                                        fprintf(stderr, "%s: %d %s\n", cases[i].name, r, aisb_error_message(err));
                                        return 1;
                                }
                        } else if (r < 0 || !net.entrypoint_args[3] ||
                                   !streq(net.entrypoint_args[2], "--allow")) {
                                fprintf(stderr, "%s: not pinned: %s\n", cases[i].name, aisb_error_message(err));
                                return 1;
                        }
                        aisb_error_free(err);
                        sandbox_network_done(&net);
                        aisb_policy_free(p);
                }
        }
        return 0;
}

START_TEST(test_pinned_host_ranges)
{
        /* self.aisb.test: one of this host's own addresses that no other rule refuses. */
        char **own = NULL;
        ck_assert_int_eq(host_own_addresses(&own), 0);
        const char *self = NULL;
        for (size_t i = 0; own && own[i] && !self; i++) {
                uint8_t a[16] = {};
                if (inet_pton(AF_INET, own[i], a) == 1 && !gate_local_range(AF_INET, a))
                        self = own[i];
        }
        char hosts[512];
        snprintf(hosts, sizeof hosts,
                 "127.0.0.1 loop.aisb.test\n169.254.169.254 metadata.aisb.test\n10.0.2.2 slirp.aisb.test\n"
                 "10.1.2.3 private.aisb.test\n100.64.0.7 shared.aisb.test\n%s self.aisb.test\n"
                 "64:ff9b::a00:5 nat64.aisb.test\n"
                 "192.0.2.10 fine.aisb.test\n",
                 self ? self : "192.0.2.11");
        /* A host with no address of its own beyond those (a network namespace with only its
         * loopback, as a package build may have) has no self case to check. */
        bool with_self = self != NULL;
        if (!with_self)
                fprintf(stderr, "test_pinned_host_ranges: no address of this host's own outside "
                                "the refused ranges, the self case not checked\n");
        strv_free(own);
        char *path = write_temp(hosts, strlen(hosts));
        ck_assert_int_eq(chmod(path, 0644), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(pinned_child(path, with_self));
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        unlink(path);
        free(path);
        ck_assert(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77) {
                fprintf(stderr, "test_pinned_host_ranges: no mount namespace here, not checked\n");
                return;
        }
        ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* NAT64 carries IPv4 in IPv6: the host's and the private ranges through it are the same
 * ranges (round two of the red team). */
START_TEST(test_nat64)
{
        uint8_t a[16] = {};
        ck_assert_int_eq(inet_pton(AF_INET6, "64:ff9b::a9fe:a9fe", a), 1); /* 169.254.169.254 */
        ck_assert_ptr_nonnull(allowlist_host_range(AF_INET6, a, 128));
        ck_assert_ptr_nonnull(gate_local_range(AF_INET6, a));
        ck_assert_int_eq(inet_pton(AF_INET6, "64:ff9b::a00:5", a), 1); /* 10.0.0.5 */
        ck_assert_str_eq(gate_local_range(AF_INET6, a), "64:ff9b::a00:0/104");
        ck_assert_int_eq(inet_pton(AF_INET6, "64:ff9b:1::1", a), 1);
        ck_assert_ptr_nonnull(allowlist_host_range(AF_INET6, a, 128));
        ck_assert_int_eq(inet_pton(AF_INET6, "64:ff9b::808:808", a), 1); /* 8.8.8.8: public */
        ck_assert_ptr_null(gate_local_range(AF_INET6, a));
        ck_assert_ptr_null(allowlist_host_range(AF_INET6, a, 128));
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "64:ff9b::/96", "--allow", NULL), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(allowlist_check_host_ranges(&l, false, &err), -EINVAL);
        ck_assert(strstr(aisb_error_message(err), "NAT64"));
        aisb_error_free(err);
        allowlist_done(&l);
}
END_TEST

/* An address entry covering one of the host's own addresses reaches its services there. */
START_TEST(test_host_own_addresses)
{
        static const char *const own[] = { "192.0.2.2", "fd00::2", NULL };
        static const struct {
                const char *entry;
                bool refused;
        } cases[] = {
                { "192.0.2.2", true },     { "192.0.2.0/24", true }, { "192.0.2.2:8443", true },
                { "192.0.0.0/16", true },  { "fd00::/64", true },    { "[fd00::2]:443", true },
                { "192.0.2.3", false },    { "198.51.100.0/24", false }, { "fd01::/16", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                allowlist l = {};
                ck_assert_int_eq(allowlist_add(&l, cases[i].entry, "--allow", NULL), 0);
                aisb_error *err = NULL;
                int r = allowlist_check_host_addresses(&l, own, false, &err);
                ck_assert_msg((r == -EINVAL) == cases[i].refused, "%s: %d", cases[i].entry, r);
                if (cases[i].refused)
                        ck_assert(strstr(aisb_error_message(err), "one of this host's own addresses"));
                ck_assert_int_eq(allowlist_check_host_addresses(&l, own, true, NULL), 0);
                aisb_error_free(err);
                allowlist_done(&l);
        }
}
END_TEST

static Suite *allowlist_suite(void)
{
        Suite *s = suite_create("allowlist");
        suite_add_tests(s, "entries", NULL, NULL, test_valid, test_invalid, test_hostile_lengths, test_duplicates,
                        test_grown_by_hand, test_limits);
        suite_add_tests(s, "matching", NULL, NULL, test_domain_allows, test_rules_entries, test_path_odd,
                        test_request_allows);
        suite_add_tests(s, "files", NULL, NULL, test_file_syntax, test_file_load);
        TCase *squid = suite_add_tests(s, "squid", NULL, NULL, test_squid_config, test_squid_config_local_dst,
                                       test_squid_config_empty, test_squid_config_long_acl, test_squid_config_refused,
                                       test_squid_config_rules, test_squid_config_secrets, test_squid_config_golden,
                                       test_gate_ports, test_tunnel_helper, test_secret_parse, test_gate_hash,
                                       test_egress_classes);
        tcase_add_loop_test(squid, test_egress_real_lines, 0, ELEMENTSOF(squid_logs));
        TCase *ranges = suite_add_tests(s, "host ranges", NULL, NULL, test_host_range_lookup, test_host_ranges_origin,
                                        test_domains_only, test_sources, test_pinned_host_ranges,
                                        test_host_own_addresses, test_nat64);
        tcase_add_loop_test(ranges, test_host_ranges, 0, ELEMENTSOF(host_range_cases));
        suite_add_tests(s, "outputs", NULL, NULL, test_entrypoint_args, test_add_host);
        return s;
}

int main(void)
{
        return unit_run(allowlist_suite());
}
