/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's sandbox: the plan's create body as a Pod (or an agent-sandbox Sandbox), the
 * ConfigMaps its volumes name, its NetworkPolicy, and on a cluster the workspace's claim.
 * Internal to libaisb.
 */
#pragma once

#include <json-c/json.h>

#include "kube-plan.h"

/* The ConfigMaps the pod's volumes name, its NetworkPolicy (none for podman) and the pod,
 * appended to docs; -EOPNOTSUPP for a mount of the plan's that a pod cannot have. */
int kube_sandbox_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                         aisb_error **err);
/* The workspace: a claim of the project's own, which outlives the pod. */
int kube_workspace_claim(const kube_options *ko, const kube_names *n, json_object *docs);
