/* SPDX-License-Identifier: MIT */
#include "tree-walk.h"

#include "fileio.h"

#include <dirent.h>
#include <fcntl.h>
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

typedef struct dir_item {
        char *name;
        uint64_t ino;
        unsigned char type;
} dir_item;

static int item_cmp(const void *a, const void *b)
{
        return strcmp(((const dir_item *) a)->name, ((const dir_item *) b)->name);
}

typedef struct walker {
        tree_fn fn;
        void *userdata;
        unsigned flags;
        size_t entries, max_entries;
        char path[TREE_PATH_MAX];
        char *buf; /* getdents64's */
} walker;

/* The entries of fd (names copied into one block, which the items point into). */
static int read_items(walker *w, int fd, dir_item **ret, size_t *ret_n, char **ret_names)
{
        buffer names = {};
        _cleanup_free_ dir_item *items = NULL;
        size_t n = 0, allocated = 0;
        int r = 0;
        for (;;) {
                long got = syscall(SYS_getdents64, fd, w->buf, GETDENTS_BUFFER);
                if (got < 0) {
                        r = -errno;
                        break;
                }
                if (got == 0)
                        break;
                for (long at = 0; at < got;) {
                        const struct dirent64_record *de = (const void *) (w->buf + at);
                        at += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (w->entries + n >= w->max_entries) {
                                r = -E2BIG;
                                break;
                        }
                        if (n == allocated) {
                                size_t grow = allocated ? allocated * 2 : 64;
                                dir_item *more = realloc(items, grow * sizeof *items);
                                if (!more) {
                                        r = -ENOMEM;
                                        break;
                                }
                                items = more;
                                allocated = grow;
                        }
                        /* The offset into names, turned into a pointer once names stops moving. */
                        items[n++] = (dir_item) { .name = (char *) (uintptr_t) names.size, .ino = de->d_ino,
                                                  .type = de->d_type };
                        r = buffer_append(&names, de->d_name, strlen(de->d_name) + 1);
                        if (r < 0)
                                break;
                }
                if (r < 0)
                        break;
        }
        if (r < 0 && r != -E2BIG) {
                buffer_free(&names);
                return r;
        }
        for (size_t i = 0; i < n; i++)
                items[i].name = names.data + (uintptr_t) items[i].name;
        if (n > 1)
                qsort(items, n, sizeof *items, item_cmp);
        *ret = steal_pointer(&items);
        *ret_n = n;
        *ret_names = buffer_steal(&names);
        return r;
}

static unsigned char type_of(mode_t mode)
{
        switch (mode & S_IFMT) {
        case S_IFDIR: return DT_DIR;
        case S_IFREG: return DT_REG;
        case S_IFLNK: return DT_LNK;
        case S_IFCHR: return DT_CHR;
        case S_IFBLK: return DT_BLK;
        case S_IFIFO: return DT_FIFO;
        case S_IFSOCK: return DT_SOCK;
        default: return DT_UNKNOWN;
        }
}

static bool dir_make_ours(int dir, const char *name, mode_t *ret_mode);

/* A subdirectory, open and searchable, or -errno. */
static int open_searchable(int fd, const char *name)
{
        int self = openat(fd, name, OPEN_DIR_FLAGS);
        /* Readable is not enough: one without search permission (mode 0644, say, not root)
         * lists names whose entries cannot be looked at. The kernel's lookup of "." asks for
         * exactly that permission. */
        struct stat dot;
        if (self >= 0 && fstatat(self, ".", &dot, AT_SYMLINK_NOFOLLOW) < 0) {
                int e = -errno;
                close(self);
                return e;
        }
        return self < 0 ? -errno : self;
}

static int walk_dir(walker *w, int fd, size_t path_len, unsigned depth)
{
        if (depth > TREE_MAX_DEPTH)
                return -ELOOP;
        _cleanup_free_ dir_item *items = NULL;
        _cleanup_free_ char *names = NULL;
        size_t n = 0;
        int cut = read_items(w, fd, &items, &n, &names);
        if (cut < 0 && cut != -E2BIG)
                return cut;
        w->entries += n;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const dir_item *it = &items[i];
                size_t name_len = strlen(it->name);
                size_t len = path_len + (path_len ? 1 : 0) + name_len;
                if (len >= sizeof w->path && (w->flags & TREE_WALK_SKIP_DEEP)) {
                        tree_entry e = { .dir = fd, .name = it->name, .type = it->type, .ino = it->ino,
                                         .depth = depth, .self = -1, .open_error = -ENAMETOOLONG };
                        r = w->fn(&e, w->userdata);
                        r = r == TREE_SKIP ? 0 : r;
                        continue;
                }
                if (len >= sizeof w->path)
                        return -ENAMETOOLONG;
                if (path_len)
                        w->path[path_len] = '/';
                memcpy(w->path + path_len + (path_len ? 1 : 0), it->name, name_len + 1);

                struct stat st;
                bool have_st = false;
                unsigned char type = it->type;
                if ((w->flags & TREE_WALK_STAT) || type == DT_UNKNOWN) {
                        if (fstatat(fd, it->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                if (errno == ENOENT)
                                        continue; /* gone meanwhile */
                                return -errno;
                        }
                        have_st = true;
                        type = type_of(st.st_mode);
                }
                tree_entry e = { .dir = fd, .name = it->name, .path = w->path, .type = type,
                                 .ino = have_st ? (uint64_t) st.st_ino : it->ino, .depth = depth,
                                 .st = (w->flags & TREE_WALK_STAT) ? &st : NULL, .self = -1 };
                _cleanup_close_ int self = -1;
                bool fixed = false;
                mode_t was = 0;
                if (type == DT_DIR && depth >= TREE_MAX_DEPTH && (w->flags & TREE_WALK_SKIP_DEEP))
                        e.open_error = -ELOOP; /* reported, not entered */
                else if (type == DT_DIR) {
                        self = open_searchable(fd, it->name);
                        if (self == -EACCES && (w->flags & TREE_WALK_FIX_ACCESS) &&
                            (fixed = dir_make_ours(fd, it->name, &was)))
                                self = open_searchable(fd, it->name);
                        e.open_error = self < 0 ? self : 0;
                        self = self < 0 ? -1 : self;
                        e.self = self;
                }
                r = w->fn(&e, w->userdata);
                if (r != TREE_SKIP && r >= 0 && type == DT_DIR && self >= 0)
                        r = walk_dir(w, self, len, depth + 1);
                r = r == TREE_SKIP ? 0 : r;
                /* Looked at, not changed: the mode it had. */
                if (fixed && self >= 0)
                        (void) fchmod(self, was);
                w->path[path_len] = 0;
        }
        w->path[path_len] = 0;
        return r < 0 ? r : cut;
}

int tree_walk(int root, size_t max_entries, unsigned flags, tree_fn fn, void *userdata)
{
        _cleanup_free_ walker *w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        _cleanup_free_ char *buf = malloc(GETDENTS_BUFFER);
        if (!buf)
                return -ENOMEM;
        *w = (walker) { .fn = fn, .userdata = userdata, .flags = flags, .buf = buf,
                        .max_entries = max_entries ? max_entries : TREE_DEFAULT_MAX_ENTRIES };
        /* A descriptor of the walk's own: root's offset is the caller's. */
        _cleanup_close_ int fd = openat(root, ".", OPEN_DIR_FLAGS);
        if (fd < 0)
                return -errno;
        return walk_dir(w, fd, 0, 1);
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
        int fd = openat(root, ".", OPEN_DIR_FLAGS);
        if (fd < 0)
                return -errno;
        if (!rel || !*rel)
                return fd;
        if (!tree_path_valid(rel)) {
                close(fd);
                return -EINVAL;
        }
        char component[256];
        for (const char *p = rel; *p;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);
                memcpy(component, p, len);
                component[len] = 0;
                int next = openat(fd, component, OPEN_DIR_FLAGS);
                if (next < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, component, mode) < 0 && errno != EEXIST) {
                                int e = -errno;
                                close(fd);
                                return e;
                        }
                        next = openat(fd, component, OPEN_DIR_FLAGS);
                }
                if (next < 0) {
                        int e = errno;
                        /* A link where a directory should be is named as such. */
                        struct stat st;
                        if ((e == ENOTDIR || e == ELOOP) && fstatat(fd, component, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                e = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
                        close(fd);
                        return -e;
                }
                close(fd);
                fd = next;
                p += len;
                if (*p == '/')
                        p++;
        }
        return fd;
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

void tree_dirs_done(tree_dirs *c)
{
        for (size_t i = 0; i < c->n; i++) {
                free(c->names[i]);
                closep(&c->fds[i]);
        }
        free(c->names);
        free(c->fds);
        *c = TREE_DIRS_INIT(c->root);
}

/* The directory of rel's first len bytes (whole components). */
static int dirs_open(tree_dirs *c, const char *rel, size_t len)
{
        size_t level = 0;
        for (const char *p = rel, *end = rel + len; p < end; level++) {
                const char *slash = memchr(p, '/', (size_t) (end - p));
                size_t n = slash ? (size_t) (slash - p) : (size_t) (end - p);
                if (level < c->n && strlen(c->names[level]) == n && memcmp(c->names[level], p, n) == 0) {
                        p += n + (slash != NULL);
                        continue;
                }
                /* A different directory at this level: what was held below it goes. */
                while (c->n > level) {
                        c->n--;
                        free(c->names[c->n]);
                        closep(&c->fds[c->n]);
                }
                if (c->n == c->allocated) {
                        size_t grow = c->allocated ? c->allocated * 2 : 16;
                        char **names = reallocarray(c->names, grow, sizeof *names);
                        if (!names)
                                return -ENOMEM;
                        c->names = names;
                        int *fds = reallocarray(c->fds, grow, sizeof *fds);
                        if (!fds)
                                return -ENOMEM;
                        c->fds = fds;
                        c->allocated = grow;
                }
                char *name = strndup(p, n);
                if (!name)
                        return -ENOMEM;
                int fd = tree_open_dir(level ? c->fds[level - 1] : c->root, name, false, 0);
                if (fd < 0) {
                        free(name);
                        return fd;
                }
                c->names[c->n] = name;
                c->fds[c->n++] = fd;
                p += n + (slash != NULL);
        }
        return level ? c->fds[level - 1] : c->root;
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

/* A directory of the user's that the agent made unreadable or unwritable: back to rwx for its
 * owner, through a descriptor that cannot be a link's target. */
static bool dir_make_ours(int dir, const char *name, mode_t *ret_mode)
{
        _cleanup_close_ int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return false;
        if (ret_mode)
                *ret_mode = st.st_mode & 07777;
        return fd_chmod(fd, (st.st_mode & 07777) | S_IRWXU) == 0;
}

static int remove_dir_contents(int fd, unsigned depth)
{
        if (depth > TREE_MAX_DEPTH)
                return -ELOOP;
        _cleanup_free_ char *buf = malloc(GETDENTS_BUFFER);
        if (!buf)
                return -ENOMEM;
        int first = 0;
        /* Entries are removed as they are read; what stays (an error) is not read again. */
        for (;;) {
                long got = syscall(SYS_getdents64, fd, buf, GETDENTS_BUFFER);
                if (got <= 0) {
                        if (got < 0 && !first)
                                first = -errno;
                        break;
                }
                for (long at = 0; at < got;) {
                        const struct dirent64_record *de = (const void *) (buf + at);
                        at += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        int r = tree_remove(fd, de->d_name);
                        if (r < 0 && !first)
                                first = r;
                }
        }
        return first;
}

int tree_remove(int dir, const char *name)
{
        if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        int fd = openat(dir, name, OPEN_DIR_FLAGS);
        if (fd < 0 && errno == EACCES) {
                (void) dir_make_ours(dir, name, NULL);
                fd = openat(dir, name, OPEN_DIR_FLAGS);
        }
        if (fd < 0)
                return errno == ENOTDIR ? -EPERM : -errno;
        /* Writable, so that its entries can go. */
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU && st.st_uid == geteuid())
                (void) fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
        int r = remove_dir_contents(fd, 1);
        close(fd);
        if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return r < 0 ? r : -errno;
        return 0;
}
