/* SPDX-License-Identifier: MIT */
/*
 * pi's models.json rewrite (pibridge_parse_json + pibridge_rewrite_models +
 * pibridge_keys_check): every provider's apiKey becomes the name of an environment variable
 * before the file goes into the sandbox. Checked: every apiKey of the copy is empty or a
 * variable name (never a literal key or a "!command"); the key list names each provider
 * with a non-empty apiKey once, with the variable the copy holds; keys_check refuses a run
 * without those variables and accepts one that sets them all; the copy outlives the input.
 */
#include <ctype.h>
#include <json-c/json.h>

#include "aisb-private.h"
#include "fuzz.h"
#include "pibridge.h"

static bool variable_name(const char *s)
{
        if (!*s || !(isupper((unsigned char) *s) || *s == '_'))
                return false;
        for (; *s; s++)
                if (!(isupper((unsigned char) *s) || isdigit((unsigned char) *s) || *s == '_'))
                        return false;
        return true;
}

/* The number of providers whose apiKey is a non-empty string, checking each in the copy. */
static size_t check_providers(json_object *rewritten, const pibridge_key *keys, size_t n)
{
        json_object *providers;
        size_t with_key = 0;
        if (!json_object_object_get_ex(rewritten, "providers", &providers) ||
            !json_object_is_type(providers, json_type_object))
                return 0;
        json_object_object_foreach(providers, name, config) {
                json_object *key;
                if (!json_object_is_type(config, json_type_object) ||
                    !json_object_object_get_ex(config, "apiKey", &key))
                        continue;
                FUZZ_CHECK(json_object_is_type(key, json_type_string));
                const char *v = json_object_get_string(key);
                if (!*v)
                        continue;
                FUZZ_CHECK(variable_name(v) && strlen(v) == (size_t) json_object_get_string_len(key));
                FUZZ_CHECK(with_key < n && streq(keys[with_key].provider, name) &&
                           streq(keys[with_key].variable, v));
                FUZZ_CHECK((keys[with_key].source == PIBRIDGE_KEY_COMMAND) ==
                           (keys[with_key].command != NULL));
                with_key++;
        }
        return with_key;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size ? size : 1);
        if (!text)
                abort();
        memcpy(text, data, size);
        json_object *models = NULL;
        aisb_error *err = NULL;
        int r = pibridge_parse_json(text, size, "models.json", &models, &err);
        free(text);
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                return 0;
        }

        json_object *rewritten = NULL;
        pibridge_key *keys = NULL;
        size_t n = 0;
        r = pibridge_rewrite_models(models, &rewritten, &keys, &n, &err);
        json_object_put(models);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ELOOP);
                FUZZ_CHECK(err && aisb_error_message(err)[0] && !rewritten && !keys && n == 0);
                aisb_error_free(err);
                return 0;
        }
        FUZZ_CHECK(!err && rewritten && json_object_is_type(rewritten, json_type_object));
        FUZZ_CHECK(check_providers(rewritten, keys, n) == n);
        FUZZ_CHECK(json_object_to_json_string_ext(rewritten, JSON_C_TO_STRING_PLAIN));

        r = pibridge_keys_check(keys, n, NULL, 0, &err);
        FUZZ_CHECK(n == 0 ? r == 0 : r == -ENOKEY);
        aisb_error_free(err);
        err = NULL;
        env_entry *env = calloc(n ? n : 1, sizeof *env);
        if (!env)
                abort();
        for (size_t i = 0; i < n; i++)
                env[i] = (env_entry) { .name = keys[i].variable, .value = (char *) "set" };
        FUZZ_CHECK(pibridge_keys_check(keys, n, env, n, &err) == 0 && !err);
        free(env);

        pibridge_keys_free(keys, n);
        json_object_put(rewritten);
        return 0;
}
