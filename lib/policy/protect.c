/* SPDX-License-Identifier: MIT */
/*
 * Protected paths (protect.h): the plan made before a run, the sweep after it.
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
#include "util.h"
#include "fileio.h"
#include "pathtrust.h"
#include "tree-walk.h"

#define SANDBOX_PROJECT "/project"

/* Files and directories of a git directory that decide what git runs or where it looks. */
static const char *const gitdir_files[] = { "config", "config.worktree", "commondir", "gitdir" };
static const char *const gitdir_dirs[] = { "hooks", "info" };

static char *join(const char *a, const char *b)
{
        char *s = NULL;
        if (!a || !*a)
                return strdup(b);
        if (!b || !*b)
                return strdup(a);
        return asprintf(&s, "%s%s%s", a, streq(a, "/") ? "" : "/", b) < 0 ? NULL : s;
}

static char *resolve(const char *base, const char *rel);
static const char *below(const char *path, const char *top);
static int dir_names(int root, const char *rel, char ***ret);

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

/* An absolute path as a directory, no component a link. */
static int open_absolute(const char *path)
{
        if (path[0] != '/')
                return -EINVAL;
        _cleanup_close_ int top = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return -errno;
        return open_dir_nofollow(top, path + 1, false);
}

static int stat_rel(int root, const char *rel, struct stat *st)
{
        const char *base;
        _cleanup_close_ int parent = tree_open_parent(root, rel, &base);
        if (parent < 0)
                return parent;
        return fstatat(parent, base, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* A regular file below root, whole (at most PROTECT_READ_MAX): -ENOENT, -EINVAL (not a
 * regular file), -EFBIG. */
static int read_rel(int root, const char *rel, char **ret)
{
        const char *base;
        _cleanup_close_ int parent = tree_open_parent(root, rel, &base);
        if (parent < 0)
                return parent;
        size_t size;
        int r = read_file_at(parent, base, PROTECT_READ_MAX, ret, &size);
        return r == -EBADMSG ? -EINVAL : r;
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
                _cleanup_free_ char *dest = join(b->dest, prefix);
                struct stat st;
                int r = dest ? 0 : -ENOMEM;
                if (r >= 0 && !mounted_at(b->plan, dest) && stat_rel(b->root_fd, prefix, &st) == 0 &&
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

/* 1 when mounted; 0 when past the plan's bounds (plan->mounts_cut says so). */
static int add_one_mount(builder *b, const char *rel, bool ro, const struct stat *st)
{
        protect_plan *p = b->plan;
        _cleanup_free_ char *destination = join(b->dest, rel);
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
                _cleanup_free_ char *shown = b->root == 0 ? strdup(rel) : strdup(p->mounts[i].source);
                return !shown || strv_push(&p->shown, shown) < 0 ? -ENOMEM : 1;
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
        *m = (protect_mount) { .source = join(b->host, rel), .destination = join(b->dest, rel), .read_only = ro,
                               .dev = (unsigned long long) st->st_dev, .ino = (unsigned long long) st->st_ino };
        if (!m->source || !m->destination) {
                free(m->source);
                free(m->destination);
                return -ENOMEM;
        }
        p->n_mounts++;
        if (!ro)
                return 1;
        _cleanup_free_ char *shown = b->root == 0 ? strdup(rel) : strdup(m->source);
        return !shown || strv_push(&p->shown, shown) < 0 ? -ENOMEM : 1;
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

static bool watched(const protect_plan *plan, size_t root, const char *rel)
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
        _cleanup_free_ char *host = join(b->host, rel);
        if (!host)
                return -ENOMEM;
        *strrchr(host, '/') = 0;
        _cleanup_free_ char *abs = resolve(*host ? host : "/", target);
        const char *inside = abs ? below(abs, b->host) : NULL;
        if (!abs)
                return -ENOMEM;
        if (!inside || !*inside || watched(b->plan, b->root, inside))
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
                _cleanup_free_ char *rel = join(dir_rel, names[i]);
                int r = rel ? protect_one(b, rel) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int protect_one_at(builder *b, const char *rel, unsigned links)
{
        struct stat st;
        int r = stat_rel(b->root_fd, rel, &st);
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

/* The names in directory rel, to find new ones after the run (never NULL: an empty
 * directory has a list too). */
static int dir_names(int root, const char *rel, char ***ret)
{
        _cleanup_close_ int fd = tree_open_dir(root, rel, false, 0);
        return fd < 0 ? fd : tree_dir_names(fd, ret);
}

typedef struct gitdir_opts {
        const char *own_worktree; /* in worktrees/: the run's own, left to its caller */
        bool others_read_only;    /* the run is a linked worktree: the rest of the repository's state is not its */
} gitdir_opts;

static int protect_gitdir(builder *b, const char *rel, const gitdir_opts *o, unsigned depth);

/* A modules/ directory (or one below it: a submodule's name may hold slashes): new entries
 * are quarantined after the run, and each git directory in it is protected. */
static int protect_modules(builder *b, const char *rel, unsigned depth)
{
        if (depth > 8 || watched(b->plan, b->root, rel))
                return 0;
        char **names = NULL;
        int r = dir_names(b->root_fd, rel, &names);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        struct stat st;
        if (stat_rel(b->root_fd, rel, &st) < 0) {
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
                _cleanup_free_ char *child = join(rel, kept[i]), *head = child ? join(child, "HEAD") : NULL;
                if (!head)
                        return -ENOMEM;
                if (stat_rel(b->root_fd, child, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                static const gitdir_opts none = {};
                r = stat_rel(b->root_fd, head, &st) == 0 ? protect_gitdir(b, child, &none, depth + 1)
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
        int r = *rel ? stat_rel(b->root_fd, rel, &st) : (fstat(b->root_fd, &st) < 0 ? -errno : 0);
        if (r < 0 || !S_ISDIR(st.st_mode))
                return 0;
        r = add_mount(b, rel, false, &st);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(gitdir_files); i++) {
                _cleanup_free_ char *f = join(rel, gitdir_files[i]);
                r = f ? protect_one(b, f) : -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(gitdir_dirs); i++) {
                _cleanup_free_ char *f = join(rel, gitdir_dirs[i]);
                r = f ? protect_one(b, f) : -ENOMEM;
                /* A hook that is a link runs what it leads to. */
                if (r >= 0 && i == 0)
                        r = protect_links_in(b, f);
        }
        /* What makes git show other objects than the repository holds, to the user reviewing
         * the agent's commits: replace refs (new ones quarantined; packed ones told, after the
         * run) and alternates. */
        _cleanup_free_ char *replace = join(rel, "refs/replace"), *alternates = join(rel, "objects/info/alternates");
        if (r >= 0 && (!replace || !alternates))
                r = -ENOMEM;
        if (r >= 0 && stat_rel(b->root_fd, replace, &st) == 0 && S_ISDIR(st.st_mode)) {
                char **names = NULL;
                if (!watched(b->plan, b->root, replace) && dir_names(b->root_fd, replace, &names) >= 0 &&
                    add_watch(b, replace, &st, names) < 0) {
                        strv_free(names);
                        r = -ENOMEM;
                }
        } else if (r >= 0)
                r = add_watch(b, replace, NULL, NULL) < 0 ? -ENOMEM : 0;
        r = r < 0 ? r : protect_one(b, alternates);
        _cleanup_free_ char *modules = join(rel, "modules"), *worktrees = join(rel, "worktrees");
        if (r < 0 || !modules || !worktrees)
                return -ENOMEM;
        if (stat_rel(b->root_fd, modules, &st) == 0 && S_ISDIR(st.st_mode)) {
                r = protect_modules(b, modules, depth);
                if (r < 0)
                        return r;
        } else if (add_watch(b, modules, NULL, NULL) < 0)
                return -ENOMEM; /* made during the run: all of it is quarantined */
        if (o->others_read_only) {
                /* The main worktree's own state, in the common directory. */
                static const char *const main_state[] = { "HEAD", "index" };
                for (size_t i = 0; i < ELEMENTSOF(main_state); i++) {
                        _cleanup_free_ char *f = join(rel, main_state[i]);
                        if (!f)
                                return -ENOMEM;
                        if (stat_rel(b->root_fd, f, &st) == 0 && S_ISREG(st.st_mode) && add_mount(b, f, true, &st) < 0)
                                return -ENOMEM;
                }
        }
        _cleanup_strv_free_ char **names = NULL;
        if (dir_names(b->root_fd, worktrees, &names) < 0)
                /* Made during the run: all of it is quarantined (its entries would name
                 * worktrees the host never made, and take the next plan's mounts). */
                return add_watch(b, worktrees, NULL, NULL) < 0 ? -ENOMEM : 0;
        char **at_start = strv_copy((const char *const *) names);
        if (!at_start || stat_rel(b->root_fd, worktrees, &st) < 0) {
                strv_free(at_start);
                return at_start ? 0 : -ENOMEM;
        }
        if (watched(b->plan, b->root, worktrees))
                strv_free(at_start);
        else if (add_watch(b, worktrees, &st, at_start) < 0) {
                strv_free(at_start);
                return -ENOMEM;
        }
        for (size_t i = 0; names[i]; i++) {
                if (o->own_worktree && streq(names[i], o->own_worktree))
                        continue;
                _cleanup_free_ char *w = join(worktrees, names[i]);
                if (!w)
                        return -ENOMEM;
                if (stat_rel(b->root_fd, w, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                static const gitdir_opts none = {};
                r = o->others_read_only ? add_mount(b, w, true, &st) : protect_gitdir(b, w, &none, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* "gitdir: PATH" of a .git file, or commondir's "PATH": the path, trimmed. */
static char *first_line(char *text, const char *prefix)
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

/* base/rel (rel may be absolute), with "." and ".." taken lexically: right only because no
 * component will be a link (each is opened with O_NOFOLLOW afterwards). */
static char *resolve(const char *base, const char *rel)
{
        _cleanup_free_ char *whole = rel[0] == '/' ? strdup(rel) : join(base, rel);
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

static const char *below(const char *path, const char *top)
{
        size_t n = strlen(top);
        if (strncmp(path, top, n) != 0)
                return NULL;
        if (path[n] == '/')
                return path + n + 1;
        return path[n] == 0 ? "" : NULL;
}

/* A git directory outside the project that the sandbox gets at its own path: reached
 * without a link, every directory on the way the user's or root's and writable by no one
 * else. Its index in plan->outside (plus one: a builder's root). */
static int add_outside(protect_plan *plan, const char *path, unsigned uid, int *ret_fd, size_t *ret_root,
                       aisb_error **err)
{
        int fd = open_absolute(path);
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
        _cleanup_free_ char *text = NULL, *named = NULL, *expected = join(plan->project, ".git");
        if (!expected)
                return error_oom(err);
        char *line = read_rel(gfd, "gitdir", &text) >= 0 ? first_line(text, NULL) : NULL;
        named = line ? resolve(gitdir, line) : NULL;
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
        if (read_rel(gfd, "commondir", &text) >= 0)
                common_rel = first_line(text, NULL);
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
        _cleanup_free_ char *common = resolve(gitdir, common_rel);
        if (!common)
                return error_oom(err);
        const char *own = below(gitdir, common);
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
        static const gitdir_opts none = {};
        if (protect_gitdir(&c, "", &co, 0) < 0 || protect_gitdir(&g, "", &none, 0) < 0)
                return error_oom(err);
        /* The run's own worktree directory sits in the common one's worktrees/: that, too,
         * cannot be moved aside with it inside. */
        _cleanup_free_ char *own_child = own ? join(own, "x") : NULL;
        if (own && (!own_child || add_ancestors(&c, own_child) < 0))
                return error_oom(err);
        return 0;
}

/* Each "key = value" of a git config file's text (changed in place), with its section's name
 * (what the brackets hold up to a space or a quote: "core", "include", "includeIf"), to fn.
 * Only what a plain file says: continuation lines and an include's own content are not. */
typedef void (*config_fn)(const char *section, const char *key, const char *value, void *userdata);

static void config_scan(char *text, config_fn fn, void *userdata)
{
        char section[64] = "";
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                while (isspace((unsigned char) *line))
                        line++;
                if (*line == '[') {
                        size_t n = strcspn(line + 1, "] \t\"");
                        snprintf(section, sizeof section, "%.*s", (int) (n < 63 ? n : 63), line + 1);
                        line += 1 + strcspn(line + 1, "]");
                        if (*line == ']')
                                line++;
                        while (isspace((unsigned char) *line))
                                line++;
                }
                size_t k = strcspn(line, " \t=");
                if (k == 0)
                        continue;
                char *v = line + k;
                while (*v == ' ' || *v == '\t')
                        v++;
                if (*v != '=')
                        continue;
                line[k] = 0;
                v++;
                while (*v == ' ' || *v == '\t')
                        v++;
                bool quoted = *v == '"';
                if (quoted)
                        v++;
                size_t n = strcspn(v, quoted ? "\"" : "#;\r");
                while (!quoted && n && isspace((unsigned char) v[n - 1]))
                        n--;
                v[n] = 0;
                fn(section, line, v, userdata);
        }
}

static void on_include(const char *section, const char *key, const char *value, void *userdata)
{
        if ((strcasecmp(section, "include") == 0 || strcasecmp(section, "includeif") == 0) &&
            strcasecmp(key, "path") == 0 && *value)
                (void) strv_push(userdata, value);
}

/* Every core.hooksPath a git config file sets, and those of the files it includes (read in
 * place, three deep), each as an absolute host path: relative ones from top (the work
 * tree's top; NULL: none known), "~/" from HOME. Which one wins depends on git's order; all
 * of them are protected. path: the file on the host (read without following a link at its
 * end, regular files only, bounded). */
typedef struct hooks_scan {
        char ***found;
        const char *top, *dir;
        unsigned depth;
} hooks_scan;

static void scan_hooks_file(const char *path, const char *top, char ***found, unsigned depth);

static void on_hooks_entry(const char *section, const char *key, const char *value, void *userdata)
{
        hooks_scan *h = userdata;
        const char *home = getenv("HOME");
        bool has_home = home && home[0] == '/';
        if (strcasecmp(section, "core") == 0 && strcasecmp(key, "hookspath") == 0 && *value) {
                _cleanup_free_ char *abs = strncmp(value, "~/", 2) == 0 ? (has_home ? join(home, value + 2) : NULL)
                                           : value[0] == '/' || h->top ? resolve(h->top ? h->top : "/", value)
                                                                      : NULL;
                if (abs)
                        (void) strv_push(h->found, abs);
        } else if ((strcasecmp(section, "include") == 0 || strcasecmp(section, "includeif") == 0) &&
                   strcasecmp(key, "path") == 0 && *value) {
                _cleanup_free_ char *abs = strncmp(value, "~/", 2) == 0 ? (has_home ? join(home, value + 2) : NULL)
                                                                        : resolve(h->dir, value);
                if (abs)
                        scan_hooks_file(abs, h->top, h->found, h->depth + 1);
        }
}

static void scan_hooks_file(const char *path, const char *top, char ***found, unsigned depth)
{
        if (depth > 3)
                return;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        _cleanup_free_ char *text = NULL, *dir = strdup(path);
        size_t size;
        if (fd < 0 || !dir || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            read_full_fd(fd, PROTECT_READ_MAX, &text, &size) < 0)
                return;
        char *slash = strrchr(dir, '/');
        if (slash)
                slash[slash == dir ? 1 : 0] = 0;
        hooks_scan h = { .found = found, .top = top, .dir = dir, .depth = depth };
        config_scan(text, on_hooks_entry, &h);
}

/* The hooks directories a repository's git may use: from its config (and config.worktree)
 * at the host directory gitdir, the user's and the system's. */
static char **hooks_paths(const char *gitdir, const char *top)
{
        char **found = NULL;
        const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
        _cleanup_free_ char *local = join(gitdir, "config"), *worktree = join(gitdir, "config.worktree");
        _cleanup_free_ char *xdg_file = xdg && xdg[0] == '/' ? join(xdg, "git/config")
                                        : home && home[0] == '/' ? join(home, ".config/git/config") : NULL;
        _cleanup_free_ char *home_file = home && home[0] == '/' ? join(home, ".gitconfig") : NULL;
        const char *files[] = { local, worktree, home_file, xdg_file, "/etc/gitconfig" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (files[i])
                        scan_hooks_file(files[i], top, &found, 0);
        return found;
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

static bool has_hooks(const char *dir)
{
        _cleanup_close_ int fd = dir ? open_absolute(dir) : -1;
        _cleanup_strv_free_ char **names = NULL;
        if (fd < 0 || tree_dir_names(fd, &names) < 0)
                return false;
        for (size_t i = 0; names[i]; i++) {
                size_t n = strlen(names[i]);
                if (n < 7 || !streq(names[i] + n - 7, ".sample"))
                        return true;
        }
        return false;
}

static int protect_includes(builder *b, int config_root, const char *config_rel, const char *dir, unsigned depth);

/* One repository's hooks as the host's git finds them: the directory core.hooksPath names
 * when it is in the project (all of .husky for husky's .husky/_), the files its config
 * includes from the project, and a hook manager's configuration when hooks are installed.
 * b: the project's builder; the config is config_rel below config_root, in the host
 * directory gitdir; top: the work tree's top on the host (NULL: none known). */
static int protect_repo(builder *b, int config_root, const char *config_rel, const char *gitdir, const char *top)
{
        const protect_plan *plan = b->plan;
        _cleanup_strv_free_ char **hooks = hooks_paths(gitdir, top);
        _cleanup_free_ char *default_hooks = join(gitdir, "hooks");
        if (!default_hooks || strv_push(&hooks, default_hooks) < 0)
                return -ENOMEM;
        bool installed = false;
        for (size_t i = 0; hooks[i]; i++) {
                installed |= has_hooks(hooks[i]);
                const char *rel = below(hooks[i], plan->project);
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
                int r = watched(plan, 0, dir) ? 0 : protect_one(b, dir);
                /* A hook that is a link runs what it leads to. */
                r = r < 0 ? r : protect_links_in(b, rel);
                if (r < 0)
                        return r;
        }
        int r = protect_includes(b, config_root, config_rel, gitdir, 0);
        if (r < 0)
                return r;
        const char *top_rel = top ? below(top, plan->project) : NULL;
        if (!top_rel || !installed)
                return 0;
        /* Watched where absent too: lefthook merges a -local file made during the run. */
        for (size_t i = 0; i < ELEMENTSOF(hook_manager_configs); i++) {
                _cleanup_free_ char *f = join(top_rel, hook_manager_configs[i]);
                if (!f)
                        return -ENOMEM;
                if (!watched(plan, 0, f) && (r = protect_one(b, f)) < 0)
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
        if (depth > 3 || read_rel(config_root, config_rel, &text) < 0)
                return 0;
        config_scan(text, on_include, &paths);
        const char *home = getenv("HOME");
        for (size_t i = 0; paths && paths[i]; i++) {
                _cleanup_free_ char *abs = strncmp(paths[i], "~/", 2) == 0 && home && home[0] == '/'
                                                   ? join(home, paths[i] + 2)
                                                   : resolve(dir, paths[i]);
                const char *rel = abs ? below(abs, b->plan->project) : NULL;
                if (!rel || !*rel || watched(b->plan, 0, rel))
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

/* What a walk below the project meets named .git, and a directory that is itself a git
 * directory (a bare repository), which is not descended into. */
typedef int (*git_entry_fn)(int dir, const char *name, const char *rel, void *userdata);

typedef struct git_walk {
        git_entry_fn fn;
        void *userdata;
        size_t dirs; /* the root is one */
        bool cut;
} git_walk;

/* What git takes for a git directory: HEAD (a file or a link), and objects and refs (of any
 * kind: links too), or a commondir that names them elsewhere. */
static bool looks_like_gitdir(int dir)
{
        static const char *const names[] = { "HEAD", "objects", "refs", "commondir" };
        static const unsigned bits[] = { 1, 2, 4, 6 };
        unsigned looks = 0;
        struct stat st;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (fstatat(dir, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
                        looks |= bits[i];
        return looks == 7;
}

static int git_walk_entry(const tree_entry *e, void *userdata)
{
        git_walk *w = userdata;
        if (streq(e->name, ".git")) /* never entered; the project's own is its plan's */
                return e->depth > 1 ? w->fn(e->dir, e->name, e->path, w->userdata) : 0;
        if (e->type != DT_DIR || e->self < 0)
                return 0;
        if (e->depth > PROTECT_WALK_MAX_DEPTH || ++w->dirs > PROTECT_WALK_MAX_DIRS) {
                w->cut = true;
                return TREE_SKIP;
        }
        if (!looks_like_gitdir(e->self))
                return 0;
        /* Its own .git first, as the listing of it would meet it; then itself. */
        struct stat st;
        _cleanup_free_ char *inner = NULL;
        int r = 0;
        if (fstatat(e->self, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0)
                r = asprintf(&inner, "%s/.git", e->path) < 0 ? -ENOMEM : w->fn(e->self, ".git", inner, w->userdata);
        r = r < 0 ? r : w->fn(e->dir, e->name, e->path, w->userdata);
        return r < 0 ? r : TREE_SKIP;
}

/* Every .git below the project open at root, and every bare repository, to fn; bounded
 * (*ret_cut says the walk stopped there). give_access: a directory the agent made unreadable
 * is made the user's again (and stays so). */
static int walk_git(int root, bool give_access, git_entry_fn fn, void *userdata, bool *ret_cut)
{
        static const char *const closed[] = { ".git", NULL };
        const tree_walk_options o = {
                .flags = give_access ? TREE_WALK_GIVE_ACCESS : 0, .max_entries = PROTECT_WALK_MAX_ENTRIES,
                /* One level more than the directories looked at: the deepest one's names are read. */
                .max_depth = PROTECT_WALK_MAX_DEPTH + 1, .max_path = (PROTECT_WALK_MAX_DEPTH + 2) * 256,
                .closed = closed,
        };
        git_walk w = { .fn = fn, .userdata = userdata, .dirs = 1 };
        int r = tree_walk_with(root, &o, git_walk_entry, &w);
        *ret_cut = w.cut || r == -E2BIG;
        return r == -E2BIG ? 0 : r;
}

/* A git entry below the project at the start (a .git, or a bare repository): a directory is
 * a git directory; a file or a link is watched (a file also read-only over itself). */
static int plan_nested(int dir, const char *name, const char *rel, void *userdata)
{
        builder *b = userdata;
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        if (S_ISDIR(st.st_mode)) {
                static const gitdir_opts none = {};
                int r = protect_gitdir(b, rel, &none, 1);
                r = r < 0 ? r : add_watch(b, rel, &st, NULL);
                _cleanup_free_ char *dest = join(b->dest, rel);
                if (r >= 0)
                        b->plan->watch[r].mounted = dest && mounted_at(b->plan, dest);
                /* A nested repository's own hooks path and includes; its top is where .git is
                 * (a bare one has none). */
                _cleanup_free_ char *config = join(rel, "config"), *host = join(b->host, rel);
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
        _cleanup_free_ char *text = NULL, *host = join(b->host, rel);
        char *named = read_rel(b->root_fd, rel, &text) >= 0 ? first_line(text, "gitdir:") : NULL;
        if (!host)
                return -ENOMEM;
        *strrchr(host, '/') = 0;
        _cleanup_free_ char *gitdir = named ? resolve(host, named) : NULL;
        const char *inside = gitdir ? below(gitdir, b->host) : NULL;
        if (!inside || !*inside)
                return 0;
        static const gitdir_opts none = {};
        _cleanup_free_ char *config = join(inside, "config");
        r = protect_gitdir(b, inside, &none, 1);
        return r < 0 ? r : config ? protect_repo(b, b->root_fd, config, gitdir, host) : -ENOMEM;
}

static int count_replace(char *line, void *userdata)
{
        *(long *) userdata += strstr(line, " refs/replace/") != NULL;
        return 0;
}

/* The replace refs a packed-refs file holds (-1: none to read). */
static long packed_replace_refs(int root, const char *gitdir_rel)
{
        _cleanup_free_ char *rel = join(gitdir_rel, "packed-refs");
        const char *base;
        _cleanup_close_ int parent = rel ? tree_open_parent(root, rel, &base) : -1;
        _cleanup_close_ int fd = parent >= 0 ? openat(parent, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        struct stat st;
        long n = 0;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            read_lines(fd, 256ULL << 20, 4096, count_replace, &n) < 0)
                return -1;
        return n;
}

/* Whether a directory above path holds .git: the repository the project is inside. */
static char *repository_above(const char *path)
{
        _cleanup_free_ char *d = strdup(path);
        while (d && strcmp(d, "/") != 0) {
                char *slash = strrchr(d, '/');
                if (!slash)
                        break;
                slash[slash == d ? 1 : 0] = 0;
                _cleanup_free_ char *git = join(d, ".git");
                struct stat st;
                if (git && lstat(git, &st) == 0)
                        return strdup(d);
        }
        return NULL;
}

static int plan_make(const char *project, bool is_cwd, const char *const *names, unsigned uid, bool fix_access,
                     protect_plan *ret, aisb_error **err)
{
        _cleanup_(protect_plan_done) protect_plan plan = { .project = strdup(project) };
        if (!plan.project)
                return error_oom(err);
        _cleanup_close_ int pfd = is_cwd ? open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : open_absolute(project);
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
                        plan.repository_top = repository_above(project);
                } else if (S_ISDIR(st.st_mode)) {
                        static const gitdir_opts none = {};
                        plan.packed_replace = packed_replace_refs(pfd, ".git");
                        plan.packed_gitdir = strdup(".git");
                        r = plan.packed_gitdir ? protect_gitdir(&b, ".git", &none, 0) : -ENOMEM;
                        r = r < 0 ? r : add_watch(&b, ".git", &st, NULL);
                        if (r >= 0)
                                plan.watch[r].mounted = mounted_at(&plan, SANDBOX_PROJECT "/.git");
                        _cleanup_free_ char *gitdir_host = join(project, ".git");
                        r = r < 0 ? r : gitdir_host ? protect_repo(&b, pfd, ".git/config", gitdir_host, project) : -ENOMEM;
                } else if (S_ISREG(st.st_mode)) {
                        r = protect_one(&b, ".git");
                        _cleanup_free_ char *text = NULL;
                        char *named = r >= 0 && read_rel(pfd, ".git", &text) >= 0 ? first_line(text, "gitdir:") : NULL;
                        _cleanup_free_ char *gitdir = named ? resolve(project, named) : NULL;
                        const char *inside = gitdir ? below(gitdir, project) : NULL;
                        if (r < 0 || (named && !gitdir))
                                return error_oom(err);
                        if (inside && *inside) {
                                static const gitdir_opts none = {};
                                r = protect_gitdir(&b, inside, &none, 0);
                                _cleanup_free_ char *config = join(inside, "config");
                                r = r < 0 ? r : config ? protect_repo(&b, pfd, config, gitdir, project) : -ENOMEM;
                        } else if (gitdir && !inside) {
                                r = protect_worktree(&plan, gitdir, uid, err);
                                if (r < 0)
                                        return r;
                                /* The repository's configuration is in its common directory. */
                                size_t last = strv_length((const char *const *) plan.outside);
                                _cleanup_close_ int cfd = last ? open_absolute(plan.outside[last - 1]) : -1;
                                if (cfd >= 0) {
                                        plan.packed_root = last;
                                        plan.packed_replace = packed_replace_refs(cfd, "");
                                        plan.packed_gitdir = strdup("");
                                        r = plan.packed_gitdir ? protect_repo(&b, cfd, "config", plan.outside[last - 1], project)
                                                               : -ENOMEM;
                                }
                        }
                } else
                        r = add_watch(&b, ".git", &st, NULL);
                if (r >= 0)
                        r = walk_git(pfd, fix_access, plan_nested, &b, &plan.walk_cut);
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
                _cleanup_free_ char *head = rename_unique(moved, "HEAD", moved, "HEAD.aisb-quarantined");
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
        /* Below the quarantine, the same directories as below the root. */
        _cleanup_free_ char *dirs = strdup(rel), *now = join(s->quarantine_dir, rel);
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
        return join(root == 0 ? plan->project : plan->outside[root - 1], rel);
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
        if (watched(s->plan, 0, rel))
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
                _cleanup_free_ char *entry = join(rel, makers[i]);
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
                roots[i] = open_absolute(path);
                const char *slash = strrchr(path, '/');
                if (roots[i] == -EACCES && slash && slash > path) {
                        /* Made unreadable from inside: the user's own again. */
                        _cleanup_free_ char *up = strndup(path, (size_t) (slash - path));
                        _cleanup_close_ int parent = up ? open_absolute(up) : -1;
                        if (parent >= 0)
                                (void) tree_give_access(parent, slash + 1, NULL);
                        roots[i] = open_absolute(path);
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
                                _cleanup_free_ char *rel = join(w->rel, now[j]);
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
            packed_replace_refs(roots[plan->packed_root], plan->packed_gitdir) > plan->packed_replace && fn) {
                _cleanup_free_ char *gitdir = shown_path(plan, plan->packed_root, plan->packed_gitdir);
                _cleanup_free_ char *packed = gitdir ? join(gitdir, "packed-refs") : NULL;
                if (!packed)
                        r = error_oom(err);
                else
                        fn(packed, NULL, "changed during the run to hold more replace refs: git log and git show "
                           "would show other objects than the commits hold (read the agent's commits with git "
                           "--no-replace-objects log -p, and remove them with git replace -d)", userdata);
        }
        bool cut = false;
        if (r >= 0 && plan->git)
                r = walk_git(roots[0], true, sweep_new_git, &s, ret_cut ? ret_cut : &cut);
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
