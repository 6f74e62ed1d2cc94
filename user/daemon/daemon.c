// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb daemon (daemon.h): one thread polls the health checks' sockets and
 * a signalfd, reads the state file when it changes, repairs the kernel when
 * it drifts, and commits health verdicts with change_run(); libmicrohttpd's
 * thread renders /metrics from a snapshot taken under the daemon's mutex.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <curl/curl.h>
#include <systemd/sd-daemon.h>

#include "audit.h"
#include "kernel.h"
#include "store.h"
#include "etcd.h"
#include "health.h"
#include "host.h"
#include "metrics.h"
#include "probe.h"
#include "ring.h"
#include "stats.h"

/* The loop wakes at least this often: state file, verdicts, watchdog. */
#define TICK_MS 100
/* Differences between kernel and state logged one by one, at most. */
#define REPORT_LINES_MAX 10
/*
 * With a store, one daemon of the fleet runs the health checks: the one
 * holding PREFIX/health-leader, a key that lives with its etcd lease of
 * LEASE_TTL_S seconds, renewed every LEASE_RENEW_MS. When it dies, the key
 * goes with its lease and another daemon takes it within LEASE_TTL_S.
 */
#define LEASE_TTL_S 3
#define LEASE_RENEW_MS 1000
/*
 * How often a store's revision is asked (a file is looked at every tick):
 * a watch on PREFIX/state makes the daemon ask at once when it changes; the
 * poll is what remains when the watch stream is down.
 */
#define STORE_POLL_MS 500
/* Live flows in the metrics: a packet within this long, as `ringlb stats`. */
#define METRICS_IDLE_S 300

struct daemon {
	const struct daemon_opts *o;
	pthread_mutex_t lock; /* what the metrics thread reads: all below */
	struct state state;
	struct stat seen;
	int attached;
	struct probe_path *probe;
	char probe_iface[IF_NAMESIZE];
	struct addr source4;
	struct addr source6;
	struct health_target *targets;
	size_t target_count;
	json_t *rings;
	json_t *changes;
	__u64 latency[METRICS_LATENCY_BUCKETS];
	__u64 latency_over;
	double latency_sum;
	__u64 repairs;
	off_t log_offset;
	int reported;
	__u64 store_revision;
	__u64 store_next;
	int store_down;
	int leader;
	__u64 lease;
	__u64 lease_next;
	char identity[128];
	char holder[128];
	int secret_bad;
	int kernel_bad;
	char *announced;
	int bird_failing;
	__u64 bird_next;
	int watch_fd;
	pthread_t watcher;
	int watching;
	volatile int stopping;
};

extern char **environ;

static void dlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void dlog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ringlb daemon: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(ap);
}

/* --- the kernel against the state ------------------------------------------------------- */

static void report_line(void *arg, const char *line)
{
	struct daemon *d = arg;

	if (d->reported++ < REPORT_LINES_MAX)
		dlog("the kernel differs: %s", line);
}

/*
 * Make the kernel hold the committed state: what session_begin() repairs
 * (a change cut short, programs on the wrong key), then a full comparison,
 * and a full sync when anything differs (a map written behind ringlb's back).
 */
static int reconcile(struct daemon *d, const char *when)
{
	struct session ss = { .flags = 0 };
	char why[FAULT_WHY_MAX] = "";
	int err, diffs;

	err = session_begin(&d->o->site, &ss, why);
	if (err) {
		dlog("%s: %s", when, why);
		/* A store that does not answer changes nothing here: the kernel keeps serving. */
		if (err == -EKEYREJECTED)
			d->secret_bad = 1;
		else if (!d->o->site.store || d->store_revision)
			d->kernel_bad = err != -ECONNREFUSED && err != -EHOSTUNREACH &&
					err != -ETIMEDOUT && !strstr(why, "from the store");
		goto out;
	}
	d->secret_bad = 0;
	d->kernel_bad = 0;
	if (ss.note[0]) {
		dlog("%s: %s", when, ss.note);
		d->repairs++;
	}
	if (!ss.have_maps)
		goto out;
	d->reported = 0;
	diffs = kernel_verify(&ss.maps, &ss.applied, report_line, d);
	if (diffs < 0) {
		err = diffs;
		dlog("%s: cannot compare the kernel with the state: %s", when, strerror(-err));
	} else if (diffs > 0) {
		err = kernel_sync(&ss.maps, NULL, &ss.applied, why) ?:
		      kernel_record(&ss.maps, &ss.applied, 0);
		if (err) {
			dlog("%s: the kernel differs from the committed state in %d places; repairing "
			     "it failed: %s", when, diffs, why[0] ? why : strerror(-err));
			d->kernel_bad = 1;
		} else {
			dlog("%s: the kernel differed from the committed state in %d places; repaired "
			     "to generation %llu", when, diffs,
			     (unsigned long long)ss.applied.generation);
			d->repairs++;
		}
	}
out:
	session_end(&ss);
	return err;
}

/* --- the committed state ------------------------------------------------------------------ */

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

	for (i = 0; rings && i < s->vip_count; i++) {
		const struct state_vip *v = &s->vips[i];
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
 * The targets of @s: every active backend with a check. One the daemon
 * already checks (same VIP, name, cookie) keeps its probe and its runs;
 * its verdict is always the state's.
 */
static int targets_rebuild(struct daemon *d, const struct state *s, __u64 now)
{
	struct health_target *ts = NULL, *old;
	size_t n = 0, cap = 0, i, j;

	for (i = 0; i < s->vip_count; i++)
		for (j = 0; j < s->vips[i].backend_count; j++) {
			const struct state_vip *v = &s->vips[i];
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

/* Say when a VIP starts or stops failing open. */
static void fail_open_log(const struct state *before, const struct state *after)
{
	char spec[ADDR_TEXT_MAX], names[256];
	size_t i, j, n;

	for (i = 0; i < after->vip_count; i++) {
		const struct state_vip *v = &after->vips[i];
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

/*
 * The probe path on the first attached interface, (re)made when that
 * changes or @again. Without it, checks through the clients' path fail
 * (probes_run()): a marked packet following the host's own routes could
 * reach the VIP through the data path and pass for the wrong backend.
 */
static void probe_path_ensure(struct daemon *d, int again)
{
	char why[PROBE_WHY_MAX];
	struct lb_maps maps;
	const char *ifname;

	if (!d->attached || !d->state.iface_count)
		return;
	ifname = d->state.ifaces[0].name;
	/* Made again when asked (a reconcile): a rule deleted by hand comes back. */
	if (d->probe && strcmp(ifname, d->probe_iface) == 0 && !again)
		return;
	probe_path_close(d->probe);
	d->probe = NULL;
	if (site_maps_open(&d->o->site, &maps, why))
		return;
	if (probe_path_setup(&maps, ifname, &d->probe, why)) {
		dlog("health checks through the clients' path fail until this is fixed: %s", why);
	} else {
		if (strcmp(ifname, d->probe_iface))
			dlog("health checks go the clients' path out of %s", ifname);
		snprintf(d->probe_iface, sizeof(d->probe_iface), "%s", ifname);
	}
	lb_maps_close(&maps);
	memset(&d->source4, 0, sizeof(d->source4));
	memset(&d->source6, 0, sizeof(d->source6));
	host_iface_addr(ifname, LB_FAMILY_IPV4, &d->source4);
	host_iface_addr(ifname, LB_FAMILY_IPV6, &d->source6);
}

/* Read the state file when it changed (or when @force), and everything that follows from it. */
static int refresh(struct daemon *d, int force, __u64 now)
{
	char why[FAULT_WHY_MAX] = "";
	struct stat st = { 0 };
	struct state s, old;
	__u64 revision = 0;
	json_t *rings;
	int err;

	if (d->o->site.store) {
		/* A store: asked on its watch's events, else every STORE_POLL_MS. */
		if (!force && now < d->store_next)
			return 0;
		d->store_next = now + STORE_POLL_MS * 1000000ull;
		err = site_state_read_rev(&d->o->site, &s, &revision, why);
		if (err) {
			if (!d->store_down)
				dlog("%s; serving generation %llu as before", why,
				     (unsigned long long)d->state.generation);
			d->store_down = 1;
			return err;
		}
		if (d->store_down)
			dlog("the store answers again (revision %llu)", (unsigned long long)revision);
		d->store_down = 0;
		/* This host's own facts (drained, interfaces) change its file, not the store. */
		if (stat(d->o->site.state_path, &st) && errno != ENOENT)
			memset(&st, 0, sizeof(st));
		if (!force && revision == d->store_revision && st.st_ino == d->seen.st_ino &&
		    st.st_size == d->seen.st_size &&
		    st.st_mtim.tv_sec == d->seen.st_mtim.tv_sec &&
		    st.st_mtim.tv_nsec == d->seen.st_mtim.tv_nsec) {
			state_free(&s);
			return 0;
		}
		/*
		 * Another host's change: the kernel here follows (the session repairs to
		 * what it reads: this revision or a newer one). The revision kept is the
		 * one read before it, so a change that landed meanwhile is followed at the
		 * next look even if its watch event came before this returned.
		 */
		if (revision != d->store_revision && d->store_revision) {
			__u64 newer;

			state_free(&s);
			reconcile(d, "store change");
			err = site_state_read_rev(&d->o->site, &s, &newer, why);
			if (err)
				return err;
		}
		d->store_revision = revision;
	} else {
		if (stat(d->o->site.state_path, &st) && errno != ENOENT)
			return -errno;
		if (!force && st.st_ino == d->seen.st_ino && st.st_size == d->seen.st_size &&
		    st.st_mtim.tv_sec == d->seen.st_mtim.tv_sec &&
		    st.st_mtim.tv_nsec == d->seen.st_mtim.tv_nsec)
			return 0;
		err = site_state_read_shared(&d->o->site, &s, why);
		if (err) {
			dlog("cannot read the state: %s; serving generation %llu as before", why,
			     (unsigned long long)d->state.generation);
			d->seen = st;
			return err;
		}
	}
	/* d->rings changes only on this thread: read without the lock. */
	rings = rings_model(&s, d->rings);
	pthread_mutex_lock(&d->lock);
	old = d->state;
	d->state = s;
	d->seen = st;
	d->attached = site_maps_pinned(&d->o->site) == 1;
	err = targets_rebuild(d, &s, now);
	json_decref(d->rings);
	d->rings = rings;
	pthread_mutex_unlock(&d->lock);
	if (old.generation != s.generation || force)
		fail_open_log(&old, &s);
	state_free(&old);
	probe_path_ensure(d, 0);
	return err;
}

/* --- the ring transition log ---------------------------------------------------------------- */

/* Count one transition line of rings.log for the metrics. */
static void transition_count(struct daemon *d, const char *text)
{
	json_t *line = json_loads(text, 0, NULL), *c;
	const char *vip = json_string_value(json_object_get(line, "vip"));
	const char *outcome = json_string_value(json_object_get(line, "outcome"));
	double seconds = json_number_value(json_object_get(line, "duration_seconds"));
	int ok = outcome && strcmp(outcome, "ok") == 0;
	size_t k;

	if (!vip || !outcome) {
		json_decref(line);
		return;
	}
	pthread_mutex_lock(&d->lock);
	c = json_object_get(d->changes, vip);
	if (!c) {
		c = json_pack("{s:I, s:I}", "ok", (json_int_t)0, "failed", (json_int_t)0);
		json_object_set_new(d->changes, vip, c);
	}
	json_object_set_new(c, ok ? "ok" : "failed",
			    json_integer(json_integer_value(json_object_get(c, ok ? "ok" : "failed")) + 1));
	for (k = 0; k < METRICS_LATENCY_BUCKETS && seconds > metrics_latency_bounds[k]; k++)
		;
	if (k < METRICS_LATENCY_BUCKETS)
		d->latency[k]++;
	else
		d->latency_over++;
	d->latency_sum += seconds;
	pthread_mutex_unlock(&d->lock);
	json_decref(line);
}

/*
 * The lines rings.log gained since the last look, whoever wrote them (the
 * CLI or this daemon): echoed to the journal and counted. @skip: only note
 * where the file ends (at start: what came before is history).
 */
static void transitions_follow(struct daemon *d, int skip)
{
	char path[PATH_MAX], *buf, *line, *nl;
	struct stat st;
	ssize_t got;
	int fd;

	site_path(&d->o->site, "rings.log", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size == d->log_offset || skip) {
		if (!fstat(fd, &st))
			d->log_offset = skip ? st.st_size : d->log_offset;
		close(fd);
		return;
	}
	if (st.st_size < d->log_offset) /* replaced: read it from the start */
		d->log_offset = 0;
	buf = malloc((size_t)(st.st_size - d->log_offset) + 1);
	got = buf ? pread(fd, buf, (size_t)(st.st_size - d->log_offset), d->log_offset) : -1;
	close(fd);
	if (got <= 0) {
		free(buf);
		return;
	}
	buf[got] = '\0';
	for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		dlog("ring transition: %s", line);
		transition_count(d, line);
	}
	d->log_offset += line - buf; /* a line still being written is read next time */
	free(buf);
}

/* --- health verdicts ------------------------------------------------------------------------ */

struct verdict_args {
	struct vip_spec vip;
	char name[NAME_MAX_LEN + 1];
	__u64 cookie;
	int up;
};

/* A verdict as a change: the backend's health in the state, nothing else. */
static int verdict_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			 char why[FAULT_WHY_MAX])
{
	const struct verdict_args *a = args;
	struct state_vip *v = state_vip_find(want, &a->vip);
	struct state_backend *b = v ? state_backend_find(v, a->name) : NULL;
	char spec[ADDR_TEXT_MAX];

	(void)ctx;
	vip_format(&a->vip, spec);
	if (!b || b->cookie != a->cookie || b->retired) {
		snprintf(why, FAULT_WHY_MAX, "backend '%s' of VIP %s is gone", a->name, spec);
		return -ENOENT;
	}
	b->down = !a->up;
	return 0;
}

/* Commit what target @t's checks say. */
static void verdict_commit(struct daemon *d, const struct health_target *t, __u64 now)
{
	struct verdict_args a = { .vip = t->vip, .cookie = t->cookie, .up = t->seen_up };
	char spec[ADDR_TEXT_MAX], cause[384], *words[5];
	struct change_outcome out;
	struct health_target *still;
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
	audit_write(&d->o->site, words, 5, !err, out.why);
	if (err)
		dlog("%s: not committed: %s", cause, out.why);
	else
		dlog("%s", cause);
	pthread_mutex_lock(&d->lock);
	still = target_find(d->targets, d->target_count, &a.vip, a.name, a.cookie);
	/* Committed or not, the next try waits a hold: no change loop on a failing commit. */
	if (still)
		still->changed_ns = now;
	pthread_mutex_unlock(&d->lock);
	refresh(d, 1, now);
}

/* --- metrics ---------------------------------------------------------------------------------- */

static char *metrics_page(void *arg, size_t *len)
{
	struct daemon *d = arg;
	struct metrics_input in = { 0 };
	struct health_target *targets = NULL;
	char why[FAULT_WHY_MAX];
	struct lb_maps maps;
	struct state s;
	char *page = NULL;
	FILE *f;

	state_init(&s);
	pthread_mutex_lock(&d->lock);
	if (state_clone(&s, &d->state) == 0 && d->target_count &&
	    (targets = malloc(d->target_count * sizeof(*targets))))
		memcpy(targets, d->targets, d->target_count * sizeof(*targets));
	in.target_count = targets ? d->target_count : 0;
	in.rings = json_deep_copy(d->rings);
	in.changes = json_deep_copy(d->changes);
	memcpy(in.latency, d->latency, sizeof(in.latency));
	in.latency_over = d->latency_over;
	in.latency_sum = d->latency_sum;
	in.repairs = d->repairs;
	in.attached = d->attached;
	pthread_mutex_unlock(&d->lock);
	in.state = &s;
	in.targets = targets;
	/* The counters of the state just copied, read as `ringlb stats` reads them. */
	if (in.attached && site_maps_open(&d->o->site, &maps, why) == 0) {
		kernel_stats(&maps, &s, METRICS_IDLE_S, &in.stats);
		lb_maps_close(&maps);
	}
	f = open_memstream(&page, len);
	if (f) {
		metrics_render(f, &in);
		fclose(f);
	}
	json_decref(in.stats);
	json_decref(in.rings);
	json_decref(in.changes);
	free(targets);
	state_free(&s);
	return page;
}

/* --- following the store ---------------------------------------------------------------------------- */

static void watch_event(void *arg)
{
	struct daemon *d = arg;
	__u64 one = 1;

	if (write(d->watch_fd, &one, sizeof(one)) < 0) {
		/* The counter is full: the main loop has a wake-up pending anyway. */
	}
}

static int watch_stop(void *arg)
{
	return ((struct daemon *)arg)->stopping;
}

/* The watch thread: an etcd watch on PREFIX/state, opened again a second after it ends. */
static void *watch_main(void *arg)
{
	struct daemon *d = arg;
	char why[ETCD_WHY_MAX] = "";
	struct etcd_spec spec;
	const char *problem = NULL;

	if (etcd_spec_parse(d->o->site.store, &spec, &problem))
		return NULL;
	while (!d->stopping) {
		etcd_watch(&spec, "state", watch_event, watch_stop, d, why);
		for (int i = 0; i < 10 && !d->stopping; i++)
			usleep(100000);
	}
	return NULL;
}

/* --- one health verdict for the fleet ------------------------------------------------------- */

/* Renew the lease, or campaign for the checks; log when who runs them changes. */
static void leadership(struct daemon *d, __u64 now)
{
	char ewhy[ETCD_WHY_MAX] = "", *holder = NULL;
	struct etcd_spec spec;
	const char *problem = NULL;
	int was = d->leader;

	if (!d->o->site.store) {
		d->leader = 1;
		return;
	}
	if (now < d->lease_next)
		return;
	d->lease_next = now + LEASE_RENEW_MS * 1000000ull;
	if (etcd_spec_parse(d->o->site.store, &spec, &problem))
		return;
	/* Every daemon keeps a lease alive: a follower's is ready when the leader's goes. */
	if (d->lease && etcd_lease_keepalive(&spec, d->lease, ewhy)) {
		d->leader = 0;
		d->lease = 0;
	}
	if (!d->leader) {
		if (!d->lease && etcd_lease_grant(&spec, LEASE_TTL_S, &d->lease, ewhy))
			d->lease = 0;
		if (d->lease && etcd_campaign(&spec, "health-leader", d->identity, d->lease, &holder,
					      ewhy) == 0) {
			d->leader = strcmp(holder, d->identity) == 0;
			if (strcmp(holder, d->holder))
				dlog(d->leader ? "this daemon (%s) runs the fleet's health checks" :
						 "the fleet's health checks are run by %s",
				     holder);
			snprintf(d->holder, sizeof(d->holder), "%s", holder);
		}
		free(holder);
	}
	if (was && !d->leader) {
		dlog("lost the health checks' lease (%s); another daemon takes them",
		     ewhy[0] ? ewhy : "expired");
		d->holder[0] = '\0';
	}
	if (was != d->leader) {
		size_t i;

		/* A follower neither probes nor judges; a new leader starts from the store's verdicts. */
		pthread_mutex_lock(&d->lock);
		for (i = 0; i < d->target_count; i++) {
			health_probe_stop(&d->targets[i]);
			d->targets[i].seen_up = d->targets[i].verdict_up;
			d->targets[i].ok_run = d->targets[i].fail_run = 0;
		}
		pthread_mutex_unlock(&d->lock);
	}
}

/* --- routes: whether this host announces the VIPs ---------------------------------------------- */

/* Why this host should not announce, or NULL when it should. */
static const char *withdraw_reason(const struct daemon *d)
{
	if (!d->attached || !d->state.iface_count)
		return "no data path attached";
	if (d->state.host_drained)
		return "the host is drained (ringlb host drain)";
	if (d->secret_bad)
		return "its flow hash key is not the fleet's";
	if (d->kernel_bad)
		return "its kernel does not serve the committed state";
	return NULL;
}

/* Run birdc configure: bird reads the fragment again. */
static int bird_configure(const struct daemon *d)
{
	char *argv[] = { "birdc", "-s", (char *)d->o->birdc_socket, "configure", NULL };
	int status = 0;
	pid_t pid;

	if (!d->o->birdc_socket) {
		argv[1] = "configure";
		argv[2] = NULL;
	}
	if (posix_spawnp(&pid, "birdc", NULL, NULL, argv, environ))
		return -errno;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/*
 * Write the routes this host announces (every VIP, or none) where bird
 * reads them, and have bird read them when they changed.
 */
static void announce(struct daemon *d)
{
	const char *reason = withdraw_reason(d);
	char *text = NULL, spec[ADDR_TEXT_MAX], tmp[PATH_MAX];
	size_t len = 0, i, k, n = 0;
	FILE *f;

	if (!d->o->bgp_routes || health_now_ns() < d->bird_next)
		return;
	f = open_memstream(&text, &len);
	if (!f)
		return;
	fprintf(f, "# Written by ringlb daemon: the VIPs this host announces%s%s%s.\n",
		reason ? " (none: " : "", reason ? reason : "", reason ? ")" : "");
	for (k = 0; k < 2; k++) {
		int fam = k ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4;

		fprintf(f, "protocol static ringlb_vips%d {\n\tipv%d;\n", fam == LB_FAMILY_IPV4 ? 4 : 6,
			fam == LB_FAMILY_IPV4 ? 4 : 6);
		for (i = 0; !reason && i < d->state.vip_count; i++) {
			const struct state_vip *v = &d->state.vips[i];
			size_t j;

			if (v->spec.addr.family != fam)
				continue;
			/* One route per address, whatever its ports and protocols. */
			for (j = 0; j < i; j++)
				if (addr_equal(&d->state.vips[j].spec.addr, &v->spec.addr))
					break;
			if (j < i)
				continue;
			addr_format(&v->spec.addr, spec);
			fprintf(f, "\troute %s/%d blackhole;\n", spec, fam == LB_FAMILY_IPV4 ? 32 : 128);
			n++;
		}
		fputs("}\n", f);
	}
	fclose(f);
	if (d->announced && strcmp(d->announced, text) == 0) {
		free(text);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", d->o->bgp_routes);
	f = fopen(tmp, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, d->o->bgp_routes)) {
		dlog("cannot write %s: %s", d->o->bgp_routes, strerror(errno));
		free(text);
		return;
	}
	if (bird_configure(d)) {
		if (!d->bird_failing)
			dlog("bird did not take %s (birdc configure failed); trying every 2 s",
			     d->o->bgp_routes);
		d->bird_failing = 1;
		d->bird_next = health_now_ns() + 2000000000ull;
		free(text);
		return;
	}
	d->bird_failing = 0;
	if (reason)
		dlog("routes withdrawn: %s", reason);
	else
		dlog("routes announced: %zu VIP addresses", n);
	free(d->announced);
	d->announced = text;
}

/* --- the loop --------------------------------------------------------------------------------- */

/* Start due probes, go on with those under way, after poll() said @fds. */
static void probes_run(struct daemon *d, const struct pollfd *fds, size_t nfds, __u64 now)
{
	size_t i, k;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->target_count; i++) {
		struct health_target *t = &d->targets[i];
		short revents = 0;

		for (k = 0; k < nfds; k++)
			if (fds[k].fd == t->fd && t->fd >= 0)
				revents = fds[k].revents;
		health_probe_step(t, revents, now);
		if (t->phase != HEALTH_IDLE || now < t->next_ns || !d->attached || !d->leader)
			continue;
		if (!t->check.direct && !d->probe) {
			t->next_ns = now + (__u64)t->check.interval_ms * 1000000ull;
			health_result(t, 0, "the clients' path for checks is not set up", now);
			continue;
		}
		health_probe_start(t, t->vip.addr.family == LB_FAMILY_IPV4 ? &d->source4 :
									      &d->source6,
				   now);
	}
	pthread_mutex_unlock(&d->lock);
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

static int signals_open(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return -EINVAL;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int daemon_run(const struct daemon_opts *o, char why[FAULT_WHY_MAX])
{
	struct daemon d = { .o = o, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct metrics_server *metrics = NULL;
	char mwhy[METRICS_WHY_MAX];
	__u64 now, next_watchdog = 0, next_verify, next_look = 0;
	uint64_t watchdog_us = 0;
	struct pollfd *fds = NULL;
	int sfd, lock, err, stop = 0;

	state_init(&d.state);
	err = site_privileged(why);
	if (err)
		return err;
	lock = site_daemon_lock(&o->site, why);
	if (lock < 0)
		return lock;
	d.changes = json_object();
	/* libcurl's global state, before any thread (the watch, libmicrohttpd's) exists. */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	sfd = signals_open();
	if (sfd < 0) {
		snprintf(why, FAULT_WHY_MAX, "cannot take signals: %s", strerror(errno));
		err = -errno;
		json_decref(d.changes);
		close(lock);
		return err;
	}
	/* Bound first: a port in use is the one line the caller sees, nothing else done. */
	if (!o->metrics || strcmp(o->metrics, "none")) {
		err = metrics_start(o->metrics ? o->metrics : METRICS_ADDR_DEFAULT, metrics_page, &d,
				    &metrics, mwhy);
		if (err) {
			snprintf(why, FAULT_WHY_MAX, "%s", mwhy);
			goto out;
		}
	}
	{
		char host[64] = "?";

		gethostname(host, sizeof(host) - 1);
		snprintf(d.identity, sizeof(d.identity), "%s/%d", host, (int)getpid());
	}
	dlog("starting on %s (pins in %s)%s%s%s", o->site.store ? o->site.store : o->site.state_path,
	     o->site.pin_dir,
	     metrics ? "; metrics on http://" : "",
	     metrics ? (o->metrics ? o->metrics : METRICS_ADDR_DEFAULT) : "",
	     metrics ? "/metrics" : "");
	transitions_follow(&d, 1);
	reconcile(&d, "start");
	now = health_now_ns();
	refresh(&d, 1, now);
	if (!d.attached)
		dlog("not attached yet: health checks start once `ringlb attach` has run");
	if (sd_watchdog_enabled(0, &watchdog_us) <= 0)
		watchdog_us = 0;
	sd_notifyf(0, "READY=1\nSTATUS=serving generation %llu, %zu health checks",
		   (unsigned long long)d.state.generation, d.target_count);
	dlog("ready: serving generation %llu, %zu health checks",
	     (unsigned long long)d.state.generation, d.target_count);
	next_verify = now + (__u64)o->verify_s * 1000000000ull;
	d.watch_fd = -1;
	if (o->site.store) {
		d.watch_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		d.watching = d.watch_fd >= 0 && pthread_create(&d.watcher, NULL, watch_main, &d) == 0;
		if (!d.watching)
			dlog("cannot watch the store; asking it every %d ms", STORE_POLL_MS);
	}
	while (!stop) {
		struct health_target due;
		size_t nfds = 1, i;
		struct signalfd_siginfo si;

		pthread_mutex_lock(&d.lock);
		free(fds);
		fds = calloc(d.target_count + 2, sizeof(*fds)); /* the signals, the probes, the watch */
		for (i = 0; fds && i < d.target_count; i++)
			if (d.targets[i].fd >= 0 && health_probe_events(&d.targets[i]))
				fds[nfds++] = (struct pollfd){ .fd = d.targets[i].fd,
							       .events = health_probe_events(&d.targets[i]) };
		pthread_mutex_unlock(&d.lock);
		if (!fds) {
			snprintf(why, FAULT_WHY_MAX, "out of memory");
			err = -ENOMEM;
			break;
		}
		fds[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (d.watching)
			fds[nfds++] = (struct pollfd){ .fd = d.watch_fd, .events = POLLIN };
		if (poll(fds, nfds, TICK_MS) < 0 && errno != EINTR) {
			snprintf(why, FAULT_WHY_MAX, "poll: %s", strerror(errno));
			err = -errno;
			break;
		}
		now = health_now_ns();
		if (d.watching) {
			__u64 events;

			/* The store changed (or the watch began): ask it now. */
			if (read(d.watch_fd, &events, sizeof(events)) == sizeof(events)) {
				d.store_next = 0;
				next_look = 0;
			}
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				dlog("SIGHUP: reading the state again and comparing the kernel with it");
				sd_notify(0, "RELOADING=1");
				reconcile(&d, "reload");
				refresh(&d, 1, now);
				probe_path_ensure(&d, 1);
				sd_notifyf(0, "READY=1\nSTATUS=serving generation %llu, %zu health checks",
					   (unsigned long long)d.state.generation, d.target_count);
			} else {
				dlog("%s: stopping", strsignal((int)si.ssi_signo));
				stop = 1;
			}
		}
		if (now >= next_look) {
			refresh(&d, 0, now);
			transitions_follow(&d, 0);
			next_look = now + TICK_MS * 1000000ull;
		}
		leadership(&d, now);
		announce(&d);
		probes_run(&d, fds + 1, nfds - 1, now);
		while (!stop && verdict_due(&d, now, &due)) {
			verdict_commit(&d, &due, now);
			transitions_follow(&d, 0);
		}
		if (now >= next_verify) {
			reconcile(&d, "periodic comparison");
			refresh(&d, 1, now);
			probe_path_ensure(&d, 1);
			next_verify = now + (__u64)o->verify_s * 1000000000ull;
		}
		if (watchdog_us && now >= next_watchdog) {
			sd_notify(0, "WATCHDOG=1");
			next_watchdog = now + watchdog_us * 1000 / 2;
		}
	}
	sd_notify(0, "STOPPING=1");
	d.stopping = 1;
	if (d.watching)
		pthread_join(d.watcher, NULL);
	if (d.watch_fd >= 0)
		close(d.watch_fd);
out:
	metrics_stop(metrics);
	free(fds);
	pthread_mutex_lock(&d.lock);
	for (size_t i = 0; i < d.target_count; i++)
		health_probe_stop(&d.targets[i]);
	free(d.targets);
	pthread_mutex_unlock(&d.lock);
	if (d.probe)
		probe_path_remove();
	probe_path_close(d.probe);
	json_decref(d.rings);
	json_decref(d.changes);
	free(d.announced);
	state_free(&d.state);
	close(sfd);
	if (!err)
		dlog("stopped");
	close(lock);
	return err;
}
