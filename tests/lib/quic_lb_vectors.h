/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The QUIC-LB draft's test vectors (draft-ietf-quic-load-balancers,
 * appendix "Load Balancer Test Vectors", and its worked four-pass example),
 * for the unit test (tests/unit/test_quic_lb.c) and the program test
 * (tests/prog/quic_lb.c) alike. Include after check.h.
 *
 * Two of the appendix's vectors contradict the draft's own first-octet rule
 * (three bits of config rotation, then the length of what follows), and the
 * values consistent with it are the ones tested:
 *   - plaintext, rotation 1: the nonce is printed as 3487d970b, nine digits
 *     for five octets; it is 03487d970b, and the connection ID, printed as
 *     20a350d28b4203487d970b, is 2a 350d28b420 03487d970b;
 *   - encrypted, rotation 3: the first octet is printed as 0x12 (rotation 0);
 *     it is 0x72 (rotation 3, 18 octets follow). The 18 octets after it are
 *     the draft's, and the draft's own 0x12 is refused as another rotation.
 */
#ifndef RINGLB_TESTS_QUIC_LB_VECTORS_H
#define RINGLB_TESTS_QUIC_LB_VECTORS_H

#include <stdio.h>
#include <string.h>
#include <linux/types.h>

#include "testutil.h"

/* @hex (an even number of digits) into @out; the number of octets. */
static inline size_t unhex(const char *hex, __u8 *out)
{
	size_t n = strlen(hex) / 2, i;

	for (i = 0; i < n; i++) {
		unsigned int v;

		check(sscanf(hex + 2 * i, "%2x", &v) == 1, "bad hex in the test: %s", hex);
		out[i] = (__u8)v;
	}
	return n;
}

static inline void hex_of(const __u8 *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

struct vector {
	const char *key; /* NULL: plaintext */
	__u8 rotation;
	const char *sid, *nonce, *cid;
};

static const struct vector vectors[] = {
	/* Unencrypted CIDs */
	{ NULL, 0, "c4605e", "4504cc4f", "07c4605e4504cc4f" },
	{ NULL, 1, "350d28b420", "03487d970b", "2a350d28b42003487d970b" },
	/* Encrypted CIDs: four passes (3 + 4), four with the fourth to decode (10 + 5),
	 * single pass (8 + 8), four passes (9 + 9) */
	{ "8f95f09245765f80256934e50c66207f", 0, "ed793a", "ee080dbf", "0720b1d07b359d3c" },
	{ "8f95f09245765f80256934e50c66207f", 1, "ed793a51d49b8f5fab65", "ee080dbf48",
	  "2fcc381bc74cb4fbad2823a3d1f8fed2" },
	{ "8f95f09245765f80256934e50c66207f", 2, "ed793a51d49b8f5f", "ee080dbf48c0d1e5",
	  "504dd2d05a7b0de9b2b9907afb5ecf8cc3" },
	{ "8f95f09245765f80256934e50c66207f", 3, "ed793a51d49b8f5fab", "ee080dbf48c0d1e55d",
	  "725779c9cc86beb3a3a4a3ca96fce4bfe0cdbc" },
	/* The four-pass encryption example (7 octets: the halves share the middle one) */
	{ "fdf726a9893ec05c0632d3956680baf0", 0, "31441a", "9c69c275", "0767947d29be054a" },
};

#define QUIC_LB_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

/* A random key, server id (16 octets: the longest and then some) and nonce (32). */
static inline void quic_lb_random_material(struct test_rng *rng, __u8 *key, __u8 *sid, __u8 *nonce)
{
	int i;

	for (i = 0; i < 16; i++) {
		key[i] = (__u8)test_rng_next(rng);
		sid[i] = (__u8)test_rng_next(rng);
	}
	for (i = 0; i < 32; i++)
		nonce[i] = (__u8)test_rng_next(rng);
}

#endif /* RINGLB_TESTS_QUIC_LB_VECTORS_H */
