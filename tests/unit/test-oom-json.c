/* SPDX-License-Identifier: MIT */
/*
 * Out of memory inside json-c itself, for the declarative builder (jsonutil.h) and the TOML
 * conversion (toml-json.h, and libstdc++'s operator new under it): test-oom's
 * malloc is seen by the library's own code only (the tests build with -fvisibility=hidden,
 * so json-c and libc keep theirs); this one is exported, so json-c's allocations fail too.
 * For N = 0, 1, 2, ... the N-th allocation of this thread fails: the build must then return
 * -ENOMEM with nothing kept, and what it was handed must be put (scripts/sanitize would see a
 * leak). Not built with the sanitizers, which replace malloc themselves.
 */
#include <check.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "unit.h"
#include "fail-alloc.h"
#include "../suite-table.h"

FAIL_ALLOC_DEFINE(__attribute__((visibility("default"))))

static const char expected[] = "{\"name\":\"x\",\"cap_drop\":[\"ALL\"],\"limits\":{\"memory\":1,\"swap\":false},"
                               "\"list\":[\"given\",{}],\"more\":[1,[]]}";

/* One build, with an object handed over and one appended with json_build_into. */
static int build(json_object **ret)
{
        static const char *const caps[] = { "ALL", NULL };
        json_object *given = json_object_new_string("given"), *o = NULL;
        int r = json_build(&o, JSON_BUILD_OBJECT(
                                       JSON_BUILD_PAIR_STRING("name", "x"),
                                       JSON_BUILD_PAIR_STRV("cap_drop", caps),
                                       JSON_BUILD_PAIR("limits", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_INT64("memory", 1),
                                                                                   JSON_BUILD_PAIR_BOOL("swap", false))),
                                       JSON_BUILD_PAIR("list", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(given),
                                                                                JSON_BUILD_EMPTY_OBJECT))));
        if (r < 0)
                return r;
        r = json_build_into(o, JSON_BUILD_PAIR("more", JSON_BUILD_ARRAY(JSON_BUILD_INT64(1), JSON_BUILD_EMPTY_ARRAY)));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

START_TEST(test_oom_builder)
{
        long n = 0;
        for (;; n++) {
                json_object *o = (json_object *) 0x1;
                countdown = n;
                failed_one = false;
                int r = build(&o);
                countdown = -1;
                if (r < 0) {
                        ck_assert_int_eq(r, -ENOMEM);
                        ck_assert_ptr_eq(o, (json_object *) 0x1);
                        ck_assert(failed_one);
                        continue;
                }
                ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), expected);
                json_object_put(o);
                if (!failed_one)
                        break;
        }
        fprintf(stderr, "builder: %ld allocations\n", n);
        ck_assert_int_gt(n, 10);
}
END_TEST

/* A body long enough that json-c's writer grows its buffer several times: at each failure
 * of its allocations the checked text is the whole body or nothing, never a body with a
 * piece left out (which the unchecked writer returns at some of them: the control). */
static json_object *long_body(void)
{
        json_object *o = json_object_new_object();
        char key[32], value[200];
        for (int i = 0; i < 40; i++) {
                snprintf(key, sizeof key, "setting_%d", i);
                memset(value, 'a' + i % 26, sizeof value - 1);
                value[sizeof value - 1] = 0;
                ck_assert_int_eq(json_add_string(o, key, value), 0);
        }
        ck_assert_int_eq(json_add_bool(o, "no_new_privileges", true), 0);
        return o;
}

START_TEST(test_oom_text)
{
        json_object *o = long_body();
        char *whole = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        size_t lost = 0;
        long n = 0;
        for (;; n++) {
                o = long_body();
                countdown = n;
                failed_one = false;
                const char *raw = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                bool failed = failed_one;
                countdown = -1;
                if (raw && strcmp(raw, whole) != 0) {
                        lost++;
                        ck_assert_msg(!json_text_is(o, raw), "a piece left out passes: %s", raw);
                } else if (raw)
                        ck_assert(json_text_is(o, raw));
                json_object_put(o);
                if (!failed)
                        break;
        }
        fprintf(stderr, "text: %ld allocations, %zu of them made json-c's writer leave a piece out\n", n, lost);
        ck_assert_msg(lost > 0, "no allocation failure made json-c's writer leave a piece out: the test shows nothing");
        free(whole);
}
END_TEST

/* codex's config through toml-json.h, where the C++ half meets an allocation failure as
 * std::bad_alloc (operator new calls this malloc too): at each, -ENOMEM with an error and
 * nothing returned, never an exception into C, a crash or a leak; else the whole value. */
static const char toml_text[] = "model = \"o3\"\nlist = [1, 2.5, \"x\"]\n"
                                "[model_providers.p]\nbase_url = \"http://h/v1\"\n"
                                "http_headers = { X-A = \"b\" }\n[[t]]\nn = 1\n[[t]]\nn = 2\n";

/* Each allocation failed in turn; returns how many there were. */
static long oom_toml_pass(json_object *want, const char *want_text)
{
        long n = 0;
        for (bool more = true; more; n++) {
                json_object *o = (json_object *) 0x1;
                char *text = (char *) 0x1;
                aisb_error *err = NULL;
                countdown = n;
                failed_one = false;
                int r = toml_parse_json(toml_text, strlen(toml_text), "t", &o, &err);
                if (r == 0)
                        r = toml_format_json(o, &text, &err);
                more = failed_one;
                countdown = -1;
                if (r < 0) {
                        ck_assert_int_eq(r, -ENOMEM);
                        ck_assert_int_eq(aisb_error_code(err), -ENOMEM);
                        ck_assert_ptr_eq(text, (char *) 0x1);
                        aisb_error_free(err);
                } else {
                        ck_assert(json_object_equal(o, want));
                        ck_assert_str_eq(text, want_text);
                        free(text);
                }
                if (o != (json_object *) 0x1)
                        json_object_put(o);
        }
        return n;
}

START_TEST(test_oom_toml)
{
        json_object *want = NULL;
        ck_assert_int_eq(toml_parse_json(toml_text, strlen(toml_text), "t", &want, NULL), 0);
        char *want_text = NULL;
        ck_assert_int_eq(toml_format_json(want, &want_text, NULL), 0);
        /* No sanitizer here to see a leak: the heap in use must not grow from one pass to the
         * next (the first fills glibc's per-thread cache, which counts as in use). */
        long n = oom_toml_pass(want, want_text);
        size_t in_use = mallinfo2().uordblks;
        ck_assert_int_eq(oom_toml_pass(want, want_text), n);
        ck_assert_uint_eq(mallinfo2().uordblks, in_use);
        fprintf(stderr, "toml: %ld allocations\n", n);
        ck_assert_int_gt(n, 50);
        json_object_put(want);
        free(want_text);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("oom-json");
        suite_add_tests(s, "builder", NULL, NULL, test_oom_builder, test_oom_text);
        suite_add_tests(s, "toml", NULL, NULL, test_oom_toml);
        return unit_run(s);
}
