// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Comparing rings: each member's share of the circle, and how many keys two
 * rings place differently, member by member.
 */
#include "ring_impl.h"

#include <errno.h>
#include <math.h>

void ring_shares(const struct ring *r, double *shares)
{
	size_t i;

	for (i = 0; i < r->member_count; i++)
		shares[i] = 0.0;
	if (r->point_count == 0)
		return;
	/* Point i owns (position[i - 1], position[i]]; point 0 owns the wrap. */
	for (i = 0; i < r->point_count; i++) {
		uint64_t prev = r->points[i ? i - 1 : r->point_count - 1].position;
		uint64_t arc = r->points[i].position - prev;

		shares[r->points[i].member] += ldexp((double)arc, -64);
	}
	/* All points on one position: the wrap arc is the whole circle. */
	if (r->points[0].position == r->points[r->point_count - 1].position)
		shares[r->points[0].member] = 1.0;
}

/* Owner (member index) of the arc ending at point i, wrapping; UINT32_MAX if none. */
static uint32_t owner_at(const struct ring *r, size_t i)
{
	if (r->point_count == 0)
		return UINT32_MAX;
	return r->points[i < r->point_count ? i : 0].member;
}

int ring_overlay(const struct ring *before, const struct ring *after, ring_arc_fn fn, void *ctx)
{
	struct ring_arc arc = { 0 };
	size_t pb = 0, pa = 0;
	bool open = false;
	int err;

	/*
	 * Walk every point position of both rings in order. Between two
	 * consecutive positions each ring has one owner: the first point at or
	 * after the stretch's end (points sharing a position: the first in
	 * ring order). Past the highest position both wrap to their point 0.
	 */
	for (;;) {
		bool more_b = pb < before->point_count, more_a = pa < after->point_count;
		uint32_t ob = owner_at(before, pb), oa = owner_at(after, pa);
		uint64_t x;

		if (!more_b && !more_a) {
			if (!before->point_count && !after->point_count)
				return 0;
			if (open && arc.end == UINT64_MAX)
				break;
			x = UINT64_MAX;
		} else if (more_b &&
			   (!more_a || before->points[pb].position <= after->points[pa].position)) {
			x = before->points[pb].position;
		} else {
			x = after->points[pa].position;
		}
		if (open && arc.before == ob && arc.after == oa) {
			arc.end = x;
		} else {
			if (open) {
				err = fn(&arc, ctx);
				if (err)
					return err;
			}
			arc = (struct ring_arc){ .start = open ? arc.end + 1 : 0, .end = x,
						 .before = ob, .after = oa };
			open = true;
		}
		if (!more_b && !more_a)
			break;
		while (pb < before->point_count && before->points[pb].position == x)
			pb++;
		while (pa < after->point_count && after->points[pa].position == x)
			pa++;
	}
	return fn(&arc, ctx);
}

/* What ring_diff() adds up while ring_overlay() walks. */
struct diff_walk {
	const size_t *union_of_before, *union_of_after;
	struct ring_diff *out;
	double moved;
};

static int diff_arc(const struct ring_arc *arc, void *ctx)
{
	struct diff_walk *w = ctx;
	double len = (double)(arc->end - arc->start) + 1.0;

	if (arc->before == RING_NO_OWNER || arc->after == RING_NO_OWNER ||
	    w->union_of_before[arc->before] != w->union_of_after[arc->after]) {
		w->moved += len;
		if (arc->before != RING_NO_OWNER)
			w->out->members[w->union_of_before[arc->before]].moved_out += len;
		if (arc->after != RING_NO_OWNER)
			w->out->members[w->union_of_after[arc->after]].moved_in += len;
	}
	return 0;
}

int ring_diff(const struct ring *before, const struct ring *after, struct ring_diff *out)
{
	size_t nb = before->member_count, na = after->member_count;
	size_t *union_of_before = NULL, *union_of_after = NULL;
	double *shares_before = NULL, *shares_after = NULL;
	struct ring_diff_member *members = NULL;
	struct diff_walk walk;
	size_t i = 0, j = 0, count = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	union_of_before = malloc((nb ? nb : 1) * sizeof(size_t));
	union_of_after = malloc((na ? na : 1) * sizeof(size_t));
	shares_before = malloc((nb ? nb : 1) * sizeof(double));
	shares_after = malloc((na ? na : 1) * sizeof(double));
	members = calloc(nb + na ? nb + na : 1, sizeof(*members));
	if (!union_of_before || !union_of_after || !shares_before || !shares_after || !members)
		goto out;
	ring_shares(before, shares_before);
	ring_shares(after, shares_after);

	/* The union of both memberships, in name order. */
	while (i < nb || j < na) {
		int cmp = i == nb ? 1 : j == na ? -1 :
			  strcmp(before->members[i].name, after->members[j].name);

		if (cmp <= 0) {
			strcpy(members[count].name, before->members[i].name);
			members[count].share_before = shares_before[i];
			union_of_before[i++] = count;
		}
		if (cmp >= 0) {
			strcpy(members[count].name, after->members[j].name);
			members[count].share_after = shares_after[j];
			union_of_after[j++] = count;
		}
		count++;
	}

	out->members = members;
	walk = (struct diff_walk){ union_of_before, union_of_after, out, 0 };
	ring_overlay(before, after, diff_arc, &walk);
	out->moved = ldexp(walk.moved, -64);
	for (i = 0; i < count; i++) {
		members[i].moved_out = ldexp(members[i].moved_out, -64);
		members[i].moved_in = ldexp(members[i].moved_in, -64);
	}
	out->count = count;
	members = NULL;
	err = 0;
out:
	free(members);
	free(union_of_before);
	free(union_of_after);
	free(shares_before);
	free(shares_after);
	return err;
}

void ring_diff_free(struct ring_diff *diff)
{
	free(diff->members);
	diff->members = NULL;
	diff->count = 0;
}
