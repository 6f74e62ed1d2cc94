// SPDX-License-Identifier: GPL-2.0-only
/*
 * vip add and vip del: services, each with its ring. A new VIP has no
 * backends, so its packets drop until one is added.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ring.h"

struct vip_args {
	struct cli_check_args check; /* first: the check options' setters find it there */
	struct vip_spec vip;
	__u32 vnodes;
	int forward;
	int stateless;
};

static const struct cli_word vip_flows[] = {
	{ "pinned", 0 },
	{ "stateless", 1 },
	{ NULL, 0 },
};

static const struct cli_word vip_forwards[] = {
	{ "l2", LB_FORWARD_L2 },
	{ "ipip", LB_FORWARD_IPIP },
	{ "gue", LB_FORWARD_GUE },
	{ NULL, 0 },
};

static int vip_operands_parse(struct cli *c, void *args, char **operands, int count)
{
	struct vip_args *a = args;

	(void)count;
	if (!a->vnodes)
		a->vnodes = RING_VNODES_DEFAULT;
	if (a->stateless && a->forward != LB_FORWARD_GUE)
		return cli_usage(c, "--flows stateless needs --forward gue: only GUE carries the "
				 "hop list that holds a stateless VIP's connections");
	return cli_vip_arg(c, operands[0], &a->vip);
}

static int vip_add_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			 struct fault *f)
{
	const struct vip_args *a = args;
	struct state_vip *v;
	char text[ADDR_TEXT_MAX];
	int err = state_vip_add(want, &a->vip, a->vnodes, &v);

	(void)ctx;
	vip_format(&a->vip, text);
	if (!err) {
		v->forward = a->forward;
		v->stateless = a->stateless;
		err = cli_check_apply(&a->check, &v->check, f);
		if (err)
			return err;
	}
	if (err == -EEXIST)
		fault_set(f, FAULT_STATE, err, "VIP %s already exists", text);
	else if (err == -ENOSPC)
		fault_set(f, FAULT_STATE, err, "all %d VIP slots are in use", LB_VIPS_MAX);
	else if (err)
		fault_set(f, FAULT_STATE, err, "%s", strerror(-err));
	return err;
}

static int vip_del_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			 struct fault *f)
{
	const struct vip_args *a = args;
	struct state_vip *v = cli_vip_find(want, &a->vip, f);

	(void)ctx;
	if (!v)
		return -ENOENT;
	state_vip_remove(want, v);
	return 0;
}

static int vip_check_parse(struct cli *c, void *args, char **operands, int count)
{
	struct vip_args *a = args;

	if (!a->check.given)
		return cli_usage(c, "say what to change with at least one check option");
	return vip_operands_parse(c, args, operands, count);
}

static int vip_check_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			   struct fault *f)
{
	const struct vip_args *a = args;
	struct state_vip *v = cli_vip_find(want, &a->vip, f);

	(void)ctx;
	if (!v)
		return -ENOENT;
	return cli_check_apply(&a->check, &v->check, f);
}

static const struct cli_option vip_check_options[] = {
	CLI_CHECK_OPTIONS,
	CLI_OPT_END,
};

static const struct cli_option vip_add_options[] = {
	CLI_OPT_U32("vnodes", "K", "ring points per unit of backend weight (default 4096)",
		    struct vip_args, vnodes, RING_VNODES_MIN, RING_VNODES_MAX),
	CLI_OPT_ENUM("forward", "l2|ipip|gue", "how packets reach the backends (default l2)",
		     struct vip_args, forward, vip_forwards),
	CLI_OPT_ENUM("flows", "pinned|stateless",
		     "pin flows in the flow table (default), or not at all (gue only)",
		     struct vip_args, stateless, vip_flows),
	CLI_CHECK_OPTIONS,
	CLI_OPT_END,
};

const struct cli_command cli_vip_add = {
	.object = "vip", .verb = "add", .operands = "VIP", .min_operands = 1, .max_operands = 1,
	.options = vip_add_options, .args_size = sizeof(struct vip_args), .parse = vip_operands_parse,
	.apply = vip_add_apply, .flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Add a service with no backends (its packets drop until one is added).\n"
		"    A ring holds at most 1048576 points: more than 256 total weight needs a\n"
		"    smaller --vnodes. --forward l2 rewrites the MACs (backends on this\n"
		"    segment, direct server return); ipip and gue encapsulate to routed\n"
		"    backends of either family, which run `ringlb decap attach`. A gue VIP\n"
		"    keeps its last 3 rings: a packet the balancer did not pin carries a hop\n"
		"    list (its owners under them), and a backend without its connection\n"
		"    sends it on. --flows stateless pins nothing: the rings and the\n"
		"    backends hold every connection. The check options say how `ringlb\n"
		"    daemon` checks the backends' health: by default a TCP connection to\n"
		"    the VIP, sent to each backend the way clients' packets are.",
};

const struct cli_command cli_vip_check = {
	.object = "vip", .verb = "check", .operands = "VIP", .min_operands = 1, .max_operands = 1,
	.options = vip_check_options, .args_size = sizeof(struct vip_args),
	.parse = vip_check_parse, .apply = vip_check_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Change how `ringlb daemon` checks the VIP's backends (those without a\n"
		"    check of their own); options not given stay as they are. The ring does\n"
		"    not change: the daemon applies the new check from its next probe.",
};

const struct cli_command cli_vip_del = {
	.object = "vip", .verb = "del", .operands = "VIP", .min_operands = 1, .max_operands = 1,
	.args_size = sizeof(struct vip_args), .parse = vip_operands_parse, .apply = vip_del_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Remove a service and its backends.",
};
