/* SPDX-License-Identifier: MIT */
/* One sandboxed run (aisb_run), its I/O, and the multiplexed attach stream it reads. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "service.h"
#include "policy.h"

struct aisb_io {
        int in_fd;
        aisb_output_fn output_fn;
        void *output_userdata;
        unsigned filter_streams; /* AISB_STREAM_* whose terminal control strings go */
        bool terminal;
        unsigned short rows, cols;
        int control_fd;
        aisb_control_fn control_fn;
        void *control_userdata;
};

/* The attach stream's frames: an 8-byte header (stream, length), then the payload. */
typedef struct demux {
        uint8_t header[8];
        size_t have;
        int stream;
        uint32_t remaining;
} demux;
/* Feed bytes; emits payload pieces through fn. -EBADMSG on a malformed header. */
int demux_feed(demux *d, const void *data, size_t size,
               int (*fn)(int stream, const void *data, size_t size, void *userdata),
               void *userdata);

/* Run q's command in a sandbox of aisb's own (doctor, skill-lint), stdin closed, its output
 * to fn, for at most timeout_s seconds (then -ETIMEDOUT, the sandbox removed). */
int run_captured(aisb_ctx *ctx, const aisb_policy *q, long timeout_s, aisb_output_fn fn,
                 void *userdata, int *ret_code, aisb_error **err);

/* A command's stdout kept up to max bytes, the rest dropped and noted: what such a sandbox
 * writes is the repository's to choose (an fsmonitor that writes forever), so aisb's memory
 * does not follow it. run_capture_stdout is its output function; free b with buffer_free. */
typedef struct run_capture {
        buffer b;
        size_t max;
        bool truncated;
} run_capture;
int run_capture_stdout(const aisb_output *output, void *userdata);
