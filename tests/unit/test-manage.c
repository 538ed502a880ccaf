/* SPDX-License-Identifier: MIT */
/*
 * aisb ps and aisb clean (manage.c) against the fake libpod service: what is listed, and
 * above all what a clean removes and what it never touches. The service is asked for aisb's
 * containers by label, so the fake answers only the list with that filter: a container
 * without the label cannot even reach the code that decides, and the filter sent is checked.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake-podman.h"
#include "internal.h"
#include "unit.h"
#include "fileio.h"
#include "../suite-table.h"

#define MANAGED_QUERY "all=true&filters={\"label\":[\"aisb.managed=true\"]}"

static fake_podman *fp;
static aisb_ctx *ctx;
/* Every case's own state directory: a clean prunes gates' state there. */
static char state_home[64];

static void setup(void)
{
        snprintf(state_home, sizeof state_home, "/tmp/aisb-test-manage-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(state_home));
        ck_assert_int_eq(setenv("XDG_STATE_HOME", state_home, 1), 0);
        unit_podman_start(&fp, &ctx);
}

static void teardown(void)
{
        unit_podman_stop(fp, ctx);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", state_home);
        ck_assert_int_eq(system(cmd), 0);
        unsetenv("XDG_STATE_HOME");
}

/* A route answering 200 with JSON. */
static void route_json(const char *method, const char *pattern, const char *body)
{
        fake_podman_route(fp, method, pattern, 200, "application/json", body, FAKE_NORMAL, 0);
}

/* The pid of a process that has ended (and been reaped): what an aisb killed with -9 leaves
 * in its sandbox's label. */
static pid_t dead_pid(void)
{
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(0);
        ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
        ck_assert(kill(pid, 0) < 0 && errno == ESRCH);
        return pid;
}

/* A request target percent-decoded, in a static buffer. */
static const char *decoded(const char *target)
{
        static char out[4096];
        size_t o = 0;
        for (const char *s = target; *s && o + 1 < sizeof out; s++) {
                unsigned v;
                if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
                        out[o++] = (char) v;
                        s += 2;
                } else
                        out[o++] = *s;
        }
        out[o] = 0;
        return out;
}

/* The query of request i, decoded. */
static const char *query_of(size_t i)
{
        const char *q = strchr(decoded(fake_podman_request_path(fp, i)), '?');
        return q ? q + 1 : "";
}

/* The decoded query of the first request whose path holds needle. */
static const char *first_query(const char *needle)
{
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (strstr(fake_podman_request_path(fp, i), needle))
                        return query_of(i);
        ck_abort_msg("no request for %s", needle);
        return NULL;
}

/* Every request with this method whose path (without "/v4.0.0/libpod/" and the query) starts
 * with prefix, decoded, in order, one space between. */
static char *requests_of(const char *method, const char *prefix)
{
        buffer b = {};
        for (size_t i = 0; i < fake_podman_request_count(fp); i++) {
                if (!streq(fake_podman_request_method(fp, i), method))
                        continue;
                char path[4096];
                snprintf(path, sizeof path, "%s", decoded(fake_podman_request_path(fp, i)));
                path[strcspn(path, "?")] = 0;
                const char *p = startswith(path, "/v4.0.0/libpod/") ? path + strlen("/v4.0.0/libpod/") : path;
                if (startswith(p, prefix))
                        ck_assert_int_eq(buffer_printf(&b, "%s%s", b.size ? " " : "", p), 0);
        }
        return b.data ? buffer_steal(&b) : strdup("");
}

static void expect_requests(const char *method, const char *prefix, const char *expected)
{
        char *got = requests_of(method, prefix);
        ck_assert_msg(streq(got, expected), "%s %s...: got \"%s\", expected \"%s\"", method, prefix, got, expected);
        free(got);
}

/* ---- aisb ps ---- */

typedef struct entry {
        char *name, *kind, *project, *net, *policy, *image, *state;
        long long created;
        int orphaned, users;
        long long idle;
} entry;

typedef struct entries {
        entry e[16];
        size_t n;
} entries;

static char *dup_or_null(const char *s)
{
        return s ? strdup(s) : NULL;
}

static void collect(const aisb_list_entry *e, void *userdata)
{
        entries *l = userdata;
        ck_assert_uint_lt(l->n, ELEMENTSOF(l->e));
        l->e[l->n++] = (entry) {
                .name = dup_or_null(e->name), .kind = dup_or_null(e->kind),
                .project = dup_or_null(e->project), .net = dup_or_null(e->net),
                .policy = dup_or_null(e->policy), .image = dup_or_null(e->image),
                .state = dup_or_null(e->state), .created = e->created, .orphaned = e->orphaned,
                .users = e->users, .idle = e->idle_seconds,
        };
}

static void entries_free(entries *l)
{
        for (size_t i = 0; i < l->n; i++) {
                entry *e = &l->e[i];
                free(e->name), free(e->kind), free(e->project), free(e->net), free(e->policy);
                free(e->image), free(e->state);
        }
        l->n = 0;
}

static void ck_assert_str_or_null_eq(const char *got, const char *expected)
{
        if (expected)
                ck_assert_str_eq(got ? got : "(null)", expected);
        else
                ck_assert_msg(!got, "\"%s\" where none was expected", got);
}

static void expect_entry(const entry *e, const char *name, const char *kind, const char *project,
                         const char *net, const char *policy, const char *image, const char *state,
                         long long created, int orphaned)
{
        ck_assert_str_eq(e->name, name);
        ck_assert_str_eq(e->kind, kind);
        ck_assert_str_or_null_eq(e->project, project);
        ck_assert_str_or_null_eq(e->net, net);
        ck_assert_str_or_null_eq(e->policy, policy);
        ck_assert_str_eq(e->image, image);
        ck_assert_str_eq(e->state, state);
        ck_assert_msg(e->created == created, "%s: created %lld, expected %lld", name, e->created, created);
        ck_assert_msg(e->orphaned == orphaned, "%s: orphaned %d, expected %d", name, e->orphaned, orphaned);
}

START_TEST(test_list)
{
        pid_t gone = dead_pid();
        char containers[4096];
        snprintf(containers, sizeof containers,
                 "[{\"Names\":[\"aisb-proj-live\"],\"Image\":\"localhost/aisb:1111\",\"State\":\"running\","
                 "\"Created\":\"2024-06-10T12:00:00.123456789Z\",\"Labels\":{\"aisb.managed\":\"true\","
                 "\"aisb.project\":\"/home/u/proj\",\"aisb.net\":\"allow\",\"aisb.policy\":\"p0l1cy\",\"aisb.pid\":\"%d\"}},"
                 /* Killed with -9: its aisb is gone, the sandbox runs on. Created as a number
                  * (older services). */
                 "{\"Names\":[\"aisb-proj-orphan\"],\"Image\":\"localhost/aisb:1111\",\"State\":\"running\","
                 "\"Created\":1700000000,\"Labels\":{\"aisb.managed\":\"true\",\"aisb.project\":\"/home/u/proj\","
                 "\"aisb.net\":\"none\",\"aisb.policy\":\"p0l1cy\",\"aisb.pid\":\"%d\"}},"
                 /* A gate outlives the run that started it: never an orphan. */
                 "{\"Names\":[\"aisb-gate-abcd\"],\"Image\":\"localhost/aisb-gate:9999\",\"State\":\"exited\","
                 "\"Created\":\"2024-01-01T00:00:00Z\",\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"abcd\","
                 "\"aisb.gate.port\":\"40000\",\"aisb.pid\":\"%d\"}},"
                 /* No project, no time, a pid label that is no number: listed, not an orphan. */
                 "{\"Names\":[\"aisb-scratch-1\"],\"Image\":\"localhost/aisb:2222\",\"State\":\"exited\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.pid\":\"x1\"}}]",
                 (int) getpid(), (int) gone, (int) gone);
        route_json("GET", "/containers/json?*aisb.managed=true*", containers);
        route_json("GET", "/containers/json?*volume*aisb-home-proj*", "[{\"Names\":[\"aisb-proj-live\"]}]");
        route_json("GET", "/containers/json?*volume*aisb-home-old*", "[]");
        route_json("GET", "/volumes/json?*aisb.managed=true*",
                   "[{\"Name\":\"aisb-home-proj\",\"CreatedAt\":\"2024-02-03T04:05:06+00:00\","
                   "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.project\":\"/home/u/proj\"}},"
                   "{\"Name\":\"aisb-home-old\",\"Labels\":{\"aisb.managed\":\"true\"}}]");

        entries l = {};
        aisb_error *err = NULL;
        ck_assert_msg(aisb_list(ctx, collect, &l, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_uint_eq(l.n, 6);
        expect_entry(&l.e[0], "aisb-proj-live", "sandbox", "/home/u/proj", "allow", "p0l1cy",
                     "localhost/aisb:1111", "running", 1718020800, 0);
        expect_entry(&l.e[1], "aisb-proj-orphan", "sandbox", "/home/u/proj", "none", "p0l1cy",
                     "localhost/aisb:1111", "running", 1700000000, 1);
        expect_entry(&l.e[2], "aisb-gate-abcd", "gate", NULL, "host", "abcd", "localhost/aisb-gate:9999",
                     "exited", 1704067200, 0);
        expect_entry(&l.e[3], "aisb-scratch-1", "sandbox", NULL, NULL, NULL, "localhost/aisb:2222", "exited", 0, 0);
        /* Home volumes: in use by a container, or not, as podman's volume filter says. */
        expect_entry(&l.e[4], "aisb-home-proj", "volume", "/home/u/proj", NULL, NULL, "", "in-use", 1706933106, 0);
        expect_entry(&l.e[5], "aisb-home-old", "volume", NULL, NULL, NULL, "", "unused", 0, 0);
        entries_free(&l);

        /* Asked by label: nothing outside aisb's namespace is listed. */
        ck_assert_str_eq(first_query("/containers/json"), MANAGED_QUERY);
        expect_requests("GET", "volumes/", "volumes/json");
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (strstr(fake_podman_request_path(fp, i), "/volumes/json"))
                        ck_assert_str_eq(query_of(i), "filters={\"label\":[\"aisb.managed=true\"]}");
        /* Nothing but reading. */
        expect_requests("DELETE", "", "");
        expect_requests("POST", "", "");
}
END_TEST

/* A gate: the running sandboxes that carry its hash, and the seconds since its access log
 * last changed (or since its start). Anything else: -1 for both. */
START_TEST(test_list_gate_users)
{
        const char *state = state_home;
        char dir[256], log[300];
        snprintf(dir, sizeof dir, "%s/ai-sandbox/gates/busy/logs", state);
        ck_assert_int_eq(mkdir_p(dir, 0700), 0);
        snprintf(log, sizeof log, "%s/access.log", dir);
        int fd = open(log, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        long long now = (long long) time(NULL);
        ck_assert_int_eq(futimens(fd, (struct timespec[2]) { { .tv_sec = now - 100 }, { .tv_sec = now - 100 } }), 0);
        close(fd);

        route_json("GET", "/volumes/json", "[{\"Name\":\"aisb-home-x\",\"Labels\":{\"aisb.managed\":\"true\"}}]");
        route_json("GET", "/containers/json?*volume*", "[]");
        route_json("GET", "/containers/json?*aisb.managed=true*",
                   "[{\"Names\":[\"aisb-gate-busy\"],\"State\":\"running\",\"Created\":1700000000,"
                   "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"busy\",\"aisb.gate.port\":\"40000\"}},"
                   "{\"Names\":[\"aisb-gate-idle\"],\"State\":\"running\",\"Created\":1700000000,"
                   "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"idle\",\"aisb.gate.port\":\"40001\"}},"
                   /* Two running sandboxes of the busy gate, one exited, one of another. */
                   "{\"Names\":[\"aisb-a\"],\"State\":\"running\",\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"busy\"}},"
                   "{\"Names\":[\"aisb-b\"],\"State\":\"running\",\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"busy\"}},"
                   "{\"Names\":[\"aisb-c\"],\"State\":\"exited\",\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"busy\"}},"
                   "{\"Names\":[\"aisb-d\"],\"State\":\"running\",\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"other\"}}]");
        entries l = {};
        ck_assert_int_eq(aisb_list(ctx, collect, &l, NULL), 0);
        ck_assert_uint_eq(l.n, 7);
        ck_assert_str_eq(l.e[0].name, "aisb-gate-busy");
        ck_assert_int_eq(l.e[0].users, 2);
        ck_assert_msg(l.e[0].idle >= 100 && l.e[0].idle < 160, "idle %lld", l.e[0].idle);
        /* Nothing logged: idle since its start. */
        ck_assert_int_eq(l.e[1].users, 0);
        ck_assert_msg(l.e[1].idle >= now - 1700000000, "idle %lld", l.e[1].idle);
        for (size_t i = 2; i < l.n; i++)
                ck_assert_msg(l.e[i].users == -1 && l.e[i].idle == -1, "%s: %d %lld", l.e[i].name, l.e[i].users, l.e[i].idle);
        entries_free(&l);
        /* Listing creates nothing in the state directory. */
        snprintf(dir, sizeof dir, "%s/ai-sandbox/gates/idle", state);
        ck_assert_int_eq(access(dir, F_OK), -1);

        /* An access log that is a link is not followed: the gate counts as idle since its start. */
        ck_assert_int_eq(unlink(log), 0);
        ck_assert_int_eq(symlink("/proc/self/stat", log), 0);
        ck_assert_int_eq(aisb_list(ctx, collect, &l, NULL), 0);
        ck_assert_msg(l.e[0].idle >= now - 1700000000, "idle %lld", l.e[0].idle);
        entries_free(&l);
}
END_TEST

/* Created as podman writes it on a host whose time zone is not UTC: an offset. */
START_TEST(test_list_time_offset)
{
        route_json("GET", "/containers/json?*aisb.managed=true*",
                   "[{\"Names\":[\"aisb-a\"],\"State\":\"exited\",\"Created\":\"2024-06-10T14:00:00.5+02:00\","
                   "\"Labels\":{\"aisb.managed\":\"true\"}},"
                   "{\"Names\":[\"aisb-b\"],\"State\":\"exited\",\"Created\":\"2024-06-10T07:30:00-04:30\","
                   "\"Labels\":{\"aisb.managed\":\"true\"}}]");
        route_json("GET", "/volumes/json", "[]");
        entries l = {};
        ck_assert_int_eq(aisb_list(ctx, collect, &l, NULL), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_msg(l.e[0].created == 1718020800, "created %lld", l.e[0].created);
        ck_assert_msg(l.e[1].created == 1718020800, "created %lld", l.e[1].created);
        entries_free(&l);
}
END_TEST

START_TEST(test_list_refused)
{
        fake_podman_route(fp, "GET", "/containers/json", 500, "application/json",
                          "{\"cause\":\"x\",\"message\":\"database is locked\",\"response\":500}", FAKE_NORMAL, 0);
        entries l = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_list(ctx, collect, &l, &err), -EIO);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "database is locked"));
        ck_assert_uint_eq(l.n, 0);
        aisb_error_free(err);
}
END_TEST

/* ---- aisb clean ---- */

typedef struct removed {
        char text[4096], warnings[4096]; /* what was told removed; the warnings logged */
} removed;

static void on_removed(const aisb_clean_entry *e, void *userdata)
{
        removed *r = userdata;
        size_t n = strlen(r->text);
        snprintf(r->text + n, sizeof r->text - n, "%s%s:%s", n ? " " : "", e->kind, e->name);
}

static int on_event(const aisb_event *e, void *userdata)
{
        removed *r = userdata;
        if (e->type != AISB_EVENT_LOG || e->level != AISB_LOG_WARNING)
                return 0;
        size_t n = strlen(r->warnings);
        snprintf(r->warnings + n, sizeof r->warnings - n, "%s\n", e->text);
        return 0;
}

/* A clean that succeeds; what it removed and warned about in r. */
static void clean_ok(unsigned flags, const char *volume_glob, const char *keep_image, removed *r)
{
        aisb_ctx_set_event_fn(ctx, on_event, r);
        aisb_error *err = NULL;
        ck_assert_msg(aisb_clean(ctx, flags, volume_glob, keep_image, on_removed, r, &err) == 0, "%s",
                      aisb_error_message(err));
}

/* What a user's podman holds: aisb's sandboxes and gates in each state, and images of aisb
 * and of others. */
static void route_host(void)
{
        pid_t gone = dead_pid();
        char containers[4096];
        snprintf(containers, sizeof containers,
                 "["
                 /* Its aisb still runs: never touched, nor its image. */
                 "{\"Names\":[\"aisb-run-live\"],\"Image\":\"localhost/aisb:live\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.pid\":\"%d\"}},"
                 /* A pid that is no number: running, so kept. */
                 "{\"Names\":[\"aisb-run-odd\"],\"Image\":\"localhost/aisb:odd\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.pid\":\"-1\"}},"
                 "{\"Names\":[\"aisb-run-exited\"],\"Image\":\"localhost/aisb:live\",\"State\":\"exited\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.pid\":\"%d\"}},"
                 "{\"Names\":[\"aisb-run-orphan\"],\"Image\":\"localhost/aisb:orphan\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.pid\":\"%d\"}},"
                 /* Gates: a running one (with a dead pid label: still not an orphan), a stopped one. */
                 "{\"Names\":[\"aisb-gate-up\"],\"Image\":\"localhost/aisb-gate:g1\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"up\",\"aisb.gate.port\":\"40001\",\"aisb.pid\":\"%d\"}},"
                 "{\"Names\":[\"aisb-gate-down\"],\"Image\":\"localhost/aisb-gate:g0\",\"State\":\"exited\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"down\",\"aisb.gate.port\":\"40002\"}},"
                 /* No name: nothing to remove it by. */
                 "{\"Image\":\"localhost/aisb:nameless\",\"State\":\"exited\",\"Labels\":{\"aisb.managed\":\"true\"}}"
                 "]",
                 (int) getpid(), (int) getpid(), (int) gone, (int) gone);
        route_json("GET", "/containers/json?*label*aisb.managed=true*", containers);
        route_json("GET", "/images/json",
                   "[{\"Names\":[\"localhost/aisb:live\"]},{\"Names\":[\"localhost/aisb:odd\"]},"
                   "{\"Names\":[\"localhost/aisb:orphan\",\"localhost/aisb:old\"]},"
                   "{\"Names\":[\"localhost/aisb-gate:g1\"]},{\"Names\":[\"localhost/aisb-gate:g0\"]},"
                   "{\"Names\":[\"localhost/aisb-base:trixie\"]},{\"Names\":[\"localhost/aisb:keep\"]},"
                   "{\"Names\":[\"docker.io/library/ubuntu:24.04\"]},{\"Names\":[\"localhost/aisbx:1\"]},"
                   "{\"Names\":[\"localhost/other/aisb:1\"]},{\"Id\":\"dangling\"},{\"Names\":null}]");
        route_json("DELETE", "/containers/*", "[]");
        route_json("DELETE", "/images/*", "{}");
        fake_podman_route(fp, "DELETE", "/volumes/*", 204, NULL, "", FAKE_NORMAL, 0);
}

START_TEST(test_clean_default)
{
        route_host();
        removed r = {};
        clean_ok(0, NULL, "localhost/aisb:keep", &r);
        ck_assert_str_eq(r.text, "sandbox:aisb-run-exited sandbox:aisb-run-orphan gate:aisb-gate-down "
                                 "image:localhost/aisb:orphan image:localhost/aisb:old image:localhost/aisb-gate:g0");
        expect_requests("DELETE", "containers/", "containers/aisb-run-exited containers/aisb-run-orphan containers/aisb-gate-down");
        /* Forcefully, at once: a stopped sandbox has nothing to wait for. */
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (streq(fake_podman_request_method(fp, i), "DELETE") &&
                    strstr(fake_podman_request_path(fp, i), "/containers/"))
                        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, i), "force=true"));
        expect_requests("DELETE", "images/", "images/localhost/aisb:orphan images/localhost/aisb:old images/localhost/aisb-gate:g0");
        /* Volumes only when asked: not even listed. */
        expect_requests("GET", "volumes/", "");
        expect_requests("DELETE", "volumes/", "");
        ck_assert_str_eq(r.warnings, "");
        ck_assert_str_eq(first_query("/containers/json"), MANAGED_QUERY);
}
END_TEST

START_TEST(test_clean_all)
{
        route_host();
        removed r = {};
        /* A flag it does not know: nothing is asked of the service, nothing removed. */
        size_t before = fake_podman_request_count(fp);
        ck_assert_int_eq(aisb_clean(ctx, AISB_CLEAN_ALL | 1u << 7, NULL, NULL, on_removed, &r, NULL), -EINVAL);
        ck_assert_uint_eq(fake_podman_request_count(fp), before);
        ck_assert_str_eq(r.text, "");
        clean_ok(AISB_CLEAN_ALL, NULL, "localhost/aisb:keep", &r);
        /* Running gates too, and every aisb image (the base and the one to keep included) but
         * those of the sandboxes still running. */
        ck_assert_str_eq(r.text, "sandbox:aisb-run-exited sandbox:aisb-run-orphan gate:aisb-gate-up gate:aisb-gate-down "
                                 "image:localhost/aisb:orphan image:localhost/aisb:old image:localhost/aisb-gate:g1 "
                                 "image:localhost/aisb-gate:g0 image:localhost/aisb-base:trixie image:localhost/aisb:keep");
        expect_requests("DELETE", "containers/",
                        "containers/aisb-run-exited containers/aisb-run-orphan containers/aisb-gate-up containers/aisb-gate-down");
        expect_requests("DELETE", "images/",
                        "images/localhost/aisb:orphan images/localhost/aisb:old images/localhost/aisb-gate:g1 "
                        "images/localhost/aisb-gate:g0 images/localhost/aisb-base:trixie images/localhost/aisb:keep");
}
END_TEST

/* An image another container still uses, one someone removed meanwhile: warnings, and the
 * clean goes on. */
START_TEST(test_clean_image_refused)
{
        fake_podman_route(fp, "DELETE", "/images/localhost%2Faisb%3Aorphan", 409, "application/json",
                          "{\"cause\":\"image is in use by a container\",\"message\":\"image used by 0123abcd: "
                          "image is in use by a container\",\"response\":409}",
                          FAKE_NORMAL, 0);
        fake_podman_route(fp, "DELETE", "/images/localhost%2Faisb%3Aold", 404, "application/json",
                          "{\"message\":\"no such image\",\"response\":404}", FAKE_NORMAL, 0);
        route_host();
        removed r = {};
        clean_ok(0, NULL, NULL, &r);
        ck_assert_str_eq(r.warnings, "removing localhost/aisb:orphan: image used by 0123abcd: image is in use by a container\n");
        /* The images after it were still removed. */
        expect_requests("DELETE", "images/",
                        "images/localhost/aisb:orphan images/localhost/aisb:old images/localhost/aisb-gate:g0 images/localhost/aisb:keep");
}
END_TEST

/* A container that cannot be removed ends the clean with the reason. */
START_TEST(test_clean_container_refused)
{
        fake_podman_route(fp, "DELETE", "/containers/aisb-run-exited", 500, "application/json",
                          "{\"message\":\"container state improper\",\"response\":500}", FAKE_NORMAL, 0);
        route_host();
        removed r = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_clean(ctx, 0, NULL, NULL, on_removed, &r, &err), -EIO);
        ck_assert_str_eq(aisb_error_message(err), "removing aisb-run-exited: container state improper");
        aisb_error_free(err);
        expect_requests("DELETE", "images/", "");
}
END_TEST

static void route_volumes(void)
{
        route_json("GET", "/volumes/json?",
                   "[{\"Name\":\"aisb-home-proj\"},{\"Name\":\"aisb-home-pinned\"},{\"Name\":\"aisb-home-live\"},"
                   "{\"Name\":\"aisb-home-refused\"},{\"Name\":\"aisb-cache-x\"},{\"Name\":\"projdata\"},"
                   "{\"Name\":\"my-aisb-home\"}]");
        /* Used only by a sandbox this clean removes: free once it is gone. */
        route_json("GET", "/containers/json?*volume*aisb-home-proj*", "[{\"Names\":[\"aisb-run-exited\"]}]");
        /* Used by a container outside aisb's namespace. */
        route_json("GET", "/containers/json?*volume*aisb-home-pinned*", "[{\"Names\":[\"aisb-run-exited\"]},{\"Names\":[\"someones-db\"]}]");
        /* Used by a sandbox that still runs. */
        route_json("GET", "/containers/json?*volume*aisb-home-live*", "[{\"Names\":[\"aisb-run-live\"]}]");
        route_json("GET", "/containers/json?*volume*", "[]");
        fake_podman_route(fp, "DELETE", "/volumes/aisb-home-refused", 409, "application/json",
                          "{\"message\":\"volume is being used by the following container(s): f00\",\"response\":409}",
                          FAKE_NORMAL, 0);
}

START_TEST(test_clean_volumes)
{
        route_volumes();
        route_host();
        removed r = {};
        clean_ok(AISB_CLEAN_VOLUMES, NULL, NULL, &r);
        ck_assert_ptr_nonnull(strstr(r.text, " volume:aisb-home-proj volume:aisb-home-refused volume:aisb-cache-x"));
        ck_assert_str_eq(strstr(r.text, "volume:"), "volume:aisb-home-proj volume:aisb-home-refused volume:aisb-cache-x");
        expect_requests("DELETE", "volumes/", "volumes/aisb-home-proj volumes/aisb-home-refused volumes/aisb-cache-x");
        /* A refusal (a container of someone else's took it meanwhile) is a warning. */
        ck_assert_str_eq(r.warnings, "removing aisb-home-refused: volume is being used by the following container(s): f00\n");
        /* Every volume listed (no label filter: older homes carry none), only aisb-* asked about. */
        for (size_t i = 0; i < fake_podman_request_count(fp); i++) {
                const char *path = fake_podman_request_path(fp, i);
                if (strstr(path, "/volumes/json"))
                        ck_assert_str_eq(query_of(i), "");
                if (strstr(path, "/containers/json") && strstr(query_of(i), "volume"))
                        ck_assert_msg(strstr(query_of(i), "\"aisb-"), "asked about %s", query_of(i));
        }
}
END_TEST

START_TEST(test_clean_volumes_glob)
{
        route_volumes();
        route_host();
        removed r = {};
        clean_ok(AISB_CLEAN_VOLUMES, "aisb-home-p*", NULL, &r);
        ck_assert_str_eq(strstr(r.text, "volume:"), "volume:aisb-home-proj");
        expect_requests("DELETE", "volumes/", "volumes/aisb-home-proj");
        /* What the glob leaves out is not even asked about. */
        unsigned asked = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (strstr(query_of(i), "\"volume\""))
                {
                        asked++;
                        ck_assert_ptr_nonnull(strstr(query_of(i), "aisb-home-p"));
                }
        ck_assert_uint_eq(asked, 2);
}
END_TEST

START_TEST(test_clean_dry_run)
{
        route_volumes();
        route_host();
        removed r = {};
        clean_ok(AISB_CLEAN_ALL | AISB_CLEAN_VOLUMES | AISB_CLEAN_DRY_RUN, NULL, NULL, &r);
        /* Reported as a real clean would (the volume of a sandbox it would remove included)... */
        ck_assert_str_eq(r.text, "sandbox:aisb-run-exited sandbox:aisb-run-orphan gate:aisb-gate-up gate:aisb-gate-down "
                                 "image:localhost/aisb:orphan image:localhost/aisb:old image:localhost/aisb-gate:g1 "
                                 "image:localhost/aisb-gate:g0 image:localhost/aisb-base:trixie image:localhost/aisb:keep "
                                 "volume:aisb-home-proj volume:aisb-home-refused volume:aisb-cache-x");
        /* ...and nothing removed. */
        expect_requests("DELETE", "", "");
}
END_TEST

/* A gate's state directory (gates/HASH) with a squid.conf holding text, and a lease file;
 * returns a descriptor of the squid.conf, to see it zeroed after it is gone. */
static int plant_state(const char *hash, const char *conf)
{
        char dir[256], path[300];
        snprintf(dir, sizeof dir, "%s/ai-sandbox/gates/%s/config", state_home, hash);
        ck_assert_int_eq(mkdir_p(dir, 0700), 0);
        snprintf(dir, sizeof dir, "%s/ai-sandbox/gates/%s/leases", state_home, hash);
        ck_assert_int_eq(mkdir_p(dir, 0700), 0);
        snprintf(path, sizeof path, "%s/ai-sandbox/gates/%s/leases/run", state_home, hash);
        close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        snprintf(path, sizeof path, "%s/ai-sandbox/gates/%s/config/squid.conf", state_home, hash);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, conf, strlen(conf)), 0);
        return fd;
}

/* A lease held on a gate's state, as a run holds it: a locked file in its leases/. */
static int hold_lease(const char *hash)
{
        char path[300];
        snprintf(path, sizeof path, "%s/ai-sandbox/gates/%s/leases/run", state_home, hash);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
        return fd;
}

static bool state_exists(const char *hash)
{
        char dir[256];
        snprintf(dir, sizeof dir, "%s/ai-sandbox/gates/%s", state_home, hash);
        return access(dir, F_OK) == 0;
}

/* A killed run's own gate (running, refusing everything, holding the secret in squid.conf)
 * is removed by a plain clean, its state with it; the state of a gate podman no longer has is
 * wiped; nothing a run still holds is touched, nor a shared gate, nor what is no gate's. */
START_TEST(test_clean_gate_state)
{
        const char *killed = "00000000000000aa", *live = "00000000000000bb", *left = "00000000000000cc",
                   *starting = "00000000000000dd", *shared = "00000000000000ee";
        int killed_conf = plant_state(killed, "request_header_add Authorization \"Bearer SECRET\"");
        int live_conf = plant_state(live, "SECRET");
        int left_conf = plant_state(left, "request_header_add x-api-key \"SECRET\"");
        int starting_conf = plant_state(starting, "SECRET");
        int shared_conf = plant_state(shared, "shared");
        int live_lease = hold_lease(live), starting_lease = hold_lease(starting);
        char other[256];
        snprintf(other, sizeof other, "%s/ai-sandbox/gates/not-a-gate", state_home);
        ck_assert_int_eq(mkdir_p(other, 0700), 0);
        char containers[2048];
        snprintf(containers, sizeof containers,
                 "[{\"Names\":[\"aisb-gate-%s\"],\"Image\":\"localhost/aisb-gate:g\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"%s\",\"aisb.gate.port\":\"40001\",\"aisb.gate.run\":\"true\"}},"
                 "{\"Names\":[\"aisb-gate-%s\"],\"Image\":\"localhost/aisb-gate:g\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"%s\",\"aisb.gate.port\":\"40002\",\"aisb.gate.run\":\"true\"}},"
                 "{\"Names\":[\"aisb-gate-%s\"],\"Image\":\"localhost/aisb-gate:g\",\"State\":\"running\","
                 "\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate\":\"%s\",\"aisb.gate.port\":\"40003\"}}]",
                 killed, killed, live, live, shared, shared);
        route_json("GET", "/containers/json?*label*aisb.managed=true*", containers);
        route_json("GET", "/images/json", "[]");
        route_json("DELETE", "/containers/*", "[]");

        /* A dry run tells the same and touches nothing. */
        removed r = {};
        clean_ok(AISB_CLEAN_DRY_RUN, NULL, NULL, &r);
        char expected[1024];
        snprintf(expected, sizeof expected, "gate:aisb-gate-%s gate-state:%s/ai-sandbox/gates/%s "
                 "gate-state:%s/ai-sandbox/gates/%s", killed, state_home, killed, state_home, left);
        ck_assert_str_eq(r.text, expected);
        expect_requests("DELETE", "containers/", "");
        ck_assert(state_exists(killed) && state_exists(left));

        r = (removed) {};
        clean_ok(0, NULL, NULL, &r);
        ck_assert_str_eq(r.text, expected);
        char delete_gate[64];
        snprintf(delete_gate, sizeof delete_gate, "containers/aisb-gate-%s", killed);
        expect_requests("DELETE", "containers/", delete_gate);
        ck_assert(!state_exists(killed));
        ck_assert(!state_exists(left));
        ck_assert(state_exists(live) && state_exists(starting) && state_exists(shared));
        ck_assert_int_eq(access(other, F_OK), 0);
        /* What held the secrets was zeroed before it went; the rest is as it was. */
        char buf[64];
        for (int i = 0; i < 2; i++) {
                int fd = i ? left_conf : killed_conf;
                ssize_t n = pread(fd, buf, sizeof buf, 0);
                ck_assert_int_gt(n, 0);
                for (ssize_t k = 0; k < n; k++)
                        ck_assert_int_eq(buf[k], 0);
        }
        ck_assert_int_eq(pread(live_conf, buf, 6, 0), 6);
        ck_assert_int_eq(memcmp(buf, "SECRET", 6), 0);
        ck_assert_int_eq(pread(shared_conf, buf, 6, 0), 6);
        ck_assert_int_eq(memcmp(buf, "shared", 6), 0);
        close(killed_conf), close(live_conf), close(left_conf), close(starting_conf), close(shared_conf);
        close(live_lease), close(starting_lease);
}
END_TEST

static Suite *manage_suite(void)
{
        Suite *s = suite_create("manage");
        suite_add_tests(s, "list", setup, teardown, test_list, test_list_time_offset, test_list_gate_users,
                        test_list_refused);
        suite_add_tests(s, "clean", setup, teardown, test_clean_default, test_clean_all, test_clean_image_refused,
                        test_clean_container_refused, test_clean_volumes, test_clean_volumes_glob, test_clean_dry_run,
                        test_clean_gate_state);
        return s;
}

int main(void)
{
        return unit_run(manage_suite());
}
