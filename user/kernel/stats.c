// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the data path counted, as one model: `ringlb stats --json` prints it
 * and the daemon's /metrics renders it, so the two always agree.
 */
#include "stats.h"

#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lb.h"

/* Sum a per-CPU value of @words 64-bit counters. */
static int percpu_sum(int fd, __u32 key, size_t words, __u64 *sum)
{
	int cpus = libbpf_num_possible_cpus(), cpu;
	__u64 *values;
	size_t w;

	for (w = 0; w < words; w++)
		sum[w] = 0;
	if (cpus <= 0)
		return -EINVAL;
	values = calloc((size_t)cpus * words, sizeof(__u64));
	if (!values)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, values)) {
		free(values);
		return -errno;
	}
	for (cpu = 0; cpu < cpus; cpu++)
		for (w = 0; w < words; w++)
			sum[w] += values[(size_t)cpu * words + w];
	free(values);
	return 0;
}

/* Word @word of a per-CPU value of @words words, summed (0 when unreadable). */
static __u64 percpu_sum_word(int fd, __u32 key, size_t words, size_t word)
{
	__u64 sum[4] = { 0, 0, 0, 0 };

	if (words > 4 || percpu_sum(fd, key, words, sum))
		return 0;
	return sum[word];
}

static json_t *stats_vip(const struct state_vip *vp, const struct lb_maps *maps,
			 const struct kernel_tally *tally)
{
	json_t *backends = json_array();
	char spec[ADDR_TEXT_MAX];
	__u64 vc[2], rc[2] = { 0, 0 };
	json_t *o;
	size_t j;

	vip_format(&vp->spec, spec);
	percpu_sum(maps->vip_stats, vp->id, 2, vc);
	percpu_sum(maps->vip_refused, vp->id, 2, rc);
	for (j = 0; j < vp->backend_count; j++) {
		const struct state_backend *b = &vp->backends[j];
		__u64 bc[3];

		percpu_sum(maps->backend_stats, b->id, 3, bc);
		json_array_append_new(backends, json_pack(
			"{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name", b->name, "state",
			state_backend_state(b), "packets", (json_int_t)bc[0], "bytes", (json_int_t)bc[1],
			"new_flows", (json_int_t)bc[2], "live_flows", (json_int_t)tally->live[b->id],
			"closing_flows", (json_int_t)tally->closing[b->id]));
	}
	o = json_pack("{s:s, s:I, s:I, s:o}", "vip", spec, "packets", (json_int_t)vc[0], "bytes",
		      (json_int_t)vc[1], "backends", backends);
	/* Frames its source ranges refused: only for a VIP with ranges, or that had some. */
	if (o && (vp->source_count || rc[0]))
		json_object_set_new(o, "refused", json_pack("{s:I, s:I}", "packets",
							    (json_int_t)rc[0], "bytes",
							    (json_int_t)rc[1]));
	return o;
}

int kernel_stats(const struct lb_maps *maps, const struct state *s, __u32 idle_s, json_t **out)
{
	/* Two counters per backend slot: too big for the stack. */
	struct kernel_tally *tally = calloc(1, sizeof(*tally));
	struct bpf_map_info info = { 0 };
	__u32 info_len = sizeof(info), r;
	json_t *vips, *reasons;
	__u64 unpinned, next_hops[2];
	size_t i;
	int err;

	*out = NULL;
	if (!tally)
		return -ENOMEM;
	err = kernel_flow_tally(maps, s, (__u64)idle_s * 1000000000ull, tally);
	vips = json_array();
	for (i = 0; i < s->fleet.vip_count; i++)
		json_array_append_new(vips, stats_vip(&s->fleet.vips[i], maps, tally));
	reasons = json_object();
	for (r = 0; r < LB_REASON_COUNT; r++) {
		__u64 rc[2];

		percpu_sum(maps->reason_stats, r, 2, rc);
		json_object_set_new(reasons, lb_reasons[r].name,
				    json_pack("{s:I, s:I}", "packets", (json_int_t)rc[0], "bytes",
					      (json_int_t)rc[1]));
	}
	unpinned = percpu_sum_word(maps->flow_rate, 0, 3, 2);
	if (bpf_obj_get_info_by_fd(maps->flows, &info, &info_len))
		info.max_entries = 0;
	percpu_sum(maps->next_hop_stats, 0, 2, next_hops);
	*out = json_pack("{s:o, s:o, s:I, s:I, s:I, s:I, s:{s:I, s:I}}", "vips", vips, "reasons",
			 reasons, "idle_seconds", (json_int_t)idle_s, "new_flows_unpinned",
			 (json_int_t)unpinned, "flow_table_entries", (json_int_t)tally->entries,
			 "flow_table_size", (json_int_t)info.max_entries * LB_FLOW_WAYS, "next_hops", "cached",
			 (json_int_t)next_hops[0], "looked_up", (json_int_t)next_hops[1]);
	free(tally);
	return *out ? err : -ENOMEM;
}
