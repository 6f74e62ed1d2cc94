/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-VIP source ranges (map "sources", an LPM trie): a VIP that serves only
 * some client prefixes (allow) or refuses some (deny). The longest prefix
 * holding the client decides; a client in none is refused when the VIP has
 * any allow prefix, else served. Checked right after the VIP lookup, before
 * the flow table and the ring, so a refused client costs no flow entry and
 * no ring search. A VIP whose value lacks LB_VIP_SOURCES pays one flag test.
 * Shared by the data path and the benchmark.
 */
#ifndef RINGLB_LB_SOURCES_H
#define RINGLB_LB_SOURCES_H

#include <bpf/bpf_helpers.h>

#include "lb_contract.h"
#include "lb_pin.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, LB_SOURCES_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lb_source_key);
	__type(value, struct lb_source);
	LB_PINNED;
} sources SEC(".maps");

/*
 * The verdict of the VIP's set on client address @a0 @a1 (its two 64-bit
 * words, as on the wire): @meta packs the VIP's id (bits 32-47), its set's
 * parity (16-23), its flags (8-15) and the family (0-7). A global function,
 * verified once on its own: inlined, its paths (no match, allow, deny) each
 * carried a state of their own through the rest of the program and doubled
 * the verifier's work (169,016 instructions processed to 310,635).
 */
__noinline __u32 lb_source_judge(__u64 meta, __u64 a0, __u64 a1)
{
	struct lb_source_key k;
	struct lb_source *s;
	__u8 flags = (__u8)(meta >> 8);

	k.prefixlen = LB_SOURCE_KEY_FIXED_BITS + ((__u8)meta == LB_FAMILY_IPV4 ? 32 : 128);
	k.vip_id = (__u16)(meta >> 32);
	k.parity = (__u8)(meta >> 16);
	k.pad = 0;
	__builtin_memcpy(k.addr, &a0, 8);
	__builtin_memcpy(k.addr + 8, &a1, 8);
	s = bpf_map_lookup_elem(&sources, &k);
	if (!s)
		return flags & LB_VIP_ALLOW_LIST ? LB_REASON_DROP_SOURCE_NOT_ALLOWED : 0;
	return s->verdict == LB_SOURCE_ALLOW ? 0 : LB_REASON_DROP_SOURCE_DENIED;
}

/**
 * lb_source_refused() - is @src (the flow's client) refused by @vip's source
 * ranges? Return: 0 (served), or the reason it is dropped under.
 * An ICMP error's flow key names the client of the quoted packet, so an
 * error about a refused client's flow is refused too (no backend holds it).
 */
static __always_inline __u32 lb_source_refused(const struct lb_vip *vip, const __u8 *src,
					       __u8 family)
{
	__u64 a[2];

	if (!(vip->flags & LB_VIP_SOURCES))
		return 0;
	__builtin_memcpy(a, src, sizeof(a));
	return lb_source_judge((__u64)(__u16)vip->vip_id << 32 | (__u64)vip->source_parity << 16 |
				       (__u64)vip->flags << 8 | family,
			       a[0], a[1]);
}

#endif /* RINGLB_LB_SOURCES_H */
