/* SPDX-License-Identifier: MIT */
/*
 * What the home volume carries from one run into the next. The agent writes the sandbox's
 * home, and every harness loads code and instructions from it at start: pi's extensions and
 * SYSTEM.md, claude's rules, hooks and memory, codex's AGENTS.override.md, hooks.json and .env,
 * the shell's rc files and git's configuration, which every harness's commands read. Before
 * each run those paths are made the host's again: what aisb bridges from the host (harness.c)
 * is written afresh, and what it does not is moved aside, into ~/.aisb-moved/STAMP/ in the
 * same volume, where nothing loads it, with one warning line naming it. What each harness
 * keeps as its own data (sessions, logins, history) stays.
 *
 * pi's directory is a carry-list: what is not on it goes. claude's and codex's are lists of
 * what goes: both write data of their own there that no list of theirs names (their binaries
 * are not open to read), and a carry-list would take it from them at every run. The lists,
 * and why each entry is there, are docs/bridges.md's.
 */
#pragma once

#include <stddef.h>

#include "service.h"
#include "error.h"

/* Move aside, below the home volume's root open at home_root, each path a harness or the
 * shell would load at start and aisb does not bridge (an empty directory stays: it loads
 * nothing), and each of also (paths below the home: the bridged files the host has none of),
 * and warn once naming them. The number moved in *ret_moved. 0, or a negative errno with err
 * set when something could not be moved (what could, was). */
int harness_home_reset(aisb_ctx *ctx, int home_root, const char *const *also, size_t *ret_moved, aisb_error **err);
