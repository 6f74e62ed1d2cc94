// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hostile input through the XDP program (BPF_PROG_TEST_RUN): a million
 * random and mutated frames, judged by an oracle written here, apart from the
 * program: a small, independent parser of the rules lb_contract.h documents.
 * For every frame the program's verdict must be the oracle's (forward only a
 * valid flow to a VIP, or an ICMP error quoting one; pass everything else
 * untouched), a forwarded frame must differ only in its MACs, and at the end
 * the reason counters must add up to exactly the frames and bytes sent.
 *
 * FRAMES (environment) sets the count; `make soak` raises it. Needs root.
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
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"

#define FRAMES_DEFAULT 1000000
#define SEED 0x686f7374696c65ULL
#define BACKENDS_PER_VIP 4

static const struct {
	int family;
	const char *addr;
	uint16_t port;
	uint8_t protocol;
	int has_backends;
} vips[] = {
	{ LB_FAMILY_IPV4, "198.18.0.100", 80, IPPROTO_TCP, 1 },
	{ LB_FAMILY_IPV4, "198.18.0.100", 53, IPPROTO_UDP, 1 },
	{ LB_FAMILY_IPV6, "2001:db8::100", 80, IPPROTO_TCP, 1 },
	{ LB_FAMILY_IPV6, "2001:db8::100", 53, IPPROTO_UDP, 1 },
	{ LB_FAMILY_IPV4, "198.18.0.101", 80, IPPROTO_TCP, 0 },
};
#define VIP_COUNT (sizeof(vips) / sizeof(vips[0]))

static const __u8 iface_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static struct lb_prog *prog;
static int skip_reason;

/* --- the oracle -------------------------------------------------------------------- */

/*
 * The oracle reads frames by the RFCs, not by the program's code: an IP
 * packet ends where its header says (RFC 791 total length, RFC 8200 payload
 * length), whatever Ethernet padding follows, and every header above IP must
 * lie inside it (RFC 9293: data offset within the segment; RFC 768: the UDP
 * length within the IP payload). An ICMP error (RFC 792, RFC 4443) is about
 * a VIP flow only when it is addressed to the VIP that sent the quoted
 * packet.
 */

enum oracle { ORACLE_PASS, ORACLE_FORWARD, ORACLE_DROP };

/* A window of bytes: [at, end) of p. */
struct win {
	const unsigned char *p;
	size_t at, end;
};

static int room(const struct win *w, size_t n)
{
	return w->at <= w->end && w->end - w->at >= n;
}

static unsigned int be16(const unsigned char *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* Which VIP is this {address, port, protocol}? -1 for none. */
static int vip_of(int family, const unsigned char *addr, unsigned int port, int protocol)
{
	unsigned char a[16];
	size_t i;

	for (i = 0; i < VIP_COUNT; i++) {
		pkt_addr(vips[i].family, vips[i].addr, a);
		if (vips[i].family == family && vips[i].port == port &&
		    vips[i].protocol == protocol &&
		    !memcmp(a, addr, family == LB_FAMILY_IPV4 ? 4 : 16))
			return (int)i;
	}
	return -1;
}

/*
 * An IP packet in @w: its addresses, and @w narrowed to its upper-layer
 * payload. Return: the upper-layer protocol, or -1 for what is not a whole,
 * unfragmented packet ringlb may balance. @quoted: an ICMP error's quote,
 * which holds the packet's start only, so its length fields are not held
 * against the bytes present.
 */
static int ip_packet(struct win *w, int family, int quoted, unsigned char *src, unsigned char *dst)
{
	const unsigned char *ip = w->p + w->at;

	if (family == LB_FAMILY_IPV4) {
		size_t ihl, total;

		if (!room(w, 20) || ip[0] >> 4 != 4 || (ip[0] & 15) < 5)
			return -1;
		ihl = (size_t)(ip[0] & 15) * 4;
		total = be16(ip + 2);
		if (total < ihl || !room(w, ihl) || (!quoted && !room(w, total)))
			return -1;
		if (be16(ip + 6) & 0x3fff) /* MF or an offset: a fragment */
			return -1;
		memcpy(src, ip + 12, 4);
		memcpy(dst, ip + 16, 4);
		if (!quoted)
			w->end = w->at + total;
		w->at += ihl;
		return ip[9];
	} else {
		size_t payload;
		int next, n;

		if (!room(w, 40) || ip[0] >> 4 != 6)
			return -1;
		payload = be16(ip + 4);
		if (!quoted && (payload == 0 || !room(w, 40 + payload)))
			return -1;
		memcpy(src, ip + 8, 16);
		memcpy(dst, ip + 24, 16);
		if (!quoted)
			w->end = w->at + 40 + payload;
		w->at += 40;
		next = ip[6];
		/* Hop-by-hop, routing, destination options: at most four, each inside the packet. */
		for (n = 0; next == 0 || next == 43 || next == 60; n++) {
			size_t len;

			if (n == 4 || !room(w, 2))
				return -1;
			len = 8 + (size_t)w->p[w->at + 1] * 8;
			if (!room(w, len))
				return -1;
			next = w->p[w->at];
			w->at += len;
		}
		/* Fragment, AH, ESP, no next header, mobility: not balanced. */
		if (next == 44 || next == 51 || next == 50 || next == 59 || next == 135)
			return -1;
		return next;
	}
}

/* An ICMP error about a packet the VIP sent: the VIP's verdict, else pass. */
static enum oracle icmp_error(struct win *w, int family, const unsigned char *outer_dst)
{
	const unsigned char *icmp = w->p + w->at;
	unsigned char qsrc[16] = { 0 }, qdst[16] = { 0 };
	size_t alen = family == LB_FAMILY_IPV4 ? 4 : 16;
	int qproto, vip;

	if (!room(w, 8))
		return ORACLE_PASS;
	if (family == LB_FAMILY_IPV4 ? icmp[0] != 3 && icmp[0] != 11 : icmp[0] < 1 || icmp[0] > 3)
		return ORACLE_PASS;
	w->at += 8;
	qproto = ip_packet(w, family, 1, qsrc, qdst);
	if ((qproto != IPPROTO_TCP && qproto != IPPROTO_UDP) || !room(w, 8))
		return ORACLE_PASS;
	/* The quoted packet left the VIP; the error must come back to that VIP. */
	if (memcmp(qsrc, outer_dst, alen))
		return ORACLE_PASS;
	vip = vip_of(family, qsrc, be16(w->p + w->at), qproto);
	if (vip < 0)
		return ORACLE_PASS;
	return vips[vip].has_backends ? ORACLE_FORWARD : ORACLE_DROP;
}

/* What the program must do with this frame, by the documented rules. */
static enum oracle oracle(const unsigned char *frame, size_t len)
{
	struct win w = { frame, 14, len };
	unsigned char src[16] = { 0 }, dst[16] = { 0 };
	unsigned int type;
	int family, proto, vip;

	if (len < 14)
		return ORACLE_PASS;
	type = be16(frame + 12);
	if (type == 0x8100 || type == 0x88a8) {
		if (!room(&w, 4))
			return ORACLE_PASS;
		type = be16(frame + 16);
		w.at += 4;
		if (type == 0x8100 || type == 0x88a8)
			return ORACLE_PASS;
	}
	if (type == 0x0800)
		family = LB_FAMILY_IPV4;
	else if (type == 0x86dd)
		family = LB_FAMILY_IPV6;
	else
		return ORACLE_PASS;
	proto = ip_packet(&w, family, 0, src, dst);
	if (proto < 0)
		return ORACLE_PASS;
	if (proto == (family == LB_FAMILY_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6))
		return icmp_error(&w, family, dst);
	if (proto == IPPROTO_TCP) {
		/* At least 20 bytes, and the data offset inside the segment. */
		if (!room(&w, 20) || frame[w.at + 12] >> 4 < 5 || !room(&w, (frame[w.at + 12] >> 4) * 4u))
			return ORACLE_PASS;
	} else if (proto == IPPROTO_UDP) {
		/* 8 bytes, and a length from 8 up to the IP payload. */
		if (!room(&w, 8) || be16(frame + w.at + 4) < 8 || !room(&w, be16(frame + w.at + 4)))
			return ORACLE_PASS;
	} else {
		return ORACLE_PASS;
	}
	vip = vip_of(family, dst, be16(frame + w.at + 2), proto);
	if (vip < 0)
		return ORACLE_PASS;
	return vips[vip].has_backends ? ORACLE_FORWARD : ORACLE_DROP;
}

/* --- frames ------------------------------------------------------------------------- */

/* A valid frame to a random VIP: plain, VLAN-tagged, with IP options, or an ICMP error about one. */
static void valid_frame(struct test_rng *rng, struct pkt *pkt)
{
	size_t v = test_rng_below(rng, VIP_COUNT);
	char client[64];
	struct pkt_spec spec = { 0 };
	uint64_t a = test_rng_next(rng);

	spec.family = vips[v].family;
	spec.protocol = vips[v].protocol;
	spec.dst = vips[v].addr;
	spec.dport = vips[v].port;
	spec.sport = (uint16_t)(1 + a % 65535);
	spec.vlan = test_rng_below(rng, 8) == 0 ? (uint16_t)(1 + a % 4000) : 0;
	spec.tcp_flags = (uint8_t)(a >> 40);
	if (spec.family == LB_FAMILY_IPV4) {
		snprintf(client, sizeof(client), "198.18.%u.%u", (unsigned)(a >> 16 & 255),
			 (unsigned)(a >> 24 & 255));
		spec.ipv4_option_words = test_rng_below(rng, 6) == 0 ? (uint8_t)(a >> 32 & 7) : 0;
	} else {
		snprintf(client, sizeof(client), "2001:db8:c::%x", (unsigned)(a >> 16 & 0xffff));
		spec.ipv6_hopopts = test_rng_below(rng, 6) == 0;
	}
	spec.src = client;
	if (test_rng_below(rng, 8)) {
		pkt_build(pkt, &spec);
		return;
	}
	/*
	 * An ICMP error from a router about a packet the VIP sent to this
	 * client, mostly addressed to that VIP, sometimes elsewhere.
	 */
	{
		struct pkt_spec quoted = spec;
		int v4 = spec.family == LB_FAMILY_IPV4;

		quoted.src = spec.dst;
		quoted.dst = spec.src;
		quoted.sport = spec.dport;
		quoted.dport = spec.sport;
		quoted.vlan = 0;
		pkt_build_icmp_error(pkt, &quoted, v4 ? "198.18.0.1" : "2001:db8::1",
				     test_rng_below(rng, 4) ? spec.dst : v4 ? "198.18.0.200" :
									     "2001:db8::200",
				     v4 ? (test_rng_below(rng, 2) ? 3 : 11) :
					  (uint8_t)(1 + test_rng_below(rng, 3)), 4);
	}
}

/* Damage a frame in one of the ways hostile senders and broken links do. */
static void mutate(struct test_rng *rng, struct pkt *pkt)
{
	size_t at;

	switch (test_rng_below(rng, 6)) {
	case 0: /* flip a bit in the headers */
		at = test_rng_below(rng, pkt->len < 96 ? pkt->len : 96);
		pkt->data[at] ^= (unsigned char)(1u << test_rng_below(rng, 8));
		break;
	case 1: /* a random byte */
		at = test_rng_below(rng, pkt->len);
		pkt->data[at] = (unsigned char)test_rng_next(rng);
		break;
	case 2: /* cut short */
		pkt->len = 14 + test_rng_below(rng, pkt->len - 13);
		break;
	case 3: /* junk appended */
		while (pkt->len < PKT_MAX && test_rng_below(rng, 8))
			pkt->data[pkt->len++] = (unsigned char)test_rng_next(rng);
		break;
	case 4: /* a length field rewritten */
		at = pkt->l3 + (pkt->data[12] == 0x86 ? 4 : 2);
		if (at + 1 < pkt->len) {
			pkt->data[at] = (unsigned char)test_rng_below(rng, 3);
			pkt->data[at + 1] = (unsigned char)test_rng_next(rng);
		}
		break;
	default: /* the protocol or next header rewritten */
		at = pkt->l3 + (pkt->data[12] == 0x86 ? 6 : 9);
		if (at < pkt->len)
			pkt->data[at] = (unsigned char)test_rng_below(rng, 140);
		break;
	}
}

static void random_frame(struct test_rng *rng, struct pkt *pkt)
{
	size_t i;

	memset(pkt, 0, sizeof(*pkt));
	pkt->len = 14 + test_rng_below(rng, 600);
	for (i = 0; i < pkt->len; i++)
		pkt->data[i] = (unsigned char)test_rng_next(rng);
	/* Often an IP EtherType, so the noise reaches the IP parsers. */
	if (test_rng_below(rng, 2)) {
		pkt->data[12] = test_rng_below(rng, 2) ? 0x08 : 0x86;
		pkt->data[13] = pkt->data[12] == 0x08 ? 0x00 : 0xdd;
	}
}

/* --- set-up and the test ----------------------------------------------------------------- */

static int group_setup(void **state)
{
	static const __u64 key[2] = { 0xfeed, 0xbeef };
	__u32 id = 1;
	size_t v;

	(void)state;
	skip_reason = harness_load("test_hostile", key, iface_mac, &prog);
	if (skip_reason)
		return skip_reason < 0 ? -1 : 0;
	for (v = 0; v < VIP_COUNT; v++) {
		const struct lb_maps *maps = lb_prog_maps(prog);
		struct lb_vip_key key = { .port = htons(vips[v].port), .protocol = vips[v].protocol,
					  .family = (__u8)vips[v].family };
		struct ring_member members[BACKENDS_PER_VIP];
		char names[BACKENDS_PER_VIP][16];
		__u32 ids[BACKENDS_PER_VIP];
		struct ring *ring = NULL;
		int i, err;

		pkt_addr(vips[v].family, vips[v].addr, key.addr);
		for (i = 0; vips[v].has_backends && i < BACKENDS_PER_VIP; i++, id++) {
			struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
						.vip_id = (__u32)v, .cookie = id,
						.mac = { 0x02, 0xbe, 0, 0, 0, (__u8)id } };

			if (lb_backend_install(maps, id, &b))
				return -1;
			snprintf(names[i], sizeof(names[i]), "b%d", i);
			members[i].name = names[i];
			members[i].weight = 1;
			ids[i] = id;
		}
		if (vips[v].has_backends && ring_build(&ring, 64, members, BACKENDS_PER_VIP))
			return -1;
		/* Ring members are in name order, as the names were given. */
		err = lb_vip_install(maps, &key, (__u32)v, ring, ids);
		ring_free(ring);
		if (err)
			return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	lb_prog_close(prog);
	return 0;
}

static void reasons_read(__u64 *packets, __u64 *bytes)
{
	__u32 r;

	*packets = *bytes = 0;
	for (r = 0; r < LB_REASON_COUNT; r++) {
		*packets += harness_percpu_sum(lb_prog_maps(prog)->reason_stats, r, 2, 0);
		*bytes += harness_percpu_sum(lb_prog_maps(prog)->reason_stats, r, 2, 1);
	}
}

static void test_hostile_frames_get_the_documented_verdict_and_are_all_counted(void **state)
{
	const char *env = getenv("FRAMES");
	long frames = env ? atol(env) : FRAMES_DEFAULT, n;
	struct test_rng rng = { SEED };
	__u64 packets0, bytes0, packets1, bytes1, bytes_sent = 0;
	long verdicts[3] = { 0 }, kinds[3] = { 0 };
	unsigned char out[PKT_MAX];
	size_t out_len;

	(void)state;
	if (skip_reason)
		skip();
	reasons_read(&packets0, &bytes0);
	for (n = 0; n < frames; n++) {
		struct pkt pkt;
		int kind = (int)test_rng_below(&rng, 10);
		enum oracle want;
		__u32 verdict;

		/* 3 in 10 pure noise, 5 in 10 damaged valid frames, 2 in 10 valid. */
		if (kind < 3) {
			random_frame(&rng, &pkt);
			kinds[0]++;
		} else {
			valid_frame(&rng, &pkt);
			if (kind < 8) {
				int m = 1 + (int)test_rng_below(&rng, 3);

				while (m--)
					mutate(&rng, &pkt);
				kinds[1]++;
			} else {
				kinds[2]++;
			}
		}
		want = oracle(pkt.data, pkt.len);
		verdict = harness_run(lb_prog_fd(prog), pkt.data, pkt.len, out, &out_len, 1, NULL);
		check(out_len == pkt.len, "frame %ld: length changed", n);
		bytes_sent += pkt.len;
		switch (want) {
		case ORACLE_FORWARD:
			check(verdict == XDP_TX, "frame %ld (%zu bytes): verdict %u, oracle says forward",
			      n, pkt.len, verdict);
			check(out[0] == 0x02 && out[1] == 0xbe && !memcmp(out + 6, iface_mac, 6) &&
			      !memcmp(out + 12, pkt.data + 12, pkt.len - 12),
			      "frame %ld: forwarded frame changed beyond its MACs", n);
			verdicts[0]++;
			break;
		case ORACLE_DROP:
			check(verdict == XDP_DROP, "frame %ld: verdict %u, oracle says drop", n, verdict);
			verdicts[2]++;
			break;
		default:
			check(verdict == XDP_PASS, "frame %ld (%zu bytes): verdict %u, oracle says pass",
			      n, pkt.len, verdict);
			check(!memcmp(out, pkt.data, pkt.len), "frame %ld: passed frame changed", n);
			verdicts[1]++;
			break;
		}
	}
	reasons_read(&packets1, &bytes1);
	check(packets1 - packets0 == (__u64)frames, "counters add up to %llu frames, %ld sent",
	      (unsigned long long)(packets1 - packets0), frames);
	check(bytes1 - bytes0 == bytes_sent, "counters add up to %llu bytes, %llu sent",
	      (unsigned long long)(bytes1 - bytes0), (unsigned long long)bytes_sent);
	printf("hostile: %ld frames (%ld noise, %ld damaged, %ld valid), %llu bytes: %ld forwarded, "
	       "%ld passed, %ld dropped, each as the oracle said; counters add up\n", frames,
	       kinds[0], kinds[1], kinds[2], (unsigned long long)bytes_sent, verdicts[0],
	       verdicts[1], verdicts[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_frames_get_the_documented_verdict_and_are_all_counted),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
