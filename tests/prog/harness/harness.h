/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The harness every test of a BPF program shares (the program tests of
 * tests/prog/, test_hostile, the benchmark): loading the data path with
 * private maps, running a frame through a program with BPF_PROG_TEST_RUN,
 * summing per-CPU counters, and an equality check that prints both values.
 *
 * Include after <cmocka.h>.
 */
#ifndef RINGLB_TESTS_HARNESS_H
#define RINGLB_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <linux/types.h>

#include "check.h"
#include "decap.h"
#include "lb.h"
#include "packets.h"
#include "ring.h"
#include "testutil.h"

/* --- any program: load, run, count ------------------------------------------------------ */

/**
 * harness_run() - one BPF_PROG_TEST_RUN of @prog_fd on @in.
 * @out: the frame the program leaves (PKT_MAX bytes), or NULL
 * @out_len: its length, or NULL
 * @repeat: runs (1 for a test; many for a benchmark)
 * @duration: mean nanoseconds per run, or NULL
 * Return: the program's verdict; a failed run fails the test.
 */
__u32 harness_run(int prog_fd, const unsigned char *in, size_t len, unsigned char *out,
		  size_t *out_len, __u32 repeat, __u32 *duration);

/**
 * harness_cpu_pin() - run the calling thread on the CPU it is on, until
 * harness_cpu_unpin(): for tests of per-CPU state (a test run executes on
 * the caller's CPU). A failure fails the test.
 */
void harness_cpu_pin(void);

/** harness_cpu_unpin() - the thread's CPUs from before harness_cpu_pin() again. */
void harness_cpu_unpin(void);

/** harness_cpu_other() - a CPU the thread may run on other than the one it is on, or -1. */
int harness_cpu_other(void);

/** harness_percpu_sum() - word @word of a per-CPU value of @words 64-bit words, summed. */
__u64 harness_percpu_sum(int map_fd, __u32 key, size_t words, size_t word);

/*
 * HARNESS_BUDGET_XDP, HARNESS_BUDGET_DECAP - instructions the verifier may
 * process for the data path (with or without AES) and for the decap
 * program: about a sixth over what they took on 2026-12-05 (ringlb_xdp
 * 391,873 since the flow table is sets of ways, 289,176 with the kernel's
 * LRU hash; 379,540 and 276,544 without AES; ringlb_decap 313,021 since its
 * own addresses are slots as its VIPs are, 225,971 before), so a change that
 * grows the verifier's work by more is seen here, long before the kernel's
 * limit of 1,000,000 refuses a load (docs/traps.md). Read from
 * bpf_prog_info.verified_insns (Linux 5.16 and later; 0 before).
 */
#define HARNESS_BUDGET_XDP 450000u
#define HARNESS_BUDGET_DECAP 375000u

/**
 * harness_verifier_budget() - the verifier's work on a program just loaded,
 * said on stdout, and held to a budget.
 * @prog_fd: the program
 * @name: its name, for the messages
 * @budget: the most instructions it may have processed
 *
 * Return: 0, or -1 (said on stderr) when over @budget or unreadable.
 */
int harness_verifier_budget(int prog_fd, const char *name, __u32 budget);

/**
 * harness_load() - the data path with private maps, on @secret and with
 * @mac as its interface's MAC; the verifier's figures printed once.
 * Return: 0; 1 to skip (not root, said on stderr); -1 on failure.
 */
int harness_load(const char *test, const __u64 secret[2], const __u8 mac[6],
		 struct lb_prog **prog);

/**
 * harness_run_on() - harness_run() as if the frame arrived on @ifindex (the
 * FIB lookups of encapsulation need a real ingress interface).
 */
__u32 harness_run_on(int prog_fd, int ifindex, const unsigned char *in, size_t len,
		     unsigned char *out, size_t *out_len);

/*
 * The balancer's side of a routed network, in a network namespace of its
 * own: veth e0 (02:00:00:00:11:02) with HARNESS_SOURCE4/6, a default route
 * via a next hop with a permanent neighbour (HARNESS_NEXT_HOP_MAC), a route
 * via a next hop without one (198.18.30.0/24), an unreachable 198.18.40.0/24,
 * forwarding on.
 */
#define HARNESS_SOURCE4 "198.18.11.2"
#define HARNESS_SOURCE6 "2001:db8:11::2"
extern const __u8 harness_next_hop_mac[6];
extern const __u8 harness_e0_mac[6];

/* The decap program's test set-up: trusted sources and local addresses. */
#define HARNESS_DECAP_LOCAL4 "198.18.13.11"
#define HARNESS_DECAP_LOCAL6 "2001:db8:13::11"
/* Its VIPs (the tests' V4_VIP and V6_VIP): the inner destinations it takes. */
#define HARNESS_DECAP_VIP4 "198.18.0.100"
#define HARNESS_DECAP_VIP6 "2001:db8::100"

struct decap_bpf;

/**
 * harness_decap_open() - the decap program with private maps, accepting
 * HARNESS_SOURCE4/6 (as /32 and /128) to HARNESS_DECAP_LOCAL4/6 around
 * packets to HARNESS_DECAP_VIP4/6, GUE on LB_GUE_PORT_DEFAULT. NULL on failure. Free with decap_bpf__destroy().
 */
struct decap_bpf *harness_decap_open(void);

/** harness_decap_maps() - the descriptors of decap program @d's maps, as decap.h holds them. */
struct decap_maps harness_decap_maps(struct decap_bpf *d);

/**
 * harness_decap_self() - make the @count addresses in @texts (IPv4 or IPv6,
 * at most 8) the host's own for decap program @d, as the controller does
 * (decap_self_set()). Return: 0 or -errno.
 */
int harness_decap_self(struct decap_bpf *d, const char *const *texts, size_t count);

/** harness_net_enter() - enter that namespace: e0's ifindex, or -1. */
int harness_net_enter(void);

/** harness_net_leave() - back to the namespace the process started in. */
void harness_net_leave(void);

#endif /* RINGLB_TESTS_HARNESS_H */
