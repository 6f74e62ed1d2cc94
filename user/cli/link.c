// SPDX-License-Identifier: GPL-2.0-only
/*
 * attach and detach: the program on an interface. attach loads an instance
 * on the deployment's key and pins its link before the state that lists the
 * interface is committed; detach commits the state without it, and the
 * change pipeline then removes the link. A crash in between only ever
 * leaves a link the next command removes.
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

#define ATTACH_IFACES_MAX 16

struct attach_args {
	const char *ifaces[ATTACH_IFACES_MAX];
	int iface_count;
	enum lb_attach_mode mode;
	__u32 flows;          /* 0: the state's */
	struct addr source4;  /* family 0: not given */
	struct addr source6;
	__u32 gue_port;       /* 0: not given */
	__u32 new_flows_max;
	unsigned int new_flows_given;
	__u32 icmp_rate;      /* 0: not given */
	__u32 icmp_burst;     /* 0: not given */
};

static int attach_source_set(struct cli *c, void *args, const char *value)
{
	struct attach_args *a = args;
	const char *why = NULL;
	struct addr addr;

	if (addr_parse(value, &addr, &why))
		return cli_report(c, "malformed source address '%s': %s", value, why);
	if ((addr.family == LB_FAMILY_IPV4 ? a->source4 : a->source6).family)
		return cli_usage(c, "one --source per address family");
	if (addr.family == LB_FAMILY_IPV4)
		a->source4 = addr;
	else
		a->source6 = addr;
	return 0;
}


static int attach_parse(struct cli *c, void *args, char **operands, int count)
{
	struct attach_args *a = args;

	a->iface_count = count;
	return cli_ifaces_take(c, operands, count, a->ifaces);
}

/* @name has a link already: say so, and how to run this binary's program there if it is another build. */
static int attached_already(const char *name, const char *link, struct fault *f)
{
	char runs[LB_BUILD_TEXT_MAX], self_text[LB_BUILD_TEXT_MAX];
	struct lb_link_info info;
	struct lb_build self;

	if (lb_link_read(link, &info) == 0 && lb_build_self(&self) == 0 &&
	    info.build.digest != self.digest) {
		lb_build_format(&info.build, runs, sizeof(runs));
		lb_build_format(&self, self_text, sizeof(self_text));
		memset(&info, 0, sizeof(info));
		return fault_set(f, FAULT_USAGE, -EEXIST,
				 "already attached to %s, running build %s, not this binary's %s: "
				 "ringlb upgrade %s swaps it in place", name, runs, self_text, name);
	}
	memset(&info, 0, sizeof(info));
	return fault_set(f, FAULT_USAGE, -EEXIST, "already attached to %s (ringlb detach %s first)",
			 name, name);
}

/* Load an instance for @name and pin its link; the state lists it only once this succeeded. */
static int attach_one(const struct change_ctx *ctx, const struct attach_args *a, const char *name,
		      struct state *want, struct fault *f)
{
	struct lb_load_opts opts = { 0 };
	const char *mode = a->mode == LB_ATTACH_NATIVE ? "native" : "generic";
	struct state_iface *iface, *ifaces;
	struct lb_prog *prog = NULL;
	char link[PATH_MAX];
	int ifindex, err;

	ifindex = (int)if_nametoindex(name);
	if (!ifindex)
		return fault_set(f, FAULT_USAGE, -ENODEV, "no such interface '%s'", name);
	snprintf(link, sizeof(link), "%s/links/%s", ctx->site->pin_dir, name);
	if (access(link, F_OK) == 0)
		return attached_already(name, link, f);
	err = host_iface_mac(name, opts.iface_mac);
	if (err)
		return fault_errno(f, FAULT_KERNEL, err, "cannot read the MAC of %s", name);
	err = site_prog_load(ctx->site, &opts, &prog, f);
	if (err)
		return err;
	err = lb_attach(prog, ifindex, a->mode, link);
	lb_prog_close(prog);
	if (err)
		return fault_set(f, FAULT_KERNEL, err, "cannot attach to %s in %s mode: %s%s", name,
				 mode, strerror(-err),
				 a->mode == LB_ATTACH_NATIVE ? " (try --mode generic)" : "");
	/* From here, a failure or a crash before the commit leaves a link the next command removes. */
	iface = state_iface_find(want, name);
	if (!iface) {
		ifaces = realloc(want->host.ifaces, (want->host.iface_count + 1) * sizeof(*ifaces));
		if (!ifaces)
			return fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
		want->host.ifaces = ifaces;
		iface = &ifaces[want->host.iface_count++];
		memset(iface, 0, sizeof(*iface));
		snprintf(iface->name, sizeof(iface->name), "%s", name);
	}
	iface->generic = a->mode == LB_ATTACH_GENERIC;
	return 0;
}

/*
 * The outer sources: the ones given, else the ones the state has, else the
 * first interface's address of each family (none for a family it lacks).
 */
static void attach_encap(const struct attach_args *a, struct state *want)
{
	if (a->source4.family)
		want->host.encap.source4 = a->source4;
	else if (!want->host.encap.source4.family)
		host_iface_addr(a->ifaces[0], LB_FAMILY_IPV4, &want->host.encap.source4);
	if (a->source6.family)
		want->host.encap.source6 = a->source6;
	else if (!want->host.encap.source6.family)
		host_iface_addr(a->ifaces[0], LB_FAMILY_IPV6, &want->host.encap.source6);
	if (a->gue_port)
		want->host.encap.gue_port = (__u16)a->gue_port;
	if (a->new_flows_given)
		want->host.encap.new_flows_max = a->new_flows_max;
	if (a->icmp_rate)
		want->host.encap.icmp_rate = a->icmp_rate;
	if (a->icmp_burst)
		want->host.encap.icmp_burst = a->icmp_burst;
}

static int attach_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			struct fault *f)
{
	const struct attach_args *a = args;
	__u32 have;
	int i, err;

	/*
	 * The maps are there already (the session made them), and hold the
	 * committed state. The flow table keeps the size it was made with: the
	 * state records that one, and --flows of another size is refused.
	 */
	if (ctx->dry_run || lb_pinned_flow_entries(ctx->site->pin_dir, &have)) {
		if (a->flows)
			want->host.flow_entries = LB_FLOW_SETS(a->flows) * LB_FLOW_WAYS;
	} else if (a->flows && LB_FLOW_SETS(a->flows) * LB_FLOW_WAYS != have) {
		return fault_set(f, FAULT_USAGE, -EEXIST,
				 "the flow table has %u entries already, and --flows %u sizes only "
				 "one being made: to resize it, replace the maps (README, "
				 "\"Upgrading\"; the pinned flows are lost)", have, a->flows);
	} else {
		want->host.flow_entries = have;
	}
	for (i = 0; i < a->iface_count; i++) {
		err = attach_one(ctx, a, a->ifaces[i], want, f);
		if (err)
			return err;
	}
	attach_encap(a, want);
	return 0;
}

/* The pin directory (and the BPF filesystem) first: the session pins the maps there. */
static int attach_run(struct cli *c, const void *args)
{
	const struct attach_args *a = args;
	struct fault f = { 0 };
	int mounted, err;

	err = site_privileged(&f) ?: site_bpffs_ensure(&c->site, &mounted, &f);
	if (err)
		return cli_fault(c, &f);
	if (mounted)
		fprintf(stderr, "ringlb: mounted the BPF filesystem at " SITE_BPFFS_ROOT "\n");
	return cli_change(c, args, a->flows);
}

static const struct cli_option attach_options[] = {
	CLI_OPT_ENUM("mode", "native|generic", "where the program runs (default native)",
		     struct attach_args, mode, cli_modes),
	CLI_OPT_U32("flows", "N", "flow table entries, when the maps are created (default\n"
		    "                               65536; rounded up to a multiple of 8, its sets'\n"
		    "                               ways); refused on maps of another size",
		    struct attach_args, flows, FLOW_ENTRIES_MIN, FLOW_ENTRIES_MAX),
	CLI_OPT_CUSTOM("source", "ADDR", "outer source for encapsulation, one per family (default: "
		       "the\n                               first interface's address of that family)",
		       attach_source_set),
	CLI_OPT_U32("gue-port", "P", "GUE's UDP port (default 19523)", struct attach_args,
		    gue_port, PORT_MIN, PORT_MAX),
	CLI_OPT_U32("new-flow-rate", "N", "flows a CPU pins per second at most (default 125000; "
		    "0: no\n                               limit); past it new flows go by the "
		    "ring, unpinned", struct attach_args, new_flows_max, NEW_FLOW_RATE_MIN,
		    NEW_FLOW_RATE_MAX, CLI_GIVEN(struct attach_args, new_flows_given, 1)),
	CLI_OPT_U32("icmp-rate", "N", "ICMP errors (too big once encapsulated) a CPU sends per\n"
		    "                               second at most (default 100); past it the packet "
		    "is dropped", struct attach_args, icmp_rate, ICMP_RATE_MIN, ICMP_RATE_MAX),
	CLI_OPT_U32("icmp-burst", "N", "of those, how many a CPU may send at once (default 10)",
		    struct attach_args, icmp_burst, ICMP_BURST_MIN, ICMP_BURST_MAX),
	CLI_OPT_END,
};

const struct cli_command cli_attach = {
	.object = "attach", .operands = "IFACE...", .min_operands = 1,
	.max_operands = ATTACH_IFACES_MAX, .options = attach_options,
	.args_size = sizeof(struct attach_args), .parse = attach_parse, .run = attach_run,
	.apply = attach_apply,
	.flags = CLI_CHANGES | CLI_CREATES_MAPS,
	.help = "    Load the XDP program on each IFACE (native mode unless --mode generic).\n"
		"    The first attach creates the deployment secret, the maps and the flow\n"
		"    table (--flows entries), and fills the maps from the state. Encapsulated\n"
		"    packets leave by the interface the kernel's FIB names (a redirect when\n"
		"    not the ingress one); forwarding must be on for the ingress interfaces.",
};

struct detach_args {
	const char *iface;
};

/* The program goes once the state without the interface is committed (change_run()). */
static int detach_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			struct fault *f)
{
	const struct detach_args *a = args;
	struct state_iface *iface = state_iface_find(want, a->iface);
	size_t at;

	(void)ctx;
	if (!iface)
		return fault_set(f, FAULT_USAGE, -ENOENT, "not attached to %s", a->iface);
	at = (size_t)(iface - want->host.ifaces);
	memmove(iface, iface + 1, (want->host.iface_count - at - 1) * sizeof(*iface));
	want->host.iface_count--;
	return 0;
}

const struct cli_command cli_detach = {
	.object = "detach", .operands = "IFACE", .min_operands = 1, .max_operands = 1,
	.args_size = sizeof(struct detach_args), .parse = cli_word_arg, .apply = detach_apply,
	.flags = CLI_CHANGES | CLI_NEEDS_MAPS,
	.help = "    Remove the program from IFACE. Maps, rings and flows stay pinned.",
};
