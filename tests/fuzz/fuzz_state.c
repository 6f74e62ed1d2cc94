// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the state file parser. Any input must be refused with a
 * reason or accepted; an accepted state must print back to text that parses
 * to the same text (a fixed point), and every VIP in it must build its ring,
 * since a state that loads is a state that can be applied.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[STATE_WHY_MAX] = "";
	struct state s, again;
	char *text, *text2;
	size_t i;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (state_from_text(&s, text, why)) {
		if (!why[0])
			abort(); /* refused without a reason */
		free(text);
		return 0;
	}
	free(text);
	text = state_to_text(&s);
	if (!text || state_from_text(&again, text, why))
		abort(); /* printed a state it cannot read back */
	text2 = state_to_text(&again);
	if (!text2 || strcmp(text, text2))
		abort();
	for (i = 0; i < s.fleet.vip_count; i++) {
		struct ring *ring;
		__u32 *ids;

		if (state_vip_ring(&s.fleet.vips[i], &ring, &ids))
			abort(); /* loaded, but cannot be applied */
		ring_free(ring);
		free(ids);
	}
	free(text);
	free(text2);
	state_free(&s);
	state_free(&again);
	return 0;
}
