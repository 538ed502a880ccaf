/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seed.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -errno_saved)

/* dest, created component by component from /, each opened with O_NOFOLLOW. */
static int open_dest(const char *dest, char *err, size_t errlen)
{
        char path[4096];
        int errno_saved = ENAMETOOLONG;
        if (strlen(dest) >= sizeof(path))
                return ERR("%s: path too long", dest);
        strcpy(path, dest);
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char *save = NULL;
        for (char *c = strtok_r(path, "/", &save); fd >= 0 && c; c = strtok_r(NULL, "/", &save)) {
                if (mkdirat(fd, c, 0700) < 0 && errno != EEXIST) {
                        errno_saved = errno;
                        close(fd);
                        return ERR("creating %s: %s", dest, strerror(errno_saved));
                }
                int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                errno_saved = errno;
                close(fd);
                fd = next;
        }
        if (fd < 0)
                return ERR("opening %s: %s", dest, strerror(errno_saved));
        return fd;
}

static int copy_file(int from, int to)
{
        char buf[65536];
        for (;;) {
                ssize_t n = read(from, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                for (ssize_t done = 0; done < n;) {
                        ssize_t w = write(to, buf + done, (size_t) (n - done));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -errno;
                        done += w;
                }
        }
}

int seed_copy(const char *src, const char *dest, char *err, size_t errlen)
{
        int errno_saved = 0;
        int to = open_dest(dest, err, errlen);
        if (to < 0)
                return to;
        int from = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = from >= 0 ? fdopendir(from) : NULL;
        if (!d) {
                errno_saved = errno;
                if (from >= 0)
                        close(from);
                close(to);
                return ERR("opening %s: %s", src, strerror(errno_saved));
        }
        int r = 0, files = 0;
        for (struct dirent *e; r == 0 && (e = readdir(d));) {
                if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
                        continue;
                int in = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                struct stat st;
                if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
                        if (in >= 0)
                                close(in);
                        continue; /* only regular files are seeds */
                }
                if (++files > SEED_MAX_FILES || st.st_size > SEED_MAX_FILE) {
                        close(in);
                        errno_saved = EFBIG;
                        r = ERR("%s: more than %d files or one over %d bytes", src, SEED_MAX_FILES, SEED_MAX_FILE);
                        break;
                }
                int out = openat(to, e->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
                r = out < 0 ? -errno : copy_file(in, out);
                if (out >= 0 && close(out) < 0 && r == 0)
                        r = -errno;
                close(in);
                if (r < 0) {
                        errno_saved = -r;
                        r = ERR("copying %s/%s into %s: %s", src, e->d_name, dest, strerror(errno_saved));
                }
        }
        closedir(d);
        close(to);
        return r;
}
