/* SPDX-License-Identifier: MIT */
/*
 * The libpod calls aisb makes (podman.h). Each builds its path, sends one request through
 * the context's connection, and reads the answer: which status means what, where libpod puts
 * its message. The calls a run makes are a table (podman_calls): the dry run shows the plan's
 * requests (plan.c) with the same methods and paths the calls send.
 */
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>

#include "jsonutil.h"
#include "podman.h"
#include "userdirs.h"

#define LIBPOD PODMAN_API_PREFIX "/libpod"

const char *podman_error_message(const http_response *r)
{
        static __thread char message[512];
        if (!r->body || !*r->body)
                return "no details";
        _cleanup_json_ json_object *o = json_tokener_parse(r->body);
        json_object *m;
        const char *text;
        if (o && json_object_object_get_ex(o, "message", &m) && json_object_get_string(m))
                snprintf(message, sizeof message, "%s", json_object_get_string(m));
        else
                snprintf(message, sizeof message, "%.*s", (int) strcspn(r->body, "\n"), r->body);
        /* The service's text goes into a one-line error and onto a terminal: no control
         * characters (a JSON message may hold newlines and escape sequences). */
        for (char *c = message; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        *c = ' ';
        text = message + strspn(message, " ");
        return *text ? text : "no details";
}

/* One request with the context's timeout; the response is the caller's to release. */
static int send_request(aisb_ctx *ctx, http_request req, http_response *ret, aisb_error **err)
{
        if (req.timeout_ms == 0 && req.idle_timeout_s == 0)
                req.timeout_ms = ctx->request_timeout_ms;
        return http_send(&ctx->http, &req, ret, err);
}

/* before, then name escaped, then after. */
static char *libpod_path(const char *before, const char *name, const char *after)
{
        _cleanup_free_ char *escaped = http_escape(name);
        char *path = NULL;
        if (!escaped || asprintf(&path, "%s%s%s", before, escaped, after) < 0)
                return NULL;
        return path;
}

static const struct {
        const char *method, *before, *after;
} podman_calls[] = {
        [PODMAN_IMAGE_EXISTS] = { "GET", LIBPOD "/images/", "/exists" },
        /* layers=1 with an OCI output format is what turns the layer cache on for the libpod
         * endpoint; without it every build starts from nothing. */
        [PODMAN_IMAGE_BUILD] = { "POST", LIBPOD "/build?t=",
                                 "&layers=1&rm=1&pullpolicy=missing"
                                 "&outputformat=application%2Fvnd.oci.image.manifest.v1%2Bjson" },
        [PODMAN_IMAGE_IMPORT] = { "POST", LIBPOD "/images/import?reference=", "&changes=CMD%20%5B%22%2Fbin%2Fbash%22%5D" },
        [PODMAN_VOLUME_EXISTS] = { "GET", LIBPOD "/volumes/", "/exists" },
        [PODMAN_VOLUME_CREATE] = { "POST", LIBPOD "/volumes/create", NULL },
        [PODMAN_CONTAINER_CREATE] = { "POST", LIBPOD "/containers/create", NULL },
        [PODMAN_CONTAINER_ATTACH] = { "POST", LIBPOD "/containers/",
                                      "/attach?stream=true&stdin=true&stdout=true&stderr=true&logs=false&detachKeys=" },
        [PODMAN_CONTAINER_START] = { "POST", LIBPOD "/containers/", "/start" },
        [PODMAN_CONTAINER_WAIT] = { "POST", LIBPOD "/containers/", "/wait?condition=exited&condition=stopped&interval=20ms" },
        [PODMAN_CONTAINER_REMOVE] = { "DELETE", LIBPOD "/containers/", "?force=true&timeout=0&ignore=true" },
};

/* A call's path: its name escaped between the table's parts (none for a call on no name). */
static char *call_path(podman_call call, const char *name)
{
        if (!podman_calls[call].after)
                return strdup(podman_calls[call].before);
        return libpod_path(podman_calls[call].before, name, podman_calls[call].after);
}

/* One call of the table without a body, its answer in *ret. */
static int call_send(aisb_ctx *ctx, podman_call call, const char *name, const char *method, http_response *ret,
                     aisb_error **err)
{
        _cleanup_free_ char *path = call_path(call, name);
        if (!path)
                return error_oom(err);
        return send_request(ctx, (http_request) { .method = method, .path = path }, ret, err);
}

int podman_call_push(char ***v, podman_call call, const char *name, const char *body)
{
        _cleanup_free_ char *path = call_path(call, name), *text = NULL, *safe = NULL;
        if (!path || (body && json_text_safe(body, &safe) < 0) ||
            asprintf(&text, "%s %s\n%s%s", podman_calls[call].method, path, safe ? safe : "", body ? "\n" : "") < 0)
                return -ENOMEM;
        return strv_push(v, text);
}

/* A JSON answer, parsed: status 200 and a body that is JSON. With absent_ok, a 404 returns
 * 0 and nothing; otherwise 1 with the object. */
static int get_json_maybe(aisb_ctx *ctx, const char *path, bool absent_ok, json_object **ret, aisb_error **err)
{
        _cleanup_(http_response_done) http_response resp = {};
        int r = send_request(ctx, (http_request) { .method = "GET", .path = path }, &resp, err);
        if (r < 0)
                return r;
        if (absent_ok && resp.status == 404)
                return 0;
        json_object *o = resp.status == 200 && resp.body ? json_tokener_parse(resp.body) : NULL;
        if (!o)
                return aisb_error_set(err, -EIO, "GET %s: %s", path, podman_error_message(&resp));
        *ret = o;
        return 1;
}

static int get_json(aisb_ctx *ctx, const char *path, json_object **ret, aisb_error **err)
{
        int r = get_json_maybe(ctx, path, false, ret, err);
        return r < 0 ? r : 0;
}

int podman_info(aisb_ctx *ctx, json_object **ret, aisb_error **err)
{
        return get_json(ctx, LIBPOD "/info", ret, err);
}

/* GET .../exists: 204 there, 404 not. */
static int exists(aisb_ctx *ctx, podman_call call, const char *what, const char *name, aisb_error **err)
{
        _cleanup_(http_response_done) http_response resp = {};
        int r = call_send(ctx, call, name, "GET", &resp, err);
        if (r < 0)
                return r;
        if (resp.status == 204)
                return 1;
        if (resp.status == 404)
                return 0;
        return aisb_error_set(err, -EIO, "checking %s %s: the service answered %ld", what, name, resp.status);
}

/* DELETE: gone already is no error. */
static int delete(aisb_ctx *ctx, const char *kind, const char *name, const char *query, aisb_error **err)
{
        _cleanup_free_ char *path = libpod_path(kind, name, query);
        if (!path)
                return error_oom(err);
        _cleanup_(http_response_done) http_response resp = {};
        int r = send_request(ctx, (http_request) { .method = "DELETE", .path = path }, &resp, err);
        if (r >= 0 && resp.status >= 300 && resp.status != 404)
                r = aisb_error_set(err, -EIO, "removing %s: %s", name, podman_error_message(&resp));
        return r;
}

/* POST with a JSON body; wipe: overwrite its text once sent (json-c keeps it). */
static int post_json(aisb_ctx *ctx, const char *path, json_object *body, bool wipe, http_response *ret,
                     aisb_error **err)
{
        const char *text = json_text_checked(body, JSON_C_TO_STRING_PLAIN);
        if (!text)
                return error_oom(err);
        int r = send_request(ctx,
                             (http_request) { .method = "POST",
                                              .path = path,
                                              .content_type = "application/json",
                                              .body = text,
                                              .body_size = strlen(text) },
                             ret, err);
        if (wipe)
                explicit_bzero((char *) text, strlen(text));
        return r;
}

/* ---- images ---- */

int podman_image_exists(aisb_ctx *ctx, const char *ref, aisb_error **err)
{
        return exists(ctx, PODMAN_IMAGE_EXISTS, "image", ref, err);
}

/* A tar to the service (from memory, or streamed from a file), its answer NDJSON or JSON:
 * bounded by silence, not by length (a build runs as long as its steps do). */
static int post_tar(aisb_ctx *ctx, const char *path, http_request req, const char *what, aisb_error **err)
{
        req.method = "POST";
        req.path = path;
        req.content_type = "application/x-tar";
        req.idle_timeout_s = PODMAN_BUILD_IDLE_TIMEOUT_S;
        _cleanup_(http_response_done) http_response resp = {};
        int r = send_request(ctx, req, &resp, err);
        if (r >= 0 && resp.status != 200)
                r = aisb_error_set(err, -EIO, "the service refused the %s (%ld): %s", what, resp.status,
                                   podman_error_message(&resp));
        return r;
}

/* A push's progress: a line with "error" is its failure. */
static int push_line(const char *line, size_t size, void *userdata)
{
        char **error = userdata;
        _cleanup_json_ json_object *o = json_tokener_parse(line);
        json_object *e;
        (void) size;
        if (o && json_object_object_get_ex(o, "error", &e) && !*error)
                *error = strdup(json_object_get_string(e));
        return 0;
}

int podman_image_push(aisb_ctx *ctx, const char *ref, const char *destination, bool tls_verify, aisb_error **err)
{
        _cleanup_free_ char *dest = http_escape(destination), *after = NULL, *path = NULL, *failure = NULL;
        if (!dest || asprintf(&after, "/push?destination=%s&tlsVerify=%s&quiet=false", dest,
                              tls_verify ? "true" : "false") < 0 ||
            !(path = libpod_path(LIBPOD "/images/", ref, after)))
                return error_oom(err);
        _cleanup_(http_response_done) http_response resp = {};
        /* The progress keeps the connection busy: bounded by silence, as a build is. */
        int r = send_request(ctx,
                             (http_request) { .method = "POST", .path = path, .line_fn = push_line,
                                              .line_userdata = &failure, .idle_timeout_s = PODMAN_BUILD_IDLE_TIMEOUT_S },
                             &resp, err);
        if (r >= 0 && resp.status != 200)
                r = aisb_error_set(err, -EIO, "the service refused to push %s (%ld): %s", ref, resp.status,
                                   podman_error_message(&resp));
        else if (r >= 0 && failure)
                r = aisb_error_set(err, -EIO, "pushing %s to %s: %s", ref, destination, failure);
        return r;
}

int podman_image_build(aisb_ctx *ctx, const char *tag, const void *tar, size_t size, http_line_fn line_fn,
                       void *userdata, aisb_error **err)
{
        _cleanup_free_ char *path = call_path(PODMAN_IMAGE_BUILD, tag);
        if (!path)
                return error_oom(err);
        return post_tar(ctx, path,
                        (http_request) { .body = tar, .body_size = size, .line_fn = line_fn, .line_userdata = userdata },
                        "build", err);
}

int podman_image_import(aisb_ctx *ctx, const char *ref, FILE *f, long long size, aisb_error **err)
{
        _cleanup_free_ char *path = call_path(PODMAN_IMAGE_IMPORT, ref);
        if (!path)
                return error_oom(err);
        return post_tar(ctx, path, (http_request) { .body_file = f, .body_file_size = size }, "import", err);
}

int podman_image_list(aisb_ctx *ctx, json_object **ret, aisb_error **err)
{
        return get_json(ctx, LIBPOD "/images/json", ret, err);
}

int podman_image_remove(aisb_ctx *ctx, const char *ref, aisb_error **err)
{
        return delete(ctx, LIBPOD "/images/", ref, "", err);
}

/* ---- volumes ---- */

int podman_volume_exists(aisb_ctx *ctx, const char *name, aisb_error **err)
{
        return exists(ctx, PODMAN_VOLUME_EXISTS, "volume", name, err);
}

int podman_volume_create(aisb_ctx *ctx, const char *name, json_object *labels, aisb_error **err)
{
        _cleanup_json_ json_object *body = json_object_new_object();
        int r = json_add_string(body, "Name", name);
        if (json_add(body, "Labels", labels) < 0 || r < 0)
                return error_oom(err);
        _cleanup_(http_response_done) http_response resp = {};
        r = post_json(ctx, podman_calls[PODMAN_VOLUME_CREATE].before, body, false, &resp, err);
        if (r < 0)
                return r;
        /* 500 "volume already exists" from a concurrent run is fine. */
        if (resp.status != 201 && resp.status != 200 && !(resp.body && strstr(resp.body, "already exists")))
                r = aisb_error_set(err, -EIO, "creating volume %s: %s", name, podman_error_message(&resp));
        return r;
}

int podman_volume_mountpoint(aisb_ctx *ctx, const char *name, char **ret, aisb_error **err)
{
        _cleanup_free_ char *path = libpod_path(LIBPOD "/volumes/", name, "/json");
        if (!path)
                return error_oom(err);
        _cleanup_(http_response_done) http_response resp = {};
        int r = send_request(ctx, (http_request) { .method = "GET", .path = path }, &resp, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *o = resp.status == 200 && resp.body ? json_tokener_parse(resp.body) : NULL;
        json_object *mp;
        if (!o || !json_object_object_get_ex(o, "Mountpoint", &mp) || !json_object_get_string(mp))
                return aisb_error_set(err, -EIO, "inspecting volume %s: %s", name, podman_error_message(&resp));
        *ret = strdup(json_object_get_string(mp));
        return *ret ? 0 : error_oom(err);
}

/* GET a list, with filters (JSON text) escaped into the query: base ends in '?' or '&'. */
static int list(aisb_ctx *ctx, const char *base, const char *filters, json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *escaped = filters ? http_escape(filters) : NULL;
        _cleanup_free_ char *path = NULL;
        if ((filters && !escaped) ||
            asprintf(&path, "%s%s%s", base, escaped ? "filters=" : "", escaped ? escaped : "") < 0)
                return error_oom(err);
        json_object *o = NULL;
        int r = get_json(ctx, path, &o, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_array)) {
                json_object_put(o);
                return aisb_error_set(err, -EIO, "GET %s: not a list", path);
        }
        *ret = o;
        return 0;
}

int podman_volume_list(aisb_ctx *ctx, const char *filters, json_object **ret, aisb_error **err)
{
        return list(ctx, LIBPOD "/volumes/json?", filters, ret, err);
}

int podman_volume_remove(aisb_ctx *ctx, const char *name, aisb_error **err)
{
        return delete(ctx, LIBPOD "/volumes/", name, "", err);
}

/* ---- containers ---- */

/* The service reads the user's subordinate ids through libsubid, which is not thread-safe:
 * two keep-id creates at once can leave one with a mapping of the user alone, no uid 0 in it
 * (podman 5.4: "container uses ID mappings ... but doesn't map UID 0" at start; 4.3: "keep-id
 * requires additional UIDs"). The user's runs send their creates one at a time, under a lock in
 * their own state directory. -1 when it cannot be had: the create goes unlocked (the retry
 * below still covers 4.3). */
static int create_lock(aisb_ctx *ctx)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_error_ aisb_error *e = NULL;
        if (state_dir(NULL, &dir, &e) < 0) {
                aisb_log(ctx, AISB_LOG_DEBUG, "creates not serialized: %s", aisb_error_message(e));
                return -1;
        }
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/create.lock", dir) < 0)
                return -1;
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd < 0) {
                aisb_log(ctx, AISB_LOG_DEBUG, "creates not serialized: %s: %s", path, strerror(errno));
                return -1;
        }
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR) {
                        close(fd);
                        return -1;
                }
        return fd;
}

int podman_container_create(aisb_ctx *ctx, json_object *body, bool wipe, char **ret_id, aisb_error **err)
{
        _cleanup_(http_response_done) http_response resp = {};
        int r;
        _cleanup_close_ _unused_ int lock = create_lock(ctx);
        for (int attempt = 0;; attempt++) {
                r = post_json(ctx, podman_calls[PODMAN_CONTAINER_CREATE].before, body, wipe, &resp, err);
                /* Podman 4.3 sometimes fails a keep-id create under concurrent starts with a
                 * spurious "requires additional UIDs" (seen in 1 of 8 parallel runs): the same
                 * request succeeds when sent again. */
                if (r < 0 || resp.status != 500 || !resp.body ||
                    !strstr(resp.body, "keep-id requires additional") || attempt >= 4)
                        break;
                http_response_done(&resp);
                nanosleep(&(struct timespec) { 0, (attempt + 1) * 100 * 1000 * 1000 }, NULL);
        }
        if (r < 0)
                return r;
        _cleanup_free_ char *id = NULL;
        _cleanup_json_ json_object *reply = resp.body ? json_tokener_parse(resp.body) : NULL;
        json_object *v;
        if (resp.status == 201 && reply && json_object_object_get_ex(reply, "Id", &v) && json_object_get_string(v))
                id = strdup(json_object_get_string(v));
        /* Podman's warnings here are facts about the host (caps not enforced on cgroup v1),
         * the same on every run: doctor says them once; a run only when asked (debug). */
        if (reply && json_object_object_get_ex(reply, "Warnings", &v) && json_object_is_type(v, json_type_array))
                for (size_t i = 0; i < json_object_array_length(v); i++)
                        aisb_log(ctx, AISB_LOG_DEBUG, "podman: %s",
                                 json_object_get_string(json_object_array_get_idx(v, i)));
        if (!id)
                return aisb_error_set(err, resp.status == 201 ? -ENOMEM : -EIO, "the service refused (%ld): %s",
                                      resp.status, podman_error_message(&resp));
        *ret_id = steal_pointer(&id);
        return 0;
}

static const char *refusal_message(const char *body)
{
        return podman_error_message(&(http_response) { .body = (char *) body });
}

int podman_container_attach(aisb_ctx *ctx, const char *id, http_stream *ret, aisb_error **err)
{
        _cleanup_free_ char *path = call_path(PODMAN_CONTAINER_ATTACH, id);
        if (!path)
                return error_oom(err);
        return http_hijack(&ctx->http, path, refusal_message, ret, err);
}

int podman_container_start(aisb_ctx *ctx, const char *id, aisb_error **err)
{
        _cleanup_(http_response_done) http_response resp = {};
        int r = call_send(ctx, PODMAN_CONTAINER_START, id, "POST", &resp, err);
        if (r >= 0 && resp.status != 204 && resp.status != 304)
                r = aisb_error_set(err, -EIO, "the service refused to start it (%ld): %s", resp.status,
                                   podman_error_message(&resp));
        return r;
}

int podman_container_resize(aisb_ctx *ctx, const char *id, unsigned short rows, unsigned short cols)
{
        if (rows == 0 || cols == 0)
                return 0;
        _cleanup_free_ char *escaped = http_escape(id);
        _cleanup_free_ char *path = NULL;
        if (!escaped || asprintf(&path, LIBPOD "/containers/%s/resize?h=%u&w=%u", escaped, rows, cols) < 0)
                return -ENOMEM;
        _cleanup_(http_response_done) http_response resp = {};
        int r = send_request(ctx, (http_request) { .method = "POST", .path = path }, &resp, NULL);
        if (r >= 0 && resp.status != 200 && resp.status != 201 && resp.status != 204)
                r = -EBUSY;
        return r;
}

int podman_container_wait(aisb_ctx *ctx, const char *id, int *ret_code, aisb_error **err)
{
        _cleanup_(http_response_done) http_response resp = {};
        int r = call_send(ctx, PODMAN_CONTAINER_WAIT, id, "POST", &resp, err);
        if (r < 0)
                return r;
        char *end = NULL;
        long code = resp.body ? strtol(resp.body, &end, 10) : -1;
        if (resp.status != 200 || !end || end == resp.body || code < 0 || code > 255)
                r = aisb_error_set(err, -EIO, "waiting for the sandbox: %s", podman_error_message(&resp));
        else
                *ret_code = (int) code;
        return r;
}

/* A container that stops on its own while the forced removal kills it makes podman answer
 * "could not be stopped: ... container state improper: stopped" (podman 4.3, about half the
 * time when the output's reader goes away as the command ends): it is stopped then, and the
 * same request again removes it. A few tries, 50 ms apart and doubling, under a second. */
#define REMOVE_TRIES 5

int podman_container_remove(aisb_ctx *ctx, const char *name, aisb_error **err)
{
        int r = 0;
        for (unsigned i = 0; i < REMOVE_TRIES; i++) {
                aisb_error *e = NULL;
                r = delete(ctx, podman_calls[PODMAN_CONTAINER_REMOVE].before, name,
                           podman_calls[PODMAN_CONTAINER_REMOVE].after, &e);
                if (r != -EIO || i + 1 == REMOVE_TRIES) {
                        if (r < 0 && err)
                                *err = e;
                        else
                                aisb_error_free(e);
                        break;
                }
                aisb_error_free(e);
                (void) nanosleep(&(struct timespec) { .tv_nsec = 50000000L << i }, NULL);
        }
        return r;
}

int podman_sandbox_remove(aisb_ctx *ctx, const char *id)
{
        _cleanup_error_ aisb_error *e = NULL;
        int r = podman_container_remove(ctx, id, &e);
        if (r < 0)
                aisb_log(ctx, AISB_LOG_WARNING, "could not remove sandbox %s (\"aisb clean\" will): %s",
                         id, aisb_error_message(e));
        return r;
}

int podman_container_inspect(aisb_ctx *ctx, const char *name, json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *path = libpod_path(LIBPOD "/containers/", name, "/json");
        if (!path)
                return error_oom(err);
        return get_json_maybe(ctx, path, true, ret, err);
}

int podman_container_list(aisb_ctx *ctx, const char *filters, json_object **ret, aisb_error **err)
{
        return list(ctx, LIBPOD "/containers/json?all=true&", filters, ret, err);
}
