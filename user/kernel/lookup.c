// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend the program picks for a flow, asked the way the program asks:
 * its pin in the flow table, else the ring; and the hop list it carries.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <bpf/bpf.h>

#include "image.h"
#include "ring.h"


static const struct state_backend *backend_by_id(const struct state_vip *vip, __u32 id)
{
	size_t i;

	for (i = 0; i < vip->backend_count; i++)
		if (vip->backends[i].id == id)
			return &vip->backends[i];
	return NULL;
}

/* @out's hop list: the owners of its hash under @vip's previous rings, as hops_of() finds them. */
static int hops_find(const struct state_vip *vip, struct kernel_answer *out)
{
	const struct state_backend *first = out->backend;
	struct ring_lookup_result res;
	__u32 k, *ids;
	struct ring *ring;
	int err;

	for (k = 0; k < vip->history_count; k++) {
		const struct state_backend *b;
		unsigned int j;

		err = state_vip_past_ring(vip, k, &ring, &ids);
		if (err)
			return err;
		b = ring_lookup(ring, out->hash, &res) == 0 ? backend_by_id(vip, ids[res.member]) :
							      NULL;
		ring_free(ring);
		free(ids);
		if (!b || b->addr.family != first->addr.family || addr_equal(&b->addr, &first->addr))
			continue;
		/* Each host once, as the program writes them. */
		for (j = 0; j < out->hop_count && !addr_equal(&out->hops[j]->addr, &b->addr); j++)
			;
		if (j == out->hop_count)
			out->hops[out->hop_count++] = b;
	}
	return 0;
}

int kernel_lookup(const struct lb_maps *maps, const __u64 secret[2], const struct state_vip *vip,
	       const struct addr *client, __u16 client_port, struct kernel_answer *out)
{
	const struct state_backend *pinned = NULL;
	struct ring_lookup_result res;
	struct lb_flow_key key;
	struct lb_flow flow;
	struct lb_backend slot;
	struct ring *ring = NULL;
	__u32 *ids = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	if (client->family != vip->spec.addr.family)
		return -EAFNOSUPPORT;
	lb_flow_key_init(&key, client->family, client->bytes, htons(client_port),
			 vip->spec.addr.bytes, htons(vip->spec.port), vip->spec.protocol);
	out->hash = lb_flow_hash(secret, &key);
	/* A stateless VIP's flows are never looked up; a retired backend holds no flow. */
	if (maps && !vip->stateless && bpf_map_lookup_elem(maps->flows, &key, &flow) == 0 &&
	    flow.vip_id == vip->id && lb_backend_read(maps, flow.backend_id, &slot) == 0 &&
	    slot.state != LB_BACKEND_UNUSED && slot.state != LB_BACKEND_RETIRED &&
	    slot.vip_id == vip->id && slot.cookie == flow.backend_cookie) {
		pinned = backend_by_id(vip, flow.backend_id);
		out->pinned = 1;
		/* A draining backend keeps the flow, but a new connection goes to the ring. */
		if (slot.state != LB_BACKEND_DRAINING) {
			out->backend = out->new_connection = pinned;
			return 0;
		}
	}
	err = state_vip_ring(vip, &ring, &ids);
	if (err)
		return err;
	if (ring_lookup(ring, out->hash, &res) == 0)
		out->new_connection = backend_by_id(vip, ids[res.member]);
	out->backend = out->pinned ? pinned : out->new_connection;
	ring_free(ring);
	free(ids);
	if (!out->pinned && out->backend && vip->forward == LB_FORWARD_GUE &&
	    vip->spec.protocol == IPPROTO_TCP)
		return hops_find(vip, out);
	return 0;
}
