/* SPDX-License-Identifier: MIT */
/*
 * Review layers, read and applied without podman: the walk and the record of a tree, a layer
 * as the overlay leaves it (whiteouts, opaque directories, links, FIFOs, setuid files) read
 * and compared with the project, and aisb diff, apply and discard over a layer made the way a
 * review run makes it (review_layer_create), the agent's writes put straight into its upper
 * directory. The e2e test review proves the same against a real sandbox.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "digest.h"
#include "fileio.h"
#include "internal.h"
#include "layer.h"
#include "manifest.h"
#include "policy.h"
#include "review.h"
#include "tree-walk.h"
#include "tree-write.h"
#include "tree-hash.h"
#include "unit.h"
#include "../suite-table.h"

static char top[64], project[128], outside[128], state[128];

static void setup(void)
{
        snprintf(top, sizeof top, "/tmp/aisb-test-review-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(top));
        snprintf(project, sizeof project, "%s/proj", top);
        snprintf(outside, sizeof outside, "%s/outside", top);
        snprintf(state, sizeof state, "%s/state", top);
        ck_assert_int_eq(mkdir(project, 0755), 0);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
        ck_assert_int_eq(mkdir(state, 0700), 0);
        ck_assert_int_eq(setenv("XDG_STATE_HOME", state, 1), 0);
}

static void teardown(void)
{
        ck_assert_int_eq(tree_remove(AT_FDCWD, top), 0);
}

static void put_at(const char *dir, const char *rel, const char *text, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

static void mkdir_at(const char *dir, const char *rel, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        ck_assert_msg(mkdir(path, mode) == 0 || errno == EEXIST, "%s: %s", path, strerror(errno));
        ck_assert_int_eq(chmod(path, mode), 0);
}

static char *read_at(const char *dir, const char *rel)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *text = NULL;
        ck_assert_int_ge(read_full_fd(fd, 1 << 20, &text, NULL), 0);
        close(fd);
        return text;
}


static char *tree_hash(const char *dir)
{
        return tree_hash_of(dir, false);
}

/* ---- the walk, the order, the record ---- */

START_TEST(test_path_order)
{
        ck_assert_int_lt(tree_path_cmp("a", "a/b"), 0);
        ck_assert_int_lt(tree_path_cmp("a/b", "a-c"), 0);
        ck_assert_int_lt(tree_path_cmp("a/zzz", "a0"), 0);
        ck_assert_int_gt(tree_path_cmp("b", "a/b"), 0);
        ck_assert_int_eq(tree_path_cmp("x/y", "x/y"), 0);
        ck_assert(tree_path_valid("a/b.c"));
        ck_assert(!tree_path_valid("/a"));
        ck_assert(!tree_path_valid("a//b"));
        ck_assert(!tree_path_valid("a/../b"));
        ck_assert(!tree_path_valid("./a"));
        ck_assert(!tree_path_valid("a/"));
        ck_assert(!tree_path_valid(""));
}
END_TEST

/* What a walk reported: each entry as "path" (a directory not entered: "path!"), joined by
 * spaces; skip: a name whose directory is left unentered. */
typedef struct seen {
        char text[1024];
        const char *skip;
} seen;

static int collect(const tree_entry *e, void *userdata)
{
        seen *s = userdata;
        size_t n = strlen(s->text);
        bool closed = e->type == DT_DIR && e->self < 0 && e->open_error != -ENAMETOOLONG;
        snprintf(s->text + n, sizeof s->text - n, "%s%s%s", n ? " " : "", e->open_error == -ENAMETOOLONG ? "long:" : "",
                 e->path);
        if (closed)
                strncat(s->text, "!", sizeof s->text - strlen(s->text) - 1);
        /* Never a link's target, never anything but a directory opened. */
        ck_assert(e->type == DT_DIR || e->self < 0);
        return s->skip && streq(e->name, s->skip) ? TREE_SKIP : 0;
}

/* A walk of the project with o, skipping skip: its result and what it reported. */
static void walked(const tree_walk_options *o, const char *skip, int want_result, const char *want)
{
        int fd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        seen s = { .skip = skip };
        ck_assert_int_eq(tree_walk_with(fd, o, collect, &s), want_result);
        if (want) /* NULL: which entries came first is the kernel's order */
                ck_assert_str_eq(s.text, want);
        close(fd);
}

/* The walk's order is each directory's names sorted; a link is reported and never followed
 * (what its target holds is never reached), a FIFO never opened (an open of one would wait
 * for a writer: the alarm ends a test that did); TREE_SKIP leaves a directory unentered, a
 * closed name is not even opened; each bound holds: entries in all (-E2BIG after what came
 * before), in one directory (the rest passed over), depth and path length (errors, or with
 * TREE_WALK_SKIP_DEEP reported and passed over). */
START_TEST(test_walk)
{
        mkdir_at(project, "a", 0755);
        mkdir_at(project, "a-c", 0755);
        mkdir_at(project, "a/deep", 0755);
        mkdir_at(project, "a/deep/err", 0755);
        put_at(project, "a/b", "x", 0644);
        put_at(project, "a-c/d", "x", 0644);
        put_at(outside, "secret", "s", 0644);
        mkdir_at(project, ".git", 0755);
        put_at(project, ".git/HEAD", "x", 0644);
        char path[256];
        snprintf(path, sizeof path, "%s/ln", project);
        ck_assert_int_eq(symlink(outside, path), 0);
        snprintf(path, sizeof path, "%s/fifo", project);
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        alarm(20);
        static const char *const closed[] = { ".git", NULL };
        static const struct {
                tree_walk_options o;
                const char *skip;
                int result;
                const char *want;
        } cases[] = {
                { {}, NULL, 0, ".git .git/HEAD a a/b a/deep a/deep/err a-c a-c/d fifo ln" },
                { { .flags = TREE_WALK_STAT }, NULL, 0, ".git .git/HEAD a a/b a/deep a/deep/err a-c a-c/d fifo ln" },
                { {}, "a", 0, ".git .git/HEAD a a-c a-c/d fifo ln" },
                { { .closed = closed }, NULL, 0, ".git! a a/b a/deep a/deep/err a-c a-c/d fifo ln" },
                { { .max_entries = 3 }, NULL, -E2BIG, NULL },
                { { .max_depth = 2 }, NULL, -ELOOP, ".git .git/HEAD a a/b a/deep" },
                { { .max_depth = 2, .flags = TREE_WALK_SKIP_DEEP }, NULL, 0,
                  ".git .git/HEAD a a/b a/deep! a-c a-c/d fifo ln" },
                { { .max_path = 10 }, NULL, -ENAMETOOLONG, ".git .git/HEAD a a/b a/deep" },
                { { .max_path = 10, .flags = TREE_WALK_SKIP_DEEP }, NULL, 0,
                  ".git .git/HEAD a a/b a/deep long:a/deep a-c a-c/d fifo ln" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                walked(&cases[i].o, cases[i].skip, cases[i].result, cases[i].want);
        /* Opened one at a time as the walk opens them: never through the link, never waiting
         * on the FIFO. */
        int fd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int k = tree_open_child(fd, "ln");
        ck_assert_msg(k == -ELOOP || k == -ENOTDIR, "the link opened: %d", k);
        ck_assert_int_eq(tree_open_child(fd, "fifo"), -ENOTDIR);
        ck_assert_int_eq(tree_open_dir(fd, "ln/secret", false, 0), -ELOOP);
        ck_assert_int_eq(tree_open_dir(fd, "a/b/c", false, 0), -ENOTDIR);
        const char *name;
        ck_assert_int_eq(tree_open_parent(fd, "ln/secret", &name), -ELOOP);
        ck_assert_int_eq(tree_walk(fd, 0, 0, collect, &(seen) {}), 0);
        /* One directory's names, sorted, from its start whatever was read of it before. */
        char **names = NULL;
        ck_assert_int_eq(tree_dir_names(fd, &names), 0);
        strv_free(names);
        ck_assert_int_eq(tree_dir_names(fd, &names), 0);
        static const char *const want[] = { ".git", "a", "a-c", "fifo", "ln", NULL };
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                ck_assert_pstr_eq(names[i], want[i]);
        strv_free(names);
        close(fd);
        /* A directory larger than its own bound: that many of its entries, the rest passed
         * over without an error. */
        for (int i = 0; i < 5; i++) {
                snprintf(path, sizeof path, "f%d", i);
                put_at(outside, path, "x", 0644);
        }
        fd = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        seen s = {};
        ck_assert_int_eq(tree_walk_with(fd, &(tree_walk_options) { .max_dir_entries = 3 }, collect, &s), 0);
        size_t spaces = 0;
        for (const char *c = s.text; *c; c++)
                spaces += *c == ' ';
        ck_assert_uint_eq(spaces, 2);
        close(fd);
        alarm(0);
}
END_TEST

/* A directory of the agent's without search permission (mode 0644) lists its names, but none
 * of them can be looked at: not root, the scan refuses that directory alone and reads the
 * rest. As root permissions refuse nothing, so the case runs as nobody. */
START_TEST(test_scan_unsearchable_directory)
{
        /* As nobody, in a child: the fixture's teardown stays root's. */
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (geteuid() == 0 && (chmod(top, 0711) < 0 || chown(outside, 65534, 65534) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                                       setresuid(65534, 65534, 65534) < 0))
                        _exit(10);
                mkdir_at(outside, "locked", 0755);
                put_at(outside, "locked/inside", "x", 0644);
                put_at(outside, "ok", "x", 0644);
                mkdir_at(outside, "locked", 0644);
                int fd = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                layer l = {};
                aisb_error *err = NULL;
                if (fd < 0 || layer_scan(fd, geteuid(), &l, &err) < 0) {
                        fprintf(stderr, "layer_scan: %s\n", aisb_error_message(err));
                        _exit(11);
                }
                /* The directory refused, nothing below it read, the rest read. */
                bool good = l.n == 2 && streq(l.entries[0].path, "locked") && l.entries[0].refused &&
                            streq(l.entries[1].path, "ok") && !l.entries[1].refused;
                for (size_t i = 0; i < l.n; i++)
                        fprintf(stderr, "scan: %s %s\n", l.entries[i].path, l.entries[i].refused ? l.entries[i].refused : "");
                mkdir_at(outside, "locked", 0755);
                _exit(good ? 0 : 12);
        }
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the scan as nobody: status %d", status);
}
END_TEST

START_TEST(test_manifest_round_trip)
{
        manifest m = {};
        manifest_entry e = { .path = (char *) "a", .type = MANIFEST_DIR, .mode = 0755, .ino = 7 };
        ck_assert_int_eq(manifest_add(&m, &e), 0);
        e = (manifest_entry) { .path = (char *) "a/new\nline %x", .type = MANIFEST_FILE, .mode = 04755, .size = 3,
                               .mtime_ns = -5, .ctime_ns = 9, .dev = 1, .ino = 8 };
        memset(e.hash, 'a', 64);
        ck_assert_int_eq(manifest_add(&m, &e), 0);
        e = (manifest_entry) { .path = (char *) "b", .type = MANIFEST_LINK, .target = (char *) "../x y", .ino = 9 };
        ck_assert_int_eq(manifest_add(&m, &e), 0);
        e = (manifest_entry) { .path = (char *) "c", .type = MANIFEST_UNREAD, .ino = 10 };
        ck_assert_int_eq(manifest_add(&m, &e), 0);
        buffer b = {};
        ck_assert_int_eq(manifest_format(&m, &b), 0);
        ck_assert_ptr_null(strstr(b.data, "new\nline"));
        manifest back = {};
        ck_assert_int_eq(manifest_parse(b.data, b.size, &back, NULL), 0);
        ck_assert_uint_eq(back.n, 4);
        ck_assert_str_eq(back.entries[1].path, "a/new\nline %x");
        ck_assert_int_eq(back.entries[1].mode, 04755);
        ck_assert_int_eq(back.entries[1].mtime_ns, -5);
        ck_assert_str_eq(back.entries[2].target, "../x y");
        ck_assert_ptr_nonnull(manifest_find(&back, "a/new\nline %x"));
        ck_assert_ptr_null(manifest_find(&back, "zz"));
        manifest_done(&back);
        /* Out of order, a bad escape, a path that climbs, a header missing: refused. */
        const char *bad[] = {
                "aisb-manifest 1\nf 644 0 0 0 0 1 - b\nf 644 0 0 0 0 1 - a\n",
                "aisb-manifest 1\nf 644 0 0 0 0 1 - a%zz\n",
                "aisb-manifest 1\nf 644 0 0 0 0 1 - a%41\n",
                "aisb-manifest 1\nf 644 0 0 0 0 1 - ../a\n",
                "aisb-manifest 1\nf 644 0 0 0 0 1 - /a\n",
                "aisb-manifest 1\nf 644 0 0 0 0 1 - a",
                "aisb-manifest 1\nf 7777777 0 0 0 0 1 - a\n",
                "aisb-manifest 1\nf 644 0 9223372036854775808 0 0 1 - a\n",
                "aisb-manifest 1\nf 644 0 0 -9223372036854775809 0 1 - a\n",
                "f 644 0 0 0 0 1 - a\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                size_t line = 0;
                ck_assert_msg(manifest_parse(bad[i], strlen(bad[i]), &back, &line) == -EBADMSG, "accepted: %s", bad[i]);
        }
        buffer_free(&b);
        manifest_done(&m);
}
END_TEST

/* ---- a layer as the overlay leaves it ---- */

static char upper[256];

/* What the overlay would have made of the agent's writes. */
static void whiteout(const char *rel)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", upper, rel);
        ck_assert_msg(mknod(path, S_IFCHR | 0, makedev(0, 0)) == 0, "mknod %s: %s", path, strerror(errno));
}

static void opaque(const char *rel)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", upper, rel);
        ck_assert_msg(setxattr(path, "user.overlay.opaque", "y", 1, 0) == 0, "setxattr %s: %s", path, strerror(errno));
}

static aisb_policy *policy_of_project(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        return p;
}

/* A layer made as a run makes it, with the agent's writes then put into its upper directory
 * by fill(); the run ended. */
static review_layer make_layer(const char *run, void (*fill)(void))
{
        int pfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        review_layer l = REVIEW_LAYER_NULL;
        aisb_error *err = NULL;
        ck_assert_msg(review_layer_create(project, pfd, run, PROTECT_DEFAULT, &l, &err) == 0, "%s",
                      aisb_error_message(err));
        snprintf(upper, sizeof upper, "%s", l.upper);
        fill();
        ck_assert_msg(review_layer_end(&l, pfd, &err) == 0, "%s", aisb_error_message(err));
        close(pfd);
        return l;
}

static void project_files(void)
{
        put_at(project, "a.txt", "hello\n", 0644);
        put_at(project, "same.txt", "same\n", 0644);
        mkdir_at(project, "sub", 0755);
        put_at(project, "sub/b.txt", "b\n", 0644);
        mkdir_at(project, "keep", 0755);
        put_at(project, "keep/old", "old\n", 0644);
        put_at(project, "keep/stays", "stays\n", 0644);
        mkdir_at(project, "keep/deep", 0755);
        put_at(project, "keep/deep/gone", "gone\n", 0644);
        put_at(project, "keep/deep/kept", "kept\n", 0644);
        mkdir_at(project, "bin", 0755);
        mkdir_at(project, ".git", 0755);
        put_at(project, ".git/HEAD", "ref: refs/heads/main\n", 0644);
}

static void agent_writes(void)
{
        put_at(upper, "a.txt", "changed\n", 0644);   /* modified */
        put_at(upper, "same.txt", "same\n", 0644);   /* copied up, unchanged: no change */
        put_at(upper, "new.txt", "new\n", 0644);     /* added */
        whiteout("sub");                             /* deleted, with what is in it */
        mkdir_at(upper, "keep", 0755);
        opaque("keep");                              /* replaced whole: keep/old and keep/stays go */
        put_at(upper, "keep/stays", "stays\n", 0644); /* ... but this one is made again */
        /* Made again below the opaque one, not marked opaque itself (as `rm -rf keep; mkdir -p
         * keep/deep` leaves it): the project's keep/deep/gone is gone from the agent's view. */
        mkdir_at(upper, "keep/deep", 0755);
        put_at(upper, "keep/deep/kept", "kept\n", 0644);
        mkdir_at(upper, "bin", 0700);                /* a directory's mode */
        put_at(upper, "sx", "", 04755);              /* setuid: dropped */
        char path[512];
        snprintf(path, sizeof path, "%s/fifo", upper);
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        snprintf(path, sizeof path, "%s/evil", upper);
        ck_assert_int_eq(symlink(outside, path), 0); /* a link out of the project */
        mkdir_at(upper, ".git", 0755);
        put_at(upper, ".git/HEAD", "ref: refs/heads/evil\n", 0644);
        mkdir_at(upper, ".vscode", 0755);
        put_at(upper, ".vscode/tasks.json", "{}\n", 0644);
}

typedef struct listed {
        char **lines;
        size_t n;
} listed;

static int list_change(const aisb_change *c, void *userdata)
{
        listed *l = userdata;
        char line[512];
        snprintf(line, sizeof line, "%s %s %s%s%s", c->action ? c->action : c->change, c->path,
                 c->refused ? "refused " : "", c->protected_path ? "protected " : "", c->mode_stripped ? "stripped" : "");
        ck_assert_int_eq(strv_push(&l->lines, line), 0);
        l->n++;
        return 0;
}

static bool has_line(const listed *l, const char *prefix)
{
        for (size_t i = 0; i < l->n; i++)
                if (strncmp(l->lines[i], prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

/* A line beginning with each of prefixes listed. */
static void listed_all(const listed *l, const char *const *prefixes, size_t n)
{
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(has_line(l, prefixes[i]), "not listed: %s", prefixes[i]);
}

/* A layer the agent wrote with fill, the policy that reads it, and what the last apply of it
 * listed. */
typedef struct reviewing {
        review_layer l;
        aisb_policy *p;
        listed got;
        aisb_error *err;
} reviewing;

static void review_begin(reviewing *v, const char *run, void (*fill)(void))
{
        *v = (reviewing) { .l = make_layer(run, fill), .p = policy_of_project() };
}

/* aisb review apply of paths (NULL: all) with flags: its result; what it listed in v->got
 * (that of this apply only) and on stderr. */
static int review_apply(reviewing *v, const char *const *paths, unsigned flags)
{
        strv_free(v->got.lines);
        v->got = (listed) {};
        aisb_error_free(v->err);
        v->err = NULL;
        int r = aisb_review_apply(v->p, NULL, paths, flags, list_change, &v->got, NULL, &v->err);
        for (size_t i = 0; i < v->got.n; i++)
                fprintf(stderr, "apply: %s\n", v->got.lines[i]);
        return r;
}

static void review_end(reviewing *v)
{
        strv_free(v->got.lines);
        aisb_error_free(v->err);
        aisb_policy_free(v->p);
        review_layer_done(&v->l);
}

/* The entrypoint checks a review run's /project by a file at the project's top, of one link
 * (its inode and change time); a project without one is refused in a line. */
START_TEST(test_layer_anchor)
{
        int pfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(pfd, 0);
        review_layer l = REVIEW_LAYER_NULL;
        aisb_error *err = NULL;
        /* Nothing at the top but a directory with a file in it, a link, and a file of two
         * links: no anchor. */
        mkdir_at(project, "a", 0755);
        put_at(project, "a/deep", "x", 0644);
        put_at(project, "a/two", "x", 0644);
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/a/two", project);
        snprintf(to, sizeof to, "%s/aa-two", project);
        ck_assert_int_eq(link(from, to), 0);
        snprintf(to, sizeof to, "%s/ab-link", project);
        ck_assert_int_eq(symlink("a/deep", to), 0);
        ck_assert_int_eq(review_layer_create(project, pfd, "aisb-proj-00000009", PROTECT_DEFAULT, &l, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "needs a file at the project's top"));
        aisb_error_free(err);
        err = NULL;
        put_at(project, "zz-top", "x", 0644);
        ck_assert_msg(review_layer_create(project, pfd, "aisb-proj-00000009", PROTECT_DEFAULT, &l, &err) == 0, "%s",
                      aisb_error_message(err));
        ck_assert_str_eq(l.anchor, "/project/zz-top");
        struct stat st;
        ck_assert_int_eq(fstatat(pfd, "zz-top", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(l.anchor_ino, st.st_ino);
        ck_assert(l.anchor_ctime_ns == (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec);
        review_layer_done(&l);
        close(pfd);
}
END_TEST

/* A copy-up of a huge (here sparse) file, unchanged: listed modified, its bytes not read. */
static void sparse_at(const char *dir, const char *rel, off_t size)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, size), 0);
        close(fd);
}

static void agent_copies_up_huge(void)
{
        sparse_at(upper, "huge", (off_t) LAYER_COMPARE_MAX + 1);
        sparse_at(upper, "big", (off_t) LAYER_COMPARE_MAX);
}

START_TEST(test_huge_file_not_compared)
{
        sparse_at(project, "huge", (off_t) LAYER_COMPARE_MAX + 1);
        sparse_at(project, "big", (off_t) LAYER_COMPARE_MAX);
        reviewing v;
        review_begin(&v, "aisb-proj-00000008", agent_copies_up_huge);
        ck_assert_msg(aisb_review_diff(v.p, NULL, 0, list_change, &v.got, NULL, &v.err) == 0, "%s",
                      aisb_error_message(v.err));
        ck_assert(has_line(&v.got, "modified huge"));
        ck_assert(!has_line(&v.got, "modified big")); /* at the bound: compared, the same */
        ck_assert_uint_eq(v.got.n, 1);
        review_end(&v);
}
END_TEST

START_TEST(test_layer_as_the_overlay_leaves_it)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-00000001", agent_writes);
        ck_assert_uint_eq(v.l.changes, 12);
        char *run = NULL;
        ck_assert_msg(aisb_review_diff(v.p, NULL, 0, list_change, &v.got, &run, &v.err) == 0, "%s",
                      aisb_error_message(v.err));
        ck_assert_str_eq(run, "aisb-proj-00000001");
        for (size_t i = 0; i < v.got.n; i++)
                fprintf(stderr, "diff: %s\n", v.got.lines[i]);
        /* Each line listed, or (a leading '!') not. */
        static const char *const lines[] = {
                "modified a.txt", "!modified same.txt", "added new.txt", "deleted sub ", "!deleted sub/b.txt",
                "deleted keep/old", "!deleted keep/stays", "deleted keep/deep/gone", "!deleted keep/deep/kept",
                "!deleted keep/deep ", "mode bin", "added sx stripped", "added fifo refused", "added evil",
                "modified .git/HEAD protected", "added .vscode protected", "added .vscode/tasks.json protected",
        };
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                bool absent = lines[i][0] == '!';
                ck_assert_msg(has_line(&v.got, lines[i] + absent) != absent, "%s", lines[i]);
        }
        ck_assert_uint_eq(v.got.n, v.l.changes);
        free(run);
        review_end(&v);
}
END_TEST

typedef struct patch_count {
        int patches;
        bool a_seen;
} patch_count;

static int count_patches(const aisb_change *ch, void *userdata)
{
        patch_count *k = userdata;
        if (ch->patch) {
                k->patches++;
                if (streq(ch->path, "a.txt"))
                        k->a_seen = strstr(ch->patch, "-hello\n+changed\n") != NULL;
        }
        return 0;
}

START_TEST(test_diff_shows_text_patches)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-00000002", agent_writes);
        patch_count c = {};
        ck_assert_msg(aisb_review_diff(v.p, "00000002", AISB_REVIEW_PATCH, count_patches, &c, NULL, &v.err) == 0, "%s",
                      aisb_error_message(v.err));
        ck_assert(c.a_seen);
        ck_assert_int_ge(c.patches, 3); /* a.txt, new.txt, .git/HEAD at least */
        review_end(&v);
}
END_TEST

START_TEST(test_apply_all)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-00000003", agent_writes);
        char *outside_before = tree_hash(outside);
        /* A dry run changes nothing. */
        char *before = tree_hash(project);
        int r = review_apply(&v, NULL, AISB_APPLY_DRY_RUN);
        ck_assert_msg(r >= 0, "%s", aisb_error_message(v.err));
        char *after = tree_hash(project);
        ck_assert_str_eq(before, after);
        free(after);
        /* The FIFO is refused: one path not applied. */
        r = review_apply(&v, NULL, 0);
        ck_assert_msg(r == 1, "%d: %s", r, v.err ? aisb_error_message(v.err) : "");
        ck_assert(has_line(&v.got, "refused fifo"));
        ck_assert(has_line(&v.got, "skipped .git/HEAD"));
        ck_assert(has_line(&v.got, "skipped .vscode"));
        _cleanup_free_ char *a = read_at(project, "a.txt"), *n = read_at(project, "new.txt"),
                            *head = read_at(project, ".git/HEAD"), *stays = read_at(project, "keep/stays");
        ck_assert_str_eq(a, "changed\n");
        ck_assert_str_eq(n, "new\n");
        ck_assert_str_eq(head, "ref: refs/heads/main\n");
        ck_assert_str_eq(stays, "stays\n");
        /* What is gone, and what is there with which type and mode (0: absent). */
        static const struct {
                const char *rel;
                mode_t mode;
        } entries[] = {
                { "sub", 0 }, { "keep/old", 0 }, { "fifo", 0 }, { ".vscode", 0 },
                { "sx", S_IFREG | 0755 }, { "bin", S_IFDIR | 0700 }, { "evil", S_IFLNK | 0777 },
        };
        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                struct stat st;
                char path[512];
                snprintf(path, sizeof path, "%s/%s", project, entries[i].rel);
                int k = lstat(path, &st);
                ck_assert_msg(entries[i].mode ? k == 0 && st.st_mode == entries[i].mode : k == -1, "%s: %d, mode %o",
                              entries[i].rel, k, k == 0 ? st.st_mode : 0);
        }
        char *outside_after = tree_hash(outside);
        ck_assert_str_eq(outside_before, outside_after);
        /* Named, a protected path is applied. */
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { ".git", NULL }, 0), 0);
        free(head);
        head = read_at(project, ".git/HEAD");
        ck_assert_str_eq(head, "ref: refs/heads/evil\n");
        /* A path that names no change: refused whole, nothing done. */
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { "no/such", NULL }, 0), -ENOENT);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(v.err), "no/such"));
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { "../x", NULL }, 0), -EINVAL);
        free(before);
        free(outside_before);
        free(outside_after);
        review_end(&v);
}
END_TEST

static void agent_writes_two(void)
{
        put_at(upper, "a.txt", "agent\n", 0644);
        mkdir_at(upper, "sub", 0755);
        put_at(upper, "sub/b.txt", "agent b\n", 0644);
        put_at(upper, "gone.txt", "agent\n", 0644);
        whiteout("same.txt");
}

START_TEST(test_apply_conflicts)
{
        project_files();
        put_at(project, "gone.txt", "user's\n", 0644);
        reviewing v;
        review_begin(&v, "aisb-proj-00000004", agent_writes_two);
        /* The user, after the run began: a.txt edited, gone.txt removed, same.txt replaced. */
        put_at(project, "a.txt", "user's edit\n", 0644);
        char path[512];
        snprintf(path, sizeof path, "%s/gone.txt", project);
        ck_assert_int_eq(unlink(path), 0);
        snprintf(path, sizeof path, "%s/same.txt", project);
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s/same.new", project);
        put_at(project, "same.new", "user's\n", 0644);
        ck_assert_int_eq(rename(tmp, path), 0);
        ck_assert_int_eq(review_apply(&v, NULL, 0), 3);
        static const char *const listed_lines[] = { "conflict a.txt", "conflict gone.txt", "conflict same.txt",
                                                    "applied sub/b.txt" };
        listed_all(&v.got, listed_lines, ELEMENTSOF(listed_lines));
        _cleanup_free_ char *a = read_at(project, "a.txt");
        ck_assert_str_eq(a, "user's edit\n");
        /* Forced, they are the agent's. */
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { "a.txt", NULL }, AISB_APPLY_FORCE), 0);
        free(a);
        a = read_at(project, "a.txt");
        ck_assert_str_eq(a, "agent\n");
        review_end(&v);
}
END_TEST

/* A conflict changes nothing: the directory the user removed is not made again for it. */
START_TEST(test_conflict_makes_nothing)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-00000007", agent_writes_two);
        char path[512];
        snprintf(path, sizeof path, "%s/sub", project);
        ck_assert_int_eq(tree_remove(AT_FDCWD, path), 0);
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { "sub", NULL }, 0), 2);
        ck_assert(has_line(&v.got, "conflict sub "));
        ck_assert(has_line(&v.got, "conflict sub/b.txt"));
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), -1);
        review_end(&v);
}
END_TEST

static void agent_writes_below_sub(void)
{
        mkdir_at(upper, "sub", 0755);
        put_at(upper, "sub/b.txt", "written through?\n", 0644);
        put_at(upper, "sub/new", "new\n", 0644);
}

START_TEST(test_apply_never_through_a_project_link)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-00000005", agent_writes_below_sub);
        /* After the run, sub becomes a link out of the project (another run's agent, or anyone
         * who can write the project). */
        put_at(outside, "b.txt", "outside\n", 0644);
        char path[512];
        snprintf(path, sizeof path, "%s/sub", project);
        ck_assert_int_eq(tree_remove(AT_FDCWD, path), 0);
        ck_assert_int_eq(symlink(outside, path), 0);
        char *before = tree_hash(outside);
        /* The link is not what the run began with: a conflict, nothing written. */
        ck_assert_int_ge(review_apply(&v, NULL, 0), 1);
        ck_assert(has_line(&v.got, "conflict sub "));
        char *after = tree_hash(outside);
        ck_assert_str_eq(before, after);
        free(after);
        /* Forced, the layer's directory replaces the link; nothing goes through it. */
        ck_assert_int_eq(review_apply(&v, NULL, AISB_APPLY_FORCE), 0);
        after = tree_hash(outside);
        ck_assert_str_eq(before, after);
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        _cleanup_free_ char *b = read_at(project, "sub/b.txt");
        ck_assert_str_eq(b, "written through?\n");
        free(before);
        free(after);
        review_end(&v);
}
END_TEST

static void agent_makes_bare_repository(void)
{
        mkdir_at(upper, "tool", 0755);
        put_at(upper, "tool/HEAD", "ref: refs/heads/main\n", 0644);
        mkdir_at(upper, "tool/objects", 0755);
        mkdir_at(upper, "tool/refs", 0755);
        put_at(upper, "tool/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
        put_at(upper, "notes.txt", "fine\n", 0644);
        /* One the project half holds: the agent adds its HEAD. */
        mkdir_at(upper, "half", 0755);
        put_at(upper, "half/HEAD", "ref: refs/heads/main\n", 0644);
        put_at(upper, "half/config", "[core]\n\thooksPath = /tmp\n", 0644);
        /* The project itself made one: git's names at its top. */
        put_at(upper, "HEAD", "ref: refs/heads/main\n", 0644);
        mkdir_at(upper, "objects", 0755);
        mkdir_at(upper, "refs", 0755);
        put_at(upper, "config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
}

START_TEST(test_a_git_directory_the_agent_made_is_protected)
{
        project_files();
        mkdir_at(project, "half", 0755);
        mkdir_at(project, "half/objects", 0755);
        mkdir_at(project, "half/refs", 0755);
        reviewing v;
        review_begin(&v, "aisb-proj-00000006", agent_makes_bare_repository);
        ck_assert_int_eq(review_apply(&v, NULL, 0), 0);
        static const char *const listed_lines[] = { "skipped tool/config", "skipped half/HEAD ", "skipped half/config ",
                                                    "skipped config ", "skipped HEAD ", "applied notes.txt" };
        listed_all(&v.got, listed_lines, ELEMENTSOF(listed_lines));
        _cleanup_free_ char *config = read_at(project, "tool/config");
        ck_assert_ptr_null(config);
        review_end(&v);
}
END_TEST

/* What a review run can plant in .git to make the user's git run or read elsewhere, beside
 * what an agent's commits bring (refs, objects, HEAD, logs). */
static void agent_redirects_git(void)
{
        mkdir_at(upper, ".git", 0755);
        put_at(upper, ".git/HEAD", "ref: refs/heads/feature\n", 0644);
        put_at(upper, ".git/commondir", "../evilgit\n", 0644);
        put_at(upper, ".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
        put_at(upper, ".git/config.worktree", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
        mkdir_at(upper, ".git/hooks", 0755);
        put_at(upper, ".git/hooks/pre-commit", "#!/bin/sh\n", 0755);
        mkdir_at(upper, ".git/info", 0755);
        put_at(upper, ".git/info/attributes", "* filter=evil\n", 0644);
        mkdir_at(upper, ".git/objects", 0755);
        mkdir_at(upper, ".git/objects/info", 0755);
        put_at(upper, ".git/objects/info/alternates", "/tmp/evil/objects\n", 0644);
        mkdir_at(upper, ".git/objects/ab", 0755);
        put_at(upper, ".git/objects/ab/cdef", "blob\n", 0444);
        mkdir_at(upper, ".git/refs", 0755);
        mkdir_at(upper, ".git/refs/heads", 0755);
        put_at(upper, ".git/refs/heads/feature", "0123456789012345678901234567890123456789\n", 0644);
        /* A branch of that name is the repository's own, not its configuration. */
        put_at(upper, ".git/refs/heads/config", "0123456789012345678901234567890123456789\n", 0644);
        mkdir_at(upper, ".git/refs/replace", 0755);
        put_at(upper, ".git/refs/replace/0123456789012345678901234567890123456789",
               "9876543210987654321098765432109876543210\n", 0644);
        put_at(upper, ".git/packed-refs", "# pack-refs with: peeled\n"
               "0123456789012345678901234567890123456789 refs/heads/old\n"
               "9876543210987654321098765432109876543210 refs/replace/0123456789012345678901234567890123456789\n", 0644);
        put_at(upper, ".git/shallow", "0123456789012345678901234567890123456789\n", 0644);
        mkdir_at(upper, ".git/worktrees", 0755);
        mkdir_at(upper, ".git/worktrees/w", 0755);
        put_at(upper, ".git/worktrees/w/gitdir", "/tmp/elsewhere/.git\n", 0644);
        put_at(upper, ".git/worktrees/w/HEAD", "ref: refs/heads/w\n", 0644);
        mkdir_at(upper, ".git/modules", 0755);
        mkdir_at(upper, ".git/modules/lib", 0755);
        put_at(upper, ".git/modules/lib/config", "[core]\n\thooksPath = /tmp\n", 0644);
        /* A submodule whose name holds "logs": its git directory's configuration is still one. */
        mkdir_at(upper, ".git/modules/tools", 0755);
        mkdir_at(upper, ".git/modules/tools/logs", 0755);
        put_at(upper, ".git/modules/tools/logs/config", "[core]\n\tfsmonitor = x\n", 0644);
        /* Links lead git elsewhere: into the home volume, where later runs change them. */
        char path[512];
        snprintf(path, sizeof path, "%s/.git/refs/tags", upper);
        ck_assert_int_eq(symlink("/home/sandbox/refs", path), 0);
        mkdir_at(upper, ".git/rebase-merge", 0755);
        put_at(upper, ".git/rebase-merge/git-rebase-todo", "exec touch /tmp/pwned\n", 0644);
        mkdir_at(upper, ".git/rr-cache", 0755);
        /* An object the project has, rewritten: a forged commit under the reviewed name. */
        mkdir_at(upper, ".git/objects/aa", 0755);
        put_at(upper, ".git/objects/aa/bbcc", "forged\n", 0444);
        /* A new pack, whose index could claim that name too. */
        mkdir_at(upper, ".git/objects/pack", 0755);
        put_at(upper, ".git/objects/pack/pack-1.idx", "idx\n", 0444);
        put_at(upper, ".git/objects/pack/pack-1.pack", "pack\n", 0444);
        /* A nested repository's .git as a file: git would use the directory it names. */
        mkdir_at(upper, "vendor", 0755);
        put_at(upper, "vendor/.git", "gitdir: /tmp/evilgit\n", 0644);
}

START_TEST(test_apply_git_never_takes_redirections)
{
        project_files();
        mkdir_at(project, ".git/objects", 0755);
        mkdir_at(project, ".git/objects/aa", 0755);
        put_at(project, ".git/objects/aa/bbcc", "the commit\n", 0444);
        reviewing v;
        review_begin(&v, "aisb-proj-0000000d", agent_redirects_git);
        int r = review_apply(&v, (const char *const[]) { ".git", "vendor", "vendor/.git", NULL }, 0);
        static const char *const refused[] = {
                ".git/commondir", ".git/config ", ".git/config.worktree", ".git/hooks ", ".git/hooks/pre-commit",
                ".git/info ", ".git/info/attributes", ".git/objects/info ", ".git/objects/info/alternates",
                ".git/refs/replace ", ".git/refs/replace/0123", ".git/packed-refs", ".git/shallow",
                ".git/worktrees/w/gitdir", ".git/modules/lib/config", "vendor/.git", ".git/modules/tools/logs/config",
                ".git/refs/tags", ".git/rebase-merge ", ".git/rebase-merge/git-rebase-todo", ".git/rr-cache",
                ".git/objects/aa/bbcc", ".git/objects/pack/pack-1.idx", ".git/objects/pack/pack-1.pack",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                char line[128];
                snprintf(line, sizeof line, "refused %s", refused[i]);
                ck_assert_msg(has_line(&v.got, line), "not refused: %s", refused[i]);
        }
        static const char *const applied[] = { ".git/HEAD", ".git/objects/ab/cdef", ".git/refs/heads/feature",
                                               ".git/refs/heads/config", ".git/worktrees/w/HEAD", "vendor ",
                                               ".git/modules/tools/logs " };
        for (size_t i = 0; i < ELEMENTSOF(applied); i++) {
                char line[128];
                snprintf(line, sizeof line, "applied %s", applied[i]);
                ck_assert_msg(has_line(&v.got, line), "not applied: %s", applied[i]);
        }
        ck_assert_int_eq(r, (int) ELEMENTSOF(refused));
        _cleanup_free_ char *config = read_at(project, ".git/config"), *commondir = read_at(project, ".git/commondir"),
                            *head = read_at(project, ".git/HEAD");
        ck_assert_ptr_null(config);
        ck_assert_ptr_null(commondir);
        ck_assert_str_eq(head, "ref: refs/heads/feature\n");

        /* Named exactly, still refused without --force; with it, taken. */
        const char *const exact[] = { ".git/config", NULL };
        ck_assert_int_eq(review_apply(&v, exact, 0), 1);
        ck_assert(has_line(&v.got, "refused .git/config"));
        ck_assert_int_eq(review_apply(&v, exact, AISB_APPLY_FORCE), 0);
        ck_assert(has_line(&v.got, "applied .git/config"));
        /* --force alone, naming an ancestor, is not enough. */
        ck_assert_int_gt(review_apply(&v, (const char *const[]) { ".git", NULL }, AISB_APPLY_FORCE), 0);
        ck_assert(has_line(&v.got, "refused .git/commondir"));
        review_end(&v);
}
END_TEST

/* packed-refs without a replace ref is the repository's own refs: applied. */
static void agent_packs_refs(void)
{
        mkdir_at(upper, ".git", 0755);
        put_at(upper, ".git/packed-refs", "# pack-refs with: peeled\n"
               "0123456789012345678901234567890123456789 refs/heads/main\n", 0644);
}

START_TEST(test_apply_git_packed_refs)
{
        project_files();
        reviewing v;
        review_begin(&v, "aisb-proj-0000000e", agent_packs_refs);
        ck_assert_int_eq(review_apply(&v, (const char *const[]) { ".git", NULL }, 0), 0);
        ck_assert(has_line(&v.got, "applied .git/packed-refs"));
        review_end(&v);
}
END_TEST

/* The project's path, now another directory (replaced, or swapped by someone who can write
 * its parent): diff and apply do nothing there. */
START_TEST(test_another_directory_at_the_path)
{
        project_files();
        review_layer l = make_layer("aisb-proj-0000000c", agent_writes);
        char moved[512];
        snprintf(moved, sizeof moved, "%s.moved", project);
        ck_assert_int_eq(rename(project, moved), 0);
        ck_assert_int_eq(mkdir(project, 0755), 0);
        aisb_policy *p = policy_of_project();
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_review_apply(p, NULL, NULL, AISB_APPLY_FORCE, NULL, NULL, NULL, &err), -ESTALE);
        ck_assert_msg(strstr(aisb_error_message(err), "is not the directory aisb-proj-0000000c began in"), "%s",
                      aisb_error_message(err));
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(aisb_review_diff(p, NULL, 0, NULL, NULL, NULL, &err), -ESTALE);
        aisb_error_free(err);
        ck_assert_int_eq(rmdir(project), 0); /* empty: nothing was applied */
        ck_assert_int_eq(rename(moved, project), 0);
        aisb_policy_free(p);
        review_layer_done(&l);
}
END_TEST

START_TEST(test_discard_and_find)
{
        project_files();
        review_layer l1 = make_layer("aisb-proj-0000000a", agent_writes_two);
        review_layer l2 = make_layer("aisb-proj-0000000b", agent_writes_below_sub);
        aisb_policy *p = policy_of_project();
        char *run = NULL;
        aisb_error *err = NULL;
        /* The newest, unless named. */
        ck_assert_int_eq(aisb_review_diff(p, NULL, 0, NULL, NULL, &run, &err), 0);
        ck_assert_str_eq(run, "aisb-proj-0000000b");
        free(run);
        ck_assert_int_eq(aisb_review_diff(p, "0000000a", 0, NULL, NULL, &run, &err), 0);
        ck_assert_str_eq(run, "aisb-proj-0000000a");
        free(run);
        ck_assert_int_eq(aisb_review_diff(p, "nosuch", 0, NULL, NULL, NULL, &err), -ENOENT);
        aisb_error_free(err);
        err = NULL;
        char *before = tree_hash(project);
        ck_assert_int_eq(aisb_review_discard(NULL, p, "0000000a", &run, &err), 0);
        ck_assert_str_eq(run, "aisb-proj-0000000a");
        free(run);
        ck_assert_int_eq(access(l1.dir, F_OK), -1);
        char *after = tree_hash(project);
        ck_assert_str_eq(before, after);
        /* A layer whose run goes on is neither applied nor discarded. */
        int lock = open(l2.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = openat(lock, "lock", O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        pid_t child = fork();
        if (child == 0) {
                ck_assert_int_eq(flock(fd, LOCK_EX), 0);
                pause();
                _exit(0);
        }
        for (int i = 0; i < 200 && !run_dir_running(lock); i++)
                usleep(10000);
        ck_assert(run_dir_running(lock));
        ck_assert_int_eq(aisb_review_apply(p, NULL, NULL, 0, NULL, NULL, NULL, &err), -EBUSY);
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(aisb_review_discard(NULL, p, NULL, NULL, &err), -EBUSY);
        aisb_error_free(err);
        err = NULL;
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        close(fd); /* the lock is the open file's, shared with the child */
        /* Its aisb killed: the lock is free, but the run never ended (its sandbox may live on
         * and write the layer): apply waits for its end (aisb clean gives it), diff does not. */
        run_info info = {};
        ck_assert_int_eq(run_dir_info(lock, &info), 0);
        info.ended_ns = 0;
        ck_assert_int_eq(run_dir_write_info(lock, &info), 0);
        run_info_done(&info);
        ck_assert(!run_dir_running(lock));
        ck_assert_int_eq(aisb_review_apply(p, NULL, NULL, 0, NULL, NULL, NULL, &err), -EBUSY);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "did not end (its aisb was killed)"));
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(aisb_review_diff(p, NULL, 0, NULL, NULL, NULL, &err), 0);
        ck_assert_int_eq(run_dir_mark_ended(lock), 0);
        ck_assert_int_eq(aisb_review_apply(p, NULL, NULL, AISB_APPLY_DRY_RUN, NULL, NULL, NULL, &err), 0);
        close(lock);
        ck_assert_int_eq(aisb_review_discard(NULL, p, NULL, NULL, &err), 0);
        ck_assert_int_eq(aisb_review_diff(p, NULL, 0, NULL, NULL, NULL, &err), -ENOENT);
        aisb_error_free(err);
        free(before);
        free(after);
        aisb_policy_free(p);
        review_layer_done(&l1);
        review_layer_done(&l2);
}
END_TEST

static Suite *review_suite(void)
{
        Suite *s = suite_create("review");
        suite_add_tests(s, "walk", setup, teardown, test_path_order, test_walk, test_manifest_round_trip,
                        test_scan_unsearchable_directory);
        suite_add_tests(s, "layer", setup, teardown, test_layer_anchor, test_layer_as_the_overlay_leaves_it,
                        test_huge_file_not_compared, test_diff_shows_text_patches, test_apply_all, test_apply_conflicts,
                        test_conflict_makes_nothing, test_apply_never_through_a_project_link,
                        test_a_git_directory_the_agent_made_is_protected, test_apply_git_never_takes_redirections,
                        test_apply_git_packed_refs, test_another_directory_at_the_path, test_discard_and_find);
        return s;
}

int main(void)
{
        return unit_run(review_suite());
}
