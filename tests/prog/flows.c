// SPDX-License-Identifier: GPL-2.0-only
/*
 * Flows and rings: a swap serves the new ring and keeps pinned flows; a
 * draining backend keeps its flows and gets no new one; FIN, SYN and RST on
 * pinned flows; a pin never reaches a later occupant of its slot; counters
 * per backend and VIP; a failed swap leaves the old ring serving.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kernel.h"
#include "lb_flow_table.h"
#include "prog.h"


#define SWAP_FLOWS 3000
#define RESYN_SWAP_FLOWS 400

/*
 * A SYN on a tuple whose pin holds (its backend active) follows the pin,
 * though it reads no pin before the ring: after a swap to a ring that places
 * the tuple elsewhere (a retransmitted SYN, a tuple reused). So does a
 * SYN|RST, which a pinned flow's backend judges; and a SYN the ring cannot
 * place (a ring of no points) when its pin holds.
 */
static void test_a_syn_follows_a_pin_that_holds_whatever_the_ring_says(void **state)
{
	static __u32 pinned[RESYN_SWAP_FLOWS];
	struct lb_vip_key key = vip_key_of_test(VIP_V4_TCP);
	struct pool a, b;
	int i, moved = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&a, VIP_V4_TCP, ring_weighted(100, 4, NULL, "resyn-a"));
	for (i = 0; i < RESYN_SWAP_FLOWS; i++)
		pinned[i] = send_flow(i, TCP_SYN);
	pool_install(&b, VIP_V4_TCP, ring_weighted(100, 4, NULL, "resyn-b"));
	for (i = 0; i < RESYN_SWAP_FLOWS; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(i, client, sizeof(client));

		moved += expected_backend(&b, &spec) != pinned[i];
		check(send_flow(i, TCP_SYN) == pinned[i],
		      "flow %d: a SYN left the pin that holds it for the new ring", i);
		check(send_flow(i, TCP_SYN | TCP_RST) == pinned[i],
		      "flow %d: a SYN|RST left its pinned backend", i);
	}
	check(moved == RESYN_SWAP_FLOWS, "the new ring places %d of %d elsewhere, not all", moved,
	      RESYN_SWAP_FLOWS);
	/* A ring of no points: a SYN whose pin holds still goes to it. */
	check(lb_vip_install(maps, &key, VIP_V4_TCP, NULL, NULL) == 0, "a ring of no points");
	for (i = 0; i < 20; i++)
		check(send_flow(i, TCP_SYN) == pinned[i],
		      "flow %d: a SYN the ring cannot place did not follow the pin that holds it", i);
	flows_clear();
	pool_release(&a);
	pool_release(&b);
}

/* The 16-octet flow value: what its accessors put in, they read back. */
static void test_the_flow_value_keeps_slot_cookie_times_and_marks(void **state)
{
	static const struct {
		__u32 slot;
		__u64 cookie;
		__u32 pinned_s, flags;
		__u64 now_s;
		__u32 age;
	} cases[] = {
		{ 1, 1, 0, 0, 10, 10 },
		{ LB_BACKENDS_MAX - 1, LB_FLOW_COOKIE_MASK, (1u << 30) - 1, LB_FLOW_FIN | LB_FLOW_RST,
		  1u << 30, 1 },	/* the seconds kept wrap: the age does not */
		{ 7, (1ull << 52) + 5, 100, LB_FLOW_RST, 99, 0 },	/* pinned after now was read */
		{ 9, 3, 5, 0, (1ull << 32) + 5, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lb_flow f = {
			.backend = lb_flow_backend(cases[i].slot, cases[i].cookie),
			.pinned = lb_flow_pinned(cases[i].pinned_s, cases[i].flags),
		};

		check(lb_flow_slot(&f) == cases[i].slot, "case %zu: slot got %u want %u", i,
		      lb_flow_slot(&f), cases[i].slot);
		check(lb_flow_cookie_is(&f, cases[i].cookie) &&
			      !lb_flow_cookie_is(&f, cases[i].cookie + 1),
		      "case %zu: cookie not told apart", i);
		check(lb_flow_flags(&f) == cases[i].flags, "case %zu: flags got %u want %u", i,
		      lb_flow_flags(&f), cases[i].flags);
		check(lb_flow_age_s(&f, cases[i].now_s) == cases[i].age,
		      "case %zu: age got %u want %u", i, lb_flow_age_s(&f, cases[i].now_s),
		      cases[i].age);
	}
}

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

/* The set of flow @i (flow_spec()) in the flow table. */
static __u32 set_of_flow(int i, const struct lb_flow_table *t)
{
	char client[64];
	struct pkt_spec spec = flow_spec(i, client, sizeof(client));
	uint64_t w[SIPHASH_FLOW_WORDS];
	struct lb_flow_key key;

	key_of_spec(&spec, &key);
	lb_flow_words(&key, w);
	return lb_flow_set_of(lb_flow_table_hash(w, t->key), t->sets);
}

/* The coarse clock's second: the program's (bpf_ktime_get_coarse_ns()). */
static __u64 coarse_second(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (__u64)now.tv_sec;
}

/* Wait for the coarse clock's next second (the flow table's seconds), and a tick more. */
static void next_second(void)
{
	__u64 now = coarse_second();

	while (coarse_second() == now)
		usleep(5000);
	usleep(20000);
}

/*
 * A set full of one-packet flows (a flood of SYNs, spoofed or not) gives its
 * ways to new ones of their kind, not the way of a flow seen again after its
 * first second within LB_FLOW_AGAIN_CREDIT_S: 2 x 8 SYNs into one flow's set
 * keep it pinned, and the same SYNs evict a flow seen only once.
 */
static void test_a_flood_of_one_packet_flows_evicts_its_own_kind_first(void **state)
{
	int same[2 * LB_FLOW_WAYS], found = 0, i, n, pinned = 0;
	char client[64];
	struct pkt_spec spec;
	struct lb_flow_table t;
	struct lb_flow_key key;
	struct lb_flow flow;
	struct pool pool;
	__u32 zero = 0, set;

	(void)state;
	NEEDS_ROOT();
	for (int round = 0; round < 2; round++) {
		flows_clear();
		pool_install(&pool, VIP_V4_TCP, ring_weighted(10, 3, NULL, "flood"));
		assert_int_equal(bpf_map_lookup_elem(maps->flow_table, &zero, &t), 0);
		set = set_of_flow(0, &t);
		for (i = 1, found = 0; found < 2 * LB_FLOW_WAYS && i < 3000000; i++)
			if (set_of_flow(i, &t) == set)
				same[found++] = i;
		assert_int_equal(found, 2 * LB_FLOW_WAYS);
		send_flow(0, TCP_SYN);
		if (round == 0) {
			/* Seen again, a second later: an established connection's ACK. */
			next_second();
			send_flow(0, TCP_ACK);
		}
		for (n = 0; n < 2 * LB_FLOW_WAYS; n++)
			send_flow(same[n], TCP_SYN);
		spec = flow_spec(0, client, sizeof(client));
		key_of_spec(&spec, &key);
		if (round == 0)
			check(kernel_flow_get(maps, &key, &flow) == 0,
			      "16 SYNs into its set evicted a flow seen again");
		else
			check(kernel_flow_get(maps, &key, &flow) != 0,
			      "16 SYNs into its set kept a flow seen only once (the test sees nothing)");
		for (n = 0, pinned = 0; n < 2 * LB_FLOW_WAYS; n++) {
			spec = flow_spec(same[n], client, sizeof(client));
			key_of_spec(&spec, &key);
			pinned += kernel_flow_get(maps, &key, &flow) == 0;
		}
		check_eq(pinned, round == 0 ? LB_FLOW_WAYS - 1 : LB_FLOW_WAYS);
		pool_release(&pool);
	}
}

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
	check(kernel_flow_get(maps, &key, &flow) == 0, "SYN did not pin the flow");
	check(!(lb_flow_flags(&flow) & LB_FLOW_FIN), "a fresh flow is marked closing");
	send_flow(7, TCP_FIN_ACK);
	check(kernel_flow_get(maps, &key, &flow) == 0 && (lb_flow_flags(&flow) & LB_FLOW_FIN),
	      "FIN did not mark the flow closing");
	/* The client opens a new connection from the same address and port. */
	send_flow(7, TCP_SYN);
	check(kernel_flow_get(maps, &key, &flow) == 0 && !(lb_flow_flags(&flow) & LB_FLOW_FIN),
	      "a new connection on a tuple whose last connection sent FIN still counts as closing "
	      "(flags %#x)", lb_flow_flags(&flow));
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

/* Set the rate of new flow-table entries a CPU makes a second (0: no limit); the old settings into @keep. */
static void rate_set(__u32 rate, struct lb_config *keep)
{
	struct lb_config cfg = { .new_flows_max = rate };

	check(lb_config_read(maps, keep) == 0, "read the settings");
	memcpy(cfg.source4, keep->source4, sizeof(cfg.source4));
	memcpy(cfg.source6, keep->source6, sizeof(cfg.source6));
	cfg.gue_port = keep->gue_port;
	check(lb_config_write(maps, &cfg) == 0, "set a rate of %u", rate);
}

/* The flow table's sets mapped whole (for a test that writes them as another CPU would). */
static struct lb_flow_set *table_map(struct lb_flow_table *t, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	__u32 zero = 0;
	void *at;

	assert_int_equal(bpf_map_lookup_elem(maps->flow_table, &zero, t), 0);
	*len = ((size_t)t->sets * sizeof(struct lb_flow_set) + page - 1) / page * page;
	at = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, maps->flows, 0);
	assert_true(at != MAP_FAILED);
	return at;
}

/*
 * A second copy of @key's pin in a free way of its set, as two CPUs pinning
 * the flow at once leave it: written through the table's memory as the
 * program writes. Return: 1 when made.
 */
static int pin_copy(const struct lb_flow_key *key)
{
	uint64_t w[SIPHASH_FLOW_WORDS];
	struct lb_flow_table t;
	struct lb_flow_set *sets, *s;
	int i, j, made = 0;
	size_t len;
	__u64 h;

	sets = table_map(&t, &len);
	lb_flow_words(key, w);
	h = lb_flow_table_hash(w, t.key);
	s = &sets[lb_flow_set_of(h, t.sets)];
	i = lb_flow_find(s, w, h);
	for (j = 0; i >= 0 && j < LB_FLOW_WAYS && !made; j++)
		if (!s->tag[j]) {
			s->way[j] = s->way[i];
			s->seen[j] = s->seen[i];
			s->tag[j] = s->tag[i];
			made = 1;
		}
	munmap(sets, len);
	return made;
}


/*
 * Flows the race test pins; packets that must meet the other CPU's writes
 * (it gets less of a CPU when the tests' lanes share them), and that at
 * least, of at most RACE_PACKETS_MAX sent.
 */
#define RACE_FLOWS 16
#define RACE_PACKETS 200000
#define RACE_PACKETS_LEAST 20000
#define RACE_PACKETS_MAX 2000000

struct race_writer {
	struct lb_flow_set *sets;
	__u64 key[LB_FLOW_TABLE_KEY_WORDS];
	struct lb_flow_key flow[RACE_FLOWS], other[RACE_FLOWS];
	__u64 pin[RACE_FLOWS];
	__u32 set[RACE_FLOWS], way[RACE_FLOWS];
	__u64 other_backend; /* the drained backend, which no packet of ours may reach */
	int stop;             /* __atomic: the main thread's word to stop */
	unsigned long writes; /* __atomic: ways written so far */
	int cpu;              /* the CPU it ran on */
};

/*
 * The other CPU: the way of each of our flows' pins written, over and over,
 * with another flow pinned to the drained backend, then with our flow and its
 * pin again, so that every read of the way on our CPU may meet a write.
 */
static void *race_write(void *arg)
{
	struct race_writer *w = arg;
	uint64_t kw[SIPHASH_FLOW_WORDS];
	struct lb_flow f = { .last_seen_s = 1 };
	const struct lb_flow_key *k;
	unsigned long n = 0;
	__u32 i;

	__atomic_store_n(&w->cpu, sched_getcpu(), __ATOMIC_RELAXED);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		i = (__u32)(n % RACE_FLOWS);
		if ((n / RACE_FLOWS) & 1) {
			k = &w->flow[i];
			f.backend = w->pin[i];
		} else {
			k = &w->other[i];
			f.backend = w->other_backend;
		}
		lb_flow_words(k, kw);
		lb_flow_put(&w->sets[w->set[i]], w->way[i], kw, lb_flow_table_hash(kw, w->key), &f);
		__atomic_store_n(&w->writes, ++n, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* A CPU of @allowed other than @not, or -1. */
static int other_cpu(const cpu_set_t *allowed, int not)
{
	int c;

	for (c = 0; c < CPU_SETSIZE; c++)
		if (c != not && CPU_ISSET(c, allowed))
			return c;
	return -1;
}

/*
 * Every CPU writes every set with no lock. While another CPU rewrites the
 * very ways our flows' pins are in, back and forth between our flow and
 * another one pinned to a draining backend (which takes pinned packets, and
 * which the ring never names), each of our packets goes to its pin or, the
 * pin not there, where the ring says: never to the backend of a way read
 * half from one write and half from another. Only packets sent while the
 * other CPU wrote count; the checks come after it stopped.
 */
static void test_ways_rewritten_on_another_cpu_never_send_a_flow_elsewhere(void **state)
{
	static struct race_writer w;
	__u32 ring[RACE_FLOWS], pin_id[RACE_FLOWS], drained, got = 0;
	unsigned long to_pin = 0, to_ring = 0, elsewhere = 0, raced = 0, before, writes;
	struct test_rng rng = { SEED + 7 };
	struct pkt pkts[RACE_FLOWS];
	unsigned char out[PKT_MAX];
	struct pool pool, after;
	struct lb_flow_table t;
	struct lb_backend slot;
	pthread_attr_t attr;
	pthread_t writer;
	cpu_set_t there;
	size_t len, out_len;
	int i, n, cpu, ours = -1, first = -1, made;
	__u32 first_got = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(100, 4, NULL, "race"));
	drained = pool_drain(&pool, 3, &after);
	memset(&w, 0, sizeof(w));
	assert_int_equal(lb_backend_read(maps, drained, &slot), 0);
	w.other_backend = lb_flow_backend(drained, slot.cookie);
	/* Our flows, each pinned to a backend that is not the ring's choice. */
	for (i = 0; i < RACE_FLOWS; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(7000 + i, client, sizeof(client));
		struct lb_flow f = { .last_seen_s = 1 };

		spec.tcp_flags = TCP_ACK;
		pkt_build(&pkts[i], &spec);
		key_of_spec(&spec, &w.flow[i]);
		ring[i] = expected_backend(&after, &spec);
		pin_id[i] = after.ids[0] == ring[i] ? after.ids[1] : after.ids[0];
		assert_int_equal(lb_backend_read(maps, pin_id[i], &slot), 0);
		f.backend = w.pin[i] = lb_flow_backend(pin_id[i], slot.cookie);
		assert_int_equal(kernel_flow_put(maps, &w.flow[i], &f), 0);
		random_flow(&rng, VIP_V4_TCP, &spec, client, sizeof(client));
		key_of_spec(&spec, &w.other[i]);
	}
	/* Where each pin is: the ways the other CPU writes. */
	w.sets = table_map(&t, &len);
	memcpy(w.key, t.key, sizeof(w.key));
	for (i = 0; i < RACE_FLOWS; i++) {
		uint64_t kw[SIPHASH_FLOW_WORDS];
		__u64 h;

		lb_flow_words(&w.flow[i], kw);
		h = lb_flow_table_hash(kw, w.key);
		w.set[i] = lb_flow_set_of(h, t.sets);
		n = lb_flow_find(&w.sets[w.set[i]], kw, h);
		w.way[i] = n < 0 ? 0 : (__u32)n;
		made = n >= 0;
		if (!made)
			break;
	}
	/* The CPUs we may use, read before the harness pins us to one of them. */
	if (sched_getaffinity(0, sizeof(there), &there))
		made = 0;
	harness_cpu_pin();
	ours = sched_getcpu();
	cpu = other_cpu(&there, ours);
	made = made && cpu >= 0;
	if (made) {
		CPU_ZERO(&there);
		CPU_SET(cpu, &there);
		made = pthread_attr_init(&attr) == 0 &&
		       pthread_attr_setaffinity_np(&attr, sizeof(there), &there) == 0 &&
		       pthread_create(&writer, &attr, race_write, &w) == 0;
		pthread_attr_destroy(&attr);
	}
	for (n = 0; made && n < RACE_PACKETS_MAX && raced < RACE_PACKETS; n++) {
		i = n % RACE_FLOWS;
		before = __atomic_load_n(&w.writes, __ATOMIC_RELAXED);
		if (run_frame(pkts[i].data, pkts[i].len, out, &out_len) != XDP_TX || out_len < 6)
			got = ~0u;
		else
			got = (__u32)out[4] << 8 | out[5];
		if (!before || __atomic_load_n(&w.writes, __ATOMIC_RELAXED) == before)
			continue; /* the other CPU wrote nothing meanwhile */
		raced++;
		to_pin += got == pin_id[i];
		to_ring += got == ring[i];
		if (got != pin_id[i] && got != ring[i] && !elsewhere++) {
			first = n;
			first_got = got;
		}
	}
	/* Stopped, joined, unpinned and unmapped before any check can leave the test. */
	if (made) {
		__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
		pthread_join(writer, NULL);
	}
	harness_cpu_unpin();
	munmap(w.sets, len);
	writes = w.writes;
	check(made, "the race could not start (a pin not found, or no second CPU to write from)");
	check(w.cpu != ours, "the writer ran on our CPU %d", ours);
	i = first < 0 ? 0 : first % RACE_FLOWS;
	print_message("flows: %lu of %d packets sent while another CPU wrote their ways (%lu "
		      "writes): %lu to their pins, %lu by the ring, %lu elsewhere\n", raced, n,
		      writes, to_pin, to_ring, elsewhere);
	check(!elsewhere, "%lu packets went elsewhere, the first packet %d (flow %d), to %u: not "
	      "its pin %u, nor the ring's %u (the other flows' backend %u)", elsewhere, first, i,
	      first_got, pin_id[i], ring[i], drained);
	check(raced >= RACE_PACKETS_LEAST && to_pin > 0 && to_ring > 0,
	      "%lu packets met the other CPU's writes (%lu pinned, %lu by the ring): the race "
	      "hardly ran", raced, to_pin, to_ring);
	ring_free(after.ring);
	pool_release(&pool);
	flows_clear();
}

/* A flow pinned in two ways counts once, and flows delete empties both. */
static void test_a_flow_pinned_twice_counts_once_and_is_deleted_whole(void **state)
{
	char client[64];
	struct pkt_spec spec = flow_spec(4242, client, sizeof(client));
	struct lb_flow_key key;
	struct lb_flow flow;
	struct pool pool;
	size_t deleted = 0;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(10, 3, NULL, "twice"));
	send_flow(4242, TCP_SYN);
	key_of_spec(&spec, &key);
	check(pin_copy(&key), "no second copy of the pin was made");
	check_eq(flows_count(IPPROTO_TCP), 1);
	check_eq(kernel_flows_delete(maps, &key, 1, &deleted), 0);
	check_eq(deleted, 1);
	check(kernel_flow_get(maps, &key, &flow) != 0, "flows delete left a copy of the pin");
	check_eq(flows_count(IPPROTO_TCP), 0);
	pool_release(&pool);
}

/*
 * Past the rate of new flows, a SYN on a tuple pinned to a draining backend
 * goes where the ring says and is not pinned: its stale pin is deleted, so
 * the connection's next packets follow the SYN, not the old pin.
 */
static void test_a_syn_past_the_rate_leaves_no_stale_pin_behind(void **state)
{
	struct pool pool, after;
	struct lb_config keep;
	__u32 drained;
	int i, reused = 0;

	(void)state;
	NEEDS_ROOT();
	drained = pinned_then_drained(&pool, "stale", 2, &after);
	harness_cpu_pin();
	/* A rate of 1, spent (again before each SYN below): no SYN below may be pinned. */
	rate_set(1, &keep);
	send_flow(90000, TCP_SYN);
	send_flow(90001, TCP_SYN);
	for (i = 0; i < RESYN_FLOWS && reused < 20; i++) {
		char client[64];
		struct pkt_spec spec = flow_spec(i, client, sizeof(client));
		__u32 want = expected_backend(&after, &spec);

		if (send_flow(i, TCP_ACK) != drained)
			continue;
		reused++;
		/* Some stale pins twice (two CPUs pinned them at once): every copy must go. */
		if (reused % 2) {
			struct lb_flow_key key;

			key_of_spec(&spec, &key);
			check(pin_copy(&key), "flow %d: no second copy of the pin was made", i);
		}
		/* Spend the rate at once, should a second have turned since it was spent. */
		send_flow(90002 + i, TCP_SYN);
		check(send_flow(i, TCP_SYN) == want, "flow %d: the SYN did not go where the ring says",
		      i);
		{
			struct lb_flow_key key;
			struct lb_flow flow;

			key_of_spec(&spec, &key);
			check(kernel_flow_get(maps, &key, &flow) != 0,
			      "flow %d: past the rate the SYN left a pin of its tuple", i);
		}
		check(send_flow(i, TCP_ACK) == want,
		      "flow %d: past the rate, the next packet followed the stale pin to %u, not "
		      "its SYN to %u", i, drained, want);
	}
	check(lb_config_write(maps, &keep) == 0, "restore the settings");
	harness_cpu_unpin();
	check(reused >= 10, "only %d flows were pinned to the drained backend", reused);
	ring_free(after.ring);
	pool_release(&pool);
}

/* The new-flow rate of the CPU the test is pinned to (map flow_rate, per CPU). */
static struct lb_flow_rate rate_now(void)
{
	int ncpu = libbpf_num_possible_cpus(), cpu = sched_getcpu();
	struct lb_flow_rate *cpus = calloc((size_t)ncpu, sizeof(*cpus)), r;
	__u32 zero = 0;

	assert_non_null(cpus);
	assert_true(cpu >= 0 && cpu < ncpu);
	assert_int_equal(bpf_map_lookup_elem(maps->flow_rate, &zero, cpus), 0);
	r = cpus[cpu];
	free(cpus);
	return r;
}

/*
 * The rate of new flows counts entries made: a SYN that a pin which holds
 * takes (a retransmitted SYN) spends none of it and is not refused.
 */
static void test_retransmitted_syns_spend_none_of_the_rate(void **state)
{
	struct lb_flow_rate before, after;
	struct lb_config keep;
	struct pool pool;
	int tries, i, pinned = 0;

	(void)state;
	NEEDS_ROOT();
	harness_cpu_pin();
	pool_install(&pool, VIP_V4_TCP, ring_weighted(20, 4, NULL, "resend"));
	rate_set(3, &keep);
	/* Within one second of the clock's, or once more when a second turned meanwhile. */
	for (tries = 0; tries < 2; tries++) {
		flows_clear();
		sleep(1);
		before = rate_now();
		send_flow(95000, TCP_SYN);
		for (i = 0; i < 10; i++)
			send_flow(95000, TCP_SYN);
		send_flow(95001, TCP_SYN);
		send_flow(95002, TCP_SYN);
		after = rate_now();
		pinned = 0;
		for (i = 95000; i <= 95002; i++) {
			char client[64];
			struct pkt_spec spec = flow_spec(i, client, sizeof(client));
			struct lb_flow_key key;
			struct lb_flow flow;

			key_of_spec(&spec, &key);
			pinned += kernel_flow_get(maps, &key, &flow) == 0;
		}
		if (after.second == before.second)
			break;
	}
	check(lb_config_write(maps, &keep) == 0, "restore the settings");
	harness_cpu_unpin();
	check(pinned == 3, "a rate of 3: %d of 3 new flows pinned after 10 retransmitted SYNs",
	      pinned);
	check(after.made == 3, "a rate of 3: %llu entries counted made, not 3",
	      (unsigned long long)after.made);
	check(after.refused == before.refused, "%llu retransmitted SYNs counted refused",
	      (unsigned long long)(after.refused - before.refused));
	flows_clear();
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
		got = send_flow(i, TCP_SYN | TCP_RST);
		check(got == drained, "flow %d: a SYN|RST went to %u, not its pinned backend %u", i,
		      got, drained);
		key_of_spec(&spec, &key);
		check(kernel_flow_get(maps, &key, &flow) == 0 && lb_flow_slot(&flow) == drained,
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
		check(kernel_flow_get(maps, &key, &flow) != 0,
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
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
				 .src = "198.18.1.77", .dst = V4_VIP_NO_RING, .sport = 41234,
				 .dport = VIP_TCP_PORT, .tcp_flags = TCP_ACK };
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
	pin.backend = lb_flow_backend(id, first.cookie);
	check(kernel_flow_put(maps, &key, &pin) == 0, "pin the flow");
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
	check(kernel_flow_get(maps, &key, &now) == 0 &&
	      lb_flow_cookie_is(&now, first.cookie),
	      "the flow was pinned to the slot's new occupant");
	lb_backend_set_state(maps, id, LB_BACKEND_UNUSED);
}

/* An ICMP error follows its flow but is not a sign of the flow's life. */
static void test_icmp_error_does_not_refresh_its_flow(void **state)
{
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
				 .src = "198.18.1.9", .dst = V4_VIP, .sport = 41000,
				 .dport = VIP_TCP_PORT, .tcp_flags = TCP_SYN };
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
	assert_int_equal(kernel_flow_get(maps, &key, &flow), 0);
	flow.last_seen_s = 1; /* long idle */
	assert_int_equal(kernel_flow_put(maps, &key, &flow), 0);
	icmp_frag_needed_for_vip_flow(&icmp);
	check(forward(&icmp) == backend, "the ICMP error did not follow its flow");
	assert_int_equal(kernel_flow_get(maps, &key, &flow), 0);
	check(flow.last_seen_s == 1, "an ICMP error made an idle flow look live (last seen %u s)",
	      flow.last_seen_s);
	pool_release(&pool);
}

/*
 * Past the configured rate of new flows per CPU per second, new flows are
 * still forwarded where the ring says but not pinned, and counted: a flood
 * of new flows cannot evict the pins of established ones.
 */
static void test_a_flood_of_new_flows_is_forwarded_but_not_pinned(void **state)
{
	struct lb_config cfg = { .new_flows_max = 50 }, keep;
	struct lb_flow_rate before, after;
	struct pool pool;
	__u32 zero = 0;
	int i, tries, pinned = 0;

	(void)state;
	NEEDS_ROOT();
	/* The rate is per CPU: every frame of the test runs on one. */
	harness_cpu_pin();
	check(lb_config_read(maps, &keep) == 0, "read the settings");
	memcpy(cfg.source4, keep.source4, sizeof(cfg.source4));
	memcpy(cfg.source6, keep.source6, sizeof(cfg.source6));
	cfg.gue_port = keep.gue_port;
	check(lb_config_write(maps, &cfg) == 0, "set a rate of 50");
	pool_install(&pool, VIP_V4_TCP, ring_weighted(50, 4, NULL, "flood"));
	/* Within one second of the clock's, or once more when a second turned meanwhile. */
	for (tries = 0; tries < 2; tries++) {
		struct lb_flow_rate *cpus;
		int ncpu = libbpf_num_possible_cpus(), c;

		flows_clear();
		/* A second of its own: the flows earlier tests made this second count too. */
		sleep(1);
		cpus = calloc((size_t)ncpu, sizeof(*cpus));
		assert_non_null(cpus);
		assert_int_equal(bpf_map_lookup_elem(maps->flow_rate, &zero, cpus), 0);
		before = cpus[0];
		for (c = 1; c < ncpu; c++)
			before.refused += cpus[c].refused;
		for (i = 0; i < 200; i++) {
			char client[64];
			struct pkt_spec spec = flow_spec(70000 + i, client, sizeof(client));
			struct pkt pkt;

			pkt_build(&pkt, &spec);
			check(forward(&pkt) == expected_backend(&pool, &spec),
			      "flow %d: not where the ring says", i);
		}
		assert_int_equal(bpf_map_lookup_elem(maps->flow_rate, &zero, cpus), 0);
		after = cpus[0];
		for (c = 1; c < ncpu; c++) {
			after.refused += cpus[c].refused;
			if (cpus[c].second > after.second)
				after.second = cpus[c].second;
		}
		free(cpus);
		pinned = 0;
		for (i = 0; i < 200; i++) {
			char client[64];
			struct pkt_spec spec = flow_spec(70000 + i, client, sizeof(client));
			struct lb_flow_key key;
			struct lb_flow flow;

			key_of_spec(&spec, &key);
			pinned += kernel_flow_get(maps, &key, &flow) == 0;
		}
		if (after.second == before.second || tries == 1)
			break;
	}
	harness_cpu_unpin();
	check(lb_config_write(maps, &keep) == 0, "restore the settings");
	check_eq(pinned, 50);
	check_eq(after.refused - before.refused, 150);
	flows_clear();
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
	check_eq(new_flows, 100);
	check_eq(packets, 200);
	check_eq(vip_packets, 200);
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

HARNESS_GROUP(flows,
	cmocka_unit_test(test_swap_serves_new_ring_and_keeps_pinned_flows),
	cmocka_unit_test(test_draining_backend_keeps_pinned_flows_and_gets_no_new_ones),
	cmocka_unit_test(test_fin_marks_the_flow_closing_and_a_new_connection_clears_it),
	cmocka_unit_test(test_syn_on_a_tuple_pinned_to_a_draining_backend_is_placed_by_the_ring),
	cmocka_unit_test(test_the_flow_value_keeps_slot_cookie_times_and_marks),
	cmocka_unit_test(test_a_syn_follows_a_pin_that_holds_whatever_the_ring_says),
	cmocka_unit_test(test_a_syn_past_the_rate_leaves_no_stale_pin_behind),
	cmocka_unit_test(test_a_flow_pinned_twice_counts_once_and_is_deleted_whole),
	cmocka_unit_test(test_ways_rewritten_on_another_cpu_never_send_a_flow_elsewhere),
	cmocka_unit_test(test_retransmitted_syns_spend_none_of_the_rate),
	cmocka_unit_test(test_reset_goes_to_the_pinned_backend_and_keeps_the_pin),
	cmocka_unit_test(test_pin_to_a_reused_slot_never_reaches_the_new_occupant),
	cmocka_unit_test(test_icmp_error_does_not_refresh_its_flow),
	cmocka_unit_test(test_a_flood_of_new_flows_is_forwarded_but_not_pinned),
	cmocka_unit_test(test_a_flood_of_one_packet_flows_evicts_its_own_kind_first),
	cmocka_unit_test(test_new_flows_and_bytes_are_counted_per_backend_and_vip),
	cmocka_unit_test(test_failed_swap_leaves_old_ring_serving));
