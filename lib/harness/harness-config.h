/* SPDX-License-Identifier: MIT */
/*
 * The pure rules of the claude and codex bridges (pi's are in pi-config.h): what of the keys
 * carried (harness-carry.h) still never enters the sandbox, and what aisb sets there on every
 * run whatever the files say. Both work on json-c values (codex's TOML is read into one, toml-json.h); the
 * three-way merge itself is settings_merge. docs/bridges.md says why each rule is there.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "error.h"
#include "util.h"

/* Whether a key names a credential (an API key, a token, a secret, a password, a bearer, an
 * authorization header), matched on its letters alone, case-insensitively: "ANTHROPIC_API_KEY",
 * "apiKeyHelper", "X-Api-Key", "experimental_bearer_token", "Authorization". A key that only
 * names where a credential is found ("env_key": a variable's name) is not one. */
bool harness_key_is_credential(const char *key);

/* Remove from o (an object, changed in place), at any depth, every key that names a
 * credential (harness_key_is_credential), whatever its value, and every key whose value looks
 * like one to the skill linter's scanner (secret-scan.h: a known token format, a private key,
 * a URL with a password, a random-looking token), assigns one (PGPASSWORD=..., --token ...,
 * ?code=..., a client's password option: mysql -uroot -p...) or is a URL with a token in its
 * path (a webhook's), whatever its name; a string in an array takes the array's key with it.
 * A query parameter of codex's query_params goes by its name or by a value that looks like a
 * credential's, unless it says which API is asked (api-version). A table of references
 * ("env_http_headers": header name to variable name) is kept whole. A key whose dotted path is
 * one of named (NULL-terminated; NULL: none) goes by its value only: the user carries it by
 * name (bridge-carry). Each removed key's dotted path is appended to removed, followed by ", "
 * (names, never values; NULL: not told). Objects inside arrays are scrubbed too. -ENOMEM. */
int harness_scrub_credentials(json_object *o, const char *const *named, buffer *removed);

/* codex's reasoning levels (config.toml model_reasoning_effort), plus "host". */
bool codex_thinking_level_valid(const char *level);
const char *codex_thinking_levels(void);
/* codex's config.toml (an object) as policy makes it, on top of the merge:
 *  - sandbox_mode "danger-full-access", at the top and in every profile that sets one: codex's
 *    own sandbox (bubblewrap with new user and network namespaces) cannot start inside aisb's,
 *    which refuses user namespaces, so any other mode fails every shell command; aisb's
 *    container is the sandbox. approval_policy stays the user's;
 *  - check_for_update_on_startup false, features.plugins false, analytics.enabled false,
 *    otel.metrics_exporter "none": what codex asks of the network on its own, which the gate
 *    would refuse on every run; features.daemon_auto_start false: the TUI's background server;
 *  - level (unless "host"): model_reasoning_effort, at the top and in every profile that sets
 *    one, so that no profile lowers it.
 * -EINVAL naming the levels for a level codex lacks; -ENOMEM. */
int codex_config_apply_policy(json_object *config, const char *level, aisb_error **err);

/* settings[table][key] (table NULL: settings[key]) as host has it, or none: a key policy takes
 * from the host's file whatever the sandbox's says. -ENOMEM. */
int harness_pin_key(json_object *settings, json_object *host, const char *table, const char *key);

/* claude's settings.json (an object) as policy makes it, on top of the merge. With level (the
 * run sets one): effortLevel and maxEffortLevel removed, at the top and in each of
 * modelSettings (they pick, and clamp, claude's level), and the variables of
 * claude_level_variables in its "env" as host's (the host's settings, NULL: none) has them,
 * or none (they pass a level of their own or turn thinking off). Then env (NAME, VALUE pairs,
 * NULL-terminated) set in "env", each as the run sets it in claude's environment: claude
 * copies settings.json's env over its own environment, so the sandbox's file could otherwise
 * undo them (the reasoning level, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, a --env of the
 * user's). -ENOMEM. */
extern const char *const claude_level_variables[];
int claude_settings_apply_policy(json_object *settings, json_object *host, const char *const *env, bool level,
                                 aisb_error **err);
