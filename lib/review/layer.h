/* SPDX-License-Identifier: MIT */
/*
 * A review run's layer, read on the host: the upper directory of the overlay the sandbox
 * wrote through (aisb run --review), and what it changes in the project.
 *
 * Everything in the layer is the agent's: names with any byte, links to host files, FIFOs,
 * devices, setuid files, hard links, sparse and huge files, deep trees. layer_scan() reads it
 * through directory descriptors without following a link (tree_walk), bounded, and keeps of
 * each entry only what the overlay format means by it: a regular file, a directory (opaque:
 * it replaces the project's), a link (its target as text, never followed), a whiteout (a
 * 0/0 character device: a deletion); anything else is named and refused. layer_changes()
 * compares that with the project as it is now: added, modified, deleted, replaced (another
 * type), a directory's mode.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "manifest.h"

#define LAYER_MAX_ENTRIES 1000000
#define LAYER_LINK_MAX 4095
/* A file of the layer as large as the project's by its name, and larger than this, is taken
 * as modified without its bytes being compared: the agent's copy-up of a huge (or sparse)
 * file costs no read of it at every diff. */
#define LAYER_COMPARE_MAX (64ULL << 20)

typedef enum layer_kind {
        LAYER_FILE,
        LAYER_DIR,
        LAYER_LINK,
        LAYER_WHITEOUT,
        LAYER_OTHER,
} layer_kind;

typedef struct layer_entry {
        char *path;
        layer_kind kind;
        bool opaque;          /* a directory that replaces the project's */
        uint32_t mode;        /* permission bits as the layer has them */
        uint64_t size, ino;
        char *target;         /* a link's */
        const char *refused;  /* why it is never carried over (static text), or NULL */
} layer_entry;

typedef struct layer {
        layer_entry *entries; /* in tree_path_cmp order */
        size_t n;
} layer;

void layer_done(layer *l);
/* The entry at path, or NULL. */
const layer_entry *layer_find(const layer *l, const char *path);

/* Read the upper directory open at upper. uid: whose entries are taken (another owner is
 * refused: the overlay's own whiteouts aside). -E2BIG past LAYER_MAX_ENTRIES, -ELOOP or
 * -ENAMETOOLONG past the walk's bounds (with one line), -ENOMEM. */
int layer_scan(int upper, unsigned uid, layer *ret, aisb_error **err);

typedef enum change_kind {
        CHANGE_ADDED,
        CHANGE_MODIFIED,
        CHANGE_DELETED,
        CHANGE_REPLACED, /* another type where the project has something, or an opaque directory */
        CHANGE_MODE,     /* a directory's permission bits */
} change_kind;

typedef struct change {
        char *path;
        change_kind kind;
        layer_kind kind_in_layer; /* for a deletion: LAYER_WHITEOUT */
        char in_project;          /* what the project has there now (manifest_type), 0: nothing */
        uint32_t mode;            /* what apply gives it: the layer's bits without setuid, setgid, sticky */
        bool mode_stripped;       /* the layer's had setuid, setgid or sticky */
        uint64_t size;
        char *target;
        const char *refused;      /* never carried over, and why */
        const char *blocked;      /* the project's path to it goes through a link or a non-directory */
        uint64_t layer_ino;       /* the layer entry's inode, to check it is still the one listed */
} change;

typedef struct change_set {
        change *changes;
        size_t n;
} change_set;

void change_set_done(change_set *s);

/* What the layer changes in the project open at project: a change per path, in tree_path_cmp
 * order; a path whose file in the layer has the project's content and mode is no change. A
 * project directory that a whiteout or an opaque directory removes is one deletion (its
 * entries go with it). upper: the layer's directory, to compare files' content. */
int layer_changes(const layer *l, int upper, int project, change_set *ret, aisb_error **err);

const char *change_kind_name(change_kind k);
