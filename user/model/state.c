// SPDX-License-Identifier: GPL-2.0-only
/*
 * The desired state as a model (see state.h): VIPs, backends and the ids
 * they hold, the rings they make, previous rings, health checks and the
 * fail-open rule, and making a saved state safe to restore. Its JSON form
 * is state_json.c; its file, state_file.c.
 */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <jansson.h>

#include "lb_contract.h"
#include "lb_quic_lb.h"
#include "ranges.h"
#include "ring.h"

void state_host_init(struct state_host *h)
{
	memset(h, 0, sizeof(*h));
	h->flow_entries = LB_FLOWS_DEFAULT;
	h->encap.gue_port = LB_GUE_PORT_DEFAULT;
	h->encap.new_flows_max = LB_NEW_FLOWS_MAX_DEFAULT;
	h->encap.icmp_rate = LB_ICMP_RATE_DEFAULT;
	h->encap.icmp_burst = LB_ICMP_BURST_DEFAULT;
}

void state_host_free(struct state_host *h)
{
	free(h->ifaces);
	state_host_init(h);
}

void state_fleet_free(struct state_fleet *fl)
{
	size_t i;

	for (i = 0; i < fl->vip_count; i++) {
		free(fl->vips[i].backends);
		free(fl->vips[i].sources);
	}
	free(fl->vips);
	memset(fl, 0, sizeof(*fl));
	fl->next_backend_id = 1;
}

void state_init(struct state *s)
{
	memset(s, 0, sizeof(*s));
	s->fleet.next_backend_id = 1;
	state_host_init(&s->host);
}

void state_free(struct state *s)
{
	state_fleet_free(&s->fleet);
	state_host_free(&s->host);
}

int state_clone(struct state *dst, const struct state *src)
{
	size_t i = 0;

	*dst = *src;
	dst->fleet.vips = calloc(src->fleet.vip_count ? src->fleet.vip_count : 1, sizeof(*dst->fleet.vips));
	dst->host.ifaces = calloc(src->host.iface_count ? src->host.iface_count : 1, sizeof(*dst->host.ifaces));
	if (!dst->fleet.vips || !dst->host.ifaces)
		goto fail;
	if (src->host.iface_count)
		memcpy(dst->host.ifaces, src->host.ifaces, src->host.iface_count * sizeof(*dst->host.ifaces));
	for (i = 0; i < src->fleet.vip_count; i++) {
		size_t n = src->fleet.vips[i].backend_count, m = src->fleet.vips[i].source_count;

		dst->fleet.vips[i] = src->fleet.vips[i];
		dst->fleet.vips[i].backends = calloc(n ? n : 1, sizeof(struct state_backend));
		dst->fleet.vips[i].sources = calloc(m ? m : 1, sizeof(struct state_source));
		if (!dst->fleet.vips[i].backends || !dst->fleet.vips[i].sources) {
			free(dst->fleet.vips[i].backends);
			free(dst->fleet.vips[i].sources);
			goto fail;
		}
		if (n)
			memcpy(dst->fleet.vips[i].backends, src->fleet.vips[i].backends,
			       n * sizeof(struct state_backend));
		if (m)
			memcpy(dst->fleet.vips[i].sources, src->fleet.vips[i].sources,
			       m * sizeof(struct state_source));
	}
	return 0;
fail:
	/* Only the VIPs copied so far own their arrays. */
	dst->fleet.vip_count = dst->fleet.vips ? i : 0;
	state_free(dst);
	return -ENOMEM;
}

struct state_vip *state_vip_find(const struct state *s, const struct vip_spec *spec)
{
	size_t i;

	for (i = 0; i < s->fleet.vip_count; i++)
		if (vip_equal(&s->fleet.vips[i].spec, spec))
			return &s->fleet.vips[i];
	return NULL;
}

/* Levenshtein's distance between two texts of fewer than ADDR_TEXT_MAX bytes. */
static size_t text_distance(const char *a, const char *b)
{
	size_t row[ADDR_TEXT_MAX + 1], la = strlen(a), lb = strlen(b), i, j;

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const struct state_vip *state_vip_nearest(const struct state *s, const struct vip_spec *spec)
{
	const struct state_vip *best = NULL;
	char want[ADDR_TEXT_MAX], text[ADDR_TEXT_MAX];
	size_t i, d, best_d = SIZE_MAX;
	int best_same = 0;

	vip_format(spec, want);
	for (i = 0; i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];
		int same = addr_equal(&v->spec.addr, &spec->addr);

		vip_format(&v->spec, text);
		d = text_distance(want, text);
		/* The same address on another port or protocol first, then the closest text. */
		if (same > best_same || (same == best_same && d < best_d)) {
			best = v;
			best_d = d;
			best_same = same;
		}
	}
	/* A text that differs in more than a third of its characters is no typo of it. */
	return best && (best_same || best_d * 3 <= strlen(want)) ? best : NULL;
}

static int vip_id_taken(const struct state *s, __u32 id)
{
	size_t i;

	for (i = 0; i < s->fleet.vip_count; i++)
		if (s->fleet.vips[i].id == id)
			return 1;
	return 0;
}

int state_vip_add(struct state *s, const struct vip_spec *spec, __u32 vnodes,
		  struct state_vip **out)
{
	struct state_vip *vips;
	__u32 id;

	if (state_vip_find(s, spec))
		return -EEXIST;
	for (id = 0; id < LB_VIPS_MAX && vip_id_taken(s, id); id++)
		;
	if (id == LB_VIPS_MAX)
		return -ENOSPC;
	vips = realloc(s->fleet.vips, (s->fleet.vip_count + 1) * sizeof(*vips));
	if (!vips)
		return -ENOMEM;
	s->fleet.vips = vips;
	memset(&vips[s->fleet.vip_count], 0, sizeof(vips[0]));
	vips[s->fleet.vip_count].id = id;
	vips[s->fleet.vip_count].spec = *spec;
	vips[s->fleet.vip_count].vnodes = vnodes;
	state_check_default(spec, &vips[s->fleet.vip_count].check);
	*out = &vips[s->fleet.vip_count++];
	return 0;
}

void state_vip_remove(struct state *s, struct state_vip *vip)
{
	size_t at = (size_t)(vip - s->fleet.vips);

	free(vip->backends);
	free(vip->sources);
	memmove(&s->fleet.vips[at], &s->fleet.vips[at + 1], (s->fleet.vip_count - at - 1) * sizeof(*s->fleet.vips));
	s->fleet.vip_count--;
}

struct state_backend *state_backend_find(const struct state_vip *vip, const char *name)
{
	size_t i;

	for (i = 0; i < vip->backend_count; i++)
		if (strcmp(vip->backends[i].name, name) == 0)
			return &vip->backends[i];
	return NULL;
}

static int backend_id_taken(const struct state *s, __u32 id)
{
	size_t i, j;

	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++)
			if (s->fleet.vips[i].backends[j].id == id)
				return 1;
	return 0;
}

static int cookie_taken(const struct state *s, __u64 cookie)
{
	size_t i, j;

	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++)
			if (state_cookies_clash(s->fleet.vips[i].backends[j].cookie, cookie))
				return 1;
	return 0;
}

/*
 * A random cookie in the bits a flow keeps (1 .. LB_FLOW_COOKIE_MASK) that
 * clashes with none of @s or @also (may be NULL).
 */
static int cookie_new(const struct state *s, const struct state *also, __u64 *out)
{
	__u64 c;

	do {
		if (getrandom(&c, sizeof(c), 0) != sizeof(c))
			return -EIO;
		c &= LB_FLOW_COOKIE_MASK;
	} while (c == 0 || cookie_taken(s, c) || (also && cookie_taken(also, c)));
	*out = c;
	return 0;
}

/* A server id as a number (big-endian), and back, in @len octets (at most 8: allocation). */
static void sid_of_number(__u64 n, __u32 len, __u8 sid[LB_QUIC_LB_SID_MAX])
{
	__u32 i;

	memset(sid, 0, LB_QUIC_LB_SID_MAX);
	for (i = len; i-- > 0;) {
		sid[i] = (__u8)n;
		n >>= 8;
	}
}

/*
 * Server id @from of @from_len octets, as a number, written in @to_len octets
 * into @to: 0, or -ERANGE when it does not fit (its leading octets past
 * @to_len are not zero). Octet by octet: ids of up to 15 octets.
 */
static int sid_resize(const __u8 *from, __u32 from_len, __u32 to_len, __u8 to[LB_QUIC_LB_SID_MAX])
{
	__u32 i;

	memset(to, 0, LB_QUIC_LB_SID_MAX);
	for (i = 0; i + to_len < from_len; i++)
		if (from[i])
			return -ERANGE;
	if (to_len >= from_len)
		memcpy(to + (to_len - from_len), from, from_len);
	else
		memcpy(to, from + (from_len - to_len), to_len);
	return 0;
}

static int sid_zero(const __u8 sid[LB_QUIC_LB_SID_MAX])
{
	static const __u8 zero[LB_QUIC_LB_SID_MAX];

	return memcmp(sid, zero, LB_QUIC_LB_SID_MAX) == 0;
}

/* Does a backend of @v other than @self have @sid? */
static int sid_taken(const struct state_vip *v, const struct state_backend *self,
		     const __u8 sid[LB_QUIC_LB_SID_MAX])
{
	size_t i;

	for (i = 0; i < v->backend_count; i++)
		if (&v->backends[i] != self &&
		    memcmp(v->backends[i].server_id, sid, LB_QUIC_LB_SID_MAX) == 0)
			return 1;
	return 0;
}

int state_server_id_free(const struct state_vip *v, const struct state_backend *self,
			 __u8 sid[LB_QUIC_LB_SID_MAX])
{
	__u32 len = v->quic.cfg.sid_len;
	/* Backends are few (LB_BACKENDS_MAX): one of the first that many numbers is free. */
	__u64 n, last = len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;

	for (n = 1; n <= last && n <= LB_BACKENDS_MAX + 1; n++) {
		sid_of_number(n, len, sid);
		if (!sid_taken(v, self, sid))
			return 0;
	}
	memset(sid, 0, LB_QUIC_LB_SID_MAX);
	return -ENOSPC;
}

int state_server_id_valid(const struct state_vip *v, const struct state_backend *b,
			  const __u8 sid[LB_QUIC_LB_SID_MAX], const char **why)
{
	__u32 i;

	for (i = v->quic.cfg.sid_len; i < LB_QUIC_LB_SID_MAX; i++)
		if (sid[i]) {
			*why = "longer than the VIP's server ids";
			return -EINVAL;
		}
	if (sid_zero(sid)) {
		*why = "all zero (ringlb keeps it for none)";
		return -EINVAL;
	}
	if (sid_taken(v, b, sid)) {
		*why = "another backend of the VIP has it";
		return -EEXIST;
	}
	return 0;
}

int state_vip_quic_set(struct state_vip *v, const struct state_quic *q, const char **why)
{
	struct state_vip next = *v;
	size_t i;
	int err = 0;

	if (!q->set) {
		for (i = 0; i < v->backend_count; i++)
			memset(v->backends[i].server_id, 0, LB_QUIC_LB_SID_MAX);
		memset(&v->quic, 0, sizeof(v->quic));
		return 0;
	}
	if (v->spec.protocol != IPPROTO_UDP) {
		*why = "QUIC-LB is for UDP VIPs";
		return -EINVAL;
	}
	if (!quic_lb_config_ok(&q->cfg)) {
		*why = "the QUIC-LB configuration is out of the draft's bounds";
		return -EINVAL;
	}
	/* The new ids are worked out on the side: a refusal changes nothing. */
	next.backends = calloc(v->backend_count ? v->backend_count : 1, sizeof(*v->backends));
	if (!next.backends) {
		*why = "out of memory";
		return -ENOMEM;
	}
	memcpy(next.backends, v->backends, v->backend_count * sizeof(*v->backends));
	next.quic = *q;
	/*
	 * Kept first: at the same length every id as it is; at another, each id
	 * whose number fits, unless two become one (the first keeps it). Then
	 * the others get the lowest free ids.
	 */
	for (i = 0; i < v->backend_count; i++) {
		struct state_backend *b = &next.backends[i];

		memset(b->server_id, 0, LB_QUIC_LB_SID_MAX);
		if (v->quic.set)
			sid_resize(v->backends[i].server_id, v->quic.cfg.sid_len, q->cfg.sid_len,
				   b->server_id);
	}
	for (i = 0; i < v->backend_count; i++) {
		struct state_backend *b = &next.backends[i];
		size_t j;

		for (j = 0; j < i && !sid_zero(b->server_id); j++)
			if (memcmp(next.backends[j].server_id, b->server_id, LB_QUIC_LB_SID_MAX) == 0)
				memset(b->server_id, 0, LB_QUIC_LB_SID_MAX);
	}
	for (i = 0; i < v->backend_count && !err; i++)
		if (sid_zero(next.backends[i].server_id))
			err = state_server_id_free(&next, &next.backends[i], next.backends[i].server_id);
	if (err) {
		*why = "more backends than server ids of that length";
		err = -EINVAL;
	} else {
		for (i = 0; i < v->backend_count; i++)
			memcpy(v->backends[i].server_id, next.backends[i].server_id,
			       LB_QUIC_LB_SID_MAX);
		v->quic = *q;
	}
	free(next.backends);
	return err;
}

int state_backend_add(struct state *s, struct state_vip *vip, const struct state_backend *b)
{
	struct state_backend *backends;
	__u32 id = s->fleet.next_backend_id, tries;
	__u8 sid[LB_QUIC_LB_SID_MAX] = { 0 };
	const char *why;
	__u64 cookie;
	int err;

	if (state_backend_find(vip, b->name))
		return -EEXIST;
	/* A QUIC VIP's backend has a server id: the one given, else the lowest free one. */
	if (vip->quic.set) {
		memcpy(sid, b->server_id, sizeof(sid));
		err = sid_zero(sid) ? state_server_id_free(vip, NULL, sid) :
				      state_server_id_valid(vip, NULL, sid, &why);
		if (err)
			return err == -ENOSPC ? err : -EADDRINUSE;
	}
	/*
	 * Round-robin over the ids, so a freed slot is reused as late as
	 * possible: flows pinned to it have long expired by then.
	 */
	for (tries = 0; tries < LB_BACKENDS_MAX; tries++) {
		if (id == LB_BACKEND_NONE || id >= LB_BACKENDS_MAX)
			id = 1;
		if (!backend_id_taken(s, id))
			break;
		id++;
	}
	if (tries == LB_BACKENDS_MAX)
		return -ENOSPC;
	err = cookie_new(s, NULL, &cookie);
	if (err)
		return err;
	backends = realloc(vip->backends, (vip->backend_count + 1) * sizeof(*backends));
	if (!backends)
		return -ENOMEM;
	vip->backends = backends;
	backends[vip->backend_count] = *b;
	backends[vip->backend_count].id = id;
	backends[vip->backend_count].cookie = cookie;
	memcpy(backends[vip->backend_count].server_id, sid, sizeof(sid));
	vip->backend_count++;
	s->fleet.next_backend_id = id + 1 < LB_BACKENDS_MAX ? id + 1 : 1;
	return 0;
}

void state_backend_remove(struct state_vip *vip, struct state_backend *b)
{
	size_t at = (size_t)(b - vip->backends);

	memmove(&vip->backends[at], &vip->backends[at + 1],
		(vip->backend_count - at - 1) * sizeof(*b));
	vip->backend_count--;
}

/*
 * The ring members of a VIP: its backends in the ring (@k < 0), or the
 * members of its previous ring @k (their weights then).
 */
static struct ring_member *ring_members_of(const struct state_vip *vip, int k, size_t *count)
{
	struct ring_member *members;
	size_t i;

	*count = 0;
	members = calloc(vip->backend_count ? vip->backend_count : 1, sizeof(*members));
	if (!members)
		return NULL;
	for (i = 0; i < vip->backend_count; i++) {
		const struct state_backend *b = &vip->backends[i];
		__u32 weight = k < 0 ? b->weight : b->past_weight[k];

		if (k < 0 ? !state_backend_in_ring(b) : weight == 0)
			continue;
		members[*count].name = b->name;
		members[*count].weight = weight;
		(*count)++;
	}
	return members;
}

int state_vip_summary(const struct state_vip *vip, size_t *points, uint64_t *fingerprint)
{
	struct ring_member *members;
	size_t n;
	int err;

	members = ring_members_of(vip, -1, &n);
	if (!members)
		return -ENOMEM;
	err = ring_summary(vip->vnodes, members, n, points, fingerprint);
	free(members);
	return err;
}

/* The VIP's ring (@k < 0) or its previous ring @k, and each member's backend id. */
static int ring_of(const struct state_vip *vip, int k, struct ring **out, __u32 **backend_ids)
{
	struct ring_member *members;
	struct ring *r = NULL;
	__u32 *ids = NULL;
	size_t i, n = 0;
	int err;

	*out = NULL;
	*backend_ids = NULL;
	members = ring_members_of(vip, k, &n);
	if (!members)
		return -ENOMEM;
	err = ring_build(&r, k < 0 ? vip->vnodes : vip->past_vnodes[k], members, n);
	if (err)
		goto out;
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids) {
		err = -ENOMEM;
		goto out;
	}
	/* Ring members are numbered in name order; map each back to its backend. */
	for (i = 0; i < n; i++)
		ids[i] = state_backend_find(vip, ring_member_name(r, (__u32)i))->id;
	*out = r;
	*backend_ids = ids;
	r = NULL;
	ids = NULL;
out:
	ring_free(r);
	free(ids);
	free(members);
	return err;
}

int state_vip_ring(const struct state_vip *vip, struct ring **out, __u32 **backend_ids)
{
	return ring_of(vip, -1, out, backend_ids);
}

int state_vip_past_ring(const struct state_vip *vip, __u32 k, struct ring **out,
			__u32 **backend_ids)
{
	*out = NULL;
	*backend_ids = NULL;
	if (k >= vip->history_count)
		return -ENOENT;
	return ring_of(vip, (int)k, out, backend_ids);
}

int state_backend_kept(const struct state_vip *v, const struct state_backend *b)
{
	__u32 k;

	for (k = 0; k < v->history_count; k++)
		if (b->past_weight[k])
			return 1;
	return 0;
}

/* Make @before's ring @v's newest previous ring, forgetting the oldest beyond the limit. */
static void history_push(const struct state_vip *before, struct state_vip *v)
{
	size_t i;
	__u32 k;

	if (v->history_count < LB_RING_HISTORY)
		v->history_count++;
	for (k = v->history_count - 1; k > 0; k--)
		v->past_vnodes[k] = v->past_vnodes[k - 1];
	v->past_vnodes[0] = before->vnodes;
	for (i = 0; i < v->backend_count; i++) {
		struct state_backend *b = &v->backends[i];
		const struct state_backend *was = state_backend_find(before, b->name);

		for (k = LB_RING_HISTORY - 1; k > 0; k--)
			b->past_weight[k] = k < v->history_count ? b->past_weight[k - 1] : 0;
		b->past_weight[0] = was && was->cookie == b->cookie && state_backend_in_ring(was) ?
					    was->weight : 0;
	}
}

/*
 * Backends @before had and @v lost: retired while a previous ring names
 * them. @pushed: @before's ring just became @v's newest previous ring.
 */
static int retire_removed(const struct state_vip *before, struct state_vip *v, int pushed)
{
	struct state_backend *backends;
	size_t i;

	for (i = 0; i < before->backend_count; i++) {
		const struct state_backend *was = &before->backends[i];
		struct state_backend keep = *was;
		__u32 k;

		if (state_backend_find(v, was->name))
			continue;
		if (pushed) {
			for (k = LB_RING_HISTORY - 1; k > 0; k--)
				keep.past_weight[k] = was->past_weight[k - 1];
			keep.past_weight[0] = state_backend_in_ring(was) ? was->weight : 0;
		}
		if (!state_backend_kept(v, &keep))
			continue;
		keep.retired = 1;
		keep.draining = 0;
		backends = realloc(v->backends, (v->backend_count + 1) * sizeof(*backends));
		if (!backends)
			return -ENOMEM;
		v->backends = backends;
		v->backends[v->backend_count++] = keep;
	}
	return 0;
}

void state_history_advance(const struct state *before, struct state *after)
{
	size_t i, j;

	for (i = 0; i < after->fleet.vip_count; i++) {
		struct state_vip *v = &after->fleet.vips[i];
		const struct state_vip *was = before ? state_vip_find(before, &v->spec) : NULL;
		size_t p_was = 0, p_now = 0;
		uint64_t f_was = 0, f_now = 0;
		int pushed;

		if (v->forward != LB_FORWARD_GUE) {
			v->history_count = 0;
			for (j = 0; j < v->backend_count; j++)
				memset(v->backends[j].past_weight, 0,
				       sizeof(v->backends[j].past_weight));
			continue;
		}
		if (!was || was->id != v->id || was->forward != LB_FORWARD_GUE)
			continue;
		if (state_vip_summary(was, &p_was, &f_was) || state_vip_summary(v, &p_now, &f_now))
			continue;
		pushed = p_was && (p_was != p_now || f_was != f_now);
		if (pushed)
			history_push(was, v);
		/* Out of memory: a removed backend goes now, as it did before history. */
		(void)retire_removed(was, v, pushed);
		/* Retired backends no previous ring names any more leave. */
		for (j = v->backend_count; j-- > 0;)
			if (v->backends[j].retired && !state_backend_kept(v, &v->backends[j]))
				state_backend_remove(v, &v->backends[j]);
	}
}

/* --- health checks ---------------------------------------------------------------- */

void state_check_default(const struct vip_spec *spec, struct state_check *c)
{
	memset(c, 0, sizeof(*c));
	c->kind = spec->protocol == IPPROTO_TCP ? STATE_CHECK_TCP : STATE_CHECK_NONE;
	c->interval_ms = STATE_CHECK_INTERVAL_MS;
	c->timeout_ms = STATE_CHECK_TIMEOUT_MS;
	c->rise = STATE_CHECK_RISE;
	c->fall = STATE_CHECK_FALL;
	c->hold_ms = STATE_CHECK_HOLD_MS;
}

/* One side of PAYLOAD:EXPECT from @text up to @end into @out; -EINVAL when not printable or a bad %XX. */
static int udp_side(const char *text, const char *end, __u8 *out, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	const char *hi, *lo;

	for (*len = 0; text < end; (*len)++) {
		if (*text <= 0x20 || *text >= 0x7f || *text == ':')
			return -EINVAL;
		if (*text != '%') {
			out[*len] = (__u8)*text++;
			continue;
		}
		if (end - text < 3 || !(hi = strchr(hex, text[1] | 0x20)) || !text[1] ||
		    !(lo = strchr(hex, text[2] | 0x20)) || !text[2])
			return -EINVAL;
		out[*len] = (__u8)((hi - hex) << 4 | (lo - hex));
		text += 3;
	}
	return 0;
}

int state_check_udp_bytes(const char *text, __u8 send[STATE_CHECK_UDP_MAX], size_t *send_len,
			  __u8 expect[STATE_CHECK_UDP_MAX], size_t *expect_len)
{
	const char *colon = strchr(text, ':');

	if (!colon || colon == text || strlen(text) > STATE_CHECK_PATH_MAX ||
	    udp_side(text, colon, send, send_len) ||
	    udp_side(colon + 1, colon + 1 + strlen(colon + 1), expect, expect_len))
		return -EINVAL;
	return 0;
}

/* A host name: labels of 1 .. 63 letters, digits, '-' or '_', dots between, one final dot allowed. */
static int dns_name_ok(const char *name)
{
	size_t label = 0, len = strlen(name), i;

	if (!len || len > 253 || name[0] == '.')
		return 0;
	for (i = 0; i < len; i++) {
		char ch = name[i];

		if (ch == '.') {
			if (!label)
				return 0;
			label = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			   (ch >= '0' && ch <= '9') || ch == '-' || ch == '_') {
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

int state_check_parse(const char *text, struct state_check *c, const char **why)
{
	__u8 send[STATE_CHECK_UDP_MAX], expect[STATE_CHECK_UDP_MAX];
	size_t i, len, send_len, expect_len;

	memset(c->path, 0, sizeof(c->path));
	if (strcmp(text, "tcp") == 0 || strcmp(text, "none") == 0) {
		c->kind = text[0] == 't' ? STATE_CHECK_TCP : STATE_CHECK_NONE;
		return 0;
	}
	if (strncmp(text, "dns:", 4) == 0) {
		if (strlen(text + 4) > STATE_CHECK_PATH_MAX || !dns_name_ok(text + 4)) {
			*why = "a DNS check's name is a host name (labels of letters, digits, - and _, "
			       "1 to 63 each) of at most 127 characters";
			return -EINVAL;
		}
		c->kind = STATE_CHECK_DNS;
		memcpy(c->path, text + 4, strlen(text + 4));
		return 0;
	}
	if (strncmp(text, "udp:", 4) == 0) {
		if (state_check_udp_bytes(text + 4, send, &send_len, expect, &expect_len)) {
			*why = "a UDP check is udp:PAYLOAD:EXPECT, PAYLOAD not empty, both printable "
			       "ASCII with %XX for space, %, : and any other byte, at most 127 "
			       "characters";
			return -EINVAL;
		}
		c->kind = STATE_CHECK_UDP;
		memcpy(c->path, text + 4, strlen(text + 4));
		return 0;
	}
	if (strncmp(text, "http:", 5)) {
		*why = "must be tcp, http:PATH or none; or dns:NAME or udp:PAYLOAD:EXPECT";
		return -EINVAL;
	}
	text += 5;
	len = strlen(text);
	if (text[0] != '/' || len > STATE_CHECK_PATH_MAX) {
		*why = "an HTTP check's path starts with / and has at most 127 characters";
		return -EINVAL;
	}
	/* The path goes into a request line: printable, no space. */
	for (i = 0; i < len; i++)
		if (text[i] <= 0x20 || text[i] >= 0x7f) {
			*why = "an HTTP check's path is printable ASCII without spaces";
			return -EINVAL;
		}
	c->kind = STATE_CHECK_HTTP;
	memcpy(c->path, text, len);
	return 0;
}

int state_check_valid(const struct state_check *c, const char **why)
{
	if (c->interval_ms < CHECK_INTERVAL_MS_MIN || c->interval_ms > CHECK_INTERVAL_MS_MAX)
		*why = "the check interval is " LIMIT_STR(CHECK_INTERVAL_MS_MIN) " .. "
		       LIMIT_STR(CHECK_INTERVAL_MS_MAX) " ms";
	else if (c->timeout_ms < CHECK_TIMEOUT_MS_MIN || c->timeout_ms > c->interval_ms ||
		 c->timeout_ms > CHECK_TIMEOUT_MS_MAX)
		*why = "the check timeout is " LIMIT_STR(CHECK_TIMEOUT_MS_MIN) " ms .. the interval";
	else if (c->rise < CHECK_RUN_MIN || c->rise > CHECK_RUN_MAX || c->fall < CHECK_RUN_MIN ||
		 c->fall > CHECK_RUN_MAX)
		*why = "rise and fall are " LIMIT_STR(CHECK_RUN_MIN) " .. " LIMIT_STR(CHECK_RUN_MAX)
		       " checks";
	else if (c->hold_ms > CHECK_HOLD_MS_MAX)
		*why = "the hold is " LIMIT_STR(CHECK_HOLD_MS_MIN) " .. " LIMIT_STR(CHECK_HOLD_MS_MAX)
		       " ms";
	else
		return 0;
	return -EINVAL;
}

void state_check_format(const struct state_check *c, char *buf, size_t len)
{
	if (c->kind == STATE_CHECK_HTTP || c->kind == STATE_CHECK_DNS || c->kind == STATE_CHECK_UDP)
		snprintf(buf, len, "%s:%s", c->kind == STATE_CHECK_HTTP ? "http" :
					    c->kind == STATE_CHECK_DNS ? "dns" : "udp", c->path);
	else
		snprintf(buf, len, "%s", c->kind == STATE_CHECK_TCP ? "tcp" : "none");
}

int state_check_equal(const struct state_check *a, const struct state_check *b)
{
	return a->kind == b->kind && strcmp(a->path, b->path) == 0 && a->port == b->port &&
	       a->direct == b->direct && a->interval_ms == b->interval_ms &&
	       a->timeout_ms == b->timeout_ms && a->rise == b->rise && a->fall == b->fall &&
	       a->hold_ms == b->hold_ms;
}

int state_vip_fails_open(const struct state_vip *v)
{
	size_t i;

	for (i = 0; i < v->backend_count; i++)
		if (v->backends[i].held)
			return 1;
	return 0;
}

void state_health_settle(const struct state *before, struct state *after)
{
	size_t i, j, up;

	for (i = 0; i < after->fleet.vip_count; i++) {
		struct state_vip *v = &after->fleet.vips[i];
		const struct state_vip *was = before ? state_vip_find(before, &v->spec) : NULL;

		up = 0;
		for (j = 0; j < v->backend_count; j++) {
			struct state_backend *b = &v->backends[j];

			if (!b->down || b->draining || b->retired)
				b->held = 0;
			up += !b->draining && !b->retired && !b->down;
		}
		for (j = 0; j < v->backend_count; j++) {
			struct state_backend *b = &v->backends[j];
			const struct state_backend *old = was ? state_backend_find(was, b->name) : NULL;

			if (!b->down || b->draining || b->retired)
				continue;
			/* Fail open: the backends the ring served before all went down stay. */
			b->held = !up && old && old->cookie == b->cookie && state_backend_in_ring(old);
		}
	}
}

static int source_order(const void *a, const void *b)
{
	return prefix_compare(&((const struct state_source *)a)->prefix,
			      &((const struct state_source *)b)->prefix);
}

int state_sources_valid(int family, const struct state_source *list, size_t count,
			const char **why)
{
	struct state_source *sorted;
	size_t i;
	int err = 0;

	if (count > LB_SOURCES_PER_VIP_MAX) {
		*why = "more than " LIMIT_STR(LB_SOURCES_PER_VIP_MAX) " source prefixes";
		return -E2BIG;
	}
	for (i = 0; i < count; i++)
		if (list[i].prefix.addr.family != family) {
			*why = family == LB_FAMILY_IPV4 ?
				       "an IPv6 prefix for an IPv4 VIP, which sees IPv4 clients only" :
				       "an IPv4 prefix for an IPv6 VIP, which sees IPv6 clients only";
			return -EINVAL;
		}
	if (count < 2)
		return 0;
	sorted = malloc(count * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, list, count * sizeof(*sorted));
	qsort(sorted, count, sizeof(*sorted), source_order);
	for (i = 1; i < count && !err; i++)
		if (prefix_equal(&sorted[i - 1].prefix, &sorted[i].prefix)) {
			*why = sorted[i - 1].deny == sorted[i].deny ?
				       "a prefix listed twice" :
				       "a prefix both allowed and denied";
			err = -EINVAL;
		}
	free(sorted);
	return err;
}

size_t state_sources_total(const struct state *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->fleet.vip_count; i++)
		n += s->fleet.vips[i].source_count;
	return n;
}

int state_vip_sources_set(struct state *s, struct state_vip *v, const struct state_source *list,
			  size_t count, const char **why)
{
	struct state_source *copy;
	int err;

	err = state_sources_valid(v->spec.addr.family, list, count, why);
	if (err)
		return err;
	if (state_sources_total(s) - v->source_count + count > LB_SOURCES_MAX) {
		*why = "more than " LIMIT_STR(LB_SOURCES_MAX) " source prefixes in the state";
		return -ENOSPC;
	}
	copy = calloc(count ? count : 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (count)
		memcpy(copy, list, count * sizeof(*copy));
	qsort(copy, count, sizeof(*copy), source_order);
	free(v->sources);
	v->sources = copy;
	v->source_count = count;
	return 0;
}

int state_vip_allow_list(const struct state_vip *v)
{
	size_t i;

	for (i = 0; i < v->source_count; i++)
		if (!v->sources[i].deny)
			return 1;
	return 0;
}

int state_vip_source_refused(const struct state_vip *v, const struct addr *client,
			     const struct state_source **match)
{
	const struct state_source *best = NULL;
	size_t i;

	for (i = 0; i < v->source_count; i++)
		if (prefix_holds(&v->sources[i].prefix, client) &&
		    (!best || v->sources[i].prefix.len > best->prefix.len))
			best = &v->sources[i];
	if (match)
		*match = best;
	if (!v->source_count)
		return 0;
	if (!best)
		return state_vip_allow_list(v) ? LB_REASON_DROP_SOURCE_NOT_ALLOWED : 0;
	return best->deny ? LB_REASON_DROP_SOURCE_DENIED : 0;
}

struct state_iface *state_iface_find(const struct state *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->host.iface_count; i++)
		if (strcmp(s->host.ifaces[i].name, name) == 0)
			return &s->host.ifaces[i];
	return NULL;
}

static const char *const forward_names[] = {
	[LB_FORWARD_L2] = "l2",
	[LB_FORWARD_IPIP] = "ipip",
	[LB_FORWARD_GUE] = "gue",
};

const char *state_forward_name(int forward)
{
	return forward >= 0 && forward <= LB_FORWARD_GUE ? forward_names[forward] : "?";
}

int state_forward_parse(const char *text, int *forward)
{
	int f;

	for (f = LB_FORWARD_L2; f <= LB_FORWARD_GUE; f++)
		if (strcmp(text, forward_names[f]) == 0) {
			*forward = f;
			return 0;
		}
	return -EINVAL;
}

/* The backend of @cur that is @b of @spec's VIP: same cookie, name, address, MAC. */
static const struct state_backend *same_backend(const struct state *cur,
						const struct vip_spec *spec,
						const struct state_backend *b)
{
	const struct state_vip *v = state_vip_find(cur, spec);
	const struct state_backend *c = v ? state_backend_find(v, b->name) : NULL;

	if (c && c->cookie == b->cookie && addr_equal(&c->addr, &b->addr) &&
	    memcmp(c->mac, b->mac, sizeof(c->mac)) == 0)
		return c;
	return NULL;
}

int state_restore_ids(const struct state *cur, struct state *from)
{
	unsigned char vip_used[LB_VIPS_MAX] = { 0 }, *slot_used, *kept;
	size_t i, j, n, total = from->fleet.vip_count;
	__u32 next = cur->fleet.next_backend_id;
	int err = 0;

	for (i = 0; i < from->fleet.vip_count; i++)
		total += from->fleet.vips[i].backend_count;
	slot_used = calloc(LB_BACKENDS_MAX, 1);
	kept = calloc(total + 1, 1); /* per VIP first, then per backend */
	if (!slot_used || !kept) {
		err = -ENOMEM;
		goto out;
	}
	/* First what @cur has: those VIPs and backends stay where they serve. */
	for (i = 0; i < from->fleet.vip_count; i++) {
		struct state_vip *v = &from->fleet.vips[i];
		const struct state_vip *c = state_vip_find(cur, &v->spec);

		if (c) {
			v->id = c->id;
			vip_used[c->id] = 1;
			kept[i] = 1;
		}
	}
	for (i = 0; i < from->fleet.vip_count; i++) {
		struct state_vip *v = &from->fleet.vips[i];
		__u32 id;

		if (kept[i])
			continue;
		if (vip_id_taken(cur, v->id) || vip_used[v->id]) {
			for (id = 0; id < LB_VIPS_MAX && (vip_id_taken(cur, id) || vip_used[id]); id++)
				;
			if (id == LB_VIPS_MAX) {
				err = -ENOSPC;
				goto out;
			}
			v->id = id;
		}
		vip_used[v->id] = 1;
	}
	memset(kept, 0, total + 1);
	for (i = 0, n = 0; i < from->fleet.vip_count; i++)
		for (j = 0; j < from->fleet.vips[i].backend_count; j++, n++) {
			struct state_backend *b = &from->fleet.vips[i].backends[j];
			const struct state_backend *c = same_backend(cur, &from->fleet.vips[i].spec, b);

			if (c) {
				b->id = c->id;
				slot_used[c->id] = 1;
				kept[n] = 1;
			}
		}
	for (i = 0, n = 0; i < from->fleet.vip_count; i++)
		for (j = 0; j < from->fleet.vips[i].backend_count; j++, n++) {
			struct state_backend *b = &from->fleet.vips[i].backends[j];
			__u32 tries;

			if (kept[n])
				continue;
			if (backend_id_taken(cur, b->id) || slot_used[b->id]) {
				for (tries = 0; tries < LB_BACKENDS_MAX; tries++, next++) {
					if (next == LB_BACKEND_NONE || next >= LB_BACKENDS_MAX)
						next = 1;
					if (!backend_id_taken(cur, next) && !slot_used[next])
						break;
				}
				if (tries == LB_BACKENDS_MAX) {
					err = -ENOSPC;
					goto out;
				}
				b->id = next++;
			}
			slot_used[b->id] = 1;
			/* Another backend's identity in @cur is never taken over. */
			if (cookie_taken(cur, b->cookie)) {
				err = cookie_new(cur, from, &b->cookie);
				if (err)
					goto out;
			}
		}
	from->fleet.next_backend_id = next == LB_BACKEND_NONE || next >= LB_BACKENDS_MAX ? 1 : next;
out:
	free(slot_used);
	free(kept);
	return err;
}
