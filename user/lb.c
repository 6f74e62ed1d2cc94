// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loading, attaching and feeding the XDP program: see lb.h. The ring swap is
 * the heart of it: a ring is a fresh array map, filled through a shared
 * memory mapping in one pass, then put into the VIP's slot of the rings map
 * with a single update, which the kernel makes atomic for readers. The
 * replaced map is freed by the kernel once no program run still uses it.
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

/* Flags every ring map carries; the program's template declares the same. */
#define RING_MAP_FLAGS (BPF_F_INNER_MAP | BPF_F_MMAPABLE)

struct lb_prog {
	struct ringlb_bpf *skel;
	struct lb_maps maps;
};

/* The maps every instance shares through pins, in struct lb_maps order. */
static const char *const pinned_map_names[] = {
	"vips", "backends", "rings", "flows", "vip_stats", "backend_stats", "reason_stats",
};

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
	m->rings = bpf_map__fd(skel->maps.rings);
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
		for (i = 0; i < sizeof(pinned_map_names) / sizeof(pinned_map_names[0]); i++) {
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

int lb_detach(const char *link_path)
{
	if (unlink(link_path))
		return -errno;
	return 0;
}

int lb_maps_open_pinned(struct lb_maps *maps, const char *pin_dir)
{
	int *fds[] = {
		&maps->vips, &maps->backends, &maps->rings, &maps->flows,
		&maps->vip_stats, &maps->backend_stats, &maps->reason_stats,
	};
	size_t i;
	int err;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		*fds[i] = -1;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
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
	int *fds[] = {
		&maps->vips, &maps->backends, &maps->rings, &maps->flows,
		&maps->vip_stats, &maps->backend_stats, &maps->reason_stats,
	};
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int lb_vip_set(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id)
{
	struct lb_vip vip = { .vip_id = vip_id };

	if (vip_id >= LB_VIPS_MAX)
		return -ERANGE;
	return bpf_map_update_elem(maps->vips, key, &vip, BPF_ANY) ? -errno : 0;
}

int lb_vip_delete(const struct lb_maps *maps, const struct lb_vip_key *key)
{
	return bpf_map_delete_elem(maps->vips, key) ? -errno : 0;
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

/* Fill a ring map through a shared mapping: header, buckets, points. */
static int ring_map_fill(int map_fd, size_t slots, const struct ring *ring,
			 const __u32 *backend_of_member)
{
	const struct ring_bucket *index = NULL;
	const struct ring_point *points = NULL;
	size_t point_count = 0, bytes, i;
	unsigned int bits = 0;
	union lb_ring_slot *map;
	long page = sysconf(_SC_PAGESIZE);

	if (ring) {
		points = ring_points(ring, &point_count);
		index = ring_index(ring, &bits);
	}
	bytes = (slots * sizeof(*map) + page - 1) / page * page;
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	map[0].header.points = (__u32)point_count;
	map[0].header.index_bits = bits;
	map[0].header.search_steps = ring ? ring_search_steps(ring) : 0;
	map[0].header.pad = 0;
	if (point_count) {
		for (i = 0; i <= ((size_t)1 << bits); i++) {
			union lb_ring_slot *s = &map[LB_RING_BUCKET_SLOT(i)];

			s->bucket.position = index[i].position;
			s->bucket.first = index[i].first;
			s->bucket.backend_id = backend_of_member[index[i].owner];
		}
		for (i = 0; i < point_count; i++) {
			union lb_ring_slot *s = &map[LB_RING_POINT_SLOT(bits, i)];

			s->point.position = points[i].position;
			s->point.backend_id = backend_of_member[points[i].member];
			s->point.pad = 0;
		}
	}
	munmap(map, bytes);
	return 0;
}

int lb_ring_swap(const struct lb_maps *maps, __u32 vip_id, const struct ring *ring,
		 const __u32 *backend_of_member)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = RING_MAP_FLAGS);
	size_t point_count = 0, slots;
	unsigned int bits = 0;
	int map_fd, err;

	if (vip_id >= LB_VIPS_MAX)
		return -ERANGE;
	if (ring && ring_points(ring, &point_count))
		ring_index(ring, &bits);
	slots = LB_RING_SLOTS(point_count, bits);
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ringlb_ring", sizeof(__u32),
				sizeof(union lb_ring_slot), (__u32)slots, &opts);
	if (map_fd < 0)
		return -errno;
	err = ring_map_fill(map_fd, slots, ring, backend_of_member);
	if (err)
		goto out;
	/* The swap: one update of the VIP's slot. */
	if (bpf_map_update_elem(maps->rings, &vip_id, &map_fd, BPF_ANY))
		err = -errno;
out:
	close(map_fd);
	return err;
}

int lb_ring_clear(const struct lb_maps *maps, __u32 vip_id)
{
	if (bpf_map_delete_elem(maps->rings, &vip_id) && errno != ENOENT)
		return -errno;
	return 0;
}

int lb_ring_header_read(const struct lb_maps *maps, __u32 vip_id, struct lb_ring_header *header)
{
	union lb_ring_slot slot;
	__u32 inner_id, zero = 0;
	int inner_fd, err = 0;

	if (bpf_map_lookup_elem(maps->rings, &vip_id, &inner_id))
		return -errno;
	inner_fd = bpf_map_get_fd_by_id(inner_id);
	if (inner_fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(inner_fd, &zero, &slot))
		err = -errno;
	else
		*header = slot.header;
	close(inner_fd);
	return err;
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
