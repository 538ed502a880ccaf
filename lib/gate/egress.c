/* SPDX-License-Identifier: MIT */
/*
 * The egress record (egress.h): squid's access log read into the run's summary and into the
 * record's lines, and each rendered where it is read: the run's event and log line, the
 * session log's object, egress.log.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "egress.h"
#include "fileio.h"
#include "jsonutil.h"
#include "userdirs.h"
#include "util.h"

#define EGRESS_LOG "egress.log"
#define EGRESS_FIELDS 11

/* One access log line in GATE_SQUID_LOGFORMAT:
 *   TIME CLIENT METHOD HOST:PORT STATUS SQUID_STATUS BYTES ERROR URL
 * counted as squid 5 and 6 log them (docs/allowlist.md has real lines): denied is the gate's
 * own refusal (TCP_DENIED, also TCP_DENIED_ABORTED when the client left at once); failed is a
 * request the gate let through that did not complete: status 0 (the client left first), an
 * _ABORTED or _TIMEDOUT tag, NONE_NONE/TAG_NONE (squid 5 logs a failed CONNECT so, 6 as
 * TCP_TUNNEL/503), an error page of squid's own (ERR_CONNECT_FAIL, ERR_DNS_FAIL, ...), or a
 * CONNECT that got no tunnel. Everything else reached its destination and got an answer,
 * whatever the status (a 503 of the origin's own is allowed egress). Fields are split on
 * blanks by hand: a field too long for a buffer must not shift the ones after it. */
int egress_count_line(egress_summary *s, const char *line)
{
        const char *field[9] = {};
        size_t len[9] = {}, n = 0;
        for (const char *p = line; n < ELEMENTSOF(field);) {
                while (*p && isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                field[n] = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                len[n] = (size_t) (p - field[n]);
                n++;
        }
#define FIELD_IS(i, text) (len[i] == strlen(text) && strncmp(field[i], text, len[i]) == 0)
#define FIELD_STARTS(i, text) (len[i] >= strlen(text) && strncmp(field[i], text, strlen(text)) == 0)
#define FIELD_HAS(i, text) (memmem(field[i], len[i], text, strlen(text)) != NULL)
        enum { METHOD = 2, HOST = 3, STATUS = 4, TAG = 5, ERROR = 7 };
        if (n <= TAG)
                return -EBADMSG;
        bool no_status = FIELD_IS(STATUS, "0") || FIELD_IS(STATUS, "000");
        /* A connection that sent no request (aisb's own liveness probe) is no egress, nor is
         * aisb's request to a run's own gate, which squid may log after the run's part of the
         * log began. */
        if ((FIELD_IS(METHOD, "-") && no_status) ||
            (FIELD_IS(HOST, GATE_PROBE_HOST ":80") && FIELD_STARTS(TAG, "TCP_DENIED")))
                return 0;
        /* A gate that intercepts TLS logs each CONNECT it intercepts once more as
         * NONE_NONE/200; what follows (the tunnel, or each intercepted request) is
         * counted on its own line. */
        if (FIELD_IS(METHOD, "CONNECT") && FIELD_IS(STATUS, "200") && FIELD_STARTS(TAG, "NONE"))
                return 0;
        /* Older lines (no ERROR field) hold the URL there, which never starts with ERR_. */
        bool has_error = n > ERROR && FIELD_STARTS(ERROR, "ERR_");
        char (*names)[sizeof s->denied_names[0]];
        size_t *n_names;
        if (FIELD_STARTS(TAG, "TCP_DENIED") || (has_error && FIELD_IS(ERROR, "ERR_ACCESS_DENIED"))) {
                s->denied++;
                names = s->denied_names;
                n_names = &s->n_denied_names;
                /* A request the gate saw whole (plain HTTP, or intercepted TLS): which one. */
                enum { URL = 8 };
                if (!FIELD_IS(METHOD, "CONNECT") && n > URL && len[METHOD] < 16 &&
                    (FIELD_STARTS(URL, "http://") || FIELD_STARTS(URL, "https://"))) {
                        char request[sizeof s->denied_requests[0]];
                        snprintf(request, sizeof request, "%.*s %.*s", (int) len[METHOD], field[METHOD],
                                 (int) (len[URL] < sizeof request - 17 ? len[URL] : sizeof request - 17), field[URL]);
                        bool seen = false;
                        for (size_t i = 0; i < s->n_denied_requests && !seen; i++)
                                seen = streq(s->denied_requests[i], request);
                        if (!seen && s->n_denied_requests < ELEMENTSOF(s->denied_requests))
                                memcpy(s->denied_requests[s->n_denied_requests++], request, sizeof request);
                }
        } else if (no_status || FIELD_HAS(TAG, "_ABORTED") || FIELD_HAS(TAG, "_TIMEDOUT") ||
                   FIELD_STARTS(TAG, "NONE") || FIELD_STARTS(TAG, "TAG_NONE") || has_error ||
                   (FIELD_IS(METHOD, "CONNECT") && !FIELD_IS(STATUS, "200"))) {
                s->failed++;
                names = s->failed_names;
                n_names = &s->n_failed_names;
        } else {
                s->allowed++;
                return 0;
        }
#undef FIELD_IS
#undef FIELD_STARTS
#undef FIELD_HAS
        /* The name, with its port unless that is 80 or 443 (what an allowlist entry would
         * say), cut as stored, or repeats never match. */
        char host[sizeof s->denied_names[0]];
        size_t host_len = len[HOST];
        const char *colon = memrchr(field[HOST], ':', host_len);
        if (colon && colon != field[HOST] &&
            ((size_t) (field[HOST] + host_len - colon) == 3 ? strncmp(colon, ":80", 3) == 0
                                                              : (size_t) (field[HOST] + host_len - colon) == 4 &&
                                                                        strncmp(colon, ":443", 4) == 0))
                host_len = (size_t) (colon - field[HOST]);
        snprintf(host, sizeof host, "%.*s", (int) (host_len < sizeof host ? host_len : sizeof host - 1),
                 field[HOST]);
        if (host[0] == '-') /* squid could not parse the request: nothing to name */
                return 0;
        for (size_t i = 0; i < *n_names; i++)
                if (streq(names[i], host))
                        return 0;
        if (*n_names < ELEMENTSOF(s->denied_names))
                memcpy(names[(*n_names)++], host, sizeof host);
        return 0;
}

static int count_line(char *line, void *userdata)
{
        (void) egress_count_line(userdata, line);
        return 0;
}

int egress_summary_read(const gate_info *g, long long offset, egress_summary *ret)
{
        *ret = (egress_summary) { .shared_gate = !g->client_key };
        return gate_log_read(g, offset, count_line, ret);
}

/* A summary's names as the NULL-terminated lists the event and the session log take. */
typedef struct summary_lists {
        const char *denied[EGRESS_NAMES_MAX + 1], *failed[EGRESS_NAMES_MAX + 1], *requests[EGRESS_NAMES_MAX + 1];
} summary_lists;

static void summary_lists_of(const egress_summary *s, summary_lists *ret)
{
        *ret = (summary_lists) {};
        for (size_t i = 0; i < s->n_denied_names; i++)
                ret->denied[i] = s->denied_names[i];
        for (size_t i = 0; i < s->n_denied_requests; i++)
                ret->requests[i] = s->denied_requests[i];
        for (size_t i = 0; i < s->n_failed_names; i++)
                ret->failed[i] = s->failed_names[i];
}

void egress_report(aisb_ctx *ctx, const gate_info *g, long long offset, egress_summary *ret)
{
        egress_summary s;
        int r = egress_summary_read(g, offset, &s);
        if (r < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "egress: no summary: the gate's access log %s",
                         r == -EBADFD ? "is not a regular file (removed when the gate next starts)"
                                      : strerror(-r));
                return;
        }
        *ret = s;
        summary_lists lists;
        summary_lists_of(&s, &lists);
        const aisb_egress egress = { .allowed = s.allowed, .denied = s.denied, .failed = s.failed,
                                     .denied_names = lists.denied, .failed_names = lists.failed,
                                     .denied_requests = lists.requests };
        (void) ctx_emit(ctx, &(aisb_event) { .type = AISB_EVENT_EGRESS, .level = AISB_LOG_INFO, .egress = &egress });
        /* "(denied: a, b; failed: c)": the names behind each count that is not zero. */
        _cleanup_(buffer_free) buffer names = {};
        for (size_t i = 0; i < s.n_denied_names; i++)
                (void) buffer_printf(&names, "%s%s", i ? ", " : " (denied: ", s.denied_names[i]);
        for (size_t i = 0; i < s.n_failed_names; i++)
                (void) buffer_printf(&names, "%s%s", i ? ", " : s.n_denied_names ? "; failed: " : " (failed: ",
                                     s.failed_names[i]);
        for (size_t i = 0; i < s.n_denied_requests; i++)
                (void) buffer_printf(&names, "%s%s", i ? ", " : names.size ? "; refused: " : " (refused: ",
                                     s.denied_requests[i]);
        aisb_log(ctx, s.denied ? AISB_LOG_WARNING : AISB_LOG_INFO,
                 "egress: %lu allowed, %lu denied, %lu failed%s%s", s.allowed, s.denied, s.failed,
                 names.data ? names.data : "", names.data ? ")" : "");
}

json_object *egress_summary_json(const egress_summary *s)
{
        summary_lists lists;
        summary_lists_of(s, &lists);
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_INT64("allowed", (int64_t) s->allowed),
                                            JSON_BUILD_PAIR_INT64("denied", (int64_t) s->denied),
                                            JSON_BUILD_PAIR_STRV("denied_names", lists.denied),
                                            JSON_BUILD_PAIR_STRV("denied_requests", lists.requests),
                                            JSON_BUILD_PAIR_INT64("failed", (int64_t) s->failed),
                                            JSON_BUILD_PAIR_STRV("failed_names", lists.failed),
                                            JSON_BUILD_PAIR_BOOL("shared_gate", s->shared_gate)));
}

/* One list of egress_summary_json's back into its slots (width bytes each), as many as fit. */
static void list_from_json(json_object *o, const char *key, char *slots, size_t width, size_t *n)
{
        json_object *a;
        if (!json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(a) && *n < EGRESS_NAMES_MAX; i++) {
                const char *text = json_object_get_string(json_object_array_get_idx(a, i));
                if (text)
                        snprintf(slots + width * (*n)++, width, "%s", text);
        }
}

void egress_summary_from_json(json_object *o, egress_summary *ret)
{
        *ret = (egress_summary) {};
        list_from_json(o, "denied_names", ret->denied_names[0], sizeof ret->denied_names[0], &ret->n_denied_names);
        list_from_json(o, "denied_requests", ret->denied_requests[0], sizeof ret->denied_requests[0],
                       &ret->n_denied_requests);
        list_from_json(o, "failed_names", ret->failed_names[0], sizeof ret->failed_names[0], &ret->n_failed_names);
        json_object *v;
        ret->shared_gate = !json_object_object_get_ex(o, "shared_gate", &v) || json_object_get_boolean(v);
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
                JSON_BUILD_PAIR_CONDITION(asked, JSON_BUILD_PAIR_STRING("asked", d ? ask_answer_word(d->answer)
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
        _cleanup_free_ char *path = NULL;
        if (aisb_egress_log_path(&path, NULL) < 0)
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
