/* SPDX-License-Identifier: MIT */
/*
 * Questions about names no allowlist entry lists: asked on the run's terminal (cli_ask_on_
 * terminal, from the run's event callback, while the library holds the sandbox's output and
 * input), and "aisb ask", which lists and answers the questions of every run of the user's
 * from another terminal.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

/* The destination as the question shows it; the sandbox chose the name and the path, so
 * both go through cli_put. */
static void put_destination(FILE *out, const aisb_question *q)
{
        cli_put(out, q->name);
        fprintf(out, ":%u (%s", q->port, q->method);
        if (q->path[0]) {
                fputc(' ', out);
                cli_put(out, q->path);
        }
        fputc(')', out);
}

static int answer_of_key(const char *keys, size_t n, aisb_answer *ret)
{
        for (size_t i = 0; i < n; i++)
                switch (keys[i]) {
                case 'y':
                case 'Y':
                        *ret = AISB_ANSWER_RUN;
                        return 1;
                case 'p':
                case 'P':
                        *ret = AISB_ANSWER_PROJECT;
                        return 1;
                case 'a':
                case 'A':
                        *ret = AISB_ANSWER_USER;
                        return 1;
                case 'n':
                case 'N':
                case 0x1b: /* Esc */
                case 0x03: /* ^C, a byte in raw mode */
                        *ret = AISB_ANSWER_DENY;
                        return 1;
                default:
                        break;
                }
        return 0;
}

void cli_ask_on_terminal(aisb_ctx *ctx, const aisb_question *q, int in_fd, FILE *out)
{
        /* What was typed for the harness before the question showed is not an answer. */
        (void) tcflush(in_fd, TCIFLUSH);
        /* The alternate screen keeps the harness's screen for the terminal to put back; a
         * harness already there redraws afterwards. */
        /* Plain text, cursor shown: the sandbox's colours or hidden text do not hide it. */
        fputs(q->alternate_screen ? "\033[0m\033[H\033[2J" : "\0337\033[?1049h\033[0m\033[H\033[2J", out);
        fputs("aisb: the sandbox asks to reach ", out);
        put_destination(out, q);
        fputs("\r\n      which no allowlist entry names. The name is resolved only if you allow it.\r\n\r\n", out);
        fputs("  y  allow for this run\r\n", out);
        fputs("  p  always for this project (adds it to .ai-sandbox/allow)\r\n", out);
        fputs("  a  always for me (adds it to your allowlist)\r\n", out);
        fputs("  n  deny\r\n\r\n", out);
        fprintf(out, "%u request%s wait%s; denied in %u s without an answer. ", q->waiting, q->waiting == 1 ? "" : "s",
                q->waiting == 1 ? "s" : "", q->seconds_left);
        fflush(out);

        /* The run serves aisb ask, the question's timeout and its stop signals meanwhile. */
        aisb_answer answer = AISB_ANSWER_DENY;
        bool answered = false;
        int k;
        while (!answered && (k = aisb_ask_wait(ctx, q->id, in_fd)) > 0) {
                char keys[64];
                ssize_t n = read(in_fd, keys, sizeof keys);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                /* The terminal is gone: no one can answer. */
                answered = n <= 0;
                /* One key alone: an escape sequence (a focus report, an arrow, a paste, a
                 * terminal's reply the sandbox asked for) or typing in flight is no answer. */
                if (n == 1)
                        answered = answer_of_key(keys, 1, &answer);
        }
        fputs(q->alternate_screen ? "\033[H\033[2J" : "\033[?1049l\0338", out);
        fflush(out);
        /* Answered from elsewhere or timed out (k == 0), no answer is sent, but a harness on
         * its alternate screen is redrawn all the same; a run that stops needs neither. */
        if (answered || (k == 0 && q->alternate_screen))
                (void) aisb_ask_reply(ctx, q->id, answer, q->alternate_screen ? AISB_ASK_REDRAW : 0, NULL);
}

/* Without a terminal to ask on: where to answer. */
void cli_ask_elsewhere(const aisb_question *q, bool raw)
{
        fputs("aisb: the sandbox asks to reach ", stderr);
        put_destination(stderr, q);
        fprintf(stderr, "; answer within %u s with: aisb ask %s %lu allow|project|user|deny%s", q->seconds_left,
                q->run, q->id, raw ? "\r\n" : "\n");
}

/* ---- aisb ask ---- */

static void ask_help(void)
{
        printf("Usage: aisb ask [--json]\n"
               "       aisb ask RUN ID allow|project|user|deny\n\n"
               "A run that asks (ask = tty) holds a request for a name no allowlist entry lists\n"
               "until it is answered. Without arguments: the questions waiting in your runs.\n"
               "With them: answer one. allow lets the name through for the rest of that run;\n"
               "project and user also add it to the project's or your allowlist; deny refuses\n"
               "it. A question not answered in time (ask-timeout) is refused.\n\n"
               "Exit status: 0; 1 when the question no longer waits or the run is gone;\n"
               "%d for bad arguments; %d when aisb failed.\n",
               EXIT_USAGE, EXIT_AISB_FAILED);
}

typedef struct ask_listing {
        bool json;
        size_t n;
} ask_listing;

static int list_one(const aisb_question *q, void *userdata)
{
        ask_listing *l = userdata;
        l->n++;
        if (l->json) {
                json_object *o = json_object_new_object();
                if (!o)
                        return -ENOMEM;
                json_object_object_add(o, "run", json_object_new_string(q->run));
                json_object_object_add(o, "id", json_object_new_int64((int64_t) q->id));
                json_object_object_add(o, "name", json_object_new_string(q->name));
                json_object_object_add(o, "port", json_object_new_int((int) q->port));
                json_object_object_add(o, "method", json_object_new_string(q->method));
                json_object_object_add(o, "path", json_object_new_string(q->path));
                json_object_object_add(o, "waiting", json_object_new_int((int) q->waiting));
                json_object_object_add(o, "seconds_left", json_object_new_int((int) q->seconds_left));
                cli_print_json(stdout, o);
                json_object_put(o);
                return 0;
        }
        printf("%s %lu ", q->run, q->id);
        put_destination(stdout, q);
        printf(" waiting %u, %u s left\n", q->waiting, q->seconds_left);
        return 0;
}

int command_ask(int argc, char **argv)
{
        bool json = false;
        const char *args[3];
        int n = 0;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        ask_help();
                        return 0;
                } else if (strcmp(argv[i], "--json") == 0) {
                        json = true;
                } else if (argv[i][0] == '-' || n == 3) {
                        fprintf(stderr, "aisb: ask takes no argument '%s' (see aisb ask --help)\n", argv[i]);
                        return EXIT_USAGE;
                } else {
                        args[n++] = argv[i];
                }
        }
        aisb_error *err = NULL;
        if (n == 0) {
                ask_listing l = { .json = json };
                if (aisb_questions(list_one, &l, &err) < 0)
                        return cli_fail(err, EXIT_AISB_FAILED);
                if (!json && l.n == 0)
                        fprintf(stderr, "aisb: no question waits\n");
                return 0;
        }
        static const struct {
                const char *word;
                aisb_answer answer;
        } words[] = { { "allow", AISB_ANSWER_RUN },   { "run", AISB_ANSWER_RUN }, { "project", AISB_ANSWER_PROJECT },
                      { "user", AISB_ANSWER_USER }, { "deny", AISB_ANSWER_DENY } };
        char *end;
        unsigned long id = n == 3 ? strtoul(args[1], &end, 10) : 0;
        size_t w = 0;
        while (n == 3 && w < sizeof words / sizeof words[0] && strcmp(words[w].word, args[2]) != 0)
                w++;
        if (n != 3 || *end || id == 0 || w == sizeof words / sizeof words[0]) {
                fprintf(stderr, "aisb: ask takes RUN ID allow|project|user|deny, as aisb ask lists them\n");
                return EXIT_USAGE;
        }
        if (aisb_question_answer(args[0], id, words[w].answer, &err) < 0)
                return cli_fail(err, 1);
        return 0;
}
