/* SPDX-License-Identifier: MIT */
/*
 * The allowlist of --net allow (see allowlist.h and docs/allowlist.md).
 *
 * Parsing is strict on purpose: an entry means exactly one thing or it is refused. Anything a
 * resolver, a URL parser or squid could read differently from us (octal or hex dotted forms,
 * numeric top-level labels, schemes, paths, user information, bare wildcards) is an error
 * with the entry's origin, never a guess. The squid configuration is built only from
 * canonical entries, so no text from an allowlist file reaches squid.conf unchecked.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "allowlist.h"

#define DOMAIN_MAX 253
#define LABEL_MAX 63
#define WHY_MAX 192

/* What a message shows of an entry: printable ASCII as is, anything else as \xNN, at most 64
 * input characters. Hostile lines must not reach a terminal raw. */
#define SHOWN_MAX (64 * 4 + 4)
static void show_entry(const char *text, size_t len, char out[static SHOWN_MAX])
{
        size_t o = 0;
        for (size_t i = 0; i < len && i < 64; i++) {
                unsigned char c = (unsigned char) text[i];
                if (c >= 0x20 && c < 0x7f && c != '\\')
                        out[o++] = (char) c;
                else
                        o += (size_t) snprintf(out + o, 5, "\\x%02x", c);
        }
        if (len > 64) {
                memcpy(out + o, "...", 3);
                o += 3;
        }
        out[o] = 0;
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool all_of(const char *s, size_t len, const char *set)
{
        for (size_t i = 0; i < len; i++)
                if (!s[i] || !strchr(set, s[i]))
                        return false;
        return true;
}

/* 1..65535, digits only, no sign, no leading zero. */
static int parse_port(const char *s, unsigned *ret)
{
        size_t len = strlen(s);
        if (len == 0 || len > 5 || !all_of(s, len, "0123456789") || s[0] == '0')
                return -EINVAL;
        unsigned long v = strtoul(s, NULL, 10);
        if (v < 1 || v > 65535)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* 0..bits, digits only, no leading zero except "0" itself. */
static int parse_prefix(const char *s, unsigned bits, unsigned *ret)
{
        size_t len = strlen(s);
        if (len == 0 || len > 3 || !all_of(s, len, "0123456789") || (s[0] == '0' && len > 1))
                return -EINVAL;
        unsigned long v = strtoul(s, NULL, 10);
        if (v > bits)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* An IPv4 address only in the one form every parser reads the same way: four decimal numbers
 * 0..255 without leading zeros. Checked by a round trip, not by trusting the libc's leniency. */
static bool parse_ipv4(const char *s, uint8_t addr[static 4])
{
        char back[INET_ADDRSTRLEN];
        return inet_pton(AF_INET, s, addr) == 1 && inet_ntop(AF_INET, addr, back, sizeof back) &&
               streq(back, s);
}

static bool parse_ipv6(const char *s, uint8_t addr[static 16])
{
        /* inet_pton refuses zone indexes ("%eth0"), which mean nothing outside this host. */
        return inet_pton(AF_INET6, s, addr) == 1;
}

/*
 * Check a host name and write its canonical form (lowercase, no trailing dot, no "*.") to out.
 * On failure, why says what is wrong. The last label may not look numeric: "1.2.3.4.5",
 * "0x7f.1" and "10.1" are what URL parsers and resolvers turn into addresses.
 */
static int domain_canonical(const char *in, bool allow_wildcard, bool allow_single_label,
                            char out[static DOMAIN_MAX + 2], char *why, size_t whylen)
{
        size_t len = strlen(in);
        if (allow_wildcard && startswith(in, "*.")) {
                in += 2;
                len -= 2;
        }
        if (len > 0 && in[len - 1] == '.')
                len--;
        if (len == 0)
                return snprintf(why, whylen, "empty host name"), -EINVAL;
        if (len > DOMAIN_MAX)
                return snprintf(why, whylen, "host name longer than %d characters", DOMAIN_MAX),
                       -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = in[i];
                if (c == '*')
                        return snprintf(why, whylen, "a wildcard is only allowed as a leading '*.'"),
                               -EINVAL;
                if (c == '_')
                        return snprintf(why, whylen, "'_' is not allowed in a host name"), -EINVAL;
                if (c == '/')
                        return snprintf(why, whylen, "a path: give the host name only"), -EINVAL;
                if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
                    c != '-' && c != '.')
                        return snprintf(why, whylen, "'%c' is not allowed in a host name", c), -EINVAL;
                out[i] = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
        }
        out[len] = 0;

        size_t labels = 0;
        const char *last = out;
        for (const char *label = out;; labels++) {
                const char *dot = strchr(label, '.');
                size_t n = dot ? (size_t) (dot - label) : strlen(label);
                if (n == 0)
                        return snprintf(why, whylen, "empty label ('..' or a leading '.')"), -EINVAL;
                if (n > LABEL_MAX)
                        return snprintf(why, whylen, "label longer than %d characters", LABEL_MAX),
                               -EINVAL;
                if (label[0] == '-' || label[n - 1] == '-')
                        return snprintf(why, whylen, "a label starts or ends with '-'"), -EINVAL;
                last = label;
                if (!dot)
                        break;
                label = dot + 1;
        }
        labels++;
        if (labels < 2 && !allow_single_label)
                return snprintf(why, whylen, "a single label: give a full name such as example.com"),
                       -EINVAL;
        size_t last_len = strlen(last);
        if (all_of(last, last_len, "0123456789") ||
            (startswith(last, "0x") && all_of(last + 2, last_len - 2, "0123456789abcdef")))
                return snprintf(why, whylen, "looks like an IP address but is not four decimal "
                                             "numbers 0..255 without leading zeros"),
                       -EINVAL;
        return 0;
}

static void format_address(int family, const uint8_t *addr, unsigned prefix, char *out, size_t size)
{
        char text[INET6_ADDRSTRLEN];
        (void) inet_ntop(family, addr, text, sizeof text);
        if (prefix == (family == AF_INET ? 32u : 128u))
                (void) snprintf(out, size, "%s", text);
        else
                (void) snprintf(out, size, "%s/%u", text, prefix);
}

/* An address entry whose pieces are already split: address, prefix length or NULL, port or
 * NULL. Host bits set are refused with the network written out as a suggestion. */
static int parse_address(int family, const char *addr_text, const char *prefix_text,
                         const char *port_text, allow_entry *e, char *why, size_t whylen,
                         bool *ret_plain_why)
{
        uint8_t addr[16] = {};
        unsigned bits = family == AF_INET ? 32 : 128;

        if (family == AF_INET ? !parse_ipv4(addr_text, addr) : !parse_ipv6(addr_text, addr)) {
                if (family == AF_INET)
                        snprintf(why, whylen, "not an IPv4 address: four decimal numbers 0..255 "
                                              "without leading zeros");
                else
                        snprintf(why, whylen, "not an IPv6 address");
                return -EINVAL;
        }
        unsigned prefix = bits;
        if (prefix_text && parse_prefix(prefix_text, bits, &prefix) < 0)
                return snprintf(why, whylen, "the prefix length must be a number from 0 to %u", bits),
                       -EINVAL;
        unsigned port = 0;
        if (port_text && parse_port(port_text, &port) < 0)
                return snprintf(why, whylen, "the port must be a number from 1 to 65535"), -EINVAL;

        uint8_t network[16];
        memcpy(network, addr, sizeof network);
        for (unsigned i = prefix; i < bits; i++)
                network[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
        if (memcmp(network, addr, bits / 8) != 0) {
                /* A typo more often than not; widening or narrowing it silently would be worse. */
                char net[INET6_ADDRSTRLEN], entry[INET6_ADDRSTRLEN + 32];
                (void) inet_ntop(family, network, net, sizeof net);
                if (port && family == AF_INET6)
                        snprintf(entry, sizeof entry, "[%s]/%u:%u", net, prefix, port);
                else if (port)
                        snprintf(entry, sizeof entry, "%s/%u:%u", net, prefix, port);
                else
                        snprintf(entry, sizeof entry, "%s/%u", net, prefix);
                snprintf(why, whylen, "has host bits set beyond /%u: did you mean %s?", prefix, entry);
                *ret_plain_why = true;
                return -EINVAL;
        }

        char canonical[INET6_ADDRSTRLEN + 8];
        format_address(family, network, prefix, canonical, sizeof canonical);
        e->host = strdup(canonical);
        if (!e->host)
                return -ENOMEM;
        e->kind = ALLOW_ADDRESS;
        e->family = family;
        memcpy(e->addr, network, sizeof e->addr);
        e->prefix = prefix;
        e->port = port;
        return 0;
}

/*
 * Parse one trimmed entry into e (host allocated, origin not set). On -EINVAL why holds the
 * reason; *ret_plain_why says it is a whole predicate ("has host bits set ...") rather than a
 * reason for "is not a domain, IP or CIDR (...)".
 */
static int parse_entry(const char *s, allow_entry *e, char *why, size_t whylen, bool *ret_plain_why)
{
        size_t len = strlen(s);
        *ret_plain_why = false;

        if (len == 0)
                return snprintf(why, whylen, "empty"), -EINVAL;
        if (len > ALLOWLIST_ENTRY_MAX)
                return snprintf(why, whylen, "longer than %d characters", ALLOWLIST_ENTRY_MAX),
                       -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (is_space((char) c))
                        return snprintf(why, whylen, "whitespace inside the entry"), -EINVAL;
                if (c < 0x20 || c == 0x7f)
                        return snprintf(why, whylen, "a control character"), -EINVAL;
                if (c >= 0x80)
                        return snprintf(why, whylen, "a non-ASCII character: write international "
                                                     "names in their xn-- form"),
                               -EINVAL;
        }
        if (strstr(s, "://"))
                return snprintf(why, whylen, "a URL: give the host name only, without scheme"),
                       -EINVAL;
        if (strchr(s, '@'))
                return snprintf(why, whylen, "user information ('@') is not allowed"), -EINVAL;

        char buf[ALLOWLIST_ENTRY_MAX + 1];
        memcpy(buf, s, len + 1);

        if (buf[0] == '[') {
                /* [v6], [v6]:port, [v6]/len, [v6]/len:port: the syntax of aisb-entrypoint. */
                char *close = strchr(buf, ']');
                if (!close)
                        return snprintf(why, whylen, "'[' without ']'"), -EINVAL;
                *close = 0;
                char *rest = close + 1, *prefix = NULL, *port = NULL;
                if (*rest == '/') {
                        prefix = rest + 1;
                        char *colon = strchr(prefix, ':');
                        if (colon) {
                                *colon = 0;
                                port = colon + 1;
                        }
                } else if (*rest == ':') {
                        port = rest + 1;
                } else if (*rest) {
                        return snprintf(why, whylen, "unexpected text after ']'"), -EINVAL;
                }
                if (!strchr(buf + 1, ':'))
                        return snprintf(why, whylen, "brackets are for IPv6 addresses only"), -EINVAL;
                return parse_address(AF_INET6, buf + 1, prefix, port, e, why, whylen, ret_plain_why);
        }
        if (strchr(buf, ']'))
                return snprintf(why, whylen, "']' without '['"), -EINVAL;

        char *colon = strchr(buf, ':');
        if (colon && strchr(colon + 1, ':')) {
                /* Two or more colons: a bare IPv6 address, which cannot carry a port. */
                char *slash = strchr(buf, '/');
                if (slash)
                        *slash = 0;
                return parse_address(AF_INET6, buf, slash ? slash + 1 : NULL, NULL, e, why, whylen,
                                     ret_plain_why);
        }

        char *port = NULL;
        if (colon) {
                *colon = 0;
                port = colon + 1;
                if (!buf[0])
                        return snprintf(why, whylen, "nothing before ':'"), -EINVAL;
        }
        /* Digits and dots only (with one digit at least: ".." is a broken name) is meant as
         * an IPv4 address, and must be one. */
        char *slash = strchr(buf, '/');
        size_t addr_len = slash ? (size_t) (slash - buf) : strlen(buf);
        if (all_of(buf, addr_len, "0123456789.") && strpbrk(buf, "0123456789") &&
            (size_t) (strpbrk(buf, "0123456789") - buf) < addr_len) {
                if (slash)
                        *slash = 0;
                return parse_address(AF_INET, buf, slash ? slash + 1 : NULL, port, e, why, whylen,
                                     ret_plain_why);
        }

        char host[DOMAIN_MAX + 2];
        int r = domain_canonical(buf, true, false, host, why, whylen);
        if (r < 0)
                return r;
        unsigned port_number = 0;
        if (port && parse_port(port, &port_number) < 0)
                return snprintf(why, whylen, "the port must be a number from 1 to 65535"), -EINVAL;
        e->host = strdup(host);
        if (!e->host)
                return -ENOMEM;
        e->kind = ALLOW_DOMAIN;
        e->family = 0;
        e->prefix = 0;
        e->port = port_number;
        return 0;
}

void allowlist_done(allowlist *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->entries[i].host);
                free(l->entries[i].origin);
        }
        free(l->entries);
        *l = (allowlist) {};
}

size_t allowlist_count_domains(const allowlist *l)
{
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += l->entries[i].kind == ALLOW_DOMAIN;
        return n;
}

size_t allowlist_count_addresses(const allowlist *l)
{
        return l->n - allowlist_count_domains(l);
}

static size_t capacity_for(size_t n)
{
        size_t c = 8;
        while (c < n)
                c *= 2;
        return c;
}

static int add_trimmed(allowlist *l, const char *text, size_t len, const char *origin,
                       unsigned flags, aisb_error **err)
{
        char shown[SHOWN_MAX];
        show_entry(text, len, shown);
        if (memchr(text, 0, len))
                return aisb_error_set(err, -EINVAL, "%s: '%s' is not a domain, IP or CIDR (a NUL byte)",
                                      origin, shown);
        if (len > ALLOWLIST_ENTRY_MAX)
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s' is not a domain, IP or CIDR (longer than %d characters)",
                                      origin, shown, ALLOWLIST_ENTRY_MAX);
        char copy[ALLOWLIST_ENTRY_MAX + 1];
        memcpy(copy, text, len);
        copy[len] = 0;

        allow_entry e = {};
        char why[WHY_MAX];
        bool plain_why;
        int r = parse_entry(copy, &e, why, sizeof why, &plain_why);
        if (r == -ENOMEM)
                return aisb_error_set(err, r, "out of memory");
        if (r < 0) {
                if (plain_why)
                        return aisb_error_set(err, r, "%s: '%s' %s", origin, shown, why);
                return aisb_error_set(err, r, "%s: '%s' is not a domain, IP or CIDR (%s)", origin,
                                      shown, why);
        }
        _cleanup_free_ char *host = e.host;
        if (e.kind == ALLOW_ADDRESS && (flags & ALLOWLIST_FILE_DOMAINS_ONLY))
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s' is an address, and a project's allowlist may name "
                                      "domains only: put it in --allow or ~/.config/ai-sandbox/allow",
                                      origin, shown);

        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *o = &l->entries[i];
                if (o->kind == e.kind && o->port == e.port && streq(o->host, e.host))
                        return 0; /* a duplicate: the first origin stays */
        }
        if (l->n >= ALLOWLIST_MAX_ENTRIES)
                return aisb_error_set(err, -E2BIG, "%s: too many allowlist entries (at most %d)",
                                      origin, ALLOWLIST_MAX_ENTRIES);
        if (e.kind == ALLOW_ADDRESS && allowlist_count_addresses(l) >= ALLOWLIST_MAX_ADDRESSES)
                return aisb_error_set(err, -E2BIG,
                                      "%s: too many IP and CIDR entries (at most %d, the sandbox "
                                      "ruleset's limit): merge them into wider CIDR blocks",
                                      origin, ALLOWLIST_MAX_ADDRESSES);

        e.origin = strdup(origin);
        if (!e.origin)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        /* Grow geometrically without a capacity field that could go stale: other code grows
         * lists by hand with realloc to exactly n, and may. The allocator knows the real size. */
        if (!l->entries || malloc_usable_size(l->entries) < (l->n + 1) * sizeof *l->entries) {
                allow_entry *entries = realloc(l->entries, capacity_for(l->n + 1) * sizeof *entries);
                if (!entries) {
                        free(e.origin);
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                }
                l->entries = entries;
        }
        e.host = steal_pointer(&host);
        l->entries[l->n++] = e;
        return 0;
}

int allowlist_add(allowlist *l, const char *text, const char *origin, aisb_error **err)
{
        size_t len = strlen(text);
        while (len > 0 && is_space(*text))
                text++, len--;
        while (len > 0 && is_space(text[len - 1]))
                len--;
        return add_trimmed(l, text, len, origin, 0, err);
}

static int parse_text(allowlist *l, const char *text, size_t size, const char *origin,
                      unsigned flags, aisb_error **err)
{
        const char *end = text + size;
        /* A UTF-8 byte order mark from an editor is harmless at the start, and only there. */
        if (size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                text += 3;

        unsigned line_no = 0;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                const char *p = line, *q = nl ? nl : end;
                line = nl ? nl + 1 : end;
                line_no++;

                /* A comment starts at a '#' that opens the line or follows whitespace; a '#'
                 * inside an entry stays and is refused with it. */
                for (const char *c = p; c < q; c++)
                        if (*c == '#' && (c == p || *(c - 1) == ' ' || *(c - 1) == '\t')) {
                                q = c;
                                break;
                        }
                while (p < q && is_space(*p))
                        p++;
                while (q > p && is_space(*(q - 1)))
                        q--;
                if (p == q)
                        continue;

                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "%s:%u", origin, line_no) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                int r = add_trimmed(l, p, (size_t) (q - p), where, flags, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int allowlist_parse_text(allowlist *l, const char *text, size_t size, const char *origin,
                         unsigned flags, aisb_error **err)
{
        return parse_text(l, text, size, origin, flags & ALLOWLIST_FILE_DOMAINS_ONLY, err);
}

/* The path as a message shows it: $HOME as "~", like the documentation writes it. */
static char *display_path(const char *path)
{
        const char *home = getenv("HOME");
        size_t n = home ? strlen(home) : 0;
        if (n > 1 && strncmp(path, home, n) == 0 && path[n] == '/') {
                char *r = NULL;
                return asprintf(&r, "~%s", path + n) < 0 ? NULL : r;
        }
        return strdup(path);
}

int allowlist_load_file(allowlist *l, const char *path, unsigned flags, aisb_error **err)
{
        _cleanup_free_ char *shown = display_path(path);
        if (!shown)
                return aisb_error_set(err, -ENOMEM, "out of memory");

        /* O_NONBLOCK: a FIFO planted where the file should be must not hang us. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT && (flags & ALLOWLIST_FILE_OPTIONAL))
                        return 0;
                int r = -errno;
                return aisb_error_set(err, r, "%s: cannot open the allowlist: %s", shown,
                                      strerror(-r));
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                return aisb_error_set(err, r, "%s: %s", shown, strerror(-r));
        }
        if (!S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "%s: not a regular file", shown);
        if (st.st_size > ALLOWLIST_FILE_MAX)
                return aisb_error_set(err, -EFBIG, "%s: larger than %d KiB, not an allowlist",
                                      shown, ALLOWLIST_FILE_MAX / 1024);

        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, ALLOWLIST_FILE_MAX, &text, &size);
        if (r == -EFBIG)
                return aisb_error_set(err, r, "%s: larger than %d KiB, not an allowlist", shown,
                                      ALLOWLIST_FILE_MAX / 1024);
        if (r < 0)
                return aisb_error_set(err, r, "%s: cannot read the allowlist: %s", shown,
                                      strerror(-r));
        const char *nul = memchr(text, 0, size);
        if (nul) {
                unsigned line_no = 1;
                for (const char *c = text; c < nul; c++)
                        line_no += *c == '\n';
                return aisb_error_set(err, -EINVAL, "%s:%u: a NUL byte: not a text file", shown,
                                      line_no);
        }
        return parse_text(l, text, size, shown, flags, err);
}

static bool port_matches(const allow_entry *e, unsigned port)
{
        return e->port ? port == e->port : (port == 80 || port == 443);
}

/* name is host itself or a name below it. Both canonical. */
static bool domain_covers(const char *host, const char *name)
{
        size_t h = strlen(host), n = strlen(name);
        return streq(name, host) || (n > h && name[n - h - 1] == '.' && streq(name + n - h, host));
}

bool allowlist_domain_allows(const allowlist *l, const char *host, unsigned port)
{
        char name[DOMAIN_MAX + 2], why[WHY_MAX];
        if (!host || strlen(host) > DOMAIN_MAX + 1 ||
            domain_canonical(host, false, true, name, why, sizeof why) < 0)
                return false;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind == ALLOW_DOMAIN && port_matches(e, port) && domain_covers(e->host, name))
                        return true;
        }
        return false;
}

int allowlist_entrypoint_arg(const allow_entry *e, char **ret)
{
        if (e->kind != ALLOW_ADDRESS)
                return -EINVAL;
        char *r = NULL;
        int n;
        if (!e->port)
                n = asprintf(&r, "%s", e->host);
        else if (e->family == AF_INET)
                n = asprintf(&r, "%s:%u", e->host, e->port);
        else {
                /* host is "ADDR" or "ADDR/LEN"; the brackets close around the address alone. */
                const char *slash = strchr(e->host, '/');
                if (slash)
                        n = asprintf(&r, "[%.*s]%s:%u", (int) (slash - e->host), e->host, slash,
                                     e->port);
                else
                        n = asprintf(&r, "[%s]:%u", e->host, e->port);
        }
        if (n < 0)
                return -ENOMEM;
        *ret = r;
        return 0;
}

/*
 * The ranges through which a sandbox reaches the host itself rather than a destination, in
 * the network modes aisb uses: a direct rule to any of them opens every service the user runs
 * on the host's loopback, or the cloud's metadata service. 10.0.2.2 is also the address aisb
 * gives pasta's --map-host-loopback, so the table holds for podman 5 as well.
 */
static const struct host_range {
        int family;
        uint8_t addr[16];
        unsigned prefix;
        const char *what;
} host_ranges[] = {
        { AF_INET, { 127 }, 8, "127.0.0.0/8, the host's loopback" },
        { AF_INET, { 0 }, 8, "0.0.0.0/8, which Linux connects to the local host" },
        { AF_INET, { 169, 254 }, 16,
          "169.254.0.0/16, link-local: cloud metadata, pasta's host 169.254.1.2 and resolver 169.254.1.1" },
        { AF_INET, { 10, 0, 2 }, 24,
          "10.0.2.0/24, slirp4netns: the host's loopback at 10.0.2.2, its resolver at 10.0.2.3" },
        { AF_INET6, { [15] = 1 }, 128, "::1, the host's loopback" },
        { AF_INET6, { 0 }, 128, "::, which Linux connects to the local host" },
        { AF_INET6, { 0xfe, 0x80 }, 10, "fe80::/10, link-local" },
        /* NAT64 (RFC 6052's well-known prefix) carries an IPv4 address in its last 32 bits:
         * the host ranges above, reached that way on an IPv6-only network. */
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 127 }, 104, "64:ff9b::127.0.0.0/104, the host's loopback through NAT64" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 0 }, 104, "64:ff9b::0.0.0.0/104, the local host through NAT64" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 169, 254 }, 112,
          "64:ff9b::169.254.0.0/112, link-local and cloud metadata through NAT64" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 10, 0, 2 }, 120, "64:ff9b::10.0.2.0/120, slirp4netns through NAT64" },
        /* RFC 8215's local-use NAT64 prefix: whatever the network maps it to. */
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "64:ff9b:1::/48, local-use NAT64" },
};

/* Wider blocks than these are catch-alls, not destinations: no single network holds more than
 * an IPv4 /8 (the old class A, the unit IANA hands to the registries) or an IPv6 /16 (the
 * registries' own blocks are /12; the largest allocations to one network are /19 or so). */
#define CATCH_ALL_IPV4_PREFIX 8
#define CATCH_ALL_IPV6_PREFIX 16

/* Two blocks overlap when they agree on the bits of the shorter prefix. */
static bool blocks_overlap(const uint8_t *a, unsigned a_prefix, const uint8_t *b, unsigned b_prefix)
{
        unsigned bits = a_prefix < b_prefix ? a_prefix : b_prefix;
        for (unsigned i = 0; i < bits; i++) {
                uint8_t mask = (uint8_t) (0x80u >> (i % 8));
                if ((a[i / 8] & mask) != (b[i / 8] & mask))
                        return false;
        }
        return true;
}

const char *allowlist_host_range(int family, const uint8_t addr[static 16], unsigned prefix)
{
        for (size_t i = 0; i < ELEMENTSOF(host_ranges); i++) {
                const struct host_range *h = &host_ranges[i];
                if (h->family == family && blocks_overlap(addr, prefix, h->addr, h->prefix))
                        return h->what;
        }
        return NULL;
}

int allowlist_check_host_ranges(const allowlist *l, bool insecure_allow_host_ranges,
                                aisb_error **err)
{
        if (insecure_allow_host_ranges)
                return 0;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_ADDRESS)
                        continue;
                _cleanup_free_ char *text = NULL;
                if (allowlist_entrypoint_arg(e, &text) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                unsigned widest = e->family == AF_INET ? CATCH_ALL_IPV4_PREFIX : CATCH_ALL_IPV6_PREFIX;
                if (e->prefix < widest)
                        return aisb_error_set(err, -EINVAL,
                                              "%s: '%s' is a catch-all (wider than /%u), which opens "
                                              "the host itself with everything else: name the "
                                              "networks you need, or add --insecure-allow-host-ranges",
                                              e->origin, text, widest);
                const char *what = allowlist_host_range(e->family, e->addr, e->prefix);
                if (what)
                        return aisb_error_set(err, -EINVAL,
                                              "%s: '%s' reaches the host itself (%s): refused unless "
                                              "--insecure-allow-host-ranges",
                                              e->origin, text, what);
        }
        return 0;
}

int allowlist_check_host_addresses(const allowlist *l, const char *const *host_addresses,
                                   bool insecure_allow_host_ranges, aisb_error **err)
{
        if (insecure_allow_host_ranges)
                return 0;
        for (size_t k = 0; host_addresses && host_addresses[k]; k++) {
                uint8_t addr[16] = {};
                int family = parse_ipv4(host_addresses[k], addr) ? AF_INET
                             : parse_ipv6(host_addresses[k], addr) ? AF_INET6
                                                                    : 0;
                for (size_t i = 0; family && i < l->n; i++) {
                        const allow_entry *e = &l->entries[i];
                        if (e->kind != ALLOW_ADDRESS || e->family != family ||
                            !blocks_overlap(e->addr, e->prefix, addr, family == AF_INET ? 32 : 128))
                                continue;
                        _cleanup_free_ char *text = NULL;
                        if (allowlist_entrypoint_arg(e, &text) < 0)
                                return aisb_error_set(err, -ENOMEM, "out of memory");
                        return aisb_error_set(err, -EINVAL,
                                              "%s: '%s' covers %s, one of this host's own addresses (its "
                                              "services listen there): refused unless --insecure-allow-host-ranges",
                                              e->origin, text, host_addresses[k]);
                }
        }
        return 0;
}

int allowlist_parse_add_host(const char *text, char **ret_name, char **ret_ip, aisb_error **err)
{
        char shown[SHOWN_MAX], why[WHY_MAX];
        size_t len = strlen(text);
        show_entry(text, len, shown);
        const char *colon = strchr(text, ':');
        if (!colon || colon == text || len > ALLOWLIST_ENTRY_MAX)
                return aisb_error_set(err, -EINVAL, "--gate-add-host '%s': expected NAME:IP", shown);

        _cleanup_free_ char *name_text = strndup(text, (size_t) (colon - text));
        if (!name_text)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        char name[DOMAIN_MAX + 2];
        if (domain_canonical(name_text, false, true, name, why, sizeof why) < 0)
                return aisb_error_set(err, -EINVAL, "--gate-add-host '%s': bad name (%s)", shown, why);

        char ip_text[INET6_ADDRSTRLEN + 2] = "";
        const char *ip = colon + 1;
        size_t ip_len = strlen(ip);
        if (ip_len >= 2 && ip[0] == '[' && ip[ip_len - 1] == ']') {
                ip++;
                ip_len -= 2;
        }
        if (ip_len >= sizeof ip_text)
                return aisb_error_set(err, -EINVAL, "--gate-add-host '%s': bad address", shown);
        memcpy(ip_text, ip, ip_len);
        ip_text[ip_len] = 0;

        uint8_t addr[16];
        int family = strchr(ip_text, ':') ? AF_INET6 : AF_INET;
        if (family == AF_INET ? !parse_ipv4(ip_text, addr) : !parse_ipv6(ip_text, addr))
                return aisb_error_set(err, -EINVAL,
                                      "--gate-add-host '%s': '%s' is not an IPv4 or IPv6 address",
                                      shown, ip_text);
        char canonical[INET6_ADDRSTRLEN];
        (void) inet_ntop(family, addr, canonical, sizeof canonical);

        _cleanup_free_ char *n = strdup(name), *a = strdup(canonical);
        if (!n || !a)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        *ret_name = steal_pointer(&n);
        *ret_ip = steal_pointer(&a);
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The canonical add-host lines "NAME IP", sorted, duplicates removed. */
static int add_host_lines(const char *const *add_hosts, char ***ret)
{
        _cleanup_strv_free_ char **lines = NULL;
        for (size_t i = 0; add_hosts && add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL, *line = NULL;
                int r = allowlist_parse_add_host(add_hosts[i], &name, &ip, NULL);
                if (r < 0)
                        return r;
                if (asprintf(&line, "%s %s", name, ip) < 0 || strv_push(&lines, line) < 0)
                        return -ENOMEM;
        }
        size_t n = strv_length((const char *const *) lines);
        if (n > 1)
                qsort(lines, n, sizeof *lines, compare_strings);
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
                if (kept > 0 && streq(lines[kept - 1], lines[i])) {
                        free(lines[i]);
                        continue;
                }
                lines[kept++] = lines[i];
        }
        if (lines)
                lines[kept] = NULL;
        *ret = steal_pointer(&lines);
        return 0;
}

int allowlist_gate_hash(const allowlist *l, const char *const *add_hosts, char **ret_hex)
{
        _cleanup_strv_free_ char **lines = NULL, **hosts = NULL;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                _cleanup_free_ char *line = NULL;
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                if (asprintf(&line, "domain %s %u", e->host, e->port) < 0 ||
                    strv_push(&lines, line) < 0)
                        return -ENOMEM;
        }
        size_t n = strv_length((const char *const *) lines);
        if (n > 1)
                qsort(lines, n, sizeof *lines, compare_strings);
        int r = add_host_lines(add_hosts, &hosts);
        if (r < 0)
                return r;

        /* Entries are unique already (allowlist_add merges), so sorting is all it takes. */
        _cleanup_(buffer_free) buffer b = {};
        r = buffer_printf(&b, "%s\n", ALLOWLIST_GATE_VERSION);
        for (size_t i = 0; i < n; i++)
                r |= buffer_printf(&b, "%s\n", lines[i]);
        for (size_t i = 0; hosts && hosts[i]; i++)
                r |= buffer_printf(&b, "add-host %s\n", hosts[i]);
        if (r < 0)
                return -ENOMEM;

        return sha256_hex(b.data, b.size, 16, ret_hex);
}

/* A path squid.conf reads as one token meaning exactly this file. */
static bool squid_path_valid(const char *p)
{
        size_t len = strlen(p);
        return p[0] == '/' && len < 4096 &&
               all_of(p, len, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+");
}

/* The domains that get one http_access line together: all entries with the same port (0 =
 * the default 80 and 443), sorted, without names another name of the group already covers
 * (squid warns about those and drops one of them). */
static int port_group(const allowlist *l, unsigned port, char ***ret)
{
        _cleanup_strv_free_ char **names = NULL;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_DOMAIN || e->port != port)
                        continue;
                bool covered = false;
                for (size_t j = 0; j < l->n && !covered; j++) {
                        const allow_entry *o = &l->entries[j];
                        covered = j != i && o->kind == ALLOW_DOMAIN && o->port == port &&
                                  !streq(o->host, e->host) && domain_covers(o->host, e->host);
                }
                if (!covered && strv_push(&names, e->host) < 0)
                        return -ENOMEM;
        }
        size_t n = strv_length((const char *const *) names);
        if (n > 1)
                qsort(names, n, sizeof *names, compare_strings);
        *ret = steal_pointer(&names);
        return 0;
}

static int compare_unsigned(const void *a, const void *b)
{
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return (x > y) - (x < y);
}

/* squid reads config lines into a fixed buffer: keep ACL lines short, repeat the name. */
#define ACL_VALUES_PER_LINE 8

/* value_prefix "." makes a dstdomain value match the name and every name below it. */
static int acl_lines(buffer *b, const char *name, const char *type, const char *value_prefix,
                     char *const *values)
{
        int r = 0;
        for (size_t i = 0; values[i]; i++) {
                if (i % ACL_VALUES_PER_LINE == 0)
                        r |= buffer_printf(b, "%sacl %s %s", i ? "\n" : "", name, type);
                r |= buffer_printf(b, " %s%s", value_prefix, values[i]);
        }
        if (values[0])
                r |= buffer_printf(b, "\n");
        return r;
}

/* The destinations the gate refuses for every name not mapped on purpose (aisb_local_dst):
 * the host itself (loopback, "this host", the unspecified address), link-local (cloud
 * metadata), and the private and shared ranges (the host's network neighbours, its container
 * bridges, a VPN, a carrier's NAT). The gate runs on the host's network, so to it these are
 * the host's surroundings, never the internet a listed name is meant to reach. */
static const struct gate_local_range {
        int family;
        uint8_t addr[16];
        unsigned prefix;
        const char *text;
} gate_local_ranges[] = {
        { AF_INET, { 0 }, 8, "0.0.0.0/8" },
        { AF_INET, { 127 }, 8, "127.0.0.0/8" },
        { AF_INET, { 169, 254 }, 16, "169.254.0.0/16" },
        { AF_INET, { 10 }, 8, "10.0.0.0/8" },
        { AF_INET, { 172, 16 }, 12, "172.16.0.0/12" },
        { AF_INET, { 192, 168 }, 16, "192.168.0.0/16" },
        { AF_INET, { 100, 64 }, 10, "100.64.0.0/10" },
        { AF_INET6, { 0 }, 128, "::/128" },
        { AF_INET6, { [15] = 1 }, 128, "::1" },
        { AF_INET6, { 0xfe, 0x80 }, 10, "fe80::/10" },
        { AF_INET6, { 0xfc }, 7, "fc00::/7" },
        /* The same IPv4 ranges through NAT64's well-known prefix, and its local-use prefix. */
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 0 }, 104, "64:ff9b::/104" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 127 }, 104, "64:ff9b::7f00:0/104" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 169, 254 }, 112, "64:ff9b::a9fe:0/112" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 10 }, 104, "64:ff9b::a00:0/104" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 172, 16 }, 108, "64:ff9b::ac10:0/108" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 192, 168 }, 112, "64:ff9b::c0a8:0/112" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 100, 64 }, 106, "64:ff9b::6440:0/106" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "64:ff9b:1::/48" },
};

const char *allowlist_local_range(int family, const uint8_t addr[static 16])
{
        for (size_t i = 0; i < ELEMENTSOF(gate_local_ranges); i++) {
                const struct gate_local_range *g = &gate_local_ranges[i];
                if (g->family == family && blocks_overlap(addr, family == AF_INET ? 32 : 128, g->addr, g->prefix))
                        return g->text;
        }
        return NULL;
}

int allowlist_squid_config(const allowlist *l, const squid_options *o, char **ret_text,
                           aisb_error **err)
{
        const char *access_log = o->access_log ? o->access_log : "/var/log/squid/access.log";
        const char *cache_log = o->cache_log ? o->cache_log : "/var/log/squid/cache.log";

        if (o->port < 1 || o->port > 65535)
                return aisb_error_set(err, -EINVAL, "gate port %u: must be 1..65535", o->port);
        const char *paths[] = { o->hosts_file, access_log, cache_log };
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (paths[i] && !squid_path_valid(paths[i])) {
                        char shown[SHOWN_MAX];
                        show_entry(paths[i], strlen(paths[i]), shown);
                        return aisb_error_set(err, -EINVAL,
                                              "gate path '%s': must be absolute and use only "
                                              "letters, digits and /._-+", shown);
                }

        /* The local ranges, then the host's own addresses, each checked and written
         * canonically: no text reaches squid.conf unchecked. One inside a range is left out,
         * as is a repeat: squid would warn about both. */
        _cleanup_strv_free_ char **local_dst = NULL;
        for (size_t i = 0; i < ELEMENTSOF(gate_local_ranges); i++)
                if (strv_push(&local_dst, gate_local_ranges[i].text) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; o->host_addresses && o->host_addresses[i]; i++) {
                const char *text = o->host_addresses[i];
                uint8_t addr[16];
                int family = strchr(text, ':') ? AF_INET6 : AF_INET;
                char canonical[INET6_ADDRSTRLEN];
                if (strlen(text) >= sizeof canonical ||
                    (family == AF_INET ? !parse_ipv4(text, addr) : !parse_ipv6(text, addr))) {
                        char shown[SHOWN_MAX];
                        show_entry(text, strlen(text), shown);
                        return aisb_error_set(err, -EINVAL, "host address '%s': not an IPv4 or IPv6 address",
                                              shown);
                }
                (void) inet_ntop(family, addr, canonical, sizeof canonical);
                bool seen = false;
                for (size_t j = 0; j < ELEMENTSOF(gate_local_ranges) && !seen; j++)
                        seen = gate_local_ranges[j].family == family &&
                               blocks_overlap(addr, family == AF_INET ? 32 : 128,
                                              gate_local_ranges[j].addr, gate_local_ranges[j].prefix);
                for (size_t j = ELEMENTSOF(gate_local_ranges); local_dst[j] && !seen; j++)
                        seen = streq(local_dst[j], canonical);
                if (!seen && strv_push(&local_dst, canonical) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
        }

        _cleanup_strv_free_ char **local_names = NULL;
        for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL;
                int r = allowlist_parse_add_host(o->add_hosts[i], &name, &ip, err);
                if (r < 0)
                        return r;
                if (strv_push(&local_names, name) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
        }

        /* The distinct explicit ports, ascending; 0 (the default pair) goes first. */
        _cleanup_free_ unsigned *ports = calloc(l->n + 1, sizeof *ports);
        size_t n_ports = 0;
        bool have_default = false;
        if (!ports)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                if (e->port == 0) {
                        have_default = true;
                        continue;
                }
                bool seen = false;
                for (size_t j = 0; j < n_ports && !seen; j++)
                        seen = ports[j] == e->port;
                if (!seen)
                        ports[n_ports++] = e->port;
        }
        qsort(ports, n_ports, sizeof *ports, compare_unsigned);
        bool any = have_default || n_ports > 0;

        _cleanup_(buffer_free) buffer b = {};
        int r = 0;
        r |= buffer_printf(&b,
                "# The aisb egress gate: generated from the allowlist, do not edit.\n"
                "# Only the listed names (and the names below them) on their ports pass;\n"
                "# everything else, IP literals included, is refused.\n"
                "http_port 127.0.0.1:%u\n"
                "visible_hostname aisb-gate\n"
                "pid_filename none\n"
                "cache deny all\n"
                "cache_mem 8 MB\n"
                "cache_store_log none\n"
                "netdb_filename none\n"
                "shutdown_lifetime 1 seconds\n"
                "pinger_enable off\n",
                o->port);
        if (o->hosts_file)
                r |= buffer_printf(&b, "hosts_file %s\n", o->hosts_file);
        /* squid runs as user proxy and cannot open /dev/stdout: logs go to files. */
        r |= buffer_printf(&b,
                "logformat aisb %s\n"
                "access_log stdio:%s logformat=aisb\n"
                "cache_log %s\n"
                "strip_query_terms on\n"
                "via off\n"
                "forwarded_for delete\n"
                "httpd_suppress_version_string on\n"
                "icp_port 0\n"
                "htcp_port 0\n"
                "snmp_port 0\n"
                "icp_access deny all\n"
                "htcp_access deny all\n"
                "snmp_access deny all\n"
                "\n",
                ALLOWLIST_SQUID_LOGFORMAT, access_log, cache_log);

        /* -n everywhere: without it squid looks up the PTR record of an IP literal and
         * matches that name, and whoever owns the address chooses its PTR record. */
        r |= buffer_printf(&b,
                "acl aisb_clients src 127.0.0.0/8 ::1\n"
                "acl aisb_connect method CONNECT\n"
                "acl aisb_schemes proto HTTP HTTPS\n"
                "acl aisb_ip_literal dstdom_regex -n -i ^[0-9.]+$ (^|\\.)(0x[0-9a-f]*|[0-9]+)$ ^\\[ :\n");
        r |= acl_lines(&b, "aisb_local_dst", "dst", "", local_dst);
        if (local_names)
                r |= acl_lines(&b, "aisb_local_names", "dstdomain -n", "", local_names) < 0 ? -ENOMEM : 0;

        _cleanup_strv_free_ char **all_ports = NULL;
        if (have_default)
                if (strv_push(&all_ports, "80") < 0 || strv_push(&all_ports, "443") < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n_ports; i++) {
                char text[8];
                snprintf(text, sizeof text, "%u", ports[i]);
                if (!(have_default && (ports[i] == 80 || ports[i] == 443)))
                        r |= strv_push(&all_ports, text);
        }
        if (any)
                r |= acl_lines(&b, "aisb_ports", "port", "", all_ports);

        /* One allow rule a port set, pairing names with their ports: a listed name on another
         * port, over CONNECT or plain HTTP, matches no allow line. */
        _cleanup_strv_free_ char **rules = NULL;
        for (size_t g = 0; g < n_ports + 1; g++) {
                if (g == 0 && !have_default)
                        continue;
                unsigned port = g == 0 ? 0 : ports[g - 1];
                char suffix[16], dst[32], port_acl[32];
                if (port)
                        snprintf(suffix, sizeof suffix, "%u", port);
                else
                        snprintf(suffix, sizeof suffix, "web");
                snprintf(dst, sizeof dst, "aisb_dst_%s", suffix);
                snprintf(port_acl, sizeof port_acl, "aisb_port_%s", suffix);

                _cleanup_strv_free_ char **names = NULL;
                if (port_group(l, port, &names) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
                r |= acl_lines(&b, dst, "dstdomain -n", ".", names);
                if (port)
                        r |= buffer_printf(&b, "acl %s port %u\n", port_acl, port);
                else
                        r |= buffer_printf(&b, "acl %s port 80 443\n", port_acl);
                _cleanup_free_ char *rule = NULL;
                if (asprintf(&rule, "http_access allow %s %s", dst, port_acl) < 0 ||
                    strv_push(&rules, rule) < 0)
                        return aisb_error_set(err, -ENOMEM, "out of memory");
        }

        r |= buffer_printf(&b,
                "\n"
                "http_access deny !aisb_clients\n"
                "http_access deny aisb_ip_literal\n"
                "http_access deny !aisb_connect !aisb_schemes\n");
        if (any)
                r |= buffer_printf(&b, "http_access deny !aisb_ports\n");
        /* The gate shares the host's network: a listed name that resolves to loopback,
         * link-local (cloud metadata), a private or shared range (the host's neighbours, its
         * containers, a VPN) or one of the host's own addresses would reach the host or its
         * network rather than the internet. Only --gate-add-host names, mapped on purpose, may. */
        r |= buffer_printf(&b, "http_access deny aisb_local_dst%s\n",
                           local_names ? " !aisb_local_names" : "");
        for (size_t i = 0; rules && rules[i]; i++)
                r |= buffer_printf(&b, "%s\n", rules[i]);
        r |= buffer_printf(&b,
                "http_access deny all\n"
                "http_reply_access allow all\n");
        if (r < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");

        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : aisb_error_set(err, -ENOMEM, "out of memory");
}

int allowlist_hosts_file(const char *const *add_hosts, char **ret_text, aisb_error **err)
{
        _cleanup_(buffer_free) buffer b = {};
        int r = buffer_printf(&b, "# aisb gate: --gate-add-host entries\n");
        for (size_t i = 0; add_hosts && add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL;
                int k = allowlist_parse_add_host(add_hosts[i], &name, &ip, err);
                if (k < 0)
                        return k;
                r |= buffer_printf(&b, "%s %s\n", ip, name);
        }
        if (r < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : aisb_error_set(err, -ENOMEM, "out of memory");
}
