// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's own samples and its status page (daemon_impl.h, status.h).
 * A thread of its own takes a sample every --sample-interval seconds: the
 * state served and the ring model copied under the daemon's lock, then,
 * with the lock released, the kernel's counters of that state read as
 * /metrics reads them (kernel_stats(), whose walk of the flow table may
 * take a while on a big table: never on the main loop, never under the
 * lock). The page is rendered on libmicrohttpd's thread from copies, as
 * scrape.c does for /metrics: the lock is held only while copying.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "site.h"
#include "stats.h"
#include "status.h"

/* The rings' pictures of @s, drawn again when its generation is not the one drawn. */
static void pictures_draw(struct daemon_samples *ds, const struct state *s)
{
	char spec[ADDR_TEXT_MAX], *svg;
	json_t *pictures, *old;
	size_t i;

	pthread_mutex_lock(&ds->lock);
	i = ds->pictures && ds->generation == s->fleet.generation;
	pthread_mutex_unlock(&ds->lock);
	if (i || !(pictures = json_object()))
		return;
	for (i = 0; i < s->fleet.vip_count; i++) {
		vip_format(&s->fleet.vips[i].spec, spec);
		/* One that cannot be drawn is drawn (and said missing) by the page. */
		if (status_ring_svg(&s->fleet.vips[i], s->fleet.generation, &svg) == 0) {
			json_object_set_new(pictures, spec, json_string(svg));
			free(svg);
		}
	}
	pthread_mutex_lock(&ds->lock);
	old = ds->pictures;
	ds->pictures = pictures;
	ds->generation = s->fleet.generation;
	pthread_mutex_unlock(&ds->lock);
	json_decref(old);
}

static void sample_once(struct daemon *d)
{
	struct status_sample sample;
	struct fault f = { 0 };
	json_t *rings, *stats = NULL;
	struct lb_maps maps;
	struct state s;
	int attached, cloned;

	state_init(&s);
	pthread_mutex_lock(&d->lock);
	cloned = state_clone(&s, &d->state) == 0;
	attached = d->attached && cloned;
	rings = json_deep_copy(d->rings);
	pthread_mutex_unlock(&d->lock);
	if (cloned)
		pictures_draw(&d->samples, &s);
	if (attached && site_maps_open(&d->o->site, &maps, &f) == 0) {
		kernel_stats(&maps, &s, METRICS_IDLE_S, &stats);
		lb_maps_close(&maps);
	}
	if (status_sample_make(stats, rings, daemon_now_ns(), (__s64)time(NULL), &sample) == 0)
		status_samples_push(&d->samples.kept, &sample);
	json_decref(stats);
	json_decref(rings);
	state_free(&s);
}

static void *sample_main(void *arg)
{
	struct daemon *d = arg;
	struct daemon_samples *ds = &d->samples;
	__u64 next = daemon_now_ns();
	struct timespec ts;

	pthread_mutex_lock(&ds->lock);
	while (!ds->stopping) {
		if (daemon_now_ns() >= next) {
			pthread_mutex_unlock(&ds->lock);
			sample_once(d);
			next += (__u64)d->o->sample_s * 1000000000ull;
			/* Late by more than an interval (a stalled host): start again from now. */
			if (next <= daemon_now_ns())
				next = daemon_now_ns() + (__u64)d->o->sample_s * 1000000000ull;
			pthread_mutex_lock(&ds->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&ds->wake, &ds->lock, &ts);
	}
	pthread_mutex_unlock(&ds->lock);
	return NULL;
}

void samples_init(struct daemon *d)
{
	struct daemon_samples *ds = &d->samples;
	pthread_condattr_t attr;

	pthread_mutex_init(&ds->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ds->wake, &attr);
	pthread_condattr_destroy(&attr);
	status_samples_init(&ds->kept);
}

int samples_start(struct daemon *d)
{
	if (pthread_create(&d->samples.thread, NULL, sample_main, d))
		return -EAGAIN;
	d->samples.running = 1;
	return 0;
}

void samples_stop(struct daemon *d)
{
	struct daemon_samples *ds = &d->samples;

	if (ds->running) {
		pthread_mutex_lock(&ds->lock);
		ds->stopping = 1;
		pthread_cond_signal(&ds->wake);
		pthread_mutex_unlock(&ds->lock);
		pthread_join(ds->thread, NULL);
		ds->running = 0;
	}
	status_samples_free(&ds->kept);
	json_decref(ds->pictures);
	pthread_cond_destroy(&ds->wake);
	pthread_mutex_destroy(&ds->lock);
}

char *status_page(void *arg, size_t *len)
{
	struct daemon *d = arg;
	struct status_input in = { .interval_s = d->o->sample_s, .host = d->hostname };
	struct health_target *targets = NULL;
	struct status_sample *samples = NULL;
	json_t *rings, *pictures;
	struct state s;
	char *page = NULL;
	FILE *out;
	int err;

	state_init(&s);
	pthread_mutex_lock(&d->lock);
	in.target_count = daemon_copy_served(d, &s, &targets);
	rings = json_deep_copy(d->rings);
	in.attached = d->attached;
	pthread_mutex_unlock(&d->lock);
	if (status_samples_copy(&d->samples.kept, &samples, &in.count))
		in.count = 0;
	pthread_mutex_lock(&d->samples.lock);
	/* Pictures of another generation than the state copied are not this page's. */
	pictures = d->samples.generation == s.fleet.generation ?
		   json_deep_copy(d->samples.pictures) : NULL;
	pthread_mutex_unlock(&d->samples.lock);
	in.pictures = pictures;
	in.state = &s;
	in.rings = rings;
	in.targets = targets;
	in.samples = samples;
	in.now_s = (__s64)time(NULL);
	out = open_memstream(&page, len);
	if (out) {
		/* A ring that cannot be drawn is said on the page; the rest of it still serves. */
		err = status_render(out, &in);
		if (fclose(out) || err == -EIO) {
			free(page);
			page = NULL;
		}
	}
	status_samples_copy_free(samples, in.count);
	json_decref(pictures);
	json_decref(rings);
	free(targets);
	state_free(&s);
	return page;
}
