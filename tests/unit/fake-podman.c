/* SPDX-License-Identifier: MIT */
/* The fake libpod API server behind fake-podman.h. One thread accepts connections and every
 * connection gets a thread of its own, because libaisb keeps a hijacked attach stream open on
 * one connection while it sends start and wait on others, and libcurl keeps connections alive
 * between requests. All shared state (routes, the request log, the connection list) lives in
 * the server object under one mutex; the bytes of a connection belong to its thread alone. */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake-podman.h"

/* A request head larger than this is garbage, not something libaisb would send. */
#define HEAD_MAX (1024 * 1024)
/* Long enough for the client's read to return before the next byte arrives, short enough
 * that a trickled response of a few hundred bytes still takes well under a second. */
#define TRICKLE_DELAY_NS (200 * 1000)
/* Chunks go out as separate writes with a pause, so the client really sees them apart. */
#define CHUNK_DELAY_NS (1000 * 1000)

struct buffer {
        char *data; /* kept NUL-terminated so text can be read in place */
        size_t size;
        size_t allocated;
};

struct route {
        char *method;
        char *glob; /* "*" + the caller's pattern up to its '?' */
        char *query_glob; /* what follows the pattern's '?', or NULL: any query */
        int status;
        char *content_type;
        struct buffer body;
        fake_mode mode;
        int times; /* 0: unlimited */
        int answered;
        struct route *next;
};

struct header {
        char *name;
        char *value;
};

struct request {
        char *method;
        char *path;
        struct header *headers;
        size_t n_headers;
        struct buffer body;
        unsigned connection;
        bool http10;
        struct buffer hijack_input;
};

struct connection {
        fake_podman *server;
        int fd;    /* closed by the connection's thread, under the lock: stop() shuts it down */
        unsigned serial;
        pthread_t thread;
        bool finished;
        struct buffer in; /* read but not yet parsed */
        struct connection *next;
};

/* What to send for one request: copied out of the route table under the lock, so answering
 * (which may sleep or block) happens without it. */
struct answer {
        int status;
        char *content_type;
        struct buffer body;
        fake_mode mode;
        char *version;
};

struct fake_podman {
        /* Room for "/podman.sock" behind it inside sun_path. */
        char directory[sizeof(((struct sockaddr_un *) NULL)->sun_path) - sizeof("/podman.sock")];
        char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
        int listen_fd;
        int wake_pipe[2];
        pthread_t accept_thread;
        bool accept_thread_started;

        pthread_mutex_t lock;
        pthread_cond_t recorded;
        char *version;
        struct route *routes;
        struct route **routes_tail;
        struct buffer hijack_output;
        struct request **requests;
        size_t n_requests;
        size_t requests_allocated;
        struct request *last_hijack;
        struct connection *connections;
        unsigned connections_accepted;
        fake_request_fn request_fn;
        void *request_userdata;
};

/* Test fixture code: an allocation failure is not worth an error path. */
static void *xrealloc(void *p, size_t size) {
        p = realloc(p, size ? size : 1);
        if (!p)
                abort();
        return p;
}

static void *xzalloc(size_t size) {
        void *p = calloc(1, size ? size : 1);
        if (!p)
                abort();
        return p;
}

static char *xstrndup(const char *s, size_t n) {
        char *copy = strndup(s, n);
        if (!copy)
                abort();
        return copy;
}

static char *xstrdup(const char *s) {
        return s ? xstrndup(s, strlen(s)) : NULL;
}

static void buffer_append(struct buffer *b, const void *data, size_t size) {
        if (b->size + size + 1 > b->allocated) {
                b->allocated = (b->size + size + 1) * 2;
                b->data = xrealloc(b->data, b->allocated);
        }
        if (size > 0)
                memcpy(b->data + b->size, data, size);
        b->size += size;
        b->data[b->size] = '\0';
}

static void buffer_printf(struct buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void buffer_printf(struct buffer *b, const char *format, ...) {
        va_list ap;
        char *text;
        int n;

        va_start(ap, format);
        n = vasprintf(&text, format, ap);
        va_end(ap);
        if (n < 0)
                abort();
        buffer_append(b, text, (size_t) n);
        free(text);
}

static void buffer_consume(struct buffer *b, size_t size) {
        if (size >= b->size) {
                b->size = 0;
        } else {
                memmove(b->data, b->data + size, b->size - size);
                b->size -= size;
        }
        if (b->data)
                b->data[b->size] = '\0';
}

static void buffer_free(struct buffer *b) {
        free(b->data);
        *b = (struct buffer) {};
}

static void request_free(struct request *r) {
        if (!r)
                return;
        free(r->method);
        free(r->path);
        for (size_t i = 0; i < r->n_headers; i++) {
                free(r->headers[i].name);
                free(r->headers[i].value);
        }
        free(r->headers);
        buffer_free(&r->body);
        buffer_free(&r->hijack_input);
        free(r);
}

static void answer_free(struct answer *a) {
        free(a->content_type);
        free(a->version);
        buffer_free(&a->body);
}

static void sleep_ns(long ns) {
        struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* MSG_NOSIGNAL: a client that hangs up must not take the test process down with SIGPIPE. */
static int send_all(int fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

static int send_trickle(int fd, const void *data, size_t size) {
        const char *p = data;

        for (size_t i = 0; i < size; i++) {
                int r = send_all(fd, p + i, 1);
                if (r < 0)
                        return r;
                sleep_ns(TRICKLE_DELAY_NS);
        }
        return 0;
}

static int send_mode(int fd, fake_mode mode, const void *data, size_t size) {
        return mode == FAKE_TRICKLE ? send_trickle(fd, data, size) : send_all(fd, data, size);
}

/* Reads whatever is available into c->in: > 0 bytes read, 0 on EOF, < 0 on error. */
static ssize_t connection_read(struct connection *c) {
        char chunk[16384];
        ssize_t n;

        do
                n = recv(c->fd, chunk, sizeof(chunk), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buffer_append(&c->in, chunk, (size_t) n);
        return n;
}

static int connection_need(struct connection *c, size_t size) {
        while (c->in.size < size) {
                ssize_t n = connection_read(c);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return -ECONNRESET;
        }
        return 0;
}

/* Index just past the next "\r\n" at or after `from`, reading more as needed. */
static int connection_line(struct connection *c, size_t from, size_t *ret_end) {
        for (;;) {
                char *p = c->in.size > from ? memmem(c->in.data + from, c->in.size - from, "\r\n", 2) : NULL;
                if (p) {
                        *ret_end = (size_t) (p - c->in.data) + 2;
                        return 0;
                }
                if (c->in.size > HEAD_MAX)
                        return -E2BIG;
                int r = connection_need(c, c->in.size + 1);
                if (r < 0)
                        return r;
        }
}

static char *trim(char *s, char *end) {
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *end = '\0';
        return s;
}

static const char *request_header(const struct request *r, const char *name) {
        for (size_t i = 0; i < r->n_headers; i++)
                if (strcasecmp(r->headers[i].name, name) == 0)
                        return r->headers[i].value;
        return NULL;
}

static bool header_has_token(const struct request *r, const char *name, const char *token) {
        const char *value = request_header(r, name);
        return value && strcasestr(value, token);
}

/* Parses "METHOD target HTTP/1.x" and the header lines of head (NUL-terminated, without the
 * blank line). */
static int parse_head(char *head, struct request *r) {
        char *line_end = strstr(head, "\r\n");
        char *line = head, *space1, *space2;

        if (line_end)
                *line_end = '\0';
        space1 = strchr(line, ' ');
        space2 = space1 ? strchr(space1 + 1, ' ') : NULL;
        if (!space1 || !space2 || strncmp(space2 + 1, "HTTP/1.", 7) != 0)
                return -EBADMSG;
        r->method = xstrndup(line, (size_t) (space1 - line));
        r->path = xstrndup(space1 + 1, (size_t) (space2 - space1 - 1));
        r->http10 = strcmp(space2 + 1, "HTTP/1.0") == 0;

        for (line = line_end ? line_end + 2 : NULL; line && *line; line = line_end ? line_end + 2 : NULL) {
                char *colon;

                line_end = strstr(line, "\r\n");
                if (line_end)
                        *line_end = '\0';
                colon = strchr(line, ':');
                if (!colon)
                        return -EBADMSG;
                r->headers = xrealloc(r->headers, (r->n_headers + 1) * sizeof(*r->headers));
                r->headers[r->n_headers].name = xstrdup(trim(line, colon));
                r->headers[r->n_headers].value = xstrdup(trim(colon + 1, colon + 1 + strlen(colon + 1)));
                r->n_headers++;
        }
        return 0;
}

static int read_chunked_body(struct connection *c, struct request *r) {
        for (;;) {
                size_t end, size;
                char *size_end;
                int k;

                k = connection_line(c, 0, &end);
                if (k < 0)
                        return k;
                errno = 0;
                size = strtoul(c->in.data, &size_end, 16);
                if (errno != 0 || size_end == c->in.data)
                        return -EBADMSG;
                buffer_consume(&c->in, end);
                if (size == 0)
                        break;
                k = connection_need(c, size + 2);
                if (k < 0)
                        return k;
                buffer_append(&r->body, c->in.data, size);
                buffer_consume(&c->in, size + 2);
        }
        /* Trailers, if any, up to the empty line: read and dropped. */
        for (;;) {
                size_t end;
                int k = connection_line(c, 0, &end);
                if (k < 0)
                        return k;
                buffer_consume(&c->in, end);
                if (end == 2)
                        return 0;
        }
}

/* 1 with *ret a request, 0 when the client closed between requests, < 0 on garbage or error. */
static int read_request(struct connection *c, struct request **ret) {
        struct request *r;
        const char *value;
        char *head_end;
        int k;

        for (;;) {
                head_end = c->in.size > 0 ? memmem(c->in.data, c->in.size, "\r\n\r\n", 4) : NULL;
                if (head_end)
                        break;
                if (c->in.size > HEAD_MAX)
                        return -E2BIG;
                ssize_t n = connection_read(c);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return c->in.size == 0 ? 0 : -ECONNRESET;
        }

        r = xzalloc(sizeof(*r));
        r->connection = c->serial;
        buffer_append(&r->body, NULL, 0);
        char *head = xstrndup(c->in.data, (size_t) (head_end - c->in.data) + 2);
        buffer_consume(&c->in, (size_t) (head_end - c->in.data) + 4);
        k = parse_head(head, r);
        free(head);
        if (k < 0)
                goto fail;

        /* curl sends Expect: 100-continue with larger bodies and would wait a second for this. */
        if (header_has_token(r, "Expect", "100-continue") && c->in.size == 0) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                k = send_all(c->fd, cont, sizeof(cont) - 1);
                if (k < 0)
                        goto fail;
        }

        if (header_has_token(r, "Transfer-Encoding", "chunked")) {
                k = read_chunked_body(c, r);
                if (k < 0)
                        goto fail;
        } else if ((value = request_header(r, "Content-Length"))) {
                char *end;
                errno = 0;
                unsigned long long size = strtoull(value, &end, 10);
                if (errno != 0 || *end != '\0' || size > SIZE_MAX / 2) {
                        k = -EBADMSG;
                        goto fail;
                }
                k = connection_need(c, (size_t) size);
                if (k < 0)
                        goto fail;
                buffer_append(&r->body, c->in.data, (size_t) size);
                buffer_consume(&c->in, (size_t) size);
        }

        *ret = r;
        return 1;
fail:
        request_free(r);
        return k;
}

/* Returns the request's index in the log. */
static size_t record_request(fake_podman *fp, struct request *r) {
        size_t index;

        pthread_mutex_lock(&fp->lock);
        if (fp->n_requests == fp->requests_allocated) {
                fp->requests_allocated = fp->requests_allocated ? fp->requests_allocated * 2 : 16;
                fp->requests = xrealloc(fp->requests, fp->requests_allocated * sizeof(*fp->requests));
        }
        index = fp->n_requests;
        fp->requests[fp->n_requests++] = r;
        pthread_cond_broadcast(&fp->recorded);
        pthread_mutex_unlock(&fp->lock);
        return index;
}

static void record_hijack_input(fake_podman *fp, struct request *r, const void *data, size_t size) {
        pthread_mutex_lock(&fp->lock);
        buffer_append(&r->hijack_input, data, size);
        pthread_mutex_unlock(&fp->lock);
}

static void json_escape(struct buffer *b, const char *s) {
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch == '"' || ch == '\\')
                        buffer_printf(b, "\\%c", ch);
                else if (ch < 0x20)
                        buffer_printf(b, "\\u%04x", ch);
                else
                        buffer_append(b, s, 1);
        }
}

static bool path_is_ping(const char *path) {
        size_t length = strcspn(path, "?");
        return length >= 6 && memcmp(path + length - 6, "/_ping", 6) == 0;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The query of a request target, percent-decoded ("" when there is none). */
static char *decoded_query(const char *target) {
        const char *q = strchr(target, '?');
        char *out, *o;

        q = q ? q + 1 : "";
        out = o = xzalloc(strlen(q) + 1);
        for (; *q; q++) {
                if (*q == '%' && hex_value(q[1]) >= 0 && hex_value(q[2]) >= 0) {
                        *o++ = (char) (hex_value(q[1]) * 16 + hex_value(q[2]));
                        q += 2;
                } else {
                        *o++ = *q;
                }
        }
        return out;
}

static void choose_answer(fake_podman *fp, const struct request *r, struct answer *ret) {
        char *path = xstrndup(r->path, strcspn(r->path, "?"));
        char *query = decoded_query(r->path);
        struct route *route;

        pthread_mutex_lock(&fp->lock);
        *ret = (struct answer) { .version = xstrdup(fp->version) };
        for (route = fp->routes; route; route = route->next) {
                if (route->times > 0 && route->answered >= route->times)
                        continue;
                if (strcmp(route->method, r->method) != 0 || fnmatch(route->glob, path, 0) != 0)
                        continue;
                if (route->query_glob && fnmatch(route->query_glob, query, 0) != 0)
                        continue;
                route->answered++;
                ret->status = route->status;
                ret->content_type = xstrdup(route->content_type);
                ret->mode = route->mode;
                if ((route->mode == FAKE_HIJACK || route->mode == FAKE_HIJACK_NO_WAIT ||
                     route->mode == FAKE_HIJACK_UNTIL_DELETE) && route->body.size == 0)
                        buffer_append(&ret->body, fp->hijack_output.data, fp->hijack_output.size);
                else
                        buffer_append(&ret->body, route->body.data, route->body.size);
                break;
        }
        pthread_mutex_unlock(&fp->lock);

        if (!route && (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0) && path_is_ping(r->path)) {
                ret->status = 200;
                ret->content_type = xstrdup("text/plain; charset=utf-8");
                buffer_append(&ret->body, "OK", 2);
        } else if (!route) {
                ret->status = 404;
                ret->content_type = xstrdup("application/json");
                buffer_printf(&ret->body, "{\"cause\":\"no route\",\"message\":\"fake: no route for ");
                json_escape(&ret->body, r->method);
                buffer_append(&ret->body, " ", 1);
                json_escape(&ret->body, r->path);
                buffer_printf(&ret->body, "\",\"response\":404}\n");
        }
        free(path);
        free(query);
}

static const char *reason_phrase(int status) {
        switch (status) {
        case 101: return "UPGRADED"; /* what podman says, not the RFC's "Switching Protocols" */
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 304: return "Not Modified";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 409: return "Conflict";
        case 500: return "Internal Server Error";
        default:  return "Fake Status";
        }
}

/* Closes without provoking a reset: on a unix socket, closing with unread bytes queued makes
 * the peer's next read fail with ECONNRESET instead of seeing a clean EOF, so drain first. */
static void drain_input(struct connection *c, struct request *hijack) {
        char chunk[4096];
        ssize_t n;

        while ((n = recv(c->fd, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0)
                if (hijack)
                        record_hijack_input(c->server, hijack, chunk, (size_t) n);
}

static int serve_hijack(struct connection *c, struct request *r, const struct answer *a) {
        fake_podman *fp = c->server;
        struct buffer head = {};
        int k;

        pthread_mutex_lock(&fp->lock);
        fp->last_hijack = r;
        pthread_mutex_unlock(&fp->lock);

        /* Bytes the client pipelined behind its request head already belong to the stream. */
        if (c->in.size > 0) {
                record_hijack_input(fp, r, c->in.data, c->in.size);
                buffer_consume(&c->in, c->in.size);
        }

        buffer_printf(&head, "HTTP/1.1 %d %s\r\n", a->status, reason_phrase(a->status));
        buffer_printf(&head, "Content-Type: %s\r\n", a->content_type ? a->content_type : "application/vnd.docker.raw-stream");
        buffer_printf(&head, "Connection: Upgrade\r\nUpgrade: tcp\r\n");
        buffer_printf(&head, "Libpod-Api-Version: %s\r\n\r\n", a->version);
        k = send_all(c->fd, head.data, head.size);
        buffer_free(&head);
        if (k < 0)
                return k;
        /* The output as a second write, so clients meet both the head alone and (when the
         * two coalesce) stream bytes behind the head. */
        k = send_all(c->fd, a->body.data, a->body.size);
        if (k < 0)
                return k;

        if (a->mode == FAKE_HIJACK_NO_WAIT) {
                drain_input(c, r);
                return 0;
        }
        size_t seen = 0;
        bool client_done = false;
        for (;;) {
                char chunk[4096];
                if (a->mode == FAKE_HIJACK_UNTIL_DELETE) {
                        /* The container "runs" until someone removes it, whether or not the
                         * client closed its stdin. */
                        struct pollfd p = { .fd = c->fd, .events = POLLIN };
                        if (client_done)
                                (void) poll(NULL, 0, 20);
                        if (client_done || poll(&p, 1, 20) == 0) {
                                bool deleted = false;
                                pthread_mutex_lock(&fp->lock);
                                for (; seen < fp->n_requests; seen++)
                                        deleted |= strcmp(fp->requests[seen]->method, "DELETE") == 0;
                                pthread_mutex_unlock(&fp->lock);
                                if (deleted)
                                        return 0;
                                continue;
                        }
                }
                ssize_t n = recv(c->fd, chunk, sizeof(chunk), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 && a->mode == FAKE_HIJACK_UNTIL_DELETE) {
                        client_done = true;
                        continue;
                }
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                record_hijack_input(fp, r, chunk, (size_t) n);
        }
}

static int send_chunked(struct connection *c, const struct answer *a) {
        const char *body = a->body.data ? a->body.data : "";
        size_t size = a->body.size, n_chunks = 0, limit;
        const char *p;
        int k;

        /* One chunk per line, the way podman flushes NDJSON; a body without newlines goes out
         * in three pieces so it still takes more than one chunk. */
        for (p = body; p < body + size; p++)
                if (*p == '\n' || p == body + size - 1)
                        n_chunks++;
        bool by_line = n_chunks > 1 || (size > 0 && body[size - 1] == '\n');
        if (!by_line)
                n_chunks = size < 3 ? size : 3;
        limit = a->mode == FAKE_CHUNKED_DIE ? n_chunks / 2 : n_chunks;

        for (size_t i = 0, offset = 0; i < limit && offset < size; i++) {
                size_t length;
                char line[32];

                if (by_line) {
                        const char *newline = memchr(body + offset, '\n', size - offset);
                        length = newline ? (size_t) (newline - (body + offset)) + 1 : size - offset;
                } else {
                        length = i + 1 == n_chunks ? size - offset : size / n_chunks;
                }
                snprintf(line, sizeof(line), "%zx\r\n", length);
                struct buffer chunk = {};
                buffer_append(&chunk, line, strlen(line));
                buffer_append(&chunk, body + offset, length);
                buffer_append(&chunk, "\r\n", 2);
                k = send_all(c->fd, chunk.data, chunk.size);
                buffer_free(&chunk);
                if (k < 0)
                        return k;
                offset += length;
                sleep_ns(CHUNK_DELAY_NS);
        }
        if (a->mode == FAKE_CHUNKED_DIE)
                return -ECONNABORTED;
        return send_all(c->fd, "0\r\n\r\n", 5);
}

/* 0 when the connection can serve another request, < 0 when it must close. */
static int serve_request(struct connection *c, struct request *r, bool keep_alive) {
        struct answer a = {};
        struct buffer head = {};
        bool no_body_status, chunked;
        int k = 0;

        choose_answer(c->server, r, &a);

        if (a.mode == FAKE_DIE_BEFORE_HEAD) {
                k = -ECONNABORTED;
                goto finish;
        }
        if (a.mode == FAKE_HIJACK || a.mode == FAKE_HIJACK_NO_WAIT || a.mode == FAKE_HIJACK_UNTIL_DELETE) {
                k = serve_hijack(c, r, &a);
                if (k >= 0)
                        k = -ECONNABORTED; /* a hijacked connection never returns to HTTP */
                goto finish;
        }

        no_body_status = (a.status >= 100 && a.status < 200) || a.status == 204 || a.status == 304;
        chunked = (a.mode == FAKE_CHUNKED || a.mode == FAKE_CHUNKED_DIE) && !no_body_status;

        buffer_printf(&head, "HTTP/1.1 %d %s\r\n", a.status, reason_phrase(a.status));
        if (a.content_type)
                buffer_printf(&head, "Content-Type: %s\r\n", a.content_type);
        buffer_printf(&head, "Libpod-Api-Version: %s\r\n", a.version);
        if (chunked) {
                buffer_printf(&head, "Transfer-Encoding: chunked\r\n");
        } else if (!no_body_status) {
                size_t advertised = a.body.size;
                /* Dying in the middle of an empty body needs a body to be in the middle of. */
                if (a.mode == FAKE_DIE_MID_BODY && advertised == 0)
                        advertised = 1;
                buffer_printf(&head, "Content-Length: %zu\r\n", advertised);
        }
        if (!keep_alive)
                buffer_printf(&head, "Connection: close\r\n");
        buffer_append(&head, "\r\n", 2);

        if (strcmp(r->method, "HEAD") == 0 || no_body_status) {
                k = send_mode(c->fd, a.mode, head.data, head.size);
        } else if (chunked) {
                k = send_all(c->fd, head.data, head.size);
                if (k >= 0)
                        k = send_chunked(c, &a);
        } else if (a.mode == FAKE_DIE_MID_BODY) {
                buffer_append(&head, a.body.data, a.body.size / 2);
                k = send_all(c->fd, head.data, head.size);
                if (k >= 0)
                        k = -ECONNABORTED;
        } else {
                buffer_append(&head, a.body.data, a.body.size);
                k = send_mode(c->fd, a.mode, head.data, head.size);
        }
        if (k >= 0 && !keep_alive)
                k = -ECONNABORTED;

finish:
        buffer_free(&head);
        answer_free(&a);
        return k;
}

static void *connection_thread(void *userdata) {
        struct connection *c = userdata;
        fake_podman *fp = c->server;

        for (;;) {
                struct request *r = NULL;
                bool keep_alive;
                int k;

                k = read_request(c, &r);
                if (k == -EBADMSG || k == -E2BIG) {
                        static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                        (void) send_all(c->fd, bad, sizeof(bad) - 1);
                }
                if (k <= 0)
                        break;

                keep_alive = !r->http10 && !header_has_token(r, "Connection", "close");
                size_t index = record_request(fp, r); /* the log owns it from here */
                pthread_mutex_lock(&fp->lock);
                fake_request_fn hook = fp->request_fn;
                void *hook_userdata = fp->request_userdata;
                pthread_mutex_unlock(&fp->lock);
                if (hook)
                        hook(fp, index, hook_userdata);
                if (serve_request(c, r, keep_alive) < 0)
                        break;
        }

        drain_input(c, NULL);
        pthread_mutex_lock(&fp->lock);
        (void) close(c->fd);
        c->fd = -1;
        c->finished = true;
        pthread_mutex_unlock(&fp->lock);
        return NULL;
}

static void connection_free(struct connection *c) {
        buffer_free(&c->in);
        free(c);
}

/* Joins the threads of connections that ended, so a long test does not pile them up. */
static void reap_connections(fake_podman *fp) {
        struct connection *done = NULL;

        pthread_mutex_lock(&fp->lock);
        for (struct connection **p = &fp->connections; *p;) {
                struct connection *c = *p;
                if (c->finished) {
                        *p = c->next;
                        c->next = done;
                        done = c;
                } else {
                        p = &c->next;
                }
        }
        pthread_mutex_unlock(&fp->lock);

        while (done) {
                struct connection *next = done->next;
                (void) pthread_join(done->thread, NULL);
                connection_free(done);
                done = next;
        }
}

static void *accept_thread(void *userdata) {
        fake_podman *fp = userdata;

        for (;;) {
                struct pollfd fds[2] = {
                        { .fd = fp->listen_fd, .events = POLLIN },
                        { .fd = fp->wake_pipe[0], .events = POLLIN },
                };
                struct connection *c;
                int fd;

                if (poll(fds, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (fds[1].revents)
                        break;
                if (!(fds[0].revents & POLLIN))
                        continue;

                fd = accept4(fp->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                reap_connections(fp);

                c = xzalloc(sizeof(*c));
                c->server = fp;
                c->fd = fd;
                pthread_mutex_lock(&fp->lock);
                c->serial = ++fp->connections_accepted;
                pthread_mutex_unlock(&fp->lock);
                if (pthread_create(&c->thread, NULL, connection_thread, c) != 0) {
                        (void) close(fd);
                        connection_free(c);
                        continue;
                }
                pthread_mutex_lock(&fp->lock);
                c->next = fp->connections;
                fp->connections = c;
                pthread_mutex_unlock(&fp->lock);
        }
        return NULL;
}

fake_podman *fake_podman_start(void) {
        struct sockaddr_un address = { .sun_family = AF_UNIX };
        const char *tmpdir = getenv("TMPDIR");
        fake_podman *fp;
        int saved_errno;

        fp = xzalloc(sizeof(*fp));
        fp->listen_fd = -1;
        fp->wake_pipe[0] = fp->wake_pipe[1] = -1;
        fp->routes_tail = &fp->routes;
        fp->version = xstrdup("4.3.1");
        pthread_mutex_init(&fp->lock, NULL);
        pthread_cond_init(&fp->recorded, NULL);

        /* A long TMPDIR would not leave room for the socket name in sun_path. */
        if (!tmpdir || *tmpdir != '/' || strlen(tmpdir) > 60)
                tmpdir = "/tmp";
        snprintf(fp->directory, sizeof(fp->directory), "%s/fake-podman-XXXXXX", tmpdir);
        if (!mkdtemp(fp->directory)) {
                fp->directory[0] = '\0';
                goto fail;
        }
        snprintf(fp->socket_path, sizeof(fp->socket_path), "%s/podman.sock", fp->directory);
        memcpy(address.sun_path, fp->socket_path, sizeof(fp->socket_path));

        fp->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fp->listen_fd < 0)
                goto fail;
        if (bind(fp->listen_fd, (struct sockaddr *) &address, sizeof(address)) < 0)
                goto fail;
        if (listen(fp->listen_fd, 64) < 0)
                goto fail;
        if (pipe2(fp->wake_pipe, O_CLOEXEC) < 0)
                goto fail;
        errno = pthread_create(&fp->accept_thread, NULL, accept_thread, fp);
        if (errno != 0)
                goto fail;
        fp->accept_thread_started = true;
        return fp;

fail:
        saved_errno = errno;
        fake_podman_stop(fp);
        errno = saved_errno;
        return NULL;
}

void fake_podman_stop(fake_podman *fp) {
        if (!fp)
                return;

        if (fp->accept_thread_started) {
                (void) write(fp->wake_pipe[1], "x", 1);
                (void) pthread_join(fp->accept_thread, NULL);
        }

        /* No new connections now. Shutting a socket down wakes its thread from recv and
         * fails its next send, so every connection thread comes to an end. */
        pthread_mutex_lock(&fp->lock);
        for (struct connection *c = fp->connections; c; c = c->next)
                if (c->fd >= 0)
                        (void) shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&fp->lock);
        while (fp->connections) {
                struct connection *c = fp->connections;
                fp->connections = c->next;
                (void) pthread_join(c->thread, NULL);
                connection_free(c);
        }

        if (fp->listen_fd >= 0)
                (void) close(fp->listen_fd);
        for (int i = 0; i < 2; i++)
                if (fp->wake_pipe[i] >= 0)
                        (void) close(fp->wake_pipe[i]);
        if (fp->socket_path[0])
                (void) unlink(fp->socket_path);
        if (fp->directory[0])
                (void) rmdir(fp->directory);

        while (fp->routes) {
                struct route *route = fp->routes;
                fp->routes = route->next;
                free(route->method);
                free(route->glob);
                free(route->query_glob);
                free(route->content_type);
                buffer_free(&route->body);
                free(route);
        }
        for (size_t i = 0; i < fp->n_requests; i++)
                request_free(fp->requests[i]);
        free(fp->requests);
        buffer_free(&fp->hijack_output);
        free(fp->version);
        pthread_cond_destroy(&fp->recorded);
        pthread_mutex_destroy(&fp->lock);
        free(fp);
}

const char *fake_podman_socket(fake_podman *fp) {
        return fp->socket_path;
}

void fake_podman_set_version(fake_podman *fp, const char *version) {
        char *copy = xstrdup(version);

        pthread_mutex_lock(&fp->lock);
        free(fp->version);
        fp->version = copy;
        pthread_mutex_unlock(&fp->lock);
}

void fake_podman_route_bytes(fake_podman *fp, const char *method, const char *path_pattern, int status,
                             const char *content_type, const void *body, size_t body_size,
                             fake_mode mode, int times) {
        struct route *route = xzalloc(sizeof(*route));

        route->method = xstrdup(method);
        const char *query = strchr(path_pattern, '?');
        size_t path_length = query ? (size_t) (query - path_pattern) : strlen(path_pattern);
        if (asprintf(&route->glob, "*%.*s", (int) path_length, path_pattern) < 0)
                abort();
        route->query_glob = query ? xstrdup(query + 1) : NULL;
        route->status = status;
        route->content_type = xstrdup(content_type);
        buffer_append(&route->body, body, body ? body_size : 0);
        route->mode = mode;
        route->times = times;

        pthread_mutex_lock(&fp->lock);
        *fp->routes_tail = route;
        fp->routes_tail = &route->next;
        pthread_mutex_unlock(&fp->lock);
}

void fake_podman_route(fake_podman *fp, const char *method, const char *path_pattern, int status,
                       const char *content_type, const char *body, fake_mode mode, int times) {
        fake_podman_route_bytes(fp, method, path_pattern, status, content_type, body,
                                body ? strlen(body) : 0, mode, times);
}

void fake_podman_set_request_hook(fake_podman *fp, fake_request_fn fn, void *userdata) {
        pthread_mutex_lock(&fp->lock);
        fp->request_fn = fn;
        fp->request_userdata = userdata;
        pthread_mutex_unlock(&fp->lock);
}

void fake_podman_set_hijack_output(fake_podman *fp, const void *data, size_t size) {
        pthread_mutex_lock(&fp->lock);
        buffer_consume(&fp->hijack_output, fp->hijack_output.size);
        buffer_append(&fp->hijack_output, data, data ? size : 0);
        pthread_mutex_unlock(&fp->lock);
}

size_t fake_podman_routes_pending(fake_podman *fp) {
        size_t pending = 0;

        pthread_mutex_lock(&fp->lock);
        for (struct route *route = fp->routes; route; route = route->next)
                if (route->times > 0 && route->answered < route->times)
                        pending++;
        pthread_mutex_unlock(&fp->lock);
        return pending;
}

size_t fake_podman_request_count(fake_podman *fp) {
        size_t n;

        pthread_mutex_lock(&fp->lock);
        n = fp->n_requests;
        pthread_mutex_unlock(&fp->lock);
        return n;
}

bool fake_podman_wait_requests(fake_podman *fp, size_t n, int timeout_ms) {
        struct timespec deadline;
        bool reached;

        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }

        pthread_mutex_lock(&fp->lock);
        while (fp->n_requests < n)
                if (pthread_cond_timedwait(&fp->recorded, &fp->lock, &deadline) == ETIMEDOUT)
                        break;
        reached = fp->n_requests >= n;
        pthread_mutex_unlock(&fp->lock);
        return reached;
}

/* Recorded requests never move or change once logged (only the array of pointers to them
 * grows), so handing out pointers into them after dropping the lock is safe. */
static struct request *request_at(fake_podman *fp, size_t i) {
        struct request *r = NULL;

        pthread_mutex_lock(&fp->lock);
        if (i < fp->n_requests)
                r = fp->requests[i];
        pthread_mutex_unlock(&fp->lock);
        return r;
}

const char *fake_podman_request_method(fake_podman *fp, size_t i) {
        struct request *r = request_at(fp, i);
        return r ? r->method : NULL;
}

const char *fake_podman_request_path(fake_podman *fp, size_t i) {
        struct request *r = request_at(fp, i);
        return r ? r->path : NULL;
}

const char *fake_podman_request_header(fake_podman *fp, size_t i, const char *name) {
        struct request *r = request_at(fp, i);
        return r ? request_header(r, name) : NULL;
}

const char *fake_podman_request_body(fake_podman *fp, size_t i) {
        struct request *r = request_at(fp, i);
        return r ? r->body.data : NULL;
}

size_t fake_podman_request_body_size(fake_podman *fp, size_t i) {
        struct request *r = request_at(fp, i);
        return r ? r->body.size : 0;
}

unsigned fake_podman_request_connection(fake_podman *fp, size_t i) {
        struct request *r = request_at(fp, i);
        return r ? r->connection : 0;
}

const char *fake_podman_hijack_input(fake_podman *fp, size_t *ret_size) {
        const char *data = NULL;
        size_t size = 0;

        pthread_mutex_lock(&fp->lock);
        if (fp->last_hijack) {
                /* An empty stream still reads as "" rather than NULL: a hijack did happen. */
                buffer_append(&fp->last_hijack->hijack_input, NULL, 0);
                data = fp->last_hijack->hijack_input.data;
                size = fp->last_hijack->hijack_input.size;
        }
        pthread_mutex_unlock(&fp->lock);
        if (ret_size)
                *ret_size = size;
        return data;
}

ssize_t fake_podman_find_request(fake_podman *fp, const char *method, const char *needle)
{
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (strcmp(fake_podman_request_method(fp, i), method) == 0 &&
                    strstr(fake_podman_request_path(fp, i), needle))
                        return (ssize_t) i;
        return -1;
}

size_t fake_podman_frame(uint8_t *buf, int stream, const char *text)
{
        size_t n = strlen(text);
        /* The stream, three bytes of padding, the size in four bytes, most significant first. */
        buf[0] = (uint8_t) stream;
        buf[1] = buf[2] = buf[3] = 0;
        for (size_t i = 0; i < 4; i++)
                buf[4 + i] = (uint8_t) (n >> (24 - 8 * i));
        memcpy(buf + 8, text, n);
        return n + 8;
}
