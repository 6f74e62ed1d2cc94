// SPDX-License-Identifier: GPL-2.0-only
/*
 * Source sets (user/kernel/source_set.c), in memory, no kernel needed: the
 * set built from a VIP's prefixes answers every client, through the very
 * search the XDP program runs (bpf/lb_source_search.h), as the longest match
 * of the prefixes themselves does (state_vip_source_refused(), the model):
 * random sets of IPv4 and IPv6 prefixes, clustered and spread, up to the
 * per-VIP limit, probed at random and on every run's edges. Also: the runs'
 * shape (merged, ascending, from 0) and the limit refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check.h"
#include "source_set.h"
#include "state.h"
#include "testutil.h"

#define SEED 0x7372637365747321ULL
/* Random clients probed per set, besides the edges of each run. */
#define PROBES 20000

/* The model's verdict of @client, as a set's verdict. */
static int model_verdict(const struct state_vip *v, const struct addr *client)
{
	switch (state_vip_source_refused(v, client, NULL)) {
	case 0:
		return LB_SOURCE_SERVED;
	case LB_REASON_DROP_SOURCE_DENIED:
		return LB_SOURCE_DENIED;
	default:
		return LB_SOURCE_NOT_ALLOWED;
	}
}

/* Address @n (a run's start, as a 128-bit number) plus @delta, as an address of @family. */
static struct addr addr_at(int family, const struct lb_source_addr *n, int delta)
{
	unsigned __int128 x = (unsigned __int128)n->hi << 64 | n->lo;
	struct addr a = { .family = family };
	int i;

	x += (unsigned __int128)(__int128)delta;
	for (i = 15; i >= 0; i--, x >>= 8)
		a.bytes[i] = (__u8)x;
	if (family == LB_FAMILY_IPV4)
		memset(a.bytes + 4, 0, 12);
	return a;
}

/* A random address of @family inside @p's first @len bits... or anywhere when @p is NULL. */
static struct addr addr_random(struct test_rng *rng, int family, const struct prefix *p)
{
	struct addr a = { .family = family };
	unsigned int i, n = family == LB_FAMILY_IPV4 ? 4 : 16;

	for (i = 0; i < n; i++)
		a.bytes[i] = (__u8)test_rng_next(rng);
	if (p)
		for (i = 0; i < p->len; i++) {
			__u8 bit = (__u8)(0x80 >> (i & 7));

			a.bytes[i / 8] = (__u8)((a.bytes[i / 8] & ~bit) | (p->addr.bytes[i / 8] & bit));
		}
	return a;
}

/*
 * @count random prefixes of @family into @v: lengths @min .. @max, inside
 * @within (NULL: anywhere), allow or deny at random (all allow when @deny_pct 0).
 */
static void random_sources(struct test_rng *rng, struct state_vip *v, size_t count, int family,
			   unsigned int min, unsigned int max, const struct prefix *within,
			   unsigned int deny_pct)
{
	size_t i;

	v->sources = calloc(count ? count : 1, sizeof(*v->sources));
	assert_non_null(v->sources);
	v->source_count = count;
	for (i = 0; i < count; i++) {
		struct prefix *p = &v->sources[i].prefix;
		unsigned int b;

		p->len = min + (unsigned int)test_rng_below(rng, max - min + 1);
		p->addr = addr_random(rng, family, within);
		for (b = p->len; b < 128; b++)
			p->addr.bytes[b / 8] &= (__u8)~(0x80 >> (b & 7));
		v->sources[i].deny = test_rng_below(rng, 100) < deny_pct;
	}
}

/*
 * Do @set, @slow and the model of @v give @a one verdict? @got: the three,
 * in that order. The model (a walk of every prefix) is asked once.
 */
static int verdicts_agree(const struct lb_source_set *set, const struct lb_source_set *slow,
			  const struct state_vip *v, const struct addr *a, int got[3])
{
	got[0] = source_set_verdict(set, a);
	got[1] = source_set_verdict(slow, a);
	got[2] = model_verdict(v, a);
	return got[0] == got[2] && got[1] == got[2];
}

/*
 * @set answers as the model on random clients and on each run's edges, and
 * so does @slow, the same set with its fast form off (the 128-bit path).
 */
static void set_agrees(struct test_rng *rng, const struct state_vip *v,
		       const struct lb_source_set *set, struct lb_source_set *slow, int family,
		       const struct prefix *within)
{
	__u32 i;
	int k, got[3];

	memcpy(slow, set, sizeof(*slow));
	slow->head.fast_right = LB_SOURCE_NO_FAST;
	slow->head.fast_mask = 0;
	for (i = 0; i < PROBES; i++) {
		struct addr a = addr_random(rng, family, i & 1 ? within : NULL);

		check(verdicts_agree(set, slow, v, &a, got),
		      "client %u: set says %d, the 128-bit path %d, the model %d", i, got[0], got[1],
		      got[2]);
	}
	for (i = 0; i < set->head.count; i++)
		for (k = -1; k <= 1; k++) {
			struct addr a = addr_at(family, &set->start[i], k);

			if ((i == 0 && k < 0) ||
			    (family == LB_FAMILY_IPV4 && (k < 0 ? set->start[i].hi << 32 == 0 : 0)))
				continue;
			if (family == LB_FAMILY_IPV4) {
				/* An IPv4 neighbour is one step of the 4-byte address. */
				struct lb_source_addr n = set->start[i];

				n.hi += (__u64)(__int64_t)k << 32;
				a = addr_at(family, &n, 0);
			}
			check(verdicts_agree(set, slow, v, &a, got),
			      "run %u of %u, edge %+d: set says %d, the 128-bit path %d, the model %d",
			      i, set->head.count, k, got[0], got[1], got[2]);
		}
}

static unsigned __int128 addr_number128(const struct lb_source_addr *a)
{
	return (unsigned __int128)a->hi << 64 | a->lo;
}

/* Runs ascend from 0, adjacent runs differ, the index bounds every bucket. */
static void set_well_formed(const struct lb_source_set *set)
{
	__u32 i, j;

	check(set->head.count >= 1 && set->head.count <= LB_SOURCE_RUNS_MAX, "%u runs", set->head.count);
	check_eq(set->start[0].hi | set->start[0].lo, 0);
	for (i = 1; i < set->head.count; i++) {
		check(set->start[i - 1].hi < set->start[i].hi ||
			      (set->start[i - 1].hi == set->start[i].hi &&
			       set->start[i - 1].lo < set->start[i].lo),
		      "run %u does not start after run %u", i, i - 1);
		check(set->verdict[i] != set->verdict[i - 1], "runs %u and %u say the same", i - 1,
		      i);
	}
	check(set->head.bits >= 1 && set->head.bits <= LB_SOURCE_INDEX_BITS && set->head.shift + set->head.bits <= 128,
	      "%u index bits from bit %u", set->head.bits, set->head.shift);
	check_eq(set->head.below, set->verdict[0]);
	/* The block holds run 1's start and the address before the last run's. */
	if (set->head.count > 1) {
		check(addr_number128(&set->head.first) <= addr_number128(&set->start[1]),
		      "run 1 starts before the block");
		check(addr_number128(&set->start[set->head.count - 1]) - 1 <= addr_number128(&set->head.last),
		      "the last run starts more than one address after the block");
	}
	check_eq(set->head.above, set->verdict[set->head.count - 1]);
	/* The fast form: every block of /48 or wider, and only those. */
	if (set->head.shift + set->head.bits <= 64) {
		check_eq(set->head.bits, LB_SOURCE_INDEX_BITS);
		check_eq(set->head.fast_right, 64 - set->head.shift - set->head.bits);
		check_eq(set->head.fast_mask,
			 set->head.shift ? ~0ull << (64 - set->head.shift) : 0);
		check_eq(set->head.first.hi & ~set->head.fast_mask, 0);
		check_eq(set->head.first.lo, 0);
	} else {
		check_eq(set->head.fast_right, LB_SOURCE_NO_FAST);
		check_eq(set->head.fast_mask, 0);
	}
	for (j = 0; j < 1u << set->head.bits; j++) {
		__u32 run = set->index[j], next = set->index[j + 1];
		__u32 class = LB_SOURCE_BUCKET_CLASS(set->head.bucket, j);

		check(run <= next && next < set->head.count, "bucket %u: runs %u .. %u of %u", j, run,
		      next, set->head.count);
		/* Whole: its class is its run's verdict, and the next bucket starts in the same
		 * run or exactly at the next run's start. */
		if (class != LB_SOURCE_BUCKET_SPLIT) {
			check_eq(class, set->verdict[run]);
			check(next == run || next == run + 1, "whole bucket %u: runs %u .. %u", j,
			      run, next);
		} else {
			check(next > run, "split bucket %u in one run %u", j, run);
		}
	}
	for (j = 1u << set->head.bits; j < (1u << LB_SOURCE_INDEX_BITS); j++)
		check_eq(LB_SOURCE_BUCKET_CLASS(set->head.bucket, j), 0);
	check_eq(set->index[1u << set->head.bits], set->head.count - 1);
}

static void one_case(struct test_rng *rng, int family, size_t count, unsigned int min,
		     unsigned int max, const char *within_text, unsigned int deny_pct)
{
	struct lb_source_set *set = malloc(sizeof(*set)), *slow = malloc(sizeof(*slow));
	struct state_vip v = { 0 };
	struct prefix within;
	const char *why = "";

	assert_non_null(set);
	assert_non_null(slow);
	if (within_text)
		check(prefix_parse(within_text, &within, &why) == 0, "%s: %s", within_text, why);
	random_sources(rng, &v, count, family, min, max, within_text ? &within : NULL, deny_pct);
	check_eq(source_set_build(set, v.sources, v.source_count), 0);
	set_well_formed(set);
	if (family == LB_FAMILY_IPV4)
		check(set->head.fast_right != LB_SOURCE_NO_FAST,
		      "an IPv4 set of %u runs without the 64-bit path (shift %u)", set->head.count,
		      set->head.shift);
	set_agrees(rng, &v, set, slow, family, within_text ? &within : NULL);
	free(v.sources);
	free(slow);
	free(set);
}

/* Random sets: IPv4 and IPv6, few and the limit, spread, clustered, nested. */
static void test_sets_answer_as_the_longest_match(void **state)
{
	static const struct {
		int family;
		size_t count;
		unsigned int min, max;
		const char *within;
		unsigned int deny_pct;
	} cases[] = {
		{ LB_FAMILY_IPV4, 0, 8, 32, NULL, 50 },
		{ LB_FAMILY_IPV4, 1, 0, 0, NULL, 100 },
		{ LB_FAMILY_IPV4, 1, 24, 24, NULL, 0 },
		{ LB_FAMILY_IPV4, 2, 1, 32, NULL, 50 },
		{ LB_FAMILY_IPV4, 48, 4, 32, NULL, 50 },
		{ LB_FAMILY_IPV4, 1000, 20, 28, "198.0.0.0/8", 0 },
		{ LB_FAMILY_IPV4, LB_SOURCES_PER_VIP_MAX, 8, 32, NULL, 50 },
		{ LB_FAMILY_IPV4, LB_SOURCES_PER_VIP_MAX, 16, 32, "198.18.0.0/15", 30 },
		{ LB_FAMILY_IPV4, LB_SOURCES_PER_VIP_MAX, 30, 32, "198.18.7.0/24", 50 },
		{ LB_FAMILY_IPV6, 1, 128, 128, NULL, 100 },
		{ LB_FAMILY_IPV6, 48, 8, 128, NULL, 50 },
		{ LB_FAMILY_IPV6, LB_SOURCES_PER_VIP_MAX, 32, 64, "2001:db8::/32", 40 },
		/* Blocks either side of the fast form's edge: /47 and /48 in it, /49 not. */
		{ LB_FAMILY_IPV6, 200, 47, 128, "2001:db8::/47", 50 },
		{ LB_FAMILY_IPV6, 200, 48, 128, "2001:db8:1::/48", 50 },
		{ LB_FAMILY_IPV6, 200, 49, 128, "2001:db8:1:8000::/49", 50 },
		{ LB_FAMILY_IPV6, LB_SOURCES_PER_VIP_MAX, 100, 128, "2001:db8::/96", 50 },
		{ LB_FAMILY_IPV6, LB_SOURCES_PER_VIP_MAX, 120, 128, "2001:db8::/120", 50 },
		{ LB_FAMILY_IPV6, LB_SOURCES_PER_VIP_MAX, 1, 128, NULL, 50 },
	};
	struct test_rng rng = { SEED };
	size_t i;
	int round;

	(void)state;
	for (round = 0; round < 3; round++)
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			one_case(&rng, cases[i].family, cases[i].count, cases[i].min, cases[i].max,
				 cases[i].within, cases[i].deny_pct);
}

/*
 * Sets of two runs (one cut: a prefix at the top of the space, or a half of
 * it): the block has the cut at its middle, whole buckets either side, and
 * an IPv4 set keeps the 64-bit path; each answers as the model.
 */
static void test_two_runs_keep_the_fast_path(void **state)
{
	static const struct {
		const char *prefix;
		int deny, family;
		unsigned int shift;
	} cases[] = {
		{ "240.0.0.0/4", 1, LB_FAMILY_IPV4, 3 },
		{ "255.255.255.255/32", 1, LB_FAMILY_IPV4, 31 },
		{ "255.255.255.254/31", 0, LB_FAMILY_IPV4, 30 },
		{ "0.0.0.0/1", 0, LB_FAMILY_IPV4, 0 },
		{ "128.0.0.0/1", 1, LB_FAMILY_IPV4, 0 },
		{ "ffff::/16", 1, LB_FAMILY_IPV6, 15 },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 1, LB_FAMILY_IPV6, 127 },
	};
	struct lb_source_set *set = malloc(sizeof(*set)), *slow = malloc(sizeof(*slow));
	struct test_rng rng = { SEED };
	struct state_vip v = { 0 };
	struct state_source one;
	const char *why = "";
	size_t i;

	(void)state;
	assert_non_null(set);
	assert_non_null(slow);
	v.sources = &one;
	v.source_count = 1;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check(prefix_parse(cases[i].prefix, &one.prefix, &why) == 0, "%s: %s",
		      cases[i].prefix, why);
		one.deny = cases[i].deny;
		check_eq(source_set_build(set, &one, 1), 0);
		check_eq(set->head.count, 2);
		check_eq(set->head.shift, cases[i].shift);
		set_well_formed(set);
		if (cases[i].family == LB_FAMILY_IPV4)
			check(set->head.fast_right != LB_SOURCE_NO_FAST, "%s: no 64-bit path",
			      cases[i].prefix);
		set_agrees(&rng, &v, set, slow, cases[i].family, &one.prefix);
	}
	free(slow);
	free(set);
}

/* The shape of a few sets by hand: merged neighbours, the whole space, the limit. */
static void test_runs_merge_and_the_limit_is_refused(void **state)
{
	static const char *const adjacent[] = { "198.18.1.0/24", "198.18.2.0/24", NULL };
	struct lb_source_set *set = malloc(sizeof(*set));
	struct state_source list[LB_SOURCES_PER_VIP_MAX + 1];
	const char *why = "";
	size_t n;

	(void)state;
	assert_non_null(set);
	for (n = 0; adjacent[n]; n++) {
		check(prefix_parse(adjacent[n], &list[n].prefix, &why) == 0, "%s", why);
		list[n].deny = 0;
	}
	check_eq(source_set_build(set, list, n), 0);
	/* Refused below, one run for both /24s, refused above. */
	check_eq(set->head.count, 3);
	check_eq(set->verdict[0], LB_SOURCE_NOT_ALLOWED);
	check_eq(set->verdict[1], LB_SOURCE_SERVED);
	check_eq(set->verdict[2], LB_SOURCE_NOT_ALLOWED);
	check_eq(set->start[1].hi, (__u64)0xc6120100u << 32);
	check_eq(set->start[2].hi, (__u64)0xc6120300u << 32);
	/* Deny ::/0: one run, everyone refused. */
	check(prefix_parse("::/0", &list[0].prefix, &why) == 0, "%s", why);
	list[0].deny = 1;
	check_eq(source_set_build(set, list, 1), 0);
	check_eq(set->head.count, 1);
	check_eq(set->verdict[0], LB_SOURCE_DENIED);
	/* Nothing: one run, everyone served. */
	check_eq(source_set_build(set, list, 0), 0);
	check_eq(set->head.count, 1);
	check_eq(set->verdict[0], LB_SOURCE_SERVED);
	for (n = 0; n < LB_SOURCES_PER_VIP_MAX + 1; n++) {
		list[n].prefix = list[0].prefix;
		list[n].deny = 0;
	}
	check_eq(source_set_build(set, list, LB_SOURCES_PER_VIP_MAX + 1), -E2BIG);
	free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sets_answer_as_the_longest_match),
		cmocka_unit_test(test_two_runs_keep_the_fast_path),
		cmocka_unit_test(test_runs_merge_and_the_limit_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
