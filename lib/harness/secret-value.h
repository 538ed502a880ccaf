/* SPDX-License-Identifier: MIT */
/*
 * What a value looks like, for the scanner's rules (secret-scan.h): random or made of words,
 * a placeholder documentation puts where a secret would go, base64 of plain text. Pure
 * functions of a run of bytes, no I/O, no allocation; docs/skill-lint.md says why the numbers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The most bytes secret_base64_of_text decodes: more than any token the entropy rule reads
 * (SKILLS_SCAN_ENTROPY_MAX) holds. */
#define SECRET_DECODED_MAX 200

static inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
static inline bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
static inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static inline char lower(char c) { return is_upper(c) ? (char) (c - 'A' + 'a') : c; }

static inline bool contains_ci(const char *s, size_t n, const char *needle)
{
        size_t m = strlen(needle);
        for (size_t i = 0; i + m <= n; i++) {
                size_t k = 0;
                while (k < m && lower(s[i + k]) == needle[k])
                        k++;
                if (k == m)
                        return true;
        }
        return false;
}

static inline bool equals_ci(const char *s, size_t n, const char *word)
{
        size_t m = strlen(word);
        if (m != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (lower(s[i]) != word[i])
                        return false;
        return true;
}

static inline bool starts_with(const char *s, size_t n, const char *prefix)
{
        size_t m = strlen(prefix);
        return n >= m && memcmp(s, prefix, m) == 0;
}

/* The share of characters in word-like runs ([A-Z]?[a-z]{3,}). */
double secret_word_fraction(const char *s, size_t n);
/* Whether a token is a name or a path: pieces between separators that are words, or a long
 * hex number. */
bool secret_structured(const char *s, size_t n);
/* What documentation puts where a secret would go ("your-api-key", "xxxx", "changeme"). */
bool secret_placeholder(const char *v, size_t n);
/* Base64 (URL-safe or standard, padding optional) decoded into out, at most out_size bytes
 * kept: the decoded size, or SIZE_MAX when s is not base64. */
size_t secret_base64_decode(const char *s, size_t n, unsigned char *out, size_t out_size);
/* Base64 of ordinary text ("SGVsbG8gd29ybGQ="): random-looking, but not a secret. */
bool secret_base64_of_text(const char *s, size_t n);
