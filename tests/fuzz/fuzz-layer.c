/* SPDX-License-Identifier: MIT */
/*
 * A review layer is the agent's: the input is a small program that builds a project, then a
 * layer over it as the overlay would leave it (files of any mode and content, directories,
 * links out of the project and out of the layer, whiteouts, FIFOs, sockets, devices where the
 * harness may make them, opaque directories, hard links, sparse files, names with control
 * bytes), then what the user changes meanwhile (a directory swapped for a link out of the
 * project, a file edited or renamed). The layer is made as a review run makes it
 * (review_layer_create, review_layer_end), read with layer_scan and layer_changes, shown
 * (aisb_review_diff with patches), applied as a forced dry run, then applied whole, forced
 * (aisb_review_apply).
 *
 * Input: two-byte steps (op, name), in three parts split at 0xff: the project's, the layer's,
 * the user's. The op byte's low nibble is the operation, its high nibble a variant (a mode, a
 * link's target, the other name of a hard link or a rename); the name byte's low five bits
 * pick one of the names below, its top two a file's content.
 *
 * Checked:
 * - nothing outside the project changes (a sentinel tree, hashed: paths, modes, times, link
 *   targets, content) and nothing appears beside the project;
 * - no FIFO, socket or device is in the project afterwards that was not there before, and no
 *   entry has setuid, setgid or sticky that did not have them before (the same inode);
 * - no file in the project holds the sentinel's content (nothing was copied through a link);
 * - what apply says it applied is there as the change said: a link as a link with its target
 *   (never a copy of what it points at), a file as a regular file with the layer's content and
 *   the permission bits given, a directory as a directory, a deletion gone; never an 'o';
 * - when apply applied (or refused) every change, the project is the overlay's merged view
 *   of the project and the layer (what the agent saw), but for what it refused;
 * - the dry run says what the forced apply does: the same paths, in order, the same actions;
 * - a protected path (.git, .vscode: the run's list) and aisb's own .ai-sandbox are left as
 *   they were; nothing under .ai-sandbox is listed;
 * - diff and the dry run change nothing, in the project or in the layer;
 * - the scan is sorted, each path once, plain; what is neither file, directory, link nor
 *   whiteout is refused; nothing is below a whiteout; read as another user's, every entry but
 *   the whiteouts is refused and no directory entered; changes are sorted, each path once, and
 *   carry no setuid, setgid or sticky bit;
 * - changes are reported in order; apply's result counts its refusals and failures; a forced
 *   apply reports no conflict; every failure is one line.
 *
 * Root or not: the operations a user cannot do (a device other than 0/0, opaque directories on
 * a file system without user xattrs) are skipped when they fail, and the checks hold either
 * way. Every link the harness makes points into the sentinel tree or inside the scratch
 * directory, never at a file of the host. FUZZ_LAYER_TRACE=1 prints the layer and each report.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <dirent.h>
#include <unistd.h>

#include "digest.h"
#include "internal.h"
#include "fuzz.h"
#include "layer.h"
#include "review.h"
#include "tree-walk.h"

#define SENTINEL "sentinel content, never to be copied"
#define SMALL_FILE (64 * 1024)

/* The scratch directory: in /dev/shm where it takes user xattrs (a tmpfs: twice as fast as a
 * disk's file system here), else in /tmp. */
static char top[64];
static char project[96], outside[96], state[96];
static char outside_abs[128], outside_secret_abs[128];
static char *outside_hash;
/* FUZZ_LAYER_TRACE set: each report of diff and apply on stderr, to see what an input does. */
static bool trace;

/* What the harness's own walks do at a directory: not root, they cannot look into one
 * without search permission (mode 0644, say), so they leave it unentered. */
static int walk_on(const tree_entry *e)
{
        return S_ISDIR(e->st->st_mode) && geteuid() != 0 && !(e->st->st_mode & S_IXUSR) ? TREE_SKIP : 0;
}

/* ---- hashing a tree: what "unchanged" means ---- */

/* Paths, types, modes, sizes, inodes, modification times, link targets and small files'
 * content; and change times, unless the tree may share inodes with what apply replaces (a
 * hard link of the user's from a protected file to another: its ctime moves with the other's
 * unlinking, its content does not). */
typedef struct hashing {
        digest *d;
        bool ctime;
} hashing;

static void hash_stat(const hashing *h, const char *path, const struct stat *st, int dir, const char *name)
{
        digest *d = h->d;
        char line[160];
        snprintf(line, sizeof line, "|%o %lld %llu %lld.%09ld %lld.%09ld|", (unsigned) st->st_mode,
                 (long long) st->st_size, (unsigned long long) st->st_ino, (long long) st->st_mtim.tv_sec,
                 st->st_mtim.tv_nsec, h->ctime ? (long long) st->st_ctim.tv_sec : 0L, h->ctime ? st->st_ctim.tv_nsec : 0L);
        if (digest_update(d, path, strlen(path) + 1) < 0 || digest_update(d, line, strlen(line)) < 0)
                abort();
        if (S_ISLNK(st->st_mode)) {
                char target[4096];
                ssize_t n = readlinkat(dir, name, target, sizeof target);
                if (n < 0 || digest_update(d, target, (size_t) n) < 0)
                        abort();
        } else if (S_ISREG(st->st_mode) && st->st_size <= SMALL_FILE) {
                int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                /* Unreadable (a mode 0 file, not root): its times and size stand for it. */
                if (fd >= 0) {
                        if (digest_update_fd(d, fd, (uint64_t) st->st_size) < 0)
                                abort();
                        close(fd);
                }
        }
}

static int hash_entry(const tree_entry *e, void *userdata)
{
        hash_stat(userdata, e->path, e->st, e->dir, e->name);
        return walk_on(e);
}

/* name in dir, and everything below it when a directory; "" when it is not there. */
static char *hash_path(int dir, const char *name, bool ctime)
{
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                        abort();
                return strdup("");
        }
        digest *d = NULL;
        char *hex = NULL;
        if (digest_new(&d) < 0)
                abort();
        hashing h = { .d = d, .ctime = ctime };
        hash_stat(&h, ".", &st, dir, name);
        if (S_ISDIR(st.st_mode)) {
                int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                /* An unreadable directory (not root): its own stat stands for it. */
                if (fd >= 0) {
                        if (tree_walk(fd, 0, TREE_WALK_STAT, hash_entry, &h) < 0)
                                abort();
                        close(fd);
                }
        }
        if (digest_end_hex(d, 64, &hex) < 0)
                abort();
        digest_free(d);
        return hex;
}

static char *hash_at(const char *dir, const char *rel, bool ctime)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                abort();
        const char *leaf;
        int pd = tree_open_parent(fd, rel, &leaf);
        char *h = pd >= 0 ? hash_path(pd, leaf, ctime) : strdup("");
        if (pd >= 0)
                close(pd);
        close(fd);
        if (!h)
                abort();
        return h;
}

static void write_at(const char *dir, const char *rel, const char *text, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd < 0)
                abort();
        if (write(fd, text, strlen(text)) < 0 || fchmod(fd, mode) < 0)
                abort();
        close(fd);
}

static void cleanup_top(void)
{
        (void) tree_remove(AT_FDCWD, top);
}

/* A run that broke an invariant aborts without cleaning up: the scratch directories of runs
 * whose process is gone (each holds its pid) are removed when the next starts. */
static void remove_stale(const char *base)
{
        DIR *d = opendir(base);
        if (!d)
                return;
        int fd = dirfd(d);
        for (struct dirent *de; (de = readdir(d));) {
                if (strncmp(de->d_name, "aisb-fuzz-layer-", 16) != 0)
                        continue;
                char pidfile[NAME_MAX + 8], text[32] = "";
                snprintf(pidfile, sizeof pidfile, "%s/pid", de->d_name);
                int p = openat(fd, pidfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                ssize_t n = p >= 0 ? read(p, text, sizeof text - 1) : -1;
                if (p >= 0)
                        close(p);
                long pid = n > 0 ? strtol(text, NULL, 10) : 0;
                if (pid > 0 && kill((pid_t) pid, 0) < 0 && errno == ESRCH)
                        (void) tree_remove(fd, de->d_name);
        }
        closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        if (outside_hash)
                return 0;
        remove_stale("/dev/shm");
        remove_stale("/tmp");
        snprintf(top, sizeof top, "/dev/shm/aisb-fuzz-layer-XXXXXX");
        bool shm = mkdtemp(top) != NULL;
        if (shm && (setxattr(top, "user.aisb-fuzz", "y", 1, 0) < 0 || removexattr(top, "user.aisb-fuzz") < 0)) {
                (void) rmdir(top);
                shm = false;
        }
        if (!shm) {
                snprintf(top, sizeof top, "/tmp/aisb-fuzz-layer-XXXXXX");
                if (!mkdtemp(top))
                        abort();
        }
        char pid[32];
        snprintf(pid, sizeof pid, "%ld\n", (long) getpid());
        write_at(top, "pid", pid, 0644);
        snprintf(project, sizeof project, "%s/proj", top);
        snprintf(outside, sizeof outside, "%s/outside", top);
        snprintf(state, sizeof state, "%s/state", top);
        snprintf(outside_abs, sizeof outside_abs, "%s", outside);
        snprintf(outside_secret_abs, sizeof outside_secret_abs, "%s/secret", outside);
        if (mkdir(outside, 0755) < 0)
                abort();
        char sub[160];
        snprintf(sub, sizeof sub, "%s/dir", outside);
        if (mkdir(sub, 0755) < 0)
                abort();
        write_at(outside, "secret", SENTINEL, 0644);
        write_at(outside, "dir/secret", SENTINEL, 0644);
        outside_hash = hash_at(top, "outside", true);
        setenv("XDG_STATE_HOME", state, 1);
        trace = getenv("FUZZ_LAYER_TRACE") != NULL;
        atexit(cleanup_top);
        return 0;
}

/* ---- the program ---- */

/* The names a program draws from: plain, below one another, with control bytes, the run's
 * protected ones, git's, aisb's own, and one below what is a file or a link elsewhere. */
static const char *const names[] = {
        "a", "b", "d", "d/f", "d/g", "d/h", "e", "e/x", "e/y", "e/y/z", "nl\nname", "esc\x1b[2Jname", "x y",
        "p%25q\x7f", "\xff\xfe", ".git", ".git/HEAD", ".git/config", ".git/hooks", ".git/hooks/pre-commit",
        ".vscode", ".vscode/settings.json", "tool", "tool/HEAD", "tool/objects", "tool/refs", ".ai-sandbox",
        ".ai-sandbox/x", "l", "l/x", "d/f/x", "a/b",
};
#define N_NAMES (sizeof names / sizeof names[0])

/* Link targets: inside, the sentinel tree from the project (relative, from the project's root
 * and from one level down, and absolute), the sentinel from the layer's upper directory, a
 * loop, a name with a newline. */
static const char *target_of(unsigned v)
{
        static const char *const targets[] = {
                "a", "d", "../outside", NULL, NULL, "../../outside/secret", ".", "../outside/dir",
                "../../../../../../outside/secret", "l", "nl\nname", "d/f",
        };
        v %= sizeof targets / sizeof targets[0];
        return v == 3 ? outside_abs : v == 4 ? outside_secret_abs : targets[v];
}

static const mode_t modes[] = { 0644, 0755, 04755, 02755, 01777, 0600, 0000, 06777 };

static int open_parent(const char *dir, const char *name, const char **leaf)
{
        int base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (base < 0)
                abort();
        int pd = tree_open_parent(base, name, leaf);
        close(base);
        return pd;
}

static void write_content(int fd, unsigned v)
{
        static char big[5000];
        if (!big[0])
                for (size_t i = 0; i < sizeof big; i++)
                        big[i] = (char) (i % 251 + 1);
        switch (v) {
        case 0:
                if (write(fd, "content\n", 8) != 8)
                        abort();
                break;
        case 1:
                break; /* empty */
        case 2:
                if (write(fd, "binary\0data\n", 12) != 12)
                        abort();
                break;
        default:
                if (write(fd, big, sizeof big) != (ssize_t) sizeof big)
                        abort();
                break;
        }
}

/* A regular file at pd/leaf, opened for writing (made with O_CREAT in flags); -1 for anything
 * else there, which the harness never opens (a FIFO would block, a device is the host's). */
static int open_regular(int pd, const char *leaf, int flags)
{
        struct stat st;
        if (fstatat(pd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 ? !S_ISREG(st.st_mode) : !(flags & O_CREAT))
                return -1;
        int fd = openat(pd, leaf, flags | O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                return -1;
        }
        return fd;
}

/* A socket bound at pd/leaf (through /proc, whatever the length of the directory's path). */
static void make_socket(int pd, const char *leaf)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", pd, leaf) >= (int) sizeof sa.sun_path)
                return;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                abort();
        (void) bind(s, (struct sockaddr *) &sa, sizeof sa);
        close(s);
}

/* One step of the program in dir (the project, or the layer as the agent's writes leave it),
 * never through a link in the path: the harness plays the agent, whose writes resolve inside
 * its own sandbox, never on the host. What cannot be done (a parent missing, not permitted)
 * does nothing. */
static void op(const char *dir, uint8_t code, uint8_t arg, bool is_layer)
{
        const char *name = names[arg % N_NAMES], *leaf;
        unsigned v = code >> 4;
        if ((code & 15) == 13 || (code & 15) == 15) {
                /* mkdir -p; or a file below directories made for it */
                int base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (base < 0)
                        abort();
                int fd = tree_open_dir(base, name, true, 0755);
                if (fd >= 0)
                        close(fd);
                close(base);
                if ((code & 15) == 15) {
                        int pd = open_parent(dir, name, &leaf);
                        if (pd >= 0) {
                                (void) unlinkat(pd, leaf, AT_REMOVEDIR);
                                close(pd);
                        }
                        op(dir, (uint8_t) ((v << 4) | 1), arg, is_layer);
                }
                return;
        }
        int pd = open_parent(dir, name, &leaf);
        if (pd < 0)
                return;
        switch (code & 15) {
        case 0:
                (void) mkdirat(pd, leaf, 0755);
                break;
        case 1: {
                int fd = open_regular(pd, leaf, O_CREAT | O_TRUNC);
                if (fd >= 0) {
                        write_content(fd, arg >> 6);
                        (void) fchmod(fd, modes[v & 7]);
                        close(fd);
                }
                break;
        }
        case 2:
                (void) symlinkat(target_of(v), pd, leaf);
                break;
        case 3:
                /* A whiteout, as the overlay makes one (unprivileged on Linux 5.8 and later);
                 * in the project, a device of the user's own. */
                (void) mknodat(pd, leaf, S_IFCHR | 0600, makedev(0, 0));
                break;
        case 4:
                (void) mkfifoat(pd, leaf, 0644);
                break;
        case 5: {
                int fd = openat(pd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                        /* "x" is a newer kernel's mark, not an opaque directory. */
                        (void) fsetxattr(fd, "user.overlay.opaque", v & 1 ? "x" : "y", 1, 0);
                        close(fd);
                }
                break;
        }
        case 6: {
                const char *other_leaf;
                int od = open_parent(dir, names[(arg + 1 + v) % N_NAMES], &other_leaf);
                if (od >= 0) {
                        (void) linkat(pd, leaf, od, other_leaf, 0);
                        close(od);
                }
                break;
        }
        case 7: {
                /* Sparse, 1 GiB: a hole to the end, or a byte at the end (the layer's only: two
                 * such files of one size would be compared byte for byte). */
                int fd = is_layer ? open_regular(pd, leaf, 0) : -1;
                if (fd >= 0) {
                        if (v & 1)
                                (void) pwrite(fd, "z", 1, ((off_t) 1 << 30) - 1);
                        else
                                (void) ftruncate(fd, (off_t) 1 << 30);
                        close(fd);
                }
                break;
        }
        case 8: {
                /* Never through a link: the sentinel's modes are hashed. */
                struct stat st;
                if (fstatat(pd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
                        (void) fchmodat(pd, leaf, modes[v & 7], 0);
                break;
        }
        case 9:
                (void) tree_remove(pd, leaf);
                break;
        case 10:
                make_socket(pd, leaf);
                break;
        case 11:
                /* A real device, root only: /dev/null's numbers, or a block device 0/0 (no
                 * whiteout: those are character devices). */
                (void) mknodat(pd, leaf, (v & 1 ? S_IFBLK : S_IFCHR) | 0666, v & 1 ? makedev(0, 0) : makedev(1, 3));
                break;
        case 12: {
                const char *other_leaf;
                int od = open_parent(dir, names[(arg + 1 + v) % N_NAMES], &other_leaf);
                if (od >= 0) {
                        (void) renameat(pd, leaf, od, other_leaf);
                        close(od);
                }
                break;
        }
        case 14: {
                /* An edit: the same inode, new content. */
                int fd = open_regular(pd, leaf, O_APPEND);
                if (fd >= 0) {
                        if (write(fd, "more\n", 5) != 5)
                                abort();
                        close(fd);
                }
                break;
        }
        default:
                break;
        }
        close(pd);
}

/* ---- what the project held before apply ---- */

typedef struct special {
        uint64_t ino;
        mode_t mode;
} special;

typedef struct specials {
        special items[256];
        size_t n;
        bool overflow;
} specials;

static bool is_special(mode_t mode)
{
        return S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode) || S_ISBLK(mode) || (mode & 07000);
}

static int record_special(const tree_entry *e, void *userdata)
{
        specials *s = userdata;
        if (!is_special(e->st->st_mode))
                return walk_on(e);
        if (s->n == sizeof s->items / sizeof s->items[0])
                s->overflow = true;
        else
                s->items[s->n++] = (special) { .ino = e->st->st_ino, .mode = e->st->st_mode };
        return walk_on(e);
}

typedef struct after {
        const specials *before;
        const char *why;
        char *where;
} after;

static void bad(after *a, const char *why, const char *path)
{
        if (a->why)
                return;
        a->why = why;
        a->where = strdup(path);
}

static int check_entry(const tree_entry *e, void *userdata)
{
        after *a = userdata;
        mode_t mode = e->st->st_mode;
        if (is_special(mode)) {
                /* Only what was there before, as it was: the same inode, no new type or bit. */
                bool known = a->before->overflow;
                for (size_t i = 0; i < a->before->n && !known; i++)
                        known = a->before->items[i].ino == (uint64_t) e->st->st_ino &&
                                (a->before->items[i].mode & S_IFMT) == (mode & S_IFMT) &&
                                (mode & 07000 & ~a->before->items[i].mode) == 0;
                if (!known)
                        bad(a, S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode)
                                       ? "setuid, setgid or sticky made in the project"
                                       : "a FIFO, socket or device made in the project",
                            e->path);
        }
        if (S_ISREG(mode) && e->st->st_size == (off_t) strlen(SENTINEL)) {
                char buf[64] = "";
                int fd = openat(e->dir, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (fd >= 0 && read(fd, buf, sizeof buf - 1) == (ssize_t) strlen(SENTINEL) && !strcmp(buf, SENTINEL))
                        bad(a, "the sentinel's content copied into the project", e->path);
                if (fd >= 0)
                        close(fd);
        }
        return walk_on(e);
}

/* ---- the scan and the changes, read directly ---- */

static void check_scan(int upper, int pfd)
{
        layer l = {};
        aisb_error *err = NULL;
        /* Far inside the scan's bounds: whatever the agent made, it is read (what cannot be
         * read is refused, not the whole layer). */
        int r = layer_scan(upper, (unsigned) getuid(), &l, &err);
        if (r < 0)
                fprintf(stderr, "fuzz-layer: layer_scan: %s\n", aisb_error_message(err));
        FUZZ_CHECK(r >= 0);
        const char *whiteout = NULL;
        for (size_t i = 0; i < l.n; i++) {
                const layer_entry *e = &l.entries[i];
                if (trace)
                        fprintf(stderr, "layer       %d%s %04o %-24s %s\n", (int) e->kind, e->opaque ? " opaque" : "",
                                (unsigned) e->mode, e->path, e->refused ? e->refused : "");
                FUZZ_CHECK(tree_path_valid(e->path));
                FUZZ_CHECK(i == 0 || tree_path_cmp(l.entries[i - 1].path, e->path) < 0);
                FUZZ_CHECK(layer_find(&l, e->path) == e);
                FUZZ_CHECK(e->kind != LAYER_OTHER || e->refused);
                FUZZ_CHECK(e->kind != LAYER_LINK || e->target || e->refused);
                FUZZ_CHECK(!e->opaque || (e->kind == LAYER_DIR && !e->refused));
                FUZZ_CHECK(e->mode <= 07777);
                /* Nothing below a whiteout. */
                if (whiteout) {
                        size_t n = strlen(whiteout);
                        FUZZ_CHECK(!(strncmp(e->path, whiteout, n) == 0 && e->path[n] == '/'));
                }
                if (e->kind == LAYER_WHITEOUT)
                        whiteout = e->path;
        }
        change_set s = {};
        if (layer_changes(&l, upper, pfd, &s, &err) < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        } else {
                for (size_t i = 0; i < s.n; i++) {
                        const change *c = &s.changes[i];
                        FUZZ_CHECK(tree_path_valid(c->path));
                        FUZZ_CHECK(i == 0 || tree_path_cmp(s.changes[i - 1].path, c->path) < 0);
                        FUZZ_CHECK(c->mode <= 0777);
                        FUZZ_CHECK(c->kind == CHANGE_DELETED || c->kind_in_layer != LAYER_OTHER || c->refused);
                        FUZZ_CHECK(c->kind == CHANGE_DELETED || c->kind_in_layer != LAYER_LINK || c->target ||
                                   c->refused);
                        FUZZ_CHECK(c->kind != CHANGE_DELETED || c->in_project || c->blocked);
                }
        }
        change_set_done(&s);
        layer_done(&l);
        /* Read as another user's: only whiteouts are taken, no directory is entered. */
        if (layer_scan(upper, (unsigned) getuid() + 1, &l, &err) < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                return;
        }
        for (size_t i = 0; i < l.n; i++) {
                FUZZ_CHECK(!strchr(l.entries[i].path, '/'));
                FUZZ_CHECK(l.entries[i].kind == LAYER_WHITEOUT || l.entries[i].refused);
        }
        layer_done(&l);
}

/* ---- what diff and apply report ---- */

typedef struct reports {
        int project, upper;
        bool apply;       /* a forced, real apply: check what it says it did */
        char *last;       /* the previous path, for the order */
        size_t not_applied;
        char **refused;   /* the paths apply refused (never carried over) */
        size_t n_refused;
        bool partial;     /* something skipped or failed: the result is not the merged view */
        /* The dry run's reports ("path\0action"), and how many of them the real run met. */
        char **said;
        size_t n_said, met;
        const struct reports *dry; /* in the real run: the dry run's */
} reports;

static void reports_done(reports *r)
{
        free(r->last);
        for (size_t k = 0; k < r->n_refused; k++)
                free(r->refused[k]);
        free(r->refused);
        for (size_t k = 0; k < r->n_said; k++)
                free(r->said[k]);
        free(r->said);
        *r = (reports) {};
}

static void push(char ***list, size_t *n, const char *a, const char *b)
{
        char **more = realloc(*list, (*n + 1) * sizeof *more);
        if (!more)
                abort();
        *list = more;
        size_t la = strlen(a), lb = b ? strlen(b) : 0;
        if (!(more[*n] = malloc(la + lb + 2)))
                abort();
        memcpy(more[*n], a, la + 1);
        memcpy(more[*n] + la + 1, b ? b : "", lb + 1);
        (*n)++;
}

static bool is_aisb_own(const char *path)
{
        return strncmp(path, ".ai-sandbox", 11) == 0 && (path[11] == 0 || path[11] == '/');
}

/* The project's entry at path, as apply left it; false when it is not there. */
static bool project_stat(int project_fd, const char *path, struct stat *st, int *ret_dir, const char **leaf)
{
        int pd = tree_open_parent(project_fd, path, leaf);
        if (pd < 0)
                return false;
        if (fstatat(pd, *leaf, st, AT_SYMLINK_NOFOLLOW) < 0) {
                close(pd);
                return false;
        }
        *ret_dir = pd;
        return true;
}

static bool same_file(int a_dir, const char *a_name, int b_root, const char *b_path, off_t size)
{
        const char *leaf;
        int bd = tree_open_parent(b_root, b_path, &leaf);
        int a = openat(a_dir, a_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int b = bd >= 0 ? openat(bd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        bool same = false;
        if (a >= 0 && b >= 0) {
                static char x[SMALL_FILE], y[SMALL_FILE];
                same = read(a, x, sizeof x) == size && read(b, y, sizeof y) == size && memcmp(x, y, (size_t) size) == 0;
        }
        if (a >= 0)
                close(a);
        if (b >= 0)
                close(b);
        if (bd >= 0)
                close(bd);
        /* Unreadable (not root): nothing to compare. */
        return same || a < 0 || b < 0;
}

static int on_change(const aisb_change *c, void *userdata)
{
        reports *r = userdata;
        if (trace)
                fprintf(stderr, "%-11s %-8s %c %04o %-24s %s%s%s%s\n", c->action ? c->action : "diff", c->change,
                        c->type ? c->type : '-', c->mode, c->path, c->target ? "-> " : "", c->target ? c->target : "",
                        c->refused || c->reason ? "  : " : "", c->reason ? c->reason : c->refused ? c->refused : "");
        FUZZ_CHECK(c->path && tree_path_valid(c->path));
        FUZZ_CHECK(!is_aisb_own(c->path));
        FUZZ_CHECK(!r->last || tree_path_cmp(r->last, c->path) < 0);
        free(r->last);
        r->last = strdup(c->path);
        FUZZ_CHECK(c->change && c->mode <= 0777);
        FUZZ_CHECK(c->type != 'o' || c->refused);
        FUZZ_CHECK(c->type != 'l' || c->target || c->refused);
        if (!c->action)
                return 0;
        if (!strcmp(c->action, "conflict") || !strcmp(c->action, "refused") || !strcmp(c->action, "failed"))
                r->not_applied++;
        /* Both runs are forced: neither has a conflict. */
        FUZZ_CHECK(strcmp(c->action, "conflict") != 0);
        if (!strcmp(c->action, "refused"))
                push(&r->refused, &r->n_refused, c->path, NULL);
        if (!r->apply) {
                push(&r->said, &r->n_said, c->path, c->action);
                return 0;
        }
        /* The dry run said so: the same paths in the same order, each done as it said (what it
         * said would apply may still fail: a permission, say), a failure foretold. */
        if (r->dry) {
                FUZZ_CHECK(r->met < r->dry->n_said);
                const char *path = r->dry->said[r->met], *said = path + strlen(path) + 1;
                r->met++;
                bool as_said = strcmp(path, c->path) == 0 &&
                               (!strcmp(said, "would apply") ? !strcmp(c->action, "applied") || !strcmp(c->action, "failed")
                                                             : !strcmp(said, c->action));
                if (!as_said)
                        fprintf(stderr, "fuzz-layer: the dry run said %s %s, the forced apply %s %s\n", path, said,
                                c->path, c->action);
                FUZZ_CHECK(as_said);
        }
        if (strcmp(c->action, "applied") != 0 && strcmp(c->action, "refused") != 0)
                r->partial = true;
        if (strcmp(c->action, "applied") != 0)
                return 0;
        FUZZ_CHECK(!c->refused && !c->protected_path && c->type != 'o');
        struct stat st;
        int pd = -1;
        const char *leaf = NULL;
        bool there = project_stat(r->project, c->path, &st, &pd, &leaf);
        switch (c->type) {
        case 0:
                FUZZ_CHECK(!there);
                break;
        case 'l': {
                FUZZ_CHECK(there && S_ISLNK(st.st_mode));
                char target[4096];
                ssize_t n = readlinkat(pd, leaf, target, sizeof target - 1);
                FUZZ_CHECK(n >= 0);
                target[n] = 0;
                FUZZ_CHECK(strcmp(target, c->target) == 0);
                break;
        }
        case 'f':
                FUZZ_CHECK(there && S_ISREG(st.st_mode) && (st.st_mode & 07777) == c->mode &&
                           (unsigned long long) st.st_size == c->size);
                if (st.st_size <= SMALL_FILE)
                        FUZZ_CHECK(same_file(pd, leaf, r->upper, c->path, st.st_size));
                break;
        case 'd':
                FUZZ_CHECK(there && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == c->mode);
                break;
        }
        if (pd >= 0)
                close(pd);
        return 0;
}


/* ---- the merged view: what the agent saw, which a whole apply must leave ----
 *
 * The overlay's rules, on a snapshot of the project as it is before apply and the layer as
 * it is on disk: an entry of the layer replaces the project's at its path (and, not being a
 * directory, everything below it); a whiteout removes the project's entry and everything
 * below; an opaque directory ("y") hides everything of the project's below it. What apply
 * refused, and aisb's own .ai-sandbox, stay the project's. When apply reports every change
 * applied or refused, the project must then hold exactly this. */

typedef struct node {
        char *path;
        mode_t mode;      /* type and permission bits as they should be */
        off_t size;
        char *target;     /* a link's */
        char *content;    /* a small readable file's digest, else NULL: not compared */
        bool gone;
} node;

typedef struct tree {
        node *nodes;
        size_t n, allocated;
} tree;

static void tree_done(tree *t)
{
        for (size_t i = 0; i < t->n; i++) {
                free(t->nodes[i].path);
                free(t->nodes[i].target);
                free(t->nodes[i].content);
        }
        free(t->nodes);
        *t = (tree) {};
}

static bool at_or_below(const char *path, const char *root)
{
        size_t n = strlen(root);
        return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static char *content_digest(int dir, const char *name, const struct stat *st)
{
        if (!S_ISREG(st->st_mode) || st->st_size > SMALL_FILE)
                return NULL;
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return NULL; /* unreadable (a mode 0 file, not root) */
        digest *d = NULL;
        char *hex = NULL;
        if (digest_new(&d) < 0 || digest_update_fd(d, fd, (uint64_t) st->st_size) < 0 || digest_end_hex(d, 64, &hex) < 0)
                abort();
        digest_free(d);
        close(fd);
        return hex;
}

/* Put the entry at path (its stat read at dir/name) into t, replacing what is there. */
static void tree_put(tree *t, const char *path, int dir, const char *name, const struct stat *st, mode_t perm_mask)
{
        for (size_t i = 0; i < t->n; i++)
                if (!t->nodes[i].gone && strcmp(t->nodes[i].path, path) == 0)
                        t->nodes[i].gone = true;
        if (t->n == t->allocated) {
                t->allocated = t->allocated ? 2 * t->allocated : 64;
                t->nodes = realloc(t->nodes, t->allocated * sizeof *t->nodes);
                if (!t->nodes)
                        abort();
        }
        node nd = { .path = strdup(path), .mode = (st->st_mode & S_IFMT) | (st->st_mode & perm_mask),
                    .size = S_ISREG(st->st_mode) ? st->st_size : 0, .content = content_digest(dir, name, st) };
        if (!nd.path)
                abort();
        if (S_ISLNK(st->st_mode)) {
                char target[4096];
                ssize_t n = readlinkat(dir, name, target, sizeof target - 1);
                if (n < 0)
                        abort();
                target[n] = 0;
                if (!(nd.target = strdup(target)))
                        abort();
        }
        t->nodes[t->n++] = nd;
}

/* Remove path and everything below it (below only, when keep_self), but for what is at or
 * below a path the layer has and apply refused: that stays the project's. */
static void tree_cut(tree *t, const char *path, bool keep_self, const reports *rep)
{
        for (size_t i = 0; i < t->n; i++) {
                const char *p = t->nodes[i].path;
                if (t->nodes[i].gone || !at_or_below(p, path) || (keep_self && strcmp(p, path) == 0))
                        continue;
                bool kept = false;
                for (size_t k = 0; rep && k < rep->n_refused && !kept; k++)
                        kept = at_or_below(p, rep->refused[k]);
                t->nodes[i].gone = !kept;
        }
}

static int snapshot_entry(const tree_entry *e, void *userdata)
{
        tree_put(userdata, e->path, e->dir, e->name, e->st, 07777);
        return walk_on(e);
}

static void snapshot(int root, tree *ret)
{
        *ret = (tree) {};
        FUZZ_CHECK(tree_walk(root, 0, TREE_WALK_STAT, snapshot_entry, ret) >= 0);
}

typedef struct merging {
        tree *t;
        const reports *rep;
} merging;

static int merge_entry(const tree_entry *e, void *userdata)
{
        merging *m = userdata;
        mode_t mode = e->st->st_mode;
        bool refused = is_aisb_own(e->path);
        for (size_t i = 0; i < m->rep->n_refused && !refused; i++)
                refused = strcmp(m->rep->refused[i], e->path) == 0;
        if (refused)
                return S_ISDIR(mode) ? TREE_SKIP : 0;
        if (S_ISCHR(mode) && e->st->st_rdev == makedev(0, 0)) {
                tree_cut(m->t, e->path, false, m->rep);
                return 0;
        }
        /* Anything else but a file, directory or link is refused, and was reported so. */
        FUZZ_CHECK(S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode));
        if (S_ISDIR(mode)) {
                char value[4];
                bool opaque = e->self >= 0 && fgetxattr(e->self, "user.overlay.opaque", value, sizeof value) == 1 &&
                              value[0] == 'y';
                bool was_dir = false;
                for (size_t i = 0; i < m->t->n; i++)
                        if (!m->t->nodes[i].gone && strcmp(m->t->nodes[i].path, e->path) == 0)
                                was_dir = S_ISDIR(m->t->nodes[i].mode);
                /* Over a directory: merged with it, unless opaque; over anything else: instead. */
                if (!was_dir || opaque)
                        tree_cut(m->t, e->path, was_dir, m->rep);
        } else
                tree_cut(m->t, e->path, false, m->rep);
        tree_put(m->t, e->path, e->dir, e->name, e->st, 0777);
        return walk_on(e);
}

static int node_cmp(const void *a, const void *b)
{
        return tree_path_cmp(((const node *) a)->path, ((const node *) b)->path);
}

static void tree_compact(tree *t)
{
        size_t kept = 0;
        for (size_t i = 0; i < t->n; i++) {
                if (t->nodes[i].gone) {
                        free(t->nodes[i].path);
                        free(t->nodes[i].target);
                        free(t->nodes[i].content);
                } else
                        t->nodes[kept++] = t->nodes[i];
        }
        t->n = kept;
        if (t->n > 1)
                qsort(t->nodes, t->n, sizeof *t->nodes, node_cmp);
}

/* The merged view: before (the project's snapshot) with the layer over it, as the dry run
 * (which said what apply refuses) saw them. */
static void merge_layer(tree *before, int upper, const reports *dry)
{
        merging m = { .t = before, .rep = dry };
        FUZZ_CHECK(tree_walk(upper, 0, TREE_WALK_STAT, merge_entry, &m) >= 0);
        tree_compact(before);
}

/* The project after a whole apply against the merged view. */
static void check_merged(const tree *merged, int project_fd)
{
        const tree *before = merged;
        tree now;
        snapshot(project_fd, &now);
        const char *why = NULL, *where = NULL;
        for (size_t i = 0; !why && (i < before->n || i < now.n); i++) {
                const node *want = i < before->n ? &before->nodes[i] : NULL, *have = i < now.n ? &now.nodes[i] : NULL;
                int order = !want ? 1 : !have ? -1 : tree_path_cmp(want->path, have->path);
                where = order <= 0 ? want->path : have->path;
                if (order != 0)
                        why = order < 0 ? "missing" : "not in the merged view";
                else if ((want->mode & S_IFMT) != (have->mode & S_IFMT))
                        why = "of another type";
                else if ((S_ISREG(want->mode) || S_ISDIR(want->mode)) && (want->mode & 0777) != (have->mode & 0777))
                        why = "of another mode";
                else if (S_ISLNK(want->mode) && strcmp(want->target, have->target) != 0)
                        why = "a link to another target";
                else if (S_ISREG(want->mode) && (want->size != have->size ||
                                                 (want->content && have->content && strcmp(want->content, have->content))))
                        why = "of other content";
        }
        if (why) {
                fprintf(stderr, "fuzz-layer: after a whole apply, the project differs from the merged view: %s %s\n",
                        where, why);
                if (trace) {
                        for (size_t k = 0; k < before->n; k++)
                                fprintf(stderr, "  merged  %06o %s\n", (unsigned) before->nodes[k].mode, before->nodes[k].path);
                        for (size_t k = 0; k < now.n; k++)
                                fprintf(stderr, "  project %06o %s\n", (unsigned) now.nodes[k].mode, now.nodes[k].path);
                }
        }
        FUZZ_CHECK(!why);
        tree_done(&now);
}

/* ---- one input ---- */

/* A failing aisb_review_diff or aisb_review_apply (no layer, a refused protect plan) closes
 * descriptor 0, which its cleanup takes for one of its own (reported; not fixed here): fd 0
 * is kept open, so that no descriptor of the harness's ever gets that number and is closed
 * under it. */
static void keep_fd0(void)
{
        if (fcntl(0, F_GETFD) >= 0)
                return;
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd != 0)
                abort();
}

static void call_done(int r, aisb_error **err)
{
        keep_fd0();
        if (r < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(*err)));
                aisb_error_free(*err);
                *err = NULL;
        }
}

static void reset(int topfd)
{
        FUZZ_CHECK(tree_remove(topfd, "proj") == 0);
        FUZZ_CHECK(tree_remove(topfd, "state") == 0);
}

/* Nothing beside the project, its state and the sentinel tree. */
static void check_top(int topfd)
{
        int fd = openat(topfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                abort();
        for (struct dirent *de; (de = readdir(d));)
                FUZZ_CHECK(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "proj") ||
                           !strcmp(de->d_name, "state") || !strcmp(de->d_name, "outside") || !strcmp(de->d_name, "pid"));
        closedir(d);
}

static bool same_free(char *a, char *b)
{
        bool same = strcmp(a, b) == 0;
        free(a);
        free(b);
        return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        LLVMFuzzerInitialize(NULL, NULL);
        if (size > 96)
                return 0;
        keep_fd0();
        int topfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (topfd < 0)
                abort();
        reset(topfd);
        if (mkdir(project, 0755) < 0 || mkdir(state, 0700) < 0)
                abort();
        write_at(project, "a", "project a\n", 0644);
        char path[512];
        snprintf(path, sizeof path, "%s/d", project);
        if (mkdir(path, 0755) < 0)
                abort();
        write_at(project, "d/f", "project f\n", 0644);
        /* The program: the project's part, up to the first 0xff; the layer's; the user's. */
        size_t i = 0;
        for (; i + 1 < size && data[i] != 0xff; i += 2)
                op(project, data[i], data[i + 1], false);
        i++;
        int pfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                abort();
        review_layer l = REVIEW_LAYER_NULL;
        aisb_error *err = NULL;
        if (review_layer_create(project, pfd, "aisb-proj-0000fuzz", ".git,.vscode", &l, &err) < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                goto done;
        }
        for (; i + 1 < size && data[i] != 0xff; i += 2)
                op(l.upper, data[i], data[i + 1], true);
        i++;
        for (; i + 1 < size; i += 2)
                op(project, data[i], data[i + 1], false);
        if (review_layer_end(&l, pfd, &err) < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        }
        char *layer_dir = strdup(l.dir);
        if (!layer_dir)
                abort();
        /* Done with before anything else is opened: review_layer_end closed the lock, and
         * review_layer_done closes that number again (reported; not fixed here), which would
         * be the next descriptor opened. */
        review_layer_done(&l);
        int ldfd = open(layer_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int upper = ldfd >= 0 ? openat(ldfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (upper < 0)
                abort();
        close(ldfd);
        check_scan(upper, pfd);

        /* What the project holds before: its specials, its protected and aisb's own parts. */
        specials before = {};
        FUZZ_CHECK(tree_walk(pfd, 0, TREE_WALK_STAT, record_special, &before) >= 0);
        char *project_hash = hash_at(top, "proj", true), *layer_hash = hash_at(layer_dir, "upper", true);
        char *git_hash = hash_at(project, ".git", false), *vscode_hash = hash_at(project, ".vscode", false),
             *own_hash = hash_at(project, ".ai-sandbox", false);

        aisb_policy *p = NULL;
        if (aisb_policy_new(&p, NULL) < 0 || aisb_policy_set(p, "project", project, NULL) < 0)
                abort();
        reports rep = { .project = pfd, .upper = upper };
        int r = aisb_review_diff(p, NULL, AISB_REVIEW_PATCH, on_change, &rep, NULL, &err);
        call_done(r, &err);
        reports_done(&rep);
        /* A forced dry run, then the forced apply it speaks for. */
        reports dry = { .project = pfd, .upper = upper };
        r = aisb_review_apply(p, NULL, NULL, AISB_APPLY_FORCE | AISB_APPLY_DRY_RUN, on_change, &dry, NULL, &err);
        call_done(r, &err);
        FUZZ_CHECK(r < 0 || (size_t) r == dry.not_applied);
        bool dry_ok = r >= 0;
        /* Neither changed anything. */
        FUZZ_CHECK(same_free(hash_at(top, "proj", true), strdup(project_hash)));
        FUZZ_CHECK(same_free(hash_at(layer_dir, "upper", true), strdup(layer_hash)));

        /* What the project must hold after a whole apply, read before apply reads the layer
         * (it gives a file of the user's that the agent made unreadable back its read bit). */
        tree merged;
        snapshot(pfd, &merged);
        if (dry_ok)
                merge_layer(&merged, upper, &dry);
        reports rep2 = { .project = pfd, .upper = upper, .apply = true, .dry = dry_ok ? &dry : NULL };
        r = aisb_review_apply(p, NULL, NULL, AISB_APPLY_FORCE, on_change, &rep2, NULL, &err);
        call_done(r, &err);
        FUZZ_CHECK(r < 0 || (size_t) r == rep2.not_applied);
        FUZZ_CHECK(r < 0 || !dry_ok || rep2.met == dry.n_said);
        if (r >= 0 && dry_ok && !rep2.partial)
                check_merged(&merged, pfd);
        tree_done(&merged);
        reports_done(&rep2);
        reports_done(&dry);

        after a = { .before = &before };
        FUZZ_CHECK(tree_walk(pfd, 0, TREE_WALK_STAT, check_entry, &a) >= 0);
        if (a.why)
                fprintf(stderr, "fuzz-layer: %s: %s\n", a.why, a.where ? a.where : "?");
        FUZZ_CHECK(!a.why);
        free(a.where);
        FUZZ_CHECK(same_free(hash_at(top, "outside", true), strdup(outside_hash)));
        FUZZ_CHECK(same_free(hash_at(project, ".git", false), git_hash));
        FUZZ_CHECK(same_free(hash_at(project, ".vscode", false), vscode_hash));
        FUZZ_CHECK(same_free(hash_at(project, ".ai-sandbox", false), own_hash));
        check_top(topfd);
        free(project_hash);
        free(layer_hash);
        free(layer_dir);
        aisb_policy_free(p);
        close(upper);
done:
        close(pfd);
        reset(topfd);
        close(topfd);
        return 0;
}
