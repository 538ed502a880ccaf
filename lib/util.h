/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the library, the CLI and the tests: cleanup attributes, string
 * vectors, growable buffers. Nothing here allocates behind the caller's back. */
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
}
static inline void fclosep(FILE **f)
{
        if (*f)
                (void) fclose(*f);
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
int strv_push(char ***v, const char *s); /* copies s; -ENOMEM */
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

/* Read a whole file (at most max bytes) into a NUL-terminated string. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);
/* Each line of fd from where it stands, without its newline, to fn (which may change it); at
 * most max bytes are read, and a line longer than line_max is skipped whole. Stops when fn
 * returns nonzero and passes that on; 0 at the end (or the cap), negative errno on a read
 * error. */
int read_lines(int fd, size_t max, size_t line_max, int (*fn)(char *line, void *userdata),
               void *userdata);
int write_all(int fd, const void *data, size_t size);
/* Create path and every directory above it that is missing (mode for each); an existing one
 * is no error. */
int mkdir_p(const char *path, mode_t mode);
/* dirfd/path/... as a directory, one component at a time, each opened with O_NOFOLLOW |
 * O_NONBLOCK (a link on the way: -ELOOP or -ENOTDIR), created (0700) where missing with
 * create. path "" is dirfd itself (a new descriptor). A negative errno. */
int open_dir_nofollow(int dirfd, const char *path, bool create);
/* All of the pieces, in order, across partial writes; the iovecs are consumed. */
int writev_all(int fd, struct iovec *iov, size_t n);
/* size bytes at offset, across short reads; -ENODATA if the file ends sooner. */
int pread_exactly(int fd, void *buf, size_t size, uint64_t offset);

/* Whether uid can trust what lives at path, absolute: a podman socket there is the one uid or
 * root put there and no one else can swap it. Every component from / down must belong to uid
 * or root, and no directory may be writable by anyone else (group root counts as root), except
 * a root-owned sticky directory such as /tmp, whose entries only their owners can replace. A
 * symlink passes only when uid or root owns it, and then the path it leads to must pass as a
 * whole. 0 when trusted; -EPERM when not, with why ("/tmp/x belongs to uid 1005 (eve)") in
 * reason; -ENOENT when a component is missing (everything above it passed, but mind that a
 * sticky directory lets anyone create the missing name); another negative errno when a
 * component cannot be examined, or -EINVAL for a relative path. */
int path_check_trusted(const char *path, uid_t uid, char *reason, size_t reason_size);

/* "yes"/"true"/"1"/"on" and their opposites; -EINVAL otherwise. */
int parse_bool(const char *s);
/* Sizes such as "512m", "4g", "1024" (bytes); -EINVAL / -ERANGE. */
int parse_size(const char *s, unsigned long long *ret);
int parse_uint(const char *s, unsigned long long max, unsigned long long *ret);

/* The first hex_chars (even, at most 64) hex digits of data's SHA-256. */
int sha256_hex(const void *data, size_t size, size_t hex_chars, char **ret);
/* SHA-256 in pieces: memory, or size bytes of a file read in small chunks (a file that
 * turns out shorter gives -ENODATA). */
typedef struct digest digest;
int digest_new(digest **ret);
int digest_update(digest *s, const void *data, size_t size);
int digest_update_fd(digest *s, int fd, uint64_t size);
int digest_end_hex(digest *s, size_t hex_chars, char **ret);
void digest_free(digest *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(digest *, digest_free)

/* Remove everything in the directory open at dir, depth levels down at most, never following
 * a link (a link is removed, not what it leads to). The directory itself stays. */
void remove_below(int dir, int depth);

/* Every address of this host's interfaces, as text; NULL for none. */
int host_own_addresses(char ***ret);
