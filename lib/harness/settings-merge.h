/* SPDX-License-Identifier: MIT */
/*
 * The settings files of every harness's bridge: one JSON document parsed as strictly as the
 * harnesses' own parsers take it, and the three-way per-key merge of the host's file, the
 * sandbox's and what aisb last wrote (codex's TOML goes through the same, read into json-c
 * values: toml-json.h). Nothing here touches a file; docs/bridges.md says why each rule.
 */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "error.h"
#include "jsonutil.h"

/* A harness's settings files are small; anything bigger or deeper is not one. */
#define SETTINGS_JSON_MAX (4u * 1024u * 1024u)
#define SETTINGS_JSON_MAX_DEPTH 64

/* Parse one JSON document the way pi's JSON.parse would accept it (strict, one value,
 * nothing but whitespace after it), and additionally refuse invalid UTF-8, NUL bytes, a key
 * with an escaped NUL, more than SETTINGS_JSON_MAX bytes and nesting deeper than
 * SETTINGS_JSON_MAX_DEPTH. Errors: -EBADMSG "ORIGIN: not valid JSON (line L, column C): ...",
 * -EFBIG. The document "null" succeeds with *ret = NULL, which the functions below and
 * pi-config.h's take as "no file". */
int settings_parse_json(const char *text, size_t size, const char *origin, json_object **ret, aisb_error **err);

/* Three-way per-key merge of a settings file. base: the host's file of the last merge with
 * policy applied, what aisb writes for a key the sandbox has not edited (NULL: none); host:
 * the host's file (NULL: none); sandbox: the sandbox's file (NULL: none).
 * Per key, "absent" counting as a value:
 *  - sandbox == base (untouched in the sandbox): the host's value, or dropped if the host
 *    has none;
 *  - sandbox != base (edited, added or deleted in the sandbox): the sandbox's, deletion
 *    included;
 *  - where host and sandbox both hold an object, the rule applies per key inside it (a base
 *    that is not an object there counts as an empty one); anything else is atomic;
 *  - base NULL: the host's value for every key the host has, sandbox-only keys survive;
 *  - sandbox NULL (or not an object): a reset, the result is the host's file;
 *  - base not an object: as if NULL. host not an object: -EINVAL.
 * Numbers compare by value (1 == 1.0). Returns a new object sharing nothing with the
 * inputs, which are never modified. -ELOOP past SETTINGS_JSON_MAX_DEPTH. */
int settings_merge(json_object *base, json_object *host, json_object *sandbox, json_object **ret, aisb_error **err);

/* -ELOOP when o (at depth, 1 for a document) nests deeper than SETTINGS_JSON_MAX_DEPTH: the
 * bound that keeps every recursion over a value built by a caller finite. */
int settings_check_depth(json_object *o, unsigned depth);
/* A deep copy of value into *ret (JSON null, NULL, stays NULL). -ENOMEM. */
int settings_copy_value(json_object *value, json_object **ret);
/* value (JSON null, NULL, too) added to object under key, the reference taken: put when it
 * cannot be added. -ENOMEM. */
int settings_put(json_object *object, const char *key, json_object *value);
/* A deep copy of value added to object under key. -ENOMEM. */
int settings_put_copy(json_object *object, const char *key, json_object *value);
