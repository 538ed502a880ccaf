/* SPDX-License-Identifier: MIT */
/*
 * What a sandbox's overlay leaves owned by the user's subordinate ids (its whiteouts, the
 * overlay's work directory, mode 0 and not empty), removed the way `podman unshare rm` would,
 * without running podman: in a child process that joins the user namespace of the user's
 * rootless podman (its pause process's), whose root is the user and which maps those ids, so
 * there the user holds CAP_DAC_OVERRIDE and CAP_FOWNER over them.
 */
#pragma once

/* The namespace, open: -ESRCH when no rootless podman of this user runs (after a reboot,
 * until podman is next used), -EPERM when what runs is not a namespace of this user's. */
int userns_podman_open(void);

/* Remove name in dir and everything below it (32 levels deep at most), as root of the
 * namespace open at userns, never following a link. 0 when it is gone; a negative errno
 * (-ENOTEMPTY: something stayed). */
int userns_remove(int userns, int dir, const char *name);
