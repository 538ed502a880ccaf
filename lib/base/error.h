/* SPDX-License-Identifier: MIT */
/* The one error contract: functions return a negative errno and fill *err once. */
#pragma once

#include "aisb.h"
#include "util.h"

struct aisb_error {
        int code;      /* negative errno */
        char *message; /* one line */
};

/* Set *err (when err != NULL and *err is still NULL) and return code (negative). */
int aisb_error_set(aisb_error **err, int code, const char *fmt, ...) _printf_(3, 4);
/* Prefix an existing error with context: "building image: <old message>". Returns its code. */
int aisb_error_wrap(aisb_error **err, int code, const char *fmt, ...) _printf_(3, 4);

/* The one out-of-memory error: -ENOMEM, "out of memory". */
int error_oom(aisb_error **err);

DEFINE_TRIVIAL_CLEANUP_FUNC(aisb_error *, aisb_error_free)
#define _cleanup_error_ _cleanup_(aisb_error_freep)
