// SPDX-License-Identifier: GPL-2.0-only
/*
 * The change pipeline (change.h). Every step that can fail says why in one
 * line and returns -errno; the order of the steps is what keeps the kernel
 * serving a committed state whatever happens between them.
 */
#define _GNU_SOURCE
#include "change.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "rings_log.h"
#include "site.h"
#include "store.h"


/* Make the kernel hold @want: maps (from @applied, or compared whole when NULL), then programs. */
static int converge(const struct site *site, const struct lb_maps *maps,
		    const struct state *applied, const struct state *want, char why[FAULT_WHY_MAX])
{
	int fixed;

	return kernel_sync(maps, applied, want, why) ?: site_links_converge(site, want, &fixed, why);
}

/*
 * The next hops toward encapsulated VIPs' backends get a datagram each, so
 * the kernel resolves (or refreshes) their neighbour entries: the program's
 * FIB lookup uses them but never refreshes them, and drops a packet that
 * finds none. Best effort, no wait: done after every change.
 */
static void next_hops_refresh(const struct state *s)
{
	size_t i, j;

	for (i = 0; i < s->vip_count; i++)
		if (s->vips[i].forward != LB_FORWARD_L2)
			for (j = 0; j < s->vips[i].backend_count; j++)
				host_neigh_provoke(&s->vips[i].backends[j].addr);
}


/* @why with "; nothing changed" after it. */
static void nothing_changed(char why[FAULT_WHY_MAX])
{
	char cause[FAULT_WHY_MAX];

	snprintf(cause, sizeof(cause), "%s", why);
	snprintf(why, FAULT_WHY_MAX, "%s; nothing changed", cause);
}

/* One try of change_run(): -ESTALE when the store changed between the read and the commit. */
static int change_once(const struct site *site, unsigned int flags, __u32 flow_entries,
		       change_apply_fn apply, const void *args, const char *cause,
		       struct change_outcome *out)
{
	struct session ss = { .flags = flags, .flow_entries = flow_entries };
	struct change_ctx ctx = { .site = site };
	struct state want;
	char *why = out->why, *undo = out->undo;
	int err, fixed, logged = 0;
	struct timespec start, end;

	clock_gettime(CLOCK_MONOTONIC, &start);
	memset(out, 0, sizeof(*out));
	state_init(&want);
	err = session_begin(site, &ss, why);
	if (err)
		goto out;
	if (state_clone(&want, &ss.applied)) {
		snprintf(why, FAULT_WHY_MAX, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	err = apply(&ctx, args, &want, why);
	if (err)
		goto undo_links; /* attach may have made its link already */
	logged = 1;
	/*
	 * Every change keeps its VIPs' last healthy sets (fail open) and the
	 * rings it replaces, whatever command or verdict made it.
	 */
	state_health_settle(&ss.applied, &want);
	state_history_advance(&ss.applied, &want);
	want.generation = ss.applied.generation + 1;
	if (ss.have_maps) {
		err = kernel_record(&ss.maps, &ss.applied, 1);
		if (err) {
			snprintf(why, FAULT_WHY_MAX, "cannot write the kernel's record: %s; nothing "
				 "changed", strerror(-err));
			goto undo_links;
		}
	}
	/* The commit. */
	err = store_commit(site, &want, &ss.applied, ss.revision, why);
	if (err) {
		/* Another host's change came first: the caller applies this one to it. */
		if (err == -ESTALE)
			logged = 0;
		nothing_changed(why);
		goto undo_record;
	}
	if (!ss.have_maps)
		goto out;
	err = converge(site, &ss.maps, &ss.applied, &want, why) ?:
	      kernel_record(&ss.maps, &want, 0);
	if (!err)
		goto out;
	if (!why[0])
		snprintf(why, FAULT_WHY_MAX, "%s", strerror(-err));
	/*
	 * The store's state stands: other hosts may serve it already. This
	 * host's kernel is brought to it by the next session.
	 */
	if (site->store) {
		char cause_[FAULT_WHY_MAX];

		snprintf(cause_, sizeof(cause_), "%s", why);
		snprintf(why, FAULT_WHY_MAX, "committed to the store, but this host's kernel could "
			 "not follow: %s; the next change or the daemon repairs it", cause_);
		goto out;
	}
	nothing_changed(why);
	/* If the old state cannot be written back, the new one stays: the next command repairs. */
	if (state_save(&ss.applied, site->state_path))
		goto out;
	if (converge(site, &ss.maps, NULL, &ss.applied, undo) ||
	    kernel_record(&ss.maps, &ss.applied, 0))
		goto undo_failed;
	goto out;
undo_record:
	if (ss.have_maps && kernel_record(&ss.maps, &ss.applied, 0)) {
		snprintf(undo, FAULT_WHY_MAX, "cannot write the kernel's record");
		goto undo_failed;
	}
undo_links:
	if (ss.have_maps && site_links_converge(site, &ss.applied, &fixed, undo))
		goto undo_failed;
	goto out;
undo_failed:
	if (!undo[0])
		snprintf(undo, FAULT_WHY_MAX, "cannot write the kernel's record");
out:
	if (!err) {
		snprintf(out->note, sizeof(out->note), "%s", ss.note);
		next_hops_refresh(&want);
	}
	if (logged) {
		char outcome[FAULT_WHY_MAX + 16];

		snprintf(outcome, sizeof(outcome), err ? "failed: %s" : "ok", why);
		clock_gettime(CLOCK_MONOTONIC, &end);
		rings_log_write(site, &ss.applied, &want, cause, outcome,
				(double)(end.tv_sec - start.tv_sec) +
					(double)(end.tv_nsec - start.tv_nsec) / 1e9);
	}
	state_free(&want);
	session_end(&ss);
	return err;
}

int change_run(const struct site *site, unsigned int flags, __u32 flow_entries,
	       change_apply_fn apply, const void *args, const char *cause,
	       struct change_outcome *out)
{
	int tries, err;

	for (tries = 1;; tries++) {
		err = change_once(site, flags, flow_entries, apply, args, cause, out);
		if (err != -ESTALE || tries == CHANGE_STORE_TRIES)
			return err;
		/* Another host is writing: a moment that differs per try and per process. */
		usleep((useconds_t)(1000 * (5 + (getpid() + tries * 7) % 20)));
	}
}
