/* SPDX-License-Identifier: MIT */
#include "tree-walk.h"

#include "fileio.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#define OPEN_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
#define GETDENTS_BUFFER (32 * 1024)

/* A byte's rank: the end of the path first, then '/', then every other byte in order. */
static unsigned rank(unsigned char c)
{
        return c == 0 ? 0 : c == '/' ? 1 : (unsigned) c + 1;
}

int tree_path_cmp(const char *a, const char *b)
{
        for (;; a++, b++) {
                unsigned x = rank((unsigned char) *a), y = rank((unsigned char) *b);
                if (x != y)
                        return x < y ? -1 : 1;
                if (x == 0)
                        return 0;
        }
}

/* A subdirectory by one name. openat2 refuses a link anywhere (RESOLVE_NO_SYMLINKS) and a
 * name that leads out (RESOLVE_BENEATH) by itself; a kernel without it (or a sandbox whose
 * filter answers ENOSYS) gets openat with O_NOFOLLOW, which for one component is the same. */
int tree_open_child(int dir, const char *name)
{
        static int no_openat2;
        if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
                struct open_how how = { .flags = OPEN_DIR_FLAGS, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
                int fd = (int) syscall(SYS_openat2, dir, name, &how, sizeof how);
                if (fd >= 0 || errno != ENOSYS)
                        return fd < 0 ? -errno : fd;
                __atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
        }
        int fd = openat(dir, name, OPEN_DIR_FLAGS);
        return fd < 0 ? -errno : fd;
}

int tree_dir_each(int fd, char *buf, size_t size, tree_name_fn fn, void *userdata)
{
        for (;;) {
                long got = syscall(SYS_getdents64, fd, buf, size);
                if (got <= 0)
                        return got < 0 ? -errno : 0;
                for (long at = 0; at < got;) {
                        const struct dirent64_record *de = (const void *) (buf + at);
                        at += de->d_reclen;
                        const char *n = de->d_name;
                        if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
                                continue;
                        int r = fn(fd, n, de->d_type, de->d_ino, userdata);
                        if (r)
                                return r;
                }
        }
}

typedef struct dir_item {
        char *name;
        uint64_t ino;
        unsigned char type;
} dir_item;

static int item_cmp(const void *a, const void *b)
{
        return strcmp(((const dir_item *) a)->name, ((const dir_item *) b)->name);
}

/* One directory's entries as they are read: the names in one block, which the items hold
 * offsets into until it stops moving. */
typedef struct listing {
        dir_item *items;
        size_t n, allocated;
        buffer names;
        size_t max, max_dir; /* entries left in all; of this directory (0: no bound) */
} listing;

static int list_one(int fd, const char *name, unsigned char type, uint64_t ino, void *userdata)
{
        listing *l = userdata;
        if (l->max_dir && l->n >= l->max_dir)
                return 1; /* the rest of this directory passed over */
        if (l->n >= l->max)
                return -E2BIG;
        if (ARRAY_GROW(l->items, l->allocated, l->n, 64) < 0)
                return -ENOMEM;
        l->items[l->n++] = (dir_item) { .name = (char *) (uintptr_t) l->names.size, .ino = ino, .type = type };
        return buffer_append(&l->names, name, strlen(name) + 1);
}

/* The entries of fd, sorted (names copied into one block, which the items point into); -E2BIG
 * with those read before max. */
static int read_items(char *buf, int fd, size_t max, size_t max_dir, dir_item **ret, size_t *ret_n,
                      char **ret_names)
{
        listing l = { .max = max, .max_dir = max_dir };
        int r = tree_dir_each(fd, buf, GETDENTS_BUFFER, list_one, &l);
        r = r == 1 ? 0 : r;
        if (r < 0 && r != -E2BIG) {
                free(l.items);
                buffer_free(&l.names);
                return r;
        }
        for (size_t i = 0; i < l.n; i++)
                l.items[i].name = l.names.data + (uintptr_t) l.items[i].name;
        if (l.n > 1)
                qsort(l.items, l.n, sizeof *l.items, item_cmp);
        *ret = l.items;
        *ret_n = l.n;
        *ret_names = buffer_steal(&l.names);
        return r;
}

typedef struct walker {
        tree_fn fn;
        void *userdata;
        tree_walk_options o;
        size_t entries;
        char *path; /* o.max_path bytes */
        char *buf;  /* getdents64's */
} walker;

/* A subdirectory, open and searchable, or -errno. */
static int open_searchable(int fd, const char *name)
{
        int self = tree_open_child(fd, name);
        /* Readable is not enough: one without search permission (mode 0644, say, not root)
         * lists names whose entries cannot be looked at. The kernel's lookup of "." asks for
         * exactly that permission. */
        struct stat dot;
        if (self >= 0 && fstatat(self, ".", &dot, AT_SYMLINK_NOFOLLOW) < 0) {
                int e = -errno;
                close(self);
                return e;
        }
        return self;
}

/* e's directory opened for the walk into e->self (or its error into e->open_error); *ret_mode
 * what it had when its access had to be given. */
static void open_entry_dir(walker *w, tree_entry *e, bool *ret_fixed, mode_t *ret_mode)
{
        if (e->depth >= w->o.max_depth && (w->o.flags & TREE_WALK_SKIP_DEEP)) {
                e->open_error = -ELOOP; /* reported, not entered */
                return;
        }
        if (w->o.closed && strv_contains(w->o.closed, e->name))
                return;
        int self = open_searchable(e->dir, e->name);
        if (self == -EACCES && (w->o.flags & (TREE_WALK_FIX_ACCESS | TREE_WALK_GIVE_ACCESS)) &&
            (*ret_fixed = tree_give_access(e->dir, e->name, ret_mode)))
                self = open_searchable(e->dir, e->name);
        e->open_error = self < 0 ? self : 0;
        e->self = self < 0 ? -1 : self;
}

static int walk_dir(walker *w, int fd, size_t path_len, unsigned depth);

/* One entry of a directory: stat'ed (when asked or its type is unknown), reported, entered. */
static int walk_entry(walker *w, int fd, const dir_item *it, size_t path_len, unsigned depth)
{
        size_t name_len = strlen(it->name);
        size_t len = path_len + (path_len ? 1 : 0) + name_len;
        if (len >= w->o.max_path && (w->o.flags & TREE_WALK_SKIP_DEEP)) {
                tree_entry e = { .dir = fd, .name = it->name, .path = w->path, .type = it->type, .ino = it->ino,
                                 .depth = depth, .self = -1, .open_error = -ENAMETOOLONG };
                int r = w->fn(&e, w->userdata);
                return r == TREE_SKIP ? 0 : r;
        }
        if (len >= w->o.max_path)
                return -ENAMETOOLONG;
        if (path_len)
                w->path[path_len] = '/';
        memcpy(w->path + path_len + (path_len ? 1 : 0), it->name, name_len + 1);

        struct stat st;
        bool have_st = false;
        unsigned char type = it->type;
        if ((w->o.flags & TREE_WALK_STAT) || type == DT_UNKNOWN) {
                if (fstatat(fd, it->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return errno == ENOENT ? 0 : -errno; /* gone meanwhile: passed over */
                have_st = true;
                type = IFTODT(st.st_mode); /* DT_* are S_IF* >> 12 */
        }
        tree_entry e = { .dir = fd, .name = it->name, .path = w->path, .type = type,
                         .ino = have_st ? (uint64_t) st.st_ino : it->ino, .depth = depth,
                         .st = (w->o.flags & TREE_WALK_STAT) ? &st : NULL, .self = -1 };
        bool fixed = false;
        mode_t was = 0;
        if (type == DT_DIR)
                open_entry_dir(w, &e, &fixed, &was);
        _cleanup_close_ int self = e.self;
        int r = w->fn(&e, w->userdata);
        if (r != TREE_SKIP && r >= 0 && self >= 0)
                r = walk_dir(w, self, len, depth + 1);
        /* Looked at, not changed: the mode it had. */
        if (fixed && self >= 0 && !(w->o.flags & TREE_WALK_GIVE_ACCESS))
                (void) fchmod(self, was);
        return r == TREE_SKIP ? 0 : r;
}

static int walk_dir(walker *w, int fd, size_t path_len, unsigned depth)
{
        if (depth > w->o.max_depth)
                return -ELOOP;
        _cleanup_free_ dir_item *items = NULL;
        _cleanup_free_ char *names = NULL;
        size_t n = 0;
        int cut = read_items(w->buf, fd, w->o.max_entries - w->entries, w->o.max_dir_entries, &items, &n, &names);
        if (cut < 0 && cut != -E2BIG)
                return cut;
        w->entries += n;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = walk_entry(w, fd, &items[i], path_len, depth);
                w->path[path_len] = 0;
        }
        return r < 0 ? r : cut;
}

int tree_walk_with(int root, const tree_walk_options *o, tree_fn fn, void *userdata)
{
        walker w = { .fn = fn, .userdata = userdata, .o = *o };
        w.o.max_entries = o->max_entries ? o->max_entries : TREE_DEFAULT_MAX_ENTRIES;
        w.o.max_depth = o->max_depth ? o->max_depth : TREE_MAX_DEPTH;
        w.o.max_path = o->max_path ? o->max_path : TREE_PATH_MAX;
        _cleanup_free_ char *buf = malloc(GETDENTS_BUFFER), *path = calloc(1, w.o.max_path);
        if (!buf || !path)
                return -ENOMEM;
        w.buf = buf;
        w.path = path;
        /* A descriptor of the walk's own: root's offset is the caller's. */
        _cleanup_close_ int fd = openat(root, ".", OPEN_DIR_FLAGS);
        if (fd < 0)
                return -errno;
        return walk_dir(&w, fd, 0, 1);
}

int tree_walk(int root, size_t max_entries, unsigned flags, tree_fn fn, void *userdata)
{
        return tree_walk_with(root, &(tree_walk_options) { .flags = flags, .max_entries = max_entries }, fn, userdata);
}

int tree_dir_names(int dir, char ***ret)
{
        _cleanup_free_ char *buf = malloc(GETDENTS_BUFFER);
        if (!buf)
                return -ENOMEM;
        if (lseek(dir, 0, SEEK_SET) < 0)
                return -errno;
        _cleanup_free_ dir_item *items = NULL;
        _cleanup_free_ char *names = NULL;
        size_t n = 0;
        int r = read_items(buf, dir, TREE_DEFAULT_MAX_ENTRIES, 0, &items, &n, &names);
        char **v = r < 0 ? NULL : calloc(n + 1, sizeof *v);
        if (r < 0 || !v)
                return r < 0 ? r : -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(v[i] = strdup(items[i].name))) {
                        strv_free(v);
                        return -ENOMEM;
                }
        *ret = v;
        return 0;
}

bool tree_path_valid(const char *rel)
{
        if (!rel || !*rel || *rel == '/' || strlen(rel) >= TREE_PATH_MAX)
                return false;
        for (const char *p = rel; *p;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);
                if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.') || len > 255)
                        return false;
                if (!slash)
                        break;
                p = slash + 1;
                if (!*p)
                        return false;
        }
        return true;
}

int tree_open_dir(int root, const char *rel, bool create, mode_t mode)
{
        _cleanup_close_ int fd = openat(root, ".", OPEN_DIR_FLAGS);
        if (fd < 0)
                return -errno;
        if (rel && *rel && !tree_path_valid(rel))
                return -EINVAL;
        char component[256];
        for (const char *p = rel ? rel : ""; *p;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);
                memcpy(component, p, len);
                component[len] = 0;
                int next = tree_open_child(fd, component);
                if (next == -ENOENT && create) {
                        if (mkdirat(fd, component, mode) < 0 && errno != EEXIST)
                                return -errno;
                        next = tree_open_child(fd, component);
                }
                if (next < 0) {
                        int e = -next;
                        /* A link where a directory should be is named as such. */
                        struct stat st;
                        if ((e == ENOTDIR || e == ELOOP) && fstatat(fd, component, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                e = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
                        return -e;
                }
                close(fd);
                fd = next;
                p += len;
                if (*p == '/')
                        p++;
        }
        return steal_fd(&fd);
}

int tree_open_parent(int root, const char *rel, const char **ret_name)
{
        if (!tree_path_valid(rel))
                return -EINVAL;
        const char *slash = strrchr(rel, '/');
        *ret_name = slash ? slash + 1 : rel;
        if (!slash)
                return tree_open_dir(root, "", false, 0);
        _cleanup_free_ char *parent = strndup(rel, (size_t) (slash - rel));
        if (!parent)
                return -ENOMEM;
        return tree_open_dir(root, parent, false, 0);
}

/* The levels held from level on let go. */
static void dirs_drop(tree_dirs *c, size_t level)
{
        for (; c->n > level; c->n--) {
                free(c->level[c->n - 1].name);
                closep(&c->level[c->n - 1].fd);
        }
}

void tree_dirs_done(tree_dirs *c)
{
        dirs_drop(c, 0);
        free(c->level);
        *c = TREE_DIRS_INIT(c->root);
}

/* The directory of rel's first len bytes (whole components). */
static int dirs_open(tree_dirs *c, const char *rel, size_t len)
{
        size_t level = 0;
        for (const char *p = rel, *end = rel + len; p < end; level++) {
                const char *slash = memchr(p, '/', (size_t) (end - p));
                size_t n = slash ? (size_t) (slash - p) : (size_t) (end - p);
                if (level < c->n && strlen(c->level[level].name) == n && memcmp(c->level[level].name, p, n) == 0) {
                        p += n + (slash != NULL);
                        continue;
                }
                dirs_drop(c, level); /* a different directory at this level: what was below it goes */
                if (ARRAY_GROW(c->level, c->allocated, c->n, 16) < 0)
                        return -ENOMEM;
                char *name = strndup(p, n);
                int fd = name ? tree_open_dir(level ? c->level[level - 1].fd : c->root, name, false, 0) : -ENOMEM;
                if (fd < 0) {
                        free(name);
                        return fd;
                }
                c->level[c->n++] = (struct tree_dirs_level) { .name = name, .fd = fd };
                p += n + (slash != NULL);
        }
        return level ? c->level[level - 1].fd : c->root;
}

int tree_dirs_parent(tree_dirs *c, const char *rel, const char **ret_name)
{
        if (!tree_path_valid(rel))
                return -EINVAL;
        const char *slash = strrchr(rel, '/');
        *ret_name = slash ? slash + 1 : rel;
        return dirs_open(c, rel, slash ? (size_t) (slash - rel) : 0);
}

int tree_dirs_dir(tree_dirs *c, const char *rel)
{
        if (*rel && !tree_path_valid(rel))
                return -EINVAL;
        return dirs_open(c, rel, strlen(rel));
}

bool tree_give_access(int dir, const char *name, mode_t *ret_mode)
{
        _cleanup_close_ int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return false;
        if (ret_mode)
                *ret_mode = st.st_mode & 07777;
        return fd_chmod(fd, (st.st_mode & 07777) | S_IRWXU) == 0;
}

/* The first error met, for a removal that goes on past it. */
static int remove_each(int fd, const char *name, unsigned char type, uint64_t ino, void *userdata)
{
        int r = tree_remove(fd, name), *first = userdata;
        if (r < 0 && !*first)
                *first = r;
        return 0;
}

static int remove_dir_contents(int fd)
{
        _cleanup_free_ char *buf = malloc(GETDENTS_BUFFER);
        if (!buf)
                return -ENOMEM;
        int first = 0;
        /* Entries are removed as they are read; what stays (an error) is not read again. */
        int r = tree_dir_each(fd, buf, GETDENTS_BUFFER, remove_each, &first);
        return first ? first : r;
}

int tree_remove(int dir, const char *name)
{
        if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        int fd = openat(dir, name, OPEN_DIR_FLAGS);
        if (fd < 0 && errno == EACCES) {
                (void) tree_give_access(dir, name, NULL);
                fd = openat(dir, name, OPEN_DIR_FLAGS);
        }
        if (fd < 0)
                return errno == ENOTDIR ? -EPERM : -errno;
        /* Writable, so that its entries can go. */
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU && st.st_uid == geteuid())
                (void) fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
        int r = remove_dir_contents(fd);
        close(fd);
        if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return r < 0 ? r : -errno;
        return 0;
}
