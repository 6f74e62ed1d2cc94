// SPDX-License-Identifier: GPL-2.0-only
/*
 * A test program that reads a VIP value the way ringlb's data path does and
 * holds on to it: it copies the value, says it holds it, waits (bpf_loop)
 * until the test releases it or a few tens of milliseconds pass, and copies
 * the value again through the same pointer. If the controller's updates let
 * the kernel reuse the element while a program still reads it, the second
 * copy differs from the first. The vips map is the data path's definition
 * (lb_vips.h); the test reuses its own map's descriptor for it.
 */
/* Maps of its own: nothing is pinned (lb_vips.h). */
#define LB_MAPS_PRIVATE
#include "lb_vips.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the test. */
struct lb_vip_key probe_key = {};
volatile __u32 release = 0;

/* Read by the test. */
volatile __u32 holding = 0;
__u32 loops = 0;
struct lb_vip before = {};
struct lb_vip after = {};

static long wait_for_release(__u64 index, void *ctx)
{
	(void)index;
	(void)ctx;
	return release ? 1 : 0;
}

SEC("xdp")
int vip_reader(struct xdp_md *ctx)
{
	struct lb_vip_key key = probe_key;
	struct lb_vip *vip = bpf_map_lookup_elem(&vips, &key);

	(void)ctx;
	if (!vip)
		return XDP_ABORTED;
	__builtin_memcpy(&before, vip, sizeof(before));
	holding = 1;
	loops = bpf_loop(1 << 23, wait_for_release, NULL, 0);
	asm volatile("" ::: "memory");
	__builtin_memcpy(&after, vip, sizeof(after));
	return XDP_PASS;
}
