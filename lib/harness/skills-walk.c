/* SPDX-License-Identifier: MIT */
/* The agents directory read for the linter without trusting it, and the cache of the
 * result for runs and doctor (skills-walk.h says how). */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "skills-walk.h"
#include "userdirs.h"
#include "fileio.h"
#include "digest.h"
#include "tree-walk.h"

/* ---- the walk ---- */

typedef struct walk_state {
        skills_walk *w;
        unsigned long entries;
        int stop; /* a finding function's nonzero return, which ends the walk */
} walk_state;

/* What ends the walk from inside it, told apart from the walk's own errors: past
 * SKILLS_WALK_MAX_ENTRIES, or stop set. */
#define WALK_ENDED (-ECHRNG)

void skills_walk_done(skills_walk *w)
{
        strv_free(w->repos);
        w->repos = NULL;
}

static void note(skills_walk *w, const char *path, const char *why)
{
        w->skipped++;
        if (w->note_fn)
                w->note_fn(path[0] ? path : ".", why, w->userdata);
}

/* Whether a link's target leaves the tree: absolute, or more ".." than the link is deep. */
static bool link_leaves_tree(const char *dir_path, const char *target)
{
        if (target[0] == '/')
                return true;
        long level = 0;
        for (const char *p = dir_path; *p; p++)
                level += (p == dir_path || p[-1] == '/') && *p != '/';
        for (const char *c = target; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 2 && c[0] == '.' && c[1] == '.')
                        level--;
                else if (n > 0 && !(n == 1 && c[0] == '.'))
                        level++;
                if (level < 0)
                        return true;
                c += n;
                while (*c == '/')
                        c++;
        }
        return false;
}

static int add_entry_to_digest(skills_walk *w, const char *path, const struct stat *st)
{
        if (!w->digest)
                return 0;
        char meta[128];
        int n = snprintf(meta, sizeof meta, "%o %lld %lld.%09ld", (unsigned) (st->st_mode & S_IFMT),
                         (long long) st->st_size, (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
        int r = digest_update(w->digest, path, strlen(path) + 1);
        return r < 0 ? r : digest_update(w->digest, meta, (size_t) n + 1);
}

typedef struct file_scan {
        skills_walk *w;
        const char *path;
} file_scan;

static int file_finding(const skills_finding *f, void *userdata)
{
        file_scan *fs = userdata;
        skills_finding with_path = *f;
        with_path.path = fs->path;
        fs->w->findings++;
        return fs->w->finding_fn ? fs->w->finding_fn(&with_path, fs->w->userdata) : 0;
}

/* One regular file: opened again without following a link or waiting on a FIFO swapped in
 * since the walk saw it, bounded, skipped when binary. quiet: inside .git, where binary
 * files are the rule and say nothing. */
static int scan_file(skills_walk *w, int dir_fd, const char *name, const char *path,
                     const struct stat *seen, bool quiet)
{
        if (seen->st_size > SKILLS_FILE_MAX) {
                if (!quiet)
                        note(w, path, "larger than 1 MiB: not scanned");
                return 0;
        }
        if (w->read_max && w->read + (unsigned long long) seen->st_size > w->read_max) {
                if (!w->read_out) {
                        char why[128];
                        snprintf(why, sizeof why, "%llu MiB read: this file and the rest are not scanned",
                                 w->read_max / (1024 * 1024));
                        note(w, path, why);
                } else
                        w->skipped++;
                w->read_out = true;
                return 0;
        }
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                char why[128];
                snprintf(why, sizeof why, "cannot be read (%s): not scanned", strerror(errno));
                note(w, path, why);
                return 0;
        }
        if (!S_ISREG(st.st_mode)) {
                note(w, path, "not a regular file any more: not scanned");
                return 0;
        }
        char *text = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, SKILLS_FILE_MAX, &text, &size);
        if (r < 0) {
                if (!quiet || r != -EFBIG)
                        note(w, path, r == -EFBIG ? "larger than 1 MiB: not scanned" : "cannot be read: not scanned");
                return 0;
        }
        w->read += size;
        if (memchr(text, 0, size < SKILLS_BINARY_PROBE ? size : SKILLS_BINARY_PROBE)) {
                if (!quiet) /* inside .git, binary is the rule: not worth a word */
                        note(w, path, "binary: not scanned");
        } else {
                w->files++;
                file_scan fs = { .w = w, .path = path };
                r = skills_scan(text, size, path, 1, file_finding, &fs);
        }
        /* What it held may be a secret. */
        explicit_bzero(text, size);
        free(text);
        return r;
}

/* Below a .git directory: an ancestor of path is one. */
static bool inside_git(const char *path)
{
        return startswith(path, ".git/") || strstr(path, "/.git/");
}

/* A directory the walk met: entered (0), or passed over with a note (TREE_SKIP). */
static int walk_into(skills_walk *w, const tree_entry *e, bool in_git)
{
        /* Objects are the history's, read by git in a sandbox. */
        if (in_git && (streq(e->name, "objects") || streq(e->name, "lfs")))
                return TREE_SKIP;
        if (e->depth > SKILLS_WALK_MAX_DEPTH) {
                if (w->read_files)
                        note(w, e->path, "deeper than 16 levels: not scanned");
                return TREE_SKIP;
        }
        if (e->self >= 0)
                return 0;
        /* One that opens but cannot be searched lists names none of which can be looked at. */
        _cleanup_close_ int fd = openat(e->dir, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0)
                note(w, e->path, "cannot be listed: not scanned");
        else if (w->read_files)
                note(w, e->path, "cannot be opened: not scanned");
        return TREE_SKIP;
}

static int walk_entry(const tree_entry *e, void *userdata)
{
        walk_state *s = userdata;
        skills_walk *w = s->w;
        if (w->stop_fn && w->stop_fn(w->stop_userdata))
                return -ECANCELED;
        if (++s->entries > SKILLS_WALK_MAX_ENTRIES) {
                if (!w->stopped)
                        note(w, "", "more than 20000 entries: the walk stopped there, the rest is not scanned");
                w->stopped = true;
                return WALK_ENDED;
        }
        if (e->open_error == -ENAMETOOLONG) {
                note(w, e->path, "holds a name too long: not scanned");
                return 0;
        }
        const struct stat *st = e->st;
        char dir[PATH_MAX]; /* e's directory: "" at the root */
        const char *slash = strrchr(e->path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int) (slash - e->path) : 0, e->path);
        int r = add_entry_to_digest(w, e->path, st);
        if (r >= 0 && streq(e->name, ".git") && (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode)))
                r = strv_push(&w->repos, dir[0] ? dir : ".");
        if (r < 0)
                return r;
        bool in_git = inside_git(e->path);
        if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t m = readlinkat(e->dir, e->name, target, sizeof target - 1);
                target[m > 0 ? m : 0] = 0;
                if ((m <= 0 || link_leaves_tree(dir, target)) && w->read_files)
                        note(w, e->path, "a symbolic link out of the directory: not followed");
        } else if (S_ISDIR(st->st_mode))
                return walk_into(w, e, in_git);
        else if (S_ISREG(st->st_mode))
                r = w->read_files ? scan_file(w, e->dir, e->name, e->path, st, in_git) : 0;
        else if (w->read_files && !in_git)
                note(w, e->path, "not a regular file: not scanned");
        if (r > 0)
                s->stop = r;
        return r > 0 ? WALK_ENDED : r;
}

int skills_walk_run(int root_fd, skills_walk *w)
{
        /* Sorted: the same directory gives the same digest, and output in a stable order. */
        static const tree_walk_options o = {
                .flags = TREE_WALK_STAT | TREE_WALK_SKIP_DEEP, .max_dir_entries = SKILLS_WALK_MAX_ENTRIES,
        };
        _cleanup_close_ int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                note(w, "", "cannot be listed: not scanned");
                return 0;
        }
        walk_state s = { .w = w };
        int r = tree_walk_with(fd, &o, walk_entry, &s);
        return r == WALK_ENDED ? s.stop : r;
}

/* ---- the cache of the files' result, for runs and doctor ---- */

static int cache_path(const char *dir, char **ret, aisb_error **err)
{
        _cleanup_free_ char *base = NULL, *hash = NULL;
        int r = state_dir("skills", &base, err);
        if (r < 0)
                return r;
        if (sha256_hex(dir, strlen(dir), 16, &hash) < 0 || asprintf(ret, "%s/%s", base, hash) < 0)
                return error_oom(err);
        return 0;
}

/* The cached digest and count, when the file is there and well formed. */
static bool cache_read(const char *path, char digest_hex[65], unsigned long *ret_findings)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return false;
        _cleanup_free_ char *text = NULL;
        if (read_full_fd(fd, 4096, &text, NULL) < 0)
                return false;
        bool have_digest = false, have_findings = false;
        char *save = NULL;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                unsigned long long v;
                if (startswith(l, "digest ") && strlen(l + 7) == 64) {
                        memcpy(digest_hex, l + 7, 65);
                        have_digest = true;
                } else if (startswith(l, "findings ") && parse_uint(l + 9, ULONG_MAX, &v) >= 0) {
                        *ret_findings = (unsigned long) v;
                        have_findings = true;
                }
        }
        return have_digest && have_findings;
}

static void cache_write(const char *path, const char *dir, const char *digest_hex, unsigned long findings)
{
        _cleanup_free_ char *tmp = NULL, *text = NULL;
        if (asprintf(&tmp, "%s.%ld.tmp", path, (long) getpid()) < 0 ||
            asprintf(&text, "dir %s\ndigest %s\nfindings %lu\n", dir, digest_hex, findings) < 0)
                return;
        (void) unlink(tmp);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        if (write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
                (void) unlink(tmp);
}

/* The walk's digest: names, types, sizes and mtimes, and the rules and bounds they were
 * read by. A failure says dir could not be read, or was stopped while doing. */
static int walk_digest(int root_fd, skills_walk *w, const char *dir, const char *doing, char **ret_hex,
                       aisb_error **err)
{
        _cleanup_(digest_freep) digest *d = NULL;
        static const char rules[] = "aisb-skills rules " SKILLS_SCAN_RULES_VERSION;
        int r = digest_new(&d);
        r = r < 0 ? r : digest_update(d, rules, sizeof rules);
        if (r >= 0) {
                w->digest = d;
                r = skills_walk_run(root_fd, w);
                w->digest = NULL;
        }
        r = r < 0 ? r : digest_end_hex(d, 64, ret_hex);
        if (r == -ECANCELED)
                return aisb_error_set(err, r, "stopped while %s %s", doing, dir);
        return r < 0 ? aisb_error_set(err, r, "cannot read %s: %s", dir, strerror(-r)) : 0;
}

int skills_check_stoppable(const char *dir, ctx_stop_fn stop_fn, void *stop_userdata,
                           unsigned long *ret_findings, bool *ret_changed, aisb_error **err)
{
        _cleanup_close_ int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", dir, strerror(errno));
        _cleanup_free_ char *path = NULL, *now = NULL, *scanned = NULL;
        int r = cache_path(dir, &path, err);
        if (r < 0)
                return r;
        skills_walk listing = { .stop_fn = stop_fn, .stop_userdata = stop_userdata };
        r = walk_digest(root, &listing, dir, "reading", &now, err);
        skills_walk_done(&listing);
        if (r < 0)
                return r;
        char cached[65];
        unsigned long findings = 0;
        if (cache_read(path, cached, &findings) && streq(cached, now)) {
                *ret_findings = findings;
                *ret_changed = false;
                return 0;
        }
        /* Changed: scan, and cache what this scan saw (its own digest). */
        skills_walk scan = { .read_files = true, .read_max = SKILLS_READ_MAX_RUN, .stop_fn = stop_fn,
                             .stop_userdata = stop_userdata };
        r = walk_digest(root, &scan, dir, "scanning", &scanned, err);
        findings = scan.findings;
        skills_walk_done(&scan);
        /* A stopped scan saw part of the directory: its count is no result to keep. */
        if (r < 0)
                return r;
        cache_write(path, dir, scanned, findings);
        *ret_findings = findings;
        *ret_changed = true;
        return 0;
}

int skills_check_cached(const char *dir, unsigned long *ret_findings, bool *ret_changed,
                        aisb_error **err)
{
        return skills_check_stoppable(dir, NULL, NULL, ret_findings, ret_changed, err);
}

static bool run_stopping(void *userdata)
{
        return ctx_stopping(userdata);
}

void skills_warn_if_changed(aisb_ctx *ctx, const char *dir)
{
        if (!dir)
                return;
        unsigned long findings = 0;
        bool changed = false;
        aisb_error *e = NULL;
        if (skills_check_stoppable(dir, run_stopping, ctx, &findings, &changed, &e) < 0) {
                aisb_log(ctx, AISB_LOG_DEBUG, "skills: %s", aisb_error_message(e));
                aisb_error_free(e);
                return;
        }
        if (changed && findings > 0)
                aisb_log(ctx, AISB_LOG_WARNING,
                         "%s, mounted read-only in every sandbox, holds %lu possible credential%s in its files: "
                         "run \"aisb skill-lint\" to see them (--no-agents mounts none)",
                         dir, findings, findings == 1 ? "" : "s");
}
