// SPDX-License-Identifier: GPL-2.0-only
/*
 * plan: the share of flows a backend change would move. The change is the
 * backend command's own: its operands and options are parsed by that
 * command's entry, and its apply function runs as a dry run on a copy of
 * the committed state. The rings before and after are then diffed. Nothing
 * is locked for longer than the read, and nothing changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ring.h"

/** PLAN_CIDS_MAX - connection IDs one plan follows. */
#define PLAN_CIDS_MAX 64

struct plan_args {
	const struct cli_command *change;
	struct backend_args backend;
	const char *weight; /* --weight, handed to the change's own option */
	const char *svg;    /* --svg FILE */
	size_t cid_count;   /* --cid: connection IDs of a QUIC VIP, before and after */
	__u8 cids[PLAN_CIDS_MAX][LB_QUIC_CID_MAX];
	size_t cid_len[PLAN_CIDS_MAX];
};

static int plan_cid_one(struct cli *c, void *args, const char *item)
{
	struct plan_args *p = args;

	if (p->cid_count == PLAN_CIDS_MAX)
		return cli_usage(c, "more than %d connection IDs", PLAN_CIDS_MAX);
	if (quic_lb_hex_parse(item, p->cids[p->cid_count], LB_QUIC_CID_MAX,
			      &p->cid_len[p->cid_count]))
		return cli_usage(c, "malformed connection ID '%s': 1 to %d octets in hex", item,
				 LB_QUIC_CID_MAX);
	p->cid_count++;
	return 0;
}

/* --cid HEX[,HEX...]: repeatable. */
static int plan_cid_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "cid", value, args, plan_cid_one);
}

/* The changes plan measures, by the word that names them. */
static const struct {
	const char *verb;
	const struct cli_command *cmd;
} plan_changes[] = {
	{ "add", &cli_backend_add },
	{ "remove", &cli_backend_remove },
	{ "weight", &cli_backend_weight },
	{ "drain", &cli_backend_drain },
	{ "undrain", &cli_backend_undrain },
};


/* VIP VERB NAME [ARG]: the change's own operands are VIP NAME [ARG]. */
static int plan_parse(struct cli *c, void *args, char **operands, int count)
{
	struct plan_args *p = args;
	const struct cli_option *o;
	char *change_operands[3];
	size_t i;
	int err;

	for (i = 0; i < sizeof(plan_changes) / sizeof(plan_changes[0]); i++)
		if (strcmp(plan_changes[i].verb, operands[1]) == 0)
			p->change = plan_changes[i].cmd;
	if (!p->change)
		return cli_usage(c, "plan add, remove, weight, drain or undrain, not '%s'", operands[1]);
	/* Only a change whose apply asks the host nothing in a dry run can be measured. */
	if (!(p->change->flags & CLI_DRY_RUN))
		return cli_report(c, "ringlb %s %s cannot be planned", p->change->object,
				  p->change->verb);
	if (p->weight) {
		for (o = p->change->options; o && o->name && strcmp(o->name, "weight"); o++)
			;
		if (!o || !o->name)
			return cli_usage(c, "--weight applies to plan add");
		err = cli_option_set(c, o, &p->backend, p->weight);
		if (err)
			return err;
	}
	change_operands[0] = operands[0];
	for (i = 2; i < (size_t)count; i++)
		change_operands[i - 1] = operands[i];
	return cli_parse_operands(c, p->change, &p->backend, change_operands, count - 1);
}

/* The model: the share that moves, and each backend's before and after. */
static int plan_model(const struct state_vip *before, const struct state_vip *after,
		      json_t **out)
{
	struct ring *before_ring = NULL, *after_ring = NULL;
	struct ring_diff diff = { 0 };
	__u32 *ids = NULL;
	json_t *members;
	size_t i;
	int err;

	err = state_vip_ring(before, &before_ring, &ids);
	free(ids);
	ids = NULL;
	if (!err)
		err = state_vip_ring(after, &after_ring, &ids);
	if (!err)
		err = ring_diff(before_ring, after_ring, &diff);
	if (!err) {
		members = json_array();
		for (i = 0; i < diff.count; i++)
			json_array_append_new(members, json_pack(
				"{s:s, s:f, s:f, s:f, s:f}", "name", diff.members[i].name,
				"share_before", diff.members[i].share_before, "share_after",
				diff.members[i].share_after, "moved_in", diff.members[i].moved_in,
				"moved_out", diff.members[i].moved_out));
		*out = json_pack("{s:f, s:o}", "moved", diff.moved, "backends", members);
	}
	ring_diff_free(&diff);
	ring_free(before_ring);
	ring_free(after_ring);
	free(ids);
	return err;
}

static void plan_text(const json_t *model)
{
	const json_t *b, *k;
	size_t i;

	printf("%.2f%% of flows would move\n  %-20s %8s %8s %9s %9s\n",
	       100 * json_real_value(json_object_get(model, "moved")), "NAME", "BEFORE", "AFTER",
	       "GAINS", "LOSES");
	json_array_foreach(json_object_get(model, "backends"), i, b)
		printf("  %-20s %7.2f%% %7.2f%% %8.2f%% %8.2f%%\n",
		       json_string_value(json_object_get(b, "name")),
		       100 * json_real_value(json_object_get(b, "share_before")),
		       100 * json_real_value(json_object_get(b, "share_after")),
		       100 * json_real_value(json_object_get(b, "moved_in")),
		       100 * json_real_value(json_object_get(b, "moved_out")));
	if (json_object_get(model, "quic"))
		printf("  QUIC: %s\n", json_string_value(json_object_get(model, "quic")));
	json_array_foreach(json_object_get(model, "cids"), i, k)
		printf("  %s: %s (%s) -> %s (%s)\n", json_string_value(json_object_get(k, "cid")),
		       json_string_value(json_object_get(k, "before")) ?: "dropped",
		       json_string_value(json_object_get(k, "reason_before")),
		       json_string_value(json_object_get(k, "after")) ?: "dropped",
		       json_string_value(json_object_get(k, "reason_after")));
}

/*
 * A QUIC VIP's part of the plan: what the share means for it, and where each
 * --cid goes before and after the change (kernel_quic_lookup(), on the rings
 * the state asks for).
 */
static int plan_quic(struct cli *c, const struct plan_args *p, const struct state_vip *before,
		     const struct state_vip *after, json_t *model, struct fault *f)
{
	struct kernel_chooser kc[2] = { 0 };
	const struct state_vip *v[2] = { before, after };
	char hex[2 * LB_QUIC_CID_MAX + 1], spec[ADDR_TEXT_MAX];
	__u64 secret[2];
	json_t *cids;
	size_t i;
	int err = 0, k;

	if (!before->quic.set) {
		vip_format(&before->spec, spec);
		return p->cid_count ? fault_set(f, FAULT_USAGE, -EINVAL,
						"--cid: VIP %s is no QUIC VIP (vip quic-lb)", spec) :
				      0;
	}
	json_object_set_new(model, "quic", json_string(
		"a connection whose server id names a serving backend (draining included) "
		"moves only when that backend goes; the share is of connection IDs that name "
		"none, a client's Initials among them"));
	if (!p->cid_count)
		return 0;
	err = secret_served(&c->site, 0, secret, f);
	for (k = 0; !err && k < 2; k++) {
		err = kernel_chooser_open(&kc[k], NULL, secret, v[k]);
		if (err)
			fault_set(f, FAULT_STATE, err, "%s", ring_strerror(err));
		else
			err = kernel_quic_open(&kc[k], f);
	}
	memset(secret, 0, sizeof(secret));
	cids = json_array();
	for (i = 0; !err && i < p->cid_count; i++) {
		struct kernel_quic_answer a[2];

		quic_lb_hex(p->cids[i], p->cid_len[i], hex);
		for (k = 0; !err && k < 2; k++)
			if (kernel_quic_lookup(&kc[k], KERNEL_QUIC_SHORT, p->cids[i], p->cid_len[i],
					       &a[k]))
				err = fault_set(f, FAULT_USAGE, -EINVAL,
						"connection ID %s: a short header whose connection "
						"ID starts so carries %zu octets of it, not %zu",
						hex, a[k].short_len, p->cid_len[i]);
		if (err)
			break;
		json_array_append_new(cids, json_pack(
			"{s:s, s:s?, s:s?, s:s, s:s}", "cid", hex, "before",
			a[0].backend ? a[0].backend->name : NULL, "after",
			a[1].backend ? a[1].backend->name : NULL, "reason_before",
			lb_reasons[a[0].reason].name, "reason_after", lb_reasons[a[1].reason].name));
	}
	json_object_set_new(model, "cids", cids);
	for (k = 0; k < 2; k++)
		if (kc[k].vip)
			kernel_chooser_close(&kc[k]);
	return err;
}

static int plan_run(struct cli *c, const void *args)
{
	const struct plan_args *p = args;
	struct change_ctx ctx = { .site = &c->site, .dry_run = 1 };
	struct fault f = { 0 };
	struct state s, after;
	json_t *model = NULL;
	int err;

	state_init(&after);
	err = site_state_read_shared(&c->site, &s, &f);
	if (err)
		return cli_fault(c, &f);
	err = state_clone(&after, &s);
	if (err)
		fault_set(&f, FAULT_STATE, err, "out of memory");
	else
		err = p->change->apply(&ctx, &p->backend, &after, &f);
	if (!err) {
		err = plan_model(state_vip_find(&s, &p->backend.vip),
				 state_vip_find(&after, &p->backend.vip), &model);
		if (err)
			fault_set(&f, FAULT_STATE, err, "%s", ring_strerror(err));
		else
			err = plan_quic(c, p, state_vip_find(&s, &p->backend.vip),
					state_vip_find(&after, &p->backend.vip), model, &f);
	}
	if (err) {
		state_free(&after);
		state_free(&s);
		return cli_fault(c, &f);
	}
	if (p->svg)
		err = cli_svg_write(c, p->svg, state_vip_find(&s, &p->backend.vip),
				    state_vip_find(&after, &p->backend.vip), s.fleet.generation);
	state_free(&after);
	state_free(&s);
	if (err || (p->svg && strcmp(p->svg, "-") == 0)) {
		json_decref(model);
		return err;
	}
	cli_print(c, model, plan_text);
	return 0;
}

static const struct cli_option plan_options[] = {
	CLI_OPT_STRING("weight", "W", "the weight of the backend plan add adds (default 1)",
		       struct plan_args, weight),
	CLI_OPT_STRING("svg", "FILE", "draw the rings before and after and the arcs that move, as "
		       "SVG", struct plan_args, svg),
	CLI_OPT_CUSTOM("cid", "HEX[,HEX...]", "QUIC VIPs: where packets with this connection ID "
		       "go before and after (repeatable)", plan_cid_set),
	CLI_OPT_END,
};

const struct cli_command cli_plan = {
	.object = "plan",
	.operands = "VIP add NAME ADDR | VIP remove NAME | VIP weight NAME W | VIP drain NAME |"
		    " VIP undrain NAME",
	.min_operands = 3, .max_operands = 4, .options = plan_options,
	.args_size = sizeof(struct plan_args), .parse = plan_parse, .run = plan_run,
	.flags = CLI_OUTPUT,
	.help = "    The share of flows a change would move, per backend: the backend\n"
		"    command's own change, run on a copy. Changes nothing. --svg draws the\n"
		"    rings before and after, the arcs that move and from which backend to which.\n"
		"    On a QUIC VIP, connections go by server id and move only when their\n"
		"    backend goes; --cid says where packets with a connection ID go before\n"
		"    and after (\"CID: BEFORE (REASON) -> AFTER (REASON)\").",
};
