/* SPDX-License-Identifier: MIT */
/*
 * The gate's name (gate_squid_hash, gate-squid.h): a digest of what its squid.conf is made
 * of, so that runs with the same allowlist share one gate and a change of either never finds
 * an old one.
 */
#include "digest.h"
#include "gate-squid.h"

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
        for (size_t i = 0; i < n && r >= 0; i++)
                r = buffer_printf(&b, "%s\n", lines[i]);
        for (size_t i = 0; hosts && hosts[i] && r >= 0; i++)
                r = buffer_printf(&b, "add-host %s\n", hosts[i]);
        if (r < 0)
                return -ENOMEM;

        return sha256_hex(b.data, b.size, 16, ret_hex);
}
