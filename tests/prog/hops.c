// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hop lists, the balancer's side of second chance: a gue VIP keeps its
 * previous rings (lb_vip_history_sync()), and a TCP packet other than a SYN
 * that the flow table does not hold leaves with the flow's owners under
 * them, newest first, each once, never its destination. Checked on random
 * flows against the ring library, with the rules around it: a SYN carries
 * none, a flow with a hop list is not pinned (one without is), a stateless
 * VIP pins nothing, retired backends are hops and freed ones are not, and a
 * VIP without previous rings sends empty lists. `ringlb lookup`
 * (kernel_lookup() over a state of the same rings) names the same hops. An
 * ICMP error about a flow's TCP packet (one from the VIP to the client)
 * gets the list that flow's ACK gets, so it reaches the connection too.
 *
 * Encapsulation needs the FIB: the tests run in the harness's network
 * namespace.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/bpf.h>

#include "kernel.h"
#include "prog.h"
#include "testutil.h"

#define VIP VIP_V4_TCP
#define FLOWS 2000
#define NAMES 4

static int ifindex;

/* The backends a .. d of the test, and the rings they make. */
static const char *const names[NAMES] = { "a", "b", "c", "d" };
static const char *const addrs4[NAMES] = { "198.18.13.21", "198.18.13.22", "198.18.13.23",
					   "198.18.13.24" };
static const char *const addrs6[NAMES] = { "2001:db8:13::21", "2001:db8:13::22", "2001:db8:13::23",
					   "2001:db8:13::24" };
/* The backends' family (the outer header's): hops are 4 or 16 bytes. */
static int family = LB_FAMILY_IPV4;
static const char *const *addrs = addrs4;
static __u32 ids[NAMES];
/* The address each backend has: its own (i), or another's (one host under two names). */
static int host_of[NAMES] = { 0, 1, 2, 3 };

static int host(__u32 id)
{
	return host_of[id - ids[0]];
}

/*
 * Newest first: serving {b:3, c, d}, then {b, c, d}, {a, b, d}, {a, b}:
 * some flows stayed with b through all four, others moved up to three
 * times, so lists of every length occur.
 */
static const __u32 weights[4][NAMES] = {
	{ 0, 3, 1, 1 }, { 0, 1, 1, 1 }, { 1, 1, 0, 1 }, { 1, 1, 0, 0 },
};

struct rings {
	struct ring *r[4];
	__u32 *member_ids[4];
};

static void rings_build(struct rings *rs)
{
	int k, i;

	for (k = 0; k < 4; k++) {
		struct ring_member m[NAMES];
		size_t n = 0;

		for (i = 0; i < NAMES; i++)
			if (weights[k][i])
				m[n++] = (struct ring_member){ names[i], weights[k][i] };
		check(ring_build(&rs->r[k], 64, m, n) == 0, "ring %d", k);
		rs->member_ids[k] = calloc(n, sizeof(__u32));
		assert_non_null(rs->member_ids[k]);
		for (i = 0; i < (int)n; i++) {
			const char *name = ring_member_name(rs->r[k], (__u32)i);

			rs->member_ids[k][i] = ids[name[0] - 'a'];
		}
	}
}

static void rings_free(struct rings *rs)
{
	int k;

	for (k = 0; k < 4; k++) {
		ring_free(rs->r[k]);
		free(rs->member_ids[k]);
	}
}

static __u32 owner(const struct rings *rs, int k, __u64 hash)
{
	struct ring_lookup_result res;

	assert_int_equal(ring_lookup(rs->r[k], hash, &res), 0);
	return rs->member_ids[k][res.member];
}

/*
 * The hop list the program must write: owners under rings 1..3, each host
 * once and never @first's host.
 */
static unsigned int hops_wanted(const struct rings *rs, __u64 hash, __u32 usable_mask,
				__u32 *hops)
{
	__u32 first = owner(rs, 0, hash);
	unsigned int n = 0, j;
	int k;

	for (k = 1; k < 4; k++) {
		__u32 id = owner(rs, k, hash);

		if (host(id) == host(first) || !(usable_mask & 1u << (id - ids[0])))
			continue;
		for (j = 0; j < n && host(hops[j]) != host(id); j++)
			;
		if (j == n)
			hops[n++] = id;
	}
	return n;
}

static __u32 id_of_addr(const unsigned char *a)
{
	__u8 want[16];
	int i;

	for (i = 0; i < NAMES; i++) {
		pkt_addr(family, addrs[i], want);
		if (memcmp(want, a, family == LB_FAMILY_IPV4 ? 4 : 16) == 0)
			return ids[i];
	}
	return 0;
}

/*
 * Send @spec's frame; check it leaves by GUE to @rs's owner with exactly the
 * hop list the rings give, of the backends in @usable_mask (bit i: ids[0] +
 * i), or none unless @expect_hops. Return the list's length.
 */
static unsigned int frame_check(const struct rings *rs, const struct pkt *p,
				const struct lb_flow_key *key, int expect_hops, __u32 usable_mask,
				__u32 *got);

static unsigned int send_and_check(const struct rings *rs, const struct pkt_spec *spec,
				   int expect_hops, __u32 usable_mask, __u32 *got)
{
	struct lb_flow_key key;
	struct pkt p;

	pkt_build(&p, spec);
	key_of_spec(spec, &key);
	return frame_check(rs, &p, &key, expect_hops, usable_mask, got);
}

/* send_and_check() of a built frame @p of the flow @key (the client's). */
static unsigned int frame_check(const struct rings *rs, const struct pkt *p,
				const struct lb_flow_key *key, int expect_hops, __u32 usable_mask,
				__u32 *got)
{
	unsigned char out[PKT_MAX];
	size_t out_len;
	__u32 verdict, want[3] = { 0 };
	unsigned int n = 0, count, i, ip, alen, gue;
	__u64 hash;

	hash = lb_flow_hash(secret, key);
	if (expect_hops)
		n = hops_wanted(rs, hash, usable_mask, want);
	check(lb_readers_release(lb_prog_maps(prog)) == 0, "closing the VIP epoch");
	verdict = harness_run_on(lb_prog_fd(prog), ifindex, p->data, p->len, out, &out_len);
	check(verdict == XDP_TX, "verdict %u, not XDP_TX", verdict);
	/* Outer header, UDP, GUE (4 bytes), its private word (4), the hops. */
	ip = family == LB_FAMILY_IPV4 ? 20 : 40;
	alen = family == LB_FAMILY_IPV4 ? 4 : 16;
	gue = 14 + ip + 8;
	check_eq(id_of_addr(out + 14 + (family == LB_FAMILY_IPV4 ? 16 : 24)), owner(rs, 0, hash));
	count = out[gue + 7];
	check(count == n, "hop count %u, want %u (flow hash %016llx)", count, n,
	      (unsigned long long)hash);
	check_eq(out[gue] & 0x1f, 1 + n * alen / 4); /* hlen: one word, then the hops */
	check_eq(out[gue + 6], 0);                    /* next hop: the list's first */
	for (i = 0; i < n; i++) {
		__u8 a[16];

		if (got)
			got[i] = id_of_addr(out + gue + 8 + alen * i);
		pkt_addr(family, addrs[host(want[i])], a);
		check(memcmp(out + gue + 8 + alen * i, a, alen) == 0, "hop %u is not backend %u's host",
		      i, want[i]);
	}
	check_eq(out_len, p->len + ip + LB_GUE_LEN + alen * n);
	return n;
}

/* The test's VIP as a state describes it: the serving ring, and rings 1..3 before it. */
static void state_vip_of(struct state_vip *v, struct state_backend *backends)
{
	const char *problem = NULL;
	int i, k;

	memset(v, 0, sizeof(*v));
	memset(backends, 0, NAMES * sizeof(*backends));
	assert_int_equal(vip_parse(V4_VIP ":80/tcp", &v->spec, &problem), 0);
	v->id = VIP;
	v->vnodes = 64;
	v->forward = LB_FORWARD_GUE;
	v->history_count = 3;
	for (k = 0; k < 3; k++)
		v->past_vnodes[k] = 64;
	for (i = 0; i < NAMES; i++) {
		struct state_backend *b = &backends[i];

		snprintf(b->name, sizeof(b->name), "%s", names[i]);
		assert_int_equal(addr_parse(addrs[i], &b->addr, &problem), 0);
		b->weight = weights[0][i];
		/* A member of no serving ring: retired (weight 0 would still be a member). */
		b->retired = weights[0][i] == 0;
		for (k = 0; k < 3; k++)
			b->past_weight[k] = weights[k + 1][i];
		b->id = ids[i];
		b->cookie = 100 + (__u64)i;
	}
	v->backends = backends;
	v->backend_count = NAMES;
}

/* Does `ringlb lookup` (kernel_lookup()) give the flow of @spec the hop list @want? */
static void lookup_agrees(const struct kernel_chooser *kc, const struct pkt_spec *spec,
			  const __u32 *want, unsigned int n)
{
	struct kernel_answer answer;
	struct addr client;
	const char *problem = NULL;
	unsigned int i;

	assert_int_equal(addr_parse(spec->src, &client, &problem), 0);
	check(kernel_lookup(kc, &client, spec->sport, &answer) == 0, "lookup");
	check(answer.hop_count == n, "lookup says %u hops, the program wrote %u", answer.hop_count,
	      n);
	for (i = 0; i < n; i++)
		check(answer.hops[i]->id == want[i], "lookup's hop %u is %u, the program's %u", i,
		      answer.hops[i]->id, want[i]);
}

static int pinned(const struct pkt_spec *spec)
{
	struct lb_flow_key key;
	struct lb_flow flow;

	key_of_spec(spec, &key);
	return kernel_flow_get(maps, &key, &flow) == 0;
}

/* A random flow of the VIP, its packet an ACK (not a SYN: one a hop list is for). */
static void ack_flow(struct test_rng *rng, struct pkt_spec *spec, char *client, size_t len)
{
	random_flow(rng, VIP, spec, client, len);
	spec->src = client;
	spec->tcp_flags = TCP_ACK;
}

static void setup_vip(struct rings *rs, __u8 flags)
{
	struct lb_vip_key key = vip_key_of_test(VIP);
	struct lb_config c = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	struct ring *past[3];
	__u32 *past_ids[3];
	int i;

	pkt_addr(LB_FAMILY_IPV4, HARNESS_SOURCE4, c.source6);
	memcpy(c.source4, c.source6, 4);
	pkt_addr(LB_FAMILY_IPV6, HARNESS_SOURCE6, c.source6);
	check(lb_config_write(maps, &c) == 0, "encapsulation settings");
	for (i = 0; i < NAMES; i++)
		ids[i] = backend_new_encap(VIP, family, addrs[i], LB_FORWARD_GUE);
	for (i = 1; i < NAMES; i++)
		assert_int_equal(ids[i], ids[0] + (__u32)i);
	rings_build(rs);
	check(lb_vip_install_as(maps, &key, VIP, rs->r[0], rs->member_ids[0], flags) == 0,
	      "install the serving ring");
	for (i = 0; i < 3; i++) {
		past[i] = rs->r[i + 1];
		past_ids[i] = rs->member_ids[i + 1];
	}
	check(lb_vip_history_sync(maps, VIP, past, past_ids, 3) == 0, "keep 3 previous rings");
	/* Again: the rings the kernel has stay, nothing changes. */
	check(lb_vip_history_sync(maps, VIP, past, past_ids, 3) == 0, "sync again");
	flows_clear();
}

static void teardown_vip(struct rings *rs)
{
	struct lb_vip_key key = vip_key_of_test(VIP);
	int i;

	check(lb_vip_history_sync(maps, VIP, NULL, NULL, 0) == 0, "forget the previous rings");
	check(lb_vip_install(maps, &key, VIP, NULL, NULL) == 0, "empty the VIP");
	for (i = 0; i < NAMES; i++)
		lb_backend_set_state(maps, ids[i], LB_BACKEND_UNUSED);
	rings_free(rs);
	flows_clear();
}

static void test_hop_lists_name_the_previous_owners(void **state)
{
	struct test_rng rng = { SEED ^ 0x686f7073 };
	unsigned int with = 0, without = 0, lengths[4] = { 0 }, i, n;
	struct state_backend backends[NAMES];
	struct kernel_chooser kc;
	struct state_vip sv;
	__u32 got[3];
	__u64 hops0 = reason_total(LB_REASON_FORWARDED_HOPS);
	struct rings rs;
	char client[64];

	(void)state;
	NEEDS_ROOT();
	setup_vip(&rs, 0);
	state_vip_of(&sv, backends);
	check(kernel_chooser_open(&kc, NULL, secret, &sv) == 0, "lookup's chooser");
	for (i = 0; i < FLOWS; i++) {
		struct pkt_spec spec;

		ack_flow(&rng, &spec, client, sizeof(client));
		n = send_and_check(&rs, &spec, 1, 0xf, got);
		lookup_agrees(&kc, &spec, got, n);
		lengths[n]++;
		n ? with++ : without++;
		/* Pinned exactly when it has no hop list: its owner never changed. */
		check(pinned(&spec) == !n, "flow %u: pinned %d with %u hops", i, pinned(&spec), n);
		/* A pinned flow's next packet goes by its pin, without a list. */
		if (!n)
			send_and_check(&rs, &spec, 0, 0xf, NULL);
		/* A SYN opens a connection at the ring's owner: no list. */
		spec.tcp_flags = TCP_SYN;
		send_and_check(&rs, &spec, 0, 0xf, NULL);
	}
	print_message("hops: %u of %u flows with a hop list (lengths 1/2/3: %u/%u/%u), lookup "
		      "agreeing on each; %u without, pinned\n", with, FLOWS, lengths[1], lengths[2], lengths[3], without);
	check(with > 0 && without > 0 && lengths[2] > 0 && lengths[3] > 0, "flows of every kind");
	check_eq(reason_total(LB_REASON_FORWARDED_HOPS) - hops0, (__u64)with);
	kernel_chooser_close(&kc);
	teardown_vip(&rs);
}

static void test_retired_backends_are_hops_and_freed_ones_are_not(void **state)
{
	struct test_rng rng = { SEED ^ 0x72657469 };
	unsigned int i, n, with = 0;
	struct rings rs;
	char client[64];

	(void)state;
	NEEDS_ROOT();
	setup_vip(&rs, LB_VIP_STATELESS);
	/* a is in no ring but previous ones: retired, it stays a hop. */
	check(lb_backend_set_state(maps, ids[0], LB_BACKEND_RETIRED) == 0, "retire a");
	for (i = 0; i < FLOWS / 4; i++) {
		struct pkt_spec spec;

		ack_flow(&rng, &spec, client, sizeof(client));
		with += send_and_check(&rs, &spec, 1, 0xf, NULL) > 0;
		check(!pinned(&spec), "a stateless VIP pinned flow %u", i);
	}
	check(with > 0, "no hop list on a stateless VIP");
	/* Freed, a is nobody's hop. */
	check(lb_backend_set_state(maps, ids[0], LB_BACKEND_UNUSED) == 0, "free a");
	for (i = 0; i < FLOWS / 4; i++) {
		struct pkt_spec spec;

		ack_flow(&rng, &spec, client, sizeof(client));
		send_and_check(&rs, &spec, 1, 0xe, NULL);
	}
	/* a again, retired, at b's address: one host under two names is one hop, never its own. */
	{
		struct lb_backend e = { .family = (__u8)family, .state = LB_BACKEND_RETIRED,
					.vip_id = VIP, .cookie = 999, .forward = LB_FORWARD_GUE };
		unsigned int dup = 0;

		pkt_addr(family, addrs[1], e.addr);
		check(lb_backend_install(maps, ids[0], &e) == 0, "a at b's address");
		host_of[0] = 1;
		for (i = 0; i < FLOWS / 4; i++) {
			struct pkt_spec spec;
			struct lb_flow_key key;
			__u64 hash;
			int k;

			ack_flow(&rng, &spec, client, sizeof(client));
			key_of_spec(&spec, &key);
			hash = lb_flow_hash(secret, &key);
			for (k = 1; k < 4; k++)
				dup += owner(&rs, k, hash) == ids[0];
			send_and_check(&rs, &spec, 1, 0xf, NULL);
		}
		host_of[0] = 0;
		check(dup > 0, "no flow had a among its owners");
	}
	/* Without previous rings, lists are empty. */
	check(lb_vip_history_sync(maps, VIP, NULL, NULL, 0) == 0, "forget the previous rings");
	for (i = 0; i < 200; i++) {
		struct pkt_spec spec;

		ack_flow(&rng, &spec, client, sizeof(client));
		n = send_and_check(&rs, &spec, 0, 0xf, NULL);
		check_eq(n, 0);
	}
	teardown_vip(&rs);
}

/*
 * A moved connection's path MTU drops: the router's frag-needed, quoting
 * the backend's packet to the client, must reach the backend that has the
 * connection. Unpinned, it gets the hop list the flow's ACK gets (and pins
 * nothing); counted forwarded_hops when it has one.
 */
static void test_icmp_errors_get_their_flows_hop_list(void **state)
{
	struct test_rng rng = { SEED ^ 0x69636d70 };
	unsigned int i, n, with = 0;
	__u32 got_icmp[3], got_ack[3];
	__u64 hops0 = reason_total(LB_REASON_FORWARDED_HOPS);
	struct rings rs;
	char client[64];

	(void)state;
	NEEDS_ROOT();
	setup_vip(&rs, 0);
	for (i = 0; i < FLOWS / 4; i++) {
		struct pkt_spec spec, quoted;
		struct lb_flow_key key;
		struct pkt icmp;
		unsigned int m, j;

		ack_flow(&rng, &spec, client, sizeof(client));
		quoted = spec;
		quoted.src = spec.dst;
		quoted.dst = spec.src;
		quoted.sport = spec.dport;
		quoted.dport = spec.sport;
		pkt_build_icmp_error(&icmp, &quoted, "198.18.12.1", spec.dst, 3, 4);
		key_of_spec(&spec, &key);
		n = frame_check(&rs, &icmp, &key, 1, 0xf, got_icmp);
		check(!pinned(&spec), "flow %u: pinned by an ICMP error", i);
		m = send_and_check(&rs, &spec, 1, 0xf, got_ack);
		check(m == n, "flow %u: the ICMP error got %u hops, the ACK %u", i, n, m);
		for (j = 0; j < n && j < m; j++)
			check(got_icmp[j] == got_ack[j], "flow %u: hop %u differs", i, j);
		with += n > 0;
	}
	check(with > 0, "no ICMP error got a hop list");
	/* Each list-bearing ICMP error and ACK. */
	check_eq(reason_total(LB_REASON_FORWARDED_HOPS) - hops0, (__u64)with * 2);
	teardown_vip(&rs);
}

/* IPv6 backends (of an IPv4 VIP): hops of 16 bytes, hlen counting them. */
static void test_ipv6_backends_get_hops_of_16_bytes(void **state)
{
	struct test_rng rng = { SEED ^ 0x36363636 };
	unsigned int i, lengths[4] = { 0 };
	struct rings rs;
	char client[64];

	(void)state;
	NEEDS_ROOT();
	family = LB_FAMILY_IPV6;
	addrs = addrs6;
	setup_vip(&rs, 0);
	for (i = 0; i < FLOWS / 4; i++) {
		struct pkt_spec spec;

		ack_flow(&rng, &spec, client, sizeof(client));
		lengths[send_and_check(&rs, &spec, 1, 0xf, NULL)]++;
	}
	print_message("hops: IPv6 backends, %u flows: lists of 0/1/2/3 hops: %u/%u/%u/%u\n",
		      FLOWS / 4, lengths[0], lengths[1], lengths[2], lengths[3]);
	check(lengths[1] && lengths[2], "IPv6 lists of one and two hops");
	teardown_vip(&rs);
	family = LB_FAMILY_IPV4;
	addrs = addrs4;
}

static int hops_setup(void **state)
{
	(void)state;
	if (skip_reason)
		return 0;
	ifindex = harness_net_enter();
	return ifindex > 0 ? 0 : -1;
}

static int hops_teardown(void **state)
{
	(void)state;
	harness_net_leave();
	return 0;
}

HARNESS_GROUP(hops,
	cmocka_unit_test_setup(test_hop_lists_name_the_previous_owners, hops_setup),
	cmocka_unit_test(test_retired_backends_are_hops_and_freed_ones_are_not),
	cmocka_unit_test(test_icmp_errors_get_their_flows_hop_list),
	cmocka_unit_test_teardown(test_ipv6_backends_get_hops_of_16_bytes, hops_teardown));
