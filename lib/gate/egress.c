/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress.h"
#include "fileio.h"
#include "jsonutil.h"
#include "userdirs.h"
#include "util.h"

#define EGRESS_LOG "egress.log"
#define EGRESS_FIELDS 11

static const char *answer_word(aisb_answer a)
{
        switch (a) {
        case AISB_ANSWER_RUN:
                return "run";
        case AISB_ANSWER_PROJECT:
                return "project";
        case AISB_ANSWER_USER:
                return "user";
        default:
                return "deny";
        }
}

/* The decision that answered a request for name:port logged at time_ms: the last one made
 * before it (squid logs a request as it ends; 1 s of slack for the log's rounding) whose
 * answer the log saw (allowed or not). A name refused by a limit early and allowed when
 * asked later has two. NULL when none is on record. */
static const ask_decision *decision_for(const ask_decision *d, size_t n, const char *name, unsigned port,
                                        int64_t time_ms, bool allowed)
{
        const ask_decision *found = NULL;
        for (size_t i = 0; i < n; i++)
                if (d[i].port == port && streq(d[i].name, name) && d[i].time_ms <= time_ms + 1000 &&
                    (d[i].answer != AISB_ANSWER_DENY) == allowed)
                        found = &d[i];
        return found;
}

json_object *egress_record_line(const char *line, const char *run, const allowlist *l, bool shared_gate,
                                const ask_decision *decisions, size_t n_decisions)
{
        /* Counted alone, it says which of the summary's kinds it is. */
        egress_summary one = {};
        if (egress_count_line(&one, line) < 0 || one.allowed + one.denied + one.failed == 0)
                return NULL;
        char copy[4096];
        if (strlen(line) >= sizeof copy)
                return NULL;
        strcpy(copy, line);
        char *field[EGRESS_FIELDS] = {}, *save = NULL;
        size_t n = 0;
        for (char *t = strtok_r(copy, " \t", &save); t && n < EGRESS_FIELDS; t = strtok_r(NULL, " \t", &save))
                field[n++] = t;
        enum { TIME, CLIENT, METHOD, HOST, STATUS, TAG, BYTES_IN, ERROR, URL, BYTES_OUT, ASK };
        if (n <= TAG)
                return NULL;
        /* name:port, the port after the last colon. */
        char *colon = strrchr(field[HOST], ':');
        unsigned long port = colon ? strtoul(colon + 1, NULL, 10) : 0;
        if (colon)
                *colon = 0;
        const char *name = field[HOST];
        double seconds = strtod(field[TIME], NULL);
        bool connect = streq(field[METHOD], "CONNECT");
        const char *url = !connect && n > URL && (startswith(field[URL], "http://") || startswith(field[URL], "https://"))
                                  ? field[URL]
                                  : "";
        const char *decision = one.allowed ? "allowed" : one.denied ? "refused" : "failed";
        bool asked = n > ASK && (streq(field[ASK], "allow") || streq(field[ASK], "deny"));
        int64_t time_ms = (int64_t) (seconds * 1000.0 + 0.5);
        const ask_decision *d = asked ? decision_for(decisions, n_decisions, name, (unsigned) port, time_ms,
                                                     streq(field[ASK], "allow"))
                                      : NULL;
        _cleanup_free_ char *by = NULL;
        if (asked)
                by = strdup("asked");
        else if (one.denied && n > ERROR && startswith(field[ERROR], "ERR_"))
                by = strdup(field[ERROR]);
        else if (!one.denied) {
                const allow_entry *e = allowlist_domain_entry(l, name, (unsigned) port);
                _cleanup_free_ char *text = NULL;
                if (e && allowlist_entry_text(e, &text) >= 0 &&
                    asprintf(&by, "%s (%s)", text, e->origin ? e->origin : "") < 0)
                        by = NULL;
        }
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_INT64("time", time_ms),
                JSON_BUILD_PAIR_STRING("run", run),
                JSON_BUILD_PAIR_STRING("name", name),
                JSON_BUILD_PAIR_INT64("port", (int64_t) port),
                JSON_BUILD_PAIR_STRING("method", field[METHOD]),
                JSON_BUILD_PAIR_STRING("url", url),
                JSON_BUILD_PAIR_INT64("status", strtol(field[STATUS], NULL, 10)),
                JSON_BUILD_PAIR_STRING("decision", decision),
                JSON_BUILD_PAIR_STRING("by", by ? by : ""),
                JSON_BUILD_PAIR_CONDITION(asked, JSON_BUILD_PAIR_STRING("asked", d ? answer_word(d->answer)
                                                                                  : field[ASK])),
                JSON_BUILD_PAIR_CONDITION(d, JSON_BUILD_PAIR_STRING("answered_by", d ? d->by : "")),
                JSON_BUILD_PAIR_INT64("bytes_out", n > BYTES_OUT ? strtoll(field[BYTES_OUT], NULL, 10) : 0),
                JSON_BUILD_PAIR_INT64("bytes_in", strtoll(field[BYTES_IN], NULL, 10)),
                JSON_BUILD_PAIR_CONDITION(shared_gate, JSON_BUILD_PAIR_BOOL("shared_gate", true))));
}

/* Refusals recorded one by one in a run, of requests no question was about (a name no entry
 * lists, an address): a flood of them is counted in the run's summary beyond this. Every
 * allowed request and every asked one is recorded, so a flood cannot push them out. */
#define EGRESS_REFUSALS_RECORDED 4032
/* What the writer gathers before it appends, so that a long run's record never sits whole in
 * memory. */
#define EGRESS_FLUSH_SIZE (64 * 1024)

typedef struct record_writer {
        const char *run;
        const allowlist *l;
        bool shared_gate;
        const ask_decision *decisions;
        size_t n_decisions;
        int fd;
        size_t refusals;
        buffer out;
} record_writer;

static int flush(record_writer *w)
{
        int r = w->out.size ? write_all(w->fd, w->out.data, w->out.size) : 0;
        buffer_free(&w->out);
        return r;
}

static int write_line(char *line, void *userdata)
{
        record_writer *w = userdata;
        _cleanup_json_ json_object *o = egress_record_line(line, w->run, w->l, w->shared_gate, w->decisions,
                                                         w->n_decisions);
        if (!o)
                return 0;
        json_object *v;
        bool refused = json_object_object_get_ex(o, "decision", &v) && streq(json_object_get_string(v), "refused");
        if (refused && !json_object_object_get_ex(o, "asked", NULL) && ++w->refusals > EGRESS_REFUSALS_RECORDED)
                return 0;
        _cleanup_free_ char *safe = NULL;
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || json_text_safe(text, &safe) < 0 || buffer_printf(&w->out, "%s\n", safe) < 0)
                return -ENOMEM;
        return w->out.size >= EGRESS_FLUSH_SIZE ? flush(w) : 0;
}

int egress_record_write(const char *run, const gate_info *g, long long offset, const allowlist *l,
                        const ask_state *a)
{
        _cleanup_free_ char *dir = NULL, *path = NULL;
        if (state_dir(NULL, &dir, NULL) < 0 || asprintf(&path, "%s/" EGRESS_LOG, dir) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* A run's lines go in whole or not at all: a full disk leaves no half line for the
         * reader. Under a lock, so that the cut takes back only this run's lines. */
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        record_writer w = { .run = run, .l = l, .shared_gate = !g->client_key, .fd = fd };
        if (a)
                w.decisions = ask_decisions(a, &w.n_decisions);
        /* Refused without a request reaching the log: the limit's refusals are in squid's log
         * too; a question that timed out or was denied is, as its request's line. */
        int r = gate_log_read(g, offset, write_line, &w);
        if (r >= 0)
                r = flush(&w);
        buffer_free(&w.out);
        if (r < 0)
                (void) !ftruncate(fd, st.st_size);
        return r;
}

int aisb_egress_log_path(char **ret_path, aisb_error **err)
{
        _cleanup_free_ char *dir = NULL;
        int r = state_dir(NULL, &dir, err);
        if (r < 0)
                return r;
        if (asprintf(ret_path, "%s/" EGRESS_LOG, dir) < 0)
                return error_oom(err);
        return 0;
}
