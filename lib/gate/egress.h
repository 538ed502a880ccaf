/* SPDX-License-Identifier: MIT */
/*
 * What a run sent through its gate, from squid's access log to what the user reads: the
 * summary (counted from the log's lines past where the run began; told when the run ends,
 * kept in the session log, read back by aisb allow) and the record.
 *
 * The egress record: every decision of a run's gate as JSON lines in the state directory
 * (egress.log, beside the session log), written when the run ends from the gate's access log
 * (what squid wrote past where the run began: the sandbox's doing, so read bounded and
 * through gate_log_read) and the run's answers to questions (ask.h).
 *
 * A line: time (ms since the epoch), run, name, port, method, url (a request the gate saw
 * whole, without its query; "" for a tunnel), status, decision (allowed, refused or failed),
 * by (what decided: the allowlist entry and where it is written, the gate's refusal page, or
 * "asked"), asked (the answer: run, project, user or deny, when the name was asked about),
 * answered_by (terminal, command, timeout, limit), bytes_out (from the sandbox), bytes_in
 * (to it). A shared gate's record may hold other runs' lines (shared_gate: true).
 */
#pragma once

#include "allowlist.h"
#include "ask.h"
#include "gate.h"
#include "jsonutil.h"

/* What a run sent through its gate, from the access log's lines past where the run began. */
#define EGRESS_NAMES_MAX 8 /* each list's */
typedef struct egress_summary {
        unsigned long allowed, denied;
        unsigned long failed; /* let through by the gate, not completed (egress_count_line) */
        char denied_names[EGRESS_NAMES_MAX][128];
        size_t n_denied_names;
        char denied_requests[EGRESS_NAMES_MAX][160]; /* "METHOD URL" of refused requests the gate saw whole */
        size_t n_denied_requests;
        char failed_names[EGRESS_NAMES_MAX][128];
        size_t n_failed_names;
        /* The gate served every local client, not only the run's (it holds no key): what it
         * refused in the run's time may be another local user's request, or another run's. */
        bool shared_gate;
} egress_summary;
/* Count one access log line (GATE_SQUID_LOGFORMAT); -EBADMSG for a line that is not one. */
int egress_count_line(egress_summary *s, const char *line);
/* The access log past offset, counted. -EBADFD when it is not a regular file. */
int egress_summary_read(const gate_info *g, long long offset, egress_summary *ret);
/* The run's summary, read from the gate's log, to ctx: the EGRESS event and one line of the
 * log (a warning when the gate refused something), or a warning that there is none. Into
 * *ret when there is. */
void egress_report(aisb_ctx *ctx, const gate_info *g, long long offset, egress_summary *ret);
/* The summary as the session log keeps it, and its names read back from there (not the
 * counts: aisb allow needs none): a record from before gates said whether they were shared
 * counts as shared. */
json_object *egress_summary_json(const egress_summary *s);
void egress_summary_from_json(json_object *o, egress_summary *ret);

/* One access log line (GATE_SQUID_LOGFORMAT) as a record, or NULL for a line that is no
 * egress (aisb's own probes) or not one. decisions: the run's answers (may be NULL). */
json_object *egress_record_line(const char *line, const char *run, const allowlist *l, bool shared_gate,
                                const ask_decision *decisions, size_t n_decisions);
/* Append the run's records to egress.log. Negative errno. */
int egress_record_write(const char *run, const gate_info *g, long long offset, const allowlist *l,
                        const ask_state *a);
