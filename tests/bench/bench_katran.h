/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Katran's own XDP balancer beside ringlb in `make bench` (part 1g), when a
 * developer built it from Katran's sources outside this tree and names the
 * object in KATRAN_BPF_OBJ. Only this harness is ours: it loads that object
 * with libbpf and fills its maps as Katran's userspace would for one IPv4 TCP
 * VIP. No Katran code is in the repository; docs/testing.md says how to build
 * the object.
 */
#ifndef RINGLB_TESTS_BENCH_KATRAN_H
#define RINGLB_TESTS_BENCH_KATRAN_H

#include <linux/types.h>

struct katran;

/*
 * KATRAN_CONN_RATE_MAX - new connections a CPU pins per second before
 * Katran's program stops pinning them (its MAX_CONN_RATE, compiled into the
 * object: this is its default). A run of fresh flows must stay below it.
 */
#define KATRAN_CONN_RATE_MAX 125000

/**
 * struct katran_setup - the VIP Katran's program is to serve.
 * @vip: its IPv4 address (network order)
 * @port: its TCP port (network order)
 * @real: every real's IPv4 address (network order; one host, as in 1g)
 * @reals: how many reals (1 .. 4095)
 * @mac: the next hop's MAC (Katran reads it from its control array)
 * @flows: entries of each CPU's flow table
 */
struct katran_setup {
	__be32 vip;
	__be16 port;
	__be32 real;
	__u32 reals;
	__u8 mac[6];
	__u32 flows;
};

/**
 * katran_open() - load the object at @path and fill its maps for @setup.
 * @out: the loaded program, for katran_fd(), katran_clear_rate() and
 *       katran_close()
 *
 * Return: 0, or -errno (the object's maps not laid out as this harness
 * knows them: -EPROTO, with a line on stderr saying which).
 */
int katran_open(const char *path, const struct katran_setup *setup, struct katran **out);

/** katran_fd() - the balancer program's fd, for a program array. */
int katran_fd(const struct katran *k);

/**
 * katran_clear_rate() - reset the program's count of new connections this
 * second, so that a run of fresh flows pins every one (as ringlb's, with no
 * rate set). Return: 0 or -errno.
 */
int katran_clear_rate(struct katran *k);

/**
 * katran_misses() - TCP packets other than SYNs that found no flow in the
 * program's table so far, every CPU's (its LRU miss counter): an
 * established run must add none. Read by harness_percpu_sum(), which stops
 * the bench when the map cannot be read.
 */
__u64 katran_misses(const struct katran *k);

/** katran_close() - unload it (NULL: nothing). */
void katran_close(struct katran *k);

#endif /* RINGLB_TESTS_BENCH_KATRAN_H */
