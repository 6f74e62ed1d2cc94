// SPDX-License-Identifier: GPL-2.0-only
/*
 * Making the kernel's maps agree with the desired state, and predicting the
 * program's choice for a flow; see ctl.h for the ordering rules.
 */
#include "ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <bpf/bpf.h>

#include "ring.h"

static int fail(char why[CTL_WHY_MAX], int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(why, CTL_WHY_MAX, fmt, ap);
	va_end(ap);
	if (n >= 0 && n < CTL_WHY_MAX)
		snprintf(why + n, (size_t)(CTL_WHY_MAX - n), ": %s",
			 err == -E2BIG ? ring_strerror(err) : strerror(-err));
	return err;
}

void ctl_vip_key(const struct state_vip *v, struct lb_vip_key *key)
{
	memset(key, 0, sizeof(*key));
	memcpy(key->addr, v->spec.addr.bytes, sizeof(key->addr));
	key->port = htons(v->spec.port);
	key->protocol = v->spec.protocol;
	key->family = (__u8)v->spec.addr.family;
}

static enum lb_backend_state wanted_state(const struct state_backend *b)
{
	return b->draining ? LB_BACKEND_DRAINING : LB_BACKEND_ACTIVE;
}

static const struct state_vip *vip_in(const struct state *s, const struct state_vip *v)
{
	return s ? state_vip_find(s, &v->spec) : NULL;
}

/* Would the ring of @now differ from the ring of @before? */
static int ring_changed(const struct state_vip *before, const struct state_vip *now)
{
	size_t i, active_before = 0, active_now = 0;

	if (!before || before->id != now->id || before->vnodes != now->vnodes)
		return 1;
	for (i = 0; i < before->backend_count; i++)
		active_before += !before->backends[i].draining;
	for (i = 0; i < now->backend_count; i++) {
		const struct state_backend *b = &now->backends[i], *was;

		if (b->draining)
			continue;
		active_now++;
		was = state_backend_find(before, b->name);
		if (!was || was->draining || was->weight != b->weight || was->id != b->id)
			return 1;
	}
	return active_before != active_now;
}

static int backend_wanted(const struct state *s, __u32 id, __u32 cookie)
{
	size_t i, j;

	for (i = 0; i < s->vip_count; i++)
		for (j = 0; j < s->vips[i].backend_count; j++)
			if (s->vips[i].backends[j].id == id && s->vips[i].backends[j].cookie == cookie)
				return 1;
	return 0;
}

static int vip_id_wanted(const struct state *s, __u32 id)
{
	size_t i;

	for (i = 0; i < s->vip_count; i++)
		if (s->vips[i].id == id)
			return 1;
	return 0;
}

/* Phase 1: every wanted backend present in its slot (new ones installed). */
static int install_backends(const struct lb_maps *maps, const struct state *want,
			    char why[CTL_WHY_MAX])
{
	size_t i, j;
	int err;

	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i];

		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend cur, entry = { 0 };

			err = lb_backend_read(maps, b->id, &cur);
			if (err)
				return fail(why, err, "reading backend slot %u", b->id);
			if (cur.state != LB_BACKEND_UNUSED && cur.cookie == b->cookie &&
			    cur.vip_id == v->id)
				continue;
			/* A stale occupant (a state restored over another) is evicted. */
			if (cur.state != LB_BACKEND_UNUSED) {
				err = lb_backend_set_state(maps, b->id, LB_BACKEND_UNUSED);
				if (err)
					return fail(why, err, "freeing backend slot %u", b->id);
			}
			memcpy(entry.addr, b->addr.bytes, sizeof(entry.addr));
			memcpy(entry.mac, b->mac, sizeof(entry.mac));
			entry.family = (__u8)b->addr.family;
			entry.state = (__u8)wanted_state(b);
			entry.vip_id = v->id;
			entry.cookie = b->cookie;
			err = lb_backend_install(maps, b->id, &entry);
			if (err)
				return fail(why, err, "installing backend %s in slot %u", b->name,
					    b->id);
		}
	}
	return 0;
}

/* A VIP's ring members with their backends, as ringmap_edits() takes them. */
static struct ringmap_member *ring_members(const struct state_vip *v, size_t *count)
{
	struct ringmap_member *members;
	size_t i;

	*count = 0;
	members = calloc(v->backend_count ? v->backend_count : 1, sizeof(*members));
	if (!members)
		return NULL;
	for (i = 0; i < v->backend_count; i++) {
		const struct state_backend *b = &v->backends[i];

		if (!b->draining)
			members[(*count)++] = (struct ringmap_member){ b->name, b->weight, b->id };
	}
	return members;
}

/*
 * Swap in @v's ring as the change from @before's, written into the VIP's
 * spare map (lb_vip_patch()), without building either ring: 0 when it
 * serves; any error means "build it whole" (the old ring still serves).
 */
static int ring_patch(const struct lb_maps *maps, const struct state_vip *before,
		      const struct state_vip *v, const struct lb_vip_key *key)
{
	struct ringmap_member *was = NULL, *now = NULL;
	struct lb_ring_change change = { 0 };
	struct ringmap_edit *edits = NULL;
	uint64_t from_fingerprint, to_fingerprint;
	size_t from_points, nb, na;
	int err;

	if (before->vnodes != v->vnodes || before->id != v->id)
		return -EAGAIN;
	err = state_vip_summary(before, &from_points, &from_fingerprint) ?:
	      state_vip_summary(v, &change.to_points, &to_fingerprint);
	if (err)
		return err;
	change.from_fingerprint = from_fingerprint;
	change.to_fingerprint = to_fingerprint;
	was = ring_members(before, &nb);
	now = ring_members(v, &na);
	err = !was || !now ? -ENOMEM :
	      /* Past as many edits as points, a whole build is no slower. */
	      ringmap_edits(v->vnodes, was, nb, now, na,
			    from_points > change.to_points ? from_points : change.to_points,
			    &edits, &change.count);
	change.edits = edits;
	if (!err)
		err = lb_vip_patch(maps, key, v->id, &change);
	/* The new ring serves; the old map follows, or the next change builds whole. */
	if (!err)
		lb_vip_settle(maps, key, v->id, &change);
	free(edits);
	free(was);
	free(now);
	return err;
}

/* Phase 2: changed rings swapped in (a VIP's key comes with its first ring). */
static int swap_rings(const struct lb_maps *maps, const struct state *applied,
		      const struct state *want, char why[CTL_WHY_MAX])
{
	size_t i;
	int err;

	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i], *before = vip_in(applied, v);
		char spec[ADDR_TEXT_MAX];
		struct lb_vip_key key;
		__u32 *ids = NULL;
		struct ring *ring = NULL;

		if (applied && !ring_changed(before, v))
			continue;
		vip_format(&v->spec, spec);
		ctl_vip_key(v, &key);
		if (before && ring_patch(maps, before, v, &key) == 0)
			continue;
		err = state_vip_ring(v, &ring, &ids);
		if (err)
			return fail(why, err, "building the ring of %s", spec);
		err = lb_vip_install(maps, &key, v->id, ring, ids);
		/* The new ring serves; a spare that cannot be made is made next time. */
		if (!err)
			lb_vip_settle(maps, &key, v->id, NULL);
		ring_free(ring);
		free(ids);
		if (err)
			return fail(why, err, "swapping the ring of %s", spec);
	}
	return 0;
}

/* Phase 3: backends that stayed get their wanted state (drain takes effect). */
static int update_states(const struct lb_maps *maps, const struct state *want,
			 char why[CTL_WHY_MAX])
{
	size_t i, j;
	int err;

	for (i = 0; i < want->vip_count; i++) {
		for (j = 0; j < want->vips[i].backend_count; j++) {
			const struct state_backend *b = &want->vips[i].backends[j];
			struct lb_backend cur;

			err = lb_backend_read(maps, b->id, &cur);
			if (!err && cur.state != wanted_state(b))
				err = lb_backend_set_state(maps, b->id, wanted_state(b));
			if (err)
				return fail(why, err, "setting the state of backend %s", b->name);
		}
	}
	return 0;
}

/* Phase 4: VIPs no longer wanted: each key, then its rings. */
static int remove_vips(const struct lb_maps *maps, const struct state *applied,
		       const struct state *want, char why[CTL_WHY_MAX])
{
	struct lb_vip_key keys[LB_VIPS_MAX], next;
	size_t count = 0, i;
	__u32 id;
	int err;

	if (bpf_map_get_next_key(maps->vips, NULL, &next) == 0) {
		do {
			keys[count++] = next;
		} while (count < LB_VIPS_MAX &&
			 bpf_map_get_next_key(maps->vips, &keys[count - 1], &next) == 0);
	}
	for (i = 0; i < count; i++) {
		struct lb_vip val;
		size_t j;
		int keep = 0;

		if (bpf_map_lookup_elem(maps->vips, &keys[i], &val))
			continue;
		for (j = 0; j < want->vip_count && !keep; j++) {
			struct lb_vip_key k;

			ctl_vip_key(&want->vips[j], &k);
			keep = memcmp(&k, &keys[i], sizeof(k)) == 0 && val.vip_id == want->vips[j].id;
		}
		if (keep)
			continue;
		err = lb_vip_remove(maps, &keys[i]);
		if (err)
			return fail(why, err, "removing a VIP");
	}
	/* Rings of ids no VIP holds (left by a crash, or a restore over other state). */
	for (id = 0; id < LB_VIPS_MAX; id++) {
		if (vip_id_wanted(want, id) || (applied && !vip_id_wanted(applied, id)))
			continue;
		err = lb_vip_rings_clear(maps, id);
		if (err)
			return fail(why, err, "removing the rings of VIP id %u", id);
	}
	return 0;
}

/* Phase 5: free every slot no wanted backend holds. */
static int free_backends(const struct lb_maps *maps, const struct state *want,
			 char why[CTL_WHY_MAX])
{
	__u32 id;
	int err;

	for (id = 1; id < LB_BACKENDS_MAX; id++) {
		struct lb_backend cur;

		err = lb_backend_read(maps, id, &cur);
		if (err)
			return fail(why, err, "reading backend slot %u", id);
		if (cur.state == LB_BACKEND_UNUSED || backend_wanted(want, id, cur.cookie))
			continue;
		err = lb_backend_set_state(maps, id, LB_BACKEND_UNUSED);
		if (err)
			return fail(why, err, "freeing backend slot %u", id);
	}
	return 0;
}

int ctl_sync(const struct lb_maps *maps, const struct state *applied, const struct state *want,
	     char why[CTL_WHY_MAX])
{
	return install_backends(maps, want, why) ?: swap_rings(maps, applied, want, why) ?:
	       update_states(maps, want, why) ?: remove_vips(maps, applied, want, why) ?:
	       free_backends(maps, want, why);
}

static void say(void (*report)(void *, const char *), void *arg, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	report(arg, line);
}

int ctl_verify(const struct lb_maps *maps, const struct state *want,
	       void (*report)(void *arg, const char *line), void *arg)
{
	struct lb_vip_key key, next;
	int bad = 0, err;
	size_t i, j;
	__u32 id;

	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i];
		char spec[ADDR_TEXT_MAX], why[128] = "";
		struct ring *ring;
		__u32 *ids;

		vip_format(&v->spec, spec);
		ctl_vip_key(v, &key);
		err = state_vip_ring(v, &ring, &ids);
		if (err)
			return err;
		if (lb_vip_compare(maps, &key, v->id, ring, ids, why, sizeof(why))) {
			say(report, arg, "VIP %s: %s", spec, why);
			bad++;
		}
		ring_free(ring);
		free(ids);
		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend slot;

			if (lb_backend_read(maps, b->id, &slot))
				return -errno;
			if (slot.state != wanted_state(b) || slot.cookie != b->cookie ||
			    slot.vip_id != v->id || memcmp(slot.mac, b->mac, 6) ||
			    memcmp(slot.addr, b->addr.bytes, 16) || slot.family != b->addr.family) {
				say(report, arg, "VIP %s: backend %s: slot %u holds something else",
				    spec, b->name, b->id);
				bad++;
			}
		}
	}
	if (bpf_map_get_next_key(maps->vips, NULL, &next) == 0) {
		do {
			int known = 0;

			key = next;
			for (i = 0; i < want->vip_count && !known; i++) {
				struct lb_vip_key k;

				ctl_vip_key(&want->vips[i], &k);
				known = memcmp(&k, &key, sizeof(k)) == 0;
			}
			if (!known) {
				say(report, arg, "a VIP the state does not have is in the kernel");
				bad++;
			}
		} while (bpf_map_get_next_key(maps->vips, &key, &next) == 0);
	}
	for (id = 1; id < LB_BACKENDS_MAX; id++) {
		struct lb_backend slot;

		if (lb_backend_read(maps, id, &slot))
			return -errno;
		if (slot.state != LB_BACKEND_UNUSED && !backend_wanted(want, id, slot.cookie)) {
			say(report, arg, "backend slot %u is in use but no backend holds it", id);
			bad++;
		}
	}
	return bad;
}

static const struct state_backend *backend_by_id(const struct state_vip *vip, __u32 id)
{
	size_t i;

	for (i = 0; i < vip->backend_count; i++)
		if (vip->backends[i].id == id)
			return &vip->backends[i];
	return NULL;
}

int ctl_lookup(const struct lb_maps *maps, const __u64 secret[2], const struct state_vip *vip,
	       const struct addr *client, __u16 client_port, struct ctl_answer *out)
{
	struct ring_lookup_result res;
	struct lb_flow_key key;
	struct lb_flow flow;
	struct ring *ring = NULL;
	__u32 *ids = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	if (client->family != vip->spec.addr.family)
		return -EAFNOSUPPORT;
	lb_flow_key_init(&key, client->family, client->bytes, htons(client_port),
			 vip->spec.addr.bytes, htons(vip->spec.port), vip->spec.protocol);
	out->hash = lb_flow_hash(secret, &key);
	if (maps && bpf_map_lookup_elem(maps->flows, &key, &flow) == 0 && flow.vip_id == vip->id) {
		struct lb_backend slot;

		if (lb_backend_read(maps, flow.backend_id, &slot) == 0 &&
		    slot.state != LB_BACKEND_UNUSED && slot.vip_id == vip->id &&
		    slot.cookie == flow.backend_cookie) {
			out->backend = backend_by_id(vip, flow.backend_id);
			out->pinned = 1;
			return 0;
		}
	}
	err = state_vip_ring(vip, &ring, &ids);
	if (err)
		return err;
	if (ring_lookup(ring, out->hash, &res) == 0)
		out->backend = backend_by_id(vip, ids[res.member]);
	ring_free(ring);
	free(ids);
	return 0;
}
