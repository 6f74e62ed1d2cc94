// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hostile input through the XDP programs (BPF_PROG_TEST_RUN): a million
 * random and mutated frames each through the balancer's program and the
 * backend-side decap program, judged by oracles written here, apart from
 * the programs: small, independent parsers of the documented rules. The
 * balancer's frames arrive on an interface of a network of their own, so
 * that VIPs that encapsulate find a route.
 * For every frame the program's verdict must be the oracle's (forward only a
 * valid flow to a VIP, or an ICMP error quoting one, from a client its source
 * ranges serve; pass everything else untouched), a forwarded frame must differ only in its MACs, and at the end
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

#include "decap.skel.h"
#include "harness.h"
#include "kernel.h"

#define FRAMES_DEFAULT 1000000
#define SEED 0x686f7374696c65ULL
#define BACKENDS_PER_VIP 4

static const struct {
	int family;
	const char *addr;
	uint16_t port;
	uint8_t protocol;
	int has_backends;
	int forward;         /* enum lb_forward */
	const char *backend; /* an encapsulated VIP's one backend */
	const char *allow;   /* its one allow prefix, or NULL */
	const char *deny;    /* its one deny prefix, or NULL */
	int quic_cid;        /* a QUIC VIP: its connection IDs' length; else 0 */
} vips[] = {
	{ LB_FAMILY_IPV4, "198.18.0.100", 80, IPPROTO_TCP, 1, LB_FORWARD_L2, NULL, NULL, NULL, 0 },
	/* Valid frames' clients are 198.18.X.Y and 2001:db8:c::X: these ranges split them. */
	{ LB_FAMILY_IPV4, "198.18.0.100", 53, IPPROTO_UDP, 1, LB_FORWARD_L2, NULL, NULL,
	  "198.18.128.0/17", 0 },
	{ LB_FAMILY_IPV6, "2001:db8::100", 80, IPPROTO_TCP, 1, LB_FORWARD_L2, NULL,
	  "2001:db8:c::/113", "2001:db8:c::4000/114", 0 },
	{ LB_FAMILY_IPV6, "2001:db8::100", 53, IPPROTO_UDP, 1, LB_FORWARD_L2, NULL, NULL, NULL, 0 },
	{ LB_FAMILY_IPV4, "198.18.0.101", 80, IPPROTO_TCP, 0, LB_FORWARD_L2, NULL, NULL,
	  "198.18.0.0/17", 0 },
	{ LB_FAMILY_IPV4, "198.18.0.102", 80, IPPROTO_TCP, 1, LB_FORWARD_IPIP, "2001:db8:13::11",
	  "198.18.0.0/16", "198.18.64.0/18", 0 },
	{ LB_FAMILY_IPV6, "2001:db8::102", 53, IPPROTO_UDP, 1, LB_FORWARD_GUE, "198.18.13.11",
	  NULL, NULL, 0 },
	/* QUIC: plaintext server ids of 1 octet, nonces of 8 (connection IDs of 10). */
	{ LB_FAMILY_IPV4, "198.18.0.100", 443, IPPROTO_UDP, 1, LB_FORWARD_L2, NULL, NULL,
	  "198.18.192.0/18", 10 },
};
/* The QUIC VIP's configuration, for its value (the oracle needs only its length). */
static const struct lb_quic_lb quic_cfg = { .rotation = 0, .sid_len = 1, .nonce_len = 8 };
#define VIP_COUNT (sizeof(vips) / sizeof(vips[0]))

static const __u8 iface_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static struct lb_prog *prog;
static int skip_reason, e0;
/* The VIP the oracle's last FORWARD verdict is for. */
static int oracle_vip;
/* Each VIP's backends: slots first_backend[v] .. + BACKENDS_PER_VIP - 1 (MAC 02:be:0:0:0:id). */
static __u32 first_backend[VIP_COUNT];

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

/*
 * Does a QUIC datagram (RFC 9000 17: @p, @n octets) hold a destination
 * connection ID: a long header's (first bit set: version, then its length,
 * 1 to 20, then it, all within the datagram), or a short header's: for a
 * connection ID of config rotation @rotation the server's length @cid, for
 * another the length its first octet's low five bits describe (QUIC-LB's
 * self-description) when 1 to 19, else @cid again?
 */
static int quic_holds_cid(const unsigned char *p, size_t n, size_t cid, unsigned int rotation)
{
	if (n < 1)
		return 0;
	if (p[0] & 0x80)
		return n >= 6 && p[5] >= 1 && p[5] <= 20 && 6u + p[5] <= n;
	if (n < 2)
		return 0;
	if (p[1] >> 5 != rotation && (p[1] & 0x1f) >= 1 && (p[1] & 0x1f) <= 19)
		cid = 1 + (p[1] & 0x1f);
	return 1 + cid <= n;
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

/* Is @client inside @prefix (ADDR/LEN text), bit by bit? Its length when so, else -1. */
static int prefix_len_holding(int family, const char *prefix, const unsigned char *client)
{
	char addr[64];
	unsigned char p[16] = { 0 };
	const char *slash;
	int len, bit;

	if (!prefix)
		return -1;
	slash = strchr(prefix, '/');
	snprintf(addr, sizeof(addr), "%.*s", (int)(slash - prefix), prefix);
	len = atoi(slash + 1);
	if (inet_pton(family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6, addr, p) != 1)
		return -1;
	for (bit = 0; bit < len; bit++)
		if ((p[bit / 8] ^ client[bit / 8]) & (0x80 >> (bit % 8)))
			return -1;
	return len;
}

/*
 * A VIP's source ranges, as its documentation says: the longest prefix
 * holding the client decides; in none, the client is refused when the VIP
 * has an allow prefix.
 */
static int refused(int vip, const unsigned char *client)
{
	int a = prefix_len_holding(vips[vip].family, vips[vip].allow, client);
	int d = prefix_len_holding(vips[vip].family, vips[vip].deny, client);

	if (a < 0 && d < 0)
		return vips[vip].allow != NULL;
	return d > a;
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
	oracle_vip = vip;
	/* The client is the quoted packet's destination. */
	if (refused(vip, qdst))
		return ORACLE_DROP;
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
	oracle_vip = vip;
	if (refused(vip, src))
		return ORACLE_DROP;
	if (vips[vip].quic_cid && !quic_holds_cid(frame + w.at + 8, be16(frame + w.at + 4) - 8u,
						  (size_t)vips[vip].quic_cid, quic_cfg.rotation))
		return ORACLE_DROP;
	return vips[vip].has_backends ? ORACLE_FORWARD : ORACLE_DROP;
}

/*
 * A frame forwarded to an encapsulated VIP's backend: Ethernet to the next
 * hop, an outer header of the backend's family to it, GUE when the VIP says
 * so, then exactly the IP packet as its header bounds it (no tag, no padding).
 */
static int encapsulated_right(const unsigned char *in, size_t in_len, const unsigned char *out,
			      size_t out_len, int vip)
{
	size_t l3 = be16(in + 12) == 0x8100 || be16(in + 12) == 0x88a8 ? 18 : 14, ip_len, outer;
	int v4_in = in[l3] >> 4 == 4, v4_out = strchr(vips[vip].backend, ':') == NULL;
	unsigned char dst[16];

	ip_len = v4_in ? be16(in + l3 + 2) : 40 + (size_t)be16(in + l3 + 4);
	outer = (v4_out ? 20 : 40) + (vips[vip].forward == LB_FORWARD_GUE ? 16 : 0);
	pkt_addr(v4_out ? LB_FAMILY_IPV4 : LB_FAMILY_IPV6, vips[vip].backend, dst);
	return l3 + ip_len <= in_len && out_len == 14 + outer + ip_len &&
	       !memcmp(out, harness_next_hop_mac, 6) && !memcmp(out + 6, harness_e0_mac, 6) &&
	       be16(out + 12) == (v4_out ? 0x0800 : 0x86dd) &&
	       !memcmp(out + 14 + (v4_out ? 16 : 24), dst, v4_out ? 4 : 16) &&
	       !memcmp(out + 14 + outer, in + l3, ip_len);
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
	/* To the QUIC VIP: short headers naming a backend, long headers of any length. */
	unsigned char quic[64];
	if (vips[v].quic_cid && test_rng_below(rng, 2)) {
		size_t i, n = test_rng_below(rng, sizeof(quic) + 1);

		for (i = 0; i < sizeof(quic); i++)
			quic[i] = (unsigned char)test_rng_next(rng);
		if (test_rng_below(rng, 2)) {
			quic[0] = 0x40 | (quic[0] & 0x3f);
			quic[1] = (unsigned char)(quic[1] & 0x1f); /* config rotation 0 */
			quic[2] = (unsigned char)(1 + test_rng_below(rng, BACKENDS_PER_VIP));
		} else {
			quic[0] |= 0x80;
			quic[5] = (unsigned char)test_rng_below(rng, 25);
		}
		spec.payload = quic;
		spec.payload_len = n;
	}
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

/* VIP @v's source ranges, written by the controller's code once the VIP has its value. */
static int vip_sources_install(const struct lb_maps *maps, size_t v)
{
	struct state_source list[2];
	struct state s;
	struct state_vip *sv;
	struct vip_spec spec = { .port = vips[v].port, .protocol = vips[v].protocol };
	const char *why = NULL;
	size_t n = 0;
	int err;

	if (addr_parse(vips[v].addr, &spec.addr, &why))
		return -EINVAL;
	state_init(&s);
	err = state_vip_add(&s, &spec, 64, &sv);
	if (!err) {
		sv->id = (__u32)v;
		if (vips[v].allow && !prefix_parse(vips[v].allow, &list[n].prefix, &why))
			list[n++].deny = 0;
		if (vips[v].deny && !prefix_parse(vips[v].deny, &list[n].prefix, &why))
			list[n++].deny = 1;
		err = state_vip_sources_set(&s, sv, list, n, &why) ?:
		      kernel_vip_sources_sync(maps, sv);
	}
	state_free(&s);
	return err;
}

static int group_setup(void **state)
{
	static const __u64 key[2] = { 0xfeed, 0xbeef };
	__u32 id = 1;
	size_t v;

	(void)state;
	skip_reason = harness_load("test_hostile", key, iface_mac, &prog);
	if (skip_reason)
		return skip_reason < 0 ? -1 : 0;
	/* Encapsulation routes through the FIB: the frames arrive on e0 of a network of their own. */
	e0 = harness_net_enter();
	if (e0 < 0)
		return -1;
	{
		struct lb_config c = { .gue_port = htons(19523) };
		__u8 a[16];

		pkt_addr(LB_FAMILY_IPV4, HARNESS_SOURCE4, a);
		memcpy(c.source4, a, 4);
		pkt_addr(LB_FAMILY_IPV6, HARNESS_SOURCE6, c.source6);
		if (lb_config_write(lb_prog_maps(prog), &c))
			return -1;
	}
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
		first_backend[v] = id;
		for (i = 0; vips[v].has_backends && i < BACKENDS_PER_VIP; i++, id++) {
			struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
						.vip_id = (__u32)v, .cookie = id,
						.mac = { 0x02, 0xbe, 0, 0, 0, (__u8)id },
						.forward = (__u8)vips[v].forward };

			if (vips[v].backend) {
				b.family = strchr(vips[v].backend, ':') ? LB_FAMILY_IPV6 :
									 LB_FAMILY_IPV4;
				pkt_addr(b.family, vips[v].backend, b.addr);
			}

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
		{
			struct lb_vip as = { .flags = vips[v].quic_cid ? LB_VIP_QUIC_LB : 0 };

			if (vips[v].quic_cid) {
				as.quic = quic_cfg;
				for (i = 0; i < BACKENDS_PER_VIP; i++) {
					__u8 sid[LB_QUIC_LB_SID_MAX] = { (__u8)(i + 1) };

					if (lb_quic_server_put(maps, (__u32)v, 0, sid, quic_cfg.sid_len,
							       ids[i], ids[i]))
						return -1;
				}
			}
			err = lb_vip_install_with(maps, &key, (__u32)v, ring, ids, &as);
		}
		ring_free(ring);
		if (err)
			return -1;
		err = vip_sources_install(maps, v);
		if (err)
			return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	harness_net_leave();
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
	long verdicts[3] = { 0 }, kinds[3] = { 0 }, encapsulated = 0, quic[3] = { 0 };
	unsigned char out[PKT_MAX];
	size_t out_len;

	(void)state;
	if (skip_reason)
		skip();
	/* As a controller's change ends: the CPUs copy VIP values, hostile frames' VIPs too. */
	check(lb_readers_release(lb_prog_maps(prog)) == 0, "closing the VIP epoch");
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
		oracle_vip = -1;
		want = oracle(pkt.data, pkt.len);
		if (oracle_vip >= 0 && vips[oracle_vip].quic_cid)
			quic[want]++;
		verdict = harness_run_on(lb_prog_fd(prog), e0, pkt.data, pkt.len, out, &out_len);
		check(out_len == pkt.len || (want == ORACLE_FORWARD && vips[oracle_vip].forward),
		      "frame %ld: length changed", n);
		bytes_sent += pkt.len;
		switch (want) {
		case ORACLE_FORWARD:
			check(verdict == XDP_TX, "frame %ld (%zu bytes): verdict %u, oracle says forward",
			      n, pkt.len, verdict);
			if (vips[oracle_vip].forward) {
				check(encapsulated_right(pkt.data, pkt.len, out, out_len, oracle_vip),
				      "frame %ld: not the packet encapsulated to its backend", n);
				encapsulated++;
			} else {
				check(out[0] == 0x02 && out[1] == 0xbe && !memcmp(out + 6, iface_mac, 6) &&
				      !memcmp(out + 12, pkt.data + 12, pkt.len - 12),
				      "frame %ld: forwarded frame changed beyond its MACs", n);
				check(out[5] >= first_backend[oracle_vip] &&
				      out[5] < first_backend[oracle_vip] + BACKENDS_PER_VIP,
				      "frame %ld: forwarded to slot %u, no backend of its VIP", n, out[5]);
			}
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
	printf("hostile: %ld frames (%ld noise, %ld damaged, %ld valid), %llu bytes: %ld forwarded "
	       "(%ld encapsulated), %ld passed, %ld dropped, each as the oracle said; counters add "
	       "up; to the QUIC VIP %ld forwarded, %ld dropped\n", frames, kinds[0], kinds[1],
	       kinds[2], (unsigned long long)bytes_sent, verdicts[0], encapsulated, verdicts[1],
	       verdicts[2], quic[ORACLE_FORWARD], quic[ORACLE_DROP]);
	check(quic[ORACLE_FORWARD] > 1000 && quic[ORACLE_DROP] > 1000,
	      "too few frames reached the QUIC VIP's rules: %ld forwarded, %ld dropped",
	      quic[ORACLE_FORWARD], quic[ORACLE_DROP]);
}

/* --- the decap program ------------------------------------------------------------ */

/*
 * The decap program's rules, read apart from it: an outer IPv4 header
 * (version, IHL, checksum, total length within the frame, no fragment) or
 * IPv6 header (payload within the frame), protocol 4 or 41, or UDP to the
 * GUE port with a length the packet holds and then a GUE version 0 data
 * header (its hlen words inside the frame) or an IP version nibble; the
 * outer source in a trusted prefix and the destination the host's; and an
 * inner packet of the version the protocol promises, its header whole.
 * Returns the bytes the outer headers take, or 0 when the frame must pass
 * untouched. *@drop is set when the frame must be dropped instead: an inner
 * destination that is not a VIP, more than LB_HOPS_MAX - 1 hops, or a next
 * hop that is no trusted peer when the packet would go on (not a SYN, no
 * socket: the hostile namespace has none, nor any ICMP error's connection).
 */
#define DECAP_GUE_PORT 19523
#define TRUSTED4 HARNESS_SOURCE4
#define TRUSTED6 HARNESS_SOURCE6
#define LOCAL4 HARNESS_DECAP_LOCAL4
#define LOCAL6 HARNESS_DECAP_LOCAL6
#define VIP4 HARNESS_DECAP_VIP4
#define VIP6 HARNESS_DECAP_VIP6

static int addr_is(int family, const unsigned char *a, const char *text)
{
	unsigned char want[16];

	pkt_addr(family, text, want);
	return !memcmp(a, want, family == LB_FAMILY_IPV4 ? 4 : 16);
}

/*
 * Would the decap program take the inner packet at @w's position (version
 * @v) here rather than send it on? A TCP SYN without ACK and anything it
 * cannot read are; a TCP packet of a connection is not (there is none);
 * an ICMP error quoting TCP is not (no connection either); the rest is.
 */
static int decap_takes(const struct win *w, unsigned int v)
{
	const unsigned char *ip = w->p + w->at, *l4;
	struct win q = *w;
	unsigned int proto;

	if (v == 4) {
		if (!room(&q, 20) || (ip[0] & 15) != 5)
			return 1;
		proto = ip[9];
		q.at += 20;
	} else {
		if (!room(&q, 40))
			return 1;
		proto = ip[6];
		q.at += 40;
	}
	l4 = w->p + q.at;
	if (proto == 6)
		return !room(&q, 20) || (l4[13] & 0x12) == 0x02;
	if (proto != (v == 4 ? 1u : 58u) || !room(&q, 8))
		return 1;
	if (v == 4 ? l4[0] != 3 && l4[0] != 11 : l4[0] < 1 || l4[0] > 3)
		return 1;
	q.at += 8;
	ip = w->p + q.at;
	if (v == 4) {
		if (!room(&q, 20) || ip[9] != 6 || (ip[0] & 15) < 5)
			return 1;
		q.at += (size_t)(ip[0] & 15) * 4;
	} else {
		if (!room(&q, 40) || ip[6] != 6)
			return 1;
		q.at += 40;
	}
	return !room(&q, 4);
}

static size_t decap_oracle(const unsigned char *f, size_t len, size_t *l3_out, int *drop)
{
	struct win w = { f, 14, len };
	size_t l3 = 14, outer, ip_len, hops_at = 0;
	unsigned int type, proto, inner_version, next = 0, count = 0;
	int family;

	*drop = 0;
	if (len < 14)
		return 0;
	type = be16(f + 12);
	if (type == 0x8100 || type == 0x88a8) {
		if (!room(&w, 4))
			return 0;
		type = be16(f + 16);
		l3 = 18;
		w.at = 18;
	}
	if (type == 0x0800) {
		const unsigned char *ip = f + l3;
		unsigned long sum = 0;
		size_t ihl, i;

		family = LB_FAMILY_IPV4;
		if (!room(&w, 20) || ip[0] >> 4 != 4 || (ip[0] & 15) < 5)
			return 0;
		ihl = (size_t)(ip[0] & 15) * 4;
		ip_len = be16(ip + 2);
		if (ip_len < ihl || !room(&w, ip_len) || (be16(ip + 6) & 0x3fff))
			return 0;
		for (i = 0; i < ihl; i += 2)
			sum += be16(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		proto = ip[9];
		if ((proto != 4 && proto != 41 && proto != 17) || sum != 0xffff ||
		    !addr_is(family, ip + 12, TRUSTED4) || !addr_is(family, ip + 16, LOCAL4))
			return 0;
		outer = ihl;
	} else if (type == 0x86dd) {
		const unsigned char *ip = f + l3;

		family = LB_FAMILY_IPV6;
		if (!room(&w, 40) || ip[0] >> 4 != 6)
			return 0;
		ip_len = 40 + (size_t)be16(ip + 4);
		proto = ip[6];
		if (!room(&w, ip_len) || (proto != 4 && proto != 41 && proto != 17) ||
		    !addr_is(family, ip + 8, TRUSTED6) || !addr_is(family, ip + 24, LOCAL6))
			return 0;
		outer = 40;
	} else {
		return 0;
	}
	if (proto == 17) {
		const unsigned char *udp = f + l3 + outer, *gue = udp + 8;

		w.at = l3 + outer;
		if (!room(&w, 8) || be16(udp + 4) < 8 || outer + be16(udp + 4) > ip_len ||
		    be16(udp + 2) != DECAP_GUE_PORT || !room(&w, 9))
			return 0;
		outer += 8;
		if (gue[0] >> 6 == 0) {
			size_t hlen = gue[0] & 0x1f, alen = family == LB_FAMILY_IPV4 ? 4 : 16;

			w.at = l3 + outer;
			if (!room(&w, 4) || (gue[0] & 0x20))
				return 0;
			/* Private data of type 0 is a hop list: its length what hlen says. */
			if (hlen && (!room(&w, 8) || (!gue[4] && !gue[5] &&
						     (4 + gue[7] * alen != hlen * 4 || gue[6] > gue[7]))))
				return 0;
			if (hlen && !gue[4] && !gue[5]) {
				if (gue[7] > LB_HOPS_MAX - 1) {
					*drop = 1;
					return 0;
				}
				next = gue[6];
				count = gue[7];
				hops_at = l3 + outer + 8;
			}
			proto = gue[1];
			outer += 4 + hlen * 4;
		} else if (gue[0] >> 6 == 1) {
			proto = gue[0] >> 4 == 4 ? 4 : gue[0] >> 4 == 6 ? 41 : 0;
		} else {
			return 0;
		}
	}
	inner_version = proto == 4 ? 4 : proto == 41 ? 6 : 0;
	/* The inner packet starts inside the outer one; bytes past it are padding. */
	if (outer >= ip_len)
		return 0;
	w.at = l3 + outer;
	if (!inner_version || !room(&w, 1) || f[l3 + outer] >> 4 != inner_version)
		return 0;
	if (!room(&w, inner_version == 4 ? 20 : 40))
		return 0;
	if (inner_version == 4 ? !addr_is(LB_FAMILY_IPV4, f + l3 + outer + 16, VIP4) :
				 !addr_is(LB_FAMILY_IPV6, f + l3 + outer + 24, VIP6)) {
		*drop = 1;
		return 0;
	}
	/* Sent on: only to a trusted peer (the one: the balancer), never to this host. */
	if (hops_at && next < count && l3 == 14 && outer <= 256 && !decap_takes(&w, inner_version)) {
		const unsigned char *hop = f + hops_at + next * (family == LB_FAMILY_IPV4 ? 4 : 16);

		if (!addr_is(family, hop, family == LB_FAMILY_IPV4 ? TRUSTED4 : TRUSTED6) ||
		    addr_is(family, hop, family == LB_FAMILY_IPV4 ? LOCAL4 : LOCAL6)) {
			*drop = 1;
			return 0;
		}
	}
	*l3_out = l3;
	return outer;
}

/*
 * A valid encapsulated frame: IPIP either way, GUE with a header (and hops)
 * or without; its inner packet mostly to the VIP.
 */
static void encap_frame(struct test_rng *rng, struct pkt *pkt)
{
	int outer6 = (int)test_rng_below(rng, 2), inner6 = (int)test_rng_below(rng, 2);
	int kind = (int)test_rng_below(rng, 3), hops = (int)test_rng_below(rng, 3);
	int trusted = test_rng_below(rng, 4) != 0, local = test_rng_below(rng, 4) != 0;
	/* 1 in 8 to another address than the VIP: dropped, never taken. */
	int vip = test_rng_below(rng, 8) != 0;
	struct pkt inner;
	struct pkt_spec spec = { .family = inner6 ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4,
				 .protocol = test_rng_below(rng, 2) ? IPPROTO_TCP : IPPROTO_UDP,
				 .src = inner6 ? "2001:db8:10::2" : "198.18.10.2",
				 .dst = inner6 ? (vip ? VIP6 : "2001:db8:13::12") :
						 (vip ? VIP4 : "198.18.13.12"),
				 .sport = (uint16_t)(1 + test_rng_below(rng, 65535)), .dport = 80 };
	/* GUE with a header (kind 1: an all-zero hop list of @hops) or without (kind 2). */
	uint8_t gue[20] = { (uint8_t)(1 + hops), inner6 ? 41 : 4, 0, 0, 0, 0, 0, (uint8_t)hops };
	struct pkt_encap e = {
		.family = outer6 ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4,
		.src = outer6 ? (trusted ? TRUSTED6 : "2001:db8:10::2") :
				(trusted ? TRUSTED4 : "198.18.10.2"),
		.dst = outer6 ? (local ? LOCAL6 : "2001:db8:13::99") :
				(local ? LOCAL4 : "198.18.13.99"),
		.proto = kind ? IPPROTO_UDP : inner6 ? 41 : 4, .dport = DECAP_GUE_PORT,
		.gue = gue, .gue_len = kind == 1 ? 8 + (size_t)hops * 4 : 0,
	};

	pkt_build(&inner, &spec);
	pkt_build_encap(pkt, &e, &inner);
}

/* A frame in hex, for the one failure a run reports. */
static void hex_dump(const char *what, const unsigned char *p, size_t len)
{
	size_t i;

	fprintf(stderr, "%s (%zu bytes):", what, len);
	for (i = 0; i < len; i++)
		fprintf(stderr, "%s%02x", i % 16 ? " " : "\n  ", p[i]);
	fprintf(stderr, "\n");
}

static void test_hostile_frames_through_the_decap_program(void **state)
{
	const char *env = getenv("FRAMES");
	long frames = env ? atol(env) : FRAMES_DEFAULT, n, decapsulated = 0, dropped = 0;
	struct test_rng rng = { SEED ^ 0xdeca9 };
	struct decap_bpf *skel;
	unsigned char out[PKT_MAX];
	__u64 packets = 0, bytes = 0, bytes_sent = 0;
	__u32 r, verdict;
	size_t out_len;
	int fd, drop;

	(void)state;
	if (skip_reason)
		skip();
	skel = harness_decap_open();
	assert_non_null(skel);
	fd = bpf_program__fd(skel->progs.ringlb_decap);
	for (n = 0; n < frames; n++) {
		int kind = (int)test_rng_below(&rng, 10);
		size_t outer, l3 = 0;
		struct pkt pkt;

		/* 2 in 10 noise, 5 in 10 damaged encapsulations, 3 in 10 whole ones. */
		if (kind < 2) {
			random_frame(&rng, &pkt);
		} else {
			encap_frame(&rng, &pkt);
			if (kind < 7) {
				int m = 1 + (int)test_rng_below(&rng, 3);

				while (m--)
					mutate(&rng, &pkt);
			}
		}
		outer = decap_oracle(pkt.data, pkt.len, &l3, &drop);
		verdict = harness_run(fd, pkt.data, pkt.len, out, &out_len, 1, NULL);
		bytes_sent += pkt.len;
		if (drop) {
			check(verdict == XDP_DROP, "decap frame %ld: verdict %u, the oracle says dropped",
			      n, verdict);
			dropped++;
			continue;
		}
		check(verdict == XDP_PASS, "decap frame %ld: verdict %u, not passed", n, verdict);
		if (!outer) {
			check(out_len == pkt.len && !memcmp(out, pkt.data, pkt.len),
			      "decap frame %ld (%zu bytes): changed, the oracle says untouched", n,
			      pkt.len);
			continue;
		}
		decapsulated++;
		if (!(out_len == pkt.len - outer && !memcmp(out, pkt.data, l3 - 2) &&
		      be16(out + l3 - 2) == (pkt.data[l3 + outer] >> 4 == 4 ? 0x0800 : 0x86dd) &&
		      !memcmp(out + l3, pkt.data + l3 + outer, pkt.len - l3 - outer))) {
			hex_dump("frame", pkt.data, pkt.len);
			hex_dump("out", out, out_len);
			fail_msg("decap frame %ld (%zu bytes): not the inner packet behind its header "
				 "(the oracle: %zu bytes of outer headers)", n, pkt.len, outer);
		}
	}
	for (r = 0; r < LB_DECAP_REASON_COUNT; r++) {
		packets += harness_percpu_sum(bpf_map__fd(skel->maps.decap_stats), r, 2, 0);
		bytes += harness_percpu_sum(bpf_map__fd(skel->maps.decap_stats), r, 2, 1);
	}
	check(packets == (__u64)frames && bytes == bytes_sent,
	      "decap counters add up to %llu frames and %llu bytes, %ld and %llu sent",
	      (unsigned long long)packets, (unsigned long long)bytes, frames,
	      (unsigned long long)bytes_sent);
	printf("hostile decap: %ld frames, %llu bytes: %ld decapsulated, %ld dropped, %ld untouched, "
	       "each as the oracle said; counters add up\n", frames, (unsigned long long)bytes_sent,
	       decapsulated, dropped, frames - decapsulated - dropped);
	decap_bpf__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_frames_get_the_documented_verdict_and_are_all_counted),
		cmocka_unit_test(test_hostile_frames_through_the_decap_program),
	};

	return run_group("test_hostile", tests, group_setup, group_teardown);
}
