/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <stdarg.h>

/* What a failure says when there is no memory left to say more: static, so that even then
 * every failing call hands back an error (aisb_error_free() leaves it alone). */
static aisb_error no_memory = { .code = -ENOMEM, .message = (char *) "out of memory" };

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
        if (!error || error == &no_memory)
                return;
        free(error->message);
        free(error);
}

__attribute__((format(printf, 1, 0)))
static char *vformat(const char *fmt, va_list ap)
{
        char *s = NULL;
        return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

int aisb_error_set(aisb_error **err, int code, const char *fmt, ...)
{
        if (code >= 0)
                code = -EIO;
        if (!err || *err)
                return code;
        aisb_error *e = calloc(1, sizeof *e);
        va_list ap;
        va_start(ap, fmt);
        char *message = e ? vformat(fmt, ap) : NULL;
        va_end(ap);
        if (!message) {
                free(e);
                *err = &no_memory;
                return code;
        }
        e->message = message;
        e->code = code;
        *err = e;
        return code;
}

int aisb_error_wrap(aisb_error **err, int code, const char *fmt, ...)
{
        if (!err)
                return code < 0 ? code : -EIO;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *prefix = vformat(fmt, ap);
        va_end(ap);
        /* Nothing to wrap: the prefix is all we know. */
        if (!*err)
                return aisb_error_set(err, code, "%s: %s", prefix ? prefix : "error",
                                      strerror(code < 0 ? -code : EIO));
        char *joined = NULL;
        if (*err != &no_memory && prefix && asprintf(&joined, "%s: %s", prefix, (*err)->message) >= 0) {
                free((*err)->message);
                (*err)->message = joined;
        }
        return (*err)->code;
}

int error_oom(aisb_error **err)
{
        return aisb_error_set(err, -ENOMEM, "out of memory");
}
