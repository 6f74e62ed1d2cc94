/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the benchmark's XDP programs (bench_xdp.bpf.c) and its harness
 * (bench_xdp.c) share: the driver's configuration and flow tuples, and the
 * size of the O(1) table. Included by both sides.
 */
#ifndef RINGLB_TESTS_BENCH_XDP_H
#define RINGLB_TESTS_BENCH_XDP_H

#include <linux/types.h>

#include "lb_contract.h"

/** BENCH_TABLE_SIZE - M of the O(1) table: prime, as Maglev's table sizes are. */
#define BENCH_TABLE_SIZE 65537
/**
 * BENCH_WIDE_TABLE_MAX - entries of the "wide" table, an O(1) table as large
 * as the largest ring map: an 8-byte entry per 8-byte slot (an array map's
 * elements are 8-byte aligned, so 8 bytes is the smallest entry a memory
 * mapping of it shows densely).
 */
#define BENCH_WIDE_TABLE_MAX LB_RING_CLASS3_SLOTS
/** BENCH_FLOWS - distinct flows the driver cycles through at most. */
#define BENCH_FLOWS 4096
/** BENCH_TARGETS - slots of the program array the driver tail-calls into. */
#define BENCH_TARGETS 11
/* CPUs the reference keeps a flow table for; entries of each (bench_reference, 1g). */
#define BENCH_REF_CPUS 64
#define BENCH_REF_FLOWS 65536
/* Backends the reference may address (its reals), 1 .. BENCH_REF_REALS - 1. */
#define BENCH_REF_REALS 4096
/* Per-VIP counters of bench_reference_katran, and its three extra slots after them. */
#define BENCH_REF_VIPS 512
#define BENCH_REF_STAT_LRU BENCH_REF_VIPS
#define BENCH_REF_STAT_MISS (BENCH_REF_VIPS + 1)
#define BENCH_REF_STAT_RATE (BENCH_REF_VIPS + 2)
/* New connections a second past which Katran's reference stops (never, in the bench). */
#define BENCH_REF_CONN_RATE_MAX (1ull << 40)

/* A backend of the reference: its IPv4 address (__be). */
struct bench_real {
	__be32 addr;
};

/* The floor reference's flow key (the harness makes its tables of these). */
struct ref_flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 protocol;
	__u8 pad[3];
};

/* bench_reference_katran's flow key: Katran's fields, IPv4 in the first words. */
struct ref_flow_key_wide {
	__be32 src[4];
	__be32 dst[4];
	__be16 sport;
	__be16 dport;
	__u8 protocol;
	__u8 pad[3];
};

/* Where a reference's flow goes: its real, and when it was pinned. */
struct ref_flow {
	__u32 real;
	__u32 pad;
	__u64 seen_ns;
};

/**
 * struct bench_tuple - one flow's client address and port (network order).
 */
struct bench_tuple {
	__be32 saddr;
	__be16 sport;
	__u16 pad;
};

/**
 * struct bench_config - what the driver does.
 * @target: slot of the program under test in targets
 * @fresh_flows: 1: a never-seen flow every packet; 0: cycle through flow_tuples
 * @flows: how many of flow_tuples to cycle through, 1 .. BENCH_FLOWS
 */
struct bench_config {
	__u32 target;
	__u32 fresh_flows;
	__u32 flows;
};

/** BENCH_FRAME_MAX - bytes of the frame bench_reset restores before every run. */
#define BENCH_FRAME_MAX 128

/**
 * struct bench_frame - the frame bench_reset makes the packet again.
 * @len: its length, even, at most BENCH_FRAME_MAX
 * @data: its bytes
 */
struct bench_frame {
	__u32 len;
	__u8 data[BENCH_FRAME_MAX];
};

#endif /* RINGLB_TESTS_BENCH_XDP_H */
