// SPDX-License-Identifier: GPL-2.0-only
/*
 * upgrade: put this binary's XDP program in place of another build's on the
 * attached interfaces, without an outage. Each interface's pinned link is
 * swapped to the new program in one step (bpf_link_update), on the same key
 * and MAC the running one has, over the same pinned maps, so pinned flows,
 * rings and counters carry on. Refused, with nothing swapped, when the
 * running program was built for another layout of the maps (or before
 * layouts were recorded): the new program would misread them.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define UPGRADE_IFACES_MAX 16

struct upgrade_args {
	const char *ifaces[UPGRADE_IFACES_MAX];
	int count;
};

static int upgrade_parse(struct cli *c, void *args, char **operands, int count)
{
	struct upgrade_args *a = args;

	a->count = count;
	return cli_ifaces_take(c, operands, count, a->ifaces);
}

/* One interface's link, read; a refusal for it said in @f. */
static int upgrade_check(const struct cli *c, const char *name, const struct lb_build *self,
			 struct lb_link_info *info, struct fault *f)
{
	char link[PATH_MAX], runs[LB_BUILD_TEXT_MAX];
	int err;

	snprintf(link, sizeof(link), "%s/links/%s", c->site.pin_dir, name);
	err = lb_link_read(link, info);
	if (err == -ENOENT)
		return fault_set(f, FAULT_USAGE, err, "%s: not attached (ringlb attach %s)", name,
				 name);
	if (err)
		return fault_errno(f, FAULT_KERNEL, err, "%s: cannot read its program", name);
	if (info->ifindex == 0)
		return fault_set(f, FAULT_USAGE, -ENODEV, "%s: gone; its program is attached to "
				 "nothing (ringlb detach %s)", name, name);
	if (info->build.digest == self->digest)
		return 0;
	if (!info->build.layout)
		return fault_set(f, FAULT_STATE, -EXDEV,
				 "%s runs a build from before builds were recorded: which layout of "
				 "the maps it uses is unknown, so no swap is safe; the one safe way "
				 "loses the pinned flows: ringlb detach each interface, rm -r %s, "
				 "ringlb attach again", name, c->site.pin_dir);
	lb_build_format(&info->build, runs, sizeof(runs));
	if (!lb_layout_same(info->build.layout))
		return fault_set(f, FAULT_STATE, -EXDEV,
				 "%s runs build %s, made for another layout of the maps (%016llx, this "
				 "binary's %016llx): no swap is safe; the one safe way loses the pinned "
				 "flows: ringlb detach each interface, rm -r %s, ringlb attach again",
				 name, runs, (unsigned long long)info->build.layout,
				 (unsigned long long)self->layout, c->site.pin_dir);
	return 0;
}

static int upgrade_run(struct cli *c, const void *args)
{
	const struct upgrade_args *a = args;
	struct lb_link_info infos[UPGRADE_IFACES_MAX];
	const char *names[UPGRADE_IFACES_MAX];
	struct lb_prog *progs[UPGRADE_IFACES_MAX] = { 0 };
	char attached[UPGRADE_IFACES_MAX][IF_NAMESIZE];
	char link[PATH_MAX], from[LB_BUILD_TEXT_MAX], to[LB_BUILD_TEXT_MAX], why[FAULT_WHY_MAX];
	struct fault f = { 0 };
	struct lb_build self;
	struct state s;
	int i, n = 0, lock, err = 0;

	if (site_privileged(&f))
		return cli_fault(c, &f);
	err = lb_build_self(&self);
	if (err)
		return cli_report(c, "cannot read this binary's program: %s", strerror(-err));
	if (a->count) {
		memcpy(names, a->ifaces, sizeof(names));
		n = a->count;
	} else {
		if (site_state_read_shared(&c->site, &s, &f))
			return cli_fault(c, &f);
		for (i = 0; i < (int)s.host.iface_count && n < UPGRADE_IFACES_MAX; i++) {
			snprintf(attached[n], sizeof(attached[n]), "%s", s.host.ifaces[i].name);
			names[n] = attached[n];
			n++;
		}
		state_free(&s);
		if (!n)
			return cli_report(c, "attached to no interface: nothing to upgrade");
	}
	/* Exclusive: no change swaps or removes a link meanwhile (the state read takes it shared). */
	lock = site_lock(&c->site, 1, &f);
	if (lock < 0)
		return cli_fault(c, &f);
	/* Every interface checked before any is swapped: a refusal changes nothing. */
	for (i = 0; i < n; i++)
		if (upgrade_check(c, names[i], &self, &infos[i], &f)) {
			close(lock);
			memset(infos, 0, sizeof(infos));
			return cli_fault(c, &f);
		}
	lb_build_format(&self, to, sizeof(to));
	/* Every program loaded before any is swapped: a load that fails changes nothing. */
	for (i = 0; i < n && !err; i++) {
		struct lb_load_opts opts = { 0 };

		if (infos[i].build.digest == self.digest)
			continue;
		/* The key and MAC the running program has: only the code changes. */
		memcpy(opts.secret, infos[i].secret, sizeof(opts.secret));
		memcpy(opts.iface_mac, infos[i].iface_mac, sizeof(opts.iface_mac));
		opts.pin_dir = c->site.pin_dir;
		err = lb_prog_load(&progs[i], &opts);
		memset(opts.secret, 0, sizeof(opts.secret));
		if (err) {
			lb_load_failure(err, why, sizeof(why));
			fault_set(&f, FAULT_KERNEL, err, "%s: %s; nothing swapped", names[i], why);
		}
	}
	for (i = 0; i < n && !err; i++) {
		if (!progs[i]) {
			if (!c->quiet)
				printf("%s: runs this binary's build already, %s\n", names[i], to);
			continue;
		}
		snprintf(link, sizeof(link), "%s/links/%s", c->site.pin_dir, names[i]);
		err = lb_link_replace(link, progs[i]);
		if (err) {
			fault_errno(&f, FAULT_KERNEL, err, "%s: cannot swap its program (the interfaces "
				    "before it in the list run this build; run ringlb upgrade again)",
				    names[i]);
			break;
		}
		lb_build_format(&infos[i].build, from, sizeof(from));
		if (!c->quiet)
			printf("%s: upgraded from build %s to %s\n", names[i], from, to);
	}
	for (i = 0; i < n; i++)
		lb_prog_close(progs[i]);
	memset(infos, 0, sizeof(infos));
	close(lock);
	return err ? cli_fault(c, &f) : 0;
}

const struct cli_command cli_upgrade = {
	.object = "upgrade", .operands = "[IFACE...]", .min_operands = 0,
	.max_operands = UPGRADE_IFACES_MAX, .args_size = sizeof(struct upgrade_args),
	.parse = upgrade_parse, .run = upgrade_run,
	.help = "    Put this binary's XDP program in place of another build's on IFACE (default:\n"
		"    every attached interface), one atomic swap each, keeping every map, pin\n"
		"    and pinned flow. Refused, with nothing swapped, when the running program\n"
		"    was made for another layout of the maps; run it after installing a new\n"
		"    ringlb (apt-get upgrade).",
};
