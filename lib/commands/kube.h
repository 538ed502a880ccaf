/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: a policy as Kubernetes objects (kube.c says how each part of the policy is
 * enforced there). Internal to libaisb; aisb_policy_kube() is the public face.
 */
#pragma once

#include "kube-plan.h"

/* The objects as JSON documents, each after a "---" line (YAML 1.2 reads them): the gate's
 * ConfigMap, Deployment, Service and NetworkPolicy (when the policy goes through a gate),
 * then the workspace's PersistentVolumeClaim, the sandbox's NetworkPolicy and its Pod.
 * -EOPNOTSUPP, saying why, for what a cluster cannot be given as the policy says. */
int kube_manifests(const aisb_policy *p, const kube_options *o, char **ret_text, aisb_error **err);
