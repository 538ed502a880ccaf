/* SPDX-License-Identifier: MIT */
/* The history half of aisb skill-lint (the files are skills-walk.h's). */
#pragma once

#include <stdbool.h>

#include "service.h"
#include "policy.h"
#include "skills-walk.h"

/* What the history sandbox may print; beyond it, history is not read. */
#define SKILLS_HISTORY_MAX (64 * 1024 * 1024)
#define SKILLS_HISTORY_TIMEOUT_S 300

/*
 * Read each repository's history (repos relative to dir) with git inside a sandbox of the
 * policy's image: no network, dir mounted read-only, a throwaway home, stopped after
 * SKILLS_HISTORY_TIMEOUT_S; its output bounded by SKILLS_HISTORY_MAX. Findings come with
 * repo (an index into repos), commit and path (in the repository); note_fn hears of each
 * repository git could not read. *ret_truncated when the output reached the bound. -ENOENT when the image is not built (this builds nothing).
 */
int skills_history(aisb_ctx *ctx, const aisb_policy *p, const char *dir, char *const *repos,
                   skills_fn fn, skills_note_fn note_fn, void *userdata, unsigned long *ret_commits,
                   bool *ret_truncated, aisb_error **err);

