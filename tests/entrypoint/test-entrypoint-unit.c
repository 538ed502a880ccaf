/* SPDX-License-Identifier: MIT */
/* Runner for the entrypoint's unit suites: nothing here loads a ruleset or a filter. */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

int main(void)
{
        SRunner *sr = srunner_create(netpolicy_suite());
        srunner_add_suite(sr, nft_batch_suite());
        srunner_add_suite(sr, seccomp_suite());
        srunner_add_suite(sr, seed_suite());
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
