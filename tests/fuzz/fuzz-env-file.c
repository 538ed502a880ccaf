/* SPDX-License-Identifier: MIT */
/*
 * The --env-file parser (policy_env_file_parse): NAME=VALUE lines, '#' comments, CRLF.
 * Checked: a failure is one line that names the origin and never echoes a value (values are
 * secrets); every accepted name is a valid variable name and appears once; and writing the
 * entries back as NAME=VALUE lines parses to the same entries (for values that do not end
 * in a carriage return, which the parser strips once per line).
 */
#include "internal.h"
#include "fuzz.h"

static void check_roundtrip(const env_entry *e, size_t n)
{
        buffer b = {};
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(e[i].value);
                if (len && e[i].value[len - 1] == '\r') {
                        buffer_free(&b);
                        return;
                }
                FUZZ_CHECK(buffer_printf(&b, "%s=%s\n", e[i].name, e[i].value) == 0);
        }
        env_entry *again = NULL;
        size_t n_again = 0;
        aisb_error *err = NULL;
        FUZZ_CHECK(policy_env_file_parse(b.data ? b.data : "", b.size, "again", &again, &n_again,
                                         &err) == 0);
        FUZZ_CHECK(n_again == n);
        for (size_t i = 0; i < n; i++)
                FUZZ_CHECK(streq(again[i].name, e[i].name) && streq(again[i].value, e[i].value));
        env_entries_free(again, n_again);
        buffer_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size ? size : 1);
        if (!text)
                abort();
        memcpy(text, data, size);
        env_entry *entries = NULL;
        size_t n = 0;
        aisb_error *err = NULL;
        int r = policy_env_file_parse(text, size, "fuzz.env", &entries, &n, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL);
                const char *m = aisb_error_message(err);
                FUZZ_CHECK(err && fuzz_one_line(m) && strncmp(m, "fuzz.env:", 9) == 0);
                /* No value of this input in the message: only the fixed texts may follow. */
                const char *why = strchr(m + 9, ':');
                FUZZ_CHECK(why && (streq(why, ": NUL byte in line") ||
                                   streq(why, ": expected NAME=VALUE") ||
                                   streq(why, ": invalid variable name (use letters, digits and _)")));
                aisb_error_free(err);
        } else {
                FUZZ_CHECK(r == 0 && !err);
        }
        for (size_t i = 0; i < n; i++) {
                FUZZ_CHECK(env_name_valid(entries[i].name) && entries[i].value);
                FUZZ_CHECK(!strchr(entries[i].value, '\n'));
                for (size_t j = 0; j < i; j++)
                        FUZZ_CHECK(!streq(entries[i].name, entries[j].name));
        }
        if (r == 0)
                check_roundtrip(entries, n);
        env_entries_free(entries, n);
        free(text);
        return 0;
}
