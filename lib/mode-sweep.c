/* SPDX-License-Identifier: MIT */
#include "mode-sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fileio.h"
#include "tree-walk.h"
#include "util.h"

typedef struct sweep {
        long long since_ns;
        mode_t group_write; /* S_IWGRP when the user's umask gives it to new files, else 0 */
        mode_sweep_fn fn;
        void *userdata;
        mode_sweep_result result;
        int failed; /* the first change that failed, negative */
} sweep;

/* The user's umask, from /proc (reading it with umask(2) would change it for every thread
 * meanwhile); 022 when it cannot be read. */
static mode_t current_umask(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        unsigned mask = 022;
        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "Umask: %o", &mask) == 1)
                        break;
        return (mode_t) mask;
}

static bool has_acl(const char *proc, bool dir)
{
        return getxattr(proc, "system.posix_acl_access", NULL, 0) >= 0 ||
               (dir && getxattr(proc, "system.posix_acl_default", NULL, 0) >= 0);
}

static int put_right(const tree_entry *e, void *userdata)
{
        sweep *s = userdata;
        if (e->open_error == -ELOOP || e->open_error == -ENAMETOOLONG) {
                s->result.skipped++;
                return TREE_SKIP;
        }
        if (e->type != DT_REG && e->type != DT_DIR)
                return 0;
        /* One look at each entry (most are older than the run, or the user's as they were); a
         * descriptor only for one to change. */
        struct stat st;
        if (fstatat(e->dir, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid() ||
            (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec < s->since_ns)
                return 0;
        /* Through a descriptor of the entry itself: what is changed is what was looked at,
         * never a link's target (the same inode, checked). O_PATH needs no permission on it. */
        ino_t ino = st.st_ino;
        _cleanup_close_ int fd = openat(e->dir, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino != ino || st.st_uid != geteuid())
                return 0;
        bool dir = S_ISDIR(st.st_mode);
        if (!dir && !S_ISREG(st.st_mode))
                return 0;
        mode_t mode = st.st_mode & 07777, want = mode;
        unsigned what = 0;
        if (!dir && (mode & (S_ISUID | S_ISGID))) {
                want &= ~(mode_t) (S_ISUID | S_ISGID);
                what |= MODE_SWEEP_SETID;
        }
        mode_t writable = (mode_t) (S_IWOTH | (S_IWGRP & ~s->group_write));
        if ((mode & writable) && !(dir && (mode & S_ISVTX))) {
                want &= ~writable;
                what |= MODE_SWEEP_WRITABLE;
        }
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        bool acl = has_acl(proc, dir);
        int r = 0;
        if (acl) {
                /* Without its ACL the entry falls back to its mode bits, which are swept too. */
                if ((removexattr(proc, "system.posix_acl_access") < 0 && errno != ENODATA) ||
                    (dir && removexattr(proc, "system.posix_acl_default") < 0 && errno != ENODATA))
                        r = -errno;
                what |= MODE_SWEEP_ACL;
        }
        if (r >= 0 && want != mode)
                r = fd_chmod(fd, want);
        if (r < 0) {
                if (!s->failed)
                        s->failed = r;
                return 0;
        }
        if (what) {
                s->result.changed++;
                if (s->fn)
                        s->fn(e->path, (unsigned) mode, what, s->userdata);
        }
        return 0;
}

int mode_sweep(int root, long long since_ns, mode_sweep_fn fn, void *userdata, mode_sweep_result *ret,
               aisb_error **err)
{
        mode_t mask = current_umask();
        sweep s = { .since_ns = since_ns, .group_write = (mask & S_IWGRP) ? 0 : S_IWGRP, .fn = fn,
                    .userdata = userdata };
        int r = tree_walk(root, 0, TREE_WALK_FIX_ACCESS | TREE_WALK_SKIP_DEEP, put_right, &s);
        if (ret)
                *ret = s.result;
        if (r == -E2BIG)
                return aisb_error_set(err, r, "the project has more entries than aisb looks through (%d): those "
                                      "further in were not checked for setuid, setgid or writable modes the run "
                                      "left (find . -perm /6002 lists them)", TREE_DEFAULT_MAX_ENTRIES);
        if (r < 0)
                return aisb_error_set(err, r, "looking for the modes the run left: %s (find . -perm /6002 lists "
                                      "them)", strerror(-r));
        if (s.failed)
                return aisb_error_set(err, s.failed, "a mode the run left could not be put right: %s (find . -perm "
                                      "/6002 lists setuid, setgid and world-writable entries)", strerror(-s.failed));
        return 0;
}
