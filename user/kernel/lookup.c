// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backend the program picks for a flow, asked the way the program asks
 * and with its own predicates (bpf/lb_choose.h): the flow's pin when it
 * still holds, else the ring; and the hop list its packets carry. The
 * rings of a VIP are built once (kernel_chooser_open()) for any number of
 * flows.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <bpf/bpf.h>

#include "image.h"
#include "lb_choose.h"
#include "lb_quic_lb.h"
#include "ring.h"

static const struct state_backend *backend_by_id(const struct state_vip *vip, __u32 id)
{
	size_t i;

	for (i = 0; i < vip->backend_count; i++)
		if (vip->backends[i].id == id)
			return &vip->backends[i];
	return NULL;
}

/* The slot the state gives backend @id of the chooser's VIP; NULL for none. */
static const struct lb_backend *image_of(const struct kernel_chooser *kc, __u32 id)
{
	size_t i;

	for (i = 0; i < kc->vip->backend_count; i++)
		if (kc->vip->backends[i].id == id)
			return &kc->slots[i];
	return NULL;
}

int kernel_chooser_open(struct kernel_chooser *kc, const struct lb_maps *maps,
			const __u64 secret[2], const struct state_vip *vip)
{
	size_t i;
	int err;

	memset(kc, 0, sizeof(*kc));
	kc->maps = maps;
	kc->vip = vip;
	memcpy(kc->secret, secret, sizeof(kc->secret));
	kc->value.vip_id = vip->id;
	kc->value.flags = image_vip_flags(vip);
	kc->slots = calloc(vip->backend_count + 1, sizeof(*kc->slots));
	if (!kc->slots)
		return -ENOMEM;
	for (i = 0; i < vip->backend_count; i++)
		image_backend(vip, &vip->backends[i], &kc->slots[i]);
	err = state_vip_ring(vip, &kc->ring, &kc->ids) ?: image_past_rings(vip, kc->past, kc->past_ids);
	if (err)
		kernel_chooser_close(kc);
	return err;
}

void kernel_chooser_close(struct kernel_chooser *kc)
{
	quic_lb_cipher_free(&kc->quic);
	ring_free(kc->ring);
	free(kc->ids);
	image_past_rings_free(kc->past, kc->past_ids);
	free(kc->slots);
	memset(kc, 0, sizeof(*kc));
}

/* @out's hop list: its owners under the VIP's previous rings, as the program makes it. */
static void hops_find(const struct kernel_chooser *kc, struct kernel_answer *out)
{
	const struct lb_backend *first = image_of(kc, out->backend->id);
	struct ring_lookup_result res;
	struct lb_hops h = { 0 };
	__u32 k, i;

	for (k = 0; first && k < kc->vip->history_count; k++) {
		__u32 id = ring_lookup(kc->past[k], out->hash, &res) == 0 ?
				   kc->past_ids[k][res.member] : 0;

		if (lb_hops_wants(&h, id, out->backend->id))
			lb_hops_take(&h, id, image_of(kc, id), kc->vip->id, first->family);
	}
	for (i = 0; i < LB_HOPS_COUNT(lb_hops_done(&h)); i++)
		out->hops[out->hop_count++] = backend_by_id(kc->vip, LB_HOP(h.packed, i));
}

int kernel_lookup(const struct kernel_chooser *kc, const struct addr *client, __u16 client_port,
		  struct kernel_answer *out)
{
	const struct state_vip *vip = kc->vip;
	const struct state_backend *pinned = NULL;
	const struct lb_backend *slot;
	struct ring_lookup_result res;
	struct lb_flow_key key;
	struct lb_backend kslot;
	struct lb_flow flow = { 0 };

	memset(out, 0, sizeof(*out));
	if (client->family != vip->spec.addr.family)
		return -EAFNOSUPPORT;
	lb_flow_key_init(&key, client->family, client->bytes, htons(client_port),
			 vip->spec.addr.bytes, htons(vip->spec.port), vip->spec.protocol);
	out->hash = lb_flow_hash(kc->secret, &key);
	/* Refused before the flow table and the ring, as the program does. */
	out->refused = state_vip_source_refused(vip, client, &out->source);
	if (out->refused)
		return 0;
	/* The pin as the kernel holds it: the flow table's entry and the slot it names. */
	if (kc->maps && lb_vip_pins(&kc->value) &&
	    kernel_flow_get(kc->maps, &key, &flow) == 0 &&
	    lb_backend_read(kc->maps, lb_flow_slot(&flow), &kslot) == 0 &&
	    lb_pin_holds(&flow, &kslot, vip->id, LB_TCP_ACK)) {
		pinned = backend_by_id(vip, lb_flow_slot(&flow));
		out->pinned = 1;
		/* A draining backend keeps the flow, but a new connection goes to the ring. */
		if (lb_pin_holds(&flow, &kslot, vip->id, LB_TCP_SYN)) {
			out->backend = out->new_connection = pinned;
			return 0;
		}
	}
	if (ring_lookup(kc->ring, out->hash, &res) == 0) {
		const struct state_backend *b = backend_by_id(vip, kc->ids[res.member]);

		slot = b ? image_of(kc, b->id) : NULL;
		if (lb_backend_serves(slot, vip->id))
			out->new_connection = b;
	}
	out->backend = out->pinned ? pinned : out->new_connection;
	slot = out->backend ? image_of(kc, out->backend->id) : NULL;
	if (!out->pinned && slot && lb_wants_hops(slot, vip->spec.protocol, LB_TCP_ACK))
		hops_find(kc, out);
	return 0;
}

int kernel_quic_open(struct kernel_chooser *kc, struct fault *f)
{
	const struct state_vip *v = kc->vip;
	__u8 key[LB_QUIC_LB_KEY_LEN];
	char spec[ADDR_TEXT_MAX];
	int err;

	vip_format(&v->spec, spec);
	if (!v->quic.set)
		return fault_set(f, FAULT_USAGE, -EINVAL, "VIP %s is no QUIC VIP (vip quic-lb)",
				 spec);
	if (!(v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED) || kc->quic.enc)
		return 0;
	err = quic_lb_key_read(v->quic.key_path, key, f);
	if (err)
		return err;
	if (quic_lb_key_digest(key) != v->quic.key_digest)
		err = fault_set(f, FAULT_STATE, -EKEYREJECTED,
				"VIP %s: QUIC-LB key file %s holds another key than the state's",
				spec, v->quic.key_path);
	else
		err = quic_lb_cipher_init(&kc->quic, key, f);
	memset(key, 0, sizeof(key));
	return err;
}

int kernel_quic_lookup(const struct kernel_chooser *kc, enum kernel_quic_header header,
		       const __u8 *cid, size_t len, struct kernel_quic_answer *out)
{
	const struct state_vip *vip = kc->vip;
	__u8 padded[LB_QUIC_CID_MAX] = { 0 };
	struct ring_lookup_result res;
	struct lb_flow_key key;
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	if (!len || len > LB_QUIC_CID_MAX)
		return -EINVAL;
	out->short_len = quic_lb_short_cid_len(cid[0], &vip->quic.cfg);
	if (header == KERNEL_QUIC_SHORT && len != out->short_len)
		return -EINVAL;
	memcpy(padded, cid, len);
	err = quic_lb_sid_of(&vip->quic.cfg, (struct quic_lb_cipher *)&kc->quic, padded, len,
			     out->sid);
	out->sid_ok = err == 0;
	/* The server id names a backend while it serves, as map "quic_servers" and its slot say. */
	for (i = 0; out->sid_ok && i < vip->backend_count; i++) {
		const struct state_backend *b = &vip->backends[i];

		if (memcmp(b->server_id, out->sid, LB_QUIC_LB_SID_MAX) == 0 &&
		    lb_backend_serves(image_of(kc, b->id), vip->id)) {
			out->backend = b;
			out->reason = LB_REASON_FORWARDED_QUIC;
			return 0;
		}
	}
	quic_lb_cid_key(padded, (__u32)len, htons(vip->spec.port), &key);
	out->hash = lb_flow_hash(kc->secret, &key);
	out->reason = header == KERNEL_QUIC_INITIAL ? LB_REASON_FORWARDED_QUIC_NEW :
		      err == QUIC_LB_ROTATION	  ? LB_REASON_FORWARDED_QUIC_ROTATION :
						    LB_REASON_FORWARDED_QUIC_UNKNOWN;
	if (ring_lookup(kc->ring, out->hash, &res) == 0) {
		const struct state_backend *b = backend_by_id(vip, kc->ids[res.member]);

		if (b && lb_backend_serves(image_of(kc, b->id), vip->id))
			out->backend = b;
	}
	return 0;
}
