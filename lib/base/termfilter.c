/* SPDX-License-Identifier: MIT */
/*
 * Terminal control strings out of the sandbox's output (termfilter.h says which and why).
 *
 * One pass over each input. Output leaves in runs of the input that are not cut: a run
 * grows over text and over escape sequences that pass, and is emitted only where a string
 * is dropped or the input ends, so a read full of colour codes still goes out as one piece.
 * ESC and C2 are held (not yet part of a run) until the next byte says whether they begin a
 * string. Held bytes of an earlier call are counted, not stored, and re-created from
 * constant storage when they turn out to pass.
 */
#include <string.h>

#include "termfilter.h"

#define ESC 0x1b
#define LEAD 0xc2 /* the first byte of U+0080..U+00BF in UTF-8, the C1 controls among them */

enum {
        GROUND,        /* text */
        ESCAPE,        /* held: one or more ESC */
        ESCAPE_LEAD,   /* held: a C2 met in text */
        ESCAPE_C2,     /* held: ESC bytes (counted); a C2 after them dropped, its next byte decides */
        STRING,        /* inside a control string: dropped */
        STRING_ESCAPE, /* ... after an ESC: "\" completes ST, anything else begins anew */
        STRING_LEAD,   /* ... after a C2: 9C completes ST (its C1 form) */
};

static const uint8_t escapes[64] = { [0 ... 63] = ESC };
static const uint8_t lead = LEAD;

/* After ESC: OSC, DCS, SOS, PM, APC, and the title string of screen and tmux. */
static int escape_begins_string(uint8_t byte)
{
        return byte == ']' || byte == 'P' || byte == 'X' || byte == '^' || byte == '_' || byte == 'k';
}

/* After C2: U+0090 DCS, U+0098 SOS, U+009D OSC, U+009E PM, U+009F APC. */
static int lead_begins_string(uint8_t byte)
{
        return byte == 0x90 || byte == 0x98 || byte == 0x9d || byte == 0x9e || byte == 0x9f;
}

static int string_may_end(uint8_t byte)
{
        return byte == 0x07 || byte == 0x18 || byte == 0x1a || byte == ESC || byte == LEAD;
}

/* The held bytes of earlier calls pass after all: re-create them. */
static int emit_held(termfilter *f, termfilter_emit_fn emit, void *userdata)
{
        int r = 0;
        while (f->held_escapes > 0 && r == 0) {
                size_t n = f->held_escapes < sizeof escapes ? (size_t) f->held_escapes : sizeof escapes;
                r = emit(escapes, n, userdata);
                f->held_escapes -= n;
        }
        if (f->held_lead && r == 0)
                r = emit(&lead, 1, userdata);
        f->held_escapes = 0;
        f->held_lead = 0;
        return r;
}

static size_t find(const uint8_t *p, size_t from, size_t size, uint8_t byte)
{
        const uint8_t *hit = memchr(p + from, byte, size - from);
        return hit ? (size_t) (hit - p) : size;
}

int termfilter_feed(termfilter *f, const void *data, size_t size, termfilter_emit_fn emit,
                    void *userdata)
{
        const uint8_t *p = data;
        size_t i = 0;
        size_t run = 0;  /* [run, held) passes: emitted when cut or at the end */
        size_t held = 0; /* [held, i) is held, in ESCAPE and ESCAPE_LEAD */
        /* Where the next ESC and C2 are (size: none), each found again only once passed, so
         * that the input is scanned once however many of either it holds. */
        size_t next_escape = 0, next_lead = 0;
        int scanned = 0;
        int r;

        if (size == 0)
                return 0; /* and the held bytes stay as they are */
        while (i < size) {
                uint8_t byte = p[i];
                switch (f->state) {
                case GROUND:
                        if (!scanned || next_escape < i)
                                next_escape = find(p, i, size, ESC);
                        if (!scanned || next_lead < i)
                                next_lead = find(p, i, size, LEAD);
                        scanned = 1;
                        i = next_escape < next_lead ? next_escape : next_lead;
                        if (i == size)
                                break;
                        f->state = p[i] == ESC ? ESCAPE : ESCAPE_LEAD;
                        held = i++;
                        break;

                case ESCAPE:
                case ESCAPE_LEAD:
                        if (f->state == ESCAPE ? escape_begins_string(byte) : lead_begins_string(byte)) {
                                /* The held bytes and the introducer go with the string. */
                                f->held_escapes = 0;
                                f->held_lead = 0;
                                if (held > run && (r = emit(p + run, held - run, userdata)) < 0)
                                        return r;
                                f->state = STRING;
                                i++;
                        } else if (f->state == ESCAPE && byte == ESC) {
                                i++; /* ESC ESC: a terminal drops the first; hold both */
                        } else if (f->state == ESCAPE && (byte >= 0x80 || ((byte < 0x20 || byte == 0x7f) &&
                                                                           byte != 0x18 && byte != 0x1a))) {
                                /* A terminal executes a C0 control and ignores DEL and every
                                 * byte from 0x80 in the middle of an escape sequence, and stays
                                 * in it: "ESC NUL ]" and "ESC 0x80 ]" are OSCs there. Dropped,
                                 * the ESC still held. A C2 may begin a C1 string (U+009D is an
                                 * OSC to a terminal that decodes UTF-8 first): its next byte
                                 * says. */
                                if (held > run && (r = emit(p + run, held - run, userdata)) < 0)
                                        return r;
                                f->held_escapes += i - held;
                                run = held = ++i;
                                if (byte == LEAD)
                                        f->state = ESCAPE_C2;
                        } else if (f->state == ESCAPE_LEAD && (byte == ESC || byte == LEAD)) {
                                /* A C2 without its continuation is not a character: dropped
                                 * with the escapes before it (which the new sequence would
                                 * cancel), so that no output ends in a C2 that the next
                                 * output could complete. */
                                f->held_escapes = 0;
                                f->held_lead = 0;
                                if (held > run && (r = emit(p + run, held - run, userdata)) < 0)
                                        return r;
                                run = held = i++;
                                f->state = byte == ESC ? ESCAPE : ESCAPE_LEAD;
                        } else {
                                /* Begins no string: the held bytes and this one pass. Held
                                 * bytes of an earlier call come first (the run then starts
                                 * at 0). */
                                if ((f->held_escapes || f->held_lead) &&
                                    (r = emit_held(f, emit, userdata)) < 0)
                                        return r;
                                f->state = GROUND;
                                i++;
                        }
                        break;

                case ESCAPE_C2:
                        if (lead_begins_string(byte)) {
                                f->held_escapes = 0; /* the escapes and the C1 go with the string */
                                f->state = STRING;
                                run = held = ++i;
                        } else
                                f->state = ESCAPE; /* the C2 is gone: this byte again, after ESC */
                        break;

                case STRING:
                        while (i < size && !string_may_end(p[i]))
                                i++;
                        if (i == size)
                                break;
                        byte = p[i++];
                        if (byte == ESC)
                                f->state = STRING_ESCAPE;
                        else if (byte == LEAD)
                                f->state = STRING_LEAD;
                        else {
                                f->state = GROUND; /* BEL, CAN, SUB */
                                run = i;
                        }
                        break;

                case STRING_ESCAPE:
                        if (byte == '\\') {
                                f->state = GROUND;
                                run = ++i;
                                break;
                        }
                        /* The string ended at its ESC, which begins the next sequence: held
                         * as any ESC is, this byte seen again from there. */
                        f->state = ESCAPE;
                        if (i == 0)
                                f->held_escapes = 1;
                        else
                                run = held = i - 1;
                        break;

                case STRING_LEAD:
                        if (byte == 0x9c) {
                                f->state = GROUND;
                                run = ++i;
                        } else
                                f->state = STRING; /* a character of the string: this byte again */
                        break;
                }
        }

        switch (f->state) {
        case GROUND:
                return size > run ? emit(p + run, size - run, userdata) : 0;
        case ESCAPE:
        case ESCAPE_LEAD:
                /* [held, size) is ESC bytes, then the C2 in ESCAPE_LEAD: kept as counts. */
                f->held_escapes += size - held - (f->state == ESCAPE_LEAD);
                f->held_lead = f->state == ESCAPE_LEAD;
                return held > run ? emit(p + run, held - run, userdata) : 0;
        default:
                return 0;
        }
}
