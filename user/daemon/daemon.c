// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb daemon (daemon.h): the main loop. Each duty is an event source of
 * its own, set up here and handled in its own file (daemon_impl.h): signals
 * and the periodic comparison here, the committed state in follow.c, the
 * verdicts in verdicts.c, the lead in leader.c, rings.log in translog.c,
 * this host's paths to the backends in paths.c.
 * The health probes run on a thread and loop of their own (probes.c),
 * libmicrohttpd's thread serves /metrics (scrape.c, metrics.c) and the status
 * page (samples.c, status.c), the sampler has a thread of its own, and sd-event
 * pings systemd's watchdog.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "site.h"

void dlog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ringlb daemon: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(ap);
}

__u64 daemon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* --- timers ---------------------------------------------------------------------------- */

/** struct every - a repeating timer: its handler and period. */
struct every {
	sd_event_time_handler_t fn;
	void *arg;
	__u64 period_us;
};

static int every_fire(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct every *e = userdata;

	sd_event_source_set_time_relative(s, e->period_us);
	sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return e->fn(s, usec, e->arg);
}

static void every_free(void *userdata)
{
	free(userdata);
}

int daemon_every(sd_event *loop, __u64 first_us, __u64 period_us, sd_event_time_handler_t fn,
		 void *arg)
{
	struct every *e = calloc(1, sizeof(*e));
	sd_event_source *src;
	int err;

	if (!e)
		return -ENOMEM;
	*e = (struct every){ fn, arg, period_us };
	/* Accurate to a millisecond: sd-event's default slack is a quarter second. */
	err = sd_event_add_time_relative(loop, &src, CLOCK_MONOTONIC, first_us, 1000, every_fire, e);
	if (err < 0) {
		free(e);
		return err;
	}
	/* The loop owns it: it goes, and its handler's record with it, when the loop does. */
	sd_event_source_set_destroy_callback(src, every_free);
	sd_event_source_set_floating(src, 1);
	sd_event_source_unref(src);
	return 0;
}

/* --- the reload path and its callers ------------------------------------------------------ */

void daemon_reload(struct daemon *d, const char *cause, int path_again)
{
	reconcile(d, cause);
	follow_read(d, FOLLOW_FORCE | FOLLOW_SYNCED);
	probe_path_ensure(d, path_again);
	routes_update(d);
}

/* READY=1 and what the daemon serves, for systemd. Return: its health checks. */
static size_t notify_ready(struct daemon *d)
{
	size_t checks;

	pthread_mutex_lock(&d->lock);
	checks = d->target_count;
	pthread_mutex_unlock(&d->lock);
	sd_notifyf(0, "READY=1\nSTATUS=serving generation %llu, %zu health checks",
		   (unsigned long long)d->state.fleet.generation, checks);
	return checks;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	(void)s;
	if (si->ssi_signo != SIGHUP) {
		dlog("%s: stopping", strsignal((int)si->ssi_signo));
		return sd_event_exit(d->loop, 0);
	}
	dlog("SIGHUP: reading the state again and comparing the kernel with it");
	sd_notify(0, "RELOADING=1");
	daemon_reload(d, "reload", 1);
	notify_ready(d);
	return 0;
}

static int on_verify(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	daemon_reload(userdata, "periodic comparison", 1);
	return 0;
}

/*
 * SIGTERM, SIGINT and SIGHUP, blocked before any thread starts so only the
 * loop sees them. SIGCHLD blocked too: sd-event watches a child (birdc,
 * routes.c) only while it is, and reaps it itself.
 */
static int signals_open(struct daemon *d)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
	sigset_t set;
	size_t i;
	int err;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		sigaddset(&set, signals[i]);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return -EINVAL;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		err = sd_event_add_signal(d->loop, NULL, signals[i], on_signal, d);
		if (err < 0)
			return err;
	}
	return 0;
}

/* --- start and stop ------------------------------------------------------------------------ */

static void daemon_free(struct daemon *d)
{
	json_decref(d->rings);
	json_decref(d->counts.changes);
	free(d->routes.announced);
	free(d->targets);
	state_free(&d->state);
	sd_event_unref(d->loop);
	if (d->verdict_fd >= 0)
		close(d->verdict_fd);
}

/* Everything a daemon does, from its first reconcile on. */
static int daemon_start(struct daemon *d, struct fault *f)
{
	int err;

	/* First: what rings.log holds already is history, only its end is noted. */
	err = translog_start(d);
	if (err)
		return fault_errno(f, FAULT_KERNEL, err, "cannot start the daemon");
	reconcile(d, "start");
	follow_read(d, FOLLOW_FORCE | FOLLOW_SYNCED);
	probe_path_ensure(d, 0);
	if (!d->attached)
		dlog("not attached yet: health checks start once `ringlb attach` has run");
	err = follow_start(d) ?: leader_start(d) ?: verdicts_start(d) ?: routes_start(d) ?:
	      daemon_every(d->loop, (__u64)d->o->verify_s * 1000000, (__u64)d->o->verify_s * 1000000,
			   on_verify, d) ?:
	      flow_sweep_start(d) ?: probes_start(d) ?: paths_start(d) ?: samples_start(d);
	if (err)
		return fault_errno(f, FAULT_KERNEL, err < 0 ? err : -EIO, "cannot start the daemon");
	routes_update(d);
	return 0;
}

/*
 * The daemon's name for the store's lead, unique per daemon: two daemons
 * that share a hostname and a pid (containers, pid namespaces) differ by
 * their machine id or their pin directory, and a restarted daemon by its
 * start time: HOST/MACHINE-ID(8)/PIN-DIR/PID.START.
 */
static void daemon_identity(struct daemon *d, const char *host)
{
	char machine[40] = "nomachineid";
	FILE *f = fopen("/etc/machine-id", "re");

	if (f) {
		if (!fgets(machine, sizeof(machine), f))
			snprintf(machine, sizeof(machine), "nomachineid");
		machine[strcspn(machine, "\n")] = '\0';
		fclose(f);
	}
	snprintf(d->identity, sizeof(d->identity), "%s/%.8s%s/%d.%llu", host, machine,
		 d->o->site.pin_dir, (int)getpid(),
		 (unsigned long long)(daemon_now_ns() / 1000000 % 1000000));
}

int daemon_run(const struct daemon_opts *o, struct fault *f)
{
	struct daemon d = { .o = o, .lock = PTHREAD_MUTEX_INITIALIZER, .verdict_fd = -1 };
	struct metrics_server *metrics = NULL;
	const char *where = o->metrics ? o->metrics : METRICS_ADDR_DEFAULT;
	char host[64] = "?", mwhy[METRICS_WHY_MAX];
	int lock, err;

	state_init(&d.state);
	samples_init(&d);
	d.follow.watch_fd = -1;
	d.follow.reader.wake = d.follow.reader.done = -1;
	err = site_privileged(f);
	if (err)
		return err;
	lock = site_daemon_lock(&o->site, f);
	if (lock < 0)
		return lock;
	/*
	 * A state file missing where the kernel serves, a fleet host started
	 * without its store (or with another): refused, as every command
	 * refuses them. A store that fails is no reason not to start.
	 */
	err = site_state_read_shared(&o->site, &d.state, f);
	state_free(&d.state);
	if ((err == -ENOENT && f->class == FAULT_STATE) || (err && f->class == FAULT_USAGE)) {
		close(lock);
		return err;
	}
	fault_clear(f);
	d.counts.changes = json_object();
	err = sd_event_new(&d.loop);
	if (err < 0 || !d.counts.changes) {
		err = fault_errno(f, FAULT_KERNEL, err < 0 ? err : -ENOMEM, "cannot start a loop");
		goto out;
	}
	err = signals_open(&d);
	if (err) {
		fault_errno(f, FAULT_KERNEL, err, "cannot take signals");
		goto out;
	}
	/* Bound first: a port in use is the one line the caller sees, nothing else done. */
	if (strcmp(where, "none")) {
		err = metrics_start(where, o->metrics_deadline_s, scrape_page, status_page, &d,
				    &metrics, mwhy);
		if (err) {
			fault_set(f, FAULT_USAGE, err, "%s", mwhy);
			goto out;
		}
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(d.hostname, sizeof(d.hostname), "%s", host);
	daemon_identity(&d, host);
	dlog("starting on %s (pins in %s)%s%s%s%s%s", o->site.store->spec ? o->site.store->spec :
	     o->site.state_path, o->site.pin_dir, metrics ? "; metrics on http://" : "",
	     metrics ? where : "", metrics ? "/metrics and /" : "",
	     store_shared(o->site.store) ? "; its name for the lead: " : "",
	     store_shared(o->site.store) ? d.identity : "");
	err = daemon_start(&d, f);
	if (err)
		goto out;
	sd_event_set_watchdog(d.loop, 1);
	dlog("ready: serving generation %llu, %zu health checks",
	     (unsigned long long)d.state.fleet.generation, notify_ready(&d));
	err = sd_event_loop(d.loop);
	sd_notify(0, "STOPPING=1");
	if (err < 0)
		fault_errno(f, FAULT_KERNEL, err, "the loop failed");
	else
		err = 0;
out:
	leader_stop(&d);
	follow_stop(&d);
	routes_stop(&d);
	probes_stop(&d);
	metrics_stop(metrics);
	paths_stop(&d);
	samples_stop(&d);
	probe_path_drop(&d);
	daemon_free(&d);
	if (!err)
		dlog("stopped");
	close(lock);
	return err;
}
