/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Ring map images: the bytes of one ring map (lb_contract.h's layout) as the
 * controller writes, changes, reads and checks them, in memory or through a
 * mapping of the kernel's map. No system calls here: lb.c owns the maps.
 *
 * A fresh image is rendered from a ring of the ring library. A change (points
 * added, points removed) is applied in place as edits: each touches its
 * bucket's entry and run word, possibly a run, and the entries of the empty
 * buckets just before it. Images of the
 * same ring give the same answer for every hash however they were made;
 * ringmap_compare() and ringmap_digest() therefore look at what the search
 * reads, not at where runs happen to lie.
 */
#ifndef RINGLB_RINGMAP_H
#define RINGLB_RINGMAP_H

#include <stddef.h>
#include <linux/types.h>

#include "lb_contract.h"
#include "ring.h"

/* The library's limits are the contract's: every ring it builds has a map. */
_Static_assert(RING_POINTS_MAX == LB_RING_POINTS_MAX,
	       "a ring of the library's largest size fits the largest ring map class");
_Static_assert(RING_INDEX_BITS_MAX <= LB_RING_BITS_MAX,
	       "a ring's bucket index is no finer than a ring map's");
_Static_assert(LB_BACKENDS_MAX - 1 <= RING_MEMBERS_MAX,
	       "every backend slot can be a member of one ring");

struct ring;

/**
 * struct ringmap - one ring map's slots.
 * @slots: the slots (a mapping of the kernel's map, or memory)
 * @slot_count: how many there are (the map's class size)
 * @bits: the ring's index bits
 */
struct ringmap {
	union lb_ring_slot *slots;
	size_t slot_count;
	unsigned int bits;
};

/**
 * struct ringmap_edit - one point added to or removed from a ring.
 * @position: the point's place on the circle
 * @backend_id: its backend
 * @add: 1 to add the point, 0 to remove it
 */
struct ringmap_edit {
	__u64 position;
	__u32 backend_id;
	__u32 add;
};

/**
 * struct ringmap_member - a ring member and the backend it stands for.
 * @name: its name (the ring library's)
 * @weight: its weight; it owns replicas 0 .. weight * K - 1
 * @backend_id: its backend
 */
struct ringmap_member {
	const char *name;
	__u32 weight;
	__u32 backend_id;
};

/**
 * ringmap_edits() - the points that turn one ring into another of the same K.
 * @vnodes: K of both rings
 * @before: members of the ring now, any order
 * @before_count: how many
 * @after: members of the ring wanted, any order
 * @after_count: how many
 * @max: give up beyond this many edits (a whole build is cheaper then)
 * @edits: the edits, removals first (free() them)
 * @count: how many
 *
 * Members are matched by name; a weight change adds or removes only the
 * replicas between the two weights; a member whose backend changed is
 * removed and added whole. Return: 0, -E2BIG beyond @max, -ENOMEM.
 */
int ringmap_edits(__u32 vnodes, const struct ringmap_member *before, size_t before_count,
		  const struct ringmap_member *after, size_t after_count, size_t max,
		  struct ringmap_edit **edits, size_t *count);

/**
 * ringmap_bits() - bucket bits of a ring of @points points: two buckets per
 * point or more, never fewer than 2^LB_RING_BITS_MIN buckets.
 */
unsigned int ringmap_bits(size_t points);

/**
 * ringmap_class() - the smallest ring class for @points points at @bits bits.
 * Return: the class, -E2BIG when no class is that large, -EINVAL for @bits
 * outside LB_RING_BITS_MIN .. LB_RING_BITS_MAX.
 */
int ringmap_class(size_t points, unsigned int bits);

/** ringmap_class_slots() - slots of every ring map of class @class. */
__u32 ringmap_class_slots(int class);

/**
 * ringmap_render() - write a ring into a zeroed image.
 * @m: the image; @m->bits must be ringmap_bits() of the ring's points
 * @ring: the ring (not empty)
 * @backend_of_member: backend id of each ring member
 * @fingerprint: ring_fingerprint() of @ring
 *
 * Return: 0; -ENOSPC when the image is too small; -E2BIG when one bucket
 * holds more than LB_RING_RUN_COUNT_MAX points (position collisions only a
 * crafted set of names could make); -EINVAL for an empty ring or a backend
 * id wider than an entry's backend bits.
 */
int ringmap_render(struct ringmap *m, const struct ring *ring, const __u32 *backend_of_member,
		   __u64 fingerprint);

/**
 * ringmap_apply() - change an image's ring by adding and removing points.
 * @m: an image of a ring (header points not LB_RING_POINTS_WRITING)
 * @edits: the points, applied in order
 * @count: how many
 * @fingerprint: the fingerprint of the ring they make
 *
 * The header says LB_RING_POINTS_WRITING until the last edit is in, so an
 * image left half-changed (an error, a killed process) is never taken for a
 * ring. The result answers every hash as a fresh render of the new ring
 * would. Return: 0; -ENOENT for a removed point the image does not have;
 * -EEXIST for an added point at a position already taken (the library orders
 * such ties by name, which the image cannot see); -ENOSPC when the run area
 * is full; -E2BIG for a bucket over LB_RING_RUN_COUNT_MAX; -EINVAL when the
 * ring would be empty, a backend id does not fit an entry (contract) or the
 * image is not a ring. On error the image is
 * unusable until rendered again.
 */
int ringmap_apply(struct ringmap *m, const struct ringmap_edit *edits, size_t count,
		  __u64 fingerprint);

/**
 * ringmap_lookup() - the backend the XDP program picks for @hash in @m: the
 * same search (lb_ring_search.h). Return: 0, or -EBADMSG for an image the
 * search cannot read.
 */
int ringmap_lookup(const struct ringmap *m, __u64 hash, __u32 *backend_id);

/**
 * ringmap_compare() - does @m hold exactly @ring, as the search reads it?
 * @m: the image
 * @ring: the ring
 * @backend_of_member: backend id of each ring member
 * @fingerprint: ring_fingerprint() of @ring
 *
 * Compares the header, every bucket (first point and backend, points held)
 * and every run's points. Return: 0 when equal, else -EBADMSG.
 */
int ringmap_compare(const struct ringmap *m, const struct ring *ring,
		    const __u32 *backend_of_member, __u64 fingerprint);

/**
 * ringmap_digest() - a digest of what the search reads in @m: equal for any
 * two images of the same ring, on any host.
 * Return: 0 and @digest, or -EBADMSG for an image that is not a ring.
 */
int ringmap_digest(const struct ringmap *m, __u64 *digest);

#endif /* RINGLB_RINGMAP_H */
