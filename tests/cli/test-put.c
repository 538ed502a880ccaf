/* SPDX-License-Identifier: MIT */
/*
 * cli_put and cli_put_keeping: what the agent names (a path in a layer, a host it asked for)
 * reaches the terminal without a control: C0, DEL, C1 as UTF-8 writes it, and every byte
 * that is not well-formed UTF-8 (a lone 0x9b is CSI to a terminal in 8-bit mode) shown as
 * \xNN; well-formed UTF-8 as it is.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "../suite-table.h"

static void expect(const char *in, const char *keep, const char *want)
{
        char *got = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&got, &size);
        ck_assert_ptr_nonnull(f);
        cli_put_keeping(f, in, keep);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_msg(strcmp(got, want) == 0, "\"%s\": got \"%s\", want \"%s\"", in, got, want);
        free(got);
}

START_TEST(test_controls)
{
        expect("plain", "", "plain");
        expect("a\nb\tc", "", "a\\x0ab\\x09c");
        expect("a\nb\tc", "\t\n", "a\nb\tc");
        expect("\x1b[31mred", "", "\\x1b[31mred");
        expect("del\x7f", "", "del\\x7f");
        expect("c1 \xc2\x9b" "2J", "", "c1 \\xc2\\x9b2J");
}
END_TEST

START_TEST(test_utf8)
{
        /* Well-formed: é, €, 𝄞, and U+00A0 (C2 A0, not a control). */
        expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xc2\xa0", "", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xc2\xa0");
        /* A lone CSI, a lone continuation byte, a lead byte cut short by the end or by ASCII. */
        expect("x\x9b" "2J", "", "x\\x9b2J");
        expect("\x80", "", "\\x80");
        expect("\xe2\x82", "", "\\xe2\\x82");
        expect("\xc3" "a", "", "\\xc3a");
        /* Overlong forms, a surrogate, beyond U+10FFFF, bytes never in UTF-8. */
        expect("\xc0\x9b", "", "\\xc0\\x9b");
        expect("\xe0\x80\x9b", "", "\\xe0\\x80\\x9b");
        expect("\xed\xa0\x80", "", "\\xed\\xa0\\x80");
        expect("\xf4\x90\x80\x80", "", "\\xf4\\x90\\x80\\x80");
        expect("\xff\xfe", "", "\\xff\\xfe");
}
END_TEST

int main(void)
{
        return suites_run(suite_of("cli-put", "put", test_controls, test_utf8));
}
