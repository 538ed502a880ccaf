/* SPDX-License-Identifier: MIT */
/*
 * A walk of a directory tree that someone else writes (the project, a review layer): through
 * directory descriptors, never following a link, bounded in depth, entries and path length,
 * each directory's entries in name order, so that two walks of the same tree give the same
 * sequence. The host reads trees the agent wrote only this way.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "util.h"

#define TREE_MAX_DEPTH 256
#define TREE_PATH_MAX 4096
#define TREE_DEFAULT_MAX_ENTRIES 4000000

typedef struct tree_entry {
        int dir;             /* the directory that holds it */
        const char *name;
        const char *path;    /* below the root, components joined by '/' */
        unsigned char type;  /* DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_BLK, DT_FIFO, DT_SOCK */
        uint64_t ino;
        unsigned depth;      /* 1 for the root's own entries */
        const struct stat *st; /* with TREE_WALK_STAT; NULL otherwise */
        /* A directory, before the walk enters it: its descriptor (the walk's; closed after),
         * or -1 with open_error the negative errno opening it gave. */
        int self;
        int open_error;
} tree_entry;

enum {
        TREE_WALK_STAT = 1 << 0, /* lstat every entry (fstatat, AT_SYMLINK_NOFOLLOW) */
        /* A directory of the user's that cannot be opened or searched (mode 0711, 0644: what
         * the agent can leave to hide what is below it) is given rwx for its owner, entered,
         * and given its mode back after. */
        TREE_WALK_FIX_ACCESS = 1 << 1,
        /* A directory TREE_MAX_DEPTH deep is reported with open_error -ELOOP and not entered,
         * and an entry whose path would pass TREE_PATH_MAX with path NULL and open_error
         * -ENAMETOOLONG; the walk goes on past both (one deep directory cannot end it). */
        TREE_WALK_SKIP_DEEP = 1 << 2,
};

/* What fn returns: 0 to go on (into a directory too), TREE_SKIP to leave this directory
 * unentered, a negative errno to stop the walk with it. */
#define TREE_SKIP 1
typedef int (*tree_fn)(const tree_entry *e, void *userdata);

/* Walk below root (an open directory; its own entry is not reported), pre-order, each
 * directory's entries sorted with tree_name_cmp. max_entries 0: the default. Returns 0; fn's
 * negative; -E2BIG past max_entries, -ELOOP deeper than TREE_MAX_DEPTH, -ENAMETOOLONG for a
 * path longer than TREE_PATH_MAX (each after reporting what came before); -ENOMEM. */
int tree_walk(int root, size_t max_entries, unsigned flags, tree_fn fn, void *userdata);

/* The order of paths a walk gives: component by component, each compared bytewise ("a/b"
 * before "a-c", as the walk reaches a's entries before a-c). */
int tree_path_cmp(const char *a, const char *b);

/* The directory rel below root, one component at a time, each opened with O_NOFOLLOW (a link
 * on the way: -ELOOP; something else: -ENOTDIR), created with mode where missing when create.
 * rel "" is root itself (a new descriptor). A descriptor, or a negative errno. */
int tree_open_dir(int root, const char *rel, bool create, mode_t mode);
/* rel's directory (as tree_open_dir, not created) and its last component in *ret_name (a
 * pointer into rel). -EINVAL for an empty rel, or one with "." or ".." or an empty component. */
int tree_open_parent(int root, const char *rel, const char **ret_name);
/* Directories below a root, each opened as tree_open_dir opens them and kept, so that a
 * sequence of look-ups in walk order opens each directory once rather than once for each path
 * below it (a deep tree's cost stays linear). For reading: a directory is the one opened
 * when first reached. */
typedef struct tree_dirs {
        int root;            /* borrowed */
        size_t n, allocated; /* levels held: names[i], fds[i] is root/names[0]/.../names[i] */
        char **names;
        int *fds;
} tree_dirs;
#define TREE_DIRS_INIT(r) ((tree_dirs) { .root = (r) })
void tree_dirs_done(tree_dirs *c);
/* rel's directory and last component, as tree_open_parent (the same errors), as a descriptor
 * the cache keeps: valid until the next call or tree_dirs_done. */
int tree_dirs_parent(tree_dirs *c, const char *rel, const char **ret_name);
/* The directory rel itself ("" is root), the same way. */
int tree_dirs_dir(tree_dirs *c, const char *rel);

/* Whether rel is a plain relative path: no leading '/', no empty, "." or ".." component. */
bool tree_path_valid(const char *rel);

/* Remove name in dir and, when it is a directory, everything below it, never following a
 * link; a directory of the user's that was made unreadable or unwritable is given back its
 * owner's permissions first. 0 when it is gone (or was never there); otherwise the first
 * negative errno met (what could go, went). */
int tree_remove(int dir, const char *name);
