// SPDX-License-Identifier: GPL-2.0-only
/*
 * QUIC VIPs through the data path (bpf/lb_quic.h): a QUIC VIP of the state
 * made to serve by the controller's own sync (kernel_vip_quic_sync(): server
 * ids, the key made by the kernel's syscall program, the VIP value's swap),
 * then datagrams through ringlb_xdp. The draft's test vectors reach the
 * backend holding their server id; on random connection IDs, made by a
 * server or any octets, the kernel picks what `ringlb lookup --cid`
 * (kernel_quic_lookup()) picks; a client's Initial goes by the ring over
 * its connection ID from any address; a draining backend keeps its
 * connection IDs and a removed one's go to the ring; what holds no
 * connection ID is dropped; no flow-table entry is made.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>

#include "prog.h"
#include "kernel.h"
#include "lb_quic_lb.h"
#include "quic_lb_vectors.h"
#include "ringlb_plain.skel.h"

#define QUIC_SEED 0x7175696370617468ULL
/* Connection IDs per configuration in the agreement test, half of them a server's. */
#define AGREEMENT_CIDS 600

/* A QUIC VIP of the state standing for test VIP VIP_V4_UDP, serving in the kernel. */
struct qvip {
	struct state s;
	struct state_vip *v;
	char key_path[64];
};

/* The flow key and datagram of a packet to the QUIC VIP from @client:@sport. */
static void quic_packet(struct pkt *pkt, const char *client, uint16_t sport, const __u8 *payload,
			size_t len)
{
	struct pkt_spec spec = { .family = LB_FAMILY_IPV4, .protocol = IPPROTO_UDP, .src = client,
				 .dst = V4_VIP, .sport = sport, .dport = VIP_UDP_PORT,
				 .payload = payload, .payload_len = len };

	pkt_build(pkt, &spec);
}

/* A short header carrying connection ID @cid (@len octets), then some protected octets. */
static size_t short_header(const __u8 *cid, size_t len, __u8 *out)
{
	out[0] = 0x41; /* short header, fixed bit, key phase 0, 2-octet packet number */
	memcpy(out + 1, cid, len);
	memset(out + 1 + len, 0x5a, 24);
	return 1 + len + 24;
}

/* A QUIC v1 Initial whose destination connection ID the client chose. */
static size_t initial(const __u8 *dcid, size_t len, __u8 *out)
{
	size_t off = 0;

	out[off++] = 0xc3; /* long header, fixed bit, Initial, 4-octet packet number */
	out[off++] = 0;
	out[off++] = 0;
	out[off++] = 0;
	out[off++] = 1;
	out[off++] = (__u8)len;
	memcpy(out + off, dcid, len);
	off += len;
	out[off++] = 8; /* its source connection ID */
	memset(out + off, 0x33, 8 + 1200);
	return off + 8 + 1200;
}

/*
 * Make @q a QUIC VIP of @cfg (with @key when encrypted: written to a key file
 * of mode 0600) with @count backends; @sids their server ids, or NULL for
 * the lowest free ones. The state's backends take kernel slots of their own.
 */
static void qvip_make(struct qvip *q, const struct lb_quic_lb *cfg, const __u8 *key,
		      size_t count, const __u8 (*sids)[LB_QUIC_LB_SID_MAX])
{
	struct lb_vip_key vkey = vip_key_of_test(VIP_V4_UDP);
	struct state_quic quic = { .set = 1, .cfg = *cfg };
	struct vip_spec spec = { 0 };
	struct lb_vip as = { .flags = LB_VIP_QUIC_LB };
	struct fault f = { 0 };
	const char *why = "";
	struct ring *ring;
	__u32 *ids;
	size_t i;

	memset(q, 0, sizeof(*q));
	spec.addr.family = vkey.family;
	memcpy(spec.addr.bytes, vkey.addr, sizeof(vkey.addr));
	spec.port = ntohs(vkey.port);
	spec.protocol = vkey.protocol;
	state_init(&q->s);
	assert_int_equal(state_vip_add(&q->s, &spec, 64, &q->v), 0);
	q->v->id = VIP_V4_UDP;
	if (key) {
		char hex[2 * LB_QUIC_LB_KEY_LEN + 2];
		int fd;

		snprintf(q->key_path, sizeof(q->key_path), "/tmp/ringlb-quic-key-XXXXXX");
		fd = mkstemp(q->key_path);
		check(fd >= 0, "key file: %s", strerror(errno));
		hex_of(key, LB_QUIC_LB_KEY_LEN, hex);
		strcat(hex, "\n");
		check(write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex), "key file written");
		close(fd);
		snprintf(quic.key_path, sizeof(quic.key_path), "%s", q->key_path);
		quic.key_digest = quic_lb_key_digest(key);
	}
	check(state_vip_quic_set(q->v, &quic, &why) == 0, "quic: %s", why);
	for (i = 0; i < count; i++) {
		struct state_backend b = { .weight = 1 }, *sb;
		struct lb_backend slot;

		snprintf(b.name, sizeof(b.name), "q%zu", i);
		if (sids)
			memcpy(b.server_id, sids[i], LB_QUIC_LB_SID_MAX);
		check(state_backend_add(&q->s, q->v, &b) == 0, "backend %zu", i);
		sb = &q->v->backends[q->v->backend_count - 1];
		sb->id = backend_new(VIP_V4_UDP);
		assert_int_equal(lb_backend_read(maps, sb->id, &slot), 0);
		sb->cookie = slot.cookie;
		memcpy(sb->mac, slot.mac, sizeof(sb->mac));
	}
	assert_int_equal(state_vip_ring(q->v, &ring, &ids), 0);
	as.quic = *cfg;
	check(lb_vip_install_with(maps, &vkey, VIP_V4_UDP, ring, ids, &as) == 0, "ring installed");
	ring_free(ring);
	free(ids);
	check(kernel_vip_quic_sync(maps, q->v, &f) == 0, "quic sync: %s", f.why);
	/* The sync did what its value says: what verify compares. */
	{
		struct lb_vip val;

		assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey, &val), 0);
		check_eq(val.flags & LB_VIP_QUIC_LB, LB_VIP_QUIC_LB);
		check_eq(memcmp(&val.quic, cfg, sizeof(*cfg)), 0);
	}
}

/* The VIP a plain UDP VIP again, its backends' slots freed, its key file gone. */
static void qvip_release(struct qvip *q)
{
	struct state_quic none = { 0 };
	struct fault f = { 0 };
	const char *why = "";
	size_t i;

	check(state_vip_quic_set(q->v, &none, &why) == 0, "quic off: %s", why);
	check(kernel_vip_quic_sync(maps, q->v, &f) == 0, "quic off: %s", f.why);
	for (i = 0; i < q->v->backend_count; i++)
		lb_backend_set_state(maps, q->v->backends[i].id, LB_BACKEND_UNUSED);
	if (q->key_path[0])
		unlink(q->key_path);
	state_free(&q->s);
}

/* A chooser over @q, as `ringlb lookup --cid` makes one. */
static void chooser_open(struct kernel_chooser *kc, struct qvip *q)
{
	struct fault f = { 0 };

	assert_int_equal(kernel_chooser_open(kc, maps, secret, q->v), 0);
	check(kernel_quic_open(kc, &f) == 0, "quic open: %s", f.why);
}

/* Where a short header with @cid goes: the backend id, 0 for not forwarded. */
static __u32 send_cid(const __u8 *cid, size_t len, const char *client, uint16_t sport)
{
	__u8 payload[128];
	struct pkt pkt;

	quic_packet(&pkt, client, sport, payload, short_header(cid, len, payload));
	return forward(&pkt);
}

static const struct state_backend *by_id(const struct qvip *q, __u32 id)
{
	size_t i;

	for (i = 0; i < q->v->backend_count; i++)
		if (q->v->backends[i].id == id)
			return &q->v->backends[i];
	return NULL;
}

/* The draft's vectors: each connection ID reaches the backend holding its server id. */
static void test_the_drafts_vectors_reach_their_servers(void **state)
{
	size_t k;

	(void)state;
	NEEDS_ROOT();
	for (k = 0; k < QUIC_LB_VECTORS; k++) {
		const struct vector *t = &vectors[k];
		__u8 key[LB_QUIC_LB_KEY_LEN], cid[LB_QUIC_CID_MAX], sids[2][LB_QUIC_LB_SID_MAX] = { 0 };
		struct lb_quic_lb cfg = { .rotation = t->rotation };
		struct kernel_quic_answer answer;
		struct kernel_chooser kc;
		__u64 before = reason_total(LB_REASON_FORWARDED_QUIC);
		size_t len;
		struct qvip q;

		cfg.sid_len = (__u8)unhex(t->sid, sids[0]);
		cfg.nonce_len = (__u8)(strlen(t->nonce) / 2);
		cfg.flags = t->key ? LB_QUIC_LB_ENCRYPTED : 0;
		if (t->key)
			unhex(t->key, key);
		/* A second backend whose id differs from the vector's in its first octet. */
		memcpy(sids[1], sids[0], sizeof(sids[1]));
		sids[1][0] ^= 0xff;
		qvip_make(&q, &cfg, t->key ? key : NULL, 2, (const __u8(*)[LB_QUIC_LB_SID_MAX])sids);
		len = unhex(t->cid, cid);
		check(send_cid(cid, len, "198.18.7.1", 40000) == q.v->backends[0].id,
		      "vector %zu (%s): not to the backend with server id %s", k, t->cid, t->sid);
		check_eq(reason_total(LB_REASON_FORWARDED_QUIC), before + 1);
		chooser_open(&kc, &q);
		kernel_quic_lookup(&kc, KERNEL_QUIC_SHORT, cid, len, &answer);
		check(answer.backend == &q.v->backends[0] && answer.reason == LB_REASON_FORWARDED_QUIC,
		      "lookup of vector %zu: %s", k, answer.backend ? answer.backend->name : "none");
		kernel_chooser_close(&kc);
		qvip_release(&q);
	}
}

/* Where a QUIC datagram goes: the backend id, 0 for not forwarded; the reason it counted. */
static __u32 send_payload(const __u8 *payload, size_t n, const char *client, uint16_t sport,
			  int *reason)
{
	__u64 before[LB_REASON_COUNT], after[LB_REASON_COUNT];
	struct pkt pkt;
	__u32 id;
	int r;

	reasons_snapshot(before);
	quic_packet(&pkt, client, sport, payload, n);
	id = forward(&pkt);
	reasons_snapshot(after);
	*reason = -1;
	for (r = 0; r < LB_REASON_COUNT; r++)
		if (after[r] != before[r])
			*reason = r;
	return id;
}

/*
 * On each configuration, four kinds of packet: short headers with the
 * connection IDs a server of a random backend makes (they reach it), short
 * headers with any octets after this configuration's first octet, short
 * headers of foreign IDs (any first octet, their length as it describes),
 * and Initials with any client-chosen ID of 8 to 20 octets (a server's now
 * and then): each goes to the backend, and is counted under the reason,
 * that lookup gives; none leaves a flow-table entry.
 */
static void test_random_connection_ids_agree_with_lookup(void **state)
{
	static const struct lb_quic_lb cfgs[] = {
		{ .rotation = 0, .sid_len = 2, .nonce_len = 6 },
		{ .rotation = 5, .sid_len = 4, .nonce_len = 12, .flags = LB_QUIC_LB_ENCRYPTED },
		{ .rotation = 3, .sid_len = 3, .nonce_len = 9, .flags = LB_QUIC_LB_ENCRYPTED },
		{ .rotation = 1, .sid_len = 7, .nonce_len = 4, .flags = LB_QUIC_LB_ENCRYPTED },
	};
	struct test_rng rng = { QUIC_SEED };
	size_t c, i, by_reason[LB_REASON_COUNT] = { 0 };

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	for (c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		__u8 key[16], sid[16], nonce[32], cid[LB_QUIC_CID_MAX], payload[1400];
		size_t cfg_len = 1u + cfgs[c].sid_len + cfgs[c].nonce_len;
		struct quic_lb_cipher cipher = { 0 };
		struct kernel_quic_answer answer;
		struct kernel_chooser kc;
		struct fault f = { 0 };
		struct qvip q;

		quic_lb_random_material(&rng, key, sid, nonce);
		qvip_make(&q, &cfgs[c], key, 8, NULL);
		chooser_open(&kc, &q);
		check(quic_lb_cipher_init(&cipher, key, &f) == 0, "cipher: %s", f.why);
		for (i = 0; i < AGREEMENT_CIDS; i++) {
			const struct state_backend *want = NULL, *got;
			int kind = (int)(i % 4), reason;
			size_t len, o, n;
			char client[32];
			__u32 id;

			for (o = 0; o < LB_QUIC_CID_MAX; o++)
				cid[o] = (__u8)test_rng_next(&rng);
			if (kind == 0 || (kind == 3 && test_rng_below(&rng, 4) == 0)) {
				want = &q.v->backends[test_rng_below(&rng, q.v->backend_count)];
				quic_lb_random_material(&rng, key, sid, nonce);
				check(quic_lb_cid_make(&cfgs[c], &cipher, want->server_id, nonce, cid) ==
					      0,
				      "a server's connection ID");
				len = cfg_len;
			} else if (kind == 1) {
				cid[0] = (__u8)(cfgs[c].rotation << 5 | (cid[0] & 0x1f));
				len = cfg_len;
			} else if (kind == 2) {
				len = quic_lb_short_cid_len(cid[0], &cfgs[c]);
			} else {
				len = 8 + test_rng_below(&rng, LB_QUIC_CID_MAX - 8 + 1);
			}
			check(kernel_quic_lookup(&kc, kind == 3 ? KERNEL_QUIC_INITIAL :
								  KERNEL_QUIC_SHORT,
						 cid, len, &answer) == 0,
			      "lookup refused connection ID %zu", i);
			n = kind == 3 ? initial(cid, len, payload) : short_header(cid, len, payload);
			snprintf(client, sizeof(client), "198.18.%u.%u",
				 (unsigned)test_rng_below(&rng, 128) + 128,
				 (unsigned)test_rng_below(&rng, 254) + 1);
			id = send_payload(payload, n, client,
					  (uint16_t)(1024 + test_rng_below(&rng, 60000)), &reason);
			got = by_id(&q, id);
			check(got && got == answer.backend && reason == answer.reason,
			      "config %zu, kind %d, connection ID %zu: the kernel sent it to %s as %s, "
			      "lookup says %s as %s",
			      c, kind, i, got ? got->name : "none",
			      reason >= 0 ? lb_reasons[reason].name : "?",
			      answer.backend ? answer.backend->name : "none",
			      lb_reasons[answer.reason].name);
			if (want)
				check(got == want, "config %zu: a server's connection ID of %s went to %s",
				      c, want->name, got ? got->name : "none");
			by_reason[answer.reason]++;
		}
		quic_lb_cipher_free(&cipher);
		kernel_chooser_close(&kc);
		qvip_release(&q);
	}
	check(flows_count(0) == 0, "QUIC packets made flow-table entries");
	print_message("quic: %zu packets by their server id, by the ring %zu Initials, %zu of "
		      "another rotation, %zu unknown; all as lookup says\n",
		      by_reason[LB_REASON_FORWARDED_QUIC], by_reason[LB_REASON_FORWARDED_QUIC_NEW],
		      by_reason[LB_REASON_FORWARDED_QUIC_ROTATION],
		      by_reason[LB_REASON_FORWARDED_QUIC_UNKNOWN]);
	check(by_reason[LB_REASON_FORWARDED_QUIC] && by_reason[LB_REASON_FORWARDED_QUIC_NEW] &&
	      by_reason[LB_REASON_FORWARDED_QUIC_ROTATION] &&
	      by_reason[LB_REASON_FORWARDED_QUIC_UNKNOWN], "a reason never came up");
}

/* A client's Initial: the ring over its connection ID, whatever address it comes from. */
static void test_an_initial_goes_by_the_ring_from_any_address(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 2, .sid_len = 1, .nonce_len = 8 };
	static const char *const clients[] = { "198.18.5.1", "198.18.6.2", "198.18.200.3" };
	struct test_rng rng = { QUIC_SEED ^ 1 };
	__u8 dcid[LB_QUIC_CID_MAX], payload[1400];
	struct kernel_quic_answer answer;
	struct kernel_chooser kc;
	struct qvip q;
	size_t i, n, c;

	(void)state;
	NEEDS_ROOT();
	qvip_make(&q, &cfg, NULL, 5, NULL);
	chooser_open(&kc, &q);
	for (i = 0; i < 50; i++) {
		__u64 before = reason_total(LB_REASON_FORWARDED_QUIC_NEW);
		__u32 first = 0, id;
		struct pkt pkt;

		for (n = 0; n < 18; n++)
			dcid[n] = (__u8)test_rng_next(&rng);
		/* Its rotation bits not the VIP's: a client's, which names no server. */
		dcid[0] = (__u8)((dcid[0] & 0x1f) | 7 << 5);
		kernel_quic_lookup(&kc, KERNEL_QUIC_INITIAL, dcid, 18, &answer);
		n = initial(dcid, 18, payload);
		for (c = 0; c < 3; c++) {
			quic_packet(&pkt, clients[c], (uint16_t)(30000 + c * 1000 + i), payload, n);
			id = forward(&pkt);
			if (!c)
				first = id;
			check(id == first, "Initial %zu from %s went to slot %u, from %s to %u", i,
			      clients[c], id, clients[0], first);
		}
		check(answer.backend && answer.backend->id == first,
		      "Initial %zu: lookup says %s", i, answer.backend ? answer.backend->name : "none");
		check_eq(reason_total(LB_REASON_FORWARDED_QUIC_NEW), before + 3);
	}
	kernel_chooser_close(&kc);
	qvip_release(&q);
}

static struct lb_vip_key vkey_of_quic;

/* Draining keeps a backend's connection IDs; once it is gone they go to the ring. */
static void test_draining_keeps_connection_ids_and_removal_frees_them(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 0, .sid_len = 2, .nonce_len = 6 };
	__u8 nonce[8] = { 1, 2, 3, 4, 5, 6 }, cid[LB_QUIC_CID_MAX];
	struct kernel_quic_answer answer;
	struct kernel_chooser kc;
	struct state_backend *b;
	struct qvip q;

	(void)state;
	NEEDS_ROOT();
	flows_clear();
	vkey_of_quic = vip_key_of_test(VIP_V4_UDP);
	qvip_make(&q, &cfg, NULL, 4, NULL);
	b = &q.v->backends[1];
	assert_int_equal(quic_lb_cid_make(&cfg, NULL, b->server_id, nonce, cid), 0);
	check_eq(send_cid(cid, 9, "198.18.9.9", 5000), b->id);
	b->draining = 1;
	assert_int_equal(lb_backend_set_state(maps, b->id, LB_BACKEND_DRAINING), 0);
	check(send_cid(cid, 9, "198.18.9.10", 5001) == b->id,
	      "a draining backend lost a connection ID of its own");
	chooser_open(&kc, &q);
	kernel_quic_lookup(&kc, KERNEL_QUIC_SHORT, cid, 9, &answer);
	check(answer.backend == b, "lookup: a draining backend's connection ID went to %s",
	      answer.backend ? answer.backend->name : "none");
	kernel_chooser_close(&kc);
	/* Removed: the ring without it serves, then its slot is freed; the ring places its ids. */
	{
		struct lb_vip_key vkey = vip_key_of_test(VIP_V4_UDP);
		struct ring *ring;
		__u32 *ids;

		assert_int_equal(state_vip_ring(q.v, &ring, &ids), 0);
		check(lb_vip_install(maps, &vkey, VIP_V4_UDP, ring, ids) == 0, "ring without it");
		ring_free(ring);
		free(ids);
	}
	assert_int_equal(lb_backend_set_state(maps, b->id, LB_BACKEND_UNUSED), 0);
	{
		__u64 before = reason_total(LB_REASON_FORWARDED_QUIC_UNKNOWN);
		struct lb_vip val;
		__u32 id;

		/* Still a QUIC VIP: the ring swap kept its QUIC side. */
		assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey_of_quic, &val), 0);
		check_eq(val.flags & LB_VIP_QUIC_LB, LB_VIP_QUIC_LB);
		id = send_cid(cid, 9, "198.18.9.11", 5002);
		check(id && id != b->id, "a removed backend's connection ID went to slot %u", id);
		check(reason_total(LB_REASON_FORWARDED_QUIC_UNKNOWN) == before + 1,
		      "a removed backend's connection ID was not placed by the ring as unknown");
		check(flows_count(0) == 0,
		      "the removed backend's connection ID made a flow-table entry");
	}
	assert_int_equal(lb_backend_set_state(maps, b->id, LB_BACKEND_DRAINING), 0);
	qvip_release(&q);
}

/*
 * Server ids given to other backends take a new set and one swap of the VIP
 * value (the old set then stray until swept); an id added goes into the
 * serving set with no swap.
 */
static void test_ids_given_to_other_backends_are_one_swap(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 4, .sid_len = 1, .nonce_len = 8 };
	static const __u8 nonce[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	struct lb_vip_key vkey = vip_key_of_test(VIP_V4_UDP);
	__u8 sids[2][LB_QUIC_LB_SID_MAX] = { { 1 }, { 2 } }, cid[LB_QUIC_CID_MAX];
	struct fault f = { 0 };
	struct lb_vip before, after;
	size_t ids, keys;
	struct qvip q;

	(void)state;
	NEEDS_ROOT();
	qvip_make(&q, &cfg, NULL, 2, (const __u8(*)[LB_QUIC_LB_SID_MAX])sids);
	assert_int_equal(quic_lb_cid_make(&cfg, NULL, sids[0], nonce, cid), 0);
	check_eq(send_cid(cid, 10, "198.18.3.3", 3333), q.v->backends[0].id);
	assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey, &before), 0);
	/* The two backends trade ids: a new set beside the old, one swap. */
	q.v->backends[0].server_id[0] = 2;
	q.v->backends[1].server_id[0] = 1;
	check(kernel_vip_quic_sync(maps, q.v, &f) == 0, "sync: %s", f.why);
	assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey, &after), 0);
	check(after.quic_parity != before.quic_parity, "ids traded in place, no swap");
	check_eq(send_cid(cid, 10, "198.18.3.3", 3333), q.v->backends[1].id);
	assert_int_equal(kernel_quic_strays(maps, &q.s, 0, &ids, &keys), 0);
	check_eq(ids, 2);
	assert_int_equal(kernel_quic_strays(maps, &q.s, 1, &ids, &keys), 0);
	assert_int_equal(kernel_quic_strays(maps, &q.s, 0, &ids, &keys), 0);
	check_eq(ids, 0);
	/* A third backend's id: added to the serving set, no swap. */
	{
		struct state_backend b = { .weight = 1 }, *sb;
		struct lb_backend slot;

		snprintf(b.name, sizeof(b.name), "q-new");
		assert_int_equal(state_backend_add(&q.s, q.v, &b), 0);
		sb = &q.v->backends[2];
		sb->id = backend_new(VIP_V4_UDP);
		assert_int_equal(lb_backend_read(maps, sb->id, &slot), 0);
		sb->cookie = slot.cookie;
		check(kernel_vip_quic_sync(maps, q.v, &f) == 0, "sync: %s", f.why);
		assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey, &before), 0);
		check_eq(before.quic_parity, after.quic_parity);
		assert_int_equal(quic_lb_cid_make(&cfg, NULL, sb->server_id, nonce, cid), 0);
		check_eq(send_cid(cid, 10, "198.18.3.4", 3334), sb->id);
	}
	qvip_release(&q);
}

/*
 * The program for kernels without the crypto kfuncs (build/ringlb_plain.bpf.o,
 * what lb_prog_load() takes there): it names no crypto kfunc, loads, and
 * routes plaintext QUIC-LB by server id; the key slots it has hold no
 * kernel cipher. Run here, where the kernel has them, by asking for it.
 */
static void test_the_program_without_crypto_serves_plaintext(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 6, .sid_len = 2, .nonce_len = 5 };
	static const __u8 nonce[8] = { 1, 1, 2, 3, 5, 8, 13 };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] }, .plain = 1 };
	struct lb_prog *plain, *saved_prog = prog;
	const struct lb_maps *saved_maps = maps;
	__u8 cid[LB_QUIC_CID_MAX];
	struct qvip q;
	int err;

	(void)state;
	NEEDS_ROOT();
	{
		size_t len;
		const void *elf = ringlb_plain_bpf__elf_bytes(&len);

		check(memmem(elf, len, "bpf_crypto", 10) == NULL,
		      "the program without crypto names a crypto kfunc or type");
	}
	memcpy(opts.iface_mac, iface_mac, sizeof(opts.iface_mac));
	err = lb_prog_load(&plain, &opts);
	check(err == 0, "the program without crypto does not load: %s", strerror(-err));
	check(harness_verifier_budget(lb_prog_fd(plain), "ringlb_xdp without AES",
				      HARNESS_BUDGET_XDP) == 0,
	      "the program without crypto is over the verifier's budget");
	prog = plain;
	maps = lb_prog_maps(plain);
	qvip_make(&q, &cfg, NULL, 3, NULL);
	assert_int_equal(quic_lb_cid_make(&cfg, NULL, q.v->backends[2].server_id, nonce, cid), 0);
	check_eq(send_cid(cid, 8, "198.18.2.2", 2222), q.v->backends[2].id);
	check_eq(reason_total(LB_REASON_FORWARDED_QUIC), 1);
	qvip_release(&q);
	lb_prog_close(plain);
	prog = saved_prog;
	maps = saved_maps;
	print_message("quic: the program without crypto loaded and routed a plaintext connection "
		      "ID by its server id%s\n",
		      lb_kernel_has_crypto() ? " (this kernel has the crypto kfuncs)" : "");
}

static void report_to(void *arg, const char *line)
{
	snprintf(arg, 256, "%s", line);
}

/*
 * Maps made afresh (after a reboot: kernel_sync() of unknown maps) with a
 * key file that holds another key than the state's: the VIP serves without
 * the key (its QUIC placed by the ring) rather than not at all, and verify
 * says so; the same on maps that serve it already is refused.
 */
static void test_fresh_maps_serve_a_vip_whose_key_cannot_be_made(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 1, .sid_len = 4, .nonce_len = 12,
					       .flags = LB_QUIC_LB_ENCRYPTED };
	static const __u8 key[16] = { 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9 };
	struct lb_load_opts opts = { .secret = { secret[0], secret[1] } };
	struct lb_prog *fresh, *saved_prog = prog;
	const struct lb_maps *saved_maps = maps;
	struct lb_vip_key vkey = vip_key_of_test(VIP_V4_UDP);
	char said[256] = "";
	struct fault f = { 0 };
	struct lb_vip val;
	struct qvip q;
	int err;

	(void)state;
	NEEDS_ROOT();
	memcpy(opts.iface_mac, iface_mac, sizeof(opts.iface_mac));
	err = lb_prog_load(&fresh, &opts);
	check(err == 0, "a fresh instance: %s", strerror(-err));
	prog = fresh;
	maps = lb_prog_maps(fresh);
	qvip_make(&q, &cfg, key, 2, NULL);
	/* The same state on maps made afresh, its key file now another key. */
	lb_prog_close(fresh);
	err = lb_prog_load(&fresh, &opts);
	check(err == 0, "a second fresh instance: %s", strerror(-err));
	prog = fresh;
	maps = lb_prog_maps(fresh);
	{
		FILE *fp = fopen(q.key_path, "w");

		check(fp && fputs("0f0e0d0c0b0a09080706050403020100\n", fp) >= 0, "key file");
		fclose(fp);
	}
	err = kernel_sync(maps, NULL, &q.s, &f);
	check(err == 0, "fresh maps refused the state: %s", f.why);
	assert_int_equal(bpf_map_lookup_elem(maps->vips, &vkey, &val), 0);
	check_eq(val.flags & LB_VIP_QUIC_LB, LB_VIP_QUIC_LB);
	check(kernel_verify(maps, &q.s, report_to, said) > 0 &&
	      strstr(said, "QUIC-LB key is not the state's"), "verify said '%s'", said);
	/* A change on maps that serve the VIP: refused, as ever. */
	f.why[0] = 0;
	q.v->quic.cfg.rotation = 2;
	err = kernel_sync(maps, &q.s, &q.s, &f);
	check(err != 0 && strstr(f.why, "holds another key"), "a change with another key: %s",
	      f.why);
	unlink(q.key_path);
	state_free(&q.s);
	lb_prog_close(fresh);
	prog = saved_prog;
	maps = saved_maps;
}

/* Datagrams that hold no connection ID are dropped under their own reason. */
static void test_what_holds_no_connection_id_is_dropped(void **state)
{
	static const struct lb_quic_lb cfg = { .rotation = 0, .sid_len = 3, .nonce_len = 8 };
	__u8 payload[64] = { 0 };
	unsigned char out[PKT_MAX];
	size_t out_len;
	struct pkt pkt;
	struct qvip q;
	__u64 before;
	struct {
		const char *what;
		size_t len;
		__u8 first, dcid_len;
	} cases[] = {
		{ "an empty datagram", 0, 0, 0 },
		{ "a short header cut before its connection ID ends", 1 + 11, 0x40, 0 },
		{ "a long header cut in its version", 3, 0xc0, 0 },
		{ "a long header whose connection ID is 21 octets", 40, 0xc0, 21 },
		{ "a long header with no connection ID", 40, 0xc0, 0 },
		{ "a long header cut in its connection ID", 6 + 10, 0xc0, 12 },
	};
	size_t i;

	(void)state;
	NEEDS_ROOT();
	qvip_make(&q, &cfg, NULL, 2, NULL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(payload, 0x11, sizeof(payload));
		payload[0] = cases[i].first;
		if (cases[i].first & 0x80) {
			payload[1] = payload[2] = payload[3] = 0;
			payload[4] = 1;
			payload[5] = cases[i].dcid_len;
		}
		quic_packet(&pkt, "198.18.4.4", 4444, payload, cases[i].len);
		before = reason_total(LB_REASON_DROP_NOT_QUIC);
		out_len = sizeof(out);
		check(run_frame(pkt.data, pkt.len, out, &out_len) == XDP_DROP, "%s: not dropped",
		      cases[i].what);
		check(reason_total(LB_REASON_DROP_NOT_QUIC) == before + 1, "%s: not drop_not_quic",
		      cases[i].what);
	}
	qvip_release(&q);
}

HARNESS_GROUP(quic,
	      cmocka_unit_test(test_the_drafts_vectors_reach_their_servers),
	      cmocka_unit_test(test_random_connection_ids_agree_with_lookup),
	      cmocka_unit_test(test_an_initial_goes_by_the_ring_from_any_address),
	      cmocka_unit_test(test_draining_keeps_connection_ids_and_removal_frees_them),
	      cmocka_unit_test(test_ids_given_to_other_backends_are_one_swap),
	      cmocka_unit_test(test_the_program_without_crypto_serves_plaintext),
	      cmocka_unit_test(test_fresh_maps_serve_a_vip_whose_key_cannot_be_made),
	      cmocka_unit_test(test_what_holds_no_connection_id_is_dropped));
