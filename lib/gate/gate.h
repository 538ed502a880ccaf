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
#include "service.h"
#include "gate-squid.h"
#include "image.h"
#include "policy.h"

typedef struct gate_info {
        char *name;
        char *hash;
        /* State directory: config/ (squid.conf, hosts; the gate reads it), logs/ (access.log,
         * cache.log) and tls/ (its CA, made at each start; the gate writes both), leases/ (one
         * locked file per run using the gate; it reads it). */
        char *dir;
        unsigned port;
        bool per_run;  /* holds a run's secrets: removed with the run (gate_release) */
        char *ca_pem;  /* the gate's CA certificate when it intercepts TLS, else NULL */
        /* A per-run gate serves only clients that present this key (as the password of the
         * proxy URL): the gate listens on the host's loopback, which every local user
         * reaches, and it puts the run's secrets into requests. NULL for a shared gate. */
        char *client_key;
        int lease_fd;  /* this run's lease on a shared gate, or -1 */
        char *lease;   /* its name in leases/ */
        /* A gate that asks (gate_request.ask): the run's ends of the FIFOs in ask/, both
         * opened read-write (so neither blocks nor ends while squid restarts its helper),
         * non-blocking: questions (the helper's lines, read here) and answers. Else -1. */
        int ask_questions_fd, ask_answers_fd;
} gate_info;
#define GATE_INFO_NULL ((gate_info) { .lease_fd = -1, .ask_questions_fd = -1, .ask_answers_fd = -1 })
void gate_info_done(gate_info *g);

/* What a run asks of its gate. */
typedef struct gate_request {
        const allowlist *list;
        const char *const *add_hosts;
        const gate_secret *secrets; /* any: a gate of this run's own */
        size_t n_secrets;
        bool ask;                   /* names no entry lists are asked about: a gate of its own */
        unsigned idle_stop_s;       /* a shared gate stops when idle this long; 0: never */
        const image_facts *image;   /* the gate's image (image_gather, IMAGE_GATE) */
} gate_request;

/* Whether the gate on 127.0.0.1:port answers a request with its key (a run's own gate): the
 * request passes the key, is put to squid's held helper, and is then refused (no allowlist
 * names the name). squid holds a request unanswered while that helper is not running, as
 * when something held every port on the loopback as squid started it (another local user
 * can): such a gate serves nothing, and once enough requests pile up squid exits and lets
 * its port go. 0; -ETIMEDOUT when no answer came within timeout_ms; -EIO when the answer was
 * the refusal of a gate whose run is gone (GATE_HELD_PAGE: it cannot see its marker); or
 * -ECANCELED when ctx was stopped meanwhile. A run sends it before its sandbox exists. */
int gate_probe(aisb_ctx *ctx, unsigned port, const char *key, long timeout_ms, aisb_error **err);

/* The gate for allowlist l: found running and ours, or (re)started, waiting until squid
 * listens. Stopped with the context (-ECANCELED), leaving no half-started gate. */
int gate_ensure(aisb_ctx *ctx, const gate_request *req, gate_info *ret, aisb_error **err);
/* The run is done with its gate: a per-run gate is removed and its configuration (which held
 * the secrets) wiped; a shared gate's lease is given back. */
void gate_release(aisb_ctx *ctx, gate_info *g);
/* For aisb clean. Whether the run of a run's own gate (named by its hash) is gone: no lease
 * is held on it (a killed run's gate refuses everything and keeps its port until removed). */
bool gate_run_gone(const char *hash);
/* The state directories of gates podman no longer has (their hash in none of live_hashes),
 * unless a run holds a lease there: each told to fn (its path), then, unless dry, its
 * squid.conf zeroed and the directory removed. Only directories named as gates are (16 hex
 * digits), opened without following links. Negative errno. */
typedef void (*gate_state_fn)(const char *dir, void *userdata);
int gate_prune_states(const char *const *live_hashes, bool dry, gate_state_fn fn, void *userdata);
/* Where the access log ends now: a run's summary reads from there. */
int gate_log_offset(const gate_info *g, long long *ret);
/* Each line of the access log past offset (bounded), to fn. -EBADFD when it is not a regular
 * file. */
int gate_log_read(const gate_info *g, long long offset, int (*fn)(char *line, void *userdata), void *userdata);
