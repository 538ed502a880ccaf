/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
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
        /* json-c's json_object_new_string() reads a NULL: refused before it is. */
        return json_add(o, key, value ? json_object_new_string(value) : NULL);
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
        return json_append(array, value ? json_object_new_string(value) : NULL);
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

/* The builder (jsonutil.h): a recursive reading of the items, which always reads every item
 * to its end (so that what was handed over is put), and builds only while nothing failed. */
typedef struct builder {
        va_list *ap;
        int error;  /* the first error: from then on items are read and dropped */
        bool lost;  /* the items did not nest: nothing more can be read safely */
} builder;

typedef enum container_kind {
        CONTAINER_OBJECT,
        CONTAINER_ARRAY,
        CONTAINER_DROPPED, /* none to add to: its items are read either way */
} container_kind;

static void build_fail(builder *b, int error)
{
        if (b->error == 0)
                b->error = error < 0 ? error : -EINVAL;
}

static void build_malformed(builder *b)
{
        build_fail(b, -EINVAL);
        b->lost = true;
}

/* v, or NULL with the error when it is NULL (a failed allocation, or the caller's own). */
static json_object *build_checked(builder *b, json_object *v, int error)
{
        if (!v)
                build_fail(b, error);
        return v;
}

static void build_items(builder *b, json_object *container, container_kind kind, bool keep, int end);

/* One value whose tag was read; NULL unless it is kept and everything so far went through. */
static json_object *build_value(builder *b, int tag, bool keep)
{
        keep = keep && b->error == 0;
        switch (tag) {
        case _JSON_BUILD_STRING: {
                const char *s = va_arg(*b->ap, const char *);
                return keep ? build_checked(b, s ? json_object_new_string(s) : NULL, -ENOMEM) : NULL;
        }
        case _JSON_BUILD_BOOL: {
                int v = va_arg(*b->ap, int);
                return keep ? build_checked(b, json_object_new_boolean(v), -ENOMEM) : NULL;
        }
        case _JSON_BUILD_INT64: {
                int64_t v = va_arg(*b->ap, int64_t);
                return keep ? build_checked(b, json_object_new_int64(v), -ENOMEM) : NULL;
        }
        case _JSON_BUILD_STRV: {
                const char *const *v = va_arg(*b->ap, const char *const *);
                return keep ? build_checked(b, json_string_array(v), -ENOMEM) : NULL;
        }
        case _JSON_BUILD_TAKE: {
                json_object *v = va_arg(*b->ap, json_object *);
                int error = va_arg(*b->ap, int);
                if (keep)
                        return build_checked(b, v, error);
                json_object_put(v);
                return NULL;
        }
        case _JSON_BUILD_OBJECT_BEGIN:
        case _JSON_BUILD_ARRAY_BEGIN: {
                bool object = tag == _JSON_BUILD_OBJECT_BEGIN;
                json_object *v = !keep ? NULL : object ? json_object_new_object() : json_object_new_array();
                if (keep && !v)
                        build_fail(b, -ENOMEM);
                build_items(b, v, !v ? CONTAINER_DROPPED : object ? CONTAINER_OBJECT : CONTAINER_ARRAY, keep,
                            object ? _JSON_BUILD_OBJECT_END : _JSON_BUILD_ARRAY_END);
                if (b->error < 0) {
                        json_object_put(v);
                        return NULL;
                }
                return v;
        }
        default:
                build_malformed(b);
                return NULL;
        }
}

/* One member (tag _JSON_BUILD_PAIR) or element, added to container when kept. */
static void build_item(builder *b, json_object *container, container_kind kind, int tag, bool keep)
{
        if ((tag == _JSON_BUILD_PAIR) != (kind == CONTAINER_OBJECT) && kind != CONTAINER_DROPPED) {
                build_malformed(b);
                return;
        }
        if (tag != _JSON_BUILD_PAIR) {
                json_object *v = build_value(b, tag, keep);
                if (v && json_append(container, v) < 0)
                        build_fail(b, -ENOMEM);
                return;
        }
        const char *key = va_arg(*b->ap, const char *);
        if (keep && !key)
                build_fail(b, -ENOMEM);
        json_object *v = build_value(b, va_arg(*b->ap, int), keep);
        if (v && json_add(container, key, v) < 0)
                build_fail(b, -ENOMEM);
}

static void build_items(builder *b, json_object *container, container_kind kind, bool keep, int end)
{
        while (!b->lost) {
                int tag = va_arg(*b->ap, int);
                if (tag == end)
                        return;
                bool wanted = true;
                if (tag == _JSON_BUILD_CONDITION) {
                        wanted = va_arg(*b->ap, int);
                        tag = va_arg(*b->ap, int);
                }
                if (tag == _JSON_BUILD_END || tag == _JSON_BUILD_OBJECT_END || tag == _JSON_BUILD_ARRAY_END) {
                        build_malformed(b); /* the wrong end: the items do not nest */
                        return;
                }
                build_item(b, container, kind, tag, keep && wanted);
        }
}

int json_build_items(json_object **ret, ...)
{
        va_list ap;
        va_start(ap, ret);
        builder b = { .ap = &ap };
        json_object *v = build_value(&b, va_arg(ap, int), true);
        if (!b.lost && va_arg(ap, int) != _JSON_BUILD_END)
                build_malformed(&b);
        va_end(ap);
        if (b.error < 0) {
                json_object_put(v);
                return b.error;
        }
        *ret = v;
        return 0;
}

int json_build_into_items(json_object *o, ...)
{
        va_list ap;
        va_start(ap, o);
        builder b = { .ap = &ap };
        container_kind kind = json_object_is_type(o, json_type_object) ? CONTAINER_OBJECT
                              : json_object_is_type(o, json_type_array) ? CONTAINER_ARRAY
                                                                         : CONTAINER_DROPPED;
        /* NULL: the caller's allocation of o failed; what the items hand over is put. */
        if (kind == CONTAINER_DROPPED)
                build_fail(&b, o ? -EINVAL : -ENOMEM);
        build_items(&b, o, kind, kind != CONTAINER_DROPPED, _JSON_BUILD_END);
        va_end(ap);
        return b.error;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong form, no
 * surrogate, nothing past U+10FFFF), 0 if there is none; its code point in *cp. */
static size_t utf8_sequence(const unsigned char *s, uint32_t *cp)
{
        size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
        if (n == 0 || s[0] > 0xf4)
                return 0;
        uint32_t c = s[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = c << 6 | (s[i] & 0x3f);
        }
        static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *cp = c;
        return n;
}

bool json_utf8_valid(const char *text, size_t size)
{
        const unsigned char *s = (const unsigned char *) text;
        for (size_t i = 0, n; i < size; i += n) {
                uint32_t cp = 0;
                n = s[i] == 0 ? 0 : s[i] < 0x80 ? 1 : utf8_sequence(s + i, &cp);
                if (n == 0 || i + n > size)
                        return false;
        }
        return true;
}

int json_text_safe(const char *text, char **ret)
{
        _cleanup_(buffer_free) buffer b = {};
        const unsigned char *s = (const unsigned char *) text;
        int r = 0;
        for (size_t i = 0; r >= 0 && s[i];) {
                uint32_t cp = 0;
                size_t n = s[i] < 0x80 ? 1 : utf8_sequence(s + i, &cp);
                if (n == 1 && s[i] != 0x7f)
                        r = buffer_append(&b, s + i, 1);
                else if (n == 1)
                        r = buffer_printf(&b, "\\u007f");
                else if (n == 0)
                        r = buffer_printf(&b, "\\ufffd"), n = 1;
                else if (cp < 0xa0)
                        r = buffer_printf(&b, "\\u%04x", (unsigned) cp);
                else
                        r = buffer_append(&b, s + i, n);
                i += n;
        }
        if (r < 0)
                return r;
        *ret = buffer_steal(&b); /* "" for an empty text */
        return *ret ? 0 : -ENOMEM;
}

bool json_text_is(json_object *o, const char *text)
{
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return false;
        json_object *back = json_tokener_parse_ex(tok, text, -1);
        bool same = back && json_tokener_get_error(tok) == json_tokener_success && json_object_equal(o, back);
        if (back)
                json_wipe_strings(back);
        json_object_put(back);
        /* The tokener gathers every string in its own buffer, which json_tokener_free does
         * not clear: a body's secrets would stay in freed memory. The field is public (and
         * marked for json-c's own use); nothing else reaches that buffer. */
        if (tok->pb && tok->pb->buf)
                explicit_bzero(tok->pb->buf, (size_t) tok->pb->size);
        json_tokener_free(tok);
        return same;
}

const char *json_text_checked(json_object *o, int flags)
{
        /* json-c's writer drops a piece it cannot grow its buffer for and still returns the
         * rest: a key lost that way reads as "" and its setting as podman's default. What it
         * wrote must read back as o. */
        const char *text = json_object_to_json_string_ext(o, flags);
        if (!text)
                return NULL;
        if (json_text_is(o, text))
                return text;
        /* Refused, and wiped: what was written of a body may hold its secrets. */
        explicit_bzero((char *) text, strlen(text));
        return NULL;
}
