// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Building and changing rings: point positions, the sorted point array and
 * its bucket index, adding, removing and reweighing members, and the
 * accessors. Every change builds its new arrays completely before it
 * replaces the old ones, so a failure (bad input, no memory) leaves the ring
 * untouched.
 */
#include "ring_impl.h"

#include <errno.h>

/* A member name absorbed once; each replica then costs only its own bytes. */
static void name_hasher(struct byte_hasher *h, const char *name)
{
	hasher_init(h, POINT_KEY0, POINT_KEY1);
	hasher_update(h, name, strlen(name));
}

static uint64_t replica_position(const struct byte_hasher *name, uint32_t replica)
{
	struct byte_hasher h = *name;
	unsigned char le[4];

	store_le32(le, replica);
	hasher_update(&h, le, sizeof(le));
	return hasher_final(&h);
}

uint64_t ring_siphash(const void *data, size_t len, uint64_t k0, uint64_t k1)
{
	struct byte_hasher h;

	hasher_init(&h, k0, k1);
	hasher_update(&h, data, len);
	return hasher_final(&h);
}

uint64_t ring_point_position(const char *name, uint32_t replica)
{
	struct byte_hasher h;

	name_hasher(&h, name);
	return replica_position(&h, replica);
}

int ring__name_check(const char *name)
{
	size_t len;

	if (!name || !name[0])
		return -EINVAL;
	/* Counted by hand: stops at RING_NAME_MAX + 1 without assuming a buffer size. */
	for (len = 0; len <= RING_NAME_MAX && name[len]; len++)
		;
	if (len > RING_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Binary search by name: 0 and the index when found, else -ENOENT and the
 * index where it would be inserted. */
int ring__member_search(const struct ring *r, const char *name, size_t *at)
{
	size_t lo = 0, hi = r->member_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(r->members[mid].name, name);

		if (cmp == 0) {
			*at = mid;
			return 0;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return -ENOENT;
}

static int point_cmp(const struct ring_point *a, const struct ring_point *b)
{
	if (a->position != b->position)
		return a->position < b->position ? -1 : 1;
	if (a->member != b->member)
		return a->member < b->member ? -1 : 1;
	if (a->replica != b->replica)
		return a->replica < b->replica ? -1 : 1;
	return 0;
}

/* Groups longer than this are sorted with qsort(), not by insertion. */
#define SORT_INSERTION_MAX 64

static int point_cmp_void(const void *a, const void *b)
{
	return point_cmp(a, b);
}

/*
 * Sort points by (position, member, replica). Positions are uniform, so one
 * stable counting pass on the top bits (about one point per group) leaves
 * only tiny groups to order, which insertion sort does in place. The sorted
 * array (with room for count + 1 points) replaces *@sorted, which is freed.
 */
static int points_sort(struct ring_point **sorted, size_t count)
{
	struct ring_point *points = *sorted, *tmp = NULL;
	uint32_t *starts = NULL;
	unsigned int bits = 1;
	size_t groups, i, g;
	int err = 0;

	if (count < 2)
		return 0;
	while (bits < 20 && ((size_t)1 << bits) < count)
		bits++;
	groups = (size_t)1 << bits;
	/* Room for the search sentinel too: the sorted copy replaces @points. */
	tmp = malloc((count + 1) * sizeof(*tmp));
	starts = calloc(groups + 1, sizeof(*starts));
	if (!tmp || !starts) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < count; i++)
		starts[(points[i].position >> (64 - bits)) + 1]++;
	for (g = 0; g < groups; g++)
		starts[g + 1] += starts[g];
	for (i = 0; i < count; i++)
		tmp[starts[points[i].position >> (64 - bits)]++] = points[i];
	/* starts[g] is now the end of group g, the start of group g + 1. */
	for (g = 0, i = 0; g < groups; i = starts[g++]) {
		size_t end = starts[g], j;

		if (end - i > SORT_INSERTION_MAX) {
			qsort(tmp + i, end - i, sizeof(*tmp), point_cmp_void);
			continue;
		}
		for (j = i + 1; j < end; j++) {
			struct ring_point p = tmp[j];
			size_t k = j;

			while (k > i && point_cmp(&tmp[k - 1], &p) > 0) {
				tmp[k] = tmp[k - 1];
				k--;
			}
			tmp[k] = p;
		}
	}
	/* The scatter wrote a whole sorted copy: keep it instead of copying back. */
	*sorted = tmp;
	tmp = points;
out:
	free(starts);
	free(tmp);
	return err;
}

/* Points [from, to) of one member, sorted. */
static int points_generate(const char *name, uint32_t member, uint32_t from, uint32_t to,
			   struct ring_point **out)
{
	struct ring_point *points;
	uint32_t i;
	int err;

	*out = NULL;
	if (to <= from)
		return 0;
	struct byte_hasher h;

	points = malloc((size_t)(to - from) * sizeof(*points));
	if (!points)
		return -ENOMEM;
	name_hasher(&h, name);
	for (i = from; i < to; i++) {
		points[i - from].position = replica_position(&h, i);
		points[i - from].member = member;
		points[i - from].replica = i;
	}
	err = points_sort(&points, to - from);
	if (err) {
		free(points);
		return err;
	}
	*out = points;
	return 0;
}

/* Merge two sorted point arrays into a new one. */
static struct ring_point *points_merge(const struct ring_point *a, size_t na,
				       const struct ring_point *b, size_t nb)
{
	struct ring_point *out;
	size_t i = 0, j = 0, k = 0;

	out = malloc((na + nb + 1) * sizeof(*out)); /* + the search sentinel */
	if (!out)
		return NULL;
	while (i < na && j < nb)
		out[k++] = point_cmp(&a[i], &b[j]) <= 0 ? a[i++] : b[j++];
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
	return out;
}

static unsigned int ceil_log2(uint64_t x)
{
	unsigned int bits = 0;

	while (bits < 64 && ((uint64_t)1 << bits) < x)
		bits++;
	return bits;
}

/*
 * The bucket index: RING_INDEX_BUCKETS_PER_POINT buckets per point, rounded up
 * to a power of two and capped at 2^RING_INDEX_BITS_MAX, so most buckets hold
 * no point at all and a lookup that lands in one needs no point read. Each
 * bucket also names the owner of its first point (the next point clockwise,
 * wrapping), which is the answer for every key in an empty bucket.
 */
static int index_build(const struct ring_point *points, size_t count,
		       struct ring_bucket **out_index, unsigned int *out_bits,
		       unsigned int *out_steps)
{
	struct ring_bucket *index;
	unsigned int bits, steps;
	size_t buckets, p, i;
	uint32_t largest = 0;

	*out_index = NULL;
	*out_bits = 0;
	*out_steps = 0;
	if (count == 0)
		return 0;
	bits = ceil_log2((uint64_t)count * RING_INDEX_BUCKETS_PER_POINT);
	if (bits > RING_INDEX_BITS_MAX)
		bits = RING_INDEX_BITS_MAX;
	buckets = (size_t)1 << bits;
	index = calloc(buckets + 1, sizeof(*index));
	if (!index)
		return -ENOMEM;
	/*
	 * Count each bucket's points, then sum: bucket p starts where the
	 * points of the buckets before it end. One pass over the points and
	 * one over the buckets, with no branch per point (stepping over the
	 * points bucket by bucket mispredicted one branch per point).
	 */
	for (i = 0; i < count; i++)
		index[bits ? (points[i].position >> (64 - bits)) + 1 : 1].first++;
	for (p = 1; p <= buckets; p++) {
		if (index[p].first > largest)
			largest = index[p].first;
		index[p].first += index[p - 1].first;
	}
	for (p = 0; p <= buckets; p++) {
		size_t first = p == buckets ? count : index[p].first;

		index[p].first = (uint32_t)first;
		index[p].owner = points[first < count ? first : 0].member;
		index[p].position = first < count ? points[first].position : UINT64_MAX;
	}
	steps = ceil_log2((uint64_t)largest + 1);
	*out_index = index;
	*out_bits = bits;
	*out_steps = steps;
	return 0;
}

/* Replace the ring's contents with new arrays (which it takes ownership of). */
static void ring_install(struct ring *r, struct member_rec *members, size_t member_count,
			 struct ring_point *points, size_t point_count, struct ring_bucket *index,
			 unsigned int bits, unsigned int steps)
{
	if (r->members != members)
		free(r->members);
	if (r->points != points)
		free(r->points);
	free(r->index);
	/*
	 * One point past the end, above every key: a lookup whose bucket is
	 * empty may probe it without a branch and never moves past it.
	 */
	points[point_count].position = UINT64_MAX;
	points[point_count].member = UINT32_MAX;
	points[point_count].replica = UINT32_MAX;
	r->members = members;
	r->member_count = member_count;
	r->points = points;
	r->point_count = point_count;
	r->index = index;
	r->index_bits = bits;
	r->search_steps = steps;
}

int ring_new(struct ring **out, uint32_t vnodes)
{
	struct ring *r;

	*out = NULL;
	if (vnodes < RING_VNODES_MIN || vnodes > RING_VNODES_MAX)
		return -EDOM;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->vnodes = vnodes;
	*out = r;
	return 0;
}

void ring_free(struct ring *r)
{
	if (!r)
		return;
	free(r->members);
	free(r->points);
	free(r->index);
	free(r);
}

static int member_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct member_rec *)a)->name,
		      ((const struct member_rec *)b)->name);
}

/*
 * Build a ring's arrays from validated, sorted, unique members in one pass:
 * generate every point in (member, replica) order, then one stable sort.
 */
int ring__fill(struct ring *r, struct member_rec *members, size_t member_count,
		     uint64_t point_count)
{
	struct ring_point *points = NULL;
	struct ring_bucket *index = NULL;
	unsigned int bits, steps;
	size_t m, k = 0;
	int err;

	points = malloc((point_count + 1) * sizeof(*points)); /* + the search sentinel */
	if (!points)
		return -ENOMEM;
	for (m = 0; m < member_count; m++) {
		uint32_t i, n = members[m].weight * r->vnodes;
		struct byte_hasher h;

		name_hasher(&h, members[m].name);
		for (i = 0; i < n; i++) {
			points[k].position = replica_position(&h, i);
			points[k].member = (uint32_t)m;
			points[k].replica = i;
			k++;
		}
	}
	err = points_sort(&points, point_count);
	if (!err)
		err = index_build(points, point_count, &index, &bits, &steps);
	if (err) {
		free(points);
		return err;
	}
	ring_install(r, members, member_count, points, point_count, index, bits, steps);
	return 0;
}

/*
 * Validated, name-sorted copies of @members and their point count: what
 * ring_build() and ring_summary() both start from.
 */
static int members_prepare(uint32_t vnodes, const struct ring_member *members, size_t count,
			   struct member_rec **out, uint64_t *points)
{
	struct member_rec *recs;
	size_t i;
	int err = 0;

	*out = NULL;
	*points = 0;
	if (vnodes < RING_VNODES_MIN || vnodes > RING_VNODES_MAX)
		return -EDOM;
	if (count > RING_MEMBERS_MAX)
		return -E2BIG;
	recs = calloc(count ? count : 1, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (i = 0; i < count && !err; i++) {
		err = ring__name_check(members[i].name);
		if (!err && members[i].weight > RING_WEIGHT_MAX)
			err = -ERANGE;
		if (err)
			break;
		strcpy(recs[i].name, members[i].name);
		recs[i].weight = members[i].weight;
		*points += (uint64_t)members[i].weight * vnodes;
	}
	if (!err) {
		qsort(recs, count, sizeof(*recs), member_name_cmp);
		for (i = 1; i < count && !err; i++)
			if (strcmp(recs[i - 1].name, recs[i].name) == 0)
				err = -EEXIST;
	}
	if (!err && *points > RING_POINTS_MAX)
		err = -E2BIG;
	if (err) {
		free(recs);
		return err;
	}
	*out = recs;
	return 0;
}

int ring_build(struct ring **out, uint32_t vnodes, const struct ring_member *members,
	       size_t count)
{
	struct member_rec *recs = NULL;
	struct ring *r = NULL;
	uint64_t points = 0;
	int err;

	*out = NULL;
	err = members_prepare(vnodes, members, count, &recs, &points);
	if (!err)
		err = ring_new(&r, vnodes);
	if (!err)
		err = ring__fill(r, recs, count, points);
	if (err) {
		free(recs);
		ring_free(r);
		return err;
	}
	*out = r;
	return 0;
}

int ring_summary(uint32_t vnodes, const struct ring_member *members, size_t count,
		 size_t *points, uint64_t *fingerprint)
{
	struct member_rec *recs;
	uint64_t total;
	int err;

	err = members_prepare(vnodes, members, count, &recs, &total);
	if (err)
		return err;
	*points = (size_t)total;
	*fingerprint = ring__fingerprint_of(vnodes, recs, count);
	free(recs);
	return 0;
}

int ring_clone(struct ring **out, const struct ring *r)
{
	struct ring *c;
	size_t index_len = r->index ? ((size_t)1 << r->index_bits) + 1 : 0;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = *r;
	c->members = malloc((r->member_count ? r->member_count : 1) * sizeof(*c->members));
	c->points = malloc((r->point_count + 1) * sizeof(*c->points));
	c->index = index_len ? malloc(index_len * sizeof(*c->index)) : NULL;
	if (!c->members || !c->points || (index_len && !c->index)) {
		ring_free(c);
		return -ENOMEM;
	}
	copy_bytes(c->members, r->members, r->member_count * sizeof(*c->members));
	copy_bytes(c->points, r->points, r->point_count * sizeof(*c->points));
	if (index_len)
		memcpy(c->index, r->index, index_len * sizeof(*c->index));
	*out = c;
	return 0;
}

int ring_add(struct ring *r, const char *name, uint32_t weight)
{
	struct ring_point *fresh = NULL, *merged = NULL;
	struct member_rec *members = NULL;
	struct ring_bucket *index = NULL;
	unsigned int bits, steps;
	uint64_t new_points = (uint64_t)weight * r->vnodes;
	size_t at, i = 0, j = 0, k = 0;
	int err;

	err = ring__name_check(name);
	if (err)
		return err;
	if (weight > RING_WEIGHT_MAX)
		return -ERANGE;
	if (ring__member_search(r, name, &at) == 0)
		return -EEXIST;
	if (r->member_count >= RING_MEMBERS_MAX || r->point_count + new_points > RING_POINTS_MAX)
		return -E2BIG;

	members = malloc((r->member_count + 1) * sizeof(*members));
	merged = malloc((r->point_count + new_points + 1) * sizeof(*merged));
	if (!members || !merged) {
		err = -ENOMEM;
		goto out;
	}
	copy_bytes(members, r->members, at * sizeof(*members));
	memset(&members[at], 0, sizeof(members[at]));
	strcpy(members[at].name, name);
	members[at].weight = weight;
	copy_bytes(members + at + 1, r->members + at, (r->member_count - at) * sizeof(*members));

	err = points_generate(name, (uint32_t)at, 0, (uint32_t)new_points, &fresh);
	if (err)
		goto out;
	/* One pass: members after the new one move up by one as they merge. */
	while (i < r->point_count || j < new_points) {
		struct ring_point p;

		if (i < r->point_count) {
			p = r->points[i];
			if (p.member >= at)
				p.member++;
			if (j == new_points || point_cmp(&p, &fresh[j]) <= 0) {
				merged[k++] = p;
				i++;
				continue;
			}
		}
		merged[k++] = fresh[j++];
	}
	err = index_build(merged, k, &index, &bits, &steps);
	if (err)
		goto out;
	ring_install(r, members, r->member_count + 1, merged, k, index, bits, steps);
	members = NULL;
	merged = NULL;
out:
	free(members);
	free(merged);
	free(fresh);
	return err;
}

/*
 * Keep the points for which keep() is true, renumbering members above
 * @removed (a member index, or SIZE_MAX when no member goes away).
 */
static int points_filter(const struct ring *r, size_t removed, uint32_t member,
			 uint32_t replica_limit, struct ring_point **out, size_t *out_count)
{
	struct ring_point *points;
	size_t i, k = 0;

	points = malloc((r->point_count + 1) * sizeof(*points)); /* + the search sentinel */
	if (!points)
		return -ENOMEM;
	for (i = 0; i < r->point_count; i++) {
		struct ring_point p = r->points[i];

		if (p.member == member && p.replica >= replica_limit)
			continue;
		if (removed != SIZE_MAX && p.member > removed)
			p.member--;
		points[k++] = p;
	}
	*out = points;
	*out_count = k;
	return 0;
}

int ring_remove(struct ring *r, const char *name)
{
	struct member_rec *members = NULL;
	struct ring_point *points = NULL;
	struct ring_bucket *index = NULL;
	unsigned int bits, steps;
	size_t at, count;
	int err;

	err = ring__name_check(name);
	if (err)
		return err;
	if (ring__member_search(r, name, &at))
		return -ENOENT;
	members = malloc((r->member_count > 1 ? r->member_count - 1 : 1) * sizeof(*members));
	if (!members)
		return -ENOMEM;
	copy_bytes(members, r->members, at * sizeof(*members));
	copy_bytes(members + at, r->members + at + 1,
	       (r->member_count - at - 1) * sizeof(*members));
	/* Replica limit 0: every point of the member goes, not just one. */
	err = points_filter(r, at, (uint32_t)at, 0, &points, &count);
	if (err)
		goto out;
	err = index_build(points, count, &index, &bits, &steps);
	if (err)
		goto out;
	ring_install(r, members, r->member_count - 1, points, count, index, bits, steps);
	return 0;
out:
	free(members);
	free(points);
	return err;
}

int ring_set_weight(struct ring *r, const char *name, uint32_t weight)
{
	struct ring_point *points = NULL, *fresh = NULL;
	struct ring_bucket *index = NULL;
	unsigned int bits, steps;
	uint32_t old_points, new_points;
	size_t at, count;
	int err;

	err = ring__name_check(name);
	if (err)
		return err;
	if (ring__member_search(r, name, &at))
		return -ENOENT;
	if (weight > RING_WEIGHT_MAX)
		return -ERANGE;
	old_points = r->members[at].weight * r->vnodes;
	if ((uint64_t)weight * r->vnodes > old_points &&
	    r->point_count - old_points + (uint64_t)weight * r->vnodes > RING_POINTS_MAX)
		return -E2BIG;
	new_points = weight * r->vnodes;

	if (new_points >= old_points) {
		err = points_generate(name, (uint32_t)at, old_points, new_points, &fresh);
		if (err)
			goto out;
		count = r->point_count + (new_points - old_points);
		points = points_merge(r->points, r->point_count, fresh, new_points - old_points);
		if (!points) {
			err = -ENOMEM;
			goto out;
		}
	} else {
		err = points_filter(r, SIZE_MAX, (uint32_t)at, new_points, &points, &count);
		if (err)
			goto out;
	}
	err = index_build(points, count, &index, &bits, &steps);
	if (err)
		goto out;
	r->members[at].weight = weight;
	ring_install(r, r->members, r->member_count, points, count, index, bits, steps);
	points = NULL;
out:
	free(points);
	free(fresh);
	return err;
}

const struct ring_point *ring_points(const struct ring *r, size_t *count)
{
	*count = r->point_count;
	return r->point_count ? r->points : NULL;
}

const struct ring_bucket *ring_index(const struct ring *r, unsigned int *bits)
{
	*bits = r->index_bits;
	return r->index;
}

unsigned int ring_search_steps(const struct ring *r)
{
	return r->search_steps;
}

uint32_t ring_vnodes(const struct ring *r)
{
	return r->vnodes;
}

size_t ring_member_count(const struct ring *r)
{
	return r->member_count;
}

const char *ring_member_name(const struct ring *r, uint32_t member)
{
	return member < r->member_count ? r->members[member].name : NULL;
}

uint32_t ring_member_weight(const struct ring *r, uint32_t member)
{
	return member < r->member_count ? r->members[member].weight : 0;
}

int ring_member_find(const struct ring *r, const char *name, uint32_t *member)
{
	size_t at;
	int err;

	err = ring__name_check(name);
	if (err)
		return err;
	err = ring__member_search(r, name, &at);
	if (err)
		return err;
	*member = (uint32_t)at;
	return 0;
}

const char *ring_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EINVAL:
		return "empty member name";
	case -ENAMETOOLONG:
		return "member name longer than 63 bytes";
	case -EEXIST:
		return "duplicate member name";
	case -ENOENT:
		return "no such member";
	case -ERANGE:
		return "weight out of range (0..10000)";
	case -EDOM:
		return "virtual nodes per weight out of range (1..1048576)";
	case -E2BIG:
		return "ring over its limit (1048576 points, 65536 members)";
	case -ENOMEM:
		return "out of memory";
	case -ENODATA:
		return "serialized ring is truncated";
	case -EILSEQ:
		return "not a serialized ring (bad magic)";
	case -EPROTONOSUPPORT:
		return "unsupported serialized ring version";
	case -EBADMSG:
		return "serialized ring is corrupted (checksum, digest or layout mismatch)";
	default:
		return "unknown ring error";
	}
}
