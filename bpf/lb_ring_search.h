/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The search of a ring map (the layout of lb_contract.h), shared word for
 * word by the XDP program (lb_ring.h) and the controller (user/ringmap.c), so
 * the controller's answers about a map are the kernel's.
 *
 * The includer first defines
 *   ring_slot(ring, i): slot i of @ring (const union lb_ring_slot *), or
 *                       NULL when the map has no slot i
 * For the program that is a map lookup the verifier inlines; for the
 * controller an index into a memory mapping, checked against its size.
 */
#ifndef RINGLB_LB_RING_SEARCH_H
#define RINGLB_LB_RING_SEARCH_H

#include "lb_contract.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/** RING_SEARCH_BAD - ring_search() found a slot the map does not have. */
#define RING_SEARCH_BAD (-1)

/*
 * ring_below() - all ones when @a < @b (unsigned), else zero, without a
 * branch: the borrow of a - b, as Hacker's Delight 2-12 gives it.
 */
static __always_inline __u32 ring_below(__u64 a, __u64 b)
{
	return (__u32)0 - (__u32)(((~a & b) | ((~a | b) & (a - b))) >> 63);
}

/** ring_bucket_of() - the bucket of @hash in an index of 2^@bits buckets (@bits in range). */
static __always_inline __u32 ring_bucket_of(__u64 hash, __u32 bits)
{
	return (__u32)(hash >> (64 - bits));
}

/**
 * ring_search() - the owner of @hash: the backend of the first point at or
 * after @hash, going round the circle.
 * @ring: the ring map, handed to ring_slot()
 * @bits: its bucket bits (the VIP value's), LB_RING_BITS_MIN .. LB_RING_BITS_MAX
 * @hash: the flow's position on the circle
 * @backend_id: the answer
 *
 * One 8-byte bucket entry answers every hash at or before the bucket's first
 * point, and the next bucket's entry (the same cache line seven times in
 * eight) every hash after it in a bucket of one point; only a hash after the
 * first point of a bucket holding more reads its run word and halves its run.
 *
 * Return: 0, or RING_SEARCH_BAD when @bits or a slot is out of range.
 */
static __always_inline int ring_search(void *ring, __u32 bits, __u64 hash, __u32 *backend_id)
{
	const union lb_ring_slot *slot, *probe;
	__u32 j, run, at, count, base, len, half, i;
	__u64 key, entry;

	if (bits < LB_RING_BITS_MIN || bits > LB_RING_BITS_MAX)
		return RING_SEARCH_BAD;
	j = ring_bucket_of(hash, bits);
	/* The hash's offset in its bucket, as entries hold positions (contract). */
	key = hash << bits;
	slot = ring_slot(ring, LB_RING_BUCKET_SLOT(j));
	if (!slot)
		return RING_SEARCH_BAD;
	entry = slot->entry;
	if (entry >= key) {
		*backend_id = (__u32)(entry & LB_RING_ENTRY_BACKEND_MASK);
		return 0;
	}
	if (!(entry & LB_RING_ENTRY_MORE))
		goto next_bucket;
	slot = ring_slot(ring, LB_RING_RUNS_SLOT(bits, j));
	if (!slot)
		return RING_SEARCH_BAD;
	run = slot->runs[j & 1];
	at = LB_RING_RUN_SLOT(bits, LB_RING_RUN_START(run));
	count = LB_RING_RUN_COUNT(run);
	/* The run's first point is the bucket's entry, known to be before the hash. */
	base = 1;
	len = count > 1 ? count - 1 : 0;
	/* The verifier needs a constant bound; a run of count takes ceil(log2 count). */
	for (i = 0; i < LB_RING_RUN_STEPS_MAX; i++) {
		if (len <= 1)
			break;
		half = len >> 1;
		probe = ring_slot(ring, at + base + half);
		if (!probe)
			return RING_SEARCH_BAD;
		base += half & ring_below(probe->entry, key);
		len -= half;
	}
	if (base >= count)
		goto next_bucket;
	probe = ring_slot(ring, at + base);
	if (!probe)
		return RING_SEARCH_BAD;
	if (probe->entry < key) {
		if (++base >= count)
			goto next_bucket;
		probe = ring_slot(ring, at + base);
		if (!probe)
			return RING_SEARCH_BAD;
	}
	*backend_id = (__u32)(probe->entry & LB_RING_ENTRY_BACKEND_MASK);
	return 0;
next_bucket:
	/* Bucket 2^b - 1's next is the sentinel: bucket 0's entry again. */
	slot = ring_slot(ring, LB_RING_BUCKET_SLOT(j + 1));
	if (!slot)
		return RING_SEARCH_BAD;
	*backend_id = (__u32)(slot->entry & LB_RING_ENTRY_BACKEND_MASK);
	return 0;
}

#endif /* RINGLB_LB_RING_SEARCH_H */
