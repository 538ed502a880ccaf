/* SPDX-License-Identifier: MIT */
/* The unit suites of aisb-entrypoint, one per module, run by test-entrypoint-unit.c. */
#pragma once

#include <check.h>

Suite *netpolicy_suite(void);
Suite *nft_batch_suite(void);
Suite *seccomp_suite(void);
Suite *seed_suite(void);
