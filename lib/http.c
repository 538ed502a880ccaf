/* SPDX-License-Identifier: MIT */
/*
 * HTTP to the podman service over its unix socket, with libcurl. Plain requests share one
 * easy handle (one keep-alive connection); the attach stream gets its own connection,
 * hijacked after the 101 answer. In a dry run nothing is sent: each request is written out
 * for the caller and answered with a canned success, so a dry run walks the same code path
 * as a real one.
 */
#include <poll.h>
#include <sys/socket.h>

#include "aisb-private.h"

void http_response_done(http_response *r)
{
        free(r->body);
        free(r->api_version);
        *r = (http_response) {};
}

char *http_escape(const char *s)
{
        /* curl_easy_escape needs no handle for this; keep the result in malloc memory. */
        char *e = curl_easy_escape(NULL, s, 0);
        if (!e)
                return NULL;
        char *copy = strdup(e);
        curl_free(e);
        return copy;
}

const char *http_error_message(const http_response *r)
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

typedef struct receive_state {
        buffer body;
        buffer pending; /* an incomplete line, in line mode */
        const http_request *req;
        int callback_error;
        char *api_version;
} receive_state;

static size_t on_data(char *data, size_t size, size_t nmemb, void *userdata)
{
        receive_state *st = userdata;
        size_t n = size * nmemb;
        if (!st->req->line_fn)
                return buffer_append(&st->body, data, n) < 0 ? 0 : n;
        /* Line mode: a build streams for minutes; hand each line over as it completes and
         * keep only the tail (the last lines are the error, if any). */
        if (buffer_append(&st->pending, data, n) < 0)
                return 0;
        char *start = st->pending.data;
        char *nl;
        while ((nl = memchr(start, '\n', st->pending.size - (size_t) (start - st->pending.data)))) {
                if (nl > start) {
                        int r = st->req->line_fn(start, (size_t) (nl - start), st->req->line_userdata);
                        if (r < 0) {
                                st->callback_error = r;
                                return 0;
                        }
                }
                start = nl + 1;
        }
        size_t rest = st->pending.size - (size_t) (start - st->pending.data);
        memmove(st->pending.data, start, rest);
        st->pending.size = rest;
        st->pending.data[rest] = 0;
        return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
        receive_state *st = userdata;
        size_t n = size * nmemb;
        static const char name[] = "libpod-api-version:";
        if (n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
                const char *v = data + sizeof name - 1;
                size_t len = n - (sizeof name - 1);
                while (len && (*v == ' ' || *v == '\t'))
                        v++, len--;
                while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
                        len--;
                free(st->api_version);
                st->api_version = strndup(v, len);
        }
        return n;
}

/* libcurl calls this about once a second while a request waits, and as data moves: a run
 * being prepared that is asked to stop aborts the request in progress. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        aisb_ctx *ctx = userdata;
        (void) dltotal, (void) dlnow, (void) ultotal, (void) ulnow;
        /* Already stopping: this request is the cleanup's. */
        if (ctx->stopping)
                return 0;
        return run_stopping(ctx) ? 1 : 0;
}

static int dry_run_send(aisb_ctx *ctx, const http_request *req, http_response *ret)
{
        buffer b = {};
        int r = buffer_printf(&b, "%s %s%s\n", req->method, req->unversioned ? "" : AISB_API_PREFIX,
                              req->path);
        if (req->dry_run_body)
                r |= buffer_printf(&b, "%s\n", req->dry_run_body);
        else if (req->body && req->body_size)
                r |= buffer_printf(&b, "%.*s\n", (int) req->body_size, (const char *) req->body);
        if (r < 0) {
                buffer_free(&b);
                return -ENOMEM;
        }
        ctx->dry_run_fn(b.data, ctx->dry_run_userdata);
        buffer_free(&b);

        /* Canned answers: an image that must be built, a container that exits 0. */
        const char *body = "";
        long status = 200;
        if (strstr(req->path, "/exists"))
                status = 404;
        else if (strstr(req->path, "/containers/create")) {
                status = 201;
                body = "{\"Id\":\"dry-run\"}";
        } else if (strstr(req->path, "/wait"))
                body = "0";
        else if (strcmp(req->method, "DELETE") == 0 || strstr(req->path, "/start"))
                status = 204;
        *ret = (http_response) { .status = status, .body = strdup(body) };
        return ret->body ? 0 : -ENOMEM;
}

static CURL *handle_for(aisb_ctx *ctx, aisb_error **err)
{
        if (!ctx->curl) {
                ctx->curl = curl_easy_init();
                if (!ctx->curl) {
                        aisb_error_set(err, -ENOMEM, "cannot initialise libcurl");
                        return NULL;
                }
        } else {
                /* Reset options, keep the live connection. */
                curl_easy_reset(ctx->curl);
        }
        CURL *c = ctx->curl;
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ctx->socket_path);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        return c;
}

int http_send(aisb_ctx *ctx, const http_request *req, http_response *ret, aisb_error **err)
{
        if (ctx->dry_run_fn) {
                int r = dry_run_send(ctx, req, ret);
                return r < 0 ? aisb_error_set(err, r, "out of memory") : 0;
        }
        if (!ctx->socket_path)
                return aisb_error_set(err, -ENOTCONN, "not connected to the podman service");
        CURL *c = handle_for(ctx, err);
        if (!c)
                return -ENOMEM;

        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "http://d%s%s", req->unversioned ? "" : AISB_API_PREFIX, req->path) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        struct curl_slist *h;
        /* No 100-continue round trip: the service does not need it. */
        headers = curl_slist_append(NULL, "Expect:");
        if (req->content_type && headers) {
                _cleanup_free_ char *ct = NULL;
                if (asprintf(&ct, "Content-Type: %s", req->content_type) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                h = curl_slist_append(headers, ct);
                if (!h)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                headers = h;
        }
        if (!headers)
                return aisb_error_set(err, -ENOMEM, "out of memory");

        receive_state st = { .req = req };
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &st);
        if (req->body_file) {
                curl_easy_setopt(c, CURLOPT_POST, 1L);
                curl_easy_setopt(c, CURLOPT_READDATA, req->body_file);
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_file_size);
        } else if (req->body) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_size);
        } else if (strcmp(req->method, "POST") == 0) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
        }
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0)
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        if (ctx->stop_io && !ctx->stopping) {
                curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
                curl_easy_setopt(c, CURLOPT_XFERINFODATA, ctx);
                curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        }

        CURLcode cr = curl_easy_perform(c);
        if (cr == CURLE_OK && req->line_fn && st.pending.size > 0 && !st.callback_error) {
                int r = req->line_fn(st.pending.data, st.pending.size, req->line_userdata);
                if (r < 0)
                        st.callback_error = r;
        }
        buffer_free(&st.pending);
        if (st.callback_error) {
                buffer_free(&st.body);
                free(st.api_version);
                return aisb_error_set(err, st.callback_error, "%s %s: %s", req->method, req->path,
                                      strerror(-st.callback_error));
        }
        if (cr == CURLE_ABORTED_BY_CALLBACK && ctx->stopping) {
                buffer_free(&st.body);
                free(st.api_version);
                return aisb_error_set(err, -ECANCELED, "%s %s: stopped", req->method, req->path);
        }
        if (cr != CURLE_OK) {
                buffer_free(&st.body);
                free(st.api_version);
                int code = cr == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
                return aisb_error_set(err, code, "%s %s: podman service at %s: %s", req->method,
                                      req->path, ctx->socket_path, curl_easy_strerror(cr));
        }
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        *ret = (http_response) { .status = status,
                                 .body_size = st.body.size,
                                 .body = buffer_steal(&st.body),
                                 .api_version = st.api_version };
        return 0;
}

static int wait_socket(int fd, short events, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = events };
        int r;
        while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
                ;
        if (r < 0)
                return -errno;
        return r == 0 ? -ETIMEDOUT : 0;
}

void http_stream_done(http_stream *s)
{
        if (s->curl)
                curl_easy_cleanup(s->curl);
        buffer_free(&s->leftover);
        *s = (http_stream) { .fd = -1 };
}

int http_hijack(aisb_ctx *ctx, const char *path, http_stream *ret, aisb_error **err)
{
        http_stream s = { .fd = -1 };
        if (ctx->dry_run_fn) {
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text, "POST %s%s\n(hijacked: Connection: Upgrade, Upgrade: tcp)\n",
                             AISB_API_PREFIX, path) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                ctx->dry_run_fn(text, ctx->dry_run_userdata);
                *ret = s;
                return 0;
        }
        s.curl = curl_easy_init();
        if (!s.curl)
                return aisb_error_set(err, -ENOMEM, "cannot initialise libcurl");
        curl_easy_setopt(s.curl, CURLOPT_UNIX_SOCKET_PATH, ctx->socket_path);
        curl_easy_setopt(s.curl, CURLOPT_URL, "http://d/");
        curl_easy_setopt(s.curl, CURLOPT_CONNECT_ONLY, 1L);
        curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s.curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        CURLcode cr = curl_easy_perform(s.curl);
        curl_socket_t sock = CURL_SOCKET_BAD;
        if (cr == CURLE_OK)
                cr = curl_easy_getinfo(s.curl, CURLINFO_ACTIVESOCKET, &sock);
        if (cr != CURLE_OK || sock == CURL_SOCKET_BAD) {
                http_stream_done(&s);
                return aisb_error_set(err, -ECONNREFUSED, "attach: cannot connect to %s: %s",
                                      ctx->socket_path, curl_easy_strerror(cr));
        }
        s.fd = (int) sock;

        _cleanup_free_ char *head = NULL;
        int n = asprintf(&head,
                         "POST %s%s HTTP/1.1\r\nHost: d\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                         "Content-Length: 0\r\n\r\n",
                         AISB_API_PREFIX, path);
        if (n < 0) {
                http_stream_done(&s);
                return aisb_error_set(err, -ENOMEM, "out of memory");
        }
        for (size_t sent = 0; sent < (size_t) n;) {
                size_t w = 0;
                cr = curl_easy_send(s.curl, head + sent, (size_t) n - sent, &w);
                if (cr == CURLE_AGAIN) {
                        (void) wait_socket(s.fd, POLLOUT, 5000);
                        continue;
                }
                if (cr != CURLE_OK) {
                        http_stream_done(&s);
                        return aisb_error_set(err, -EIO, "attach: sending the request: %s",
                                              curl_easy_strerror(cr));
                }
                sent += w;
        }

        /* Read up to the end of the response head; anything after it is stream data. */
        buffer in = {};
        char *end = NULL;
        while (!end) {
                char chunk[4096];
                size_t got = 0;
                cr = curl_easy_recv(s.curl, chunk, sizeof chunk, &got);
                if (cr == CURLE_AGAIN) {
                        int r = wait_socket(s.fd, POLLIN, 30000);
                        if (r < 0) {
                                buffer_free(&in);
                                http_stream_done(&s);
                                return aisb_error_set(err, r, "attach: no answer from the service");
                        }
                        continue;
                }
                if (cr != CURLE_OK || got == 0 || in.size + got > 65536) {
                        buffer_free(&in);
                        http_stream_done(&s);
                        return aisb_error_set(err, -EIO, "attach: the service closed the connection before answering");
                }
                if (buffer_append(&in, chunk, got) < 0) {
                        buffer_free(&in);
                        http_stream_done(&s);
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                }
                end = strstr(in.data, "\r\n\r\n");
        }
        int status = 0;
        if (sscanf(in.data, "HTTP/1.%*d %d", &status) != 1 || status != 101) {
                http_response fake = { .body = strstr(in.data, "\r\n\r\n") + 4 };
                int r = aisb_error_set(err, -EIO, "attach refused (%d): %s", status,
                                       http_error_message(&fake));
                buffer_free(&in);
                http_stream_done(&s);
                return r;
        }
        size_t head_size = (size_t) (end + 4 - in.data);
        if (buffer_append(&s.leftover, in.data + head_size, in.size - head_size) < 0) {
                buffer_free(&in);
                http_stream_done(&s);
                return aisb_error_set(err, -ENOMEM, "out of memory");
        }
        buffer_free(&in);
        *ret = s;
        return 0;
}

int http_exists(aisb_ctx *ctx, const char *kind, const char *name, aisb_error **err)
{
        _cleanup_free_ char *escaped = http_escape(name);
        _cleanup_free_ char *path = NULL;
        if (!escaped || asprintf(&path, "/libpod/%s/%s/exists", kind, escaped) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        http_response resp = {};
        int r = http_send(ctx, &(http_request) { .method = "GET", .path = path }, &resp, err);
        if (r < 0)
                return r;
        long status = resp.status;
        http_response_done(&resp);
        if (status == 204)
                return 1;
        if (status == 404)
                return 0;
        return aisb_error_set(err, -EIO, "checking %s %s: the service answered %ld", kind, name, status);
}

int http_post_json(aisb_ctx *ctx, const char *path, json_object *body, const char *dry_run_body,
                   bool wipe, http_response *ret, aisb_error **err)
{
        const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        if (!text)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        int r = http_send(ctx,
                          &(http_request) { .method = "POST",
                                            .path = path,
                                            .content_type = "application/json",
                                            .body = text,
                                            .body_size = strlen(text),
                                            .dry_run_body = dry_run_body },
                          ret, err);
        /* A body that held secret values is wiped once sent (json-c keeps this text). */
        if (wipe)
                explicit_bzero((char *) text, strlen(text));
        return r;
}
