/* SPDX-License-Identifier: MIT */
/* The allowlist: entry syntax (valid, canonical, hostile), the suffix and port rules, files,
 * the squid configuration, the gate hash and the entrypoint's --allow arguments. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "allowlist.h"

/* The real parser of aisb-entrypoint, so the --allow arguments are checked against what the
 * entrypoint accepts rather than against a copy of its syntax. It is pure C and links alone. */
#include "../../entrypoint/netpolicy.c"

_Static_assert(ALLOWLIST_MAX_ADDRESSES == NETPOLICY_MAX_ALLOW,
               "the allowlist must refuse what the entrypoint would refuse");

static void expect_refused(const char *text, const char *needle)
{
        allowlist l = {};
        aisb_error *err = NULL;
        int r = allowlist_add(&l, text, "--allow", &err);
        ck_assert_msg(r < 0, "'%s' was accepted as '%s'", text, l.n ? l.entries[0].host : "?");
        ck_assert_int_eq(l.n, 0);
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
                ck_assert_int_eq(l.n, 1);
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
        { "exa mple.com", "whitespace" },
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
                ck_assert_msg(allowlist_domain_allows(&l, match_cases[i].host, match_cases[i].port) ==
                                      match_cases[i].allowed,
                              "%s:%u should be %s", match_cases[i].host, match_cases[i].port,
                              match_cases[i].allowed ? "allowed" : "refused");
        ck_assert(!allowlist_domain_allows(&l, NULL, 443));
        allowlist_done(&l);

        allowlist empty = {};
        ck_assert(!allowlist_domain_allows(&empty, "example.com", 443));
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
        ck_assert_int_lt(allowlist_parse_text(&l, text, sizeof text - 1, "allow", &err), 0);
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
        ck_assert_int_lt(allowlist_parse_text(&l, bom_inside, sizeof bom_inside - 1, "f", &err), 0);
        ck_assert(startswith(aisb_error_message(err), "f:2: '\\xef\\xbb\\xbfexample.org'"));
        aisb_error_free(err);
        allowlist_done(&l);

        /* No final newline, only comments, empty. */
        ck_assert_int_eq(allowlist_parse_text(&l, "a.example", 9, "f", NULL), 0);
        ck_assert_int_eq(allowlist_parse_text(&l, "# x\n#y", 6, "f", NULL), 0);
        ck_assert_int_eq(allowlist_parse_text(&l, "", 0, "f", NULL), 0);
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
        ck_assert_int_eq(allowlist_load_file(&l, path, false, &err), -EINVAL);
        char *want = NULL;
        ck_assert_int_ge(asprintf(&want, "%s:3: 'bad entry' is not a domain, IP or CIDR "
                                         "(whitespace inside the entry)", path), 0);
        ck_assert_str_eq(aisb_error_message(err), want);
        free(want);
        aisb_error_free(err);
        err = NULL;

        /* $HOME is shown as ~, as the documentation writes the user's file. */
        char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
        setenv("HOME", "/tmp", 1);
        ck_assert_int_eq(allowlist_load_file(&l, path, false, &err), -EINVAL);
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
        ck_assert_int_eq(allowlist_load_file(&l, "/nonexistent/aisb/allow", true, NULL), 0);
        ck_assert_int_eq(allowlist_load_file(&l, "/nonexistent/aisb/allow", false, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "/nonexistent/aisb/allow"));
        aisb_error_free(err);
        err = NULL;

        /* NUL bytes: refused with the line they are on. */
        path = write_temp("example.com\nexa\0mple.org\n", 25);
        ck_assert_int_eq(allowlist_load_file(&l, path, false, &err), -EINVAL);
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
        ck_assert_int_eq(allowlist_load_file(&l, path, false, &err), -EFBIG);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "larger than 1024 KiB"));
        aisb_error_free(err);
        err = NULL;
        unlink(path);
        free(path);

        /* Not a regular file: a directory, a FIFO (which must not block us). */
        ck_assert_int_eq(allowlist_load_file(&l, "/tmp", false, &err), -EINVAL);
        aisb_error_free(err);
        err = NULL;
        char fifo[] = "/tmp/aisb-allow-fifo-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(fifo));
        char fifo_path[64];
        snprintf(fifo_path, sizeof fifo_path, "%s/allow", fifo);
        ck_assert_int_eq(mkfifo(fifo_path, 0600), 0);
        ck_assert_int_eq(allowlist_load_file(&l, fifo_path, true, &err), -EINVAL);
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
        int r = allowlist_squid_config(&l, o, &text, &err);
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
                "logformat aisb " ALLOWLIST_SQUID_LOGFORMAT,
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
                "http_access deny !aisb_clients",
                "http_access deny aisb_ip_literal",
                "http_access deny !aisb_connect !aisb_schemes",
                "http_access deny !aisb_ports",
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
                ck_assert_int_eq(allowlist_squid_config(&l, &bad[i], &text, &err), -EINVAL);
                ck_assert_ptr_null(text);
                ck_assert_ptr_nonnull(err);
                aisb_error_free(err);
        }
        allowlist_done(&l);
}
END_TEST

/* ---- gate hash ---- */

static char *hash_of(const char *const *entries, const char *const *add_hosts)
{
        allowlist l = {};
        for (size_t i = 0; entries[i]; i++)
                ck_assert_int_eq(allowlist_add(&l, entries[i], "--allow", NULL), 0);
        char *hex = NULL;
        ck_assert_int_eq(allowlist_gate_hash(&l, add_hosts, &hex), 0);
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
        /* Stable across releases unless ALLOWLIST_GATE_VERSION changes. */
        char *again = hash_of(a, NULL);
        ck_assert_str_eq(ha, again);

        allowlist l = {};
        char *hex = NULL;
        const char *const bad[] = { "nocolon", NULL };
        ck_assert_int_eq(allowlist_gate_hash(&l, bad, &hex), -EINVAL);
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
        ck_assert_int_eq(allowlist_hosts_file(hosts, &text, NULL), 0);
        ck_assert(has_line(text, "127.0.0.1 gate.test"));
        ck_assert(has_line(text, "::1 v6.test"));
        free(text);
}
END_TEST

static Suite *allowlist_suite(void)
{
        Suite *s = suite_create("allowlist");
        TCase *tc = tcase_create("entries");
        tcase_add_test(tc, test_valid);
        tcase_add_test(tc, test_invalid);
        tcase_add_test(tc, test_hostile_lengths);
        tcase_add_test(tc, test_duplicates);
        tcase_add_test(tc, test_grown_by_hand);
        tcase_add_test(tc, test_limits);
        suite_add_tcase(s, tc);
        tc = tcase_create("matching");
        tcase_add_test(tc, test_domain_allows);
        suite_add_tcase(s, tc);
        tc = tcase_create("files");
        tcase_add_test(tc, test_file_syntax);
        tcase_add_test(tc, test_file_load);
        suite_add_tcase(s, tc);
        tc = tcase_create("squid");
        tcase_add_test(tc, test_squid_config);
        tcase_add_test(tc, test_squid_config_empty);
        tcase_add_test(tc, test_squid_config_long_acl);
        tcase_add_test(tc, test_squid_config_refused);
        tcase_add_test(tc, test_gate_hash);
        suite_add_tcase(s, tc);
        tc = tcase_create("outputs");
        tcase_add_test(tc, test_entrypoint_args);
        tcase_add_test(tc, test_add_host);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(allowlist_suite());
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
