// SPDX-License-Identifier: GPL-2.0-only
/*
 * The benchmark's XDP programs. They live here, never in the data path. All
 * parse with lb_parse.h and hash with the same keyed SipHash as ringlb, look
 * the VIP up, pick a backend, rewrite the MACs and send the frame back out;
 * they differ only in how they pick:
 *
 *   bench_empty   nothing at all: the cost of the test harness itself
 *   bench_floor   parse and hash, then always backend 1: no choice at all
 *   bench_table   one array read at hash % BENCH_TABLE_SIZE, the way
 *                 Maglev-style balancers pick
 *   bench_wide    the same read in a table as large as the ring under test
 *                 (wide_size entries): what the ring's memory alone costs
 *   bench_ring    ringlb's ring search (lb_ring.h), the data path's own code
 *
 * and bench_reference does the work Katran's balancer does for an IPIP VIP
 * (1g), written here from its description: a hash map of VIPs, an LRU flow
 * table per CPU (an array of maps) of 16-byte values that a SYN does not read, jhash of the
 * client's address and ports, one read of a 65,537-entry table per VIP, the
 * backend's address from an array, and an IPIP header with a fixed next-hop
 * MAC (no route lookup). bench_reference_katran adds the rest of what
 * Katran's program does for such a packet: a flow key of 40 bytes (room for
 * IPv6 addresses, hashed whole by the LRU table), the next-hop MAC read from
 * a control array, its statistics per packet: packets through the table,
 * its misses (by SYN or not), packets and bytes per VIP and per real; and
 * on a miss its rate of new connections (a counter per second by the
 * precise clock, whose reading the new entry keeps).
 *
 * Each counts the frames it sends, for the forwarding-rate measurement.
 *
 * bench_driver feeds them for the per-packet measurement: BPF_PROG_TEST_RUN
 * repeats it on one IPv4 TCP frame; each run writes the next flow's client
 * address and port into the frame (from flow_tuples, cycling, or a fresh one
 * every time) and tail-calls the program under test. Packets thus follow one
 * another inside the kernel, with no system call between them, over
 * thousands of distinct flows; the driver's own cost is measured by
 * tail-calling bench_empty and subtracted.
 *
 * bench_reset feeds programs that change the frame's length (encapsulation,
 * decapsulation): each run first makes the packet the frame in frame_reset
 * again (its length by moving the head, then its bytes), writes the next
 * flow when asked to (as bench_driver does), then tail-calls the program
 * under test.
 */
/* Maps of its own: nothing is pinned (lb_vips.h). */
#define LB_MAPS_PRIVATE
#include "bench_xdp.h"
#include "lb_flow_hash.h"
#include "lb_parse.h"
#include "lb_ring.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 flow_secret[2] = { 0, 0 };
const volatile __u8 iface_mac[ETH_ALEN] = { 0 };

/* vips, backends and rings_0 .. rings_3 come with lb_ring.h. */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_TABLE_SIZE);
	__type(key, __u32);
	__type(value, __u32);
} table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_WIDE_TABLE_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} wide_table SEC(".maps");

/* Entries of wide_table in use, set by the harness between runs (a global: no lookup). */
__u64 wide_size = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sent SEC(".maps");

/* --- the driver --------------------------------------------------------------------- */

/* Where a client's address and port sit in an untagged IPv4 + TCP frame. */
#define FRAME_SADDR_OFFSET (14 + 12)
#define FRAME_SPORT_OFFSET (14 + 20)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_FLOWS);
	__type(key, __u32);
	__type(value, struct bench_tuple);
} flow_tuples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, BENCH_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} packet_number SEC(".maps");

/* Write the next flow of @cfg into the frame: a fresh one, or the next of flow_tuples. */
static __always_inline int flow_next(void *data, void *end, const struct bench_config *cfg)
{
	struct bench_tuple *t, fresh;
	__u32 zero = 0, slot;
	__u64 *n, i;

	n = bpf_map_lookup_elem(&packet_number, &zero);
	if (!n || data + FRAME_SPORT_OFFSET + 2 > end)
		return -1;
	i = (*n)++;
	if (cfg->fresh_flows) {
		/* 2^40 flows before one repeats: 198.0.0.0/8 x 65,536 ports. */
		fresh.saddr = bpf_htonl(0xc6000000 | (__u32)(i >> 16 & 0xffffff));
		fresh.sport = bpf_htons((__u16)i);
		t = &fresh;
	} else {
		slot = (__u32)(i % (cfg->flows ? cfg->flows : BENCH_FLOWS));
		if (slot >= BENCH_FLOWS)
			slot = 0;
		t = bpf_map_lookup_elem(&flow_tuples, &slot);
		if (!t)
			return -1;
	}
	__builtin_memcpy(data + FRAME_SADDR_OFFSET, &t->saddr, 4);
	__builtin_memcpy(data + FRAME_SPORT_OFFSET, &t->sport, 2);
	return 0;
}

SEC("xdp")
int bench_driver(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bench_config *cfg;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || flow_next(data, end, cfg))
		return XDP_ABORTED;
	bpf_tail_call(ctx, &targets, cfg->target);
	return XDP_ABORTED;
}

/* --- the programs under test ------------------------------------------------------------ */

enum choice {
	CHOICE_FLOOR,
	CHOICE_TABLE,
	CHOICE_WIDE,
	CHOICE_RING,
};

static __always_inline int bench(struct xdp_md *ctx, enum choice how)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct lb_flow_key key = {};
	struct lb_vip_key vip_key __attribute__((aligned(8))) = {};
	struct lb_backend *backend;
	struct ethhdr *eth;
	struct lb_vip *vip;
	__u32 id = 1, slot, zero = 0;
	__u64 hash, *count;
	__u8 tcp_flags;
	int err;

	err = parse_flow(&c, &key, &eth, &tcp_flags);
	if (err < 0)
		return XDP_PASS;
	vip_key_of(&key, &vip_key);
	vip = bpf_map_lookup_elem(&vips, &vip_key);
	if (!vip)
		return XDP_PASS;
	hash = flow_hash_with(&key, flow_secret[0], flow_secret[1]);
	if (how == CHOICE_TABLE) {
		__u32 *entry;

		slot = (__u32)(hash % BENCH_TABLE_SIZE);
		entry = bpf_map_lookup_elem(&table, &slot);
		if (!entry)
			return XDP_DROP;
		id = *entry;
	} else if (how == CHOICE_WIDE) {
		__u64 *entry;

		slot = (__u32)(hash % (wide_size ? wide_size : 1));
		entry = bpf_map_lookup_elem(&wide_table, &slot);
		if (!entry)
			return XDP_DROP;
		id = (__u32)*entry;
	} else if (how == CHOICE_RING) {
		if (ring_choose(vip, hash, &id))
			return XDP_DROP;
	} else {
		/* Keep the hash alive: the floor pays for it like the others. */
		barrier_var(hash);
	}
	backend = bpf_map_lookup_elem(&backends, &id);
	if (!backend || backend->state == LB_BACKEND_UNUSED)
		return XDP_DROP;
	__builtin_memcpy(eth->h_dest, backend->mac, ETH_ALEN);
	for (int i = 0; i < ETH_ALEN; i++)
		eth->h_source[i] = iface_mac[i];
	count = bpf_map_lookup_elem(&sent, &zero);
	if (count)
		(*count)++;
	return XDP_TX;
}

SEC("xdp")
int bench_empty(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_TX;
}

SEC("xdp")
int bench_floor(struct xdp_md *ctx)
{
	return bench(ctx, CHOICE_FLOOR);
}

SEC("xdp")
int bench_table(struct xdp_md *ctx)
{
	return bench(ctx, CHOICE_TABLE);
}

SEC("xdp")
int bench_wide(struct xdp_md *ctx)
{
	return bench(ctx, CHOICE_WIDE);
}

SEC("xdp")
int bench_ring(struct xdp_md *ctx)
{
	return bench(ctx, CHOICE_RING);
}

/* --- the reference of 1g: Katran's work, for an IPIP VIP --------------------------------- */

/* The next hop's MAC: fixed, set before load, as a balancer without a FIB lookup keeps it. */
const volatile __u8 next_hop_mac[ETH_ALEN] = { 0 };
/* The outer source of the reference's IPIP packets (__be). */
const volatile __u32 ref_source = 0;

/* Two counters, as each of Katran's statistics slots holds. */
struct ref_stat {
	__u64 v1;
	__u64 v2;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BENCH_REF_VIPS + 3);
	__type(key, __u32);
	__type(value, struct ref_stat);
} ref_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BENCH_REF_REALS);
	__type(key, __u32);
	__type(value, struct ref_stat);
} ref_real_stats SEC(".maps");

/* The next hop's MAC, read each packet as Katran reads its control array. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ref_ctl SEC(".maps");

/*
 * One LRU flow table of @key_type keys per CPU, as Katran keeps them: the
 * harness makes one for each CPU, of the structs' sizes (bench_xdp.h).
 */
#define REF_FLOW_TABLES(name, key_type)                                     \
	struct {                                                            \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);                   \
		__uint(max_entries, BENCH_REF_CPUS);                        \
		__type(key, __u32);                                         \
		__array(values, struct {                                    \
			__uint(type, BPF_MAP_TYPE_LRU_HASH);                \
			__uint(max_entries, BENCH_REF_FLOWS);               \
			__uint(key_size, sizeof(key_type));                 \
			__uint(value_size, sizeof(struct ref_flow));        \
		});                                                         \
	} name SEC(".maps")

REF_FLOW_TABLES(ref_flows, struct ref_flow_key);
REF_FLOW_TABLES(ref_flows_wide, struct ref_flow_key_wide);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_REF_REALS);
	__type(key, __u32);
	__type(value, struct bench_real);
} ref_reals SEC(".maps");

/* Bob Jenkins' lookup3 final mix, and jhash of two words with it (as the kernel's jhash_2words). */
#define REF_ROL32(x, k) (((x) << (k)) | ((x) >> (32 - (k))))
#define REF_JHASH_INITVAL 0xdeadbeefu

static __always_inline __u32 ref_jhash_2words(__u32 a, __u32 b, __u32 initval)
{
	__u32 c;

	a += REF_JHASH_INITVAL + (2u << 2) + initval;
	b += REF_JHASH_INITVAL + (2u << 2) + initval;
	c = REF_JHASH_INITVAL + (2u << 2) + initval;
	c ^= b;
	c -= REF_ROL32(b, 14);
	a ^= c;
	a -= REF_ROL32(c, 11);
	b ^= a;
	b -= REF_ROL32(a, 25);
	c ^= b;
	c -= REF_ROL32(b, 16);
	a ^= c;
	a -= REF_ROL32(c, 4);
	b ^= a;
	b -= REF_ROL32(a, 14);
	c ^= b;
	c -= REF_ROL32(b, 24);
	return c;
}

/* The IPv4 header checksum of the 20 bytes at @ip. */
static __always_inline __u16 ref_ip_checksum(const __u16 *ip)
{
	__u32 sum = 0;

	for (int i = 0; i < 10; i++)
		sum += ip[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* One more packet (and @bytes) in Katran-style statistics slot @key of @map. */
static __always_inline int ref_count(void *map, __u32 key, __u64 bytes)
{
	struct ref_stat *st = bpf_map_lookup_elem(map, &key);

	if (!st)
		return -1;
	st->v1++;
	st->v2 += bytes;
	return 0;
}

/*
 * The reference's work for one IPv4 TCP frame to an IPIP VIP; with @katran
 * (a constant: each program gets its own copy) Katran's wide flow key,
 * control-array MAC and statistics too.
 */
static __always_inline int reference(struct xdp_md *ctx, const int katran)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1), *outer;
	struct tcphdr *th = (void *)(ip + 1);
	struct lb_vip_key vip_key = { .family = LB_FAMILY_IPV4 };
	struct ref_flow_key key = {};
	struct ref_flow_key_wide wide = {};
	struct ref_flow *flow = NULL, fresh;
	struct ref_stat *lru = NULL;
	struct bench_real *real;
	struct lb_vip *vip;
	__u32 id, slot, *entry, zero = 0, cpu, stat;
	int flood = 0;
	void *table_of_cpu, *flow_key = katran ? (void *)&wide : (void *)&key;
	const __u8 *mac = NULL;
	__u16 inner_len;
	__u64 *count, bytes = (__u64)(end - data);

	if ((void *)(th + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_TCP || (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	__builtin_memcpy(vip_key.addr, &ip->daddr, 4);
	vip_key.port = th->dest;
	vip_key.protocol = IPPROTO_TCP;
	vip = bpf_map_lookup_elem(&vips, &vip_key);
	if (!vip)
		return XDP_PASS;
	if (katran) {
		wide.src[0] = ip->saddr;
		wide.dst[0] = ip->daddr;
		wide.sport = th->source;
		wide.dport = th->dest;
		wide.protocol = IPPROTO_TCP;
		stat = BENCH_REF_STAT_LRU;
		lru = bpf_map_lookup_elem(&ref_stats, &stat);
		if (!lru)
			return XDP_DROP;
		lru->v1++;
	} else {
		key.saddr = ip->saddr;
		key.daddr = ip->daddr;
		key.sport = th->source;
		key.dport = th->dest;
		key.protocol = IPPROTO_TCP;
	}
	cpu = bpf_get_smp_processor_id();
	table_of_cpu = katran ? bpf_map_lookup_elem(&ref_flows_wide, &cpu) :
				bpf_map_lookup_elem(&ref_flows, &cpu);
	if (!table_of_cpu)
		return XDP_DROP;
	/* A SYN is placed by the table and overwrites its tuple's entry: no read. */
	if (!th->syn)
		flow = bpf_map_lookup_elem(table_of_cpu, flow_key);
	if (flow) {
		id = flow->real;
	} else {
		__u32 ports = (__u32)th->source << 16 | th->dest;

		/*
		 * Katran counts a miss of the table, by SYN or not, and one more
		 * new flow; and keeps its rate of new connections, a count per
		 * second of the precise clock (past the rate it would not pin).
		 */
		fresh.seen_ns = 0;
		if (katran) {
			struct ref_stat *miss, *rate;

			stat = BENCH_REF_STAT_MISS;
			miss = bpf_map_lookup_elem(&ref_stats, &stat);
			stat = BENCH_REF_STAT_RATE;
			rate = bpf_map_lookup_elem(&ref_stats, &stat);
			if (!miss || !rate || !lru)
				return XDP_DROP;
			if (th->syn)
				miss->v1++;
			else
				miss->v2++;
			fresh.seen_ns = bpf_ktime_get_ns();
			if (fresh.seen_ns - rate->v2 > 1000000000ull) {
				rate->v1 = 1;
				rate->v2 = fresh.seen_ns;
			} else if (++rate->v1 > BENCH_REF_CONN_RATE_MAX) {
				flood = 1;
			}
		}
		slot = ref_jhash_2words(ip->saddr, ports, 0) % BENCH_TABLE_SIZE;
		entry = bpf_map_lookup_elem(&table, &slot);
		if (!entry)
			return XDP_DROP;
		id = *entry;
		if (katran)
			lru->v2++;
		else
			fresh.seen_ns = bpf_ktime_get_coarse_ns();
		fresh.real = id;
		fresh.pad = 0;
		if (!flood)
			bpf_map_update_elem(table_of_cpu, flow_key, &fresh, BPF_ANY);
	}
	if (id >= BENCH_REF_REALS)
		return XDP_DROP;
	real = bpf_map_lookup_elem(&ref_reals, &id);
	if (!real)
		return XDP_DROP;
	if (katran) {
		mac = bpf_map_lookup_elem(&ref_ctl, &zero);
		if (!mac || vip->vip_id >= BENCH_REF_VIPS ||
		    ref_count(&ref_stats, vip->vip_id, bytes) ||
		    ref_count(&ref_real_stats, id, bytes))
			return XDP_DROP;
	}
	inner_len = bpf_ntohs(ip->tot_len);
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	outer = (void *)(eth + 1);
	if ((void *)(outer + 1) > end)
		return XDP_DROP;
	for (int i = 0; i < ETH_ALEN; i++) {
		/* The volatile read itself: a cast-away volatile lets clang fold the zeros in. */
		eth->h_dest[i] = katran && mac ? mac[i] : next_hop_mac[i];
		eth->h_source[i] = iface_mac[i];
	}
	eth->h_proto = bpf_htons(ETH_P_IP);
	outer->version = 4;
	outer->ihl = 5;
	outer->tos = 0;
	outer->tot_len = bpf_htons(inner_len + (__u16)sizeof(struct iphdr));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = ref_source;
	outer->daddr = real->addr;
	outer->check = ref_ip_checksum((const __u16 *)outer);
	count = bpf_map_lookup_elem(&sent, &zero);
	if (count)
		(*count)++;
	return XDP_TX;
}

SEC("xdp")
int bench_reference(struct xdp_md *ctx)
{
	return reference(ctx, 0);
}

SEC("xdp")
int bench_reference_katran(struct xdp_md *ctx)
{
	return reference(ctx, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_frame);
} frame_reset SEC(".maps");

SEC("xdp")
int bench_reset(struct xdp_md *ctx)
{
	struct bench_frame *f;
	struct bench_config *cfg;
	__u32 zero = 0, i, have;
	void *data, *end;
	int delta;

	f = bpf_map_lookup_elem(&frame_reset, &zero);
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!f || !cfg || f->len > BENCH_FRAME_MAX)
		return XDP_ABORTED;
	/*
	 * The frame's length first, kept from clang 16 (which would otherwise
	 * compute data + f->len, then shift that pointer: refused).
	 */
	have = ctx->data_end - ctx->data;
	barrier_var(have);
	delta = (int)have - (int)f->len;
	if (delta && bpf_xdp_adjust_head(ctx, delta))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	for (i = 0; i < BENCH_FRAME_MAX / 2; i++) {
		__u16 *to = (__u16 *)data + i;

		if (i * 2 >= f->len || (void *)(to + 1) > end)
			break;
		*to = *(__u16 *)&f->data[i * 2];
	}
	/* One flow over and over unless told otherwise (fresh flows, or several). */
	if ((cfg->fresh_flows || cfg->flows > 1) && flow_next(data, end, cfg))
		return XDP_ABORTED;
	bpf_tail_call(ctx, &targets, cfg->target);
	return XDP_ABORTED;
}
