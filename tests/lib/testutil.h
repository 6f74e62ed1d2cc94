/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers shared by ringlb's tests and benchmarks: a seeded,
 * reproducible pseudo-random generator (SplitMix64), so every test sees the
 * same "random" keys on every run and a failure can be replayed; and a
 * byte-wise SipHash to check the library's against.
 */
#ifndef RINGLB_TESTUTIL_H
#define RINGLB_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "siphash.h"

/** struct test_rng - SplitMix64 state. */
struct test_rng {
	uint64_t state;
};

static inline uint64_t test_rng_next(struct test_rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A value in [0, bound), bound > 0; the tiny modulo bias is irrelevant here. */
static inline uint64_t test_rng_below(struct test_rng *rng, uint64_t bound)
{
	return test_rng_next(rng) % bound;
}

/*
 * SipHash-c-d over bytes, built from ring/siphash.h's primitives with
 * little-endian words: the reference the tests hold the library's uses to.
 */
static inline uint64_t test_siphash_bytes(const unsigned char *msg, size_t len, uint64_t k0,
					  uint64_t k1, unsigned int c, unsigned int d)
{
	struct siphash_state s;
	uint64_t last = (uint64_t)(len & 0xff) << 56, w;
	size_t i, j;

	siphash_init(&s, k0, k1);
	for (i = 0; i + 8 <= len; i += 8) {
		for (w = 0, j = 0; j < 8; j++)
			w |= (uint64_t)msg[i + j] << (8 * j);
		siphash_compress(&s, w, c);
	}
	for (j = 0; i + j < len; j++)
		last |= (uint64_t)msg[i + j] << (8 * j);
	return siphash_finish(&s, last, c, d);
}

#endif /* RINGLB_TESTUTIL_H */
