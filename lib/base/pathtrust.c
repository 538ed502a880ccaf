/* SPDX-License-Identifier: MIT */
#include "pathtrust.h"

#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>

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
