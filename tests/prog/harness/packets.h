/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Crafting test frames: Ethernet (optionally VLAN-tagged), IPv4 or IPv6,
 * TCP or UDP, with correct lengths and IPv4 checksum, and the offsets of
 * each header so tests can cut or corrupt a frame at a chosen boundary.
 */
#ifndef RINGLB_TESTS_PACKETS_H
#define RINGLB_TESTS_PACKETS_H

#include <stddef.h>
#include <stdint.h>

#include "lb_contract.h"

#define PKT_MAX 2048
#define PKT_PAYLOAD 32

/**
 * struct pkt_spec - what to build.
 * @family: LB_FAMILY_IPV4 or LB_FAMILY_IPV6
 * @protocol: IPPROTO_TCP or IPPROTO_UDP
 * @src, @dst: addresses as text
 * @sport, @dport: ports (host order)
 * @vlan: VLAN id, 0 for an untagged frame
 * @tcp_flags: TCP flag byte (SYN when 0 is asked for TCP)
 * @ipv4_option_words: extra 32-bit IPv4 option words (NOPs)
 * @ipv6_hopopts: add one 8-byte hop-by-hop options header
 */
struct pkt_spec {
	int family;
	uint8_t protocol;
	const char *src;
	const char *dst;
	uint16_t sport;
	uint16_t dport;
	uint16_t vlan;
	uint8_t tcp_flags;
	uint8_t ipv4_option_words;
	int ipv6_hopopts;
	const uint8_t *payload; /* the L4 payload; NULL: PKT_PAYLOAD octets of a pattern */
	size_t payload_len;
};

/** struct pkt - a built frame and where its headers start. */
struct pkt {
	unsigned char data[PKT_MAX];
	size_t len;
	size_t l3; /* IP header */
	size_t l4; /* TCP/UDP header (after IPv6 extension headers) */
};

/** pkt_build() - build @spec into @pkt. */
void pkt_build(struct pkt *pkt, const struct pkt_spec *spec);

/**
 * pkt_build_icmp_error() - an ICMP (or ICMPv6) error quoting a packet.
 * @pkt: the frame built
 * @quoted: the packet the error is about (its IP header and first 8 bytes
 *          past it are quoted)
 * @src: the error's sender (a router)
 * @dst: where the error is sent
 * @type: ICMP type (3 or 11 for IPv4; 1, 2 or 3 for ICMPv6)
 * @code: ICMP code
 */
void pkt_build_icmp_error(struct pkt *pkt, const struct pkt_spec *quoted, const char *src,
			  const char *dst, uint8_t type, uint8_t code);

/**
 * struct pkt_encap - an outer header around a packet, as the balancer sends it.
 * @family: of the outer header
 * @src, @dst: its addresses as text
 * @proto: 4 or 41 (IPIP), or IPPROTO_UDP (GUE)
 * @dport: the UDP destination port, for GUE
 * @gue: the bytes right after the UDP header (a GUE header, or none)
 * @gue_len: how many
 * @vlan: VLAN id, 0 for an untagged frame
 */
struct pkt_encap {
	int family;
	const char *src;
	const char *dst;
	uint8_t proto;
	uint16_t dport;
	const uint8_t *gue;
	size_t gue_len;
	uint16_t vlan;
};

/**
 * pkt_build_encap() - @inner's IP packet (from its l3) inside @e's outer
 * headers. @pkt->l4 is where the inner packet starts.
 */
void pkt_build_encap(struct pkt *pkt, const struct pkt_encap *e, const struct pkt *inner);

/** pkt_ipv4_checksum() - recompute the IPv4 header checksum after a change. */
void pkt_ipv4_checksum(struct pkt *pkt);

/** pkt_addr() - parse an address into 16 bytes (IPv4 in the first 4). */
void pkt_addr(int family, const char *text, uint8_t out[16]);

/** The MAC the test frames are addressed to (the balancer's interface). */
extern const uint8_t pkt_lb_mac[6];
/** The MAC the test frames come from (the client or router). */
extern const uint8_t pkt_client_mac[6];

#endif /* RINGLB_TESTS_PACKETS_H */
