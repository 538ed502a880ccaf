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
