/* SPDX-License-Identifier: MIT */
/* Whether a path can be trusted by a uid: who owns and can write each component. */
#pragma once

#include "util.h"

/* Whether uid can trust what lives at path, absolute: a podman socket there is the one uid or
 * root put there and no one else can swap it. Every component from / down must belong to uid
 * or root, and no directory may be writable by anyone else (group root counts as root), except
 * a root-owned sticky directory such as /tmp, whose entries only their owners can replace. A
 * symlink passes only when uid or root owns it, and then the path it leads to must pass as a
 * whole. 0 when trusted; -EPERM when not, with why ("/tmp/x belongs to uid 1005 (eve)") in
 * reason; -ENOENT when a component is missing (everything above it passed, but mind that a
 * sticky directory lets anyone create the missing name); another negative errno when a
 * component cannot be examined, or -EINVAL for a relative path. */
int path_check_trusted(const char *path, uid_t uid, char *reason, size_t reason_size);
