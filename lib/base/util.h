/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the library, the CLI and the tests: cleanup attributes, string
 * vectors, growable buffers, parsing of booleans and sizes. Files are fileio.h's, trust checks
 * pathtrust.h's, SHA-256 digest.h's, the host's addresses hostaddr.h's. Nothing here allocates
 * behind the caller's back. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p) { free(*(void **) p); }
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
        *fd = -1; /* closed early, it is not closed again at cleanup */
}
static inline void fclosep(FILE **f)
{
        if (*f)
                (void) fclose(*f);
        *f = NULL;
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Define a cleanup function for pointers to a type whose destructor takes the pointer. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p)                      \
        {                                                        \
                if (*p)                                          \
                        func(*p);                                \
        }

/* Take ownership: return the pointer and leave NULL behind, type-safe. */
#define steal_pointer(pp)                                        \
        ({                                                       \
                __typeof__(*(pp)) _tmp_ = *(pp);                 \
                *(pp) = NULL;                                    \
                _tmp_;                                           \
        })
#define steal_fd(fdp)                                            \
        ({                                                       \
                int _tmpfd_ = *(fdp);                            \
                *(fdp) = -1;                                     \
                _tmpfd_;                                         \
        })

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define streq(a, b) (strcmp((a), (b)) == 0)

static inline bool startswith(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* NULL-terminated string vectors. */
char **strv_copy(const char *const *v);
size_t strv_length(const char *const *v);
bool strv_contains(const char *const *v, const char *s);
int strv_push(char ***v, const char *s); /* copies s; -ENOMEM */
int strv_pushf(char ***v, const char *fmt, ...) _printf_(2, 3);
void strv_free(char **v);
/* In strcmp order, in place. */
void strv_sort(char **v);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Overwrite then free: for anything that held a secret. */
void free_secret(char *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(char *, free_secret)
#define _cleanup_secret_ _cleanup_(free_secretp)

/* One variable passed into a sandbox. */
typedef struct env_entry {
        char *name;
        char *value; /* secret: wiped on free */
} env_entry;

/* Room for one more item in the array items (n held, allocated allotted: doubled when full,
 * first at the start): 0, or -ENOMEM with the array as it was. */
#define ARRAY_GROW(items, allocated, n, first) array_grow((void **) &(items), &(allocated), (n), sizeof *(items), (first))
static inline int array_grow(void **items, size_t *allocated, size_t n, size_t size, size_t first)
{
        if (n < *allocated)
                return 0;
        size_t grow = *allocated ? *allocated * 2 : first;
        void *more = reallocarray(*items, grow, size);
        if (!more)
                return -ENOMEM;
        *items = more;
        *allocated = grow;
        return 0;
}

/* A growable byte buffer, always NUL-terminated. */
typedef struct buffer {
        char *data;
        size_t size;
        size_t allocated;
} buffer;
int buffer_append(buffer *b, const void *data, size_t size);
int buffer_printf(buffer *b, const char *fmt, ...) _printf_(2, 3);
void buffer_free(buffer *b);
char *buffer_steal(buffer *b);

/* "yes"/"true"/"1"/"on" and their opposites; -EINVAL otherwise. */
int parse_bool(const char *s);
/* Sizes such as "512m", "4g", "1024" (bytes); -EINVAL / -ERANGE. */
int parse_size(const char *s, unsigned long long *ret);
int parse_uint(const char *s, unsigned long long max, unsigned long long *ret);
