// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend-side decap program on crafted frames, one table: what it
 * decapsulates (IPIP in the four combinations, GUE with a header, with a
 * hop list, without a header, a VLAN tag kept) comes out as the inner
 * packet behind the same Ethernet header; everything else (not ours, not
 * from a trusted source, not to a local address, malformed or cut short)
 * comes out untouched, each frame under its documented reason. The VIP
 * slots (decap_vips_set()): LB_DECAP_VIP_PROBES addresses of one home slot
 * are all taken, one more is refused with nothing changed, a smaller set
 * leaves what stays in place and drops what left. The host's own addresses
 * (decap_self_set()): those a window cannot hold are still the host's
 * through the hash, a set whose slots hold it all is read from them alone,
 * and a smaller or another set takes the place of the last.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "decap.skel.h"
#include "decap.h"
#include "prog.h"

#define BALANCER4 HARNESS_SOURCE4
#define BALANCER6 HARNESS_SOURCE6
#define HOST4 HARNESS_DECAP_LOCAL4
#define HOST6 HARNESS_DECAP_LOCAL6
#define GUE_PORT LB_GUE_PORT_DEFAULT

static struct decap_bpf *decap;

/* Frame builder: Ethernet (optional tag), outer IP, optional UDP + GUE bytes, inner packet. */
struct outer_spec {
	int family;              /* of the outer header */
	const char *src, *dst;
	uint8_t proto;           /* 4, 41 or 17 */
	uint16_t dport;          /* for UDP */
	const uint8_t *gue;      /* GUE bytes after UDP (NULL: none) */
	size_t gue_len;
	int inner;               /* family of the inner packet */
	uint16_t vlan;
};

static void put16(unsigned char *p, unsigned int v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/* The inner packet: a TCP SYN of a client to the VIP. */
static void inner_of(int family, struct pkt *p)
{
	struct pkt_spec spec = { .family = family, .protocol = IPPROTO_TCP,
				 .src = family == LB_FAMILY_IPV4 ? "198.18.10.2" : "2001:db8:10::2",
				 .dst = family == LB_FAMILY_IPV4 ? V4_VIP : V6_VIP, .sport = 40000,
				 .dport = VIP_TCP_PORT };

	pkt_build(p, &spec);
}

/* @out: the encapsulated frame; @inner: the packet inside (from its IP header). */
static void outer_build(const struct outer_spec *o, struct pkt *out, struct pkt *inner)
{
	struct pkt_encap e = { .family = o->family, .src = o->src, .dst = o->dst,
			       .proto = o->proto, .dport = o->dport, .gue = o->gue,
			       .gue_len = o->gue_len, .vlan = o->vlan };

	inner_of(o->inner, inner);
	pkt_build_encap(out, &e, inner);
}

enum want { DECAP, UNTOUCHED };

struct decap_case {
	const char *name;
	struct outer_spec outer;
	void (*damage)(struct pkt *p); /* NULL: none */
	enum want want;
	__u32 reason;
};

static const uint8_t gue_ours4[] = { 0x01, 4, 0, 0, 0, 0, 0, 0 };
static const uint8_t gue_ours6[] = { 0x01, 41, 0, 0, 0, 0, 0, 0 };
/* GLB's hop list: two IPv4 hops, next hop 1. */
static const uint8_t gue_hops4[] = { 0x03, 4, 0, 0, 0, 0, 1, 2, 198, 18, 13, 12, 198, 18, 13, 13 };
static const uint8_t gue_bare[] = { 0x01, 4, 0, 0 }; /* hlen says 1 word; it is not there */
static const uint8_t gue_control[] = { 0x21, 4, 0, 0, 0, 0, 0, 0 };
static const uint8_t gue_version2[] = { 0x81, 4, 0, 0, 0, 0, 0, 0 };
static const uint8_t gue_udp_inside[] = { 0x01, 17, 0, 0, 0, 0, 0, 0 };

static void bad_ipv4_checksum(struct pkt *p) { p->data[p->l3 + 10] ^= 0xff; }
static void ipv4_fragment(struct pkt *p) { p->data[p->l3 + 6] = 0x20; pkt_ipv4_checksum(p); }
static void ipv4_total_long(struct pkt *p) { put16(p->data + p->l3 + 2, 1400); pkt_ipv4_checksum(p); }
static void inner_version_wrong(struct pkt *p) { p->data[p->l4] = 0x60 | (p->data[p->l4] & 15); }
static void cut_in_outer(struct pkt *p) { p->len = p->l3 + 12; }
/* The outer packet ends before the inner one starts: the rest is padding. */
static void ipv6_payload_zero(struct pkt *p) { put16(p->data + p->l3 + 4, 0); }
static void ipv4_total_header_only(struct pkt *p) { put16(p->data + p->l3 + 2, 20); pkt_ipv4_checksum(p); }
static void cut_in_udp(struct pkt *p) { p->len = p->l3 + 24; }
/* Four NOP option bytes after the outer IPv4 header (IHL 6), its checksum made again. */
static void ipv4_options(struct pkt *p)
{
	unsigned char *ip = p->data + p->l3;

	memmove(ip + 24, ip + 20, p->len - p->l3 - 20);
	memset(ip + 20, 1, 4);
	ip[0] = 0x46;
	put16(ip + 2, (uint16_t)(ip[2] << 8 | ip[3]) + 4);
	p->len += 4;
	p->l4 += 4;
	pkt_ipv4_checksum(p);
}
static void ipv4_options_bad_checksum(struct pkt *p) { ipv4_options(p); bad_ipv4_checksum(p); }

#define V4 LB_FAMILY_IPV4
#define V6 LB_FAMILY_IPV6

static const struct decap_case cases[] = {
	{ "IPv4 in IPv4", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 }, NULL, DECAP,
	  LB_DECAP_DECAP_IPIP },
	{ "IPv6 in IPv4", { V4, BALANCER4, HOST4, 41, 0, NULL, 0, V6, 0 }, NULL, DECAP,
	  LB_DECAP_DECAP_IPIP },
	{ "IPv4 in IPv6", { V6, BALANCER6, HOST6, 4, 0, NULL, 0, V4, 0 }, NULL, DECAP,
	  LB_DECAP_DECAP_IPIP },
	{ "IPv6 in IPv6", { V6, BALANCER6, HOST6, 41, 0, NULL, 0, V6, 0 }, NULL, DECAP,
	  LB_DECAP_DECAP_IPIP },
	{ "tagged IPv4 in IPv4", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 7 }, NULL, DECAP,
	  LB_DECAP_DECAP_IPIP },
	{ "GUE, IPv4 in IPv4", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_ours4, 8, V4, 0 }, NULL,
	  DECAP, LB_DECAP_DECAP_GUE },
	{ "GUE, IPv6 in IPv6", { V6, BALANCER6, HOST6, 17, GUE_PORT, gue_ours6, 8, V6, 0 }, NULL,
	  DECAP, LB_DECAP_DECAP_GUE },
	{ "GUE with a hop list, SYN at hop 1", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_hops4, 16,
	  V4, 0 }, NULL, DECAP, LB_DECAP_DECAP_SECOND_CHANCE },
	{ "GUE without a header, IPv4", { V4, BALANCER4, HOST4, 17, GUE_PORT, NULL, 0, V4, 0 },
	  NULL, DECAP, LB_DECAP_DECAP_GUE },
	{ "GUE without a header, IPv6 in IPv6", { V6, BALANCER6, HOST6, 17, GUE_PORT, NULL, 0, V6, 0 },
	  NULL, DECAP, LB_DECAP_DECAP_GUE },
	{ "from outside --from", { V4, "198.18.10.2", HOST4, 4, 0, NULL, 0, V4, 0 }, NULL, UNTOUCHED,
	  LB_DECAP_PASS_NOT_FROM },
	{ "IPv6 from outside --from", { V6, "2001:db8:10::2", HOST6, 41, 0, NULL, 0, V6, 0 }, NULL,
	  UNTOUCHED, LB_DECAP_PASS_NOT_FROM },
	{ "to an address not the host's", { V4, BALANCER4, "198.18.13.99", 4, 0, NULL, 0, V4, 0 },
	  NULL, UNTOUCHED, LB_DECAP_PASS_NOT_LOCAL },
	{ "UDP to another port", { V4, BALANCER4, HOST4, 17, 53, gue_ours4, 8, V4, 0 }, NULL,
	  UNTOUCHED, LB_DECAP_PASS_NOT_ENCAP },
	{ "bad outer IPv4 checksum", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 },
	  bad_ipv4_checksum, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "outer IPv4 with options", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 },
	  ipv4_options, DECAP, LB_DECAP_DECAP_IPIP },
	{ "outer IPv4 with options, bad checksum", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 },
	  ipv4_options_bad_checksum, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "outer IPv4 fragment", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 }, ipv4_fragment,
	  UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "outer IPv4 longer than the frame", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 },
	  ipv4_total_long, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "IPIP whose inner packet is IPv6", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 },
	  inner_version_wrong, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "outer IPv6 with no payload, inner bytes after it", { V6, BALANCER6, HOST6, 4, 0, NULL, 0,
	  V4, 0 }, ipv6_payload_zero, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "outer IPv4 of its header only, inner bytes after it", { V4, BALANCER4, HOST4, 4, 0, NULL,
	  0, V4, 0 }, ipv4_total_header_only, UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "cut in the outer header", { V4, BALANCER4, HOST4, 4, 0, NULL, 0, V4, 0 }, cut_in_outer,
	  UNTOUCHED, LB_DECAP_PASS_NOT_ENCAP },
	{ "cut in UDP", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_ours4, 8, V4, 0 }, cut_in_udp,
	  UNTOUCHED, LB_DECAP_PASS_BAD_OUTER },
	{ "GUE control message", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_control, 8, V4, 0 },
	  NULL, UNTOUCHED, LB_DECAP_PASS_BAD_GUE },
	{ "GUE version 2", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_version2, 8, V4, 0 }, NULL,
	  UNTOUCHED, LB_DECAP_PASS_BAD_GUE },
	{ "GUE carrying UDP", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_udp_inside, 8, V4, 0 }, NULL,
	  UNTOUCHED, LB_DECAP_PASS_BAD_GUE },
	{ "GUE header cut by its hlen", { V4, BALANCER4, HOST4, 17, GUE_PORT, gue_bare, 4, V4, 0 },
	  NULL, UNTOUCHED, LB_DECAP_PASS_BAD_GUE },
};

static __u64 decap_reason(__u32 r)
{
	return harness_percpu_sum(bpf_map__fd(decap->maps.decap_stats), r, 2, 0);
}

static int decap_setup(void **state)
{
	(void)state;
	if (skip_reason)
		return 0;
	decap = harness_decap_open();
	return decap ? 0 : -1;
}

static int decap_teardown(void **state)
{
	(void)state;
	decap_bpf__destroy(decap);
	decap = NULL;
	return 0;
}

static void test_decap_program_takes_what_is_ours_and_leaves_the_rest(void **state)
{
	unsigned char out[PKT_MAX];
	size_t i, out_len;
	int wrong = 0;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct decap_case *c = &cases[i];
		struct pkt frame, inner;
		__u64 before = decap_reason(c->reason);
		__u32 verdict;
		size_t l2 = c->outer.vlan ? 18 : 14, inner_len;

		outer_build(&c->outer, &frame, &inner);
		if (c->damage)
			c->damage(&frame);
		inner_len = inner.len - inner.l3;
		verdict = harness_run(bpf_program__fd(decap->progs.ringlb_decap), frame.data, frame.len,
				      out, &out_len, 1, NULL);
		if (verdict != XDP_PASS || decap_reason(c->reason) - before != 1) {
			printf("decap: %s: verdict %u, reason %s not counted\n", c->name, verdict,
			       decap_reason_names[c->reason]);
			wrong++;
			continue;
		}
		if (c->want == UNTOUCHED) {
			if (out_len != frame.len || memcmp(out, frame.data, frame.len)) {
				printf("decap: %s: the frame was changed\n", c->name);
				wrong++;
			}
			continue;
		}
		/* The same Ethernet header (and tag), the inner EtherType, then the inner packet. */
		if (out_len != l2 + inner_len || memcmp(out, frame.data, l2 - 2) ||
		    (out[l2 - 2] << 8 | out[l2 - 1]) != (c->outer.inner == V4 ? 0x0800 : 0x86dd) ||
		    memcmp(out + l2, inner.data + inner.l3, inner_len)) {
			printf("decap: %s: not the inner packet behind the frame's header\n", c->name);
			wrong++;
		}
	}
	check(wrong == 0, "%d of %zu frames did not get their documented treatment", wrong,
	      sizeof(cases) / sizeof(cases[0]));
	printf("decap: %zu frames, each decapsulated or left untouched as documented\n",
	       sizeof(cases) / sizeof(cases[0]));
}

/* An IPIP frame from the balancer to outer destination @outer around a SYN to @inner: its verdict. */
static __u32 ipip_run(const char *outer, const char *inner)
{
	struct pkt_spec spec = { .family = V4, .protocol = IPPROTO_TCP, .src = "198.18.10.2",
				 .dst = inner, .sport = 40000, .dport = VIP_TCP_PORT };
	struct pkt_encap e = { .family = V4, .src = BALANCER4, .dst = outer, .proto = 4 };
	struct pkt in, frame;
	unsigned char out[PKT_MAX];
	size_t out_len;

	pkt_build(&in, &spec);
	pkt_build_encap(&frame, &e, &in);
	return harness_run(bpf_program__fd(decap->progs.ringlb_decap), frame.data, frame.len, out,
			   &out_len, 1, NULL);
}

/* An IPIP frame from the balancer to this host around a SYN to @dst: its verdict. */
static __u32 ipip_to(const char *dst)
{
	return ipip_run(HOST4, dst);
}

/*
 * @n IPv4 addresses 198.18.@third.0 on that share a home slot in a map of
 * 2^@bits slots (tried in turn), in @out and, as text, in @text.
 */
static __u32 same_home(__u32 bits, __u32 third, __u32 n, struct addr *out, char (*text)[32])
{
	__u32 home = 0, k, found = 0;

	for (k = 0; k < (256 - third) * 256 && found < n; k++) {
		struct addr a = { .family = V4 };
		__u32 w[4] = { 0 }, h;

		snprintf(text[found], sizeof(text[found]), "198.18.%u.%u", third + (k >> 8), k & 255);
		pkt_addr(V4, text[found], a.bytes);
		memcpy(w, a.bytes, 4);
		h = lb_decap_home(V4, w, bits);
		if (found == 0)
			home = h;
		if (h == home)
			out[found++] = a;
	}
	return found;
}

/* @n IPv6 addresses @prefix with 0, 1, ... in their last 16 bits, in @out. */
static void numbered_v6(struct addr *out, __u32 n, const char *prefix)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].family = V6;
		pkt_addr(V6, prefix, out[i].bytes);
		out[i].bytes[14] = (__u8)(i >> 8);
		out[i].bytes[15] = (__u8)i;
	}
}

static void test_vip_slots_take_a_full_window_and_refuse_one_more(void **state)
{
	struct addr same[LB_DECAP_VIP_PROBES + 1], many[LB_DECAP_VIPS_MAX + 1];
	char text[LB_DECAP_VIP_PROBES + 1][32];
	__u32 i;
	int fd;

	(void)state;
	NEEDS_ROOT();
	fd = bpf_map__fd(decap->maps.decap_vip);
	check_eq(same_home(LB_DECAP_VIP_SLOT_BITS, 0, LB_DECAP_VIP_PROBES + 1, same, text),
		 LB_DECAP_VIP_PROBES + 1);
	check_eq(decap_vips_set(fd, same, LB_DECAP_VIP_PROBES), 0);
	for (i = 0; i < LB_DECAP_VIP_PROBES; i++)
		check(ipip_to(text[i]) == XDP_PASS, "VIP %s of a full window not taken", text[i]);
	check_eq(ipip_to(text[LB_DECAP_VIP_PROBES]), XDP_DROP);
	check_eq(decap_vips_set(fd, same, LB_DECAP_VIP_PROBES + 1), -ENOSPC);
	for (i = 0; i < LB_DECAP_VIP_PROBES; i++)
		check(ipip_to(text[i]) == XDP_PASS, "VIP %s lost by a refused set", text[i]);
	check_eq(ipip_to(text[LB_DECAP_VIP_PROBES]), XDP_DROP);
	/* A smaller set: the one that stays is still taken, the others are dropped. */
	check_eq(decap_vips_set(fd, &same[1], 1), 0);
	check_eq(ipip_to(text[1]), XDP_PASS);
	check_eq(ipip_to(text[0]), XDP_DROP);
	check_eq(ipip_to(text[2]), XDP_DROP);
	/* LB_DECAP_VIPS_MAX at most. */
	numbered_v6(many, LB_DECAP_VIPS_MAX + 1, "2001:db8:30::");
	check_eq(decap_vips_set(fd, many, LB_DECAP_VIPS_MAX + 1), -E2BIG);
	check_eq(decap_vips_set(fd, many, LB_DECAP_VIPS_MAX), 0);
	check_eq(ipip_to(text[1]), XDP_DROP);
}

/* An IPIP frame from the balancer to outer destination @dst around a SYN to the VIP: taken? */
static int taken_at(const char *dst)
{
	__u64 before = decap_reason(LB_DECAP_DECAP_IPIP), refused = decap_reason(LB_DECAP_PASS_NOT_LOCAL);

	if (ipip_run(dst, HARNESS_DECAP_VIP4) != XDP_PASS)
		return -1;
	if (decap_reason(LB_DECAP_DECAP_IPIP) - before == 1)
		return 1;
	return decap_reason(LB_DECAP_PASS_NOT_LOCAL) - refused == 1 ? 0 : -1;
}

/* Are the slots current and whole, and how many addresses does the hash hold? */
static int self_whole(size_t *in_hash)
{
	struct lb_decap_from_key key, next;
	struct lb_decap_config cfg;
	__u32 zero = 0;
	int fd = bpf_map__fd(decap->maps.decap_local), more;

	*in_hash = 0;
	for (more = !bpf_map_get_next_key(fd, NULL, &next); more;
	     more = !bpf_map_get_next_key(fd, &key, &next)) {
		key = next;
		(*in_hash)++;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(decap->maps.decap_config), &zero, &cfg))
		return -1;
	return (cfg.flags & (LB_DECAP_SELF_CURRENT | LB_DECAP_SELF_WHOLE)) ==
	       (LB_DECAP_SELF_CURRENT | LB_DECAP_SELF_WHOLE);
}

static void test_host_addresses_in_slots_and_the_rest_in_the_hash(void **state)
{
	enum { SAME = LB_DECAP_VIP_PROBES + 2 };
	struct decap_maps m;
	struct addr same[SAME], many[LB_DECAP_SELF_MAX + 1];
	char text[SAME][32];
	__u32 i;
	size_t in_hash;

	(void)state;
	NEEDS_ROOT();
	m = harness_decap_maps(decap);
	/* The harness's two addresses fit their slots: the slots are the whole set. */
	check_eq(self_whole(&in_hash), 1);
	check_eq(in_hash, 2);
	check_eq(taken_at(HOST4), 1);
	/* Addresses that share a home slot (from 198.18.20.0: none the harness's). */
	check_eq(same_home(LB_DECAP_SELF_SLOT_BITS, 20, SAME, same, text), SAME);
	/* Two more than their window holds: those two in the hash alone, every one taken. */
	check_eq(decap_self_set(&m, same, SAME), 0);
	check_eq(self_whole(&in_hash), 0);
	check_eq(in_hash, SAME);
	for (i = 0; i < SAME; i++)
		check(taken_at(text[i]) == 1, "host address %s of a full window not taken", text[i]);
	check_eq(taken_at(HOST4), 0);
	/* A set that fits: whole again, and the hash is not read (an entry put there alone is not taken). */
	check_eq(decap_self_set(&m, same, LB_DECAP_VIP_PROBES), 0);
	check_eq(self_whole(&in_hash), 1);
	check_eq(in_hash, LB_DECAP_VIP_PROBES);
	for (i = 0; i < LB_DECAP_VIP_PROBES; i++)
		check(taken_at(text[i]) == 1, "host address %s not taken", text[i]);
	check_eq(taken_at(text[SAME - 1]), 0);
	{
		struct lb_decap_from_key key = { .family = V4 };
		__u8 one = 1;

		memcpy(key.addr, same[SAME - 1].bytes, 4);
		check_eq(bpf_map_update_elem(m.local, &key, &one, BPF_ANY), 0);
		check_eq(taken_at(text[SAME - 1]), 0);
	}
	/*
	 * A controller of an earlier build: the settings written whole with no
	 * flag, the hash alone replaced (by one address). The slots it left are
	 * not read: what it dropped is not taken. Then this build's again.
	 */
	{
		struct lb_decap_config old = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
		struct lb_decap_from_key key = { .family = V4 }, next;
		__u32 zero = 0;
		__u8 one = 1;

		check_eq(bpf_map_update_elem(m.config, &zero, &old, BPF_ANY), 0);
		while (!bpf_map_get_next_key(m.local, NULL, &next))
			check_eq(bpf_map_delete_elem(m.local, &next), 0);
		memcpy(key.addr, same[2].bytes, 4);
		check_eq(bpf_map_update_elem(m.local, &key, &one, BPF_ANY), 0);
		check_eq(taken_at(text[2]), 1);
		check_eq(taken_at(text[0]), 0);
		check_eq(taken_at(text[1]), 0);
		check_eq(decap_self_set(&m, same, LB_DECAP_VIP_PROBES), 0);
		check_eq(self_whole(&in_hash), 1);
		check_eq(taken_at(text[0]), 1);
	}
	/* A flag of a later build's, and pad: not kept, they would vouch for maps this build does not keep. */
	{
		struct lb_decap_config later, now;
		__u32 zero = 0;

		check_eq(bpf_map_lookup_elem(m.config, &zero, &later), 0);
		later.flags |= 0x80;
		later.pad[0] = 7;
		check_eq(bpf_map_update_elem(m.config, &zero, &later, BPF_ANY), 0);
		check_eq(decap_self_set(&m, same, LB_DECAP_VIP_PROBES), 0);
		check_eq(bpf_map_lookup_elem(m.config, &zero, &now), 0);
		check_eq(now.flags, LB_DECAP_SELF_CURRENT | LB_DECAP_SELF_WHOLE);
		check_eq(now.pad[0], 0);
		check_eq(now.gue_port, later.gue_port);
	}
	/* One left: it stays taken, the others are not. */
	check_eq(decap_self_set(&m, &same[1], 1), 0);
	check_eq(self_whole(&in_hash), 1);
	check_eq(in_hash, 1);
	check_eq(taken_at(text[1]), 1);
	check_eq(taken_at(text[0]), 0);
	check_eq(taken_at(text[2]), 0);
	/* LB_DECAP_SELF_MAX at most, and a refused set changes nothing. */
	numbered_v6(many, LB_DECAP_SELF_MAX + 1, "2001:db8:31::");
	check_eq(decap_self_set(&m, many, LB_DECAP_SELF_MAX + 1), -E2BIG);
	check_eq(taken_at(text[1]), 1);
	/* A whole set of others in place of one: the hash is pruned before it takes them. */
	check_eq(decap_self_set(&m, many, LB_DECAP_SELF_MAX), 0);
	/* Numbered addresses spread over the homes: each finds a slot of its window. */
	check_eq(self_whole(&in_hash), 1);
	check_eq(in_hash, LB_DECAP_SELF_MAX);
	check_eq(taken_at(text[1]), 0);
}

HARNESS_GROUP(decap,
	cmocka_unit_test_setup_teardown(test_decap_program_takes_what_is_ours_and_leaves_the_rest,
					decap_setup, decap_teardown),
	cmocka_unit_test_setup_teardown(test_vip_slots_take_a_full_window_and_refuse_one_more,
					decap_setup, decap_teardown),
	cmocka_unit_test_setup_teardown(test_host_addresses_in_slots_and_the_rest_in_the_hash,
					decap_setup, decap_teardown));
