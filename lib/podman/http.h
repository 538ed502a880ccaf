/* SPDX-License-Identifier: MIT */
/*
 * The transport: HTTP over a unix socket with libcurl. Plain requests share one easy handle
 * (one keep-alive connection); a hijacked stream (attach) gets its own connection. Nothing
 * here knows what the service is: paths, status codes and bodies are the caller's (podman.c).
 * In a dry run nothing is sent: each request is handed to the caller's function as text and
 * answered with what the request itself says a dry run should see.
 */
#pragma once

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>

#include "aisb.h"
#include "error.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)

/* Asked about once a second while a request waits and as data moves: true aborts it, and
 * the request fails with -ECANCELED. */
typedef bool (*http_cancel_fn)(void *userdata);

typedef struct http_conn {
        char *socket_path;
        CURL *curl; /* plain requests: one keep-alive connection */
        http_cancel_fn cancel_fn;
        void *cancel_userdata;
} http_conn;

/* Talk to path from now on (a connection to another socket is never reused). -ENOMEM. */
int http_conn_set_socket(http_conn *c, const char *path);
void http_conn_done(http_conn *c);

typedef int (*http_line_fn)(const char *line, size_t size, void *userdata);

typedef struct http_request {
        const char *method;
        const char *path; /* absolute, query included */
        const char *content_type;
        const void *body;
        size_t body_size;
        FILE *body_file; /* streamed upload instead of body */
        long long body_file_size;
        http_line_fn line_fn; /* response body delivered line by line (NDJSON) */
        void *line_userdata;
        long timeout_ms;     /* the whole request; 0: none */
        long idle_timeout_s; /* no byte in either direction for this long ends it; 0: none */
} http_request;

typedef struct http_response {
        long status;
        char *body;
        size_t body_size;
        char *api_version; /* Libpod-Api-Version header */
} http_response;

void http_response_done(http_response *r);
/* 0 with the response, whatever its status; -ECONNREFUSED, -ETIMEDOUT, -ECANCELED, -EIO with
 * one line naming the request, or the negative errno a line_fn returned. */
int http_send(http_conn *c, const http_request *req, http_response *ret, aisb_error **err);
/* s escaped for a URL's path or query, in malloc memory; NULL when out of memory. */
char *http_escape(const char *s);

/* A hijacked connection: the request, its "101 Switching Protocols" head, then raw bytes. */
typedef struct http_stream {
        CURL *curl;
        int fd;
        buffer leftover; /* stream bytes that arrived with the response head */
} http_stream;
#define HTTP_STREAM_NULL ((http_stream) { .fd = -1 })
/* POST path with Connection: Upgrade. A refusal's first body line comes back through
 * refusal_fn (may be NULL) for the message. In a dry run: the request shown, no stream. */
int http_hijack(http_conn *c, const char *path,
                const char *(*refusal_fn)(const char *body), http_stream *ret, aisb_error **err);
void http_stream_done(http_stream *s);
