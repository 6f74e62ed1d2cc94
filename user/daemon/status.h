/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's status page (GET / on the /metrics server): what an on-call
 * engineer reads first, as one self-contained HTML document with inline
 * SVG (no script, no font, nothing fetched). Per VIP: throughput, drops
 * and resource use over the samples the daemon keeps (STATUS_SAMPLES_KEPT,
 * one each sample interval: an hour at the default), each chart with the
 * shipped alert's threshold (build/alerts.h, generated from the rules
 * file) drawn as a line; the backends with state, health, weight and
 * share; the ring's picture (picture.h).
 *
 * This header is the part without threads or maps: samples as values, the
 * ring buffer that keeps them, the rates taken from their deltas, and the
 * rendering (status.c). The daemon's sampler thread and the page's
 * snapshot are in samples.c.
 */
#ifndef RINGLB_STATUS_H
#define RINGLB_STATUS_H

#include <pthread.h>
#include <stdio.h>
#include <jansson.h>
#include <linux/types.h>

#include "addr.h"
#include "health.h"
#include "lb_contract.h"
#include "state.h"

/** STATUS_SAMPLE_INTERVAL_S_DEFAULT - seconds between the daemon's samples, unless told. */
#define STATUS_SAMPLE_INTERVAL_S_DEFAULT 10
/** STATUS_SAMPLE_INTERVAL_S_MIN - the shortest `ringlb daemon --sample-interval`. */
#define STATUS_SAMPLE_INTERVAL_S_MIN 1
/** STATUS_SAMPLE_INTERVAL_S_MAX - the longest. */
#define STATUS_SAMPLE_INTERVAL_S_MAX 3600
/** STATUS_SAMPLES_KEPT - samples kept: 360 at 10 s is the last hour. */
#define STATUS_SAMPLES_KEPT 360

/**
 * struct status_vip_sample - one VIP's counters at a sample.
 * @vip: the VIP as text (vip_format())
 * @packets: packets forwarded to its backends, since its slot was made
 * @new_flows: flows pinned to its backends (their new_flows summed)
 * @refused: packets its source ranges refused
 * @points: its ring's points
 */
struct status_vip_sample {
	char vip[ADDR_TEXT_MAX];
	__u64 packets;
	__u64 new_flows;
	__u64 refused;
	__u64 points;
};

/**
 * struct status_sample - what the data path counted at one moment.
 * @at_ns: when (CLOCK_MONOTONIC)
 * @wall_s: when (Unix time), for the page's labels
 * @attached: the data path's maps were there (else only @vips' points count)
 * @reasons: frames counted under each reason (enum lb_reason)
 * @flow_entries: flow-table entries
 * @flow_capacity: flow-table capacity
 * @vip_count: how many in @vips
 * @vips: per VIP of the state served then (malloc()ed)
 */
struct status_sample {
	__u64 at_ns;
	__s64 wall_s;
	int attached;
	__u64 reasons[LB_REASON_COUNT];
	__u64 flow_entries;
	__u64 flow_capacity;
	size_t vip_count;
	struct status_vip_sample *vips;
};

/**
 * status_sample_make() - a sample from kernel_stats()'s model @stats (NULL:
 * not attached) and the daemon's ring model @rings ({VIP: {"points": N}}).
 * Return: 0 or -ENOMEM (@out then holds nothing to free).
 */
int status_sample_make(const json_t *stats, const json_t *rings, __u64 at_ns, __s64 wall_s,
		       struct status_sample *out);

/** status_sample_free() - what a sample holds. */
void status_sample_free(struct status_sample *s);

/**
 * struct status_samples - the last STATUS_SAMPLES_KEPT samples, oldest
 * overwritten; @lock covers the rest (the sampler pushes, the page copies).
 */
struct status_samples {
	pthread_mutex_t lock;
	struct status_sample ring[STATUS_SAMPLES_KEPT];
	size_t next;
	size_t count;
};

/** status_samples_init() - an empty buffer. */
void status_samples_init(struct status_samples *b);

/** status_samples_free() - every sample in it freed. */
void status_samples_free(struct status_samples *b);

/** status_samples_push() - keep @s (taken over: @s is left empty), dropping the oldest when full. */
void status_samples_push(struct status_samples *b, struct status_sample *s);

/**
 * status_samples_copy() - the samples, oldest first, as a malloc()ed array
 * of deep copies (free with status_samples_copy_free()).
 * Return: 0 or -ENOMEM.
 */
int status_samples_copy(struct status_samples *b, struct status_sample **out, size_t *count);

/** status_samples_copy_free() - what status_samples_copy() gave. */
void status_samples_copy_free(struct status_sample *s, size_t count);

/**
 * status_rate() - a counter's rate between two samples: (@now - @then) /
 * the seconds between them. NaN when they are not 1 ms apart or the
 * counter went back (a slot made again).
 */
double status_rate(__u64 then, __u64 now, __u64 then_ns, __u64 now_ns);

/* --- charts ------------------------------------------------------------------------ */

/** STATUS_CHART_WIDTH, _HEIGHT - a chart's size; its plot inside the margins below. */
#define STATUS_CHART_WIDTH 420
#define STATUS_CHART_HEIGHT 220
#define STATUS_PLOT_LEFT 64
#define STATUS_PLOT_RIGHT 356
#define STATUS_PLOT_TOP 34
#define STATUS_PLOT_BOTTOM 174
/** STATUS_SERIES_MAX - lines one chart draws at most (the drop reasons, and more). */
#define STATUS_SERIES_MAX 24

/**
 * struct status_series - one line of a chart.
 * @name: its legend ("packets/s", a drop reason)
 * @colour: its stroke ("#rrggbb")
 * @values: one value per sample, NaN where there is none (a gap)
 * @right: drawn against the right axis (its own scale)
 * @note: said after its legend entry, or NULL
 */
struct status_series {
	const char *name;
	const char *colour;
	const double *values;
	int right;
	const char *note;
};

/**
 * struct status_chart - a chart: lines over the samples' times, and a threshold.
 * @kind: its class ("throughput", "drops", "resources"); the plot's background
 *        colour is the kind's own
 * @title: what it shows
 * @unit: of the left axis ("/s", "%")
 * @times_ns: per sample its time; the x axis spans the first to the last
 * @count: samples
 * @series: its lines
 * @series_count: how many
 * @left_max: the left axis' top, or 0 to fit the lines and the threshold
 * @threshold: the alert's threshold on the left axis, NaN for none
 * @threshold_label: what the threshold line is
 */
struct status_chart {
	const char *kind;
	const char *title;
	const char *unit;
	const __u64 *times_ns;
	size_t count;
	const struct status_series *series;
	size_t series_count;
	double left_max;
	double threshold;
	const char *threshold_label;
};

/** status_axis_max() - the top of an axis for values up to @v: 1, 2 or 5 times a power of ten, >= @v * 1.1. */
double status_axis_max(double v);

/**
 * status_chart_write() - @c as an inline <svg> element: the plot's
 * background, the axes and their top and bottom values, a <polyline> per
 * run of values of each series (class "series", data-name its name), the
 * threshold as a dashed horizontal <line class="threshold">, a legend
 * with each series' last value. Lines are drawn crisp (no anti-aliasing),
 * so each pixel of a line is its colour.
 */
void status_chart_write(FILE *f, const struct status_chart *c);

/* --- the page ---------------------------------------------------------------------- */

/**
 * struct status_input - what one page shows.
 * @state: the committed state the daemon serves
 * @rings: per VIP {"points": N, "shares": {backend: share}}
 * @targets: the health checks
 * @target_count: how many
 * @samples: oldest first
 * @count: how many
 * @interval_s: seconds between samples (the page refreshes itself that often)
 * @attached: the data path's maps are there
 * @host: the host's name, for the title
 * @now_s: Unix time of the page
 * @pictures: {VIP: its ring's picture (status_ring_svg())} drawn ahead for
 *            @state's generation, or NULL; a VIP without one is drawn now
 */
struct status_input {
	const struct state *state;
	const json_t *rings;
	const struct health_target *targets;
	size_t target_count;
	const struct status_sample *samples;
	size_t count;
	__u32 interval_s;
	int attached;
	const char *host;
	__s64 now_s;
	const json_t *pictures;
};

/**
 * status_ring_svg() - @vp's ring picture (picture_write()) as an <svg>
 * element to put inline in HTML, malloc()ed in @out.
 * Return: 0, or -errno (nothing in @out).
 */
int status_ring_svg(const struct state_vip *vp, __u64 generation, char **out);

/**
 * status_render() - the page: a header, then per VIP its three charts, its
 * backends and its ring's picture.
 * Return: 0, or -errno when a ring could not be drawn (the page is whole,
 * the picture said missing) or writing failed (-EIO).
 */
int status_render(FILE *f, const struct status_input *in);

/**
 * status_drop_alerted() - does RinglbDropsRising count reason @name (its
 * reason=~ and reason!~ matchers, as Prometheus anchors them)? 1 or 0.
 */
int status_drop_alerted(const char *name);

#endif /* RINGLB_STATUS_H */
