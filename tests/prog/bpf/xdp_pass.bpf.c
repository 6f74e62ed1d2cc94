// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two trivial programs for test topologies. xdp_pass goes on the bridge side
 * of the balancer's veth: native XDP_TX on a veth only delivers frames when
 * the peer veth has an XDP program too (see DESIGN.md, traps). xdp_drop goes
 * on backends during the forwarding benchmark, so their stacks do not spend
 * the CPU the measurement needs.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}
