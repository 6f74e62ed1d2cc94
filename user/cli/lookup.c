// SPDX-License-Identifier: GPL-2.0-only
/*
 * lookup: the backend the kernel picks for a client's flow, asked the way
 * the program asks: its pin in the flow table when it has one, else the
 * ring, hashed with the key the kernel uses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "host.h"
#include "ring.h"

struct lookup_args {
	struct vip_spec vip;
	struct addr client;
	const char *client_text;
	__u16 port;
};

static int lookup_parse(struct cli *c, void *args, char **operands, int count)
{
	struct lookup_args *a = args;
	const char *why = NULL;

	(void)count;
	if (cli_vip_arg(c, operands[0], &a->vip))
		return -EINVAL;
	if (endpoint_parse(operands[1], &a->client, &a->port, &why))
		return cli_report(c, "malformed client '%s': %s", operands[1], why);
	a->client_text = operands[1];
	return 0;
}

static void lookup_text(const json_t *model)
{
	json_t *hops = json_object_get(model, "hops"), *hop;
	size_t i;

	printf("%s\n", json_string_value(json_object_get(model, "backend")));
	if (!json_array_size(hops))
		return;
	/* A second line only for a flow with a hop list: scripts reading one name still can. */
	printf("then:");
	json_array_foreach(hops, i, hop)
		printf(" %s", json_string_value(hop));
	printf(" (the hop list of its packets other than a SYN)\n");
}

/* Where the flow goes, or why it goes nowhere. */
static int lookup_answer(struct cli *c, const struct lookup_args *a, const struct state *s,
			 json_t **model, char why[FAULT_WHY_MAX])
{
	struct state_vip *vp = cli_vip_find(s, &a->vip, why);
	char spec[ADDR_TEXT_MAX], addr[ADDR_TEXT_MAX];
	struct kernel_answer answer;
	struct lb_maps maps;
	__u64 secret[2];
	int attached, err;

	if (!vp)
		return -ENOENT;
	vip_format(&vp->spec, spec);
	if (a->client.family != vp->spec.addr.family) {
		snprintf(why, FAULT_WHY_MAX, "client %s is not of VIP %s's address family",
			 a->client_text, spec);
		return -EINVAL;
	}
	/* With the maps, pinned flows count too: that is what the kernel does. */
	lb_maps_init(&maps);
	attached = site_maps_pinned(&c->site) == 1 && host_privileged() &&
		   lb_maps_open_pinned(&maps, c->site.pin_dir) == 0;
	err = secret_served(&c->site, attached, secret, why);
	if (!err) {
		err = kernel_lookup(attached ? &maps : NULL, secret, vp, &a->client, a->port, &answer);
		if (err)
			snprintf(why, FAULT_WHY_MAX, "VIP %s: %s", spec,
				 err == -E2BIG ? ring_strerror(err) : strerror(-err));
	}
	memset(secret, 0, sizeof(secret));
	lb_maps_close(&maps);
	if (err)
		return err;
	if (!answer.backend) {
		snprintf(why, FAULT_WHY_MAX, "VIP %s has no backend taking new flows; the kernel "
			 "drops this flow", spec);
		return -ENOENT;
	}
	addr_format(&answer.backend->addr, addr);
	*model = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "backend", answer.backend->name,
			   "address", addr, "via", answer.pinned ? "flow table" : "ring", "state",
			   state_backend_state(answer.backend), "new_connection",
			   answer.new_connection ? answer.new_connection->name : NULL);
	if (*model && answer.hop_count) {
		json_t *hops = json_array();
		unsigned int i;

		for (i = 0; i < answer.hop_count; i++)
			json_array_append_new(hops, json_string(answer.hops[i]->name));
		json_object_set_new(*model, "hops", hops);
	}
	return 0;
}

static int lookup_run(struct cli *c, const void *args)
{
	char why[FAULT_WHY_MAX] = "";
	json_t *model = NULL;
	struct state s;
	int err;

	if (site_state_read_shared(&c->site, &s, why))
		return cli_report(c, "%s", why);
	err = lookup_answer(c, args, &s, &model, why);
	state_free(&s);
	if (err)
		return cli_report(c, "%s", why);
	cli_print(c, model, lookup_text);
	return 0;
}

const struct cli_command cli_lookup = {
	.object = "lookup", .operands = "VIP CLIENT_ADDR:CLIENT_PORT", .min_operands = 2,
	.max_operands = 2, .args_size = sizeof(struct lookup_args), .parse = lookup_parse,
	.run = lookup_run, .flags = CLI_OUTPUT,
	.help = "    The backend the kernel picks for this client's flow: its pinned\n"
		"    backend if the flow table holds one, else the ring's, hashed with the\n"
		"    key the kernel uses. For a TCP flow of a gue VIP the ring places, also\n"
		"    the hop list its packets other than a SYN carry (\"then:\").",
};
