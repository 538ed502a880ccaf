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

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size)
{
        buffer b = {};
        char chunk[8192];
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        buffer_free(&b);
                        return r;
                }
                if (n == 0)
                        break;
                if (b.size + (size_t) n > max) {
                        buffer_free(&b);
                        return -EFBIG;
                }
                if (buffer_append(&b, chunk, (size_t) n) < 0) {
                        buffer_free(&b);
                        return -ENOMEM;
                }
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

/* Open (creating) dir/sub/... one component at a time, never following a symlink. */
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

/* "uid 1005 (eve)", or "uid 1005" for a uid with no name. */
static void describe_uid(uid_t uid, char *buf, size_t size)
{
        struct passwd pw, *found = NULL;
        char names[1024];
        if (getpwuid_r(uid, &pw, names, sizeof names, &found) == 0 && found)
                snprintf(buf, size, "uid %u (%s)", (unsigned) uid, found->pw_name);
        else
                snprintf(buf, size, "uid %u", (unsigned) uid);
}

/* One component, as lstat saw it. A socket's own mode bits say who may connect, not who may
 * replace it: only directories are checked for writers. */
static int check_component(const char *path, const struct stat *st, uid_t uid, char *reason,
                           size_t size)
{
        if (st->st_uid != uid && st->st_uid != 0) {
                char owner[300];
                describe_uid(st->st_uid, owner, sizeof owner);
                snprintf(reason, size, "%s belongs to %s", path, owner);
                return -EPERM;
        }
        if (!S_ISDIR(st->st_mode))
                return 0;
        bool others = (st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && st->st_gid != 0);
        /* /tmp: anyone may add names, only an entry's owner (or root) may replace it, and the
         * entry's own owner is checked next. */
        if (!others || (st->st_uid == 0 && (st->st_mode & S_ISVTX)))
                return 0;
        snprintf(reason, size, "%s is writable by others (mode %04o)", path,
                 (unsigned) (st->st_mode & 07777));
        return -EPERM;
}

/* Walk path from / one component at a time, checking each as lstat sees it. A symlink is
 * replaced by its target in place and the walk starts over on the result, so every symlink
 * on the way is checked where it stands: one another user could swap later must not pass
 * because it points somewhere good now. */
static int check_path_trusted(const char *path, uid_t uid, unsigned links, char *reason,
                              size_t size)
{
        if (path[0] != '/') {
                snprintf(reason, size, "%s is not an absolute path", path);
                return -EINVAL;
        }
        _cleanup_free_ char *prefix = malloc(strlen(path) + 2);
        if (!prefix)
                return -ENOMEM;
        strcpy(prefix, "/");
        size_t len = 1;
        for (const char *p = path;;) {
                struct stat st;
                if (lstat(prefix, &st) < 0) {
                        int r = -errno;
                        snprintf(reason, size, "%s: %s", prefix, strerror(errno));
                        return r;
                }
                int r = check_component(prefix, &st, uid, reason, size);
                if (r < 0)
                        return r;
                if (S_ISLNK(st.st_mode)) {
                        /* Like the kernel's limit: a loop ends here. */
                        if (links >= 40) {
                                snprintf(reason, size, "%s: too many levels of symbolic links", path);
                                return -ELOOP;
                        }
                        char target[PATH_MAX];
                        ssize_t n = readlink(prefix, target, sizeof target - 1);
                        if (n < 0) {
                                r = -errno;
                                snprintf(reason, size, "%s: %s", prefix, strerror(errno));
                                return r;
                        }
                        target[n] = 0;
                        /* target, relative to the symlink's directory, then the rest. */
                        char *slash = strrchr(prefix, '/');
                        slash[slash == prefix ? 1 : 0] = 0;
                        _cleanup_free_ char *next = NULL;
                        if (asprintf(&next, "%s%s%s%s", target[0] == '/' ? "" : prefix,
                                     target[0] == '/' || streq(prefix, "/") ? "" : "/", target, p) < 0)
                                return -ENOMEM;
                        return check_path_trusted(next, uid, links + 1, reason, size);
                }
                while (*p == '/')
                        p++;
                if (!*p)
                        return 0;
                size_t n = strcspn(p, "/");
                if (len > 1)
                        prefix[len++] = '/';
                memcpy(prefix + len, p, n);
                len += n;
                prefix[len] = 0;
                p += n;
        }
}

int path_check_trusted(const char *path, uid_t uid, char *reason, size_t reason_size)
{
        char ignored[1];
        if (!reason || reason_size == 0) {
                reason = ignored;
                reason_size = sizeof ignored;
        }
        reason[0] = 0;
        return check_path_trusted(path, uid, 0, reason, reason_size);
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

struct digest {
        struct sha256_ctx nettle;
};

int digest_new(digest **ret)
{
        digest *s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        nettle_sha256_init(&s->nettle);
        *ret = s;
        return 0;
}

int digest_update(digest *s, const void *data, size_t size)
{
        nettle_sha256_update(&s->nettle, size, data);
        return 0;
}

int digest_update_fd(digest *s, int fd, uint64_t size)
{
        uint8_t buf[64 * 1024];
        for (uint64_t off = 0; off < size;) {
                size_t want = size - off < sizeof buf ? (size_t) (size - off) : sizeof buf;
                int r = pread_exactly(fd, buf, want, off);
                if (r < 0)
                        return r;
                nettle_sha256_update(&s->nettle, want, buf);
                off += want;
        }
        return 0;
}

int digest_end_hex(digest *s, size_t hex_chars, char **ret)
{
        uint8_t sum[SHA256_DIGEST_SIZE];
        if (hex_chars > 2 * SHA256_DIGEST_SIZE || hex_chars % 2)
                return -EINVAL;
        nettle_sha256_digest(&s->nettle, sizeof sum, sum);
        char *hex = malloc(hex_chars + 1);
        if (!hex)
                return -ENOMEM;
        for (size_t i = 0; i < hex_chars / 2; i++)
                snprintf(hex + 2 * i, 3, "%02x", sum[i]);
        hex[hex_chars] = 0;
        *ret = hex;
        return 0;
}

void digest_free(digest *s)
{
        free(s);
}

int sha256_hex(const void *data, size_t size, size_t hex_chars, char **ret)
{
        _cleanup_(digest_freep) digest *s = NULL;
        int r = digest_new(&s);
        if (r < 0)
                return r;
        r = digest_update(s, data, size);
        return r < 0 ? r : digest_end_hex(s, hex_chars, ret);
}

int host_own_addresses(char ***ret)
{
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0)
                return -errno;
        _cleanup_strv_free_ char **addresses = NULL;
        int r = 0;
        for (struct ifaddrs *i = list; i && r >= 0; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                char text[INET6_ADDRSTRLEN];
                const void *addr = i->ifa_addr->sa_family == AF_INET
                                           ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                                           : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                if (inet_ntop(i->ifa_addr->sa_family, addr, text, sizeof text))
                        r = strv_push(&addresses, text);
        }
        freeifaddrs(list);
        if (r < 0)
                return r;
        *ret = steal_pointer(&addresses);
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
