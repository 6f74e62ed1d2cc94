// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: ring deserialization. Raw inputs test the outer checks
 * (magic, version, lengths, checksum). Inputs whose first byte is odd have
 * their length and checksum fields repaired first, so the fuzzer reaches the
 * member parser, the validation and the points digest behind the checksum.
 * A restored ring must serialize back to exactly its input and answer
 * lookups.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "testutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Matches ring/format.c's format: total length at 12, checksum in the last 8 bytes. */
#define HEADER_LEN 40
#define CHECKSUM_LEN 8

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The key of ring/format.c's checksum (FORMAT_KEY0, FORMAT_KEY1). */
#define CHECKSUM_KEY0 0x69726f74732d626cULL
#define CHECKSUM_KEY1 0x31762d746d726f66ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ring_lookup_result res;
	struct ring *r = NULL;
	uint8_t *buf;
	void *back;
	size_t len;

	if (size == 0)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if ((data[0] & 1) && size >= HEADER_LEN + CHECKSUM_LEN) {
		/* Keep rings quick to build: K below 64. */
		buf[16] &= 0x3f;
		buf[17] = buf[18] = buf[19] = 0;
		put_le(buf + 12, size, 4);
		put_le(buf + size - CHECKSUM_LEN,
		       test_siphash_bytes(buf, size - CHECKSUM_LEN, CHECKSUM_KEY0, CHECKSUM_KEY1, 2, 4),
		       8);
	}
	if (ring_restore(&r, buf, size) == 0) {
		if (ring_serialize(r, &back, &len) || len != size || memcmp(back, buf, size))
			abort(); /* restored something it would not write */
		free(back);
		(void)ring_lookup(r, 0x0123456789abcdefULL, &res);
		ring_free(r);
	}
	free(buf);
	return 0;
}
