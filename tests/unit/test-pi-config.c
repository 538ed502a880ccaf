/* SPDX-License-Identifier: MIT */
/* The pi bridge's pure parts: JSON parsing limits, the settings.json three-way merge, the
 * thinking policy, the models.json rewrite and the check of the variables it needs. */
#include <check.h>
#include <stdlib.h>

#include "pi-config.h"
#include "unit.h"

/* Parse test input; NULL text means "no file". */
static json_object *J(const char *text)
{
        if (!text)
                return NULL;
        json_object *o = NULL;
        aisb_error *err = NULL;
        int r = settings_parse_json(text, strlen(text), "test", &o, &err);
        ck_assert_msg(r == 0, "test JSON does not parse: %s: %s", text, aisb_error_message(err));
        return o;
}

static char *dump(json_object *o)
{
        return strdup(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "(none)");
}

static void assert_json_eq(json_object *got, json_object *want, const char *what)
{
        _cleanup_free_ char *g = dump(got), *w = dump(want);
        ck_assert_msg(json_object_equal(got, want), "%s: got %s, want %s", what, g, w);
}

static void assert_error(aisb_error *err, int r, int code, const char *needle)
{
        ck_assert_int_eq(r, code);
        ck_assert_ptr_nonnull(err);
        ck_assert_int_eq(aisb_error_code(err), code);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'",
                      aisb_error_message(err), needle);
}

/* What podman and the shell accept as a variable name (the rule of policy.c's --env). */
static bool variable_name(const char *s)
{
        if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
                return false;
        return strspn(s, "_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
                       strlen(s) &&
               strlen(s) <= 255;
}

/* ---- parsing ---- */

typedef struct parse_case {
        const char *name;
        const char *text;
        size_t size; /* 0: strlen(text) */
        int code;
        const char *needle; /* in the error, or in the serialised result */
} parse_case;

static const parse_case parse_cases[] = {
        { "object", "{\"a\": [1, 2, {\"b\": null}]}", 0, 0, "{\"a\":[1,2,{\"b\":null}]}" },
        { "surrounding whitespace", " \n\t{}\r\n ", 0, 0, "{}" },
        { "bare number", "42", 0, 0, "42" },
        { "bare string", "\"x\"", 0, 0, "\"x\"" },
        { "duplicate keys: the last wins, as with JSON.parse", "{\"a\": 1, \"a\": 2}", 0, 0,
          "{\"a\":2}" },
        { "unicode escapes and UTF-8", "{\"\\u00e9\": \"ключ\"}", 0, 0, "ключ" },
        { "empty", "", 0, -EBADMSG, "test: not valid JSON (line 1, column 1): empty file" },
        { "whitespace only", "  \n ", 0, -EBADMSG, "unexpected end of data" },
        { "truncated", "{\"a\": [1, 2", 0, -EBADMSG, "unexpected end of data" },
        { "trailing comma, with its line", "{\n  \"a\": 1,\n}", 0, -EBADMSG, "(line 3, column 1)" },
        { "comment", "{} // no", 0, -EBADMSG, "not valid JSON (line 1, column 4)" },
        { "second value", "{}\n{}", 0, -EBADMSG, "(line 2, column 1)" },
        /* json-c's strict mode still takes single quotes (JSON.parse does not); what the
         * bridge writes back is standard JSON either way. */
        { "single quotes: json-c accepts, output is standard", "{'a': 1}", 0, 0, "{\"a\":1}" },
        { "invalid UTF-8", "{\"a\": \"\xff\xfe\"}", 0, -EBADMSG, "(line 1, column 8): invalid UTF-8" },
        { "UTF-16 surrogate encoded in UTF-8", "{\"a\": \"\xed\xa0\x80\"}", 0, -EBADMSG, "invalid UTF-8" },
        { "past U+10FFFF", "{\"a\": \"\xf4\x90\x80\x80\"}", 0, -EBADMSG, "invalid UTF-8" },
        { "four-byte UTF-8 is fine", "{\"a\": \"\xf0\x9f\x99\x82\"}", 0, 0, "\xf0\x9f\x99\x82" },
        { "overlong UTF-8", "{\"a\": \"\xc0\xaf\"}", 0, -EBADMSG, "not valid JSON" },
        { "truncated UTF-8", "{\"a\": \"\xc3\"}", 0, -EBADMSG, "not valid JSON" },
        { "invalid UTF-8 in a key", "{\"\xc3\x28\": 1}", 0, -EBADMSG, "not valid JSON" },
        { "NUL byte", "{\"a\": 1}\0{}", 9, -EBADMSG, "(line 1, column 9): NUL byte" },
        { "escaped NUL in a key", "{\"model\": 1, \"model\\u0000z\": 2}", 0, -EBADMSG,
          "(line 1, column 20): a key with an escaped NUL (\\u0000)" },
        { "escaped NUL in a single-quoted key", "{'m\\u0000' : 1}", 0, -EBADMSG, "a key with an escaped NUL" },
        { "escaped NUL in a value", "{\"a\": \"x\\u0000y\", \"b\\\"\": 1}", 0, 0, "\"b\\\"\"" },
        { "NaN", "{\"a\": NaN}", 0, -EBADMSG, "test: not valid JSON: NaN or Infinity" },
        { "Infinity, nested", "{\"a\": [1, {\"b\": -Infinity}]}", 0, -EBADMSG, "NaN or Infinity" },
};

START_TEST(test_parse_table)
{
        for (size_t i = 0; i < ELEMENTSOF(parse_cases); i++) {
                const parse_case *c = &parse_cases[i];
                json_object *o = NULL;
                aisb_error *err = NULL;
                int r = settings_parse_json(c->text, c->size ? c->size : strlen(c->text), "test",
                                            &o, &err);
                if (c->code == 0) {
                        ck_assert_msg(r == 0, "%s: %s", c->name, aisb_error_message(err));
                        ck_assert_ptr_null(err);
                        _cleanup_free_ char *s = dump(o);
                        ck_assert_msg(strstr(s, c->needle), "%s: %s lacks %s", c->name, s,
                                      c->needle);
                        json_object_put(o);
                } else {
                        ck_assert_msg(r == c->code, "%s: returned %d", c->name, r);
                        ck_assert_ptr_null(o);
                        ck_assert_msg(strstr(aisb_error_message(err), c->needle),
                                      "%s: '%s' lacks '%s'", c->name, aisb_error_message(err),
                                      c->needle);
                        aisb_error_free(err);
                }
        }
}
END_TEST

static char *nested(size_t depth, char open, char close)
{
        char *s = malloc(2 * depth + 1);
        ck_assert_ptr_nonnull(s);
        memset(s, open, depth);
        memset(s + depth, close, depth);
        s[2 * depth] = 0;
        return s;
}

START_TEST(test_parse_depth)
{
        /* 10^4 levels: refused with a clear error by the tokener's own limit, no recursion. */
        const char pairs[][2] = { { '[', ']' } };
        for (size_t i = 0; i < ELEMENTSOF(pairs); i++) {
                _cleanup_free_ char *deep = nested(10000, pairs[i][0], pairs[i][1]);
                json_object *o = NULL;
                aisb_error *err = NULL;
                int r = settings_parse_json(deep, strlen(deep), "~/.pi/agent/settings.json", &o,
                                            &err);
                assert_error(err, r, -EBADMSG, "~/.pi/agent/settings.json: not valid JSON");
                ck_assert(strstr(aisb_error_message(err), "nested deeper than 64 levels"));
                ck_assert_ptr_null(o);
                aisb_error_free(err);
        }

        /* Objects too: {"a":{"a":...}} */
        buffer b = {};
        for (int i = 0; i < 10000; i++)
                ck_assert_int_eq(buffer_printf(&b, "{\"a\":"), 0);
        ck_assert_int_eq(buffer_printf(&b, "1"), 0);
        for (int i = 0; i < 10000; i++)
                ck_assert_int_eq(buffer_printf(&b, "}"), 0);
        json_object *o = NULL;
        aisb_error *err = NULL;
        int r = settings_parse_json(b.data, b.size, "deep", &o, &err);
        assert_error(err, r, -EBADMSG, "nested deeper than 64 levels");
        aisb_error_free(err);
        buffer_free(&b);

        /* The limit itself: 64 levels parse, 65 do not. */
        _cleanup_free_ char *ok = nested(SETTINGS_JSON_MAX_DEPTH, '[', ']');
        ck_assert_int_eq(settings_parse_json(ok, strlen(ok), "x", &o, NULL), 0);
        json_object_put(o);
        _cleanup_free_ char *over = nested(SETTINGS_JSON_MAX_DEPTH + 1, '[', ']');
        ck_assert_int_eq(settings_parse_json(over, strlen(over), "x", &o, NULL), -EBADMSG);
}
END_TEST

START_TEST(test_parse_size)
{
        size_t size = SETTINGS_JSON_MAX + 1;
        char *big = malloc(size);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', size);
        big[0] = '{';
        big[size - 1] = '}';
        json_object *o = NULL;
        aisb_error *err = NULL;
        int r = settings_parse_json(big, size, "models.json", &o, &err);
        assert_error(err, r, -EFBIG, "models.json: 4194305 bytes, more than the 4 MiB");
        aisb_error_free(err);
        /* Exactly the limit is fine. */
        big[size - 2] = '}';
        ck_assert_int_eq(settings_parse_json(big, size - 1, "models.json", &o, NULL), 0);
        json_object_put(o);
        free(big);
}
END_TEST

/* ---- settings merge ---- */

typedef struct merge_case {
        const char *name;
        const char *base, *host, *sandbox; /* NULL: no such file */
        const char *want;                  /* NULL: an error */
} merge_case;

static const merge_case merge_cases[] = {
        /* The rules. */
        { "untouched key follows the host", "{\"a\":1}", "{\"a\":2}", "{\"a\":1}", "{\"a\":2}" },
        { "sandbox edit stays against a host change", "{\"a\":1}", "{\"a\":2}", "{\"a\":3}",
          "{\"a\":3}" },
        { "sandbox edit stays, host unchanged", "{\"a\":1}", "{\"a\":1}", "{\"a\":3}", "{\"a\":3}" },
        { "untouched key the host dropped is dropped", "{\"a\":1,\"b\":2}", "{\"b\":2}",
          "{\"a\":1,\"b\":2}", "{\"b\":2}" },
        { "edited key the host dropped stays", "{\"a\":1}", "{}", "{\"a\":5}", "{\"a\":5}" },
        { "key invented in the sandbox survives", "{\"a\":1}", "{\"a\":1}",
          "{\"a\":1,\"lastChangelogVersion\":\"0.57.1\"}",
          "{\"a\":1,\"lastChangelogVersion\":\"0.57.1\"}" },
        { "key the host added arrives", "{\"a\":1}", "{\"a\":1,\"n\":7}", "{\"a\":1}",
          "{\"a\":1,\"n\":7}" },
        { "host and sandbox added the same key: the sandbox's", "{}", "{\"n\":1}", "{\"n\":2}",
          "{\"n\":2}" },
        { "key deleted in the sandbox stays deleted", "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":2}",
          "{\"a\":1}", "{\"a\":1}" },
        { "deleted in the sandbox, changed on the host: stays deleted", "{\"b\":2}", "{\"b\":3}",
          "{}", "{}" },
        { "pi's migration queueMode -> steeringMode in the sandbox", "{\"queueMode\":\"all\"}",
          "{\"queueMode\":\"all\"}", "{\"steeringMode\":\"all\"}", "{\"steeringMode\":\"all\"}" },
        { "no base: host wins, sandbox-only keys survive", NULL, "{\"a\":2,\"b\":3}",
          "{\"a\":1,\"c\":4}", "{\"a\":2,\"b\":3,\"c\":4}" },
        { "no base: repairs a frozen whole-file copy", NULL,
          "{\"defaultModel\":\"new\",\"theme\":\"dark\"}",
          "{\"defaultModel\":\"old\",\"theme\":\"light\",\"lastChangelogVersion\":\"1\"}",
          "{\"defaultModel\":\"new\",\"theme\":\"dark\",\"lastChangelogVersion\":\"1\"}" },
        { "no base, nested: host keys win, sandbox-only nested keys survive", NULL,
          "{\"o\":{\"x\":1}}", "{\"o\":{\"x\":2,\"y\":3}}", "{\"o\":{\"x\":1,\"y\":3}}" },
        { "no base, host has a scalar where the sandbox has an object", NULL, "{\"o\":1}",
          "{\"o\":{\"x\":2}}", "{\"o\":1}" },
        { "base not an object counts as none", "[1]", "{\"a\":2}", "{\"a\":1,\"c\":4}",
          "{\"a\":2,\"c\":4}" },

        /* Missing files. */
        { "no sandbox file: a reset to the host's", "{\"a\":1}", "{\"a\":2,\"b\":1}", NULL,
          "{\"a\":2,\"b\":1}" },
        { "sandbox file not an object: a reset", "{\"a\":1}", "{\"a\":2}", "\"garbage\"",
          "{\"a\":2}" },
        { "no host file: untouched keys go, edits stay", "{\"a\":1,\"b\":2}", NULL,
          "{\"a\":1,\"b\":5,\"c\":6}", "{\"b\":5,\"c\":6}" },
        { "no base, no host: the sandbox's", NULL, NULL, "{\"a\":1}", "{\"a\":1}" },
        { "no base, no sandbox: the host's", NULL, "{\"a\":1}", NULL, "{\"a\":1}" },
        { "no host, no sandbox", "{\"a\":1}", NULL, NULL, "{}" },
        { "nothing at all", NULL, NULL, NULL, "{}" },
        { "host not an object is refused", "{}", "[]", "{}", NULL },

        /* Nesting. */
        { "three levels deep, per key",
          "{\"l1\":{\"l2\":{\"l3\":{\"k\":1,\"m\":1,\"gone\":1}},\"s\":1}}",
          "{\"l1\":{\"l2\":{\"l3\":{\"k\":2,\"m\":1,\"new\":1}},\"s\":2}}",
          "{\"l1\":{\"l2\":{\"l3\":{\"k\":1,\"m\":9,\"gone\":1,\"own\":1}},\"s\":1}}",
          "{\"l1\":{\"l2\":{\"l3\":{\"k\":2,\"m\":9,\"own\":1,\"new\":1}},\"s\":2}}" },
        { "nested: only the edited inner key is kept",
          "{\"thinkingBudgets\":{\"low\":1,\"high\":2}}",
          "{\"thinkingBudgets\":{\"low\":10,\"high\":20}}",
          "{\"thinkingBudgets\":{\"low\":1,\"high\":99}}",
          "{\"thinkingBudgets\":{\"low\":10,\"high\":99}}" },
        { "nested object absent from base: the sandbox's keys are its own", "{}",
          "{\"o\":{\"a\":1,\"b\":1}}", "{\"o\":{\"a\":2}}", "{\"o\":{\"a\":2,\"b\":1}}" },
        { "nested object where base had a string", "{\"o\":\"s\"}", "{\"o\":{\"h\":1}}",
          "{\"o\":{\"s\":2}}", "{\"o\":{\"s\":2,\"h\":1}}" },
        { "host dropped an object the sandbox left alone", "{\"o\":{\"x\":1},\"k\":1}",
          "{\"k\":1}", "{\"o\":{\"x\":1},\"k\":1}", "{\"k\":1}" },
        { "host dropped an object the sandbox edited: kept whole", "{\"o\":{\"x\":1,\"y\":1}}",
          "{}", "{\"o\":{\"x\":2,\"y\":1}}", "{\"o\":{\"x\":2,\"y\":1}}" },
        { "sandbox deleted a nested key", "{\"o\":{\"x\":1,\"y\":1}}", "{\"o\":{\"x\":1,\"y\":2}}",
          "{\"o\":{\"x\":1}}", "{\"o\":{\"x\":1}}" },
        { "empty objects", "{\"o\":{}}", "{\"o\":{}}", "{\"o\":{}}", "{\"o\":{}}" },

        /* Arrays are atomic. */
        { "array untouched follows the host", "{\"p\":[1,2]}", "{\"p\":[1,2,3]}",
          "{\"p\":[1,2]}", "{\"p\":[1,2,3]}" },
        { "array edited is kept whole, no element merge", "{\"p\":[1,2]}", "{\"p\":[1,2,3]}",
          "{\"p\":[2,1]}", "{\"p\":[2,1]}" },
        { "array of objects is atomic", "{\"p\":[{\"a\":1}]}", "{\"p\":[{\"a\":2}]}",
          "{\"p\":[{\"a\":1,\"b\":1}]}", "{\"p\":[{\"a\":1,\"b\":1}]}" },
        { "array emptied in the sandbox", "{\"p\":[1]}", "{\"p\":[1,2]}", "{\"p\":[]}",
          "{\"p\":[]}" },

        /* Type changes are edits. */
        { "sandbox: object -> string", "{\"o\":{\"x\":1}}", "{\"o\":{\"x\":2}}",
          "{\"o\":\"flat\"}", "{\"o\":\"flat\"}" },
        { "host: object -> string, sandbox untouched", "{\"o\":{\"x\":1}}", "{\"o\":\"flat\"}",
          "{\"o\":{\"x\":1}}", "{\"o\":\"flat\"}" },
        { "host: object -> string, sandbox edited inside: the sandbox's", "{\"o\":{\"x\":1}}",
          "{\"o\":\"flat\"}", "{\"o\":{\"x\":2}}", "{\"o\":{\"x\":2}}" },
        { "sandbox: string -> object", "{\"o\":\"s\"}", "{\"o\":\"t\"}", "{\"o\":{\"x\":1}}",
          "{\"o\":{\"x\":1}}" },
        { "sandbox: number -> string", "{\"n\":1}", "{\"n\":2}", "{\"n\":\"1\"}", "{\"n\":\"1\"}" },
        { "sandbox: array -> object", "{\"n\":[1]}", "{\"n\":[2]}", "{\"n\":{\"0\":1}}",
          "{\"n\":{\"0\":1}}" },
        { "1 and 1.0 are the same number (JSON.stringify writes 1)", "{\"n\":1.0}",
          "{\"n\":2}", "{\"n\":1}", "{\"n\":2}" },
        { "1.5 and 1.25 differ", "{\"n\":1.5}", "{\"n\":2}", "{\"n\":1.25}", "{\"n\":1.25}" },
        { "large integers compare exactly", "{\"n\":9007199254740993}", "{\"n\":1}",
          "{\"n\":9007199254740993}", "{\"n\":1}" },
        { "booleans", "{\"b\":true}", "{\"b\":false}", "{\"b\":true}", "{\"b\":false}" },
        { "string prefix is not equality", "{\"s\":\"ab\"}", "{\"s\":\"h\"}", "{\"s\":\"abc\"}",
          "{\"s\":\"abc\"}" },

        /* null is a value, not an absence. */
        { "null untouched follows the host", "{\"z\":null}", "{\"z\":5}", "{\"z\":null}",
          "{\"z\":5}" },
        { "sandbox set a key to null: an edit", "{\"z\":1}", "{\"z\":1}", "{\"z\":null}",
          "{\"z\":null}" },
        { "host sets null", "{\"z\":1}", "{\"z\":null}", "{\"z\":1}", "{\"z\":null}" },
        { "null deleted in the sandbox stays deleted", "{\"z\":null}", "{\"z\":null}", "{}",
          "{}" },
        { "null invented in the sandbox survives", "{}", "{\"y\":1}", "{\"z\":null}",
          "{\"z\":null,\"y\":1}" },
        { "null where an object was", "{\"o\":{\"a\":1}}", "{\"o\":{\"a\":2}}", "{\"o\":null}",
          "{\"o\":null}" },

        /* Odd key names. */
        { "empty, dotted, unicode, spaced, escaped keys",
          "{\"\":1,\"a.b\":1,\"ключ\":1,\"a b\":1,\"q\\\"\\\\\":1,\"🙂\":1}",
          "{\"\":2,\"a.b\":2,\"ключ\":1,\"a b\":2,\"q\\\"\\\\\":2,\"🙂\":2}",
          "{\"\":1,\"a.b\":3,\"ключ\":4,\"a b\":1,\"q\\\"\\\\\":1}",
          "{\"\":2,\"a.b\":3,\"ключ\":4,\"a b\":2,\"q\\\"\\\\\":2}" },
        { "a dotted key is not a path", "{\"a\":{\"b\":1},\"a.b\":1}",
          "{\"a\":{\"b\":2},\"a.b\":1}", "{\"a\":{\"b\":1},\"a.b\":3}",
          "{\"a\":{\"b\":2},\"a.b\":3}" },
};

static void check_merge_case(const merge_case *c)
{
        json_object *base = J(c->base), *host = J(c->host), *sandbox = J(c->sandbox);
        _cleanup_free_ char *b0 = dump(base), *h0 = dump(host), *s0 = dump(sandbox);
        json_object *got = NULL;
        aisb_error *err = NULL;
        int r = settings_merge(base, host, sandbox, &got, &err);
        if (!c->want) {
                ck_assert_msg(r == -EINVAL, "%s: returned %d", c->name, r);
                ck_assert_ptr_null(got);
                ck_assert(strstr(aisb_error_message(err), "not a JSON object"));
                aisb_error_free(err);
        } else {
                ck_assert_msg(r == 0, "%s: %s", c->name, aisb_error_message(err));
                json_object *want = J(c->want);
                assert_json_eq(got, want, c->name);
                json_object_put(want);
                /* The result shares nothing: scribbling on it leaves the inputs alone. */
                json_object_object_foreach(got, key, value) {
                        (void) key;
                        if (json_object_is_type(value, json_type_object))
                                json_object_object_add(value, "scribble", json_object_new_int(1));
                        if (json_object_is_type(value, json_type_array))
                                json_object_array_add(value, json_object_new_int(1));
                }
                json_object_object_add(got, "scribble", NULL);
                json_object_put(got);
        }
        _cleanup_free_ char *b1 = dump(base), *h1 = dump(host), *s1 = dump(sandbox);
        ck_assert_msg(streq(b0, b1) && streq(h0, h1) && streq(s0, s1), "%s: an input changed",
                      c->name);
        json_object_put(base);
        json_object_put(host);
        json_object_put(sandbox);
}

START_TEST(test_merge_table)
{
        check_merge_case(&merge_cases[_i]);
}
END_TEST

START_TEST(test_merge_idempotent)
{
        /* Merging the result again with itself as base changes nothing: a run that touches
         * nothing leaves the next run's view identical. */
        for (size_t i = 0; i < ELEMENTSOF(merge_cases); i++) {
                const merge_case *c = &merge_cases[i];
                if (!c->want)
                        continue;
                json_object *base = J(c->base), *host = J(c->host), *sandbox = J(c->sandbox);
                json_object *once = NULL, *twice = NULL;
                ck_assert_int_eq(settings_merge(base, host, sandbox, &once, NULL), 0);
                ck_assert_int_eq(settings_merge(once, host, once, &twice, NULL), 0);
                /* With an untouched sandbox, the host's file comes out. */
                json_object *want = host ? json_object_get(host) : json_object_new_object();
                assert_json_eq(twice, want, c->name);
                json_object_put(want);
                json_object_put(once);
                json_object_put(twice);
                json_object_put(base);
                json_object_put(host);
                json_object_put(sandbox);
        }
}
END_TEST

START_TEST(test_merge_many_keys)
{
        enum { N = 10000 };
        json_object *base = json_object_new_object(), *host = json_object_new_object(),
                    *sandbox = json_object_new_object();
        for (int i = 0; i < N; i++) {
                char key[32];
                snprintf(key, sizeof key, "k%d", i);
                json_object_object_add(base, key, json_object_new_int(i));
                if (i % 5 != 4) /* the host dropped every fifth */
                        json_object_object_add(host, key,
                                               json_object_new_int(i % 2 ? i : i + 1));
                if (i % 7 != 6) /* the sandbox deleted every seventh, edited every third */
                        json_object_object_add(sandbox, key,
                                               json_object_new_int(i % 3 ? i : -i));
        }
        _cleanup_free_ char *h0 = dump(host);
        json_object *got = NULL;
        ck_assert_int_eq(settings_merge(base, host, sandbox, &got, NULL), 0);
        for (int i = 0; i < N; i++) {
                char key[32];
                snprintf(key, sizeof key, "k%d", i);
                json_object *v;
                bool present = json_object_object_get_ex(got, key, &v);
                bool deleted = i % 7 == 6, edited = !deleted && i % 3 == 0 && i != 0;
                if (deleted)
                        ck_assert_msg(!present, "%s deleted in the sandbox came back", key);
                else if (edited)
                        ck_assert_int_eq(json_object_get_int(v), -i);
                else if (i % 5 == 4)
                        ck_assert_msg(!present, "%s dropped by the host survived", key);
                else
                        ck_assert_int_eq(json_object_get_int(v), i % 2 ? i : i + 1);
        }
        _cleanup_free_ char *h1 = dump(host);
        ck_assert_str_eq(h0, h1);
        json_object_put(got);
        json_object_put(base);
        json_object_put(host);
        json_object_put(sandbox);
}
END_TEST

START_TEST(test_merge_big_array)
{
        enum { N = 100000 };
        json_object *arrays[3];
        for (int a = 0; a < 3; a++) {
                arrays[a] = json_object_new_array_ext(N);
                for (int i = 0; i < N; i++)
                        json_object_array_add(arrays[a], json_object_new_int(i));
        }
        json_object_array_put_idx(arrays[1], N - 1, json_object_new_int(-1)); /* host */
        json_object *base = json_object_new_object(), *host = json_object_new_object(),
                    *sandbox = json_object_new_object();
        json_object_object_add(base, "a", arrays[0]);
        json_object_object_add(host, "a", arrays[1]);
        json_object_object_add(sandbox, "a", arrays[2]);

        json_object *got = NULL, *a;
        ck_assert_int_eq(settings_merge(base, host, sandbox, &got, NULL), 0);
        ck_assert(json_object_object_get_ex(got, "a", &a));
        ck_assert_uint_eq(json_object_array_length(a), N);
        ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(a, N - 1)), -1);
        json_object_put(got);

        /* One element edited in the sandbox: the whole sandbox array. */
        json_object_array_put_idx(arrays[2], 0, json_object_new_int(-7));
        ck_assert_int_eq(settings_merge(base, host, sandbox, &got, NULL), 0);
        ck_assert(json_object_object_get_ex(got, "a", &a));
        ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(a, 0)), -7);
        ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(a, N - 1)), N - 1);
        json_object_put(got);

        /* Through the parser and back: 10^5 elements are well under the size limit. */
        const char *text = json_object_to_json_string_ext(host, JSON_C_TO_STRING_PLAIN);
        json_object *parsed = NULL;
        ck_assert_int_eq(settings_parse_json(text, strlen(text), "big", &parsed, NULL), 0);
        ck_assert(json_object_equal(parsed, host));
        json_object_put(parsed);

        json_object_put(base);
        json_object_put(host);
        json_object_put(sandbox);
}
END_TEST

START_TEST(test_merge_too_deep)
{
        /* Built in memory, so the parser's limit never saw it: the merge has its own. */
        json_object *deep = json_object_new_object(), *inner = deep;
        for (int i = 0; i < 200; i++) {
                json_object *next = json_object_new_object();
                json_object_object_add(inner, "a", next);
                inner = next;
        }
        json_object *flat = J("{\"a\":1}"), *got = NULL;
        json_object *order[][3] = { { deep, flat, flat }, { flat, deep, flat }, { flat, flat, deep } };
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                aisb_error *err = NULL;
                int r = settings_merge(order[i][0], order[i][1], order[i][2], &got, &err);
                assert_error(err, r, -ELOOP, "nested deeper than 64 levels");
                ck_assert_ptr_null(got);
                aisb_error_free(err);
        }
        json_object_put(deep);
        json_object_put(flat);
}
END_TEST

/* ---- thinking ---- */

/* pi_apply_thinking(in, level) is want (NULL: in as it was), or refuses with code and needle. */
static void expect_thinking(const char *in, const char *level, const char *want, int code, const char *needle)
{
        json_object *s = J(in), *w = J(want ? want : in);
        aisb_error *err = NULL;
        int r = pi_apply_thinking(s, level, &err);
        if (code)
                assert_error(err, r, code, needle);
        else
                ck_assert_int_eq(r, 0);
        assert_json_eq(s, w, level ? level : "(none)");
        aisb_error_free(err);
        json_object_put(s);
        json_object_put(w);
}

START_TEST(test_thinking)
{
        static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh" };
        ck_assert_str_eq(pi_thinking_levels(), "off, minimal, low, medium, high, xhigh, host");
        for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
                ck_assert(pi_thinking_level_valid(levels[i]));
                char want[128];
                snprintf(want, sizeof want, "{\"defaultThinkingLevel\":\"%s\",\"theme\":\"dark\"}", levels[i]);
                expect_thinking("{\"defaultThinkingLevel\":\"low\",\"theme\":\"dark\"}", levels[i], want, 0, NULL);
                snprintf(want, sizeof want, "{\"defaultThinkingLevel\":\"%s\"}", levels[i]);
                expect_thinking("{}", levels[i], want, 0, NULL);
        }

        /* enabledModels' ":LEVEL" would give the first model its own level: it goes, the
         * models stay (an attack review planted "loc/m1:minimal"). */
        expect_thinking("{\"enabledModels\":[\"loc/m1:minimal\",\"a/b\",\"c/d:off\",\"e/f:notalevel\",3]}", "high",
                        "{\"enabledModels\":[\"loc/m1\",\"a/b\",\"c/d\",\"e/f:notalevel\",3],"
                        "\"defaultThinkingLevel\":\"high\"}",
                        0, NULL);

        /* "host": whatever the merge produced, including nothing. */
        static const char *const untouched[] = { "{\"defaultThinkingLevel\":\"minimal\"}", "{}",
                                                 "{\"defaultThinkingLevel\":\"whatever\"}" };
        ck_assert(pi_thinking_level_valid("host"));
        for (size_t i = 0; i < ELEMENTSOF(untouched); i++)
                expect_thinking(untouched[i], "host", NULL, 0, NULL);

        /* A refused level leaves the settings alone. */
        static const char *const bad[] = { "max", "", "HIGH", "High", "none", "high ", "hostx", NULL };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ck_assert(!pi_thinking_level_valid(bad[i]));
                expect_thinking("{\"defaultThinkingLevel\":\"low\"}", bad[i], NULL, -EINVAL,
                                "is not one of: off, minimal, low, medium, high, xhigh, host");
        }
        expect_thinking("[]", "high", NULL, -EINVAL, "not a JSON object");
}
END_TEST

START_TEST(test_merge_then_thinking)
{
        /* The forced level is recorded in base; next run the sandbox has not touched it, so
         * the host's level comes back before the policy applies again. */
        json_object *host = J("{\"defaultThinkingLevel\":\"low\"}"), *sandbox = NULL, *merged;
        ck_assert_int_eq(settings_merge(NULL, host, sandbox, &merged, NULL), 0);
        ck_assert_int_eq(pi_apply_thinking(merged, "high", NULL), 0);
        json_object *base = merged; /* what aisb wrote */
        sandbox = json_object_get(base);
        json_object *next;
        ck_assert_int_eq(settings_merge(base, host, sandbox, &next, NULL), 0);
        json_object *want = J("{\"defaultThinkingLevel\":\"low\"}");
        assert_json_eq(next, want, "untouched forced level follows the host");
        ck_assert_int_eq(pi_apply_thinking(next, "host", NULL), 0);
        assert_json_eq(next, want, "host policy");
        json_object_put(want);
        json_object_put(next);
        json_object_put(sandbox);
        json_object_put(base);
        json_object_put(host);
}
END_TEST

/* ---- models.json ---- */

typedef struct want_key {
        const char *provider, *variable;
        pi_key_source source;
        const char *command;
        pi_key_field field; /* default: the apiKey */
        const char *model, *header;
} want_key;

#define HEADER(p, h, v, s, c) { (p), (v), (s), (c), PIBRIDGE_FIELD_HEADER, NULL, (h) }
#define MODEL_HEADER(p, m, h, v, s, c) { (p), (v), (s), (c), PIBRIDGE_FIELD_MODEL_HEADER, (m), (h) }
#define OVERRIDE_HEADER(p, m, h, v, s, c) \
        { (p), (v), (s), (c), PIBRIDGE_FIELD_OVERRIDE_HEADER, (m), (h) }

typedef struct models_case {
        const char *name;
        const char *models;
        const char *want;             /* rewritten; NULL: an error */
        const char *needle;           /* in the error */
        const char *const secrets[6]; /* must not appear in the output */
        want_key keys[8];
        size_t n_keys;
} models_case;

static const models_case models_cases[] = {
        { "literal key rewritten",
          "{\"providers\":{\"openai-proxy\":{\"baseUrl\":\"https://p/v1\",\"api\":\"openai-completions\",\"apiKey\":\"sk-proj-SECRET1\",\"models\":[{\"id\":\"m\"}]}}}",
          "{\"providers\":{\"openai-proxy\":{\"baseUrl\":\"https://p/v1\",\"api\":\"openai-completions\",\"apiKey\":\"AISB_PI_KEY_OPENAI_PROXY\",\"models\":[{\"id\":\"m\"}]}}}",
          NULL, { "sk-proj-SECRET1", "SECRET1" },
          { { "openai-proxy", "AISB_PI_KEY_OPENAI_PROXY", PIBRIDGE_KEY_LITERAL, NULL } }, 1 },
        { "reference left alone",
          "{\"providers\":{\"anthropic\":{\"apiKey\":\"ANTHROPIC_API_KEY\"},\"x\":{\"apiKey\":\"_MY_KEY2\"}}}",
          "{\"providers\":{\"anthropic\":{\"apiKey\":\"ANTHROPIC_API_KEY\"},\"x\":{\"apiKey\":\"_MY_KEY2\"}}}",
          NULL, { NULL },
          { { "anthropic", "ANTHROPIC_API_KEY", PIBRIDGE_KEY_REFERENCE, NULL },
            { "x", "_MY_KEY2", PIBRIDGE_KEY_REFERENCE, NULL } }, 2 },
        { "providers without apiKey: everything copied but header values",
          "{\"providers\":{\"anthropic\":{\"baseUrl\":\"https://proxy\"},\"o\":{\"models\":[{\"id\":\"a\",\"cost\":{\"input\":1.5}}],\"headers\":{\"x\":\"y\"}}}}",
          "{\"providers\":{\"anthropic\":{\"baseUrl\":\"https://proxy\"},\"o\":{\"models\":[{\"id\":\"a\",\"cost\":{\"input\":1.5}}],\"headers\":{\"x\":\"AISB_PI_HEADER_O_X\"}}}}",
          NULL, { "\"y\"" }, { HEADER("o", "x", "AISB_PI_HEADER_O_X", PIBRIDGE_KEY_LITERAL, NULL) }, 1 },
        { "provider headers: literals and commands rewritten, references kept, empty copied",
          "{\"providers\":{\"portkey\":{\"baseUrl\":\"https://api.portkey.ai/v1\",\"apiKey\":\"PORTKEY_KEY\","
          "\"headers\":{\"x-portkey-api-key\":\"pk-SECRET7\",\"X-Title\":\"pi\",\"x-portkey-virtual-key\":\"PORTKEY_VIRTUAL_KEY\","
          "\"x-secret\":\"!op read 'op://v/h'\",\"x-empty\":\"\",\"x-shared\":\"PORTKEY_KEY\"}}}}",
          "{\"providers\":{\"portkey\":{\"baseUrl\":\"https://api.portkey.ai/v1\",\"apiKey\":\"PORTKEY_KEY\","
          "\"headers\":{\"x-portkey-api-key\":\"AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY\",\"X-Title\":\"AISB_PI_HEADER_PORTKEY_X_TITLE\","
          "\"x-portkey-virtual-key\":\"PORTKEY_VIRTUAL_KEY\",\"x-secret\":\"AISB_PI_HEADER_PORTKEY_X_SECRET\",\"x-empty\":\"\",\"x-shared\":\"PORTKEY_KEY\"}}}}",
          NULL, { "pk-SECRET7", "SECRET7", "\"pi\"", "op read" },
          { { "portkey", "PORTKEY_KEY", PIBRIDGE_KEY_REFERENCE, NULL },
            HEADER("portkey", "x-portkey-api-key", "AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY", PIBRIDGE_KEY_LITERAL, NULL),
            HEADER("portkey", "X-Title", "AISB_PI_HEADER_PORTKEY_X_TITLE", PIBRIDGE_KEY_LITERAL, NULL),
            HEADER("portkey", "x-portkey-virtual-key", "PORTKEY_VIRTUAL_KEY", PIBRIDGE_KEY_REFERENCE, NULL),
            HEADER("portkey", "x-secret", "AISB_PI_HEADER_PORTKEY_X_SECRET", PIBRIDGE_KEY_COMMAND, "op read 'op://v/h'"),
            HEADER("portkey", "x-shared", "PORTKEY_KEY", PIBRIDGE_KEY_REFERENCE, NULL) }, 6 },
        { "model headers rewritten with the model's id, wherever the id stands",
          "{\"providers\":{\"corp\":{\"apiKey\":\"CORP_KEY\",\"models\":[{\"id\":\"gpt-4o\",\"headers\":{\"x-secret\":\"s3cr3t-M1\",\"x-ref\":\"MODEL_REF\"}},"
          "{\"headers\":{\"X-Key\":\"!pass k\"},\"id\":\"m2\"},{\"id\":\"plain\"},\"odd\",{\"id\":\"empty\",\"headers\":{}}],\"headers\":{\"x-secret\":\"s3cr3t-P1\"}}}}",
          "{\"providers\":{\"corp\":{\"apiKey\":\"CORP_KEY\",\"models\":[{\"id\":\"gpt-4o\",\"headers\":{\"x-secret\":\"AISB_PI_HEADER_CORP_GPT_4O_X_SECRET\",\"x-ref\":\"MODEL_REF\"}},"
          "{\"headers\":{\"X-Key\":\"AISB_PI_HEADER_CORP_M2_X_KEY\"},\"id\":\"m2\"},{\"id\":\"plain\"},\"odd\",{\"id\":\"empty\",\"headers\":{}}],\"headers\":{\"x-secret\":\"AISB_PI_HEADER_CORP_X_SECRET\"}}}}",
          NULL, { "s3cr3t", "pass k" },
          { { "corp", "CORP_KEY", PIBRIDGE_KEY_REFERENCE, NULL },
            MODEL_HEADER("corp", "gpt-4o", "x-secret", "AISB_PI_HEADER_CORP_GPT_4O_X_SECRET", PIBRIDGE_KEY_LITERAL, NULL),
            MODEL_HEADER("corp", "gpt-4o", "x-ref", "MODEL_REF", PIBRIDGE_KEY_REFERENCE, NULL),
            MODEL_HEADER("corp", "m2", "X-Key", "AISB_PI_HEADER_CORP_M2_X_KEY", PIBRIDGE_KEY_COMMAND, "pass k"),
            HEADER("corp", "x-secret", "AISB_PI_HEADER_CORP_X_SECRET", PIBRIDGE_KEY_LITERAL, NULL) }, 5 },
        { "modelOverrides headers rewritten with the model's id",
          "{\"providers\":{\"openrouter\":{\"modelOverrides\":{\"anthropic/claude-3.5\":{\"name\":\"C\",\"headers\":{\"HTTP-Referer\":\"https://me.example\",\"x-k\":\"or-SECRET8\"}},"
          "\"o\":\"odd\",\"p\":{\"headers\":{\"x-k\":\"OR_KEY\"}}}}}}",
          "{\"providers\":{\"openrouter\":{\"modelOverrides\":{\"anthropic/claude-3.5\":{\"name\":\"C\",\"headers\":{\"HTTP-Referer\":\"AISB_PI_HEADER_OPENROUTER_ANTHROPIC_CLAUDE_3_5_HTTP_REFERER\","
          "\"x-k\":\"AISB_PI_HEADER_OPENROUTER_ANTHROPIC_CLAUDE_3_5_X_K\"}},\"o\":\"odd\",\"p\":{\"headers\":{\"x-k\":\"OR_KEY\"}}}}}}",
          NULL, { "me.example", "SECRET8" },
          { OVERRIDE_HEADER("openrouter", "anthropic/claude-3.5", "HTTP-Referer", "AISB_PI_HEADER_OPENROUTER_ANTHROPIC_CLAUDE_3_5_HTTP_REFERER", PIBRIDGE_KEY_LITERAL, NULL),
            OVERRIDE_HEADER("openrouter", "anthropic/claude-3.5", "x-k", "AISB_PI_HEADER_OPENROUTER_ANTHROPIC_CLAUDE_3_5_X_K", PIBRIDGE_KEY_LITERAL, NULL),
            OVERRIDE_HEADER("openrouter", "p", "x-k", "OR_KEY", PIBRIDGE_KEY_REFERENCE, NULL) }, 3 },
        { "header values that look like names, or hold a NUL, are literals",
          "{\"providers\":{\"h\":{\"headers\":{\"a\":\"ABCDEF0123\",\"b\":\"my_key\",\"c\":\"AB_C\\u0000hd-S9\"}}}}",
          "{\"providers\":{\"h\":{\"headers\":{\"a\":\"AISB_PI_HEADER_H_A\",\"b\":\"AISB_PI_HEADER_H_B\",\"c\":\"AISB_PI_HEADER_H_C\"}}}}",
          NULL, { "ABCDEF0123", "my_key", "hd-S9", "AB_C" },
          { HEADER("h", "a", "AISB_PI_HEADER_H_A", PIBRIDGE_KEY_LITERAL, NULL),
            HEADER("h", "b", "AISB_PI_HEADER_H_B", PIBRIDGE_KEY_LITERAL, NULL),
            HEADER("h", "c", "AISB_PI_HEADER_H_C", PIBRIDGE_KEY_LITERAL, NULL) }, 3 },
        { "headers where pi does not read them are copied",
          "{\"headers\":{\"x\":\"top\"},\"providers\":{\"p\":{\"models\":{\"headers\":{\"x\":\"v\"}},\"modelOverrides\":[{\"headers\":{\"x\":\"v\"}}],\"compat\":{\"headers\":{\"x\":\"v\"}}}}}",
          "{\"headers\":{\"x\":\"top\"},\"providers\":{\"p\":{\"models\":{\"headers\":{\"x\":\"v\"}},\"modelOverrides\":[{\"headers\":{\"x\":\"v\"}}],\"compat\":{\"headers\":{\"x\":\"v\"}}}}}",
          NULL, { NULL }, { { 0 } }, 0 },
        { "the ollama placeholder is a literal too",
          "{\"providers\":{\"ollama\":{\"apiKey\":\"ollama\",\"baseUrl\":\"http://localhost:11434/v1\"}}}",
          "{\"providers\":{\"ollama\":{\"apiKey\":\"AISB_PI_KEY_OLLAMA\",\"baseUrl\":\"http://localhost:11434/v1\"}}}",
          NULL, { "\"apiKey\":\"ollama\"" },
          { { "ollama", "AISB_PI_KEY_OLLAMA", PIBRIDGE_KEY_LITERAL, NULL } }, 1 },
        { "keys that look like names but are not references",
          "{\"providers\":{\"a\":{\"apiKey\":\"ABCDEF0123456789\"},\"b\":{\"apiKey\":\"my_api_key\"},\"c\":{\"apiKey\":\"SK_live-XYZ\"},\"d\":{\"apiKey\":\"___\"},\"e\":{\"apiKey\":\"1_ABC\"}}}",
          "{\"providers\":{\"a\":{\"apiKey\":\"AISB_PI_KEY_A\"},\"b\":{\"apiKey\":\"AISB_PI_KEY_B\"},\"c\":{\"apiKey\":\"AISB_PI_KEY_C\"},\"d\":{\"apiKey\":\"AISB_PI_KEY_D\"},\"e\":{\"apiKey\":\"AISB_PI_KEY_E\"}}}",
          NULL, { "ABCDEF0123456789", "my_api_key", "SK_live-XYZ", "1_ABC" },
          { { "a", "AISB_PI_KEY_A", PIBRIDGE_KEY_LITERAL, NULL },
            { "b", "AISB_PI_KEY_B", PIBRIDGE_KEY_LITERAL, NULL },
            { "c", "AISB_PI_KEY_C", PIBRIDGE_KEY_LITERAL, NULL },
            { "d", "AISB_PI_KEY_D", PIBRIDGE_KEY_LITERAL, NULL },
            { "e", "AISB_PI_KEY_E", PIBRIDGE_KEY_LITERAL, NULL } }, 5 },
        { "command replaced, never run",
          "{\"providers\":{\"vault\":{\"apiKey\":\"!op read 'op://v/i/cred'\"}}}",
          "{\"providers\":{\"vault\":{\"apiKey\":\"AISB_PI_KEY_VAULT\"}}}", NULL,
          { "op read" }, { { "vault", "AISB_PI_KEY_VAULT", PIBRIDGE_KEY_COMMAND, "op read 'op://v/i/cred'" } }, 1 },
        { "odd provider names",
          "{\"providers\":{\"Groq.Fast v2\":{\"apiKey\":\"gsk_S3\"},\"ключ\":{\"apiKey\":\"k-S4\"},\"\":{\"apiKey\":\"e-S5\"}}}",
          "{\"providers\":{\"Groq.Fast v2\":{\"apiKey\":\"AISB_PI_KEY_GROQ_FAST_V2\"},\"ключ\":{\"apiKey\":\"AISB_PI_KEY_________\"},\"\":{\"apiKey\":\"AISB_PI_KEY_\"}}}",
          NULL, { "gsk_S3", "k-S4", "e-S5" },
          { { "Groq.Fast v2", "AISB_PI_KEY_GROQ_FAST_V2", PIBRIDGE_KEY_LITERAL, NULL },
            { "ключ", "AISB_PI_KEY_________", PIBRIDGE_KEY_LITERAL, NULL },
            { "", "AISB_PI_KEY_", PIBRIDGE_KEY_LITERAL, NULL } }, 3 },
        { "a key with an escaped NUL is a literal",
          "{\"providers\":{\"n\":{\"apiKey\":\"AB_C\\u0000sk-S6\"}}}",
          "{\"providers\":{\"n\":{\"apiKey\":\"AISB_PI_KEY_N\"}}}", NULL, { "sk-S6", "AB_C" },
          { { "n", "AISB_PI_KEY_N", PIBRIDGE_KEY_LITERAL, NULL } }, 1 },
        { "two providers may share a reference",
          "{\"providers\":{\"a\":{\"apiKey\":\"OPENAI_API_KEY\"},\"b\":{\"apiKey\":\"OPENAI_API_KEY\"}}}",
          "{\"providers\":{\"a\":{\"apiKey\":\"OPENAI_API_KEY\"},\"b\":{\"apiKey\":\"OPENAI_API_KEY\"}}}",
          NULL, { NULL },
          { { "a", "OPENAI_API_KEY", PIBRIDGE_KEY_REFERENCE, NULL },
            { "b", "OPENAI_API_KEY", PIBRIDGE_KEY_REFERENCE, NULL } }, 2 },
        { "everything else copied, empty apiKey left for pi to refuse",
          "{\"x\":[1,{\"apiKey\":\"not-a-provider\"}],\"providers\":{\"p\":\"odd\",\"q\":{\"apiKey\":\"\"}}}",
          "{\"x\":[1,{\"apiKey\":\"not-a-provider\"}],\"providers\":{\"p\":\"odd\",\"q\":{\"apiKey\":\"\"}}}",
          NULL, { NULL }, { { 0 } }, 0 },
        { "no providers", "{}", "{}", NULL, { NULL }, { { 0 } }, 0 },
        { "providers not an object", "{\"providers\":[]}", "{\"providers\":[]}", NULL, { NULL }, { { 0 } }, 0 },

#define REFUSED(n, m, e) { .name = (n), .models = (m), .want = NULL, .needle = (e) }
        REFUSED("number apiKey refused", "{\"providers\":{\"p\":{\"apiKey\":12345}}}",
                "models.json: the apiKey of provider 'p' is int; pi needs a string"),
        REFUSED("null apiKey refused", "{\"providers\":{\"p\":{\"apiKey\":null}}}",
                "apiKey of provider 'p' is null"),
        REFUSED("object apiKey refused", "{\"providers\":{\"p\":{\"apiKey\":{\"v\":\"sk\"}}}}",
                "apiKey of provider 'p' is object"),
        REFUSED("array apiKey refused", "{\"providers\":{\"p\":{\"apiKey\":[\"sk\"]}}}",
                "apiKey of provider 'p' is array"),
        REFUSED("boolean apiKey refused", "{\"providers\":{\"p\":{\"apiKey\":true}}}",
                "apiKey of provider 'p' is boolean"),
        REFUSED("derived names collide",
                "{\"providers\":{\"my-proxy\":{\"apiKey\":\"sk-1\"},\"my_proxy\":{\"apiKey\":\"sk-2\"}}}",
                "models.json: the apiKey of provider 'my-proxy' and the apiKey of provider 'my_proxy' would both be read from AISB_PI_KEY_MY_PROXY; rename one"),
        REFUSED("derived name collides with a reference",
                "{\"providers\":{\"y\":{\"apiKey\":\"AISB_PI_KEY_X\"},\"x\":{\"apiKey\":\"sk-1\"}}}",
                "the apiKey of provider 'y' and the apiKey of provider 'x' would both be read from AISB_PI_KEY_X"),
        REFUSED("number header refused", "{\"providers\":{\"p\":{\"headers\":{\"x-a\":\"A_B\",\"x-n\":42}}}}",
                "models.json: header 'x-n' of provider 'p' is int; pi needs a string"),
        REFUSED("null model header refused",
                "{\"providers\":{\"p\":{\"models\":[{\"id\":\"m\",\"headers\":{\"x\":null}}]}}}",
                "header 'x' of model 'm' of provider 'p' is null; pi needs a string"),
        REFUSED("object override header refused",
                "{\"providers\":{\"p\":{\"modelOverrides\":{\"m\":{\"headers\":{\"x\":{\"v\":\"pk\"}}}}}}}",
                "header 'x' of modelOverrides 'm' of provider 'p' is object"),
        REFUSED("headers as a string refused (it may be the secret)",
                "{\"providers\":{\"p\":{\"headers\":\"x-api-key: pk-1\"}}}",
                "models.json: the headers of provider 'p' are string; pi needs an object of strings"),
        REFUSED("model headers as an array refused",
                "{\"providers\":{\"p\":{\"models\":[{\"id\":\"m\",\"headers\":[\"pk-1\"]}]}}}",
                "the headers of model 'm' of provider 'p' are array"),
        REFUSED("override headers null refused",
                "{\"providers\":{\"p\":{\"modelOverrides\":{\"m\":{\"headers\":null}}}}}",
                "the headers of modelOverrides 'm' of provider 'p' are null"),
        REFUSED("a model with headers needs an id",
                "{\"providers\":{\"p\":{\"models\":[{\"id\":\"a\"},{\"headers\":{\"x\":\"pk-1\"}}]}}}",
                "models.json: model 2 of provider 'p' has headers and its id is null; pi needs a string id"),
        REFUSED("a model with headers needs a string id",
                "{\"providers\":{\"p\":{\"models\":[{\"id\":7,\"headers\":{\"x\":\"pk-1\"}}]}}}",
                "model 1 of provider 'p' has headers and its id is int"),
        REFUSED("header names that differ in case collide",
                "{\"providers\":{\"p\":{\"headers\":{\"X-Key\":\"pk-1\",\"x-key\":\"pk-2\"}}}}",
                "models.json: header 'X-Key' of provider 'p' and header 'x-key' of provider 'p' would both be read from AISB_PI_HEADER_P_X_KEY"),
        REFUSED("a provider header and a model header collide",
                "{\"providers\":{\"p\":{\"headers\":{\"m-x\":\"pk-1\"},\"models\":[{\"id\":\"m\",\"headers\":{\"x\":\"pk-2\"}}]}}}",
                "header 'm-x' of provider 'p' and header 'x' of model 'm' of provider 'p' would both be read from AISB_PI_HEADER_P_M_X"),
        REFUSED("a model and an override of one id collide",
                "{\"providers\":{\"p\":{\"models\":[{\"id\":\"m\",\"headers\":{\"x\":\"pk-1\"}}],\"modelOverrides\":{\"m\":{\"headers\":{\"x\":\"pk-2\"}}}}}}",
                "header 'x' of model 'm' of provider 'p' and header 'x' of modelOverrides 'm' of provider 'p' would both"),
        REFUSED("a derived header name another provider uses as its apiKey",
                "{\"providers\":{\"a\":{\"apiKey\":\"AISB_PI_HEADER_B_X\"},\"b\":{\"headers\":{\"x\":\"pk-1\"}}}}",
                "the apiKey of provider 'a' and header 'x' of provider 'b' would both be read from AISB_PI_HEADER_B_X"),
        REFUSED("a header that names a variable aisb derives for another",
                "{\"providers\":{\"b\":{\"headers\":{\"x\":\"pk-1\"}},\"a\":{\"headers\":{\"y\":\"AISB_PI_HEADER_B_X\"}}}}",
                "header 'x' of provider 'b' and header 'y' of provider 'a' would both be read from AISB_PI_HEADER_B_X"),
        REFUSED("not an object", "[]", "models.json is array, not a JSON object"),
#undef REFUSED
};

static void assert_str_or_null(const char *got, const char *want)
{
        if (want)
                ck_assert_str_eq(got, want);
        else
                ck_assert_ptr_null(got);
}

/* Overwrite every string inside o, at any depth. */
static void scribble(json_object *o)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++) {
                        json_object *v = json_object_array_get_idx(o, i);
                        if (json_object_is_type(v, json_type_string))
                                json_object_set_string(v, "scribble");
                        else
                                scribble(v);
                }
        } else if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, key, v) {
                        (void) key;
                        if (json_object_is_type(v, json_type_string))
                                json_object_set_string(v, "scribble");
                        else
                                scribble(v);
                }
        }
}

static void check_models_case(const models_case *c)
{
        json_object *in = J(c->models);
        _cleanup_free_ char *before = dump(in);
        json_object *out = NULL;
        pi_key *keys = NULL;
        size_t n = 99;
        aisb_error *err = NULL;
        int r = pi_rewrite_models(in, &out, &keys, &n, &err);
        if (!c->want) {
                assert_error(err, r, -EINVAL, c->needle);
                ck_assert_ptr_null(out);
                ck_assert_ptr_null(keys);
                ck_assert_uint_eq(n, 99);
                aisb_error_free(err);
        } else {
                ck_assert_msg(r == 0, "%s: %s", c->name, aisb_error_message(err));
                json_object *want = J(c->want);
                assert_json_eq(out, want, c->name);
                json_object_put(want);
                _cleanup_free_ char *text = dump(out);
                for (size_t i = 0; i < ELEMENTSOF(c->secrets) && c->secrets[i]; i++)
                        ck_assert_msg(!strstr(text, c->secrets[i]), "%s: %s leaked into %s",
                                      c->name, c->secrets[i], text);
                ck_assert_msg(n == c->n_keys, "%s: %zu keys, want %zu", c->name, n, c->n_keys);
                for (size_t i = 0; i < n; i++) {
                        ck_assert_str_eq(keys[i].provider, c->keys[i].provider);
                        ck_assert_str_eq(keys[i].variable, c->keys[i].variable);
                        ck_assert_int_eq(keys[i].source, c->keys[i].source);
                        if (c->keys[i].command)
                                ck_assert_str_eq(keys[i].command, c->keys[i].command);
                        else
                                ck_assert_ptr_null(keys[i].command);
                        ck_assert_int_eq(keys[i].field, c->keys[i].field);
                        assert_str_or_null(keys[i].model, c->keys[i].model);
                        assert_str_or_null(keys[i].header, c->keys[i].header);
                        ck_assert(variable_name(keys[i].variable));
                }
                /* The result shares nothing with the input. */
                scribble(out);
                pi_keys_free(keys, n);
                json_object_put(out);
        }
        _cleanup_free_ char *after = dump(in);
        ck_assert_msg(streq(before, after), "%s: input changed", c->name);
        json_object_put(in);
}

START_TEST(test_models_table)
{
        check_models_case(&models_cases[_i]);
}
END_TEST

START_TEST(test_models_many_secrets)
{
        /* Many providers, each with a distinct secret: none may survive anywhere. */
        enum { N = 500 };
        json_object *models = json_object_new_object(), *providers = json_object_new_object();
        json_object_object_add(models, "providers", providers);
        for (int i = 0; i < N; i++) {
                char name[32], secret[64];
                snprintf(name, sizeof name, "p%d", i);
                snprintf(secret, sizeof secret, "sk-%08x-secret-%d", (unsigned) i * 2654435761u, i);
                json_object *p = json_object_new_object();
                json_object_object_add(p, "baseUrl", json_object_new_string("https://x/v1"));
                json_object_object_add(p, "apiKey", json_object_new_string(i % 10 ? secret : "!pass show key"));
                json_object_object_add(p, "authHeader", json_object_new_boolean(1));
                /* The same secret under a header at each level pi reads one. */
                json_object *headers = json_object_new_object();
                json_object_object_add(headers, "x-api-key", json_object_new_string(secret));
                json_object_object_add(p, "headers", json_object_get(headers));
                json_object *model = json_object_new_object(), *list = json_object_new_array();
                json_object_object_add(model, "id", json_object_new_string("m"));
                json_object_object_add(model, "headers", json_object_get(headers));
                json_object_array_add(list, model);
                json_object_object_add(p, "models", list);
                json_object *override = json_object_new_object(), *overrides = json_object_new_object();
                json_object_object_add(override, "headers", headers);
                json_object_object_add(overrides, "o", override);
                json_object_object_add(p, "modelOverrides", overrides);
                json_object_object_add(providers, name, p);
        }
        json_object *out = NULL;
        pi_key *keys = NULL;
        size_t n = 0;
        ck_assert_int_eq(pi_rewrite_models(models, &out, &keys, &n, NULL), 0);
        ck_assert_uint_eq(n, 4 * N);
        const char *text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY);
        ck_assert(!strstr(text, "secret"));
        ck_assert(!strstr(text, "sk-"));
        ck_assert(!strstr(text, "pass show"));
        ck_assert_str_eq(keys[1].variable, "AISB_PI_HEADER_P0_X_API_KEY");
        ck_assert_str_eq(keys[2].variable, "AISB_PI_HEADER_P0_M_X_API_KEY");
        ck_assert_str_eq(keys[3].variable, "AISB_PI_HEADER_P0_O_X_API_KEY");
        for (size_t i = 0; i < n; i++)
                ck_assert(strstr(text, keys[i].variable));
        pi_keys_free(keys, n);
        json_object_put(out);
        json_object_put(models);
}
END_TEST

START_TEST(test_models_limits)
{
        /* A provider name too long to fit a variable name. */
        char name[300];
        memset(name, 'a', sizeof name - 1);
        name[sizeof name - 1] = 0;
        json_object *models = json_object_new_object(), *providers = json_object_new_object(),
                    *p = json_object_new_object();
        json_object_object_add(p, "apiKey", json_object_new_string("sk-x"));
        json_object_object_add(providers, name, p);
        json_object_object_add(models, "providers", providers);
        json_object *out = NULL;
        pi_key *keys = NULL;
        size_t n = 0;
        aisb_error *err = NULL;
        int r = pi_rewrite_models(models, &out, &keys, &n, &err);
        assert_error(err, r, -EINVAL, "too long to name a variable after");
        aisb_error_free(err);
        json_object_put(models);

        /* A header's variable takes the provider's, the model's and the header's names: each
         * fits alone, together they do not. Shown cut, not whole. */
        char model[100], header[250];
        memset(model, 'm', sizeof model - 1);
        model[sizeof model - 1] = 0;
        memset(header, 'h', sizeof header - 1);
        header[sizeof header - 1] = 0;
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *text = NULL;
                ck_assert_int_ge(i == 0 ? asprintf(&text, "{\"providers\":{\"p\":{\"models\":[{\"id\":\"%s\",\"headers\":{\"%s\":\"pk-1\"}}]}}}", model, header)
                                        : asprintf(&text, "{\"providers\":{\"p\":{\"modelOverrides\":{\"%s\":{\"headers\":{\"%s\":\"!pk\"}}}}}}", model, header),
                                 0);
                models = J(text);
                err = NULL;
                r = pi_rewrite_models(models, &out, &keys, &n, &err);
                assert_error(err, r, -EINVAL, "too long to name a variable after");
                ck_assert_msg(strstr(aisb_error_message(err), "hhhh...' of mode"), "%s", aisb_error_message(err));
                ck_assert_msg(!strstr(aisb_error_message(err), header), "%s", aisb_error_message(err));
                ck_assert_msg(!strstr(aisb_error_message(err), "pk"), "%s", aisb_error_message(err));
                aisb_error_free(err);
                json_object_put(models);
        }
        /* Just short enough: 255 bytes. */
        header[255 - strlen("AISB_PI_HEADER_P_")] = 0;
        models = J("{\"providers\":{\"p\":{}}}");
        json_object *p_obj = json_object_object_get(json_object_object_get(models, "providers"), "p"),
                    *headers = json_object_new_object();
        json_object_object_add(headers, header, json_object_new_string("pk-1"));
        json_object_object_add(p_obj, "headers", headers);
        ck_assert_int_eq(pi_rewrite_models(models, &out, &keys, &n, NULL), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(strlen(keys[0].variable), 255);
        ck_assert(variable_name(keys[0].variable));
        pi_keys_free(keys, n);
        json_object_put(out);
        json_object_put(models);

        /* Nested too deep (built in memory). */
        models = json_object_new_object();
        json_object *inner = models;
        for (int i = 0; i < 100; i++) {
                json_object *next = json_object_new_object();
                json_object_object_add(inner, "providers", next);
                inner = next;
        }
        err = NULL;
        r = pi_rewrite_models(models, &out, &keys, &n, &err);
        assert_error(err, r, -ELOOP, "nested deeper");
        aisb_error_free(err);
        json_object_put(models);
        pi_keys_free(NULL, 0);
}
END_TEST

START_TEST(test_keys_check)
{
        const pi_key keys[] = {
                { .provider = (char *) "openai", .variable = (char *) "AISB_PI_KEY_OPENAI",
                  .source = PIBRIDGE_KEY_LITERAL },
                { .provider = (char *) "anthropic", .variable = (char *) "ANTHROPIC_API_KEY",
                  .source = PIBRIDGE_KEY_REFERENCE },
                { .provider = (char *) "vault", .variable = (char *) "AISB_PI_KEY_VAULT",
                  .source = PIBRIDGE_KEY_COMMAND, .command = (char *) "op read x" },
                { .provider = (char *) "other", .variable = (char *) "ANTHROPIC_API_KEY",
                  .source = PIBRIDGE_KEY_REFERENCE },
                { .provider = (char *) "portkey", .field = PIBRIDGE_FIELD_HEADER,
                  .header = (char *) "x-portkey-api-key",
                  .variable = (char *) "AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY",
                  .source = PIBRIDGE_KEY_LITERAL },
                { .provider = (char *) "corp", .field = PIBRIDGE_FIELD_MODEL_HEADER,
                  .model = (char *) "big", .header = (char *) "x-secret",
                  .variable = (char *) "AISB_PI_HEADER_CORP_BIG_X_SECRET",
                  .source = PIBRIDGE_KEY_COMMAND, .command = (char *) "pass corp" },
                { .provider = (char *) "openrouter", .field = PIBRIDGE_FIELD_OVERRIDE_HEADER,
                  .model = (char *) "a/b", .header = (char *) "x-k",
                  .variable = (char *) "OPENROUTER_HEADER", .source = PIBRIDGE_KEY_REFERENCE },
        };
        env_entry all[] = {
                { .name = (char *) "TERM", .value = (char *) "xterm" },
                { .name = (char *) "AISB_PI_KEY_OPENAI", .value = (char *) "sk-1" },
                { .name = (char *) "ANTHROPIC_API_KEY", .value = (char *) "sk-2" },
                { .name = (char *) "AISB_PI_KEY_VAULT", .value = (char *) "sk-3" },
                { .name = (char *) "AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY", .value = (char *) "pk-4" },
                { .name = (char *) "AISB_PI_HEADER_CORP_BIG_X_SECRET", .value = (char *) "s-5" },
                { .name = (char *) "OPENROUTER_HEADER", .value = (char *) "h-6" },
        };
        ck_assert_int_eq(pi_keys_check(keys, ELEMENTSOF(keys), all, ELEMENTSOF(all), NULL), 0);
        ck_assert_int_eq(pi_keys_check(NULL, 0, NULL, 0, NULL), 0);

        aisb_error *err = NULL;
        int r = pi_keys_check(keys, ELEMENTSOF(keys), NULL, 0, &err);
        assert_error(err, r, -ENOKEY,
                     "pi's models.json needs variables this run does not set (or sets empty); add: --env AISB_PI_KEY_OPENAI=<key> (the apiKey of provider 'openai' is a literal, which aisb does not copy into the sandbox); ");
        const char *m = aisb_error_message(err);
        ck_assert_msg(strstr(m, "; --env ANTHROPIC_API_KEY (the apiKey of provider 'anthropic' is read from it); "), "%s", m);
        ck_assert_msg(strstr(m, "; --env AISB_PI_KEY_VAULT=\"$(op read x)\" (the apiKey of provider 'vault' comes from a command, which does not run in the sandbox); "), "%s", m);
        ck_assert_msg(strstr(m, "; --env AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY=<value> (header 'x-portkey-api-key' of provider 'portkey' is a literal, which aisb does not copy into the sandbox); "), "%s", m);
        ck_assert_msg(strstr(m, "; --env AISB_PI_HEADER_CORP_BIG_X_SECRET=\"$(pass corp)\" (header 'x-secret' of model 'big' of provider 'corp' comes from a command"), "%s", m);
        ck_assert_msg(strstr(m, "; --env OPENROUTER_HEADER (header 'x-k' of modelOverrides 'a/b' of provider 'openrouter' is read from it) "
                                "(or --secret NAME@PROVIDER-HOST instead of --env NAME: the gate then holds the key, the sandbox never does). "
                                "Or write a variable's name in place of a literal"), "%s", m);
        ck_assert_msg(!strstr(m, "'other'"), "a variable is named once");
        ck_assert(!strchr(m, '\n'));
        aisb_error_free(err);

        /* Each variable is needed on its own: a run that passes the keys but not the
         * headers is refused for the headers alone. */
        err = NULL;
        r = pi_keys_check(keys, ELEMENTSOF(keys), all, 4, &err);
        assert_error(err, r, -ENOKEY, "add: --env AISB_PI_HEADER_PORTKEY_X_PORTKEY_API_KEY=<value> (header");
        m = aisb_error_message(err);
        ck_assert_msg(!strstr(m, "AISB_PI_KEY_"), "%s", m);
        ck_assert_msg(strstr(m, "AISB_PI_HEADER_CORP_BIG_X_SECRET") && strstr(m, "OPENROUTER_HEADER"), "%s", m);
        aisb_error_free(err);
        err = NULL;
        r = pi_keys_check(keys, ELEMENTSOF(keys), all, ELEMENTSOF(all) - 1, &err);
        assert_error(err, r, -ENOKEY, "add: --env OPENROUTER_HEADER (header 'x-k'");
        ck_assert_msg(!strstr(aisb_error_message(err), "Or write"), "no literal is missing: %s",
                      aisb_error_message(err));
        aisb_error_free(err);

        /* Set but empty is refused like unset. */
        all[2].value = (char *) "";
        err = NULL;
        r = pi_keys_check(keys, ELEMENTSOF(keys), all, ELEMENTSOF(all), &err);
        assert_error(err, r, -ENOKEY, "--env ANTHROPIC_API_KEY (the apiKey of provider");
        ck_assert(!strstr(aisb_error_message(err), "AISB_PI_KEY_OPENAI"));
        aisb_error_free(err);
        all[2].value = NULL;
        err = NULL;
        r = pi_keys_check(keys, ELEMENTSOF(keys), all, ELEMENTSOF(all), &err);
        assert_error(err, r, -ENOKEY, "ANTHROPIC_API_KEY");
        aisb_error_free(err);
}
END_TEST

START_TEST(test_models_end_to_end)
{
        /* Host file -> rewrite -> check: the refusal names exactly what to add. */
        const char *text = "{\"providers\":{\"corp\":{\"baseUrl\":\"https://llm.corp/v1\","
                           "\"api\":\"openai-completions\",\"apiKey\":\"sk-corp-77\","
                           "\"headers\":{\"x-gateway-key\":\"gw-corp-88\"},"
                           "\"models\":[{\"id\":\"big\",\"reasoning\":true}]}}}";
        json_object *models = NULL, *out = NULL;
        ck_assert_int_eq(settings_parse_json(text, strlen(text), "models.json", &models, NULL), 0);
        pi_key *keys = NULL;
        size_t n = 0;
        ck_assert_int_eq(pi_rewrite_models(models, &out, &keys, &n, NULL), 0);
        aisb_error *err = NULL;
        int r = pi_keys_check(keys, n, NULL, 0, &err);
        assert_error(err, r, -ENOKEY, "--env AISB_PI_KEY_CORP=<key>");
        ck_assert(strstr(aisb_error_message(err), "--env AISB_PI_HEADER_CORP_X_GATEWAY_KEY=<value>"));
        ck_assert(!strstr(aisb_error_message(err), "sk-corp-77"));
        ck_assert(!strstr(aisb_error_message(err), "gw-corp-88"));
        aisb_error_free(err);
        env_entry env[] = { { .name = (char *) "AISB_PI_KEY_CORP", .value = (char *) "sk-corp-77" },
                            { .name = (char *) "AISB_PI_HEADER_CORP_X_GATEWAY_KEY", .value = (char *) "gw-corp-88" } };
        err = NULL;
        r = pi_keys_check(keys, n, env, 1, &err);
        assert_error(err, r, -ENOKEY, "add: --env AISB_PI_HEADER_CORP_X_GATEWAY_KEY=<value> (header 'x-gateway-key' of provider 'corp' is a literal");
        aisb_error_free(err);
        ck_assert_int_eq(pi_keys_check(keys, n, env, 2, NULL), 0);
        const char *copy = json_object_to_json_string(out);
        ck_assert(!strstr(copy, "sk-corp-77") && !strstr(copy, "gw-corp-88"));
        pi_keys_free(keys, n);
        json_object_put(out);
        json_object_put(models);
}
END_TEST

static Suite *pi_suite(void)
{
        Suite *s = suite_create("pi-config");
        TCase *parse = tcase_create("parse");
        tcase_add_test(parse, test_parse_table);
        tcase_add_test(parse, test_parse_depth);
        tcase_add_test(parse, test_parse_size);
        suite_add_tcase(s, parse);
        TCase *merge = tcase_create("merge");
        tcase_add_loop_test(merge, test_merge_table, 0, (int) ELEMENTSOF(merge_cases));
        tcase_add_test(merge, test_merge_idempotent);
        tcase_add_test(merge, test_merge_many_keys);
        tcase_add_test(merge, test_merge_big_array);
        tcase_add_test(merge, test_merge_too_deep);
        suite_add_tcase(s, merge);
        TCase *thinking = tcase_create("thinking");
        tcase_add_test(thinking, test_thinking);
        tcase_add_test(thinking, test_merge_then_thinking);
        suite_add_tcase(s, thinking);
        TCase *models = tcase_create("models");
        tcase_add_loop_test(models, test_models_table, 0, (int) ELEMENTSOF(models_cases));
        tcase_add_test(models, test_models_many_secrets);
        tcase_add_test(models, test_models_limits);
        tcase_add_test(models, test_keys_check);
        tcase_add_test(models, test_models_end_to_end);
        suite_add_tcase(s, models);
        return s;
}

int main(void)
{
        return unit_run(pi_suite());
}
