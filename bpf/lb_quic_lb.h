/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * QUIC-LB connection IDs (draft-ietf-quic-load-balancers, the layout of
 * lb_contract.h): a server id read out of a connection ID, and written into
 * one. Shared word for word by the XDP program and the controller (lookup,
 * the servers' configuration, the tests), so both read the same server id
 * out of every connection ID.
 *
 * The includer first defines
 *   quic_lb_encrypt_block(ctx, in, out): AES-128-ECB encryption of the 16
 *       octets at @in into @out under the key @ctx stands for; 0 or negative
 *   quic_lb_decrypt_block(ctx, in, out): the same, decrypting (the
 *       single-pass case only)
 * For the program those are the kernel's crypto kfuncs; for the controller
 * OpenSSL's AES. Included without them, it gives only the errors,
 * quic_lb_cid_key() and quic_lb_config_ok(). Every loop has a constant bound
 * and every index is checked against its array, for the verifier. The
 * codec's buffers are a struct quic_lb_work the caller gives: the stack in
 * the controller, a per-CPU map value in the program (whose stack, with the
 * data path's, is too small for them; and the crypto kfuncs read and write
 * map memory only).
 */
#ifndef RINGLB_LB_QUIC_LB_H
#define RINGLB_LB_QUIC_LB_H

#include "lb_contract.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/** QUIC_LB_HALF_MAX - the longest half of a Feistel block: the block's length, halved, rounded up. */
#define QUIC_LB_HALF_MAX ((LB_QUIC_LB_BLOCK_MAX + 1) / 2)

/**
 * struct quic_lb_work - the codec's buffers.
 * @block: the block being read or made
 * @left: a Feistel block's left half
 * @right: its right half
 * @in: one AES block in
 * @out: one AES block out
 */
struct quic_lb_work {
	__u8 block[LB_QUIC_LB_BLOCK_MAX];
	__u8 left[QUIC_LB_HALF_MAX];
	__u8 right[QUIC_LB_HALF_MAX];
	__u8 in[16];
	__u8 out[16];
};

/* Why quic_lb_decode() found no server id (negative, as the program counts them). */
enum quic_lb_error {
	QUIC_LB_CONFIG = -1,   /* the configuration itself is out of the draft's bounds */
	QUIC_LB_SHORT = -2,    /* the connection ID is shorter than first octet + block */
	QUIC_LB_ROTATION = -3, /* its config rotation bits are not the configuration's */
	QUIC_LB_CRYPTO = -4,   /* the cipher failed */
};

/**
 * quic_lb_cid_key() - the flow key a connection ID is placed on the ring by,
 * when it names no server: its octets where a flow's addresses are (the
 * first 16, then the rest), its length in the pad, the VIP's @port, UDP, and
 * family LB_FAMILY_QUIC_CID, so it is no address flow's key. Its ring
 * position is SipHash of it under the deployment's key, like a flow's.
 * @cid: LB_QUIC_CID_MAX octets, zeros past @len
 */
static __always_inline void quic_lb_cid_key(const __u8 *cid, __u32 len, __u16 port,
					    struct lb_flow_key *key)
{
	__u32 i;

	for (i = 0; i < 16; i++)
		key->src_addr[i] = cid[i];
	for (i = 0; i < 16; i++)
		key->dst_addr[i] = i < LB_QUIC_CID_MAX - 16 ? cid[16 + i] : 0;
	key->src_port = 0;
	key->dst_port = port;
	key->protocol = 17; /* IPPROTO_UDP */
	key->family = LB_FAMILY_QUIC_CID;
	key->pad[0] = (__u8)len;
	key->pad[1] = 0;
}

/**
 * quic_lb_short_cid_len() - the length of the destination connection ID of a
 * short header whose connection ID starts with @first, under configuration
 * @c: the configuration's own (1 + server id + nonce) when @first carries its
 * config rotation; else the length @first describes (its low five bits, the
 * octets that follow it, as the draft's length self-description and its
 * unroutable rotation 7 have it) when that is 1 .. 19; else the
 * configuration's. A short header does not say its connection ID's length:
 * this is how the program and lookup both read it.
 */
static __always_inline __u32 quic_lb_short_cid_len(__u8 first, const struct lb_quic_lb *c)
{
	__u32 self = first & 0x1f;

	if ((first >> 5) != c->rotation && self >= 1 && self <= LB_QUIC_LB_BLOCK_MAX)
		return 1 + self;
	return 1 + (__u32)c->sid_len + c->nonce_len;
}

/** quic_lb_config_ok() - is @c within the draft's bounds (and ours: known flags only)? */
static __always_inline int quic_lb_config_ok(const struct lb_quic_lb *c)
{
	return c->rotation < LB_QUIC_LB_UNROUTABLE && c->sid_len >= LB_QUIC_LB_SID_MIN &&
	       c->sid_len <= LB_QUIC_LB_SID_MAX && c->nonce_len >= LB_QUIC_LB_NONCE_MIN &&
	       c->sid_len + c->nonce_len <= LB_QUIC_LB_BLOCK_MAX &&
	       !(c->flags & ~LB_QUIC_LB_ENCRYPTED);
}

#ifdef quic_lb_encrypt_block

/*
 * One pass of the four-pass network: @out ^= the first half of
 * AES(expand(@len, @pass, @in)), where expand() is @in's half, zeros, then
 * the block's length and the pass number as the last two octets.
 */
static __always_inline int quic_lb_pass(void *ctx, struct quic_lb_work *w, __u32 len, __u8 pass,
					const __u8 *in, __u8 *out)
{
	__u32 half = (len + 1) / 2, i;

	for (i = 0; i < 16; i++)
		w->in[i] = i < half && i < QUIC_LB_HALF_MAX ? in[i] : 0;
	w->in[14] = (__u8)len;
	w->in[15] = pass;
	if (quic_lb_encrypt_block(ctx, w->in, w->out))
		return QUIC_LB_CRYPTO;
	for (i = 0; i < QUIC_LB_HALF_MAX; i++)
		if (i < half)
			out[i] ^= w->out[i];
	return 0;
}

/* An odd block's halves share its middle octet: the left keeps its high nibble, the right its low. */
static __always_inline void quic_lb_clear_left(__u8 *left, __u32 len)
{
	__u32 last = (len + 1) / 2 - 1, i;

	/*
	 * Constant indices: clang hoists left + last above a bounds check, and
	 * the verifier refuses that pointer when last is out of range.
	 */
	for (i = 0; i < QUIC_LB_HALF_MAX; i++)
		if ((len & 1) && i == last)
			left[i] &= 0xf0;
}

static __always_inline void quic_lb_clear_right(__u8 *right, __u32 len)
{
	if (len & 1)
		right[0] &= 0x0f;
}

/* The block @p of @len octets as its two halves (an odd one's middle octet in both). */
static __always_inline void quic_lb_split(const __u8 *p, __u32 len, __u8 *left, __u8 *right)
{
	__u32 half = (len + 1) / 2, i, j;

	for (i = 0; i < QUIC_LB_HALF_MAX; i++) {
		j = len / 2 + i;
		left[i] = i < half ? p[i] : 0;
		right[i] = i < half && j < LB_QUIC_LB_BLOCK_MAX ? p[j] : 0;
	}
	quic_lb_clear_left(left, len);
	quic_lb_clear_right(right, len);
}

/* The halves made one block of @len octets again. */
static __always_inline void quic_lb_join(const __u8 *left, const __u8 *right, __u32 len, __u8 *p)
{
	__u32 half = (len + 1) / 2, i, j;

	for (i = 0; i < LB_QUIC_LB_BLOCK_MAX; i++) {
		if (i >= len)
			break;
		if (!(len & 1)) {
			j = i - half;
			p[i] = i < half ? left[i] : j < QUIC_LB_HALF_MAX ? right[j] : 0;
		} else if (i + 1 < half) {
			p[i] = left[i];
		} else if (i + 1 == half) {
			p[i] = (__u8)((left[i] & 0xf0) | (right[0] & 0x0f));
		} else {
			j = i - half + 1;
			p[i] = j < QUIC_LB_HALF_MAX ? right[j] : 0;
		}
	}
}

/*
 * Passes @from to @to of the network, counting up (encoding) or down
 * (decoding): an odd pass reads the left half and changes the right, an
 * even one the other way round.
 */
static __always_inline int quic_lb_passes(void *ctx, struct quic_lb_work *w, __u32 len, int from,
					  int to)
{
	int step = from <= to ? 1 : -1, k, p;

	for (k = 0; k < 4; k++) {
		p = from + k * step;
		if (k > (to - from) * step)
			break;
		if (p & 1) {
			if (quic_lb_pass(ctx, w, len, (__u8)p, w->left, w->right))
				return QUIC_LB_CRYPTO;
			quic_lb_clear_right(w->right, len);
		} else {
			if (quic_lb_pass(ctx, w, len, (__u8)p, w->right, w->left))
				return QUIC_LB_CRYPTO;
			quic_lb_clear_left(w->left, len);
		}
	}
	return 0;
}

/*
 * Decoding in steps, so that the program can take each AES block in a frame
 * of its own (bpf/lb_quic.h): quic_lb_decode_begin(), then
 * quic_lb_decode_steps() of quic_lb_decode_step(), then quic_lb_decode_end().
 * quic_lb_decode() is the three in a row.
 */

/*
 * quic_lb_decode_begin() - check @cid (@cid_len octets) against @cfg and
 * take its block into @w (a four-pass block split into its halves).
 * Return: 0, or a negative enum quic_lb_error.
 */
static __always_inline int quic_lb_decode_begin(const struct lb_quic_lb *cfg,
						struct quic_lb_work *w, const __u8 *cid,
						__u32 cid_len)
{
	__u32 len = (__u32)cfg->sid_len + cfg->nonce_len, i;

	if (!quic_lb_config_ok(cfg))
		return QUIC_LB_CONFIG;
	if (cid_len < 1 + len)
		return QUIC_LB_SHORT;
	if (cid[0] >> 5 != cfg->rotation)
		return QUIC_LB_ROTATION;
	for (i = 0; i < LB_QUIC_LB_BLOCK_MAX; i++)
		w->block[i] = i < len ? cid[1 + i] : 0;
	if ((cfg->flags & LB_QUIC_LB_ENCRYPTED) && len != LB_QUIC_LB_SINGLE_PASS)
		quic_lb_split(w->block, len, w->left, w->right);
	return 0;
}

/*
 * quic_lb_decode_steps() - the AES blocks @cfg's decoding takes: none in
 * plaintext, one for a single pass, and for the four-pass network passes 4,
 * 3 and 2 back, and 1 too when the server id reaches past the left half's
 * whole octets (half of them, less the one an odd block's halves share).
 */
static __always_inline __u32 quic_lb_decode_steps(const struct lb_quic_lb *cfg)
{
	__u32 len = (__u32)cfg->sid_len + cfg->nonce_len, half = (len + 1) / 2;

	if (!(cfg->flags & LB_QUIC_LB_ENCRYPTED))
		return 0;
	if (len == LB_QUIC_LB_SINGLE_PASS)
		return 1;
	return cfg->sid_len > half - (len & 1) ? 4 : 3;
}

/*
 * quic_lb_decode_step() - step @k (from 0) of quic_lb_decode_steps(): the
 * single pass, or pass 4 - @k of the network, backwards.
 * Return: 0, or QUIC_LB_CRYPTO.
 */
static __always_inline int quic_lb_decode_step(const struct lb_quic_lb *cfg, void *ctx,
					       struct quic_lb_work *w, __u32 k)
{
	__u32 len = (__u32)cfg->sid_len + cfg->nonce_len, i;
	__u8 p = (__u8)(4 - k);

	if (len == LB_QUIC_LB_SINGLE_PASS) {
		for (i = 0; i < 16; i++)
			w->in[i] = w->block[i];
		if (quic_lb_decrypt_block(ctx, w->in, w->out))
			return QUIC_LB_CRYPTO;
		for (i = 0; i < 16; i++)
			w->block[i] = w->out[i];
		return 0;
	}
	/* An odd pass reads the left half and changes the right, an even one the other way. */
	if (p & 1) {
		if (quic_lb_pass(ctx, w, len, p, w->left, w->right))
			return QUIC_LB_CRYPTO;
		quic_lb_clear_right(w->right, len);
	} else {
		if (quic_lb_pass(ctx, w, len, p, w->right, w->left))
			return QUIC_LB_CRYPTO;
		quic_lb_clear_left(w->left, len);
	}
	return 0;
}

/*
 * quic_lb_decode_end() - the server id out of @w after the steps (a
 * four-pass block's halves joined first).
 * @sid: LB_QUIC_LB_SID_MAX octets; the first @cfg->sid_len are the answer
 */
static __always_inline void quic_lb_decode_end(const struct lb_quic_lb *cfg,
					       struct quic_lb_work *w, __u8 *sid)
{
	__u32 len = (__u32)cfg->sid_len + cfg->nonce_len, i;

	if ((cfg->flags & LB_QUIC_LB_ENCRYPTED) && len != LB_QUIC_LB_SINGLE_PASS)
		quic_lb_join(w->left, w->right, len, w->block);
	for (i = 0; i < LB_QUIC_LB_SID_MAX; i++)
		sid[i] = i < cfg->sid_len ? w->block[i] : 0;
}

/**
 * quic_lb_decode() - the server id in connection ID @cid (@cid_len octets)
 * under configuration @cfg, whose key @ctx stands for (unused for plaintext).
 * @w: the buffers
 * @sid: LB_QUIC_LB_SID_MAX octets; the first @cfg->sid_len are the answer,
 *       the rest zero (all zero on an error)
 *
 * A block of 16 octets is one AES block; any other encrypted block takes
 * three passes of the Feistel network back, and a fourth when the server id
 * reaches past the left half's whole octets.
 *
 * Return: 0, or a negative enum quic_lb_error.
 */
static __always_inline int quic_lb_decode(const struct lb_quic_lb *cfg, void *ctx,
					  struct quic_lb_work *w, const __u8 *cid, __u32 cid_len,
					  __u8 *sid)
{
	__u32 steps, k, i;
	int err;

	for (i = 0; i < LB_QUIC_LB_SID_MAX; i++)
		sid[i] = 0;
	err = quic_lb_decode_begin(cfg, w, cid, cid_len);
	if (err)
		return err;
	steps = quic_lb_decode_steps(cfg);
	for (k = 0; k < 4; k++) {
		if (k >= steps)
			break;
		err = quic_lb_decode_step(cfg, ctx, w, k);
		if (err)
			return err;
	}
	quic_lb_decode_end(cfg, w, sid);
	return 0;
}

/**
 * quic_lb_encode() - the connection ID a server of configuration @cfg makes
 * from server id @sid and nonce @nonce (@cfg->sid_len and @cfg->nonce_len
 * octets), its first octet's low five bits @low5 (the length of what
 * follows, when the server describes it, or random bits).
 * @w: the buffers
 * @cid: 1 + sid_len + nonce_len octets
 *
 * Return: 0, or a negative enum quic_lb_error.
 */
static __always_inline int quic_lb_encode(const struct lb_quic_lb *cfg, void *ctx,
					  struct quic_lb_work *w, const __u8 *sid, const __u8 *nonce,
					  __u8 low5, __u8 *cid)
{
	__u32 len = (__u32)cfg->sid_len + cfg->nonce_len, i;

	if (!quic_lb_config_ok(cfg))
		return QUIC_LB_CONFIG;
	for (i = 0; i < LB_QUIC_LB_BLOCK_MAX; i++)
		w->block[i] = i < cfg->sid_len ? sid[i] : i < len ? nonce[i - cfg->sid_len] : 0;
	if (!(cfg->flags & LB_QUIC_LB_ENCRYPTED)) {
		/* block as it is */
	} else if (len == LB_QUIC_LB_SINGLE_PASS) {
		for (i = 0; i < 16; i++)
			w->in[i] = w->block[i];
		if (quic_lb_encrypt_block(ctx, w->in, w->out))
			return QUIC_LB_CRYPTO;
		for (i = 0; i < 16; i++)
			w->block[i] = w->out[i];
	} else {
		quic_lb_split(w->block, len, w->left, w->right);
		if (quic_lb_passes(ctx, w, len, 1, 4))
			return QUIC_LB_CRYPTO;
		quic_lb_join(w->left, w->right, len, w->block);
	}
	cid[0] = (__u8)(cfg->rotation << 5 | (low5 & 0x1f));
	for (i = 0; i < LB_QUIC_LB_BLOCK_MAX; i++)
		if (i < len)
			cid[1 + i] = w->block[i];
	return 0;
}

#endif /* quic_lb_encrypt_block */

#endif /* RINGLB_LB_QUIC_LB_H */
