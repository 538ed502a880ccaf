/* SPDX-License-Identifier: MIT */
/* The container's specification: the one JSON body that says what the sandbox may see and
 * do. Pure (no I/O), so unit tests check it key by key and a dry run prints it exactly. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "security.h"
#include "jsonutil.h"
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
        const char *policy_hash;       /* the plan's (policy_hash over its snapshot), for its label */
        const char *const *command;    /* what the entrypoint runs (policy_command) */
        const char *net_name;          /* the network mode's name, for its label */
        long pid;                      /* the run's, for its label */
        bool terminal;
} container_spec;

/* The create body (libpod's spec generator). -ENOMEM: nothing is returned half-built. */
int container_create_body(const container_spec *spec, json_object **ret);
/* A container's capabilities and privileges (security.h), as libpod's fields: the
 * pairs of a JSON_BUILD_OBJECT (jsonutil.h), shared by the sandbox's body and the gate's. */
extern const char *const container_cap_drop[];
#define CONTAINER_SECURITY_PAIRS(s)                                                            \
        JSON_BUILD_PAIR_STRV("cap_drop", container_cap_drop),                                  \
        JSON_BUILD_PAIR_CONDITION((s)->cap_add, JSON_BUILD_PAIR_STRV("cap_add", (s)->cap_add)), \
        JSON_BUILD_PAIR_BOOL("no_new_privileges", true)
/* A libpod mount: {type, source, destination, options}; NULL when out of memory. */
json_object *container_mount(const char *type, const char *source, const char *destination,
                             const char *const *options);
