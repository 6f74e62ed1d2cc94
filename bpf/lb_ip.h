/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What ringlb's programs that rewrite IP headers share (the balancer's
 * encapsulation, the backend's decap program): where a frame's IP header
 * starts, the ones' complement sums of checksums, and the address families
 * bpf_fib_lookup() takes.
 */
#ifndef RINGLB_LB_IP_H
#define RINGLB_LB_IP_H

#include "lb_parse.h"

/* The FIB's families; the libc headers that name them do not build for BPF. */
#define AF_INET 2
#define AF_INET6 10

/** l3_of() - the frame's L3 offset (one VLAN tag at most, as the parser allows) and EtherType. */
static __always_inline int l3_of(void *data, void *end, __u32 *l3, __be16 *proto)
{
	struct ethhdr *eth = data;
	struct vlan_tag *vlan;

	if ((void *)(eth + 1) > end)
		return -1;
	*l3 = sizeof(*eth);
	*proto = eth->h_proto;
	if (*proto == ETH_P_8021Q_BE || *proto == ETH_P_8021AD_BE) {
		vlan = (void *)(eth + 1);
		if ((void *)(vlan + 1) > end)
			return -1;
		*proto = vlan->encapsulated_proto;
		*l3 += sizeof(*vlan);
	}
	return 0;
}

/** csum_fold() - a ones' complement sum folded to 16 bits (0xffff: a checksum over it holds). */
static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/** csum_finish() - the checksum field of a sum: folded, complemented. */
static __always_inline __u16 csum_finish(__u64 sum)
{
	return (__u16)~csum_fold(sum);
}

/** csum_words() - @sum plus @words 16-bit words at @p (a constant count: unrolled). */
static __always_inline __u64 csum_words(const void *p, __u32 words, __u64 sum)
{
	const __u16 *w = p;

	for (__u32 i = 0; i < words; i++)
		sum += w[i];
	return sum;
}

/**
 * ipv4_header_sum() - the ones' complement sum of an IPv4 header without
 * options, as five 32-bit words: they fold the same as ten 16-bit ones, in
 * half the loads.
 * @ip: the header, ihl 5, its 20 bytes checked inside the frame by the caller
 */
static __always_inline __u64 ipv4_header_sum(const struct iphdr *ip)
{
	const __u32 *d = (const void *)ip;

	return (__u64)d[0] + d[1] + d[2] + d[3] + d[4];
}

/**
 * ipv4_checksum_ok() - does the IPv4 header's checksum hold, its @ihl bytes
 * of options included? The caller has checked the first 20 bytes in the
 * frame. A header without options (nearly all) is summed as five 32-bit
 * words with no loop: ones' complement sums fold the same from 32-bit words
 * as from 16-bit ones.
 */
static __always_inline int ipv4_checksum_ok(const struct iphdr *ip, __u32 ihl, void *end)
{
	const __u16 *w = (const void *)ip;
	__u64 sum = 0;
	__u32 i;

	if (ihl == sizeof(*ip))
		return csum_fold(ipv4_header_sum(ip)) == 0xffff;
	for (i = 0; i < 30; i++) {
		if (i * 2 >= ihl || (void *)(w + i + 1) > end)
			break;
		sum += w[i];
	}
	return csum_fold(sum) == 0xffff;
}

#endif /* RINGLB_LB_IP_H */
