// SPDX-License-Identifier: GPL-2.0-only
/*
 * vip add, vip check, vip sources, vip quic-lb and vip del: services, each
 * with its ring and, if asked, its source ranges (--allow and --deny
 * prefixes) and its QUIC-LB configuration. A new VIP has no backends, so its
 * packets drop until one is added.
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
	int clear;
	/* --quic-lb: the text as given, parsed at once; the key is read when applied. */
	const char *quic_text;
	struct state_quic quic;
	size_t source_count;
	/* One past the limit, so that too many is refused by the state's own check. */
	struct state_source sources[LB_SOURCES_PER_VIP_MAX + 1];
};

/* One --allow or --deny prefix. */
static int vip_source_add(struct cli *c, void *args, const char *item, int deny)
{
	struct vip_args *a = args;
	const char *why = NULL;

	if (a->source_count > LB_SOURCES_PER_VIP_MAX)
		return cli_usage(c, "more than %d source prefixes for one VIP",
				 LB_SOURCES_PER_VIP_MAX);
	if (prefix_parse(item, &a->sources[a->source_count].prefix, &why))
		return cli_usage(c, "%s %s: %s", deny ? "--deny" : "--allow", item, why);
	a->sources[a->source_count++].deny = deny;
	return 0;
}

static int vip_allow_one(struct cli *c, void *args, const char *item)
{
	return vip_source_add(c, args, item, 0);
}

static int vip_deny_one(struct cli *c, void *args, const char *item)
{
	return vip_source_add(c, args, item, 1);
}

/* --allow and --deny: one or more prefixes, comma-separated; repeatable. */
static int vip_allow_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "allow", value, args, vip_allow_one);
}

static int vip_deny_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "deny", value, args, vip_deny_one);
}

/* The VIP's source prefixes become @a's, or why not. */
static int vip_sources_apply_to(struct state *want, struct state_vip *v, const struct vip_args *a,
				struct fault *f)
{
	const char *why = NULL;
	char text[ADDR_TEXT_MAX];
	int err = state_vip_sources_set(want, v, a->sources, a->source_count, &why);

	if (err == -ENOMEM)
		return fault_set(f, FAULT_STATE, err, "%s", strerror(-err));
	if (err) {
		vip_format(&v->spec, text);
		return fault_set(f, FAULT_STATE, err, "VIP %s: %s", text, why);
	}
	return 0;
}

/* --quic-lb CONFIG: rotation=R,sid=S,nonce=N[,key=FILE] (quic_lb_config_parse()). */
static int vip_quic_set(struct cli *c, void *args, const char *value)
{
	struct vip_args *a = args;
	struct fault f = { 0 };

	a->quic_text = value;
	if (quic_lb_config_parse(value, &a->quic.cfg, a->quic.key_path, sizeof(a->quic.key_path),
				 &f))
		return cli_usage(c, "--quic-lb: %s", f.why);
	if ((a->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED) && a->quic.key_path[0] != '/')
		return cli_usage(c, "--quic-lb: key=%s: give the key file's absolute path (every "
				 "host of a fleet reads it there)", a->quic.key_path);
	a->quic.set = 1;
	return 0;
}

/*
 * Make @v the QUIC VIP @a says (its key file read now: the state keeps its
 * path and digest), or a plain UDP VIP again when @a has none.
 */
static int vip_quic_apply_to(struct state_vip *v, const struct vip_args *a, struct fault *f)
{
	struct state_quic q = a->quic;
	__u8 key[LB_QUIC_LB_KEY_LEN];
	char text[ADDR_TEXT_MAX];
	const char *why = NULL;
	int err;

	vip_format(&v->spec, text);
	if (q.set && (q.cfg.flags & LB_QUIC_LB_ENCRYPTED)) {
		err = quic_lb_key_read(q.key_path, key, f);
		if (err)
			return err;
		q.key_digest = quic_lb_key_digest(key);
		memset(key, 0, sizeof(key));
	}
	err = state_vip_quic_set(v, &q, &why);
	return err ? fault_set(f, FAULT_STATE, err, "VIP %s: %s", text, why) : 0;
}

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
		err = cli_check_apply(&a->check, &v->check, f) ?:
		      vip_sources_apply_to(want, v, a, f) ?:
		      (a->quic.set ? vip_quic_apply_to(v, a, f) : 0);
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

static int vip_sources_parse(struct cli *c, void *args, char **operands, int count)
{
	struct vip_args *a = args;

	if (a->clear == !!a->source_count)
		return cli_usage(c, a->clear ? "--clear takes no --allow or --deny" :
				 "say the new lists with --allow and --deny, or --clear them");
	return vip_operands_parse(c, args, operands, count);
}

static int vip_sources_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			     struct fault *f)
{
	const struct vip_args *a = args;
	struct state_vip *v = cli_vip_find(want, &a->vip, f);

	(void)ctx;
	if (!v)
		return -ENOENT;
	return vip_sources_apply_to(want, v, a, f);
}

static int vip_quic_parse(struct cli *c, void *args, char **operands, int count)
{
	struct vip_args *a = args;

	if (a->clear == a->quic.set)
		return cli_usage(c, a->clear ? "--clear takes no --quic-lb" :
				 "say the new configuration with --quic-lb, or --clear it");
	return vip_operands_parse(c, args, operands, count);
}

static int vip_quic_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			  struct fault *f)
{
	const struct vip_args *a = args;
	struct state_vip *v = cli_vip_find(want, &a->vip, f);

	(void)ctx;
	if (!v)
		return -ENOENT;
	return vip_quic_apply_to(v, a, f);
}

#define VIP_QUIC_OPTION                                                                         \
	CLI_OPT_CUSTOM("quic-lb", "rotation=R,sid=S,nonce=N[,key=FILE]",                       \
		       "route QUIC by the server id in its connection IDs (UDP VIPs; "         \
		       "IETF QUIC-LB: plaintext, or AES-128 with a key file)",                \
		       vip_quic_set)

#define VIP_SOURCE_OPTIONS                                                                     \
	CLI_OPT_CUSTOM("allow", "PREFIX[,PREFIX...]",                                          \
		       "serve only clients in these prefixes (repeatable; default everyone)",  \
		       vip_allow_set),                                                        \
	CLI_OPT_CUSTOM("deny", "PREFIX[,PREFIX...]",                                           \
		       "refuse clients in these prefixes (repeatable)", vip_deny_set)

static const struct cli_option vip_sources_options[] = {
	VIP_SOURCE_OPTIONS,
	CLI_OPT_FLAG("clear", "no source ranges: every client is served", struct vip_args, clear),
	CLI_OPT_END,
};

static const struct cli_option vip_quic_options[] = {
	VIP_QUIC_OPTION,
	CLI_OPT_FLAG("clear", "a plain UDP VIP again: QUIC goes by its addresses", struct vip_args,
		     clear),
	CLI_OPT_END,
};

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
	VIP_SOURCE_OPTIONS,
	VIP_QUIC_OPTION,
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
		"    the VIP, sent to each backend the way clients' packets are.\n"
		"    --allow and --deny give its source ranges (see vip sources), and\n"
		"    --quic-lb makes a UDP VIP route QUIC by connection ID (see vip quic-lb).",
};

const struct cli_command cli_vip_quic = {
	.object = "vip", .verb = "quic-lb", .operands = "VIP", .min_operands = 1,
	.max_operands = 1, .options = vip_quic_options, .args_size = sizeof(struct vip_args),
	.parse = vip_quic_parse, .apply = vip_quic_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Make a UDP VIP route QUIC by the server id in each packet's destination\n"
		"    connection ID (IETF QUIC-LB, draft-ietf-quic-load-balancers), or stop\n"
		"    (--clear). rotation is the config rotation id the connection IDs carry\n"
		"    (0-6), sid and nonce their server id and nonce lengths (sid 1-15,\n"
		"    nonce 4 and up, 19 octets together at most). Without key=FILE the ids\n"
		"    are plaintext; with it, AES-128: one block when sid + nonce is 16,\n"
		"    else the draft's four-pass network. FILE holds 32 hex digits, readable\n"
		"    by its owner alone, at the same absolute path on every host (the state\n"
		"    keeps the path and a digest; a host whose file differs refuses). Each\n"
		"    backend gets a server id (backend add --server-id, or the lowest free\n"
		"    one; kept when the length stays). A packet whose server id names a\n"
		"    serving backend goes there, draining ones included, whatever its\n"
		"    addresses; any other (a client's first packets, an unknown id) goes\n"
		"    where the ring puts its connection ID. No flow-table entries are made.\n"
		"    `ringlb quic-lb config` prints what each server needs.",
};

const struct cli_command cli_vip_sources = {
	.object = "vip", .verb = "sources", .operands = "VIP", .min_operands = 1,
	.max_operands = 1, .options = vip_sources_options, .args_size = sizeof(struct vip_args),
	.parse = vip_sources_parse, .apply = vip_sources_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Replace the VIP's source ranges whole: the --allow and --deny prefixes\n"
		"    given (of the VIP's family, at most 1024, none in both lists), or none\n"
		"    with --clear. The longest prefix holding a client decides; a client in\n"
		"    none is refused when there is an allow prefix, else served. Refused\n"
		"    packets are dropped in XDP before any flow or ring work, counted as\n"
		"    drop_source_denied or drop_source_not_allowed. The change is one swap:\n"
		"    every packet sees the old lists or the new ones, and other VIPs' traffic\n"
		"    is untouched.",
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
