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

/* The entry open at fd (its stat in st): put right, said under path. */
static void put_right_fd(sweep *s, int fd, const struct stat *st, const char *path)
{
        bool dir = S_ISDIR(st->st_mode);
        mode_t mode = st->st_mode & 07777, want = mode;
        unsigned what = 0;
        if (S_ISREG(st->st_mode) && (mode & (S_ISUID | S_ISGID))) {
                want &= ~(mode_t) (S_ISUID | S_ISGID);
                what |= MODE_SWEEP_SETID;
        }
        /* A sticky directory's write for all too: another user could add a conftest.py or an
         * .envrc there, which the user's tools run. */
        mode_t writable = (mode_t) (S_IWOTH | (S_IWGRP & ~s->group_write));
        if (mode & writable) {
                want &= ~writable;
                what |= MODE_SWEEP_WRITABLE;
        }
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int r = 0;
        if (has_acl(proc, dir)) {
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
                return;
        }
        if (what) {
                s->result.changed++;
                if (s->fn)
                        s->fn(path, (unsigned) mode, what, s->userdata);
        }
}

static bool changed_since(const sweep *s, const struct stat *st)
{
        return st->st_uid == geteuid() &&
               (long long) st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec >= s->since_ns;
}

static int put_right(const tree_entry *e, void *userdata)
{
        sweep *s = userdata;
        if (e->open_error == -ELOOP || e->open_error == -ENAMETOOLONG) {
                s->result.skipped++;
                return TREE_SKIP;
        }
        if (e->type == DT_LNK)
                return 0; /* a link's mode is nothing; its target is not the walk's */
        /* One look at each entry (most are older than the run, or the user's as they were); a
         * descriptor only for one to change. */
        struct stat st;
        if (fstatat(e->dir, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !changed_since(s, &st))
                return 0;
        /* Through a descriptor of the entry itself: what is changed is what was looked at,
         * never a link's target (the same inode, checked). O_PATH needs no permission on it. */
        ino_t ino = st.st_ino;
        _cleanup_close_ int fd = openat(e->dir, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino != ino || S_ISLNK(st.st_mode) || !changed_since(s, &st))
                return 0;
        put_right_fd(s, fd, &st, e->path);
        return 0;
}

int mode_sweep(int root, long long since_ns, mode_sweep_fn fn, void *userdata, mode_sweep_result *ret,
               aisb_error **err)
{
        mode_t mask = current_umask();
        sweep s = { .since_ns = since_ns, .group_write = (mask & S_IWGRP) ? 0 : S_IWGRP, .fn = fn,
                    .userdata = userdata };
        /* The project itself first: made writable for all, it would let another user replace
         * anything in it, .git too. */
        struct stat st;
        if (fstat(root, &st) == 0 && changed_since(&s, &st))
                put_right_fd(&s, root, &st, ".");
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
