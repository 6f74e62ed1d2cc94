// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flow table's sets (bpf/lb_flow_table.h), in memory, no kernel needed:
 * the functions the program and the controller share, against a model that
 * reads a set the slow way. A flow is found where it was put, in any way and
 * beside flows of its very tag; a way whose key, backend and check come from
 * different writes (a read that tore) is never taken; a new flow takes an
 * empty way first, then the least recently seen, the lowest of equals; and
 * the sets of random flows fill evenly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check.h"
#include "lb_flow_table.h"
#include "testutil.h"

#define SEED 0x666c6f777461626cULL

static const __u64 table_key[LB_FLOW_TABLE_KEY_WORDS] = {
	0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x0f1e2d3c4b5a6978ULL,
	0x8877665544332211ULL, 0x1357924680aceb0dULL, 0x5eed5eed5eed5eedULL,
};

static void random_key(struct test_rng *rng, struct lb_flow_key *k)
{
	__u32 src = (__u32)test_rng_next(rng), dst = (__u32)test_rng_next(rng);

	memset(k, 0, sizeof(*k));
	memcpy(k->src_addr, &src, 4);
	memcpy(k->dst_addr, &dst, 4);
	k->src_port = (__u16)test_rng_next(rng);
	k->dst_port = 443;
	k->protocol = 6;
	k->family = 1;
}

static __u64 hash_of(const struct lb_flow_key *k)
{
	uint64_t w[SIPHASH_FLOW_WORDS];

	lb_flow_words(k, w);
	return lb_flow_table_hash(w, table_key);
}

static void put(struct lb_flow_set *s, __u32 way, const struct lb_flow_key *k, __u64 backend,
		__u32 seen)
{
	struct lb_flow f = { .backend = backend, .last_seen_s = seen };
	uint64_t w[SIPHASH_FLOW_WORDS];

	lb_flow_words(k, w);
	lb_flow_put(s, way, w, hash_of(k), &f);
}

static int find(const struct lb_flow_set *s, const struct lb_flow_key *k)
{
	uint64_t w[SIPHASH_FLOW_WORDS];

	lb_flow_words(k, w);
	return lb_flow_find(s, w, hash_of(k));
}

/* The model: the lowest way whose tag, key and check are the flow's. */
static int model_find(const struct lb_flow_set *s, const struct lb_flow_key *k)
{
	__u64 h = hash_of(k);
	int i;

	for (i = 0; i < LB_FLOW_WAYS; i++)
		if (s->tag[i] == lb_flow_tag(h) && !memcmp(&s->way[i].key, k, sizeof(*k)) &&
		    s->way[i].check == lb_flow_check(h, s->way[i].flow.backend))
			return i;
	return -1;
}

static void test_the_lowest_bit_is_named_for_every_way(void **state)
{
	__u32 i;

	(void)state;
	for (i = 0; i < LB_FLOW_WAYS; i++)
		check_eq(lb_flow_bit_index(1u << i), i);
}

static void test_a_flow_is_found_in_the_way_it_was_put(void **state)
{
	struct test_rng rng = { SEED };
	struct lb_flow_set s;
	struct lb_flow_key k[LB_FLOW_WAYS], other;
	__u32 i;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (i = 0; i < LB_FLOW_WAYS; i++) {
		random_key(&rng, &k[i]);
		check_eq(find(&s, &k[i]), -1);
		put(&s, (i * 5) % LB_FLOW_WAYS, &k[i], 100 + i, 7);
	}
	for (i = 0; i < LB_FLOW_WAYS; i++) {
		check_eq(find(&s, &k[i]), (int)((i * 5) % LB_FLOW_WAYS));
		check_eq(s.way[find(&s, &k[i])].flow.backend, 100 + i);
	}
	random_key(&rng, &other);
	check_eq(find(&s, &other), -1);
	/* Emptied by its tag alone. */
	s.tag[3] = 0;
	for (i = 0; i < LB_FLOW_WAYS; i++)
		check_eq(find(&s, &k[i]), (i * 5) % LB_FLOW_WAYS == 3 ? -1 : (int)((i * 5) % LB_FLOW_WAYS));
	/* No way of its tag: not found, and no other way of it left to try. */
	for (i = 0; i < LB_FLOW_WAYS; i++) {
		uint64_t w[SIPHASH_FLOW_WORDS];
		__u32 rest = 0xdead;

		if ((i * 5) % LB_FLOW_WAYS != 3)
			continue;
		lb_flow_words(&k[i], w);
		check_eq(lb_flow_find_first(&s, w, hash_of(&k[i]), &rest), -1);
		check_eq(rest, 0);
	}
}

/* Flows of one tag in a set: the lowest first, then the others (lb_flow_find_from()). */
static void test_flows_of_one_tag_are_told_apart_by_their_keys(void **state)
{
	struct test_rng rng = { SEED + 1 };
	struct lb_flow_set s;
	struct lb_flow_key k[3];
	__u32 tag, rest;
	int i;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (i = 0; i < 3; i++) {
		random_key(&rng, &k[i]);
		put(&s, (__u32)(2 * i + 1), &k[i], 200 + (__u64)i, 1);
	}
	/* k[2]'s tag on all three, as three flows of one 32-bit tag would have. */
	tag = s.tag[5];
	s.tag[1] = s.tag[3] = tag;
	{
		uint64_t w[SIPHASH_FLOW_WORDS];

		lb_flow_words(&k[2], w);
		check_eq(lb_flow_find_first(&s, w, hash_of(&k[2]), &rest), -1);
		check_eq(rest, (1u << 3) | (1u << 5));
	}
	check_eq(find(&s, &k[2]), 5);
	/* The others' tags are gone: nobody finds them. */
	check_eq(find(&s, &k[0]), -1);
	check_eq(find(&s, &k[1]), -1);
	/* k[0]'s own tag again: the lowest way, with nothing left to try. */
	s.tag[1] = lb_flow_tag(hash_of(&k[0]));
	{
		uint64_t w[SIPHASH_FLOW_WORDS];

		lb_flow_words(&k[0], w);
		check_eq(lb_flow_find_first(&s, w, hash_of(&k[0]), &rest), 1);
		check_eq(rest, 0);
	}
}

/*
 * A read that tore: a way with one flow's key and another's backend, or
 * another's check, is no flow's. The writer's order (tag emptied first)
 * aside, every mix of two writes is refused.
 */
static void test_a_torn_way_is_taken_by_no_flow(void **state)
{
	struct test_rng rng = { SEED + 2 };
	struct lb_flow_set s, t;
	struct lb_flow_key x, y;
	int round, mix;

	(void)state;
	for (round = 0; round < 1000; round++) {
		random_key(&rng, &x);
		random_key(&rng, &y);
		memset(&s, 0, sizeof(s));
		memset(&t, 0, sizeof(t));
		put(&s, 0, &x, test_rng_next(&rng) | 1, 1);
		put(&t, 0, &y, test_rng_next(&rng) | 1, 1);
		for (mix = 1; mix < 8; mix++) {
			struct lb_flow_set m = s;

			/* Of y's write: its key (bit 0), its backend (bit 1), its check (bit 2). */
			if (mix & 1)
				m.way[0].key = t.way[0].key;
			if (mix & 2)
				m.way[0].flow.backend = t.way[0].flow.backend;
			if (mix & 4)
				m.way[0].check = t.way[0].check;
			/* Both tags, as a reader may see either. */
			m.tag[0] = s.tag[0];
			check(find(&m, &x) == -1, "round %d: a torn way (mix %d) was x's", round,
			      mix);
			m.tag[0] = t.tag[0];
			check(find(&m, &y) == -1 || mix == 7, "round %d: a torn way (mix %d) was y's",
			      round, mix);
		}
	}
}

static void test_a_new_flow_takes_an_empty_way_then_the_least_recently_seen(void **state)
{
	struct test_rng rng = { SEED + 3 };
	struct lb_flow_set s;
	struct lb_flow_key k;
	__u32 i;

	(void)state;
	memset(&s, 0, sizeof(s));
	check_eq(lb_flow_victim(&s), 0);
	for (i = 0; i < LB_FLOW_WAYS; i++) {
		random_key(&rng, &k);
		put(&s, i, &k, 1, 50 + i);
	}
	s.tag[6] = 0;
	check_eq(lb_flow_victim(&s), 6);
	random_key(&rng, &k);
	put(&s, 6, &k, 1, 99);
	check_eq(lb_flow_victim(&s), 0);
	/*
	 * Seen again: kept past flows seen only in their first second up to
	 * LB_FLOW_AGAIN_CREDIT_S seconds more recent, then aged out by them.
	 */
	lb_flow_seen(&s, 0, 60);
	check_eq(lb_flow_victim(&s), 1);
	check_eq(s.way[0].flow.last_seen_s, 60);
	check_eq(s.seen[0], 60 | LB_FLOW_SEEN_AGAIN);
	for (i = 1; i < LB_FLOW_WAYS; i++)
		s.seen[i] = 60 + LB_FLOW_AGAIN_CREDIT_S - 2 + i;
	check_eq(lb_flow_victim(&s), 1);
	for (i = 1; i < LB_FLOW_WAYS; i++)
		s.seen[i] = 60 + LB_FLOW_AGAIN_CREDIT_S + i;
	check_eq(lb_flow_victim(&s), 0);
	for (i = 1; i < LB_FLOW_WAYS; i++)
		s.seen[i] = 1000 + i;
	/* A clock behind the flow's moves nothing. */
	lb_flow_seen(&s, 0, 10);
	check_eq(s.seen[0], 60 | LB_FLOW_SEEN_AGAIN);
	/* All seen again: the least recently seen. */
	for (i = 1; i < LB_FLOW_WAYS; i++)
		lb_flow_seen(&s, i, 2000 + i);
	check_eq(lb_flow_victim(&s), 0);
	/* Equals: the lowest. */
	for (i = 0; i < LB_FLOW_WAYS; i++)
		s.seen[i] = 5;
	check_eq(lb_flow_victim(&s), 0);
	s.seen[0] = 6;
	check_eq(lb_flow_victim(&s), 1);
	/* A second of 0xffffffff still sorts after an empty way. */
	s.seen[4] = 0xffffffffu;
	s.tag[4] = 0;
	check_eq(lb_flow_victim(&s), 4);
}

/* Random sets of random flows, some of one tag: lb_flow_find() is the model's. */
static void test_find_is_the_model_on_random_sets(void **state)
{
	struct test_rng rng = { SEED + 4 };
	struct lb_flow_key keys[LB_FLOW_WAYS + 4];
	struct lb_flow_set s;
	int round, i, j;

	(void)state;
	for (round = 0; round < 20000; round++) {
		memset(&s, 0, sizeof(s));
		for (i = 0; i < LB_FLOW_WAYS + 4; i++)
			random_key(&rng, &keys[i]);
		for (i = 0; i < LB_FLOW_WAYS; i++) {
			if (test_rng_below(&rng, 4) == 0)
				continue;
			put(&s, (__u32)i, &keys[test_rng_below(&rng, LB_FLOW_WAYS + 4)],
			    test_rng_next(&rng), 3);
			/* Now and then a tag copied from another way. */
			if (i && test_rng_below(&rng, 8) == 0)
				s.tag[i] = s.tag[test_rng_below(&rng, (uint64_t)i)];
		}
		for (j = 0; j < LB_FLOW_WAYS + 4; j++)
			check(find(&s, &keys[j]) == model_find(&s, &keys[j]),
			      "round %d, key %d: found in way %d, the model says %d", round, j,
			      find(&s, &keys[j]), model_find(&s, &keys[j]));
	}
}

/* 2^20 random flows over 2^14 sets: every set within a few ways of the mean (64). */
static void test_random_flows_fill_the_sets_evenly(void **state)
{
	enum { SETS = 1 << 14, FLOWS = 1 << 20 };
	struct test_rng rng = { SEED + 5 };
	unsigned int *count = calloc(SETS, sizeof(*count)), most = 0, least = ~0u;
	struct lb_flow_key k;
	__u32 n, i;

	(void)state;
	assert_non_null(count);
	for (n = 0; n < FLOWS; n++) {
		random_key(&rng, &k);
		/* Clients of one subnet and neighbouring ports too. */
		if (n & 1) {
			k.src_addr[2] = 0;
			k.src_addr[3] = 0;
			k.src_port = (__u16)(n >> 1);
		}
		count[lb_flow_set_of(hash_of(&k), SETS)]++;
	}
	for (i = 0; i < SETS; i++) {
		most = count[i] > most ? count[i] : most;
		least = count[i] < least ? count[i] : least;
	}
	/* Poisson(64): 5 standard deviations either side is one set in 3 million. */
	check(most <= 64 + 40 && least >= 64 - 40, "sets of %u to %u flows, the mean 64", least,
	      most);
	print_message("flow table: 2^20 flows in 2^14 sets, %u to %u a set (mean 64)\n", least, most);
	free(count);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_lowest_bit_is_named_for_every_way),
		cmocka_unit_test(test_a_flow_is_found_in_the_way_it_was_put),
		cmocka_unit_test(test_flows_of_one_tag_are_told_apart_by_their_keys),
		cmocka_unit_test(test_a_torn_way_is_taken_by_no_flow),
		cmocka_unit_test(test_a_new_flow_takes_an_empty_way_then_the_least_recently_seen),
		cmocka_unit_test(test_find_is_the_model_on_random_sets),
		cmocka_unit_test(test_random_flows_fill_the_sets_evenly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
