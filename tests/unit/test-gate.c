/* SPDX-License-Identifier: MIT */
/*
 * The gate's life (gate.c) against the fake libpod service: found running and ours, started
 * afresh when its port is not the user's, its configuration written and its logs directory
 * cleared of what squid (and so any sandbox's traffic) could have planted there, a start that
 * fails leaving nothing behind, a stop while it starts; aisb gate list/down/logs; and the
 * reading of its access log for a run's summary. "Ours" is a listening socket of this user
 * on 127.0.0.1:port, so a test plays squid by listening there itself (from the fake's request
 * hook, at the moment the gate's start is answered).
 *
 * Run with --as-root, the cases that need a listener of another user run instead; without
 * root they cannot, and the program exits 77 saying so.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "fake-podman.h"
#include "internal.h"
#include "unit.h"
#include "fileio.h"
#include "ask.h"
#include "egress.h"
#include "../suite-table.h"

#define NOBODY 65534

static char base[] = "/tmp/aisb-test-gate-XXXXXX";
static fake_podman *fp;
static aisb_ctx *ctx;
static aisb_policy *policy;
static char *gate_name, *gate_dir; /* of policy's gate */
static char state_home[256];

/* What the fake does when a request arrives (the request hook). */
typedef enum hook_action {
        HOOK_NONE,
        HOOK_LISTEN_AT_START,      /* squid comes up: listen on the create body's port */
        HOOK_LOG_AT_START,         /* squid fails: hook_text into logs/cache.log */
        HOOK_FIFO_LOG_AT_START,    /* a FIFO appears at logs/cache.log */
        HOOK_SYMLINK_LOG_AT_START, /* a symlink to hook_text (a path) appears there */
        HOOK_STRANGER_AT_START,    /* another user takes the port first */
        HOOK_CANCEL_AFTER_START,   /* aisb_ctx_cancel while the gate is waited for */
} hook_action;
static hook_action hook = HOOK_NONE;
static const char *hook_text;
static int hook_listener = -1;
static pid_t hook_stranger = -1;
static unsigned hook_port;

static void remove_tree(const char *path)
{
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "rm -rf '%s'", path);
        ck_assert_int_eq(system(command), 0);
}

static void setup(void)
{
        /* A state directory of its own per test: no gate directory, lock or log of another. */
        snprintf(state_home, sizeof state_home, "%s/state-XXXXXX", base);
        ck_assert_ptr_nonnull(mkdtemp(state_home));
        setenv("XDG_STATE_HOME", state_home, 1);
        unit_podman_start(&fp, &ctx);
        ck_assert_int_eq(aisb_policy_new(&policy, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(policy, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(policy, "allow", "example.com", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(policy, "gate-add-host", "db.internal:10.1.2.3", NULL), 0);
        allowlist l = {};
        char *hash = NULL;
        ck_assert_int_eq(policy_allowlist(policy, NULL, &l, NULL), 0);
        ck_assert_int_eq(gate_squid_hash(&l, (const char *const *) policy->add_hosts, &hash), 0);
        allowlist_done(&l);
        ck_assert_int_ge(asprintf(&gate_name, "aisb-gate-%s", hash), 0);
        ck_assert_int_ge(asprintf(&gate_dir, "%s/ai-sandbox/gates/%s", state_home, hash), 0);
        free(hash);
        fake_podman_set_request_hook(fp, NULL, NULL);
        hook = HOOK_NONE;
}

static void teardown(void)
{
        fake_podman_stop(fp);
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        if (hook_listener >= 0)
                close(hook_listener);
        if (hook_stranger > 0) {
                kill(hook_stranger, SIGKILL);
                waitpid(hook_stranger, NULL, 0);
        }
        free(gate_name);
        free(gate_dir);
}

/* gate_dir/sub in a static buffer of four (the test's thread only). */
static char *at(const char *sub)
{
        static char path[4][PATH_MAX];
        static unsigned next;
        char *p = path[next++ % 4];
        snprintf(p, PATH_MAX, "%s/%s", gate_dir, sub);
        return p;
}

/* The same for the fake's thread. */
static const char *at_into(char buf[static PATH_MAX], const char *sub)
{
        snprintf(buf, PATH_MAX, "%s/%s", gate_dir, sub);
        return buf;
}

static ssize_t find_request(const char *method, const char *needle)
{
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (streq(fake_podman_request_method(fp, i), method) &&
                    strstr(fake_podman_request_path(fp, i), needle))
                        return (ssize_t) i;
        return -1;
}

static unsigned count_requests(const char *method, const char *needle)
{
        unsigned n = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                n += streq(fake_podman_request_method(fp, i), method) &&
                     strstr(fake_podman_request_path(fp, i), needle) != NULL;
        return n;
}

/* err by address: read after the call that fills it. */
static void expect_error(int r, int code, aisb_error **errp, const char *needle)
{
        aisb_error *err = *errp;
        *errp = NULL;
        ck_assert_msg(r == code, "returned %d (%s), expected %d", r, err ? aisb_error_message(err) : "no error", code);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'", aisb_error_message(err), needle);
        aisb_error_free(err);
}

/* A listener of this user on 127.0.0.1 (port 0: any). */
static int listen_loopback(unsigned port, unsigned *ret_port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                 .sin_port = htons((uint16_t) port) };
        socklen_t len = sizeof a;
        if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 1) < 0 ||
            getsockname(fd, (struct sockaddr *) &a, &len) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        if (ret_port)
                *ret_port = ntohs(a.sin_port);
        return fd;
}

/* A loopback port nothing listens on now. */
static unsigned unused_port(void)
{
        unsigned port;
        int fd = listen_loopback(0, &port);
        ck_assert_int_ge(fd, 0);
        close(fd);
        return port;
}

/* A listener of another user (nobody) on 127.0.0.1:port, in a child process that waits to be
 * killed; -1 when it cannot (not root). Only async-signal-safe calls in the child: it may be
 * forked from the fake's thread. */
static pid_t stranger_listens(unsigned port)
{
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                         .sin_port = htons((uint16_t) port) };
                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0)
                        _exit(1);
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 1) < 0)
                        _exit(2);
                if (write(ready[1], "x", 1) != 1)
                        _exit(3);
                for (;;)
                        pause();
        }
        close(ready[1]);
        char c;
        ssize_t n = pid > 0 ? read(ready[0], &c, 1) : -1;
        close(ready[0]);
        if (n != 1) {
                if (pid > 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                }
                return -1;
        }
        return pid;
}

/* The gate's create body as sent, parsed. */
static json_object *create_body(void)
{
        ssize_t i = find_request("POST", "/containers/create");
        ck_assert_int_ge(i, 0);
        json_object *o = json_tokener_parse(fake_podman_request_body(fp, (size_t) i));
        ck_assert_ptr_nonnull(o);
        return o;
}

static const char *get_string(json_object *o, const char *a, const char *b)
{
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, a, &v) || (b && !json_object_object_get_ex(v, b, &v)))
                return NULL;
        return json_object_get_string(v);
}

/* The port the gate was created for (its label): -1 when there is no create yet. */
static long created_port(fake_podman *f)
{
        for (size_t i = 0; i < fake_podman_request_count(f); i++)
                if (streq(fake_podman_request_method(f, i), "POST") &&
                    strstr(fake_podman_request_path(f, i), "/containers/create")) {
                        json_object *o = json_tokener_parse(fake_podman_request_body(f, i));
                        const char *port = get_string(o, "labels", "aisb.gate.port");
                        long n = port ? strtol(port, NULL, 10) : -1;
                        json_object_put(o);
                        return n;
                }
        return -1;
}

static void write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
                (void) write_all(fd, text, strlen(text));
                close(fd);
        }
}

/* In the fake's thread: no ck_assert here, what the test checks is what it causes. */
static void on_request(fake_podman *f, size_t i, void *userdata)
{
        const char *method = fake_podman_request_method(f, i), *path = fake_podman_request_path(f, i);
        bool start = streq(method, "POST") && strstr(path, "/start");
        long port = created_port(f);
        char cache_log[PATH_MAX];
        at_into(cache_log, "logs/cache.log");
        if (start)
                hook_port = port > 0 ? (unsigned) port : 0;
        switch (hook) {
        case HOOK_LISTEN_AT_START:
                if (start && port > 0)
                        hook_listener = listen_loopback((unsigned) port, NULL);
                break;
        case HOOK_LOG_AT_START:
                if (start)
                        write_file(cache_log, hook_text);
                break;
        case HOOK_FIFO_LOG_AT_START:
                if (start)
                        (void) mkfifo(cache_log, 0600);
                break;
        case HOOK_SYMLINK_LOG_AT_START:
                if (start)
                        (void) symlink(hook_text, cache_log);
                break;
        case HOOK_STRANGER_AT_START:
                if (start && port > 0)
                        hook_stranger = stranger_listens((unsigned) port);
                break;
        case HOOK_CANCEL_AFTER_START:
                /* A look at the gate after its start: the wait for squid is under way. */
                for (size_t k = 0; k < i; k++)
                        if (streq(method, "GET") && strstr(path, "/json") &&
                            streq(fake_podman_request_method(f, k), "POST") &&
                            strstr(fake_podman_request_path(f, k), "/start")) {
                                aisb_ctx_cancel(ctx);
                                break;
                        }
                break;
        case HOOK_NONE:
                break;
        }
}

static void route_inspect(int status, bool running, unsigned port, int times)
{
        char body[256];
        snprintf(body, sizeof body, "{\"State\":{\"Running\":%s},\"Config\":{\"Labels\":{\"aisb.managed\":\"true\",\"aisb.gate.port\":\"%u\"}}}",
                 running ? "true" : "false", port);
        fake_podman_route(fp, "GET", "/containers/aisb-gate-*/json", status, "application/json",
                          status == 200 ? body : "{\"message\":\"no such container\",\"response\":404}", FAKE_NORMAL, times);
}

/* What a start needs besides the look at the gate: its image, create, start, remove. */
static void route_start(int start_status)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", "{\"Id\":\"9a7e\",\"Warnings\":[]}",
                          FAKE_NORMAL, 1);
        fake_podman_route(fp, "POST", "/containers/aisb-gate-*/start", start_status, "application/json",
                          start_status == 204 ? "" : "{\"message\":\"crun: setns: operation not permitted\",\"response\":500}",
                          FAKE_NORMAL, 1);
        fake_podman_route(fp, "DELETE", "/containers/aisb-gate-*", 200, "application/json", "[]", FAKE_NORMAL, 0);
        fake_podman_set_request_hook(fp, on_request, NULL);
}

/* A gate absent at both looks, started, then there (running on port, or not); hook at its
 * start. */
static void route_started(bool running, unsigned port, hook_action at_start)
{
        route_inspect(404, false, 0, 2);
        route_inspect(200, running, port, 0);
        route_start(204);
        hook = at_start;
}

static void make_logs_dir(void)
{
        char command[PATH_MAX + 32];
        snprintf(command, sizeof command, "mkdir -p '%s/logs' '%s/config'", gate_dir, gate_dir);
        ck_assert_int_eq(system(command), 0);
}

typedef struct log_lines {
        char text[4096];
} log_lines;

static int on_event(const aisb_event *e, void *userdata)
{
        log_lines *l = userdata;
        if (e->type != AISB_EVENT_LOG)
                return 0;
        size_t n = strlen(l->text);
        snprintf(l->text + n, sizeof l->text - n, "%d %s\n", (int) e->level, e->text);
        return 0;
}

/* ---- found running ---- */

START_TEST(test_up_found_running)
{
        unsigned port;
        int listener = listen_loopback(0, &port);
        ck_assert_int_ge(listener, 0);
        route_inspect(200, true, port, 0);
        char *name = NULL;
        unsigned got = 0;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_up(ctx, policy, &name, &got, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_str_eq(name, gate_name);
        ck_assert_uint_eq(got, port);
        /* One look, no lock taken, nothing made or removed. */
        ck_assert_uint_eq(count_requests("GET", "/containers/"), 1);
        ck_assert_int_eq(find_request("POST", "/"), -1);
        ck_assert_int_eq(find_request("DELETE", "/"), -1);
        ck_assert_int_eq(access(at("lock"), F_OK), -1);
        free(name);
        close(listener);
}
END_TEST

/* The lock another run holds while it starts the gate, and what this test does about it in
 * a thread of its own, some time after the gate was first looked at: held_lock released
 * (another run started the gate), or the run stopped. */
static int held_lock = -1;
typedef struct lock_later {
        long ms;
        bool cancel;
} lock_later;

static void *after_first_look(void *userdata)
{
        const lock_later *later = userdata;
        for (int i = 0; i < 500 && count_requests("GET", "/containers/aisb-gate-") < 1; i++)
                nanosleep(&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        nanosleep(&(struct timespec) { 0, later->ms * 1000 * 1000 }, NULL);
        if (later->cancel)
                aisb_ctx_cancel(ctx);
        else
                close(held_lock);
        return NULL;
}

/* Another run holds the lock while it starts the gate: this one waits, then finds it up. */

START_TEST(test_up_waits_for_the_lock)
{
        unsigned port;
        int listener = listen_loopback(0, &port);
        ck_assert_int_ge(listener, 0);
        route_inspect(404, false, 0, 1);
        route_inspect(200, true, port, 0);
        make_logs_dir();
        held_lock = open(at("lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(held_lock, 0);
        ck_assert_int_eq(flock(held_lock, LOCK_EX | LOCK_NB), 0);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, after_first_look, &(lock_later) { .ms = 200 }), 0);
        unsigned got = 0;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_up(ctx, policy, NULL, &got, &err) == 0, "%s", aisb_error_message(err));
        pthread_join(t, NULL);
        ck_assert_uint_eq(got, port);
        /* Looked at again once the lock was ours: started by the other run, not twice. */
        ck_assert_uint_eq(count_requests("GET", "/containers/aisb-gate-"), 2);
        ck_assert_int_eq(find_request("POST", "/containers/create"), -1);
        close(listener);
}
END_TEST

START_TEST(test_up_cancelled_waiting_for_the_lock)
{
        route_inspect(404, false, 0, 0);
        route_start(204);
        make_logs_dir();
        held_lock = open(at("lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(held_lock, 0);
        ck_assert_int_eq(flock(held_lock, LOCK_EX | LOCK_NB), 0);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, after_first_look, &(lock_later) { .ms = 100, .cancel = true }), 0);
        aisb_error *err = NULL;
        expect_error(aisb_gate_up(ctx, policy, NULL, NULL, &err), -ECANCELED, &err, "stopped while waiting for the gate");
        pthread_join(t, NULL);
        ck_assert_int_eq(find_request("POST", "/containers/create"), -1);
        close(held_lock);
}
END_TEST

/* ---- started afresh ---- */

START_TEST(test_up_restarts_a_gate_not_ours)
{
        /* Running, but nothing of ours listens on its port (another user may, later). */
        unsigned stale = unused_port();
        route_inspect(200, true, stale, 2);
        route_start(204);
        hook = HOOK_LISTEN_AT_START;
        /* What squid's directory may hold: a symlink at the access log to a file of the host's,
         * the cache.log of an earlier failure. */
        make_logs_dir();
        char victim[PATH_MAX];
        snprintf(victim, sizeof victim, "%s/victim", state_home);
        write_file(victim, "the user's file\n");
        ck_assert_int_eq(symlink(victim, at("logs/access.log")), 0);
        write_file(at("logs/cache.log"), "FATAL: an earlier start\n");
        write_file(at("config/squid.conf"), "http_port 0.0.0.0:3128\n");

        log_lines logs = {};
        aisb_ctx_set_event_fn(ctx, on_event, &logs);
        char *name = NULL;
        unsigned got = 0;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_up(ctx, policy, &name, &got, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_str_eq(name, gate_name);
        ck_assert_uint_ne(got, stale);
        ck_assert_uint_eq(got, hook_port);
        ck_assert_ptr_nonnull(strstr(logs.text, "restarting the gate aisb-gate-"));

        /* Removed, then created and started, in that order. */
        ssize_t removed = find_request("DELETE", gate_name);
        ssize_t created = find_request("POST", "/containers/create");
        ssize_t started = find_request("POST", "/start");
        ck_assert(removed >= 0 && created > removed && started > created);
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) removed), "force=true"));
        ck_assert_ptr_nonnull(strstr(fake_podman_request_path(fp, (size_t) started), gate_name));

        /* The configuration, the host's alone: fresh, 0600. */
        struct stat st;
        ck_assert_int_eq(lstat(at("config/squid.conf"), &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        ck_assert_int_eq(lstat(at("config/hosts"), &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        char *conf = NULL, *hosts = NULL;
        size_t size;
        int fd = open(at("config/squid.conf"), O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &conf, &size), 0);
        close(fd);
        char listen_line[64];
        snprintf(listen_line, sizeof listen_line, "http_port 127.0.0.1:%u\n", got);
        ck_assert_ptr_nonnull(strstr(conf, listen_line));
        ck_assert_ptr_null(strstr(conf, "0.0.0.0:3128"));
        ck_assert_ptr_nonnull(strstr(conf, "example.com"));
        ck_assert_ptr_nonnull(strstr(conf, "access_log stdio:/aisb-gate/logs/access.log"));
        fd = open(at("config/hosts"), O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &hosts, &size), 0);
        close(fd);
        ck_assert_ptr_nonnull(strstr(hosts, "10.1.2.3 db.internal"));
        free(conf);
        free(hosts);

        /* logs/: the symlink removed, not followed; cache.log emptied for this start. */
        ck_assert_int_eq(lstat(at("logs/access.log"), &st), -1);
        ck_assert_int_eq(errno, ENOENT);
        char *victim_text = NULL;
        fd = open(victim, O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read_full_fd(fd, 4096, &victim_text, &size), 0);
        close(fd);
        ck_assert_str_eq(victim_text, "the user's file\n");
        free(victim_text);
        ck_assert_int_eq(lstat(at("logs/cache.log"), &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(st.st_size, 0);

        /* What the gate is: squid as the user on the host's network, its config read-only. */
        json_object *body = create_body();
        char user[64], config[PATH_MAX], logs_dir[PATH_MAX], port_text[16];
        snprintf(user, sizeof user, "%u:%u", (unsigned) getuid(), (unsigned) getgid());
        snprintf(config, sizeof config, "%s", at("config"));
        snprintf(logs_dir, sizeof logs_dir, "%s", at("logs"));
        snprintf(port_text, sizeof port_text, "%u", got);
        ck_assert_str_eq(get_string(body, "name", NULL), gate_name);
        ck_assert(startswith(get_string(body, "image", NULL), "localhost/aisb-gate:"));
        ck_assert_str_eq(get_string(body, "user", NULL), user);
        ck_assert_str_eq(get_string(body, "netns", "nsmode"), "host");
        ck_assert_str_eq(get_string(body, "labels", "aisb.managed"), "true");
        ck_assert_str_eq(get_string(body, "labels", "aisb.gate"), gate_name + strlen("aisb-gate-"));
        ck_assert_str_eq(get_string(body, "labels", "aisb.gate.port"), port_text);
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(body, "cap_drop"), JSON_C_TO_STRING_PLAIN),
                         "[\"ALL\"]");
        ck_assert(json_object_get_boolean(json_object_object_get(body, "read_only_filesystem")));
        json_object *mounts = json_object_object_get(body, "mounts");
        bool config_ro = false, logs_rw = false;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                const char *source = get_string(m, "source", NULL), *options =
                        json_object_to_json_string_ext(json_object_object_get(m, "options"), JSON_C_TO_STRING_PLAIN);
                if (streq(source, config))
                        config_ro = streq(get_string(m, "destination", NULL), "/aisb-gate/config") &&
                                    streq(options, "[\"rbind\",\"ro\"]");
                if (streq(source, logs_dir))
                        logs_rw = streq(get_string(m, "destination", NULL), "/aisb-gate/logs") &&
                                  streq(options, "[\"rbind\",\"rw\"]");
        }
        ck_assert(config_ro && logs_rw);
        json_object_put(body);
        free(name);
}
END_TEST

/* Not there at all: created, no removal first. */
START_TEST(test_up_starts_an_absent_gate)
{
        route_inspect(404, false, 0, 0);
        route_start(204);
        hook = HOOK_LISTEN_AT_START;
        unsigned got = 0;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_up(ctx, policy, NULL, &got, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_uint_eq(got, hook_port);
        ck_assert_int_eq(find_request("DELETE", "/"), -1);
        ck_assert_uint_eq(count_requests("POST", "/containers/create"), 1);
        /* The directories squid needs, made by the host (a FIFO or link there is not ours). */
        struct stat st;
        ck_assert_int_eq(lstat(at("logs"), &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
}
END_TEST

/* squid exits (its configuration refused): cache.log's tail says why, the gate goes. */
START_TEST(test_up_never_listens)
{
        route_started(false, 0, HOOK_LOG_AT_START);
        hook_text = "2024/06/10 12:00:00| FATAL: Bungled /aisb-gate/config/squid.conf line 7\nSquid Cache: Terminated abnormally.\n";
        /* A FIFO planted at the access log: removed before squid starts, never opened. */
        make_logs_dir();
        ck_assert_int_eq(mkfifo(at("logs/access.log"), 0600), 0);
        ck_assert_int_eq(mkfifo(at("logs/cache.log"), 0600), 0);
        aisb_error *err = NULL;
        int r = aisb_gate_up(ctx, policy, NULL, NULL, &err);
        char expected[512];
        snprintf(expected, sizeof expected,
                 "the gate did not start listening on 127.0.0.1:%u: 2024/06/10 12:00:00| FATAL: Bungled "
                 "/aisb-gate/config/squid.conf line 7 Squid Cache: Terminated abnormally. ",
                 hook_port);
        expect_error(r, -EIO, &err, expected);
        ssize_t started = find_request("POST", "/start"), removed = find_request("DELETE", gate_name);
        ck_assert(started >= 0 && removed > started);
        struct stat st;
        ck_assert_int_eq(lstat(at("logs/access.log"), &st), -1);
}
END_TEST

/* A start that fails once the gate is created, and nothing of it stays:
 * - the service refuses the start: its error, the gate removed after the start;
 * - squid fails with a FIFO, or a symlink to a file of the user's, at cache.log: read only
 *   as a regular file (a FIFO would block the read forever, a symlink would show a host
 *   file in the message);
 * - a stop while squid is waited for: the gate removed, not left half up, and the stop was
 *   that operation's (the next one runs). */
static const struct failed_start {
        int start_status; /* 204: started, then there (running on a port nothing listens on, or not) */
        bool running;
        hook_action hook;
        int code;
        const char *message;
        bool removed_after_start, down_after;
} failed_starts[] = {
        { 500, false, HOOK_NONE, -EIO,
          "starting the gate: the service refused to start it (500): crun: setns: operation not permitted", true, false },
        { 204, false, HOOK_FIFO_LOG_AT_START, -EIO, ": (no log)", false, false },
        { 204, false, HOOK_SYMLINK_LOG_AT_START, -EIO, ": (no log)", false, false },
        { 204, true, HOOK_CANCEL_AFTER_START, -ECANCELED, "stopped while the gate started", true, true },
};

START_TEST(test_up_start_fails)
{
        const struct failed_start *c = &failed_starts[_i];
        char secret[PATH_MAX];
        snprintf(secret, sizeof secret, "%s/secret", state_home);
        write_file(secret, "password=hunter2\n");
        if (c->start_status == 204)
                route_started(c->running, c->running ? unused_port() : 0, c->hook);
        else {
                route_inspect(404, false, 0, 0);
                route_start(c->start_status);
        }
        hook_text = secret;
        aisb_error *err = NULL;
        expect_error(aisb_gate_up(ctx, policy, NULL, NULL, &err), c->code, &err, c->message);
        ssize_t started = find_request("POST", "/start"), removed = find_request("DELETE", gate_name);
        if (c->removed_after_start)
                ck_assert(started >= 0 && removed > started);
        if (c->down_after)
                ck_assert_int_eq(aisb_gate_down(ctx, policy, NULL), 0);
}
END_TEST

/* Another user listens on the port the gate was given before squid could: never taken for
 * the gate. Root only. */
START_TEST(test_up_port_taken_by_a_stranger)
{
        route_started(true, 0, HOOK_STRANGER_AT_START);
        aisb_error *err = NULL;
        int r = aisb_gate_up(ctx, policy, NULL, NULL, &err);
        ck_assert_msg(hook_stranger > 0, "the stranger's listener could not be set up");
        char expected[256];
        snprintf(expected, sizeof expected, "another user (uid %u) took 127.0.0.1:%u before the gate could listen on it",
                 NOBODY, hook_port);
        expect_error(r, -EADDRINUSE, &err, expected);
        ssize_t started = find_request("POST", "/start"), removed = find_request("DELETE", gate_name);
        ck_assert(started >= 0 && removed > started);
}
END_TEST

/* ---- list, down, logs ---- */

typedef struct gates {
        char text[1024];
} gates;

static void on_gate(const aisb_gate_entry *e, void *userdata)
{
        gates *g = userdata;
        size_t n = strlen(g->text);
        snprintf(g->text + n, sizeof g->text - n, "%s %s %u %d\n", e->name, e->policy_hash, e->port, e->answering);
}

static void route_gate_list(unsigned ours, unsigned other)
{
        char body[2048];
        snprintf(body, sizeof body,
                 "[{\"Names\":[\"aisb-gate-a\"],\"State\":\"running\",\"Labels\":{\"aisb.gate\":\"a\",\"aisb.gate.port\":\"%u\"}},"
                 "{\"Names\":[\"aisb-gate-b\"],\"State\":\"running\",\"Labels\":{\"aisb.gate\":\"b\",\"aisb.gate.port\":\"%u\"}},"
                 "{\"Names\":[\"aisb-gate-c\"],\"State\":\"exited\",\"Labels\":{\"aisb.gate\":\"c\",\"aisb.gate.port\":\"%u\"}},"
                 "{\"Names\":[\"aisb-gate-x\"],\"State\":\"running\",\"Labels\":{\"aisb.gate.port\":\"%u\"}},"
                 "{\"State\":\"running\",\"Labels\":{\"aisb.gate\":\"d\",\"aisb.gate.port\":\"%u\"}}]",
                 ours, other, ours, ours, ours);
        fake_podman_route(fp, "GET", "/containers/json?*", 200, "application/json", body, FAKE_NORMAL, 0);
}

START_TEST(test_list)
{
        unsigned ours, nobody = unused_port();
        int listener = listen_loopback(0, &ours);
        ck_assert_int_ge(listener, 0);
        route_gate_list(ours, nobody);
        gates g = {};
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_list(ctx, on_gate, &g, &err) == 0, "%s", aisb_error_message(err));
        char expected[512];
        snprintf(expected, sizeof expected, "aisb-gate-a a %u 1\naisb-gate-b b %u 0\naisb-gate-c c %u 0\n", ours, nobody, ours);
        ck_assert_str_eq(g.text, expected);
        ssize_t i = find_request("GET", "/containers/json");
        ck_assert_int_ge(i, 0);
        ck_assert_str_eq(fake_podman_request_path(fp, (size_t) i),
                         "/v4.0.0/libpod/containers/json?all=true&filters=%7B%22label%22%3A%5B%22aisb.gate%22%5D%7D");
        close(listener);
}
END_TEST

/* Root only: a gate's port held by another user answers, and is not the gate. */
START_TEST(test_list_stranger_not_answering)
{
        unsigned port = unused_port();
        hook_stranger = stranger_listens(port);
        ck_assert_int_gt(hook_stranger, 0);
        route_gate_list(port, port);
        gates g = {};
        ck_assert_int_eq(aisb_gate_list(ctx, on_gate, &g, NULL), 0);
        char expected[512];
        snprintf(expected, sizeof expected, "aisb-gate-a a %u 0\naisb-gate-b b %u 0\naisb-gate-c c %u 0\n", port, port, port);
        ck_assert_str_eq(g.text, expected);
}
END_TEST

START_TEST(test_list_refused)
{
        fake_podman_route(fp, "GET", "/containers/json", 500, "application/json", "{\"message\":\"boom\"}", FAKE_NORMAL, 0);
        gates g = {};
        aisb_error *err = NULL;
        expect_error(aisb_gate_list(ctx, on_gate, &g, &err), -EIO, &err, "listing gates: ");
        ck_assert_str_eq(g.text, "");
}
END_TEST

START_TEST(test_down)
{
        fake_podman_route(fp, "DELETE", "/containers/aisb-gate-*", 200, "application/json", "[]", FAKE_NORMAL, 0);
        aisb_error *err = NULL;
        ck_assert_msg(aisb_gate_down(ctx, policy, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_uint_eq(count_requests("DELETE", "/"), 1);
        char path[256];
        snprintf(path, sizeof path, "/v4.0.0/libpod/containers/%s?force=true&timeout=0&ignore=true", gate_name);
        ck_assert_str_eq(fake_podman_request_path(fp, (size_t) find_request("DELETE", "/")), path);
}
END_TEST

START_TEST(test_no_domain_no_gate)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "allow", "192.0.2.1", NULL), 0);
        aisb_error *err = NULL;
        expect_error(aisb_gate_down(ctx, p, &err), -EINVAL, &err, "names no domain, so it has no gate");
        expect_error(aisb_gate_up(ctx, p, NULL, NULL, &err), -EINVAL, &err, "add --allow DOMAIN");
        char *path = NULL;
        expect_error(aisb_gate_log_path(p, &path, &err), -EINVAL, &err, "names no domain");
        ck_assert_ptr_null(path);
        ck_assert_int_eq(find_request("DELETE", "/"), -1);
        ck_assert_int_eq(find_request("GET", "/containers/"), -1);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_log_path)
{
        char *path = NULL;
        ck_assert_int_eq(aisb_gate_log_path(policy, &path, NULL), 0);
        ck_assert_str_eq(path, at("logs/access.log"));
        free(path);
        /* The same allowlist written otherwise is the same gate. */
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "allow", "Example.COM.", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "gate-add-host", "db.internal:10.1.2.3", NULL), 0);
        ck_assert_int_eq(aisb_gate_log_path(p, &path, NULL), 0);
        ck_assert_str_eq(path, at("logs/access.log"));
        free(path);
        aisb_policy_free(p);
}
END_TEST

/* ---- the access log, read for a run's summary ---- */

#define LINE_ALLOWED "1718000000.100 127.0.0.1 CONNECT example.com:443 200 TCP_TUNNEL 5120 - example.com:443\n"
#define LINE_DENIED "1718000000.200 127.0.0.1 CONNECT evil.test:443 403 TCP_DENIED 0 ERR_ACCESS_DENIED evil.test:443\n"
#define LINE_FAILED "1718000000.300 127.0.0.1 CONNECT down.test:443 503 TCP_TUNNEL 0 ERR_CONNECT_FAIL down.test:443\n"

static gate_info summary_gate(void)
{
        make_logs_dir();
        return (gate_info) { .dir = gate_dir };
}

START_TEST(test_summary)
{
        gate_info g = summary_gate();
        egress_summary s;
        long long offset = -1;
        /* No log yet: nothing sent. */
        ck_assert_int_eq(egress_summary_read(&g, 0, &s), 0);
        ck_assert_uint_eq(s.allowed + s.denied + s.failed, 0);
        ck_assert_int_eq(gate_log_offset(&g, &offset), 0);
        ck_assert_int_eq(offset, 0);

        write_file(at("logs/access.log"), LINE_ALLOWED LINE_DENIED LINE_FAILED);
        ck_assert_int_eq(egress_summary_read(&g, 0, &s), 0);
        ck_assert_uint_eq(s.allowed, 1);
        ck_assert_uint_eq(s.denied, 1);
        ck_assert_uint_eq(s.failed, 1);
        ck_assert_str_eq(s.denied_names[0], "evil.test");
        ck_assert_str_eq(s.failed_names[0], "down.test");

        /* From where a run began: what others sent before is not its. */
        ck_assert_int_eq(egress_summary_read(&g, (long long) strlen(LINE_ALLOWED), &s), 0);
        ck_assert_uint_eq(s.allowed, 0);
        ck_assert_uint_eq(s.denied, 1);
        ck_assert_uint_eq(s.failed, 1);
        ck_assert_int_eq(gate_log_offset(&g, &offset), 0);
        ck_assert_int_eq(offset, (long long) strlen(LINE_ALLOWED LINE_DENIED LINE_FAILED));
        ck_assert_int_eq(egress_summary_read(&g, offset, &s), 0);
        ck_assert_uint_eq(s.allowed + s.denied + s.failed, 0);

        /* A log that shrank was replaced (a restarted gate): all of it is this run's. */
        ck_assert_int_eq(egress_summary_read(&g, offset + 1000, &s), 0);
        ck_assert_uint_eq(s.allowed, 1);
        ck_assert_uint_eq(s.denied, 1);
        ck_assert_uint_eq(s.failed, 1);
}
END_TEST

/* A flood of long refused requests (more than the 16 MiB once read of a run's log) before an
 * allowed request and an asked one: the summary counts all of them, and the record holds the
 * allowed and the asked request, with the refusals recorded up to their cap. */
START_TEST(test_record_after_flood)
{
        gate_info g = summary_gate();
        g.client_key = (char *) "key";
        int fd = open(at("logs/access.log"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        char path[3901];
        memset(path, 'a', sizeof path - 1);
        path[sizeof path - 1] = 0;
        char line[4096];
        for (int i = 0; i < 5000; i++) {
                int n = snprintf(line, sizeof line, "1718000000.%03d 127.0.0.1 GET 1.2.3.4:80 403 TCP_DENIED/403 0 "
                                 "ERR_ACCESS_DENIED http://1.2.3.4/%s 10 -\n", i % 1000, path);
                ck_assert_int_eq(write(fd, line, (size_t) n), n);
        }
        static const char tail[] =
                "1718000001.000 127.0.0.1 GET ok.test:80 200 TCP_MISS/200 900 - http://ok.test/after 120 -\n"
                "1718000002.000 127.0.0.1 CONNECT asked.test:443 200 TCP_TUNNEL/200 50 - asked.test:443 70 allow\n";
        ck_assert_int_eq(write(fd, tail, sizeof tail - 1), (ssize_t) (sizeof tail - 1));
        close(fd);
        egress_summary sum;
        ck_assert_int_eq(egress_summary_read(&g, 0, &sum), 0);
        ck_assert_uint_eq(sum.denied, 5000);
        ck_assert_uint_eq(sum.allowed, 2);
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "ok.test", "--allow", NULL), 0);
        ck_assert_int_eq(egress_record_write("run-flood", &g, 0, &l, NULL), 0);
        allowlist_done(&l);
        char *log = NULL;
        ck_assert_int_eq(aisb_egress_log_path(&log, NULL), 0);
        FILE *f = fopen(log, "re");
        ck_assert_ptr_nonnull(f);
        size_t refused = 0, after = 0, asked = 0;
        static char text[16384];
        while (fgets(text, sizeof text, f)) {
                refused += strstr(text, "\"decision\":\"refused\"") != NULL;
                after += strstr(text, "http://ok.test/after") != NULL;
                asked += strstr(text, "\"name\":\"asked.test\"") != NULL;
        }
        fclose(f);
        unlink(log);
        free(log);
        ck_assert_uint_eq(refused, 4032);
        ck_assert_uint_eq(after, 1);
        ck_assert_uint_eq(asked, 1);
}
END_TEST

START_TEST(test_summary_fifo)
{
        gate_info g = summary_gate();
        ck_assert_int_eq(mkfifo(at("logs/access.log"), 0600), 0);
        egress_summary s;
        /* Refused at once: a FIFO with no writer would block the run's end forever. */
        ck_assert_int_eq(egress_summary_read(&g, 0, &s), -EBADFD);
        long long offset = -1;
        ck_assert_int_eq(gate_log_offset(&g, &offset), 0);
        ck_assert_int_eq(offset, 0);
}
END_TEST

START_TEST(test_summary_symlink)
{
        gate_info g = summary_gate();
        char elsewhere[PATH_MAX];
        snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere.log", state_home);
        write_file(elsewhere, LINE_DENIED LINE_DENIED);
        ck_assert_int_eq(symlink(elsewhere, at("logs/access.log")), 0);
        egress_summary s;
        ck_assert_int_eq(egress_summary_read(&g, 0, &s), -EBADFD);
        ck_assert_uint_eq(s.denied, 0);
        /* A directory is no log either. */
        ck_assert_int_eq(unlink(at("logs/access.log")), 0);
        ck_assert_int_eq(mkdir(at("logs/access.log"), 0700), 0);
        ck_assert_int_eq(egress_summary_read(&g, 0, &s), -EBADFD);
        /* Nor is a logs/ that is a symlink to a directory of the host's. */
        remove_tree(at("logs"));
        char other[512];
        snprintf(other, sizeof other, "%s/other", state_home);
        ck_assert_int_eq(mkdir(other, 0700), 0);
        snprintf(elsewhere, sizeof elsewhere, "%s/access.log", other);
        write_file(elsewhere, LINE_DENIED);
        ck_assert_int_eq(symlink(other, at("logs")), 0);
        ck_assert_int_lt(egress_summary_read(&g, 0, &s), 0);
        ck_assert_uint_eq(s.denied, 0);
}
END_TEST

/* ---- a run's own gate answers ---- */

static void *cancel_soon(void *userdata)
{
        (void) userdata;
        nanosleep(&(struct timespec) { 0, 200 * 1000 * 1000 }, NULL);
        aisb_ctx_cancel(ctx);
        return NULL;
}

/* A proxy that takes one request and answers 403, as squid does for an unlisted name (or
 * with the page it names). */
typedef struct {
        int listener;
        const char *page;
        char request[4096];
} answering_proxy;

static void *answer_once(void *userdata)
{
        answering_proxy *a = userdata;
        int fd = accept(a->listener, NULL, NULL);
        if (fd < 0)
                return NULL;
        size_t n = 0;
        while (n < sizeof a->request - 1 && !strstr(a->request, "\r\n\r\n")) {
                ssize_t k = read(fd, a->request + n, sizeof a->request - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t) k;
                a->request[n] = 0;
        }
        char reply[256];
        int n_reply = snprintf(reply, sizeof reply,
                               "HTTP/1.1 403 Forbidden\r\nX-Squid-Error: %s 0\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n", a->page ? a->page : "ERR_AISB_DENIED");
        (void) !write(fd, reply, (size_t) n_reply);
        close(fd);
        return NULL;
}

START_TEST(test_probe_answered)
{
        /* Whatever the environment says of proxies: the request goes to the gate. */
        setenv("no_proxy", "*", 1);
        setenv("NO_PROXY", "*", 1);
        answering_proxy a = {};
        unsigned port;
        a.listener = listen_loopback(0, &port);
        ck_assert_int_ge(a.listener, 0);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, answer_once, &a), 0);
        aisb_error *err = NULL;
        ck_assert_msg(gate_probe(ctx, port, "00ff00ff00ff00ff00ff00ff00ff00fe", 5000, &err) == 0, "%s",
                      aisb_error_message(err));
        pthread_join(t, NULL);
        close(a.listener);
        unsetenv("no_proxy");
        unsetenv("NO_PROXY");
        /* A proxy request for a name no allowlist holds, with the key squid checks first. */
        ck_assert_msg(startswith(a.request, "GET http://aisb-gate-probe.invalid/ HTTP/1.1\r\n"), "%s", a.request);
        /* base64 of "aisb:00ff00ff00ff00ff00ff00ff00ff00fe" */
        ck_assert_ptr_nonnull(strstr(a.request, "\r\nProxy-Authorization: Basic "
                                                "YWlzYjowMGZmMDBmZjAwZmYwMGZmMDBmZjAwZmYwMGZmMDBmZQ==\r\n"));

        /* A gate that refuses as if its run were gone (it cannot see its marker) is no gate
         * for a run. */
        answering_proxy held = { .page = "ERR_AISB_HELD" };
        held.listener = listen_loopback(0, &port);
        ck_assert_int_ge(held.listener, 0);
        ck_assert_int_eq(pthread_create(&t, NULL, answer_once, &held), 0);
        char expected[128];
        snprintf(expected, sizeof expected, "the gate on 127.0.0.1:%u refuses as if its run were gone", port);
        expect_error(gate_probe(ctx, port, "00ff", 5000, &err), -EIO, &err, expected);
        pthread_join(t, NULL);
        close(held.listener);
}
END_TEST

/* squid whose held helper never started listens but never answers: that gate is refused. */
START_TEST(test_probe_unanswered)
{
        unsigned port;
        int listener = listen_loopback(0, &port);
        ck_assert_int_ge(listener, 0);
        aisb_error *err = NULL;
        char expected[128];
        snprintf(expected, sizeof expected, "the gate on 127.0.0.1:%u did not answer a request", port);
        expect_error(gate_probe(ctx, port, "00ff", 300, &err), -ETIMEDOUT, &err, expected);
        close(listener);
        /* Nothing listening at all: refused too. */
        port = unused_port();
        expect_error(gate_probe(ctx, port, "00ff", 300, &err), -ETIMEDOUT, &err, "did not answer a request");
}
END_TEST

/* A stop of the run while the gate is asked ends the wait. */
START_TEST(test_probe_cancelled)
{
        unsigned port;
        int listener = listen_loopback(0, &port);
        ck_assert_int_ge(listener, 0);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, cancel_soon, NULL), 0);
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        aisb_error *err = NULL;
        expect_error(gate_probe(ctx, port, "00ff", 20000, &err), -ECANCELED, &err, "stopped while the gate started");
        clock_gettime(CLOCK_MONOTONIC, &end);
        pthread_join(t, NULL);
        ck_assert_int_lt(end.tv_sec - start.tv_sec, 10);
        close(listener);
}
END_TEST

/* The helper's lines: its generation, squid's five fields and its "-", or the line is refused. */
START_TEST(test_ask_parse_line)
{
        ask_channel channel;
        char method[ASK_METHOD_MAX + 1], name[ASK_NAME_MAX + 1], path[ASK_PATH_MAX + 1];
        unsigned port;
        ck_assert_int_eq(ask_parse_line("12.345 7 GET Asked.Example 8080 /a%20b -", &channel, method, name, &port, path), 0);
        ck_assert_str_eq(channel.gen, "12.345");
        ck_assert_uint_eq(channel.id, 7);
        ck_assert_str_eq(method, "GET");
        ck_assert_str_eq(name, "asked.example");
        ck_assert_uint_eq(port, 8080);
        ck_assert_str_eq(path, "/a%20b");
        ck_assert_int_eq(ask_parse_line("g 0 CONNECT x.test 443 -", &channel, method, name, &port, path), 0);
        ck_assert_str_eq(path, "");
        static const char *const bad[] = {
                "", "g", "g 1", "g 1 GET", "g x GET a.test 80 / -", "g 1 get a.test 80 / -", "g 1 GET a.test 0 / -",
                "g 1 GET a.test 65536 / -", "g 1 GET a..test 80 / -", "g 1 GET .a.test 80 / -",
                "g 1 GET a.test. 80 / -", "g 1 GET -a.test 80 / -", "g 1 GET a/b.test 80 / -", "g 1 GET a.test 80 / x",
                "g 1 GET a.test 80 / - -", "g 1  GET a.test 80 / -", "g 1 GET a.test 80 /\x1b[2J -",
                "g 1234567890 GET a.test 80 / -", "g 1 GET a%2etest 80 / -", "g 1 GET \xc3\xa9.test 80 / -",
                "1 GET a.test 80 / -", "g/h 1 GET a.test 80 / -", " g 1 GET a.test 80 / -",
                "0123456789012345678901234567890123 1 GET a.test 80 / -",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(ask_parse_line(bad[i], &channel, method, name, &port, path) == -EBADMSG, "took '%s'", bad[i]);
}
END_TEST

START_TEST(test_ask_entry_line)
{
        char *line = NULL;
        ck_assert_int_eq(ask_entry_line("a.test", 443, &line), 0);
        ck_assert_str_eq(line, "a.test");
        free(line);
        ck_assert_int_eq(ask_entry_line("a.test", 8080, &line), 0);
        ck_assert_str_eq(line, "a.test:8080");
        free(line);
}
END_TEST

/* A record line: what decided, and the answer when it was asked. */
START_TEST(test_egress_record_line)
{
        allowlist l = {};
        ck_assert_int_eq(allowlist_add(&l, "ok.test", "--allow", NULL), 0);
        ask_decision d = { .port = 8080, .answer = AISB_ANSWER_PROJECT, .by = "terminal" };
        strcpy(d.name, "asked.test");
        json_object *o = egress_record_line("1700000000.250 127.0.0.1 GET ok.test:443 200 TCP_MISS/200 900 - "
                                            "https://ok.test/x 120 -", "run1", &l, false, &d, 1);
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                         "{\"time\":1700000000250,\"run\":\"run1\",\"name\":\"ok.test\",\"port\":443,\"method\":\"GET\","
                         "\"url\":\"https://ok.test/x\",\"status\":200,\"decision\":\"allowed\",\"by\":\"ok.test (--allow)\","
                         "\"bytes_out\":120,\"bytes_in\":900}");
        json_object_put(o);
        o = egress_record_line("1700000001.000 127.0.0.1 CONNECT asked.test:8080 200 TCP_TUNNEL/200 50 - asked.test:8080 "
                               "70 allow", "run1", &l, true, &d, 1);
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                         "{\"time\":1700000001000,\"run\":\"run1\",\"name\":\"asked.test\",\"port\":8080,"
                         "\"method\":\"CONNECT\",\"url\":\"\",\"status\":200,\"decision\":\"allowed\",\"by\":\"asked\","
                         "\"asked\":\"project\",\"answered_by\":\"terminal\",\"bytes_out\":70,\"bytes_in\":50,"
                         "\"shared_gate\":true}");
        json_object_put(o);
        o = egress_record_line("1700000002.000 127.0.0.1 GET no.test:80 403 TCP_DENIED/403 3000 ERR_AISB_DENIED "
                               "http://no.test/ 80 -", "run1", &l, false, NULL, 0);
        ck_assert_ptr_nonnull(o);
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                                     "\"decision\":\"refused\",\"by\":\"ERR_AISB_DENIED\""));
        json_object_put(o);
        /* A name refused by a limit, then asked and allowed: each request gets the decision
         * that answered it, by its time and its outcome. */
        ask_decision two[2] = { { .time_ms = 1700000010000, .port = 443, .answer = AISB_ANSWER_DENY, .by = "limit" },
                                { .time_ms = 1700000020000, .port = 443, .answer = AISB_ANSWER_RUN, .by = "command" } };
        strcpy(two[0].name, "late.test");
        strcpy(two[1].name, "late.test");
        o = egress_record_line("1700000010.200 127.0.0.1 CONNECT late.test:443 403 TCP_DENIED/403 0 ERR_AISB_DENIED "
                               "late.test:443 0 deny", "run1", &l, false, two, 2);
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                                     "\"asked\":\"deny\",\"answered_by\":\"limit\""));
        json_object_put(o);
        o = egress_record_line("1700000030.000 127.0.0.1 CONNECT late.test:443 200 TCP_TUNNEL/200 10 - "
                               "late.test:443 10 allow", "run1", &l, false, two, 2);
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                                     "\"asked\":\"run\",\"answered_by\":\"command\""));
        json_object_put(o);
        /* aisb's own probe, and a line that is not one: no record. */
        ck_assert_ptr_null(egress_record_line("1700000003.000 127.0.0.1 - -:0 0 NONE/000 0 - - 0 -", "run1", &l, false, NULL, 0));
        ck_assert_ptr_null(egress_record_line("garbage", "run1", &l, false, NULL, 0));
        allowlist_done(&l);
}
END_TEST

static unsigned long asked_id;
static unsigned asked_events;
static int on_ask_event(const aisb_event *e, void *userdata)
{
        if (e->type == AISB_EVENT_ASK) {
                asked_events++;
                asked_id = e->question->id;
        }
        return 0;
}

static int count_question(const aisb_question *q, void *userdata)
{
        return -EEXIST; /* no question waits in these tests */
}

/* A literal written whole (NULs and all). */
#define PUT(fd, literal) ck_assert_int_eq(write(fd, literal, sizeof literal - 1), (ssize_t) (sizeof literal - 1))

/* What the relay's answers FIFO received, up to a newline. */
static void expect_answer(int fd, const char *want)
{
        char got[128] = "";
        size_t n = 0;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        while (n < sizeof got - 1 && !memchr(got, '\n', n) && poll(&p, 1, 2000) == 1) {
                ssize_t k = read(fd, got + n, 1);
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        got[n] = 0;
        ck_assert_str_eq(got, want);
}

/* The run's end of the relay, on pipes: the test writes questions[1] and reads answers[0]. */
static int questions[2], answers[2];

static ask_state *rig_state(const char *run)
{
        ask_state *a = NULL;
        ck_assert_int_eq(ask_new(ctx, policy, run, questions[0], answers[1], false, &a, NULL), 0);
        ctx->ask = a;
        return a;
}

static ask_state *rig_open(const char *run)
{
        ck_assert_int_eq(pipe2(questions, O_NONBLOCK | O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(answers, O_NONBLOCK | O_CLOEXEC), 0);
        aisb_ctx_set_event_fn(ctx, on_ask_event, NULL);
        asked_events = 0;
        return rig_state(run);
}

static void rig_close(void)
{
        ask_free(ctx->ask);
        ctx->ask = NULL;
        for (int i = 0; i < 2; i++) {
                close(questions[i]);
                close(answers[i]);
        }
}

/* The run's end of the relay: a line too long to be a question is refused by its channel (it
 * never waits on a timeout); a name no allowlist could hold is refused unasked; a question is
 * told once, answered by the reply, and a later request for it is answered at once. */
START_TEST(test_ask_state)
{
        ask_state *a = rig_open("run-test");
        char line[3000];
        int n = snprintf(line, sizeof line, "g1 5 GET long.test 80 /%02000d -\n", 0);
        ck_assert_int_eq(write(questions[1], line, (size_t) n), n);
        ask_process(a, true, false);
        expect_answer(answers[0], "g1 5 ERR aisb_ask=deny\n");
        ck_assert_uint_eq(ask_refused_unasked(a), 1);
        /* A NUL in a line: refused by its channel too, never left to squid's timeout. */
        PUT(questions[1], "g1 4 GET nul\0.test 80 / -\n");
        ask_process(a, true, false);
        expect_answer(answers[0], "g1 4 ERR aisb_ask=deny\n");
        PUT(questions[1], "g1 6 GET under_score.test 80 / -\n");
        ask_process(a, true, false);
        expect_answer(answers[0], "g1 6 ERR aisb_ask=deny\n");
        /* Two requests, two generations of the helper: one question, each answered by its own. */
        PUT(questions[1], "g1 7 GET ok.test 80 /a -\ng2 7 GET ok.test 80 /b -\n");
        ck_assert(ask_process(a, true, false));
        ck_assert_uint_eq(asked_events, 1);
        ck_assert_int_ge(ask_poll_timeout_ms(a), 0);
        ck_assert_int_eq(aisb_ask_reply(ctx, asked_id + 1, AISB_ANSWER_RUN, 0, NULL), -ENOENT);
        ck_assert_int_eq(aisb_ask_reply(ctx, asked_id, AISB_ANSWER_RUN, 0, NULL), 0);
        expect_answer(answers[0], "g1 7 OK aisb_ask=allow\n");
        expect_answer(answers[0], "g2 7 OK aisb_ask=allow\n");
        ck_assert_int_eq(ask_poll_timeout_ms(a), -1);
        PUT(questions[1], "g2 9 CONNECT ok.test 80 - -\n");
        ck_assert(!ask_process(a, true, false));
        expect_answer(answers[0], "g2 9 OK aisb_ask=allow\n");
        ck_assert_uint_eq(asked_events, 1);
        size_t n_decisions;
        const ask_decision *d = ask_decisions(a, &n_decisions);
        ck_assert_uint_eq(n_decisions, 2);
        ck_assert_str_eq(d[0].by, "unlistable");
        ck_assert_str_eq(d[1].by, "terminal");
        /* aisb ask lists this run's waiting question (none now), and removes the socket of a
         * run that was killed (nothing listens there). */
        char *dir = NULL, stale[PATH_MAX];
        ck_assert_int_eq(ask_socket_dir(&dir, NULL), 0);
        snprintf(stale, sizeof stale, "%s/killed-run.sock", dir);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        ck_assert_uint_lt(strlen(stale), sizeof sa.sun_path);
        memcpy(sa.sun_path, stale, strlen(stale) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        close(fd);
        ck_assert_int_eq(aisb_questions(count_question, NULL, NULL), 0);
        ck_assert_int_eq(access(stale, F_OK), -1);
        free(dir);
        rig_close();
}
END_TEST

/* The helper's line for a new name: its question is told to the event callback. */
static unsigned long ask_one(ask_state *a, const char *line)
{
        unsigned before = asked_events;
        ck_assert_int_eq(write(questions[1], line, strlen(line)), (ssize_t) strlen(line));
        ck_assert(ask_process(a, true, false));
        ck_assert_uint_eq(asked_events, before + 1);
        return asked_id;
}

static void *answer_from_elsewhere(void *userdata)
{
        unsigned long id = *(unsigned long *) userdata;
        aisb_error *e = NULL;
        /* aisb ask's retry: until the run serves its socket (it does while the question shows). */
        intptr_t r = aisb_question_answer("run-wait", id, AISB_ANSWER_RUN, &e);
        aisb_error_free(e);
        return (void *) r;
}

static const ask_decision *last_decision(ask_state *a)
{
        size_t n;
        const ask_decision *d = ask_decisions(a, &n);
        ck_assert_uint_gt(n, 0);
        return &d[n - 1];
}

/* While a question is shown (aisb_ask_wait): the caller's input wakes it; the question's
 * timeout refuses it, recorded as a timeout; aisb ask's answer is served and applied; a stop
 * ends the wait. And an answer whose client hung up before it was read is not applied. */
START_TEST(test_ask_wait)
{
        int in[2];
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        aisb_policy_set(policy, "ask-timeout", "1", NULL);
        ask_state *a = rig_open("run-wait");

        unsigned long id = ask_one(a, "g 1 GET one.test 80 / -\n");
        PUT(in[1], "y");
        ck_assert_int_eq(aisb_ask_wait(ctx, id, in[0]), 1);
        char key;
        ck_assert_int_eq(read(in[0], &key, 1), 1);
        /* Nothing typed: the time runs out, and the question is refused by its timeout. */
        ck_assert_int_eq(aisb_ask_wait(ctx, id, in[0]), 0);
        expect_answer(answers[0], "g 1 ERR aisb_ask=deny\n");
        ck_assert_str_eq(last_decision(a)->by, "timeout");
        ck_assert_int_eq(aisb_ask_reply(ctx, id, AISB_ANSWER_RUN, 0, NULL), -ENOENT);

        aisb_policy_set(policy, "ask-timeout", "60", NULL);
        ask_free(a);
        a = rig_state("run-wait");
        id = ask_one(a, "g 2 GET two.test 80 / -\n");
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, answer_from_elsewhere, &id), 0);
        ck_assert_int_eq(aisb_ask_wait(ctx, id, in[0]), 0);
        void *r;
        pthread_join(t, &r);
        ck_assert_int_eq((int) (intptr_t) r, 0);
        expect_answer(answers[0], "g 2 OK aisb_ask=allow\n");
        ck_assert_str_eq(last_decision(a)->by, "command");

        /* A client that sent its answer and hung up (it gave up waiting): not applied. */
        id = ask_one(a, "g 3 GET three.test 80 / -\n");
        char *dir = NULL, path[PATH_MAX];
        ck_assert_int_eq(ask_socket_dir(&dir, NULL), 0);
        snprintf(path, sizeof path, "%s/run-wait.sock", dir);
        free(dir);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        char line[64];
        int n = snprintf(line, sizeof line, "answer %lu allow\n", id);
        ck_assert_int_eq(write(fd, line, (size_t) n), n);
        close(fd);
        ask_process(a, false, true);
        ck_assert_int_eq(aisb_ask_reply(ctx, id, AISB_ANSWER_DENY, 0, NULL), 0);
        expect_answer(answers[0], "g 3 ERR aisb_ask=deny\n");

        /* A stop while a question shows: the wait ends, the question waits for the run's end. */
        id = ask_one(a, "g 4 GET four.test 80 / -\n");
        aisb_ctx_cancel(ctx);
        ck_assert_int_eq(aisb_ask_wait(ctx, id, in[0]), -ECANCELED);
        ck_assert_int_eq(aisb_ask_reply(ctx, id, AISB_ANSWER_DENY, 0, NULL), 0);
        rig_close();
        close(in[0]);
        close(in[1]);
}
END_TEST

/* A flood of names refused without asking is counted, its records capped below the room the
 * user's answers need: the answer after it is on record. */
START_TEST(test_ask_flood_recorded)
{
        ask_state *a = rig_open("run-flood");
        char line[128], drain[65536];
        for (unsigned i = 0; i < ASK_DECISIONS_MAX + 100; i++) {
                int n = snprintf(line, sizeof line, "g %u GET u_%u.test 80 / -\n", i, i);
                ck_assert_int_eq(write(questions[1], line, (size_t) n), n);
                if (i % 256 == 255) {
                        ask_process(a, true, false);
                        while (read(answers[0], drain, sizeof drain) > 0)
                                ;
                }
        }
        ask_process(a, true, false);
        while (read(answers[0], drain, sizeof drain) > 0)
                ;
        unsigned long id = ask_one(a, "g 9 GET wanted.test 80 / -\n");
        ck_assert_int_eq(aisb_ask_reply(ctx, id, AISB_ANSWER_RUN, 0, NULL), 0);
        size_t n;
        const ask_decision *d = ask_decisions(a, &n);
        ck_assert_uint_eq(n, ASK_UNASKED_RECORDED + 1);
        ck_assert_str_eq(d[n - 1].by, "terminal");
        ck_assert_str_eq(d[n - 1].name, "wanted.test");
        rig_close();
}
END_TEST

/* The gate's relay (gate_squid_ask_helper, run by sh with awk as in the gate): squid's lines
 * go out with the helper's generation; an answer comes back to squid only with that same
 * generation, so an answer meant for a helper before this one (squid numbers a new helper's
 * channels from 0 again) never reaches it. */
START_TEST(test_ask_helper_generation)
{
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/relay-XXXXXX", base);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char qpath[PATH_MAX + 16], apath[PATH_MAX + 16];
        snprintf(qpath, sizeof qpath, "%s/questions", dir);
        snprintf(apath, sizeof apath, "%s/answers", dir);
        ck_assert_int_eq(mkfifo(qpath, 0600), 0);
        ck_assert_int_eq(mkfifo(apath, 0600), 0);
        int qfd = open(qpath, O_RDWR | O_CLOEXEC), afd = open(apath, O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(qfd, 0);
        ck_assert_int_ge(afd, 0);
        /* The script as the gate runs it, its directory here. */
        buffer script = {};
        for (const char *p = gate_squid_ask_helper; *p;) {
                if (startswith(p, GATE_ASK_INSIDE)) {
                        ck_assert_int_eq(buffer_printf(&script, "%s", dir), 0);
                        p += strlen(GATE_ASK_INSIDE);
                } else
                        ck_assert_int_eq(buffer_printf(&script, "%c", *p++), 0);
        }
        int to[2], from[2];
        ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                setpgid(0, 0);
                dup2(to[0], 0);
                dup2(from[1], 1);
                execl("/bin/sh", "sh", "-c", script.data, (char *) NULL);
                _exit(127);
        }
        close(to[0]);
        close(from[1]);
        PUT(to[1], "3 GET a.test 80 / -\n");
        char got[256] = "";
        size_t size = 0;
        struct pollfd p = { .fd = qfd, .events = POLLIN };
        while (size < sizeof got - 1 && !memchr(got, '\n', size) && poll(&p, 1, 5000) == 1) {
                ssize_t k = read(qfd, got + size, 1);
                ck_assert_int_eq(k, 1);
                size++;
        }
        got[size] = 0;
        ask_channel channel;
        char method[ASK_METHOD_MAX + 1], name[ASK_NAME_MAX + 1], path[ASK_PATH_MAX + 1];
        unsigned port;
        *strchr(got, '\n') = 0;
        ck_assert_int_eq(ask_parse_line(got, &channel, method, name, &port, path), 0);
        ck_assert_uint_eq(channel.id, 3);
        ck_assert_str_eq(name, "a.test");
        /* An older helper's answer for channel 3, one whose generation merely starts the same,
         * then this one's. */
        char line[128];
        int n = snprintf(line, sizeof line, "1.2 3 OK aisb_ask=allow\n%s0 3 OK aisb_ask=allow\n%s 3 ERR aisb_ask=deny\n",
                         channel.gen, channel.gen);
        ck_assert_int_eq(write(afd, line, (size_t) n), n);
        expect_answer(from[0], "3 ERR aisb_ask=deny\n");
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(to[1]);
        close(from[0]);
        close(qfd);
        close(afd);
        buffer_free(&script);
}
END_TEST

/* ---- the helper scripts ---- */

/* Each script the library holds is its file in lib/gate/scripts/, byte for byte but for the
 * comment lines embed-scripts.py leaves out (those whose first character not a blank is #). */
static const struct {
        const char *file, *text;
} scripts[] = {
        { "start.sh", gate_start_script },
        { "held.sh", gate_held_helper },
        { "ask.sh", gate_squid_ask_helper },
        { "tunnel.awk", gate_squid_tunnel_helper },
};

START_TEST(test_script_embedded)
{
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/lib/gate/scripts/%s", getenv("AISB_SRC"), scripts[_i].file);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
        buffer want = {};
        char line[4096];
        while (fgets(line, sizeof line, f))
                if (line[strspn(line, " \t")] != '#')
                        ck_assert_int_eq(buffer_printf(&want, "%s", line), 0);
        fclose(f);
        ck_assert_str_eq(scripts[_i].text, want.data ? want.data : "");
        buffer_free(&want);
}
END_TEST

static Suite *gate_suite(bool as_root)
{
        Suite *s = suite_create("gate");
        if (as_root) {
                suite_add_tests(s, "strangers", setup, teardown, test_up_port_taken_by_a_stranger,
                                test_list_stranger_not_answering);
                return s;
        }
        suite_add_tests(s, "up", setup, teardown, test_up_found_running, test_up_waits_for_the_lock,
                        test_up_cancelled_waiting_for_the_lock, test_up_restarts_a_gate_not_ours,
                        test_up_starts_an_absent_gate, test_up_never_listens, test_probe_answered,
                        test_probe_unanswered, test_probe_cancelled);
        suite_add_loop(s, "up-fails", setup, teardown, test_up_start_fails, ELEMENTSOF(failed_starts));
        suite_add_tests(s, "manage", setup, teardown, test_list, test_list_refused, test_down, test_no_domain_no_gate,
                        test_log_path);
        suite_add_tests(s, "summary", setup, teardown, test_summary, test_summary_fifo, test_record_after_flood,
                        test_summary_symlink);
        suite_add_tests(s, "ask", NULL, NULL, test_ask_parse_line, test_ask_helper_generation, test_ask_entry_line,
                        test_egress_record_line);
        suite_add_loop(s, "scripts", NULL, NULL, test_script_embedded, ELEMENTSOF(scripts));
        suite_add_tests(s, "ask-state", setup, teardown, test_ask_state, test_ask_wait, test_ask_flood_recorded);
        return s;
}

int main(int argc, char **argv)
{
        bool as_root = argc > 1 && streq(argv[1], "--as-root");
        if (as_root && geteuid() != 0) {
                fprintf(stderr, "skipped: these cases listen as another user, which needs root\n");
                return getenv("CI") && streq(getenv("CI"), "true") ? EXIT_FAILURE : 77;
        }
        if (!mkdtemp(base))
                return EXIT_FAILURE;
        /* The user's allowlist file and configuration: none. */
        setenv("XDG_CONFIG_HOME", base, 1);
        int failed = unit_run(gate_suite(as_root)) != EXIT_SUCCESS;
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "rm -rf '%s'", base);
        if (system(command) != 0)
                failed++;
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
