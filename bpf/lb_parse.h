/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Frame parsing for ringlb's XDP programs: a cursor with one bounds check per
 * header, and one helper per header that returns the next protocol or
 * -(enum lb_reason). parse_flow() runs them all and fills the flow key.
 * Shared by the data path and the benchmark's comparison programs, so both
 * parse exactly alike.
 */
#ifndef RINGLB_LB_PARSE_H
#define RINGLB_LB_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lb_choose.h"
#include "lb_contract.h"

#define ETH_P_8021Q_BE bpf_htons(ETH_P_8021Q)
#define ETH_P_8021AD_BE bpf_htons(ETH_P_8021AD)
#define IPV4_FRAG_MASK bpf_htons(0x3fff) /* MF flag and fragment offset */
#define IPV4_IHL_MIN 5
#define IPV6_EXT_MAX 4 /* extension headers walked before giving up */
#define ICMP_INNER_L4_BYTES 8 /* what an ICMP error quotes past the IP header */

/* A parser's result: >= 0 is the next protocol, < 0 is -(enum lb_reason). */
#define PARSE_FAIL(reason) (-(int)(reason))

struct cursor {
	void *pos;
	void *end;
};

struct vlan_tag {
	__be16 tci;
	__be16 encapsulated_proto;
};

/*
 * ICMP and ICMPv6 share this 8-byte header. Declared here because
 * <linux/icmp.h> pulls in libc's socket headers, which do not build for BPF.
 */
struct icmp_header {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be32 rest;
};

#define ICMP_DEST_UNREACH 3
#define ICMP_TIME_EXCEEDED 11
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PKT_TOOBIG 2
#define ICMPV6_TIME_EXCEED 3

struct ipv6_ext {
	__u8 next_header;
	__u8 length; /* in 8-byte units, not counting the first 8 bytes */
};

/* One bounds check per header: the header's start, or NULL if it is cut short. */
static __always_inline void *cursor_pull(struct cursor *c, __u32 len)
{
	void *start = c->pos;

	if (start + len > c->end)
		return NULL;
	c->pos = start + len;
	return start;
}

/* Ethernet and at most one VLAN tag: the EtherType (big-endian) or a failure. */
static __always_inline int parse_eth(struct cursor *c, struct ethhdr **eth)
{
	struct vlan_tag *vlan;
	__be16 proto;

	*eth = cursor_pull(c, sizeof(**eth));
	if (!*eth)
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_ETH);
	proto = (*eth)->h_proto;
	if (proto != ETH_P_8021Q_BE && proto != ETH_P_8021AD_BE)
		return proto;
	vlan = cursor_pull(c, sizeof(*vlan));
	if (!vlan)
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_VLAN);
	proto = vlan->encapsulated_proto;
	if (proto == ETH_P_8021Q_BE || proto == ETH_P_8021AD_BE)
		return PARSE_FAIL(LB_REASON_PASS_VLAN_STACKED);
	return proto;
}

/*
 * IPv4 header, options included, into the key's addresses: the transport
 * protocol, or a failure. @room: the bytes of the packet past the IP header,
 * as the IP header says (RFC 791 total length; Ethernet padding after it is
 * not the packet's). @quoted is set inside an ICMP error, where the total
 * length describes the original packet, not what was quoted of it: there
 * @room comes in as the bytes the quote may use, and the header must fit.
 */
static __always_inline int parse_ipv4(struct cursor *c, __u8 *src, __u8 *dst, int quoted,
				      __u32 *room)
{
	struct iphdr *ip = cursor_pull(c, sizeof(*ip));
	__u32 header_len, total_len;

	if (!ip)
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
	if (ip->version != 4 || ip->ihl < IPV4_IHL_MIN)
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV4);
	header_len = ip->ihl * 4;
	total_len = bpf_ntohs(ip->tot_len);
	if (total_len < header_len)
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV4);
	/* The options: ihl is 4 bits, so this pull is at most 40 bytes. */
	if (!cursor_pull(c, header_len - sizeof(*ip)))
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
	if (quoted) {
		if (header_len > *room)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
		*room -= header_len;
	} else {
		if ((void *)ip + total_len > c->end)
			return PARSE_FAIL(LB_REASON_PASS_BAD_IPV4);
		*room = total_len - header_len;
	}
	if (ip->frag_off & IPV4_FRAG_MASK)
		return PARSE_FAIL(LB_REASON_PASS_FRAGMENT);
	__builtin_memcpy(src, &ip->saddr, 4);
	__builtin_memcpy(dst, &ip->daddr, 4);
	return ip->protocol;
}

/*
 * IPv6 header and the extension headers a flow may carry (hop-by-hop,
 * routing, destination options, at most IPV6_EXT_MAX of them): the transport
 * protocol, or a failure. A fragment header means a fragment. @room and
 * @quoted as for parse_ipv4(): the payload length bounds the extension
 * headers and what follows them (RFC 8200).
 */
static __always_inline int parse_ipv6(struct cursor *c, __u8 *src, __u8 *dst, int quoted,
				      __u32 *room)
{
	struct ipv6hdr *ip6 = cursor_pull(c, sizeof(*ip6));
	__u8 next;
	int i;

	if (!ip6)
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
	if (ip6->version != 6)
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV6);
	if (quoted) {
		if (sizeof(*ip6) > *room)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
		*room -= sizeof(*ip6);
	} else {
		if (ip6->payload_len == 0 ||
		    (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) > c->end)
			return PARSE_FAIL(LB_REASON_PASS_BAD_IPV6);
		*room = bpf_ntohs(ip6->payload_len);
	}
	__builtin_memcpy(src, &ip6->saddr, 16);
	__builtin_memcpy(dst, &ip6->daddr, 16);
	next = ip6->nexthdr;
	for (i = 0; i < IPV6_EXT_MAX; i++) {
		struct ipv6_ext *ext;
		__u32 ext_len;

		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			break;
		case IPPROTO_FRAGMENT:
			return PARSE_FAIL(LB_REASON_PASS_FRAGMENT);
		case IPPROTO_AH:
		case IPPROTO_ESP:
		case IPPROTO_NONE:
		case IPPROTO_MH:
			return PARSE_FAIL(LB_REASON_PASS_IPV6_EXT);
		default:
			return next;
		}
		ext = cursor_pull(c, sizeof(*ext));
		if (!ext)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_IPV6_EXT);
		next = ext->next_header;
		ext_len = (__u32)ext->length * 8 + 8;
		if (ext_len > *room)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_IPV6_EXT);
		*room -= ext_len;
		/* The rest of the header: at most 2046 bytes, a bounded pull. */
		if (!cursor_pull(c, ext_len - sizeof(*ext)))
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_IPV6_EXT);
	}
	switch (next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_FRAGMENT:
	case IPPROTO_AH:
	case IPPROTO_ESP:
	case IPPROTO_NONE:
	case IPPROTO_MH:
		return next == IPPROTO_FRAGMENT ? PARSE_FAIL(LB_REASON_PASS_FRAGMENT) :
						  PARSE_FAIL(LB_REASON_PASS_IPV6_EXT);
	default:
		return next;
	}
}

/*
 * The ports of a TCP or UDP header that lies within the @room bytes the IP
 * header gives it; @tcp_flags gets TCP's flag byte.
 */
static __always_inline int parse_ports(struct cursor *c, int protocol, __u32 room, __be16 *sport,
				       __be16 *dport, __u8 *tcp_flags)
{
	if (protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = cursor_pull(c, sizeof(*tcp));

		if (!tcp || room < sizeof(*tcp))
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_L4);
		/* RFC 9293: the data offset counts the header, options included. */
		if (tcp->doff < 5 || (__u32)tcp->doff * 4 > room)
			return PARSE_FAIL(LB_REASON_PASS_BAD_L4);
		*sport = tcp->source;
		*dport = tcp->dest;
		*tcp_flags = ((__u8 *)tcp)[13];
		return 0;
	}
	if (protocol == IPPROTO_UDP) {
		struct udphdr *udp = cursor_pull(c, sizeof(*udp));

		if (!udp || room < sizeof(*udp))
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_L4);
		/* RFC 768: the length counts the header and lies within the IP payload. */
		if (bpf_ntohs(udp->len) < sizeof(*udp) || bpf_ntohs(udp->len) > room)
			return PARSE_FAIL(LB_REASON_PASS_BAD_L4);
		*sport = udp->source;
		*dport = udp->dest;
		*tcp_flags = 0;
		return 0;
	}
	return PARSE_FAIL(LB_REASON_PASS_NOT_VIP);
}

/*
 * An ICMP error quotes the packet it is about: here a packet the backend
 * sent from the VIP to the client. Rebuild that client's flow key (the quoted
 * destination is the client) and return the quoted protocol, or a failure.
 * The quote lies within the @room bytes the outer IP header leaves it.
 */
static __always_inline int parse_icmp_quote(struct cursor *c, int family, __u32 room,
					    struct lb_flow_key *key)
{
	__be16 quoted_sport, quoted_dport, *ports;
	int protocol;

	if (family == LB_FAMILY_IPV4)
		protocol = parse_ipv4(c, key->dst_addr, key->src_addr, 1, &room);
	else
		protocol = parse_ipv6(c, key->dst_addr, key->src_addr, 1, &room);
	if (protocol < 0)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	if (protocol != IPPROTO_TCP && protocol != IPPROTO_UDP)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	/* Only the first 8 bytes of the transport header are quoted for sure. */
	ports = cursor_pull(c, ICMP_INNER_L4_BYTES);
	if (!ports || room < ICMP_INNER_L4_BYTES)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	quoted_sport = ports[0];
	quoted_dport = ports[1];
	key->src_port = quoted_dport;
	key->dst_port = quoted_sport;
	return protocol;
}

/* Is this ICMP message, within @room bytes, an error whose quote we follow? */
static __always_inline int icmp_is_flow_error(struct cursor *c, int family, __u32 room)
{
	struct icmp_header *icmp = cursor_pull(c, sizeof(*icmp));

	if (!icmp || room < sizeof(*icmp))
		return 0;
	if (family == LB_FAMILY_IPV4)
		return icmp->type == ICMP_DEST_UNREACH || icmp->type == ICMP_TIME_EXCEEDED;
	return icmp->type == ICMPV6_DEST_UNREACH || icmp->type == ICMPV6_PKT_TOOBIG ||
	       icmp->type == ICMPV6_TIME_EXCEED;
}

/* Hide @v from the compiler, which would merge two narrow loads back into one wide load. */
#define KEY_OPAQUE(v) asm volatile("" : "+r"(v))

/*
 * key_settle() - write @key again as its five 64-bit words, each made in a
 * register from loads no wider than the stores the parser made. Everything
 * after the parser (the VIP's copy, the table hash, the way compares) loads
 * whole words; a load over several narrower stores still in flight cannot
 * take its octets from them and waits until they are all written. Measured
 * (with the VIP's copy found by these words, not by a VIP key built in
 * pieces): established packets within the noise, medians of the paired
 * differences -0.10 / -0.02 of Katran's program over 12 rounds (N = 100 /
 * 1000); the verifier 371,138 instructions instead of 410,382, its states
 * holding whole unknown words where they held octets.
 */
static __always_inline void key_settle(struct lb_flow_key *key)
{
	const __u32 *half = (const __u32 *)key;
	__u64 *word = (__u64 *)key, lo, hi;
	int i;

	for (i = 0; i < 4; i++) {
		lo = half[2 * i];
		hi = half[2 * i + 1];
		KEY_OPAQUE(lo);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		word[i] = lo | hi << 32;
#else
		word[i] = lo << 32 | hi;
#endif
	}
	/* Octets 32 - 39: the ports, the protocol, the family, two of padding. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	lo = (__u64)key->src_port | (__u64)key->dst_port << 16;
	hi = (__u64)key->protocol | (__u64)key->family << 8;
	KEY_OPAQUE(lo);
	word[4] = lo | hi << 32;
#else
	lo = (__u64)key->src_port << 16 | key->dst_port;
	hi = (__u64)key->protocol << 8 | key->family;
	KEY_OPAQUE(lo);
	word[4] = lo << 32 | hi << 16;
#endif
}

/**
 * parse_flow() - parse a frame up to its transport ports.
 * @c: cursor over the frame
 * @key: the flow key, zeroed by the caller; filled here
 * @eth: the Ethernet header, for the MAC rewrite
 * @tcp_flags: TCP's flag byte (0 for UDP and ICMP)
 *
 * Every header above IP must lie within the packet as its IP header states
 * it, not merely within the frame: bytes past the IP length are padding.
 *
 * Return: LB_REASON_FORWARDED for a TCP or UDP flow, LB_REASON_FORWARDED_ICMP
 * for an ICMP error quoting one and addressed to the VIP it quotes (the key
 * is then the quoted flow's, seen from the client), or -(reason) for what is
 * not to be forwarded.
 */
static __always_inline int parse_flow(struct cursor *c, struct lb_flow_key *key,
				      struct ethhdr **eth, __u8 *tcp_flags)
{
	int proto, err, reason = LB_REASON_FORWARDED;
	__u64 *dst = (__u64 *)key->dst_addr, outer_dst0, outer_dst1;
	__u32 room = 0;

	*tcp_flags = 0;
	proto = parse_eth(c, eth);
	if (proto < 0)
		return proto;
	if (proto == bpf_htons(ETH_P_IP)) {
		key->family = LB_FAMILY_IPV4;
		proto = parse_ipv4(c, key->src_addr, key->dst_addr, 0, &room);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		key->family = LB_FAMILY_IPV6;
		proto = parse_ipv6(c, key->src_addr, key->dst_addr, 0, &room);
	} else {
		return PARSE_FAIL(LB_REASON_PASS_NOT_IP);
	}
	if (proto < 0)
		return proto;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		if ((proto == IPPROTO_ICMP) != (key->family == LB_FAMILY_IPV4) ||
		    !icmp_is_flow_error(c, key->family, room))
			return PARSE_FAIL(LB_REASON_PASS_ICMP);
		outer_dst0 = dst[0];
		outer_dst1 = dst[1];
		proto = parse_icmp_quote(c, key->family, room - sizeof(struct icmp_header), key);
		if (proto < 0)
			return proto;
		/*
		 * The quoted packet left a VIP; the error is ours only when it
		 * is addressed to that VIP. Anything else is the host's.
		 */
		if (dst[0] != outer_dst0 || dst[1] != outer_dst1)
			return PARSE_FAIL(LB_REASON_PASS_ICMP);
		reason = LB_REASON_FORWARDED_ICMP;
	} else {
		err = parse_ports(c, proto, room, &key->src_port, &key->dst_port, tcp_flags);
		if (err < 0)
			return err;
	}
	key->protocol = (__u8)proto;
	key_settle(key);
	return reason;
}

/*
 * lb_vip_tail_of() - the last word of the VIP key @key is addressed to (its
 * port, protocol and family, struct lb_vip_key's octets 16 - 19), from the
 * flow key's last word as key_settle() wrote it: octets 2 - 5 of it.
 */
static __always_inline __u32 lb_vip_tail_of(const struct lb_flow_key *key)
{
	return (__u32)(((const __u64 *)key)[4] >> 16);
}

/*
 * The VIP key a flow key (as key_settle() wrote it) is addressed to, @vip
 * 8-aligned: written as two words and a tail from the flow key's words, so
 * that a lookup's loads of it find each in one store.
 */
static __always_inline void vip_key_of(const struct lb_flow_key *key, struct lb_vip_key *vip)
{
	const __u64 *w = (const __u64 *)key;
	__u64 *addr = (__u64 *)vip->addr;

	addr[0] = w[2];
	addr[1] = w[3];
	*(__u32 *)(addr + 2) = lb_vip_tail_of(key);
}

#endif /* RINGLB_LB_PARSE_H */
