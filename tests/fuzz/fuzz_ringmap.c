// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: changes written into a ring map image (user/ringmap.c).
 * The input is a stream of 4-byte edits (add a point, add one just after a
 * point the ring has, remove one the ring has, remove one it may not have)
 * crowded into a few buckets, so runs grow, shrink and move. A plain sorted list of points is the model: every edit
 * must succeed or fail exactly as the model says, and after each one the
 * image must answer every point's position, its neighbours and both ends
 * of the circle as the first model point at or after them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "ringmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EDIT_BYTES 4
#define EDITS_MAX 96
#define MODEL_MAX 4096
/* A ring of 3 members x 8 points: 24 points, 2^LB_RING_BITS_MIN buckets, class 0. */
#define START_VNODES 8

struct model_point {
	uint64_t position;
	uint32_t backend_id;
};

static struct model_point model[MODEL_MAX];
static size_t model_count;

static size_t model_lower_bound(uint64_t position)
{
	size_t lo = 0, hi = model_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (model[mid].position < position)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t model_owner(uint64_t key)
{
	size_t i = model_lower_bound(key);

	return model[i < model_count ? i : 0].backend_id;
}

static void answers_check(const struct ringmap *m)
{
	uint64_t keys[3];
	size_t i, k;
	uint32_t got;

	for (i = 0; i <= model_count; i++) {
		uint64_t p = i < model_count ? model[i].position : 0;

		keys[0] = p;
		keys[1] = p + 1;
		keys[2] = p - 1;
		for (k = 0; k < 3; k++) {
			if (ringmap_lookup(m, keys[k], &got) || got != model_owner(keys[k]))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ring_member members[] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	static const uint32_t ids[] = { 101, 102, 103 };
	/*
	 * The starting image and model, made once: rendering 8,192 buckets
	 * under the fuzzer's comparison tracing cost more than an input.
	 */
	static struct model_point start_model[3 * START_VNODES];
	static union lb_ring_slot *start;
	static size_t start_count;
	struct ringmap m = { .bits = ringmap_bits(3 * START_VNODES) };
	size_t e;

	m.slot_count = ringmap_class_slots(ringmap_class(3 * START_VNODES, m.bits));
	if (!start) {
		const struct ring_point *points;
		struct ring *r;

		start = calloc(m.slot_count, sizeof(*start));
		m.slots = start;
		if (!start || ring_build(&r, START_VNODES, members, 3) ||
		    ringmap_render(&m, r, ids, 1))
			abort();
		points = ring_points(r, &start_count);
		for (e = 0; e < start_count; e++)
			start_model[e] = (struct model_point){ points[e].position,
							       ids[points[e].member] };
		ring_free(r);
	}
	m.slots = malloc(m.slot_count * sizeof(*m.slots));
	if (!m.slots)
		abort();
	memcpy(m.slots, start, m.slot_count * sizeof(*m.slots));
	memcpy(model, start_model, start_count * sizeof(*model));
	model_count = start_count;
	answers_check(&m);

	for (e = 0; e < EDITS_MAX && (e + 1) * EDIT_BYTES <= size; e++) {
		const uint8_t *d = data + e * EDIT_BYTES;
		uint16_t off = (uint16_t)(d[2] << 8 | d[3]);
		/*
		 * Four buckets of the 8,192 (the top two bits), the point's
		 * place in them from the input (16 bits below a bucket's 2^51).
		 */
		uint64_t position = (uint64_t)(d[1] & 3) << 62 | (uint64_t)off << 35;
		struct ringmap_edit edit = { position, 201 + d[1] % 5, 0 };
		size_t at;
		int want, err;

		switch (d[0] % 4) {
		case 1:
			/*
			 * Right after a point the ring has: entries one
			 * position apart differ only just above their low bits.
			 */
			edit.position = model[off % model_count].position + 1 + (d[1] >> 5);
			position = edit.position;
			/* fall through */
		case 0:
			edit.add = 1;
			at = model_lower_bound(position);
			want = at < model_count && model[at].position == position ? -EEXIST : 0;
			if (model_count == MODEL_MAX)
				goto out;
			break;
		case 2: /* a point the ring has */
			at = off % model_count;
			edit.position = model[at].position;
			edit.backend_id = model[at].backend_id;
			want = model_count == 1 ? -EINVAL : 0;
			break;
		default: /* a point it may not have; none leaves a ring of one */
			at = model_lower_bound(position);
			want = model_count == 1 ? -EINVAL :
			       at < model_count && model[at].position == position &&
					       model[at].backend_id == edit.backend_id ?
							  0 :
							  -ENOENT;
			break;
		}
		err = ringmap_apply(&m, &edit, 1, 1);
		if (err == -ENOSPC && edit.add)
			goto out; /* the run area is full: the model cannot say when */
		if (err != want) {
			fprintf(stderr, "edit %zu: %s %#llx backend %u: got %d, the model says %d "
				"(%zu points)\n", e, edit.add ? "add" : "remove",
				(unsigned long long)edit.position, edit.backend_id, err, want,
				model_count);
			abort();
		}
		if (err)
			goto out; /* the image is marked unusable; nothing more to do */
		if (edit.add) {
			memmove(model + at + 1, model + at, (model_count - at) * sizeof(*model));
			model[at] = (struct model_point){ edit.position, edit.backend_id };
			model_count++;
		} else {
			memmove(model + at, model + at + 1, (model_count - at - 1) * sizeof(*model));
			model_count--;
		}
		if (m.slots[LB_RING_COUNTS_SLOT].counts.points != model_count)
			abort();
		answers_check(&m);
	}
out:
	free(m.slots);
	return 0;
}
