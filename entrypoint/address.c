/* SPDX-License-Identifier: MIT */
#include "address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

static bool only(const char *s, size_t len, const char *set)
{
        return strspn(s, set) >= len && len <= strlen(s);
}

int address_parse_decimal(const char *s, unsigned max, unsigned *ret)
{
        size_t len = strlen(s);
        if (len == 0 || len > 5 || !only(s, len, "0123456789") || (s[0] == '0' && len > 1))
                return -EINVAL;
        unsigned long v = strtoul(s, NULL, 10);
        if (v > max)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* IPv4 only as four decimal numbers 0..255 without leading zeros: checked by a round trip,
 * not by trusting the libc's leniency. IPv6 as inet_pton reads it (no zone index). */
static bool parse_ip(int family, const char *s, uint8_t addr[static 16])
{
        memset(addr, 0, 16);
        if (inet_pton(family, s, addr) != 1)
                return false;
        if (family == AF_INET6)
                return true;
        char back[INET_ADDRSTRLEN];
        return inet_ntop(AF_INET, addr, back, sizeof back) && strcmp(back, s) == 0;
}

bool address_parse_ip(const char *s, int *ret_family, uint8_t addr[static 16])
{
        int family = strchr(s, ':') ? AF_INET6 : AF_INET;
        if (!parse_ip(family, s, addr))
                return false;
        *ret_family = family;
        return true;
}

static int finish(int family, const char *addr_text, const char *prefix_text, const char *port_text,
                  struct address *ret, char *why, size_t whylen)
{
        struct address a = { .family = family };
        unsigned bits = family == AF_INET ? 32 : 128;
        if (!parse_ip(family, addr_text, a.addr))
                return family == AF_INET
                               ? WHY("not an IPv4 address: four decimal numbers 0..255 without leading zeros")
                               : WHY("not an IPv6 address");
        a.prefix = bits;
        if (prefix_text && address_parse_decimal(prefix_text, bits, &a.prefix) < 0)
                return WHY("the prefix length must be a number from 0 to %u", bits);
        if (port_text && (address_parse_decimal(port_text, 65535, &a.port) < 0 || a.port == 0))
                return WHY("the port must be a number from 1 to 65535");
        bool host_bits = false;
        for (unsigned i = a.prefix; i < bits; i++)
                if (a.addr[i / 8] & (0x80u >> (i % 8))) {
                        host_bits = true;
                        a.addr[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
                }
        *ret = a;
        if (host_bits) {
                snprintf(why, whylen, "has host bits set beyond /%u", a.prefix);
                return -EDOM;
        }
        return 0;
}

int address_parse(const char *s, struct address *ret, char *why, size_t whylen)
{
        char buf[ADDRESS_TEXT_MAX + 1];
        if (!s || !*s)
                return WHY("empty");
        if (strlen(s) > ADDRESS_TEXT_MAX)
                return WHY("longer than %d characters", ADDRESS_TEXT_MAX);
        strcpy(buf, s);

        if (buf[0] == '[') {
                char *close = strchr(buf, ']');
                if (!close)
                        return WHY("'[' without ']'");
                *close = 0;
                char *rest = close + 1, *prefix = NULL, *port = NULL;
                if (*rest == '/') {
                        prefix = rest + 1;
                        char *colon = strchr(prefix, ':');
                        if (colon) {
                                *colon = 0;
                                port = colon + 1;
                        }
                } else if (*rest == ':')
                        port = rest + 1;
                else if (*rest)
                        return WHY("unexpected text after ']'");
                if (!strchr(buf + 1, ':'))
                        return WHY("brackets are for IPv6 addresses only");
                return finish(AF_INET6, buf + 1, prefix, port, ret, why, whylen);
        }
        if (strchr(buf, ']'))
                return WHY("']' without '['");

        char *colon = strchr(buf, ':');
        if (colon && strchr(colon + 1, ':')) {
                /* Two or more colons: a bare IPv6 address, which cannot carry a port. */
                char *slash = strchr(buf, '/');
                if (slash)
                        *slash = 0;
                return finish(AF_INET6, buf, slash ? slash + 1 : NULL, NULL, ret, why, whylen);
        }
        char *port = NULL;
        if (colon) {
                *colon = 0;
                port = colon + 1;
                if (!buf[0])
                        return WHY("nothing before ':'");
        }
        /* Digits and dots only, with one digit at least (".." is a broken name), is meant as
         * an IPv4 address and must be one; anything else is no address. */
        char *slash = strchr(buf, '/');
        size_t addr_len = slash ? (size_t) (slash - buf) : strlen(buf);
        const char *digit = strpbrk(buf, "0123456789");
        if (!only(buf, addr_len, "0123456789.") || !digit || (size_t) (digit - buf) >= addr_len) {
                snprintf(why, whylen, "not an IP address");
                return -ENOENT;
        }
        if (slash)
                *slash = 0;
        return finish(AF_INET, buf, slash ? slash + 1 : NULL, port, ret, why, whylen);
}

bool address_blocks_overlap(const uint8_t *a, unsigned a_prefix, const uint8_t *b, unsigned b_prefix)
{
        /* Two CIDR blocks overlap exactly when they agree on the shorter prefix. */
        unsigned n = a_prefix < b_prefix ? a_prefix : b_prefix;
        for (unsigned i = 0; i < n; i++) {
                unsigned mask = 0x80u >> (i % 8);
                if ((a[i / 8] & mask) != (b[i / 8] & mask))
                        return false;
        }
        return true;
}

void address_format(const struct address *a, bool with_port, char *out, size_t size)
{
        char text[INET6_ADDRSTRLEN];
        (void) inet_ntop(a->family, a->addr, text, sizeof text);
        bool full = a->prefix == (a->family == AF_INET ? 32u : 128u);
        bool port = with_port && a->port;
        if (port && a->family == AF_INET6 && full)
                (void) snprintf(out, size, "[%s]:%u", text, a->port);
        else if (port && a->family == AF_INET6)
                (void) snprintf(out, size, "[%s]/%u:%u", text, a->prefix, a->port);
        else if (port && full)
                (void) snprintf(out, size, "%s:%u", text, a->port);
        else if (port)
                (void) snprintf(out, size, "%s/%u:%u", text, a->prefix, a->port);
        else if (full)
                (void) snprintf(out, size, "%s", text);
        else
                (void) snprintf(out, size, "%s/%u", text, a->prefix);
}
