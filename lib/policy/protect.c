/* SPDX-License-Identifier: MIT */
/*
 * Protected paths (protect.h): the plan made before a run (the sweep after it is
 * protect-sweep.c, git's files protect-git.c).
 *
 * Everything here reads a tree the agent writes. Each path is walked a component at a time
 * from a directory descriptor with O_NOFOLLOW (a link on the way is never followed, the link
 * itself is what is looked at), directories are opened with O_NONBLOCK, files read are
 * regular and bounded, and what is mounted is named with the device and inode it had when it
 * was looked at, which the entrypoint compares before the command starts.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protect.h"
#include "protect-git.h"
#include "util.h"
#include "fileio.h"
#include "pathtrust.h"
#include "tree-walk.h"

/* ---- paths below a root, never through a link: what the plan, the sweep and protect-git.c share ---- */

char *path_join(const char *a, const char *b)
{
        char *s = NULL;
        if (!a || !*a)
                return strdup(b);
        if (!b || !*b)
                return strdup(a);
        return asprintf(&s, "%s%s%s", a, streq(a, "/") ? "" : "/", b) < 0 ? NULL : s;
}

char *git_first_line(char *text, const char *prefix)
{
        if (prefix) {
                size_t n = strlen(prefix);
                if (strncmp(text, prefix, n) != 0)
                        return NULL;
                text += n;
                while (*text == ' ' || *text == '\t')
                        text++;
        }
        text[strcspn(text, "\r\n")] = 0;
        return *text ? text : NULL;
}

char *path_resolve(const char *base, const char *rel)
{
        _cleanup_free_ char *whole = rel[0] == '/' ? strdup(rel) : path_join(base, rel);
        if (!whole)
                return NULL;
        size_t n = strlen(whole) + 2;
        char *out = malloc(n);
        if (!out)
                return NULL;
        out[0] = 0;
        char *save = NULL;
        for (char *c = strtok_r(whole, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "."))
                        continue;
                if (streq(c, "..")) {
                        char *slash = strrchr(out, '/');
                        if (slash)
                                *slash = 0;
                        continue;
                }
                strcat(out, "/");
                strcat(out, c);
        }
        if (!out[0])
                strcpy(out, "/");
        return out;
}

const char *path_inside(const char *path, const char *top)
{
        size_t n = strlen(top);
        if (strncmp(path, top, n) != 0)
                return NULL;
        if (path[n] == '/')
                return path + n + 1;
        return path[n] == 0 ? "" : NULL;
}

int open_absolute_dir(const char *path)
{
        if (path[0] != '/')
                return -EINVAL;
        _cleanup_close_ int top = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return -errno;
        return open_dir_nofollow(top, path + 1, false);
}

int stat_below(int root, const char *rel, struct stat *st)
{
        const char *base;
        _cleanup_close_ int parent = tree_open_parent(root, rel, &base);
        if (parent < 0)
                return parent;
        return fstatat(parent, base, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int read_below(int root, const char *rel, char **ret)
{
        const char *base;
        _cleanup_close_ int parent = tree_open_parent(root, rel, &base);
        if (parent < 0)
                return parent;
        size_t size;
        int r = read_file_at(parent, base, PROTECT_READ_MAX, ret, &size);
        return r == -EBADMSG ? -EINVAL : r;
}

int dir_names_below(int root, const char *rel, char ***ret)
{
        _cleanup_close_ int fd = tree_open_dir(root, rel, false, 0);
        return fd < 0 ? fd : tree_dir_names(fd, ret);
}

#define SANDBOX_PROJECT "/project"

/* Files and directories of a git directory that decide what git runs or where it looks. */
static const char *const gitdir_files[] = { "config", "config.worktree", "commondir", "gitdir" };
static const char *const gitdir_dirs[] = { "hooks", "info" };


int protect_entry_valid(const char *entry, char *reason, size_t size)
{
        const char *e = entry[0] == '-' || entry[0] == '+' ? entry + 1 : entry;
        if (!*e || e[0] == '/' || strlen(e) > 1024) {
                snprintf(reason, size, "'%s' is not a path below the project (write it relative, such as .vscode)", entry);
                return -EINVAL;
        }
        _cleanup_free_ char *copy = strdup(e);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                if (streq(c, ".") || streq(c, "..")) {
                        snprintf(reason, size, "'%s' has a '%s' component: name the path itself", entry, c);
                        return -EINVAL;
                }
        if (strstr(e, "//") || e[strlen(e) - 1] == '/') {
                snprintf(reason, size, "'%s' is not a plain path: write it without empty components", entry);
                return -EINVAL;
        }
        for (const char *c = e; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == ',') {
                        snprintf(reason, size, "'%s' holds a control character or a comma", entry);
                        return -EINVAL;
                }
        return 0;
}

typedef struct builder {
        protect_plan *plan;
        int root_fd;
        size_t root;
        const char *host;  /* the root's host path */
        const char *dest;  /* where the sandbox sees it */
} builder;

static bool mounted_at(const protect_plan *p, const char *destination)
{
        for (size_t i = 0; i < p->n_mounts; i++)
                if (streq(p->mounts[i].destination, destination))
                        return true;
        return false;
}

static int add_one_mount(builder *b, const char *rel, bool ro, const struct stat *st);

/* Each directory between the root and rel, over itself: a directory that holds a mount can
 * be renamed with the mount inside it, and a new one put in its place (a .git/modules moved
 * aside, a vendor/ whose repository is then the agent's). */
static int add_ancestors(builder *b, const char *rel)
{
        _cleanup_free_ char *prefix = strdup(rel);
        if (!prefix)
                return -ENOMEM;
        for (char *slash = strchr(prefix, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                _cleanup_free_ char *dest = path_join(b->dest, prefix);
                struct stat st;
                int r = dest ? 0 : -ENOMEM;
                if (r >= 0 && !mounted_at(b->plan, dest) && stat_below(b->root_fd, prefix, &st) == 0 &&
                    S_ISDIR(st.st_mode))
                        r = add_one_mount(b, prefix, false, &st);
                *slash = '/';
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_mount(builder *b, const char *rel, bool ro, const struct stat *st)
{
        int r = add_ancestors(b, rel);
        return r < 0 ? r : add_one_mount(b, rel, ro, st);
}

/* What the plan says it keeps read-only: rel in the project, a source outside it whole. */
static int add_shown(builder *b, const char *rel, const char *source)
{
        _cleanup_free_ char *shown = strdup(b->root == 0 ? rel : source);
        return !shown || strv_push(&b->plan->shown, shown) < 0 ? -ENOMEM : 1;
}

/* 1 when mounted; 0 when past the plan's bounds (plan->mounts_cut says so). */
static int add_one_mount(builder *b, const char *rel, bool ro, const struct stat *st)
{
        protect_plan *p = b->plan;
        _cleanup_free_ char *destination = path_join(b->dest, rel);
        if (!destination)
                return -ENOMEM;
        /* Met twice (a git directory a .git file names and the walk finds, a hooks path that
         * is a git directory's hooks/): one mount, read-only if either asked for it. */
        for (size_t i = 0; i < p->n_mounts; i++) {
                if (!streq(p->mounts[i].destination, destination))
                        continue;
                if (!ro || p->mounts[i].read_only)
                        return 1;
                p->mounts[i].read_only = true;
                return add_shown(b, rel, p->mounts[i].source);
        }
        if (p->n_mounts >= PROTECT_MAX_MOUNTS || strlen(destination) > PROTECT_MOUNT_PATH_MAX) {
                p->mounts_cut = true;
                return 0;
        }
        protect_mount *m = realloc(p->mounts, (p->n_mounts + 1) * sizeof *m);
        if (!m)
                return -ENOMEM;
        p->mounts = m;
        m = &p->mounts[p->n_mounts];
        *m = (protect_mount) { .source = path_join(b->host, rel), .destination = path_join(b->dest, rel), .read_only = ro,
                               .dev = (unsigned long long) st->st_dev, .ino = (unsigned long long) st->st_ino };
        if (!m->source || !m->destination) {
                free(m->source);
                free(m->destination);
                return -ENOMEM;
        }
        p->n_mounts++;
        return ro ? add_shown(b, rel, m->source) : 1;
}

/* The watch of rel, made if it is not there yet: its index, or -ENOMEM (names taken over). */
static int add_watch(builder *b, const char *rel, const struct stat *st, char **names)
{
        protect_plan *p = b->plan;
        for (size_t i = 0; i < p->n_watch; i++)
                if (p->watch[i].root == b->root && streq(p->watch[i].rel, rel)) {
                        strv_free(names);
                        return (int) i;
                }
        protect_watch *w = realloc(p->watch, (p->n_watch + 1) * sizeof *w);
        if (!w)
                return -ENOMEM;
        p->watch = w;
        w = &p->watch[p->n_watch];
        *w = (protect_watch) { .root = b->root, .rel = strdup(rel), .existed = st != NULL, .names = names,
                               .is_dir_of_names = names != NULL };
        if (st) {
                w->dev = (unsigned long long) st->st_dev;
                w->ino = (unsigned long long) st->st_ino;
                w->ctime_ns = (long long) st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
        }
        if (!w->rel)
                return -ENOMEM;
        return (int) p->n_watch++;
}

bool protect_watched(const protect_plan *plan, size_t root, const char *rel)
{
        for (size_t i = 0; i < plan->n_watch; i++)
                if (plan->watch[i].root == root && streq(plan->watch[i].rel, rel))
                        return true;
        return false;
}

static int protect_one_at(builder *b, const char *rel, unsigned links);

/* One protected entry: read-only over itself when it is a file or a directory; watched
 * either way (a link cannot be mounted over: podman would follow it). A link is followed
 * the way a program on the host would, and what it leads to inside the root is protected
 * too (eight links deep). */
static int protect_one(builder *b, const char *rel)
{
        return protect_one_at(b, rel, 0);
}

static int protect_link(builder *b, const char *rel, unsigned links)
{
        const char *base;
        _cleanup_close_ int parent = tree_open_parent(b->root_fd, rel, &base);
        char target[PATH_MAX];
        ssize_t n = parent >= 0 ? readlinkat(parent, base, target, sizeof target - 1) : -1;
        if (n <= 0 || links >= 8)
                return 0;
        target[n] = 0;
        _cleanup_free_ char *host = path_join(b->host, rel);
        if (!host)
                return -ENOMEM;
        *strrchr(host, '/') = 0;
        _cleanup_free_ char *abs = path_resolve(*host ? host : "/", target);
        const char *inside = abs ? path_inside(abs, b->host) : NULL;
        if (!abs)
                return -ENOMEM;
        if (!inside || !*inside || protect_watched(b->plan, b->root, inside))
                return 0;
        return protect_one_at(b, inside, links + 1);
}

/* The links in directory dir_rel (a hooks directory): what each leads to inside the root. */
static int protect_links_in(builder *b, const char *dir_rel)
{
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_close_ int dir = tree_open_dir(b->root_fd, dir_rel, false, 0);
        if (dir < 0 || tree_dir_names(dir, &names) < 0)
                return 0;
        for (size_t i = 0; names[i]; i++) {
                struct stat st;
                if (fstatat(dir, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
                        continue;
                _cleanup_free_ char *rel = path_join(dir_rel, names[i]);
                int r = rel ? protect_one(b, rel) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int protect_one_at(builder *b, const char *rel, unsigned links)
{
        struct stat st;
        int r = stat_below(b->root_fd, rel, &st);
        if (r == -ENOENT || r == -ENOTDIR)
                return add_watch(b, rel, NULL, NULL);
        if (r < 0)
                return add_watch(b, rel, NULL, NULL);
        bool mount = false;
        if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
                r = add_mount(b, rel, true, &st);
                if (r < 0)
                        return r;
                mount = r > 0;
        }
        r = add_watch(b, rel, &st, NULL);
        if (r < 0)
                return r;
        b->plan->watch[r].mounted |= mount;
        return S_ISLNK(st.st_mode) ? protect_link(b, rel, links) : 0;
}

typedef struct gitdir_opts {
        const char *own_worktree; /* in worktrees/: the run's own, left to its caller */
        bool others_read_only;    /* the run is a linked worktree: the rest of the repository's state is not its */
} gitdir_opts;
static const gitdir_opts no_opts = {};

static int protect_gitdir(builder *b, const char *rel, const gitdir_opts *o, unsigned depth);

/* A modules/ directory (or one below it: a submodule's name may hold slashes): new entries
 * are quarantined after the run, and each git directory in it is protected. */
static int protect_modules(builder *b, const char *rel, unsigned depth)
{
        if (depth > 8 || protect_watched(b->plan, b->root, rel))
                return 0;
        char **names = NULL;
        int r = dir_names_below(b->root_fd, rel, &names);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        struct stat st;
        if (stat_below(b->root_fd, rel, &st) < 0) {
                strv_free(names);
                return 0;
        }
        /* The watch holds the names from here on (a new watch: rel was not watched). */
        char *const *kept = names;
        if (add_watch(b, rel, &st, names) < 0) {
                strv_free(names);
                return -ENOMEM;
        }
        names = NULL;
        for (size_t i = 0; kept[i]; i++) {
                _cleanup_free_ char *child = path_join(rel, kept[i]), *head = child ? path_join(child, "HEAD") : NULL;
                if (!head)
                        return -ENOMEM;
                if (stat_below(b->root_fd, child, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                r = stat_below(b->root_fd, head, &st) == 0 ? protect_gitdir(b, child, &no_opts, depth + 1)
                                                         : protect_modules(b, child, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A git directory: a bind of itself (moving it aside is then refused), its configuration,
 * hooks and info read-only, its submodules' git directories the same, and its worktrees'
 * (or, for a run in a linked worktree, the others' state read-only). */
static int protect_gitdir(builder *b, const char *rel, const gitdir_opts *o, unsigned depth)
{
        if (depth > 8)
                return 0;
        struct stat st;
        int r = *rel ? stat_below(b->root_fd, rel, &st) : (fstat(b->root_fd, &st) < 0 ? -errno : 0);
        if (r < 0 || !S_ISDIR(st.st_mode))
                return 0;
        r = add_mount(b, rel, false, &st);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(gitdir_files); i++) {
                _cleanup_free_ char *f = path_join(rel, gitdir_files[i]);
                r = f ? protect_one(b, f) : -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(gitdir_dirs); i++) {
                _cleanup_free_ char *f = path_join(rel, gitdir_dirs[i]);
                r = f ? protect_one(b, f) : -ENOMEM;
                /* A hook that is a link runs what it leads to. */
                if (r >= 0 && i == 0)
                        r = protect_links_in(b, f);
        }
        /* What makes git show other objects than the repository holds, to the user reviewing
         * the agent's commits: replace refs (new ones quarantined; packed ones told, after the
         * run) and alternates. */
        _cleanup_free_ char *replace = path_join(rel, "refs/replace"), *alternates = path_join(rel, "objects/info/alternates");
        if (r >= 0 && (!replace || !alternates))
                r = -ENOMEM;
        if (r >= 0 && stat_below(b->root_fd, replace, &st) == 0 && S_ISDIR(st.st_mode)) {
                char **names = NULL;
                if (!protect_watched(b->plan, b->root, replace) && dir_names_below(b->root_fd, replace, &names) >= 0 &&
                    add_watch(b, replace, &st, names) < 0) {
                        strv_free(names);
                        r = -ENOMEM;
                }
        } else if (r >= 0)
                r = add_watch(b, replace, NULL, NULL) < 0 ? -ENOMEM : 0;
        r = r < 0 ? r : protect_one(b, alternates);
        _cleanup_free_ char *modules = path_join(rel, "modules"), *worktrees = path_join(rel, "worktrees");
        if (r < 0 || !modules || !worktrees)
                return -ENOMEM;
        if (stat_below(b->root_fd, modules, &st) == 0 && S_ISDIR(st.st_mode)) {
                r = protect_modules(b, modules, depth);
                if (r < 0)
                        return r;
        } else if (add_watch(b, modules, NULL, NULL) < 0)
                return -ENOMEM; /* made during the run: all of it is quarantined */
        if (o->others_read_only) {
                /* The main worktree's own state, in the common directory. */
                static const char *const main_state[] = { "HEAD", "index" };
                for (size_t i = 0; i < ELEMENTSOF(main_state); i++) {
                        _cleanup_free_ char *f = path_join(rel, main_state[i]);
                        if (!f)
                                return -ENOMEM;
                        if (stat_below(b->root_fd, f, &st) == 0 && S_ISREG(st.st_mode) && add_mount(b, f, true, &st) < 0)
                                return -ENOMEM;
                }
        }
        _cleanup_strv_free_ char **names = NULL;
        if (dir_names_below(b->root_fd, worktrees, &names) < 0)
                /* Made during the run: all of it is quarantined (its entries would name
                 * worktrees the host never made, and take the next plan's mounts). */
                return add_watch(b, worktrees, NULL, NULL) < 0 ? -ENOMEM : 0;
        char **at_start = strv_copy((const char *const *) names);
        if (!at_start || stat_below(b->root_fd, worktrees, &st) < 0) {
                strv_free(at_start);
                return at_start ? 0 : -ENOMEM;
        }
        if (protect_watched(b->plan, b->root, worktrees))
                strv_free(at_start);
        else if (add_watch(b, worktrees, &st, at_start) < 0) {
                strv_free(at_start);
                return -ENOMEM;
        }
        for (size_t i = 0; names[i]; i++) {
                if (o->own_worktree && streq(names[i], o->own_worktree))
                        continue;
                _cleanup_free_ char *w = path_join(worktrees, names[i]);
                if (!w)
                        return -ENOMEM;
                if (stat_below(b->root_fd, w, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                r = o->others_read_only ? add_mount(b, w, true, &st) : protect_gitdir(b, w, &no_opts, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A git directory outside the project that the sandbox gets at its own path: reached
 * without a link, every directory on the way the user's or root's and writable by no one
 * else. Its index in plan->outside (plus one: a builder's root). */
static int add_outside(protect_plan *plan, const char *path, unsigned uid, int *ret_fd, size_t *ret_root,
                       aisb_error **err)
{
        int fd = open_absolute_dir(path);
        if (fd == -ELOOP || fd == -ENOTDIR)
                return aisb_error_set(err, -EINVAL,
                                      "the project's .git names %s, which is reached through a link: aisb mounts "
                                      "only a git directory on a path without links (run from the repository's own "
                                      "path, or --protect=-.git)",
                                      path);
        if (fd < 0)
                return aisb_error_set(err, fd, "the project's .git names %s: %s", path, strerror(-fd));
        char reason[256];
        struct stat st;
        int r = path_check_trusted(path, (uid_t) uid, reason, sizeof reason);
        if (r >= 0 && (fstat(fd, &st) < 0 || st.st_uid != uid)) {
                snprintf(reason, sizeof reason, "%s is not yours", path);
                r = -EPERM;
        }
        if (r < 0) {
                close(fd);
                return aisb_error_set(err, -EINVAL,
                                      "the project's .git names %s, which aisb will not give the sandbox: %s",
                                      path, reason[0] ? reason : strerror(-r));
        }
        if (strv_push(&plan->outside, path) < 0) {
                close(fd);
                return error_oom(err);
        }
        *ret_fd = fd;
        *ret_root = strv_length((const char *const *) plan->outside);
        return 0;
}

/* Whether a linked worktree's git directory names the project back, as git writes it: its
 * gitdir file names the project's .git. A .git file alone is the project's content, which
 * the agent may have written: it does not decide what of the host a sandbox gets. */
static int check_backlink(const protect_plan *plan, int gfd, const char *gitdir, aisb_error **err)
{
        _cleanup_free_ char *text = NULL, *named = NULL, *expected = path_join(plan->project, ".git");
        if (!expected)
                return error_oom(err);
        char *line = read_below(gfd, "gitdir", &text) >= 0 ? git_first_line(text, NULL) : NULL;
        named = line ? path_resolve(gitdir, line) : NULL;
        if (named && streq(named, expected))
                return 0;
        return aisb_error_set(err, -EINVAL,
                              "the project's .git names the worktree git directory %s, whose gitdir file names %s, "
                              "not %s: a git directory outside the project is mounted only for its own worktree "
                              "(git worktree repair fixes a moved one; --protect=-.git runs without git)",
                              gitdir, named ? named : "nothing", expected);
}

/* A worktree project: .git names PATH outside it; PATH's commondir names the repository. */
static int protect_worktree(protect_plan *plan, const char *gitdir, unsigned uid, aisb_error **err)
{
        _cleanup_close_ int gfd = -1;
        size_t groot;
        int r = add_outside(plan, gitdir, uid, &gfd, &groot, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = NULL;
        char *common_rel = NULL;
        if (read_below(gfd, "commondir", &text) >= 0)
                common_rel = git_first_line(text, NULL);
        /* A submodule's checkout names its git directory relative to the superproject, and
         * its core.worktree names the host's path: neither is there in the sandbox. A
         * separate git directory names nothing back. */
        if (!common_rel)
                return aisb_error_set(err, -EINVAL,
                                      "the project's .git names %s, a git directory outside the project that is no "
                                      "linked worktree's (a submodule's checkout, or git init --separate-git-dir): "
                                      "run aisb from the superproject's top, keep the git directory inside the project, "
                                      "or use git worktree add (--protect=-.git runs without git)",
                                      gitdir);
        r = check_backlink(plan, gfd, gitdir, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *common = path_resolve(gitdir, common_rel);
        if (!common)
                return error_oom(err);
        const char *own = path_inside(gitdir, common);
        _cleanup_free_ char *own_name = NULL;
        if (own && strncmp(own, "worktrees/", 10) == 0 && !strchr(own + 10, '/'))
                own_name = strdup(own + 10);
        _cleanup_close_ int cfd = -1;
        size_t croot;
        r = add_outside(plan, common, uid, &cfd, &croot, err);
        if (r < 0)
                return r;
        builder c = { .plan = plan, .root_fd = cfd, .root = croot, .host = common, .dest = common };
        gitdir_opts co = { .own_worktree = own_name, .others_read_only = true };
        builder g = { .plan = plan, .root_fd = gfd, .root = groot, .host = gitdir, .dest = gitdir };
        if (protect_gitdir(&c, "", &co, 0) < 0 || protect_gitdir(&g, "", &no_opts, 0) < 0)
                return error_oom(err);
        /* The run's own worktree directory sits in the common one's worktrees/: that, too,
         * cannot be moved aside with it inside. */
        _cleanup_free_ char *own_child = own ? path_join(own, "x") : NULL;
        if (own && (!own_child || add_ancestors(&c, own_child) < 0))
                return error_oom(err);
        return 0;
}

/* What tracked files the installed hooks of a hook manager run from: with pre-commit's or
 * lefthook's hooks in place, editing their configuration is editing the hooks. */
static const char *const hook_manager_configs[] = {
        ".pre-commit-config.yaml", ".pre-commit-config.yml", ".lefthook", ".config/lefthook.yml",
        "lefthook.yml", ".lefthook.yml", "lefthook-local.yml", ".lefthook-local.yml",
        "lefthook.yaml", ".lefthook.yaml", "lefthook-local.yaml", ".lefthook-local.yaml",
        "lefthook.toml", ".lefthook.toml", "lefthook-local.toml", ".lefthook-local.toml",
        "lefthook.json", ".lefthook.json", "lefthook-local.json", ".lefthook-local.json",
};

static int protect_includes(builder *b, int config_root, const char *config_rel, const char *dir, unsigned depth);

/* One repository's hooks as the host's git finds them: the directory core.hooksPath names
 * when it is in the project (all of .husky for husky's .husky/_), the files its config
 * includes from the project, and a hook manager's configuration when hooks are installed.
 * b: the project's builder; the config is config_rel below config_root, in the host
 * directory gitdir; top: the work tree's top on the host (NULL: none known). */
static int protect_repo(builder *b, int config_root, const char *config_rel, const char *gitdir, const char *top)
{
        const protect_plan *plan = b->plan;
        _cleanup_strv_free_ char **hooks = git_hooks_paths(gitdir, top);
        _cleanup_free_ char *default_hooks = path_join(gitdir, "hooks");
        if (!default_hooks || strv_push(&hooks, default_hooks) < 0)
                return -ENOMEM;
        bool installed = false;
        for (size_t i = 0; hooks[i]; i++) {
                installed |= git_hooks_installed(hooks[i]);
                const char *rel = path_inside(hooks[i], plan->project);
                if (!rel || !*rel)
                        continue;
                /* husky's .husky/_ runs what is in .husky: all of it is the hooks. */
                _cleanup_free_ char *dir = strdup(rel);
                if (!dir)
                        return -ENOMEM;
                char *slash = strrchr(dir, '/');
                if (slash) {
                        *slash = 0;
                        const char *parent = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
                        if (!streq(parent, ".husky"))
                                *slash = '/';
                }
                int r = protect_watched(plan, 0, dir) ? 0 : protect_one(b, dir);
                /* A hook that is a link runs what it leads to. */
                r = r < 0 ? r : protect_links_in(b, rel);
                if (r < 0)
                        return r;
        }
        int r = protect_includes(b, config_root, config_rel, gitdir, 0);
        if (r < 0)
                return r;
        const char *top_rel = top ? path_inside(top, plan->project) : NULL;
        if (!top_rel || !installed)
                return 0;
        /* Watched where absent too: lefthook merges a -local file made during the run. */
        for (size_t i = 0; i < ELEMENTSOF(hook_manager_configs); i++) {
                _cleanup_free_ char *f = path_join(top_rel, hook_manager_configs[i]);
                if (!f)
                        return -ENOMEM;
                if (!protect_watched(plan, 0, f) && (r = protect_one(b, f)) < 0)
                        return r;
        }
        return 0;
}

/* The files a git config includes (include.path, includeIf.*.path) that are inside the
 * project: read-only, like the config itself, and theirs in turn (three deep). dir: the host
 * directory relative paths are taken from (the config's own). */
static int protect_includes(builder *b, int config_root, const char *config_rel, const char *dir, unsigned depth)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **paths = NULL;
        if (depth > 3 || read_below(config_root, config_rel, &text) < 0)
                return 0;
        git_config_includes(text, &paths);
        const char *home = getenv("HOME");
        for (size_t i = 0; paths && paths[i]; i++) {
                _cleanup_free_ char *abs = strncmp(paths[i], "~/", 2) == 0 && home && home[0] == '/'
                                                   ? path_join(home, paths[i] + 2)
                                                   : path_resolve(dir, paths[i]);
                const char *rel = abs ? path_inside(abs, b->plan->project) : NULL;
                if (!rel || !*rel || protect_watched(b->plan, 0, rel))
                        continue;
                int r = protect_one(b, rel);
                if (r < 0)
                        return r;
                _cleanup_free_ char *inner_dir = strdup(abs);
                if (!inner_dir)
                        return -ENOMEM;
                *strrchr(inner_dir, '/') = 0;
                r = protect_includes(b, b->root_fd, rel, *inner_dir ? inner_dir : "/", depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A git entry below the project at the start (a .git, or a bare repository): a directory is
 * a git directory; a file or a link is watched (a file also read-only over itself). */
static int plan_nested(int dir, const char *name, const char *rel, void *userdata)
{
        builder *b = userdata;
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        /* Deeper than a path below the root is opened: far past what a mount may name. */
        if (strlen(rel) >= TREE_PATH_MAX) {
                b->plan->mounts_cut = true;
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                int r = protect_gitdir(b, rel, &no_opts, 1);
                r = r < 0 ? r : add_watch(b, rel, &st, NULL);
                _cleanup_free_ char *dest = path_join(b->dest, rel);
                if (r >= 0)
                        b->plan->watch[r].mounted = dest && mounted_at(b->plan, dest);
                /* A nested repository's own hooks path and includes; its top is where .git is
                 * (a bare one has none). */
                _cleanup_free_ char *config = path_join(rel, "config"), *host = path_join(b->host, rel);
                _cleanup_free_ char *top = host && streq(name, ".git") ? strdup(host) : NULL;
                if (r >= 0 && (!config || !host || (streq(name, ".git") && !top)))
                        return -ENOMEM;
                if (top)
                        *strrchr(top, '/') = 0;
                return r < 0 ? r : protect_repo(b, b->root_fd, config, host, top);
        }
        int r = protect_one(b, rel);
        if (r < 0 || !S_ISREG(st.st_mode))
                return r;
        /* A .git file (a submodule's checkout): the repository it names, if inside the project,
         * has its hooks where its top is. */
        _cleanup_free_ char *text = NULL, *host = path_join(b->host, rel);
        char *named = read_below(b->root_fd, rel, &text) >= 0 ? git_first_line(text, "gitdir:") : NULL;
        if (!host)
                return -ENOMEM;
        *strrchr(host, '/') = 0;
        _cleanup_free_ char *gitdir = named ? path_resolve(host, named) : NULL;
        const char *inside = gitdir ? path_inside(gitdir, b->host) : NULL;
        if (!inside || !*inside)
                return 0;
        _cleanup_free_ char *config = path_join(inside, "config");
        r = protect_gitdir(b, inside, &no_opts, 1);
        return r < 0 ? r : config ? protect_repo(b, b->root_fd, config, gitdir, host) : -ENOMEM;
}

static int plan_make(const char *project, bool is_cwd, const char *const *names, unsigned uid, bool fix_access,
                     protect_plan *ret, aisb_error **err)
{
        _cleanup_(protect_plan_done) protect_plan plan = { .project = strdup(project) };
        if (!plan.project)
                return error_oom(err);
        _cleanup_close_ int pfd = is_cwd ? open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : open_absolute_dir(project);
        if (is_cwd && pfd < 0)
                pfd = -errno;
        if (pfd < 0)
                return aisb_error_set(err, pfd, "cannot open the project %s: %s", project, strerror(-pfd));
        struct stat st;
        if (fstat(pfd, &st) < 0)
                return aisb_error_set(err, -errno, "%s: %s", project, strerror(errno));
        plan.project_dev = (unsigned long long) st.st_dev;
        plan.project_ino = (unsigned long long) st.st_ino;
        builder b = { .plan = &plan, .root_fd = pfd, .root = 0, .host = project, .dest = SANDBOX_PROJECT };
        int r = 0;
        for (size_t i = 0; r >= 0 && names && names[i]; i++) {
                if (streq(names[i], ".git"))
                        plan.git = true;
                else
                        r = protect_one(&b, names[i]);
        }
        if (r >= 0 && plan.git) {
                if (fstatat(pfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = add_watch(&b, ".git", NULL, NULL);
                        plan.repository_top = git_repository_above(project);
                } else if (S_ISDIR(st.st_mode)) {
                        plan.packed_replace = git_packed_replace_refs(pfd, ".git");
                        plan.packed_gitdir = strdup(".git");
                        r = plan.packed_gitdir ? protect_gitdir(&b, ".git", &no_opts, 0) : -ENOMEM;
                        r = r < 0 ? r : add_watch(&b, ".git", &st, NULL);
                        if (r >= 0)
                                plan.watch[r].mounted = mounted_at(&plan, SANDBOX_PROJECT "/.git");
                        _cleanup_free_ char *gitdir_host = path_join(project, ".git");
                        r = r < 0 ? r : gitdir_host ? protect_repo(&b, pfd, ".git/config", gitdir_host, project) : -ENOMEM;
                } else if (S_ISREG(st.st_mode)) {
                        r = protect_one(&b, ".git");
                        _cleanup_free_ char *text = NULL;
                        char *named = r >= 0 && read_below(pfd, ".git", &text) >= 0 ? git_first_line(text, "gitdir:") : NULL;
                        _cleanup_free_ char *gitdir = named ? path_resolve(project, named) : NULL;
                        const char *inside = gitdir ? path_inside(gitdir, project) : NULL;
                        if (r < 0 || (named && !gitdir))
                                return error_oom(err);
                        if (inside && *inside) {
                                r = protect_gitdir(&b, inside, &no_opts, 0);
                                _cleanup_free_ char *config = path_join(inside, "config");
                                r = r < 0 ? r : config ? protect_repo(&b, pfd, config, gitdir, project) : -ENOMEM;
                        } else if (gitdir && !inside) {
                                r = protect_worktree(&plan, gitdir, uid, err);
                                if (r < 0)
                                        return r;
                                /* The repository's configuration is in its common directory. */
                                size_t last = strv_length((const char *const *) plan.outside);
                                _cleanup_close_ int cfd = last ? open_absolute_dir(plan.outside[last - 1]) : -1;
                                if (cfd >= 0) {
                                        plan.packed_root = last;
                                        plan.packed_replace = git_packed_replace_refs(cfd, "");
                                        plan.packed_gitdir = strdup("");
                                        r = plan.packed_gitdir ? protect_repo(&b, cfd, "config", plan.outside[last - 1], project)
                                                               : -ENOMEM;
                                }
                        }
                } else
                        r = add_watch(&b, ".git", &st, NULL);
                if (r >= 0)
                        r = git_dirs_walk(pfd, fix_access, plan_nested, &b, &plan.walk_cut);
        }
        if (r >= 0 && plan.git) {
                /* The project itself, made a git directory (HEAD, objects, refs, a config with
                 * core.worktree): git run in it, or in the repository it is below, would take
                 * it. What of that is new after the run is quarantined. */
                static const char *const root_names[] = { "HEAD", "objects", "refs", "commondir" };
                unsigned present = 0;
                for (size_t i = 0; i < ELEMENTSOF(root_names); i++)
                        present |= fstatat(pfd, root_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 ? 1u << i : 0;
                bool already = (present & 1) && ((present & 6) == 6 || (present & 8));
                for (size_t i = 0; r >= 0 && !already && i < ELEMENTSOF(root_names); i++)
                        r = add_watch(&b, root_names[i],
                                      fstatat(pfd, root_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 ? &st : NULL, NULL);
        }
        if (r >= 0 && plan.mounts_cut)
                return aisb_error_set(err, -EINVAL,
                                      "the project holds more to keep read-only than aisb mounts (%d entries, paths of "
                                      "at most %d bytes), so its protection cannot hold; name fewer paths with --protect "
                                      "(docs/protect.md)",
                                      PROTECT_MAX_MOUNTS, PROTECT_MOUNT_PATH_MAX);
        if (r < 0)
                return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "protecting %s: %s", project, strerror(-r));
        *ret = plan;
        plan = (protect_plan) {};
        return 0;
}

int protect_plan_make(const char *project, bool is_cwd, const char *const *names, unsigned uid,
                      protect_plan *ret, aisb_error **err)
{
        return plan_make(project, is_cwd, names, uid, true, ret, err);
}

int protect_plan_look(const char *project, bool is_cwd, const char *const *names, unsigned uid,
                      protect_plan *ret, aisb_error **err)
{
        return plan_make(project, is_cwd, names, uid, false, ret, err);
}

void protect_plan_done(protect_plan *plan)
{
        for (size_t i = 0; i < plan->n_mounts; i++) {
                free(plan->mounts[i].source);
                free(plan->mounts[i].destination);
        }
        free(plan->mounts);
        for (size_t i = 0; i < plan->n_watch; i++) {
                free(plan->watch[i].rel);
                strv_free(plan->watch[i].names);
        }
        free(plan->watch);
        strv_free(plan->outside);
        strv_free(plan->shown);
        free(plan->packed_gitdir);
        free(plan->repository_top);
        free(plan->project);
        *plan = (protect_plan) {};
}
