/* SPDX-License-Identifier: MIT */
/*
 * Living with sandboxes: what is running (ps) and what is left over (clean). Everything here
 * is scoped to aisb's own namespace: containers and volumes carrying the aisb.managed label,
 * volumes named aisb-*, images in localhost/aisb*. Nothing else is listed, and nothing else
 * is ever removed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <signal.h>
#include <time.h>

#include "gate.h"
#include "jsonutil.h"
#include "podman.h"
#include "policy.h"
#include "review.h"
#include "tree-walk.h"
#include "userdirs.h"

#define MANAGED_FILTER "{\"label\":[\"" AISB_LABEL_PREFIX "managed=true\"]}"

static const char *label(json_object *labels, const char *key)
{
        json_object *v;
        return labels && json_object_object_get_ex(labels, key, &v) ? json_object_get_string(v) : NULL;
}

/* A string member of a listed container, volume or image, or "". */
static const char *member(json_object *o, const char *key)
{
        json_object *v;
        const char *s = json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
        return s ? s : "";
}

/* A listed container's first name, or NULL. */
static const char *container_name(json_object *c)
{
        json_object *v;
        return json_object_object_get_ex(c, "Names", &v) ? json_object_get_string(json_object_array_get_idx(v, 0))
                                                         : NULL;
}

/* libpod lists "Created" as RFC 3339 text; older services as a number. */
static long long parse_time(json_object *v)
{
        if (json_object_is_type(v, json_type_int))
                return json_object_get_int64(v);
        struct tm tm = {};
        const char *s = json_object_get_string(v);
        const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
        if (!rest)
                return 0;
        long long t = (long long) timegm(&tm);
        /* Fractions of a second, then "Z" or the offset of the service's time zone. */
        if (*rest == '.')
                rest += 1 + strspn(rest + 1, "0123456789");
        unsigned hours, minutes;
        if ((*rest == '+' || *rest == '-') && sscanf(rest + 1, "%2u:%2u", &hours, &minutes) == 2)
                t -= (*rest == '+' ? 1 : -1) * (long long) (hours * 3600 + minutes * 60);
        return t;
}

/* Connected to the service, the containers aisb made. */
static int list_managed(aisb_ctx *ctx, json_object **ret, aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        return r < 0 ? r : podman_container_list(ctx, MANAGED_FILTER, ret, err);
}

/* A sandbox whose aisb process is gone (killed with -9) is an orphan, running or not. */
static bool orphaned(json_object *labels)
{
        const char *pid = label(labels, AISB_LABEL_PREFIX "pid");
        if (!pid)
                return false;
        long n = strtol(pid, NULL, 10);
        return n > 0 && kill((pid_t) n, 0) < 0 && errno == ESRCH;
}

/* Whether a container, running or not, mounts the volume, not counting those named in
 * except (which a clean removes). The container list names only mount destinations, so ask
 * podman with its volume filter. */
static int volume_in_use(aisb_ctx *ctx, const char *name, char *const *except, bool *ret,
                         aisb_error **err)
{
        _cleanup_json_ json_object *filter = json_object_new_object();
        json_object *names = json_object_new_array();
        int r = json_append_string(names, name);
        if (json_add(filter, "volume", names) < 0 || r < 0)
                return error_oom(err);
        const char *filters = json_text_checked(filter, JSON_C_TO_STRING_PLAIN);
        if (!filters)
                return error_oom(err);
        _cleanup_json_ json_object *users = NULL;
        r = podman_container_list(ctx, filters, &users, err);
        if (r < 0)
                return r;
        *ret = false;
        for (size_t i = 0; json_object_is_type(users, json_type_array) && i < json_object_array_length(users); i++) {
                const char *user = container_name(json_object_array_get_idx(users, i));
                *ret |= !(user && strv_contains((const char *const *) except, user));
        }
        return 0;
}

/* The home volumes aisb made (one per project by default). */
static int list_homes(aisb_ctx *ctx, aisb_list_fn fn, void *userdata, aisb_error **err)
{
        _cleanup_json_ json_object *vols = NULL;
        int r = podman_volume_list(ctx, MANAGED_FILTER, &vols, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(vols); i++) {
                json_object *vol = json_object_array_get_idx(vols, i), *labels = NULL, *v;
                json_object_object_get_ex(vol, "Labels", &labels);
                const char *name = member(vol, "Name");
                bool used = false;
                r = volume_in_use(ctx, name, NULL, &used, err);
                if (r < 0)
                        return r;
                aisb_list_entry e = {
                        .name = name,
                        .kind = "volume",
                        .users = -1,
                        .idle_seconds = -1,
                        .project = label(labels, AISB_LABEL_PREFIX "project"),
                        .image = "",
                        .state = used ? "in-use" : "unused",
                        .created = json_object_object_get_ex(vol, "CreatedAt", &v) ? parse_time(v) : 0,
                        .size = -1,
                };
                fn(&e, userdata);
        }
        return 0;
}

/* One clean: what it tells, and what its steps leave for the next. */
typedef struct cleaning {
        aisb_ctx *ctx;
        aisb_clean_fn fn;
        void *userdata;
        bool all, dry;
        int failed;          /* review layers and undo records that could not go */
        char **kept_images;  /* used by what stays */
        char **kept_gates;   /* the hashes of the gates that stay */
        char **removed;      /* the containers removed (in a dry run: would be) */
} cleaning;

static void tell(const cleaning *c, const char *kind, const char *name)
{
        c->fn(&(aisb_clean_entry) { .kind = kind, .name = name }, c->userdata);
}

/* ---- what is kept of projects: review layers, undo records ---- */

typedef struct kept_walk {
        aisb_list_fn fn;
        void *userdata;
        /* A project's undo records, summed: */
        size_t runs;
        long long newest;
        char *project;
} kept_walk;

static int list_layer(int top, int dir, const run_info *info, void *userdata)
{
        kept_walk *k = userdata;
        aisb_list_entry e = {
                .name = info->run, .kind = "layer", .project = info->project, .image = "",
                .state = run_dir_running(dir) ? "running" : run_info_interrupted(info) ? "interrupted" : "ended", .created = info->started_ns / 1000000000LL,
                .users = -1, .idle_seconds = -1, .size = (long long) dir_disk_usage(dir),
        };
        k->fn(&e, k->userdata);
        return 0;
}

static int count_undo(int top, int dir, const run_info *info, void *userdata)
{
        kept_walk *k = userdata;
        k->runs++;
        if (info->started_ns / 1000000000LL > k->newest)
                k->newest = info->started_ns / 1000000000LL;
        if (!k->project && !(k->project = strdup(info->project)))
                return -ENOMEM;
        return 0;
}

/* Each directory of top (STATE/layers or STATE/undo): a project's. */
static int each_project_dir(const char *top, int (*fn)(const char *path, const char *name, void *userdata),
                            void *userdata)
{
        _cleanup_close_ int fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        DIR *d = fdopendir(steal_fd(&fd));
        if (!d)
                return -errno;
        int r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", top, de->d_name) < 0)
                        r = -ENOMEM;
                else
                        r = fn(path, de->d_name, userdata);
        }
        closedir(d);
        return r;
}

static int list_project_layers(const char *path, const char *name, void *userdata)
{
        return runs_each(path, list_layer, userdata);
}

static int list_project_undo(const char *path, const char *name, void *userdata)
{
        kept_walk *k = userdata;
        _cleanup_free_ char *runs = NULL, *label = NULL;
        if (asprintf(&runs, "%s/runs", path) < 0 || asprintf(&label, "undo-%s", name) < 0)
                return -ENOMEM;
        k->runs = 0;
        k->newest = 0;
        free(k->project);
        k->project = NULL;
        int r = runs_each(runs, count_undo, k);
        if (r < 0 || !k->runs)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char state[32];
        snprintf(state, sizeof state, "%zu run%s", k->runs, k->runs == 1 ? "" : "s");
        aisb_list_entry e = {
                .name = label, .kind = "undo", .project = k->project, .image = "", .state = state,
                .created = k->newest, .users = -1, .idle_seconds = -1,
                .size = fd >= 0 ? (long long) dir_disk_usage(fd) : -1,
        };
        k->fn(&e, k->userdata);
        return 0;
}

static int list_kept(aisb_list_fn fn, void *userdata, aisb_error **err)
{
        _cleanup_free_ char *layers = state_path("layers"), *undo = state_path("undo");
        kept_walk k = { .fn = fn, .userdata = userdata };
        int r = layers ? each_project_dir(layers, list_project_layers, &k) : 0;
        if (r >= 0 && undo)
                r = each_project_dir(undo, list_project_undo, &k);
        free(k.project);
        return r < 0 ? aisb_error_set(err, r, "listing review layers and undo records: %s", strerror(-r)) : 0;
}

static int clean_layer(int top, int dir, const run_info *info, void *userdata)
{
        cleaning *k = userdata;
        if (run_dir_running(dir))
                return 0;
        tell(k, "layer", info->run);
        if (k->dry)
                return 0;
        char aside[NAME_MAX + 1];
        _cleanup_error_ aisb_error *e = NULL;
        if (snprintf(aside, sizeof aside, ".removing-%s", info->run) < (int) sizeof aside &&
            renameat(top, info->run, top, aside) == 0 && runs_remove_aside(k->ctx, top, aside, &e) < 0) {
                aisb_log(k->ctx, AISB_LOG_WARNING, "%s", aisb_error_message(e));
                k->failed++;
        }
        return 0;
}

/* A layer whose run was interrupted (its aisb killed) and whose sandbox is gone: nothing
 * writes it any more, so it is given its end and can be applied. */
typedef struct ending {
        aisb_ctx *ctx;
        const char *const *sandboxes; /* the sandboxes still there */
} ending;

static int end_layer(int top, int dir, const run_info *info, void *userdata)
{
        ending *e = userdata;
        if (!run_info_interrupted(info) || run_dir_running(dir) ||
            strv_contains(e->sandboxes, info->run))
                return 0;
        int r = run_dir_mark_ended(dir);
        if (r < 0)
                aisb_log(e->ctx, AISB_LOG_WARNING, "the review layer %s: %s", info->run, strerror(-r));
        else
                aisb_log(e->ctx, AISB_LOG_INFO, "%s: its sandbox is gone; its layer can be applied", info->run);
        return 0;
}

static int end_project_layers(const char *path, const char *name, void *userdata)
{
        return runs_each(path, end_layer, userdata);
}

static int clean_project_layers(const char *path, const char *name, void *userdata)
{
        int r = runs_each(path, clean_layer, userdata);
        (void) rmdir(path);
        return r;
}

static int undo_running(int top, int dir, const run_info *info, void *userdata)
{
        return run_dir_running(dir) ? -EBUSY : 0;
}

static int clean_project_undo(const char *path, const char *name, void *userdata)
{
        cleaning *k = userdata;
        _cleanup_free_ char *runs = NULL, *label = NULL;
        if (asprintf(&runs, "%s/runs", path) < 0 || asprintf(&label, "undo-%s", name) < 0)
                return -ENOMEM;
        /* Records a run still writes stay, and the store they use with them. */
        if (runs_each(runs, undo_running, NULL) == -EBUSY)
                return 0;
        tell(k, "undo", label);
        if (!k->dry && tree_remove(AT_FDCWD, path) < 0)
                k->failed++;
        return 0;
}

static int clean_kept(cleaning *k, aisb_error **err)
{
        _cleanup_free_ char *layers = state_path("layers"), *undo = state_path("undo");
        int r = layers ? each_project_dir(layers, clean_project_layers, k) : 0;
        if (r >= 0 && undo)
                r = each_project_dir(undo, clean_project_undo, k);
        if (r < 0)
                return aisb_error_set(err, r, "cleaning review layers and undo records: %s", strerror(-r));
        return k->failed ? aisb_error_set(err, -EIO, "%d review layer%s or undo record%s could not be removed "
                                                     "(said above)", k->failed, k->failed == 1 ? "" : "s",
                                          k->failed == 1 ? "" : "s")
                         : 0;
}

/* The running sandboxes a gate serves: they carry its hash. */
static int gate_users(json_object *list, const char *hash)
{
        int n = 0;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i), *labels = NULL, *v;
                json_object_object_get_ex(c, "Labels", &labels);
                const char *served = label(labels, AISB_LABEL_PREFIX "gate");
                bool running = json_object_object_get_ex(c, "State", &v) && streq(json_object_get_string(v), "running");
                n += running && served && streq(served, hash) && !label(labels, AISB_LABEL_PREFIX "gate.port");
        }
        return n;
}

/* Seconds since the gate's last request: its access log's time (not followed, as squid
 * writes that directory), or its start when it logged nothing since. */
static long long gate_idle(const char *hash, long long created)
{
        _cleanup_free_ char *sub = NULL, *dir = NULL;
        if (asprintf(&sub, "gates/%s/logs", hash) < 0 || !(dir = state_path(sub)))
                return -1;
        struct stat st;
        long long last = created;
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fstatat(fd, "access.log", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (long long) st.st_mtime > last)
                last = (long long) st.st_mtime;
        long long idle = (long long) time(NULL) - last;
        return idle < 0 ? 0 : idle;
}

int aisb_list(aisb_ctx *ctx, aisb_list_fn fn, void *userdata, aisb_error **err)
{
        _cleanup_json_ json_object *list = NULL;
        int r = list_managed(ctx, &list, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i), *labels = NULL, *v;
                json_object_object_get_ex(c, "Labels", &labels);
                const char *name = container_name(c);
                bool gate = label(labels, AISB_LABEL_PREFIX "gate.port") != NULL;
                const char *hash = gate ? label(labels, AISB_LABEL_PREFIX "gate") : NULL;
                long long created = json_object_object_get_ex(c, "Created", &v) ? parse_time(v) : 0;
                aisb_list_entry e = {
                        .name = name ? name : "",
                        .kind = gate ? "gate" : "sandbox",
                        .project = label(labels, AISB_LABEL_PREFIX "project"),
                        .net = gate ? "host" : label(labels, AISB_LABEL_PREFIX "net"),
                        .policy = gate ? label(labels, AISB_LABEL_PREFIX "gate")
                                       : label(labels, AISB_LABEL_PREFIX "policy"),
                        .image = member(c, "Image"),
                        .state = member(c, "State"),
                        .created = created,
                        .orphaned = !gate && orphaned(labels),
                        .users = gate && hash ? gate_users(list, hash) : -1,
                        .idle_seconds = gate && hash ? gate_idle(hash, created) : -1,
                        .size = -1,
                };
                fn(&e, userdata);
        }
        r = list_homes(ctx, fn, userdata, err);
        return r < 0 ? r : list_kept(fn, userdata, err);
}

/* What another owner may still use, told and (but in a dry run) removed: a refusal is a
 * warning, not the end of the clean. */
static void tell_and_remove(cleaning *c, const char *kind, const char *name,
                            int (*remove)(aisb_ctx *ctx, const char *name, aisb_error **err))
{
        tell(c, kind, name);
        if (c->dry)
                return;
        _cleanup_error_ aisb_error *e = NULL;
        if (remove(c->ctx, name, &e) < 0)
                aisb_log(c->ctx, AISB_LOG_WARNING, "%s", aisb_error_message(e));
}

static void tell_state(const char *dir, void *userdata)
{
        tell(userdata, "gate-state", dir);
}

/* Containers: stopped ones and orphans, and runs' own gates whose run is gone (they hold its
 * secrets); with all, running gates too. A sandbox whose aisb still runs is never touched. */
static int clean_containers(cleaning *c, json_object *list, aisb_error **err)
{
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *o = json_object_array_get_idx(list, i), *labels = NULL;
                json_object_object_get_ex(o, "Labels", &labels);
                const char *name = container_name(o), *state = member(o, "State"), *image = member(o, "Image");
                bool gate = label(labels, AISB_LABEL_PREFIX "gate.port") != NULL;
                const char *hash = gate ? label(labels, AISB_LABEL_PREFIX "gate") : NULL;
                const char *run_label = label(labels, AISB_LABEL_PREFIX "gate.run");
                bool per_run = gate && run_label && streq(run_label, "true");
                bool running = streq(state, "running");
                bool remove = !running || (!gate && orphaned(labels)) || (gate && c->all) ||
                              (per_run && gate_run_gone(hash));
                if (!name)
                        continue;
                if (!remove) {
                        (void) strv_push(&c->kept_images, image);
                        if (hash && strv_push(&c->kept_gates, hash) < 0)
                                return error_oom(err);
                        continue;
                }
                tell(c, gate ? "gate" : "sandbox", name);
                if (strv_push(&c->removed, name) < 0)
                        return error_oom(err);
                int r = c->dry ? 0 : podman_container_remove(c->ctx, name, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Review layers of interrupted runs whose sandbox is gone now. */
static int end_interrupted_layers(cleaning *c, json_object *list, aisb_error **err)
{
        _cleanup_strv_free_ char **sandboxes = NULL;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                const char *name = container_name(json_object_array_get_idx(list, i));
                if (name && !strv_contains((const char *const *) c->removed, name) && strv_push(&sandboxes, name) < 0)
                        return error_oom(err);
        }
        _cleanup_free_ char *layers = state_path("layers");
        ending e = { .ctx = c->ctx, .sandboxes = (const char *const *) sandboxes };
        int r = layers ? each_project_dir(layers, end_project_layers, &e) : 0;
        return r < 0 ? aisb_error_set(err, r, "the review layers: %s", strerror(-r)) : 0;
}

/* Images of ours that nothing kept uses: the next run rebuilds what it needs. */
static int clean_images(cleaning *c, aisb_error **err)
{
        _cleanup_json_ json_object *images = NULL;
        int r = podman_image_list(c->ctx, &images, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(images); i++) {
                json_object *img = json_object_array_get_idx(images, i), *names;
                if (!json_object_object_get_ex(img, "Names", &names) || !json_object_is_type(names, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(names); k++) {
                        const char *ref = json_object_get_string(json_object_array_get_idx(names, k));
                        bool ours = startswith(ref, "localhost/aisb:") || startswith(ref, "localhost/aisb-gate:") ||
                                    (c->all && startswith(ref, "localhost/aisb-base:"));
                        /* In use by a container of someone else's: left. */
                        if (ours && !strv_contains((const char *const *) c->kept_images, ref))
                                tell_and_remove(c, "image", ref, podman_image_remove);
                }
        }
        return 0;
}

/* Volumes named aisb-* (and volume_glob) that no container uses but those removed above. */
static int clean_volumes(cleaning *c, const char *volume_glob, aisb_error **err)
{
        _cleanup_json_ json_object *vols = NULL;
        int r = podman_volume_list(c->ctx, NULL, &vols, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(vols); i++) {
                const char *name = member(json_object_array_get_idx(vols, i), "Name");
                if (!startswith(name, "aisb-"))
                        continue;
                if (volume_glob && fnmatch(volume_glob, name, 0) != 0)
                        continue;
                /* What the containers removed above mounted is free (in a dry run: would be). */
                bool used = false;
                r = volume_in_use(c->ctx, name, c->removed, &used, err);
                if (r < 0)
                        return r;
                /* 409: a container outside our namespace uses it; that is not ours to end. */
                if (!used)
                        tell_and_remove(c, "volume", name, podman_volume_remove);
        }
        return 0;
}

static void cleaning_done(cleaning *c)
{
        strv_free(c->kept_images);
        strv_free(c->kept_gates);
        strv_free(c->removed);
}

int aisb_clean(aisb_ctx *ctx, unsigned flags, const char *volume_glob, const char *keep_image,
               aisb_clean_fn fn, void *userdata, aisb_error **err)
{
        if (flags & ~(unsigned) (AISB_CLEAN_ALL | AISB_CLEAN_VOLUMES | AISB_CLEAN_DRY_RUN | AISB_CLEAN_LAYERS))
                return aisb_error_set(err, -EINVAL, "aisb_clean: unknown flags 0x%x", flags);
        _cleanup_(cleaning_done) cleaning c = { .ctx = ctx, .fn = fn, .userdata = userdata,
                                               .all = flags & AISB_CLEAN_ALL, .dry = flags & AISB_CLEAN_DRY_RUN };
        _cleanup_json_ json_object *list = NULL;
        int r = list_managed(ctx, &list, err);
        if (r < 0)
                return r;
        if (keep_image && !c.all && strv_push(&c.kept_images, keep_image) < 0)
                return error_oom(err);
        r = clean_containers(&c, list, err);
        if (r >= 0 && !c.dry)
                r = end_interrupted_layers(&c, list, err);
        if (r < 0)
                return r;
        /* The state of every gate gone now, just removed or long since (a killed run's gate
         * removed behind aisb's back, say), whose squid.conf may hold a run's secrets: wiped. */
        r = gate_prune_states((const char *const *) c.kept_gates, c.dry, tell_state, &c);
        if (r < 0)
                return aisb_error_set(err, r, "cleaning the gates' state: %s", strerror(-r));
        r = clean_images(&c, err);
        if (r >= 0 && (flags & AISB_CLEAN_LAYERS))
                r = clean_kept(&c, err);
        if (r >= 0 && (flags & AISB_CLEAN_VOLUMES))
                r = clean_volumes(&c, volume_glob, err);
        return r;
}
