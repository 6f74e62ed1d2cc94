// SPDX-License-Identifier: GPL-2.0-only
/*
 * Health verdicts (daemon_impl.h): when the probe thread finds what a
 * target's checks say differs from the committed verdict and its hold is
 * over, it wakes this source, which commits the verdict as a change of the
 * state (change_run(), under the deployment's lock, audited), on the main
 * loop: the commit's store I/O never runs where probes are timed.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "audit.h"
#include "change.h"

struct verdict_args {
	struct vip_spec vip;
	char name[NAME_MAX_LEN + 1];
	__u64 cookie;
	int up;
};

/* A verdict as a change: the backend's health in the state, nothing else. */
static int verdict_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			 struct fault *f)
{
	const struct verdict_args *a = args;
	struct state_vip *v = state_vip_find(want, &a->vip);
	struct state_backend *b = v ? state_backend_find(v, a->name) : NULL;
	char spec[ADDR_TEXT_MAX];

	(void)ctx;
	vip_format(&a->vip, spec);
	if (!b || b->cookie != a->cookie || b->retired)
		return fault_set(f, FAULT_STATE, -ENOENT, "backend '%s' of VIP %s is gone", a->name,
				 spec);
	b->down = !a->up;
	return 0;
}

/* The targets whose verdict is due, copied (malloc()ed); *n of them. */
static struct health_target *verdicts_due(struct daemon *d, __u64 now, size_t *n)
{
	struct health_target *due;
	size_t i;

	*n = 0;
	pthread_mutex_lock(&d->lock);
	due = calloc(d->target_count + 1, sizeof(*due));
	for (i = 0; due && daemon_leads(d, now) && i < d->target_count; i++)
		if (health_due(&d->targets[i], now))
			due[(*n)++] = d->targets[i];
	pthread_mutex_unlock(&d->lock);
	return due;
}

/* Commit what target @t's checks say. */
static void verdict_commit(struct daemon *d, const struct health_target *t, __u64 now)
{
	struct verdict_args a = { .vip = t->vip, .cookie = t->cookie, .up = t->seen_up };
	char spec[ADDR_TEXT_MAX], cause[384], *words[5];
	struct change_outcome out;
	size_t i;
	int err;

	snprintf(a.name, sizeof(a.name), "%s", t->name);
	vip_format(&t->vip, spec);
	if (a.up)
		snprintf(cause, sizeof(cause), "health: backend %s of VIP %s up after %u good checks",
			 t->name, spec, t->ok_run);
	else
		snprintf(cause, sizeof(cause), "health: backend %s of VIP %s down after %u failed "
			 "checks (%s)", t->name, spec, t->fail_run, t->last);
	err = change_run(&d->o->site, SESSION_NEEDS_MAPS, 0, verdict_apply, &a, cause, &out);
	words[0] = "daemon";
	words[1] = "health";
	words[2] = spec;
	words[3] = a.name;
	words[4] = a.up ? "up" : "down";
	audit_write(&d->o->site, words, 5, !err, out.fault.why,
		    err ? fault_class_name(out.fault.class) : NULL);
	if (err)
		dlog("%s: not committed: %s", cause, out.fault.why);
	else
		dlog("%s", cause);
	pthread_mutex_lock(&d->lock);
	/*
	 * Committed or not, the next try waits a hold: no change loop on a failing
	 * commit. Committed, it is the verdict now, before the probe thread
	 * rebuilds its targets from the state served next.
	 */
	for (i = 0; i < d->target_count; i++)
		if (d->targets[i].cookie == a.cookie && vip_equal(&d->targets[i].vip, &a.vip) &&
		    strcmp(d->targets[i].name, a.name) == 0) {
			d->targets[i].changed_ns = now;
			if (!err)
				d->targets[i].verdict_up = a.up;
		}
	pthread_mutex_unlock(&d->lock);
	/* The store moved by this commit: the kernel is compared with it first, as for any change. */
	if (follow_read(d, FOLLOW_FORCE) == FOLLOW_MOVED)
		daemon_reload(d, "health verdict", 0);
}

/*
 * Each verdict due now, committed once: one that does not commit waits for
 * the probe thread's next wake-up (its next result), so a failing commit
 * never holds the loop.
 */
static int on_verdicts(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	struct health_target *due;
	__u64 events, now = daemon_now_ns();
	size_t n, i;

	(void)s;
	(void)revents;
	if (read(fd, &events, sizeof(events)) != sizeof(events))
		return 0;
	due = verdicts_due(d, now, &n);
	for (i = 0; due && i < n; i++) {
		int leads;

		/* Each commit takes store round trips: the lead is proven again before each. */
		pthread_mutex_lock(&d->lock);
		leads = daemon_leads(d, daemon_now_ns());
		pthread_mutex_unlock(&d->lock);
		if (!leads)
			break;
		verdict_commit(d, &due[i], now);
		translog_follow(d);
	}
	free(due);
	return 0;
}

int verdicts_start(struct daemon *d)
{
	d->verdict_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->verdict_fd < 0)
		return -errno;
	return sd_event_add_io(d->loop, NULL, d->verdict_fd, EPOLLIN, on_verdicts, d);
}
