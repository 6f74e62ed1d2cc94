// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maps "source_sets" and "source_heads" (lb.h): reading the set in one slot
 * of a VIP, placing a new one there (a fresh inner map, written whole before
 * the slot names it, and its head) and emptying a slot. The swap that makes a set serve is
 * lb_vip_sources_swap() (lb_rings.c, beside the other VIP value changes and
 * their waits).
 */
#include "lb.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

static int set_slot(__u32 vip_id, __u8 parity, __u32 *slot)
{
	if (vip_id >= LB_VIPS_MAX || parity > 1)
		return -ERANGE;
	*slot = LB_SOURCE_SET_SLOT(vip_id, parity);
	return 0;
}

int lb_source_set_read(const struct lb_maps *maps, __u32 vip_id, __u8 parity,
		       struct lb_source_set *out)
{
	__u32 slot, inner_id, zero = 0;
	struct lb_source_head head;
	int err, fd;

	err = set_slot(vip_id, parity, &slot);
	if (err)
		return err;
	if (bpf_map_lookup_elem(maps->source_sets, &slot, &inner_id))
		return -errno;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		/* Replaced between the two calls: the slot names another map now. */
		return errno == ENOENT ? -EAGAIN : -errno;
	err = bpf_map_lookup_elem(fd, &zero, out) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (bpf_map_lookup_elem(maps->source_heads, &slot, &head))
		return -errno;
	/* A head that is not the set's own answers some clients otherwise: no set is so. */
	if (memcmp(&head, &out->head, sizeof(head)))
		out->head.count = 0;
	return 0;
}

int lb_source_set_place(const struct lb_maps *maps, __u32 vip_id, __u8 parity,
			const struct lb_source_set *set)
{
	static const struct lb_source_head none;
	__u32 slot, zero = 0;
	int err, fd;

	err = set_slot(vip_id, parity, &slot);
	if (err)
		return err;
	/*
	 * The head goes before the set and comes after it, so a head is only
	 * ever written while its slot holds a set: after a change from a known
	 * state, kernel_sync() finds what to sweep by the sets alone.
	 */
	if (!set) {
		if (bpf_map_update_elem(maps->source_heads, &slot, &none, BPF_ANY))
			return -errno;
		return bpf_map_delete_elem(maps->source_sets, &slot) && errno != ENOENT ? -errno : 0;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "source_set", sizeof(__u32), sizeof(*set), 1, NULL);
	if (fd < 0)
		return -errno;
	err = bpf_map_update_elem(fd, &zero, set, BPF_ANY) ||
			      bpf_map_update_elem(maps->source_sets, &slot, &fd, BPF_ANY) ||
			      bpf_map_update_elem(maps->source_heads, &slot, &set->head, BPF_ANY) ?
		      -errno :
		      0;
	close(fd);
	return err;
}
