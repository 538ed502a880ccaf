/* SPDX-License-Identifier: MIT */
/*
 * pi's settings.json three-way merge: settings_parse_json on three documents, then
 * settings_merge and pi_apply_thinking. The sandbox's copy is written by
 * whatever ran in the sandbox, so it is hostile input by design. The first byte picks the
 * thinking level; the rest is split at NUL bytes (which no JSON document may hold) into
 * base, host and sandbox, an empty piece meaning "no file".
 * Checked: a success returns an object that shares nothing with the inputs (they are freed
 * before it is used); with no base every host key keeps the host's value; with the sandbox
 * untouched since base the result is the host's file; the result survives a round trip
 * through text; the thinking level lands where it should.
 */
#include <json-c/json.h>

#include "internal.h"
#include "fuzz.h"
#include "pi-config.h"

static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh", "host",
                                      "extreme" };

/* parse one piece; false when it is not a document the bridge would take */
static bool parse_piece(const char *text, size_t size, const char *origin, json_object **ret)
{
        *ret = NULL;
        if (size == 0)
                return true;
        aisb_error *err = NULL;
        int r = settings_parse_json(text, size, origin, ret, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -EFBIG);
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)) &&
                           strncmp(aisb_error_message(err), origin, strlen(origin)) == 0);
                aisb_error_free(err);
                return false;
        }
        FUZZ_CHECK(!err);
        return true;
}

/* Every key of host is in result with host's value, object values compared key by key. */
static void check_host_kept(json_object *result, json_object *host)
{
        json_object_object_foreach(host, key, hv) {
                json_object *rv;
                FUZZ_CHECK(json_object_object_get_ex(result, key, &rv));
                if (json_object_is_type(hv, json_type_object) &&
                    json_object_is_type(rv, json_type_object))
                        check_host_kept(rv, hv);
                else
                        FUZZ_CHECK(json_object_equal(rv, hv));
        }
}

static json_object *merge(json_object *base, json_object *host, json_object *sandbox)
{
        json_object *result = NULL;
        aisb_error *err = NULL;
        int r = settings_merge(base, host, sandbox, &result, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ELOOP);
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)) && !result);
                aisb_error_free(err);
                return NULL;
        }
        FUZZ_CHECK(!err && result && json_object_is_type(result, json_type_object));
        return result;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const char *level = levels[data[0] % (sizeof levels / sizeof levels[0])];
        char *copy = fuzz_strndup(data + 1, size - 1);
        const char *piece[3] = { copy, "", "" };
        size_t piece_size[3] = { size - 1, 0, 0 };
        for (int i = 0; i < 2; i++) {
                char *nul = memchr(piece[i], 0, piece_size[i]);
                if (!nul)
                        break;
                piece[i + 1] = nul + 1;
                piece_size[i + 1] = piece_size[i] - (size_t) (nul + 1 - piece[i]);
                piece_size[i] = (size_t) (nul - piece[i]);
        }

        json_object *base, *host, *sandbox;
        bool ok = parse_piece(piece[0], piece_size[0], "base", &base);
        ok = parse_piece(piece[1], piece_size[1], "host", &host) && ok;
        ok = parse_piece(piece[2], piece_size[2], "sandbox", &sandbox) && ok;
        if (!ok) {
                json_object_put(base);
                json_object_put(host);
                json_object_put(sandbox);
                free(copy);
                return 0;
        }

        bool host_object = !host || json_object_is_type(host, json_type_object);
        bool sandbox_object = sandbox && json_object_is_type(sandbox, json_type_object);
        json_object *result = merge(base, host, sandbox);
        FUZZ_CHECK((result != NULL) == host_object);

        if (result && host && (!sandbox_object || !base ||
                               !json_object_is_type(base, json_type_object)))
                check_host_kept(result, host);
        if (result && !sandbox_object)
                FUZZ_CHECK(host ? json_object_equal(result, host)
                                : json_object_object_length(result) == 0);
        if (result && sandbox_object) {
                /* Nothing changed in the sandbox since base: the host's file, exactly. */
                json_object *untouched = merge(sandbox, host, sandbox);
                FUZZ_CHECK(untouched);
                FUZZ_CHECK(host ? json_object_equal(untouched, host)
                                : json_object_object_length(untouched) == 0);
                json_object_put(untouched);
        }
        json_object_put(base);
        json_object_put(host);
        json_object_put(sandbox);

        if (result) {
                /* The inputs are gone: anything shared would be a use after free now. */
                const char *text = json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN);
                json_object *again = NULL;
                aisb_error *err = NULL;
                FUZZ_CHECK(text && settings_parse_json(text, strlen(text), "again", &again, &err) == 0);
                FUZZ_CHECK(json_object_equal(again, result));
                json_object_put(again);

                int r = pi_apply_thinking(result, level, &err);
                if (streq(level, "extreme")) {
                        FUZZ_CHECK(r == -EINVAL && fuzz_one_line(aisb_error_message(err)));
                        aisb_error_free(err);
                } else {
                        FUZZ_CHECK(r == 0);
                        json_object *v;
                        if (!streq(level, "host"))
                                FUZZ_CHECK(json_object_object_get_ex(result, "defaultThinkingLevel", &v) &&
                                           streq(json_object_get_string(v), level));
                }
                json_object_put(result);
        }
        free(copy);
        return 0;
}
