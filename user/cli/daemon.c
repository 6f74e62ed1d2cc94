// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon: the long-running controller (daemon.h), in the foreground, as
 * systemd runs it (Type=notify). The CLI stays the operator's interface:
 * every change is still a command, which the daemon picks up.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "daemon.h"
#include "metrics.h"
#include "status.h"

#define DAEMON_STR_(x) #x
#define DAEMON_STR(x) DAEMON_STR_(x)

struct daemon_args {
	const char *metrics;
	__u32 metrics_deadline_s;
	__u32 verify_s;
	__u32 sample_s;
	const char *bgp_routes;
	const char *birdc_socket;
	__u32 flow_timeout_s;
	__u32 flow_closed_timeout_s;
};


static int daemon_metrics_set(struct cli *c, void *args, const char *value)
{
	if (strcmp(value, "none") && metrics_where_check(value))
		return cli_usage(c, "--metrics '%s': not ADDR:PORT, [ADDR6]:PORT or none", value);
	((struct daemon_args *)args)->metrics = value;
	return 0;
}


static int daemon_parse(struct cli *c, void *args, char **operands, int count)
{
	struct daemon_args *a = args;

	(void)operands;
	(void)count;
	if (!a->verify_s)
		a->verify_s = 60;
	if (!a->metrics_deadline_s)
		a->metrics_deadline_s = METRICS_DEADLINE_S_DEFAULT;
	if (!a->flow_timeout_s)
		a->flow_timeout_s = FLOW_TIMEOUT_S_DEFAULT;
	if (!a->flow_closed_timeout_s)
		a->flow_closed_timeout_s = FLOW_CLOSED_TIMEOUT_S_DEFAULT;
	if (a->flow_closed_timeout_s > a->flow_timeout_s)
		return cli_usage(c, "--flow-closed-timeout %u is longer than --flow-timeout %u",
				 a->flow_closed_timeout_s, a->flow_timeout_s);
	if (!a->sample_s)
		a->sample_s = STATUS_SAMPLE_INTERVAL_S_DEFAULT;
	return 0;
}

static int daemon_cmd_run(struct cli *c, const void *args)
{
	const struct daemon_args *a = args;
	struct daemon_opts o = { .site = c->site, .metrics = a->metrics,
				 .metrics_deadline_s = a->metrics_deadline_s, .verify_s = a->verify_s,
				 .sample_s = a->sample_s,
				 .bgp_routes = a->bgp_routes, .birdc_socket = a->birdc_socket,
				 .flow_timeout_s = a->flow_timeout_s,
				 .flow_closed_timeout_s = a->flow_closed_timeout_s };
	struct fault f = { 0 };
	int err = daemon_run(&o, &f);

	return err ? cli_fault(c, &f) : 0;
}

static const struct cli_option daemon_options[] = {
	CLI_OPT_CUSTOM("metrics", "ADDR:PORT",
		       "serve /metrics and the status page / there (default 127.0.0.1:9477; none: nowhere)",
		       daemon_metrics_set),
	CLI_OPT_U32("metrics-deadline", "SECONDS",
		    "a /metrics client has this long for a request's headers (default 5)",
		    struct daemon_args, metrics_deadline_s, METRICS_DEADLINE_S_MIN,
		    METRICS_DEADLINE_S_MAX, .unit = " seconds"),
	CLI_OPT_U32("verify-interval", "SECONDS",
		    "compare the kernel with the state this often (default 60)", struct daemon_args,
		    verify_s, VERIFY_INTERVAL_S_MIN, VERIFY_INTERVAL_S_MAX, .unit = " seconds"),
	CLI_OPT_U32("flow-timeout", "SECONDS",
		    "delete flows idle this long from the flow table (default 300)",
		    struct daemon_args, flow_timeout_s, FLOW_TIMEOUT_S_MIN, FLOW_TIMEOUT_S_MAX,
		    .unit = " seconds"),
	CLI_OPT_U32("flow-closed-timeout", "SECONDS",
		    "and flows whose client sent FIN or RST idle this long (default 30)",
		    struct daemon_args, flow_closed_timeout_s, FLOW_CLOSED_TIMEOUT_S_MIN,
		    FLOW_CLOSED_TIMEOUT_S_MAX, .unit = " seconds"),
	CLI_OPT_U32("sample-interval", "SECONDS",
		    "sample the counters the status page (/) draws this often (default 10)",
		    struct daemon_args, sample_s, STATUS_SAMPLE_INTERVAL_S_MIN,
		    STATUS_SAMPLE_INTERVAL_S_MAX, .unit = " seconds"),
	CLI_OPT_STRING("bgp-routes", "FILE",
		       "announce the VIPs with bird2: write its routes there (see scripts/bird)",
		       struct daemon_args, bgp_routes),
	CLI_OPT_STRING("birdc-socket", "PATH", "bird's control socket (default: birdc's)",
		       struct daemon_args, birdc_socket),
	CLI_OPT_END,
};

const struct cli_command cli_daemon = {
	.object = "daemon", .options = daemon_options, .args_size = sizeof(struct daemon_args),
	.parse = daemon_parse, .run = daemon_cmd_run,
	.help = "    Run the controller in the foreground until SIGTERM (systemd: Type=notify,\n"
		"    watchdog; SIGHUP reads the state again and repairs the kernel). At start,\n"
		"    on SIGHUP and every --verify-interval it repairs any difference between\n"
		"    the kernel and the committed state; it picks up every change the CLI\n"
		"    commits; it checks each backend as its VIP (or the backend) says, and a\n"
		"    backend that fails --fall checks leaves the ring like a drain and comes\n"
		"    back after --rise good ones, at most one change per --hold; when every\n"
		"    checked backend of a VIP is down, the VIP keeps its last healthy set.\n"
		"    Ring transitions go to rings.log beside the state and to stderr.\n"
		"    Every few seconds it deletes flows idle past --flow-timeout (past\n"
		"    --flow-closed-timeout once the client sent FIN or RST): the flow table\n"
		"    holds the live flows, and a flow that sends again is placed by the ring.\n"
		"    /metrics is Prometheus' text format; / is a status page (HTML) of its\n"
		"    last " DAEMON_STR(STATUS_SAMPLES_KEPT) " samples of the counters. With --bgp-routes it decides\n"
		"    whether this host announces the VIPs: not while no data path is\n"
		"    attached, the host is drained, its key is not the fleet's or its\n"
		"    kernel does not serve the committed state. The data path never needs it.",
};
