// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the program does with a frame: a forwarded frame differs from the
 * one it got only in its MACs; what is not a VIP's passes untouched; every
 * malformed or unusual frame gets its documented verdict and reason (one
 * table); an ICMP error follows the flow it quotes.
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

#include "prog.h"


/* --- the frame ------------------------------------------------------------------- */

static void test_forwarded_frame_differs_only_in_macs(void **state)
{
	static const struct pkt_spec specs[] = {
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40000, .dport = VIP_TCP_PORT },
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40000, .dport = VIP_UDP_PORT },
		{ .family = LB_FAMILY_IPV6, .protocol = IPPROTO_TCP, .src = "2001:db8:c::1",
		  .dst = V6_VIP, .sport = 40000, .dport = VIP_TCP_PORT },
		{ .family = LB_FAMILY_IPV6, .protocol = IPPROTO_UDP, .src = "2001:db8:c::1",
		  .dst = V6_VIP, .sport = 40000, .dport = VIP_UDP_PORT },
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40001, .dport = VIP_TCP_PORT, .vlan = 7 },
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40002, .dport = VIP_TCP_PORT, .ipv4_option_words = 3 },
		{ .family = LB_FAMILY_IPV6, .protocol = IPPROTO_TCP, .src = "2001:db8:c::1",
		  .dst = V6_VIP, .sport = 40003, .dport = VIP_TCP_PORT, .ipv6_hopopts = 1 },
	};
	static const char *const what[] = {
		"IPv4 TCP", "IPv4 UDP", "IPv6 TCP", "IPv6 UDP", "VLAN-tagged IPv4 TCP",
		"IPv4 with options", "IPv6 with hop-by-hop options",
	};
	struct pool pools[4];
	size_t i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	for (i = 0; i < 4; i++)
		pool_install(&pools[i], VIP_V4_TCP + (int)i, ring_weighted(10, 3, NULL, "frame"));
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		int vip = specs[i].family == LB_FAMILY_IPV4 ? VIP_V4_TCP : VIP_V6_TCP;
		struct pkt pkt;
		__u32 got;

		if (specs[i].protocol == IPPROTO_UDP)
			vip++;
		pkt_build(&pkt, &specs[i]);
		got = forward(&pkt); /* checks the MACs and every other byte */
		check(got == expected_backend(&pools[vip - VIP_V4_TCP], &specs[i]),
		      "%s frame went to backend %u, not the ring's", what[i], got);
	}
	for (i = 0; i < 4; i++)
		pool_release(&pools[i]);
}

/* --- what is not ours, or not parseable ----------------------------------------- */

static void test_non_vip_traffic_passes_untouched(void **state)
{
	static const struct pkt_spec specs[] = {
		/* Another address, another port, another protocol on a VIP address. */
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = "198.18.1.1",
		  .dst = V4_NOT_VIP, .sport = 40000, .dport = 80 },
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40000, .dport = 22 },
		{ .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP, .src = "198.18.1.1",
		  .dst = V4_VIP, .sport = 40000, .dport = VIP_TCP_PORT },
		{ .family = LB_FAMILY_IPV6, .protocol = IPPROTO_TCP, .src = "2001:db8:c::1",
		  .dst = "2001:db8::200", .sport = 40000, .dport = 80 },
	};
	unsigned char out[PKT_MAX];
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	size_t i, out_len;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct pkt pkt;
		__u32 verdict;

		pkt_build(&pkt, &specs[i]);
		reasons_snapshot(before);
		verdict = run_frame(pkt.data, pkt.len, out, &out_len);
		reasons_snapshot(after);
		check_eq(verdict, XDP_PASS);
		check_eq(out_len, pkt.len);
		check(memcmp(out, pkt.data, pkt.len) == 0, "non-VIP frame %zu was modified", i);
		check_eq(after[LB_REASON_PASS_NOT_VIP] - before[LB_REASON_PASS_NOT_VIP], 1);
	}
}

/* One row of the malformed-input table: a frame, the verdict, the reason. */
struct malformed_case {
	const char *name;
	void (*make)(struct pkt *pkt);
	__u32 verdict;
	__u32 reason;
};

/* The table's frames all come from one client, port 41000. */
static void table_frame(struct pkt *p, int family, uint8_t protocol, const char *dst,
			uint16_t dport, uint16_t vlan, uint8_t option_words, int hopopts)
{
	struct pkt_spec s = { .family = family, .protocol = protocol,
			      .src = family == LB_FAMILY_IPV4 ? "198.18.1.9" : "2001:db8:c::9",
			      .dst = dst, .sport = 41000, .dport = dport, .vlan = vlan,
			      .ipv4_option_words = option_words, .ipv6_hopopts = hopopts };

	pkt_build(p, &s);
}

static void v4_tcp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 0, 0, 0);
}

static void v4_udp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_UDP, V4_VIP, VIP_UDP_PORT, 0, 0, 0);
}

static void v6_tcp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV6, IPPROTO_TCP, V6_VIP, VIP_TCP_PORT, 0, 0, 0);
}

static void cut_in_vlan(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 5, 0, 0);
	p->len = 14 + 2;
}

static void stacked_vlan(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 5, 0, 0);
	/* The inner EtherType becomes a second tag. */
	p->data[16] = 0x81;
	p->data[17] = 0x00;
}

static void arp(struct pkt *p)
{
	v4_tcp(p);
	p->data[12] = 0x08;
	p->data[13] = 0x06;
}

static void cut_in_ipv4(struct pkt *p) { v4_tcp(p); p->len = p->l3 + 19; }
static void cut_in_ipv4_options(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 0, 3, 0);
	p->len = p->l3 + 20 + 8; /* 12 bytes of options announced, 8 present */
}
static void ipv4_ihl_4(struct pkt *p) { v4_tcp(p); p->data[p->l3] = 0x44; pkt_ipv4_checksum(p); }
static void ipv4_version_5(struct pkt *p) { v4_tcp(p); p->data[p->l3] = 0x55; }
static void ipv4_total_too_long(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 2] = 0x05; /* 1,280 bytes announced */
	p->data[p->l3 + 3] = 0x00;
	pkt_ipv4_checksum(p);
}
static void ipv4_total_below_header(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 2] = 0;
	p->data[p->l3 + 3] = 16;
	pkt_ipv4_checksum(p);
}
static void ipv4_more_fragments(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 6] = 0x20; /* MF */
	pkt_ipv4_checksum(p);
}
static void ipv4_later_fragment(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 6] = 0x00;
	p->data[p->l3 + 7] = 0x10; /* offset 128 bytes */
	pkt_ipv4_checksum(p);
}
static void ipv4_gre(struct pkt *p) { v4_tcp(p); p->data[p->l3 + 9] = 47; pkt_ipv4_checksum(p); }
/* Cut the frame and make the IPv4 total length agree, so only L4 is short. */
static void cut_ipv4_at(struct pkt *p, size_t len)
{
	p->len = len;
	p->data[p->l3 + 2] = (unsigned char)((len - p->l3) >> 8);
	p->data[p->l3 + 3] = (unsigned char)(len - p->l3);
	pkt_ipv4_checksum(p);
}
static void cut_in_tcp(struct pkt *p) { v4_tcp(p); cut_ipv4_at(p, p->l4 + 19); }
static void tcp_doff_4(struct pkt *p) { v4_tcp(p); p->data[p->l4 + 12] = 4 << 4; }
static void cut_in_udp(struct pkt *p) { v4_udp(p); cut_ipv4_at(p, p->l4 + 7); }
static void udp_len_7(struct pkt *p) { v4_udp(p); p->data[p->l4 + 4] = 0; p->data[p->l4 + 5] = 7; }
static void cut_in_ipv6(struct pkt *p) { v6_tcp(p); p->len = p->l3 + 39; }
static void ipv6_version_4(struct pkt *p) { v6_tcp(p); p->data[p->l3] = 0x40; }
static void ipv6_payload_too_long(struct pkt *p) { v6_tcp(p); p->data[p->l3 + 4] = 0x05; }
static void ipv6_payload_zero(struct pkt *p)
{
	v6_tcp(p);
	p->data[p->l3 + 4] = 0;
	p->data[p->l3 + 5] = 0;
}
static void ipv6_next(struct pkt *p, unsigned char next)
{
	/* Turn the TCP header's first 8 bytes into an extension header. */
	v6_tcp(p);
	p->data[p->l3 + 6] = next;
	p->data[p->l4] = IPPROTO_TCP;
	p->data[p->l4 + 1] = 0;
}
static void ipv6_fragment_header(struct pkt *p) { ipv6_next(p, 44); }
static void ipv6_esp(struct pkt *p) { ipv6_next(p, 50); }
static void ipv6_five_extensions(struct pkt *p)
{
	size_t i, at;

	v6_tcp(p);
	p->data[p->l3 + 6] = 60; /* destination options, five times */
	at = p->l4;
	memmove(p->data + at + 40, p->data + at, p->len - at);
	for (i = 0; i < 5; i++) {
		p->data[at + 8 * i] = i < 4 ? 60 : IPPROTO_TCP;
		p->data[at + 8 * i + 1] = 0;
		memset(p->data + at + 8 * i + 2, 0, 6);
		p->data[at + 8 * i + 2] = 1; /* PadN */
		p->data[at + 8 * i + 3] = 4;
	}
	p->len += 40;
	p->data[p->l3 + 5] = (unsigned char)(p->data[p->l3 + 5] + 40);
}
static void cut_in_ipv6_extension(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV6, IPPROTO_TCP, V6_VIP, VIP_TCP_PORT, 0, 0, 1);
	p->len = p->l3 + 40 + 4;
	p->data[p->l3 + 4] = 0;
	p->data[p->l3 + 5] = 4;
}
static void empty_ring_vip(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP_EMPTY, VIP_TCP_PORT, 0, 0, 0);
}
static void no_ring_vip(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP_NO_RING, VIP_TCP_PORT, 0, 0, 0);
}

/* ICMP echo request to the VIP address. */
static void icmp_echo(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 9] = IPPROTO_ICMP;
	memset(p->data + p->l4, 0, 8);
	p->data[p->l4] = 8;
	pkt_ipv4_checksum(p);
}

static void icmp_frag_needed_for_other(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV4, 3, 4, V4_NOT_VIP, VIP_TCP_PORT, 41000);
}
static void icmp6_too_big_for_vip_flow(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV6, 2, 0, V6_VIP, VIP_TCP_PORT, 41000);
}
static void icmp_error_cut_quote(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	p->len -= 6; /* the quoted ports are cut */
	p->data[p->l3 + 3] = (unsigned char)(p->data[p->l3 + 3] - 6);
	pkt_ipv4_checksum(p);
}

/*
 * Lengths the IP header states, shorter than the frame: what lies past them
 * is Ethernet padding, not the packet (RFC 791 total length, RFC 8200
 * payload length), and a header read there must not count.
 */
static void set_ipv4_total(struct pkt *p, size_t total)
{
	p->data[p->l3 + 2] = (unsigned char)(total >> 8);
	p->data[p->l3 + 3] = (unsigned char)total;
	pkt_ipv4_checksum(p);
}
static void set_ipv6_payload(struct pkt *p, size_t payload)
{
	p->data[p->l3 + 4] = (unsigned char)(payload >> 8);
	p->data[p->l3 + 5] = (unsigned char)payload;
}
static void ipv4_tcp_in_padding(struct pkt *p) { v4_tcp(p); set_ipv4_total(p, 20); }
static void ipv4_tcp_cut_by_length(struct pkt *p) { v4_tcp(p); set_ipv4_total(p, 20 + 12); }
static void tcp_doff_past_segment(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l4 + 12] = 15 << 4; /* 60 bytes of header in a 52-byte segment */
}
static void udp_len_past_payload(struct pkt *p)
{
	v4_udp(p);
	p->data[p->l4 + 4] = 0;
	p->data[p->l4 + 5] = 8 + PKT_PAYLOAD + 1;
}
static void ipv6_tcp_in_padding(struct pkt *p) { v6_tcp(p); set_ipv6_payload(p, 4); }
static void icmp_quote_cut_by_length(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	/* The frame keeps the whole quote; the IPv4 length ends it before the ports. */
	set_ipv4_total(p, p->len - p->l3 - 6);
}
static void icmp_error_to_another_address(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	/* Outer destination 198.18.0.200: not the VIP the quoted packet came from. */
	p->data[p->l3 + 19] = 200;
	pkt_ipv4_checksum(p);
}

static const struct malformed_case malformed_cases[] = {
	{ "frame cut inside its VLAN tag", cut_in_vlan, XDP_PASS, LB_REASON_PASS_TRUNC_VLAN },
	{ "two stacked VLAN tags", stacked_vlan, XDP_PASS, LB_REASON_PASS_VLAN_STACKED },
	{ "ARP", arp, XDP_PASS, LB_REASON_PASS_NOT_IP },
	{ "frame cut inside its IPv4 header", cut_in_ipv4, XDP_PASS, LB_REASON_PASS_TRUNC_IP },
	{ "frame cut inside its IPv4 options", cut_in_ipv4_options, XDP_PASS,
	  LB_REASON_PASS_TRUNC_IP },
	{ "IPv4 IHL of 4", ipv4_ihl_4, XDP_PASS, LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 version 5", ipv4_version_5, XDP_PASS, LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 total length past the frame", ipv4_total_too_long, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 total length below the header", ipv4_total_below_header, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 first fragment (MF)", ipv4_more_fragments, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "IPv4 later fragment", ipv4_later_fragment, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "GRE to a VIP address", ipv4_gre, XDP_PASS, LB_REASON_PASS_NOT_VIP },
	{ "frame cut inside its TCP header", cut_in_tcp, XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "TCP data offset of 4", tcp_doff_4, XDP_PASS, LB_REASON_PASS_BAD_L4 },
	{ "frame cut inside its UDP header", cut_in_udp, XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "UDP length of 7", udp_len_7, XDP_PASS, LB_REASON_PASS_BAD_L4 },
	{ "frame cut inside its IPv6 header", cut_in_ipv6, XDP_PASS, LB_REASON_PASS_TRUNC_IP },
	{ "IPv6 EtherType with version 4", ipv6_version_4, XDP_PASS, LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 payload length past the frame", ipv6_payload_too_long, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 payload length 0 (jumbogram)", ipv6_payload_zero, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 fragment header", ipv6_fragment_header, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "IPv6 ESP", ipv6_esp, XDP_PASS, LB_REASON_PASS_IPV6_EXT },
	{ "IPv6 with five extension headers", ipv6_five_extensions, XDP_PASS,
	  LB_REASON_PASS_IPV6_EXT },
	{ "frame cut inside an IPv6 extension header", cut_in_ipv6_extension, XDP_PASS,
	  LB_REASON_PASS_TRUNC_IPV6_EXT },
	{ "ICMP echo to a VIP address", icmp_echo, XDP_PASS, LB_REASON_PASS_ICMP },
	{ "ICMP fragmentation needed about a VIP flow", icmp_frag_needed_for_vip_flow, XDP_TX,
	  LB_REASON_FORWARDED_ICMP },
	{ "ICMPv6 packet too big about a VIP flow", icmp6_too_big_for_vip_flow, XDP_TX,
	  LB_REASON_FORWARDED_ICMP },
	{ "ICMP fragmentation needed about another host", icmp_frag_needed_for_other, XDP_PASS,
	  LB_REASON_PASS_ICMP },
	{ "ICMP error whose quote is cut", icmp_error_cut_quote, XDP_PASS, LB_REASON_PASS_ICMP },
	{ "IPv4 total length 20, a TCP header in the Ethernet padding", ipv4_tcp_in_padding,
	  XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "IPv4 total length ending inside the TCP header", ipv4_tcp_cut_by_length, XDP_PASS,
	  LB_REASON_PASS_TRUNC_L4 },
	{ "TCP data offset past the IPv4 payload", tcp_doff_past_segment, XDP_PASS,
	  LB_REASON_PASS_BAD_L4 },
	{ "UDP length past the IPv4 payload", udp_len_past_payload, XDP_PASS,
	  LB_REASON_PASS_BAD_L4 },
	{ "IPv6 payload length 4, a TCP header in the Ethernet padding", ipv6_tcp_in_padding,
	  XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "ICMP error whose IPv4 length ends inside the quote", icmp_quote_cut_by_length, XDP_PASS,
	  LB_REASON_PASS_ICMP },
	{ "ICMP error about a VIP flow sent to another address", icmp_error_to_another_address,
	  XDP_PASS, LB_REASON_PASS_ICMP },
	{ "TCP to a VIP whose ring is empty", empty_ring_vip, XDP_DROP,
	  LB_REASON_DROP_NO_BACKEND },
	{ "TCP to a VIP with no ring", no_ring_vip, XDP_DROP, LB_REASON_DROP_NO_RING },
};

static void test_malformed_and_unusual_frames_get_documented_verdicts(void **state)
{
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	struct pool pools[4];
	size_t i;
	int wrong = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	for (i = 0; i < 4; i++)
		pool_install(&pools[i], VIP_V4_TCP + (int)i, ring_weighted(10, 3, NULL, "table"));
	for (i = 0; i < sizeof(malformed_cases) / sizeof(malformed_cases[0]); i++) {
		const struct malformed_case *mc = &malformed_cases[i];
		unsigned char out[PKT_MAX];
		struct pkt pkt;
		size_t out_len;
		__u32 verdict, r, counted;

		mc->make(&pkt);
		reasons_snapshot(before);
		verdict = run_frame(pkt.data, pkt.len, out, &out_len);
		reasons_snapshot(after);
		counted = LB_REASON_COUNT;
		for (r = 0; r < LB_REASON_COUNT; r++)
			if (after[r] != before[r])
				counted = after[r] - before[r] == 1 && counted == LB_REASON_COUNT ?
						  r : LB_REASON_COUNT + 1;
		/* Every row is tried, so one run names every row that is wrong. */
		if (verdict != mc->verdict || counted != mc->reason ||
		    (verdict == XDP_PASS && (out_len != pkt.len || memcmp(out, pkt.data, pkt.len)))) {
			print_error("%s: verdict %u reason %u, documented verdict %u reason %u%s\n",
				    mc->name, verdict, counted, mc->verdict, mc->reason,
				    verdict == XDP_PASS ? " (or the passed frame was modified)" : "");
			wrong++;
		}
	}
	check(wrong == 0, "%d of %zu frames did not get their documented verdict and reason", wrong,
	      sizeof(malformed_cases) / sizeof(malformed_cases[0]));
	for (i = 0; i < 4; i++)
		pool_release(&pools[i]);
}

/* The ICMP error reaches the backend of the flow it quotes. */
static void test_icmp_error_follows_the_quoted_flow(void **state)
{
	struct pkt_spec flow = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
				 .src = "198.18.1.9", .dst = V4_VIP, .sport = 41000,
				 .dport = VIP_TCP_PORT };
	struct pool pool;
	struct pkt pkt, icmp;
	__u32 flow_backend;
	int i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 8, NULL, "icmp"));
	pkt_build(&pkt, &flow);
	flow_backend = forward(&pkt);
	for (i = 0; i < 8; i++) {
		icmp_frag_needed_for_vip_flow(&icmp);
		check(forward(&icmp) == flow_backend, "ICMP error went elsewhere than its flow");
	}
	pool_release(&pool);
}

HARNESS_GROUP(frames,
	cmocka_unit_test(test_forwarded_frame_differs_only_in_macs),
	cmocka_unit_test(test_non_vip_traffic_passes_untouched),
	cmocka_unit_test(test_malformed_and_unusual_frames_get_documented_verdicts),
	cmocka_unit_test(test_icmp_error_follows_the_quoted_flow));
