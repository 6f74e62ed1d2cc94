/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers shared by ringlb's tests and benchmarks: a seeded,
 * reproducible pseudo-random generator (SplitMix64), so every test sees the
 * same "random" keys on every run and a failure can be replayed.
 */
#ifndef RINGLB_TESTUTIL_H
#define RINGLB_TESTUTIL_H

#include <stdint.h>

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

#endif /* RINGLB_TESTUTIL_H */
