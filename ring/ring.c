// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The ring library: building, changing, searching, comparing and
 * serializing weighted virtual-node consistent-hash rings. See ring.h for the
 * model. Every change builds its new arrays completely before it replaces the
 * old ones, so a failure (bad input, no memory) leaves the ring untouched.
 */
#include "ring.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "siphash.h"

/*
 * Public key of the point-position hash. Positions must be the same on every
 * host, so this is a constant of the format, not a secret: flows are keyed
 * with the deployment's secret, which is what keeps them from being steered.
 */
#define POINT_KEY0 0x676e69722d626c72ULL /* "rlb-ring" */
#define POINT_KEY1 0x31762d746e696f70ULL /* "point-v1" */

/* Key of the serialization checksum and points digest. */
#define FORMAT_KEY0 0x69726f74732d626cULL
#define FORMAT_KEY1 0x31762d746d726f66ULL

/* Serialized layout, little-endian:
 *   0  magic "ringlbR\0"     8
 *   8  format version        u32 (RING_FORMAT_VERSION)
 *  12  total length          u32, checksum included
 *  16  vnodes (K)            u32
 *  20  member count          u32
 *  24  point count           u32
 *  28  reserved, zero        u32
 *  32  points digest         u64: SipHash-2-4 of the points, 16 bytes each
 *  40  members, in name order: u8 name length, name bytes, u32 weight
 *  end-8 checksum            u64: SipHash-2-4 of every byte before it
 */
#define RING_FORMAT_MAGIC "ringlbR"
#define RING_FORMAT_MAGIC_LEN 8
#define RING_FORMAT_VERSION 1u
#define RING_FORMAT_HEADER_LEN 40u
#define RING_FORMAT_CHECKSUM_LEN 8u
#define RING_FORMAT_MEMBER_FIXED_LEN 5u /* length byte + u32 weight */

struct member_rec {
	char name[RING_NAME_MAX + 1];
	uint32_t weight;
};

struct ring {
	uint32_t vnodes;
	size_t member_count;
	struct member_rec *members; /* sorted by name */
	size_t point_count;
	struct ring_point *points; /* sorted by (position, member, replica) */
	unsigned int index_bits;
	struct ring_bucket *index; /* 2^index_bits + 1 entries, NULL when empty */
	unsigned int search_steps;
};

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t load_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void store_le64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void store_le32(unsigned char *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Streaming SipHash over bytes, for names and serialized data. */
struct byte_hasher {
	struct siphash_state s;
	unsigned char tail[8];
	size_t tail_len;
	uint64_t total;
};

static void hasher_init(struct byte_hasher *h, uint64_t k0, uint64_t k1)
{
	siphash_init(&h->s, k0, k1);
	h->tail_len = 0;
	h->total = 0;
}

static void hasher_update(struct byte_hasher *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->total += len;
	while (len > 0) {
		size_t take = 8 - h->tail_len;

		if (take > len)
			take = len;
		memcpy(h->tail + h->tail_len, p, take);
		h->tail_len += take;
		p += take;
		len -= take;
		if (h->tail_len == 8) {
			siphash_compress(&h->s, load_le64(h->tail), 2);
			h->tail_len = 0;
		}
	}
}

static uint64_t hasher_final(struct byte_hasher *h)
{
	uint64_t last = (h->total & 0xff) << 56;
	size_t i;

	for (i = 0; i < h->tail_len; i++)
		last |= (uint64_t)h->tail[i] << (8 * i);
	return siphash_finish(&h->s, last, 2, 4);
}

/* memcpy() that accepts the NULL arrays of an empty ring when n is 0. */
static void copy_bytes(void *dst, const void *src, size_t n)
{
	if (n)
		memcpy(dst, src, n);
}

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

static int name_check(const char *name)
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
static int member_search(const struct ring *r, const char *name, size_t *at)
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
static int ring_fill(struct ring *r, struct member_rec *members, size_t member_count,
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
		err = name_check(members[i].name);
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

static uint64_t fingerprint_of(uint32_t vnodes, const struct member_rec *members, size_t count);

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
		err = ring_fill(r, recs, count, points);
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
	*fingerprint = fingerprint_of(vnodes, recs, count);
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

	err = name_check(name);
	if (err)
		return err;
	if (weight > RING_WEIGHT_MAX)
		return -ERANGE;
	if (member_search(r, name, &at) == 0)
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

	err = name_check(name);
	if (err)
		return err;
	if (member_search(r, name, &at))
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

	err = name_check(name);
	if (err)
		return err;
	if (member_search(r, name, &at))
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

	err = name_check(name);
	if (err)
		return err;
	err = member_search(r, name, &at);
	if (err)
		return err;
	*member = (uint32_t)at;
	return 0;
}

/*
 * The search the XDP program runs too. Find the key's bucket. A bucket with
 * at most one point (nine lookups in ten at two buckets per point) answers
 * from the index alone: the key belongs to the bucket's first point if it is
 * at or below that point's position, else to the next bucket's first point.
 *
 * A fuller bucket takes the ring's fixed number of power-of-two strides over
 * its points [first, end): a stride of 2^k moves past 2^k points that are all
 * below the key. A probe past the bucket is clamped to its last point, which
 * keeps every read inside the bucket and the answer exact (a clamped probe
 * only confirms what is already known). When every point of the bucket is
 * below the key, the owner is the next bucket's first point, whose owner that
 * bucket records (wrapping past the last point).
 */
/* The strides over a bucket of two or more points; kept out of line so the
 * common path stays a leaf with no registers to save. */
static __attribute__((noinline)) uint32_t bucket_search(const struct ring *r,
							 const struct ring_bucket *bucket,
							 uint64_t key, uint32_t *member)
{
	uint32_t base = bucket[0].first, end = bucket[1].first, past, i;
	unsigned int step;

	/* Ask for all of the bucket's lines at once, not one probe at a time. */
	for (i = base; i < end; i += 4)
		__builtin_prefetch(&r->points[i]);
	__builtin_prefetch(&r->points[end - 1]);
	for (step = r->search_steps; step > 0; step--) {
		uint32_t probe = base + (1u << (step - 1)) - 1;

		probe = probe < end - 1 ? probe : end - 1;
		past = -(uint32_t)(r->points[probe].position < key);
		base = (base & ~past) | ((probe + 1) & past);
	}
	past = -(uint32_t)(base == end);
	*member = (r->points[base].member & ~past) | (bucket[1].owner & past);
	return base;
}

int ring_lookup(const struct ring *r, uint64_t key, struct ring_lookup_result *result)
{
	const struct ring_bucket *bucket;
	uint32_t base, end, past;

	if (r->point_count == 0)
		return -ENOENT;
	bucket = &r->index[r->index_bits ? key >> (64 - r->index_bits) : 0];
	base = bucket[0].first;
	end = bucket[1].first;
	if (end - base <= 1) {
		/* Masks, not branches: which side of the point a key falls is a coin toss. */
		past = -(uint32_t)(key > bucket[0].position);
		result->member = (bucket[0].owner & ~past) | (bucket[1].owner & past);
		base = (base & ~past) | (end & past);
		result->steps = 1;
	} else {
		base = bucket_search(r, bucket, key, &result->member);
		result->steps = r->search_steps;
	}
	result->point = base < r->point_count ? base : 0;
	return 0;
}

/* How many keys ahead ring_lookup_many() asks for its bucket. */
#define LOOKUP_PREFETCH_DISTANCE 8

int ring_lookup_many(const struct ring *r, const uint64_t *keys, size_t count,
		     uint32_t *members)
{
	struct ring_lookup_result res;
	size_t i;

	if (r->point_count == 0)
		return -ENOENT;
	for (i = 0; i < count; i++) {
		if (i + LOOKUP_PREFETCH_DISTANCE < count) {
			uint64_t ahead = keys[i + LOOKUP_PREFETCH_DISTANCE];

			__builtin_prefetch(&r->index[r->index_bits ? ahead >> (64 - r->index_bits) : 0]);
		}
		ring_lookup(r, keys[i], &res);
		members[i] = res.member;
	}
	return 0;
}

void ring_shares(const struct ring *r, double *shares)
{
	size_t i;

	for (i = 0; i < r->member_count; i++)
		shares[i] = 0.0;
	if (r->point_count == 0)
		return;
	/* Point i owns (position[i - 1], position[i]]; point 0 owns the wrap. */
	for (i = 0; i < r->point_count; i++) {
		uint64_t prev = r->points[i ? i - 1 : r->point_count - 1].position;
		uint64_t arc = r->points[i].position - prev;

		shares[r->points[i].member] += ldexp((double)arc, -64);
	}
	/* All points on one position: the wrap arc is the whole circle. */
	if (r->points[0].position == r->points[r->point_count - 1].position)
		shares[r->points[0].member] = 1.0;
}

/* Owner (member index) of the arc ending at point i, wrapping; UINT32_MAX if none. */
static uint32_t owner_at(const struct ring *r, size_t i)
{
	if (r->point_count == 0)
		return UINT32_MAX;
	return r->points[i < r->point_count ? i : 0].member;
}

int ring_diff(const struct ring *before, const struct ring *after, struct ring_diff *out)
{
	size_t nb = before->member_count, na = after->member_count;
	size_t *union_of_before = NULL, *union_of_after = NULL;
	double *shares_before = NULL, *shares_after = NULL;
	struct ring_diff_member *members = NULL;
	size_t i = 0, j = 0, count = 0, pb = 0, pa = 0;
	uint64_t prev = 0;
	bool first = true;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	union_of_before = malloc((nb ? nb : 1) * sizeof(size_t));
	union_of_after = malloc((na ? na : 1) * sizeof(size_t));
	shares_before = malloc((nb ? nb : 1) * sizeof(double));
	shares_after = malloc((na ? na : 1) * sizeof(double));
	members = calloc(nb + na ? nb + na : 1, sizeof(*members));
	if (!union_of_before || !union_of_after || !shares_before || !shares_after || !members)
		goto out;
	ring_shares(before, shares_before);
	ring_shares(after, shares_after);

	/* The union of both memberships, in name order. */
	while (i < nb || j < na) {
		int cmp = i == nb ? 1 : j == na ? -1 :
			  strcmp(before->members[i].name, after->members[j].name);

		if (cmp <= 0) {
			strcpy(members[count].name, before->members[i].name);
			members[count].share_before = shares_before[i];
			union_of_before[i++] = count;
		}
		if (cmp >= 0) {
			strcpy(members[count].name, after->members[j].name);
			members[count].share_after = shares_after[j];
			union_of_after[j++] = count;
		}
		count++;
	}

	/*
	 * Walk every point position of both rings in order. Between two
	 * consecutive positions each ring has one owner: the first point at or
	 * after the arc's end. The first arc starts at 0 and includes it.
	 */
	for (;;) {
		bool more_b = pb < before->point_count, more_a = pa < after->point_count;
		uint64_t x;
		double len;
		uint32_t ob, oa;

		if (!more_b && !more_a)
			break;
		if (more_b && (!more_a || before->points[pb].position <= after->points[pa].position))
			x = before->points[pb].position;
		else
			x = after->points[pa].position;
		len = first ? (double)x + 1.0 : (double)(x - prev);
		ob = owner_at(before, pb);
		oa = owner_at(after, pa);
		if (ob == UINT32_MAX || oa == UINT32_MAX ||
		    union_of_before[ob] != union_of_after[oa]) {
			out->moved += len;
			if (ob != UINT32_MAX)
				members[union_of_before[ob]].moved_out += len;
			if (oa != UINT32_MAX)
				members[union_of_after[oa]].moved_in += len;
		}
		while (pb < before->point_count && before->points[pb].position == x)
			pb++;
		while (pa < after->point_count && after->points[pa].position == x)
			pa++;
		prev = x;
		first = false;
	}
	/* The last arc, past the highest position, wraps to each ring's first point. */
	if (before->point_count || after->point_count) {
		uint32_t ob = owner_at(before, 0), oa = owner_at(after, 0);
		double len = (double)(UINT64_MAX - prev);

		if (ob == UINT32_MAX || oa == UINT32_MAX ||
		    union_of_before[ob] != union_of_after[oa]) {
			out->moved += len;
			if (ob != UINT32_MAX)
				members[union_of_before[ob]].moved_out += len;
			if (oa != UINT32_MAX)
				members[union_of_after[oa]].moved_in += len;
		}
	}
	out->moved = ldexp(out->moved, -64);
	for (i = 0; i < count; i++) {
		members[i].moved_out = ldexp(members[i].moved_out, -64);
		members[i].moved_in = ldexp(members[i].moved_in, -64);
	}
	out->members = members;
	out->count = count;
	members = NULL;
	err = 0;
out:
	free(members);
	free(union_of_before);
	free(union_of_after);
	free(shares_before);
	free(shares_after);
	return err;
}

void ring_diff_free(struct ring_diff *diff)
{
	free(diff->members);
	diff->members = NULL;
	diff->count = 0;
}

static uint64_t points_digest(const struct ring_point *points, size_t count)
{
	struct byte_hasher h;
	unsigned char rec[16];
	size_t i;

	hasher_init(&h, FORMAT_KEY0, FORMAT_KEY1);
	for (i = 0; i < count; i++) {
		store_le64(rec, points[i].position);
		store_le32(rec + 8, points[i].member);
		store_le32(rec + 12, points[i].replica);
		hasher_update(&h, rec, sizeof(rec));
	}
	return hasher_final(&h);
}

static uint64_t bytes_checksum(const unsigned char *buf, size_t len)
{
	struct byte_hasher h;

	hasher_init(&h, FORMAT_KEY0, FORMAT_KEY1);
	hasher_update(&h, buf, len);
	return hasher_final(&h);
}

static uint64_t fingerprint_of(uint32_t vnodes, const struct member_rec *members, size_t count)
{
	struct byte_hasher h;
	unsigned char le[4];
	size_t i;

	/* The points follow from K and the members: hashing those is enough. */
	hasher_init(&h, FORMAT_KEY1, FORMAT_KEY0);
	store_le32(le, RING_FORMAT_VERSION);
	hasher_update(&h, le, 4);
	store_le32(le, vnodes);
	hasher_update(&h, le, 4);
	for (i = 0; i < count; i++) {
		unsigned char len = (unsigned char)strlen(members[i].name);

		hasher_update(&h, &len, 1);
		hasher_update(&h, members[i].name, len);
		store_le32(le, members[i].weight);
		hasher_update(&h, le, 4);
	}
	return hasher_final(&h);
}

uint64_t ring_fingerprint(const struct ring *r)
{
	return fingerprint_of(r->vnodes, r->members, r->member_count);
}

int ring_serialize(const struct ring *r, void **out, size_t *out_len)
{
	size_t len = RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN, i;
	unsigned char *buf, *p;

	*out = NULL;
	*out_len = 0;
	for (i = 0; i < r->member_count; i++)
		len += RING_FORMAT_MEMBER_FIXED_LEN + strlen(r->members[i].name);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, RING_FORMAT_MAGIC, RING_FORMAT_MAGIC_LEN);
	store_le32(buf + 8, RING_FORMAT_VERSION);
	store_le32(buf + 12, (uint32_t)len);
	store_le32(buf + 16, r->vnodes);
	store_le32(buf + 20, (uint32_t)r->member_count);
	store_le32(buf + 24, (uint32_t)r->point_count);
	store_le64(buf + 32, points_digest(r->points, r->point_count));
	p = buf + RING_FORMAT_HEADER_LEN;
	for (i = 0; i < r->member_count; i++) {
		size_t name_len = strlen(r->members[i].name);

		*p++ = (unsigned char)name_len;
		memcpy(p, r->members[i].name, name_len);
		p += name_len;
		store_le32(p, r->members[i].weight);
		p += 4;
	}
	store_le64(p, bytes_checksum(buf, len - RING_FORMAT_CHECKSUM_LEN));
	*out = buf;
	*out_len = len;
	return 0;
}

int ring_restore(struct ring **out, const void *data, size_t len)
{
	const unsigned char *buf = data, *p, *end;
	struct member_rec *members = NULL;
	struct ring *r = NULL;
	uint32_t total, member_count, point_count, vnodes, i;
	uint64_t points = 0;
	int err;

	*out = NULL;
	if (len >= RING_FORMAT_MAGIC_LEN && memcmp(buf, RING_FORMAT_MAGIC, RING_FORMAT_MAGIC_LEN))
		return -EILSEQ;
	if (len < RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN)
		return -ENODATA;
	if (load_le32(buf + 8) != RING_FORMAT_VERSION)
		return -EPROTONOSUPPORT;
	total = load_le32(buf + 12);
	if (len < total)
		return -ENODATA;
	if (len > total || total < RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN)
		return -EBADMSG;
	if (bytes_checksum(buf, len - RING_FORMAT_CHECKSUM_LEN) !=
	    load_le64(buf + len - RING_FORMAT_CHECKSUM_LEN))
		return -EBADMSG;
	vnodes = load_le32(buf + 16);
	member_count = load_le32(buf + 20);
	point_count = load_le32(buf + 24);
	if (load_le32(buf + 28) != 0 || member_count > RING_MEMBERS_MAX)
		return -EBADMSG;
	err = ring_new(&r, vnodes);
	if (err)
		return err;
	members = calloc(member_count ? member_count : 1, sizeof(*members));
	if (!members) {
		err = -ENOMEM;
		goto fail;
	}
	p = buf + RING_FORMAT_HEADER_LEN;
	end = buf + len - RING_FORMAT_CHECKSUM_LEN;
	for (i = 0; i < member_count; i++) {
		size_t name_len;

		if (end - p < 1) {
			err = -EBADMSG;
			goto fail;
		}
		name_len = *p++;
		if ((size_t)(end - p) < name_len + 4) {
			err = -EBADMSG;
			goto fail;
		}
		if (name_len == 0 || memchr(p, '\0', name_len)) {
			err = -EINVAL;
			goto fail;
		}
		if (name_len > RING_NAME_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(members[i].name, p, name_len);
		p += name_len;
		members[i].weight = load_le32(p);
		p += 4;
		if (members[i].weight > RING_WEIGHT_MAX) {
			err = -ERANGE;
			goto fail;
		}
		/* Canonical order doubles as the duplicate check. */
		if (i > 0 && strcmp(members[i - 1].name, members[i].name) >= 0) {
			err = strcmp(members[i - 1].name, members[i].name) ? -EBADMSG : -EEXIST;
			goto fail;
		}
		points += (uint64_t)members[i].weight * vnodes;
	}
	if (p != end || points != point_count) {
		err = -EBADMSG;
		goto fail;
	}
	if (points > RING_POINTS_MAX) {
		err = -E2BIG;
		goto fail;
	}
	err = ring_fill(r, members, member_count, points);
	if (err)
		goto fail;
	members = NULL;
	/* The points must be the ones the writer had: same algorithm, same ring. */
	if (points_digest(r->points, r->point_count) != load_le64(buf + 32)) {
		err = -EBADMSG;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	free(members);
	ring_free(r);
	return err;
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
