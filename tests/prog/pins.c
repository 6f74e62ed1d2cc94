// SPDX-License-Identifier: GPL-2.0-only
/*
 * Instances share pinned maps, and a pinned link attaches the program to an
 * interface until the pin is removed.
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
#include <dirent.h>
#include <net/if.h>
#include <sched.h>
#include <sys/wait.h>
#include <linux/if_link.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"


static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

static void test_instances_share_pinned_maps(void **state)
{
	struct lb_load_opts opts = { .secret = { 1, 2 }, .flow_entries = 4096 };
	struct lb_prog *first = NULL, *second = NULL;
	struct lb_flow_table made;
	struct lb_maps pinned;
	__u32 zero = 0;
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	char dir[256];
	int err;

	(void)state;
	NEEDS_ROOT();
	err = bpffs_dir(dir, sizeof(dir));
	check(err == 0, "bpffs: %s", strerror(-err));
	opts.pin_dir = dir;
	err = lb_prog_load(&first, &opts);
	check(err == 0, "first instance: %s", strerror(-err));
	check_eq(bpf_map_lookup_elem(lb_prog_maps(first)->flow_table, &zero, &made), 0);
	check(made.key[0] || made.key[1], "the flow table has no key of its own");
	opts.flow_entries = 0;
	err = lb_prog_load(&second, &opts);
	check(err == 0, "second instance: %s", strerror(-err));
	check(map_id(lb_prog_maps(first)->rings[3]) == map_id(lb_prog_maps(second)->rings[3]),
	      "the second instance did not reuse the pinned rings map");
	check(map_id(lb_prog_maps(first)->flows) == map_id(lb_prog_maps(second)->flows),
	      "the second instance did not reuse the pinned flow table");
	err = lb_maps_open_pinned(&pinned, dir);
	check(err == 0, "open pinned maps: %s", strerror(-err));
	check(map_id(pinned.backends) == map_id(lb_prog_maps(first)->backends),
	      "pinned backends map is not the loaded one");
	check(bpf_obj_get_info_by_fd(pinned.flows, &info, &info_len) == 0, "flow table info");
	check_eq(info.max_entries * LB_FLOW_WAYS, 4096);
	{
		struct lb_flow_table t;

		/* Made once, by the first: the second and the pins keep its key. */
		check_eq(bpf_map_lookup_elem(pinned.flow_table, &zero, &t), 0);
		check_eq(t.sets, info.max_entries);
		check(!memcmp(t.key, made.key, sizeof(t.key)), "the flow table's key changed");
	}
	lb_maps_close(&pinned);
	lb_prog_close(first);
	lb_prog_close(second);
	pins_remove(dir);
}

/* The names in @dir, sorted and joined by spaces. */
static void pins_list(const char *dir, char *out, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort), i;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.')
			snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? " " : "",
				 names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/*
 * The shared maps are pinned by name under the pin directory, all of them
 * and nothing else (the program's LB_PINNED maps); without a pin
 * directory, nothing is pinned anywhere.
 */
static void test_maps_are_pinned_by_name_and_only_when_asked(void **state)
{
	struct lb_load_opts opts = { .secret = { 5, 6 } };
	struct lb_prog *p = NULL;
	char dir[256], names[512], root_before[4096], root_after[4096];
	int err;

	(void)state;
	NEEDS_ROOT();
	err = bpffs_dir(dir, sizeof(dir));
	check(err == 0, "bpffs: %s", strerror(-err));
	opts.pin_dir = dir;
	err = lb_prog_load(&p, &opts);
	check(err == 0, "load with a pin directory: %s", strerror(-err));
	lb_prog_close(p);
	pins_list(dir, names, sizeof(names));
	check(strcmp(names, "backend_stats backends config control flow_rate flow_sets flow_table history icmp_budget "
			    "next_hop_stats quic_ciphers quic_servers reason_stats rings_0 rings_1 rings_2 rings_3 "
			    "source_heads source_sets "
			    "vip_epoch vip_refused vip_stats vips") == 0,
	      "pinned: '%s'", names);
	pins_remove(dir);
	pins_list("/sys/fs/bpf", root_before, sizeof(root_before));
	opts.pin_dir = NULL;
	err = lb_prog_load(&p, &opts);
	check(err == 0, "load with private maps: %s", strerror(-err));
	lb_prog_close(p);
	pins_list("/sys/fs/bpf", root_after, sizeof(root_after));
	check(strcmp(root_before, root_after) == 0, "private maps pinned something: '%s' -> '%s'",
	      root_before, root_after);
}

/*
 * Attach natively to a veth in a private network namespace (a child process
 * made with unshare, so nothing leaks), check the kernel reports a driver-mode
 * XDP program, and detach by removing the pinned link.
 */
static void test_attach_native_with_pinned_link_and_detach(void **state)
{
	char dir[256];
	pid_t child;
	int status, err;

	(void)state;
	NEEDS_ROOT();
	err = bpffs_dir(dir, sizeof(dir));
	check(err == 0, "bpffs: %s", strerror(-err));
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct lb_load_opts opts = { .secret = { 3, 4 } };
		LIBBPF_OPTS(bpf_xdp_query_opts, query);
		struct lb_prog *p = NULL;
		char link[512];
		int ifindex;

		if (unshare(CLONE_NEWNET) || system("ip link add rlb0 type veth peer name rlb1 && "
						     "ip link set rlb0 up && ip link set rlb1 up"))
			_exit(10);
		ifindex = (int)if_nametoindex("rlb0");
		snprintf(link, sizeof(link), "%s/link", dir);
		opts.pin_dir = dir;
		if (!ifindex || lb_prog_load(&p, &opts))
			_exit(11);
		if (lb_attach(p, ifindex, LB_ATTACH_NATIVE, link))
			_exit(12);
		lb_prog_close(p); /* the pinned link keeps it attached */
		if (bpf_xdp_query(ifindex, 0, &query) || query.attach_mode != XDP_ATTACHED_DRV)
			_exit(13);
		if (lb_detach(link, ifindex) || bpf_xdp_query(ifindex, 0, &query) ||
		    query.attach_mode != XDP_ATTACHED_NONE)
			_exit(14);
		_exit(0);
	}
	assert_true(waitpid(child, &status, 0) == child);
	pins_remove(dir);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "attach/detach in a namespace failed at step %d (10 veth, 11 load, 12 attach, "
	      "13 not native, 14 detach)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

HARNESS_GROUP(pins,
	cmocka_unit_test(test_instances_share_pinned_maps),
	cmocka_unit_test(test_maps_are_pinned_by_name_and_only_when_asked),
	cmocka_unit_test(test_attach_native_with_pinned_link_and_detach));
