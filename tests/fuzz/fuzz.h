/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer harnesses of tests/fuzz and their plain driver (standalone.c):
 * the entry points, an invariant check that says which one broke, and small helpers for
 * turning fuzz input into C strings. Header-only so each harness stays one file. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, once per process before any input (libFuzzer calls it when defined). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* An invariant of the code under test; abort() so libFuzzer records the input. */
#define FUZZ_CHECK(cond)                                                                      \
        do {                                                                                  \
                if (!(cond)) {                                                                \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                              \
                }                                                                             \
        } while (0)

/* A NUL-terminated copy (the input itself may hold NUL bytes); abort on no memory. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        if (!s)
                abort();
        if (size)
                memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/* The library's error contract: a message is one non-empty line without a newline. */
static inline bool fuzz_one_line(const char *message)
{
        return message && *message && !strchr(message, '\n');
}

/* Split a NUL-terminated copy of size bytes in place at every newline and NUL byte into at
 * most max pieces, none holding a newline (what follows the max-th piece is dropped);
 * returns how many. */
static inline size_t fuzz_split_lines(char *s, size_t size, char **pieces, size_t max)
{
        size_t n = 0;
        char *end = s + size;
        while (n < max) {
                pieces[n++] = s;
                char *p = s;
                while (p < end && *p != '\n' && *p != 0)
                        p++;
                if (p >= end)
                        break;
                *p = 0;
                s = p + 1;
        }
        return n;
}
