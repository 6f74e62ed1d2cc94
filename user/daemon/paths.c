// SPDX-License-Identifier: GPL-2.0-only
/*
 * This host's own path to the backends (daemon_impl.h). Every daemon of a
 * fleet runs the probes, the leader alone commits verdicts; each keeps its
 * own results, and from them this file decides, with a shared store:
 *
 * - a VIP is lost from this host when every checked backend of it failed
 *   its last fall checks from here while the fleet holds at least one up
 *   (health_path_lost()): it is this host's path (a backend's decap --from
 *   without this host, a link, a filter), not the backends. Its address
 *   leaves the routes bird reads once every VIP of that address is lost,
 *   and comes back when the path does.
 * - while every checked backend of a VIP failed a check from here within
 *   its last fall intervals and a timeout (health_path_failing(): backends
 *   cut one after another are one cut when the last is cut before the
 *   first has failed fall checks),
 *   what this host's checks say of that VIP is held at the committed
 *   verdict, and for two check intervals and a timeout after (a probe sent
 *   into the cut may time out after the path is back): a leader whose own
 *   path is cut does not mark the VIP's backends down for the whole fleet,
 *   and a follower that takes the lead meanwhile starts from the store's
 *   verdicts. A leader cut from some backends only, not all, still marks
 *   those down for the fleet (docs/scale.md).
 *
 * Without a shared store the daemon's checks are the verdicts: nothing is
 * withdrawn or held here. The report (SITE_PATHS_FILE beside the state file,
 * read by `ringlb show`, and the metrics) is made on the main loop every
 * PATHS_TICK_US and written only when it changed: the probe thread does no
 * file I/O for it.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "site.h"

/* How often the report is made again. */
#define PATHS_TICK_US 200000

/* The end of the run of targets from @i that share its VIP (targets_rebuild() keeps them together). */
static size_t vip_run(const struct health_target *ts, size_t n, size_t i)
{
	size_t j = i;

	while (j < n && vip_equal(&ts[j].vip, &ts[i].vip))
		j++;
	return j;
}

void paths_hold(struct daemon *d, __u64 now)
{
	struct health_target *ts = d->targets;
	size_t n = d->target_count, i, j, k;

	if (!store_shared(d->o->site.store))
		return;
	for (i = 0; i < n; i = j) {
		j = vip_run(ts, n, i);
		if (health_path_failing(ts + i, j - i, &ts[i].vip, now))
			for (k = i; k < j; k++)
				ts[k].path_hold_ns = now + ((__u64)2 * ts[k].check.interval_ms +
							    ts[k].check.timeout_ms) * 1000000ull;
		for (k = i; k < j; k++)
			if (now < ts[k].path_hold_ns)
				ts[k].seen_up = ts[k].verdict_up;
	}
}

/* One backend's path in the report. */
static json_t *backend_path(const struct health_target *t)
{
	int up = health_path_up(t);

	return json_pack("{s:s, s:s, s:s}", "name", t->name, "path",
			 up < 0 ? "not checked yet" : up ? "ok" : "lost", "last", t->last);
}

/*
 * The report of @d's targets (under the lock): per VIP with checks, whether
 * it is lost and held, and each checked backend's path. The withdrawal is
 * added by paths_tick(), which sees every VIP of an address.
 */
static json_t *report_make(struct daemon *d, __u64 now)
{
	const struct health_target *ts = d->targets;
	size_t n = d->target_count, i, j, k;
	int shared = store_shared(d->o->site.store);
	json_t *vips = json_array();
	char spec[ADDR_TEXT_MAX];

	for (i = 0; i < n; i = j) {
		json_t *backends = json_array();
		int held = 0;

		j = vip_run(ts, n, i);
		for (k = i; k < j; k++) {
			json_array_append_new(backends, backend_path(&ts[k]));
			held |= now < ts[k].path_hold_ns;
		}
		vip_format(&ts[i].vip, spec);
		json_array_append_new(vips, json_pack(
			"{s:s, s:b, s:b, s:b, s:o}", "vip", spec, "lost",
			shared && health_path_lost(ts + i, j - i, &ts[i].vip), "held",
			held && daemon_leads(d, now), "withdrawn", 0, "backends", backends));
	}
	return json_pack("{s:I, s:s, s:b, s:o}", "pid", (json_int_t)getpid(), "host", d->hostname,
			 "fleet", shared, "vips", vips);
}

/* The VIP of the report's entry @v. */
static int report_vip(const json_t *v, struct vip_spec *spec)
{
	const char *why;

	return vip_parse(json_string_value(json_object_get(v, "vip")), spec, &why);
}

/*
 * Which addresses leave the routes: those whose every VIP is lost (a VIP
 * without checks is never lost). Marks the report's VIPs and says why.
 */
static void withdrawals(struct daemon *d, json_t *report)
{
	json_t *vips = json_object_get(report, "vips"), *v, *w;
	struct daemon_paths *p = &d->paths;
	size_t i, k;

	p->withdrawn_count = 0;
	json_array_foreach(vips, i, v) {
		struct vip_spec spec;
		int all = 1;

		if (!json_is_true(json_object_get(v, "lost")) || report_vip(v, &spec))
			continue;
		/* Every VIP of the state at this address, lost in the report. */
		for (k = 0; all && k < d->state.fleet.vip_count; k++) {
			const struct vip_spec *o = &d->state.fleet.vips[k].spec;
			size_t m;
			int lost = 0;

			if (!addr_equal(&o->addr, &spec.addr))
				continue;
			json_array_foreach(vips, m, w) {
				struct vip_spec ws;

				if (!report_vip(w, &ws) && vip_equal(&ws, o))
					lost = json_is_true(json_object_get(w, "lost"));
			}
			all = lost;
		}
		json_object_set_new(v, "withdrawn", json_boolean(all));
		json_object_set_new(v, "why", json_string(
			all ? "no backend reachable from this host" :
			      "no backend reachable from this host; its address stays announced for "
			      "another VIP of it"));
		if (all && p->withdrawn_count < PATHS_WITHDRAWN_MAX)
			p->withdrawn[p->withdrawn_count++] = spec.addr;
	}
}

int paths_withdrawn(const struct daemon *d, const struct addr *a)
{
	size_t i;

	for (i = 0; i < d->paths.withdrawn_count; i++)
		if (addr_equal(&d->paths.withdrawn[i], a))
			return 1;
	return 0;
}

/* The report's entry for @spec, or NULL. */
static const json_t *report_find(const json_t *report, const char *spec)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(report, "vips"), i, v)
		if (strcmp(json_string_value(json_object_get(v, "vip")), spec) == 0)
			return v;
	return NULL;
}

/* What changed since @old, in the log: a VIP lost, back, its verdicts held. */
static void report_log(const json_t *old, const json_t *now)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(now, "vips"), i, v) {
		const char *spec = json_string_value(json_object_get(v, "vip"));
		const json_t *o = report_find(old, spec);
		int lost = json_is_true(json_object_get(v, "lost"));
		int held = json_is_true(json_object_get(v, "held"));

		if (lost && !json_is_true(json_object_get(o, "lost")))
			dlog("VIP %s: no backend answers this host's checks while the fleet holds one "
			     "up: this host's path (is this host in the backends' decap --from?); %s",
			     spec, json_is_true(json_object_get(v, "withdrawn")) ?
				   "its route withdrawn" : "its address stays announced for another VIP");
		else if (!lost && o && json_is_true(json_object_get(o, "lost")))
			dlog("VIP %s: this host's checks reach a backend again; its route announced",
			     spec);
		if (held && !json_is_true(json_object_get(o, "held")))
			dlog("VIP %s: every check of it fails from this host, the leader: its down "
			     "verdicts are held (this host's path, not the backends)", spec);
	}
}

static int on_paths(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct daemon_paths *p = &d->paths;
	char path[PATH_MAX], *text;
	json_t *report, *old;
	int err;

	(void)s;
	(void)usec;
	pthread_mutex_lock(&d->lock);
	report = report_make(d, daemon_now_ns());
	pthread_mutex_unlock(&d->lock);
	if (!report)
		return 0;
	withdrawals(d, report);
	text = json_dumps(report, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text || (p->written && strcmp(text, p->written) == 0)) {
		free(text);
		json_decref(report);
		return 0;
	}
	report_log(p->report, report);
	pthread_mutex_lock(&d->lock);
	old = p->report;
	p->report = report;
	pthread_mutex_unlock(&d->lock);
	json_decref(old);
	site_path(&d->o->site, SITE_PATHS_FILE, path, sizeof(path));
	err = daemon_file_write(path, text);
	if (err && !p->write_failing)
		dlog("cannot write %s: %s (ringlb show does not say this host's paths)", path,
		     strerror(-err));
	p->write_failing = err != 0;
	free(p->written);
	p->written = err ? NULL : text;
	if (err)
		free(text);
	/* A VIP withdrawn or back: the routes follow now. */
	routes_update(d);
	return 0;
}

int paths_start(struct daemon *d)
{
	return daemon_every(d->loop, PATHS_TICK_US, PATHS_TICK_US, on_paths, d);
}

void paths_stop(struct daemon *d)
{
	char path[PATH_MAX];

	site_path(&d->o->site, SITE_PATHS_FILE, path, sizeof(path));
	unlink(path);
	free(d->paths.written);
	d->paths.written = NULL;
	json_decref(d->paths.report);
	d->paths.report = NULL;
}
