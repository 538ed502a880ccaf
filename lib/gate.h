/* SPDX-License-Identifier: MIT */
/*
 * The gate's life: one squid container per allowlist on the host's loopback, started when a
 * run needs it and shared by every run with that allowlist; its state directory, and the
 * reading of its logs, which squid (and so every sandbox's traffic) writes.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "allowlist.h"
#include "context.h"
#include "gate-squid.h"
#include "policy.h"

typedef struct gate_info {
        char *name;
        char *hash;
        char *dir; /* state directory: config/ (squid.conf, hosts), logs/ (access.log, cache.log) */
        unsigned port;
} gate_info;
void gate_info_done(gate_info *g);

/* Who listens on a loopback port, from /proc/net/tcp and tcp6 text. */
typedef struct port_owners {
        bool ours;      /* a LISTEN socket of the user bound to 127.0.0.1:port */
        bool stranger;  /* another uid's LISTEN socket there, or on a wildcard address */
        uid_t stranger_uid;
} port_owners;
/* 1 when the line is a LISTEN socket on port bound to 127.0.0.1 (*ret_exact) or a wildcard
 * (0.0.0.0, ::, ::ffff:0.0.0.0; in tcp6 also ::ffff:127.0.0.1), with its owner; 0 for any
 * other line. */
int proc_net_tcp_line(const char *line, unsigned port, uid_t *ret_uid, bool *ret_exact);
/* Every line of a table's text, added to owners for the user uid. */
int proc_net_tcp_owners(const char *text, unsigned port, uid_t uid, port_owners *owners);
/* Whether a listening socket of this user is bound to 127.0.0.1:port. */
bool gate_port_ours(unsigned port);

/* The gate for allowlist l: found running and ours, or (re)started, waiting until squid
 * listens. Stopped with the context (-ECANCELED), leaving no half-started gate. */
int gate_ensure(aisb_ctx *ctx, const aisb_policy *p, const allowlist *l, gate_info *ret,
                aisb_error **err);
/* Where the access log ends now: a run's summary reads from there. */
int gate_log_offset(const gate_info *g, long long *ret);
/* The access log past offset, counted. -EBADFD when it is not a regular file. */
int gate_summary(const gate_info *g, long long offset, egress_summary *ret);
