/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

#define SYSTEM_MAX (16 * 1024 * 1024)
#define EXTRA_MAX (64 * 1024)

/* A regular file's bytes, at most max, into a new buffer. */
static int read_bounded(const char *path, size_t max, char **ret, size_t *ret_size, int flags)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
        struct stat st;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t) st.st_size > max) {
                int e = S_ISREG(st.st_mode) ? -EFBIG : -EBADFD;
                close(fd);
                return e;
        }
        char *buf = malloc((size_t) st.st_size + 1);
        size_t have = 0;
        while (buf && have < (size_t) st.st_size) {
                ssize_t n = read(fd, buf + have, (size_t) st.st_size - have);
                if (n <= 0)
                        break;
                have += (size_t) n;
        }
        close(fd);
        if (!buf)
                return -ENOMEM;
        buf[have] = '\0';
        *ret = buf;
        *ret_size = have;
        return 0;
}

static int write_all(int fd, const char *data, size_t size)
{
        while (size > 0) {
                ssize_t n = write(fd, data, size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -errno;
                data += n;
                size -= (size_t) n;
        }
        return 0;
}

int trust_bundle_write(const char *system, const char *extra, const char *dest, char *err, size_t errlen)
{
        char *sys = NULL, *add = NULL;
        size_t sys_size = 0, add_size = 0;
        int r = read_bounded(extra, EXTRA_MAX, &add, &add_size, O_NOFOLLOW);
        if (r < 0) {
                snprintf(err, errlen, "%s: %s", extra, strerror(-r));
                return r;
        }
        if (!strstr(add, "-----BEGIN CERTIFICATE-----")) {
                free(add);
                snprintf(err, errlen, "%s: no certificate", extra);
                return -EBADMSG;
        }
        r = read_bounded(system, SYSTEM_MAX, &sys, &sys_size, 0);
        if (r < 0 && r != -ENOENT) {
                free(add);
                snprintf(err, errlen, "%s: %s", system, strerror(-r));
                return r;
        }
        int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                snprintf(err, errlen, "%s: %s", dest, strerror(-r));
        } else {
                r = write_all(fd, sys ? sys : "", sys_size);
                if (r >= 0 && sys_size && sys[sys_size - 1] != '\n')
                        r = write_all(fd, "\n", 1);
                if (r >= 0)
                        r = write_all(fd, add, add_size);
                if (close(fd) < 0 && r >= 0)
                        r = -errno;
                if (r < 0)
                        snprintf(err, errlen, "writing %s: %s", dest, strerror(-r));
        }
        free(sys);
        free(add);
        return r;
}
