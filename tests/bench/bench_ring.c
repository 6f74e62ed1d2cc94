// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring library benchmark (`make bench`): prints tables, judges nothing.
 *
 * For N members of weight 1 and K points per weight it measures the build
 * time, the lookup cost on random keys, one call per key and batched with
 * ring_lookup_many() (against a plain binary search over the same points, in
 * the same run), the balance (peak/mean share of the
 * hash space, next to the theory 1 + 2.5/sqrt(K)), and the disruption of one
 * add and one remove on 1,000,000 random keys: keys moved over the ideal
 * 1/(N+1) or 1/N, and keys moved between members that did not change, which
 * must be zero. A last table counts position collisions at 2^20 points for
 * 64-bit positions and for the same positions cut to 32 bits.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring.h"
#include "testutil.h"

#define DISRUPTION_KEYS 1000000
#define LOOKUP_KEYS (1u << 20)
#define LOOKUP_MIN_NS 200000000.0 /* time each lookup loop for at least 0.2 s */
#define SEED 0x62656e6368ULL

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_ring: %s: %s\n", what, ring_strerror(err));
	exit(1);
}

static struct ring *build_ring(uint32_t members, uint32_t vnodes, double *build_ms)
{
	struct ring_member *list = calloc(members, sizeof(*list));
	char (*names)[24] = calloc(members, sizeof(*names));
	struct ring *r;
	double t0;
	uint32_t i;
	int err;

	if (!list || !names)
		die("calloc", -12);
	for (i = 0; i < members; i++) {
		snprintf(names[i], sizeof(names[i]), "backend-%u", i);
		list[i].name = names[i];
		list[i].weight = 1;
	}
	t0 = now_ns();
	err = ring_build(&r, vnodes, list, members);
	if (build_ms)
		*build_ms = (now_ns() - t0) / 1e6;
	if (err)
		die("ring_build", err);
	free(list);
	free(names);
	return r;
}

/* The textbook lower bound over the same points, for comparison. */
static uint32_t bsearch_owner(const struct ring_point *p, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].position < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return p[lo == n ? 0 : lo].member;
}

static void lookup_ns(const struct ring *r, const uint64_t *keys, double *ring_ns,
		      double *batch_ns, double *bsearch_ns)
{
	static uint32_t members[LOOKUP_KEYS];
	const struct ring_point *p;
	struct ring_lookup_result res;
	volatile uint64_t sink = 0;
	size_t n, i, done;
	double t0, t;

	p = ring_points(r, &n);
	done = 0;
	t0 = now_ns();
	do {
		for (i = 0; i < LOOKUP_KEYS; i++) {
			ring_lookup(r, keys[i], &res);
			sink += res.member;
		}
		done += LOOKUP_KEYS;
		t = now_ns() - t0;
	} while (t < LOOKUP_MIN_NS);
	*ring_ns = t / done;
	done = 0;
	t0 = now_ns();
	do {
		ring_lookup_many(r, keys, LOOKUP_KEYS, members);
		sink += members[LOOKUP_KEYS - 1];
		done += LOOKUP_KEYS;
		t = now_ns() - t0;
	} while (t < LOOKUP_MIN_NS);
	*batch_ns = t / done;
	done = 0;
	t0 = now_ns();
	do {
		for (i = 0; i < LOOKUP_KEYS; i++)
			sink += bsearch_owner(p, n, keys[i]);
		done += LOOKUP_KEYS;
		t = now_ns() - t0;
	} while (t < LOOKUP_MIN_NS);
	*bsearch_ns = t / done;
	(void)sink;
}

static double peak_over_mean(const struct ring *r)
{
	size_t n = ring_member_count(r), i;
	double *shares = malloc(n * sizeof(*shares)), peak = 0;

	ring_shares(r, shares);
	for (i = 0; i < n; i++)
		if (shares[i] > peak)
			peak = shares[i];
	free(shares);
	return peak * n;
}

/*
 * Apply one change to a copy of @r; count keys whose owner changes, and among
 * them those that moved between two members the change did not touch.
 */
static void disruption(const struct ring *r, const uint64_t *keys, int add, double *ratio,
		       long *between_unchanged)
{
	size_t n = ring_member_count(r), moved = 0, i;
	const char *changed = add ? "backend-new" : "backend-0";
	struct ring *after;
	double ideal;
	int err;

	*between_unchanged = 0;
	err = ring_clone(&after, r);
	if (err)
		die("ring_clone", err);
	err = add ? ring_add(after, changed, 1) : ring_remove(after, changed);
	if (err)
		die("change", err);
	for (i = 0; i < DISRUPTION_KEYS; i++) {
		struct ring_lookup_result a, b;
		const char *was, *now;

		ring_lookup(r, keys[i], &a);
		ring_lookup(after, keys[i], &b);
		was = ring_member_name(r, a.member);
		now = ring_member_name(after, b.member);
		if (strcmp(was, now) == 0)
			continue;
		moved++;
		if (strcmp(was, changed) != 0 && strcmp(now, changed) != 0)
			(*between_unchanged)++;
	}
	ideal = add ? 1.0 / (n + 1) : 1.0 / n;
	*ratio = ((double)moved / DISRUPTION_KEYS) / ideal;
	ring_free(after);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void collisions(void)
{
	size_t n = RING_POINTS_MAX, i, c64 = 0, c32 = 0;
	uint64_t *pos = malloc(n * sizeof(*pos));
	struct ring *r = build_ring(1024, 1024, NULL);
	const struct ring_point *p = ring_points(r, &n);

	for (i = 0; i < n; i++)
		pos[i] = p[i].position;
	for (i = 1; i < n; i++)
		c64 += pos[i] == pos[i - 1];
	for (i = 0; i < n; i++)
		pos[i] >>= 32;
	qsort(pos, n, sizeof(*pos), cmp_u64);
	for (i = 1; i < n; i++)
		c32 += pos[i] == pos[i - 1];
	printf("\nPosition collisions among %zu points (1024 members x 1024):\n", n);
	printf("  64-bit positions: %zu   (expected n^2/2^65 = %.1e)\n", c64,
	       (double)n * n / ldexp(1, 65));
	printf("  top 32 bits only: %zu   (expected n^2/2^33 = %.0f)\n", c32,
	       (double)n * n / ldexp(1, 33));
	free(pos);
	ring_free(r);
}

int main(void)
{
	static const uint32_t member_counts[] = { 10, 100, 1000 };
	static const uint32_t vnode_counts[] = { 100, 1000 };
	static const struct { uint32_t members, vnodes; } sized[] = {
		{ 64, 1024 },   /* 65,536 points */
		{ 1024, 1024 }, /* 1,048,576 points */
	};
	struct test_rng rng = { SEED };
	uint64_t *keys = malloc(LOOKUP_KEYS * sizeof(*keys));
	size_t i, j;

	for (i = 0; i < LOOKUP_KEYS; i++)
		keys[i] = test_rng_next(&rng);

	printf("Ring library: N members of weight 1, K points per weight; lookups on %u random keys;\n"
	       "disruption over %d random keys. Lookup ratio = ring lookup / plain binary search.\n\n",
	       LOOKUP_KEYS, DISRUPTION_KEYS);
	printf("%5s %5s %8s %9s %9s %8s %9s %6s %9s %7s %9s %9s %10s %8s\n", "N", "K", "points",
	       "build ms", "lookup ns", "batch ns", "bsrch ns", "ratio", "peak/mean", "theory",
	       "add mv/id", "rm mv/id", "1+-3/sqrtK", "between");
	for (i = 0; i < sizeof(member_counts) / sizeof(member_counts[0]); i++) {
		for (j = 0; j < sizeof(vnode_counts) / sizeof(vnode_counts[0]); j++) {
			uint32_t n = member_counts[i], k = vnode_counts[j];
			double build_ms, ring_ns, batch_ns, bs_ns, add_ratio, rm_ratio;
			long add_between, rm_between;
			struct ring *r = build_ring(n, k, &build_ms);
			size_t points;

			ring_points(r, &points);
			lookup_ns(r, keys, &ring_ns, &batch_ns, &bs_ns);
			disruption(r, keys, 1, &add_ratio, &add_between);
			disruption(r, keys, 0, &rm_ratio, &rm_between);
			printf("%5u %5u %8zu %9.2f %9.1f %8.1f %9.1f %6.2f %9.3f %7.3f %9.3f %9.3f %10.3f %8ld\n",
			       n, k, points, build_ms, ring_ns, batch_ns, bs_ns, ring_ns / bs_ns,
			       peak_over_mean(r), 1 + 2.5 / sqrt(k), add_ratio, rm_ratio,
			       3 / sqrt(k), add_between + rm_between);
			ring_free(r);
		}
	}

	printf("\nLookup at the target sizes (targets: <= 25 ns at 65,536 points, <= 60 ns at 1,048,576):\n");
	printf("%9s %9s %9s %8s %9s %6s %6s\n", "points", "build ms", "lookup ns", "batch ns",
	       "bsrch ns", "ratio", "steps");
	for (i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
		double build_ms, ring_ns, batch_ns, bs_ns;
		struct ring *r = build_ring(sized[i].members, sized[i].vnodes, &build_ms);
		size_t points;

		ring_points(r, &points);
		lookup_ns(r, keys, &ring_ns, &batch_ns, &bs_ns);
		printf("%9zu %9.2f %9.1f %8.1f %9.1f %6.2f %6u\n", points, build_ms, ring_ns, batch_ns,
		       bs_ns, ring_ns / bs_ns, ring_search_steps(r));
		ring_free(r);
	}
	collisions();
	free(keys);
	return 0;
}
