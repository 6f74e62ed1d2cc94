// SPDX-License-Identifier: GPL-2.0-only
/*
 * The status page's values and pictures (status.h): samples made from the
 * model kernel_stats() gives /metrics, the ring buffer that keeps them,
 * rates from their deltas, and the HTML with its inline SVG charts. The
 * thresholds come from build/alerts.h, which the build generates from the
 * shipped rules (scripts/prometheus/thresholds.sh), so a line on the page
 * is where the alert fires. Nothing here takes the daemon's lock or reads
 * a map: samples.c hands it copies.
 */
#include "status.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alerts.h"
#include "lb.h"
#include "picture.h"

/* --- samples ------------------------------------------------------------------------ */

static __u64 num(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (__u64)v : 0;
}

int status_sample_make(const json_t *stats, const json_t *rings, __u64 at_ns, __s64 wall_s,
		       struct status_sample *out)
{
	const json_t *vips = json_object_get(stats, "vips"), *v, *b, *ring;
	const char *spec;
	size_t i, j, n;
	__u32 r;

	memset(out, 0, sizeof(*out));
	out->at_ns = at_ns;
	out->wall_s = wall_s;
	out->attached = stats != NULL;
	/* The VIPs the stats name (the state's), else those of the ring model. */
	n = stats ? json_array_size(vips) : json_object_size(rings);
	out->vips = calloc(n ? n : 1, sizeof(*out->vips));
	if (!out->vips)
		return -ENOMEM;
	if (stats) {
		json_array_foreach(vips, i, v) {
			struct status_vip_sample *s = &out->vips[out->vip_count++];

			snprintf(s->vip, sizeof(s->vip), "%s",
				 json_string_value(json_object_get(v, "vip")) ?: "?");
			s->packets = num(v, "packets");
			s->refused = num(json_object_get(v, "refused"), "packets");
			json_array_foreach(json_object_get(v, "backends"), j, b)
				s->new_flows += num(b, "new_flows");
			s->points = num(json_object_get(rings, s->vip), "points");
		}
		for (r = 0; r < LB_REASON_COUNT; r++)
			out->reasons[r] = num(json_object_get(json_object_get(stats, "reasons"),
							      lb_reasons[r].name), "packets");
		out->flow_entries = num(stats, "flow_table_entries");
		out->flow_capacity = num(stats, "flow_table_size");
		return 0;
	}
	json_object_foreach((json_t *)rings, spec, ring) {
		struct status_vip_sample *s = &out->vips[out->vip_count++];

		snprintf(s->vip, sizeof(s->vip), "%s", spec);
		s->points = num(ring, "points");
	}
	return 0;
}

void status_sample_free(struct status_sample *s)
{
	free(s->vips);
	s->vips = NULL;
	s->vip_count = 0;
}

void status_samples_init(struct status_samples *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
}

void status_samples_free(struct status_samples *b)
{
	size_t i;

	for (i = 0; i < STATUS_SAMPLES_KEPT; i++)
		status_sample_free(&b->ring[i]);
	pthread_mutex_destroy(&b->lock);
}

void status_samples_push(struct status_samples *b, struct status_sample *s)
{
	struct status_sample old;

	pthread_mutex_lock(&b->lock);
	old = b->ring[b->next];
	b->ring[b->next] = *s;
	b->next = (b->next + 1) % STATUS_SAMPLES_KEPT;
	if (b->count < STATUS_SAMPLES_KEPT)
		b->count++;
	pthread_mutex_unlock(&b->lock);
	/* The oldest, freed outside the lock. */
	status_sample_free(&old);
	memset(s, 0, sizeof(*s));
}

void status_samples_copy_free(struct status_sample *s, size_t count)
{
	size_t i;

	for (i = 0; s && i < count; i++)
		status_sample_free(&s[i]);
	free(s);
}

int status_samples_copy(struct status_samples *b, struct status_sample **out, size_t *count)
{
	struct status_sample *s;
	size_t i, n;
	int err = 0;

	pthread_mutex_lock(&b->lock);
	n = b->count;
	s = calloc(n ? n : 1, sizeof(*s));
	for (i = 0; s && i < n; i++) {
		const struct status_sample *from =
			&b->ring[(b->next + STATUS_SAMPLES_KEPT - n + i) % STATUS_SAMPLES_KEPT];

		s[i] = *from;
		s[i].vips = malloc((from->vip_count ? from->vip_count : 1) * sizeof(*s[i].vips));
		if (!s[i].vips) {
			s[i].vip_count = 0;
			err = -ENOMEM;
			break;
		}
		memcpy(s[i].vips, from->vips, from->vip_count * sizeof(*s[i].vips));
	}
	pthread_mutex_unlock(&b->lock);
	if (!s || err) {
		status_samples_copy_free(s, n);
		return -ENOMEM;
	}
	*out = s;
	*count = n;
	return 0;
}

double status_rate(__u64 then, __u64 now, __u64 then_ns, __u64 now_ns)
{
	if (now_ns < then_ns + 1000000 || now < then)
		return NAN;
	return (double)(now - then) * 1e9 / (double)(now_ns - then_ns);
}

/* --- charts ------------------------------------------------------------------------- */

static const char *const plot_fill[] = { "throughput", "#f2f7fd", "drops", "#fdf5ee",
					 "resources", "#f6f2fb" };

double status_axis_max(double v)
{
	static const double steps[] = { 1, 2, 5 };
	double p, want = v * 1.1;
	size_t k;

	if (!(want > 0) || !isfinite(want))
		return 1;
	for (p = pow(10, floor(log10(want))); ; p *= 10)
		for (k = 0; k < 3; k++)
			if (steps[k] * p >= want * (1 - 1e-12))
				return steps[k] * p;
}

/* A value as a label: 3 significant digits, k and M past a thousand. */
static void value_text(double v, char buf[32])
{
	if (isnan(v))
		snprintf(buf, 32, "-");
	else if (fabs(v) >= 1e6)
		snprintf(buf, 32, "%.3gM", v / 1e6);
	else if (fabs(v) >= 1e3)
		snprintf(buf, 32, "%.3gk", v / 1e3);
	else
		snprintf(buf, 32, "%.3g", v);
}

static void html_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* A span of time as "N s", "N min" or "N h". */
static void span_text(double s, char buf[32])
{
	if (s < 120)
		snprintf(buf, 32, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, 32, "%.0f min", s / 60);
	else
		snprintf(buf, 32, "%.1f h", s / 3600);
}

static double chart_x(const struct status_chart *c, size_t i)
{
	__u64 t0 = c->times_ns[0], t1 = c->times_ns[c->count - 1];

	if (t1 <= t0)
		return STATUS_PLOT_RIGHT;
	return STATUS_PLOT_LEFT + (double)(c->times_ns[i] - t0) / (double)(t1 - t0) *
					  (STATUS_PLOT_RIGHT - STATUS_PLOT_LEFT);
}

static double chart_y(double v, double max)
{
	return STATUS_PLOT_BOTTOM - v / max * (STATUS_PLOT_BOTTOM - STATUS_PLOT_TOP);
}

/* The largest value of the series on one side. */
static double series_max(const struct status_chart *c, int right)
{
	double m = 0;
	size_t s, i;

	for (s = 0; s < c->series_count; s++)
		for (i = 0; c->series[s].right == right && i < c->count; i++)
			if (c->series[s].values[i] > m)
				m = c->series[s].values[i];
	return m;
}

/* Each run of values without a gap as one polyline. */
static void series_write(FILE *f, const struct status_chart *c, const struct status_series *s,
			 double max)
{
	size_t i, run = 0;

	for (i = 0; i <= c->count; i++) {
		double v = i < c->count ? s->values[i] : NAN;

		if (isnan(v)) {
			if (run)
				fputs("\"/>\n", f);
			run = 0;
			continue;
		}
		if (!run++) {
			fprintf(f, "<polyline class=\"series\" data-name=\"");
			html_text(f, s->name);
			fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
				   "shape-rendering=\"crispEdges\" points=\"", s->colour);
		} else {
			fputc(' ', f);
		}
		/* A value past the axis (a fixed one) is drawn at its top. */
		fprintf(f, "%.1f,%.1f", chart_x(c, i), chart_y(v > max ? max : v, max));
	}
}

/* The last value of a series, NaN when it has none. */
static double last_value(const struct status_chart *c, const struct status_series *s)
{
	size_t i;

	for (i = c->count; i-- > 0;)
		if (!isnan(s->values[i]))
			return s->values[i];
	return NAN;
}

void status_chart_write(FILE *f, const struct status_chart *c)
{
	double left = c->left_max, right = status_axis_max(series_max(c, 1));
	const char *fill = "#ffffff";
	char a[32], b[32];
	size_t k, s;

	if (!(left > 0))
		left = status_axis_max(fmax(series_max(c, 0), isnan(c->threshold) ? 0 :
								       c->threshold));
	for (k = 0; k < sizeof(plot_fill) / sizeof(plot_fill[0]); k += 2)
		if (!strcmp(plot_fill[k], c->kind))
			fill = plot_fill[k + 1];
	fprintf(f, "<figure class=\"chart %s\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
		   "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-kind=\"%s\" "
		   "data-left-max=\"%.17g\" data-right-max=\"%.17g\">\n", c->kind,
		STATUS_CHART_WIDTH, STATUS_CHART_HEIGHT, STATUS_CHART_WIDTH, STATUS_CHART_HEIGHT,
		c->kind, left, right);
	fprintf(f, "<text x=\"%d\" y=\"20\" class=\"t\">", STATUS_PLOT_LEFT);
	html_text(f, c->title);
	fputs("</text>\n", f);
	fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
		   "shape-rendering=\"crispEdges\"/>\n", STATUS_PLOT_LEFT, STATUS_PLOT_TOP,
		STATUS_PLOT_RIGHT - STATUS_PLOT_LEFT, STATUS_PLOT_BOTTOM - STATUS_PLOT_TOP, fill);
	value_text(left, a);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s%s</text>\n"
		   "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", STATUS_PLOT_LEFT - 6,
		STATUS_PLOT_TOP + 5, a, c->unit, STATUS_PLOT_LEFT - 6, STATUS_PLOT_BOTTOM);
	for (s = 0; s < c->series_count && !c->series[s].right; s++)
		;
	if (s < c->series_count) {
		value_text(right, a);
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n<text x=\"%d\" y=\"%d\">0</text>\n",
			STATUS_PLOT_RIGHT + 6, STATUS_PLOT_TOP + 5, a, STATUS_PLOT_RIGHT + 6,
			STATUS_PLOT_BOTTOM);
	}
	span_text(c->count > 1 ? (double)(c->times_ns[c->count - 1] - c->times_ns[0]) / 1e9 : 0,
		  b);
	fprintf(f, "<text x=\"%d\" y=\"%d\">\u2212%s</text>\n<text x=\"%d\" y=\"%d\" "
		   "text-anchor=\"end\">now</text>\n", STATUS_PLOT_LEFT, STATUS_PLOT_BOTTOM + 18, b,
		STATUS_PLOT_RIGHT, STATUS_PLOT_BOTTOM + 18);
	if (!c->count || !c->series_count)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			(STATUS_PLOT_LEFT + STATUS_PLOT_RIGHT) / 2,
			(STATUS_PLOT_TOP + STATUS_PLOT_BOTTOM) / 2 + 20,
			!c->count ? "no samples yet" : "none in the samples kept");
	for (s = 0; c->count && s < c->series_count; s++)
		series_write(f, c, &c->series[s], c->series[s].right ? right : left);
	if (!isnan(c->threshold)) {
		double y = chart_y(c->threshold, left);

		value_text(c->threshold, a);
		fprintf(f, "<line class=\"threshold\" data-value=\"%.17g\" x1=\"%d\" x2=\"%d\" "
			   "y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"2\" "
			   "stroke-dasharray=\"8 4\" shape-rendering=\"crispEdges\"/>\n"
			   "<text x=\"%d\" y=\"%.1f\" class=\"th\">%s%s</text>\n", c->threshold,
			STATUS_PLOT_LEFT, STATUS_PLOT_RIGHT, y, y, STATUS_PLOT_RIGHT + 6, y + 4, a,
			c->unit);
	}
	fputs("</svg>\n<figcaption><ul>\n", f);
	for (s = 0; s < c->series_count; s++) {
		value_text(last_value(c, &c->series[s]), a);
		fprintf(f, "<li data-name=\"");
		html_text(f, c->series[s].name);
		fprintf(f, "\" data-colour=\"%s\"><span class=\"sw\" style=\"background:%s\"></span>",
			c->series[s].colour, c->series[s].colour);
		html_text(f, c->series[s].name);
		fprintf(f, ": <b>%s</b>%s%s", a, c->series[s].right ? "" : c->unit,
			c->series[s].right ? " (right axis)" : "");
		if (c->series[s].note) {
			fputs(" <i>", f);
			html_text(f, c->series[s].note);
			fputs("</i>", f);
		}
		fputs("</li>\n", f);
	}
	if (!isnan(c->threshold)) {
		fputs("<li class=\"threshold\"><span class=\"sw th\"></span>", f);
		html_text(f, c->threshold_label);
		fputs("</li>\n", f);
	}
	fputs("</ul></figcaption></figure>\n", f);
}

/* --- the page ---------------------------------------------------------------------- */

/* Colours of the throughput and resources lines, and the drop reasons' palette. */
#define COLOUR_PACKETS "#1f77b4"
#define COLOUR_NEW_FLOWS "#2ca02c"
#define COLOUR_OCCUPANCY "#9467bd"
#define COLOUR_POINTS "#8c564b"
#define COLOUR_REFUSED "#7f7f7f"
static const char *const drop_palette[] = {
	"#ff7f0e", "#e377c2", "#17becf", "#bcbd22", "#393b79",
	"#ad494a", "#637939", "#843c39", "#7b4173", "#3182bd",
};

int status_drop_alerted(const char *name)
{
	regex_t in, out;
	int yes;

	/* Prometheus anchors a matcher's regular expression at both ends. */
	if (regcomp(&in, "^(" ALERT_DROPS_REASONS ")$", REG_EXTENDED | REG_NOSUB))
		return 0;
	if (regcomp(&out, "^(" ALERT_DROPS_EXCEPT ")$", REG_EXTENDED | REG_NOSUB)) {
		regfree(&in);
		return 0;
	}
	yes = !regexec(&in, name, 0, NULL, 0) && regexec(&out, name, 0, NULL, 0);
	regfree(&in);
	regfree(&out);
	return yes;
}

/* The VIP's entry in sample @s, or NULL. */
static const struct status_vip_sample *vip_in(const struct status_sample *s, const char *spec)
{
	size_t i;

	for (i = 0; i < s->vip_count; i++)
		if (!strcmp(s->vips[i].vip, spec))
			return &s->vips[i];
	return NULL;
}

/* What one VIP's charts draw, one value per sample (NaN: none). */
struct vip_series {
	double *packets, *new_flows, *refused, *occupancy, *points;
	double *drops[LB_REASON_COUNT];
	__u64 *times;
};

static void vip_series_free(struct vip_series *v)
{
	__u32 r;

	free(v->packets);
	free(v->new_flows);
	free(v->refused);
	free(v->occupancy);
	free(v->points);
	for (r = 0; r < LB_REASON_COUNT; r++)
		free(v->drops[r]);
	free(v->times);
}

static int vip_series_make(const struct status_input *in, const char *spec, struct vip_series *v)
{
	size_t n = in->count ? in->count : 1, i;
	__u32 r;

	memset(v, 0, sizeof(*v));
	v->packets = malloc(n * sizeof(double));
	v->new_flows = malloc(n * sizeof(double));
	v->refused = malloc(n * sizeof(double));
	v->occupancy = malloc(n * sizeof(double));
	v->points = malloc(n * sizeof(double));
	v->times = malloc(n * sizeof(__u64));
	for (r = 0; r < LB_REASON_COUNT; r++)
		v->drops[r] = malloc(n * sizeof(double));
	for (r = 0; r < LB_REASON_COUNT && v->drops[r]; r++)
		;
	if (!v->packets || !v->new_flows || !v->refused || !v->occupancy || !v->points ||
	    !v->times || r < LB_REASON_COUNT) {
		vip_series_free(v);
		return -ENOMEM;
	}
	for (i = 0; i < in->count; i++) {
		const struct status_sample *s = &in->samples[i], *p = i ? &in->samples[i - 1] : NULL;
		const struct status_vip_sample *now = vip_in(s, spec);
		const struct status_vip_sample *then = p ? vip_in(p, spec) : NULL;
		int rates = p && p->attached && s->attached;

		v->times[i] = s->at_ns;
		v->packets[i] = v->new_flows[i] = v->refused[i] = NAN;
		if (rates && now && then) {
			v->packets[i] = status_rate(then->packets, now->packets, p->at_ns, s->at_ns);
			v->new_flows[i] = status_rate(then->new_flows, now->new_flows, p->at_ns,
						      s->at_ns);
			v->refused[i] = status_rate(then->refused, now->refused, p->at_ns, s->at_ns);
		}
		for (r = 0; r < LB_REASON_COUNT; r++)
			v->drops[r][i] = rates ? status_rate(p->reasons[r], s->reasons[r], p->at_ns,
							     s->at_ns) : NAN;
		v->occupancy[i] = s->attached && s->flow_capacity ?
				  100.0 * (double)s->flow_entries / (double)s->flow_capacity : NAN;
		v->points[i] = now ? (double)now->points : NAN;
	}
	return 0;
}

/* Did any value of @values (@n of them) exceed 0? */
static int any_positive(const double *values, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (values[i] > 0)
			return 1;
	return 0;
}

static void vip_charts(FILE *f, const struct status_input *in, const struct state_vip *vp,
		       const struct vip_series *v)
{
	struct status_series s[STATUS_SERIES_MAX];
	struct status_chart c = { .times_ns = v->times, .count = in->count, .series = s };
	char label[160];
	size_t n = 0;
	__u32 r, drop = 0;

	/* Packets last, drawn over new flows where they meet (at 0). */
	s[0] = (struct status_series){ .name = "new flows", .colour = COLOUR_NEW_FLOWS,
				       .values = v->new_flows };
	s[1] = (struct status_series){ .name = "packets", .colour = COLOUR_PACKETS,
				       .values = v->packets };
	snprintf(label, sizeof(label), "RinglbBackendImbalance judges a VIP only above %g "
		 "packets/s", (double)ALERT_IMBALANCE_MIN_PACKETS_PER_S);
	c.kind = "throughput";
	c.title = "Throughput: packets and new flows a second";
	c.unit = "/s";
	c.series_count = 2;
	c.threshold = ALERT_IMBALANCE_MIN_PACKETS_PER_S;
	c.threshold_label = label;
	status_chart_write(f, &c);

	/* Every drop reason that counted in the window, in the colour of its place in the list. */
	for (r = 0; r < LB_REASON_COUNT; r++) {
		if (lb_reasons[r].verdict != LB_VERDICT_DROP)
			continue;
		if (any_positive(v->drops[r], in->count) && n < STATUS_SERIES_MAX - 1)
			s[n++] = (struct status_series){
				.name = lb_reasons[r].name, .values = v->drops[r],
				.colour = drop_palette[drop % (sizeof(drop_palette) /
							       sizeof(drop_palette[0]))],
				.note = status_drop_alerted(lb_reasons[r].name) ? NULL :
					"(not alerted on)" };
		drop++;
	}
	if (vp->source_count || any_positive(v->refused, in->count))
		s[n++] = (struct status_series){ .name = "refused by this VIP's source ranges",
						 .colour = COLOUR_REFUSED, .values = v->refused };
	snprintf(label, sizeof(label), "RinglbDropsRising: one reason above %g frames/s "
		 "(reasons %s but %s)", (double)ALERT_DROPS_PER_S, ALERT_DROPS_REASONS,
		 ALERT_DROPS_EXCEPT);
	c.kind = "drops";
	c.title = "Drops by reason, frames/s (whole host)";
	c.series_count = n;
	c.threshold = ALERT_DROPS_PER_S;
	status_chart_write(f, &c);

	s[0] = (struct status_series){ .name = "flow table full (whole host)",
				       .colour = COLOUR_OCCUPANCY, .values = v->occupancy };
	s[1] = (struct status_series){ .name = "ring points", .colour = COLOUR_POINTS,
				       .values = v->points, .right = 1 };
	snprintf(label, sizeof(label), "RinglbFlowTableFull: above %g%% full",
		 100 * (double)ALERT_FLOW_TABLE_RATIO);
	c.kind = "resources";
	c.title = "Resources: flow-table occupancy, ring points";
	c.unit = "%";
	c.series_count = 2;
	c.left_max = 100;
	c.threshold = 100 * (double)ALERT_FLOW_TABLE_RATIO;
	status_chart_write(f, &c);
}

/* A backend's health: the committed verdict and what its checks last said. */
static void backend_health(FILE *f, const struct status_input *in, const struct state_vip *vp,
			   const struct state_backend *b)
{
	const struct state_check *chk = b->check_set ? &b->check : &vp->check;
	size_t i;

	if (b->down)
		fputs(b->held ? "down, held" : "down", f);
	else
		fputs(chk->kind == STATE_CHECK_NONE || b->draining || b->retired ? "unchecked" : "up",
		      f);
	for (i = 0; i < in->target_count; i++) {
		const struct health_target *t = &in->targets[i];

		if (!vip_equal(&t->vip, &vp->spec) || t->cookie != b->cookie)
			continue;
		if (t->fail_run) {
			fprintf(f, " <i>(%u failed in a row: ", t->fail_run);
			html_text(f, t->last);
			fputs(")</i>", f);
		} else if (t->ok_total) {
			fprintf(f, " <i>(%u passed in a row)</i>", t->ok_run);
		}
	}
}

static void vip_backends(FILE *f, const struct status_input *in, const struct state_vip *vp,
			 const char *spec)
{
	const json_t *shares = json_object_get(json_object_get(in->rings, spec), "shares");
	char addr[ADDR_TEXT_MAX];
	size_t j;

	fputs("<table class=\"backends\"><tr><th>backend</th><th>address</th><th>state</th>"
	      "<th>health</th><th>weight</th><th>share</th></tr>\n", f);
	for (j = 0; j < vp->backend_count; j++) {
		const struct state_backend *b = &vp->backends[j];

		addr_format(&b->addr, addr);
		fputs("<tr><td>", f);
		html_text(f, b->name);
		fprintf(f, "</td><td>%s</td><td>%s</td><td>", addr, state_backend_state(b));
		backend_health(f, in, vp, b);
		fprintf(f, "</td><td class=\"n\">%u</td><td class=\"n\">%.2f%%</td></tr>\n",
			b->weight, 100 * json_number_value(json_object_get(shares, b->name)));
	}
	if (!vp->backend_count)
		fputs("<tr><td colspan=\"6\">no backends: every new flow is dropped</td></tr>\n", f);
	fputs("</table>\n", f);
}

int status_ring_svg(const struct state_vip *vp, __u64 generation, char **out)
{
	char *svg = NULL, *at;
	size_t len = 0;
	FILE *m = open_memstream(&svg, &len);
	int err;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	err = picture_write(NULL, vp, generation, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (err) {
		free(svg);
		return err;
	}
	/* Inline in HTML: no XML declaration. */
	at = strncmp(svg, "<?xml", 5) ? svg : strchr(svg, '\n');
	if (at && at != svg)
		memmove(svg, at + 1, strlen(at + 1) + 1);
	*out = svg;
	return 0;
}

/* The ring's picture: the one drawn ahead for this generation, else drawn now. */
static int vip_ring(FILE *f, const struct status_input *in, const struct state_vip *vp,
		    const char *spec)
{
	const char *ahead = json_string_value(json_object_get(in->pictures, spec));
	char *svg;
	int err;

	if (ahead) {
		fprintf(f, "<div class=\"ring\">%s</div>\n", ahead);
		return 0;
	}
	err = status_ring_svg(vp, in->state->fleet.generation, &svg);
	if (err) {
		fprintf(f, "<p>The ring cannot be drawn: %s.</p>\n", strerror(-err));
		return err;
	}
	fprintf(f, "<div class=\"ring\">%s</div>\n", svg);
	free(svg);
	return 0;
}

static const char page_style[] =
	"body{font-family:'DejaVu Sans','Liberation Sans',Arial,sans-serif;margin:16px;"
	"color:#1a1a1a;background:#fff}"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:19px;margin:18px 0 2px}"
	"p.sub{margin:0 0 8px;color:#555;font-size:14px}"
	"section.vip{border-top:2px solid #ccc;margin-top:12px}"
	".charts{display:flex;flex-wrap:wrap;gap:8px}"
	"figure.chart{margin:0;width:420px}figure.chart svg{display:block;font-size:12px}"
	"figure.chart text.t{font-size:13px;font-weight:bold}"
	"figure.chart text.th{fill:#d62728}"
	"figcaption ul{list-style:none;margin:0;padding:0 0 0 8px;font-size:12px}"
	".sw{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle}"
	".sw.th{background:repeating-linear-gradient(90deg,#d62728 0 8px,transparent 8px 12px)}"
	".below{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start;margin-top:8px}"
	"table.backends{border-collapse:collapse;font-size:13px}"
	"table.backends th,table.backends td{border-bottom:1px solid #ddd;padding:3px 8px;"
	"text-align:left}table.backends td.n{text-align:right}"
	".ring svg{width:520px;height:350px}";

int status_render(FILE *f, const struct status_input *in)
{
	const struct state *s = in->state;
	char spec[ADDR_TEXT_MAX], span[32], when[32];
	struct tm tm;
	time_t now = (time_t)in->now_s;
	size_t i;
	int err = 0, e;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	span_text(in->count > 1 ? (double)(in->samples[in->count - 1].at_ns -
					   in->samples[0].at_ns) / 1e9 : 0, span);
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"refresh\" content=\"%u\">\n<title>ringlb on ",
		in->interval_s);
	html_text(f, in->host);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>ringlb on ", page_style);
	html_text(f, in->host);
	fprintf(f, "</h1>\n<p class=\"sub\">%s \u00b7 generation %llu \u00b7 %zu VIP%s \u00b7 "
		   "%s \u00b7 a sample every %u s, %zu kept (the last %s; at most %u) \u00b7 "
		   "refreshed every %u s</p>\n", when, (unsigned long long)s->fleet.generation,
		s->fleet.vip_count, s->fleet.vip_count == 1 ? "" : "s",
		in->attached ? "data path attached" : "<b>no data path attached</b>",
		in->interval_s, in->count, span, STATUS_SAMPLES_KEPT, in->interval_s);
	if (!s->fleet.vip_count)
		fputs("<p>No VIP is configured: <code>ringlb vip add</code>.</p>\n", f);
	for (i = 0; i < s->fleet.vip_count; i++) {
		const struct state_vip *vp = &s->fleet.vips[i];
		struct vip_series v;

		vip_format(&vp->spec, spec);
		fprintf(f, "<section class=\"vip\" data-vip=\"%s\">\n<h2>VIP %s</h2>\n"
			   "<p class=\"sub\">forward %s \u00b7 %s%s</p>\n<div class=\"charts\">\n",
			spec, spec, state_forward_name(vp->forward),
			vp->stateless ? "stateless" : "flows pinned",
			state_vip_fails_open(vp) ? " \u00b7 <b>fails open</b>: every checked "
						   "backend is down, it serves its last healthy set" :
						   "");
		e = vip_series_make(in, spec, &v);
		if (e) {
			fputs("</div></section></body></html>\n", f);
			return e;
		}
		vip_charts(f, in, vp, &v);
		vip_series_free(&v);
		fputs("</div>\n<div class=\"below\">\n", f);
		vip_backends(f, in, vp, spec);
		e = vip_ring(f, in, vp, spec);
		err = err ?: e;
		fputs("</div>\n</section>\n", f);
	}
	fputs("</body></html>\n", f);
	if (fflush(f) || ferror(f))
		return -EIO;
	return err;
}
