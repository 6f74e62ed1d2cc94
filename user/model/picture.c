// SPDX-License-Identifier: GPL-2.0-only
/*
 * A VIP's ring as a self-contained SVG: no script, no external reference,
 * generic fonts. The circle runs clockwise from the top, position 0 to
 * 2^64 - 1; every backend has its own colour, the same in every band and in
 * the legend.
 *
 * One ring (show): the outer band is the ring itself, each arc where a
 * backend's points own the keys; the inner band is each backend's share as
 * one arc, for reading at a glance. A plan: the outer band is the ring
 * after the change, the inner band the ring before, and the thin band
 * between them is dark where the owner changes; the legend lists shares
 * before and after and the moves, from which backend to which.
 *
 * The arcs come from ring_overlay(). A ring with more arcs than a picture
 * can show (thousands of points per backend make arcs far thinner than a
 * pixel) is drawn in sectors of a fraction of a degree: each sector holds
 * its owners' exact shares within it, side by side, so every backend's
 * colour still covers exactly its share of the circle. Ring bands are drawn
 * without anti-aliasing (crispEdges): each pixel takes the colour of the arc
 * holding its centre, so the colours' pixel counts follow the shares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "picture.h"
#include "ring.h"

/* The canvas, in pixels; the circle on the left, the legend on the right. */
#define WIDTH 1040
#define HEIGHT 700
#define CX 330.0
#define CY 370.0
#define LEGEND_X 680
#define LEGEND_ROWS_MAX 16
#define MOVE_ROWS_MAX 8
/* Above this many arcs, sectors; at most this many sub-arcs in them. */
#define EXACT_ARCS_MAX 4096
#define SECTORS_MIN 360
#define SECTORS_MAX 1024
#define SECTOR_ARCS_MAX 16384
#define TURN (2 * M_PI)
/* A fraction of the circle as the double it is drawn from. */
#define FRACTION(pos) ldexp((double)(pos), -64)

/*
 * Colour-blind-safe first (Okabe and Ito), then other well-separated ones;
 * past them, hues a golden angle apart. None is the moves band's, the text's
 * or the background's.
 */
static const char *const palette[] = {
	"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
	"#7f3c8d", "#80ba5a", "#3969ac", "#e73f74", "#008695", "#f2b701", "#a5aa99",
};
#define PALETTE_SIZE (sizeof(palette) / sizeof(palette[0]))
#define MOVES_COLOUR "#202020"

/* One backend of the picture: in @before, @after or both. */
struct member {
	const struct state_backend *before, *after;
	char colour[8];
	double share_before, share_after;
};

/* A band of the circle: its radii, and the path of each colour in it. */
struct band {
	const char *id;
	double r_in, r_out;
	FILE **paths;
	char **bufs;
	size_t *lens;
	int run_colour; /* the arc being extended, -1 when none */
	double run_start, run_end;
	double *sectors; /* sector * colours + colour: its length, as a fraction */
};

struct picture {
	const struct state_vip *before, *after;
	struct member *members;
	size_t count, colours; /* members, and members + 1 (the moves' colour, also "nobody") */
	struct ring *ring_before, *ring_after;
	__u32 *ids_before, *ids_after;
	size_t *colour_before, *colour_after; /* ring member -> colour */
	struct band bands[3];
	size_t band_count;
	size_t sectors; /* 0: exact arcs */
	double *moved;  /* colours x colours: from (before) -> to (after) */
	double moved_total;
	size_t arcs;
};

static void colour_of(size_t i, char out[8])
{
	double h, s = 0.65, l = 0.48, c, x, m, r = 0, g = 0, b = 0;

	if (i < PALETTE_SIZE) {
		memcpy(out, palette[i], 8);
		return;
	}
	h = fmod((double)(i - PALETTE_SIZE) * 137.508 + 20.0, 360.0) / 60.0;
	c = (1 - fabs(2 * l - 1)) * s;
	x = c * (1 - fabs(fmod(h, 2) - 1));
	m = l - c / 2;
	switch ((int)h) {
	case 0: r = c; g = x; break;
	case 1: r = x; g = c; break;
	case 2: g = c; b = x; break;
	case 3: g = x; b = c; break;
	case 4: r = x; b = c; break;
	default: r = c; b = x; break;
	}
	snprintf(out, 8, "#%02x%02x%02x", (unsigned int)lround((r + m) * 255),
		 (unsigned int)lround((g + m) * 255), (unsigned int)lround((b + m) * 255));
}

/* --- geometry -------------------------------------------------------------------------- */

static double px(double r, double turns)
{
	return CX + r * sin(turns * TURN);
}

static double py(double r, double turns)
{
	return CY - r * cos(turns * TURN);
}

/* An annulus sector from @f0 to @f1 (fractions of a turn), a quarter turn at most per piece. */
static void sector_path(FILE *f, double r_in, double r_out, double f0, double f1)
{
	while (f1 - f0 > 1e-12) {
		double e = f1 - f0 > 0.25 ? f0 + 0.25 : f1;

		fprintf(f, "M%.2f %.2fA%.1f %.1f 0 0 1 %.2f %.2fL%.2f %.2fA%.1f %.1f 0 0 0 %.2f %.2fZ",
			px(r_out, f0), py(r_out, f0), r_out, r_out, px(r_out, e), py(r_out, e),
			px(r_in, e), py(r_in, e), r_in, r_in, px(r_in, f0), py(r_in, f0));
		f0 = e;
	}
}

/* --- bands ----------------------------------------------------------------------------- */

static int band_init(struct band *b, const char *id, double r_in, double r_out, size_t colours,
		     size_t sectors)
{
	size_t c;

	*b = (struct band){ .id = id, .r_in = r_in, .r_out = r_out, .run_colour = -1 };
	b->paths = calloc(colours, sizeof(*b->paths));
	b->bufs = calloc(colours, sizeof(*b->bufs));
	b->lens = calloc(colours, sizeof(*b->lens));
	if (sectors)
		b->sectors = calloc(sectors * colours, sizeof(double));
	if (!b->paths || !b->bufs || !b->lens || (sectors && !b->sectors))
		return -ENOMEM;
	for (c = 0; c < colours; c++) {
		b->paths[c] = open_memstream(&b->bufs[c], &b->lens[c]);
		if (!b->paths[c])
			return -ENOMEM;
	}
	return 0;
}

static void band_free(struct band *b, size_t colours)
{
	size_t c;

	for (c = 0; b->paths && c < colours; c++)
		if (b->paths[c])
			fclose(b->paths[c]);
	for (c = 0; b->bufs && c < colours; c++)
		free(b->bufs[c]);
	free(b->paths);
	free(b->bufs);
	free(b->lens);
	free(b->sectors);
}

static void band_flush(struct band *b)
{
	if (b->run_colour >= 0)
		sector_path(b->paths[b->run_colour], b->r_in, b->r_out, b->run_start, b->run_end);
	b->run_colour = -1;
}

/* Colour [@f0, @f1) of the circle; -1 leaves it empty. Touching arcs of a colour join. */
static void band_arc(struct band *b, int colour, double f0, double f1)
{
	if (colour >= 0 && colour == b->run_colour && fabs(f0 - b->run_end) < 1e-12) {
		b->run_end = f1;
		return;
	}
	band_flush(b);
	if (colour >= 0) {
		b->run_colour = colour;
		b->run_start = f0;
		b->run_end = f1;
	}
}

/* The keys @start..@end (inclusive) are @colour's: an arc, or their part of each sector. */
static void band_add(struct band *b, const struct picture *p, int colour, __u64 start, __u64 end)
{
	double f0 = FRACTION(start), f1 = end == UINT64_MAX ? 1.0 : FRACTION(end + 1);
	size_t s, last;

	if (!p->sectors) {
		band_arc(b, colour, f0, f1);
		return;
	}
	if (colour < 0)
		return;
	s = (size_t)(f0 * p->sectors);
	last = (size_t)(f1 * p->sectors);
	for (; s <= last && s < p->sectors; s++) {
		double lo = (double)s / p->sectors, hi = (double)(s + 1) / p->sectors;
		double len = fmin(f1, hi) - fmax(f0, lo);

		if (len > 0)
			b->sectors[s * p->colours + colour] += len;
	}
}

/* Sectors into arcs: each colour's share of a sector side by side, the last one's first. */
static void band_finish(struct band *b, const struct picture *p)
{
	size_t s, k;
	int prev = -1;

	for (s = 0; b->sectors && s < p->sectors; s++) {
		const double *len = &b->sectors[s * p->colours];
		double at = (double)s / p->sectors;
		int last = prev;

		if (prev >= 0 && len[prev] > 0) {
			band_arc(b, prev, at, at + len[prev]);
			at += len[prev];
		}
		for (k = 0; k < p->colours; k++) {
			if ((int)k == prev || len[k] <= 0)
				continue;
			band_arc(b, (int)k, at, at + len[k]);
			at += len[k];
			last = (int)k;
		}
		/* A sector not wholly owned (the moves band) leaves a gap. */
		if (at < (double)(s + 1) / p->sectors - 1e-12)
			band_arc(b, -1, at, at);
		prev = last;
	}
	band_flush(b);
}

/* --- the walk -------------------------------------------------------------------------- */

static int count_arc(const struct ring_arc *arc, void *ctx)
{
	(void)arc;
	((struct picture *)ctx)->arcs++;
	return 0;
}

static int colour_at(const size_t *map, __u32 member)
{
	return member == RING_NO_OWNER ? -1 : (int)map[member];
}

static int draw_arc(const struct ring_arc *arc, void *ctx)
{
	struct picture *p = ctx;
	int ca = colour_at(p->colour_after, arc->after);

	band_add(&p->bands[0], p, ca, arc->start, arc->end);
	if (p->before) {
		int cb = colour_at(p->colour_before, arc->before);
		int moves = cb != ca;
		double len = FRACTION(arc->end - arc->start) + ldexp(1.0, -64);

		band_add(&p->bands[1], p, moves ? (int)p->count : -1, arc->start, arc->end);
		band_add(&p->bands[2], p, cb, arc->start, arc->end);
		if (moves) {
			/* "Nobody" has the moves' index: an empty ring before or after. */
			p->moved[(cb < 0 ? p->count : (size_t)cb) * p->colours +
				 (ca < 0 ? p->count : (size_t)ca)] += len;
			p->moved_total += len;
		}
	}
	return 0;
}

/* --- members --------------------------------------------------------------------------- */

/* A member's name: every member is in @before, @after or both. */
static const char *member_name(const struct member *m)
{
	return (m->after ? m->after : m->before)->name;
}

static struct member *member_find(struct picture *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->count; i++)
		if (strcmp(member_name(&p->members[i]), name) == 0)
			return &p->members[i];
	return NULL;
}

/* Each ring member's colour, and its share into the member. */
static int ring_colours(struct picture *p, const struct state_vip *v, const struct ring *r,
			const __u32 *ids, size_t **out, int after)
{
	size_t n = ring_member_count(r), i, j;
	double *shares = calloc(n + 1, sizeof(double));

	*out = calloc(n + 1, sizeof(size_t));
	if (!shares || !*out) {
		free(shares);
		return -ENOMEM;
	}
	ring_shares(r, shares);
	for (i = 0; i < n; i++) {
		struct member *m = NULL;

		for (j = 0; j < v->backend_count && v->backends[j].id != ids[i]; j++)
			;
		if (j < v->backend_count)
			m = member_find(p, v->backends[j].name);
		if (!m) {
			free(shares);
			return -EINVAL;
		}
		(*out)[i] = (size_t)(m - p->members);
		if (after)
			m->share_after = shares[i];
		else
			m->share_before = shares[i];
	}
	free(shares);
	return 0;
}

static int members_init(struct picture *p)
{
	const struct state_vip *v[2] = { p->before, p->after };
	size_t k, i;

	p->members = calloc((p->before ? p->before->backend_count : 0) + p->after->backend_count + 1,
			    sizeof(*p->members));
	if (!p->members)
		return -ENOMEM;
	for (k = 0; k < 2; k++) {
		for (i = 0; v[k] && i < v[k]->backend_count; i++) {
			const struct state_backend *b = &v[k]->backends[i];
			struct member *m = member_find(p, b->name);

			if (!m) {
				m = &p->members[p->count];
				colour_of(p->count++, m->colour);
			}
			if (k == 0)
				m->before = b;
			else
				m->after = b;
		}
	}
	p->colours = p->count + 1;
	return 0;
}

/* --- output ---------------------------------------------------------------------------- */

/* What the legend says of a backend besides its share, and whether it owns arcs now. */
static const char *member_mark(const struct picture *p, const struct member *m, char *buf,
			       size_t len)
{
	const struct state_backend *a = m->after, *b = m->before;

	if (!a)
		return "removed";
	if (a->retired)
		return "removed: kept for second chance only";
	if (a->draining)
		return "draining: no arcs, its pinned flows stay";
	if (a->down && !a->held)
		return "down: no arcs until its check passes";
	if (a->down)
		return "down, held: serves while its VIP fails open";
	if (p->before && !b)
		return "added";
	if (b && (b->weight != a->weight || b->draining != a->draining)) {
		snprintf(buf, len, "weight %u \u2192 %u%s", b->weight, a->weight,
			 b->draining ? ", undrained" : "");
		return buf;
	}
	return "";
}

static void band_write(FILE *out, const struct picture *p, const struct band *b)
{
	size_t c;

	fprintf(out, "<g class=\"band\" data-band=\"%s\" data-cx=\"%.1f\" data-cy=\"%.1f\" "
		     "data-r-in=\"%.1f\" data-r-out=\"%.1f\" shape-rendering=\"crispEdges\">\n",
		b->id, CX, CY, b->r_in, b->r_out);
	/* The band's place, light grey: a ring without points still shows where it is. */
	fprintf(out, "<path fill=\"#eeeeee\" fill-rule=\"evenodd\" d=\"M%.1f %.1fa%.1f %.1f 0 1 0 "
		     "0.01 0zM%.1f %.1fa%.1f %.1f 0 1 0 0.01 0z\"/>\n", CX, CY - b->r_out, b->r_out,
		b->r_out, CX, CY - b->r_in, b->r_in, b->r_in);
	for (c = 0; c < p->colours; c++) {
		if (!b->lens[c])
			continue;
		fprintf(out, "<path fill=\"%s\" data-name=\"%s\" d=\"",
			c < p->count ? p->members[c].colour : MOVES_COLOUR,
			c < p->count ? member_name(&p->members[c]) : "moves");
		fwrite(b->bufs[c], 1, b->lens[c], out);
		fputs("\"/>\n", out);
	}
	fputs("</g>\n", out);
}

static int member_in_ring(const struct member *m)
{
	return m->after && state_backend_in_ring(m->after);
}

static void legend_write(FILE *out, const struct picture *p)
{
	double y = 118, most;
	size_t i, best, shown = p->count > LEGEND_ROWS_MAX ? LEGEND_ROWS_MAX - 1 : p->count;
	char buf[64];

	fprintf(out, "<text x=\"%d\" y=\"%.0f\" class=\"h\">Backend</text>\n", LEGEND_X, y - 30);
	if (p->before)
		fprintf(out, "<text x=\"%d\" y=\"%.0f\" class=\"h\">share before \u2192 after"
			     "</text>\n", LEGEND_X + 130, y - 30);
	else
		fprintf(out, "<text x=\"%d\" y=\"%.0f\" class=\"h\" text-anchor=\"end\">weight"
			     "</text><text x=\"%d\" y=\"%.0f\" class=\"h\" text-anchor=\"end\">"
			     "share</text>\n", LEGEND_X + 190, y - 30, LEGEND_X + 280, y - 30);
	for (i = 0; i < shown; i++) {
		const struct member *m = &p->members[i];
		const char *mark = member_mark(p, m, buf, sizeof(buf));

		if (member_in_ring(m) || (p->before && m->before && state_backend_in_ring(m->before)))
			fprintf(out, "<rect class=\"swatch\" x=\"%d\" y=\"%.0f\" width=\"18\" "
				     "height=\"18\" fill=\"%s\" data-name=\"%s\"/>\n",
				LEGEND_X, y - 14, m->colour, member_name(m));
		else
			fprintf(out, "<rect class=\"swatch\" x=\"%d\" y=\"%.0f\" width=\"17\" "
				     "height=\"17\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
				     "data-name=\"%s\"/><path d=\"M%d %.0fL%d %.0f\" stroke=\"%s\" "
				     "stroke-width=\"2\"/>\n",
				LEGEND_X, y - 14, m->colour, member_name(m), LEGEND_X, y + 3,
				LEGEND_X + 17, y - 14, m->colour);
		fprintf(out, "<text x=\"%d\" y=\"%.0f\">%s</text>\n", LEGEND_X + 28, y,
			member_name(m));
		if (p->before)
			fprintf(out, "<text x=\"%d\" y=\"%.0f\">%6.2f%% \u2192 %6.2f%%</text>\n",
				LEGEND_X + 130, y, 100 * m->share_before, 100 * m->share_after);
		else
			fprintf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">%u</text>"
				     "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">%.2f%%</text>\n",
				LEGEND_X + 190, y, m->after->weight, LEGEND_X + 280, y,
				100 * m->share_after);
		if (*mark)
			fprintf(out, "<text x=\"%d\" y=\"%.0f\" class=\"mark\">%s</text>\n",
				LEGEND_X + 28, y + 15, mark);
		y += *mark ? 38 : 26;
	}
	if (shown < p->count)
		fprintf(out, "<text x=\"%d\" y=\"%.0f\">and %zu more</text>\n", LEGEND_X + 28, y,
			p->count - shown);
	if (!p->before)
		return;
	/* The largest moves, from which backend to which. */
	y += 20;
	fprintf(out, "<text x=\"%d\" y=\"%.0f\" class=\"h\">Moves</text>\n", LEGEND_X, y);
	y += 26;
	/* Rows in order of share, then of index: each the largest after the one before. */
	for (i = 0, most = INFINITY, best = 0; i < MOVE_ROWS_MAX; i++) {
		double limit = most;
		size_t k, after = i ? best : 0;

		most = 0;
		for (k = 0; k < p->colours * p->colours; k++) {
			double m = p->moved[k];

			if ((m < limit || (m == limit && k > after)) && m > most) {
				most = m;
				best = k;
			}
		}
		if (most <= 0)
			break;
		fprintf(out, "<text x=\"%d\" y=\"%.0f\">%s \u2192 %s</text><text x=\"%d\" "
			     "y=\"%.0f\">%6.2f%%</text>\n", LEGEND_X + 28, y,
			best / p->colours < p->count ? member_name(&p->members[best / p->colours]) :
						       "nobody",
			best % p->colours < p->count ? member_name(&p->members[best % p->colours]) :
						       "nobody",
			LEGEND_X + 190, y, 100 * most);
		y += 22;
	}
	if (p->moved_total == 0)
		fprintf(out, "<text x=\"%d\" y=\"%.0f\">none: every key keeps its owner</text>\n",
			LEGEND_X + 28, y);
}

static void picture_output(FILE *out, struct picture *p, __u64 generation)
{
	char spec[ADDR_TEXT_MAX];
	size_t points = 0, in_ring = 0, i;

	vip_format(&p->after->spec, spec);
	ring_points(p->ring_after, &points);
	for (i = 0; i < p->count; i++)
		in_ring += member_in_ring(&p->members[i]);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		     "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Liberation Sans, Arial, "
		     "sans-serif\" font-size=\"15\" fill=\"#1a1a1a\">\n"
		     "<title>ringlb: the ring of VIP %s</title>\n"
		     "<style>.h{font-weight:bold}.mark{font-size:12px;fill:#555}"
		     ".c{font-size:13px;fill:#555}</style>\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		WIDTH, HEIGHT, WIDTH, HEIGHT, spec);
	fprintf(out, "<text x=\"24\" y=\"38\" font-size=\"24\" class=\"h\">VIP %s</text>\n", spec);
	fprintf(out, "<text x=\"24\" y=\"64\">%s%s forward %s \u00b7 %zu backend%s in the ring "
		     "\u00b7 %zu points \u00b7 generation %llu</text>\n",
		p->before ? "plan: " : "", p->before ? "the ring after the change \u00b7" : "",
		state_forward_name(p->after->forward), in_ring, in_ring == 1 ? "" : "s", points,
		(unsigned long long)generation);
	if (p->sectors)
		fprintf(out, "<text x=\"24\" y=\"%d\" class=\"c\">Arcs thinner than a pixel: "
			     "drawn in %zu sectors, each holding its owners' exact shares side by "
			     "side.</text>\n", HEIGHT - 32, p->sectors);
	for (i = 0; i < p->band_count; i++)
		band_write(out, p, &p->bands[i]);
	if (p->before) {
		fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"30\" "
			     "class=\"h\">%.2f%%</text>\n<text x=\"%.0f\" y=\"%.0f\" "
			     "text-anchor=\"middle\">of flows move</text>\n",
			CX, CY + 4, 100 * p->moved_total, CX, CY + 28);
		fprintf(out, "<text x=\"24\" y=\"%d\" class=\"c\">Outer: the ring after. Inner: the "
			     "ring before. Between them, dark: the keys that change owner.</text>\n",
			HEIGHT - 14);
	} else {
		fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"22\" "
			     "class=\"h\">%zu</text>\n<text x=\"%.0f\" y=\"%.0f\" "
			     "text-anchor=\"middle\">points</text>\n", CX, CY + 2, points, CX, CY + 24);
		fprintf(out, "<text x=\"24\" y=\"%d\" class=\"c\">Outer: the ring, each arc where a "
			     "backend's points own the keys, clockwise from the top. Inner: each "
			     "backend's share.</text>\n", HEIGHT - 14);
	}
	legend_write(out, p);
	fputs("</svg>\n", out);
}

static void picture_free(struct picture *p)
{
	size_t i;

	for (i = 0; i < p->band_count; i++)
		band_free(&p->bands[i], p->colours);
	ring_free(p->ring_before);
	ring_free(p->ring_after);
	free(p->ids_before);
	free(p->ids_after);
	free(p->colour_before);
	free(p->colour_after);
	free(p->members);
	free(p->moved);
}

int picture_write(const struct state_vip *before, const struct state_vip *after,
		  __u64 generation, FILE *out)
{
	struct picture p = { .before = before, .after = after };
	const struct ring *first;
	size_t i, members;
	int err;

	err = members_init(&p);
	if (!err)
		err = state_vip_ring(after, &p.ring_after, &p.ids_after);
	if (!err)
		err = ring_colours(&p, after, p.ring_after, p.ids_after, &p.colour_after, 1);
	if (!err && before) {
		err = state_vip_ring(before, &p.ring_before, &p.ids_before);
		if (!err)
			err = ring_colours(&p, before, p.ring_before, p.ids_before,
					   &p.colour_before, 0);
		if (!err && !(p.moved = calloc(p.colours * p.colours, sizeof(double))))
			err = -ENOMEM;
	}
	if (err)
		goto out;
	first = before ? p.ring_before : p.ring_after;
	ring_overlay(first, p.ring_after, count_arc, &p);
	members = ring_member_count(p.ring_after) + (before ? ring_member_count(p.ring_before) : 0);
	if (p.arcs > EXACT_ARCS_MAX) {
		p.sectors = SECTOR_ARCS_MAX / (members ? members : 1);
		p.sectors = p.sectors < SECTORS_MIN ? SECTORS_MIN :
			    p.sectors > SECTORS_MAX ? SECTORS_MAX : p.sectors;
	}
	/* show: the ring and the shares; plan: after, the moves, before. */
	if (before) {
		err = band_init(&p.bands[p.band_count++], "after", 252, 300, p.colours, p.sectors);
		if (!err)
			err = band_init(&p.bands[p.band_count++], "moves", 236, 248, p.colours,
					p.sectors);
		if (!err)
			err = band_init(&p.bands[p.band_count++], "before", 184, 232, p.colours,
					p.sectors);
	} else {
		err = band_init(&p.bands[p.band_count++], "ring", 240, 300, p.colours, p.sectors);
		if (!err)
			err = band_init(&p.bands[p.band_count++], "share", 150, 200, p.colours, 0);
	}
	if (err)
		goto out;
	ring_overlay(first, p.ring_after, draw_arc, &p);
	for (i = 0; i < p.band_count; i++)
		band_finish(&p.bands[i], &p);
	if (!before) {
		double at = 0;

		for (i = 0; i < p.count; i++) {
			band_arc(&p.bands[1], (int)i, at, at + p.members[i].share_after);
			at += p.members[i].share_after;
		}
		band_flush(&p.bands[1]);
	}
	for (i = 0; i < p.band_count; i++) {
		size_t c;

		for (c = 0; c < p.colours; c++)
			if (fflush(p.bands[i].paths[c]))
				err = -ENOMEM;
	}
	if (err)
		goto out;
	picture_output(out, &p, generation);
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	picture_free(&p);
	return err;
}
