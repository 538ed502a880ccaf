/* SPDX-License-Identifier: MIT */
/*
 * A program that links libaisb.a and happens to define, for its own purposes, names that
 * libaisb uses inside: functions and data of lib/ and of the entrypoint's netpolicy, some
 * with an "aisb_" prefix that is still not API (aisb_log, aisb_error_set). It must link (no
 * "multiple definition"), the library must keep calling its own functions (none of these
 * runs unless the program calls it), and the program must get its own.
 *
 * tests/link/link-check.py builds it against the archive with `pkg-config --static` and
 * runs it; the names come from `nm -g --defined-only libaisb.a` before the archive was
 * prelinked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aisb.h>

static int own_calls;

/* Signatures of the program's own: nothing ties them to the library's. */
void strv_free(char **strv);
int buffer_append(const char *text);
int allowlist_add(const char *entry);
const char *state_dir(void);
int http_send(int request);
int netpolicy_parse(const char *text);
int netpolicy_ruleset(void);
int sha256_hex(void);
int parse_size(const char *text);
int path_check_trusted(const char *path);
int aisb_log(int level);
int aisb_error_set(int code);

void strv_free(char **strv) { (void) strv; own_calls++; }
int buffer_append(const char *text) { (void) text; own_calls++; return 1; }
int allowlist_add(const char *entry) { (void) entry; own_calls++; return 2; }
const char *state_dir(void) { own_calls++; return "the program's state"; }
int http_send(int request) { own_calls++; return request + 1; }
int netpolicy_parse(const char *text) { (void) text; own_calls++; return 3; }
int netpolicy_ruleset(void) { own_calls++; return 4; }
int sha256_hex(void) { own_calls++; return 5; }
int parse_size(const char *text) { (void) text; own_calls++; return 6; }
int path_check_trusted(const char *path) { (void) path; own_calls++; return 7; }
int aisb_log(int level) { own_calls++; return level; }
int aisb_error_set(int code) { own_calls++; return code; }

/* Data of the same names as the library's (archive_dl is its libarchive table,
 * entrypoint_capabilities and netpolicy_needed_capabilities are constant tables). */
int archive_dl = 8;
const char entrypoint_capabilities[] = "the program's capabilities";
long netpolicy_needed_capabilities = 9;

static int failures;

static void check(int ok, const char *what)
{
        printf("%s: %s\n", ok ? "ok" : "FAIL", what);
        if (!ok)
                failures++;
}

int main(void)
{
        aisb_policy *policy = NULL;
        aisb_error *err = NULL;
        char *ruleset = NULL;

        check(aisb_version() && strcmp(aisb_version(), AISB_VERSION_STRING) == 0,
              "aisb_version() answers, the version of the header");

        /* The library at work: parse keys, build a ruleset (netpolicy), free (strv_free). */
        int r = aisb_policy_new(&policy, &err);
        if (r >= 0)
                r = aisb_policy_set(policy, "insecure-keep-root", "true", &err);
        if (r >= 0)
                r = aisb_policy_set(policy, "allow", "192.0.2.7", &err);
        if (r >= 0)
                r = aisb_policy_ruleset(policy, &ruleset, &err);
        if (r < 0) {
                printf("FAIL: the library: %s\n", err ? aisb_error_message(err) : "(no message)");
                aisb_error_free(err);
                aisb_policy_free(policy);
                return 1;
        }
        check(strstr(ruleset, "ip daddr 192.0.2.7") != NULL,
              "aisb_policy_ruleset() lists the allowed address");
        free(ruleset);

        /* An error, through the library's own aisb_error_set. */
        r = aisb_policy_set(policy, "memory", "lots", &err);
        check(r == -EINVAL && err && aisb_error_code(err) == -EINVAL &&
              strstr(aisb_error_message(err), "memory") != NULL,
              "a bad value is refused with the library's own error");
        aisb_error_free(err);
        aisb_policy_free(policy);

        check(own_calls == 0, "the library called none of the program's functions");

        /* The program gets its own. */
        strv_free(NULL);
        check(buffer_append("") == 1 && allowlist_add("") == 2 &&
              strcmp(state_dir(), "the program's state") == 0 && http_send(1) == 2 &&
              netpolicy_parse("") == 3 && netpolicy_ruleset() == 4 && sha256_hex() == 5 &&
              parse_size("") == 6 && path_check_trusted("") == 7 && aisb_log(10) == 10 &&
              aisb_error_set(11) == 11 && own_calls == 12,
              "the program's own functions are the ones it calls");
        check(archive_dl == 8 && strcmp(entrypoint_capabilities, "the program's capabilities") == 0 &&
              netpolicy_needed_capabilities == 9,
              "the program's own data are the ones it reads");
        return failures ? 1 : 0;
}
