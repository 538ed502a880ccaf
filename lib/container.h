/* SPDX-License-Identifier: MIT */
/* The container's specification: the one JSON body that says what the sandbox may see and
 * do. Pure (no I/O), so unit tests check it key by key and a dry run prints it exactly. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "entrypoint-args.h"
#include "network.h"
#include "policy.h"

typedef struct container_spec {
        const aisb_policy *policy;
        const sandbox_network *net;
        const run_mounts *mounts; /* NULL: nothing of a run (no settings copy, no bridge) */
        const char *image;
        const char *name;
        const char *gate_hash;    /* the gate serving the run, for its label; NULL: none */
        bool terminal;
        bool redact;              /* environment values as "<redacted>" (a dry run's view) */
} container_spec;

/* The create body (libpod's spec generator). -ENOMEM: nothing is returned half-built. */
int container_create_body(const container_spec *spec, json_object **ret);
