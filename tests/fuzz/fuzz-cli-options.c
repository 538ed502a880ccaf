/* SPDX-License-Identifier: MIT */
/*
 * The CLI's option splitting (cli_parse_options): where aisb's options end and the
 * harness's arguments begin, and every value on the way into aisb_policy_set(). Scripts and
 * agents build these command lines. The first byte picks "aisb run" or "aisb build"; the
 * rest is argv, split at newlines and NUL bytes. Keys that open files stay inside the
 * fixture directory (fixture.h). Checked: the result is 0 or the usage code, the rest index
 * is in range and a "--" ended the options only when it was there, and an error is exactly
 * one "aisb: ..." line on stderr (captured for the call, so libFuzzer's own reports still
 * reach the terminal).
 */
#include "internal.h"
#include "fixture.h"
#include "options.h"

#define ARGS_MAX 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        fixture_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || !fixture_input_safe(data, size))
                return 0;
        fixture_setup();
        bool for_build = data[0] & 1;
        char *copy = fuzz_strndup(data + 1, size - 1);
        char *argv[ARGS_MAX + 1];
        int argc = size > 1 ? (int) fuzz_split_lines(copy, size - 1, argv, ARGS_MAX) : 0;
        argv[argc] = NULL;
        /* The parser reads, never writes, argv: keep a copy of the pointers to prove it. */
        char *original[ARGS_MAX + 1];
        memcpy(original, argv, sizeof argv);

        int saved = fixture_enter();
        aisb_policy *p = NULL;
        aisb_error *err = NULL;
        /* As aisb(1) makes it: the fixture, the current directory, is the project. */
        FUZZ_CHECK(aisb_policy_new(&p, &err) == 0 && aisb_policy_apply_environment(p, &err) == 0);
        cli_flags flags = {};
        int rest = -1;
        bool dashdash = true;

        char *said = NULL;
        size_t said_size = 0;
        FILE *capture = open_memstream(&said, &said_size);
        if (!capture)
                abort();
        FILE *real_stderr = stderr;
        stderr = capture;
        int r = cli_parse_options(argc, argv, for_build, p, &flags, &rest, &dashdash);
        stderr = real_stderr;
        fclose(capture);

        FUZZ_CHECK(memcmp(original, argv, sizeof argv) == 0);
        /* The one thing a successful parse may say: the --env NAME=VALUE warning, one line,
         * without the value (the harness's values never hold "...", which it shows instead). */
        static const char env_warning[] = "aisb: warning: --env ";
        bool warned = said_size > sizeof env_warning && strncmp(said, env_warning, sizeof env_warning - 1) == 0 &&
                      memchr(said, '\n', said_size) == said + said_size - 1 && strstr(said, "=... shows the value");
        if (r == 0) {
                FUZZ_CHECK(said_size == 0 || warned);
                FUZZ_CHECK(rest >= 0 && rest <= argc);
                FUZZ_CHECK(!dashdash || (rest >= 1 && streq(argv[rest - 1], "--")));
                if (for_build)
                        FUZZ_CHECK(rest == argc || dashdash);
        } else {
                FUZZ_CHECK(r == EXIT_USAGE);
                bool one_line = said_size > 7 && strncmp(said, "aisb: ", 6) == 0 &&
                                said[said_size - 1] == '\n' &&
                                memchr(said, '\n', said_size) == said + said_size - 1;
                if (!one_line)
                        fprintf(real_stderr, "said: [%s]\n", said);
                FUZZ_CHECK(one_line);
        }
        free(said);
        aisb_policy_free(p);
        fixture_leave(saved);
        free(copy);
        return 0;
}
