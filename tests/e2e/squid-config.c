/* SPDX-License-Identifier: MIT */
/*
 * aisb-test-squid-config: prints the squid.conf the library generates for a gate, from
 * inputs the e2e tests choose (the gate itself takes them from the policy and from
 * getifaddrs()). It lets a test run the real gate image with a hosts file of its own, and so
 * check what squid does when a listed name resolves somewhere DNS here cannot point it.
 *
 *   aisb-test-squid-config --port N [--allow ENTRY]... [--add-host NAME:IP]...
 *       [--host-address IP]... [--hosts-file PATH] [--access-log PATH] [--cache-log PATH]
 *
 * Exit 0 with the configuration on stdout, 2 with the library's one-line refusal on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "allowlist.h"

int main(int argc, char **argv)
{
        allowlist l = {};
        _cleanup_strv_free_ char **add_hosts = NULL, **host_addresses = NULL;
        squid_options o = {};
        aisb_error *err = NULL;
        unsigned long long port = 0;
        int r = 0;

        for (int i = 1; i < argc && r >= 0; i += 2) {
                const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
                if (!value) {
                        fprintf(stderr, "aisb-test-squid-config: %s needs a value\n", key);
                        return 2;
                }
                if (streq(key, "--port"))
                        r = parse_uint(value, 65535, &port) < 0 ? aisb_error_set(&err, -EINVAL, "bad port") : 0;
                else if (streq(key, "--allow"))
                        r = allowlist_add(&l, value, "--allow", &err);
                else if (streq(key, "--add-host"))
                        r = strv_push(&add_hosts, value);
                else if (streq(key, "--host-address"))
                        r = strv_push(&host_addresses, value);
                else if (streq(key, "--hosts-file"))
                        o.hosts_file = value;
                else if (streq(key, "--access-log"))
                        o.access_log = value;
                else if (streq(key, "--cache-log"))
                        o.cache_log = value;
                else if (streq(key, "--ask-helper"))
                        o.ask_helper = value;
                else
                        r = aisb_error_set(&err, -EINVAL, "unknown option %s", key);
        }
        char *text = NULL;
        if (r >= 0) {
                o.port = (unsigned) port;
                o.add_hosts = (const char *const *) add_hosts;
                o.host_addresses = (const char *const *) host_addresses;
                r = gate_squid_config(&l, &o, &text, &err);
        }
        allowlist_done(&l);
        if (r < 0) {
                fprintf(stderr, "aisb-test-squid-config: %s\n", err ? aisb_error_message(err) : strerror(-r));
                aisb_error_free(err);
                return 2;
        }
        fputs(text, stdout);
        free(text);
        /* With --ask-helper, the helper's text goes where the caller writes it: after the
         * configuration, on stderr. */
        if (o.ask_helper)
                fputs(gate_squid_ask_helper, stderr);
        return fflush(stdout) == 0 ? 0 : 1;
}
