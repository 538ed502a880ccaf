/* SPDX-License-Identifier: MIT */
/*
 * HTTP over a unix socket with libcurl (http.h).
 */
#include <poll.h>
#include <sys/socket.h>

#include "http.h"

/* A hijacked stream's response head: its connection, and the head itself. */
#define HIJACK_CONNECT_TIMEOUT_MS 5000L
#define HIJACK_HEAD_TIMEOUT_MS 30000
#define HIJACK_HEAD_MAX 65536

int http_conn_set_socket(http_conn *c, const char *path)
{
        char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        free(c->socket_path);
        c->socket_path = copy;
        if (c->curl) {
                /* A handle bound to another socket must not reuse its connection. */
                curl_easy_cleanup(c->curl);
                c->curl = NULL;
        }
        return 0;
}

void http_conn_done(http_conn *c)
{
        if (c->curl)
                curl_easy_cleanup(c->curl);
        free(c->socket_path);
        c->socket_path = NULL;
        c->curl = NULL;
}

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

/* libcurl calls this about once a second while a request waits, and as data moves. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        http_conn *c = userdata;
        (void) dltotal, (void) dlnow, (void) ultotal, (void) ulnow;
        return c->cancel_fn(c->cancel_userdata) ? 1 : 0;
}

static CURL *handle_for(http_conn *conn, aisb_error **err)
{
        if (!conn->curl) {
                conn->curl = curl_easy_init();
                if (!conn->curl) {
                        aisb_error_set(err, -ENOMEM, "cannot initialise libcurl");
                        return NULL;
                }
        } else {
                /* Reset options, keep the live connection. */
                curl_easy_reset(conn->curl);
        }
        CURL *c = conn->curl;
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, conn->socket_path);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        return c;
}

int http_send(http_conn *conn, const http_request *req, http_response *ret, aisb_error **err)
{
        if (!conn->socket_path)
                return aisb_error_set(err, -ENOTCONN, "not connected to the podman service");
        CURL *c = handle_for(conn, err);
        if (!c)
                return -ENOMEM;

        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "http://d%s", req->path) < 0)
                return error_oom(err);
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        struct curl_slist *h;
        /* No 100-continue round trip: the service does not need it. */
        headers = curl_slist_append(NULL, "Expect:");
        if (req->content_type && headers) {
                _cleanup_free_ char *ct = NULL;
                if (asprintf(&ct, "Content-Type: %s", req->content_type) < 0)
                        return error_oom(err);
                h = curl_slist_append(headers, ct);
                if (!h)
                        return error_oom(err);
                headers = h;
        }
        if (!headers)
                return error_oom(err);

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
        if (req->timeout_ms > 0)
                curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
        if (req->idle_timeout_s > 0) {
                curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
                curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, req->idle_timeout_s);
        }
        if (conn->cancel_fn) {
                curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
                curl_easy_setopt(c, CURLOPT_XFERINFODATA, conn);
                curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        }

        CURLcode cr = curl_easy_perform(c);
        if (cr == CURLE_OK && req->line_fn && st.pending.size > 0 && !st.callback_error) {
                int r = req->line_fn(st.pending.data, st.pending.size, req->line_userdata);
                if (r < 0)
                        st.callback_error = r;
        }
        buffer_free(&st.pending);
        int r = 0;
        if (st.callback_error)
                r = aisb_error_set(err, st.callback_error, "%s %s: %s", req->method, req->path,
                                   strerror(-st.callback_error));
        else if (cr == CURLE_ABORTED_BY_CALLBACK)
                r = aisb_error_set(err, -ECANCELED, "%s %s: stopped", req->method, req->path);
        else if (cr == CURLE_OPERATION_TIMEDOUT)
                r = aisb_error_set(err, -ETIMEDOUT,
                                   "%s %s: the podman service at %s did not answer in time (%s): is it hung? "
                                   "\"podman info\" tells",
                                   req->method, req->path, conn->socket_path, curl_easy_strerror(cr));
        else if (cr != CURLE_OK)
                r = aisb_error_set(err, cr == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO,
                                   "%s %s: podman service at %s: %s", req->method, req->path, conn->socket_path,
                                   curl_easy_strerror(cr));
        if (r < 0) {
                buffer_free(&st.body);
                free(st.api_version);
                return r;
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
        *s = HTTP_STREAM_NULL;
}

int http_hijack(http_conn *conn, const char *path, const char *(*refusal_fn)(const char *body),
                http_stream *ret, aisb_error **err)
{
        _cleanup_(http_stream_done) http_stream s = HTTP_STREAM_NULL;
        s.curl = curl_easy_init();
        if (!s.curl)
                return aisb_error_set(err, -ENOMEM, "cannot initialise libcurl");
        curl_easy_setopt(s.curl, CURLOPT_UNIX_SOCKET_PATH, conn->socket_path);
        curl_easy_setopt(s.curl, CURLOPT_URL, "http://d/");
        curl_easy_setopt(s.curl, CURLOPT_CONNECT_ONLY, 1L);
        curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s.curl, CURLOPT_CONNECTTIMEOUT_MS, HIJACK_CONNECT_TIMEOUT_MS);
        CURLcode cr = curl_easy_perform(s.curl);
        curl_socket_t sock = CURL_SOCKET_BAD;
        if (cr == CURLE_OK)
                cr = curl_easy_getinfo(s.curl, CURLINFO_ACTIVESOCKET, &sock);
        if (cr != CURLE_OK || sock == CURL_SOCKET_BAD)
                return aisb_error_set(err, -ECONNREFUSED, "attach: cannot connect to %s: %s",
                                      conn->socket_path, curl_easy_strerror(cr));
        s.fd = (int) sock;

        _cleanup_free_ char *head = NULL;
        int n = asprintf(&head,
                         "POST %s HTTP/1.1\r\nHost: d\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                         "Content-Length: 0\r\n\r\n",
                         path);
        if (n < 0)
                return error_oom(err);
        for (size_t sent = 0; sent < (size_t) n;) {
                size_t w = 0;
                cr = curl_easy_send(s.curl, head + sent, (size_t) n - sent, &w);
                if (cr == CURLE_AGAIN) {
                        (void) wait_socket(s.fd, POLLOUT, 5000);
                        continue;
                }
                if (cr != CURLE_OK)
                        return aisb_error_set(err, -EIO, "attach: sending the request: %s",
                                              curl_easy_strerror(cr));
                sent += w;
        }

        /* Read up to the end of the response head; anything after it is stream data. */
        _cleanup_(buffer_free) buffer in = {};
        char *end = NULL;
        while (!end) {
                char chunk[4096];
                size_t got = 0;
                cr = curl_easy_recv(s.curl, chunk, sizeof chunk, &got);
                if (cr == CURLE_AGAIN) {
                        int r = wait_socket(s.fd, POLLIN, HIJACK_HEAD_TIMEOUT_MS);
                        if (r < 0)
                                return aisb_error_set(err, r, "attach: no answer from the service");
                        continue;
                }
                if (cr != CURLE_OK || got == 0 || in.size + got > HIJACK_HEAD_MAX)
                        return aisb_error_set(err, -EIO, "attach: the service closed the connection before answering");
                if (buffer_append(&in, chunk, got) < 0)
                        return error_oom(err);
                end = strstr(in.data, "\r\n\r\n");
        }
        int status = 0;
        if (sscanf(in.data, "HTTP/1.%*d %d", &status) != 1 || status != 101)
                return aisb_error_set(err, -EIO, "attach refused (%d): %s", status,
                                      refusal_fn ? refusal_fn(end + 4) : "no details");
        size_t head_size = (size_t) (end + 4 - in.data);
        if (buffer_append(&s.leftover, in.data + head_size, in.size - head_size) < 0)
                return error_oom(err);
        *ret = s;
        s = HTTP_STREAM_NULL;
        return 0;
}
