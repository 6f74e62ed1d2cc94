// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loads Katran's balancer object (built outside this tree: docs/testing.md)
 * and fills its maps the way Katran's userspace does for one IPv4 TCP VIP:
 * the VIP's entry, a consistent-hash table of RING_SIZE reals, the reals, the
 * next hop's MAC and an LRU flow table per CPU. Katran's sizes (its MAX_VIPS,
 * RING_SIZE) are read off the object's maps; its records are described
 * here from their sizes, and any object whose maps differ is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_katran.h"
#include "harness.h"

/* Katran's records as its maps hold them (sizes checked against the object's). */
struct katran_vip_key {
	__u8 addr[16];
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct katran_vip_meta {
	__u32 flags;
	__u32 vip_num;
};

struct katran_real {
	__u8 addr[16];
	__u8 flags;
	__u8 pad[3];
};

/* A counter pair of its stats map: per CPU, 16 octets. */
struct katran_stat {
	__u64 v1;
	__u64 v2;
};

/* Katran's flow key and flow value, by size (the harness never reads them). */
#define KATRAN_FLOW_KEY_SIZE 40
#define KATRAN_FLOW_VALUE_SIZE 16
/*
 * Its stats map holds 2 x MAX_VIPS counters; after the VIPs' own, MAX_VIPS + 1
 * counts LRU misses (v2: of TCP packets other than SYNs), MAX_VIPS + 2 the
 * rate of new connections.
 */
#define KATRAN_STAT_LRU_MISS 1
#define KATRAN_STAT_CONN_RATE 2

struct katran {
	struct bpf_object *obj;
	int prog_fd;
	int stats_fd;
	__u32 miss_key;
	__u32 rate_key;
	__u32 lru_flags;
	int cpus;
};

static struct bpf_map *map_checked(struct bpf_object *obj, const char *name, __u32 key_size,
				   __u32 value_size)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	if (!m) {
		fprintf(stderr, "katran: the object has no map '%s'\n", name);
		return NULL;
	}
	if (bpf_map__key_size(m) != key_size || bpf_map__value_size(m) != value_size) {
		fprintf(stderr, "katran: map '%s' has %u-octet keys and %u-octet values, not %u and %u\n",
			name, bpf_map__key_size(m), bpf_map__value_size(m), key_size, value_size);
		return NULL;
	}
	return m;
}

/*
 * The flags of lru_mapping's flow tables, read off its template before the
 * object is loaded (libbpf drops the template once the outer map exists).
 */
static int flow_template(struct bpf_object *obj, __u32 *flags)
{
	struct bpf_map *outer = bpf_object__find_map_by_name(obj, "lru_mapping");
	const struct bpf_map *tpl = outer ? bpf_map__inner_map(outer) : NULL;

	if (!tpl || bpf_map__type(tpl) != BPF_MAP_TYPE_LRU_HASH ||
	    bpf_map__key_size(tpl) != KATRAN_FLOW_KEY_SIZE ||
	    bpf_map__value_size(tpl) != KATRAN_FLOW_VALUE_SIZE) {
		fprintf(stderr, "katran: lru_mapping does not hold LRU flow tables of 40 and 16 octets\n");
		return -EPROTO;
	}
	*flags = bpf_map__map_flags(tpl);
	return 0;
}

/* A flow table of @flows entries for each possible CPU in lru_mapping, like its template. */
static int flow_tables_make(struct bpf_map *outer, __u32 flows, __u32 flags, int cpus)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	int cpu, fd, err = 0;

	for (cpu = 0; cpu < cpus && !err; cpu++) {
		__u32 k = (__u32)cpu;

		fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "katran_lru", KATRAN_FLOW_KEY_SIZE,
				    KATRAN_FLOW_VALUE_SIZE, flows, &o);
		if (fd < 0)
			return -errno;
		if (bpf_map_update_elem(bpf_map__fd(outer), &k, &fd, BPF_ANY))
			err = -errno;
		close(fd);
	}
	return err;
}

/* VIP 0's table of ring_size entries: real 1 .. @reals, spread by a multiplicative hash. */
static int ring_fill(struct bpf_map *ring, __u32 ring_size, __u32 reals)
{
	__u32 *keys = calloc(ring_size, sizeof(*keys)), *values = calloc(ring_size, sizeof(*values));
	__u32 i, count = ring_size;
	int err = 0;

	if (!keys || !values) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ring_size; i++) {
		keys[i] = i;
		values[i] = 1 + (__u32)(((__u64)i * 0x9e3779b97f4a7c15ull >> 32) % reals);
	}
	if (bpf_map_update_batch(bpf_map__fd(ring), keys, values, &count, NULL))
		err = -errno;
out:
	free(keys);
	free(values);
	return err;
}

static int maps_fill(struct katran *k, const struct katran_setup *s)
{
	struct bpf_map *vips, *lru, *ring, *reals, *ctl, *stats;
	struct katran_vip_key vk = { .port = s->port, .proto = 6 };
	struct katran_vip_meta meta = { 0, 0 };
	struct katran_real real = { 0 };
	__u32 max_vips, ring_size, i, zero = 0;
	__u64 mac = 0;
	int err;

	vips = map_checked(k->obj, "vip_map", sizeof(vk), sizeof(meta));
	lru = bpf_object__find_map_by_name(k->obj, "lru_mapping");
	ring = map_checked(k->obj, "ch_rings", sizeof(__u32), sizeof(__u32));
	reals = map_checked(k->obj, "reals", sizeof(__u32), sizeof(real));
	ctl = map_checked(k->obj, "ctl_array", sizeof(__u32), sizeof(mac));
	stats = map_checked(k->obj, "stats", sizeof(__u32), sizeof(struct katran_stat));
	if (!vips || !lru || !ring || !reals || !ctl || !stats)
		return -EPROTO;
	max_vips = bpf_map__max_entries(vips);
	ring_size = max_vips ? bpf_map__max_entries(ring) / max_vips : 0;
	if (!ring_size || bpf_map__max_entries(stats) != 2 * max_vips ||
	    s->reals < 1 || s->reals >= bpf_map__max_entries(reals)) {
		fprintf(stderr, "katran: its ring, stats or reals are not sized as this harness knows\n");
		return -EPROTO;
	}
	if ((__u32)k->cpus > bpf_map__max_entries(lru)) {
		fprintf(stderr, "katran: %d CPUs, and its lru_mapping holds flow tables for %u\n",
			k->cpus, bpf_map__max_entries(lru));
		return -E2BIG;
	}
	k->stats_fd = bpf_map__fd(stats);
	k->miss_key = max_vips + KATRAN_STAT_LRU_MISS;
	k->rate_key = max_vips + KATRAN_STAT_CONN_RATE;
	err = flow_tables_make(lru, s->flows, k->lru_flags, k->cpus);
	if (err)
		return err;
	memcpy(vk.addr, &s->vip, 4);
	if (bpf_map_update_elem(bpf_map__fd(vips), &vk, &meta, BPF_ANY))
		return -errno;
	memcpy(real.addr, &s->real, 4);
	for (i = 1; i <= s->reals; i++)
		if (bpf_map_update_elem(bpf_map__fd(reals), &i, &real, BPF_ANY))
			return -errno;
	memcpy(&mac, s->mac, 6);
	if (bpf_map_update_elem(bpf_map__fd(ctl), &zero, &mac, BPF_ANY))
		return -errno;
	return ring_fill(ring, ring_size, s->reals);
}

int katran_open(const char *path, const struct katran_setup *setup, struct katran **out)
{
	struct katran *k = calloc(1, sizeof(*k));
	struct bpf_program *prog;
	int err;

	if (!k)
		return -ENOMEM;
	k->cpus = libbpf_num_possible_cpus();
	if (k->cpus <= 0) {
		err = k->cpus ? k->cpus : -EINVAL;
		goto fail;
	}
	k->obj = bpf_object__open_file(path, NULL);
	if (!k->obj) {
		err = -errno;
		goto fail;
	}
	prog = bpf_object__find_program_by_name(k->obj, "balancer_ingress");
	if (!prog) {
		fprintf(stderr, "katran: %s has no program balancer_ingress\n", path);
		err = -EPROTO;
		goto fail;
	}
	err = flow_template(k->obj, &k->lru_flags);
	if (err)
		goto fail;
	if (bpf_object__load(k->obj)) {
		err = -errno;
		goto fail;
	}
	k->prog_fd = bpf_program__fd(prog);
	err = maps_fill(k, setup);
	if (err)
		goto fail;
	*out = k;
	return 0;
fail:
	katran_close(k);
	return err;
}

int katran_fd(const struct katran *k)
{
	return k->prog_fd;
}

int katran_clear_rate(struct katran *k)
{
	struct katran_stat *zero = calloc((size_t)k->cpus, sizeof(*zero));
	int err = 0;

	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(k->stats_fd, &k->rate_key, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

__u64 katran_misses(const struct katran *k)
{
	return harness_percpu_sum(k->stats_fd, k->miss_key, 2, 1);
}

void katran_close(struct katran *k)
{
	if (!k)
		return;
	bpf_object__close(k->obj);
	free(k);
}
