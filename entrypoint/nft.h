/* SPDX-License-Identifier: MIT */
/* Table inet aisb over netlink with libnftnl: build the whole ruleset as one batch, send it
 * in one sendmsg, collect one ack per message and map a failure back to the message that
 * caused it by sequence number; then dump the table back and compare it with what was meant.
 *
 * Both directions go through struct nft_state, a plain description of a table (chains with
 * hook, priority, policy; each rule as the text of its expressions, as `nft --debug=netlink`
 * prints them). The expected state, the state decoded from a batch that was never sent and
 * the state read back from the kernel are all built the same way, so the tests can check the
 * batch without loading it and the entrypoint can check the kernel without trusting acks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netpolicy.h"

struct nft_chain_state {
        char name[64];
        char type[16];
        bool base;        /* has a hook */
        uint32_t hook;
        int32_t prio;
        bool has_policy;
        uint32_t policy;
        char **rules;     /* each: expressions, one "[ ... ]" per line */
        size_t n_rules;
};

struct nft_state {
        bool table;
        uint32_t table_flags;
        struct nft_chain_state *chains;
        size_t n_chains;
};

void nft_state_free(struct nft_state *s);

/* What the kernel should hold for this ruleset. */
int nft_state_expected(const struct netruleset *rs, struct nft_state *ret);

/* Compare; on a difference returns -EPROTO and says where in err. */
int nft_state_compare(const struct nft_state *want, const struct nft_state *have, char *err, size_t errlen);

/* One batch, built but not sent. Message i has sequence number first_seq + i; what[i] names it. */
struct nft_batch {
        char *data;
        size_t size;
        uint32_t first_seq;
        char (*what)[256];
        size_t n_messages;  /* including begin and end */
};

int nft_batch_build(const struct netruleset *rs, uint32_t first_seq, struct nft_batch *ret);
void nft_batch_free(struct nft_batch *b);

/* Decode a built batch back (for the tests): checks begin/end framing and flags, returns the
 * state the batch would create. */
int nft_batch_decode(const struct nft_batch *b, struct nft_state *ret, char *err, size_t errlen);

/* Send the batch for rs and wait for every ack. -errno, with the failing message named in err. */
int nft_install(const struct netruleset *rs, char *err, size_t errlen);

/* Dump table inet aisb from the kernel into ret. */
int nft_read(struct nft_state *ret, char *err, size_t errlen);

/* nft_read + nft_state_compare against nft_state_expected. */
int nft_verify(const struct netruleset *rs, char *err, size_t errlen);
