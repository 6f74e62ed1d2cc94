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
#include <time.h>
#include <unistd.h>

#include "kernel.h"
#include "secret.h"
#include "store.h"

/*
 * Create and pin the maps when there are none (attach after a reboot, a first
 * attach): the maps alone; the program is loaded where it is attached.
 */
static int maps_create(const struct session *ss, struct fault *f)
{
	struct lb_load_opts opts = {
		.flow_entries = ss->flow_entries ? ss->flow_entries : ss->applied.host.flow_entries,
		.maps_only = 1,
	};
	struct lb_prog *prog;
	int err = site_prog_load(ss->site, &opts, &prog, f);

	if (!err)
		lb_prog_close(prog);
	return err;
}

/*
 * The store failed (@f): with SESSION_FAIL_STATIC, go on with this host's
 * copy of what it last followed, saying why. Return: 0 with the copy, or
 * the store's fault.
 */
static int fail_static(struct session *ss, struct fault *f)
{
	struct fault why = *f;

	if (!(ss->flags & SESSION_FAIL_STATIC) || f->class != FAULT_STORE)
		return f->err;
	state_free(&ss->applied);
	if (store_copy_read(ss->site->store, &ss->applied, f)) {
		*f = why;
		return f->err;
	}
	ss->stale = 1;
	ss->revision = ss->applied.host.member.revision;
	snprintf(ss->stale_why, sizeof(ss->stale_why), "%s", why.why);
	*f = (struct fault){ 0 };
	return 0;
}

/*
 * Is @digest (this host's key) the fleet's? The store's answer, except that
 * a store whose digest moved away from the one this host followed with
 * (its own, unchanged) is the store's fault, not this host's: it fails
 * static rather than withdraw.
 */
static int key_check(struct session *ss, const __u64 secret[2], struct fault *f)
{
	const struct state_member *m = &ss->applied.host.member;
	__u64 mine = lb_secret_digest(secret);
	int err;

	if (ss->stale || ss->local) {
		if (m->key_digest && m->key_digest != mine)
			return fault_set(f, FAULT_STATE, -EKEYREJECTED,
					 "this host's flow hash key (digest %016llx) is not the one "
					 "it followed the fleet with (%016llx)",
					 (unsigned long long)mine, (unsigned long long)m->key_digest);
		return 0;
	}
	err = store_key_check(ss->site->store, secret, f);
	/* The store failed between reading the state and the digest: as for the state. */
	if (err && err != -EKEYREJECTED && f->class == FAULT_STORE && m->revision)
		return fail_static(ss, f);
	if (err == -EKEYREJECTED && m->revision && m->key_digest == mine) {
		fault_set(f, FAULT_STORE, -EKEYREJECTED,
			  "the fleet's key digest in the store changed under this host (it followed "
			  "revision %llu with digest %016llx, its own key's): keeping what it "
			  "serves; put the digest back, or give every host the new key",
			  (unsigned long long)m->revision, (unsigned long long)mine);
		return fail_static(ss, f);
	}
	return err;
}

/*
 * The store's state is what this host follows now (its kernel holds it):
 * its file becomes the copy of it, with the revision, the time and the key
 * it followed with, so a restart without the store starts from it.
 */
static int copy_write(struct session *ss, __u64 digest, struct fault *f)
{
	struct state_member *m = &ss->applied.host.member;

	if (!store_shared(ss->site->store) || ss->stale || ss->local ||
	    (m->revision == ss->revision && m->key_digest == digest))
		return 0;
	m->revision = ss->revision;
	m->followed = (__u64)time(NULL);
	m->key_digest = digest;
	return store_host_write(ss->site->state_path, &ss->applied, f);
}

int session_begin(const struct site *site, struct session *ss, struct fault *f)
{
	char secret_path[PATH_MAX];
	int pinned, err, repaired = 0, fixed = 0, created = 0, have_secret;
	__u64 secret[2], digest = 0;

	ss->site = site;
	ss->lock = -1;
	ss->have_maps = 0;
	ss->note[0] = '\0';
	ss->stale = 0;
	ss->local = 0;
	ss->moved = 0;
	ss->stale_why[0] = '\0';
	ss->copy_why[0] = '\0';
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
	if ((ss->flags & SESSION_LOCAL) && store_shared(site->store) &&
	    !store_copy_read(site->store, &ss->applied, f)) {
		ss->local = 1;
		ss->revision = ss->applied.host.member.revision;
	} else {
		*f = (struct fault){ 0 };
		err = site_state_read(site, &ss->applied, &ss->revision, f);
		if (err && fail_static(ss, f))
			return err;
	}
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
	have_secret = !err;
	if (have_secret)
		digest = lb_secret_digest(secret);
	/* With a store, a key that is not the fleet's stops everything but setting it. */
	if (!err && !(ss->flags & SESSION_SECRET_CHANGE))
		err = key_check(ss, secret, f);
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
	/* A revision this host had not followed: what the repair did was following it. */
	ss->moved = store_shared(site->store) && !ss->stale && !ss->local &&
		    ss->applied.host.member.revision != ss->revision;
	/*
	 * Without a key yet (before the first attach) there is nothing followed
	 * to record. A copy that cannot be written (a full disk) costs a restart
	 * without the store its newest state, not the traffic: said, not fatal.
	 */
	if (have_secret) {
		struct fault copy = { 0 };

		if (copy_write(ss, digest, &copy))
			snprintf(ss->copy_why, sizeof(ss->copy_why), "%s", copy.why);
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
