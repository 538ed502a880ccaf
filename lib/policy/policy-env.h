/* SPDX-License-Identifier: MIT */
/* The sandbox's environment as the policy's keys set it (policy-env.c); the rest of what the
 * policy says of variables and secrets is in policy.h. */
#pragma once

#include "policy.h"

/* --env NAME[=VALUE], --env-file FILE, --secret NAME@HOST... (NAME's value read from the
 * caller's environment): -EINVAL (or -ENOENT, -EPERM) with why. */
int policy_add_env(aisb_policy *p, const char *spec, aisb_error **err);
int policy_add_env_file(aisb_policy *p, const char *path, aisb_error **err);
int policy_add_secret_named(aisb_policy *p, const char *spec, aisb_error **err);
/* The variables every sandbox inherits (policy_env_inherited): from the process's
 * environment, or with from as that policy got them. -ENOMEM. */
int policy_env_inherit(aisb_policy *p, const aisb_policy *from);
