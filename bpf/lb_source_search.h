/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The search of a source set (struct lb_source_set, lb_contract.h), shared
 * word for word by the XDP program (lb_sources.h) and the controller's tests
 * of the sets it builds (user/kernel/source_set.c), so what the controller
 * proves of a set is what the kernel answers.
 */
#ifndef RINGLB_LB_SOURCE_SEARCH_H
#define RINGLB_LB_SOURCE_SEARCH_H

#include "lb_contract.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/** SOURCE_SEARCH_BAD - source_run() found a set that breaks the contract. */
#define SOURCE_SEARCH_BAD 0xffffffffu

/* Is address (@hi, @lo) before @b? */
static __always_inline int source_before(__u64 hi, __u64 lo, const struct lb_source_addr *b)
{
	return hi < b->hi || (hi == b->hi && lo < b->lo);
}

/* Is address (@hi, @lo) after @b? */
static __always_inline int source_after(__u64 hi, __u64 lo, const struct lb_source_addr *b)
{
	return hi > b->hi || (hi == b->hi && lo > b->lo);
}

/**
 * source_bucket() - the verdict of a set's head @set on address (@hi, @lo)
 * when its bucket says it alone (the first step of source_verdict()).
 * @j: set to the address's bucket when it is in the set's block
 *
 * Before the set's block is run 0 and after it the last run, known from the
 * header's first bytes; inside it the address's bucket class gives the
 * verdict itself when the bucket lies inside one run (most buckets). When
 * the block and its index bits lie in the address's first 64 bits (every
 * IPv4 set), that is one word's mask, compare and shift (@fast_right);
 * else 128-bit compares and shifts by @shift and @bits.
 *
 * Return: an enum lb_source_verdict, LB_SOURCE_BUCKET_SPLIT (the verdict
 * takes source_search()), or SOURCE_SEARCH_BAD when the set's header is out
 * of range.
 */
static __always_inline __u32 source_bucket(const struct lb_source_head *set, __u64 hi, __u64 lo,
					   __u32 *j)
{
	__u32 shift, bits, right;
	__u64 top;

	if (set->count - 1 >= LB_SOURCE_RUNS_MAX)
		return SOURCE_SEARCH_BAD;
	right = set->fast_right;
	if (right < 64) {
		/* The block is aligned: outside it, the first word alone says on which side. */
		if ((hi & set->fast_mask) != set->first.hi)
			return hi < set->first.hi ? set->below : set->above;
		*j = (__u32)(hi >> right) & ((1u << LB_SOURCE_INDEX_BITS) - 1);
		return LB_SOURCE_BUCKET_CLASS(set->bucket, *j);
	}
	if (source_before(hi, lo, &set->first))
		return set->below;
	if (source_after(hi, lo, &set->last))
		return set->above;
	shift = set->shift;
	bits = set->bits;
	if (shift > 127 || bits < 1 || bits > LB_SOURCE_INDEX_BITS)
		return SOURCE_SEARCH_BAD;
	/* The address's bits from @shift on, at the top of @top. */
	if (shift >= 64)
		top = lo << (shift & 63);
	else if (shift)
		top = hi << (shift & 63) | lo >> ((64 - shift) & 63);
	else
		top = hi;
	top >>= (64 - bits) & 63;
	/*
	 * Below 2^bits already, so the compiler drops the mask; the verifier
	 * cannot follow a shift by a variable and needs it to bound the read.
	 */
	__asm__ __volatile__("" : "+r"(top));
	*j = (__u32)top & ((1u << LB_SOURCE_INDEX_BITS) - 1);
	return LB_SOURCE_BUCKET_CLASS(set->bucket, *j);
}

/**
 * source_search() - the verdict of @set on address (@hi, @lo) of split
 * bucket @j: the bucket's index entries bound the runs it can be in, and a
 * binary search finds the last run starting at or before the address.
 * Return: an enum lb_source_verdict, or SOURCE_SEARCH_BAD when the index is
 * out of range.
 */
static __always_inline __u32 source_search(const struct lb_source_set *set, __u64 hi, __u64 lo,
					   __u32 j)
{
	__u32 count = set->head.count, first, last, mid, i;

	if (j >= 1u << LB_SOURCE_INDEX_BITS)
		return SOURCE_SEARCH_BAD;
	first = set->index[j];
	last = set->index[j + 1];
	if (last >= count || first > last)
		return SOURCE_SEARCH_BAD;
	for (i = 0; i < LB_SOURCE_SEARCH_STEPS; i++) {
		if (first >= last)
			break;
		mid = (first + last + 1) >> 1;
		if (mid >= LB_SOURCE_RUNS_MAX)
			return SOURCE_SEARCH_BAD;
		if (source_before(hi, lo, &set->start[mid]))
			last = mid - 1;
		else
			first = mid;
	}
	return first < LB_SOURCE_RUNS_MAX ? set->verdict[first] : SOURCE_SEARCH_BAD;
}

/**
 * source_verdict() - the verdict of @set on address (@hi, @lo): its bucket's
 * when the bucket lies inside one run, else a search of the bucket's runs.
 * Return: an enum lb_source_verdict, or SOURCE_SEARCH_BAD when the set
 * breaks the contract (the program refuses such a client).
 */
static __always_inline __u32 source_verdict(const struct lb_source_set *set, __u64 hi, __u64 lo)
{
	__u32 j = 0, c = source_bucket(&set->head, hi, lo, &j);

	return c == LB_SOURCE_BUCKET_SPLIT ? source_search(set, hi, lo, j) : c;
}

#endif /* RINGLB_LB_SOURCE_SEARCH_H */
