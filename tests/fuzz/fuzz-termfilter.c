/* SPDX-License-Identifier: MIT */
/*
 * The terminal output filter (termfilter_feed): the sandbox's output on its way to the
 * user's terminal, so hostile input by definition. The first byte seeds the chunking; the
 * rest is the stream.
 * Checked: the output holds no introducer of a control string (ESC followed by ] P X ^ _ k,
 * with any C0 controls, DEL or bytes from 0x80 between, which a terminal executes or ignores
 * without leaving the escape,
 * or C2 followed by 90 98 9D 9E 9F) and no call's output ends in ESC or C2, so joining it
 * with anything written next cannot make one; fed in random pieces the filter emits exactly
 * what it emits for the stream whole; the output is the input with parts left out (never
 * longer, nothing added or reordered); input without ESC and C2 passes whole; filtering the
 * output again changes nothing; a consumer's error stops the feed and is returned.
 */
#include <errno.h>

#include "fuzz.h"
#include "termfilter.h"

typedef struct sink {
        uint8_t *data;
        size_t size, allocated;
        int fail; /* returned by the consumer when not 0 */
} sink;

static int collect(const void *data, size_t size, void *userdata)
{
        sink *s = userdata;
        FUZZ_CHECK(size > 0);
        if (s->fail)
                return s->fail;
        if (s->size + size > s->allocated) {
                s->allocated = (s->size + size) * 2;
                s->data = realloc(s->data, s->allocated);
                if (!s->data)
                        abort();
        }
        memcpy(s->data + s->size, data, size);
        s->size += size;
        return 0;
}

/* One call, on an exact-size copy so that a read past the piece is caught. */
static void feed(termfilter *f, sink *s, const uint8_t *data, size_t size)
{
        uint8_t *copy = malloc(size ? size : 1);
        if (!copy)
                abort();
        if (size)
                memcpy(copy, data, size);
        size_t before = s->size;
        FUZZ_CHECK(termfilter_feed(f, copy, size, collect, s) == 0);
        free(copy);
        FUZZ_CHECK(s->size == before || (s->data[s->size - 1] != 0x1b && s->data[s->size - 1] != 0xc2));
}

/* What a terminal executes or ignores inside an escape sequence without leaving it: C0
 * controls but CAN, SUB and ESC; DEL; every byte from 0x80. */
static bool escape_transparent(uint8_t b)
{
        return (b < 0x20 && b != 0x18 && b != 0x1a && b != 0x1b) || b >= 0x7f;
}

static bool has_introducer(const uint8_t *p, size_t n)
{
        for (size_t i = 0; i + 1 < n; i++) {
                uint8_t a = p[i];
                size_t j = i + 1;
                while (a == 0x1b && j + 1 < n && escape_transparent(p[j]))
                        j++;
                uint8_t b = p[j];
                if (a == 0x1b && (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_' || b == 'k'))
                        return true;
                b = p[i + 1];
                if (a == 0xc2 && (b == 0x90 || b == 0x98 || b == 0x9d || b == 0x9e || b == 0x9f))
                        return true;
        }
        return false;
}

static bool is_subsequence(const uint8_t *part, size_t n, const uint8_t *whole, size_t m)
{
        size_t j = 0;
        for (size_t i = 0; i < m && j < n; i++)
                if (whole[i] == part[j])
                        j++;
        return j == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        uint32_t state = data[0] * 2654435761u + 1;
        const uint8_t *in = data + 1;
        size_t n = size - 1;

        termfilter f = {};
        sink whole = {};
        feed(&f, &whole, in, n);
        FUZZ_CHECK(whole.size <= n);
        FUZZ_CHECK(!has_introducer(whole.data, whole.size));
        FUZZ_CHECK(is_subsequence(whole.data, whole.size, in, n));
        if (!memchr(in, 0x1b, n) && !memchr(in, 0xc2, n))
                FUZZ_CHECK(whole.size == n && (n == 0 || memcmp(whole.data, in, n) == 0));

        f = (termfilter) {};
        sink pieces = {};
        for (size_t at = 0; at < n;) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                /* Mostly small pieces (introducers and terminators split), sometimes none. */
                size_t take = (state & 3) ? (state >> 8) % 9 : 1 + (state >> 8) % 4096;
                if (take > n - at)
                        take = n - at;
                feed(&f, &pieces, in + at, take);
                at += take;
        }
        FUZZ_CHECK(pieces.size == whole.size);
        FUZZ_CHECK(whole.size == 0 || memcmp(pieces.data, whole.data, whole.size) == 0);

        /* What passed once passes again, unchanged. */
        f = (termfilter) {};
        sink again = {};
        feed(&f, &again, whole.data, whole.size);
        FUZZ_CHECK(again.size == whole.size);
        FUZZ_CHECK(whole.size == 0 || memcmp(again.data, whole.data, whole.size) == 0);

        /* A failing consumer (a closed terminal) stops the feed with its error. */
        if (whole.size > 0) {
                f = (termfilter) {};
                sink failing = { .fail = -EPIPE };
                FUZZ_CHECK(termfilter_feed(&f, in, n, collect, &failing) == -EPIPE);
        }
        free(whole.data);
        free(pieces.data);
        free(again.data);
        return 0;
}
