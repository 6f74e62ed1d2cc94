// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring maps (lb.h). The ring swap is the heart of it. A VIP keeps two
 * ring maps of its class, the one its value names and a spare holding the
 * same ring. A change is written into the spare through a shared memory
 * mapping (only the buckets it touches, see ringmap.h), then one update of
 * the VIP's value names it; once no program run can still read the old map,
 * the same change is written into it, and it is the spare. A whole new ring
 * (the first, another class, a spare that is not known good) goes into a
 * fresh map, and its copy becomes the spare. Previous rings (history) are
 * kept the same way, in the history map's places.
 */
#include "lb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ring.h"
#include "ringmap.h"
#include "siphash.h"


/*
 * A VIP value was replaced or deleted since the last wait for running
 * programs: its element may still be read, and the next VIP update could be
 * handed that element. Any wait pays this (an update of an array of maps
 * waits too); the next VIP update, and lb_readers_release(), wait when it is
 * still owed.
 */
static int grace_owed;

/* The waits this process made (lb_readers_waits()). */
static unsigned long waits;

unsigned long lb_readers_waits(void)
{
	return waits;
}

/*
 * Wait until every program run that started before this call is done: an
 * update of an array of maps returns only after an RCU grace period
 * (synchronize_rcu() in the kernel's map update), and XDP programs run
 * inside RCU read-side sections. A private outer map with one slot serves,
 * made at the first call and kept for the process; only a successful update
 * waits (Linux 6.8 and later skip the wait when the update fails).
 */
int lb_readers_wait(void)
{
	static int outer = -1, inner = -1;
	__u32 zero = 0;

	if (outer < 0) {
		LIBBPF_OPTS(bpf_map_create_opts, opts);

		inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ringlb_wait_in", sizeof(__u32),
				       sizeof(__u32), 1, NULL);
		if (inner < 0)
			return -errno;
		opts.inner_map_fd = inner;
		outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "ringlb_wait", sizeof(__u32),
				       sizeof(__u32), 1, &opts);
		if (outer < 0) {
			int err = -errno;

			close(inner);
			inner = -1;
			return err;
		}
	}
	if (bpf_map_update_elem(outer, &zero, &inner, BPF_ANY))
		return -errno;
	grace_owed = 0;
	waits++;
	return 0;
}

/*
 * The VIP epoch (lb_contract.h, each CPU's VIP cache) is odd from before a
 * VIP value is written until a wait for running programs after the last such
 * write; then it moves to the next even value, and every copy the CPUs made
 * under the one before is dropped. A packet that reads the new epoch began
 * after that wait began, so it reads the map as it is after the writes: its
 * CPU's copies are never older than the map. epoch_ours: the odd epoch this
 * process stored, whose writes grace_owed accounts for; an epoch found odd
 * and not ours (a change killed before its end) or zero (never closed) is
 * waited for before this process opens or closes it.
 */
static __u64 epoch_ours;

/*
 * Write @epoch into the epoch word of @maps as one 64-bit store (an array
 * update copies with memcpy, which may tear), then a full barrier: the odd
 * epoch is visible before the VIP write that follows it.
 */
static int epoch_store(const struct lb_maps *maps, __u64 epoch)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	__u64 *word;

	word = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, maps->vip_epoch, 0);
	if (word == MAP_FAILED)
		return -errno;
	__atomic_store_n(word, epoch, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	munmap(word, page);
	return 0;
}

static int epoch_read(const struct lb_maps *maps, __u64 *epoch)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(maps->vip_epoch, &zero, epoch) ? -errno : 0;
}

/* Before a VIP write: the epoch odd, and ours. Maps without an epoch (a benchmark's) have none. */
static int epoch_open(const struct lb_maps *maps)
{
	__u64 epoch;
	int err;

	if (maps->vip_epoch < 0)
		return 0;
	err = epoch_read(maps, &epoch);
	if (err || (epoch == epoch_ours && epoch % 2))
		return err;
	/* Another's odd epoch: its writes are waited for, and the epoch is made ours. */
	if (epoch % 2) {
		err = lb_readers_wait();
		epoch++;
	}
	err = err ?: epoch_store(maps, epoch + 1);
	if (!err)
		epoch_ours = epoch + 1;
	return err;
}

/* After the last VIP write of a change: the next even epoch, once its writes were waited for. */
static int epoch_close(const struct lb_maps *maps)
{
	__u64 epoch;
	int err;

	if (maps->vip_epoch < 0)
		return 0;
	err = epoch_read(maps, &epoch);
	if (err || (epoch && epoch % 2 == 0))
		return err;
	if (epoch == 0 || epoch != epoch_ours || grace_owed)
		err = lb_readers_wait();
	err = err ?: epoch_store(maps, (epoch | 1) + 1);
	if (!err)
		epoch_ours = 0;
	return err;
}

/* The wait a VIP write owes, if one does. */
static int readers_owed(void)
{
	return grace_owed ? lb_readers_wait() : 0;
}

int lb_readers_release(const struct lb_maps *maps)
{
	return readers_owed() ?: epoch_close(maps);
}

/* Before a VIP value is written or deleted: the last write's wait paid, the epoch opened. */
static int vip_write_begin(const struct lb_maps *maps)
{
	return readers_owed() ?: epoch_open(maps);
}

/*
 * Replace (or add) a VIP's value. The vips map is not preallocated, but its
 * elements come from the BPF memory allocator, which since Linux 6.1 hands a
 * freed element to the very next update: without a wait between two VIP
 * updates, the second could write another VIP's value into the element a
 * packet is still reading. So a VIP update first pays the wait the last one
 * owes, and owes one itself.
 */
static int vip_value_set(const struct lb_maps *maps, const struct lb_vip_key *key,
			 const struct lb_vip *vip)
{
	int err = vip_write_begin(maps);

	if (err)
		return err;
	if (bpf_map_update_elem(maps->vips, key, vip, BPF_ANY))
		return -errno;
	grace_owed = 1;
	return 0;
}

int lb_vip_sources_swap(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
			__u8 parity, __u8 flags)
{
	struct lb_vip vip;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		return -errno;
	if (vip.vip_id != vip_id)
		return -ESTALE;
	vip.source_parity = parity;
	vip.flags = (__u8)((vip.flags & ~LB_VIP_SOURCE_FLAGS) | (flags & LB_VIP_SOURCE_FLAGS));
	return vip_value_set(maps, key, &vip);
}

int lb_vip_quic_swap(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		     int on, const struct lb_quic_lb *quic, __u8 parity)
{
	struct lb_vip vip;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		return -errno;
	if (vip.vip_id != vip_id)
		return -ESTALE;
	memset(&vip.quic, 0, sizeof(vip.quic));
	if (on)
		vip.quic = *quic;
	vip.quic_parity = parity & 1;
	vip.flags = (__u8)((vip.flags & ~LB_VIP_QUIC_LB) | (on ? LB_VIP_QUIC_LB : 0));
	return vip_value_set(maps, key, &vip);
}

/* Remove a VIP's value, with the waits of vip_value_set(). */
static int vip_value_delete(const struct lb_maps *maps, const struct lb_vip_key *key)
{
	int err = vip_write_begin(maps);

	if (err)
		return err;
	if (bpf_map_delete_elem(maps->vips, key))
		return errno == ENOENT ? 0 : -errno;
	grace_owed = 1;
	return 0;
}

/* The ring's shape: points, index bits, class, fingerprint. */
struct ring_shape {
	size_t points;
	unsigned int bits;
	__u64 fingerprint;
	int class;
};

static int ring_shape_of(const struct ring *ring, struct ring_shape *shape)
{
	int class;

	memset(shape, 0, sizeof(*shape));
	if (!ring || !ring_points(ring, &shape->points))
		return 0;
	shape->bits = ringmap_bits(shape->points);
	shape->fingerprint = ring_fingerprint(ring);
	class = ringmap_class(shape->points, shape->bits);
	if (class < 0)
		return class;
	shape->class = class;
	return 0;
}

static size_t map_bytes(__u32 slots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)slots * sizeof(union lb_ring_slot) + page - 1) / page * page;
}

static __u32 ring_slot_of(__u32 vip_id, unsigned int parity)
{
	return vip_id * LB_RING_SLOTS_PER_VIP + parity;
}

/*
 * A ring map held by the kernel: its descriptor and a shared mapping of it.
 * close with ring_mapping_close().
 */
struct ring_mapping {
	int fd;
	struct ringmap image;
	size_t bytes;
};

static void ring_mapping_close(struct ring_mapping *rm)
{
	if (rm->image.slots)
		munmap(rm->image.slots, rm->bytes);
	if (rm->fd >= 0)
		close(rm->fd);
	rm->image.slots = NULL;
	rm->fd = -1;
}

static int ring_mapping_map(struct ring_mapping *rm, int class, unsigned int bits, int prot)
{
	void *map;

	rm->image.slot_count = ringmap_class_slots(class);
	rm->image.bits = bits;
	rm->bytes = map_bytes((__u32)rm->image.slot_count);
	map = mmap(NULL, rm->bytes, prot, MAP_SHARED, rm->fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	rm->image.slots = map;
	return 0;
}

/* A new, zeroed ring map of @class, mapped for writing. */
static int ring_mapping_create(struct ring_mapping *rm, int class, unsigned int bits)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int err;

	rm->image.slots = NULL;
	rm->fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ringlb_ring", sizeof(__u32),
				sizeof(union lb_ring_slot), ringmap_class_slots(class), &opts);
	if (rm->fd < 0)
		return -errno;
	err = ring_mapping_map(rm, class, bits, PROT_READ | PROT_WRITE);
	if (err)
		ring_mapping_close(rm);
	return err;
}

/* The map in slot @parity of a VIP's @class, not mapped yet; -ENOENT when empty. */
static int ring_mapping_get(struct ring_mapping *rm, const struct lb_maps *maps, __u32 vip_id,
			    int class, unsigned int parity)
{
	__u32 inner_id, slot = ring_slot_of(vip_id, parity);

	rm->image.slots = NULL;
	rm->fd = -1;
	if (class < 0 || class >= LB_RING_CLASSES)
		return -EBADMSG;
	if (bpf_map_lookup_elem(maps->rings[class], &slot, &inner_id))
		return -ENOENT;
	rm->fd = bpf_map_get_fd_by_id(inner_id);
	return rm->fd < 0 ? -ENOENT : 0;
}

/* The map in slot @parity of a VIP's @class, mapped with @prot; -ENOENT when empty. */
static int ring_mapping_open(struct ring_mapping *rm, const struct lb_maps *maps, __u32 vip_id,
			     int class, unsigned int parity, unsigned int bits, int prot)
{
	int err;

	if (bits < LB_RING_BITS_MIN || bits > LB_RING_BITS_MAX)
		return -EBADMSG;
	err = ring_mapping_get(rm, maps, vip_id, class, parity);
	if (!err)
		err = ring_mapping_map(rm, class, bits, prot);
	if (err)
		ring_mapping_close(rm);
	return err;
}

/* Put @rm's map in slot @parity of a VIP's @class. */
static int ring_mapping_place(const struct ring_mapping *rm, const struct lb_maps *maps,
			      __u32 vip_id, int class, unsigned int parity)
{
	__u32 slot = ring_slot_of(vip_id, parity);

	if (bpf_map_update_elem(maps->rings[class], &slot, &rm->fd, BPF_ANY))
		return -errno;
	grace_owed = 0; /* the update waited for running programs */
	return 0;
}

/* Empty slot @parity of a VIP's @class (already empty is fine). */
static int vip_slot_clear(const struct lb_maps *maps, __u32 vip_id, int class,
			  unsigned int parity)
{
	__u32 slot = ring_slot_of(vip_id, parity);

	if (bpf_map_delete_elem(maps->rings[class], &slot))
		return errno == ENOENT ? 0 : -errno;
	grace_owed = 0; /* a delete that succeeds waits for running programs */
	return 0;
}

/* Forget a VIP's previous rings: its history reference, zeroed. */
static int history_clear(const struct lb_maps *maps, __u32 vip_id)
{
	struct lb_vip_history none = { 0 };

	return bpf_map_update_elem(maps->history, &vip_id, &none, BPF_ANY) ? -errno : 0;
}

/*
 * Empty a VIP's serving and spare slots outside class @keep_class, or, for
 * @keep_class -1, every slot of the VIP, previous rings included.
 */
static int vip_slots_clear(const struct lb_maps *maps, __u32 vip_id, int keep_class)
{
	unsigned int parity, slots = keep_class < 0 ? LB_RING_SLOTS_PER_VIP : 2;
	int c, err;

	for (c = 0; c < LB_RING_CLASSES; c++) {
		if (c == keep_class)
			continue;
		for (parity = 0; parity < slots; parity++) {
			err = vip_slot_clear(maps, vip_id, c, parity);
			if (err)
				return err;
		}
	}
	return 0;
}

int lb_vip_install(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member)
{
	return lb_vip_install_as(maps, key, vip_id, ring, backend_of_member, 0);
}

int lb_vip_install_as(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		      const struct ring *ring, const __u32 *backend_of_member, __u8 flags)
{
	struct lb_vip as = { .flags = flags };

	return lb_vip_install_with(maps, key, vip_id, ring, backend_of_member, &as);
}

int lb_vip_install_with(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
			const struct ring *ring, const __u32 *backend_of_member,
			const struct lb_vip *as)
{
	struct lb_vip current, vip = { .vip_id = vip_id, .flags = as->flags, .quic = as->quic,
				       .quic_parity = as->quic_parity };
	struct ring_mapping fresh = { .fd = -1 };
	struct ring_shape shape;
	unsigned int parity = 0;
	int err;

	if (vip_id >= LB_VIPS_MAX)
		return -ERANGE;
	err = ring_shape_of(ring, &shape);
	if (err)
		return err;
	/* The new ring goes into the slot the current value does not name. */
	if (bpf_map_lookup_elem(maps->vips, key, &current) == 0 && current.vip_id == vip_id) {
		parity = !current.ring_parity;
		/*
		 * The source set and the QUIC-LB side it serves stay: only their
		 * swaps change them (lb_vip_sources_swap(), lb_vip_quic_swap()).
		 */
		vip.source_parity = current.source_parity;
		vip.quic = current.quic;
		vip.quic_parity = current.quic_parity;
		vip.flags = (__u8)((vip.flags & ~LB_VIP_QUIC_LB) | (current.flags & LB_VIP_QUIC_LB));
	}
	vip.points = (__u32)shape.points;
	vip.ring_class = (__u8)shape.class;
	vip.ring_parity = (__u8)parity;
	vip.index_bits = (__u8)shape.bits;
	vip.fingerprint = shape.fingerprint;
	if (shape.points) {
		err = ring_mapping_create(&fresh, shape.class, shape.bits);
		if (err)
			return err;
		err = ringmap_render(&fresh.image, ring, backend_of_member, shape.fingerprint) ?:
		      ring_mapping_place(&fresh, maps, vip_id, shape.class, parity);
		ring_mapping_close(&fresh);
		if (err)
			return err;
	}
	/* The swap: one update of the VIP's value, which names the new ring. */
	err = vip_value_set(maps, key, &vip);
	if (err)
		return err;
	/* An empty ring: no serving map, and none spare; previous rings stay. */
	return shape.points ? 0 : vip_slots_clear(maps, vip_id, LB_RING_CLASSES);
}

/*
 * After lb_vip_install(): a copy of the serving map becomes the spare, and
 * slots of other classes are emptied. Placing the copy replaces the old ring
 * (a packet still holding the old value finds another ring there and reads
 * the VIP again). A copy that cannot be made leaves the spare slot empty.
 */
static int spare_copy(const struct lb_maps *maps, const struct lb_vip *vip)
{
	struct ring_mapping live, spare;
	size_t used;
	int err;

	err = ring_mapping_open(&live, maps, vip->vip_id, vip->ring_class, vip->ring_parity,
				vip->index_bits, PROT_READ);
	if (err)
		return err;
	err = ring_mapping_create(&spare, vip->ring_class, vip->index_bits);
	if (!err) {
		used = LB_RING_RUN_SLOT(vip->index_bits,
					live.image.slots[LB_RING_COUNTS_SLOT].counts.runs_used);
		if (used > live.image.slot_count)
			err = -EBADMSG;
		else
			memcpy(spare.image.slots, live.image.slots, used * sizeof(union lb_ring_slot));
		if (!err)
			err = ring_mapping_place(&spare, maps, vip->vip_id, vip->ring_class,
						 !vip->ring_parity);
		ring_mapping_close(&spare);
	}
	ring_mapping_close(&live);
	if (err)
		vip_slot_clear(maps, vip->vip_id, vip->ring_class, !vip->ring_parity);
	return err ?: vip_slots_clear(maps, vip->vip_id, vip->ring_class);
}

/* The VIP's value, checked to be @vip_id's and to serve the ring @change starts from. */
static int patch_start(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		       const struct lb_ring_change *change, struct lb_vip *vip)
{
	unsigned int bits = ringmap_bits(change->to_points);

	if (bpf_map_lookup_elem(maps->vips, key, vip))
		return -errno;
	if (vip->vip_id != vip_id || vip->fingerprint != change->from_fingerprint)
		return -ESTALE;
	/* A ring of another size is built whole, as a fresh build would lay it out. */
	if (vip->points == 0 || change->to_points == 0 || bits != vip->index_bits ||
	    ringmap_class(change->to_points, bits) != vip->ring_class)
		return -EAGAIN;
	return 0;
}

/* Is @rm a complete image of the ring @fingerprint with @points points? */
static int image_is(const struct ring_mapping *rm, __u64 fingerprint, __u32 points)
{
	const union lb_ring_slot *slots = rm->image.slots;

	return slots[LB_RING_FINGERPRINT_SLOT].fingerprint == fingerprint &&
	       slots[LB_RING_COUNTS_SLOT].counts.points == points;
}

int lb_vip_patch(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		 const struct lb_ring_change *change)
{
	struct ring_mapping spare = { .fd = -1 };
	struct lb_vip vip;
	int err;

	err = patch_start(maps, key, vip_id, change, &vip);
	if (err)
		return err;
	err = ring_mapping_open(&spare, maps, vip_id, vip.ring_class, !vip.ring_parity,
				vip.index_bits, PROT_READ | PROT_WRITE);
	if (err)
		return err == -ENOENT ? -EAGAIN : err;
	/* The spare must hold the serving ring, whole (a killed change leaves it otherwise). */
	if (!image_is(&spare, vip.fingerprint, vip.points)) {
		err = -EAGAIN;
		goto out;
	}
	err = ringmap_apply(&spare.image, change->edits, change->count, change->to_fingerprint);
	if (err)
		goto out;
	vip.ring_parity = !vip.ring_parity;
	vip.points = (__u32)change->to_points;
	vip.fingerprint = change->to_fingerprint;
	err = vip_value_set(maps, key, &vip);
out:
	ring_mapping_close(&spare);
	return err;
}

/* After lb_vip_patch(): the same change, written into the map that served before. */
static int spare_patch(const struct lb_maps *maps, const struct lb_vip *vip,
		       const struct lb_ring_change *change)
{
	struct ring_mapping old;
	int err;

	if (vip->fingerprint != change->to_fingerprint || vip->points != change->to_points)
		return -ESTALE;
	err = ring_mapping_get(&old, maps, vip->vip_id, vip->ring_class, !vip->ring_parity);
	if (err)
		return err;
	/*
	 * Packets that read the VIP value before the swap may still be reading
	 * this map. Putting it back in its own slot waits for them: an update
	 * of an array of maps returns only after every running program is done
	 * (synchronize_rcu() in the kernel's map update), and later packets
	 * read the new value. The wait comes first, whatever follows: backends
	 * the change removed are freed after this returns.
	 */
	err = ring_mapping_place(&old, maps, vip->vip_id, vip->ring_class, !vip->ring_parity) ?:
	      ring_mapping_map(&old, vip->ring_class, vip->index_bits, PROT_READ | PROT_WRITE);
	if (err)
		goto out;
	if (old.image.slots[LB_RING_FINGERPRINT_SLOT].fingerprint != change->from_fingerprint ||
	    old.image.slots[LB_RING_COUNTS_SLOT].counts.points == LB_RING_POINTS_WRITING) {
		err = -ESTALE;
		goto out;
	}
	err = ringmap_apply(&old.image, change->edits, change->count, change->to_fingerprint);
out:
	ring_mapping_close(&old);
	return err;
}

int lb_vip_settle(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		  const struct lb_ring_change *change)
{
	struct lb_vip vip;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		return -errno;
	if (vip.vip_id != vip_id)
		return -ESTALE;
	if (vip.points == 0)
		return 0;
	return change ? spare_patch(maps, &vip, change) : spare_copy(maps, &vip);
}

int lb_vip_remove(const struct lb_maps *maps, const struct lb_vip_key *key)
{
	struct lb_vip current;

	if (bpf_map_lookup_elem(maps->vips, key, &current))
		return errno == ENOENT ? 0 : -errno;
	return vip_value_delete(maps, key) ?: history_clear(maps, current.vip_id) ?:
	       vip_slots_clear(maps, current.vip_id, -1);
}

int lb_vip_rings_clear(const struct lb_maps *maps, __u32 vip_id)
{
	return vip_id >= LB_VIPS_MAX ? -ERANGE :
	       history_clear(maps, vip_id) ?: vip_slots_clear(maps, vip_id, -1);
}

/* Empty history place @place of a VIP in every class. */
static int place_clear(const struct lb_maps *maps, __u32 vip_id, __u32 place)
{
	int c, err;

	for (c = 0; c < LB_RING_CLASSES; c++) {
		err = vip_slot_clear(maps, vip_id, c, 2 + place);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Does place @ref->place hold @ring with @backend_ids, whole? Compared slot
 * by slot: a fingerprint names the members, not the backends they stand for
 * (a name added again gets another slot).
 */
static int place_holds(const struct lb_maps *maps, __u32 vip_id, const struct lb_ring_ref *ref,
		       const struct ring *ring, const __u32 *backend_ids)
{
	struct ring_mapping rm;
	int same;

	if (!ref->fingerprint ||
	    ring_mapping_open(&rm, maps, vip_id, ref->ring_class, 2 + ref->place,
			      ref->index_bits, PROT_READ))
		return 0;
	same = image_is(&rm, ref->fingerprint, ref->points) &&
	       ringmap_compare(&rm.image, ring, backend_ids, ref->fingerprint) == 0;
	ring_mapping_close(&rm);
	return same;
}

int lb_vip_history_sync(const struct lb_maps *maps, __u32 vip_id, struct ring *const *rings,
			__u32 *const *backend_ids, __u32 count)
{
	struct lb_vip_history have = { 0 }, want = { 0 };
	int used[LB_RING_HISTORY] = { 0 }, err;
	struct ring_shape shape[LB_RING_HISTORY];
	__u32 i, j, p;

	if (vip_id >= LB_VIPS_MAX || count > LB_RING_HISTORY)
		return -ERANGE;
	if (bpf_map_lookup_elem(maps->history, &vip_id, &have))
		return -errno;
	/* Rings the kernel has already keep their places. */
	for (i = 0; i < count; i++) {
		err = ring_shape_of(rings[i], &shape[i]);
		if (err)
			return err;
		if (!shape[i].points)
			return -EINVAL;
		want.rings[i] = (struct lb_ring_ref){ .fingerprint = shape[i].fingerprint,
						      .points = (__u32)shape[i].points,
						      .ring_class = (__u8)shape[i].class,
						      .index_bits = (__u8)shape[i].bits,
						      .place = LB_RING_HISTORY };
		for (j = 0; j < LB_RING_HISTORY; j++) {
			struct lb_ring_ref r = have.rings[j];

			if (r.place < LB_RING_HISTORY && !used[r.place] &&
			    r.fingerprint == want.rings[i].fingerprint &&
			    r.points == want.rings[i].points && r.ring_class == shape[i].class &&
			    r.index_bits == shape[i].bits &&
			    place_holds(maps, vip_id, &r, rings[i], backend_ids[i])) {
				want.rings[i].place = r.place;
				used[r.place] = 1;
				break;
			}
		}
	}
	/* The others, built whole in a free place (a packet reading it there now skips it). */
	for (i = 0; i < count; i++) {
		struct ring_mapping fresh = { .fd = -1 };

		if (want.rings[i].place < LB_RING_HISTORY)
			continue;
		for (p = 0; used[p]; p++)
			;
		used[p] = 1;
		want.rings[i].place = (__u8)p;
		err = place_clear(maps, vip_id, p) ?:
		      ring_mapping_create(&fresh, shape[i].class, shape[i].bits);
		if (err)
			return err;
		err = ringmap_render(&fresh.image, rings[i], backend_ids[i], shape[i].fingerprint) ?:
		      ring_mapping_place(&fresh, maps, vip_id, shape[i].class, 2 + p);
		ring_mapping_close(&fresh);
		if (err)
			return err;
	}
	if (memcmp(&have, &want, sizeof(want)) &&
	    bpf_map_update_elem(maps->history, &vip_id, &want, BPF_ANY))
		return -errno;
	/* Places no previous ring uses any more. */
	for (p = 0; p < LB_RING_HISTORY; p++) {
		err = used[p] ? 0 : place_clear(maps, vip_id, p);
		if (err)
			return err;
	}
	return 0;
}

int lb_vip_history_compare(const struct lb_maps *maps, __u32 vip_id, struct ring *const *rings,
			   __u32 *const *backend_ids, __u32 count, char *why, size_t why_len)
{
	struct lb_vip_history have;
	struct ring_mapping rm;
	struct ring_shape shape;
	__u32 i;
	int err;

	if (bpf_map_lookup_elem(maps->history, &vip_id, &have))
		return -errno;
	for (i = 0; i < LB_RING_HISTORY; i++) {
		struct lb_ring_ref r = have.rings[i];

		if (i >= count) {
			if (r.fingerprint) {
				snprintf(why, why_len, "the kernel keeps a previous ring %u the state "
					 "does not", i + 1);
				return -EBADMSG;
			}
			continue;
		}
		err = ring_shape_of(rings[i], &shape);
		if (err)
			return err;
		if (r.fingerprint != shape.fingerprint || r.points != shape.points ||
		    r.ring_class != shape.class || r.index_bits != shape.bits ||
		    r.place >= LB_RING_HISTORY) {
			snprintf(why, why_len, "the kernel's previous ring %u is not the state's",
				 i + 1);
			return -EBADMSG;
		}
		err = ring_mapping_open(&rm, maps, vip_id, r.ring_class, 2 + r.place, r.index_bits,
					PROT_READ);
		if (err) {
			snprintf(why, why_len, "the kernel has no previous ring %u in its slot", i + 1);
			return -EBADMSG;
		}
		err = ringmap_compare(&rm.image, rings[i], backend_ids[i], shape.fingerprint);
		ring_mapping_close(&rm);
		if (err) {
			snprintf(why, why_len, "the kernel's previous ring %u differs from the state's",
				 i + 1);
			return -EBADMSG;
		}
	}
	return 0;
}

int lb_vip_compare(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member, char *why,
		   size_t why_len)
{
	struct ring_mapping have;
	struct ring_shape shape;
	struct lb_vip vip;
	unsigned int parity;
	int err;

	err = ring_shape_of(ring, &shape);
	if (err)
		return err;
	if (bpf_map_lookup_elem(maps->vips, key, &vip)) {
		snprintf(why, why_len, "the VIP is not in the kernel");
		return -ENOENT;
	}
	if (vip.vip_id != vip_id || vip.points != shape.points ||
	    (shape.points && (vip.ring_class != shape.class || vip.index_bits != shape.bits ||
			      vip.fingerprint != shape.fingerprint))) {
		snprintf(why, why_len, "the kernel's VIP value describes another ring");
		return -EBADMSG;
	}
	if (!shape.points)
		return 0;
	/* The serving ring, and the spare when it claims to hold the same ring. */
	for (parity = 0; parity < LB_RING_SLOTS_PER_VIP; parity++) {
		int serving = parity == vip.ring_parity;

		err = ring_mapping_open(&have, maps, vip_id, vip.ring_class, parity, vip.index_bits,
					PROT_READ);
		if (err && !serving)
			continue;
		if (err) {
			snprintf(why, why_len, "the kernel has no ring in the VIP's slot");
			return err;
		}
		if ((serving || image_is(&have, shape.fingerprint, (__u32)shape.points)) &&
		    ringmap_compare(&have.image, ring, backend_of_member, shape.fingerprint)) {
			snprintf(why, why_len, "the kernel's %s ring differs from the state's",
				 serving ? "serving" : "spare");
			err = -EBADMSG;
		}
		ring_mapping_close(&have);
		if (err)
			return err;
	}
	return 0;
}

int lb_vip_ring_digest(const struct lb_maps *maps, const struct lb_vip_key *key, __u64 *digest)
{
	struct ring_mapping view;
	struct lb_vip vip;
	int err;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		return -errno;
	if (vip.points == 0) {
		*digest = 0;
		return 0;
	}
	err = ring_mapping_open(&view, maps, vip.vip_id, vip.ring_class, vip.ring_parity,
				vip.index_bits, PROT_READ);
	if (err)
		return err;
	err = ringmap_digest(&view.image, digest);
	ring_mapping_close(&view);
	return err;
}
