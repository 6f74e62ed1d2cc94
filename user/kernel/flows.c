// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flow table: counted per backend (live and closing flows within an
 * idle time, only for the backend each flow was pinned to), read whole for
 * `ringlb flows`, entries looked up, written (tests), deleted, and idle
 * entries expired (the daemon's sweep, so the table's occupancy is the flows
 * that are live). The controller maps the table's sets (a lookup copies its
 * one set instead) and reads and writes them in place with the program's own
 * functions (bpf/lb_flow_table.h): a way is read whole only when its tag,
 * key and check agree, and emptied only while it still has the tag it was
 * read with.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "image.h"
#include "lb_flow_table.h"
#include "ring.h"

/* Flows a read of the whole table makes room for first. */
#define FLOW_READ_FIRST 4096

/*
 * The flow table's settings, and some of its sets mapped: read and written in
 * place, as the program does (bpf/lb_flow_table.h), while it runs. A write
 * of one flow maps the pages of its one set: the kernel fills the page tables
 * of a whole mapping when it is made (2.25 GiB of sets at the most).
 */
struct flow_view {
	char *base;
	size_t off, len;
	__u32 count;
	__u64 key[LB_FLOW_TABLE_KEY_WORDS];
};

/* The settings of the table: its sets and key. */
static int flow_view_open(const struct lb_maps *maps, struct flow_view *v)
{
	struct bpf_map_info info = {}, tinfo = {};
	__u32 len = sizeof(info), tlen = sizeof(tinfo), zero = 0;
	struct lb_flow_table t;

	memset(v, 0, sizeof(*v));
	if (bpf_obj_get_info_by_fd(maps->flows, &info, &len) ||
	    bpf_obj_get_info_by_fd(maps->flow_table, &tinfo, &tlen))
		return -errno;
	/* Maps of another layout: not ours to read (nor to copy into this stack). */
	if (info.value_size != sizeof(struct lb_flow_set) ||
	    tinfo.value_size != sizeof(struct lb_flow_table))
		return -EPROTO;
	if (bpf_map_lookup_elem(maps->flow_table, &zero, &t))
		return -errno;
	/* Not made yet, or made for other sets. */
	if (!t.sets || t.sets != info.max_entries)
		return -EPROTO;
	v->count = t.sets;
	memcpy(v->key, t.key, sizeof(v->key));
	return 0;
}

/* Map sets @first .. @first + @n - 1 of the table (flow_view_open()'s) @fd. */
static int flow_view_map(struct flow_view *v, int fd, __u32 first, __u32 n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), from, to;
	void *at;

	from = (size_t)first * sizeof(struct lb_flow_set) / page * page;
	to = ((size_t)(first + n) * sizeof(struct lb_flow_set) + page - 1) / page * page;
	at = mmap(NULL, to - from, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)from);
	if (at == MAP_FAILED)
		return -errno;
	v->base = at;
	v->off = from;
	v->len = to - from;
	return 0;
}

/* Set @i, mapped. */
static struct lb_flow_set *flow_set(const struct flow_view *v, __u32 i)
{
	return (struct lb_flow_set *)(void *)(v->base +
					      ((size_t)i * sizeof(struct lb_flow_set) - v->off));
}

static void flow_view_close(struct flow_view *v)
{
	if (v->base)
		munmap(v->base, v->len);
	v->base = NULL;
}

/* The settings and every set mapped. */
static int flow_view_open_all(const struct lb_maps *maps, struct flow_view *v)
{
	int err = flow_view_open(maps, v);

	return err ? err : flow_view_map(v, maps->flows, 0, v->count);
}

/* A way's tag as the program last wrote it: one load. */
static __u32 flow_tag_read(const struct lb_flow_set *s, __u32 i)
{
	return __atomic_load_n(&s->tag[i], __ATOMIC_ACQUIRE);
}

/*
 * Empty way @i of set @s if it still has tag @tag: a flow the program wrote
 * there meanwhile (another tag) keeps it. Return: 1 when emptied.
 */
static int flow_tag_clear(struct lb_flow_set *s, __u32 i, __u32 tag)
{
	return __atomic_compare_exchange_n(&s->tag[i], &tag, 0, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/*
 * Way @i of set @set_id, copied into @out when it holds a flow whole: its tag
 * and check agree with its key, and its key belongs in this set. A way being
 * written as it is read, or emptied, is skipped. Return: its tag, or 0.
 */
static __u32 flow_way_copy(const struct flow_view *v, __u32 set_id, __u32 i,
			   struct lb_flow_way *out)
{
	const struct lb_flow_set *s = flow_set(v, set_id);
	__u32 tag = flow_tag_read(s, i);
	uint64_t kw[SIPHASH_FLOW_WORDS];
	__u64 h;

	if (!tag)
		return 0;
	memcpy(out, (const void *)&s->way[i], sizeof(*out));
	/* Rewritten or emptied while it was copied: the copy may mix two flows. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (flow_tag_read(s, i) != tag)
		return 0;
	lb_flow_words(&out->key, kw);
	h = lb_flow_table_hash(kw, v->key);
	if (lb_flow_tag(h) != tag || lb_flow_set_of(h, v->count) != set_id ||
	    lb_flow_way_differs(out, kw, h))
		return 0;
	return tag;
}

/*
 * Call @fn for every flow of the table, with where it is (set, way, tag), in
 * the order of the sets; a flow made or evicted meanwhile may or may not be
 * seen. With @once, a flow two CPUs pinned at once (in two ways of its set)
 * is passed once, its lowest way (the one packets find); without, every way,
 * as the expiry needs (each copy is idle by its own second). @fn returns 0
 * to go on, or -errno to stop.
 */
static int flows_walk(const struct lb_maps *maps, int once,
		      int (*fn)(struct flow_view *v, __u32 set_id, __u32 i, __u32 tag,
				const struct lb_flow_way *w, void *arg),
		      void *arg)
{
	struct flow_view v;
	struct lb_flow_way w[LB_FLOW_WAYS];
	__u32 set_id, i, j, tag[LB_FLOW_WAYS];
	int err = flow_view_open_all(maps, &v);

	for (set_id = 0; !err && set_id < v.count; set_id++) {
		for (i = 0; i < LB_FLOW_WAYS; i++) {
			tag[i] = flow_way_copy(&v, set_id, i, &w[i]);
			for (j = 0; once && tag[i] && j < i; j++)
				if (tag[j] && !memcmp(&w[j].key, &w[i].key, sizeof(w[i].key)))
					tag[i] = 0;
		}
		for (i = 0; !err && i < LB_FLOW_WAYS; i++)
			if (tag[i])
				err = fn(&v, set_id, i, tag[i], &w[i], arg);
	}
	flow_view_close(&v);
	return err;
}

/* When @f last saw a packet, in the coarse clock's nanoseconds (its seconds kept whole). */
static __u64 flow_last_seen_ns(const struct lb_flow *f)
{
	return (__u64)f->last_seen_s * LB_NS_PER_S;
}

__u64 kernel_now_ns(void)
{
	struct timespec now;

	/* bpf_ktime_get_coarse_ns() counts CLOCK_MONOTONIC, coarsely. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
}

struct tally_walk {
	const __u64 *cookie_of;
	__u64 now_ns, idle_ns;
	struct kernel_tally *t;
};

static int tally_one(struct flow_view *v, __u32 set_id, __u32 i, __u32 tag,
		     const struct lb_flow_way *way, void *arg)
{
	struct tally_walk *w = arg;
	const struct lb_flow *f = &way->flow;
	__u32 id = lb_flow_slot(f);

	(void)v, (void)set_id, (void)i, (void)tag;
	w->t->entries++;
	/* Only the backend it was pinned to; cookies are never 0. */
	if (id >= LB_BACKENDS_MAX || !w->cookie_of[id] || !lb_flow_cookie_is(f, w->cookie_of[id]))
		return 0;
	/* Touched at most once a second, so allow that much slack. */
	if (w->now_ns > flow_last_seen_ns(f) + w->idle_ns + LB_FLOW_TOUCH_NS)
		return 0;
	w->t->live[id]++;
	if (lb_flow_flags(f) & (LB_FLOW_FIN | LB_FLOW_RST))
		w->t->closing[id]++;
	return 0;
}

/* Count the flow table's entries per backend. */
int kernel_flow_tally(const struct lb_maps *maps, const struct state *s, __u64 idle_ns,
		   struct kernel_tally *t)
{
	__u64 *cookie_of = calloc(LB_BACKENDS_MAX, sizeof(*cookie_of));
	struct tally_walk w = { cookie_of, kernel_now_ns(), idle_ns, t };
	size_t i, j;
	int err;

	memset(t, 0, sizeof(*t));
	if (!cookie_of)
		return -ENOMEM;
	for (i = 0; i < s->fleet.vip_count; i++)
		for (j = 0; j < s->fleet.vips[i].backend_count; j++)
			cookie_of[s->fleet.vips[i].backends[j].id] = s->fleet.vips[i].backends[j].cookie;
	err = flows_walk(maps, 1, tally_one, &w);
	free(cookie_of);
	return err;
}

struct read_walk {
	struct kernel_flow *all;
	size_t count, room;
};

static int read_one(struct flow_view *v, __u32 set_id, __u32 i, __u32 tag,
		    const struct lb_flow_way *way, void *arg)
{
	struct read_walk *w = arg;
	struct kernel_flow *grown;
	size_t room;

	(void)v, (void)set_id, (void)i, (void)tag;
	if (w->count == w->room) {
		room = w->room ? 2 * w->room : FLOW_READ_FIRST;
		grown = realloc(w->all, room * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		w->all = grown;
		w->room = room;
	}
	w->all[w->count].key = way->key;
	w->all[w->count++].value = way->flow;
	return 0;
}

int kernel_flows_read(const struct lb_maps *maps, struct kernel_flow **out, size_t *count)
{
	struct read_walk w = { 0 };
	int err = flows_walk(maps, 1, read_one, &w);

	if (err) {
		free(w.all);
		return err;
	}
	*out = w.all;
	*count = w.count;
	return 0;
}

/* The set of flow @key in @v: its words into @kw, its table hash into @h. */
static __u32 flow_view_set_of(const struct flow_view *v, const struct lb_flow_key *key,
			      uint64_t kw[SIPHASH_FLOW_WORDS], __u64 *h)
{
	lb_flow_words(key, kw);
	*h = lb_flow_table_hash(kw, v->key);
	return lb_flow_set_of(*h, v->count);
}

/*
 * A lookup reads its set's copy with one call (no mapping: 4 - 5 us a flow
 * where mapping the set took 10), and finds the flow in the copy as the
 * program does: the key and backend it answers are bound by the way's check
 * (a copy torn by a write meanwhile fails it), its second and marks may be
 * another write's.
 */
int kernel_flow_get(const struct lb_maps *maps, const struct lb_flow_key *key,
		    struct lb_flow *out)
{
	uint64_t kw[SIPHASH_FLOW_WORDS];
	struct lb_flow_set s;
	struct flow_view v;
	__u32 set_id;
	__u64 h;
	int err = flow_view_open(maps, &v), i;

	if (err)
		return err;
	set_id = flow_view_set_of(&v, key, kw, &h);
	if (bpf_map_lookup_elem(maps->flows, &set_id, &s))
		return -errno;
	i = lb_flow_find(&s, kw, h);
	if (i < 0)
		return -ENOENT;
	*out = s.way[i].flow;
	return 0;
}

int kernel_flow_put(const struct lb_maps *maps, const struct lb_flow_key *key,
		    const struct lb_flow *f)
{
	uint64_t kw[SIPHASH_FLOW_WORDS];
	struct lb_flow_set *s;
	struct flow_view v;
	__u32 set_id;
	__u64 h;
	int err = flow_view_open(maps, &v), i;

	if (err)
		return err;
	/* The pages of its one set only. */
	set_id = flow_view_set_of(&v, key, kw, &h);
	err = flow_view_map(&v, maps->flows, set_id, 1);
	if (err)
		return err;
	s = flow_set(&v, set_id);
	i = lb_flow_find(s, kw, h);
	lb_flow_put(s, i >= 0 ? (__u32)i : lb_flow_victim(s), kw, h, f);
	flow_view_close(&v);
	return 0;
}

int kernel_flows_delete(const struct lb_maps *maps, const struct lb_flow_key *keys, size_t count,
			size_t *deleted)
{
	uint64_t kw[SIPHASH_FLOW_WORDS];
	struct flow_view v;
	__u32 set_id, n;
	__u64 h;
	size_t k;
	int err = flow_view_open_all(maps, &v), i, gone;

	*deleted = 0;
	if (err)
		return err;
	for (k = 0; k < count; k++) {
		set_id = flow_view_set_of(&v, &keys[k], kw, &h);
		/*
		 * Every copy (two CPUs may have pinned the flow at once); a way the
		 * program gave to another flow meanwhile is looked for again.
		 */
		for (n = 0, gone = 0; n < 2 * LB_FLOW_WAYS; n++) {
			i = lb_flow_find(flow_set(&v, set_id), kw, h);
			if (i < 0)
				break;
			gone |= flow_tag_clear(flow_set(&v, set_id), (__u32)i, lb_flow_tag(h));
		}
		*deleted += (size_t)gone;
	}
	flow_view_close(&v);
	return 0;
}

int kernel_flows_clear(const struct lb_maps *maps)
{
	struct flow_view v;
	__u32 set_id, i;
	int err = flow_view_open_all(maps, &v);

	if (err)
		return err;
	for (set_id = 0; set_id < v.count; set_id++)
		for (i = 0; i < LB_FLOW_WAYS; i++)
			__atomic_store_n(&flow_set(&v, set_id)->tag[i], 0, __ATOMIC_RELEASE);
	flow_view_close(&v);
	return 0;
}

struct expire_walk {
	__u64 now_ns, open_ns, closed_ns;
	size_t seen, removed;
};

static int expire_one(struct flow_view *v, __u32 set_id, __u32 i, __u32 tag,
		      const struct lb_flow_way *way, void *arg)
{
	struct expire_walk *w = arg;
	const struct lb_flow *f = &way->flow;
	__u64 timeout = lb_flow_flags(f) & (LB_FLOW_FIN | LB_FLOW_RST) ? w->closed_ns : w->open_ns;

	w->seen++;
	/* Touched at most once a second, so allow that much slack. */
	if (w->now_ns <= flow_last_seen_ns(f) + timeout + LB_FLOW_TOUCH_NS)
		return 0;
	w->removed += (size_t)flow_tag_clear(flow_set(v, set_id), i, tag);
	return 0;
}

int kernel_flows_expire(const struct lb_maps *maps, __u64 open_ns, __u64 closed_ns,
			struct kernel_expiry *x)
{
	struct expire_walk w = { kernel_now_ns(), open_ns, closed_ns, 0, 0 };
	int err;

	memset(x, 0, sizeof(*x));
	err = flows_walk(maps, 0, expire_one, &w);
	x->seen = w.seen;
	x->removed = w.removed;
	return err;
}
