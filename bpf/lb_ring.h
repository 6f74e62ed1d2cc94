/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring search of ringlb's XDP programs, over one ring map laid out as
 * lb_contract.h describes: ring_lookup() of ring.c, step for step. Shared by
 * the data path and the benchmark.
 */
#ifndef RINGLB_LB_RING_H
#define RINGLB_LB_RING_H

#include <bpf/bpf_helpers.h>

#include "lb_contract.h"
#include "lb_parse.h"

static __always_inline union lb_ring_slot *ring_slot(void *ring, __u32 slot)
{
	return bpf_map_lookup_elem(ring, &slot);
}

/*
 * The owner of @hash in @ring (a ring map, NULL when the VIP has none), as
 * ring_lookup() finds it: 0 and the backend id, or -(reason) to drop.
 */
static __always_inline int ring_pick(void *ring, __u64 hash, __u32 *backend_id)
{
	union lb_ring_slot *header, *b0, *b1, *probe_slot;
	__u32 bits, steps, bucket, base, end, last, points_at, i;

	if (!ring)
		return PARSE_FAIL(LB_REASON_DROP_NO_RING);
	header = ring_slot(ring, 0);
	if (!header)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	if (header->header.points == 0)
		return PARSE_FAIL(LB_REASON_DROP_NO_BACKEND);
	bits = header->header.index_bits;
	steps = header->header.search_steps;
	if (bits > LB_RING_INDEX_BITS_MAX || steps > LB_RING_SEARCH_STEPS_MAX)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	bucket = bits ? (__u32)(hash >> (64 - bits)) : 0;
	b0 = ring_slot(ring, LB_RING_BUCKET_SLOT(bucket));
	b1 = ring_slot(ring, LB_RING_BUCKET_SLOT(bucket + 1));
	if (!b0 || !b1)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	base = b0->bucket.first;
	end = b1->bucket.first;
	if (end - base <= 1) {
		*backend_id = hash > b0->bucket.position ? b1->bucket.backend_id :
							   b0->bucket.backend_id;
		return 0;
	}
	/* A bucket of two or more points: clamped power-of-two strides. */
	points_at = LB_RING_POINT_SLOT(bits, 0);
	last = end - 1;
	for (i = 0; i < LB_RING_SEARCH_STEPS_MAX; i++) {
		__u32 probe;

		if (i >= steps)
			break;
		probe = base + (1u << (steps - 1 - i)) - 1;
		if (probe > last)
			probe = last;
		probe_slot = ring_slot(ring, points_at + probe);
		if (!probe_slot)
			return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
		if (probe_slot->point.position < hash)
			base = probe + 1;
	}
	if (base == end) {
		*backend_id = b1->bucket.backend_id;
		return 0;
	}
	probe_slot = ring_slot(ring, points_at + base);
	if (!probe_slot)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	*backend_id = probe_slot->point.backend_id;
	return 0;
}

#endif /* RINGLB_LB_RING_H */
