/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the controller asks of the host: an interface's MAC and addresses,
 * a neighbour's MAC (resolving it when the host does not know it yet), the
 * next hop toward an address, the connections to a VIP in the socket table,
 * and whether the caller may change the data path.
 */
#ifndef RINGLB_HOST_H
#define RINGLB_HOST_H

#include <stddef.h>
#include <linux/types.h>

#include "addr.h"

/** HOST_WHY_MAX - room for an explanation of a failure. */
#define HOST_WHY_MAX 192

/** host_iface_mac() - an interface's MAC. Return: 0, -ENODEV. */
int host_iface_mac(const char *ifname, __u8 mac[6]);

/**
 * host_neigh_mac() - a directly attached host's MAC from the neighbour table.
 * @a: the host's address
 * @ifindexes: the interfaces the MAC must have been learned on (those the
 *             program is attached to: a MAC learned elsewhere belongs to
 *             another network)
 * @ifcount: how many
 * @mac: its MAC
 * @timeout_ms: how long to wait for resolution when the table has no usable
 *              entry; resolution is triggered by sending the host one UDP
 *              datagram to the discard port
 * @why: on failure, what happened
 */
int host_neigh_mac(const struct addr *a, const int *ifindexes, size_t ifcount, __u8 mac[6],
		   int timeout_ms, char why[HOST_WHY_MAX]);

/**
 * host_neigh_provoke() - one empty UDP datagram to @a: the kernel resolves
 * the neighbour of the next hop toward it, without waiting here.
 */
void host_neigh_provoke(const struct addr *a);

/** host_iface_addr() - an interface's first address of @family (IPv6: global scope). */
int host_iface_addr(const char *ifname, int family, struct addr *out);

/** host_addrs() - every address of this host; -E2BIG when it has more than @max. */
int host_addrs(struct addr *out, size_t max, size_t *count);

/**
 * host_next_hop() - where the kernel routes @dst: the gateway (or @dst
 * itself when it is on a link) and the output interface.
 */
int host_next_hop(const struct addr *dst, struct addr *hop, int *oif, char why[HOST_WHY_MAX]);

/**
 * host_next_hop_resolve() - make sure the neighbour entry of the next hop
 * toward @dst is there (the XDP program's FIB lookup needs it), resolving
 * it if needed: waits up to @timeout_ms.
 */
int host_next_hop_resolve(const struct addr *dst, int timeout_ms, char why[HOST_WHY_MAX]);

/**
 * host_privileged() - may this process load programs and change maps?
 * Return: 1 with CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN, else 0.
 */
int host_privileged(void);

/**
 * host_forwarding() - is forwarding on for @family on interface @ifname
 * (net.ipv4.conf.IFACE.forwarding, net.ipv6.conf.IFACE.forwarding, of this
 * process's network namespace)? The kernel's FIB answers an XDP program
 * nothing on an interface where it is off.
 * Return: 1, 0, or -errno when it cannot be read.
 */
int host_forwarding(const char *ifname, int family);

/**
 * host_may_verify() - may this process have the verifier accept the data
 * path? Without CAP_PERFMON (or CAP_SYS_ADMIN) the verifier refuses pointer
 * arithmetic the program does (docs/traps.md).
 */
int host_may_verify(void);

/**
 * host_bpffs() - is @dir on a mounted BPF filesystem?
 * Return: 1, 0 when it is not (or does not exist).
 */
int host_bpffs(const char *dir);

/**
 * host_mount_ns_own() - does this process live in a mount namespace other
 * than the host's (what `ip netns exec` makes for each command): another
 * than PID 1's or than any ancestor's that can be read? A filesystem
 * mounted there goes when the last process in it ends.
 * Return: 1, or 0 (also when none can be read).
 */
int host_mount_ns_own(void);

/**
 * host_vip_connections() - this host's TCP connections to a VIP, from its
 * socket table (sock_diag): every state but LISTEN and TIME_WAIT, request
 * sockets included.
 * Return: 0 and @count, or -errno with @why (-EINVAL for a UDP VIP).
 */
int host_vip_connections(const struct vip_spec *vip, unsigned long *count,
			 char why[HOST_WHY_MAX]);

#endif /* RINGLB_HOST_H */
