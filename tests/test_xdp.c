// SPDX-License-Identifier: GPL-2.0-only
/*
 * The XDP program's specification, run in the kernel with BPF_PROG_TEST_RUN
 * on crafted frames: the backend it picks agrees with the ring library on
 * random flows, the frame it sends differs from the one it got only in its
 * MACs, it leaves everything else to the host, it counts every verdict under
 * its documented reason, and rings swap under established flows without
 * moving them.
 *
 * Needs root (CAP_BPF and CAP_NET_ADMIN). Without it the tests skip with a
 * message, except under CI=true, where they fail.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <linux/if_link.h>

#include <cmocka.h>

#include "check.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lb.h"
#include "packets.h"
#include "ring.h"
#include "testutil.h"
#include "vip_reader.skel.h"

#define AGREEMENT_FLOWS 10000
#define SEED 0x7864702d74657374ULL

/* The test's VIPs: one per family and protocol, plus two broken ones. */
enum {
	VIP_V4_TCP = 1,
	VIP_V4_UDP,
	VIP_V6_TCP,
	VIP_V6_UDP,
	VIP_EMPTY_RING, /* a ring with no points */
	VIP_NO_RING,    /* no ring installed */
};

#define V4_VIP "198.18.0.100"
#define V4_VIP_EMPTY "198.18.0.101"
#define V4_VIP_NO_RING "198.18.0.102"
#define V4_NOT_VIP "198.18.0.200"
#define V6_VIP "2001:db8::100"
#define VIP_TCP_PORT 80
#define VIP_UDP_PORT 53

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

static struct lb_prog *prog;
static const struct lb_maps *maps;
static const __u64 secret[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };
static const __u8 iface_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static int skip_reason; /* 0: run; else why not */
static __u32 next_backend_id = 1, next_cookie = 1;

/* --- harness ------------------------------------------------------------------ */

static struct lb_vip_key vip_key_of_test(int id)
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

static int group_setup(void **state)
{
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] } };
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	size_t i;
	int err;

	(void)state;
	skip_reason = root_rule("test_xdp");
	if (skip_reason)
		return skip_reason < 0 ? -1 : 0;
	memcpy(opts.iface_mac, iface_mac, 6);
	err = lb_prog_load(&prog, &opts);
	if (err) {
		fprintf(stderr, "test_xdp: loading the program: %s\n", strerror(-err));
		return -1;
	}
	maps = lb_prog_maps(prog);
	if (bpf_obj_get_info_by_fd(lb_prog_fd(prog), &info, &info_len) == 0)
		printf("verifier: ringlb_xdp loaded, %u instructions processed, %u xlated bytes\n",
		       info.verified_insns, info.xlated_prog_len);
	/* Every VIP starts with an empty ring: no backend takes its flows. */
	for (i = 0; i < sizeof(test_vips) / sizeof(test_vips[0]); i++) {
		struct lb_vip_key key = vip_key_of_test(test_vips[i].id);

		err = lb_vip_install(maps, &key, (__u32)test_vips[i].id, NULL, NULL);
		if (err)
			return -1;
	}
	return vip_ring_removed_behind_the_controller();
}

static int group_teardown(void **state)
{
	(void)state;
	lb_prog_close(prog);
	return 0;
}

#define NEEDS_ROOT()                                                      \
	do {                                                              \
		if (skip_reason)                                          \
			skip();                                           \
	} while (0)

static __u64 reason_total(__u32 reason)
{
	int cpus = libbpf_num_possible_cpus(), i;
	struct lb_counters *values = calloc((size_t)cpus, sizeof(*values));
	__u64 sum = 0;

	assert_non_null(values);
	assert_int_equal(bpf_map_lookup_elem(maps->reason_stats, &reason, values), 0);
	for (i = 0; i < cpus; i++)
		sum += values[i].packets;
	free(values);
	return sum;
}

static void reasons_snapshot(__u64 *counts)
{
	__u32 r;

	for (r = 0; r < LB_REASON_COUNT; r++)
		counts[r] = reason_total(r);
}

static __u32 run_frame(const unsigned char *in, size_t len, unsigned char *out, size_t *out_len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = PKT_MAX, .repeat = 1);
	int err = bpf_prog_test_run_opts(lb_prog_fd(prog), &opts);

	check(err == 0, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	if (out_len)
		*out_len = opts.data_size_out;
	return opts.retval;
}

static void flows_clear(void)
{
	struct lb_flow_key key, next;

	while (bpf_map_get_next_key(maps->flows, NULL, &next) == 0) {
		key = next;
		bpf_map_delete_elem(maps->flows, &key);
	}
}

static void mac_of_backend(__u32 id, __u8 mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0xbe;
	mac[2] = 0;
	mac[3] = 0;
	mac[4] = (__u8)(id >> 8);
	mac[5] = (__u8)id;
}

/* A VIP's backends: a ring of members and the backend id of each member. */
struct pool {
	int vip;
	struct ring *ring;
	__u32 ids[1024];
	size_t count;
};

/* A new active backend of @vip in the next free slot: its id. */
static __u32 backend_new(int vip)
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

/* Install one backend per member of @ring for @vip and swap the ring in. */
static void pool_install(struct pool *pool, int vip, struct ring *ring)
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

static void pool_release(struct pool *pool)
{
	size_t i;

	for (i = 0; i < pool->count; i++)
		lb_backend_set_state(maps, pool->ids[i], LB_BACKEND_UNUSED);
	ring_free(pool->ring);
	pool->ring = NULL;
	pool->count = 0;
}

static struct ring *ring_weighted(uint32_t vnodes, size_t count, const uint32_t *weights,
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
static void random_flow(struct test_rng *rng, int vip, struct pkt_spec *spec, char *client,
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
static void key_of_spec(const struct pkt_spec *spec, struct lb_flow_key *key)
{
	uint8_t src[16], dst[16];

	pkt_addr(spec->family, spec->src, src);
	pkt_addr(spec->family, spec->dst, dst);
	lb_flow_key_init(key, spec->family, src, htons(spec->sport), dst, htons(spec->dport),
			 spec->protocol);
}

/* The backend the ring library says the kernel must pick for this frame's flow. */
static __u32 expected_backend(const struct pool *pool, const struct pkt_spec *spec)
{
	struct ring_lookup_result res = { 0 };
	struct lb_flow_key key;

	key_of_spec(spec, &key);
	assert_int_equal(ring_lookup(pool->ring, lb_flow_hash(secret, &key), &res), 0);
	return pool->ids[res.member];
}

/* Send a frame, expect XDP_TX; return the backend id its new MAC names. */
static __u32 forward(const struct pkt *pkt)
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

/* --- agreement ------------------------------------------------------------------ */

/* @flows random flows of @pool's VIP go where its ring says. */
static void flows_agree(const struct pool *pool, struct test_rng *rng, int flows,
			const char *name)
{
	size_t points;
	int f;

	ring_points(pool->ring, &points);
	for (f = 0; f < flows; f++) {
		struct pkt_spec spec;
		struct pkt pkt;
		char client[64];
		__u32 want, got;

		random_flow(rng, pool->vip, &spec, client, sizeof(client));
		pkt_build(&pkt, &spec);
		want = expected_backend(pool, &spec);
		got = forward(&pkt);
		check(got == want, "%s ring (%zu points), VIP %d, flow %d (%s:%u): kernel "
		      "picked backend %u, ring library %u", name, points, pool->vip, f, client,
		      spec.sport, got, want);
	}
	printf("agreement: %s ring, %zu points, VIP %d: %d of %d flows agree\n", name, points,
	       pool->vip, flows, flows);
}

static void agreement_case(const char *name, uint32_t vnodes, size_t members,
			   const uint32_t *weights)
{
	static const int vips[] = { VIP_V4_TCP, VIP_V4_UDP, VIP_V6_TCP, VIP_V6_UDP };
	struct test_rng rng = { SEED };
	size_t v;

	for (v = 0; v < sizeof(vips) / sizeof(vips[0]); v++) {
		struct pool pool;

		flows_clear();
		pool_install(&pool, vips[v], ring_weighted(vnodes, members, weights, name));
		flows_agree(&pool, &rng, AGREEMENT_FLOWS, name);
		pool_release(&pool);
	}
}

static void test_kernel_agrees_with_ring_on_one_point_ring(void **state)
{
	(void)state;
	NEEDS_ROOT();
	agreement_case("one-point", 1, 1, NULL);
}

static void test_kernel_agrees_with_ring_on_weighted_ring(void **state)
{
	static const uint32_t weights[] = { 1, 2, 3, 5, 8, 0, 13 };

	(void)state;
	NEEDS_ROOT();
	agreement_case("weighted", 100, sizeof(weights) / sizeof(weights[0]), weights);
}

static void test_kernel_agrees_with_ring_on_million_point_ring(void **state)
{
	(void)state;
	NEEDS_ROOT();
	/* 256 backends x 4096 points = 2^20 points, the largest ring. */
	agreement_case("2^20-point", 4096, 256, NULL);
}

static __u32 send_flow(int i, uint8_t tcp_flags);

/* The ring library's membership of @pool, as ringmap_edits() takes it. */
static size_t pool_members(const struct pool *pool, struct ringmap_member *out)
{
	size_t m;

	for (m = 0; m < pool->count; m++)
		out[m] = (struct ringmap_member){ ring_member_name(pool->ring, (__u32)m),
						  ring_member_weight(pool->ring, (__u32)m),
						  pool->ids[m] };
	return pool->count;
}

/* Make @pool's ring @next (ids of members it keeps stay, new ones get a backend). */
static void pool_change(struct pool *pool, struct ring *next, struct lb_ring_change *change,
			struct ringmap_edit **edits)
{
	static struct ringmap_member before[1024], after[1024];
	size_t nb = pool_members(pool, before), m, points;
	__u32 ids[1024], old;

	for (m = 0; m < ring_member_count(next); m++) {
		const char *name = ring_member_name(next, (__u32)m);

		ids[m] = ring_member_find(pool->ring, name, &old) == 0 ? pool->ids[old] :
									  backend_new(pool->vip);
		after[m] = (struct ringmap_member){ name, ring_member_weight(next, (__u32)m), ids[m] };
	}
	ring_points(next, &points);
	check(ringmap_edits(ring_vnodes(next), before, nb, after, ring_member_count(next),
			    LB_RING_POINTS_MAX, edits, &change->count) == 0,
	      "edits of the change");
	change->edits = *edits;
	change->from_fingerprint = ring_fingerprint(pool->ring);
	change->to_fingerprint = ring_fingerprint(next);
	change->to_points = points;
	ring_free(pool->ring);
	pool->ring = next;
	pool->count = ring_member_count(next);
	memcpy(pool->ids, ids, pool->count * sizeof(ids[0]));
}

static void test_changes_written_in_place_serve_what_the_ring_says(void **state)
{
	static const int vips[] = { VIP_V4_TCP, VIP_V6_UDP };
	struct test_rng rng = { SEED + 5 };
	size_t v, step;

	(void)state;
	NEEDS_ROOT();
	for (v = 0; v < sizeof(vips) / sizeof(vips[0]); v++) {
		struct lb_vip_key key = vip_key_of_test(vips[v]);
		struct pool pool;
		char why[128];

		/* 40,000 points: every change below keeps the index at 2^17 buckets. */
		pool_install(&pool, vips[v], ring_weighted(1000, 40, NULL, "inplace"));
		for (step = 0; step < 6; step++) {
			struct lb_ring_change change;
			struct ringmap_edit *edits;
			struct ring *next;
			char name[32], what[64];
			__u32 m = (__u32)test_rng_below(&rng, pool.count);

			assert_int_equal(ring_clone(&next, pool.ring), 0);
			switch (step % 3) {
			case 0:
				snprintf(name, sizeof(name), "inplace-new-%zu", step);
				assert_int_equal(ring_add(next, name, 2), 0);
				snprintf(what, sizeof(what), "after adding %s", name);
				break;
			case 1:
				snprintf(what, sizeof(what), "after removing %s",
					 ring_member_name(pool.ring, m));
				assert_int_equal(ring_remove(next, ring_member_name(pool.ring, m)), 0);
				break;
			default:
				snprintf(what, sizeof(what), "after weighing %s 3",
					 ring_member_name(pool.ring, m));
				assert_int_equal(
					ring_set_weight(next, ring_member_name(pool.ring, m), 3), 0);
				break;
			}
			pool_change(&pool, next, &change, &edits);
			check(lb_vip_patch(maps, &key, (__u32)vips[v], &change) == 0,
			      "%s: the change is written into the spare and swapped in", what);
			flows_clear();
			flows_agree(&pool, &rng, 2000, what);
			check(lb_vip_patch(maps, &key, (__u32)vips[v], &change) == -ESTALE,
			      "%s: a change from a ring no longer served is refused", what);
			check(lb_vip_settle(maps, &key, (__u32)vips[v], &change) == 0,
			      "%s: the old map takes the change too", what);
			check(lb_vip_compare(maps, &key, (__u32)vips[v], pool.ring, pool.ids, why,
					     sizeof(why)) == 0,
			      "%s: serving and spare maps hold the ring: %s", what, why);
			free(edits);
		}
		pool_release(&pool);
	}
}

static void test_change_without_a_good_spare_is_refused_and_old_ring_serves(void **state)
{
	struct lb_vip_key key = vip_key_of_test(VIP_V4_TCP);
	struct lb_ring_change first, second;
	struct ringmap_edit *e1, *e2;
	struct ring *next;
	struct pool pool;
	__u32 before[200];
	size_t from_points;
	int i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 8, NULL, "spare"));
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_add(next, "spare-new", 1), 0);
	pool_change(&pool, next, &first, &e1);
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &first) == 0, "first change swapped in");
	/* Not settled: the spare still holds the ring before the first change. */
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_set_weight(next, "spare-new", 4), 0);
	for (i = 0; i < 200; i++)
		before[i] = send_flow(i, 0);
	pool_change(&pool, next, &second, &e2);
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &second) == -EAGAIN,
	      "a change onto a spare that is one change behind is refused with -EAGAIN");
	flows_clear();
	for (i = 0; i < 200; i++)
		check(send_flow(i, 0) == before[i], "flow %d moved after a refused change", i);
	/* The way forward: the whole ring, which also makes a good spare. */
	check(lb_vip_install(maps, &key, VIP_V4_TCP, pool.ring, pool.ids) == 0 &&
		      lb_vip_settle(maps, &key, VIP_V4_TCP, NULL) == 0,
	      "the whole ring installs, with its spare");
	free(e1);
	free(e2);
	/* A ring that needs another index size is laid out whole, as a fresh build would be. */
	ring_points(pool.ring, &from_points);
	assert_int_equal(ring_clone(&next, pool.ring), 0);
	assert_int_equal(ring_add(next, "spare-big", 80), 0); /* 800 -> 8,800 points */
	pool_change(&pool, next, &first, &e1);
	check(ringmap_bits(first.to_points) != ringmap_bits(from_points),
	      "the test change crosses an index size");
	check(lb_vip_patch(maps, &key, VIP_V4_TCP, &first) == -EAGAIN,
	      "a change to another index size is refused with -EAGAIN");
	free(e1);
	pool_release(&pool);
}

/* --- the frame ------------------------------------------------------------------- */

static void test_forwarded_frame_differs_only_in_macs(void **state)
{
	static const struct pkt_spec specs[] = {
		{ LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_VIP, 40000, VIP_TCP_PORT, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV4, IPPROTO_UDP, "198.18.1.1", V4_VIP, 40000, VIP_UDP_PORT, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV6, IPPROTO_TCP, "2001:db8:c::1", V6_VIP, 40000, VIP_TCP_PORT, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV6, IPPROTO_UDP, "2001:db8:c::1", V6_VIP, 40000, VIP_UDP_PORT, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_VIP, 40001, VIP_TCP_PORT, 7, 0, 0, 0 },
		{ LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_VIP, 40002, VIP_TCP_PORT, 0, 0, 3, 0 },
		{ LB_FAMILY_IPV6, IPPROTO_TCP, "2001:db8:c::1", V6_VIP, 40003, VIP_TCP_PORT, 0, 0, 0, 1 },
	};
	static const char *const what[] = {
		"IPv4 TCP", "IPv4 UDP", "IPv6 TCP", "IPv6 UDP", "VLAN-tagged IPv4 TCP",
		"IPv4 with options", "IPv6 with hop-by-hop options",
	};
	struct pool pools[4];
	size_t i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	for (i = 0; i < 4; i++)
		pool_install(&pools[i], VIP_V4_TCP + (int)i, ring_weighted(10, 3, NULL, "frame"));
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		int vip = specs[i].family == LB_FAMILY_IPV4 ? VIP_V4_TCP : VIP_V6_TCP;
		struct pkt pkt;
		__u32 got;

		if (specs[i].protocol == IPPROTO_UDP)
			vip++;
		pkt_build(&pkt, &specs[i]);
		got = forward(&pkt); /* checks the MACs and every other byte */
		check(got == expected_backend(&pools[vip - VIP_V4_TCP], &specs[i]),
		      "%s frame went to backend %u, not the ring's", what[i], got);
	}
	for (i = 0; i < 4; i++)
		pool_release(&pools[i]);
}

/* --- what is not ours, or not parseable ----------------------------------------- */

static void test_non_vip_traffic_passes_untouched(void **state)
{
	static const struct pkt_spec specs[] = {
		/* Another address, another port, another protocol on a VIP address. */
		{ LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_NOT_VIP, 40000, 80, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_VIP, 40000, 22, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV4, IPPROTO_UDP, "198.18.1.1", V4_VIP, 40000, VIP_TCP_PORT, 0, 0, 0, 0 },
		{ LB_FAMILY_IPV6, IPPROTO_TCP, "2001:db8:c::1", "2001:db8::200", 40000, 80, 0, 0, 0, 0 },
	};
	unsigned char out[PKT_MAX];
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	size_t i, out_len;

	(void)state;
	NEEDS_ROOT();
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct pkt pkt;
		__u32 verdict;

		pkt_build(&pkt, &specs[i]);
		reasons_snapshot(before);
		verdict = run_frame(pkt.data, pkt.len, out, &out_len);
		reasons_snapshot(after);
		check(verdict == XDP_PASS, "non-VIP frame %zu got verdict %u", i, verdict);
		check(out_len == pkt.len && memcmp(out, pkt.data, pkt.len) == 0,
		      "non-VIP frame %zu was modified", i);
		check(after[LB_REASON_PASS_NOT_VIP] - before[LB_REASON_PASS_NOT_VIP] == 1,
		      "non-VIP frame %zu not counted as PASS_NOT_VIP", i);
	}
}

/* One row of the malformed-input table: a frame, the verdict, the reason. */
struct malformed_case {
	const char *name;
	void (*make)(struct pkt *pkt);
	__u32 verdict;
	__u32 reason;
};

/* The table's frames all come from one client, port 41000. */
static void table_frame(struct pkt *p, int family, uint8_t protocol, const char *dst,
			uint16_t dport, uint16_t vlan, uint8_t option_words, int hopopts)
{
	struct pkt_spec s = { family, protocol,
			      family == LB_FAMILY_IPV4 ? "198.18.1.9" : "2001:db8:c::9", dst, 41000,
			      dport, vlan, 0, option_words, hopopts };

	pkt_build(p, &s);
}

static void v4_tcp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 0, 0, 0);
}

static void v4_udp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_UDP, V4_VIP, VIP_UDP_PORT, 0, 0, 0);
}

static void v6_tcp(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV6, IPPROTO_TCP, V6_VIP, VIP_TCP_PORT, 0, 0, 0);
}

static void cut_in_vlan(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 5, 0, 0);
	p->len = 14 + 2;
}

static void stacked_vlan(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 5, 0, 0);
	/* The inner EtherType becomes a second tag. */
	p->data[16] = 0x81;
	p->data[17] = 0x00;
}

static void arp(struct pkt *p)
{
	v4_tcp(p);
	p->data[12] = 0x08;
	p->data[13] = 0x06;
}

static void cut_in_ipv4(struct pkt *p) { v4_tcp(p); p->len = p->l3 + 19; }
static void cut_in_ipv4_options(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP, VIP_TCP_PORT, 0, 3, 0);
	p->len = p->l3 + 20 + 8; /* 12 bytes of options announced, 8 present */
}
static void ipv4_ihl_4(struct pkt *p) { v4_tcp(p); p->data[p->l3] = 0x44; pkt_ipv4_checksum(p); }
static void ipv4_version_5(struct pkt *p) { v4_tcp(p); p->data[p->l3] = 0x55; }
static void ipv4_total_too_long(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 2] = 0x05; /* 1,280 bytes announced */
	p->data[p->l3 + 3] = 0x00;
	pkt_ipv4_checksum(p);
}
static void ipv4_total_below_header(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 2] = 0;
	p->data[p->l3 + 3] = 16;
	pkt_ipv4_checksum(p);
}
static void ipv4_more_fragments(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 6] = 0x20; /* MF */
	pkt_ipv4_checksum(p);
}
static void ipv4_later_fragment(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 6] = 0x00;
	p->data[p->l3 + 7] = 0x10; /* offset 128 bytes */
	pkt_ipv4_checksum(p);
}
static void ipv4_gre(struct pkt *p) { v4_tcp(p); p->data[p->l3 + 9] = 47; pkt_ipv4_checksum(p); }
/* Cut the frame and make the IPv4 total length agree, so only L4 is short. */
static void cut_ipv4_at(struct pkt *p, size_t len)
{
	p->len = len;
	p->data[p->l3 + 2] = (unsigned char)((len - p->l3) >> 8);
	p->data[p->l3 + 3] = (unsigned char)(len - p->l3);
	pkt_ipv4_checksum(p);
}
static void cut_in_tcp(struct pkt *p) { v4_tcp(p); cut_ipv4_at(p, p->l4 + 19); }
static void tcp_doff_4(struct pkt *p) { v4_tcp(p); p->data[p->l4 + 12] = 4 << 4; }
static void cut_in_udp(struct pkt *p) { v4_udp(p); cut_ipv4_at(p, p->l4 + 7); }
static void udp_len_7(struct pkt *p) { v4_udp(p); p->data[p->l4 + 4] = 0; p->data[p->l4 + 5] = 7; }
static void cut_in_ipv6(struct pkt *p) { v6_tcp(p); p->len = p->l3 + 39; }
static void ipv6_version_4(struct pkt *p) { v6_tcp(p); p->data[p->l3] = 0x40; }
static void ipv6_payload_too_long(struct pkt *p) { v6_tcp(p); p->data[p->l3 + 4] = 0x05; }
static void ipv6_payload_zero(struct pkt *p)
{
	v6_tcp(p);
	p->data[p->l3 + 4] = 0;
	p->data[p->l3 + 5] = 0;
}
static void ipv6_next(struct pkt *p, unsigned char next)
{
	/* Turn the TCP header's first 8 bytes into an extension header. */
	v6_tcp(p);
	p->data[p->l3 + 6] = next;
	p->data[p->l4] = IPPROTO_TCP;
	p->data[p->l4 + 1] = 0;
}
static void ipv6_fragment_header(struct pkt *p) { ipv6_next(p, 44); }
static void ipv6_esp(struct pkt *p) { ipv6_next(p, 50); }
static void ipv6_five_extensions(struct pkt *p)
{
	size_t i, at;

	v6_tcp(p);
	p->data[p->l3 + 6] = 60; /* destination options, five times */
	at = p->l4;
	memmove(p->data + at + 40, p->data + at, p->len - at);
	for (i = 0; i < 5; i++) {
		p->data[at + 8 * i] = i < 4 ? 60 : IPPROTO_TCP;
		p->data[at + 8 * i + 1] = 0;
		memset(p->data + at + 8 * i + 2, 0, 6);
		p->data[at + 8 * i + 2] = 1; /* PadN */
		p->data[at + 8 * i + 3] = 4;
	}
	p->len += 40;
	p->data[p->l3 + 5] = (unsigned char)(p->data[p->l3 + 5] + 40);
}
static void cut_in_ipv6_extension(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV6, IPPROTO_TCP, V6_VIP, VIP_TCP_PORT, 0, 0, 1);
	p->len = p->l3 + 40 + 4;
	p->data[p->l3 + 4] = 0;
	p->data[p->l3 + 5] = 4;
}
static void empty_ring_vip(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP_EMPTY, VIP_TCP_PORT, 0, 0, 0);
}
static void no_ring_vip(struct pkt *p)
{
	table_frame(p, LB_FAMILY_IPV4, IPPROTO_TCP, V4_VIP_NO_RING, VIP_TCP_PORT, 0, 0, 0);
}

/* ICMP echo request to the VIP address. */
static void icmp_echo(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l3 + 9] = IPPROTO_ICMP;
	memset(p->data + p->l4, 0, 8);
	p->data[p->l4] = 8;
	pkt_ipv4_checksum(p);
}

/*
 * An ICMP error from a router about a packet the backend sent to the client:
 * outer header router -> VIP, quoting VIP:port -> client:port.
 */
static void icmp_error_about(struct pkt *p, int family, unsigned char type, unsigned char code,
			     const char *quoted_src, uint16_t quoted_sport, uint16_t quoted_dport)
{
	struct pkt_spec q = { family, IPPROTO_TCP, quoted_src,
			      family == LB_FAMILY_IPV4 ? "198.18.1.9" : "2001:db8:c::9",
			      quoted_sport, quoted_dport, 0, 0x10, 0, 0 };

	pkt_build_icmp_error(p, &q, family == LB_FAMILY_IPV4 ? "198.18.0.1" : "2001:db8::1",
			     family == LB_FAMILY_IPV4 ? V4_VIP : V6_VIP, type, code);
}
static void icmp_frag_needed_for_vip_flow(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV4, 3, 4, V4_VIP, VIP_TCP_PORT, 41000);
}
static void icmp_frag_needed_for_other(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV4, 3, 4, V4_NOT_VIP, VIP_TCP_PORT, 41000);
}
static void icmp6_too_big_for_vip_flow(struct pkt *p)
{
	icmp_error_about(p, LB_FAMILY_IPV6, 2, 0, V6_VIP, VIP_TCP_PORT, 41000);
}
static void icmp_error_cut_quote(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	p->len -= 6; /* the quoted ports are cut */
	p->data[p->l3 + 3] = (unsigned char)(p->data[p->l3 + 3] - 6);
	pkt_ipv4_checksum(p);
}

/*
 * Lengths the IP header states, shorter than the frame: what lies past them
 * is Ethernet padding, not the packet (RFC 791 total length, RFC 8200
 * payload length), and a header read there must not count.
 */
static void set_ipv4_total(struct pkt *p, size_t total)
{
	p->data[p->l3 + 2] = (unsigned char)(total >> 8);
	p->data[p->l3 + 3] = (unsigned char)total;
	pkt_ipv4_checksum(p);
}
static void set_ipv6_payload(struct pkt *p, size_t payload)
{
	p->data[p->l3 + 4] = (unsigned char)(payload >> 8);
	p->data[p->l3 + 5] = (unsigned char)payload;
}
static void ipv4_tcp_in_padding(struct pkt *p) { v4_tcp(p); set_ipv4_total(p, 20); }
static void ipv4_tcp_cut_by_length(struct pkt *p) { v4_tcp(p); set_ipv4_total(p, 20 + 12); }
static void tcp_doff_past_segment(struct pkt *p)
{
	v4_tcp(p);
	p->data[p->l4 + 12] = 15 << 4; /* 60 bytes of header in a 52-byte segment */
}
static void udp_len_past_payload(struct pkt *p)
{
	v4_udp(p);
	p->data[p->l4 + 4] = 0;
	p->data[p->l4 + 5] = 8 + PKT_PAYLOAD + 1;
}
static void ipv6_tcp_in_padding(struct pkt *p) { v6_tcp(p); set_ipv6_payload(p, 4); }
static void icmp_quote_cut_by_length(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	/* The frame keeps the whole quote; the IPv4 length ends it before the ports. */
	set_ipv4_total(p, p->len - p->l3 - 6);
}
static void icmp_error_to_another_address(struct pkt *p)
{
	icmp_frag_needed_for_vip_flow(p);
	/* Outer destination 198.18.0.200: not the VIP the quoted packet came from. */
	p->data[p->l3 + 19] = 200;
	pkt_ipv4_checksum(p);
}

static const struct malformed_case malformed_cases[] = {
	{ "frame cut inside its VLAN tag", cut_in_vlan, XDP_PASS, LB_REASON_PASS_TRUNC_VLAN },
	{ "two stacked VLAN tags", stacked_vlan, XDP_PASS, LB_REASON_PASS_VLAN_STACKED },
	{ "ARP", arp, XDP_PASS, LB_REASON_PASS_NOT_IP },
	{ "frame cut inside its IPv4 header", cut_in_ipv4, XDP_PASS, LB_REASON_PASS_TRUNC_IP },
	{ "frame cut inside its IPv4 options", cut_in_ipv4_options, XDP_PASS,
	  LB_REASON_PASS_TRUNC_IP },
	{ "IPv4 IHL of 4", ipv4_ihl_4, XDP_PASS, LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 version 5", ipv4_version_5, XDP_PASS, LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 total length past the frame", ipv4_total_too_long, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 total length below the header", ipv4_total_below_header, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV4 },
	{ "IPv4 first fragment (MF)", ipv4_more_fragments, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "IPv4 later fragment", ipv4_later_fragment, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "GRE to a VIP address", ipv4_gre, XDP_PASS, LB_REASON_PASS_NOT_VIP },
	{ "frame cut inside its TCP header", cut_in_tcp, XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "TCP data offset of 4", tcp_doff_4, XDP_PASS, LB_REASON_PASS_BAD_L4 },
	{ "frame cut inside its UDP header", cut_in_udp, XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "UDP length of 7", udp_len_7, XDP_PASS, LB_REASON_PASS_BAD_L4 },
	{ "frame cut inside its IPv6 header", cut_in_ipv6, XDP_PASS, LB_REASON_PASS_TRUNC_IP },
	{ "IPv6 EtherType with version 4", ipv6_version_4, XDP_PASS, LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 payload length past the frame", ipv6_payload_too_long, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 payload length 0 (jumbogram)", ipv6_payload_zero, XDP_PASS,
	  LB_REASON_PASS_BAD_IPV6 },
	{ "IPv6 fragment header", ipv6_fragment_header, XDP_PASS, LB_REASON_PASS_FRAGMENT },
	{ "IPv6 ESP", ipv6_esp, XDP_PASS, LB_REASON_PASS_IPV6_EXT },
	{ "IPv6 with five extension headers", ipv6_five_extensions, XDP_PASS,
	  LB_REASON_PASS_IPV6_EXT },
	{ "frame cut inside an IPv6 extension header", cut_in_ipv6_extension, XDP_PASS,
	  LB_REASON_PASS_TRUNC_IPV6_EXT },
	{ "ICMP echo to a VIP address", icmp_echo, XDP_PASS, LB_REASON_PASS_ICMP },
	{ "ICMP fragmentation needed about a VIP flow", icmp_frag_needed_for_vip_flow, XDP_TX,
	  LB_REASON_FORWARDED_ICMP },
	{ "ICMPv6 packet too big about a VIP flow", icmp6_too_big_for_vip_flow, XDP_TX,
	  LB_REASON_FORWARDED_ICMP },
	{ "ICMP fragmentation needed about another host", icmp_frag_needed_for_other, XDP_PASS,
	  LB_REASON_PASS_ICMP },
	{ "ICMP error whose quote is cut", icmp_error_cut_quote, XDP_PASS, LB_REASON_PASS_ICMP },
	{ "IPv4 total length 20, a TCP header in the Ethernet padding", ipv4_tcp_in_padding,
	  XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "IPv4 total length ending inside the TCP header", ipv4_tcp_cut_by_length, XDP_PASS,
	  LB_REASON_PASS_TRUNC_L4 },
	{ "TCP data offset past the IPv4 payload", tcp_doff_past_segment, XDP_PASS,
	  LB_REASON_PASS_BAD_L4 },
	{ "UDP length past the IPv4 payload", udp_len_past_payload, XDP_PASS,
	  LB_REASON_PASS_BAD_L4 },
	{ "IPv6 payload length 4, a TCP header in the Ethernet padding", ipv6_tcp_in_padding,
	  XDP_PASS, LB_REASON_PASS_TRUNC_L4 },
	{ "ICMP error whose IPv4 length ends inside the quote", icmp_quote_cut_by_length, XDP_PASS,
	  LB_REASON_PASS_ICMP },
	{ "ICMP error about a VIP flow sent to another address", icmp_error_to_another_address,
	  XDP_PASS, LB_REASON_PASS_ICMP },
	{ "TCP to a VIP whose ring is empty", empty_ring_vip, XDP_DROP,
	  LB_REASON_DROP_NO_BACKEND },
	{ "TCP to a VIP with no ring", no_ring_vip, XDP_DROP, LB_REASON_DROP_NO_RING },
};

static void test_malformed_and_unusual_frames_get_documented_verdicts(void **state)
{
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	struct pool pools[4];
	size_t i;
	int wrong = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	for (i = 0; i < 4; i++)
		pool_install(&pools[i], VIP_V4_TCP + (int)i, ring_weighted(10, 3, NULL, "table"));
	for (i = 0; i < sizeof(malformed_cases) / sizeof(malformed_cases[0]); i++) {
		const struct malformed_case *mc = &malformed_cases[i];
		unsigned char out[PKT_MAX];
		struct pkt pkt;
		size_t out_len;
		__u32 verdict, r, counted;

		mc->make(&pkt);
		reasons_snapshot(before);
		verdict = run_frame(pkt.data, pkt.len, out, &out_len);
		reasons_snapshot(after);
		counted = LB_REASON_COUNT;
		for (r = 0; r < LB_REASON_COUNT; r++)
			if (after[r] != before[r])
				counted = after[r] - before[r] == 1 && counted == LB_REASON_COUNT ?
						  r : LB_REASON_COUNT + 1;
		/* Every row is tried, so one run names every row that is wrong. */
		if (verdict != mc->verdict || counted != mc->reason ||
		    (verdict == XDP_PASS && (out_len != pkt.len || memcmp(out, pkt.data, pkt.len)))) {
			print_error("%s: verdict %u reason %u, documented verdict %u reason %u%s\n",
				    mc->name, verdict, counted, mc->verdict, mc->reason,
				    verdict == XDP_PASS ? " (or the passed frame was modified)" : "");
			wrong++;
		}
	}
	check(wrong == 0, "%d of %zu frames did not get their documented verdict and reason", wrong,
	      sizeof(malformed_cases) / sizeof(malformed_cases[0]));
	for (i = 0; i < 4; i++)
		pool_release(&pools[i]);
}

/* The ICMP error reaches the backend of the flow it quotes. */
static void test_icmp_error_follows_the_quoted_flow(void **state)
{
	struct pkt_spec flow = { LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.9", V4_VIP, 41000,
				 VIP_TCP_PORT, 0, 0, 0, 0 };
	struct pool pool;
	struct pkt pkt, icmp;
	__u32 flow_backend;
	int i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 8, NULL, "icmp"));
	pkt_build(&pkt, &flow);
	flow_backend = forward(&pkt);
	for (i = 0; i < 8; i++) {
		icmp_frag_needed_for_vip_flow(&icmp);
		check(forward(&icmp) == flow_backend, "ICMP error went elsewhere than its flow");
	}
	pool_release(&pool);
}

/* --- swaps, pinning, drain --------------------------------------------------------- */

/* Send packet of flow i (a fixed client address and port per i) to the IPv4 TCP VIP. */
static __u32 send_flow(int i, uint8_t tcp_flags)
{
	char client[64];
	struct pkt_spec spec = { LB_FAMILY_IPV4, IPPROTO_TCP, client, V4_VIP,
				 (uint16_t)(10000 + i % 50000), VIP_TCP_PORT, 0, tcp_flags, 0, 0 };
	struct pkt pkt;

	snprintf(client, sizeof(client), "198.18.%d.%d", 128 + i / 50000 % 64, 1 + i % 250);
	pkt_build(&pkt, &spec);
	return forward(&pkt);
}

static struct pkt_spec flow_spec(int i, char *client, size_t len)
{
	struct pkt_spec spec = { LB_FAMILY_IPV4, IPPROTO_TCP, client, V4_VIP,
				 (uint16_t)(10000 + i % 50000), VIP_TCP_PORT, 0, 0, 0, 0 };

	snprintf(client, len, "198.18.%d.%d", 128 + i / 50000 % 64, 1 + i % 250);
	return spec;
}

#define SWAP_FLOWS 3000

static void test_swap_serves_new_ring_and_keeps_pinned_flows(void **state)
{
	static __u32 pinned[SWAP_FLOWS];
	struct pool a, b;
	int i, moved_new = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&a, VIP_V4_TCP, ring_weighted(100, 4, NULL, "old"));
	for (i = 0; i < SWAP_FLOWS; i++)
		pinned[i] = send_flow(i, 0);
	/* A whole new set of backends; the old ones stay installed and active. */
	pool_install(&b, VIP_V4_TCP, ring_weighted(100, 4, NULL, "new"));
	for (i = 0; i < SWAP_FLOWS; i++)
		check(send_flow(i, 0x10) == pinned[i],
		      "established flow %d left its backend after the swap", i);
	for (i = SWAP_FLOWS; i < 2 * SWAP_FLOWS; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(i, client, sizeof(client));
		__u32 got = send_flow(i, 0);

		check(got == expected_backend(&b, &spec), "new flow %d not placed by the new ring", i);
		moved_new++;
	}
	check(moved_new == SWAP_FLOWS, "not every new flow was checked");
	pool_release(&a);
	pool_release(&b);
}

/*
 * Drain member @m of @pool as the controller does: the ring without it
 * serves first, then its state says draining. @after gets that ring and its
 * backend ids. Return: the drained backend's id.
 */
static __u32 pool_drain(struct pool *pool, size_t m, struct pool *after)
{
	struct lb_vip_key key = vip_key_of_test(pool->vip);
	size_t i;

	after->vip = pool->vip;
	after->count = 0;
	assert_int_equal(ring_clone(&after->ring, pool->ring), 0);
	assert_int_equal(ring_remove(after->ring, ring_member_name(pool->ring, (__u32)m)), 0);
	for (i = 0; i < pool->count; i++)
		if (i != m)
			after->ids[after->count++] = pool->ids[i];
	check(lb_vip_install(maps, &key, (__u32)pool->vip, after->ring, after->ids) == 0,
	      "the ring without the drained backend swaps in");
	check(lb_backend_set_state(maps, pool->ids[m], LB_BACKEND_DRAINING) == 0,
	      "the backend is marked draining");
	return pool->ids[m];
}

static void test_draining_backend_keeps_pinned_flows_and_gets_no_new_ones(void **state)
{
	static __u32 pinned[SWAP_FLOWS];
	struct pool pool, after;
	__u32 drained;
	int i, kept = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(200, 4, NULL, "drain"));
	for (i = 0; i < SWAP_FLOWS; i++)
		pinned[i] = send_flow(i, 0);
	drained = pool_drain(&pool, 1, &after);
	for (i = 0; i < SWAP_FLOWS; i++) {
		__u32 got = send_flow(i, 0x10);

		check(got == pinned[i], "flow %d moved from %u to %u during the drain", i, pinned[i],
		      got);
		kept += pinned[i] == drained;
	}
	check(kept > SWAP_FLOWS / 10, "only %d flows were pinned to the drained backend", kept);
	for (i = SWAP_FLOWS; i < 3 * SWAP_FLOWS; i++)
		check(send_flow(i, 0) != drained, "new flow %d reached the draining backend", i);
	/* Removed: its flows are placed again by the ring, never sent to a free slot. */
	assert_int_equal(lb_backend_set_state(maps, drained, LB_BACKEND_UNUSED), 0);
	for (i = 0; i < SWAP_FLOWS; i++)
		check(send_flow(i, 0x10) != drained, "flow %d still reaches a removed backend", i);
	ring_free(after.ring);
	pool_release(&pool);
}

#define TCP_SYN 0x02
#define TCP_FIN_ACK 0x11
#define TCP_RST 0x04
#define TCP_ACK 0x10

static void test_fin_marks_the_flow_closing_and_a_new_connection_clears_it(void **state)
{
	char client[64];
	struct pkt_spec spec = flow_spec(7, client, sizeof(client));
	struct lb_flow_key key;
	struct lb_flow flow;
	struct pool pool;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(10, 3, NULL, "fin"));
	key_of_spec(&spec, &key);
	send_flow(7, TCP_SYN);
	check(bpf_map_lookup_elem(maps->flows, &key, &flow) == 0, "SYN did not pin the flow");
	check(!(flow.flags & LB_FLOW_FIN), "a fresh flow is marked closing");
	send_flow(7, TCP_FIN_ACK);
	check(bpf_map_lookup_elem(maps->flows, &key, &flow) == 0 && (flow.flags & LB_FLOW_FIN),
	      "FIN did not mark the flow closing");
	/* The client opens a new connection from the same address and port. */
	send_flow(7, TCP_SYN);
	check(bpf_map_lookup_elem(maps->flows, &key, &flow) == 0 && !(flow.flags & LB_FLOW_FIN),
	      "a new connection on a tuple whose last connection sent FIN still counts as closing "
	      "(flags %#x)", flow.flags);
	pool_release(&pool);
}

#define RESYN_FLOWS 400

/*
 * RESYN_FLOWS connections opened (SYN) on a ring of 4, then member @m drained:
 * @after gets the ring without it. Return: the drained backend's id.
 */
static __u32 pinned_then_drained(struct pool *pool, const char *name, size_t m,
				  struct pool *after)
{
	int i;

	flows_clear();
	pool_install(pool, VIP_V4_TCP, ring_weighted(200, 4, NULL, name));
	for (i = 0; i < RESYN_FLOWS; i++)
		send_flow(i, TCP_SYN);
	return pool_drain(pool, m, after);
}

/*
 * Clients behind NAT, or reconnecting from the same port, reuse a 4-tuple:
 * a SYN without ACK is a new connection, and a draining backend takes none.
 */
static void test_syn_on_a_tuple_pinned_to_a_draining_backend_is_placed_by_the_ring(void **state)
{
	struct pool pool, after;
	__u32 drained;
	int i, reused = 0;

	(void)state;
	NEEDS_ROOT();
	drained = pinned_then_drained(&pool, "resyn", 1, &after);
	for (i = 0; i < RESYN_FLOWS; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(i, client, sizeof(client));
		__u32 got, want = expected_backend(&after, &spec);

		if (send_flow(i, TCP_ACK) != drained)
			continue;
		reused++;
		got = send_flow(i, TCP_SYN);
		check(got == want, "flow %d: a new connection on a tuple pinned to draining backend "
		      "%u went to %u, not the ring's %u", i, drained, got, want);
		check(send_flow(i, TCP_ACK) == want,
		      "flow %d: the new connection's next packet did not follow its SYN", i);
	}
	check(reused >= RESYN_FLOWS / 10, "only %d flows were pinned to the drained backend", reused);
	ring_free(after.ring);
	pool_release(&pool);
}

/*
 * A RST may be spoofed or out of window, and then the backend ignores it
 * (RFC 5961): it goes to the flow's backend, which judges it, and the flow
 * stays where it is, even when that backend drains.
 */
static void test_reset_goes_to_the_pinned_backend_and_keeps_the_pin(void **state)
{
	struct pool pool, after;
	__u32 drained;
	int i, kept = 0;

	(void)state;
	NEEDS_ROOT();
	drained = pinned_then_drained(&pool, "rst", 2, &after);
	for (i = 0; i < RESYN_FLOWS; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(i, client, sizeof(client));
		struct lb_flow_key key;
		struct lb_flow flow;
		__u32 got;

		if (send_flow(i, TCP_ACK) != drained)
			continue;
		kept++;
		got = send_flow(i, TCP_RST);
		check(got == drained, "flow %d: a RST went to %u, not its pinned backend %u", i, got,
		      drained);
		key_of_spec(&spec, &key);
		check(bpf_map_lookup_elem(maps->flows, &key, &flow) == 0 && flow.backend_id == drained,
		      "flow %d: a RST unpinned the flow", i);
		got = send_flow(i, TCP_ACK);
		check(got == drained, "flow %d: after a RST its next packet went to %u, not %u", i,
		      got, drained);
	}
	check(kept >= RESYN_FLOWS / 10, "only %d flows were pinned to the drained backend", kept);
	/* A RST of a flow nobody pinned goes where the ring says, and pins nothing. */
	{
		char client[64];
		struct pkt_spec spec = flow_spec(5 * RESYN_FLOWS, client, sizeof(client));
		struct lb_flow_key key;
		struct lb_flow flow;

		check(send_flow(5 * RESYN_FLOWS, TCP_RST) == expected_backend(&after, &spec),
		      "a RST of an unknown flow did not go where the ring says");
		key_of_spec(&spec, &key);
		check(bpf_map_lookup_elem(maps->flows, &key, &flow) != 0,
		      "a RST of an unknown flow pinned it");
	}
	ring_free(after.ring);
	pool_release(&pool);
}

/*
 * A pinned flow whose backend slot went to another backend (same VIP) must
 * not reach the new occupant, whatever the ring says: here the VIP's ring is
 * gone, so the packet has nowhere to go and is dropped.
 */
static void test_pin_to_a_reused_slot_never_reaches_the_new_occupant(void **state)
{
	struct pkt_spec spec = { LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.77", V4_VIP_NO_RING,
				 41234, VIP_TCP_PORT, 0, TCP_ACK, 0, 0 };
	struct lb_backend first = { .family = LB_FAMILY_IPV4, .state = LB_BACKEND_ACTIVE,
				    .vip_id = VIP_NO_RING, .cookie = 0x1111,
				    .mac = { 0x02, 0xbe, 0, 0, 0x0f, 0x01 } };
	struct lb_backend second = first;
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	__u32 id = LB_BACKENDS_MAX - 2, verdict;
	unsigned char out[PKT_MAX];
	struct lb_flow_key key;
	struct lb_flow pin = { 0 }, now;
	struct pkt pkt;
	size_t out_len;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	check(lb_backend_install(maps, id, &first) == 0, "install the first backend");
	key_of_spec(&spec, &key);
	pin.backend_id = id;
	pin.backend_cookie = first.cookie;
	pin.vip_id = VIP_NO_RING;
	check(bpf_map_update_elem(maps->flows, &key, &pin, BPF_ANY) == 0, "pin the flow");
	/* The slot is given to another backend of the same VIP. */
	second.cookie = 0x2222;
	second.mac[5] = 0x02;
	check(lb_backend_set_state(maps, id, LB_BACKEND_UNUSED) == 0 &&
	      lb_backend_install(maps, id, &second) == 0, "give the slot to another backend");
	pkt_build(&pkt, &spec);
	reasons_snapshot(before);
	verdict = run_frame(pkt.data, pkt.len, out, &out_len);
	reasons_snapshot(after);
	check(verdict == XDP_DROP && after[LB_REASON_DROP_NO_RING] - before[LB_REASON_DROP_NO_RING] == 1,
	      "a flow pinned to a reused slot got verdict %u (sent to %02x:%02x), not a drop for "
	      "its missing ring", verdict, out[4], out[5]);
	check(bpf_map_lookup_elem(maps->flows, &key, &now) == 0 &&
	      now.backend_cookie == first.cookie, "the flow was pinned to the slot's new occupant");
	lb_backend_set_state(maps, id, LB_BACKEND_UNUSED);
}

/* An ICMP error follows its flow but is not a sign of the flow's life. */
static void test_icmp_error_does_not_refresh_its_flow(void **state)
{
	struct pkt_spec spec = { LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.9", V4_VIP, 41000,
				 VIP_TCP_PORT, 0, TCP_SYN, 0, 0 };
	struct lb_flow_key key;
	struct lb_flow flow;
	struct pool pool;
	struct pkt pkt, icmp;
	__u32 backend;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 8, NULL, "icmplive"));
	pkt_build(&pkt, &spec);
	backend = forward(&pkt);
	key_of_spec(&spec, &key);
	assert_int_equal(bpf_map_lookup_elem(maps->flows, &key, &flow), 0);
	flow.last_seen_ns = 1; /* long idle */
	assert_int_equal(bpf_map_update_elem(maps->flows, &key, &flow, BPF_EXIST), 0);
	icmp_frag_needed_for_vip_flow(&icmp);
	check(forward(&icmp) == backend, "the ICMP error did not follow its flow");
	assert_int_equal(bpf_map_lookup_elem(maps->flows, &key, &flow), 0);
	check(flow.last_seen_ns == 1, "an ICMP error made an idle flow look live (last seen %llu)",
	      (unsigned long long)flow.last_seen_ns);
	pool_release(&pool);
}

static void test_new_flows_and_bytes_are_counted_per_backend_and_vip(void **state)
{
	int cpus = libbpf_num_possible_cpus(), c, i;
	struct lb_backend_counters *bc = calloc((size_t)cpus, sizeof(*bc));
	struct lb_counters *vc = calloc((size_t)cpus, sizeof(*vc));
	__u64 new_flows = 0, packets = 0, vip_packets = 0;
	struct pool pool;
	__u32 vip = VIP_V4_TCP;
	size_t m;

	(void)state;
	NEEDS_ROOT();
	assert_non_null(bc);
	assert_non_null(vc);
	flows_clear();
	assert_int_equal(bpf_map_lookup_elem(maps->vip_stats, &vip, vc), 0);
	for (c = 0; c < cpus; c++)
		vip_packets -= vc[c].packets;
	pool_install(&pool, VIP_V4_TCP, ring_weighted(10, 3, NULL, "count"));
	for (i = 0; i < 100; i++) {
		send_flow(i, 0x02);
		send_flow(i, 0x10);
	}
	for (m = 0; m < pool.count; m++) {
		assert_int_equal(bpf_map_lookup_elem(maps->backend_stats, &pool.ids[m], bc), 0);
		for (c = 0; c < cpus; c++) {
			new_flows += bc[c].new_flows;
			packets += bc[c].packets;
		}
	}
	assert_int_equal(bpf_map_lookup_elem(maps->vip_stats, &vip, vc), 0);
	for (c = 0; c < cpus; c++)
		vip_packets += vc[c].packets;
	check(new_flows == 100, "%llu new flows counted for 100", (unsigned long long)new_flows);
	check(packets == 200, "%llu packets counted for 200", (unsigned long long)packets);
	check(vip_packets == 200, "VIP counted %llu packets for 200",
	      (unsigned long long)vip_packets);
	free(bc);
	free(vc);
	pool_release(&pool);
}

static void test_failed_swap_leaves_old_ring_serving(void **state)
{
	struct lb_vip_key key = vip_key_of_test(VIP_V4_TCP);
	struct lb_maps broken;
	int c;
	struct pool pool;
	struct ring *other;
	__u32 before[200];
	int i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(50, 5, NULL, "keep"));
	for (i = 0; i < 200; i++)
		before[i] = send_flow(i, 0);
	other = ring_weighted(50, 2, NULL, "never");
	check(lb_vip_install(maps, &key, LB_VIPS_MAX, other, pool.ids) == -ERANGE,
	      "swap into a slot past the rings map was not refused");
	/* Closed rings descriptors: the ring is built and filled, the swap fails. */
	broken = *maps;
	for (c = 0; c < LB_RING_CLASSES; c++)
		broken.rings[c] = -1;
	check(lb_vip_install(&broken, &key, VIP_V4_TCP, other, pool.ids) < 0,
	      "swap through a broken rings map did not fail");
	flows_clear();
	for (i = 0; i < 200; i++)
		check(send_flow(i, 0) == before[i], "flow %d changed backend after a failed swap", i);
	ring_free(other);
	pool_release(&pool);
}

/* --- a VIP value under a packet --------------------------------------------------- */

/* Run the calling thread on @cpu only, or on every CPU when @cpu is -1. */
static int pin_to_cpu(int cpu)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (cpu < 0 || i == cpu)
			CPU_SET(i, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

struct reader_run {
	int prog_fd;
	int err;
};

/* One packet through vip_reader, on CPU 0: it holds the VIP value until released. */
static void *reader_thread(void *arg)
{
	struct reader_run *run = arg;
	struct pkt pkt;
	struct pkt_spec spec = { LB_FAMILY_IPV4, IPPROTO_TCP, "198.18.1.1", V4_VIP, 40000,
				 VIP_TCP_PORT, 0, 0, 0, 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .repeat = 1);

	pkt_build(&pkt, &spec);
	opts.data_in = pkt.data;
	opts.data_size_in = (__u32)pkt.len;
	run->err = pin_to_cpu(0) ? -errno : 0;
	if (!run->err && bpf_prog_test_run_opts(run->prog_fd, &opts))
		run->err = -errno;
	return NULL;
}

/*
 * The VIP map is not preallocated, but since Linux 6.1 its freed elements
 * are reused at once: without a wait between them, the second of two VIP
 * updates can write another VIP's value into the element a packet on
 * another CPU is still reading. The controller waits for running programs
 * after every update of a VIP value; here a program holds VIP A's value
 * while the controller updates A and then B.
 */
static void test_a_vip_value_being_read_survives_back_to_back_vip_updates(void **state)
{
	struct lb_vip_key key_a = vip_key_of_test(VIP_V4_TCP), key_b = vip_key_of_test(VIP_V4_UDP);
	volatile struct vip_reader_bpf__bss *bss;
	struct reader_run run = { 0 };
	struct vip_reader_bpf *skel;
	pthread_t reader;
	int waited_ms = 0;

	(void)state;
	NEEDS_ROOT();
	if (libbpf_num_possible_cpus() < 2 || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip(); /* the reader and the controller need a CPU each */
	skel = vip_reader_bpf__open();
	assert_non_null(skel);
	check(bpf_map__reuse_fd(skel->maps.vips, maps->vips) == 0 && vip_reader_bpf__load(skel) == 0,
	      "load vip_reader on the test's VIP map");
	check(lb_vip_install(maps, &key_a, VIP_V4_TCP, NULL, NULL) == 0 &&
	      lb_vip_install(maps, &key_b, VIP_V4_UDP, NULL, NULL) == 0 &&
	      lb_readers_release() == 0, "VIPs A and B in place, nothing owed");
	bss = skel->bss;
	bss->probe_key = key_a;
	run.prog_fd = bpf_program__fd(skel->progs.vip_reader);
	assert_int_equal(pin_to_cpu(1), 0);
	assert_int_equal(pthread_create(&reader, NULL, reader_thread, &run), 0);
	while (!bss->holding && waited_ms < 5000) {
		usleep(1000);
		waited_ms++;
	}
	check(bss->holding, "the reader never got VIP A's value");
	/* Two VIP updates back to back, as a change of two VIPs makes them: B's waits for A's readers. */
	check(lb_vip_install(maps, &key_a, VIP_V4_TCP, NULL, NULL) == 0 &&
	      lb_vip_install(maps, &key_b, VIP_V4_UDP, NULL, NULL) == 0, "update A, then B");
	bss->release = 1;
	pthread_join(reader, NULL);
	pin_to_cpu(-1);
	check(run.err == 0, "BPF_PROG_TEST_RUN: %s", strerror(-run.err));
	check(memcmp((const void *)&bss->before, (const void *)&bss->after, sizeof(struct lb_vip)) == 0,
	      "the VIP value a packet held changed under it: vip_id %u -> %u (its element was "
	      "reused for another VIP's value)", bss->before.vip_id, bss->after.vip_id);
	printf("vip value: held across two updates, reader waited %u loop rounds\n", bss->loops);
	vip_reader_bpf__destroy(skel);
}

/* bpffs for the pin tests: /sys/fs/bpf, mounted if it is not. */
static int bpffs_dir(char *dir, size_t len)
{
	struct stat st;

	if (stat("/sys/fs/bpf", &st) != 0 && mkdir("/sys/fs/bpf", 0700) != 0)
		return -errno;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) != 0 && errno != EBUSY)
		return -errno;
	snprintf(dir, len, "/sys/fs/bpf/ringlb-test-%d", (int)getpid());
	return mkdir(dir, 0700) == 0 ? 0 : -errno;
}

static void pins_remove(const char *dir)
{
	static const char *const names[] = {
		"vips", "backends", "rings_0", "rings_1", "rings_2", "rings_3", "flows",
		"vip_stats", "backend_stats",
		"reason_stats", "link",
	};
	char path[512];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

static void test_instances_share_pinned_maps(void **state)
{
	struct lb_load_opts opts = { .secret = { 1, 2 }, .flow_entries = 4096 };
	struct lb_prog *first = NULL, *second = NULL;
	struct lb_maps pinned;
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	char dir[256];
	int err;

	(void)state;
	NEEDS_ROOT();
	err = bpffs_dir(dir, sizeof(dir));
	check(err == 0, "bpffs: %s", strerror(-err));
	opts.pin_dir = dir;
	err = lb_prog_load(&first, &opts);
	check(err == 0, "first instance: %s", strerror(-err));
	opts.flow_entries = 0;
	err = lb_prog_load(&second, &opts);
	check(err == 0, "second instance: %s", strerror(-err));
	check(map_id(lb_prog_maps(first)->rings[3]) == map_id(lb_prog_maps(second)->rings[3]),
	      "the second instance did not reuse the pinned rings map");
	check(map_id(lb_prog_maps(first)->flows) == map_id(lb_prog_maps(second)->flows),
	      "the second instance did not reuse the pinned flow table");
	err = lb_maps_open_pinned(&pinned, dir);
	check(err == 0, "open pinned maps: %s", strerror(-err));
	check(map_id(pinned.backends) == map_id(lb_prog_maps(first)->backends),
	      "pinned backends map is not the loaded one");
	check(bpf_obj_get_info_by_fd(pinned.flows, &info, &info_len) == 0 &&
	      info.max_entries == 4096, "flow table size %u, loaded with 4096", info.max_entries);
	lb_maps_close(&pinned);
	lb_prog_close(first);
	lb_prog_close(second);
	pins_remove(dir);
}

/*
 * Attach natively to a veth in a private network namespace (a child process
 * made with unshare, so nothing leaks), check the kernel reports a driver-mode
 * XDP program, and detach by removing the pinned link.
 */
static void test_attach_native_with_pinned_link_and_detach(void **state)
{
	char dir[256];
	pid_t child;
	int status, err;

	(void)state;
	NEEDS_ROOT();
	err = bpffs_dir(dir, sizeof(dir));
	check(err == 0, "bpffs: %s", strerror(-err));
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct lb_load_opts opts = { .secret = { 3, 4 } };
		LIBBPF_OPTS(bpf_xdp_query_opts, query);
		struct lb_prog *p = NULL;
		char link[512];
		int ifindex;

		if (unshare(CLONE_NEWNET) || system("ip link add rlb0 type veth peer name rlb1 && "
						     "ip link set rlb0 up && ip link set rlb1 up"))
			_exit(10);
		ifindex = (int)if_nametoindex("rlb0");
		snprintf(link, sizeof(link), "%s/link", dir);
		opts.pin_dir = dir;
		if (!ifindex || lb_prog_load(&p, &opts))
			_exit(11);
		if (lb_attach(p, ifindex, LB_ATTACH_NATIVE, link))
			_exit(12);
		lb_prog_close(p); /* the pinned link keeps it attached */
		if (bpf_xdp_query(ifindex, 0, &query) || query.attach_mode != XDP_ATTACHED_DRV)
			_exit(13);
		if (lb_detach(link, ifindex) || bpf_xdp_query(ifindex, 0, &query) ||
		    query.attach_mode != XDP_ATTACHED_NONE)
			_exit(14);
		_exit(0);
	}
	assert_true(waitpid(child, &status, 0) == child);
	pins_remove(dir);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "attach/detach in a namespace failed at step %d (10 veth, 11 load, 12 attach, "
	      "13 not native, 14 detach)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_agrees_with_ring_on_one_point_ring),
		cmocka_unit_test(test_kernel_agrees_with_ring_on_weighted_ring),
		cmocka_unit_test(test_kernel_agrees_with_ring_on_million_point_ring),
		cmocka_unit_test(test_changes_written_in_place_serve_what_the_ring_says),
		cmocka_unit_test(test_change_without_a_good_spare_is_refused_and_old_ring_serves),
		cmocka_unit_test(test_forwarded_frame_differs_only_in_macs),
		cmocka_unit_test(test_non_vip_traffic_passes_untouched),
		cmocka_unit_test(test_malformed_and_unusual_frames_get_documented_verdicts),
		cmocka_unit_test(test_icmp_error_follows_the_quoted_flow),
		cmocka_unit_test(test_swap_serves_new_ring_and_keeps_pinned_flows),
		cmocka_unit_test(test_draining_backend_keeps_pinned_flows_and_gets_no_new_ones),
		cmocka_unit_test(test_fin_marks_the_flow_closing_and_a_new_connection_clears_it),
		cmocka_unit_test(test_syn_on_a_tuple_pinned_to_a_draining_backend_is_placed_by_the_ring),
		cmocka_unit_test(test_reset_goes_to_the_pinned_backend_and_keeps_the_pin),
		cmocka_unit_test(test_pin_to_a_reused_slot_never_reaches_the_new_occupant),
		cmocka_unit_test(test_icmp_error_does_not_refresh_its_flow),
		cmocka_unit_test(test_new_flows_and_bytes_are_counted_per_backend_and_vip),
		cmocka_unit_test(test_failed_swap_leaves_old_ring_serving),
		cmocka_unit_test(test_a_vip_value_being_read_survives_back_to_back_vip_updates),
		cmocka_unit_test(test_instances_share_pinned_maps),
		cmocka_unit_test(test_attach_native_with_pinned_link_and_detach),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
