/* SPDX-License-Identifier: MIT */
/* The container's specification: the one JSON body that says what the sandbox may see and
 * do. Pure (no I/O), so unit tests check it key by key and a dry run prints it exactly. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "entrypoint-args.h"
#include "network.h"
#include "policy.h"

/* Everything the body says, decided by the plan (plan.h): this renders it for libpod. */
typedef struct container_spec {
        const aisb_policy *policy;
        const sandbox_network *net;
        const char *const *env;        /* NAME=VALUE */
        const char *const *entrypoint; /* the entrypoint's argv, up to "--" */
        const run_mounts *mounts;      /* NULL: nothing of a run (no settings copy, no bridge) */
        const char *image;
        const char *name;
        const char *gate_hash;         /* the gate serving the run, for its label; NULL: none */
        long pid;                      /* the run's, for its label */
        bool terminal;
} container_spec;

/* The create body (libpod's spec generator). -ENOMEM: nothing is returned half-built. */
int container_create_body(const container_spec *spec, json_object **ret);
/* A container's capabilities and privileges (entrypoint-args.h), as libpod's fields of o. */
int container_security(json_object *o, const security_spec *s);
