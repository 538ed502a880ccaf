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
#include <ctype.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "address.h"
#include "allowlist.h"
#include "userdirs.h"
#include "fileio.h"

#define DOMAIN_MAX 253
#define LABEL_MAX 63
#define WHY_MAX 192

/* Hostile lines must not reach a terminal raw. */
void allowlist_show(const char *text, size_t len, char out[static ALLOWLIST_SHOWN_MAX])
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

/* Say why in why, and refuse: -EINVAL. */
_printf_(3, 4) static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
        return -EINVAL;
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
                return refuse(why, whylen, "empty host name");
        if (len > DOMAIN_MAX)
                return refuse(why, whylen, "host name longer than %d characters", DOMAIN_MAX);
        for (size_t i = 0; i < len; i++) {
                char c = in[i];
                if (c == '*')
                        return refuse(why, whylen, "a wildcard is only allowed as a leading '*.'");
                if (c == '_')
                        return refuse(why, whylen, "'_' is not allowed in a host name");
                if (c == '/')
                        return refuse(why, whylen, "a path: give the host name only");
                if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
                    c != '-' && c != '.')
                        return refuse(why, whylen, "'%c' is not allowed in a host name", c);
                out[i] = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
        }
        out[len] = 0;

        size_t labels = 0;
        const char *last = out;
        for (const char *label = out;; labels++) {
                const char *dot = strchr(label, '.');
                size_t n = dot ? (size_t) (dot - label) : strlen(label);
                if (n == 0)
                        return refuse(why, whylen, "empty label ('..' or a leading '.')");
                if (n > LABEL_MAX)
                        return refuse(why, whylen, "label longer than %d characters", LABEL_MAX);
                if (label[0] == '-' || label[n - 1] == '-')
                        return refuse(why, whylen, "a label starts or ends with '-'");
                last = label;
                if (!dot)
                        break;
                label = dot + 1;
        }
        labels++;
        if (labels < 2 && !allow_single_label)
                return refuse(why, whylen, "a single label: give a full name such as example.com");
        size_t last_len = strlen(last);
        if (all_of(last, last_len, "0123456789") ||
            (startswith(last, "0x") && all_of(last + 2, last_len - 2, "0123456789abcdef")))
                return refuse(why, whylen, "looks like an IP address but is not four decimal "
                                             "numbers 0..255 without leading zeros");
        return 0;
}

/* An address entry from what address_parse() read. */
static int address_entry(const struct address *a, allow_entry *e)
{
        char canonical[INET6_ADDRSTRLEN + 8];
        address_format(a, false, canonical, sizeof canonical);
        e->host = strdup(canonical);
        if (!e->host)
                return -ENOMEM;
        e->kind = ALLOW_ADDRESS;
        e->family = a->family;
        memcpy(e->addr, a->addr, sizeof e->addr);
        e->prefix = a->prefix;
        e->port = a->port;
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
                return refuse(why, whylen, "empty");
        if (len > ALLOWLIST_ENTRY_MAX)
                return refuse(why, whylen, "longer than %d characters", ALLOWLIST_ENTRY_MAX);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (is_space((char) c))
                        return refuse(why, whylen, "whitespace inside the entry");
                if (c < 0x20 || c == 0x7f)
                        return refuse(why, whylen, "a control character");
                if (c >= 0x80)
                        return refuse(why, whylen, "a non-ASCII character: write international "
                                                     "names in their xn-- form");
        }
        if (strstr(s, "://"))
                return refuse(why, whylen, "a URL: give the host name only, without scheme");
        if (strchr(s, '@'))
                return refuse(why, whylen, "user information ('@') is not allowed");

        /* An address (the entrypoint's syntax, read by the same parser), or else a name. */
        struct address a;
        /* Longer than any address: a name, or nothing. */
        int r = len <= ADDRESS_TEXT_MAX ? address_parse(s, &a, why, whylen) : -ENOENT;
        if (r == 0)
                return address_entry(&a, e);
        if (r == -EDOM) {
                /* A typo more often than not; widening or narrowing it silently would be worse. */
                char entry[INET6_ADDRSTRLEN + 32];
                address_format(&a, true, entry, sizeof entry);
                snprintf(why, whylen, "has host bits set beyond /%u: did you mean %s?", a.prefix, entry);
                *ret_plain_why = true;
                return -EINVAL;
        }
        if (r != -ENOENT)
                return r;

        char buf[ALLOWLIST_ENTRY_MAX + 1];
        memcpy(buf, s, len + 1);
        char *colon = strchr(buf, ':');
        char *port = NULL;
        if (colon) {
                *colon = 0;
                port = colon + 1;
        }
        char host[DOMAIN_MAX + 2];
        r = domain_canonical(buf, true, false, host, why, whylen);
        if (r < 0)
                return r;
        unsigned port_number = 0;
        if (port && (address_parse_decimal(port, 65535, &port_number) < 0 || port_number == 0))
                return refuse(why, whylen, "the port must be a number from 1 to 65535");
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
                free(l->entries[i].rules);
        }
        free(l->entries);
        *l = (allowlist) {};
}

static const char *const method_names[] = { "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE" };

/* The bit of a method's name, 0 for none. */
static unsigned method_bit(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(method_names); i++)
                if (streq(name, method_names[i]))
                        return 1u << i;
        return 0;
}

const char *allowlist_method_name(unsigned bit)
{
        for (size_t i = 0; i < ELEMENTSOF(method_names); i++)
                if (bit == 1u << i)
                        return method_names[i];
        return NULL;
}

/* A rule's words: "read-only", methods (one or a comma list), then path prefixes. The
 * canonical text lists the methods in a fixed order, then the paths in the order given,
 * repeats left out. */
static int parse_rules(const char *text, allow_entry *e, char *why, size_t whylen)
{
        _cleanup_free_ char *copy = strdup(text);
        _cleanup_strv_free_ char **paths = NULL;
        if (!copy)
                return -ENOMEM;
        unsigned methods = 0;
        char *save = NULL;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                if (w[0] == '/') {
                        size_t n = strlen(w);
                        if (n > ALLOWLIST_PATH_MAX)
                                return refuse(why, whylen, "a path longer than %d characters", ALLOWLIST_PATH_MAX);
                        /* No '%': the gate compares paths decoded (as squid does). */
                        if (strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~+-") != n)
                                return refuse(why, whylen, "a path may hold letters, digits and / . _ ~ + - only (write "
                                                           "it decoded, without %%)");
                        if (strstr(w, "/../") || strstr(w, "/./") || (n >= 3 && strcmp(w + n - 3, "/..") == 0))
                                return refuse(why, whylen, "a path with . or .. segments: write it as the server sees it");
                        bool seen = false;
                        for (size_t i = 0; paths && paths[i]; i++)
                                seen |= streq(paths[i], w);
                        if (!seen && strv_length((const char *const *) paths) >= ALLOWLIST_MAX_PATHS)
                                return refuse(why, whylen, "more than %d paths", ALLOWLIST_MAX_PATHS);
                        if (!seen && strv_push(&paths, w) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (paths)
                        return refuse(why, whylen, "methods go before the paths");
                if (streq(w, "read-only")) {
                        methods |= ALLOW_METHODS_READ_ONLY;
                        continue;
                }
                for (char *m = w, *comma; m; m = comma ? comma + 1 : NULL) {
                        comma = strchr(m, ',');
                        if (comma)
                                *comma = 0;
                        unsigned bit = method_bit(m);
                        if (!bit) {
                                char shown[ALLOWLIST_SHOWN_MAX];
                                allowlist_show(m, strnlen(m, 32), shown);
                                return refuse(why, whylen,
                                              "'%.64s' is no method (GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE, "
                                              "or read-only) and no path (/...)",
                                              shown);
                        }
                        methods |= bit;
                }
        }
        _cleanup_(buffer_free) buffer b = {};
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(method_names); i++)
                if (methods & (1u << i))
                        r |= buffer_printf(&b, "%s%s", b.size ? "," : "", method_names[i]);
        for (size_t i = 0; paths && paths[i]; i++)
                r |= buffer_printf(&b, "%s%s", b.size ? " " : "", paths[i]);
        if (r < 0)
                return -ENOMEM;
        if (!b.size)
                return 0;
        e->methods = methods;
        e->rules = buffer_steal(&b);
        return e->rules ? 0 : -ENOMEM;
}

int allowlist_append_copy(allowlist *l, const allow_entry *e)
{
        allow_entry *grown = realloc(l->entries, (l->n + 1) * sizeof *grown);
        if (!grown)
                return -ENOMEM;
        l->entries = grown;
        allow_entry c = *e;
        c.host = strdup(e->host);
        c.origin = strdup(e->origin);
        c.rules = e->rules ? strdup(e->rules) : NULL;
        if (!c.host || !c.origin || (e->rules && !c.rules)) {
                free(c.host);
                free(c.origin);
                free(c.rules);
                return -ENOMEM;
        }
        l->entries[l->n++] = c;
        return 0;
}

int allowlist_entry_text(const allow_entry *e, char **ret)
{
        const char *sep = e->rules ? " " : "", *rules = e->rules ? e->rules : "";
        int n = !e->port ? asprintf(ret, "%s%s%s", e->host, sep, rules)
                : e->family == AF_INET6 ? asprintf(ret, "[%s]:%u%s%s", e->host, e->port, sep, rules)
                                        : asprintf(ret, "%s:%u%s%s", e->host, e->port, sep, rules);
        return n < 0 ? -ENOMEM : 0;
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
        char shown[ALLOWLIST_SHOWN_MAX];
        allowlist_show(text, len, shown);
        if (memchr(text, 0, len))
                return aisb_error_set(err, -EINVAL, "%s: '%s' is not a domain, IP or CIDR (a NUL byte)",
                                      origin, shown);
        if (len > ALLOWLIST_LINE_MAX)
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s' is not a domain, IP or CIDR (longer than %d characters)",
                                      origin, shown, ALLOWLIST_LINE_MAX);
        char copy[ALLOWLIST_LINE_MAX + 1];
        memcpy(copy, text, len);
        copy[len] = 0;
        /* The destination, then its rules after the first blank. */
        char *rules = copy + strcspn(copy, " \t");
        if (*rules) {
                *rules++ = 0;
                rules += strspn(rules, " \t");
        }

        allow_entry e = {};
        char why[WHY_MAX];
        bool plain_why;
        int r = parse_entry(copy, &e, why, sizeof why, &plain_why);
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0) {
                if (plain_why)
                        return aisb_error_set(err, r, "%s: '%s' %s", origin, shown, why);
                return aisb_error_set(err, r, "%s: '%s' is not a domain, IP or CIDR (%s)", origin,
                                      shown, why);
        }
        _cleanup_free_ char *host = e.host;
        if (*rules && e.kind != ALLOW_DOMAIN)
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s': methods and paths apply to names only (the gate sees an address's "
                                      "traffic as a tunnel)",
                                      origin, shown);
        if (*rules) {
                for (const char *c = rules; *c; c++)
                        if ((unsigned char) *c < 0x20 && *c != '\t')
                                return aisb_error_set(err, -EINVAL, "%s: '%s': a control character in its rules",
                                                      origin, shown);
                r = parse_rules(rules, &e, why, sizeof why);
                if (r == -ENOMEM)
                        return error_oom(err);
                if (r < 0)
                        return aisb_error_set(err, r, "%s: '%s': %s", origin, shown, why);
        }
        _cleanup_free_ char *entry_rules = e.rules;
        if (e.kind == ALLOW_ADDRESS && (flags & ALLOWLIST_FILE_DOMAINS_ONLY))
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s' is an address, and a project's allowlist may name "
                                      "domains only: put it in --allow or ~/.config/ai-sandbox/allow",
                                      origin, shown);

        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *o = &l->entries[i];
                if (o->kind == e.kind && o->port == e.port && streq(o->host, e.host) &&
                    streq(o->rules ? o->rules : "", e.rules ? e.rules : ""))
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
                return error_oom(err);
        /* Grow geometrically without a capacity field that could go stale: other code grows
         * lists by hand with realloc to exactly n, and may. The allocator knows the real size. */
        if (!l->entries || malloc_usable_size(l->entries) < (l->n + 1) * sizeof *l->entries) {
                allow_entry *entries = realloc(l->entries, capacity_for(l->n + 1) * sizeof *entries);
                if (!entries) {
                        free(e.origin);
                        return error_oom(err);
                }
                l->entries = entries;
        }
        e.host = steal_pointer(&host);
        e.rules = steal_pointer(&entry_rules);
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

int allowlist_parse_text(allowlist *l, const char *text, size_t size, const char *origin,
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
                        return error_oom(err);
                int r = add_trimmed(l, p, (size_t) (q - p), where, flags, err);
                if (r < 0)
                        return r;
        }
        return 0;
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
                return error_oom(err);

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
        /* A larger file is refused as it is read, without reading more than the bound. */
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
        return allowlist_parse_text(l, text, size, shown, flags, err);
}

static bool port_matches(const allow_entry *e, unsigned port)
{
        return e->port ? port == e->port : (port == 80 || port == 443);
}

/* A host as a request names it (any case, a final dot) in canonical form, or false. */
static bool request_host(const char *host, char name[static DOMAIN_MAX + 2])
{
        char why[WHY_MAX];
        return host && strlen(host) <= DOMAIN_MAX + 1 && domain_canonical(host, false, true, name, why, sizeof why) >= 0;
}

char *allowlist_domain_canonical(const char *host)
{
        char name[DOMAIN_MAX + 2];
        return request_host(host, name) ? strdup(name) : NULL;
}

bool allowlist_domain_covers(const char *host, const char *name)
{
        size_t h = strlen(host), n = strlen(name);
        return streq(name, host) || (n > h && name[n - h - 1] == '.' && streq(name + n - h, host));
}

/* %XX decoded once, as squid does before it matches a path (anything else kept as it is,
 * %00 too: squid leaves it encoded). */
static char *path_decode(const char *path)
{
        char *out = malloc(strlen(path) + 1), *o = out;
        if (!out)
                return NULL;
        for (const char *p = path; *p; p++) {
                if (p[0] == '%' && isxdigit((unsigned char) p[1]) && isxdigit((unsigned char) p[2]) &&
                    !(p[1] == '0' && p[2] == '0')) {
                        char hex[3] = { p[1], p[2], 0 };
                        *o++ = (char) strtoul(hex, NULL, 16);
                        p += 2;
                } else
                        *o++ = *p;
        }
        *o = 0;
        return out;
}

/* On a decoded path: a segment "." or ".." (dots and blanks after it, which Windows drops,
 * included) ended by / ? ; # or the end; a \; what is still encoded after one decoding (%2e
 * %2f %5c, a NUL's %00, which hides a segment's end from the first rule, and IIS's %u); a
 * byte that is not printable ASCII (overlong and wide forms of '.' and '/', controls). The
 * query too: a decoded %3f is a '?'. */
static bool decoded_path_odd(const char *path)
{
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char) *p;
                if (c < 0x20 || c >= 0x7f || c == '\\' || strncasecmp(p, "%2e", 3) == 0 ||
                    strncasecmp(p, "%2f", 3) == 0 || strncasecmp(p, "%5c", 3) == 0 || strncmp(p, "%00", 3) == 0 ||
                    strncasecmp(p, "%u", 2) == 0)
                        return true;
                if (p[0] == '/' && p[1] == '.') {
                        const char *after = p + (p[2] == '.' ? 3 : 2);
                        after += strspn(after, ". \t\n\v\f\r");
                        if (strchr("/?;#", *after))
                                return true;
                }
        }
        return false;
}

bool allowlist_path_odd(const char *path)
{
        _cleanup_free_ char *decoded = path_decode(path);
        return !decoded || decoded_path_odd(decoded);
}

/* Whether an entry's rules let this request through: its method among the entry's (any when
 * none is named), its path below one of the entry's prefixes (any when none is named). */
static bool rules_allow(const allow_entry *e, const char *method, const char *path)
{
        if (!e->rules)
                return true;
        _cleanup_free_ char *decoded = path_decode(path);
        if (!decoded || decoded_path_odd(decoded))
                return false;
        path = decoded;
        if (e->methods && !(e->methods & method_bit(method)))
                return false;
        bool any_path = true, matched = false;
        _cleanup_free_ char *copy = strdup(e->rules);
        char *save = NULL;
        for (char *w = copy ? strtok_r(copy, " ", &save) : NULL; w; w = strtok_r(NULL, " ", &save))
                if (w[0] == '/') {
                        any_path = false;
                        matched |= startswith(path, w);
                }
        return copy && (any_path || matched);
}

/* The first domain entry allowing the request (method NULL: a CONNECT, the host only). */
static const allow_entry *entry_allowing(const allowlist *l, const char *host, unsigned port, const char *method,
                                         const char *path)
{
        char name[DOMAIN_MAX + 2];
        if (!request_host(host, name))
                return NULL;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind == ALLOW_DOMAIN && port_matches(e, port) && allowlist_domain_covers(e->host, name) &&
                    (!method || rules_allow(e, method, path ? path : "/")))
                        return e;
        }
        return NULL;
}

bool allowlist_request_allows(const allowlist *l, const char *host, unsigned port, const char *method,
                              const char *path)
{
        return entry_allowing(l, host, port, method, path) != NULL;
}

const allow_entry *allowlist_domain_entry(const allowlist *l, const char *host, unsigned port)
{
        return entry_allowing(l, host, port, NULL, NULL);
}

int allowlist_entrypoint_arg(const allow_entry *e, char **ret)
{
        if (e->kind != ALLOW_ADDRESS)
                return -EINVAL;
        struct address a = { .family = e->family, .prefix = e->prefix, .port = e->port };
        memcpy(a.addr, e->addr, sizeof a.addr);
        char text[INET6_ADDRSTRLEN + 16];
        address_format(&a, true, text, sizeof text);
        *ret = strdup(text);
        return *ret ? 0 : -ENOMEM;
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
        /* IPv4 written as IPv6: the kernel sends such a connection as IPv4, so the sandbox's
         * IPv4 rules decide, and an entry here would only look like it allows something
         * (::ffff:127.0.0.1, or ::ffff:0:0/96, every IPv4 address). */
        { AF_INET6, { [10] = 0xff, [11] = 0xff }, 96,
          "::ffff:0.0.0.0/96, IPv4-mapped: write the IPv4 address itself" },
        { AF_INET6, { 0 }, 96, "::/96, IPv4-compatible: write the IPv4 address itself" },
        /* RFC 8215's local-use NAT64 prefix: whatever the network maps it to. */
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "64:ff9b:1::/48, local-use NAT64" },
};

/* Wider blocks than these are catch-alls, not destinations: no single network holds more than
 * an IPv4 /8 (the old class A, the unit IANA hands to the registries) or an IPv6 /16 (the
 * registries' own blocks are /12; the largest allocations to one network are /19 or so). */
#define CATCH_ALL_IPV4_PREFIX 8
#define CATCH_ALL_IPV6_PREFIX 16

const char *allowlist_host_range(int family, const uint8_t addr[static 16], unsigned prefix)
{
        for (size_t i = 0; i < ELEMENTSOF(host_ranges); i++) {
                const struct host_range *h = &host_ranges[i];
                if (h->family == family && address_blocks_overlap(addr, prefix, h->addr, h->prefix))
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
                        return error_oom(err);
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
                int family = 0;
                if (!address_parse_ip(host_addresses[k], &family, addr))
                        family = 0;
                for (size_t i = 0; family && i < l->n; i++) {
                        const allow_entry *e = &l->entries[i];
                        if (e->kind != ALLOW_ADDRESS || e->family != family ||
                            !address_blocks_overlap(e->addr, e->prefix, addr, family == AF_INET ? 32 : 128))
                                continue;
                        _cleanup_free_ char *text = NULL;
                        if (allowlist_entrypoint_arg(e, &text) < 0)
                                return error_oom(err);
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
        char shown[ALLOWLIST_SHOWN_MAX], why[WHY_MAX];
        size_t len = strlen(text);
        allowlist_show(text, len, shown);
        const char *colon = strchr(text, ':');
        if (!colon || colon == text || len > ALLOWLIST_ENTRY_MAX)
                return aisb_error_set(err, -EINVAL, "--gate-add-host '%s': expected NAME:IP", shown);

        _cleanup_free_ char *name_text = strndup(text, (size_t) (colon - text));
        if (!name_text)
                return error_oom(err);
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
        int family;
        if (!address_parse_ip(ip_text, &family, addr))
                return aisb_error_set(err, -EINVAL,
                                      "--gate-add-host '%s': '%s' is not an IPv4 or IPv6 address",
                                      shown, ip_text);
        char canonical[INET6_ADDRSTRLEN];
        (void) inet_ntop(family, addr, canonical, sizeof canonical);

        _cleanup_free_ char *n = strdup(name), *a = strdup(canonical);
        if (!n || !a)
                return error_oom(err);
        *ret_name = steal_pointer(&n);
        *ret_ip = steal_pointer(&a);
        return 0;
}

/* The project's .ai-sandbox/allow for appending: each step through a descriptor, no link
 * followed, no FIFO waited on, a regular file or nothing. */
static int open_project_file(const char *project, aisb_error **err)
{
        _cleanup_close_ int dir = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return aisb_error_set(err, -errno, "%s: %s", project, strerror(errno));
        if (mkdirat(dir, ".ai-sandbox", 0755) < 0 && errno != EEXIST)
                return aisb_error_set(err, -errno, "%s/.ai-sandbox: %s", project, strerror(errno));
        _cleanup_close_ int settings = openat(dir, ".ai-sandbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (settings < 0)
                return aisb_error_set(err, errno == ELOOP || errno == ENOTDIR ? -EINVAL : -errno,
                                      "%s/.ai-sandbox is not a directory (a link there is refused)", project);
        int fd = openat(settings, "allow", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                        0644);
        if (fd < 0)
                return aisb_error_set(err, errno == ELOOP ? -EINVAL : -errno,
                                      "%s/.ai-sandbox/allow: %s (a link there is refused)", project,
                                      errno == ELOOP ? "a link" : strerror(errno));
        return fd;
}

static int open_user_file(aisb_error **err)
{
        _cleanup_free_ char *path = user_config_path("allow");
        if (!path)
                return aisb_error_set(err, -ENOENT, "neither XDG_CONFIG_HOME nor HOME is set");
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return error_oom(err);
        *strrchr(dir, '/') = 0;
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return aisb_error_set(err, r, "cannot create %s: %s", dir, strerror(-r));
        int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return aisb_error_set(err, -errno, "%s: %s", path, strerror(errno));
        return fd;
}

int allowlist_file_append(const char *project, const char *const *lines, aisb_error **err)
{
        bool project_file = project != NULL;
        /* Every line first, the way that file's reader takes it: nothing is written when one
         * is refused. */
        allowlist check = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && lines && lines[i]; i++) {
                if (strchr(lines[i], '\n'))
                        r = aisb_error_set(err, -EINVAL, "an allowlist line holds a newline");
                else
                        r = allowlist_parse_text(&check, lines[i], strlen(lines[i]), "the line",
                                                 project_file ? ALLOWLIST_FILE_DOMAINS_ONLY : 0, err);
        }
        allowlist_done(&check);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = project_file ? open_project_file(project, err) : open_user_file(err);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "fstat: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "the allowlist file is not a regular file");
        _cleanup_(buffer_free) buffer b = {};
        char last = '\n';
        if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
                last = '\n';
        r = last != '\n' ? buffer_printf(&b, "\n") : 0;
        for (size_t i = 0; r >= 0 && lines && lines[i]; i++)
                r = buffer_printf(&b, "%s\n", lines[i]);
        if (r < 0)
                return error_oom(err);
        r = b.size ? write_all(fd, b.data, b.size) : 0;
        if (r < 0)
                return aisb_error_set(err, r, "writing the allowlist: %s", strerror(-r));
        return 0;
}
