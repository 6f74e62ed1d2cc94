// SPDX-License-Identifier: GPL-2.0-only
/*
 * XDP_PASS for every frame. Test topologies attach it to the bridge side of
 * the balancer's veth: native XDP_TX on a veth only delivers frames when the
 * peer veth has an XDP program too (see DESIGN.md, traps).
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
