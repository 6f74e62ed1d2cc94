/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The data path's counters as one JSON model (stats.c), for `ringlb stats`
 * and the daemon's metrics.
 */
#ifndef RINGLB_STATS_H
#define RINGLB_STATS_H

#include <jansson.h>

#include "kernel.h"

/**
 * kernel_stats() - the counters of @maps for the VIPs and backends of @s:
 * per VIP packets and bytes; per backend packets, bytes, new flows, live and
 * closing flows (a packet in the last @idle_s seconds); frames and bytes by
 * reason; new flows not pinned; flow-table entries and size.
 * @out: the model; NULL only when out of memory
 * Return: 0, or -errno when the flow table could not be read (the model
 * is there, its flow counts 0).
 */
int kernel_stats(const struct lb_maps *maps, const struct state *s, __u32 idle_s, json_t **out);

#endif /* RINGLB_STATS_H */
