/* SPDX-License-Identifier: MIT */
/* One sandboxed run (aisb_run) and the runs of aisb's own (doctor, skill-lint). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "service.h"
#include "stream.h"
#include "policy.h"

/* Run q's command in a sandbox of aisb's own (doctor, skill-lint), stdin closed, its output
 * to fn, for at most timeout_s seconds (then -ETIMEDOUT, the sandbox removed). */
int run_captured(aisb_ctx *ctx, const aisb_policy *q, long timeout_s, aisb_output_fn fn,
                 void *userdata, int *ret_code, aisb_error **err);

/* A command's stdout kept up to max bytes, the rest dropped and noted: what such a sandbox
 * writes is the repository's to choose (an fsmonitor that writes forever), so aisb's memory
 * does not follow it. run_capture_stdout is its output function; free b with buffer_free. */
typedef struct run_capture {
        buffer b;
        size_t max;
        bool truncated;
} run_capture;
int run_capture_stdout(const aisb_output *output, void *userdata);
