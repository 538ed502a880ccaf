/* SPDX-License-Identifier: MIT */
/*
 * What the readers of a harness's configuration text share (the settings' JSON in
 * settings-merge.c, codex's TOML in toml-json.c): the bound on its size, and where an offset
 * in it lies, for their one-line errors.
 */
#pragma once

#include <stddef.h>

#include "error.h"

/* The line and column (both from 1) of offset in text. */
static inline void config_text_position(const char *text, size_t offset, unsigned *ret_line, unsigned *ret_column)
{
        unsigned line = 1;
        size_t line_start = 0;
        for (size_t i = 0; i < offset; i++)
                if (text[i] == '\n') {
                        line++;
                        line_start = i + 1;
                }
        *ret_line = line;
        *ret_column = (unsigned) (offset - line_start + 1);
}

/* -EFBIG, "ORIGIN: SIZE bytes, more than the N MiB a HARNESS config may have", past max
 * bytes; 0 otherwise. */
static inline int config_text_check_size(const char *origin, size_t size, unsigned max, const char *harness,
                                         aisb_error **err)
{
        if (size <= max)
                return 0;
        return aisb_error_set(err, -EFBIG, "%s: %zu bytes, more than the %u MiB a %s config may have", origin, size,
                              max >> 20, harness);
}
