// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel and the ring library agree: random flows of rings of every
 * size go to the backend ring_lookup() names, after whole swaps and after
 * changes written in place, and a change without a good spare is refused
 * while the old ring serves.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"

#define AGREEMENT_FLOWS 10000


/* --- agreement ------------------------------------------------------------------ */

/* @flows random flows of @pool's VIP go where its ring says. */
static void flows_agree(const struct pool *pool, struct test_rng *rng, int flows,
			const char *name)
{
	size_t points;
	int f;

	ring_points(pool->ring, &points);
	for (f = 0; f < flows; f++) {
		struct pkt_spec spec;
		struct pkt pkt;
		char client[64];
		__u32 want, got;

		random_flow(rng, pool->vip, &spec, client, sizeof(client));
		pkt_build(&pkt, &spec);
		want = expected_backend(pool, &spec);
		got = forward(&pkt);
		check(got == want, "%s ring (%zu points), VIP %d, flow %d (%s:%u): kernel "
		      "picked backend %u, ring library %u", name, points, pool->vip, f, client,
		      spec.sport, got, want);
	}
	printf("agreement: %s ring, %zu points, VIP %d: %d of %d flows agree\n", name, points,
	       pool->vip, flows, flows);
}

static void agreement_case(const char *name, uint32_t vnodes, size_t members,
			   const uint32_t *weights)
{
	static const int vips[] = { VIP_V4_TCP, VIP_V4_UDP, VIP_V6_TCP, VIP_V6_UDP };
	struct test_rng rng = { SEED };
	size_t v;

	for (v = 0; v < sizeof(vips) / sizeof(vips[0]); v++) {
		struct pool pool;

		flows_clear();
		pool_install(&pool, vips[v], ring_weighted(vnodes, members, weights, name));
		flows_agree(&pool, &rng, AGREEMENT_FLOWS, name);
		pool_release(&pool);
	}
}

static void test_kernel_agrees_with_ring_on_one_point_ring(void **state)
{
	(void)state;
	NEEDS_ROOT();
	agreement_case("one-point", 1, 1, NULL);
}

static void test_kernel_agrees_with_ring_on_weighted_ring(void **state)
{
	static const uint32_t weights[] = { 1, 2, 3, 5, 8, 0, 13 };

	(void)state;
	NEEDS_ROOT();
	agreement_case("weighted", 100, sizeof(weights) / sizeof(weights[0]), weights);
}

static void test_kernel_agrees_with_ring_on_million_point_ring(void **state)
{
	(void)state;
	NEEDS_ROOT();
	/* 256 backends x 4096 points = 2^20 points, the largest ring. */
	agreement_case("2^20-point", 4096, 256, NULL);
}

/* The ring library's membership of @pool, as ringmap_edits() takes it. */
static size_t pool_members(const struct pool *pool, struct ringmap_member *out)
{
	size_t m;

	for (m = 0; m < pool->count; m++)
		out[m] = (struct ringmap_member){ ring_member_name(pool->ring, (__u32)m),
						  ring_member_weight(pool->ring, (__u32)m),
						  pool->ids[m] };
	return pool->count;
}

/* Make @pool's ring @next (ids of members it keeps stay, new ones get a backend). */
static void pool_change(struct pool *pool, struct ring *next, struct lb_ring_change *change,
			struct ringmap_edit **edits)
{
	static struct ringmap_member before[1024], after[1024];
	size_t nb = pool_members(pool, before), m, points;
	__u32 ids[1024], old;

	for (m = 0; m < ring_member_count(next); m++) {
		const char *name = ring_member_name(next, (__u32)m);

		ids[m] = ring_member_find(pool->ring, name, &old) == 0 ? pool->ids[old] :
									  backend_new(pool->vip);
		after[m] = (struct ringmap_member){ name, ring_member_weight(next, (__u32)m), ids[m] };
	}
	ring_points(next, &points);
	check(ringmap_edits(ring_vnodes(next), before, nb, after, ring_member_count(next),
			    LB_RING_POINTS_MAX, edits, &change->count) == 0,
	      "edits of the change");
	change->edits = *edits;
	change->from_fingerprint = ring_fingerprint(pool->ring);
	change->to_fingerprint = ring_fingerprint(next);
	change->to_points = points;
	ring_free(pool->ring);
	pool->ring = next;
	pool->count = ring_member_count(next);
	memcpy(pool->ids, ids, pool->count * sizeof(ids[0]));
}

static void test_changes_written_in_place_serve_what_the_ring_says(void **state)
{
	static const int vips[] = { VIP_V4_TCP, VIP_V6_UDP };
	struct test_rng rng = { SEED + 5 };
	size_t v, step;

	(void)state;
	NEEDS_ROOT();
	for (v = 0; v < sizeof(vips) / sizeof(vips[0]); v++) {
		struct lb_vip_key key = vip_key_of_test(vips[v]);
		struct pool pool;
		char why[128];

		/* 40,000 points: every change below keeps the index at 2^17 buckets. */
		pool_install(&pool, vips[v], ring_weighted(1000, 40, NULL, "inplace"));
		for (step = 0; step < 6; step++) {
			struct lb_ring_change change;
			struct ringmap_edit *edits;
			struct ring *next;
			char name[32], what[64];
			__u32 m = (__u32)test_rng_below(&rng, pool.count);

			assert_int_equal(ring_clone(&next, pool.ring), 0);
			switch (step % 3) {
			case 0:
				snprintf(name, sizeof(name), "inplace-new-%zu", step);
				assert_int_equal(ring_add(next, name, 2), 0);
				snprintf(what, sizeof(what), "after adding %s", name);
				break;
			case 1:
				snprintf(what, sizeof(what), "after removing %s",
					 ring_member_name(pool.ring, m));
				assert_int_equal(ring_remove(next, ring_member_name(pool.ring, m)), 0);
				break;
			default:
				snprintf(what, sizeof(what), "after weighing %s 3",
					 ring_member_name(pool.ring, m));
				assert_int_equal(
					ring_set_weight(next, ring_member_name(pool.ring, m), 3), 0);
				break;
			}
			pool_change(&pool, next, &change, &edits);
			check(lb_vip_patch(maps, &key, (__u32)vips[v], &change) == 0,
			      "%s: the change is written into the spare and swapped in", what);
			flows_clear();
			flows_agree(&pool, &rng, 2000, what);
			check(lb_vip_patch(maps, &key, (__u32)vips[v], &change) == -ESTALE,
			      "%s: a change from a ring no longer served is refused", what);
			check(lb_vip_settle(maps, &key, (__u32)vips[v], &change) == 0,
			      "%s: the old map takes the change too", what);
			check(lb_vip_compare(maps, &key, (__u32)vips[v], pool.ring, pool.ids, why,
					     sizeof(why)) == 0,
			      "%s: serving and spare maps hold the ring: %s", what, why);
			free(edits);
		}
		pool_release(&pool);
	}
}

static void test_change_without_a_good_spare_is_refused_and_old_ring_serves(void **state)
{
	struct lb_vip_key key = vip_key_of_test(VIP_V4_TCP);
	struct lb_ring_change first, second;
	struct ringmap_edit *e1, *e2;
	struct ring *next;
	struct pool pool;
	__u32 before[200];
	size_t from_points;
	int i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 8, NULL, "spare"));
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_add(next, "spare-new", 1), 0);
	pool_change(&pool, next, &first, &e1);
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &first) == 0, "first change swapped in");
	/* Not settled: the spare still holds the ring before the first change. */
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_set_weight(next, "spare-new", 4), 0);
	for (i = 0; i < 200; i++)
		before[i] = send_flow(i, 0);
	pool_change(&pool, next, &second, &e2);
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &second) == -EAGAIN,
	      "a change onto a spare that is one change behind is refused with -EAGAIN");
	flows_clear();
	for (i = 0; i < 200; i++)
		check(send_flow(i, 0) == before[i], "flow %d moved after a refused change", i);
	/* The way forward: the whole ring, which also makes a good spare. */
	check(lb_vip_install(maps, &key, VIP_V4_TCP, pool.ring, pool.ids) == 0 &&
		      lb_vip_settle(maps, &key, VIP_V4_TCP, NULL) == 0,
	      "the whole ring installs, with its spare");
	free(e1);
	free(e2);
	/* A ring that needs another index size is laid out whole, as a fresh build would be. */
	ring_points(pool.ring, &from_points);
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_add(next, "spare-big", 80), 0); /* 800 -> 8,800 points */
	pool_change(&pool, next, &first, &e1);
	check(ringmap_bits(first.to_points) != ringmap_bits(from_points),
	      "the test change crosses an index size");
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &first) == -EAGAIN,
	      "a change to another index size is refused with -EAGAIN");
	free(e1);
	pool_release(&pool);
}

HARNESS_GROUP(agreement,
	cmocka_unit_test(test_kernel_agrees_with_ring_on_one_point_ring),
	cmocka_unit_test(test_kernel_agrees_with_ring_on_weighted_ring),
	cmocka_unit_test(test_kernel_agrees_with_ring_on_million_point_ring),
	cmocka_unit_test(test_changes_written_in_place_serve_what_the_ring_says),
	cmocka_unit_test(test_change_without_a_good_spare_is_refused_and_old_ring_serves));
