/* SPDX-License-Identifier: MIT */
/*
 * One sandboxed run: the plan's steps applied in order (image, volume, network, gate,
 * bridge, keep, protect, create, attach, start, stream, wait), and the ends of those begun
 * run in reverse on every way out. Attaching comes before start so no early output is
 * lost; the stream itself is stream.c's.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>

#include "createpatch.h"
#include "ask.h"
#include "egress.h"
#include "gate.h"
#include "harness.h"
#include "image.h"
#include "jsonutil.h"
#include "network.h"
#include "plan.h"
#include "podman.h"
#include "project.h"
#include "protect.h"
#include "run.h"
#include "session-log.h"
#include "mode-sweep.h"
#include "userdirs.h"
#include "fileio.h"
#include "digest.h"
#include "review.h"
#include "tree-walk.h"
#include "undo.h"


static int ensure_home_volume(aisb_ctx *ctx, const run_plan *plan, aisb_error **err)
{
        if (!plan->home_volume)
                return 0;
        int r = podman_volume_exists(ctx, plan->home_volume, err);
        if (r != 0)
                return r < 0 ? r : 0;
        /* Created here rather than implicitly, so it carries our labels. */
        return podman_volume_create(ctx, plan->home_volume, json_object_get(plan->volume_labels), err);
}

/* While a run prepares: whether its control callback asked to stop (polled without
 * blocking; a resize read meanwhile is kept for the start). */
static bool control_says_stop(void *userdata)
{
        aisb_io *io = userdata;
        if (io->control_fd < 0 || !io->control_fn)
                return false;
        /* A few events at most per look: a callback that consumes nothing cannot spin us. */
        for (int i = 0; i < 16; i++) {
                struct pollfd p = { .fd = io->control_fd, .events = POLLIN };
                if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
                        break;
                aisb_control_request request = { .fd = io->control_fd };
                int c = io->control_fn(&request, io->control_userdata);
                if (c == AISB_CONTROL_STOP)
                        return true;
                if (c == AISB_CONTROL_RESIZE) {
                        /* The newest size, applied once the sandbox starts. */
                        io->rows = request.rows;
                        io->cols = request.cols;
                }
        }
        return false;
}

/* Ends the watch on the run's control callback when the run returns. */
static void control_watch_end(aisb_ctx **ctx)
{
        (*ctx)->stop_fn = NULL;
        (*ctx)->stop_userdata = NULL;
}

/* A step of the preparation ended: -ECANCELED when a stop came meanwhile, whatever the step
 * made of its aborted request. */
static int step_done(aisb_ctx *ctx, int r, aisb_error **err)
{
        if (ctx_stopping(ctx))
                return aisb_error_set(err, -ECANCELED, "stopped before the sandbox started");
        return r;
}

static void step(aisb_ctx *ctx, aisb_step s)
{
        static const char *const names[] = {
                [AISB_STEP_IMAGE] = "image",   [AISB_STEP_VOLUME] = "volume", [AISB_STEP_NETWORK] = "network",
                [AISB_STEP_GATE] = "gate",     [AISB_STEP_BRIDGE] = "bridge", [AISB_STEP_CREATE] = "create",
                [AISB_STEP_START] = "start",   [AISB_STEP_STREAM] = "stream", [AISB_STEP_REMOVE] = "remove",
        };
        (void) ctx_emit(ctx, &(aisb_event) { .type = AISB_EVENT_STEP, .level = AISB_LOG_INFO, .text = names[s],
                                             .step = s });
}

/* The run's questions: those still waiting are refused when it ends. */
typedef struct run_ask {
        aisb_ctx *ctx;
        ask_state *a;
} run_ask;

static void run_ask_done(run_ask *ra)
{
        if (!ra->a)
                return;
        ask_refuse_all(ra->a, "end");
        ra->ctx->ask = NULL;
        ra->a = ask_free(ra->a);
}

/* The run's gate, given back (or removed, when it was the run's own) on every way out. */
typedef struct run_gate {
        aisb_ctx *ctx;
        gate_info g;
} run_gate;

static void run_gate_done(run_gate *rg)
{
        if (rg->g.name)
                gate_release(rg->ctx, &rg->g);
        gate_info_done(&rg->g);
}

/* Protected paths (protect.h): the plan, before anything of the sandbox exists, and what it
 * keeps read-only said in one line. */
static int protect_begin(aisb_ctx *ctx, const aisb_policy *p, const protect_plan *ret, aisb_error **err)
{
        int r = 0;
        if (ret->repository_top)
                aisb_log(ctx, AISB_LOG_WARNING,
                         "%s is inside the git repository %s, which the sandbox does not see: git in it says "
                         "\"not a git repository\"; run aisb from %s to use git there",
                         p->project, ret->repository_top, ret->repository_top);
        if (ret->walk_cut)
                aisb_log(ctx, AISB_LOG_WARNING,
                         "the project is larger than aisb looks through for git directories (%d directories, %d "
                         "entries, %d deep): those further in are not protected, and one made there during the run "
                         "is not found after it",
                         PROTECT_WALK_MAX_DIRS, PROTECT_WALK_MAX_ENTRIES, PROTECT_WALK_MAX_DEPTH);
        for (size_t i = 0; ret->outside && ret->outside[i]; i++)
                aisb_log(ctx, AISB_LOG_INFO, "the git directory %s, outside the project, is in the sandbox too: "
                         "objects and refs writable, its configuration and hooks read-only", ret->outside[i]);
        size_t n = strv_length((const char *const *) ret->shown);
        if (n == 0)
                return 0;
        buffer b = {};
        for (size_t i = 0; r >= 0 && i < n && i < 6; i++)
                r = buffer_printf(&b, "%s%s", i ? " " : "", ret->shown[i]);
        if (r >= 0 && n > 6)
                r = buffer_printf(&b, " and %zu more", n - 6);
        if (r >= 0)
                aisb_log(ctx, AISB_LOG_INFO, "protected, read-only in the sandbox: %s (--protect=-PATH to let the agent change one)",
                         b.data);
        buffer_free(&b);
        return r < 0 ? error_oom(err) : 0;
}

static void protect_found(const char *was, const char *now, const char *why, void *userdata)
{
        if (now)
                aisb_log(userdata, AISB_LOG_WARNING, "%s is %s: moved to %s, where git and editors do not look "
                         "(look at it before moving it back)", was, why, now);
        else
                aisb_log(userdata, AISB_LOG_WARNING, "%s is %s", was, why);
}

/* After the sandbox is gone: what appeared where the plan watched goes into quarantine. */
static void protect_end(aisb_ctx *ctx, const protect_plan *plan)
{
        if (!plan->project)
                return;
        char base[33], stamp[64];
        project_short_name(plan->project, base, sizeof base);
        _cleanup_free_ char *hash = NULL, *top = state_path("quarantine"), *dir = NULL;
        time_t now = time(NULL);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", gmtime_r(&now, &tm));
        if (!top || sha256_hex(plan->project, strlen(plan->project), 12, &hash) < 0 ||
            asprintf(&dir, "%s/%s-%s/%s-%ld", top, base, hash, stamp, (long) getpid()) < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "out of memory: the project's git and editor settings were not checked "
                         "after the run; look at them before running git there");
                return;
        }
        aisb_error *e = NULL;
        bool cut = false;
        if (protect_sweep(plan, dir, protect_found, ctx, &cut, &e) < 0)
                aisb_log(ctx, AISB_LOG_WARNING, "%s", aisb_error_message(e));
        aisb_error_free(e);
        if (cut)
                aisb_log(ctx, AISB_LOG_WARNING,
                         "the project is now larger than aisb looks through for git directories (%d directories, "
                         "%d entries, %d deep): one the run made further in was not looked for; look before running "
                         "git in the project's deeper directories",
                         PROTECT_WALK_MAX_DIRS, PROTECT_WALK_MAX_ENTRIES, PROTECT_WALK_MAX_DEPTH);
}

/* What a run keeps of the project: its review layer, or a record for aisb undo. */
typedef struct run_keep {
        int project_fd;
        long long started_ns; /* a plain run's start, on the clock file times come from */
        review_layer layer;
        undo_record undo;
        bool created; /* the sandbox was: what was kept is the run's */
} run_keep;
#define RUN_KEEP_NULL ((run_keep) { .project_fd = -1, .layer = REVIEW_LAYER_NULL, .undo = UNDO_RECORD_NULL })

static void run_keep_done(run_keep *k)
{
        /* No sandbox was made: neither a layer nor a record has anything to say. */
        if (!k->created && k->layer.dir)
                (void) tree_remove(AT_FDCWD, k->layer.dir);
        if (!k->created && k->undo.top && k->undo.run) {
                _cleanup_free_ char *dir = NULL;
                if (asprintf(&dir, "%s/runs/%s", k->undo.top, k->undo.run) >= 0)
                        (void) tree_remove(AT_FDCWD, dir);
        }
        closep(&k->project_fd);
        review_layer_done(&k->layer);
        undo_record_done(&k->undo);
}

/* Before the sandbox exists: a review run's layer (the plan's overlay needs it), or a plain
 * run's record of the project for aisb undo (said when it is not made). */
static int keep_begin(aisb_ctx *ctx, const aisb_policy *p, const plan_facts *f, run_keep *k, aisb_error **err)
{
        if (!p->project || p->project_read_only)
                return 0;
        int r = project_open(p->project, p->project_is_cwd, err);
        if (r < 0)
                return r;
        k->project_fd = r;
        if (f->reviews) {
                _cleanup_(buffer_free) buffer list = {};
                for (size_t i = 0; p->protect && p->protect[i]; i++)
                        if (buffer_printf(&list, "%s%s", i ? "," : "", p->protect[i]) < 0)
                                return error_oom(err);
                return review_layer_create(p->project, k->project_fd, f->name, list.data ? list.data : "", &k->layer, err);
        }
        struct timespec now;
        (void) clock_gettime(CLOCK_REALTIME_COARSE, &now);
        k->started_ns = (long long) now.tv_sec * 1000000000LL + now.tv_nsec;
        const char *why = NULL;
        r = undo_record_begin(ctx, p->project, k->project_fd, f->name, p->undo, &k->undo, &why, err);
        if (r == -ECANCELED)
                return r;
        if (r == 0 && p->undo == UNDO_AUTO)
                aisb_log(ctx, AISB_LOG_INFO, "undo: this run is not recorded: the project is larger than aisb records "
                                             "by default (%s); undo = on records it anyway", why);
        else if (r < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "undo: this run is not recorded: %s", aisb_error_message(*err));
                aisb_error_free(steal_pointer(err));
        }
        return 0;
}

/* After the sandbox is gone: what the run changed, and the command that shows or undoes it.
 * A sandbox that could not be removed may still write its layer: the layer is left without
 * its end (interrupted), which apply refuses until aisb clean has removed the sandbox. */
static void keep_end(aisb_ctx *ctx, run_keep *k, bool sandbox_gone)
{
        aisb_error *e = NULL;
        if (k->layer.dir_fd >= 0 && !sandbox_gone)
                aisb_log(ctx, AISB_LOG_WARNING, "review: the sandbox may still write %s: \"aisb clean\" removes it, then "
                         "\"aisb apply\" takes its layer", k->layer.run);
        else if (k->layer.dir_fd >= 0) {
                if (review_layer_end(&k->layer, k->project_fd, &e) < 0)
                        aisb_log(ctx, AISB_LOG_WARNING, "review: %s", aisb_error_message(e));
                else if (k->layer.changes == 0) {
                        /* Nothing to review: no layer to keep. */
                        _cleanup_free_ char *top = strdup(k->layer.dir);
                        char *cut = top ? strrchr(top, '/') : NULL;
                        int removed = -ENOMEM;
                        if (cut) {
                                *cut = 0;
                                closep(&k->layer.dir_fd);
                                removed = runs_remove(ctx, top, cut + 1, &e);
                        }
                        aisb_log(ctx, AISB_LOG_INFO, "review: the run changed nothing in the project%s",
                                 removed >= 0 ? "" : " (its empty layer stays: aisb discard removes it)");
                } else
                        aisb_log(ctx, AISB_LOG_WARNING,
                                 "review: %zu path%s changed, kept apart in %s: \"aisb diff\" shows them, \"aisb apply\" "
                                 "takes them into the project, \"aisb discard\" drops them",
                                 k->layer.changes, k->layer.changes == 1 ? "" : "s", k->layer.run);
        }
        if (k->undo.dir_fd >= 0) {
                if (undo_record_end(&k->undo, k->project_fd, &e) < 0)
                        aisb_log(ctx, AISB_LOG_WARNING, "undo: %s", aisb_error_message(e));
                else if (k->undo.changed > 0)
                        aisb_log(ctx, AISB_LOG_INFO, "undo: the run changed %zu path%s; \"aisb undo\" puts them back",
                                 k->undo.changed, k->undo.changed == 1 ? "" : "s");
        }
        aisb_error_free(e);
}

/* After a plain run: the modes the run left that would act for other local users, put right
 * (mode-sweep.h), each named, the first few by path. */
typedef struct mode_report {
        aisb_ctx *ctx;
        const char *project;
        size_t n;
} mode_report;
#define MODES_SHOWN 8

static void mode_found(const char *path, unsigned mode, unsigned what, void *userdata)
{
        mode_report *s = userdata;
        if (++s->n > MODES_SHOWN)
                return;
        const char *did = (what & MODE_SWEEP_SETID) ? ((mode & S_ISUID) ? "setuid" : "setgid")
                          : (what & MODE_SWEEP_WRITABLE) ? "writable by others" : "given an ACL";
        const char *why = (what & MODE_SWEEP_SETID) ? "another local user who ran it would run as you"
                                                     : "another local user could change what your tools read there";
        aisb_log(s->ctx, AISB_LOG_WARNING, "%s/%s was made %s during the run (mode %04o%s): %s, as %s", s->project,
                 path ? path : "(a path too long to show)", did, mode, (what & MODE_SWEEP_ACL) ? ", an ACL" : "",
                 (what & MODE_SWEEP_SETID) ? "the bit is removed" : "put right", why);
}

static void modes_end(aisb_ctx *ctx, const aisb_policy *p, const run_keep *k)
{
        if (k->project_fd < 0 || k->layer.dir_fd >= 0 || !k->created)
                return;
        mode_report report = { .ctx = ctx, .project = p->project };
        aisb_error *e = NULL;
        mode_sweep_result res = {};
        if (mode_sweep(k->project_fd, k->started_ns, mode_found, &report, &res, &e) < 0)
                aisb_log(ctx, AISB_LOG_WARNING, "%s", aisb_error_message(e));
        aisb_error_free(e);
        if (res.changed > MODES_SHOWN)
                aisb_log(ctx, AISB_LOG_WARNING, "%zu more entries the run left setuid, setgid or writable by others "
                         "were put right", res.changed - MODES_SHOWN);
        if (res.skipped)
                aisb_log(ctx, AISB_LOG_WARNING, "%zu director%s deeper than %d or paths longer than %d bytes were not "
                         "looked into for the modes the run left (find . -perm /6002 lists them)", res.skipped,
                         res.skipped == 1 ? "y" : "ies", TREE_MAX_DEPTH, TREE_PATH_MAX);
}

/* A run's state, from its first step to its last end: the plan, and what the steps make. */
typedef struct run_state {
        aisb_ctx *ctx;
        const aisb_policy *p;
        aisb_io *io;
        int *exit_code;
        run_dir rd;
        plan_facts facts;
        run_plan plan;
        run_gate gate;
        run_ask asking;
        char *gate_ca;
        long long log_offset;
        harness_bridge bridge;
        run_keep keep;
        char *id;
        http_stream stream;
        bool gone;          /* the sandbox was removed */
        bool egress_summed; /* the gate's access log was counted into egress */
        egress_summary egress;
} run_state;

static void run_state_done(run_state *s)
{
        run_plan_done(&s->plan);
        plan_facts_done(&s->facts);
        run_dir_remove(&s->rd);
        free(s->gate_ca);
        free(s->id);
}

static int apply_image(run_state *s, aisb_error **err)
{
        step(s->ctx, AISB_STEP_IMAGE);
        return step_done(s->ctx, image_apply(s->ctx, &s->facts.built, NULL, err), err);
}

static int apply_volume(run_state *s, aisb_error **err)
{
        step(s->ctx, AISB_STEP_VOLUME);
        return step_done(s->ctx, ensure_home_volume(s->ctx, &s->plan, err), err);
}

static int apply_network(run_state *s, aisb_error **err)
{
        step(s->ctx, AISB_STEP_NETWORK);
        if (s->p->net == SANDBOX_NET_FULL)
                aisb_log(s->ctx, AISB_LOG_WARNING, "--net full: the sandbox's network is not restricted");
        return 0;
}

/* Fills the gate slot; the run's questions go through the gate it serves. */
static int apply_gate(run_state *s, aisb_error **err)
{
        aisb_ctx *ctx = s->ctx;
        step(ctx, AISB_STEP_GATE);
        s->gate = (run_gate) { .ctx = ctx, .g = GATE_INFO_NULL };
        s->asking = (run_ask) { .ctx = ctx };
        gate_request req = plan_gate_request(s->p, &s->facts);
        int r = step_done(ctx, gate_ensure(ctx, &req, &s->gate.g, err), err);
        if (r < 0)
                return aisb_error_wrap(err, r, "the gate");
        if (s->gate.g.ca_pem && (r = run_dir_write_file(&s->rd, "gate-ca.pem", s->gate.g.ca_pem, &s->gate_ca, err)) < 0)
                return r;
        (void) gate_log_offset(&s->gate.g, &s->log_offset);
        if (s->gate.g.ask_questions_fd >= 0) {
                r = ask_new(ctx, s->p, s->facts.name, s->gate.g.ask_questions_fd, s->gate.g.ask_answers_fd, false,
                            &s->asking.a, err);
                if (r < 0)
                        return r;
                ask_set_control(s->asking.a, s->io->control_fd, s->io->control_fn, s->io->control_userdata);
                ctx->ask = s->asking.a;
        }
        s->facts.gate_port = s->gate.g.port;
        s->facts.gate_key = s->gate.g.client_key;
        s->facts.gate_hash = s->gate.g.hash;
        s->facts.gate_ca = s->gate_ca;
        return 0;
}

/* What the run's requests were, said and recorded, once the sandbox has been; then its
 * questions refused while the gate is still there to pass the answer on, and the gate given
 * back. */
static void end_gate(run_state *s, bool created)
{
        aisb_ctx *ctx = s->ctx;
        if (created && s->asking.a)
                ask_refuse_all(s->asking.a, "end");
        if (created && s->gate.g.name) {
                egress_report(ctx, &s->gate.g, s->log_offset, &s->egress);
                s->egress_summed = true;
                int k = egress_record_write(s->facts.name, &s->gate.g, s->log_offset, &s->facts.net.list, s->asking.a);
                if (k < 0)
                        aisb_log(ctx, AISB_LOG_WARNING, "egress: the run's record was not written: %s", strerror(-k));
        }
        if (created && s->asking.a && ask_refused_unasked(s->asking.a))
                aisb_log(ctx, AISB_LOG_WARNING,
                         "%lu more requests for names no entry lists were refused without asking (too many "
                         "questions at once, or a request too long to ask about); see aisb allow",
                         ask_refused_unasked(s->asking.a));
        run_ask_done(&s->asking);
        run_gate_done(&s->gate);
}

/* Fills the seed slot. */
static int apply_bridge(run_state *s, aisb_error **err)
{
        step(s->ctx, AISB_STEP_BRIDGE);
        int r = harness_bridge_prepare(s->ctx, s->p, &s->rd, &s->bridge, err);
        if (r < 0)
                aisb_error_wrap(err, r, "preparing the sandbox's home (--no-harness-config runs without the harness's "
                                "configuration, --ephemeral-home with a fresh home)");
        s->facts.seed_dir = s->bridge.seed_dir;
        return step_done(s->ctx, r, err);
}

static void end_bridge(run_state *s, bool created)
{
        harness_bridge_done(&s->bridge);
}

/* Fills the layer slot. */
static int apply_keep(run_state *s, aisb_error **err)
{
        s->keep = RUN_KEEP_NULL;
        int r = step_done(s->ctx, keep_begin(s->ctx, s->p, &s->facts, &s->keep, err), err);
        s->facts.review_upper = s->keep.layer.upper;
        s->facts.review_work = s->keep.layer.work;
        s->facts.review_anchor = s->keep.layer.anchor;
        s->facts.review_anchor_ino = s->keep.layer.anchor_ino;
        s->facts.review_anchor_ctime_ns = s->keep.layer.anchor_ctime_ns;
        return r;
}

static void end_keep(run_state *s, bool created)
{
        s->keep.created = created;
        if (created) {
                modes_end(s->ctx, s->p, &s->keep);
                keep_end(s->ctx, &s->keep, s->gone);
        }
        run_keep_done(&s->keep);
}

static int apply_protect(run_state *s, aisb_error **err)
{
        return protect_begin(s->ctx, s->p, &s->facts.protect, err);
}

/* A review run wrote nothing of the project's: nothing to sweep. */
static void end_protect(run_state *s, bool created)
{
        if (created && s->keep.layer.dir_fd < 0)
                protect_end(s->ctx, &s->facts.protect);
}

/* The create body, rendered from the plan with the slots the steps before filled. From the
 * request on, the sandbox may exist: no request is cut short, and a stop removes the sandbox
 * (pump). The body holds every secret value: its text is wiped once sent, and its values with
 * the plan. */
static int apply_create(run_state *s, aisb_error **err)
{
        int r = plan_render(s->p, &s->facts, &s->plan, err);
        if (r < 0)
                return r;
        if (s->plan.patch_warning)
                aisb_log(s->ctx, AISB_LOG_WARNING, "%s", s->plan.patch_warning);
        r = step_done(s->ctx, 0, err);
        if (r < 0)
                return r;
        ctx_cleanup_begin(s->ctx);
        step(s->ctx, AISB_STEP_CREATE);
        r = podman_container_create(s->ctx, s->plan.body, true, &s->id, err);
        return r < 0 ? aisb_error_wrap(err, r, "creating the sandbox") : 0;
}

static void end_create(run_state *s, bool created)
{
        if (!created)
                return;
        step(s->ctx, AISB_STEP_REMOVE);
        s->gone = podman_sandbox_remove(s->ctx, s->id) >= 0;
}

static int apply_attach(run_state *s, aisb_error **err)
{
        s->stream = HTTP_STREAM_NULL;
        return podman_container_attach(s->ctx, s->id, &s->stream, err);
}

static void end_attach(run_state *s, bool created)
{
        http_stream_done(&s->stream);
}

/* The attach made the container (and its pty): sized now, the command's first look at its
 * terminal already sees the user's size, and no late SIGWINCH interrupts it. */
static int apply_start(run_state *s, aisb_error **err)
{
        aisb_io *io = s->io;
        bool sized = io->terminal && podman_container_resize(s->ctx, s->id, io->rows, io->cols) == 0;
        step(s->ctx, AISB_STEP_START);
        int r = podman_container_start(s->ctx, s->id, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "starting the sandbox");
        if (io->terminal && !sized)
                (void) podman_container_resize(s->ctx, s->id, io->rows, io->cols);
        return 0;
}

static int apply_stream(run_state *s, aisb_error **err)
{
        step(s->ctx, AISB_STEP_STREAM);
        int r = stream_pump(s->ctx, s->io, s->id, &s->stream, err);
        return r == -ECANCELED ? aisb_error_set(err, r, "stopped: the sandbox was removed") : r;
}

static int apply_wait(run_state *s, aisb_error **err)
{
        int r = podman_container_wait(s->ctx, s->id, s->exit_code, err);
        if (r == -ECONNREFUSED || r == -EIO)
                aisb_error_wrap(err, r, "lost the podman service during the run");
        return r;
}

/* The executor's half of each step (plan.h has the plan's): its effect, and its end, which
 * runs on every way out once the effect succeeded, told whether the sandbox was created. */
static const struct {
        int (*apply)(run_state *s, aisb_error **err);
        void (*end)(run_state *s, bool created);
} step_ops[_PLAN_STEP_MAX] = {
        [PLAN_STEP_IMAGE] = { apply_image },       [PLAN_STEP_VOLUME] = { apply_volume },
        [PLAN_STEP_NETWORK] = { apply_network },   [PLAN_STEP_GATE] = { apply_gate, end_gate },
        [PLAN_STEP_BRIDGE] = { apply_bridge, end_bridge }, [PLAN_STEP_KEEP] = { apply_keep, end_keep },
        [PLAN_STEP_PROTECT] = { apply_protect, end_protect }, [PLAN_STEP_CREATE] = { apply_create, end_create },
        [PLAN_STEP_ATTACH] = { apply_attach, end_attach }, [PLAN_STEP_START] = { apply_start },
        [PLAN_STEP_STREAM] = { apply_stream },     [PLAN_STEP_WAIT] = { apply_wait },
};

static int run(aisb_ctx *ctx, const aisb_policy *p, aisb_io *io, int *ret_exit_code, aisb_error **err)
{
        /* A dry run makes the plan as a run does, from what is known without the service,
         * and renders its steps: nothing is sent, started or written. A run connects first:
         * the plan depends on the service's version. */
        bool dry = ctx->dry_run_fn;
        int r = dry ? 0 : aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        /* The facts, once (the run's checks first); the plan built from them before anything
         * is made, so that a plan the policy cannot have is refused first. */
        _cleanup_(run_state_done) run_state s = { .ctx = ctx, .p = p, .io = io, .exit_code = ret_exit_code,
                                                   .rd = RUN_DIR_NULL };
        r = dry ? 0 : run_dir_create(&s.rd, err);
        if (r >= 0)
                r = plan_gather(p,
                                &(plan_gather_options) { .purpose = dry ? PLAN_DRY_RUN : PLAN_RUN, .run_dir = &s.rd,
                                                         .podman_major = ctx->connected ? ctx->version_major : 0,
                                                         .terminal = io->terminal },
                                &s.facts, err);
        if (r >= 0)
                r = plan_build(p, &s.facts, &s.plan, err);
        if (r < 0)
                return r;
        if (dry) {
                if (s.plan.patch_warning)
                        aisb_log(ctx, AISB_LOG_WARNING, "%s", s.plan.patch_warning);
                *ret_exit_code = 0;
                _cleanup_strv_free_ char **requests = NULL;
                if (plan_requests(p, &s.plan, &s.facts, &requests) < 0)
                        return error_oom(err);
                for (size_t i = 0; requests[i]; i++)
                        ctx->dry_run_fn(requests[i], ctx->dry_run_userdata);
                return 0;
        }
        /* The steps in order; on any way out, the ends of those begun, in reverse (a failed
         * step's too: it undoes what the step made before it failed). */
        size_t done = 0;
        bool created = false;
        while (done < s.plan.n_steps) {
                plan_step step = s.plan.steps[done++];
                r = step_ops[step].apply(&s, err);
                if (r < 0)
                        break;
                created = created || step == PLAN_STEP_CREATE;
        }
        while (done-- > 0)
                if (step_ops[s.plan.steps[done]].end)
                        step_ops[s.plan.steps[done]].end(&s, created);
        if (created)
                (void) session_log_append(p, &s.facts, &s.plan, r < 0 ? -1 : *ret_exit_code,
                                          s.egress_summed ? &s.egress : NULL);
        return r;
}

int aisb_run(aisb_ctx *ctx, const aisb_policy *p, aisb_io *io, int *ret_exit_code,
             aisb_error **err)
{
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        /* Until the create request, a stop (the control callback's, or aisb_ctx_cancel) ends
         * the run at once: nothing to remove yet. */
        ctx->stop_fn = control_says_stop;
        ctx->stop_userdata = io;
        _cleanup_(control_watch_end) _unused_ aisb_ctx *watching = ctx;
        return run(ctx, p, io, ret_exit_code, err);
}

static int on_timer(aisb_control_request *request, void *userdata)
{
        uint64_t expirations;
        return read(request->fd, &expirations, sizeof expirations) == sizeof expirations ? AISB_CONTROL_STOP
                                                                                          : AISB_CONTROL_NONE;
}

int run_capture_stdout(const aisb_output *output, void *userdata)
{
        run_capture *c = userdata;
        if (output->stream != AISB_STREAM_STDOUT)
                return 0;
        size_t size = output->size;
        if (c->b.size + size > c->max) {
                c->truncated = true;
                size = c->max > c->b.size ? c->max - c->b.size : 0;
        }
        return size ? buffer_append(&c->b, output->data, size) : 0;
}

int run_captured(aisb_ctx *ctx, const aisb_policy *q, long timeout, aisb_output_fn fn,
                 void *userdata, int *ret_code, aisb_error **err)
{
        _cleanup_close_ int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct itimerspec when = { .it_value = { .tv_sec = timeout } };
        if (timer < 0 || timerfd_settime(timer, 0, &when, NULL) < 0)
                return aisb_error_set(err, -errno, "timerfd: %s", strerror(errno));
        aisb_io io = { .in_fd = -1, .output_fn = fn, .output_userdata = userdata,
                       .control_fd = timer, .control_fn = on_timer };
        int r = aisb_run(ctx, q, &io, ret_code, err);
        /* Stopped by the timer (a one-shot timer that fired is disarmed), not by a cancel. */
        struct itimerspec left;
        if (r == -ECANCELED && timerfd_gettime(timer, &left) == 0 && left.it_value.tv_sec == 0 &&
            left.it_value.tv_nsec == 0) {
                aisb_error_free(err ? steal_pointer(err) : NULL);
                return aisb_error_set(err, -ETIMEDOUT, "the sandbox did not finish within %ld s, and was removed",
                                      timeout);
        }
        return r;
}
