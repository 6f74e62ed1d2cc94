/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The backend side: load ringlb's decap program (bpf/decap.bpf.c) with its
 * maps pinned under a directory of their own, and set what it accepts: the
 * prefixes outer sources may come from (and hops may go to), the host's
 * addresses, its VIPs (the inner destinations it takes), GUE's port.
 * Functions return 0 or a negative errno and print nothing.
 */
#ifndef RINGLB_DECAP_H
#define RINGLB_DECAP_H

#include <stddef.h>
#include <linux/types.h>

#include "addr.h"
#include "lb_contract.h"

/**
 * struct decap_maps - descriptors of the decap program's maps, -1 when
 * closed (@self also when the program pinned there predates map "decap_self").
 */
struct decap_maps {
	int from;
	int local;
	int self;
	int vip;
	int config;
	int stats;
};

/** struct decap_prefix - a prefix outer sources may come from. */
struct decap_prefix {
	struct addr addr;
	unsigned int len;
};

/** decap_reason_names - every decap reason's name, by enum lb_decap_reason. */
extern const char *const decap_reason_names[LB_DECAP_REASON_COUNT];

/**
 * decap_load() - load the decap program, reusing the maps pinned under
 * @pin_dir or creating and pinning them there. Return: its descriptor
 * (the caller attaches it, then closes it), or -errno.
 */
int decap_load(const char *pin_dir);

/** decap_maps_open() - open the maps pinned under @pin_dir. */
int decap_maps_open(struct decap_maps *m, const char *pin_dir);

/** decap_maps_close() - close them. */
void decap_maps_close(struct decap_maps *m);

/**
 * decap_configure() - accept outer sources in @prefixes only (every other
 * prefix removed; hops of a hop list must lie in them too), inner packets to
 * the @vip_count addresses of @vips only (decap_vips_set()), GUE on
 * @gue_port (0: not at all), and the host's addresses as they are now as
 * outer destinations (decap_self_set()). Return: 0, -EOVERFLOW when the host
 * has more than LB_DECAP_SELF_MAX addresses, -ENOSPC when the VIPs cannot be
 * placed (nothing changed on either), or -errno.
 */
int decap_configure(const struct decap_maps *m, const struct decap_prefix *prefixes,
		    size_t count, const struct addr *vips, size_t vip_count, __u16 gue_port);

/**
 * decap_vips_set() - make the VIP slots of map @fd ("decap_vip") hold
 * exactly the @count addresses of @vips (at most LB_DECAP_VIPS_MAX): each
 * in one of the LB_DECAP_VIP_PROBES slots from its home slot, those already
 * there left in place. Return: 0, -E2BIG past LB_DECAP_VIPS_MAX, -ENOSPC
 * when a VIP's slots all hold others (nothing of the set changed then), or
 * -errno.
 */
int decap_vips_set(int fd, const struct addr *vips, size_t count);

/**
 * decap_self_set() - make the host's addresses exactly the @count of @addrs
 * (at most LB_DECAP_SELF_MAX): map "decap_local" holds them all, map
 * "decap_self" each that finds a slot in its window (those there already
 * stay), and the settings say the slots are current (LB_DECAP_SELF_CURRENT)
 * and whether they hold all (LB_DECAP_SELF_WHOLE). No address that stays is
 * refused in between. Return: 0, -E2BIG, -ENOENT without map "decap_self",
 * or -errno.
 */
int decap_self_set(const struct decap_maps *m, const struct addr *addrs, size_t count);

/** decap_counters() - packets and bytes of reason @r, summed over CPUs. */
int decap_counters(const struct decap_maps *m, __u32 r, __u64 *packets, __u64 *bytes);

#endif /* RINGLB_DECAP_H */
