/* SPDX-License-Identifier: MIT */
/* Runner for the entrypoint's unit suites: nothing here loads a ruleset or a filter. */
#include <check.h>
#include <stdlib.h>

#include "suites.h"
#include "../suite-table.h"

int main(void)
{
        return suites_run(netpolicy_suite(), nft_batch_suite(), seccomp_suite(), seed_suite());
}
