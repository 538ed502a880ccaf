/* SPDX-License-Identifier: MIT */
/*
 * The podman API as aisb uses it: one typed call per thing aisb asks of the libpod service.
 * Every path, query, status code and error body of libpod is here, and only here: a port to another API version touches this file. Each call takes a connected
 * context, bounds its request by the context's timeout (builds and imports by 30 minutes
 * without a byte), and on failure sets *err to one line naming what was asked.
 *
 * Calls return 0 on success, or a negative errno; *_exists and podman_container_inspect
 * return 1 (there) or 0 (not).
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "service.h"
#include "http.h"

/* The libpod API version aisb speaks (podman 4.3 and later answer it). */
#define PODMAN_API_PREFIX "/v4.0.0"
/* A build or import step may print nothing for this long; longer means a hung service. */
#define PODMAN_BUILD_IDLE_TIMEOUT_S 1800L

/* The message of a libpod JSON error body ("message"), or its first line; never a control
 * character. Valid until the next call on this thread. */
const char *podman_error_message(const http_response *r);

int podman_info(aisb_ctx *ctx, json_object **ret, aisb_error **err);

/* The calls a run makes, for the dry run's text: "METHOD PATH\n" of one on name (NULL for a
 * call on none), the same the call sends, then body and a newline when there is one,
 * appended to v. -ENOMEM. */
typedef enum podman_call {
        PODMAN_IMAGE_EXISTS,
        PODMAN_IMAGE_BUILD,
        PODMAN_IMAGE_IMPORT,
        PODMAN_VOLUME_EXISTS,
        PODMAN_VOLUME_CREATE,
        PODMAN_CONTAINER_CREATE,
        PODMAN_CONTAINER_ATTACH,
        PODMAN_CONTAINER_START,
        PODMAN_CONTAINER_WAIT,
        PODMAN_CONTAINER_REMOVE,
} podman_call;
int podman_call_push(char ***v, podman_call call, const char *name, const char *body);

/* ---- images ---- */
int podman_image_exists(aisb_ctx *ctx, const char *ref, aisb_error **err);
/* Build tag from a tar context (layers cached); each line of the service's NDJSON answer to
 * line_fn. */
int podman_image_build(aisb_ctx *ctx, const char *tag, const void *tar, size_t size, http_line_fn line_fn,
                       void *userdata, aisb_error **err);
/* Import a root file system tar (streamed from f) as ref, its command bash. */
int podman_image_import(aisb_ctx *ctx, const char *ref, FILE *f, long long size, aisb_error **err);
int podman_image_list(aisb_ctx *ctx, json_object **ret, aisb_error **err);
/* Push ref to destination (a registry reference); tls_verify false for a registry over plain
 * HTTP or with a certificate this host does not trust. Credentials are podman's own. */
int podman_image_push(aisb_ctx *ctx, const char *ref, const char *destination, bool tls_verify, aisb_error **err);
/* Gone already is no error; in use (a container of someone else's) is. */
int podman_image_remove(aisb_ctx *ctx, const char *ref, aisb_error **err);

/* ---- volumes ---- */
int podman_volume_exists(aisb_ctx *ctx, const char *name, aisb_error **err);
/* labels is taken (json_object_put) whatever happens. Created meanwhile by another run is no
 * error. */
int podman_volume_create(aisb_ctx *ctx, const char *name, json_object *labels, aisb_error **err);
int podman_volume_mountpoint(aisb_ctx *ctx, const char *name, char **ret, aisb_error **err);
/* filters: libpod's filter object as JSON text ({"label":["k=v"]}), or NULL for all. */
int podman_volume_list(aisb_ctx *ctx, const char *filters, json_object **ret, aisb_error **err);
int podman_volume_remove(aisb_ctx *ctx, const char *name, aisb_error **err);

/* ---- containers ---- */
/* Create from a spec generator body. wipe: the body's text held secrets, overwrite it once
 * sent. The service's warnings go to the log as debug lines. */
int podman_container_create(aisb_ctx *ctx, json_object *body, bool wipe, char **ret_id, aisb_error **err);
/* Attach to stdin, stdout and stderr (no logs, no detach keys): a hijacked stream. */
int podman_container_attach(aisb_ctx *ctx, const char *id, http_stream *ret, aisb_error **err);
/* Running already is no error. */
int podman_container_start(aisb_ctx *ctx, const char *id, aisb_error **err);
/* The pty's size; -EBUSY when the service would not (not running yet). */
int podman_container_resize(aisb_ctx *ctx, const char *id, unsigned short rows, unsigned short cols);
/* Until it exits (or stops): its exit code 0..255. */
int podman_container_wait(aisb_ctx *ctx, const char *id, int *ret_code, aisb_error **err);
/* Kill and remove at once; gone already is no error. */
int podman_container_remove(aisb_ctx *ctx, const char *name, aisb_error **err);
/* The same for a run's sandbox, warning when it cannot be removed (aisb clean will). */
int podman_sandbox_remove(aisb_ctx *ctx, const char *id);
/* 1 with its inspect object, 0 when there is no such container. */
int podman_container_inspect(aisb_ctx *ctx, const char *name, json_object **ret, aisb_error **err);
/* Every container, running or not, matching filters (as for volumes; NULL: all). */
int podman_container_list(aisb_ctx *ctx, const char *filters, json_object **ret, aisb_error **err);
