// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Looking keys up in a ring: the bucket index, then a fixed number of
 * clamped strides inside a bucket of two or more points.
 */
#include "ring_impl.h"

#include <errno.h>

/*
 * The library's own search over its point array; the kernel searches its
 * ring map with bpf/lb_ring_search.h instead, and the two are held to the
 * same answer for every key by the tests. Find the key's bucket. A bucket with
 * at most one point (nine lookups in ten at two buckets per point) answers
 * from the index alone: the key belongs to the bucket's first point if it is
 * at or below that point's position, else to the next bucket's first point.
 *
 * A fuller bucket takes the ring's fixed number of power-of-two strides over
 * its points [first, end): a stride of 2^k moves past 2^k points that are all
 * below the key. A probe past the bucket is clamped to its last point, which
 * keeps every read inside the bucket and the answer exact (a clamped probe
 * only confirms what is already known). When every point of the bucket is
 * below the key, the owner is the next bucket's first point, whose owner that
 * bucket records (wrapping past the last point).
 */
/* The strides over a bucket of two or more points; kept out of line so the
 * common path stays a leaf with no registers to save. */
static __attribute__((noinline)) uint32_t bucket_search(const struct ring *r,
							 const struct ring_bucket *bucket,
							 uint64_t key, uint32_t *member)
{
	uint32_t base = bucket[0].first, end = bucket[1].first, past, i;
	unsigned int step;

	/* Ask for all of the bucket's lines at once, not one probe at a time. */
	for (i = base; i < end; i += 4)
		__builtin_prefetch(&r->points[i]);
	__builtin_prefetch(&r->points[end - 1]);
	for (step = r->search_steps; step > 0; step--) {
		uint32_t probe = base + (1u << (step - 1)) - 1;

		probe = probe < end - 1 ? probe : end - 1;
		past = -(uint32_t)(r->points[probe].position < key);
		base = (base & ~past) | ((probe + 1) & past);
	}
	past = -(uint32_t)(base == end);
	*member = (r->points[base].member & ~past) | (bucket[1].owner & past);
	return base;
}

int ring_lookup(const struct ring *r, uint64_t key, struct ring_lookup_result *result)
{
	const struct ring_bucket *bucket;
	uint32_t base, end, past;

	if (r->point_count == 0)
		return -ENOENT;
	bucket = &r->index[r->index_bits ? key >> (64 - r->index_bits) : 0];
	base = bucket[0].first;
	end = bucket[1].first;
	if (end - base <= 1) {
		/* Masks, not branches: which side of the point a key falls is a coin toss. */
		past = -(uint32_t)(key > bucket[0].position);
		result->member = (bucket[0].owner & ~past) | (bucket[1].owner & past);
		base = (base & ~past) | (end & past);
		result->steps = 1;
	} else {
		base = bucket_search(r, bucket, key, &result->member);
		result->steps = r->search_steps;
	}
	result->point = base < r->point_count ? base : 0;
	return 0;
}

/* How many keys ahead ring_lookup_many() asks for its bucket. */
#define LOOKUP_PREFETCH_DISTANCE 8

int ring_lookup_many(const struct ring *r, const uint64_t *keys, size_t count,
		     uint32_t *members)
{
	struct ring_lookup_result res;
	size_t i;

	if (r->point_count == 0)
		return -ENOENT;
	for (i = 0; i < count; i++) {
		if (i + LOOKUP_PREFETCH_DISTANCE < count) {
			uint64_t ahead = keys[i + LOOKUP_PREFETCH_DISTANCE];

			__builtin_prefetch(&r->index[r->index_bits ? ahead >> (64 - r->index_bits) : 0]);
		}
		ring_lookup(r, keys[i], &res);
		members[i] = res.member;
	}
	return 0;
}
