// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel against the committed state (daemon_impl.h): a session (which
 * repairs what the kernel's record says may be wrong), then a comparison of
 * every map and program with the state, and a full sync when anything
 * differs. What failed decides, by its class, whether this host can serve
 * the committed state, and so whether its routes stay.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "change.h"
#include "kernel.h"

/* Differences between kernel and state logged one by one, at most. */
#define REPORT_LINES_MAX 10

int daemon_withdraws(const struct fault *f)
{
	return f->class == FAULT_KERNEL || f->class == FAULT_STATE;
}

static void report_line(void *arg, const char *line)
{
	struct daemon *d = arg;

	if (d->reported++ < REPORT_LINES_MAX)
		dlog("the kernel differs: %s", line);
}

/* The full comparison, and a full sync when anything differs. */
static int compare(struct daemon *d, struct session *ss, const char *when)
{
	struct fault f = { 0 };
	int diffs, err;

	d->reported = 0;
	diffs = kernel_verify(&ss->maps, &ss->applied, report_line, d);
	if (diffs < 0) {
		dlog("%s: cannot compare the kernel with the state: %s", when, strerror(-diffs));
		return diffs;
	}
	if (!diffs)
		return 0;
	err = kernel_sync(&ss->maps, NULL, &ss->applied, &f);
	if (!err && (err = kernel_record(&ss->maps, &ss->applied, 0)))
		fault_errno(&f, FAULT_KERNEL, err, "cannot write the kernel's record");
	if (err) {
		dlog("%s: the kernel differs from the committed state in %d places; repairing it "
		     "failed: %s", when, diffs, f.why);
		d->host.kernel_bad = daemon_withdraws(&f);
		return err;
	}
	dlog("%s: the kernel differed from the committed state in %d places; repaired to "
	     "generation %llu", when, diffs, (unsigned long long)ss->applied.fleet.generation);
	pthread_mutex_lock(&d->lock);
	d->counts.repairs++;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* Say once what the store's failure is, and when it is over. */
static void fail_static_say(struct daemon *d, const struct session *ss)
{
	if (ss->stale && strcmp(d->follow.why, ss->stale_why)) {
		time_t at = (time_t)ss->applied.host.member.followed;
		char when[32] = "?";
		struct tm tm;

		if (gmtime_r(&at, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		dlog("failing static: %s; serving this host's copy of revision %llu (generation "
		     "%llu, followed %s); changes are refused until the store is sane",
		     ss->stale_why, (unsigned long long)ss->revision,
		     (unsigned long long)ss->applied.fleet.generation, when);
		snprintf(d->follow.why, sizeof(d->follow.why), "%s", ss->stale_why);
	} else if (!ss->stale && d->fail_static) {
		dlog("the store's state is sane again (revision %llu, generation %llu): following it",
		     (unsigned long long)ss->revision, (unsigned long long)ss->applied.fleet.generation);
		d->follow.why[0] = '\0';
	}
	pthread_mutex_lock(&d->lock);
	d->fail_static = ss->stale;
	pthread_mutex_unlock(&d->lock);
}

int reconcile(struct daemon *d, const char *when)
{
	/*
	 * While the store is known to fail (the reader thread says so), the
	 * kernel is held to this host's copy without asking it: a silent store
	 * would hold the main loop a timeout per endpoint at every comparison.
	 */
	struct session ss = { .flags = SESSION_FAIL_STATIC |
				       (d->follow.store_down ? SESSION_LOCAL : 0) };
	struct fault f = { 0 };
	int err;

	err = session_begin(&d->o->site, &ss, &f);
	if (err) {
		dlog("%s: %s", when, f.why);
		if (err == -EKEYREJECTED)
			d->host.secret_bad = 1;
		/* A store that fails with no copy to fall back on: nothing served to judge. */
		else if (f.class != FAULT_STORE)
			d->host.kernel_bad = daemon_withdraws(&f);
		goto out;
	}
	if (!ss.local)
		fail_static_say(d, &ss);
	if (ss.copy_why[0] && !d->copy_failing)
		dlog("%s: this host's copy of the state it follows could not be written: %s; a "
		     "restart without the store would start from an older one", when, ss.copy_why);
	d->copy_failing = ss.copy_why[0] != '\0';
	d->host.secret_bad = 0;
	d->host.kernel_bad = 0;
	/* The kernel holds the state of this revision now (session_begin() repaired to it). */
	d->follow.synced = ss.revision;
	/*
	 * The kernel made to hold a revision this host had not followed (at
	 * start, after changes made while no daemon ran; whichever duty noticed
	 * the store move first): following, not drift.
	 */
	if (ss.note[0] && ss.moved) {
		/* Another host's change followed: what every follower does, not drift. */
		pthread_mutex_lock(&d->lock);
		d->counts.follows++;
		pthread_mutex_unlock(&d->lock);
	} else if (ss.note[0]) {
		dlog("%s: %s", when, ss.note);
		pthread_mutex_lock(&d->lock);
		d->counts.repairs++;
		pthread_mutex_unlock(&d->lock);
	}
	/*
	 * Backends that came through the store (or whose neighbour entries went
	 * stale since): their next hops resolved here too, as the host that
	 * made the change resolved them.
	 */
	if (ss.have_maps)
		change_next_hops_refresh(&ss.applied);
	if (ss.have_maps)
		err = compare(d, &ss, when);
out:
	session_end(&ss);
	return err;
}
