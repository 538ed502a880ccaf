/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: a policy as Kubernetes objects (kube.c says how each part of the policy is
 * enforced there), one header for the kube*.c files. Internal to libaisb; aisb_policy_kube()
 * is the public face.
 */
#pragma once

#include <json-c/json.h>

#include "error.h"
#include "plan.h"
#include "policy.h"
#include "security.h"

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

/* The objects as JSON documents, each after a "---" line (YAML 1.2 reads them): the gate's
 * ConfigMap, Deployment, Service and NetworkPolicy (when the policy goes through a gate),
 * then the workspace's PersistentVolumeClaim, the sandbox's NetworkPolicy and its Pod.
 * -EOPNOTSUPP, saying why, for what a cluster cannot be given as the policy says. */
int kube_manifests(const aisb_policy *p, const kube_options *o, char **ret_text, aisb_error **err);

/* The pieces Kubernetes objects are made of, as aisb kube's gate and sandbox both write them.
 * Each returns a new json-c object, or NULL when out of memory (the JSON_BUILD_* builders
 * carry that NULL out). */
json_object *kube_labels(const char *key, const char *value, const char *gate_client);
json_object *kube_metadata(const char *name, json_object *labels, bool podman_seccomp);
/* metadata and body taken. */
json_object *kube_object(const char *api_version, const char *kind, json_object *metadata, const char *body_key,
                         json_object *body);

json_object *kube_security(const security_spec *s);
json_object *kube_pod_security(unsigned uid);

json_object *kube_empty_dir(const char *name, const char *medium, unsigned long long size);
const char *kube_volume_name(char buf[static 64], const char *owner, const char *what);
json_object *kube_volume_mount(const char *name, const char *path, bool read_only, const char *sub_path);

const char *kube_pull_policy(const kube_options *ko);

json_object *kube_port(const char *protocol, unsigned port);
json_object *kube_egress_block(const char *cidr, const char *const *except, const unsigned *ports, size_t n_ports,
                               bool udp);
json_object *kube_selector(const char *key, const char *value);
json_object *kube_network_policy(const char *name, json_object *labels, const char *key, const char *value,
                                 json_object *ingress, json_object *egress);

/* The gate's ConfigMap and Deployment, and on a cluster its Service and NetworkPolicy,
 * appended to docs. */
int kube_gate_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                      aisb_error **err);

/* The ConfigMaps the pod's volumes name, its NetworkPolicy (none for podman) and the pod,
 * appended to docs; -EOPNOTSUPP for a mount of the plan's that a pod cannot have. */
int kube_sandbox_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                         aisb_error **err);
/* The workspace: a claim of the project's own, which outlives the pod. */
int kube_workspace_claim(const kube_options *ko, const kube_names *n, json_object *docs);
