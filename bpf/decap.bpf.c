// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb's backend-side program: removes the balancer's encapsulation, so a
 * backend needs no tunnel device and no kernel module.
 *
 * It accepts IPIP in all four combinations (IPv4 or IPv6 inside IPv4 or
 * IPv6, protocols 4 and 41) and GUE on the configured UDP port, with a GUE
 * version 0 header (any private data, a GLB hop list included) or without
 * one (variant 1: the IP header right after UDP). Only from an outer source
 * inside a configured prefix (map "decap_from") and to an outer destination
 * that is one of the host's addresses (map "decap_local", filled by the
 * controller). It removes the outer headers, keeps the Ethernet header (and
 * VLAN tag) with the inner EtherType, and passes the inner packet to the
 * host's stack, where the VIP sits on loopback. Anything else passes
 * untouched. Every frame is counted under one reason (map "decap_stats").
 */
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "lb_contract.h"
#include "lb_pin.h"

char LICENSE[] SEC("license") = "GPL";

#define DECAP_PREFIXES_MAX 256
#define DECAP_LOCAL_MAX 1024

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DECAP_PREFIXES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lb_decap_from_key);
	__type(value, __u8);
	LB_PINNED;
} decap_from SEC(".maps");

/* The host's addresses, by family and address (the key's prefixlen unused: 0). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DECAP_LOCAL_MAX);
	__type(key, struct lb_decap_from_key);
	__type(value, __u8);
	LB_PINNED;
} decap_local SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_decap_config);
	LB_PINNED;
} decap_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_DECAP_REASON_COUNT);
	__type(key, __u32);
	__type(value, struct lb_counters);
	LB_PINNED;
} decap_stats SEC(".maps");

struct vlan_tag {
	__be16 tci;
	__be16 encapsulated_proto;
};

static __always_inline int counted(__u32 reason, __u64 bytes)
{
	struct lb_counters *c = bpf_map_lookup_elem(&decap_stats, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return XDP_PASS;
}

/* Is @addr (of @family) inside a --from prefix, and is @dst one of the host's addresses? */
static __always_inline __u32 trusted(__u8 family, const void *src, const void *dst, __u32 len)
{
	struct lb_decap_from_key key = { .family = family };

	key.prefixlen = 32 + len * 8;
	__builtin_memcpy(key.addr, src, len == 4 ? 4 : 16);
	if (!bpf_map_lookup_elem(&decap_from, &key))
		return LB_DECAP_PASS_NOT_FROM;
	__builtin_memset(key.addr, 0, sizeof(key.addr));
	key.prefixlen = 0;
	__builtin_memcpy(key.addr, dst, len == 4 ? 4 : 16);
	if (!bpf_map_lookup_elem(&decap_local, &key))
		return LB_DECAP_PASS_NOT_LOCAL;
	return 0;
}

/* The IPv4 header's checksum holds (its options included). */
static __always_inline int ipv4_checksum_ok(const struct iphdr *ip, __u32 ihl, void *end)
{
	const __u16 *w = (const void *)ip;
	__u32 sum = 0, i;

	for (i = 0; i < 30; i++) {
		if (i * 2 >= ihl || (void *)(w + i + 1) > end)
			break;
		sum += w[i];
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

SEC("xdp")
int ringlb_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u64 bytes = (__u64)(end - data);
	__u8 head[sizeof(struct ethhdr) + sizeof(struct vlan_tag)];
	struct ethhdr *eth = data;
	struct lb_decap_config *cfg;
	__u32 zero = 0, l3, outer, reason, kind, ip_len;
	__u8 proto, inner_version;
	__be16 ethertype;

	if ((void *)(eth + 1) > end)
		return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
	l3 = sizeof(*eth);
	ethertype = eth->h_proto;
	if (ethertype == bpf_htons(ETH_P_8021Q) || ethertype == bpf_htons(ETH_P_8021AD)) {
		struct vlan_tag *vlan = (void *)(eth + 1);

		if ((void *)(vlan + 1) > end)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		ethertype = vlan->encapsulated_proto;
		l3 += sizeof(*vlan);
	}
	if (ethertype == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + l3;
		__u32 ihl;

		if ((void *)(ip + 1) > end)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		ihl = (__u32)ip->ihl * 4;
		if (ip->version != 4 || ihl < sizeof(*ip) || bpf_ntohs(ip->tot_len) < ihl ||
		    data + l3 + bpf_ntohs(ip->tot_len) > end || (ip->frag_off & bpf_htons(0x3fff)))
			return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
		proto = ip->protocol;
		if (proto != IPPROTO_IPIP && proto != IPPROTO_IPV6 && proto != IPPROTO_UDP)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		if (!ipv4_checksum_ok(ip, ihl, end))
			return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
		reason = trusted(LB_FAMILY_IPV4, &ip->saddr, &ip->daddr, 4);
		if (reason)
			return counted(reason, bytes);
		outer = ihl;
		ip_len = bpf_ntohs(ip->tot_len);
	} else if (ethertype == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		if (ip6->version != 6 ||
		    data + l3 + sizeof(*ip6) + bpf_ntohs(ip6->payload_len) > end)
			return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
		proto = ip6->nexthdr;
		if (proto != IPPROTO_IPIP && proto != IPPROTO_IPV6 && proto != IPPROTO_UDP)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		reason = trusted(LB_FAMILY_IPV6, &ip6->saddr, &ip6->daddr, 16);
		if (reason)
			return counted(reason, bytes);
		outer = sizeof(*ip6);
		ip_len = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
	} else {
		return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
	}

	kind = LB_DECAP_DECAP_IPIP;
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = data + l3 + outer;
		__u8 *gue = (void *)(udp + 1);

		cfg = bpf_map_lookup_elem(&decap_config, &zero);
		/* The UDP header, and a length that the IP packet holds. */
		if ((void *)(udp + 1) > end || bpf_ntohs(udp->len) < sizeof(*udp) ||
		    outer + bpf_ntohs(udp->len) > ip_len)
			return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
		if (!cfg || !cfg->gue_port || udp->dest != cfg->gue_port)
			return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
		if ((void *)(gue + 1) > end)
			return counted(LB_DECAP_PASS_BAD_GUE, bytes);
		kind = LB_DECAP_DECAP_GUE;
		outer += sizeof(*udp);
		if (gue[0] >> 6 == 0) {
			/* GUE version 0: a data message (C clear), then hlen words of options. */
			if ((void *)(gue + 4) > end || (gue[0] & 0x20))
				return counted(LB_DECAP_PASS_BAD_GUE, bytes);
			proto = gue[1];
			outer += 4 + (gue[0] & 0x1f) * 4;
		} else if (gue[0] >> 6 == 1) {
			/* Variant 1: the IP header itself, 0100 or 0110. */
			proto = gue[0] >> 4 == 4 ? IPPROTO_IPIP : gue[0] >> 4 == 6 ? IPPROTO_IPV6 : 0;
		} else {
			return counted(LB_DECAP_PASS_BAD_GUE, bytes);
		}
	}
	/* The inner packet: the version its protocol promises, whole inside the frame. */
	inner_version = proto == IPPROTO_IPIP ? 4 : proto == IPPROTO_IPV6 ? 6 : 0;
	if (outer > 256)
		return counted(LB_DECAP_PASS_BAD_GUE, bytes);
	{
		__u8 *inner = data + l3 + outer;

		if ((void *)(inner + 1) > end || !inner_version || inner[0] >> 4 != inner_version)
			return counted(kind == LB_DECAP_DECAP_GUE ? LB_DECAP_PASS_BAD_GUE :
								      LB_DECAP_PASS_BAD_OUTER, bytes);
	}
	/* The Ethernet header (and tag) moves up to the inner packet, with its EtherType. */
	if (data + sizeof(head) > end)
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	__builtin_memcpy(head, data, sizeof(head));
	if (bpf_xdp_adjust_head(ctx, (int)outer))
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + sizeof(head) > end)
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	__builtin_memcpy(data, head, sizeof(struct ethhdr));
	ethertype = bpf_htons(inner_version == 4 ? ETH_P_IP : ETH_P_IPV6);
	if (l3 > sizeof(struct ethhdr)) {
		__builtin_memcpy(data + 12, head + 12, 4);
		*(__be16 *)(data + 16) = ethertype;
	} else {
		*(__be16 *)(data + 12) = ethertype;
	}
	return counted(kind, bytes);
}
