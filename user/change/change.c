// SPDX-License-Identifier: GPL-2.0-only
/*
 * The change pipeline (change.h): a change is a run of steps over a
 * session, each 0 or -errno with its fault, and the undo of each step that
 * came before a failure. The order of the steps is what keeps the kernel
 * serving a committed state whatever happens between them:
 *
 *   begin    the session: the lock, the committed state, the kernel made to
 *            hold it (session.h)
 *   apply    the change's own function, on a copy of the committed state;
 *            then the rules every change keeps (fail open, previous rings)
 *   mark     the kernel's record says "changing": a crash from here on is
 *            repaired by the next session
 *   commit   the store takes the new state (the point of no return, or
 *            -ESTALE: another host's change came first)
 *   follow   the kernel made to hold it, and its record says so
 *
 * A failure before the commit undoes what came before it; a failure to
 * follow writes the old state back and converges to it, unless the store
 * is shared (other hosts may serve the new state already): then the next
 * session repairs this host's kernel.
 */
#include "change.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "rings_log.h"
#include "store.h"

/**
 * struct change - one try of a change.
 * @site: the deployment
 * @ss: its session
 * @want: the state the change makes
 * @out: what it says (the fault, the undo's fault, the note)
 * @undo: what the apply function did outside the state, to put back
 * @logged: 1 once the change is a transition for rings.log (it was applied)
 */
struct change {
	const struct site *site;
	struct session ss;
	struct state want;
	struct change_outcome *out;
	struct change_undo undo;
	int logged;
};

/* Make the kernel hold @want: maps (from @applied, or compared whole when NULL), then programs. */
static int converge(const struct site *site, const struct lb_maps *maps,
		    const struct state *applied, const struct state *want, struct fault *f)
{
	int fixed;

	return kernel_sync(maps, applied, want, f) ?: site_links_converge(site, want, &fixed, f);
}

/*
 * The next hops toward encapsulated VIPs' backends get a datagram each, so
 * the kernel resolves (or refreshes) their neighbour entries: the program's
 * FIB lookup uses them but never refreshes them, and drops a packet that
 * finds none. Best effort, no wait: done after every change.
 */
void change_next_hops_refresh(const struct state *s)
{
	size_t i, j;

	for (i = 0; i < s->fleet.vip_count; i++)
		if (s->fleet.vips[i].forward != LB_FORWARD_L2)
			for (j = 0; j < s->fleet.vips[i].backend_count; j++)
				host_neigh_provoke(&s->fleet.vips[i].backends[j].addr);
}

/* apply: the change's function on a copy of the committed state, and what every change keeps. */
static int step_apply(struct change *c, change_apply_fn apply, const void *args)
{
	struct change_ctx ctx = { .site = c->site, .undo = &c->undo };
	struct fault *f = &c->out->fault;
	int err;

	if (state_clone(&c->want, &c->ss.applied))
		return fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
	err = apply(&ctx, args, &c->want, f);
	if (err)
		return err;
	c->logged = 1;
	/*
	 * Every change keeps its VIPs' last healthy sets (fail open) and the
	 * rings it replaces, whatever command or verdict made it.
	 */
	state_health_settle(&c->ss.applied, &c->want);
	state_history_advance(&c->ss.applied, &c->want);
	c->want.fleet.generation = c->ss.applied.fleet.generation + 1;
	return 0;
}

/* mark: the kernel's record says a change is under way. */
static int step_mark(struct change *c)
{
	int err = c->ss.have_maps ? kernel_record(&c->ss.maps, &c->ss.applied, 1) : 0;

	if (err)
		fault_errno(&c->out->fault, FAULT_KERNEL, err, "cannot write the kernel's record");
	return err;
}

/* commit: the store takes the new state. */
static int step_commit(struct change *c)
{
	return store_commit(c->site->store, &c->want, &c->ss.applied, c->ss.revision,
			    &c->out->fault);
}

/* follow: the kernel holds the new state, and its record says so. */
static int step_follow(struct change *c)
{
	struct fault *f = &c->out->fault;
	int err;

	if (!c->ss.have_maps)
		return 0;
	err = converge(c->site, &c->ss.maps, &c->ss.applied, &c->want, f);
	if (!err && (err = kernel_record(&c->ss.maps, &c->want, 0)))
		fault_errno(f, FAULT_KERNEL, err, "cannot write the kernel's record");
	return err;
}

/* What the apply function did outside the state: put back (@failed) or kept, once. */
static void undo_outside(struct change *c, int failed)
{
	if (c->undo.fn)
		c->undo.fn(c->undo.arg, failed);
	c->undo.fn = NULL;
}

/* Undo before the commit: the record back to "holds the committed state", the links to it. */
static void undo_uncommitted(struct change *c, int marked)
{
	struct fault *undo = &c->out->undo;
	int fixed, err;

	undo_outside(c, 1);
	if (!c->ss.have_maps)
		return;
	if (marked && (err = kernel_record(&c->ss.maps, &c->ss.applied, 0))) {
		fault_errno(undo, FAULT_KERNEL, err, "cannot write the kernel's record");
		return;
	}
	/* Attach may have pinned its link already. */
	site_links_converge(c->site, &c->ss.applied, &fixed, undo);
}

/* Undo after the commit, of what only this host holds: the old state back, everywhere. */
static void undo_committed(struct change *c)
{
	struct fault *undo = &c->out->undo, ignored;
	int err;

	undo_outside(c, 1);
	/* If the old state cannot be written back, the new one stays: the next command repairs. */
	if (store_commit(c->site->store, &c->ss.applied, &c->want, c->ss.revision, &ignored))
		return;
	err = converge(c->site, &c->ss.maps, NULL, &c->ss.applied, undo);
	if (!err && (err = kernel_record(&c->ss.maps, &c->ss.applied, 0)))
		fault_errno(undo, FAULT_KERNEL, err, "cannot write the kernel's record");
}

/* One try of change_run(): -ESTALE when the store changed between the read and the commit. */
static int change_once(const struct site *site, unsigned int flags, __u32 flow_entries,
		       change_apply_fn apply, const void *args, const char *cause,
		       struct change_outcome *out)
{
	struct change c = { .site = site, .out = out,
			    .ss = { .flags = flags, .flow_entries = flow_entries } };
	struct fault *f = &out->fault;
	struct timespec start, end;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &start);
	memset(out, 0, sizeof(*out));
	state_init(&c.want);
	err = session_begin(site, &c.ss, f);
	if (err)
		goto out;
	err = step_apply(&c, apply, args);
	if (err) {
		undo_uncommitted(&c, 0);
		goto out;
	}
	err = step_mark(&c);
	if (err) {
		fault_append(f, "; nothing changed");
		undo_uncommitted(&c, 0);
		goto out;
	}
	err = step_commit(&c);
	if (err == -EREMOTEIO) {
		/* The store took it; this host's copy did not: the kernel follows all the same. */
		struct fault kept = *f;

		*f = (struct fault){ 0 };
		if (step_follow(&c))
			fault_append(&kept, "; the kernel could not follow either (%s)", f->why);
		*f = kept;
		goto out;
	}
	if (err) {
		/* Another host's change came first: change_run() applies this one to it. */
		if (err == -ESTALE)
			c.logged = 0;
		/* Unconfirmed: it may stand; the kernel stays on the old state until it is known. */
		if (err != -EINPROGRESS)
			fault_append(f, "; nothing changed");
		undo_uncommitted(&c, 1);
		goto out;
	}
	err = step_follow(&c);
	if (!err)
		goto out;
	/*
	 * A shared store's state stands when the change wrote it: other hosts
	 * may serve it already. This host's kernel is brought to it by the next
	 * session. A change of this host's half alone is undone here.
	 */
	if (store_shared(site->store) && state_fleet_same(&c.ss.applied, &c.want) != 1) {
		fault_prefix(f, "committed to the store, but this host's kernel could not follow");
		fault_append(f, "; the next change or the daemon repairs it");
		goto out;
	}
	fault_append(f, "; nothing changed");
	undo_committed(&c);
out:
	/* Still registered: the change stands (every failure that undoes it put it back). */
	undo_outside(&c, 0);
	if (!err && c.ss.stale)
		snprintf(out->note, sizeof(out->note), "done on this host's copy of the fleet's "
			 "revision %llu: %s", (unsigned long long)c.ss.revision, c.ss.stale_why);
	else if (!err && c.ss.copy_why[0])
		snprintf(out->note, sizeof(out->note), "%.200s%sthis host's copy of the state it "
			 "follows could not be written: %.300s", c.ss.note, c.ss.note[0] ? "; " : "",
			 c.ss.copy_why);
	else if (!err)
		snprintf(out->note, sizeof(out->note), "%s", c.ss.note);
	if (!err) {
		out->generation = c.want.fleet.generation;
		change_next_hops_refresh(&c.want);
	}
	if (c.logged) {
		char outcome[FAULT_WHY_MAX + 16];

		snprintf(outcome, sizeof(outcome), err ? "failed: %s" : "ok", f->why);
		clock_gettime(CLOCK_MONOTONIC, &end);
		rings_log_write(site, &c.ss.applied, &c.want, cause, outcome,
				(double)(end.tv_sec - start.tv_sec) +
					(double)(end.tv_nsec - start.tv_nsec) / 1e9);
	}
	state_free(&c.want);
	session_end(&c.ss);
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
