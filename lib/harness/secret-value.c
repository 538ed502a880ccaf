/* SPDX-License-Identifier: MIT */
/* What a value looks like (secret-value.h): the judgements the scanner's rules share. */
#include <stdint.h>

#include <nettle/base64.h>

#include "secret-value.h"

/* The share of characters in word-like runs ([A-Z]?[a-z]{3,}): identifiers and hyphenated
 * names are mostly words, random tokens rarely (under 0.6 in 99% of 24-character ones). */
double secret_word_fraction(const char *s, size_t n)
{
        size_t in_words = 0;
        for (size_t i = 0; i < n;) {
                size_t j = i + (is_upper(s[i]) ? 1 : 0);
                size_t k = j;
                while (k < n && is_lower(s[k]))
                        k++;
                if (k - j >= 3) {
                        in_words += k - i;
                        i = k;
                } else
                        i = k > i ? k : i + 1;
        }
        return n ? (double) in_words / (double) n : 0;
}

/* Whether a separated piece of a token is one word: "tests", "Meta", "TRUST", "get0",
 * "x509", "2020". */
static bool one_word(const char *s, size_t n)
{
        size_t i = 0;
        if (i < n && is_upper(s[i]))
                i++;
        bool upper_run = i == 1 && i < n && is_upper(s[i]);
        if (upper_run)
                while (i < n && is_upper(s[i]))
                        i++;
        else if (i < n && is_lower(s[i]))
                while (i < n && is_lower(s[i]))
                        i++;
        while (i < n && is_digit(s[i]))
                i++;
        return i == n;
}

/* The share of characters in pieces between separators (- _ / + .) that are words of 3 or
 * more characters, and whether a piece is a long hex number: "mozilla/D-TRUST_Root_CA_1",
 * "AISB_SRC/tests/e2e", "NODE_SEA_FUSE_fce680ab..." are names and paths. Random tokens
 * have few separators, and their pieces are rarely words: the cut of 0.3 costs no random
 * token of the corpus (docs/skill-lint.md). */
bool secret_structured(const char *s, size_t n)
{
        size_t in_words = 0;
        for (size_t i = 0; i < n;) {
                size_t j = i;
                while (j < n && !strchr("-_/+.", s[j]))
                        j++;
                size_t m = j - i;
                bool hex = m >= 16;
                for (size_t k = i; hex && k < j; k++)
                        hex = is_hex(s[k]);
                if (hex)
                        return true;
                if (m >= 3 && one_word(s + i, m))
                        in_words += m;
                i = j + 1;
        }
        return in_words * 10 >= n * 3;
}

bool secret_placeholder(const char *v, size_t n)
{
        static const char *const markers[] = {
                "example", "sample", "placeholder", "changeme", "change_me", "change-me", "your",
                "dummy", "fake", "redacted", "replace", "insert", "xxxx", "****", "...",
                "\xe2\x80\xa6" /* … */, "<", ">", "{{", "}}", "${", "$(", "%(", "todo", "fixme",
        };
        static const char *const words[] = {
                "password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "admin",
                "root", "test", "testing", "user", "username", "pass", "null", "nil", "none",
                "true", "false", "undefined", "string", "hunter2", "letmein", "default", "empty",
                "required", "optional", "value", "foobar", "qwerty", "secret123", "password123",
        };
        if (n == 0)
                return true;
        for (size_t i = 0; i < sizeof markers / sizeof *markers; i++)
                if (contains_ci(v, n, markers[i]))
                        return true;
        for (size_t i = 0; i < sizeof words / sizeof *words; i++)
                if (equals_ci(v, n, words[i]))
                        return true;
        /* Few distinct characters ("aaaaaaaa", "abababab"), or mostly a counting sequence
         * ("1234567890abcdef"). */
        bool seen[256] = { false };
        size_t distinct = 0, ascending = 0;
        for (size_t i = 0; i < n; i++) {
                if (!seen[(unsigned char) v[i]]) {
                        seen[(unsigned char) v[i]] = true;
                        distinct++;
                }
                if (i > 0 && (unsigned char) v[i] == (unsigned char) v[i - 1] + 1)
                        ascending++;
        }
        if (distinct < (n >= 8 ? 4 : 3))
                return true;
        return n >= 8 && ascending * 2 >= n - 1;
}

/* URL-safe when s holds '-' or '_'. What follows the first '=' is not read. */
size_t secret_base64_decode(const char *s, size_t n, unsigned char *out, size_t out_size)
{
        const char *pad = memchr(s, '=', n);
        if (pad)
                n = (size_t) (pad - s);
        struct base64_decode_ctx ctx;
        if (memchr(s, '-', n) || memchr(s, '_', n))
                base64url_decode_init(&ctx);
        else
                base64_decode_init(&ctx);
        /* Either alphabet's letters only: nettle would pass over whitespace. */
        for (size_t i = 0; i < n; i++)
                if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '+' && s[i] != '/' && s[i] != '-' &&
                    s[i] != '_')
                        return SIZE_MAX;
        size_t o = 0;
        for (size_t i = 0; i < n; i += 64) {
                size_t chunk = n - i < 64 ? n - i : 64;
                uint8_t decoded[BASE64_DECODE_LENGTH(64)];
                size_t m = sizeof decoded;
                if (!base64_decode_update(&ctx, &m, decoded, chunk, s + i))
                        return SIZE_MAX;
                for (size_t j = 0; j < m && o < out_size; j++)
                        out[o++] = decoded[j];
        }
        return o;
}

bool secret_base64_of_text(const char *s, size_t n)
{
        unsigned char out[SECRET_DECODED_MAX];
        size_t m = secret_base64_decode(s, n, out, sizeof out);
        if (m == SIZE_MAX || m < 12)
                return false;
        size_t printable = 0;
        for (size_t i = 0; i < m; i++)
                printable += (out[i] >= 0x20 && out[i] < 0x7f) || out[i] == '\n' || out[i] == '\t' ||
                             out[i] == '\r';
        return printable * 10 >= m * 9;
}
