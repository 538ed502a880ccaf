/* SPDX-License-Identifier: MIT */
/* Fuzz harness for the entrypoint's option parser, the part that reads argv the library
 * builds from user configuration. The input is split at NUL and newline bytes into argv
 * entries; whatever parses is also rendered as both texts, which must not crash either.
 * The same bytes are also read as /etc/resolv.conf (netpolicy_parse_resolv_conf, given the
 * exact size: no read past it), and the nameservers found go into the policy's ruleset.
 *
 * With libFuzzer (clang):
 *   clang -g -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ientrypoint \
 *         tests/entrypoint/fuzz-netpolicy.c entrypoint/netpolicy.c -o fuzz-netpolicy
 * Without (gcc, the 'fuzz' test suite): FUZZ_STANDALONE adds a main() that feeds seeds and
 * deterministic random mutations of them. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct netpolicy p;
        char *copy = malloc(size + 1);
        char *argv[66] = { (char *) "aisb-entrypoint" };
        int argc = 1;
        char err[256];

        if (!copy)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';
        for (char *s = copy; argc < 65;) {
                argv[argc++] = s;
                size_t n = strcspn(s, "\n");
                if (s + n >= copy + size || s[n] == '\0')
                        break;
                s[n] = '\0';
                s += n + 1;
        }
        argv[argc] = NULL;

        /* resolv.conf: at most three, each a whole address of its family, none of this host,
         * no repeats. */
        struct resolvers rv;
        netpolicy_parse_resolv_conf((const char *) data, size, &rv);
        if (rv.n + rv.n_local > NETPOLICY_MAX_RESOLVERS)
                abort();
        for (size_t i = 0; i < rv.n; i++) {
                const struct allow_dest *a = &rv.addr[i];
                if (!((a->family == 2 && a->prefix == 32) || (a->family == 10 && a->prefix == 128)) ||
                    a->port != 0 || (a->family == 2 && a->addr[0] == 127))
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (rv.addr[j].family == a->family && memcmp(rv.addr[j].addr, a->addr, 16) == 0)
                                abort();
        }

        int r = netpolicy_parse(argc, argv, &p, err, sizeof(err));
        if (r != 0 && r != -EINVAL)
                abort();
        if (r == 0) {
                FILE *f = fopen("/dev/null", "we");
                if (f) {
                        netpolicy_print_ruleset(&p, f);
                        netpolicy_print_plan(&p, f);
                        p.resolvers = rv;
                        p.resolvers_read = true;
                        netpolicy_print_ruleset(&p, f);
                        netpolicy_print_plan(&p, f);
                        fclose(f);
                }
                /* Every nameserver found costs two rules, and all of them fit. */
                static struct netruleset rs;
                netpolicy_ruleset(&p, &rs);
                size_t want = p.net == NET_FULL ? 0 : p.net == NET_NONE ? 1 : 2 + 2 * p.n_allow;
                if (p.net == NET_ALLOW) {
                        for (size_t i = 0; i < p.n_allow; i++)
                                want -= p.allow[i].port != 0;
                        if (p.allow_dns)
                                want += 2 * rv.n;
                }
                if (rs.n_chains && rs.chains[2].n_rules != want)
                        abort();
        } else if (strlen(err) == 0 || strchr(err, '\n')) {
                abort(); /* every refusal is one non-empty line */
        }

        struct allow_dest d;
        r = netpolicy_parse_allow(copy, &d, err, sizeof(err));
        if (r == 0 && (d.prefix > (d.family == 2 ? 32u : 128u) || (d.family != 2 && d.family != 10)))
                abort();
        free(copy);
        return 0;
}

#ifdef FUZZ_STANDALONE
static const char *const seeds[] = {
        "--uid\n1000\n--gid\n1000\n--net\nallow\n--allow\n10.0.2.2:3128\n--\ntrue",
        "--print-ruleset\n--net\nallow\n--allow\n[fd00::]/8\n--allow\n192.168.0.0/16\n--allow-dns",
        "--print-plan\n--keep-root\n--net=full",
        "--uid=1\n--gid=1\n--net=allow\n--allow=[fd00::1]:443\n--allow=10.1.2.3/32:5432\n--\nsh\n-c\nx",
        "10.0.2.2:3128", "[fd00::]/8:22", "fd00::1/64",
        "--keep-root\n--net\nallow\n--allow-dns\n--allow\n10.0.2.2:3128\n--\nx\nnameserver 10.0.2.3",
        "# podman\nnameserver 10.0.2.3\nnameserver 10.255.255.53\nnameserver fd00::3%tap0\n",
        "nameserver\t127.1 # x\n;nameserver 1.2.3.4\nnameserver fe80::1%\nnameserver 0x0a000203",
};

int main(int argc, char **argv)
{
        unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
        uint64_t state = 0x9e3779b97f4a7c15ULL;
        uint8_t buf[512];

        for (unsigned long i = 0; i < iterations; i++) {
                const char *seed = seeds[i % (sizeof(seeds) / sizeof(seeds[0]))];
                size_t n = strlen(seed);
                memcpy(buf, seed, n);
                /* A few byte flips, inserts and truncations per round (xorshift). */
                for (int k = 0; k < 1 + (int) (i % 6); k++) {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        size_t at = n ? state % n : 0;
                        switch ((state >> 32) % 4) {
                        case 0: buf[at] = (uint8_t) (state >> 40); break;
                        case 1: buf[at] = (uint8_t) "0123456789:/[].-\n="[(state >> 40) % 18]; break;
                        case 2: if (n < sizeof(buf)) { memmove(buf + at + 1, buf + at, n - at); buf[at] = '9'; n++; } break;
                        case 3: n = at; break;
                        }
                }
                LLVMFuzzerTestOneInput(buf, n);
        }
        printf("fuzz-netpolicy: %lu inputs, no crash\n", iterations);
        return 0;
}
#endif
