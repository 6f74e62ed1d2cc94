// SPDX-License-Identifier: GPL-2.0-only
/*
 * The health targets and their probes (daemon_impl.h), on a thread with a
 * loop of its own: one I/O source per probe under way and one timer at the
 * next probe's start or deadline, so the store's I/O on the main loop
 * never delays a probe or its timeout. The thread owns the targets and
 * their sockets; the main loop pokes it when the state, the lead or the
 * path changed, and it wakes the main loop (verdicts.c) when a verdict is
 * due. Every daemon of a fleet probes, so each knows its own path to every
 * backend (paths.c); only the one that leads judges: its results may
 * commit verdicts. Also here: the clients' path the probes take (probe.h),
 * which the main loop sets up.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "host.h"
#include "probe.h"
#include "site.h"

/**
 * struct probe_slot - a target's I/O source, by its index: for which probe
 * (the target's count of probes started: a closed socket's number is soon
 * another socket's) and which events.
 */
struct probe_slot {
	struct daemon_probes *p;
	size_t index;
	sd_event_source *src;
	__u64 probe;
	short events;
};

/**
 * struct daemon_probes - the probe thread.
 * @d: its daemon
 * @loop: its loop
 * @thread: the thread
 * @wake: the main loop's pokes (an eventfd)
 * @timer: the next start or deadline
 * @slots: one per target (@count of them)
 * @digest: state_digest() of the state the targets were built from
 * @built: 1 once they were
 * @leader: whether this daemon led at the last poke
 * @stopping: set by the main loop: the thread's loop exits at its next poke
 */
struct daemon_probes {
	struct daemon *d;
	sd_event *loop;
	pthread_t thread;
	int wake;
	sd_event_source *timer;
	struct probe_slot *slots;
	size_t count;
	__u64 digest;
	int built;
	int leader;
	volatile int stopping;
};

static struct health_target *target_find(struct health_target *ts, size_t n,
					 const struct vip_spec *vip, const char *name,
					 __u64 cookie)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ts[i].cookie == cookie && vip_equal(&ts[i].vip, vip) &&
		    strcmp(ts[i].name, name) == 0)
			return &ts[i];
	return NULL;
}

/*
 * The targets of @s: every active backend with a check. One already checked
 * (same VIP, name, cookie and check) keeps its probe and its runs; its
 * verdict is always the state's. Under the lock.
 */
static int targets_rebuild(struct daemon *d, const struct state *s, __u64 now)
{
	struct health_target *ts = NULL, *old;
	size_t n = 0, cap = 0, i, j;

	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++) {
			const struct state_vip *v = &s->fleet.vips[i];
			const struct state_backend *b = &v->backends[j];
			const struct state_check *c = state_backend_check(v, b);

			if (b->retired || b->draining || c->kind == STATE_CHECK_NONE)
				continue;
			if (n == cap) {
				struct health_target *more;

				cap = cap ? 2 * cap : 16;
				more = realloc(ts, cap * sizeof(*ts));
				if (!more) {
					for (i = 0; i < n; i++)
						health_probe_stop(&ts[i]);
					free(ts);
					return -ENOMEM;
				}
				ts = more;
			}
			old = target_find(d->targets, d->target_count, &v->spec, b->name, b->cookie);
			if (old && state_check_equal(&old->check, c)) {
				ts[n] = *old;
				old->fd = -1; /* the probe moves with it */
			} else {
				health_target_init(&ts[n], v, b, now);
			}
			ts[n].verdict_up = !b->down;
			ts[n].id = b->id;
			n++;
		}
	for (i = 0; i < d->target_count; i++)
		health_probe_stop(&d->targets[i]);
	free(d->targets);
	d->targets = ts;
	d->target_count = n;
	return 0;
}

/* --- sources ------------------------------------------------------------------------------- */

static int on_probe(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Every I/O source dropped, before the sockets they watch are closed (a rebuild). */
static void slots_drop(struct daemon_probes *p)
{
	size_t i;

	for (i = 0; i < p->count; i++)
		sd_event_source_disable_unref(p->slots[i].src);
	free(p->slots);
	p->slots = NULL;
	p->count = 0;
}

/*
 * Target @i's I/O source out of epoll, before anything may close its socket:
 * a socket closed while registered stays registered for as long as another
 * process holds it (birdc's posix_spawn() child, between its clone and its
 * exec), and its events then name a freed source (sd-event aborts in
 * process_epoll()). slots_update() registers the socket again if it lives.
 */
static void slot_forget(struct daemon_probes *p, size_t i)
{
	if (i < p->count && p->slots[i].src)
		p->slots[i].src = sd_event_source_disable_unref(p->slots[i].src);
}

/*
 * Each target's I/O source waits for what its probe waits for (under the
 * lock). Stale sources go first, then new ones come: a source dropped after
 * a new one was added could take away the registration of a new socket that
 * reused its number.
 */
static void slots_update(struct daemon_probes *p)
{
	struct daemon *d = p->d;
	size_t i;

	/* Another count: the slots are made anew (each source points at its slot). */
	if (p->count != d->target_count) {
		struct probe_slot *slots = calloc(d->target_count + 1, sizeof(*slots));

		if (!slots)
			return;
		slots_drop(p);
		for (i = 0; i < d->target_count; i++)
			slots[i] = (struct probe_slot){ .p = p, .index = i };
		p->slots = slots;
		p->count = d->target_count;
	}
	for (i = 0; i < p->count; i++) {
		struct probe_slot *sl = &p->slots[i];
		const struct health_target *t = &d->targets[i];
		short events = t->fd >= 0 ? health_probe_events(t) : 0;

		if (sl->src && (sl->probe != t->probes || sl->events != events))
			sl->src = sd_event_source_disable_unref(sl->src);
	}
	for (i = 0; i < p->count; i++) {
		struct probe_slot *sl = &p->slots[i];
		const struct health_target *t = &d->targets[i];
		short events = t->fd >= 0 ? health_probe_events(t) : 0;

		if (!sl->src && events &&
		    sd_event_add_io(p->loop, &sl->src, t->fd, (uint32_t)events, on_probe, sl) >= 0) {
			sl->probe = t->probes;
			sl->events = events;
		}
	}
}

/*
 * The next time something is due: a probe's deadline, or a probe's start
 * when probes may start (attached: else a poke says when).
 */
static void timer_update(struct daemon_probes *p, __u64 now)
{
	struct daemon *d = p->d;
	__u64 next = now + 1000000000ull;
	int starting = d->attached;
	size_t i;

	for (i = 0; i < d->target_count; i++) {
		const struct health_target *t = &d->targets[i];
		__u64 at = t->phase != HEALTH_IDLE ? t->deadline_ns : starting ? t->next_ns : next;

		if (at < next)
			next = at;
	}
	sd_event_source_set_time(p->timer, next > now ? next / 1000 : now / 1000);
	sd_event_source_set_enabled(p->timer, SD_EVENT_ONESHOT);
}

/* Wake the main loop when a verdict is due (under the lock). */
static void verdicts_check(struct daemon_probes *p, __u64 now)
{
	struct daemon *d = p->d;
	__u64 one = 1;
	size_t i;

	for (i = 0; daemon_leads(d, now) && i < d->target_count; i++)
		if (health_due(&d->targets[i], now)) {
			if (write(d->verdict_fd, &one, sizeof(one)) < 0) {
				/* Full: the main loop has a wake-up pending anyway. */
			}
			return;
		}
}

/* Results taken so far by @t. */
static __u64 results(const struct health_target *t)
{
	return t->ok_total + t->fail_total;
}

/* @t took a result since it had @before: judged when this daemon leads (under the lock). */
static void judged(struct daemon *d, struct health_target *t, __u64 before, __u64 now)
{
	if (results(t) > before && daemon_leads(d, now))
		t->judged++;
}

/* Start due probes, time out late ones (under the lock). */
static void probes_run(struct daemon_probes *p, __u64 now)
{
	struct daemon *d = p->d;
	size_t i;

	for (i = 0; i < d->target_count; i++) {
		struct health_target *t = &d->targets[i];
		__u64 before = results(t);

		/* A probe past its deadline is closed here, a new one closes the last. */
		slot_forget(p, i);
		health_probe_step(t, 0, now);
		judged(d, t, before, now);
		if (t->phase != HEALTH_IDLE || now < t->next_ns || !d->attached)
			continue;
		/*
		 * Without the path, a marked packet following the host's own routes
		 * could reach the VIP through the data path and pass for the wrong
		 * backend: the check fails instead.
		 */
		before = results(t);
		if (!t->check.direct && !d->path_ok) {
			t->next_ns = now + (__u64)t->check.interval_ms * 1000000ull;
			health_result(t, 0, "the clients' path for checks is not set up", now);
		} else {
			health_probe_start(t, t->vip.addr.family == LB_FAMILY_IPV4 ? &d->source4 :
										      &d->source6, now);
		}
		judged(d, t, before, now);
	}
}

/* After anything happened: holds, sources, timer and verdicts follow (under the lock). */
static void settle(struct daemon_probes *p, __u64 now)
{
	paths_hold(p->d, now);
	slots_update(p);
	timer_update(p, now);
	verdicts_check(p, now);
}

static int on_probe(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct probe_slot *sl = userdata;
	struct daemon_probes *p = sl->p;
	struct daemon *d = p->d;
	__u64 now = daemon_now_ns();

	(void)s;
	pthread_mutex_lock(&d->lock);
	if (sl->index < d->target_count && d->targets[sl->index].probes == sl->probe &&
	    d->targets[sl->index].fd == fd) {
		struct health_target *t = &d->targets[sl->index];
		__u64 before = results(t);

		/* This very source, while it dispatches: sd-event frees it after. */
		slot_forget(p, sl->index);
		health_probe_step(t, (short)revents, now);
		judged(d, t, before, now);
	}
	settle(p, now);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon_probes *p = userdata;
	struct daemon *d = p->d;
	__u64 now = daemon_now_ns();

	(void)s;
	(void)usec;
	pthread_mutex_lock(&d->lock);
	probes_run(p, now);
	settle(p, now);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* The main loop's poke: the state, the lead or the path changed; or stop. */
static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon_probes *p = userdata;
	struct daemon *d = p->d;
	__u64 now = daemon_now_ns(), events, digest;
	int started;
	size_t i;

	(void)s;
	(void)revents;
	if (read(fd, &events, sizeof(events)) != sizeof(events))
		return 0;
	if (__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE))
		return sd_event_exit(p->loop, 0);
	pthread_mutex_lock(&d->lock);
	/* Rebuilt when the backends, their checks or their verdicts changed. */
	digest = state_digest(&d->state);
	started = p->built;
	if (!p->built || p->digest != digest) {
		slots_drop(p); /* before the rebuild closes sockets the sources watch */
		targets_rebuild(d, &d->state, now);
	}
	p->built = 1;
	p->digest = digest;
	/*
	 * Every daemon probes: a new leader judges from its own runs, which a
	 * path of its own that reaches no backend of a VIP held at the store's
	 * verdicts (paths_hold()). It changes none before a hold has passed
	 * since it took the lead from another daemon: a lead that moves does not
	 * move verdicts with it at once.
	 */
	if (started && !p->leader && daemon_leads(d, now) && store_shared(d->o->site.store))
		for (i = 0; i < d->target_count; i++)
			d->targets[i].changed_ns = now;
	p->leader = daemon_leads(d, now);
	probes_run(p, now);
	settle(p, now);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void *probes_main(void *arg)
{
	struct daemon_probes *p = arg;

	sd_event_loop(p->loop);
	return NULL;
}

void probes_poke(struct daemon *d)
{
	__u64 one = 1;

	if (d->probes && write(d->probes->wake, &one, sizeof(one)) < 0) {
		/* Full: a poke is pending anyway. */
	}
}

int probes_start(struct daemon *d)
{
	struct daemon_probes *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->d = d;
	p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	err = p->wake < 0 ? -errno : sd_event_new(&p->loop);
	if (err >= 0)
		err = sd_event_add_io(p->loop, NULL, p->wake, EPOLLIN, on_wake, p);
	if (err >= 0)
		err = sd_event_add_time(p->loop, &p->timer, CLOCK_MONOTONIC, 0, 1000, on_timer, p);
	/* The targets of the state served now, before the thread runs: "ready" counts them. */
	if (err >= 0) {
		pthread_mutex_lock(&d->lock);
		err = targets_rebuild(d, &d->state, daemon_now_ns());
		p->digest = state_digest(&d->state);
		p->built = 1;
		pthread_mutex_unlock(&d->lock);
	}
	if (err >= 0)
		err = -pthread_create(&p->thread, NULL, probes_main, p);
	if (err < 0) {
		sd_event_source_unref(p->timer);
		sd_event_unref(p->loop);
		if (p->wake >= 0)
			close(p->wake);
		free(p);
		return err;
	}
	d->probes = p;
	probes_poke(d);
	return 0;
}

void probes_stop(struct daemon *d)
{
	struct daemon_probes *p = d->probes;
	size_t i;

	if (!p)
		return;
	__atomic_store_n(&p->stopping, 1, __ATOMIC_RELEASE);
	probes_poke(d);
	pthread_join(p->thread, NULL);
	slots_drop(p);
	sd_event_source_unref(p->timer);
	sd_event_unref(p->loop);
	close(p->wake);
	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->target_count; i++)
		health_probe_stop(&d->targets[i]);
	pthread_mutex_unlock(&d->lock);
	free(p);
	d->probes = NULL;
}

/* --- the clients' path ----------------------------------------------------------------------- */

void probe_path_ensure(struct daemon *d, int again)
{
	char why[PROBE_WHY_MAX];
	struct fault f = { 0 };
	struct lb_maps maps;
	const char *ifname;
	struct addr s4 = { 0 }, s6 = { 0 };

	if (!d->attached || !d->state.host.iface_count)
		return;
	ifname = d->state.host.ifaces[0].name;
	/* Made again when asked (a reload): a rule deleted by hand comes back. */
	if (d->path && strcmp(ifname, d->path_iface) == 0 && !again)
		return;
	probe_path_close(d->path);
	d->path = NULL;
	if (site_maps_open(&d->o->site, &maps, &f) == 0) {
		if (probe_path_setup(&maps, ifname, &d->path, why)) {
			dlog("health checks through the clients' path fail until this is fixed: %s",
			     why);
		} else {
			if (strcmp(ifname, d->path_iface))
				dlog("health checks go the clients' path out of %s", ifname);
			snprintf(d->path_iface, sizeof(d->path_iface), "%s", ifname);
		}
		lb_maps_close(&maps);
	}
	host_iface_addr(ifname, LB_FAMILY_IPV4, &s4);
	host_iface_addr(ifname, LB_FAMILY_IPV6, &s6);
	pthread_mutex_lock(&d->lock);
	d->path_ok = d->path != NULL;
	d->source4 = s4;
	d->source6 = s6;
	pthread_mutex_unlock(&d->lock);
	probes_poke(d);
}

void probe_path_drop(struct daemon *d)
{
	if (d->path)
		probe_path_remove();
	probe_path_close(d->path);
	d->path = NULL;
}
