// SPDX-License-Identifier: GPL-2.0-only
/*
 * host drain and host undrain: take this balancer host out of the fleet's
 * routes and back. A fact of this host (its state file, never the store):
 * its daemon withdraws the VIPs' routes while it is drained, so the router
 * sends their flows to the other hosts, which pick the same backends.
 */
#include <errno.h>
#include <stdio.h>

#include "cli.h"

struct host_args {
	int drained;
};

static int host_drain_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			    struct fault *f)
{
	const struct host_args *a = args;

	(void)ctx;
	if (want->host.drained == a->drained)
		return fault_set(f, FAULT_STATE, -EALREADY, "this host is %s already",
				 a->drained ? "drained" : "not drained");
	want->host.drained = a->drained;
	return 0;
}

static int host_drain_parse(struct cli *c, void *args, char **operands, int count)
{
	(void)operands;
	(void)count;
	((struct host_args *)args)->drained = c->cmd == &cli_host_drain;
	return 0;
}

const struct cli_command cli_host_drain = {
	.object = "host", .verb = "drain", .args_size = sizeof(struct host_args),
	.parse = host_drain_parse, .apply = host_drain_apply,
	.flags = CLI_CHANGES | CLI_LOCAL,
	.help = "    Take this host out of the VIPs' routes: its daemon withdraws them (BGP),\n"
		"    so the router sends their flows to the other hosts of the fleet, which\n"
		"    pick the same backends. The data path keeps serving what still comes.",
};

const struct cli_command cli_host_undrain = {
	.object = "host", .verb = "undrain", .args_size = sizeof(struct host_args),
	.parse = host_drain_parse, .apply = host_drain_apply,
	.flags = CLI_CHANGES | CLI_LOCAL,
	.help = "    Put this host back into the VIPs' routes (its daemon announces them\n"
		"    again when the kernel serves the fleet's state).",
};
