/* SPDX-License-Identifier: MIT */
/* A run's I/O and the multiplexed attach stream it reads (stream.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "service.h"

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

/* Stream the sandbox id's attach connection s until the service closes it: stdin in,
 * output to io's callback or our own stdout/stderr, the control callback and questions
 * served between reads. -ECANCELED when a cancel or the control callback stopped it (the
 * sandbox is then removed). */
int stream_pump(aisb_ctx *ctx, aisb_io *io, const char *id, http_stream *s, aisb_error **err);
