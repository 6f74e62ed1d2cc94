// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sessions (session.h): a change's hold on the deployment. The lock, the
 * committed state, and the maps made to hold it before anything else.
 */
#include "session.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "secret.h"
#include "store.h"

/* Create and pin the maps when there are none (attach after a reboot, a first attach). */
static int maps_create(const struct session *ss, struct fault *f)
{
	struct lb_load_opts opts = {
		.flow_entries = ss->flow_entries ? ss->flow_entries : ss->applied.host.flow_entries,
	};
	struct lb_prog *prog;
	int err = site_prog_load(ss->site, &opts, &prog, f);

	if (!err)
		lb_prog_close(prog);
	return err;
}

int session_begin(const struct site *site, struct session *ss, struct fault *f)
{
	char secret_path[PATH_MAX];
	int pinned, err, repaired = 0, fixed = 0, created = 0;
	__u64 secret[2];

	ss->site = site;
	ss->lock = -1;
	ss->have_maps = 0;
	ss->note[0] = '\0';
	lb_maps_init(&ss->maps);
	state_init(&ss->applied);
	err = site_privileged(f) ?: site_dir_ensure(site, f);
	if (err)
		return err;
	ss->lock = site_lock(site, 1, f);
	if (ss->lock < 0)
		return ss->lock;
	state_tmp_sweep(site->state_path);
	site_path(site, "secret", secret_path, sizeof(secret_path));
	state_tmp_sweep(secret_path);
	err = site_state_read(site, &ss->applied, &ss->revision, f);
	if (err)
		return err;
	pinned = site_maps_pinned(site);
	if (pinned == 0 && (ss->flags & SESSION_CREATE_MAPS)) {
		err = maps_create(ss, f);
		if (err)
			return err;
		pinned = 1;
		created = 1;
	}
	if (!(ss->flags & SESSION_NEEDS_MAPS) && pinned != 1)
		return 0;
	/* A secret file that is there but unusable stops everything, said as it is. */
	err = secret_read(site, 0, secret, f);
	/* With a store, a key that is not the fleet's stops everything but setting it. */
	if (!err && !(ss->flags & SESSION_SECRET_CHANGE))
		err = store_key_check(site->store, secret, f);
	memset(secret, 0, sizeof(secret));
	if (err && err != -ENOENT)
		return err;
	err = site_maps_open(site, &ss->maps, f);
	if (err)
		return err;
	ss->have_maps = 1;
	err = kernel_repair(&ss->maps, &ss->applied, &repaired, f) ?:
	      site_links_converge(site, &ss->applied, &fixed, f);
	if (err) {
		fault_prefix(f, "the kernel does not hold the committed state and repairing it failed");
		return fault_append(f, "; nothing changed (ringlb verify shows what differs)");
	}
	/* Maps just created are filled from the state: no repair to speak of. */
	if ((repaired && !created) || fixed)
		snprintf(ss->note, sizeof(ss->note),
			 "first repaired the kernel to the committed state (generation %llu)%s",
			 (unsigned long long)ss->applied.fleet.generation,
			 fixed ? ", the programs on the interfaces included" : "");
	return 0;
}

void session_end(struct session *ss)
{
	state_free(&ss->applied);
	lb_maps_close(&ss->maps);
	if (ss->lock >= 0)
		close(ss->lock);
	ss->lock = -1;
}
