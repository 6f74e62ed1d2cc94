// SPDX-License-Identifier: GPL-2.0-only
/*
 * Flattening a VIP's source prefixes into runs (source_set.h). Every prefix
 * starts a run at its first address and ends one after its last; between
 * two such cuts the longest prefix holding an address is the same, so each
 * cut's verdict is its longest match's, and runs of equal verdicts merge.
 * Addresses are 128-bit numbers here (an IPv4 address its 4 bytes and 12
 * zeros, as the program sees it), so IPv4 and IPv6 sets are one code.
 */
#include "source_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lb_source_search.h"

typedef unsigned __int128 u128;

static u128 addr_number(const __u8 *bytes)
{
	u128 n = 0;
	int i;

	for (i = 0; i < 16; i++)
		n = n << 8 | bytes[i];
	return n;
}

/* The addresses of @len leading bits @first .. @last (@len 0 .. 128). */
static void prefix_span(const struct prefix *p, u128 *first, u128 *last)
{
	u128 host = p->len >= 128 ? 0 : ~(u128)0 >> p->len;

	*first = addr_number(p->addr.bytes) & ~host;
	*last = *first | host;
}

static int u128_compare(const void *a, const void *b)
{
	u128 x = *(const u128 *)a, y = *(const u128 *)b;

	return x < y ? -1 : x > y;
}

static void put_addr(struct lb_source_addr *out, u128 n)
{
	out->hi = (__u64)(n >> 64);
	out->lo = (__u64)n;
}

static u128 get_addr(const struct lb_source_addr *a)
{
	return (u128)a->hi << 64 | a->lo;
}

/* The verdict at @at: its longest prefix's, or the VIP's default. */
static __u8 verdict_at(u128 at, const struct state_source *sources, const u128 *first,
		       const u128 *last, size_t count, int allow_list)
{
	size_t i, best = count;

	for (i = 0; i < count; i++)
		if (first[i] <= at && at <= last[i] &&
		    (best == count || sources[i].prefix.len > sources[best].prefix.len))
			best = i;
	if (best == count)
		return allow_list ? LB_SOURCE_NOT_ALLOWED : LB_SOURCE_SERVED;
	return sources[best].deny ? LB_SOURCE_DENIED : LB_SOURCE_SERVED;
}

/*
 * The block and its bucket index (contract: lb_source_set): the smallest
 * aligned span (of two addresses at least) from run 1's first address to
 * the last run's first but one, so every address before it is in run 0 and
 * every one after it in the last. With two runs, the aligned span that has
 * run 1's first address at its middle: both halves whole buckets, and an
 * IPv4 set's block no narrower than its cut's prefix (the 64-bit path).
 */
static void index_build(struct lb_source_set *set)
{
	u128 low = 0, base, host;
	unsigned int shift = 0, bits, j, run = 0;

	if (set->head.count > 1) {
		u128 diff;

		low = get_addr(&set->start[1]);
		/* Two runs: run 1 starts after 0, so its lowest set bit and all below it. */
		diff = low ^ (set->head.count > 2 ? get_addr(&set->start[set->head.count - 1]) - 1 :
						     low - 1);
		/* diff 0 (a block of one address): the smallest span, two addresses. */
		while (!(diff >> 127) && shift < 127) {
			diff <<= 1;
			shift++;
		}
	}
	bits = 128 - shift < LB_SOURCE_INDEX_BITS ? 128 - shift : LB_SOURCE_INDEX_BITS;
	host = ~(u128)0 >> shift;
	base = low & ~host;
	set->head.shift = (__u8)shift;
	set->head.bits = (__u8)bits;
	set->head.fast_right = LB_SOURCE_NO_FAST;
	if (shift + bits <= 64) {
		set->head.fast_right = (__u8)(64 - shift - bits);
		set->head.fast_mask = shift ? ~0ull << (64 - shift) : 0;
	}
	set->head.below = set->verdict[0];
	set->head.above = set->verdict[set->head.count - 1];
	put_addr(&set->head.first, base);
	put_addr(&set->head.last, base | host);
	for (j = 0; j < 1u << bits; j++) {
		u128 at = base | (u128)j << (128 - shift - bits);
		u128 end = at + (((u128)1 << (128 - shift - bits)) - 1);
		unsigned int class;

		while (run + 1 < set->head.count && get_addr(&set->start[run + 1]) <= at)
			run++;
		set->index[j] = (__u16)run;
		/* Whole: no run starts after the bucket's first address and at or before its last. */
		if (run + 1 >= set->head.count || get_addr(&set->start[run + 1]) > end)
			class = set->verdict[run];
		else
			class = LB_SOURCE_BUCKET_SPLIT;
		set->head.bucket[j >> 2] |= (__u8)(class << ((j & 3) << 1));
	}
	set->index[1u << bits] = (__u16)(set->head.count - 1);
}

int source_set_build(struct lb_source_set *set, const struct state_source *sources, size_t count)
{
	u128 *first, *last, *cut;
	size_t i, cuts = 0;
	int allow_list = 0;

	memset(set, 0, sizeof(*set));
	if (count > LB_SOURCES_PER_VIP_MAX)
		return -E2BIG;
	first = calloc(count + 1, sizeof(*first));
	last = calloc(count + 1, sizeof(*last));
	cut = calloc(2 * count + 1, sizeof(*cut));
	if (!first || !last || !cut) {
		free(first);
		free(last);
		free(cut);
		return -ENOMEM;
	}
	cut[cuts++] = 0;
	for (i = 0; i < count; i++) {
		prefix_span(&sources[i].prefix, &first[i], &last[i]);
		allow_list |= !sources[i].deny;
		cut[cuts++] = first[i];
		if (last[i] != ~(u128)0)
			cut[cuts++] = last[i] + 1;
	}
	qsort(cut, cuts, sizeof(*cut), u128_compare);
	for (i = 0; i < cuts; i++) {
		__u8 v;

		if (i && cut[i] == cut[i - 1])
			continue;
		v = verdict_at(cut[i], sources, first, last, count, allow_list);
		if (set->head.count && set->verdict[set->head.count - 1] == v)
			continue;
		put_addr(&set->start[set->head.count], cut[i]);
		set->verdict[set->head.count++] = v;
	}
	index_build(set);
	free(first);
	free(last);
	free(cut);
	return 0;
}

int source_set_verdict(const struct lb_source_set *set, const struct addr *a)
{
	u128 n = addr_number(a->bytes);
	__u32 v = source_verdict(set, (__u64)(n >> 64), (__u64)n);

	return v == SOURCE_SEARCH_BAD ? -EINVAL : (int)v;
}
