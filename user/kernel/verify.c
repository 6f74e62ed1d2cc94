// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does the kernel hold exactly a state? Every VIP value and ring, every
 * backend slot, the encapsulation settings, the kernel's record; one line
 * per disagreement.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

#include <bpf/bpf.h>

#include "image.h"
#include "ring.h"


int kernel_verify(const struct lb_maps *maps, const struct state *want,
	       void (*report)(void *arg, const char *line), void *arg)
{
	struct lb_vip_key key, next;
	struct lb_control rec;
	struct lb_vip served;
	int bad = 0, err;
	size_t i, j;
	__u32 id;

	err = lb_control_read(maps, &rec);
	if (err)
		return err;
	if (rec.changing) {
		kernel_say(report, arg, "the kernel's record says a change was cut short (the next change "
		    "repairs the maps first)");
		bad++;
	} else if (rec.state_digest != state_digest(want)) {
		kernel_say(report, arg, "the kernel's record names another state than the file (generation "
		    "%llu; the next change repairs the maps first)",
		    (unsigned long long)rec.generation);
		bad++;
	}

	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i];
		char spec[ADDR_TEXT_MAX], why[128] = "";
		struct ring *ring;
		__u32 *ids;

		vip_format(&v->spec, spec);
		image_vip_key(v, &key);
		err = state_vip_ring(v, &ring, &ids);
		if (err)
			return err;
		if (lb_vip_compare(maps, &key, v->id, ring, ids, why, sizeof(why))) {
			kernel_say(report, arg, "VIP %s: %s", spec, why);
			bad++;
		} else if (bpf_map_lookup_elem(maps->vips, &key, &served) == 0 &&
			   served.flags != image_vip_flags(v)) {
			kernel_say(report, arg, "VIP %s: the kernel's VIP value is %s", spec,
			    served.flags & LB_VIP_STATELESS ? "stateless" : "pinned");
			bad++;
		}
		ring_free(ring);
		free(ids);
		{
			struct ring *rings[LB_RING_HISTORY];
			__u32 *past_ids[LB_RING_HISTORY];

			err = image_past_rings(v, rings, past_ids);
			if (!err && lb_vip_history_compare(maps, v->id, rings, past_ids,
							   v->history_count, why, sizeof(why))) {
				kernel_say(report, arg, "VIP %s: %s", spec, why);
				bad++;
			}
			image_past_rings_free(rings, past_ids);
			if (err)
				return err;
		}
		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend slot, entry;

			if (lb_backend_read(maps, b->id, &slot))
				return -errno;
			image_backend(v, b, &entry);
			if (!image_slot_holds(&slot, &entry)) {
				kernel_say(report, arg, "VIP %s: backend %s: slot %u holds something else",
				    spec, b->name, b->id);
				bad++;
			} else if (slot.state != entry.state) {
				kernel_say(report, arg, "VIP %s: backend %s: slot %u is %s", spec, b->name,
				    b->id, lb_backend_state_name(slot.state));
				bad++;
			}
		}
	}
	{
		struct lb_config cur, c;

		image_config(want, &c);
		int err = lb_config_read(maps, &cur);

		if (err)
			return err;
		if (memcmp(&cur, &c, sizeof(c))) {
			kernel_say(report, arg, "the encapsulation settings differ from the state's");
			bad++;
		}
	}
	if (bpf_map_get_next_key(maps->vips, NULL, &next) == 0) {
		do {
			int known = 0;

			key = next;
			for (i = 0; i < want->fleet.vip_count && !known; i++) {
				struct lb_vip_key k;

				image_vip_key(&want->fleet.vips[i], &k);
				known = memcmp(&k, &key, sizeof(k)) == 0;
			}
			if (!known) {
				kernel_say(report, arg, "a VIP the state does not have is in the kernel");
				bad++;
			}
		} while (bpf_map_get_next_key(maps->vips, &key, &next) == 0);
	}
	for (id = 1; id < LB_BACKENDS_MAX; id++) {
		struct lb_backend slot;

		if (lb_backend_read(maps, id, &slot))
			return -errno;
		if (slot.state != LB_BACKEND_UNUSED && !image_backend_wanted(want, id, slot.cookie)) {
			kernel_say(report, arg, "backend slot %u is in use but no backend holds it", id);
			bad++;
		}
	}
	return bad;
}
