/* SPDX-License-Identifier: MIT */
/*
 * Out of memory, at every allocation: the test replaces malloc, calloc and realloc, and for
 * N = 0, 1, 2, ... makes the N-th allocation of this thread fail (and only that one), then
 * walks the public API (a policy set, printed and described; a whole run against the fake
 * service). Whatever fails must fail cleanly: a negative code, and *err set to an error the
 * caller can read, never a crash. The fake service runs on its own thread, whose
 * allocations are never failed. Not built with the sanitizers, which replace malloc
 * themselves; scripts/sanitize runs the rest under LeakSanitizer.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>

#include "fake-podman.h"
#include "internal.h"
#include "run-fixture.h"
#include "fail-alloc.h"
#include "../suite-table.h"

FAIL_ALLOC_DEFINE()

/* A call's result: fine, or a failure that says what it was. check allocates in its
 * assertions (and exits when that fails): no failure is injected while they run. */
#define CHECKED(call) CHECKED_AS(#call, call)
#define CHECKED_AS(name, call)                                                               \
        ({                                                                                   \
                aisb_error *_e = NULL;                                                       \
                int _r = (call);                                                             \
                long _saved = countdown;                                                     \
                countdown = -1;                                                              \
                ck_assert_msg(_r >= 0 || _e, "%s failed (%d) without an error (allocation %ld)", \
                              name, _r, n);                                                  \
                if (_r < 0)                                                                  \
                        ck_assert_ptr_nonnull(aisb_error_message(_e));                       \
                countdown = _saved;                                                          \
                aisb_error_free(_e);                                                         \
                _r;                                                                          \
        })
#define ERR &_e

/* Every failure in turn, through the same loop: walk(n) says whether its calls went through;
 * returns how many allocations the walk makes. */
static long every_allocation(bool (*walk)(long n, const void *userdata), const void *userdata)
{
        long n = 0;
        for (;; n++) {
                countdown = n;
                failed_one = false;
                bool ok = walk(n, userdata);
                countdown = -1;
                if (!failed_one) {
                        /* No allocation failed: the walk is done, and must have gone through. */
                        ck_assert(ok);
                        return n;
                }
        }
}

/* The policy half of the API; returns whether every call went through. */
static bool walk_policy(long n, const void *userdata)
{
        aisb_policy *p = NULL;
        if (CHECKED(aisb_policy_new(&p, ERR)) < 0)
                return false;
        bool ok = CHECKED(aisb_policy_apply_environment(p, ERR)) >= 0;
        const char *const keys[][2] = {
                { "memory", "2g" },       { "cpus", "1.5" },         { "env", "TOKEN=secret" },
                { "allow", "example.com" }, { "allow", "198.51.100.0/24:443" }, { "install", "jq" },
                { "gate-add-host", "db.internal:10.1.2.3" }, { "thinking", "high" },
                { "no-agents", "true" },
                /* Run as root (CI), the entrypoint would refuse uid 0 for the ruleset. */
                { "insecure-keep-root", getuid() == 0 ? "true" : "false" },
        };
        for (size_t i = 0; ok && i < ELEMENTSOF(keys); i++)
                ok = CHECKED(aisb_policy_set(p, keys[i][0], keys[i][1], ERR)) >= 0;
        /* The policy printed every way there is. */
        static const struct {
                const char *name;
                int (*print)(const aisb_policy *p, char **ret_text, aisb_error **err);
        } printers[] = {
                { "aisb_policy_format", aisb_policy_format },
                { "aisb_policy_ruleset", aisb_policy_ruleset },
                { "aisb_policy_containerfile", aisb_policy_containerfile },
                { "aisb_policy_inspect", aisb_policy_inspect },
        };
        for (size_t i = 0; ok && i < ELEMENTSOF(printers); i++) {
                char *text = NULL;
                ok = CHECKED_AS(printers[i].name, printers[i].print(p, &text, ERR)) >= 0;
                free(text);
        }
        aisb_policy_free(p);
        return ok;
}

static fake_podman *fp;

static int discard(const aisb_output *output, void *userdata)
{
        return 0;
}

/* A whole run; the policy is made before the countdown starts. */
static bool walk_run(long n, const void *p)
{
        aisb_ctx *ctx = NULL;
        aisb_io *io = NULL;
        bool ok = CHECKED(aisb_ctx_new(&ctx, ERR)) >= 0;
        if (ok)
                ok = CHECKED(aisb_ctx_set_socket(ctx, fake_podman_socket(fp), ERR)) >= 0;
        if (ok)
                ok = CHECKED(aisb_io_new(&io, ERR)) >= 0;
        if (ok) {
                aisb_io_set_stdin(io, -1);
                aisb_io_set_output_fn(io, discard, NULL);
                aisb_io_set_output_filter(io, AISB_STREAM_STDOUT | AISB_STREAM_STDERR);
                int code = -1;
                ok = CHECKED(aisb_run(ctx, p, io, &code, ERR)) >= 0 && code == 3;
        }
        aisb_io_free(io);
        aisb_ctx_free(ctx);
        return ok;
}

START_TEST(test_oom_policy)
{
        long n = every_allocation(walk_policy, NULL);
        fprintf(stderr, "policy: %ld allocations\n", n);
        ck_assert_int_gt(n, 100);
}
END_TEST

/* The policy as Kubernetes objects, a gate's and a sandbox's (the policy made before). */
static bool walk_kube(long n, const void *userdata)
{
        char *text = NULL;
        aisb_kube_options o = { .flags = AISB_KUBE_NETFILTER_INIT, .timeout_s = 60 };
        bool ok = CHECKED(aisb_policy_kube(userdata, &o, &text, ERR)) >= 0;
        free(text);
        return ok;
}

START_TEST(test_oom_kube)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        static const char *const keys[][2] = {
                { "no-cwd", "true" }, { "net", "allow" }, { "allow", "example.com" },
                { "allow", "198.51.100.0/24:443" }, { "gate-add-host", "db.internal:10.1.2.3" },
                { "env", "KUBE_TOKEN" }, { "user-allowlist", "" },
        };
        setenv("KUBE_TOKEN", "never in the output", 1);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                ck_assert_int_eq(aisb_policy_set(p, keys[i][0], keys[i][1], NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "entrypoint", getenv("AISB_ENTRYPOINT"), NULL), 0);
        long n = every_allocation(walk_kube, p);
        fprintf(stderr, "kube: %ld allocations\n", n);
        ck_assert_int_gt(n, 100);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_oom_run)
{
        fp = fake_podman_start();
        ck_assert_ptr_nonnull(fp);
        route_sandbox(fp, "[\"w\"]", 0);
        uint8_t frames[256];
        size_t size = fake_podman_frame(frames, 1, "hello \x1b]0;title\x07world\n");
        size += fake_podman_frame(frames + size, 2, "to stderr\n");
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, size,
                                FAKE_HIJACK_NO_WAIT, 0);
        fake_podman_route(fp, "POST", "/containers/c0ffee/wait", 200, "application/json", "3\n", FAKE_NORMAL, 0);
        aisb_policy *p = POLICY({ "no-cwd", "true" }, RUN_SETTINGS, { "env", "TOKEN=secret" });
        long n = every_allocation(walk_run, p);
        fprintf(stderr, "run: %ld allocations\n", n);
        ck_assert_int_gt(n, 50);
        aisb_policy_free(p);
        fake_podman_stop(fp);
}
END_TEST

int main(void)
{
        char state[] = "/tmp/aisb-test-oom-XXXXXX";
        Suite *s = suite_create("oom");
        TCase *tc = suite_add_tests(s, "oom", NULL, NULL, test_oom_policy, test_oom_run, test_oom_kube);
        tcase_set_timeout(tc, 300);
        return unit_run_in_state_home(s, state);
}
