/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Which backend takes a packet, written once for the XDP program
 * (ringlb.bpf.c) and the controller's `ringlb lookup` (user/kernel/lookup.c),
 * so the two cannot choose differently: whether a pin still holds, whether
 * the ring's answer may take the packet, whether the packet carries a hop
 * list and which previous owners make it, in what order, and whether the
 * ring's choice is pinned. Each predicate reads only the records of the
 * contract (lb_contract.h): the program hands it what its maps hold, the
 * controller what the kernel holds or what its state asks the kernel to
 * hold (user/kernel/image.c). The includer has IPPROTO_TCP (<linux/in.h>
 * in the program, <netinet/in.h> in the controller).
 */
#ifndef RINGLB_LB_CHOOSE_H
#define RINGLB_LB_CHOOSE_H

#include "lb_contract.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* TCP header flags, as the parser hands them over. */
#define LB_TCP_FIN 0x01
#define LB_TCP_SYN 0x02
#define LB_TCP_RST 0x04
#define LB_TCP_ACK 0x10

/*
 * A hop list packed in 64 bits: LB_HOPS_MAX - 1 backend ids of LB_HOP_BITS
 * each, then the count at LB_HOPS_COUNT_SHIFT.
 */
#define LB_HOP_BITS 12
#define LB_HOPS_COUNT_SHIFT 36
#define LB_HOPS_COUNT(hops) ((__u32)((hops) >> LB_HOPS_COUNT_SHIFT) & 3)
#define LB_HOP(hops, i) ((__u32)((hops) >> (LB_HOP_BITS * (i))) & LB_RING_ENTRY_BACKEND_MASK)
_Static_assert(LB_HOP_BITS * (LB_HOPS_MAX - 1) <= LB_HOPS_COUNT_SHIFT &&
		       LB_RING_ENTRY_BACKEND_MASK == (1u << LB_HOP_BITS) - 1,
	       "a hop list holds LB_HOPS_MAX - 1 backend ids and their count");

/**
 * lb_new_connection() - a SYN without ACK or RST: a client opening a new
 * connection on its tuple. A SYN|RST is a RST: its flow's backend judges it.
 */
static __always_inline int lb_new_connection(__u8 tcp_flags)
{
	return (tcp_flags & (LB_TCP_SYN | LB_TCP_ACK | LB_TCP_RST)) == LB_TCP_SYN;
}

/**
 * lb_backend_serves() - may slot @b (NULL: none) receive packets of VIP
 * @vip_id? Not unused, not retired (a hop only), and the VIP's own.
 */
static __always_inline int lb_backend_serves(const struct lb_backend *b, __u32 vip_id)
{
	/* state first: the other fields are stable whenever it is not UNUSED. */
	return b && b->state != LB_BACKEND_UNUSED && b->state != LB_BACKEND_RETIRED &&
	       b->vip_id == vip_id;
}

/** lb_vip_pins() - does the VIP keep its flows in the flow table (not stateless)? */
static __always_inline int lb_vip_pins(const struct lb_vip *vip)
{
	return !(vip->flags & LB_VIP_STATELESS);
}

/**
 * lb_pin_backend_holds() - does a pin to @backend (struct lb_flow.backend)
 * still take a packet of VIP @vip_id with @tcp_flags to slot @b, the slot it
 * names? Only when @b is the very backend it was pinned to (its cookie: never
 * a later occupant of the slot) and still serves that VIP; a draining backend
 * keeps its connections but takes no new one on the same tuple (a SYN goes
 * where the ring says). The program passes the backend as it read it once.
 */
static __always_inline int lb_pin_backend_holds(__u64 backend, const struct lb_backend *b,
						__u32 vip_id, __u8 tcp_flags)
{
	return lb_backend_serves(b, vip_id) && lb_flow_backend_cookie_is(backend, b->cookie) &&
	       !(lb_new_connection(tcp_flags) && b->state == LB_BACKEND_DRAINING);
}

/** lb_pin_holds() - lb_pin_backend_holds() of pin @flow. */
static __always_inline int lb_pin_holds(const struct lb_flow *flow, const struct lb_backend *b,
					__u32 vip_id, __u8 tcp_flags)
{
	return lb_pin_backend_holds(flow->backend, b, vip_id, tcp_flags);
}


/**
 * lb_wants_hops() - does a packet with @tcp_flags of @protocol that the ring
 * gives to @b carry a hop list? A TCP packet other than a SYN to a GUE
 * backend: its connection may have started under a previous ring.
 */
static __always_inline int lb_wants_hops(const struct lb_backend *b, __u8 protocol,
					 __u8 tcp_flags)
{
	return b->forward == LB_FORWARD_GUE && protocol == IPPROTO_TCP &&
	       !lb_new_connection(tcp_flags);
}

/**
 * lb_hop_usable() - may slot @b (NULL: none) be a later hop of a packet of
 * VIP @vip_id going to @family? Draining and retired backends too: their
 * connections are why hops exist.
 */
static __always_inline int lb_hop_usable(const struct lb_backend *b, __u32 vip_id, __u8 family)
{
	return b && b->state != LB_BACKEND_UNUSED && b->vip_id == vip_id &&
	       b->forward == LB_FORWARD_GUE && b->family == family;
}

/**
 * struct lb_hops - a hop list being made: its packed form and the first two
 * ids (scalars, not an array: a store at a variable index is not verifiable
 * in the program).
 */
struct lb_hops {
	__u64 packed;
	__u32 a;
	__u32 b;
	__u32 n;
};

/**
 * lb_hops_wants() - is @id, the flow's owner under the next previous ring
 * (newest first; 0: none), a new hop for the list of a packet whose owner
 * under the serving ring is @first? Each backend once, never @first. Asked
 * before its slot is read: most owners are @first.
 */
static __always_inline int lb_hops_wants(const struct lb_hops *h, __u32 id, __u32 first)
{
	return id && id != first && id != h->a && id != h->b;
}

/**
 * lb_hops_take() - add @id, which lb_hops_wants(), when its slot @slot may be
 * a hop (lb_hop_usable()).
 */
static __always_inline void lb_hops_take(struct lb_hops *h, __u32 id, const struct lb_backend *slot,
					 __u32 vip_id, __u8 family)
{
	if (!lb_hop_usable(slot, vip_id, family))
		return;
	if (h->n == 0)
		h->a = id;
	else if (h->n == 1)
		h->b = id;
	h->packed |= (__u64)id << (LB_HOP_BITS * h->n);
	h->n++;
}

/** lb_hops_done() - the hop list packed for lb_encap(): its ids and their count. */
static __always_inline __u64 lb_hops_done(const struct lb_hops *h)
{
	return h->packed | (__u64)h->n << LB_HOPS_COUNT_SHIFT;
}

/**
 * lb_pins_new() - is the ring's choice for a packet with @tcp_flags and hop
 * list @hops pinned (the flow-table's rate limit aside)? Not on a stateless
 * VIP, not for a packet with a hop list (its connection may live elsewhere),
 * not for a RST.
 */
static __always_inline int lb_pins_new(const struct lb_vip *vip, __u64 hops, __u8 tcp_flags)
{
	return lb_vip_pins(vip) && !LB_HOPS_COUNT(hops) && !(tcp_flags & LB_TCP_RST);
}

#endif /* RINGLB_LB_CHOOSE_H */
