// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's health checks, sent the way clients' packets go: a TC program
 * on the loopback device's egress that takes the packets of the daemon's
 * probe sockets (marked LB_PROBE_MARK | backend id) and sends them to that
 * backend as the XDP program would send a client's: for an l2 VIP, the frame
 * to the backend's MAC out of the attached interface; for ipip and gue, the
 * packet inside the outer headers the XDP program writes, to the next hop the
 * kernel's FIB names. The probe socket connects to the VIP itself, so a check
 * passes only when the backend serves the VIP (it holds the address and
 * listens on the port), not merely when it is up.
 *
 * The daemon routes marked packets to lo (a policy rule, LB_PROBE_TABLE), so
 * they reach this program whatever the host's routes say about the VIP. Any
 * other packet on lo passes untouched. A marked packet this program cannot
 * send is dropped: the check fails, nothing leaves the wrong way.
 */
#include <linux/pkt_cls.h>

#include "lb_ip.h"

char LICENSE[] SEC("license") = "GPL";

/* The data path's maps, which the loader replaces with the pinned ones. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_config);
} config SEC(".maps");

/* Where l2 probes leave: the attached interface and its MAC (written by the loader). */
const volatile __u32 egress_ifindex = 0;
const volatile __u8 egress_mac[ETH_ALEN] = { 0 };

#define IP_DF_BE bpf_htons(0x4000)

/*
 * Outer headers, written whole from &eth: Ethernet, IPv4 or IPv6, then UDP
 * and GUE. The two bytes in front align the IP header.
 */
struct probe_outer {
	__u8 align[2];
	struct ethhdr eth;
	union {
		struct {
			struct iphdr ip;
			struct udphdr udp;
			struct lb_gue gue;
		} v4;
		struct {
			struct ipv6hdr ip6;
			struct udphdr udp;
			struct lb_gue gue;
		} v6;
	};
};

static __always_inline void gue_fill(struct udphdr *udp, struct lb_gue *gue, __u32 len,
				     __be16 port, __u8 inner)
{
	udp->source = bpf_htons(0xc000);
	udp->dest = port;
	udp->len = bpf_htons((__u16)(len + LB_GUE_LEN));
	udp->check = 0;
	gue->flags_hlen = 1;
	gue->proto = inner;
	gue->flags = 0;
	gue->private_type = 0;
	gue->next_hop = 0;
	gue->hop_count = 0;
}

SEC("tc")
int ringlb_probe(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	struct probe_outer o = {};
	const struct lb_backend *b;
	const struct lb_config *cfg;
	__u32 id, key = 0, len, overhead, flags;
	__u8 inner;
	int gue, rc;

	if ((skb->mark & LB_PROBE_MARK_MASK) != LB_PROBE_MARK)
		return TC_ACT_OK;
	id = skb->mark & LB_RING_ENTRY_BACKEND_MASK;
	b = bpf_map_lookup_elem(&backends, &id);
	if (!b || b->state == LB_BACKEND_UNUSED || b->state == LB_BACKEND_RETIRED)
		return TC_ACT_SHOT;
	if (skb->protocol != bpf_htons(ETH_P_IP) && skb->protocol != bpf_htons(ETH_P_IPV6))
		return TC_ACT_SHOT;

	if (b->forward == LB_FORWARD_L2) {
		if (!egress_ifindex)
			return TC_ACT_SHOT;
		__builtin_memcpy(o.eth.h_dest, b->mac, ETH_ALEN);
		/* Byte by byte: a memcpy() that casts volatile away is folded to the zero initializer. */
		for (int i = 0; i < ETH_ALEN; i++)
			o.eth.h_source[i] = egress_mac[i];
		if (bpf_skb_store_bytes(skb, 0, &o.eth, 2 * ETH_ALEN, 0))
			return TC_ACT_SHOT;
		return bpf_redirect(egress_ifindex, 0);
	}

	cfg = bpf_map_lookup_elem(&config, &key);
	if (!cfg || !egress_ifindex)
		return TC_ACT_SHOT;
	gue = b->forward == LB_FORWARD_GUE;
	inner = skb->protocol == bpf_htons(ETH_P_IP) ? IPPROTO_IPIP : IPPROTO_IPV6;
	len = skb->len - sizeof(struct ethhdr);
	/* The FIB as the data path asks it: from the attached interface to the backend. */
	fib.ifindex = egress_ifindex;
	if (b->family == LB_FAMILY_IPV4) {
		overhead = sizeof(struct iphdr) + (gue ? LB_GUE_LEN : 0);
		fib.family = AF_INET;
		fib.tot_len = (__u16)(len + overhead);
		__builtin_memcpy(&fib.ipv4_src, cfg->source4, 4);
		__builtin_memcpy(&fib.ipv4_dst, b->addr, 4);
		flags = BPF_F_ADJ_ROOM_ENCAP_L3_IPV4;
	} else {
		overhead = sizeof(struct ipv6hdr) + (gue ? LB_GUE_LEN : 0);
		fib.family = AF_INET6;
		fib.tot_len = (__u16)(len + overhead);
		__builtin_memcpy(fib.ipv6_src, cfg->source6, 16);
		__builtin_memcpy(fib.ipv6_dst, b->addr, 16);
		flags = BPF_F_ADJ_ROOM_ENCAP_L3_IPV6;
	}
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return TC_ACT_SHOT;
	if (gue)
		flags |= BPF_F_ADJ_ROOM_ENCAP_L4_UDP;
	if (bpf_skb_adjust_room(skb, (__s32)overhead, BPF_ADJ_ROOM_MAC, flags))
		return TC_ACT_SHOT;

	__builtin_memcpy(o.eth.h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(o.eth.h_source, fib.smac, ETH_ALEN);
	if (b->family == LB_FAMILY_IPV4) {
		struct iphdr *ip = &o.v4.ip;

		o.eth.h_proto = bpf_htons(ETH_P_IP);
		*(__u16 *)ip = bpf_htons(0x4500);
		ip->tot_len = bpf_htons((__u16)(len + overhead));
		ip->frag_off = IP_DF_BE;
		ip->ttl = LB_ENCAP_TTL;
		ip->protocol = gue ? IPPROTO_UDP : inner;
		__builtin_memcpy(&ip->saddr, cfg->source4, 4);
		__builtin_memcpy(&ip->daddr, b->addr, 4);
		ip->check = csum_finish(ipv4_header_sum(ip));
		if (gue)
			gue_fill(&o.v4.udp, &o.v4.gue, len, cfg->gue_port, inner);
		if (bpf_skb_store_bytes(skb, 0, &o.eth, sizeof(o.eth) + overhead, 0))
			return TC_ACT_SHOT;
	} else {
		struct ipv6hdr *ip6 = &o.v6.ip6;

		o.eth.h_proto = bpf_htons(ETH_P_IPV6);
		*(__be32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons((__u16)(len + overhead - sizeof(*ip6)));
		ip6->nexthdr = gue ? IPPROTO_UDP : inner;
		ip6->hop_limit = LB_ENCAP_TTL;
		__builtin_memcpy(&ip6->saddr, cfg->source6, 16);
		__builtin_memcpy(&ip6->daddr, b->addr, 16);
		if (gue)
			gue_fill(&o.v6.udp, &o.v6.gue, len, cfg->gue_port, inner);
		if (bpf_skb_store_bytes(skb, 0, &o.eth, sizeof(o.eth) + overhead, 0))
			return TC_ACT_SHOT;
	}
	return bpf_redirect(fib.ifindex, 0);
}
