/* SPDX-License-Identifier: MIT */
/* What a policy would be, as text (aisb_policy_format, _containerfile, _ruleset,
 * _entrypoint_plan, _inspect are its public face). */
#pragma once

#include "network.h"
#include "policy.h"

/* The network a run of p would get, planned without starting anything: the gate's port a
 * placeholder, the backend podman 4's. Names of --no-gate are resolved (DNS), as a run
 * would. */
int describe_network(const aisb_policy *p, sandbox_network *ret, aisb_error **err);
