/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The VIP map (map "vips"), on its own so that a program can read VIPs
 * without creating the ring maps: the data path has it through lb_ring.h,
 * and the test program that holds a VIP value (tests/vip_reader.bpf.c)
 * includes it alone.
 */
#ifndef RINGLB_LB_VIPS_H
#define RINGLB_LB_VIPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "lb_contract.h"

#include "lb_pin.h"

/*
 * A replaced or deleted VIP value's element is reused by the next update at
 * once (the BPF memory allocator, Linux 6.1 and later; a preallocated map
 * reuses it at once too), even while a packet still reads it. The
 * controller therefore lets an RCU grace period pass between any two changes
 * of a value (lb.c, vip_value_set()), so no packet ever sees a value change
 * under it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_VIPS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lb_vip_key);
	__type(value, struct lb_vip);
	LB_PINNED;
} vips SEC(".maps");

#endif /* RINGLB_LB_VIPS_H */
