/* SPDX-License-Identifier: MIT */
/*
 * The allowlist text parser (allowlist_parse_text): a project's .aisb-allow file is written
 * by whoever wrote the repository. Beyond not crashing: every message is one printable line;
 * every accepted entry, written back in its canonical form, parses to itself; an address
 * entry's entrypoint argument is accepted by the entrypoint's own parser; a domain entry
 * allows its own host (its rules, methods and paths, written back the same); and the squid
 * configuration and gate hash can be made from whatever was accepted.
 */
#include <sys/socket.h>

#include "internal.h"
#include "fuzz.h"
#include "netpolicy.h"

static bool printable_line(const char *s)
{
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f)
                        return false;
        return true;
}

static char *entry_text(const allow_entry *e)
{
        char *text = NULL;
        if (e->kind == ALLOW_ADDRESS) {
                FUZZ_CHECK(allowlist_entrypoint_arg(e, &text) == 0);
                return text;
        }
        FUZZ_CHECK(allowlist_entry_text(e, &text) == 0);
        return text;
}

static void check_entry(const allow_entry *e)
{
        FUZZ_CHECK(e->host && e->origin);
        FUZZ_CHECK(e->port <= 65535);
        if (e->kind == ALLOW_DOMAIN)
                FUZZ_CHECK(e->family == 0 && e->prefix == 0 && allowlist_request_allows(
                        &(allowlist) { .entries = (allow_entry *) e, .n = 1 }, e->host,
                        e->port ? e->port : 443, NULL, NULL));
        else
                FUZZ_CHECK((e->family == AF_INET && e->prefix <= 32) ||
                           (e->family == AF_INET6 && e->prefix <= 128));

        char *text = entry_text(e);
        allowlist again = {};
        aisb_error *err = NULL;
        int r = allowlist_add(&again, text, "again", &err);
        if (r < 0)
                fprintf(stderr, "'%s' does not re-parse: %s\n", text, aisb_error_message(err));
        FUZZ_CHECK(r == 0 && again.n == 1);
        const allow_entry *a = &again.entries[0];
        FUZZ_CHECK(a->kind == e->kind && a->family == e->family && a->prefix == e->prefix &&
                   a->port == e->port && streq(a->host, e->host) && a->methods == e->methods &&
                   streq(a->rules ? a->rules : "", e->rules ? e->rules : ""));
        /* A CONNECT to the entry's own host passes; rules are decided inside. */
        if (e->kind == ALLOW_DOMAIN)
                FUZZ_CHECK(allowlist_request_allows(&(allowlist) { .entries = (allow_entry *) e, .n = 1 }, e->host,
                                                    e->port ? e->port : 443, NULL, NULL));
        allowlist_done(&again);

        if (e->kind == ALLOW_ADDRESS) {
                struct allow_dest d;
                char why[256];
                FUZZ_CHECK(netpolicy_parse_allow(text, &d, why, sizeof why) == 0);
                FUZZ_CHECK(d.family == e->family && d.prefix == e->prefix && d.port == e->port &&
                           memcmp(d.addr, e->addr, sizeof d.addr) == 0);
        }
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        allowlist l = {};
        aisb_error *err = NULL;
        /* The text need not be NUL-terminated: give the parser exactly size bytes. */
        char *text = malloc(size ? size : 1);
        if (!text)
                abort();
        memcpy(text, data, size);
        int r = allowlist_parse_text(&l, text, size, "fuzz", 0, &err);
        free(text);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -E2BIG);
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)) &&
                           printable_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        } else {
                FUZZ_CHECK(!err);
        }

        /* Whatever was accepted before a failure is usable too. */
        FUZZ_CHECK(l.n <= ALLOWLIST_MAX_ENTRIES &&
                   allowlist_count_addresses(&l) <= ALLOWLIST_MAX_ADDRESSES);
        for (size_t i = 0; i < l.n; i++) {
                check_entry(&l.entries[i]);
                for (size_t j = 0; j < i; j++) /* duplicates are merged (rules differing add up) */
                        FUZZ_CHECK(!(l.entries[i].kind == l.entries[j].kind &&
                                     l.entries[i].port == l.entries[j].port &&
                                     streq(l.entries[i].host, l.entries[j].host) &&
                                     streq(l.entries[i].rules ? l.entries[i].rules : "",
                                           l.entries[j].rules ? l.entries[j].rules : "")));
        }

        /* The host-range check refuses exactly the entries that reach the host or catch all,
         * in one printable line, and the flag lets everything through. */
        bool reaches_host = false;
        for (size_t i = 0; i < l.n; i++) {
                const allow_entry *e = &l.entries[i];
                if (e->kind == ALLOW_ADDRESS)
                        reaches_host |= e->prefix < (e->family == AF_INET ? 8u : 16u) ||
                                        allowlist_host_range(e->family, e->addr, e->prefix);
        }
        r = allowlist_check_host_ranges(&l, false, &err);
        FUZZ_CHECK(r == (reaches_host ? -EINVAL : 0));
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)) &&
                           printable_line(aisb_error_message(err)));
                aisb_error_free(err);
                err = NULL;
        }
        FUZZ_CHECK(allowlist_check_host_ranges(&l, true, NULL) == 0);

        char *hash = NULL;
        FUZZ_CHECK(gate_squid_hash(&l, NULL, &hash) == 0 && strlen(hash) == 16);
        free(hash);
        char *conf = NULL;
        /* Rules need interception, so a CA. */
        squid_options o = { .port = 3128, .bump_cert = "/g/ca.pem", .bump_key = "/g/ca.key", .bump_db = "/tmp/db",
                            .tunnel_helper = "/g/tunnel.awk" };
        FUZZ_CHECK(gate_squid_config(&l, &o, &conf, &err) == 0);
        free(conf);

        allowlist_done(&l);
        return 0;
}
