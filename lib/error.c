/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <stdarg.h>

int aisb_error_code(const aisb_error *error)
{
        return error ? error->code : 0;
}

const char *aisb_error_message(const aisb_error *error)
{
        return error && error->message ? error->message : "unknown error";
}

void aisb_error_free(aisb_error *error)
{
        if (!error)
                return;
        free(error->message);
        free(error);
}

__attribute__((format(printf, 1, 0)))
static char *vformat(const char *fmt, va_list ap)
{
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

int aisb_error_set(aisb_error **err, int code, const char *fmt, ...)
{
        if (code >= 0)
                code = -EIO;
        if (!err || *err)
                return code;
        aisb_error *e = calloc(1, sizeof *e);
        if (!e)
                return code;
        va_list ap;
        va_start(ap, fmt);
        e->message = vformat(fmt, ap);
        va_end(ap);
        e->code = code;
        *err = e;
        return code;
}

int aisb_error_wrap(aisb_error **err, int code, const char *fmt, ...)
{
        if (!err)
                return code < 0 ? code : -EIO;
        if (!*err) {
                /* Nothing to wrap: the prefix is all we know. */
                va_list ap;
                va_start(ap, fmt);
                _cleanup_free_ char *prefix = vformat(fmt, ap);
                va_end(ap);
                return aisb_error_set(err, code, "%s: %s", prefix ? prefix : "error",
                                      strerror(code < 0 ? -code : EIO));
        }
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *prefix = vformat(fmt, ap);
        va_end(ap);
        char *joined = NULL;
        if (prefix && asprintf(&joined, "%s: %s", prefix, (*err)->message) >= 0) {
                free((*err)->message);
                (*err)->message = joined;
        }
        return (*err)->code;
}
