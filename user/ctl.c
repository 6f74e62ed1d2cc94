// SPDX-License-Identifier: GPL-2.0-only
/*
 * Making the kernel agree with the committed state (its maps, its record of
 * what they hold, the programs on the interfaces), checking that it does,
 * and predicting the program's choice for a flow; see ctl.h for the
 * ordering rules.
 */
#include "ctl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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
	/* A backend that is down takes no new flows and keeps its pinned ones, as a drain. */
	return b->retired		  ? LB_BACKEND_RETIRED :
	       !state_backend_in_ring(b) ? LB_BACKEND_DRAINING :
					   LB_BACKEND_ACTIVE;
}

static const struct state_vip *vip_in(const struct state *s, const struct state_vip *v)
{
	return s ? state_vip_find(s, &v->spec) : NULL;
}

/* Would the ring of @now differ from the ring of @before? */
static int ring_changed(const struct state_vip *before, const struct state_vip *now)
{
	size_t i, active_before = 0, active_now = 0;

	if (!before || before->id != now->id || before->vnodes != now->vnodes ||
	    before->stateless != now->stateless)
		return 1;
	for (i = 0; i < before->backend_count; i++)
		active_before += state_backend_in_ring(&before->backends[i]);
	for (i = 0; i < now->backend_count; i++) {
		const struct state_backend *b = &now->backends[i], *was;

		if (!state_backend_in_ring(b))
			continue;
		active_now++;
		was = state_backend_find(before, b->name);
		if (!was || !state_backend_in_ring(was) || was->weight != b->weight ||
		    was->id != b->id)
			return 1;
	}
	return active_before != active_now;
}

static int backend_wanted(const struct state *s, __u32 id, __u64 cookie)
{
	size_t i, j;

	for (i = 0; i < s->vip_count; i++)
		for (j = 0; j < s->vips[i].backend_count; j++)
			if (s->vips[i].backends[j].id == id && s->vips[i].backends[j].cookie == cookie)
				return 1;
	return 0;
}

/* The slot backend @b of VIP @v asks for. */
static void backend_entry(const struct state_vip *v, const struct state_backend *b,
			  struct lb_backend *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, b->addr.bytes, sizeof(e->addr));
	if (v->forward == LB_FORWARD_L2)
		memcpy(e->mac, b->mac, sizeof(e->mac));
	e->family = (__u8)b->addr.family;
	e->state = (__u8)wanted_state(b);
	e->vip_id = v->id;
	e->forward = (__u8)v->forward;
	e->cookie = b->cookie;
}

/* Does @slot hold the backend @want describes (its state aside)? */
static int slot_holds(const struct lb_backend *slot, const struct lb_backend *want)
{
	return slot->state != LB_BACKEND_UNUSED && slot->cookie == want->cookie &&
	       slot->vip_id == want->vip_id && slot->family == want->family &&
	       slot->forward == want->forward &&
	       memcmp(slot->addr, want->addr, sizeof(slot->addr)) == 0 &&
	       memcmp(slot->mac, want->mac, sizeof(slot->mac)) == 0;
}

static int vip_id_wanted(const struct state *s, __u32 id)
{
	size_t i;

	for (i = 0; i < s->vip_count; i++)
		if (s->vips[i].id == id)
			return 1;
	return 0;
}

/* Backends whose slot had to be emptied first, filled once no ring names the old occupant. */
struct deferred {
	struct {
		const struct state_backend *b;
		const struct state_vip *v;
	} items[LB_BACKENDS_MAX];
	size_t count;
};

static int backend_fill(const struct lb_maps *maps, const struct state_vip *v,
			const struct state_backend *b, char why[CTL_WHY_MAX])
{
	struct lb_backend entry;
	int err;

	backend_entry(v, b, &entry);
	/* A new occupant starts from zero, whatever the slot counted before. */
	err = lb_backend_counters_clear(maps, b->id) ?: lb_backend_install(maps, b->id, &entry);
	return err ? fail(why, err, "installing backend %s in slot %u", b->name, b->id) : 0;
}

/*
 * Phase 1: every wanted backend present in its slot: new ones installed in
 * free slots; a slot that holds another backend is emptied, and filled in
 * phase 3, after the rings that may name its occupant are gone.
 */
static int install_backends(const struct lb_maps *maps, const struct state *want,
			    struct deferred *later, char why[CTL_WHY_MAX])
{
	size_t i, j;
	int err;

	later->count = 0;
	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i];

		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend cur, entry;

			err = lb_backend_read(maps, b->id, &cur);
			if (err)
				return fail(why, err, "reading backend slot %u", b->id);
			backend_entry(v, b, &entry);
			if (slot_holds(&cur, &entry))
				continue;
			if (cur.state == LB_BACKEND_UNUSED) {
				err = backend_fill(maps, v, b, why);
				if (err)
					return err;
				continue;
			}
			err = lb_backend_set_state(maps, b->id, LB_BACKEND_UNUSED);
			if (err)
				return fail(why, err, "emptying backend slot %u", b->id);
			later->items[later->count].b = b;
			later->items[later->count++].v = v;
		}
	}
	return 0;
}

/* Phase 3: the emptied slots get their backends, once no packet reads an old ring. */
static int install_deferred(const struct lb_maps *maps, const struct deferred *later,
			    char why[CTL_WHY_MAX])
{
	size_t k;
	int err;

	if (!later->count)
		return 0;
	err = lb_readers_wait();
	if (err)
		return fail(why, err, "waiting for packets in flight");
	for (k = 0; k < later->count; k++) {
		err = backend_fill(maps, later->items[k].v, later->items[k].b, why);
		if (err)
			return err;
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

		if (state_backend_in_ring(b))
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

	if (before->vnodes != v->vnodes || before->id != v->id || before->stateless != v->stateless)
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

/* The VIP value's flags @v asks for. */
static __u8 vip_flags(const struct state_vip *v)
{
	return v->stateless ? LB_VIP_STATELESS : 0;
}

/* Phase 2b: changed rings swapped in (a VIP's key comes with its first ring). */
static int swap_rings(const struct lb_maps *maps, const struct state *applied,
		      const struct state *want, char why[CTL_WHY_MAX])
{
	size_t i;
	int err;

	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i], *before = vip_in(applied, v);
		char spec[ADDR_TEXT_MAX], differs[128];
		struct lb_vip_key key;
		struct lb_vip served;
		__u32 *ids = NULL;
		struct ring *ring = NULL;

		if (applied && !ring_changed(before, v))
			continue;
		vip_format(&v->spec, spec);
		ctl_vip_key(v, &key);
		/* A VIP the kernel does not have yet: its id's counters start from zero. */
		if (bpf_map_lookup_elem(maps->vips, &key, &served) || served.vip_id != v->id) {
			err = lb_vip_counters_clear(maps, v->id);
			if (err)
				return fail(why, err, "clearing the counters of %s", spec);
		}
		if (before && ring_patch(maps, before, v, &key) == 0)
			continue;
		err = state_vip_ring(v, &ring, &ids);
		if (err)
			return fail(why, err, "building the ring of %s", spec);
		/* Unknown maps (after a crash): most VIPs serve their ring already. */
		if (!applied && lb_vip_compare(maps, &key, v->id, ring, ids, differs,
					       sizeof(differs)) == 0 &&
		    served.flags == vip_flags(v))
			err = 0;
		else if ((err = lb_vip_install_as(maps, &key, v->id, ring, ids, vip_flags(v))) == 0)
			/* The new ring serves; a spare that cannot be made is made next time. */
			lb_vip_settle(maps, &key, v->id, NULL);
		ring_free(ring);
		free(ids);
		if (err)
			return fail(why, err, "swapping the ring of %s", spec);
	}
	return 0;
}

/* Do @before and @v keep the same previous rings? */
static int history_same(const struct state_vip *before, const struct state_vip *v)
{
	size_t i;

	if (!before || before->id != v->id || before->history_count != v->history_count ||
	    memcmp(before->past_vnodes, v->past_vnodes, sizeof(v->past_vnodes)))
		return 0;
	for (i = 0; i < v->backend_count; i++) {
		const struct state_backend *b = &v->backends[i];
		const struct state_backend *was = state_backend_find(before, b->name);

		if (!was ? state_backend_kept(v, b) :
			   was->id != b->id ||
			   memcmp(was->past_weight, b->past_weight, sizeof(b->past_weight)))
			return 0;
	}
	for (i = 0; i < before->backend_count; i++)
		if (!state_backend_find(v, before->backends[i].name) &&
		    state_backend_kept(before, &before->backends[i]))
			return 0;
	return 1;
}

/* Build @v's previous rings; free with past_rings_free(). */
static int past_rings_build(const struct state_vip *v, struct ring **rings, __u32 **ids)
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

static void past_rings_free(struct ring **rings, __u32 **ids)
{
	__u32 k;

	for (k = 0; k < LB_RING_HISTORY; k++) {
		ring_free(rings[k]);
		free(ids[k]);
	}
}

/*
 * Phase 2a: each VIP's previous rings, before its new ring serves: the ring
 * it replaces is kept already when the swap makes a flow's owner change, so
 * no packet of a moved connection goes out without its old owner as a hop.
 * The backends they name are installed by then (retired ones included).
 */
static int sync_history(const struct lb_maps *maps, const struct state *applied,
			const struct state *want, char why[CTL_WHY_MAX])
{
	size_t i;
	int err;

	for (i = 0; i < want->vip_count; i++) {
		const struct state_vip *v = &want->vips[i];
		struct ring *rings[LB_RING_HISTORY];
		__u32 *ids[LB_RING_HISTORY];
		char spec[ADDR_TEXT_MAX];

		if (applied && history_same(vip_in(applied, v), v))
			continue;
		vip_format(&v->spec, spec);
		err = past_rings_build(v, rings, ids) ?:
		      lb_vip_history_sync(maps, v->id, rings, ids, v->history_count);
		past_rings_free(rings, ids);
		if (err)
			return fail(why, err, "keeping the previous rings of %s", spec);
	}
	return 0;
}

/* Phase 4: backends that stayed get their wanted state (drain takes effect). */
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

/* Phase 5: VIPs no longer wanted: each key, then its rings. */
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

/* Phase 6: free every slot no wanted backend holds. */
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

/* The encapsulation settings @s asks for, as the program reads them. */
static void config_of(const struct state *s, struct lb_config *c)
{
	memset(c, 0, sizeof(*c));
	if (s->encap.source4.family)
		memcpy(c->source4, s->encap.source4.bytes, sizeof(c->source4));
	if (s->encap.source6.family)
		memcpy(c->source6, s->encap.source6.bytes, sizeof(c->source6));
	c->gue_port = htons(s->encap.gue_port);
	c->new_flows_max = s->encap.new_flows_max;
}

/* Written before any ring that could use it; only when it differs. */
static int config_sync(const struct lb_maps *maps, const struct state *want,
		       char why[CTL_WHY_MAX])
{
	struct lb_config cur, c;
	int err;

	config_of(want, &c);
	err = lb_config_read(maps, &cur);
	if (!err && memcmp(&cur, &c, sizeof(c)) == 0)
		return 0;
	err = err ?: lb_config_write(maps, &c);
	return err ? fail(why, err, "writing the encapsulation settings") : 0;
}

int ctl_sync(const struct lb_maps *maps, const struct state *applied, const struct state *want,
	     char why[CTL_WHY_MAX])
{
	struct deferred *later = malloc(sizeof(*later));
	int err;

	if (!later)
		return fail(why, -ENOMEM, "syncing the maps");
	err = config_sync(maps, want, why) ?: install_backends(maps, want, later, why) ?:
	      sync_history(maps, applied, want, why) ?: swap_rings(maps, applied, want, why) ?:
	      install_deferred(maps, later, why) ?: update_states(maps, want, why) ?:
	      remove_vips(maps, applied, want, why) ?: free_backends(maps, want, why);
	free(later);
	/* Whatever happened, no VIP element a packet may read is left for reuse. */
	if (lb_readers_release() && !err)
		err = fail(why, -EIO, "waiting for packets in flight");
	return err;
}

int ctl_record(const struct lb_maps *maps, const struct state *s, int changing)
{
	struct lb_control rec = { .state_digest = state_digest(s), .generation = s->generation,
				  .changing = changing ? 1 : 0 };

	return lb_control_write(maps, &rec);
}

int ctl_repair(const struct lb_maps *maps, const struct state *committed, int *repaired,
	       char why[CTL_WHY_MAX])
{
	struct lb_control rec;
	int err;

	*repaired = 0;
	err = lb_control_read(maps, &rec);
	if (err)
		return fail(why, err, "reading the kernel's record");
	if (!rec.changing && rec.state_digest && rec.state_digest == state_digest(committed))
		return 0;
	*repaired = 1;
	err = ctl_record(maps, committed, 1);
	if (err)
		return fail(why, err, "writing the kernel's record");
	err = ctl_sync(maps, NULL, committed, why);
	if (err)
		return err;
	err = ctl_record(maps, committed, 0);
	return err ? fail(why, err, "writing the kernel's record") : 0;
}

/* --- programs on the interfaces ------------------------------------------------- */

/* Call @each for every pinned link under @pin_dir/links; stops at an error. */
static int links_each(const char *pin_dir,
		      int (*each)(const char *name, const char *path, void *arg), void *arg)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int err = 0;

	snprintf(dir, sizeof(dir), "%s/links", pin_dir);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		err = each(e->d_name, path, arg);
	}
	closedir(d);
	return err;
}

struct links_sync {
	const char *pin_dir;
	const struct state *want;
	const __u64 *secret;
	int fixed;
	char *why;
};

static int link_sync(const char *name, const char *path, void *arg)
{
	struct links_sync *ls = arg;
	struct lb_load_opts opts = { .pin_dir = ls->pin_dir };
	struct lb_link_info info;
	struct lb_prog *prog;
	int err;

	err = lb_link_read(path, &info);
	if (!state_iface_find(ls->want, name)) {
		err = lb_detach(path, err ? 0 : info.ifindex);
		ls->fixed++;
		return err ? fail(ls->why, err, "removing the program on %s", name) : 0;
	}
	if (err)
		return fail(ls->why, err, "reading the program on %s", name);
	/* On an interface that is gone nothing runs: detach is the operator's call. */
	if (info.ifindex == 0 ||
	    (info.secret[0] == ls->secret[0] && info.secret[1] == ls->secret[1]))
		return 0;
	/* The same program on the committed key, swapped in on the same link. */
	opts.secret[0] = ls->secret[0];
	opts.secret[1] = ls->secret[1];
	memcpy(opts.iface_mac, info.iface_mac, sizeof(opts.iface_mac));
	err = lb_prog_load(&prog, &opts);
	if (err)
		return fail(ls->why, err, "loading the program for %s", name);
	err = lb_link_replace(path, prog);
	lb_prog_close(prog);
	ls->fixed++;
	return err ? fail(ls->why, err, "replacing the program on %s", name) : 0;
}

int ctl_links_sync(const char *pin_dir, const struct state *want, const __u64 secret[2],
		   int *fixed, char why[CTL_WHY_MAX])
{
	struct links_sync ls = { pin_dir, want, secret, 0, why };
	int err = links_each(pin_dir, link_sync, &ls);

	*fixed = ls.fixed;
	return err;
}

static int first_secret(const char *name, const char *path, void *arg)
{
	struct lb_link_info info;

	(void)name;
	if (lb_link_read(path, &info))
		return 0;
	memcpy(arg, info.secret, sizeof(info.secret));
	memset(&info, 0, sizeof(info));
	return 1;
}

int ctl_kernel_secret(const char *pin_dir, __u64 secret[2])
{
	int err = links_each(pin_dir, first_secret, secret);

	return err == 1 ? 0 : err < 0 ? err : -ENOENT;
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
	struct lb_control rec;
	struct lb_vip served;
	int bad = 0, err;
	size_t i, j;
	__u32 id;

	err = lb_control_read(maps, &rec);
	if (err)
		return err;
	if (rec.changing) {
		say(report, arg, "the kernel's record says a change was cut short (the next change "
		    "repairs the maps first)");
		bad++;
	} else if (rec.state_digest != state_digest(want)) {
		say(report, arg, "the kernel's record names another state than the file (generation "
		    "%llu; the next change repairs the maps first)",
		    (unsigned long long)rec.generation);
		bad++;
	}

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
		} else if (bpf_map_lookup_elem(maps->vips, &key, &served) == 0 &&
			   served.flags != vip_flags(v)) {
			say(report, arg, "VIP %s: the kernel's VIP value is %s", spec,
			    served.flags & LB_VIP_STATELESS ? "stateless" : "pinned");
			bad++;
		}
		ring_free(ring);
		free(ids);
		{
			struct ring *rings[LB_RING_HISTORY];
			__u32 *past_ids[LB_RING_HISTORY];

			err = past_rings_build(v, rings, past_ids);
			if (!err && lb_vip_history_compare(maps, v->id, rings, past_ids,
							   v->history_count, why, sizeof(why))) {
				say(report, arg, "VIP %s: %s", spec, why);
				bad++;
			}
			past_rings_free(rings, past_ids);
			if (err)
				return err;
		}
		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend slot, entry;

			if (lb_backend_read(maps, b->id, &slot))
				return -errno;
			backend_entry(v, b, &entry);
			if (!slot_holds(&slot, &entry)) {
				say(report, arg, "VIP %s: backend %s: slot %u holds something else",
				    spec, b->name, b->id);
				bad++;
			} else if (slot.state != entry.state) {
				say(report, arg, "VIP %s: backend %s: slot %u is %s", spec, b->name,
				    b->id, lb_backend_state_name(slot.state));
				bad++;
			}
		}
	}
	{
		struct lb_config cur, c;

		config_of(want, &c);
		int err = lb_config_read(maps, &cur);

		if (err)
			return err;
		if (memcmp(&cur, &c, sizeof(c))) {
			say(report, arg, "the encapsulation settings differ from the state's");
			bad++;
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

struct links_check {
	const struct state *want;
	const __u64 *secret;
	void (*report)(void *, const char *);
	void *arg;
	int bad;
};

static int link_check(const char *name, const char *path, void *arg)
{
	struct links_check *lc = arg;
	struct lb_link_info info;
	int err = lb_link_read(path, &info);

	if (!state_iface_find(lc->want, name)) {
		say(lc->report, lc->arg, "interface %s: a program is attached that the state does "
		    "not list (the next change removes it)", name);
		lc->bad++;
	} else if (err) {
		say(lc->report, lc->arg, "interface %s: cannot read its program: %s", name,
		    strerror(-err));
		lc->bad++;
	} else if (info.ifindex == 0) {
		say(lc->report, lc->arg, "interface %s: gone; its program is attached to nothing "
		    "(ringlb detach %s)", name, name);
		lc->bad++;
	} else if (info.secret[0] != lc->secret[0] || info.secret[1] != lc->secret[1]) {
		say(lc->report, lc->arg, "interface %s: the program hashes flows with another key "
		    "than the secret file (key digest %016llx, file %016llx; the next change "
		    "re-keys it)", name, (unsigned long long)lb_secret_digest(info.secret),
		    (unsigned long long)lb_secret_digest(lc->secret));
		lc->bad++;
	}
	memset(&info, 0, sizeof(info));
	return 0;
}

int ctl_links_verify(const char *pin_dir, const struct state *want, const __u64 secret[2],
		     void (*report)(void *arg, const char *line), void *arg)
{
	struct links_check lc = { want, secret, report, arg, 0 };
	char path[PATH_MAX];
	size_t i;
	int err = links_each(pin_dir, link_check, &lc);

	if (err)
		return err;
	for (i = 0; i < want->iface_count; i++) {
		snprintf(path, sizeof(path), "%s/links/%s", pin_dir, want->ifaces[i].name);
		if (access(path, F_OK)) {
			say(report, arg, "interface %s: attached in the state, but no program is "
			    "(ringlb attach %s, or ringlb detach %s)", want->ifaces[i].name,
			    want->ifaces[i].name, want->ifaces[i].name);
			lc.bad++;
		}
	}
	return lc.bad;
}

/* Flow table entries read per batch call. */
#define FLOW_BATCH 4096

/*
 * Count the flow table's entries per backend. A batch walk, by hash bucket:
 * a key-by-key walk restarts from the first key when the program evicts the
 * key it stands on, and may never end on a busy table.
 */
int ctl_flow_tally(const struct lb_maps *maps, const struct state *s, __u64 idle_ns,
		   struct ctl_tally *t)
{
	struct lb_flow_key *keys = calloc(FLOW_BATCH, sizeof(*keys));
	struct lb_flow *values = calloc(FLOW_BATCH, sizeof(*values));
	__u64 *cookie_of = calloc(LB_BACKENDS_MAX, sizeof(*cookie_of));
	__u32 *vip_of = calloc(LB_BACKENDS_MAX, sizeof(*vip_of));
	__u32 in_batch = 0, out_batch = 0, count, n;
	struct timespec now;
	__u64 now_ns;
	size_t i, j;
	int err = 0, first = 1;

	memset(t, 0, sizeof(*t));
	if (!keys || !values || !cookie_of || !vip_of) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < s->vip_count; i++)
		for (j = 0; j < s->vips[i].backend_count; j++) {
			cookie_of[s->vips[i].backends[j].id] = s->vips[i].backends[j].cookie;
			vip_of[s->vips[i].backends[j].id] = s->vips[i].id;
		}
	clock_gettime(CLOCK_MONOTONIC, &now);
	now_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		count = FLOW_BATCH;
		err = bpf_map_lookup_batch(maps->flows, first ? NULL : &in_batch, &out_batch, keys,
					   values, &count, &opts);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		t->entries += count;
		for (n = 0; n < count; n++) {
			const struct lb_flow *f = &values[n];

			/* Only the backend it was pinned to; cookies are never 0. */
			if (f->backend_id >= LB_BACKENDS_MAX || !cookie_of[f->backend_id] ||
			    cookie_of[f->backend_id] != f->backend_cookie ||
			    vip_of[f->backend_id] != f->vip_id)
				continue;
			/* Touched at most once a second, so allow that much slack. */
			if (now_ns > f->last_seen_ns + idle_ns + LB_FLOW_TOUCH_NS)
				continue;
			t->live[f->backend_id]++;
			if (f->flags & (LB_FLOW_FIN | LB_FLOW_RST))
				t->closing[f->backend_id]++;
		}
		if (err) { /* ENOENT: the walk is over */
			err = 0;
			break;
		}
		in_batch = out_batch;
		first = 0;
	}
out:
	free(keys);
	free(values);
	free(cookie_of);
	free(vip_of);
	return err;
}

static const struct state_backend *backend_by_id(const struct state_vip *vip, __u32 id)
{
	size_t i;

	for (i = 0; i < vip->backend_count; i++)
		if (vip->backends[i].id == id)
			return &vip->backends[i];
	return NULL;
}

/* @out's hop list: the owners of its hash under @vip's previous rings, as hops_of() finds them. */
static int hops_find(const struct state_vip *vip, struct ctl_answer *out)
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

int ctl_lookup(const struct lb_maps *maps, const __u64 secret[2], const struct state_vip *vip,
	       const struct addr *client, __u16 client_port, struct ctl_answer *out)
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
