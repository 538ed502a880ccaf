/* SPDX-License-Identifier: MIT */
/*
 * A review layer is the agent's: the input is a small program that builds a project, then a
 * layer over it as the overlay would leave it (files of any mode, directories, links out of
 * the project, whiteouts, FIFOs, opaque directories, hard links, names with control bytes),
 * then what the user changes meanwhile (a directory swapped for a link out of the project).
 * The layer is made as a review run makes it (review_layer_create, review_layer_end), shown
 * (aisb_review_diff with patches) and applied whole, forced (aisb_review_apply).
 * Checked: nothing outside the project changes (a sentinel tree, hashed); no FIFO, socket or
 * device is made in the project; no file there has setuid, setgid or sticky; no file there
 * holds the sentinel's content (nothing was copied through a link); a failure is one line.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "digest.h"
#include "internal.h"
#include "fuzz.h"
#include "review.h"
#include "tree-walk.h"

#define SENTINEL "sentinel content, never to be copied"

static char top[] = "/tmp/aisb-fuzz-layer-XXXXXX";
static char project[96], outside[96], state[96];
static char *outside_hash;

static int hash_entry(const tree_entry *e, void *userdata)
{
        digest *d = userdata;
        char line[64];
        snprintf(line, sizeof line, "%o %lld", (unsigned) e->st->st_mode, (long long) e->st->st_size);
        if (digest_update(d, e->path, strlen(e->path) + 1) < 0 || digest_update(d, line, strlen(line)) < 0)
                abort();
        if (S_ISREG(e->st->st_mode)) {
                int fd = openat(e->dir, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || digest_update_fd(d, fd, (uint64_t) e->st->st_size) < 0)
                        abort();
                close(fd);
        }
        return 0;
}

static char *hash_tree(const char *dir)
{
        digest *d = NULL;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char *hex = NULL;
        if (fd < 0 || digest_new(&d) < 0 || tree_walk(fd, 0, TREE_WALK_STAT, hash_entry, d) < 0 ||
            digest_end_hex(d, 64, &hex) < 0)
                abort();
        close(fd);
        digest_free(d);
        return hex;
}

static void write_at(const char *dir, const char *rel, const char *text, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd < 0)
                return; /* a parent missing, or not a directory: the op does nothing */
        if (write(fd, text, strlen(text)) < 0 || fchmod(fd, mode) < 0)
                abort();
        close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        if (outside_hash)
                return 0;
        if (!mkdtemp(top))
                abort();
        snprintf(project, sizeof project, "%s/proj", top);
        snprintf(outside, sizeof outside, "%s/outside", top);
        snprintf(state, sizeof state, "%s/state", top);
        if (mkdir(outside, 0755) < 0 || mkdir(state, 0700) < 0)
                abort();
        char sub[160];
        snprintf(sub, sizeof sub, "%s/dir", outside);
        if (mkdir(sub, 0755) < 0)
                abort();
        write_at(outside, "secret", SENTINEL, 0644);
        write_at(outside, "dir/secret", SENTINEL, 0644);
        outside_hash = hash_tree(outside);
        setenv("XDG_STATE_HOME", state, 1);
        return 0;
}

/* The names and link targets a program draws from. */
static const char *const names[] = {
        "a", "b", "d", "d/f", "d/g", "d/h", "e", "e/x", "e/y/z", "nl\nname", "esc\x1b[2Jname", "x y",
        ".git", ".git/HEAD", ".git/config", ".vscode", "tool", "tool/HEAD", "tool/objects", "tool/refs", "l",
};
static const char *targets[] = { "a", "d", "../outside", NULL /* the outside, absolute */, "/etc/passwd",
                                 "../../outside/secret", "." };

static const char *name_of(uint8_t b)
{
        return names[b % (sizeof names / sizeof names[0])];
}

/* One step of the program in dir (the project, or the layer as the agent's writes leave it),
 * never through a link in the path: the harness plays the agent, whose writes resolve inside
 * its own sandbox, never on the host. */
static void op(const char *dir, uint8_t code, uint8_t arg, bool is_layer)
{
        const char *name = name_of(arg), *leaf;
        int base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (base < 0)
                abort();
        int pd = tree_open_parent(base, name, &leaf);
        close(base);
        if (pd < 0)
                return;
        static const mode_t modes[] = { 0644, 0755, 04755, 02755, 01777, 0600, 0000, 06777 };
        switch (code % 10) {
        case 0:
                (void) mkdirat(pd, leaf, 0755);
                break;
        case 1: {
                /* The project's own files are plain: what apply may not make is the layer's. */
                int fd = openat(pd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        if (write(fd, "content\n", 8) != 8 ||
                            fchmod(fd, is_layer ? modes[arg % 8] : modes[arg % 8] & 0777) < 0)
                                abort();
                        close(fd);
                }
                break;
        }
        case 2: {
                const char *t = targets[(arg >> 5) % (sizeof targets / sizeof targets[0])];
                (void) symlinkat(t ? t : outside, pd, leaf);
                break;
        }
        case 3:
                /* A whiteout, as the overlay makes one (unprivileged on Linux 5.8 and later). */
                if (is_layer)
                        (void) mknodat(pd, leaf, S_IFCHR | 0, makedev(0, 0));
                break;
        case 4:
                if (is_layer)
                        (void) mkfifoat(pd, leaf, 0644);
                break;
        case 5:
                if (is_layer) {
                        int fd = openat(pd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0) {
                                (void) fsetxattr(fd, "user.overlay.opaque", "y", 1, XATTR_CREATE);
                                close(fd);
                        }
                }
                break;
        case 6: {
                const char *other_leaf;
                int obase = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int od = obase >= 0 ? tree_open_parent(obase, name_of((uint8_t) (arg + 7)), &other_leaf) : -1;
                if (od >= 0) {
                        (void) linkat(pd, leaf, od, other_leaf, 0);
                        close(od);
                }
                if (obase >= 0)
                        close(obase);
                break;
        }
        case 7: {
                int fd = is_layer ? openat(pd, leaf, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
                if (fd >= 0) {
                        (void) ftruncate(fd, (off_t) 1 << 30); /* sparse, 1 GiB */
                        close(fd);
                }
                break;
        }
        case 8:
                (void) fchmodat(pd, leaf, modes[arg % 8] & 0777, AT_SYMLINK_NOFOLLOW);
                break;
        default:
                (void) tree_remove(pd, leaf);
                break;
        }
        close(pd);
}

typedef struct made {
        bool bad;
        const char *why;
} made;

static int check_entry(const tree_entry *e, void *userdata)
{
        made *m = userdata;
        mode_t mode = e->st->st_mode;
        if (S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode) || S_ISBLK(mode)) {
                m->bad = true;
                m->why = "a FIFO, socket or device in the project";
        }
        if (S_ISREG(mode) && (mode & 07000)) {
                m->bad = true;
                m->why = "setuid, setgid or sticky in the project";
        }
        if (S_ISREG(mode) && e->st->st_size == (off_t) strlen(SENTINEL)) {
                char buf[64] = "";
                int fd = openat(e->dir, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && read(fd, buf, sizeof buf - 1) == (ssize_t) strlen(SENTINEL) && !strcmp(buf, SENTINEL)) {
                        m->bad = true;
                        m->why = "the sentinel's content copied into the project";
                }
                if (fd >= 0)
                        close(fd);
        }
        return 0;
}

static int ignore(const aisb_change *c, void *userdata)
{
        FUZZ_CHECK(c->path && *c->path);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        LLVMFuzzerInitialize(NULL, NULL);
        if (size > 96)
                return 0;
        int topfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (topfd < 0)
                abort();
        (void) tree_remove(topfd, "proj");
        (void) tree_remove(topfd, "state");
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
        review_layer l = REVIEW_LAYER_NULL;
        aisb_error *err = NULL;
        if (review_layer_create(project, pfd, "aisb-proj-0000fuzz", ".git,.vscode", &l, &err) < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                close(pfd);
                close(topfd);
                return 0;
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
        review_layer_done(&l);
        aisb_policy *p = NULL;
        if (aisb_policy_new(&p, NULL) < 0 || aisb_policy_set(p, "project", project, NULL) < 0)
                abort();
        int r = aisb_review_diff(p, NULL, AISB_REVIEW_PATCH, ignore, NULL, NULL, &err);
        if (r < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        }
        r = aisb_review_apply(p, NULL, NULL, AISB_APPLY_FORCE, ignore, NULL, NULL, &err);
        if (r < 0) {
                FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        }
        made m = {};
        FUZZ_CHECK(tree_walk(pfd, 0, TREE_WALK_STAT, check_entry, &m) >= 0);
        if (m.bad)
                fprintf(stderr, "fuzz-layer: %s\n", m.why);
        FUZZ_CHECK(!m.bad);
        char *now = hash_tree(outside);
        FUZZ_CHECK(strcmp(now, outside_hash) == 0);
        free(now);
        aisb_policy_free(p);
        close(pfd);
        close(topfd);
        return 0;
}
