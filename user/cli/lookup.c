// SPDX-License-Identifier: GPL-2.0-only
/*
 * lookup: the backend the kernel picks for a client's flow, asked the way
 * the program asks: its pin in the flow table when it has one, else the
 * ring, hashed with the key the kernel uses. Many flows in one command
 * share one read of the state and one build of the VIP's rings.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host.h"
#include "ring.h"

/** struct lookup_flow - one CLIENT:PORT operand. */
struct lookup_flow {
	struct addr client;
	__u16 port;
	const char *text;
};

/** LOOKUP_CIDS_MAX - connection IDs one lookup takes. */
#define LOOKUP_CIDS_MAX 4096

/** struct lookup_cid - one --cid connection ID. */
struct lookup_cid {
	__u8 cid[LB_QUIC_CID_MAX];
	size_t len;
	int initial; /* --initial: a client's Initial, not a short header */
	char text[2 * LB_QUIC_CID_MAX + 1];
};

struct lookup_args {
	struct vip_spec vip;
	char **clients;
	int count;
	size_t cid_count;
	struct lookup_cid cids[LOOKUP_CIDS_MAX];
};

/* One connection ID of --cid (@initial 0) or --initial (1). */
static int lookup_cid_add(struct cli *c, void *args, const char *item, int initial)
{
	struct lookup_args *a = args;
	struct lookup_cid *k;

	if (a->cid_count == LOOKUP_CIDS_MAX)
		return cli_usage(c, "more than %d connection IDs", LOOKUP_CIDS_MAX);
	k = &a->cids[a->cid_count];
	if (quic_lb_hex_parse(item, k->cid, sizeof(k->cid), &k->len))
		return cli_usage(c, "malformed connection ID '%s': 1 to %d octets in hex", item,
				 LB_QUIC_CID_MAX);
	quic_lb_hex(k->cid, k->len, k->text);
	k->initial = initial;
	a->cid_count++;
	return 0;
}

static int lookup_cid_one(struct cli *c, void *args, const char *item)
{
	return lookup_cid_add(c, args, item, 0);
}

static int lookup_initial_one(struct cli *c, void *args, const char *item)
{
	return lookup_cid_add(c, args, item, 1);
}

/* --cid HEX[,HEX...] and --initial HEX[,HEX...]: repeatable. */
static int lookup_cid_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "cid", value, args, lookup_cid_one);
}

static int lookup_initial_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "initial", value, args, lookup_initial_one);
}

/* @text as a flow, or why not. */
static int flow_parse(struct cli *c, const char *text, struct lookup_flow *f)
{
	const char *why = NULL;

	if (endpoint_parse(text, &f->client, &f->port, &why))
		return cli_report(c, "malformed client '%s': %s", text, why);
	f->text = text;
	return 0;
}

/* Every operand checked now: a command line that does not parse does nothing. */
static int lookup_parse(struct cli *c, void *args, char **operands, int count)
{
	struct lookup_args *a = args;
	struct lookup_flow f;
	int i;

	if (cli_vip_arg(c, operands[0], &a->vip))
		return -EINVAL;
	a->clients = operands + 1;
	a->count = count - 1;
	if (!a->count && !a->cid_count)
		return cli_usage(c, "say which flows: CLIENT_ADDR:CLIENT_PORT operands, --cid or "
				 "--initial");
	for (i = 0; i < a->count; i++)
		if (flow_parse(c, a->clients[i], &f))
			return -EINVAL;
	return 0;
}

/* One flow's answer as text: the backend, and its hop list after "then:". */
static void flow_text(const json_t *flow, const char *client)
{
	json_t *hops = json_object_get(flow, "hops"), *hop;
	size_t i;

	if (client)
		printf("%s ", client);
	if (json_object_get(flow, "cid")) {
		const char *sid = json_string_value(json_object_get(flow, "server_id"));

		if (!client)
			printf("%s ", json_string_value(json_object_get(flow, "cid")));
		printf("%s (%s%s%s)\n", json_string_value(json_object_get(flow, "backend")),
		       json_string_value(json_object_get(flow, "reason")), sid ? ", server id " : "",
		       sid ? sid : "");
		return;
	}
	if (json_object_get(flow, "refused")) {
		const char *prefix = json_string_value(json_object_get(flow, "prefix"));

		/* No prefix holds the client: refused for being outside the allow list. */
		printf("refused (%s%s%s)\n", json_string_value(json_object_get(flow, "refused")),
		       prefix ? ", by " : "", prefix ? prefix : "");
		return;
	}
	printf("%s", json_string_value(json_object_get(flow, "backend")));
	if (json_array_size(hops)) {
		printf(client ? " then:" : "\nthen:");
		json_array_foreach(hops, i, hop)
			printf(" %s", json_string_value(hop));
		if (!client)
			printf(" (the hop list of its packets other than a SYN)");
	}
	printf("\n");
}

/*
 * One flow: its backend alone on a line (a second line only for a flow with
 * a hop list: scripts reading one name still can). Many: a line each,
 * "CLIENT BACKEND [then: HOPS]", in the order asked.
 */
static void lookup_text(const json_t *model)
{
	const json_t *flow;
	size_t i;

	if (!json_is_array(model)) {
		flow_text(model, NULL);
		return;
	}
	json_array_foreach(model, i, flow)
		flow_text(flow, json_string_value(json_object_get(flow, "client")) ?:
				json_string_value(json_object_get(flow, "cid")));
}

/* Where a QUIC packet with connection ID @k goes. */
static json_t *cid_answer(const struct kernel_chooser *kc, const struct lookup_cid *k,
			  const char *spec, struct fault *f)
{
	struct kernel_quic_answer answer;
	char sid[2 * LB_QUIC_LB_SID_MAX + 1];
	json_t *model;

	if (kernel_quic_lookup(kc, k->initial ? KERNEL_QUIC_INITIAL : KERNEL_QUIC_SHORT, k->cid,
			       k->len, &answer)) {
		fault_set(f, FAULT_USAGE, -EINVAL, "connection ID %s: a short header whose "
			  "connection ID starts so carries %zu octets of it on VIP %s, not %zu "
			  "(an Initial's: --initial)", k->text, answer.short_len, spec, k->len);
		return NULL;
	}
	if (!answer.backend) {
		fault_set(f, FAULT_STATE, -ENOENT, "VIP %s has no backend taking connection ID %s; "
			  "the kernel drops it", spec, k->text);
		return NULL;
	}
	quic_lb_hex(answer.sid, kc->vip->quic.cfg.sid_len, sid);
	model = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "cid", k->text, "backend",
			  answer.backend->name, "via",
			  answer.reason == LB_REASON_FORWARDED_QUIC ? "server id" : "ring", "reason",
			  lb_reasons[answer.reason].name, "server_id", answer.sid_ok ? sid : NULL);
	if (!model)
		fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
	return model;
}

/* Where @f goes, or why it goes nowhere. */
static json_t *flow_answer(const struct kernel_chooser *kc, const struct lookup_flow *fl,
			   const char *spec, int many, struct fault *f)
{
	struct kernel_answer answer;
	char addr[ADDR_TEXT_MAX];
	json_t *model;
	unsigned int i;

	if (kernel_lookup(kc, &fl->client, fl->port, &answer)) {
		fault_set(f, FAULT_USAGE, -EINVAL, "client %s is not of VIP %s's address family",
			  fl->text, spec);
		return NULL;
	}
	if (answer.refused) {
		char prefix[ADDR_TEXT_MAX];

		if (answer.source)
			prefix_format(&answer.source->prefix, prefix);
		model = json_pack("{s:s, s:s?}", "refused", lb_reasons[answer.refused].name,
				  "prefix", answer.source ? prefix : NULL);
		if (!model)
			fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
		return model;
	}
	if (!answer.backend) {
		fault_set(f, FAULT_STATE, -ENOENT, "VIP %s has no backend taking new flows; the "
			  "kernel drops %s", spec, many ? "the flows" : "this flow");
		return NULL;
	}
	addr_format(&answer.backend->addr, addr);
	model = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "backend", answer.backend->name,
			  "address", addr, "via", answer.pinned ? "flow table" : "ring", "state",
			  state_backend_state(answer.backend), "new_connection",
			  answer.new_connection ? answer.new_connection->name : NULL);
	if (model && answer.hop_count) {
		json_t *hops = json_array();

		for (i = 0; i < answer.hop_count; i++)
			json_array_append_new(hops, json_string(answer.hops[i]->name));
		json_object_set_new(model, "hops", hops);
	}
	if (!model)
		fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
	return model;
}

/* Every flow's answer: one object for one flow, an array of them (with "client") for many. */
static int lookup_answer(struct cli *c, const struct lookup_args *a,
			 const struct lookup_flow *fl, const struct state *s, json_t **model,
			 struct fault *f)
{
	struct state_vip *vp = cli_vip_find(s, &a->vip, f);
	struct kernel_chooser kc = { 0 };
	char spec[ADDR_TEXT_MAX];
	struct lb_maps maps;
	__u64 secret[2];
	json_t *flows = NULL, *one;
	int attached, err, i;

	if (!vp)
		return -ENOENT;
	vip_format(&vp->spec, spec);
	/* With the maps, pinned flows count too: that is what the kernel does. */
	lb_maps_init(&maps);
	attached = site_maps_pinned(&c->site) == 1 && host_privileged() &&
		   lb_maps_open_pinned(&maps, c->site.pin_dir) == 0;
	err = secret_served(&c->site, attached, secret, f);
	if (!err) {
		err = kernel_chooser_open(&kc, attached ? &maps : NULL, secret, vp);
		if (err)
			fault_set(f, FAULT_STATE, err, "VIP %s: %s", spec,
				  err == -E2BIG ? ring_strerror(err) : strerror(-err));
	}
	memset(secret, 0, sizeof(secret));
	if (!err && a->cid_count)
		err = kernel_quic_open(&kc, f);
	if (!err && a->count + a->cid_count > 1)
		flows = json_array();
	for (i = 0; !err && i < a->count; i++) {
		one = flow_answer(&kc, &fl[i], spec, a->count > 1, f);
		if (!one)
			err = -ENOENT;
		else if (!flows)
			*model = one;
		else if (json_object_set_new(one, "client", json_string(fl[i].text)) ||
			 json_array_append_new(flows, one))
			err = -ENOMEM;
	}
	for (i = 0; !err && i < (int)a->cid_count; i++) {
		one = cid_answer(&kc, &a->cids[i], spec, f);
		if (!one)
			err = -ENOENT;
		else if (!flows)
			*model = one;
		else if (json_array_append_new(flows, one))
			err = -ENOMEM;
	}
	if (flows && !err)
		*model = flows;
	else
		json_decref(flows);
	if (kc.vip)
		kernel_chooser_close(&kc);
	lb_maps_close(&maps);
	return err;
}

static int lookup_run(struct cli *c, const void *args)
{
	const struct lookup_args *a = args;
	struct fault f = { 0 };
	struct lookup_flow *flows;
	char note[SITE_NOTE_MAX];
	json_t *model = NULL;
	struct state s;
	int err = 0, i;

	flows = calloc((size_t)a->count, sizeof(*flows));
	if (!flows)
		return cli_report(c, "out of memory");
	for (i = 0; i < a->count && !err; i++)
		err = flow_parse(c, a->clients[i], &flows[i]);
	if (!err && site_state_answer_shared(&c->site, &s, note, &f))
		err = cli_fault(c, &f);
	else if (!err && note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	if (err) {
		free(flows);
		return err;
	}
	err = lookup_answer(c, a, flows, &s, &model, &f);
	state_free(&s);
	free(flows);
	if (err)
		return cli_fault(c, &f);
	cli_print(c, model, lookup_text);
	return 0;
}

static const struct cli_option lookup_options[] = {
	CLI_OPT_CUSTOM("cid", "HEX[,HEX...]",
		       "QUIC VIPs: where short headers with this destination connection ID go "
		       "(repeatable)", lookup_cid_set),
	CLI_OPT_CUSTOM("initial", "HEX[,HEX...]",
		       "QUIC VIPs: where a client's Initial with this destination connection ID "
		       "goes (repeatable)", lookup_initial_set),
	CLI_OPT_END,
};

const struct cli_command cli_lookup = {
	.object = "lookup", .operands = "VIP [CLIENT_ADDR:CLIENT_PORT...]", .min_operands = 1,
	.max_operands = INT_MAX, .options = lookup_options, .args_size = sizeof(struct lookup_args),
	.parse = lookup_parse, .run = lookup_run, .flags = CLI_OUTPUT,
	.help = "    The backend the kernel picks for each client's flow: its pinned\n"
		"    backend if the flow table holds one, else the ring's, hashed with the\n"
		"    key the kernel uses. For a TCP flow of a gue VIP the ring places, also\n"
		"    the hop list its packets other than a SYN carry (\"then:\"). One flow:\n"
		"    its backend's name; several: a line each, CLIENT BACKEND [then: HOPS]\n"
		"    (--json: an array), with one read of the state and one build of the ring.\n"
		"    A client the VIP's source ranges refuse: \"refused (REASON, by PREFIX)\",\n"
		"    the reason the kernel drops it under (--json: \"refused\", \"prefix\").\n"
		"    --cid (QUIC VIPs): the backend a short header with that destination\n"
		"    connection ID goes to (its length as the kernel reads it: the VIP's, or\n"
		"    what a foreign ID's first octet says), as \"CID BACKEND (REASON[, server\n"
		"    id ID])\": by the server id it carries (forwarded_quic), else by the ring\n"
		"    over it; --initial: a client's Initial with that connection ID.",
};
