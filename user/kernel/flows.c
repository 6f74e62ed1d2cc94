// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flow table counted per backend: live and closing flows within an idle
 * time, only for the backend each flow was pinned to.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <bpf/bpf.h>

#include "image.h"
#include "ring.h"


/* Flow table entries read per batch call. */
#define FLOW_BATCH 4096

/*
 * Count the flow table's entries per backend. A batch walk, by hash bucket:
 * a key-by-key walk restarts from the first key when the program evicts the
 * key it stands on, and may never end on a busy table.
 */
int kernel_flow_tally(const struct lb_maps *maps, const struct state *s, __u64 idle_ns,
		   struct kernel_tally *t)
{
	struct lb_flow_key *keys = calloc(FLOW_BATCH, sizeof(*keys));
	struct lb_flow *values = calloc(FLOW_BATCH, sizeof(*values));
	__u64 *cookie_of = calloc(LB_BACKENDS_MAX, sizeof(*cookie_of));
	__u32 *vip_of = calloc(LB_BACKENDS_MAX, sizeof(*vip_of));
	__u32 in_batch = 0, out_batch = 0, count, n;
	struct timespec now;
	__u64 now_ns;
	size_t i, j;
	int err = 0, first = 1;

	memset(t, 0, sizeof(*t));
	if (!keys || !values || !cookie_of || !vip_of) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++) {
			cookie_of[s->fleet.vips[i].backends[j].id] = s->fleet.vips[i].backends[j].cookie;
			vip_of[s->fleet.vips[i].backends[j].id] = s->fleet.vips[i].id;
		}
	clock_gettime(CLOCK_MONOTONIC, &now);
	now_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		count = FLOW_BATCH;
		err = bpf_map_lookup_batch(maps->flows, first ? NULL : &in_batch, &out_batch, keys,
					   values, &count, &opts);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		t->entries += count;
		for (n = 0; n < count; n++) {
			const struct lb_flow *f = &values[n];

			/* Only the backend it was pinned to; cookies are never 0. */
			if (f->backend_id >= LB_BACKENDS_MAX || !cookie_of[f->backend_id] ||
			    cookie_of[f->backend_id] != f->backend_cookie ||
			    vip_of[f->backend_id] != f->vip_id)
				continue;
			/* Touched at most once a second, so allow that much slack. */
			if (now_ns > f->last_seen_ns + idle_ns + LB_FLOW_TOUCH_NS)
				continue;
			t->live[f->backend_id]++;
			if (f->flags & (LB_FLOW_FIN | LB_FLOW_RST))
				t->closing[f->backend_id]++;
		}
		if (err) { /* ENOENT: the walk is over */
			err = 0;
			break;
		}
		in_batch = out_batch;
		first = 0;
	}
out:
	free(keys);
	free(values);
	free(cookie_of);
	free(vip_of);
	return err;
}
