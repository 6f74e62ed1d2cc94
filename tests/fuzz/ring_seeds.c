// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the seed corpus of fuzz_ring: a few serialized rings (empty, one
 * member, weighted, a weight-0 member, long names) into the directory given.
 * `make fuzz-seeds` runs it; its output is committed in tests/corpus/ring.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ring.h"

static void seed(const char *dir, const char *file, uint32_t vnodes,
		 const struct ring_member *m, size_t n)
{
	char path[512];
	struct ring *r;
	void *buf;
	size_t len;
	FILE *f;

	if (ring_build(&r, vnodes, m, n) || ring_serialize(r, &buf, &len))
		exit(1);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		exit(1);
	free(buf);
	ring_free(r);
}

int main(int argc, char **argv)
{
	static const struct ring_member one[] = { { "web-1", 1 } };
	static const struct ring_member weighted[] = {
		{ "a", 1 }, { "b", 2 }, { "c", 3 }, { "idle", 0 },
	};
	static const struct ring_member longname[] = {
		{ "x23456789012345678901234567890123456789012345678901234567890123", 2 },
		{ "backend.eu-west_1", 1 },
	};

	if (argc != 2)
		return 2;
	seed(argv[1], "empty", 7, NULL, 0);
	seed(argv[1], "one-member", 3, one, 1);
	seed(argv[1], "weighted", 5, weighted, 4);
	seed(argv[1], "long-names", 9, longname, 2);
	return 0;
}
