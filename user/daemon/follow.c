// SPDX-License-Identifier: GPL-2.0-only
/*
 * Following the committed state (daemon_impl.h). This host's state file is
 * looked at every tick (its inode, size and mtime); the store is asked when
 * its watch says it changed, else every poll_ms (a store that is the state
 * file: whenever the file changed). What is read is served: the probes'
 * targets, the routes and the metrics follow it. A revision another host's
 * change moved to is not served before this host's kernel holds it: the
 * caller runs the reload path first.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ring.h"
#include "site.h"

/* The tick: this host's file looked at, the store asked when due. */
#define TICK_US 100000
/* A host failing static on a store that reads again is judged again this often. */
#define FOLLOW_RETRY_NS 5000000000ull

/*
 * Each VIP's ring points and its backends' shares, for the metrics. A ring
 * is built only when its fingerprint differs from @prev's (a VIP of 2^20
 * points takes 300 ms to build; most changes leave most rings alone).
 */
static json_t *rings_model(const struct state *s, json_t *prev)
{
	json_t *rings = json_object();
	char spec[ADDR_TEXT_MAX], fp[24];
	size_t i, m;

	for (i = 0; rings && i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];
		json_t *shares, *old;
		struct ring *r = NULL;
		__u32 *ids = NULL;
		double *member;
		size_t points = 0;
		uint64_t fingerprint = 0;

		vip_format(&v->spec, spec);
		if (state_vip_summary(v, &points, &fingerprint))
			continue;
		snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)fingerprint);
		old = json_object_get(prev, spec);
		if (old && json_string_value(json_object_get(old, "fingerprint")) &&
		    strcmp(json_string_value(json_object_get(old, "fingerprint")), fp) == 0) {
			json_object_set(rings, spec, old);
			continue;
		}
		shares = json_object();
		if (points && state_vip_ring(v, &r, &ids) == 0) {
			member = calloc(ring_member_count(r) + 1, sizeof(double));
			if (member) {
				ring_shares(r, member);
				for (m = 0; m < ring_member_count(r); m++)
					json_object_set_new(shares, ring_member_name(r, (uint32_t)m),
							    json_real(member[m]));
			}
			free(member);
			ring_free(r);
			free(ids);
		}
		json_object_set_new(rings, spec, json_pack("{s:I, s:s, s:o}", "points",
							   (json_int_t)points, "fingerprint", fp,
							   "shares", shares));
	}
	return rings;
}

/* Say when a VIP starts or stops failing open. */
static void fail_open_log(const struct state *before, const struct state *after)
{
	char spec[ADDR_TEXT_MAX], names[256];
	size_t i, j, n;

	for (i = 0; i < after->fleet.vip_count; i++) {
		const struct state_vip *v = &after->fleet.vips[i];
		const struct state_vip *was = before ? state_vip_find(before, &v->spec) : NULL;
		int now_open = state_vip_fails_open(v), was_open = was && state_vip_fails_open(was);

		if (now_open == was_open)
			continue;
		vip_format(&v->spec, spec);
		names[0] = '\0';
		for (j = 0, n = 0; j < v->backend_count; j++)
			if (v->backends[j].held && n + strlen(v->backends[j].name) + 3 < sizeof(names))
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
						      v->backends[j].name);
		if (now_open)
			dlog("VIP %s fails open: every checked backend is down; it keeps serving its "
			     "last healthy set (%s)", spec, names);
		else
			dlog("VIP %s no longer fails open: a backend is up again", spec);
	}
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Serve @s (taken over) as the committed state. */
static void serve(struct daemon *d, struct state *s, const struct stat *st, int force)
{
	json_t *rings = rings_model(s, d->rings); /* d->rings changes only on this loop */
	struct state old;

	pthread_mutex_lock(&d->lock);
	old = d->state;
	d->state = *s;
	d->attached = site_maps_pinned(&d->o->site) == 1;
	json_decref(d->rings);
	d->rings = rings;
	pthread_mutex_unlock(&d->lock);
	state_init(s);
	d->follow.seen = *st;
	probes_poke(d);
	if (old.fleet.generation != d->state.fleet.generation || force)
		fail_open_log(&old, &d->state);
	state_free(&old);
	probe_path_ensure(d, 0);
	routes_update(d);
}

/*
 * The store failed (@why): serve this host's copy of what it last
 * followed, which is what its kernel holds (a session wrote it when the
 * kernel followed): at the start, with nothing served yet, and whenever
 * this host's own half changed (host drain acts at once without a store).
 */
static int follow_copy(struct daemon *d, const struct stat *file, const struct fault *why,
		       int force)
{
	struct fault f = { 0 };
	struct state s;
	int lock = site_lock(&d->o->site, 0, &f), err;

	err = lock < 0 ? lock : store_copy_read(d->o->site.store, &s, &f);
	if (lock >= 0)
		close(lock);
	if (!d->follow.store_down)
		dlog("%s; %s", why->why, err ? "nothing followed to serve yet" :
		     "serving this host's copy of the state it last followed");
	d->follow.store_down = 1;
	if (err)
		return why->err;
	d->follow.served = 1;
	d->follow.revision = s.host.member.revision;
	serve(d, &s, file, force);
	return why->err;
}

/*
 * This host's half of its file changed (host drain, undrain): served at
 * once, before the store is asked, so a drain never waits on a slow or
 * silent store. The fleet's half stays what it is until the store says.
 */
static void host_half_serve(struct daemon *d)
{
	struct fault f = { 0 };
	struct state local;

	if (store_host_read(d->o->site.state_path, &local, &f))
		return;
	pthread_mutex_lock(&d->lock);
	state_host_free(&d->state.host);
	d->state.host = local.host;
	state_host_init(&local.host);
	pthread_mutex_unlock(&d->lock);
	state_free(&local);
	routes_update(d);
}

/*
 * What a read of the committed state found (@err, @s, @revision, @f),
 * served or not: this host's copy when the store fails, FOLLOW_MOVED when
 * the store moved and the kernel must follow first.
 */
static int follow_apply(struct daemon *d, unsigned int how, int err, struct state *s,
			__u64 revision, struct fault *f, const struct stat *file, int file_changed)
{
	int force = how & FOLLOW_FORCE;
	struct store *st = d->o->site.store;

	/* The store fails: what this host serves is its copy, whatever said it first. */
	if (err && f->class == FAULT_STORE && st->ops->shared && !d->fail_static) {
		pthread_mutex_lock(&d->lock);
		d->fail_static = 1;
		pthread_mutex_unlock(&d->lock);
		snprintf(d->follow.why, sizeof(d->follow.why), "%s", f->why);
	}
	if (err && f->class == FAULT_STORE && (!d->follow.served || file_changed))
		return follow_copy(d, file, f, force);
	if (err) {
		if (!d->follow.store_down)
			dlog("%s%s; serving generation %llu as before",
			     st->ops->shared ? "" : "cannot read the state: ", f->why,
			     (unsigned long long)d->state.fleet.generation);
		d->follow.store_down = st->ops->shared;
		/* A file that does not read is not read again until it changes. */
		if (!st->ops->shared)
			d->follow.seen = *file;
		return err;
	}
	if (d->follow.store_down)
		dlog("the store answers again (revision %llu)", (unsigned long long)revision);
	d->follow.store_down = 0;
	d->follow.served = 1;
	/*
	 * Readable again while this host serves its copy: the reload path judges
	 * it (a key digest still wrong keeps it static), at most every
	 * FOLLOW_RETRY_NS when the revision did not move.
	 */
	if (d->fail_static && revision == d->follow.revision) {
		if (daemon_now_ns() < d->follow.retry_ns) {
			state_free(s);
			return 0;
		}
		d->follow.retry_ns = daemon_now_ns() + FOLLOW_RETRY_NS;
	}
	if (!force && !file_changed && revision == d->follow.revision && !d->fail_static) {
		state_free(s);
		return 0;
	}
	/*
	 * The store moved (another host's change, or a verdict this daemon
	 * committed): the kernel here follows first, on the reload path. After
	 * it, the revision recorded is the one its reconcile read, so a change
	 * that landed in between is followed at the next look.
	 */
	if (!(how & FOLLOW_SYNCED) && (revision != d->follow.revision || d->fail_static)) {
		state_free(s);
		return FOLLOW_MOVED;
	}
	d->follow.revision = how & FOLLOW_SYNCED && d->follow.synced ? d->follow.synced : revision;
	serve(d, s, file, force);
	return 0;
}

/*
 * The reader thread: a shared store's reads for the tick and the watch,
 * off the main loop, so a slow or silent store never holds it (a drain, the
 * routes, the watchdog). One read at a time; its result goes back through
 * an eventfd (on_read_done()).
 */
static void *reader_main(void *arg)
{
	struct daemon *d = arg;
	struct daemon_reader *r = &d->follow.reader;
	__u64 one;

	while (read(r->wake, &one, sizeof(one)) == sizeof(one) || errno == EINTR) {
		struct state s;
		struct fault f = { 0 };
		__u64 revision = 0;
		int err;

		if (__atomic_load_n(&r->stopping, __ATOMIC_ACQUIRE))
			break;
		err = site_state_read(&d->o->site, &s, &revision, &f);
		pthread_mutex_lock(&r->lock);
		state_free(&r->s);
		r->s = s;
		r->err = err;
		r->f = f;
		r->revision = revision;
		r->have = 1;
		pthread_mutex_unlock(&r->lock);
		one = 1;
		if (write(r->done, &one, sizeof(one)) < 0) {
			/* Full: the main loop has a wake-up pending anyway. */
		}
	}
	return NULL;
}

static int on_read_done(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	struct daemon_reader *r = &d->follow.reader;
	struct state s;
	struct fault f;
	__u64 events, revision;
	int err, have;

	(void)src;
	(void)revents;
	if (read(fd, &events, sizeof(events)) != sizeof(events))
		return 0;
	pthread_mutex_lock(&r->lock);
	have = r->have;
	s = r->s;
	f = r->f;
	err = r->err;
	revision = r->revision;
	state_init(&r->s);
	r->have = 0;
	r->busy = 0;
	pthread_mutex_unlock(&r->lock);
	if (!have)
		return 0;
	if (follow_apply(d, 0, err, &s, revision, &f, &r->file, r->file_changed) == FOLLOW_MOVED)
		daemon_reload(d, "store change", 0);
	return 0;
}

/* Hand a read to the reader thread, unless one is under way. */
static void reader_ask(struct daemon *d, const struct stat *file, int file_changed)
{
	struct daemon_reader *r = &d->follow.reader;
	__u64 one = 1;

	pthread_mutex_lock(&r->lock);
	if (r->busy) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	r->busy = 1;
	r->file = *file;
	r->file_changed = file_changed;
	pthread_mutex_unlock(&r->lock);
	if (write(r->wake, &one, sizeof(one)) < 0) {
		/* Full: the thread has a wake-up pending anyway. */
	}
}

int follow_read(struct daemon *d, unsigned int how)
{
	int force = how & FOLLOW_FORCE;
	const struct site *site = &d->o->site;
	struct store *st = site->store;
	struct fault f = { 0 };
	struct stat file = { 0 };
	__u64 now = daemon_now_ns(), revision = 0;
	struct state s;
	int err, file_changed, lock;

	if (stat(site->state_path, &file) && errno != ENOENT)
		memset(&file, 0, sizeof(file));
	file_changed = !same_file(&file, &d->follow.seen);
	/* A store that is the file is read when the file changed; another when it is due. */
	if (!force && (st->ops->poll_ms ? now < d->follow.next_ns && !file_changed : !file_changed))
		return 0;
	d->follow.next_ns = now + (__u64)st->ops->poll_ms * 1000000;
	if (st->ops->shared && file_changed && d->follow.served)
		host_half_serve(d);
	/*
	 * The tick's and the watch's reads of a shared store, and every read
	 * while it fails: on the reader thread (what is served meanwhile is
	 * this host's copy, which the kernel holds).
	 */
	if (st->ops->shared && d->follow.reader.running && (!force || d->follow.store_down)) {
		reader_ask(d, &file, file_changed);
		return 0;
	}
	/*
	 * A store of this host alone is its file, read under the shared lock, as
	 * every question does; a shared store is read without it, so a command
	 * holding the lock never delays the lead's renewal or the watchdog.
	 */
	lock = st->ops->shared ? 0 : site_lock(site, 0, &f);
	err = lock < 0 ? lock : site_state_read(site, &s, &revision, &f);
	if (lock > 0)
		close(lock);
	return follow_apply(d, how, err, &s, revision, &f, &file, file_changed);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;

	(void)s;
	(void)usec;
	if (follow_read(d, 0) == FOLLOW_MOVED)
		daemon_reload(d, "store change", 0);
	return 0;
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	__u64 events;

	(void)s;
	(void)revents;
	/* The store changed (or the watch began): ask it now. */
	if (read(fd, &events, sizeof(events)) == sizeof(events))
		d->follow.next_ns = 0;
	return on_tick(NULL, 0, d);
}

static int reader_start(struct daemon *d)
{
	struct daemon_reader *r = &d->follow.reader;
	int err;

	pthread_mutex_init(&r->lock, NULL);
	state_init(&r->s);
	r->wake = eventfd(0, EFD_CLOEXEC);
	r->done = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake < 0 || r->done < 0)
		return -errno;
	err = sd_event_add_io(d->loop, NULL, r->done, EPOLLIN, on_read_done, d);
	if (err < 0)
		return err;
	if (pthread_create(&r->thread, NULL, reader_main, d))
		return -EAGAIN;
	r->running = 1;
	return 0;
}

void follow_stop(struct daemon *d)
{
	struct daemon_reader *r = &d->follow.reader;
	__u64 one = 1;

	if (r->running) {
		__atomic_store_n(&r->stopping, 1, __ATOMIC_RELEASE);
		if (write(r->wake, &one, sizeof(one)) < 0) {
			/* Full: the thread wakes anyway. */
		}
		pthread_join(r->thread, NULL);
		r->running = 0;
	}
	if (r->wake > 0)
		close(r->wake);
	if (r->done > 0)
		close(r->done);
	r->wake = r->done = -1;
	state_free(&r->s);
}

int follow_start(struct daemon *d)
{
	struct store *st = d->o->site.store;
	struct fault f = { 0 };
	int err;

	err = daemon_every(d->loop, TICK_US, TICK_US, on_tick, d);
	if (err)
		return err;
	if (!st->ops->poll_ms)
		return 0;
	if (st->ops->shared && (err = reader_start(d)))
		return err;
	d->follow.watch_fd = store_watch(st, &f);
	if (d->follow.watch_fd < 0) {
		dlog("cannot watch the store (%s); asking it every %u ms", f.why, st->ops->poll_ms);
		return 0;
	}
	return sd_event_add_io(d->loop, NULL, d->follow.watch_fd, EPOLLIN, on_watch, d);
}
