/* SPDX-License-Identifier: MIT */
#include "tree-write.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <time.h>

#define COPY_CHUNK (1 << 20)

static int random_name(char *buf, size_t size)
{
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != sizeof r)
                r = (uint64_t) getpid() << 32 ^ (uint64_t) time(NULL) ^ (uintptr_t) buf;
        return snprintf(buf, size, ".aisb-tmp-%016llx", (unsigned long long) r) < (int) size ? 0 : -ENAMETOOLONG;
}

int tree_temp_file(int dir, char *ret_name, size_t size)
{
        for (int tries = 0; tries < 16; tries++) {
                int r = random_name(ret_name, size);
                if (r < 0)
                        return r;
                int fd = openat(dir, ret_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0)
                        return fd;
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

/* One stretch of data, [from, to), through memory (hashed) or in the kernel. */
static int copy_range(int src, int dst, uint64_t from, uint64_t to, digest *hash, char *buf)
{
        while (from < to) {
                size_t want = to - from > COPY_CHUNK ? COPY_CHUNK : (size_t) (to - from);
                if (!hash) {
                        loff_t in = (loff_t) from, out = (loff_t) from;
                        ssize_t n = copy_file_range(src, &in, dst, &out, want, 0);
                        if (n > 0) {
                                from += (uint64_t) n;
                                continue;
                        }
                        if (n == 0)
                                return -ENODATA;
                        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                                return -errno;
                        /* Not between these two: through memory from here. */
                }
                ssize_t n = pread(src, buf, want, (off_t) from);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ENODATA;
                if (hash) {
                        int r = digest_update(hash, buf, (size_t) n);
                        if (r < 0)
                                return r;
                }
                for (size_t done = 0; done < (size_t) n;) {
                        ssize_t w = pwrite(dst, buf + done, (size_t) n - done, (off_t) (from + done));
                        if (w < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        done += (size_t) w;
                }
                from += (uint64_t) n;
        }
        return 0;
}

/* A hole's zeros into the hash. */
static int hash_zeros(digest *hash, uint64_t n, char *buf)
{
        memset(buf, 0, COPY_CHUNK);
        while (n > 0) {
                size_t take = n > COPY_CHUNK ? COPY_CHUNK : (size_t) n;
                int r = digest_update(hash, buf, take);
                if (r < 0)
                        return r;
                n -= take;
        }
        return 0;
}

int tree_copy_data(int src, int dst, uint64_t size, digest *hash)
{
        _cleanup_free_ char *buf = malloc(COPY_CHUNK);
        if (!buf)
                return -ENOMEM;
        uint64_t at = 0;
        int r = 0;
        while (r >= 0 && at < size) {
                off_t data = lseek(src, (off_t) at, SEEK_DATA);
                if (data < 0 && errno == ENXIO)
                        data = (off_t) size; /* a hole to the end */
                else if (data < 0)
                        data = (off_t) at; /* no hole information: all data */
                if ((uint64_t) data > size)
                        data = (off_t) size;
                if ((uint64_t) data > at && hash)
                        r = hash_zeros(hash, (uint64_t) data - at, buf);
                at = (uint64_t) data;
                if (r < 0 || at >= size)
                        break;
                off_t hole = lseek(src, (off_t) at, SEEK_HOLE);
                if (hole < 0 || (uint64_t) hole > size)
                        hole = (off_t) size;
                if ((uint64_t) hole <= at)
                        hole = (off_t) size;
                r = copy_range(src, dst, at, (uint64_t) hole, hash, buf);
                at = (uint64_t) hole;
        }
        if (r >= 0 && ftruncate(dst, (off_t) size) < 0)
                r = -errno;
        return r;
}

int tree_put_file(int dir, const char *name, int src, uint64_t size, mode_t mode, const struct timespec *mtime)
{
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int fd = tree_temp_file(dir, tmp, sizeof tmp);
        if (fd < 0)
                return fd;
        int r = tree_copy_data(src, fd, size, NULL);
        if (r >= 0 && fchmod(fd, mode & 0777) < 0)
                r = -errno;
        if (r >= 0 && mtime) {
                const struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, *mtime };
                if (futimens(fd, times) < 0)
                        r = -errno;
        }
        if (r >= 0 && renameat(dir, tmp, dir, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dir, tmp, 0);
        return r;
}

int tree_put_link(int dir, const char *name, const char *target)
{
        char tmp[NAME_MAX + 1];
        for (int tries = 0;; tries++) {
                int r = random_name(tmp, sizeof tmp);
                if (r < 0)
                        return r;
                if (symlinkat(target, dir, tmp) == 0)
                        break;
                if (errno != EEXIST || tries == 15)
                        return -errno;
        }
        if (renameat(dir, tmp, dir, name) < 0) {
                int r = -errno;
                (void) unlinkat(dir, tmp, 0);
                return r;
        }
        return 0;
}

int tree_put_dir(int dir, const char *name, mode_t mode)
{
        if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOTDIR || errno == ELOOP ? -EEXIST : -errno;
        return fchmod(fd, mode & 0777) < 0 ? -errno : 0;
}
