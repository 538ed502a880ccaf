/* SPDX-License-Identifier: MIT */
/*
 * The C half of the TOML conversion (toml-json.h): what a text must be before toml++ reads
 * it, and errors in aisb's form. The conversion itself is toml.cc's, which reports a
 * problem as a position and a message; the origin and the one-line form are added here.
 */
#include "toml-json.h"

#include "config-text.h"
#include "settings-merge.h"

_Static_assert(TOML_JSON_MAX_DEPTH <= SETTINGS_JSON_MAX_DEPTH,
               "a config parsed here must be one the settings merge takes");

static void problem_done(toml_problem *problem)
{
        free(problem->message);
}

/* Control bytes as '?': toml++'s messages may quote the input, and an error is one line. */
static const char *one_line(char *message)
{
        for (char *p = message; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        return message;
}

static int error_at(const char *text, size_t offset, const char *origin, int code, const char *what,
                    aisb_error **err)
{
        unsigned line, column;
        config_text_position(text, offset, &line, &column);
        return aisb_error_set(err, code, "%s:%u:%u: %s", origin, line, column, what);
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The end of the string whose opening quote is at text[i]: basic ("...", with escapes) or
 * literal ('...'), of one line or of several (three quotes). One of a line ends at a newline
 * too, where toml++ stops with an error. */
static size_t string_end(const char *text, size_t size, size_t i)
{
        char quote = text[i];
        bool multi_line = size - i >= 3 && text[i + 1] == quote && text[i + 2] == quote;
        for (i += multi_line ? 3 : 1; i < size; i++) {
                if (quote == '"' && text[i] == '\\') {
                        i++; /* the escaped character */
                        continue;
                }
                if (!multi_line && text[i] == '\n')
                        return i;
                if (text[i] != quote)
                        continue;
                if (!multi_line)
                        return i + 1;
                if (size - i >= 3 && text[i + 1] == quote && text[i + 2] == quote) {
                        /* Up to two more quotes are the string's own: """a""""" is a"". */
                        size_t end = i + 3;
                        while (end < size && end < i + 5 && text[end] == quote)
                                end++;
                        return end;
                }
        }
        return size;
}

/* toml++ nests a table for each part of a dotted key ("a.b.c = 1", [a.b.c]) without limit
 * and frees its tree recursively: a key of a million parts, which fits in TOML_JSON_TEXT_MAX,
 * overflows the stack before the result's depth can be checked (inline arrays and tables it
 * bounds itself: toml.cc). So the text is read once ahead, outside strings and comments,
 * which are skipped as TOML reads them: words (bare or quoted) joined by dots count as a key
 * of that many parts, brackets and braces as levels. Numbers and times count too ("1.5" as
 * two parts), a header's brackets as levels, and a quote inside a word as part of it (where
 * toml++ stops with an error): this only errs on the safe side, as what it refuses would nest
 * deeper than TOML_JSON_MAX_DEPTH anyway. Returns the offset of the part or bracket that is
 * one too many, or size. */
static size_t too_deep_at(const char *text, size_t size)
{
        unsigned parts = 0, brackets = 0;
        bool after_dot = false;
        for (size_t i = 0; i < size;) {
                char c = text[i];
                if (c == '.') {
                        after_dot = true;
                        i++;
                } else if (is_space(c)) {
                        i++;
                } else if (c == '#') {
                        while (i < size && text[i] != '\n')
                                i++;
                } else if (c == '=' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',') {
                        if (c == '[' || c == '{') {
                                if (++brackets > TOML_JSON_MAX_DEPTH)
                                        return i;
                        } else if ((c == ']' || c == '}') && brackets > 0)
                                brackets--;
                        parts = 0;
                        after_dot = false;
                        i++;
                } else {
                        parts = after_dot ? parts + 1 : 1;
                        after_dot = false;
                        if (parts > TOML_JSON_MAX_DEPTH)
                                return i;
                        if (c == '"' || c == '\'')
                                i = string_end(text, size, i);
                        else /* a bare word; the caller refused NUL bytes */
                                while (i < size && !strchr(" \t\r\n.#=[]{},", text[i]))
                                        i++;
                }
        }
        return size;
}

int toml_parse_json(const char *text, size_t size, const char *origin, json_object **ret,
                    aisb_error **err)
{
        origin = origin ? origin : "TOML";
        if (config_text_check_size(origin, size, TOML_JSON_TEXT_MAX, "codex", err) < 0)
                return -EFBIG;
        if (!text) {
                text = "";
                size = 0;
        }
        /* toml++ reads a NUL as a character like another; a C string would end there. */
        const char *nul = memchr(text, 0, size);
        if (nul)
                return error_at(text, (size_t) (nul - text), origin, -EBADMSG,
                                "not valid TOML: a NUL byte", err);
        size_t deep = too_deep_at(text, size);
        if (deep < size) {
                char what[64];
                (void) snprintf(what, sizeof what, "nested deeper than %d levels", TOML_JSON_MAX_DEPTH);
                return error_at(text, deep, origin, -ELOOP, what, err);
        }

        _cleanup_(problem_done) toml_problem refusal = {};
        json_object *object = NULL;
        int r = toml_text_to_json(text, size, &object, &refusal);
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0)
                return aisb_error_set(err, r, "%s:%u:%u: %s", origin, refusal.line, refusal.column,
                                      one_line(refusal.message));
        *ret = object;
        return 0;
}

int toml_format_json(json_object *o, char **ret_text, aisb_error **err)
{
        if (!json_object_is_type(o, json_type_object))
                return aisb_error_set(err, -EINVAL,
                                      "writing TOML: the value is %s; a TOML document is a table, written from a JSON object",
                                      json_type_to_name(json_object_get_type(o)));
        _cleanup_(problem_done) toml_problem problem = {};
        _cleanup_free_ char *text = NULL;
        int r = toml_json_to_text(o, &text, &problem);
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0)
                return aisb_error_set(err, r, "writing TOML: %s", one_line(problem.message));
        /* What toml_parse_json would not read back is not written. */
        size_t size = strlen(text);
        if (size > TOML_JSON_TEXT_MAX)
                return aisb_error_set(err, -EFBIG,
                                      "writing TOML: %zu bytes, more than the %u MiB a codex config may have",
                                      size, TOML_JSON_TEXT_MAX >> 20);
        *ret_text = steal_pointer(&text);
        return 0;
}
