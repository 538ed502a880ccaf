/* SPDX-License-Identifier: MIT */
/*
 * Protected paths after the run (protect.h): what is new or replaced where the plan watched,
 * and every git directory made below the project, moved into the quarantine. What is moved
 * is reached from directory descriptors without following a link, renamed with
 * RENAME_NOREPLACE, and a directory the agent locked is given back to its owner first.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protect.h"
#include "protect-git.h"
#include "fileio.h"
#include "tree-walk.h"

typedef struct sweep {
        const protect_plan *plan;
        const char *quarantine_dir;
        int qfd;
        protect_found_fn fn;
        void *userdata;
        size_t moved, failed;
        aisb_error **err;
} sweep;

static void make_dir_ours(int dir)
{
        struct stat st;
        if (fstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
                (void) fchmod(dir, (st.st_mode & 07777) | S_IRWXU);
}

/* renameat2(RENAME_NOREPLACE) to name, or to name.1 ... name.99 where that is taken (a
 * directory made for an entry quarantined below it, a name the agent made first): the
 * name used, or NULL with errno. */
static char *rename_unique(int from_dir, const char *from, int to_dir, const char *name)
{
        for (unsigned i = 0; i < 100; i++) {
                char *to = NULL;
                if ((i ? asprintf(&to, "%s.%u", name, i) : asprintf(&to, "%s", name)) < 0)
                        return NULL;
                if (renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE) == 0)
                        return to;
                int e = errno;
                free(to);
                if (e != EEXIST && e != ENOTEMPTY) {
                        errno = e;
                        return NULL;
                }
        }
        errno = EEXIST;
        return NULL;
}

/* dir/name renamed into to/leaf (a unique name there: *now gets it), or, across filesystems,
 * aside where it is, its HEAD renamed too so that git run inside it no longer takes it for a
 * repository (checked: a HEAD still there fails the move). */
static int move_once(sweep *s, int dir, const char *name, int to, const char *leaf, const char *was, char **now)
{
        _cleanup_free_ char *used = rename_unique(dir, name, to, leaf);
        if (used) {
                if (!streq(used, leaf)) {
                        char *longer = NULL;
                        if (asprintf(&longer, "%s%s", *now, used + strlen(leaf)) < 0)
                                return -ENOMEM;
                        free(*now);
                        *now = longer;
                }
                return 0;
        }
        int r = -errno;
        if (r != -EXDEV)
                return r;
        const char *stamp = strrchr(s->quarantine_dir, '/');
        _cleanup_free_ char *aside_name = NULL;
        if (asprintf(&aside_name, "%s.aisb-quarantined-%s", name, stamp ? stamp + 1 : "run") < 0)
                return -ENOMEM;
        _cleanup_free_ char *aside = rename_unique(dir, name, dir, aside_name);
        if (!aside)
                return -errno;
        _cleanup_close_ int moved = openat(dir, aside, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (moved >= 0) {
                free(rename_unique(moved, "HEAD", moved, "HEAD.aisb-quarantined"));
                struct stat st;
                if (fstatat(moved, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return -EEXIST; /* still a git directory: said as not moved */
        }
        free(*now);
        const char *cut = strrchr(was, '/');
        *now = NULL;
        if (cut ? asprintf(now, "%.*s/%s", (int) (cut - was), was, aside) < 0 : !(*now = strdup(aside)))
                return -ENOMEM;
        return 0;
}

/* dir/name (shown as was) into the quarantine, as rel below it. What cannot be moved is
 * reported (now NULL) and the sweep goes on: one entry the agent made immovable must not
 * keep the rest in place. -ENOMEM only. */
static int quarantine(sweep *s, int dir, const char *name, const char *was, const char *rel, const char *why)
{
        int r = 0;
        if (s->qfd < 0) {
                r = mkdir_p(s->quarantine_dir, 0700);
                s->qfd = r < 0 ? r : open(s->quarantine_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (s->qfd < 0 && r >= 0)
                        r = -errno;
        }
        /* Below the quarantine, the same directories as below the root, however deep (a path
         * longer than tree_open_dir takes is the agent's to make). */
        _cleanup_free_ char *dirs = strdup(rel), *now = path_join(s->quarantine_dir, rel);
        if (!dirs || !now)
                return error_oom(s->err);
        _cleanup_close_ int to = s->qfd >= 0 ? fcntl(s->qfd, F_DUPFD_CLOEXEC, 3) : -1;
        char *slash = strrchr(dirs, '/'), *save = NULL;
        const char *leaf = slash ? slash + 1 : dirs;
        if (slash) {
                *slash = 0;
                for (char *c = strtok_r(dirs, "/", &save); to >= 0 && c; c = strtok_r(NULL, "/", &save)) {
                        (void) mkdirat(to, c, 0700);
                        int next = openat(to, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        close(to);
                        to = next;
                }
        }
        if (r >= 0 && to < 0)
                r = -errno;
        if (r >= 0)
                r = move_once(s, dir, name, to, leaf, was, &now);
        if (r == -EACCES || r == -EPERM) {
                /* A directory moved to another parent must be writable itself; its parent too. */
                make_dir_ours(dir);
                (void) tree_give_access(dir, name, NULL);
                r = move_once(s, dir, name, to, leaf, was, &now);
        }
        if (r == -ENOMEM)
                return error_oom(s->err);
        if (r < 0) {
                s->failed++;
                _cleanup_free_ char *reason = NULL;
                if (asprintf(&reason, "%s, and could not be moved aside (%s): look at it before running git or an "
                             "editor there", why, strerror(-r)) < 0)
                        return error_oom(s->err);
                if (s->fn)
                        s->fn(was, NULL, reason, s->userdata);
                return 0;
        }
        s->moved++;
        if (s->fn)
                s->fn(was, now, why, s->userdata);
        return 0;
}

static char *shown_path(const protect_plan *plan, size_t root, const char *rel)
{
        return path_join(root == 0 ? plan->project : plan->outside[root - 1], rel);
}

static int quarantine_rel(sweep *s, int dir, const char *name, size_t root, const char *rel, const char *why)
{
        _cleanup_free_ char *was = shown_path(s->plan, root, rel), *qrel = NULL;
        if (!was || (root == 0 ? !(qrel = strdup(rel)) : asprintf(&qrel, "outside-%zu/%s", root, rel) < 0))
                return error_oom(s->err);
        return quarantine(s, dir, name, was, qrel, why);
}

static int sweep_new_git(int dir, const char *name, const char *rel, void *userdata)
{
        sweep *s = userdata;
        if (protect_watched(s->plan, 0, rel))
                return 0;
        if (streq(name, ".git"))
                return quarantine_rel(s, dir, name, 0, rel, "a git directory or .git file made during the run");
        /* A directory git takes for a git directory (it may have been the user's before the
         * run: src/ given a HEAD, objects and refs): what makes it one goes, the rest stays. */
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return 0;
        static const char *const makers[] = { "HEAD", "commondir" };
        for (size_t i = 0; i < ELEMENTSOF(makers); i++) {
                struct stat st;
                if (fstatat(fd, makers[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                _cleanup_free_ char *entry = path_join(rel, makers[i]);
                int r = entry ? quarantine_rel(s, fd, makers[i], 0, entry,
                                               "what makes its directory a git directory, made during the run")
                              : error_oom(s->err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int protect_sweep(const protect_plan *plan, const char *quarantine_dir, protect_found_fn fn, void *userdata,
                  bool *ret_cut, aisb_error **err)
{
        sweep s = { .plan = plan, .quarantine_dir = quarantine_dir, .qfd = -1, .fn = fn, .userdata = userdata,
                    .err = err };
        size_t n_roots = 1 + strv_length((const char *const *) plan->outside);
        _cleanup_free_ int *roots = malloc(n_roots * sizeof *roots);
        if (!roots)
                return error_oom(err);
        for (size_t i = 0; i < n_roots; i++) {
                const char *path = i == 0 ? plan->project : plan->outside[i - 1];
                roots[i] = open_absolute_dir(path);
                const char *slash = strrchr(path, '/');
                if (roots[i] == -EACCES && slash && slash > path) {
                        /* Made unreadable from inside: the user's own again. */
                        _cleanup_free_ char *up = strndup(path, (size_t) (slash - path));
                        _cleanup_close_ int parent = up ? open_absolute_dir(up) : -1;
                        if (parent >= 0)
                                (void) tree_give_access(parent, slash + 1, NULL);
                        roots[i] = open_absolute_dir(path);
                }
        }
        int r = 0;
        struct stat st;
        if (roots[0] < 0 || fstat(roots[0], &st) < 0 || (unsigned long long) st.st_dev != plan->project_dev ||
            (unsigned long long) st.st_ino != plan->project_ino)
                r = aisb_error_set(err, -ESTALE, "%s is no longer the directory the run began in: its git and editor "
                                   "settings were not checked; look at them before running git there",
                                   plan->project);
        for (size_t i = 0; r >= 0 && i < plan->n_watch; i++) {
                const protect_watch *w = &plan->watch[i];
                if (roots[w->root] < 0)
                        continue;
                const char *base;
                _cleanup_close_ int parent = tree_open_parent(roots[w->root], w->rel, &base);
                if (parent < 0)
                        continue;
                if (w->is_dir_of_names) {
                        _cleanup_strv_free_ char **now = NULL;
                        _cleanup_close_ int dir = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                        if (dir < 0 || tree_dir_names(dir, &now) < 0)
                                continue;
                        for (size_t j = 0; r >= 0 && now[j]; j++) {
                                if (strv_contains((const char *const *) w->names, now[j]))
                                        continue;
                                _cleanup_free_ char *rel = path_join(w->rel, now[j]);
                                size_t n = strlen(w->rel);
                                bool replace = n >= 12 && streq(w->rel + n - 12, "refs/replace");
                                r = rel ? quarantine_rel(&s, dir, now[j], w->root, rel,
                                                         replace ? "a replace ref made during the run (git log and "
                                                                   "git show would show another object in its place)"
                                                                 : "a git directory made during the run")
                                        : error_oom(err);
                        }
                        continue;
                }
                if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone: nothing there for git to use */
                long long ctime_ns = (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
                if (!w->existed)
                        r = quarantine_rel(&s, parent, base, w->root, w->rel, "new since the run began");
                else if (!w->mounted &&
                         ((unsigned long long) st.st_dev != w->dev || (unsigned long long) st.st_ino != w->ino ||
                          (S_ISLNK(st.st_mode) && ctime_ns != w->ctime_ns)))
                        r = quarantine_rel(&s, parent, base, w->root, w->rel, "replaced during the run");
        }
        if (r >= 0 && plan->packed_gitdir && roots[plan->packed_root] >= 0 &&
            git_packed_replace_refs(roots[plan->packed_root], plan->packed_gitdir) > plan->packed_replace && fn) {
                _cleanup_free_ char *gitdir = shown_path(plan, plan->packed_root, plan->packed_gitdir);
                _cleanup_free_ char *packed = gitdir ? path_join(gitdir, "packed-refs") : NULL;
                if (!packed)
                        r = error_oom(err);
                else
                        fn(packed, NULL, "changed during the run to hold more replace refs: git log and git show "
                           "would show other objects than the commits hold (read the agent's commits with git "
                           "--no-replace-objects log -p, and remove them with git replace -d)", userdata);
        }
        bool cut = false;
        if (r >= 0 && plan->git)
                r = git_dirs_walk(roots[0], true, sweep_new_git, &s, ret_cut ? ret_cut : &cut);
        for (size_t i = 0; i < n_roots; i++)
                if (roots[i] >= 0)
                        close(roots[i]);
        if (s.qfd >= 0)
                close(s.qfd);
        if (r >= 0 && s.failed)
                r = aisb_error_set(err, -EIO, "%zu of what the run left at protected paths could not be moved "
                                   "aside (named above)", s.failed);
        return r < 0 ? r : (int) s.moved;
}
