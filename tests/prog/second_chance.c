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
	struct bpf_map *from = decap->maps.decap_from, *local = decap->maps.decap_local,
		       *vip = decap->maps.decap_vip;

	return set_add(from, LB_FAMILY_IPV4, "198.18.13.0", 32 + 24) ||
	       set_add(from, LB_FAMILY_IPV4, "198.18.11.0", 32 + 24) ||
	       set_add(from, LB_FAMILY_IPV6, "2001:db8:13::", 32 + 64) ||
	       set_add(from, LB_FAMILY_IPV4, "192.168.50.0", 32 + 24) ||
	       set_add(local, LB_FAMILY_IPV4, GLB_PROXY, 0) ||
	       set_add(vip, LB_FAMILY_IPV4, "127.0.0.1", 0) ||
	       set_add(vip, LB_FAMILY_IPV4, GLB_VIP4, 0) ||
	       set_add(vip, LB_FAMILY_IPV6, GLB_VIP6, 0);
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

HARNESS_GROUP(second_chance,
	cmocka_unit_test_setup(test_backend_takes_what_is_its_own_and_sends_the_rest_on,
			       second_chance_setup),
	cmocka_unit_test(test_a_valid_syn_cookie_is_taken_here),
	cmocka_unit_test_teardown(test_a_hop_without_neighbour_goes_back_to_the_router,
				  second_chance_teardown));
