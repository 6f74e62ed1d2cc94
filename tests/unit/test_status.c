// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of the status page's values and drawing (user/daemon/status.c)
 * without a browser: rates from two samples' counters, the axis' top, the
 * polyline points and the threshold line's y a chart draws for given
 * samples, gaps where a rate is missing, the ring buffer keeping the last
 * STATUS_SAMPLES_KEPT samples, samples made from kernel_stats()' model, the
 * drop reasons RinglbDropsRising counts, and a whole page for one VIP.
 * tests/suites/status.sh renders the page in Chromium and reads its pixels.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alerts.h"
#include "check.h"
#include "lb.h"
#include "state.h"
#include "status.h"

#define S 1000000000ull

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (; (text = strstr(text, what)); text++)
		n++;
	return n;
}

/* @c drawn, as a string to free. */
static char *draw(const struct status_chart *c)
{
	char *svg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&svg, &len);

	assert_non_null(f);
	status_chart_write(f, c);
	assert_int_equal(fclose(f), 0);
	return svg;
}

/* The points="..." of the @n-th polyline (from 0) of @svg, into @out. */
static void points_of(const char *svg, size_t n, char *out, size_t size)
{
	const char *at = svg, *end;

	*out = '\0';
	for (; (at = strstr(at, "<polyline")); at++)
		if (!n--)
			break;
	if (!at || !(at = strstr(at, "points=\"")))
		return;
	at += strlen("points=\"");
	end = strchr(at, '"');
	snprintf(out, size, "%.*s", (int)(end - at), at);
}

static void test_a_rate_is_the_counters_delta_over_the_seconds_between(void **unused)
{
	double r;

	(void)unused;
	r = status_rate(100, 300, 5 * S, 7 * S);
	check(r == 100, "200 packets in 2 s: got %g/s, want 100/s", r);
	r = status_rate(0, 1, 0, S / 4);
	check(r == 4, "1 in 0.25 s: got %g/s, want 4/s", r);
	check(isnan(status_rate(300, 100, 5 * S, 7 * S)), "a counter that went back has no rate");
	check(isnan(status_rate(100, 300, 5 * S, 5 * S)), "two samples at one time have no rate");
}

static void test_an_axis_tops_at_one_two_or_five_times_a_power_of_ten(void **unused)
{
	static const double cases[][2] = {
		{ 0, 1 }, { 1, 2 }, { 45, 50 }, { 4.6, 10 }, { 9, 10 }, { 100, 200 },
		{ 17300, 20000 }, { 0.3, 0.5 }, { NAN, 1 },
	};
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = status_axis_max(cases[i][0]);

		check(fabs(got - cases[i][1]) < 1e-9, "status_axis_max(%g) = %g, want %g",
		      cases[i][0], got, cases[i][1]);
	}
}

static void test_a_chart_draws_its_points_and_threshold_where_the_values_say(void **unused)
{
	/* 30 s of samples; the first has no rate (nothing before it). */
	static const __u64 times[] = { 0, 10 * S, 20 * S, 30 * S };
	const double values[] = { NAN, 0, 50, 100 };
	struct status_series s = { .name = "packets", .colour = "#1f77b4", .values = values };
	struct status_chart c = { .kind = "throughput", .title = "t", .unit = "/s",
				  .times_ns = times, .count = 4, .series = &s, .series_count = 1,
				  .threshold = 100, .threshold_label = "at 100" };
	char points[256];
	char *svg = draw(&c);

	(void)unused;
	/*
	 * x: the plot's 64 .. 356 spans 0 .. 30 s; y: its 174 .. 34 spans 0 ..
	 * 200/s (the top fits 100 and a tenth more: 200).
	 */
	points_of(svg, 0, points, sizeof(points));
	check(!strcmp(points, "161.3,174.0 258.7,139.0 356.0,104.0"),
	      "points: got '%s', want '161.3,174.0 258.7,139.0 356.0,104.0'", points);
	check(strstr(svg, "data-left-max=\"200\"") != NULL, "the axis tops at 200/s");
	check(strstr(svg, "<line class=\"threshold\" data-value=\"100\" x1=\"64\" x2=\"356\" "
			  "y1=\"104.0\" y2=\"104.0\"") != NULL,
	      "the threshold line at y 104 across the plot: %s", strstr(svg, "<line") ?: "none");
	check(strstr(svg, "fill=\"#f2f7fd\"") != NULL, "a throughput chart's plot has its colour");
	check(strstr(svg, "packets: <b>100</b>/s") != NULL, "the legend says the last value");
	check(strstr(svg, "<li class=\"threshold\"><span class=\"sw th\"></span>at 100</li>") != NULL,
	      "the legend says what the threshold is");
	free(svg);
}

static void test_a_missing_rate_breaks_the_line_and_a_fixed_axis_clips(void **unused)
{
	static const __u64 times[] = { 0, S, 2 * S, 3 * S, 4 * S };
	const double values[] = { 10, 20, NAN, 150, 30 };
	struct status_series s = { .name = "full", .colour = "#9467bd", .values = values };
	struct status_chart c = { .kind = "resources", .title = "t", .unit = "%",
				  .times_ns = times, .count = 5, .series = &s, .series_count = 1,
				  .left_max = 100, .threshold = 90, .threshold_label = "90" };
	char points[256];
	char *svg = draw(&c);

	(void)unused;
	check_eq(count(svg, "<polyline"), 2);
	points_of(svg, 0, points, sizeof(points));
	check(!strcmp(points, "64.0,160.0 137.0,146.0"), "first run: got '%s'", points);
	points_of(svg, 1, points, sizeof(points));
	/* 150 % past a fixed axis of 100 %: drawn at the top. */
	check(!strcmp(points, "283.0,34.0 356.0,132.0"), "second run: got '%s'", points);
	check(strstr(svg, "y1=\"48.0\"") != NULL, "90 %% of 140 px above 174: y 48");
	free(svg);
}

static void test_the_buffer_keeps_the_last_samples_oldest_first(void **unused)
{
	struct status_samples b;
	struct status_sample s, *copy = NULL;
	size_t i, n = 0;

	(void)unused;
	status_samples_init(&b);
	for (i = 0; i < STATUS_SAMPLES_KEPT + 5; i++) {
		assert_int_equal(status_sample_make(NULL, NULL, i * S, (__s64)i, &s), 0);
		status_samples_push(&b, &s);
		check(s.vips == NULL, "a pushed sample is taken over");
	}
	assert_int_equal(status_samples_copy(&b, &copy, &n), 0);
	check_eq(n, STATUS_SAMPLES_KEPT);
	check_eq(copy[0].at_ns, 5 * S);
	check_eq(copy[n - 1].at_ns, (STATUS_SAMPLES_KEPT + 4) * S);
	for (i = 1; i < n; i++)
		check(copy[i].at_ns == copy[i - 1].at_ns + S, "sample %zu follows %zu", i, i - 1);
	status_samples_copy_free(copy, n);
	status_samples_free(&b);
}

static void test_a_sample_takes_the_counters_metrics_renders(void **unused)
{
	json_t *stats = json_pack(
		"{s:[{s:s, s:I, s:{s:I}, s:[{s:I}, {s:I}]}], s:{s:{s:I}, s:{s:I}},"
		" s:I, s:I}",
		"vips", "vip", "198.18.0.100:80/tcp", "packets", (json_int_t)1234, "refused",
		"packets", (json_int_t)7, "backends", "new_flows", (json_int_t)10, "new_flows",
		(json_int_t)5, "reasons", "drop_no_backend", "packets", (json_int_t)42,
		"pass_not_vip", "packets", (json_int_t)3, "flow_table_entries", (json_int_t)9,
		"flow_table_size", (json_int_t)1000);
	json_t *rings = json_pack("{s:{s:I}}", "198.18.0.100:80/tcp", "points", (json_int_t)96);
	struct status_sample s;

	(void)unused;
	assert_non_null(stats);
	assert_int_equal(status_sample_make(stats, rings, 3 * S, 100, &s), 0);
	check(s.attached, "attached");
	check_eq(s.vip_count, 1);
	check(!strcmp(s.vips[0].vip, "198.18.0.100:80/tcp"), "vip %s", s.vips[0].vip);
	check_eq(s.vips[0].packets, 1234);
	check_eq(s.vips[0].new_flows, 15);
	check_eq(s.vips[0].refused, 7);
	check_eq(s.vips[0].points, 96);
	check_eq(s.reasons[LB_REASON_DROP_NO_BACKEND], 42);
	check_eq(s.reasons[LB_REASON_PASS_NOT_VIP], 3);
	check_eq(s.flow_entries, 9);
	check_eq(s.flow_capacity, 1000);
	status_sample_free(&s);
	/* Not attached: the VIPs of the ring model, their points only. */
	assert_int_equal(status_sample_make(NULL, rings, 4 * S, 101, &s), 0);
	check(!s.attached && s.vip_count == 1 && s.vips[0].points == 96 && s.vips[0].packets == 0,
	      "detached: %d, %zu VIPs", s.attached, s.vip_count);
	status_sample_free(&s);
	json_decref(stats);
	json_decref(rings);
}

static void test_the_drop_alert_counts_the_reasons_its_matchers_name(void **unused)
{
	__u32 r, counted = 0;

	(void)unused;
	check(status_drop_alerted("drop_no_backend"), "drop_no_backend is alerted on");
	check(!status_drop_alerted("drop_source_denied"), "source refusals are not (%s)",
	      ALERT_DROPS_EXCEPT);
	check(!status_drop_alerted("pass_not_vip"), "a pass is not a drop");
	check(!status_drop_alerted("xdrop_no_backend"), "matchers are anchored");
	for (r = 0; r < LB_REASON_COUNT; r++)
		counted += status_drop_alerted(lb_reasons[r].name);
	check(counted >= 10, "%u reasons alerted on", counted);
}

static void test_a_page_has_each_chart_the_backends_and_the_ring(void **unused)
{
	struct state st;
	struct vip_spec spec;
	struct state_vip *v = NULL;
	struct state_backend b = { .weight = 2, .mac = { 2, 0, 0, 0, 0, 1 } };
	struct status_sample samples[3];
	json_t *rings = json_pack("{s:{s:I, s:{s:f}}}", "198.18.0.100:80/tcp", "points",
				  (json_int_t)200, "shares", "b1", 1.0);
	struct status_input in = { .state = &st, .rings = rings, .samples = samples, .count = 3,
				   .interval_s = 10, .attached = 1, .host = "lb<1>", .now_s = 0 };
	const char *why = NULL;
	char *page = NULL;
	size_t len = 0, i;
	FILE *f;
	int err;

	(void)unused;
	state_init(&st);
	assert_int_equal(vip_parse("198.18.0.100:80/tcp", &spec, &why), 0);
	assert_int_equal(state_vip_add(&st, &spec, 100, &v), 0);
	snprintf(b.name, sizeof(b.name), "b1");
	assert_int_equal(addr_parse("198.18.0.11", &b.addr, &why), 0);
	assert_int_equal(state_backend_add(&st, &st.fleet.vips[0], &b), 0);
	for (i = 0; i < 3; i++) {
		memset(&samples[i], 0, sizeof(samples[i]));
		samples[i].at_ns = i * 10 * S;
		samples[i].attached = 1;
		samples[i].flow_capacity = 100;
		samples[i].flow_entries = 50;
		samples[i].reasons[LB_REASON_DROP_NO_BACKEND] = i * 100;
		samples[i].vip_count = 1;
		samples[i].vips = calloc(1, sizeof(*samples[i].vips));
		assert_non_null(samples[i].vips);
		snprintf(samples[i].vips[0].vip, ADDR_TEXT_MAX, "198.18.0.100:80/tcp");
		samples[i].vips[0].packets = i * 1000;
		samples[i].vips[0].points = 200;
	}
	f = open_memstream(&page, &len);
	assert_non_null(f);
	err = status_render(f, &in);
	assert_int_equal(fclose(f), 0);
	check(err == 0, "status_render: %d", err);
	check(!strncmp(page, "<!DOCTYPE html>", 15) && strstr(page, "</body></html>\n"),
	      "a whole document");
	check(strstr(page, "<title>ringlb on lb&lt;1&gt;</title>") != NULL, "the host, escaped");
	check(strstr(page, "content=\"10\"") != NULL, "it refreshes every sample interval");
	check_eq(count(page, "<figure class=\"chart throughput\">"), 1);
	check_eq(count(page, "<figure class=\"chart drops\">"), 1);
	check_eq(count(page, "<figure class=\"chart resources\">"), 1);
	check(strstr(page, "packets: <b>100</b>/s") != NULL, "1,000 packets in 10 s: 100/s");
	check(strstr(page, "drop_no_backend: <b>10</b>/s") != NULL, "100 drops in 10 s: 10/s");
	check(strstr(page, "flow table full (whole host): <b>50</b>%") != NULL, "50 of 100 entries");
	check(strstr(page, "<tr><td>b1</td><td>198.18.0.11</td><td>active</td><td>up</td>"
			   "<td class=\"n\">2</td><td class=\"n\">100.00%</td></tr>") != NULL,
	      "the backend's row: %.160s", strstr(page, "<tr><td>b1") ?: "none");
	check(strstr(page, "<div class=\"ring\"><svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL,
	      "the ring's picture inline, without its XML declaration");
	check(!strstr(page, "<?xml") && !strstr(page, "<script") && !strstr(page, "href="),
	      "nothing a browser would run or fetch");
	free(page);
	/* A picture drawn ahead for this generation is the one shown. */
	in.pictures = json_pack("{s:s}", "198.18.0.100:80/tcp", "<svg id=\"ahead\"></svg>");
	assert_non_null(in.pictures);
	f = open_memstream(&page, &len);
	assert_non_null(f);
	assert_int_equal(status_render(f, &in), 0);
	assert_int_equal(fclose(f), 0);
	check(strstr(page, "<div class=\"ring\"><svg id=\"ahead\"></svg></div>") != NULL &&
	      !strstr(page, "<title>ringlb: the ring of VIP"), "the picture drawn ahead, not drawn again");
	json_decref((json_t *)in.pictures);
	for (i = 0; i < 3; i++)
		free(samples[i].vips);
	free(page);
	json_decref(rings);
	state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_rate_is_the_counters_delta_over_the_seconds_between),
		cmocka_unit_test(test_an_axis_tops_at_one_two_or_five_times_a_power_of_ten),
		cmocka_unit_test(test_a_chart_draws_its_points_and_threshold_where_the_values_say),
		cmocka_unit_test(test_a_missing_rate_breaks_the_line_and_a_fixed_axis_clips),
		cmocka_unit_test(test_the_buffer_keeps_the_last_samples_oldest_first),
		cmocka_unit_test(test_a_sample_takes_the_counters_metrics_renders),
		cmocka_unit_test(test_the_drop_alert_counts_the_reasons_its_matchers_name),
		cmocka_unit_test(test_a_page_has_each_chart_the_backends_and_the_ring),
	};

	return tests_run("test_status", tests);
}
