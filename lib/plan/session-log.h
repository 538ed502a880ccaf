/* SPDX-License-Identifier: MIT */
/* The session log: what ran (aisb log reads it). */
#pragma once

#include "egress.h"
#include "plan.h"
#include "policy.h"

/* One line for the run of this plan: its sandbox's name (what the egress record names it
 * by), image, policy hash, net, the variables named, the fields --unsafe-create-patch
 * changed (names only), and egress, the gate's summary (NULL when no gate served the run).
 * Negative errno. */
int session_log_append(const aisb_policy *p, const plan_facts *f, const run_plan *plan, int exit_code,
                       const egress_summary *egress);
