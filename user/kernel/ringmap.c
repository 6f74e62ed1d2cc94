// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring map images: render a ring into lb_contract.h's bucket layout, change
 * it in place point by point, search it with the kernel's own search, and
 * compare or digest what that search reads. See ringmap.h.
 *
 * Words used below: bucket j "holds" the points whose top bits are j; its
 * "first" is the first point at or after its start, going round (its own
 * first point, or a later bucket's when it holds none), and its entry says
 * which. A bucket holding two or more points also keeps them all in a run;
 * its run word says where and how many.
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
#define DIGEST_KEY1 0x3276747365676964ULL /* "digestv2" */

static const __u32 class_slots[LB_RING_CLASSES] = {
	LB_RING_CLASS0_SLOTS,
	LB_RING_CLASS1_SLOTS,
	LB_RING_CLASS2_SLOTS,
	LB_RING_CLASS3_SLOTS,
};

unsigned int ringmap_bits(size_t points)
{
	unsigned int bits = LB_RING_BITS_MIN;

	while (bits < LB_RING_BITS_MAX && ((size_t)1 << bits) < 2 * points)
		bits++;
	return bits;
}

int ringmap_class(size_t points, unsigned int bits)
{
	size_t slots;
	int c;

	if (bits < LB_RING_BITS_MIN || bits > LB_RING_BITS_MAX)
		return -EINVAL;
	slots = LB_RING_SLOTS((__u64)points, bits);
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

/* Run slots the image can use: what the map has past its run words, as a run word can address. */
static size_t run_capacity(const struct ringmap *m)
{
	size_t fixed = LB_RING_RUN_SLOT(m->bits, 0), room;

	room = m->slot_count > fixed ? m->slot_count - fixed : 0;
	return room < LB_RING_RUN_AREA_MAX ? room : LB_RING_RUN_AREA_MAX;
}

static int image_check(const struct ringmap *m)
{
	if (m->bits < LB_RING_BITS_MIN || m->bits > LB_RING_BITS_MAX ||
	    m->slot_count < LB_RING_RUN_SLOT(m->bits, 0))
		return -EINVAL;
	return 0;
}

static struct lb_ring_counts *counts_of(const struct ringmap *m)
{
	return &m->slots[LB_RING_COUNTS_SLOT].counts;
}

/* Bucket j's entry (j = 2^b: the sentinel). */
static __u64 *entry_at(const struct ringmap *m, __u32 j)
{
	return &m->slots[LB_RING_BUCKET_SLOT(j)].entry;
}

static __u32 *run_word(const struct ringmap *m, __u32 j)
{
	return &m->slots[LB_RING_RUNS_SLOT(m->bits, j)].runs[j & 1];
}

static __u64 *run_at(const struct ringmap *m, __u32 run)
{
	return &m->slots[LB_RING_RUN_SLOT(m->bits, LB_RING_RUN_START(run))].entry;
}

static __u32 bucket_of(const struct ringmap *m, __u64 position)
{
	return (__u32)(position >> (64 - m->bits));
}

static __u64 entry_of(const struct ringmap *m, __u64 position, __u32 backend_id)
{
	return LB_RING_ENTRY(position, m->bits, (__u64)backend_id);
}

static __u32 backend_of(__u64 entry)
{
	return (__u32)(entry & LB_RING_ENTRY_BACKEND_MASK);
}

/* Points bucket j holds. */
static __u32 held(const struct ringmap *m, __u32 j)
{
	return LB_RING_RUN_COUNT(*run_word(m, j));
}

/* A run word of two or more points whose slots lie inside the run area, or -EBADMSG. */
static int run_valid(const struct ringmap *m, __u32 run)
{
	__u32 count = LB_RING_RUN_COUNT(run);

	if (count < 2 || (size_t)LB_RING_RUN_START(run) + count > run_capacity(m))
		return -EBADMSG;
	return 0;
}

/* The word of a bucket holding @count points: a run word from 2, else just the count. */
static __u32 word_of(__u32 start, __u32 count)
{
	return count < 2 ? count : LB_RING_RUN(start, count);
}

int ringmap_render(struct ringmap *m, const struct ring *ring, const __u32 *backend_of_member,
		   __u64 fingerprint)
{
	const struct ring_point *points;
	const struct ring_bucket *index;
	size_t count, i = 0, capacity, used = 0, k;
	unsigned int shift, index_bits, coarser;
	union lb_ring_slot *slots;
	__u32 j, nb;
	int err;

	err = image_check(m);
	if (err)
		return err;
	points = ring_points(ring, &count);
	if (!points || count == 0 || count > LB_RING_POINTS_MAX)
		return -EINVAL;
	/* An id wider than an entry's backend bits would spill into its position. */
	for (k = 0; k < ring_member_count(ring); k++)
		if (backend_of_member[k] > LB_RING_ENTRY_BACKEND_MASK)
			return -EINVAL;
	/* Locals, not m->: the stores below could alias them for the compiler. */
	nb = buckets_of(m);
	shift = 64 - m->bits;
	slots = m->slots;
	capacity = run_capacity(m);
	index = ring_index(ring, &index_bits);
	coarser = index_bits >= m->bits ? index_bits - m->bits : 0;
	for (j = 0; j < nb; j++) {
		__u64 *run = &slots[LB_RING_RUN_SLOT(m->bits, used)].entry;
		size_t from, first, n;
		__u32 backend;

		/*
		 * The library's own index, at least as fine as the image's (it
		 * is for every ring past LB_RING_BITS_MIN's size), gives each
		 * bucket's points: no branch per point, which halves the render.
		 */
		if (index_bits >= m->bits) {
			from = index[(size_t)j << coarser].first;
			i = index[(size_t)(j + 1) << coarser].first;
		} else {
			from = i;
			while (i < count && (__u32)(points[i].position >> shift) == j)
				i++;
		}
		n = i - from;
		first = from < count ? from : 0;
		backend = backend_of_member[points[first].member];
		if (n > LB_RING_RUN_COUNT_MAX)
			return -E2BIG;
		if (n >= 2 && used + n > capacity)
			return -ENOSPC;
		slots[LB_RING_RUNS_SLOT(m->bits, j)].runs[j & 1] = word_of((__u32)used, (__u32)n);
		if (n == 0) {
			slots[LB_RING_BUCKET_SLOT(j)].entry = LB_RING_ENTRY_EMPTY | backend;
			continue;
		}
		slots[LB_RING_BUCKET_SLOT(j)].entry =
			entry_of(m, points[first].position, backend) | (n >= 2 ? LB_RING_ENTRY_MORE : 0);
		if (n < 2)
			continue;
		for (k = from; k < i; k++)
			run[k - from] = entry_of(m, points[k].position,
						 backend_of_member[points[k].member]);
		used += n;
	}
	*entry_at(m, nb) = LB_RING_ENTRY_EMPTY | backend_of_member[points[0].member];
	m->slots[LB_RING_FINGERPRINT_SLOT].fingerprint = fingerprint;
	counts_of(m)->points = (__u32)count;
	counts_of(m)->runs_used = (__u32)used;
	return 0;
}

/* --- changes ------------------------------------------------------------------ */

/*
 * Bucket j's first point now has @backend_id: so has the entry of every
 * empty bucket just before it, going back round the circle.
 */
static void first_spread(const struct ringmap *m, __u32 j, __u32 backend_id)
{
	__u32 mask = buckets_of(m) - 1, k = (j - 1) & mask;

	while (k != j && held(m, k) == 0) {
		*entry_at(m, k) = LB_RING_ENTRY_EMPTY | backend_id;
		k = (k - 1) & mask;
	}
}

static int run_alloc(const struct ringmap *m, __u32 count, __u32 *run)
{
	struct lb_ring_counts *c = counts_of(m);

	if (count > LB_RING_RUN_COUNT_MAX)
		return -E2BIG;
	if ((size_t)c->runs_used + count > run_capacity(m))
		return -ENOSPC;
	*run = LB_RING_RUN(c->runs_used, count);
	c->runs_used += count;
	return 0;
}

/* Index of the first entry of @run at or after @entry's position (same bucket). */
static __u32 run_lower_bound(const __u64 *run, __u32 count, __u64 entry)
{
	__u64 key = entry & ~(LB_RING_ENTRY_BACKEND_MASK | LB_RING_ENTRY_MORE);
	__u32 lo = 0, hi = count;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (run[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Do two entries of one bucket stand for the same position? */
static int same_position(__u64 a, __u64 b)
{
	return (a ^ b) >> LB_RING_BITS_MIN == 0;
}

/* Bucket j's first point is now @entry (a run's first when it holds more). */
static void first_set(const struct ringmap *m, __u32 j, __u64 entry, int more)
{
	entry &= ~LB_RING_ENTRY_MORE;
	*entry_at(m, j) = entry | (more ? LB_RING_ENTRY_MORE : 0);
	first_spread(m, j, backend_of(entry));
}

static int point_add(const struct ringmap *m, __u64 position, __u32 backend_id)
{
	__u32 j = bucket_of(m, position), n = held(m, j), run, at;
	__u64 entry = entry_of(m, position, backend_id), *from, *to;
	int err;

	if (n == 0) {
		*run_word(m, j) = word_of(0, 1);
		first_set(m, j, entry, 0);
		return 0;
	}
	if (n == 1) {
		__u64 own = *entry_at(m, j) & ~LB_RING_ENTRY_MORE;

		if (same_position(own, entry))
			return -EEXIST;
		err = run_alloc(m, 2, &run);
		if (err)
			return err;
		to = run_at(m, run);
		at = entry < own ? 0 : 1;
		to[at] = entry;
		to[1 - at] = own;
	} else {
		if (run_valid(m, *run_word(m, j)))
			return -EINVAL;
		from = run_at(m, *run_word(m, j));
		at = run_lower_bound(from, n, entry);
		if (at < n && same_position(from[at], entry))
			return -EEXIST;
		err = run_alloc(m, n + 1, &run);
		if (err)
			return err;
		to = run_at(m, run);
		memcpy(to, from, at * sizeof(*to));
		to[at] = entry;
		memcpy(to + at + 1, from + at, (n - at) * sizeof(*to));
	}
	*run_word(m, j) = run;
	if (at == 0)
		first_set(m, j, entry, 1);
	else
		*entry_at(m, j) |= LB_RING_ENTRY_MORE;
	return 0;
}

static int point_remove(const struct ringmap *m, __u64 position, __u32 backend_id)
{
	__u32 j = bucket_of(m, position), n = held(m, j), mask = buckets_of(m) - 1, at;
	__u64 entry = entry_of(m, position, backend_id), *run;

	if (n == 0)
		return -ENOENT;
	if (n == 1) {
		if ((*entry_at(m, j) & ~LB_RING_ENTRY_MORE) != entry)
			return -ENOENT;
		/* The bucket's first is now the next bucket's. */
		*run_word(m, j) = 0;
		*entry_at(m, j) = LB_RING_ENTRY_EMPTY | backend_of(*entry_at(m, (j + 1) & mask));
		first_spread(m, j, backend_of(*entry_at(m, j)));
		return 0;
	}
	if (run_valid(m, *run_word(m, j)))
		return -EINVAL;
	run = run_at(m, *run_word(m, j));
	at = run_lower_bound(run, n, entry);
	/* The library can put two points at one position (ties go by name). */
	while (at < n && same_position(run[at], entry) && run[at] != entry)
		at++;
	if (at == n || run[at] != entry)
		return -ENOENT;
	if (n == 2) {
		/* One point left: it stays in the entry alone; the run is abandoned. */
		*run_word(m, j) = word_of(0, 1);
		if (at == 0)
			first_set(m, j, run[1], 0);
		else
			*entry_at(m, j) &= ~LB_RING_ENTRY_MORE;
		return 0;
	}
	/* Private to this image until it is swapped in: shrink in place. */
	memmove(run + at, run + at + 1, (n - 1 - at) * sizeof(*run));
	run[n - 1] = 0;
	*run_word(m, j) = LB_RING_RUN(LB_RING_RUN_START(*run_word(m, j)), n - 1);
	if (at == 0)
		first_set(m, j, run[0], 1);
	return 0;
}

int ringmap_apply(struct ringmap *m, const struct ringmap_edit *edits, size_t count,
		  __u64 fingerprint)
{
	struct lb_ring_counts *c;
	size_t points, i;
	int err = 0;

	if (image_check(m))
		return -EINVAL;
	c = counts_of(m);
	points = c->points;
	if (points == 0 || points == LB_RING_POINTS_WRITING || c->runs_used > run_capacity(m))
		return -EINVAL;
	c->points = LB_RING_POINTS_WRITING;
	for (i = 0; i < count && !err; i++) {
		if (edits[i].backend_id > LB_RING_ENTRY_BACKEND_MASK)
			err = -EINVAL;
		else if (edits[i].add) {
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
	*entry_at(m, buckets_of(m)) = LB_RING_ENTRY_EMPTY | backend_of(*entry_at(m, 0));
	m->slots[LB_RING_FINGERPRINT_SLOT].fingerprint = fingerprint;
	c->points = (__u32)points;
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
	const struct lb_ring_counts *c;
	size_t count, i = 0;
	__u32 j, buckets;

	if (image_check(m))
		return -EBADMSG;
	points = ring_points(ring, &count);
	c = counts_of(m);
	if (!points || count == 0 || m->slots[LB_RING_FINGERPRINT_SLOT].fingerprint != fingerprint ||
	    c->points != count || c->runs_used > run_capacity(m))
		return -EBADMSG;
	buckets = buckets_of(m);
	for (j = 0; j < buckets; j++) {
		__u64 entry = *entry_at(m, j), want;
		size_t from = i, first, k;
		__u32 n = held(m, j);

		while (i < count && bucket_of(m, points[i].position) == j)
			i++;
		first = from < count ? from : 0;
		if (n != i - from)
			return -EBADMSG;
		want = n ? entry_of(m, points[first].position, backend_of_member[points[first].member]) |
				   (n >= 2 ? LB_RING_ENTRY_MORE : 0) :
			   LB_RING_ENTRY_EMPTY | backend_of_member[points[first].member];
		if (entry != want)
			return -EBADMSG;
		if (n < 2)
			continue;
		if (run_valid(m, *run_word(m, j)))
			return -EBADMSG;
		for (k = from; k < i; k++)
			if (run_at(m, *run_word(m, j))[k - from] !=
			    entry_of(m, points[k].position, backend_of_member[points[k].member]))
				return -EBADMSG;
	}
	if (*entry_at(m, buckets) != (LB_RING_ENTRY_EMPTY | backend_of_member[points[0].member]))
		return -EBADMSG;
	return 0;
}

int ringmap_digest(const struct ringmap *m, __u64 *digest)
{
	const struct lb_ring_counts *c;
	struct siphash_state st;
	__u32 j, k, buckets;

	if (image_check(m))
		return -EBADMSG;
	c = counts_of(m);
	if (c->points == 0 || c->points == LB_RING_POINTS_WRITING)
		return -EBADMSG;
	buckets = buckets_of(m);
	siphash_init(&st, DIGEST_KEY0, DIGEST_KEY1);
	siphash_compress(&st, m->slots[LB_RING_FINGERPRINT_SLOT].fingerprint, 2);
	siphash_compress(&st, (__u64)c->points << 8 | m->bits, 2);
	for (j = 0; j <= buckets; j++) {
		__u32 n = j < buckets ? held(m, j) : 0;

		siphash_compress(&st, *entry_at(m, j), 2);
		siphash_compress(&st, n, 2);
		if (n < 2)
			continue;
		if (run_valid(m, *run_word(m, j)))
			return -EBADMSG;
		for (k = 0; k < n; k++)
			siphash_compress(&st, run_at(m, *run_word(m, j))[k], 2);
	}
	*digest = siphash_finish(&st, (__u64)buckets << 32, 2, 4);
	return 0;
}
