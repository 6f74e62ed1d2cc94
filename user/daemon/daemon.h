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
 */
struct daemon_opts {
	struct site site;
	const char *metrics;
	__u32 metrics_deadline_s;
	__u32 verify_s;
	__u32 sample_s;
	const char *bgp_routes;
	const char *birdc_socket;
};

/**
 * daemon_run() - run until SIGTERM or SIGINT. Logs one line per event on
 * stderr (the journal under systemd). Return: 0 after a clean stop, or
 * -errno when it could not start, and why (@f).
 */
int daemon_run(const struct daemon_opts *o, struct fault *f);

#endif /* RINGLB_DAEMON_H */
