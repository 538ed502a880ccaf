/* SPDX-License-Identifier: MIT */
/*
 * What the gate is made of, as text: its squid configuration and hosts file, generated from
 * the allowlist's canonical entries only (no text from an allowlist file reaches squid.conf
 * unchecked), the hash that names a gate (gate-hash.c) and the --secret credentials squid puts
 * into requests (gate-secret.c). Pure: no I/O. The helper scripts are gate-scripts.h's, the
 * reading of the access log egress.h's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allowlist.h"
#include "error.h"

/* A credential the gate holds for a run (--secret): requests to its hosts, over HTTPS only,
 * carry header: [scheme ]value, whatever the client sent in that header; the sandbox holds only
 * the placeholder. */
typedef struct gate_secret {
        char *name;        /* the variable */
        char **hosts;      /* canonical names, each exactly (no names below them) */
        char *header;      /* "Authorization", "x-api-key", ... */
        char *scheme;      /* "Bearer", or NULL: the value alone */
        char *value;       /* the real value: wiped on free */
        char *placeholder; /* what the sandbox's NAME holds instead */
} gate_secret;
void gate_secret_done(gate_secret *s);
/*
 * Parse "NAME@HOST[,HOST...][/HEADER[:SCHEME]]" and take NAME's value (value: the caller read
 * it, e.g. from the environment). Without /HEADER, the header of a known API host
 * (api.anthropic.com: x-api-key; api.openai.com: Authorization: Bearer; ...), else
 * Authorization: Bearer. The value must be printable ASCII without blanks, quotes, '%' or '\'
 * (squid reads the header line it goes into). The placeholder is "aisb-secret-" and 32
 * random hex digits. -EINVAL with why.
 */
int gate_secret_parse(const char *spec, const char *value, gate_secret *ret, char *why, size_t whylen);
/* n_bytes (at most 32) random bytes as 2 * n_bytes hex digits: a placeholder, the key of a
 * run's own gate, its name. */
int gate_random_hex(size_t n_bytes, char **ret);

/* Bumped whenever the generated squid configuration changes meaning, or the gate's layout
 * (2: config/ read-only, logs/ apart; 3: private ranges and the host's own addresses refused,
 * %err_code logged; 4: NAT64 forms of the local ranges; 5: rules, secrets and interception,
 * refusal pages, the cache manager refused; 6: unlisted names refused before a lookup; 7: the
 * certificate helper's overload fails a handshake, never squid; 8: a request inside an opened
 * connection goes only where the connection goes, TRACE refused where a secret or a rule
 * is, what is not TLS inside a CONNECT tunnelled), so that a gate named by
 * gate_squid_hash() under an older generator is never reused. */
#define GATE_SQUID_VERSION "aisb-gate 9"

/* The logformat of the gate's access log, one request a line, fields separated by one space:
 *   TIME CLIENT METHOD HOST:PORT STATUS SQUID_STATUS BYTES ERROR URL
 * e.g. "1718000000.123 127.0.0.1 CONNECT example.com:443 200 TCP_TUNNEL 5120 - example.com:443".
 * A request the gate refused has SQUID_STATUS TCP_DENIED (STATUS 403, ERROR
 * ERR_ACCESS_DENIED); ERROR names squid's own error page (ERR_CONNECT_FAIL, ERR_DNS_FAIL, ...)
 * and is "-" when the answer came from the destination; STATUS is 0 when the client left
 * before an answer; HOST is "-" when squid could not parse the request. */
#define GATE_SQUID_LOGFORMAT "%ts.%03tu %>a %rm %>rd:%>rP %>Hs %Ss %<st %err_code %ru %>st %{aisb_ask}note"

/* 16 hex characters naming the gate for this policy: SHA-256 over GATE_SQUID_VERSION, the
 * sorted canonical domain entries and the sorted canonical add-host entries. Independent of
 * order, duplicates and spelling ("*.Example.com." = "example.com"). -EINVAL for a bad
 * add-host entry (check them with allowlist_parse_add_host() first for a message). */
int gate_squid_hash(const allowlist *l, const char *const *add_hosts, char **ret_hex);

/* Whether the address is one the gate refuses for a name not mapped on purpose: private and
 * shared ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and the host ranges.
 * Returns the range's text, or NULL. */
const char *gate_local_range(int family, const uint8_t addr[static 16]);

typedef struct squid_options {
        unsigned port;          /* listen on 127.0.0.1:port, 1..65535 */
        /* A gate of its own pod (aisb kube): listen on every address, serve any client; who
         * may connect is the cluster's NetworkPolicy's to say. */
        bool cluster;
        const char *hosts_file; /* path inside the gate container, or NULL */
        /* "NAME:IP" entries the hosts file maps; only these names may reach the local
         * destinations (loopback, link-local, private and shared ranges, the host's own
         * addresses) through the gate. NULL for none. */
        const char *const *add_hosts;
        /* The host's own addresses (IPv4 or IPv6, as getifaddrs() lists them when the gate
         * starts): the gate shares the host's network, so a listed name resolving to one of
         * them would reach the host's services. NULL for none. */
        const char *const *host_addresses;
        const char *access_log; /* NULL: /var/log/squid/access.log */
        const char *cache_log;  /* NULL: /var/log/squid/cache.log */
        /* Interception (TLS bump) of the hosts that need it, those of entries with rules and
         * those of secrets, everything else staying a tunnel: the gate's CA certificate and key
         * as squid reads them, and the certificate generator's database. Required when there
         * are such hosts. */
        const char *bump_cert, *bump_key, *bump_db;
        const gate_secret *secrets;
        size_t n_secrets;
        /* Serve only clients whose requests carry "Proxy-Authorization: Basic" with user
         * GATE_CLIENT_USER and this password (hex digits), on every request not inside a TLS
         * connection the gate opened; the header goes no further. NULL: any local client. */
        const char *client_key;
        /* A helper squid asks about every request with the client key, after the key's rules
         * and before anything is allowed: a script run by /bin/sh, answering OK to refuse
         * (a run's own gate, once its run is gone: it keeps its port and serves nothing, with
         * no reload, which would close the port for a moment). Its answers are not cached; it
         * is asked 32 at a time (channel numbers), 4096 more wait, and a request beyond those
         * is refused. NULL: none. */
        const char *held_helper;
        /* A run that asks its user about names no entry lists (aisb_policy_set_ask): the file
         * holding gate_squid_ask_helper, which relays each such request (a channel number,
         * its method, name, port and URL path) to the run and its answer back ("OK
         * aisb_ask=allow" lets it on to the address checks every listed name passes; "ERR"
         * refuses it). Asked only after the key and the held helper, only for names no entry
         * lists: a listed name never waits. NULL: such names are refused at once. */
        const char *ask_helper;
        /* The file holding gate_squid_tunnel_helper, which squid runs with
         * GATE_TUNNEL_HELPER_AWK; required when the gate intercepts TLS. */
        const char *tunnel_helper;
} squid_options;

/* Requests squid hands the ask helper at once, and queues beyond those. */
#define GATE_ASK_CONCURRENCY 256
#define GATE_CLIENT_USER "aisb"
/* The name aisb's request to a run's own gate asks for (gate_probe): refused, and no
 * egress. */
#define GATE_PROBE_HOST "aisb-gate-probe.invalid"
/* The page (and X-Squid-Error) of a run's own gate that refuses because its run is gone. */
#define GATE_HELD_PAGE "ERR_AISB_HELD"

/* Whether a gate for l (and these secrets) intercepts TLS for some host. */
bool gate_squid_intercepts(const allowlist *l, size_t n_secrets);

/* The ports the gate serves for l's domain entries, ascending, each once: an entry's port, or
 * 80 and 443 for one without. *ret_ports is the caller's to free (never NULL on success, even
 * when *ret_n_ports is 0). -ENOMEM. */
int gate_squid_ports(const allowlist *l, unsigned **ret_ports, size_t *ret_n_ports);

/* The whole squid.conf for the domain entries of l (address entries are not the gate's
 * business). Refuses paths that are not absolute or hold characters squid.conf would
 * interpret. An allowlist without domains yields a configuration that denies everything. */
int gate_squid_config(const allowlist *l, const squid_options *o, char **ret_text,
                           aisb_error **err);

/* The hosts file for add_hosts ("IP NAME" lines), for squid's hosts_file. */
int gate_squid_hosts_file(const char *const *add_hosts, char **ret_text, aisb_error **err);
