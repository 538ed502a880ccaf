/* SPDX-License-Identifier: MIT */
/* The key table (policy-keys.c): a row for each key of the policy, and what the rows hold;
 * and the setters of its keys that live in policy-env.c and policy-mounts.c. */
#pragma once

#include "policy.h"
#include "project.h"

typedef struct policy_key policy_key;
struct policy_key {
        aisb_policy_key pub; /* what aisb_policy_key_at() hands out */
        /* Check value and apply it, or leave the policy as it was. value is NULL only for a
         * boolean given bare. */
        int (*set)(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err);
        /* Push the key's values onto *values, each as set() takes it; none when unset. */
        int (*get)(const aisb_policy *p, const policy_key *k, char ***values);
        /* The key's lines in the policy's text; NULL: "name=value" for each value. */
        int (*format)(const aisb_policy *p, const policy_key *k, const project_settings *settings, buffer *b,
                      aisb_error **err);
        /* Whether the policy's text shows the key; NULL: always. */
        bool (*shown)(const aisb_policy *p);
        /* What set() calls for the keys that add a value by a function of their own. */
        int (*add)(aisb_policy *p, const char *value, aisb_error **err);
        size_t field; /* the policy's field, for the rows of the generic functions */
        size_t width; /* its size */
        /* Sizes: the smallest accepted, in bytes; numbers: the range accepted. */
        unsigned long long min, max;
        const char *const *choices;      /* the names of a choice's values, in order */
        bool (*valid)(const char *value); /* strings: whether one is accepted; NULL: any */
        const char *refusal; /* numbers, choices, strings: what a refusal says after "KEY: 'VALUE' " */
        /* The default is stored as it is, unchecked: the installed entrypoint need not exist
         * when a policy is made (a run says so). */
        bool default_verbatim;
};

#define FIELD(p, k, type) ((type *) (void *) ((char *) (p) + (k)->field))
#define CONST_FIELD(p, k, type) ((type const *) (const void *) ((const char *) (p) + (k)->field))

/* In the order of aisb(1)'s help and the policy's text. */
extern const policy_key policy_keys[];
extern const size_t policy_keys_n;

/* The rows' format() of the allowlist's keys and the create patch (policy-format.c). */
int policy_format_allow(const aisb_policy *p, const policy_key *k, const project_settings *settings, buffer *b,
                        aisb_error **err);
int policy_format_create_patch(const aisb_policy *p, const policy_key *k, const project_settings *settings,
                               buffer *b, aisb_error **err);

/* The sandbox's environment as the keys set it (policy-env.c); the rest of what the policy
 * says of variables and secrets is in policy.h. --env NAME[=VALUE], --env-file FILE,
 * --secret NAME@HOST... (NAME's value read from the caller's environment): -EINVAL (or
 * -ENOENT, -EPERM) with why. */
int policy_add_env(aisb_policy *p, const char *spec, aisb_error **err);
int policy_add_env_file(aisb_policy *p, const char *path, aisb_error **err);
int policy_add_secret_named(aisb_policy *p, const char *spec, aisb_error **err);
/* The variables every sandbox inherits (policy_env_inherited): from the process's
 * environment, or with from as that policy got them. -ENOMEM. */
int policy_env_inherit(aisb_policy *p, const aisb_policy *from);

/* The project, --mount and --device as the keys set them (policy-mounts.c). Make abs
 * (absolute, a directory; taken over) the project, unless a mount's source is inside it (it
 * is at /project already, and the sandbox could swap it for a link): -EPERM with why. */
int policy_set_project(aisb_policy *p, char *abs, bool is_cwd, aisb_error **err);
/* --mount SRC:DST[:ro|rw], --device /dev/NAME[:DST[:rwm]] or a CDI name: -EINVAL (or
 * -EPERM, an errno of the source) with why. */
int policy_add_mount(aisb_policy *p, const char *spec, aisb_error **err);
int policy_add_device(aisb_policy *p, const char *spec, aisb_error **err);
