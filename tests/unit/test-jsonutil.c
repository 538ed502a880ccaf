/* SPDX-License-Identifier: MIT */
/* The declarative JSON builder (jsonutil.h): what it makes, what it refuses, what it owns. */
#include <check.h>
#include <stdlib.h>

#include "internal.h"
#include "unit.h"
#include "../suite-table.h"

static const char *text(json_object *o)
{
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

START_TEST(test_nested)
{
        static const char *const caps[] = { "ALL", NULL };
        json_object *o = NULL;
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(
                                                JSON_BUILD_PAIR_STRING("name", "x"),
                                                JSON_BUILD_PAIR_BOOL("ro", 7),
                                                JSON_BUILD_PAIR_INT64("n", -3),
                                                JSON_BUILD_PAIR("limits", JSON_BUILD_OBJECT(
                                                                JSON_BUILD_PAIR_INT64("memory", 1ULL << 40),
                                                                JSON_BUILD_PAIR("empty", JSON_BUILD_EMPTY_OBJECT))),
                                                JSON_BUILD_PAIR("list", JSON_BUILD_ARRAY(
                                                                JSON_BUILD_STRING("a"), JSON_BUILD_BOOL(false),
                                                                JSON_BUILD_ARRAY(JSON_BUILD_INT64(1)),
                                                                JSON_BUILD_EMPTY_ARRAY)),
                                                JSON_BUILD_PAIR_STRV("drop", caps))),
                         0);
        ck_assert_str_eq(text(o), "{\"name\":\"x\",\"ro\":true,\"n\":-3,\"limits\":{\"memory\":1099511627776,"
                                  "\"empty\":{}},\"list\":[\"a\",false,[1],[]],\"drop\":[\"ALL\"]}");
        json_object_put(o);

        /* A bare value at the top. */
        ck_assert_int_eq(json_build(&o, JSON_BUILD_STRING("alone")), 0);
        ck_assert_str_eq(text(o), "\"alone\"");
        json_object_put(o);
}
END_TEST

START_TEST(test_conditions)
{
        json_object *o = NULL;
        const char *missing = NULL;
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(
                                                JSON_BUILD_PAIR_CONDITION(true, JSON_BUILD_PAIR_STRING("yes", "1")),
                                                /* What a false condition holds need not exist. */
                                                JSON_BUILD_PAIR_CONDITION(missing, JSON_BUILD_PAIR_STRING("no", missing)),
                                                JSON_BUILD_PAIR_CONDITION(false, JSON_BUILD_PAIR("nested", JSON_BUILD_OBJECT(
                                                                JSON_BUILD_PAIR_STRING("deep", NULL)))),
                                                JSON_BUILD_PAIR("a", JSON_BUILD_ARRAY(
                                                                JSON_BUILD_CONDITION(false, JSON_BUILD_STRING("x")),
                                                                JSON_BUILD_CONDITION(true, JSON_BUILD_STRING("y")),
                                                                JSON_BUILD_CONDITION(false, JSON_BUILD_TAKE(NULL)))))),
                         0);
        ck_assert_str_eq(text(o), "{\"yes\":\"1\",\"a\":[\"y\"]}");
        json_object_put(o);
}
END_TEST

START_TEST(test_strv)
{
        char *mutable[] = { (char *) "a", (char *) "b", NULL };
        json_object *o = NULL;
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRV("none", NULL),
                                                          JSON_BUILD_PAIR_STRV("two", mutable))),
                         0);
        ck_assert_str_eq(text(o), "{\"none\":[],\"two\":[\"a\",\"b\"]}");
        json_object_put(o);
}
END_TEST

/* json_object_put() says whether it freed: a reference of the test's own tells who holds one. */
START_TEST(test_ownership)
{
        json_object *given = json_object_new_string("given"), *o = NULL;
        json_object_get(given);
        ck_assert_int_eq(json_build(&o, JSON_BUILD_ARRAY(JSON_BUILD_TAKE(given))), 0);
        ck_assert_int_eq(json_object_put(given), 0); /* the array holds it */
        ck_assert_str_eq(text(o), "[\"given\"]");
        json_object_put(o);

        /* Failed before it, after it, or dropped by a condition: put all the same. */
        json_object *before = json_object_new_object(), *after = json_object_new_object(),
                    *dropped = json_object_new_object();
        json_object_get(before);
        json_object_get(after);
        json_object_get(dropped);
        o = (json_object *) 0x1;
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(
                                                JSON_BUILD_PAIR_TAKE("before", before),
                                                JSON_BUILD_PAIR_CONDITION(false, JSON_BUILD_PAIR_TAKE("dropped", dropped)),
                                                JSON_BUILD_PAIR_STRING("fails", NULL),
                                                JSON_BUILD_PAIR("nested", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(after))))),
                         -ENOMEM);
        ck_assert_ptr_eq(o, (json_object *) 0x1); /* untouched */
        ck_assert_int_eq(json_object_put(before), 1);
        ck_assert_int_eq(json_object_put(after), 1);
        ck_assert_int_eq(json_object_put(dropped), 1);
}
END_TEST

START_TEST(test_first_error)
{
        json_object *o = NULL;
        /* The caller's own errno for a builder of theirs that failed, and the first one only. */
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_PAIR("a", JSON_BUILD_TAKE_OR(NULL, -EOPNOTSUPP)),
                                                          JSON_BUILD_PAIR_STRING("b", NULL),
                                                          JSON_BUILD_PAIR("c", JSON_BUILD_TAKE_OR(NULL, -EPERM)))),
                         -EOPNOTSUPP);
        ck_assert_ptr_null(o);
        ck_assert_int_eq(json_build(&o, JSON_BUILD_ARRAY(JSON_BUILD_STRING(NULL),
                                                         JSON_BUILD_TAKE_OR(NULL, -EOPNOTSUPP))),
                         -ENOMEM);
        ck_assert_ptr_null(o);
        /* A TAKE without an errno: out of memory. */
        ck_assert_int_eq(json_build(&o, JSON_BUILD_TAKE(NULL)), -ENOMEM);
        ck_assert_ptr_null(o);
}
END_TEST

START_TEST(test_null_refused)
{
        json_object *o = NULL;
        const char *none = NULL;
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("cap_drop", none))), -ENOMEM);
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(none, "value"))), -ENOMEM);
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE("cap_drop", NULL))), -ENOMEM);
        ck_assert_ptr_null(o);
}
END_TEST

START_TEST(test_malformed)
{
        json_object *o = NULL;
        /* A value where a pair belongs, a pair in an array: the call is wrong. */
        ck_assert_int_eq(json_build(&o, JSON_BUILD_OBJECT(JSON_BUILD_STRING("x"))), -EINVAL);
        ck_assert_int_eq(json_build(&o, JSON_BUILD_ARRAY(JSON_BUILD_PAIR_STRING("k", "v"))), -EINVAL);
        ck_assert_ptr_null(o);
}
END_TEST

START_TEST(test_into)
{
        json_object *o = json_object_new_object(), *a = json_object_new_array();
        ck_assert_int_eq(json_build_into(o, JSON_BUILD_PAIR_STRING("k", "v"),
                                         JSON_BUILD_PAIR_CONDITION(false, JSON_BUILD_PAIR_INT64("no", 1))),
                         0);
        ck_assert_int_eq(json_build_into(a, JSON_BUILD_INT64(1), JSON_BUILD_OBJECT(JSON_BUILD_PAIR_BOOL("b", true))), 0);
        ck_assert_int_eq(json_build_into(o, JSON_BUILD_PAIR_TAKE("a", a)), 0);
        ck_assert_str_eq(text(o), "{\"k\":\"v\",\"a\":[1,{\"b\":true}]}");
        /* The kind must match what is added to. */
        ck_assert_int_eq(json_build_into(a, JSON_BUILD_PAIR_STRING("k", "v")), -EINVAL);
        json_object_put(o);

        /* No object to add to (its allocation failed): out of memory, and what was given put. */
        json_object *given = json_object_new_object();
        json_object_get(given);
        ck_assert_int_eq(json_build_into(NULL, JSON_BUILD_TAKE(given)), -ENOMEM);
        ck_assert_int_eq(json_object_put(given), 1);
        json_object *s = json_object_new_string("s");
        ck_assert_int_eq(json_build_into(s, JSON_BUILD_STRING("x")), -EINVAL);
        json_object_put(s);
}
END_TEST

/* The checked helpers the builder stands beside keep their contract. */
/* What json-c leaves raw (DEL, the C1 controls, bytes that are not UTF-8) comes out as
 * escapes a JSON parser reads and a terminal does not act on; the rest as it was. */
START_TEST(test_text_safe)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "{\"a\": \"plain\"}", "{\"a\": \"plain\"}" },
                { "\"sub\x7fx\"", "\"sub\\u007fx\"" },
                { "\"c1\xc2\x9b" "31m\"", "\"c1\\u009b31m\"" },
                { "\"\xc2\x80\xc2\x9f\xc2\xa0\"", "\"\\u0080\\u009f\xc2\xa0\"" },
                { "\"\xff\xfe\"", "\"\\ufffd\\ufffd\"" },
                { "\"\xc0\xaf\"", "\"\\ufffd\\ufffd\"" },         /* overlong '/' */
                { "\"\xed\xa0\x80\"", "\"\\ufffd\\ufffd\\ufffd\"" }, /* a surrogate */
                { "\"\xf4\x90\x80\x80\"", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
                { "\"\xe2\x82\xac \xf0\x9f\x98\x80\"", "\"\xe2\x82\xac \xf0\x9f\x98\x80\"" },
                { "\"\xe2\x82\"", "\"\\ufffd\\ufffd\"" },         /* cut short */
                { "", "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *out = NULL;
                ck_assert_int_eq(json_text_safe(cases[i].in, &out), 0);
                ck_assert_str_eq(out, cases[i].out);
                if (cases[i].in[0]) {
                        json_object *o = json_tokener_parse(out);
                        ck_assert_msg(o, "not JSON: %s", out);
                        json_object_put(o);
                }
                free(out);
        }
}
END_TEST

START_TEST(test_checked_helpers)
{
        json_object *o = json_object_new_object();
        ck_assert_int_eq(json_add_string(o, "k", NULL), -ENOMEM);
        ck_assert_int_eq(json_add(o, "k", NULL), -ENOMEM);
        json_object *a = json_object_new_array();
        ck_assert_int_eq(json_append_string(a, NULL), -ENOMEM);
        ck_assert_uint_eq(json_object_array_length(a), 0);
        json_object_put(a);
        ck_assert_int_eq(json_object_object_length(o), 0);
        json_object_put(o);
}
END_TEST

int main(void)
{
        return unit_run(suite_of("jsonutil", "build", test_nested, test_conditions, test_strv, test_ownership,
                                 test_first_error, test_null_refused, test_malformed, test_into,
                                 test_checked_helpers, test_text_safe));
}
