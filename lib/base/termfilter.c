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

/* One call's pass over its input. */
typedef struct feed {
        termfilter *f;
        const uint8_t *p;
        size_t size, i;
        size_t run;  /* [run, held) passes: emitted when cut or at the end */
        size_t held; /* [held, i) is held, in ESCAPE and ESCAPE_LEAD */
        /* Where the next ESC and C2 are (size: none), each found again only once passed, so
         * that the input is scanned once however many of either it holds. */
        size_t next_escape, next_lead;
        int scanned;
        termfilter_emit_fn emit;
        void *userdata;
} feed;

static int emit_run(feed *s)
{
        return s->held > s->run ? s->emit(s->p + s->run, s->held - s->run, s->userdata) : 0;
}

/* The held bytes go with what is dropped: the run before them passes. */
static int drop_held(feed *s)
{
        s->f->held_escapes = 0;
        s->f->held_lead = 0;
        return emit_run(s);
}

/* Each state's step, at the byte p[i]: it moves i on, or changes the state to see the byte
 * again. 0, or emit's error. */
static int in_ground(feed *s, uint8_t byte)
{
        if (!s->scanned || s->next_escape < s->i)
                s->next_escape = find(s->p, s->i, s->size, ESC);
        if (!s->scanned || s->next_lead < s->i)
                s->next_lead = find(s->p, s->i, s->size, LEAD);
        s->scanned = 1;
        s->i = s->next_escape < s->next_lead ? s->next_escape : s->next_lead;
        if (s->i == s->size)
                return 0;
        s->f->state = s->p[s->i] == ESC ? ESCAPE : ESCAPE_LEAD;
        s->held = s->i++;
        return 0;
}

/* ESCAPE and ESCAPE_LEAD. */
static int in_escape(feed *s, uint8_t byte)
{
        termfilter *f = s->f;
        int r = 0;
        if (f->state == ESCAPE ? escape_begins_string(byte) : lead_begins_string(byte)) {
                /* The held bytes and the introducer go with the string. */
                r = drop_held(s);
                f->state = STRING;
                s->i++;
        } else if (f->state == ESCAPE && byte == ESC) {
                s->i++; /* ESC ESC: a terminal drops the first; hold both */
        } else if (f->state == ESCAPE &&
                   (byte >= 0x80 || ((byte < 0x20 || byte == 0x7f) && byte != 0x18 && byte != 0x1a))) {
                /* A terminal executes a C0 control and ignores DEL and every byte from 0x80 in
                 * the middle of an escape sequence, and stays in it: "ESC NUL ]" and "ESC 0x80 ]"
                 * are OSCs there. Dropped, the ESC still held. A C2 may begin a C1 string
                 * (U+009D is an OSC to a terminal that decodes UTF-8 first): its next byte says. */
                r = emit_run(s);
                f->held_escapes += s->i - s->held;
                s->run = s->held = ++s->i;
                if (byte == LEAD)
                        f->state = ESCAPE_C2;
        } else if (f->state == ESCAPE_LEAD && (byte == ESC || byte == LEAD)) {
                /* A C2 without its continuation is not a character: dropped with the escapes
                 * before it (which the new sequence would cancel), so that no output ends in a C2
                 * that the next output could complete. */
                r = drop_held(s);
                s->run = s->held = s->i++;
                f->state = byte == ESC ? ESCAPE : ESCAPE_LEAD;
        } else {
                /* Begins no string: the held bytes and this one pass. Held bytes of an earlier
                 * call come first (the run then starts at 0). */
                r = emit_held(f, s->emit, s->userdata);
                f->state = GROUND;
                s->i++;
        }
        return r;
}

static int in_escape_c2(feed *s, uint8_t byte)
{
        if (lead_begins_string(byte)) {
                s->f->held_escapes = 0; /* the escapes and the C1 go with the string */
                s->f->state = STRING;
                s->run = s->held = ++s->i;
        } else
                s->f->state = ESCAPE; /* the C2 is gone: this byte again, after ESC */
        return 0;
}

static int in_string(feed *s, uint8_t byte)
{
        while (s->i < s->size && !string_may_end(s->p[s->i]))
                s->i++;
        if (s->i == s->size)
                return 0;
        byte = s->p[s->i++];
        if (byte == ESC)
                s->f->state = STRING_ESCAPE;
        else if (byte == LEAD)
                s->f->state = STRING_LEAD;
        else {
                s->f->state = GROUND; /* BEL, CAN, SUB */
                s->run = s->i;
        }
        return 0;
}

static int in_string_escape(feed *s, uint8_t byte)
{
        if (byte == '\\') {
                s->f->state = GROUND;
                s->run = ++s->i;
                return 0;
        }
        /* The string ended at its ESC, which begins the next sequence: held as any ESC is,
         * this byte seen again from there. */
        s->f->state = ESCAPE;
        if (s->i == 0)
                s->f->held_escapes = 1;
        else
                s->run = s->held = s->i - 1;
        return 0;
}

static int in_string_lead(feed *s, uint8_t byte)
{
        if (byte == 0x9c) {
                s->f->state = GROUND;
                s->run = ++s->i;
        } else
                s->f->state = STRING; /* a character of the string: this byte again */
        return 0;
}

static int (*const steps[])(feed *s, uint8_t byte) = {
        [GROUND] = in_ground,          [ESCAPE] = in_escape, [ESCAPE_LEAD] = in_escape,
        [ESCAPE_C2] = in_escape_c2,    [STRING] = in_string, [STRING_ESCAPE] = in_string_escape,
        [STRING_LEAD] = in_string_lead,
};

int termfilter_feed(termfilter *f, const void *data, size_t size, termfilter_emit_fn emit, void *userdata)
{
        if (size == 0)
                return 0; /* and the held bytes stay as they are */
        feed s = { .f = f, .p = data, .size = size, .emit = emit, .userdata = userdata };
        while (s.i < size) {
                int r = steps[f->state](&s, s.p[s.i]);
                if (r < 0)
                        return r;
        }
        switch (f->state) {
        case GROUND:
                return size > s.run ? emit(s.p + s.run, size - s.run, userdata) : 0;
        case ESCAPE:
        case ESCAPE_LEAD:
                /* [held, size) is ESC bytes, then the C2 in ESCAPE_LEAD: kept as counts. */
                f->held_escapes += size - s.held - (f->state == ESCAPE_LEAD);
                f->held_lead = f->state == ESCAPE_LEAD;
                return emit_run(&s);
        default:
                return 0;
        }
}
