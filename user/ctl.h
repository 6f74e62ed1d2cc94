/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The controller: makes the kernel's maps agree with a desired state, and
 * answers questions about flows the way the XDP program would.
 */
#ifndef RINGLB_CTL_H
#define RINGLB_CTL_H

#include <linux/types.h>

#include "lb.h"
#include "state.h"

/** CTL_WHY_MAX - room for an explanation of a failed sync. */
#define CTL_WHY_MAX 256

/**
 * ctl_sync() - make the maps hold exactly @want.
 * @maps: the pinned maps
 * @applied: the state the maps hold now, or NULL when unknown (after an
 *           attach that created the maps, or a restore): then every ring is
 *           rebuilt and every slot checked
 * @want: the desired state
 * @why: on failure, what failed
 *
 * Order keeps every packet safe: new backends are installed before any ring
 * names them; rings are swapped whole; a backend is marked draining only
 * after the ring without it serves, and freed only after no ring names it.
 * A VIP's key appears after its ring and goes before it.
 */
int ctl_sync(const struct lb_maps *maps, const struct state *applied, const struct state *want,
	     char why[CTL_WHY_MAX]);

/** ctl_vip_key() - the kernel's key of a VIP of the state. */
void ctl_vip_key(const struct state_vip *v, struct lb_vip_key *key);

/**
 * ctl_verify() - does the kernel hold exactly the desired state?
 * @maps: the pinned maps
 * @want: the desired state
 * @report: called with one line per disagreement
 * @arg: passed to @report
 *
 * Compares every VIP value and every used slot of its ring map with what
 * ctl_sync() would write, every backend slot, and looks for VIPs and backend
 * slots the state does not have. Return: the number of disagreements, or a
 * negative errno when the maps cannot be read.
 */
int ctl_verify(const struct lb_maps *maps, const struct state *want,
	       void (*report)(void *arg, const char *line), void *arg);

/**
 * struct ctl_answer - where a flow goes.
 * @backend: its backend in the state, NULL when none takes it
 * @pinned: 1 when the flow table holds it, 0 when the ring places it
 * @hash: the flow's position on the ring
 */
struct ctl_answer {
	const struct state_backend *backend;
	int pinned;
	__u64 hash;
};

/**
 * ctl_lookup() - the backend the kernel picks for a client's flow to a VIP.
 * @maps: the pinned maps, or NULL to ask the ring alone
 * @secret: the deployment's flow hash key
 * @vip: the VIP
 * @client: client address
 * @client_port: client port (host order)
 * @out: the answer
 *
 * Mirrors the program: a flow pinned to a backend that is still installed
 * (same cookie) stays there; any other flow goes where the ring says.
 */
int ctl_lookup(const struct lb_maps *maps, const __u64 secret[2], const struct state_vip *vip,
	       const struct addr *client, __u16 client_port, struct ctl_answer *out);

#endif /* RINGLB_CTL_H */
