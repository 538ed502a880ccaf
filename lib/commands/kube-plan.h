/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's plan: a run's plan of the same policy with a cluster's facts where they are not
 * this machine's, the objects' names and images, the files the harness's bridge gives a fresh
 * home, and what of it a cluster cannot have, refused. kube-gate.h and kube-pod.h render it.
 * Internal to libaisb.
 */
#pragma once

#include "error.h"
#include "plan.h"
#include "policy.h"

#define KUBE_UID 1000 /* the sandbox pod's uid and gid */
#define KUBE_GATE_PORT 3128

typedef struct kube_options {
        const char *image_repo;             /* the images' repository on a registry, or NULL: local */
        unsigned long long timeout_s;       /* activeDeadlineSeconds; 0: none */
        unsigned long long workspace_size;  /* bytes of the workspace claim; 0: 10 GiB */
        bool as_sandbox;                    /* an agent-sandbox Sandbox instead of a Pod */
        /* For "podman kube play" on one machine (KUBE_PODMAN_*), not a cluster. */
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
 * are not this machine's (kube_plan_make), the objects' names and images, and the
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
/* What the plan has that the sandbox's pod cannot: -EOPNOTSUPP, naming it and the option that
 * takes it away. */
int kube_check_plan(const aisb_policy *p, const kube_options *o, const kube_plan *k, aisb_error **err);
/* An image of the plan's facts by the name the objects give it: its local tag, or REPO/NAME:TAG. */
int kube_image_name(const image_facts *f, const kube_options *o, const char *name, char **ret);
