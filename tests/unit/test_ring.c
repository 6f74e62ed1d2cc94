// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring library's specification, as cmocka tests. Each test name states a
 * property a ring must have; each check says which part of it failed. Keys
 * are seeded pseudo-random 64-bit values, the same on every run.
 *
 * Tolerances are derived, not tuned: with n points placed uniformly at
 * random, a member holding m of them owns a share distributed like a sum of m
 * spacings, Beta(m, n - m), whose relative standard deviation is
 * sqrt((1 - m/n) / m) ~ 1/sqrt(m). A member of weight 1 at K points per
 * weight thus deviates from its ideal share by about 1/sqrt(K); the checks
 * allow a few of those deviations plus the sampling noise of the keys.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "ring.h"
#include "siphash.h"
#include "testutil.h"

#define FIVE_MEMBERS 5
#define SMALL_KEYS 1000
#define MANY_KEYS 1000000
#define SEED 0x72696e676c62ULL

static const char *const five_names[FIVE_MEMBERS] = {
	"web-1", "web-2", "web-3", "web-4", "web-5",
};

static struct ring *ring_of(uint32_t vnodes, const char *const *names, const uint32_t *weights,
			    size_t count)
{
	struct ring_member members[16];
	struct ring *r = NULL;
	size_t i;
	int err;

	assert_true(count <= 16);
	for (i = 0; i < count; i++) {
		members[i].name = names[i];
		members[i].weight = weights ? weights[i] : 1;
	}
	err = ring_build(&r, vnodes, members, count);
	check(err == 0, "ring_build: %s", ring_strerror(err));
	return r;
}

static const char *owner_of(const struct ring *r, uint64_t key)
{
	struct ring_lookup_result res;
	int err = ring_lookup(r, key, &res);

	check(err == 0, "lookup on a non-empty ring: %s", ring_strerror(err));
	return ring_member_name(r, res.member);
}

/* The plain definition: first point at or after the key, else the first point. */
static size_t reference_owner_point(const struct ring *r, uint64_t key)
{
	size_t count, lo = 0, hi;
	const struct ring_point *p = ring_points(r, &count);

	hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].position < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == count ? 0 : lo;
}

/* The serialized form doubles as a byte-exact picture of a ring's state. */
static void expect_same_bytes(const struct ring *a, const struct ring *b, const char *what)
{
	const struct ring_point *pa, *pb;
	size_t na, nb, la, lb;
	void *ba, *bb;

	pa = ring_points(a, &na);
	pb = ring_points(b, &nb);
	check(na == nb, "%s: point counts differ (%zu vs %zu)", what, na, nb);
	check(na == 0 || memcmp(pa, pb, na * sizeof(*pa)) == 0, "%s: point arrays differ", what);
	assert_int_equal(ring_serialize(a, &ba, &la), 0);
	assert_int_equal(ring_serialize(b, &bb, &lb), 0);
	check(la == lb && memcmp(ba, bb, la) == 0, "%s: serialized forms differ", what);
	free(ba);
	free(bb);
}

static unsigned int ceil_log2_of(size_t x)
{
	unsigned int b = 0;

	while (((size_t)1 << b) < x)
		b++;
	return b;
}

static void test_add_sixth_member_moves_about_a_sixth_all_to_new_member(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS);
	static char before[SMALL_KEYS][RING_NAME_MAX + 1];
	struct test_rng rng = { SEED };
	uint64_t keys[SMALL_KEYS];
	int moved = 0, i;
	double share;

	(void)state;
	for (i = 0; i < SMALL_KEYS; i++) {
		keys[i] = test_rng_next(&rng);
		/* Copied: names live in the ring, which the add reallocates. */
		strcpy(before[i], owner_of(r, keys[i]));
	}
	assert_int_equal(ring_add(r, "web-6", 1), 0);
	for (i = 0; i < SMALL_KEYS; i++) {
		const char *after = owner_of(r, keys[i]);

		if (strcmp(after, before[i]) == 0)
			continue;
		moved++;
		check(strcmp(after, "web-6") == 0, "key %d moved from %s to %s, not to the new member",
		      i, before[i], after);
	}
	share = (double)moved / SMALL_KEYS;
	/* Ideal 1/6; 1,000 keys add sqrt(p(1-p)/1000) = 0.012 of noise. */
	check(fabs(share - 1.0 / 6) < 0.05, "moved share %.3f is not about 1/6", share);
	ring_free(r);
}

static void test_remove_moves_only_removed_members_keys(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS);
	struct ring *old;
	struct test_rng rng = { SEED + 1 };
	int moved = 0, i;

	(void)state;
	assert_int_equal(ring_clone(&old, r), 0);
	assert_int_equal(ring_remove(r, "web-3"), 0);
	for (i = 0; i < SMALL_KEYS; i++) {
		uint64_t key = test_rng_next(&rng);
		const char *was = owner_of(old, key), *now = owner_of(r, key);

		if (strcmp(was, "web-3") != 0) {
			check(strcmp(was, now) == 0, "key %d of %s moved to %s", i, was, now);
			continue;
		}
		moved++;
		/* Its new owner is the next point clockwise that is not web-3's. */
		{
			size_t count, p = reference_owner_point(old, key);
			const struct ring_point *pts = ring_points(old, &count);
			const char *next;

			while (strcmp(ring_member_name(old, pts[p].member), "web-3") == 0)
				p = (p + 1) % count;
			next = ring_member_name(old, pts[p].member);
			check(strcmp(now, next) == 0, "key %d went to %s, next clockwise owner is %s",
			      i, now, next);
		}
	}
	check(moved > 0, "web-3 owned none of 1,000 keys");
	ring_free(old);
	ring_free(r);
}

static void test_million_keys_balanced_within_derived_tolerance(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS);
	size_t counts[FIVE_MEMBERS] = { 0 };
	struct test_rng rng = { SEED + 2 };
	double mean = (double)MANY_KEYS / FIVE_MEMBERS, tolerance;
	struct ring_lookup_result res;
	int i;

	(void)state;
	/*
	 * Share deviation: sqrt((1 - 1/5) / K) relative; key sampling adds
	 * sqrt((5 - 1) / 1e6). Four deviations of each.
	 */
	tolerance = 4 * sqrt((1.0 - 1.0 / FIVE_MEMBERS) / RING_VNODES_DEFAULT) +
		    4 * sqrt((FIVE_MEMBERS - 1.0) / MANY_KEYS);
	for (i = 0; i < MANY_KEYS; i++) {
		assert_int_equal(ring_lookup(r, test_rng_next(&rng), &res), 0);
		counts[res.member]++;
	}
	for (i = 0; i < FIVE_MEMBERS; i++) {
		double load = counts[i] / mean;

		check(fabs(load - 1.0) <= tolerance, "%s has %.4f of the mean load, tolerance %.4f",
		      ring_member_name(r, (uint32_t)i), load, tolerance);
	}
	ring_free(r);
}

static void test_lookup_wraps_past_last_point_to_first(void **state)
{
	struct ring *r = ring_of(4, five_names, NULL, FIVE_MEMBERS);
	const struct ring_point *p;
	struct ring_lookup_result res;
	size_t count;

	(void)state;
	p = ring_points(r, &count);
	assert_int_equal(count, 20);
	check(p[count - 1].position < UINT64_MAX, "last point is at the very top of the circle");
	assert_int_equal(ring_lookup(r, p[count - 1].position + 1, &res), 0);
	check(res.point == 0, "key just past the last point owned by point %u, not 0", res.point);
	assert_int_equal(ring_lookup(r, UINT64_MAX, &res), 0);
	check(res.point == 0, "key UINT64_MAX owned by point %u, not 0", res.point);
	assert_int_equal(ring_lookup(r, p[count - 1].position, &res), 0);
	check(res.point == count - 1, "key on the last point owned by point %u", res.point);
	assert_int_equal(ring_lookup(r, 0, &res), 0);
	check(res.point == 0, "key 0 owned by point %u, not the first", res.point);
	ring_free(r);
}

/* Ring sizes from one point to the maximum, checked against the definition. */
static void test_lookup_is_first_point_at_or_after_key_in_bounded_steps(void **state)
{
	static const uint32_t sizes[] = { 1, 2, 3, 7, 100, 1000, 65536, RING_POINTS_MAX };
	struct test_rng rng = { SEED + 3 };
	size_t s;

	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		const char *name = "only";
		struct ring *r = ring_of(sizes[s], &name, NULL, 1);
		const struct ring_point *p;
		struct ring_lookup_result res;
		size_t count, i, bound;
		int k;

		p = ring_points(r, &count);
		assert_int_equal(count, sizes[s]);
		bound = ceil_log2_of(count) + 1;
		check(ring_search_steps(r) <= bound, "%zu points: %u steps > ceil(log2)+1 = %zu",
		      count, ring_search_steps(r), bound);
		for (k = 0; k < 20000; k++) {
			uint64_t key = test_rng_next(&rng);

			assert_int_equal(ring_lookup(r, key, &res), 0);
			check(res.point == reference_owner_point(r, key),
			      "%zu points: key %#llx owned by %u, definition says %zu", count,
			      (unsigned long long)key, res.point, reference_owner_point(r, key));
			check(res.steps <= bound, "%zu points: lookup took %u steps", count, res.steps);
		}
		/* Keys on and next to every point (sampled for the big rings). */
		for (i = 0; i < count; i += 1 + count / 4096) {
			uint64_t around[3] = { p[i].position - 1, p[i].position, p[i].position + 1 };
			int a;

			for (a = 0; a < 3; a++) {
				assert_int_equal(ring_lookup(r, around[a], &res), 0);
				check(res.point == reference_owner_point(r, around[a]),
				      "%zu points: boundary key %#llx misplaced", count,
				      (unsigned long long)around[a]);
			}
		}
		ring_free(r);
	}
}

static void test_batched_lookup_answers_like_single_lookups(void **state)
{
	static uint64_t keys[100000];
	static uint32_t members[100000];
	struct ring *r = ring_of(1000, five_names, NULL, FIVE_MEMBERS);
	struct test_rng rng = { SEED + 10 };
	struct ring_lookup_result res;
	size_t i;

	(void)state;
	for (i = 0; i < 100000; i++)
		keys[i] = test_rng_next(&rng);
	assert_int_equal(ring_lookup_many(r, keys, 100000, members), 0);
	for (i = 0; i < 100000; i++) {
		assert_int_equal(ring_lookup(r, keys[i], &res), 0);
		check(members[i] == res.member, "batched key %zu owned by %u, single lookup says %u",
		      i, members[i], res.member);
	}
	ring_free(r);
}

static void test_weight_two_gets_about_twice_weight_one(void **state)
{
	static const char *const names[] = { "light", "heavy" };
	static const uint32_t weights[] = { 1, 2 };
	struct ring *r = ring_of(RING_VNODES_DEFAULT, names, weights, 2);
	size_t counts[2] = { 0 };
	struct test_rng rng = { SEED + 4 };
	struct ring_lookup_result res;
	double ratio, tolerance;
	int i;

	(void)state;
	for (i = 0; i < MANY_KEYS; i++) {
		assert_int_equal(ring_lookup(r, test_rng_next(&rng), &res), 0);
		counts[res.member]++;
	}
	/* heavy is member 0 in name order. */
	ratio = (double)counts[0] / (double)counts[1];
	/* Each share deviates by ~1/sqrt(points); the ratio by the sum. */
	tolerance = 2.0 * 4 * (1 / sqrt(RING_VNODES_DEFAULT) + 1 / sqrt(2.0 * RING_VNODES_DEFAULT));
	check(fabs(ratio - 2.0) <= tolerance, "weight 2 : weight 1 = %.3f, tolerance %.3f", ratio,
	      tolerance);
	ring_free(r);
}

static void test_serialize_restore_routes_every_key_the_same(void **state)
{
	static const uint32_t weights[FIVE_MEMBERS] = { 1, 2, 3, 0, 5 };
	struct ring *r = ring_of(300, five_names, weights, FIVE_MEMBERS), *back = NULL;
	struct test_rng rng = { SEED + 5 };
	void *buf;
	size_t len;
	int i, err;

	(void)state;
	assert_int_equal(ring_serialize(r, &buf, &len), 0);
	err = ring_restore(&back, buf, len);
	check(err == 0, "restore: %s", ring_strerror(err));
	expect_same_bytes(r, back, "restored ring");
	check(ring_member_count(back) == FIVE_MEMBERS, "weight-0 member lost in the round trip");
	for (i = 0; i < 100000; i++) {
		uint64_t key = test_rng_next(&rng);

		check(strcmp(owner_of(r, key), owner_of(back, key)) == 0,
		      "key %d routes differently after restore", i);
	}
	free(buf);
	ring_free(back);
	ring_free(r);
}

static void test_builds_in_any_member_order_are_byte_identical(void **state)
{
	static const char *const reversed[FIVE_MEMBERS] = {
		"web-5", "web-4", "web-3", "web-2", "web-1",
	};
	static const uint32_t weights[FIVE_MEMBERS] = { 2, 1, 3, 1, 2 };
	static const uint32_t reversed_weights[FIVE_MEMBERS] = { 2, 1, 3, 1, 2 };
	struct ring *a = ring_of(500, five_names, weights, FIVE_MEMBERS);
	struct ring *b = ring_of(500, reversed, reversed_weights, FIVE_MEMBERS);
	struct ring *c;
	int i;

	(void)state;
	expect_same_bytes(a, b, "builds from two member orders");
	/* One member at a time, in a third order, with a detour. */
	assert_int_equal(ring_new(&c, 500), 0);
	static const int order[FIVE_MEMBERS] = { 2, 4, 0, 3, 1 };
	for (i = 0; i < FIVE_MEMBERS; i++)
		assert_int_equal(ring_add(c, five_names[order[i]], 1), 0);
	assert_int_equal(ring_add(c, "temporary", 7), 0);
	for (i = 0; i < FIVE_MEMBERS; i++)
		assert_int_equal(ring_set_weight(c, five_names[i], weights[i]), 0);
	assert_int_equal(ring_remove(c, "temporary"), 0);
	expect_same_bytes(a, c, "incremental adds, weights and a removal");
	ring_free(a);
	ring_free(b);
	ring_free(c);
}

static void test_remove_leaves_none_of_the_members_points(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS);
	const struct ring_point *p;
	size_t count, i;
	uint32_t idx;

	(void)state;
	assert_int_equal(ring_remove(r, "web-2"), 0);
	p = ring_points(r, &count);
	check(count == 4 * RING_VNODES_DEFAULT, "%zu points left, want %d", count,
	      4 * RING_VNODES_DEFAULT);
	check(ring_member_find(r, "web-2", &idx) == -ENOENT, "web-2 is still a member");
	for (i = 0; i < count; i++) {
		uint32_t replica = p[i].replica;

		check(p[i].position == ring_point_position(ring_member_name(r, p[i].member), replica),
		      "point %zu is not its member's replica %u", i, replica);
		check(p[i].position != ring_point_position("web-2", replica),
		      "point %zu is web-2's replica %u", i, replica);
	}
	ring_free(r);
}

/*
 * Spread: cut the circle into 16 equal arcs; a member's 1,000 replicas should
 * fall about 62.5 into each (binomial, sd 7.7). Require every arc within five
 * deviations, and no gap between consecutive replicas above 3% of the circle
 * (for 1,000 uniform points the largest gap is ~ln(1000)/1000 = 0.7%).
 */
#define SPREAD_ARCS 16
#define SPREAD_REPLICAS 1000

static int spread_is_uniform(const uint64_t *positions, size_t count)
{
	size_t arcs[SPREAD_ARCS] = { 0 }, i;
	double expect = (double)count / SPREAD_ARCS, sd = sqrt(expect * (1 - 1.0 / SPREAD_ARCS));
	uint64_t *sorted = malloc(count * sizeof(*sorted));
	int ok = 1;

	assert_non_null(sorted);
	for (i = 0; i < count; i++) {
		arcs[positions[i] >> 60]++;
		sorted[i] = positions[i];
	}
	for (i = 0; i < SPREAD_ARCS; i++)
		if (fabs((double)arcs[i] - expect) > 5 * sd)
			ok = 0;
	for (i = 1; i < count; i++) { /* insertion sort: count is small */
		uint64_t v = sorted[i];
		size_t j = i;

		while (j > 0 && sorted[j - 1] > v) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = v;
	}
	for (i = 1; i < count; i++)
		if (ldexp((double)(sorted[i] - sorted[i - 1]), -64) > 0.03)
			ok = 0;
	if (ldexp((double)(sorted[0] - sorted[count - 1]), -64) > 0.03)
		ok = 0;
	free(sorted);
	return ok;
}

/* The classic pitfall, for contrast: a 31-multiplier fold of "name#i". */
static uint64_t fold_hash(const char *s)
{
	uint32_t h = 0;

	while (*s)
		h = h * 31 + (unsigned char)*s++;
	return (uint64_t)h << 32;
}

static void test_replicas_spread_over_the_whole_ring(void **state)
{
	uint64_t strong[SPREAD_REPLICAS], weak[SPREAD_REPLICAS];
	char label[RING_NAME_MAX + 16];
	uint32_t i;

	(void)state;
	for (i = 0; i < SPREAD_REPLICAS; i++) {
		strong[i] = ring_point_position("cache-south", i);
		snprintf(label, sizeof(label), "cache-south#%u", i);
		weak[i] = fold_hash(label);
	}
	check(spread_is_uniform(strong, SPREAD_REPLICAS),
	      "cache-south's replicas clump on the ring");
	/* The same check must catch the weak generator, or it proves nothing. */
	check(!spread_is_uniform(weak, SPREAD_REPLICAS),
	      "the spread check does not catch the fold-hash clumping");
}

static void test_index_search_matches_definition_after_every_change(void **state)
{
	struct ring *r = ring_of(97, five_names, NULL, FIVE_MEMBERS);
	struct test_rng rng = { SEED + 6 };
	int change, k;

	(void)state;
	for (change = 0; change < 6; change++) {
		switch (change) {
		case 1: assert_int_equal(ring_add(r, "web-6", 3), 0); break;
		case 2: assert_int_equal(ring_set_weight(r, "web-1", 9), 0); break;
		case 3: assert_int_equal(ring_remove(r, "web-4"), 0); break;
		case 4: assert_int_equal(ring_set_weight(r, "web-6", 1), 0); break;
		case 5: assert_int_equal(ring_set_weight(r, "web-2", 0), 0); break;
		}
		for (k = 0; k < 20000; k++) {
			uint64_t key = test_rng_next(&rng);
			struct ring_lookup_result res;

			assert_int_equal(ring_lookup(r, key, &res), 0);
			check(res.point == reference_owner_point(r, key),
			      "after change %d, key %d misplaced", change, k);
		}
	}
	ring_free(r);
}

static void test_weight_change_moves_only_what_it_must(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS), *old, *fresh;
	static const uint32_t weights[FIVE_MEMBERS] = { 1, 1, 3, 1, 1 };
	struct test_rng rng = { SEED + 7 };
	int i;

	(void)state;
	assert_int_equal(ring_clone(&old, r), 0);
	assert_int_equal(ring_set_weight(r, "web-3", 3), 0);
	for (i = 0; i < 100000; i++) {
		uint64_t key = test_rng_next(&rng);
		const char *was = owner_of(old, key), *now = owner_of(r, key);

		check(strcmp(was, now) == 0 || strcmp(now, "web-3") == 0,
		      "raising web-3's weight moved a key from %s to %s", was, now);
	}
	fresh = ring_of(RING_VNODES_DEFAULT, five_names, weights, FIVE_MEMBERS);
	expect_same_bytes(r, fresh, "weight change against a fresh build");
	ring_free(old);
	assert_int_equal(ring_clone(&old, r), 0);
	assert_int_equal(ring_set_weight(r, "web-3", 1), 0);
	rng.state = SEED + 8;
	for (i = 0; i < 100000; i++) {
		uint64_t key = test_rng_next(&rng);
		const char *was = owner_of(old, key), *now = owner_of(r, key);

		check(strcmp(was, now) == 0 || strcmp(was, "web-3") == 0,
		      "lowering web-3's weight moved a key from %s to %s", was, now);
	}
	ring_free(fresh);
	ring_free(old);
	ring_free(r);
}

static void test_weight_zero_member_owns_no_points(void **state)
{
	static const uint32_t weights[FIVE_MEMBERS] = { 1, 0, 1, 1, 1 };
	struct ring *r = ring_of(100, five_names, weights, FIVE_MEMBERS);
	const struct ring_point *p;
	size_t count, i;
	uint32_t idx = UINT32_MAX;

	(void)state;
	assert_int_equal(ring_member_find(r, "web-2", &idx), 0);
	p = ring_points(r, &count);
	assert_int_equal(count, 400);
	for (i = 0; i < count; i++)
		check(p[i].member != idx, "weight-0 member owns point %zu", i);
	ring_free(r);
}

static void test_empty_ring_lookup_fails_cleanly(void **state)
{
	struct ring *r;
	struct ring_lookup_result res;

	(void)state;
	assert_int_equal(ring_new(&r, 10), 0);
	check(ring_lookup(r, 42, &res) == -ENOENT, "lookup in an empty ring did not say ENOENT");
	assert_int_equal(ring_add(r, "idle", 0), 0);
	check(ring_lookup(r, 42, &res) == -ENOENT, "lookup with only weight 0 did not say ENOENT");
	ring_free(r);
}

static void test_diff_of_an_add_is_the_new_members_share(void **state)
{
	struct ring *r = ring_of(RING_VNODES_DEFAULT, five_names, NULL, FIVE_MEMBERS), *old;
	struct test_rng rng = { SEED + 9 };
	struct ring_diff diff;
	double shares[6], sum = 0;
	size_t i;
	int moved = 0, k;

	(void)state;
	assert_int_equal(ring_clone(&old, r), 0);
	assert_int_equal(ring_add(r, "web-6", 1), 0);
	assert_int_equal(ring_diff(old, r, &diff), 0);
	ring_shares(r, shares);
	for (i = 0; i < 6; i++)
		sum += shares[i];
	check(fabs(sum - 1.0) < 1e-9, "shares sum to %.12f", sum);
	check(fabs(diff.moved - shares[5]) < 1e-9, "moved %.6f, web-6 owns %.6f", diff.moved,
	      shares[5]);
	assert_int_equal(diff.count, 6);
	for (i = 0; i < diff.count; i++) {
		const struct ring_diff_member *m = &diff.members[i];

		if (strcmp(m->name, "web-6") == 0) {
			check(fabs(m->moved_in - diff.moved) < 1e-9, "web-6 gained %.6f", m->moved_in);
			check(m->share_before == 0.0, "web-6 owned space before it existed");
		} else {
			check(m->moved_in == 0.0, "%s gained space from an add", m->name);
			check(fabs(m->share_before - m->moved_out - m->share_after) < 1e-9,
			      "%s: before - out != after", m->name);
		}
	}
	/* The predicted share matches what a million keys do. */
	for (k = 0; k < MANY_KEYS; k++) {
		uint64_t key = test_rng_next(&rng);

		moved += strcmp(owner_of(old, key), owner_of(r, key)) != 0;
	}
	check(fabs((double)moved / MANY_KEYS - diff.moved) < 5 * sqrt(0.25 / MANY_KEYS),
	      "diff says %.5f moves, keys say %.5f", diff.moved, (double)moved / MANY_KEYS);
	ring_diff_free(&diff);
	assert_int_equal(ring_diff(r, r, &diff), 0);
	check(diff.moved == 0.0, "a ring differs from itself by %.6f", diff.moved);
	ring_diff_free(&diff);
	ring_free(old);
	ring_free(r);
}

static void test_diff_from_empty_ring_moves_everything(void **state)
{
	struct ring *empty, *r = ring_of(10, five_names, NULL, 2);
	struct ring_diff diff;

	(void)state;
	assert_int_equal(ring_new(&empty, 10), 0);
	assert_int_equal(ring_diff(empty, r, &diff), 0);
	check(fabs(diff.moved - 1.0) < 1e-12, "empty -> ring moved %.6f", diff.moved);
	ring_diff_free(&diff);
	assert_int_equal(ring_diff(r, empty, &diff), 0);
	check(fabs(diff.moved - 1.0) < 1e-12, "ring -> empty moved %.6f", diff.moved);
	ring_diff_free(&diff);
	ring_free(empty);
	ring_free(r);
}

/* What test_overlay_cuts_the_circle_where_an_owner_changes() checks arc by arc. */
struct overlay_walk {
	const struct ring *before, *after;
	struct test_rng rng;
	uint64_t next;    /* where the next arc must start */
	int arcs, done;   /* arcs seen; the one ending at UINT64_MAX was seen */
	struct ring_arc last;
	double len_after[FIVE_MEMBERS + 1];
};

static int overlay_check(const struct ring_arc *arc, void *ctx)
{
	struct overlay_walk *w = ctx;
	uint64_t keys[3] = { arc->start, arc->end, arc->start };
	int k;

	check(!w->done, "an arc after the one ending at the top");
	check(arc->start == w->next, "arc %d starts at %llu, want %llu", w->arcs,
	      (unsigned long long)arc->start, (unsigned long long)w->next);
	check(arc->end >= arc->start, "arc %d ends before it starts", w->arcs);
	/* Neighbours differ in an owner, except across 0 (reported apart). */
	check(w->arcs == 0 || arc->before != w->last.before || arc->after != w->last.after,
	      "arcs %d and %d have the same owners", w->arcs - 1, w->arcs);
	/* Its ends and a key inside it have the owners it says, under each ring. */
	if (arc->end > arc->start)
		keys[2] = arc->start + test_rng_next(&w->rng) % (arc->end - arc->start);
	for (k = 0; k < 3; k++) {
		check(strcmp(owner_of(w->before, keys[k]), ring_member_name(w->before, arc->before)) == 0,
		      "arc %d: key %llu is not its before owner's", w->arcs,
		      (unsigned long long)keys[k]);
		check(strcmp(owner_of(w->after, keys[k]), ring_member_name(w->after, arc->after)) == 0,
		      "arc %d: key %llu is not its after owner's", w->arcs,
		      (unsigned long long)keys[k]);
	}
	w->len_after[arc->after] += (double)(arc->end - arc->start) + 1.0;
	w->done = arc->end == UINT64_MAX;
	w->next = arc->end + 1;
	w->last = *arc;
	w->arcs++;
	return 0;
}

static int overlay_stop(const struct ring_arc *arc, void *ctx)
{
	(void)arc;
	return ++*(int *)ctx == 3 ? -ECANCELED : 0;
}

static void test_overlay_cuts_the_circle_where_an_owner_changes(void **state)
{
	struct ring *before = ring_of(64, five_names, NULL, 4), *after, *empty;
	struct overlay_walk w = { .rng = { SEED + 11 } };
	struct ring_diff diff;
	double shares[FIVE_MEMBERS], moved = 0;
	int calls = 0;
	size_t i;

	(void)state;
	assert_int_equal(ring_clone(&after, before), 0);
	assert_int_equal(ring_add(after, "web-5", 2), 0);
	assert_int_equal(ring_remove(after, "web-1"), 0);
	w.before = before;
	w.after = after;
	assert_int_equal(ring_overlay(before, after, overlay_check, &w), 0);
	check(w.done, "the arcs stop short of the top of the circle");
	/* Each member's arcs add up to its share. */
	ring_shares(after, shares);
	for (i = 0; i < ring_member_count(after); i++)
		check(fabs(ldexp(w.len_after[i], -64) - shares[i]) < 1e-12,
		      "%s: arcs add up to %.9f, share %.9f", ring_member_name(after, i),
		      ldexp(w.len_after[i], -64), shares[i]);
	/* One ring's own arcs: the owners agree everywhere. */
	memset(&w, 0, sizeof(w));
	w.before = w.after = after;
	assert_int_equal(ring_overlay(after, after, overlay_check, &w), 0);
	check(w.done && w.arcs > 1, "one ring: %d arcs", w.arcs);
	/* The walk stops when told, and says why. */
	assert_int_equal(ring_overlay(before, after, overlay_stop, &calls), -ECANCELED);
	assert_int_equal(calls, 3);
	/* No points anywhere: no arcs; one side empty: its owner is nobody. */
	assert_int_equal(ring_new(&empty, 10), 0);
	calls = 0;
	assert_int_equal(ring_overlay(empty, empty, overlay_stop, &calls), 0);
	assert_int_equal(calls, 0);
	assert_int_equal(ring_diff(empty, after, &diff), 0);
	moved = diff.moved;
	ring_diff_free(&diff);
	check(fabs(moved - 1.0) < 1e-12, "empty -> ring moved %.6f", moved);
	ring_free(empty);
	ring_free(before);
	ring_free(after);
}

/* Every rejected change must leave the ring byte for byte as it was. */
static void expect_rejected(struct ring *r, int got, int want, const char *what)
{
	struct ring *ref = ring_of(500, five_names, NULL, 3);

	check(got == want, "%s: got %d (%s), want %d (%s)", what, got, ring_strerror(got), want,
	      ring_strerror(want));
	expect_same_bytes(r, ref, what);
	ring_free(ref);
}

static void test_bad_input_is_rejected_and_changes_nothing(void **state)
{
	char long_name[RING_NAME_MAX + 2];
	struct ring *r = ring_of(500, five_names, NULL, 3), *none = NULL;
	struct ring_member too_heavy = { "x", RING_WEIGHT_MAX + 1 };
	struct ring_member dup[2] = { { "a", 1 }, { "a", 2 } };
	struct ring_member huge = { "x", RING_WEIGHT_MAX };
	struct ring_member empty = { "", 1 };

	(void)state;
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	expect_rejected(r, ring_add(r, "", 1), -EINVAL, "add with an empty name");
	expect_rejected(r, ring_add(r, NULL, 1), -EINVAL, "add with no name");
	expect_rejected(r, ring_add(r, long_name, 1), -ENAMETOOLONG, "add with a 64-byte name");
	expect_rejected(r, ring_add(r, "web-2", 1), -EEXIST, "add of a duplicate");
	expect_rejected(r, ring_add(r, "new", RING_WEIGHT_MAX + 1), -ERANGE, "add overweight");
	expect_rejected(r, ring_add(r, "new", RING_WEIGHT_MAX), -E2BIG,
			"add past the point limit");
	expect_rejected(r, ring_remove(r, "ghost"), -ENOENT, "remove of an unknown member");
	expect_rejected(r, ring_remove(r, ""), -EINVAL, "remove with an empty name");
	expect_rejected(r, ring_set_weight(r, "ghost", 2), -ENOENT, "weight of an unknown member");
	expect_rejected(r, ring_set_weight(r, "web-1", RING_WEIGHT_MAX + 1), -ERANGE,
			"weight out of range");
	expect_rejected(r, ring_set_weight(r, "web-1", RING_WEIGHT_MAX), -E2BIG,
			"weight past the point limit");
	check(ring_build(&none, 10, &too_heavy, 1) == -ERANGE && !none, "build overweight");
	check(ring_build(&none, 10, dup, 2) == -EEXIST && !none, "build with duplicates");
	check(ring_build(&none, 200, &huge, 1) == -E2BIG && !none, "build past the point limit");
	check(ring_build(&none, 10, &empty, 1) == -EINVAL && !none, "build with an empty name");
	check(ring_new(&none, 0) == -EDOM && !none, "zero virtual nodes");
	check(ring_new(&none, RING_VNODES_MAX + 1) == -EDOM && !none, "too many virtual nodes");
	ring_free(r);
}

static void test_restore_rejects_truncated_corrupt_and_foreign_input(void **state)
{
	struct ring *r = ring_of(50, five_names, NULL, FIVE_MEMBERS), *back;
	unsigned char *buf, *copy;
	size_t len, cut, byte;
	void *raw;
	int err;

	(void)state;
	assert_int_equal(ring_serialize(r, &raw, &len), 0);
	buf = raw;
	copy = malloc(len + 1);
	assert_non_null(copy);
	for (cut = 0; cut < len; cut++) {
		back = (struct ring *)1;
		err = ring_restore(&back, buf, cut);
		check(err == -ENODATA, "restore of %zu of %zu bytes: %s", cut, len, ring_strerror(err));
		check(back == NULL, "a truncated restore produced a ring");
	}
	/* Flip each bit of each byte: none may restore. */
	for (byte = 0; byte < len; byte++) {
		int bit;

		for (bit = 0; bit < 8; bit++) {
			memcpy(copy, buf, len);
			copy[byte] ^= (unsigned char)(1u << bit);
			back = (struct ring *)1;
			err = ring_restore(&back, copy, len);
			check(err < 0, "restore accepted a flip of bit %d of byte %zu", bit, byte);
			check(back == NULL, "a corrupt restore produced a ring");
		}
	}
	memcpy(copy, buf, len);
	copy[8] = 2; /* version 2 */
	check(ring_restore(&back, copy, len) == -EPROTONOSUPPORT, "version 2 not refused as such");
	memcpy(copy, buf, len);
	copy[0] = 'X';
	check(ring_restore(&back, copy, len) == -EILSEQ, "bad magic not refused as such");
	memcpy(copy, buf, len);
	copy[len] = 0;
	check(ring_restore(&back, copy, len + 1) == -EBADMSG, "trailing byte not refused");
	memcpy(copy, buf, len);
	copy[20] ^= 1; /* the member count, now disagreeing with the checksum */
	check(ring_restore(&back, copy, len) == -EBADMSG, "altered member count not refused");
	free(copy);
	free(raw);
	ring_free(r);
}

static void test_siphash_matches_reference_vectors(void **state)
{
	/* From the SipHash paper's test vectors: key 00..0f, message 00..(n-1). */
	static const struct { size_t len; uint64_t hash; } vectors[] = {
		{ 0, 0x726fdb47dd0e0e31ULL },
		{ 15, 0xa129ca6149be45e5ULL },
	};
	const uint64_t k0 = 0x0706050403020100ULL, k1 = 0x0f0e0d0c0b0a0908ULL;
	unsigned char msg[40];
	uint64_t words[SIPHASH_FLOW_WORDS];
	struct test_rng rng = { SEED + 11 };
	size_t i;
	int round;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		check(test_siphash_bytes(msg, vectors[i].len, k0, k1, 2, 4) == vectors[i].hash,
		      "SipHash-2-4 of %zu bytes differs from the reference", vectors[i].len);
	/* The flow hash is SipHash-1-3 of the key's 40 bytes, for any key and secret. */
	for (round = 0; round < 1000; round++) {
		uint64_t s0 = test_rng_next(&rng), s1 = test_rng_next(&rng);

		for (i = 0; i < sizeof(msg); i++)
			msg[i] = (unsigned char)test_rng_next(&rng);
		memcpy(words, msg, sizeof(words));
		check(siphash13_flow(words, s0, s1) == test_siphash_bytes(msg, 40, s0, s1, 1, 3),
		      "flow hash %d is not SipHash-1-3 of its bytes", round);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_matches_reference_vectors),
		cmocka_unit_test(test_add_sixth_member_moves_about_a_sixth_all_to_new_member),
		cmocka_unit_test(test_remove_moves_only_removed_members_keys),
		cmocka_unit_test(test_million_keys_balanced_within_derived_tolerance),
		cmocka_unit_test(test_lookup_wraps_past_last_point_to_first),
		cmocka_unit_test(test_lookup_is_first_point_at_or_after_key_in_bounded_steps),
		cmocka_unit_test(test_batched_lookup_answers_like_single_lookups),
		cmocka_unit_test(test_weight_two_gets_about_twice_weight_one),
		cmocka_unit_test(test_serialize_restore_routes_every_key_the_same),
		cmocka_unit_test(test_builds_in_any_member_order_are_byte_identical),
		cmocka_unit_test(test_remove_leaves_none_of_the_members_points),
		cmocka_unit_test(test_replicas_spread_over_the_whole_ring),
		cmocka_unit_test(test_index_search_matches_definition_after_every_change),
		cmocka_unit_test(test_weight_change_moves_only_what_it_must),
		cmocka_unit_test(test_weight_zero_member_owns_no_points),
		cmocka_unit_test(test_empty_ring_lookup_fails_cleanly),
		cmocka_unit_test(test_diff_of_an_add_is_the_new_members_share),
		cmocka_unit_test(test_diff_from_empty_ring_moves_everything),
		cmocka_unit_test(test_overlay_cuts_the_circle_where_an_owner_changes),
		cmocka_unit_test(test_bad_input_is_rejected_and_changes_nothing),
		cmocka_unit_test(test_restore_rejects_truncated_corrupt_and_foreign_input),
	};

	return tests_run("test_ring", tests);
}
