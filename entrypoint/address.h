/* SPDX-License-Identifier: MIT */
/*
 * IP destinations as text, read by one parser: the user's allowlist entries (libaisb) and the
 * entrypoint's --allow arguments (aisb-entrypoint) go through the same code, so the two can
 * never read one text differently.
 *
 *   IPv4: A.B.C.D, A.B.C.D/LEN, A.B.C.D:PORT, A.B.C.D/LEN:PORT
 *   IPv6: [V6], [V6]/LEN, [V6]:PORT, [V6]/LEN:PORT, and bare V6 or V6/LEN (no port: colons)
 *
 * Only the one spelling every parser reads alike is taken: four decimal numbers 0..255
 * without leading zeros, a prefix length and a port in decimal without a sign or a leading
 * zero, no zone index. Nothing here allocates, prints or exits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct address {
        int family;       /* AF_INET or AF_INET6 */
        uint8_t addr[16]; /* network byte order; host bits zero on success */
        unsigned prefix;  /* 0..32 or 0..128 */
        unsigned port;    /* 0: none given */
};

/* Longest text address_parse() looks at. */
#define ADDRESS_TEXT_MAX 127

/*
 * 0 on success. -ENOENT: the text is not written as an address at all (a name, perhaps;
 * why says it is no address). -EDOM: host bits are set beyond the prefix length; *ret holds
 * the network with them cleared, for a message that suggests it. -EINVAL otherwise. why gets
 * one line saying what is wrong (without the text itself).
 */
int address_parse(const char *s, struct address *ret, char *why, size_t whylen);

/* A single address, IPv6 when it holds a colon, in the one spelling above; no brackets, no
 * prefix, no port. */
bool address_parse_ip(const char *s, int *ret_family, uint8_t addr[static 16]);

/* Decimal 0..max (at most five digits), no sign, no leading zero except "0" itself: the
 * spelling of a prefix length and a port. -EINVAL. */
int address_parse_decimal(const char *s, unsigned max, unsigned *ret);

/* Whether two blocks share an address (same family). */
bool address_blocks_overlap(const uint8_t *a, unsigned a_prefix, const uint8_t *b, unsigned b_prefix);

/* Canonical text: "10.0.0.0/8", "192.0.2.1" (no /32), "2001:db8::/32"; with_port adds
 * ":PORT" (IPv6 in brackets then) when there is one. */
void address_format(const struct address *a, bool with_port, char *out, size_t size);
