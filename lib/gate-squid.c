/* SPDX-License-Identifier: MIT */
/*
 * The gate's squid configuration, hosts file and name (gate-squid.h), and the counting of
 * its access log. squid.conf is built only from canonical allowlist entries.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <sys/random.h>

#include <nettle/base64.h>

#include "address.h"
#include "gate-squid.h"
#include "digest.h"

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
        strv_sort(lines);
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

int gate_squid_hash(const allowlist *l, const char *const *add_hosts, char **ret_hex)
{
        _cleanup_strv_free_ char **lines = NULL, **hosts = NULL;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                _cleanup_free_ char *line = NULL;
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                if (asprintf(&line, "domain %s %u%s%s", e->host, e->port, e->rules ? " " : "",
                             e->rules ? e->rules : "") < 0 ||
                    strv_push(&lines, line) < 0)
                        return -ENOMEM;
        }
        size_t n = strv_length((const char *const *) lines);
        strv_sort(lines);
        int r = add_host_lines(add_hosts, &hosts);
        if (r < 0)
                return r;

        /* Entries are unique already (allowlist_add merges), so sorting is all it takes. */
        _cleanup_(buffer_free) buffer b = {};
        r = buffer_printf(&b, "%s\n", GATE_SQUID_VERSION);
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
               strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == len;
}

/* Which domain entries a list of hosts is made of. */
typedef enum host_kind {
        HOSTS_ALL,
        HOSTS_WITH_RULES,
        HOSTS_WITHOUT_RULES,
} host_kind;
#define HOSTS_ANY_PORT (-1L)

static bool host_wanted(const allow_entry *e, host_kind kind, long port)
{
        return e->kind == ALLOW_DOMAIN && (port == HOSTS_ANY_PORT || e->port == (unsigned) port) &&
               (kind == HOSTS_ALL || (kind == HOSTS_WITH_RULES) == (e->rules != NULL));
}

/* The hosts of the domain entries of a kind (and a port, or HOSTS_ANY_PORT), in entry order,
 * each once and none below another of them: squid warns about a name below another in one
 * list and drops one, or refuses the list. */
static int outermost_hosts(const allowlist *l, host_kind kind, long port, char ***ret)
{
        _cleanup_strv_free_ char **names = NULL;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (!host_wanted(e, kind, port))
                        continue;
                bool covered = false;
                for (size_t j = 0; j < l->n && !covered; j++) {
                        const allow_entry *o = &l->entries[j];
                        covered = host_wanted(o, kind, port) && allowlist_domain_covers(o->host, e->host) &&
                                  (!streq(o->host, e->host) || j < i);
                }
                if (!covered && strv_push(&names, e->host) < 0)
                        return -ENOMEM;
        }
        *ret = steal_pointer(&names);
        return 0;
}

/* The domains that get one http_access line together: all entries without rules with the
 * same port (0 = the default 80 and 443), sorted. */
static int port_group(const allowlist *l, unsigned port, char ***ret)
{
        int r = outermost_hosts(l, HOSTS_WITHOUT_RULES, port, ret);
        if (r >= 0)
                strv_sort(*ret);
        return r;
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
        /* Azure's platform address (its wire server and DNS, which serves a VM's extensions'
         * settings and certificates): public, but the host's own surroundings there. */
        { AF_INET, { 168, 63, 129, 16 }, 32, "168.63.129.16" },
        { AF_INET6, { 0, 0x64, 0xff, 0x9b, [12] = 168, 63, 129, 16 }, 128, "64:ff9b::a83f:8110" },
};

const char *gate_local_range(int family, const uint8_t addr[static 16])
{
        for (size_t i = 0; i < ELEMENTSOF(gate_local_ranges); i++) {
                const struct gate_local_range *g = &gate_local_ranges[i];
                if (g->family == family && address_blocks_overlap(addr, family == AF_INET ? 32 : 128, g->addr, g->prefix))
                        return g->text;
        }
        return NULL;
}

/* The header each well-known API expects its key in. */
static const struct {
        const char *host, *header, *scheme;
} secret_headers[] = {
        { "api.anthropic.com", "x-api-key", NULL },
        { "api.openai.com", "Authorization", "Bearer" },
        { "generativelanguage.googleapis.com", "x-goog-api-key", NULL },
        { "api.mistral.ai", "Authorization", "Bearer" },
        { "openrouter.ai", "Authorization", "Bearer" },
        { "api.github.com", "Authorization", "Bearer" },
};

void gate_secret_done(gate_secret *s)
{
        free(s->name);
        strv_free(s->hosts);
        free(s->header);
        free(s->scheme);
        free_secret(s->value);
        free(s->placeholder);
        *s = (gate_secret) {};
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

int gate_secret_parse(const char *spec, const char *value, gate_secret *ret, char *why, size_t whylen)
{
        _cleanup_(gate_secret_done) gate_secret g = {};
        _cleanup_free_ char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        char *at = strchr(copy, '@');
        if (!at || at == copy)
                return WHY("expected NAME@HOST[,HOST...][/HEADER[:SCHEME]]");
        *at = 0;
        char *hosts = at + 1, *header = strchr(hosts, '/');
        if (header)
                *header++ = 0;
        g.name = strdup(copy);
        if (!g.name)
                return -ENOMEM;
        if (!*hosts)
                return WHY("no host after '@'");
        char *save = NULL;
        for (char *h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
                allowlist probe = {};
                aisb_error *e = NULL;
                int r = allowlist_add(&probe, h, "--secret", &e);
                bool domain = r >= 0 && probe.entries[0].kind == ALLOW_DOMAIN && probe.entries[0].port == 0 &&
                              h[0] != '*';
                _cleanup_free_ char *canonical = domain ? strdup(probe.entries[0].host) : NULL;
                allowlist_done(&probe);
                if (!domain) {
                        r = WHY("'%.64s' is no host name: %s", h, e ? aisb_error_message(e) : "a name, without port or '*.'");
                        aisb_error_free(e);
                        return r;
                }
                if (!canonical || strv_push(&g.hosts, canonical) < 0)
                        return -ENOMEM;
        }
        if (!g.hosts)
                return WHY("no host after '@'");
        const char *scheme = NULL;
        if (header) {
                char *colon = strchr(header, ':');
                if (colon) {
                        *colon = 0;
                        scheme = colon + 1;
                }
                if (!*header || strspn(header, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
                                        strlen(header) || strlen(header) > 64)
                        return WHY("'%.64s' is no header name (letters, digits and -)", header);
                /* Headers that say where a request goes or how it is framed are not credentials. */
                static const char *const framing[] = { "Host", "Proxy-Authorization", "Proxy-Connection",
                                                       "Connection", "Content-Length", "Transfer-Encoding",
                                                       "Upgrade", "TE", "Trailer", "Keep-Alive", "Expect" };
                for (size_t i = 0; i < ELEMENTSOF(framing); i++)
                        if (strcasecmp(header, framing[i]) == 0)
                                return WHY("%s is no header for a credential", framing[i]);
                if (scheme && (!*scheme || strspn(scheme, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
                                                   strlen(scheme) || strlen(scheme) > 32))
                        return WHY("'%.32s' is no scheme (letters only, e.g. Bearer)", scheme);
        } else {
                header = (char *) "Authorization";
                scheme = "Bearer";
                for (size_t i = 0; i < ELEMENTSOF(secret_headers); i++)
                        if (streq(g.hosts[0], secret_headers[i].host)) {
                                header = (char *) secret_headers[i].header;
                                scheme = secret_headers[i].scheme;
                        }
        }
        /* The value goes inside a quoted squid.conf token that squid also reads for its own
         * %-codes: only what needs neither quoting nor escaping. */
        size_t n = value ? strlen(value) : 0;
        if (n == 0)
                return WHY("%s is empty", g.name);
        if (n > 4096)
                return WHY("%s is longer than 4096 characters", g.name);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) value[i] <= 0x20 || (unsigned char) value[i] >= 0x7f || strchr("\"'%\\", value[i]))
                        return WHY("%s holds a character the gate cannot put in a header as it is (a blank, "
                                   "a quote, %%, \\ or a control or non-ASCII one)",
                                   g.name);
        uint8_t random[16];
        if (getrandom(random, sizeof random, 0) != sizeof random)
                return WHY("no random bytes for the placeholder: %s", strerror(errno));
        char hex[33];
        for (size_t i = 0; i < sizeof random; i++)
                snprintf(hex + 2 * i, 3, "%02x", random[i]);
        g.header = strdup(header);
        g.scheme = scheme ? strdup(scheme) : NULL;
        g.value = strdup(value);
        if (asprintf(&g.placeholder, "aisb-secret-%s", hex) < 0)
                g.placeholder = NULL;
        if (!g.header || (scheme && !g.scheme) || !g.value || !g.placeholder)
                return -ENOMEM;
        *ret = g;
        g = (gate_secret) {};
        return 0;
}

/* Where a request is meant to go is compared with where its connection goes, in lower case
 * and without a hello's trailing dot; a line short of fields is refused. */
const char gate_squid_tunnel_helper[] =
        "{\n"
        "  to = tolower($2); host = to; sub(/:[0-9]+$/, \"\", host)\n"
        "  sni = tolower($7); sub(/\\.$/, \"\", sni)\n"
        "  astray = NF < 7 || $3 == \"CONNECT\" || $4 != \"https\" || tolower($5) \":\" $6 != to ||\n"
        "           (sni != \"-\" && sni != host)\n"
        "  answer = $1 (astray ? \" OK\" : \" ERR\")\n"
        "  print answer\n"
        "  fflush()\n"
        "}\n";

bool gate_squid_intercepts(const allowlist *l, size_t n_secrets)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->entries[i].kind == ALLOW_DOMAIN && l->entries[i].rules)
                        return true;
        return n_secrets > 0;
}

/* A path prefix as a squid regular expression: the characters an entry may hold, the two
 * that mean something to a regex escaped. */
static int path_regex(buffer *b, const char *path)
{
        int r = buffer_printf(b, " ^");
        for (const char *c = path; *c && r >= 0; c++)
                r = buffer_printf(b, *c == '.' || *c == '+' ? "\\%c" : "%c", *c);
        return r;
}

/* The key a per-run gate asks of its clients: the exact Proxy-Authorization header the proxy
 * URL "http://GATE_CLIENT_USER:KEY@..." makes clients send. A client connection is marked once
 * a request on it had it: what squid checks later on that connection without the header (the
 * requests inside a TLS connection it opened, the CONNECT it re-checks after reading the
 * TLS server name) came from the same client. Forwarded nowhere. */
static int client_key_lines(buffer *b, const char *key)
{
        _cleanup_free_ char *credentials = NULL;
        if (asprintf(&credentials, GATE_CLIENT_USER ":%s", key) < 0)
                return -ENOMEM;
        size_t n = strlen(credentials);
        _cleanup_free_ char *encoded = calloc(1, BASE64_ENCODE_RAW_LENGTH(n) + 1);
        if (!encoded)
                return -ENOMEM;
        base64_encode_raw((char *) encoded, n, (const uint8_t *) credentials);
        explicit_bzero(credentials, n);
        /* Base64 of "aisb:" and hex digits is letters, digits and '=': a regular expression
         * that means itself. */
        if (strspn(encoded, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789=") != strlen(encoded))
                return -EINVAL;
        int r = buffer_printf(b, "acl aisb_key req_header Proxy-Authorization ^Basic[[:blank:]]+%s$\n"
                                 "acl aisb_keyed note aisb_keyed yes\n"
                                 "acl aisb_mark_keyed annotate_client aisb_keyed=yes\n"
                                 "acl aisb_trusted any-of aisb_keyed aisb_key\n"
                                 "request_header_access Proxy-Authorization deny all\n",
                              encoded);
        explicit_bzero(encoded, strlen(encoded));
        return r;
}

/* An entry with rules: a CONNECT to its host is let in to be intercepted, and each request
 * inside must match its methods and paths; a plain-HTTP request the same. */
static int rules_lines(buffer *b, const allow_entry *e, size_t i, char ***allows)
{
        int r = buffer_printf(b, "acl aisb_rule%zu_dst dstdomain -n .%s\n", i, e->host);
        if (e->port)
                r |= buffer_printf(b, "acl aisb_rule%zu_port port %u\n", i, e->port);
        else
                r |= buffer_printf(b, "acl aisb_rule%zu_port port 80 443\n", i);
        _cleanup_free_ char *copy = strdup(e->rules);
        if (!copy)
                return -ENOMEM;
        bool have_paths = false;
        _cleanup_(buffer_free) buffer paths = {};
        char *save = NULL;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
                if (w[0] == '/') {
                        have_paths = true;
                        r |= path_regex(&paths, w);
                }
        if (e->methods) {
                r |= buffer_printf(b, "acl aisb_rule%zu_method method", i);
                for (unsigned bit = 1; bit <= ALLOW_METHOD_DELETE; bit <<= 1)
                        if (e->methods & bit)
                                r |= buffer_printf(b, " %s", allowlist_method_name(bit));
                r |= buffer_printf(b, "\n");
        }
        if (have_paths)
                r |= buffer_printf(b, "acl aisb_rule%zu_path urlpath_regex%s\n", i, paths.data);
        _cleanup_free_ char *tunnel = NULL;
        if (asprintf(&tunnel, "http_access allow aisb_connect aisb_rule%zu_dst aisb_rule%zu_port", i, i) < 0)
                return -ENOMEM;
        _cleanup_(buffer_free) buffer line = {};
        r |= buffer_printf(&line, "http_access allow !aisb_connect aisb_rule%zu_dst aisb_rule%zu_port", i, i);
        if (e->methods)
                r |= buffer_printf(&line, " aisb_rule%zu_method", i);
        if (have_paths)
                r |= buffer_printf(&line, " aisb_rule%zu_path", i);
        if (r < 0 || strv_push(allows, tunnel) < 0 || strv_push(allows, line.data) < 0)
                return -ENOMEM;
        return 0;
}

int gate_squid_config(const allowlist *l, const squid_options *o, char **ret_text,
                           aisb_error **err)
{
        const char *access_log = o->access_log ? o->access_log : "/var/log/squid/access.log";
        const char *cache_log = o->cache_log ? o->cache_log : "/var/log/squid/cache.log";

        if (o->port < 1 || o->port > 65535)
                return aisb_error_set(err, -EINVAL, "gate port %u: must be 1..65535", o->port);
        bool intercepts = gate_squid_intercepts(l, o->n_secrets);
        if (intercepts && (!o->bump_cert || !o->bump_key || !o->bump_db))
                return aisb_error_set(err, -EINVAL, "the gate must intercept TLS here but has no CA");
        if (intercepts && !o->tunnel_helper)
                return aisb_error_set(err, -EINVAL, "the gate must intercept TLS here but has no tunnel helper");
        if (o->client_key && (!*o->client_key || strlen(o->client_key) > 64 ||
                              strspn(o->client_key, "0123456789abcdef") != strlen(o->client_key)))
                return aisb_error_set(err, -EINVAL, "the gate's client key must be 1..64 hex digits");
        const char *paths[] = { o->hosts_file, access_log, cache_log, o->held_helper,
                                intercepts ? o->bump_cert : NULL, intercepts ? o->bump_key : NULL,
                                intercepts ? o->bump_db : NULL, intercepts ? o->tunnel_helper : NULL };
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (paths[i] && !squid_path_valid(paths[i])) {
                        char shown[ALLOWLIST_SHOWN_MAX];
                        allowlist_show(paths[i], strlen(paths[i]), shown);
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
                        return error_oom(err);
        for (size_t i = 0; o->host_addresses && o->host_addresses[i]; i++) {
                const char *text = o->host_addresses[i];
                uint8_t addr[16];
                int family;
                char canonical[INET6_ADDRSTRLEN];
                if (strlen(text) >= sizeof canonical || !address_parse_ip(text, &family, addr)) {
                        char shown[ALLOWLIST_SHOWN_MAX];
                        allowlist_show(text, strlen(text), shown);
                        return aisb_error_set(err, -EINVAL, "host address '%s': not an IPv4 or IPv6 address",
                                              shown);
                }
                (void) inet_ntop(family, addr, canonical, sizeof canonical);
                bool seen = false;
                for (size_t j = 0; j < ELEMENTSOF(gate_local_ranges) && !seen; j++)
                        seen = gate_local_ranges[j].family == family &&
                               address_blocks_overlap(addr, family == AF_INET ? 32 : 128,
                                              gate_local_ranges[j].addr, gate_local_ranges[j].prefix);
                for (size_t j = ELEMENTSOF(gate_local_ranges); local_dst[j] && !seen; j++)
                        seen = streq(local_dst[j], canonical);
                if (!seen && strv_push(&local_dst, canonical) < 0)
                        return error_oom(err);
        }

        _cleanup_strv_free_ char **local_names = NULL;
        for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL;
                int r = allowlist_parse_add_host(o->add_hosts[i], &name, &ip, err);
                if (r < 0)
                        return r;
                if (strv_push(&local_names, name) < 0)
                        return error_oom(err);
        }

        /* The distinct explicit ports, ascending; 0 (the default pair) goes first. */
        _cleanup_free_ unsigned *ports = calloc(l->n + 1, sizeof *ports);
        size_t n_ports = 0;
        bool have_default = false;
        if (!ports)
                return error_oom(err);
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
                "# everything else, IP literals included, is refused.\n");
        if (!intercepts)
                r |= buffer_printf(&b, "http_port %s%u\n", o->cluster ? "" : "127.0.0.1:", o->port);
        else
                /* The port's CA, and the helper that makes each intercepted host's certificate
                 * from it. Upstream certificates are checked against the gate image's trusted
                 * CAs (the system's and --ca-cert's): an error refuses the request. */
                r |= buffer_printf(&b,
                        "http_port %s%u ssl-bump tls-cert=%s tls-key=%s generate-host-certificates=on "
                        "dynamic_cert_mem_cache_size=4MB\n"
                        "sslcrtd_program /usr/lib/squid/security_file_certgen -s %s -M 4MB\n"
                        /* Past its queue, a certificate request fails that handshake: squid's
                         * default is to exit after 3 minutes of it, which a sandbox naming a new
                         * server in each TLS hello could bring about, letting the port go. */
                        "sslcrtd_children 3 startup=1 idle=1 queue-size=1024 on-persistent-overload=ERR\n"
                        "host_verify_strict on\n",
                        o->cluster ? "" : "127.0.0.1:", o->port, o->bump_cert, o->bump_key, o->bump_db);
        r |= buffer_printf(&b,
                "visible_hostname aisb-gate\n"
                "pid_filename none\n"
                "cache deny all\n"
                "cache_mem 8 MB\n"
                "cache_store_log none\n"
                "netdb_filename none\n"
                "shutdown_lifetime 1 seconds\n"
                "pinger_enable off\n"
                /* The gate image's pages: squid's own, and aisb's refusals. */
                "error_directory /usr/share/squid/errors/aisb\n");
        if (o->hosts_file)
                r |= buffer_printf(&b, "hosts_file %s\n", o->hosts_file);
        /* squid runs as user proxy and cannot open /dev/stdout: logs go to files. */
        r |= buffer_printf(&b,
                "logformat aisb %s\n"
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
                /* The cache manager would show this configuration (a secret's value with
                 * it): no password opens it, and the first access line refuses it. */
                "cachemgr_passwd disable all\n"
                "email_err_data off\n"
                "\n",
                GATE_SQUID_LOGFORMAT, cache_log);

        /* -n everywhere: without it squid looks up the PTR record of an IP literal and
         * matches that name, and whoever owns the address chooses its PTR record. */
        r |= buffer_printf(&b, o->cluster ? "acl aisb_clients src all\n" : "acl aisb_clients src 127.0.0.0/8 ::1\n");
        r |= buffer_printf(&b,
                "acl aisb_connect method CONNECT\n"
                "acl aisb_schemes proto HTTP HTTPS\n"
                "acl aisb_ip_literal dstdom_regex -n -i ^[0-9.]+$ (^|\\.)(0x[0-9a-f]*|[0-9]+)$ ^\\[ :\n");
        if (o->client_key)
                r |= client_key_lines(&b, o->client_key);
        /* A gate with a key logs only what its clients sent: another local user's refused
         * requests are not the run's, for its summary or for aisb allow to propose. */
        r |= buffer_printf(&b, "access_log stdio:%s logformat=aisb%s\n", access_log,
                           o->client_key ? " aisb_trusted" : "");
        r |= acl_lines(&b, "aisb_local_dst", "dst", "", local_dst);
        if (local_names)
                r |= acl_lines(&b, "aisb_local_names", "dstdomain -n", "", local_names) < 0 ? -ENOMEM : 0;

        _cleanup_strv_free_ char **all_ports = NULL;
        if (have_default)
                if (strv_push(&all_ports, "80") < 0 || strv_push(&all_ports, "443") < 0)
                        return error_oom(err);
        for (size_t i = 0; i < n_ports; i++) {
                char text[8];
                snprintf(text, sizeof text, "%u", ports[i]);
                if (!(have_default && (ports[i] == 80 || ports[i] == 443)))
                        r |= strv_push(&all_ports, text);
        }
        if (any) {
                r |= acl_lines(&b, "aisb_ports", "port", "", all_ports);
                _cleanup_strv_free_ char **listed = NULL;
                if (outermost_hosts(l, HOSTS_ALL, HOSTS_ANY_PORT, &listed) < 0)
                        return error_oom(err);
                strv_sort(listed);
                r |= acl_lines(&b, "aisb_listed", "dstdomain -n", ".", listed);
        }

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
                        return error_oom(err);
                if (!names)
                        continue; /* only entries with rules use this port */
                r |= acl_lines(&b, dst, "dstdomain -n", ".", names);
                if (port)
                        r |= buffer_printf(&b, "acl %s port %u\n", port_acl, port);
                else
                        r |= buffer_printf(&b, "acl %s port 80 443\n", port_acl);
                _cleanup_free_ char *rule = NULL;
                if (asprintf(&rule, "http_access allow %s %s", dst, port_acl) < 0 ||
                    strv_push(&rules, rule) < 0)
                        return error_oom(err);
        }

        /* Entries with rules, and their hosts altogether (a request there that no rule allows
         * is told so). */
        _cleanup_strv_free_ char **rule_hosts = NULL;
        size_t n_plain = strv_length((const char *const *) rules);
        for (size_t i = 0; i < l->n; i++)
                if (host_wanted(&l->entries[i], HOSTS_WITH_RULES, HOSTS_ANY_PORT) &&
                    rules_lines(&b, &l->entries[i], i, &rules) < 0)
                        return error_oom(err);
        if (outermost_hosts(l, HOSTS_WITH_RULES, HOSTS_ANY_PORT, &rule_hosts) < 0)
                return error_oom(err);
        if (rule_hosts) {
                r |= acl_lines(&b, "aisb_rule_hosts", "dstdomain -n", ".", rule_hosts);
                /* squid matches a path (with its query) decoded once; a server that resolves
                 * dot segments (also with dots or blanks after them, which Windows drops), reads
                 * \ as /, decodes twice or %u-encoded, or maps overlong or wide forms (any byte
                 * not printable ASCII) would serve what no prefix names (allowlist_path_odd). */
                r |= buffer_printf(&b, "acl aisb_path_odd urlpath_regex -i "
                                       "/\\.\\.?[.[:space:]]*(/|\\?|;|#|$) \\\\ %%(00|2e|2f|5c|u) [^[:print:]]\n");
                /* Headers many frameworks read as the method, or the path, instead of the
                 * request line's. */
                r |= buffer_printf(&b, "request_header_access X-HTTP-Method-Override deny aisb_rule_hosts\n"
                                       "request_header_access X-HTTP-Method deny aisb_rule_hosts\n"
                                       "request_header_access X-Method-Override deny aisb_rule_hosts\n"
                                       "request_header_access X-Original-Method deny aisb_rule_hosts\n"
                                       "request_header_access X-Original-URL deny aisb_rule_hosts\n"
                                       "request_header_access X-Rewrite-URL deny aisb_rule_hosts\n"
                                       "request_header_access X-Forwarded-Prefix deny aisb_rule_hosts\n"
                                       "request_header_access X-Envoy-Original-Path deny aisb_rule_hosts\n");
                /* A body on a method that carries none is a second request to a server that
                 * ignores its length (a request outside the rules). */
                r |= buffer_printf(&b, "acl aisb_bodiless method GET HEAD OPTIONS\n"
                                       "acl aisb_body_length req_header Content-Length [1-9]\n"
                                       "acl aisb_body_chunked req_header Transfer-Encoding .\n");
        }

        /* Secrets: over HTTPS to their hosts only, the header is the gate's, never the
         * client's (denied, then added: replaced, not appended). */
        if (o->n_secrets)
                r |= buffer_printf(&b, "acl aisb_https proto HTTPS\n");
        for (size_t i = 0; i < o->n_secrets; i++) {
                const gate_secret *g = &o->secrets[i];
                char acl[32];
                snprintf(acl, sizeof acl, "aisb_secret%zu", i);
                r |= acl_lines(&b, acl, "dstdomain -n", "", g->hosts);
                r |= buffer_printf(&b, "request_header_access %s deny %s\n", g->header, acl);
                r |= buffer_printf(&b, "request_header_add %s \"%s%s%s\" %s aisb_https\n", g->header,
                                   g->scheme ? g->scheme : "", g->scheme ? " " : "", g->value, acl);
        }
        if (intercepts) {
                /* TLS is opened only where a rule or a secret needs the request itself; every
                 * other host stays a tunnel the gate cannot read. */
                _cleanup_strv_free_ char **bump = NULL;
                for (size_t i = 0; rule_hosts && rule_hosts[i]; i++) {
                        _cleanup_free_ char *below = NULL;
                        if (asprintf(&below, ".%s", rule_hosts[i]) < 0 || strv_push(&bump, below) < 0)
                                return error_oom(err);
                }
                /* A secret's host that a rule's host covers is in already (squid refuses a
                 * name twice in one list). */
                for (size_t i = 0; i < o->n_secrets; i++)
                        for (size_t k = 0; o->secrets[i].hosts[k]; k++) {
                                bool covered = false;
                                for (size_t j = 0; rule_hosts && rule_hosts[j]; j++)
                                        covered |= allowlist_domain_covers(rule_hosts[j], o->secrets[i].hosts[k]);
                                for (size_t j = 0; bump && bump[j]; j++)
                                        covered |= streq(bump[j], o->secrets[i].hosts[k]);
                                if (!covered && strv_push(&bump, o->secrets[i].hosts[k]) < 0)
                                        return error_oom(err);
                        }
                /* Which tunnels stay unread: those whose CONNECT names no host of a rule or a
                 * secret and whose TLS hello names a host of an entry without rules. Anything
                 * else is opened (after a peek, so that the certificate made for the client
                 * mimics the server's, identifiers and all): a hello naming a host with rules
                 * through a CONNECT to another name the same front end serves, a hello naming
                 * no listed host, a CONNECT to a host of a rule or a secret. */
                _cleanup_strv_free_ char **plain = NULL;
                if (outermost_hosts(l, HOSTS_WITHOUT_RULES, HOSTS_ANY_PORT, &plain) < 0)
                        return error_oom(err);
                r |= acl_lines(&b, "aisb_bump", "dstdomain -n", "", bump);
                /* The same names as the client's hello may spell them (any case, a trailing
                 * dot): a hello naming one through a CONNECT to another name is ended, for the
                 * front end behind it would choose its site by that name. */
                _cleanup_strv_free_ char **bump_re = NULL;
                for (size_t i = 0; bump && bump[i]; i++) {
                        const char *name = bump[i][0] == '.' ? bump[i] + 1 : bump[i];
                        _cleanup_(buffer_free) buffer re = {};
                        int k = buffer_printf(&re, "%s", bump[i][0] == '.' ? "(^|\\.)" : "^");
                        for (const char *c = name; *c && k >= 0; c++)
                                k = buffer_printf(&re, *c == '.' ? "\\." : "%c", *c);
                        if (k < 0 || buffer_printf(&re, "\\.?$") < 0 || strv_push(&bump_re, re.data) < 0)
                                return error_oom(err);
                }
                r |= acl_lines(&b, "aisb_bump_sni", "ssl::server_name_regex --client-requested -i", "", bump_re);
                r |= buffer_printf(&b, "acl aisb_step1 at_step SslBump1\n"
                                       "ssl_bump peek aisb_step1\n"
                                       "ssl_bump terminate !aisb_bump aisb_bump_sni\n");
                if (plain) {
                        r |= acl_lines(&b, "aisb_plain_sni", "ssl::server_name --client-requested", ".", plain);
                        r |= buffer_printf(&b, "ssl_bump splice !aisb_bump aisb_plain_sni\n");
                }
                /* A connection it opens is marked with where it goes: the CONNECT's name and
                 * port, which squid resolves and connects to, and whose certificate it checks
                 * against the hello's name or that one. Inside, squid takes each request's URL from what the client wrote
                 * (an absolute-form target, else Host) and sends it down that same server
                 * connection: the tunnel helper refuses every request whose URL names another
                 * destination, another scheme, a TLS hello's name that is not the
                 * destination's, or a CONNECT (an unread tunnel inside). Marked at the
                 * decision to open it, so the CONNECT itself, and the one squid makes again to
                 * splice a tunnel, are not in it. */
                r |= buffer_printf(&b, "acl aisb_mark_tunnel annotate_client aisb_tunnel=\"%%>rd:%%>rP\"\n"
                                       "ssl_bump bump all aisb_mark_tunnel\n"
                                       "acl aisb_tunneled note aisb_tunnel\n"
                                       "external_acl_type aisb_tunnel ttl=0 negative_ttl=0 cache=0 "
                                       "children-max=1 children-startup=1 concurrency=32 queue-size=4096 "
                                       "%%{aisb_tunnel}note %%>rm %%>rs %%>rd %%>rP %%ssl::>sni "
                                       GATE_TUNNEL_HELPER_AWK " %s\n"
                                       "acl aisb_astray external aisb_tunnel\n",
                                   o->tunnel_helper);
                /* What is not TLS inside a CONNECT (Node sends plain HTTP through one) goes on
                 * unread, as through a gate that opens nothing, except to a host with rules,
                 * whose every request the gate must read: there squid closes the connection
                 * (it has no page to send on it). */
                r |= buffer_printf(&b, "on_unsupported_protocol tunnel %s\n", rule_hosts ? "!aisb_rule_hosts" : "all");
        }

        if (o->held_helper)
                r |= buffer_printf(&b, "external_acl_type aisb_held ttl=0 negative_ttl=0 cache=0 "
                                       "children-max=1 children-startup=1 concurrency=32 queue-size=4096 "
                                       "%%>a /bin/sh %s\n"
                                       "acl aisb_held external aisb_held\n", o->held_helper);
        r |= buffer_printf(&b,
                "\n"
                "http_access deny manager\n"
                "http_access deny !aisb_clients\n"
                "%s"
                "http_access deny aisb_ip_literal\n"
                "http_access deny !aisb_connect !aisb_schemes\n",
                o->client_key ? "http_access deny !aisb_keyed !aisb_key\n"
                                "http_access deny aisb_key aisb_mark_keyed !all\n" : "");
        /* After the key: a client without it never reaches the helper, whose queue it could
         * otherwise fill. */
        if (o->held_helper)
                r |= buffer_printf(&b, "http_access deny aisb_held\n");
        if (intercepts)
                r |= buffer_printf(&b, "http_access deny aisb_tunneled aisb_astray\n");
        /* TRACE echoes the request, headers and all: the secret's, at a host that gets one. */
        if (rule_hosts || o->n_secrets)
                r |= buffer_printf(&b, "acl aisb_trace method TRACE\n");
        if (rule_hosts)
                r |= buffer_printf(&b, "http_access deny aisb_rule_hosts aisb_trace\n");
        for (size_t i = 0; i < o->n_secrets; i++)
                r |= buffer_printf(&b, "http_access deny aisb_secret%zu aisb_trace\n", i);
        if (any)
                r |= buffer_printf(&b, "http_access deny !aisb_ports\n"
                                       /* A name no entry lists is refused here, by name: the
                                        * address check below makes squid resolve the name, and
                                        * a lookup of a name the agent chose is a message out
                                        * through the resolvers (a DNS tunnel). */
                                       "http_access deny !aisb_listed\n");
        else
                r |= buffer_printf(&b, "http_access deny all\n");
        /* The gate shares the host's network: a listed name that resolves to loopback,
         * link-local (cloud metadata), a private or shared range (the host's neighbours, its
         * containers, a VPN) or one of the host's own addresses would reach the host or its
         * network rather than the internet. Only --gate-add-host names, mapped on purpose, may. */
        r |= buffer_printf(&b, "http_access deny aisb_local_dst%s\n",
                           local_names ? " !aisb_local_names" : "");
        for (size_t i = 0; rules && rules[i]; i++)
                r |= buffer_printf(&b, "%s%s\n",
                                   i == n_plain ? "http_access deny aisb_rule_hosts aisb_path_odd\n"
                                                  "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_length\n"
                                                  "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_chunked\n"
                                                : "",
                                   rules[i]);
        if (rule_hosts)
                r |= buffer_printf(&b, "http_access deny aisb_rule_hosts\n");
        r |= buffer_printf(&b,
                "http_access deny all\n"
                "http_reply_access allow all\n");
        /* What a refused client reads: which name, which rule, how the user allows it (the
         * gate image's ERR_AISB_* pages). */
        r |= buffer_printf(&b,
                "deny_info ERR_AISB_LOCAL aisb_local_dst\n"
                "deny_info ERR_AISB_LITERAL aisb_ip_literal\n"
                "deny_info ERR_AISB_DENIED all\n");
        if (o->held_helper)
                r |= buffer_printf(&b, "deny_info " GATE_HELD_PAGE " aisb_held\n");
        if (intercepts)
                r |= buffer_printf(&b, "deny_info ERR_AISB_ASTRAY aisb_astray\n");
        if (rule_hosts || o->n_secrets)
                r |= buffer_printf(&b, "deny_info ERR_AISB_TRACE aisb_trace\n");
        if (any)
                r |= buffer_printf(&b, "deny_info ERR_AISB_DENIED aisb_listed\n");
        if (rule_hosts)
                r |= buffer_printf(&b, "deny_info ERR_AISB_RULE aisb_rule_hosts\n"
                                       "deny_info ERR_AISB_RULE aisb_path_odd\n"
                                       "deny_info ERR_AISB_RULE aisb_body_length\n"
                                       "deny_info ERR_AISB_RULE aisb_body_chunked\n");
        if (r < 0)
                return error_oom(err);

        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : error_oom(err);
}

int gate_squid_hosts_file(const char *const *add_hosts, char **ret_text, aisb_error **err)
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
                return error_oom(err);
        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : error_oom(err);
}

/* One access log line in GATE_SQUID_LOGFORMAT:
 *   TIME CLIENT METHOD HOST:PORT STATUS SQUID_STATUS BYTES ERROR URL
 * counted as squid 5 and 6 log them (docs/allowlist.md has real lines): denied is the gate's
 * own refusal (TCP_DENIED, also TCP_DENIED_ABORTED when the client left at once); failed is a
 * request the gate let through that did not complete: status 0 (the client left first), an
 * _ABORTED or _TIMEDOUT tag, NONE_NONE/TAG_NONE (squid 5 logs a failed CONNECT so, 6 as
 * TCP_TUNNEL/503), an error page of squid's own (ERR_CONNECT_FAIL, ERR_DNS_FAIL, ...), or a
 * CONNECT that got no tunnel. Everything else reached its destination and got an answer,
 * whatever the status (a 503 of the origin's own is allowed egress). Fields are split on
 * blanks by hand: a field too long for a buffer must not shift the ones after it. */
int egress_count_line(egress_summary *s, const char *line)
{
        const char *field[9] = {};
        size_t len[9] = {}, n = 0;
        for (const char *p = line; n < ELEMENTSOF(field);) {
                while (*p && isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                field[n] = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                len[n] = (size_t) (p - field[n]);
                n++;
        }
#define FIELD_IS(i, text) (len[i] == strlen(text) && strncmp(field[i], text, len[i]) == 0)
#define FIELD_STARTS(i, text) (len[i] >= strlen(text) && strncmp(field[i], text, strlen(text)) == 0)
#define FIELD_HAS(i, text) (memmem(field[i], len[i], text, strlen(text)) != NULL)
        enum { METHOD = 2, HOST = 3, STATUS = 4, TAG = 5, ERROR = 7 };
        if (n <= TAG)
                return -EBADMSG;
        bool no_status = FIELD_IS(STATUS, "0") || FIELD_IS(STATUS, "000");
        /* A connection that sent no request (aisb's own liveness probe) is no egress, nor is
         * aisb's request to a run's own gate, which squid may log after the run's part of the
         * log began. */
        if ((FIELD_IS(METHOD, "-") && no_status) ||
            (FIELD_IS(HOST, GATE_PROBE_HOST ":80") && FIELD_STARTS(TAG, "TCP_DENIED")))
                return 0;
        /* A gate that intercepts TLS logs each CONNECT it intercepts once more as
         * NONE_NONE/200; what follows (the tunnel, or each intercepted request) is
         * counted on its own line. */
        if (FIELD_IS(METHOD, "CONNECT") && FIELD_IS(STATUS, "200") && FIELD_STARTS(TAG, "NONE"))
                return 0;
        /* Older lines (no ERROR field) hold the URL there, which never starts with ERR_. */
        bool has_error = n > ERROR && FIELD_STARTS(ERROR, "ERR_");
        char (*names)[sizeof s->denied_names[0]];
        size_t *n_names;
        if (FIELD_STARTS(TAG, "TCP_DENIED") || (has_error && FIELD_IS(ERROR, "ERR_ACCESS_DENIED"))) {
                s->denied++;
                names = s->denied_names;
                n_names = &s->n_denied_names;
                /* A request the gate saw whole (plain HTTP, or intercepted TLS): which one. */
                enum { URL = 8 };
                if (!FIELD_IS(METHOD, "CONNECT") && n > URL && len[METHOD] < 16 &&
                    (FIELD_STARTS(URL, "http://") || FIELD_STARTS(URL, "https://"))) {
                        char request[sizeof s->denied_requests[0]];
                        snprintf(request, sizeof request, "%.*s %.*s", (int) len[METHOD], field[METHOD],
                                 (int) (len[URL] < sizeof request - 17 ? len[URL] : sizeof request - 17), field[URL]);
                        bool seen = false;
                        for (size_t i = 0; i < s->n_denied_requests && !seen; i++)
                                seen = streq(s->denied_requests[i], request);
                        if (!seen && s->n_denied_requests < ELEMENTSOF(s->denied_requests))
                                memcpy(s->denied_requests[s->n_denied_requests++], request, sizeof request);
                }
        } else if (no_status || FIELD_HAS(TAG, "_ABORTED") || FIELD_HAS(TAG, "_TIMEDOUT") ||
                   FIELD_STARTS(TAG, "NONE") || FIELD_STARTS(TAG, "TAG_NONE") || has_error ||
                   (FIELD_IS(METHOD, "CONNECT") && !FIELD_IS(STATUS, "200"))) {
                s->failed++;
                names = s->failed_names;
                n_names = &s->n_failed_names;
        } else {
                s->allowed++;
                return 0;
        }
#undef FIELD_IS
#undef FIELD_STARTS
#undef FIELD_HAS
        /* The name, with its port unless that is 80 or 443 (what an allowlist entry would
         * say), cut as stored, or repeats never match. */
        char host[sizeof s->denied_names[0]];
        size_t host_len = len[HOST];
        const char *colon = memrchr(field[HOST], ':', host_len);
        if (colon && colon != field[HOST] &&
            ((size_t) (field[HOST] + host_len - colon) == 3 ? strncmp(colon, ":80", 3) == 0
                                                              : (size_t) (field[HOST] + host_len - colon) == 4 &&
                                                                        strncmp(colon, ":443", 4) == 0))
                host_len = (size_t) (colon - field[HOST]);
        snprintf(host, sizeof host, "%.*s", (int) (host_len < sizeof host ? host_len : sizeof host - 1),
                 field[HOST]);
        if (host[0] == '-') /* squid could not parse the request: nothing to name */
                return 0;
        for (size_t i = 0; i < *n_names; i++)
                if (streq(names[i], host))
                        return 0;
        if (*n_names < ELEMENTSOF(s->denied_names))
                memcpy(names[(*n_names)++], host, sizeof host);
        return 0;
}
