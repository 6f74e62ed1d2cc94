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

/**
 * source_verdict() - the verdict of @set on address (@hi, @lo).
 *
 * Below the start of run 1 is run 0 and from the start of the last run on
 * is the last run, two compares; between them the address's bucket entry
 * gives the verdict itself when the bucket lies inside one run (most
 * buckets), else the runs it can be in, and a bounded binary search finds
 * the last run starting at or before the address.
 *
 * Return: an enum lb_source_verdict, or SOURCE_SEARCH_BAD when the set's
 * header or index is out of range (the program refuses such a client).
 */
static __always_inline __u32 source_verdict(const struct lb_source_set *set, __u64 hi, __u64 lo)
{
	__u32 count = set->count, shift, bits, j, e, first, last, mid, i;
	__u64 top;

	if (count <= 1)
		return count ? set->verdict[0] : SOURCE_SEARCH_BAD;
	if (count > LB_SOURCE_RUNS_MAX)
		return SOURCE_SEARCH_BAD;
	if (source_before(hi, lo, &set->start[1]))
		return set->verdict[0];
	if (!source_before(hi, lo, &set->start[count - 1]))
		return set->verdict[count - 1];
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
	j = (__u32)(top >> ((64 - bits) & 63)) & ((1u << LB_SOURCE_INDEX_BITS) - 1);
	e = set->index[j];
	if (e & LB_SOURCE_INDEX_WHOLE)
		return LB_SOURCE_INDEX_VERDICT(e);
	first = e & LB_SOURCE_INDEX_RUN;
	last = set->index[j + 1] & LB_SOURCE_INDEX_RUN;
	if (last >= count || first > last)
		return SOURCE_SEARCH_BAD;
	/* The last run of first .. last whose start is at or before the address. */
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

#endif /* RINGLB_LB_SOURCE_SEARCH_H */
