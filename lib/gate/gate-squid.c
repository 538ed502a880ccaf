/* SPDX-License-Identifier: MIT */
/*
 * The gate's squid configuration and hosts file (gate-squid.h): a model of what squid.conf
 * says, decided first from the allowlist's canonical entries only, then the emitters that
 * write it, section by section.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <nettle/base64.h>

#include "address.h"
#include "gate-scripts.h"
#include "gate-squid.h"

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

bool gate_squid_intercepts(const allowlist *l, size_t n_secrets)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->entries[i].kind == ALLOW_DOMAIN && l->entries[i].rules)
                        return true;
        return n_secrets > 0;
}

static int compare_unsigned(const void *a, const void *b)
{
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return (x > y) - (x < y);
}

/* Adds a port to a set of n ports (room for it is the caller's), unless it is there. */
static void port_add(unsigned *ports, size_t *n, unsigned port)
{
        for (size_t i = 0; i < *n; i++)
                if (ports[i] == port)
                        return;
        ports[(*n)++] = port;
}

int gate_squid_ports(const allowlist *l, unsigned **ret_ports, size_t *ret_n_ports)
{
        /* At most two ports an entry (the default pair), and one more so that none is calloc(0). */
        _cleanup_free_ unsigned *ports = calloc(2 * l->n + 1, sizeof *ports);
        size_t n = 0;
        if (!ports)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                port_add(ports, &n, e->port ? e->port : 80);
                if (!e->port)
                        port_add(ports, &n, 443);
        }
        qsort(ports, n, sizeof *ports, compare_unsigned);
        *ret_ports = steal_pointer(&ports);
        *ret_n_ports = n;
        return 0;
}

/* squid.conf as it is written: the first error is kept and every line after it is dropped,
 * so that a chain of lines needs one check at its end. */
typedef struct squid_text {
        buffer b;
        int error;
} squid_text;

static void squid_text_done(squid_text *t)
{
        buffer_free(&t->b);
}

static void _printf_(2, 3) emit(squid_text *t, const char *fmt, ...)
{
        if (t->error < 0)
                return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = NULL;
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        t->error = n < 0 ? -ENOMEM : buffer_append(&t->b, s, (size_t) n);
}

/* squid reads config lines into a fixed buffer: keep ACL lines short, repeat the name. */
#define ACL_VALUES_PER_LINE 8

/* value_prefix "." makes a dstdomain value match the name and every name below it. */
static void emit_acl(squid_text *t, const char *name, const char *type, const char *value_prefix,
                     char *const *values)
{
        for (size_t i = 0; values && values[i]; i++) {
                if (i % ACL_VALUES_PER_LINE == 0)
                        emit(t, "%sacl %s %s", i ? "\n" : "", name, type);
                emit(t, " %s%s", value_prefix, values[i]);
        }
        if (values && values[0])
                emit(t, "\n");
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

/* A TLS hello's name for a bump entry (".NAME": NAME and the names below it) as the hello may
 * spell it: any case, a trailing dot. */
static int server_name_regex(const char *entry, char **ret)
{
        const char *name = entry[0] == '.' ? entry + 1 : entry;
        _cleanup_(buffer_free) buffer re = {};
        int r = buffer_printf(&re, "%s", entry[0] == '.' ? "(^|\\.)" : "^");
        for (const char *c = name; *c && r >= 0; c++)
                r = buffer_printf(&re, *c == '.' ? "\\." : "%c", *c);
        if (r >= 0)
                r = buffer_printf(&re, "\\.?$");
        if (r < 0)
                return r;
        *ret = buffer_steal(&re);
        return *ret ? 0 : -ENOMEM;
}

/* The value of the Proxy-Authorization header the proxy URL "http://GATE_CLIENT_USER:KEY@..."
 * makes clients send, after "Basic ". */
static int client_key_base64(const char *key, char **ret)
{
        _cleanup_secret_ char *credentials = NULL;
        if (asprintf(&credentials, GATE_CLIENT_USER ":%s", key) < 0)
                return -ENOMEM;
        size_t n = strlen(credentials);
        _cleanup_secret_ char *encoded = calloc(1, BASE64_ENCODE_RAW_LENGTH(n) + 1);
        if (!encoded)
                return -ENOMEM;
        base64_encode_raw((char *) encoded, n, (const uint8_t *) credentials);
        /* Base64 of "aisb:" and hex digits is letters, digits and '=': a regular expression
         * that means itself. */
        if (strspn(encoded, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789=") != strlen(encoded))
                return -EINVAL;
        *ret = steal_pointer(&encoded);
        return 0;
}

/* Refuses what the gate cannot be made of: a port out of range, interception without its CA
 * or its helper, a key that is not hex, a path squid.conf would read otherwise, a host address
 * or an add-host entry that does not parse. Nothing is built before this passed. */
static int squid_options_check(const allowlist *l, const squid_options *o, const char *access_log,
                               const char *cache_log, aisb_error **err)
{
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
        const char *paths[] = { o->hosts_file, access_log, cache_log, o->held_helper, o->ask_helper,
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
        for (size_t i = 0; o->host_addresses && o->host_addresses[i]; i++) {
                const char *text = o->host_addresses[i];
                uint8_t addr[16];
                int family;
                if (strlen(text) >= INET6_ADDRSTRLEN || !address_parse_ip(text, &family, addr)) {
                        char shown[ALLOWLIST_SHOWN_MAX];
                        allowlist_show(text, strlen(text), shown);
                        return aisb_error_set(err, -EINVAL, "host address '%s': not an IPv4 or IPv6 address",
                                              shown);
                }
        }
        for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL;
                int r = allowlist_parse_add_host(o->add_hosts[i], &name, &ip, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* An entry with rules: its ACLs are aisb_ruleN_*, N its index in the allowlist. */
typedef struct squid_rule {
        const allow_entry *entry;
        size_t index;
        char *paths; /* its path prefixes as urlpath_regex values (" ^/a ^/b"), or NULL: none */
} squid_rule;

/* The domains without rules on one port (0: the default 80 and 443), allowed by one line. */
typedef struct squid_port_group {
        unsigned port;
        char **names; /* sorted, none below another */
} squid_port_group;

/* What squid.conf says, decided before a line is written; each list is in the order its ACL
 * names it. */
typedef struct squid_model {
        const squid_options *o;
        const char *access_log, *cache_log;
        bool intercepts;
        char *client_key; /* client_key_base64(), or NULL: any local client; wiped on free */
        char **local_dst;   /* the local ranges, then the host's own addresses outside them */
        char **local_names; /* the add-host names, which may reach them */
        char **ports;       /* the gate's port set (gate_squid_ports), 80 and 443 first if
                             * an entry has the default pair; NULL: no domain entry */
        char **listed;      /* every domain entry's host, sorted, none below another */
        squid_port_group *groups;
        size_t n_groups;
        squid_rule *rules;
        size_t n_rules;
        char **rule_hosts; /* the hosts of the rules, none below another, or NULL */
        /* Interception only: the names whose TLS the gate opens, as dstdomain values and as
         * the hello's server name, and the hosts whose tunnels it leaves unread. */
        char **bump, **bump_sni, **plain;
} squid_model;

static void squid_model_done(squid_model *m)
{
        free_secret(m->client_key);
        strv_free(m->local_dst);
        strv_free(m->local_names);
        strv_free(m->ports);
        strv_free(m->listed);
        for (size_t i = 0; i < m->n_groups; i++)
                strv_free(m->groups[i].names);
        free(m->groups);
        for (size_t i = 0; i < m->n_rules; i++)
                free(m->rules[i].paths);
        free(m->rules);
        strv_free(m->rule_hosts);
        strv_free(m->bump);
        strv_free(m->bump_sni);
        strv_free(m->plain);
        *m = (squid_model) {};
}

/* The local ranges, then the host's own addresses, each written canonically: no text reaches
 * squid.conf unchecked. One inside a range is left out, as is a repeat: squid would warn about
 * both. */
static int model_local(squid_model *m, aisb_error **err)
{
        const squid_options *o = m->o;
        for (size_t i = 0; i < ELEMENTSOF(gate_local_ranges); i++)
                if (strv_push(&m->local_dst, gate_local_ranges[i].text) < 0)
                        return error_oom(err);
        for (size_t i = 0; o->host_addresses && o->host_addresses[i]; i++) {
                uint8_t addr[16];
                int family;
                char canonical[INET6_ADDRSTRLEN];
                if (!address_parse_ip(o->host_addresses[i], &family, addr)) /* squid_options_check refused it */
                        return aisb_error_set(err, -EINVAL, "host address: not an IPv4 or IPv6 address");
                (void) inet_ntop(family, addr, canonical, sizeof canonical);
                bool seen = gate_local_range(family, addr) != NULL;
                for (size_t j = ELEMENTSOF(gate_local_ranges); m->local_dst[j] && !seen; j++)
                        seen = streq(m->local_dst[j], canonical);
                if (!seen && strv_push(&m->local_dst, canonical) < 0)
                        return error_oom(err);
        }
        for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL;
                int r = allowlist_parse_add_host(o->add_hosts[i], &name, &ip, err);
                if (r < 0)
                        return r;
                if (strv_push(&m->local_names, name) < 0)
                        return error_oom(err);
        }
        return 0;
}

/* The port set, the listed names, and the names of the entries without rules grouped by port:
 * the default pair first, then each explicit port ascending. */
static int model_ports(squid_model *m, const allowlist *l)
{
        _cleanup_free_ unsigned *ports = NULL;
        size_t n_ports;
        int r = gate_squid_ports(l, &ports, &n_ports);
        if (r < 0)
                return r;
        if (n_ports == 0)
                return 0;
        bool have_default = false;
        for (size_t i = 0; i < l->n && !have_default; i++)
                have_default = l->entries[i].kind == ALLOW_DOMAIN && l->entries[i].port == 0;
        if (have_default && (strv_push(&m->ports, "80") < 0 || strv_push(&m->ports, "443") < 0))
                return -ENOMEM;
        for (size_t i = 0; i < n_ports; i++) {
                char text[8];
                snprintf(text, sizeof text, "%u", ports[i]);
                if (!(have_default && (ports[i] == 80 || ports[i] == 443)) && strv_push(&m->ports, text) < 0)
                        return -ENOMEM;
        }
        r = outermost_hosts(l, HOSTS_ALL, HOSTS_ANY_PORT, &m->listed);
        if (r < 0)
                return r;
        strv_sort(m->listed);

        m->groups = calloc(n_ports + 1, sizeof *m->groups);
        if (!m->groups)
                return -ENOMEM;
        for (size_t g = 0; g < n_ports + 1; g++) {
                if (g == 0 && !have_default)
                        continue;
                unsigned port = g == 0 ? 0 : ports[g - 1];
                _cleanup_strv_free_ char **names = NULL;
                r = port_group(l, port, &names);
                if (r < 0)
                        return r;
                if (!names)
                        continue; /* only entries with rules use this port, or none (80 and 443 of the pair) */
                m->groups[m->n_groups++] = (squid_port_group) { .port = port, .names = steal_pointer(&names) };
        }
        return 0;
}

/* The entries with rules, and their hosts altogether (a request there that no rule allows is
 * told so). */
static int model_rules(squid_model *m, const allowlist *l)
{
        m->rules = calloc(l->n + 1, sizeof *m->rules);
        if (!m->rules)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (!host_wanted(e, HOSTS_WITH_RULES, HOSTS_ANY_PORT))
                        continue;
                squid_rule *rule = &m->rules[m->n_rules++];
                *rule = (squid_rule) { .entry = e, .index = i };
                _cleanup_free_ char *copy = strdup(e->rules);
                if (!copy)
                        return -ENOMEM;
                _cleanup_(buffer_free) buffer paths = {};
                char *save = NULL;
                for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
                        if (w[0] == '/' && path_regex(&paths, w) < 0)
                                return -ENOMEM;
                if (paths.data && !(rule->paths = buffer_steal(&paths)))
                        return -ENOMEM;
        }
        return outermost_hosts(l, HOSTS_WITH_RULES, HOSTS_ANY_PORT, &m->rule_hosts);
}

/* TLS is opened only where a rule or a secret needs the request itself; every other host
 * stays a tunnel the gate cannot read. */
static int model_interception(squid_model *m, const allowlist *l)
{
        const squid_options *o = m->o;
        for (size_t i = 0; m->rule_hosts && m->rule_hosts[i]; i++) {
                _cleanup_free_ char *below = NULL;
                if (asprintf(&below, ".%s", m->rule_hosts[i]) < 0 || strv_push(&m->bump, below) < 0)
                        return -ENOMEM;
        }
        /* A secret's host that a rule's host covers is in already (squid refuses a name twice
         * in one list). */
        for (size_t i = 0; i < o->n_secrets; i++)
                for (size_t k = 0; o->secrets[i].hosts[k]; k++) {
                        const char *host = o->secrets[i].hosts[k];
                        bool covered = false;
                        for (size_t j = 0; m->rule_hosts && m->rule_hosts[j]; j++)
                                covered |= allowlist_domain_covers(m->rule_hosts[j], host);
                        for (size_t j = 0; m->bump && m->bump[j]; j++)
                                covered |= streq(m->bump[j], host);
                        if (!covered && strv_push(&m->bump, host) < 0)
                                return -ENOMEM;
                }
        for (size_t i = 0; m->bump && m->bump[i]; i++) {
                _cleanup_free_ char *re = NULL;
                if (server_name_regex(m->bump[i], &re) < 0 || strv_push(&m->bump_sni, re) < 0)
                        return -ENOMEM;
        }
        /* Which tunnels stay unread: those whose CONNECT names no host of a rule or a secret
         * and whose TLS hello names a host of an entry without rules. Anything else is opened
         * (after a peek, so that the certificate made for the client mimics the server's,
         * identifiers and all): a hello naming a host with rules through a CONNECT to another
         * name the same front end serves, a hello naming no listed host, a CONNECT to a host
         * of a rule or a secret. */
        return outermost_hosts(l, HOSTS_WITHOUT_RULES, HOSTS_ANY_PORT, &m->plain);
}

static int squid_model_build(const allowlist *l, const squid_options *o, squid_model *ret, aisb_error **err)
{
        _cleanup_(squid_model_done) squid_model m = {
                .o = o,
                .access_log = o->access_log ? o->access_log : "/var/log/squid/access.log",
                .cache_log = o->cache_log ? o->cache_log : "/var/log/squid/cache.log",
                .intercepts = gate_squid_intercepts(l, o->n_secrets),
        };
        int r = squid_options_check(l, o, m.access_log, m.cache_log, err);
        if (r < 0)
                return r;
        if (o->client_key) {
                r = client_key_base64(o->client_key, &m.client_key);
                if (r < 0)
                        return r == -ENOMEM ? error_oom(err)
                                            : aisb_error_set(err, r, "the gate's client key cannot be encoded");
        }
        r = model_local(&m, err);
        if (r < 0)
                return r;
        if (model_ports(&m, l) < 0 || model_rules(&m, l) < 0 || (m.intercepts && model_interception(&m, l) < 0))
                return error_oom(err);
        *ret = m;
        m = (squid_model) {};
        return 0;
}

/* The listening port (and for interception its CA and certificate helper), and squid's own
 * settings. */
static void emit_service(squid_text *t, const squid_model *m)
{
        const squid_options *o = m->o;
        emit(t, "# The aisb egress gate: generated from the allowlist, do not edit.\n"
                "# Only the listed names (and the names below them) on their ports pass;\n"
                "# everything else, IP literals included, is refused.\n");
        if (!m->intercepts)
                emit(t, "http_port %s%u\n", o->cluster ? "" : "127.0.0.1:", o->port);
        else
                /* The port's CA, and the helper that makes each intercepted host's certificate
                 * from it. Upstream certificates are checked against the gate image's trusted
                 * CAs (the system's and --ca-cert's): an error refuses the request. */
                emit(t,
                     "http_port %s%u ssl-bump tls-cert=%s tls-key=%s generate-host-certificates=on "
                     "dynamic_cert_mem_cache_size=4MB\n"
                     "sslcrtd_program /usr/lib/squid/security_file_certgen -s %s -M 4MB\n"
                     /* Past its queue, a certificate request fails that handshake: squid's
                      * default is to exit after 3 minutes of it, which a sandbox naming a new
                      * server in each TLS hello could bring about, letting the port go. */
                     "sslcrtd_children 3 startup=1 idle=1 queue-size=1024 on-persistent-overload=ERR\n"
                     "host_verify_strict on\n",
                     o->cluster ? "" : "127.0.0.1:", o->port, o->bump_cert, o->bump_key, o->bump_db);
        emit(t, "visible_hostname aisb-gate\n"
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
                emit(t, "hosts_file %s\n", o->hosts_file);
        /* squid runs as user proxy and cannot open /dev/stdout: logs go to files. */
        emit(t,
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
             GATE_SQUID_LOGFORMAT, m->cache_log);
}

/* Who the clients are (and with a key, which requests carry it), and the access log. */
static void emit_clients(squid_text *t, const squid_model *m)
{
        const squid_options *o = m->o;
        /* -n everywhere: without it squid looks up the PTR record of an IP literal and
         * matches that name, and whoever owns the address chooses its PTR record. */
        emit(t, "%s", o->cluster ? "acl aisb_clients src all\n" : "acl aisb_clients src 127.0.0.0/8 ::1\n");
        emit(t, "acl aisb_connect method CONNECT\n"
                "acl aisb_schemes proto HTTP HTTPS\n"
                "acl aisb_ip_literal dstdom_regex -n -i ^[0-9.]+$ (^|\\.)(0x[0-9a-f]*|[0-9]+)$ ^\\[ :\n");
        /* The key a per-run gate asks of its clients: the exact Proxy-Authorization header.
         * A client connection is marked once a request on it had it: what squid checks later
         * on that connection without the header (the requests inside a TLS connection it
         * opened, the CONNECT it re-checks after reading the TLS server name) came from the
         * same client. Forwarded nowhere. */
        if (m->client_key)
                emit(t, "acl aisb_key req_header Proxy-Authorization ^Basic[[:blank:]]+%s$\n"
                        "acl aisb_keyed note aisb_keyed yes\n"
                        "acl aisb_mark_keyed annotate_client aisb_keyed=yes\n"
                        "acl aisb_trusted any-of aisb_keyed aisb_key\n"
                        "request_header_access Proxy-Authorization deny all\n",
                     m->client_key);
        /* A gate with a key logs only what its clients sent: another local user's refused
         * requests are not the run's, for its summary or for aisb allow to propose. */
        emit(t, "access_log stdio:%s logformat=aisb%s\n", m->access_log, o->client_key ? " aisb_trusted" : "");
}

/* Where requests may go: never the local destinations (but for the add-host names), only the
 * gate's ports and listed names, and each name without rules on its own ports. */
static void emit_destinations(squid_text *t, const squid_model *m)
{
        emit_acl(t, "aisb_local_dst", "dst", "", m->local_dst);
        emit_acl(t, "aisb_local_names", "dstdomain -n", "", m->local_names);
        emit_acl(t, "aisb_ports", "port", "", m->ports);
        emit_acl(t, "aisb_listed", "dstdomain -n", ".", m->listed);
        /* One allow rule a port set, pairing names with their ports: a listed name on another
         * port, over CONNECT or plain HTTP, matches no allow line. */
        for (size_t g = 0; g < m->n_groups; g++) {
                const squid_port_group *group = &m->groups[g];
                char dst[32];
                if (group->port)
                        snprintf(dst, sizeof dst, "aisb_dst_%u", group->port);
                else
                        snprintf(dst, sizeof dst, "aisb_dst_web");
                emit_acl(t, dst, "dstdomain -n", ".", group->names);
                if (group->port)
                        emit(t, "acl aisb_port_%u port %u\n", group->port, group->port);
                else
                        emit(t, "acl aisb_port_web port 80 443\n");
        }
}

/* An entry with rules: a CONNECT to its host is let in to be intercepted, and each request
 * inside must match its methods and paths; a plain-HTTP request the same. */
static void emit_rules(squid_text *t, const squid_model *m)
{
        for (size_t k = 0; k < m->n_rules; k++) {
                const squid_rule *rule = &m->rules[k];
                const allow_entry *e = rule->entry;
                size_t i = rule->index;
                emit(t, "acl aisb_rule%zu_dst dstdomain -n .%s\n", i, e->host);
                if (e->port)
                        emit(t, "acl aisb_rule%zu_port port %u\n", i, e->port);
                else
                        emit(t, "acl aisb_rule%zu_port port 80 443\n", i);
                if (e->methods) {
                        emit(t, "acl aisb_rule%zu_method method", i);
                        for (unsigned bit = 1; bit <= ALLOW_METHOD_DELETE; bit <<= 1)
                                if (e->methods & bit)
                                        emit(t, " %s", allowlist_method_name(bit));
                        emit(t, "\n");
                }
                if (rule->paths)
                        emit(t, "acl aisb_rule%zu_path urlpath_regex%s\n", i, rule->paths);
        }
        if (!m->rule_hosts)
                return;
        emit_acl(t, "aisb_rule_hosts", "dstdomain -n", ".", m->rule_hosts);
        /* squid matches a path (with its query) decoded once; a server that resolves dot
         * segments (also with dots or blanks after them, which Windows drops), reads \ as /,
         * decodes twice or %u-encoded, or maps overlong or wide forms (any byte not printable
         * ASCII) would serve what no prefix names (allowlist_path_odd). */
        emit(t, "acl aisb_path_odd urlpath_regex -i "
                "/\\.\\.?[.[:space:]]*(/|\\?|;|#|$) \\\\ %%(00|2e|2f|5c|u) [^[:print:]]\n");
        /* Headers many frameworks read as the method, or the path, instead of the request
         * line's. */
        static const char *const overrides[] = { "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
                                                 "X-Original-Method", "X-Original-URL", "X-Rewrite-URL",
                                                 "X-Forwarded-Prefix", "X-Envoy-Original-Path" };
        for (size_t i = 0; i < ELEMENTSOF(overrides); i++)
                emit(t, "request_header_access %s deny aisb_rule_hosts\n", overrides[i]);
        /* A body on a method that carries none is a second request to a server that ignores
         * its length (a request outside the rules). */
        emit(t, "acl aisb_bodiless method GET HEAD OPTIONS\n"
                "acl aisb_body_length req_header Content-Length [1-9]\n"
                "acl aisb_body_chunked req_header Transfer-Encoding .\n");
}

/* Secrets: over HTTPS to their hosts only, the header is the gate's, never the client's
 * (denied, then added: replaced, not appended). */
static void emit_secrets(squid_text *t, const squid_model *m)
{
        const squid_options *o = m->o;
        if (o->n_secrets)
                emit(t, "acl aisb_https proto HTTPS\n");
        for (size_t i = 0; i < o->n_secrets; i++) {
                const gate_secret *g = &o->secrets[i];
                char acl[32];
                snprintf(acl, sizeof acl, "aisb_secret%zu", i);
                emit_acl(t, acl, "dstdomain -n", "", g->hosts);
                emit(t, "request_header_access %s deny %s\n", g->header, acl);
                emit(t, "request_header_add %s \"%s%s%s\" %s aisb_https\n", g->header, g->scheme ? g->scheme : "",
                     g->scheme ? " " : "", g->value, acl);
        }
}

/* Which TLS connections the gate opens, and what a request inside one may name. */
static void emit_interception(squid_text *t, const squid_model *m)
{
        if (!m->intercepts)
                return;
        emit_acl(t, "aisb_bump", "dstdomain -n", "", m->bump);
        /* The same names as the client's hello may spell them: a hello naming one through a
         * CONNECT to another name is ended, for the front end behind it would choose its site
         * by that name. */
        emit_acl(t, "aisb_bump_sni", "ssl::server_name_regex --client-requested -i", "", m->bump_sni);
        emit(t, "acl aisb_step1 at_step SslBump1\n"
                "ssl_bump peek aisb_step1\n"
                "ssl_bump terminate !aisb_bump aisb_bump_sni\n");
        if (m->plain) {
                emit_acl(t, "aisb_plain_sni", "ssl::server_name --client-requested", ".", m->plain);
                emit(t, "ssl_bump splice !aisb_bump aisb_plain_sni\n");
        }
        /* A connection it opens is marked with where it goes: the CONNECT's name and port,
         * which squid resolves and connects to, and whose certificate it checks against the
         * hello's name or that one. Inside, squid takes each request's URL from what the
         * client wrote (an absolute-form target, else Host) and sends it down that same server
         * connection: the tunnel helper refuses every request whose URL names another
         * destination, another scheme, a TLS hello's name that is not the destination's, or a
         * CONNECT (an unread tunnel inside). Marked at the decision to open it, so the CONNECT
         * itself, and the one squid makes again to splice a tunnel, are not in it. */
        emit(t, "acl aisb_mark_tunnel annotate_client aisb_tunnel=\"%%>rd:%%>rP\"\n"
                "ssl_bump bump all aisb_mark_tunnel\n"
                "acl aisb_tunneled note aisb_tunnel\n"
                "external_acl_type aisb_tunnel ttl=0 negative_ttl=0 cache=0 "
                "children-max=1 children-startup=1 concurrency=32 queue-size=4096 "
                "%%{aisb_tunnel}note %%>rm %%>rs %%>rd %%>rP %%ssl::>sni " GATE_TUNNEL_HELPER_AWK " %s\n"
                "acl aisb_astray external aisb_tunnel\n",
             m->o->tunnel_helper);
        /* What is not TLS inside a CONNECT (Node sends plain HTTP through one) goes on unread,
         * as through a gate that opens nothing, except to a host with rules, whose every
         * request the gate must read: there squid closes the connection (it has no page to
         * send on it). */
        emit(t, "on_unsupported_protocol tunnel %s\n", m->rule_hosts ? "!aisb_rule_hosts" : "all");
}

static void emit_held_helper(squid_text *t, const squid_model *m)
{
        if (m->o->held_helper)
                emit(t, "external_acl_type aisb_held ttl=0 negative_ttl=0 cache=0 "
                        "children-max=1 children-startup=1 concurrency=32 queue-size=4096 "
                        "%%>a /bin/sh %s\n"
                        "acl aisb_held external aisb_held\n",
                     m->o->held_helper);
        /* One helper process: its answers come back on the one FIFO the run writes, by
         * channel. Nothing cached: the run decides every time (from what it was told). */
        if (m->o->ask_helper)
                emit(t, "external_acl_type aisb_ask ttl=0 negative_ttl=0 cache=0 "
                        "children-max=1 children-startup=1 concurrency=%d queue-size=%d "
                        "%%>rm %%>rd %%>rP %%>rp /bin/sh %s\n"
                        "acl aisb_ask external aisb_ask\n"
                        "acl aisb_asked note aisb_ask allow\n"
                        "acl aisb_probe dstdomain -n " GATE_PROBE_HOST "\n",
                     GATE_ASK_CONCURRENCY, GATE_ASK_CONCURRENCY, m->o->ask_helper);
}

/* The allow lines of the entries with rules, after the refusals that only their hosts get. */
static void emit_rule_allows(squid_text *t, const squid_model *m)
{
        if (m->n_rules)
                emit(t, "http_access deny aisb_rule_hosts aisb_path_odd\n"
                        "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_length\n"
                        "http_access deny aisb_rule_hosts aisb_bodiless aisb_body_chunked\n");
        for (size_t k = 0; k < m->n_rules; k++) {
                const squid_rule *rule = &m->rules[k];
                size_t i = rule->index;
                emit(t, "http_access allow aisb_connect aisb_rule%zu_dst aisb_rule%zu_port\n", i, i);
                emit(t, "http_access allow !aisb_connect aisb_rule%zu_dst aisb_rule%zu_port", i, i);
                if (rule->entry->methods)
                        emit(t, " aisb_rule%zu_method", i);
                if (rule->paths)
                        emit(t, " aisb_rule%zu_path", i);
                emit(t, "\n");
        }
        if (m->rule_hosts)
                emit(t, "http_access deny aisb_rule_hosts\n");
}

/* The access rules, in the order squid checks them: the first that matches decides. */
static void emit_access(squid_text *t, const squid_model *m)
{
        const squid_options *o = m->o;
        emit(t, "\n"
                "http_access deny manager\n"
                "http_access deny !aisb_clients\n"
                "%s"
                "http_access deny aisb_ip_literal\n"
                "http_access deny !aisb_connect !aisb_schemes\n",
             o->client_key ? "http_access deny !aisb_keyed !aisb_key\n"
                             "http_access deny aisb_key aisb_mark_keyed !all\n"
                           : "");
        /* After the key: a client without it never reaches the helper, whose queue it could
         * otherwise fill. */
        if (o->held_helper)
                emit(t, "http_access deny aisb_held\n");
        /* aisb's own probe of the gate is never a question. */
        if (o->ask_helper)
                emit(t, "http_access deny aisb_probe\n");
        if (m->intercepts)
                emit(t, "http_access deny aisb_tunneled aisb_astray\n");
        /* TRACE echoes the request, headers and all: the secret's, at a host that gets one. */
        if (m->rule_hosts || o->n_secrets)
                emit(t, "acl aisb_trace method TRACE\n");
        if (m->rule_hosts)
                emit(t, "http_access deny aisb_rule_hosts aisb_trace\n");
        for (size_t i = 0; i < o->n_secrets; i++)
                emit(t, "http_access deny aisb_secret%zu aisb_trace\n", i);
        /* A name no entry lists is refused here, by name, or asked about and refused unless
         * the user allows it: the address check below makes squid resolve the name, and a
         * lookup of a name the agent chose is a message out through the resolvers (a DNS
         * tunnel). The answer names its port: an allowed name skips the listed ports. */
        if (m->ports && o->ask_helper)
                emit(t, "http_access deny !aisb_listed !aisb_ask\n"
                        "http_access deny !aisb_asked !aisb_ports\n");
        else if (m->ports)
                emit(t, "http_access deny !aisb_ports\n"
                        "http_access deny !aisb_listed\n");
        else if (o->ask_helper)
                emit(t, "http_access deny !aisb_ask\n");
        else
                emit(t, "http_access deny all\n");
        /* The gate shares the host's network: a listed name that resolves to loopback,
         * link-local (cloud metadata), a private or shared range (the host's neighbours, its
         * containers, a VPN) or one of the host's own addresses would reach the host or its
         * network rather than the internet. Only --gate-add-host names, mapped on purpose, may. */
        emit(t, "http_access deny aisb_local_dst%s\n", m->local_names ? " !aisb_local_names" : "");
        if (o->ask_helper)
                emit(t, "http_access allow aisb_asked\n");
        for (size_t g = 0; g < m->n_groups; g++) {
                if (m->groups[g].port)
                        emit(t, "http_access allow aisb_dst_%u aisb_port_%u\n", m->groups[g].port, m->groups[g].port);
                else
                        emit(t, "http_access allow aisb_dst_web aisb_port_web\n");
        }
        emit_rule_allows(t, m);
        emit(t, "http_access deny all\n"
                "http_reply_access allow all\n");
}

/* What a refused client reads: which name, which rule, how the user allows it (the gate
 * image's ERR_AISB_* pages). */
static void emit_deny_info(squid_text *t, const squid_model *m)
{
        const squid_options *o = m->o;
        emit(t, "deny_info ERR_AISB_LOCAL aisb_local_dst\n"
                "deny_info ERR_AISB_LITERAL aisb_ip_literal\n"
                "deny_info ERR_AISB_DENIED all\n");
        if (o->held_helper)
                emit(t, "deny_info " GATE_HELD_PAGE " aisb_held\n");
        if (m->intercepts)
                emit(t, "deny_info ERR_AISB_ASTRAY aisb_astray\n");
        if (m->rule_hosts || o->n_secrets)
                emit(t, "deny_info ERR_AISB_TRACE aisb_trace\n");
        if (m->ports)
                emit(t, "deny_info ERR_AISB_DENIED aisb_listed\n");
        if (o->ask_helper)
                emit(t, "deny_info ERR_AISB_DENIED aisb_ask\n");
        if (m->rule_hosts)
                emit(t, "deny_info ERR_AISB_RULE aisb_rule_hosts\n"
                        "deny_info ERR_AISB_RULE aisb_path_odd\n"
                        "deny_info ERR_AISB_RULE aisb_body_length\n"
                        "deny_info ERR_AISB_RULE aisb_body_chunked\n");
}

int gate_squid_config(const allowlist *l, const squid_options *o, char **ret_text, aisb_error **err)
{
        _cleanup_(squid_model_done) squid_model m = {};
        int r = squid_model_build(l, o, &m, err);
        if (r < 0)
                return r;
        _cleanup_(squid_text_done) squid_text t = {};
        emit_service(&t, &m);
        emit_clients(&t, &m);
        emit_destinations(&t, &m);
        emit_rules(&t, &m);
        emit_secrets(&t, &m);
        emit_interception(&t, &m);
        emit_held_helper(&t, &m);
        emit_access(&t, &m);
        emit_deny_info(&t, &m);
        if (t.error < 0)
                return error_oom(err);
        *ret_text = buffer_steal(&t.b);
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
                if (r >= 0)
                        r = buffer_printf(&b, "%s %s\n", ip, name);
        }
        if (r < 0)
                return error_oom(err);
        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : error_oom(err);
}
