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
        /* Below the root, components joined by '/'; with open_error -ENAMETOOLONG (the path
         * would be too long), its directory's path instead. */
        const char *path;
        unsigned char type;  /* DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_BLK, DT_FIFO, DT_SOCK */
        uint64_t ino;
        unsigned depth;      /* 1 for the root's own entries */
        const struct stat *st; /* with TREE_WALK_STAT; NULL otherwise */
        /* A directory, before the walk enters it: its descriptor (the walk's; closed after),
         * or -1 with open_error the negative errno opening it gave (0: one of the options'
         * closed names, not opened). */
        int self;
        int open_error;
} tree_entry;

enum {
        TREE_WALK_STAT = 1 << 0, /* lstat every entry (fstatat, AT_SYMLINK_NOFOLLOW) */
        /* A directory of the user's that cannot be opened or searched (mode 0711, 0644: what
         * the agent can leave to hide what is below it) is given rwx for its owner, entered,
         * and given its mode back after. */
        TREE_WALK_FIX_ACCESS = 1 << 1,
        /* A directory max_depth deep is reported with open_error -ELOOP and not entered, and
         * an entry whose path would pass max_path with open_error -ENAMETOOLONG; the walk goes
         * on past both (one deep directory cannot end it). */
        TREE_WALK_SKIP_DEEP = 1 << 2,
        /* As TREE_WALK_FIX_ACCESS, the owner's access kept: for a walk that moves what the
         * agent hid out of the directory, or gives the user back a tree the agent locked. */
        TREE_WALK_GIVE_ACCESS = 1 << 3,
};

/* What fn returns: 0 to go on (into a directory too), TREE_SKIP to leave this directory
 * unentered, a negative errno to stop the walk with it. */
#define TREE_SKIP 1
typedef int (*tree_fn)(const tree_entry *e, void *userdata);

typedef struct tree_walk_options {
        unsigned flags;
        size_t max_entries;     /* entries read in all (0: TREE_DEFAULT_MAX_ENTRIES) */
        /* Entries read of one directory (0: no bound of its own): the rest of a larger one
         * is passed over without a word. */
        size_t max_dir_entries;
        unsigned max_depth;     /* 0: TREE_MAX_DEPTH */
        size_t max_path;        /* 0: TREE_PATH_MAX */
        /* Directories of these names are reported unopened and never entered (a walk that
         * must not touch what is in them, not even their mode). */
        const char *const *closed;
} tree_walk_options;

/* Walk below root (an open directory; its own entry is not reported), pre-order, each
 * directory's entries sorted bytewise by name, each directory opened without following a
 * link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it, O_NOFOLLOW
 * always) and O_NONBLOCK (a FIFO in a directory's place is never waited on). Returns 0;
 * fn's negative; -E2BIG past max_entries, -ELOOP deeper than max_depth, -ENAMETOOLONG for a
 * path longer than max_path (each after reporting what came before); -ENOMEM. */
int tree_walk_with(int root, const tree_walk_options *o, tree_fn fn, void *userdata);
/* The same with only flags and max_entries (0: the default). */
int tree_walk(int root, size_t max_entries, unsigned flags, tree_fn fn, void *userdata);

/* Each entry of the directory open at fd ("." and ".." aside), in the kernel's order, read
 * from fd's offset with buf (size bytes, 8-aligned) as getdents64's, allocating nothing (a
 * child after fork may use it). fn's nonzero return ends it with that value; a read error:
 * its negative errno. */
typedef int (*tree_name_fn)(int fd, const char *name, unsigned char type, uint64_t ino, void *userdata);
int tree_dir_each(int fd, char *buf, size_t size, tree_name_fn fn, void *userdata);
/* The names in the directory open at dir, read from its start (a descriptor of the caller's
 * own: its offset moves; read permission is enough, as for a directory the agent left
 * unsearchable), sorted; an empty directory gives an empty list, never NULL. At most
 * TREE_DEFAULT_MAX_ENTRIES (-E2BIG). */
int tree_dir_names(int dir, char ***ret);

/* The subdirectory name of dir, opened as the walk opens them: no link followed, O_NONBLOCK,
 * O_CLOEXEC. A descriptor or a negative errno. */
int tree_open_child(int dir, const char *name);
/* Give the user back a directory of theirs that the agent made unreadable or unwritable: rwx
 * for its owner, through a descriptor that cannot be a link's target. Its mode before in
 * *ret_mode (may be NULL); false when it is no directory of the user's, or chmod failed. */
bool tree_give_access(int dir, const char *name, mode_t *ret_mode);

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
        size_t n, allocated; /* levels held: level[i].fd is root/level[0].name/.../level[i].name */
        struct tree_dirs_level { char *name; int fd; } *level;
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
