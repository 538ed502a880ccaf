/* SPDX-License-Identifier: MIT */
/* Seeding a directory of the sandbox user's from a read-only one aisb mounted: how a fresh
 * home gets the bridged harness configuration without the host binding a directory the
 * sandbox could write into. Runs after the privilege drop, as the user. */
#pragma once

#include <stddef.h>

#define SEED_MAX_FILES 64
#define SEED_MAX_FILE (4 * 1024 * 1024)

/* Create dest (and its missing parents, mode 0700, never through a symbolic link) and copy
 * the regular files at the top of src into it (mode 0600). 0, or -errno with one line in
 * err. */
int seed_copy(const char *src, const char *dest, char *err, size_t errlen);
