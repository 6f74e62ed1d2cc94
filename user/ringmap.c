// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring map images: render a ring into lb_contract.h's bucket layout, change
 * it in place point by point, search it with the kernel's own search, and
 * compare or digest what that search reads. See ringmap.h.
 *
 * Words used below: bucket j "holds" the points whose top bits are j; its
 * "first" is the first point at or after its start, going round (its own
 * first point, or a later bucket's when it holds none). A bucket holding two
 * or more points keeps them in a run; one holding a single point keeps it in
 * the bucket itself.
 */
#include "ringmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "siphash.h"

/* Userspace's ring_slot() for the shared search: an index checked against the image. */
static inline const union lb_ring_slot *ring_slot(void *ring, __u32 slot)
{
	const struct ringmap *m = ring;

	return slot < m->slot_count ? &m->slots[slot] : NULL;
}

#include "lb_ring_search.h"

/* Key of ringmap_digest(). */
#define DIGEST_KEY0 0x2d70616d676e6972ULL /* "ringmap-" */
#define DIGEST_KEY1 0x3176747365676964ULL /* "digestv1" */

static const __u32 class_slots[LB_RING_CLASSES] = {
	LB_RING_CLASS0_SLOTS,
	LB_RING_CLASS1_SLOTS,
	LB_RING_CLASS2_SLOTS,
	LB_RING_CLASS3_SLOTS,
};

unsigned int ringmap_bits(size_t points)
{
	unsigned int bits = 1;

	while (bits < LB_RING_INDEX_BITS_MAX && ((size_t)1 << bits) < 2 * points)
		bits++;
	return bits;
}

int ringmap_class(size_t points, unsigned int bits)
{
	size_t slots = LB_RING_SLOTS((__u64)points, bits);
	int c;

	for (c = 0; c < LB_RING_CLASSES; c++)
		if (class_slots[c] >= slots)
			return c;
	return -E2BIG;
}

__u32 ringmap_class_slots(int class)
{
	return class >= 0 && class < LB_RING_CLASSES ? class_slots[class] : 0;
}

static __u32 buckets_of(const struct ringmap *m)
{
	return (__u32)1 << m->bits;
}

/* Run slots the image can use: what the map has past its buckets, as @run can address. */
static size_t run_capacity(const struct ringmap *m)
{
	size_t fixed = 2 + (size_t)buckets_of(m), room;

	room = m->slot_count > fixed ? m->slot_count - fixed : 0;
	return room < LB_RING_RUN_AREA_MAX ? room : LB_RING_RUN_AREA_MAX;
}

static int image_check(const struct ringmap *m)
{
	if (m->bits < 1 || m->bits > LB_RING_INDEX_BITS_MAX ||
	    m->slot_count < 2 + (size_t)buckets_of(m))
		return -EINVAL;
	return 0;
}

static struct lb_ring_header *header_of(const struct ringmap *m)
{
	return &m->slots[0].header;
}

static struct lb_ring_bucket *bucket_at(const struct ringmap *m, __u32 j)
{
	return &m->slots[LB_RING_BUCKET_SLOT(j)].bucket;
}

static struct lb_ring_point *run_at(const struct ringmap *m, __u32 run)
{
	return &m->slots[LB_RING_RUN_SLOT(m->bits, LB_RING_RUN_START(run))].point;
}

static __u32 bucket_of(const struct ringmap *m, __u64 position)
{
	return (__u32)(position >> (64 - m->bits));
}

/* Points bucket j holds: its run's length, or 1 when its first is its own. */
static __u32 held(const struct ringmap *m, __u32 j)
{
	const struct lb_ring_bucket *b = bucket_at(m, j);

	if (b->run)
		return LB_RING_RUN_COUNT(b->run);
	return bucket_of(m, b->position) == j;
}

/* A run of @count whose slots lie inside the run area, or -EBADMSG. */
static int run_valid(const struct ringmap *m, __u32 run)
{
	__u32 count = LB_RING_RUN_COUNT(run);

	if (count < 2 || (size_t)LB_RING_RUN_START(run) + count > run_capacity(m))
		return -EBADMSG;
	return 0;
}

int ringmap_render(struct ringmap *m, const struct ring *ring, const __u32 *backend_of_member,
		   __u64 fingerprint)
{
	const struct ring_point *points;
	const struct ring_bucket *index;
	union lb_ring_slot *buckets, *runs;
	size_t count, i = 0, capacity, used = 0;
	unsigned int shift, index_bits;
	__u32 j, nb;
	int err;

	err = image_check(m);
	if (err)
		return err;
	points = ring_points(ring, &count);
	if (!points || count == 0 || count > LB_RING_POINTS_MAX)
		return -EINVAL;
	/* Locals, not m->: the stores below could alias them for the compiler. */
	nb = buckets_of(m);
	shift = 64 - m->bits;
	buckets = &m->slots[LB_RING_BUCKET_SLOT(0)];
	runs = &m->slots[LB_RING_RUN_SLOT(m->bits, 0)];
	capacity = run_capacity(m);
	index = ring_index(ring, &index_bits);
	for (j = 0; j < nb; j++) {
		size_t from, first, k;

		/*
		 * The library's own index gives each bucket's points when its
		 * geometry is the image's (it is, for every image lb.c makes):
		 * no branch per point, which halves the render.
		 */
		if (index_bits == m->bits) {
			from = index[j].first;
			i = index[j + 1].first;
		} else {
			from = i;
			while (i < count && (__u32)(points[i].position >> shift) == j)
				i++;
		}
		first = from < count ? from : 0;
		buckets[j].bucket = (struct lb_ring_bucket){
			.position = points[first].position,
			.backend_id = backend_of_member[points[first].member],
		};
		if (i - from < 2)
			continue;
		if (i - from > LB_RING_RUN_COUNT_MAX)
			return -E2BIG;
		if (used + (i - from) > capacity)
			return -ENOSPC;
		buckets[j].bucket.run = LB_RING_RUN((__u32)used, (__u32)(i - from));
		for (k = from; k < i; k++)
			runs[used++].point = (struct lb_ring_point){
				.position = points[k].position,
				.backend_id = backend_of_member[points[k].member],
			};
	}
	buckets[nb] = buckets[0];
	buckets[nb].bucket.run = 0;
	header_of(m)->fingerprint = fingerprint;
	header_of(m)->points = (__u32)count;
	header_of(m)->runs_used = (__u32)used;
	return 0;
}

/* --- changes ------------------------------------------------------------------ */

/*
 * Bucket j's first became (@position, @backend_id): so did the first of every
 * empty bucket just before it, going back round the circle.
 */
static void first_spread(const struct ringmap *m, __u32 j, __u64 position, __u32 backend_id)
{
	__u32 mask = buckets_of(m) - 1, k = (j - 1) & mask;

	while (k != j && held(m, k) == 0) {
		bucket_at(m, k)->position = position;
		bucket_at(m, k)->backend_id = backend_id;
		k = (k - 1) & mask;
	}
}

static int run_alloc(const struct ringmap *m, __u32 count, __u32 *run)
{
	struct lb_ring_header *h = header_of(m);

	if (count > LB_RING_RUN_COUNT_MAX)
		return -E2BIG;
	if ((size_t)h->runs_used + count > run_capacity(m))
		return -ENOSPC;
	*run = LB_RING_RUN(h->runs_used, count);
	h->runs_used += count;
	return 0;
}

/* Index of the first point of @run at or after @position. */
static __u32 run_lower_bound(const struct lb_ring_point *run, __u32 count, __u64 position)
{
	__u32 lo = 0, hi = count;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (run[mid].position < position)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int point_add(const struct ringmap *m, __u64 position, __u32 backend_id)
{
	__u32 j = bucket_of(m, position), n = held(m, j), run, at;
	struct lb_ring_bucket *b = bucket_at(m, j);
	struct lb_ring_point *from, *to;
	int err;

	if (n == 0) {
		b->position = position;
		b->backend_id = backend_id;
		first_spread(m, j, position, backend_id);
		return 0;
	}
	if (n == 1) {
		struct lb_ring_point own = { b->position, b->backend_id, 0 };

		if (own.position == position)
			return -EEXIST;
		err = run_alloc(m, 2, &run);
		if (err)
			return err;
		to = run_at(m, run);
		at = position < own.position ? 0 : 1;
		to[at] = (struct lb_ring_point){ position, backend_id, 0 };
		to[1 - at] = own;
	} else {
		if (run_valid(m, b->run))
			return -EINVAL;
		from = run_at(m, b->run);
		at = run_lower_bound(from, n, position);
		if (at < n && from[at].position == position)
			return -EEXIST;
		err = run_alloc(m, n + 1, &run);
		if (err)
			return err;
		to = run_at(m, run);
		memcpy(to, from, at * sizeof(*to));
		to[at] = (struct lb_ring_point){ position, backend_id, 0 };
		memcpy(to + at + 1, from + at, (n - at) * sizeof(*to));
	}
	b->run = run;
	if (at == 0) {
		b->position = position;
		b->backend_id = backend_id;
		first_spread(m, j, position, backend_id);
	}
	return 0;
}

static int point_remove(const struct ringmap *m, __u64 position, __u32 backend_id)
{
	__u32 j = bucket_of(m, position), n = held(m, j), mask = buckets_of(m) - 1, at;
	struct lb_ring_bucket *b = bucket_at(m, j);
	struct lb_ring_point *run;

	if (n == 0)
		return -ENOENT;
	if (n == 1) {
		const struct lb_ring_bucket *next = bucket_at(m, (j + 1) & mask);

		if (b->position != position || b->backend_id != backend_id)
			return -ENOENT;
		/* The bucket's first is now the next bucket's. */
		b->position = next->position;
		b->backend_id = next->backend_id;
		first_spread(m, j, b->position, b->backend_id);
		return 0;
	}
	if (run_valid(m, b->run))
		return -EINVAL;
	run = run_at(m, b->run);
	at = run_lower_bound(run, n, position);
	while (at < n && run[at].position == position && run[at].backend_id != backend_id)
		at++;
	if (at == n || run[at].position != position)
		return -ENOENT;
	if (n == 2) {
		/* One point left: it moves into the bucket; the run is abandoned. */
		b->position = run[1 - at].position;
		b->backend_id = run[1 - at].backend_id;
		b->run = 0;
	} else {
		/* Private to this image until it is swapped in: shrink in place. */
		memmove(run + at, run + at + 1, (n - 1 - at) * sizeof(*run));
		memset(run + n - 1, 0, sizeof(*run));
		b->run = LB_RING_RUN(LB_RING_RUN_START(b->run), n - 1);
		b->position = run[0].position;
		b->backend_id = run[0].backend_id;
	}
	if (at == 0)
		first_spread(m, j, b->position, b->backend_id);
	return 0;
}

int ringmap_apply(struct ringmap *m, const struct ringmap_edit *edits, size_t count,
		  __u64 fingerprint)
{
	struct lb_ring_header *h;
	size_t points, i;
	__u32 buckets;
	int err = 0;

	if (image_check(m))
		return -EINVAL;
	h = header_of(m);
	points = h->points;
	if (points == 0 || points == LB_RING_POINTS_WRITING || h->runs_used > run_capacity(m))
		return -EINVAL;
	h->points = LB_RING_POINTS_WRITING;
	for (i = 0; i < count && !err; i++) {
		if (edits[i].add) {
			err = points >= LB_RING_POINTS_MAX ? -E2BIG :
				point_add(m, edits[i].position, edits[i].backend_id);
			points += !err;
		} else {
			err = points <= 1 ? -EINVAL :
				point_remove(m, edits[i].position, edits[i].backend_id);
			points -= !err;
		}
	}
	if (err)
		return err;
	buckets = buckets_of(m);
	*bucket_at(m, buckets) = *bucket_at(m, 0);
	bucket_at(m, buckets)->run = 0;
	h->fingerprint = fingerprint;
	h->points = (__u32)points;
	return 0;
}

/* --- edits between two memberships ------------------------------------------- */

static int member_by_name(const void *a, const void *b)
{
	return strcmp((*(const struct ringmap_member *const *)a)->name,
		      (*(const struct ringmap_member *const *)b)->name);
}

/* Pointers to @members, sorted by name. */
static const struct ringmap_member **members_sorted(const struct ringmap_member *members,
						    size_t count)
{
	const struct ringmap_member **sorted = malloc((count ? count : 1) * sizeof(*sorted));
	size_t i;

	if (!sorted)
		return NULL;
	for (i = 0; i < count; i++)
		sorted[i] = &members[i];
	qsort(sorted, count, sizeof(*sorted), member_by_name);
	return sorted;
}

struct edit_list {
	struct ringmap_edit *edits;
	size_t count;
	size_t max;
	__u32 vnodes;
};

/* Replicas [from, to) of @m, added or removed. */
static int edits_push(struct edit_list *l, const struct ringmap_member *m, __u64 from, __u64 to,
		      __u32 add)
{
	__u64 i;

	if (from >= to)
		return 0;
	if (to - from > l->max - l->count)
		return -E2BIG;
	for (i = from; i < to; i++)
		l->edits[l->count++] = (struct ringmap_edit){
			.position = ring_point_position(m->name, (__u32)i),
			.backend_id = m->backend_id,
			.add = add,
		};
	return 0;
}

/* One pass over both name-sorted lists: @add 0 pushes removals, 1 additions. */
static int edits_pass(struct edit_list *l, const struct ringmap_member **before, size_t nb,
		      const struct ringmap_member **after, size_t na, __u32 add)
{
	__u64 k = l->vnodes;
	size_t i = 0, j = 0;
	int err = 0;

	while (!err && (i < nb || j < na)) {
		int cmp = i == nb ? 1 : j == na ? -1 : strcmp(before[i]->name, after[j]->name);
		const struct ringmap_member *b = cmp <= 0 ? before[i] : NULL;
		const struct ringmap_member *a = cmp >= 0 ? after[j] : NULL;
		__u64 wb = b ? b->weight : 0, wa = a ? a->weight : 0;

		if (a && b && a->backend_id != b->backend_id)
			err = add ? edits_push(l, a, 0, wa * k, 1) : edits_push(l, b, 0, wb * k, 0);
		else if (add && wa > wb)
			err = edits_push(l, a, wb * k, wa * k, 1);
		else if (!add && wb > wa)
			err = edits_push(l, b, wa * k, wb * k, 0);
		i += cmp <= 0;
		j += cmp >= 0;
	}
	return err;
}

int ringmap_edits(__u32 vnodes, const struct ringmap_member *before, size_t before_count,
		  const struct ringmap_member *after, size_t after_count, size_t max,
		  struct ringmap_edit **edits, size_t *count)
{
	const struct ringmap_member **b = members_sorted(before, before_count);
	const struct ringmap_member **a = members_sorted(after, after_count);
	struct edit_list l = { .max = max, .vnodes = vnodes };
	int err = -ENOMEM;

	*edits = NULL;
	*count = 0;
	if (!a || !b)
		goto out;
	l.edits = malloc((max ? max : 1) * sizeof(*l.edits));
	if (!l.edits)
		goto out;
	err = edits_pass(&l, b, before_count, a, after_count, 0) ?:
	      edits_pass(&l, b, before_count, a, after_count, 1);
	if (err) {
		free(l.edits);
		goto out;
	}
	*edits = l.edits;
	*count = l.count;
out:
	free(a);
	free(b);
	return err;
}

/* --- reading --------------------------------------------------------------------- */

int ringmap_lookup(const struct ringmap *m, __u64 hash, __u32 *backend_id)
{
	if (image_check(m))
		return -EBADMSG;
	return ring_search((void *)m, m->bits, hash, backend_id) ? -EBADMSG : 0;
}

int ringmap_compare(const struct ringmap *m, const struct ring *ring,
		    const __u32 *backend_of_member, __u64 fingerprint)
{
	const struct ring_point *points;
	const struct lb_ring_header *h;
	size_t count, i = 0;
	__u32 j, buckets;

	if (image_check(m))
		return -EBADMSG;
	points = ring_points(ring, &count);
	h = header_of(m);
	if (!points || count == 0 || h->fingerprint != fingerprint || h->points != count ||
	    h->runs_used > run_capacity(m))
		return -EBADMSG;
	buckets = buckets_of(m);
	for (j = 0; j < buckets; j++) {
		const struct lb_ring_bucket *b = bucket_at(m, j);
		size_t from = i, first, k;

		while (i < count && bucket_of(m, points[i].position) == j)
			i++;
		first = from < count ? from : 0;
		if (b->position != points[first].position ||
		    b->backend_id != backend_of_member[points[first].member] ||
		    held(m, j) != i - from)
			return -EBADMSG;
		if (i - from < 2) {
			if (b->run)
				return -EBADMSG;
			continue;
		}
		if (run_valid(m, b->run))
			return -EBADMSG;
		for (k = from; k < i; k++) {
			const struct lb_ring_point *p = &run_at(m, b->run)[k - from];

			if (p->position != points[k].position ||
			    p->backend_id != backend_of_member[points[k].member])
				return -EBADMSG;
		}
	}
	if (bucket_at(m, buckets)->position != bucket_at(m, 0)->position ||
	    bucket_at(m, buckets)->backend_id != bucket_at(m, 0)->backend_id ||
	    bucket_at(m, buckets)->run)
		return -EBADMSG;
	return 0;
}

int ringmap_digest(const struct ringmap *m, __u64 *digest)
{
	const struct lb_ring_header *h;
	struct siphash_state st;
	__u32 j, k, buckets;

	if (image_check(m))
		return -EBADMSG;
	h = header_of(m);
	if (h->points == 0 || h->points == LB_RING_POINTS_WRITING)
		return -EBADMSG;
	buckets = buckets_of(m);
	siphash_init(&st, DIGEST_KEY0, DIGEST_KEY1);
	siphash_compress(&st, h->fingerprint, 2);
	siphash_compress(&st, (__u64)h->points << 8 | m->bits, 2);
	for (j = 0; j <= buckets; j++) {
		const struct lb_ring_bucket *b = bucket_at(m, j);
		__u32 n = j < buckets ? held(m, j) : 0;

		siphash_compress(&st, b->position, 2);
		siphash_compress(&st, (__u64)b->backend_id << 32 | n, 2);
		if (n < 2)
			continue;
		if (run_valid(m, b->run))
			return -EBADMSG;
		for (k = 0; k < n; k++) {
			siphash_compress(&st, run_at(m, b->run)[k].position, 2);
			siphash_compress(&st, run_at(m, b->run)[k].backend_id, 2);
		}
	}
	*digest = siphash_finish(&st, (__u64)buckets << 32, 2, 4);
	return 0;
}
