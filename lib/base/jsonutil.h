/* SPDX-License-Identifier: MIT */
/*
 * json-c, the way the library uses it. The builders are checked: json-c's own
 * json_object_object_add() takes a NULL value as JSON null and reports no failure, so an
 * allocation that failed inside a request body would send {"cap_drop": null}, which podman
 * reads as "the default", failing open. Each builder here takes its value (put on failure)
 * and returns -ENOMEM when the value is NULL or cannot be added.
 */
#pragma once

#include <json-c/json.h>

#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)

int json_add(json_object *o, const char *key, json_object *value);
int json_add_string(json_object *o, const char *key, const char *value);
int json_add_bool(json_object *o, const char *key, bool value);
int json_add_int64(json_object *o, const char *key, int64_t value);
int json_append(json_object *array, json_object *value);
int json_append_string(json_object *array, const char *value);
/* A new array of v's strings (v may be NULL: an empty array); NULL when out of memory. */
json_object *json_string_array(const char *const *v);
/* Overwrite every string value in o (objects and arrays, all the way down) with zero bytes,
 * in place: for a request body that held secret values, before it is freed. Keys stay. */
void json_wipe_strings(json_object *o);

/*
 * A declarative builder: a value written as the JSON it makes, e.g.
 *
 *         r = json_build(&o, JSON_BUILD_OBJECT(
 *                         JSON_BUILD_PAIR_STRING("name", name),
 *                         JSON_BUILD_PAIR_CONDITION(read_only, JSON_BUILD_PAIR_BOOL("readOnly", true)),
 *                         JSON_BUILD_PAIR("limits", JSON_BUILD_OBJECT(
 *                                 JSON_BUILD_PAIR_INT64("memory", memory)))));
 *
 * The arguments are a list of items, each a type tag and its values (the macros below write
 * both, and convert each value to the type its tag reads), ended by a sentinel the outer
 * macro adds. The contract:
 *   - the first error is the one returned, as it was (never several folded into one);
 *   - on error *ret is untouched, nothing built is kept, and every object handed over with
 *     JSON_BUILD_TAKE is put: the builder owns what it is given, whatever the outcome;
 *   - a NULL string, key or taken object is refused with -ENOMEM (JSON_BUILD_TAKE_OR: the
 *     errno the caller gives), never written as JSON null: in this library a NULL where a
 *     value belongs is an allocation that failed upstream, and null would read as podman's
 *     default (fail-open);
 *   - an item under a false JSON_BUILD_CONDITION is read and dropped (a NULL in it is no
 *     error; an object it takes is put), so its value need not exist;
 *   - items that do not nest (a pair outside an object, a value without its key, a missing
 *     end) are -EINVAL: a bug of the call, after which the rest is not read.
 */
enum {
        _JSON_BUILD_END = 0x4a534e00, /* unlikely as a stray int: a missing sentinel shows */
        _JSON_BUILD_STRING,
        _JSON_BUILD_BOOL,
        _JSON_BUILD_INT64,
        _JSON_BUILD_STRV,
        _JSON_BUILD_TAKE,
        _JSON_BUILD_OBJECT_BEGIN,
        _JSON_BUILD_OBJECT_END,
        _JSON_BUILD_ARRAY_BEGIN,
        _JSON_BUILD_ARRAY_END,
        _JSON_BUILD_PAIR,
        _JSON_BUILD_CONDITION,
};

/* A string vector of either constness, read as const char *const *. */
#define _JSON_STRV(v)                                                                    \
        _Generic((v), char **: (const char *const *) (v), char *const *: (const char *const *) (v), \
                 const char **: (const char *const *) (v), const char *const *: (v),      \
                 void *: (const char *const *) (v))

/* Values. */
#define JSON_BUILD_STRING(s) _JSON_BUILD_STRING, (const char *){ (s) }
#define JSON_BUILD_BOOL(b) _JSON_BUILD_BOOL, (int) !!(b)
#define JSON_BUILD_INT64(i) _JSON_BUILD_INT64, (int64_t){ (i) }
/* A NULL-terminated vector as an array of strings; NULL: an empty array. */
#define JSON_BUILD_STRV(v) _JSON_BUILD_STRV, _JSON_STRV(v)
/* An object built elsewhere, owned from here on (put if the build fails or drops it). */
#define JSON_BUILD_TAKE(o) JSON_BUILD_TAKE_OR(o, -ENOMEM)
/* The same, and when o is NULL the build fails with error (a negative errno). */
#define JSON_BUILD_TAKE_OR(o, error) _JSON_BUILD_TAKE, (json_object *){ (o) }, (int){ (error) }
/* Each takes at least one item (so that they nest: the preprocessor would not expand a
 * JSON_BUILD_OBJECT inside one whose arguments may be empty); the empty ones are below. */
#define JSON_BUILD_OBJECT(...) _JSON_BUILD_OBJECT_BEGIN, __VA_ARGS__, _JSON_BUILD_OBJECT_END
#define JSON_BUILD_ARRAY(...) _JSON_BUILD_ARRAY_BEGIN, __VA_ARGS__, _JSON_BUILD_ARRAY_END
#define JSON_BUILD_EMPTY_OBJECT _JSON_BUILD_OBJECT_BEGIN, _JSON_BUILD_OBJECT_END
#define JSON_BUILD_EMPTY_ARRAY _JSON_BUILD_ARRAY_BEGIN, _JSON_BUILD_ARRAY_END

/* An object's members: a key, then one value. */
#define JSON_BUILD_PAIR(key, ...) _JSON_BUILD_PAIR, (const char *){ (key) }, __VA_ARGS__
#define JSON_BUILD_PAIR_STRING(key, s) JSON_BUILD_PAIR(key, JSON_BUILD_STRING(s))
#define JSON_BUILD_PAIR_BOOL(key, b) JSON_BUILD_PAIR(key, JSON_BUILD_BOOL(b))
#define JSON_BUILD_PAIR_INT64(key, i) JSON_BUILD_PAIR(key, JSON_BUILD_INT64(i))
#define JSON_BUILD_PAIR_STRV(key, v) JSON_BUILD_PAIR(key, JSON_BUILD_STRV(v))
#define JSON_BUILD_PAIR_TAKE(key, o) JSON_BUILD_PAIR(key, JSON_BUILD_TAKE(o))

/* The next item (a pair in an object, a value in an array) only when cond is true. */
#define JSON_BUILD_CONDITION(cond, ...) _JSON_BUILD_CONDITION, (int) !!(cond), __VA_ARGS__
#define JSON_BUILD_PAIR_CONDITION(cond, ...) JSON_BUILD_CONDITION(cond, __VA_ARGS__)

/* Every argument is evaluated, whatever the condition: an object to take only when cond
 * holds is made only then with these (cond is read twice). */
#define JSON_BUILD_TAKE_IF(cond, o) JSON_BUILD_CONDITION(cond, JSON_BUILD_TAKE((cond) ? (o) : NULL))
#define JSON_BUILD_PAIR_TAKE_IF(cond, key, o) \
        JSON_BUILD_PAIR_CONDITION(cond, JSON_BUILD_PAIR_TAKE(key, (cond) ? (o) : NULL))

/* One value, into *ret (see above). */
int json_build_items(json_object **ret, ...);
#define json_build(ret, ...) json_build_items(ret, __VA_ARGS__, _JSON_BUILD_END)
/* The value built, or NULL when the build failed: for a builder whose only failure is out of
 * memory, which returns its object for the caller to JSON_BUILD_TAKE (the errno is lost). */
#define json_built(...)                                                         \
        ({                                                                      \
                json_object *_built_ = NULL;                                    \
                json_build(&_built_, __VA_ARGS__) < 0 ? NULL : _built_;         \
        })
/* More members of an existing object (pairs), or elements of an existing array (values).
 * On error o may hold some of them; nothing is left half-owned. */
int json_build_into_items(json_object *o, ...);
#define json_build_into(o, ...) json_build_into_items(o, __VA_ARGS__, _JSON_BUILD_END)

/* o as text (json_object_to_json_string_ext with flags, owned by o), or NULL when it could not
 * be written whole: json-c's writer, out of memory, leaves a piece out and returns the rest,
 * so the text is read back and must equal o (json_text_is; the copy read is wiped, as a body
 * may hold secrets). json-c 0.16's parser does not survive an allocation failure of its own
 * (it crashes in json_object_object_add_ex): then the process ends and nothing is sent. */
bool json_text_is(json_object *o, const char *text);
const char *json_text_checked(json_object *o, int flags);
/* JSON text as json-c wrote it, made safe to print and to parse: DEL and the C1 controls
 * (which json-c leaves as they are, and a terminal may take for escape sequences) as \u
 * escapes, and each byte that is not well-formed UTF-8 (JSON text is UTF-8) as \ufffd.
 * These only occur inside strings, where the escapes mean those characters; a name that is
 * not UTF-8 is shown, not kept exactly. -ENOMEM. */
int json_text_safe(const char *text, char **ret);
/* Whether the size bytes of text (NUL-terminated there) are well-formed UTF-8 with no NUL:
 * text a JSON string holds exactly. */
bool json_utf8_valid(const char *text, size_t size);
