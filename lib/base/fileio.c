/* SPDX-License-Identifier: MIT */
#include "fileio.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size)
{
        _cleanup_(buffer_free) buffer b = {};
        char chunk[8192];
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                if (b.size + (size_t) n > max)
                        return -EFBIG;
                if (buffer_append(&b, chunk, (size_t) n) < 0)
                        return -ENOMEM;
        }
        if (ret_size)
                *ret_size = b.size;
        *ret = buffer_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

int read_lines(int fd, size_t max, size_t line_max, int (*fn)(char *line, void *userdata),
               void *userdata)
{
        _cleanup_free_ char *buf = malloc(line_max + 1);
        if (!buf)
                return -ENOMEM;
        size_t have = 0, total = 0;
        bool skipping = false; /* inside a line longer than line_max */
        for (;;) {
                size_t want = line_max - have;
                if (want > max - total)
                        want = max - total;
                ssize_t n = want ? read(fd, buf + have, want) : 0;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                total += (size_t) n;
                have += (size_t) n;
                size_t start = 0;
                for (char *nl; (nl = memchr(buf + start, '\n', have - start));) {
                        *nl = 0;
                        if (!skipping) {
                                int r = fn(buf + start, userdata);
                                if (r != 0)
                                        return r;
                        }
                        skipping = false;
                        start = (size_t) (nl - buf) + 1;
                }
                memmove(buf, buf + start, have - start);
                have -= start;
                if (n == 0) {
                        /* The end, or the cap: a last line without its newline still counts,
                         * unless the cap cut it. */
                        buf[have] = 0;
                        if (have && !skipping && total < max)
                                return fn(buf, userdata);
                        return 0;
                }
                if (have == line_max) {
                        skipping = true;
                        have = 0;
                }
        }
}

int open_dir_nofollow(int dirfd, const char *path, bool create)
{
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (create && mkdirat(fd, c, 0700) < 0 && errno != EEXIST) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                int saved = errno;
                close(fd);
                if (next < 0)
                        return -saved;
                fd = next;
        }
        return fd;
}

int mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1;; p++) {
                if (*p != '/' && *p != 0)
                        continue;
                char saved = *p;
                *p = 0;
                if (mkdir(copy, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = saved;
                if (!saved)
                        return 0;
        }
}

int write_all(int fd, const void *data, size_t size)
{
        return writev_all(fd, &(struct iovec) { (void *) data, size }, 1);
}

int pread_exactly(int fd, void *buf, size_t size, uint64_t offset)
{
        for (size_t done = 0; done < size;) {
                ssize_t n = pread(fd, (char *) buf + done, size - done, (off_t) (offset + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ENODATA; /* the file ends sooner */
                done += (size_t) n;
        }
        return 0;
}

int writev_all(int fd, struct iovec *iov, size_t n)
{
        while (n > 0) {
                ssize_t w = writev(fd, iov, (int) (n < IOV_MAX ? n : IOV_MAX));
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                /* Skip what was written, resuming inside a partly written piece. */
                while (n > 0 && (size_t) w >= iov->iov_len) {
                        w -= (ssize_t) iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + w;
                        iov->iov_len -= (size_t) w;
                }
        }
        return 0;
}

void remove_below(int dir, int depth)
{
        int fd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        for (struct dirent *e; (e = readdir(d));) {
                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
                        continue;
                if (depth > 1) {
                        _cleanup_close_ int sub = openat(dirfd(d), e->d_name,
                                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                remove_below(sub, depth - 1);
                }
                (void) unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

int read_file_at(int dir, const char *name, size_t max, char **ret, size_t *ret_size)
{
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        return read_full_fd(fd, max, ret, ret_size);
}

int fd_chmod(int fd, mode_t mode)
{
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        return chmod(proc, mode) < 0 ? -errno : 0;
}

int write_file_at(int dir, const char *name, const void *data, size_t size)
{
        char tmp[NAME_MAX + 1];
        if (snprintf(tmp, sizeof tmp, ".%s.new", name) >= (int) sizeof tmp)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, size);
        if (r >= 0 && renameat(dir, tmp, dir, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dir, tmp, 0);
        return r;
}
