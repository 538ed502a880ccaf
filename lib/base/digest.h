/* SPDX-License-Identifier: MIT */
/* SHA-256 (nettle), as hex: of memory, or of a file read in pieces. */
#pragma once

#include "util.h"

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
