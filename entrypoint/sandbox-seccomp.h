/* SPDX-License-Identifier: MIT */
/* The entrypoint's seccomp filter, built with libseccomp from netpolicy_syscall_denials.
 * Building and loading are separate so the tests can export the BPF and evaluate it without
 * ever loading it; the entrypoint loads it last, right before execve. */
#pragma once

#include <stddef.h>

#include <seccomp.h>

/* Build the filter for the native architecture. -errno; on failure names the rule in err. */
int sandbox_seccomp_build(scmp_filter_ctx *ret, char *err, size_t errlen);
