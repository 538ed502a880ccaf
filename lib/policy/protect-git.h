/* SPDX-License-Identifier: MIT */
/*
 * The half of protected paths that knows git's files: where a repository's configuration
 * sends the host's git (core.hooksPath, includes), what makes a directory a git directory,
 * the replace refs a packed-refs file holds, the walk that finds git directories below the
 * project (protect-git.c); and the path helpers the plan and the sweep share, which live
 * with the plan in protect.c, where most of their calls are.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Bounds of the walk that finds git directories below the project. */
#define PROTECT_WALK_MAX_DIRS 200000
#define PROTECT_WALK_MAX_DEPTH 256
#define PROTECT_WALK_MAX_ENTRIES 4000000
/* A .git file, a commondir file, a git config read for core.hooksPath. */
#define PROTECT_READ_MAX (1024 * 1024)

/* a/b ("/" and an empty side taken as they are); NULL when out of memory. */
char *path_join(const char *a, const char *b);
/* base/rel (rel may be absolute), with "." and ".." taken lexically: right only because no
 * component will be a link (each is opened with O_NOFOLLOW afterwards). */
char *path_resolve(const char *base, const char *rel);
/* path below top: what follows top's "/" ("" for top itself), or NULL. */
const char *path_inside(const char *path, const char *top);
/* "gitdir: PATH" of a .git file (prefix "gitdir:"), or commondir's "PATH" (prefix NULL): the
 * path, trimmed, in text; NULL when there is none. */
char *git_first_line(char *text, const char *prefix);

/* An absolute path as a directory, no component a link. */
int open_absolute_dir(const char *path);
/* lstat of rel below root, reached without a link. */
int stat_below(int root, const char *rel, struct stat *st);
/* A regular file below root, whole (at most PROTECT_READ_MAX): -ENOENT, -EINVAL (not a
 * regular file), -EFBIG. */
int read_below(int root, const char *rel, char **ret);
/* The names in directory rel below root, sorted (never NULL: an empty directory has a list
 * too), to find new ones after the run. */
int dir_names_below(int root, const char *rel, char ***ret);

/* The include.path and includeIf.*.path values of a git config file's text (changed in
 * place), pushed onto *paths. */
void git_config_includes(char *text, char ***paths);
/* The hooks directories a repository's git may use: from its config (and config.worktree)
 * at the host directory gitdir, the user's and the system's (NULL: none). */
char **git_hooks_paths(const char *gitdir, const char *top);
/* Whether the host directory dir holds a hook (anything but git's *.sample files). */
bool git_hooks_installed(const char *dir);

/* What a walk below the project meets named .git, and a directory that is itself a git
 * directory (a bare repository), which is descended into too: a repository made inside it
 * is met there. */
typedef int (*git_entry_fn)(int dir, const char *name, const char *rel, void *userdata);
/* Every .git below the project open at root, and every bare repository, to fn; bounded by
 * PROTECT_WALK_* (*ret_cut says the walk stopped there). give_access: a directory the agent
 * made unreadable is made the user's again (and stays so). */
int git_dirs_walk(int root, bool give_access, git_entry_fn fn, void *userdata, bool *ret_cut);
/* The replace refs the packed-refs file of the git directory gitdir_rel below root holds
 * (-1: none to read). */
long git_packed_replace_refs(int root, const char *gitdir_rel);
/* The nearest directory above path that holds .git: the repository the project is inside;
 * NULL when none. */
char *git_repository_above(const char *path);
