/* SPDX-License-Identifier: MIT */
/* Install and verify table inet aisb with libnftnl and libmnl (see nft.h). Modelled on
 * nftables' src/mnl.c: one batch, NLM_F_ACK on every message, errors matched to messages by
 * sequence number. The table is created with NLM_F_EXCL: the entrypoint runs first in a fresh
 * network namespace, so a table of that name already there is something we did not make,
 * and we refuse to build on it rather than guess what it holds. */
#include "nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_rule *, nftnl_rule_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_chain *, nftnl_chain_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_table *, nftnl_table_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct mnl_socket *, mnl_socket_close)

/* The kernel registers the loopback device first in every network namespace: ifindex 1. */
#define LOOPBACK_IFINDEX 1

#define SAY(...) ((void) (errlen > 0 ? snprintf(err, errlen, __VA_ARGS__) : 0))

void nft_state_free(struct nft_state *s)
{
        if (!s)
                return;
        for (size_t c = 0; c < s->n_chains; c++) {
                for (size_t i = 0; i < s->chains[c].n_rules; i++)
                        free(s->chains[c].rules[i]);
                free(s->chains[c].rules);
        }
        free(s->chains);
        memset(s, 0, sizeof(*s));
}

static struct nft_chain_state *state_chain(struct nft_state *s, const char *name, bool create)
{
        for (size_t c = 0; c < s->n_chains; c++)
                if (strcmp(s->chains[c].name, name) == 0)
                        return &s->chains[c];
        if (!create)
                return NULL;
        struct nft_chain_state *n = realloc(s->chains, (s->n_chains + 1) * sizeof(*n));
        if (!n)
                return NULL;
        s->chains = n;
        n = &s->chains[s->n_chains++];
        memset(n, 0, sizeof(*n));
        (void) snprintf(n->name, sizeof(n->name), "%s", name);
        return n;
}

static int state_add_chain(struct nft_state *s, const struct nftnl_chain *c)
{
        const char *name = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);
        struct nft_chain_state *cs;

        if (!name)
                return -EPROTO;
        /* Two chains of one name in one table cannot happen; seeing it means a broken dump. */
        if (state_chain(s, name, false))
                return -EPROTO;
        cs = state_chain(s, name, true);
        if (!cs)
                return -ENOMEM;
        if (nftnl_chain_is_set(c, NFTNL_CHAIN_TYPE))
                (void) snprintf(cs->type, sizeof(cs->type), "%s", nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE));
        cs->base = nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM);
        if (cs->base) {
                cs->hook = nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM);
                cs->prio = nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO);
        }
        cs->has_policy = nftnl_chain_is_set(c, NFTNL_CHAIN_POLICY);
        if (cs->has_policy)
                cs->policy = nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY);
        return 0;
}

/* A rule as text: its expressions, one "[ ... ]" per line, as nft --debug=netlink shows them.
 * Handles and positions are left out: they are the kernel's, not part of what we meant. */
static char *rule_describe(const struct nftnl_rule *r)
{
        struct nftnl_expr_iter *it = nftnl_expr_iter_create(r);
        struct nftnl_expr *e;
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (!it)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f) {
                nftnl_expr_iter_destroy(it);
                return NULL;
        }
        while ((e = nftnl_expr_iter_next(it))) {
                char line[512];
                size_t n;
                (void) nftnl_expr_snprintf(line, sizeof(line), e, NFTNL_OUTPUT_DEFAULT, 0);
                n = strlen(line);
                while (n > 0 && line[n - 1] == ' ')
                        line[--n] = '\0';
                fprintf(f, "[ %s %s ]\n", nftnl_expr_get_str(e, NFTNL_EXPR_NAME), line);
        }
        nftnl_expr_iter_destroy(it);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

static int state_add_rule(struct nft_state *s, const struct nftnl_rule *r)
{
        const char *chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
        struct nft_chain_state *cs;
        char **n;

        if (!chain)
                return -EPROTO;
        /* A rule can only live in a chain that exists; record it anyway so a compare names it. */
        cs = state_chain(s, chain, true);
        if (!cs)
                return -ENOMEM;
        n = realloc(cs->rules, (cs->n_rules + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cs->rules = n;
        cs->rules[cs->n_rules] = rule_describe(r);
        if (!cs->rules[cs->n_rules])
                return -ENOMEM;
        cs->n_rules++;
        return 0;
}

/* --- building the nftnl objects ------------------------------------------------------- */

static struct nftnl_expr *expr_meta(uint32_t key)
{
        struct nftnl_expr *e = nftnl_expr_alloc("meta");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
        nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
        return e;
}

static struct nftnl_expr *expr_cmp(uint32_t op, const void *data, uint32_t len)
{
        struct nftnl_expr *e = nftnl_expr_alloc("cmp");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
        nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
        nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
        return e;
}

static struct nftnl_expr *expr_payload(uint32_t base, uint32_t offset, uint32_t len)
{
        struct nftnl_expr *e = nftnl_expr_alloc("payload");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
        return e;
}

static struct nftnl_expr *expr_bitwise(const void *mask, const void *xor, uint32_t len)
{
        struct nftnl_expr *e = nftnl_expr_alloc("bitwise");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
        nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
        nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
        nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
        nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, xor, len);
        return e;
}

static struct nftnl_expr *expr_ct(uint32_t key)
{
        struct nftnl_expr *e = nftnl_expr_alloc("ct");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
        nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
        return e;
}

static struct nftnl_expr *expr_accept(void)
{
        struct nftnl_expr *e = nftnl_expr_alloc("immediate");
        if (!e)
                return NULL;
        nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
        nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, NF_ACCEPT);
        return e;
}

static int add(struct nftnl_rule *r, struct nftnl_expr *e)
{
        if (!e)
                return -ENOMEM;
        nftnl_rule_add_expr(r, e);
        return 0;
}

/* The expressions are the ones nft 1.0 emits for the same text (checked against
 * `nft --debug=netlink` in the unit tests), except that a prefix is always a full-width
 * load masked with bitwise, where nft shortens byte-aligned prefixes. */
static struct nftnl_rule *rule_build(const char *chain, const struct netrule *nr, bool is_input)
{
        _cleanup_(nftnl_rule_freep) struct nftnl_rule *r = nftnl_rule_alloc();
        int ret = 0;

        if (!r)
                return NULL;
        nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
        nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NETPOLICY_TABLE);
        nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);

        switch (nr->kind) {
        case RULE_LOOPBACK: {
                uint32_t lo = LOOPBACK_IFINDEX;
                ret |= add(r, expr_meta(is_input ? NFT_META_IIF : NFT_META_OIF));
                ret |= add(r, expr_cmp(NFT_CMP_EQ, &lo, sizeof(lo)));
                break;
        }
        case RULE_CT_ESTABLISHED: {
                uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
                uint32_t zero = 0;
                ret |= add(r, expr_ct(NFT_CT_STATE));
                ret |= add(r, expr_bitwise(&mask, &zero, sizeof(mask)));
                ret |= add(r, expr_cmp(NFT_CMP_NEQ, &zero, sizeof(zero)));
                break;
        }
        case RULE_DEST: {
                if (nr->family != 0) {
                        uint8_t nfproto = nr->family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;
                        uint32_t len = nr->family == AF_INET ? 4 : 16;
                        uint32_t offset = nr->family == AF_INET ? 16 : 24; /* daddr in iphdr, ipv6hdr */
                        ret |= add(r, expr_meta(NFT_META_NFPROTO));
                        ret |= add(r, expr_cmp(NFT_CMP_EQ, &nfproto, 1));
                        if (nr->prefix > 0) {
                                ret |= add(r, expr_payload(NFT_PAYLOAD_NETWORK_HEADER, offset, len));
                                if (nr->prefix < len * 8) {
                                        uint8_t mask[16] = {}, zero[16] = {};
                                        for (unsigned i = 0; i < nr->prefix; i++)
                                                mask[i / 8] |= (uint8_t) (0x80 >> (i % 8));
                                        ret |= add(r, expr_bitwise(mask, zero, len));
                                }
                                ret |= add(r, expr_cmp(NFT_CMP_EQ, nr->addr, len));
                        }
                }
                uint8_t proto = nr->l4proto;
                ret |= add(r, expr_meta(NFT_META_L4PROTO));
                ret |= add(r, expr_cmp(NFT_CMP_EQ, &proto, 1));
                if (nr->port) {
                        uint16_t port = htons(nr->port);
                        ret |= add(r, expr_payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2)); /* dport */
                        ret |= add(r, expr_cmp(NFT_CMP_EQ, &port, sizeof(port)));
                }
                break;
        }
        }
        ret |= add(r, expr_accept());
        if (ret < 0)
                return NULL;
        return steal_pointer(&r);
}

static struct nftnl_table *table_build(void)
{
        struct nftnl_table *t = nftnl_table_alloc();
        if (!t)
                return NULL;
        nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
        nftnl_table_set_str(t, NFTNL_TABLE_NAME, NETPOLICY_TABLE);
        nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, 0);
        return t;
}

static struct nftnl_chain *chain_build(const struct netchain *nc)
{
        struct nftnl_chain *c = nftnl_chain_alloc();
        if (!c)
                return NULL;
        nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NETPOLICY_TABLE);
        nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, nc->name);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
        nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, nc->hook);
        nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, 0);
        nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_DROP);
        return c;
}

int nft_state_expected(const struct netruleset *rs, struct nft_state *ret)
{
        struct nft_state s = {};
        int r;

        if (rs->n_chains == 0) {
                *ret = s;
                return 0;
        }
        s.table = true;
        for (size_t c = 0; c < rs->n_chains; c++) {
                const struct netchain *nc = &rs->chains[c];
                _cleanup_(nftnl_chain_freep) struct nftnl_chain *ch = chain_build(nc);
                if (!ch || (r = state_add_chain(&s, ch)) < 0)
                        goto fail;
                for (size_t i = 0; i < nc->n_rules; i++) {
                        _cleanup_(nftnl_rule_freep) struct nftnl_rule *rule =
                                rule_build(nc->name, &nc->rules[i], nc->is_input);
                        if (!rule || state_add_rule(&s, rule) < 0)
                                goto fail;
                }
        }
        *ret = s;
        return 0;
fail:
        nft_state_free(&s);
        return -ENOMEM;
}

static const char *hook_name(uint32_t hook)
{
        switch (hook) {
        case NF_INET_PRE_ROUTING: return "prerouting";
        case NF_INET_LOCAL_IN: return "input";
        case NF_INET_FORWARD: return "forward";
        case NF_INET_LOCAL_OUT: return "output";
        case NF_INET_POST_ROUTING: return "postrouting";
        default: return "?";
        }
}

int nft_state_compare(const struct nft_state *want, const struct nft_state *have, char *err, size_t errlen)
{
        if (want->table != have->table) {
                SAY("table inet %s is %s", NETPOLICY_TABLE, want->table ? "missing" : "present but should not be");
                return -EPROTO;
        }
        /* A dormant table holds its chains but hooks none of them: nothing would be filtered. */
        if (have->table_flags != want->table_flags) {
                SAY("table inet %s has flags 0x%x (dormant?), expected 0x%x", NETPOLICY_TABLE,
                    have->table_flags, want->table_flags);
                return -EPROTO;
        }
        for (size_t c = 0; c < have->n_chains; c++) {
                bool known = false;
                for (size_t w = 0; w < want->n_chains; w++)
                        known = known || strcmp(want->chains[w].name, have->chains[c].name) == 0;
                if (!known) {
                        SAY("unexpected chain %s in table inet %s", have->chains[c].name, NETPOLICY_TABLE);
                        return -EPROTO;
                }
        }
        for (size_t w = 0; w < want->n_chains; w++) {
                const struct nft_chain_state *wc = &want->chains[w], *hc = NULL;
                for (size_t c = 0; c < have->n_chains; c++)
                        if (strcmp(have->chains[c].name, wc->name) == 0)
                                hc = &have->chains[c];
                if (!hc) {
                        SAY("chain %s is missing", wc->name);
                        return -EPROTO;
                }
                if (strcmp(wc->type, hc->type) != 0 || wc->base != hc->base || wc->hook != hc->hook ||
                    wc->prio != hc->prio) {
                        SAY("chain %s: expected type %s hook %s priority %d, found type %s hook %s priority %d",
                            wc->name, wc->type, hook_name(wc->hook), wc->prio, hc->type,
                            hc->base ? hook_name(hc->hook) : "none", hc->prio);
                        return -EPROTO;
                }
                if (wc->has_policy != hc->has_policy || wc->policy != hc->policy) {
                        SAY("chain %s: expected policy %s, found %s", wc->name,
                            wc->policy == NF_DROP ? "drop" : "accept",
                            !hc->has_policy ? "none" : hc->policy == NF_DROP ? "drop" : "accept");
                        return -EPROTO;
                }
                if (wc->n_rules != hc->n_rules) {
                        SAY("chain %s: expected %zu rules, found %zu", wc->name, wc->n_rules, hc->n_rules);
                        return -EPROTO;
                }
                for (size_t i = 0; i < wc->n_rules; i++)
                        if (strcmp(wc->rules[i], hc->rules[i]) != 0) {
                                SAY("chain %s: rule %zu differs: expected %s, found %s", wc->name, i + 1,
                                    wc->rules[i], hc->rules[i]);
                                return -EPROTO;
                        }
        }
        return 0;
}

/* --- the batch ------------------------------------------------------------------------ */

void nft_batch_free(struct nft_batch *b)
{
        if (!b)
                return;
        free(b->data);
        free(b->what);
        memset(b, 0, sizeof(*b));
}

int nft_batch_build(const struct netruleset *rs, uint32_t first_seq, struct nft_batch *ret)
{
        size_t n_msgs = 3 + rs->n_chains;
        for (size_t c = 0; c < rs->n_chains; c++)
                n_msgs += rs->chains[c].n_rules;
        /* A rule here is well under 512 bytes of netlink; leave generous room and check. */
        size_t limit = 4096 + n_msgs * 1024;
        _cleanup_free_ char *buf = calloc(1, 2 * limit);
        _cleanup_free_ char (*what)[256] = calloc(n_msgs, sizeof(*what));
        struct mnl_nlmsg_batch *batch;
        uint32_t seq = first_seq;
        size_t i = 0;
        struct nlmsghdr *nlh;

        if (!buf || !what)
                return -ENOMEM;
        batch = mnl_nlmsg_batch_start(buf, limit);
        if (!batch)
                return -ENOMEM;

#define NEXT()                                                   \
        do {                                                     \
                seq++;                                           \
                i++;                                             \
                if (!mnl_nlmsg_batch_next(batch)) {              \
                        mnl_nlmsg_batch_stop(batch);             \
                        return -E2BIG;                           \
                }                                                \
        } while (0)

        nftnl_batch_begin(mnl_nlmsg_batch_current(batch), seq);
        (void) snprintf(what[i], sizeof(what[i]), "batch begin");
        NEXT();

        if (rs->n_chains > 0) {
                _cleanup_(nftnl_table_freep) struct nftnl_table *t = table_build();
                if (!t)
                        return -ENOMEM;
                nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch), NFT_MSG_NEWTABLE, NFPROTO_INET,
                                            NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq);
                nftnl_table_nlmsg_build_payload(nlh, t);
                (void) snprintf(what[i], sizeof(what[i]), "table inet %s", NETPOLICY_TABLE);
                NEXT();
        }
        for (size_t c = 0; c < rs->n_chains; c++) {
                _cleanup_(nftnl_chain_freep) struct nftnl_chain *ch = chain_build(&rs->chains[c]);
                if (!ch)
                        return -ENOMEM;
                nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch), NFT_MSG_NEWCHAIN, NFPROTO_INET,
                                            NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq);
                nftnl_chain_nlmsg_build_payload(nlh, ch);
                (void) snprintf(what[i], sizeof(what[i]), "chain %s", rs->chains[c].name);
                NEXT();
        }
        for (size_t c = 0; c < rs->n_chains; c++) {
                const struct netchain *nc = &rs->chains[c];
                for (size_t k = 0; k < nc->n_rules; k++) {
                        _cleanup_(nftnl_rule_freep) struct nftnl_rule *r =
                                rule_build(nc->name, &nc->rules[k], nc->is_input);
                        char text[128];
                        if (!r)
                                return -ENOMEM;
                        nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch), NFT_MSG_NEWRULE,
                                                    NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, seq);
                        nftnl_rule_nlmsg_build_payload(nlh, r);
                        (void) netrule_format(&nc->rules[k], nc->is_input, text, sizeof(text));
                        (void) snprintf(what[i], sizeof(what[i]), "chain %s rule %zu (%s)", nc->name, k + 1, text);
                        NEXT();
                }
        }
        nftnl_batch_end(mnl_nlmsg_batch_current(batch), seq);
        (void) snprintf(what[i], sizeof(what[i]), "batch end");
        NEXT();
#undef NEXT

        /* The batch lives at the start of buf: copy it out so the caller owns exactly it. */
        ret->size = mnl_nlmsg_batch_size(batch);
        mnl_nlmsg_batch_stop(batch);
        ret->data = steal_pointer(&buf);
        ret->what = steal_pointer(&what);
        ret->first_seq = first_seq;
        ret->n_messages = i;
        return 0;
}

int nft_batch_decode(const struct nft_batch *b, struct nft_state *ret, char *err, size_t errlen)
{
        struct nft_state s = {};
        const struct nlmsghdr *nlh = (const struct nlmsghdr *) b->data;
        int len = (int) b->size;
        size_t idx = 0;
        int r = -EPROTO;

        for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len), idx++) {
                uint16_t type = nlh->nlmsg_type;
                bool first = idx == 0, last = idx + 1 == b->n_messages;

                if (nlh->nlmsg_seq != b->first_seq + idx) {
                        SAY("message %zu has sequence %u, expected %zu", idx, nlh->nlmsg_seq,
                            (size_t) b->first_seq + idx);
                        goto fail;
                }
                if (first || last) {
                        const struct nfgenmsg *g = mnl_nlmsg_get_payload(nlh);
                        if (type != (first ? NFNL_MSG_BATCH_BEGIN : NFNL_MSG_BATCH_END) ||
                            ntohs(g->res_id) != NFNL_SUBSYS_NFTABLES) {
                                SAY("message %zu is not the batch %s", idx, first ? "begin" : "end");
                                goto fail;
                        }
                        continue;
                }
                if ((type >> 8) != NFNL_SUBSYS_NFTABLES || !(nlh->nlmsg_flags & NLM_F_ACK)) {
                        SAY("message %zu is not an nftables request with NLM_F_ACK", idx);
                        goto fail;
                }
                switch (type & 0xff) {
                case NFT_MSG_NEWTABLE: {
                        _cleanup_(nftnl_table_freep) struct nftnl_table *t = nftnl_table_alloc();
                        if (!t || nftnl_table_nlmsg_parse(nlh, t) < 0)
                                goto fail;
                        if (!(nlh->nlmsg_flags & NLM_F_EXCL) || s.table ||
                            nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY) != NFPROTO_INET ||
                            strcmp(nftnl_table_get_str(t, NFTNL_TABLE_NAME), NETPOLICY_TABLE) != 0) {
                                SAY("message %zu: not a single exclusive table inet %s", idx, NETPOLICY_TABLE);
                                goto fail;
                        }
                        s.table = true;
                        s.table_flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
                        break;
                }
                case NFT_MSG_NEWCHAIN: {
                        _cleanup_(nftnl_chain_freep) struct nftnl_chain *c = nftnl_chain_alloc();
                        if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0 ||
                            strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), NETPOLICY_TABLE) != 0 ||
                            state_add_chain(&s, c) < 0) {
                                SAY("message %zu: bad chain", idx);
                                goto fail;
                        }
                        break;
                }
                case NFT_MSG_NEWRULE: {
                        _cleanup_(nftnl_rule_freep) struct nftnl_rule *rl = nftnl_rule_alloc();
                        if (!rl || nftnl_rule_nlmsg_parse(nlh, rl) < 0 ||
                            strcmp(nftnl_rule_get_str(rl, NFTNL_RULE_TABLE), NETPOLICY_TABLE) != 0 ||
                            !state_chain(&s, nftnl_rule_get_str(rl, NFTNL_RULE_CHAIN), false) ||
                            state_add_rule(&s, rl) < 0) {
                                SAY("message %zu: bad rule (or rule before its chain)", idx);
                                goto fail;
                        }
                        break;
                }
                default:
                        SAY("message %zu: unexpected type 0x%x", idx, type);
                        goto fail;
                }
        }
        if (idx != b->n_messages || len != 0) {
                SAY("batch holds %zu messages, expected %zu", idx, b->n_messages);
                goto fail;
        }
        *ret = s;
        return 0;
fail:
        nft_state_free(&s);
        return r;
}

/* --- talking to the kernel ------------------------------------------------------------ */

static struct mnl_socket *nl_open(char *err, size_t errlen)
{
        struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
        if (!nl) {
                SAY("netlink socket: %s", strerror(errno));
                return NULL;
        }
        if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int e = errno;
                SAY("netlink bind: %s", strerror(e));
                mnl_socket_close(nl);
                errno = e;
                return NULL;
        }
        return nl;
}

int nft_install(const struct netruleset *rs, char *err, size_t errlen)
{
        _cleanup_(mnl_socket_closep) struct mnl_socket *nl = NULL;
        struct nft_batch b = {};
        /* Distinct per run, like nft's time-based seq, so a stale ack is never mistaken. */
        uint32_t first_seq = (uint32_t) time(NULL);
        size_t acks = 0, expected;
        int first_error = 0;
        size_t failed = 0;
        char buf[MNL_SOCKET_BUFFER_SIZE];
        int r;

        r = nft_batch_build(rs, first_seq, &b);
        if (r < 0) {
                SAY("building the batch: %s", strerror(-r));
                return r;
        }
        expected = b.n_messages - 2; /* begin and end carry no NLM_F_ACK */

        nl = nl_open(err, errlen);
        if (!nl) {
                r = -errno;
                nft_batch_free(&b);
                return r;
        }
        if (mnl_socket_sendto(nl, b.data, b.size) < 0) {
                r = -errno;
                SAY("sending the batch: %s", strerror(errno));
                nft_batch_free(&b);
                return r;
        }

        /* nfnetlink handles the whole batch inside sendmsg, so every answer is queued by now;
         * the poll timeout only guards against a kernel that behaves otherwise. */
        uint32_t portid = mnl_socket_get_portid(nl);
        while (acks < expected) {
                struct pollfd pfd = { .fd = mnl_socket_get_fd(nl), .events = POLLIN };
                r = poll(&pfd, 1, first_error ? 0 : 2000);
                if (r <= 0)
                        break;
                ssize_t n = recv(pfd.fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        r = -errno;
                        SAY("reading acks: %s", strerror(errno));
                        nft_batch_free(&b);
                        return r;
                }
                int len = (int) n;
                for (struct nlmsghdr *nlh = (struct nlmsghdr *) buf; mnl_nlmsg_ok(nlh, len);
                     nlh = mnl_nlmsg_next(nlh, &len)) {
                        if (nlh->nlmsg_pid != portid || nlh->nlmsg_type != NLMSG_ERROR)
                                continue;
                        const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
                        if (e->error == 0) {
                                acks++;
                                continue;
                        }
                        size_t idx = nlh->nlmsg_seq - first_seq;
                        if (!first_error || idx < failed) {
                                first_error = e->error;
                                failed = idx;
                        }
                }
        }
        if (first_error) {
                const char *what = failed < b.n_messages ? b.what[failed] : "unknown message";
                SAY("%s: %s%s", what, strerror(-first_error),
                    first_error == -EPERM ? " (is CAP_NET_ADMIN missing?)" :
                    first_error == -EEXIST ? " (the network namespace already holds it)" : "");
                nft_batch_free(&b);
                return first_error;
        }
        if (acks < expected) {
                SAY("only %zu of %zu acks arrived", acks, expected);
                nft_batch_free(&b);
                return -EPROTO;
        }
        nft_batch_free(&b);
        return 0;
}

struct dump_ctx {
        struct nft_state *s;
        int type;
        int error;
};

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
        struct dump_ctx *d = data;

        switch (d->type) {
        case NFT_MSG_GETTABLE: {
                _cleanup_(nftnl_table_freep) struct nftnl_table *t = nftnl_table_alloc();
                if (!t || nftnl_table_nlmsg_parse(nlh, t) < 0)
                        return d->error = -EPROTO, MNL_CB_ERROR;
                if (nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY) != NFPROTO_INET ||
                    strcmp(nftnl_table_get_str(t, NFTNL_TABLE_NAME), NETPOLICY_TABLE) != 0)
                        return MNL_CB_OK;
                d->s->table = true;
                d->s->table_flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
                return MNL_CB_OK;
        }
        case NFT_MSG_GETCHAIN: {
                _cleanup_(nftnl_chain_freep) struct nftnl_chain *c = nftnl_chain_alloc();
                if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0)
                        return d->error = -EPROTO, MNL_CB_ERROR;
                if (nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY) != NFPROTO_INET ||
                    strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), NETPOLICY_TABLE) != 0)
                        return MNL_CB_OK;
                if ((d->error = state_add_chain(d->s, c)) < 0)
                        return MNL_CB_ERROR;
                return MNL_CB_OK;
        }
        case NFT_MSG_GETRULE: {
                _cleanup_(nftnl_rule_freep) struct nftnl_rule *r = nftnl_rule_alloc();
                if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0)
                        return d->error = -EPROTO, MNL_CB_ERROR;
                if (nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) != NFPROTO_INET ||
                    strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), NETPOLICY_TABLE) != 0)
                        return MNL_CB_OK;
                if ((d->error = state_add_rule(d->s, r)) < 0)
                        return MNL_CB_ERROR;
                return MNL_CB_OK;
        }
        }
        return MNL_CB_ERROR;
}

static int dump(struct mnl_socket *nl, int type, uint32_t seq, struct nft_state *s, char *err, size_t errlen)
{
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct dump_ctx d = { .s = s, .type = type };
        uint32_t portid = mnl_socket_get_portid(nl);
        struct nlmsghdr *nlh;
        ssize_t n;
        int r;

        /* Dump the whole inet family and pick our table: older kernels ignore a table filter. */
        nlh = nftnl_nlmsg_build_hdr(buf, (uint16_t) type, NFPROTO_INET, NLM_F_DUMP, seq);
        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
                SAY("netlink dump request: %s", strerror(errno));
                return -errno;
        }
        for (;;) {
                n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
                if (n < 0) {
                        SAY("netlink dump: %s", strerror(errno));
                        return -errno;
                }
                r = mnl_cb_run(buf, (size_t) n, seq, portid, dump_cb, &d);
                if (r == MNL_CB_STOP)
                        return 0;
                if (r < 0) {
                        r = d.error ? d.error : -errno;
                        SAY("netlink dump: %s", strerror(-r));
                        return r;
                }
        }
}

int nft_read(struct nft_state *ret, char *err, size_t errlen)
{
        _cleanup_(mnl_socket_closep) struct mnl_socket *nl = nl_open(err, errlen);
        struct nft_state s = {};
        uint32_t seq = (uint32_t) time(NULL) + 100000;
        int r;

        if (!nl)
                return -errno;
        if ((r = dump(nl, NFT_MSG_GETTABLE, seq, &s, err, errlen)) < 0 ||
            (r = dump(nl, NFT_MSG_GETCHAIN, seq + 1, &s, err, errlen)) < 0 ||
            (r = dump(nl, NFT_MSG_GETRULE, seq + 2, &s, err, errlen)) < 0) {
                nft_state_free(&s);
                return r;
        }
        *ret = s;
        return 0;
}

int nft_verify(const struct netruleset *rs, char *err, size_t errlen)
{
        struct nft_state want = {}, have = {};
        int r;

        r = nft_state_expected(rs, &want);
        if (r < 0) {
                SAY("building the expected state: %s", strerror(-r));
                return r;
        }
        r = nft_read(&have, err, errlen);
        if (r >= 0)
                r = nft_state_compare(&want, &have, err, errlen);
        nft_state_free(&want);
        nft_state_free(&have);
        return r;
}
