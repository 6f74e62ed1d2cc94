/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SipHash (Aumasson and Bernstein), the one keyed hash of ringlb.
 *
 * This header is compiled twice: into the ring library and controller (host
 * C11) and into the XDP program (clang -target bpf). Both copies are the same
 * source, so the flow hash the kernel computes is, bit for bit, the one
 * `ringlb lookup` computes. Everything here is static inline, uses only
 * 64-bit integer arithmetic and fixed-count loops, and reads no memory it was
 * not handed, which is what the BPF verifier needs.
 *
 * Two uses:
 *  - ring point positions: SipHash-2-4 under a fixed public key over
 *    (member name, replica index), computed in ring.c from bytes;
 *  - flow hashes: SipHash-1-3 under the deployment's secret over the 40-byte
 *    flow key, handed in as five native-endian 64-bit words. ringlb runs on
 *    little-endian hosts only (see the assertion below), so native words are
 *    the standard little-endian SipHash message words.
 */
#ifndef RINGLB_SIPHASH_H
#define RINGLB_SIPHASH_H

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ringlb hashes native 64-bit words and supports little-endian hosts only"
#endif

/*
 * SIPHASH_INLINE - in the program, inlined at every call: as a function of
 * its own it cost new flows 0.04 - 0.08 of Katran's program (BENCHMARKS.md),
 * and clang makes one of it once three places call it.
 */
#ifdef __bpf__
#define SIPHASH_INLINE static inline __attribute__((always_inline))
#else
#define SIPHASH_INLINE static inline
#endif

/** SIPHASH_FLOW_WORDS - 64-bit words in a flow key (40 bytes). */
#define SIPHASH_FLOW_WORDS 5

/**
 * struct siphash_state - the four SipHash lanes.
 */
struct siphash_state {
	uint64_t v0, v1, v2, v3;
};

static inline uint64_t siphash_rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

/**
 * siphash_init() - start a SipHash computation under a 128-bit key.
 * @s: state to initialise
 * @k0: first key word (little-endian bytes 0..7 of the key)
 * @k1: second key word (bytes 8..15)
 */
static inline void siphash_init(struct siphash_state *s, uint64_t k0, uint64_t k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k1 ^ 0x7465646279746573ULL;
}

static inline void siphash_round(struct siphash_state *s)
{
	s->v0 += s->v1;
	s->v1 = siphash_rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = siphash_rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = siphash_rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = siphash_rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = siphash_rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = siphash_rotl(s->v2, 32);
}

/**
 * siphash_compress() - absorb one 64-bit message word.
 * @s: state
 * @m: message word (little-endian load of 8 message bytes)
 * @crounds: compression rounds (2 for SipHash-2-4, 1 for SipHash-1-3)
 */
static inline void siphash_compress(struct siphash_state *s, uint64_t m, unsigned int crounds)
{
	unsigned int i;

	s->v3 ^= m;
	for (i = 0; i < crounds; i++)
		siphash_round(s);
	s->v0 ^= m;
}

/**
 * siphash_finish() - absorb the final block and produce the 64-bit hash.
 * @s: state
 * @last: final block: the message's 0..7 trailing bytes, little-endian,
 *        with the total message length (mod 256) in the top byte
 * @crounds: compression rounds
 * @drounds: finalisation rounds (4 for SipHash-2-4, 3 for SipHash-1-3)
 */
static inline uint64_t siphash_finish(struct siphash_state *s, uint64_t last,
				      unsigned int crounds, unsigned int drounds)
{
	unsigned int i;

	siphash_compress(s, last, crounds);
	s->v2 ^= 0xff;
	for (i = 0; i < drounds; i++)
		siphash_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/**
 * siphash13_flow() - SipHash-1-3 of a 40-byte flow key.
 * @words: the flow key as five native (little-endian) 64-bit words
 * @k0: first secret word
 * @k1: second secret word
 *
 * Equal to SipHash-1-3 of the key's 40 bytes under the 16-byte secret whose
 * little-endian halves are @k0 and @k1. Written out straight: the XDP
 * program's verifier then keeps no state per word, as it did for a counted
 * loop over them.
 *
 * Return: the flow's position on the ring.
 */
SIPHASH_INLINE uint64_t siphash13_flow(const uint64_t words[SIPHASH_FLOW_WORDS],
				      uint64_t k0, uint64_t k1)
{
	struct siphash_state s;

	_Static_assert(SIPHASH_FLOW_WORDS == 5, "five words");
	siphash_init(&s, k0, k1);
	siphash_compress(&s, words[0], 1);
	siphash_compress(&s, words[1], 1);
	siphash_compress(&s, words[2], 1);
	siphash_compress(&s, words[3], 1);
	siphash_compress(&s, words[4], 1);
	/* A 40-byte message leaves no tail bytes: the last block is the length. */
	return siphash_finish(&s, (uint64_t)(SIPHASH_FLOW_WORDS * 8) << 56, 1, 3);
}

#endif /* RINGLB_SIPHASH_H */
