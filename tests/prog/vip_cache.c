// SPDX-License-Identifier: GPL-2.0-only
/*
 * Each CPU's VIP cache (lb_contract.h): a packet finds its VIP's value in
 * its CPU's copy while the VIP epoch is the even one the copy was made
 * under, and the controller's changes move the epoch so that no packet,
 * on any CPU, follows a VIP value older than the last change made.
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
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"

/*
 * What a frame to the test's VIP became: sent to one backend, passed (no
 * such VIP), or dropped for want of a ring (a VIP being removed: its value
 * read just before the delete, its ring slots emptied just after).
 */
enum outcome { TO_A, TO_B, PASSED, NO_RING, OTHER };

static const char *const outcome_name[] = { "to backend A", "to backend B", "passed",
					    "dropped with no ring", "other" };

struct cache_fixture {
	struct lb_vip_key key;
	struct ring *ring;
	__u32 a, b;
	__u8 mac_a[6], mac_b[6];
};

static __u64 epoch_now(void)
{
	__u32 zero = 0;
	__u64 epoch = 0;

	check(bpf_map_lookup_elem(maps->vip_epoch, &zero, &epoch) == 0, "reading the VIP epoch: %s",
	      strerror(errno));
	return epoch;
}

/*
 * A new flow (number @n) of @protocol to V4_VIP port @port through the
 * program, on this CPU, no epoch closed.
 */
static enum outcome send_new_flow_of(const struct cache_fixture *f, unsigned int n,
				     uint8_t protocol, uint16_t port)
{
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = protocol,
				 .dst = V4_VIP, .sport = (uint16_t)(1024 + n % 60000),
				 .dport = port, .tcp_flags = protocol == IPPROTO_TCP ? TCP_SYN : 0 };
	char src[INET_ADDRSTRLEN];
	unsigned char out[PKT_MAX];
	size_t out_len = 0;
	struct pkt pkt;
	__u32 verdict;

	/* Never a tuple sent before: a SYN's pin, while it holds, would take it. */
	snprintf(src, sizeof(src), "198.18.%u.%u", 64 + n / 60000 % 128, 1 + n / 60000 / 128 % 250);
	spec.src = src;
	pkt_build(&pkt, &spec);
	verdict = harness_run(lb_prog_fd(prog), pkt.data, pkt.len, out, &out_len, 1, NULL);
	if (verdict == XDP_PASS)
		return PASSED;
	if (verdict == XDP_DROP)
		return NO_RING;
	if (verdict != XDP_TX || out_len < 6)
		return OTHER;
	return memcmp(out, f->mac_a, 6) == 0 ? TO_A : memcmp(out, f->mac_b, 6) == 0 ? TO_B : OTHER;
}

/* A new TCP flow (number @n) to the test's VIP. */
static enum outcome send_new_flow(const struct cache_fixture *f, unsigned int n)
{
	return send_new_flow_of(f, n, IPPROTO_TCP, VIP_TCP_PORT);
}

/* A frame's outcome, @got, checked against @want, for the case @what. */
static void outcome_is(enum outcome got, enum outcome want, const char *what)
{
	check(got == want, "%s: the frame went %s, want %s", what, outcome_name[got],
	      outcome_name[want]);
}

/* State @s of the VIP's cycle through the controller: served by A, by B, or gone. */
static enum outcome state_of(unsigned long s)
{
	return (enum outcome)(s % 3);
}

static void state_set(const struct cache_fixture *f, enum outcome want)
{
	int err;

	if (want == PASSED)
		err = lb_vip_remove(maps, &f->key);
	else
		err = lb_vip_install(maps, &f->key, VIP_V4_TCP, f->ring, want == TO_A ? &f->a : &f->b);
	check(err == 0, "the VIP %s: %s", outcome_name[want], strerror(-err));
}

static void fixture_make(struct cache_fixture *f)
{
	struct ring_member member = { "only", 1 };

	f->key = vip_key_of_test(VIP_V4_TCP);
	check(ring_build(&f->ring, 16, &member, 1) == 0, "a ring of one member");
	f->a = backend_new(VIP_V4_TCP);
	f->b = backend_new(VIP_V4_TCP);
	mac_of_backend(f->a, f->mac_a);
	mac_of_backend(f->b, f->mac_b);
}

/* The VIP as the harness left it (an empty ring), its backends freed. */
static void fixture_free(struct cache_fixture *f)
{
	check(lb_vip_install(maps, &f->key, VIP_V4_TCP, NULL, NULL) == 0 &&
	      lb_readers_release(maps) == 0, "the VIP back as it was");
	lb_backend_set_state(maps, f->a, LB_BACKEND_UNUSED);
	lb_backend_set_state(maps, f->b, LB_BACKEND_UNUSED);
	ring_free(f->ring);
}

/*
 * Under a closed (even) epoch a packet follows its CPU's copy, even when the
 * map changed behind the controller's back; a change made by the controller
 * opens the epoch (odd: every packet reads the map), and closing it drops
 * every copy.
 */
static void test_a_cpu_follows_its_copy_only_while_the_epoch_it_was_made_under_holds(void **state)
{
	struct cache_fixture f;
	struct lb_vip value;
	__u64 epoch;

	(void)state;
	NEEDS_ROOT();
	harness_cpu_pin();
	fixture_make(&f);
	state_set(&f, TO_A);
	epoch = epoch_now();
	check(epoch % 2 == 1, "a VIP written: epoch %llu, want odd", (unsigned long long)epoch);
	outcome_is(send_new_flow(&f, 1), TO_A, "under the open epoch, the map's value");
	check(lb_readers_release(maps) == 0, "closing the epoch");
	check(epoch_now() == epoch + 1, "closed: epoch %llu, want %llu",
	      (unsigned long long)epoch_now(), (unsigned long long)epoch + 1);
	outcome_is(send_new_flow(&f, 2), TO_A, "the first packet under the closed epoch, which copies");

	/* Behind the controller's back (no epoch): this CPU's copy still answers. */
	check(bpf_map_lookup_elem(maps->vips, &f.key, &value) == 0 &&
	      bpf_map_delete_elem(maps->vips, &f.key) == 0, "the VIP deleted behind the controller");
	outcome_is(send_new_flow(&f, 3), TO_A, "the copy, which the epoch still covers");
	check(bpf_map_update_elem(maps->vips, &f.key, &value, BPF_NOEXIST) == 0, "put back");

	/* Through the controller: no copy from the write on. */
	state_set(&f, PASSED);
	check(epoch_now() == epoch + 2, "removed: epoch %llu, want %llu (odd)",
	      (unsigned long long)epoch_now(), (unsigned long long)epoch + 2);
	outcome_is(send_new_flow(&f, 4), PASSED, "the VIP removed, the epoch open");
	check(lb_readers_release(maps) == 0, "closing the epoch");
	outcome_is(send_new_flow(&f, 5), PASSED, "the VIP removed, the epoch closed");
	state_set(&f, TO_B);
	outcome_is(send_new_flow(&f, 6), TO_B, "B's ring, the epoch open");
	check(lb_readers_release(maps) == 0, "closing the epoch");
	outcome_is(send_new_flow(&f, 7), TO_B, "B's ring, copied");
	outcome_is(send_new_flow(&f, 8), TO_B, "B's ring, from the copy");
	check(epoch_now() == epoch + 5, "epoch %llu, want %llu", (unsigned long long)epoch_now(),
	      (unsigned long long)epoch + 5);
	fixture_free(&f);
	harness_cpu_unpin();
}

/*
 * A controller killed between a VIP write and the end of its change leaves
 * the epoch odd: no copy is used (the packets follow the map, the new
 * value), and the next controller's change closes it.
 */
static void test_a_change_killed_midway_leaves_no_copy_in_use(void **state)
{
	struct cache_fixture f;
	unsigned long waits;
	pid_t child;
	int status = 0;

	(void)state;
	NEEDS_ROOT();
	harness_cpu_pin();
	fixture_make(&f);
	state_set(&f, TO_A);
	check(lb_readers_release(maps) == 0, "closing the epoch");
	outcome_is(send_new_flow(&f, 11), TO_A, "A, copied");
	outcome_is(send_new_flow(&f, 12), TO_A, "A, from the copy");
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(lb_vip_install(maps, &f.key, VIP_V4_TCP, f.ring, &f.b) ? 1 : 0);
	check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child's change, which never ended");
	check(epoch_now() % 2 == 1, "the killed change's epoch: %llu, want odd",
	      (unsigned long long)epoch_now());
	outcome_is(send_new_flow(&f, 13), TO_B, "after the killed change, the map's value");
	outcome_is(send_new_flow(&f, 14), TO_B, "and again");
	/* Its writes were never waited for: the next controller waits before it closes. */
	waits = lb_readers_waits();
	check(lb_readers_release(maps) == 0 && epoch_now() % 2 == 0 && epoch_now() != 0,
	      "the next controller closes the epoch");
	check(lb_readers_waits() > waits, "the killed change's epoch closed without a wait");
	outcome_is(send_new_flow(&f, 15), TO_B, "copied again");
	outcome_is(send_new_flow(&f, 16), TO_B, "from the copy");
	fixture_free(&f);
	harness_cpu_unpin();
}

/* A VIP id no harness VIP uses: the UDP twin of the TCP test VIP. */
#define VIP_UDP_TWIN 40

/*
 * Two VIPs of one address and one port, one TCP and one UDP, each served by
 * its own backend: a CPU keeps a copy of each, told apart by the protocol
 * (and the port and family), and never serves one with the other's.
 */
static void test_two_vips_of_one_address_keep_their_own_copies(void **state)
{
	struct lb_vip_key twin = vip_key_of_test(VIP_V4_TCP);
	struct cache_fixture f;
	int i;

	(void)state;
	NEEDS_ROOT();
	harness_cpu_pin();
	fixture_make(&f);
	/* B serves the UDP twin (a backend is its VIP's), A the TCP VIP. */
	lb_backend_set_state(maps, f.b, LB_BACKEND_UNUSED);
	f.b = backend_new(VIP_UDP_TWIN);
	mac_of_backend(f.b, f.mac_b);
	twin.protocol = IPPROTO_UDP;
	state_set(&f, TO_A);
	check(lb_vip_install(maps, &twin, VIP_UDP_TWIN, f.ring, &f.b) == 0 &&
	      lb_readers_release(maps) == 0, "UDP to the same address and port served by B");
	for (i = 0; i < 8; i++) {
		outcome_is(send_new_flow_of(&f, 100 + (unsigned int)i, IPPROTO_TCP, VIP_TCP_PORT),
			   TO_A, "TCP to port 80, the TCP VIP's copy");
		outcome_is(send_new_flow_of(&f, 200 + (unsigned int)i, IPPROTO_UDP, VIP_TCP_PORT),
			   TO_B, "UDP to port 80, the UDP VIP's copy");
	}
	check(lb_vip_remove(maps, &twin) == 0,
	      "the UDP twin removed");
	fixture_free(&f);
	harness_cpu_unpin();
}

/* --- a reader on another CPU while the controller changes the VIP ------------------- */

struct race {
	const struct cache_fixture *f;
	unsigned long committed; /* changes done and closed (atomic) */
	int stop;                /* atomic */
	unsigned long checked, stale, other, sent;
	enum outcome got, want_one, want_two;
	unsigned long at;
	int cpu, err;
};

/* Is @got what a frame sent wholly while change @s was the last made may become? */
static int outcome_allowed(enum outcome got, unsigned long s)
{
	enum outcome now = state_of(s), next = state_of(s + 1);

	if (got == NO_RING)
		return now == PASSED || next == PASSED;
	return got == now || got == next;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	cpu_set_t one;
	unsigned int n = 0;

	CPU_ZERO(&one);
	CPU_SET(r->cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) {
		r->err = -errno;
		return NULL;
	}
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		unsigned long before = __atomic_load_n(&r->committed, __ATOMIC_ACQUIRE), after;
		enum outcome got = send_new_flow(r->f, n++);

		after = __atomic_load_n(&r->committed, __ATOMIC_ACQUIRE);
		r->sent++;
		if (got == OTHER) {
			r->other++;
			continue;
		}
		/* Closed changes moved during the send: state(before) .. state(after + 1) all hold. */
		if (after != before)
			continue;
		r->checked++;
		if (!outcome_allowed(got, before) && !r->stale++) {
			r->got = got;
			r->want_one = state_of(before);
			r->want_two = state_of(before + 1);
			r->at = before;
		}
	}
	return NULL;
}

/*
 * A reader on another CPU sends new flows to the VIP without a pause while
 * the controller cycles it through three states (served by A, by B, gone),
 * each change closed (lb_readers_release()) before it counts as made. A
 * frame sent wholly between two counts follows the last change made or the
 * one being made, never an older one: a copy outliving its change would
 * send it where the VIP was two changes ago. The checks come after the
 * reader stopped.
 */
static void test_no_cpu_follows_a_vip_value_older_than_the_last_change(void **state)
{
	struct cache_fixture f;
	struct race r = { 0 };
	pthread_t reader;
	unsigned long s, made = 0;
	int err = 0;

	(void)state;
	NEEDS_ROOT();
	r.cpu = harness_cpu_other();
	if (r.cpu < 0)
		skip(); /* the reader and the controller need a CPU each */
	harness_cpu_pin();
	fixture_make(&f);
	state_set(&f, state_of(0));
	check(lb_readers_release(maps) == 0, "closing the epoch");
	r.f = &f;
	assert_int_equal(pthread_create(&reader, NULL, race_reader, &r), 0);
	for (s = 1; s <= 60 && !err; s++) {
		err = state_of(s) == PASSED ?
			      lb_vip_remove(maps, &f.key) :
			      lb_vip_install(maps, &f.key, VIP_V4_TCP, f.ring,
					     state_of(s) == TO_A ? &f.a : &f.b);
		err = err ?: lb_readers_release(maps);
		if (!err) {
			__atomic_store_n(&r.committed, s, __ATOMIC_RELEASE);
			made = s;
		}
		usleep(2000);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(reader, NULL);
	harness_cpu_unpin();
	check(err == 0, "change %lu: %s", made + 1, strerror(-err));
	check(r.err == 0, "the reader's CPU: %s", strerror(-r.err));
	printf("vip cache: %lu frames on another CPU through 60 changes, %lu checked, %lu stale\n",
	       r.sent, r.checked, r.stale);
	check(r.stale == 0,
	      "%lu frames followed a VIP value older than the last change: the first went %s "
	      "after change %lu, where it was %s or %s", r.stale, outcome_name[r.got], r.at,
	      outcome_name[r.want_one], outcome_name[r.want_two]);
	check(r.other == 0, "%lu frames neither sent to A or B nor passed", r.other);
	check(r.checked >= 1000, "only %lu frames were sent between two changes", r.checked);
	fixture_free(&f);
}

HARNESS_GROUP(vip_cache,
	cmocka_unit_test(test_a_cpu_follows_its_copy_only_while_the_epoch_it_was_made_under_holds),
	cmocka_unit_test(test_a_change_killed_midway_leaves_no_copy_in_use),
	cmocka_unit_test(test_two_vips_of_one_address_keep_their_own_copies),
	cmocka_unit_test(test_no_cpu_follows_a_vip_value_older_than_the_last_change));
