// SPDX-License-Identifier: GPL-2.0-only
/*
 * decap attach, detach and stats: ringlb's program on a backend, which
 * removes the balancer's IPIP or GUE encapsulation (bpf/decap.bpf.c). Its
 * maps and links are pinned under PIN_DIR/decap; it keeps no state file:
 * what it accepts is in its maps, set again by every attach (the --from
 * prefixes, the --vip addresses and the GUE port are the host's, for all
 * its interfaces; the host's addresses are read again).
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"
#include "decap.h"

#define DECAP_IFACES_MAX 16
#define DECAP_PREFIXES_MAX 64

/* The decap program's pins: a site of their own under the balancer's pin directory. */
static void decap_site(const struct cli *c, char dir[PATH_MAX], struct site *site)
{
	snprintf(dir, PATH_MAX, "%s/decap", c->site.pin_dir);
	site->state_path = c->site.state_path;
	site->pin_dir = dir;
	site->store = c->site.store;
}

struct decap_args {
	const char *ifaces[DECAP_IFACES_MAX];
	int iface_count;
	enum lb_attach_mode mode;
	struct decap_prefix from[DECAP_PREFIXES_MAX];
	int from_count;
	struct addr vips[LB_DECAP_VIPS_MAX];
	int vip_count;
	__u32 gue_port;
	unsigned int gue_port_given;
};

static int decap_from_one(struct cli *c, void *args, const char *item)
{
	struct decap_args *a = args;
	struct prefix p;
	const char *why = NULL;

	if (a->from_count == DECAP_PREFIXES_MAX)
		return cli_usage(c, "at most %d --from prefixes", DECAP_PREFIXES_MAX);
	if (prefix_parse(item, &p, &why))
		return cli_report(c, "malformed prefix '%s': %s", item, why);
	a->from[a->from_count].addr = p.addr;
	a->from[a->from_count++].len = p.len;
	return 0;
}

/* --from PREFIX[,PREFIX...], repeatable. */
static int decap_from_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "from", value, args, decap_from_one);
}

static int decap_vip_one(struct cli *c, void *args, const char *item)
{
	struct decap_args *a = args;
	const char *why = NULL;

	if (a->vip_count == LB_DECAP_VIPS_MAX)
		return cli_usage(c, "at most %d --vip addresses", LB_DECAP_VIPS_MAX);
	if (addr_parse(item, &a->vips[a->vip_count], &why))
		return cli_report(c, "malformed VIP address '%s': %s", item, why);
	a->vip_count++;
	return 0;
}

/* --vip ADDR[,ADDR...], repeatable. */
static int decap_vip_set(struct cli *c, void *args, const char *value)
{
	return cli_list_each(c, "vip", value, args, decap_vip_one);
}

/* --from and --vip are required options: the dispatcher has seen both. */
static int decap_attach_parse(struct cli *c, void *args, char **operands, int count)
{
	struct decap_args *a = args;
	int i;

	(void)c;
	for (i = 0; i < count; i++)
		a->ifaces[i] = operands[i];
	a->iface_count = count;
	if (!a->gue_port_given)
		a->gue_port = LB_GUE_PORT_DEFAULT;
	return 0;
}

/* Every interface, then the settings: a new program on a fresh host accepts nothing before. */
static int decap_attach_run(struct cli *c, const void *args)
{
	const struct decap_args *a = args;
	char dir[PATH_MAX], link[PATH_MAX + 64];
	struct fault f = { 0 };
	struct decap_maps maps;
	struct site site;
	int i, ifindex, prog_fd, mounted, err;

	decap_site(c, dir, &site);
	err = site_privileged(&f) ?: site_bpffs_ensure(&c->site, &mounted, &f) ?:
	      site_bpffs_ensure(&site, &mounted, &f);
	if (err)
		return cli_fault(c, &f);
	for (i = 0; i < a->iface_count; i++)
		if (!if_nametoindex(a->ifaces[i]))
			return cli_report(c, "no such interface '%s'", a->ifaces[i]);
	prog_fd = decap_load(dir);
	if (prog_fd < 0) {
		fault_set(&f, FAULT_KERNEL, prog_fd, "%s", "");
		lb_load_failure(prog_fd, f.why, sizeof(f.why));
		return cli_fault(c, &f);
	}
	err = decap_maps_open(&maps, dir);
	if (!err) {
		err = decap_configure(&maps, a->from, (size_t)a->from_count, a->vips,
				      (size_t)a->vip_count, (__u16)a->gue_port);
		decap_maps_close(&maps);
	}
	if (err == -EOVERFLOW) {
		close(prog_fd);
		return cli_report(c, "this host has more than %d addresses, more than the decap "
				  "program can know as its own; nothing changed", LB_DECAP_SELF_MAX);
	}
	if (err == -ENOSPC) {
		close(prog_fd);
		return cli_report(c, "the --vip addresses collide: more than %d share the slots "
				  "the decap program searches for one of them; nothing changed",
				  LB_DECAP_VIP_PROBES);
	}
	if (err) {
		close(prog_fd);
		fault_errno(&f, FAULT_KERNEL, err, "cannot configure the decap program");
		return cli_fault(c, &f);
	}
	for (i = 0; i < a->iface_count && !err; i++) {
		ifindex = (int)if_nametoindex(a->ifaces[i]);
		snprintf(link, sizeof(link), "%s/links/%s", dir, a->ifaces[i]);
		if (access(link, F_OK) == 0)
			continue; /* attached already: the new settings apply to it */
		err = lb_attach_fd(prog_fd, ifindex, a->mode, link);
		if (err) {
			fault_set(&f, FAULT_KERNEL, err, "cannot attach to %s: %s%s", a->ifaces[i],
				  strerror(-err),
				  a->mode == LB_ATTACH_NATIVE ? " (try --mode generic)" : "");
			cli_fault(c, &f);
		}
	}
	close(prog_fd);
	return err;
}

static const struct cli_option decap_attach_options[] = {
	CLI_OPT_ENUM("mode", "native|generic", "where the program runs (default native)",
		     struct decap_args, mode, cli_modes),
	CLI_OPT_REQUIRED("from", "PREFIX", "the balancers' outer sources and the hops to accept "
			 "(backends); comma-separated, repeatable", decap_from_set),
	CLI_OPT_REQUIRED("vip", "ADDR", "the VIP addresses this host serves (inner "
			 "destinations); comma-separated, repeatable", decap_vip_set),
	CLI_OPT_U32("gue-port", "P", "GUE's UDP port (default 19523)", struct decap_args, gue_port,
		    PORT_MIN, PORT_MAX, CLI_GIVEN(struct decap_args, gue_port_given, 1)),
	CLI_OPT_END,
};

const struct cli_command cli_decap_attach = {
	.object = "decap", .verb = "attach", .operands = "IFACE...", .min_operands = 1,
	.max_operands = DECAP_IFACES_MAX, .options = decap_attach_options,
	.args_size = sizeof(struct decap_args), .parse = decap_attach_parse,
	.run = decap_attach_run, .flags = CLI_CHANGES,
	.help = "    On a backend: remove the balancer's IPIP or GUE encapsulation from\n"
		"    packets that come from a --from prefix to one of this host's addresses,\n"
		"    carrying a packet to one of its --vip addresses, and pass the inner\n"
		"    packet to the stack (the VIP on loopback); a GUE packet with a hop list\n"
		"    that is not this host's goes on to its next hop, which must lie in a\n"
		"    --from prefix. Encapsulation from a --from prefix around anything else\n"
		"    is dropped. No tunnel device or module is needed. Attaching again sets\n"
		"    the prefixes, the VIPs, the port and the host's addresses anew.",
};

struct decap_detach_args {
	const char *iface;
};

static int decap_detach_run(struct cli *c, const void *args)
{
	const struct decap_detach_args *a = args;
	char dir[PATH_MAX], link[PATH_MAX + 64];
	struct fault f = { 0 };
	struct site site;
	int err;

	decap_site(c, dir, &site);
	if (site_privileged(&f))
		return cli_fault(c, &f);
	snprintf(link, sizeof(link), "%s/links/%s", dir, a->iface);
	if (access(link, F_OK))
		return cli_report(c, "the decap program is not attached to %s", a->iface);
	err = lb_detach(link, (int)if_nametoindex(a->iface));
	if (err) {
		fault_errno(&f, FAULT_KERNEL, err, "cannot detach from %s", a->iface);
		return cli_fault(c, &f);
	}
	return 0;
}

const struct cli_command cli_decap_detach = {
	.object = "decap", .verb = "detach", .operands = "IFACE", .min_operands = 1,
	.max_operands = 1, .args_size = sizeof(struct decap_detach_args),
	.parse = cli_word_arg, .run = decap_detach_run, .flags = CLI_CHANGES,
	.help = "    Remove the decap program from IFACE.",
};

static void decap_stats_text(const json_t *model)
{
	const json_t *r;
	const char *name;

	printf("Frames by reason (decap program)\n");
	json_object_foreach((json_t *)model, name, r)
		if (json_integer_value(json_object_get(r, "packets")))
			printf("  %-22s %12llu packets %14llu bytes\n", name,
			       (unsigned long long)json_integer_value(json_object_get(r, "packets")),
			       (unsigned long long)json_integer_value(json_object_get(r, "bytes")));
}

static int decap_stats_run(struct cli *c, const void *args)
{
	char dir[PATH_MAX];
	struct fault f = { 0 };
	struct decap_maps maps;
	struct site site;
	json_t *model;
	__u64 packets, bytes;
	__u32 r;
	int err;

	(void)args;
	decap_site(c, dir, &site);
	if (site_privileged(&f))
		return cli_fault(c, &f);
	err = decap_maps_open(&maps, dir);
	if (err)
		return cli_report(c, "the decap program is not loaded (no maps under %s): run "
				  "'ringlb decap attach' first", dir);
	model = json_object();
	for (r = 0; r < LB_DECAP_REASON_COUNT; r++) {
		decap_counters(&maps, r, &packets, &bytes);
		json_object_set_new(model, decap_reason_names[r],
				    json_pack("{s:I, s:I}", "packets", (json_int_t)packets, "bytes",
					      (json_int_t)bytes));
	}
	decap_maps_close(&maps);
	cli_print(c, model, decap_stats_text);
	return 0;
}

const struct cli_command cli_decap_stats = {
	.object = "decap", .verb = "stats", .run = decap_stats_run, .flags = CLI_OUTPUT,
	.help = "    Frames the decap program saw, by reason: decapsulated (IPIP, GUE), sent\n"
		"    on to a next hop, dropped or passed untouched, and why.",
};

struct decap_drained_args {
	struct vip_spec vip;
};

static int decap_drained_parse(struct cli *c, void *args, char **operands, int count)
{
	(void)count;
	return cli_vip_arg(c, operands[0], &((struct decap_drained_args *)args)->vip);
}

static void decap_drained_text(const json_t *model)
{
	unsigned long n = (unsigned long)json_integer_value(json_object_get(model, "connections"));
	const char *vip = json_string_value(json_object_get(model, "vip"));

	if (n)
		printf("not drained: %lu connection%s to %s on this host\n", n, n == 1 ? "" : "s",
		       vip);
	else
		printf("drained: no connection to %s on this host\n", vip);
}

static int decap_drained_run(struct cli *c, const void *args)
{
	const struct decap_drained_args *a = args;
	char why[HOST_WHY_MAX], text[ADDR_TEXT_MAX];
	unsigned long n;

	if (host_vip_connections(&a->vip, &n, why))
		return cli_report(c, "%s", why);
	vip_format(&a->vip, text);
	cli_print(c, json_pack("{s:s, s:I}", "vip", text, "connections", (json_int_t)n),
		  decap_drained_text);
	/* Scripts wait on the exit status: 0 once nothing is left. */
	return n ? 1 : 0;
}

const struct cli_command cli_decap_drained = {
	.object = "decap", .verb = "drained", .operands = "VIP", .min_operands = 1,
	.max_operands = 1, .args_size = sizeof(struct decap_drained_args),
	.parse = decap_drained_parse, .run = decap_drained_run, .flags = CLI_OUTPUT,
	.help = "    On a backend: its connections to VIP, from the host's socket table\n"
		"    (every state but LISTEN and TIME_WAIT). Exits 0 when there are none:\n"
		"    a drained backend of a stateless VIP, whose connections the balancer\n"
		"    does not track, is done then and can be removed.",
};
