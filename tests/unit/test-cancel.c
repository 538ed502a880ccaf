/* SPDX-License-Identifier: MIT */
/*
 * The library inside a long-running program, against the fake libpod service: a hung service
 * cannot block a caller forever (request timeouts), a run and a build stop when another
 * thread or a callback asks (aisb_ctx_cancel, an event callback's answer), and what happens
 * arrives as typed events (steps, messages, the egress summary).
 */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "fake-podman.h"
#include "internal.h"
#include "run-fixture.h"
#include "../suite-table.h"

static fake_podman *fp;
static aisb_ctx *ctx;
static char state_home[] = "/tmp/aisb-test-cancel-XXXXXX";

static void setup(void)
{
        unit_podman_start(&fp, &ctx);
}

static void teardown(void)
{
        unit_podman_stop(fp, ctx);
}

/* A run's policy (run-fixture.h) without the working directory. */
static aisb_policy *new_policy(void)
{
        return POLICY({ "no-cwd", "true" }, RUN_SETTINGS);
}

/* err by address: it is read after the call that fills it (argument order is unspecified). */
static void expect_error(int r, int code, aisb_error **errp, const char *needle)
{
        aisb_error *err = *errp;
        *errp = NULL;
        ck_assert_int_eq(r, code);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'",
                      aisb_error_message(err), needle);
        aisb_error_free(err);
}

/* An answer that takes minutes to arrive: 64 KiB, one byte at a time. */
static void route_slow(const char *method, const char *path)
{
        size_t size = 64 * 1024;
        char *slow = malloc(size + 1);
        memset(slow, ' ', size);
        slow[size] = 0;
        fake_podman_route(fp, method, path, 200, "text/plain", slow, FAKE_TRICKLE, 0);
        free(slow);
}

/* The routes of a run whose sandbox runs until it is removed. */
static void route_endless_run(void)
{
        route_sandbox(fp, "[\"a host fact\"]", 1);
        fake_podman_route(fp, "POST", "/containers/c0ffee/attach", 101, NULL, "", FAKE_HIJACK_UNTIL_DELETE, 1);
}

typedef struct later {
        int delay_ms;
        const char *wait_method, *wait_path; /* first wait for this request, when set */
        void (*before)(void);                /* then do this, when set */
} later;

static void *cancel_later(void *userdata)
{
        later *l = userdata;
        for (int i = 0; l->wait_method && fake_podman_find_request(fp, l->wait_method, l->wait_path) < 0 && i < 1000; i++)
                nanosleep(&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        if (l->before)
                l->before();
        nanosleep(&(struct timespec) { l->delay_ms / 1000, (l->delay_ms % 1000) * 1000000L }, NULL);
        aisb_ctx_cancel(ctx);
        return NULL;
}

/* aisb_image_ensure of p fails with code, its error naming needle, and gives no tag. */
static void expect_image_error(const aisb_policy *p, int code, const char *needle)
{
        aisb_error *err = NULL;
        char *tag = NULL;
        expect_error(aisb_image_ensure(ctx, p, &tag, NULL, &err), code, &err, needle);
        ck_assert_ptr_null(tag);
}

/* A run of p without input fails with code, its error naming needle; when l is set, another
 * thread cancels it as l says, and has ended when this returns. */
static void expect_run_error(const aisb_policy *p, later *l, int code, const char *needle)
{
        aisb_io *io = io_without_input();
        pthread_t t;
        if (l)
                ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, l), 0);
        int exit_code = -1;
        aisb_error *err = NULL;
        expect_error(aisb_run(ctx, p, io, &exit_code, &err), code, &err, needle);
        if (l)
                pthread_join(t, NULL);
        aisb_io_free(io);
}

/* ---- a hung service ---- */

START_TEST(test_timeout_request)
{
        route_slow("GET", "/images/*/exists");
        aisb_ctx_set_timeout(ctx, 300);
        aisb_policy *p = new_policy();
        expect_image_error(p, -ETIMEDOUT, "did not answer in time");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_timeout_run)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        route_slow("GET", "/volumes/*/exists");
        aisb_ctx_set_timeout(ctx, 300);
        aisb_policy *p = new_policy();
        expect_run_error(p, NULL, -ETIMEDOUT, "volumes");
        ck_assert_int_eq(fake_podman_find_request(fp, "POST", "/containers/create"), -1);
        aisb_policy_free(p);
}
END_TEST

/* ---- cancellation from another thread ---- */

START_TEST(test_cancel_while_preparing)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        route_slow("GET", "/volumes/*/exists");
        aisb_policy *p = new_policy();
        later l = { .wait_method = "GET", .wait_path = "/volumes/" };
        expect_run_error(p, &l, -ECANCELED, "stopped");
        ck_assert_int_eq(fake_podman_find_request(fp, "POST", "/containers/create"), -1);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_cancel_while_running)
{
        route_endless_run();
        aisb_policy *p = new_policy();
        later l = { .wait_method = "POST", .wait_path = "/start", .delay_ms = 100 };
        expect_run_error(p, &l, -ECANCELED, "the sandbox was removed");
        /* Removed, and by the cancel: nothing waited for an exit that never came. */
        ck_assert_int_ge(fake_podman_find_request(fp, "DELETE", "/containers/c0ffee"), 0);
        ck_assert_int_eq(fake_podman_find_request(fp, "POST", "/wait"), -1);
        aisb_policy_free(p);
}
END_TEST

/* A cancel while nothing runs stops the next operation, and only that one. */
START_TEST(test_cancel_before_and_after)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        aisb_policy *p = new_policy();
        aisb_ctx_cancel(ctx);
        expect_image_error(p, -ECANCELED, "stopped");
        ck_assert_int_eq(fake_podman_find_request(fp, "GET", "/images/"), -1);
        char *tag = NULL;
        ck_assert_int_eq(aisb_image_ensure(ctx, p, &tag, NULL, NULL), 0);
        ck_assert_ptr_nonnull(tag);
        free(tag);
        aisb_policy_free(p);
}
END_TEST

/* ---- events ---- */

typedef struct seen {
        char steps[256];
        unsigned messages, debug_messages, build_lines, egress;
        unsigned long allowed, denied, failed;
        char denied_name[64];
        bool stop_on_build;
        bool summary_after_egress; /* the egress summary's message came after its event */
} seen;

static int on_event(const aisb_event *e, void *userdata)
{
        seen *s = userdata;
        switch (e->type) {
        case AISB_EVENT_STEP:
                ck_assert_ptr_nonnull(e->text);
                snprintf(s->steps + strlen(s->steps), sizeof s->steps - strlen(s->steps), "%s%s",
                         s->steps[0] ? " " : "", e->text);
                break;
        case AISB_EVENT_LOG:
                ck_assert_ptr_nonnull(e->text);
                s->messages++;
                s->debug_messages += e->level == AISB_LOG_DEBUG;
                if (startswith(e->text, "egress: "))
                        s->summary_after_egress = s->egress == 1;
                break;
        case AISB_EVENT_BUILD_OUTPUT:
                s->build_lines++;
                return s->stop_on_build ? 1 : 0;
        case AISB_EVENT_EGRESS:
                s->egress++;
                s->allowed = e->egress->allowed;
                s->denied = e->egress->denied;
                s->failed = e->egress->failed;
                if (e->egress->denied_names[0])
                        snprintf(s->denied_name, sizeof s->denied_name, "%s", e->egress->denied_names[0]);
                ck_assert_ptr_null(e->egress->denied_names[e->egress->denied]);
                break;
        default:
                /* A kind this test does not know: a handler ignores it. */
                break;
        }
        return 0;
}

START_TEST(test_build_stopped_by_its_callback)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 404, "application/json", "{\"message\":\"no such image\"}",
                          FAKE_NORMAL, 0);
        /* A build that would print its lines slowly for minutes. */
        char lines[8192] = "";
        for (int i = 0; i < 100; i++)
                snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "{\"stream\":\"STEP %d: RUN make\\n\"}\n", i);
        fake_podman_route(fp, "POST", "/build", 200, "application/json", lines, FAKE_TRICKLE, 1);
        seen s = { .stop_on_build = true };
        aisb_ctx_set_event_fn(ctx, on_event, &s);
        aisb_policy *p = new_policy();
        expect_image_error(p, -ECANCELED, "stopped");
        /* The first line ended it: the callback never saw a second one. */
        ck_assert_uint_eq(s.build_lines, 1);
        aisb_policy_free(p);
}
END_TEST

/* A listener of this user on 127.0.0.1: what makes the fake gate "ours" (gate_port_ours). */
static int listen_loopback(unsigned *ret_port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &a, sizeof a), 0);
        ck_assert_int_eq(listen(fd, 1), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &a, &len), 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}

/* What the gate's squid logs while the sandbox runs. */
static void append_access_log(void)
{
        char gates[PATH_MAX];
        snprintf(gates, sizeof gates, "%s/ai-sandbox/gates", state_home);
        DIR *d = opendir(gates);
        ck_assert_ptr_nonnull(d);
        struct dirent *e;
        char path[PATH_MAX * 2] = "";
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        snprintf(path, sizeof path, "%s/%s/logs/access.log", gates, e->d_name);
        closedir(d);
        ck_assert(path[0]);
        FILE *f = fopen(path, "ae");
        ck_assert_ptr_nonnull(f);
        fputs("1718000000.100 127.0.0.1 CONNECT example.com:443 200 TCP_TUNNEL 5120 - example.com:443\n"
              "1718000000.200 127.0.0.1 CONNECT evil.test:443 403 TCP_DENIED 0 ERR_ACCESS_DENIED evil.test:443\n",
              f);
        fclose(f);
}

START_TEST(test_events_of_a_run)
{
        unsigned port;
        int listener = listen_loopback(&port);
        char inspect[256];
        snprintf(inspect, sizeof inspect,
                 "{\"State\":{\"Running\":true},\"Config\":{\"Labels\":{\"aisb.gate.port\":\"%u\"}}}", port);
        fake_podman_route(fp, "GET", "/containers/aisb-gate-*/json", 200, "application/json", inspect, FAKE_NORMAL, 0);
        route_endless_run();
        seen s = {};
        aisb_ctx_set_event_fn(ctx, on_event, &s);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "net", "allow", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "allow", "example.com", NULL), 0);
        later l = { .wait_method = "POST", .wait_path = "/start", .before = append_access_log, .delay_ms = 50 };
        expect_run_error(p, &l, -ECANCELED, "removed");
        ck_assert_str_eq(s.steps, "image volume network gate bridge create start stream remove");
        /* The summary, typed, then as a message. */
        ck_assert_uint_eq(s.egress, 1);
        ck_assert_uint_eq(s.allowed, 1);
        ck_assert_uint_eq(s.denied, 1);
        ck_assert_uint_eq(s.failed, 0);
        ck_assert_str_eq(s.denied_name, "evil.test");
        ck_assert_uint_ge(s.messages, 1);
        ck_assert_uint_ge(s.debug_messages, 1); /* the create's warning */
        ck_assert(s.summary_after_egress);
        /* The gate was found running and ours: the one container created is the sandbox. */
        unsigned creates = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                creates += streq(fake_podman_request_method(fp, i), "POST") &&
                           strstr(fake_podman_request_path(fp, i), "/containers/create") != NULL;
        ck_assert_uint_eq(creates, 1);
        ck_assert_int_ge(fake_podman_find_request(fp, "GET", "/containers/aisb-gate-"), 0);
        close(listener);
        aisb_policy_free(p);
}
END_TEST

static Suite *cancel_suite(void)
{
        Suite *s = suite_create("cancel");
        suite_add_tests(s, "timeouts", setup, teardown, test_timeout_request, test_timeout_run);
        suite_add_tests(s, "cancel", setup, teardown, test_cancel_while_preparing, test_cancel_while_running,
                        test_cancel_before_and_after, test_build_stopped_by_its_callback);
        suite_add_tests(s, "events", setup, teardown, test_events_of_a_run);
        return s;
}

int main(void)
{
        return unit_run_in_state_home(cancel_suite(), state_home);
}
