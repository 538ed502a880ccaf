/* SPDX-License-Identifier: MIT */
/*
 * The second line against a setuid or setgid file that a run leaves in the project (the first
 * is the sandbox's seccomp filter, which refuses setting those bits at all): after a plain
 * run, every regular file below the project whose inode changed since the run began and that
 * carries S_ISUID or S_ISGID loses both. Another local user who runs such a file would run as
 * the user. What was setuid before the run and untouched is the user's, and stays.
 */
#pragma once

#include <stddef.h>

#include "error.h"

/* Each file stripped, by its path below the root. */
typedef void (*setid_found_fn)(const char *path, unsigned mode, void *userdata);

/* Walk below root (an open directory; tree_walk's bounds and no-follow rules), stripping
 * S_ISUID and S_ISGID from each regular file of the user's whose ctime is at least since_ns
 * (CLOCK_REALTIME_COARSE, as run_start_time() gives). The number stripped in *ret_stripped;
 * 0, or a negative errno with err set (what came before it was stripped). */
int setid_sweep(int root, long long since_ns, setid_found_fn fn, void *userdata, size_t *ret_stripped,
                aisb_error **err);
