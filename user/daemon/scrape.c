// SPDX-License-Identifier: GPL-2.0-only
/*
 * A /metrics page (daemon_impl.h), on libmicrohttpd's thread: a snapshot of
 * what the daemon serves, taken under its lock (the state, the checks, the
 * counts), and the kernel's counters of that state read as `ringlb stats`
 * reads them, rendered by metrics_render().
 */
#include "daemon_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "site.h"
#include "stats.h"

size_t daemon_copy_served(struct daemon *d, struct state *s, struct health_target **targets)
{
	*targets = NULL;
	if (state_clone(s, &d->state) == 0 && d->target_count &&
	    (*targets = malloc(d->target_count * sizeof(**targets))))
		memcpy(*targets, d->targets, d->target_count * sizeof(**targets));
	return *targets ? d->target_count : 0;
}

char *scrape_page(void *arg, size_t *len)
{
	struct daemon *d = arg;
	struct metrics_input in = { 0 };
	struct health_target *targets = NULL;
	struct fault f = { 0 };
	struct lb_maps maps;
	struct state s;
	char *page = NULL;
	FILE *out;

	state_init(&s);
	pthread_mutex_lock(&d->lock);
	in.target_count = daemon_copy_served(d, &s, &targets);
	in.rings = json_deep_copy(d->rings);
	in.changes = json_deep_copy(d->counts.changes);
	memcpy(in.latency, d->counts.latency, sizeof(in.latency));
	in.latency_over = d->counts.latency_over;
	in.latency_sum = d->counts.latency_sum;
	in.repairs = d->counts.repairs;
	in.flows_expired = d->counts.flows_expired;
	in.attached = d->attached;
	in.shared = store_shared(d->o->site.store);
	in.fail_static = d->fail_static;
	in.revision = d->state.host.member.revision;
	in.followed = d->state.host.member.followed;
	in.follows = d->counts.follows;
	in.host = d->hostname;
	in.paths = json_deep_copy(d->paths.report);
	pthread_mutex_unlock(&d->lock);
	in.state = &s;
	in.targets = targets;
	/* The counters of the state just copied, read as `ringlb stats` reads them. */
	if (in.attached && site_maps_open(&d->o->site, &maps, &f) == 0) {
		kernel_stats(&maps, &s, METRICS_IDLE_S, &in.stats);
		lb_maps_close(&maps);
	}
	out = open_memstream(&page, len);
	if (out) {
		metrics_render(out, &in);
		fclose(out);
	}
	json_decref(in.stats);
	json_decref(in.rings);
	json_decref(in.changes);
	json_decref(in.paths);
	free(targets);
	state_free(&s);
	return page;
}
