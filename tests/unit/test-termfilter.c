/* SPDX-License-Identifier: MIT */
/*
 * The terminal output filter: each kind of control string and both terminators, their C1
 * forms against UTF-8 text whose continuation bytes look like C1, CSI and SGR untouched,
 * every way of splitting an input giving the one-shot result, what is held at the end of a
 * stream, and strings far longer than any buffer.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "termfilter.h"
#include "../suite-table.h"
#include "unit.h"

typedef struct sink {
        uint8_t *data;
        size_t size, allocated;
        size_t pieces;
        const void *first_piece;
        int fail; /* emit returns this (a negative errno) when not 0 */
} sink;

static int collect(const void *data, size_t size, void *userdata)
{
        sink *s = userdata;
        ck_assert_uint_gt(size, 0);
        if (s->fail)
                return s->fail;
        if (s->pieces++ == 0)
                s->first_piece = data;
        if (s->size + size > s->allocated) {
                s->allocated = (s->size + size) * 2;
                s->data = realloc(s->data, s->allocated);
                ck_assert_ptr_nonnull(s->data);
        }
        memcpy(s->data + s->size, data, size);
        s->size += size;
        return 0;
}

/* One call of the feed, on an exact-size copy (a read past the piece is a bug the
 * sanitizers see). Whatever the call emitted ends in neither ESC nor C2, so no other output
 * written after it can complete an introducer. */
static void feed(termfilter *f, sink *s, const uint8_t *data, size_t size)
{
        uint8_t *copy = malloc(size ? size : 1);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, data, size);
        size_t before = s->size;
        ck_assert_int_eq(termfilter_feed(f, copy, size, collect, s), 0);
        free(copy);
        if (s->size > before)
                ck_assert_msg(s->data[s->size - 1] != 0x1b && s->data[s->size - 1] != 0xc2,
                              "a call's output ends in %02x", s->data[s->size - 1]);
}

static void expect_output(const sink *s, const void *want, size_t want_size, const char *how)
{
        ck_assert_msg(s->size == want_size && (want_size == 0 || memcmp(s->data, want, want_size) == 0),
                      "%s: got %zu bytes '%.*s', want %zu bytes '%.*s'", how, s->size, (int) s->size,
                      s->size ? (const char *) s->data : "", want_size, (int) want_size,
                      (const char *) want);
}

/* in filtered to want: whole, one byte at a time, in every two-piece split, and for short
 * inputs in every three-piece split. */
static void expect_filtered_n(const void *in_, size_t n, const void *want, size_t want_size)
{
        const uint8_t *in = in_;
        termfilter f = {};
        sink s = {};
        feed(&f, &s, in, n);
        expect_output(&s, want, want_size, "whole");
        s.size = 0;

        f = (termfilter) {};
        for (size_t i = 0; i < n; i++)
                feed(&f, &s, in + i, 1);
        expect_output(&s, want, want_size, "byte by byte");
        s.size = 0;

        for (size_t cut = 0; cut <= n; cut++) {
                f = (termfilter) {};
                feed(&f, &s, in, cut);
                feed(&f, &s, in + cut, n - cut);
                expect_output(&s, want, want_size, "two pieces");
                s.size = 0;
        }
        for (size_t a = 0; n <= 96 && a <= n; a++)
                for (size_t b = a; b <= n; b++) {
                        f = (termfilter) {};
                        feed(&f, &s, in, a);
                        feed(&f, &s, in + a, b - a);
                        feed(&f, &s, in + b, n - b);
                        expect_output(&s, want, want_size, "three pieces");
                        s.size = 0;
                }
        free(s.data);
}

#define expect_filtered(in, want) expect_filtered_n(in, sizeof in - 1, want, sizeof want - 1)
#define expect_unchanged(in) expect_filtered(in, in)

START_TEST(test_osc)
{
        /* Titles, both terminators. */
        expect_filtered("a\033]0;evil title\007b", "ab");
        expect_filtered("a\033]1;icon\033\\b", "ab");
        expect_filtered("a\033]2;evil title\033\\b", "ab");
        /* The clipboard: a write, and a read the terminal would answer on our stdin. */
        expect_filtered("x\033]52;c;cHduZWQtY2xpcA==\007y", "xy");
        expect_filtered("x\033]52;c;?\007y", "xy");
        expect_filtered("x\033]52;c;?\033\\y", "xy");
        /* iTerm2's file transfer, and a colour query. */
        expect_filtered("\033]1337;File=name=ZXZpbA==;inline=1:QUFBQQ==\007done", "done");
        expect_filtered("\033]11;?\007", "");
        /* A hyperlink goes; its text stays. */
        expect_filtered("\033]8;;https://evil.example/\033\\https://good.example/\033]8;;\033\\",
                        "https://good.example/");
}
END_TEST

/* A terminal executes C0 controls (and ignores DEL) inside an escape sequence and stays in
 * it: "ESC NUL ]" is an OSC to it. The control goes, the string goes with its introducer. */
START_TEST(test_c0_inside_escape)
{
        expect_filtered_n("a\033\000]2;NULBYPASS\007b", 17, "ab", 2);
        expect_filtered("a\033\005]52;c;ZWNobyBDMEJZUEFTUwo=\007b", "ab");
        expect_filtered("a\033\177]2;DELBYPASS\007b", "ab");
        expect_filtered("a\033\r\n\177\001]52;c;?\007b", "ab");
        expect_filtered("a\033\033\001P+q544e\033\\b", "ab");
        /* Inside a string, an ESC ends it and begins the next sequence the same way. */
        expect_filtered("\033]0;x\033\001]2;y\007z", "z");
        /* A sequence that begins no string still passes, without the control. */
        expect_filtered("a\033\001[31mb", "a\033[31mb");
        expect_filtered("a\033\177Ab", "a\033Ab");
        /* Bytes from 0x80 too: a terminal ignores them inside an escape (round two of the
         * red team: ESC 0x80 ] was an OSC that passed). */
        expect_filtered("a\033\200]52;c;?\007b", "ab");
        expect_filtered("a\033\377kpwned\033\\b", "ab");
        expect_filtered("a\033\302\240]2;x\007b", "ab");
        expect_filtered("a\033\342\200\242]52;c;?\007b", "ab");
        expect_filtered("a\033\300]52;c;eA==\007b", "ab");
        /* ESC, then a C1 OSC in UTF-8: a string either way. */
        expect_filtered("a\033\302\235x\007b", "ab");
        /* A sequence that begins no string passes without the bytes a terminal ignores. */
        expect_filtered("a\033\302A!", "a\033A!");
        expect_filtered("a\033\200\201[1mB", "a\033[1mB");
        /* CAN and SUB cancel the sequence: they pass, and what follows is text. */
        expect_unchanged("a\033\030]b");
        expect_unchanged("a\033\032]b");
}
END_TEST

START_TEST(test_dcs_sos_pm_apc)
{
        /* tmux passthrough: the inner ESCs are doubled. A VT100-family parser ends the DCS
         * at the first of them and then sees the inner OSC, which goes too; the closing ST
         * is left alone, and does nothing. */
        expect_filtered("\033Ptmux;\033\033]52;c;cHduZWQ=\007\033\\after", "\033\\after");
        expect_filtered("\033Ptmux;payload\033\\after", "after");
        /* XTGETTCAP and DECRQSS: queries the terminal answers on our stdin. */
        expect_filtered("\033P+q544e\033\\", "");
        expect_filtered("\033P$qm\033\\", "");
        /* Sixel graphics are a DCS too. */
        expect_filtered("<\033Pq#0;2;0;0;0#0~~@@vv@@~~\033\\>", "<>");
        expect_filtered("\033Xstart of string\033\\.", ".");
        expect_filtered("\033^privacy message\033\\.", ".");
        expect_filtered("\033_Gf=100;QUFBQQ==\033\\.", "."); /* kitty graphics */
        /* screen's and tmux's window title. */
        expect_filtered("\033kwindow name\033\\.", ".");
        expect_filtered("\033kwindow name\007.", ".");
}
END_TEST

START_TEST(test_c1_forms)
{
        expect_filtered("a\xc2\x9d" "0;evil\x07" "b", "ab");
        expect_filtered("a\xc2\x9d" "52;c;?\xc2\x9c" "b", "ab");
        expect_filtered("a\xc2\x90+q544e\xc2\x9c" "b", "ab");
        expect_filtered("a\xc2\x98sos\xc2\x9c" "b", "ab");
        expect_filtered("a\xc2\x9epm\xc2\x9c" "b", "ab");
        expect_filtered("a\xc2\x9f" "apc\xc2\x9c" "b", "ab");
        /* Either ST ends either form. */
        expect_filtered("a\033]2;t\xc2\x9c" "b", "ab");
        expect_filtered("a\xc2\x9d" "2;t\033\\b", "ab");
        /* A C2 inside a string that is not ST is part of it. */
        expect_filtered("a\033]2;\xc2\xa3\xc2\x9d\007b", "ab");
        /* Other C1 controls are not strings: CSI, ST alone, NEL. */
        expect_unchanged("\xc2\x9b" "31mred\xc2\x9b" "0m");
        expect_unchanged("\xc2\x9c\xc2\x85\xc2\x80");
}
END_TEST

START_TEST(test_utf8_continuation_is_not_c1)
{
        /* Characters whose continuation bytes are 90, 98, 9D, 9E, 9F. */
        expect_unchanged("\xe2\x86\x90 arrow ←");                 /* U+2190 */
        expect_unchanged("\xe2\x9c\x98 \xe2\x9d\x9d \xe2\x9e\x9e \xe2\x9e\x9f"); /* ✘ ❝ ➞ ➟ */
        expect_unchanged("\xf0\x9d\x90\x80 \xf0\x9f\x98\x80");    /* U+1D400, U+1F600 */
        expect_unchanged("£ © ± é ü ß 日本語");
        /* Raw bytes 80-9F outside a character are not C1 in UTF-8 either. */
        expect_unchanged("\x9d" "0;not a string\x07");
        expect_unchanged("\x90\x98\x9e\x9f");
        /* After ESC a terminal ignores them, and so they go (the ESC stays). */
        expect_filtered("\033\x9d" "0;x\x07", "\033" "0;x\x07");
}
END_TEST

START_TEST(test_csi_and_text_pass)
{
        expect_unchanged("plain text\r\n\ttabs\x07 bell \x08");
        expect_unchanged("\033[1;31mbold red\033[0m \033[38;2;10;20;30mtrue colour\033[m");
        expect_unchanged("\033[2J\033[H\033[?1049h\033[?25l\033[10;20r\033[?2004h\033[?1049l");
        expect_unchanged("\033[6n\033[c\033[>c\033[>q"); /* queries pass: they carry no data of ours */
        expect_unchanged("\0337\0338\033c\033(B\033)0\033=\033>\033M\033D\033E\033#8");
        /* Introducer letters are text anywhere but right after ESC. */
        expect_unchanged("]P X^_k \033[P \033[X \033[k");
        /* ESC ESC: a terminal drops the first; both pass byte for byte. */
        expect_unchanged("\033\033[A");
        /* A C2 before other text is a broken character: it passes. */
        expect_unchanged("\xc2" "A\xc2\xe2\x86\x90");
        expect_filtered("\033\xc2" "A", "\033" "A"); /* after ESC, ignored: dropped */
}
END_TEST

START_TEST(test_string_ends)
{
        /* CAN and SUB abort a string. */
        expect_filtered("\033]0;a\x18" "b", "b");
        expect_filtered("\033]0;a\x1a" "b", "b");
        /* An ESC that is not ST ends the string and begins the next sequence. */
        expect_filtered("\033]0;a\033[31mred", "\033[31mred");
        expect_filtered("\033]0;a\033]52;c;x\007z", "z");
        expect_filtered("\033]0;a\033\033]52;c;x\007z", "z");
        expect_filtered("\033Pa\033\xc2\x9d" "52;c;x\007z", "z");
        expect_filtered("\033]0;a\033", "");
        /* ESC ESC before an introducer: the first ESC is cancelled, the string remains. */
        expect_filtered("\033\033]0;x\007y", "y");
        expect_filtered("\033\033\033\033]0;x\007y", "y");
        expect_filtered("\033\xc2\x9d" "0;x\007y", "y");
}
END_TEST

START_TEST(test_no_introducer_by_joining)
{
        /* Dropping a string must not join what stood before and after it into an
         * introducer: the bytes before it are held until known, a C2 before an ESC is not a
         * character and goes. */
        expect_filtered("\033\033]0;x\007]0;y\007", "]0;y\007");
        expect_filtered("\xc2\033]0;x\007\x9d" "0;y\007", "\x9d" "0;y\007");
        expect_filtered("\xc2\xc2\x9d" "0;x\007\x9d", "\x9d");
        expect_filtered("\xc2\033[31m", "\033[31m");
        expect_filtered("\033\xc2\033]0;x\007]", "]");
        expect_filtered("\033\xc2\xc2\x9d" "0;x\007\x9d", "\x9d");
        expect_filtered("a\033]0;x\007\033]0;y\007b", "ab");
}
END_TEST

START_TEST(test_end_of_stream)
{
        /* An unterminated string: nothing of it. */
        expect_filtered("before\033]52;c;cHduZWQ=", "before");
        expect_filtered("before\033P", "before");
        expect_filtered("before\xc2\x9d", "before");
        /* An ESC or C2 whose next byte never came: not emitted, so that what the terminal
         * gets next (aisb's messages, the prompt) cannot complete it. */
        expect_filtered("text\033", "text");
        expect_filtered("text\033\033", "text");
        expect_filtered("text\xc2", "text");
        expect_filtered("text\033\xc2", "text");
        expect_filtered("", "");
}
END_TEST

START_TEST(test_long_strings)
{
        ck_assert_uint_le(sizeof(termfilter), 16);
        /* 64 MiB of OSC 52 in 64 KiB reads, then text: nothing of it kept, in any form. */
        size_t piece = 64 * 1024;
        uint8_t *buf = malloc(piece);
        ck_assert_ptr_nonnull(buf);
        memset(buf, 'A', piece);
        termfilter f = {};
        sink s = {};
        feed(&f, &s, (const uint8_t *) "start\033]52;c;", 12);
        for (int i = 0; i < 1024; i++)
                feed(&f, &s, buf, piece);
        ck_assert_uint_eq(sizeof f, sizeof(termfilter));
        feed(&f, &s, (const uint8_t *) "\007end", 4);
        expect_output(&s, "startend", 8, "after a long string");

        /* A million ESC held across reads, then text: all of them pass, in order. */
        memset(buf, 0x1b, piece);
        f = (termfilter) {};
        s.size = 0;
        size_t escapes = 0;
        while (escapes < 1000 * 1000) {
                size_t n = 1000 * 1000 - escapes < 4093 ? 1000 * 1000 - escapes : 4093;
                feed(&f, &s, buf, n);
                escapes += n;
        }
        ck_assert_uint_eq(s.size, 0);
        feed(&f, &s, (const uint8_t *) "[m", 2);
        ck_assert_uint_eq(s.size, escapes + 2);
        for (size_t i = 0; i < escapes; i++)
                ck_assert_int_eq(s.data[i], 0x1b);
        ck_assert(memcmp(s.data + escapes, "[m", 2) == 0);

        /* The same million ESC before an introducer: all dropped with the string. */
        f = (termfilter) {};
        s.size = 0;
        for (int i = 0; i < 16; i++)
                feed(&f, &s, buf, piece);
        feed(&f, &s, (const uint8_t *) "]0;x\007ok", 7);
        expect_output(&s, "ok", 2, "escapes before a string");
        free(s.data);
        free(buf);
}
END_TEST

START_TEST(test_fast_path)
{
        /* No ESC and no C2: the input itself, in one piece. */
        static const char text[] = "a line of plain output, UTF-8 too: ← é 日本\n";
        termfilter f = {};
        sink s = {};
        ck_assert_int_eq(termfilter_feed(&f, text, sizeof text - 1, collect, &s), 0);
        ck_assert_uint_eq(s.pieces, 1);
        ck_assert_ptr_eq(s.first_piece, text);
        /* Colour codes that pass do not cut the piece either. */
        static const char colour[] = "\033[31mred\033[0m and \033[1mbold\033[0m\n";
        s = (sink) { .data = s.data, .allocated = s.allocated };
        ck_assert_int_eq(termfilter_feed(&f, colour, sizeof colour - 1, collect, &s), 0);
        ck_assert_uint_eq(s.pieces, 1);
        ck_assert_ptr_eq(s.first_piece, colour);
        free(s.data);
}
END_TEST

START_TEST(test_emit_error)
{
        termfilter f = {};
        sink s = { .fail = -EPIPE };
        ck_assert_int_eq(termfilter_feed(&f, "text", 4, collect, &s), -EPIPE);
        f = (termfilter) {};
        ck_assert_int_eq(termfilter_feed(&f, "a\033]0;x\007b", 9, collect, &s), -EPIPE);
        f = (termfilter) {};
        s.fail = 0;
        ck_assert_int_eq(termfilter_feed(&f, "\033", 1, collect, &s), 0);
        s.fail = -EIO;
        ck_assert_int_eq(termfilter_feed(&f, "[m", 2, collect, &s), -EIO);
}
END_TEST

static Suite *termfilter_suite(void)
{
        Suite *s = suite_create("termfilter");
        suite_add_tests(s, "strings", NULL, NULL, test_osc, test_c0_inside_escape, test_dcs_sos_pm_apc, test_c1_forms,
                        test_string_ends);
        suite_add_tests(s, "passes", NULL, NULL, test_utf8_continuation_is_not_c1, test_csi_and_text_pass,
                        test_fast_path);
        suite_add_tests(s, "stream", NULL, NULL, test_no_introducer_by_joining, test_end_of_stream, test_long_strings,
                        test_emit_error);
        return s;
}

int main(void)
{
        return unit_run(termfilter_suite());
}
