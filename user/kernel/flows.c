// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flow table: counted per backend (live and closing flows within an
 * idle time, only for the backend each flow was pinned to), read whole for
 * `ringlb flows`, entries deleted, and idle entries expired (the daemon's
 * sweep, so the table's occupancy is the flows that are live).
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
 * Call @fn for every entry of the flow table, a batch of at most FLOW_BATCH
 * at a time. A batch walk, by hash bucket: a key-by-key walk restarts from
 * the first key when the program evicts the key it stands on, and may never
 * end on a busy table. @fn returns 0 to go on, or -errno to stop.
 */
static int flows_walk(const struct lb_maps *maps,
		      int (*fn)(const struct lb_flow_key *keys, const struct lb_flow *values,
				__u32 count, void *arg),
		      void *arg)
{
	struct lb_flow_key *keys = calloc(FLOW_BATCH, sizeof(*keys));
	struct lb_flow *values = calloc(FLOW_BATCH, sizeof(*values));
	__u32 in_batch = 0, out_batch = 0, count;
	int err = 0, first = 1, last;

	if (!keys || !values) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		count = FLOW_BATCH;
		last = bpf_map_lookup_batch(maps->flows, first ? NULL : &in_batch, &out_batch, keys,
					    values, &count, &opts);
		if (last && errno != ENOENT) {
			err = -errno;
			break;
		}
		err = fn(keys, values, count, arg);
		if (err || last) /* last: ENOENT, the walk is over */
			break;
		in_batch = out_batch;
		first = 0;
	}
out:
	free(keys);
	free(values);
	return err;
}

/* When @f last saw a packet, in the coarse clock's nanoseconds (its seconds kept whole). */
static __u64 flow_last_seen_ns(const struct lb_flow *f)
{
	return (__u64)f->last_seen_s * LB_NS_PER_S;
}

__u64 kernel_now_ns(void)
{
	struct timespec now;

	/* bpf_ktime_get_coarse_ns() counts CLOCK_MONOTONIC, coarsely. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
}

struct tally_walk {
	const __u64 *cookie_of;
	__u64 now_ns, idle_ns;
	struct kernel_tally *t;
};

static int tally_batch(const struct lb_flow_key *keys, const struct lb_flow *values, __u32 count,
		       void *arg)
{
	struct tally_walk *w = arg;
	__u32 n;

	(void)keys;
	w->t->entries += count;
	for (n = 0; n < count; n++) {
		const struct lb_flow *f = &values[n];
		__u32 id = lb_flow_slot(f);

		/* Only the backend it was pinned to; cookies are never 0. */
		if (id >= LB_BACKENDS_MAX || !w->cookie_of[id] ||
		    !lb_flow_cookie_is(f, w->cookie_of[id]))
			continue;
		/* Touched at most once a second, so allow that much slack. */
		if (w->now_ns > flow_last_seen_ns(f) + w->idle_ns + LB_FLOW_TOUCH_NS)
			continue;
		w->t->live[id]++;
		if (lb_flow_flags(f) & (LB_FLOW_FIN | LB_FLOW_RST))
			w->t->closing[id]++;
	}
	return 0;
}

/* Count the flow table's entries per backend. */
int kernel_flow_tally(const struct lb_maps *maps, const struct state *s, __u64 idle_ns,
		   struct kernel_tally *t)
{
	__u64 *cookie_of = calloc(LB_BACKENDS_MAX, sizeof(*cookie_of));
	struct tally_walk w = { cookie_of, kernel_now_ns(), idle_ns, t };
	size_t i, j;
	int err;

	memset(t, 0, sizeof(*t));
	if (!cookie_of)
		return -ENOMEM;
	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++)
			cookie_of[s->fleet.vips[i].backends[j].id] = s->fleet.vips[i].backends[j].cookie;
	err = flows_walk(maps, tally_batch, &w);
	free(cookie_of);
	return err;
}

struct read_walk {
	struct kernel_flow *all;
	size_t count, room;
};

static int read_batch(const struct lb_flow_key *keys, const struct lb_flow *values, __u32 count,
		      void *arg)
{
	struct read_walk *w = arg;
	struct kernel_flow *grown;
	__u32 n;

	if (w->count + count > w->room) {
		size_t room = w->room ? w->room : FLOW_BATCH;

		while (room < w->count + count)
			room *= 2;
		grown = realloc(w->all, room * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		w->all = grown;
		w->room = room;
	}
	for (n = 0; n < count; n++) {
		w->all[w->count].key = keys[n];
		w->all[w->count++].value = values[n];
	}
	return 0;
}

int kernel_flows_read(const struct lb_maps *maps, struct kernel_flow **out, size_t *count)
{
	struct read_walk w = { 0 };
	int err = flows_walk(maps, read_batch, &w);

	if (err) {
		free(w.all);
		return err;
	}
	*out = w.all;
	*count = w.count;
	return 0;
}

int kernel_flows_delete(const struct lb_maps *maps, const struct lb_flow_key *keys, size_t count,
			size_t *deleted)
{
	size_t i;

	*deleted = 0;
	/* One by one: a batch delete stops at the first key a packet's eviction took. */
	for (i = 0; i < count; i++) {
		if (bpf_map_delete_elem(maps->flows, &keys[i]) == 0)
			(*deleted)++;
		else if (errno != ENOENT)
			return -errno;
	}
	return 0;
}

struct expire_walk {
	const struct lb_maps *maps;
	__u64 now_ns, open_ns, closed_ns;
	struct lb_flow_key *doomed;
	size_t doomed_count, doomed_room;
	size_t seen;
};

static int expire_batch(const struct lb_flow_key *keys, const struct lb_flow *values, __u32 count,
			void *arg)
{
	struct expire_walk *w = arg;
	struct lb_flow_key *grown;
	__u32 n;

	w->seen += count;
	for (n = 0; n < count; n++) {
		const struct lb_flow *f = &values[n];
		__u64 timeout = lb_flow_flags(f) & (LB_FLOW_FIN | LB_FLOW_RST) ? w->closed_ns :
										 w->open_ns;

		/* Touched at most once a second, so allow that much slack. */
		if (w->now_ns <= flow_last_seen_ns(f) + timeout + LB_FLOW_TOUCH_NS)
			continue;
		if (w->doomed_count == w->doomed_room) {
			w->doomed_room = w->doomed_room ? 2 * w->doomed_room : FLOW_BATCH;
			grown = realloc(w->doomed, w->doomed_room * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			w->doomed = grown;
		}
		w->doomed[w->doomed_count++] = keys[n];
	}
	return 0;
}

int kernel_flows_expire(const struct lb_maps *maps, __u64 open_ns, __u64 closed_ns,
			struct kernel_expiry *x)
{
	struct expire_walk w = { maps, kernel_now_ns(), open_ns, closed_ns, NULL, 0, 0, 0 };
	int err;

	memset(x, 0, sizeof(*x));
	err = flows_walk(maps, expire_batch, &w);
	/* Deleted after the walk: deleting during it would move the walk's buckets. */
	if (!err)
		err = kernel_flows_delete(maps, w.doomed, w.doomed_count, &x->removed);
	x->seen = w.seen;
	free(w.doomed);
	return err;
}
