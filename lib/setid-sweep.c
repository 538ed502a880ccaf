/* SPDX-License-Identifier: MIT */
#include "setid-sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "tree-walk.h"
#include "util.h"

typedef struct sweep {
        long long since_ns;
        setid_found_fn fn;
        void *userdata;
        size_t stripped;
        int failed; /* the first chmod that failed, negative */
} sweep;

static int strip(const tree_entry *e, void *userdata)
{
        sweep *s = userdata;
        if (e->type != DT_REG)
                return 0;
        /* Through a descriptor of the entry itself: what is changed is what was looked at,
         * never a link's target. O_PATH needs no permission on the file. */
        _cleanup_close_ int fd = openat(e->dir, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & (S_ISUID | S_ISGID)))
                return 0;
        long long ctime_ns = (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        if (ctime_ns < s->since_ns || st.st_uid != geteuid())
                return 0;
        int r = fd_chmod(fd, st.st_mode & 07777 & ~(mode_t) (S_ISUID | S_ISGID));
        if (r < 0) {
                if (!s->failed)
                        s->failed = r;
                return 0;
        }
        s->stripped++;
        if (s->fn)
                s->fn(e->path, (unsigned) (st.st_mode & 07777), s->userdata);
        return 0;
}

int setid_sweep(int root, long long since_ns, setid_found_fn fn, void *userdata, size_t *ret_stripped,
                aisb_error **err)
{
        sweep s = { .since_ns = since_ns, .fn = fn, .userdata = userdata };
        int r = tree_walk(root, 0, TREE_WALK_FIX_ACCESS, strip, &s);
        if (ret_stripped)
                *ret_stripped = s.stripped;
        if (r == -E2BIG || r == -ELOOP || r == -ENAMETOOLONG)
                return aisb_error_set(err, r, "the project is larger, deeper or longer-named than aisb looks "
                                      "through (%d entries, %d deep, paths of %d bytes): files further in were not "
                                      "checked for setuid and setgid bits (find . -perm /6000 lists them)",
                                      TREE_DEFAULT_MAX_ENTRIES, TREE_MAX_DEPTH, TREE_PATH_MAX);
        if (r < 0)
                return aisb_error_set(err, r, "looking for setuid and setgid files the run left: %s "
                                      "(find . -perm /6000 lists them)", strerror(-r));
        if (s.failed)
                return aisb_error_set(err, s.failed, "a setuid or setgid file the run left kept its bit: %s "
                                      "(find . -perm /6000 lists them; chmod ug-s removes it)", strerror(-s.failed));
        return 0;
}
