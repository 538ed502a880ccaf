/* SPDX-License-Identifier: MIT */
/* Learn, then lock (lib/gate/allow.c): what a project's last run was refused, read back from the
 * session log, becomes names to propose; an address the gate refused is reported, never
 * proposed, so never written; whether the run's gate was shared is told; the project's file
 * takes names only and nothing when one line is refused. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "unit.h"
#include "fileio.h"
#include "../suite-table.h"

static char state[64], config[64], project[64];

static void setup(void)
{
        snprintf(state, sizeof state, "/tmp/aisb-test-learn-state-XXXXXX");
        snprintf(config, sizeof config, "/tmp/aisb-test-learn-config-XXXXXX");
        snprintf(project, sizeof project, "/tmp/aisb-test-learn-project-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(state));
        ck_assert_ptr_nonnull(mkdtemp(config));
        ck_assert_ptr_nonnull(mkdtemp(project));
        ck_assert_int_eq(setenv("XDG_STATE_HOME", state, 1), 0);
        ck_assert_int_eq(setenv("XDG_CONFIG_HOME", config, 1), 0);
}

static void teardown(void)
{
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", state, config, project);
        ck_assert_int_eq(system(cmd), 0);
        unsetenv("XDG_STATE_HOME");
        unsetenv("XDG_CONFIG_HOME");
}

/* The session log holding these records (one JSON object a line), @ for the project. */
static void write_log(const char *records)
{
        char dir[128], path[160];
        snprintf(dir, sizeof dir, "%s/ai-sandbox", state);
        ck_assert_int_eq(mkdir_p(dir, 0700), 0);
        snprintf(path, sizeof path, "%s/sessions.log", dir);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        for (const char *c = records; *c; c++)
                if (*c == '@')
                        fputs(project, f);
                else
                        fputc(*c, f);
        fclose(f);
}

static aisb_policy *project_policy(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        return p;
}

/* What a call gave: its lines joined by '|', and how many. */
typedef struct lines {
        buffer text;
        size_t n;
} lines;

static void collect(const char *line, void *userdata)
{
        lines *l = userdata;
        ck_assert_int_ge(buffer_printf(&l->text, "%s%s", l->n++ ? "|" : "", line), 0);
}

static void lines_done(lines *l)
{
        buffer_free(&l->text);
}

/* A run through its own gate (a secret's) refused names, addresses with and without a port,
 * an IP literal's request and a request the gate saw whole: names and that request proposed,
 * the addresses reported, never among the proposals. */
START_TEST(test_names_only)
{
        write_log("{\"time\":1,\"project\":\"@\",\"egress\":{\"denied_names\":[\"old.test\"],\"shared_gate\":false}}\n"
                  "{\"time\":1800000000,\"project\":\"@\",\"egress\":{\"denied\":6,"
                  "\"denied_names\":[\"denied.test\",\"192.168.1.10:22\",\"10.0.0.1\",\"[2001:db8::1]:443\","
                  "\"api.test:8443\",\"denied.test\",\"rules.test\"],"
                  "\"denied_requests\":[\"GET https://rules.test/other\",\"GET http://192.168.1.10:22/\"],"
                  "\"shared_gate\":false}}\n"
                  "{\"time\":2,\"project\":\"/elsewhere\",\"egress\":{\"denied_names\":[\"not-ours.test\"]}}\n");
        aisb_policy *p = project_policy();
        lines proposed = {}, addresses = {};
        long long when = 0;
        int shared = -1;
        ck_assert_int_eq(aisb_allow_proposals(p, collect, &proposed, &when, NULL), 3);
        ck_assert_str_eq(proposed.text.data, "rules.test GET /other|denied.test|api.test:8443");
        ck_assert_int_eq(when, 1800000000);
        ck_assert_int_eq(aisb_allow_refused_addresses(p, collect, &addresses, &shared, NULL), 3);
        ck_assert_str_eq(addresses.text.data, "192.168.1.10:22|10.0.0.1|[2001:db8::1]:443");
        ck_assert_int_eq(shared, 0);
        lines_done(&proposed);
        lines_done(&addresses);
        aisb_policy_free(p);
}
END_TEST

/* Whether the last run's gate was shared, as aisb_allow_refused_addresses says: a shared
 * gate's run says so; a record from before gates said counts as shared; with no run of this
 * project, nothing (no proposal either), and *ret_shared untouched (7). No address is
 * reported in any. */
static const struct {
        const char *log;
        int shared;
} shared_cases[] = {
        { "{\"time\":3,\"project\":\"@\",\"egress\":{\"denied_names\":[\"a.test\"],\"shared_gate\":true}}\n", 1 },
        { "{\"time\":3,\"project\":\"@\",\"egress\":{\"denied_names\":[\"a.test\"]}}\n", 1 },
        { "{\"time\":3,\"project\":\"/elsewhere\",\"egress\":{}}\n", 7 },
};

START_TEST(test_shared_gate)
{
        write_log(shared_cases[_i].log);
        aisb_policy *p = project_policy();
        lines l = {};
        int shared = 7;
        ck_assert_int_eq(aisb_allow_refused_addresses(p, collect, &l, &shared, NULL), 0);
        ck_assert_int_eq(shared, shared_cases[_i].shared);
        if (shared_cases[_i].shared == 7)
                ck_assert_int_eq(aisb_allow_proposals(p, collect, &l, NULL, NULL), 0);
        ck_assert_uint_eq(l.n, 0);
        aisb_policy_free(p);
}
END_TEST

static char *read_text(const char *path)
{
        char *text = NULL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        (void) read_full_fd(fd, 1 << 20, &text, NULL);
        close(fd);
        return text;
}

/* The project's file takes names; an address line refuses the whole write, so nothing of it
 * lands; the user's file takes what its reader takes. */
START_TEST(test_append)
{
        aisb_policy *p = project_policy();
        const char *const names[] = { "denied.test", "api.test:8443", NULL };
        char path[160];
        snprintf(path, sizeof path, "%s/.ai-sandbox/allow", project);
        /* A flag it does not know writes nowhere. */
        ck_assert_int_eq(aisb_allowlist_append(p, AISB_ALLOWLIST_PROJECT | 1u << 7, names, NULL), -EINVAL);
        ck_assert_int_eq(access(path, F_OK), -1);
        ck_assert_int_eq(aisb_allowlist_append(p, AISB_ALLOWLIST_PROJECT, names, NULL), 0);
        char *text = read_text(path);
        ck_assert_str_eq(text, "denied.test\napi.test:8443\n");
        free(text);
        const char *const mixed[] = { "more.test", "192.168.1.10:22", NULL };
        aisb_error *err = NULL;
        ck_assert_int_lt(aisb_allowlist_append(p, AISB_ALLOWLIST_PROJECT, mixed, &err), 0);
        ck_assert_ptr_nonnull(err);
        aisb_error_free(err);
        text = read_text(path);
        ck_assert_str_eq(text, "denied.test\napi.test:8443\n");
        free(text);
        /* A file whose last line has no newline (the agent can write this one) gets one before
         * the new line: the name is never glued onto a comment or another name. */
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "# reviewed", 10), 10);
        close(fd);
        const char *const one[] = { "wanted.test", NULL };
        ck_assert_int_eq(aisb_allowlist_append(p, AISB_ALLOWLIST_PROJECT, one, NULL), 0);
        text = read_text(path);
        ck_assert_str_eq(text, "# reviewed\nwanted.test\n");
        free(text);
        /* A link planted at the project's file is not written through. */
        ck_assert_int_eq(unlink(path), 0);
        char target[160];
        snprintf(target, sizeof target, "%s/target", project);
        ck_assert_int_eq(symlink(target, path), 0);
        err = NULL;
        ck_assert_int_lt(aisb_allowlist_append(p, AISB_ALLOWLIST_PROJECT, names, &err), 0);
        aisb_error_free(err);
        ck_assert_int_eq(access(target, F_OK), -1);
        aisb_policy_free(p);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("learn");
        suite_add_tests(s, "proposals", setup, teardown, test_names_only, test_append);
        suite_add_loop(s, "shared", setup, teardown, test_shared_gate, ELEMENTSOF(shared_cases));
        return unit_run(s);
}
