/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: a policy as Kubernetes objects (kube.c says how each part of the policy is
 * enforced there). Internal to libaisb; aisb_policy_kube() is the public face.
 */
#pragma once

#include "error.h"
#include "policy.h"

typedef struct kube_options {
        const char *image_repo;             /* the images' repository on a registry, or NULL: local */
        unsigned long long timeout_s;       /* activeDeadlineSeconds; 0: none */
        unsigned long long workspace_size;  /* bytes of the workspace claim; 0: 10 GiB */
        bool as_sandbox;                    /* an agent-sandbox Sandbox instead of a Pod */
} kube_options;

/* The objects as JSON documents, each after a "---" line (YAML 1.2 reads them): the gate's
 * ConfigMap, Deployment, Service and NetworkPolicy (when the policy goes through a gate),
 * then the workspace's PersistentVolumeClaim, the sandbox's NetworkPolicy and its Pod.
 * -EOPNOTSUPP, saying why, for what a cluster cannot be given as the policy says. */
int kube_manifests(const aisb_policy *p, const kube_options *o, char **ret_text, aisb_error **err);
