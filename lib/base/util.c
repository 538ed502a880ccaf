/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <ctype.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <strings.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

size_t strv_length(const char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

bool strv_contains(const char *const *v, const char *s)
{
        for (size_t i = 0; v && v[i]; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

char **strv_copy(const char *const *v)
{
        size_t n = strv_length(v);
        char **r = calloc(n + 1, sizeof(char *));
        if (!r)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                r[i] = strdup(v[i]);
                if (!r[i]) {
                        strv_free(r);
                        return NULL;
                }
        }
        return r;
}

int strv_push(char ***v, const char *s)
{
        size_t n = strv_length((const char *const *) *v);
        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        char **r = realloc(*v, (n + 2) * sizeof(char *));
        if (!r)
                return -ENOMEM;
        r[n] = steal_pointer(&copy);
        r[n + 1] = NULL;
        *v = r;
        return 0;
}

int strv_pushf(char ***v, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : strv_push(v, s);
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void strv_sort(char **v)
{
        size_t n = strv_length((const char *const *) v);
        if (n > 1)
                qsort(v, n, sizeof *v, compare_strings);
}

void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

void free_secret(char *s)
{
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

int buffer_append(buffer *b, const void *data, size_t size)
{
        if (size > SIZE_MAX - b->size - 1)
                return -ENOMEM;
        if (b->size + size + 1 > b->allocated) {
                size_t want = b->allocated ? b->allocated : 256;
                while (want < b->size + size + 1)
                        want *= 2;
                char *d = realloc(b->data, want);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->allocated = want;
        }
        if (size)
                memcpy(b->data + b->size, data, size);
        b->size += size;
        b->data[b->size] = 0;
        return 0;
}

int buffer_printf(buffer *b, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = NULL;
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return buffer_append(b, s, (size_t) n);
}

void buffer_free(buffer *b)
{
        free(b->data);
        *b = (buffer) {};
}

char *buffer_steal(buffer *b)
{
        if (!b->data && buffer_append(b, "", 0) < 0)
                return NULL;
        char *d = b->data;
        *b = (buffer) {};
        return d;
}

int parse_bool(const char *s)
{
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

int parse_uint(const char *s, unsigned long long max, unsigned long long *ret)
{
        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        unsigned long long v = 0;
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                unsigned d = (unsigned) (*p - '0');
                if (v > (max - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int parse_size(const char *s, unsigned long long *ret)
{
        size_t len = s ? strlen(s) : 0;
        if (len == 0 || len > 24)
                return -EINVAL;
        char digits[32];
        memcpy(digits, s, len + 1);
        unsigned shift = 0;
        char last = (char) tolower((unsigned char) digits[len - 1]);
        const char *units = "kmgt";
        const char *u = strchr(units, last);
        if (last && u) {
                shift = 10 * (unsigned) (u - units + 1);
                digits[len - 1] = 0;
        } else if (last == 'b') {
                digits[len - 1] = 0;
        }
        unsigned long long v;
        int r = parse_uint(digits, ULLONG_MAX >> shift, &v);
        if (r < 0)
                return r;
        *ret = v << shift;
        return 0;
}
