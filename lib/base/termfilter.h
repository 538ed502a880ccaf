/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's output on its way to the user's terminal, without the terminal's control
 * strings. A control string is how a program sets the window title (OSC 0/1/2, and
 * screen's and tmux's ESC k), writes the clipboard or asks the terminal to type it back
 * (OSC 52), sends a file (iTerm2's OSC 1337), makes a hyperlink whose text hides its
 * target (OSC 8), talks past tmux to the terminal behind it (DCS "tmux;"), or asks for
 * answers typed into its own stdin (DECRQSS, XTGETTCAP). The agent must reach none of it.
 *
 * Removed, whole: OSC (ESC ]), DCS (ESC P), SOS (ESC X), PM (ESC ^), APC (ESC _), ESC k,
 * and the C1 forms of the first five as a UTF-8 terminal decodes them: U+0090, U+0098,
 * U+009D, U+009E, U+009F, written C2 90 ... C2 9F. Raw bytes 0x80-0x9F are never taken
 * for C1: in UTF-8 they are continuation bytes ("←" is E2 86 90). Every OSC goes, OSC 8
 * hyperlinks included (their text stays): a link's text can name another target than the
 * one it opens. Everything else passes byte for byte, CSI and SGR included.
 *
 * A string ends where the VT100 family of terminals ends it: at BEL, at ST (ESC \ or
 * C2 9C), at CAN or SUB, or at an ESC that is not the start of ST, which then begins the
 * next sequence (so "ESC ] ... ESC ] ..." is two strings). Ending a DCS at BEL, as xterm
 * ends an OSC, can only show more text than a terminal would: the terminal never sees the
 * string's introducer.
 *
 * Streaming: a string or its introducer may be split across calls anywhere. An ESC or C2 at
 * the end of a call is held until the next byte says what it begins; the state is a few
 * bytes, however long a string runs. What is held at the end of the stream (an unfinished
 * string, an ESC or a C2 whose next byte never came) is never emitted, so nothing written to
 * the terminal afterwards (aisb's own messages, the shell's prompt) can complete it. Each
 * call's output ends in neither ESC nor C2, so no two outputs joined together (stdout and
 * stderr on one terminal) hold an introducer either.
 *
 * Pure code, no allocation. Internal to libaisb.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct termfilter {
        uint8_t state;
        uint8_t held_lead;     /* a C2 of an earlier call is held, after held_escapes */
        uint64_t held_escapes; /* ESC bytes of earlier calls are held */
} termfilter;

/* A zeroed termfilter is one at the start of a stream. */

/* Called with each piece of the output, in order; a piece points into the input of the
 * call or into constant storage, so a consumer may keep it as long as it keeps the input.
 * Return 0, or a negative errno to stop the feed (the filter's state is then undefined). */
typedef int (*termfilter_emit_fn)(const void *data, size_t size, void *userdata);

/* Filter the next size bytes of the stream, passing what remains to emit. Returns 0 or
 * emit's error. Over a whole stream the output is never longer than the input; a call's
 * output may be longer than its input by the bytes it held from earlier calls. When the
 * filter is idle and the input holds no ESC and no C2 byte, the input goes out as one
 * piece after two memchr() scans. */
int termfilter_feed(termfilter *filter, const void *data, size_t size, termfilter_emit_fn emit,
                    void *userdata);
