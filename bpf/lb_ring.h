/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The maps a backend is chosen from (vips from lb_vips.h, backends, rings_0 ..
 * rings_3) and how ringlb's XDP programs pick from them: the VIP value names
 * a ring map, laid out as lb_contract.h describes, and lb_ring_search.h
 * searches it (the tests hold its answers to ring_lookup() of ring/lookup.c).
 * Shared by the data path and the benchmark, so both define these maps by
 * including it.
 *
 * Every slot lookup here is inlined by the verifier (about two instructions):
 * the ring maps of one class all have the same size, and each class has its
 * own copy of the search, so each lookup site sees one map of known size.
 */
#ifndef RINGLB_LB_RING_H
#define RINGLB_LB_RING_H

#include <bpf/bpf_helpers.h>

#include "lb_contract.h"
#include "lb_parse.h"
#include "lb_vips.h"


struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend);
	LB_PINNED;
} backends SEC(".maps");

/*
 * One array of maps per ring class. BPF_F_MMAPABLE lets the controller fill a
 * ring with one copy; the loader creates every ring map with the same flags
 * and size as the template here, which the kernel checks. The value is given
 * by size, not __type(): clang 14 emits only a forward declaration in BTF for
 * a union the program uses through pointers, and libbpf then cannot size it.
 */
#define LB_RING_CLASS_MAP(name, slots)                                              \
	struct {                                                                    \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);                           \
		__uint(max_entries, LB_VIPS_MAX * LB_RING_SLOTS_PER_VIP);           \
		__type(key, __u32);                                                 \
		LB_PINNED;                                                          \
		__array(values, struct {                                            \
			__uint(type, BPF_MAP_TYPE_ARRAY);                           \
			__uint(max_entries, slots);                                 \
			__uint(map_flags, BPF_F_MMAPABLE);                          \
			__uint(key_size, sizeof(__u32));                            \
			__uint(value_size, sizeof(union lb_ring_slot));             \
		});                                                                 \
	} name SEC(".maps")

LB_RING_CLASS_MAP(rings_0, LB_RING_CLASS0_SLOTS);
LB_RING_CLASS_MAP(rings_1, LB_RING_CLASS1_SLOTS);
LB_RING_CLASS_MAP(rings_2, LB_RING_CLASS2_SLOTS);
LB_RING_CLASS_MAP(rings_3, LB_RING_CLASS3_SLOTS);

/* Each VIP's previous rings (gue VIPs only), newest first. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, __u32);
	__type(value, struct lb_vip_history);
	LB_PINNED;
} history SEC(".maps");

/*
 * Not reasons, but "read the VIP again": the slot holds a newer ring than the
 * VIP value read, or none (the controller emptied it after a swap).
 */
#define RING_STALE 1
#define RING_MISSING 2

static __always_inline const union lb_ring_slot *ring_slot(void *ring, __u32 slot)
{
	return bpf_map_lookup_elem(ring, &slot);
}

#include "lb_ring_search.h"

/*
 * The owner of @hash in @ring (the map in @vip's slot, NULL when empty), as
 * ring_lookup() finds it: 0 and the backend id, RING_MISSING or RING_STALE
 * when @ring is not the ring @vip describes, or -(reason) to drop.
 */
static __always_inline int ring_pick(void *ring, const struct lb_vip *vip, __u64 hash,
				     __u32 *backend_id)
{
	const union lb_ring_slot *header;

	if (!ring)
		return RING_MISSING;
	header = ring_slot(ring, LB_RING_FINGERPRINT_SLOT);
	if (!header)
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	if (header->fingerprint != vip->fingerprint)
		return RING_STALE;
	if (ring_search(ring, vip->index_bits, hash, backend_id))
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	return 0;
}

/* The slot of @vip's serving ring in its class's rings_<class> map. */
static __always_inline __u32 ring_vip_slot(const struct lb_vip *vip)
{
	return vip->vip_id * LB_RING_SLOTS_PER_VIP + (vip->ring_parity & 1);
}

/*
 * The ring owner of @hash for @vip: 0 and the backend id, RING_STALE or
 * RING_MISSING, or -(reason). Each class gets its own inlined copy of the
 * search.
 */
static __always_inline int ring_choose(const struct lb_vip *vip, __u64 hash, __u32 *backend_id)
{
	__u32 slot = ring_vip_slot(vip);

	if (vip->points == 0)
		return PARSE_FAIL(LB_REASON_DROP_NO_BACKEND);
	switch (vip->ring_class) {
	case 0:
		return ring_pick(bpf_map_lookup_elem(&rings_0, &slot), vip, hash, backend_id);
	case 1:
		return ring_pick(bpf_map_lookup_elem(&rings_1, &slot), vip, hash, backend_id);
	case 2:
		return ring_pick(bpf_map_lookup_elem(&rings_2, &slot), vip, hash, backend_id);
	case 3:
		return ring_pick(bpf_map_lookup_elem(&rings_3, &slot), vip, hash, backend_id);
	default:
		return PARSE_FAIL(LB_REASON_DROP_BAD_RING);
	}
}

/* The owner of @hash in previous ring @ring that @ref describes, or 0. */
static __always_inline int owner_in(void *ring, const struct lb_ring_ref *ref, __u64 hash)
{
	const union lb_ring_slot *header;
	__u32 id = 0;

	if (!ring)
		return 0;
	header = ring_slot(ring, LB_RING_FINGERPRINT_SLOT);
	if (!header || header->fingerprint != ref->fingerprint)
		return 0;
	return ring_search(ring, ref->index_bits, hash, &id) ? 0 : (int)id;
}

/*
 * The owner of @hash under previous ring @k of VIP @vip_id: its backend id,
 * or 0 when there is no such ring (or its reference was read torn, or the
 * slot holds another ring). Global, so verified once on its own: the four
 * inlined searches are not copied into every caller.
 */
__noinline int lb_ring_owner_before(__u32 vip_id, __u32 k, __u64 hash)
{
	struct lb_vip_history *h;
	struct lb_ring_ref ref;
	__u32 slot;

	_Static_assert(LB_RING_HISTORY == 3, "one read per previous ring below");
	if (k >= LB_RING_HISTORY || vip_id >= LB_VIPS_MAX)
		return 0;
	h = bpf_map_lookup_elem(&history, &vip_id);
	if (!h)
		return 0;
	/* Constant indices: clang's bound check of a variable one is not the verifier's. */
	ref = k == 0 ? h->rings[0] : k == 1 ? h->rings[1] : h->rings[2];
	if (!ref.fingerprint || ref.place >= LB_RING_HISTORY)
		return 0;
	slot = LB_RING_HISTORY_SLOT(vip_id, (__u32)ref.place);
	switch (ref.ring_class) {
	case 0:
		return owner_in(bpf_map_lookup_elem(&rings_0, &slot), &ref, hash);
	case 1:
		return owner_in(bpf_map_lookup_elem(&rings_1, &slot), &ref, hash);
	case 2:
		return owner_in(bpf_map_lookup_elem(&rings_2, &slot), &ref, hash);
	case 3:
		return owner_in(bpf_map_lookup_elem(&rings_3, &slot), &ref, hash);
	default:
		return 0;
	}
}

#endif /* RINGLB_LB_RING_H */
