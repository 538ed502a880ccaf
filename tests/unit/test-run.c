/* SPDX-License-Identifier: MIT */
/*
 * The library against a fake libpod service: connection and version checks, image builds
 * streamed as NDJSON, a whole run over a hijacked attach stream, and the bad days: errors,
 * partial reads, a service that dies mid-stream. Also the attach frame demultiplexer alone.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"
#include "fake-podman.h"
#include "run-fixture.h"
#include "fileio.h"
#include "../suite-table.h"

static fake_podman *fp;
static aisb_ctx *ctx;

static void setup(void)
{
        unit_podman_start(&fp, &ctx);
}

static void teardown(void)
{
        unit_podman_stop(fp, ctx);
}

static aisb_policy *new_policy(void)
{
        return POLICY(RUN_SETTINGS);
}

static void expect_error(int r, aisb_error **errp, const char *needle)
{
        aisb_error *err = *errp;
        ck_assert_int_lt(r, 0);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'",
                      aisb_error_message(err), needle);
        aisb_error_free(err);
}

/* The service as it answers, and what connecting to it makes of that: the version seen, or
 * an error that says why not. */
static const struct connect_case {
        const char *version; /* the service's; NULL: the fake's own, 4.3.1 */
        bool ping_down;      /* its /_ping answers 500 */
        const char *seen, *says;
} connect_cases[] = {
        { NULL, false, "4.3.1", NULL },
        { "5.4.2", false, "5.4.2", NULL },
        { "4.2.0", false, NULL, "needs podman 4.3 or newer" },
        { NULL, true, NULL, "500" },
};

START_TEST(test_connect)
{
        const struct connect_case *c = &connect_cases[_i];
        if (c->version)
                fake_podman_set_version(fp, c->version);
        if (c->ping_down)
                fake_podman_route(fp, "GET", "/_ping", 500, "text/plain", "down", FAKE_NORMAL, 0);
        aisb_error *err = NULL;
        int r = aisb_ctx_connect(ctx, &err);
        if (!c->seen) {
                expect_error(r, &err, c->says);
                return;
        }
        ck_assert_msg(r == 0, "podman %s: %s", c->seen, aisb_error_message(err));
        ck_assert_str_eq(aisb_ctx_podman_version(ctx), c->seen);
}
END_TEST

START_TEST(test_connect_nothing_there)
{
        aisb_ctx *other = NULL;
        ck_assert_int_eq(aisb_ctx_new(&other, NULL), 0);
        ck_assert_int_eq(aisb_ctx_set_socket(other, "/nonexistent/podman.sock", NULL), 0);
        aisb_error *err = NULL;
        expect_error(aisb_ctx_connect(other, &err), &err, "/nonexistent/podman.sock");
        aisb_ctx_free(other);
}
END_TEST

/* What a podman service logged as it gave up, and the reason aisb reads in it (NULL: none). */
static const struct {
        const char *log, *reason;
} service_logs[] = {
        { "time=\"t\" level=warning msg=\"\\\"/\\\" is not a shared mount\"\n"
          "time=\"t\" level=error msg=\"invalid internal status, try resetting the pause process "
          "with \\\"podman system migrate\\\": could not find any running process\"\n"
          "time=\"t\" level=info msg=\"bye\"\n",
          "invalid internal status, try resetting the pause process with "
          "\"podman system migrate\": could not find any running process" },
        { "Error: unrecognized command `podman system`", "unrecognized command `podman system`" },
        { "level=warning msg=\"only a warning\"\n\n", NULL },
        { "level=error msg=bare other=x", "bare" },
        /* logrus's error= field is the cause; escapes come out as text on one line. */
        { "time=\"t\" level=fatal msg=\"cannot set up\" error=\"open /x: denied\\nline two \\u00e9\"\n",
          "cannot set up: open /x: denied line two \\u00e9" },
        /* A warning that quotes "level=error" in its message is still a warning. */
        { "level=warning msg=\"saw level=error msg=x\"\n", NULL },
        { "level=error msg=\"cut \\", "cut \\" },
};

START_TEST(test_service_log_reason)
{
        /* One variable for all, as a caller's: a log without a reason must clear it. */
        char *reason = NULL;
        for (size_t i = 0; i < ELEMENTSOF(service_logs); i++) {
                const char *want = service_logs[i].reason;
                ck_assert_int_eq(service_log_reason(service_logs[i].log, &reason), 0);
                ck_assert_msg(want ? reason && streq(reason, want) : !reason, "log %zu: reason '%s', want '%s'", i,
                              reason ? reason : "(none)", want ? want : "(none)");
                free(reason);
        }
}
END_TEST

/* No socket answers and the podman we start refuses to serve, as podman does when killed
 * processes left its state inconsistent: its reason comes back at once, not a timeout. */
START_TEST(test_service_refuses_to_start)
{
        char dir[] = "/tmp/aisb-unit-service.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char path[512], run[512], bin[600];
        snprintf(path, sizeof path, "%s/bin", dir);
        snprintf(run, sizeof run, "%s/run", dir);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        ck_assert_int_eq(mkdir(run, 0700), 0);
        snprintf(bin, sizeof bin, "%s/podman", path);
        FILE *f = fopen(bin, "we");
        ck_assert_ptr_nonnull(f);
        fputs("#!/bin/sh\n"
              "echo 'time=\"t\" level=error msg=\"invalid internal status, try resetting the pause "
              "process with \\\"podman system migrate\\\": could not find any running process\"' >&2\n"
              "exit 1\n", f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(chmod(bin, 0755), 0);
        char *old_path = strdup(getenv("PATH"));
        char new_path[4096];
        snprintf(new_path, sizeof new_path, "%s:%s", path, old_path);
        setenv("PATH", new_path, 1);
        setenv("XDG_RUNTIME_DIR", run, 1);
        unsetenv("CONTAINER_HOST");

        aisb_ctx *other = NULL;
        ck_assert_int_eq(aisb_ctx_new(&other, NULL), 0);
        aisb_error *err = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        expect_error(aisb_ctx_connect(other, &err), &err,
                     "exited: invalid internal status, try resetting the pause process with "
                     "\"podman system migrate\"");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* Not a timing assertion: the 20 s start timeout must not be what ended the wait. */
        ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 15);
        aisb_ctx_free(other);
        setenv("PATH", old_path, 1);
        free(old_path);
        ck_assert(remove_tree(dir));
}
END_TEST

typedef struct lines {
        char text[4096];
        char progress[4096]; /* the lines at AISB_LOG_INFO */
        int count;
} lines;

static int collect_line(const aisb_event *e, void *userdata)
{
        lines *l = userdata;
        if (e->type != AISB_EVENT_BUILD_OUTPUT)
                return 0;
        aisb_log_level level = e->level;
        const char *line = e->text;
        if (level == AISB_LOG_INFO) {
                strncat(l->progress, line, sizeof l->progress - strlen(l->progress) - 2);
                strcat(l->progress, "\n");
        } else
                ck_assert_int_eq(level, AISB_LOG_DEBUG);
        strncat(l->text, line, sizeof l->text - strlen(l->text) - 2);
        strcat(l->text, "\n");
        l->count++;
        return 0;
}

static const char build_ok[] =
        "{\"stream\":\"STEP 1/3: FROM base\\n\"}\n"
        "{\"stream\":\"STEP 2/3: RUN apt-get\\n\"}\n"
        "{\"stream\":\"partial \"}\n{\"stream\":\"line\\n\"}\n"
        "{\"stream\":\"[2/2] STEP 3/3: COPY x y\\n--> Using cache 0123abcd\\n\"}\n"
        "{\"stream\":\"[2 STEP 4/4 is the command's\\n\"}\n"
        "{\"stream\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\\n\"}\n";

/* Images missing for the first `missing` checks, then there; their builds stream build_ok
 * as mode says; the builds and the later checks answered `times` times (0: always). */
static void route_builds(int missing, fake_mode mode, int times)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 404, NULL, "", FAKE_NORMAL, missing);
        fake_podman_route(fp, "POST", "/build", 200, "application/json", build_ok, mode, times);
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, times);
}

/* Whether libarchive is in this process (each test is its own fork). */
static bool libarchive_mapped(void)
{
        FILE *f = fopen("/proc/self/maps", "re");
        ck_assert_ptr_nonnull(f);
        char line[1024];
        bool found = false;
        while (!found && fgets(line, sizeof line, f))
                found = strstr(line, "/libarchive.so") != NULL;
        fclose(f);
        return found;
}

/* That libarchive is not loaded; unknowable without forking (an earlier test loaded it). */
static void expect_no_libarchive(const char *why)
{
        const char *fork_mode = getenv("CK_FORK");
        if (!fork_mode || !streq(fork_mode, "no"))
                ck_assert_msg(!libarchive_mapped(), "%s", why);
}

/* A build streamed as the service does, or one byte at a time. */
static const fake_mode build_modes[] = { FAKE_CHUNKED, FAKE_TRICKLE };

START_TEST(test_build_streamed)
{
        route_builds(1, build_modes[_i], 1);
        lines l = {};
        aisb_ctx_set_event_fn(ctx, collect_line, &l);
        aisb_policy *p = new_policy();
        char *tag = NULL;
        int built = 0;
        ck_assert_int_eq(aisb_image_ensure(ctx, p, &tag, &built, NULL), 0);
        ck_assert_int_eq(built, 1);
        ck_assert(startswith(tag, "localhost/aisb:"));
        ck_assert_msg(libarchive_mapped(), "a build packed a tar without loading libarchive?");
        ck_assert_ptr_nonnull(strstr(l.text, "STEP 2/3: RUN apt-get\n"));
        /* Progress at INFO, the commands' output at DEBUG. */
        ck_assert_str_eq(l.progress, "STEP 1/3: FROM base\nSTEP 2/3: RUN apt-get\n"
                                     "[2/2] STEP 3/3: COPY x y\n--> Using cache 0123abcd\n");
        ck_assert_ptr_nonnull(strstr(l.text, "partial line\n") ? strstr(l.text, "partial line\n")
                                                                : strstr(l.text, "partial \nline\n"));
        ssize_t b = fake_podman_find_request(fp, "POST", "/libpod/build");
        ck_assert_int_ge(b, 0);
        const char *path = fake_podman_request_path(fp, (size_t) b);
        ck_assert_ptr_nonnull(strstr(path, "layers=1"));
        ck_assert_ptr_nonnull(strstr(path, "outputformat=application%2Fvnd.oci.image.manifest.v1%2Bjson"));
        ck_assert_str_eq(fake_podman_request_header(fp, (size_t) b, "Content-Type"), "application/x-tar");
        /* The body is the tar: its first member is the Containerfile. */
        ck_assert_str_eq(fake_podman_request_body(fp, (size_t) b), "Containerfile");
        ck_assert_uint_eq(fake_podman_routes_pending(fp), 0);
        free(tag);
        aisb_policy_free(p);
}
END_TEST

/* A build that ran out of disk says so, whether the kernel's words or apt's (which checks
 * before it downloads) are in the step's output. */
START_TEST(test_build_out_of_disk)
{
        static const char *const words[] = {
                "{\"stream\":\"write /var/lib/x: no space left on device\\n\"}\n",
                "{\"stream\":\"E: You don't have enough free space in /var/cache/apt/archives/.\\n\"}\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                char body[512];
                snprintf(body, sizeof body, "{\"stream\":\"STEP 1/2: RUN apt-get\\n\"}\n%s"
                                            "{\"error\":\"exit status 100\"}\n", words[i]);
                fake_podman_route(fp, "GET", "/images/*/exists", 404, NULL, "", FAKE_NORMAL, 1);
                fake_podman_route(fp, "POST", "/build", 200, "application/json", body, FAKE_NORMAL, 1);
                aisb_policy *p = new_policy();
                aisb_error *err = NULL;
                ck_assert_int_eq(aisb_image_ensure(ctx, p, NULL, NULL, &err), -ENOSPC);
                ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "no space left on device"));
                aisb_error_free(err);
                aisb_policy_free(p);
        }
}
END_TEST

/* A policy whose run needs the gate. */
static aisb_policy *allow_policy(void)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "net", "allow", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "allow", "example.org", NULL), 0);
        return p;
}

/* Allow mode with neither image present: the gate's image is built alongside the sandbox's,
 * on a connection of its own, and is there when aisb_image_ensure returns. */
START_TEST(test_build_gate_alongside)
{
        route_builds(2, FAKE_CHUNKED, 0);
        lines l = {};
        aisb_ctx_set_event_fn(ctx, collect_line, &l);
        aisb_policy *p = allow_policy();
        ck_assert_int_eq(aisb_image_ensure(ctx, p, NULL, NULL, NULL), 0);
        size_t n = fake_podman_request_count(fp), builds = 0;
        unsigned conn[2] = {};
        bool gate = false, sandbox = false;
        for (size_t i = 0; i < n; i++) {
                if (!streq(fake_podman_request_method(fp, i), "POST") ||
                    !strstr(fake_podman_request_path(fp, i), "/libpod/build?"))
                        continue;
                ck_assert_uint_lt(builds, 2);
                conn[builds++] = fake_podman_request_connection(fp, i);
                gate |= strstr(fake_podman_request_path(fp, i), "t=localhost%2Faisb-gate%3A") != NULL;
                sandbox |= strstr(fake_podman_request_path(fp, i), "t=localhost%2Faisb%3A") != NULL;
        }
        ck_assert_uint_eq(builds, 2);
        ck_assert(gate && sandbox);
        ck_assert_uint_ne(conn[0], conn[1]);
        /* Only the sandbox's build reaches the callback: the other thread says nothing. */
        ck_assert_ptr_nonnull(strstr(l.progress, "STEP 1/3: FROM base\n"));
        ck_assert_ptr_null(strstr(strstr(l.progress, "STEP 1/3: FROM base\n") + 1, "STEP 1/3: FROM base\n"));
        aisb_policy_free(p);
}
END_TEST

typedef struct ensure_call {
        aisb_ctx *ctx;
        aisb_policy *p;
        int r;
} ensure_call;

static void *ensure_thread(void *userdata)
{
        ensure_call *c = userdata;
        c->r = aisb_image_ensure(c->ctx, c->p, NULL, NULL, NULL);
        return NULL;
}

/* The sandbox's image is built and the gate's build never ends: a cancel of the caller's
 * context ends the wait for it, and the call returns. */
START_TEST(test_build_gate_alongside_cancel)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 404, NULL, "", FAKE_NORMAL, 2);
        fake_podman_route(fp, "POST", "/build?*aisb-gate*", 200, "application/json", "", FAKE_HIJACK_UNTIL_DELETE, 0);
        fake_podman_route(fp, "POST", "/build", 200, "application/json", build_ok, FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        ensure_call c = { .ctx = ctx, .p = allow_policy(), .r = 1 };
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, ensure_thread, &c), 0);
        /* Both builds asked for, and the sandbox's answered (its image then checked). */
        for (int i = 0; i < 500; i++) {
                size_t builds = 0, checked = 0;
                for (size_t k = 0; k < fake_podman_request_count(fp); k++) {
                        bool post = streq(fake_podman_request_method(fp, k), "POST");
                        builds += post && strstr(fake_podman_request_path(fp, k), "/libpod/build?") != NULL;
                        checked += !post && strstr(fake_podman_request_path(fp, k), "/exists") != NULL;
                }
                if (builds == 2 && checked == 3)
                        break;
                usleep(10 * 1000);
        }
        usleep(100 * 1000);
        ck_assert_int_eq(c.r, 1); /* still waiting for the gate's build */
        aisb_ctx_cancel(ctx);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 5;
        ck_assert_msg(pthread_timedjoin_np(t, NULL, &deadline) == 0, "aisb_image_ensure did not return after a cancel");
        ck_assert_int_eq(c.r, -ECANCELED);
        aisb_policy_free(c.p);
        /* The fake answers the gate's build until it sees a DELETE. */
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", fake_podman_socket(fp));
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        static const char del[] = "DELETE /v4.0.0/libpod/containers/none HTTP/1.1\r\nHost: d\r\n\r\n";
        ck_assert_int_eq(write_all(fd, del, sizeof del - 1), 0);
        char answer[256];
        ck_assert_int_gt(read(fd, answer, sizeof answer), 0);
        close(fd);
}
END_TEST

/* How many builds were asked for. */
static size_t builds_asked(void)
{
        size_t builds = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                builds += streq(fake_podman_request_method(fp, i), "POST") &&
                          strstr(fake_podman_request_path(fp, i), "/libpod/build?") != NULL;
        return builds;
}

/* Allow mode without a gate of aisb's (--no-gate, or a proxy of the user's): no gate's
 * image to build. */
START_TEST(test_build_no_gate)
{
        route_builds(1, FAKE_NORMAL, 0); /* the sandbox's image missing */
        aisb_policy *p = allow_policy();
        ck_assert_int_eq(aisb_policy_set(p, "no-gate", "true", NULL), 0);
        ck_assert_int_eq(aisb_image_ensure(ctx, p, NULL, NULL, NULL), 0);
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                ck_assert_msg(!strstr(fake_podman_request_path(fp, i), "aisb-gate"), "%s",
                              fake_podman_request_path(fp, i));
        ck_assert_int_ge(fake_podman_find_request(fp, "POST", "/libpod/build"), 0);
        aisb_policy_free(p);
}
END_TEST

/* With the gate's image present, only the sandbox's image is built. */
START_TEST(test_build_gate_present)
{
        route_builds(1, FAKE_NORMAL, 0); /* the sandbox's image missing */
        aisb_policy *p = allow_policy();
        ck_assert_int_eq(aisb_image_ensure(ctx, p, NULL, NULL, NULL), 0);
        ssize_t b = fake_podman_find_request(fp, "POST", "/libpod/build");
        ck_assert_int_ge(b, 0);
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) b), "t=localhost%2Faisb%3A"));
        ck_assert_uint_eq(builds_asked(), 1);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_build_reused)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        aisb_policy *p = new_policy();
        int built = -1;
        ck_assert_int_eq(aisb_image_ensure(ctx, p, NULL, &built, NULL), 0);
        ck_assert_int_eq(built, 0);
        ck_assert_int_lt(fake_podman_find_request(fp, "POST", "/build"), 0);
        /* Naming the image needs no tar: libarchive is loaded only to build. */
        expect_no_libarchive("libarchive loaded with the image present");
        aisb_policy_free(p);
}
END_TEST

/* The image missing, or the check for it failing; then its build answered thus (when the
 * check got that far): the error says what went wrong. */
static const struct build_failure {
        int exists_status;
        const char *exists_type, *exists_body;
        fake_mode exists_mode;
        const char *build_body; /* NULL: no build asked for */
        fake_mode build_mode;
        const char *says;
} build_failures[] = {
        /* The build's own error. */
        { 404, NULL, "", FAKE_NORMAL,
          "{\"stream\":\"STEP 1/2: RUN false\\n\"}\n"
          "{\"errorDetail\":{\"message\":\"exit status 1\"},\"error\":\"exit status 1\"}\n",
          FAKE_CHUNKED, "exit status 1" },
        /* The service dies in the middle of the stream. */
        { 404, NULL, "", FAKE_NORMAL, build_ok, FAKE_CHUNKED_DIE, "building image" },
        /* A stream that ends cleanly but leaves no tag: believe the image store. */
        { 404, NULL, "", FAKE_NORMAL, "{\"stream\":\"STEP 1/2\\n\"}\n", FAKE_NORMAL, "does not exist" },
        /* The check itself: the service dies in the middle of its answer. */
        { 500, "application/json", "{\"cause\":\"x\",\"message\":\"storage is broken\",\"response\":500}",
          FAKE_DIE_MID_BODY, NULL, FAKE_NORMAL, "podman service" },
};

START_TEST(test_build_fails)
{
        const struct build_failure *c = &build_failures[_i];
        fake_podman_route(fp, "GET", "/images/*/exists", c->exists_status, c->exists_type, c->exists_body,
                          c->exists_mode, 0);
        if (c->build_body)
                fake_podman_route(fp, "POST", "/build", 200, "application/json", c->build_body, c->build_mode, 1);
        aisb_policy *p = new_policy();
        aisb_error *err = NULL;
        expect_error(aisb_image_ensure(ctx, p, NULL, NULL, &err), &err, c->says);
        aisb_policy_free(p);
}
END_TEST

/* ---- a whole run ---- */

typedef struct output {
        char out[1024], err[1024];
} output;

static int collect_output(const aisb_output *chunk, void *userdata)
{
        output *o = userdata;
        char *dst = chunk->stream == AISB_STREAM_STDERR ? o->err : o->out;
        size_t have = strlen(dst);
        ck_assert_uint_lt(have + chunk->size, sizeof o->out);
        memcpy(dst + have, chunk->data, chunk->size);
        dst[have + chunk->size] = 0;
        return 0;
}

/* A sandbox that exits with exit_code; the caller routes its attach. */
static void route_run(int exit_code)
{
        route_sandbox(fp, "[]", 1);
        char wait_body[16];
        snprintf(wait_body, sizeof wait_body, "%d\n", exit_code);
        fake_podman_route(fp, "POST", "/containers/c0ffee/wait", 200, "application/json", wait_body,
                          FAKE_NORMAL, 1);
}

static int run_with_stdin(const char *input, output *o, int *exit_code, aisb_error **err)
{
        int pipefd[2];
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(write_all(pipefd[1], input, strlen(input)), 0);
        close(pipefd[1]);
        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        aisb_io_set_stdin(io, pipefd[0]);
        aisb_io_set_output_fn(io, collect_output, o);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "env", "TOKEN=hunter2", NULL), 0);
        int r = aisb_run(ctx, p, io, exit_code, err);
        aisb_policy_free(p);
        aisb_io_free(io);
        close(pipefd[0]);
        return r;
}

START_TEST(test_run_whole)
{
        route_run(3);
        uint8_t frames[256];
        size_t n = fake_podman_frame(frames, 1, "hello\n");
        n += fake_podman_frame(frames + n, 2, "oops\n");
        n += fake_podman_frame(frames + n, 1, "bye\n");
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, n,
                                FAKE_HIJACK, 1);
        output o = {};
        int code = -1;
        ck_assert_int_eq(run_with_stdin("typed input", &o, &code, NULL), 0);
        ck_assert_int_eq(code, 3);
        ck_assert_str_eq(o.out, "hello\nbye\n");
        ck_assert_str_eq(o.err, "oops\n");
        size_t in_size = 0;
        const char *in = fake_podman_hijack_input(fp, &in_size);
        ck_assert_uint_eq(in_size, strlen("typed input"));
        ck_assert(memcmp(in, "typed input", in_size) == 0);

        /* Order: create, attach, start, wait, remove. */
        ssize_t create = fake_podman_find_request(fp, "POST", "/containers/create");
        ssize_t attach = fake_podman_find_request(fp, "POST", "/attach");
        ssize_t start = fake_podman_find_request(fp, "POST", "/start");
        ssize_t wait = fake_podman_find_request(fp, "POST", "/wait");
        ssize_t del = fake_podman_find_request(fp, "DELETE", "/containers/c0ffee");
        ck_assert(create >= 0 && attach > create && start > attach && wait > start && del > wait);
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) attach), "detachKeys="));
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) del), "force=true"));
        /* The real request carries the secret; only there. */
        ck_assert_ptr_nonnull(strstr(fake_podman_request_body(fp, (size_t) create), "hunter2"));
        ck_assert_str_eq(fake_podman_request_header(fp, (size_t) create, "Content-Type"),
                         "application/json");
}
END_TEST

/* The routes of a run whose sandbox prints "ok" and exits 0, then the run of p, no input:
 * it must succeed. */
static void run_ok(aisb_policy *p)
{
        route_run(0);
        uint8_t frames[64];
        size_t n = fake_podman_frame(frames, 1, "ok\n");
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, n, FAKE_HIJACK, 1);
        aisb_io *io = io_without_input();
        output o = {};
        aisb_io_set_output_fn(io, collect_output, &o);
        int code = -1;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_run(ctx, p, io, &code, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_int_eq(code, 0);
        aisb_io_free(io);
}

/* A project of one file (README) and the state home, in a new directory of /tmp; the
 * process's XDG_STATE_HOME is that state home. */
typedef struct scratch {
        char top[64], project[128], state[128];
} scratch;

static void scratch_make(scratch *s)
{
        char readme[160];
        snprintf(s->top, sizeof s->top, "/tmp/aisb-test-run-review-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(s->top));
        snprintf(s->project, sizeof s->project, "%s/project", s->top);
        snprintf(s->state, sizeof s->state, "%s/state", s->top);
        snprintf(readme, sizeof readme, "%s/README", s->project);
        ck_assert_int_eq(mkdir(s->project, 0755), 0);
        ck_assert_int_eq(mkdir(s->state, 0700), 0);
        int fd = open(readme, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(setenv("XDG_STATE_HOME", s->state, 1), 0);
}

/* A review run of the scratch project. */
static aisb_policy *review_policy(const scratch *s)
{
        return POLICY(RUN_SETTINGS, { "project", s->project }, { "review", "true" });
}

/* A review run whose sandbox could not be removed: it may still write its layer, so the
 * layer is left without its end, and apply refuses it (until aisb clean removed the sandbox). */
START_TEST(test_review_run_sandbox_not_removed)
{
        scratch dirs;
        scratch_make(&dirs);
        fake_podman_route(fp, "DELETE", "/containers/c0ffee", 500, "application/json",
                          "{\"cause\":\"busy\",\"message\":\"cannot remove\",\"response\":500}\n", FAKE_NORMAL, 0);
        aisb_policy *p = review_policy(&dirs);
        run_ok(p);
        aisb_error *err = NULL;
        ck_assert_int_ge(fake_podman_find_request(fp, "DELETE", "/containers/c0ffee"), 0);
        /* The layer stays (an empty one of an ended run would go), and is not applied. */
        char *run = NULL;
        ck_assert_msg(aisb_review_diff(p, NULL, 0, NULL, NULL, &run, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_int_eq(aisb_review_apply(p, NULL, NULL, 0, NULL, NULL, NULL, &err), -EBUSY);
        ck_assert_msg(strstr(aisb_error_message(err), "did not end"), "%s", aisb_error_message(err));
        aisb_error_free(err);
        free(run);
        aisb_policy_free(p);
        ck_assert(remove_tree(dirs.top));
}
END_TEST

/* The ends of the steps begun, in reverse, on a failure after them: a review run whose create
 * is refused leaves no layer (keep's end), and no session log line (no sandbox was). */
START_TEST(test_review_run_create_refused_leaves_nothing)
{
        scratch dirs;
        scratch_make(&dirs);
        route_images_and_home(fp);
        fake_podman_route(fp, "POST", "/containers/create", 500, "application/json",
                          "{\"cause\":\"x\",\"message\":\"no space left\",\"response\":500}", FAKE_NORMAL, 1);
        aisb_policy *p = review_policy(&dirs);
        aisb_io *io = io_without_input();
        int code = -1;
        aisb_error *err = NULL;
        expect_error(aisb_run(ctx, p, io, &code, &err), &err, "no space left");
        err = NULL;
        ck_assert_int_lt(fake_podman_find_request(fp, "DELETE", "/containers/"), 0);
        ck_assert_int_eq(aisb_review_diff(p, NULL, 0, NULL, NULL, NULL, &err), -ENOENT);
        aisb_error_free(err);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name 'sessions*' -size +0)\"", dirs.state);
        ck_assert_int_eq(system(cmd), 0);
        aisb_io_free(io);
        aisb_policy_free(p);
        ck_assert(remove_tree(dirs.top));
}
END_TEST

/* The create body a run sends to a service answering as podman `version`, with the
 * backend chosen by `backend` (NULL: auto), for a policy whose proxy is on the host's
 * loopback (so the host's loopback must be mapped into the sandbox). */
static json_object *create_body_for(const char *version, const char *backend)
{
        fake_podman_set_version(fp, version);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "net", "allow", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "proxy", "127.0.0.1:3128", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "user-allowlist", "", NULL), 0);
        if (backend)
                ck_assert_int_eq(aisb_policy_set(p, "network-backend", backend, NULL), 0);
        run_ok(p);
        aisb_policy_free(p);
        ssize_t create = fake_podman_find_request(fp, "POST", "/containers/create");
        ck_assert_int_ge(create, 0);
        json_object *body = json_tokener_parse(fake_podman_request_body(fp, (size_t) create));
        ck_assert_ptr_nonnull(body);
        return body;
}

static const char *network_option(json_object *body, const char *backend, size_t i)
{
        json_object *options, *list;
        if (!json_object_object_get_ex(body, "network_options", &options) ||
            !json_object_object_get_ex(options, backend, &list))
                return NULL;
        return json_object_get_string(json_object_array_get_idx(list, i));
}

static const char *proxy_env(json_object *body)
{
        json_object *env, *v;
        ck_assert(json_object_object_get_ex(body, "env", &env));
        ck_assert(json_object_object_get_ex(env, "https_proxy", &v));
        return json_object_get_string(v);
}

static const char *nsmode(json_object *body)
{
        json_object *netns, *mode;
        ck_assert(json_object_object_get_ex(body, "netns", &netns));
        ck_assert(json_object_object_get_ex(netns, "nsmode", &mode));
        return json_object_get_string(mode);
}

/* The network backend of each podman, and network-backend forcing either one whatever the
 * version. */
static const struct backend_case {
        const char *version, *forced; /* forced: network-backend's value, NULL for auto */
        const char *nsmode, *options[3], *other; /* other: the backend not used, with no options */
} backend_cases[] = {
        /* Podman 4.3: slirp4netns, its host-loopback option. */
        { "4.3.1", NULL, "slirp4netns", { "allow_host_loopback=true" }, "pasta" },
        /* Podman 5.4: pasta, told to map the host's loopback where slirp4netns has it. */
        { "5.4.2", NULL, "pasta", { "--map-host-loopback", "10.0.2.2" }, "slirp4netns" },
        { "5.4.2", "slirp4netns", "slirp4netns", { "allow_host_loopback=true" }, "pasta" },
};

START_TEST(test_backend)
{
        const struct backend_case *c = &backend_cases[_i];
        json_object *body = create_body_for(c->version, c->forced);
        ck_assert_str_eq(nsmode(body), c->nsmode);
        for (size_t i = 0; i < ELEMENTSOF(c->options); i++) {
                const char *got = network_option(body, c->nsmode, i), *want = c->options[i];
                ck_assert_msg(want ? got && streq(got, want) : !got, "podman %s, %s option %zu: '%s', want '%s'",
                              c->version, c->nsmode, i, got ? got : "(none)", want ? want : "(none)");
        }
        ck_assert_ptr_null(network_option(body, c->other, 0));
        /* The tmpfs flag that keeps /dev/shm writable under a read-only root (ignored by 4.3,
         * needed by 5). */
        json_object *v;
        ck_assert(json_object_object_get_ex(body, "read_only_filesystem", &v) && json_object_get_boolean(v));
        ck_assert(json_object_object_get_ex(body, "read_write_tmpfs", &v) && json_object_get_boolean(v));
        /* The proxy on the host's loopback is reached at the same address either way. */
        ck_assert_str_eq(proxy_env(body), "http://10.0.2.2:3128");
        json_object_put(body);
}
END_TEST

/* ---- stopping before the sandbox exists ---- */

/* The caller's control: one byte per event on a pipe, 'S' stop, 'R' a resize to 40x100. */
static int on_test_control(aisb_control_request *request, void *userdata)
{
        int *events = userdata;
        char c;
        if (read(request->fd, &c, 1) != 1)
                return AISB_CONTROL_NONE;
        (*events)++;
        if (c == 'R') {
                request->rows = 40;
                request->cols = 100;
                return AISB_CONTROL_RESIZE;
        }
        return c == 'S' ? AISB_CONTROL_STOP : AISB_CONTROL_NONE;
}

typedef struct delayed_write {
        int fd;
        char byte;
        long delay_ms;
} delayed_write;

static void *write_later(void *userdata)
{
        delayed_write *w = userdata;
        nanosleep(&(struct timespec) { w->delay_ms / 1000, (w->delay_ms % 1000) * 1000000L }, NULL);
        ck_assert_int_eq(write(w->fd, &w->byte, 1), 1);
        return NULL;
}

/* The io of a run with no input and the caller's control on a pipe, whose events
 * on_test_control counts; `pending`, the bytes already on the pipe. */
typedef struct controlled {
        int pipe[2];
        int events;
        aisb_io *io;
} controlled;

static void controlled_open(controlled *c, const char *pending)
{
        ck_assert_int_eq(pipe2(c->pipe, O_CLOEXEC), 0);
        ck_assert_int_eq(write(c->pipe[1], pending, strlen(pending)), (ssize_t) strlen(pending));
        c->io = io_without_input();
        c->events = 0;
        aisb_io_set_control(c->io, c->pipe[0], on_test_control, &c->events);
}

static void controlled_close(controlled *c)
{
        aisb_io_free(c->io);
        close(c->pipe[0]);
        close(c->pipe[1]);
}

/* A stop that is already there when the run starts: nothing is created. */
START_TEST(test_run_stopped_while_preparing)
{
        route_run(0);
        controlled c;
        controlled_open(&c, "S");
        aisb_policy *p = new_policy();
        int code = -1;
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_run(ctx, p, c.io, &code, &err), -ECANCELED);
        aisb_error_free(err);
        ck_assert_int_eq(c.events, 1);
        ck_assert_int_eq(fake_podman_find_request(fp, "POST", "/containers/create"), -1);
        ck_assert_int_eq(fake_podman_find_request(fp, "DELETE", "/containers/"), -1);
        aisb_policy_free(p);
        controlled_close(&c);
}
END_TEST

/* A stop while a request is in progress (an answer that takes more than ten seconds to
 * arrive): the request is cut short, the run ends at once, nothing is created. */
START_TEST(test_run_stopped_during_request)
{
        size_t size = 64 * 1024;
        char *slow = malloc(size + 1);
        memset(slow, ' ', size);
        slow[size] = 0;
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/volumes/*/exists", 200, "text/plain", slow, FAKE_TRICKLE, 0);
        unit_route_home_volume(fp);
        free(slow);
        controlled c;
        controlled_open(&c, "");
        aisb_policy *p = new_policy();
        /* The image first, as the CLI does, so the stop lands in the run's own request. */
        char *tag = NULL;
        ck_assert_int_eq(aisb_image_ensure(ctx, p, &tag, NULL, NULL), 0);
        free(tag);
        pthread_t writer;
        delayed_write w = { .fd = c.pipe[1], .byte = 'S', .delay_ms = 300 };
        ck_assert_int_eq(pthread_create(&writer, NULL, write_later, &w), 0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int code = -1;
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_run(ctx, p, c.io, &code, &err), -ECANCELED);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        aisb_error_free(err);
        pthread_join(writer, NULL);
        /* The answer alone would take over ten seconds. */
        ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5);
        ck_assert_int_ge(fake_podman_find_request(fp, "GET", "/volumes/"), 0);
        ck_assert_int_eq(fake_podman_find_request(fp, "POST", "/containers/create"), -1);
        aisb_policy_free(p);
        controlled_close(&c);
}
END_TEST

/* A resize before the sandbox starts is not lost: the size sent after start is the newest. */
START_TEST(test_run_resize_before_start_kept)
{
        route_run(0);
        fake_podman_route(fp, "POST", "/containers/c0ffee/attach", 101, NULL, "hi", FAKE_HIJACK_NO_WAIT, 1);
        fake_podman_route(fp, "POST", "/containers/c0ffee/resize", 200, "application/json", "{}", FAKE_NORMAL, 0);
        controlled c;
        controlled_open(&c, "R");
        aisb_io_set_terminal(c.io, 24, 80);
        output o = {};
        aisb_io_set_output_fn(c.io, collect_output, &o);
        aisb_policy *p = new_policy();
        int code = -1;
        ck_assert_int_eq(aisb_run(ctx, p, c.io, &code, NULL), 0);
        ck_assert_int_eq(c.events, 1);
        ssize_t resize = fake_podman_find_request(fp, "POST", "/resize");
        ck_assert_int_ge(resize, 0);
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) resize), "h=40&w=100"));
        aisb_policy_free(p);
        controlled_close(&c);
}
END_TEST

/* Our fds 1 and 2 sent to files of their own while a run writes to them. */
typedef struct capture {
        int out_fd, err_fd, saved_out, saved_err;
} capture;

static void capture_begin(capture *c)
{
        char out_path[] = "/tmp/aisb-unit-out.XXXXXX", err_path[] = "/tmp/aisb-unit-err.XXXXXX";
        c->out_fd = mkstemp(out_path);
        c->err_fd = mkstemp(err_path);
        ck_assert(c->out_fd >= 0 && c->err_fd >= 0);
        unlink(out_path);
        unlink(err_path);
        c->saved_out = dup(STDOUT_FILENO);
        c->saved_err = dup(STDERR_FILENO);
        ck_assert_int_ge(dup2(c->out_fd, STDOUT_FILENO), 0);
        ck_assert_int_ge(dup2(c->err_fd, STDERR_FILENO), 0);
}

/* Fds 1 and 2 as they were; the files stay open for reading. */
static void capture_end(capture *c)
{
        dup2(c->saved_out, STDOUT_FILENO);
        dup2(c->saved_err, STDERR_FILENO);
        close(c->saved_out);
        close(c->saved_err);
}

static void capture_close(capture *c)
{
        close(c->out_fd);
        close(c->err_fd);
}

/* With no output callback the frames go to our own fds 1 and 2, gathered into writev
 * batches: order within and across streams kept, more frames than one batch holds. */
START_TEST(test_run_default_output)
{
        route_run(0);
        size_t cap = 600 * (8 + 8) + 64;
        uint8_t *frames = malloc(cap);
        ck_assert_ptr_nonnull(frames);
        size_t n = fake_podman_frame(frames, 1, "first\n");
        n += fake_podman_frame(frames + n, 2, "err1\n");
        char expect[600 * 8 + 64] = "first\n";
        for (int i = 0; i < 600; i++) {
                char text[16];
                snprintf(text, sizeof text, "%06d\n", i);
                n += fake_podman_frame(frames + n, 1, text);
                strcat(expect, text);
        }
        n += fake_podman_frame(frames + n, 2, "err2\n");
        n += fake_podman_frame(frames + n, 1, "last\n");
        strcat(expect, "last\n");
        ck_assert_uint_le(n, cap);
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, n,
                                FAKE_HIJACK, 1);
        capture c;
        capture_begin(&c);

        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        aisb_policy *p = new_policy();
        int code = -1;
        int r = aisb_run(ctx, p, io, &code, NULL);
        capture_end(&c);
        ck_assert_int_eq(r, 0);
        ck_assert_int_eq(code, 0);

        char got[sizeof expect] = "";
        ck_assert_int_eq(pread(c.out_fd, got, sizeof got - 1, 0), (ssize_t) strlen(expect));
        ck_assert_str_eq(got, expect);
        char err_got[64] = "";
        ck_assert_int_eq(pread(c.err_fd, err_got, sizeof err_got - 1, 0), 10);
        ck_assert_str_eq(err_got, "err1\nerr2\n");
        capture_close(&c);
        aisb_policy_free(p);
        aisb_io_free(io);
        free(frames);
}
END_TEST

/* ---- the terminal filter on the way out ---- */

/* A title, a clipboard write split across frames with the other stream between its pieces,
 * a clipboard read query, a tmux passthrough and a hyperlink on stderr. */
static size_t hostile_frames(uint8_t *buf)
{
        size_t n = fake_podman_frame(buf, 1, "one\033]0;title\007 two\033]52;c;cHd");
        n += fake_podman_frame(buf + n, 2, "err\033Ptmux;\033\033]52;c;?\007\033\\");
        n += fake_podman_frame(buf + n, 1, "uZWQ=\007 three\033[31m red\033[0m\033");
        n += fake_podman_frame(buf + n, 2, " \033]8;;http://evil.example/\033\\link\033]8;;\033\\");
        n += fake_podman_frame(buf + n, 1, "]52;c;?\033\\ four\xc2\x9d" "2;c1 title\xc2\x9c\n");
        return n;
}

/* With a terminal the stream is raw bytes, filtered as stdout. */
static const char hostile_terminal[] = "$ \033]2;pwned\007\033]52;c;?\007\033P+q544e\033\\ok\033[1mbold\033[m\r\n";

/* The output filter of a run on the streams it is set for: the hostile frames (or with a
 * terminal its raw bytes) served on the attach stream, the output to the callback or to fds
 * 1 and 2; what each stream shows (NULL: not looked at). */
static const struct filter_case {
        unsigned streams;
        bool terminal, to_fds;
        const char *out, *err;
} filter_cases[] = {
        { AISB_STREAM_STDOUT | AISB_STREAM_STDERR, false, false,
          "one two three\033[31m red\033[0m four\n", "err\033\\ link" },
        /* Only stdout's bit: stderr passes as it came. */
        { AISB_STREAM_STDOUT, false, false, "one two three\033[31m red\033[0m four\n",
          "err\033Ptmux;\033\033]52;c;?\007\033\\ \033]8;;http://evil.example/\033\\link\033]8;;\033\\" },
        /* No filter: everything, the control that the frames do hold the strings. */
        { 0, false, false,
          "one\033]0;title\007 two\033]52;c;cHduZWQ=\007 three\033[31m red\033[0m\033]52;c;?\033\\ four\xc2\x9d"
          "2;c1 title\xc2\x9c\n", NULL },
        /* To fds 1 and 2 through the writev batches: stdout filtered, stderr not. */
        { AISB_STREAM_STDOUT, false, true, "one two three\033[31m red\033[0m four\n",
          "err\033Ptmux;\033\033]52;c;?\007\033\\ \033]8;;http://evil.example/\033\\link\033]8;;\033\\" },
        { AISB_STREAM_STDERR, false, true, NULL, "err\033\\ link" },
        { AISB_STREAM_STDOUT, true, false, "$ ok\033[1mbold\033[m\r\n", "" },
        { AISB_STREAM_STDOUT | AISB_STREAM_STDERR, true, true, "$ ok\033[1mbold\033[m\r\n", "" },
        /* stderr's bit alone leaves the terminal's stream alone. */
        { AISB_STREAM_STDERR, true, false, hostile_terminal, NULL },
};

START_TEST(test_run_filter)
{
        const struct filter_case *f = &filter_cases[_i];
        uint8_t frames[512];
        size_t n = f->terminal ? sizeof hostile_terminal - 1 : hostile_frames(frames);
        route_run(0);
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL,
                                f->terminal ? (const void *) hostile_terminal : frames, n,
                                f->terminal ? FAKE_HIJACK_NO_WAIT : FAKE_HIJACK, 1);
        aisb_io *io = io_without_input();
        aisb_io_set_output_filter(io, f->streams);
        if (f->terminal)
                aisb_io_set_terminal(io, 0, 0);
        output o = {};
        capture c;
        if (f->to_fds)
                capture_begin(&c);
        else
                aisb_io_set_output_fn(io, collect_output, &o);
        aisb_policy *p = new_policy();
        int code = -1;
        aisb_error *err = NULL;
        int r = aisb_run(ctx, p, io, &code, &err);
        if (f->to_fds) {
                capture_end(&c);
                ck_assert_int_ge(pread(c.out_fd, o.out, sizeof o.out - 1, 0), 0);
                ck_assert_int_ge(pread(c.err_fd, o.err, sizeof o.err - 1, 0), 0);
                capture_close(&c);
        }
        ck_assert_msg(r == 0, "run failed: %s", err ? aisb_error_message(err) : "?");
        ck_assert_int_eq(code, 0);
        if (f->out)
                ck_assert_str_eq(o.out, f->out);
        if (f->err)
                ck_assert_str_eq(o.err, f->err);
        aisb_policy_free(p);
        aisb_io_free(io);
}
END_TEST

START_TEST(test_run_service_dies_mid_frame)
{
        route_run(0);
        uint8_t frames[256];
        size_t n = fake_podman_frame(frames, 1, "complete\n");
        n += fake_podman_frame(frames + n, 1, "this frame is cut short");
        fake_podman_route_bytes(fp, "POST", "/containers/c0ffee/attach", 101, NULL, frames, n - 10,
                                FAKE_HIJACK_NO_WAIT, 1);
        output o = {};
        int code = -1;
        aisb_error *err = NULL;
        int r = run_with_stdin("", &o, &code, &err);
        expect_error(r, &err, "inside a frame");
        ck_assert_str_eq(o.out, "complete\nthis frame is");
        ck_assert_int_ge(fake_podman_find_request(fp, "DELETE", "/containers/c0ffee"), 0);
}
END_TEST

/* A run without input whose sandbox exits with exit_code and prints nothing, after the
 * routes the caller set first (which answer before these); its result. */
static int run_quiet(int exit_code, int *code, aisb_error **err)
{
        route_run(exit_code);
        fake_podman_route(fp, "POST", "/containers/c0ffee/attach", 101, NULL, "", FAKE_HIJACK, 1);
        output o = {};
        return run_with_stdin("", &o, code, err);
}

/* A step of the run refused by the service: the run fails with the service's message, and
 * the sandbox is removed when it was created; what was (or was not) asked for after. */
static const struct run_refusal {
        const char *path, *answer, *says;
        const char *sent[2], *not_sent[2]; /* method and path of a request made after, of one never made */
} run_refusals[] = {
        { "/containers/create", "{\"cause\":\"x\",\"message\":\"no space left\",\"response\":500}", "no space left",
          .not_sent = { "POST", "/attach" } },
        { "/containers/c0ffee/attach", "{\"message\":\"attach went wrong\",\"response\":500}", "attach went wrong",
          .sent = { "DELETE", "/containers/c0ffee" }, .not_sent = { "POST", "/start" } },
        { "/containers/c0ffee/start", "{\"message\":\"runc failed\"}", "runc failed",
          .sent = { "DELETE", "/containers/c0ffee" } },
};

START_TEST(test_run_refused)
{
        const struct run_refusal *c = &run_refusals[_i];
        fake_podman_route(fp, "POST", c->path, 500, "application/json", c->answer, FAKE_NORMAL, 1);
        int code = -1;
        aisb_error *err = NULL;
        expect_error(run_quiet(0, &code, &err), &err, c->says);
        if (c->sent[0])
                ck_assert_msg(fake_podman_find_request(fp, c->sent[0], c->sent[1]) >= 0, "%s refused: no %s %s",
                              c->path, c->sent[0], c->sent[1]);
        if (c->not_sent[0])
                ck_assert_msg(fake_podman_find_request(fp, c->not_sent[0], c->not_sent[1]) < 0,
                              "%s refused: %s %s all the same", c->path, c->not_sent[0], c->not_sent[1]);
}
END_TEST

START_TEST(test_run_create_retried_on_keep_id_race)
{
        /* Podman's transient keep-id refusal under concurrency: sent again, it succeeds. */
        fake_podman_route(fp, "POST", "/containers/create", 500, "application/json",
                          "{\"cause\":\"x\",\"message\":\"keep-id requires additional UIDs or GIDs defined in "
                          "/etc/subuid and /etc/subgid to function correctly: %!w(<nil>)\",\"response\":500}",
                          FAKE_NORMAL, 1);
        int code = -1;
        ck_assert_int_eq(run_quiet(4, &code, NULL), 0);
        ck_assert_int_eq(code, 4);
        size_t creates = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                creates += strstr(fake_podman_request_path(fp, i), "/containers/create") != NULL;
        ck_assert_uint_eq(creates, 2);
}
END_TEST

START_TEST(test_volume_created_with_label)
{
        /* Routes answer in the order they were added: the volume is missing once. */
        fake_podman_route(fp, "GET", "/volumes/*/exists", 404, NULL, "", FAKE_NORMAL, 1);
        unit_route_home_volume(fp);
        fake_podman_route(fp, "POST", "/volumes/create", 201, "application/json", "{}", FAKE_NORMAL, 1);
        int code = -1;
        ck_assert_int_eq(run_quiet(0, &code, NULL), 0);
        ssize_t v = fake_podman_find_request(fp, "POST", "/volumes/create");
        ck_assert_int_ge(v, 0);
        ck_assert_ptr_nonnull(strstr(fake_podman_request_body(fp, (size_t) v), "aisb.managed"));
        ck_assert_ptr_nonnull(strstr(fake_podman_request_body(fp, (size_t) v), "aisb-"));
}
END_TEST

/* ---- dry run ---- */

static void collect_request(const char *text, void *userdata)
{
        buffer *b = userdata;
        ck_assert_int_eq(buffer_append(b, text, strlen(text)), 0);
}

START_TEST(test_dry_run)
{
        buffer shown = {};
        aisb_ctx *dry = NULL;
        ck_assert_int_eq(aisb_ctx_new(&dry, NULL), 0);
        aisb_ctx_set_dry_run(dry, collect_request, &shown);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "env", "TOKEN=hunter2", NULL), 0);
        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        int code = -1;
        ck_assert_int_eq(aisb_run(dry, p, io, &code, NULL), 0);
        ck_assert_ptr_null(strstr(shown.data, "hunter2"));
        static const char *const expected[] = {
                "GET /v4.0.0/libpod/images/", "POST /v4.0.0/libpod/build?t=",
                "POST /v4.0.0/libpod/containers/create", "\"TOKEN\": \"<redacted>\"",
                "/attach?stream=true", "/start", "/wait", "DELETE /v4.0.0/libpod/containers/",
                ": a tar of Containerfile, aisb-entrypoint (",
        };
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_msg(strstr(shown.data, expected[i]), "dry run lacks %s", expected[i]);
        /* A dry run lists the context; it packs nothing. */
        expect_no_libarchive("a dry run loaded libarchive");
        /* Nothing reached the service. */
        ck_assert_uint_eq(fake_podman_request_count(fp), 0);
        buffer_free(&shown);
        aisb_io_free(io);
        aisb_policy_free(p);
        aisb_ctx_free(dry);
}
END_TEST

/* ---- the frame demultiplexer ---- */

typedef struct sink {
        char data[2][256];
} sink;

static int sink_fn(int stream, const void *data, size_t size, void *userdata)
{
        sink *s = userdata;
        ck_assert(stream == 1 || stream == 2);
        strncat(s->data[stream - 1], data, size);
        return 0;
}

START_TEST(test_demux_any_split)
{
        uint8_t frames[128];
        size_t n = fake_podman_frame(frames, 1, "abc");
        n += fake_podman_frame(frames + n, 2, "de");
        n += fake_podman_frame(frames + n, 1, "");
        n += fake_podman_frame(frames + n, 1, "fgh");
        /* Every way of cutting the stream in two gives the same result. */
        for (size_t cut = 0; cut <= n; cut++) {
                sink s = {};
                demux d = {};
                ck_assert_int_eq(demux_feed(&d, frames, cut, sink_fn, &s), 0);
                ck_assert_int_eq(demux_feed(&d, frames + cut, n - cut, sink_fn, &s), 0);
                ck_assert_str_eq(s.data[0], "abcfgh");
                ck_assert_str_eq(s.data[1], "de");
                ck_assert(d.have == 0 && d.remaining == 0);
        }
        /* And byte by byte. */
        sink s = {};
        demux d = {};
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(demux_feed(&d, frames + i, 1, sink_fn, &s), 0);
        ck_assert_str_eq(s.data[0], "abcfgh");
}
END_TEST

START_TEST(test_demux_bad_header)
{
        static const uint8_t bad_stream[8] = { 7, 0, 0, 0, 0, 0, 0, 1 };
        static const uint8_t bad_padding[8] = { 1, 1, 0, 0, 0, 0, 0, 1 };
        sink s = {};
        demux d = {};
        ck_assert_int_eq(demux_feed(&d, bad_stream, 8, sink_fn, &s), -EBADMSG);
        d = (demux) {};
        ck_assert_int_eq(demux_feed(&d, bad_padding, 8, sink_fn, &s), -EBADMSG);
}
END_TEST

static Suite *run_suite(void)
{
        Suite *s = suite_create("run");
        TCase *tc = suite_add_tests(s, "connect", setup, teardown, test_connect_nothing_there,
                                    test_service_log_reason, test_service_refuses_to_start);
        tcase_add_loop_test(tc, test_connect, 0, (int) ELEMENTSOF(connect_cases));

        tc = suite_add_tests(s, "image", setup, teardown, test_build_reused, test_build_out_of_disk,
                             test_build_gate_alongside, test_build_gate_alongside_cancel, test_build_no_gate,
                             test_build_gate_present);
        tcase_add_loop_test(tc, test_build_streamed, 0, (int) ELEMENTSOF(build_modes));
        tcase_add_loop_test(tc, test_build_fails, 0, (int) ELEMENTSOF(build_failures));

        tc = suite_add_tests(s, "run", setup, teardown, test_run_whole, test_review_run_sandbox_not_removed,
                             test_review_run_create_refused_leaves_nothing, test_run_default_output,
                             test_run_service_dies_mid_frame, test_run_create_retried_on_keep_id_race,
                             test_volume_created_with_label, test_dry_run, test_run_stopped_while_preparing,
                             test_run_stopped_during_request, test_run_resize_before_start_kept);
        tcase_add_loop_test(tc, test_backend, 0, (int) ELEMENTSOF(backend_cases));
        tcase_add_loop_test(tc, test_run_filter, 0, (int) ELEMENTSOF(filter_cases));
        tcase_add_loop_test(tc, test_run_refused, 0, (int) ELEMENTSOF(run_refusals));

        suite_add_tests(s, "demux", NULL, NULL, test_demux_any_split, test_demux_bad_header);
        return s;
}

int main(void)
{
        unsetenv("AISB_HOME_VOLUME");
        return unit_run(run_suite());
}
