/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-VIP source ranges (maps "source_heads" and "source_sets",
 * lb_contract.h): a VIP that serves only some client prefixes (allow) or
 * refuses some (deny). The longest prefix holding the client decides; a
 * client in none is refused when the VIP has any allow prefix, else served.
 * The controller flattens the prefixes into runs of one verdict (struct
 * lb_source_set), so a client mostly costs two reads of its set's head, and
 * now and then a short binary search, however many prefixes.
 * Checked right after the VIP lookup, before the flow table and the ring, so
 * a refused client costs no flow entry and no ring search. A VIP whose value
 * lacks LB_VIP_SOURCES pays one flag test. Shared by the data path and the
 * benchmark.
 */
#ifndef RINGLB_LB_SOURCES_H
#define RINGLB_LB_SOURCES_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "lb_contract.h"
#include "lb_pin.h"
#include "lb_source_search.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, LB_SOURCE_SET_SLOTS);
	__type(key, __u32);
	LB_PINNED;
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(max_entries, 1);
		__uint(key_size, sizeof(__u32));
		__uint(value_size, sizeof(struct lb_source_set));
	});
} source_sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_SOURCE_SET_SLOTS);
	__type(key, __u32);
	__type(value, struct lb_source_head);
	LB_PINNED;
} source_heads SEC(".maps");

/* The VIP's set @parity of VIP @vip_id, or NULL when its slot is empty. */
static __always_inline const struct lb_source_set *lb_source_set_of(__u32 vip_id, __u32 parity)
{
	__u32 slot = LB_SOURCE_SET_SLOT(vip_id, parity & 1), zero = 0;
	void *inner = bpf_map_lookup_elem(&source_sets, &slot);

	return inner ? bpf_map_lookup_elem(inner, &zero) : NULL;
}

/* The reason a verdict of source_verdict() drops under; 0 when served. */
static __always_inline __u32 lb_source_reason(__u32 verdict)
{
	switch (verdict) {
	case LB_SOURCE_SERVED:
		return 0;
	case LB_SOURCE_DENIED:
		return LB_REASON_DROP_SOURCE_DENIED;
	case LB_SOURCE_NOT_ALLOWED:
		return LB_REASON_DROP_SOURCE_NOT_ALLOWED;
	default:
		return LB_REASON_DROP_NO_SOURCES;
	}
}

/*
 * The verdict of the VIP's set on a client of a split bucket (address @a0
 * @a1, its two 64-bit words as on the wire): @meta packs the VIP's id (bits
 * 32-47) and its set's parity (bits 16-23). A global function, verified once
 * on its own: inlined, the search's outcomes each carried a state of their
 * own through the rest of the program and multiplied the verifier's work.
 */
__noinline __u32 lb_source_judge(__u64 meta, __u64 a0, __u64 a1)
{
	const struct lb_source_set *set =
		lb_source_set_of((__u32)(__u16)(meta >> 32), (__u32)(__u8)(meta >> 16));

	if (!set)
		return SOURCE_SEARCH_BAD;
	return source_verdict(set, bpf_be64_to_cpu(a0), bpf_be64_to_cpu(a1));
}

/**
 * lb_source_refused() - is @src (the flow's client) refused by @vip's source
 * ranges? Return: 0 (served), or the reason it is dropped under.
 * The head (map "source_heads", one array read) is read inline and the
 * search of a split bucket is a call: a call and its return cost about 10 ns
 * on hosts whose returns go through a return thunk (docs/traps.md), more
 * than the rest of the check.
 * An ICMP error's flow key names the client of the quoted packet, so an
 * error about a refused client's flow is refused too (no backend holds it).
 */
static __always_inline __u32 lb_source_refused(const struct lb_vip *vip, const __u8 *src)
{
	__u32 slot = LB_SOURCE_SET_SLOT(vip->vip_id, vip->source_parity & 1), j = 0, c;
	const struct lb_source_head *head;
	__u64 a[2];

	if (!(vip->flags & LB_VIP_SOURCES))
		return 0;
	__builtin_memcpy(a, src, sizeof(a));
	head = bpf_map_lookup_elem(&source_heads, &slot);
	c = head ? source_bucket(head, bpf_be64_to_cpu(a[0]), bpf_be64_to_cpu(a[1]), &j) :
		   SOURCE_SEARCH_BAD;
	if (c == LB_SOURCE_BUCKET_SPLIT)
		c = lb_source_judge((__u64)(__u16)vip->vip_id << 32 |
					    (__u64)vip->source_parity << 16,
				    a[0], a[1]);
	return lb_source_reason(c);
}

#endif /* RINGLB_LB_SOURCES_H */
