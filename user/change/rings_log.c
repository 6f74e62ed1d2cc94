// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring transition log (rings_log.h): one JSON line in rings.log beside
 * the state for every VIP whose ring a change moves, whoever made it.
 */
#define _GNU_SOURCE
#include "rings_log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>

#include <jansson.h>

#include "ring.h"
#include "site.h"



/* A VIP's ring, or an empty one when it has none (added, removed, no backend). */
static struct ring *transition_ring(const struct state_vip *v)
{
	struct ring *r = NULL;
	__u32 *ids = NULL;

	if (v && state_vip_ring(v, &r, &ids) == 0) {
		free(ids);
		return r;
	}
	return ring_new(&r, RING_VNODES_MIN) ? NULL : r;
}

/*
 * Rings of up to this many points (before and after together) get the exact
 * share moved in the log: both are built and diffed (about 15 ms here at the
 * limit). Building larger ones would cost a command more than the change
 * itself (255 backends x 4,096 points: 2 x 300 ms on a command of 100 ms),
 * so theirs is the ideal share, from the weights (the ring moves within a
 * few per cent of it: test_ring).
 */
#define TRANSITION_EXACT_POINTS 65536

/* The members of @v's ring and their weights (0 for a VIP that is not there). */
static double ring_weight_of(const struct state_vip *v, const char *name, double *total)
{
	double w = 0;
	size_t i;

	*total = 0;
	for (i = 0; v && i < v->backend_count; i++)
		if (state_backend_in_ring(&v->backends[i])) {
			*total += v->backends[i].weight;
			if (strcmp(v->backends[i].name, name) == 0)
				w = v->backends[i].weight;
		}
	return w;
}

/* The ideal diff of two rings, from the weights of their members. */
static int ideal_diff(const struct state_vip *was, const struct state_vip *now,
		      struct ring_diff *out)
{
	const struct state_vip *sides[2] = { was, now };
	size_t k, i, n = 0;

	out->moved = 0;
	out->count = 0;
	out->members = calloc((was ? was->backend_count : 0) + (now ? now->backend_count : 0) + 1,
			      sizeof(*out->members));
	if (!out->members)
		return -ENOMEM;
	for (k = 0; k < 2; k++)
		for (i = 0; sides[k] && i < sides[k]->backend_count; i++) {
			const char *name = sides[k]->backends[i].name;
			struct ring_diff_member *m = &out->members[n];
			double tb, ta, wb = ring_weight_of(was, name, &tb),
				       wa = ring_weight_of(now, name, &ta);

			/* Each name once: the second side adds only names the first lacked. */
			if (k == 1 && was && state_backend_find(was, name))
				continue;
			snprintf(m->name, sizeof(m->name), "%s", name);
			m->share_before = tb ? wb / tb : 0;
			m->share_after = ta ? wa / ta : 0;
			if (m->share_after > m->share_before)
				out->moved += m->share_after - m->share_before;
			n++;
		}
	out->count = n;
	return 0;
}

/* One line for the VIP whose ring differs between @was and @now (either may be NULL). */
static json_t *transition_line(const struct state_vip *was, const struct state_vip *now,
			       const struct state *after, const char *cause, const char *outcome,
			       double seconds)
{
	size_t p_was = 0, p_now = 0, i;
	uint64_t f;
	int exact;
	struct ring *a = NULL, *b = NULL;
	struct ring_diff diff = { 0 };
	char spec[ADDR_TEXT_MAX], when[40];
	struct passwd *pw = getpwuid(getuid());
	json_t *line = NULL, *members;
	struct timespec ts;
	struct tm tm;

	if (was && state_vip_summary(was, &p_was, &f))
		p_was = 0;
	if (now && state_vip_summary(now, &p_now, &f))
		p_now = 0;
	exact = p_was + p_now <= TRANSITION_EXACT_POINTS;
	if (exact) {
		a = transition_ring(was);
		b = transition_ring(now);
		if (!a || !b || ring_diff(a, b, &diff))
			goto out;
	} else if (ideal_diff(was, now, &diff)) {
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	vip_format(now ? &now->spec : &was->spec, spec);
	members = json_array();
	for (i = 0; members && i < diff.count; i++) {
		const struct ring_diff_member *m = &diff.members[i];

		if (m->share_before != m->share_after)
			json_array_append_new(members,
					      json_pack("{s:s, s:f, s:f}", "backend", m->name,
							"share_before", m->share_before,
							"share_after", m->share_after));
	}
	line = json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:f, s:b, s:o, s:b, s:s}", "time",
			 when, "vip", spec, "generation", (json_int_t)after->fleet.generation, "cause",
			 cause, "user", pw ? pw->pw_name : "?", "points_before", (json_int_t)p_was,
			 "points_after", (json_int_t)p_now, "moved", diff.moved, "exact", exact,
			 "backends", members, "fail_open", now && state_vip_fails_open(now),
			 "outcome", outcome);
	if (line)
		json_object_set_new(line, "duration_seconds", json_real(seconds));
	if (line && getenv("SUDO_USER"))
		json_object_set_new(line, "sudo_user", json_string(getenv("SUDO_USER")));
out:
	ring_diff_free(&diff);
	ring_free(a);
	ring_free(b);
	return line;
}

/* Does VIP @was's ring differ from @now's (either may be NULL)? */
static int ring_moves(const struct state_vip *was, const struct state_vip *now)
{
	size_t p1 = 0, p2 = 0;
	uint64_t f1 = 0, f2 = 0;

	if (!was || !now)
		return (was && state_vip_summary(was, &p1, &f1) == 0 && p1) ||
		       (now && state_vip_summary(now, &p2, &f2) == 0 && p2);
	if (state_vip_summary(was, &p1, &f1) || state_vip_summary(now, &p2, &f2))
		return 1;
	return p1 != p2 || f1 != f2;
}

/*
 * Append one JSON line to rings.log beside the state file for every VIP
 * whose ring the change from @before to @after moves: when, which VIP, the
 * cause, who, points before and after, the share of the hash space that
 * changed owner and each backend's share before and after, whether the VIP
 * fails open, and the outcome ("ok", or "failed: why": the old ring serves).
 */
void rings_log_write(const struct site *site, const struct state *before,
			    const struct state *after, const char *cause, const char *outcome,
			    double seconds)
{
	char path[PATH_MAX];
	size_t i;
	int fd;

	site_path(site, "rings.log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	for (i = 0; i < before->fleet.vip_count + after->fleet.vip_count; i++) {
		const struct state_vip *was, *now;
		json_t *line;
		char *text;

		if (i < after->fleet.vip_count) {
			now = &after->fleet.vips[i];
			was = state_vip_find(before, &now->spec);
		} else {
			was = &before->fleet.vips[i - after->fleet.vip_count];
			now = NULL;
			if (state_vip_find(after, &was->spec))
				continue;
		}
		if (!ring_moves(was, now))
			continue;
		line = transition_line(was, now, after, cause ? cause : "?", outcome, seconds);
		text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6))
			    : NULL;
		json_decref(line);
		if (text) {
			size_t len = strlen(text);

			text[len] = '\n';
			if (write(fd, text, len + 1) < 0) {
				/* Best effort, as the audit log: the change stands or fell already. */
			}
		}
		free(text);
	}
	close(fd);
}
