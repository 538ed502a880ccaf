/* SPDX-License-Identifier: MIT */
/*
 * A run's I/O (aisb_io) and the attach stream between the sandbox and it. The loop never
 * blocks on one direction: stdin is forwarded only as fast as the service takes it, and
 * output is read all the while, so a command that fills its output pipe cannot deadlock
 * against us. Questions (ask) and the control callback are served between reads.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "ask.h"
#include "podman.h"
#include "service.h"
#include "stream.h"
#include "fileio.h"
#include "termfilter.h"

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
}/* Whether the sandbox's terminal shows its alternate screen: the last of CSI ?1049, ?1047
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

/* One pump's state, on its caller's stack: runs in two threads of one process each have
 * their own. */
typedef struct pump {
        aisb_ctx *ctx;
        aisb_io *io;
        const char *id;
        http_stream *s;
        demux d;
        out_batch batch;
        termfilter filters[2];
        screen_track screen;
        char in_buf[65536];
        size_t in_size, in_off;
        char *out_buf;
        size_t out_size;
        bool stdin_open, write_closed, cancelled;
        unsigned short rows, cols;
        struct pollfd fds[6];
        int in_index, control_index, wake_index, ask_index, socket_index;
} pump;

static void pump_close_write(pump *p)
{
        (void) shutdown(p->s->fd, SHUT_WR);
        p->write_closed = true;
}

static int pump_add(pump *p, nfds_t *n, int fd)
{
        p->fds[*n] = (struct pollfd) { .fd = fd, .events = POLLIN };
        return (int) (*n)++;
}

/* What this turn waits on: the stream (writable while stdin waits to go), stdin when its
 * last read is sent, the control callback, a cancel's wake, the ask's descriptors. */
static nfds_t pump_poll_set(pump *p)
{
        nfds_t n = 0;
        p->fds[n++] = (struct pollfd) {
                .fd = p->s->fd, .events = POLLIN | (p->in_off < p->in_size ? POLLOUT : 0)
        };
        p->in_index = p->control_index = p->wake_index = p->ask_index = p->socket_index = -1;
        if (p->stdin_open && p->in_off == p->in_size)
                p->in_index = pump_add(p, &n, p->io->in_fd);
        if (p->io->control_fd >= 0 && p->io->control_fn)
                p->control_index = pump_add(p, &n, p->io->control_fd);
        if (!p->cancelled)
                p->wake_index = pump_add(p, &n, p->ctx->wake_fd);
        int ask_fd = -1, socket_fd = -1;
        if (p->ctx->ask)
                ask_poll_fds(p->ctx->ask, &ask_fd, &socket_fd);
        if (ask_fd >= 0)
                p->ask_index = pump_add(p, &n, ask_fd);
        if (socket_fd >= 0)
                p->socket_index = pump_add(p, &n, socket_fd);
        return n;
}

static bool pump_ready(const pump *p, int index)
{
        return index >= 0 && (p->fds[index].revents & POLLIN);
}

static void pump_resize(pump *p, unsigned short rows, unsigned short cols)
{
        (void) podman_container_resize(p->ctx, p->id, rows, cols);
}

/* A cancel, or the control callback's stop or resize. A stop removes the container, which
 * ends the stream; reading goes on so what it printed last still arrives. */
static void pump_control(pump *p)
{
        bool stop = pump_ready(p, p->wake_index) && atomic_load(&p->ctx->cancel_requested);
        if (pump_ready(p, p->control_index)) {
                aisb_control_request request = { .fd = p->io->control_fd };
                int c = p->io->control_fn(&request, p->io->control_userdata);
                if (c == AISB_CONTROL_RESIZE && p->io->terminal) {
                        pump_resize(p, request.rows, request.cols);
                        p->rows = request.rows;
                        p->cols = request.cols;
                }
                stop |= c == AISB_CONTROL_STOP;
        }
        if (stop && !p->cancelled) {
                p->cancelled = true;
                p->ctx->stopping = true;
                (void) podman_sandbox_remove(p->ctx, p->id);
        }
}

/* Questions between reads: while the event callback asks, the sandbox's output and the
 * user's keys wait. */
static void pump_ask(pump *p)
{
        bool asked = ask_process(p->ctx->ask, pump_ready(p, p->ask_index), pump_ready(p, p->socket_index));
        /* A resize read while the question was shown. */
        if (ask_take_resize(p->ctx->ask, &p->rows, &p->cols) && p->io->terminal)
                pump_resize(p, p->rows, p->cols);
        if (p->ctx->ask_redraw && p->io->terminal && p->rows > 1) {
                pump_resize(p, p->rows - 1, p->cols);
                pump_resize(p, p->rows, p->cols);
        }
        p->ctx->ask_redraw = false;
        /* The caller may have read the keys it polled for: polled again. */
        if (asked && p->in_index >= 0)
                p->fds[p->in_index].revents = 0;
}

/* stdin to the stream, as fast as the service takes it. */
static void pump_stdin(pump *p)
{
        if (p->in_index >= 0 && (p->fds[p->in_index].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t got = read(p->io->in_fd, p->in_buf, sizeof p->in_buf);
                if (got < 0 && errno != EINTR && errno != EAGAIN)
                        got = 0;
                if (got == 0) {
                        p->stdin_open = false;
                        /* A terminal's EOF is the ^D byte it already sent; a pipe's is a
                         * half-close the service passes on. */
                        if (!p->io->terminal && !p->write_closed)
                                pump_close_write(p);
                } else if (got > 0) {
                        p->in_size = (size_t) got;
                        p->in_off = 0;
                }
        }
        if (p->in_off < p->in_size && (p->fds[0].revents & POLLOUT)) {
                ssize_t w = send(p->s->fd, p->in_buf + p->in_off, p->in_size - p->in_off, MSG_NOSIGNAL);
                if (w > 0)
                        p->in_off += (size_t) w;
                else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                        /* The command stopped reading stdin; output may continue. */
                        p->in_off = p->in_size = 0;
                        p->stdin_open = false;
                }
        }
}

/* The stream's output to wherever it goes: 1 when the service closed the stream. */
static int pump_output(pump *p, aisb_error **err)
{
        if (!(p->fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
                return 0;
        ssize_t got = recv(p->s->fd, p->out_buf, p->out_size, 0);
        if (got < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                return aisb_error_set(err, -errno, "attach stream: %s", strerror(errno));
        }
        if (got == 0)
                return 1;
        if (p->io->terminal && p->ctx->ask) {
                screen_track_feed(&p->screen, p->out_buf, (size_t) got);
                ask_set_alternate_screen(p->ctx->ask, p->screen.alternate);
        }
        int r = deliver_read(p->io, &p->d, &p->batch, p->filters, p->out_buf, (size_t) got);
        if (r == -EBADMSG)
                return aisb_error_set(err, r, "attach stream: malformed frame from the service");
        if (r < 0)
                return aisb_error_set(err, r, "writing output: %s", strerror(-r));
        return 0;
}

int stream_pump(aisb_ctx *ctx, aisb_io *io, const char *id, http_stream *s, aisb_error **err)
{
        _cleanup_free_ pump *p = calloc(1, sizeof *p);
        if (!p)
                return error_oom(err);
        *p = (pump) { .ctx = ctx, .io = io, .id = id, .s = s, .out_size = 256 * 1024,
                      .stdin_open = io->in_fd >= 0, .rows = io->rows, .cols = io->cols };
        if (s->leftover.size > 0) {
                int r = deliver_read(io, &p->d, &p->batch, p->filters, s->leftover.data, s->leftover.size);
                if (r < 0)
                        return aisb_error_set(err, r, "attach stream: %s", strerror(-r));
        }
        if (!p->stdin_open && !io->terminal)
                pump_close_write(p);
        _cleanup_free_ char *out_buf = p->out_buf = malloc(p->out_size);
        if (!out_buf)
                return error_oom(err);
        for (;;) {
                nfds_t n = pump_poll_set(p);
                if (poll(p->fds, n, ctx->ask ? ask_poll_timeout_ms(ctx->ask) : -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return aisb_error_set(err, -errno, "poll: %s", strerror(errno));
                }
                pump_control(p);
                if (ctx->ask)
                        pump_ask(p);
                pump_stdin(p);
                int r = pump_output(p, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
        }
        if (p->d.have || p->d.remaining)
                return aisb_error_set(err, -EBADMSG,
                                      "the attach stream ended inside a frame (the podman service died?)");
        return p->cancelled ? -ECANCELED : 0;
}
