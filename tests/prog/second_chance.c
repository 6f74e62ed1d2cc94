// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend side of a second chance, on crafted GUE frames with a hop
 * list and real sockets in the harness's network namespace: a SYN, a packet
 * of an established connection, a valid SYN cookie, anything not TCP and a
 * packet with no hop left are taken here; an ACK nobody here knows (no
 * socket, or a listener and no valid cookie) is sent on to the next hop with
 * its outer addresses rewritten, its next-hop index one further and the
 * next hop's MACs; malformed hop lists pass untouched. Each under its reason.
 *
 * The doors it keeps shut: an inner packet to an address that is not one
 * of the host's VIPs, a hop list longer than LB_HOPS_MAX - 1, a next hop
 * outside the --from prefixes or one of the host's own addresses are
 * dropped. Sent on, a frame is byte for byte what GLB's glb-redirect makes
 * of it (frames as GLB's director and its tests build them, non-zero UDP
 * checksums, the expected frame recomputed whole here): outer TTL kept,
 * UDP checksum updated (IPv4: zero stays zero; IPv6: always). An ICMP
 * error quoting a TCP packet follows the hop list like that connection's
 * packets: taken where the connection lives, sent on elsewhere.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "decap.h"
#include "decap.skel.h"
#include "prog.h"
#include "syncookie.skel.h"

#define PORT 8080
#define NEXT_HOP "198.18.13.12"
#define NEXT_HOP6 "2001:db8:13::12"
/* Outside every --from prefix of the test. */
#define NOT_PEER "198.18.40.9"
/* GLB's glb-redirect tests (tests/test_glb_redirect_v4_on_v4.py): this host and the others. */
#define GLB_PROXY "192.168.50.10"
#define GLB_ALT "192.168.50.11"
#define GLB_SELF "192.168.50.5"
#define GLB_VIP4 "10.10.10.10"
#define GLB_SELF6 "fd33:75c6:d3f2:7e9f::5"
#define GLB_VIP6 "fd2c:394c:33a3:26bf::1"

static struct decap_bpf *decap;
static int e0 = -1, listener = -1, client = -1, server = -1;
static uint16_t client_port;

static void put16(unsigned char *p, unsigned int v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* The hops gue_frame() writes: the harness's next hop, unless a test says otherwise. */
static const char *hop_addr = NEXT_HOP;
/* The inner destination gue_frame() writes: the listener's (a VIP of the test). */
static uint32_t inner_dst = 0x7f000001;

/*
 * A GUE frame from the balancer to this host carrying an IPv4 TCP packet
 * 127.0.0.1:@sport -> 127.0.0.1:@dport with @flags, @seq and @ack, with a
 * hop list of @hops (NEXT_HOP each) whose next-hop index is @next, and
 * @hlen words of options as written (to build malformed ones).
 */
static void gue_frame(struct pkt *p, uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
		      uint32_t ack, int proto, int hops, int next, int hlen)
{
	uint8_t gue[160] = { (uint8_t)hlen, 4, 0, 0, 0, 0, (uint8_t)next, (uint8_t)hops };
	struct pkt_encap e = { .family = LB_FAMILY_IPV4, .src = HARNESS_SOURCE4,
			       .dst = HARNESS_DECAP_LOCAL4, .proto = IPPROTO_UDP,
			       .dport = LB_GUE_PORT_DEFAULT, .gue = gue,
			       .gue_len = 4 + (size_t)hlen * 4 };
	size_t len = 20 + (proto == IPPROTO_TCP ? 20 : 8);
	struct pkt in = { .l3 = 0, .len = len };
	unsigned char *d = in.data;
	int i;

	for (i = 0; i < hops && 8 + (size_t)i * 4 + 4 <= e.gue_len; i++) {
		uint8_t a[16];

		pkt_addr(LB_FAMILY_IPV4, hop_addr, a);
		memcpy(gue + 8 + i * 4, a, 4);
	}
	d[0] = 0x45;
	put16(d + 2, (unsigned int)len);
	d[8] = 64;
	d[9] = (unsigned char)proto;
	put32(d + 12, 0x7f000001);
	put32(d + 16, inner_dst);
	put16(d + 20, sport);
	put16(d + 22, dport);
	if (proto == IPPROTO_TCP) {
		put32(d + 24, seq);
		put32(d + 28, ack);
		d[32] = 5 << 4;
		d[33] = flags;
		put16(d + 34, 65535);
	} else {
		put16(d + 24, 8);
	}
	/* The inner header's checksum too: the stack checks it. */
	pkt_ipv4_checksum(&in);
	pkt_build_encap(p, &e, &in);
}

/* The frame's verdict and the reason it was counted under. */
static __u32 decap_run(const struct pkt *p, unsigned char *out, size_t *out_len, __u32 *reason)
{
	__u64 before[LB_DECAP_REASON_COUNT];
	__u32 r, verdict;
	int fd = bpf_map__fd(decap->maps.decap_stats);

	for (r = 0; r < LB_DECAP_REASON_COUNT; r++)
		before[r] = harness_percpu_sum(fd, r, 2, 0);
	verdict = harness_run_on(bpf_program__fd(decap->progs.ringlb_decap), e0, p->data, p->len,
				 out, out_len);
	*reason = LB_DECAP_REASON_COUNT;
	for (r = 0; r < LB_DECAP_REASON_COUNT; r++)
		if (harness_percpu_sum(fd, r, 2, 0) != before[r])
			*reason = r;
	return verdict;
}

/* One key of a decap set: @len 0 for the hashes, 32 + the prefix's length for decap_from. */
static int set_add(struct bpf_map *map, int family, const char *text, __u32 len)
{
	struct lb_decap_from_key k = { .prefixlen = len, .family = (__u8)family };
	__u8 a[16], one = 1;

	pkt_addr(family, text, a);
	memcpy(k.addr, a, family == LB_FAMILY_IPV4 ? 4 : 16);
	return bpf_map_update_elem(bpf_map__fd(map), &k, &one, BPF_ANY);
}

/*
 * The peers (the balancer and the other backends: hops may go there), the
 * loopback address the test's sockets listen on as a VIP, and GLB's test
 * network: its backends peers, this host GLB_PROXY, its VIPs.
 */
static int peers_add(void)
{
	static const struct {
		int family;
		const char *text;
	} vip_text[] = {
		{ LB_FAMILY_IPV4, HARNESS_DECAP_VIP4 }, { LB_FAMILY_IPV6, HARNESS_DECAP_VIP6 },
		{ LB_FAMILY_IPV4, "127.0.0.1" }, { LB_FAMILY_IPV4, GLB_VIP4 },
		{ LB_FAMILY_IPV6, GLB_VIP6 },
	};
	static const char *const self[] = { HARNESS_DECAP_LOCAL4, HARNESS_DECAP_LOCAL6, GLB_PROXY };
	struct bpf_map *from = decap->maps.decap_from;
	struct addr vips[5];
	size_t i;

	for (i = 0; i < 5; i++) {
		memset(&vips[i], 0, sizeof(vips[i]));
		vips[i].family = vip_text[i].family;
		pkt_addr(vip_text[i].family, vip_text[i].text, vips[i].bytes);
	}
	return decap_vips_set(bpf_map__fd(decap->maps.decap_vip), vips, 5) ||
	       set_add(from, LB_FAMILY_IPV4, "198.18.13.0", 32 + 24) ||
	       set_add(from, LB_FAMILY_IPV4, "198.18.11.0", 32 + 24) ||
	       set_add(from, LB_FAMILY_IPV6, "2001:db8:13::", 32 + 64) ||
	       set_add(from, LB_FAMILY_IPV4, "192.168.50.0", 32 + 24) ||
	       harness_decap_self(decap, self, 3);
}

static int second_chance_setup(void **state)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(PORT),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);

	(void)state;
	if (skip_reason)
		return 0;
	e0 = harness_net_enter();
	decap = harness_decap_open();
	if (e0 < 0 || !decap || system("sysctl -qw net.ipv4.tcp_syncookies=2") || peers_add())
		return -1;
	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || client < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(listener, 16) || connect(client, (struct sockaddr *)&addr, sizeof(addr)))
		return -1;
	server = accept(listener, NULL, NULL);
	if (server < 0 || getsockname(client, (struct sockaddr *)&addr, &len))
		return -1;
	client_port = ntohs(addr.sin_port);
	return 0;
}

static int second_chance_teardown(void **state)
{
	(void)state;
	if (server >= 0)
		close(server);
	if (client >= 0)
		close(client);
	if (listener >= 0)
		close(listener);
	decap_bpf__destroy(decap);
	decap = NULL;
	harness_net_leave();
	return 0;
}

/* The SYN cookie the listener would answer a SYN from @sport with, and the SYN's sequence. */
static uint32_t cookie_for(uint16_t sport, uint32_t isn)
{
	struct syncookie_bpf *skel = syncookie_bpf__open_and_load();
	struct pkt syn;
	unsigned char in[PKT_MAX];
	uint32_t cookie;

	check(skel != NULL, "load the cookie program");
	gue_frame(&syn, sport, PORT, 0x02, isn, 0, IPPROTO_TCP, 0, 0, 1);
	/* The cookie program reads Ethernet + IPv4 + TCP: the inner packet behind a header. */
	memcpy(in, syn.data, 14);
	memcpy(in + 14, syn.data + syn.l4, syn.len - syn.l4);
	check_eq(harness_run_on(bpf_program__fd(skel->progs.gen_cookie), e0, in,
				14 + syn.len - syn.l4, NULL, NULL), XDP_PASS);
	cookie = skel->bss->cookie;
	syncookie_bpf__destroy(skel);
	return cookie;
}

static void test_backend_takes_what_is_its_own_and_sends_the_rest_on(void **state)
{
	struct {
		const char *name;
		uint16_t sport, dport;
		uint8_t flags;
		int proto, hops, next, hlen;
		__u32 verdict, reason;
	} cases[] = {
		{ "a SYN, at the first hop", 40001, PORT, 0x02, IPPROTO_TCP, 1, 0, 2, XDP_PASS,
		  LB_DECAP_DECAP_GUE },
		{ "the established connection's ACK", 0, PORT, 0x10, IPPROTO_TCP, 1, 0, 2, XDP_PASS,
		  LB_DECAP_DECAP_GUE },
		{ "an ACK of a connection unknown here", 40002, 9999, 0x10, IPPROTO_TCP, 1, 0, 2,
		  XDP_TX, LB_DECAP_FORWARD_NEXT_HOP },
		{ "an ACK to the listener, not a cookie", 40003, PORT, 0x10, IPPROTO_TCP, 1, 0, 2,
		  XDP_TX, LB_DECAP_FORWARD_NEXT_HOP },
		{ "an unknown ACK with no hop left", 40004, 9999, 0x10, IPPROTO_TCP, 1, 1, 2, XDP_PASS,
		  LB_DECAP_DECAP_SECOND_CHANCE },
		{ "the established connection's ACK at hop 1", 0, PORT, 0x10, IPPROTO_TCP, 2, 1, 3,
		  XDP_PASS, LB_DECAP_DECAP_SECOND_CHANCE },
		{ "UDP, at the first hop", 40005, 53, 0, IPPROTO_UDP, 1, 0, 2, XDP_PASS,
		  LB_DECAP_DECAP_GUE },
		{ "a hop list longer than hlen", 40006, 9999, 0x10, IPPROTO_TCP, 2, 0, 2, XDP_PASS,
		  LB_DECAP_PASS_BAD_GUE },
		{ "a next-hop index past the list", 40007, 9999, 0x10, IPPROTO_TCP, 1, 2, 2, XDP_PASS,
		  LB_DECAP_PASS_BAD_GUE },
		{ "an unknown ACK with LB_HOPS_MAX - 1 hops", 40008, 9999, 0x10, IPPROTO_TCP,
		  LB_HOPS_MAX - 1, 0, LB_HOPS_MAX, XDP_TX, LB_DECAP_FORWARD_NEXT_HOP },
		{ "an unknown ACK at the last of LB_HOPS_MAX - 1 hops", 40009, 9999, 0x10,
		  IPPROTO_TCP, LB_HOPS_MAX - 1, LB_HOPS_MAX - 2, LB_HOPS_MAX, XDP_TX,
		  LB_DECAP_FORWARD_NEXT_HOP },
		{ "an unknown ACK past LB_HOPS_MAX - 1 hops", 40010, 9999, 0x10, IPPROTO_TCP,
		  LB_HOPS_MAX - 1, LB_HOPS_MAX - 1, LB_HOPS_MAX, XDP_PASS,
		  LB_DECAP_DECAP_SECOND_CHANCE },
		{ "LB_HOPS_MAX hops: one too many", 40011, 9999, 0x10, IPPROTO_TCP, LB_HOPS_MAX, 0,
		  LB_HOPS_MAX + 1, XDP_DROP, LB_DECAP_DROP_HOPS_MAX },
		{ "a SYN with LB_HOPS_MAX hops", 40012, PORT, 0x02, IPPROTO_TCP, LB_HOPS_MAX, 0,
		  LB_HOPS_MAX + 1, XDP_DROP, LB_DECAP_DROP_HOPS_MAX },
		{ "30 hops, the most hlen can say", 40013, 9999, 0x10, IPPROTO_TCP, 30, 0, 31,
		  XDP_DROP, LB_DECAP_DROP_HOPS_MAX },
	};
	unsigned char out[PKT_MAX], a[16];
	size_t i, out_len;
	__u32 reason;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pkt p;
		__u32 verdict;

		gue_frame(&p, cases[i].sport ? cases[i].sport : client_port, cases[i].dport,
			  cases[i].flags, 1000, 2000, cases[i].proto, cases[i].hops, cases[i].next,
			  cases[i].hlen);
		verdict = decap_run(&p, out, &out_len, &reason);
		check(verdict == cases[i].verdict && reason == cases[i].reason,
		      "%s: verdict %u under %s, want %u under %s", cases[i].name, verdict,
		      reason < LB_DECAP_REASON_COUNT ? decap_reason_names[reason] : "none",
		      cases[i].verdict, decap_reason_names[cases[i].reason]);
		if (verdict != XDP_TX)
			continue;
		/* Sent on: the next hop's MACs, from this host to the hop, index one further. */
		check(memcmp(out, harness_next_hop_mac, 6) == 0 && memcmp(out + 6, harness_e0_mac, 6) == 0,
		      "%s: not the next hop's MACs", cases[i].name);
		pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, a);
		check(memcmp(out + 26, a, 4) == 0, "%s: outer source is not this host", cases[i].name);
		pkt_addr(LB_FAMILY_IPV4, NEXT_HOP, a);
		check(memcmp(out + 30, a, 4) == 0, "%s: outer destination is not the hop", cases[i].name);
		check_eq(out[42 + 6], cases[i].next + 1);
		check_eq(out_len, p.len);
		{
			unsigned long sum = 0;
			int w;

			for (w = 0; w < 20; w += 2)
				sum += (unsigned long)out[14 + w] << 8 | out[14 + w + 1];
			while (sum >> 16)
				sum = (sum & 0xffff) + (sum >> 16);
			check_eq(sum, 0xffff);
		}
	}
}

/* An ACK that completes a SYN cookie of this host's listener is this host's. */
static void test_a_valid_syn_cookie_is_taken_here(void **state)
{
	unsigned char out[PKT_MAX];
	uint32_t cookie;
	size_t out_len;
	__u32 reason;
	struct pkt p;

	(void)state;
	NEEDS_ROOT();
	cookie = cookie_for(40100, 5000);
	check(cookie != 0, "no cookie");
	gue_frame(&p, 40100, PORT, 0x10, 5001, cookie + 1, IPPROTO_TCP, 1, 0, 2);
	check_eq(decap_run(&p, out, &out_len, &reason), XDP_PASS);
	check(reason == LB_DECAP_DECAP_GUE, "a valid cookie went under %s",
	      decap_reason_names[reason]);
	/* The same ACK with another cookie (its hash bits changed) goes on. */
	gue_frame(&p, 40100, PORT, 0x10, 5001, (cookie ^ 0x00ff0000) + 1, IPPROTO_TCP, 1, 0, 2);
	check_eq(decap_run(&p, out, &out_len, &reason), XDP_TX);
}

/*
 * A hop on this host's own segment that it never spoke to has no neighbour
 * entry, and XDP cannot make one: the frame goes back to the MAC it came
 * from (the router), which routes it on, rather than being taken here.
 */
static void test_a_hop_without_neighbour_goes_back_to_the_router(void **state)
{
	unsigned char out[PKT_MAX], a[16];
	size_t out_len;
	__u32 reason;
	struct pkt p;

	(void)state;
	NEEDS_ROOT();
	hop_addr = "198.18.11.77"; /* on e0's subnet, no neighbour entry */
	gue_frame(&p, 40200, 9999, 0x10, 1000, 2000, IPPROTO_TCP, 1, 0, 2);
	hop_addr = NEXT_HOP;
	check_eq(decap_run(&p, out, &out_len, &reason), XDP_TX);
	check(reason == LB_DECAP_FORWARD_NEXT_HOP, "counted under %s",
	      decap_reason_names[reason]);
	check(memcmp(out, p.data + 6, 6) == 0 && memcmp(out + 6, p.data, 6) == 0,
	      "not sent back to the MAC it came from");
	pkt_addr(LB_FAMILY_IPV4, "198.18.11.77", a);
	check(memcmp(out + 30, a, 4) == 0, "outer destination is not the hop");
	check_eq(out[42 + 6], 1);
}

/* A next hop outside the peers, or this host itself, and an inner packet to no VIP: dropped. */
static void test_hops_to_strangers_and_packets_to_no_vip_are_dropped(void **state)
{
	static const struct {
		const char *name, *hop;
		uint32_t dst;
		uint8_t flags;
		int proto;
		__u32 reason;
	} cases[] = {
		{ "an unknown ACK, its hop outside the peers", NOT_PEER, 0x7f000001, 0x10,
		  IPPROTO_TCP, LB_DECAP_DROP_HOP_NOT_PEER },
		{ "an unknown ACK, its hop this host", HARNESS_DECAP_LOCAL4, 0x7f000001, 0x10,
		  IPPROTO_TCP, LB_DECAP_DROP_HOP_SELF },
		{ "a SYN to another backend", NEXT_HOP, 0xc6120d0c, 0x02, IPPROTO_TCP,
		  LB_DECAP_DROP_NOT_VIP },
		{ "an ACK to another backend", NEXT_HOP, 0xc6120d0c, 0x10, IPPROTO_TCP,
		  LB_DECAP_DROP_NOT_VIP },
		{ "UDP to another backend", NEXT_HOP, 0xc6120d0c, 0, IPPROTO_UDP,
		  LB_DECAP_DROP_NOT_VIP },
	};
	unsigned char out[PKT_MAX];
	size_t i, out_len;
	__u32 reason, verdict;
	struct pkt p;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hop_addr = cases[i].hop;
		inner_dst = cases[i].dst;
		gue_frame(&p, (uint16_t)(40400 + i), 9999, cases[i].flags, 1000, 2000, cases[i].proto,
			  1, 0, 2);
		hop_addr = NEXT_HOP;
		inner_dst = 0x7f000001;
		verdict = decap_run(&p, out, &out_len, &reason);
		check(verdict == XDP_DROP && reason == cases[i].reason,
		      "%s: verdict %u under %s, want %u under %s", cases[i].name, verdict,
		      reason < LB_DECAP_REASON_COUNT ? decap_reason_names[reason] : "none", XDP_DROP,
		      decap_reason_names[cases[i].reason]);
	}
	/* IPIP to no VIP too: the program is no open tunnel endpoint. */
	{
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					 .src = "198.18.10.2", .dst = NEXT_HOP, .sport = 40500,
					 .dport = 80 };
		struct pkt_encap e = { .family = LB_FAMILY_IPV4, .src = HARNESS_SOURCE4,
				       .dst = HARNESS_DECAP_LOCAL4, .proto = 4 };
		struct pkt in;

		pkt_build(&in, &spec);
		pkt_build_encap(&p, &e, &in);
		verdict = decap_run(&p, out, &out_len, &reason);
		check(verdict == XDP_DROP && reason == LB_DECAP_DROP_NOT_VIP,
		      "IPIP to another backend: verdict %u under %s", verdict,
		      reason < LB_DECAP_REASON_COUNT ? decap_reason_names[reason] : "none");
	}
}

/* --- frames as GLB builds them, and what its glb-redirect makes of them ----------------- */

/* The ones' complement sum of @n bytes at @p (big-endian words), added to @sum. */
static uint64_t sum_bytes(const unsigned char *p, size_t n, uint64_t sum)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint64_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint64_t)p[n - 1] << 8;
	return sum;
}

static uint16_t sum_finish(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The transport checksum of the @len bytes at @l4 (protocol @proto) under
 * addresses @src and @dst of @alen bytes, computed whole.
 */
static uint16_t l4_checksum(const unsigned char *src, const unsigned char *dst, size_t alen,
			    int proto, const unsigned char *l4, size_t len)
{
	uint64_t sum = sum_bytes(src, alen, 0);

	sum = sum_bytes(dst, alen, sum);
	sum += (uint64_t)proto + len;
	return sum_finish(sum_bytes(l4, len, sum));
}

/*
 * An IP packet (version 4 or 6 by @family) from @src to @dst, TTL 64, id 1
 * (scapy's defaults), protocol @proto around @payload; @csum: compute the
 * TCP or UDP checksum at @csum_at of the payload (-1: none). Returns its length.
 */
static size_t ip_packet(unsigned char *d, int family, const char *src, const char *dst, int proto,
			uint8_t ttl, unsigned char *payload, size_t len, int csum_at)
{
	size_t alen = family == LB_FAMILY_IPV4 ? 4 : 16, hlen = family == LB_FAMILY_IPV4 ? 20 : 40;
	uint8_t s[16], t[16];

	pkt_addr(family, src, s);
	pkt_addr(family, dst, t);
	memset(d, 0, hlen);
	if (csum_at >= 0) {
		payload[csum_at] = payload[csum_at + 1] = 0;
		put16(payload + csum_at, l4_checksum(s, t, alen, proto, payload, len));
	}
	if (family == LB_FAMILY_IPV4) {
		d[0] = 0x45;
		put16(d + 2, (unsigned int)(20 + len));
		put16(d + 4, 1);
		d[8] = ttl;
		d[9] = (unsigned char)proto;
		memcpy(d + 12, s, 4);
		memcpy(d + 16, t, 4);
		put16(d + 10, sum_finish(sum_bytes(d, 20, 0)));
	} else {
		d[0] = 0x60;
		put16(d + 4, (unsigned int)len);
		d[6] = (unsigned char)proto;
		d[7] = ttl;
		memcpy(d + 8, s, 16);
		memcpy(d + 24, t, 16);
	}
	memcpy(d + hlen, payload, len);
	return hlen + len;
}

/* A TCP ACK @sport -> @dport as scapy's TCP() makes it: seq 0, ack 0, window 8192. */
static size_t tcp_ack(unsigned char *d, int family, const char *src, const char *dst,
		      uint16_t sport, uint16_t dport)
{
	unsigned char tcp[20] = { 0 };

	put16(tcp, sport);
	put16(tcp + 2, dport);
	tcp[12] = 5 << 4;
	tcp[13] = 0x10;
	put16(tcp + 14, 8192);
	return ip_packet(d, family, src, dst, IPPROTO_TCP, 64, tcp, sizeof(tcp), 16);
}

/*
 * A frame as GLB's director sends it (and as its redirect tests write it
 * with scapy): Ethernet, outer IP (@family) @src -> @dst with @ttl, UDP
 * 12345 -> 19523 with its checksum (@udp_sum) or 0, GUE with the hop list
 * @hops (@count, next hop @next), and the inner packet @inner of version
 * @inner6 ? 6 : 4.
 */
static void glb_frame(struct pkt *p, int family, const char *src, const char *dst, uint8_t ttl,
		      const char *const *hops, int count, int next, const unsigned char *inner,
		      size_t inner_len, int inner6, int udp_sum)
{
	size_t alen = family == LB_FAMILY_IPV4 ? 4 : 16, gue_len = 8 + (size_t)count * alen;
	unsigned char udp[PKT_MAX];
	int i;

	memset(udp, 0, 8 + gue_len);
	put16(udp, 12345);
	put16(udp + 2, LB_GUE_PORT_DEFAULT);
	put16(udp + 4, (unsigned int)(8 + gue_len + inner_len));
	udp[8] = (unsigned char)(gue_len / 4 - 1);
	udp[9] = inner6 ? 41 : 4;
	udp[14] = (unsigned char)next;
	udp[15] = (unsigned char)count;
	for (i = 0; i < count; i++) {
		uint8_t a[16];

		pkt_addr(family, hops[i], a);
		memcpy(udp + 16 + (size_t)i * alen, a, alen);
	}
	memcpy(udp + 8 + gue_len, inner, inner_len);
	memcpy(p->data, pkt_lb_mac, 6);
	memcpy(p->data + 6, pkt_client_mac, 6);
	put16(p->data + 12, family == LB_FAMILY_IPV4 ? 0x0800 : 0x86dd);
	p->l3 = 14;
	p->len = 14 + ip_packet(p->data + 14, family, src, dst, IPPROTO_UDP, ttl, udp,
				8 + gue_len + inner_len, udp_sum ? 6 : -1);
	p->l4 = 14 + (family == LB_FAMILY_IPV4 ? 20 : 40);
}

/*
 * What GLB's redirect makes of @in, sent on to its next hop @hop by @self,
 * recomputed whole: the outer source @self, the destination @hop, next_hop
 * one further, the IPv4 header checksum and (when @in has one, or over
 * IPv6) the UDP checksum computed anew when it is not zero, every other byte (TTL included) as
 * it came; and the next hop's MACs.
 */
static void glb_redirected(const struct pkt *in, struct pkt *want, int family, const char *self,
			   const char *hop)
{
	size_t alen = family == LB_FAMILY_IPV4 ? 4 : 16, src_at = family == LB_FAMILY_IPV4 ? 12 : 8;
	unsigned char *ip = want->data + 14, *udp = want->data + in->l4;
	uint8_t a[16];

	*want = *in;
	memcpy(want->data, harness_next_hop_mac, 6);
	memcpy(want->data + 6, harness_e0_mac, 6);
	pkt_addr(family, self, a);
	memcpy(ip + src_at, a, alen);
	pkt_addr(family, hop, a);
	memcpy(ip + src_at + alen, a, alen);
	udp[14]++;
	if (family == LB_FAMILY_IPV4) {
		ip[10] = ip[11] = 0;
		put16(ip + 10, sum_finish(sum_bytes(ip, 20, 0)));
	}
	if (udp[6] || udp[7]) {
		size_t len = (size_t)udp[4] << 8 | udp[5];

		udp[6] = udp[7] = 0;
		put16(udp + 6, l4_checksum(ip + src_at, ip + src_at + alen, alen, IPPROTO_UDP, udp,
					   len));
	}
}

static unsigned int udp_check_of(const struct pkt *p, const unsigned char *frame)
{
	return (unsigned int)frame[p->l4 + 6] << 8 | frame[p->l4 + 7];
}

/* Run @in, expect it sent on, and compare it with @want byte by byte. */
static void expect_sent_on(const char *name, const struct pkt *in, const struct pkt *want)
{
	unsigned char out[PKT_MAX];
	size_t out_len, i;
	__u32 reason, verdict;

	verdict = decap_run(in, out, &out_len, &reason);
	check(verdict == XDP_TX && reason == LB_DECAP_FORWARD_NEXT_HOP,
	      "%s: verdict %u under %s, want XDP_TX under forward_next_hop", name, verdict,
	      reason < LB_DECAP_REASON_COUNT ? decap_reason_names[reason] : "none");
	check(out_len == want->len, "%s: %zu bytes out, want %zu", name, out_len, want->len);
	for (i = 0; i < out_len; i++)
		check(out[i] == want->data[i], "%s: byte %zu is 0x%02x, want 0x%02x (GLB's)", name,
		      i, out[i], want->data[i]);
}

/*
 * GLB's redirect test "unknown redirected through chain" (v4 on v4, v6 on
 * v4): an ACK nobody knows, hops [alt, self], the UDP checksum scapy
 * computes. GLB's redirect updates that checksum: 0xbaff and 0x4d9c leave,
 * where the frame kept 0xbc05 and 0x4ea2 before. The outer TTL stays as it
 * came (GLB sends the packet out as it is, with ip_local_out()).
 */
static void test_sent_on_frames_are_byte_for_byte_glbs(void **state)
{
	static const char *const hops[] = { GLB_ALT, GLB_SELF };
	static const struct {
		const char *name;
		int inner6;
		uint8_t ttl;
		unsigned int before, after;
	} cases[] = {
		{ "GLB's v4 on v4 frame", 0, 64, 0xbc05, 0xbaff },
		{ "GLB's v6 on v4 frame", 1, 64, 0x4ea2, 0x4d9c },
		{ "GLB's v4 on v4 frame with outer TTL 1", 0, 1, 0xbc05, 0xbaff },
	};
	unsigned char inner[PKT_MAX];
	struct pkt in, want;
	size_t i, len;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = cases[i].inner6 ? tcp_ack(inner, LB_FAMILY_IPV6, GLB_SELF6, GLB_VIP6, 9999, 22) :
					tcp_ack(inner, LB_FAMILY_IPV4, GLB_SELF, GLB_VIP4, 9999, 22);
		glb_frame(&in, LB_FAMILY_IPV4, GLB_SELF, GLB_PROXY, cases[i].ttl, hops, 2, 0, inner,
			  len, cases[i].inner6, 1);
		check(udp_check_of(&in, in.data) == cases[i].before,
		      "%s: UDP checksum 0x%04x, scapy's is 0x%04x: not GLB's test frame",
		      cases[i].name, udp_check_of(&in, in.data), cases[i].before);
		glb_redirected(&in, &want, LB_FAMILY_IPV4, GLB_PROXY, GLB_ALT);
		check(udp_check_of(&want, want.data) == cases[i].after,
		      "%s: recomputed UDP checksum 0x%04x, want 0x%04x", cases[i].name,
		      udp_check_of(&want, want.data), cases[i].after);
		check_eq(want.data[14 + 8], cases[i].ttl);
		expect_sent_on(cases[i].name, &in, &want);
	}
}

/* A frame without a UDP checksum leaves without one, over IPv4 and IPv6; with one, it is updated. */
static void test_udp_checksum_zero_stays_zero_and_others_are_updated(void **state)
{
	static const char *const hops4[] = { NEXT_HOP, "198.18.13.13" };
	static const char *const hops6[] = { NEXT_HOP6, "2001:db8:13::13" };
	unsigned char inner[PKT_MAX];
	struct pkt in, want;
	size_t len;

	(void)state;
	NEEDS_ROOT();
	len = tcp_ack(inner, LB_FAMILY_IPV4, "198.18.10.2", "127.0.0.1", 40600, 9999);
	glb_frame(&in, LB_FAMILY_IPV4, HARNESS_SOURCE4, HARNESS_DECAP_LOCAL4, 61, hops4, 2, 0,
		  inner, len, 0, 0);
	glb_redirected(&in, &want, LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, NEXT_HOP);
	check_eq(udp_check_of(&want, want.data), 0);
	expect_sent_on("IPv4 outer, no UDP checksum", &in, &want);

	glb_frame(&in, LB_FAMILY_IPV4, HARNESS_SOURCE4, HARNESS_DECAP_LOCAL4, 61, hops4, 2, 1,
		  inner, len, 0, 1);
	glb_redirected(&in, &want, LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, "198.18.13.13");
	expect_sent_on("IPv4 outer, UDP checksum, second hop", &in, &want);

	len = tcp_ack(inner, LB_FAMILY_IPV6, "2001:db8:10::2", HARNESS_DECAP_VIP6, 40601, 9999);
	glb_frame(&in, LB_FAMILY_IPV6, HARNESS_SOURCE6, HARNESS_DECAP_LOCAL6, 7, hops6, 2, 0,
		  inner, len, 1, 1);
	glb_redirected(&in, &want, LB_FAMILY_IPV6, HARNESS_DECAP_LOCAL6, NEXT_HOP6);
	expect_sent_on("IPv6 outer", &in, &want);
	check_eq(want.data[14 + 7], 7);

	/* IPv6 with no checksum, as ringlb's balancer sends it: zero it stays. */
	glb_frame(&in, LB_FAMILY_IPV6, HARNESS_SOURCE6, HARNESS_DECAP_LOCAL6, 7, hops6, 2, 0,
		  inner, len, 1, 0);
	glb_redirected(&in, &want, LB_FAMILY_IPV6, HARNESS_DECAP_LOCAL6, NEXT_HOP6);
	check_eq(udp_check_of(&want, want.data), 0);
	expect_sent_on("IPv6 outer, no UDP checksum", &in, &want);
}

/*
 * An ICMP error about a TCP connection follows the hop list as that
 * connection's packets do: the quote (backend to client) reversed names the
 * socket. Quoting the connection this host has: taken here; quoting one it
 * has not: sent on; another ICMP message, or a quote of UDP: taken here.
 */
static void test_icmp_errors_follow_the_connection_they_quote(void **state)
{
	static const char *const hops[] = { NEXT_HOP };
	struct {
		const char *name;
		uint8_t type, code;
		int proto;
		uint16_t client;
		__u32 verdict, reason;
	} cases[] = {
		{ "frag needed about the connection here", 3, 4, IPPROTO_TCP, 0, XDP_PASS,
		  LB_DECAP_DECAP_GUE },
		{ "frag needed about a connection elsewhere", 3, 4, IPPROTO_TCP, 40700, XDP_TX,
		  LB_DECAP_FORWARD_NEXT_HOP },
		{ "time exceeded about a connection elsewhere", 11, 0, IPPROTO_TCP, 40701, XDP_TX,
		  LB_DECAP_FORWARD_NEXT_HOP },
		{ "frag needed about UDP", 3, 4, IPPROTO_UDP, 40702, XDP_PASS, LB_DECAP_DECAP_GUE },
	};
	unsigned char out[PKT_MAX];
	size_t i, out_len;
	__u32 reason, verdict;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* The quoted packet: the server's, to the client. */
		struct pkt_spec quoted = { .family = LB_FAMILY_IPV4, .protocol = (uint8_t)cases[i].proto,
					   .src = "127.0.0.1", .dst = "127.0.0.1", .sport = PORT,
					   .dport = cases[i].client ? cases[i].client : client_port,
					   .tcp_flags = 0x10 };
		struct pkt icmp, in, want;

		pkt_build_icmp_error(&icmp, &quoted, "198.18.12.1", "127.0.0.1", cases[i].type,
				     cases[i].code);
		glb_frame(&in, LB_FAMILY_IPV4, HARNESS_SOURCE4, HARNESS_DECAP_LOCAL4, 64, hops, 1, 0,
			  icmp.data + icmp.l3, icmp.len - icmp.l3, 0, 1);
		verdict = decap_run(&in, out, &out_len, &reason);
		check(verdict == cases[i].verdict && reason == cases[i].reason,
		      "%s: verdict %u under %s, want %u under %s", cases[i].name, verdict,
		      reason < LB_DECAP_REASON_COUNT ? decap_reason_names[reason] : "none",
		      cases[i].verdict, decap_reason_names[cases[i].reason]);
		if (verdict != XDP_TX)
			continue;
		glb_redirected(&in, &want, LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, NEXT_HOP);
		check(out_len == want.len && !memcmp(out, want.data, want.len),
		      "%s: not the frame sent on", cases[i].name);
	}
}

HARNESS_GROUP(second_chance,
	cmocka_unit_test_setup(test_backend_takes_what_is_its_own_and_sends_the_rest_on,
			       second_chance_setup),
	cmocka_unit_test(test_a_valid_syn_cookie_is_taken_here),
	cmocka_unit_test(test_hops_to_strangers_and_packets_to_no_vip_are_dropped),
	cmocka_unit_test(test_sent_on_frames_are_byte_for_byte_glbs),
	cmocka_unit_test(test_udp_checksum_zero_stays_zero_and_others_are_updated),
	cmocka_unit_test(test_icmp_errors_follow_the_connection_they_quote),
	cmocka_unit_test_teardown(test_a_hop_without_neighbour_goes_back_to_the_router,
				  second_chance_teardown));
