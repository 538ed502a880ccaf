/* SPDX-License-Identifier: MIT */
/* The session log: what ran (aisb log reads it). */
#pragma once

#include "egress.h"
#include "policy.h"

/* One line for this run. run: its sandbox's name (what the egress record names it by); hash: the plan's policy hash; patched: the fields
 * --unsafe-create-patch changed (names only), or NULL; egress: the gate's summary, or NULL
 * when no gate served the run. Negative errno. */
int session_log_append(const aisb_policy *p, const char *run, const char *image, const char *hash, int exit_code,
                       const char *const *patched, const egress_summary *egress);
