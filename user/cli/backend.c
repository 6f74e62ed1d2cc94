// SPDX-License-Identifier: GPL-2.0-only
/*
 * backend add, weight, drain, undrain and remove: a VIP's members. Each is a change
 * of the desired state (an apply function); plan runs the same functions on
 * a copy to measure them. Only add asks the host anything (a backend's MAC
 * from the neighbour table), and not in a dry run.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "host.h"
#include "ring.h"

/* How long backend add waits for the neighbour table to resolve a MAC. */
#define NEIGH_TIMEOUT_MS 3000
/* Interfaces whose neighbour tables are asked. */
#define NEIGH_IFACES_MAX 16

static int backend_mac_set(struct cli *c, void *args, const char *value)
{
	struct backend_args *a = args;
	const char *why = NULL;

	if (mac_parse(value, a->mac, &why))
		return cli_report(c, "malformed MAC '%s': %s", value, why);
	a->mac_given = 1;
	return 0;
}

/* --server-id HEX: a QUIC VIP's backend's server id, checked against its VIP when applied. */
static int backend_server_id_set(struct cli *c, void *args, const char *value)
{
	struct backend_args *a = args;

	if (quic_lb_hex_parse(value, a->server_id, sizeof(a->server_id), &a->server_id_len))
		return cli_report(c, "malformed server id '%s': 1 to %d octets in hex (an even "
				  "number of hex digits)", value, LB_QUIC_LB_SID_MAX);
	return 0;
}

/*
 * The server id --server-id gives @b on VIP @v, or why not: a QUIC VIP's,
 * of its length, not all zero, no other backend's.
 */
static int backend_server_id_take(const struct backend_args *a, const struct state_vip *v,
				  const struct state_backend *self, __u8 sid[LB_QUIC_LB_SID_MAX],
				  struct fault *f)
{
	char vip[ADDR_TEXT_MAX], text[2 * LB_QUIC_LB_SID_MAX + 1];
	const char *why = NULL;
	int err;

	vip_format(&v->spec, vip);
	quic_lb_hex(a->server_id, a->server_id_len, text);
	if (!v->quic.set)
		return fault_set(f, FAULT_STATE, -EINVAL, "--server-id: VIP %s is no QUIC VIP (vip "
				 "quic-lb)", vip);
	if (a->server_id_len != v->quic.cfg.sid_len)
		return fault_set(f, FAULT_STATE, -EINVAL, "--server-id %s: VIP %s's server ids are "
				 "%u octets", text, vip, v->quic.cfg.sid_len);
	memset(sid, 0, LB_QUIC_LB_SID_MAX);
	memcpy(sid, a->server_id, a->server_id_len);
	err = state_server_id_valid(v, self, sid, &why);
	return err ? fault_set(f, FAULT_STATE, err, "--server-id %s on VIP %s: %s", text, vip, why) :
		     0;
}

/* VIP NAME: what every backend command starts with. */
static int backend_parse(struct cli *c, void *args, char **operands, int count)
{
	struct backend_args *a = args;

	(void)count;
	return cli_vip_arg(c, operands[0], &a->vip) ?: cli_name_arg(c, operands[1], &a->name);
}

/* VIP NAME ADDR, weight 1 unless --weight says otherwise. */
static int backend_add_parse(struct cli *c, void *args, char **operands, int count)
{
	struct backend_args *a = args;
	const char *why = NULL;
	int err = backend_parse(c, args, operands, count);

	if (err)
		return err;
	if (!a->weight_given)
		a->weight = 1;
	if (addr_parse(operands[2], &a->addr, &why))
		return cli_report(c, "malformed address '%s': %s", operands[2], why);
	return 0;
}

/* The MAC of @a's address, from the neighbour tables of the attached interfaces. */
static int backend_mac_resolve(const struct state *want, const struct backend_args *a,
			       __u8 mac[6], struct fault *f)
{
	int ifindexes[NEIGH_IFACES_MAX], err;
	char hwhy[HOST_WHY_MAX] = "", addr[ADDR_TEXT_MAX];
	size_t n = 0, i;

	for (i = 0; i < want->host.iface_count && n < NEIGH_IFACES_MAX; i++) {
		int ifindex = (int)if_nametoindex(want->host.ifaces[i].name);

		if (ifindex)
			ifindexes[n++] = ifindex;
	}
	err = host_neigh_mac(&a->addr, ifindexes, n, mac, NEIGH_TIMEOUT_MS, hwhy);
	if (err) {
		addr_format(&a->addr, addr);
		fault_set(f, FAULT_KERNEL, err, "cannot resolve the MAC of %s: %s", addr, hwhy);
	}
	return err;
}

/*
 * An encapsulated VIP's backend: reached through the FIB, from the
 * configured source of its family, with the next hop's neighbour resolved
 * (the program drops what finds none, under drop_no_neigh).
 */
static int backend_route_check(const struct change_ctx *ctx, const struct state *want,
			       const struct state_vip *v, const struct backend_args *a,
			       struct fault *f)
{
	const struct addr *source = a->addr.family == LB_FAMILY_IPV4 ? &want->host.encap.source4 :
								       &want->host.encap.source6;
	char hwhy[HOST_WHY_MAX] = "", addr[ADDR_TEXT_MAX];
	int err;

	addr_format(&a->addr, addr);
	if (a->mac_given)
		return fault_set(f, FAULT_USAGE, -EINVAL,
				 "--mac applies to l2 VIPs only; VIP forwards by %s",
				 state_forward_name(v->forward));
	if (!source->family)
		return fault_set(f, FAULT_STATE, -EDESTADDRREQ,
				 "no IPv%d source to encapsulate to %s from; attach with --source "
				 "ADDR", a->addr.family == LB_FAMILY_IPV4 ? 4 : 6, addr);
	if (ctx->dry_run)
		return 0;
	err = host_next_hop_resolve(&a->addr, NEIGH_TIMEOUT_MS, hwhy);
	if (err)
		fault_set(f, FAULT_KERNEL, err, "cannot reach %s: %s", addr, hwhy);
	return err;
}

/*
 * A retired backend added again at its address comes back as itself, as
 * GLB's "filling" backends do: its slot and cookie, so the pins of its old
 * connections hold again, and its name, so its ring points are the ones it
 * had. Its kept weights stay, for the hop lists of the rings that name it.
 * What the add says (weight, check) is its own now, and it starts up.
 */
/* Is a backend slot free in @s? */
static int backend_slots_free(const struct state *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->fleet.vip_count; i++)
		n += s->fleet.vips[i].backend_count;
	return n < LB_BACKENDS_MAX - 1;
}

static void backend_readd(struct state_backend *old, const struct state_backend *b)
{
	old->retired = 0;
	old->draining = 0;
	old->down = 0;
	old->held = 0;
	old->weight = b->weight;
	old->check_set = b->check_set;
	old->check = b->check;
}

static int backend_add_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			     struct fault *f)
{
	const struct backend_args *a = args;
	struct state_backend b = { .addr = a->addr, .weight = a->weight };
	struct state_vip *v = cli_vip_find(want, &a->vip, f);
	struct state_backend *old;
	char vip[ADDR_TEXT_MAX];
	int err;

	if (!v)
		return -ENOENT;
	vip_format(&v->spec, vip);
	old = state_backend_find(v, a->name);
	if (old && !old->retired)
		return fault_set(f, FAULT_STATE, -EEXIST, "backend '%s' already exists on VIP %s",
				 a->name, vip);
	if (old && !addr_equal(&old->addr, &a->addr)) {
		char was[ADDR_TEXT_MAX];

		addr_format(&old->addr, was);
		return fault_set(f, FAULT_STATE, -EEXIST, "backend '%s' of VIP %s was removed from "
				 "%s, and previous rings still name it: add it again at %s (it "
				 "comes back as itself) or under another name", a->name, vip, was,
				 was);
	}
	snprintf(b.name, sizeof(b.name), "%s", a->name);
	if (a->check.given) {
		/* Its own check: the VIP's, with what the options say. */
		b.check = v->check;
		b.check_set = 1;
		err = cli_check_apply(&a->check, &b.check, f);
		if (err)
			return err;
	}
	if (v->forward != LB_FORWARD_L2) {
		err = backend_route_check(ctx, want, v, a, f);
		if (err)
			return err;
	} else if (a->mac_given) {
		memcpy(b.mac, a->mac, sizeof(b.mac));
	} else if (!ctx->dry_run) {
		err = backend_mac_resolve(want, a, b.mac, f);
		if (err)
			return err;
	}
	if (a->server_id_len) {
		err = backend_server_id_take(a, v, old, b.server_id, f);
		if (err)
			return err;
	}
	if (old) {
		backend_readd(old, &b);
		if (a->server_id_len)
			memcpy(old->server_id, b.server_id, sizeof(b.server_id));
		return cli_ring_fits(v, f);
	}
	err = state_backend_add(want, v, &b);
	if (err == -ENOSPC && v->quic.set && backend_slots_free(want))
		fault_set(f, FAULT_STATE, err, "VIP %s: every server id of %u octets is taken", vip,
			  v->quic.cfg.sid_len);
	else if (err == -ENOSPC)
		fault_set(f, FAULT_STATE, err, "all %d backend slots are in use", LB_BACKENDS_MAX - 1);
	else if (err)
		fault_set(f, FAULT_STATE, err, "%s", strerror(-err));
	return err ?: cli_ring_fits(v, f);
}

/*
 * Made, but perhaps to no avail: a backend whose address this host has no
 * route to (an l2 backend given its --mac is asked nothing else) is said
 * in one line. An encapsulated one was refused already.
 */
static void backend_add_after(struct cli *c, const void *args)
{
	const struct backend_args *a = args;
	char why[HOST_WHY_MAX] = "", addr[ADDR_TEXT_MAX];
	struct addr hop;
	int oif;

	if (host_next_hop(&a->addr, &hop, &oif, why) == 0)
		return;
	addr_format(&a->addr, addr);
	fprintf(stderr, "ringlb: %s: warning: this host has no route to %s (%s); backend '%s' "
		"was added all the same\n", c->name, addr, why, a->name);
}

/* The backend @a names, and its VIP; NULL and why when there is none. */
static struct state_backend *backend_of(const struct state *want, const struct backend_args *a,
					struct state_vip **v, struct fault *f)
{
	*v = cli_vip_find(want, &a->vip, f);
	return *v ? cli_backend_find(*v, a->name, f) : NULL;
}

static int backend_weight_parse(struct cli *c, void *args, char **operands, int count)
{
	return backend_parse(c, args, operands, count) ?:
	       cli_weight_arg(c, operands[2], &((struct backend_args *)args)->weight);
}

static int backend_weight_apply(const struct change_ctx *ctx, const void *args,
				struct state *want, struct fault *f)
{
	const struct backend_args *a = args;
	struct state_vip *v;
	struct state_backend *b = backend_of(want, a, &v, f);

	(void)ctx;
	if (!b)
		return -ENOENT;
	/* A weight given to a draining backend would change nothing until an undrain. */
	if (b->draining && !a->undrain) {
		char vip[ADDR_TEXT_MAX];

		vip_format(&v->spec, vip);
		return fault_set(f, FAULT_STATE, -EBUSY, "backend '%s' is draining: add --undrain "
				 "to weigh and undrain it, or 'ringlb backend undrain %s %s' first",
				 a->name, vip, a->name);
	}
	b->weight = a->weight;
	b->draining = 0;
	return cli_ring_fits(v, f);
}

/* Drain (@draining 1) or undrain (0) the backend @args names; refused when it already is. */
static int backend_draining_set(const void *args, struct state *want, int draining,
				struct fault *f)
{
	const struct backend_args *a = args;
	struct state_vip *v;
	struct state_backend *b = backend_of(want, a, &v, f);

	if (!b)
		return -ENOENT;
	if (b->draining == draining)
		return fault_set(f, FAULT_STATE, -EALREADY, draining ?
				 "backend '%s' is already draining" : "backend '%s' is not draining",
				 a->name);
	b->draining = draining;
	return 0;
}

static int backend_drain_apply(const struct change_ctx *ctx, const void *args,
			       struct state *want, struct fault *f)
{
	(void)ctx;
	return backend_draining_set(args, want, 1, f);
}

static int backend_undrain_apply(const struct change_ctx *ctx, const void *args,
				 struct state *want, struct fault *f)
{
	(void)ctx;
	return backend_draining_set(args, want, 0, f);
}

static int backend_remove_apply(const struct change_ctx *ctx, const void *args,
				struct state *want, struct fault *f)
{
	const struct backend_args *a = args;
	struct state_vip *v;
	struct state_backend *b = backend_of(want, a, &v, f);

	(void)ctx;
	if (!b)
		return -ENOENT;
	state_backend_remove(v, b);
	return 0;
}

static const struct cli_option backend_add_options[] = {
	CLI_OPT_CUSTOM("mac", "MAC", "the backend's MAC, l2 VIPs only (default: the neighbour "
		       "table's)", backend_mac_set),
	CLI_OPT_U32("weight", "W", "its weight, 0.." LIMIT_STR(RING_WEIGHT_MAX) " (default 1)",
		    struct backend_args, weight, 0, RING_WEIGHT_MAX,
		    CLI_GIVEN(struct backend_args, weight_given, 1)),
	CLI_OPT_CUSTOM("server-id", "HEX", "its QUIC-LB server id, QUIC VIPs only (default: the "
		       "lowest free one)", backend_server_id_set),
	CLI_CHECK_OPTIONS,
	CLI_OPT_END,
};

const struct cli_command cli_backend_add = {
	.object = "backend", .verb = "add", .operands = "VIP NAME ADDR", .min_operands = 3,
	.max_operands = 3, .options = backend_add_options,
	.args_size = sizeof(struct backend_args), .parse = backend_add_parse,
	.apply = backend_add_apply, .after = backend_add_after,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Add a backend. On an l2 VIP, without --mac its MAC is taken from the\n"
		"    neighbour table of an interface ringlb is attached to, resolving it if\n"
		"    needed. On an ipip or gue VIP, ADDR may be of either family: the route\n"
		"    to it is looked up and its next hop resolved. A check option gives the\n"
		"    backend a check of its own: its VIP's, with what the options change.\n"
		"    On a QUIC VIP it gets a QUIC-LB server id: --server-id's (the VIP's\n"
		"    length, not all zero, no other backend's), else the lowest free one;\n"
		"    `ringlb quic-lb config` tells its server.",
};

static const struct cli_option backend_weight_options[] = {
	CLI_OPT_FLAG("undrain", "a draining backend: undrain it too (without, it is refused)",
		     struct backend_args, undrain),
	CLI_OPT_END,
};

const struct cli_command cli_backend_weight = {
	.object = "backend", .verb = "weight", .operands = "VIP NAME W", .min_operands = 3,
	.max_operands = 3, .options = backend_weight_options,
	.args_size = sizeof(struct backend_args),
	.parse = backend_weight_parse, .apply = backend_weight_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Change a backend's weight; only the flows that must move do. A draining\n"
		"    backend's weight is refused unless --undrain says to undrain it too.",
};

const struct cli_command cli_backend_drain = {
	.object = "backend", .verb = "drain", .operands = "VIP NAME", .min_operands = 2,
	.max_operands = 2, .args_size = sizeof(struct backend_args), .parse = backend_parse,
	.apply = backend_drain_apply, .flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Stop new connections to a backend; its established ones continue. Watch\n"
		"    LIVE FLOWS in `ringlb stats`; at 0, `ringlb backend remove`.",
};

const struct cli_command cli_backend_undrain = {
	.object = "backend", .verb = "undrain", .operands = "VIP NAME", .min_operands = 2,
	.max_operands = 2, .args_size = sizeof(struct backend_args), .parse = backend_parse,
	.apply = backend_undrain_apply, .flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Undo a drain: the backend takes its points of the ring again, and new\n"
		"    connections with them; the connections it kept stay. Under the daemon,\n"
		"    its health checks still decide whether it is in the ring.",
};

const struct cli_command cli_backend_remove = {
	.object = "backend", .verb = "remove", .operands = "VIP NAME", .min_operands = 2,
	.max_operands = 2, .args_size = sizeof(struct backend_args), .parse = backend_parse,
	.apply = backend_remove_apply, .flags = CLI_CHANGES | CLI_NEEDS_MAPS | CLI_DRY_RUN,
	.help = "    Take a backend out; flows still pinned to it are placed again.",
};
