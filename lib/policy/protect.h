/* SPDX-License-Identifier: MIT */
/*
 * Protected paths: what a program on the host acts on without the user choosing to run the
 * project's code (git's configuration, hooks and git directories; editors' and host-side
 * agents' project settings) must not be changed by the agent in a way that reaches the host.
 *
 * Before the run, protect_plan_make() looks at the project through directory descriptors,
 * never following a link: each protected entry that exists becomes a read-only bind mount
 * over itself (a git directory: a bind of itself, so it cannot be moved aside, with its
 * config, hooks and info read-only over it), named by the device and inode the entrypoint
 * checks before anything runs. What did not exist cannot be mounted without creating it in
 * the user's tree, so the plan also records what each protected name was at the start, and
 * protect_sweep(), after the sandbox is gone, moves anything new or replaced there (and any
 * git directory that appeared below the project) into aisb's state: quarantined, named,
 * restorable.
 *
 * A project whose .git is a file (git worktree add, --separate-git-dir) gets the git
 * directory and common directory that file names, reached without links and the user's, at
 * their own paths: objects and refs writable, the rest as above, the other worktrees' state
 * read-only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "protect-git.h"

/* The policy's default list (the key `protect`). ".git" stands for all of git's. */
#define PROTECT_DEFAULT ".git,.vscode,.idea,.devcontainer,.devcontainer.json,.claude,.mcp.json,.codex,.cursor,.gemini,.zed,.pi"
/* Mounts a plan makes, and the longest path one may have (the entrypoint checks each). */
#define PROTECT_MAX_MOUNTS 256
#define PROTECT_MOUNT_PATH_MAX 1023

typedef struct protect_mount {
        char *source;      /* absolute host path, reached without a link */
        char *destination; /* where the sandbox sees it */
        bool read_only;
        unsigned long long dev, ino; /* what source was when checked */
} protect_mount;

typedef struct protect_watch {
        size_t root;  /* 0: the project; i: the plan's outside[i - 1] */
        char *rel;    /* below the root */
        bool existed; /* at the start; then dev, ino and ctime say what it was */
        bool mounted; /* over itself in the sandbox: what changes it is on the host's side */
        unsigned long long dev, ino;
        long long ctime_ns; /* a new link may get a freed inode's number, never its ctime */
        char **names; /* a directory whose new entries are quarantined (a modules/): its names */
        bool is_dir_of_names;
} protect_watch;

typedef struct protect_plan {
        char *project;
        unsigned long long project_dev, project_ino;
        protect_mount *mounts;
        size_t n_mounts;
        protect_watch *watch;
        size_t n_watch;
        char **outside;          /* git directories outside the project the sandbox gets */
        char **shown;            /* what is read-only, as the sandbox sees it */
        char *repository_top;    /* the project is inside this repository, below its top */
        bool walk_cut;           /* the walk for git directories stopped at its bounds */
        bool mounts_cut;         /* more to keep read-only than PROTECT_MAX_MOUNTS, or a path too long:
                                  * protect_plan_make() refuses such a plan */
        bool git;                /* ".git" is protected */
        /* The repository's packed-refs: how many replace refs it held at the start (-1: none
         * to read); below which root and git directory. NULL: no repository. */
        char *packed_gitdir;
        size_t packed_root;
        long packed_replace;
} protect_plan;

/* Check one entry of the key: a path below the project, relative, without "." or ".."
 * components, after an optional "+" or "-". -EINVAL with why in reason. */
int protect_entry_valid(const char *entry, char *reason, size_t reason_size);

/* The plan for project (absolute; the working directory when is_cwd) and the protected
 * names. uid: who must own a git directory outside the project. -EINVAL with one line when
 * the project's .git names a git directory that is reached through a link, is not the
 * user's, or does not name the project back; -ENOMEM. */
int protect_plan_make(const char *project, bool is_cwd, const char *const *names, unsigned uid,
                      protect_plan *ret, aisb_error **err);
/* The same plan, changing nothing in the project: a directory of the user's the walk cannot
 * open is left unentered (protect_plan_make gives its owner's access back, as a run's start
 * does). For what only reads the project against a plan: aisb diff, apply. */
int protect_plan_look(const char *project, bool is_cwd, const char *const *names, unsigned uid,
                      protect_plan *ret, aisb_error **err);
void protect_plan_done(protect_plan *plan);

/* Whether the plan watches rel below root (0: the project; i: outside[i - 1]). */
bool protect_watched(const protect_plan *plan, size_t root, const char *rel);

/* Called for each entry moved aside: where it was, where it is now, and why; now NULL when
 * it could not be moved (why then says what failed). */
typedef void (*protect_found_fn)(const char *was, const char *now, const char *why, void *userdata);

/* After the run: what is new or replaced where the plan watched, and every git directory
 * below the project that was not there at the start, renamed into quarantine_dir (created;
 * a rename there that crosses filesystems becomes a rename in place, NAME.aisb-quarantined-
 * STAMP; a directory the agent made unwritable or unreadable is given back its owner's
 * permissions first). The number moved; -EIO with one line when some could not be moved
 * (each reported to fn, and the rest still moved); -ESTALE when the project is no longer the
 * directory the run began in. *ret_cut: the walk for git directories stopped at its bounds. */
int protect_sweep(const protect_plan *plan, const char *quarantine_dir, protect_found_fn fn,
                  void *userdata, bool *ret_cut, aisb_error **err);
