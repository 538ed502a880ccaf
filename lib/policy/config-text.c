/* SPDX-License-Identifier: MIT */
/* A harness configuration's text: its size bound and positions in it (config-text.h). */
#include "config-text.h"

void config_text_position(const char *text, size_t offset, unsigned *ret_line, unsigned *ret_column)
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

int config_text_check_size(const char *origin, size_t size, unsigned max, const char *harness, aisb_error **err)
{
        if (size <= max)
                return 0;
        return aisb_error_set(err, -EFBIG, "%s: %zu bytes, more than the %u MiB a %s config may have", origin, size,
                              max >> 20, harness);
}
