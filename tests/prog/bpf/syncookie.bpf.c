// SPDX-License-Identifier: GPL-2.0-only
/*
 * A test program: the SYN cookie a listener would answer an IPv4 TCP SYN
 * with (bpf_tcp_gen_syncookie), so the tests can build the ACK that
 * completes it and check that the decap program takes it. It also marks
 * the listener as having sent cookies, as the kernel does. Needs
 * net.ipv4.tcp_syncookies=2 (cookies always) in the test's namespace.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* Read by the test: the cookie (the SYN-ACK's sequence number), 0 when none. */
__u32 cookie = 0;

SEC("xdp")
int gen_cookie(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *th = (void *)(ip + 1);
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk;
	__s64 value;

	if ((void *)(th + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return XDP_ABORTED;
	tuple.ipv4.saddr = ip->saddr;
	tuple.ipv4.daddr = ip->daddr;
	tuple.ipv4.sport = th->source;
	tuple.ipv4.dport = th->dest;
	sk = bpf_skc_lookup_tcp(ctx, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return XDP_ABORTED;
	value = bpf_tcp_gen_syncookie(sk, ip, sizeof(*ip), th, sizeof(*th));
	bpf_sk_release(sk);
	if (value < 0)
		return XDP_ABORTED;
	cookie = (__u32)value;
	return XDP_PASS;
}
