/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: a policy as Kubernetes objects (kube.c says how each part of the policy is
 * enforced there). Internal to libaisb; aisb_policy_kube() is the public face.
 */
#pragma once

#include "error.h"
#include "plan.h"
#include "policy.h"

typedef struct kube_options {
        const char *image_repo;             /* the images' repository on a registry, or NULL: local */
        unsigned long long timeout_s;       /* activeDeadlineSeconds; 0: none */
        unsigned long long workspace_size;  /* bytes of the workspace claim; 0: 10 GiB */
        bool as_sandbox;                    /* an agent-sandbox Sandbox instead of a Pod */
        /* For "podman kube play" on one machine (kube.c: KUBE_PODMAN_*), not a cluster. */
        bool podman;
        /* An init container that installs the entrypoint's default-drop ruleset in the pod's
         * network namespace (it needs root and NET_ADMIN, which the "restricted" standard
         * refuses: a namespace that allows them). */
        bool netfilter_init;
        unsigned parts;                     /* KUBE_PART_*; 0: all */
} kube_options;

enum {
        KUBE_PART_GATE = 1 << 0,    /* the gate's objects */
        KUBE_PART_SANDBOX = 1 << 1, /* the workspace's, the sandbox's */
};
/* podman kube play puts every pod of a file on the networks it is given, and enforces no
 * NetworkPolicy: the gate is played alone on an internal network, at this address, and on
 * one that reaches out; the sandbox on the internal network only, which routes nowhere else
 * (docs/kubernetes.md). */
#define KUBE_PODMAN_NETWORK "aisb-kube-internal"
#define KUBE_PODMAN_SUBNET "10.89.78.0/24"
#define KUBE_PODMAN_GATE_IP "10.89.78.10"

typedef struct kube_names {
        char sandbox[64]; /* aisb-SHORT-HASH: the pod, its NetworkPolicy, its env Secret */
        char gate[64];    /* aisb-gate-HASH */
        char gate_hash[17];
} kube_names;

/* The plan kube renders: a run's (plan_gather, plan_build) with a cluster's facts where they
 * are not this machine's (kube.c: kube_plan_make), the objects' names and images, and the
 * files the harness's bridge gives a fresh home. */
typedef struct kube_plan {
        plan_facts facts;
        run_plan plan;
        kube_names names;
        bool gate;                     /* the policy goes through a gate */
        char *gate_host, *gate_address; /* the facts' network borrows them */
        char *image, *gate_image;      /* as the objects name them */
        project_settings seed;         /* the bridged files (harness_bridge_fresh) */
} kube_plan;
int kube_plan_make(const aisb_policy *p, const kube_options *o, kube_plan *ret, aisb_error **err);
void kube_plan_done(kube_plan *k);

/* The objects as JSON documents, each after a "---" line (YAML 1.2 reads them): the gate's
 * ConfigMap, Deployment, Service and NetworkPolicy (when the policy goes through a gate),
 * then the workspace's PersistentVolumeClaim, the sandbox's NetworkPolicy and its Pod.
 * -EOPNOTSUPP, saying why, for what a cluster cannot be given as the policy says. */
int kube_manifests(const aisb_policy *p, const kube_options *o, char **ret_text, aisb_error **err);
