/* SPDX-License-Identifier: MIT */
/* A fake libpod REST API server for unit tests. It listens on a unix socket in a fresh
 * temporary directory, answers from a table of canned routes, and records every request it
 * saw, so a test can point libaisb at it and then check both what the library did with the
 * answers and what it sent. Its modes reproduce what a real service does to a client on a bad
 * day: partial reads, a connection that dies mid-body or before answering, chunked NDJSON
 * streams and a hijacked attach stream.
 *
 * Test-only code: it aborts on out-of-memory instead of reporting it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct fake_podman fake_podman;

typedef enum fake_mode {
        FAKE_NORMAL = 0,      /* head and body in one write */
        FAKE_TRICKLE,         /* one byte per write with a short sleep in between: partial reads */
        FAKE_DIE_MID_BODY,    /* head (with the full Content-Length) and half the body, then close */
        FAKE_DIE_BEFORE_HEAD, /* read and record the request, then close without answering */
        FAKE_HIJACK,          /* status line (use 101), upgrade headers, then the hijack output raw;
                               * record what the client sends until it half-closes, then close */
        FAKE_CHUNKED,         /* Transfer-Encoding: chunked, one chunk per body line (NDJSON) */
        FAKE_HIJACK_NO_WAIT,  /* like FAKE_HIJACK, but close right after the output without
                               * waiting for the client's EOF (a container that exits at once) */
        FAKE_CHUNKED_DIE,     /* like FAKE_CHUNKED, but close after half the chunks, without the
                               * terminating zero-size chunk (a service that died mid-build) */
        FAKE_HIJACK_UNTIL_DELETE, /* like FAKE_HIJACK, but the stream stays open (recording the
                               * client's input) until a DELETE request arrives: a container
                               * that runs until it is removed */
} fake_mode;

/* Starts the server thread on a fresh socket; NULL (errno set) when it cannot. */
fake_podman *fake_podman_start(void);
/* Stops every thread, unlinks the socket and its directory, frees everything. NULL-safe. */
void fake_podman_stop(fake_podman *fp);

const char *fake_podman_socket(fake_podman *fp);
/* The Libpod-Api-Version header of every response; "4.3.1" unless set. */
void fake_podman_set_version(fake_podman *fp, const char *version);

/* Queue a canned answer. A route matches a request when the method is equal and the request's
 * path without its query matches the shell glob "*" + path_pattern (fnmatch, no flags); so a
 * plain "/containers/create" matches as a suffix of "/v4.0.0/libpod/containers/create", and
 * a '*' between "/containers/" and "/wait" matches any container's wait. Routes are
 * consulted in the order they were added; the first matching one that has answers left wins.
 * A route answers `times` requests, 0 meaning unlimited. content_type may be NULL (no header).
 * Unmatched requests get 404 with a libpod-style JSON error (newline-terminated, as podman
 * sends it); GET/HEAD .../_ping gets 200 "OK" unless a route says otherwise. Start patterns
 * with a "/": "x/json" would also match ".../containers/box/json". A pattern holding a '?'
 * matches the query too: its part before the '?' matches the path as above, and its part
 * after it must match the whole query, percent-decoded (fnmatch, no flags). So
 * "/containers/json?*volume*aisb-home-a*" answers only the list filtered by that volume (a
 * '[' of JSON text needs a '*' over it, or "\\[" in a C string). */
void fake_podman_route(fake_podman *fp, const char *method, const char *path_pattern, int status,
                       const char *content_type, const char *body, fake_mode mode, int times);
/* The same with a body that may hold NUL bytes. */
void fake_podman_route_bytes(fake_podman *fp, const char *method, const char *path_pattern, int status,
                             const char *content_type, const void *body, size_t body_size,
                             fake_mode mode, int times);
/* What hijack routes write after their head: the route's own body when it is not empty,
 * otherwise this (multiplexed frames or raw tty bytes, as the test needs). */
void fake_podman_set_hijack_output(fake_podman *fp, const void *data, size_t size);
/* How many routes with a finite `times` still have answers left: 0 once a test's scripted
 * exchange was consumed entirely. */
size_t fake_podman_routes_pending(fake_podman *fp);

/* Called for every request, in the thread of its connection, once it is in the request log
 * and before it is answered, with its index in the log: a test's way to act at an exact
 * point of an exchange (write a file squid would write, listen on a port, cancel) before the
 * client sees the answer. The hook may call the request log's functions below; NULL removes
 * it. */
typedef void (*fake_request_fn)(fake_podman *fp, size_t index, void *userdata);
void fake_podman_set_request_hook(fake_podman *fp, fake_request_fn fn, void *userdata);

/* The request log. A request is recorded once its head and body are read, before it is
 * answered, so once a client has its answer the request is in the log. Strings stay valid
 * until fake_podman_stop(); an index out of range gives NULL (or 0). */
size_t fake_podman_request_count(fake_podman *fp);
/* Waits until at least n requests were recorded; false on timeout. For requests whose answer
 * the client never sees (FAKE_DIE_BEFORE_HEAD racing a client that gave up). */
bool fake_podman_wait_requests(fake_podman *fp, size_t n, int timeout_ms);
const char *fake_podman_request_method(fake_podman *fp, size_t i);
/* The request target as sent: path with query, not decoded. */
const char *fake_podman_request_path(fake_podman *fp, size_t i);
/* The first header of that name (case-insensitive), its value trimmed; NULL when absent. */
const char *fake_podman_request_header(fake_podman *fp, size_t i, const char *name);
/* The body after Content-Length or chunked decoding, NUL-terminated for convenience. */
const char *fake_podman_request_body(fake_podman *fp, size_t i);
size_t fake_podman_request_body_size(fake_podman *fp, size_t i);
/* Which connection carried the request: 1 for the first one accepted, 2 for the next... so a
 * test can tell a reused connection from a fresh one. */
unsigned fake_podman_request_connection(fake_podman *fp, size_t i);
/* The index of the first request with this method whose target contains needle, or -1. */
ssize_t fake_podman_find_request(fake_podman *fp, const char *method, const char *needle);
/* One frame of the attach stream's multiplexed format (stream, length, text) into buf, which
 * holds 8 + strlen(text) bytes; returns that size. */
size_t fake_podman_frame(uint8_t *buf, int stream, const char *text);

/* Bytes the client sent on the most recent hijacked stream (NULL and 0 before any). Stable
 * once that stream ended, i.e. once the client saw the server's EOF. */
const char *fake_podman_hijack_input(fake_podman *fp, size_t *ret_size);
