// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does the kernel hold exactly a state? Every VIP value and ring, every
 * backend slot, the encapsulation settings, the kernel's record; one line
 * per disagreement.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

#include <bpf/bpf.h>

#include "image.h"
#include "quic_lb.h"
#include "ring.h"
#include "source_set.h"


/** struct report - where verify's lines go, and how many there were. */
struct report {
	void (*line)(void *arg, const char *line);
	void *arg;
	int bad;
};

#define say(r, ...)                                        \
	do {                                               \
		kernel_say((r)->line, (r)->arg, __VA_ARGS__); \
		(r)->bad++;                                \
	} while (0)

/* The kernel's record: a change cut short, or another state than @want. */
static int verify_record(const struct lb_maps *maps, const struct state *want, struct report *r)
{
	struct lb_control rec;
	int err = lb_control_read(maps, &rec);

	if (err)
		return err;
	if (rec.changing)
		say(r, "the kernel's record says a change was cut short (the next change repairs the "
		    "maps first)");
	else if (rec.state_digest != state_digest(want))
		say(r, "the kernel's record names another state than the file (generation %llu; the "
		    "next change repairs the maps first)", (unsigned long long)rec.generation);
	return 0;
}

/* A VIP's value and ring, its kept rings, its backends' slots. */
static int verify_vip(const struct lb_maps *maps, const struct state_vip *v, struct report *r)
{
	struct ring *ring, *rings[LB_RING_HISTORY];
	__u32 *ids, *past_ids[LB_RING_HISTORY];
	char spec[ADDR_TEXT_MAX], why[128] = "";
	struct lb_vip_key key;
	struct lb_vip served;
	size_t j;
	int err;

	vip_format(&v->spec, spec);
	image_vip_key(v, &key);
	err = state_vip_ring(v, &ring, &ids);
	if (err)
		return err;
	if (lb_vip_compare(maps, &key, v->id, ring, ids, why, sizeof(why)))
		say(r, "VIP %s: %s", spec, why);
	else if (bpf_map_lookup_elem(maps->vips, &key, &served) == 0 &&
		 (served.flags & LB_VIP_STATELESS) != (image_vip_flags(v) & LB_VIP_STATELESS))
		say(r, "VIP %s: the kernel's VIP value is %s", spec,
		    served.flags & LB_VIP_STATELESS ? "stateless" : "pinned");
	ring_free(ring);
	free(ids);
	err = image_past_rings(v, rings, past_ids);
	if (!err && lb_vip_history_compare(maps, v->id, rings, past_ids, v->history_count, why,
					   sizeof(why)))
		say(r, "VIP %s: %s", spec, why);
	image_past_rings_free(rings, past_ids);
	if (err)
		return err;
	for (j = 0; j < v->backend_count; j++) {
		const struct state_backend *b = &v->backends[j];
		struct lb_backend slot, entry;

		if (lb_backend_read(maps, b->id, &slot))
			return -errno;
		image_backend(v, b, &entry);
		if (!image_slot_holds(&slot, &entry))
			say(r, "VIP %s: backend %s: slot %u holds something else", spec, b->name,
			    b->id);
		else if (slot.state != entry.state)
			say(r, "VIP %s: backend %s: slot %u is %s", spec, b->name, b->id,
			    lb_backend_state_name(slot.state));
	}
	return 0;
}

/*
 * A VIP's source ranges: its value's flags, and the set it names being the
 * one the state's prefixes make. Sets no value names are strays
 * (verify_source_strays()).
 */
static int verify_sources(const struct lb_maps *maps, const struct state_vip *v,
			  struct report *r)
{
	__u8 flags = image_vip_flags(v) & LB_VIP_SOURCE_FLAGS;
	struct lb_source_set *want = NULL, *have = NULL;
	char spec[ADDR_TEXT_MAX];
	struct lb_vip_key key;
	struct lb_vip served;
	int err;

	vip_format(&v->spec, spec);
	image_vip_key(v, &key);
	if (bpf_map_lookup_elem(maps->vips, &key, &served) || served.vip_id != v->id)
		return 0; /* said by verify_vip() */
	if ((served.flags & LB_VIP_SOURCE_FLAGS) != flags)
		say(r, "VIP %s: the kernel's VIP value says %s source ranges%s", spec,
		    served.flags & LB_VIP_SOURCES ? "it has" : "it has no",
		    served.flags & LB_VIP_ALLOW_LIST ? ", with an allow list" : "");
	if (!(served.flags & LB_VIP_SOURCES) || !v->source_count)
		return 0;
	want = malloc(sizeof(*want));
	have = malloc(sizeof(*have));
	err = !want || !have ? -ENOMEM : source_set_build(want, v->sources, v->source_count);
	if (!err) {
		err = lb_source_set_read(maps, v->id, served.source_parity & 1, have);
		if (err == -ENOENT)
			say(r, "VIP %s: its source ranges are missing from the kernel (its clients "
			    "are refused as drop_no_sources)", spec);
		else if (!err && memcmp(have, want, sizeof(*want)))
			say(r, "VIP %s: its source ranges in the kernel differ from the state's "
			    "(%zu prefixes)", spec, v->source_count);
		if (err == -ENOENT)
			err = 0;
	}
	free(want);
	free(have);
	return err;
}

/*
 * A VIP's QUIC-LB side: its value's configuration, its key's digest in the
 * slot it names, and every backend's server id naming that backend.
 */
static int verify_quic(const struct lb_maps *maps, const struct state_vip *v, struct report *r)
{
	struct lb_quic_cipher_record rec;
	struct lb_quic_server server;
	struct lb_quic_lb want;
	char spec[ADDR_TEXT_MAX], sid[2 * LB_QUIC_LB_SID_MAX + 1];
	struct lb_vip_key key;
	struct lb_vip served;
	size_t i;

	vip_format(&v->spec, spec);
	image_vip_key(v, &key);
	if (bpf_map_lookup_elem(maps->vips, &key, &served) || served.vip_id != v->id)
		return 0; /* said by verify_vip() */
	image_vip_quic(v, &want);
	if (!!(served.flags & LB_VIP_QUIC_LB) != v->quic.set ||
	    memcmp(&served.quic, &want, sizeof(want))) {
		say(r, "VIP %s: the kernel's QUIC-LB configuration differs from the state's", spec);
		return 0;
	}
	if (!v->quic.set)
		return 0;
	if ((v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED) &&
	    (lb_quic_cipher_read(maps, LB_QUIC_CIPHER_SLOT(v->id, served.quic_parity), &rec) ||
	     rec.key_digest != v->quic.key_digest))
		say(r, "VIP %s: the kernel's QUIC-LB key is not the state's (digest %016llx)", spec,
		    (unsigned long long)v->quic.key_digest);
	for (i = 0; i < v->backend_count; i++) {
		const struct state_backend *b = &v->backends[i];

		if (lb_quic_server_get(maps, v->id, served.quic_parity & 1, b->server_id,
				       v->quic.cfg.sid_len, &server) == 0 &&
		    server.backend_id == b->id && server.cookie == b->cookie)
			continue;
		quic_lb_hex(b->server_id, v->quic.cfg.sid_len, sid);
		say(r, "VIP %s: backend %s: server id %s does not name it in the kernel", spec,
		    b->name, sid);
	}
	return 0;
}

/* QUIC server ids and keys that nothing of the state needs. */
static int verify_quic_strays(const struct lb_maps *maps, const struct state *want,
			      struct report *r)
{
	size_t ids, keys;
	int err = kernel_quic_strays(maps, want, 0, &ids, &keys);

	if (err)
		return err;
	if (ids)
		say(r, "%zu QUIC server id%s in the kernel name%s what the state does not say",
		    ids, ids == 1 ? "" : "s", ids == 1 ? "s" : "");
	if (keys)
		say(r, "%zu QUIC-LB key%s in the kernel belong%s to no VIP", keys,
		    keys == 1 ? "" : "s", keys == 1 ? "s" : "");
	return 0;
}

/* Source sets that no wanted VIP's value names. */
static int verify_source_strays(const struct lb_maps *maps, const struct state *want,
				struct report *r)
{
	struct kernel_sources_named named;
	struct lb_source_head head;
	size_t strays = 0;
	__u32 id, slot, inner;
	__u8 parity;

	kernel_sources_named(maps, want, &named);
	for (id = 0; id < LB_VIPS_MAX; id++)
		for (parity = 0; parity < 2; parity++) {
			slot = LB_SOURCE_SET_SLOT(id, parity);
			if (!kernel_source_named(&named, id, parity) &&
			    (bpf_map_lookup_elem(maps->source_sets, &slot, &inner) == 0 ||
			     (bpf_map_lookup_elem(maps->source_heads, &slot, &head) == 0 &&
			      head.count)))
				strays++;
		}
	if (strays)
		say(r, "%zu source set%s in the kernel belong%s to no VIP", strays,
		    strays == 1 ? "" : "s", strays == 1 ? "s" : "");
	return 0;
}

/* The encapsulation settings. */
static int verify_config(const struct lb_maps *maps, const struct state *want, struct report *r)
{
	struct lb_config cur, c;
	int err = lb_config_read(maps, &cur);

	if (err)
		return err;
	image_config(want, &c);
	if (memcmp(&cur, &c, sizeof(c)))
		say(r, "the encapsulation settings differ from the state's");
	return 0;
}

/* The flow table's size: made once with the maps, recorded in the state. */
static int verify_flows(const struct lb_maps *maps, const struct state *want, struct report *r)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	struct lb_flow_table t = { 0 };
	struct bpf_map_info tinfo = {};
	__u32 tlen = sizeof(tinfo), zero = 0;

	if (bpf_obj_get_info_by_fd(maps->flows, &info, &len) ||
	    bpf_obj_get_info_by_fd(maps->flow_table, &tinfo, &tlen))
		return -errno;
	if (tinfo.value_size != sizeof(t))
		say(r, "the flow table's settings (map flow_table) are of another layout");
	else if (bpf_map_lookup_elem(maps->flow_table, &zero, &t))
		return -errno;
	else if (!t.sets)
		say(r, "the flow table was never made (map flow_table has no key): nothing is pinned");
	else if (t.sets != info.max_entries)
		say(r, "the flow table's settings (map flow_table) name %u sets, its map has %u: "
		    "its flows cannot be found", t.sets, info.max_entries);
	if (info.max_entries != LB_FLOW_SETS(want->host.flow_entries))
		say(r, "the flow table has %u entries, the state says %u (the size is set when the "
		    "maps are made; ringlb attach IFACE records the kernel's)",
		    info.max_entries * LB_FLOW_WAYS, want->host.flow_entries);
	return 0;
}

/*
 * The VIP epoch (each CPU's VIP cache, lb_contract.h): closed after every
 * change. Open, the CPUs keep no copies: slower, never wrong.
 */
static int verify_vip_epoch(const struct lb_maps *maps, struct report *r)
{
	__u32 zero = 0;
	__u64 epoch;

	if (bpf_map_lookup_elem(maps->vip_epoch, &zero, &epoch))
		return -errno;
	if (epoch % 2 || epoch == 0)
		say(r, "the VIP epoch is open (%llu): the CPUs keep no copies of VIP values, each "
		    "packet looks its VIP up (a change did not end; the next change closes it)",
		    (unsigned long long)epoch);
	return 0;
}

/* What the kernel holds and the state does not: VIPs, backend slots in use. */
static int verify_strays(const struct lb_maps *maps, const struct state *want, struct report *r)
{
	struct lb_vip_key key, next, k;
	struct lb_backend slot;
	size_t i;
	__u32 id;
	int known;

	if (bpf_map_get_next_key(maps->vips, NULL, &next) == 0) {
		do {
			key = next;
			for (i = 0, known = 0; i < want->fleet.vip_count && !known; i++) {
				image_vip_key(&want->fleet.vips[i], &k);
				known = memcmp(&k, &key, sizeof(k)) == 0;
			}
			if (!known)
				say(r, "a VIP the state does not have is in the kernel");
		} while (bpf_map_get_next_key(maps->vips, &key, &next) == 0);
	}
	for (id = 1; id < LB_BACKENDS_MAX; id++) {
		if (lb_backend_read(maps, id, &slot))
			return -errno;
		if (slot.state != LB_BACKEND_UNUSED && !image_backend_wanted(want, id, slot.cookie))
			say(r, "backend slot %u is in use but no backend holds it", id);
	}
	return 0;
}

int kernel_verify(const struct lb_maps *maps, const struct state *want,
		  void (*report)(void *arg, const char *line), void *arg)
{
	struct report r = { report, arg, 0 };
	size_t i;
	int err;

	err = verify_record(maps, want, &r);
	for (i = 0; !err && i < want->fleet.vip_count; i++)
		err = verify_vip(maps, &want->fleet.vips[i], &r) ?:
		      verify_sources(maps, &want->fleet.vips[i], &r) ?:
		      verify_quic(maps, &want->fleet.vips[i], &r);
	err = err ?: verify_config(maps, want, &r) ?: verify_flows(maps, want, &r) ?:
	      verify_vip_epoch(maps, &r) ?: verify_strays(maps, want, &r) ?:
	      verify_source_strays(maps, want, &r) ?: verify_quic_strays(maps, want, &r);
	return err ? err : r.bad;
}
