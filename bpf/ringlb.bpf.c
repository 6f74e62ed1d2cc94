// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb's XDP data path.
 *
 * For each frame: parse Ethernet (at most one VLAN tag), IPv4 (options
 * included) or IPv6 (hop-by-hop, routing and destination options walked),
 * then TCP or UDP; match {VIP address, port, protocol}; find the flow in the
 * flow table, or place it with the VIP's consistent-hash ring (a VIP with
 * source ranges first refuses clients they exclude, lb_sources.h); rewrite the
 * MACs for L2 direct server return and send it back out (XDP_TX). ICMP errors
 * about a VIP flow (fragmentation needed, packet too big, ...) follow the
 * flow they quote to its backend, so path MTU discovery works through the
 * balancer. A QUIC-LB VIP's datagrams go to the backend the server id in
 * their connection ID names, or where the ring puts that connection ID
 * (lb_quic.h). Everything that is not for a VIP, or cannot be parsed, goes to
 * the host untouched (XDP_PASS). Every frame is counted under one reason.
 *
 * The flow hash is SipHash-1-3 under the deployment's secret (ring/siphash.h,
 * shared with the controller); the ring search is bpf/lb_ring_search.h, which
 * the controller compiles too: read the key's bucket entry, answer from it
 * when the hash is at or before its first point, else halve the bucket's run.
 */
#include "lb_flow_hash.h"
#include "lb_flow_table.h"
#include "lb_parse.h"
#include "lb_ring.h"
#include "lb_sources.h"
#include "lb_encap.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Load-time settings, written by the loader before the program is loaded.
 * Append-only: other builds read these by offset (lb_link_read()).
 */
const volatile __u64 flow_secret[2] = { 0, 0 };
const volatile __u8 iface_mac[ETH_ALEN] = { 0 };
/*
 * The build, for ringlb upgrade, show and verify to read back from the
 * kernel: the loader writes the digest of this object and of the maps'
 * layout; the version is the one it was built as.
 */
#ifndef RINGLB_BPF_VERSION
#define RINGLB_BPF_VERSION "unknown"
#endif
const volatile __u64 build_digest = 0;
const volatile __u64 layout_digest = 0;
const char build_version[LB_BUILD_VERSION_MAX] = RINGLB_BPF_VERSION;

/* --- maps ------------------------------------------------------------------ */

/* vips, backends and rings_0 .. rings_3 come with lb_ring.h. */

/*
 * The flow table: sets of ways (bpf/lb_flow_table.h), every CPU's. Its size
 * is the loader's (LB_FLOW_SETS() of the flows it is asked for); its memory
 * is mapped by the controller, which walks, counts and expires it there.
 * Pinned as "flow_sets", not "flows" as the kernel's LRU hash of the builds
 * before was: a controller of those builds opens no maps of this layout,
 * where it would read the sets as its hash's keys and values.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_FLOW_SETS(LB_FLOWS_DEFAULT));
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct lb_flow_set);
	LB_PINNED;
} flow_sets SEC(".maps");

/* The table's hash key and size: written once, by the loader that makes the table. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_flow_table);
	LB_PINNED;
} flow_table SEC(".maps");

/* The controller's record of what the maps hold; the program never reads it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_control);
	LB_PINNED;
} control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_flow_rate);
	LB_PINNED;
} flow_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, __u32);
	__type(value, struct lb_counters);
	LB_PINNED;
} vip_stats SEC(".maps");

/* Per VIP: frames its source ranges refused (either reason). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_VIPS_MAX);
	__type(key, __u32);
	__type(value, struct lb_counters);
	LB_PINNED;
} vip_refused SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_BACKENDS_MAX);
	__type(key, __u32);
	__type(value, struct lb_backend_counters);
	LB_PINNED;
} backend_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_REASON_COUNT);
	__type(key, __u32);
	__type(value, struct lb_counters);
	LB_PINNED;
} reason_stats SEC(".maps");

/*
 * The frame's length as it came in, kept across lb_encap() (which moves the
 * frame's head) for the counters after it; the program's own, per CPU. In
 * memory, not in a variable live through the whole program: that measured
 * 0.07 - 0.14 of Katran's program more per encapsulated packet (BENCHMARKS.md,
 * 1g). The program runs to its end on one CPU, and XDP does not nest on a
 * CPU (bottom halves off; PREEMPT_RT aside); where a kernel let another XDP
 * run in between, a frame would only be counted with another's length,
 * never sent elsewhere.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} frame_len SEC(".maps");

/*
 * The VIP epoch (lb_contract.h, each CPU's VIP cache): the controller's,
 * shared by every instance.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
	LB_PINNED;
} vip_epoch SEC(".maps");

/*
 * This CPU's copies of VIP values, each valid under the epoch it was made in;
 * past them a scratch slot, for the value of a packet whose VIP is not
 * copied (an odd or zero epoch, another VIP's copy in its slot). vip_find()
 * so hands out a pointer into this map on every path: one type to the
 * verifier, where a pointer into "vips" on some paths made it walk the rest
 * of the program twice (727,388 instructions, against 410,382). A slot is
 * written in several stores and the scratch slot serves every uncopied
 * VIP: both are safe because XDP does not nest on a CPU (bottom halves off;
 * PREEMPT_RT aside), as frame_len above assumes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_VIP_CACHE_SLOTS + 1);
	__type(key, __u32);
	__type(value, struct lb_vip_cache_slot);
} vip_cache SEC(".maps");

/* The coarse clock as this CPU last read it: see struct lb_clock. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lb_clock);
} clocks SEC(".maps");

/* --- the VIP ------------------------------------------------------------------ */

/*
 * vip_find() - the value of the VIP a packet is addressed to, no older than
 * map "vips" held when the packet read the epoch: this CPU's copy made under
 * it, else the map's, copied into the VIP's slot when the epoch is even and
 * the slot holds no copy of another VIP under it (two VIPs of one slot: the
 * first keeps it until the epoch moves, the other is read from the map each
 * time).
 * @key: the packet's flow key, as key_settle() wrote it (the slot's key)
 * @k: its VIP key, vip_key_of()'s (the map's key)
 * Return: the value, or NULL for no such VIP.
 */
static __always_inline struct lb_vip *vip_find(const struct lb_flow_key *key,
					      const struct lb_vip_key *k)
{
	const __u64 *w = (const __u64 *)key->dst_addr;
	__u32 zero = 0, tail = lb_vip_tail_of(key), at, scratch = LB_VIP_CACHE_SLOTS;
	struct lb_vip_cache_slot *s, *to;
	struct lb_vip *v;
	__u64 *ep, e = 0;

	ep = bpf_map_lookup_elem(&vip_epoch, &zero);
	if (ep)
		e = *(volatile __u64 *)ep;
	/* An odd or zero epoch: no copy is used or made. */
	e &= -(__u64)(1 - (e & 1));
	at = lb_vip_cache_slot_of(w[0], w[1], tail);
	s = bpf_map_lookup_elem(&vip_cache, &at);
	if (!s)
		return NULL;
	if (e && s->epoch == e &&
	    ((s->addr[0] ^ w[0]) | (s->addr[1] ^ w[1]) | (s->tail ^ tail)) == 0)
		return &s->vip;
	v = bpf_map_lookup_elem(&vips, k);
	to = bpf_map_lookup_elem(&vip_cache, &scratch);
	if (!v || !to)
		return NULL;
	if (e && s->epoch != e) {
		s->addr[0] = w[0];
		s->addr[1] = w[1];
		s->tail = tail;
		s->pad = 0;
		s->epoch = e;
		to = s;
	}
	to->vip = *v;
	return &to->vip;
}

/* --- backend choice ------------------------------------------------------------ */

/*
 * bpf_ktime_get_coarse_ns() without a call on most packets: a helper call
 * costs about 10 ns on these CPUs (docs/traps.md), bpf_jiffies64() is
 * inlined by the verifier, and the coarse clock moves only at a tick. Each
 * CPU's readings never go back; another CPU's may be a tick ahead.
 */
static __always_inline __u64 clock_now(__u32 *now_s)
{
	struct lb_clock *c;
	__u32 zero = 0;
	__u64 j = bpf_jiffies64(), ns;

	c = bpf_map_lookup_elem(&clocks, &zero);
	if (!c) {
		ns = bpf_ktime_get_coarse_ns();
		*now_s = (__u32)(ns / LB_NS_PER_S);
		return ns;
	}
	/* The seconds too, once a tick: a division is dear on every packet. Jiffies last. */
	if (c->jiffies != j) {
		c->now_ns = bpf_ktime_get_coarse_ns();
		c->now_s = (__u32)(c->now_ns / LB_NS_PER_S);
		barrier();
		c->jiffies = j;
	}
	*now_s = c->now_s;
	return c->now_ns;
}

static __always_inline __u64 flow_hash(const struct lb_flow_key *key)
{
	return flow_hash_with(key, flow_secret[0], flow_secret[1]);
}

/* QUIC-LB's maps and quic_pick(), which hash connection IDs with flow_hash(). */
#include "lb_quic.h"

/* Slot @id, for the choice predicates of lb_choose.h (NULL when out of range). */
static __always_inline struct lb_backend *backend_slot(__u32 id)
{
	return bpf_map_lookup_elem(&backends, &id);
}

/*
 * One more packet of the flow pinned in way @i of set @s: its marks, and its
 * last-seen time at most once a second. Only what changes is written (the
 * set's lines are shared by every CPU its flows' packets land on).
 */
static __always_inline void flow_touch(struct lb_flow_set *s, __u32 i, __u32 now_s,
				       __u8 tcp_flags)
{
	struct lb_flow *flow = &s->way[i & (LB_FLOW_WAYS - 1)].flow;
	__u32 flags = lb_flow_flags(flow);
	__u32 pinned_s = lb_flow_pinned_s(flow), pinned;

	if (lb_new_connection(tcp_flags)) {
		flags = 0;
		pinned_s = now_s;
	}
	if (tcp_flags & LB_TCP_FIN)
		flags |= LB_FLOW_FIN;
	/* A RST the backend ignored (RFC 5961) is followed by more packets. */
	if (tcp_flags & LB_TCP_RST)
		flags |= LB_FLOW_RST;
	else
		flags &= ~LB_FLOW_RST;
	pinned = lb_flow_pinned(pinned_s, flags);
	if (pinned != flow->pinned)
		flow->pinned = pinned;
	lb_flow_seen(s, i, now_s);
}

/*
 * May this CPU make one more flow-table entry this second (@now_s)? Past the
 * configured rate a new flow is placed by the ring and forwarded, but not
 * pinned: a flood of new flows cannot evict the pins of established ones.
 * Asking charges nothing: flow_rate_charge() counts an entry made,
 * flow_rate_refuse() a new flow left unpinned. Return: this CPU's rate
 * (NULL: no limit, or none to read), and in @room whether one more may be made.
 */
static __always_inline struct lb_flow_rate *flow_rate_room(__u32 now_s, int *room)
{
	struct lb_flow_rate *rate;
	struct lb_config *cfg;
	__u32 zero = 0;

	*room = 1;
	rate = bpf_map_lookup_elem(&flow_rate, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!rate || !cfg || !cfg->new_flows_max)
		return NULL;
	if (rate->second != now_s) {
		rate->second = now_s;
		rate->made = 0;
	}
	*room = rate->made < cfg->new_flows_max;
	return rate;
}

static __always_inline void flow_rate_charge(struct lb_flow_rate *rate)
{
	if (rate)
		rate->made++;
}

static __always_inline void flow_rate_refuse(struct lb_flow_rate *rate)
{
	if (rate)
		rate->refused++;
}

/*
 * The hop list of a flow whose owner under the serving ring is @first: its
 * owners under the VIP's previous rings, newest first, as lb_hops_wants()
 * and lb_hops_take() choose them.
 */
static __always_inline __u64 hops_of(__u32 vip_id, __u64 hash, __u32 first, __u8 family)
{
	struct lb_hops h = { 0 };
	__u32 k;

	for (k = 0; k < LB_RING_HISTORY; k++) {
		__u32 id = (__u32)lb_ring_owner_before(vip_id, k, hash);

		if (lb_hops_wants(&h, id, first))
			lb_hops_take(&h, id, backend_slot(id), vip_id, family);
	}
	return lb_hops_done(&h);
}

/*
 * Does the pin in way @i of set @s, of the flow of table hash @h, take a
 * packet with @tcp_flags of VIP @vip_id (lb_pin_holds())? Then @out and
 * @out_id are its backend, and the flow is touched unless @follow_only. The
 * backend is read once and checked against the flow's hash again: another
 * CPU may have given the way to another flow since it was found.
 */
static __always_inline int pin_takes(struct lb_flow_set *s, __u32 i, __u64 h, __u32 vip_id,
				     __u8 tcp_flags, int follow_only, __u32 now_s,
				     struct lb_backend **out, __u32 *out_id)
{
	__u64 backend = lb_flow_way_backend(&s->way[i & (LB_FLOW_WAYS - 1)], h);
	__u32 id = lb_flow_backend_slot(backend);
	struct lb_backend *b = backend_slot(id);

	if (!backend || !lb_pin_backend_holds(backend, b, vip_id, tcp_flags))
		return 0;
	if (!follow_only)
		flow_touch(s, i, now_s, tcp_flags);
	*out = b;
	*out_id = id;
	return 1;
}

/*
 * flow_find_rest() - lb_flow_find_from() for the ways of mask @rest of set
 * @s: a second flow of the flow's 32-bit tag in its set, about one lookup in
 * 2^29. A global function, verified once: its loop inlined would be walked
 * with the rest of the program once per way it can return.
 */
__noinline int flow_find_rest(const struct lb_flow_set *s, __u32 rest,
			      const struct lb_flow_key *key, __u64 h)
{
	if (!s || !key)
		return -1;
	LB_FLOW_KEY_WORDS(kw, key);
	return lb_flow_find_from(s, rest, kw, h);
}

/*
 * flow_empty() - empty every way of set @s that holds @key (of table hash
 * @h): one, unless two CPUs pinned the flow at once, and its lowest copy
 * would hide another. For a SYN past the rate, whose stale pin must take
 * none of the connection's next packets. A global function, verified once.
 */
__noinline int flow_empty(struct lb_flow_set *s, const struct lb_flow_key *key, __u64 h)
{
	int n, way;

	if (!s || !key)
		return 0;
	LB_FLOW_KEY_WORDS(kw, key);
	for (n = 0; n < LB_FLOW_WAYS; n++) {
		way = lb_flow_find(s, kw, h);
		if (way < 0)
			break;
		s->tag[way & (LB_FLOW_WAYS - 1)] = 0;
	}
	return n;
}

/*
 * RING_TOUCH_BITS - the smallest bucket index (2^bits buckets of 8 octets, 1
 * MiB and more) whose bucket a SYN reads before the flow table's line. A
 * smaller index stays in the caches, where the early read is only a cost.
 */
#define RING_TOUCH_BITS 17

/*
 * Read the entry of bucket @j of @ring (of class @class): each class's reads
 * end in an instruction of their own (the class as an operand), so clang
 * cannot merge the four into one call site, where the verifier, seeing four
 * maps, would inline neither lookup (docs/traps.md).
 */
#define RING_TOUCH_IN(ring, j, class)                                                         \
	do {                                                                                   \
		void *r_ = (ring);                                                             \
		const union lb_ring_slot *s_ = r_ ? ring_slot(r_, LB_RING_BUCKET_SLOT(j)) : NULL; \
		if (s_)                                                                        \
			asm volatile("" ::"r"(*(const volatile __u64 *)&s_->entry), "i"(class));  \
	} while (0)

/*
 * ring_touch() - begin the read of the ring bucket @hash falls in, for @vip:
 * a SYN's ring search then finds it on its way, its miss and the flow table's
 * at once, not one after the other (the profile put a third of a SYN's own
 * time on that bucket's read and a quarter on the table's). Reads only; a
 * global function, verified once. Return: 0.
 */
__noinline int ring_touch(const struct lb_vip *vip, __u64 hash)
{
	__u32 slot, bits, j;

	if (!vip)
		return 0;
	slot = ring_vip_slot(vip);
	bits = vip->index_bits;
	if (bits < LB_RING_BITS_MIN || bits > LB_RING_BITS_MAX)
		return 0;
	j = ring_bucket_of(hash, bits);
	switch (vip->ring_class) {
	case 0:
		RING_TOUCH_IN(bpf_map_lookup_elem(&rings_0, &slot), j, 0);
		break;
	case 1:
		RING_TOUCH_IN(bpf_map_lookup_elem(&rings_1, &slot), j, 1);
		break;
	case 2:
		RING_TOUCH_IN(bpf_map_lookup_elem(&rings_2, &slot), j, 2);
		break;
	case 3:
		RING_TOUCH_IN(bpf_map_lookup_elem(&rings_3, &slot), j, 3);
		break;
	}
	return 0;
}

/* The flow table's settings (NULL until the loader has made the table). */
static __always_inline const struct lb_flow_table *flow_table_get(void)
{
	__u32 zero = 0;
	const struct lb_flow_table *t = bpf_map_lookup_elem(&flow_table, &zero);

	return t && t->sets ? t : NULL;
}

/*
 * The flow's backend: its pinned one when that backend is still there
 * (active, or draining for a packet of an established connection), else the
 * ring's choice. A packet of a connection the balancer did not see start (a
 * TCP packet other than a SYN, not pinned) to a GUE backend also gets a hop
 * list (@hops): where the previous rings put the flow. The ring's choice is
 * pinned for next time unless the VIP is stateless, the packet got a hop
 * list (its connection may live elsewhere), @follow_only (an ICMP error
 * follows a flow, hop list included, but neither makes nor refreshes one) or the packet is a
 * RST. A RST of a pinned flow goes to its backend, which judges it, and the
 * flow stays pinned: a spoofed or out-of-window RST moves nothing.
 */
static __always_inline int backend_choose(struct lb_flow_key *key,
					  const struct lb_vip_key *vip_key,
					  const struct lb_vip *vip, __u8 tcp_flags,
					  int follow_only, struct lb_backend **out, __u32 *out_id,
					  __u64 *hops, __u64 *now_out)
{
	int syn = lb_new_connection(tcp_flags) && !follow_only;
	const struct lb_flow_table *table = NULL;
	struct lb_flow_set *set = NULL;
	struct lb_flow_rate *rate;
	__u32 vip_id = vip->vip_id;
	__u32 now_s, set_id;
	__u64 now = clock_now(&now_s);
	struct lb_backend_counters *bc;
	struct lb_backend *b;
	struct lb_flow fresh;
	/* Set whenever read: the verifier walks "not a SYN, then a SYN" too. */
	__u64 hash = 0, table_hash = 0;
	__u32 id = 0;
	int err, retried = 0, room, way = -1;
	__u32 rest, at;

	LB_FLOW_KEY_WORDS(kw, key);

	*hops = 0;
	*now_out = now;
	/* A SYN is seldom pinned: the read of its ring bucket begins before the table's. */
	if (syn) {
		hash = siphash13_flow(kw, flow_secret[0], flow_secret[1]);
		if (vip->index_bits >= RING_TOUCH_BITS)
			ring_touch(vip, hash);
	}
	/*
	 * The flow's set, and its way there if it has one: a SYN too, whose
	 * pin, while it holds, takes it (a retransmitted SYN, or a tuple reused,
	 * stays where its connection lives).
	 */
	if (lb_vip_pins(vip))
		table = flow_table_get();
	if (table) {
		table_hash = lb_flow_table_hash(kw, table->key);
		set_id = lb_flow_set_of(table_hash, table->sets);
		set = bpf_map_lookup_elem(&flow_sets, &set_id);
	}
	if (set) {
		way = lb_flow_find_first(set, kw, table_hash, &rest);
		if (rest)
			way = flow_find_rest(set, rest, key, table_hash);
		if (way >= 0 && pin_takes(set, (__u32)way, table_hash, vip_id, tcp_flags,
					  follow_only, now_s, out, out_id))
			return 0;
	}
	if (!syn)
		hash = siphash13_flow(kw, flow_secret[0], flow_secret[1]);
	/*
	 * A goto, not a loop: the verifier then sees one copy of the four
	 * inlined searches and prunes the second pass, where a counted loop
	 * had it verify both (636k instructions instead of half that).
	 */
again:
	err = ring_choose(vip, hash, &id);
	if (err < 0)
		return err;
	/* Only the ring's answer counts here, never a pinned slot's occupant. */
	b = err == 0 ? backend_slot(id) : NULL;
	b = lb_backend_serves(b, vip_id) ? b : NULL;
	/*
	 * The VIP value read earlier may have been replaced since: its slot may
	 * be empty or hold a newer ring, or its ring may name a backend the
	 * controller freed right after the swap. Read the VIP again, once: the
	 * second read sees the new ring, which names only installed backends.
	 */
	if (!b && !retried) {
		retried = 1;
		vip = bpf_map_lookup_elem(&vips, vip_key);
		if (!vip)
			return PARSE_FAIL(LB_REASON_DROP_NO_RING);
		goto again;
	}
	if (!b)
		return err == RING_MISSING ? PARSE_FAIL(LB_REASON_DROP_NO_RING) :
		       err == RING_STALE ? PARSE_FAIL(LB_REASON_DROP_BAD_RING) :
					   PARSE_FAIL(LB_REASON_DROP_BACKEND_GONE);
	*out = b;
	*out_id = id;
	/* An ICMP error about a TCP flow goes where that flow's packets go: the hops too. */
	if (lb_wants_hops(b, key->protocol, tcp_flags))
		*hops = hops_of(vip_id, hash, id, b->family);
	if (follow_only)
		return 0;
	if (set && lb_pins_new(vip, *hops, tcp_flags)) {
		/*
		 * Pinned where the ring puts it, in the way of the tuple's pin
		 * that did not hold, else in a free or the least recently seen
		 * way. Past the rate of new flows nothing is made, and a SYN's
		 * stale pin is emptied: a stale pin never takes the next packets
		 * of a connection its SYN did not go with.
		 */
		rate = flow_rate_room(now_s, &room);
		if (room) {
			fresh.backend = lb_flow_backend(id, b->cookie);
			fresh.last_seen_s = now_s;
			fresh.pinned = lb_flow_pinned(now_s, tcp_flags & LB_TCP_FIN ? LB_FLOW_FIN : 0);
			/* The tuple's way, else the victim, chosen without a branch. */
			at = (__u32)way >> 31;
			at = ((__u32)way & (at - 1)) | (lb_flow_victim(set) & -at);
			lb_flow_put(set, at, kw, table_hash, &fresh);
			flow_rate_charge(rate);
		} else {
			if (syn && way >= 0)
				flow_empty(set, key, table_hash);
			flow_rate_refuse(rate);
		}
	}
	bc = bpf_map_lookup_elem(&backend_stats, &id);
	if (bc)
		bc->new_flows++;
	return 0;
}

/*
 * quic_ring() - the backend the ring gives a QUIC connection ID that names
 * none (its position: quic_pick() left it in this CPU's scratch), with
 * backend_choose()'s one second read of a VIP value replaced under it. A
 * global function: the ring's four inlined searches are verified here once,
 * not once more on every path of the program that reaches them.
 * Return: the backend's id, or -(the reason the packet is dropped under).
 */
__noinline int quic_ring(const struct lb_vip *vip, const struct lb_vip_key *vip_key)
{
	__u64 hash = quic_picked_hash();
	struct lb_backend *b;
	__u32 id = 0;
	int err, k;

	for (k = 0; k < 2; k++) {
		if (!vip)
			return -LB_REASON_DROP_NO_RING;
		err = ring_choose(vip, hash, &id);
		if (err < 0)
			return err;
		b = err == 0 ? backend_slot(id) : NULL;
		if (lb_backend_serves(b, vip->vip_id))
			return (int)id;
		if (k == 0 && vip_key)
			vip = bpf_map_lookup_elem(&vips, vip_key);
		else
			return err == RING_MISSING ? -LB_REASON_DROP_NO_RING :
			       err == RING_STALE ? -LB_REASON_DROP_BAD_RING :
						   -LB_REASON_DROP_BACKEND_GONE;
	}
	return -LB_REASON_DROP_BACKEND_GONE;
}

/* --- the program ---------------------------------------------------------------- */

/* One frame of @bytes more in slot @key of the lb_counters array @map. */
static __always_inline void counters_add(void *map, __u32 key, __u64 bytes)
{
	struct lb_counters *c = bpf_map_lookup_elem(map, &key);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

static __always_inline void count(__u32 reason, __u64 bytes)
{
	counters_add(&reason_stats, reason, bytes);
}

static __always_inline int verdict(__u32 reason, __u64 bytes)
{
	count(reason, bytes);
	switch (LB_REASON_VERDICT(reason)) {
	case LB_VERDICT_FORWARD:
		return XDP_TX;
	case LB_VERDICT_DROP:
		return XDP_DROP;
	default:
		return XDP_PASS;
	}
}

/* The frame's length: as it came in until lb_encap() or lb_too_big() moves its head. */
static __always_inline __u64 frame_bytes(const struct xdp_md *ctx)
{
	return (__u64)(ctx->data_end - ctx->data);
}

/* Keep the frame's length as it came in (before lb_encap()), for frame_kept(). */
static __always_inline void frame_keep(const struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *len = bpf_map_lookup_elem(&frame_len, &zero);

	if (len)
		*len = frame_bytes(ctx);
}

/* The length frame_keep() kept on this CPU (the program runs to its end on one CPU). */
static __always_inline __u64 frame_kept(void)
{
	__u32 zero = 0;
	__u64 *len = bpf_map_lookup_elem(&frame_len, &zero);

	return len ? *len : 0;
}

/* A packet forwarded for a VIP to one of its backends. */
static __always_inline void stats_add(__u32 vip_id, __u32 backend_id, __u64 bytes)
{
	struct lb_backend_counters *bc;

	counters_add(&vip_stats, vip_id, bytes);
	bc = bpf_map_lookup_elem(&backend_stats, &backend_id);
	if (bc) {
		bc->packets++;
		bc->bytes += bytes;
	}
}

SEC("xdp")
int ringlb_xdp(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct lb_flow_key key = {};
	struct lb_vip_key vip_key __attribute__((aligned(8)));
	struct lb_backend *backend;
	struct ethhdr *eth;
	struct lb_vip *vip;
	__u32 reason, backend_id, reason_refused;
	__u64 hops, now, bytes;
	__u32 now_s;
	__u8 tcp_flags;
	int err;

	err = parse_flow(&c, &key, &eth, &tcp_flags);
	if (err < 0)
		return verdict(-err, frame_bytes(ctx));
	reason = err;
	vip_key_of(&key, &vip_key);
	vip = vip_find(&key, &vip_key);
	if (!vip)
		return verdict(reason == LB_REASON_FORWARDED_ICMP ? LB_REASON_PASS_ICMP :
								    LB_REASON_PASS_NOT_VIP,
			       frame_bytes(ctx));

	/* Source ranges before any flow or ring work; an ICMP error's client is the quoted one. */
	reason_refused = lb_source_refused(vip, key.src_addr);
	if (reason_refused) {
		counters_add(&vip_refused, vip->vip_id, frame_bytes(ctx));
		return verdict(reason_refused, frame_bytes(ctx));
	}

	/*
	 * A QUIC VIP's datagrams go by their connection ID. An ICMP error about
	 * one quotes the server's packet, whose connection ID is the client's:
	 * it follows the flow's addresses like any UDP flow's error.
	 */
	if ((vip->flags & LB_VIP_QUIC_LB) && reason == LB_REASON_FORWARDED &&
	    key.protocol == IPPROTO_UDP) {
		err = quic_pick(ctx, (__u32)(c.pos - (void *)(long)ctx->data), vip, key.dst_port);
		reason = QUIC_PICK_REASON(err);
		if (LB_REASON_VERDICT(reason) != LB_VERDICT_FORWARD)
			return verdict(reason, frame_bytes(ctx));
		backend_id = QUIC_PICK_BACKEND(err);
		if (!backend_id) {
			err = quic_ring(vip, &vip_key);
			if (err < 0)
				return verdict(-err, frame_bytes(ctx));
			backend_id = (__u32)err;
		}
		backend = backend_slot(backend_id);
		if (!backend)
			return verdict(LB_REASON_DROP_BACKEND_GONE, frame_bytes(ctx));
		hops = 0;
		now = clock_now(&now_s);
	} else {
		/* ICMP errors follow the flow; they neither pin nor close it. */
		err = backend_choose(&key, &vip_key, vip, tcp_flags,
				     reason == LB_REASON_FORWARDED_ICMP, &backend, &backend_id,
				     &hops, &now);
		if (err < 0)
			return verdict(-err, frame_bytes(ctx));
	}

	if (backend->forward != LB_FORWARD_L2) {
		/* A cheap per-flow mix: the GUE source port and IPv6 flow label only. */
		__u64 *w = (__u64 *)&key, mix = 0;

		if (backend->forward == LB_FORWARD_GUE || backend->family != LB_FAMILY_IPV4)
			mix = (w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4]) * 0x9e3779b97f4a7c15ull;
		frame_keep(ctx);
		err = lb_encap(ctx, backend, backend_id, (__u32)(mix >> 32), hops, now);
		if (LB_ENCAP_REASON(err) == LB_REASON_FORWARDED_TOO_BIG)
			err = lb_too_big(ctx, LB_ENCAP_FITS(err));
		bytes = frame_kept();
		if (LB_ENCAP_REASON(err) != LB_REASON_FORWARDED) {
			count(LB_ENCAP_REASON(err), bytes);
			return LB_ENCAP_ACTION(err);
		}
		/* Forwarded: an ICMP error about the flow counts as one, like under l2. */
		count(LB_HOPS_COUNT(hops) ? LB_REASON_FORWARDED_HOPS : reason, bytes);
		stats_add(vip->vip_id, backend_id, bytes);
		return LB_ENCAP_ACTION(err);
	}
	__builtin_memcpy(eth->h_dest, backend->mac, ETH_ALEN);
	/*
	 * Byte by byte through the volatile: a memcpy from a cast-away
	 * volatile lets clang fold the zero initializer into the program.
	 */
	for (int i = 0; i < ETH_ALEN; i++)
		eth->h_source[i] = iface_mac[i];

	bytes = frame_bytes(ctx);
	stats_add(vip->vip_id, backend_id, bytes);
	return verdict(reason, bytes);
}
