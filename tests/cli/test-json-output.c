/* SPDX-License-Identifier: MIT */
/*
 * --json output (cli/json-output.c): DEL and the C1 controls as UTF-8 (C2 80..C2 9F) leave
 * as \u escapes, and so would a raw C0 byte; everything else, UTF-8 included, as it was. What
 * it prints of an object parses back to the same strings and holds no control byte.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "json-output.h"
#include "../suite-table.h"

/* A stream into memory for json-output.c's printers to write to; closed, the text they wrote. */
typedef struct written {
        char *text;
        size_t size;
        FILE *f;
} written;

static FILE *written_open(written *w)
{
        *w = (written) {};
        w->f = open_memstream(&w->text, &w->size);
        ck_assert_ptr_nonnull(w->f);
        return w->f;
}

static char *written_close(written *w)
{
        ck_assert_int_eq(fclose(w->f), 0);
        return w->text;
}

static char *put_text(const char *text)
{
        written w;
        cli_put_json_text(written_open(&w), text);
        return written_close(&w);
}

static void expect_text(const char *text, const char *expected)
{
        char *got = put_text(text);
        ck_assert_str_eq(got, expected);
        free(got);
}

START_TEST(test_escapes)
{
        /* The C1 controls, first and last, and the OSC introducer U+009D. */
        expect_text("\"a\xc2\x80" "b\"", "\"a\\u0080b\"");
        expect_text("\"\xc2\x9f\"", "\"\\u009f\"");
        expect_text("\"x\xc2\x9d" "0;PWNED\xc2\x9c\"", "\"x\\u009d0;PWNED\\u009c\"");
        expect_text("\"\x7f\"", "\"\\u007f\"");
        /* Raw C0 (not json-c's): escaped too. */
        expect_text("\"\x1b]0;t\x07\"", "\"\\u001b]0;t\\u0007\"");
        /* Not controls: NBSP (C2 A0), é, …, a C2 at the end, a lone continuation byte. */
        expect_text("\"\xc2\xa0\xc3\xa9\xe2\x80\xa6\"", "\"\xc2\xa0\xc3\xa9\xe2\x80\xa6\"");
        expect_text("\"a\xc2", "\"a\xc2");
        expect_text("{\"k\":1,\"s\":\"\\u0007\"}", "{\"k\":1,\"s\":\"\\u0007\"}");
        expect_text(NULL, "");
}
END_TEST

START_TEST(test_object)
{
        static const char name[] = "skills/evil\xc2\x9d" "0;PWNED\xc2\x9c\x7f\x1b]52;c;x\x07 \"q\" \xc3\xa9.env";
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(name));
        json_object_object_add(o, "line", json_object_new_int(3));
        written w;
        cli_print_json(written_open(&w), o);
        char *out = written_close(&w);
        size_t size = w.size;
        json_object_put(o);
        /* One line, no control byte in it. */
        ck_assert_uint_gt(size, 1);
        ck_assert_int_eq(out[size - 1], '\n');
        for (size_t i = 0; i + 1 < size; i++) {
                unsigned char c = (unsigned char) out[i];
                ck_assert_msg(c >= 0x20 && c != 0x7f, "byte %02x at %zu: %s", c, i, out);
                ck_assert_msg(!(c == 0xc2 && (unsigned char) out[i + 1] >= 0x80 && (unsigned char) out[i + 1] <= 0x9f),
                              "C1 at %zu: %s", i, out);
        }
        /* The same value. */
        json_object *back = json_tokener_parse(out);
        ck_assert_ptr_nonnull(back);
        json_object *path;
        ck_assert(json_object_object_get_ex(back, "path", &path));
        ck_assert_str_eq(json_object_get_string(path), name);
        json_object_put(back);
        free(out);
}
END_TEST

int main(void)
{
        return suites_run(suite_of("json-output", "json-output", test_escapes, test_object));
}
