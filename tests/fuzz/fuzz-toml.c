/* SPDX-License-Identifier: MIT */
/*
 * codex's config.toml as JSON and back (toml_parse_json, toml_format_json): the sandbox's
 * copy is written by whatever ran in the sandbox, so it is hostile input by design, and
 * toml++ is C++ that must neither throw into C nor recurse without bound.
 * Checked: a refusal is -EBADMSG, -EFBIG or -ELOOP with one line naming the origin; what
 * parses is an object, which formats (nothing parsed is refused on the way back but for size
 * and the keys toml++ 3.3 cannot write) to a text that parses to the same value and formats
 * to the same text again.
 */
#include <json-c/json.h>

#include "internal.h"
#include "fuzz.h"
#include "toml-json.h"

/* A key that toml++ 3.3 would write unquoted (toml.cc): the one thing parsed that may not be
 * written. */
static bool unwritable_keys(json_object *o)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (unwritable_keys(json_object_array_get_idx(o, i)))
                                return true;
        } else if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, key, value)
                        if (strpbrk(key, "'\t\n") || unwritable_keys(value))
                                return true;
        }
        return false;
}

static char *format(json_object *o)
{
        char *text = NULL;
        aisb_error *err = NULL;
        int r = toml_format_json(o, &text, &err);
        if (r == -EFBIG || (r == -EINVAL && unwritable_keys(o))) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)) && !text);
                aisb_error_free(err);
                return NULL;
        }
        FUZZ_CHECK(r == 0 && !err && text);
        return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_object *parsed = NULL;
        aisb_error *err = NULL;
        int r = toml_parse_json((const char *) data, size, "sandbox", &parsed, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -EFBIG || r == -ELOOP);
                FUZZ_CHECK(!parsed && err && aisb_error_code(err) == r);
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)) &&
                           strncmp(aisb_error_message(err), "sandbox:", 8) == 0);
                aisb_error_free(err);
                return 0;
        }
        FUZZ_CHECK(!err && json_object_is_type(parsed, json_type_object));

        char *text = format(parsed);
        if (text) {
                json_object *again = NULL;
                FUZZ_CHECK(toml_parse_json(text, strlen(text), "again", &again, &err) == 0);
                FUZZ_CHECK(json_object_equal(again, parsed));
                char *text_again = format(again);
                FUZZ_CHECK(text_again && streq(text_again, text));
                free(text_again);
                json_object_put(again);
        }
        free(text);
        json_object_put(parsed);
        return 0;
}
