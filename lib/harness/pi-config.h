/* SPDX-License-Identifier: MIT */
/*
 * The pure half of the bridge between the host's pi configuration (~/.pi/agent) and the
 * sandbox's home: the thinking-level policy, and the rewrite of models.json that keeps
 * literal API keys out of the sandbox (the files' parse and merge are settings-merge.h's).
 * Nothing here touches a file, the environment or podman; docs/bridges.md explains the rules
 * and where they come from in pi's source.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "jsonutil.h"
#include "settings-merge.h"

/* pi's thinking levels plus "host" (keep whatever the merge produced). */
bool pi_thinking_level_valid(const char *level);
const char *pi_thinking_levels(void); /* "off, minimal, low, medium, high, xhigh, host" */
/* Set "defaultThinkingLevel" to level in settings (an object), or leave it for "host".
 * -EINVAL naming the valid levels otherwise; settings is untouched on failure. */
int pi_apply_thinking(json_object *settings, const char *level, aisb_error **err);

/* How a value was written on the host. */
typedef enum pi_key_source {
        PIBRIDGE_KEY_REFERENCE, /* "SOME_VARIABLE": kept as is */
        PIBRIDGE_KEY_LITERAL,   /* the value itself: replaced by a reference */
        PIBRIDGE_KEY_COMMAND,   /* "!command": cannot run in the sandbox; replaced */
} pi_key_source;

/* Where in models.json the value sits: the places pi resolves through the environment
 * (coding-agent/src/core/resolve-config-value.ts, used by model-registry.ts). */
typedef enum pi_key_field {
        PIBRIDGE_FIELD_API_KEY,         /* providers.P.apiKey */
        PIBRIDGE_FIELD_HEADER,          /* providers.P.headers.H */
        PIBRIDGE_FIELD_MODEL_HEADER,    /* providers.P.models[i].headers.H (model: its id) */
        PIBRIDGE_FIELD_OVERRIDE_HEADER, /* providers.P.modelOverrides.M.headers.H */
} pi_key_field;

/* One variable the run must pass with --env for a provider's key or a header's value. No
 * secret in here. */
typedef struct pi_key {
        char *provider;
        pi_key_field field;
        char *model;    /* MODEL_HEADER, OVERRIDE_HEADER: the model's id; else NULL */
        char *header;   /* every *_HEADER: the header's name; else NULL */
        char *variable; /* the name now in the sandbox's models.json */
        pi_key_source source;
        char *command; /* PIBRIDGE_KEY_COMMAND: the host's command, without the '!' */
} pi_key;

/* Copy models.json with every value pi resolves through the environment turned into an
 * environment reference, the form pi resolves as process.env[value]: a provider's apiKey and
 * every header's value (provider, model and modelOverrides level). References (upper-case
 * names with an underscore) stay; literals and "!commands" become AISB_PI_KEY_<PROVIDER>, or
 * AISB_PI_HEADER_<PROVIDER>_[<MODEL>_]<HEADER> (upper-cased, every other byte '_'). Empty
 * values are copied. The copy never contains a literal, not even in freed memory. Lists one
 * entry per non-empty value, in file order (several may name the same reference). Errors:
 * -EINVAL for a non-string apiKey or header value, headers that are not an object, a model
 * with headers and no string id, a non-object document, two values whose derived names
 * collide or whose derived name another value uses as a reference, a name too long for a
 * variable; -ELOOP. On failure nothing is returned. */
int pi_rewrite_models(json_object *models, json_object **ret_rewritten,
                            pi_key **ret_keys, size_t *ret_n, aisb_error **err);
void pi_keys_free(pi_key *keys, size_t n);

/* Append where a key's value sits, for messages: "the apiKey of provider 'P'", "header 'H'
 * of provider 'P'", "header 'H' of model 'M' of provider 'P'", "header 'H' of modelOverrides
 * 'M' of provider 'P'". Names only, never a value. */
int pi_key_describe(const pi_key *k, buffer *b);

/* Refuse a run whose models.json needs a variable that env (the run's --env entries) does
 * not set, or sets empty: -ENOKEY with one line naming every --env to add and why. */
int pi_keys_check(const pi_key *keys, size_t n, const env_entry *env, size_t n_env,
                        aisb_error **err);
