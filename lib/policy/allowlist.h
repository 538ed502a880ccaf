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
/* Longest entry with its rules. */
#define ALLOWLIST_LINE_MAX 4096

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
        /* Domains only: the requests allowed, in canonical text ("GET,HEAD /repos/acme/ /user"):
         * methods (all when none is named), then path prefixes (all when none is named). NULL:
         * every request. The gate intercepts a host with rules to see them (gate-squid.h). */
        char *rules;
        unsigned methods; /* ALLOW_METHOD_* bits of rules; 0: every method */
} allow_entry;

enum {
        ALLOW_METHOD_GET = 1 << 0,
        ALLOW_METHOD_HEAD = 1 << 1,
        ALLOW_METHOD_OPTIONS = 1 << 2,
        ALLOW_METHOD_POST = 1 << 3,
        ALLOW_METHOD_PUT = 1 << 4,
        ALLOW_METHOD_PATCH = 1 << 5,
        ALLOW_METHOD_DELETE = 1 << 6,
};
/* "read-only" in a rule: what cannot change anything on a well-behaved server. */
#define ALLOW_METHODS_READ_ONLY (ALLOW_METHOD_GET | ALLOW_METHOD_HEAD | ALLOW_METHOD_OPTIONS)
#define ALLOWLIST_MAX_PATHS 16
#define ALLOWLIST_PATH_MAX 128
/* The name of a method bit, "GET"...; NULL for anything else. */
const char *allowlist_method_name(unsigned bit);

typedef struct allowlist {
        allow_entry *entries;
        size_t n;
} allowlist;

void allowlist_done(allowlist *l);
/* Append a copy of e (host, origin and rules copied). -ENOMEM. */
int allowlist_append_copy(allowlist *l, const allow_entry *e);
/* The entry as it would be written again: "host[:port][ rules]", "[v6]:port", "10.0.0.0/8". */
int allowlist_entry_text(const allow_entry *e, char **ret);

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
size_t allowlist_count_domains(const allowlist *l);
size_t allowlist_count_addresses(const allowlist *l);

/* Whether a path (with its query), decoded once as the gate decodes it before it matches
 * prefixes, holds a segment "." or ".." (ended by / ? ; # or the end), a backslash, or %2e,
 * %2f or %5c (encoded twice): what a server could resolve past a prefix. A host with rules
 * refuses such requests. */
bool allowlist_path_odd(const char *path);

/* Whether a request for host:port is allowed by some domain entry, the rule the gate enforces
 * (for tests and for explaining denials): host is the entry or below it, and port is the
 * entry's port (80 or 443 for entries without one); host may be given in any case, with a
 * trailing dot; anything that is not a valid domain is not allowed. With a method and a path
 * (method NULL for a CONNECT, which only names the host) the entry's rules must let it through. */
bool allowlist_request_allows(const allowlist *l, const char *host, unsigned port, const char *method,
                              const char *path);
/* Append lines to the project's .ai-sandbox/allow (project: its directory; names only, as
 * that file's reader takes them) or, with project NULL, to the user's allowlist: every line
 * checked first (nothing is written when one is refused), each file reached through
 * descriptors without following a link, a newline added before them when the file's last
 * line has none. */
int allowlist_file_append(const char *project, const char *const *lines, aisb_error **err);
/* The first domain entry that allows host:port, or NULL. */
const allow_entry *allowlist_domain_entry(const allowlist *l, const char *host, unsigned port);

/* The aisb-entrypoint --allow argument for an address entry, in the syntax
 * netpolicy_parse_allow() takes: "10.0.0.0/8", "192.0.2.1:5432", "2001:db8::/32",
 * "[2001:db8::1]:443", "[2001:db8::]/32:443". -EINVAL for a domain entry. */
int allowlist_entrypoint_arg(const allow_entry *e, char **ret);

/* Parse "NAME:IP" for --gate-add-host: NAME a domain as in the allowlist or a single label,
 * IP an IPv4 address or an IPv6 address (bare or in brackets). Both returned canonical. */
int allowlist_parse_add_host(const char *text, char **ret_name, char **ret_ip, aisb_error **err);

/* What a message shows of untrusted text: printable ASCII as is, anything else as \xNN, at
 * most 64 input characters ("..." after). */
#define ALLOWLIST_SHOWN_MAX (64 * 4 + 4)
void allowlist_show(const char *text, size_t len, char out[static ALLOWLIST_SHOWN_MAX]);

/* host's canonical form as a name (lower case, no final dot), newly allocated, or NULL: no
 * host name, or out of memory. */
char *allowlist_domain_canonical(const char *host);

/* name (canonical) is host (canonical) or a name below it. */
bool allowlist_domain_covers(const char *host, const char *name);
