/* SPDX-License-Identifier: MIT */
/*
 * The context (aisb_ctx): which podman service aisb talks to, found and started the way
 * podman itself would, and what the caller installed: callbacks, a dry run, a timeout, and a
 * cancellation that any thread may ask for.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "aisb.h"
#include "error.h"
#include "http.h"

/* How long a plain request to the service may take before it counts as hung. */
#define AISB_DEFAULT_REQUEST_TIMEOUT_MS 90000L

/* Asked while an operation is being prepared: true when it should stop (the run's control
 * callback said so). */
typedef bool (*ctx_stop_fn)(void *userdata);

struct aisb_ctx {
        http_conn http;
        /* A dry run (aisb_ctx_set_dry_run): a run and an image are planned and their
         * requests shown to this, never sent (plan.h). */
        aisb_request_fn dry_run_fn;
        void *dry_run_userdata;
        bool socket_fixed; /* set by the caller: never start a service */
        char *podman_version;
        unsigned version_major, version_minor;
        bool connected;
        long request_timeout_ms;
        aisb_event_fn event_fn;
        void *event_userdata;

        /* Cancellation (aisb_ctx_cancel): a flag any thread or a signal handler may set, and
         * an eventfd it writes so that a blocked poll() wakes. */
        atomic_bool cancel_requested;
        int wake_fd;
        /* A stop observed: set when any source (the flag, the stop hook, an event callback
         * asking for it) says so, cleared when the outermost operation ends. From then on
         * no new step starts, and requests already sent to clean up run to their end. */
        bool stopping;
        bool cleaning_up;
        unsigned op_depth;
        ctx_stop_fn stop_fn;
        void *stop_userdata;

        /* The last image this context made sure of, and its context's key (image.c): the run
         * after "aisb_image_ensure" needs neither a second hash of the entrypoint nor a
         * second request. */
        char *ensured_key;
        char *ensured_tag;

        /* The questions of the run in progress (ask.h), and whether a reply asked for the
         * sandbox's terminal to be redrawn. */
        struct ask_state *ask;
        bool ask_redraw;
};

/* An AISB_EVENT_LOG event; nothing is formatted when no one listens. */
void aisb_log(aisb_ctx *ctx, aisb_log_level level, const char *fmt, ...) _printf_(3, 4);
/* An event to the event callback, when one is set. Returns nonzero when it asked to stop:
 * the context is stopping then. */
int ctx_emit(aisb_ctx *ctx, const aisb_event *event);

/* The operations that may be stopped: begin and end nest; a stop observed during the
 * outermost one is forgotten (and a pending aisb_ctx_cancel consumed) when it ends. */
void ctx_operation_begin(aisb_ctx *ctx);
void ctx_operation_end(aisb_ctx **ctx);
/* Whether the operation should stop now: asks every source once (without blocking). */
bool ctx_stopping(aisb_ctx *ctx);
/* Requests from here on are the cleanup's: never cut short by a stop. */
void ctx_cleanup_begin(aisb_ctx *ctx);

/* Why a podman that would not serve said so: the message of the last error or fatal line of
 * its log ("time=... level=error msg=\"...\"", or "Error: ..."), unquoted. NULL when the log
 * holds none. */
int service_log_reason(const char *log, char **ret);
