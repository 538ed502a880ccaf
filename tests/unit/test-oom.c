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
#include "unit.h"
#include "fail-alloc.h"

FAIL_ALLOC_DEFINE()

/* A call's result: fine, or a failure that says what it was. check allocates in its
 * assertions (and exits when that fails): no failure is injected while they run. */
#define CHECKED(call)                                                                        \
        ({                                                                                   \
                aisb_error *_e = NULL;                                                       \
                int _r = (call);                                                             \
                long _saved = countdown;                                                     \
                countdown = -1;                                                              \
                ck_assert_msg(_r >= 0 || _e, "%s failed (%d) without an error (allocation %ld)", \
                              #call, _r, n);                                                 \
                if (_r < 0)                                                                  \
                        ck_assert_ptr_nonnull(aisb_error_message(_e));                       \
                countdown = _saved;                                                          \
                aisb_error_free(_e);                                                         \
                _r;                                                                          \
        })
#define ERR &_e

/* The policy half of the API; returns whether every call went through. */
static bool walk_policy(long n)
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
        char *text = NULL;
        if (ok)
                ok = CHECKED(aisb_policy_format(p, &text, ERR)) >= 0;
        free(text);
        text = NULL;
        if (ok)
                ok = CHECKED(aisb_policy_ruleset(p, &text, ERR)) >= 0;
        free(text);
        text = NULL;
        if (ok)
                ok = CHECKED(aisb_policy_containerfile(p, &text, ERR)) >= 0;
        free(text);
        text = NULL;
        if (ok)
                ok = CHECKED(aisb_policy_inspect(p, &text, ERR)) >= 0;
        free(text);
        aisb_policy_free(p);
        return ok;
}

static fake_podman *fp;

static int discard(const aisb_output *output, void *userdata)
{
        return 0;
}

/* A whole run; the policy is made before the countdown starts. */
static bool walk_run(long n, const aisb_policy *p)
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
        long n = 0;
        for (;; n++) {
                countdown = n;
                failed_one = false;
                bool ok = walk_policy(n);
                countdown = -1;
                if (!failed_one) {
                        /* No allocation failed: the walk is done, and must have gone through. */
                        ck_assert(ok);
                        break;
                }
        }
        fprintf(stderr, "policy: %ld allocations\n", n);
        ck_assert_int_gt(n, 100);
}
END_TEST

/* Every failure in turn, through the same loop: walk(n) says whether its calls went through. */
static long every_allocation(bool (*walk)(long n, const void *userdata), const void *userdata)
{
        long n = 0;
        for (;; n++) {
                countdown = n;
                failed_one = false;
                bool ok = walk(n, userdata);
                countdown = -1;
                if (!failed_one) {
                        ck_assert(ok);
                        return n;
                }
        }
}

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
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/volumes/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        unit_route_home_volume(fp);
        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json",
                          "{\"Id\":\"c0ffee\",\"Warnings\":[\"w\"]}", FAKE_NORMAL, 0);
        uint8_t frames[256];
        size_t size = fake_podman_frame(frames, 1, "hello \x1b]0;title\x07world\n");
        size += fake_podman_frame(frames + size, 2, "to stderr\n");
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, size,
                                FAKE_HIJACK_NO_WAIT, 0);
        fake_podman_route(fp, "POST", "/containers/c0ffee/start", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/c0ffee/wait", 200, "application/json", "3\n", FAKE_NORMAL, 0);
        fake_podman_route(fp, "DELETE", "/containers/c0ffee", 200, "application/json", "[]", FAKE_NORMAL, 0);
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "net", "none", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-pi-config", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-agents", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "TOKEN=secret", NULL), 0);
        long n = 0;
        for (;; n++) {
                countdown = n;
                failed_one = false;
                bool ok = walk_run(n, p);
                countdown = -1;
                if (!failed_one) {
                        ck_assert(ok);
                        break;
                }
        }
        fprintf(stderr, "run: %ld allocations\n", n);
        ck_assert_int_gt(n, 50);
        aisb_policy_free(p);
        fake_podman_stop(fp);
}
END_TEST

int main(void)
{
        unsetenv("AISB_HOME_VOLUME");
        char state[] = "/tmp/aisb-test-oom-XXXXXX";
        if (!mkdtemp(state))
                return EXIT_FAILURE;
        setenv("XDG_STATE_HOME", state, 1);
        setenv("XDG_CONFIG_HOME", state, 1);
        Suite *s = suite_create("oom");
        TCase *tc = tcase_create("oom");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_oom_policy);
        tcase_add_test(tc, test_oom_run);
        tcase_add_test(tc, test_oom_kube);
        suite_add_tcase(s, tc);
        int failed = unit_run(s) != EXIT_SUCCESS;
        char command[128];
        snprintf(command, sizeof command, "rm -rf '%s'", state);
        if (system(command) != 0)
                failed++;
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
