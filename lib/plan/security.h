/* SPDX-License-Identifier: MIT */
/* What the library tells aisb-entrypoint (entrypoint/, the sandbox's first process), and the
 * capabilities the container starts with so that it can do what it is told. */
#pragma once

#include <stdbool.h>

#include "network.h"
#include "policy.h"

#define AISB_ENTRYPOINT_IN_IMAGE "/usr/local/libexec/aisb/aisb-entrypoint"
/* Where an ephemeral home's bridged files are mounted read-only; the entrypoint copies them
 * (after the drop, as the user) into the harness's directory (harness_sandbox_dir). */
#define AISB_SEED_IN_SANDBOX "/run/aisb/pi-seed"
/* The gate's CA, and the bundle the entrypoint makes of it and the system's CAs (which the
 * variables of entrypoint_trust_env point at). */
#define AISB_GATE_CA_IN_SANDBOX "/run/aisb/gate-ca.pem"
#define AISB_CA_BUNDLE_IN_SANDBOX "/run/aisb/ca-bundle.crt"
/* The variables that make curl, git, python (requests, pip), OpenSSL and Node trust the
 * bundle, NULL-terminated. */
extern const char *const entrypoint_trust_env[];

/* The capabilities the container starts with; the entrypoint drops them all. */
extern const char *const entrypoint_capabilities[];

/* What a run mounts beyond the policy. */
typedef struct run_mounts {
        const char *settings_copy; /* the run's copy of .ai-sandbox, read-only over it; NULL: none */
        const char *seed_dir;      /* ephemeral home: the bridged files, copied in by the entrypoint */
        const char *agents_dir;    /* read-only at ~/.agents; NULL: none */
        const struct harness_mount *harness; /* read-only in the harness's directory */
        size_t n_harness;
        const char *gate_ca;       /* the gate's CA when it intercepts TLS (a file); NULL: none */
        const struct protect_plan *protect; /* protected paths' mounts; NULL: none */
        /* A review run's layer (review.h): the project as the lower of an overlay with these
         * as its upper and work directories, instead of a bind. NULL: the project bound. */
        const char *review_upper, *review_work;
} run_mounts;

/* What a container of aisb's is held to: every capability dropped, then cap_add given back
 * (NULL: none), no new privileges, seccomp's default at least; as_root: it starts as root of
 * its user namespace (the entrypoint, which drops it), else as a user; read_only_root: its
 * image read-only. container.c renders it for libpod, kube-objects.c for Kubernetes. */
typedef struct security_spec {
        const char *const *cap_add;
        bool as_root;
        bool read_only_root;
} security_spec;
/* The sandbox (read_only_root is the policy's), the gate, aisb kube's init container that
 * installs the ruleset, and the pods' other containers. */
extern const security_spec security_sandbox, security_gate, security_netfilter, security_pod;
