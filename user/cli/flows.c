// SPDX-License-Identifier: GPL-2.0-only
/*
 * flows and flows delete: the flow table, as IPVS's `-Lnc` and Katran's LRU
 * tools show it: each pinned flow (client, VIP, backend, age, idle, FIN and
 * RST marks) with a count per backend, chosen by VIP, backend and client;
 * and the same selection deleted, so the next packet of each is placed by
 * the ring again. A flow names its backend only while the backend's slot
 * still holds that backend (same cookie): an entry of a removed backend is
 * "(gone)", as the kernel will place it again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host.h"

/**
 * struct flows_args - the selection.
 * @vip: the VIP operand, when given (@have_vip)
 * @backend: --backend NAME, or NULL
 * @client: --client ADDR[:PORT], or NULL
 * @all: flows delete --all: every flow (a selection is otherwise required)
 * @addr: @client's address, @port its port (0: any)
 */
struct flows_args {
	struct vip_spec vip;
	int have_vip;
	const char *backend;
	const char *client;
	int all;
	struct addr addr;
	__u16 port;
};

static int flows_parse(struct cli *c, void *args, char **operands, int count)
{
	struct flows_args *a = args;
	const char *why = NULL;

	if (count && cli_vip_arg(c, operands[0], &a->vip))
		return -EINVAL;
	a->have_vip = count > 0;
	if (a->client && endpoint_parse(a->client, &a->addr, &a->port, &why) &&
	    addr_parse(a->client, &a->addr, &why))
		return cli_usage(c, "--client %s: %s", a->client, why);
	if (a->backend && !a->have_vip)
		return cli_usage(c, "--backend names a backend of one VIP: say the VIP too");
	return 0;
}

static int flows_delete_parse(struct cli *c, void *args, char **operands, int count)
{
	struct flows_args *a = args;

	if (flows_parse(c, args, operands, count))
		return -EINVAL;
	if (a->all && (a->have_vip || a->backend || a->client))
		return cli_usage(c, "--all takes no VIP, --backend or --client");
	if (!a->all && !a->have_vip && !a->client)
		return cli_usage(c, "say which flows: a VIP, --client, or --all for every flow");
	return 0;
}

/* The VIP of the state the entry's key is addressed to, or NULL. */
static const struct state_vip *flow_vip(const struct state *s, const struct kernel_flow *e)
{
	size_t i;

	for (i = 0; i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];

		if (v->spec.addr.family == e->key.family &&
		    v->spec.protocol == e->key.protocol && v->spec.port == ntohs(e->key.dst_port) &&
		    memcmp(v->spec.addr.bytes, e->key.dst_addr, sizeof(v->spec.addr.bytes)) == 0)
			return v;
	}
	return NULL;
}

/* The backend the entry is pinned to, while its slot still holds it; else NULL. */
static const struct state_backend *flow_backend(const struct state_vip *v,
						const struct kernel_flow *e)
{
	size_t i;

	for (i = 0; v && i < v->backend_count; i++)
		if (v->backends[i].id == lb_flow_slot(&e->value) &&
		    lb_flow_cookie_is(&e->value, v->backends[i].cookie))
			return &v->backends[i];
	return NULL;
}

/* Does the entry fall in the selection? */
static int flow_selected(const struct flows_args *a, const struct state_vip *v,
			 const struct state_backend *b, const struct kernel_flow *e)
{
	if (a->have_vip && (!v || !vip_equal(&v->spec, &a->vip)))
		return 0;
	if (a->backend && (!b || strcmp(b->name, a->backend)))
		return 0;
	if (a->client && (e->key.family != a->addr.family ||
			  memcmp(e->key.src_addr, a->addr.bytes, sizeof(a->addr.bytes)) ||
			  (a->port && ntohs(e->key.src_port) != a->port)))
		return 0;
	return 1;
}

/* The selected entries: read, matched to the state, with their VIPs and backends. */
struct selection {
	struct kernel_flow *all;
	size_t count;
	size_t *chosen;
	size_t chosen_count;
};

static int select_flows(const struct lb_maps *maps, const struct state *s,
			const struct flows_args *a, struct selection *sel, struct fault *f)
{
	size_t i;
	int err;

	memset(sel, 0, sizeof(*sel));
	if (a->have_vip && !cli_vip_find(s, &a->vip, f))
		return -ENOENT;
	if (a->backend) {
		const struct state_vip *v = cli_vip_find(s, &a->vip, f);

		if (!state_backend_find((struct state_vip *)v, a->backend))
			return fault_set(f, FAULT_USAGE, -ENOENT, "VIP has no backend %s",
					 a->backend), -ENOENT;
	}
	err = kernel_flows_read(maps, &sel->all, &sel->count);
	if (err)
		return fault_set(f, FAULT_KERNEL, err, "cannot read the flow table: %s",
				 strerror(-err)), err;
	sel->chosen = calloc(sel->count ? sel->count : 1, sizeof(*sel->chosen));
	if (!sel->chosen)
		return fault_set(f, FAULT_STATE, -ENOMEM, "out of memory"), -ENOMEM;
	for (i = 0; i < sel->count; i++) {
		const struct state_vip *v = flow_vip(s, &sel->all[i]);

		if (flow_selected(a, v, flow_backend(v, &sel->all[i]), &sel->all[i]))
			sel->chosen[sel->chosen_count++] = i;
	}
	return 0;
}

static void selection_free(struct selection *sel)
{
	free(sel->all);
	free(sel->chosen);
}

/* ADDR:PORT, IPv6 in brackets, of a flow key's side. */
static void endpoint_text(int family, const __u8 *bytes, __be16 port, char *out, size_t size)
{
	struct addr a = { .family = family };
	char text[ADDR_TEXT_MAX];

	memcpy(a.bytes, bytes, sizeof(a.bytes));
	addr_format(&a, text);
	snprintf(out, size, family == LB_FAMILY_IPV6 ? "[%s]:%u" : "%s:%u", text, ntohs(port));
}

/* One entry as JSON. */
static json_t *flow_json(const struct state *s, const struct kernel_flow *e, __u64 now_ns)
{
	const struct state_vip *v = flow_vip(s, e);
	const struct state_backend *b = flow_backend(v, e);
	char client[ADDR_TEXT_MAX + 8], vip[ADDR_TEXT_MAX + 16];
	__u64 now_s = now_ns / LB_NS_PER_S;
	json_t *marks = json_array();

	endpoint_text(e->key.family, e->key.src_addr, e->key.src_port, client, sizeof(client));
	if (v)
		vip_format(&v->spec, vip);
	else
		endpoint_text(e->key.family, e->key.dst_addr, e->key.dst_port, vip, sizeof(vip));
	if (lb_flow_flags(&e->value) & LB_FLOW_FIN)
		json_array_append_new(marks, json_string("fin"));
	if (lb_flow_flags(&e->value) & LB_FLOW_RST)
		json_array_append_new(marks, json_string("rst"));
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:o}", "client", client, "vip", vip,
			 "protocol", e->key.protocol == IPPROTO_TCP ? "tcp" : "udp", "backend",
			 b ? b->name : "(gone)", "age_seconds",
			 (json_int_t)lb_flow_age_s(&e->value, now_s),
			 "idle_seconds",
			 (json_int_t)(now_s > e->value.last_seen_s ? now_s - e->value.last_seen_s : 0),
			 "marks", marks);
}

/* The model: the flows, and their count per backend ("(gone)" for a slot's former backend). */
static json_t *flows_model(const struct state *s, const struct selection *sel)
{
	json_t *model = json_object(), *list = json_array(), *per = json_object();
	__u64 now_ns = kernel_now_ns();
	size_t i;

	for (i = 0; i < sel->chosen_count; i++) {
		json_t *one = flow_json(s, &sel->all[sel->chosen[i]], now_ns);
		const char *key = json_string_value(json_object_get(one, "backend"));
		char name[ADDR_TEXT_MAX + 16 + NAME_MAX_LEN + 2];

		snprintf(name, sizeof(name), "%s %s", json_string_value(json_object_get(one, "vip")),
			 key);
		json_object_set_new(per, name,
				    json_integer(json_integer_value(json_object_get(per, name)) + 1));
		json_array_append_new(list, one);
	}
	json_object_set_new(model, "flows", list);
	json_object_set_new(model, "per_backend", per);
	json_object_set_new(model, "count", json_integer((json_int_t)sel->chosen_count));
	json_object_set_new(model, "table_entries", json_integer((json_int_t)sel->count));
	return model;
}

static void flows_text(const json_t *model)
{
	const json_t *fl, *n;
	const char *name;
	size_t i;

	printf("%-46s %-28s %-4s %-20s %8s %8s %s\n", "CLIENT", "VIP", "", "BACKEND", "AGE",
	       "IDLE", "MARKS");
	json_array_foreach(json_object_get(model, "flows"), i, fl) {
		const json_t *marks = json_object_get(fl, "marks");

		printf("%-46s %-28s %-4s %-20s %7llus %7llus %s%s%s\n",
		       json_string_value(json_object_get(fl, "client")),
		       json_string_value(json_object_get(fl, "vip")),
		       json_string_value(json_object_get(fl, "protocol")),
		       json_string_value(json_object_get(fl, "backend")),
		       (unsigned long long)json_integer_value(json_object_get(fl, "age_seconds")),
		       (unsigned long long)json_integer_value(json_object_get(fl, "idle_seconds")),
		       json_array_size(marks) ? json_string_value(json_array_get(marks, 0)) : "-",
		       json_array_size(marks) > 1 ? "," : "",
		       json_array_size(marks) > 1 ? json_string_value(json_array_get(marks, 1)) : "");
	}
	printf("%lld flow%s of %lld in the table\n",
	       (long long)json_integer_value(json_object_get(model, "count")),
	       json_integer_value(json_object_get(model, "count")) == 1 ? "" : "s",
	       (long long)json_integer_value(json_object_get(model, "table_entries")));
	json_object_foreach((json_t *)json_object_get(model, "per_backend"), name, n)
		printf("  %-50s %lld\n", name, (long long)json_integer_value(n));
}

/* The state and the maps, for both commands. */
static int flows_open(struct cli *c, struct state *s, struct lb_maps *maps, struct fault *f)
{
	char note[SITE_NOTE_MAX];

	if (site_privileged(f) || site_state_answer_shared(&c->site, s, note, f))
		return -EPERM;
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	if (site_maps_open(&c->site, maps, f)) {
		state_free(s);
		return -ENOENT;
	}
	return 0;
}

/* Delete the selected entries and say how many went. */
static int flows_delete_selected(struct cli *c, const struct lb_maps *maps,
				 const struct selection *sel, struct fault *f)
{
	struct lb_flow_key *keys = calloc(sel->chosen_count ? sel->chosen_count : 1, sizeof(*keys));
	size_t i, deleted = 0;
	int err = keys ? 0 : -ENOMEM;

	for (i = 0; keys && i < sel->chosen_count; i++)
		keys[i] = sel->all[sel->chosen[i]].key;
	if (!err)
		err = kernel_flows_delete(maps, keys, sel->chosen_count, &deleted);
	free(keys);
	if (err)
		return fault_set(f, FAULT_KERNEL, err, "deleting flows: %s", strerror(-err)), err;
	if (c->json)
		cli_print(c, json_pack("{s:I}", "deleted", (json_int_t)deleted), NULL);
	else
		printf("deleted %zu flow%s: their next packets are placed by the ring\n", deleted,
		       deleted == 1 ? "" : "s");
	return 0;
}

/* flows and flows delete: the selection, then listed or deleted. */
static int flows_do(struct cli *c, const void *args, int delete)
{
	struct fault f = { 0 };
	struct selection sel;
	struct lb_maps maps;
	struct state s;
	int err;

	if (flows_open(c, &s, &maps, &f))
		return cli_fault(c, &f);
	err = select_flows(&maps, &s, args, &sel, &f);
	if (!err && delete)
		err = flows_delete_selected(c, &maps, &sel, &f);
	else if (!err)
		cli_print(c, flows_model(&s, &sel), flows_text);
	selection_free(&sel);
	lb_maps_close(&maps);
	state_free(&s);
	return err ? cli_fault(c, &f) : 0;
}

static int flows_run(struct cli *c, const void *args)
{
	return flows_do(c, args, 0);
}

static int flows_delete_run(struct cli *c, const void *args)
{
	return flows_do(c, args, 1);
}

/* The selection's options, the same for both commands. */
#define FLOWS_SELECT_OPTIONS                                                                  \
	CLI_OPT_STRING("backend", "NAME", "only the flows pinned to this backend of the VIP",  \
		       struct flows_args, backend),                                             \
	CLI_OPT_STRING("client", "ADDR[:PORT]", "only the flows of this client (and port)",    \
		       struct flows_args, client)

static const struct cli_option flows_options[] = {
	FLOWS_SELECT_OPTIONS,
	CLI_OPT_END,
};

static const struct cli_option flows_delete_options[] = {
	FLOWS_SELECT_OPTIONS,
	CLI_OPT_FLAG("all", "every flow of the table (nothing else selects them all)",
		     struct flows_args, all),
	CLI_OPT_END,
};

const struct cli_command cli_flows = {
	.object = "flows", .operands = "[VIP]", .min_operands = 0, .max_operands = 1,
	.options = flows_options, .args_size = sizeof(struct flows_args), .parse = flows_parse,
	.run = flows_run, .flags = CLI_OUTPUT,
	.help = "    The flow table: each pinned flow (client, VIP, backend, seconds since it\n"
		"    was pinned, seconds since its last packet, fin and rst marks) and the\n"
		"    count per backend, of every VIP or of VIP, narrowed by --backend and\n"
		"    --client. A flow whose backend was removed says (gone): its next\n"
		"    packet is placed by the ring.",
};

const struct cli_command cli_flows_delete = {
	.object = "flows", .verb = "delete", .operands = "[VIP]", .min_operands = 0,
	.max_operands = 1, .options = flows_delete_options, .args_size = sizeof(struct flows_args),
	.parse = flows_delete_parse, .run = flows_delete_run, .flags = CLI_OUTPUT,
	.help = "    Delete the flows `ringlb flows` selects with the same VIP, --backend and\n"
		"    --client (--all: every flow): the next packet of each is placed by the\n"
		"    ring, as a new flow's is. Says how many it deleted.",
};
