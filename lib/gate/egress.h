/* SPDX-License-Identifier: MIT */
/*
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

/* One access log line (GATE_SQUID_LOGFORMAT) as a record, or NULL for a line that is no
 * egress (aisb's own probes) or not one. decisions: the run's answers (may be NULL). */
json_object *egress_record_line(const char *line, const char *run, const allowlist *l, bool shared_gate,
                                const ask_decision *decisions, size_t n_decisions);
/* Append the run's records to egress.log. Negative errno. */
int egress_record_write(const char *run, const gate_info *g, long long offset, const allowlist *l,
                        const ask_state *a);
