/* SPDX-License-Identifier: MIT */
/*
 * One sandboxed run: image, create, attach, start, stream, wait, remove. Attaching comes
 * before start so no early output is lost. The stream loop never blocks on one direction:
 * stdin is forwarded only as fast as the service takes it, and output is read all the
 * while, so a command that fills its output pipe cannot deadlock against us.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
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
#include "termfilter.h"
#include "userdirs.h"
#include "fileio.h"
#include "digest.h"
#include "review.h"
#include "tree-walk.h"
#include "undo.h"

int aisb_io_new(aisb_io **ret_io, aisb_error **err)
{
        aisb_io *io = calloc(1, sizeof *io);
        if (!io)
                return error_oom(err);
        io->in_fd = STDIN_FILENO;
        io->control_fd = -1;
        *ret_io = io;
        return 0;
}

void aisb_io_free(aisb_io *io)
{
        free(io);
}

void aisb_io_set_stdin(aisb_io *io, int in_fd)
{
        io->in_fd = in_fd;
}

void aisb_io_set_output_fn(aisb_io *io, aisb_output_fn fn, void *userdata)
{
        io->output_fn = fn;
        io->output_userdata = userdata;
}

void aisb_io_set_output_filter(aisb_io *io, unsigned streams)
{
        io->filter_streams = streams & (AISB_STREAM_STDOUT | AISB_STREAM_STDERR);
}

void aisb_io_set_terminal(aisb_io *io, unsigned short rows, unsigned short cols)
{
        io->terminal = true;
        io->rows = rows;
        io->cols = cols;
}

void aisb_io_set_control(aisb_io *io, int fd, aisb_control_fn fn, void *userdata)
{
        io->control_fd = fd;
        io->control_fn = fn;
        io->control_userdata = userdata;
}

int demux_feed(demux *d, const void *data, size_t size,
               int (*fn)(int stream, const void *data, size_t size, void *userdata),
               void *userdata)
{
        const uint8_t *p = data;
        while (size > 0) {
                if (d->remaining == 0) {
                        size_t take = sizeof d->header - d->have;
                        if (take > size)
                                take = size;
                        memcpy(d->header + d->have, p, take);
                        d->have += take;
                        p += take;
                        size -= take;
                        if (d->have < sizeof d->header)
                                return 0;
                        d->have = 0;
                        if (d->header[0] > 2 || d->header[1] || d->header[2] || d->header[3])
                                return -EBADMSG;
                        d->stream = d->header[0] == 0 ? AISB_STREAM_STDOUT : d->header[0];
                        d->remaining = (uint32_t) d->header[4] << 24 | (uint32_t) d->header[5] << 16 |
                                       (uint32_t) d->header[6] << 8 | d->header[7];
                        continue;
                }
                size_t take = d->remaining < size ? d->remaining : size;
                int r = fn(d->stream, p, take, userdata);
                if (r < 0)
                        return r;
                d->remaining -= (uint32_t) take;
                p += take;
                size -= take;
        }
        return 0;
}

static int default_output(int stream, const void *data, size_t size, void *userdata)
{
        return write_all(stream == AISB_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO, data, size);
}

static int deliver(aisb_io *io, int stream, const void *data, size_t size)
{
        if (io->output_fn)
                return io->output_fn(&(aisb_output) { .stream = stream, .data = data, .size = size },
                                     io->output_userdata);
        return default_output(stream, data, size, NULL);
}

static int deliver_cb(int stream, const void *data, size_t size, void *userdata)
{
        return deliver(userdata, stream, data, size);
}

/* Output to our own stdout/stderr, gathered: the frames of one read (podman sends 8 KiB
 * each) leave in one writev per run of the same stream, not one write per frame. Holds
 * pointers into the read buffer until batch_flush(). */
typedef struct out_batch {
        int stream;
        size_t n;
        struct iovec iov[256];
} out_batch;

static int batch_flush(out_batch *b)
{
        if (b->n == 0)
                return 0;
        int r = writev_all(b->stream == AISB_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO, b->iov, b->n);
        b->n = 0;
        return r;
}

static int batch_add(int stream, const void *data, size_t size, void *userdata)
{
        out_batch *b = userdata;
        if (b->n > 0 && (b->stream != stream || b->n == ELEMENTSOF(b->iov))) {
                int r = batch_flush(b);
                if (r < 0)
                        return r;
        }
        b->stream = stream;
        b->iov[b->n++] = (struct iovec) { (void *) data, size };
        return 0;
}

/* Output on its way through the terminal filters (aisb_io_set_output_filter): what passes
 * goes where the stream would have gone, into the batch or to the output callback. */
typedef struct filtered {
        aisb_io *io;
        out_batch *batch;     /* NULL: to the output callback */
        termfilter *filters;  /* stdout's, stderr's: the state of one run */
        int stream;
} filtered;

static int filtered_piece(const void *data, size_t size, void *userdata)
{
        filtered *t = userdata;
        if (t->batch)
                return batch_add(t->stream, data, size, t->batch);
        return t->io->output_fn(&(aisb_output) { .stream = t->stream, .data = data, .size = size },
                                t->io->output_userdata);
}

static int filtered_frame(int stream, const void *data, size_t size, void *userdata)
{
        filtered *t = userdata;
        if (!(t->io->filter_streams & (unsigned) stream))
                return t->batch ? batch_add(stream, data, size, t->batch)
                                : deliver(t->io, stream, data, size);
        t->stream = stream;
        return termfilter_feed(&t->filters[stream == AISB_STREAM_STDERR], data, size,
                               filtered_piece, t);
}

/* One read of the attach stream to wherever output goes. Unfiltered output takes the paths
 * it always took (a file gets writev batches untouched by the filter). */
static int deliver_read(aisb_io *io, demux *d, out_batch *batch, termfilter filters[2],
                        const void *data, size_t size)
{
        if (io->filter_streams) {
                filtered t = { .io = io, .batch = io->output_fn ? NULL : batch, .filters = filters };
                int r = io->terminal ? filtered_frame(AISB_STREAM_STDOUT, data, size, &t)
                                     : demux_feed(d, data, size, filtered_frame, &t);
                int f = batch_flush(batch);
                return r < 0 ? r : f;
        }
        if (io->terminal)
                return deliver(io, AISB_STREAM_STDOUT, data, size);
        if (io->output_fn)
                return demux_feed(d, data, size, deliver_cb, io);
        int r = demux_feed(d, data, size, batch_add, batch);
        int f = batch_flush(batch);
        return r < 0 ? r : f;
}

/* --unsafe-create-patch: every field it changed named, with what that gives up, on every
 * run. */
static void report_create_patch(aisb_ctx *ctx, char *const *changed)
{
        if (!changed)
                return;
        _cleanup_(buffer_free) buffer names = {};
        _cleanup_(buffer_free) buffer rows = {};
        int r = 0;
        for (size_t i = 0; changed[i]; i++) {
                const char *field = changed[i];
                const char *gives_up = create_patch_gives_up(field);
                r |= buffer_printf(&names, "%s%s", i ? ", " : "", field);
                if (!gives_up)
                        r |= buffer_printf(&rows, "; %s is unknown to aisb (podman ignores what it does not know: "
                                                  "check it applied)", field);
                else if (*gives_up && !strstr(rows.data ? rows.data : "", gives_up))
                        r |= buffer_printf(&rows, "; gives up %s", gives_up);
        }
        aisb_log(ctx, AISB_LOG_WARNING, "--unsafe-create-patch changes %s%s",
                 r >= 0 && names.data ? names.data : "fields (out of memory naming them)",
                 r >= 0 && rows.data ? rows.data : "");
}

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

static int remove_container(aisb_ctx *ctx, const char *id)
{
        aisb_error *e = NULL;
        int r = podman_container_remove(ctx, id, &e);
        if (r < 0)
                aisb_log(ctx, AISB_LOG_WARNING, "could not remove sandbox %s (\"aisb clean\" will): %s",
                         id, aisb_error_message(e));
        aisb_error_free(e);
        return r;
}

/* Whether the sandbox's terminal shows its alternate screen: the last of CSI ?1049, ?1047
 * or ?47 with h or l in its output, followed across reads. */
typedef struct screen_track {
        enum { SCREEN_GROUND, SCREEN_ESC, SCREEN_CSI, SCREEN_PRIVATE } state;
        unsigned param;
        bool alternate_param; /* one of the parameters so far was 1049, 1047 or 47 */
        bool alternate;
} screen_track;

static void screen_track_feed(screen_track *t, const char *data, size_t size)
{
        for (size_t i = 0; i < size; i++) {
                unsigned char c = (unsigned char) data[i];
                switch (t->state) {
                case SCREEN_GROUND:
                        if (c == 0x1b)
                                t->state = SCREEN_ESC;
                        break;
                case SCREEN_ESC:
                        t->state = c == '[' ? SCREEN_CSI : c == 0x1b ? SCREEN_ESC : SCREEN_GROUND;
                        break;
                case SCREEN_CSI:
                        t->state = c == '?' ? SCREEN_PRIVATE : SCREEN_GROUND;
                        t->param = 0;
                        t->alternate_param = false;
                        break;
                case SCREEN_PRIVATE:
                        if (c >= '0' && c <= '9') {
                                t->param = t->param < 100000 ? t->param * 10 + (c - '0') : t->param;
                                break;
                        }
                        t->alternate_param |= t->param == 1049 || t->param == 1047 || t->param == 47;
                        t->param = 0;
                        if (c == ';')
                                break;
                        if ((c == 'h' || c == 'l') && t->alternate_param)
                                t->alternate = c == 'h';
                        t->state = c == 0x1b ? SCREEN_ESC : SCREEN_GROUND;
                        break;
                }
        }
}

/* Stream until the service closes the attach connection. Returns -ECANCELED when the
 * control callback asked to stop. */
static int pump(aisb_ctx *ctx, aisb_io *io, const char *id, http_stream *s, aisb_error **err)
{
        demux d = {};
        out_batch batch = {};
        termfilter filters[2] = {};
        int r;
        if (s->leftover.size > 0) {
                r = deliver_read(io, &d, &batch, filters, s->leftover.data, s->leftover.size);
                if (r < 0)
                        return aisb_error_set(err, r, "attach stream: %s", strerror(-r));
        }
        bool stdin_open = io->in_fd >= 0;
        bool write_closed = false;
        if (!stdin_open && !io->terminal) {
                (void) shutdown(s->fd, SHUT_WR);
                write_closed = true;
        }
        char in_buf[65536];
        size_t in_size = 0, in_off = 0;
        /* Per call, never static: runs in two threads of one process each have their own. */
        const size_t out_size = 256 * 1024;
        _cleanup_free_ char *out_buf = malloc(out_size);
        if (!out_buf)
                return error_oom(err);
        bool cancelled = false;
        screen_track screen = {};
        unsigned short rows = io->rows, cols = io->cols;

        for (;;) {
                struct pollfd fds[6];
                nfds_t n = 0;
                fds[n++] = (struct pollfd) {
                        .fd = s->fd, .events = POLLIN | (in_off < in_size ? POLLOUT : 0)
                };
                int in_index = -1, control_index = -1, wake_index = -1;
                if (stdin_open && in_off == in_size) {
                        in_index = (int) n;
                        fds[n++] = (struct pollfd) { .fd = io->in_fd, .events = POLLIN };
                }
                if (io->control_fd >= 0 && io->control_fn) {
                        control_index = (int) n;
                        fds[n++] = (struct pollfd) { .fd = io->control_fd, .events = POLLIN };
                }
                if (!cancelled) {
                        wake_index = (int) n;
                        fds[n++] = (struct pollfd) { .fd = ctx->wake_fd, .events = POLLIN };
                }
                int ask_index = -1, socket_index = -1, ask_fd = -1, socket_fd = -1;
                if (ctx->ask)
                        ask_poll_fds(ctx->ask, &ask_fd, &socket_fd);
                if (ask_fd >= 0) {
                        ask_index = (int) n;
                        fds[n++] = (struct pollfd) { .fd = ask_fd, .events = POLLIN };
                }
                if (socket_fd >= 0) {
                        socket_index = (int) n;
                        fds[n++] = (struct pollfd) { .fd = socket_fd, .events = POLLIN };
                }
                if (poll(fds, n, ctx->ask ? ask_poll_timeout_ms(ctx->ask) : -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return aisb_error_set(err, -errno, "poll: %s", strerror(errno));
                }
                bool stop = wake_index >= 0 && (fds[wake_index].revents & POLLIN) &&
                            atomic_load(&ctx->cancel_requested);
                if (control_index >= 0 && (fds[control_index].revents & POLLIN)) {
                        aisb_control_request request = { .fd = io->control_fd };
                        int c = io->control_fn(&request, io->control_userdata);
                        if (c == AISB_CONTROL_RESIZE && io->terminal) {
                                (void) podman_container_resize(ctx, id, request.rows, request.cols);
                                rows = request.rows;
                                cols = request.cols;
                        }
                        stop |= c == AISB_CONTROL_STOP;
                }
                if (stop && !cancelled) {
                        cancelled = true;
                        ctx->stopping = true;
                        /* Removing the container ends the stream; keep reading so what it
                         * printed last still arrives. */
                        (void) remove_container(ctx, id);
                }
                /* Questions between reads: while the event callback asks, the sandbox's
                 * output and the user's keys wait. */
                if (ctx->ask) {
                        bool asked = ask_process(ctx->ask, ask_index >= 0 && (fds[ask_index].revents & POLLIN),
                                                 socket_index >= 0 && (fds[socket_index].revents & POLLIN));
                        /* A resize read while the question was shown. */
                        if (ask_take_resize(ctx->ask, &rows, &cols) && io->terminal)
                                (void) podman_container_resize(ctx, id, rows, cols);
                        if (ctx->ask_redraw && io->terminal && rows > 1) {
                                (void) podman_container_resize(ctx, id, rows - 1, cols);
                                (void) podman_container_resize(ctx, id, rows, cols);
                        }
                        ctx->ask_redraw = false;
                        /* The caller may have read the keys it polled for: polled again. */
                        if (asked && in_index >= 0)
                                fds[in_index].revents = 0;
                }
                if (in_index >= 0 && (fds[in_index].revents & (POLLIN | POLLHUP | POLLERR))) {
                        ssize_t got = read(io->in_fd, in_buf, sizeof in_buf);
                        if (got < 0 && errno != EINTR && errno != EAGAIN)
                                got = 0;
                        if (got == 0) {
                                stdin_open = false;
                                /* A terminal's EOF is the ^D byte it already sent; a pipe's
                                 * is a half-close the service passes on. */
                                if (!io->terminal && !write_closed) {
                                        (void) shutdown(s->fd, SHUT_WR);
                                        write_closed = true;
                                }
                        } else if (got > 0) {
                                in_size = (size_t) got;
                                in_off = 0;
                        }
                }
                if (in_off < in_size && (fds[0].revents & POLLOUT)) {
                        ssize_t w = send(s->fd, in_buf + in_off, in_size - in_off, MSG_NOSIGNAL);
                        if (w > 0)
                                in_off += (size_t) w;
                        else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                                /* The command stopped reading stdin; output may continue. */
                                in_off = in_size = 0;
                                stdin_open = false;
                        }
                }
                if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        ssize_t got = recv(s->fd, out_buf, out_size, 0);
                        if (got < 0) {
                                if (errno == EAGAIN || errno == EINTR)
                                        continue;
                                return aisb_error_set(err, -errno, "attach stream: %s",
                                                      strerror(errno));
                        }
                        if (got == 0)
                                break;
                        if (io->terminal && ctx->ask) {
                                screen_track_feed(&screen, out_buf, (size_t) got);
                                ask_set_alternate_screen(ctx->ask, screen.alternate);
                        }
                        r = deliver_read(io, &d, &batch, filters, out_buf, (size_t) got);
                        if (r == -EBADMSG)
                                return aisb_error_set(err, r, "attach stream: malformed frame from the service");
                        if (r < 0)
                                return aisb_error_set(err, r, "writing output: %s", strerror(-r));
                }
        }
        if (d.have || d.remaining)
                return aisb_error_set(err, -EBADMSG,
                                      "the attach stream ended inside a frame (the podman service died?)");
        return cancelled ? -ECANCELED : 0;
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
static int keep_begin(aisb_ctx *ctx, const aisb_policy *p, const char *name, run_keep *k, aisb_error **err)
{
        if (!p->project || p->project_read_only)
                return 0;
        int r = project_open(p->project, p->project_is_cwd, err);
        if (r < 0)
                return r;
        k->project_fd = r;
        if (plan_reviews(p)) {
                _cleanup_(buffer_free) buffer list = {};
                for (size_t i = 0; p->protect && p->protect[i]; i++)
                        if (buffer_printf(&list, "%s%s", i ? "," : "", p->protect[i]) < 0)
                                return error_oom(err);
                return review_layer_create(p->project, k->project_fd, name, list.data ? list.data : "", &k->layer, err);
        }
        struct timespec now;
        (void) clock_gettime(CLOCK_REALTIME_COARSE, &now);
        k->started_ns = (long long) now.tv_sec * 1000000000LL + now.tv_nsec;
        const char *why = NULL;
        r = undo_record_begin(ctx, p->project, k->project_fd, name, p->undo, &k->undo, &why, err);
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
        int r = step_done(s->ctx, keep_begin(s->ctx, s->p, s->facts.name, &s->keep, err), err);
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
        int r = plan_render(&s->facts, &s->plan, err);
        if (r < 0)
                return r;
        report_create_patch(s->ctx, s->plan.patched);
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
        s->gone = remove_container(s->ctx, s->id) >= 0;
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
        int r = pump(s->ctx, s->io, s->id, &s->stream, err);
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
                report_create_patch(ctx, s.plan.patched);
                *ret_exit_code = 0;
                _cleanup_strv_free_ char **requests = NULL;
                if (plan_requests(&s.plan, &s.facts, &requests) < 0)
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
                (void) session_log_append(p, s.facts.name, s.plan.image, s.plan.policy_hash, r < 0 ? -1 : *ret_exit_code,
                                          (const char *const *) s.plan.patched, s.egress_summed ? &s.egress : NULL);
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
