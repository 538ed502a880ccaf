/* SPDX-License-Identifier: MIT */
/*
 * A tree's record, as a sorted list of entries (path, type, mode, size, times, device and
 * inode, a regular file's content hash, a link's target), and its text form: one line per
 * entry, names escaped, so that any byte a name may hold round-trips and no line can be
 * forged by a name. Review layers and undo records keep what a project was like in this form;
 * the files live in the user's state, but are parsed as untrusted all the same (strictly,
 * bounded: tests/fuzz/fuzz-manifest.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "tree-walk.h"
#include "util.h"

#define MANIFEST_HASH_HEX 64
/* Far above any real tree; the parser refuses more. */
#define MANIFEST_MAX_ENTRIES 4000000
#define MANIFEST_MAX_TEXT (1ULL << 31)

typedef enum manifest_type {
        MANIFEST_FILE = 'f',
        MANIFEST_DIR = 'd',
        MANIFEST_LINK = 'l',
        MANIFEST_OTHER = 'o', /* a FIFO, socket or device: named, never recorded or made */
        MANIFEST_UNREAD = 'u', /* a directory that could not be read: what is below it is not known */
} manifest_type;

typedef struct manifest_entry {
        char *path;     /* below the tree's root */
        char type;      /* manifest_type */
        uint32_t mode;  /* the permission bits (07777) */
        uint64_t size, dev, ino;
        int64_t mtime_ns, ctime_ns;
        char hash[MANIFEST_HASH_HEX + 1]; /* a file's content, when recorded; "" otherwise */
        char *target;   /* a link's, when read; else NULL */
} manifest_entry;

typedef struct manifest {
        manifest_entry *entries;
        size_t n, allocated;
} manifest;

void manifest_done(manifest *m);
/* Append a copy of e (its path and target copied). Entries must come in tree_path_cmp order
 * for manifest_find. -ENOMEM. */
int manifest_add(manifest *m, const manifest_entry *e);
/* The manifest of the tree open at fd: tree_walk with flags, fn given the manifest to add
 * each entry to. */
int manifest_walk(int fd, unsigned flags, tree_fn fn, manifest *ret);
/* The entry for path, or NULL (binary search: m sorted). */
const manifest_entry *manifest_find(const manifest *m, const char *path);
/* The entry of what st says (path borrowed: copied by manifest_add). */
manifest_entry manifest_entry_of(const char *path, const struct stat *st);
/* Whether two records of one path say the same file: type, mode, size, times, inode. */
bool manifest_same(const manifest_entry *a, const manifest_entry *b);

/* The text form: "aisb-manifest 1" and a line per entry. -ENOMEM. */
int manifest_format(const manifest *m, buffer *out);
/* Parse what manifest_format wrote; anything else (a line out of order, a field out of
 * range, a path that is not plain) is -EBADMSG, with the line's number in *ret_line when not
 * NULL. */
int manifest_parse(const char *text, size_t size, manifest *ret, size_t *ret_line);

/* A name as the text form writes it: bytes up to ' ', '%' and DEL as %XX. */
int manifest_escape(const char *s, buffer *out);
