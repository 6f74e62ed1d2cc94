// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test frame construction; see packets.h. Plain byte writing, no kernel
 * headers, so the layout on the wire is explicit here.
 */
#include "packets.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <string.h>

const uint8_t pkt_lb_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
const uint8_t pkt_client_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xc1 };

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

void pkt_addr(int family, const char *text, uint8_t out[16])
{
	int ok;

	memset(out, 0, 16);
	ok = inet_pton(family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6, text, out);
	assert(ok == 1);
	(void)ok;
}

void pkt_ipv4_checksum(struct pkt *pkt)
{
	unsigned char *ip = pkt->data + pkt->l3;
	size_t len = (size_t)(ip[0] & 0x0f) * 4, i;
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	put16(ip + 10, (uint16_t)~sum);
}

/* Ethernet from the client to the balancer, with @vlan's tag when not 0: where L3 starts. */
static size_t eth_put(unsigned char *p, uint16_t vlan, int family)
{
	size_t off = 12;

	memcpy(p, pkt_lb_mac, 6);
	memcpy(p + 6, pkt_client_mac, 6);
	if (vlan) {
		put16(p + off, ETHERTYPE_VLAN);
		put16(p + off + 2, vlan);
		off += 4;
	}
	put16(p + off, family == LB_FAMILY_IPV4 ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6);
	return off + 2;
}

void pkt_build(struct pkt *pkt, const struct pkt_spec *spec)
{
	unsigned char *p = pkt->data;
	uint8_t src[16], dst[16];
	size_t l4_len = spec->protocol == IPPROTO_TCP ? 20 : 8, off = 0, i;
	size_t payload = spec->payload ? spec->payload_len : PKT_PAYLOAD;

	memset(pkt, 0, sizeof(*pkt));
	pkt_addr(spec->family, spec->src, src);
	pkt_addr(spec->family, spec->dst, dst);
	off = eth_put(p, spec->vlan, spec->family);
	pkt->l3 = off;
	if (spec->family == LB_FAMILY_IPV4) {
		size_t ihl = 5 + spec->ipv4_option_words;

		p[off] = (unsigned char)(0x40 | ihl);
		put16(p + off + 2, (uint16_t)(ihl * 4 + l4_len + payload));
		put16(p + off + 4, 0x1234);
		put16(p + off + 6, 0x4000); /* DF */
		p[off + 8] = 64;
		p[off + 9] = spec->protocol;
		memcpy(p + off + 12, src, 4);
		memcpy(p + off + 16, dst, 4);
		for (i = 20; i < ihl * 4; i++)
			p[off + i] = 1; /* NOP options */
		off += ihl * 4;
	} else {
		size_t ext = spec->ipv6_hopopts ? 8 : 0;

		p[off] = 0x60;
		put16(p + off + 4, (uint16_t)(ext + l4_len + payload));
		p[off + 6] = spec->ipv6_hopopts ? 0 /* hop-by-hop */ : spec->protocol;
		p[off + 7] = 64;
		memcpy(p + off + 8, src, 16);
		memcpy(p + off + 24, dst, 16);
		off += 40;
		if (ext) {
			p[off] = spec->protocol;
			p[off + 1] = 0;    /* 8 bytes in all */
			p[off + 2] = 1;    /* PadN option of 4 bytes */
			p[off + 3] = 4;
			off += 8;
		}
	}
	pkt->l4 = off;
	put16(p + off, spec->sport);
	put16(p + off + 2, spec->dport);
	if (spec->protocol == IPPROTO_TCP) {
		put16(p + off + 4, 0x0102);
		p[off + 12] = 5 << 4;
		p[off + 13] = spec->tcp_flags ? spec->tcp_flags : 0x02; /* SYN */
		put16(p + off + 14, 65535);
	} else {
		put16(p + off + 4, (uint16_t)(8 + payload));
	}
	off += l4_len;
	assert(off + payload <= PKT_MAX);
	for (i = 0; i < payload; i++)
		p[off + i] = spec->payload ? spec->payload[i] : (unsigned char)('a' + i % 26);
	off += payload;
	pkt->len = off;
	if (spec->family == LB_FAMILY_IPV4)
		pkt_ipv4_checksum(pkt);
}

void pkt_build_icmp_error(struct pkt *pkt, const struct pkt_spec *quoted, const char *src,
			  const char *dst, uint8_t type, uint8_t code)
{
	struct pkt q;
	struct pkt_spec outer = { .family = quoted->family, .protocol = IPPROTO_TCP, .src = src,
				  .dst = dst };
	unsigned char *p = pkt->data;
	size_t quote_len;

	pkt_build(&q, quoted);
	pkt_build(pkt, &outer);
	quote_len = q.l4 + 8 - q.l3;
	p[pkt->l3 + (quoted->family == LB_FAMILY_IPV4 ? 9 : 6)] =
		quoted->family == LB_FAMILY_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	memset(p + pkt->l4, 0, 8);
	p[pkt->l4] = type;
	p[pkt->l4 + 1] = code;
	memcpy(p + pkt->l4 + 8, q.data + q.l3, quote_len);
	pkt->len = pkt->l4 + 8 + quote_len;
	if (quoted->family == LB_FAMILY_IPV4) {
		put16(p + pkt->l3 + 2, (uint16_t)(pkt->len - pkt->l3));
		pkt_ipv4_checksum(pkt);
	} else {
		put16(p + pkt->l3 + 4, (uint16_t)(pkt->len - pkt->l4));
	}
}

void pkt_build_encap(struct pkt *pkt, const struct pkt_encap *e, const struct pkt *inner)
{
	unsigned char *p = pkt->data;
	size_t inner_len = inner->len - inner->l3, udp_len = 0, off;
	uint8_t a[16];

	memset(pkt, 0, sizeof(*pkt));
	pkt->l3 = eth_put(p, e->vlan, e->family);
	if (e->proto == IPPROTO_UDP)
		udp_len = 8 + e->gue_len + inner_len;
	off = pkt->l3;
	if (e->family == LB_FAMILY_IPV4) {
		p[off] = 0x45;
		put16(p + off + 2, (uint16_t)(20 + (udp_len ? udp_len : inner_len)));
		p[off + 8] = 64;
		p[off + 9] = e->proto;
		pkt_addr(e->family, e->src, a);
		memcpy(p + off + 12, a, 4);
		pkt_addr(e->family, e->dst, a);
		memcpy(p + off + 16, a, 4);
		off += 20;
	} else {
		p[off] = 0x60;
		put16(p + off + 4, (uint16_t)(udp_len ? udp_len : inner_len));
		p[off + 6] = e->proto;
		p[off + 7] = 64;
		pkt_addr(e->family, e->src, p + off + 8);
		pkt_addr(e->family, e->dst, p + off + 24);
		off += 40;
	}
	if (udp_len) {
		put16(p + off, 50000);
		put16(p + off + 2, e->dport);
		put16(p + off + 4, (uint16_t)udp_len);
		off += 8;
		if (e->gue_len)
			memcpy(p + off, e->gue, e->gue_len);
		off += e->gue_len;
	}
	pkt->l4 = off;
	memcpy(p + off, inner->data + inner->l3, inner_len);
	pkt->len = off + inner_len;
	if (e->family == LB_FAMILY_IPV4)
		pkt_ipv4_checksum(pkt);
}
