/* SPDX-License-Identifier: MIT */
/*
 * The gate's access log (egress_count_line), which aisb reads after a run to say what the
 * sandbox tried to reach. Every field of a line comes from the sandbox's own requests (the
 * host name, the method), so it is hostile input. The input is a log, one line per '\n',
 * counted into one summary as egress_summary_read() does.
 * Checked: a line is counted once (allowed, denied or failed) or refused; the counters add
 * up; the denied and the failed names are bounded, terminated, free of whitespace and not
 * repeated.
 */
#include <ctype.h>

#include "internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        egress_summary s;
        memset(&s, 0, sizeof s);
        unsigned long counted = 0;
        char *log = fuzz_strndup(data, size);
        for (char *line = log, *next; line && line < log + size; line = next) {
                char *nl = memchr(line, '\n', (size_t) (log + size - line));
                next = nl ? nl + 1 : NULL;
                if (nl)
                        *nl = 0;
                /* getline() keeps the newline; egress_count_line must cope with it. */
                size_t len = strlen(line);
                char *with_newline = malloc(len + 2);
                if (!with_newline)
                        abort();
                memcpy(with_newline, line, len);
                memcpy(with_newline + len, "\n", 2);
                unsigned long before = s.allowed + s.denied + s.failed;
                int r = egress_count_line(&s, with_newline);
                free(with_newline);
                FUZZ_CHECK(r == 0 || r == -EBADMSG);
                FUZZ_CHECK(s.allowed + s.denied + s.failed - before <= (r == 0 ? 1u : 0u));
                counted += s.allowed + s.denied + s.failed - before;
        }
        FUZZ_CHECK(s.allowed + s.denied + s.failed == counted);
        FUZZ_CHECK(s.n_denied_names <= ELEMENTSOF(s.denied_names) && s.n_denied_names <= s.denied);
        FUZZ_CHECK(s.n_failed_names <= ELEMENTSOF(s.failed_names) && s.n_failed_names <= s.failed);
        for (int kind = 0; kind < 2; kind++) {
                char (*names)[sizeof s.denied_names[0]] = kind ? s.failed_names : s.denied_names;
                size_t n = kind ? s.n_failed_names : s.n_denied_names;
                for (size_t i = 0; i < n; i++) {
                        const char *name = names[i];
                        FUZZ_CHECK(memchr(name, 0, sizeof names[i]) && *name);
                        for (const char *c = name; *c; c++)
                                FUZZ_CHECK(!isspace((unsigned char) *c));
                        for (size_t j = 0; j < i; j++)
                                FUZZ_CHECK(!streq(name, names[j]));
                }
        }
        free(log);
        return 0;
}
