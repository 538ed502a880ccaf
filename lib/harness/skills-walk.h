/* SPDX-License-Identifier: MIT */
/*
 * The agents directory (~/.agents, or --agents-dir) is mounted read-only into every
 * sandbox: whatever credential a skill file, its .git history or a stray .env holds is every
 * run's to read. This module reads that directory's files as the linter needs them, without
 * trusting it: a walk through directory descriptors (O_NOFOLLOW|O_NONBLOCK, regular files
 * only, bounded in depth, entries and file size; links and binary files skipped with a note),
 * each file given to the scanner (secret-scan.h), and a cache of the result under the state
 * directory so a run rescans only a directory that changed. The history of the git
 * repositories in it is skills-lint.c's (read by git inside a sandbox, never on the host).
 */
#pragma once

#include <stdbool.h>

#include "service.h"
#include "secret-scan.h"
#include "util.h"
#include "digest.h"

#define SKILLS_WALK_MAX_DEPTH 16
#define SKILLS_WALK_MAX_ENTRIES 20000
#define SKILLS_FILE_MAX (1024 * 1024)
/* Bytes of files one scan reads at most: skill-lint's, and a run's (which waits for it;
 * 20 000 files of 1 MiB would be 20 GB). */
#define SKILLS_READ_MAX_LINT (512ull * 1024 * 1024)
#define SKILLS_READ_MAX_RUN (32ull * 1024 * 1024)
/* A NUL in a file's first this many bytes makes it binary (git's own test). */
#define SKILLS_BINARY_PROBE 8000

typedef void (*skills_note_fn)(const char *path, const char *why, void *userdata);

typedef struct skills_walk {
        /* In. */
        bool read_files;          /* scan each file; false: only list them (for the digest) */
        skills_fn finding_fn;  /* a file's finding, its path relative to the root */
        skills_note_fn note_fn;   /* something skipped, and why (NULL: not told) */
        void *userdata;
        digest *digest;           /* when set: each entry's path, type, size and mtime */
        unsigned long long read_max; /* bytes of files to read at most (0: no bound) */
        /* Asked before each entry (NULL: never): true ends the walk with -ECANCELED. A run
         * waits for its walk with the signals that would stop it held (the CLI's signalfd):
         * this is where it notices them. */
        ctx_stop_fn stop_fn;
        void *stop_userdata;
        /* Out. */
        unsigned long files, skipped, findings;
        bool stopped;             /* the walk hit SKILLS_WALK_MAX_ENTRIES */
        unsigned long long read;  /* bytes of files read */
        bool read_out;            /* read_max was reached: later files were not read */
        char **repos;             /* directories holding .git, relative ("." for the root) */
} skills_walk;
void skills_walk_done(skills_walk *w);

/* Walk the directory open at root_fd (not consumed). A finding_fn that returns nonzero stops
 * it with that value; otherwise 0, -ECANCELED when stop_fn said so, or a negative errno when
 * the root cannot be read. */
int skills_walk_run(int root_fd, skills_walk *w);

/* The number of findings in dir's files (never its history): from the cache under the state
 * directory when the walk's digest (names, sizes, mtimes) has not changed since, otherwise by
 * a scan whose result is cached. *ret_changed: the scan ran. */
int skills_check_cached(const char *dir, unsigned long *ret_findings, bool *ret_changed,
                        aisb_error **err);
/* The same, asking stop_fn (when set) before each entry of its walks: a stop ends it with
 * -ECANCELED, and caches nothing. */
int skills_check_stoppable(const char *dir, ctx_stop_fn stop_fn, void *stop_userdata,
                           unsigned long *ret_findings, bool *ret_changed, aisb_error **err);

/* For a run: warn once when dir changed and its files hold findings. Never fails the run; a
 * stop of the run (ctx_stopping) ends the scan, and the run sees the stop itself. */
void skills_warn_if_changed(aisb_ctx *ctx, const char *dir);
