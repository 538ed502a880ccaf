/* SPDX-License-Identifier: MIT */
/*
 * aisb diff, apply and discard: a review run's layer (review.h), read as the agent's
 * (layer.h), shown as changes and carried onto the project one path at a time.
 *
 * A protected path (the key protect's names, git's directories wherever they are, what
 * makes a directory look like one to git, a repository's hooks directory and hook managers'
 * configuration, as protect_plan_make finds them in the project) is applied only when a path
 * the user gives names it. A path the user changed in the project since the run began (its
 * inode is not the one the run started with, its ctime is later than the run's start, it is
 * new or gone) is a conflict. Every write goes through tree-write.h.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "fileio.h"
#include "layer.h"
#include "policy.h"
#include "project.h"
#include "protect.h"
#include "review.h"
#include "textdiff.h"
#include "tree-walk.h"
#include "tree-write.h"

#define OPEN_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
#define START_MAX (1ULL << 31)

/* Everything one command needs of a run's layer. */
typedef struct review {
        char *run;
        char *top;          /* STATE/layers/KEY */
        int dir;            /* the layer's directory */
        int upper;
        int project;
        run_info info;
        layer layer;
        change_set changes;
        char **protected_roots; /* below the project, sorted */
        bool git;               /* .git is on the run's protected list */
        /* The directories that git would take for a git directory once the layer is applied,
         * of those the layer gives one of git's marks (HEAD, objects, refs, commondir);
         * sorted. The project's own are among protected_roots. */
        char **git_dirs;
        size_t n_git_dirs;
        uint64_t *git_hashes; /* theirs (FNV-1a), sorted: a path's directories are looked up
                               * by the hash of each prefix, computed as the path is read */
        manifest start;
        bool have_start;
} review;
#define REVIEW_NULL ((review) { .dir = -1, .upper = -1, .project = -1 })

static void review_done(review *r)
{
        free(r->run);
        free(r->top);
        closep(&r->dir);
        closep(&r->upper);
        closep(&r->project);
        run_info_done(&r->info);
        layer_done(&r->layer);
        change_set_done(&r->changes);
        strv_free(r->protected_roots);
        strv_free(r->git_dirs);
        free(r->git_hashes);
        manifest_done(&r->start);
}

/* The protected roots the project has now, as protect_plan_make finds them for the run's
 * list: what it mounts over, what it watches, and the list's own names. */
static int protected_roots(review *r, const char *project, aisb_error **err)
{
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *copy = r->info.protect ? strdup(r->info.protect) : NULL;
        int k = 0;
        if (r->info.protect && !copy)
                return error_oom(err);
        for (char *save = NULL, *tok = copy ? strtok_r(copy, ",", &save) : NULL; k >= 0 && tok;
             tok = strtok_r(NULL, ",", &save))
                k = strv_push(&names, tok);
        if (k < 0)
                return error_oom(err);
        if (!names)
                return 0;
        for (size_t i = 0; names[i]; i++)
                if (!streq(names[i], ".git") && (k = strv_push(&r->protected_roots, names[i])) < 0)
                        return error_oom(err);
        _cleanup_(protect_plan_done) protect_plan plan = {};
        k = protect_plan_look(project, false, (const char *const *) names, (unsigned) getuid(), &plan, err);
        if (k < 0)
                return k;
        size_t prefix = strlen(AISB_PROJECT_DIR) + 1;
        for (size_t i = 0; k >= 0 && i < plan.n_mounts; i++) {
                const char *d = plan.mounts[i].destination;
                /* A directory between the project and a protected one is bound over itself only
                 * to keep it in place: not itself protected. */
                if (strlen(d) > prefix && startswith(d, AISB_PROJECT_DIR "/") && plan.mounts[i].read_only)
                        k = strv_push(&r->protected_roots, d + prefix);
        }
        for (size_t i = 0; k >= 0 && i < plan.n_watch; i++)
                if (plan.watch[i].root == 0)
                        k = strv_push(&r->protected_roots, plan.watch[i].rel);
        return k < 0 ? error_oom(err) : 0;
}

static bool at_or_below(const char *path, const char *root)
{
        size_t n = strlen(root);
        return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* What git reads in a directory it takes for a git directory. */
static bool git_name(const char *name)
{
        static const char *const names[] = { "HEAD", "config", "config.worktree", "commondir", "gitdir", "hooks",
                                             "info", "objects", "refs", "packed-refs", "index", "worktrees",
                                             "modules", "logs" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(name, names[i]))
                        return true;
        return false;
}

/* Whether dir (below the project; "" the project) holds name after the layer is applied: the
 * layer's entry, else the project's. */
static bool merged_has(const review *r, tree_dirs *project, const char *dir, const char *name)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s%s%s", dir, *dir ? "/" : "", name) < 0)
                return false;
        const layer_entry *e = layer_find(&r->layer, path);
        if (e)
                return e->kind != LAYER_WHITEOUT;
        struct stat st;
        const char *leaf;
        int fd = tree_dirs_parent(project, path, &leaf);
        return fd >= 0 && fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* What git takes for a git directory: HEAD, and objects and refs, or a commondir. */
static bool merged_looks_git(const review *r, tree_dirs *project, const char *dir)
{
        return merged_has(r, project, dir, "HEAD") &&
               ((merged_has(r, project, dir, "objects") && merged_has(r, project, dir, "refs")) ||
                merged_has(r, project, dir, "commondir"));
}

static bool git_mark(const char *name)
{
        return streq(name, "HEAD") || streq(name, "objects") || streq(name, "refs") || streq(name, "commondir");
}

#define FNV_START 0xcbf29ce484222325ULL

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                h = (h ^ (unsigned char) s[i]) * 0x100000001b3ULL;
        return h;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* r->git_dirs: once, from the layer's entries (in walk order, so the project's directories
 * are each opened once), rather than for every path each directory above it. */
static int find_git_dirs(review *r)
{
        const char *list = r->info.protect ? r->info.protect : "";
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ",");
                r->git |= n == 4 && strncmp(p, ".git", 4) == 0;
                p += n + (p[n] == ',');
        }
        if (!r->git)
                return 0;
        _cleanup_(tree_dirs_done) tree_dirs project = TREE_DIRS_INIT(r->project);
        /* The project itself, whatever the layer holds (for git's names in it). */
        _cleanup_free_ char *last = strdup("");
        if (!last)
                return -ENOMEM;
        if (merged_looks_git(r, &project, "") && strv_push(&r->git_dirs, "") < 0)
                return -ENOMEM;
        for (size_t i = 0; i < r->layer.n; i++) {
                const layer_entry *e = &r->layer.entries[i];
                const char *slash = strrchr(e->path, '/');
                if (e->kind == LAYER_WHITEOUT || !git_mark(slash ? slash + 1 : e->path))
                        continue;
                _cleanup_free_ char *dir = strndup(e->path, slash ? (size_t) (slash - e->path) : 0);
                if (!dir)
                        return -ENOMEM;
                if (last && streq(last, dir))
                        continue;
                if (merged_looks_git(r, &project, dir) && strv_push(&r->git_dirs, dir) < 0)
                        return -ENOMEM;
                free(last);
                last = steal_pointer(&dir);
        }
        r->n_git_dirs = strv_length((const char *const *) r->git_dirs);
        strv_sort(r->git_dirs);
        if (r->n_git_dirs && !(r->git_hashes = calloc(r->n_git_dirs, sizeof *r->git_hashes)))
                return -ENOMEM;
        for (size_t i = 0; i < r->n_git_dirs; i++)
                r->git_hashes[i] = fnv1a(FNV_START, r->git_dirs[i], strlen(r->git_dirs[i]));
        if (r->n_git_dirs > 1)
                qsort(r->git_hashes, r->n_git_dirs, sizeof *r->git_hashes, cmp_u64);
        return 0;
}

typedef struct bounded {
        const char *s;
        size_t n;
} bounded;

static int cmp_bounded(const void *key, const void *elem)
{
        const bounded *k = key;
        const char *e = *(char *const *) elem;
        int c = strncmp(k->s, e, k->n);
        return c ? c : e[k->n] ? -1 : 0;
}

/* Whether path's first len bytes, whose hash is hash, name a git directory: the strings are
 * compared only for a hash that is one of theirs. */
static bool is_git_dir(const review *r, const char *path, size_t len, uint64_t hash)
{
        bounded key = { path, len };
        return r->n_git_dirs && bsearch(&hash, r->git_hashes, r->n_git_dirs, sizeof hash, cmp_u64) &&
               bsearch(&key, r->git_dirs, r->n_git_dirs, sizeof *r->git_dirs, cmp_bounded);
}

/* The protected root path is at or below, or NULL; *ret_len its length. A directory git would
 * take for a git directory (HEAD, and objects and refs, or a commondir) counts whole, the
 * project itself only for git's names in it. */
static bool protected_at(const review *r, const char *path, size_t *ret_len)
{
        size_t best = SIZE_MAX;
        for (size_t i = 0; r->protected_roots && r->protected_roots[i]; i++)
                if (at_or_below(path, r->protected_roots[i]) && strlen(r->protected_roots[i]) < best)
                        best = strlen(r->protected_roots[i]);
        /* Each directory on the way: a .git, or what looks like a git directory. One pass over
         * the path: each directory's hash is the one before it, carried on. */
        uint64_t hash = FNV_START;
        size_t hashed = 0;
        for (const char *p = path; r->git;) {
                size_t len = (size_t) (p - path);
                const char *slash = strchr(p, '/');
                size_t comp = slash ? (size_t) (slash - p) : strlen(p);
                if (comp == 4 && strncmp(p, ".git", 4) == 0) {
                        best = best < len + 4 ? best : len + 4;
                        break;
                }
                size_t dir_len = len ? len - 1 : 0;
                hash = fnv1a(hash, path + hashed, dir_len - hashed);
                hashed = dir_len;
                if (is_git_dir(r, path, dir_len, hash)) {
                        char first[NAME_MAX + 1];
                        size_t n = comp < sizeof first ? comp : sizeof first - 1;
                        memcpy(first, p, n);
                        first[n] = 0;
                        size_t at = len == 0 && git_name(first) ? comp : dir_len;
                        if (len > 0 || git_name(first)) {
                                best = best < at ? best : at;
                                break;
                        }
                }
                if (!slash)
                        break;
                p = slash + 1;
        }
        if (best == SIZE_MAX)
                return false;
        *ret_len = best;
        return true;
}

/* The layers' directory of the project, and the run that run names there (the newest: NULL). */
static int find_review_run(const aisb_policy *p, const char *run, char **ret_top, char **ret_run, aisb_error **err)
{
        int k = project_state_dir("layers", p->project, false, ret_top, err);
        if (k >= 0)
                k = runs_find(*ret_top, p->project, run, NULL, "review run", ret_run, err);
        if (k == -ENOENT && !run) {
                aisb_error_free(err ? steal_pointer(err) : NULL);
                k = aisb_error_set(err, -ENOENT, "no review run of %s (aisb run --review makes one)", p->project);
        }
        return k;
}

static int review_open(const aisb_policy *p, const char *run, bool need_start, review *ret, aisb_error **err)
{
        review r = REVIEW_NULL;
        int k = project_open(p->project, p->project_is_cwd, err);
        if (k < 0)
                return k;
        r.project = k;
        k = find_review_run(p, run, &r.top, &r.run, err);
        if (k >= 0) {
                _cleanup_close_ int top = open(r.top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                r.dir = top < 0 ? -1 : openat(top, r.run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                r.upper = r.dir < 0 ? -1 : openat(r.dir, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (r.upper < 0)
                        k = aisb_error_set(err, -errno, "the layer of %s: %s", r.run, strerror(errno));
        }
        if (k >= 0 && (k = run_dir_info(r.dir, &r.info)) < 0)
                k = aisb_error_set(err, k, "the layer of %s: its info: %s", r.run, strerror(-k));
        if (k >= 0)
                k = run_info_check_project(&r.info, r.project, err);
        if (k >= 0)
                k = review_changes(r.upper, r.project, &r.layer, &r.changes, err);
        if (k >= 0)
                k = protected_roots(&r, p->project, err);
        if (k >= 0 && (k = find_git_dirs(&r)) < 0)
                k = error_oom(err);
        if (k >= 0 && need_start) {
                _cleanup_close_ int fd = openat(r.dir, "start", OPEN_FILE_FLAGS);
                _cleanup_free_ char *text = NULL;
                size_t size = 0, line = 0;
                struct stat st;
                k = fd < 0 || fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EBADMSG;
                if (k >= 0)
                        k = read_full_fd(fd, START_MAX, &text, &size);
                if (k >= 0)
                        k = manifest_parse(text, size, &r.start, &line);
                if (k < 0)
                        k = aisb_error_set(err, k, "the layer of %s: its start record (line %zu): %s", r.run, line,
                                           strerror(-k));
                r.have_start = k >= 0;
        }
        if (k < 0) {
                review_done(&r);
                return k;
        }
        *ret = r;
        return 0;
}

static char type_char(const change *c)
{
        if (c->kind == CHANGE_DELETED)
                return 0;
        switch (c->kind_in_layer) {
        case LAYER_FILE: return 'f';
        case LAYER_DIR: return 'd';
        case LAYER_LINK: return 'l';
        default: return 'o';
        }
}

static aisb_change public_change(const review *r, const change *c)
{
        size_t len;
        return (aisb_change) {
                .path = c->path, .change = change_kind_name(c->kind), .type = type_char(c), .mode = c->mode,
                .mode_stripped = c->mode_stripped, .size = c->size, .target = c->target,
                .refused = c->refused ? c->refused : c->blocked, .protected_path = protected_at(r, c->path, &len),
        };
}

/* A file's bytes, at most TEXTDIFF_MAX_FILE: NULL (with *note) when it is not a regular
 * file of that size. */
static char *file_bytes(int root, const char *path, size_t *ret_size, const char **note)
{
        const char *name;
        _cleanup_close_ int dir = tree_open_parent(root, path, &name);
        _cleanup_close_ int fd = dir >= 0 ? openat(dir, name, OPEN_FILE_FLAGS) : -1;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                *note = "could not be read";
                return NULL;
        }
        if (st.st_size > TEXTDIFF_MAX_FILE) {
                *note = "larger than 8 MiB";
                return NULL;
        }
        char *data = NULL;
        if (read_full_fd(fd, TEXTDIFF_MAX_FILE, &data, ret_size) < 0) {
                *note = "could not be read";
                return NULL;
        }
        return data;
}

static int patch_of(const review *r, const change *c, char **ret, const char **note, aisb_error **err)
{
        bool old_file = c->in_project == MANIFEST_FILE;
        bool new_file = c->kind != CHANGE_DELETED && c->kind_in_layer == LAYER_FILE && !c->refused && !c->blocked;
        if (!old_file && !new_file)
                return 0;
        size_t old_size = 0, new_size = 0;
        _cleanup_free_ char *old = old_file ? file_bytes(r->project, c->path, &old_size, note) : NULL;
        _cleanup_free_ char *new_data = new_file ? file_bytes(r->upper, c->path, &new_size, note) : NULL;
        if ((old_file && !old) || (new_file && !new_data))
                return 0;
        const char *why = NULL;
        int k = textdiff_unified(c->path, old, old_size, new_data, new_size, ret, &why);
        if (k == 0)
                *note = "binary";
        if (k == -ENOMEM)
                return error_oom(err);
        if (k < 0)
                return aisb_error_set(err, k, "diff: %s", why ? why : strerror(-k));
        return 0;
}

int aisb_review_diff(const aisb_policy *p, const char *run, unsigned flags, aisb_change_fn fn, void *userdata,
                     char **ret_run, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_REVIEW_PATCH)
                return aisb_error_set(err, -EINVAL, "aisb_review_diff: unknown flags 0x%x", flags);
        _cleanup_(review_done) review r = REVIEW_NULL;
        int k = review_open(p, run, false, &r, err);
        if (k < 0)
                return k;
        for (size_t i = 0; i < r.changes.n; i++) {
                const change *c = &r.changes.changes[i];
                aisb_change pc = public_change(&r, c);
                _cleanup_free_ char *patch = NULL;
                if ((flags & AISB_REVIEW_PATCH) && (k = patch_of(&r, c, &patch, &pc.patch_note, err)) < 0)
                        return k;
                pc.patch = patch;
                if (fn && fn(&pc, userdata))
                        break;
        }
        if (ret_run)
                *ret_run = steal_pointer(&r.run);
        return 0;
}

/* ---- apply ---- */

typedef struct applying {
        review *r;
        unsigned flags;
        const char *const *paths; /* normalized; NULL: all */
        aisb_change_fn fn;
        void *userdata;
        size_t not_applied;
        char reason[TREE_PATH_MAX + 128]; /* a reason that names a path, for one report */
} applying;

/* A change the paths select, and whether one of them names its protected root. */
static bool selected(const applying *a, const change *c, bool *ret_named_protected)
{
        size_t root_len;
        bool prot = protected_at(a->r, c->path, &root_len);
        *ret_named_protected = false;
        if (!a->paths)
                return true;
        /* Every path given: one may select it and another, deeper, name its protected root. */
        bool any = false;
        for (size_t i = 0; a->paths[i]; i++) {
                const char *n = a->paths[i];
                if (!at_or_below(c->path, n))
                        continue;
                any = true;
                if (prot && strlen(n) >= root_len)
                        *ret_named_protected = true;
        }
        return any;
}

/* What the user did to rel in the project since the run began, or NULL. */
static const char *changed_since(const review *r, int dir, const char *name, const char *rel, bool *ret_exists)
{
        struct stat st;
        bool exists = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        *ret_exists = exists;
        const manifest_entry *m = manifest_find(&r->start, rel);
        /* Not there at the start: unless below a directory the start could not read, where
         * nothing is known. */
        if (!m) {
                char up[TREE_PATH_MAX];
                snprintf(up, sizeof up, "%s", rel);
                for (char *slash = strrchr(up, '/'); slash; slash = strrchr(up, '/')) {
                        *slash = 0;
                        const manifest_entry *u = manifest_find(&r->start, up);
                        if (u && u->type == MANIFEST_UNREAD)
                                return "its directory could not be read when the run began";
                        if (u)
                                break;
                }
        }
        if (!exists)
                return m ? "it was removed from the project since the run began" : NULL;
        if (!m)
                return "it was made in the project since the run began";
        if (m->ino != (uint64_t) st.st_ino)
                return "it was replaced in the project since the run began";
        long long ctime_ns = (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        if (!S_ISDIR(st.st_mode) && ctime_ns >= r->info.started_ns)
                return "it was changed in the project since the run began";
        return NULL;
}

typedef struct subtree_check {
        const review *r;
        const char *base;
        const char *found;
        char *where;
} subtree_check;

static int subtree_entry(const tree_entry *e, void *userdata)
{
        subtree_check *s = userdata;
        _cleanup_free_ char *rel = NULL;
        if (asprintf(&rel, "%s/%s", s->base, e->path) < 0)
                return -ENOMEM;
        bool exists;
        const char *why = changed_since(s->r, e->dir, e->name, rel, &exists);
        if (why) {
                s->found = why;
                s->where = steal_pointer(&rel);
                return -ECANCELED;
        }
        return 0;
}

/* A directory the change removes: what in it the user changed since the run began. */
static const char *subtree_changed(const review *r, int dir, const char *name, const char *rel, char **ret_where)
{
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        subtree_check s = { .r = r, .base = rel };
        int k = tree_walk(fd, 0, 0, subtree_entry, &s);
        if (k == -ENOMEM || (k < 0 && k != -ECANCELED)) {
                free(s.where);
                return "what is in it could not be read";
        }
        *ret_where = s.where;
        return s.found;
}

/* The directory that holds rel in the project, made (with the layer's mode for each
 * directory the layer has, else 0755) where missing; never through a link. */
static int project_parent(const review *r, const char *rel, const char **ret_name)
{
        if (!tree_path_valid(rel))
                return -EINVAL;
        const char *slash = strrchr(rel, '/');
        *ret_name = slash ? slash + 1 : rel;
        int fd = tree_open_dir(r->project, "", false, 0);
        for (const char *p = rel; fd >= 0 && slash && p < slash;) {
                const char *end = strchr(p, '/');
                _cleanup_free_ char *comp = strndup(p, (size_t) (end - p)), *upto = strndup(rel, (size_t) (end - rel));
                int next = comp && upto ? tree_open_dir(fd, comp, false, 0) : -ENOMEM;
                if (next == -ENOENT) {
                        mode_t mode = 0755;
                        struct stat st;
                        const char *leaf;
                        _cleanup_close_ int udir = tree_open_parent(r->upper, upto, &leaf);
                        if (udir >= 0 && fstatat(udir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                                mode = st.st_mode & 0777;
                        int k = tree_put_dir(fd, comp, mode);
                        next = k < 0 ? k : tree_open_dir(fd, comp, false, 0);
                }
                close(fd);
                fd = next;
                p = end + 1;
        }
        return fd;
}

/* The layer's file, open: still the one listed (its inode), readable (a file of the user's
 * that the agent made unreadable is given back read access for its owner). */
static int layer_file(const review *r, const change *c, struct stat *st)
{
        const char *name;
        _cleanup_close_ int dir = tree_open_parent(r->upper, c->path, &name);
        if (dir < 0)
                return dir;
        int fd = openat(dir, name, OPEN_FILE_FLAGS);
        if (fd < 0 && errno == EACCES) {
                _cleanup_close_ int path = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat ps;
                if (path >= 0 && fstat(path, &ps) == 0 && S_ISREG(ps.st_mode) && ps.st_uid == getuid())
                        (void) fd_chmod(path, (ps.st_mode & 0777) | S_IRUSR);
                fd = openat(dir, name, OPEN_FILE_FLAGS);
        }
        if (fd < 0)
                return -errno;
        if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || (uint64_t) st->st_ino != c->layer_ino) {
                close(fd);
                return -ESTALE;
        }
        return fd;
}

/* The project's path to a change could not be opened: r, and the reason for a link or a file
 * on the way. */
static int path_failed(int r, const char **ret_reason)
{
        *ret_reason = r == -ELOOP ? "the project's path to it goes through a link"
                    : r == -ENOTDIR ? "the project's path to it goes through a file" : NULL;
        return r;
}

static int apply_one(applying *a, const change *c, const char **ret_reason)
{
        review *r = a->r;
        const char *name;
        /* Its directory as it is: nothing is made before the path is known to be no conflict. */
        _cleanup_close_ int dir = tree_open_parent(r->project, c->path, &name);
        if (dir < 0 && dir != -ENOENT)
                return path_failed(dir, ret_reason);
        bool exists = false;
        const char *why = NULL;
        if (dir >= 0)
                why = changed_since(r, dir, name, c->path, &exists);
        else if (manifest_find(&r->start, c->path))
                why = "it was removed from the project since the run began";
        _cleanup_free_ char *where = NULL;
        struct stat st;
        bool is_dir = exists && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        bool removes_dir = is_dir && (c->kind == CHANGE_DELETED || c->kind_in_layer != LAYER_DIR);
        if (!why && removes_dir)
                why = subtree_changed(r, dir, name, c->path, &where);
        if (why && where) {
                snprintf(a->reason, sizeof a->reason, "%s, in it: %s", where, why);
                why = a->reason;
        }
        if (why && !(a->flags & AISB_APPLY_FORCE)) {
                *ret_reason = why;
                return -EEXIST;
        }
        if (c->kind == CHANGE_DELETED && dir < 0)
                return 0; /* gone already, with its directory */
        if (dir < 0) {
                if (a->flags & AISB_APPLY_DRY_RUN)
                        return 0;
                dir = project_parent(r, c->path, &name);
                if (dir < 0)
                        return path_failed(dir, ret_reason);
        }
        if (a->flags & AISB_APPLY_DRY_RUN)
                return 0;
        int k = 0;
        if (c->kind == CHANGE_DELETED || removes_dir)
                k = tree_remove(dir, name);
        if (k < 0 || c->kind == CHANGE_DELETED)
                return k;
        switch (c->kind_in_layer) {
        case LAYER_DIR:
                /* A file or link where the directory goes. */
                if (exists && !is_dir && unlinkat(dir, name, 0) < 0)
                        return -errno;
                return tree_put_dir(dir, name, c->mode);
        case LAYER_FILE: {
                struct stat ust;
                _cleanup_close_ int src = layer_file(r, c, &ust);
                if (src == -ESTALE)
                        *ret_reason = "it changed in the layer since the layer was read";
                if (src < 0)
                        return src;
                return tree_put_file(dir, name, src, (uint64_t) ust.st_size, c->mode, &ust.st_mtim);
        }
        case LAYER_LINK: {
                char target[LAYER_LINK_MAX + 1];
                const char *uname;
                _cleanup_close_ int udir = tree_open_parent(r->upper, c->path, &uname);
                ssize_t n = udir >= 0 ? readlinkat(udir, uname, target, sizeof target - 1) : -1;
                if (n < 0)
                        return -errno;
                target[n] = 0;
                if (!c->target || !streq(target, c->target)) {
                        *ret_reason = "it changed in the layer since the layer was read";
                        return -ESTALE;
                }
                return tree_put_link(dir, name, target);
        }
        default:
                return -EINVAL;
        }
}

/* Whether the layer's packed-refs holds a replace ref (read in pieces, a piece's end carried
 * into the next so that a name across two is still seen); one that cannot be read counts. */
static bool packed_refs_replace(const review *r, const change *c)
{
        static const char needle[] = " refs/replace/";
        struct stat st;
        _cleanup_close_ int fd = layer_file(r, c, &st);
        if (fd < 0)
                return true;
        char buf[64 * 1024 + sizeof needle];
        size_t kept = 0;
        for (;;) {
                ssize_t n = read(fd, buf + kept, sizeof buf - kept - 1);
                if (n < 0)
                        return true;
                if (n == 0)
                        return false;
                size_t have = kept + (size_t) n;
                if (memmem(buf, have, needle, sizeof needle - 1))
                        return true;
                kept = have < sizeof needle - 1 ? have : sizeof needle - 1;
                memmove(buf, buf + have - kept, kept);
        }
}

/* What makes git run or read elsewhere, at the components of rel below a git directory: its
 * configuration (core.fsmonitor, core.hooksPath, filters, includes), hooks, info/ (grafts,
 * attributes), a commondir or gitdir naming another directory, shallow (history cut),
 * branches/ and remotes/ (fetch URLs), a rebase's or a cherry-pick's todo (its exec lines run
 * on --continue), rr-cache/ (recorded resolutions replayed into the user's merges), object
 * alternates and replace refs (other objects in place of the commits'), and a link anywhere
 * (git makes none there: one leads the repository's objects or refs elsewhere, into the home
 * volume say, where later runs change them unreviewed). An object or pack that changed: git
 * never rewrites one, and a new content under a reviewed name forges history. A linked
 * worktree's or a submodule's own git directory (worktrees/X, modules/X, whose names are
 * free-form) has them too: below those every component is looked at. Elsewhere the scan stops
 * at refs, objects and logs, whose names are the repository's own. The reason, or NULL. */
static const char *git_redirects(const review *r, const change *c, const char *rel)
{
        static const char *const redirectors[] = { "config", "config.worktree", "commondir", "gitdir", "hooks",
                                                   "info", "shallow", "branches", "remotes", "rebase-merge",
                                                   "rebase-apply", "sequencer", "rr-cache" };
        if (c->kind_in_layer == LAYER_LINK)
                return "a link in a git directory: git would read objects, refs or configuration from where it points";
        bool nested = false, in_objects = false;
        for (const char *p = rel; *p;) {
                size_t n = strcspn(p, "/");
                const char *next = p[n] ? p + n + 1 : p + n;
                for (size_t i = 0; i < ELEMENTSOF(redirectors); i++)
                        if (strlen(redirectors[i]) == n && strncmp(p, redirectors[i], n) == 0)
                                return "what makes git run or read elsewhere (configuration, hooks, info, "
                                       "commondir, gitdir, shallow, a rebase's todo, recorded resolutions)";
                if (p == rel && ((n == 7 && strncmp(p, "modules", 7) == 0) || (n == 9 && strncmp(p, "worktrees", 9) == 0)))
                        nested = true;
                if (n == 7 && strncmp(p, "objects", 7) == 0) {
                        if (startswith(next, "info") && (next[4] == 0 || next[4] == '/'))
                                return "object alternates or info: git would read objects from elsewhere";
                        /* git looks in packs before loose objects: a new pack's index can give a
                         * reviewed commit's name other content. */
                        if (startswith(next, "pack/") && c->kind_in_layer != LAYER_DIR)
                                return "a pack: git reads its objects first, and its index can give a reviewed "
                                       "object's name other content (git verify-pack checks one)";
                        in_objects = true;
                        if (!nested)
                                break;
                } else if (n == 4 && strncmp(p, "refs", 4) == 0) {
                        if (startswith(next, "replace") && (next[7] == 0 || next[7] == '/'))
                                return "a replace ref: git log and git show would show another object in its place";
                        if (!nested)
                                return NULL;
                } else if (n == 4 && strncmp(p, "logs", 4) == 0 && !nested)
                        return NULL;
                else if (n == 11 && strncmp(p, "packed-refs", 11) == 0 && !*next &&
                         (c->kind_in_layer != LAYER_FILE || packed_refs_replace(r, c)))
                        return "packed-refs holding a replace ref: git log and git show would show another object "
                               "in its place";
                p = next;
        }
        if (in_objects && c->kind != CHANGE_ADDED && c->kind_in_layer != LAYER_DIR)
                return "an object or pack that changed: git never rewrites one, and new content under its name "
                       "would show another commit in its place";
        return NULL;
}

/* Whether the project's dir (before the run; "" the project) is what git takes for a git
 * directory. */
static bool project_looks_git(const review *r, const char *dir)
{
        _cleanup_close_ int fd = tree_open_dir(r->project, dir, false, 0);
        struct stat st;
        if (fd < 0 || fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        return (fstatat(fd, "objects", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                fstatat(fd, "refs", &st, AT_SYMLINK_NOFOLLOW) == 0) ||
               fstatat(fd, "commondir", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Why applying c would let the layer redirect the user's git, or NULL: a .git that is not a
 * directory (a gitdir: file names another git directory), what git_redirects names below a
 * .git or any directory git takes for a git directory, and what makes one of the agent's a
 * git directory (its HEAD, objects, refs or commondir where the project had none). Taking
 * them needs the exact path and --force. */
static const char *redirects_git(const review *r, const change *c)
{
        if (c->kind == CHANGE_DELETED)
                return NULL;
        const char *path = c->path;
        for (const char *p = path;;) {
                size_t len = (size_t) (p - path);
                size_t n = strcspn(p, "/");
                if (n == 4 && strncmp(p, ".git", 4) == 0) {
                        if (!p[n])
                                return c->kind_in_layer == LAYER_DIR ? NULL
                                                                     : "a .git that is not a directory: git would use "
                                                                       "the git directory it names";
                        return git_redirects(r, c, p + n + 1);
                }
                /* A directory on the way that git takes for a git directory. */
                size_t dir_len = len ? len - 1 : 0;
                if (r->n_git_dirs &&
                    is_git_dir(r, path, dir_len, fnv1a(FNV_START, path, dir_len))) {
                        const char *why = git_redirects(r, c, p);
                        if (why)
                                return why;
                        _cleanup_free_ char *dir = strndup(path, dir_len);
                        bool mark = (n == 4 && (strncmp(p, "HEAD", 4) == 0 || strncmp(p, "refs", 4) == 0)) ||
                                    (n == 7 && strncmp(p, "objects", 7) == 0) ||
                                    (n == 9 && strncmp(p, "commondir", 9) == 0);
                        if (mark && (!dir || !project_looks_git(r, dir)))
                                return "what makes its directory a git directory (git there would use its "
                                       "configuration and hooks)";
                        return NULL;
                }
                if (!p[n])
                        return NULL;
                p += n + 1;
        }
}

static int report(applying *a, const change *c, const char *action, const char *reason)
{
        aisb_change pc = public_change(a->r, c);
        pc.action = action;
        pc.reason = reason;
        return a->fn ? a->fn(&pc, a->userdata) : 0;
}

/* Each path given, relative to the project, without "./" or a trailing '/'; it must select
 * a change. */
static int normalize_paths(const review *r, const char *const *paths, char ***ret, aisb_error **err)
{
        _cleanup_strv_free_ char **out = NULL;
        for (size_t i = 0; paths && paths[i]; i++) {
                _cleanup_free_ char *p = strdup(paths[i]);
                if (!p)
                        return error_oom(err);
                char *s = p;
                while (startswith(s, "./"))
                        s += 2;
                size_t n = strlen(s);
                while (n > 0 && s[n - 1] == '/')
                        s[--n] = 0;
                if (!tree_path_valid(s))
                        return aisb_error_set(err, -EINVAL, "%s: give a path below the project (no \"..\", not absolute)",
                                              paths[i]);
                bool any = false;
                for (size_t j = 0; j < r->changes.n && !any; j++)
                        any = at_or_below(r->changes.changes[j].path, s);
                if (!any)
                        return aisb_error_set(err, -ENOENT, "%s: the run changed nothing there (aisb diff lists what it "
                                                            "changed)", paths[i]);
                if (strv_push(&out, s) < 0)
                        return error_oom(err);
        }
        *ret = steal_pointer(&out);
        return 0;
}

int aisb_review_apply(const aisb_policy *p, const char *run, const char *const *paths, unsigned flags,
                      aisb_change_fn fn, void *userdata, char **ret_run, aisb_error **err)
{
        if (flags & ~(unsigned) (AISB_APPLY_FORCE | AISB_APPLY_DRY_RUN))
                return aisb_error_set(err, -EINVAL, "aisb_review_apply: unknown flags 0x%x", flags);
        _cleanup_(review_done) review r = REVIEW_NULL;
        int k = review_open(p, run, true, &r, err);
        if (k < 0)
                return k;
        if (run_dir_running(r.dir))
                return aisb_error_set(err, -EBUSY, "%s is still running: apply its changes once it has ended", r.run);
        /* Its aisb killed, the sandbox may live on and write the layer while it is applied. */
        if (run_info_interrupted(&r.info))
                return aisb_error_set(err, -EBUSY, "%s did not end (its aisb was killed): its sandbox may still write "
                                                   "the layer; aisb clean removes the sandbox, then apply", r.run);
        _cleanup_strv_free_ char **named = NULL;
        if (paths && paths[0] && (k = normalize_paths(&r, paths, &named, err)) < 0)
                return k;
        applying a = { .r = &r, .flags = flags, .paths = (const char *const *) named, .fn = fn, .userdata = userdata };
        const bool dry = flags & AISB_APPLY_DRY_RUN;
        /* A directory that a change removed, already gone with everything in it. */
        const char *removed = NULL;
        /* A dry run: a directory that would replace what the project has there (a link, a
         * file) and what would be made in it. */
        const char *made = NULL;
        for (size_t i = 0; i < r.changes.n; i++) {
                const change *c = &r.changes.changes[i];
                bool named_protected;
                if (!selected(&a, c, &named_protected))
                        continue;
                if (removed && at_or_below(c->path, removed))
                        continue;
                removed = NULL;
                size_t root_len;
                int stop = 0;
                const char *redirects = NULL;
                if (c->refused || c->blocked) {
                        a.not_applied++;
                        stop = report(&a, c, "refused", c->refused ? c->refused : c->blocked);
                } else if (protected_at(&r, c->path, &root_len) && !named_protected)
                        stop = report(&a, c, "skipped", "a protected path: name it to apply it");
                else if ((redirects = redirects_git(&r, c)) &&
                         !((flags & AISB_APPLY_FORCE) && strv_contains(a.paths, c->path))) {
                        a.not_applied++;
                        snprintf(a.reason, sizeof a.reason, "%s; to take it anyway, name %s itself with --force",
                                 redirects, c->path);
                        stop = report(&a, c, "refused", a.reason);
                } else if (dry && made && at_or_below(c->path, made))
                        stop = report(&a, c, "would apply", NULL);
                else {
                        const char *reason = NULL;
                        k = apply_one(&a, c, &reason);
                        if (k >= 0) {
                                if (c->kind == CHANGE_DELETED)
                                        removed = c->path;
                                if (dry && c->kind_in_layer == LAYER_DIR &&
                                    (c->kind == CHANGE_REPLACED || c->kind == CHANGE_ADDED))
                                        made = c->path;
                                stop = report(&a, c, dry ? "would apply" : "applied", NULL);
                        } else {
                                a.not_applied++;
                                stop = report(&a, c, k == -EEXIST ? "conflict" : "failed",
                                              reason ? reason : strerror(-k));
                        }
                }
                if (stop)
                        break;
        }
        if (ret_run)
                *ret_run = steal_pointer(&r.run);
        return (int) (a.not_applied > INT32_MAX ? INT32_MAX : a.not_applied);
}

int aisb_review_discard(aisb_ctx *ctx, const aisb_policy *p, const char *run, char **ret_run, aisb_error **err)
{
        if (!p->project)
                return aisb_error_set(err, -EINVAL, "no project: run aisb in the project's directory");
        _cleanup_free_ char *top = NULL, *name = NULL;
        int k = find_review_run(p, run, &top, &name, err);
        if (k >= 0)
                k = runs_remove(ctx, top, name, err);
        if (k >= 0 && ret_run)
                *ret_run = steal_pointer(&name);
        return k;
}
