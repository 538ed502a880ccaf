/* SPDX-License-Identifier: MIT */
/*
 * The version macros of aisb-version.h: they agree with the library's aisb_version() and
 * with meson.build's project() version (AISB_TEST_PROJECT_VERSION, from tests/link), and
 * AISB_CHECK_VERSION answers right at every boundary, in #if and at run time. Built against
 * the public header alone, as an embedder is.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include <aisb.h>

#include "../suite-table.h"

/* The preprocessor half: a wrong answer here stops the build, naming the case. */
#if !AISB_CHECK_VERSION(0, 0, 0)
#error "AISB_CHECK_VERSION(0, 0, 0) is false"
#endif
#if !AISB_CHECK_VERSION(AISB_VERSION_MAJOR, AISB_VERSION_MINOR, AISB_VERSION_MICRO)
#error "AISB_CHECK_VERSION of the version itself is false"
#endif
#if AISB_CHECK_VERSION(AISB_VERSION_MAJOR, AISB_VERSION_MINOR, AISB_VERSION_MICRO + 1)
#error "AISB_CHECK_VERSION of the next micro version is true"
#endif
#if AISB_CHECK_VERSION(AISB_VERSION_MAJOR, AISB_VERSION_MINOR + 1, 0)
#error "AISB_CHECK_VERSION of the next minor version is true"
#endif
#if AISB_CHECK_VERSION(AISB_VERSION_MAJOR + 1, 0, 0)
#error "AISB_CHECK_VERSION of the next major version is true"
#endif
#if AISB_VERSION_MINOR > 0 && !AISB_CHECK_VERSION(AISB_VERSION_MAJOR, AISB_VERSION_MINOR - 1, 999)
#error "AISB_CHECK_VERSION of an earlier minor version with a larger micro is false"
#endif

START_TEST(test_string_is_the_library_version)
{
        ck_assert_str_eq(AISB_VERSION_STRING, aisb_version());
}
END_TEST

START_TEST(test_string_is_the_project_version)
{
        ck_assert_str_eq(AISB_VERSION_STRING, AISB_TEST_PROJECT_VERSION);
}
END_TEST

START_TEST(test_numbers_make_the_string)
{
        char text[64];
        snprintf(text, sizeof text, "%d.%d.%d", AISB_VERSION_MAJOR, AISB_VERSION_MINOR,
                 AISB_VERSION_MICRO);
        ck_assert_str_eq(text, AISB_VERSION_STRING);
}
END_TEST

/* The macro as an expression, with values the preprocessor cases cannot reach (an earlier
 * major with larger minor and micro, and the other way round). */
START_TEST(test_check_version_at_run_time)
{
        const int major = AISB_VERSION_MAJOR, minor = AISB_VERSION_MINOR, micro = AISB_VERSION_MICRO;
        ck_assert(AISB_CHECK_VERSION(major, minor, micro));
        ck_assert(AISB_CHECK_VERSION(major, minor, 0));
        ck_assert(!AISB_CHECK_VERSION(major, minor, micro + 1));
        ck_assert(!AISB_CHECK_VERSION(major, minor + 1, 0));
        ck_assert(!AISB_CHECK_VERSION(major + 1, 0, 0));
        ck_assert(AISB_CHECK_VERSION(major - 1, minor + 1000, micro + 1000));
        ck_assert(!AISB_CHECK_VERSION(major + 1, minor - 1000, micro - 1000));
        if (minor > 0)
                ck_assert(AISB_CHECK_VERSION(major, minor - 1, micro + 1000));
}
END_TEST

int main(void)
{
        return suites_run(suite_of("version", "macros", test_string_is_the_library_version,
                                   test_string_is_the_project_version, test_numbers_make_the_string,
                                   test_check_version_at_run_time));
}
