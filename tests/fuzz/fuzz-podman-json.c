/* SPDX-License-Identifier: MIT */
/*
 * JSON from the podman service: the NDJSON lines of a build (build_parse_line, fed line by
 * line as http.c's line mode does) and an error body (podman_error_message, which every
 * refused request quotes). The service runs as the user, but a compromised or confused one
 * must not crash the CLI or break its one-line error contract.
 * Checked: a line yields a stream, an error or nothing, never both, and -EBADMSG leaves
 * nothing; the error message is one line of at most 511 bytes without control characters.
 */
#include "internal.h"
#include "fuzz.h"

static void check_line(const char *line, size_t size)
{
        char *stream = (char *) 1, *error = (char *) 1;
        int r = build_parse_line(line, size, &stream, &error);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        FUZZ_CHECK(!(stream && error));
        if (r < 0)
                FUZZ_CHECK(!stream && !error);
        free(stream);
        free(error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *body = fuzz_strndup(data, size);
        /* Line mode hands over each non-empty line without its newline, and the tail. */
        for (size_t start = 0; start < size;) {
                const char *nl = memchr(body + start, '\n', size - start);
                size_t end = nl ? (size_t) (nl - body) : size;
                if (end > start) {
                        char *line = malloc(end - start);
                        if (!line)
                                abort();
                        memcpy(line, body + start, end - start);
                        check_line(line, end - start);
                        free(line);
                }
                start = end + 1;
        }

        http_response response = { .status = 500, .body = body, .body_size = size };
        const char *m = podman_error_message(&response);
        FUZZ_CHECK(m && fuzz_one_line(m) && strlen(m) < 512);
        for (const char *c = m; *c; c++)
                FUZZ_CHECK((unsigned char) *c >= 0x20 && *c != 0x7f);
        free(body);
        return 0;
}
