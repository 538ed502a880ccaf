/* SPDX-License-Identifier: MIT */
/*
 * An allocator that fails on purpose, for the out-of-memory tests: for N = 0, 1, 2, ... the
 * N-th allocation of this thread fails (and only that one). FAIL_ALLOC_DEFINE(ATTR) defines
 * malloc, calloc and realloc with ATTR: nothing, for the library's own allocations only (the
 * tests build with -fvisibility=hidden), or default visibility, for json-c's and libc's too.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

/* Allocations of this thread to let through before one fails; -1: none fails. */
static __thread long countdown = -1;
static __thread bool failed_one;

static bool fail_now(void)
{
        if (countdown < 0 || countdown-- > 0)
                return false;
        failed_one = true;
        errno = ENOMEM;
        return true;
}

#define FAIL_ALLOC_DEFINE(attr)                                                    \
        attr void *malloc(size_t size)                                             \
        {                                                                          \
                return fail_now() ? NULL : __libc_malloc(size);                    \
        }                                                                          \
        attr void *calloc(size_t n, size_t size)                                   \
        {                                                                          \
                return fail_now() ? NULL : __libc_calloc(n, size);                 \
        }                                                                          \
        attr void *realloc(void *p, size_t size)                                   \
        {                                                                          \
                return fail_now() ? NULL : __libc_realloc(p, size);                \
        }
