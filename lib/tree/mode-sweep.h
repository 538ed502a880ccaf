/* SPDX-License-Identifier: MIT */
/*
 * What a plain run leaves in the project's modes, put right at its end. The project is the
 * host's directory, and a mode the agent set there acts on the host, for other local users:
 * a setuid or setgid file runs as the user (the sandbox's seccomp filter refuses setting
 * those bits; this is the second line), and a directory or file made writable by others, or
 * given a POSIX ACL naming them, lets another local user change what the user's tools read
 * there (a .git/config whose fsmonitor the user's next git status runs). Every entry of the
 * user's below the project whose inode changed since the run began (its ctime) loses
 * S_ISUID and S_ISGID (regular files), write for others (not a sticky directory's), write
 * for the group unless the user's umask gives it, and its ACLs. What was so before the run
 * and untouched is the user's, and stays.
 */
#pragma once

#include <stddef.h>

#include "error.h"

enum {
        MODE_SWEEP_SETID = 1 << 0,    /* a setuid or setgid bit removed */
        MODE_SWEEP_WRITABLE = 1 << 1, /* write for others (or the group) removed */
        MODE_SWEEP_ACL = 1 << 2,      /* its POSIX ACLs removed */
};

/* Each entry put right, by its path below the root (NULL for one past TREE_PATH_MAX), with
 * its mode before and what was done (MODE_SWEEP_*). */
typedef void (*mode_sweep_fn)(const char *path, unsigned mode, unsigned what, void *userdata);

typedef struct mode_sweep_result {
        size_t changed; /* entries put right */
        size_t skipped; /* directories past TREE_MAX_DEPTH, paths past TREE_PATH_MAX: not looked into */
} mode_sweep_result;

/* Walk below root (an open directory; tree_walk's bounds and no-follow rules, going on past a
 * directory too deep), putting right each entry of the user's whose ctime is at least
 * since_ns (CLOCK_REALTIME_COARSE). 0, or a negative errno with err set (what came before it
 * was done); *ret is filled either way. */
int mode_sweep(int root, long long since_ns, mode_sweep_fn fn, void *userdata, mode_sweep_result *ret,
               aisb_error **err);
