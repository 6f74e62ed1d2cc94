/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the daemon (daemon.h): its duties, each an event source of its own
 * and a file of its own, and what they share.
 *
 *   daemon.c     the main loop (sd-event): signals, the watchdog, the
 *                periodic comparison, and the one reload path that SIGHUP,
 *                the periodic comparison and another host's change share
 *   follow.c     the committed state the daemon serves: the store's watch
 *                and a tick that asks the store (or this host's file)
 *   reconcile.c  the kernel made to hold the committed state; whether the
 *                host can serve it (decided by the class of the fault)
 *   probes.c     the health targets and their probes, on a thread and loop
 *                of their own, so store I/O never delays a probe's timing;
 *                and the clients' path the probes take
 *   verdicts.c   what the checks say, committed as changes (change_run())
 *   leader.c     the store's one lead: who runs the fleet's health checks
 *   routes.c     whether this host announces the VIPs (bird2)
 *   paths.c      this host's own path to the backends: a VIP none of whose
 *                backends it reaches is withdrawn, its verdicts held
 *   translog.c   rings.log followed, for the journal and the metrics
 *   scrape.c     a /metrics page from a snapshot (metrics.c serves it)
 *   samples.c    the samples of the data path's counters, on a thread of
 *                their own, and the status page (/) from a snapshot
 *                (status.c renders it, metrics.c serves it)
 *
 * Everything the probe thread or libmicrohttpd's thread reads is under
 * @lock; the rest belongs to the main loop.
 */
#ifndef RINGLB_DAEMON_IMPL_H
#define RINGLB_DAEMON_IMPL_H

#include <net/if.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "daemon.h"
#include "fault.h"
#include "health.h"
#include "metrics.h"
#include "status.h"
#include "store.h"

/* Live flows in the metrics: a packet within this long, as `ringlb stats`. */
#define METRICS_IDLE_S 300

struct daemon_probes;
struct probe_path;

/** struct daemon_reader - the reader thread's read and its result (follow.c). */
struct daemon_reader {
	pthread_t thread;
	int running;
	volatile int stopping;
	int wake;                  /* eventfd: the main loop asks for a read */
	int done;                  /* eventfd: the read is done */
	pthread_mutex_t lock;      /* what follows */
	int busy;                  /* a read is asked for or under way */
	int have;                  /* a result waits */
	struct stat file;          /* the state file when the read was asked for */
	int file_changed;
	struct state s;
	__u64 revision;
	struct fault f;
	int err;
};

/** struct daemon_follow - following the committed state (follow.c). */
struct daemon_follow {
	struct stat seen;          /* this host's state file when last read */
	__u64 revision;            /* the store's revision served, as far as the kernel follows */
	__u64 synced;              /* the revision reconcile()'s session read */
	__u64 next_ns;             /* when the store is asked next without a watch event */
	int store_down;            /* the last ask failed */
	int served;                /* something was served (from the store or this host's copy) */
	__u64 retry_ns;            /* failing static, the next judgement of a readable store */
	char why[FAULT_WHY_MAX];   /* why the store fails, as last said ("" while it answers) */
	int watch_fd;              /* the store's watch, -1 without */
	struct daemon_reader reader;
};

/** struct daemon_host - whether this host can serve the committed state (reconcile.c). */
struct daemon_host {
	int secret_bad; /* its key is not the fleet's */
	int kernel_bad; /* its kernel does not serve the committed state */
};

/**
 * struct daemon_birdc - the one `birdc configure` under way (routes.c), on
 * the main loop: its exit and its deadline are event sources.
 */
struct daemon_birdc {
	pid_t pid;                 /* 0: none runs */
	sd_event_source *exit;     /* its exit (a child source) */
	sd_event_source *deadline; /* BIRDC_TIMEOUT_MS after its start */
	int killed;                /* it did not answer in time */
	char *text;                /* the fragment it has bird read */
	size_t routes;             /* how many routes that holds */
	const char *reason;        /* why none (routes_withdraw_reason()), or NULL */
};

/** struct daemon_routes - what this host announces (routes.c). */
struct daemon_routes {
	char *announced;           /* the fragment bird has */
	int failing;               /* birdc configure failed */
	int hung;                  /* and one was killed, since bird last took a fragment */
	__u64 retry_ns;            /* when to try bird again */
	struct daemon_birdc birdc;
};

/** PATHS_WITHDRAWN_MAX - addresses a host can withdraw for its paths at most. */
#define PATHS_WITHDRAWN_MAX LB_VIPS_MAX

/**
 * struct daemon_paths - this host's paths to the backends (paths.c).
 * @report: the last report (under the lock: the metrics read it)
 * @written: its text as written to PATHS_FILE (NULL: not written)
 * @write_failing: the last write failed (said once)
 * @withdrawn: the addresses left out of the routes for their paths
 * @withdrawn_count: how many
 */
struct daemon_paths {
	json_t *report;
	char *written;
	int write_failing;
	struct addr withdrawn[PATHS_WITHDRAWN_MAX];
	size_t withdrawn_count;
};

/** struct daemon_counts - what the metrics count (under the lock). */
struct daemon_counts {
	json_t *changes;           /* per VIP {"ok": N, "failed": N} */
	__u64 latency[METRICS_LATENCY_BUCKETS];
	__u64 latency_over;
	double latency_sum;
	__u64 repairs;
	__u64 follows;
	__u64 flows_expired;
};

/**
 * struct daemon_samples - the sampler thread and what it keeps (samples.c).
 * @lock: @stopping, @pictures and @generation; @wake: its sleep between samples
 * @pictures: {VIP: its ring's picture} of the state of @generation, drawn
 *            by the sampler when the generation changes (the biggest ring
 *            takes 0.2 s: not on libmicrohttpd's thread for every page)
 */
struct daemon_samples {
	pthread_t thread;
	int running;
	int stopping;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	json_t *pictures;
	__u64 generation;
	struct status_samples kept;
};

/**
 * struct daemon - one daemon.
 * @o: how it runs
 * @loop: the main loop
 * @identity: HOST/PID, its name for the store's lead
 * @lock: what other threads read: @state, @attached, @rings, @targets,
 *        @target_count, @counts, @leader, @path_ok, @source4, @source6,
 *        @paths.report
 * @state: the committed state it serves
 * @attached: the data path's maps are there
 * @rings: per VIP its ring's points and shares, for the metrics
 * @targets: the health checks (owned by the probe thread)
 * @target_count: how many
 * @leader: it holds the store's lead (always, without a shared store)
 * @lead_until_ns: until when that lead is proven (the fence: daemon_leads())
 * @fail_static: the store fails and the kernel serves this host's copy
 * @path_ok: the clients' path for checks is set up
 * @source4: this host's IPv4 address on the attached interface (probes' source)
 * @source6: and IPv6
 * @samples: the data path's counters sampled (its own lock)
 * @hostname: this host's name, for the status page and the path metrics
 * @paths: this host's own path to the backends (paths.c; main loop)
 */
struct daemon {
	const struct daemon_opts *o;
	sd_event *loop;
	char identity[128];

	pthread_mutex_t lock;
	struct state state;
	int attached;
	json_t *rings;
	struct health_target *targets;
	size_t target_count;
	struct daemon_counts counts;
	int leader;
	__u64 lead_until_ns;
	int fail_static;
	int copy_failing;
	int path_ok;
	struct addr source4;
	struct addr source6;
	struct daemon_samples samples;
	char hostname[64];

	struct daemon_follow follow;
	struct daemon_host host;
	struct daemon_routes routes;
	struct daemon_paths paths;
	char holder[STORE_HOLDER_MAX];
	off_t log_offset;
	int reported;
	struct probe_path *path;
	char path_iface[IF_NAMESIZE];
	struct daemon_probes *probes;
	int verdict_fd;
	int flow_sweep_failing;
	pthread_t lead_thread;
	int lead_running;
	volatile int lead_stopping;
};

/** dlog() - one line on stderr (the journal): "ringlb daemon: ...". */
void dlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** daemon_now_ns() - CLOCK_MONOTONIC in ns. */
__u64 daemon_now_ns(void);

/**
 * daemon_every() - a timer source on @loop (which owns it) that calls @fn
 * every @period_us (first after @first_us), to a millisecond.
 * Return: 0 or -errno.
 */
int daemon_every(sd_event *loop, __u64 first_us, __u64 period_us, sd_event_time_handler_t fn,
		 void *arg);

/**
 * daemon_reload() - the one reload path: make the kernel hold the committed
 * state (reconcile()), serve it as committed now, set the probes' path up
 * (again when @path_again: a rule deleted by hand comes back) and say what
 * to announce. SIGHUP and the periodic comparison run it with @path_again,
 * another host's change without; @cause names which in the log.
 */
void daemon_reload(struct daemon *d, const char *cause, int path_again);

/* --- reconcile.c ------------------------------------------------------------------- */

/**
 * reconcile() - what session_begin() repairs (a change cut short, programs
 * on the wrong key), then a full comparison of the kernel with the state,
 * and a full sync when anything differs (a map written behind ringlb's
 * back). Sets @d->host from the outcome. When the store fails, the kernel
 * is held to this host's copy of what it last followed (fail static). The
 * kernel made to hold a revision this host had not followed is counted as a
 * follow, not as drift. Return: 0 or -errno.
 */
int reconcile(struct daemon *d, const char *when);

/**
 * daemon_withdraws() - does fault @f mean this host cannot serve the
 * committed state, so its routes go? Decided by the fault's class alone:
 * a fault of the kernel (it does not hold the state) or of this host's
 * state (its file is unusable) withdraws; a fault of the store does not
 * (the kernel serves what it last followed, and the other hosts the same).
 */
int daemon_withdraws(const struct fault *f);

/* --- follow.c ------------------------------------------------------------------------ */

/** FOLLOW_MOVED - follow_read() found the store moved: daemon_reload() it. */
#define FOLLOW_MOVED 1
/** FOLLOW_FORCE - follow_read() reads now, whether or not it may have changed. */
#define FOLLOW_FORCE 1
/**
 * FOLLOW_SYNCED - reconcile() just made the kernel hold the store's state at
 * the revision its session read (d->follow.synced): serve what is read.
 */
#define FOLLOW_SYNCED 2

/** follow_start() - the watch, the tick, and the reader thread of a shared store. */
int follow_start(struct daemon *d);

/** follow_stop() - stop the reader thread. */
void follow_stop(struct daemon *d);

/**
 * follow_read() - read the committed state when it may have changed (or
 * with FOLLOW_FORCE) and serve it. A store that moved since the revision
 * served (another host's change, or this host's own commit) is not served
 * before the kernel follows, unless FOLLOW_SYNCED. Return: 0, FOLLOW_MOVED
 * (not served) or -errno.
 */
int follow_read(struct daemon *d, unsigned int how);

/* --- probes.c ------------------------------------------------------------------------ */

/** probes_start() - the probe thread and its loop. */
int probes_start(struct daemon *d);

/** probes_stop() - stop it; every probe closed. */
void probes_stop(struct daemon *d);

/**
 * probes_poke() - tell the probe thread that the state, the lead or the
 * path changed (call after changing them under the lock).
 */
void probes_poke(struct daemon *d);

/**
 * probe_path_ensure() - the clients' path for probes on the first attached
 * interface, (re)made when that changes or @again.
 */
void probe_path_ensure(struct daemon *d, int again);

/** probe_path_drop() - take the path away (a clean stop). */
void probe_path_drop(struct daemon *d);

/* --- verdicts.c ---------------------------------------------------------------------- */

/** verdicts_start() - commit what the checks say whenever the probe thread finds one due. */
int verdicts_start(struct daemon *d);

/* --- leader.c, routes.c, translog.c, scrape.c ---------------------------------------- */

/** leader_start() - a thread that asks the store for the lead every STORE_LEAD_RENEW_MS. */
int leader_start(struct daemon *d);

/** leader_stop() - stop that thread. */
void leader_stop(struct daemon *d);

/**
 * daemon_leads() - may this daemon run the fleet's checks at @now: it
 * holds the lead, and its last renewal proves the lease alive until past
 * @now (under @d->lock).
 */
int daemon_leads(struct daemon *d, __u64 now);

/** routes_start() - look at what to announce every tick (bird retried after a failure). */
int routes_start(struct daemon *d);

/**
 * routes_update() - write and announce what this host should, when it
 * changed: the fragment written, then `birdc configure` started; its
 * outcome comes later, on the loop. Nothing while one runs.
 */
void routes_update(struct daemon *d);

/** routes_stop() - a birdc still running killed and reaped (a clean stop). */
void routes_stop(struct daemon *d);

/** routes_withdraw_reason() - why this host should not announce, or NULL when it should. */
const char *routes_withdraw_reason(const struct daemon *d);

/**
 * daemon_file_write() - @text into the file @path, whole or not at all: a
 * new file of its own beside it, synced, mode 0644, renamed over @path.
 * Return: 0 or -errno.
 */
int daemon_file_write(const char *path, const char *text);

/**
 * paths_hold() - under the lock, on the probe thread after results: with a
 * shared store, what the checks say of a VIP none of whose checked backends
 * passed its last check from here is held at the committed verdicts (for
 * two intervals and a timeout after).
 */
void paths_hold(struct daemon *d, __u64 now);

/** paths_start() - the report of this host's paths, made every tick, written when it changes. */
int paths_start(struct daemon *d);

/** paths_stop() - the report's file removed (a clean stop), its memory freed. */
void paths_stop(struct daemon *d);

/** paths_withdrawn() - is address @a left out of the routes because no backend is reachable? */
int paths_withdrawn(const struct daemon *d, const struct addr *a);

/** translog_start() - follow rings.log from where it ends now. */
int translog_start(struct daemon *d);

/**
 * flow_sweep_start() - delete idle flow-table entries every few seconds
 * (flow_sweep.c): past --flow-timeout, or --flow-closed-timeout for a flow
 * whose client sent a FIN or a RST.
 */
int flow_sweep_start(struct daemon *d);

/** translog_follow() - the lines rings.log gained, logged and counted. */
void translog_follow(struct daemon *d);

/**
 * daemon_copy_served() - under @d->lock, for a page: the state served into
 * @s (state_init()ed) and a malloc()ed copy of the checks in @targets.
 * Return: how many checks were copied (0 when out of memory).
 */
size_t daemon_copy_served(struct daemon *d, struct state *s, struct health_target **targets);

/** scrape_page() - a /metrics page (metrics_render_fn). */
char *scrape_page(void *arg, size_t *len);

/* --- samples.c ------------------------------------------------------------------------ */

/** samples_init() - an empty buffer of samples, before the status page can be asked for. */
void samples_init(struct daemon *d);

/** samples_start() - the sampler thread: a sample now, then every --sample-interval. */
int samples_start(struct daemon *d);

/** samples_stop() - stop the thread (when started) and free the samples; after metrics_stop(). */
void samples_stop(struct daemon *d);

/** status_page() - the status page, HTML (metrics_render_fn). */
char *status_page(void *arg, size_t *len);

#endif /* RINGLB_DAEMON_IMPL_H */
