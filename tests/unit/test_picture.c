// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of the ring picture (user/picture.c) as far as it can be
 * read without a browser: a complete SVG document in every case (one ring,
 * a plan, an empty ring, rings drawn arc by arc and in sectors), a colour of
 * its own for every backend (past the palette too), no arc for a draining
 * or down backend and a mark saying why, a bounded size for the largest
 * ring. tests/picture.sh renders the pictures and counts their pixels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "picture.h"
#include "ring.h"
#include "state.h"

/* A VIP with @n backends b1 .. b@n of weight 1 and @vnodes points per weight. */
static struct state_vip *vip_make(struct state *s, size_t n, __u32 vnodes)
{
	struct vip_spec spec;
	struct state_vip *v = NULL;
	const char *why = NULL;
	size_t i;

	state_init(s);
	assert_int_equal(vip_parse("198.18.0.100:80/tcp", &spec, &why), 0);
	assert_int_equal(state_vip_add(s, &spec, vnodes, &v), 0);
	for (i = 0; i < n; i++) {
		struct state_backend b = { .weight = 1, .mac = { 2, 0, 0, 0, 0, (__u8)(i + 1) } };

		snprintf(b.name, sizeof(b.name), "b%zu", i + 1);
		assert_int_equal(addr_parse("198.18.0.11", &b.addr, &why), 0);
		assert_int_equal(state_backend_add(s, &s->fleet.vips[0], &b), 0);
	}
	return &s->fleet.vips[0];
}

/* The picture of @after (a plan from @before), as a string to free. */
static char *draw(const struct state_vip *before, const struct state_vip *after, size_t *len)
{
	char *svg = NULL;
	FILE *f = open_memstream(&svg, len);
	int err;

	assert_non_null(f);
	err = picture_write(before, after, 7, f);
	fclose(f);
	check(err == 0, "picture_write: %s", strerror(-err));
	check(*len > 100 && strncmp(svg, "<?xml", 5) == 0 && strcmp(svg + *len - 7, "</svg>\n") == 0,
	      "a whole document: %zu bytes, ending '%s'", *len, *len > 7 ? svg + *len - 7 : svg);
	return svg;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (; (text = strstr(text, what)); text++)
		n++;
	return n;
}

/* The fill of backend @name's swatch in the legend, or "" when it has none. */
static void swatch_of(const char *svg, const char *name, char fill[16])
{
	char key[96];
	const char *at;

	snprintf(key, sizeof(key), "data-name=\"%s\"/>", name);
	*fill = '\0';
	for (at = strstr(svg, key); at && at > svg && strncmp(at, "<rect", 5); at--)
		;
	if (at && (at = strstr(at, "fill=\"")))
		sscanf(at + 6, "%15[^\"]", fill);
}

static void test_one_ring_has_each_backend_once_in_each_band(void **unused)
{
	struct state s;
	struct state_vip *v = vip_make(&s, 3, 16);
	size_t len;
	char *svg;

	(void)unused;
	svg = draw(NULL, v, &len);
	check_eq(count(svg, "data-band=\"ring\""), 1);
	check_eq(count(svg, "data-band=\"share\""), 1);
	/* One path per backend per band, and a swatch each. */
	check_eq(count(svg, "data-name=\"b1\" d="), 2);
	check_eq(count(svg, "data-name=\"b3\" d="), 2);
	check_eq(count(svg, "class=\"swatch\""), 3);
	check(!strstr(svg, "sectors"), "48 points are drawn arc by arc");
	check(!strstr(svg, "<script") && !strstr(svg, "href"), "nothing but the picture");
	free(svg);
	state_free(&s);
}

static void test_draining_and_down_backends_own_no_arc_and_say_why(void **unused)
{
	struct state s;
	struct state_vip *v = vip_make(&s, 4, 16);
	char fill[16];
	size_t len;
	char *svg;

	(void)unused;
	v->backends[1].draining = 1;
	v->backends[2].down = 1;
	svg = draw(NULL, v, &len);
	check_eq(count(svg, "data-name=\"b2\" d="), 0);
	check_eq(count(svg, "data-name=\"b3\" d="), 0);
	check(strstr(svg, ">draining: ") && strstr(svg, ">down: "), "the legend says draining and down");
	swatch_of(svg, "b2", fill);
	check(strcmp(fill, "none") == 0, "a draining backend's swatch is an outline: got '%s'", fill);
	swatch_of(svg, "b1", fill);
	check(fill[0] == '#', "an active backend's swatch is filled: got '%s'", fill);
	free(svg);
	/* Held: down, but kept while its VIP fails open: it keeps its colour. */
	v->backends[2].held = 1;
	svg = draw(NULL, v, &len);
	check_eq(count(svg, "data-name=\"b3\" d="), 2);
	check(strstr(svg, ">down, held: ") != NULL, "the legend says held");
	free(svg);
	state_free(&s);
}

/* The fill of backend @name's first arc, without its '#', or "" when it has none. */
static void arc_fill(const char *svg, const char *name, char fill[16])
{
	char key[96];
	const char *at;

	snprintf(key, sizeof(key), "\" data-name=\"%s\" d=", name);
	*fill = '\0';
	at = strstr(svg, key);
	while (at && at > svg && at[-1] != '#')
		at--;
	if (at)
		sscanf(at, "%6s", fill);
}

static void test_every_backend_has_a_colour_of_its_own(void **unused)
{
	char fills[64][16], name[16];
	struct state s;
	struct state_vip *v = vip_make(&s, 64, 4);
	size_t len, i, j;
	char *svg;

	(void)unused;
	svg = draw(NULL, v, &len);
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "b%zu", i + 1);
		arc_fill(svg, name, fills[i]);
		check(fills[i][0], "%s has arcs", name);
		for (j = 0; j < i; j++)
			check(strcmp(fills[i], fills[j]), "b%zu and b%zu share colour #%s", i + 1, j + 1,
			      fills[i]);
		check(strcmp(fills[i], "202020") && strcmp(fills[i], "ffffff") &&
		      strcmp(fills[i], "eeeeee"), "b%zu has the moves', background's or band's colour", i + 1);
	}
	/* The legend shows 15 rows; the bands show all. */
	check(strstr(svg, ">and 49 more<") != NULL, "the legend says how many it leaves out");
	free(svg);
	state_free(&s);
}

static void test_a_million_points_are_drawn_in_sectors_of_bounded_size(void **unused)
{
	struct state s, after;
	struct state_vip *v = vip_make(&s, 4, 1u << 18);
	size_t len;
	char *svg;

	(void)unused;
	svg = draw(NULL, v, &len);
	check(strstr(svg, "drawn in 1024 sectors") != NULL, "2^20 points: sectors");
	check(len < 1024 * 1024, "one ring of 2^20 points: %zu bytes", len);
	free(svg);
	assert_int_equal(state_clone(&after, &s), 0);
	after.fleet.vips[0].backends[0].weight = 0;
	svg = draw(&s.fleet.vips[0], &after.fleet.vips[0], &len);
	check(strstr(svg, "drawn in 1024 sectors") != NULL, "a plan of 2^20 points: sectors");
	check(len < 2 * 1024 * 1024, "a plan of 2^20 points: %zu bytes", len);
	check(strstr(svg, ">b1 \u2192 b") != NULL, "b1's keys move to another backend");
	check(strstr(svg, "weight 1 \u2192 0") != NULL, "the legend says b1's weight changes");
	free(svg);
	state_free(&after);
	state_free(&s);
}

static void test_empty_rings_draw_and_say_what_moves(void **unused)
{
	struct state s, none;
	struct state_vip *v = vip_make(&s, 2, 16), *empty = vip_make(&none, 0, 16);
	size_t len;
	char *svg;

	(void)unused;
	svg = draw(NULL, empty, &len);
	check_eq(count(svg, " d=\"M"), 2); /* the two bands' grey ground, nothing else */
	check(strstr(svg, ">0</text>") != NULL, "no points");
	free(svg);
	svg = draw(empty, v, &len);
	check(strstr(svg, ">100.00%<") && strstr(svg, ">nobody \u2192 b"), "from nobody, all of it");
	free(svg);
	svg = draw(v, v, &len);
	check(strstr(svg, ">0.00%<") && strstr(svg, "none: every key keeps its owner"),
	      "a change that moves nothing says so");
	check_eq(count(svg, "data-name=\"moves\""), 0);
	free(svg);
	state_free(&none);
	state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_ring_has_each_backend_once_in_each_band),
		cmocka_unit_test(test_draining_and_down_backends_own_no_arc_and_say_why),
		cmocka_unit_test(test_every_backend_has_a_colour_of_its_own),
		cmocka_unit_test(test_a_million_points_are_drawn_in_sectors_of_bounded_size),
		cmocka_unit_test(test_empty_rings_draw_and_say_what_moves),
	};

	return tests_run("test_picture", tests);
}
