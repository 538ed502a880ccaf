/* SPDX-License-Identifier: MIT */
/* Tests of the fake libpod server itself, driven with plain libcurl the way libaisb drives the
 * real service: if a mode does not produce the failure it promises here, tests of the library
 * built on it would prove nothing. The CURLcode each failure mode yields is pinned down too,
 * since the library's error mapping depends on it. */

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "fake-podman.h"
#include "../suite-table.h"

#define API "http://d/v4.0.0/libpod"

struct response {
        char *body;
        size_t size;
        unsigned writes; /* how many pieces curl delivered the body in */
        char *headers;
        size_t headers_size;
        long status;
};

/* Each test owns its server (the fixture runs in the test's own process: a failing test's
 * process exits and takes the server along) and a response to fill. */
static fake_podman *fp;
static struct response r;

static void append(char **data, size_t *size, const void *p, size_t n) {
        *data = realloc(*data, *size + n + 1);
        ck_assert_ptr_nonnull(*data);
        memcpy(*data + *size, p, n);
        *size += n;
        (*data)[*size] = '\0';
}

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        struct response *resp = userdata;
        append(&resp->body, &resp->size, p, size * n);
        resp->writes++;
        return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata) {
        struct response *resp = userdata;
        append(&resp->headers, &resp->headers_size, p, size * n);
        return size * n;
}

static void response_free(struct response *resp) {
        free(resp->body);
        free(resp->headers);
        *resp = (struct response) {};
}

static void setup(void) {
        fp = fake_podman_start();
        ck_assert_ptr_nonnull(fp);
        r = (struct response) {};
}

/* A test that stopped its server itself leaves fp NULL. */
static void teardown(void) {
        response_free(&r);
        fake_podman_stop(fp);
}

static CURL *new_handle(void) {
        CURL *h = curl_easy_init();
        ck_assert_ptr_nonnull(h);
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, fake_podman_socket(fp));
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
        return h;
}

/* One request on handle h (reused across calls to test keep-alive). The response is reset
 * first; body may be NULL. */
static CURLcode perform(CURL *h, const char *method, const char *url, const char *body, struct response *resp) {
        struct curl_slist *headers = NULL;
        CURLcode code;

        response_free(resp);
        append(&resp->body, &resp->size, "", 0);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
        if (body) {
                /* See podman-api.md: without a Content-Type the body vanishes on a real server. */
                headers = curl_slist_append(headers, "Content-Type: application/json");
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
        } else {
                curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        code = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(headers);
        return code;
}

static CURLcode perform_once(const char *method, const char *url, const char *body, struct response *resp) {
        CURL *h = new_handle();
        CURLcode code = perform(h, method, url, body, resp);
        curl_easy_cleanup(h);
        return code;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

START_TEST(test_normal) {

        fake_podman_route(fp, "GET", "/info", 200, "application/json", "{\"host\":{}}", FAKE_NORMAL, 0);
        ck_assert_int_eq(perform_once("GET", API "/info", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "{\"host\":{}}");
        ck_assert_ptr_nonnull(strstr(r.headers, "Libpod-Api-Version: 4.3.1\r\n"));
        ck_assert_ptr_nonnull(strstr(r.headers, "Content-Length: 11\r\n"));
        ck_assert_ptr_nonnull(strstr(r.headers, "Content-Type: application/json\r\n"));
}
END_TEST

START_TEST(test_ping_and_version) {

        ck_assert_int_eq(perform_once("GET", "http://d/_ping", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "OK");
        ck_assert_ptr_nonnull(strstr(r.headers, "Libpod-Api-Version: 4.3.1\r\n"));

        fake_podman_set_version(fp, "5.2.0");
        ck_assert_int_eq(perform_once("GET", API "/_ping", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "OK");
        ck_assert_ptr_nonnull(strstr(r.headers, "Libpod-Api-Version: 5.2.0\r\n"));

        /* A route overrides the built-in answer. */
        fake_podman_route(fp, "GET", "/_ping", 500, "text/plain", "down", FAKE_NORMAL, 1);
        ck_assert_int_eq(perform_once("GET", "http://d/_ping", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 500);
        ck_assert_str_eq(r.body, "down");
}
END_TEST

START_TEST(test_trickle) {
        char body[301];

        for (size_t i = 0; i < sizeof(body) - 1; i++)
                body[i] = (char) ('a' + i % 26);
        body[sizeof(body) - 1] = '\0';
        fake_podman_route(fp, "GET", "/containers/x/json", 200, "application/json", body, FAKE_TRICKLE, 0);
        ck_assert_int_eq(perform_once("GET", API "/containers/x/json", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, body);
        /* Intact, yet delivered in many pieces: the partial reads really happened. */
        ck_assert_uint_gt(r.writes, 10);
}
END_TEST

START_TEST(test_die_mid_body) {

        fake_podman_route(fp, "GET", "/info", 200, "application/json", "{\"host\":{\"rootless\":true}}", FAKE_DIE_MID_BODY, 0);
        ck_assert_int_eq(perform_once("GET", API "/info", NULL, &r), CURLE_PARTIAL_FILE);
        ck_assert_int_eq(r.status, 200);
        ck_assert_uint_eq(r.size, strlen("{\"host\":{\"rootless\":true}}") / 2);
}
END_TEST

START_TEST(test_die_before_head) {

        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", "{\"Id\":\"x\"}", FAKE_DIE_BEFORE_HEAD, 0);
        ck_assert_int_eq(perform_once("POST", API "/containers/create", "{}", &r), CURLE_GOT_NOTHING);
        ck_assert_uint_eq(r.size, 0);
        ck_assert(fake_podman_wait_requests(fp, 1, 1000));
        ck_assert_uint_eq(fake_podman_request_count(fp), 1);
}
END_TEST

/* On a reused connection that closes without a byte of answer, libcurl does not report an
 * error: it silently resends the request (even a POST) on a fresh connection. Tests of the
 * library must expect to see such a request twice. */
START_TEST(test_die_before_head_reused) {
        CURL *h = new_handle();

        fake_podman_route(fp, "GET", "/info", 200, "application/json", "{}", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/x/start", 0, NULL, NULL, FAKE_DIE_BEFORE_HEAD, 1);
        fake_podman_route(fp, "POST", "/containers/x/start", 204, NULL, NULL, FAKE_NORMAL, 0);
        ck_assert_int_eq(perform(h, "GET", API "/info", NULL, &r), CURLE_OK);
        ck_assert_int_eq(perform(h, "POST", API "/containers/x/start", "{}", &r), CURLE_OK);
        ck_assert_int_eq(r.status, 204);
        ck_assert_uint_eq(fake_podman_request_count(fp), 3);
        ck_assert_uint_eq(fake_podman_request_connection(fp, 0), 1);
        ck_assert_uint_eq(fake_podman_request_connection(fp, 1), 1);
        ck_assert_uint_eq(fake_podman_request_connection(fp, 2), 2);
        curl_easy_cleanup(h);
}
END_TEST

START_TEST(test_chunked) {
        static const char ndjson[] =
                "{\"stream\":\"STEP 1/2: FROM scratch\\n\"}\n"
                "{\"stream\":\"STEP 2/2: COPY . /\\n\"}\n"
                "{\"stream\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\\n\"}\n";

        fake_podman_route(fp, "POST", "/build", 200, "application/json", ndjson, FAKE_CHUNKED, 0);
        ck_assert_int_eq(perform_once("POST", API "/build?t=x", "tar", &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, ndjson);
        ck_assert_uint_ge(r.writes, 3);
        ck_assert_ptr_nonnull(strstr(r.headers, "Transfer-Encoding: chunked\r\n"));
        ck_assert_ptr_null(strstr(r.headers, "Content-Length"));

        /* An empty chunked body is just the terminating chunk. */
        fake_podman_route(fp, "GET", "/x", 200, "application/json", "", FAKE_CHUNKED, 0);
        ck_assert_int_eq(perform_once("GET", API "/x", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "");
}
END_TEST

START_TEST(test_chunked_die) {
        static const char ndjson[] = "{\"stream\":\"a\"}\n{\"stream\":\"b\"}\n{\"stream\":\"c\"}\n{\"stream\":\"d\"}\n";

        fake_podman_route(fp, "POST", "/build", 200, "application/json", ndjson, FAKE_CHUNKED_DIE, 0);
        ck_assert_int_eq(perform_once("POST", API "/build", "tar", &r), CURLE_PARTIAL_FILE);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "{\"stream\":\"a\"}\n{\"stream\":\"b\"}\n");
}
END_TEST

START_TEST(test_keep_alive) {
        CURL *h = new_handle();
        long connects = -1;

        fake_podman_route(fp, "GET", "/containers/json", 200, "application/json", "[]", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/x/wait", 200, "application/json", "0\n", FAKE_NORMAL, 0);
        ck_assert_int_eq(perform(h, "GET", API "/containers/json?all=true", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[]");
        ck_assert_int_eq(perform(h, "POST", API "/containers/x/wait", "", &r), CURLE_OK);
        ck_assert_str_eq(r.body, "0\n");
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
        ck_assert_int_eq(connects, 0);
        ck_assert_uint_eq(fake_podman_request_count(fp), 2);
        ck_assert_uint_eq(fake_podman_request_connection(fp, 0), fake_podman_request_connection(fp, 1));
        curl_easy_cleanup(h);
}
END_TEST

START_TEST(test_route_order_and_times) {

        fake_podman_route(fp, "DELETE", "/containers/x", 409, "application/json", "{\"response\":409}", FAKE_NORMAL, 2);
        fake_podman_route(fp, "DELETE", "/containers/x", 200, "application/json", "[]", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/*/wait", 200, "application/json", "137", FAKE_NORMAL, 1);
        ck_assert_uint_eq(fake_podman_routes_pending(fp), 2);

        ck_assert_int_eq(perform_once("DELETE", API "/containers/x?force=true", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 409);
        ck_assert_int_eq(perform_once("DELETE", API "/containers/x?force=true", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 409);
        ck_assert_int_eq(perform_once("DELETE", API "/containers/x", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(perform_once("DELETE", API "/containers/x", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_uint_eq(fake_podman_routes_pending(fp), 1);

        /* The method must match, and the path is matched without its query. */
        ck_assert_int_eq(perform_once("GET", API "/containers/abc123/wait", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 404);
        ck_assert_int_eq(perform_once("POST", API "/containers/abc123/wait?condition=stopped", "", &r), CURLE_OK);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(r.body, "137");
        ck_assert_uint_eq(fake_podman_routes_pending(fp), 0);
        ck_assert_int_eq(perform_once("POST", API "/containers/abc123/wait", "", &r), CURLE_OK);
        ck_assert_int_eq(r.status, 404);
}
END_TEST

START_TEST(test_route_query) {

        /* The same path, told apart by the filter in its (percent-encoded) query. */
        fake_podman_route(fp, "GET", "/containers/json?*volume*aisb-home-a*", 200, "application/json", "[\"a\"]", FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/containers/json?all=true", 200, "application/json", "[\"all\"]", FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/containers/json", 200, "application/json", "[]", FAKE_NORMAL, 0);

        ck_assert_int_eq(perform_once("GET", API "/containers/json?all=true&filters=%7B%22volume%22%3A%5B%22aisb-home-a%22%5D%7D", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[\"a\"]");
        ck_assert_int_eq(perform_once("GET", API "/containers/json?all=true&filters=%7B%22volume%22%3A%5B%22aisb-home-b%22%5D%7D", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[]");
        /* The query glob matches the whole query, not a part of it. */
        ck_assert_int_eq(perform_once("GET", API "/containers/json?all=true", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[\"all\"]");
        ck_assert_int_eq(perform_once("GET", API "/containers/json?all=truest", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[]");
        /* No query: an empty one, which "*" matches and "all=true" does not. */
        ck_assert_int_eq(perform_once("GET", API "/containers/json", NULL, &r), CURLE_OK);
        ck_assert_str_eq(r.body, "[]");
        /* The log keeps the target as sent. */
        ck_assert_str_eq(fake_podman_request_path(fp, 0),
                         "/v4.0.0/libpod/containers/json?all=true&filters=%7B%22volume%22%3A%5B%22aisb-home-a%22%5D%7D");
}
END_TEST

struct hook_seen {
        size_t calls;
        size_t last_index;
        char last_method[16];
        size_t logged; /* the log's length when the hook ran */
};

static void on_request(fake_podman *server, size_t index, void *userdata) {
        struct hook_seen *h = userdata;

        h->calls++;
        h->last_index = index;
        snprintf(h->last_method, sizeof(h->last_method), "%s", fake_podman_request_method(server, index));
        h->logged = fake_podman_request_count(server);
}

START_TEST(test_request_hook) {
        struct hook_seen h = {};

        fake_podman_route(fp, "DELETE", "/containers/x", 200, "application/json", "[]", FAKE_NORMAL, 0);
        fake_podman_set_request_hook(fp, on_request, &h);
        ck_assert_int_eq(perform_once("GET", API "/_ping", NULL, &r), CURLE_OK);
        ck_assert_int_eq(perform_once("DELETE", API "/containers/x", NULL, &r), CURLE_OK);
        /* Called once per request, with it already in the log, before the client's answer. */
        ck_assert_uint_eq(h.calls, 2);
        ck_assert_uint_eq(h.last_index, 1);
        ck_assert_str_eq(h.last_method, "DELETE");
        ck_assert_uint_eq(h.logged, 2);
        fake_podman_set_request_hook(fp, NULL, NULL);
        ck_assert_int_eq(perform_once("GET", API "/_ping", NULL, &r), CURLE_OK);
        ck_assert_uint_eq(h.calls, 2);
}
END_TEST

START_TEST(test_not_found) {

        ck_assert_int_eq(perform_once("GET", API "/images/x/exists", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 404);
        ck_assert_str_eq(r.body, "{\"cause\":\"no route\",\"message\":\"fake: no route for GET /v4.0.0/libpod/images/x/exists\",\"response\":404}\n");
        ck_assert_ptr_nonnull(strstr(r.headers, "Libpod-Api-Version: 4.3.1\r\n"));

        /* Quotes in a query must not break the JSON. */
        ck_assert_int_eq(perform_once("GET", API "/containers/json?filters={\"label\":[\"a=b\"]}", NULL, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 404);
        ck_assert_ptr_nonnull(strstr(r.body, "json?filters={\\\"label\\\":[\\\"a=b\\\"]}\",\"response\":404}"));
}
END_TEST

START_TEST(test_recording) {
        static const char create[] = "{\"name\":\"job1\",\"image\":\"localhost/x:tag\",\"cap_drop\":[\"ALL\"]}";

        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", "{\"Id\":\"abc\",\"Warnings\":[]}", FAKE_NORMAL, 1);
        ck_assert_int_eq(perform_once("POST", API "/containers/create?name=job1", create, &r), CURLE_OK);
        ck_assert_int_eq(r.status, 201);
        ck_assert_str_eq(r.body, "{\"Id\":\"abc\",\"Warnings\":[]}");

        ck_assert_uint_eq(fake_podman_request_count(fp), 1);
        ck_assert_str_eq(fake_podman_request_method(fp, 0), "POST");
        ck_assert_str_eq(fake_podman_request_path(fp, 0), "/v4.0.0/libpod/containers/create?name=job1");
        ck_assert_str_eq(fake_podman_request_header(fp, 0, "content-type"), "application/json");
        ck_assert_str_eq(fake_podman_request_header(fp, 0, "Host"), "d");
        ck_assert_ptr_null(fake_podman_request_header(fp, 0, "X-Missing"));
        ck_assert_str_eq(fake_podman_request_body(fp, 0), create);
        ck_assert_uint_eq(fake_podman_request_body_size(fp, 0), strlen(create));
        ck_assert_ptr_null(fake_podman_request_method(fp, 1));
        ck_assert_ptr_null(fake_podman_request_body(fp, 1));
}
END_TEST

struct upload {
        const char *data;
        size_t size;
        size_t offset;
};

static size_t on_read(char *buffer, size_t size, size_t n, void *userdata) {
        struct upload *u = userdata;
        size_t length = size * n;

        /* Small pieces, so the chunked request body really has several chunks. */
        if (length > 700)
                length = 700;
        if (length > u->size - u->offset)
                length = u->size - u->offset;
        memcpy(buffer, u->data + u->offset, length);
        u->offset += length;
        return length;
}

/* A body of unknown size goes out chunked, and a large one makes curl send Expect:
 * 100-continue, which must be answered at once (curl would otherwise stall for a second). */
START_TEST(test_chunked_request_body) {
        struct curl_slist *headers = NULL;
        struct upload u = {};
        char *tar = malloc(5000);
        CURL *h = new_handle();
        double start;

        ck_assert_ptr_nonnull(tar);
        for (size_t i = 0; i < 5000; i++)
                tar[i] = (char) (i % 251); /* NUL bytes included */
        u = (struct upload) { .data = tar, .size = 5000 };
        fake_podman_route(fp, "POST", "/build", 200, "application/json", "{\"stream\":\"done\\n\"}\n", FAKE_CHUNKED, 1);

        headers = curl_slist_append(headers, "Content-Type: application/x-tar");
        headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
        curl_easy_setopt(h, CURLOPT_URL, API "/build?t=img");
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &u);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
        start = now();
        ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
        ck_assert(now() - start < 0.9);
        ck_assert_str_eq(r.body, "{\"stream\":\"done\\n\"}\n");

        ck_assert_str_eq(fake_podman_request_header(fp, 0, "Transfer-Encoding"), "chunked");
        ck_assert_str_eq(fake_podman_request_header(fp, 0, "Expect"), "100-continue");
        ck_assert_uint_eq(fake_podman_request_body_size(fp, 0), 5000);
        ck_assert_mem_eq(fake_podman_request_body(fp, 0), tar, 5000);

        /* The same body with a known size: Content-Length and Expect. */
        curl_slist_free_all(headers);
        headers = curl_slist_append(NULL, "Content-Type: application/x-tar");
        fake_podman_route(fp, "POST", "/images/import", 200, "application/json", "{}", FAKE_NORMAL, 1);
        curl_easy_setopt(h, CURLOPT_URL, API "/images/import");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, tar);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 5000L);
        start = now();
        ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
        ck_assert(now() - start < 0.9);
        ck_assert_str_eq(fake_podman_request_header(fp, 1, "Content-Length"), "5000");
        ck_assert_uint_eq(fake_podman_request_body_size(fp, 1), 5000);
        ck_assert_mem_eq(fake_podman_request_body(fp, 1), tar, 5000);

        curl_slist_free_all(headers);
        curl_easy_cleanup(h);
        free(tar);
}
END_TEST

/* The attach recipe of podman-api.md: connect only, then speak HTTP over the raw socket. */
static CURL *hijack_connect(curl_socket_t *ret_fd) {
        CURL *h = new_handle();

        curl_easy_setopt(h, CURLOPT_URL, API "/containers/x/attach");
        curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
        ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
        ck_assert_int_eq(curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, ret_fd), CURLE_OK);
        ck_assert_int_ne(*ret_fd, CURL_SOCKET_BAD);
        return h;
}

/* Whether code is curl's "not yet": then fd has been waited for until it is ready for events. */
static bool waited(CURLcode code, curl_socket_t fd, short events) {
        struct pollfd p = { .fd = fd, .events = events };

        if (code != CURLE_AGAIN)
                return false;
        ck_assert_int_eq(poll(&p, 1, 5000), 1);
        return true;
}

static void hijack_send(CURL *h, curl_socket_t fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                size_t n = 0;
                CURLcode code = curl_easy_send(h, p, size, &n);
                if (waited(code, fd, POLLOUT))
                        continue;
                ck_assert_int_eq(code, CURLE_OK);
                p += n;
                size -= n;
        }
}

/* Some bytes, or 0 at EOF. */
static size_t hijack_recv(CURL *h, curl_socket_t fd, char *buffer, size_t size) {
        size_t n;
        CURLcode code;

        do {
                n = 0;
                code = curl_easy_recv(h, buffer, size, &n);
        } while (waited(code, fd, POLLIN));
        ck_assert_int_eq(code, CURLE_OK);
        return n;
}

/* Reads the whole stream up to EOF; the head is checked, the rest returned in *ret_output. */
static void hijack_read_all(CURL *h, curl_socket_t fd, char **ret_output, size_t *ret_size) {
        char *data = NULL, buffer[4096], *head_end;
        size_t size = 0, n;

        append(&data, &size, "", 0);
        while ((n = hijack_recv(h, fd, buffer, sizeof(buffer))) > 0)
                append(&data, &size, buffer, n);
        head_end = strstr(data, "\r\n\r\n");
        ck_assert_ptr_nonnull(head_end);
        ck_assert_int_eq(strncmp(data, "HTTP/1.1 101 UPGRADED\r\n", 23), 0);
        ck_assert_ptr_nonnull(strstr(data, "Content-Type: application/vnd.docker.raw-stream\r\n"));
        ck_assert_ptr_nonnull(strstr(data, "Connection: Upgrade\r\n"));
        ck_assert_ptr_nonnull(strstr(data, "Upgrade: tcp\r\n"));
        ck_assert_ptr_nonnull(strstr(data, "Libpod-Api-Version: 4.3.1\r\n"));
        *ret_size = size - (size_t) (head_end + 4 - data);
        *ret_output = malloc(*ret_size + 1);
        memcpy(*ret_output, head_end + 4, *ret_size);
        free(data);
}

static const char attach_request[] =
        "POST /v4.0.0/libpod/containers/x/attach?stream=true&stdin=true&stdout=true&stderr=true HTTP/1.1\r\n"
        "Host: d\r\n"
        "Connection: Upgrade\r\n"
        "Upgrade: tcp\r\n"
        "\r\n";

/* A stdout frame "hello\n" and a stderr frame "oops\n": 8-byte headers with NULs. */
static const char frames[] = "\1\0\0\0\0\0\0\6hello\n\2\0\0\0\0\0\0\5oops\n";

START_TEST(test_hijack) {
        curl_socket_t fd;
        CURL *h, *other;
        char *output;
        size_t size;

        fake_podman_set_hijack_output(fp, frames, sizeof(frames) - 1);
        fake_podman_route(fp, "POST", "/containers/x/attach", 101, NULL, NULL, FAKE_HIJACK, 1);
        fake_podman_route(fp, "POST", "/containers/x/start", 204, NULL, NULL, FAKE_NORMAL, 1);
        ck_assert_ptr_null(fake_podman_hijack_input(fp, &size));

        h = hijack_connect(&fd);
        hijack_send(h, fd, attach_request, sizeof(attach_request) - 1);

        /* While the stream is open, another connection is served: attach, then start. */
        ck_assert(fake_podman_wait_requests(fp, 1, 5000));
        other = new_handle();
        ck_assert_int_eq(perform(other, "POST", API "/containers/x/start", "", &r), CURLE_OK);
        ck_assert_int_eq(r.status, 204);
        curl_easy_cleanup(other);

        hijack_send(h, fd, "line 1\n", 7);
        hijack_send(h, fd, "line 2\n", 7);
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        hijack_read_all(h, fd, &output, &size);
        ck_assert_uint_eq(size, sizeof(frames) - 1);
        ck_assert_mem_eq(output, frames, size);
        free(output);
        curl_easy_cleanup(h);

        /* The server closes only after it saw EOF, so the input is complete now. */
        const char *input = fake_podman_hijack_input(fp, &size);
        ck_assert_uint_eq(size, 14);
        ck_assert_mem_eq(input, "line 1\nline 2\n", 14);
        ck_assert_str_eq(fake_podman_request_path(fp, 0), "/v4.0.0/libpod/containers/x/attach?stream=true&stdin=true&stdout=true&stderr=true");
        ck_assert_str_eq(fake_podman_request_header(fp, 0, "Upgrade"), "tcp");
        ck_assert_str_eq(fake_podman_request_method(fp, 1), "POST");
        ck_assert_uint_ne(fake_podman_request_connection(fp, 0), fake_podman_request_connection(fp, 1));
}
END_TEST

/* The route's own body wins over the server-wide output; NO_WAIT closes without our EOF. */
START_TEST(test_hijack_no_wait) {
        curl_socket_t fd;
        char *output;
        size_t size;
        CURL *h;

        fake_podman_set_hijack_output(fp, "unused", 6);
        fake_podman_route(fp, "POST", "/attach", 101, NULL, "tty bytes\r\n", FAKE_HIJACK_NO_WAIT, 1);
        h = hijack_connect(&fd);
        hijack_send(h, fd, attach_request, sizeof(attach_request) - 1);
        hijack_read_all(h, fd, &output, &size);
        ck_assert_uint_eq(size, 11);
        ck_assert_mem_eq(output, "tty bytes\r\n", 11);
        free(output);
        curl_easy_cleanup(h);

        ck_assert_ptr_nonnull(fake_podman_hijack_input(fp, &size));
        ck_assert_uint_eq(size, 0);
}
END_TEST

/* Stopping must not hang on clients that keep connections open, idle or hijacked. */
START_TEST(test_stop_with_open_connections) {
        curl_socket_t fd;
        CURL *idle, *h;
        char buffer[256];

        fake_podman_route(fp, "POST", "/attach", 101, NULL, "out", FAKE_HIJACK, 1);
        fake_podman_route(fp, "GET", "/info", 200, "application/json", "{}", FAKE_NORMAL, 0);
        idle = new_handle();
        ck_assert_int_eq(perform(idle, "GET", API "/info", NULL, &r), CURLE_OK);
        h = hijack_connect(&fd);
        hijack_send(h, fd, attach_request, sizeof(attach_request) - 1);
        ck_assert_uint_gt(hijack_recv(h, fd, buffer, sizeof(buffer)), 0);

        fake_podman_stop(fp);
        fp = NULL;
        /* The hijacked client sees the end of its stream. */
        while (hijack_recv(h, fd, buffer, sizeof(buffer)) > 0)
                ;
        curl_easy_cleanup(h);
        curl_easy_cleanup(idle);
        fake_podman_stop(NULL);
}
END_TEST

static Suite *fake_podman_suite(void) {
        Suite *s = suite_create("fake-podman");

        tcase_set_timeout(suite_add_tests(s, "responses", setup, teardown, test_normal, test_ping_and_version,
                                          test_not_found, test_route_order_and_times, test_route_query,
                                          test_request_hook),
                          20);
        tcase_set_timeout(suite_add_tests(s, "modes", setup, teardown, test_trickle, test_die_mid_body,
                                          test_die_before_head, test_die_before_head_reused, test_chunked,
                                          test_chunked_die),
                          20);
        tcase_set_timeout(suite_add_tests(s, "connections", setup, teardown, test_keep_alive, test_recording,
                                          test_chunked_request_body, test_hijack, test_hijack_no_wait,
                                          test_stop_with_open_connections),
                          20);
        return s;
}

int main(void) {
        SRunner *runner;
        int failed;

        if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
                return EXIT_FAILURE;
        runner = srunner_create(fake_podman_suite());
        srunner_run_all(runner, CK_ENV);
        failed = srunner_ntests_failed(runner);
        srunner_free(runner);
        curl_global_cleanup();
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
