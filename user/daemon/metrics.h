/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's /metrics: Prometheus' text format (version 0.0.4) over HTTP,
 * served by libmicrohttpd on its own thread. Read-only: GET /metrics, and
 * nothing else. metrics_render() writes everything from one consistent
 * snapshot the daemon hands it (struct metrics_input).
 */
#ifndef RINGLB_METRICS_H
#define RINGLB_METRICS_H

#include <stdio.h>
#include <jansson.h>
#include <linux/types.h>

#include "health.h"
#include "state.h"

/** METRICS_WHY_MAX - room for why the server could not start. */
#define METRICS_WHY_MAX 256
/** METRICS_ADDR_DEFAULT - where the daemon serves /metrics unless told. */
#define METRICS_ADDR_DEFAULT "127.0.0.1:9477"
/** METRICS_LATENCY_BUCKETS - upper bounds of the change latency histogram, seconds. */
#define METRICS_LATENCY_BUCKETS 12
extern const double metrics_latency_bounds[METRICS_LATENCY_BUCKETS];

/**
 * struct metrics_input - what one scrape shows.
 * @state: the committed state the daemon serves
 * @stats: kernel_stats()'s model of the kernel's counters (NULL: not attached)
 * @rings: per VIP (by its text) {"points": N, "shares": {backend: share}}
 * @targets: the health checks
 * @target_count: how many
 * @changes: per VIP {"ok": N, "failed": N}: ring transitions seen in rings.log
 * @latency: per bucket, changes that took at most its bound (not cumulative)
 * @latency_over: changes slower than the last bound
 * @latency_sum: seconds, all changes
 * @repairs: differences between kernel and state the daemon repaired
 * @attached: 1 when the data path's maps are there
 * @shared: 1 with a shared store (the store's metrics are shown)
 * @fail_static: 1 while the host serves its copy because the store failed
 * @revision: the store's revision this host serves
 * @followed: when it followed it (Unix time)
 * @follows: store changes this host's kernel followed
 */
struct metrics_input {
	const struct state *state;
	json_t *stats;
	json_t *rings;
	const struct health_target *targets;
	size_t target_count;
	json_t *changes;
	__u64 latency[METRICS_LATENCY_BUCKETS];
	__u64 latency_over;
	double latency_sum;
	__u64 repairs;
	int attached;
	int shared;
	int fail_static;
	__u64 revision;
	__u64 followed;
	__u64 follows;
};

/** metrics_render() - every metric of @in, in Prometheus' text format. */
void metrics_render(FILE *f, const struct metrics_input *in);

/** metrics_render_fn - how the server gets a page: the text, malloc()ed, or NULL. */
typedef char *(*metrics_render_fn)(void *arg, size_t *len);

struct metrics_server;

/**
 * metrics_start() - serve GET /metrics on @where ("ADDR:PORT", IPv6 in
 * brackets) with what @fn returns. Return: 0 or -errno, and why.
 */
int metrics_start(const char *where, metrics_render_fn fn, void *arg,
		  struct metrics_server **out, char why[METRICS_WHY_MAX]);

/** metrics_where_check() - 0 when @where is "ADDR:PORT" or "[ADDR6]:PORT", else -EINVAL. */
int metrics_where_check(const char *where);

/** metrics_stop() - stop serving. */
void metrics_stop(struct metrics_server *m);

#endif /* RINGLB_METRICS_H */
