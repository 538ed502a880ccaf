/* SPDX-License-Identifier: MIT */
/* The gate's CA added to what the sandbox trusts, for the run (--ca-bundle). */
#pragma once

#include <stddef.h>

/* Write dest (created, mode 0644, never through a link) as the PEM text of system (missing:
 * nothing of it) followed by extra's. Each read is bounded; extra must be a regular file
 * holding a certificate. 0, or a negative errno with one line in err. */
int trust_bundle_write(const char *system, const char *extra, const char *dest, char *err, size_t errlen);
