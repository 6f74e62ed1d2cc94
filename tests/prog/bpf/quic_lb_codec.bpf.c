// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf/lb_quic_lb.h in the kernel: a test program that reads the server id
 * out of a connection ID with the BPF crypto kfuncs as the cipher, as the
 * data path will. quic_lb_setup (a syscall program, which may sleep) makes
 * the AES-128-ECB context from the key the test wrote and keeps it in a map;
 * quic_lb_read (XDP) decodes the test's connection ID under the test's
 * configuration with it, one AES block at a time through a per-CPU scratch
 * block (the kfuncs take dynptrs of map memory).
 */
/* The data path's kfunc declarations and key slots (map quic_ciphers, slot 0 here). */
#define LB_QUIC_CIPHERS_ONLY
#define LB_MAPS_PRIVATE
#include "lb_quic.h"

char LICENSE[] SEC("license") = "GPL";

struct scratch_block {
	__u8 in[16];
	__u8 out[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch_block);
} scratch SEC(".maps");

/* One block through the kernel's cipher: @in to @out, encrypting or not. */
static __always_inline int kernel_block(struct bpf_crypto_ctx *c, const __u8 *in, __u8 *out,
					int enc)
{
	struct bpf_dynptr src, dst;
	struct scratch_block *b;
	__u32 zero = 0;
	int i, err;

	b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b || !c)
		return -1;
	for (i = 0; i < 16; i++)
		b->in[i] = in[i];
	bpf_dynptr_from_mem(b->in, sizeof(b->in), 0, &src);
	bpf_dynptr_from_mem(b->out, sizeof(b->out), 0, &dst);
	err = enc ? bpf_crypto_encrypt(c, &src, &dst, NULL) : bpf_crypto_decrypt(c, &src, &dst, NULL);
	if (err)
		return err;
	for (i = 0; i < 16; i++)
		out[i] = b->out[i];
	return 0;
}

#define quic_lb_encrypt_block(ctx, in, out) kernel_block(ctx, in, out, 1)
#define quic_lb_decrypt_block(ctx, in, out) kernel_block(ctx, in, out, 0)
#include "lb_quic_lb.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct quic_lb_work);
} work SEC(".maps");

/* Written by the test. */
__u8 key[LB_QUIC_LB_KEY_LEN];
struct lb_quic_lb config;
__u8 cid[1 + LB_QUIC_LB_BLOCK_MAX];
__u32 cid_len;

/* Read by the test. */
int setup_err;
int read_err;
__u8 sid[LB_QUIC_LB_SID_MAX];

SEC("syscall")
int quic_lb_setup(void *args)
{
	struct bpf_crypto_params params = { .type = "skcipher", .algo = "ecb(aes)",
					    .key_len = LB_QUIC_LB_KEY_LEN };
	struct bpf_crypto_ctx *c, *old;
	struct lb_quic_cipher_slot *slot;
	__u32 zero = 0;
	int err = 0;

	(void)args;
	__builtin_memcpy(params.key, key, LB_QUIC_LB_KEY_LEN);
	c = bpf_crypto_ctx_create(&params, sizeof(params), &err);
	if (!c) {
		setup_err = err ? err : -1;
		return 0;
	}
	slot = bpf_map_lookup_elem(&quic_ciphers, &zero);
	if (!slot) {
		bpf_crypto_ctx_release(c);
		setup_err = -2;
		return 0;
	}
	old = bpf_kptr_xchg(&slot->cipher, c);
	if (old)
		bpf_crypto_ctx_release(old);
	setup_err = 0;
	return 0;
}

SEC("xdp")
int quic_lb_read(struct xdp_md *xdp)
{
	struct lb_quic_lb cfg = config;
	struct lb_quic_cipher_slot *slot;
	struct quic_lb_work *w;
	__u8 got[LB_QUIC_LB_SID_MAX];
	__u32 zero = 0, len = cid_len;
	int i;

	(void)xdp;
	slot = bpf_map_lookup_elem(&quic_ciphers, &zero);
	if (!slot)
		return XDP_ABORTED;
	if (len > sizeof(cid))
		len = sizeof(cid);
	w = bpf_map_lookup_elem(&work, &zero);
	if (!w)
		return XDP_ABORTED;
	read_err = quic_lb_decode(&cfg, slot->cipher, w, cid, len, got);
	for (i = 0; i < LB_QUIC_LB_SID_MAX; i++)
		sid[i] = got[i];
	return XDP_PASS;
}
