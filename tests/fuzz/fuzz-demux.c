/* SPDX-License-Identifier: MIT */
/*
 * The attach stream's frame demultiplexer (demux_feed): 8-byte headers (stream, 0, 0, 0,
 * big-endian length) then payload, arriving in whatever pieces the socket delivers. The
 * frames carry the sandboxed command's output, so they are hostile input. The first byte
 * seeds the chunking; the rest is the stream.
 * Checked, differentially: fed in random pieces the demultiplexer emits exactly the bytes,
 * streams and verdict it emits for the stream in one piece; streams are stdout or stderr;
 * a callback's error stops it and is returned.
 */
#include "internal.h"
#include "fuzz.h"

typedef struct collected {
        uint8_t *bytes;  /* payload, in order */
        uint8_t *stream; /* the stream of each byte */
        size_t size, allocated;
        size_t fail_after; /* callback fails once this many calls were made (0: never) */
        size_t calls;
} collected;

static int collect(int stream, const void *data, size_t size, void *userdata)
{
        collected *c = userdata;
        FUZZ_CHECK(stream == AISB_STREAM_STDOUT || stream == AISB_STREAM_STDERR);
        FUZZ_CHECK(size > 0);
        if (c->fail_after && ++c->calls >= c->fail_after)
                return -EPIPE;
        if (c->size + size > c->allocated) {
                c->allocated = (c->size + size) * 2;
                c->bytes = realloc(c->bytes, c->allocated);
                c->stream = realloc(c->stream, c->allocated);
                if (!c->bytes || !c->stream)
                        abort();
        }
        memcpy(c->bytes + c->size, data, size);
        memset(c->stream + c->size, stream, size);
        c->size += size;
        return 0;
}

static void collected_free(collected *c)
{
        free(c->bytes);
        free(c->stream);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        uint32_t state = data[0] * 2654435761u + 1;
        const uint8_t *stream = data + 1;
        size_t n = size - 1;

        demux whole = {};
        collected a = {};
        int r_whole = demux_feed(&whole, stream, n, collect, &a);
        FUZZ_CHECK(r_whole == 0 || r_whole == -EBADMSG);

        demux pieces = {};
        collected b = {};
        int r_pieces = 0;
        for (size_t at = 0; at < n && r_pieces == 0;) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                /* Mostly small pieces (headers split anywhere), sometimes large ones. */
                size_t take = (state & 3) ? 1 + (state >> 8) % 9 : 1 + (state >> 8) % 4096;
                if (take > n - at)
                        take = n - at;
                /* An exact-size copy, so that a read past the piece is caught. */
                uint8_t *piece = malloc(take);
                if (!piece)
                        abort();
                memcpy(piece, stream + at, take);
                r_pieces = demux_feed(&pieces, piece, take, collect, &b);
                free(piece);
                at += take;
        }
        FUZZ_CHECK(r_pieces == r_whole);
        FUZZ_CHECK(a.size == b.size);
        FUZZ_CHECK(a.size == 0 || (memcmp(a.bytes, b.bytes, a.size) == 0 &&
                                   memcmp(a.stream, b.stream, a.size) == 0));
        FUZZ_CHECK(a.size <= n);

        /* A failing consumer (a closed terminal) stops the stream with its error. */
        if (a.size > 0) {
                demux d = {};
                collected c = { .fail_after = 1 };
                FUZZ_CHECK(demux_feed(&d, stream, n, collect, &c) == -EPIPE && c.size == 0);
                collected_free(&c);
        }
        collected_free(&a);
        collected_free(&b);
        return 0;
}
