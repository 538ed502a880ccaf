/* SPDX-License-Identifier: MIT */
/* TOML as JSON and back (lib/policy/toml-json.c, lib/policy/toml.cc): a codex config's round trip, what
 * each TOML type becomes, the bounds on the text, and what either side refuses and how it
 * says so. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "error.h"
#include "jsonutil.h"
#include "pi-config.h"
#include "toml-json.h"
#include "../suite-table.h"
#include "unit.h"

static json_object *parse_toml(const char *text)
{
        json_object *o = NULL;
        aisb_error *err = NULL;
        int r = toml_parse_json(text, strlen(text), "test.toml", &o, &err);
        ck_assert_msg(r == 0, "does not parse: %s", aisb_error_message(err));
        ck_assert_ptr_null(err);
        return o;
}

static json_object *parse_json(const char *text)
{
        json_object *o = NULL;
        aisb_error *err = NULL;
        ck_assert_msg(settings_parse_json(text, strlen(text), "test.json", &o, &err) == 0, "%s",
                      aisb_error_message(err));
        return o;
}

static char *format_toml(json_object *o)
{
        char *text = NULL;
        aisb_error *err = NULL;
        int r = toml_format_json(o, &text, &err);
        ck_assert_msg(r == 0, "does not format: %s", aisb_error_message(err));
        ck_assert_ptr_null(err);
        return text;
}

/* json_object_equal tells an int from a double, so a 1 that came back as 1.0 fails. */
static void assert_json_eq(json_object *got, json_object *want, const char *what)
{
        ck_assert_msg(json_object_equal(got, want), "%s: got %s, want %s", what,
                      json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN),
                      json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
}

static void assert_error(aisb_error *err, int r, int code, const char *needle)
{
        ck_assert_int_eq(r, code);
        ck_assert_ptr_nonnull(err);
        ck_assert_int_eq(aisb_error_code(err), code);
        const char *message = aisb_error_message(err);
        ck_assert_msg(strstr(message, needle), "'%s' lacks '%s'", message, needle);
        ck_assert_msg(!strchr(message, '\n'), "'%s' is more than one line", message);
}

static void assert_parse_fails(const char *text, size_t size, int code, const char *needle)
{
        json_object *o = NULL;
        aisb_error *err = NULL;
        int r = toml_parse_json(text, size, "cfg.toml", &o, &err);
        assert_error(err, r, code, needle);
        ck_assert_ptr_null(o);
        aisb_error_free(err);
}

static void assert_format_fails(json_object *o, int code, const char *needle)
{
        char *text = NULL;
        aisb_error *err = NULL;
        int r = toml_format_json(o, &text, &err);
        assert_error(err, r, code, needle);
        ck_assert_ptr_null(text);
        aisb_error_free(err);
}

/* ---- round trip ---- */

static const char codex_config[] =
        "# written by hand, as users do\n"
        "model = \"gpt-5-codex\"\n"
        "model_provider = \"openrouter\"\n"
        "approval_policy = \"on-request\"\n"
        "model_context_window = 400000\n"
        "tool_output_token_limit = -1\n"
        "hide_agent_reasoning = false\n"
        "show_raw_agent_reasoning = true\n"
        "notify = [\"notify-send\", \"say \\\"done\\\"\\n\\tC:\\\\temp\\\\ é 日本 🎉\", 'lit\\eral']\n"
        "matrix = [[1, 2], [3, 4.5], [\"x\", true]]\n"
        "mixed = [1, \"two\", 3.0, { four = 4 }]\n"
        "\n"
        "[model_providers.openrouter]\n"
        "name = \"OpenRouter\"\n"
        "base_url = \"https://openrouter.ai/api/v1\"\n"
        "env_key = \"OPENROUTER_API_KEY\"\n"
        "wire_api = \"chat\"\n"
        "request_max_retries = 4\n"
        "http_headers = { \"X-Title\" = \"aisb\", \"HTTP-Referer\" = \"https://example.org/a b\" }\n"
        "\n"
        "[model_providers.\"local.lab\"]   # a key with a dot in it\n"
        "base_url = \"http://127.0.0.1:11434/v1\"\n"
        "\n"
        "[profiles.a]\n"
        "model = \"o3\"\n"
        "model_reasoning_effort = \"high\"\n"
        "\n"
        "[profiles.a.sandbox_workspace_write]\n"
        "network_access = true\n"
        "writable_roots = [\"/tmp\", \"/var/tmp\"]\n"
        "\n"
        "[history]\n"
        "max_bytes = 10_485_760\n"
        "\n"
        "[mcp_servers.docs]\n"
        "command = \"npx\"\n"
        "args = [\"-y\", \"@upstash/context7-mcp\"]\n"
        "startup_timeout_sec = 12.5\n"
        "env.API_KEY = \"value\"\n"
        "\n"
        "[[tools.web]]\n"
        "name = \"search\"\n"
        "enabled = true\n"
        "\n"
        "[[tools.web]]\n"
        "name = \"fetch\"\n"
        "limits = { per_minute = 30, burst = 0.1 }\n";

static const char codex_json[] =
        "{\"model\": \"gpt-5-codex\", \"model_provider\": \"openrouter\","
        " \"approval_policy\": \"on-request\", \"model_context_window\": 400000,"
        " \"tool_output_token_limit\": -1, \"hide_agent_reasoning\": false,"
        " \"show_raw_agent_reasoning\": true,"
        " \"notify\": [\"notify-send\", \"say \\\"done\\\"\\n\\tC:\\\\temp\\\\ é 日本 🎉\", \"lit\\\\eral\"],"
        " \"matrix\": [[1, 2], [3, 4.5], [\"x\", true]],"
        " \"mixed\": [1, \"two\", 3.0, {\"four\": 4}],"
        " \"model_providers\": {"
        "   \"openrouter\": {\"name\": \"OpenRouter\", \"base_url\": \"https://openrouter.ai/api/v1\","
        "     \"env_key\": \"OPENROUTER_API_KEY\", \"wire_api\": \"chat\", \"request_max_retries\": 4,"
        "     \"http_headers\": {\"X-Title\": \"aisb\", \"HTTP-Referer\": \"https://example.org/a b\"}},"
        "   \"local.lab\": {\"base_url\": \"http://127.0.0.1:11434/v1\"}},"
        " \"profiles\": {\"a\": {\"model\": \"o3\", \"model_reasoning_effort\": \"high\","
        "   \"sandbox_workspace_write\": {\"network_access\": true, \"writable_roots\": [\"/tmp\", \"/var/tmp\"]}}},"
        " \"history\": {\"max_bytes\": 10485760},"
        " \"mcp_servers\": {\"docs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@upstash/context7-mcp\"],"
        "   \"startup_timeout_sec\": 12.5, \"env\": {\"API_KEY\": \"value\"}}},"
        " \"tools\": {\"web\": [{\"name\": \"search\", \"enabled\": true},"
        "   {\"name\": \"fetch\", \"limits\": {\"per_minute\": 30, \"burst\": 0.1}}]}}";

START_TEST(test_codex_config_round_trip)
{
        _cleanup_json_ json_object *parsed = parse_toml(codex_config);
        _cleanup_json_ json_object *want = parse_json(codex_json);
        assert_json_eq(parsed, want, "parsed");

        _cleanup_free_ char *text = format_toml(parsed);
        /* The array of tables as one, the dotted key quoted, floats as they were written. */
        ck_assert_msg(strstr(text, "\n[[tools.web]]\n"), "%s", text);
        ck_assert_msg(strstr(text, "[model_providers.\"local.lab\"]\n"), "%s", text);
        ck_assert_msg(strstr(text, "burst = 0.1 ") || strstr(text, "burst = 0.1\n"), "%s", text);
        _cleanup_json_ json_object *again = parse_toml(text);
        assert_json_eq(again, parsed, "read back");
        /* Written again, the same text: nothing drifts from one bridge run to the next. */
        _cleanup_free_ char *text_again = format_toml(again);
        ck_assert_str_eq(text_again, text);
}
END_TEST

START_TEST(test_values)
{
        /* Each type, at its limits, and strings TOML writes with escapes. */
        static const char text[] =
                "min = -9223372036854775808\n"
                "max = 9223372036854775807\n"
                "hex = 0xff\n"
                "zero = -0.0\n"
                "tiny = 5e-324\n"
                "huge = 1.7976931348623157e308\n"
                "third = 0.3333333333333333\n"
                "empty = \"\"\n"
                "nul = \"a\\u0000b\"\n"
                "controls = \"\\u0001\\u001f\\u007f\\r\\n\"\n"
                "multi = \"\"\"\n"
                "first line\n"
                "  \"quoted\" \\\\ end\"\"\"\n"
                "\"\" = \"empty key\"\n"
                "\"key \\\"with\\\" quotes\" = 1\n"
                "empty_table = {}\n"
                "empty_array = []\n";
        _cleanup_json_ json_object *parsed = parse_toml(text);
        json_object *v;
        ck_assert(json_object_object_get_ex(parsed, "min", &v));
        ck_assert(json_object_is_type(v, json_type_int) && json_object_get_int64(v) == INT64_MIN);
        ck_assert(json_object_object_get_ex(parsed, "hex", &v));
        ck_assert(json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 255);
        ck_assert(json_object_object_get_ex(parsed, "nul", &v));
        ck_assert_int_eq(json_object_get_string_len(v), 3);
        ck_assert_mem_eq(json_object_get_string(v), "a\0b", 3);
        ck_assert(json_object_object_get_ex(parsed, "multi", &v));
        ck_assert_str_eq(json_object_get_string(v), "first line\n  \"quoted\" \\ end");
        ck_assert(json_object_object_get_ex(parsed, "", &v));
        ck_assert(json_object_object_get_ex(parsed, "key \"with\" quotes", &v));
        ck_assert(json_object_object_get_ex(parsed, "third", &v));
        ck_assert(json_object_is_type(v, json_type_double) &&
                  json_object_get_double(v) == 0.3333333333333333);

        _cleanup_free_ char *written = format_toml(parsed);
        _cleanup_json_ json_object *again = parse_toml(written);
        assert_json_eq(again, parsed, "read back");
        /* -0.0 == 0.0: the sign is checked on its own. */
        ck_assert(json_object_object_get_ex(again, "zero", &v));
        ck_assert(json_object_is_type(v, json_type_double) && signbit(json_object_get_double(v)));
}
END_TEST

START_TEST(test_empty_and_sized_text)
{
        _cleanup_json_ json_object *empty = parse_toml("");
        ck_assert(json_object_is_type(empty, json_type_object));
        ck_assert_int_eq(json_object_object_length(empty), 0);

        /* The text is size bytes, not up to a NUL: what follows is never read. */
        static const char bytes[] = { 'a', ' ', '=', ' ', '1', '2', '\xff', '=', '[' };
        json_object *o = NULL;
        ck_assert_int_eq(toml_parse_json(bytes, 5, "bytes", &o, NULL), 0);
        _cleanup_json_ json_object *want = parse_json("{\"a\": 1}");
        assert_json_eq(o, want, "the first 5 bytes");
        json_object_put(o);
}
END_TEST

/* ---- the JSON side's merge, through TOML ---- */

START_TEST(test_merge_through_toml)
{
        /* What the bridge does: the sandbox's edit kept, the host's change followed. */
        _cleanup_json_ json_object *base = parse_toml("model = \"a\"\n[profiles.p]\nmodel_reasoning_effort = \"low\"\n");
        _cleanup_json_ json_object *host = parse_toml("model = \"b\"\n[profiles.p]\nmodel_reasoning_effort = \"low\"\n");
        _cleanup_json_ json_object *sandbox = parse_toml("model = \"a\"\n[profiles.p]\nmodel_reasoning_effort = \"high\"\n");
        _cleanup_json_ json_object *merged = NULL;
        ck_assert_int_eq(settings_merge(base, host, sandbox, &merged, NULL), 0);
        _cleanup_free_ char *text = format_toml(merged);
        ck_assert_str_eq(text, "model = \"b\"\n\n[profiles.p]\nmodel_reasoning_effort = \"high\"\n");
}
END_TEST

/* ---- what parsing refuses ---- */

START_TEST(test_parse_errors)
{
        static const struct {
                const char *text, *message;
        } refused[] = {
                { "a = \n", "cfg.toml:1:5: not valid TOML: " },
                /* Lines count from 1; a document that repeats a key. */
                { "a = 1\n\n  a = 2\n", "cfg.toml:3:" },
                /* toml++ checks UTF-8 (an overlong NUL here, a surrogate below). */
                { "a = 1\nb = \"x\xc0\x80\"\n", "cfg.toml:2:" },
                { "a = \"\xed\xa0\x80\"\n", "cfg.toml:1:" },
                /* toml++ 3.3 fails an internal check on this one: an assert() would end the process. */
                { "[[[ not toml\n", "cfg.toml:1:3: not valid TOML: " },
                /* toml++ 3.3 asks whether these are whitespace, and its own answer reached
                 * __builtin_unreachable() (toml.cc replaces it): refused outside a string, where
                 * TOML takes no such character, read after a line-ending backslash, where it does. */
                { "[\xef\xbb\xbb]\n", "cfg.toml:1:2: not valid TOML: " },
                { "a = 1\xc2\xa7\n", "cfg.toml:1:" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                assert_parse_fails(refused[i].text, strlen(refused[i].text), -EBADMSG, refused[i].message);
        _cleanup_json_ json_object *fine = parse_toml("\xef\xbb\xbf# \xc2\xa7\na = \"\xc2\xa7\" # \xc2\xa7\n"
                                                      "b = '''\xc2\xa7'''\nc = \"\"\"\\\n  \xc2\xa7\"\"\"\n");
        _cleanup_json_ json_object *fine_json = parse_json("{\"a\": \"\xc2\xa7\", \"b\": \"\xc2\xa7\", \"c\": \"\xc2\xa7\"}");
        assert_json_eq(fine, fine_json, "non-ASCII where TOML takes it");
        /* The error of a key holding a newline is still one line. */
        static const char newline_key[] = "\"x\\ny\" = 1\n\"x\\ny\" = 2\n";
        assert_parse_fails(newline_key, strlen(newline_key), -EBADMSG, "cfg.toml:2:");
        /* No origin: "TOML". */
        aisb_error *err = NULL;
        json_object *o = NULL;
        int r = toml_parse_json("=", 1, NULL, &o, &err);
        assert_error(err, r, -EBADMSG, "TOML:1:1: ");
        aisb_error_free(err);
}
END_TEST

START_TEST(test_parse_nul)
{
        static const char text[] = "a = 1\nb = \"x\0y\"\n";
        assert_parse_fails(text, sizeof text - 1, -EBADMSG, "cfg.toml:2:7: not valid TOML: a NUL byte");
        /* And a key that holds one through an escape: json-c's keys would end there. */
        static const char key[] = "\"a\\u0000b\" = 1\n";
        assert_parse_fails(key, strlen(key), -EBADMSG, "key '\"a\\u0000b\"' holds a NUL character");
}
END_TEST

/* Values JSON has no form of: dates and times, infinities and NaNs, each refused naming its key. */
static const struct {
        const char *text, *message;
} no_json_form[] = {
        { "[profiles.a]\nmodel = \"o3\"\nsince = 1979-05-27T07:32:00Z\n",
          "cfg.toml:3:9: key 'profiles.a.since' is a date or time" },
        { "x.y = [1, 07:32:00]\n", "key 'x.y[1]' is a date or time" },
        { "\"odd key\" = 1979-05-27\n", "key '\"odd key\"' is a date or time" },
        { "[t]\nratio = nan\n", "cfg.toml:2:9: key 't.ratio' is inf or nan" },
        { "x = [-inf]\n", "key 'x[0]' is inf or nan" },
};

START_TEST(test_parse_no_json_form)
{
        assert_parse_fails(no_json_form[_i].text, strlen(no_json_form[_i].text), -EBADMSG, no_json_form[_i].message);
}
END_TEST

START_TEST(test_parse_size)
{
        /* The bound itself is fine: a comment of TOML_JSON_TEXT_MAX bytes. */
        size_t size = TOML_JSON_TEXT_MAX + 1;
        _cleanup_free_ char *text = malloc(size);
        ck_assert_ptr_nonnull(text);
        memset(text, 'x', size);
        text[0] = '#';
        json_object *o = NULL;
        ck_assert_int_eq(toml_parse_json(text, TOML_JSON_TEXT_MAX, "big", &o, NULL), 0);
        ck_assert_int_eq(json_object_object_length(o), 0);
        json_object_put(o);
        o = NULL;
        assert_parse_fails(text, size, -EFBIG, "cfg.toml: 4194305 bytes, more than the 4 MiB");
}
END_TEST

/* prefix, a key of n parts "a.a.a...", suffix. */
static char *dotted_key(size_t n, const char *prefix, const char *suffix)
{
        size_t p = strlen(prefix), s = strlen(suffix);
        char *text = malloc(p + 2 * n + s);
        ck_assert_ptr_nonnull(text);
        memcpy(text, prefix, p);
        for (size_t i = 0; i < n; i++)
                memcpy(text + p + 2 * i, "a.", 2);
        memcpy(text + p + 2 * n - 1, suffix, s + 1);
        return text;
}

START_TEST(test_parse_depth)
{
        json_object *o = NULL;
        /* 64 parts: 63 tables under the root and a value, as deep as JSON may nest. */
        _cleanup_free_ char *deepest = dotted_key(TOML_JSON_MAX_DEPTH, "", " = 1\n");
        ck_assert_int_eq(toml_parse_json(deepest, strlen(deepest), "k", &o, NULL), 0);
        json_object_put(o);
        _cleanup_free_ char *deeper = dotted_key(TOML_JSON_MAX_DEPTH + 1, "", " = 1\n");
        assert_parse_fails(deeper, strlen(deeper), -ELOOP, "cfg.toml:1:129: nested deeper than 64 levels");
        /* A header of 64 parts opens a table at depth 65: toml++ takes it, the conversion
         * does not. */
        _cleanup_free_ char *header = dotted_key(TOML_JSON_MAX_DEPTH, "[", "]\nx = 1\n");
        assert_parse_fails(header, strlen(header), -ELOOP, "cfg.toml:1:1: key 'a.a.a.");
        _cleanup_free_ char *header_ok = dotted_key(TOML_JSON_MAX_DEPTH - 1, "[", "]\nx = 1\n");
        ck_assert_int_eq(toml_parse_json(header_ok, strlen(header_ok), "k", &o, NULL), 0);
        json_object_put(o);
        /* A million parts would overflow the stack in toml++'s destructor: refused first. */
        _cleanup_free_ char *million = dotted_key(1000000, "", " = 1\n");
        assert_parse_fails(million, strlen(million), -ELOOP, "nested deeper than 64 levels");
        /* Inline arrays: 63 under the root are fine, 64 and a million are not. */
        _cleanup_free_ char *brackets = malloc(1000001);
        ck_assert_ptr_nonnull(brackets);
        memset(brackets, '[', 1000000);
        brackets[1000000] = 0;
        for (size_t n = TOML_JSON_MAX_DEPTH - 1; n <= TOML_JSON_MAX_DEPTH; n++) {
                _cleanup_free_ char *text = NULL;
                ck_assert_int_ge(asprintf(&text, "x = %.*s%.*s\n", (int) n, brackets, (int) n,
                                          "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"),
                                 0);
                if (n < TOML_JSON_MAX_DEPTH) {
                        ck_assert_int_eq(toml_parse_json(text, strlen(text), "k", &o, NULL), 0);
                        json_object_put(o);
                } else
                        assert_parse_fails(text, strlen(text), -ELOOP, "key 'x");
        }
        assert_parse_fails(brackets, strlen(brackets), -ELOOP, "cfg.toml:1:65: nested deeper than 64 levels");
        /* Brackets and dots inside strings and comments count for nothing. */
        _cleanup_free_ char *in_strings = NULL;
        ck_assert_int_ge(asprintf(&in_strings, "a = \"%.100s\" # %.100s\nb = '''%.100s'''\nc = \"%.100000s\"\n",
                                  brackets, brackets, brackets, million), 0);
        ck_assert_int_eq(toml_parse_json(in_strings, strlen(in_strings), "k", &o, NULL), 0);
        json_object_put(o);
}
END_TEST

/* ---- what formatting refuses, and null ---- */

START_TEST(test_format_null)
{
        _cleanup_json_ json_object *o = parse_json(
                "{\"gone\": null, \"kept\": 1, \"t\": {\"also_gone\": null, \"x\": \"y\"}, \"only_null\": {\"n\": null}}");
        _cleanup_free_ char *text = format_toml(o);
        ck_assert_msg(!strstr(text, "gone"), "%s", text);
        _cleanup_json_ json_object *again = parse_toml(text);
        _cleanup_json_ json_object *want = parse_json("{\"kept\": 1, \"t\": {\"x\": \"y\"}, \"only_null\": {}}");
        assert_json_eq(again, want, "without the nulls");

        /* In an array, leaving a null out would move what follows: refused. */
        _cleanup_json_ json_object *in_array = parse_json("{\"t\": {\"list\": [1, null, 3]}}");
        assert_format_fails(in_array, -EINVAL, "writing TOML: key 't.list[1]' is null");
}
END_TEST

START_TEST(test_format_refusals)
{
        _cleanup_json_ json_object *array = parse_json("[1, 2]");
        assert_format_fails(array, -EINVAL, "the value is array; a TOML document is a table");
        _cleanup_json_ json_object *string = json_object_new_string("x");
        assert_format_fails(string, -EINVAL, "the value is string");
        assert_format_fails(NULL, -EINVAL, "the value is null");

        _cleanup_json_ json_object *nan = json_object_new_object();
        ck_assert_int_eq(json_add(nan, "a", json_object_new_double(NAN)), 0);
        assert_format_fails(nan, -EINVAL, "key 'a' is inf or nan");

        /* json-c holds integers above INT64_MAX; TOML's stop there. */
        _cleanup_json_ json_object *big = parse_json("{\"n\": 18446744073709551615}");
        assert_format_fails(big, -EINVAL, "key 'n' is above the largest TOML integer");

        /* A string that is not UTF-8 would be written as it is, and not read back. */
        _cleanup_json_ json_object *bytes = json_object_new_object();
        ck_assert_int_eq(json_add(bytes, "s", json_object_new_string("\xff")), 0);
        assert_format_fails(bytes, -EINVAL, "does not read back");

        /* toml++ 3.3 would write these keys unquoted: "it's = 1" would not read back. */
        _cleanup_json_ json_object *quote = parse_json("{\"t\": {\"it's\": 1}}");
        assert_format_fails(quote, -EINVAL, "key 't.\"it's\"' holds a single quote");
        _cleanup_json_ json_object *tab = parse_json("{\"a\\tb\": 1}");
        assert_format_fails(tab, -EINVAL, "holds a single quote, tab or newline");

        /* Objects nested past the JSON side's bound. */
        _cleanup_json_ json_object *deep = json_object_new_object();
        json_object *at = deep;
        for (int i = 0; i < TOML_JSON_MAX_DEPTH; i++) {
                json_object *inner = json_object_new_object();
                ck_assert_int_eq(json_add(at, "d", inner), 0);
                at = inner;
        }
        assert_format_fails(deep, -ELOOP, "nested deeper than 64 levels");
}
END_TEST

static Suite *toml_suite(void)
{
        Suite *s = suite_create("toml");
        suite_add_tests(s, "round-trip", NULL, NULL, test_codex_config_round_trip, test_values,
                        test_empty_and_sized_text, test_merge_through_toml);
        TCase *parse = suite_add_tests(s, "parse", NULL, NULL, test_parse_errors, test_parse_nul, test_parse_size,
                                       test_parse_depth);
        tcase_add_loop_test(parse, test_parse_no_json_form, 0, ELEMENTSOF(no_json_form));
        suite_add_tests(s, "format", NULL, NULL, test_format_null, test_format_refusals);
        return s;
}

int main(void)
{
        return unit_run(toml_suite());
}
