// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's image of a state: what kernel_sync() writes for each part of
 * it (a VIP's key and flags, a backend's slot, the encapsulation settings,
 * the previous rings) and what kernel_verify() compares, made in one place.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <arpa/inet.h>

#include "image.h"
#include "ring.h"

int kernel_fail(struct fault *f, int err, const char *fmt, ...)
{
	char what[FAULT_WHY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fault_set(f, FAULT_KERNEL, err, "%s", what);
	return fault_append(f, ": %s", err == -E2BIG ? ring_strerror(err) : strerror(-err));
}

void kernel_say(void (*report)(void *, const char *), void *arg, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	report(arg, line);
}

void image_vip_key(const struct state_vip *v, struct lb_vip_key *key)
{
	memset(key, 0, sizeof(*key));
	memcpy(key->addr, v->spec.addr.bytes, sizeof(key->addr));
	key->port = htons(v->spec.port);
	key->protocol = v->spec.protocol;
	key->family = (__u8)v->spec.addr.family;
}

enum lb_backend_state image_backend_state(const struct state_backend *b)
{
	/* A backend that is down takes no new flows and keeps its pinned ones, as a drain. */
	return b->retired		  ? LB_BACKEND_RETIRED :
	       !state_backend_in_ring(b) ? LB_BACKEND_DRAINING :
					   LB_BACKEND_ACTIVE;
}

int image_backend_wanted(const struct state *s, __u32 id, __u64 cookie)
{
	size_t i, j;

	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++)
			if (s->fleet.vips[i].backends[j].id == id && s->fleet.vips[i].backends[j].cookie == cookie)
				return 1;
	return 0;
}

/* The slot backend @b of VIP @v asks for. */
void image_backend(const struct state_vip *v, const struct state_backend *b,
			  struct lb_backend *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, b->addr.bytes, sizeof(e->addr));
	if (v->forward == LB_FORWARD_L2)
		memcpy(e->mac, b->mac, sizeof(e->mac));
	e->family = (__u8)b->addr.family;
	e->state = (__u8)image_backend_state(b);
	e->vip_id = v->id;
	e->forward = (__u8)v->forward;
	e->cookie = b->cookie;
}

/* Does @slot hold the backend @want describes (its state aside)? */
int image_slot_holds(const struct lb_backend *slot, const struct lb_backend *want)
{
	return slot->state != LB_BACKEND_UNUSED && slot->cookie == want->cookie &&
	       slot->vip_id == want->vip_id && slot->family == want->family &&
	       slot->forward == want->forward &&
	       memcmp(slot->addr, want->addr, sizeof(slot->addr)) == 0 &&
	       memcmp(slot->mac, want->mac, sizeof(slot->mac)) == 0;
}

int image_vip_id_wanted(const struct state *s, __u32 id)
{
	size_t i;

	for (i = 0; i < s->fleet.vip_count; i++)
		if (s->fleet.vips[i].id == id)
			return 1;
	return 0;
}

/* The VIP value's flags @v asks for. */
__u8 image_vip_flags(const struct state_vip *v)
{
	return (__u8)((v->stateless ? LB_VIP_STATELESS : 0) |
		      (v->source_count ? LB_VIP_SOURCES : 0) |
		      (state_vip_allow_list(v) ? LB_VIP_ALLOW_LIST : 0) |
		      (v->quic.set ? LB_VIP_QUIC_LB : 0));
}

void image_vip_quic(const struct state_vip *v, struct lb_quic_lb *quic)
{
	memset(quic, 0, sizeof(*quic));
	if (v->quic.set)
		*quic = v->quic.cfg;
}

/* Build @v's previous rings; free with image_past_rings_free(). */
int image_past_rings(const struct state_vip *v, struct ring **rings, __u32 **ids)
{
	__u32 k;
	int err;

	memset(rings, 0, LB_RING_HISTORY * sizeof(*rings));
	memset(ids, 0, LB_RING_HISTORY * sizeof(*ids));
	for (k = 0; k < v->history_count; k++) {
		err = state_vip_past_ring(v, k, &rings[k], &ids[k]);
		if (err)
			return err;
	}
	return 0;
}

void image_past_rings_free(struct ring **rings, __u32 **ids)
{
	__u32 k;

	for (k = 0; k < LB_RING_HISTORY; k++) {
		ring_free(rings[k]);
		free(ids[k]);
	}
}

/* The encapsulation settings @s asks for, as the program reads them. */
void image_config(const struct state *s, struct lb_config *c)
{
	memset(c, 0, sizeof(*c));
	if (s->host.encap.source4.family)
		memcpy(c->source4, s->host.encap.source4.bytes, sizeof(c->source4));
	if (s->host.encap.source6.family)
		memcpy(c->source6, s->host.encap.source6.bytes, sizeof(c->source6));
	c->gue_port = htons(s->host.encap.gue_port);
	c->new_flows_max = s->host.encap.new_flows_max;
	c->icmp_interval_ns = 1000000000u / s->host.encap.icmp_rate;
	c->icmp_burst = s->host.encap.icmp_burst;
}
