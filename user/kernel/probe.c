// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client path for health checks (probe.h): the probe program on lo's
 * egress through libbpf's TC API, and the policy rule and local routes
 * through rtnetlink (libmnl). Everything is made idempotently, so a daemon
 * started after one that was killed takes the path over as it is.
 */
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
#include <bpf/libbpf.h>

#include "host.h"
#include "lb_contract.h"
#include "probe.skel.h"

/* The filter's place on lo's egress hook. */
#define PROBE_TC_HANDLE 1
#define PROBE_TC_PRIORITY 1

struct probe_path {
	struct probe_bpf *skel;
};

/* One rtnetlink request, acknowledged. Return: 0 or -errno (the kernel's). */
static int nl_request(struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	unsigned int seq = (unsigned int)time(NULL);
	ssize_t n;
	int err = 0;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto out;
	}
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		err = -errno;
		goto out;
	}
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0 || mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
		err = -errno;
out:
	if (nl)
		mnl_socket_close(nl);
	return err;
}

/* "fwmark LB_PROBE_MARK/LB_PROBE_MARK_MASK lookup PROBE_TABLE", added or deleted. */
static int probe_rule(int family, int add)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct fib_rule_hdr *frh;

	nlh->nlmsg_type = add ? RTM_NEWRULE : RTM_DELRULE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	frh = mnl_nlmsg_put_extra_header(nlh, sizeof(*frh));
	frh->family = (__u8)family;
	frh->action = FR_ACT_TO_TBL;
	mnl_attr_put_u32(nlh, FRA_PRIORITY, PROBE_RULE_PRIORITY);
	mnl_attr_put_u32(nlh, FRA_FWMARK, LB_PROBE_MARK);
	mnl_attr_put_u32(nlh, FRA_FWMASK, LB_PROBE_MARK_MASK);
	mnl_attr_put_u32(nlh, FRA_TABLE, PROBE_TABLE);
	return nl_request(nlh);
}

/* "local default dev lo table PROBE_TABLE", added (or replaced) or deleted. */
static int probe_route(int family, int add)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;

	nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)family;
	rtm->rtm_table = RT_TABLE_UNSPEC;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_HOST;
	rtm->rtm_type = RTN_LOCAL;
	mnl_attr_put_u32(nlh, RTA_TABLE, PROBE_TABLE);
	mnl_attr_put_u32(nlh, RTA_OIF, if_nametoindex("lo"));
	return nl_request(nlh);
}

int probe_path_setup(const struct lb_maps *maps, const char *ifname, struct probe_path **out,
		     char why[PROBE_WHY_MAX])
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, tc, .handle = PROBE_TC_HANDLE,
			    .priority = PROBE_TC_PRIORITY, .flags = BPF_TC_F_REPLACE);
	static const int families[] = { AF_INET, AF_INET6 };
	struct probe_path *p = calloc(1, sizeof(*p));
	unsigned int ifindex = if_nametoindex(ifname);
	__u8 mac[6];
	size_t i;
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (!ifindex || host_iface_mac(ifname, mac)) {
		snprintf(why, PROBE_WHY_MAX, "interface %s: %s", ifname, strerror(ENODEV));
		err = -ENODEV;
		goto kernel_fail;
	}
	p->skel = probe_bpf__open();
	if (!p->skel) {
		err = -errno;
		snprintf(why, PROBE_WHY_MAX, "cannot open the probe program: %s", strerror(-err));
		goto kernel_fail;
	}
	p->skel->rodata->egress_ifindex = ifindex;
	memcpy((void *)p->skel->rodata->egress_mac, mac, sizeof(mac));
	err = bpf_map__reuse_fd(p->skel->maps.backends, maps->backends) ?:
	      bpf_map__reuse_fd(p->skel->maps.config, maps->config) ?: probe_bpf__load(p->skel);
	if (err) {
		snprintf(why, PROBE_WHY_MAX, "cannot load the probe program: %s", strerror(-err));
		goto kernel_fail;
	}
	hook.ifindex = (int)if_nametoindex("lo");
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		snprintf(why, PROBE_WHY_MAX, "cannot add a clsact qdisc to lo: %s", strerror(-err));
		goto kernel_fail;
	}
	tc.prog_fd = bpf_program__fd(p->skel->progs.ringlb_probe);
	err = bpf_tc_attach(&hook, &tc);
	if (err) {
		snprintf(why, PROBE_WHY_MAX, "cannot attach the probe program to lo: %s",
			 strerror(-err));
		goto kernel_fail;
	}
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		err = probe_route(families[i], 1);
		if (err) {
			snprintf(why, PROBE_WHY_MAX, "cannot add the probes' local route (table %d): %s",
				 PROBE_TABLE, strerror(-err));
			goto kernel_fail;
		}
		err = probe_rule(families[i], 1);
		if (err && err != -EEXIST) {
			snprintf(why, PROBE_WHY_MAX, "cannot add the probes' rule (fwmark 0x%x): %s",
				 LB_PROBE_MARK, strerror(-err));
			goto kernel_fail;
		}
	}
	*out = p;
	return 0;
kernel_fail:
	probe_path_close(p);
	return err;
}

void probe_path_close(struct probe_path *p)
{
	if (!p)
		return;
	probe_bpf__destroy(p->skel);
	free(p);
}

void probe_path_remove(void)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, tc, .handle = PROBE_TC_HANDLE,
			    .priority = PROBE_TC_PRIORITY);

	probe_rule(AF_INET, 0);
	probe_rule(AF_INET6, 0);
	probe_route(AF_INET, 0);
	probe_route(AF_INET6, 0);
	hook.ifindex = (int)if_nametoindex("lo");
	bpf_tc_detach(&hook, &tc);
}
