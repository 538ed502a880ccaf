/* SPDX-License-Identifier: MIT */
/*
 * The skills linter's scanner (skills_scan, skills_scan_history): the files of a
 * directory the user cloned, and git's output from a sandbox over that repository, so
 * input nobody vouches for. Byte 0: bit 7 set reads the rest as git log output, else as a
 * file whose name bits 0-2 choose (the name decides which rules apply).
 * Checked: every finding's value lies inside the input, is not empty and holds no newline;
 * a file's finding is on the line it names, which lies within the input's lines; the masked
 * form holds at most four characters of the value (and a quarter of one under 16), each
 * either the value's own or '?', then "…" and the value's length, and nothing else; a
 * history finding's commit is hex of at most 40 characters and its path holds no newline;
 * the work the scan counts stays within SKILLS_SCAN_WORK_PER_BYTE a byte.
 */
#include "fuzz.h"
#include "secret-scan.h"

typedef struct input {
        const char *data;
        size_t size;
        unsigned long first_line;
        bool history;
        unsigned long findings;
} input;

static void check_masked(const skills_finding *f)
{
        static const char ellipsis[] = "\xe2\x80\xa6";
        const char *dots = strstr(f->masked, ellipsis);
        FUZZ_CHECK(dots != NULL);
        size_t shown = (size_t) (dots - f->masked);
        FUZZ_CHECK(shown <= 4);
        FUZZ_CHECK(f->value_size >= 16 || shown <= f->value_size / 4);
        for (size_t i = 0; i < shown; i++)
                FUZZ_CHECK(f->masked[i] == f->value[i] || f->masked[i] == '?');
        char tail[40];
        snprintf(tail, sizeof tail, " (%zu chars)", f->value_size);
        FUZZ_CHECK(strcmp(dots + sizeof ellipsis - 1, tail) == 0);
}

static int check(const skills_finding *f, void *userdata)
{
        input *in = userdata;
        in->findings++;
        FUZZ_CHECK(f->kind && *f->kind);
        FUZZ_CHECK(f->value_size > 0);
        FUZZ_CHECK(f->value >= in->data && f->value + f->value_size <= in->data + in->size);
        FUZZ_CHECK(!memchr(f->value, '\n', f->value_size));
        check_masked(f);
        if (in->history) {
                FUZZ_CHECK(f->commit && f->path);
                size_t n = strlen(f->commit);
                FUZZ_CHECK(n <= 40);
                for (size_t i = 0; i < n; i++)
                        FUZZ_CHECK(strchr("0123456789abcdefABCDEF", f->commit[i]) && f->commit[i]);
                FUZZ_CHECK(!strchr(f->path, '\n'));
                return 0;
        }
        FUZZ_CHECK(!f->commit && !f->path);
        /* The line it names is the one the value is on, and one of the input's. */
        unsigned long lines = 1, before = 0;
        for (size_t i = 0; i < in->size; i++)
                if (in->data[i] == '\n') {
                        if (i + 1 < in->size)
                                lines++;
                        if (in->data + i < f->value)
                                before++;
                }
        FUZZ_CHECK(f->line >= in->first_line && f->line < in->first_line + lines);
        FUZZ_CHECK(f->line == in->first_line + before);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const names[] = {
                "SKILL.md", ".env", "skills/x/config.yaml", ".netrc",
                "package-lock.json", ".git/config", "run.sh", "notes",
        };
        if (size < 1)
                return 0;
        /* An exact-size copy: a read past the input is the sanitizers' to see. */
        char *copy = malloc(size - 1 ? size - 1 : 1);
        if (!copy)
                abort();
        memcpy(copy, data + 1, size - 1);
        input in = { .data = copy, .size = size - 1, .first_line = 1 + (data[0] & 0x70),
                     .history = data[0] & 0x80 };
        unsigned long long examined = 0;
        if (in.history)
                FUZZ_CHECK(skills_scan_history_measured(copy, in.size, check, &in, &examined) == 0);
        else
                FUZZ_CHECK(skills_scan_measured(copy, in.size, names[data[0] & 7], in.first_line, check, &in,
                                                   &examined) == 0);
        /* Linear, whatever the input: a line that makes some rule read the same bytes again
         * for each of its positions grows past this (a 4 KiB line of "token:" cost 693 a
         * byte before the key = value rule was bounded). */
        FUZZ_CHECK(examined <= SKILLS_SCAN_WORK_PER_BYTE * (unsigned long long) in.size + SKILLS_SCAN_WORK_PER_BYTE);
        free(copy);
        return 0;
}
