/* SPDX-License-Identifier: MIT */
/*
 * Entries put into a tree someone else may write (the project), each one atomically and
 * through the directory descriptor that tree_open_dir() reached without following a link: a
 * file's content goes into a new temporary in that directory and is renamed over the name, a
 * link is made as a link, a directory's mode set through its own descriptor. Nothing here
 * follows a link or writes outside the directory it is given.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "digest.h"
#include "util.h"

/* Copy size bytes of src (from offset 0) into dst, keeping holes (SEEK_DATA, SEEK_HOLE) and
 * in the kernel where it can (copy_file_range); with hash, read through memory instead and fed
 * to it (holes as zeros). dst ends up size bytes long. -ENODATA when src is shorter. */
int tree_copy_data(int src, int dst, uint64_t size, digest *hash);

/* A regular file at dir/name, replacing what is there unless it is a directory (-EISDIR):
 * size bytes of src, permission bits mode & 0777 (never setuid, setgid or sticky), the
 * modification time mtime unless NULL. */
int tree_put_file(int dir, const char *name, int src, uint64_t size, mode_t mode, const struct timespec *mtime);
/* A symbolic link at dir/name to target, replacing what is there unless it is a directory. */
int tree_put_link(int dir, const char *name, const char *target);
/* A directory at dir/name (mode & 0777), made if missing; an existing directory gets the mode.
 * Something else there: -EEXIST. */
int tree_put_dir(int dir, const char *name, mode_t mode);

/* A new file in dir under a random name, for writing: its descriptor, the name in ret_name
 * (NAME_MAX + 1 bytes). */
int tree_temp_file(int dir, char *ret_name, size_t size);
