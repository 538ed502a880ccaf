/* SPDX-License-Identifier: MIT */
/*
 * The attach handshake's response head (http_hijack reads it itself, after libcurl has only
 * connected): the input is the service's whole answer, served by a thread over a unix
 * socket, then the stream data that came with the head goes through the demultiplexer as
 * run.c does. One connection per input: a thread accepts it, reads the request head, writes
 * the input, closes its side and waits for the client to close.
 * Checked: a refusal is one line that says "attach"; a success needs a status line and
 * leaves as leftover only bytes that followed the head, in order; nothing hangs (the server
 * always closes, so a head without an end is an error, not a wait).
 */
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "internal.h"
#include "fuzz.h"

static char socket_dir[] = "/tmp/aisb-fuzz-hijack-XXXXXX";
static char socket_path[sizeof socket_dir + 16];
static int listen_fd = -1;

static void cleanup(void)
{
        (void) unlink(socket_path);
        (void) rmdir(socket_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        if (listen_fd >= 0)
                return 0;
        if (!mkdtemp(socket_dir))
                abort();
        snprintf(socket_path, sizeof socket_path, "%s/sock", socket_dir);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_path);
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &a, sizeof a) < 0 ||
            listen(listen_fd, 4) < 0)
                abort();
        atexit(cleanup);
        return 0;
}

typedef struct reply {
        const uint8_t *data;
        size_t size;
} reply;

static void *serve(void *userdata)
{
        const reply *rep = userdata;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                abort();
        /* The request head first, so the client is reading when the answer comes. */
        char head[4096];
        size_t have = 0;
        while (have < sizeof head - 1) {
                ssize_t n = recv(fd, head + have, sizeof head - 1 - have, 0);
                if (n <= 0)
                        break;
                have += (size_t) n;
                head[have] = 0;
                if (strstr(head, "\r\n\r\n"))
                        break;
        }
        for (size_t sent = 0; sent < rep->size;) {
                ssize_t n = send(fd, rep->data + sent, rep->size - sent, MSG_NOSIGNAL);
                if (n <= 0)
                        break; /* the client gave up early: fine */
                sent += (size_t) n;
        }
        (void) shutdown(fd, SHUT_WR);
        while (recv(fd, head, sizeof head, 0) > 0)
                ;
        close(fd);
        return NULL;
}

static int discard(int stream, const void *data, size_t size, void *userdata)
{
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* http_hijack reads at most 64 KiB of head; more only tests the socket buffer. */
        if (size > 65536)
                return 0;
        LLVMFuzzerInitialize(NULL, NULL);
        reply rep = { .data = data, .size = size };
        pthread_t server;
        if (pthread_create(&server, NULL, serve, &rep) != 0)
                abort();

        http_conn conn = { .socket_path = socket_path };
        http_stream s = HTTP_STREAM_NULL;
        aisb_error *err = NULL;
        int r = http_hijack(&conn, "/v4.0.0/libpod/containers/x/attach?stream=true", NULL, &s, &err);
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)) &&
                           strstr(aisb_error_message(err), "attach"));
                aisb_error_free(err);
        } else {
                FUZZ_CHECK(!err && s.fd >= 0);
                const uint8_t *end = memmem(data, size, "\r\n\r\n", 4);
                FUZZ_CHECK(end && size >= 7 && memcmp(data, "HTTP/1.", 7) == 0);
                /* What came with the head: a prefix of the rest (the socket may split it). */
                size_t head = (size_t) (end + 4 - data);
                FUZZ_CHECK(s.leftover.size <= size - head);
                FUZZ_CHECK(s.leftover.size == 0 ||
                           memcmp(s.leftover.data, data + head, s.leftover.size) == 0);
                demux d = {};
                (void) demux_feed(&d, s.leftover.data, s.leftover.size, discard, NULL);
        }
        http_stream_done(&s);
        pthread_join(server, NULL);
        return 0;
}
