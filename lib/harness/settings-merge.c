/* SPDX-License-Identifier: MIT */
/*
 * The settings files' parse and three-way merge (settings-merge.h), for every harness's bridge.
 * Pure: json-c values in, json-c values out; docs/bridges.md has the rules.
 */
#include <limits.h>
#include <math.h>
#include <sys/param.h>

#include "config-text.h"
#include "settings-merge.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_tokener *, json_tokener_free)

/* ---- parsing ---- */

static int parse_error(const char *text, size_t offset, const char *origin, const char *what,
                       aisb_error **err)
{
        unsigned line, col;
        config_text_position(text, offset, &line, &col);
        return aisb_error_set(err, -EBADMSG, "%s: not valid JSON (line %u, column %u): %s",
                              origin, line, col, what);
}

/* RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF. json-c's own check
 * lets overlong forms through. Returns the offset of the first bad byte, or size. */
static size_t utf8_invalid_at(const char *text, size_t size)
{
        const unsigned char *s = (const unsigned char *) text;
        for (size_t i = 0; i < size;) {
                unsigned char c = s[i];
                size_t n;
                unsigned min, cp;
                if (c < 0x80) {
                        i++;
                        continue;
                } else if ((c & 0xe0) == 0xc0) {
                        n = 1, min = 0x80, cp = c & 0x1f;
                } else if ((c & 0xf0) == 0xe0) {
                        n = 2, min = 0x800, cp = c & 0x0f;
                } else if ((c & 0xf8) == 0xf0) {
                        n = 3, min = 0x10000, cp = c & 0x07;
                } else
                        return i;
                if (n > size - i - 1)
                        return i;
                for (size_t k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return i;
                        cp = (cp << 6) | (s[i + k] & 0x3f);
                }
                if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return i;
                i += n + 1;
        }
        return size;
}

/* json-c takes NaN and Infinity even when strict; JSON.parse does not, and a NaN would never
 * compare equal to itself in the merge. Depth is bounded by the tokener. */
static bool all_finite(json_object *o)
{
        switch (json_object_get_type(o)) {
        case json_type_double:
                return isfinite(json_object_get_double(o));
        case json_type_array:
                for (size_t i = 0, n = json_object_array_length(o); i < n; i++)
                        if (!all_finite(json_object_array_get_idx(o, i)))
                                return false;
                return true;
        case json_type_object: {
                json_object_object_foreach(o, key, value) {
                        (void) key;
                        if (!all_finite(value))
                                return false;
                }
                return true;
        }
        default:
                return true;
        }
}

/* json-c 0.18 refuses, in strict mode, every byte above 0x7f in a string: it compares a
 * signed char with 0x1f (json-c issue #875, fixed in 0.19). */
static bool strict_refuses_utf8(void)
{
        int version = json_c_version_num();
        return version >= ((0 << 16) | (18 << 8)) && version < ((0 << 16) | (19 << 8));
}

/* One value from text, parsed with json-c's flags, then checked as settings_parse_json says. */
static int parse_with(const char *text, size_t size, const char *origin, int flags,
                      json_object **ret, aisb_error **err)
{
        _cleanup_(json_tokener_freep) struct json_tokener *tok =
                json_tokener_new_ex(SETTINGS_JSON_MAX_DEPTH);
        if (!tok)
                return error_oom(err);
        json_tokener_set_flags(tok, flags);

        _cleanup_json_ json_object *obj = json_tokener_parse_ex(tok, text, (int) size);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        if (jerr == json_tokener_continue) {
                /* Everything was consumed; a bare top-level number or literal only ends at
                 * the terminator, so feed one. */
                obj = json_tokener_parse_ex(tok, "", 1);
                jerr = json_tokener_get_error(tok);
                end = size;
        }
        if (jerr == json_tokener_continue)
                return parse_error(text, size, origin, "unexpected end of data", err);
        if (jerr == json_tokener_error_depth) {
                char what[64];
                (void) snprintf(what, sizeof what, "nested deeper than %d levels",
                                SETTINGS_JSON_MAX_DEPTH);
                return parse_error(text, MIN(end, size), origin, what, err);
        }
        if (jerr != json_tokener_success)
                return parse_error(text, MIN(end, size), origin, json_tokener_error_desc(jerr),
                                   err);
        for (size_t i = end; i < size; i++)
                if (!strchr(" \t\r\n", text[i]))
                        return parse_error(text, i, origin, "data after the JSON value", err);
        if (!all_finite(obj))
                return aisb_error_set(err, -EBADMSG, "%s: not valid JSON: NaN or Infinity",
                                      origin);
        *ret = steal_pointer(&obj);
        return 0;
}

/* Where a key (a string that a ':' follows) holds an escaped NUL, or size. json-c ends a key
 * there ("model\u0000x" is read as "model"), where the harness reads another key: the
 * carry-list would judge a key the harness never sees. A value keeps its NUL. */
static size_t key_nul_at(const char *text, size_t size)
{
        for (size_t i = 0; i < size; i++) {
                /* json-c takes single-quoted strings too. */
                char quote = text[i];
                if (quote != '"' && quote != '\'')
                        continue;
                size_t nul = size;
                for (i++; i < size && text[i] != quote; i++)
                        if (text[i] == '\\') {
                                if (nul == size && i + 5 < size && memcmp(text + i, "\\u0000", 6) == 0)
                                        nul = i;
                                i++;
                        }
                size_t j = i + 1;
                while (j < size && strchr(" \t\r\n", text[j]))
                        j++;
                if (nul < size && j < size && text[j] == ':')
                        return nul;
        }
        return size;
}

int settings_parse_json(const char *text, size_t size, const char *origin, json_object **ret, aisb_error **err)
{
        if (!origin)
                origin = "JSON";
        if (config_text_check_size(origin, size, SETTINGS_JSON_MAX, "pi", err) < 0)
                return -EFBIG;
        if (!text || size == 0)
                return parse_error("", 0, origin, "empty file", err);
        const char *nul = memchr(text, 0, size);
        if (nul)
                return parse_error(text, (size_t) (nul - text), origin, "NUL byte", err);
        size_t key_nul = key_nul_at(text, size);
        if (key_nul < size)
                return parse_error(text, key_nul, origin, "a key with an escaped NUL (\\u0000)", err);

        size_t bad = utf8_invalid_at(text, size);
        if (bad < size)
                return parse_error(text, bad, origin, "invalid UTF-8", err);

        /* Strict: pi reads these files with JSON.parse, which takes no comments or trailing
         * commas either. (json-c still takes single-quoted strings; what we write back is
         * standard JSON, so that only makes us more lenient than pi, never less safe.) */
        int flags = JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8;
        if (strict_refuses_utf8()) {
                /* Where json-c cannot parse UTF-8 strictly, strictness is checked on a copy
                 * with each byte above 0x7f made 'a': the same length, so every error's
                 * position holds, and such bytes are never JSON's structure (outside a string
                 * 'a' is refused as they are). The values then come from the text itself,
                 * parsed without strictness, which a text the strict parse took reads the
                 * same way. */
                _cleanup_free_ char *masked = malloc(size);
                if (!masked)
                        return error_oom(err);
                bool high = false;
                for (size_t i = 0; i < size; i++) {
                        high |= (unsigned char) text[i] > 0x7f;
                        masked[i] = (unsigned char) text[i] > 0x7f ? 'a' : text[i];
                }
                if (high) {
                        _cleanup_json_ json_object *checked = NULL;
                        int r = parse_with(masked, size, origin, flags, &checked, err);
                        if (r < 0)
                                return r;
                        flags = JSON_TOKENER_VALIDATE_UTF8;
                }
        }
        return parse_with(text, size, origin, flags, ret, err);
}

/* ---- comparing and copying ---- */

int settings_check_depth(json_object *o, unsigned depth)
{
        json_type t = json_object_get_type(o);
        if (t != json_type_object && t != json_type_array)
                return 0;
        if (depth > SETTINGS_JSON_MAX_DEPTH)
                return -ELOOP;
        if (t == json_type_array) {
                size_t n = json_object_array_length(o);
                for (size_t i = 0; i < n; i++) {
                        int r = settings_check_depth(json_object_array_get_idx(o, i), depth + 1);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        json_object_object_foreach(o, key, value) {
                (void) key;
                int r = settings_check_depth(value, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool is_number(json_object *o)
{
        json_type t = json_object_get_type(o);
        return t == json_type_int || t == json_type_double;
}

/* Structural equality; json-c holds JSON null as NULL. Numbers compare by value, as they
 * do for pi, which cannot tell 1 from 1.0. */
static bool values_equal(json_object *a, json_object *b)
{
        json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
        if (ta != tb) {
                if (is_number(a) && is_number(b))
                        return json_object_get_double(a) == json_object_get_double(b);
                return false;
        }
        switch (ta) {
        case json_type_null:
                return true;
        case json_type_boolean:
                return json_object_get_boolean(a) == json_object_get_boolean(b);
        case json_type_int:
        case json_type_double:
                return json_object_equal(a, b);
        case json_type_string: {
                int la = json_object_get_string_len(a), lb = json_object_get_string_len(b);
                return la == lb && memcmp(json_object_get_string(a), json_object_get_string(b),
                                          (size_t) la) == 0;
        }
        case json_type_array: {
                size_t n = json_object_array_length(a);
                if (n != json_object_array_length(b))
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (!values_equal(json_object_array_get_idx(a, i),
                                          json_object_array_get_idx(b, i)))
                                return false;
                return true;
        }
        case json_type_object: {
                if (json_object_object_length(a) != json_object_object_length(b))
                        return false;
                json_object_object_foreach(a, key, va) {
                        json_object *vb;
                        if (!json_object_object_get_ex(b, key, &vb) || !values_equal(va, vb))
                                return false;
                }
                return true;
        }
        }
        return false;
}

/* A value that may be absent: json-c's NULL already means JSON null. */
typedef struct slot {
        bool present;
        json_object *value;
} slot;

static slot slot_get(json_object *object, const char *key)
{
        slot s = { .present = false, .value = NULL };
        if (object)
                s.present = json_object_object_get_ex(object, key, &s.value);
        return s;
}

static bool slots_equal(slot a, slot b)
{
        if (a.present != b.present)
                return false;
        return !a.present || values_equal(a.value, b.value);
}

int settings_copy_value(json_object *value, json_object **ret)
{
        *ret = NULL;
        if (!value) /* null */
                return 0;
        return json_object_deep_copy(value, ret, NULL) < 0 ? -ENOMEM : 0;
}

int settings_put(json_object *object, const char *key, json_object *value)
{
        if (json_object_object_add(object, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int settings_put_copy(json_object *object, const char *key, json_object *value)
{
        json_object *copy;
        return settings_copy_value(value, &copy) < 0 ? -ENOMEM : settings_put(object, key, copy);
}

/* ---- the settings merge ---- */

/* base == NULL: no record of what aisb wrote, the host wins. host and sandbox: objects. */
static int merge_objects(json_object *base, json_object *host, json_object *sandbox,
                         json_object **ret);

static int merge_key(json_object *result, const char *key, json_object *base, json_object *host,
                     json_object *sandbox)
{
        slot b = slot_get(base, key), h = slot_get(host, key), s = slot_get(sandbox, key);

        if (h.present && s.present && json_object_is_type(h.value, json_type_object) &&
            json_object_is_type(s.value, json_type_object)) {
                _cleanup_json_ json_object *empty = NULL;
                json_object *nested_base = NULL;
                if (base) {
                        /* Everything the sandbox holds under a key that was not an object
                         * in base is its own: compare against an empty object. */
                        if (b.present && json_object_is_type(b.value, json_type_object))
                                nested_base = b.value;
                        else if (!(nested_base = empty = json_object_new_object()))
                                return -ENOMEM;
                }
                json_object *merged = NULL;
                int r = merge_objects(nested_base, h.value, s.value, &merged);
                return r < 0 ? r : json_add(result, key, merged);
        }

        slot pick;
        if (!base)
                pick = h.present ? h : s;
        else
                pick = slots_equal(s, b) ? h : s;
        return pick.present ? settings_put_copy(result, key, pick.value) : 0;
}

static int merge_objects(json_object *base, json_object *host, json_object *sandbox,
                         json_object **ret)
{
        _cleanup_json_ json_object *result = json_object_new_object();
        if (!result)
                return -ENOMEM;
        /* The sandbox's order first: the file pi rewrites changes as little as possible. */
        json_object_object_foreach(sandbox, skey, svalue) {
                (void) svalue;
                int r = merge_key(result, skey, base, host, sandbox);
                if (r < 0)
                        return r;
        }
        json_object_object_foreach(host, hkey, hvalue) {
                (void) hvalue;
                if (json_object_object_get_ex(sandbox, hkey, NULL))
                        continue;
                int r = merge_key(result, hkey, base, host, sandbox);
                if (r < 0)
                        return r;
        }
        *ret = steal_pointer(&result);
        return 0;
}

int settings_merge(json_object *base, json_object *host, json_object *sandbox, json_object **ret, aisb_error **err)
{
        if (host && !json_object_is_type(host, json_type_object))
                return aisb_error_set(err, -EINVAL,
                                      "the host's settings.json is %s, not a JSON object; fix ~/.pi/agent/settings.json",
                                      json_type_to_name(json_object_get_type(host)));
        /* base is aisb's own record and the sandbox's file is the sandbox's business: when
         * either is not an object it is treated as missing, never as a reason to refuse. */
        if (base && !json_object_is_type(base, json_type_object))
                base = NULL;
        if (sandbox && !json_object_is_type(sandbox, json_type_object))
                sandbox = NULL;
        if (settings_check_depth(base, 1) < 0 || settings_check_depth(host, 1) < 0 || settings_check_depth(sandbox, 1) < 0)
                return aisb_error_set(err, -ELOOP,
                                      "settings.json is nested deeper than %d levels",
                                      SETTINGS_JSON_MAX_DEPTH);

        _cleanup_json_ json_object *no_host = NULL;
        if (!host && !(host = no_host = json_object_new_object()))
                return error_oom(err);

        json_object *result = NULL;
        int r;
        if (!sandbox)
                /* No sandbox file is a reset, not a deletion of every key. */
                r = json_object_deep_copy(host, &result, NULL) < 0 ? -ENOMEM : 0;
        else
                r = merge_objects(base, host, sandbox, &result);
        if (r < 0)
                return aisb_error_set(err, r, "merging settings.json: %s", strerror(-r));
        *ret = result;
        return 0;
}
