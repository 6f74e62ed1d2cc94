// SPDX-License-Identifier: GPL-2.0-only
/*
 * Source ranges (map "source_sets", bpf/lb_sources.h), table-driven: allow and
 * deny prefixes, the longest match deciding, IPv4 and IPv6, a VIP without
 * ranges untouched; each case's verdict and reason counter as the model
 * (state_vip_source_refused()) says. Also: an ICMP error about a refused
 * client's flow is refused; a change is a swap that leaves only the new set
 * (in the VIP's other slot) and clearing leaves nothing; the per-VIP limit's
 * worth of prefixes, the most runs a set has, works with its last deciding.
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

#include <cmocka.h>

#include <bpf/bpf.h>

#include "prog.h"
#include "kernel.h"

/* A VIP of the state standing for test VIP @id, with @allow and @deny (NULL-ended). */
struct ranges {
	struct state s;
	struct state_vip *v;
};

static void ranges_make(struct ranges *r, int id, const char *const *allow,
			const char *const *deny)
{
	struct state_source list[16];
	struct lb_vip_key key = vip_key_of_test(id);
	struct vip_spec spec = { 0 };
	const char *why = "";
	size_t n = 0;
	int l;

	spec.addr.family = key.family;
	memcpy(spec.addr.bytes, key.addr, sizeof(key.addr));
	spec.port = ntohs(key.port);
	spec.protocol = key.protocol;
	state_init(&r->s);
	assert_int_equal(state_vip_add(&r->s, &spec, 100, &r->v), 0);
	r->v->id = (__u32)id;
	for (l = 0; l < 2; l++) {
		const char *const *p = l ? deny : allow;

		for (; p && *p; p++, n++) {
			check(prefix_parse(*p, &list[n].prefix, &why) == 0, "prefix %s: %s", *p, why);
			list[n].deny = l;
		}
	}
	check(state_vip_sources_set(&r->s, r->v, list, n, &why) == 0, "sources: %s", why);
	check(kernel_vip_sources_sync(maps, r->v) == 0, "sources of VIP %d not synced",
	      id);
}

/* Test VIP @id without ranges again. */
static void ranges_clear(int id)
{
	struct ranges r;

	ranges_make(&r, id, NULL, NULL);
	state_free(&r.s);
}

/* Runs of the set in slot @parity of test VIP @id; 0 when the slot is empty. */
static __u32 runs_in(int id, __u8 parity)
{
	struct lb_source_set *set = malloc(sizeof(*set));
	__u32 n;
	int err;

	assert_non_null(set);
	err = lb_source_set_read(maps, (__u32)id, parity, set);
	check(err == 0 || err == -ENOENT, "source slot %u of VIP %d: %s", parity, id,
	      strerror(-err));
	n = err ? 0 : set->head.count;
	free(set);
	return n;
}

static struct lb_vip vip_value(int id)
{
	struct lb_vip_key key = vip_key_of_test(id);
	struct lb_vip v;

	assert_int_equal(bpf_map_lookup_elem(maps->vips, &key, &v), 0);
	return v;
}

/* A SYN from @client to test VIP @id: its verdict. */
static __u32 syn_from(int id, const char *client)
{
	struct lb_vip_key key = vip_key_of_test(id);
	char dst[INET6_ADDRSTRLEN];
	unsigned char out[PKT_MAX];
	size_t out_len = sizeof(out);
	struct pkt pkt;
	struct pkt_spec spec = { .family = key.family, .protocol = key.protocol, .src = client,
				 .dst = dst, .sport = 40000, .dport = ntohs(key.port),
				 .tcp_flags = TCP_SYN };

	inet_ntop(key.family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6, key.addr, dst, sizeof(dst));
	pkt_build(&pkt, &spec);
	return run_frame(pkt.data, pkt.len, out, &out_len);
}

/* The XDP verdict of a reason (0: served, forwarded). */
static __u32 verdict_of(int reason)
{
	return reason ? XDP_DROP : XDP_TX;
}

struct source_case {
	const char *what;
	int vip;
	const char *allow[4];
	const char *deny[4];
	const char *client;
	int reason; /* 0: forwarded */
};

static const struct source_case source_cases[] = {
	{ "no ranges", VIP_V4_TCP, { NULL }, { NULL }, "198.18.1.9", 0 },
	{ "allowed", VIP_V4_TCP, { "198.18.1.0/24" }, { NULL }, "198.18.1.9", 0 },
	{ "outside the allow list", VIP_V4_TCP, { "198.18.1.0/24" }, { NULL }, "198.18.2.9",
	  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	{ "denied", VIP_V4_TCP, { NULL }, { "198.18.1.0/24" }, "198.18.1.9",
	  LB_REASON_DROP_SOURCE_DENIED },
	{ "outside a deny list", VIP_V4_TCP, { NULL }, { "198.18.1.0/24" }, "198.18.2.9", 0 },
	{ "longer deny inside allow", VIP_V4_TCP, { "198.18.0.0/15" }, { "198.18.1.0/24" },
	  "198.18.1.9", LB_REASON_DROP_SOURCE_DENIED },
	{ "allow around a deny", VIP_V4_TCP, { "198.18.0.0/15" }, { "198.18.1.0/24" },
	  "198.19.7.7", 0 },
	{ "longer allow inside deny", VIP_V4_TCP, { "198.18.1.0/24" }, { "198.18.0.0/16" },
	  "198.18.1.9", 0 },
	{ "deny around an allow", VIP_V4_TCP, { "198.18.1.0/24" }, { "198.18.0.0/16" },
	  "198.18.2.9", LB_REASON_DROP_SOURCE_DENIED },
	{ "neither, with an allow", VIP_V4_TCP, { "198.18.1.0/24" }, { "198.18.0.0/16" },
	  "198.19.0.1", LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	{ "host allow", VIP_V4_TCP, { "198.18.1.9/32" }, { NULL }, "198.18.1.9", 0 },
	{ "next to a host allow", VIP_V4_TCP, { "198.18.1.9/32" }, { NULL }, "198.18.1.8",
	  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	{ "deny all but one", VIP_V4_TCP, { "198.18.1.9/32" }, { "0.0.0.0/0" }, "198.18.1.8",
	  LB_REASON_DROP_SOURCE_DENIED },
	{ "the one of deny all", VIP_V4_TCP, { "198.18.1.9/32" }, { "0.0.0.0/0" }, "198.18.1.9",
	  0 },
	{ "allow all but one", VIP_V4_TCP, { "0.0.0.0/0" }, { "198.18.1.9/32" }, "198.18.1.9",
	  LB_REASON_DROP_SOURCE_DENIED },
	{ "odd length", VIP_V4_TCP, { "198.18.1.128/25" }, { NULL }, "198.18.1.127",
	  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	{ "IPv6 no ranges", VIP_V6_TCP, { NULL }, { NULL }, "2001:db8:c::9", 0 },
	{ "IPv6 allowed", VIP_V6_TCP, { "2001:db8:c::/48" }, { NULL }, "2001:db8:c::9", 0 },
	{ "IPv6 outside", VIP_V6_TCP, { "2001:db8:c::/48" }, { NULL }, "2001:db8:d::9",
	  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	{ "IPv6 longer deny", VIP_V6_TCP, { "::/0" }, { "2001:db8:c::/64" }, "2001:db8:c::9",
	  LB_REASON_DROP_SOURCE_DENIED },
	{ "IPv6 beside the deny", VIP_V6_TCP, { "::/0" }, { "2001:db8:c::/64" },
	  "2001:db8:c:1::9", 0 },
	{ "IPv6 host deny", VIP_V6_TCP, { NULL }, { "2001:db8:c::9/128" }, "2001:db8:c::9",
	  LB_REASON_DROP_SOURCE_DENIED },
	{ "IPv6 past a /127", VIP_V6_TCP, { "2001:db8:c::8/127" }, { NULL }, "2001:db8:c::a",
	  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
};

static void test_source_ranges_decide_by_the_longest_prefix(void **state)
{
	struct pool p4, p6;
	size_t i;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&p4, VIP_V4_TCP, ring_weighted(100, 4, NULL, "src4"));
	pool_install(&p6, VIP_V6_TCP, ring_weighted(100, 4, NULL, "src6"));
	for (i = 0; i < sizeof(source_cases) / sizeof(source_cases[0]); i++) {
		const struct source_case *c = &source_cases[i];
		__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
		struct ranges r;
		struct addr client;
		const char *why = "";
		__u32 got;
		int model, counted = c->reason ? c->reason : LB_REASON_FORWARDED;

		ranges_make(&r, c->vip, c->allow, c->deny);
		check(addr_parse(c->client, &client, &why) == 0, "client %s", c->client);
		model = state_vip_source_refused(r.v, &client, NULL);
		check(model == c->reason, "%s: the model says reason %d, the table %d", c->what,
		      model, c->reason);
		__u64 refused0 = harness_percpu_sum(maps->vip_refused, (__u32)c->vip, 2, 0), refused1;

		reasons_snapshot(before);
		got = syn_from(c->vip, c->client);
		reasons_snapshot(after);
		refused1 = harness_percpu_sum(maps->vip_refused, (__u32)c->vip, 2, 0);
		check(refused1 - refused0 == (c->reason != 0), "%s: the VIP's refused count rose %llu",
		      c->what, (unsigned long long)(refused1 - refused0));
		check(got == verdict_of(c->reason), "%s: verdict %u, want %u", c->what, got,
		      verdict_of(c->reason));
		check(after[counted] - before[counted] == 1, "%s: %s counted %llu times, want 1",
		      c->what, lb_reasons[counted].name,
		      (unsigned long long)(after[counted] - before[counted]));
		state_free(&r.s);
	}
	ranges_clear(VIP_V4_TCP);
	ranges_clear(VIP_V6_TCP);
	pool_release(&p4);
	pool_release(&p6);
}

/* A VIP's ranges never touch another VIP's traffic, nor leave a flow pinned. */
static void test_ranges_of_one_vip_leave_the_others_alone(void **state)
{
	static const char *const deny_all[] = { "0.0.0.0/0", NULL };
	struct pool tcp, udp;
	struct ranges r;
	char dst[] = V4_VIP;
	unsigned char out[PKT_MAX];
	size_t out_len = sizeof(out);
	struct pkt pkt;
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP,
				 .src = "198.18.1.9", .dst = dst, .sport = 40000,
				 .dport = VIP_UDP_PORT };

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&tcp, VIP_V4_TCP, ring_weighted(100, 2, NULL, "tcp"));
	pool_install(&udp, VIP_V4_UDP, ring_weighted(100, 2, NULL, "udp"));
	ranges_make(&r, VIP_V4_TCP, NULL, deny_all);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.9"), XDP_DROP);
	pkt_build(&pkt, &spec);
	check_eq(run_frame(pkt.data, pkt.len, out, &out_len), XDP_TX);
	check_eq(vip_value(VIP_V4_UDP).flags & (LB_VIP_SOURCES | LB_VIP_ALLOW_LIST), 0);
	check_eq(runs_in(VIP_V4_UDP, 0) + runs_in(VIP_V4_UDP, 1), 0);
	/* Refused before the flow table: the refused SYN pinned nothing. */
	check_eq(flows_count(IPPROTO_TCP), 0);
	state_free(&r.s);
	ranges_clear(VIP_V4_TCP);
	pool_release(&tcp);
	pool_release(&udp);
}

/* An ICMP error about a flow of a refused client is refused too. */
static void test_icmp_errors_are_checked_against_the_quoted_client(void **state)
{
	static const char *const deny_client[] = { "198.18.1.9/32", NULL };
	static const char *const deny_other[] = { "198.18.2.0/24", NULL };
	unsigned char out[PKT_MAX];
	size_t out_len = sizeof(out);
	struct pool p;
	struct ranges r;
	struct pkt pkt;
	__u64 before = reason_total(LB_REASON_DROP_SOURCE_DENIED);

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&p, VIP_V4_TCP, ring_weighted(100, 2, NULL, "icmp"));
	/* The quote is VIP:80 -> 198.18.1.9:41000; the router 198.18.0.1 is not checked. */
	icmp_frag_needed_for_vip_flow(&pkt);
	ranges_make(&r, VIP_V4_TCP, NULL, deny_client);
	check_eq(run_frame(pkt.data, pkt.len, out, &out_len), XDP_DROP);
	check_eq(reason_total(LB_REASON_DROP_SOURCE_DENIED) - before, 1);
	state_free(&r.s);
	ranges_make(&r, VIP_V4_TCP, NULL, deny_other);
	out_len = sizeof(out);
	check_eq(run_frame(pkt.data, pkt.len, out, &out_len), XDP_TX);
	state_free(&r.s);
	ranges_clear(VIP_V4_TCP);
	pool_release(&p);
}

/*
 * A change is a swap: the VIP's other slot then holds the new set and the
 * old slot is empty; a clear leaves neither. Two adjacent allowed /24s make
 * one run between two refused ones.
 */
static void test_a_change_swaps_slots_and_leaves_only_the_new_set(void **state)
{
	static const char *const first[] = { "198.18.1.0/24", "198.18.2.0/24", NULL };
	static const char *const second[] = { "198.18.3.0/24", NULL };
	struct ranges r;
	struct lb_vip v;
	__u8 parity;

	(void)state;
	NEEDS_ROOT();
	ranges_make(&r, VIP_V4_TCP, first, NULL);
	state_free(&r.s);
	v = vip_value(VIP_V4_TCP);
	parity = v.source_parity;
	check_eq(v.flags & (LB_VIP_SOURCES | LB_VIP_ALLOW_LIST), LB_VIP_SOURCES | LB_VIP_ALLOW_LIST);
	check_eq(runs_in(VIP_V4_TCP, parity), 3);
	check_eq(runs_in(VIP_V4_TCP, !parity), 0);
	/* The same set again: nothing to swap. */
	ranges_make(&r, VIP_V4_TCP, first, NULL);
	state_free(&r.s);
	check_eq(vip_value(VIP_V4_TCP).source_parity, parity);
	ranges_make(&r, VIP_V4_TCP, NULL, second);
	state_free(&r.s);
	v = vip_value(VIP_V4_TCP);
	check_eq(v.source_parity, !parity);
	check_eq(v.flags & (LB_VIP_SOURCES | LB_VIP_ALLOW_LIST), LB_VIP_SOURCES);
	check_eq(runs_in(VIP_V4_TCP, v.source_parity), 3);
	check_eq(runs_in(VIP_V4_TCP, parity), 0);
	ranges_clear(VIP_V4_TCP);
	v = vip_value(VIP_V4_TCP);
	check_eq(v.flags & (LB_VIP_SOURCES | LB_VIP_ALLOW_LIST), 0);
	check_eq(runs_in(VIP_V4_TCP, 0) + runs_in(VIP_V4_TCP, 1), 0);
}

/*
 * LB_SOURCES_PER_VIP_MAX prefixes, none adjacent (every other /24 from
 * 198.18.0.0), so the set has the most runs a set can have: the kernel takes
 * them, and the first, the last and the gaps each decide.
 */
static void test_a_vip_takes_its_limit_of_prefixes(void **state)
{
	static struct state_source list[LB_SOURCES_PER_VIP_MAX + 1];
	struct ranges r;
	const char *why = "";
	struct pool p;
	unsigned int i;
	char text[32];

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&p, VIP_V4_TCP, ring_weighted(100, 2, NULL, "many"));
	ranges_make(&r, VIP_V4_TCP, NULL, NULL);
	for (i = 0; i < LB_SOURCES_PER_VIP_MAX + 1; i++) {
		snprintf(text, sizeof(text), "198.%u.%u.0/24", 18 + (i >> 7), (i & 127) * 2);
		assert_int_equal(prefix_parse(text, &list[i].prefix, &why), 0);
		list[i].deny = 0;
	}
	check(state_vip_sources_set(&r.s, r.v, list, LB_SOURCES_PER_VIP_MAX + 1, &why) == -E2BIG,
	      "one past the limit was taken");
	check(state_vip_sources_set(&r.s, r.v, list, LB_SOURCES_PER_VIP_MAX, &why) == 0, "%s",
	      why);
	check_eq(kernel_vip_sources_sync(maps, r.v), 0);
	check_eq(runs_in(VIP_V4_TCP, vip_value(VIP_V4_TCP).source_parity), LB_SOURCE_RUNS_MAX);
	i = LB_SOURCES_PER_VIP_MAX - 1;
	check_eq(syn_from(VIP_V4_TCP, "198.18.0.7"), XDP_TX);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.7"), XDP_DROP);
	snprintf(text, sizeof(text), "198.%u.%u.7", 18 + (i >> 7), (i & 127) * 2);
	check_eq(syn_from(VIP_V4_TCP, text), XDP_TX);
	snprintf(text, sizeof(text), "198.%u.%u.7", 18 + (i >> 7), (i & 127) * 2 + 1);
	check_eq(syn_from(VIP_V4_TCP, text), XDP_DROP);
	i = LB_SOURCES_PER_VIP_MAX;
	snprintf(text, sizeof(text), "198.%u.%u.7", 18 + (i >> 7), (i & 127) * 2);
	check_eq(syn_from(VIP_V4_TCP, text), XDP_DROP);
	state_free(&r.s);
	ranges_clear(VIP_V4_TCP);
	pool_release(&p);
}

/* The slot of the VIP's serving source set, as the program finds it. */
static __u32 serving_slot(void)
{
	return LB_SOURCE_SET_SLOT(VIP_V4_TCP, vip_value(VIP_V4_TCP).source_parity);
}

/*
 * @head written over @r's VIP's serving head behind the controller's back:
 * a SYN from @client gets @action by it, a read of the slot says it holds
 * no set the state makes, and after a sync a SYN from @client_after gets
 * @action_after, as the state says.
 */
static void head_tampered(const struct ranges *r, struct lb_source_set *set,
			  const struct lb_source_head *head, const char *client, int action,
			  const char *client_after, int action_after)
{
	__u32 slot = serving_slot();

	assert_int_equal(bpf_map_update_elem(maps->source_heads, &slot, head, BPF_EXIST), 0);
	check_eq(syn_from(VIP_V4_TCP, client), action);
	check_eq(lb_source_set_read(maps, VIP_V4_TCP, vip_value(VIP_V4_TCP).source_parity, set), 0);
	check(set->head.count == 0, "a read of a set under another head: %u runs",
	      set->head.count);
	check_eq(kernel_vip_sources_sync(maps, r->v), 0);
	check_eq(syn_from(VIP_V4_TCP, client_after), action_after);
}

/*
 * The head the program reads (map source_heads) changed behind the
 * controller's back, its set untouched (a verdict, then the 64-bit form):
 * the program answers by it, a read says the slot holds no set the state
 * makes, and a sync puts the right head back.
 */
static void test_a_head_not_the_sets_own_is_seen_and_repaired(void **state)
{
	static const char *const deny[] = { "198.18.9.0/24", NULL };
	struct lb_source_set *set = malloc(sizeof(*set));
	struct lb_source_head head;
	struct ranges r;
	struct pool p;
	__u32 slot;

	(void)state;
	NEEDS_ROOT();
	assert_non_null(set);
	flows_clear();
	pool_install(&p, VIP_V4_TCP, ring_weighted(100, 2, NULL, "gone"));
	ranges_make(&r, VIP_V4_TCP, NULL, deny);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.9"), XDP_TX);
	check_eq(lb_source_set_read(maps, VIP_V4_TCP, vip_value(VIP_V4_TCP).source_parity, set), 0);
	check(set->head.count == 3, "a read of the synced set: %u runs", set->head.count);
	/* 198.18.1.10 is before the block (198.18.9.0/24): the head's verdict below it. */
	slot = serving_slot();
	assert_int_equal(bpf_map_lookup_elem(maps->source_heads, &slot, &head), 0);
	head.below = LB_SOURCE_DENIED;
	head_tampered(&r, set, &head, "198.18.1.10", XDP_DROP, "198.18.1.11", XDP_TX);
	/*
	 * Its 64-bit form: every client of the block now in bucket 1, whose
	 * class says served. The 128-bit path would read 198.18.9.5's own
	 * bucket, denied: the program must take the form it is given.
	 */
	slot = serving_slot();
	assert_int_equal(bpf_map_lookup_elem(maps->source_heads, &slot, &head), 0);
	check(head.fast_right != LB_SOURCE_NO_FAST, "an IPv4 head without the 64-bit form");
	head.fast_right = 63;
	head.bucket[0] &= (__u8)~(3u << 2);
	head_tampered(&r, set, &head, "198.18.9.5", XDP_TX, "198.18.9.6", XDP_DROP);
	free(set);
	state_free(&r.s);
	ranges_clear(VIP_V4_TCP);
	pool_release(&p);
}

/*
 * A VIP whose value says it has source ranges but whose set is gone (a map
 * changed behind the controller's back) refuses every client, counted as
 * drop_no_sources, until the set is written again: never served unchecked.
 */
static void test_a_missing_set_refuses_every_client(void **state)
{
	static const char *const deny[] = { "198.18.9.0/24", NULL };
	struct ranges r;
	struct pool p;
	__u64 before;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&p, VIP_V4_TCP, ring_weighted(100, 2, NULL, "gone"));
	ranges_make(&r, VIP_V4_TCP, NULL, deny);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.9"), XDP_TX);
	check_eq(lb_source_set_place(maps, VIP_V4_TCP, vip_value(VIP_V4_TCP).source_parity, NULL), 0);
	before = reason_total(LB_REASON_DROP_NO_SOURCES);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.10"), XDP_DROP);
	check_eq(reason_total(LB_REASON_DROP_NO_SOURCES) - before, 1);
	check_eq(kernel_vip_sources_sync(maps, r.v), 0);
	check_eq(syn_from(VIP_V4_TCP, "198.18.1.11"), XDP_TX);
	state_free(&r.s);
	ranges_clear(VIP_V4_TCP);
	pool_release(&p);
}

HARNESS_GROUP(sources,
	      cmocka_unit_test(test_source_ranges_decide_by_the_longest_prefix),
	      cmocka_unit_test(test_ranges_of_one_vip_leave_the_others_alone),
	      cmocka_unit_test(test_icmp_errors_are_checked_against_the_quoted_client),
	      cmocka_unit_test(test_a_change_swaps_slots_and_leaves_only_the_new_set),
	      cmocka_unit_test(test_a_vip_takes_its_limit_of_prefixes),
	      cmocka_unit_test(test_a_missing_set_refuses_every_client),
	      cmocka_unit_test(test_a_head_not_the_sets_own_is_seen_and_repaired));
