/* SPDX-License-Identifier: MIT */
/*
 * The context: which podman service we talk to. Discovery follows podman's own order;
 * when no socket answers we start a transient "podman system service" on the user's socket
 * path ourselves (daemonless: nothing has to be enabled first) and it exits by itself after
 * a while idle. A lock serialises that start so concurrent runs never race two services
 * onto one socket.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"
#include "service.h"
#include "fileio.h"
#include "pathtrust.h"

/* Seconds a transient service stays up with no client: long enough that the next run of a
 * working session finds it warm. */
#define SERVICE_IDLE_SECONDS "600"
#define SERVICE_START_TIMEOUT_MS 20000

const char *aisb_version(void)
{
        return AISB_VERSION;
}

int ctx_emit(aisb_ctx *ctx, const aisb_event *e)
{
        if (!ctx->event_fn || ctx->event_fn(e, ctx->event_userdata) == 0)
                return 0;
        /* As aisb_ctx_cancel: the request in flight is cut short too. */
        aisb_ctx_cancel(ctx);
        return 1;
}

void aisb_log(aisb_ctx *ctx, aisb_log_level level, const char *fmt, ...)
{
        if (!ctx->event_fn)
                return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = NULL;
        if (vasprintf(&s, fmt, ap) >= 0)
                (void) ctx_emit(ctx, &(aisb_event) { .type = AISB_EVENT_LOG, .level = level, .text = s });
        va_end(ap);
}

void aisb_ctx_cancel(aisb_ctx *ctx)
{
        atomic_store(&ctx->cancel_requested, true);
        if (ctx->wake_fd >= 0) {
                uint64_t one = 1;
                (void) !write(ctx->wake_fd, &one, sizeof one);
        }
}

bool ctx_stopping(aisb_ctx *ctx)
{
        if (!ctx->stopping && atomic_load(&ctx->cancel_requested))
                ctx->stopping = true;
        if (!ctx->stopping && ctx->stop_fn && ctx->stop_fn(ctx->stop_userdata))
                ctx->stopping = true;
        return ctx->stopping;
}

void ctx_cleanup_begin(aisb_ctx *ctx)
{
        ctx->cleaning_up = true;
}

void ctx_operation_begin(aisb_ctx *ctx)
{
        ctx->op_depth++;
}

void ctx_operation_end(aisb_ctx **pctx)
{
        aisb_ctx *ctx = *pctx;
        if (!ctx || --ctx->op_depth > 0)
                return;
        /* The cancel was this operation's, seen or not: the next one starts afresh. */
        ctx->stopping = false;
        ctx->cleaning_up = false;
        atomic_store(&ctx->cancel_requested, false);
        uint64_t drained;
        if (ctx->wake_fd >= 0)
                (void) !read(ctx->wake_fd, &drained, sizeof drained);
}

/* A request is cut short when a stop is first seen while it waits; once stopping, requests
 * are the cleanup's and run to their end. */
static bool request_cancelled(void *userdata)
{
        aisb_ctx *ctx = userdata;
        if (ctx->stopping || ctx->cleaning_up)
                return false;
        return ctx_stopping(ctx);
}

int aisb_ctx_new(aisb_ctx **ret_ctx, aisb_error **err)
{
        aisb_ctx *ctx = calloc(1, sizeof *ctx);
        if (!ctx)
                return error_oom(err);
        ctx->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (ctx->wake_fd < 0) {
                int r = -errno;
                free(ctx);
                return aisb_error_set(err, r, "eventfd: %s", strerror(-r));
        }
        atomic_init(&ctx->cancel_requested, false);
        ctx->request_timeout_ms = AISB_DEFAULT_REQUEST_TIMEOUT_MS;
        ctx->http.cancel_fn = request_cancelled;
        ctx->http.cancel_userdata = ctx;
        *ret_ctx = ctx;
        return 0;
}

void aisb_ctx_free(aisb_ctx *ctx)
{
        if (!ctx)
                return;
        http_conn_done(&ctx->http);
        if (ctx->wake_fd >= 0)
                close(ctx->wake_fd);
        free(ctx->podman_version);
        free(ctx->ensured_tag);
        free(ctx->ensured_key);
        free(ctx);
}

void aisb_ctx_set_timeout(aisb_ctx *ctx, unsigned long milliseconds)
{
        ctx->request_timeout_ms = milliseconds > LONG_MAX ? LONG_MAX : (long) milliseconds;
}

void aisb_ctx_set_event_fn(aisb_ctx *ctx, aisb_event_fn fn, void *userdata)
{
        ctx->event_fn = fn;
        ctx->event_userdata = userdata;
}

void aisb_ctx_set_dry_run(aisb_ctx *ctx, aisb_request_fn fn, void *userdata)
{
        ctx->dry_run_fn = fn;
        ctx->dry_run_userdata = userdata;
}

int aisb_ctx_set_socket(aisb_ctx *ctx, const char *path, aisb_error **err)
{
        if (http_conn_set_socket(&ctx->http, path) < 0)
                return error_oom(err);
        ctx->socket_fixed = true;
        ctx->connected = false;
        return 0;
}

const char *aisb_ctx_podman_version(const aisb_ctx *ctx)
{
        return ctx->podman_version;
}

const char *aisb_ctx_socket_path(const aisb_ctx *ctx)
{
        return ctx->http.socket_path;
}

/* Where podman itself would listen, in its order. The first entry is where a transient
 * service is started: like podman, /tmp/podman-run-UID only when the user has no runtime
 * directory at all. */
static int socket_candidates(char ***ret, uid_t uid)
{
        _cleanup_strv_free_ char **v = NULL;
        const char *runtime_dir = getenv("XDG_RUNTIME_DIR");
        char run_user[32];
        struct stat st;
        snprintf(run_user, sizeof run_user, "/run/user/%u", (unsigned) uid);
        if ((runtime_dir && *runtime_dir && strv_pushf(&v, "%s/podman/podman.sock", runtime_dir) < 0) ||
            (stat(run_user, &st) == 0 && S_ISDIR(st.st_mode) &&
             strv_pushf(&v, "%s/podman/podman.sock", run_user) < 0) ||
            strv_pushf(&v, "/tmp/podman-run-%u/podman/podman.sock", (unsigned) uid) < 0)
                return -ENOMEM;
        *ret = steal_pointer(&v);
        return 0;
}

/* 0 when the service at path answers /_ping (unversioned: any podman answers it); fills
 * the version from the Libpod-Api-Version header. */
static int ping(aisb_ctx *ctx, const char *path, aisb_error **err)
{
        if (http_conn_set_socket(&ctx->http, path) < 0)
                return error_oom(err);
        _cleanup_(http_response_done) http_response resp = {};
        int r = http_send(&ctx->http,
                          &(http_request) { .method = "GET", .path = "/_ping", .timeout_ms = ctx->request_timeout_ms },
                          &resp, err);
        if (r < 0)
                return r;
        if (resp.status != 200)
                return aisb_error_set(err, -EIO, "%s answered /_ping with %ld", path, resp.status);
        free(ctx->podman_version);
        ctx->podman_version = steal_pointer(&resp.api_version);
        return 0;
}

/* The value of logrus field key= in line (quoted Go-style or bare), unescaped, or NULL. Only
 * a field: " key=" after a space, so text inside another field's quotes can still match,
 * which is why callers look at level= first, the field logrus writes before the message. */
static char *logfmt_field(const char *line, const char *key)
{
        size_t klen = strlen(key);
        const char *v = NULL;
        for (const char *p = line; (p = strstr(p, key)); p += klen)
                if ((p == line || p[-1] == ' ') && p[klen] == '=') {
                        v = p + klen + 1;
                        break;
                }
        if (!v)
                return NULL;
        char *out = malloc(strlen(v) + 1), *o = out;
        if (!out)
                return NULL;
        if (*v != '"') {
                size_t n = strcspn(v, " ");
                memcpy(out, v, n);
                out[n] = 0;
                return out;
        }
        for (v++; *v && *v != '"'; v++) {
                if (*v == '\\' && v[1]) {
                        v++;
                        if (*v == 'n' || *v == 't' || *v == 'r')
                                *o++ = ' '; /* the error is one line */
                        else if (*v == '"' || *v == '\\')
                                *o++ = *v;
                        else { /* \uXXXX and the like, kept as written */
                                *o++ = '\\';
                                *o++ = *v;
                        }
                        continue;
                }
                *o++ = *v;
        }
        *o = 0;
        return out;
}

int service_log_reason(const char *log, char **ret)
{
        *ret = NULL;
        _cleanup_free_ char *copy = strdup(log ? log : ""), *last = NULL;
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char *reason = NULL;
                _cleanup_free_ char *level = logfmt_field(l, "level");
                if (level && (streq(level, "error") || streq(level, "fatal"))) {
                        _cleanup_free_ char *msg = logfmt_field(l, "msg");
                        _cleanup_free_ char *cause = logfmt_field(l, "error");
                        if (!msg)
                                continue;
                        /* logrus puts the underlying error in its own field. */
                        if (cause && asprintf(&reason, "%s: %s", msg, cause) < 0)
                                return -ENOMEM;
                        if (!cause)
                                reason = steal_pointer(&msg);
                } else if (startswith(l, "Error: ")) {
                        reason = strdup(l + strlen("Error: "));
                        if (!reason)
                                return -ENOMEM;
                } else
                        continue;
                free(last);
                last = reason;
        }
        *ret = steal_pointer(&last);
        return 0;
}

/* A process we cannot wait for (it is not our child) has exited: gone, or a zombie left to
 * whoever reaps it. */
static bool process_gone(pid_t pid)
{
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return true;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/proc/%d/stat", (int) pid) < 0)
                return false;
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char buf[512];
        if (!f || !fgets(buf, sizeof buf, f))
                return !f && errno == ENOENT;
        const char *paren = strrchr(buf, ')');
        return paren && paren[1] == ' ' && paren[2] == 'Z';
}

static int service_failed(const char *path, const char *log_path, bool exited, aisb_error **err)
{
        _cleanup_close_ int fd = open(log_path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *log = NULL, *reason = NULL;
        size_t size;
        /* The last 64 KiB: a chatty service's log may be long, its reason is at the end. */
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 65536)
                (void) lseek(fd, st.st_size - 65536, SEEK_SET);
        if (fd >= 0 && read_full_fd(fd, 65536, &log, &size) == 0)
                (void) service_log_reason(log, &reason);
        if (reason)
                return aisb_error_set(err, exited ? -ECONNREFUSED : -ETIMEDOUT,
                                      "\"podman system service\" on %s %s: %s (log: %s)", path,
                                      exited ? "exited" : "did not answer", reason, log_path);
        return aisb_error_set(err, exited ? -ECONNREFUSED : -ETIMEDOUT,
                              "\"podman system service\" on %s %s; check that \"podman info\" works (log: %s)",
                              path, exited ? "exited at once" : "did not answer", log_path);
}

/* Where we start a service, the service's directory must be ours (or root's) all the way
 * up, before we create what is missing and after: another user's directory there would let
 * them put their own socket in its place. */
static int service_dir_check(const char *path, bool created, aisb_error **err)
{
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return error_oom(err);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
                *slash = 0;
        char why[512];
        int r = path_check_trusted(dir, getuid(), why, sizeof why);
        if (r == -ENOENT && !created)
                return 0;
        if (r == -EPERM)
                return aisb_error_set(err, r,
                                      "will not start a podman service at %s: %s; remove it, or set XDG_RUNTIME_DIR to a directory only you can write",
                                      path, why);
        if (r < 0)
                return aisb_error_set(err, r, "cannot check the directory of %s: %s", path, why);
        return 0;
}

/* The directory of path, checked, made where missing, and checked again. */
static int service_dir_make(const char *path, aisb_error **err)
{
        int r = service_dir_check(path, false, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return error_oom(err);
        *strrchr(dir, '/') = 0;
        r = *dir ? mkdir_p(dir, 0700) : 0;
        if (r < 0)
                return aisb_error_set(err, r, "cannot create the directory of %s: %s", path,
                                      strerror(-r));
        return service_dir_check(path, true, err);
}

/* The intermediate child: detached completely, since the service outlives this run and must
 * not get our terminal's signals. A second fork leaves it reparented, never our zombie; its
 * pid goes to pid_write. */
static _Noreturn void service_exec(const char *uri, int log, int pid_write)
{
        if (setsid() < 0)
                _exit(1);
        /* Not the caller's directory: it may be deleted while the service lives on, and runc
         * then fails to create containers from it. */
        if (chdir("/") < 0)
                _exit(1);
        pid_t again = fork();
        if (again != 0) {
                if (again > 0)
                        (void) !write(pid_write, &again, sizeof again);
                _exit(again < 0 ? 1 : 0);
        }
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0)
                (void) dup2(devnull, STDIN_FILENO);
        (void) dup2(log, STDOUT_FILENO);
        (void) dup2(log, STDERR_FILENO);
        (void) close_range(3, ~0U, 0);
        sigset_t all;
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        execlp("podman", "podman", "system", "service", "--time=" SERVICE_IDLE_SECONDS, uri, (char *) NULL);
        /* After fork in a possibly threaded caller: write(2) only, no stdio. */
        static const char msg[] = "Error: cannot run podman (is it installed and in PATH?)\n";
        (void) !write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(127);
}

/* Until the service at path answers, exits (service: its pid, 0 unknown) or the time is up. */
static int service_wait(aisb_ctx *ctx, const char *path, const char *log_path, pid_t service, aisb_error **err)
{
        struct timespec delay = { 0, 20 * 1000 * 1000 };
        for (int waited = 0; waited < SERVICE_START_TIMEOUT_MS; waited += 20) {
                if (ctx_stopping(ctx))
                        return aisb_error_set(err, -ECANCELED, "stopped while the podman service started");
                _cleanup_error_ aisb_error *e = NULL;
                if (access(path, F_OK) == 0 && ping(ctx, path, &e) == 0)
                        return 0;
                if (service > 0 && process_gone(service))
                        return service_failed(path, log_path, true, err);
                nanosleep(&delay, NULL);
        }
        return service_failed(path, log_path, false, err);
}

static int start_service(aisb_ctx *ctx, const char *path, aisb_error **err)
{
        int r = service_dir_make(path, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *lock_path = NULL, *log_path = NULL;
        if (asprintf(&lock_path, "%s.aisb-lock", path) < 0 ||
            asprintf(&log_path, "%s.aisb-log", path) < 0)
                return error_oom(err);
        _cleanup_close_ int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", lock_path, strerror(errno));
        while (flock(lock, LOCK_EX) < 0)
                if (errno != EINTR)
                        return aisb_error_set(err, -errno, "cannot lock %s: %s", lock_path,
                                              strerror(errno));
        /* Someone else may have started it while we waited for the lock. */
        _cleanup_error_ aisb_error *ignored = NULL;
        if (ping(ctx, path, &ignored) == 0)
                return 0;

        aisb_log(ctx, AISB_LOG_INFO, "starting a transient podman service on %s", path);
        _cleanup_free_ char *uri = NULL;
        if (asprintf(&uri, "unix://%s", path) < 0)
                return error_oom(err);
        /* What the service says goes to a log beside the socket, kept for its lifetime and
         * read back if it will not serve. O_APPEND: a writer still holding the old file
         * writes at the end, not into a hole. */
        _cleanup_close_ int log = open(log_path,
                                       O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                                       0600);
        if (log < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", log_path, strerror(errno));
        /* The intermediate child tells us the service's pid, to notice it exiting early. */
        int pids[2];
        if (pipe2(pids, O_CLOEXEC) < 0)
                return aisb_error_set(err, -errno, "pipe: %s", strerror(errno));
        _cleanup_close_ int pid_read = pids[0], pid_write = pids[1];
        (void) unlink(path);
        pid_t pid = fork();
        if (pid < 0)
                return aisb_error_set(err, -errno, "fork: %s", strerror(errno));
        if (pid == 0)
                service_exec(uri, log, pid_write);
        (void) close(steal_fd(&pid_write));
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return aisb_error_set(err, -EAGAIN, "cannot start \"podman system service\": fork failed");
        pid_t service = 0;
        if (read(pid_read, &service, sizeof service) != sizeof service)
                service = 0;
        return service_wait(ctx, path, log_path, service, err);
}

/* A socket the caller named (--socket, CONTAINER_HOST): used only when no one but the user
 * or root could have put it there, since everything aisb sends, secrets included, goes to
 * it. what names where it came from, for the message. */
static int ping_named(aisb_ctx *ctx, const char *path, const char *what, aisb_error **err)
{
        char why[512];
        int r = path_check_trusted(path, getuid(), why, sizeof why);
        if (r == -EPERM)
                return aisb_error_set(err, r,
                                      "%s %s is not safe to use: %s; use a socket in a directory that only you (or root) can write",
                                      what, path, why);
        if (r == -ENOENT)
                return aisb_error_set(err, -ECONNREFUSED,
                                      "%s %s does not exist: %s (is the podman service running?)",
                                      what, path, why);
        if (r < 0)
                return aisb_error_set(err, r, "%s %s: %s", what, path, why);
        return ping(ctx, path, err);
}

int aisb_ctx_connect(aisb_ctx *ctx, aisb_error **err)
{
        if (ctx->connected)
                return 0;
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        int r;
        if (ctx->socket_fixed) {
                _cleanup_free_ char *path = strdup(ctx->http.socket_path);
                if (!path)
                        return error_oom(err);
                r = ping_named(ctx, path, "the podman socket", err);
                if (r < 0)
                        return aisb_error_wrap(err, r, "podman service");
        } else {
                const char *host = getenv("CONTAINER_HOST");
                if (host && *host) {
                        if (!startswith(host, "unix://"))
                                return aisb_error_set(err, -EPROTONOSUPPORT,
                                                      "CONTAINER_HOST=%s: only unix:// sockets are supported",
                                                      host);
                        r = ping_named(ctx, host + strlen("unix://"), "the socket", err);
                        if (r < 0)
                                return aisb_error_wrap(err, r, "CONTAINER_HOST");
                } else {
                        _cleanup_strv_free_ char **candidates = NULL;
                        if (socket_candidates(&candidates, getuid()) < 0)
                                return error_oom(err);
                        r = -ENOENT;
                        for (size_t i = 0; candidates[i] && r < 0; i++) {
                                if (access(candidates[i], F_OK) < 0)
                                        continue;
                                /* Another user may have made podman's /tmp fallback first
                                 * and be listening there for our secrets. */
                                char why[512];
                                int t = path_check_trusted(candidates[i], getuid(), why, sizeof why);
                                if (t < 0) {
                                        if (t != -ENOENT)
                                                aisb_log(ctx, AISB_LOG_WARNING,
                                                         "not using the podman socket %s: %s",
                                                         candidates[i], why);
                                        continue;
                                }
                                _cleanup_error_ aisb_error *e = NULL;
                                r = ping(ctx, candidates[i], &e);
                        }
                        if (r < 0) {
                                r = start_service(ctx, candidates[0], err);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        unsigned major, minor;
        if (!ctx->podman_version || sscanf(ctx->podman_version, "%u.%u", &major, &minor) != 2)
                return aisb_error_set(err, -EPROTO,
                                      "the service at %s did not say its version (Libpod-Api-Version); is it podman?",
                                      ctx->http.socket_path);
        if (major < 4 || (major == 4 && minor < 3))
                return aisb_error_set(err, -EPROTONOSUPPORT,
                                      "podman %s is too old: aisb needs podman 4.3 or newer",
                                      ctx->podman_version);
        ctx->version_major = major;
        ctx->version_minor = minor;
        ctx->connected = true;
        return 0;
}
