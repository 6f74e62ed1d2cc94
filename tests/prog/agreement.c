// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel and the ring library agree: random flows of rings of every
 * size go to the backend ring_lookup() names, after whole swaps and after
 * changes written in place, and a change without a good spare is refused
 * while the old ring serves. With source ranges, the kernel, `ringlb
 * lookup` (kernel_lookup()) and the model agree on every random client:
 * refused under the same reason, or sent to the ring library's backend.
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
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"
#include "kernel.h"

#define AGREEMENT_FLOWS 10000


/* --- agreement ------------------------------------------------------------------ */

/* @flows random flows of @pool's VIP go where its ring says, SYNs and ACKs alike. */
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
		/*
		 * Every other TCP flow an ACK of a connection not seen (its ring
		 * read after its set), the others SYNs (pkt_build()'s default:
		 * their SipHash first, their ring bucket read early).
		 */
		if (spec.protocol == IPPROTO_TCP && !(f & 1))
			spec.tcp_flags = 0x10;
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

#define RANGED_FLOWS 4000
#define RANGED_PREFIXES 48
#define RANGED_MEMBERS 8

/* A random prefix over the clients random_flow() makes for @family. */
static void random_prefix(struct test_rng *rng, int family, struct prefix *p)
{
	unsigned int bit, max = family == LB_FAMILY_IPV4 ? 32 : 128;
	uint64_t a = test_rng_next(rng);

	memset(p, 0, sizeof(*p));
	p->addr.family = family;
	if (family == LB_FAMILY_IPV4) {
		p->addr.bytes[0] = 198;
		p->addr.bytes[1] = 18;
		p->addr.bytes[2] = (__u8)(a | 128);
		p->addr.bytes[3] = (__u8)(a >> 8);
		/* 18 .. 25 bits, and now and then a host. */
		p->len = test_rng_below(rng, 10) ? 18 + (unsigned int)test_rng_below(rng, 8) : 32;
	} else {
		static const __u8 base[10] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x0c };

		memcpy(p->addr.bytes, base, sizeof(base));
		memcpy(p->addr.bytes + 12, &a, 4);
		p->len = test_rng_below(rng, 10) ? 97 + (unsigned int)test_rng_below(rng, 8) : 128;
	}
	for (bit = p->len; bit < max; bit++)
		p->addr.bytes[bit / 8] &= (__u8)~(0x80u >> (bit % 8));
}

/* Random allow and deny prefixes for @v (each prefix once), written to the kernel. */
static void random_ranges(struct test_rng *rng, struct state *s, struct state_vip *v)
{
	struct state_source list[RANGED_PREFIXES];
	const char *why = "";
	size_t n = 0, i;

	while (n < RANGED_PREFIXES) {
		random_prefix(rng, v->spec.addr.family, &list[n].prefix);
		list[n].deny = (int)test_rng_below(rng, 2);
		for (i = 0; i < n && !prefix_equal(&list[i].prefix, &list[n].prefix); i++)
			;
		n += i == n;
	}
	check(state_vip_sources_set(s, v, list, n, &why) == 0, "random ranges: %s", why);
	check(kernel_vip_sources_sync(maps, v) == 0, "random ranges not synced");
}

static void test_kernel_lookup_and_model_agree_on_random_sources(void **state)
{
	static const int vips[] = { VIP_V4_TCP, VIP_V6_UDP };
	struct test_rng rng = { SEED ^ 0x7372633a };
	size_t v;

	(void)state;
	NEEDS_ROOT();
	for (v = 0; v < sizeof(vips) / sizeof(vips[0]); v++) {
		struct lb_vip_key key = vip_key_of_test(vips[v]);
		struct vip_spec spec = { .port = ntohs(key.port), .protocol = key.protocol };
		unsigned int served = 0, refused = 0, f, m;
		struct kernel_chooser kc;
		struct state_vip *sv;
		struct state s;
		struct pool pool;

		flows_clear();
		pool_install(&pool, vips[v], ring_weighted(64, RANGED_MEMBERS, NULL, "ranged"));
		spec.addr.family = key.family;
		memcpy(spec.addr.bytes, key.addr, sizeof(key.addr));
		state_init(&s);
		assert_int_equal(state_vip_add(&s, &spec, 64, &sv), 0);
		sv->id = (__u32)vips[v];
		/* The same ring as the pool's: the same names, weights and points per weight. */
		sv->backends = calloc(RANGED_MEMBERS, sizeof(*sv->backends));
		assert_non_null(sv->backends);
		for (m = 0; m < RANGED_MEMBERS; m++) {
			struct state_backend *b = &sv->backends[m];

			snprintf(b->name, sizeof(b->name), "ranged-%u", m);
			b->addr.family = LB_FAMILY_IPV4;
			b->weight = 1;
			b->id = pool.ids[m];
			b->cookie = 1 + m;
		}
		sv->backend_count = RANGED_MEMBERS;
		random_ranges(&rng, &s, sv);
		check(kernel_chooser_open(&kc, NULL, secret, sv) == 0, "lookup's chooser");
		for (f = 0; f < RANGED_FLOWS; f++) {
			struct kernel_answer answer;
			struct pkt_spec fs;
			struct pkt pkt;
			struct addr client;
			const char *why = "";
			char text[64];
			int model;

			random_flow(&rng, vips[v], &fs, text, sizeof(text));
			pkt_build(&pkt, &fs);
			assert_int_equal(addr_parse(text, &client, &why), 0);
			model = state_vip_source_refused(sv, &client, NULL);
			check(kernel_lookup(&kc, &client, fs.sport, &answer) == 0, "lookup");
			check(answer.refused == model, "flow %u (%s): lookup says %d, the model %d", f,
			      text, answer.refused, model);
			if (model) {
				unsigned char out[PKT_MAX];
				size_t out_len = sizeof(out);
				__u64 before = reason_total((__u32)model);

				check(run_frame(pkt.data, pkt.len, out, &out_len) == XDP_DROP,
				      "flow %u (%s): the model refuses it, the kernel did not drop it",
				      f, text);
				check(reason_total((__u32)model) - before == 1,
				      "flow %u (%s): not counted as %s", f, text,
				      lb_reasons[model].name);
				refused++;
			} else {
				__u32 got = forward(&pkt), want = expected_backend(&pool, &fs);

				check(got == want && answer.backend && answer.backend->id == want,
				      "flow %u (%s): kernel %u, ring library %u, lookup %u", f, text,
				      got, want, answer.backend ? answer.backend->id : 0);
				served++;
			}
		}
		printf("agreement: VIP %d, %d random prefixes: %u flows served, %u refused, "
		       "kernel, lookup and model agreeing on each\n", vips[v], RANGED_PREFIXES,
		       served, refused);
		check(served > RANGED_FLOWS / 20 && refused > RANGED_FLOWS / 20,
		      "the ranges split the flows too unevenly to test: %u served, %u refused",
		      served, refused);
		kernel_chooser_close(&kc);
		assert_int_equal(state_vip_sources_set(&s, sv, NULL, 0, &(const char *){ "" }), 0);
		check(kernel_vip_sources_sync(maps, sv) == 0, "ranges not cleared");
		state_free(&s);
		pool_release(&pool);
	}
}

HARNESS_GROUP(agreement,
	cmocka_unit_test(test_kernel_lookup_and_model_agree_on_random_sources),
	cmocka_unit_test(test_kernel_agrees_with_ring_on_one_point_ring),
	cmocka_unit_test(test_kernel_agrees_with_ring_on_weighted_ring),
	cmocka_unit_test(test_kernel_agrees_with_ring_on_million_point_ring),
	cmocka_unit_test(test_changes_written_in_place_serve_what_the_ring_says),
	cmocka_unit_test(test_change_without_a_good_spare_is_refused_and_old_ring_serves));
