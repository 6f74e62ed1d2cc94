/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A VIP's source prefixes flattened into the set the program searches
 * (struct lb_source_set, lb_contract.h): runs of one verdict each, with a
 * bucket index over the span between the first and last cut. Pure: no map,
 * no I/O, so a unit test can hold every set it builds against the longest
 * match of the prefixes themselves.
 */
#ifndef RINGLB_KERNEL_SOURCE_SET_H
#define RINGLB_KERNEL_SOURCE_SET_H

#include <stddef.h>

#include "lb_contract.h"
#include "state.h"

/**
 * source_set_build() - the set of @count prefixes @sources.
 * @set: filled whole (every unused byte zero, so equal prefixes give equal
 *       bytes and sets compare with memcmp())
 * @sources: the prefixes, of one family, host bits zero
 * @count: how many, 0 .. LB_SOURCES_PER_VIP_MAX
 *
 * A client's run says what the longest prefix holding it says; a client in
 * none is refused (LB_SOURCE_NOT_ALLOWED) when any prefix is an allow
 * prefix, else served. Adjacent runs never share a verdict.
 *
 * Return: 0, or -E2BIG for more than LB_SOURCES_PER_VIP_MAX prefixes.
 */
int source_set_build(struct lb_source_set *set, const struct state_source *sources, size_t count);

/**
 * source_set_verdict() - what @set says of client @a (enum
 * lb_source_verdict), by the program's own search (bpf/lb_source_search.h).
 * Return: the verdict, or -EINVAL when the set breaks the contract.
 */
int source_set_verdict(const struct lb_source_set *set, const struct addr *a);

#endif /* RINGLB_KERNEL_SOURCE_SET_H */
