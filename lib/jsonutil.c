/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "jsonutil.h"

int json_add(json_object *o, const char *key, json_object *value)
{
        if (!o || !value || json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_add_string(json_object *o, const char *key, const char *value)
{
        return json_add(o, key, json_object_new_string(value));
}

int json_add_bool(json_object *o, const char *key, bool value)
{
        return json_add(o, key, json_object_new_boolean(value));
}

int json_add_int64(json_object *o, const char *key, int64_t value)
{
        return json_add(o, key, json_object_new_int64(value));
}

int json_append(json_object *array, json_object *value)
{
        if (!array || !value || json_object_array_add(array, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_append_string(json_object *array, const char *value)
{
        return json_append(array, json_object_new_string(value));
}

json_object *json_string_array(const char *const *v)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; a && v && v[i]; i++)
                if (json_append_string(a, v[i]) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

void json_wipe_strings(json_object *o)
{
        if (json_object_is_type(o, json_type_string)) {
                /* json-c hands out its own buffer: the value itself, not a copy. */
                explicit_bzero((char *) json_object_get_string(o), (size_t) json_object_get_string_len(o));
        } else if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        json_wipe_strings(json_object_array_get_idx(o, i));
        } else if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, key, value) {
                        (void) key;
                        json_wipe_strings(value);
                }
        }
}
