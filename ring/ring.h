/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The ring library: a weighted virtual-node consistent-hash ring.
 *
 * A ring holds members (name, weight). A member of weight w owns w * K points
 * on a 64-bit circle, K being the ring's virtual nodes per unit of weight.
 * Point i of member "name" sits at SipHash-2-4(name || le32(i)) under a fixed
 * public key, so its place depends on nothing but the name and the index: the
 * same membership gives a byte-identical ring on every host, whatever order
 * members were added in. A key is owned by the first point at or after it,
 * wrapping past the last point to the first.
 *
 * The points are kept as one array sorted by (position, member, replica);
 * members are numbered in name order. Two points at the same position are
 * ordered by member name, then replica, so collisions resolve the same way on
 * every host. Next to the array the ring keeps a bucket index: for b index
 * bits, bucket p holds the first point at or after p << (64 - b). A lookup
 * reads its bucket and searches only the points inside it, with a fixed
 * number of power-of-two strides that the ring publishes. The controller
 * renders the points and this index into the kernel's ring map, where each
 * bucket keeps its own points (user/ringmap.c), and the XDP program's search
 * gives the same answer for every key.
 *
 * Pure C11: no libbpf, no kernel headers. Functions return 0 or a negative
 * errno; ring_strerror() turns it into a message. A failed call leaves the
 * ring exactly as it was.
 */
#ifndef RINGLB_RING_H
#define RINGLB_RING_H

#include <stddef.h>
#include <stdint.h>

/** RING_NAME_MAX - longest member name in bytes, without the NUL. */
#define RING_NAME_MAX 63
/** RING_WEIGHT_MAX - largest member weight; weight 0 owns no points. */
#define RING_WEIGHT_MAX 10000
/** RING_VNODES_MIN, RING_VNODES_MAX - range of K, points per unit of weight. */
#define RING_VNODES_MIN 1
#define RING_VNODES_MAX (1u << 20)
/** RING_VNODES_DEFAULT - K when the caller has no opinion. */
#define RING_VNODES_DEFAULT 4096
/** RING_POINTS_MAX - most points one ring may hold. */
#define RING_POINTS_MAX (1u << 20)
/** RING_MEMBERS_MAX - most members one ring may hold. */
#define RING_MEMBERS_MAX 65536
/** RING_INDEX_BITS_MAX - the bucket index never has more than 2^21 buckets. */
#define RING_INDEX_BITS_MAX 21
/** RING_INDEX_BUCKETS_PER_POINT - index buckets per point, before rounding up. */
#define RING_INDEX_BUCKETS_PER_POINT 2
/**
 * RING_SEARCH_STEPS_MAX - the most strides any lookup takes:
 * ceil(log2(RING_POINTS_MAX + 1)), a bucket holding the whole ring.
 */
#define RING_SEARCH_STEPS_MAX 21

/**
 * struct ring_point - one virtual node.
 * @position: place on the 64-bit circle
 * @member: index of the owning member (members are numbered in name order)
 * @replica: which of the member's points this is, 0 .. weight * K - 1
 */
struct ring_point {
	uint64_t position;
	uint32_t member;
	uint32_t replica;
};

/**
 * struct ring_bucket - one entry of the bucket index.
 * @position: position of point @first (UINT64_MAX when there is none), so a
 *            bucket holding at most one point answers without a point read
 * @first: index of the first point at or after the bucket's start
 *         (the point count when there is none)
 * @owner: member owning @first's point, or point 0's when @first is the
 *         point count: the owner of every key of an empty bucket
 */
struct ring_bucket {
	uint64_t position;
	uint32_t first;
	uint32_t owner;
};

/**
 * struct ring_member - a member as the caller names it.
 * @name: 1 .. RING_NAME_MAX bytes, NUL-terminated
 * @weight: 0 .. RING_WEIGHT_MAX
 */
struct ring_member {
	const char *name;
	uint32_t weight;
};

/**
 * struct ring_lookup_result - where a key landed.
 * @member: index of the owning member
 * @point: index of the owning point in ring_points()
 * @steps: strides the search took (the ring's ring_search_steps())
 */
struct ring_lookup_result {
	uint32_t member;
	uint32_t point;
	unsigned int steps;
};

/**
 * struct ring_diff_member - what one member gains and loses in a change.
 * @name: member name (owned by the diff)
 * @share_before: share of the hash space it owned before (0 when absent)
 * @share_after: share it owns after
 * @moved_out: share that it owned before and another member owns after
 * @moved_in: share that another member (or nobody) owned before and it owns after
 */
struct ring_diff_member {
	char name[RING_NAME_MAX + 1];
	double share_before;
	double share_after;
	double moved_out;
	double moved_in;
};

/**
 * struct ring_diff - the share of the hash space that changes owner.
 * @moved: total share whose owner differs between the two rings
 * @count: entries in @members
 * @members: every member of either ring, in name order
 */
struct ring_diff {
	double moved;
	size_t count;
	struct ring_diff_member *members;
};

struct ring;

/**
 * ring_new() - create an empty ring.
 * @out: the new ring
 * @vnodes: K, points per unit of weight, RING_VNODES_MIN .. RING_VNODES_MAX
 *
 * Return: 0, -EDOM for K out of range, -ENOMEM.
 */
int ring_new(struct ring **out, uint32_t vnodes);

/**
 * ring_build() - create a ring holding @count members at once.
 * @out: the new ring
 * @vnodes: K
 * @members: members, in any order
 * @count: number of members
 *
 * The result is byte-identical whatever the order of @members.
 *
 * Return: 0, or any error of ring_new() and ring_add().
 */
int ring_build(struct ring **out, uint32_t vnodes, const struct ring_member *members,
	       size_t count);

/**
 * ring_summary() - what ring_build() would make of these members, without
 * building it: its point count and ring_fingerprint().
 * @vnodes: K
 * @members: members, in any order
 * @count: number of members
 * @points: the ring's points
 * @fingerprint: its fingerprint
 *
 * Return: 0, or the error ring_build() would return (never for lack of room
 * for the points).
 */
int ring_summary(uint32_t vnodes, const struct ring_member *members, size_t count,
		 size_t *points, uint64_t *fingerprint);

/**
 * ring_free() - release a ring. NULL is allowed.
 * @r: the ring
 */
void ring_free(struct ring *r);

/**
 * ring_clone() - deep copy of a ring.
 * @out: the copy
 * @r: the ring to copy
 *
 * Return: 0 or -ENOMEM.
 */
int ring_clone(struct ring **out, const struct ring *r);

/**
 * ring_add() - add a member and all its points.
 * @r: the ring
 * @name: new member's name
 * @weight: its weight
 *
 * Return: 0; -EINVAL for an empty name, -ENAMETOOLONG, -EEXIST for a
 * duplicate, -ERANGE for a weight out of range, -E2BIG when the ring would
 * exceed RING_POINTS_MAX points or RING_MEMBERS_MAX members, -ENOMEM.
 */
int ring_add(struct ring *r, const char *name, uint32_t weight);

/**
 * ring_remove() - remove a member and every one of its points.
 * @r: the ring
 * @name: the member
 *
 * Return: 0, -EINVAL, -ENAMETOOLONG, -ENOENT for an unknown member, -ENOMEM.
 */
int ring_remove(struct ring *r, const char *name);

/**
 * ring_set_weight() - change a member's weight.
 * @r: the ring
 * @name: the member
 * @weight: its new weight
 *
 * Only the points between the old and the new weight are added or removed:
 * a member's point i exists exactly when i < weight * K.
 *
 * Return: 0, -EINVAL, -ENAMETOOLONG, -ENOENT, -ERANGE, -E2BIG, -ENOMEM.
 */
int ring_set_weight(struct ring *r, const char *name, uint32_t weight);

/**
 * ring_points() - the sorted point array, which the kernel's ring map holds.
 * @r: the ring
 * @count: number of points
 *
 * Return: the points, valid until the ring next changes. NULL when empty.
 */
const struct ring_point *ring_points(const struct ring *r, size_t *count);

/**
 * ring_index() - the bucket index over the points.
 * @r: the ring
 * @bits: number of index bits b; there are 2^b buckets
 *
 * Bucket p covers positions [p << (64 - b), (p + 1) << (64 - b)). Entry 2^b
 * is a sentinel whose @first is the point count and whose @owner is point 0's,
 * so the points inside bucket p are [index[p].first, index[p + 1].first) and a
 * key past all of them belongs to index[p + 1].owner.
 * Return: 2^b + 1 entries, NULL when the ring has no points.
 */
const struct ring_bucket *ring_index(const struct ring *r, unsigned int *bits);

/**
 * ring_search_steps() - strides every lookup in this ring takes.
 * @r: the ring
 *
 * ceil(log2(largest bucket + 1)); never more than ceil(log2(points)) + 1.
 */
unsigned int ring_search_steps(const struct ring *r);

/** ring_vnodes() - K, the ring's points per unit of weight. */
uint32_t ring_vnodes(const struct ring *r);

/** ring_member_count() - number of members, weight 0 included. */
size_t ring_member_count(const struct ring *r);

/**
 * ring_member_name() - a member's name.
 * @r: the ring
 * @member: index in name order, below ring_member_count()
 */
const char *ring_member_name(const struct ring *r, uint32_t member);

/** ring_member_weight() - a member's weight. */
uint32_t ring_member_weight(const struct ring *r, uint32_t member);

/**
 * ring_member_find() - a member's index by name.
 * @r: the ring
 * @name: the member
 * @member: its index
 *
 * Return: 0 or -ENOENT (also -EINVAL, -ENAMETOOLONG for a bad name).
 */
int ring_member_find(const struct ring *r, const char *name, uint32_t *member);

/**
 * ring_lookup() - the owner of a key.
 * @r: the ring
 * @key: a 64-bit hash, such as a flow hash
 * @result: owning member and point, and the strides the search took
 *
 * Return: 0, or -ENOENT when the ring has no points.
 */
int ring_lookup(const struct ring *r, uint64_t key, struct ring_lookup_result *result);

/**
 * ring_lookup_many() - the owners of many keys, for throughput.
 * @r: the ring
 * @keys: @count keys
 * @count: number of keys
 * @members: @count owning member indices, the same ring_lookup() gives
 *
 * Asks the memory system for each key's bucket a few keys ahead, so the
 * cache misses of a large ring overlap instead of adding up.
 *
 * Return: 0, or -ENOENT when the ring has no points.
 */
int ring_lookup_many(const struct ring *r, const uint64_t *keys, size_t count,
		     uint32_t *members);

/**
 * ring_shares() - the share of the hash space each member owns.
 * @r: the ring
 * @shares: ring_member_count() entries, in member order; all zero when empty
 */
void ring_shares(const struct ring *r, double *shares);

/**
 * ring_diff() - what changes owner between two rings of any membership.
 * @before: the ring now serving
 * @after: the ring that would replace it
 * @out: the difference, to release with ring_diff_free()
 *
 * Members are matched by name. Space that nobody owned before (an empty
 * ring) counts as moved.
 *
 * Return: 0 or -ENOMEM.
 */
int ring_diff(const struct ring *before, const struct ring *after, struct ring_diff *out);

/** ring_diff_free() - release a diff's members. */
void ring_diff_free(struct ring_diff *diff);

/** RING_NO_OWNER - the owner of every key of a ring without points. */
#define RING_NO_OWNER UINT32_MAX

/**
 * struct ring_arc - a stretch of the circle with one owner under each of two rings.
 * @start: its first position
 * @end: its last position (inclusive: the arc holds end - start + 1 keys)
 * @before: the owning member's index in the first ring, RING_NO_OWNER when it has no points
 * @after: the owning member's index in the second ring
 */
struct ring_arc {
	uint64_t start;
	uint64_t end;
	uint32_t before;
	uint32_t after;
};

/**
 * typedef ring_arc_fn - called by ring_overlay() for each arc, in position order.
 * Return: 0 to go on; anything else stops the walk and is returned.
 */
typedef int (*ring_arc_fn)(const struct ring_arc *arc, void *ctx);

/**
 * ring_overlay() - the circle cut where the owner under either ring changes.
 * @before: a ring
 * @after: another ring, or @before again for one ring's own arcs
 * @fn: called with each arc, from position 0 up; neighbours differ in an owner
 * @ctx: handed to @fn
 *
 * The arcs cover the whole circle, 0 to UINT64_MAX, once (none when neither
 * ring has points). The arc holding 0 and the one holding UINT64_MAX are
 * reported apart even when their owners are the same. Members are the rings'
 * own indices; match them by ring_member_name().
 *
 * Return: 0, or what @fn returned to stop.
 */
int ring_overlay(const struct ring *before, const struct ring *after, ring_arc_fn fn, void *ctx);

/**
 * ring_fingerprint() - 64 bits that differ between rings that differ.
 * @r: the ring
 *
 * A keyed hash of K and the members (names and weights), from which the
 * points follow: equal rings have equal fingerprints on every host.
 */
uint64_t ring_fingerprint(const struct ring *r);

/**
 * ring_serialize() - the ring in ringlb's versioned, checksummed format.
 * @r: the ring
 * @buf: a malloc()ed buffer, the caller frees it
 * @len: its length
 *
 * The format holds K, the members and a digest of the points they must
 * produce; see ring.c for the layout. Return: 0 or -ENOMEM.
 */
int ring_serialize(const struct ring *r, void **buf, size_t *len);

/**
 * ring_restore() - rebuild a ring from ring_serialize() output.
 * @out: the ring
 * @buf: serialized bytes
 * @len: their length
 *
 * Return: 0; -ENODATA for a truncated input, -EILSEQ for one that is not a
 * ring, -EPROTONOSUPPORT for another format version, -EBADMSG for a checksum
 * or digest mismatch or trailing garbage, any error of ring_add() for members
 * that are invalid, -ENOMEM. Nothing is allocated on failure.
 */
int ring_restore(struct ring **out, const void *buf, size_t len);

/**
 * ring_point_position() - where a member's replica sits on the circle.
 * @name: member name
 * @replica: replica index
 */
uint64_t ring_point_position(const char *name, uint32_t replica);

/**
 * ring_siphash() - SipHash-2-4 of @len bytes under the key (@k0, @k1): the
 * library's byte hash, for digests of what rings are made from.
 */
uint64_t ring_siphash(const void *data, size_t len, uint64_t k0, uint64_t k1);

/**
 * ring_strerror() - a one-line message for an error this library returns.
 * @err: the negative errno
 */
const char *ring_strerror(int err);

#endif /* RINGLB_RING_H */
