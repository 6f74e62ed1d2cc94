/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's /metrics: Prometheus' text format (version 0.0.4) over HTTP,
 * served by libmicrohttpd on its own thread. Read-only: GET /metrics, and
 * nothing else. metrics_render() writes everything from one consistent
 * snapshot the daemon hands it (struct metrics_input). The server keeps
 * answering while some clients are slow or many: connections are limited
 * per client address and in all, and a client has a deadline for its
 * request's headers that trickling bytes does not extend; what it refuses
 * or cuts it counts on the page (METRICS_REFUSALS).
 */
#ifndef RINGLB_METRICS_H
#define RINGLB_METRICS_H

#include <stdio.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <jansson.h>
#include <linux/types.h>

#include "health.h"
#include "state.h"

/** METRICS_WHY_MAX - room for why the server could not start. */
#define METRICS_WHY_MAX 256
/** METRICS_ADDR_DEFAULT - where the daemon serves /metrics unless told. */
#define METRICS_ADDR_DEFAULT "127.0.0.1:9477"
/** METRICS_CONNECTIONS_MAX - connections open to /metrics at most, all clients together. */
#define METRICS_CONNECTIONS_MAX 256
/**
 * METRICS_CLIENT_CONNECTIONS_MAX - connections open at most from one client
 * (an IPv4 address, or an IPv6 /64: metrics_client_key()).
 */
#define METRICS_CLIENT_CONNECTIONS_MAX 8
/** METRICS_DEADLINE_S_DEFAULT - seconds a client has for a request's headers, unless told. */
#define METRICS_DEADLINE_S_DEFAULT 5
/** METRICS_DEADLINE_S_MIN - the shortest deadline `ringlb daemon --metrics-deadline` takes. */
#define METRICS_DEADLINE_S_MIN 1
/** METRICS_DEADLINE_S_MAX - the longest. */
#define METRICS_DEADLINE_S_MAX 60
/**
 * METRICS_IDLE_TIMEOUT_S - seconds a connection may stay silent (libmicrohttpd's
 * timeout, reset by every byte). The only bound on sending an answer: a
 * client reading a page larger than the socket buffers byte by byte holds
 * its connection (the per-address limit caps how many).
 */
#define METRICS_IDLE_TIMEOUT_S 10

/**
 * METRICS_REFUSALS - why the server refused or closed a connection, as
 * ringlb_metrics_connections_refused_total{why} names it: X(ID, NAME, WHAT).
 */
#define METRICS_REFUSALS(X)                                                                  \
	X(CLIENT_LIMIT, "client_limit",                                                       \
	  "its address had METRICS_CLIENT_CONNECTIONS_MAX connections open")                  \
	X(TOTAL_LIMIT, "total_limit", "METRICS_CONNECTIONS_MAX connections were open")       \
	X(HEADER_DEADLINE, "header_deadline",                                                 \
	  "its request's headers had not come within the deadline")

#define METRICS_REFUSAL_ENUM(id, name, what) METRICS_REFUSED_##id,
/** enum metrics_refusal - METRICS_REFUSALS' ids, and their count. */
enum metrics_refusal { METRICS_REFUSALS(METRICS_REFUSAL_ENUM) METRICS_REFUSED_COUNT };
#undef METRICS_REFUSAL_ENUM

/**
 * struct metrics_doors - what the server counts of its own connections.
 * @open: connections open now
 * @refused: per METRICS_REFUSALS id, connections refused or closed
 */
struct metrics_doors {
	unsigned int open;
	__u64 refused[METRICS_REFUSED_COUNT];
};

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
 * @flows_expired: flow-table entries the flow sweep deleted
 * @attached: 1 when the data path's maps are there
 * @shared: 1 with a shared store (the store's metrics are shown)
 * @fail_static: 1 while the host serves its copy because the store failed
 * @revision: the store's revision this host serves
 * @followed: when it followed it (Unix time)
 * @follows: store changes this host's kernel followed
 * @host: this host's name (the path metrics' host label)
 * @paths: the report of this host's paths (paths.c; NULL: none yet)
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
	__u64 flows_expired;
	int attached;
	int shared;
	int fail_static;
	__u64 revision;
	__u64 followed;
	__u64 follows;
	const char *host;
	json_t *paths;
};

/** metrics_render() - every metric of @in, in Prometheus' text format. */
void metrics_render(FILE *f, const struct metrics_input *in);

/** metrics_render_doors() - the server's own metrics: connections open, refused, cut. */
void metrics_render_doors(FILE *f, const struct metrics_doors *doors);

/** metrics_render_fn - how the server gets a page: the text, malloc()ed, or NULL. */
typedef char *(*metrics_render_fn)(void *arg, size_t *len);

struct metrics_server;

/**
 * metrics_start() - serve GET /metrics on @where ("ADDR:PORT", IPv6 in
 * brackets) with what @fn returns, and the server's own metrics after it;
 * GET / with what @page returns (HTML; NULL: no page), through the same
 * doors.
 * A client has @deadline_s seconds (METRICS_DEADLINE_S_MIN to _MAX) from
 * its connection, or from the end of its previous answer, to send its
 * request's headers. Return: 0 or -errno, and why.
 */
int metrics_start(const char *where, unsigned int deadline_s, metrics_render_fn fn,
		  metrics_render_fn page, void *arg, struct metrics_server **out,
		  char why[METRICS_WHY_MAX]);

/** metrics_where_check() - 0 when @where is "ADDR:PORT" or "[ADDR6]:PORT", else -EINVAL. */
int metrics_where_check(const char *where);

/** metrics_stop() - stop serving. */
void metrics_stop(struct metrics_server *m);

/**
 * metrics_client_key() - the client a connection from @sa (@len bytes) counts
 * against for METRICS_CLIENT_CONNECTIONS_MAX: an IPv4 address (as
 * ::ffff:a.b.c.d, also when it came as one over IPv6), or an IPv6 address's
 * /64, since one host picks addresses from its /64 at will.
 * Return: 0, or -EAFNOSUPPORT for another family or a short @len.
 */
int metrics_client_key(const struct sockaddr *sa, socklen_t len, struct in6_addr *client);

#endif /* RINGLB_METRICS_H */
