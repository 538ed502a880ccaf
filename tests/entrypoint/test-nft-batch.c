/* SPDX-License-Identifier: MIT */
/* The netlink batch for several policies, built and decoded back without being sent, checked
 * message by message and rule by rule; and the comparison that verification relies on,
 * shown to notice each kind of difference.
 *
 * The golden rule texts are what `nft --debug=netlink` (nft 1.0.6) prints for the same rules
 * written in nft syntax, byte for byte, except the prefix rules: nft shortens a byte-aligned
 * prefix to a shorter load, we always load the whole address and mask it (same meaning). */
#include <check.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "nft.h"
#include "suites.h"
#include "../suite-table.h"

#define RULE_LO_OUT "[ meta load oif => reg 1 ]\n[ cmp eq reg 1 0x00000001 ]\n[ immediate reg 0 accept ]\n"
#define RULE_LO_IN "[ meta load iif => reg 1 ]\n[ cmp eq reg 1 0x00000001 ]\n[ immediate reg 0 accept ]\n"
#define RULE_CT                                                                                      \
        "[ ct load state => reg 1 ]\n[ bitwise reg 1 = ( reg 1 & 0x00000006 ) ^ 0x00000000 ]\n"       \
        "[ cmp neq reg 1 0x00000000 ]\n[ immediate reg 0 accept ]\n"
#define RULE_PROXY /* ip daddr 10.0.2.2 tcp dport 3128 accept */                                     \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x00000002 ]\n"                               \
        "[ payload load 4b @ network header + 16 => reg 1 ]\n[ cmp eq reg 1 0x0202000a ]\n"            \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 0x00000006 ]\n"                               \
        "[ payload load 2b @ transport header + 2 => reg 1 ]\n[ cmp eq reg 1 0x0000380c ]\n"           \
        "[ immediate reg 0 accept ]\n"
#define RULE_NET16(proto) /* ip daddr 192.168.0.0/16 meta l4proto tcp|udp accept */                  \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x00000002 ]\n"                               \
        "[ payload load 4b @ network header + 16 => reg 1 ]\n"                                        \
        "[ bitwise reg 1 = ( reg 1 & 0x0000ffff ) ^ 0x00000000 ]\n[ cmp eq reg 1 0x0000a8c0 ]\n"       \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 " proto " ]\n[ immediate reg 0 accept ]\n"
#define RULE_V6_443 /* ip6 daddr fd00::1 tcp dport 443 accept */                                     \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x0000000a ]\n"                               \
        "[ payload load 16b @ network header + 24 => reg 1 ]\n"                                       \
        "[ cmp eq reg 1 0x000000fd 0x00000000 0x00000000 0x01000000 ]\n"                              \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 0x00000006 ]\n"                               \
        "[ payload load 2b @ transport header + 2 => reg 1 ]\n[ cmp eq reg 1 0x0000bb01 ]\n"           \
        "[ immediate reg 0 accept ]\n"
#define RULE_V6_8(proto) /* ip6 daddr fd00::/8 meta l4proto tcp|udp accept */                        \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x0000000a ]\n"                               \
        "[ payload load 16b @ network header + 24 => reg 1 ]\n"                                       \
        "[ bitwise reg 1 = ( reg 1 & 0x000000ff 0x00000000 0x00000000 0x00000000 ) ^ "                \
        "0x00000000 0x00000000 0x00000000 0x00000000 ]\n"                                             \
        "[ cmp eq reg 1 0x000000fd 0x00000000 0x00000000 0x00000000 ]\n"                              \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 " proto " ]\n[ immediate reg 0 accept ]\n"
#define RULE_DNS(proto) /* ip daddr 10.0.2.3 udp|tcp dport 53 accept */                              \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x00000002 ]\n"                               \
        "[ payload load 4b @ network header + 16 => reg 1 ]\n[ cmp eq reg 1 0x0302000a ]\n"            \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 " proto " ]\n"                                \
        "[ payload load 2b @ transport header + 2 => reg 1 ]\n[ cmp eq reg 1 0x00003500 ]\n"           \
        "[ immediate reg 0 accept ]\n"
#define RULE_DNS6(proto) /* ip6 daddr fd00::3 udp|tcp dport 53 accept */                              \
        "[ meta load nfproto => reg 1 ]\n[ cmp eq reg 1 0x0000000a ]\n"                               \
        "[ payload load 16b @ network header + 24 => reg 1 ]\n"                                       \
        "[ cmp eq reg 1 0x000000fd 0x00000000 0x00000000 0x03000000 ]\n"                              \
        "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 " proto " ]\n"                                \
        "[ payload load 2b @ transport header + 2 => reg 1 ]\n[ cmp eq reg 1 0x00003500 ]\n"           \
        "[ immediate reg 0 accept ]\n"
#define TCP "0x00000006"
#define UDP "0x00000011"

struct decoded {
        struct netruleset rs;
        struct nft_batch batch;
        struct nft_state state;
};

static struct decoded *decode_with(const char *const *opts, const char *resolv_conf);

static struct decoded *decode(const char *const *opts)
{
        return decode_with(opts, NULL);
}

/* resolv_conf: what the entrypoint would have read from /etc/resolv.conf, or NULL. */
static struct decoded *decode_with(const char *const *opts, const char *resolv_conf)
{
        const char *argv[2 * NETPOLICY_MAX_ALLOW + 8] = { "aisb-entrypoint", "--print-ruleset" };
        int argc = 2;
        struct netpolicy p;
        char err[256] = "";
        struct decoded *d = calloc(1, sizeof(*d));

        for (; opts[argc - 2]; argc++)
                argv[argc] = opts[argc - 2];
        ck_assert_msg(netpolicy_parse(argc, (char *const *) argv, &p, err, sizeof(err)) == 0, "%s", err);
        if (resolv_conf) {
                netpolicy_parse_resolv_conf(resolv_conf, strlen(resolv_conf), &p.resolvers);
                p.resolvers_read = true;
        }
        netpolicy_ruleset(&p, &d->rs);
        ck_assert_int_eq(nft_batch_build(&d->rs, 1000, &d->batch), 0);
        ck_assert_msg(nft_batch_decode(&d->batch, &d->state, err, sizeof(err)) == 0, "decode: %s", err);
        return d;
}

static void decoded_free(struct decoded *d)
{
        nft_batch_free(&d->batch);
        nft_state_free(&d->state);
        free(d);
}

static const struct nft_chain_state *chain(const struct nft_state *s, const char *name)
{
        for (size_t i = 0; i < s->n_chains; i++)
                if (strcmp(s->chains[i].name, name) == 0)
                        return &s->chains[i];
        ck_abort_msg("no chain %s", name);
        return NULL;
}

static void check_base_chains(const struct nft_state *s)
{
        static const struct { const char *name; uint32_t hook; } want[] = {
                { "input", NF_INET_LOCAL_IN }, { "forward", NF_INET_FORWARD }, { "output", NF_INET_LOCAL_OUT },
        };
        ck_assert(s->table);
        ck_assert_uint_eq(s->table_flags, 0);
        ck_assert_uint_eq(s->n_chains, 3);
        for (size_t i = 0; i < 3; i++) {
                const struct nft_chain_state *c = chain(s, want[i].name);
                ck_assert_str_eq(c->type, "filter");
                ck_assert(c->base);
                ck_assert_uint_eq(c->hook, want[i].hook);
                ck_assert_int_eq(c->prio, 0);
                ck_assert(c->has_policy);
                ck_assert_uint_eq(c->policy, NF_DROP);
        }
        const struct nft_chain_state *in = chain(s, "input");
        ck_assert_uint_eq(in->n_rules, 2);
        ck_assert_str_eq(in->rules[0], RULE_LO_IN);
        ck_assert_str_eq(in->rules[1], RULE_CT);
        ck_assert_uint_eq(chain(s, "forward")->n_rules, 0);
}

static void check_against_expected(const struct decoded *d)
{
        struct nft_state want = {};
        char err[512] = "";
        ck_assert_int_eq(nft_state_expected(&d->rs, &want), 0);
        ck_assert_msg(nft_state_compare(&want, &d->state, err, sizeof(err)) == 0, "%s", err);
        nft_state_free(&want);
}

/* The base chains as always, and the output chain's rules exactly these. */
static void expect_output_rules(const struct decoded *d, const char *const *want, size_t n)
{
        check_base_chains(&d->state);
        const struct nft_chain_state *out = chain(&d->state, "output");
        ck_assert_uint_eq(out->n_rules, n);
        for (size_t i = 0; i < out->n_rules; i++)
                ck_assert_msg(strcmp(out->rules[i], want[i]) == 0, "output rule %zu:\n%s\nexpected:\n%s", i,
                              out->rules[i], want[i]);
}

START_TEST(policy_none)
{
        struct decoded *d = decode((const char *[]) { NULL });
        expect_output_rules(d, (const char *const[]) { RULE_LO_OUT }, 1);
        /* begin, table, 3 chains, 3 rules, end; named for error reports. */
        ck_assert_uint_eq(d->batch.n_messages, 9);
        ck_assert_str_eq(d->batch.what[0], "batch begin");
        ck_assert_str_eq(d->batch.what[1], "table inet aisb");
        ck_assert_str_eq(d->batch.what[2], "chain input");
        ck_assert_str_eq(d->batch.what[8], "batch end");
        check_against_expected(d);
        decoded_free(d);
}
END_TEST

START_TEST(policy_allow)
{
        struct decoded *d = decode((const char *[]) {
                "--net", "allow", "--allow", "10.0.2.2:3128", "--allow", "192.168.0.0/16",
                "--allow", "[fd00::1]:443", "--allow", "[fd00::]/8", NULL });
        static const char *const want[] = { RULE_LO_OUT, RULE_CT, RULE_PROXY, RULE_NET16(TCP), RULE_NET16(UDP),
                                            RULE_V6_443, RULE_V6_8(TCP), RULE_V6_8(UDP) };
        expect_output_rules(d, want, sizeof(want) / sizeof(want[0]));
        ck_assert_str_eq(d->batch.what[9], "chain output rule 3 (ip daddr 10.0.2.2 tcp dport 3128 accept)");
        check_against_expected(d);
        decoded_free(d);
}
END_TEST

/* DNS goes to the resolvers of resolv.conf and nowhere else: no "dport 53" without an
 * address, which would be a tunnel to any host listening on 53. */
START_TEST(policy_allow_dns_only)
{
        struct decoded *d = decode_with((const char *[]) { "--net", "allow", "--allow-dns", NULL },
                                        "# podman\nnameserver 10.0.2.3\nnameserver 127.0.0.53\n"
                                        "nameserver fd00::3%tap0\nnameserver 10.0.2.3\n");
        static const char *const want[] = { RULE_LO_OUT, RULE_CT, RULE_DNS(UDP), RULE_DNS(TCP),
                                            RULE_DNS6(UDP), RULE_DNS6(TCP) };
        expect_output_rules(d, want, sizeof(want) / sizeof(want[0]));
        ck_assert_str_eq(d->batch.what[9], "chain output rule 3 (ip daddr 10.0.2.3 udp dport 53 accept)");
        check_against_expected(d);
        decoded_free(d);

        /* Only a loopback resolver, no resolver, or resolv.conf not read yet: no DNS rule. */
        static const char *const none[] = { "nameserver 127.0.0.53\n", "search example\n", NULL };
        for (size_t i = 0; i < 3; i++) {
                d = decode_with((const char *[]) { "--net", "allow", "--allow-dns", NULL }, none[i]);
                ck_assert_uint_eq(chain(&d->state, "output")->n_rules, 2);
                decoded_free(d);
        }
}
END_TEST

START_TEST(policy_allow_nothing_listed)
{
        /* --net allow with no --allow: established replies only, no new connection anywhere. */
        struct decoded *d = decode((const char *[]) { "--net", "allow", NULL });
        const struct nft_chain_state *out = chain(&d->state, "output");
        ck_assert_uint_eq(out->n_rules, 2);
        ck_assert_str_eq(out->rules[1], RULE_CT);
        decoded_free(d);
}
END_TEST

START_TEST(policy_full)
{
        struct decoded *d = decode((const char *[]) { "--net", "full", NULL });
        ck_assert(!d->state.table);
        ck_assert_uint_eq(d->state.n_chains, 0);
        ck_assert_uint_eq(d->batch.n_messages, 2); /* nft_install is never called for it */
        decoded_free(d);
}
END_TEST

START_TEST(policy_max_allows)
{
        const char *opts[2 * NETPOLICY_MAX_ALLOW + 4] = { "--net", "allow" };
        char addrs[NETPOLICY_MAX_ALLOW][32];
        size_t n = 2;
        for (int i = 0; i < NETPOLICY_MAX_ALLOW; i++) {
                snprintf(addrs[i], sizeof(addrs[i]), "10.%d.0.0/16", i);
                opts[n++] = "--allow";
                opts[n++] = addrs[i];
        }
        opts[n] = NULL;
        struct decoded *d = decode(opts);
        ck_assert_uint_eq(chain(&d->state, "output")->n_rules, 2 + 2 * NETPOLICY_MAX_ALLOW);
        check_against_expected(d);
        decoded_free(d);
}
END_TEST

/* Verification must notice every way a table can differ from the plan. */
START_TEST(compare_notices)
{
        struct decoded *d = decode((const char *[]) { "--net", "allow", "--allow", "10.0.2.2:3128", NULL });
        struct nft_state want = {};
        char err[512];
        ck_assert_int_eq(nft_state_expected(&d->rs, &want), 0);

        struct nft_state *have = &d->state;
        struct nft_chain_state *out = NULL;
        for (size_t i = 0; i < have->n_chains; i++)
                if (strcmp(have->chains[i].name, "output") == 0)
                        out = &have->chains[i];

#define EXPECT_DIFF(what)                                                                        \
        do {                                                                                     \
                err[0] = '\0';                                                                   \
                ck_assert_int_eq(nft_state_compare(&want, have, err, sizeof(err)), -EPROTO);     \
                ck_assert_msg(strstr(err, what), "message '%s' lacks '%s'", err, what);          \
        } while (0)

        out->policy = NF_ACCEPT;
        EXPECT_DIFF("policy drop, found accept");
        out->policy = NF_DROP;

        out->hook = NF_INET_POST_ROUTING;
        EXPECT_DIFF("hook output");
        out->hook = NF_INET_LOCAL_OUT;

        out->prio = -300;
        EXPECT_DIFF("priority");
        out->prio = 0;

        have->table_flags = 1; /* NFT_TABLE_F_DORMANT */
        EXPECT_DIFF("dormant");
        have->table_flags = 0;

        char *saved = out->rules[2];
        out->rules[2] = (char *) RULE_DNS(TCP);
        EXPECT_DIFF("rule 3 differs");
        out->rules[2] = saved;

        out->n_rules--;
        EXPECT_DIFF("expected 3 rules, found 2");
        out->n_rules++;

        snprintf(out->name, sizeof(out->name), "output2");
        EXPECT_DIFF("unexpected chain output2");
        snprintf(out->name, sizeof(out->name), "output");

        have->table = false;
        EXPECT_DIFF("missing");
        have->table = true;

        ck_assert_int_eq(nft_state_compare(&want, have, err, sizeof(err)), 0);
        nft_state_free(&want);
        decoded_free(d);
}
END_TEST

Suite *nft_batch_suite(void)
{
        Suite *s = suite_create("nft-batch");
        suite_add_tests(s, "decode", NULL, NULL, policy_none, policy_allow, policy_allow_dns_only,
                        policy_allow_nothing_listed, policy_full, policy_max_allows);
        suite_add_tests(s, "compare", NULL, NULL, compare_notices);
        return s;
}
