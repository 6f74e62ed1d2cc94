// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host queries for the controller; see host.h. The neighbour table is read
 * over rtnetlink with libmnl.
 */
#include "host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/capability.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/neighbour.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>

#include <libmnl/libmnl.h>

#include "lb_contract.h"

#define DISCARD_PORT 9
#define NEIGH_POLL_MS 50

int host_iface_addr(const char *ifname, int family, struct addr *out)
{
	struct ifaddrs *all, *i;
	int found = 0;

	if (getifaddrs(&all))
		return -errno;
	for (i = all; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname))
			continue;
		if (family == LB_FAMILY_IPV4 && i->ifa_addr->sa_family == AF_INET) {
			memset(out, 0, sizeof(*out));
			out->family = LB_FAMILY_IPV4;
			memcpy(out->bytes, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			found = 1;
		} else if (family == LB_FAMILY_IPV6 && i->ifa_addr->sa_family == AF_INET6) {
			const struct in6_addr *a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

			/* Global scope only: not link-local, not loopback. */
			if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_LOOPBACK(a))
				continue;
			memset(out, 0, sizeof(*out));
			out->family = LB_FAMILY_IPV6;
			memcpy(out->bytes, a, 16);
			found = 1;
		}
	}
	freeifaddrs(all);
	return found ? 0 : -ENOENT;
}

int host_addrs(struct addr *out, size_t max, size_t *count)
{
	struct ifaddrs *all, *i;

	*count = 0;
	if (getifaddrs(&all))
		return -errno;
	for (i = all; i; i = i->ifa_next) {
		struct addr a = { 0 };
		size_t k;

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a.family = LB_FAMILY_IPV4;
			memcpy(a.bytes, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a.family = LB_FAMILY_IPV6;
			memcpy(a.bytes, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		/* An address on two interfaces is one address. */
		for (k = 0; k < *count && !addr_equal(&out[k], &a); k++)
			;
		if (k < *count)
			continue;
		if (*count == max) {
			freeifaddrs(all);
			return -E2BIG;
		}
		out[(*count)++] = a;
	}
	freeifaddrs(all);
	return 0;
}

int host_iface_mac(const char *ifname, __u8 mac[6])
{
	struct ifreq ifr;
	int fd, err = 0;

	if (strlen(ifname) >= IF_NAMESIZE)
		return -ENODEV;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = errno == ENODEV ? -ENODEV : -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

struct neigh_query {
	const struct addr *want;
	const int *ifindexes;
	size_t ifcount;
	__u8 mac[6];
	int found;
	int elsewhere; /* an interface it was learned on instead, 0 for none */
};

static int neigh_attr(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (mnl_attr_type_valid(attr, NDA_MAX) < 0)
		return MNL_CB_OK;
	tb[type] = attr;
	return MNL_CB_OK;
}

static int neigh_entry(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[NDA_MAX + 1] = { 0 };
	struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct neigh_query *q = data;
	size_t len = q->want->family == LB_FAMILY_IPV4 ? 4 : 16;
	const __u16 usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT;
	size_t i;

	mnl_attr_parse(nlh, sizeof(*ndm), neigh_attr, tb);
	if (!tb[NDA_DST] || !tb[NDA_LLADDR] || mnl_attr_get_payload_len(tb[NDA_DST]) != len ||
	    mnl_attr_get_payload_len(tb[NDA_LLADDR]) != 6 || !(ndm->ndm_state & usable))
		return MNL_CB_OK;
	if (memcmp(mnl_attr_get_payload(tb[NDA_DST]), q->want->bytes, len))
		return MNL_CB_OK;
	for (i = 0; i < q->ifcount; i++)
		if (ndm->ndm_ifindex == q->ifindexes[i]) {
			memcpy(q->mac, mnl_attr_get_payload(tb[NDA_LLADDR]), 6);
			q->found = 1;
			return MNL_CB_OK;
		}
	q->elsewhere = ndm->ndm_ifindex;
	return MNL_CB_OK;
}

/* One dump of the neighbour table of the address's family. */
static int neigh_dump(struct mnl_socket *nl, struct neigh_query *q)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	unsigned int seq = (unsigned int)time(NULL), portid = mnl_socket_get_portid(nl);
	struct ndmsg *ndm;
	ssize_t n;
	int ret;

	nlh->nlmsg_type = RTM_GETNEIGH;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = q->want->family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, neigh_entry, q);
		if (ret < 0)
			return -errno;
		if (ret == MNL_CB_STOP)
			return 0;
	}
	return n < 0 ? -errno : 0;
}

/* Make the kernel resolve the address: one datagram to its discard port. */
void host_neigh_provoke(const struct addr *a)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd;

	if (a->family == LB_FAMILY_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(DISCARD_PORT);
		memcpy(&sin->sin_addr, a->bytes, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(DISCARD_PORT);
		memcpy(&sin6->sin6_addr, a->bytes, 16);
		len = sizeof(*sin6);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (sendto(fd, "", 0, 0, (struct sockaddr *)&ss, len) < 0) {
		/* No route: resolution cannot happen; the caller will say so. */
	}
	close(fd);
}

/* --- next hops -------------------------------------------------------------------- */

struct route_answer {
	int family;
	struct addr hop; /* the gateway, or the destination itself when on-link */
	int oif;
	int have_gateway;
};

static int route_attr(const struct nlattr *attr, void *data)
{
	struct route_answer *r = data;
	size_t alen = r->family == AF_INET ? 4 : 16;

	switch (mnl_attr_get_type(attr)) {
	case RTA_OIF:
		if (mnl_attr_get_payload_len(attr) >= 4)
			r->oif = (int)mnl_attr_get_u32(attr);
		break;
	case RTA_GATEWAY:
		if (mnl_attr_get_payload_len(attr) == alen) {
			memset(&r->hop, 0, sizeof(r->hop));
			r->hop.family = r->family == AF_INET ? LB_FAMILY_IPV4 : LB_FAMILY_IPV6;
			memcpy(r->hop.bytes, mnl_attr_get_payload(attr), alen);
			r->have_gateway = 1;
		}
		break;
	case RTA_VIA: {
		/* An IPv4 route via an IPv6 next hop (RFC 5549). */
		const struct rtvia *via = mnl_attr_get_payload(attr);

		if (mnl_attr_get_payload_len(attr) >= sizeof(*via) + 16 && via->rtvia_family == AF_INET6) {
			memset(&r->hop, 0, sizeof(r->hop));
			r->hop.family = LB_FAMILY_IPV6;
			memcpy(r->hop.bytes, via->rtvia_addr, 16);
			r->have_gateway = 1;
		}
		break;
	}
	}
	return MNL_CB_OK;
}

static int route_reply(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	return mnl_attr_parse(nlh, sizeof(struct rtmsg), route_attr, data);
}

int host_next_hop(const struct addr *dst, struct addr *hop, int *oif, char why[HOST_WHY_MAX])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct route_answer r = { .family = dst->family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6 };
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	unsigned int seq = (unsigned int)time(NULL);
	ssize_t n;
	int err = 0;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "cannot open rtnetlink: %s", strerror(errno));
		goto out;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)r.family;
	rtm->rtm_dst_len = r.family == AF_INET ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, r.family == AF_INET ? 4 : 16, dst->bytes);
	r.hop = *dst;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "asking for a route: %s", strerror(errno));
		goto out;
	}
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0 || mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), route_reply, &r) < 0) {
		err = -(errno ? errno : EHOSTUNREACH);
		snprintf(why, HOST_WHY_MAX, "no route: %s", strerror(-err));
		goto out;
	}
	if (!r.oif) {
		err = -ENETUNREACH;
		snprintf(why, HOST_WHY_MAX, "no route");
		goto out;
	}
	*hop = r.hop;
	*oif = r.oif;
out:
	if (nl)
		mnl_socket_close(nl);
	return err;
}

int host_next_hop_resolve(const struct addr *dst, int timeout_ms, char why[HOST_WHY_MAX])
{
	struct addr hop;
	__u8 mac[6];
	int oif, err;

	err = host_next_hop(dst, &hop, &oif, why);
	if (err)
		return err;
	/* A datagram to the backend makes the kernel resolve the next hop toward it. */
	err = host_neigh_mac(&hop, &oif, 1, mac, timeout_ms, why);
	if (err == -EHOSTUNREACH) {
		char text[ADDR_TEXT_MAX], name[IF_NAMESIZE] = "?";

		addr_format(&hop, text);
		if_indextoname((unsigned int)oif, name);
		snprintf(why, HOST_WHY_MAX, "the next hop %s on %s does not answer after %d ms",
			 text, name, timeout_ms);
	}
	return err;
}

int host_neigh_mac(const struct addr *a, const int *ifindexes, size_t ifcount, __u8 mac[6],
		   int timeout_ms, char why[HOST_WHY_MAX])
{
	struct neigh_query q = { .want = a, .ifindexes = ifindexes, .ifcount = ifcount };
	struct mnl_socket *nl;
	int waited = 0, provoked = 0, err;

	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "cannot open rtnetlink: %s", strerror(errno));
		if (nl)
			mnl_socket_close(nl);
		return err;
	}
	for (;;) {
		err = neigh_dump(nl, &q);
		if (err) {
			snprintf(why, HOST_WHY_MAX, "reading the neighbour table: %s",
				 strerror(-err));
			break;
		}
		if (q.found) {
			memcpy(mac, q.mac, 6);
			break;
		}
		if (waited >= timeout_ms) {
			char name[IF_NAMESIZE] = "?";

			err = -EHOSTUNREACH;
			if (q.elsewhere && if_indextoname((unsigned int)q.elsewhere, name))
				snprintf(why, HOST_WHY_MAX,
					 "it is a neighbour on %s, not on an interface ringlb is "
					 "attached to; give its MAC with --mac", name);
			else
				snprintf(why, HOST_WHY_MAX,
					 "no neighbour entry on an attached interface after %d ms: is "
					 "it on a directly attached network? give its MAC with --mac",
					 timeout_ms);
			break;
		}
		if (!provoked) {
			host_neigh_provoke(a);
			provoked = 1;
		}
		usleep(NEIGH_POLL_MS * 1000);
		waited += NEIGH_POLL_MS;
	}
	mnl_socket_close(nl);
	return err;
}

int host_privileged(void)
{
	cap_flag_value_t bpf = CAP_CLEAR, sys_admin = CAP_CLEAR, net_admin = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return 0;
	if (CAP_IS_SUPPORTED(CAP_BPF))
		cap_get_flag(caps, CAP_BPF, CAP_EFFECTIVE, &bpf);
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &sys_admin);
	cap_get_flag(caps, CAP_NET_ADMIN, CAP_EFFECTIVE, &net_admin);
	cap_free(caps);
	return (bpf == CAP_SET || sys_admin == CAP_SET) && net_admin == CAP_SET;
}

int host_may_verify(void)
{
	cap_flag_value_t perfmon = CAP_CLEAR, sys_admin = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return 0;
	if (CAP_IS_SUPPORTED(CAP_PERFMON))
		cap_get_flag(caps, CAP_PERFMON, CAP_EFFECTIVE, &perfmon);
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &sys_admin);
	cap_free(caps);
	return perfmon == CAP_SET || sys_admin == CAP_SET;
}

int host_bpffs(const char *dir)
{
	struct statfs st;

	return statfs(dir, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* The parent of process @pid, from /proc/PID/stat (after the command's closing parenthesis). */
static int parent_of(int pid)
{
	char path[64], line[512], *end;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && (end = strrchr(line, ')')) &&
	    sscanf(end + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return ppid;
}

int host_mount_ns_own(void)
{
	struct stat self, other;
	char path[64];
	int pid, steps;

	if (stat("/proc/self/ns/mnt", &self))
		return 0;
	/*
	 * PID 1's namespace is the host's, but a sandbox may not let it be read:
	 * then any ancestor in another one (the shell ip netns exec was run from).
	 */
	for (pid = getppid(), steps = 0; pid > 0 && steps < 64; pid = parent_of(pid), steps++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
		if (stat(path, &other) == 0 &&
		    (other.st_dev != self.st_dev || other.st_ino != self.st_ino))
			return 1;
		if (pid == 1)
			break;
	}
	return 0;
}

/* --- connections in the socket table ------------------------------------------------ */

struct conn_count {
	const struct vip_spec *vip;
	unsigned long count;
};

static int conn_entry(const struct nlmsghdr *nlh, void *data)
{
	const struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	struct conn_count *cc = data;
	size_t len = cc->vip->addr.family == LB_FAMILY_IPV4 ? 4 : 16;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return MNL_CB_OK;
	if (m->id.idiag_sport == htons(cc->vip->port) &&
	    memcmp(m->id.idiag_src, cc->vip->addr.bytes, len) == 0)
		cc->count++;
	return MNL_CB_OK;
}

int host_vip_connections(const struct vip_spec *vip, unsigned long *count,
			 char why[HOST_WHY_MAX])
{
	/* Every state that may still receive a client's packet but TIME_WAIT and LISTEN. */
	const __u32 states = 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 8 | 1u << 9 | 1u << 11;
	struct conn_count cc = { .vip = vip };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct inet_diag_req_v2 *req;
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	unsigned int seq = (unsigned int)time(NULL);
	ssize_t n;
	int err = 0, rc;

	*count = 0;
	if (vip->protocol != IPPROTO_TCP) {
		snprintf(why, HOST_WHY_MAX, "only a TCP VIP has connections to count");
		return -EINVAL;
	}
	nl = mnl_socket_open(NETLINK_SOCK_DIAG);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "cannot open sock_diag: %s", strerror(errno));
		goto out;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = vip->addr.family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = states;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "asking for the socket table: %s", strerror(errno));
		goto out;
	}
	do {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		rc = n < 0 ? MNL_CB_ERROR :
			     mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), conn_entry, &cc);
	} while (rc == MNL_CB_OK);
	if (rc == MNL_CB_ERROR) {
		err = -(errno ? errno : EIO);
		snprintf(why, HOST_WHY_MAX, "reading the socket table: %s", strerror(-err));
	}
out:
	if (nl)
		mnl_socket_close(nl);
	*count = cc.count;
	return err;
}

int host_forwarding(const char *ifname, int family)
{
	char path[128], value[8] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/forwarding",
		 family == LB_FAMILY_IPV6 ? "ipv6" : "ipv4", ifname);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(value, sizeof(value), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return atoi(value) != 0;
}
