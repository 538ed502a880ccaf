/* SPDX-License-Identifier: MIT */
#include "review.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/file.h>
#include <time.h>

#include "digest.h"
#include "fileio.h"
#include "policy.h"
#include "project.h"
#include "tree-walk.h"
#include "userdirs.h"
#include "userns.h"

#define INFO_MAX (64 * 1024)

int project_state_dir(const char *sub, const char *project, bool create, char **ret, aisb_error **err)
{
        char base[33];
        project_short_name(project, base, sizeof base);
        _cleanup_free_ char *hash = NULL, *top = NULL, *dir = NULL;
        if (sha256_hex(project, strlen(project), 12, &hash) < 0)
                return error_oom(err);
        if (create) {
                int r = state_dir(sub, &top, err);
                if (r < 0)
                        return r;
        } else if (!(top = state_path(sub)))
                return aisb_error_set(err, -ENOENT, "neither XDG_STATE_HOME nor HOME is set");
        if (asprintf(&dir, "%s/%s-%s", top, base, hash) < 0)
                return error_oom(err);
        if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
                return aisb_error_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
        *ret = steal_pointer(&dir);
        return 0;
}

/* ---- a run's info ---- */

void run_info_done(run_info *i)
{
        free(i->project);
        free(i->run);
        free(i->protect);
        *i = (run_info) {};
}

static int info_pair(buffer *out, const char *key, const char *value)
{
        int r = buffer_printf(out, "%s=", key);
        r = r < 0 ? r : manifest_escape(value ? value : "", out);
        return r < 0 ? r : buffer_append(out, "\n", 1);
}

int run_info_format(const run_info *i, buffer *out)
{
        int r = info_pair(out, "project", i->project);
        r = r < 0 ? r : info_pair(out, "run", i->run);
        r = r < 0 ? r : info_pair(out, "protect", i->protect);
        r = r < 0 ? r : buffer_printf(out, "started=%lld\nended=%lld\npid=%ld\n", i->started_ns, i->ended_ns, i->pid);
        r = r < 0 ? r : buffer_printf(out, "dev=%llu\nino=%llu\n", i->dev, i->ino);
        return r;
}

int run_info_check_project(const run_info *i, int project_fd, aisb_error **err)
{
        struct stat st;
        if (fstat(project_fd, &st) < 0)
                return aisb_error_set(err, -errno, "%s: %s", i->project, strerror(errno));
        if ((i->dev || i->ino) && ((unsigned long long) st.st_dev != i->dev || (unsigned long long) st.st_ino != i->ino))
                return aisb_error_set(err, -ESTALE, "%s is not the directory %s began in (it was replaced or moved "
                                                    "since): nothing was done", i->project, i->run);
        return 0;
}

static int unescape(const char *s, size_t len, char **ret)
{
        _cleanup_free_ char *out = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == '%') {
                        if (i + 2 >= len)
                                return -EBADMSG;
                        char hex[3] = { s[i + 1], s[i + 2], 0 };
                        char *end;
                        unsigned long v = strtoul(hex, &end, 16);
                        if (*end || v == 0 || v > 255)
                                return -EBADMSG;
                        c = (char) v;
                        i += 2;
                }
                out[n++] = c;
        }
        out[n] = 0;
        *ret = steal_pointer(&out);
        return 0;
}

static int parse_ull(const char *s, size_t len, unsigned long long *ret)
{
        char buf[32];
        if (len == 0 || len >= sizeof buf || s[0] < '0' || s[0] > '9')
                return -EBADMSG;
        memcpy(buf, s, len);
        buf[len] = 0;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (*end || errno)
                return -EBADMSG;
        *ret = v;
        return 0;
}

static int parse_ll(const char *s, size_t len, long long *ret)
{
        unsigned long long v;
        int r = parse_ull(s, len, &v);
        if (r < 0 || v > LLONG_MAX)
                return -EBADMSG;
        *ret = (long long) v;
        return 0;
}

int run_info_parse(const char *text, size_t size, run_info *ret)
{
        run_info i = {};
        int r = size > INFO_MAX ? -EBADMSG : 0;
        for (const char *p = text, *end = text + size; r >= 0 && p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                if (!nl) {
                        r = -EBADMSG;
                        break;
                }
                const char *eq = memchr(p, '=', (size_t) (nl - p));
                if (!eq) {
                        r = -EBADMSG;
                        break;
                }
                size_t klen = (size_t) (eq - p), vlen = (size_t) (nl - eq - 1);
                const char *v = eq + 1;
                long long n = 0;
#define KEY(k) (klen == strlen(k) && memcmp(p, k, klen) == 0)
                if (KEY("project") && !i.project)
                        r = unescape(v, vlen, &i.project);
                else if (KEY("run") && !i.run)
                        r = unescape(v, vlen, &i.run);
                else if (KEY("protect") && !i.protect)
                        r = unescape(v, vlen, &i.protect);
                else if (KEY("started"))
                        r = parse_ll(v, vlen, &i.started_ns);
                else if (KEY("ended"))
                        r = parse_ll(v, vlen, &i.ended_ns);
                else if (KEY("dev"))
                        r = parse_ull(v, vlen, &i.dev);
                else if (KEY("ino"))
                        r = parse_ull(v, vlen, &i.ino);
                else if (KEY("pid")) {
                        r = parse_ll(v, vlen, &n);
                        i.pid = (long) n;
                }
#undef KEY
                p = nl + 1;
        }
        if (r >= 0 && (!i.project || !i.run || i.project[0] != '/'))
                r = -EBADMSG;
        if (r < 0) {
                run_info_done(&i);
                return r;
        }
        *ret = i;
        return 0;
}

/* ---- a review run's layer ---- */

static long long now_coarse_ns(void)
{
        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* When the run begins, on the clock file times come from (the kernel's coarse one, a tick of a
 * few milliseconds): the first tick later than the precise time now, waited for, so that what
 * changed before has a ctime earlier than it and what changes from now on has one at least it.
 * Later than the precise time, not merely the next tick: a kernel with multigrain timestamps
 * (6.13 on) gives a file a precise ctime when its last one was looked at, which the next tick
 * can fall short of. */
long long run_start_time(void)
{
        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        long long precise = (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec, now;
        while ((now = now_coarse_ns()) <= precise)
                (void) nanosleep(&(struct timespec) { .tv_nsec = 500000 }, NULL);
        return now;
}

/* The start record: each name below the project and its inode, or 'u' for a directory that
 * could not be read. */
static int start_entry(const tree_entry *e, void *m)
{
        char type = e->type == DT_REG ? MANIFEST_FILE : e->type == DT_DIR ? MANIFEST_DIR
                  : e->type == DT_LNK ? MANIFEST_LINK : MANIFEST_OTHER;
        if (e->type == DT_DIR && e->self < 0)
                type = MANIFEST_UNREAD;
        manifest_entry me = { .path = (char *) e->path, .type = type, .ino = e->ino };
        return manifest_add(m, &me);
}

void review_layer_done(review_layer *l)
{
        free(l->run);
        free(l->dir);
        free(l->upper);
        free(l->work);
        free(l->anchor);
        closep(&l->dir_fd);
        closep(&l->lock_fd);
        *l = REVIEW_LAYER_NULL;
}

int review_layer_create(const char *project, int project_fd, const char *run, const char *protect,
                        review_layer *ret, aisb_error **err)
{
        _cleanup_free_ char *top = NULL;
        int r = project_state_dir("layers", project, true, &top, err);
        if (r < 0)
                return r;
        review_layer l = REVIEW_LAYER_NULL;
        if (!(l.run = strdup(run)) || asprintf(&l.dir, "%s/%s", top, run) < 0 ||
            asprintf(&l.upper, "%s/upper", l.dir) < 0 || asprintf(&l.work, "%s/work", l.dir) < 0) {
                review_layer_done(&l);
                return error_oom(err);
        }
        if (mkdir(l.dir, 0700) < 0) {
                r = aisb_error_set(err, -errno, "cannot create the review layer %s: %s", l.dir, strerror(errno));
                review_layer_done(&l);
                return r;
        }
        l.dir_fd = open(l.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat pst;
        r = l.dir_fd < 0 ? -errno : 0;
        /* The overlay's root is the upper directory's: /project keeps the project's mode. */
        if (r >= 0 && (fstat(project_fd, &pst) < 0 || mkdirat(l.dir_fd, "upper", 0700) < 0 ||
                       mkdirat(l.dir_fd, "work", 0700) < 0))
                r = -errno;
        if (r >= 0) {
                _cleanup_close_ int u = openat(l.dir_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (u < 0 || fchmod(u, pst.st_mode & 0777) < 0)
                        r = -errno;
        }
        if (r >= 0) {
                l.lock_fd = openat(l.dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (l.lock_fd < 0 || flock(l.lock_fd, LOCK_EX | LOCK_NB) < 0)
                        r = -errno;
        }
        /* When it began, then what the project held: what changes after this is the user's. */
        run_info info = { .project = (char *) project, .run = (char *) run, .protect = (char *) protect,
                          .started_ns = run_start_time(), .pid = (long) getpid(),
                          .dev = r >= 0 ? (unsigned long long) pst.st_dev : 0,
                          .ino = r >= 0 ? (unsigned long long) pst.st_ino : 0 };
        _cleanup_(manifest_done) manifest names = {};
        _cleanup_(buffer_free) buffer text = {};
        if (r >= 0)
                r = manifest_walk(project_fd, 0, start_entry, &names);
        /* The file the entrypoint checks the mount by: at the project's top (no directory on
         * the way that could be a link), of one link (a hard link of it elsewhere would count
         * two), the first in the walk's order. */
        for (size_t i = 0; r >= 0 && !l.anchor && i < names.n; i++) {
                const manifest_entry *e = &names.entries[i];
                struct stat st;
                if (e->type != MANIFEST_FILE || strchr(e->path, '/') ||
                    fstatat(project_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
                    st.st_nlink != 1)
                        continue;
                if (asprintf(&l.anchor, AISB_PROJECT_DIR "/%s", e->path) < 0) {
                        l.anchor = NULL;
                        r = -ENOMEM;
                        break;
                }
                l.anchor_ino = (unsigned long long) st.st_ino;
                l.anchor_ctime_ns = (long long) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        }
        if (r >= 0 && !l.anchor) {
                aisb_error_set(err, -EINVAL, "--review needs a file at the project's top (not a link, not hard-linked "
                                             "elsewhere): the sandbox is checked to have this very project by it (add "
                                             "a README, say)");
                (void) tree_remove(AT_FDCWD, l.dir);
                review_layer_done(&l);
                return -EINVAL;
        }
        if (r >= 0)
                r = manifest_format(&names, &text);
        if (r >= 0)
                r = write_file_at(l.dir_fd, "start", text.data, text.size);
        if (r >= 0)
                r = run_dir_write_info(l.dir_fd, &info);
        if (r < 0) {
                if (r == -E2BIG || r == -ELOOP || r == -ENAMETOOLONG)
                        aisb_error_set(err, r, "the project is larger than aisb records for --review (%d entries, "
                                               "%d deep, paths of %d bytes)", TREE_DEFAULT_MAX_ENTRIES, TREE_MAX_DEPTH,
                                       TREE_PATH_MAX);
                else
                        aisb_error_set(err, r, "preparing the review layer %s: %s", l.dir, strerror(-r));
                (void) tree_remove(AT_FDCWD, l.dir);
                review_layer_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int review_layer_end(review_layer *l, int project_fd, aisb_error **err)
{
        if (l->dir_fd < 0)
                return 0;
        int r = run_dir_mark_ended(l->dir_fd);
        if (r < 0)
                return aisb_error_set(err, r, "the review layer %s: %s", l->dir, strerror(-r));
        closep(&l->lock_fd);
        /* What the run changed, counted as aisb diff will list it. */
        _cleanup_close_ int upper = openat(l->dir_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (upper < 0)
                return aisb_error_set(err, -errno, "the review layer %s: %s", l->dir, strerror(errno));
        _cleanup_(layer_done) layer scanned = {};
        _cleanup_(change_set_done) change_set set = {};
        r = review_changes(upper, project_fd, &scanned, &set, err);
        if (r < 0)
                return r;
        l->changes = set.n;
        return 0;
}

int review_changes(int upper, int project_fd, layer *ret_layer, change_set *ret, aisb_error **err)
{
        int r = layer_scan(upper, (unsigned) getuid(), ret_layer, err);
        if (r >= 0)
                r = layer_changes(ret_layer, upper, project_fd, ret, err);
        if (r < 0)
                return r;
        /* The run's copy of the project's settings is bound read-only at .ai-sandbox: what the
         * layer has there is the mount point podman made for it, never the agent's. */
        size_t kept = 0;
        for (size_t i = 0; i < ret->n; i++) {
                change *c = &ret->changes[i];
                const char *p = c->path;
                if (startswith(p, PROJECT_SETTINGS_DIR) && (p[strlen(PROJECT_SETTINGS_DIR)] == 0 ||
                                                            p[strlen(PROJECT_SETTINGS_DIR)] == '/')) {
                        free(c->path);
                        free(c->target);
                        continue;
                }
                ret->changes[kept++] = *c;
        }
        ret->n = kept;
        return 0;
}

/* ---- the runs a project has: review layers, undo records ---- */

int run_dir_info(int dir_fd, run_info *ret)
{
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_file_at(dir_fd, "info", INFO_MAX, &text, &size);
        return r < 0 ? r : run_info_parse(text, size, ret);
}

int run_dir_write_info(int dir_fd, const run_info *info)
{
        _cleanup_(buffer_free) buffer b = {};
        int r = run_info_format(info, &b);
        return r < 0 ? r : write_file_at(dir_fd, "info", b.data, b.size);
}

int run_dir_mark_ended(int dir_fd)
{
        _cleanup_(run_info_done) run_info info = {};
        int r = run_dir_info(dir_fd, &info);
        if (r < 0)
                return r;
        info.ended_ns = now_coarse_ns();
        return run_dir_write_info(dir_fd, &info);
}

bool run_dir_running(int dir_fd)
{
        _cleanup_close_ int fd = openat(dir_fd, "lock", O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return false;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK;
        (void) flock(fd, LOCK_UN);
        return false;
}

typedef struct runs_walk {
        runs_fn fn;
        void *userdata;
} runs_walk;

/* A run directory: its info names it by its own name, or it is no run's. */
static int run_entry(const tree_entry *e, void *userdata)
{
        runs_walk *w = userdata;
        run_info info = {};
        int r = 0;
        if (e->name[0] != '.' && e->self >= 0 && run_dir_info(e->self, &info) >= 0 && streq(info.run, e->name))
                r = w->fn(e->dir, e->self, &info, w->userdata);
        run_info_done(&info);
        return r < 0 ? r : TREE_SKIP;
}

int runs_each(const char *top, runs_fn fn, void *userdata)
{
        _cleanup_close_ int fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        runs_walk w = { .fn = fn, .userdata = userdata };
        return tree_walk(fd, 0, 0, run_entry, &w);
}

typedef struct finding {
        const char *project, *run, *skip;
        char *found;
        long long started;
} finding;

/* RUN names a run by its name or by the last characters after its last '-'. */
static bool names_run(const char *wanted, const char *run)
{
        if (streq(wanted, run))
                return true;
        const char *dash = strrchr(run, '-');
        return dash && streq(dash + 1, wanted);
}

static int find_one(int top, int dir, const run_info *info, void *userdata)
{
        finding *f = userdata;
        if (!streq(info->project, f->project))
                return 0;
        if (f->run) {
                if (!names_run(f->run, info->run))
                        return 0;
                if (f->found)
                        return -ENOTUNIQ;
        } else if ((f->found && info->started_ns <= f->started) ||
                   (f->skip && faccessat(dir, f->skip, F_OK, AT_SYMLINK_NOFOLLOW) == 0))
                return 0;
        free(f->found);
        if (!(f->found = strdup(info->run)))
                return -ENOMEM;
        f->started = info->started_ns;
        return 0;
}

int runs_find(const char *top, const char *project, const char *run, const char *skip, const char *what,
              char **ret_run, aisb_error **err)
{
        finding f = { .project = project, .run = run, .skip = skip };
        int r = runs_each(top, find_one, &f);
        if (r == -ENOTUNIQ) {
                free(f.found);
                return aisb_error_set(err, -EINVAL, "%s names more than one %s of this project: give its whole name "
                                                    "(aisb ps lists them)", run, what);
        }
        if (r < 0) {
                free(f.found);
                return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "reading %s: %s", top, strerror(-r));
        }
        if (!f.found)
                return run ? aisb_error_set(err, -ENOENT, "no %s %s of this project (aisb ps lists them)", what, run)
                           : aisb_error_set(err, -ENOENT, "no %s of this project", what);
        *ret_run = f.found;
        return 0;
}

static int usage_entry(const tree_entry *e, void *userdata)
{
        *(unsigned long long *) userdata += (unsigned long long) e->st->st_blocks * 512;
        return 0;
}

unsigned long long dir_disk_usage(int dir)
{
        unsigned long long total = 0;
        struct stat st;
        if (fstat(dir, &st) == 0)
                total += (unsigned long long) st.st_blocks * 512;
        (void) tree_walk(dir, 0, TREE_WALK_STAT, usage_entry, &total);
        return total;
}

int runs_remove(aisb_ctx *ctx, const char *top, const char *run, aisb_error **err)
{
        _cleanup_close_ int fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return aisb_error_set(err, -errno, "%s: %s", top, strerror(errno));
        {
                _cleanup_close_ int dir = openat(fd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dir < 0)
                        return aisb_error_set(err, -errno, "%s/%s: %s", top, run, strerror(errno));
                if (run_dir_running(dir))
                        return aisb_error_set(err, -EBUSY, "%s is still running: stop it first", run);
        }
        /* Out of the list first: what cannot go at once is no longer a run. */
        char aside[NAME_MAX + 1];
        if (snprintf(aside, sizeof aside, ".removing-%s", run) >= (int) sizeof aside)
                return aisb_error_set(err, -ENAMETOOLONG, "%s: name too long", run);
        if (renameat(fd, run, fd, aside) < 0)
                return aisb_error_set(err, -errno, "%s/%s: %s", top, run, strerror(errno));
        return runs_remove_aside(ctx, fd, aside, err);
}

int runs_remove_aside(aisb_ctx *ctx, int top_fd, const char *name, aisb_error **err)
{
        if (tree_remove(top_fd, name) == 0)
                return 0;
        /* What the overlay made as the namespace's root: removed as that root. */
        int userns = userns_podman_open();
        if (userns == -ESRCH && ctx) {
                /* No rootless podman runs: the service starts one. */
                aisb_error *e = NULL;
                if (aisb_ctx_connect(ctx, &e) >= 0)
                        userns = userns_podman_open();
                aisb_error_free(e);
        }
        if (userns < 0)
                return aisb_error_set(err, userns, "%s could not be removed whole: what the sandbox's overlay left is "
                                                   "owned by your subordinate ids, and no rootless podman of yours runs "
                                                   "to remove it as (run a podman command, then try again)", name);
        int r = userns_remove(userns, top_fd, name);
        close(userns);
        if (r < 0)
                return aisb_error_set(err, r, "%s could not be removed whole: %s (podman unshare rm -rf removes it)",
                                      name, strerror(-r));
        return 0;
}
