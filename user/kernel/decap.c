// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend side's program and maps: see decap.h. Replacing the prefix
 * set deletes what is no longer wanted only after adding what is: a frame
 * from a trusted source is never refused in between. The address slots
 * likewise (the VIPs', the host's own): an address that stays keeps its
 * slot, a new one takes a slot of its window that holds no wanted address,
 * and unwanted ones are cleared last. The hash of the host's addresses is
 * pruned first (decap_self_set()), an address that stays never leaving it.
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

/* The maps struct decap_maps holds. */
#define DECAP_MAPS 6

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
	static const char *const names[] = { "decap_from", "decap_local", "decap_self",
					     "decap_vip", "decap_config", "decap_stats" };
	int *fds[] = { &m->from, &m->local, &m->self, &m->vip, &m->config, &m->stats };
	char path[PATH_MAX];
	size_t i;
	int err;

	for (i = 0; i < DECAP_MAPS; i++)
		*fds[i] = -1;
	for (i = 0; i < DECAP_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		*fds[i] = bpf_obj_get(path);
		/* A program of an earlier build has no slots of its own addresses. */
		if (*fds[i] < 0 && errno == ENOENT && fds[i] == &m->self) {
			*fds[i] = -1;
			continue;
		}
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
	int *fds[] = { &m->from, &m->local, &m->self, &m->vip, &m->config, &m->stats };
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

/* Add every one of @keys to map @fd. */
static int set_add(int fd, const struct lb_decap_from_key *keys, size_t count)
{
	size_t i;
	__u8 one = 1;

	for (i = 0; i < count; i++)
		if (bpf_map_update_elem(fd, &keys[i], &one, BPF_ANY))
			return -errno;
	return 0;
}

/* Delete from map @fd every key that is not one of @keys. LPM tries iterate with get_next_key too. */
static int set_prune(int fd, const struct lb_decap_from_key *keys, size_t count)
{
	struct lb_decap_from_key key, next, *stale = NULL;
	size_t i, n = 0, cap = 0;
	int err = 0;

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

/* Make the map hold exactly @keys: add them all, then delete what else it holds. */
static int set_replace(int fd, const struct lb_decap_from_key *keys, size_t count)
{
	return set_add(fd, keys, count) ?: set_prune(fd, keys, count);
}

static void slot_of(struct lb_decap_vip *v, const struct addr *a)
{
	memset(v, 0, sizeof(*v));
	v->family = (__u8)a->family;
	memcpy(v->addr, a->bytes, a->family == LB_FAMILY_IPV4 ? 4 : 16);
}

/*
 * struct slots - a map of 2^@bits address slots (struct lb_decap_vip) as it
 * is (@now) and as it is wanted (@want), @kept the slots that hold the same
 * address in both, @unplaced how many addresses found no slot in their window.
 */
struct slots {
	int fd;
	__u32 bits;
	struct lb_decap_vip *now, *want;
	unsigned char *kept;
	size_t unplaced;
};

static void slots_free(struct slots *p)
{
	free(p->now);
	free(p->want);
	free(p->kept);
}

/*
 * Plan map @fd's slots for the @count addresses of @addrs: those already in
 * their window stay where they are, the others take a free slot of theirs.
 */
static int slots_plan(struct slots *p, int fd, __u32 bits, const struct addr *addrs, size_t count)
{
	__u32 n_slots = 1u << bits, mask = n_slots - 1, slot, i, home;
	struct lb_decap_vip v;
	size_t n;
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->bits = bits;
	p->now = calloc(n_slots, sizeof(*p->now));
	p->want = calloc(n_slots, sizeof(*p->want));
	p->kept = calloc(n_slots, 1);
	if (!p->now || !p->want || !p->kept) {
		slots_free(p);
		return -ENOMEM;
	}
	for (slot = 0; slot < n_slots && !err; slot++)
		if (bpf_map_lookup_elem(fd, &slot, &p->now[slot]))
			err = -errno;
	for (n = 0; n < count && !err; n++) {
		slot_of(&v, &addrs[n]);
		home = lb_decap_home(v.family, v.addr, bits);
		for (i = 0; i < LB_DECAP_VIP_PROBES; i++) {
			slot = (home + i) & mask;
			if (!memcmp(&p->now[slot], &v, sizeof(v))) {
				p->want[slot] = v;
				p->kept[slot] = 1;
				break;
			}
		}
	}
	for (n = 0; n < count && !err; n++) {
		int placed = 0;

		slot_of(&v, &addrs[n]);
		home = lb_decap_home(v.family, v.addr, bits);
		for (i = 0; i < LB_DECAP_VIP_PROBES && !placed; i++)
			placed = !memcmp(&p->want[(home + i) & mask], &v, sizeof(v));
		for (i = 0; i < LB_DECAP_VIP_PROBES && !placed; i++) {
			slot = (home + i) & mask;
			if (!p->want[slot].family) {
				p->want[slot] = v;
				placed = 1;
			}
		}
		p->unplaced += !placed;
	}
	if (err)
		slots_free(p);
	return err;
}

/* Write the planned slots: the wanted addresses that are new (@clear 0), or clear the others (1). */
static int slots_write(const struct slots *p, int clear)
{
	static const struct lb_decap_vip empty;
	__u32 slot;

	for (slot = 0; slot < 1u << p->bits; slot++) {
		int write = !clear ? p->want[slot].family && !p->kept[slot] :
				     !p->want[slot].family && p->now[slot].family;

		if (write && bpf_map_update_elem(p->fd, &slot, clear ? &empty : &p->want[slot],
						 BPF_ANY))
			return -errno;
	}
	return 0;
}

int decap_vips_set(int fd, const struct addr *vips, size_t count)
{
	struct slots p;
	int err;

	if (count > LB_DECAP_VIPS_MAX)
		return -E2BIG;
	err = slots_plan(&p, fd, LB_DECAP_VIP_SLOT_BITS, vips, count);
	if (err)
		return err;
	err = p.unplaced ? -ENOSPC : slots_write(&p, 0) ?: slots_write(&p, 1);
	slots_free(&p);
	return err;
}

/* Set the flags @set and clear @clear in map @fd's settings, the rest as they are. */
static int self_flags(int fd, __u8 set, __u8 clear)
{
	struct lb_decap_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	/*
	 * Only the flags this build keeps true survive: one a later build set
	 * would vouch for maps this build does not keep (as an earlier build's
	 * whole write clears LB_DECAP_SELF_CURRENT).
	 */
	cfg.flags = (__u8)(((cfg.flags & ~clear) | set) &
			   (LB_DECAP_SELF_CURRENT | LB_DECAP_SELF_WHOLE));
	memset(cfg.pad, 0, sizeof(cfg.pad));
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

int decap_self_set(const struct decap_maps *m, const struct addr *addrs, size_t count)
{
	struct lb_decap_from_key *keys;
	struct slots p;
	size_t i;
	int err;

	if (count > LB_DECAP_SELF_MAX)
		return -E2BIG;
	/* decap_load() pins decap_self: only decap status opens a directory without it. */
	if (m->self < 0)
		return -ENOENT;
	keys = calloc(count + 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		key_of(&keys[i], &addrs[i], 0);
	err = slots_plan(&p, m->self, LB_DECAP_SELF_SLOT_BITS, addrs, count);
	if (err) {
		free(keys);
		return err;
	}
	/*
	 * The host's set is the slots (when LB_DECAP_SELF_CURRENT says they are
	 * current), and the hash unless the slots are whole. An address that
	 * stays is in both (or the hash) throughout, so a frame to it is never
	 * refused in between. The hash, which holds them all, is pruned before
	 * it takes the new ones, so a whole new set fits in it. Slots a
	 * controller of an earlier build left (the flags clear) are made
	 * current before they are read again.
	 */
	err = (p.unplaced ? self_flags(m->config, 0, LB_DECAP_SELF_WHOLE) : 0) ?:
	      slots_write(&p, 0) ?: set_prune(m->local, keys, count) ?:
	      set_add(m->local, keys, count) ?: slots_write(&p, 1) ?:
	      self_flags(m->config, LB_DECAP_SELF_CURRENT | (p.unplaced ? 0 : LB_DECAP_SELF_WHOLE), 0);
	slots_free(&p);
	free(keys);
	return err;
}

int decap_configure(const struct decap_maps *m, const struct decap_prefix *prefixes,
		    size_t count, const struct addr *vips, size_t vip_count, __u16 gue_port)
{
	struct lb_decap_config cfg;
	struct lb_decap_from_key *keys;
	struct addr *addrs;
	size_t i, n;
	__u32 zero = 0;
	int err;

	if (vip_count > LB_DECAP_VIPS_MAX)
		return -E2BIG;
	keys = calloc(count + 1, sizeof(*keys));
	addrs = calloc(LB_DECAP_SELF_MAX, sizeof(*addrs));
	if (!keys || !addrs) {
		free(keys);
		free(addrs);
		return -ENOMEM;
	}
	for (i = 0; i < count; i++)
		key_of(&keys[i], &prefixes[i].addr, 32 + prefixes[i].len);
	/*
	 * The host's addresses read, then the VIPs placed, before anything is
	 * written: a host of too many addresses, or a VIP set that cannot be
	 * placed, changes nothing.
	 */
	err = host_addrs(addrs, LB_DECAP_SELF_MAX, &n);
	/* The host's own count, told apart from a full map's E2BIG. */
	if (err == -E2BIG)
		err = -EOVERFLOW;
	if (!err)
		err = decap_vips_set(m->vip, vips, vip_count);
	if (!err)
		err = set_replace(m->from, keys, count);
	if (!err)
		err = decap_self_set(m, addrs, n);
	/* GUE's port, the flag decap_self_set() keeps as it is. */
	if (!err && bpf_map_lookup_elem(m->config, &zero, &cfg))
		err = -errno;
	if (!err) {
		cfg.gue_port = htons(gue_port);
		if (bpf_map_update_elem(m->config, &zero, &cfg, BPF_ANY))
			err = -errno;
	}
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
