/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's gate: squid in a pod of its own, with the configuration the local gate's
 * generator writes, and on a cluster its Service and NetworkPolicy. Internal to libaisb.
 */
#pragma once

#include <json-c/json.h>

#include "kube-plan.h"

/* The gate's ConfigMap and Deployment, and on a cluster its Service and NetworkPolicy,
 * appended to docs. */
int kube_gate_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                      aisb_error **err);
