// SPDX-License-Identifier: GPL-2.0-only
/*
 * Encapsulation, byte by byte: every combination of inner and outer family
 * over IPIP and GUE, checked field by field (Ethernet from the FIB's next
 * hop, outer header, lengths, checksums, ports, TTL, TOS, the GUE header,
 * the inner packet unchanged); Ethernet padding and a VLAN tag left behind;
 * the ICMP errors a packet too big once encapsulated gets (checksums,
 * MTU, quote), and the drops: no DF, no neighbour, no route, forwarding off.
 *
 * The FIB lookup needs a network: the tests run in the harness's network
 * namespace (harness_net_enter()), entered for this file and left after it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"

#define SOURCE4 HARNESS_SOURCE4
#define SOURCE6 HARNESS_SOURCE6
#define BACKEND4 "198.18.13.11"
#define BACKEND6 "2001:db8:13::11"
#define GUE_PORT 19523

static int ifindex;
static const __u8 *const next_hop_mac = harness_next_hop_mac;
static const __u8 *const ifmac = harness_e0_mac;

static int sh(const char *cmd)
{
	return system(cmd) == 0 ? 0 : -1;
}

/* Run a frame as if it arrived on e0. */
static __u32 run_on_e0(const struct pkt *in, unsigned char *out, size_t *out_len)
{
	check(lb_readers_release(lb_prog_maps(prog)) == 0, "closing the VIP epoch");
	return harness_run_on(lb_prog_fd(prog), ifindex, in->data, in->len, out, out_len);
}

static void config_set(int with_sources)
{
	struct lb_config c = { .gue_port = htons(GUE_PORT) };

	if (with_sources) {
		__u8 a[16];

		pkt_addr(LB_FAMILY_IPV4, SOURCE4, a);
		memcpy(c.source4, a, 4);
		pkt_addr(LB_FAMILY_IPV6, SOURCE6, c.source6);
	}
	check(lb_config_write(maps, &c) == 0, "write the encapsulation settings");
}

/* @vip served by one backend at @addr, reached by @forward: its id. */
static __u32 vip_to(int vip, int family, const char *addr, int forward)
{
	struct lb_vip_key key = vip_key_of_test(vip);
	struct ring_member m = { "only", 1 };
	struct ring *ring;
	__u32 id = backend_new_encap(vip, family, addr, forward);

	check(ring_build(&ring, 16, &m, 1) == 0, "ring");
	check(lb_vip_install(maps, &key, (__u32)vip, ring, &id) == 0, "install VIP %d", vip);
	check(lb_vip_settle(maps, &key, (__u32)vip, NULL) == 0, "settle VIP %d", vip);
	ring_free(ring);
	return id;
}

static void vip_empty(int vip, __u32 id)
{
	struct lb_vip_key key = vip_key_of_test(vip);

	check(lb_vip_install(maps, &key, (__u32)vip, NULL, NULL) == 0, "empty VIP %d", vip);
	lb_backend_set_state(maps, id, LB_BACKEND_UNUSED);
}

static unsigned int be16(const unsigned char *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* The ones' complement sum of @len bytes, folded: 0xffff when a checksum over them holds. */
static unsigned int csum(const unsigned char *p, size_t len, unsigned long sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += be16(p + i);
	if (len & 1)
		sum += (unsigned long)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (unsigned int)sum;
}

/* A TCP frame of the test's client to @vip's address, with TOS/traffic class 0x28. */
static void inner_frame(struct pkt *p, int family, uint16_t sport)
{
	struct pkt_spec spec = { .family = family, .protocol = IPPROTO_TCP,
				 .src = family == LB_FAMILY_IPV4 ? "198.18.1.9" : "2001:db8:c::9",
				 .dst = family == LB_FAMILY_IPV4 ? V4_VIP : V6_VIP, .sport = sport,
				 .dport = VIP_TCP_PORT, .tcp_flags = TCP_ACK };

	pkt_build(p, &spec);
	if (family == LB_FAMILY_IPV4) {
		p->data[p->l3 + 1] = 0x28;
		p->data[p->l3 + 6] = 0x40; /* DF, as TCP sends */
		pkt_ipv4_checksum(p);
	} else {
		p->data[p->l3] = 0x62;
		p->data[p->l3 + 1] = 0x80;
	}
}

/* Grow the packet to @total IP bytes (zeros past the TCP header), lengths fixed. */
static void inner_grow(struct pkt *p, int family, size_t total)
{
	size_t ip_len = p->len - p->l3;

	memset(p->data + p->len, 0, total - ip_len);
	p->len = p->l3 + total;
	if (family == LB_FAMILY_IPV4) {
		p->data[p->l3 + 2] = (unsigned char)(total >> 8);
		p->data[p->l3 + 3] = (unsigned char)total;
		pkt_ipv4_checksum(p);
	} else {
		p->data[p->l3 + 4] = (unsigned char)((total - 40) >> 8);
		p->data[p->l3 + 5] = (unsigned char)(total - 40);
	}
}

struct encap_case {
	const char *name;
	int inner;   /* family of the VIP and its packet */
	int outer;   /* family of the backend */
	int forward; /* LB_FORWARD_IPIP or LB_FORWARD_GUE */
};

/* Check one encapsulated frame against the packet it carries. */
static void encap_check(const struct encap_case *c, const struct pkt *in, const unsigned char *out,
			size_t out_len)
{
	size_t inner_len = in->len - in->l3, outer_ip = c->outer == LB_FAMILY_IPV4 ? 20 : 40;
	size_t gue = c->forward == LB_FORWARD_GUE ? 16 : 0, at = 14 + outer_ip;
	unsigned int inner_proto = c->inner == LB_FAMILY_IPV4 ? 4 : 41, next;
	__u8 src[16], dst[16];
	const unsigned char *ip = out + 14;

	next = gue ? 17 : inner_proto;
	check_eq(out_len, 14 + outer_ip + gue + inner_len);
	check(memcmp(out, next_hop_mac, 6) == 0, "%s: destination MAC is not the next hop's", c->name);
	check(memcmp(out + 6, ifmac, 6) == 0, "%s: source MAC is not the interface's", c->name);
	check_eq(be16(out + 12), c->outer == LB_FAMILY_IPV4 ? 0x0800 : 0x86dd);
	pkt_addr(c->outer, c->outer == LB_FAMILY_IPV4 ? SOURCE4 : SOURCE6, src);
	pkt_addr(c->outer, c->outer == LB_FAMILY_IPV4 ? BACKEND4 : BACKEND6, dst);
	if (c->outer == LB_FAMILY_IPV4) {
		check_eq(ip[0], 0x45);
		check_eq(ip[1], 0x28); /* TOS copied: both inner families carry 0x28 */
		check_eq(be16(ip + 2), outer_ip + gue + inner_len);
		check_eq(be16(ip + 4), 0);      /* id 0 ... */
		check_eq(be16(ip + 6), 0x4000); /* ... with DF */
		check_eq(ip[8], 64);
		check_eq(ip[9], next);
		check_eq(csum(ip, 20, 0), 0xffff);
		check(memcmp(ip + 12, src, 4) == 0 && memcmp(ip + 16, dst, 4) == 0,
		      "%s: outer addresses", c->name);
	} else {
		check_eq(ip[0] >> 4, 6);
		check_eq((be16(ip) >> 4) & 0xff, 0x28); /* traffic class copied */
		check_eq(be16(ip + 4), gue + inner_len);
		check_eq(ip[6], next);
		check_eq(ip[7], 64);
		check(memcmp(ip + 8, src, 16) == 0 && memcmp(ip + 24, dst, 16) == 0,
		      "%s: outer addresses", c->name);
	}
	if (gue) {
		const unsigned char *udp = out + at;

		check(be16(udp) >= 0xc000, "%s: UDP source port %u below 49152", c->name, be16(udp));
		check_eq(be16(udp + 2), GUE_PORT);
		check_eq(be16(udp + 4), 16 + inner_len);
		check_eq(be16(udp + 6), 0);
		check_eq(udp[8], 0x01);         /* version 0, data, one word of private data */
		check_eq(udp[9], inner_proto);
		check_eq(be16(udp + 10), 0);    /* flags */
		check_eq(be16(udp + 12), 0);    /* private data type */
		check_eq(be16(udp + 14), 0);    /* next hop 0, no hops */
		at += gue;
	}
	check(memcmp(out + at, in->data + in->l3, inner_len) == 0,
	      "%s: the inner packet changed", c->name);
}

static void test_every_encapsulation_is_right_byte_by_byte(void **state)
{
	static const struct encap_case cases[] = {
		{ "IPv4 in IPv4", LB_FAMILY_IPV4, LB_FAMILY_IPV4, LB_FORWARD_IPIP },
		{ "IPv6 in IPv4", LB_FAMILY_IPV6, LB_FAMILY_IPV4, LB_FORWARD_IPIP },
		{ "IPv4 in IPv6", LB_FAMILY_IPV4, LB_FAMILY_IPV6, LB_FORWARD_IPIP },
		{ "IPv6 in IPv6", LB_FAMILY_IPV6, LB_FAMILY_IPV6, LB_FORWARD_IPIP },
		{ "IPv4 in GUE in IPv4", LB_FAMILY_IPV4, LB_FAMILY_IPV4, LB_FORWARD_GUE },
		{ "IPv6 in GUE in IPv4", LB_FAMILY_IPV6, LB_FAMILY_IPV4, LB_FORWARD_GUE },
		{ "IPv4 in GUE in IPv6", LB_FAMILY_IPV4, LB_FAMILY_IPV6, LB_FORWARD_GUE },
		{ "IPv6 in GUE in IPv6", LB_FAMILY_IPV6, LB_FAMILY_IPV6, LB_FORWARD_GUE },
	};
	unsigned char out[PKT_MAX];
	size_t i, out_len;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	config_set(1);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct encap_case *c = &cases[i];
		int vip = c->inner == LB_FAMILY_IPV4 ? VIP_V4_TCP : VIP_V6_TCP;
		__u32 id = vip_to(vip, c->outer, c->outer == LB_FAMILY_IPV4 ? BACKEND4 : BACKEND6,
				  c->forward);
		__u32 ports[2] = { 0, 0 };
		struct pkt in;
		int k;

		for (k = 0; k < 2; k++) {
			inner_frame(&in, c->inner, (uint16_t)(40000 + k));
			check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
			encap_check(c, &in, out, out_len);
			if (c->forward == LB_FORWARD_GUE)
				ports[k] = be16(out + 14 + (c->outer == LB_FAMILY_IPV4 ? 20 : 40));
		}
		/* The same flow keeps its source port (checked again below); two flows differ. */
		if (c->forward == LB_FORWARD_GUE) {
			inner_frame(&in, c->inner, 40000);
			run_on_e0(&in, out, &out_len);
			check_eq(be16(out + 14 + (c->outer == LB_FAMILY_IPV4 ? 20 : 40)), ports[0]);
			check(ports[0] != ports[1], "%s: two flows, one source port %u", c->name,
			      ports[0]);
		}
		flows_clear();
		vip_empty(vip, id);
	}
}

/* Bytes counted for a forwarded frame: its reason's, its VIP's and its backend's. */
static void bytes_counted(int vip, __u32 backend, __u64 got[3])
{
	got[0] = harness_percpu_sum(maps->reason_stats, LB_REASON_FORWARDED, 2, 1);
	got[1] = harness_percpu_sum(maps->vip_stats, (__u32)vip, 2, 1);
	got[2] = harness_percpu_sum(maps->backend_stats, backend, 3, 1);
}

/*
 * A VLAN tag and Ethernet padding stay behind; the outer lengths are the
 * packet's. The counters count the frame as it came in (tag and padding
 * included), not as it leaves.
 */
static void test_padding_and_tag_are_left_behind(void **state)
{
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP,
				 .src = "198.18.1.9", .dst = V4_VIP, .sport = 40100,
				 .dport = VIP_UDP_PORT, .vlan = 7 };
	unsigned char out[PKT_MAX];
	size_t out_len, ip_len;
	__u64 before[3], after[3];
	struct pkt in, bare;
	__u32 id;
	int k;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	config_set(1);
	id = vip_to(VIP_V4_UDP, LB_FAMILY_IPV4, BACKEND4, LB_FORWARD_IPIP);
	pkt_build(&in, &spec);
	ip_len = in.len - in.l3;
	memset(in.data + in.len, 0xee, 20); /* padding the IP header does not count */
	in.len += 20;
	bytes_counted(VIP_V4_UDP, id, before);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check_eq(out_len, 14 + 20 + ip_len);
	bytes_counted(VIP_V4_UDP, id, after);
	for (k = 0; k < 3; k++)
		check_eq(after[k] - before[k], in.len);
	/* What the check expects: the packet without tag and padding. */
	spec.vlan = 0;
	pkt_build(&bare, &spec);
	check(memcmp(out + 34, bare.data + bare.l3, ip_len) == 0, "the inner packet changed");
	check_eq(be16(out + 14 + 2), 20 + ip_len);
	vip_empty(VIP_V4_UDP, id);
}

/* Too big once encapsulated: an ICMP error from the VIP with the MTU that fits, or a drop. */
static void test_too_big_gets_the_icmp_error_that_fits(void **state)
{
	unsigned char out[PKT_MAX];
	size_t out_len;
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	struct pkt in;
	__u8 vip[16], client[16];
	__u32 id;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	config_set(1);

	/* IPv4, DF: fragmentation needed, MTU 1500 - 20 - 16 over GUE in IPv4. */
	id = vip_to(VIP_V4_TCP, LB_FAMILY_IPV4, BACKEND4, LB_FORWARD_GUE);
	inner_frame(&in, LB_FAMILY_IPV4, 40200);
	inner_grow(&in, LB_FAMILY_IPV4, 1500);
	reasons_snapshot(before);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	reasons_snapshot(after);
	check_eq(after[LB_REASON_FORWARDED_TOO_BIG] - before[LB_REASON_FORWARDED_TOO_BIG], 1);
	check_eq(out_len, 14 + 20 + 8 + LB_ICMP_QUOTE_MAX);
	check(memcmp(out, in.data + 6, 6) == 0 && memcmp(out + 6, in.data, 6) == 0,
	      "the MACs are not swapped");
	pkt_addr(LB_FAMILY_IPV4, V4_VIP, vip);
	pkt_addr(LB_FAMILY_IPV4, "198.18.1.9", client);
	check_eq(out[14], 0x45);
	check_eq(be16(out + 16), 20 + 8 + LB_ICMP_QUOTE_MAX);
	check_eq(out[23], 1); /* ICMP */
	check_eq(csum(out + 14, 20, 0), 0xffff);
	check(memcmp(out + 26, vip, 4) == 0 && memcmp(out + 30, client, 4) == 0,
	      "the error is not from the VIP to the client");
	check_eq(out[34], 3);
	check_eq(out[35], 4);
	check_eq(be16(out + 40), 1500 - 20 - 16);
	check_eq(csum(out + 34, 8 + LB_ICMP_QUOTE_MAX, 0), 0xffff);
	check(memcmp(out + 42, in.data + in.l3, LB_ICMP_QUOTE_MAX) == 0,
	      "the quote is not the packet's start");

	/* IPv4 without DF: dropped, XDP cannot fragment. */
	in.data[in.l3 + 6] = 0;
	pkt_ipv4_checksum(&in);
	reasons_snapshot(before);
	check_eq(run_on_e0(&in, out, &out_len), XDP_DROP);
	reasons_snapshot(after);
	check_eq(after[LB_REASON_DROP_TOO_BIG] - before[LB_REASON_DROP_TOO_BIG], 1);
	vip_empty(VIP_V4_TCP, id);

	/* IPv6: packet too big, MTU 1500 - 40 over IPIP in IPv6, checksum over the pseudo-header. */
	id = vip_to(VIP_V6_TCP, LB_FAMILY_IPV6, BACKEND6, LB_FORWARD_IPIP);
	inner_frame(&in, LB_FAMILY_IPV6, 40201);
	inner_grow(&in, LB_FAMILY_IPV6, 1500);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check_eq(out_len, 14 + 40 + 8 + LB_ICMP_QUOTE_MAX);
	pkt_addr(LB_FAMILY_IPV6, V6_VIP, vip);
	pkt_addr(LB_FAMILY_IPV6, "2001:db8:c::9", client);
	check_eq(out[14] >> 4, 6);
	check_eq(be16(out + 18), 8 + LB_ICMP_QUOTE_MAX);
	check_eq(out[20], 58);
	check(memcmp(out + 22, vip, 16) == 0 && memcmp(out + 38, client, 16) == 0,
	      "the error is not from the VIP to the client");
	check_eq(out[54], 2);
	check_eq(out[55], 0);
	check_eq(be16(out + 60), 1500 - 40);
	{
		unsigned long pseudo = csum(out + 22, 32, 0);

		pseudo += 8 + LB_ICMP_QUOTE_MAX + 58;
		check_eq(csum(out + 54, 8 + LB_ICMP_QUOTE_MAX, pseudo), 0xffff);
	}
	vip_empty(VIP_V6_TCP, id);
}

/* Nowhere to send it: each drop under its own reason. */
static void test_no_route_no_neighbour_no_forwarding_drop_with_reasons(void **state)
{
	static const struct {
		const char *name, *backend;
		int sources;
		const char *sysctl;
		__u32 reason;
	} cases[] = {
		{ "next hop without a neighbour", "198.18.30.1", 1, NULL, LB_REASON_DROP_NO_NEIGH },
		{ "unreachable backend", "198.18.40.1", 1, NULL, LB_REASON_DROP_NO_ROUTE },
		{ "no IPv4 source", BACKEND4, 0, NULL, LB_REASON_DROP_NO_ROUTE },
		{ "forwarding off", BACKEND4, 1, "sysctl -qw net.ipv4.conf.e0.forwarding=0",
		  LB_REASON_DROP_NO_FORWARDING },
	};
	unsigned char out[PKT_MAX];
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	size_t i, out_len;
	struct pkt in;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 id = vip_to(VIP_V4_TCP, LB_FAMILY_IPV4, cases[i].backend, LB_FORWARD_IPIP);

		flows_clear();
		config_set(cases[i].sources);
		if (cases[i].sysctl)
			check(sh(cases[i].sysctl) == 0, "%s", cases[i].sysctl);
		inner_frame(&in, LB_FAMILY_IPV4, (uint16_t)(40300 + i));
		reasons_snapshot(before);
		check_eq(run_on_e0(&in, out, &out_len), XDP_DROP);
		reasons_snapshot(after);
		check(after[cases[i].reason] - before[cases[i].reason] == 1, "%s: not counted as %s",
		      cases[i].name, lb_reasons[cases[i].reason].name);
		if (cases[i].sysctl)
			sh("sysctl -qw net.ipv4.conf.e0.forwarding=1");
		vip_empty(VIP_V4_TCP, id);
	}
	config_set(1);
}

/* An ICMP error about a VIP flow goes encapsulated to the flow's backend. */
static void test_icmp_error_is_encapsulated_to_its_flow(void **state)
{
	unsigned char out[PKT_MAX];
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	size_t out_len;
	struct pkt flow, icmp;
	__u32 id;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	config_set(1);
	id = vip_to(VIP_V4_TCP, LB_FAMILY_IPV4, BACKEND4, LB_FORWARD_IPIP);
	inner_frame(&flow, LB_FAMILY_IPV4, 41000);
	check_eq(run_on_e0(&flow, out, &out_len), XDP_TX);
	icmp_frag_needed_for_vip_flow(&icmp);
	reasons_snapshot(before);
	check_eq(run_on_e0(&icmp, out, &out_len), XDP_TX);
	reasons_snapshot(after);
	check_eq(after[LB_REASON_FORWARDED_ICMP] - before[LB_REASON_FORWARDED_ICMP], 1);
	check_eq(out[14 + 9], 4);
	check_eq(out_len, 14 + 20 + icmp.len - icmp.l3);
	check(memcmp(out + 34, icmp.data + icmp.l3, icmp.len - icmp.l3) == 0,
	      "the ICMP error changed");
	vip_empty(VIP_V4_TCP, id);
}

static int encap_setup(void **state)
{
	(void)state;
	if (skip_reason)
		return 0;
	ifindex = harness_net_enter();
	return ifindex > 0 ? 0 : -1;
}

/* Every CPU's ICMP budget whole again: its bucket's time zero. */
static void icmp_budget_reset(void)
{
	int cpus = libbpf_num_possible_cpus();
	struct lb_icmp_budget *zero;
	__u32 key = 0;

	check(cpus > 0, "possible CPUs: %d", cpus);
	zero = calloc((size_t)cpus, sizeof(*zero));
	check(zero != NULL, "memory");
	check(bpf_map_update_elem(maps->icmp_budget, &key, zero, BPF_ANY) == 0,
	      "reset the ICMP budget: %s", strerror(errno));
	free(zero);
}

/* Send @n oversize DF packets of @family: how many got their ICMP error (XDP_TX). */
static int too_big_answered(int family, int n, __u64 *refused)
{
	unsigned char out[PKT_MAX];
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	size_t out_len;
	struct pkt in;
	int i, tx = 0, rc;

	inner_frame(&in, family, 40300);
	inner_grow(&in, family, 1500);
	reasons_snapshot(before);
	for (i = 0; i < n; i++) {
		rc = run_on_e0(&in, out, &out_len);
		check(rc == XDP_TX || rc == XDP_DROP, "packet %d: action %d", i, rc);
		tx += rc == XDP_TX;
	}
	reasons_snapshot(after);
	check_eq(after[LB_REASON_FORWARDED_TOO_BIG] - before[LB_REASON_FORWARDED_TOO_BIG],
		 (__u64)tx);
	*refused = after[LB_REASON_DROP_ICMP_RATE] - before[LB_REASON_DROP_ICMP_RATE];
	return tx;
}

/*
 * ICMP errors go within the CPU's budget: a burst, then one per interval;
 * past it the packet is dropped and counted (drop_icmp_rate), both
 * families drawing on one budget.
 */
static void test_icmp_errors_stay_within_the_cpu_budget(void **state)
{
	struct lb_config c = { .gue_port = htons(GUE_PORT) };
	__u32 id4, id6;
	__u64 refused;
	__u8 a[16];

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pkt_addr(LB_FAMILY_IPV4, SOURCE4, a);
	memcpy(c.source4, a, 4);
	pkt_addr(LB_FAMILY_IPV6, SOURCE6, c.source6);
	id4 = vip_to(VIP_V4_TCP, LB_FAMILY_IPV4, BACKEND4, LB_FORWARD_GUE);
	id6 = vip_to(VIP_V6_TCP, LB_FAMILY_IPV6, BACKEND6, LB_FORWARD_IPIP);

	/* A burst of 3 and no refill to speak of (one error per 4 s): 3 of 10 answered. */
	c.icmp_interval_ns = 4000000000u;
	c.icmp_burst = 3;
	check(lb_config_write(maps, &c) == 0, "write the settings");
	icmp_budget_reset();
	check_eq(too_big_answered(LB_FAMILY_IPV4, 10, &refused), 3);
	check_eq(refused, 7);
	/* The same budget for IPv6: spent. */
	check_eq(too_big_answered(LB_FAMILY_IPV6, 5, &refused), 0);
	check_eq(refused, 5);

	/* A burst of 1 refilled every 20 ms: one now, none right after, one 60 ms later. */
	c.icmp_interval_ns = 20000000u;
	c.icmp_burst = 1;
	check(lb_config_write(maps, &c) == 0, "write the settings");
	icmp_budget_reset();
	check_eq(too_big_answered(LB_FAMILY_IPV6, 2, &refused), 1);
	check_eq(refused, 1);
	usleep(60000);
	check_eq(too_big_answered(LB_FAMILY_IPV4, 1, &refused), 1);
	check_eq(refused, 0);

	/* Interval 0, a config never written: no limit. */
	config_set(1);
	check_eq(too_big_answered(LB_FAMILY_IPV4, 20, &refused), 20);
	check_eq(refused, 0);
	vip_empty(VIP_V4_TCP, id4);
	vip_empty(VIP_V6_TCP, id6);
}

/* Encapsulated packets so far whose next hop came from the cache (@looked_up 0) or the FIB. */
static __u64 next_hops_counted(int looked_up)
{
	return harness_percpu_sum(maps->next_hop_stats, 0, 2, looked_up ? 1 : 0);
}

/* Past LB_NEXT_HOP_TTL_NS on the coarse clock (a tick of up to 10 ms more). */
static void next_hop_ttl_wait(void)
{
	usleep((useconds_t)(LB_NEXT_HOP_TTL_NS / 1000 + 20000));
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/*
 * The next hop a CPU cached (map next_hops) sends what the FIB sent, byte
 * for byte, until LB_NEXT_HOP_TTL_NS has passed: then a neighbour's new MAC,
 * and a path MTU made smaller, reach the packets. A packet longer than any
 * the FIB let through asks the FIB.
 */
static void test_a_cached_next_hop_follows_the_fib_within_its_time(void **state)
{
	static const struct encap_case c = { "ipip 4 in 4", LB_FAMILY_IPV4, LB_FAMILY_IPV4,
					     LB_FORWARD_IPIP };
	static const __u8 moved_mac[6] = { 2, 0, 0, 0, 0x11, 0x77 };
	unsigned char first[PKT_MAX], out[PKT_MAX];
	size_t first_len, out_len;
	__u64 cached, looked_up;
	struct pkt in, big;
	double t0;
	__u32 id;

	(void)state;
	NEEDS_ROOT();
	/* Each CPU keeps its own entries: every frame of the test runs on one. */
	harness_cpu_pin();
	flows_clear();
	config_set(1);
	id = vip_to(VIP_V4_TCP, LB_FAMILY_IPV4, BACKEND4, LB_FORWARD_IPIP);
	inner_frame(&in, LB_FAMILY_IPV4, 40300);
	big = in;
	inner_grow(&big, LB_FAMILY_IPV4, 1400);

	/* The first packet asks the FIB, the next ones the cache, with the same bytes. */
	looked_up = next_hops_counted(1);
	cached = next_hops_counted(0);
	check_eq(run_on_e0(&in, first, &first_len), XDP_TX);
	encap_check(&c, &in, first, first_len);
	check_eq(next_hops_counted(1) - looked_up, 1);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check_eq(next_hops_counted(0) - cached, 2);
	check(out_len == first_len && memcmp(out, first, out_len) == 0,
	      "the cached next hop's frame differs from the FIB's");
	/* Longer than any the FIB let through: the FIB again, then the cache takes it too. */
	check_eq(run_on_e0(&big, out, &out_len), XDP_TX);
	encap_check(&c, &big, out, out_len);
	check_eq(next_hops_counted(1) - looked_up, 2);
	check_eq(run_on_e0(&big, out, &out_len), XDP_TX);
	check_eq(next_hops_counted(0) - cached, 3);

	/* The next hop moves to another MAC: the cache may send to the old one for its time. */
	t0 = now_ms();
	check(sh("ip neigh replace 198.18.11.1 lladdr 02:00:00:00:11:77 dev e0 nud permanent") == 0,
	      "move the neighbour");
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	if (now_ms() - t0 < LB_NEXT_HOP_TTL_NS / 2e6)
		check(memcmp(out, next_hop_mac, 6) == 0, "within its time, not the cached MAC");
	next_hop_ttl_wait();
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check(memcmp(out, moved_mac, 6) == 0, "after its time, not the neighbour's new MAC");

	/* The path MTU falls to 1300: after the time, the long packet gets the error. */
	check(sh("ip neigh replace 198.18.11.1 lladdr 02:00:00:00:11:01 dev e0 nud permanent") == 0 &&
		      sh("ip route replace default via 198.18.11.1 mtu lock 1300") == 0,
	      "lower the path MTU");
	next_hop_ttl_wait();
	check_eq(run_on_e0(&big, out, &out_len), XDP_TX);
	check_eq(out_len, 14 + 20 + 8 + LB_ICMP_QUOTE_MAX);
	check_eq(out[23], 1); /* ICMP */
	check_eq(be16(out + 40), 1300 - 20);
	check_eq(run_on_e0(&in, out, &out_len), XDP_TX);
	check(out_len == first_len && memcmp(out, first, out_len) == 0,
	      "a short packet after the MTU change differs from the FIB's first answer");
	check(sh("ip route replace default via 198.18.11.1") == 0, "restore the route");
	harness_cpu_unpin();
	vip_empty(VIP_V4_TCP, id);
}

static int encap_teardown(void **state)
{
	(void)state;
	harness_net_leave();
	return 0;
}

HARNESS_GROUP(encap,
	cmocka_unit_test_setup(test_every_encapsulation_is_right_byte_by_byte, encap_setup),
	cmocka_unit_test(test_padding_and_tag_are_left_behind),
	cmocka_unit_test(test_too_big_gets_the_icmp_error_that_fits),
	cmocka_unit_test(test_icmp_errors_stay_within_the_cpu_budget),
	cmocka_unit_test(test_no_route_no_neighbour_no_forwarding_drop_with_reasons),
	cmocka_unit_test(test_a_cached_next_hop_follows_the_fib_within_its_time),
	cmocka_unit_test_teardown(test_icmp_error_is_encapsulated_to_its_flow, encap_teardown));
