// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb's XDP data path.
 *
 * For each frame: parse Ethernet (at most one VLAN tag), IPv4 (options
 * included) or IPv6 (hop-by-hop, routing and destination options walked),
 * then TCP or UDP; match {VIP address, port, protocol}; find the flow in the
 * flow table, or place it with the VIP's consistent-hash ring; rewrite the
 * MACs for L2 direct server return and send it back out (XDP_TX). ICMP errors
 * about a VIP flow (fragmentation needed, packet too big, ...) follow the
 * flow they quote to its backend, so path MTU discovery works through the
 * balancer. Everything that is not for a VIP, or cannot be parsed, goes to
 * the host untouched (XDP_PASS). Every frame is counted under one reason.
 *
 * The flow hash is SipHash-1-3 under the deployment's secret (ring/siphash.h,
 * shared with the controller); the ring search is ring_lookup()'s (ring.c):
 * read the header and the key's bucket, answer from the bucket when it holds
 * at most one point, else take a fixed number of clamped strides.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lb_contract.h"
#include "siphash.h"

char LICENSE[] SEC("license") = "GPL";

/* Load-time settings, written by the loader before the program is loaded. */
const volatile __u64 flow_secret[2] = { 0, 0 };
const volatile __u8 iface_mac[ETH_ALEN] = { 0 };

/* --- maps ------------------------------------------------------------------ */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, struct lb_vip_key);
	__type(value, struct lb_vip);
} vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend);
} backends SEC(".maps");

/*
 * The template of every ring map. BPF_F_INNER_MAP lets rings differ in size;
 * BPF_F_MMAPABLE lets the controller fill a new ring with one memcpy. The
 * loader sets the flags again in userspace (see lb.c): the template's flags
 * must equal every inner map's.
 */
struct ring_slots {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(union lb_ring_slot));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, __u32);
	__array(values, struct ring_slots);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LB_FLOWS_DEFAULT);
	__type(key, struct lb_flow_key);
	__type(value, struct lb_flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, __u32);
	__type(value, struct lb_counters);
} vip_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend_counters);
} backend_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_REASON_COUNT);
	__type(key, __u32);
	__type(value, struct lb_counters);
} reason_stats SEC(".maps");

/* --- parsing ----------------------------------------------------------------- */

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
 * protocol, or a failure. @quoted is set inside an ICMP error, where the
 * total length describes the original packet, not what was quoted of it.
 */
static __always_inline int parse_ipv4(struct cursor *c, __u8 *src, __u8 *dst, int quoted)
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
	if (!quoted && (void *)ip + total_len > c->end)
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV4);
	if (ip->frag_off & IPV4_FRAG_MASK)
		return PARSE_FAIL(LB_REASON_PASS_FRAGMENT);
	__builtin_memcpy(src, &ip->saddr, 4);
	__builtin_memcpy(dst, &ip->daddr, 4);
	return ip->protocol;
}

/*
 * IPv6 header and the extension headers a flow may carry (hop-by-hop,
 * routing, destination options, at most IPV6_EXT_MAX of them): the transport
 * protocol, or a failure. A fragment header means a fragment.
 */
static __always_inline int parse_ipv6(struct cursor *c, __u8 *src, __u8 *dst, int quoted)
{
	struct ipv6hdr *ip6 = cursor_pull(c, sizeof(*ip6));
	__u8 next;
	int i;

	if (!ip6)
		return PARSE_FAIL(LB_REASON_PASS_TRUNC_IP);
	if (ip6->version != 6)
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV6);
	if (!quoted && (ip6->payload_len == 0 ||
			(void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) > c->end))
		return PARSE_FAIL(LB_REASON_PASS_BAD_IPV6);
	__builtin_memcpy(src, &ip6->saddr, 16);
	__builtin_memcpy(dst, &ip6->daddr, 16);
	next = ip6->nexthdr;
	for (i = 0; i < IPV6_EXT_MAX; i++) {
		struct ipv6_ext *ext;

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
		/* The rest of the header: at most 2046 bytes, a bounded pull. */
		if (!cursor_pull(c, (__u32)ext->length * 8 + 6))
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

/* The ports of a TCP or UDP header; @tcp_flags gets TCP's flag byte. */
static __always_inline int parse_ports(struct cursor *c, int protocol, __be16 *sport,
				       __be16 *dport, __u8 *tcp_flags)
{
	if (protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = cursor_pull(c, sizeof(*tcp));

		if (!tcp)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_L4);
		if (tcp->doff < 5)
			return PARSE_FAIL(LB_REASON_PASS_BAD_L4);
		*sport = tcp->source;
		*dport = tcp->dest;
		*tcp_flags = ((__u8 *)tcp)[13];
		return 0;
	}
	if (protocol == IPPROTO_UDP) {
		struct udphdr *udp = cursor_pull(c, sizeof(*udp));

		if (!udp)
			return PARSE_FAIL(LB_REASON_PASS_TRUNC_L4);
		if (bpf_ntohs(udp->len) < sizeof(*udp))
			return PARSE_FAIL(LB_REASON_PASS_BAD_L4);
		*sport = udp->source;
		*dport = udp->dest;
		*tcp_flags = 0;
		return 0;
	}
	return PARSE_FAIL(LB_REASON_PASS_NOT_VIP);
}

/* --- backend choice ------------------------------------------------------------ */

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_RST 0x04

static __always_inline __u64 flow_hash(const struct lb_flow_key *key)
{
	const uint64_t *words = (const uint64_t *)key;

	return siphash13_flow(words, flow_secret[0], flow_secret[1]);
}

static __always_inline union lb_ring_slot *ring_slot(void *ring, __u32 slot)
{
	return bpf_map_lookup_elem(ring, &slot);
}

/*
 * The VIP's ring owner of @hash, as ring_lookup() finds it: 0 and the
 * backend id, or -(reason) to drop. The layout is described in lb_contract.h.
 */
static __always_inline int ring_pick(__u32 vip_id, __u64 hash, __u32 *backend_id)
{
	union lb_ring_slot *header, *b0, *b1, *probe_slot;
	__u32 bits, steps, bucket, base, end, last, points_at, i;
	void *ring;

	ring = bpf_map_lookup_elem(&rings, &vip_id);
	if (!ring)
		return PARSE_FAIL(LB_REASON_DROP_NO_RING);
	header = ring_slot(ring, 0);
	if (!header)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	if (header->header.points == 0)
		return PARSE_FAIL(LB_REASON_DROP_NO_BACKEND);
	bits = header->header.index_bits;
	steps = header->header.search_steps;
	if (bits > LB_RING_INDEX_BITS_MAX || steps > LB_RING_SEARCH_STEPS_MAX)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	bucket = bits ? (__u32)(hash >> (64 - bits)) : 0;
	b0 = ring_slot(ring, LB_RING_BUCKET_SLOT(bucket));
	b1 = ring_slot(ring, LB_RING_BUCKET_SLOT(bucket + 1));
	if (!b0 || !b1)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	base = b0->bucket.first;
	end = b1->bucket.first;
	if (end - base <= 1) {
		*backend_id = hash > b0->bucket.position ? b1->bucket.backend_id :
							   b0->bucket.backend_id;
		return 0;
	}
	/* A bucket of two or more points: clamped power-of-two strides. */
	points_at = LB_RING_POINT_SLOT(bits, 0);
	last = end - 1;
	for (i = 0; i < LB_RING_SEARCH_STEPS_MAX; i++) {
		__u32 probe;

		if (i >= steps)
			break;
		probe = base + (1u << (steps - 1 - i)) - 1;
		if (probe > last)
			probe = last;
		probe_slot = ring_slot(ring, points_at + probe);
		if (!probe_slot)
			return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
		if (probe_slot->point.position < hash)
			base = probe + 1;
	}
	if (base == end) {
		*backend_id = b1->bucket.backend_id;
		return 0;
	}
	probe_slot = ring_slot(ring, points_at + base);
	if (!probe_slot)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	*backend_id = probe_slot->point.backend_id;
	return 0;
}

/* A backend that may receive this VIP's traffic, or NULL. */
static __always_inline struct lb_backend *backend_usable(__u32 id, __u32 vip_id)
{
	struct lb_backend *b = bpf_map_lookup_elem(&backends, &id);

	/* state first: the other fields are stable whenever it is not UNUSED. */
	if (!b || b->state == LB_BACKEND_UNUSED || b->vip_id != vip_id)
		return NULL;
	return b;
}

/*
 * The flow's backend: its pinned one when that backend is still there
 * (active or draining), else the ring's choice, pinned for next time unless
 * @follow_only (an ICMP error follows a flow but does not make one).
 */
static __always_inline int backend_choose(struct lb_flow_key *key, __u32 vip_id,
					  __u8 tcp_flags, int follow_only,
					  struct lb_backend **out, __u32 *out_id)
{
	struct lb_flow *flow = bpf_map_lookup_elem(&flows, key);
	__u64 now = bpf_ktime_get_coarse_ns();
	struct lb_backend_counters *bc;
	struct lb_backend *b;
	struct lb_flow fresh;
	__u32 id;
	int err, attempt;

	if (flow && flow->vip_id == vip_id) {
		id = flow->backend_id;
		b = backend_usable(id, vip_id);
		if (b && b->cookie == flow->backend_cookie) {
			if (tcp_flags & TCP_FLAG_RST) {
				bpf_map_delete_elem(&flows, key);
			} else {
				if (now - flow->last_seen_ns > LB_FLOW_TOUCH_NS)
					flow->last_seen_ns = now;
				if (tcp_flags & TCP_FLAG_FIN)
					flow->flags |= LB_FLOW_FIN;
			}
			*out = b;
			*out_id = id;
			return 0;
		}
	}
	/*
	 * A ring may name a backend the controller freed right after swapping
	 * the ring out: look again, the second read sees the new ring.
	 */
	for (attempt = 0; attempt < 2; attempt++) {
		err = ring_pick(vip_id, flow_hash(key), &id);
		if (err)
			return err;
		b = backend_usable(id, vip_id);
		if (b)
			break;
	}
	if (!b)
		return PARSE_FAIL(LB_REASON_DROP_BACKEND_GONE);
	*out = b;
	*out_id = id;
	if (follow_only)
		return 0;
	if (!(tcp_flags & TCP_FLAG_RST)) {
		fresh.backend_id = id;
		fresh.backend_cookie = b->cookie;
		fresh.last_seen_ns = now;
		fresh.vip_id = vip_id;
		fresh.flags = tcp_flags & TCP_FLAG_FIN ? LB_FLOW_FIN : 0;
		bpf_map_update_elem(&flows, key, &fresh, BPF_ANY);
	}
	bc = bpf_map_lookup_elem(&backend_stats, &id);
	if (bc)
		bc->new_flows++;
	return 0;
}

/* --- ICMP errors about a VIP flow ------------------------------------------------ */

/*
 * An ICMP error quotes the packet it is about: here a packet the backend
 * sent from the VIP to the client. Rebuild that client's flow key (the quoted
 * destination is the client) and return the quoted protocol, or a failure.
 */
static __always_inline int parse_icmp_quote(struct cursor *c, int family,
					    struct lb_flow_key *key)
{
	__be16 quoted_sport, quoted_dport, *ports;
	int protocol;

	if (family == LB_FAMILY_IPV4)
		protocol = parse_ipv4(c, key->dst_addr, key->src_addr, 1);
	else
		protocol = parse_ipv6(c, key->dst_addr, key->src_addr, 1);
	if (protocol < 0)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	if (protocol != IPPROTO_TCP && protocol != IPPROTO_UDP)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	/* Only the first 8 bytes of the transport header are quoted for sure. */
	ports = cursor_pull(c, ICMP_INNER_L4_BYTES);
	if (!ports)
		return PARSE_FAIL(LB_REASON_PASS_ICMP);
	quoted_sport = ports[0];
	quoted_dport = ports[1];
	key->src_port = quoted_dport;
	key->dst_port = quoted_sport;
	return protocol;
}

/* Is this ICMP message an error whose quote we follow? Non-zero if so. */
static __always_inline int icmp_is_flow_error(struct cursor *c, int family)
{
	struct icmp_header *icmp = cursor_pull(c, sizeof(*icmp));

	if (!icmp)
		return 0;
	if (family == LB_FAMILY_IPV4)
		return icmp->type == ICMP_DEST_UNREACH || icmp->type == ICMP_TIME_EXCEEDED;
	return icmp->type == ICMPV6_DEST_UNREACH || icmp->type == ICMPV6_PKT_TOOBIG ||
	       icmp->type == ICMPV6_TIME_EXCEED;
}

/* --- the program ---------------------------------------------------------------- */

static __always_inline void count(__u32 reason, __u64 bytes)
{
	struct lb_counters *c = bpf_map_lookup_elem(&reason_stats, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

static __always_inline int verdict(__u32 reason, __u64 bytes)
{
	count(reason, bytes);
	if (reason <= LB_REASON_FORWARDED_ICMP)
		return XDP_TX;
	if (reason >= LB_REASON_DROP_NO_BACKEND)
		return XDP_DROP;
	return XDP_PASS;
}

SEC("xdp")
int ringlb_xdp(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	__u64 bytes = (__u64)(ctx->data_end - ctx->data);
	struct lb_flow_key key = {};
	struct lb_vip_key vip_key = {};
	struct lb_backend_counters *bc;
	struct lb_counters *vc;
	struct lb_backend *backend;
	struct ethhdr *eth;
	struct lb_vip *vip;
	__u32 reason = LB_REASON_FORWARDED, backend_id;
	__u8 tcp_flags = 0;
	int proto, err;

	proto = parse_eth(&c, &eth);
	if (proto < 0)
		return verdict(-proto, bytes);
	if (proto == bpf_htons(ETH_P_IP)) {
		key.family = LB_FAMILY_IPV4;
		proto = parse_ipv4(&c, key.src_addr, key.dst_addr, 0);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		key.family = LB_FAMILY_IPV6;
		proto = parse_ipv6(&c, key.src_addr, key.dst_addr, 0);
	} else {
		return verdict(LB_REASON_PASS_NOT_IP, bytes);
	}
	if (proto < 0)
		return verdict(-proto, bytes);

	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		if ((proto == IPPROTO_ICMP) != (key.family == LB_FAMILY_IPV4) ||
		    !icmp_is_flow_error(&c, key.family))
			return verdict(LB_REASON_PASS_ICMP, bytes);
		proto = parse_icmp_quote(&c, key.family, &key);
		if (proto < 0)
			return verdict(-proto, bytes);
		reason = LB_REASON_FORWARDED_ICMP;
	} else {
		err = parse_ports(&c, proto, &key.src_port, &key.dst_port, &tcp_flags);
		if (err < 0)
			return verdict(-err, bytes);
	}
	key.protocol = proto;

	__builtin_memcpy(vip_key.addr, key.dst_addr, sizeof(vip_key.addr));
	vip_key.port = key.dst_port;
	vip_key.protocol = key.protocol;
	vip_key.family = key.family;
	vip = bpf_map_lookup_elem(&vips, &vip_key);
	if (!vip)
		return verdict(reason == LB_REASON_FORWARDED_ICMP ? LB_REASON_PASS_ICMP :
								    LB_REASON_PASS_NOT_VIP,
			       bytes);

	/* ICMP errors follow the flow; they neither pin nor close it. */
	err = backend_choose(&key, vip->vip_id, tcp_flags, reason == LB_REASON_FORWARDED_ICMP,
			     &backend, &backend_id);
	if (err < 0)
		return verdict(-err, bytes);

	__builtin_memcpy(eth->h_dest, backend->mac, ETH_ALEN);
	/*
	 * Byte by byte through the volatile: a memcpy from a cast-away
	 * volatile lets clang fold the zero initializer into the program.
	 */
	for (int i = 0; i < ETH_ALEN; i++)
		eth->h_source[i] = iface_mac[i];

	vc = bpf_map_lookup_elem(&vip_stats, &vip->vip_id);
	if (vc) {
		vc->packets++;
		vc->bytes += bytes;
	}
	bc = bpf_map_lookup_elem(&backend_stats, &backend_id);
	if (bc) {
		bc->packets++;
		bc->bytes += bytes;
	}
	return verdict(reason, bytes);
}
