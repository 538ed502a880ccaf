/* SPDX-License-Identifier: MIT */
/*
 * Review runs (aisb run --review): the agent's writes go to a layer of the run's own, the
 * upper directory of an overlay over the project, and the project does not change until the
 * user applies some of it.
 *
 * A layer lives in the user's state, $XDG_STATE_HOME/ai-sandbox/layers/PROJECT-KEY/RUN/
 * (RUN: the sandbox's name): upper/ and work/ for the overlay, `info` (the project, when the
 * run began, its protected list), `start` (the project's names and inodes when it began: what
 * the user changed since is refused by apply unless forced) and `ended` once it is over;
 * `lock` is held while the run goes on. Several review runs of one project each have their
 * own.
 *
 * What the agent wrote is read as hostile (layer.h); apply writes into the project one entry
 * at a time, atomically, through directory descriptors that never follow a link (tree-write.h).
 */
#pragma once

#include <stdbool.h>

#include "service.h"
#include "layer.h"
#include "manifest.h"

/* STATE/SUB/PROJECT-KEY (the project's short name and a hash of its path), created when
 * create: a project's own corner of aisb's state. */
int project_state_dir(const char *sub, const char *project, bool create, char **ret, aisb_error **err);

/* key=value lines, values escaped (manifest_escape): a run's `info`. */
typedef struct run_info {
        char *project;
        char *run;
        char *protect;        /* the run's protected list (the key's text) */
        long long started_ns; /* CLOCK_REALTIME_COARSE when the run began */
        long long ended_ns;   /* 0 while it goes on */
        long pid;
        /* The project directory the run began in (0 0: not recorded): a directory found at
         * its path later is the project only if it is this one. */
        unsigned long long dev, ino;
} run_info;
void run_info_done(run_info *i);
/* When a run begins, on the coarse clock file times come from: the next tick, waited for (a
 * few milliseconds), so that what changed before has an earlier ctime and what changes from
 * now on one at least as late, and two runs begun one after the other have two times. */
long long run_start_time(void);
int run_info_format(const run_info *i, buffer *out);
/* 0 when the directory open at project_fd is the one the run began in (or none was recorded);
 * -ESTALE otherwise, with one line. */
int run_info_check_project(const run_info *i, int project_fd, aisb_error **err);
int run_info_parse(const char *text, size_t size, run_info *ret);

/* A review run's layer, made before the sandbox is created. */
typedef struct review_layer {
        char *run;
        char *dir, *upper, *work;
        int dir_fd;
        int lock_fd;
        size_t changes;       /* counted at the end */
        /* A regular file at the project's top, of one link, with its inode and change time:
         * the entrypoint finds it so in /project (the overlay shows a file's own inode and
         * times), or the directory podman mounted is not the project (its path swapped
         * meanwhile). */
        char *anchor;
        unsigned long long anchor_ino;
        long long anchor_ctime_ns;
} review_layer;
#define REVIEW_LAYER_NULL ((review_layer) { .dir_fd = -1, .lock_fd = -1 })

/* The layer of run (the sandbox's name) for the project open at project_fd: its directories,
 * the start record, the lock. protect: the run's protected list, for apply. */
int review_layer_create(const char *project, int project_fd, const char *run, const char *protect,
                        review_layer *ret, aisb_error **err);
/* The run is over: `ended` written, the lock let go, and the layer's changes counted into
 * l->changes. -errno (the layer could not be read: said in err). */
int review_layer_end(review_layer *l, int project_fd, aisb_error **err);
void review_layer_done(review_layer *l);

/* What the layer open at upper changes in the project (layer_scan, layer_changes), without
 * what is aisb's own in it (the mount point of the settings' copy). */
int review_changes(int upper, int project_fd, layer *ret_layer, change_set *ret, aisb_error **err);

/* ---- the runs of a project: review layers (STATE/layers/KEY/RUN), undo records
 * (STATE/undo/KEY/runs/RUN); each directory holds `info` ---- */

int run_dir_info(int dir_fd, run_info *ret);
int run_dir_write_info(int dir_fd, const run_info *info);
/* The run's info given its end (now): at its end, or once its sandbox is known gone after
 * its aisb was killed (aisb clean). */
int run_dir_mark_ended(int dir_fd);
/* A run that never ended (its aisb killed): its sandbox may still write what it holds. */
static inline bool run_info_interrupted(const run_info *i) { return i->ended_ns == 0; }
/* Whether a run holds the directory's lock: it goes on. */
bool run_dir_running(int dir_fd);
/* fn for each run directory below top (top_fd, the run's descriptor, its info); a directory
 * whose info cannot be read, or names another run, is skipped. */
typedef int (*runs_fn)(int top_fd, int run_fd, const run_info *info, void *userdata);
int runs_each(const char *top, runs_fn fn, void *userdata);
/* The run of project below top that run names (its name, or the part after its last '-'),
 * or the newest when run is NULL, passing over a run whose directory holds the file skip
 * (NULL: none); what: "review layer", "undo record", for the messages. -ENOENT when there is
 * none. */
int runs_find(const char *top, const char *project, const char *run, const char *skip, const char *what,
              char **ret_run, aisb_error **err);
/* Remove the run directory top/run (refused, -EBUSY, while its run goes on): renamed aside
 * first, then removed; what the sandbox's overlay left owned by the user's subordinate ids
 * goes in podman's user namespace (userns.h; ctx, when not NULL, starts a service to have
 * one). */
int runs_remove(aisb_ctx *ctx, const char *top, const char *run, aisb_error **err);
int runs_remove_aside(aisb_ctx *ctx, int top_fd, const char *name, aisb_error **err);
/* Bytes on disk below dir (st_blocks). */
unsigned long long dir_disk_usage(int dir);
