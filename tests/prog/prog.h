/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The program tests' fixtures (tests/prog/): one instance of the data path,
 * the test VIPs, pools of backends with the ring they serve, and the answer
 * the ring library gives for a frame, which the kernel's must equal.
 */
#ifndef RINGLB_TESTS_PROG_H
#define RINGLB_TESTS_PROG_H

#include "harness.h"

/* --- the program tests' data path and VIPs ------------------------------------------------ */

#define SEED 0x7864702d74657374ULL

/* The test's VIPs: one per family and protocol, plus two broken ones. */
enum {
	VIP_V4_TCP = 1,
	VIP_V4_UDP,
	VIP_V6_TCP,
	VIP_V6_UDP,
	VIP_EMPTY_RING, /* a ring with no points */
	VIP_NO_RING,    /* no ring installed */
};

#define V4_VIP "198.18.0.100"
#define V4_VIP_EMPTY "198.18.0.101"
#define V4_VIP_NO_RING "198.18.0.102"
#define V4_NOT_VIP "198.18.0.200"
#define V6_VIP "2001:db8::100"
#define VIP_TCP_PORT 80
#define VIP_UDP_PORT 53

#define TCP_SYN 0x02
#define TCP_FIN_ACK 0x11
#define TCP_RST 0x04
#define TCP_ACK 0x10

/* The instance every program test runs, and what it was loaded with. */
extern struct lb_prog *prog;
extern const struct lb_maps *maps;
extern const __u64 secret[2];
extern const __u8 iface_mac[6];
extern int skip_reason; /* 0: run; else why not */

/** harness_setup(), harness_teardown() - the program tests' group set-up. */
int harness_setup(void **state);
int harness_teardown(void **state);

#define NEEDS_ROOT()                                                      \
	do {                                                              \
		if (skip_reason)                                          \
			skip();                                           \
	} while (0)

/**
 * struct harness_group - one feature's tests. Each file registers its own
 * with HARNESS_GROUP(): a pointer to it lands in the section
 * "harness_groups", which tests/prog/main.c walks (in link order, the files'
 * sorted names), so a new file is a new group without editing any list.
 */
struct harness_group {
	const char *name;
	const struct CMUnitTest *tests;
	size_t count;
};

#define HARNESS_GROUP(group, ...)                                                          \
	static const struct CMUnitTest group##_tests[] = { __VA_ARGS__ };                  \
	static const struct harness_group group##_group = {                                \
		#group, group##_tests, sizeof(group##_tests) / sizeof(group##_tests[0]) };  \
	static const struct harness_group *const group##_entry                            \
		__attribute__((used, section("harness_groups"))) = &group##_group

struct lb_vip_key vip_key_of_test(int id);
__u64 reason_total(__u32 reason);
void reasons_snapshot(__u64 *counts);
__u32 run_frame(const unsigned char *in, size_t len, unsigned char *out, size_t *out_len);
void flows_clear(void);
/* Flows in the flow table, of @protocol (0: all). */
size_t flows_count(__u8 protocol);
void mac_of_backend(__u32 id, __u8 mac[6]);

/* A VIP's backends: a ring of members and the backend id of each member. */
struct pool {
	int vip;
	struct ring *ring;
	__u32 ids[1024];
	size_t count;
};

/** backend_new() - a new active backend of @vip in the next free slot: its id. */
__u32 backend_new(int vip);
/** backend_new_encap() - a new active backend of @vip at @addr, reached by @forward. */
__u32 backend_new_encap(int vip, int family, const char *addr, int forward);
/** pool_install() - one backend per member of @ring for @vip, and the ring swapped in. */
void pool_install(struct pool *pool, int vip, struct ring *ring);
void pool_release(struct pool *pool);
struct ring *ring_weighted(uint32_t vnodes, size_t count, const uint32_t *weights,
			   const char *prefix);
/** random_flow() - a client flow of @vip with a pseudo-random client address and port. */
void random_flow(struct test_rng *rng, int vip, struct pkt_spec *spec, char *client,
		 size_t client_len);
/** key_of_spec() - the flow table key of the frame @spec builds. */
void key_of_spec(const struct pkt_spec *spec, struct lb_flow_key *key);
/** expected_backend() - the backend the ring library says the kernel must pick. */
__u32 expected_backend(const struct pool *pool, const struct pkt_spec *spec);
/** forward() - send a frame, expect XDP_TX; return the backend id its new MAC names. */
__u32 forward(const struct pkt *pkt);
/** flow_spec() - flow i (a fixed client address and port per i) to the IPv4 TCP VIP. */
struct pkt_spec flow_spec(int i, char *client, size_t len);
/** send_flow() - a packet of flow i with @tcp_flags: the backend it went to. */
__u32 send_flow(int i, uint8_t tcp_flags);

/**
 * icmp_error_about() - an ICMP error from a router about a packet a backend
 * sent to the client: outer header router -> VIP, quoting VIP:port ->
 * client:port (the table's client, 198.18.1.9 or 2001:db8:c::9).
 */
void icmp_error_about(struct pkt *p, int family, unsigned char type, unsigned char code,
		      const char *quoted_src, uint16_t quoted_sport, uint16_t quoted_dport);
/** icmp_frag_needed_for_vip_flow() - "fragmentation needed" about the table's IPv4 TCP flow. */
void icmp_frag_needed_for_vip_flow(struct pkt *p);

/** bpffs_dir() - a fresh pin directory on the BPF filesystem for this process. */
int bpffs_dir(char *dir, size_t len);
/** pins_remove() - remove every pin in @dir, then @dir. */
void pins_remove(const char *dir);

#endif /* RINGLB_TESTS_PROG_H */
