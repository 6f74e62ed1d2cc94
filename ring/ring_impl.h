/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the ring library's files share and nothing outside ring/ sees: the
 * ring's layout, little-endian helpers, the streaming SipHash over bytes, and
 * the functions one file of the library lends another.
 */
#ifndef RINGLB_RING_IMPL_H
#define RINGLB_RING_IMPL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
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

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t load_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void store_le64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void store_le32(unsigned char *p, uint32_t v)
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

static inline void hasher_init(struct byte_hasher *h, uint64_t k0, uint64_t k1)
{
	siphash_init(&h->s, k0, k1);
	h->tail_len = 0;
	h->total = 0;
}

static inline void hasher_update(struct byte_hasher *h, const void *data, size_t len)
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

static inline uint64_t hasher_final(struct byte_hasher *h)
{
	uint64_t last = (h->total & 0xff) << 56;
	size_t i;

	for (i = 0; i < h->tail_len; i++)
		last |= (uint64_t)h->tail[i] << (8 * i);
	return siphash_finish(&h->s, last, 2, 4);
}

/* memcpy() that accepts the NULL arrays of an empty ring when n is 0. */
static inline void copy_bytes(void *dst, const void *src, size_t n)
{
	if (n)
		memcpy(dst, src, n);
}


/* build.c */
int ring__name_check(const char *name);
int ring__member_search(const struct ring *r, const char *name, size_t *at);
int ring__fill(struct ring *r, struct member_rec *members, size_t member_count,
	       uint64_t point_count);

/* format.c */
uint64_t ring__fingerprint_of(uint32_t vnodes, const struct member_rec *members, size_t count);

#endif /* RINGLB_RING_IMPL_H */
