/* SPDX-License-Identifier: MIT */
/*
 * What --json prints: one JSON text a line, which a terminal shows as text. json-c escapes
 * the C0 controls inside strings, not DEL and not the C1 controls (U+0080..U+009F, which
 * UTF-8 writes as C2 80..C2 9F); a file name in ~/.agents or a project's path that holds
 * one would reach the terminal as a control (U+009D starts an OSC, as ESC ] does).
 */
#pragma once

#include <stdio.h>

#include <json-c/json.h>

/* Write a JSON text with DEL and the C1 controls as \u007f and \u0080..\u009f, and any raw
 * C0 byte (none in what json-c writes) as \u00XX: the same JSON value, no control byte. */
void cli_put_json_text(FILE *out, const char *text);
/* o as one line of JSON (json-c's plain form, '/' unescaped) through cli_put_json_text. */
void cli_print_json(FILE *out, json_object *o);
