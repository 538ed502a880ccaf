/* SPDX-License-Identifier: MIT */
/*
 * pi's models.json rewrite (settings_parse_json + pi_rewrite_models +
 * pi_keys_check): every value pi resolves through the environment (a provider's
 * apiKey, every header's value at provider, model and modelOverrides level) becomes the name
 * of an environment variable before the file goes into the sandbox. Checked, by walking the
 * input and the copy side by side: each such value of the copy is empty (and was), the host's
 * reference itself, or a name aisb derived (never the host's literal or "!command"); the key
 * list names each non-empty value once, in file order, at its place, with the variable the
 * copy holds; everything else is copied unchanged. keys_check refuses a run without those
 * variables, refuses one that lacks only the first (naming it), and accepts one that sets
 * them all; the copy outlives the input.
 */
#include <ctype.h>
#include <json-c/json.h>

#include "internal.h"
#include "fuzz.h"
#include "pi-config.h"

static bool variable_name(const char *s)
{
        if (!*s || !(isupper((unsigned char) *s) || *s == '_') || strlen(s) > 255)
                return false;
        for (; *s; s++)
                if (!(isupper((unsigned char) *s) || isdigit((unsigned char) *s) || *s == '_'))
                        return false;
        return true;
}

/* What the bridge keeps as a reference: a variable name with an underscore and a letter. */
static bool reference(const char *s, size_t len)
{
        return strlen(s) == len && variable_name(s) && strchr(s, '_') &&
               strpbrk(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

static bool str_eq_or_null(const char *a, const char *b)
{
        return a && b ? streq(a, b) : a == b;
}

typedef struct walk {
        const pi_key *keys;
        size_t n, next;
} walk;

/* A value pi resolves: in (the host's) against out (the copy's), at its place. */
static void check_value(walk *w, json_object *in, json_object *out, const char *provider,
                        pi_key_field field, const char *model, const char *header)
{
        FUZZ_CHECK(json_object_is_type(in, json_type_string));
        FUZZ_CHECK(json_object_is_type(out, json_type_string));
        const char *s = json_object_get_string(in), *c = json_object_get_string(out);
        size_t len = (size_t) json_object_get_string_len(in);
        if (len == 0) {
                FUZZ_CHECK(json_object_get_string_len(out) == 0);
                return;
        }
        FUZZ_CHECK(variable_name(c) && strlen(c) == (size_t) json_object_get_string_len(out));
        FUZZ_CHECK(w->next < w->n);
        const pi_key *k = &w->keys[w->next++];
        FUZZ_CHECK(streq(k->provider, provider) && k->field == field &&
                   str_eq_or_null(k->model, model) && str_eq_or_null(k->header, header));
        FUZZ_CHECK(streq(k->variable, c));
        if (reference(s, len)) {
                FUZZ_CHECK(k->source == PIBRIDGE_KEY_REFERENCE && streq(c, s) && !k->command);
                return;
        }
        /* A literal or a command: never in the copy, replaced by a derived name. */
        FUZZ_CHECK(k->source != PIBRIDGE_KEY_REFERENCE);
        FUZZ_CHECK(len != strlen(c) || memcmp(s, c, len) != 0);
        FUZZ_CHECK(strncmp(c, field == PIBRIDGE_FIELD_API_KEY ? "AISB_PI_KEY_" : "AISB_PI_HEADER_",
                           field == PIBRIDGE_FIELD_API_KEY ? 12 : 15) == 0);
        if (s[0] == '!' && strlen(s) == len)
                FUZZ_CHECK(k->source == PIBRIDGE_KEY_COMMAND && k->command && streq(k->command, s + 1));
        else
                FUZZ_CHECK(k->source == PIBRIDGE_KEY_LITERAL && !k->command);
}

static void check_headers(walk *w, json_object *in, json_object *out, const char *provider,
                          pi_key_field field, const char *model)
{
        FUZZ_CHECK(json_object_is_type(in, json_type_object) &&
                   json_object_is_type(out, json_type_object));
        FUZZ_CHECK(json_object_object_length(in) == json_object_object_length(out));
        json_object_object_foreach(in, name, value) {
                json_object *copy;
                FUZZ_CHECK(json_object_object_get_ex(out, name, &copy));
                check_value(w, value, copy, provider, field, model, name);
        }
}

/* A model or an override: copied field by field, its headers checked as above. */
static void check_object(walk *w, json_object *in, json_object *out, const char *provider,
                         pi_key_field field, const char *model)
{
        FUZZ_CHECK(json_object_is_type(out, json_type_object));
        FUZZ_CHECK(json_object_object_length(in) == json_object_object_length(out));
        json_object_object_foreach(in, name, value) {
                json_object *copy;
                FUZZ_CHECK(json_object_object_get_ex(out, name, &copy));
                if (streq(name, "headers"))
                        check_headers(w, value, copy, provider, field, model);
                else
                        FUZZ_CHECK(json_object_equal(value, copy));
        }
}

static void check_provider(walk *w, const char *provider, json_object *in, json_object *out)
{
        if (!json_object_is_type(in, json_type_object)) {
                FUZZ_CHECK(json_object_equal(in, out));
                return;
        }
        FUZZ_CHECK(json_object_is_type(out, json_type_object));
        FUZZ_CHECK(json_object_object_length(in) == json_object_object_length(out));
        json_object_object_foreach(in, field, value) {
                json_object *copy;
                FUZZ_CHECK(json_object_object_get_ex(out, field, &copy));
                if (streq(field, "apiKey"))
                        check_value(w, value, copy, provider, PIBRIDGE_FIELD_API_KEY, NULL, NULL);
                else if (streq(field, "headers"))
                        check_headers(w, value, copy, provider, PIBRIDGE_FIELD_HEADER, NULL);
                else if (streq(field, "models") && json_object_is_type(value, json_type_array)) {
                        size_t n = json_object_array_length(value);
                        FUZZ_CHECK(json_object_is_type(copy, json_type_array) &&
                                   json_object_array_length(copy) == n);
                        for (size_t i = 0; i < n; i++) {
                                json_object *model = json_object_array_get_idx(value, i),
                                            *model_copy = json_object_array_get_idx(copy, i), *id;
                                if (json_object_is_type(model, json_type_object) &&
                                    json_object_object_get_ex(model, "id", &id) &&
                                    json_object_is_type(id, json_type_string))
                                        check_object(w, model, model_copy, provider,
                                                     PIBRIDGE_FIELD_MODEL_HEADER,
                                                     json_object_get_string(id));
                                else /* a model with headers has a string id, or it failed */
                                        FUZZ_CHECK(!json_object_object_get_ex(model, "headers", NULL) &&
                                                   json_object_equal(model, model_copy));
                        }
                } else if (streq(field, "modelOverrides") &&
                           json_object_is_type(value, json_type_object)) {
                        FUZZ_CHECK(json_object_is_type(copy, json_type_object) &&
                                   json_object_object_length(copy) == json_object_object_length(value));
                        json_object_object_foreach(value, id, override) {
                                json_object *override_copy;
                                FUZZ_CHECK(json_object_object_get_ex(copy, id, &override_copy));
                                if (json_object_is_type(override, json_type_object))
                                        check_object(w, override, override_copy, provider,
                                                     PIBRIDGE_FIELD_OVERRIDE_HEADER, id);
                                else
                                        FUZZ_CHECK(json_object_equal(override, override_copy));
                        }
                } else
                        FUZZ_CHECK(json_object_equal(value, copy));
        }
}

static void check_copy(json_object *in, json_object *out, const pi_key *keys, size_t n)
{
        walk w = { .keys = keys, .n = n };
        FUZZ_CHECK(json_object_object_length(in) == json_object_object_length(out));
        json_object_object_foreach(in, top, value) {
                json_object *copy;
                FUZZ_CHECK(json_object_object_get_ex(out, top, &copy));
                if (!streq(top, "providers") || !json_object_is_type(value, json_type_object)) {
                        FUZZ_CHECK(json_object_equal(value, copy));
                        continue;
                }
                FUZZ_CHECK(json_object_is_type(copy, json_type_object) &&
                           json_object_object_length(copy) == json_object_object_length(value));
                json_object_object_foreach(value, provider, config) {
                        json_object *config_copy;
                        FUZZ_CHECK(json_object_object_get_ex(copy, provider, &config_copy));
                        check_provider(&w, provider, config, config_copy);
                }
        }
        FUZZ_CHECK(w.next == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size ? size : 1);
        if (!text)
                abort();
        memcpy(text, data, size);
        json_object *models = NULL;
        aisb_error *err = NULL;
        int r = settings_parse_json(text, size, "models.json", &models, &err);
        free(text);
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                return 0;
        }

        json_object *rewritten = NULL;
        pi_key *keys = NULL;
        size_t n = 0;
        r = pi_rewrite_models(models, &rewritten, &keys, &n, &err);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ELOOP);
                FUZZ_CHECK(err && aisb_error_message(err)[0] && !rewritten && !keys && n == 0);
                aisb_error_free(err);
                json_object_put(models);
                return 0;
        }
        FUZZ_CHECK(!err && rewritten && json_object_is_type(rewritten, json_type_object));
        check_copy(models, rewritten, keys, n);
        json_object_put(models);
        FUZZ_CHECK(json_object_to_json_string_ext(rewritten, JSON_C_TO_STRING_PLAIN));

        r = pi_keys_check(keys, n, NULL, 0, &err);
        FUZZ_CHECK(n == 0 ? r == 0 : r == -ENOKEY);
        FUZZ_CHECK(n == 0 || strstr(aisb_error_message(err), keys[0].variable));
        aisb_error_free(err);
        err = NULL;
        env_entry *env = calloc(n ? n : 1, sizeof *env);
        if (!env)
                abort();
        for (size_t i = 0; i < n; i++)
                env[i] = (env_entry) { .name = keys[i].variable, .value = (char *) "set" };
        FUZZ_CHECK(pi_keys_check(keys, n, env, n, &err) == 0 && !err);
        if (n > 0) {
                /* Everything but the first variable (wherever else it is needed). */
                size_t kept = 0;
                for (size_t i = 0; i < n; i++)
                        if (!streq(keys[i].variable, keys[0].variable))
                                env[kept++] = env[i];
                r = pi_keys_check(keys, n, env, kept, &err);
                FUZZ_CHECK(r == -ENOKEY && err);
                const char *m = aisb_error_message(err);
                const char *at = strstr(m, "--env ");
                FUZZ_CHECK(at && strncmp(at + 6, keys[0].variable, strlen(keys[0].variable)) == 0);
                aisb_error_free(err);
        }
        free(env);

        pi_keys_free(keys, n);
        json_object_put(rewritten);
        return 0;
}
