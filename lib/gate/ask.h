/* SPDX-License-Identifier: MIT */
/*
 * Asking the user about a name no allowlist entry names. The run's own gate holds such a
 * request and its helper relays it here through a FIFO (gate.h's ask fds): a line is the
 * helper's generation, squid's channel number, the request's method, name, port and URL path;
 * an answer goes back with the generation and channel it came with. The run holds one question
 * per name and port, however many requests wait on it, tells the caller (AISB_EVENT_ASK),
 * and answers when the caller replies (aisb_ask_reply), when aisb ask replies through the
 * run's socket, or when the question times out (a refusal). An answer holds for the rest of
 * the run; "project" and "user" also add the name to that allowlist (aisb_allowlist_append).
 *
 * What comes through the FIFO is the sandbox's doing (through squid): every field is checked,
 * a line that is not one is refused, and at most ASK_PENDING_MAX questions wait at a time
 * (ASK_NAMES_MAX in a run); a name beyond those is refused at once and counted.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "service.h"
#include "policy.h"

#define ASK_PENDING_MAX 8
#define ASK_NAMES_MAX 64
/* Requests waiting on one question; more are refused at once (and counted). The questions'
 * requests together, ASK_PENDING_MAX of them, stay well below the helper's concurrency (256 in
 * gate-squid.c): a flood on a few names never fills squid's channels, which would make it
 * refuse a new name itself, unasked. */
#define ASK_CHANNELS_MAX 16
#define ASK_NAME_MAX 253
#define ASK_PATH_MAX 200
#define ASK_METHOD_MAX 16
/* Decisions a run records; those that refuse without asking (the limits, a name no allowlist
 * could hold) at most ASK_UNASKED_RECORDED of them, so the questions' answers always fit. */
#define ASK_DECISIONS_MAX 4096
#define ASK_UNASKED_RECORDED (ASK_DECISIONS_MAX - ASK_NAMES_MAX)

/* The helper's generation: a token it makes at its start (letters, digits, '.', '-'). */
#define ASK_GEN_MAX 32

typedef struct ask_state ask_state;

/* A request held by the gate: its helper's generation and squid's channel number. */
typedef struct ask_channel {
        char gen[ASK_GEN_MAX + 1];
        unsigned long id;
} ask_channel;

/* One decision, for the run's egress record. by: "terminal" (the caller's reply), "command"
 * (aisb ask), "timeout", "limit" (refused without asking: too many questions), "earlier"
 * (a name answered before in this run). */
typedef struct ask_decision {
        int64_t time_ms;
        char name[ASK_NAME_MAX + 1];
        unsigned port;
        char method[ASK_METHOD_MAX + 1];
        char path[ASK_PATH_MAX + 1];
        aisb_answer answer;
        const char *by;
} ask_decision;

/* The state for one run: questions_fd and answers_fd are the gate's (not taken); run names
 * the run (its sandbox). Opens the run's socket for aisb ask (ask_socket_dir()/RUN.sock),
 * which only this user can reach; a socket that cannot be made is logged and left out. */
int ask_new(aisb_ctx *ctx, const aisb_policy *p, const char *run, int questions_fd, int answers_fd,
            bool alternate_screen_known, ask_state **ret, aisb_error **err);
ask_state *ask_free(ask_state *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(ask_state *, ask_free);

/* The fds to poll for reading (the FIFO and the socket; -1 for none), and how long until the
 * next question times out (-1: none waits). */
void ask_poll_fds(const ask_state *a, int *ret_questions, int *ret_socket);
int ask_poll_timeout_ms(const ask_state *a);
/* The FIFO or the socket was readable, or the time came: read what is there, answer what
 * can be answered, tell the caller of each new question, time out the old. Whether the
 * caller was told of one (and may have read the terminal meanwhile). */
bool ask_process(ask_state *a, bool questions_ready, bool socket_ready);
/* Whether the sandbox's terminal shows its alternate screen (for the next question). */
void ask_set_alternate_screen(ask_state *a, bool on);
/* The run's control fd and callback (aisb_io_set_control), served by aisb_ask_wait() while a
 * question is shown; a resize read there is kept for the run to apply (ask_take_resize). */
void ask_set_control(ask_state *a, int fd, aisb_control_fn fn, void *userdata);
bool ask_take_resize(ask_state *a, unsigned short *ret_rows, unsigned short *ret_cols);
/* The run's decisions so far, in order. */
const ask_decision *ask_decisions(const ask_state *a, size_t *ret_n);
/* Names refused without asking (the limits), and the first few. */
unsigned long ask_refused_unasked(const ask_state *a);
/* Answer every question still waiting with a refusal (the run ends). */
void ask_refuse_all(ask_state *a, const char *by);

/* Parse one helper line ("GENERATION CHANNEL METHOD NAME PORT PATH", then squid's "-" for
 * the ACL's argument, or not), for the tests. 0, or -EBADMSG. */
int ask_parse_line(const char *line, ask_channel *ret_channel, char method[static ASK_METHOD_MAX + 1],
                   char name[static ASK_NAME_MAX + 1], unsigned *ret_port, char path[static ASK_PATH_MAX + 1]);
/* The allowlist line an answer adds for a name and port: NAME for 80 and 443, else NAME:PORT. */
int ask_entry_line(const char *name, unsigned port, char **ret);
/* The directory of the runs' sockets (in the state directory). */
int ask_socket_dir(char **ret, aisb_error **err);
/* "run", "project", "user" or "deny". */
const char *ask_answer_word(aisb_answer answer);
