// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loading, attaching and feeding the XDP program: see lb.h. The ring swap is
 * the heart of it: a ring is a fresh array map of its class's size, filled
 * through a shared memory mapping in one pass and put into the VIP's spare
 * slot; then one update of the VIP's value names it. The replaced map is
 * freed by the kernel once no program run still uses it.
 */
#include "lb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ring.h"
#include "ringlb.skel.h"
#include "siphash.h"

/* How long a detach waits for the kernel to release the link. */
#define LB_DETACH_WAIT_MS 2000

struct lb_prog {
	struct ringlb_bpf *skel;
	struct lb_maps maps;
};

/* The maps every instance shares through pins, in struct lb_maps order. */
static const char *const pinned_map_names[] = {
	"vips", "backends", "rings_0", "rings_1", "rings_2", "rings_3", "flows", "vip_stats",
	"backend_stats", "reason_stats",
};

#define PINNED_MAPS (sizeof(pinned_map_names) / sizeof(pinned_map_names[0]))

/* Slots of each ring class, smallest first (lb_contract.h). */
static const __u32 ring_class_slots[LB_RING_CLASSES] = {
	LB_RING_CLASS0_SLOTS, LB_RING_CLASS1_SLOTS, LB_RING_CLASS2_SLOTS, LB_RING_CLASS3_SLOTS,
};

/* The descriptors of struct lb_maps, in pinned_map_names order. */
static void maps_fds(struct lb_maps *m, int *fds[PINNED_MAPS])
{
	int *all[PINNED_MAPS] = {
		&m->vips, &m->backends, &m->rings[0], &m->rings[1], &m->rings[2], &m->rings[3],
		&m->flows, &m->vip_stats, &m->backend_stats, &m->reason_stats,
	};

	memcpy(fds, all, sizeof(all));
}

/* max_entries of the map pinned at pin_dir/name: 0 and the size, or -errno. */
static int pinned_max_entries(const char *pin_dir, const char *name, __u32 *max_entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else
		*max_entries = info.max_entries;
	close(fd);
	return err;
}

static void maps_from_skel(struct lb_maps *m, struct ringlb_bpf *skel)
{
	m->vips = bpf_map__fd(skel->maps.vips);
	m->backends = bpf_map__fd(skel->maps.backends);
	m->rings[0] = bpf_map__fd(skel->maps.rings_0);
	m->rings[1] = bpf_map__fd(skel->maps.rings_1);
	m->rings[2] = bpf_map__fd(skel->maps.rings_2);
	m->rings[3] = bpf_map__fd(skel->maps.rings_3);
	m->flows = bpf_map__fd(skel->maps.flows);
	m->vip_stats = bpf_map__fd(skel->maps.vip_stats);
	m->backend_stats = bpf_map__fd(skel->maps.backend_stats);
	m->reason_stats = bpf_map__fd(skel->maps.reason_stats);
}

int lb_prog_load(struct lb_prog **out, const struct lb_load_opts *opts)
{
	struct lb_prog *prog;
	struct bpf_map *map;
	__u32 flow_entries = 0;
	int err;

	*out = NULL;
	prog = calloc(1, sizeof(*prog));
	if (!prog)
		return -ENOMEM;
	prog->skel = ringlb_bpf__open();
	if (!prog->skel) {
		err = -errno;
		goto fail;
	}
	prog->skel->rodata->flow_secret[0] = opts->secret[0];
	prog->skel->rodata->flow_secret[1] = opts->secret[1];
	memcpy((void *)prog->skel->rodata->iface_mac, opts->iface_mac, sizeof(opts->iface_mac));
	/* A pinned flow table keeps its size: reuse needs the same max_entries. */
	if (!opts->pin_dir || pinned_max_entries(opts->pin_dir, "flows", &flow_entries))
		flow_entries = opts->flow_entries ? opts->flow_entries : LB_FLOWS_DEFAULT;
	err = bpf_map__set_max_entries(prog->skel->maps.flows, flow_entries);
	if (err)
		goto fail;
	if (opts->pin_dir) {
		size_t i;

		/* The shared maps only: .rodata and the ring template are per instance. */
		for (i = 0; i < PINNED_MAPS; i++) {
			char path[PATH_MAX];

			map = bpf_object__find_map_by_name(prog->skel->obj, pinned_map_names[i]);
			snprintf(path, sizeof(path), "%s/%s", opts->pin_dir, pinned_map_names[i]);
			err = map ? bpf_map__set_pin_path(map, path) : -ENOENT;
			if (err)
				goto fail;
		}
	}
	err = ringlb_bpf__load(prog->skel);
	if (err)
		goto fail;
	maps_from_skel(&prog->maps, prog->skel);
	*out = prog;
	return 0;
fail:
	lb_prog_close(prog);
	return err < 0 ? err : -EINVAL;
}

int lb_prog_fd(const struct lb_prog *prog)
{
	return bpf_program__fd(prog->skel->progs.ringlb_xdp);
}

const struct lb_maps *lb_prog_maps(const struct lb_prog *prog)
{
	return &prog->maps;
}

void lb_prog_close(struct lb_prog *prog)
{
	if (!prog)
		return;
	ringlb_bpf__destroy(prog->skel);
	free(prog);
}

int lb_attach(struct lb_prog *prog, int ifindex, enum lb_attach_mode mode,
	      const char *link_path)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts,
		    .flags = mode == LB_ATTACH_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
	int link_fd, err = 0;

	link_fd = bpf_link_create(lb_prog_fd(prog), ifindex, BPF_XDP, &opts);
	if (link_fd < 0)
		return -errno;
	if (bpf_obj_pin(link_fd, link_path)) {
		err = -errno;
		/* Closing the only reference to an unpinned link detaches it. */
	}
	close(link_fd);
	return err;
}

int lb_detach(const char *link_path, int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, query);
	int waited_ms;

	if (unlink(link_path))
		return -errno;
	/*
	 * The last reference to a link goes with the pin, but the kernel
	 * detaches it from a work queue: wait, so that a detach is finished
	 * when it returns and an attach right after it succeeds.
	 */
	for (waited_ms = 0; ifindex > 0 && waited_ms < LB_DETACH_WAIT_MS; waited_ms += 10) {
		if (bpf_xdp_query(ifindex, 0, &query) || query.attach_mode == XDP_ATTACHED_NONE)
			return 0;
		usleep(10000);
	}
	return ifindex > 0 ? -ETIMEDOUT : 0;
}

int lb_maps_open_pinned(struct lb_maps *maps, const char *pin_dir)
{
	int *fds[PINNED_MAPS];
	size_t i;
	int err;

	maps_fds(maps, fds);
	for (i = 0; i < PINNED_MAPS; i++)
		*fds[i] = -1;
	for (i = 0; i < PINNED_MAPS; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", pin_dir, pinned_map_names[i]);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			err = -errno;
			lb_maps_close(maps);
			return err;
		}
	}
	return 0;
}

void lb_maps_close(struct lb_maps *maps)
{
	int *fds[PINNED_MAPS];
	size_t i;

	maps_fds(maps, fds);
	for (i = 0; i < PINNED_MAPS; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void lb_maps_init(struct lb_maps *maps)
{
	int *fds[PINNED_MAPS];
	size_t i;

	maps_fds(maps, fds);
	for (i = 0; i < PINNED_MAPS; i++)
		*fds[i] = -1;
}

static int backend_id_check(__u32 id)
{
	return id == LB_BACKEND_NONE || id >= LB_BACKENDS_MAX ? -ERANGE : 0;
}

int lb_backend_read(const struct lb_maps *maps, __u32 id, struct lb_backend *backend)
{
	int err = backend_id_check(id);

	if (err)
		return err;
	return bpf_map_lookup_elem(maps->backends, &id, backend) ? -errno : 0;
}

int lb_backend_install(const struct lb_maps *maps, __u32 id, const struct lb_backend *backend)
{
	struct lb_backend current, staged;
	int err;

	err = lb_backend_read(maps, id, &current);
	if (err)
		return err;
	if (current.state != LB_BACKEND_UNUSED)
		return -EBUSY;
	/* Every field but the state, while the state still says UNUSED... */
	staged = *backend;
	staged.state = LB_BACKEND_UNUSED;
	staged.pad = 0;
	if (bpf_map_update_elem(maps->backends, &id, &staged, BPF_ANY))
		return -errno;
	/* ...then the state alone: the only byte that differs. */
	staged.state = backend->state;
	if (bpf_map_update_elem(maps->backends, &id, &staged, BPF_ANY))
		return -errno;
	return 0;
}

int lb_backend_set_state(const struct lb_maps *maps, __u32 id, enum lb_backend_state state)
{
	struct lb_backend current;
	int err;

	err = lb_backend_read(maps, id, &current);
	if (err)
		return err;
	current.state = (__u8)state;
	return bpf_map_update_elem(maps->backends, &id, &current, BPF_ANY) ? -errno : 0;
}

/* The ring's shape: points, index bits, search strides, fingerprint. */
struct ring_shape {
	size_t points;
	unsigned int bits;
	unsigned int steps;
	__u64 fingerprint;
	int class;
};

static int ring_shape_of(const struct ring *ring, struct ring_shape *shape)
{
	size_t slots;
	int c;

	memset(shape, 0, sizeof(*shape));
	if (!ring || !ring_points(ring, &shape->points))
		return 0;
	ring_index(ring, &shape->bits);
	shape->steps = ring_search_steps(ring);
	shape->fingerprint = ring_fingerprint(ring);
	slots = LB_RING_SLOTS(shape->points, shape->bits);
	for (c = 0; c < LB_RING_CLASSES && ring_class_slots[c] < slots; c++)
		;
	if (c == LB_RING_CLASSES)
		return -E2BIG;
	shape->class = c;
	return 0;
}

/* Write a ring's used slots (header, buckets, points) into zeroed @map. */
static void ring_render(union lb_ring_slot *map, const struct ring *ring,
			const struct ring_shape *shape, const __u32 *backend_of_member)
{
	const struct ring_bucket *index;
	const struct ring_point *points;
	unsigned int bits;
	size_t count, i;

	points = ring_points(ring, &count);
	index = ring_index(ring, &bits);
	map[0].header.fingerprint = shape->fingerprint;
	map[0].header.points = (__u32)count;
	for (i = 0; i <= ((size_t)1 << bits); i++) {
		union lb_ring_slot *s = &map[LB_RING_BUCKET_SLOT(i)];

		s->bucket.position = index[i].position;
		s->bucket.first = index[i].first;
		s->bucket.backend_id = backend_of_member[index[i].owner];
	}
	for (i = 0; i < count; i++) {
		union lb_ring_slot *s = &map[LB_RING_POINT_SLOT(bits, i)];

		s->point.position = points[i].position;
		s->point.backend_id = backend_of_member[points[i].member];
	}
}

static size_t map_bytes(__u32 slots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)slots * sizeof(union lb_ring_slot) + page - 1) / page * page;
}

/* Fill a new (zeroed) ring map through a shared mapping. */
static int ring_map_fill(int map_fd, __u32 slots, const struct ring *ring,
			 const struct ring_shape *shape, const __u32 *backend_of_member)
{
	size_t bytes = map_bytes(slots);
	union lb_ring_slot *map;

	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	ring_render(map, ring, shape, backend_of_member);
	munmap(map, bytes);
	return 0;
}

static __u32 ring_slot_of(__u32 vip_id, unsigned int parity)
{
	return vip_id * LB_RING_SLOTS_PER_VIP + parity;
}

/* Empty every ring slot of a VIP but one (class -1: all of them). */
static int vip_slots_clear(const struct lb_maps *maps, __u32 vip_id, int keep_class,
			   unsigned int keep_parity)
{
	unsigned int parity;
	int c;

	for (c = 0; c < LB_RING_CLASSES; c++) {
		for (parity = 0; parity < LB_RING_SLOTS_PER_VIP; parity++) {
			__u32 slot = ring_slot_of(vip_id, parity);

			if (c == keep_class && parity == keep_parity)
				continue;
			if (bpf_map_delete_elem(maps->rings[c], &slot) && errno != ENOENT)
				return -errno;
		}
	}
	return 0;
}

int lb_vip_install(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct lb_vip current, vip = { .vip_id = vip_id };
	struct ring_shape shape;
	unsigned int parity = 0;
	int map_fd, err;
	__u32 slot;

	if (vip_id >= LB_VIPS_MAX)
		return -ERANGE;
	err = ring_shape_of(ring, &shape);
	if (err)
		return err;
	/* The new ring goes into the slot the current value does not name. */
	if (bpf_map_lookup_elem(maps->vips, key, &current) == 0 && current.vip_id == vip_id)
		parity = !current.ring_parity;
	vip.points = (__u32)shape.points;
	vip.ring_class = (__u8)shape.class;
	vip.ring_parity = (__u8)parity;
	vip.index_bits = (__u8)shape.bits;
	vip.search_steps = (__u8)shape.steps;
	vip.fingerprint = shape.fingerprint;
	if (shape.points) {
		map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ringlb_ring", sizeof(__u32),
					sizeof(union lb_ring_slot), ring_class_slots[shape.class],
					&opts);
		if (map_fd < 0)
			return -errno;
		err = ring_map_fill(map_fd, ring_class_slots[shape.class], ring, &shape,
				    backend_of_member);
		slot = ring_slot_of(vip_id, parity);
		if (!err && bpf_map_update_elem(maps->rings[shape.class], &slot, &map_fd, BPF_ANY))
			err = -errno;
		close(map_fd);
		if (err)
			return err;
	}
	/* The swap: one update of the VIP's value, which names the new ring. */
	if (bpf_map_update_elem(maps->vips, key, &vip, BPF_ANY))
		return -errno;
	/*
	 * The old ring can go at once: a packet that still holds the old value
	 * finds its slot empty, or holding another ring, and reads the VIP again.
	 */
	return vip_slots_clear(maps, vip_id, shape.points ? shape.class : -1, parity);
}

int lb_vip_remove(const struct lb_maps *maps, const struct lb_vip_key *key)
{
	struct lb_vip current;

	if (bpf_map_lookup_elem(maps->vips, key, &current))
		return errno == ENOENT ? 0 : -errno;
	if (bpf_map_delete_elem(maps->vips, key) && errno != ENOENT)
		return -errno;
	return vip_slots_clear(maps, current.vip_id, -1, 0);
}

int lb_vip_rings_clear(const struct lb_maps *maps, __u32 vip_id)
{
	return vip_id >= LB_VIPS_MAX ? -ERANGE : vip_slots_clear(maps, vip_id, -1, 0);
}

/*
 * The used slots of the ring a VIP value names, mapped read-only: 0 with
 * @view (unmap with ring_view_close()), or -ENOENT when the slot is empty.
 */
struct ring_view {
	const union lb_ring_slot *slots;
	size_t bytes;
	size_t used;
};

static int ring_view_open(const struct lb_maps *maps, const struct lb_vip *vip,
			  struct ring_view *view)
{
	__u32 inner_id, slot = ring_slot_of(vip->vip_id, vip->ring_parity);
	void *map;
	int fd;

	if (vip->ring_class >= LB_RING_CLASSES)
		return -EBADMSG;
	if (bpf_map_lookup_elem(maps->rings[vip->ring_class], &slot, &inner_id))
		return -ENOENT;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		return -ENOENT;
	view->bytes = map_bytes(ring_class_slots[vip->ring_class]);
	map = mmap(NULL, view->bytes, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	view->slots = map;
	view->used = LB_RING_SLOTS(vip->points, vip->index_bits);
	return 0;
}

static void ring_view_close(struct ring_view *view)
{
	munmap((void *)view->slots, view->bytes);
}

int lb_vip_compare(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member, char *why,
		   size_t why_len)
{
	union lb_ring_slot *want;
	struct ring_shape shape;
	struct ring_view have;
	struct lb_vip vip;
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
			      vip.search_steps != shape.steps ||
			      vip.fingerprint != shape.fingerprint))) {
		snprintf(why, why_len, "the kernel's VIP value describes another ring");
		return -EBADMSG;
	}
	if (!shape.points)
		return 0;
	err = ring_view_open(maps, &vip, &have);
	if (err) {
		snprintf(why, why_len, "the kernel has no ring in the VIP's slot");
		return err;
	}
	want = calloc(have.used, sizeof(*want));
	if (!want) {
		ring_view_close(&have);
		return -ENOMEM;
	}
	ring_render(want, ring, &shape, backend_of_member);
	if (memcmp(want, have.slots, have.used * sizeof(*want))) {
		snprintf(why, why_len, "the kernel's ring differs from the state's");
		err = -EBADMSG;
	}
	free(want);
	ring_view_close(&have);
	return err;
}

int lb_vip_ring_digest(const struct lb_maps *maps, const struct lb_vip_key *key, __u64 *digest)
{
	struct siphash_state st;
	struct ring_view view;
	struct lb_vip vip;
	uint64_t words[2];
	size_t i;
	int err;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		return -errno;
	siphash_init(&st, 0x72696e67ULL, 0x64696765737476ULL);
	if (vip.points == 0) {
		*digest = siphash_finish(&st, 0, 2, 4);
		return 0;
	}
	err = ring_view_open(maps, &vip, &view);
	if (err)
		return err;
	for (i = 0; i < view.used; i++) {
		memcpy(words, &view.slots[i], sizeof(words));
		siphash_compress(&st, words[0], 2);
		siphash_compress(&st, words[1], 2);
	}
	*digest = siphash_finish(&st, (uint64_t)view.used << 32, 2, 4);
	ring_view_close(&view);
	return 0;
}

void lb_flow_key_init(struct lb_flow_key *key, int family, const void *client, __be16 client_port,
		      const void *vip, __be16 vip_port, __u8 protocol)
{
	size_t len = family == LB_FAMILY_IPV4 ? 4 : 16;

	memset(key, 0, sizeof(*key));
	memcpy(key->src_addr, client, len);
	memcpy(key->dst_addr, vip, len);
	key->src_port = client_port;
	key->dst_port = vip_port;
	key->protocol = protocol;
	key->family = (__u8)family;
}

__u64 lb_flow_hash(const __u64 secret[2], const struct lb_flow_key *key)
{
	uint64_t words[SIPHASH_FLOW_WORDS];

	memcpy(words, key, sizeof(words));
	return siphash13_flow(words, secret[0], secret[1]);
}
