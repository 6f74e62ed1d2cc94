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

/**
 * lb_source_refused() - is @src (the flow's client) refused by @vip's source
 * ranges? Return: 0 (served), or the reason it is dropped under.
 * An ICMP error's flow key names the client of the quoted packet, so an
 * error about a refused client's flow is refused too (no backend holds it).
 */
static __always_inline __u32 lb_source_refused(const struct lb_vip *vip, const __u8 *src,
					       __u8 family)
{
	struct lb_source_key k;
	struct lb_source *s;

	if (!(vip->flags & LB_VIP_SOURCES))
		return 0;
	k.prefixlen = LB_SOURCE_KEY_FIXED_BITS + (family == LB_FAMILY_IPV4 ? 32 : 128);
	k.vip_id = (__u16)vip->vip_id;
	k.parity = vip->source_parity;
	k.pad = 0;
	__builtin_memcpy(k.addr, src, sizeof(k.addr));
	s = bpf_map_lookup_elem(&sources, &k);
	if (!s)
		return vip->flags & LB_VIP_ALLOW_LIST ? LB_REASON_DROP_SOURCE_NOT_ALLOWED : 0;
	return s->verdict == LB_SOURCE_ALLOW ? 0 : LB_REASON_DROP_SOURCE_DENIED;
}

#endif /* RINGLB_LB_SOURCES_H */
