// SPDX-License-Identifier: GPL-2.0-only
/*
 * The program tests' fixtures: see prog.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kernel.h"
#include "prog.h"

/* --- the program tests ---------------------------------------------------------------------- */

static const struct {
	int id;
	int family;
	const char *addr;
	uint16_t port;
	uint8_t protocol;
} test_vips[] = {
	{ VIP_V4_TCP, LB_FAMILY_IPV4, V4_VIP, VIP_TCP_PORT, IPPROTO_TCP },
	{ VIP_V4_UDP, LB_FAMILY_IPV4, V4_VIP, VIP_UDP_PORT, IPPROTO_UDP },
	{ VIP_V6_TCP, LB_FAMILY_IPV6, V6_VIP, VIP_TCP_PORT, IPPROTO_TCP },
	{ VIP_V6_UDP, LB_FAMILY_IPV6, V6_VIP, VIP_UDP_PORT, IPPROTO_UDP },
	{ VIP_EMPTY_RING, LB_FAMILY_IPV4, V4_VIP_EMPTY, VIP_TCP_PORT, IPPROTO_TCP },
	{ VIP_NO_RING, LB_FAMILY_IPV4, V4_VIP_NO_RING, VIP_TCP_PORT, IPPROTO_TCP },
};


struct lb_prog *prog;
const struct lb_maps *maps;
const __u64 secret[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };
const __u8 iface_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
int skip_reason;
static __u32 next_backend_id = 1, next_cookie = 1;

/* --- harness ------------------------------------------------------------------ */

struct lb_vip_key vip_key_of_test(int id)
{
	struct lb_vip_key key = { 0 };
	size_t i;

	for (i = 0; i < sizeof(test_vips) / sizeof(test_vips[0]); i++) {
		if (test_vips[i].id != id)
			continue;
		key.port = htons(test_vips[i].port);
		key.protocol = test_vips[i].protocol;
		key.family = (__u8)test_vips[i].family;
		pkt_addr(test_vips[i].family, test_vips[i].addr, key.addr);
	}
	return key;
}

/*
 * VIP_NO_RING: a VIP whose value names a ring slot that is empty, as if the
 * slot were emptied behind the controller's back.
 */
static int vip_ring_removed_behind_the_controller(void)
{
	struct lb_vip_key key = vip_key_of_test(VIP_NO_RING);
	struct ring_member member = { "lonely", 1 };
	struct lb_vip value;
	struct ring *ring;
	__u32 id = LB_BACKENDS_MAX - 1, slot;
	int err;

	if (ring_build(&ring, 10, &member, 1))
		return -1;
	err = lb_vip_install(maps, &key, VIP_NO_RING, ring, &id);
	ring_free(ring);
	if (err || bpf_map_lookup_elem(maps->vips, &key, &value))
		return -1;
	slot = value.vip_id * LB_RING_SLOTS_PER_VIP + value.ring_parity;
	return bpf_map_delete_elem(maps->rings[value.ring_class], &slot) ? -1 : 0;
}

int harness_setup(void **state)
{
	size_t i;
	int err;

	(void)state;
	skip_reason = harness_load("test_xdp", secret, iface_mac, &prog);
	if (skip_reason)
		return skip_reason < 0 ? -1 : 0;
	maps = lb_prog_maps(prog);
	/* Every VIP starts with an empty ring: no backend takes its flows. */
	for (i = 0; i < sizeof(test_vips) / sizeof(test_vips[0]); i++) {
		struct lb_vip_key key = vip_key_of_test(test_vips[i].id);

		err = lb_vip_install(maps, &key, (__u32)test_vips[i].id, NULL, NULL);
		if (err)
			return -1;
	}
	return vip_ring_removed_behind_the_controller();
}

int harness_teardown(void **state)
{
	(void)state;
	lb_prog_close(prog);
	return 0;
}


__u64 reason_total(__u32 reason)
{
	return harness_percpu_sum(maps->reason_stats, reason, 2, 0);
}

void reasons_snapshot(__u64 *counts)
{
	__u32 r;

	for (r = 0; r < LB_REASON_COUNT; r++)
		counts[r] = reason_total(r);
}

__u32 run_frame(const unsigned char *in, size_t len, unsigned char *out, size_t *out_len)
{
	/* As a controller's change ends: the CPUs' VIP caches are in use in every test. */
	check(lb_readers_release(maps) == 0, "closing the VIP epoch");
	return harness_run(lb_prog_fd(prog), in, len, out, out_len, 1, NULL);
}

void flows_clear(void)
{
	check_eq(kernel_flows_clear(maps), 0);
}

size_t flows_count(__u8 protocol)
{
	struct kernel_flow *all = NULL;
	size_t count = 0, n, of = 0;

	check_eq(kernel_flows_read(maps, &all, &count), 0);
	for (n = 0; n < count; n++)
		of += !protocol || all[n].key.protocol == protocol;
	free(all);
	return of;
}

void mac_of_backend(__u32 id, __u8 mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0xbe;
	mac[2] = 0;
	mac[3] = 0;
	mac[4] = (__u8)(id >> 8);
	mac[5] = (__u8)id;
}


/* A new active backend of @vip in the next free slot: its id. */
__u32 backend_new(int vip)
{
	struct lb_backend b = { .family = LB_FAMILY_IPV4, .state = LB_BACKEND_ACTIVE,
				.vip_id = (__u32)vip, .cookie = next_cookie++ };
	__u32 id = next_backend_id++;

	if (next_backend_id >= LB_BACKENDS_MAX)
		next_backend_id = 1;
	mac_of_backend(id, b.mac);
	b.addr[0] = 198;
	b.addr[1] = 19;
	b.addr[2] = (__u8)(id >> 8);
	b.addr[3] = (__u8)id;
	check(lb_backend_install(maps, id, &b) == 0, "install backend %u", id);
	return id;
}

__u32 backend_new_encap(int vip, int family, const char *addr, int forward)
{
	struct lb_backend b = { .family = (__u8)family, .state = LB_BACKEND_ACTIVE,
				.vip_id = (__u32)vip, .cookie = next_cookie++, .forward = (__u8)forward };
	__u32 id = next_backend_id++;

	if (next_backend_id >= LB_BACKENDS_MAX)
		next_backend_id = 1;
	pkt_addr(family, addr, b.addr);
	check(lb_backend_install(maps, id, &b) == 0, "install backend %u", id);
	return id;
}

/* Install one backend per member of @ring for @vip and swap the ring in. */
void pool_install(struct pool *pool, int vip, struct ring *ring)
{
	struct lb_vip_key key = vip_key_of_test(vip);
	size_t i;

	pool->vip = vip;
	pool->ring = ring;
	pool->count = ring_member_count(ring);
	assert_true(pool->count <= 1024);
	for (i = 0; i < pool->count; i++)
		pool->ids[i] = backend_new(vip);
	check(lb_vip_install(maps, &key, (__u32)vip, ring, pool->ids) == 0, "swap ring of VIP %d",
	      vip);
	check(lb_vip_settle(maps, &key, (__u32)vip, NULL) == 0, "spare ring of VIP %d", vip);
}

void pool_release(struct pool *pool)
{
	size_t i;

	for (i = 0; i < pool->count; i++)
		lb_backend_set_state(maps, pool->ids[i], LB_BACKEND_UNUSED);
	ring_free(pool->ring);
	pool->ring = NULL;
	pool->count = 0;
}

struct ring *ring_weighted(uint32_t vnodes, size_t count, const uint32_t *weights,
				  const char *prefix)
{
	struct ring_member members[1024];
	char names[1024][32];
	struct ring *r;
	size_t i;
	int err;

	for (i = 0; i < count; i++) {
		snprintf(names[i], sizeof(names[i]), "%s-%zu", prefix, i);
		members[i].name = names[i];
		members[i].weight = weights ? weights[i] : 1;
	}
	err = ring_build(&r, vnodes, members, count);
	check(err == 0, "ring_build: %s", ring_strerror(err));
	return r;
}

/* A client flow of the given VIP with a pseudo-random client address and port. */
void random_flow(struct test_rng *rng, int vip, struct pkt_spec *spec, char *client,
			size_t client_len)
{
	size_t i;

	for (i = 0; i < sizeof(test_vips) / sizeof(test_vips[0]); i++)
		if (test_vips[i].id == vip)
			break;
	assert_true(i < sizeof(test_vips) / sizeof(test_vips[0]));
	memset(spec, 0, sizeof(*spec));
	spec->family = test_vips[i].family;
	spec->protocol = test_vips[i].protocol;
	spec->dst = test_vips[i].addr;
	spec->dport = test_vips[i].port;
	spec->sport = (uint16_t)(1024 + test_rng_below(rng, 64512));
	if (spec->family == LB_FAMILY_IPV4) {
		uint64_t a = test_rng_next(rng);

		snprintf(client, client_len, "198.18.%u.%u", (unsigned)(a >> 8) % 256 | 128,
			 (unsigned)a % 254 + 1);
	} else {
		uint64_t a = test_rng_next(rng);

		snprintf(client, client_len, "2001:db8:c::%x:%x", (unsigned)(a >> 16) & 0xffff,
			 (unsigned)a & 0xffff);
	}
	spec->src = client;
}

/* The flow table key of the frame @spec builds. */
void key_of_spec(const struct pkt_spec *spec, struct lb_flow_key *key)
{
	uint8_t src[16], dst[16];

	pkt_addr(spec->family, spec->src, src);
	pkt_addr(spec->family, spec->dst, dst);
	lb_flow_key_init(key, spec->family, src, htons(spec->sport), dst, htons(spec->dport),
			 spec->protocol);
}

/* The backend the ring library says the kernel must pick for this frame's flow. */
__u32 expected_backend(const struct pool *pool, const struct pkt_spec *spec)
{
	struct ring_lookup_result res = { 0 };
	struct lb_flow_key key;

	key_of_spec(spec, &key);
	assert_int_equal(ring_lookup(pool->ring, lb_flow_hash(secret, &key), &res), 0);
	return pool->ids[res.member];
}

/* Send a frame, expect XDP_TX; return the backend id its new MAC names. */
__u32 forward(const struct pkt *pkt)
{
	unsigned char out[PKT_MAX];
	size_t out_len;
	__u32 verdict = run_frame(pkt->data, pkt->len, out, &out_len);

	check(verdict == XDP_TX, "a VIP frame got verdict %u, not XDP_TX", verdict);
	check(out_len == pkt->len, "frame length changed from %zu to %zu", pkt->len, out_len);
	check(memcmp(out + 6, iface_mac, 6) == 0, "source MAC is not the interface's");
	check(memcmp(out + 12, pkt->data + 12, pkt->len - 12) == 0,
	      "bytes past the MACs changed");
	check(out[0] == 0x02 && out[1] == 0xbe, "destination MAC is not a backend's");
	return (__u32)out[4] << 8 | out[5];
}


/* Send packet of flow i (a fixed client address and port per i) to the IPv4 TCP VIP. */
__u32 send_flow(int i, uint8_t tcp_flags)
{
	char client[64];
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = client,
				 .dst = V4_VIP, .sport = (uint16_t)(10000 + i % 50000),
				 .dport = VIP_TCP_PORT, .tcp_flags = tcp_flags };
	struct pkt pkt;

	snprintf(client, sizeof(client), "198.18.%d.%d", 128 + i / 50000 % 64, 1 + i % 250);
	pkt_build(&pkt, &spec);
	return forward(&pkt);
}

struct pkt_spec flow_spec(int i, char *client, size_t len)
{
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP, .src = client,
				 .dst = V4_VIP, .sport = (uint16_t)(10000 + i % 50000),
				 .dport = VIP_TCP_PORT };

	snprintf(client, len, "198.18.%d.%d", 128 + i / 50000 % 64, 1 + i % 250);
	return spec;
}

/* bpffs for the pin tests: /sys/fs/bpf, mounted only if it is not one already. */
int bpffs_dir(char *dir, size_t len)
{
	struct statfs fs;

	if (statfs("/sys/fs/bpf", &fs) != 0 || fs.f_type != BPF_FS_MAGIC) {
		if (mkdir("/sys/fs/bpf", 0700) != 0 && errno != EEXIST)
			return -errno;
		/* Another mount of bpffs there would stack on the first, not fail. */
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) != 0)
			return -errno;
	}
	snprintf(dir, len, "/sys/fs/bpf/ringlb-test-%d", (int)getpid());
	return mkdir(dir, 0700) == 0 ? 0 : -errno;
}

void pins_remove(const char *dir)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * An ICMP error from a router about a packet the backend sent to the client:
 * outer header router -> VIP, quoting VIP:port -> client:port.
 */
void icmp_error_about(struct pkt *p, int family, unsigned char type, unsigned char code,
			     const char *quoted_src, uint16_t quoted_sport, uint16_t quoted_dport)
{
	struct pkt_spec q = { .family = family, .protocol = IPPROTO_TCP, .src = quoted_src,
			      .dst = family == LB_FAMILY_IPV4 ? "198.18.1.9" : "2001:db8:c::9",
			      .sport = quoted_sport, .dport = quoted_dport, .tcp_flags = 0x10 };

	pkt_build_icmp_error(p, &q, family == LB_FAMILY_IPV4 ? "198.18.0.1" : "2001:db8::1",
			     family == LB_FAMILY_IPV4 ? V4_VIP : V6_VIP, type, code);
}
void icmp_frag_needed_for_vip_flow(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV4, 3, 4, V4_VIP, VIP_TCP_PORT, 41000);
}
