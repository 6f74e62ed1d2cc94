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
 * that is one of the host's addresses (map "decap_self", slots as
 * "decap_vip" has, when the settings say they are current; then the hash
 * "decap_local" unless the slots hold them all; filled by the controller),
 * and only with an inner destination that
 * is one of the host's VIPs (map "decap_vip", `decap attach --vip`: an
 * array searched from the address's home slot, struct lb_decap_vip). It
 * removes the outer
 * headers, keeps the Ethernet header (and VLAN tag) with the inner
 * EtherType, and passes the inner packet to the host's stack, where the VIP
 * sits on loopback; or, for a GUE packet with a hop list that is not this
 * host's, sends it on to the next hop, which must be a peer (inside a --from
 * prefix) and not this host. Trusted encapsulation around anything else (an
 * inner packet to another address, too many hops, a hop outside the peers)
 * is dropped; what is not ours passes untouched. Every frame is counted
 * under one reason (map "decap_stats").
 */
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "lb_contract.h"
#include "lb_ip.h"
#include "lb_pin.h"

char LICENSE[] SEC("license") = "GPL";

#define DECAP_PREFIXES_MAX 256

/* The ICMP errors that quote a packet of a connection (<linux/icmp.h> pulls in libc). */
#define ICMP_DEST_UNREACH 3
#define ICMP_TIME_EXCEEDED 11
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PKT_TOOBIG 2
#define ICMPV6_TIME_EXCEED 3

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DECAP_PREFIXES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lb_decap_from_key);
	__type(value, __u8);
	LB_PINNED;
} decap_from SEC(".maps");

/* The host's addresses, by family and address (the key's prefixlen unused: 0): all of them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_DECAP_SELF_MAX);
	__type(key, struct lb_decap_from_key);
	__type(value, __u8);
	LB_PINNED;
} decap_local SEC(".maps");

/* The host's VIP addresses, inner destinations it takes: struct lb_decap_vip's slots. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_DECAP_VIP_SLOTS);
	__type(key, __u32);
	__type(value, struct lb_decap_vip);
	LB_PINNED;
} decap_vip SEC(".maps");

/* The host's addresses again, in slots, read first when current: those that fit (lb_contract.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_DECAP_SELF_SLOTS);
	__type(key, __u32);
	__type(value, struct lb_decap_vip);
	LB_PINNED;
} decap_self SEC(".maps");

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

static __always_inline int counted(__u32 reason, __u64 bytes)
{
	struct lb_counters *c = bpf_map_lookup_elem(&decap_stats, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return XDP_PASS;
}

/* Counted under @reason (a DROP_* one), and dropped. */
static __always_inline int dropped(__u32 reason, __u64 bytes)
{
	counted(reason, bytes);
	return XDP_DROP;
}

/*
 * Is the address at @a (of @family, @len bytes) in @map: inside a prefix of
 * the LPM trie decap_from (@lpm), or a key of the hash decap_local?
 */
static __always_inline int addr_in(void *map, int lpm, __u8 family, const void *a, __u32 len)
{
	struct lb_decap_from_key key = { .family = family };

	key.prefixlen = lpm ? 32 + len * 8 : 0;
	if (len == 4)
		__builtin_memcpy(key.addr, a, 4);
	else
		__builtin_memcpy(key.addr, a, 16);
	return bpf_map_lookup_elem(map, &key) != NULL;
}

/*
 * Is @addr (4 words, an IPv4 address in the first, the rest zero) of
 * @family in a slot of its window in @map, an array of 2^@bits struct
 * lb_decap_vip? Without a branch on what the slots hold: a branch per probe
 * left the verifier a state per outcome for the rest of the program
 * (docs/traps.md). An IPv4 slot's other words are zero too (contract), so
 * one difference of all five fields says equal or not.
 */
static __always_inline int in_slots(void *map, __u32 bits, __u8 family, const __u32 addr[4])
{
	__u32 home = lb_decap_home(family, addr, bits);
	__u64 missed = 1;

	for (__u32 i = 0; i < LB_DECAP_VIP_PROBES; i++) {
		__u32 slot = (home + i) & ((1u << bits) - 1);
		struct lb_decap_vip *v = bpf_map_lookup_elem(map, &slot);
		__u64 d, neg;

		if (!v)
			return 0;
		d = (__u64)((v->family ^ family) | (v->addr[0] ^ addr[0]) | (v->addr[1] ^ addr[1]) |
			    (v->addr[2] ^ addr[2]) | (v->addr[3] ^ addr[3]));
		/*
		 * d is below 2^32, so -d has its top bit set exactly when d is not
		 * zero. Hidden from clang, which would make that a branch again.
		 */
		neg = -d;
		__asm__ __volatile__("" : "+r"(neg));
		missed &= neg >> 63;
	}
	return !missed;
}

/* Is @addr (4 words, an IPv4 address in the first) of @family one of the host's VIPs? */
static __always_inline int vip_of_host(__u8 family, const __u32 addr[4])
{
	return in_slots(&decap_vip, LB_DECAP_VIP_SLOT_BITS, family, addr);
}

/*
 * Is @addr (4 words) of @family one of the host's own addresses? Its slots
 * first, when the settings say they are current; the hash when they are
 * not, or miss and do not hold every address.
 */
static __always_inline int self_of_host(__u8 family, const __u32 addr[4])
{
	struct lb_decap_config *cfg;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&decap_config, &zero);
	if (cfg && (cfg->flags & LB_DECAP_SELF_CURRENT)) {
		if (in_slots(&decap_self, LB_DECAP_SELF_SLOT_BITS, family, addr))
			return 1;
		if (cfg->flags & LB_DECAP_SELF_WHOLE)
			return 0;
	}
	return addr_in(&decap_local, 0, family, addr, family == LB_FAMILY_IPV4 ? 4 : 16);
}

/* Is @addr (of @family) inside a --from prefix, and is @dst (4 words) one of the host's addresses? */
static __always_inline __u32 trusted(__u8 family, const void *src, const __u32 dst[4], __u32 len)
{
	if (!addr_in(&decap_from, 1, family, src, len))
		return LB_DECAP_PASS_NOT_FROM;
	if (!self_of_host(family, dst))
		return LB_DECAP_PASS_NOT_LOCAL;
	return 0;
}

/*
 * An ICMP error (@type of @version's ICMP) that quotes a TCP packet this
 * host sent, @quote its IP header: is there a socket for that connection?
 * The quote runs backend to client, so the tuple is reversed. 1 (ours)
 * for any other ICMP message and for a quote of anything else.
 */
static __always_inline int icmp_ours(struct xdp_md *ctx, __u8 *quote, void *end, __u8 version,
				     __u8 type)
{
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk;
	__be16 *ports;
	__u32 size;
	int mine;

	if (version == 4) {
		struct iphdr *ip = (void *)quote;
		__u32 qihl;

		if (type != ICMP_DEST_UNREACH && type != ICMP_TIME_EXCEEDED)
			return 1;
		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
			return 1;
		qihl = (__u32)ip->ihl * 4;
		if (qihl < sizeof(*ip))
			return 1;
		ports = (void *)(quote + qihl);
		tuple.ipv4.saddr = ip->daddr;
		tuple.ipv4.daddr = ip->saddr;
		size = sizeof(tuple.ipv4);
	} else {
		struct ipv6hdr *ip6 = (void *)quote;

		if (type != ICMPV6_DEST_UNREACH && type != ICMPV6_PKT_TOOBIG &&
		    type != ICMPV6_TIME_EXCEED)
			return 1;
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return 1;
		ports = (void *)(ip6 + 1);
		__builtin_memcpy(tuple.ipv6.saddr, &ip6->daddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6->saddr, 16);
		size = sizeof(tuple.ipv6);
	}
	if ((void *)(ports + 2) > end)
		return 1;
	if (version == 4) {
		tuple.ipv4.sport = ports[1];
		tuple.ipv4.dport = ports[0];
	} else {
		tuple.ipv6.sport = ports[1];
		tuple.ipv6.dport = ports[0];
	}
	sk = bpf_skc_lookup_tcp(ctx, &tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	mine = sk->state != BPF_TCP_LISTEN;
	bpf_sk_release(sk);
	return mine;
}

/*
 * Is the inner packet this host's? A SYN without ACK (a new connection the
 * ring gave this host), a packet of a connection it has (a socket for the
 * 4-tuple that is not a listener), an ACK that is a valid SYN cookie of its
 * listener, an ICMP error about a connection it has, anything else that is
 * not TCP, and a packet with no hop left are.
 */
static __always_inline int ours(struct xdp_md *ctx, void *inner, void *end, __u8 version)
{
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk;
	struct tcphdr *th;
	__u32 ihl, size;
	int mine = 0;

	if (version == 4) {
		struct iphdr *ip = inner;
		__u8 *icmp = (void *)(ip + 1);

		if ((void *)(ip + 1) > end || ip->ihl != 5)
			return 1;
		/* ICMP: its 8-byte header, then the quote. */
		if (ip->protocol == IPPROTO_ICMP)
			return (void *)(icmp + 8) > end ? 1 : icmp_ours(ctx, icmp + 8, end, 4, icmp[0]);
		if (ip->protocol != IPPROTO_TCP)
			return 1;
		ihl = sizeof(*ip);
		tuple.ipv4.saddr = ip->saddr;
		tuple.ipv4.daddr = ip->daddr;
		size = sizeof(tuple.ipv4);
	} else {
		struct ipv6hdr *ip6 = inner;
		__u8 *icmp = (void *)(ip6 + 1);

		if ((void *)(ip6 + 1) > end)
			return 1;
		if (ip6->nexthdr == IPPROTO_ICMPV6)
			return (void *)(icmp + 8) > end ? 1 : icmp_ours(ctx, icmp + 8, end, 6, icmp[0]);
		if (ip6->nexthdr != IPPROTO_TCP)
			return 1;
		ihl = sizeof(*ip6);
		__builtin_memcpy(tuple.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6->daddr, 16);
		size = sizeof(tuple.ipv6);
	}
	th = inner + ihl;
	if ((void *)(th + 1) > end)
		return 1;
	if (th->syn && !th->ack)
		return 1;
	if (version == 4) {
		tuple.ipv4.sport = th->source;
		tuple.ipv4.dport = th->dest;
	} else {
		tuple.ipv6.sport = th->source;
		tuple.ipv6.dport = th->dest;
	}
	sk = bpf_skc_lookup_tcp(ctx, &tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	if (sk->state != BPF_TCP_LISTEN)
		mine = 1;
	else if (th->ack && !th->syn && !th->rst)
		mine = bpf_tcp_check_syncookie(sk, inner, ihl, th, sizeof(*th)) == 0;
	bpf_sk_release(sk);
	return mine;
}

/* What second_chance() may answer besides an XDP action. */
#define HOP_TAKE (-1)     /* this host's packet, or no hop left */
#define HOP_NO_WAY (-2)   /* the FIB names no way to the next hop: taken here */
#define HOP_NOT_PEER (-3) /* the next hop is outside every --from prefix */
#define HOP_SELF (-4)     /* the next hop is one of this host's addresses */

/*
 * The outer UDP checksum (@check) after the source moves from @old_src to
 * the old destination (still in the pseudo-header as the new source: no
 * change there) and the destination from that to @hop, and the 16-bit word
 * holding next_hop goes from @old_word to @new_word (RFC 1624).
 */
static __always_inline void udp_check_move(__u16 *check, const __u16 *old_src, const __u16 *hop,
					   __u32 words, __u16 old_word, __u16 new_word)
{
	__u64 sum = (__u16)~*check;
	__u16 c;

	for (__u32 i = 0; i < words; i++)
		sum += (__u16)~old_src[i] + (__u64)hop[i];
	sum += (__u16)~old_word + (__u64)new_word;
	c = csum_finish(sum);
	/* Over UDP 0 is "no checksum": a sum that folds to zero is sent as 0xffff. */
	*check = c ? c : 0xffff;
}

/*
 * Take the packet here (HOP_TAKE, HOP_NO_WAY), refuse it (HOP_NOT_PEER,
 * HOP_SELF), or send it on to hop @next_hop of the list at @hops_at: the
 * outer source becomes this host's address (the outer destination), the
 * destination the hop, next_hop one further, the UDP checksum updated, the
 * MACs the FIB's; the TTL or hop limit stays as it came (GLB's redirect
 * sends the packet out as it is: the hop list bounds the relaying).
 * @udp_at: the outer UDP header's offset. Returns the XDP action.
 */
static __always_inline int second_chance(struct xdp_md *ctx, __u32 l3, __u32 outer, __u8 version,
					 __u8 next_hop, __u8 hop_count, __u32 hops_at,
					 __u32 alen)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib;
	__u8 family = alen == 4 ? LB_FAMILY_IPV4 : LB_FAMILY_IPV6;
	struct udphdr *udp;
	__u16 old_word, new_word;
	__u8 *hop, *index;
	__u32 at;
	int rc;

	if (next_hop >= hop_count || l3 != sizeof(struct ethhdr) || outer > 256 ||
	    ours(ctx, data + l3 + outer, end, version))
		return HOP_TAKE;
	if (hops_at > 256 || next_hop >= LB_HOPS_MAX)
		return HOP_TAKE;
	hop = data + hops_at + (__u32)next_hop * alen;
	if ((void *)(hop + 16) > end)
		return HOP_TAKE;
	/* Only to a peer, never to this host. */
	if (!addr_in(&decap_from, 1, family, hop, alen))
		return HOP_NOT_PEER;
	{
		__u32 a[4] = {};

		if (alen == 4)
			__builtin_memcpy(a, hop, 4);
		else
			__builtin_memcpy(a, hop, 16);
		if (self_of_host(family, a))
			return HOP_SELF;
	}
	/* GUE's next-hop index, in the 16-bit word it shares with hop_count. */
	at = hops_at - 2;
	/* A fresh offset, so the pointer is checked where it is written. */
	barrier_var(at);
	index = data + at;
	if (hops_at < 2 || (void *)(index + 2) > end)
		return HOP_TAKE;
	old_word = *(__u16 *)index;
	*index = next_hop + 1;
	new_word = *(__u16 *)index;
	/* Zeroed here, not at the top: a packet taken above pays no 64-byte clear. */
	__builtin_memset(&fib, 0, sizeof(fib));
	fib.ifindex = ctx->ingress_ifindex;
	if (alen == 4) {
		struct iphdr *ip = data + sizeof(struct ethhdr);

		udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > end || ip->ihl != 5)
			return HOP_TAKE;
		if (udp->check)
			udp_check_move(&udp->check, (__u16 *)&ip->saddr, (__u16 *)hop, 2, old_word,
				       new_word);
		ip->saddr = ip->daddr;
		__builtin_memcpy(&ip->daddr, hop, 4);
		ip->check = 0;
		ip->check = csum_finish(ipv4_header_sum(ip));
		fib.family = AF_INET;
		fib.ipv4_src = ip->saddr;
		fib.ipv4_dst = ip->daddr;
		fib.tot_len = bpf_ntohs(ip->tot_len);
	} else {
		struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);

		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > end)
			return HOP_TAKE;
		/*
		 * Zero over IPv6 too, as the balancer sends it (RFC 6935/6936 allow
		 * it for a tunnel): an update from zero would be a wrong checksum.
		 */
		if (udp->check)
			udp_check_move(&udp->check, (__u16 *)&ip6->saddr, (__u16 *)hop, 8, old_word,
				       new_word);
		__builtin_memcpy(&ip6->saddr, &ip6->daddr, 16);
		__builtin_memcpy(&ip6->daddr, hop, 16);
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
		fib.tot_len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
	}
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	{
		struct ethhdr *eth = data;
		__u8 mac[ETH_ALEN];

		if ((void *)(eth + 1) > end)
			return HOP_NO_WAY;
		/*
		 * No neighbour entry for the hop (a peer on this segment this host
		 * never spoke to: XDP cannot resolve one): back to the machine the
		 * frame came from, the router that brought it, which routes it on.
		 */
		if (rc == BPF_FIB_LKUP_RET_NO_NEIGH && fib.ifindex == ctx->ingress_ifindex) {
			__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
			__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
			__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
			return XDP_TX;
		}
		if (rc != BPF_FIB_LKUP_RET_SUCCESS)
			return HOP_NO_WAY;
		__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	}
	return fib.ifindex == ctx->ingress_ifindex ? XDP_TX : (int)bpf_redirect(fib.ifindex, 0);
}

SEC("xdp")
int ringlb_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u64 bytes = (__u64)(end - data);
	__u8 head[sizeof(struct ethhdr) + sizeof(struct vlan_tag)];
	struct lb_decap_config *cfg;
	__u32 zero = 0, l3, outer, reason, kind, ip_len, hop_alen = 4, hops_at = 0;
	__u8 next_hop = 0, hop_count = 0;
	__u8 proto, inner_version;
	__be16 ethertype;

	if (l3_of(data, end, &l3, &ethertype))
		return counted(LB_DECAP_PASS_NOT_ENCAP, bytes);
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
		__u32 dst[4] = { ip->daddr };

		reason = trusted(LB_FAMILY_IPV4, &ip->saddr, dst, 4);
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
		__u32 dst[4];

		__builtin_memcpy(dst, &ip6->daddr, 16);
		reason = trusted(LB_FAMILY_IPV6, &ip6->saddr, dst, 16);
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
			__u32 hlen = gue[0] & 0x1f;

			/* GUE version 0: a data message (C clear), then hlen words of options. */
			if ((void *)(gue + 4) > end || (gue[0] & 0x20))
				return counted(LB_DECAP_PASS_BAD_GUE, bytes);
			proto = gue[1];
			/* Private data of type 0: the hop list, its length what hlen says. */
			if (hlen && (void *)(gue + 8) <= end && gue[4] == 0 && gue[5] == 0) {
				hop_alen = ethertype == bpf_htons(ETH_P_IP) ? 4 : 16;
				next_hop = gue[6];
				hop_count = gue[7];
				if (4 + hop_count * hop_alen != hlen * 4 || next_hop > hop_count)
					return counted(LB_DECAP_PASS_BAD_GUE, bytes);
				if (hop_count > LB_HOPS_MAX - 1)
					return dropped(LB_DECAP_DROP_HOPS_MAX, bytes);
				hops_at = l3 + outer + 8;
			} else if (hlen && (void *)(gue + 8) > end) {
				return counted(LB_DECAP_PASS_BAD_GUE, bytes);
			}
			outer += 4 + hlen * 4;
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
	/* The inner packet starts inside the outer one: what follows it is padding. */
	if (outer >= ip_len)
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	{
		__u8 *inner = data + l3 + outer;
		__u32 bad = kind == LB_DECAP_DECAP_GUE ? LB_DECAP_PASS_BAD_GUE :
							 LB_DECAP_PASS_BAD_OUTER;

		if ((void *)(inner + 1) > end || !inner_version || inner[0] >> 4 != inner_version)
			return counted(bad, bytes);
		/* The whole inner header, and its destination one of the host's VIPs. */
		if (inner_version == 4) {
			struct iphdr *ip = (void *)inner;

			if ((void *)(ip + 1) > end)
				return counted(bad, bytes);
			__u32 a[4] = { ip->daddr };

			if (!vip_of_host(LB_FAMILY_IPV4, a))
				return dropped(LB_DECAP_DROP_NOT_VIP, bytes);
		} else {
			struct ipv6hdr *ip6 = (void *)inner;

			if ((void *)(ip6 + 1) > end)
				return counted(bad, bytes);
			__u32 a[4];

			__builtin_memcpy(a, &ip6->daddr, 16);
			if (!vip_of_host(LB_FAMILY_IPV6, a))
				return dropped(LB_DECAP_DROP_NOT_VIP, bytes);
		}
	}
	/* A hop list: take it here, send it on, or refuse a hop that is no peer. */
	if (hops_at) {
		int ret = second_chance(ctx, l3, outer, inner_version, next_hop, hop_count, hops_at,
					hop_alen);

		if (ret >= 0) {
			counted(LB_DECAP_FORWARD_NEXT_HOP, bytes);
			return ret;
		}
		if (ret == HOP_NOT_PEER)
			return dropped(LB_DECAP_DROP_HOP_NOT_PEER, bytes);
		if (ret == HOP_SELF)
			return dropped(LB_DECAP_DROP_HOP_SELF, bytes);
		if (ret == HOP_NO_WAY)
			kind = LB_DECAP_DECAP_NO_NEXT_HOP;
		else if (next_hop > 0)
			kind = LB_DECAP_DECAP_SECOND_CHANCE;
	}
	/* The Ethernet header (and tag) moves up to the inner packet, with its EtherType. */
	if (data + sizeof(head) > end)
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	__builtin_memcpy(head, data, sizeof(head));
	if (bpf_xdp_adjust_head(ctx, (int)outer))
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	/*
	 * The frame holds the header and at least the inner packet's first byte
	 * (checked before the head moved): these bounds only tell the verifier.
	 */
	if (data + sizeof(struct ethhdr) > end)
		return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
	__builtin_memcpy(data, head, sizeof(struct ethhdr));
	ethertype = bpf_htons(inner_version == 4 ? ETH_P_IP : ETH_P_IPV6);
	if (l3 > sizeof(struct ethhdr)) {
		if (data + sizeof(head) > end)
			return counted(LB_DECAP_PASS_BAD_OUTER, bytes);
		__builtin_memcpy(data + 12, head + 12, 4);
		*(__be16 *)(data + 16) = ethertype;
	} else {
		*(__be16 *)(data + 12) = ethertype;
	}
	return counted(kind, bytes);
}
