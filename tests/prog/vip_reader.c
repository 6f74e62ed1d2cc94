// SPDX-License-Identifier: GPL-2.0-only
/*
 * A VIP value under a packet: a program that holds a VIP value while the
 * controller updates VIPs back to back still reads the value it started
 * with (the controller's grace periods).
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

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"
#include "vip_reader.skel.h"


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
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
				 .src = "198.18.1.1", .dst = V4_VIP, .sport = 40000,
				 .dport = VIP_TCP_PORT };
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
	      lb_readers_release(maps) == 0, "VIPs A and B in place, nothing owed");
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

HARNESS_GROUP(vip_reader,
	cmocka_unit_test(test_a_vip_value_being_read_survives_back_to_back_vip_updates));
