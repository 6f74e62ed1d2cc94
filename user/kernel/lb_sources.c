// SPDX-License-Identifier: GPL-2.0-only
/*
 * Map "sources" (lb.h): reading its elements, making one VIP's set under
 * one parity exactly what is wanted, and deleting what no VIP value names.
 * The swap that makes a set serve is lb_vip_sources_swap() (lb_rings.c,
 * beside the other VIP value changes and their waits).
 */
#include "lb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

int lb_sources_read(const struct lb_maps *maps, struct lb_source_entry **out, size_t *count)
{
	struct lb_source_entry *all = NULL, *grown;
	struct lb_source_key key, next;
	size_t room = 0, n = 0;
	int err = 0, first = 1;

	*out = NULL;
	*count = 0;
	for (;;) {
		if (bpf_map_get_next_key(maps->sources, first ? NULL : &key, &next)) {
			if (errno != ENOENT)
				err = -errno;
			break;
		}
		first = 0;
		key = next;
		if (n == room) {
			room = room ? 2 * room : 256;
			grown = realloc(all, room * sizeof(*all));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			all = grown;
		}
		if (bpf_map_lookup_elem(maps->sources, &key, &all[n].value)) {
			/* Deleted between the two calls: nothing to count. */
			if (errno == ENOENT)
				continue;
			err = -errno;
			break;
		}
		all[n++].key = key;
		if (n > LB_SOURCES_ENTRIES) {
			err = -EOVERFLOW;
			break;
		}
	}
	if (err) {
		free(all);
		return err;
	}
	*out = all;
	*count = n;
	return 0;
}

static int same_key(const struct lb_source_key *a, const struct lb_source_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

int lb_sources_make(const struct lb_maps *maps, __u32 vip_id, __u8 parity,
		    const struct lb_source_entry *entries, size_t count,
		    const struct lb_source_entry *have, size_t have_count)
{
	struct lb_source_entry *read = NULL;
	size_t i, j;
	int err = 0;

	if (!have) {
		err = lb_sources_read(maps, &read, &have_count);
		if (err)
			return err;
		have = read;
	}
	for (i = 0; i < have_count && !err; i++) {
		if (have[i].key.vip_id != vip_id || have[i].key.parity != parity)
			continue;
		for (j = 0; j < count && !same_key(&have[i].key, &entries[j].key); j++)
			;
		if (j == count && bpf_map_delete_elem(maps->sources, &have[i].key) && errno != ENOENT)
			err = -errno;
	}
	/*
	 * Present means listed among @have: a lookup answers the longest match,
	 * which may be a shorter prefix than the key's.
	 */
	for (j = 0; j < count && !err; j++) {
		for (i = 0; i < have_count; i++)
			if (same_key(&have[i].key, &entries[j].key) &&
			    memcmp(&have[i].value, &entries[j].value, sizeof(have[i].value)) == 0)
				break;
		if (i < have_count)
			continue;
		if (bpf_map_update_elem(maps->sources, &entries[j].key, &entries[j].value, BPF_ANY))
			err = -errno;
	}
	free(read);
	return err;
}

int lb_sources_delete(const struct lb_maps *maps, const struct lb_source_entry *have,
		      size_t count, int (*keep)(const struct lb_source_key *key, void *arg),
		      void *arg)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (!keep(&have[i].key, arg) && bpf_map_delete_elem(maps->sources, &have[i].key) &&
		    errno != ENOENT)
			return -errno;
	return 0;
}
