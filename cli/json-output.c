/* SPDX-License-Identifier: MIT */
/* --json output without control bytes (json-output.h). */
#include "json-output.h"

void cli_put_json_text(FILE *out, const char *text)
{
        for (const unsigned char *c = (const unsigned char *) (text ? text : ""); *c; c++) {
                /* In a JSON text, bytes like these stand only inside strings, where \u00XX
                 * means the same character. */
                if (*c < 0x20 || *c == 0x7f)
                        fprintf(out, "\\u%04x", *c);
                else if (*c == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) {
                        fprintf(out, "\\u%04x", c[1]);
                        c++;
                } else
                        putc(*c, out);
        }
}

void cli_print_json(FILE *out, json_object *o)
{
        cli_put_json_text(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
        putc('\n', out);
}
