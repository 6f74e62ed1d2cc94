/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A VIP's ring as a picture: a self-contained SVG that `ringlb show VIP
 * --svg` and `ringlb plan ... --svg` write. See picture.c for what it shows.
 */
#ifndef RINGLB_PICTURE_H
#define RINGLB_PICTURE_H

#include <stdio.h>

#include "state.h"

/**
 * picture_write() - draw a VIP's ring, or what a change does to it, as SVG.
 * @before: the VIP as committed, for a plan; NULL to draw @after alone
 * @after: the VIP to draw (for a plan: after the change)
 * @generation: the committed state's generation, said in the subtitle
 * @out: where the SVG goes
 *
 * One ring: each backend's arcs at their places on the circle (outer), its
 * share as one arc (inner), a legend of names, weights, shares and marks
 * (draining, down, held, retired). A plan: the ring after (outer), the ring
 * before (inner), between them the arcs whose owner changes, and a legend
 * of shares before and after and of the moves, from which backend to which.
 * Rings with more arcs than a picture can show are drawn in sectors of a
 * fraction of a degree, each holding its owners' exact shares within it.
 *
 * Return: 0, -ENOMEM, -EIO when writing failed, or a ring library error.
 */
int picture_write(const struct state_vip *before, const struct state_vip *after,
		  __u64 generation, FILE *out);

#endif /* RINGLB_PICTURE_H */
