/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The client path for health checks on this host: the probe program
 * (bpf/probe.bpf.c) on lo's egress, and the policy rule that routes the
 * daemon's marked probe packets to lo, where the program sends each to its
 * backend the way the data path sends a client's packet. A probe socket
 * connects to the VIP itself; without this path in place, its packets are
 * delivered to the host itself and the check fails (never a false pass).
 */
#ifndef RINGLB_PROBE_H
#define RINGLB_PROBE_H

#include "lb.h"

/** PROBE_TABLE - the routing table of marked probe packets: one local default route. */
#define PROBE_TABLE 21068
/** PROBE_RULE_PRIORITY - the policy rule's priority (before "main", 32766). */
#define PROBE_RULE_PRIORITY 21068
/** PROBE_WHY_MAX - room for why the path could not be set up. */
#define PROBE_WHY_MAX 256

struct probe_path;

/**
 * probe_path_setup() - load the probe program on the pinned @maps (backends,
 * config), send l2 probes out of @ifname, attach it to lo's egress (replacing
 * a previous daemon's), and route marked packets to lo (IPv4 and IPv6).
 * Return: 0 or -errno, and why.
 */
int probe_path_setup(const struct lb_maps *maps, const char *ifname, struct probe_path **out,
		     char why[PROBE_WHY_MAX]);

/** probe_path_close() - release the loader's hold; the path stays in place for the next daemon. */
void probe_path_close(struct probe_path *p);

/** probe_path_remove() - take the program, the rules and the routes away (a clean stop). */
void probe_path_remove(void);

#endif /* RINGLB_PROBE_H */
