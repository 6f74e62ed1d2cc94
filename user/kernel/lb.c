// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loading and attaching the XDP program (lb.h): an instance on a key, the
 * maps every instance shares (pinned by name, listed once here), links
 * pinned per interface, a link's program and key read back, and the flow
 * hash the program computes.
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
#include <sys/random.h>
#include <unistd.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "ring.h"
#include "ringlb.skel.h"
#include "ringlb_plain.skel.h"
#include "host.h"
#include "layout.h"
#include "siphash.h"

/* How long a detach waits for the kernel to release the link. */
#define LB_DETACH_WAIT_MS 2000
struct lb_prog {
	struct ringlb_bpf *skel;
	struct lb_maps maps;
};

#define LB_REASON_INFO(id, name, class, what) \
	[LB_REASON_##id] = { name, LB_VERDICT_##class, what },
const struct lb_reason_info lb_reasons[LB_REASON_COUNT] = { LB_REASONS(LB_REASON_INFO) };
#undef LB_REASON_INFO

/*
 * The maps every instance shares: the program pins them by name (LB_PINNED,
 * bpf/lb_vips.h), and this is where each lands in struct lb_maps. It is the
 * one list of them; lb_prog_load() checks it against the maps the program
 * pins, so a map added to one and not the other fails every load.
 */
static const struct {
	const char *name;
	size_t fd;
} shared_maps[] = {
	{ "vips", offsetof(struct lb_maps, vips) },
	{ "vip_epoch", offsetof(struct lb_maps, vip_epoch) },
	{ "backends", offsetof(struct lb_maps, backends) },
	{ "rings_0", offsetof(struct lb_maps, rings[0]) },
	{ "rings_1", offsetof(struct lb_maps, rings[1]) },
	{ "rings_2", offsetof(struct lb_maps, rings[2]) },
	{ "rings_3", offsetof(struct lb_maps, rings[3]) },
	{ "history", offsetof(struct lb_maps, history) },
	{ "flow_sets", offsetof(struct lb_maps, flows) },
	{ "flow_table", offsetof(struct lb_maps, flow_table) },
	{ "control", offsetof(struct lb_maps, control) },
	{ "config", offsetof(struct lb_maps, config) },
	{ "flow_rate", offsetof(struct lb_maps, flow_rate) },
	{ "icmp_budget", offsetof(struct lb_maps, icmp_budget) },
	{ "vip_stats", offsetof(struct lb_maps, vip_stats) },
	{ "backend_stats", offsetof(struct lb_maps, backend_stats) },
	{ "reason_stats", offsetof(struct lb_maps, reason_stats) },
	{ "source_sets", offsetof(struct lb_maps, source_sets) },
	{ "source_heads", offsetof(struct lb_maps, source_heads) },
	{ "vip_refused", offsetof(struct lb_maps, vip_refused) },
	{ "next_hop_stats", offsetof(struct lb_maps, next_hop_stats) },
	{ "quic_servers", offsetof(struct lb_maps, quic_servers) },
	{ "quic_ciphers", offsetof(struct lb_maps, quic_ciphers) },
};

#define SHARED_MAPS (sizeof(shared_maps) / sizeof(shared_maps[0]))

_Static_assert(SHARED_MAPS * sizeof(int) == sizeof(struct lb_maps),
	       "every descriptor of struct lb_maps is a shared map");

static int *map_fd(struct lb_maps *m, size_t i)
{
	return (int *)((char *)m + shared_maps[i].fd);
}

int lb_pinned_max_entries(const char *pin_dir, const char *name, __u32 *max_entries)
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

int lb_pinned_flow_entries(const char *pin_dir, __u32 *entries)
{
	__u32 sets;
	int err = lb_pinned_max_entries(pin_dir, "flow_sets", &sets);

	if (!err)
		*entries = sets * LB_FLOW_WAYS;
	return err;
}

/*
 * The flow table's settings, made once: a table hash key of its own (a key
 * rotation changes the deployment's secret, and every pin must stay where
 * its flow finds it) and its sets. A table made by another loader is left
 * as it is, unless its sets are not its map's (-EPROTO).
 */
static int flow_table_init(const struct lb_maps *maps, __u32 sets)
{
	struct lb_flow_table t = { 0 };
	__u32 zero = 0;

	if (bpf_map_lookup_elem(maps->flow_table, &zero, &t))
		return -errno;
	if (t.sets)
		return t.sets == sets ? 0 : -EPROTO;
	if (getrandom(t.key, sizeof(t.key), 0) != sizeof(t.key))
		return errno ? -errno : -EIO;
	t.sets = sets;
	/* Frozen once made: a second maker (none runs outside the site lock) fails. */
	if (bpf_map_update_elem(maps->flow_table, &zero, &t, BPF_ANY) ||
	    bpf_map_freeze(maps->flow_table))
		return -errno;
	return 0;
}

/* -EPROTO unless the maps the program pins are exactly shared_maps[]. */
static int shared_maps_check(struct bpf_object *obj)
{
	struct bpf_map *map;
	size_t i, pinned = 0;

	for (i = 0; i < SHARED_MAPS; i++) {
		map = bpf_object__find_map_by_name(obj, shared_maps[i].name);
		if (!map || !bpf_map__pin_path(map))
			return -EPROTO;
	}
	bpf_object__for_each_map(map, obj)
		pinned += bpf_map__pin_path(map) != NULL;
	return pinned == SHARED_MAPS ? 0 : -EPROTO;
}

/*
 * lb_link_read() reads other builds' programs through this build's view of
 * .rodata: its variables are append-only (bpf/ringlb.bpf.c), and these
 * offsets never move.
 */
_Static_assert(offsetof(struct ringlb_bpf__rodata, flow_secret) == 0, ".rodata is append-only");
_Static_assert(offsetof(struct ringlb_bpf__rodata, iface_mac) == 16, ".rodata is append-only");
_Static_assert(offsetof(struct ringlb_bpf__rodata, build_digest) == 24, ".rodata is append-only");
_Static_assert(offsetof(struct ringlb_bpf__rodata, layout_digest) == 32, ".rodata is append-only");
_Static_assert(offsetof(struct ringlb_bpf__rodata, build_version) == 40, ".rodata is append-only");

/*
 * The plain object (bpf/ringlb.bpf.c without AES) opens as the same skeleton:
 * the same maps, programs and load-time variables, laid out alike.
 */
_Static_assert(sizeof(struct ringlb_plain_bpf__rodata) == sizeof(struct ringlb_bpf__rodata) &&
		       offsetof(struct ringlb_plain_bpf__rodata, build_version) ==
			       offsetof(struct ringlb_bpf__rodata, build_version),
	       "the plain program's .rodata is the program's");

int lb_kernel_has_crypto(void)
{
	static int known = -1;
	struct btf *vmlinux;

	if (known < 0) {
		vmlinux = btf__load_vmlinux_btf();
		known = vmlinux && btf__find_by_name_kind(vmlinux, "bpf_crypto_ctx_create",
							  BTF_KIND_FUNC) > 0;
		btf__free(vmlinux);
	}
	return known;
}

/* This host's program object: with AES where the kernel has the crypto kfuncs. */
static const void *object_elf(int plain, size_t *len)
{
	return plain ? ringlb_plain_bpf__elf_bytes(len) : ringlb_bpf__elf_bytes(len);
}

/* Which object this host loads: the plain one where the kernel has no crypto kfuncs. */
static int object_plain(void)
{
	return !lb_kernel_has_crypto();
}

/* The skeleton over this host's object (ringlb_bpf__open_opts() with another ELF). */
static struct ringlb_bpf *skel_open(const struct bpf_object_open_opts *opts, int plain)
{
	struct ringlb_bpf *obj = calloc(1, sizeof(*obj));
	int err;

	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = ringlb_bpf__create_skeleton(obj);
	if (!err)
		obj->skeleton->data = object_elf(plain, &obj->skeleton->data_sz);
	err = err ?: bpf_object__open_skeleton(obj->skeleton, opts);
	if (err) {
		ringlb_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/*
 * The digest of this binary's build: of its program object with AES, which
 * the plain one records too (the two are one build: what ringlb upgrade and
 * show compare is the binary, and the plain object's own bytes follow from
 * the same source), so that telling it needs no look at the kernel.
 */
static __u64 object_digest(void)
{
	static const char key[] = "ringlb build v1";
	static __u64 digest;
	const void *elf;
	size_t len;

	if (!digest) {
		elf = ringlb_bpf__elf_bytes(&len);
		digest = ring_siphash(elf, len, ring_siphash(key, sizeof(key) - 1, 0, 0), len) | 1;
	}
	return digest;
}

int lb_build_self(struct lb_build *b)
{
	struct ringlb_bpf *skel = skel_open(NULL, 0);

	memset(b, 0, sizeof(*b));
	if (!skel)
		return -errno;
	b->digest = object_digest();
	b->layout = LB_LAYOUT_DIGEST;
	memcpy(b->version, (const void *)skel->rodata->build_version, sizeof(b->version) - 1);
	ringlb_bpf__destroy(skel);
	return 0;
}

int lb_layout_same(__u64 layout)
{
	static const __u64 earlier[] = LB_LAYOUT_EARLIER;
	size_t i;

	if (!layout)
		return 0;
	if (layout == LB_LAYOUT_DIGEST)
		return 1;
	for (i = 0; i < sizeof(earlier) / sizeof(earlier[0]); i++)
		if (earlier[i] == layout)
			return 1;
	return 0;
}

void lb_build_format(const struct lb_build *b, char *out, size_t len)
{
	if (!b->digest)
		snprintf(out, len, "unrecorded (a build older than builds recorded)");
	else
		snprintf(out, len, "%s, program %016llx", b->version[0] ? b->version : "unknown",
			 (unsigned long long)b->digest);
}

int lb_prog_load(struct lb_prog **out, const struct lb_load_opts *opts)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = opts->pin_dir);
	struct lb_prog *prog;
	struct bpf_map *map;
	__u32 flow_sets = 0;
	size_t i;
	int err, plain;

	*out = NULL;
	prog = calloc(1, sizeof(*prog));
	if (!prog)
		return -ENOMEM;
	plain = opts->plain || object_plain();
	prog->skel = skel_open(&open_opts, plain);
	if (!prog->skel) {
		err = -errno;
		goto kernel_fail;
	}
	prog->skel->rodata->flow_secret[0] = opts->secret[0];
	prog->skel->rodata->flow_secret[1] = opts->secret[1];
	memcpy((void *)prog->skel->rodata->iface_mac, opts->iface_mac, sizeof(opts->iface_mac));
	prog->skel->rodata->build_digest = object_digest();
	prog->skel->rodata->layout_digest = LB_LAYOUT_DIGEST;
	/* A pinned flow table keeps its size: reuse needs the same max_entries. */
	if (!opts->pin_dir || lb_pinned_max_entries(opts->pin_dir, "flow_sets", &flow_sets))
		flow_sets = LB_FLOW_SETS(opts->flow_entries ? opts->flow_entries : LB_FLOWS_DEFAULT);
	err = bpf_map__set_max_entries(prog->skel->maps.flow_sets, flow_sets);
	if (err)
		goto kernel_fail;
	err = shared_maps_check(prog->skel->obj);
	if (err)
		goto kernel_fail;
	/* Private maps: without a pin root libbpf would pin under /sys/fs/bpf itself. */
	if (!opts->pin_dir)
		bpf_object__for_each_map(map, prog->skel->obj)
			bpf_map__set_pin_path(map, NULL);
	if (opts->maps_only) {
		struct bpf_program *p;

		bpf_object__for_each_program(p, prog->skel->obj)
			bpf_program__set_autoload(p, false);
	}
	err = ringlb_bpf__load(prog->skel);
	if (err)
		goto kernel_fail;
	for (i = 0; i < SHARED_MAPS; i++)
		*map_fd(&prog->maps, i) =
			bpf_map__fd(bpf_object__find_map_by_name(prog->skel->obj, shared_maps[i].name));
	err = flow_table_init(&prog->maps, flow_sets);
	if (err)
		goto kernel_fail;
	*out = prog;
	return 0;
kernel_fail:
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
	return lb_attach_fd(lb_prog_fd(prog), ifindex, mode, link_path);
}

int lb_attach_fd(int prog_fd, int ifindex, enum lb_attach_mode mode, const char *link_path)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts,
		    .flags = mode == LB_ATTACH_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
	int link_fd, err = 0;

	link_fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
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
	size_t i;
	int err;

	lb_maps_init(maps);
	for (i = 0; i < SHARED_MAPS; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", pin_dir, shared_maps[i].name);
		*map_fd(maps, i) = bpf_obj_get(path);
		if (*map_fd(maps, i) < 0) {
			err = -errno;
			lb_maps_close(maps);
			return err;
		}
	}
	return 0;
}

void lb_maps_close(struct lb_maps *maps)
{
	size_t i;

	for (i = 0; i < SHARED_MAPS; i++) {
		if (*map_fd(maps, i) >= 0)
			close(*map_fd(maps, i));
		*map_fd(maps, i) = -1;
	}
}

void lb_maps_init(struct lb_maps *maps)
{
	size_t i;

	for (i = 0; i < SHARED_MAPS; i++)
		*map_fd(maps, i) = -1;
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

/* The .rodata map of the program with id @prog_id, and the program's fd. */
static int prog_rodata(__u32 prog_id, int *prog_fd, int *map_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[16], i;
	int err = -EBADMSG;

	*map_fd = -1;
	*prog_fd = bpf_prog_get_fd_by_id(prog_id);
	if (*prog_fd < 0)
		return -errno;
	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(*prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct bpf_map_info map = {};
		__u32 map_len = sizeof(map);
		size_t name_len;
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		name_len = bpf_obj_get_info_by_fd(fd, &map, &map_len) ? 0 : strlen(map.name);
		/* The section's size, which the struct's trailing padding may exceed. */
		if (name_len >= 7 && strcmp(map.name + name_len - 7, ".rodata") == 0 &&
		    map.value_size >= offsetof(struct ringlb_bpf__rodata, iface_mac) + 6 &&
		    map.value_size <= sizeof(struct ringlb_bpf__rodata)) {
			*map_fd = fd;
			err = 0;
			break;
		}
		close(fd);
	}
	return err;
}

int lb_link_read(const char *link_path, struct lb_link_info *out)
{
	struct bpf_link_info info = {};
	struct ringlb_bpf__rodata rodata = {};
	__u32 len = sizeof(info), zero = 0;
	int link_fd, prog_fd = -1, map_fd = -1, err = 0;

	memset(out, 0, sizeof(*out));
	link_fd = bpf_obj_get(link_path);
	if (link_fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		err = -errno;
	else if (info.type != BPF_LINK_TYPE_XDP)
		err = -EBADMSG;
	if (!err)
		err = prog_rodata(info.prog_id, &prog_fd, &map_fd);
	if (!err && bpf_map_lookup_elem(map_fd, &zero, &rodata))
		err = -errno;
	if (!err) {
		out->ifindex = (int)info.xdp.ifindex;
		out->secret[0] = rodata.flow_secret[0];
		out->secret[1] = rodata.flow_secret[1];
		memcpy(out->iface_mac, rodata.iface_mac, sizeof(out->iface_mac));
		/* A program of a build before these were recorded has zeros here. */
		out->build.digest = rodata.build_digest;
		out->build.layout = rodata.layout_digest;
		memcpy(out->build.version, rodata.build_version, sizeof(out->build.version) - 1);
		memset(&rodata, 0, sizeof(rodata));
	}
	if (map_fd >= 0)
		close(map_fd);
	if (prog_fd >= 0)
		close(prog_fd);
	close(link_fd);
	return err;
}

int lb_link_replace(const char *link_path, const struct lb_prog *prog)
{
	int link_fd = bpf_obj_get(link_path), err = 0;

	if (link_fd < 0)
		return -errno;
	if (bpf_link_update(link_fd, lb_prog_fd(prog), NULL))
		err = -errno;
	close(link_fd);
	return err;
}

__u64 lb_secret_digest(const __u64 secret[2])
{
	static const char message[] = "ringlb secret v1";

	return ring_siphash(message, sizeof(message) - 1, secret[0], secret[1]);
}

void lb_load_failure(int err, char *why, size_t len)
{
	snprintf(why, len, "cannot load the XDP program: %s%s", strerror(-err),
		 (err == -EPERM || err == -EACCES) && !host_may_verify() ?
			 "; the verifier needs CAP_PERFMON too, or root" : "");
}
