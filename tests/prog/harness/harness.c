// SPDX-License-Identifier: GPL-2.0-only
/*
 * The harness of every BPF program test: see harness.h.
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
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "decap.h"
#include "decap.skel.h"
#include "harness.h"

/* --- any program ------------------------------------------------------------------------ */

__u32 harness_run(int prog_fd, const unsigned char *in, size_t len, unsigned char *out,
		  size_t *out_len, __u32 repeat, __u32 *duration)
{
	unsigned char scratch[PKT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (__u32)len,
		    .data_out = out ? out : scratch, .data_size_out = PKT_MAX, .repeat = repeat);
	int err = bpf_prog_test_run_opts(prog_fd, &opts);

	check(err == 0, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	if (out_len)
		*out_len = opts.data_size_out;
	if (duration)
		*duration = opts.duration;
	return opts.retval;
}

static cpu_set_t cpus_before;

void harness_cpu_pin(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	assert_int_equal(sched_getaffinity(0, sizeof(cpus_before), &cpus_before), 0);
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
}

int harness_cpu_other(void)
{
	cpu_set_t allowed;
	int here = sched_getcpu(), c;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -1;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (c != here && CPU_ISSET(c, &allowed))
			return c;
	return -1;
}

void harness_cpu_unpin(void)
{
	sched_setaffinity(0, sizeof(cpus_before), &cpus_before);
}

__u64 harness_percpu_sum(int map_fd, __u32 key, size_t words, size_t word)
{
	int cpus = libbpf_num_possible_cpus(), c;
	__u64 *v = calloc((size_t)(cpus > 0 ? cpus : 1) * words, sizeof(__u64)), sum = 0;

	check(v && cpus > 0, "out of memory");
	check(bpf_map_lookup_elem(map_fd, &key, v) == 0, "per-CPU value %u: %s", key,
	      strerror(errno));
	for (c = 0; c < cpus; c++)
		sum += v[(size_t)c * words + word];
	free(v);
	return sum;
}

int harness_verifier_budget(int prog_fd, const char *name, __u32 budget)
{
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &info_len)) {
		fprintf(stderr, "%s: reading its program info: %s\n", name, strerror(errno));
		return -1;
	}
	printf("verifier: %s loaded, %u instructions processed, %u xlated bytes\n", name,
	       info.verified_insns, info.xlated_prog_len);
	if (info.verified_insns > budget) {
		fprintf(stderr, "%s: the verifier processed %u instructions, over the budget of %u\n",
			name, info.verified_insns, budget);
		return -1;
	}
	return 0;
}

int harness_load(const char *test, const __u64 key[2], const __u8 mac[6], struct lb_prog **out)
{
	struct lb_load_opts opts = { .secret = { key[0], key[1] } };
	int rule = root_rule(test), err;

	if (rule)
		return rule;
	memcpy(opts.iface_mac, mac, 6);
	err = lb_prog_load(out, &opts);
	if (err) {
		fprintf(stderr, "%s: loading the program: %s\n", test, strerror(-err));
		return -1;
	}
	if (harness_verifier_budget(lb_prog_fd(*out), "ringlb_xdp", HARNESS_BUDGET_XDP)) {
		lb_prog_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

__u32 harness_run_on(int prog_fd, int ifindex, const unsigned char *in, size_t len,
		     unsigned char *out, size_t *out_len)
{
	struct xdp_md md = { .data_end = (__u32)len, .ingress_ifindex = (__u32)ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = PKT_MAX, .ctx_in = &md,
		    .ctx_size_in = sizeof(md), .repeat = 1);

	check(bpf_prog_test_run_opts(prog_fd, &opts) == 0, "BPF_PROG_TEST_RUN: %s",
	      strerror(errno));
	if (out_len)
		*out_len = opts.data_size_out;
	return opts.retval;
}

const __u8 harness_next_hop_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x11, 0x01 };
const __u8 harness_e0_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x11, 0x02 };

/* The namespace the process started in, while the tests run in another. */
static int home_ns = -1;

int harness_net_enter(void)
{
	static const char *const setup[] = {
		"ip link add e0 type veth peer name e1",
		"ip link set lo up",
		"ip link set e0 address 02:00:00:00:11:02 up",
		"ip link set e1 up",
		"ip addr add " HARNESS_SOURCE4 "/24 dev e0",
		"ip -6 addr add " HARNESS_SOURCE6 "/64 dev e0 nodad",
		"ip neigh replace 198.18.11.1 lladdr 02:00:00:00:11:01 dev e0 nud permanent",
		"ip -6 neigh replace 2001:db8:11::1 lladdr 02:00:00:00:11:01 dev e0 nud permanent",
		"ip route add default via 198.18.11.1",
		"ip -6 route add default via 2001:db8:11::1",
		"ip route add 198.18.30.0/24 via 198.18.11.5",
		"ip route add unreachable 198.18.40.0/24",
		"sysctl -qw net.ipv4.conf.e0.forwarding=1 net.ipv6.conf.e0.forwarding=1",
	};
	size_t i;
	int ifindex;

	home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home_ns < 0 || unshare(CLONE_NEWNET))
		return -1;
	for (i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
		if (system(setup[i]) != 0)
			return -1;
	ifindex = (int)if_nametoindex("e0");
	return ifindex ? ifindex : -1;
}

void harness_net_leave(void)
{
	if (home_ns >= 0) {
		setns(home_ns, CLONE_NEWNET);
		close(home_ns);
		home_ns = -1;
	}
}

/* One entry of a decap set: @len bits of @text past the family (0 for an exact-match set). */
static int decap_entry(int fd, int family, const char *text, __u32 len)
{
	struct lb_decap_from_key k = { .prefixlen = len, .family = (__u8)family };
	__u8 a[16], one = 1;

	pkt_addr(family, text, a);
	memcpy(k.addr, a, family == LB_FAMILY_IPV4 ? 4 : 16);
	return bpf_map_update_elem(fd, &k, &one, BPF_ANY);
}

struct decap_maps harness_decap_maps(struct decap_bpf *d)
{
	return (struct decap_maps){
		.from = bpf_map__fd(d->maps.decap_from), .local = bpf_map__fd(d->maps.decap_local),
		.self = bpf_map__fd(d->maps.decap_self), .vip = bpf_map__fd(d->maps.decap_vip),
		.config = bpf_map__fd(d->maps.decap_config), .stats = bpf_map__fd(d->maps.decap_stats),
	};
}

int harness_decap_self(struct decap_bpf *d, const char *const *texts, size_t count)
{
	struct decap_maps m = harness_decap_maps(d);
	struct addr addrs[8];
	size_t i;

	if (count > sizeof(addrs) / sizeof(addrs[0]))
		return -E2BIG;
	for (i = 0; i < count; i++) {
		memset(&addrs[i], 0, sizeof(addrs[i]));
		addrs[i].family = strchr(texts[i], ':') ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4;
		pkt_addr(addrs[i].family, texts[i], addrs[i].bytes);
	}
	return decap_self_set(&m, addrs, count);
}

struct decap_bpf *harness_decap_open(void)
{
	static const char *const self[] = { HARNESS_DECAP_LOCAL4, HARNESS_DECAP_LOCAL6 };
	struct lb_decap_config cfg = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	struct decap_bpf *skel = decap_bpf__open();
	struct addr vips[2] = { { .family = LB_FAMILY_IPV4 }, { .family = LB_FAMILY_IPV6 } };
	struct bpf_map *map;
	__u32 zero = 0;
	int from;

	if (!skel)
		return NULL;
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_pin_path(map, NULL);
	if (decap_bpf__load(skel) ||
	    harness_verifier_budget(bpf_program__fd(skel->progs.ringlb_decap), "ringlb_decap",
				    HARNESS_BUDGET_DECAP))
		goto fail;
	pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_VIP4, vips[0].bytes);
	pkt_addr(LB_FAMILY_IPV6, HARNESS_DECAP_VIP6, vips[1].bytes);
	from = bpf_map__fd(skel->maps.decap_from);
	if (decap_entry(from, LB_FAMILY_IPV4, HARNESS_SOURCE4, 32 + 32) ||
	    decap_entry(from, LB_FAMILY_IPV6, HARNESS_SOURCE6, 32 + 128) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.decap_config), &zero, &cfg, BPF_ANY) ||
	    harness_decap_self(skel, self, 2) ||
	    decap_vips_set(bpf_map__fd(skel->maps.decap_vip), vips, 2))
		goto fail;
	return skel;
fail:
	decap_bpf__destroy(skel);
	return NULL;
}
