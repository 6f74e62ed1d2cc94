/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ringlb daemon: the controller that runs all the time. It serves what the
 * CLI commits and never anything else: at start, on SIGHUP and every
 * verify interval it compares the kernel with the committed state and
 * repairs what differs; it picks up every change the CLI makes (it reads the
 * state file when it changes); it checks the backends' health and turns
 * verdicts into changes through the same pipeline as the CLI (change_run(),
 * under the same lock); it serves /metrics and a status page (/); it tells systemd when it is
 * ready and that it is alive. The data path never depends on it.
 */
#ifndef RINGLB_DAEMON_H
#define RINGLB_DAEMON_H

#include <linux/types.h>

#include "change.h"
#include "site.h"

/**
 * struct daemon_opts - how the daemon runs.
 * @site: the deployment
 * @metrics: where /metrics is served ("ADDR:PORT"), NULL for the default
 *           (loopback), "none" for nowhere
 * @metrics_deadline_s: seconds a /metrics client has for a request's headers
 * @verify_s: seconds between comparisons of the kernel with the state
 * @sample_s: seconds between samples of the data path's counters for the
 *            status page (STATUS_SAMPLE_INTERVAL_S_DEFAULT unless told)
 * @bgp_routes: when set, the daemon decides whether this host announces the
 *              VIPs: it writes there a bird2 configuration fragment (static
 *              protocols ringlb_vips4 and ringlb_vips6, with a route per VIP,
 *              or none) and has bird read its configuration again
 * @birdc_socket: bird's control socket (NULL: birdc's default)
 * @flow_timeout_s: the flow sweep deletes an open flow idle this long
 * @flow_closed_timeout_s: and a flow whose client sent a FIN or a RST
 */
struct daemon_opts {
	struct site site;
	const char *metrics;
	__u32 metrics_deadline_s;
	__u32 verify_s;
	__u32 sample_s;
	const char *bgp_routes;
	const char *birdc_socket;
	__u32 flow_timeout_s;
	__u32 flow_closed_timeout_s;
};

/** FLOW_TIMEOUT_S_DEFAULT - an open flow idle this long leaves the flow table. */
#define FLOW_TIMEOUT_S_DEFAULT 300
/** FLOW_TIMEOUT_S_MIN, FLOW_TIMEOUT_S_MAX - what --flow-timeout takes. */
#define FLOW_TIMEOUT_S_MIN 2
#define FLOW_TIMEOUT_S_MAX 86400
/**
 * FLOW_CLOSED_TIMEOUT_S_DEFAULT - a flow whose client sent a FIN or a RST
 * and that has been idle this long leaves the flow table: the client's last
 * ACKs have come by then, and a backend still sending (a half-closed
 * connection) keeps the client's ACKs, and so the entry, fresh.
 */
#define FLOW_CLOSED_TIMEOUT_S_DEFAULT 30
/** FLOW_CLOSED_TIMEOUT_S_MIN, FLOW_CLOSED_TIMEOUT_S_MAX - what --flow-closed-timeout takes. */
#define FLOW_CLOSED_TIMEOUT_S_MIN 1
#define FLOW_CLOSED_TIMEOUT_S_MAX 3600

/**
 * daemon_run() - run until SIGTERM or SIGINT. Logs one line per event on
 * stderr (the journal under systemd). Return: 0 after a clean stop, or
 * -errno when it could not start, and why (@f).
 */
int daemon_run(const struct daemon_opts *o, struct fault *f);

#endif /* RINGLB_DAEMON_H */
