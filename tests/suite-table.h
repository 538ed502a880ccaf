/* SPDX-License-Identifier: MIT */
/*
 * A check suite written as a list: each test case added in one call with its fixture and its
 * tests, so that a suite's function reads as what it runs (a table's loop test in one call
 * too); and a runner for several suites. Any test program may include it (as "../suite-table.h").
 */
#pragma once

#include <check.h>
#include <stdlib.h>

/* A new test case of s, with the checked fixture setup/teardown (NULL, NULL: none). */
static inline TCase *suite_new_tcase(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void))
{
        TCase *tc = tcase_create(name);
        if (setup || teardown)
                tcase_add_checked_fixture(tc, setup, teardown);
        suite_add_tcase(s, tc);
        return tc;
}

static inline TCase *suite_add_test_list(Suite *s, const char *name, void (*setup)(void),
                                         void (*teardown)(void), const TTest *const *tests)
{
        TCase *tc = suite_new_tcase(s, name, setup, teardown);
        for (; *tests; tests++)
                tcase_add_test(tc, *tests);
        return tc;
}

/* The test case `name` of s, with the checked fixture setup/teardown (NULL, NULL: none) and
 * the tests that follow, in that order; returned for a loop test or a timeout of its own. */
#define suite_add_tests(s, name, setup, teardown, ...) \
        suite_add_test_list((s), (name), (setup), (teardown), (const TTest *const[]) { __VA_ARGS__, NULL })

/* The test case `name` of s holding one loop test, run for each row 0 to rows - 1 of its table. */
static inline TCase *suite_add_loop(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void),
                                    const TTest *test, size_t rows)
{
        TCase *tc = suite_new_tcase(s, name, setup, teardown);
        tcase_add_loop_test(tc, test, 0, (int) rows);
        return tc;
}

static inline Suite *suite_of_list(const char *name, const char *tcase_name, const TTest *const *tests)
{
        Suite *s = suite_create(name);
        suite_add_test_list(s, tcase_name, NULL, NULL, tests);
        return s;
}

/* A suite of one test case without a fixture, holding the tests that follow. */
#define suite_of(name, tcase_name, ...) \
        suite_of_list((name), (tcase_name), (const TTest *const[]) { __VA_ARGS__, NULL })

static inline int suites_run_list(Suite *const *suites)
{
        SRunner *runner = srunner_create(suites[0]);
        for (size_t i = 1; suites[i]; i++)
                srunner_add_suite(runner, suites[i]);
        srunner_run_all(runner, CK_NORMAL);
        int failed = srunner_ntests_failed(runner);
        srunner_free(runner);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Every test of the suites given, in one runner; the exit status says whether any failed. */
#define suites_run(...) suites_run_list((Suite *const[]) { __VA_ARGS__, NULL })
