/* SPDX-License-Identifier: MIT */
/* What the library tells aisb-entrypoint (entrypoint/, the sandbox's first process), and the
 * capabilities the container starts with so that it can do what it is told. */
#pragma once

#include <stdbool.h>

#include "network.h"
#include "policy.h"

#define AISB_ENTRYPOINT_IN_IMAGE "/usr/local/libexec/aisb/aisb-entrypoint"
/* Where an ephemeral home's bridged files are mounted read-only, and where the entrypoint
 * copies them (after the drop, as the user). */
#define AISB_SEED_IN_SANDBOX "/run/aisb/pi-seed"
#define AISB_PI_AGENT_IN_SANDBOX AISB_SANDBOX_HOME "/.pi/agent"
/* The gate's CA, and the bundle the entrypoint makes of it and the system's CAs (which the
 * variables of entrypoint_trust_env point at). */
#define AISB_GATE_CA_IN_SANDBOX "/run/aisb/gate-ca.pem"
#define AISB_CA_BUNDLE_IN_SANDBOX "/run/aisb/ca-bundle.crt"
/* The variables that make curl, git, python (requests, pip), OpenSSL and Node trust the
 * bundle, NULL-terminated. */
extern const char *const entrypoint_trust_env[];

/* The capabilities the container starts with; the entrypoint drops them all. */
extern const char *const entrypoint_capabilities[];

/* What a run mounts beyond the policy, and what it expects to find mounted. */
typedef struct run_mounts {
        const char *settings_copy; /* the run's copy of .ai-sandbox, read-only over it; NULL: none */
        const char *seed_dir;      /* ephemeral home: the bridged files, copied in by the entrypoint */
        const char *agents_dir;    /* read-only at ~/.agents; NULL: none */
        const char *gate_ca;       /* the gate's CA when it intercepts TLS (a file); NULL: none */
        const struct protect_plan *protect; /* protected paths' mounts; NULL: none */
        /* What the project directory was when the run began: the entrypoint refuses a
         * /project that is not it. */
        bool have_project_id;
        unsigned long long project_dev, project_ino;
} run_mounts;

/* The entrypoint's argv for this policy, network and run (rm NULL: a description, nothing
 * mounted), up to and including "--". -ENOMEM. */
int entrypoint_argv(const aisb_policy *p, const sandbox_network *net, const run_mounts *rm, char ***ret);
