/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * QUIC-LB in the XDP program: the maps of a QUIC VIP's server ids and keys,
 * the kernel's AES through the BPF crypto kfuncs (Linux 6.10 and later), and
 * quic_pick(), which reads a datagram's destination connection ID and says
 * which backend its server id names, or where the ring puts the connection
 * ID when it names none.
 *
 * A VIP with LB_VIP_QUIC_LB carries its configuration in its value (struct
 * lb_vip.quic). Its key is an AES-128-ECB context that only a sleepable
 * program can make (bpf/quic_cipher.bpf.c, run by the controller), kept as a
 * kptr in map "quic_ciphers": two slots per VIP, the value's quic_parity
 * naming the serving one. Its server ids are map "quic_servers".
 *
 * quic_pick() is a global function: verified once on its own, so neither the
 * Feistel network's unrolled passes nor the header's cases multiply the
 * states of the data path around it. The includer has the maps "backends"
 * (lb_ring.h) and flow_hash() (the flow key's ring position) before it; a
 * program that needs only the key slots (quic_cipher.bpf.c) defines
 * LB_QUIC_CIPHERS_ONLY.
 */
#ifndef RINGLB_LB_QUIC_H
#define RINGLB_LB_QUIC_H

#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lb_contract.h"
#include "lb_pin.h"

#ifdef LB_QUIC_NO_CRYPTO

/*
 * The program for kernels without the BPF crypto kfuncs (before Linux 6.10,
 * or built without them): key slots without a kernel context in them, and
 * no cipher, so an encrypted configuration's packets decode to nothing and
 * go where the ring puts their connection ID. The loader takes this object
 * where the kernel has no bpf_crypto_ctx_create() (lb.c).
 */
struct lb_quic_cipher_slot {
	__u64 cipher;
	__u64 key_digest;
};

#else

#define __kptr __attribute__((btf_type_tag("kptr")))

/*
 * The kernel's crypto kfuncs (kernel/bpf/crypto.c). The struct's body is
 * never used, but libbpf 1.1 calls a kfunc whose struct is only declared
 * incompatible with the kernel (docs/traps.md).
 */
struct bpf_crypto_ctx {
	int unused;
};

struct bpf_crypto_params {
	char type[14];
	__u8 reserved[2];
	char algo[128];
	__u8 key[256];
	__u32 key_len;
	__u32 authsize;
};

extern struct bpf_crypto_ctx *bpf_crypto_ctx_create(const struct bpf_crypto_params *params,
						    __u32 params__sz, int *err) __ksym;
extern void bpf_crypto_ctx_release(struct bpf_crypto_ctx *ctx) __ksym;
extern int bpf_crypto_encrypt(struct bpf_crypto_ctx *ctx, const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv__nullable) __ksym;
extern int bpf_crypto_decrypt(struct bpf_crypto_ctx *ctx, const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv__nullable) __ksym;

/** struct lb_quic_cipher_slot - the program's view of struct lb_quic_cipher_record. */
struct lb_quic_cipher_slot {
	struct bpf_crypto_ctx __kptr *cipher;
	__u64 key_digest;
};

#endif /* LB_QUIC_NO_CRYPTO */

_Static_assert(sizeof(struct lb_quic_cipher_slot) == sizeof(struct lb_quic_cipher_record),
	       "the program's key slot is the one userspace reads");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LB_QUIC_CIPHER_SLOTS);
	__type(key, __u32);
	__type(value, struct lb_quic_cipher_slot);
	LB_PINNED;
} quic_ciphers SEC(".maps");

#ifndef LB_QUIC_CIPHERS_ONLY

#include "lb_choose.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_QUIC_SERVERS_MAX);
	__type(key, struct lb_quic_server_key);
	__type(value, struct lb_quic_server);
	LB_PINNED;
} quic_servers SEC(".maps");

static __always_inline int quic_aes(__u32 slot, __u32 encrypt);

/*
 * The codec's cipher: its context is the key's slot, and its blocks are
 * always the scratch's w.in and w.out (bpf/lb_quic_lb.h passes no others).
 */
#define quic_lb_encrypt_block(ctx, in, out) quic_aes((__u32)(long)(ctx), 1)
#define quic_lb_decrypt_block(ctx, in, out) quic_aes((__u32)(long)(ctx), 0)
#include "lb_quic_lb.h"

/* The octets of a QUIC header read at once: first octet, version, DCID length, DCID. */
#define QUIC_HEADER_READ (1 + 4 + 1 + LB_QUIC_CID_MAX)

/*
 * quic_pick()'s buffers, per CPU: with the data path's own, its stack would
 * pass the 512 octets two calls may have together. The crypto kfuncs read
 * and write map memory only, too.
 */
struct quic_scratch {
	struct lb_flow_key fkey;
	__u64 hash;
	struct lb_quic_server_key skey;
	struct quic_lb_work w;
	union {
		__u8 cid[24];
		__u64 cid_w[3];
	};
	__u8 hdr[QUIC_HEADER_READ];
	__u8 sid[LB_QUIC_LB_SID_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct quic_scratch);
} quic_scratch SEC(".maps");

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quic_low_octets() keeps a word's first octets as a little-endian target lays them out"
#endif

/* The mask that keeps the first @n octets of a word (all of them from 8 on). */
static __always_inline __u64 quic_low_octets(__u32 n)
{
	return n >= 8 ? ~0ull : (1ull << (n * 8)) - 1;
}

/*
 * quic_aes() - one AES-128-ECB block of this CPU's scratch, w.in to w.out,
 * under the key in slot @slot of map "quic_ciphers"; decrypting unless
 * @encrypt. Return: 0, or negative (no key in the slot, or the cipher failed).
 */
#ifdef LB_QUIC_NO_CRYPTO
static __always_inline int quic_aes(__u32 slot, __u32 encrypt)
{
	/*
	 * Used, for clang: a global function's argument nothing reads is left
	 * unset at its calls, and the verifier refuses the call (its BTF says
	 * scalar).
	 */
	asm volatile("" : : "r"(slot), "r"(encrypt));
	return -1;
}
#else
static __always_inline int quic_aes(__u32 slot, __u32 encrypt)
{
	struct lb_quic_cipher_slot *k;
	struct bpf_crypto_ctx *c;
	struct bpf_dynptr src, dst;
	struct quic_scratch *m;
	__u32 zero = 0;

	k = bpf_map_lookup_elem(&quic_ciphers, &slot);
	m = bpf_map_lookup_elem(&quic_scratch, &zero);
	c = k ? k->cipher : NULL;
	if (!c || !m)
		return -1;
	bpf_dynptr_from_mem(m->w.in, sizeof(m->w.in), 0, &src);
	bpf_dynptr_from_mem(m->w.out, sizeof(m->w.out), 0, &dst);
	return encrypt ? bpf_crypto_encrypt(c, &src, &dst, NULL) :
			 bpf_crypto_decrypt(c, &src, &dst, NULL);
}
#endif /* LB_QUIC_NO_CRYPTO */

/*
 * quic_step() - step @k of decoding this CPU's scratch block under
 * configuration @cfg (the VIP value's) and the key in slot @slot
 * (quic_lb_decode_step()). A global function: the data path's frame and
 * quic_pick()'s, with an AES block's dynptrs and the codec's spills, would
 * pass the 512 octets of stack a chain of calls may have; a step at a time,
 * in a frame of its own, fits.
 * Return: 0, or QUIC_LB_CRYPTO.
 */
__noinline int quic_step(__u32 slot, __u32 k, const struct lb_quic_lb *cfg)
{
	struct quic_scratch *m;
	__u32 zero = 0;

	m = bpf_map_lookup_elem(&quic_scratch, &zero);
	if (!m || !cfg)
		return QUIC_LB_CRYPTO;
	return quic_lb_decode_step(cfg, (void *)(long)slot, &m->w, k);
}

/* RFC 9369: QUIC version 2 numbers its long packet types otherwise. */
#define QUIC_V2 0x6b3343cfu

/* quic_pick()'s answer: the reason in the low octet, the backend (0: none) above it. */
#define QUIC_PICK_REASON(v) ((__u32)(v) & 0xff)
#define QUIC_PICK_BACKEND(v) ((__u32)(v) >> 8)

/*
 * Is this long header's DCID one the client chose: an Initial or a 0-RTT
 * packet (RFC 9000 17.2; RFC 9369 for version 2)? Every other packet's DCID
 * is one a server issued.
 */
static __always_inline int quic_client_chosen(__u8 first, __u32 version)
{
	__u8 type = (first >> 4) & 3;

	return version == QUIC_V2 ? type == 1 || type == 2 : type == 0 || type == 1;
}

/*
 * quic_pick() - the backend a QUIC datagram of a QUIC-LB VIP goes to.
 * @ctx: the frame
 * @off: where the UDP payload starts in it
 * @vip: the VIP's value
 * @port: the VIP's port (network order)
 *
 * The datagram is what the UDP length holds (the parser has checked it lies
 * within the IP payload). Its destination connection ID is a long header's
 * (its length in the header, 1 to 20: none of ours is empty), or a short
 * header's (quic_lb_short_cid_len(): the configuration's length, 1 + server
 * id + nonce, or the one a foreign ID's first octet describes). Its server
 * id, read as bpf/lb_quic_lb.h reads it, names a backend through map
 * "quic_servers" (the set the value's quic_parity names) when that backend
 * still serves the VIP, under the cookie it was added with (draining
 * included: it keeps its connections). Otherwise this CPU's scratch gets the
 * connection ID's ring
 * position (hash; quic_lb_cid_key()), so every packet with it goes to one
 * backend whatever address it comes from.
 *
 * Its arguments are scalars and the VIP's value, and its answer one scalar:
 * the data path's frame keeps no room for it.
 *
 * Return: QUIC_PICK_REASON() the reason the packet goes under
 * (LB_REASON_FORWARDED_QUIC* or LB_REASON_DROP_NOT_QUIC), QUIC_PICK_BACKEND()
 * the backend the server id names (0: the ring places it by the hash).
 */
__noinline int quic_pick(struct xdp_md *ctx, __u32 off, const struct lb_vip *vip, __u32 port)
{
	__u32 avail, len, version = 0, slot, zero = 0, steps, k, id, vip_id;
	__u16 udp_len;
	struct lb_quic_server *server;
	struct quic_scratch *m;
	const struct lb_quic_lb *cfg;
	struct lb_backend *b;
	int err, client_chosen = 0;

	m = bpf_map_lookup_elem(&quic_scratch, &zero);
	if (!vip || !m)
		return LB_REASON_DROP_NOT_QUIC;
	vip_id = vip->vip_id;
	cfg = &vip->quic;
	slot = LB_QUIC_CIPHER_SLOT(vip_id, vip->quic_parity);
	m->hash = 0;
	avail = ctx->data_end - ctx->data;
	if (off < 8 || off >= avail)
		return LB_REASON_DROP_NOT_QUIC;
	avail -= off;
	/* The datagram ends where its UDP length says, not at the frame's padding. */
	if (bpf_xdp_load_bytes(ctx, off - 4, &udp_len, sizeof(udp_len)))
		return LB_REASON_DROP_NOT_QUIC;
	udp_len = bpf_ntohs(udp_len);
	if (udp_len < 8)
		return LB_REASON_DROP_NOT_QUIC;
	if (avail > udp_len - 8u)
		avail = udp_len - 8u;
	if (avail > QUIC_HEADER_READ)
		avail = QUIC_HEADER_READ;
	if (avail < 1 || bpf_xdp_load_bytes(ctx, off, m->hdr, avail))
		return LB_REASON_DROP_NOT_QUIC;
	if (m->hdr[0] & 0x80) {
		if (avail < 6)
			return LB_REASON_DROP_NOT_QUIC;
		version = (__u32)m->hdr[1] << 24 | (__u32)m->hdr[2] << 16 |
			  (__u32)m->hdr[3] << 8 | m->hdr[4];
		client_chosen = quic_client_chosen(m->hdr[0], version);
		len = m->hdr[5];
		/* No connection ID (none of ours is empty), or past the datagram. */
		if (!len || len > LB_QUIC_CID_MAX || 6 + len > avail)
			return LB_REASON_DROP_NOT_QUIC;
		__builtin_memcpy(m->cid, m->hdr + 6, LB_QUIC_CID_MAX);
	} else {
		if (avail < 2)
			return LB_REASON_DROP_NOT_QUIC;
		len = quic_lb_short_cid_len(m->hdr[1], cfg);
		if (len > LB_QUIC_CID_MAX || 1 + len > avail)
			return LB_REASON_DROP_NOT_QUIC;
		__builtin_memcpy(m->cid, m->hdr + 1, LB_QUIC_CID_MAX);
	}
	/* Zeros past its length, by words (a loop's spilled counter lost its bounds here). */
	m->cid_w[0] &= quic_low_octets(len);
	m->cid_w[1] &= quic_low_octets(len > 8 ? len - 8 : 0);
	m->cid_w[2] &= quic_low_octets(len > 16 ? len - 16 : 0);

	err = quic_lb_decode_begin(cfg, &m->w, m->cid, len);
	steps = err ? 0 : quic_lb_decode_steps(cfg);
	for (k = 0; k < 4; k++) {
		if (k >= steps || err)
			break;
		err = quic_step(slot, k, cfg);
	}
	if (err == 0) {
		quic_lb_decode_end(cfg, &m->w, m->sid);
		m->skey.vip_id = vip_id;
		m->skey.sid_len = cfg->sid_len;
		m->skey.parity = vip->quic_parity & 1;
		m->skey.pad[0] = m->skey.pad[1] = m->skey.pad[2] = 0;
		__builtin_memcpy(m->skey.sid, m->sid, LB_QUIC_LB_SID_MAX);
		server = bpf_map_lookup_elem(&quic_servers, &m->skey);
		if (server) {
			id = server->backend_id;
			b = bpf_map_lookup_elem(&backends, &id);
			if (lb_backend_serves(b, vip_id) && b->cookie == server->cookie)
				return (int)(id << 8 | LB_REASON_FORWARDED_QUIC);
		}
	}
	quic_lb_cid_key(m->cid, len, (__u16)port, &m->fkey);
	m->hash = flow_hash(&m->fkey);
	if (client_chosen)
		return LB_REASON_FORWARDED_QUIC_NEW;
	return err == QUIC_LB_ROTATION ? LB_REASON_FORWARDED_QUIC_ROTATION :
					 LB_REASON_FORWARDED_QUIC_UNKNOWN;
}

/* The ring position quic_pick() left for a connection ID that names no backend. */
static __always_inline __u64 quic_picked_hash(void)
{
	struct quic_scratch *m;
	__u32 zero = 0;

	m = bpf_map_lookup_elem(&quic_scratch, &zero);
	return m ? m->hash : 0;
}

#endif /* LB_QUIC_CIPHERS_ONLY */

#endif /* RINGLB_LB_QUIC_H */
