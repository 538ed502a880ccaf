/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "allowlist.h"
#include "ask.h"
#include "gate-squid.h"
#include "jsonutil.h"
#include "userdirs.h"
#include "util.h"

#define ASK_LINE_MAX 1024
/* What aisb ask may send: one short line, read within this long. */
#define ASK_CLIENT_LINE_MAX 256
/* How long one pass over the socket may wait for its clients, all together: a client that
 * connects and sends nothing holds the sandbox's output no longer than this. */
#define ASK_CLIENT_WAIT_MS 200
/* What one pass reads from the FIFO at most, so that the sandbox's output is served between. */
#define ASK_READS_MAX 16

typedef struct ask_question {
        unsigned long id;
        char name[ASK_NAME_MAX + 1];
        unsigned port;
        char method[ASK_METHOD_MAX + 1];
        char path[ASK_PATH_MAX + 1];
        ask_channel channels[ASK_CHANNELS_MAX];
        size_t n_channels;
        int64_t deadline_ms;
} ask_question;

/* A name and port answered in this run. */
typedef struct ask_known {
        char name[ASK_NAME_MAX + 1];
        unsigned port;
        bool allowed;
} ask_known;

struct ask_state {
        aisb_ctx *ctx;
        const aisb_policy *policy;
        char *run;
        int questions_fd, answers_fd;
        int listen_fd;
        char *socket_path;
        unsigned timeout_s;
        bool alternate_screen;
        char in[ASK_LINE_MAX];
        size_t in_size;
        bool in_skipping; /* inside a line too long to be one: dropped to its end */
        ask_question pending[ASK_PENDING_MAX];
        size_t n_pending;
        ask_known known[ASK_NAMES_MAX];
        size_t n_known;
        unsigned long next_id;
        unsigned long refused_unasked;
        size_t n_unasked_recorded;
        bool told; /* the caller was told of a question in this ask_process() */
        ask_decision *decisions;
        size_t n_decisions;
        /* The run's control (aisb_io_set_control), served while a question is shown. */
        int control_fd;
        aisb_control_fn control_fn;
        void *control_userdata;
        bool resized;
        unsigned short rows, cols;
};

_Static_assert(ASK_PENDING_MAX * ASK_CHANNELS_MAX <= GATE_ASK_CONCURRENCY / 2,
               "the questions' requests must leave squid's helper channels to spare");

static int64_t now_ms(clockid_t clock)
{
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ask_socket_dir(char **ret, aisb_error **err)
{
        return state_dir("asks", ret, err);
}

int ask_entry_line(const char *name, unsigned port, char **ret)
{
        int r = port == 80 || port == 443 ? asprintf(ret, "%s", name) : asprintf(ret, "%s:%u", name, port);
        return r < 0 ? -ENOMEM : 0;
}

/* A token of [A-Z] (a method), at most max long. */
static bool method_ok(const char *s, size_t len)
{
        if (len == 0 || len > ASK_METHOD_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(s[i] >= 'A' && s[i] <= 'Z'))
                        return false;
        return true;
}

/* A DNS name as squid passes it: labels of letters, digits, '-' and '_', joined by dots. */
static bool name_ok(const char *s, size_t len)
{
        if (len == 0 || len > ASK_NAME_MAX || s[0] == '.' || s[len - 1] == '.' || s[0] == '-')
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (!(isalnum((unsigned char) c) || c == '-' || c == '_' || (c == '.' && s[i + 1] != '.')))
                        return false;
        }
        return true;
}

/* The line's generation and channel, the first two fields: what an answer goes back by.
 * Returns what follows them, or NULL. */
static const char *channel_parse(const char *line, size_t size, ask_channel *ret)
{
        size_t g = 0;
        while (g < size && g <= ASK_GEN_MAX && (isalnum((unsigned char) line[g]) || line[g] == '.' || line[g] == '-'))
                g++;
        if (g == 0 || g > ASK_GEN_MAX || g >= size || line[g] != ' ')
                return NULL;
        size_t d = g + 1, digits = 0;
        unsigned long id = 0;
        while (d + digits < size && digits < 10 && line[d + digits] >= '0' && line[d + digits] <= '9')
                id = id * 10 + (unsigned) (line[d + digits++] - '0');
        if (digits == 0 || digits > 9 || (d + digits < size && line[d + digits] != ' '))
                return NULL;
        memcpy(ret->gen, line, g);
        ret->gen[g] = 0;
        ret->id = id;
        return line + d + digits;
}

int ask_parse_line(const char *line, ask_channel *ret_channel, char method[static ASK_METHOD_MAX + 1],
                   char name[static ASK_NAME_MAX + 1], unsigned *ret_port, char path[static ASK_PATH_MAX + 1])
{
        ask_channel channel;
        const char *p = channel_parse(line, strlen(line), &channel);
        if (!p)
                return -EBADMSG;
        /* After the channel: the method, the name, the port and the path. */
        const char *field[5];
        size_t len[5], n = 1;
        while (n < 5) {
                if (*p != ' ')
                        return -EBADMSG;
                p++;
                field[n] = p;
                while (*p && *p != ' ')
                        p++;
                len[n] = (size_t) (p - field[n]);
                if (len[n] == 0)
                        return -EBADMSG;
                n++;
        }
        /* squid adds the ACL's argument, none ("-"). */
        if (*p && !streq(p, " -"))
                return -EBADMSG;
        unsigned long long port = 0;
        if (len[3] > 5 || strspn(field[3], "0123456789") < len[3])
                return -EBADMSG;
        for (size_t i = 0; i < len[3]; i++)
                port = port * 10 + (unsigned) (field[3][i] - '0');
        if (port < 1 || port > 65535 || !method_ok(field[1], len[1]) || !name_ok(field[2], len[2]))
                return -EBADMSG;
        /* The path: squid's URL-encoded text, printable ASCII; cut, never trusted. "-": none. */
        for (size_t i = 0; i < len[4]; i++)
                if (field[4][i] < 0x21 || field[4][i] > 0x7e)
                        return -EBADMSG;
        *ret_channel = channel;
        *ret_port = (unsigned) port;
        memcpy(method, field[1], len[1]);
        method[len[1]] = 0;
        for (size_t i = 0; i < len[2]; i++)
                name[i] = (char) tolower((unsigned char) field[2][i]);
        name[len[2]] = 0;
        bool none = len[4] == 1 && field[4][0] == '-';
        size_t cut = none ? 0 : len[4] < ASK_PATH_MAX ? len[4] : ASK_PATH_MAX;
        memcpy(path, field[4], cut);
        path[cut] = 0;
        return 0;
}

static void answer_channel(ask_state *a, const ask_channel *channel, bool allow)
{
        char line[96];
        int n = snprintf(line, sizeof line, "%s %lu %s aisb_ask=%s\n", channel->gen, channel->id, allow ? "OK" : "ERR",
                         allow ? "allow" : "deny");
        /* One write: the helper passes it on whole. A full pipe (squid not reading) loses the
         * answer, and squid keeps the request until its client gives up. */
        (void) !write(a->answers_fd, line, (size_t) n);
}

static void decision_add(ask_state *a, const char *name, unsigned port, const char *method, const char *path,
                         aisb_answer answer, const char *by)
{
        if (a->n_decisions >= ASK_DECISIONS_MAX)
                return;
        /* A flood of refusals without a question is counted (refused_unasked), its first
         * ones recorded: the user's answers keep their room. */
        bool unasked = streq(by, "limit") || streq(by, "unlistable");
        if (unasked && a->n_unasked_recorded >= ASK_UNASKED_RECORDED)
                return;
        if (a->n_decisions % 64 == 0) {
                ask_decision *d = reallocarray(a->decisions, a->n_decisions + 64, sizeof *d);
                if (!d)
                        return;
                a->decisions = d;
        }
        a->n_unasked_recorded += unasked;
        ask_decision *d = &a->decisions[a->n_decisions++];
        *d = (ask_decision) { .time_ms = now_ms(CLOCK_REALTIME), .port = port, .answer = answer, .by = by };
        snprintf(d->name, sizeof d->name, "%s", name);
        snprintf(d->method, sizeof d->method, "%s", method);
        snprintf(d->path, sizeof d->path, "%s", path);
}

static ask_known *known_find(ask_state *a, const char *name, unsigned port)
{
        for (size_t i = 0; i < a->n_known; i++)
                if (a->known[i].port == port && streq(a->known[i].name, name))
                        return &a->known[i];
        return NULL;
}

static ask_question *pending_find_id(ask_state *a, unsigned long id)
{
        for (size_t i = 0; i < a->n_pending; i++)
                if (a->pending[i].id == id)
                        return &a->pending[i];
        return NULL;
}

static void pending_remove(ask_state *a, ask_question *q)
{
        size_t i = (size_t) (q - a->pending);
        memmove(&a->pending[i], &a->pending[i + 1], (a->n_pending - i - 1) * sizeof *q);
        a->n_pending--;
}

/* Answer a question: its requests, the run's memory of the name, the record. */
static void settle(ask_state *a, ask_question *q, aisb_answer answer, const char *by)
{
        bool allow = answer != AISB_ANSWER_DENY;
        for (size_t i = 0; i < q->n_channels; i++)
                answer_channel(a, &q->channels[i], allow);
        if (a->n_known < ELEMENTSOF(a->known)) {
                ask_known *k = &a->known[a->n_known++];
                snprintf(k->name, sizeof k->name, "%s", q->name);
                k->port = q->port;
                k->allowed = allow;
        }
        decision_add(a, q->name, q->port, q->method, q->path, answer, by);
        pending_remove(a, q);
}

static int reply(ask_state *a, unsigned long id, aisb_answer answer, const char *by, aisb_error **err)
{
        if (answer < AISB_ANSWER_DENY || answer > AISB_ANSWER_USER)
                return aisb_error_set(err, -EINVAL, "not an answer: %d", (int) answer);
        ask_question *q = pending_find_id(a, id);
        if (!q)
                return aisb_error_set(err, -ENOENT, "no question %lu waits (answered, or timed out)", id);
        if (answer == AISB_ANSWER_PROJECT || answer == AISB_ANSWER_USER) {
                _cleanup_free_ char *line = NULL;
                aisb_error *e = NULL;
                int r = ask_entry_line(q->name, q->port, &line);
                if (r >= 0)
                        r = answer == AISB_ANSWER_PROJECT && !a->policy->project
                                    ? aisb_error_set(&e, -EINVAL, "this run has no project")
                                    : allowlist_file_append(answer == AISB_ANSWER_PROJECT ? a->policy->project : NULL,
                                                            (const char *const[]) { line, NULL }, &e);
                /* Allowed for the run all the same: the user said so. */
                if (r < 0)
                        aisb_log(a->ctx, AISB_LOG_WARNING, "%s allowed for this run only: %s", q->name,
                                 e ? aisb_error_message(e) : strerror(-r));
                aisb_error_free(e);
        }
        settle(a, q, answer, by);
        return 0;
}

static void emit_question(ask_state *a, const ask_question *q)
{
        int64_t left = (q->deadline_ms - now_ms(CLOCK_MONOTONIC) + 999) / 1000;
        aisb_question question = {
                .run = a->run, .id = q->id, .name = q->name, .port = q->port, .method = q->method, .path = q->path,
                .waiting = (unsigned) q->n_channels, .seconds_left = left > 0 ? (unsigned) left : 0,
                .alternate_screen = a->alternate_screen,
        };
        a->told = true;
        (void) ctx_emit(a->ctx, &(aisb_event) { .type = AISB_EVENT_ASK, .level = AISB_LOG_INFO, .question = &question });
}

/* A line that is no question (too long, a NUL in it, a field that is not one): refused by
 * its channel, if it has one, at once rather than at squid's timeout. */
static void refuse_line(ask_state *a, const char *line, size_t size)
{
        ask_channel channel;
        if (!channel_parse(line, size, &channel))
                return;
        answer_channel(a, &channel, false);
        a->refused_unasked++;
}

static void on_line(ask_state *a, const char *line)
{
        ask_channel channel;
        char method[ASK_METHOD_MAX + 1], name[ASK_NAME_MAX + 1], path[ASK_PATH_MAX + 1];
        unsigned port;
        if (ask_parse_line(line, &channel, method, name, &port, path) < 0) {
                refuse_line(a, line, strlen(line));
                return;
        }
        ask_known *k = known_find(a, name, port);
        if (k) {
                answer_channel(a, &channel, k->allowed);
                return;
        }
        for (size_t i = 0; i < a->n_pending; i++) {
                ask_question *q = &a->pending[i];
                if (q->port == port && streq(q->name, name)) {
                        if (q->n_channels < ELEMENTSOF(q->channels))
                                q->channels[q->n_channels++] = channel;
                        else {
                                answer_channel(a, &channel, false);
                                a->refused_unasked++;
                        }
                        return;
                }
        }
        /* Only what an allowlist could name is asked about: an answer may write it there. */
        _cleanup_free_ char *entry = NULL;
        allowlist check = {};
        bool listable = ask_entry_line(name, port, &entry) >= 0 &&
                        allowlist_parse_text(&check, entry, strlen(entry), "the question", ALLOWLIST_FILE_DOMAINS_ONLY,
                                             NULL) >= 0 &&
                        check.n == 1;
        allowlist_done(&check);
        if (!listable) {
                answer_channel(a, &channel, false);
                decision_add(a, name, port, method, path, AISB_ANSWER_DENY, "unlistable");
                return;
        }
        if (a->n_pending >= ASK_PENDING_MAX || a->next_id >= ASK_NAMES_MAX) {
                answer_channel(a, &channel, false);
                a->refused_unasked++;
                decision_add(a, name, port, method, path, AISB_ANSWER_DENY, "limit");
                return;
        }
        ask_question *q = &a->pending[a->n_pending++];
        *q = (ask_question) { .id = ++a->next_id, .port = port, .n_channels = 1,
                              .deadline_ms = now_ms(CLOCK_MONOTONIC) + (int64_t) a->timeout_s * 1000 };
        q->channels[0] = channel;
        memcpy(q->name, name, sizeof q->name);
        memcpy(q->method, method, sizeof q->method);
        memcpy(q->path, path, sizeof q->path);
        emit_question(a, q);
}

static void read_questions(ask_state *a)
{
        for (int reads = 0; reads < ASK_READS_MAX; reads++) {
                ssize_t n = read(a->questions_fd, a->in + a->in_size, sizeof a->in - a->in_size);
                if (n <= 0)
                        return;
                a->in_size += (size_t) n;
                char *start = a->in, *nl;
                while ((nl = memchr(start, '\n', a->in_size - (size_t) (start - a->in)))) {
                        *nl = 0;
                        size_t size = (size_t) (nl - start);
                        if (a->in_skipping)
                                ;
                        else if (memchr(start, 0, size))
                                refuse_line(a, start, size);
                        else
                                on_line(a, start);
                        a->in_skipping = false;
                        start = nl + 1;
                }
                size_t rest = a->in_size - (size_t) (start - a->in);
                memmove(a->in, start, rest);
                a->in_size = rest;
                if (a->in_size == sizeof a->in) {
                        /* Too long to be a question (a path of thousands of bytes): refused
                         * now by its channel, the rest of it dropped as it comes. */
                        if (!a->in_skipping)
                                refuse_line(a, a->in, a->in_size);
                        a->in_skipping = true;
                        a->in_size = 0;
                }
        }
}

static void time_out(ask_state *a)
{
        int64_t now = now_ms(CLOCK_MONOTONIC);
        for (size_t i = 0; i < a->n_pending;)
                if (a->pending[i].deadline_ms <= now)
                        settle(a, &a->pending[i], AISB_ANSWER_DENY, "timeout");
                else
                        i++;
}

/* ---- the socket aisb ask talks to ---- */

/* What each answer is said as, on the socket and in the egress record. */
static const char *const answer_words[] = { [AISB_ANSWER_DENY] = "deny", [AISB_ANSWER_RUN] = "run",
                                            [AISB_ANSWER_PROJECT] = "project", [AISB_ANSWER_USER] = "user" };

const char *ask_answer_word(aisb_answer answer)
{
        return answer >= AISB_ANSWER_RUN && answer <= AISB_ANSWER_USER ? answer_words[answer] : "deny";
}

/* An answer's word, or "allow" (the run's). */
static int answer_parse(const char *word, aisb_answer *ret)
{
        for (size_t i = 0; i < ELEMENTSOF(answer_words); i++)
                if (streq(word, answer_words[i]) || (i == AISB_ANSWER_RUN && streq(word, "allow"))) {
                        *ret = (aisb_answer) i;
                        return 0;
                }
        return -EINVAL;
}

static json_object *questions_json(const ask_state *a)
{
        _cleanup_json_ json_object *list = json_object_new_array();
        int64_t now = now_ms(CLOCK_MONOTONIC);
        for (size_t i = 0; list && i < a->n_pending; i++) {
                const ask_question *q = &a->pending[i];
                int64_t left = (q->deadline_ms - now + 999) / 1000;
                if (json_build_into(list, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_INT64("id", (int64_t) q->id),
                                                            JSON_BUILD_PAIR_STRING("name", q->name),
                                                            JSON_BUILD_PAIR_INT64("port", q->port),
                                                            JSON_BUILD_PAIR_STRING("method", q->method),
                                                            JSON_BUILD_PAIR_STRING("path", q->path),
                                                            JSON_BUILD_PAIR_INT64("waiting", (int64_t) q->n_channels),
                                                            JSON_BUILD_PAIR_INT64("seconds_left", left > 0 ? left : 0))) < 0)
                        return NULL;
        }
        return steal_pointer(&list);
}

/* One client: a line ("list", or "answer ID WORD"), one JSON line back. The peer must be
 * this user (the directory is the user's alone too). */
static void serve_client(ask_state *a, int fd, int64_t until)
{
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid())
                return;
        char line[ASK_CLIENT_LINE_MAX];
        size_t size = 0;
        while (size < sizeof line - 1 && !memchr(line, '\n', size)) {
                int64_t left = until - now_ms(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (left <= 0 || poll(&p, 1, (int) left) != 1)
                        return;
                ssize_t n = recv(fd, line + size, sizeof line - 1 - size, MSG_DONTWAIT);
                if (n <= 0)
                        return;
                size += (size_t) n;
        }
        line[size] = 0;
        char *nl = strchr(line, '\n');
        if (!nl)
                return;
        *nl = 0;
        _cleanup_json_ json_object *out = NULL;
        char word[16];
        unsigned long id;
        aisb_answer answer;
        int r;
        if (streq(line, "list")) {
                r = json_build(&out, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("run", a->run),
                                                       JSON_BUILD_PAIR_TAKE("questions", questions_json(a))));
        } else if (sscanf(line, "answer %lu %15s", &id, word) == 2 && answer_parse(word, &answer) == 0) {
                /* A client that gave up waiting has hung up: its answer is not applied, as
                 * it was told it was not. */
                struct pollfd p = { .fd = fd, .events = POLLRDHUP };
                if (poll(&p, 1, 0) != 0)
                        return;
                aisb_error *e = NULL;
                int k = reply(a, id, answer, "command", &e);
                r = json_build(&out, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_BOOL("ok", k >= 0),
                                                       JSON_BUILD_PAIR_CONDITION(k < 0, JSON_BUILD_PAIR_STRING(
                                                                                                "error", aisb_error_message(e)))));
                aisb_error_free(e);
        } else {
                r = json_build(&out, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_BOOL("ok", false),
                                                       JSON_BUILD_PAIR_STRING("error", "not a request")));
        }
        if (r < 0)
                return;
        const char *text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN);
        _cleanup_free_ char *sent = NULL;
        if (asprintf(&sent, "%s\n", text) < 0)
                return;
        (void) !send(fd, sent, strlen(sent), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void serve(ask_state *a)
{
        int64_t until = now_ms(CLOCK_MONOTONIC) + ASK_CLIENT_WAIT_MS;
        for (int i = 0; i < 8; i++) {
                _cleanup_close_ int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                serve_client(a, fd, until);
        }
}

/* The run's socket: DIR/RUN.sock, in the user's own state directory. */
static int listen_open(ask_state *a, aisb_error **err)
{
        _cleanup_free_ char *dir = NULL;
        int r = ask_socket_dir(&dir, err);
        if (r < 0)
                return r;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (asprintf(&a->socket_path, "%s/%s.sock", dir, a->run) < 0)
                return error_oom(err);
        if (strlen(a->socket_path) >= sizeof sa.sun_path)
                return aisb_error_set(err, -ENAMETOOLONG, "%s is too long a path for a socket", a->socket_path);
        /* Bound and listening under a name aisb ask does not list, then renamed: it never
         * finds the run's socket refusing (as a killed run's does, which it removes). */
        _cleanup_free_ char *building = NULL;
        if (asprintf(&building, "%s/.%s.new", dir, a->run) < 0)
                return error_oom(err);
        if (strlen(building) >= sizeof sa.sun_path)
                return aisb_error_set(err, -ENAMETOOLONG, "%s is too long a path for a socket", building);
        strcpy(sa.sun_path, building);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return aisb_error_set(err, -errno, "socket: %s", strerror(errno));
        (void) unlink(building);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(building, 0600) < 0 || listen(fd, 8) < 0 ||
            rename(building, a->socket_path) < 0) {
                r = -errno;
                (void) unlink(building);
                return aisb_error_set(err, r, "cannot listen on %s: %s", a->socket_path, strerror(-r));
        }
        a->listen_fd = steal_fd(&fd);
        return 0;
}

int ask_new(aisb_ctx *ctx, const aisb_policy *p, const char *run, int questions_fd, int answers_fd,
            bool alternate_screen, ask_state **ret, aisb_error **err)
{
        ask_state *a = calloc(1, sizeof *a);
        if (!a)
                return error_oom(err);
        *a = (ask_state) { .ctx = ctx, .policy = p, .questions_fd = questions_fd, .answers_fd = answers_fd,
                           .listen_fd = -1, .control_fd = -1, .timeout_s = p->ask_timeout_s ? p->ask_timeout_s : 60,
                           .alternate_screen = alternate_screen, .run = strdup(run) };
        if (!a->run) {
                ask_free(a);
                return error_oom(err);
        }
        aisb_error *e = NULL;
        if (listen_open(a, &e) < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "aisb ask cannot answer this run's questions: %s", aisb_error_message(e));
                free(a->socket_path);
                a->socket_path = NULL;
        }
        aisb_error_free(e);
        *ret = a;
        return 0;
}

ask_state *ask_free(ask_state *a)
{
        if (!a)
                return NULL;
        if (a->listen_fd >= 0) {
                close(a->listen_fd);
                (void) unlink(a->socket_path);
        }
        free(a->socket_path);
        free(a->run);
        free(a->decisions);
        free(a);
        return NULL;
}

void ask_poll_fds(const ask_state *a, int *ret_questions, int *ret_socket)
{
        *ret_questions = a->questions_fd;
        *ret_socket = a->listen_fd;
}

int ask_poll_timeout_ms(const ask_state *a)
{
        if (a->n_pending == 0)
                return -1;
        int64_t first = a->pending[0].deadline_ms;
        for (size_t i = 1; i < a->n_pending; i++)
                if (a->pending[i].deadline_ms < first)
                        first = a->pending[i].deadline_ms;
        int64_t left = first - now_ms(CLOCK_MONOTONIC);
        return left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int) left;
}

bool ask_process(ask_state *a, bool questions_ready, bool socket_ready)
{
        a->told = false;
        if (questions_ready)
                read_questions(a);
        if (socket_ready && a->listen_fd >= 0)
                serve(a);
        time_out(a);
        return a->told;
}

void ask_set_alternate_screen(ask_state *a, bool on)
{
        a->alternate_screen = on;
}

void ask_set_control(ask_state *a, int fd, aisb_control_fn fn, void *userdata)
{
        a->control_fd = fn ? fd : -1;
        a->control_fn = fn;
        a->control_userdata = userdata;
}

bool ask_take_resize(ask_state *a, unsigned short *ret_rows, unsigned short *ret_cols)
{
        if (!a->resized)
                return false;
        a->resized = false;
        *ret_rows = a->rows;
        *ret_cols = a->cols;
        return true;
}

const ask_decision *ask_decisions(const ask_state *a, size_t *ret_n)
{
        *ret_n = a->n_decisions;
        return a->decisions;
}

unsigned long ask_refused_unasked(const ask_state *a)
{
        return a->refused_unasked;
}

void ask_refuse_all(ask_state *a, const char *by)
{
        while (a->n_pending > 0)
                settle(a, &a->pending[0], AISB_ANSWER_DENY, by);
}

int aisb_ask_reply(aisb_ctx *ctx, unsigned long id, aisb_answer answer, unsigned flags, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_ASK_REDRAW)
                return aisb_error_set(err, -EINVAL, "aisb_ask_reply: unknown flags 0x%x", flags);
        if (!ctx->ask)
                return aisb_error_set(err, -ENOENT, "no run of this context asks");
        if (flags & AISB_ASK_REDRAW)
                ctx->ask_redraw = true;
        return reply(ctx->ask, id, answer, "terminal", err);
}

int aisb_ask_wait(aisb_ctx *ctx, unsigned long id, int fd)
{
        ask_state *a = ctx->ask;
        if (!a || fd < 0)
                return -EINVAL;
        for (;;) {
                if (!pending_find_id(a, id))
                        return 0;
                if (atomic_load(&ctx->cancel_requested))
                        return -ECANCELED;
                struct pollfd p[4] = { { .fd = fd, .events = POLLIN },
                                       { .fd = ctx->wake_fd, .events = POLLIN },
                                       { .fd = a->control_fd, .events = POLLIN },
                                       { .fd = a->listen_fd, .events = POLLIN } };
                if (poll(p, ELEMENTSOF(p), ask_poll_timeout_ms(a)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                /* A stop: the run's loop sees it as well, once this returns. */
                if (p[2].revents & POLLIN) {
                        aisb_control_request request = { .fd = a->control_fd };
                        int c = a->control_fn(&request, a->control_userdata);
                        if (c == AISB_CONTROL_STOP) {
                                aisb_ctx_cancel(ctx);
                                return -ECANCELED;
                        }
                        if (c == AISB_CONTROL_RESIZE) {
                                a->resized = true;
                                a->rows = request.rows;
                                a->cols = request.cols;
                        }
                }
                if (p[3].revents & POLLIN)
                        serve(a);
                time_out(a);
                if (pending_find_id(a, id) && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        return 1;
        }
}

/* ---- aisb ask: the other end ---- */

/* Send one line to RUN's socket, and read its one JSON line back. */
static int ask_request(const char *dir, const char *run, const char *line, json_object **ret, aisb_error **err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if ((size_t) snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s.sock", dir, run) >= sizeof sa.sun_path)
                return aisb_error_set(err, -ENAMETOOLONG, "%s/%s.sock: too long a path", dir, run);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return aisb_error_set(err, -errno, "socket: %s", strerror(errno));
        struct timeval tv = { .tv_sec = 5 };
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return aisb_error_set(err, -errno, "the run %s does not answer: %s", run, strerror(errno));
        /* The run must be this user's, as it checks the other way. */
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid())
                return aisb_error_set(err, -EPERM, "%s is not a run of yours", sa.sun_path);
        if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0)
                return aisb_error_set(err, -errno, "the run %s: %s", run, strerror(errno));
        char buf[65536];
        size_t size = 0;
        while (size < sizeof buf - 1) {
                ssize_t n = recv(fd, buf + size, sizeof buf - 1 - size, 0);
                if (n <= 0)
                        break;
                size += (size_t) n;
                if (memchr(buf, '\n', size))
                        break;
        }
        buf[size] = 0;
        json_object *o = json_tokener_parse(buf);
        if (!o || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return aisb_error_set(err, -EBADMSG, "the run %s answered nothing readable", run);
        }
        *ret = o;
        return 0;
}

/* A run's name as aisb makes it: letters, digits, '-', '_' and '.', not starting with '.'. */
static bool run_name_ok(const char *s)
{
        return *s && *s != '.' && strlen(s) < 128 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == strlen(s);
}

int aisb_questions(aisb_question_fn fn, void *userdata, aisb_error **err)
{
        _cleanup_free_ char *dir = NULL;
        int r = ask_socket_dir(&dir, err);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d)
                return aisb_error_set(err, -errno, "cannot read %s: %s", dir, strerror(errno));
        dfd = -1;
        struct dirent *e;
        int result = 0;
        while (result == 0 && (e = readdir(d))) {
                size_t n = strlen(e->d_name);
                if (n < 6 || !streq(e->d_name + n - 5, ".sock"))
                        continue;
                char run[128];
                if (n - 5 >= sizeof run)
                        continue;
                memcpy(run, e->d_name, n - 5);
                run[n - 5] = 0;
                struct stat st;
                if (!run_name_ok(run) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISSOCK(st.st_mode) || st.st_uid != getuid())
                        continue;
                _cleanup_json_ json_object *o = NULL;
                aisb_error *request_err = NULL;
                r = ask_request(dir, run, "list\n", &o, &request_err);
                aisb_error_free(request_err);
                /* A socket nobody listens on is a run that was killed: the user's own (checked
                 * above), removed. */
                if (r == -ECONNREFUSED)
                        (void) unlinkat(dirfd(d), e->d_name, 0);
                if (r < 0)
                        continue; /* a run that ended as it was asked */
                json_object *list = NULL;
                if (!json_object_object_get_ex(o, "questions", &list) || !json_object_is_type(list, json_type_array))
                        continue;
                for (size_t i = 0; result == 0 && i < json_object_array_length(list); i++) {
                        json_object *q = json_object_array_get_idx(list, i), *v;
                        const char *name = json_object_object_get_ex(q, "name", &v) ? json_object_get_string(v) : NULL;
                        const char *method = json_object_object_get_ex(q, "method", &v) ? json_object_get_string(v) : "";
                        const char *path = json_object_object_get_ex(q, "path", &v) ? json_object_get_string(v) : "";
                        if (!name)
                                continue;
                        aisb_question question = {
                                .run = run, .name = name, .method = method, .path = path,
                                .id = json_object_object_get_ex(q, "id", &v) ? (unsigned long) json_object_get_int64(v) : 0,
                                .port = json_object_object_get_ex(q, "port", &v) ? (unsigned) json_object_get_int(v) : 0,
                                .waiting = json_object_object_get_ex(q, "waiting", &v) ? (unsigned) json_object_get_int(v) : 0,
                                .seconds_left = json_object_object_get_ex(q, "seconds_left", &v)
                                                        ? (unsigned) json_object_get_int(v)
                                                        : 0,
                        };
                        result = fn(&question, userdata);
                }
        }
        closedir(d);
        return result;
}

int aisb_question_answer(const char *run, unsigned long id, aisb_answer answer, aisb_error **err)
{
        if (!run || !run_name_ok(run))
                return aisb_error_set(err, -EINVAL, "'%s' is not a run's name", run ? run : "");
        if (answer < AISB_ANSWER_DENY || answer > AISB_ANSWER_USER)
                return aisb_error_set(err, -EINVAL, "not an answer: %d", (int) answer);
        _cleanup_free_ char *dir = NULL, *line = NULL;
        int r = ask_socket_dir(&dir, err);
        if (r < 0)
                return r;
        if (asprintf(&line, "answer %lu %s\n", id, ask_answer_word(answer)) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *o = NULL;
        r = ask_request(dir, run, line, &o, err);
        if (r < 0)
                return r;
        json_object *v;
        if (json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v))
                return 0;
        const char *why = json_object_object_get_ex(o, "error", &v) ? json_object_get_string(v) : "refused";
        return aisb_error_set(err, -ENOENT, "the run %s: %s", run, why);
}
