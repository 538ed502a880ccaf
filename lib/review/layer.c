/* SPDX-License-Identifier: MIT */
#include "layer.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "fileio.h"
#include "tree-walk.h"

#define OPEN_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

void layer_done(layer *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->entries[i].path);
                free(l->entries[i].target);
        }
        free(l->entries);
        *l = (layer) {};
}

void change_set_done(change_set *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->changes[i].path);
                free(s->changes[i].target);
        }
        free(s->changes);
        *s = (change_set) {};
}

static int entry_cmp(const void *a, const void *b)
{
        return tree_path_cmp(((const layer_entry *) a)->path, ((const layer_entry *) b)->path);
}

const layer_entry *layer_find(const layer *l, const char *path)
{
        const layer_entry key = { .path = (char *) path };
        return l->n ? bsearch(&key, l->entries, l->n, sizeof *l->entries, entry_cmp) : NULL;
}

const char *change_kind_name(change_kind k)
{
        static const char *const names[] = {
                [CHANGE_ADDED] = "added", [CHANGE_MODIFIED] = "modified", [CHANGE_DELETED] = "deleted",
                [CHANGE_REPLACED] = "replaced", [CHANGE_MODE] = "mode",
        };
        return (size_t) k < ELEMENTSOF(names) ? names[k] : "?";
}

/* ---- the layer, as the overlay format means it ---- */

typedef struct scan {
        layer *l;
        size_t allocated;
        unsigned uid;
} scan;

/* The overlay's own mark of a directory that hides the project's: "y". (A kernel's newer "x"
 * marks a directory holding xattr whiteouts, which only a layer built by hand has: such a
 * directory's entries are taken as what they are.) */
static bool dir_opaque(int fd)
{
        char value[4];
        ssize_t n = fgetxattr(fd, "user.overlay.opaque", value, sizeof value);
        return n == 1 && value[0] == 'y';
}

/* A link's target as text, never followed; refused when it cannot be read whole. */
static int read_target(const tree_entry *e, layer_entry *le)
{
        char target[LAYER_LINK_MAX + 1];
        ssize_t n = readlinkat(e->dir, e->name, target, sizeof target);
        if (n < 0 || (size_t) n >= sizeof target || (target[n] = 0, strlen(target) != (size_t) n)) {
                le->refused = "a link that cannot be read";
                return 0;
        }
        return (le->target = strdup(target)) ? 0 : -ENOMEM;
}

/* Neither a file, a directory nor a link: the overlay's deletion, a 0/0 character device
 * made by the kernel (owned by the namespace's root, not the user), or refused. */
static void other_kind(const struct stat *st, layer_entry *le)
{
        static const struct { mode_t type; const char *refused; } refused[] = {
                { S_IFCHR, "a character device" }, { S_IFBLK, "a block device" }, { S_IFIFO, "a FIFO" },
                { S_IFSOCK, "a socket" },
        };
        if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0) {
                le->kind = LAYER_WHITEOUT;
                return;
        }
        le->kind = LAYER_OTHER;
        le->refused = "of an unknown type";
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                if ((st->st_mode & S_IFMT) == refused[i].type)
                        le->refused = refused[i].refused;
}

static int scan_entry(const tree_entry *e, void *userdata)
{
        scan *s = userdata;
        const struct stat *st = e->st;
        layer_entry le = { .mode = st->st_mode & 07777, .ino = (uint64_t) st->st_ino };
        int skip = 0;
        if (S_ISREG(st->st_mode)) {
                le.kind = LAYER_FILE;
                le.size = (uint64_t) st->st_size;
        } else if (S_ISDIR(st->st_mode)) {
                le.kind = LAYER_DIR;
                if (e->self < 0) {
                        le.refused = "a directory that cannot be read";
                        skip = TREE_SKIP;
                } else
                        le.opaque = dir_opaque(e->self);
        } else if (S_ISLNK(st->st_mode)) {
                le.kind = LAYER_LINK;
                if (read_target(e, &le) < 0)
                        return -ENOMEM;
        } else
                other_kind(st, &le);
        if (le.kind != LAYER_WHITEOUT && st->st_uid != s->uid && !le.refused) {
                le.refused = "not yours (another owner)";
                if (le.kind == LAYER_DIR)
                        skip = TREE_SKIP;
        }
        if (le.refused)
                le.opaque = false;
        if (ARRAY_GROW(s->l->entries, s->allocated, s->l->n, 64) < 0 || !(le.path = strdup(e->path))) {
                free(le.target);
                return -ENOMEM;
        }
        s->l->entries[s->l->n++] = le;
        /* A whiteout hides the project's entry; nothing is below it. */
        return skip;
}

int layer_scan(int upper, unsigned uid, layer *ret, aisb_error **err)
{
        layer l = {};
        scan s = { .l = &l, .uid = uid };
        int r = tree_walk(upper, LAYER_MAX_ENTRIES, TREE_WALK_STAT, scan_entry, &s);
        if (r < 0) {
                layer_done(&l);
                if (r == -ENOMEM)
                        return error_oom(err);
                if (r == -E2BIG)
                        return aisb_error_set(err, r, "the layer holds more than %d entries: aisb does not read it",
                                              LAYER_MAX_ENTRIES);
                if (r == -ELOOP || r == -ENAMETOOLONG)
                        return aisb_error_set(err, r, "the layer is deeper than %d directories or holds a path longer "
                                                      "than %d bytes: aisb does not read it", TREE_MAX_DEPTH, TREE_PATH_MAX);
                return aisb_error_set(err, r, "reading the layer: %s", strerror(-r));
        }
        *ret = l;
        return 0;
}

/* ---- the layer against the project ---- */

typedef struct changes_builder {
        change_set *set;
        size_t allocated;
} changes_builder;

static int push_change(changes_builder *b, const change *c)
{
        if (ARRAY_GROW(b->set->changes, b->allocated, b->set->n, 64) < 0)
                return -ENOMEM;
        change copy = *c;
        copy.path = strdup(c->path);
        copy.target = c->target ? strdup(c->target) : NULL;
        if (!copy.path || (c->target && !copy.target)) {
                free(copy.path);
                free(copy.target);
                return -ENOMEM;
        }
        b->set->changes[b->set->n++] = copy;
        return 0;
}

static char type_of(mode_t mode)
{
        return S_ISREG(mode) ? MANIFEST_FILE : S_ISDIR(mode) ? MANIFEST_DIR : S_ISLNK(mode) ? MANIFEST_LINK
                                                                                            : MANIFEST_OTHER;
}

/* What the project has at rel now, without following a link on the way: 0 with *ret_type (0
 * when nothing is there), or the error reaching its directory gave (-ELOOP: a link on the
 * way, -ENOTDIR: something else). */
static int project_lookup(tree_dirs *project, const char *rel, struct stat *st, char *ret_type)
{
        const char *name;
        int dir = tree_dirs_parent(project, rel, &name);
        *ret_type = 0;
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        if (fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        *ret_type = type_of(st->st_mode);
        return 0;
}

/* Whether the project's file at rel has the content of the layer's. */
static int same_content(tree_dirs *project, tree_dirs *upper, const char *rel, uint64_t size)
{
        const char *name;
        int pdir = tree_dirs_parent(project, rel, &name);
        _cleanup_close_ int a = pdir >= 0 ? openat(pdir, name, OPEN_FILE_FLAGS) : -1;
        int udir = tree_dirs_parent(upper, rel, &name);
        _cleanup_close_ int b = udir >= 0 ? openat(udir, name, OPEN_FILE_FLAGS) : -1;
        struct stat sa, sb;
        if (a < 0 || b < 0 || fstat(a, &sa) < 0 || fstat(b, &sb) < 0 || !S_ISREG(sa.st_mode) ||
            !S_ISREG(sb.st_mode) || (uint64_t) sa.st_size != size || (uint64_t) sb.st_size != size)
                return 0;
        _cleanup_free_ char *x = malloc(1 << 16), *y = malloc(1 << 16);
        if (!x || !y)
                return -ENOMEM;
        for (uint64_t at = 0; at < size;) {
                size_t want = size - at > (1 << 16) ? 1 << 16 : (size_t) (size - at);
                if (pread_exactly(a, x, want, at) < 0 || pread_exactly(b, y, want, at) < 0)
                        return 0;
                if (memcmp(x, y, want) != 0)
                        return 0;
                at += want;
        }
        return 1;
}

/* Is rel below prefix (a directory's path)? */
static bool below(const char *rel, const char *prefix)
{
        size_t n = strlen(prefix);
        return n && strncmp(rel, prefix, n) == 0 && rel[n] == '/';
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

typedef struct replaced {
        changes_builder *b;
        const char *dir;    /* the opaque directory's path */
        char **held;        /* the layer's own children of it, sorted */
        size_t n_held;
} replaced;

static int replaced_entry(const tree_entry *e, void *userdata)
{
        replaced *x = userdata;
        const char *name = e->name;
        if (x->n_held && bsearch(&name, x->held, x->n_held, sizeof *x->held, name_cmp))
                return TREE_SKIP;
        _cleanup_free_ char *child = NULL;
        if (asprintf(&child, "%s/%s", x->dir, name) < 0)
                return -ENOMEM;
        int r = push_change(x->b, &(change) { .path = child, .kind = CHANGE_DELETED, .kind_in_layer = LAYER_WHITEOUT,
                                              .in_project = type_of(e->st->st_mode) });
        return r < 0 ? r : TREE_SKIP;
}

/* The project's entries of the directory the layer's opaque directory at index at replaces
 * that the layer does not hold (or holds as a whiteout): each is deleted. */
static int opaque_deletions(changes_builder *b, const layer *l, size_t at, tree_dirs *project)
{
        const layer_entry *dir = &l->entries[at];
        size_t prefix = strlen(dir->path) + 1;
        _cleanup_strv_free_ char **held = NULL;
        int r = 0;
        for (size_t j = at + 1; r >= 0 && j < l->n && below(l->entries[j].path, dir->path); j++)
                /* A whiteout too: the loop over the layer reports its deletion. */
                if (!strchr(l->entries[j].path + prefix, '/'))
                        r = strv_push(&held, l->entries[j].path + prefix);
        replaced x = { .b = b, .dir = dir->path, .held = held, .n_held = strv_length((const char *const *) held) };
        strv_sort(held);
        int held_dir = r < 0 ? r : tree_dirs_dir(project, dir->path);
        if (held_dir < 0)
                return r;
        /* Its own entries only: a directory among them is reported, never entered. */
        const tree_walk_options o = { .flags = TREE_WALK_STAT | TREE_WALK_SKIP_DEEP, .max_depth = 1 };
        int k = tree_walk_with(held_dir, &o, replaced_entry, &x);
        return k == -ENOMEM || k == -E2BIG ? k : 0;
}

static int change_cmp(const void *a, const void *b)
{
        return tree_path_cmp(((const change *) a)->path, ((const change *) b)->path);
}

/* A comparison of the layer with the project, entry by entry in the layer's order. */
typedef struct comparison {
        const layer *l;
        changes_builder b;
        tree_dirs *project, *upper;
        /* The last directory the project lacks (or has as something else): what is below it
         * in the layer is new, whatever the project holds further down a path by that name. */
        const char *fresh;
        /* The last opaque directory: a directory below it in the layer replaces the project's
         * by that name whole (overlayfs marks only the one made over a whiteout: after `rm -rf
         * e; mkdir -p e/y` the agent sees e/y empty, though only e is opaque). */
        const char *opaque;
} comparison;

static int compare_dir(comparison *x, size_t i, change *c, const struct stat *st, char have)
{
        const layer_entry *e = &x->l->entries[i];
        if (have != MANIFEST_DIR) {
                c->kind = have ? CHANGE_REPLACED : CHANGE_ADDED;
                x->fresh = e->path;
                return push_change(&x->b, c);
        }
        int r = 0;
        if (e->refused || (st->st_mode & 0777) != c->mode || c->mode_stripped) {
                c->kind = CHANGE_MODE;
                r = push_change(&x->b, c);
        }
        if (e->opaque && !x->opaque)
                x->opaque = e->path;
        return r >= 0 && x->opaque ? opaque_deletions(&x->b, x->l, i, x->project) : r;
}

/* The layer's file at e as the project's: 1 (no change), 0, or a negative errno. */
static int file_unchanged(comparison *x, const layer_entry *e, const struct stat *st)
{
        if ((st->st_mode & 07777) != e->mode || (uint64_t) st->st_size != e->size || e->size > LAYER_COMPARE_MAX)
                return 0;
        return same_content(x->project, x->upper, e->path, e->size);
}

static bool link_unchanged(comparison *x, const layer_entry *e)
{
        char target[LAYER_LINK_MAX + 1];
        const char *name;
        int dir = tree_dirs_parent(x->project, e->path, &name);
        ssize_t n = dir >= 0 ? readlinkat(dir, name, target, sizeof target - 1) : -1;
        return n >= 0 && (target[n] = 0, streq(target, e->target));
}

/* The change the layer's entry at i makes where the project has have (st), pushed; nothing
 * for none. */
static int compare_entry(comparison *x, size_t i, change *c, const struct stat *st, char have)
{
        const layer_entry *e = &x->l->entries[i];
        switch (e->kind) {
        case LAYER_WHITEOUT:
                if (!have)
                        return 0;
                c->kind = CHANGE_DELETED;
                c->mode = 0;
                c->mode_stripped = false;
                c->size = 0;
                break;
        case LAYER_DIR:
                return compare_dir(x, i, c, st, have);
        case LAYER_FILE:
                if (have == MANIFEST_FILE) {
                        int same = file_unchanged(x, e, st);
                        if (same != 0)
                                return same < 0 ? same : 0;
                        c->kind = CHANGE_MODIFIED;
                } else
                        c->kind = have ? CHANGE_REPLACED : CHANGE_ADDED;
                break;
        case LAYER_LINK:
                if (have == MANIFEST_LINK && e->target) {
                        if (link_unchanged(x, e))
                                return 0;
                        c->kind = CHANGE_MODIFIED;
                } else
                        c->kind = have && have != MANIFEST_LINK ? CHANGE_REPLACED : have ? CHANGE_MODIFIED : CHANGE_ADDED;
                break;
        case LAYER_OTHER:
                c->kind = have ? CHANGE_REPLACED : CHANGE_ADDED;
                break;
        }
        return push_change(&x->b, c);
}

int layer_changes(const layer *l, int upper, int project, change_set *ret, aisb_error **err)
{
        /* The project's directories and the layer's, each opened once for the walk's order. */
        _cleanup_(tree_dirs_done) tree_dirs pdirs = TREE_DIRS_INIT(project);
        _cleanup_(tree_dirs_done) tree_dirs udirs = TREE_DIRS_INIT(upper);
        change_set set = {};
        comparison x = { .l = l, .b = { .set = &set }, .project = &pdirs, .upper = &udirs };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < l->n; i++) {
                const layer_entry *e = &l->entries[i];
                if (x.fresh && !below(e->path, x.fresh))
                        x.fresh = NULL;
                if (x.opaque && !below(e->path, x.opaque))
                        x.opaque = NULL;
                change c = { .path = e->path, .kind_in_layer = e->kind, .mode = e->mode & 0777,
                             .mode_stripped = (e->mode & 07000) != 0, .size = e->size, .target = e->target,
                             .refused = e->refused, .layer_ino = e->ino };
                struct stat st = {};
                char have = 0;
                int k = x.fresh ? 0 : project_lookup(&pdirs, e->path, &st, &have);
                if (k == -ELOOP || k == -ENOTDIR) {
                        c.kind = CHANGE_ADDED;
                        c.blocked = k == -ELOOP ? "the project's path to it goes through a link"
                                                : "the project's path to it goes through a file";
                        r = push_change(&x.b, &c);
                        continue;
                }
                c.in_project = have;
                r = k < 0 ? k : compare_entry(&x, i, &c, &st, have);
        }
        if (r < 0) {
                change_set_done(&set);
                return r == -ENOMEM ? error_oom(err)
                                    : aisb_error_set(err, r, "comparing the layer with the project: %s", strerror(-r));
        }
        if (set.n > 1)
                qsort(set.changes, set.n, sizeof *set.changes, change_cmp);
        *ret = set;
        return 0;
}
