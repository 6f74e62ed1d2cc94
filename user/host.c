// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host queries for the controller; see host.h. The neighbour table is read
 * over rtnetlink with libmnl.
 */
#include "host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
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
#include <linux/rtnetlink.h>

#include <libmnl/libmnl.h>

#include "lb_contract.h"

#define DISCARD_PORT 9
#define NEIGH_POLL_MS 50
#define SECRET_HEX_LEN 32

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
static void neigh_provoke(const struct addr *a)
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
			neigh_provoke(a);
			provoked = 1;
		}
		usleep(NEIGH_POLL_MS * 1000);
		waited += NEIGH_POLL_MS;
	}
	mnl_socket_close(nl);
	return err;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int secret_read(int fd, __u64 secret[2], char why[HOST_WHY_MAX])
{
	char text[SECRET_HEX_LEN + 2];
	ssize_t n = read(fd, text, sizeof(text));
	int i;

	if (n < SECRET_HEX_LEN || (n > SECRET_HEX_LEN && text[SECRET_HEX_LEN] != '\n')) {
		snprintf(why, HOST_WHY_MAX, "the secret file must hold 32 lower-case hex digits");
		return -EINVAL;
	}
	secret[0] = secret[1] = 0;
	for (i = 0; i < SECRET_HEX_LEN; i++) {
		int v = hex_value(text[i]);

		if (v < 0) {
			snprintf(why, HOST_WHY_MAX,
				 "the secret file must hold 32 lower-case hex digits");
			return -EINVAL;
		}
		secret[i / 16] = secret[i / 16] << 4 | (__u64)v;
	}
	return 0;
}

static int secret_create(const char *path, __u64 secret[2], char why[HOST_WHY_MAX])
{
	char text[SECRET_HEX_LEN + 2];
	int fd, err = 0;

	if (getrandom(secret, 2 * sizeof(__u64), 0) != 2 * sizeof(__u64)) {
		snprintf(why, HOST_WHY_MAX, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	snprintf(text, sizeof(text), "%016llx%016llx\n", (unsigned long long)secret[0],
		 (unsigned long long)secret[1]);
	/* O_EXCL: two operators racing to create it must not end with two secrets. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "creating %s: %s", path, strerror(errno));
		return err;
	}
	if (write(fd, text, SECRET_HEX_LEN + 1) != SECRET_HEX_LEN + 1 || fsync(fd)) {
		err = -EIO;
		snprintf(why, HOST_WHY_MAX, "writing %s failed", path);
		unlink(path);
	}
	close(fd);
	return err;
}

int host_secret_write(const char *path, const __u64 secret[2], char why[HOST_WHY_MAX])
{
	char text[SECRET_HEX_LEN + 2], tmp[PATH_MAX];
	int fd, err = 0;

	snprintf(text, sizeof(text), "%016llx%016llx\n", (unsigned long long)secret[0],
		 (unsigned long long)secret[1]);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "creating %s: %s", tmp, strerror(errno));
		memset(text, 0, sizeof(text));
		return err;
	}
	if (write(fd, text, SECRET_HEX_LEN + 1) != SECRET_HEX_LEN + 1 || fsync(fd))
		err = -EIO;
	memset(text, 0, sizeof(text));
	if (close(fd) && !err)
		err = -EIO;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		snprintf(why, HOST_WHY_MAX, "writing %s: %s", path, strerror(-err));
		unlink(tmp);
	}
	return err;
}

int host_secret(const char *path, int create, __u64 secret[2], char why[HOST_WHY_MAX])
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && create) {
		err = secret_create(path, secret, why);
		if (err != -EEXIST)
			return err;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0) {
		err = -errno;
		snprintf(why, HOST_WHY_MAX, "%s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		close(fd);
		snprintf(why, HOST_WHY_MAX, "%s is readable by others; chmod 600 it", path);
		return -EPERM;
	}
	err = secret_read(fd, secret, why);
	close(fd);
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
