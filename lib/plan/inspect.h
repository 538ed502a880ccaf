/* SPDX-License-Identifier: MIT */
/* What a policy would be, as text (aisb_policy_format, _containerfile, _ruleset,
 * _entrypoint_plan, _inspect, _inspect_json are its public face): renderings of the plan a run
 * would make (plan.h), made without starting anything. */
#pragma once

#include "plan.h"
#include "policy.h"

/* The plan a run of p would have: the gate's port a placeholder, the backend podman 4's,
 * the sandbox's name and the run's copy of the settings stand-ins; whole, or only what the
 * network and the entrypoint's ruleset need (network_only: no image hashed, no protected
 * paths looked for). image: its tag when the caller has it (NULL: hashed here). Names of
 * --no-gate are resolved (DNS), as a run would. */
int inspect_plan(const aisb_policy *p, const char *image, bool network_only, plan_facts *ret_facts,
                 run_plan *ret_plan, aisb_error **err);
/* Its network alone. */
int inspect_network(const aisb_policy *p, sandbox_network *ret, aisb_error **err);
