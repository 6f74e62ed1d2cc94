// SPDX-License-Identifier: GPL-2.0-only
/*
 * `make bench`, the table: every figure next to its comparison measured in
 * the same run. Judges nothing; the goals are printed beside the figures.
 *
 *  1. Per packet in the kernel: BPF_PROG_TEST_RUN over 4,096 distinct flows,
 *     one run per packet, rounds interleaved across programs, median round.
 *     The benchmark programs (tests/bench_xdp.bpf.c) share ringlb's parsing
 *     and hashing and differ only in the backend choice: none (floor), one
 *     array read at hash % 65,537 (the O(1) table) or ringlb's ring search.
 *     "net" subtracts the empty program, i.e. the test harness itself. The
 *     data path as shipped (flow table, counters) is measured too, for new
 *     and for established flows.
 *  2. Forwarding rate through the veth topology, trafgen against the floor.
 *  3. Control plane: build and swap of 1,000 x 1,000 points, one add to it.
 *  4. Balance and disruption at N = 100 and 1,000, ringlb at its defaults
 *     against a Maglev table of the same memory, computed here.
 *
 * Needs root for 1 to 3.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <net/if.h>
#include <sched.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bench_katran.h"
#include "bench_xdp.h"
#include "harness.h"
#include "bench_xdp.skel.h"
#include "decap.h"
#include "decap.skel.h"
#include "lb.h"
#include "packets.h"
#include "quic_lb.h"
#include "ring.h"
#include "source_set.h"
#include "testutil.h"

#define FLOWS BENCH_FLOWS
#define ROUNDS 9
#define TABLE_SIZE BENCH_TABLE_SIZE
#define KEYS 1000000
#define SEED 0x62656e6368ULL
#define FORWARD_SECONDS 3
/* Even: as many rounds backwards as forwards (forwarding()), so the order's own effect cancels. */
#define FORWARD_ROUNDS 6
#define FORWARD_PREFIX "rlbfw"

static const __u64 secret[2] = { 0x1111111111111111ULL, 0x2222222222222222ULL };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench: %s: %s\n", what, err < 0 ? strerror(-err) : ring_strerror(err));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct ring *ring_sized(uint32_t members, uint32_t vnodes)
{
	struct ring_member *list = calloc(members, sizeof(*list));
	char (*names)[24] = calloc(members, sizeof(*names));
	struct ring *r;
	uint32_t i;
	int err;

	for (i = 0; i < members; i++) {
		snprintf(names[i], sizeof(names[i]), "backend-%u", i);
		list[i].name = names[i];
		list[i].weight = 1;
	}
	err = ring_build(&r, vnodes, list, members);
	if (err)
		die("ring_build", err);
	free(list);
	free(names);
	return r;
}

/* --- 1. per packet ------------------------------------------------------------------ */

static int is_prime(uint64_t x)
{
	uint64_t d;

	if (x < 2)
		return 0;
	for (d = 2; d * d <= x; d++)
		if (x % d == 0)
			return 0;
	return 1;
}

/*
 * Write @m entries of the wide table (backends 1 .. 1024 in turn) and make
 * bench_wide read @m of them. Array map elements are 8-byte aligned: a
 * mapping shows them at that stride, whatever the value size.
 */
/* Make bench_wide read @m entries of the wide table (a global: no lookup per packet). */
static void wide_table_use(struct bench_xdp_bpf *skel, uint64_t m)
{
	if (m == 0 || m > BENCH_WIDE_TABLE_MAX)
		die("wide table", -E2BIG);
	skel->data->wide_size = m;
}

static void wide_table_write(struct bench_xdp_bpf *skel, uint64_t m)
{
	size_t bytes = (size_t)BENCH_WIDE_TABLE_MAX * sizeof(__u64);
	__u64 *table;
	uint64_t i;

	wide_table_use(skel, m);
	table = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		     bpf_map__fd(skel->maps.wide_table), 0);
	if (table == MAP_FAILED)
		die("map the wide table", -errno);
	for (i = 0; i < m; i++)
		table[i] = 1 + i % 1024;
	munmap(table, bytes);
}

/* The first prime at or above @m, as Maglev's table sizes are. */
static uint64_t prime_from(uint64_t m)
{
	while (!is_prime(m))
		m++;
	return m;
}

/*
 * Fill the wide table with as many 8-byte entries as @r's ring map uses
 * bytes / 8 (a prime): an O(1) table of the ring's memory.
 */
static void wide_table_fill(struct bench_xdp_bpf *skel, const struct ring *r, const __u32 *ids)
{
	struct ringmap image;
	size_t points;
	uint64_t m;

	ring_points(r, &points);
	image.bits = ringmap_bits(points);
	image.slot_count = ringmap_class_slots(ringmap_class(points, image.bits));
	image.slots = calloc(image.slot_count, sizeof(*image.slots));
	if (!image.slots || ringmap_render(&image, r, ids, ring_fingerprint(r)))
		die("render for the wide table", -ENOMEM);
	m = (uint64_t)LB_RING_RUN_SLOT(image.bits, image.slots[LB_RING_COUNTS_SLOT].counts.runs_used) *
	    sizeof(union lb_ring_slot) / sizeof(__u64);
	free(image.slots);
	wide_table_write(skel, prime_from(m));
}


#define PACKETS_PER_RUN (FLOWS * 16)

enum { T_EMPTY, T_FLOOR, T_TABLE, T_WIDE, T_RING, T_SHIPPED };
/*
 * Measurements, in the order each round takes them. The wide table and the
 * ring beside it come in rounds of their own, after the others: the wide
 * table would evict what the table and the ring find cached.
 */
enum { M_EMPTY, M_FLOOR, M_TABLE, M_RING, M_SHIPPED_NEW, M_SHIPPED_EST, M_HOT_EMPTY,
       M_HOT_TABLE, M_HOT_RING, M_MAIN_COUNT, M_WIDE_EMPTY = M_MAIN_COUNT, M_WIDE_RING, M_WIDE,
       M_COUNT };

/* Flows the "hot" runs cycle through: few enough to stay in L1 and the TLB. */
#define HOT_FLOWS 16

/* One run of the driver: PACKETS_PER_RUN packets through @target; ns per packet. */
static double run_ns(struct bench_xdp_bpf *skel, const struct pkt *frame, __u32 target,
		     __u32 fresh, __u32 flows)
{
	struct bench_config cfg = { target, fresh, flows };
	__u32 zero = 0, verdict, duration;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.config), &zero, &cfg, BPF_ANY))
		die("the benchmark's configuration", -errno);
	verdict = harness_run(bpf_program__fd(skel->progs.bench_driver), frame->data, frame->len,
			      NULL, NULL, PACKETS_PER_RUN, &duration);
	if (verdict != XDP_TX) {
		fprintf(stderr, "bench: program %u (%u flows%s) returned %u, not XDP_TX\n", target,
			flows, fresh ? ", fresh" : "", verdict);
		die("a benchmark packet was not forwarded", -EPROTO);
	}
	return duration;
}

static struct lb_vip_key bench_vip_key(__u8 protocol, __u16 port)
{
	struct lb_vip_key key = { .port = htons(port), .protocol = protocol,
				  .family = LB_FAMILY_IPV4 };

	pkt_addr(LB_FAMILY_IPV4, "198.18.0.100", key.addr);
	return key;
}

static void backends_fill(int backends_fd, uint32_t count)
{
	uint32_t id;

	for (id = 1; id <= count; id++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.vip_id = 0, .cookie = id, .mac = { 2, 0, 0, 0,
					(__u8)(id >> 8), (__u8)id } };

		if (bpf_map_update_elem(backends_fd, &id, &b, BPF_ANY))
			die("backends", -errno);
	}
}

/* The bench object's maps in the loader's terms (what lb_vip_install needs). */
static void bench_maps_of(struct bench_xdp_bpf *skel, struct lb_maps *maps)
{
	lb_maps_init(maps);
	maps->vips = bpf_map__fd(skel->maps.vips);
	maps->backends = bpf_map__fd(skel->maps.backends);
	maps->rings[0] = bpf_map__fd(skel->maps.rings_0);
	maps->rings[1] = bpf_map__fd(skel->maps.rings_1);
	maps->rings[2] = bpf_map__fd(skel->maps.rings_2);
	maps->rings[3] = bpf_map__fd(skel->maps.rings_3);
}

/*
 * A change's end, as the controller makes it (lb_readers_release()): the VIP
 * epoch of @maps closed, so that each CPU of the shipped program copies VIP
 * values again (lb_contract.h) and is measured as it serves.
 */
static void vips_settled(const struct lb_maps *maps)
{
	int err = lb_readers_release(maps);

	if (err)
		die("closing the VIP epoch", err);
}

/* The next hop's MAC the references (and Katran's program) send to. */
static const __u8 bench_next_hop_mac[6] = { 2, 0, 0, 0, 0, 0x11 };

/*
 * The benchmark's programs loaded, with 1,024 backends, the O(1) table, the
 * driver's flows and every bench program in the driver's prog array (the
 * shipped program's slot is the caller's to fill); @frame is the IPv4 TCP
 * frame to the bench VIP that the driver rewrites for each flow.
 */
static struct bench_xdp_bpf *bench_open(struct pkt *frame)
{
	static const struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					      .src = "198.18.1.1", .dst = "198.18.0.100",
					      .sport = 40000, .dport = 80, .tcp_flags = 0x10 };
	struct test_rng rng = { SEED };
	struct bench_xdp_bpf *skel;
	int fds[T_SHIPPED], t;
	__u32 slot;

	pkt_build(frame, &spec);
	skel = bench_xdp_bpf__open();
	if (!skel)
		die("open bench programs", -errno);
	skel->rodata->flow_secret[0] = secret[0];
	skel->rodata->flow_secret[1] = secret[1];
	memcpy((void *)skel->rodata->next_hop_mac, bench_next_hop_mac, 6);
	memcpy((void *)skel->rodata->iface_mac, (const __u8[]){ 2, 0, 0, 0, 0x11, 2 }, 6);
	skel->rodata->ref_source = inet_addr(HARNESS_SOURCE4);
	if (bench_xdp_bpf__load(skel))
		die("load bench programs", -errno);
	backends_fill(bpf_map__fd(skel->maps.backends), 1024);
	for (slot = 0; slot < TABLE_SIZE; slot++) {
		__u32 id = 1 + slot % 1024;

		bpf_map_update_elem(bpf_map__fd(skel->maps.table), &slot, &id, BPF_ANY);
	}
	for (slot = 0; slot < FLOWS; slot++) {
		uint64_t r = test_rng_next(&rng);
		struct bench_tuple tuple = {
			htonl(0xc6000000u | (__u32)(r >> 32 & 0xffffff)), htons((__u16)r), 0 };

		bpf_map_update_elem(bpf_map__fd(skel->maps.flow_tuples), &slot, &tuple, BPF_ANY);
	}
	fds[T_EMPTY] = bpf_program__fd(skel->progs.bench_empty);
	fds[T_FLOOR] = bpf_program__fd(skel->progs.bench_floor);
	fds[T_TABLE] = bpf_program__fd(skel->progs.bench_table);
	fds[T_WIDE] = bpf_program__fd(skel->progs.bench_wide);
	fds[T_RING] = bpf_program__fd(skel->progs.bench_ring);
	for (t = 0; t < T_SHIPPED; t++) {
		__u32 k = (__u32)t;

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &k, &fds[t], BPF_ANY))
			die("prog array", -errno);
	}
	return skel;
}

static void per_packet(void)
{
	static const struct { uint32_t members, vnodes; } sizes[] = {
		{ 64, 16 }, { 64, 1024 }, { 1024, 1024 },
	};
	static const char *const goals[] = { "", "<= 1.10", "<= 1.25" };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] } };
	struct lb_vip_key key = bench_vip_key(IPPROTO_TCP, 80);
	struct bench_xdp_bpf *skel;
	struct lb_prog *shipped;
	struct lb_maps bench_maps;
	struct pkt frame;
	__u32 *ids, i;
	size_t s;
	int fd;

	skel = bench_open(&frame);
	if (lb_prog_load(&shipped, &opts))
		die("load ringlb", -errno);
	backends_fill(lb_prog_maps(shipped)->backends, 1024);
	fd = lb_prog_fd(shipped);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &(__u32){ T_SHIPPED }, &fd,
				BPF_ANY))
		die("prog array", -errno);
	bench_maps_of(skel, &bench_maps);

	printf("1. Per packet in the kernel: BPF_PROG_TEST_RUN of a driver that writes the next of\n"
	       "   %d distinct IPv4 TCP flows into the frame and tail-calls the program under test;\n"
	       "   %d packets per run, median of %d interleaved runs. net = minus the driver alone\n"
	       "   (harness). floor: parse+hash, no choice; table: one array read at hash %% %d;\n"
	       "   ring: ringlb's search. shipped: the whole data path (flow table, counters), for\n"
	       "   new flows (a fresh flow every packet) and established ones (the %d, pinned).\n"
	       "   For diagnosis only: wide: the table's read in a table as large as the ring map\n"
	       "   (its bytes / 8 entries), and ring/wide, the search at equal memory (both in\n"
	       "   rounds of their own, after the others); ring/table over %d flows, caches and\n"
	       "   TLB hot.\n",
	       FLOWS, PACKETS_PER_RUN, ROUNDS, TABLE_SIZE, FLOWS, HOT_FLOWS);
	printf("   %9s %7s %7s %7s %7s %8s %8s %9s %8s %8s %7s %9s %9s\n", "points", "harness",
	       "floor", "table", "ring", "ring-tbl", "ring/tbl", "goal", "shipped", "shipped",
	       "wide", "ring/wide", "ring/tbl");
	printf("   %9s %7s %7s %7s %7s %8s %8s %9s %8s %8s %7s %9s %9s\n", "", "ns", "net ns",
	       "net ns", "net ns", "ns", "", "", "new ns", "estab ns", "net ns", "", "16 flows");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct ring *r = ring_sized(sizes[s].members, sizes[s].vnodes);
		double samples[M_COUNT][ROUNDS], med[M_COUNT];
		size_t points;
		int round, m, phase;

		ring_points(r, &points);
		ids = calloc(sizes[s].members, sizeof(*ids));
		for (i = 0; i < sizes[s].members; i++)
			ids[i] = i + 1;
		if (lb_vip_install(&bench_maps, &key, 0, r, ids) ||
		    lb_vip_install(lb_prog_maps(shipped), &key, 0, r, ids))
			die("ring swap", -errno);
		vips_settled(lb_prog_maps(shipped));
		wide_table_fill(skel, r, ids);
		for (phase = 0; phase < 2; phase++) {
			int first = phase ? M_MAIN_COUNT : 0, last = phase ? M_COUNT : M_MAIN_COUNT;

			for (round = -1; round < ROUNDS; round++) {
				for (m = first; m < last; m++) {
					static const __u32 target_of[M_COUNT] = {
						T_EMPTY, T_FLOOR, T_TABLE,   T_RING,  T_SHIPPED,
						T_SHIPPED, T_EMPTY, T_TABLE, T_RING,  T_EMPTY,
						T_RING,  T_WIDE,
					};
					int hot = m >= M_HOT_EMPTY && m <= M_HOT_RING;
					double ns;

					/* The fresh flows just before evicted the pins: pin them again. */
					if (m == M_SHIPPED_EST)
						run_ns(skel, &frame, T_SHIPPED, 0, FLOWS);
					ns = run_ns(skel, &frame, target_of[m], m == M_SHIPPED_NEW,
						    hot ? HOT_FLOWS : FLOWS);

					/* round -1 warms caches and pins the flows */
					if (round >= 0)
						samples[m][round] = ns;
				}
			}
		}
		for (m = 0; m < M_COUNT; m++) {
			qsort(samples[m], ROUNDS, sizeof(double), cmp_double);
			med[m] = samples[m][ROUNDS / 2];
		}
		printf("   %9zu %7.1f %7.1f %7.1f %7.1f %8.1f %8.2f %9s %8.1f %8.1f %7.1f %9.2f %9.2f\n",
		       points, med[M_EMPTY], med[M_FLOOR] - med[M_EMPTY],
		       med[M_TABLE] - med[M_EMPTY], med[M_RING] - med[M_EMPTY],
		       med[M_RING] - med[M_TABLE],
		       (med[M_RING] - med[M_EMPTY]) / (med[M_TABLE] - med[M_EMPTY]), goals[s],
		       med[M_SHIPPED_NEW] - med[M_EMPTY], med[M_SHIPPED_EST] - med[M_EMPTY],
		       med[M_WIDE] - med[M_WIDE_EMPTY],
		       (med[M_WIDE_RING] - med[M_WIDE_EMPTY]) / (med[M_WIDE] - med[M_WIDE_EMPTY]),
		       (med[M_HOT_RING] - med[M_HOT_EMPTY]) /
			       (med[M_HOT_TABLE] - med[M_HOT_EMPTY]));
		free(ids);
		ring_free(r);
	}
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
}

/*
 * For diagnosis: one read at hash % M in arrays of M 8-byte entries from the
 * O(1) table's 512 KiB to the largest ring map's size, each against the
 * 65,537-entry table in the same rounds. No search at all: what the memory
 * of a given size costs a packet on this machine (caches, TLB), the least an
 * exact ring of that size can cost.
 */
static void memory_reach(void)
{
	static const uint64_t entries[] = {
		1u << 16, 1u << 19, 1u << 20, 1u << 21, BENCH_WIDE_TABLE_MAX - 16,
	};
	enum { R_EMPTY, R_TABLE, R_WIDE, R_COUNT };
	static const __u32 target_of[R_COUNT] = { T_EMPTY, T_TABLE, T_WIDE };
	struct lb_vip_key key = bench_vip_key(IPPROTO_TCP, 80);
	struct bench_xdp_bpf *skel;
	struct lb_maps bench_maps;
	struct ring *r;
	struct pkt frame;
	__u32 ids[64], i;
	size_t e;

	skel = bench_open(&frame);
	bench_maps_of(skel, &bench_maps);
	/* The programs look the VIP up before they pick: a small ring gives them one. */
	r = ring_sized(64, 16);
	for (i = 0; i < 64; i++)
		ids[i] = i + 1;
	if (lb_vip_install(&bench_maps, &key, 0, r, ids))
		die("ring swap", -errno);
	ring_free(r);
	wide_table_write(skel, BENCH_WIDE_TABLE_MAX);
	printf("\n1b. For diagnosis, what memory alone costs here: one read at hash %% M in an array\n"
	       "   of M 8-byte entries (no search), %d flows, median of %d interleaved runs, net ns;\n"
	       "   table: the %d-entry table's read in the same runs.\n",
	       FLOWS, ROUNDS, TABLE_SIZE);
	printf("   %9s %7s %9s %9s %8s\n", "M", "MiB", "read ns", "table ns", "ratio");
	for (e = 0; e < sizeof(entries) / sizeof(entries[0]); e++) {
		double samples[R_COUNT][ROUNDS], med[R_COUNT];
		uint64_t m = prime_from(entries[e]);
		int round, k;

		wide_table_use(skel, m);
		for (round = -1; round < ROUNDS; round++)
			for (k = 0; k < R_COUNT; k++) {
				double ns = run_ns(skel, &frame, target_of[k], 0, FLOWS);

				/* round -1 warms caches */
				if (round >= 0)
					samples[k][round] = ns;
			}
		for (k = 0; k < R_COUNT; k++) {
			qsort(samples[k], ROUNDS, sizeof(double), cmp_double);
			med[k] = samples[k][ROUNDS / 2];
		}
		printf("   %9llu %7.1f %9.1f %9.1f %8.2f\n", (unsigned long long)m,
		       (double)m * sizeof(__u64) / (1u << 20), med[R_WIDE] - med[R_EMPTY],
		       med[R_TABLE] - med[R_EMPTY],
		       (med[R_WIDE] - med[R_EMPTY]) / (med[R_TABLE] - med[R_EMPTY]));
	}
	bench_xdp_bpf__destroy(skel);
}

/* --- 1c. encapsulation and decapsulation per packet ------------------------------------ */

enum { E_EMPTY, E_FLOOR, E_L2, E_IPIP, E_GUE, E_DECAP_IPIP, E_DECAP_GUE, E_PASS, E_COUNT };
enum { S_EMPTY = 0, S_FLOOR = 1, S_SHIPPED = 5, S_DECAP = 6, S_PASS = 7, S_REFERENCE = 8,
       S_REFERENCE_KATRAN = 9, S_KATRAN = 10 };

/*
 * One run of bench_reset over @frame as @cfg says, on e0: ns per packet; the
 * last packet's verdict and bytes in @verdict and @out (PKT_MAX), @out_len.
 */
static double reset_run_with(struct bench_xdp_bpf *skel, int ifindex, const unsigned char *frame,
			     size_t len, const struct bench_config *cfg, __u32 *verdict,
			     unsigned char *out, __u32 *out_len)
{
	struct bench_frame f = { .len = (__u32)len };
	struct xdp_md md = { .data_end = (__u32)len, .ingress_ifindex = (__u32)ifindex };
	__u32 zero = 0;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = PKT_MAX, .ctx_in = &md,
		    .ctx_size_in = sizeof(md), .repeat = PACKETS_PER_RUN);

	memcpy(f.data, frame, len);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.config), &zero, cfg, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.frame_reset), &zero, &f, BPF_ANY) ||
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bench_reset), &o))
		die("BPF_PROG_TEST_RUN of bench_reset", -errno);
	*verdict = o.retval;
	*out_len = o.data_size_out;
	return o.duration;
}

/* One run of bench_reset over @frame into target slot @target, one flow, on e0. */
static double reset_run_ns(struct bench_xdp_bpf *skel, int ifindex, const unsigned char *frame,
			   size_t len, __u32 target, __u32 *verdict)
{
	struct bench_config cfg = { target, 0, 1 };
	unsigned char out[PKT_MAX];
	__u32 out_len;

	return reset_run_with(skel, ifindex, frame, len, &cfg, verdict, out, &out_len);
}

static void encap_per_packet(void)
{
	static const char *const names[E_COUNT] = {
		"harness", "floor", "l2", "ipip", "gue", "decap ipip", "decap gue", "xdp_pass",
	};
	static const __u32 want[E_COUNT] = { XDP_TX, XDP_TX, XDP_TX, XDP_TX, XDP_TX, XDP_PASS,
					     XDP_PASS, XDP_PASS };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] },
				     .iface_mac = { 2, 0, 0, 0, 0x11, 2 } };
	struct lb_config cfg = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	struct pkt frames[E_COUNT], scratch;
	double ns[E_COUNT][ROUNDS], med[E_COUNT];
	struct bench_xdp_bpf *skel;
	struct decap_bpf *decap;
	struct bpf_object *pass;
	struct lb_prog *shipped;
	struct lb_maps bench_maps;
	struct ring *r;
	__u32 ids[3] = { 1, 2, 3 }, verdict, slot;
	__u8 a[16];
	int ifindex, e, round, fd;
	size_t len;

	printf("\n1c. Encapsulation and decapsulation per packet: BPF_PROG_TEST_RUN of a driver\n"
	       "   that makes the packet one frame again (its length, its bytes) and tail-calls\n"
	       "   the program under test; %d packets per run, median of %d interleaved runs,\n"
	       "   ns per packet, net = minus the driver feeding an empty program. Balancer:\n"
	       "   the shipped program on an established IPv4 TCP flow to an l2, an ipip and a\n"
	       "   gue VIP (IPv4 backend, FIB lookup in a network namespace), and the floor\n"
	       "   (parse+hash, no choice); the driver's head move for the encapsulated frames\n"
	       "   counts against them. Backend: the decap program on that IPIP and that GUE\n"
	       "   frame, against xdp_pass on the same frames.\n", PACKETS_PER_RUN, ROUNDS);
	ifindex = harness_net_enter();
	if (ifindex < 0)
		die("the encapsulation network", -EIO);
	skel = bench_open(&frames[E_FLOOR]);
	if (lb_prog_load(&shipped, &opts))
		die("load the shipped program", -errno);
	pkt_addr(LB_FAMILY_IPV4, HARNESS_SOURCE4, a);
	memcpy(cfg.source4, a, 4);
	pkt_addr(LB_FAMILY_IPV6, HARNESS_SOURCE6, cfg.source6);
	if (lb_config_write(lb_prog_maps(shipped), &cfg))
		die("encapsulation settings", -errno);
	for (e = 0; e < 3; e++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.vip_id = (__u32)e, .cookie = (__u64)e + 1,
					.mac = { 2, 0, 0, 0, 0, 0x11 }, .forward = (__u8)e };
		struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
					  .family = LB_FAMILY_IPV4 };
		struct ring_member m = { "only", 1 };
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					 .src = "198.18.1.1", .sport = 40000, .dport = 80,
					 .tcp_flags = 0x10 };
		char vip[32];

		pkt_addr(LB_FAMILY_IPV4, "198.18.13.11", b.addr);
		if (lb_backend_install(lb_prog_maps(shipped), ids[e], &b))
			die("backend", -errno);
		snprintf(vip, sizeof(vip), "198.18.0.%d", 100 + e);
		pkt_addr(LB_FAMILY_IPV4, vip, key.addr);
		if (ring_build(&r, 16, &m, 1) ||
		    lb_vip_install(lb_prog_maps(shipped), &key, (__u32)e, r, &ids[e]))
			die("VIP", -errno);
		ring_free(r);
		spec.dst = vip;
		pkt_build(&frames[E_L2 + e], &spec);
	}
	vips_settled(lb_prog_maps(shipped));
	/* The floor's VIP, in the benchmark programs' own maps. */
	bench_maps_of(skel, &bench_maps);
	{
		struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
					  .family = LB_FAMILY_IPV4 };

		pkt_addr(LB_FAMILY_IPV4, "198.18.0.100", key.addr);
		r = ring_sized(2, 64);
		if (lb_vip_install(&bench_maps, &key, 0, r, ids))
			die("the floor's VIP", -errno);
		ring_free(r);
	}
	frames[E_EMPTY] = frames[E_L2];
	/* The backend's frames: what the balancer sent. */
	for (e = 0; e < 2; e++) {
		unsigned char out[PKT_MAX];
		size_t out_len;

		harness_run_on(lb_prog_fd(shipped), ifindex, frames[E_IPIP + e].data,
			       frames[E_IPIP + e].len, out, &out_len);
		memset(&frames[E_DECAP_IPIP + e], 0, sizeof(scratch));
		memcpy(frames[E_DECAP_IPIP + e].data, out, out_len);
		frames[E_DECAP_IPIP + e].len = out_len;
	}
	frames[E_PASS] = frames[E_DECAP_GUE];
	decap = harness_decap_open();
	if (!decap)
		die("load the decap program", -EIO);
	/* The backend holds the three VIPs of these frames (the harness's and .101, .102). */
	{
		struct addr vips[3] = { { .family = LB_FAMILY_IPV4 }, { .family = LB_FAMILY_IPV4 },
					{ .family = LB_FAMILY_IPV4 } };

		for (e = 0; e < 3; e++) {
			char vip[32];

			snprintf(vip, sizeof(vip), "198.18.0.%d", 100 + e);
			pkt_addr(LB_FAMILY_IPV4, vip, vips[e].bytes);
		}
		if (decap_vips_set(bpf_map__fd(decap->maps.decap_vip), vips, 3))
			die("the decap program's VIPs", -EIO);
	}
	pass = bpf_object__open_file("build/xdp_pass.bpf.o", NULL);
	if (!pass || bpf_object__load(pass))
		die("load xdp_pass", -errno);
	{
		const int slots[] = { S_SHIPPED, S_DECAP, S_PASS };
		const int progs[] = { lb_prog_fd(shipped),
				      bpf_program__fd(decap->progs.ringlb_decap),
				      bpf_program__fd(bpf_object__find_program_by_name(pass,
										"xdp_pass")) };

		for (e = 0; e < 3; e++) {
			slot = (__u32)slots[e];
			fd = progs[e];
			if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
				die("prog array", -errno);
		}
	}
	for (round = 0; round < ROUNDS; round++)
		for (e = 0; e < E_COUNT; e++) {
			static const __u32 target[E_COUNT] = { S_EMPTY, S_FLOOR, S_SHIPPED, S_SHIPPED,
							       S_SHIPPED, S_DECAP, S_DECAP, S_PASS };

			len = frames[e].len;
			ns[e][round] = reset_run_ns(skel, ifindex, frames[e].data, len, target[e],
						    &verdict);
			if (verdict != want[e]) {
				fprintf(stderr, "bench: %s returned %u, not %u\n", names[e], verdict,
					want[e]);
				die("an encapsulation benchmark frame was not handled", -EPROTO);
			}
		}
	for (e = 0; e < E_COUNT; e++) {
		qsort(ns[e], ROUNDS, sizeof(double), cmp_double);
		med[e] = ns[e][ROUNDS / 2] - (e ? ns[E_EMPTY][ROUNDS / 2] : 0);
	}
	printf("   %-12s %9s %9s %8s\n", "program", "net ns", "ratio", "to");
	printf("   %-12s %9.1f %9s %8s\n", "harness", ns[E_EMPTY][ROUNDS / 2], "", "");
	printf("   %-12s %9.1f %9s %8s\n", "floor", med[E_FLOOR], "", "");
	printf("   %-12s %9.1f %9.2f %8s\n", "l2", med[E_L2], med[E_L2] / med[E_FLOOR], "floor");
	printf("   %-12s %9.1f %9.2f %8s\n", "ipip", med[E_IPIP], med[E_IPIP] / med[E_L2], "l2");
	printf("   %-12s %9.1f %9.2f %8s\n", "gue", med[E_GUE], med[E_GUE] / med[E_L2], "l2");
	printf("   %-12s %9.1f %9s %8s\n", "xdp_pass", med[E_PASS], "", "");
	printf("   %-12s %9.1f %9.2f %8s\n", "decap ipip", med[E_DECAP_IPIP],
	       med[E_DECAP_IPIP] / med[E_PASS], "xdp_pass");
	printf("   %-12s %9.1f %9.2f %8s\n", "decap gue", med[E_DECAP_GUE],
	       med[E_DECAP_GUE] / med[E_PASS], "xdp_pass");
	bpf_object__close(pass);
	decap_bpf__destroy(decap);
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
	harness_net_leave();
}

/* --- 1e. the decap program's doors: its checks against the program before them ---------- */

/*
 * The decap program before its doors were shut (inner destination not
 * checked, hops unbounded and unchecked), built by the Makefile from git
 * (DECAP_BEFORE) into build/decap_before.bpf.o, against the shipped one.
 */
#define DECAP_BEFORE_OBJ "build/decap_before.bpf.o"

enum { D_IPIP, D_GUE, D_HOP_TAKEN, D_HOP_SENT, D_COUNT };

/* One key of a decap set (@len 0 in the hashes). */
static void decap_key_add(struct bpf_object *obj, const char *map, int family, const char *text,
			  __u32 len)
{
	struct lb_decap_from_key k = { .prefixlen = len, .family = (__u8)family };
	struct bpf_map *m = bpf_object__find_map_by_name(obj, map);
	__u8 a[16], one = 1;

	pkt_addr(family, text, a);
	memcpy(k.addr, a, family == LB_FAMILY_IPV4 ? 4 : 16);
	if (!m || bpf_map_update_elem(bpf_map__fd(m), &k, &one, BPF_ANY))
		die("a decap map entry", -errno);
}

/*
 * The settings both programs get: the balancer and the hop's subnet trusted
 * (the VIP: the program after has it from harness_decap_open()), the host's
 * address.
 */
static void decap_bench_configure(struct bpf_object *obj)
{
	struct lb_decap_config cfg = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "decap_config");
	__u32 zero = 0;

	decap_key_add(obj, "decap_from", LB_FAMILY_IPV4, HARNESS_SOURCE4, 32 + 32);
	decap_key_add(obj, "decap_from", LB_FAMILY_IPV4, "198.18.13.0", 32 + 24);
	/*
	 * The program after has its own addresses from harness_decap_open(), in
	 * their slots as the controller puts them, and LB_DECAP_SELF_CURRENT and
	 * LB_DECAP_SELF_WHOLE set (kept here); the program before has the hash
	 * alone.
	 */
	if (!bpf_object__find_map_by_name(obj, "decap_self"))
		decap_key_add(obj, "decap_local", LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, 0);
	else if (!m || bpf_map_lookup_elem(bpf_map__fd(m), &zero, &cfg))
		die("the decap settings", -errno);
	cfg.gue_port = htons(LB_GUE_PORT_DEFAULT);
	if (!m || bpf_map_update_elem(bpf_map__fd(m), &zero, &cfg, BPF_ANY))
		die("the decap settings", -errno);
}

/* Rounds of 1e: as 1f, a goal of a few ns wants many paired rounds. */
#define DOORS_ROUNDS 101

static void decap_doors_per_packet(void)
{
	static const char *const names[D_COUNT] = {
		"ipip", "gue", "gue, 1 hop, a SYN taken", "gue, 1 hop, sent on",
	};
	static const __u32 want[D_COUNT] = { XDP_PASS, XDP_PASS, XDP_PASS, XDP_TX };
	struct pkt frames[D_COUNT], scratch, inner;
	double ns[2][D_COUNT][DOORS_ROUNDS], diff[D_COUNT][DOORS_ROUNDS], empty[DOORS_ROUNDS];
	double med[2][D_COUNT];
	struct bench_xdp_bpf *skel;
	struct bpf_object *objs[2], *before;
	struct decap_bpf *after;
	__u32 verdict, slot;
	int ifindex, e, v, round, fd;

	printf("\n1e. The decap program's doors: its checks (inner destination a VIP, at most\n"
	       "   LB_HOPS_MAX - 1 hops, the next hop a peer and not this host, the UDP checksum\n"
	       "   updated) against the program before them (%s, built from git),\n"
	       "   on the same frames: BPF_PROG_TEST_RUN of the driver of 1c, %d packets per run,\n"
	       "   %d rounds of each pair, in an order that flips every round; ns per packet net\n"
	       "   of the driver, medians; +ns: the median of the rounds' paired differences.\n",
	       DECAP_BEFORE_OBJ, PACKETS_PER_RUN, DOORS_ROUNDS);
	ifindex = harness_net_enter();
	if (ifindex < 0)
		die("the encapsulation network", -EIO);
	skel = bench_open(&scratch);
	after = harness_decap_open();
	if (!after)
		die("load the decap program", -EIO);
	objs[1] = after->obj;
	before = bpf_object__open_file(DECAP_BEFORE_OBJ, NULL);
	if (!before)
		die("open " DECAP_BEFORE_OBJ " (make bench builds it)", -errno);
	{
		struct bpf_map *m;

		bpf_object__for_each_map(m, before)
			bpf_map__set_pin_path(m, NULL);
	}
	if (bpf_object__load(before))
		die("load " DECAP_BEFORE_OBJ, -errno);
	objs[0] = before;
	decap_bench_configure(before);
	decap_bench_configure(after->obj);
	/* An ACK (a SYN for the taken one) of a client to the VIP, as the balancer sends it. */
	for (e = 0; e < D_COUNT; e++) {
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					 .src = "198.18.1.1", .dst = HARNESS_DECAP_VIP4,
					 .sport = 40000, .dport = 80,
					 .tcp_flags = e == D_HOP_TAKEN ? 0x02 : 0x10 };
		uint8_t gue[12] = { 1, 4, 0, 0, 0, 0, 0, 0, 198, 18, 13, 12 };
		struct pkt_encap enc = { .family = LB_FAMILY_IPV4, .src = HARNESS_SOURCE4,
					 .dst = HARNESS_DECAP_LOCAL4, .proto = IPPROTO_UDP,
					 .dport = LB_GUE_PORT_DEFAULT, .gue = gue, .gue_len = 8 };

		if (e == D_IPIP)
			enc.proto = IPPROTO_IPIP;
		if (e >= D_HOP_TAKEN) {
			gue[0] = 2;
			gue[7] = 1;
			enc.gue_len = 12;
		}
		pkt_build(&inner, &spec);
		pkt_build_encap(&frames[e], &enc, &inner);
	}
	for (v = 0; v < 2; v++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(objs[v], "ringlb_decap");

		slot = (__u32)(S_DECAP + v);
		fd = prog ? bpf_program__fd(prog) : -1;
		if (fd < 0 || bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
			die("prog array", -errno);
	}
	for (round = 0; round < DOORS_ROUNDS; round++) {
		empty[round] = reset_run_ns(skel, ifindex, frames[D_GUE].data, frames[D_GUE].len,
					    S_EMPTY, &verdict);
		for (e = 0; e < D_COUNT; e++)
			for (v = 0; v < 2; v++) {
				/* Before first in even rounds, after first in odd ones. */
				int w = round % 2 ? 1 - v : v;

				ns[w][e][round] = reset_run_ns(skel, ifindex, frames[e].data,
							       frames[e].len, (__u32)(S_DECAP + w),
							       &verdict);
				if (verdict != want[e]) {
					fprintf(stderr, "bench: decap %s (%s) returned %u, not %u\n",
						names[e], w ? "after" : "before", verdict, want[e]);
					die("a decap benchmark frame was not handled", -EPROTO);
				}
			}
	}
	for (e = 0; e < D_COUNT; e++)
		for (round = 0; round < DOORS_ROUNDS; round++)
			diff[e][round] = ns[1][e][round] - ns[0][e][round];
	qsort(empty, DOORS_ROUNDS, sizeof(double), cmp_double);
	printf("   %-26s %10s %10s %8s %8s  %s\n", "frame", "before ns", "after ns", "+ns", "ratio",
	       "quartiles of +ns");
	for (e = 0; e < D_COUNT; e++) {
		double *d = diff[e];

		for (v = 0; v < 2; v++) {
			qsort(ns[v][e], DOORS_ROUNDS, sizeof(double), cmp_double);
			med[v][e] = ns[v][e][DOORS_ROUNDS / 2] - empty[DOORS_ROUNDS / 2];
		}
		qsort(d, DOORS_ROUNDS, sizeof(double), cmp_double);
		printf("   %-26s %10.1f %10.1f %+8.1f %8.2f  %+.1f .. %+.1f\n", names[e], med[0][e],
		       med[1][e], d[DOORS_ROUNDS / 2], (med[0][e] + d[DOORS_ROUNDS / 2]) / med[0][e],
		       d[DOORS_ROUNDS / 4], d[3 * DOORS_ROUNDS / 4]);
	}
	printf("   goal: +ns <= +10 on the frames taken\n");
	bpf_object__close(before);
	decap_bpf__destroy(after);
	bench_xdp_bpf__destroy(skel);
	harness_net_leave();
}

/* --- 1d. second chance per packet --------------------------------------------------------- */

#define SC_BACKENDS 64

/* Backend ids of @r's members, by name: "backend-N" is @base + N whatever ring it is in. */
static __u32 *ids_by_name(const struct ring *r, __u32 base)
{
	size_t n = ring_member_count(r), m;
	__u32 *ids = calloc(n, sizeof(*ids));

	if (!ids)
		die("ids", -ENOMEM);
	for (m = 0; m < n; m++)
		ids[m] = base + (__u32)atoi(ring_member_name(r, (__u32)m) + strlen("backend-"));
	return ids;
}

/* @how's runs through the shipped program: a pinned or a stateless gue VIP. */
enum { SC_EMPTY, SC_PINNED_EST, SC_PINNED_NEW, SC_STATELESS, SC_STATELESS_SYN, SC_COUNT };

static void second_chance_per_packet(void)
{
	static const char *const names[SC_COUNT] = {
		"harness", "pinned, established", "pinned, new flow", "stateless, not a SYN",
		"stateless, a SYN",
	};
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] },
				     .iface_mac = { 2, 0, 0, 0, 0x11, 2 } };
	struct lb_config cfg = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	struct pkt frames[SC_COUNT], unused;
	double ns[SC_COUNT][ROUNDS], med[SC_COUNT];
	struct ring *past[LB_RING_HISTORY], *r;
	__u32 *past_ids[LB_RING_HISTORY], *ids[2];
	struct bench_xdp_bpf *skel;
	struct lb_prog *shipped;
	__u64 hops0, hops, packets = 0;
	__u32 id, verdict, slot = S_SHIPPED, k;
	int ifindex, e, round, fd, v;
	__u8 a[16];

	printf("\n1d. Second chance per packet: the driver of 1c writing the next flow into the\n"
	       "   frame; IPv4 TCP to two gue VIPs of %d backends (ring of 16 points each), ns\n"
	       "   per packet net of the harness, median of %d interleaved runs of %d packets.\n"
	       "   pinned: a VIP with a flow table, its %d flows pinned (established) or a\n"
	       "   fresh flow every packet (new: the ring, and a flow-table insert). stateless:\n"
	       "   no flow table, three previous rings kept (one backend fewer each: the last\n"
	       "   three changes), a fresh flow every packet; not a SYN: the hop list is worked\n"
	       "   out (three searches more) and written when the flow moved.\n",
	       SC_BACKENDS, ROUNDS, PACKETS_PER_RUN, FLOWS);
	ifindex = harness_net_enter();
	if (ifindex < 0)
		die("the encapsulation network", -EIO);
	skel = bench_open(&unused);
	if (lb_prog_load(&shipped, &opts))
		die("load the shipped program", -errno);
	pkt_addr(LB_FAMILY_IPV4, HARNESS_SOURCE4, a);
	memcpy(cfg.source4, a, 4);
	if (lb_config_write(lb_prog_maps(shipped), &cfg))
		die("encapsulation settings", -errno);
	/* Backends 1..64 serve VIP 0 (pinned), 65..128 VIP 1 (stateless). */
	for (v = 0; v < 2; v++)
		for (id = 0; id < SC_BACKENDS; id++) {
			struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
						.vip_id = (__u32)v, .cookie = id + 1,
						.forward = LB_FORWARD_GUE,
						.addr = { 198, 18, (__u8)(13 + v), (__u8)(id + 1) } };
			__u32 slot_id = 1 + (__u32)v * SC_BACKENDS + id;

			if (lb_backend_install(lb_prog_maps(shipped), slot_id, &b))
				die("backend", -errno);
		}
	r = ring_sized(SC_BACKENDS, 16);
	for (v = 0; v < 2; v++) {
		struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
					  .family = LB_FAMILY_IPV4 };
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					 .src = "198.18.1.1", .sport = 40000, .dport = 80,
					 .tcp_flags = 0x10 };
		char vip[32];

		snprintf(vip, sizeof(vip), "198.18.0.%d", 100 + v);
		pkt_addr(LB_FAMILY_IPV4, vip, key.addr);
		ids[v] = ids_by_name(r, 1 + (__u32)v * SC_BACKENDS);
		if (lb_vip_install_as(lb_prog_maps(shipped), &key, (__u32)v, r, ids[v],
				      v ? LB_VIP_STATELESS : 0))
			die("VIP", -errno);
		spec.dst = vip;
		pkt_build(&frames[v ? SC_STATELESS : SC_PINNED_EST], &spec);
		spec.tcp_flags = 0x02;
		if (v)
			pkt_build(&frames[SC_STATELESS_SYN], &spec);
	}
	frames[SC_PINNED_NEW] = frames[SC_PINNED_EST];
	frames[SC_EMPTY] = frames[SC_PINNED_EST];
	for (k = 0; k < LB_RING_HISTORY; k++) {
		past[k] = ring_sized(SC_BACKENDS - 1 - k, 16);
		past_ids[k] = ids_by_name(past[k], 1 + SC_BACKENDS);
	}
	/* Newest first: 63 backends, then 62, then 61 (so the serving ring added one each time). */
	if (lb_vip_history_sync(lb_prog_maps(shipped), 1, past, past_ids, LB_RING_HISTORY))
		die("previous rings", -errno);
	vips_settled(lb_prog_maps(shipped));
	fd = lb_prog_fd(shipped);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
		die("prog array", -errno);
	hops0 = harness_percpu_sum(lb_prog_maps(shipped)->reason_stats, LB_REASON_FORWARDED_HOPS,
				   2, 0);
	for (round = -1; round < ROUNDS; round++)
		for (e = 0; e < SC_COUNT; e++) {
			struct bench_config c = { e == SC_EMPTY ? S_EMPTY : S_SHIPPED,
						  e == SC_PINNED_NEW || e >= SC_STATELESS, FLOWS };
			struct bench_frame f = { .len = (__u32)frames[e].len };
			struct xdp_md md = { .data_end = (__u32)frames[e].len,
					     .ingress_ifindex = (__u32)ifindex };
			unsigned char out[PKT_MAX];
			__u32 zero = 0;
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frames[e].data,
				    .data_size_in = (__u32)frames[e].len, .data_out = out,
				    .data_size_out = sizeof(out), .ctx_in = &md,
				    .ctx_size_in = sizeof(md), .repeat = PACKETS_PER_RUN);

			memcpy(f.data, frames[e].data, frames[e].len);
			if (bpf_map_update_elem(bpf_map__fd(skel->maps.config), &zero, &c, BPF_ANY) ||
			    bpf_map_update_elem(bpf_map__fd(skel->maps.frame_reset), &zero, &f,
						BPF_ANY) ||
			    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bench_reset), &o))
				die("BPF_PROG_TEST_RUN of bench_reset", -errno);
			verdict = o.retval;
			if (verdict != XDP_TX) {
				fprintf(stderr, "bench: %s returned %u\n", names[e], verdict);
				die("a second-chance benchmark frame was not forwarded", -EPROTO);
			}
			if (e == SC_STATELESS)
				packets += PACKETS_PER_RUN;
			/* round -1 warms caches and pins the established flows */
			if (round >= 0)
				ns[e][round] = o.duration;
		}
	hops = harness_percpu_sum(lb_prog_maps(shipped)->reason_stats, LB_REASON_FORWARDED_HOPS,
				  2, 0) - hops0;
	for (e = 0; e < SC_COUNT; e++) {
		qsort(ns[e], ROUNDS, sizeof(double), cmp_double);
		med[e] = ns[e][ROUNDS / 2] - (e ? ns[SC_EMPTY][ROUNDS / 2] : 0);
	}
	printf("   %-22s %9s %9s %-20s %8s\n", "", "net ns", "ratio", "to", "goal");
	printf("   %-22s %9.1f\n", names[SC_EMPTY], ns[SC_EMPTY][ROUNDS / 2]);
	printf("   %-22s %9.1f\n", names[SC_PINNED_EST], med[SC_PINNED_EST]);
	printf("   %-22s %9.1f %9.2f %-20s\n", names[SC_PINNED_NEW], med[SC_PINNED_NEW],
	       med[SC_PINNED_NEW] / med[SC_PINNED_EST], "pinned, established");
	printf("   %-22s %9.1f %9.2f %-20s %8s\n", names[SC_STATELESS], med[SC_STATELESS],
	       med[SC_STATELESS] / med[SC_PINNED_EST], "pinned, established", "<= 1.15");
	printf("   %-22s %9s %9.2f %-20s\n", "", "", med[SC_STATELESS] / med[SC_PINNED_NEW],
	       "pinned, new flow");
	printf("   %-22s %9.1f %9.2f %-20s\n", names[SC_STATELESS_SYN], med[SC_STATELESS_SYN],
	       med[SC_STATELESS_SYN] / med[SC_PINNED_EST], "pinned, established");
	printf("   stateless packets that carried a hop list: %.1f%% (%llu of %llu, the rest kept "
	       "their owner)\n", 100.0 * (double)hops / (double)packets,
	       (unsigned long long)hops, (unsigned long long)packets);
	for (k = 0; k < LB_RING_HISTORY; k++) {
		ring_free(past[k]);
		free(past_ids[k]);
	}
	free(ids[0]);
	free(ids[1]);
	ring_free(r);
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
	harness_net_leave();
}

/* Source prefixes of the ranged VIP in 1f: 198.0.0.0/8 and nested /20s (the flows are 198/8). */
#define SOURCES_BENCH_PREFIXES 1000
#define SOURCES_BENCH_BACKENDS 64

enum { SR_EMPTY, SR_PLAIN_EST, SR_RANGED_EST, SR_PLAIN_NEW, SR_RANGED_NEW, SR_COUNT };

/* VIP @vip_id at 198.18.0.(100 + @vip_id):80/tcp, served by its own @count backends. */
static void sources_bench_vip(const struct lb_maps *maps, __u32 vip_id, const struct ring *r,
			      struct pkt *frame)
{
	struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
				  .family = LB_FAMILY_IPV4 };
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
				 .src = "198.18.1.1", .sport = 40000, .dport = 80,
				 .tcp_flags = 0x10 };
	__u32 ids[SOURCES_BENCH_BACKENDS], m;
	char vip[32];

	for (m = 0; m < SOURCES_BENCH_BACKENDS; m++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.vip_id = vip_id, .cookie = 1 + m + vip_id * 1000,
					.mac = { 2, 0, 0, 0, (__u8)vip_id, (__u8)m } };

		ids[m] = 1 + vip_id * SOURCES_BENCH_BACKENDS + m;
		if (lb_backend_install(maps, ids[m], &b))
			die("backend", -errno);
	}
	snprintf(vip, sizeof(vip), "198.18.0.%u", 100 + vip_id);
	pkt_addr(LB_FAMILY_IPV4, vip, key.addr);
	if (lb_vip_install(maps, &key, vip_id, r, ids))
		die("VIP", -errno);
	vips_settled(maps);
	spec.dst = vip;
	pkt_build(frame, &spec);
}

/*
 * Rounds of 1f: many more than ROUNDS, as its goal is a few ns on a shared
 * machine (the median of the rounds' paired differences).
 */
#define SOURCES_ROUNDS 101
/*
 * Runs of each side in a round, alternating, of which the fastest counts:
 * the noise of a shared machine (other guests, interrupts) only ever adds.
 */
#define SOURCES_REPEATS 3

/*
 * Switch @key's source ranges on or off by its value's flags alone. A direct
 * update, not lb_vip_sources_swap(): no packet runs between two test runs,
 * so nothing can hold the old value, and the swap's wait for readers would
 * take most of the bench's time. For the same reason the VIP epoch moves on
 * by two at once (each CPU drops its copies) where the controller would wait
 * between its two steps.
 */
static void sources_flags_set(const struct lb_maps *maps, const struct lb_vip_key *key, int on)
{
	struct lb_vip vip;
	__u32 zero = 0;
	__u64 epoch;

	if (bpf_map_lookup_elem(maps->vips, key, &vip))
		die("the ranged VIP", -errno);
	vip.flags = (__u8)((vip.flags & ~LB_VIP_SOURCE_FLAGS) |
			   (on ? LB_VIP_SOURCES | LB_VIP_ALLOW_LIST : 0));
	if (bpf_map_update_elem(maps->vips, key, &vip, BPF_EXIST))
		die("source ranges on and off", -errno);
	if (bpf_map_lookup_elem(maps->vip_epoch, &zero, &epoch))
		die("the VIP epoch", -errno);
	epoch = epoch % 2 ? epoch + 1 : epoch + 2;
	if (bpf_map_update_elem(maps->vip_epoch, &zero, &epoch, BPF_EXIST))
		die("the VIP epoch", -errno);
}

/* One run of 1f: @frame through the program in @slot; ns per packet. */
static double sources_run(struct bench_xdp_bpf *skel, const struct pkt *frame, __u32 slot,
			  int fresh, const char *name)
{
	struct bench_config c = { slot, fresh, FLOWS };
	struct bench_frame f = { .len = (__u32)frame->len };
	unsigned char out[PKT_MAX];
	__u32 zero = 0;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame->data,
		    .data_size_in = (__u32)frame->len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = PACKETS_PER_RUN);

	memcpy(f.data, frame->data, frame->len);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.config), &zero, &c, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.frame_reset), &zero, &f, BPF_ANY) ||
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bench_reset), &o))
		die("BPF_PROG_TEST_RUN of bench_reset", -errno);
	if (o.retval != XDP_TX) {
		fprintf(stderr, "bench: %s returned %u\n", name, o.retval);
		die("a source-range benchmark frame was not forwarded", -EPROTO);
	}
	return o.duration;
}

/*
 * 1f. Source ranges: the shipped program for one VIP with its 1,000 prefixes
 * switched off and on between runs (every flow allowed, so both forward): the
 * same VIP, ring and flow entries, so the difference is the check alone.
 */
static void sources_per_packet(void)
{
	static const char *const names[SR_COUNT] = {
		"harness", "no ranges, established", "1,000 prefixes, estab.", "no ranges, new flow",
		"1,000 prefixes, new",
	};
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] } };
	struct state_source *prefixes = calloc(SOURCES_BENCH_PREFIXES, sizeof(*prefixes));
	struct lb_source_set *set = malloc(sizeof(*set));
	double ns[SR_COUNT][SOURCES_ROUNDS], med[SR_COUNT], diff[SR_COUNT][SOURCES_ROUNDS], d0;
	double lowest[SR_COUNT] = { 0 };
	struct lb_vip_key ranged_key = { .port = htons(80), .protocol = IPPROTO_TCP,
					 .family = LB_FAMILY_IPV4 };
	struct test_rng rng = { SEED ^ 0x737263 };
	struct pkt frames[SR_COUNT], unused;
	struct bench_xdp_bpf *skel;
	struct lb_prog *shipped;
	static __u32 flow_addr[FLOWS];
	struct ring *r;
	size_t n = 0;
	int round, e, k, fd, on = 1, want;
	__u32 slot = S_SHIPPED, whole = 0;

	printf("\n1f. Source ranges per packet: the driver of 1c, IPv4 TCP to an l2 VIP of %d\n"
	       "   backends (ring of 1,024 points), its source ranges off, then on: %d prefixes\n"
	       "   (198.0.0.0/8 allowed, %d /32s inside it denied, none a flow's client, so\n"
	       "   every flow is served); ns per packet net of the harness, median of\n"
	       "   %d rounds, each side's fastest of %d alternating runs of %d packets in a\n"
	       "   round; +ns: the median of the rounds' paired differences (the order flips\n"
	       "   every round); established: the %d flows pinned; new: a fresh flow every\n"
	       "   packet.\n", SOURCES_BENCH_BACKENDS, SOURCES_BENCH_PREFIXES,
	       SOURCES_BENCH_PREFIXES - 1, SOURCES_ROUNDS, SOURCES_REPEATS, PACKETS_PER_RUN, FLOWS);
	if (!prefixes || !set)
		die("prefixes", -ENOMEM);
	skel = bench_open(&unused);
	if (lb_prog_load(&shipped, &opts))
		die("load the shipped program", -errno);
	r = ring_sized(SOURCES_BENCH_BACKENDS, 16);
	sources_bench_vip(lb_prog_maps(shipped), 1, r, &frames[SR_RANGED_EST]);
	for (e = 0; e < SR_COUNT; e++)
		frames[e] = frames[SR_RANGED_EST];
	/*
	 * 198.0.0.0/8 allowed and 999 /32s inside it denied, none a flow's client
	 * (the pinned flows' addresses, and 198.0.0.0/16 where the fresh flows come
	 * from): runs that cannot merge, every flow served. Then, in slot 1, the
	 * VIP's value names them: what vip sources does.
	 */
	for (n = 0; n < FLOWS; n++) {
		struct bench_tuple t;
		__u32 k = (__u32)n;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.flow_tuples), &k, &t))
			die("flow tuples", -errno);
		flow_addr[n] = ntohl(t.saddr);
	}
	n = 0;
	while (n < SOURCES_BENCH_PREFIXES) {
		struct prefix *x = &prefixes[n].prefix;
		__u32 a = 0xc6000000u | (__u32)(test_rng_next(&rng) & 0xffffff), i;

		for (i = 0; n && i < FLOWS && flow_addr[i] != a; i++)
			;
		if (n && (i < FLOWS || (a >> 16) == 0xc600))
			continue;
		x->addr.family = LB_FAMILY_IPV4;
		x->len = n ? 32 : 8;
		if (!n)
			a = 0xc6000000u;
		x->addr.bytes[0] = (__u8)(a >> 24);
		x->addr.bytes[1] = (__u8)(a >> 16);
		x->addr.bytes[2] = (__u8)(a >> 8);
		x->addr.bytes[3] = (__u8)a;
		prefixes[n].deny = n != 0;
		n++;
	}
	pkt_addr(LB_FAMILY_IPV4, "198.18.0.101", ranged_key.addr);
	if (source_set_build(set, prefixes, n) ||
	    lb_source_set_place(lb_prog_maps(shipped), 1, 1, set) ||
	    lb_vip_sources_swap(lb_prog_maps(shipped), &ranged_key, 1, 1,
				LB_VIP_SOURCES | LB_VIP_ALLOW_LIST))
		die("source ranges", -errno);
	vips_settled(lb_prog_maps(shipped));
	for (k = 0; k < 1 << set->head.bits; k++)
		whole += LB_SOURCE_BUCKET_CLASS(set->head.bucket, (unsigned int)k) != LB_SOURCE_BUCKET_SPLIT;
	printf("   the set: %u runs, index of %u bits from bit %u, %u of its buckets whole (the\n"
	       "   verdict in one read)\n", set->head.count, set->head.bits, set->head.shift,
	       whole);
	fd = lb_prog_fd(shipped);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
		die("prog array", -errno);
	/*
	 * Each round runs the harness, then each pair (plain, ranged) alternating
	 * SOURCES_REPEATS times in an order that flips every round, so neither side
	 * always runs on caches the other warmed, and keeps each side's fastest
	 * run; the cost is the median of the rounds' paired differences, which
	 * cancels the machine's slow drifts that a difference of medians keeps.
	 */
	for (round = -1; round < SOURCES_ROUNDS; round++) {
		d0 = sources_run(skel, &frames[SR_EMPTY], S_EMPTY, 0, names[SR_EMPTY]);
		if (round >= 0)
			ns[SR_EMPTY][round] = d0;
		/* The fresh flows of the round before evicted the pins: pin them again. */
		sources_run(skel, &frames[SR_PLAIN_EST], S_SHIPPED, 0, names[SR_PLAIN_EST]);
		for (e = SR_PLAIN_EST; e < SR_COUNT; e += 2)
			for (k = 0; k < 2 * SOURCES_REPEATS; k++) {
				/* The same VIP, flows and ring; only its value's flags say "ranged". */
				want = (k ^ round) & 1;
				if (want != on) {
					sources_flags_set(lb_prog_maps(shipped), &ranged_key, want);
					on = want;
				}
				d0 = sources_run(skel, &frames[e + want], S_SHIPPED, e >= SR_PLAIN_NEW,
						 names[e + want]);
				if (round >= 0 && (k < 2 || d0 < ns[e + want][round]))
					ns[e + want][round] = d0;
			}
	}
	for (e = SR_PLAIN_EST; e < SR_COUNT; e += 2)
		for (round = 0; round < SOURCES_ROUNDS; round++)
			diff[e][round] = ns[e + 1][round] - ns[e][round];
	for (e = 0; e < SR_COUNT; e++) {
		qsort(ns[e], SOURCES_ROUNDS, sizeof(double), cmp_double);
		if (e)
			lowest[e] = ns[e][0] - ns[SR_EMPTY][0];
		med[e] = ns[e][SOURCES_ROUNDS / 2] - (e ? ns[SR_EMPTY][SOURCES_ROUNDS / 2] : 0);
	}
	printf("   %-24s %9s %9s %9s %-22s %8s\n", "", "net ns", "+ns", "ratio", "to", "goal");
	printf("   %-24s %9.1f\n", names[SR_EMPTY], ns[SR_EMPTY][SOURCES_ROUNDS / 2]);
	for (e = SR_PLAIN_EST; e < SR_COUNT; e += 2) {
		double *d = diff[e];

		qsort(d, SOURCES_ROUNDS, sizeof(double), cmp_double);
		printf("   %-24s %9.1f\n", names[e], med[e]);
		printf("   %-24s %9.1f %+9.1f %9.2f %-22s %8s\n", names[e + 1], med[e] +
		       d[SOURCES_ROUNDS / 2], d[SOURCES_ROUNDS / 2],
		       (med[e] + d[SOURCES_ROUNDS / 2]) / med[e], names[e], "<= +10 ns");
		printf("   %-24s %9s %+9.1f .. %+.1f (quartiles of the %d paired rounds)\n", "", "",
		       d[SOURCES_ROUNDS / 4], d[3 * SOURCES_ROUNDS / 4], SOURCES_ROUNDS);
		printf("   %-24s %9s %+9.1f (the fastest round of each side)\n", "", "",
		       lowest[e + 1] - lowest[e]);
	}
	free(prefixes);
	free(set);
	ring_free(r);
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
}

/* --- 1g. against a reference that does Katran's work ----------------------------------- */

/* Points per backend in 1g: N = 1000 at the default K (4096) is more than a ring may hold. */
#define REFERENCE_VNODES 1024

enum { G_REF, G_KATRAN, G_KPROG, G_IPIP_100, G_IPIP_1000, G_L2_100, G_L2_1000, G_COUNT };
enum { G_EST, G_NEW, G_SYN, G_COLUMNS };

/*
 * Is @out (@len bytes) the reference's IPIP packet of @in: 20 bytes longer,
 * an outer IPv4 header to a real with a right checksum, then @in's IP packet
 * (its client's address and port rewritten by the driver)?
 */
static int reference_frame_ok(const unsigned char *out, __u32 len, const struct pkt *in)
{
	const unsigned char *ip = out + 14;
	__u32 sum = 0, i;

	__u8 real[16];

	pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, real);
	/* To the next hop's MAC, as the harness set it (both references). */
	if (memcmp(out, bench_next_hop_mac, 6))
		return 0;
	if (len != in->len + 20 || out[12] != 0x08 || out[13] || ip[0] != 0x45 || ip[9] != 4 ||
	    ip[8] != 64 || (size_t)(ip[2] << 8 | ip[3]) != in->len - 14 + 20 ||
	    memcmp(ip + 16, real, 4) || memcmp(ip + 20 + 16, in->data + 14 + 16, 4))
		return 0;
	for (i = 0; i < 20; i += 2)
		sum += (__u32)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* CPU @cpu's LRU flow table in @outer: keys of @key_size octets, struct ref_flow values. */
static void ref_table_make(struct bpf_map *outer, __u32 key_size, __u32 cpu)
{
	int inner = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "ref_flows_cpu", key_size,
				   sizeof(struct ref_flow), BENCH_REF_FLOWS, NULL);

	if (inner < 0 || bpf_map_update_elem(bpf_map__fd(outer), &cpu, &inner, BPF_ANY))
		die("a reference's flow tables", -errno);
	close(inner);
}

/* A run of fresh flows must stay below the rate past which Katran's program stops pinning. */
_Static_assert(PACKETS_PER_RUN < KATRAN_CONN_RATE_MAX, "Katran's program pins every new flow of a run");

/* libbpf's warnings while Katran's object loads (a verifier log), on stderr. */
static int katran_print(enum libbpf_print_level level, const char *format, va_list args)
{
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, format, args);
}

/*
 * The median ratio of each of 1g's rows @from .. @to - 1 in each column it
 * ran (col_on), under a header row of @title and the columns' names (none
 * when @title is NULL: more rows of the table above).
 */
static void ratio_table(const char *title, double ratios[][G_COLUMNS][ROUNDS], int from, int to,
			const char *const names[], const char *const columns[], const int col_on[])
{
	int g, c;

	if (title) {
		printf("   %-22s", title);
		for (c = 0; c < G_COLUMNS; c++)
			printf(" %18s", columns[c]);
		printf("\n");
	}
	for (g = from; g < to; g++) {
		printf("   %-22s", names[g]);
		for (c = 0; c < G_COLUMNS; c++) {
			qsort(ratios[g][c], ROUNDS, sizeof(double), cmp_double);
			if (col_on[c])
				printf(" %18.2f", ratios[g][c][ROUNDS / 2]);
			else
				printf(" %18s", "-");
		}
		printf("\n");
	}
}

/* One run of bench_reset over @frame into slot @target, @fresh flows or FLOWS cycling. */
static double reference_run(struct bench_xdp_bpf *skel, int ifindex, const struct pkt *frame,
			    __u32 target, int fresh)
{
	struct bench_config cfg = { target, (__u32)fresh, FLOWS };
	unsigned char out[PKT_MAX];
	__u32 verdict, out_len;
	double ns = reset_run_with(skel, ifindex, frame->data, frame->len, &cfg, &verdict, out,
				   &out_len);

	if (verdict != XDP_TX) {
		fprintf(stderr, "bench: slot %u returned %u\n", target, verdict);
		die("a reference benchmark frame was not forwarded", -EPROTO);
	}
	/* Both send IPIP or the frame itself; the reference's outer header must be whole. */
	if ((target == S_REFERENCE || target == S_REFERENCE_KATRAN || target == S_KATRAN) &&
	    !reference_frame_ok(out, out_len, frame))
		die("the reference sent a frame that is not its IPIP packet", -EPROTO);
	return ns;
}

/*
 * 1g. ringlb against bench_reference, which does the work Katran's balancer
 * does for an IPIP VIP (bench_xdp.bpf.c): the same frames through the same
 * driver in one interleaved run, ratios ringlb / reference per round.
 */
static void reference_per_packet(void)
{
	static const char *const names[G_COUNT] = {
		"reference, floor", "reference, Katran's", "Katran's program", "ringlb ipip, N=100",
		"ringlb ipip, N=1000", "ringlb l2, N=100", "ringlb l2, N=1000",
	};
	static const char *const columns[G_COLUMNS] = { "established", "new flow", "new SYN" };
	static const __u32 sizes[G_COUNT] = { 0, 0, 0, 100, 1000, 100, 1000 };
	/* Each row's program: the two references, Katran's program, then the shipped one. */
	static const __u32 target[G_COUNT] = { S_REFERENCE, S_REFERENCE_KATRAN, S_KATRAN,
					       S_SHIPPED, S_SHIPPED, S_SHIPPED, S_SHIPPED };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] },
				     .iface_mac = { 2, 0, 0, 0, 0x11, 2 } };
	struct lb_config cfg = { .gue_port = htons(LB_GUE_PORT_DEFAULT) };
	static double ns[G_COUNT][G_COLUMNS][ROUNDS], ratio[G_COUNT][G_COLUMNS][ROUNDS],
		floor_ratio[G_COUNT][G_COLUMNS][ROUNDS], prog_ratio[G_COUNT][G_COLUMNS][ROUNDS];
	const char *katran_obj = getenv("KATRAN_BPF_OBJ");
	const char *only = getenv("BENCH_1G_ONLY"), *points = getenv("BENCH_1G_POINTS");
	struct katran *katran = NULL;
	int col_on[G_COLUMNS], err;
	__u64 misses = 0;
	__u32 vnodes = REFERENCE_VNODES;
	double harness[ROUNDS], d;
	struct pkt frames[G_COUNT][G_COLUMNS];
	struct bench_xdp_bpf *skel;
	struct lb_prog *shipped;
	struct lb_maps bench_maps;
	struct pkt unused;
	__u32 next_id = 1, slot, m;
	int ifindex, g, c, round, fd;
	__u8 a[16];

	printf("\n1g. Against references that do Katran's work for an IPIP VIP (bench_reference,\n"
	       "   the floor: a hash map of VIPs, an LRU of %d flows per CPU, 16-byte values a\n"
	       "   SYN does not read, jhash, one read of a %d-entry table, a fixed next-hop MAC;\n"
	       "   bench_reference_katran adds what Katran's program does besides: a 40-byte flow\n"
	       "   key, the MAC read from a control array, statistics of the table, its misses,\n"
	       "   each VIP and each real, its rate of new connections, as Katran's\n"
	       "   balancer_kern.c keeps them):\n"
	       "   the driver of 1c (the frame made again each packet), %d packets per run, %d\n"
	       "   interleaved rounds; IPv4 TCP to one VIP of N backends (ringlb: K = %d points\n"
	       "   a backend; flow table of %d, every new flow pinned); established: %d flows\n"
	       "   cycling, pinned; new: a fresh flow every packet (an ACK, or a SYN). ns net of\n"
	       "   the driver, medians; ratio: the median of the rounds' ringlb / Katran's\n"
	       "   reference (the floor's row: floor / Katran's; below: ringlb / the floor).\n",
	       BENCH_REF_FLOWS, TABLE_SIZE, PACKETS_PER_RUN, ROUNDS, REFERENCE_VNODES,
	       LB_FLOWS_DEFAULT, FLOWS);
	/* For a developer's diagnosis: one column alone, another K. */
	for (c = 0; c < G_COLUMNS; c++)
		col_on[c] = !only || !*only || strcmp(only, columns[c]) == 0;
	if (!col_on[G_EST] && !col_on[G_NEW] && !col_on[G_SYN])
		die("BENCH_1G_ONLY: none of 'established', 'new flow', 'new SYN'", -EINVAL);
	if (points && *points) {
		char *end;
		unsigned long k = strtoul(points, &end, 10);

		if (*end || !isdigit((unsigned char)*points) || k < 1 || k > REFERENCE_VNODES)
			die("BENCH_1G_POINTS: 1 .. 1024 points a backend", -EINVAL);
		vnodes = (__u32)k;
		printf("   BENCH_1G_POINTS: K = %u points a backend, not %d.\n", vnodes,
		       REFERENCE_VNODES);
	}
	ifindex = harness_net_enter();
	if (ifindex < 0)
		die("the encapsulation network", -EIO);
	skel = bench_open(&unused);
	if (lb_prog_load(&shipped, &opts))
		die("load the shipped program", -errno);
	pkt_addr(LB_FAMILY_IPV4, HARNESS_SOURCE4, a);
	memcpy(cfg.source4, a, 4);
	pkt_addr(LB_FAMILY_IPV6, HARNESS_SOURCE6, cfg.source6);
	if (lb_config_write(lb_prog_maps(shipped), &cfg))
		die("encapsulation settings", -errno);
	/* The reference's flow table of each CPU, its VIP (one table) and its reals. */
	{
		int cpus = libbpf_num_possible_cpus();
		__u32 k;

		if (cpus <= 0 || cpus > BENCH_REF_CPUS)
			die("the reference's CPUs", -ERANGE);
		for (k = 0; k < (__u32)cpus; k++) {
			ref_table_make(skel->maps.ref_flows, sizeof(struct ref_flow_key), k);
			ref_table_make(skel->maps.ref_flows_wide, sizeof(struct ref_flow_key_wide), k);
		}
	}
	bench_maps_of(skel, &bench_maps);
	{
		struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
					  .family = LB_FAMILY_IPV4 };
		struct bench_real real;
		struct ring *r = ring_sized(2, 64);
		__u32 ids[2] = { 1, 2 };

		pkt_addr(LB_FAMILY_IPV4, "198.18.0.100", key.addr);
		if (lb_vip_install(&bench_maps, &key, 0, r, ids))
			die("the reference's VIP", -errno);
		ring_free(r);
		pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, a);
		memcpy(&real.addr, a, 4);
		{
			__u64 ctl = 0;
			__u32 zero = 0;

			memcpy(&ctl, bench_next_hop_mac, 6);
			if (bpf_map_update_elem(bpf_map__fd(skel->maps.ref_ctl), &zero, &ctl,
						BPF_ANY))
				die("Katran's reference's control array", -errno);
		}
		for (m = 1; m < BENCH_REF_REALS; m++)
			if (bpf_map_update_elem(bpf_map__fd(skel->maps.ref_reals), &m, &real,
						BPF_ANY))
				die("the reference's reals", -errno);
	}
	for (g = 0; g < G_COUNT; g++) {
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_TCP,
					 .src = "198.18.1.1", .sport = 40000, .dport = 80 };
		char vip[32];

		snprintf(vip, sizeof(vip), "198.18.0.%d", target[g] == S_SHIPPED ? 110 + g : 100);
		if (target[g] == S_SHIPPED) {
			struct lb_vip_key key = { .port = htons(80), .protocol = IPPROTO_TCP,
						  .family = LB_FAMILY_IPV4 };
			__u32 *ids = calloc(sizes[g], sizeof(*ids));
			struct ring *r = ring_sized(sizes[g], vnodes);

			for (m = 0; m < sizes[g]; m++) {
				struct lb_backend b = {
					.state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.vip_id = (__u32)g, .cookie = next_id,
					.mac = { 2, 0, 0, 0, 0, 0x11 },
					.forward = g <= G_IPIP_1000 ? LB_FORWARD_IPIP : LB_FORWARD_L2 };

				pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, b.addr);
				ids[m] = next_id++;
				if (lb_backend_install(lb_prog_maps(shipped), ids[m], &b))
					die("backend", -errno);
			}
			pkt_addr(LB_FAMILY_IPV4, vip, key.addr);
			if (lb_vip_install(lb_prog_maps(shipped), &key, (__u32)g, r, ids))
				die("VIP", -errno);
			ring_free(r);
			free(ids);
		}
		spec.dst = vip;
		for (c = 0; c < G_COLUMNS; c++) {
			spec.tcp_flags = c == G_SYN ? 0x02 : 0x10;
			pkt_build(&frames[g][c], &spec);
		}
	}
	/* The VIPs' epoch closed, as a controller's change ends: each CPU keeps copies again. */
	vips_settled(lb_prog_maps(shipped));
	fd = lb_prog_fd(shipped);
	slot = S_SHIPPED;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
		die("prog array", -errno);
	fd = bpf_program__fd(skel->progs.bench_reference);
	slot = S_REFERENCE;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
		die("prog array", -errno);
	fd = bpf_program__fd(skel->progs.bench_reference_katran);
	slot = S_REFERENCE_KATRAN;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
		die("prog array", -errno);
	if (katran_obj && *katran_obj) {
		struct katran_setup ks = { .port = htons(80), .reals = 100, .flows = LB_FLOWS_DEFAULT };

		pkt_addr(LB_FAMILY_IPV4, "198.18.0.100", a);
		memcpy(&ks.vip, a, 4);
		pkt_addr(LB_FAMILY_IPV4, HARNESS_DECAP_LOCAL4, a);
		memcpy(&ks.real, a, 4);
		memcpy(ks.mac, bench_next_hop_mac, 6);
		libbpf_set_print(katran_print);
		err = katran_open(katran_obj, &ks, &katran);
		libbpf_set_print(NULL);
		if (err)
			die("KATRAN_BPF_OBJ, Katran's program", err);
		fd = katran_fd(katran);
		slot = S_KATRAN;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &slot, &fd, BPF_ANY))
			die("prog array", -errno);
	}
	/*
	 * One CPU throughout: the references and Katran's program keep a flow
	 * table per CPU, and a move would make their established flows new.
	 * Round -1 pins the established flows in every table; it is not counted.
	 */
	harness_cpu_pin();
	for (round = -1; round < ROUNDS; round++) {
		d = reference_run(skel, ifindex, &frames[G_REF][G_EST], S_EMPTY, 0);
		if (round >= 0)
			harness[round] = d;
		for (c = 0; c < G_COLUMNS; c++)
			for (g = 0; g < G_COUNT; g++) {
				if ((g == G_KPROG && !katran) || !col_on[c])
					continue;
				/* Every new flow pinned, as ringlb's with no rate set. */
				err = g == G_KPROG ? katran_clear_rate(katran) : 0;
				if (err)
					die("Katran's rate of new connections", err);
				/*
				 * The fresh flows of the round before evicted the
				 * pins (every program's table holds 65536): pin
				 * them again, untimed.
				 */
				if (c == G_EST)
					reference_run(skel, ifindex, &frames[g][c], target[g], 0);
				if (g == G_KPROG)
					misses = katran_misses(katran);
				d = reference_run(skel, ifindex, &frames[g][c], target[g],
						  c != G_EST);
				if (round >= 0)
					ns[g][c][round] = d - harness[round];
				/* Its established flows all found in its table: no miss. */
				if (g == G_KPROG && c == G_EST && katran_misses(katran) != misses)
					die("Katran's program missed established flows", -EPROTO);
			}
	}
	harness_cpu_unpin();
	for (round = 0; round < ROUNDS; round++)
		for (g = 0; g < G_COUNT; g++)
			for (c = 0; c < G_COLUMNS; c++) {
				ratio[g][c][round] = ns[g][c][round] / ns[G_KATRAN][c][round];
				floor_ratio[g][c][round] = ns[g][c][round] / ns[G_REF][c][round];
				if (katran)
					prog_ratio[g][c][round] =
						ns[g][c][round] / ns[G_KPROG][c][round];
			}
	qsort(harness, ROUNDS, sizeof(double), cmp_double);
	printf("   harness %.1f ns\n", harness[ROUNDS / 2]);
	printf("   %-22s", "");
	for (c = 0; c < G_COLUMNS; c++)
		printf(" %18s", columns[c]);
	printf("\n   %-22s", "");
	for (c = 0; c < G_COLUMNS; c++)
		printf(" %9s %8s", "net ns", "ratio");
	printf("\n");
	for (g = 0; g < G_COUNT; g++) {
		if (g == G_KPROG && !katran)
			continue;
		printf("   %-22s", names[g]);
		for (c = 0; c < G_COLUMNS; c++) {
			if (!col_on[c]) {
				printf(" %9s %8s", "-", "");
				continue;
			}
			qsort(ns[g][c], ROUNDS, sizeof(double), cmp_double);
			if (g == G_KATRAN) {
				printf(" %9.1f %8s", ns[g][c][ROUNDS / 2], "");
				continue;
			}
			qsort(ratio[g][c], ROUNDS, sizeof(double), cmp_double);
			printf(" %9.1f %8.2f", ns[g][c][ROUNDS / 2], ratio[g][c][ROUNDS / 2]);
		}
		printf("\n");
	}
	ratio_table("ringlb / the floor:", floor_ratio, G_IPIP_100, G_COUNT, names, columns, col_on);
	if (katran) {
		/* Every row but Katran's own. */
		ratio_table("/ Katran's program:", prog_ratio, G_REF, G_KPROG, names, columns, col_on);
		ratio_table(NULL, prog_ratio, G_KPROG + 1, G_COUNT, names, columns, col_on);
	}
	printf("   goal (issue 28): ipip <= 0.90 of Katran's program in every column, l2 <= 0.80.\n"
	       "   Both references parse only IPv4 TCP without options: Katran's reference is\n"
	       "   Katran's per-packet work, not Katran's program%s.\n",
	       katran ? "" : " (KATRAN_BPF_OBJ names an object of\n   Katran's program to run beside them: docs/testing.md)");
	katran_close(katran);
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
	harness_net_leave();
}

/* --- 2. forwarding rate --------------------------------------------------------------- */

/*
 * trafgen stops early now and then ("Flushing TX_RING failed: Resource
 * temporarily unavailable", exit 1), which used to pass unseen as a short
 * run: a run counts only when timeout(1) ended it (exit 124), and one that
 * stopped early is run again, FORWARD_TRIES times at most.
 */
#define FORWARD_TRIES 5
static unsigned int forward_retried;

/* The runs of a round of part 2, in their order (every other round backwards). */
enum forward_run {
	RUN_FLOOR,
	RUN_L2,
	RUN_GUE,
	RUN_FLOOR_FLOOD,
	RUN_FLOOD,
	RUN_STATELESS,
	FORWARD_RUNS
};

/* Each run's row of part 2: its name, its floor's run (its own: a floor) and its goal. */
static const struct {
	const char *name;
	int floor; /* an enum forward_run */
	const char *goal;
} forward_rows[FORWARD_RUNS] = {
	[RUN_FLOOR] = { "floor", RUN_FLOOR, NULL },
	[RUN_L2] = { "ringlb (l2)", RUN_FLOOR, ">= 0.90" },
	[RUN_GUE] = { "gue", RUN_FLOOR, ">= 0.85" },
	[RUN_FLOOR_FLOOD] = { "floor flood", RUN_FLOOR_FLOOD, NULL },
	[RUN_FLOOD] = { "SYN flood", RUN_FLOOR_FLOOD, ">= 0.85" },
	[RUN_STATELESS] = { "stateless flood", RUN_FLOOR_FLOOD, ">= 0.80" },
};

/* The median of @n sorted values: the mean of the middle two for an even @n. */
static double sorted_median(const double *v, int n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One row of part 2: @name's rate against its floor's (@base; medians of the
 * rounds), and the ratio as the median of the rounds' own (each run against
 * its floor in the same round, so that a drift of the machine between rounds
 * cancels), with their range.
 */
static void forward_row(const char *name, const double base[FORWARD_ROUNDS],
			const double rate[FORWARD_ROUNDS], const char *goal)
{
	double f[FORWARD_ROUNDS], p[FORWARD_ROUNDS], ratio[FORWARD_ROUNDS];
	char range[32];
	int i;

	for (i = 0; i < FORWARD_ROUNDS; i++) {
		f[i] = base[i];
		p[i] = rate[i];
		ratio[i] = base[i] > 0 ? rate[i] / base[i] : 0;
	}
	qsort(f, FORWARD_ROUNDS, sizeof(double), cmp_double);
	qsort(p, FORWARD_ROUNDS, sizeof(double), cmp_double);
	qsort(ratio, FORWARD_ROUNDS, sizeof(double), cmp_double);
	snprintf(range, sizeof(range), "%.3f - %.3f", ratio[0], ratio[FORWARD_ROUNDS - 1]);
	printf("   %-15s %12.0f %12.0f %9.3f %15s %8s\n", name, sorted_median(f, FORWARD_ROUNDS),
	       sorted_median(p, FORWARD_ROUNDS), sorted_median(ratio, FORWARD_ROUNDS), range, goal);
}

/*
 * Part 2's scratch directory while its topology is up, and the namespace the
 * bench came from (for forward_teardown(), which must not run inside the
 * namespaces it removes: topology.sh kills what runs there).
 */
static char forward_dir[64];
static int forward_home = -1;

/* Part 2's namespaces and files gone: at its end, and at exit when a run dies. */
static void forward_teardown(void)
{
	char cmd[256];

	if (!forward_dir[0])
		return;
	if (forward_home >= 0 && setns(forward_home, CLONE_NEWNET)) {
		/* topology.sh would kill this process where it stands: leave them. */
		fprintf(stderr, "bench: back to the first namespace: %s; namespaces " FORWARD_PREFIX
			"* and %s left\n", strerror(errno), forward_dir);
		forward_dir[0] = 0;
		return;
	}
	snprintf(cmd, sizeof(cmd), "scripts/topology.sh down " FORWARD_PREFIX " %s; rm -rf %s",
		 forward_dir, forward_dir);
	forward_dir[0] = 0;
	if (system(cmd) != 0)
		fprintf(stderr, "bench: topology teardown failed\n");
}

/* FORWARD_BACKENDS - the backend slots part 2 uses (1 .. 8). */
#define FORWARD_BACKENDS 8

/* Frames each backend slot of part 2 was sent, summed over the CPUs. */
struct backends_sent_at {
	__u64 packets[FORWARD_BACKENDS + 1];
};

static struct backends_sent_at backends_sent(const struct lb_maps *maps)
{
	struct backends_sent_at at = { { 0 } };
	__u32 id;

	for (id = 1; id <= FORWARD_BACKENDS; id++)
		at.packets[id] = harness_percpu_sum(maps->backend_stats, id, 3, 0);
	return at;
}

/*
 * A run of @name went where its VIP sends it: its backends @ids got frames,
 * and at least 99 % of every backend's since @before (the program's counters
 * are its own). Else the bench stops: the row would measure another path.
 */
static void forward_check(const struct lb_maps *maps, struct backends_sent_at before,
			  const char *name, const __u32 ids[2])
{
	struct backends_sent_at after = backends_sent(maps);
	__u64 own = 0, all = 0;
	__u32 id;

	for (id = 1; id <= FORWARD_BACKENDS; id++) {
		__u64 d = after.packets[id] - before.packets[id];

		all += d;
		if (id == ids[0] || id == ids[1])
			own += d;
	}
	if (!all)
		die("a forwarding run that forwarded nothing to any backend", -EPROTO);
	if (!own || own * 100 < all * 99) {
		fprintf(stderr, "bench: part 2's %s sent %llu of %llu frames to its backends %u, %u\n",
			name, (unsigned long long)own, (unsigned long long)all, ids[0], ids[1]);
		die("a forwarding run served by other backends", -EPROTO);
	}
}

/*
 * How a run of part 2 is made: its trafgen config, its program, the counter
 * it is measured by (forward_pps()'s @counter_fd, @key, @words) and, for the
 * shipped program, the two backends its frames must reach (forward_check()).
 */
struct forward_spec {
	const char *conf;
	int prog_fd;
	int counter_fd;
	__u32 key;
	size_t words;
	const __u32 *ids;
};

/* Attach @prog_fd natively, blast for FORWARD_SECONDS, return frames sent per second. */
static double forward_pps(int ifindex, int prog_fd, int counter_fd, __u32 key, size_t words,
			  size_t word, const char *trafgen_conf)
{
	char cmd[512];
	double t0, t1;
	__u64 before, after;
	int n, rc, tries;

	if (bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, NULL))
		die("attach for the forwarding test", -errno);
	/* trafgen makes its scratch file in its working directory: the config's, not the tree. */
	n = snprintf(cmd, sizeof(cmd), "ip netns exec " FORWARD_PREFIX "c1 timeout -s INT %d "
		     "env -C \"$(dirname %s)\" trafgen -o eth0 -c %s --cpus 1 -q >/dev/null 2>&1",
		     FORWARD_SECONDS, trafgen_conf, trafgen_conf);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		die("the trafgen command", -ENAMETOOLONG);
	for (tries = 1;; tries++) {
		before = harness_percpu_sum(counter_fd, key, words, word);
		t0 = now_ms();
		rc = system(cmd);
		t1 = now_ms();
		if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 124)
			break;
		if (rc == -1)
			die("running trafgen", -errno);
		/* Interrupted (^C): stop, do not try again. */
		if (tries == FORWARD_TRIES || (WIFSIGNALED(rc) && WTERMSIG(rc) == SIGINT)) {
			fprintf(stderr, "bench: trafgen stopped before its %d s, %d times (last: %s %d)\n",
				FORWARD_SECONDS, tries, WIFEXITED(rc) ? "exit" : "signal",
				WIFEXITED(rc) ? WEXITSTATUS(rc) : WTERMSIG(rc));
			die("trafgen", -EIO);
		}
		forward_retried++;
	}
	usleep(200000); /* let the queues drain into the counters */
	after = harness_percpu_sum(counter_fd, key, words, word);
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	return (double)(after - before) / ((t1 - t0) / 1e3);
}

static void forwarding(void)
{
	static const char conf_text[] =
		"{ eth(da=02:00:00:00:00:02, sa=02:00:00:00:00:21, type=0x0800),\n"
		"  ipv4(sa=198.18.0.21, da=198.18.0.100, ttl=64),\n"
		"  udp(sp=dinc(1024, 5119), dp=53), fill(0x61, 18) }\n";
	/* The same flows to the gue VIP, 198.18.0.102 (its own VIP: its own pins and ring). */
	static const char conf_gue_text[] =
		"{ eth(da=02:00:00:00:00:02, sa=02:00:00:00:00:21, type=0x0800),\n"
		"  ipv4(sa=198.18.0.21, da=198.18.0.102, ttl=64),\n"
		"  udp(sp=dinc(1024, 5119), dp=53), fill(0x61, 18) }\n";
	/* A flood of new flows: SYNs from random sources and ports, each a flow never seen. */
	static const char flood_text[] =
		"{ eth(da=02:00:00:00:00:02, sa=02:00:00:00:00:21, type=0x0800),\n"
		"  ipv4(sa=drnd(), da=198.18.0.100, ttl=64),\n"
		"  tcp(sp=drnd(), dp=80, syn), fill(0x61, 6) }\n";
	/* The same to a stateless gue VIP, its ACKs (not SYNs): every one gets its hops worked out. */
	static const char flood_gue_text[] =
		"{ eth(da=02:00:00:00:00:02, sa=02:00:00:00:00:21, type=0x0800),\n"
		"  ipv4(sa=drnd(), da=198.18.0.101, ttl=64),\n"
		"  tcp(sp=drnd(), dp=80, ack), fill(0x61, 6) }\n";
	char dir[] = "/tmp/ringlb-bench-XXXXXX", conf[256], conf_gue[256], flood[256], flood_gue[256];
	char cmd[512];
	double pps[FORWARD_RUNS][FORWARD_ROUNDS] = { { 0 } };
	struct lb_vip_key stateless_key = bench_vip_key(IPPROTO_TCP, 80);
	struct lb_vip_key tcp_key = bench_vip_key(IPPROTO_TCP, 80);
	__u64 refused;
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] },
				     .iface_mac = { 2, 0, 0, 0, 0, 2 } };
	struct lb_vip_key key = bench_vip_key(IPPROTO_UDP, 53);
	struct lb_vip_key gue_key = bench_vip_key(IPPROTO_UDP, 53);
	struct lb_maps bench_maps;
	__u32 gue_ids[2] = { 3, 4 }, stateless_ids[2] = { 5, 6 };
	struct bench_xdp_bpf *skel;
	struct lb_prog *shipped;
	struct ring *r;
	__u32 ids[2] = { 1, 2 }, flood_ids[2] = { 7, 8 }, id;
	const char *only = getenv("BENCH_2_ONLY");
	struct forward_spec spec[FORWARD_RUNS];
	struct backends_sent_at sent = { { 0 } };
	int netns, ifindex, round, step, row, self, run_on[FORWARD_RUNS];
	FILE *f;

	printf("\n2. Forwarding rate, veth topology: trafgen UDP over 4,096 flows (source ports\n"
	       "   1024-5119 in turn) from a client namespace, one CPU, %d s per run, %d rounds\n"
	       "   of every run, every other round backwards; frames forwarded with native\n"
	       "   XDP_TX per second, medians; ratio: the median of the rounds' own ratios.\n"
	       "   floor: parse+hash, no choice; ringlb (l2): the shipped program, the VIP l2;\n"
	       "   gue: the same flows to another VIP (198.18.0.102) whose backends are reached\n"
	       "   by GUE (FIB lookup, 36 more bytes per frame). SYN flood: TCP SYNs from random\n"
	       "   sources and ports, every frame a new flow, to an l2 VIP with a flow table (new\n"
	       "   flows pinned up to the rate); stateless flood: TCP ACKs from random sources to\n"
	       "   a stateless gue VIP with one previous ring (of other points: a hop list for\n"
	       "   each flow whose owner it changed). Every row's VIP has backends of its own; a\n"
	       "   run whose frames went to others stops the bench.\n",
	       FORWARD_SECONDS, FORWARD_ROUNDS);
	/* For a developer's diagnosis (a profile of one run): one row alone, and its floor. */
	for (row = 0; row < FORWARD_RUNS; row++)
		run_on[row] = !only || !*only;
	for (row = 0; row < FORWARD_RUNS; row++)
		if (only && forward_rows[row].floor != row && strcmp(only, forward_rows[row].name) == 0)
			run_on[row] = run_on[forward_rows[row].floor] = 1;
	if (!run_on[RUN_FLOOR] && !run_on[RUN_FLOOR_FLOOD])
		die("BENCH_2_ONLY: none of 'ringlb (l2)', 'gue', 'SYN flood', 'stateless flood'",
		    -EINVAL);
	if (only && *only)
		printf("   BENCH_2_ONLY: the row '%s' and its floor alone.\n", only);
	if (!mkdtemp(dir))
		die("mkdtemp", -errno);
	snprintf(forward_dir, sizeof(forward_dir), "%s", dir);
	atexit(forward_teardown);
	snprintf(conf, sizeof(conf), "%s/udp.trafgen", dir);
	f = fopen(conf, "w");
	fputs(conf_text, f);
	fclose(f);
	snprintf(flood, sizeof(flood), "%s/flood.trafgen", dir);
	f = fopen(flood, "w");
	fputs(flood_text, f);
	fclose(f);
	snprintf(flood_gue, sizeof(flood_gue), "%s/flood-gue.trafgen", dir);
	f = fopen(flood_gue, "w");
	fputs(flood_gue_text, f);
	fclose(f);
	stateless_key.addr[3] = 101;
	gue_key.addr[3] = 102;
	snprintf(conf_gue, sizeof(conf_gue), "%s/udp-gue.trafgen", dir);
	f = fopen(conf_gue, "w");
	fputs(conf_gue_text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "scripts/topology.sh down " FORWARD_PREFIX " %s; "
		 "scripts/topology.sh up " FORWARD_PREFIX " %s 2 && "
		 "for b in 1 2; do ip -n " FORWARD_PREFIX "b$b link set dev eth0 xdp obj "
		 "build/xdp_pass.bpf.o sec xdp program xdp_drop; done", dir, dir);
	if (system(cmd) != 0)
		die("topology", -EIO);
	self = open("/proc/self/ns/net", O_RDONLY);
	forward_home = self;
	netns = open("/run/netns/" FORWARD_PREFIX "lb", O_RDONLY);
	if (self < 0 || netns < 0 || setns(netns, CLONE_NEWNET))
		die("entering the balancer's namespace", -errno);
	ifindex = (int)if_nametoindex("eth0");

	skel = bench_xdp_bpf__open();
	skel->rodata->flow_secret[0] = secret[0];
	skel->rodata->flow_secret[1] = secret[1];
	memcpy((void *)skel->rodata->iface_mac, opts.iface_mac, 6);
	if (bench_xdp_bpf__load(skel) || lb_prog_load(&shipped, &opts))
		die("load", -errno);
	for (id = 1; id <= 2; id++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.cookie = id, .mac = { 2, 0, 0, 0, 0, (__u8)(0x10 + id) } };

		bpf_map_update_elem(bpf_map__fd(skel->maps.backends), &id, &b, BPF_ANY);
		bpf_map_update_elem(lb_prog_maps(shipped)->backends, &id, &b, BPF_ANY);
	}
	/*
	 * Each row's VIP has its own id and backends, checked after each run
	 * (forward_check()): the SYN flood's (2), l2 in slots 7 and 8 (the same
	 * MACs), once shared VIP 0's ring slots and was served by the GUE ring
	 * the gue run had installed there; the gue run, on VIP 0's flows, was
	 * served by their l2 pins.
	 */
	for (id = 7; id <= 8; id++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.cookie = id, .vip_id = 2,
					.mac = { 2, 0, 0, 0, 0, (__u8)(0x10 + id - 6) } };

		bpf_map_update_elem(lb_prog_maps(shipped)->backends, &id, &b, BPF_ANY);
	}
	r = ring_sized(2, RING_VNODES_DEFAULT);
	bench_maps_of(skel, &bench_maps);
	if (lb_vip_install(lb_prog_maps(shipped), &key, 0, r, ids) ||
	    lb_vip_install(&bench_maps, &key, 0, r, ids) ||
	    lb_vip_install(lb_prog_maps(shipped), &tcp_key, 2, r, flood_ids) ||
	    lb_vip_install(&bench_maps, &tcp_key, 2, r, ids))
		die("swap", -errno);
	/* VIP 3: 198.18.0.102:53, the same backends reached by GUE: slots 3 and 4, the FIB. */
	{
		struct lb_config c = { .source4 = { 198, 18, 0, 2 },
				       .gue_port = htons(LB_GUE_PORT_DEFAULT),
				       .new_flows_max = LB_NEW_FLOWS_MAX_DEFAULT };

		for (id = 3; id <= 4; id++) {
			struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
						.cookie = id, .forward = LB_FORWARD_GUE, .vip_id = 3,
						.addr = { 198, 18, 0, (__u8)(10 + id - 2) } };

			bpf_map_update_elem(lb_prog_maps(shipped)->backends, &id, &b, BPF_ANY);
		}
		if (lb_vip_install(lb_prog_maps(shipped), &gue_key, 3, r, gue_ids))
			die("the gue VIP", -errno);
		/* VIP 1: 198.18.0.101:80, stateless, served by them, one previous ring. */
		for (id = 5; id <= 6; id++) {
			struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
						.cookie = id, .forward = LB_FORWARD_GUE, .vip_id = 1,
						.addr = { 198, 18, 0, (__u8)(10 + id - 4) } };

			bpf_map_update_elem(lb_prog_maps(shipped)->backends, &id, &b, BPF_ANY);
		}
		{
			__u32 *past_ids[1] = { stateless_ids };
			struct ring *past[1] = { ring_sized(2, RING_VNODES_DEFAULT / 2) };

			if (lb_vip_install_as(lb_prog_maps(shipped), &stateless_key, 1, r,
					      stateless_ids, LB_VIP_STATELESS) ||
			    lb_vip_install(&bench_maps, &stateless_key, 1, r, ids) ||
			    lb_vip_history_sync(lb_prog_maps(shipped), 1, past, past_ids, 1))
				die("the stateless VIP", -errno);
			ring_free(past[0]);
		}
		if (lb_config_write(lb_prog_maps(shipped), &c) ||
		    system("sysctl -qw net.ipv4.conf.eth0.forwarding=1 && "
			   "ip neigh replace 198.18.0.11 lladdr 02:00:00:00:00:11 dev eth0 nud permanent && "
			   "ip neigh replace 198.18.0.12 lladdr 02:00:00:00:00:12 dev eth0 nud permanent"))
			die("GUE set-up", -EIO);
	}
	/* Settled as a controller leaves them: a flood run first (BENCH_2_ONLY) too. */
	vips_settled(lb_prog_maps(shipped));
	{
		int floor_fd = bpf_program__fd(skel->progs.bench_floor);
		int sent_fd = bpf_map__fd(skel->maps.sent);
		int reasons_fd = lb_prog_maps(shipped)->reason_stats;

		spec[RUN_FLOOR] = (struct forward_spec){ conf, floor_fd, sent_fd, 0, 1, NULL };
		spec[RUN_L2] = (struct forward_spec){ conf, lb_prog_fd(shipped), reasons_fd,
						      LB_REASON_FORWARDED, 2, ids };
		spec[RUN_GUE] = (struct forward_spec){ conf_gue, lb_prog_fd(shipped), reasons_fd,
						       LB_REASON_FORWARDED, 2, gue_ids };
		spec[RUN_FLOOR_FLOOD] = (struct forward_spec){ flood, floor_fd, sent_fd, 0, 1, NULL };
		spec[RUN_FLOOD] = (struct forward_spec){ flood, lb_prog_fd(shipped), reasons_fd,
							 LB_REASON_FORWARDED, 2, flood_ids };
		/* Counted by the ring's verdict: forwarded, with or without a hop list. */
		spec[RUN_STATELESS] = (struct forward_spec){ flood_gue, lb_prog_fd(shipped),
							     lb_prog_maps(shipped)->vip_stats, 1, 2,
							     stateless_ids };
	}
	for (round = 0; round < FORWARD_ROUNDS; round++) {
		/* Every other round backwards, as many each way: the order's effect cancels. */
		for (step = 0; step < FORWARD_RUNS; step++) {
			int run = round % 2 ? FORWARD_RUNS - 1 - step : step;
			const struct forward_spec *w = &spec[run];

			if (!run_on[run])
				continue;
			if (w->ids)
				sent = backends_sent(lb_prog_maps(shipped));
			pps[run][round] = forward_pps(ifindex, w->prog_fd, w->counter_fd, w->key,
						      w->words, 0, w->conf);
			if (w->ids)
				forward_check(lb_prog_maps(shipped), sent, forward_rows[run].name,
					      w->ids);
		}
	}
	/* The maps are new: every refusal they counted is the floods'. */
	refused = harness_percpu_sum(lb_prog_maps(shipped)->flow_rate, 0, 3, 2);
	printf("   %-15s %12s %12s %9s %15s %8s\n", "", "floor pps", "pps", "ratio", "rounds' range",
	       "goal");
	for (row = RUN_L2; row < FORWARD_RUNS; row++) {
		if (forward_rows[row].floor == row)
			continue;
		if (!run_on[row])
			continue;
		forward_row(forward_rows[row].name, pps[forward_rows[row].floor], pps[row],
			    forward_rows[row].goal);
		if (row == RUN_FLOOD)
			printf("   (SYN flood: %llu new flows not pinned over its %d runs, past %u per "
			       "CPU per second)\n",
			       (unsigned long long)refused, FORWARD_ROUNDS, LB_NEW_FLOWS_MAX_DEFAULT);
	}
	printf("   (trafgen runs that stopped early and were run again: %u)\n", forward_retried);
	ring_free(r);
	lb_prog_close(shipped);
	bench_xdp_bpf__destroy(skel);
	forward_teardown();
	forward_home = -1;
	close(self);
	close(netns);
}

/* --- 3. control plane --------------------------------------------------------------- */

/* The ring's members as ringmap_edits() takes them: member m is backend ids[m]. */
static struct ringmap_member *members_of(const struct ring *r, const __u32 *ids, size_t extra)
{
	size_t n = ring_member_count(r), m;
	struct ringmap_member *members = calloc(n + extra, sizeof(*members));

	for (m = 0; m < n; m++)
		members[m] = (struct ringmap_member){ ring_member_name(r, (__u32)m),
						      ring_member_weight(r, (__u32)m), ids[m] };
	return members;
}

/*
 * How many changes an image of @r takes in place before its run area is
 * full and a change must be built whole: cycles of adding and removing a
 * backend of @vnodes points, in memory (the same code as the kernel's maps).
 */
static unsigned int changes_until_full(const struct ring *r, const __u32 *ids, uint32_t vnodes)
{
	struct ringmap_member member = { "cycle", 1, 0xfff };
	struct ringmap_edit *edits;
	struct ringmap image;
	unsigned int cycles = 0;
	size_t points, count, i;
	int err = 0;

	ring_points(r, &points);
	image.bits = ringmap_bits(points);
	image.slot_count = ringmap_class_slots(ringmap_class(points, image.bits));
	image.slots = calloc(image.slot_count, sizeof(*image.slots));
	if (!image.slots || ringmap_render(&image, r, ids, 1) ||
	    ringmap_edits(vnodes, NULL, 0, &member, 1, vnodes, &edits, &count))
		die("changes until the run area is full", -ENOMEM);
	while (!err) {
		for (i = 0; i < count; i++)
			edits[i].add = 1;
		err = ringmap_apply(&image, edits, count, 1);
		for (i = 0; i < count && !err; i++)
			edits[i].add = 0;
		if (!err)
			err = ringmap_apply(&image, edits, count, 1);
		cycles += !err;
	}
	if (err != -ENOSPC)
		die("a change in place", err);
	free(edits);
	free(image.slots);
	return cycles;
}

static void control_plane(void)
{
	struct lb_vip_key key = bench_vip_key(IPPROTO_TCP, 80);
	struct bench_xdp_bpf *skel = bench_xdp_bpf__open_and_load();
	struct ringmap_member *before, *after;
	struct ring_member *summary;
	struct lb_ring_change change;
	struct ringmap_edit *edits;
	struct lb_maps maps;
	struct ring *r;
	__u32 *ids;
	double t0, build, swap, spare, patch, settle, add, lookup, batch, create;
	unsigned int cycles;
	struct ring_lookup_result res;
	struct test_rng rng = { SEED };
	uint64_t *keys, fingerprint;
	uint32_t *members, i, n = 1000;
	volatile uint32_t sink = 0;
	size_t points;
	char why[128];
	int err;

	if (!skel)
		die("load bench programs", -errno);
	bench_maps_of(skel, &maps);
	ids = calloc(n + 1, sizeof(*ids));
	for (i = 0; i <= n; i++)
		ids[i] = i + 1;
	t0 = now_ms();
	r = ring_sized(n, 1000);
	build = now_ms() - t0;
	t0 = now_ms();
	if (lb_vip_install(&maps, &key, 0, r, ids))
		die("swap", -errno);
	swap = now_ms() - t0;
	t0 = now_ms();
	err = lb_vip_settle(&maps, &key, 0, NULL);
	if (err)
		die("spare", err);
	spare = now_ms() - t0;

	/*
	 * One backend added, as the controller does it from its state: the new
	 * ring's size and fingerprint, the new backend's 1,000 points, written
	 * into the spare map and swapped in; no ring is built.
	 */
	before = members_of(r, ids, 0);
	after = members_of(r, ids, 1);
	after[n] = (struct ringmap_member){ "backend-new", 1, n + 1 };
	summary = calloc(n + 1, sizeof(*summary));
	for (i = 0; i <= n; i++)
		summary[i] = (struct ring_member){ after[i].name, after[i].weight };
	change = (struct lb_ring_change){ .from_fingerprint = ring_fingerprint(r) };
	t0 = now_ms();
	err = ring_summary(1000, summary, n + 1, &points, &fingerprint) ?:
	      ringmap_edits(1000, before, n, after, n + 1, points, &edits, &change.count);
	if (err)
		die("the added backend's points", err);
	change.edits = edits;
	change.to_fingerprint = fingerprint;
	change.to_points = points;
	err = lb_vip_patch(&maps, &key, 0, &change);
	if (err)
		die("patch", err);
	patch = now_ms() - t0;
	t0 = now_ms();
	err = lb_vip_settle(&maps, &key, 0, &change);
	if (err)
		die("settle", err);
	settle = now_ms() - t0;
	/* The controller's own copy of the ring, for lookups and plans. */
	t0 = now_ms();
	if (ring_add(r, "backend-new", 1))
		die("ring_add", -E2BIG);
	add = now_ms() - t0;
	if (lb_vip_compare(&maps, &key, 0, r, ids, why, sizeof(why)))
		die(why, -EBADMSG);
	cycles = changes_until_full(r, ids, 1000);
	free(before);
	free(after);
	free(summary);
	free(edits);

	/* What a whole swap pays before it writes a byte: a zeroed map of the largest class. */
	{
		LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
		int fd;

		t0 = now_ms();
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "bench_empty", sizeof(__u32),
				    sizeof(union lb_ring_slot), LB_RING_CLASS3_SLOTS, &opts);
		if (fd < 0)
			die("map create", -errno);
		close(fd);
		create = now_ms() - t0;
	}

	keys = malloc(KEYS * sizeof(*keys));
	members = malloc(KEYS * sizeof(*members));
	for (i = 0; i < KEYS; i++)
		keys[i] = test_rng_next(&rng);
	t0 = now_ms();
	for (i = 0; i < KEYS; i++) {
		ring_lookup(r, keys[i], &res);
		sink += res.member;
	}
	lookup = (now_ms() - t0) * 1e6 / KEYS;
	t0 = now_ms();
	ring_lookup_many(r, keys, KEYS, members);
	batch = (now_ms() - t0) * 1e6 / KEYS;
	(void)sink;

	printf("\n3. Control plane: 1,000 backends x 1,000 points (1,000,000 points)\n");
	printf("   %-46s %9s %10s\n", "", "measured", "goal");
	printf("   %-46s %6.1f ms\n", "build the ring", build);
	printf("   %-46s %6.1f ms\n", "fill a new ring map and swap it", swap);
	printf("   %-46s %6.1f ms %10s\n", "build + swap", build + swap, "<= 200 ms");
	printf("   %-46s %6.1f ms\n", "then copy it into the spare map", spare);
	printf("   %-46s %6.1f ms %10s\n", "add one backend: write its points into the",
	       patch, "<= 20 ms");
	printf("   %-46s\n", "  spare map and swap it (end to end)");
	printf("   %-46s %6.1f ms\n", "then the same into the old map", settle);
	printf("   %-46s %6.1f ms\n", "the controller's own copy: ring_add()", add);
	printf("   %-46s %6u\n", "changes in place until the run area is full", cycles);
	printf("   %-46s\n", "  (add and remove of a 1,000-point backend)");
	printf("   %-46s %6.1f ms\n", "create an empty map of that size", create);
	printf("   %-46s %6.1f ns  (batched: %.1f ns)\n", "userspace lookup, random keys", lookup,
	       batch);
	free(keys);
	free(members);
	free(ids);
	ring_free(r);
	bench_xdp_bpf__destroy(skel);
}

/* --- 4. balance and disruption: ringlb against Maglev ---------------------------------- */

/* Maglev's table population (Eisenbud et al., NSDI 2016), for equal weights. */
static uint32_t *maglev_build(char (*names)[24], uint32_t n, uint32_t m)
{
	uint32_t *table = malloc((size_t)m * sizeof(*table));
	uint64_t *offset = malloc(n * sizeof(*offset)), *skip = malloc(n * sizeof(*skip));
	uint64_t *next = calloc(n, sizeof(*next));
	uint64_t filled = 0, j;
	uint32_t i;

	for (j = 0; j < m; j++)
		table[j] = UINT32_MAX;
	for (i = 0; i < n; i++) {
		offset[i] = ring_point_position(names[i], 0xfffffffeu) % m;
		skip[i] = ring_point_position(names[i], 0xffffffffu) % (m - 1) + 1;
	}
	while (filled < m) {
		for (i = 0; i < n && filled < m; i++) {
			uint64_t c = (offset[i] + next[i] * skip[i]) % m;

			while (table[c] != UINT32_MAX) {
				next[i]++;
				c = (offset[i] + next[i] * skip[i]) % m;
			}
			table[c] = i;
			next[i]++;
			filled++;
		}
	}
	free(offset);
	free(skip);
	free(next);
	return table;
}

struct balance {
	double peak_mean, add_moved, rm_moved;
};

/* Peak/mean over the table, and moved/ideal for one add and one remove. */
static void maglev_measure(uint32_t n, uint32_t m, const uint64_t *keys, struct balance *out)
{
	char (*names)[24] = calloc(n + 1, sizeof(*names));
	uint32_t *t, *t_add, *t_rm, *count, i, peak = 0;
	size_t moved_add = 0, moved_rm = 0, k;

	for (i = 0; i <= n; i++)
		snprintf(names[i], sizeof(names[i]), "backend-%u", i);
	t = maglev_build(names, n, m);
	t_add = maglev_build(names, n + 1, m);
	/* Remove backend 0: the same names, shifted. */
	t_rm = maglev_build(names + 1, n - 1, m);
	count = calloc(n, sizeof(*count));
	for (k = 0; k < m; k++)
		count[t[k]]++;
	for (i = 0; i < n; i++)
		peak = count[i] > peak ? count[i] : peak;
	for (k = 0; k < KEYS; k++) {
		uint32_t before = t[keys[k] % m];

		moved_add += before != t_add[keys[k] % m];
		moved_rm += before != t_rm[keys[k] % m] + 1;
	}
	out->peak_mean = (double)peak * n / m;
	out->add_moved = (double)moved_add / KEYS * (n + 1);
	out->rm_moved = (double)moved_rm / KEYS * n;
	free(names);
	free(t);
	free(t_add);
	free(t_rm);
	free(count);
}

static void ring_measure(uint32_t n, uint32_t vnodes, const uint64_t *keys, struct balance *out,
			 size_t *bytes)
{
	struct ring *r = ring_sized(n, vnodes), *added, *removed;
	double *shares = calloc(n, sizeof(*shares)), peak = 0;
	size_t moved_add = 0, moved_rm = 0, k, points;
	unsigned int bits;
	uint32_t i;

	ring_shares(r, shares);
	for (i = 0; i < n; i++)
		peak = shares[i] > peak ? shares[i] : peak;
	ring_points(r, &points);
	bits = ringmap_bits(points);
	/* The slots its ring map must have; the map may be of a larger class. */
	*bytes = (size_t)LB_RING_SLOTS(points, bits) * sizeof(union lb_ring_slot);
	ring_clone(&added, r);
	ring_add(added, "backend-new", 1);
	ring_clone(&removed, r);
	ring_remove(removed, "backend-0");
	for (k = 0; k < KEYS; k++) {
		struct ring_lookup_result a, b, c;
		const char *was;

		ring_lookup(r, keys[k], &a);
		ring_lookup(added, keys[k], &b);
		ring_lookup(removed, keys[k], &c);
		was = ring_member_name(r, a.member);
		moved_add += strcmp(was, ring_member_name(added, b.member)) != 0;
		moved_rm += strcmp(was, ring_member_name(removed, c.member)) != 0;
	}
	out->peak_mean = peak * n;
	out->add_moved = (double)moved_add / KEYS * (n + 1);
	out->rm_moved = (double)moved_rm / KEYS * n;
	free(shares);
	ring_free(r);
	ring_free(added);
	ring_free(removed);
}

static void balance(void)
{
	static const uint32_t ns[] = { 100, 1000 };
	struct test_rng rng = { SEED + 1 };
	uint64_t *keys = malloc(KEYS * sizeof(*keys));
	size_t i;

	for (i = 0; i < KEYS; i++)
		keys[i] = test_rng_next(&rng);
	printf("\n4. Balance and disruption, %d random keys. ringlb: K = %u points per weight by\n"
	       "   default, or the 2^20-point budget / N when that is smaller; Maglev: a table of\n"
	       "   the same memory as ringlb's ring map (4-byte entries, prime size M).\n",
	       KEYS, RING_VNODES_DEFAULT);
	printf("   %5s %6s %9s %9s %9s | %10s %9s %9s %9s\n", "N", "K", "peak/mean", "add mv/id",
	       "rm mv/id", "Maglev M", "peak/mean", "add mv/id", "rm mv/id");
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		uint32_t n = ns[i], k = RING_VNODES_DEFAULT, m;
		struct balance rb, mb;
		size_t bytes;

		while ((uint64_t)k * (n + 1) > RING_POINTS_MAX)
			k /= 2;
		ring_measure(n, k, keys, &rb, &bytes);
		for (m = (uint32_t)(bytes / 4); !is_prime(m); m++)
			;
		maglev_measure(n, m, keys, &mb);
		printf("   %5u %6u %9.3f %9.3f %9.3f | %10u %9.3f %9.3f %9.3f\n", n, k, rb.peak_mean,
		       rb.add_moved, rb.rm_moved, m, mb.peak_mean, mb.add_moved, mb.rm_moved);
	}
	printf("   goals at N = 100: peak/mean <= 1.05, moved <= 1.05 x ideal\n");
	free(keys);
}

/* QUIC datagrams of 1g: what each row sends, to which VIP. */
enum { Q_UDP, Q_PLAIN, Q_SINGLE, Q_FOUR, Q_INITIAL, Q_COUNT };
#define QUIC_RUN_PACKETS 20000
#define QUIC_ROUNDS 15

/*
 * 1h. QUIC-LB per packet: the shipped program, one datagram repeated
 * (BPF_PROG_TEST_RUN; an l2 VIP, whose MAC rewrite leaves the frame as it
 * was), rounds interleaved across rows: a plain UDP flow to a ring VIP
 * (established: its pin read), and QUIC short headers whose connection IDs
 * name a backend in plaintext, in one AES block, and in the four-pass
 * network (3 blocks), and a client's Initial placed by the ring over its
 * connection ID. Each row's median against the UDP row's, in the same run.
 */
static void quic_per_packet(void)
{
	static const char *const names[Q_COUNT] = {
		"UDP, pinned flow", "QUIC plaintext", "QUIC AES, single pass",
		"QUIC AES, four-pass (3 blocks)", "QUIC Initial (ring over DCID)",
	};
	static const struct lb_quic_lb cfgs[Q_COUNT] = {
		[Q_PLAIN] = { .rotation = 0, .sid_len = 1, .nonce_len = 8 },
		[Q_SINGLE] = { .rotation = 1, .sid_len = 4, .nonce_len = 12,
			       .flags = LB_QUIC_LB_ENCRYPTED },
		[Q_FOUR] = { .rotation = 2, .sid_len = 3, .nonce_len = 9,
			     .flags = LB_QUIC_LB_ENCRYPTED },
		[Q_INITIAL] = { .rotation = 3, .sid_len = 1, .nonce_len = 8 },
	};
	static const __u8 key[LB_QUIC_LB_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
						      15, 16 };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] },
				     .iface_mac = { 2, 0, 0, 0, 0x11, 2 } };
	double ns[Q_COUNT][QUIC_ROUNDS], med[Q_COUNT];
	struct pkt frames[Q_COUNT];
	struct quic_lb_cipher cipher;
	struct lb_prog *shipped;
	struct fault f = { 0 };
	__u32 verdict, duration;
	int q, round, i;

	printf("\n1h. QUIC-LB per packet: BPF_PROG_TEST_RUN of the shipped program, one datagram\n"
	       "   repeated %d times a run, %d rounds interleaved, median ns per packet (the\n"
	       "   harness included) and its ratio to a plain UDP packet of a pinned flow to a\n"
	       "   ring VIP, in the same run. l2 VIPs of 8 backends; AES through the kernel's\n"
	       "   crypto kfuncs.\n", QUIC_RUN_PACKETS, QUIC_ROUNDS);
	if (lb_prog_load(&shipped, &opts))
		die("load the shipped program", -errno);
	if (quic_lb_cipher_init(&cipher, key, &f))
		die("AES", -ENOMEM);
	for (i = 0; i < 8; i++) {
		struct lb_backend b = { .state = LB_BACKEND_ACTIVE, .family = LB_FAMILY_IPV4,
					.cookie = (__u64)i + 1, .mac = { 2, 0, 0, 0, 1, (__u8)i } };

		pkt_addr(LB_FAMILY_IPV4, "198.18.13.11", b.addr);
		for (q = 0; q < Q_COUNT; q++) {
			/* Backends 8 q + 1 .. 8 q + 8 of VIP q: a slot serves one VIP. */
			b.vip_id = (__u32)q;
			b.cookie = (__u64)(8 * q + i + 1);
			if (lb_backend_install(lb_prog_maps(shipped), (__u32)(8 * q + i + 1), &b))
				die("backend", -errno);
		}
	}
	for (q = 0; q < Q_COUNT; q++) {
		struct lb_vip_key key4 = bench_vip_key(IPPROTO_UDP, (__u16)(4430 + q));
		struct lb_vip as = { .flags = q == Q_UDP ? 0 : LB_VIP_QUIC_LB, .quic = cfgs[q] };
		struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP,
					 .src = "198.18.1.1", .dst = "198.18.0.100", .sport = 40000,
					 .dport = (__u16)(4430 + q) };
		__u8 payload[1300], cid[LB_QUIC_CID_MAX], nonce[16] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
		__u32 vids[8];
		struct ring *r = ring_sized(8, 1024);
		size_t len = 0;

		for (i = 0; i < 8; i++)
			vids[i] = (__u32)(8 * q + i + 1);
		if (lb_vip_install_with(lb_prog_maps(shipped), &key4, (__u32)q, r, vids, &as))
			die("VIP", -errno);
		vips_settled(lb_prog_maps(shipped));
		ring_free(r);
		if (q != Q_UDP) {
			__u8 sid[LB_QUIC_LB_SID_MAX] = { 0 };

			for (i = 0; i < 8; i++) {
				sid[cfgs[q].sid_len - 1] = (__u8)(i + 1);
				if (lb_quic_server_put(lb_prog_maps(shipped), (__u32)q, 0, sid,
						       cfgs[q].sid_len, vids[i], (__u64)vids[i]))
					die("server id", -errno);
			}
			if ((cfgs[q].flags & LB_QUIC_LB_ENCRYPTED) &&
			    lb_quic_cipher_place(lb_prog_maps(shipped), LB_QUIC_CIPHER_SLOT(q, 0), key,
						 quic_lb_key_digest(key)))
				die("the kernel's AES context", -EIO);
			if (quic_lb_cid_make(&cfgs[q], &cipher, sid, nonce, cid))
				die("a connection ID", -EINVAL);
		}
		if (q == Q_INITIAL) {
			payload[len++] = 0xc3;
			memcpy(payload + len, (const __u8[]){ 0, 0, 0, 1, 18 }, 5);
			len += 5;
			for (i = 0; i < 18; i++)
				payload[len++] = (__u8)(0xe0 | i); /* rotation 7: a client's */
			payload[len++] = 0;
		} else if (q != Q_UDP) {
			payload[len++] = 0x41;
			memcpy(payload + len, cid, 1u + cfgs[q].sid_len + cfgs[q].nonce_len);
			len += 1u + cfgs[q].sid_len + cfgs[q].nonce_len;
		}
		memset(payload + len, 0x5a, 1200 - len);
		spec.payload = payload;
		spec.payload_len = 1200;
		pkt_build(&frames[q], &spec);
	}
	quic_lb_cipher_free(&cipher);
	for (round = 0; round < QUIC_ROUNDS; round++)
		for (q = 0; q < Q_COUNT; q++) {
			int k = (round & 1) ? Q_COUNT - 1 - q : q;

			verdict = harness_run(lb_prog_fd(shipped), frames[k].data, frames[k].len, NULL,
					      NULL, QUIC_RUN_PACKETS, &duration);
			if (verdict != XDP_TX)
				die("a QUIC benchmark packet was not forwarded", -EPROTO);
			ns[k][round] = duration;
		}
	for (q = 0; q < Q_COUNT; q++) {
		qsort(ns[q], QUIC_ROUNDS, sizeof(double), cmp_double);
		med[q] = ns[q][QUIC_ROUNDS / 2];
	}
	printf("   %-32s %8s %9s\n", "", "ns", "x UDP");
	for (q = 0; q < Q_COUNT; q++)
		printf("   %-32s %8.0f %9.2f\n", names[q], med[q], med[q] / med[Q_UDP]);
	lb_prog_close(shipped);
}

/* The table's parts, in order; "bench_xdp PART..." runs only those. */
static const struct {
	const char *name;
	void (*run)(void);
	int needs_root;
} parts[] = {
	{ "per-packet", per_packet, 1 },
	{ "memory", memory_reach, 1 },
	{ "encap", encap_per_packet, 1 },
	{ "second-chance", second_chance_per_packet, 1 },
	{ "decap-doors", decap_doors_per_packet, 1 },
	{ "sources", sources_per_packet, 1 },
	{ "reference", reference_per_packet, 1 },
	{ "quic", quic_per_packet, 1 },
	{ "forwarding", forwarding, 1 },
	{ "control-plane", control_plane, 1 },
	{ "balance", balance, 0 },
};

static int part_wanted(const char *name, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return argc == 1;
}

int main(int argc, char **argv)
{
	struct utsname u;
	size_t p;
	int i;

	for (i = 1; i < argc; i++) {
		for (p = 0; p < sizeof(parts) / sizeof(parts[0]); p++)
			if (strcmp(argv[i], parts[p].name) == 0)
				break;
		if (p == sizeof(parts) / sizeof(parts[0])) {
			fprintf(stderr, "bench_xdp: no part '%s' (per-packet, memory, encap, second-chance, "
				"decap-doors, sources, reference, quic, forwarding, control-plane, balance)\n", argv[i]);
			return 2;
		}
	}
	libbpf_set_print(NULL);
	uname(&u);
	printf("ringlb benchmark: kernel %s, %ld CPUs; command: make bench\n\n", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN));
	for (p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
		if (!part_wanted(parts[p].name, argc, argv))
			continue;
		if (parts[p].needs_root && geteuid() != 0)
			printf("%s skipped: it needs root (BPF programs, namespaces)\n",
			       parts[p].name);
		else
			parts[p].run();
	}
	return 0;
}
