/* SPDX-License-Identifier: MIT */
/*
 * The pure half of the pi bridge (harness-pi.c is the other): the thinking-level policy of
 * pi's settings.json, and the rewrite of models.json that keeps every literal API key and
 * header value out of the sandbox. The rules, and the lines of pi's source they rest on, are
 * in docs/bridges.md. Everything here works on json-c values; reading and writing the files
 * is the caller's business.
 */
#include <sys/param.h>

#include "pi-config.h"

/* ---- thinking ---- */

/* packages/coding-agent/src/cli/args.ts, VALID_THINKING_LEVELS; and aisb's "host". */
static const char *const thinking_levels[] = { "off", "minimal", "low", "medium", "high", "xhigh", "host", NULL };

bool pi_thinking_level_valid(const char *level)
{
        return level && strv_contains(thinking_levels, level);
}

const char *pi_thinking_levels(void)
{
        return "off, minimal, low, medium, high, xhigh, host";
}

int pi_apply_thinking(json_object *settings, const char *level, aisb_error **err)
{
        if (!pi_thinking_level_valid(level))
                return aisb_error_set(err, -EINVAL, "thinking level '%s' is not one of: %s",
                                      level ? level : "(none)", pi_thinking_levels());
        if (!json_object_is_type(settings, json_type_object))
                return aisb_error_set(err, -EINVAL, "settings to apply a thinking level to are not a JSON object");
        if (streq(level, "host"))
                return 0;
        if (json_add_string(settings, "defaultThinkingLevel", level) < 0)
                return error_oom(err);
        /* enabledModels' "provider/id:LEVEL" gives the first model listed its own level, over
         * defaultThinkingLevel (pi 0.73.1): the suffix goes, the model stays. */
        json_object *models;
        if (!json_object_object_get_ex(settings, "enabledModels", &models) || !json_object_is_type(models, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(models); i++) {
                json_object *m = json_object_array_get_idx(models, i);
                const char *text = json_object_is_type(m, json_type_string) ? json_object_get_string(m) : NULL;
                const char *colon = text ? strrchr(text, ':') : NULL;
                if (!colon || !pi_thinking_level_valid(colon + 1) || streq(colon + 1, "host"))
                        continue;
                json_object *bare = json_object_new_string_len(text, (int) (colon - text));
                if (!bare || json_object_array_put_idx(models, i, bare) < 0) {
                        json_object_put(bare);
                        return error_oom(err);
                }
        }
        return 0;
}

/* ---- models.json ---- */

#define KEY_VARIABLE_PREFIX "AISB_PI_KEY_"
#define HEADER_VARIABLE_PREFIX "AISB_PI_HEADER_"
#define VARIABLE_NAME_MAX 255
/* Names longer than this are cut in messages; the rest of the line still says where. */
#define NAME_SHOWN_MAX 64

static bool ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool ascii_digit(char c) { return c >= '0' && c <= '9'; }
static bool ascii_lower(char c) { return c >= 'a' && c <= 'z'; }

/* pi looks every apiKey and header value up in the environment first
 * (resolve-config-value.ts), so every string is a reference to pi. aisb takes only the
 * conventional spelling of one as a reference, an upper-case name with an underscore and a
 * letter, so that a value that happens to be one word of letters and digits is still treated
 * as the secret it probably is. */
static bool reference_name(const char *s, size_t len)
{
        if (len == 0 || len > VARIABLE_NAME_MAX || strlen(s) != len)
                return false;
        if (!ascii_upper(s[0]) && s[0] != '_')
                return false;
        bool underscore = false, letter = false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '_')
                        underscore = true;
                else if (ascii_upper(s[i]))
                        letter = true;
                else if (!ascii_digit(s[i]))
                        return false;
        }
        return underscore && letter;
}

/* Where a value sits while the copy is built: a pi_key before it is recorded. */
typedef struct place {
        pi_key_field field;
        const char *provider;
        const char *model;  /* MODEL_HEADER, OVERRIDE_HEADER */
        const char *header; /* *_HEADER; NULL while the headers object itself is meant */
} place;

/* 'name', cut after NAME_SHOWN_MAX bytes (never inside a UTF-8 sequence). */
static int put_name(buffer *b, const char *name)
{
        size_t len = strlen(name), n = MIN(len, (size_t) NAME_SHOWN_MAX);
        while (n > 0 && n < len && ((unsigned char) name[n] & 0xc0) == 0x80)
                n--;
        return buffer_printf(b, "'%.*s%s'", (int) n, name, n < len ? "..." : "");
}

static int inspect_place(const place *where, buffer *b)
{
        int r = 0;
        if (where->field == PIBRIDGE_FIELD_API_KEY)
                r |= buffer_printf(b, "the apiKey of ");
        else if (!where->header)
                r |= buffer_printf(b, "the headers of ");
        else {
                r |= buffer_printf(b, "header ");
                r |= put_name(b, where->header);
                r |= buffer_printf(b, " of ");
        }
        if (where->field == PIBRIDGE_FIELD_MODEL_HEADER ||
            where->field == PIBRIDGE_FIELD_OVERRIDE_HEADER) {
                r |= buffer_printf(b, where->field == PIBRIDGE_FIELD_MODEL_HEADER
                                              ? "model "
                                              : "modelOverrides ");
                r |= put_name(b, where->model);
                r |= buffer_printf(b, " of ");
        }
        r |= buffer_printf(b, "provider ");
        r |= put_name(b, where->provider);
        return r < 0 ? -ENOMEM : 0;
}

int pi_key_describe(const pi_key *k, buffer *b)
{
        place where = { k->field, k->provider, k->model, k->header };
        return inspect_place(&where, b);
}

/* The variable a literal or a command at where is replaced by: the prefix, then the
 * provider, the model and the header's names, upper-cased, every byte other than an ASCII
 * letter or digit turned into '_', joined by '_'. -ENAMETOOLONG past a variable name's
 * 255 bytes. */
static int derived_variable(const place *where, char **ret)
{
        const char *parts[3];
        size_t n = 0;
        parts[n++] = where->provider;
        if (where->field == PIBRIDGE_FIELD_MODEL_HEADER ||
            where->field == PIBRIDGE_FIELD_OVERRIDE_HEADER)
                parts[n++] = where->model;
        if (where->field != PIBRIDGE_FIELD_API_KEY)
                parts[n++] = where->header;
        const char *prefix = where->field == PIBRIDGE_FIELD_API_KEY ? KEY_VARIABLE_PREFIX
                                                                     : HEADER_VARIABLE_PREFIX;
        size_t len = strlen(prefix) + n - 1;
        for (size_t i = 0; i < n; i++)
                len += strlen(parts[i]);
        if (len > VARIABLE_NAME_MAX)
                return -ENAMETOOLONG;
        char *v = malloc(len + 1);
        if (!v)
                return -ENOMEM;
        char *p = stpcpy(v, prefix);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        *p++ = '_';
                for (const char *c = parts[i]; *c; c++)
                        *p++ = ascii_lower(*c) ? (char) (*c - 'a' + 'A')
                               : (ascii_upper(*c) || ascii_digit(*c)) ? *c
                                                                      : '_';
        }
        *p = 0;
        *ret = v;
        return 0;
}

void pi_keys_free(pi_key *keys, size_t n)
{
        for (size_t i = 0; keys && i < n; i++) {
                free(keys[i].provider);
                free(keys[i].model);
                free(keys[i].header);
                free(keys[i].variable);
                free(keys[i].command);
        }
        free(keys);
}

typedef struct key_list {
        pi_key *keys;
        size_t n;
        json_object *seen; /* variable -> true when derived by aisb */
} key_list;

static void key_list_done(key_list *l)
{
        pi_keys_free(l->keys, l->n);
        json_object_put(l->seen);
}

static char *strdup_or_null(const char *s, bool *failed)
{
        char *d = s ? strdup(s) : NULL;
        if (s && !d)
                *failed = true;
        return d;
}

/* Record the variable of the value at where; a derived name shared with any other value
 * would make two secrets one variable, so it is refused. */
static int key_list_add(key_list *l, const place *where, const char *variable,
                        pi_key_source source, const char *command, aisb_error **err)
{
        bool derived = source != PIBRIDGE_KEY_REFERENCE;
        json_object *was;
        if (json_object_object_get_ex(l->seen, variable, &was)) {
                if (derived || json_object_get_boolean(was)) {
                        _cleanup_(buffer_free) buffer both = {};
                        const pi_key *other = NULL;
                        for (size_t i = 0; i < l->n && !other; i++)
                                if (streq(l->keys[i].variable, variable))
                                        other = &l->keys[i];
                        int r = other ? pi_key_describe(other, &both) : 0;
                        if (r >= 0)
                                r = buffer_printf(&both, " and ");
                        if (r >= 0)
                                r = inspect_place(where, &both);
                        if (r < 0)
                                return error_oom(err);
                        return aisb_error_set(err, -EINVAL,
                                              "models.json: %s would both be read from %s; rename one, or set one of them to a variable name of your own (\"MY_KEY\") and pass it with --env",
                                              both.data, variable);
                }
        } else if (json_object_object_add(l->seen, variable, json_object_new_boolean(derived)) < 0)
                return error_oom(err);

        pi_key *k = realloc(l->keys, (l->n + 1) * sizeof *k);
        if (!k)
                return error_oom(err);
        l->keys = k;
        k = &l->keys[l->n];
        bool failed = false;
        *k = (pi_key) {
                .provider = strdup_or_null(where->provider, &failed),
                .field = where->field,
                .model = strdup_or_null(where->model, &failed),
                .header = strdup_or_null(where->header, &failed),
                .variable = strdup_or_null(variable, &failed),
                .source = source,
                .command = strdup_or_null(command, &failed),
        };
        l->n++;
        return failed ? error_oom(err) : 0;
}

/* The value at where as it goes into the sandbox: a new string that is never a literal or
 * a command; the host's value is never copied, so no freed memory of ours holds it either. */
static int rewrite_value(const place *where, json_object *value, key_list *l, json_object **ret,
                         aisb_error **err)
{
        if (!json_object_is_type(value, json_type_string)) {
                _cleanup_(buffer_free) buffer what = {};
                if (inspect_place(where, &what) < 0)
                        return error_oom(err);
                return aisb_error_set(err, -EINVAL, "models.json: %s is %s; pi needs a string",
                                      what.data, json_type_to_name(json_object_get_type(value)));
        }
        const char *s = json_object_get_string(value);
        size_t len = (size_t) json_object_get_string_len(value);

        if (len == 0) {
                /* Nothing to hide; pi refuses an empty apiKey and drops an empty header. */
                *ret = json_object_new_string("");
                return *ret ? 0 : error_oom(err);
        }

        _cleanup_free_ char *variable = NULL;
        pi_key_source source;
        if (reference_name(s, len)) {
                source = PIBRIDGE_KEY_REFERENCE;
                variable = strdup(s);
                if (!variable)
                        return error_oom(err);
        } else {
                source = s[0] == '!' && strlen(s) == len ? PIBRIDGE_KEY_COMMAND
                                                          : PIBRIDGE_KEY_LITERAL;
                int r = derived_variable(where, &variable);
                if (r == -ENAMETOOLONG) {
                        _cleanup_(buffer_free) buffer what = {};
                        if (inspect_place(where, &what) < 0)
                                return error_oom(err);
                        return aisb_error_set(err, -EINVAL,
                                              "models.json: %s: the names are too long to name a variable after; write a variable name there instead (\"MY_KEY\") and pass it with --env",
                                              what.data);
                }
                if (r < 0)
                        return error_oom(err);
        }
        int r = key_list_add(l, where, variable, source,
                             source == PIBRIDGE_KEY_COMMAND ? s + 1 : NULL, err);
        if (r < 0)
                return r;
        *ret = json_object_new_string(variable);
        return *ret ? 0 : error_oom(err);
}

/* What a member of an object becomes in its copy (rewrite_members), where the object is. */
typedef int (*member_fn)(const place *where, const char *key, json_object *value, key_list *l, json_object **ret,
                         aisb_error **err);

/* A copy of object built member by member, each through fn at where, so that no literal is
 * ever duplicated. */
static int rewrite_members(const place *where, json_object *object, member_fn fn, key_list *l, json_object **ret,
                           aisb_error **err)
{
        _cleanup_json_ json_object *copy = json_object_new_object();
        if (!copy)
                return error_oom(err);
        json_object_object_foreach(object, key, value) {
                json_object *rewritten = NULL;
                int r = fn(where, key, value, l, &rewritten, err);
                if (r < 0)
                        return r;
                if (settings_put(copy, key, rewritten) < 0)
                        return error_oom(err);
        }
        *ret = steal_pointer(&copy);
        return 0;
}

static int copy_value(json_object *value, json_object **ret, aisb_error **err)
{
        return settings_copy_value(value, ret) < 0 ? error_oom(err) : 0;
}

static int header_member(const place *where, const char *name, json_object *value, key_list *l, json_object **ret,
                         aisb_error **err)
{
        place at = *where;
        at.header = name;
        return rewrite_value(&at, value, l, ret, err);
}

/* A headers object (where->header unset), each value rewritten. pi's schema takes only an
 * object of strings; anything else here cannot be told from a secret. */
static int rewrite_headers(const place *where, json_object *headers, key_list *l, json_object **ret,
                           aisb_error **err)
{
        if (!json_object_is_type(headers, json_type_object)) {
                _cleanup_(buffer_free) buffer what = {};
                if (inspect_place(where, &what) < 0)
                        return error_oom(err);
                return aisb_error_set(err, -EINVAL,
                                      "models.json: %s are %s; pi needs an object of strings",
                                      what.data, json_type_to_name(json_object_get_type(headers)));
        }
        return rewrite_members(where, headers, header_member, l, ret, err);
}

/* A field of a model of "models" or of an entry of "modelOverrides": its headers rewritten at
 * where. */
static int model_member(const place *where, const char *field, json_object *value, key_list *l, json_object **ret,
                        aisb_error **err)
{
        return streq(field, "headers") ? rewrite_headers(where, value, l, ret, err) : copy_value(value, ret, err);
}

/* value through model_member at where, or copied (where NULL: nothing of ours in it, or pi
 * rejects it). */
static int rewrite_or_copy(const place *where, json_object *value, key_list *l, json_object **ret, aisb_error **err)
{
        return where ? rewrite_members(where, value, model_member, l, ret, err) : copy_value(value, ret, err);
}

/* "models": an array of model definitions, each naming itself by "id". */
static int rewrite_model_list(const char *provider, json_object *models, key_list *l,
                              json_object **ret, aisb_error **err)
{
        size_t n = json_object_array_length(models);
        _cleanup_json_ json_object *copy = json_object_new_array();
        if (!copy)
                return error_oom(err);
        for (size_t i = 0; i < n; i++) {
                json_object *model = json_object_array_get_idx(models, i), *rewritten = NULL, *id = NULL;
                bool headers = json_object_is_type(model, json_type_object) &&
                               json_object_object_get_ex(model, "headers", NULL);
                if (headers && (!json_object_object_get_ex(model, "id", &id) || !json_object_is_type(id, json_type_string)))
                        return aisb_error_set(err, -EINVAL,
                                              "models.json: model %zu of provider '%s' has headers and its id is %s; pi needs a string id",
                                              i + 1, provider, json_type_to_name(json_object_get_type(id)));
                place where = { PIBRIDGE_FIELD_MODEL_HEADER, provider, headers ? json_object_get_string(id) : NULL, NULL };
                int r = rewrite_or_copy(headers ? &where : NULL, model, l, &rewritten, err);
                if (r < 0)
                        return r;
                if (json_object_array_add(copy, rewritten) < 0) {
                        json_object_put(rewritten);
                        return error_oom(err);
                }
        }
        *ret = steal_pointer(&copy);
        return 0;
}

/* An entry of "modelOverrides": model id -> override of a built-in model. */
static int override_member(const place *where, const char *id, json_object *override, key_list *l,
                           json_object **ret, aisb_error **err)
{
        place at = { PIBRIDGE_FIELD_OVERRIDE_HEADER, where->provider, id, NULL };
        return rewrite_or_copy(json_object_is_type(override, json_type_object) ? &at : NULL, override, l, ret, err);
}

/* A field of provider where->provider's. */
static int provider_member(const place *where, const char *field, json_object *value, key_list *l,
                           json_object **ret, aisb_error **err)
{
        if (streq(field, "apiKey"))
                return rewrite_value(&(place) { PIBRIDGE_FIELD_API_KEY, where->provider, NULL, NULL }, value, l, ret,
                                     err);
        if (streq(field, "headers"))
                return rewrite_headers(&(place) { PIBRIDGE_FIELD_HEADER, where->provider, NULL, NULL }, value, l, ret,
                                       err);
        if (streq(field, "models") && json_object_is_type(value, json_type_array))
                return rewrite_model_list(where->provider, value, l, ret, err);
        if (streq(field, "modelOverrides") && json_object_is_type(value, json_type_object))
                return rewrite_members(where, value, override_member, l, ret, err);
        /* pi rejects a "models" or "modelOverrides" of another type */
        return copy_value(value, ret, err);
}

/* A provider of "providers", or copied when it is no object (pi rejects it; nothing of ours
 * to rewrite). */
static int providers_member(const place *where, const char *provider, json_object *config, key_list *l,
                            json_object **ret, aisb_error **err)
{
        (void) where;
        if (!json_object_is_type(config, json_type_object))
                return copy_value(config, ret, err);
        return rewrite_members(&(place) { .provider = provider }, config, provider_member, l, ret, err);
}

/* A member of models.json: "providers" rewritten provider by provider, anything else copied. */
static int top_member(const place *where, const char *top, json_object *value, key_list *l, json_object **ret,
                      aisb_error **err)
{
        if (!streq(top, "providers") || !json_object_is_type(value, json_type_object))
                return copy_value(value, ret, err);
        return rewrite_members(where, value, providers_member, l, ret, err);
}

int pi_rewrite_models(json_object *models, json_object **ret_rewritten,
                            pi_key **ret_keys, size_t *ret_n, aisb_error **err)
{
        if (!json_object_is_type(models, json_type_object))
                return aisb_error_set(err, -EINVAL,
                                      "models.json is %s, not a JSON object with \"providers\"",
                                      json_type_to_name(json_object_get_type(models)));
        if (settings_check_depth(models, 1) < 0)
                return aisb_error_set(err, -ELOOP, "models.json is nested deeper than %d levels",
                                      SETTINGS_JSON_MAX_DEPTH);

        _cleanup_(key_list_done) key_list l = { .seen = json_object_new_object() };
        _cleanup_json_ json_object *out = NULL;
        if (!l.seen)
                return error_oom(err);
        int r = rewrite_members(&(place) {}, models, top_member, &l, &out, err);
        if (r < 0)
                return r;

        *ret_rewritten = steal_pointer(&out);
        *ret_keys = steal_pointer(&l.keys);
        *ret_n = l.n;
        l.n = 0;
        return 0;
}

static const env_entry *env_find(const env_entry *env, size_t n_env, const char *name)
{
        for (size_t i = 0; i < n_env; i++)
                if (env[i].name && streq(env[i].name, name))
                        return &env[i];
        return NULL;
}

int pi_keys_check(const pi_key *keys, size_t n, const env_entry *env, size_t n_env,
                        aisb_error **err)
{
        _cleanup_(buffer_free) buffer missing = {};
        _cleanup_json_ json_object *reported = json_object_new_object();
        if (!reported)
                return error_oom(err);
        bool literal = false;
        for (size_t i = 0; i < n; i++) {
                const pi_key *k = &keys[i];
                const env_entry *e = env_find(env, n_env, k->variable);
                if (e && e->value && e->value[0])
                        continue;
                if (json_object_object_get_ex(reported, k->variable, NULL))
                        continue;
                if (json_object_object_add(reported, k->variable, NULL) < 0)
                        return error_oom(err);
                int r = buffer_printf(&missing, "%s--env %s", missing.size ? "; " : "", k->variable);
                if (r >= 0 && k->source == PIBRIDGE_KEY_COMMAND)
                        r = buffer_printf(&missing, "=\"$(%s)\"", k->command ? k->command : "...");
                else if (r >= 0 && k->source == PIBRIDGE_KEY_LITERAL)
                        r = buffer_printf(&missing, "=<%s>",
                                          k->field == PIBRIDGE_FIELD_API_KEY ? "key" : "value");
                if (r >= 0)
                        r = buffer_printf(&missing, " (");
                if (r >= 0)
                        r = pi_key_describe(k, &missing);
                if (r >= 0)
                        r = buffer_printf(&missing, "%s",
                                          k->source == PIBRIDGE_KEY_REFERENCE
                                                  ? " is read from it)"
                                          : k->source == PIBRIDGE_KEY_COMMAND
                                                  ? " comes from a command, which does not run in the sandbox)"
                                                  : " is a literal, which aisb does not copy into the sandbox)");
                if (r < 0)
                        return error_oom(err);
                literal |= k->source == PIBRIDGE_KEY_LITERAL;
        }
        if (missing.size)
                return aisb_error_set(err, -ENOKEY,
                                      "pi's models.json needs variables this run does not set (or sets empty); add: %s "
                                      "(or --secret NAME@PROVIDER-HOST instead of --env NAME: the gate then holds the key, "
                                      "the sandbox never does)%s",
                                      missing.data,
                                      literal ? ". Or write a variable's name in place of a literal in ~/.pi/agent/models.json (\"apiKey\": \"MY_KEY\") and pass --env MY_KEY"
                                              : "");
        return 0;
}
