/* SPDX-License-Identifier: MIT */
/* The project, --mount and --device as the policy's keys set them (policy-mounts.c). */
#pragma once

#include "policy.h"

/* Make abs (absolute, a directory; taken over) the project, unless a mount's source is
 * inside it (it is at /project already, and the sandbox could swap it for a link): -EPERM
 * with why. */
int policy_set_project(aisb_policy *p, char *abs, bool is_cwd, aisb_error **err);
/* --mount SRC:DST[:ro|rw], --device /dev/NAME[:DST[:rwm]] or a CDI name: -EINVAL (or
 * -EPERM, an errno of the source) with why. */
int policy_add_mount(aisb_policy *p, const char *spec, aisb_error **err);
int policy_add_device(aisb_policy *p, const char *spec, aisb_error **err);
