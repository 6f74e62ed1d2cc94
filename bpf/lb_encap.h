/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Encapsulation to routed backends: the packet (its IP header onwards)
 * inside an outer IPv4 or IPv6 header, and for GUE a UDP header and a GUE
 * header (struct lb_gue), addressed to the backend from the configured
 * source. The kernel's FIB names the egress interface and the next hop's
 * MACs (bpf_fib_lookup); the frame leaves with XDP_TX when that is the
 * ingress interface, else by redirect. A packet that would not fit the
 * egress MTU once encapsulated is answered with an ICMP error carrying the
 * MTU that fits (IPv4 with DF, IPv6), or dropped (IPv4 without DF: XDP
 * cannot fragment).
 *
 * Both return LB_ENCAP_RET(reason, XDP action): the caller counts.
 * lb_encap() answers LB_ENCAP_TOO_BIG(fits) for a packet that does not fit,
 * and the caller then runs lb_too_big(). lb_encap() is inlined, as it is on
 * every encapsulated packet's path and a call costs about 10 ns here
 * (docs/traps.md); lb_too_big(), on the rare path, is global (verified once,
 * on its own).
 */
#ifndef RINGLB_LB_ENCAP_H
#define RINGLB_LB_ENCAP_H

#include "lb_choose.h"
#include "lb_ip.h"
#include "lb_parse.h"
#include "lb_ring.h"

#ifndef IPPROTO_ICMPV6
#define IPPROTO_ICMPV6 58
#endif
#define IP_DF_BE bpf_htons(0x4000)
#define ICMP_FRAG_NEEDED 4

#define LB_ENCAP_RET(reason, action) ((int)((reason) << 8 | (action)))
#define LB_ENCAP_REASON(ret) (((__u32)(ret) >> 8) & 0xff)
#define LB_ENCAP_ACTION(ret) ((ret) & 0xff)
/*
 * lb_encap()'s answer for a packet too big once encapsulated: the MTU that
 * fits, for lb_too_big(), which the caller runs once lb_encap()'s locals
 * (the FIB's question among them) are off the stack.
 */
#define LB_ENCAP_TOO_BIG(fits) ((int)((fits) << 16 | LB_REASON_FORWARDED_TOO_BIG << 8))
#define LB_ENCAP_FITS(ret) ((__u32)(ret) >> 16)

/* A hop list as lb_encap() takes it (a global function takes scalars): lb_choose.h packs it. */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_config);
	LB_PINNED;
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_icmp_budget);
	LB_PINNED;
} icmp_budget SEC(".maps");

/* A cache of this program's own, refilled from the FIB: nothing to share or keep. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_next_hop);
} next_hops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_next_hop_counters);
	LB_PINNED;
} next_hop_stats SEC(".maps");

/* One encapsulated packet more, its next hop @looked_up in the FIB or not. */
static __always_inline void next_hop_count(int looked_up)
{
	struct lb_next_hop_counters *c;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&next_hop_stats, &zero);
	if (c) {
		if (looked_up)
			c->looked_up++;
		else
			c->cached++;
	}
}

/* The FIB's question about @b from the configured source; 0, or -1 with no source. */
static __always_inline int fib_ask(struct bpf_fib_lookup *fib, const struct lb_backend *b,
				   const struct lb_config *cfg, __u32 ifindex, __u8 tos,
				   __u32 tot_len)
{
	fib->tot_len = (__u16)tot_len;
	fib->ifindex = ifindex;
	if (b->family == LB_FAMILY_IPV4) {
		if (!*(__u32 *)cfg->source4)
			return -1;
		fib->family = AF_INET;
		fib->tos = tos;
		__builtin_memcpy(&fib->ipv4_src, cfg->source4, 4);
		__builtin_memcpy(&fib->ipv4_dst, b->addr, 4);
	} else {
		if (!(*(__u64 *)cfg->source6 | *(__u64 *)(cfg->source6 + 8)))
			return -1;
		fib->family = AF_INET6;
		__builtin_memcpy(fib->ipv6_src, cfg->source6, 16);
		__builtin_memcpy(fib->ipv6_dst, b->addr, 16);
	}
	return 0;
}

/*
 * May this CPU send one more ICMP error now? A token bucket of
 * icmp_burst errors refilled one per icmp_interval_ns, kept as the time
 * the bucket is full again (struct lb_icmp_budget).
 */
static __always_inline int icmp_budget_allows(void)
{
	struct lb_icmp_budget *b;
	struct lb_config *cfg;
	__u64 now, tat, ahead;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&config, &zero);
	b = bpf_map_lookup_elem(&icmp_budget, &zero);
	if (!cfg || !b)
		return 0;
	if (!cfg->icmp_interval_ns)
		return 1;
	now = bpf_ktime_get_coarse_ns();
	tat = b->tat_ns > now ? b->tat_ns : now;
	ahead = (__u64)(cfg->icmp_burst ? cfg->icmp_burst - 1 : 0) * cfg->icmp_interval_ns;
	if (tat - now > ahead)
		return 0;
	b->tat_ns = tat + cfg->icmp_interval_ns;
	return 1;
}

/*
 * Answer a packet too big to encapsulate: the frame becomes an ICMP
 * "fragmentation needed" (IPv4, DF set) or ICMPv6 "packet too big" from the
 * VIP (the packet's destination) to the client, quoting the packet's first
 * bytes, and goes back out with XDP_TX. @fits is the largest packet that
 * fits once encapsulated. Only within this CPU's ICMP budget: past it the
 * packet is dropped (drop_icmp_rate), so spoofed oversize packets reflect
 * at most the budget.
 */
__noinline int lb_too_big(struct xdp_md *ctx, __u32 fits)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 head[sizeof(struct ethhdr) + sizeof(struct vlan_tag)];
	__u32 l3, len, quote, new_ip, i;
	__u8 addrs[32];
	__be16 proto;
	__u64 sum = 0;
	int v4;

	if (l3_of(data, end, &l3, &proto) || data + sizeof(head) > end)
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	v4 = proto == bpf_htons(ETH_P_IP);
	if (v4) {
		struct iphdr *ip = data + l3;

		if ((void *)(ip + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		/* No ICMP error about an ICMP error (RFC 1122), nor for a packet without DF. */
		if (!(ip->frag_off & IP_DF_BE) || ip->protocol == IPPROTO_ICMP)
			return LB_ENCAP_RET(LB_REASON_DROP_TOO_BIG, XDP_DROP);
		len = bpf_ntohs(ip->tot_len);
		__builtin_memcpy(addrs, &ip->saddr, 4);
		__builtin_memcpy(addrs + 16, &ip->daddr, 4);
		new_ip = sizeof(struct iphdr);
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		if (ip6->nexthdr == IPPROTO_ICMPV6)
			return LB_ENCAP_RET(LB_REASON_DROP_TOO_BIG, XDP_DROP);
		len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		__builtin_memcpy(addrs, &ip6->saddr, 16);
		__builtin_memcpy(addrs + 16, &ip6->daddr, 16);
		new_ip = sizeof(struct ipv6hdr);
		/* IPv6 links carry 1280 bytes at least (RFC 8200). */
		if (fits < 1280)
			fits = 1280;
	}
	if (!icmp_budget_allows())
		return LB_ENCAP_RET(LB_REASON_DROP_ICMP_RATE, XDP_DROP);
	/* A whole number of 32-bit words: the checksum below sums words. */
	quote = (len < LB_ICMP_QUOTE_MAX ? len : LB_ICMP_QUOTE_MAX) & ~3u;
	if (quote < 28 || data + l3 + quote > end)
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	__builtin_memcpy(head, data, sizeof(head));
	if (bpf_xdp_adjust_tail(ctx, (int)(l3 + quote) - (int)(end - data)) ||
	    bpf_xdp_adjust_head(ctx, -(int)(new_ip + 8)))
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + sizeof(head) > end)
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	/* The Ethernet header (and tag) as it came, the MACs swapped. */
	__builtin_memcpy(data, head + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(data + ETH_ALEN, head, ETH_ALEN);
	if (l3 > sizeof(struct ethhdr))
		__builtin_memcpy(data + 12, head + 12, 6);
	else
		__builtin_memcpy(data + 12, head + 12, 2);
	if (v4) {
		struct iphdr *ip = data + l3;
		struct icmp_header *icmp = (void *)(ip + 1);
		__u8 *q = (void *)(icmp + 1);

		if ((void *)(icmp + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		*(__u16 *)ip = bpf_htons(0x45c0); /* version 4, IHL 5, TOS internetwork control */
		ip->tot_len = bpf_htons((__u16)(sizeof(*ip) + 8 + quote));
		ip->id = 0;
		ip->frag_off = 0;
		ip->ttl = LB_ENCAP_TTL;
		ip->protocol = IPPROTO_ICMP;
		ip->check = 0;
		__builtin_memcpy(&ip->saddr, addrs + 16, 4);
		__builtin_memcpy(&ip->daddr, addrs, 4);
		ip->check = csum_finish(ipv4_header_sum(ip));
		icmp->type = ICMP_DEST_UNREACH;
		icmp->code = ICMP_FRAG_NEEDED;
		icmp->checksum = 0;
		/* RFC 1191: two unused bytes, then the next hop's MTU. */
		icmp->rest = bpf_htonl(fits & 0xffff);
		sum = csum_words(icmp, 4, 0);
		for (i = 0; i < LB_ICMP_QUOTE_MAX / 4; i++) {
			if (i * 4 >= quote || (void *)(q + i * 4 + 4) > end)
				break;
			sum += *(__u16 *)(q + i * 4) + *(__u16 *)(q + i * 4 + 2);
		}
		icmp->checksum = csum_finish(sum);
	} else {
		struct ipv6hdr *ip6 = data + l3;
		struct icmp_header *icmp6 = (void *)(ip6 + 1);
		__u8 *q = (void *)(icmp6 + 1);

		if ((void *)(icmp6 + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		*(__be32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons((__u16)(8 + quote));
		ip6->nexthdr = IPPROTO_ICMPV6;
		ip6->hop_limit = LB_ENCAP_TTL;
		__builtin_memcpy(&ip6->saddr, addrs + 16, 16);
		__builtin_memcpy(&ip6->daddr, addrs, 16);
		icmp6->type = ICMPV6_PKT_TOOBIG;
		icmp6->code = 0;
		icmp6->checksum = 0;
		icmp6->rest = bpf_htonl(fits);
		/* The pseudo-header: addresses, upper-layer length, next header. */
		sum = csum_words(&ip6->saddr, 16, 0);
		sum += bpf_htons((__u16)(8 + quote)) + bpf_htons(IPPROTO_ICMPV6);
		sum = csum_words(icmp6, 4, sum);
		for (i = 0; i < LB_ICMP_QUOTE_MAX / 4; i++) {
			if (i * 4 >= quote || (void *)(q + i * 4 + 4) > end)
				break;
			sum += *(__u16 *)(q + i * 4) + *(__u16 *)(q + i * 4 + 2);
		}
		icmp6->checksum = csum_finish(sum);
	}
	return LB_ENCAP_RET(LB_REASON_FORWARDED_TOO_BIG, XDP_TX);
}

/* Do @a and @b (either may be NULL) have the same address: one host under two names? */
static __always_inline int same_host(const struct lb_backend *a, const struct lb_backend *b)
{
	return a && b && *(__u64 *)a->addr == *(__u64 *)b->addr &&
	       *(__u64 *)(a->addr + 8) == *(__u64 *)(b->addr + 8);
}

/* Backend slot of hop @i of a packed list, or NULL. */
static __always_inline const struct lb_backend *hop_at(__u64 hops, __u32 i)
{
	__u32 id = LB_HOP(hops, i);

	return bpf_map_lookup_elem(&backends, &id);
}

/*
 * Send the packet to backend @backend_id inside its VIP's encapsulation.
 * @b: backends[@backend_id] as the caller looked it up, not NULL (the
 *     next-hop entry of @backend_id is trusted only for its cookie)
 * @hash: the flow's mix, for the GUE source port and the IPv6 flow label
 *        (unread for an IPv4 IPIP backend)
 * @hops: the hop list (lb_hops_done()), GUE only
 * @now: the coarse clock, for the next-hop entry's time
 */
static __always_inline int lb_encap(struct xdp_md *ctx, const struct lb_backend *b, __u32 backend_id,
				    __u32 hash, __u64 hops, __u64 now)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	struct lb_next_hop *nh;
	struct lb_config *cfg;
	__u32 zero = 0, l3, len, overhead, outer_ip, ifindex, alen, n = 0, i;
	__u64 kept = 0;
	__u8 tos, key_tos, inner_proto, fresh;
	const __u8 *smac, *dmac;
	__be16 proto;
	int rc;

	if (l3_of(data, end, &l3, &proto))
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + l3;

		if ((void *)(ip + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		len = bpf_ntohs(ip->tot_len);
		tos = ip->tos;
		inner_proto = IPPROTO_IPIP;
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		tos = (__u8)(bpf_ntohl(*(__be32 *)ip6) >> 20);
		inner_proto = IPPROTO_IPV6;
	}
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROUTE, XDP_DROP);
	outer_ip = b->family == LB_FAMILY_IPV4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	alen = b->family == LB_FAMILY_IPV4 ? 4 : 16;
	/*
	 * The hops that are still there, of the destination's family, each
	 * host once and never the destination's (a backend added again under
	 * another name shares its address with its retired self): their
	 * number sizes the headers. Ids, not addresses, are kept (the stack
	 * has no room for three IPv6 addresses): a hop's address is read again
	 * when written, and stays the same while its slot is in use.
	 */
	for (i = 0; i < LB_HOPS_MAX - 1 && b->forward == LB_FORWARD_GUE; i++) {
		__u32 id = LB_HOP(hops, i);
		struct lb_backend *h;

		if (i >= LB_HOPS_COUNT(hops))
			break;
		h = bpf_map_lookup_elem(&backends, &id);
		if (!h || h->state == LB_BACKEND_UNUSED || h->family != b->family ||
		    same_host(h, b) || (n > 0 && same_host(h, hop_at(kept, 0))) ||
		    (n > 1 && same_host(h, hop_at(kept, 1))))
			continue;
		kept |= (__u64)id << (LB_HOP_BITS * n);
		n++;
	}
	overhead = outer_ip + (b->forward == LB_FORWARD_GUE ? LB_GUE_LEN + n * alen : 0);

	/*
	 * The route to the backend, checked against the encapsulated length:
	 * where this CPU last sent it, while that is fresh and the packet no
	 * longer than one the FIB let through there, else the FIB's answer,
	 * which fills the entry.
	 */
	key_tos = b->family == LB_FAMILY_IPV4 ? tos : 0;
	nh = bpf_map_lookup_elem(&next_hops, &backend_id);
	if (nh && nh->cookie == b->cookie && now < nh->expires_ns &&
	    nh->in_ifindex == ctx->ingress_ifindex && nh->tos == key_tos &&
	    len + overhead <= nh->fits) {
		ifindex = nh->out_ifindex;
		smac = nh->smac;
		dmac = nh->dmac;
		next_hop_count(0);
	} else {
		if (fib_ask(&fib, b, cfg, ctx->ingress_ifindex, tos, len + overhead))
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROUTE, XDP_DROP);
		rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
			return LB_ENCAP_TOO_BIG(fib.mtu_result > overhead ? fib.mtu_result - overhead :
									    0u);
		if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_NEIGH, XDP_DROP);
		if (rc == BPF_FIB_LKUP_RET_FWD_DISABLED)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_FORWARDING, XDP_DROP);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROUTE, XDP_DROP);
		ifindex = fib.ifindex;
		smac = fib.smac;
		dmac = fib.dmac;
		next_hop_count(1);
		/*
		 * The entry takes the answer; a fresh one of the same question
		 * keeps its time and lets the longest length the FIB passed.
		 */
		if (nh) {
			fresh = nh->cookie == b->cookie && now < nh->expires_ns &&
				nh->in_ifindex == ctx->ingress_ifindex && nh->tos == key_tos &&
				nh->out_ifindex == ifindex;
			if (!fresh) {
				nh->cookie = b->cookie;
				nh->expires_ns = now + LB_NEXT_HOP_TTL_NS;
				nh->in_ifindex = ctx->ingress_ifindex;
				nh->out_ifindex = ifindex;
				nh->tos = key_tos;
				nh->pad = 0;
				nh->fits = 0;
			}
			if (len + overhead > nh->fits)
				nh->fits = (__u16)(len + overhead);
			__builtin_memcpy(nh->smac, fib.smac, ETH_ALEN);
			__builtin_memcpy(nh->dmac, fib.dmac, ETH_ALEN);
		}
	}

	/* Ethernet padding past the IP packet goes; the tag goes too (the FIB chose the link). */
	if (data + l3 + len < end && bpf_xdp_adjust_tail(ctx, (int)(l3 + len) - (int)(end - data)))
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	if (bpf_xdp_adjust_head(ctx, (int)l3 - (int)(sizeof(struct ethhdr) + overhead)))
		return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	{
		struct ethhdr *eth = data;

		if ((void *)(eth + 1) > end)
			return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
		__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
		eth->h_proto = bpf_htons(b->family == LB_FAMILY_IPV4 ? ETH_P_IP : ETH_P_IPV6);
	}
	{
		__u8 next = b->forward == LB_FORWARD_GUE ? IPPROTO_UDP : inner_proto;
		struct udphdr *udp;

		if (b->family == LB_FAMILY_IPV4) {
			struct iphdr *ip = data + sizeof(struct ethhdr);
			__u32 *word = (__u32 *)ip, w[5];

			if ((void *)(ip + 1) > end)
				return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);

			/*
			 * The header made in registers and written as words,
			 * its checksum summed from the registers: summed back
			 * from the frame, each word's load would wait for the
			 * narrower stores under it.
			 */
			w[0] = bpf_htonl((__u32)(0x4500 | tos) << 16 | (__u16)(len + overhead));
			/* Id 0 and DF: the balancer did the path MTU check; RFC 6864 allows id 0 with DF. */
			w[1] = bpf_htonl(0x4000);
			w[2] = bpf_htonl((__u32)LB_ENCAP_TTL << 24 | (__u32)next << 16);
			w[3] = *(const __u32 *)cfg->source4;
			w[4] = *(const __u32 *)b->addr;
			for (i = 0; i < 5; i++)
				word[i] = w[i];
			ip->check = csum_finish((__u64)w[0] + w[1] + w[2] + w[3] + w[4]);
			udp = (void *)(ip + 1);
		} else {
			struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);

			if ((void *)(ip6 + 1) > end)
				return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
			/* Traffic class from the inner packet, flow label from the flow's hash. */
			*(__be32 *)ip6 = bpf_htonl(0x60000000 | (__u32)tos << 20 | (hash & 0xfffff));
			ip6->payload_len = bpf_htons((__u16)(len + overhead - sizeof(*ip6)));
			ip6->nexthdr = next;
			ip6->hop_limit = LB_ENCAP_TTL;
			__builtin_memcpy(&ip6->saddr, cfg->source6, 16);
			__builtin_memcpy(&ip6->daddr, b->addr, 16);
			udp = (void *)(ip6 + 1);
		}
		if (b->forward == LB_FORWARD_GUE) {
			struct lb_gue *gue = (void *)(udp + 1);

			if ((void *)(gue + 1) > end)
				return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
			/* From the ephemeral range, by flow: the backend's NIC spreads flows. */
			udp->source = bpf_htons((__u16)(0xc000 | (hash & 0x3fff)));
			udp->dest = cfg->gue_port;
			udp->len = bpf_htons((__u16)(len + LB_GUE_LEN + n * alen));
			/*
			 * Zero over IPv4 (RFC 768: no checksum). Zero over IPv6 too, as
			 * RFC 6935 and 6936 allow for a tunnel: the inner packet carries
			 * its own checksums, the receiver is ringlb's decap program,
			 * which checks the outer source, port and GUE header and never
			 * hands the UDP datagram to a socket; and a checksum would cost
			 * a pass over every byte of every packet.
			 */
			udp->check = 0;
			/* Version 0, data; private data: one word, then the hops. */
			gue->flags_hlen = (__u8)(1 + n * alen / 4);
			gue->proto = inner_proto;
			gue->flags = 0;
			gue->private_type = 0;
			gue->next_hop = 0;
			gue->hop_count = (__u8)n;
			for (i = 0; i < LB_HOPS_MAX - 1; i++) {
				__u8 *at = (__u8 *)(gue + 1) + i * alen;
				__u32 id = LB_HOP(kept, i);
				struct lb_backend *h;

				if (i >= n)
					break;
				h = bpf_map_lookup_elem(&backends, &id);
				if (!h)
					return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
				if (alen == 4) {
					if ((void *)(at + 4) > end)
						return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
					__builtin_memcpy(at, h->addr, 4);
				} else {
					if ((void *)(at + 16) > end)
						return LB_ENCAP_RET(LB_REASON_DROP_NO_ROOM, XDP_DROP);
					__builtin_memcpy(at, h->addr, 16);
				}
			}
		}
	}
	if (ifindex == ctx->ingress_ifindex)
		return LB_ENCAP_RET(LB_REASON_FORWARDED, XDP_TX);
	return LB_ENCAP_RET(LB_REASON_FORWARDED, bpf_redirect(ifindex, 0));
}

#endif /* RINGLB_LB_ENCAP_H */
