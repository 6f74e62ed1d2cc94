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

/* The first target whose verdict is due, copied; 0 when none. */
static int verdict_due(struct daemon *d, __u64 now, struct health_target *out)
{
	size_t i;
	int found = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; d->leader && i < d->target_count && !found; i++)
		if (health_due(&d->targets[i], now)) {
			*out = d->targets[i];
			found = 1;
		}
	pthread_mutex_unlock(&d->lock);
	return found;
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
	/* Committed or not, the next try waits a hold: no change loop on a failing commit. */
	for (i = 0; i < d->target_count; i++)
		if (d->targets[i].cookie == a.cookie && vip_equal(&d->targets[i].vip, &a.vip) &&
		    strcmp(d->targets[i].name, a.name) == 0)
			d->targets[i].changed_ns = now;
	pthread_mutex_unlock(&d->lock);
	follow_read(d, 1);
}

static int on_verdicts(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	struct health_target due;
	__u64 events, now = daemon_now_ns();

	(void)s;
	(void)revents;
	if (read(fd, &events, sizeof(events)) != sizeof(events))
		return 0;
	while (verdict_due(d, now, &due)) {
		verdict_commit(d, &due, now);
		translog_follow(d);
	}
	return 0;
}

int verdicts_start(struct daemon *d)
{
	d->verdict_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->verdict_fd < 0)
		return -errno;
	return sd_event_add_io(d->loop, NULL, d->verdict_fd, EPOLLIN, on_verdicts, d);
}
