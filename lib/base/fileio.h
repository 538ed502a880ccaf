/* SPDX-License-Identifier: MIT */
/* Files and directories read and written whole, bounded, and without following links where
 * the name says so. */
#pragma once

#include "util.h"

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

/* The regular file name in dir, opened without following a link or waiting on a FIFO, read
 * whole (at most max bytes): -EBADMSG when it is not a regular file. */
int read_file_at(int dir, const char *name, size_t max, char **ret, size_t *ret_size);
/* size bytes into dir/name (mode 0600) through a new file renamed over it. */
int write_file_at(int dir, const char *name, const void *data, size_t size);

/* chmod through a descriptor of any kind, an O_PATH one too (fchmod refuses those): the
 * entry it was opened on, never a link's target, whatever its permissions. */
int fd_chmod(int fd, mode_t mode);

/* getdents64's record, read straight into a buffer (no DIR per directory). */
struct dirent64_record {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

/* Remove everything in the directory open at dir, depth levels down at most, never following
 * a link (a link is removed, not what it leads to). The directory itself stays. */
void remove_below(int dir, int depth);
