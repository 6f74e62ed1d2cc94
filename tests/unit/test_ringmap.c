// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring map images (user/ringmap.c), in memory, no kernel needed: a rendered
 * image answers every key as the ring library does, through the very search
 * the XDP program runs (bpf/lb_ring_search.h); a change written as edits
 * leaves an image that answers, compares and digests exactly like a fresh
 * render of the changed ring; and every way an edit can fail is reported and
 * leaves the image marked unusable.
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
#include "ring.h"
#include "ringmap.h"
#include "testutil.h"

/* The search's own helpers, for test_below_is_the_unsigned_compare (it reads no slot). */
static inline const union lb_ring_slot *ring_slot(void *ring, __u32 slot)
{
	return slot == 0 ? ring : NULL;
}

#include "lb_ring_search.h"

#define SEED 0x72696e676d6170ULL
#define NAME_LEN 24
#define POOL_MAX 64
/* Ids far from 0 and from member numbers, so a mixed-up id cannot pass. */
#define BACKEND_ID_BASE 1000
/* Points test_points_on_bucket_edges_answer_exactly adds. */
#define EDGE_POINTS 7

/* A membership: the members a VIP's ring holds, with their backends. */
struct pool {
	char names[POOL_MAX][NAME_LEN];
	struct ringmap_member members[POOL_MAX];
	size_t count;
	__u32 vnodes;
};

static void pool_add(struct pool *p, const char *name, __u32 weight, __u32 backend_id)
{
	snprintf(p->names[p->count], NAME_LEN, "%s", name);
	p->members[p->count] = (struct ringmap_member){ p->names[p->count], weight, backend_id };
	p->count++;
}

static void pool_drop(struct pool *p, size_t i)
{
	p->count--;
	if (i != p->count) {
		memcpy(p->names[i], p->names[p->count], NAME_LEN);
		p->members[i] = p->members[p->count];
	}
	p->members[i].name = p->names[i];
}

/* The library's ring of @p and each member's backend id, in member order. */
static struct ring *pool_ring(const struct pool *p, __u32 **ids)
{
	struct ring_member rm[POOL_MAX];
	struct ring *r;
	size_t i;
	__u32 m = 0;

	for (i = 0; i < p->count; i++)
		rm[i] = (struct ring_member){ p->members[i].name, p->members[i].weight };
	check(ring_build(&r, p->vnodes, rm, p->count) == 0, "the test's membership builds");
	*ids = calloc(p->count ? p->count : 1, sizeof(**ids));
	for (i = 0; i < p->count; i++) {
		check(ring_member_find(r, p->members[i].name, &m) == 0, "member %s is in the ring",
		      p->members[i].name);
		(*ids)[m] = p->members[i].backend_id;
	}
	return r;
}

/* A zeroed image of @points' class, sized like the kernel's map. */
static struct ringmap image_new(size_t points)
{
	struct ringmap m = { .bits = ringmap_bits(points) };
	int class = ringmap_class(points, m.bits);

	check(class >= 0, "%zu points fit a ring class", points);
	m.slot_count = ringmap_class_slots(class);
	m.slots = calloc(m.slot_count, sizeof(*m.slots));
	check(m.slots != NULL, "image memory");
	return m;
}

static size_t ring_point_count(const struct ring *r)
{
	size_t n;

	ring_points(r, &n);
	return n;
}

/* Every key of @keys and every point's position and neighbours answer alike. */
static void answers_agree(const struct ringmap *m, const struct ring *r, const __u32 *ids,
			  struct test_rng *rng, size_t keys, const char *what)
{
	const struct ring_point *points;
	struct ring_lookup_result res;
	size_t n, i;
	__u32 got = 0;

	points = ring_points(r, &n);
	for (i = 0; i < keys + 3 * n + 2; i++) {
		__u64 key;

		if (i < keys)
			key = test_rng_next(rng);
		else if (i < keys + 3 * n)
			key = points[(i - keys) / 3].position + (__u64)((i - keys) % 3) - 1;
		else
			key = i == keys + 3 * n ? 0 : UINT64_MAX;
		check(ring_lookup(r, key, &res) == 0, "%s: the library answers", what);
		check(ringmap_lookup(m, key, &got) == 0, "%s: the image answers key %#llx", what,
		      (unsigned long long)key);
		check(got == ids[res.member],
		      "%s: key %#llx: image says backend %u, the ring says %u", what,
		      (unsigned long long)key, got, ids[res.member]);
	}
}

static void test_render_answers_every_key_like_the_ring(void **state)
{
	static const struct {
		size_t members;
		__u32 vnodes;
		__u32 weight_spread;
	} cases[] = {
		{ 1, 1, 1 },     /* one point: every key wraps to it */
		{ 3, 5, 4 },     /* a few points, weighted */
		{ 40, 256, 3 },  /* tens of thousands */
		{ 64, 2048, 2 }, /* over a hundred thousand: class 2 */
	};
	struct test_rng rng = { SEED };
	size_t c, i;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pool p = { .vnodes = cases[c].vnodes };
		struct ringmap m;
		struct ring *r;
		__u32 *ids;
		char what[64];

		for (i = 0; i < cases[c].members; i++) {
			char name[NAME_LEN];

			snprintf(name, sizeof(name), "backend-%02u", (unsigned int)i);
			pool_add(&p, name, 1 + (__u32)(i % cases[c].weight_spread),
				 BACKEND_ID_BASE + (__u32)i * 7);
		}
		r = pool_ring(&p, &ids);
		m = image_new(ring_point_count(r));
		snprintf(what, sizeof(what), "%zu members x K=%u", cases[c].members,
			 cases[c].vnodes);
		check(ringmap_render(&m, r, ids, ring_fingerprint(r)) == 0, "%s: renders", what);
		check(m.slots[LB_RING_COUNTS_SLOT].counts.points == ring_point_count(r), "%s: header counts points",
		      what);
		check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == 0,
		      "%s: a render compares equal to its ring", what);
		answers_agree(&m, r, ids, &rng, 20000, what);
		free(m.slots);
		free(ids);
		ring_free(r);
	}
}

/* Edits from @before to @after, applied to @m; checked against a fresh render. */
static void change_and_check(struct ringmap *m, const struct pool *before, const struct pool *after,
			     struct test_rng *rng, const char *what)
{
	struct ringmap_edit *edits;
	struct ringmap fresh;
	struct ring *r, *old;
	__u32 *ids, *old_ids;
	__u64 d_patched, d_fresh;
	size_t count;
	int err;

	old = pool_ring(before, &old_ids);
	r = pool_ring(after, &ids);
	check(ringmap_edits(after->vnodes, before->members, before->count, after->members,
			    after->count, LB_RING_POINTS_MAX, &edits, &count) == 0,
	      "%s: edits computed", what);
	err = ringmap_apply(m, edits, count, ring_fingerprint(r));
	check(err == 0, "%s: %zu edits apply (%d)", what, count, err);
	check(ringmap_compare(m, r, ids, ring_fingerprint(r)) == 0,
	      "%s: the changed image holds exactly the new ring", what);
	answers_agree(m, r, ids, rng, 2000, what);
	fresh = image_new(ring_point_count(r));
	fresh.bits = m->bits; /* same geometry, as the controller patches only then */
	check(ringmap_render(&fresh, r, ids, ring_fingerprint(r)) == 0, "%s: fresh render", what);
	check(ringmap_digest(m, &d_patched) == 0 && ringmap_digest(&fresh, &d_fresh) == 0 &&
		      d_patched == d_fresh,
	      "%s: the changed image digests like a fresh render", what);
	free(fresh.slots);
	free(edits);
	free(ids);
	free(old_ids);
	ring_free(r);
	ring_free(old);
}

static void test_edits_make_the_ring_a_fresh_build_makes(void **state)
{
	struct test_rng rng = { SEED + 1 };
	struct pool p = { .vnodes = 64 }, next;
	struct ringmap m;
	struct ring *r;
	__u32 *ids, next_id = BACKEND_ID_BASE;
	size_t step, i;

	(void)state;
	for (i = 0; i < 24; i++) {
		char name[NAME_LEN];

		snprintf(name, sizeof(name), "web-%zu", i);
		pool_add(&p, name, 1 + (__u32)test_rng_below(&rng, 3), next_id++);
	}
	r = pool_ring(&p, &ids);
	/*
	 * Room for the largest membership below and for the runs 300 changes
	 * abandon, so every change is written in place: class 2's map.
	 */
	m = image_new(LB_RING_POINTS_MAX / 2);
	m.bits = ringmap_bits(ring_point_count(r));
	check(ringmap_render(&m, r, ids, ring_fingerprint(r)) == 0, "first render");
	free(ids);
	ring_free(r);
	for (step = 0; step < 300; step++) {
		char what[64], name[NAME_LEN];
		size_t pick;

		next = p;
		for (i = 0; i < next.count; i++)
			next.members[i].name = next.names[i];
		pick = (size_t)test_rng_below(&rng, next.count);
		switch (test_rng_below(&rng, 4)) {
		case 0: /* a new backend */
			snprintf(name, sizeof(name), "web-new-%zu", step);
			if (next.count < 40)
				pool_add(&next, name, 1 + (__u32)test_rng_below(&rng, 3), next_id++);
			snprintf(what, sizeof(what), "step %zu: add %s", step, name);
			break;
		case 1: /* one removed */
			if (next.count > 8)
				pool_drop(&next, pick);
			snprintf(what, sizeof(what), "step %zu: remove", step);
			break;
		case 2: /* a new weight, 0 included (a drain) */
			next.members[pick].weight = (__u32)test_rng_below(&rng, 4);
			snprintf(what, sizeof(what), "step %zu: weight %u", step,
				 next.members[pick].weight);
			break;
		default: /* the name comes back as another backend */
			next.members[pick].backend_id = next_id++;
			snprintf(what, sizeof(what), "step %zu: new backend id", step);
			break;
		}
		change_and_check(&m, &p, &next, &rng, what);
		p = next;
		for (i = 0; i < p.count; i++)
			p.members[i].name = p.names[i];
	}
	free(m.slots);
}

/* A three-member ring rendered at @vnodes, its membership in @p. */
static struct ringmap small_image(struct pool *p, __u32 vnodes, struct ring **r, __u32 **ids)
{
	struct ringmap m;

	*p = (struct pool){ .vnodes = vnodes };
	pool_add(p, "a", 1, BACKEND_ID_BASE);
	pool_add(p, "b", 2, BACKEND_ID_BASE + 1);
	pool_add(p, "c", 1, BACKEND_ID_BASE + 2);
	*r = pool_ring(p, ids);
	m = image_new(ring_point_count(*r));
	check(ringmap_render(&m, *r, *ids, ring_fingerprint(*r)) == 0, "small ring renders");
	return m;
}

static void small_free(struct ringmap *m, struct ring *r, __u32 *ids)
{
	free(m->slots);
	free(ids);
	ring_free(r);
}

static void test_failed_edits_are_reported_and_mark_the_image_unusable(void **state)
{
	const struct ring_point *points;
	struct ringmap_edit edit, all[4];
	struct ringmap m;
	struct ring *r;
	struct pool p;
	__u32 *ids;
	size_t n, i;

	(void)state;
	m = small_image(&p, 16, &r, &ids);
	points = ring_points(r, &n);
	edit = (struct ringmap_edit){ points[0].position + 1, ids[points[0].member], 0 };
	check(ringmap_apply(&m, &edit, 1, 1) == -ENOENT, "removing an absent point: -ENOENT");
	check(m.slots[LB_RING_COUNTS_SLOT].counts.points == LB_RING_POINTS_WRITING,
	      "a failed change leaves the header saying the image is being written");
	check(ringmap_apply(&m, &edit, 1, 1) == -EINVAL,
	      "an image marked as being written takes no further change");
	check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == -EBADMSG,
	      "nor compares equal to any ring");
	small_free(&m, r, ids);

	m = small_image(&p, 16, &r, &ids);
	points = ring_points(r, &n);
	edit = (struct ringmap_edit){ points[0].position, ids[points[0].member] + 1, 0 };
	check(ringmap_apply(&m, &edit, 1, 1) == -ENOENT,
	      "removing a point under another backend id: -ENOENT");
	small_free(&m, r, ids);

	m = small_image(&p, 16, &r, &ids);
	points = ring_points(r, &n);
	edit = (struct ringmap_edit){ points[n / 2].position, BACKEND_ID_BASE + 9, 1 };
	check(ringmap_apply(&m, &edit, 1, 1) == -EEXIST,
	      "adding a point at a taken position: -EEXIST (ties are the library's to order)");
	small_free(&m, r, ids);

	m = small_image(&p, 16, &r, &ids);
	points = ring_points(r, &n);
	edit = (struct ringmap_edit){ points[0].position + 1, LB_RING_ENTRY_BACKEND_MASK + 1, 1 };
	check(ringmap_apply(&m, &edit, 1, 1) == -EINVAL,
	      "a backend id wider than an entry's backend bits: -EINVAL");
	small_free(&m, r, ids);

	m = small_image(&p, 16, &r, &ids);
	memset(m.slots, 0, m.slot_count * sizeof(*m.slots));
	ids[1] = LB_RING_ENTRY_BACKEND_MASK + 1;
	check(ringmap_render(&m, r, ids, 1) == -EINVAL,
	      "rendering a member with a backend id wider than an entry's bits: -EINVAL");
	small_free(&m, r, ids);

	m = small_image(&p, 1, &r, &ids);
	points = ring_points(r, &n);
	for (i = 0; i < n; i++)
		all[i] = (struct ringmap_edit){ points[i].position, ids[points[i].member], 0 };
	check(ringmap_apply(&m, all, n, 1) == -EINVAL,
	      "removing every point: -EINVAL (an empty ring is no ring map)");
	small_free(&m, r, ids);
}

/* Adds into one bucket whose copied runs (2 + ... + 141 slots) outgrow class 0's run area. */
#define RUN_AREA_FILLERS 140

static void test_full_run_area_is_refused(void **state)
{
	struct ringmap_edit edits[RUN_AREA_FILLERS];
	struct ringmap m;
	struct ring *r;
	struct pool p;
	__u32 *ids, i;
	__u64 base;
	int err;

	(void)state;
	m = small_image(&p, 16, &r, &ids);
	/* Points packed into the bucket of the ring's first point. */
	base = ring_points(r, &(size_t){ 0 })[0].position & ~(((__u64)1 << (64 - m.bits)) - 1);
	/* Each add copies the bucket's run: 2 + 3 + ... + 141 slots outgrow class 0's. */
	for (i = 0; i < RUN_AREA_FILLERS; i++)
		edits[i] = (struct ringmap_edit){ base + 1 + i * 2, BACKEND_ID_BASE, 1 };
	err = ringmap_apply(&m, edits, RUN_AREA_FILLERS, 1);
	check(err == -ENOSPC, "a change that outgrows the image's run area: -ENOSPC (got %d)", err);
	small_free(&m, r, ids);

}

static void test_compare_and_digest_catch_any_changed_answer(void **state)
{
	struct ringmap m;
	struct ring *r;
	struct pool p;
	__u32 *ids, j;
	__u64 good, bad;
	size_t run_bucket = 0;

	(void)state;
	m = small_image(&p, 64, &r, &ids);
	check(ringmap_digest(&m, &good) == 0, "digest of a good image");
	for (j = 0; j < (1u << m.bits) && !run_bucket; j++)
		if (LB_RING_RUN_COUNT(m.slots[LB_RING_RUNS_SLOT(m.bits, j)].runs[j & 1]) >= 2)
			run_bucket = j + 1;
	check(run_bucket, "the test ring has a bucket with a run");

	m.slots[LB_RING_BUCKET_SLOT(3)].entry ^= 1;
	check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == -EBADMSG,
	      "a bucket naming another backend is caught");
	check(ringmap_digest(&m, &bad) == 0 && bad != good, "and changes the digest");
	m.slots[LB_RING_BUCKET_SLOT(3)].entry ^= 1;

	{
		__u32 j = (__u32)run_bucket - 1;
		__u32 run = m.slots[LB_RING_RUNS_SLOT(m.bits, j)].runs[j & 1];
		union lb_ring_slot *pt = &m.slots[LB_RING_RUN_SLOT(m.bits, LB_RING_RUN_START(run)) + 1];

		/* Entries hold positions shifted left by the bucket bits. */
		pt->entry += (__u64)1 << m.bits;
		check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == -EBADMSG,
		      "a run point moved by one is caught");
		check(ringmap_digest(&m, &bad) == 0 && bad != good, "and changes the digest");
		pt->entry -= (__u64)1 << m.bits;
	}
	m.slots[LB_RING_FINGERPRINT_SLOT].fingerprint++;
	check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == -EBADMSG,
	      "another ring's fingerprint is caught");
	m.slots[LB_RING_FINGERPRINT_SLOT].fingerprint--;
	check(ringmap_compare(&m, r, ids, ring_fingerprint(r)) == 0 &&
		      ringmap_digest(&m, &bad) == 0 && bad == good,
	      "put back, the image is good again");
	free(m.slots);
	free(ids);
	ring_free(r);
}

/* Owner of @key among @n points sorted by position: the first at or after it, going round. */
static __u32 sorted_owner(const struct ringmap_edit *points, size_t n, __u64 key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (points[i].position >= key)
			return points[i].backend_id;
	return points[0].backend_id;
}

static int edit_by_position(const void *a, const void *b)
{
	__u64 x = ((const struct ringmap_edit *)a)->position;
	__u64 y = ((const struct ringmap_edit *)b)->position;

	return x < y ? -1 : x > y;
}

/*
 * An entry holds a position shifted left by the bucket bits, and an empty
 * bucket's entry is all ones above the low bits: points on a bucket's first
 * and last positions (the last one's entry equals an empty bucket's), one
 * position apart, and on the circle's ends must still answer exactly.
 */
static void test_points_on_bucket_edges_answer_exactly(void **state)
{
	struct ringmap_edit points[64 + EDGE_POINTS], edge[EDGE_POINTS];
	const struct ring_point *rp;
	struct ringmap m;
	struct ring *r;
	struct pool p;
	__u32 *ids, got;
	__u64 width, j, key;
	size_t n, i, k;

	(void)state;
	m = small_image(&p, 16, &r, &ids);
	rp = ring_points(r, &n);
	check(n + EDGE_POINTS <= sizeof(points) / sizeof(points[0]), "the test ring is small");
	width = (__u64)1 << (64 - m.bits);
	/*
	 * Buckets j .. j + 2, which the ring's points leave empty, then get
	 * points on j's edges and j + 2's last position; j + 1 stays empty.
	 */
	j = ((rp[0].position >> (64 - m.bits)) + (1u << (m.bits - 1))) & ((1u << m.bits) - 1);
	edge[0] = (struct ringmap_edit){ j * width, BACKEND_ID_BASE + 10, 1 };
	edge[1] = (struct ringmap_edit){ j * width + 1, BACKEND_ID_BASE + 11, 1 };
	edge[2] = (struct ringmap_edit){ (j + 1) * width - 2, BACKEND_ID_BASE + 12, 1 };
	edge[3] = (struct ringmap_edit){ (j + 1) * width - 1, BACKEND_ID_BASE + 13, 1 };
	edge[4] = (struct ringmap_edit){ (j + 3) * width - 1, BACKEND_ID_BASE + 14, 1 };
	edge[5] = (struct ringmap_edit){ UINT64_MAX, BACKEND_ID_BASE + 15, 1 };
	edge[6] = (struct ringmap_edit){ 0, BACKEND_ID_BASE + 16, 1 };
	check(j + 3 <= ((__u64)1 << m.bits), "the test's buckets do not wrap");
	for (i = 0; i < n; i++) {
		check(rp[i].position >> (64 - m.bits) < j ||
			      rp[i].position >> (64 - m.bits) > j + 2,
		      "the ring leaves the test's three buckets empty");
		points[i] = (struct ringmap_edit){ rp[i].position, ids[rp[i].member], 1 };
	}
	check(ringmap_apply(&m, edge, EDGE_POINTS, 1) == 0, "points on bucket edges are written");
	memcpy(points + n, edge, sizeof(edge));
	n += EDGE_POINTS;
	qsort(points, n, sizeof(points[0]), edit_by_position);
	for (i = 0; i < n; i++) {
		__u64 around[3] = { points[i].position, points[i].position + 1,
				    points[i].position - 1 };

		for (k = 0; k < 3; k++) {
			key = around[k];
			check(ringmap_lookup(&m, key, &got) == 0 &&
				      got == sorted_owner(points, n, key),
			      "key %#llx: backend %u, the points say %u", (unsigned long long)key,
			      got, sorted_owner(points, n, key));
		}
	}
	/* The empty bucket between the edge points answers the next point's backend. */
	key = (j + 1) * width + width / 2;
	check(ringmap_lookup(&m, key, &got) == 0 && got == BACKEND_ID_BASE + 14,
	      "a key in the empty bucket after a bucket's last position goes to the next point");
	small_free(&m, r, ids);
}

static void test_weight_change_edits_only_the_replicas_between(void **state)
{
	struct pool before = { .vnodes = 10 }, after;
	struct ringmap_edit *edits;
	size_t count, i;

	(void)state;
	pool_add(&before, "x", 2, BACKEND_ID_BASE);
	pool_add(&before, "y", 1, BACKEND_ID_BASE + 1);
	after = before;
	after.members[0].name = after.names[0];
	after.members[1].name = after.names[1];
	after.members[0].weight = 3;
	check(ringmap_edits(10, before.members, 2, after.members, 2, 1000, &edits, &count) == 0,
	      "edits of a weight change");
	check(count == 10, "weight 2 -> 3 at K = 10: 10 points added (got %zu)", count);
	for (i = 0; i < count; i++)
		check(edits[i].add && edits[i].backend_id == BACKEND_ID_BASE &&
			      edits[i].position == ring_point_position("x", 20 + (__u32)i),
		      "edit %zu is replica %zu of x", i, 20 + i);
	free(edits);
	check(ringmap_edits(10, before.members, 2, after.members, 2, 9, &edits, &count) == -E2BIG,
	      "more edits than allowed: -E2BIG");
	after.members[1].backend_id++;
	check(ringmap_edits(10, before.members, 2, after.members, 2, 1000, &edits, &count) == 0 &&
		      count == 30 && !edits[0].add && edits[count - 1].add,
	      "a name on a new backend: its 10 points removed and added, removals first, "
	      "with x's 10 added");
	free(edits);
}

static void below_agrees(__u64 a, __u64 b)
{
	__u32 got = ring_below(a, b), want = a < b ? UINT32_MAX : 0;

	check(got == want, "ring_below(%#llx, %#llx) = %#x, want %#x", (unsigned long long)a,
	      (unsigned long long)b, got, want);
}

/* ring_below(), the search's branch-free compare, on the edges of 64-bit values and at random. */
static void test_below_is_the_unsigned_compare(void **state)
{
	static const __u64 values[] = {
		0, 1, 2, 0x7fffffffffffffffull, 0x8000000000000000ull, 0x8000000000000001ull,
		0xfffffffffffffffeull, UINT64_MAX, 0x00000000ffffffffull, 0x0000000100000000ull,
	};
	struct test_rng rng = { SEED };
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		for (j = 0; j < sizeof(values) / sizeof(values[0]); j++)
			below_agrees(values[i], values[j]);
	for (i = 0; i < 100000; i++) {
		__u64 a = test_rng_next(&rng), b = i & 1 ? test_rng_next(&rng) : a ^ (1ull << (i % 64));

		below_agrees(a, b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_answers_every_key_like_the_ring),
		cmocka_unit_test(test_edits_make_the_ring_a_fresh_build_makes),
		cmocka_unit_test(test_failed_edits_are_reported_and_mark_the_image_unusable),
		cmocka_unit_test(test_full_run_area_is_refused),
		cmocka_unit_test(test_compare_and_digest_catch_any_changed_answer),
		cmocka_unit_test(test_points_on_bucket_edges_answer_exactly),
		cmocka_unit_test(test_weight_change_edits_only_the_replicas_between),
		cmocka_unit_test(test_below_is_the_unsigned_compare),
	};

	return tests_run("test_ringmap", tests);
}
