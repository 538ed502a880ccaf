/* SPDX-License-Identifier: MIT */
/*
 * A way back from a plain run (aisb undo). Before the sandbox starts, the project is
 * recorded: every entry's type, mode, size, times and inode, a link's target, and a regular
 * file's content, copied into a store of the project's own under the user's state
 * ($XDG_STATE_HOME/ai-sandbox/undo/PROJECT-KEY/objects/, named by SHA-256, so a file is stored
 * once however many runs see it). A file whose size, times and inode are those a recent record
 * gave is not read again: a run of a project whose files did not change since the last run
 * copies nothing. After the run the project is walked again (stat only). Undo puts back what
 * the run changed, made or deleted, refusing a path the user changed since the run ended.
 *
 * The record reads the project through tree_walk (no link followed, bounded) and writes only
 * into the store; undo writes into the project through tree-write.h. A record costs a walk of
 * the project and a copy of what changed since the last one; with the key undo = auto (the
 * default) a run records only a project of at most UNDO_AUTO_MAX_ENTRIES entries whose record
 * copies at most UNDO_AUTO_MAX_BYTES (docs/performance.md has the numbers behind them), and
 * says so when it does not.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "service.h"
#include "error.h"
#include "manifest.h"
#include "policy.h"

#define UNDO_AUTO_MAX_ENTRIES 2000
#define UNDO_AUTO_MAX_ENTRIES_TEXT "2000"
#define UNDO_AUTO_MAX_BYTES (64ULL << 20)
#define UNDO_AUTO_MAX_BYTES_TEXT "64 MiB"
/* The newest records kept per project; older ones go, and the store with them. */
#define UNDO_KEEP_RUNS 5

typedef struct undo_record {
        char *top;       /* STATE/undo/KEY */
        char *run;
        int dir_fd;      /* runs/RUN */
        int lock_fd;
        manifest before;
        unsigned long long bytes_copied;
        size_t entries;
        size_t changed;  /* counted at the end */
} undo_record;
#define UNDO_RECORD_NULL ((undo_record) { .dir_fd = -1, .lock_fd = -1 })

/* Record the project open at project_fd before run. 1 when recorded; 0 when not, with why in
 * *ret_why (the project is larger than auto records; a static text); negative errno
 * (-ECANCELED when ctx, which may be NULL, was told to stop meanwhile). */
int undo_record_begin(aisb_ctx *ctx, const char *project, int project_fd, const char *run, undo_when mode,
                      undo_record *ret, const char **ret_why, aisb_error **err);
/* After the run: the project as it is now, and how many paths the run changed, made or deleted
 * (rec->changed); records beyond UNDO_KEEP_RUNS are dropped. */
int undo_record_end(undo_record *rec, int project_fd, aisb_error **err);
void undo_record_done(undo_record *rec);
