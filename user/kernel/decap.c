// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend side's program and maps: see decap.h. Replacing the prefix
 * and address sets deletes what is no longer wanted only after adding what
 * is: a frame from a trusted source is never refused in between. The VIP
 * slots likewise: a VIP that stays keeps its slot, a new one takes a slot
 * of its window that holds no wanted VIP, and unwanted ones are cleared
 * last.
 */
#include "decap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "decap.skel.h"
#include "host.h"

#define LOCAL_ADDRS_MAX 1024
/* The maps struct decap_maps holds. */
#define DECAP_MAPS 5

#define LB_DECAP_REASON_NAME(id, name, what) [LB_DECAP_##id] = name,
const char *const decap_reason_names[LB_DECAP_REASON_COUNT] = {
	LB_DECAP_REASONS(LB_DECAP_REASON_NAME)
};
#undef LB_DECAP_REASON_NAME

int decap_load(const char *pin_dir)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_dir);
	struct decap_bpf *skel = decap_bpf__open_opts(&opts);
	int fd, err;

	if (!skel)
		return -errno;
	err = decap_bpf__load(skel);
	if (err) {
		decap_bpf__destroy(skel);
		return err < 0 ? err : -EINVAL;
	}
	fd = dup(bpf_program__fd(skel->progs.ringlb_decap));
	err = fd < 0 ? -errno : fd;
	decap_bpf__destroy(skel);
	return err;
}

int decap_maps_open(struct decap_maps *m, const char *pin_dir)
{
	static const char *const names[] = { "decap_from", "decap_local", "decap_vip",
					     "decap_config", "decap_stats" };
	int *fds[] = { &m->from, &m->local, &m->vip, &m->config, &m->stats };
	char path[PATH_MAX];
	size_t i;
	int err;

	for (i = 0; i < DECAP_MAPS; i++)
		*fds[i] = -1;
	for (i = 0; i < DECAP_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			err = -errno;
			decap_maps_close(m);
			return err;
		}
	}
	return 0;
}

void decap_maps_close(struct decap_maps *m)
{
	int *fds[] = { &m->from, &m->local, &m->vip, &m->config, &m->stats };
	size_t i;

	for (i = 0; i < DECAP_MAPS; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static void key_of(struct lb_decap_from_key *k, const struct addr *a, unsigned int len)
{
	memset(k, 0, sizeof(*k));
	k->family = (__u8)a->family;
	k->prefixlen = len;
	memcpy(k->addr, a->bytes, a->family == LB_FAMILY_IPV4 ? 4 : 16);
}

/*
 * Make the map hold exactly @keys: add them all, then delete what else it
 * holds. LPM tries iterate with get_next_key too.
 */
static int set_replace(int fd, const struct lb_decap_from_key *keys, size_t count)
{
	struct lb_decap_from_key key, next, *stale = NULL;
	size_t i, n = 0, cap = 0;
	__u8 one = 1;
	int err = 0;

	for (i = 0; i < count; i++)
		if (bpf_map_update_elem(fd, &keys[i], &one, BPF_ANY))
			return -errno;
	if (bpf_map_get_next_key(fd, NULL, &next) == 0) {
		do {
			int wanted = 0;

			key = next;
			for (i = 0; i < count && !wanted; i++)
				wanted = memcmp(&keys[i], &key, sizeof(key)) == 0;
			if (!wanted) {
				if (n == cap) {
					struct lb_decap_from_key *more;

					cap = cap ? 2 * cap : 16;
					more = realloc(stale, cap * sizeof(*more));
					if (!more) {
						free(stale);
						return -ENOMEM;
					}
					stale = more;
				}
				stale[n++] = key;
			}
		} while (bpf_map_get_next_key(fd, &key, &next) == 0);
	}
	for (i = 0; i < n && !err; i++)
		if (bpf_map_delete_elem(fd, &stale[i]) && errno != ENOENT)
			err = -errno;
	free(stale);
	return err;
}

static void vip_of(struct lb_decap_vip *v, const struct addr *a)
{
	memset(v, 0, sizeof(*v));
	v->family = (__u8)a->family;
	memcpy(v->addr, a->bytes, a->family == LB_FAMILY_IPV4 ? 4 : 16);
}

int decap_vips_set(int fd, const struct addr *vips, size_t count)
{
	struct lb_decap_vip *now, *want, empty = { 0 };
	unsigned char *kept;
	__u32 slot, i, home, k;
	size_t n;
	int err = 0;

	if (count > LB_DECAP_VIPS_MAX)
		return -E2BIG;
	now = calloc(LB_DECAP_VIP_SLOTS, sizeof(*now));
	want = calloc(LB_DECAP_VIP_SLOTS, sizeof(*want));
	kept = calloc(LB_DECAP_VIP_SLOTS, 1);
	if (!now || !want || !kept) {
		err = -ENOMEM;
		goto out;
	}
	for (slot = 0; slot < LB_DECAP_VIP_SLOTS && !err; slot++)
		if (bpf_map_lookup_elem(fd, &slot, &now[slot]))
			err = -errno;
	/* Those that stay, where they are; then the others, each in a slot of its window. */
	for (n = 0; n < count && !err; n++) {
		struct lb_decap_vip v;

		vip_of(&v, &vips[n]);
		home = lb_decap_vip_home(v.family, v.addr);
		for (i = 0; i < LB_DECAP_VIP_PROBES; i++) {
			slot = (home + i) & (LB_DECAP_VIP_SLOTS - 1);
			if (!memcmp(&now[slot], &v, sizeof(v))) {
				want[slot] = v;
				kept[slot] = 1;
				break;
			}
		}
	}
	for (n = 0; n < count && !err; n++) {
		struct lb_decap_vip v;
		int placed = 0;

		vip_of(&v, &vips[n]);
		home = lb_decap_vip_home(v.family, v.addr);
		for (i = 0; i < LB_DECAP_VIP_PROBES && !placed; i++) {
			slot = (home + i) & (LB_DECAP_VIP_SLOTS - 1);
			placed = !memcmp(&want[slot], &v, sizeof(v));
		}
		for (i = 0; i < LB_DECAP_VIP_PROBES && !placed; i++) {
			slot = (home + i) & (LB_DECAP_VIP_SLOTS - 1);
			if (!want[slot].family) {
				want[slot] = v;
				placed = 1;
			}
		}
		if (!placed)
			err = -ENOSPC;
	}
	for (k = 0; k < 2 && !err; k++)
		for (slot = 0; slot < LB_DECAP_VIP_SLOTS && !err; slot++) {
			/* First the wanted VIPs that are new, then the slots no longer wanted. */
			int write = k == 0 ? want[slot].family && !kept[slot] :
					     !want[slot].family && now[slot].family;

			if (write && bpf_map_update_elem(fd, &slot, k == 0 ? &want[slot] : &empty,
							 BPF_ANY))
				err = -errno;
		}
out:
	free(now);
	free(want);
	free(kept);
	return err;
}

int decap_configure(const struct decap_maps *m, const struct decap_prefix *prefixes,
		    size_t count, const struct addr *vips, size_t vip_count, __u16 gue_port)
{
	struct lb_decap_config cfg = { .gue_port = htons(gue_port) };
	struct lb_decap_from_key *keys;
	struct addr *addrs;
	size_t i, n;
	__u32 zero = 0;
	int err;

	if (vip_count > LB_DECAP_VIPS_MAX)
		return -E2BIG;
	keys = calloc(count + vip_count + LOCAL_ADDRS_MAX + 1, sizeof(*keys));
	addrs = calloc(LOCAL_ADDRS_MAX, sizeof(*addrs));
	if (!keys || !addrs) {
		free(keys);
		free(addrs);
		return -ENOMEM;
	}
	for (i = 0; i < count; i++)
		key_of(&keys[i], &prefixes[i].addr, 32 + prefixes[i].len);
	/* The VIPs first: a set that cannot be placed changes nothing. */
	err = decap_vips_set(m->vip, vips, vip_count);
	if (!err)
		err = set_replace(m->from, keys, count);
	if (!err)
		err = host_addrs(addrs, LOCAL_ADDRS_MAX, &n);
	if (!err) {
		for (i = 0; i < n; i++)
			key_of(&keys[i], &addrs[i], 0);
		err = set_replace(m->local, keys, n);
	}
	if (!err && bpf_map_update_elem(m->config, &zero, &cfg, BPF_ANY))
		err = -errno;
	free(keys);
	free(addrs);
	return err;
}

int decap_counters(const struct decap_maps *m, __u32 r, __u64 *packets, __u64 *bytes)
{
	int cpus = libbpf_num_possible_cpus(), c;
	struct lb_counters *v;

	*packets = *bytes = 0;
	if (cpus <= 0)
		return -EINVAL;
	v = calloc((size_t)cpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->stats, &r, v)) {
		free(v);
		return -errno;
	}
	for (c = 0; c < cpus; c++) {
		*packets += v[c].packets;
		*bytes += v[c].bytes;
	}
	free(v);
	return 0;
}
