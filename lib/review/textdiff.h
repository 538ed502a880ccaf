/* SPDX-License-Identifier: MIT */
/*
 * A unified diff of two versions of one file, by libgit2 (git's own diff, and its idea of
 * what is binary), loaded with dlopen when a diff is first asked for: linked, it and what it
 * links would load at every aisb start.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Files larger than this are not diffed (aisb diff names them). */
#define TEXTDIFF_MAX_FILE (8 * 1024 * 1024)

/* The diff of path from old to new (either NULL: the file is added or deleted), headers
 * "a/PATH" and "b/PATH": 1 with the text in *ret; 0 when libgit2 takes either side for
 * binary; -ELIBACC when libgit2 cannot be loaded (why in *ret_error); -EIO with libgit2's
 * message in *ret_error; -ENOMEM. */
int textdiff_unified(const char *path, const void *old, size_t old_size, const void *new_data, size_t new_size,
                     char **ret, const char **ret_error);
