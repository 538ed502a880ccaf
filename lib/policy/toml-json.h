/* SPDX-License-Identifier: MIT */
/*
 * TOML text as json-c values and back, for codex's ~/.codex/config.toml: the bridge reads the
 * host's and the sandbox's file into JSON, merges them by settings_merge' rules and
 * writes the result back as TOML. toml++ parses and writes (toml.cc, the library's only
 * C++); toml-json.c bounds what goes in and puts the errors in aisb's form. Nothing here
 * touches a file.
 *
 * What a round trip keeps: every value. What it loses: comments, and the order of keys
 * (toml++ holds a table's keys sorted, so a file comes back with them in byte order).
 */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "aisb.h"

/* codex's config is a few KiB. The bounds are pi-config.h's for JSON, so that whatever is
 * parsed here the settings merge takes too (toml-json.c checks that they agree). */
#define TOML_JSON_TEXT_MAX (4u * 1024u * 1024u)
#define TOML_JSON_MAX_DEPTH 64

#ifdef __cplusplus
extern "C" {
#endif

/* Parse a TOML document into a JSON object: tables as objects, arrays as arrays, strings,
 * integers (int64), floats (doubles), booleans. text need not be NUL-terminated; empty text
 * is an empty object. Refused, with -EBADMSG and "ORIGIN:LINE:COLUMN: ..." (origin NULL:
 * "TOML"): text that is not TOML 1.0, not UTF-8 or holds a NUL byte; a date or time, an
 * infinity or a NaN (JSON holds neither), a key holding NUL (json-c's keys end there),
 * each naming its key. -EFBIG past TOML_JSON_TEXT_MAX bytes; -ELOOP for tables or arrays
 * nested deeper than TOML_JSON_MAX_DEPTH, the root counting as one, or a dotted key of
 * more parts than that. */
int toml_parse_json(const char *text, size_t size, const char *origin, json_object **ret,
                    aisb_error **err);

/* Write a JSON object as a TOML document (NUL-terminated, malloc'd), which toml_parse_json
 * reads back to the same value. JSON null has no TOML form: a key whose value is null is
 * left out, as if absent (in an array a null is refused: leaving it out would move the
 * elements after it). Refused with -EINVAL: a value that is not an object, an infinity or
 * a NaN, an integer above INT64_MAX, a string that is not UTF-8, a key holding a single
 * quote, a tab or a newline (toml++ 3.3 would write it unquoted); -ELOOP past
 * TOML_JSON_MAX_DEPTH; -EFBIG for a text of more than TOML_JSON_TEXT_MAX bytes. */
int toml_format_json(json_object *o, char **ret_text, aisb_error **err);

/*
 * The C++ half (toml.cc), for toml-json.c alone: toml++ behind two calls that never throw.
 * A failure returns a negative errno; but for -ENOMEM it fills problem with where in the
 * text it lies (1-based; 0 when it lies nowhere in a text) and a malloc'd message, which
 * may quote the input and so hold any byte. On failure *ret is untouched.
 */
typedef struct toml_problem {
        unsigned line, column;
        char *message;
} toml_problem;

int toml_text_to_json(const char *text, size_t size, json_object **ret, toml_problem *problem);
int toml_json_to_text(json_object *object, char **ret_text, toml_problem *problem);

#ifdef __cplusplus
}
#endif
