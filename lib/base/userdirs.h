/* SPDX-License-Identifier: MIT */
/* Where the user's own files are: aisb's state and the user's configuration. */
#pragma once

#include "error.h"

/* $XDG_STATE_HOME/ai-sandbox[/SUB], else ~/.local/state/ai-sandbox[/SUB], created (0700) with
 * the directories above it. -ENOENT when neither variable gives an absolute path. */
int state_dir(const char *sub, char **ret, aisb_error **err);

/* $XDG_CONFIG_HOME/ai-sandbox/NAME, else ~/.config/ai-sandbox/NAME; NULL when neither
 * variable gives an absolute path (or out of memory). Not created, not opened. */
char *user_config_path(const char *name);

/* Where state_dir(SUB) is, without creating it; NULL as user_config_path. */
char *state_path(const char *sub);
