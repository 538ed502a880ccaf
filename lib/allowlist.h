/* SPDX-License-Identifier: MIT */
/*
 * The network allowlist of --net allow: parsing and checking its entries, and the two things
 * made from it. Domain entries become the squid configuration of the egress gate (a proxy on
 * the host's loopback); IP and CIDR entries become --allow arguments of aisb-entrypoint, which
 * turns them into direct rules of the in-container ruleset.
 *
 * Pure code: no I/O except reading allowlist files, no logging. Every refusal is one line that
 * names where the entry came from ("--allow", or "PATH:LINE"). Internal to libaisb.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The in-container ruleset takes at most this many --allow (entrypoint/netpolicy.h,
 * NETPOLICY_MAX_ALLOW); the allowlist refuses more address entries up front. */
#define ALLOWLIST_MAX_ADDRESSES 64
/* Far above any sane list; bounds the squid configuration and the duplicate search. */
#define ALLOWLIST_MAX_ENTRIES 4096
#define ALLOWLIST_FILE_MAX (1024 * 1024)
/* Longest entry text: a 253-character domain with "*." and ":65535" fits. */
#define ALLOWLIST_ENTRY_MAX 270

/* Bumped whenever the generated squid configuration changes meaning, or the gate's layout
 * (2: config/ read-only, logs/ apart; 3: private ranges and the host's own addresses refused,
 * %err_code logged; 4: NAT64 forms of the local ranges), so that a gate named by
 * allowlist_gate_hash() under an older generator is never reused. */
#define ALLOWLIST_GATE_VERSION "aisb-gate 4"

/* The logformat of the gate's access log, one request a line, fields separated by one space:
 *   TIME CLIENT METHOD HOST:PORT STATUS SQUID_STATUS BYTES ERROR URL
 * e.g. "1718000000.123 127.0.0.1 CONNECT example.com:443 200 TCP_TUNNEL 5120 - example.com:443".
 * A request the gate refused has SQUID_STATUS TCP_DENIED (STATUS 403, ERROR
 * ERR_ACCESS_DENIED); ERROR names squid's own error page (ERR_CONNECT_FAIL, ERR_DNS_FAIL, ...)
 * and is "-" when the answer came from the destination; STATUS is 0 when the client left
 * before an answer; HOST is "-" when squid could not parse the request. */
#define ALLOWLIST_SQUID_LOGFORMAT "%ts.%03tu %>a %rm %>rd:%>rP %>Hs %Ss %<st %err_code %ru"

typedef enum allow_kind {
        ALLOW_DOMAIN,
        ALLOW_ADDRESS, /* an IP address or a CIDR block */
} allow_kind;

typedef struct allow_entry {
        allow_kind kind;
        /* Domain: canonical lowercase, no trailing dot, no "*.".
         * Address: canonical text "10.0.0.0/8", "2001:db8::/32", "192.0.2.1" (no /32 or /128). */
        char *host;
        int family;      /* AF_INET/AF_INET6 for addresses, 0 for domains */
        uint8_t addr[16]; /* addresses: the network, host bits zero; unused for domains */
        unsigned prefix; /* addresses: 0..32 or 0..128; 0 for domains */
        unsigned port;   /* 0 = default: domains 80 and 443, addresses any TCP or UDP port */
        char *origin;    /* "--allow", or "PATH:LINE"; the first one for merged duplicates */
} allow_entry;

typedef struct allowlist {
        allow_entry *entries;
        size_t n;
} allowlist;

void allowlist_done(allowlist *l);

/* Parse one entry and add it (duplicates are merged, the first origin kept). Surrounding
 * whitespace is trimmed; nothing else is forgiven. -EINVAL with "ORIGIN: 'TEXT' ..." on a bad
 * entry, -E2BIG past the limits above. The list is unchanged on failure. */
int allowlist_add(allowlist *l, const char *text, const char *origin, aisb_error **err);

/* Parse a whole allowlist text: one entry a line, '#' comments (whole line, or after
 * whitespace), blank lines, CRLF, a leading UTF-8 BOM. Errors name "ORIGIN:LINE". On failure
 * the entries of earlier lines may already have been added: callers refuse the run anyway.
 * flags: ALLOWLIST_FILE_DOMAINS_ONLY (below), or 0. */
int allowlist_parse_text(allowlist *l, const char *text, size_t size, const char *origin,
                         unsigned flags, aisb_error **err);

/* allowlist_load_file's flags (and allowlist_parse_text's DOMAINS_ONLY). */
#define ALLOWLIST_FILE_OPTIONAL (1u << 0)     /* a missing file is no error */
/* Address entries are refused: for the project's file, which whoever wrote the repository
 * (and the agent) wrote. Names go through the gate, which checks where they resolve;
 * addresses become direct rules of the ruleset, which would check nothing. */
#define ALLOWLIST_FILE_DOMAINS_ONLY (1u << 1)

/* Read and parse an allowlist file (at most ALLOWLIST_FILE_MAX bytes, no NUL bytes). Errors
 * name the path with $HOME shown as "~". */
int allowlist_load_file(allowlist *l, const char *path, unsigned flags, aisb_error **err);

/* The address ranges through which a sandbox reaches the host itself in some network mode
 * aisb uses (slirp4netns, pasta, the host's loopback, link-local and cloud metadata). If
 * the block family/addr/prefix overlaps one, returns that range's description ("127.0.0.0/8,
 * the host's loopback"); otherwise NULL. */
const char *allowlist_host_range(int family, const uint8_t addr[static 16], unsigned prefix);

/* Refuse, with one line naming the entry's origin, every address entry that overlaps a range
 * of allowlist_host_range() or is a catch-all (an IPv4 prefix shorter than /8, IPv6 shorter
 * than /16): unless insecure_allow_host_ranges (--insecure-allow-host-ranges) says so.
 * -EINVAL. */
int allowlist_check_host_ranges(const allowlist *l, bool insecure_allow_host_ranges,
                                aisb_error **err);
/* The same for the host's own addresses (text, as host_own_addresses() gives them): an entry
 * covering one reaches the host's services on it. NULL: none. */
int allowlist_check_host_addresses(const allowlist *l, const char *const *host_addresses,
                                   bool insecure_allow_host_ranges, aisb_error **err);
/* Whether the address is one the gate refuses for a name not mapped on purpose: private and
 * shared ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and the host ranges.
 * Returns the range's text, or NULL. */
const char *allowlist_local_range(int family, const uint8_t addr[static 16]);

size_t allowlist_count_domains(const allowlist *l);
size_t allowlist_count_addresses(const allowlist *l);

/* Whether a request for host:port is allowed by some domain entry: host is the entry or below
 * it, and port is the entry's port (80 or 443 for entries without one). host may be given in
 * any case, with a trailing dot; anything that is not a valid domain is not allowed. This is
 * the rule the generated squid configuration enforces, for tests and for explaining denials. */
bool allowlist_domain_allows(const allowlist *l, const char *host, unsigned port);

/* The aisb-entrypoint --allow argument for an address entry, in the syntax
 * netpolicy_parse_allow() takes: "10.0.0.0/8", "192.0.2.1:5432", "2001:db8::/32",
 * "[2001:db8::1]:443", "[2001:db8::]/32:443". -EINVAL for a domain entry. */
int allowlist_entrypoint_arg(const allow_entry *e, char **ret);

/* Parse "NAME:IP" for --gate-add-host: NAME a domain as in the allowlist or a single label,
 * IP an IPv4 address or an IPv6 address (bare or in brackets). Both returned canonical. */
int allowlist_parse_add_host(const char *text, char **ret_name, char **ret_ip, aisb_error **err);

/* 16 hex characters naming the gate for this policy: SHA-256 over ALLOWLIST_GATE_VERSION, the
 * sorted canonical domain entries and the sorted canonical add-host entries. Independent of
 * order, duplicates and spelling ("*.Example.com." = "example.com"). -EINVAL for a bad
 * add-host entry (check them with allowlist_parse_add_host() first for a message). */
int allowlist_gate_hash(const allowlist *l, const char *const *add_hosts, char **ret_hex);

typedef struct squid_options {
        unsigned port;          /* listen on 127.0.0.1:port, 1..65535 */
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
} squid_options;

/* The whole squid.conf for the domain entries of l (address entries are not the gate's
 * business). Refuses paths that are not absolute or hold characters squid.conf would
 * interpret. An allowlist without domains yields a configuration that denies everything. */
int allowlist_squid_config(const allowlist *l, const squid_options *o, char **ret_text,
                           aisb_error **err);

/* The hosts file for add_hosts ("IP NAME" lines), for squid's hosts_file. */
int allowlist_hosts_file(const char *const *add_hosts, char **ret_text, aisb_error **err);
