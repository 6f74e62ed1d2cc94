// SPDX-License-Identifier: GPL-2.0-only
/*
 * store import and store leave: a host's membership of a fleet, changed
 * explicitly and never by a ring change. Import makes a serving host's
 * state the fleet's in a store that holds none (a standalone host moving
 * into a fleet, or the state written back after the store lost it); leave
 * makes a fleet host's copy of the last state it followed its own. Neither
 * touches the kernel: it serves the same state before and after.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "secret.h"

static int import_run(struct cli *c, const void *args)
{
	struct state local;
	struct fault f = { 0 };
	__u64 secret[2];
	int lock, err;

	(void)args;
	if (!store_shared(c->site.store))
		return cli_usage(c, "store import writes to the fleet's store: give --store (or "
				 "set store in the configuration file)");
	if (site_privileged(&f))
		return cli_fault(c, &f);
	lock = site_lock(&c->site, 1, &f);
	if (lock < 0)
		return cli_fault(c, &f);
	err = store_host_read(c->site.state_path, &local, &f);
	/* The fleet's key digest goes first: every host that follows is checked against it. */
	if (!err && !(err = secret_read(&c->site, 0, secret, &f))) {
		local.host.member.key_digest = lb_secret_digest(secret);
		err = store_key_check(c->site.store, secret, &f);
		memset(secret, 0, sizeof(secret));
	}
	if (!err)
		err = store_import(c->site.store, &local, &f);
	close(lock);
	if (err) {
		state_free(&local);
		return cli_fault(c, &f);
	}
	printf("imported: the fleet's state is this host's (generation %llu, %zu VIPs), store "
	       "revision %llu\n", (unsigned long long)local.fleet.generation,
	       local.fleet.vip_count, (unsigned long long)local.host.member.revision);
	state_free(&local);
	return 0;
}

static int join_run(struct cli *c, const void *args)
{
	struct state local;
	struct fault f = { 0 };
	int lock, err;

	(void)args;
	if (!store_shared(c->site.store))
		return cli_usage(c, "store join follows the fleet's store: give --store (or set "
				 "store in the configuration file)");
	if (site_privileged(&f))
		return cli_fault(c, &f);
	lock = site_lock(&c->site, 1, &f);
	if (lock < 0)
		return cli_fault(c, &f);
	err = store_host_read(c->site.state_path, &local, &f) ?:
	      store_join(c->site.store, &local, &f);
	close(lock);
	if (err) {
		state_free(&local);
		return cli_fault(c, &f);
	}
	printf("joined the fleet at %s: the next command, or the daemon, makes this host serve "
	       "its state in place of its own %zu VIPs\n", c->site.store->spec,
	       local.fleet.vip_count);
	state_free(&local);
	return 0;
}

static int leave_run(struct cli *c, const void *args)
{
	struct state local;
	struct fault f = { 0 };
	char was[STATE_MEMBER_STORE_MAX];
	int lock, daemon, err;

	(void)args;
	if (site_privileged(&f))
		return cli_fault(c, &f);
	/* A daemon on the store would write the membership back at its next look. */
	daemon = site_daemon_lock(&c->site, &f);
	if (daemon < 0) {
		fault_append(&f, ": stop it first (it follows the store)");
		return cli_fault(c, &f);
	}
	lock = site_lock(&c->site, 1, &f);
	if (lock < 0) {
		close(daemon);
		return cli_fault(c, &f);
	}
	err = store_host_read(c->site.state_path, &local, &f);
	if (!err && !local.host.member.store[0])
		err = fault_set(&f, FAULT_STATE, -EALREADY, "this host belongs to no fleet");
	if (!err) {
		snprintf(was, sizeof(was), "%s", local.host.member.store);
		memset(&local.host.member, 0, sizeof(local.host.member));
		err = store_host_write(c->site.state_path, &local, &f);
	}
	close(lock);
	close(daemon);
	if (err) {
		state_free(&local);
		return cli_fault(c, &f);
	}
	printf("left the fleet at %s: this host serves its copy (generation %llu, %zu VIPs) as "
	       "its own state; run it without --store from now on\n", was,
	       (unsigned long long)local.fleet.generation, local.fleet.vip_count);
	state_free(&local);
	return 0;
}

const struct cli_command cli_store_import = {
	.object = "store", .verb = "import", .run = import_run, .flags = CLI_CHANGES,
	.help = "    Make this host's state the fleet's, in a store (--store) that holds\n"
		"    none: a standalone host moving into a fleet, or the state written back\n"
		"    after the store lost it. The kernel keeps serving what it serves; a\n"
		"    store that holds a state already is refused.",
};

const struct cli_command cli_store_join = {
	.object = "store", .verb = "join", .run = join_run, .flags = CLI_CHANGES,
	.help = "    Make this host follow the fleet's store (--store) on purpose, though it\n"
		"    serves VIPs the store's state does not have: its next command, or its\n"
		"    daemon, replaces them with the fleet's. Without it such a host refuses\n"
		"    the store rather than be emptied by a --store typed once.",
};

const struct cli_command cli_store_leave = {
	.object = "store", .verb = "leave", .run = leave_run, .flags = CLI_CHANGES,
	.help = "    Take this host out of its fleet: its copy of the last state it followed\n"
		"    becomes its own state, served as before. Commands and the daemon then\n"
		"    run without --store (take it out of the configuration file first).",
};
