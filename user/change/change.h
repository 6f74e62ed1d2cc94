/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The change pipeline, for every front end of the controller (the ringlb
 * command, the daemon's health verdicts): change_run() is the one way a
 * change is made.
 *
 * A change is an apply function that edits a copy of the committed state.
 * change_run() opens a session (session.h: the lock, the committed state,
 * the kernel made to hold it), runs the apply function, marks the kernel's
 * record "changing", commits the new state (the store), makes the kernel
 * follow and records the new state; a failure after the commit writes the
 * old state back and converges to it, and a crash anywhere is repaired by
 * the next session. The same apply function run on a copy, with no
 * session, is the change's dry run.
 *
 * Functions return 0 or a negative errno and fill a fault (fault.h): its
 * class and one line; they print nothing. The caller reports.
 */
#ifndef RINGLB_CHANGE_H
#define RINGLB_CHANGE_H

#include <stddef.h>
#include <linux/types.h>

#include "fault.h"
#include "kernel.h"
#include "session.h"
#include "site.h"
#include "state.h"

/** CHANGE_STORE_TRIES - commits a change tries when others keep writing the store. */
#define CHANGE_STORE_TRIES 16

/**
 * struct change_undo - how an apply function that changed something besides
 * the state (a file of this host) has it put back when the change fails.
 * @fn: called once: with @failed 1 before the kernel is converged back to
 *      the committed state (put it back), or with 0 when the change stands
 *      (keep it); either way it releases @arg. NULL: nothing outside
 * @arg: its argument
 */
struct change_undo {
	void (*fn)(void *arg, int failed);
	void *arg;
};

/**
 * struct change_ctx - what an apply function is given besides the state.
 * @site: the deployment
 * @dry_run: 1 when the change is only being measured: nothing on the host
 *           is asked or touched (no neighbour resolution, no load)
 * @undo: where it says how to undo what it did outside the state (NULL in
 *        a dry run, which does nothing outside)
 */
struct change_ctx {
	const struct site *site;
	int dry_run;
	struct change_undo *undo;
};

/**
 * change_apply_fn - edit @want (a copy of the committed state) as @args asks,
 * or say why not (a fault of the state class when the state refuses it, of
 * the kernel class when the host could not be asked). Whatever it does
 * outside @want (attach pins a link) must be undone by site_links_converge()
 * to the committed state.
 */
typedef int (*change_apply_fn)(const struct change_ctx *ctx, const void *args,
			       struct state *want, struct fault *f);

/**
 * struct change_outcome - what a change said.
 * @fault: on failure, what failed and where (the change did not happen,
 *         unless a shared store took it and this host's kernel could not
 *         follow: then the next session repairs it)
 * @undo: when undoing a partial change failed too, what failed (class
 *        FAULT_NONE when nothing did); the next session repairs it
 * @note: on success, what the session had to repair first
 */
struct change_outcome {
	struct fault fault;
	struct fault undo;
	char note[SESSION_NOTE_MAX];
	__u64 generation;
};

/**
 * change_run() - make one change, all or nothing.
 * @site: the deployment
 * @flags: enum session_flags
 * @flow_entries: with SESSION_CREATE_MAPS, the size of a flow table created now
 * @apply: the change
 * @args: its arguments
 * @cause: what made it, in words ("command: backend add ...", "health: ..."),
 *         for the ring transition log
 * @out: what happened, in words
 *
 * With a store, a commit that finds the state changed since it was read
 * (another host's change) reads it again and applies the change to it, up
 * to CHANGE_STORE_TRIES times; a failure after the commit leaves the store
 * as it is (the other hosts serve it) and this host's kernel is repaired by
 * the next session. Every VIP whose ring the change moves gets one line in
 * rings.log (rings_log.h).
 */
int change_run(const struct site *site, unsigned int flags, __u32 flow_entries,
	       change_apply_fn apply, const void *args, const char *cause,
	       struct change_outcome *out);

/**
 * change_next_hops_refresh() - a datagram to each backend of @s's
 * encapsulated VIPs, so the kernel resolves (or refreshes) the neighbour
 * entries of their next hops, which the program's FIB lookup needs but
 * never refreshes. Best effort, no wait: after every change, and on every
 * host that follows one through the store.
 */
void change_next_hops_refresh(const struct state *s);

#endif /* RINGLB_CHANGE_H */
