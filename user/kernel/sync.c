// SPDX-License-Identifier: GPL-2.0-only
/*
 * Making the kernel's maps hold a state (kernel.h has the ordering rules)
 * and its record of what they hold.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "image.h"
#include "quic_lb.h"
#include "ring.h"
#include "source_set.h"


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

/* Backends whose slot had to be emptied first, filled once no ring names the old occupant. */
struct deferred {
	struct {
		const struct state_backend *b;
		const struct state_vip *v;
	} items[LB_BACKENDS_MAX];
	size_t count;
};

static int backend_fill(const struct lb_maps *maps, const struct state_vip *v,
			const struct state_backend *b, struct fault *f)
{
	struct lb_backend entry;
	int err;

	image_backend(v, b, &entry);
	/* A new occupant starts from zero, whatever the slot counted before. */
	err = lb_backend_counters_clear(maps, b->id) ?: lb_backend_install(maps, b->id, &entry);
	return err ? kernel_fail(f, err, "installing backend %s in slot %u", b->name, b->id) : 0;
}

/*
 * Phase 1: every wanted backend present in its slot: new ones installed in
 * free slots; a slot that holds another backend is emptied, and filled in
 * phase 3, after the rings that may name its occupant are gone.
 */
static int install_backends(const struct lb_maps *maps, const struct state *want,
			    struct deferred *later, struct fault *f)
{
	size_t i, j;
	int err;

	later->count = 0;
	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i];

		for (j = 0; j < v->backend_count; j++) {
			const struct state_backend *b = &v->backends[j];
			struct lb_backend cur, entry;

			err = lb_backend_read(maps, b->id, &cur);
			if (err)
				return kernel_fail(f, err, "reading backend slot %u", b->id);
			image_backend(v, b, &entry);
			if (image_slot_holds(&cur, &entry))
				continue;
			if (cur.state == LB_BACKEND_UNUSED) {
				err = backend_fill(maps, v, b, f);
				if (err)
					return err;
				continue;
			}
			err = lb_backend_set_state(maps, b->id, LB_BACKEND_UNUSED);
			if (err)
				return kernel_fail(f, err, "emptying backend slot %u", b->id);
			later->items[later->count].b = b;
			later->items[later->count++].v = v;
		}
	}
	return 0;
}

/* Phase 3: the emptied slots get their backends, once no packet reads an old ring. */
static int install_deferred(const struct lb_maps *maps, const struct deferred *later,
			    struct fault *f)
{
	size_t k;
	int err;

	if (!later->count)
		return 0;
	err = lb_readers_wait();
	if (err)
		return kernel_fail(f, err, "waiting for packets in flight");
	for (k = 0; k < later->count; k++) {
		err = backend_fill(maps, later->items[k].v, later->items[k].b, f);
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

/* @v's ring, its flags, and for a VIP the kernel does not serve yet its QUIC-LB key slot 0. */
static int vip_install(const struct lb_maps *maps, const struct lb_vip_key *key,
		       const struct state_vip *v, const struct ring *ring, const __u32 *ids)
{
	struct lb_vip as = { .flags = image_vip_flags(v) };

	image_vip_quic(v, &as.quic);
	return lb_vip_install_with(maps, key, v->id, ring, ids, &as);
}

/* Phase 2b: changed rings swapped in (a VIP's key comes with its first ring). */
static int swap_rings(const struct lb_maps *maps, const struct state *applied,
		      const struct state *want, struct fault *f)
{
	size_t i;
	int err;

	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i], *before = vip_in(applied, v);
		char spec[ADDR_TEXT_MAX], differs[128];
		struct lb_vip_key key;
		struct lb_vip served;
		__u32 *ids = NULL;
		struct ring *ring = NULL;

		if (applied && !ring_changed(before, v))
			continue;
		vip_format(&v->spec, spec);
		image_vip_key(v, &key);
		/* A VIP the kernel does not have yet: its id's counters start from zero. */
		if (bpf_map_lookup_elem(maps->vips, &key, &served) || served.vip_id != v->id) {
			err = lb_vip_counters_clear(maps, v->id);
			if (err)
				return kernel_fail(f, err, "clearing the counters of %s", spec);
		}
		if (before && ring_patch(maps, before, v, &key) == 0)
			continue;
		err = state_vip_ring(v, &ring, &ids);
		if (err)
			return kernel_fail(f, err, "building the ring of %s", spec);
		/* Unknown maps (after a crash): most VIPs serve their ring already. */
		if (!applied && lb_vip_compare(maps, &key, v->id, ring, ids, differs,
					       sizeof(differs)) == 0 &&
		    served.flags == image_vip_flags(v))
			err = 0;
		else if ((err = vip_install(maps, &key, v, ring, ids)) == 0)
			/* The new ring serves; a spare that cannot be made is made next time. */
			lb_vip_settle(maps, &key, v->id, NULL);
		ring_free(ring);
		free(ids);
		if (err)
			return kernel_fail(f, err, "swapping the ring of %s", spec);
	}
	return 0;
}

/* Do @before and @v have the same source prefixes? */
static int sources_same(const struct state_vip *before, const struct state_vip *v)
{
	size_t i;

	if (!before || before->id != v->id || before->source_count != v->source_count)
		return 0;
	for (i = 0; i < v->source_count; i++)
		if (!prefix_equal(&before->sources[i].prefix, &v->sources[i].prefix) ||
		    before->sources[i].deny != v->sources[i].deny)
			return 0;
	return 1;
}

/*
 * One VIP's source set. A VIP the kernel serves gets the new set in the slot
 * its value does not name, then one swap of its value names it, and once no
 * packet can still read the old value the old slot is emptied: a packet
 * sees one set whole, never a mix and never none. A VIP the kernel does not
 * serve yet gets its set in slot 0, which its first value names
 * (swap_rings(), lb_vip_install_as()). A VIP without prefixes has no set.
 */
int kernel_vip_sources_sync(const struct lb_maps *maps, const struct state_vip *v)
{
	__u8 flags = image_vip_flags(v) & LB_VIP_SOURCE_FLAGS, parity;
	struct lb_source_set *want = NULL, *have = NULL;
	struct lb_vip_key key;
	struct lb_vip served;
	int err = 0, serving;

	if (v->source_count) {
		want = malloc(sizeof(*want));
		err = !want ? -ENOMEM : source_set_build(want, v->sources, v->source_count);
		if (err)
			goto out;
	}
	image_vip_key(v, &key);
	serving = bpf_map_lookup_elem(maps->vips, &key, &served) == 0 && served.vip_id == v->id;
	if (!serving) {
		err = lb_source_set_place(maps, v->id, 0, want) ?:
		      lb_source_set_place(maps, v->id, 1, NULL);
		goto out;
	}
	parity = served.source_parity & 1;
	if ((served.flags & LB_VIP_SOURCE_FLAGS) == flags) {
		if (!want)
			goto out;
		have = malloc(sizeof(*have));
		err = -ENOMEM;
		if (!have)
			goto out;
		err = lb_source_set_read(maps, v->id, parity, have);
		if (err == 0 && memcmp(have, want, sizeof(*want)) == 0)
			goto out;
	}
	parity = !parity;
	err = lb_source_set_place(maps, v->id, parity, want) ?:
	      lb_vip_sources_swap(maps, &key, v->id, parity, flags) ?:
	      /* Then no packet reads the old value, nor so the old set. */
	      lb_readers_wait() ?:
	      lb_source_set_place(maps, v->id, !parity, NULL);
out:
	free(want);
	free(have);
	return err;
}

/* Phase 2c: every VIP's source ranges (before its first ring makes its key appear). */
static int sync_sources(const struct lb_maps *maps, const struct state *applied,
			const struct state *want, struct fault *f)
{
	size_t i;
	int err;

	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i], *before = vip_in(applied, v);
		char spec[ADDR_TEXT_MAX];

		/* Known maps: a VIP the kernel serves with the same prefixes keeps them. */
		if (applied && before && sources_same(before, v))
			continue;
		err = kernel_vip_sources_sync(maps, v);
		if (err) {
			vip_format(&v->spec, spec);
			return kernel_fail(f, err, "writing the source ranges of %s", spec);
		}
	}
	return 0;
}

void kernel_sources_named(const struct lb_maps *maps, const struct state *want,
			  struct kernel_sources_named *named)
{
	size_t i;

	memset(named, 0, sizeof(*named));
	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i];
		struct lb_vip_key key;
		struct lb_vip val;

		image_vip_key(v, &key);
		if (bpf_map_lookup_elem(maps->vips, &key, &val) == 0 && val.vip_id == v->id &&
		    (val.flags & LB_VIP_SOURCES))
			named->parity[v->id] = (__u8)((val.source_parity & 1) + 1);
	}
}

int kernel_source_named(const struct kernel_sources_named *named, __u32 vip_id, __u8 parity)
{
	return vip_id < LB_VIPS_MAX && named->parity[vip_id] == parity + 1;
}

/*
 * Phase 7: source sets no VIP value names (a removed VIP's, a change cut
 * short), once no packet can still read a value that named them. After a
 * change from a known state (@applied), only slots holding a set:
 * lb_source_set_place() never leaves a head without its set, and a 16 KiB
 * head rewritten in all 512 slots cost every command 8 MiB of copies. With
 * maps of unknown content (@applied NULL: a repair, the daemon's, maps just
 * made), every slot, for a head without a set that an older build cut short
 * or another writer left (read by no packet, which reads a slot only once a
 * VIP value names it, but reported by verify).
 */
static int sweep_sources(const struct lb_maps *maps, const struct state *applied,
			 const struct state *want, struct fault *f)
{
	struct kernel_sources_named named;
	__u32 id, slot, inner;
	__u8 parity;
	int err;

	err = lb_readers_release(maps);
	if (err)
		return kernel_fail(f, err, "waiting for the packets in flight");
	kernel_sources_named(maps, want, &named);
	for (id = 0; id < LB_VIPS_MAX; id++)
		for (parity = 0; parity < 2; parity++) {
			slot = LB_SOURCE_SET_SLOT(id, parity);
			if (kernel_source_named(&named, id, parity) ||
			    (applied && bpf_map_lookup_elem(maps->source_sets, &slot, &inner) &&
			     errno == ENOENT))
				continue;
			err = lb_source_set_place(maps, id, parity, NULL);
			if (err)
				return kernel_fail(f, err, "removing stale source ranges");
		}
	return 0;
}

/*
 * The key of @v's encrypted configuration, from its file, when its digest is
 * the state's: a host whose file holds another key serves none of it.
 */
static int quic_key_of(const struct state_vip *v, __u8 key[LB_QUIC_LB_KEY_LEN], struct fault *f)
{
	char spec[ADDR_TEXT_MAX];
	int err = quic_lb_key_read(v->quic.key_path, key, f);

	if (err)
		return err;
	if (quic_lb_key_digest(key) != v->quic.key_digest) {
		vip_format(&v->spec, spec);
		memset(key, 0, LB_QUIC_LB_KEY_LEN);
		return fault_set(f, FAULT_STATE, -EKEYREJECTED,
				 "VIP %s: QUIC-LB key file %s holds another key than the state's "
				 "(digest %016llx)",
				 spec, v->quic.key_path, (unsigned long long)v->quic.key_digest);
	}
	return 0;
}

/*
 * Does the kernel serve @v's QUIC-LB configuration (@served its value): the
 * same configuration, and for an encrypted one its key in the slot named?
 */
static int quic_served(const struct lb_maps *maps, const struct state_vip *v,
		       const struct lb_vip *served)
{
	struct lb_quic_cipher_record rec;
	struct lb_quic_lb want;

	image_vip_quic(v, &want);
	if (!!(served->flags & LB_VIP_QUIC_LB) != v->quic.set ||
	    memcmp(&served->quic, &want, sizeof(want)))
		return 0;
	if (!v->quic.set || !(v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED))
		return 1;
	return lb_quic_cipher_read(maps, LB_QUIC_CIPHER_SLOT(v->id, served->quic_parity), &rec) == 0 &&
	       rec.key_digest == v->quic.key_digest;
}

/*
 * May @v's server ids go into its set @parity one by one: does every id that
 * set holds already name the backend @v gives it (each added id a change of
 * its own, which no packet can see half done)?
 */
static int quic_ids_add_only(const struct lb_maps *maps, const struct state_vip *v, __u8 parity)
{
	struct lb_quic_server have;
	size_t i;

	for (i = 0; i < v->backend_count; i++) {
		const struct state_backend *b = &v->backends[i];

		if (lb_quic_server_get(maps, v->id, parity, b->server_id, v->quic.cfg.sid_len,
				       &have) == 0 &&
		    (have.backend_id != b->id || have.cookie != b->cookie))
			return 0;
	}
	return 1;
}

/* Every server id of @v into its set @parity. */
static int quic_ids_put(const struct lb_maps *maps, const struct state_vip *v, __u8 parity,
			const char *spec, struct fault *f)
{
	size_t i;
	int err;

	for (i = 0; i < v->backend_count; i++) {
		const struct state_backend *b = &v->backends[i];

		err = lb_quic_server_put(maps, v->id, parity, b->server_id, v->quic.cfg.sid_len,
					 b->id, b->cookie);
		if (err)
			return kernel_fail(f, err, "writing the server id of backend %s of %s",
					   b->name, spec);
	}
	return 0;
}

/* What lb_quic_servers_sweep() keeps of a set being emptied: all but VIP @id's set @parity. */
struct quic_set_of {
	__u32 vip_id;
	__u8 parity;
};

static int quic_not_in_set(void *arg, const struct lb_quic_server_key *k,
			   const struct lb_quic_server *val)
{
	const struct quic_set_of *set = arg;

	(void)val;
	return k->vip_id != set->vip_id || k->parity != set->parity;
}

/*
 * One VIP's QUIC-LB side (kernel_vip_quic_sync()): its server ids (map
 * "quic_servers"), its key (map "quic_ciphers") and its value's
 * configuration, as its source set goes (kernel_vip_sources_sync()). A VIP
 * the kernel serves with this configuration and key, whose set already gives
 * no id to another backend, only gets the ids it lacks, each one update.
 * Any other change makes a whole new side in the parity its value does not
 * name (that set emptied first of what a cut-short change left there, every
 * id written, the key made), then one swap of its value names it: a packet
 * sees the old ids, key and configuration or the new ones, never a mix. The
 * old side goes in sweep_quic(), once no packet can read it. A VIP the
 * kernel does not serve yet gets its side in parity 0, which its first value
 * names. A VIP that stops being QUIC gets one swap of its value.
 */
static int vip_quic_sync(const struct lb_maps *maps, const struct state_vip *v, int degrade,
			 struct fault *f)
{
	int encrypted = v->quic.set && (v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED);
	__u8 key[LB_QUIC_LB_KEY_LEN], parity = 0;
	struct quic_set_of old_set;
	char spec[ADDR_TEXT_MAX];
	struct lb_quic_lb cfg;
	struct lb_vip_key vkey;
	struct lb_vip served;
	int err = 0, serving;

	vip_format(&v->spec, spec);
	image_vip_key(v, &vkey);
	image_vip_quic(v, &cfg);
	serving = bpf_map_lookup_elem(maps->vips, &vkey, &served) == 0 && served.vip_id == v->id;
	if (serving && !v->quic.set) {
		if (!(served.flags & LB_VIP_QUIC_LB))
			return 0;
		err = lb_vip_quic_swap(maps, &vkey, v->id, 0, &cfg, served.quic_parity);
		return err ? kernel_fail(f, err, "swapping the QUIC-LB configuration of %s", spec) :
			     0;
	}
	if (!v->quic.set)
		return 0;
	if (serving && quic_served(maps, v, &served) &&
	    quic_ids_add_only(maps, v, served.quic_parity & 1))
		return quic_ids_put(maps, v, served.quic_parity & 1, spec, f);
	parity = serving ? !(served.quic_parity & 1) : 0;
	old_set.vip_id = v->id;
	old_set.parity = parity;
	err = lb_quic_servers_sweep(maps, quic_not_in_set, &old_set);
	if (err)
		return kernel_fail(f, err, "emptying a set of QUIC server ids of %s", spec);
	err = quic_ids_put(maps, v, parity, spec, f);
	if (err)
		return err;
	if (encrypted && !lb_kernel_has_crypto())
		err = fault_set(f, FAULT_STATE, -EOPNOTSUPP,
				"VIP %s: this kernel has no BPF crypto kfuncs (Linux 6.10 and "
				"later): it serves QUIC-LB in plaintext only",
				spec);
	else if (encrypted)
		err = quic_key_of(v, key, f);
	/*
	 * No key to make: refused, unless the kernel serves nothing of the VIP
	 * (maps made afresh, after a reboot): then the VIP serves without it
	 * rather than not at all, its QUIC placed by the ring, and verify says
	 * so.
	 */
	if (err && !(degrade && !serving))
		return err;
	if (encrypted && !err) {
		err = lb_quic_cipher_place(maps, LB_QUIC_CIPHER_SLOT(v->id, parity), key,
					   v->quic.key_digest);
		memset(key, 0, sizeof(key));
		if (err)
			return kernel_fail(f, err, "making the QUIC-LB key of %s in the kernel", spec);
	}
	if (!serving)
		return 0;
	err = lb_vip_quic_swap(maps, &vkey, v->id, 1, &cfg, parity);
	return err ? kernel_fail(f, err, "swapping the QUIC-LB configuration of %s", spec) : 0;
}

int kernel_vip_quic_sync(const struct lb_maps *maps, const struct state_vip *v, struct fault *f)
{
	return vip_quic_sync(maps, v, 0, f);
}

/*
 * Phase 2d: every VIP's QUIC-LB side (before its first ring makes its key
 * appear). With maps of unknown content (@applied NULL) a VIP the kernel
 * does not serve comes up without a key it cannot make.
 */
static int sync_quic(const struct lb_maps *maps, const struct state *applied,
		     const struct state *want, struct fault *f)
{
	size_t i;
	int err;

	for (i = 0; i < want->fleet.vip_count; i++) {
		err = vip_quic_sync(maps, &want->fleet.vips[i], !applied, f);
		if (err)
			return err;
	}
	return 0;
}

/* The set of server ids each VIP id's kernel value names: its parity + 1, 0 for none. */
struct quic_named {
	const struct state *want;
	__u8 parity[LB_VIPS_MAX];
};

static void quic_named_read(const struct lb_maps *maps, const struct state *want,
			    struct quic_named *named)
{
	struct lb_vip_key key, next;
	struct lb_vip val;
	int more;

	memset(named, 0, sizeof(*named));
	named->want = want;
	for (more = bpf_map_get_next_key(maps->vips, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(maps->vips, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(maps->vips, &key, &val) == 0 && val.vip_id < LB_VIPS_MAX &&
		    (val.flags & LB_VIP_QUIC_LB))
			named->parity[val.vip_id] = (__u8)((val.quic_parity & 1) + 1);
	}
}

/*
 * Is server id @k wanted: in the set its VIP's value names, an id one of the
 * state's backends of that VIP has, naming that backend?
 */
static int quic_server_wanted(void *arg, const struct lb_quic_server_key *k,
			      const struct lb_quic_server *val)
{
	const struct quic_named *named = arg;
	const struct state *want = named->want;
	size_t i, j;

	if (k->vip_id >= LB_VIPS_MAX || named->parity[k->vip_id] != k->parity + 1)
		return 0;
	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i];

		if (v->id != k->vip_id || !v->quic.set || v->quic.cfg.sid_len != k->sid_len)
			continue;
		for (j = 0; j < v->backend_count; j++)
			if (memcmp(v->backends[j].server_id, k->sid, sizeof(k->sid)) == 0)
				return v->backends[j].id == val->backend_id &&
				       v->backends[j].cookie == val->cookie;
	}
	return 0;
}

int kernel_quic_strays(const struct lb_maps *maps, const struct state *want, int remove,
		       size_t *ids, size_t *keys)
{
	struct quic_named *named = malloc(sizeof(*named));
	struct lb_quic_cipher_record rec;
	__u32 slot;
	int err = 0;

	*ids = *keys = 0;
	if (!named)
		return -ENOMEM;
	quic_named_read(maps, want, named);
	err = lb_quic_servers_count(maps, quic_server_wanted, named, remove, ids);
	for (slot = 0; !err && slot < LB_QUIC_CIPHER_SLOTS; slot++) {
		__u32 id = slot / 2;

		if (named->parity[id] == (slot & 1) + 1 || lb_quic_cipher_read(maps, slot, &rec) ||
		    !rec.key_digest)
			continue;
		(*keys)++;
		if (remove)
			err = lb_quic_cipher_place(maps, slot, NULL, 0);
	}
	free(named);
	return err;
}

/*
 * Phase 8: server ids and keys no VIP value names (a removed VIP's, the old
 * side of a change, a change cut short), once no packet can still read a
 * value that named them.
 */
static int sweep_quic(const struct lb_maps *maps, const struct state *want, struct fault *f)
{
	size_t ids, keys;
	int err;

	err = lb_readers_release(maps);
	if (err)
		return kernel_fail(f, err, "waiting for the packets in flight");
	err = kernel_quic_strays(maps, want, 1, &ids, &keys);
	return err ? kernel_fail(f, err, "removing stale QUIC server ids and keys") : 0;
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

/*
 * Phase 2a: each VIP's previous rings, before its new ring serves: the ring
 * it replaces is kept already when the swap makes a flow's owner change, so
 * no packet of a moved connection goes out without its old owner as a hop.
 * The backends they name are installed by then (retired ones included).
 */
static int sync_history(const struct lb_maps *maps, const struct state *applied,
			const struct state *want, struct fault *f)
{
	size_t i;
	int err;

	for (i = 0; i < want->fleet.vip_count; i++) {
		const struct state_vip *v = &want->fleet.vips[i];
		struct ring *rings[LB_RING_HISTORY];
		__u32 *ids[LB_RING_HISTORY];
		char spec[ADDR_TEXT_MAX];

		if (applied && history_same(vip_in(applied, v), v))
			continue;
		vip_format(&v->spec, spec);
		err = image_past_rings(v, rings, ids) ?:
		      lb_vip_history_sync(maps, v->id, rings, ids, v->history_count);
		image_past_rings_free(rings, ids);
		if (err)
			return kernel_fail(f, err, "keeping the previous rings of %s", spec);
	}
	return 0;
}

/* Phase 4: backends that stayed get their wanted state (drain takes effect). */
static int update_states(const struct lb_maps *maps, const struct state *want,
			 struct fault *f)
{
	size_t i, j;
	int err;

	for (i = 0; i < want->fleet.vip_count; i++) {
		for (j = 0; j < want->fleet.vips[i].backend_count; j++) {
			const struct state_backend *b = &want->fleet.vips[i].backends[j];
			struct lb_backend cur;

			err = lb_backend_read(maps, b->id, &cur);
			if (!err && cur.state != image_backend_state(b))
				err = lb_backend_set_state(maps, b->id, image_backend_state(b));
			if (err)
				return kernel_fail(f, err, "setting the state of backend %s", b->name);
		}
	}
	return 0;
}

/* Phase 5: VIPs no longer wanted: each key, then its rings. */
static int remove_vips(const struct lb_maps *maps, const struct state *applied,
		       const struct state *want, struct fault *f)
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
		for (j = 0; j < want->fleet.vip_count && !keep; j++) {
			struct lb_vip_key k;

			image_vip_key(&want->fleet.vips[j], &k);
			keep = memcmp(&k, &keys[i], sizeof(k)) == 0 && val.vip_id == want->fleet.vips[j].id;
		}
		if (keep)
			continue;
		err = lb_vip_remove(maps, &keys[i]);
		if (err)
			return kernel_fail(f, err, "removing a VIP");
	}
	/* Rings of ids no VIP holds (left by a crash, or a restore over other state). */
	for (id = 0; id < LB_VIPS_MAX; id++) {
		if (image_vip_id_wanted(want, id) || (applied && !image_vip_id_wanted(applied, id)))
			continue;
		err = lb_vip_rings_clear(maps, id);
		if (err)
			return kernel_fail(f, err, "removing the rings of VIP id %u", id);
	}
	return 0;
}

/* Phase 6: free every slot no wanted backend holds. */
static int free_backends(const struct lb_maps *maps, const struct state *want,
			 struct fault *f)
{
	struct lb_backend *cur = calloc(LB_BACKENDS_MAX, sizeof(*cur));
	__u32 id;
	int err;

	if (!cur)
		return kernel_fail(f, -ENOMEM, "reading the backend slots");
	err = lb_backends_read_all(maps, cur);
	if (err) {
		free(cur);
		return kernel_fail(f, err, "reading the backend slots");
	}
	for (id = 1; id < LB_BACKENDS_MAX && !err; id++)
		if (cur[id].state != LB_BACKEND_UNUSED &&
		    !image_backend_wanted(want, id, cur[id].cookie))
			err = lb_backend_set_state(maps, id, LB_BACKEND_UNUSED);
	free(cur);
	return err ? kernel_fail(f, err, "freeing backend slot %u", id - 1) : 0;
}

/* Written before any ring that could use it; only when it differs. */
static int config_sync(const struct lb_maps *maps, const struct state *want,
		       struct fault *f)
{
	struct lb_config cur, c;
	int err;

	image_config(want, &c);
	err = lb_config_read(maps, &cur);
	if (!err && memcmp(&cur, &c, sizeof(c)) == 0)
		return 0;
	err = err ?: lb_config_write(maps, &c);
	return err ? kernel_fail(f, err, "writing the encapsulation settings") : 0;
}

int kernel_sync(const struct lb_maps *maps, const struct state *applied, const struct state *want,
	     struct fault *f)
{
	struct deferred *later = malloc(sizeof(*later));
	int err;

	if (!later)
		return kernel_fail(f, -ENOMEM, "syncing the maps");
	err = config_sync(maps, want, f) ?: install_backends(maps, want, later, f) ?:
	      sync_history(maps, applied, want, f) ?: sync_sources(maps, applied, want, f) ?:
	      sync_quic(maps, applied, want, f) ?:
	      swap_rings(maps, applied, want, f) ?: install_deferred(maps, later, f) ?:
	      update_states(maps, want, f) ?: remove_vips(maps, applied, want, f) ?:
	      free_backends(maps, want, f) ?: sweep_sources(maps, applied, want, f) ?:
	      sweep_quic(maps, want, f);
	free(later);
	/* Whatever happened, no VIP element a packet may read is left for reuse. */
	if (lb_readers_release(maps) && !err)
		err = kernel_fail(f, -EIO, "waiting for packets in flight");
	return err;
}

int kernel_record(const struct lb_maps *maps, const struct state *s, int changing)
{
	struct lb_control rec = { .state_digest = state_digest(s), .generation = s->fleet.generation,
				  .changing = changing ? 1 : 0 };

	return lb_control_write(maps, &rec);
}

int kernel_repair(const struct lb_maps *maps, const struct state *committed, int *repaired,
	       struct fault *f)
{
	struct lb_control rec;
	int err;

	*repaired = 0;
	err = lb_control_read(maps, &rec);
	if (err)
		return kernel_fail(f, err, "reading the kernel's record");
	if (!rec.changing && rec.state_digest && rec.state_digest == state_digest(committed))
		return 0;
	*repaired = 1;
	err = kernel_record(maps, committed, 1);
	if (err)
		return kernel_fail(f, err, "writing the kernel's record");
	err = kernel_sync(maps, NULL, committed, f);
	if (err)
		return err;
	err = kernel_record(maps, committed, 0);
	return err ? kernel_fail(f, err, "writing the kernel's record") : 0;
}
