/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The flow's position on the ring, as every XDP program of ringlb computes
 * it: SipHash-1-3 of the 40-byte flow key under the deployment's secret
 * (ring/siphash.h). The controller's lb_flow_hash() runs the same function
 * on the same key, so a flow lands on the same point in both.
 */
#ifndef RINGLB_LB_FLOW_HASH_H
#define RINGLB_LB_FLOW_HASH_H

#include "lb_contract.h"
#include "siphash.h"

_Static_assert(sizeof(struct lb_flow_key) == SIPHASH_FLOW_WORDS * sizeof(__u64),
	       "the flow key is exactly the words siphash13_flow() reads");

/*
 * The key's words are copied, not read through a cast: its fields are stored
 * as bytes and 16-bit ports, and under C's aliasing rules (clang's -O2 uses
 * them) a read of them as 64-bit words need not see those stores.
 */
static __always_inline __u64 flow_hash_with(const struct lb_flow_key *key, __u64 k0, __u64 k1)
{
	uint64_t words[SIPHASH_FLOW_WORDS];

	__builtin_memcpy(words, key, sizeof(words));
	return siphash13_flow(words, k0, k1);
}

#endif /* RINGLB_LB_FLOW_HASH_H */
