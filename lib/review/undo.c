/* SPDX-License-Identifier: MIT */
#include "undo.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <time.h>

#include "digest.h"
#include "fileio.h"
#include "policy.h"
#include "project.h"
#include "review.h"
#include "tree-walk.h"
#include "tree-write.h"

#define OPEN_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
#define RECORD_MAX (1ULL << 31)

void undo_record_done(undo_record *rec)
{
        free(rec->top);
        free(rec->run);
        closep(&rec->dir_fd);
        closep(&rec->lock_fd);
        manifest_done(&rec->before);
        *rec = UNDO_RECORD_NULL;
}

static int read_manifest_at(int dir, const char *name, manifest *ret)
{
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_file_at(dir, name, RECORD_MAX, &text, &size);
        return r < 0 ? r : manifest_parse(text, size, ret, NULL);
}

/* ---- the index: what the newest record knew of each file, by device and inode ---- */

typedef struct index {
        manifest m;
        const manifest_entry **by_inode;
        size_t n;
} index_t;

static void index_done(index_t *x)
{
        manifest_done(&x->m);
        free(x->by_inode);
        *x = (index_t) {};
}

static int inode_cmp(const void *a, const void *b)
{
        const manifest_entry *x = *(const manifest_entry *const *) a, *y = *(const manifest_entry *const *) b;
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

typedef struct newest {
        long long started;
        char *run;
} newest;

static int newest_one(int top, int dir, const run_info *info, void *userdata)
{
        newest *n = userdata;
        if (info->started_ns <= n->started || faccessat(dir, "before", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        free(n->run);
        n->run = strdup(info->run);
        n->started = info->started_ns;
        return n->run ? 0 : -ENOMEM;
}

static void index_load(const char *runs, int runs_fd, index_t *x)
{
        newest n = {};
        if (runs_each(runs, newest_one, &n) < 0 || !n.run) {
                free(n.run);
                return;
        }
        _cleanup_close_ int dir = openat(runs_fd, n.run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        free(n.run);
        if (dir < 0 || read_manifest_at(dir, "before", &x->m) < 0)
                return;
        if (!(x->by_inode = calloc(x->m.n ? x->m.n : 1, sizeof *x->by_inode)))
                return;
        for (size_t i = 0; i < x->m.n; i++)
                if (x->m.entries[i].type == MANIFEST_FILE && x->m.entries[i].hash[0])
                        x->by_inode[x->n++] = &x->m.entries[i];
        if (x->n > 1)
                qsort(x->by_inode, x->n, sizeof *x->by_inode, inode_cmp);
}

static const manifest_entry *index_find(const index_t *x, const manifest_entry *e)
{
        if (!x->n)
                return NULL;
        const manifest_entry *key = e;
        const manifest_entry **found = bsearch(&key, x->by_inode, x->n, sizeof *x->by_inode, inode_cmp);
        return found && manifest_same(*found, e) ? *found : NULL;
}

/* What a walk met, as a record's entry (a link's target read into target); false for an entry
 * gone meanwhile. */
static bool entry_of(const tree_entry *te, manifest_entry *e, char *target, size_t size)
{
        *e = manifest_entry_of(te->path, te->st);
        if (e->type == MANIFEST_DIR && te->self < 0)
                e->type = MANIFEST_UNREAD;
        else if (e->type == MANIFEST_LINK) {
                ssize_t n = readlinkat(te->dir, te->name, target, size - 1);
                if (n < 0)
                        return false;
                target[n] = 0;
                e->target = target;
        }
        return true;
}

/* ---- the record ---- */

typedef struct recording {
        uint64_t to_copy; /* bytes of the files no record holds yet */
        aisb_ctx *ctx;
        undo_record *rec;
        undo_when mode;
        index_t index;
        int objects;
        const char *why; /* what stopped an auto record */
} recording;

static int object_path(const char *hash, char *buf, size_t size)
{
        return snprintf(buf, size, "%.2s/%s", hash, hash) < (int) size ? 0 : -ENAMETOOLONG;
}

static bool object_exists(int objects, const char *hash)
{
        char path[MANIFEST_HASH_HEX + 8];
        return object_path(hash, path, sizeof path) == 0 && faccessat(objects, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A copy of the file into the store; its hash in e. A file that changed while it was
 * copied is recorded without content (undo says so). */
static int store_file(recording *s, int dir, const char *name, manifest_entry *e)
{
        _cleanup_close_ int src = openat(dir, name, OPEN_FILE_FLAGS);
        struct stat st;
        if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_ino != e->ino)
                return 0;
        /* An empty file: one object for all of them, made once. */
        static const char empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        if (st.st_size == 0 && object_exists(s->objects, empty)) {
                memcpy(e->hash, empty, sizeof empty);
                return 0;
        }
        /* Not the file the walk saw: changed since, recorded without content. */
        manifest_entry now = manifest_entry_of(e->path, &st);
        if (!manifest_same(&now, e))
                return 0;
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int out = tree_temp_file(s->objects, tmp, sizeof tmp);
        if (out < 0)
                return out;
        _cleanup_(digest_freep) digest *d = NULL;
        int r = digest_new(&d);
        if (r >= 0)
                r = tree_copy_data(src, out, (uint64_t) st.st_size, d);
        struct stat after;
        _cleanup_free_ char *hex = NULL;
        if (r >= 0 && fstat(src, &after) == 0 && after.st_size == st.st_size &&
            after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec &&
            after.st_ctim.tv_sec == st.st_ctim.tv_sec && after.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
                r = digest_end_hex(d, MANIFEST_HASH_HEX, &hex);
        else if (r == -ENODATA)
                r = 0;
        if (r >= 0 && hex) {
                char dirname[3] = { hex[0], hex[1], 0 }, path[MANIFEST_HASH_HEX + 8];
                (void) mkdirat(s->objects, dirname, 0700);
                r = object_path(hex, path, sizeof path);
                if (r >= 0 && fchmod(out, 0400) < 0)
                        r = -errno;
                if (r >= 0 && renameat(s->objects, tmp, s->objects, path) < 0)
                        r = -errno;
                if (r >= 0) {
                        memcpy(e->hash, hex, MANIFEST_HASH_HEX + 1);
                        s->rec->bytes_copied += (uint64_t) st.st_size;
                        *tmp = 0;
                }
        }
        if (*tmp)
                (void) unlinkat(s->objects, tmp, 0);
        return r;
}

/* The walk: each entry as stat says, a file's hash where a recent record knew it; what is to
 * be copied is counted, and copied only once the whole walk says the record is to be made. */
static int record_entry(const tree_entry *te, void *userdata)
{
        recording *s = userdata;
        /* A large record (undo = on) still stops when told to. */
        if ((s->rec->entries & 255) == 0 && s->ctx && ctx_stopping(s->ctx))
                return -ECANCELED;
        if (++s->rec->entries > UNDO_AUTO_MAX_ENTRIES && s->mode == UNDO_AUTO) {
                s->why = "it holds more than " UNDO_AUTO_MAX_ENTRIES_TEXT " files and directories";
                return -E2BIG;
        }
        char target[PATH_MAX];
        manifest_entry e;
        if (!entry_of(te, &e, target, sizeof target))
                return 0;
        if (e.type == MANIFEST_FILE) {
                const manifest_entry *known = index_find(&s->index, &e);
                if (known && object_exists(s->objects, known->hash))
                        memcpy(e.hash, known->hash, sizeof e.hash);
                else
                        s->to_copy += e.size;
        }
        return manifest_add(&s->rec->before, &e);
}

/* What the walk found no copy of, copied into the store (each reached again without a link,
 * and only if it is still the file the walk saw). */
static int copy_new(recording *s, int project_fd)
{
        for (size_t i = 0; i < s->rec->before.n; i++) {
                manifest_entry *e = &s->rec->before.entries[i];
                if (e->type != MANIFEST_FILE || e->hash[0])
                        continue;
                if ((i & 255) == 0 && s->ctx && ctx_stopping(s->ctx))
                        return -ECANCELED;
                const char *name;
                _cleanup_close_ int dir = tree_open_parent(project_fd, e->path, &name);
                if (dir < 0)
                        continue;
                int r = store_file(s, dir, name, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int undo_record_begin(aisb_ctx *ctx, const char *project, int project_fd, const char *run, undo_when mode,
                      undo_record *ret, const char **ret_why, aisb_error **err)
{
        *ret_why = NULL;
        if (mode == UNDO_NEVER) {
                *ret_why = "the key undo is off";
                return 0;
        }
        undo_record rec = UNDO_RECORD_NULL;
        int r = project_state_dir("undo", project, true, &rec.top, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *runs = NULL;
        if (asprintf(&runs, "%s/runs", rec.top) < 0 || !(rec.run = strdup(run))) {
                undo_record_done(&rec);
                return error_oom(err);
        }
        _cleanup_close_ int top = open(rec.top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int runs_fd = -1;
        recording s = { .ctx = ctx, .rec = &rec, .mode = mode, .objects = -1 };
        if (top >= 0) {
                (void) mkdirat(top, "runs", 0700);
                (void) mkdirat(top, "objects", 0700);
                runs_fd = openat(top, "runs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                s.objects = openat(top, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (runs_fd < 0 || s.objects < 0 || mkdirat(runs_fd, run, 0700) < 0 ||
            (rec.dir_fd = openat(runs_fd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
                r = aisb_error_set(err, -errno, "the undo record in %s: %s", rec.top, strerror(errno));
                closep(&s.objects);
                undo_record_done(&rec);
                return r;
        }
        rec.lock_fd = openat(rec.dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (rec.lock_fd >= 0)
                (void) flock(rec.lock_fd, LOCK_EX | LOCK_NB);
        index_load(runs, runs_fd, &s.index);
        struct stat pst;
        run_info info = { .project = (char *) project, .run = (char *) run, .started_ns = run_start_time(),
                          .pid = (long) getpid() };
        if (fstat(project_fd, &pst) == 0) {
                info.dev = (unsigned long long) pst.st_dev;
                info.ino = (unsigned long long) pst.st_ino;
        }
        /* Its info first: another run's prune of the store sees a record being written (no
         * `before` yet) and keeps every object, the ones this record copies or shares among
         * them. A record without info would be passed over, and what it copies removed. */
        r = run_dir_write_info(rec.dir_fd, &info);
        if (r >= 0)
                r = tree_walk(project_fd, 0, TREE_WALK_STAT, record_entry, &s);
        index_done(&s.index);
        /* Declined before anything is copied: a project auto does not record costs it a walk. */
        if (r >= 0 && mode == UNDO_AUTO && s.to_copy > UNDO_AUTO_MAX_BYTES) {
                s.why = "its files not yet recorded hold more than " UNDO_AUTO_MAX_BYTES_TEXT;
                r = -EFBIG;
        }
        if (r >= 0)
                r = copy_new(&s, project_fd);
        closep(&s.objects);
        if (r >= 0) {
                _cleanup_(buffer_free) buffer b = {};
                r = manifest_format(&rec.before, &b);
                if (r >= 0)
                        r = write_file_at(rec.dir_fd, "before", b.data, b.size);
        }
        if (r < 0) {
                /* Not recorded: the run goes on without a way back, said. */
                closep(&rec.dir_fd);
                (void) tree_remove(runs_fd, run);
                if (s.why) {
                        *ret_why = s.why;
                        undo_record_done(&rec);
                        return 0;
                }
                if (r == -E2BIG || r == -ELOOP || r == -ENAMETOOLONG) {
                        *ret_why = "it is larger or deeper than aisb walks";
                        undo_record_done(&rec);
                        return 0;
                }
                undo_record_done(&rec);
                if (r == -ECANCELED)
                        return aisb_error_set(err, r, "stopped while recording the project for undo");
                return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "recording the project for undo: %s", strerror(-r));
        }
        *ret = rec;
        return 1;
}

/* ---- after the run ---- */

static int stat_entry(const tree_entry *te, void *m)
{
        char target[PATH_MAX];
        manifest_entry e;
        return entry_of(te, &e, target, sizeof target) ? manifest_add(m, &e) : 0;
}

static int project_now(int project_fd, manifest *ret)
{
        return manifest_walk(project_fd, TREE_WALK_STAT, stat_entry, ret);
}

/* The same file at the same path in two records: a directory by type, mode and inode (its
 * times change with what is in it), anything else by everything stat says. */
static bool same_entry(const manifest_entry *a, const manifest_entry *b)
{
        if (a->type == MANIFEST_DIR || b->type == MANIFEST_DIR || a->type == MANIFEST_UNREAD)
                return a->type == b->type && a->mode == b->mode && a->ino == b->ino;
        return manifest_same(a, b) && (a->type != MANIFEST_LINK || (a->target && b->target && streq(a->target, b->target)));
}

/* What differs between two records of one tree, path by path: how many paths. */
static size_t undo_count_changes(const manifest *before, const manifest *after)
{
        size_t i = 0, j = 0, n = 0;
        while (i < before->n || j < after->n) {
                int c = i >= before->n ? 1 : j >= after->n ? -1
                      : tree_path_cmp(before->entries[i].path, after->entries[j].path);
                if (c == 0) {
                        n += !same_entry(&before->entries[i], &after->entries[j]);
                        i++, j++;
                } else {
                        n++;
                        if (c < 0)
                                i++;
                        else
                                j++;
                }
        }
        return n;
}

typedef struct runs_age {
        char **names;
        long long *started;
        size_t n;
} runs_age;

static int collect_run(int top, int dir, const run_info *info, void *userdata)
{
        runs_age *a = userdata;
        long long *more = realloc(a->started, (a->n + 1) * sizeof *more);
        if (!more)
                return -ENOMEM;
        a->started = more;
        int r = strv_push(&a->names, info->run);
        if (r < 0)
                return r;
        a->started[a->n++] = info->started_ns;
        return 0;
}

static void runs_age_done(runs_age *a)
{
        strv_free(a->names);
        free(a->started);
        *a = (runs_age) {};
}

/* Two hashes as text, each an array of its own (the key too). */
static int hash_cmp(const void *a, const void *b)
{
        return strcmp(a, b);
}

typedef char hash_text[MANIFEST_HASH_HEX + 1];

typedef struct unkept {
        const hash_text *kept; /* sorted */
        size_t n;
} unkept;

/* The store's objects/XX/HASH that no record names, removed. */
static int drop_unkept(const tree_entry *e, void *userdata)
{
        const unkept *u = userdata;
        if (e->name[0] == '.' || e->depth == 1)
                return e->name[0] == '.' ? TREE_SKIP : 0;
        if (!(u->n && bsearch(e->name, u->kept, u->n, sizeof *u->kept, hash_cmp)))
                (void) unlinkat(e->dir, e->name, 0);
        return TREE_SKIP;
}

/* The oldest records past UNDO_KEEP_RUNS go, then every object no record names. */
static void prune(const char *top)
{
        _cleanup_free_ char *runs = NULL;
        if (asprintf(&runs, "%s/runs", top) < 0)
                return;
        runs_age a = {};
        if (runs_each(runs, collect_run, &a) < 0 || a.n <= UNDO_KEEP_RUNS) {
                runs_age_done(&a);
                return;
        }
        _cleanup_close_ int runs_fd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        for (size_t removed = 0; runs_fd >= 0 && removed < a.n - UNDO_KEEP_RUNS; removed++) {
                size_t oldest = SIZE_MAX;
                for (size_t i = 0; i < a.n; i++)
                        if (a.names[i][0] && (oldest == SIZE_MAX || a.started[i] < a.started[oldest]))
                                oldest = i;
                if (oldest == SIZE_MAX)
                        break;
                _cleanup_close_ int dir = openat(runs_fd, a.names[oldest], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dir >= 0 && !run_dir_running(dir))
                        (void) tree_remove(runs_fd, a.names[oldest]);
                a.names[oldest][0] = 0;
        }
        runs_age_done(&a);
        /* What the records left name: hashes in one flat array, sorted once. */
        _cleanup_free_ hash_text *kept = NULL;
        size_t n_kept = 0, allocated = 0;
        if (runs_fd < 0 || runs_each(runs, collect_run, &a) < 0) {
                runs_age_done(&a);
                return;
        }
        bool complete = true;
        for (size_t i = 0; i < a.n; i++) {
                _cleanup_close_ int dir = openat(runs_fd, a.names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_(manifest_done) manifest m = {};
                if (dir < 0 || read_manifest_at(dir, "before", &m) < 0) {
                        /* A record being written (or unreadable): keep every object. */
                        complete = false;
                        continue;
                }
                for (size_t j = 0; complete && j < m.n; j++) {
                        if (!m.entries[j].hash[0])
                                continue;
                        if (ARRAY_GROW(kept, allocated, n_kept, 1024) < 0) {
                                complete = false;
                                break;
                        }
                        memcpy(kept[n_kept++], m.entries[j].hash, sizeof *kept);
                }
        }
        runs_age_done(&a);
        if (!complete)
                return;
        if (n_kept > 1)
                qsort(kept, n_kept, sizeof *kept, hash_cmp);
        _cleanup_free_ char *objects = NULL;
        if (asprintf(&objects, "%s/objects", top) < 0)
                return;
        _cleanup_close_ int ofd = open(objects, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        unkept u = { .kept = kept, .n = n_kept };
        if (ofd >= 0)
                (void) tree_walk(ofd, 0, 0, drop_unkept, &u);
}

/* The hash of e->size bytes of the project's file at e->path, reached without a link (when
 * same_inode, only if it is still e's inode and size); false when it cannot be read. */
static bool file_hash(int project, const manifest_entry *e, bool same_inode, char **ret_hex)
{
        const char *name;
        _cleanup_close_ int dir = tree_open_parent(project, e->path, &name);
        _cleanup_close_ int fd = dir >= 0 ? openat(dir, name, OPEN_FILE_FLAGS) : -1;
        struct stat st;
        _cleanup_(digest_freep) digest *d = NULL;
        return fd >= 0 &&
               (!same_inode || (fstat(fd, &st) == 0 && (uint64_t) st.st_ino == e->ino && (uint64_t) st.st_size == e->size)) &&
               digest_new(&d) >= 0 && digest_update_fd(d, fd, e->size) >= 0 && digest_end_hex(d, MANIFEST_HASH_HEX, ret_hex) >= 0;
}

/* What each file holds after the run, by its hash: what the record before knew of a file the
 * run left as it was, what it holds now of one the run changed. Undo then knows a file that
 * holds what the run left (put there again by a later undo, say) from one the user changed. */
static void hash_after(const manifest *before, manifest *after, int project_fd)
{
        for (size_t i = 0; i < after->n; i++) {
                manifest_entry *e = &after->entries[i];
                if (e->type != MANIFEST_FILE)
                        continue;
                const manifest_entry *b = manifest_find(before, e->path);
                if (b && b->hash[0] && manifest_same(b, e)) {
                        memcpy(e->hash, b->hash, sizeof e->hash);
                        continue;
                }
                _cleanup_free_ char *hex = NULL;
                if (file_hash(project_fd, e, true, &hex))
                        memcpy(e->hash, hex, MANIFEST_HASH_HEX + 1);
        }
}

int undo_record_end(undo_record *rec, int project_fd, aisb_error **err)
{
        if (rec->dir_fd < 0)
                return 0;
        _cleanup_(manifest_done) manifest after = {};
        int r = project_now(project_fd, &after);
        if (r >= 0)
                hash_after(&rec->before, &after, project_fd);
        _cleanup_(buffer_free) buffer b = {};
        if (r >= 0)
                r = manifest_format(&after, &b);
        if (r >= 0)
                r = write_file_at(rec->dir_fd, "after", b.data, b.size);
        if (r >= 0)
                r = run_dir_mark_ended(rec->dir_fd);
        closep(&rec->lock_fd);
        if (r < 0)
                return r == -ENOMEM ? error_oom(err)
                                    : aisb_error_set(err, r, "recording the project after the run: %s (aisb undo "
                                                             "cannot undo this run)", strerror(-r));
        rec->changed = undo_count_changes(&rec->before, &after);
        /* Nothing to put back: aisb undo goes on to the run before. */
        if (rec->changed == 0) {
                int fd = openat(rec->dir_fd, "undone", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                closep(&fd);
        }
        prune(rec->top);
        return 0;
}

/* ---- aisb undo ---- */

typedef enum undo_action { DO_NOTHING, DO_RESTORE, DO_REMOVE, DO_CONFLICT, DO_CANNOT } undo_action;

typedef struct undo_step {
        const char *path;
        undo_action action;
        const manifest_entry *before, *after, *now;
        const char *reason;
} undo_step;

/* Whether the project's entry now is what a record (before the run: undone already; after
 * it: untouched since) says, a file by its content. */
static bool now_is_before(int project, const manifest_entry *b, const manifest_entry *c)
{
        if (!b || !c || b->type != c->type || b->mode != c->mode)
                return false;
        if (b->type == MANIFEST_DIR)
                return true;
        if (b->type == MANIFEST_LINK)
                return b->target && c->target && streq(b->target, c->target);
        if (b->type != MANIFEST_FILE || !b->hash[0] || b->size != c->size)
                return false;
        _cleanup_free_ char *hex = NULL;
        return file_hash(project, c, false, &hex) && streq(hex, b->hash);
}

static bool git_index(const char *path)
{
        return streq(path, ".git/index") || (strlen(path) > 11 && streq(path + strlen(path) - 11, "/.git/index"));
}

/* Below a directory one of the records could not read. */
static bool below_unread(const manifest *m, const char *path)
{
        char up[TREE_PATH_MAX];
        snprintf(up, sizeof up, "%s", path);
        for (char *slash = strrchr(up, '/'); slash; slash = strrchr(up, '/')) {
                *slash = 0;
                const manifest_entry *u = manifest_find(m, up);
                if (u)
                        return u->type == MANIFEST_UNREAD;
        }
        return false;
}

static undo_step step_with(undo_step s, undo_action action, const char *reason)
{
        s.action = action;
        s.reason = reason;
        return s;
}

static undo_step decide(int project, const char *path, const manifest_entry *b, const manifest_entry *a,
                        const manifest_entry *c, const manifest *before, const manifest *now, bool force)
{
        undo_step s = { .path = path, .before = b, .after = a, .now = c };
        if (below_unread(before, path) || (b && b->type == MANIFEST_UNREAD))
                return step_with(s, DO_CANNOT, "its directory could not be read before the run");
        if (below_unread(now, path) || (c && c->type == MANIFEST_UNREAD))
                return step_with(s, DO_CANNOT, "its directory cannot be read now");
        if (b && now_is_before(project, b, c))
                return s; /* as it was (never changed, or put back) */
        if (!b && !c)
                return s;
        if (b && b->type == MANIFEST_OTHER)
                return step_with(s, DO_CANNOT, "a FIFO, socket or device is not made again");
        if (b && b->type == MANIFEST_FILE && !b->hash[0])
                return step_with(s, DO_CANNOT, "its content could not be recorded before the run (unreadable, or "
                                               "changing meanwhile)");
        /* Since the run ended: untouched (as the record after it), or the user's. A git
         * directory's index is git's cache of what it last saw, rewritten by a git status the
         * user ran to see what the run did: put back with the rest. */
        bool untouched = (a ? c && (same_entry(a, c) || now_is_before(project, a, c)) : !c) ||
                         (a && c && git_index(path));
        if (!untouched && !force)
                return step_with(s, DO_CONFLICT, !a   ? "it was made since the run ended"
                                                 : !c ? "it was removed since the run ended"
                                                      : "it was changed since the run ended");
        return step_with(s, b ? DO_RESTORE : DO_REMOVE, NULL);
}

static int restore_one(int project, int objects, const undo_step *s)
{
        const manifest_entry *b = s->before, *c = s->now;
        const char *name;
        _cleanup_close_ int dir = -1;
        /* Its directory, made as the record before says where missing. */
        {
                if (!tree_path_valid(s->path))
                        return -EINVAL;
                const char *slash = strrchr(s->path, '/');
                name = slash ? slash + 1 : s->path;
                _cleanup_free_ char *parent = slash ? strndup(s->path, (size_t) (slash - s->path)) : strdup("");
                if (!parent)
                        return -ENOMEM;
                dir = tree_open_dir(project, parent, true, 0755);
                if (dir < 0)
                        return dir;
        }
        /* Something of another type there: it goes first (a directory is empty by now: what
         * the run made in it went before). */
        if (c && c->type != b->type) {
                if (unlinkat(dir, name, c->type == MANIFEST_DIR ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
                        return -errno;
        }
        switch (b->type) {
        case MANIFEST_DIR:
                return tree_put_dir(dir, name, b->mode);
        case MANIFEST_LINK:
                return tree_put_link(dir, name, b->target);
        case MANIFEST_FILE: {
                char path[MANIFEST_HASH_HEX + 8];
                int r = object_path(b->hash, path, sizeof path);
                if (r < 0)
                        return r;
                _cleanup_close_ int src = openat(objects, path, OPEN_FILE_FLAGS);
                if (src < 0)
                        return -errno;
                const struct timespec mtime = { .tv_sec = b->mtime_ns / 1000000000, .tv_nsec = b->mtime_ns % 1000000000 };
                return tree_put_file(dir, name, src, b->size, b->mode, &mtime);
        }
        default:
                return -EINVAL;
        }
}

static int remove_one(int project, const undo_step *s)
{
        const char *name;
        _cleanup_close_ int dir = tree_open_parent(project, s->path, &name);
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        /* A directory only when empty: what is still in it is the user's. */
        if (unlinkat(dir, name, s->now && s->now->type == MANIFEST_DIR ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static aisb_change undo_change(const undo_step *s)
{
        const manifest_entry *b = s->before;
        return (aisb_change) {
                .path = s->path, .change = !b ? "deleted" : !s->now ? "added" : "modified",
                .type = b ? (char) (b->type == MANIFEST_FILE ? 'f' : b->type == MANIFEST_DIR ? 'd' : b->type == MANIFEST_LINK ? 'l' : 'o') : 0,
                .mode = b ? b->mode & 0777 : 0, .size = b ? b->size : 0, .target = b ? b->target : NULL,
        };
}

/* Every path of the three records, in order, with what undo does there: the steps, in
 * steps (room for all); their number. */
static size_t merge_steps(int project, const manifest *before, const manifest *after, const manifest *now, bool force,
                          undo_step *steps)
{
        size_t n = 0;
        for (size_t i = 0, j = 0, k = 0; i < before->n || j < after->n || k < now->n;) {
                const char *least = NULL;
                if (i < before->n)
                        least = before->entries[i].path;
                if (j < after->n && (!least || tree_path_cmp(after->entries[j].path, least) < 0))
                        least = after->entries[j].path;
                if (k < now->n && (!least || tree_path_cmp(now->entries[k].path, least) < 0))
                        least = now->entries[k].path;
                const manifest_entry *b = i < before->n && streq(before->entries[i].path, least) ? &before->entries[i++] : NULL;
                const manifest_entry *a = j < after->n && streq(after->entries[j].path, least) ? &after->entries[j++] : NULL;
                const manifest_entry *c = k < now->n && streq(now->entries[k].path, least) ? &now->entries[k++] : NULL;
                undo_step s = decide(project, least, b, a, c, before, now, force);
                if (s.action != DO_NOTHING)
                        steps[n++] = s;
        }
        return n;
}

/* The steps done (dry: only told), each told to fn: what the run made goes first, deepest
 * first; then what it changed or deleted comes back, parents first. How many were not done;
 * *ret_stop: fn's nonzero return, which ends it. */
static size_t apply_steps(int project, int objects, const undo_step *steps, size_t n, bool dry, aisb_change_fn fn,
                          void *userdata, int *ret_stop)
{
        size_t not_done = 0;
        int stop = 0;
        for (size_t i = n; !stop && i-- > 0;) {
                if (steps[i].action != DO_REMOVE)
                        continue;
                int k = dry ? 0 : remove_one(project, &steps[i]);
                aisb_change c = undo_change(&steps[i]);
                c.action = k < 0 ? "failed" : dry ? "would remove" : "removed";
                c.reason = k < 0 ? (k == -ENOTEMPTY ? "a directory that holds what the run did not make"
                                                    : strerror(-k)) : NULL;
                not_done += k < 0;
                stop = fn ? fn(&c, userdata) : 0;
        }
        for (size_t i = 0; !stop && i < n; i++) {
                const undo_step *s = &steps[i];
                if (s->action == DO_REMOVE)
                        continue;
                aisb_change c = undo_change(s);
                int k = 0;
                if (s->action == DO_RESTORE) {
                        k = dry ? 0 : restore_one(project, objects, s);
                        c.action = k < 0 ? "failed" : dry ? "would restore" : "restored";
                        c.reason = k < 0 ? (k == -ELOOP ? "the project's path to it goes through a link"
                                                        : k == -ENOTEMPTY ? "a directory that holds what the run did not make"
                                                                          : strerror(-k))
                                         : NULL;
                } else {
                        k = -1;
                        c.action = s->action == DO_CONFLICT ? "conflict" : "refused";
                        c.reason = s->reason;
                }
                not_done += k < 0;
                stop = fn ? fn(&c, userdata) : 0;
        }
        *ret_stop = stop;
        return not_done;
}

int aisb_undo(const aisb_policy *p, const char *run, unsigned flags, aisb_change_fn fn, void *userdata,
              char **ret_run, aisb_error **err)
{
        if (flags & ~(unsigned) (AISB_APPLY_FORCE | AISB_APPLY_DRY_RUN))
                return aisb_error_set(err, -EINVAL, "aisb_undo: unknown flags 0x%x", flags);
        if (!p->project)
                return aisb_error_set(err, -EINVAL, "no project: run aisb in the project's directory");
        _cleanup_free_ char *top = NULL, *runs = NULL;
        int r = project_state_dir("undo", p->project, false, &top, err);
        if (r < 0)
                return r;
        if (asprintf(&runs, "%s/runs", top) < 0)
                return error_oom(err);
        _cleanup_free_ char *name = NULL;
        r = runs_find(runs, p->project, run, "undone", "run", &name, err);
        if (r == -ENOENT && !run) {
                aisb_error_free(err ? steal_pointer(err) : NULL);
                return aisb_error_set(err, -ENOENT, "no run of this project left to undo (a plain run records one; "
                                                    "aisb ps lists what is kept)");
        }
        if (r < 0)
                return r;
        _cleanup_close_ int runs_fd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int dir = runs_fd >= 0 ? openat(runs_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        _cleanup_close_ int top_fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int objects = top_fd >= 0 ? openat(top_fd, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (dir < 0 || objects < 0)
                return aisb_error_set(err, -errno, "the record of %s: %s", name, strerror(errno));
        if (run_dir_running(dir))
                return aisb_error_set(err, -EBUSY, "%s is still running: undo it once it has ended", name);
        _cleanup_(manifest_done) manifest before = {}, after = {}, now = {};
        if ((r = read_manifest_at(dir, "before", &before)) < 0)
                return aisb_error_set(err, r, "the record of %s before it ran: %s", name, strerror(-r));
        if ((r = read_manifest_at(dir, "after", &after)) < 0)
                return aisb_error_set(err, r == -ENOENT ? -ESRCH : r,
                                      r == -ENOENT ? "%s left no record of its end (aisb was stopped before it could "
                                                     "write one): it cannot be undone" : "the record of %s after it ran: %s",
                                      name, strerror(-r));
        _cleanup_close_ int project = project_open(p->project, p->project_is_cwd, err);
        if (project < 0)
                return project;
        _cleanup_(run_info_done) run_info info = {};
        if ((r = run_dir_info(dir, &info)) < 0)
                return aisb_error_set(err, r, "the record of %s: its info: %s", name, strerror(-r));
        if ((r = run_info_check_project(&info, project, err)) < 0)
                return r;
        if ((r = project_now(project, &now)) < 0)
                return aisb_error_set(err, r, "reading the project: %s", strerror(-r));

        /* Every path of the three records, in order. */
        _cleanup_free_ undo_step *steps = calloc(before.n + after.n + now.n + 1, sizeof *steps);
        if (!steps)
                return error_oom(err);
        size_t n = merge_steps(project, &before, &after, &now, flags & AISB_APPLY_FORCE, steps);
        int stop = 0;
        size_t not_done = apply_steps(project, objects, steps, n, flags & AISB_APPLY_DRY_RUN, fn, userdata, &stop);
        if (!(flags & AISB_APPLY_DRY_RUN) && !stop && not_done == 0) {
                int fd = openat(dir, "undone", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                closep(&fd);
        }
        if (ret_run)
                *ret_run = steal_pointer(&name);
        return (int) (not_done > INT32_MAX ? INT32_MAX : not_done);
}
