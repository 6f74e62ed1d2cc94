// SPDX-License-Identifier: GPL-2.0-only
/*
 * The keys of QUIC-LB VIPs, made where only a sleepable program may make
 * them: the controller runs quic_cipher_set (BPF_PROG_TEST_RUN of a syscall
 * program) with a struct lb_quic_cipher_set, and it makes the kernel's
 * AES-128-ECB context of the key (bpf_crypto_ctx_create(), "skcipher",
 * "ecb(aes)") and puts it in its slot of map "quic_ciphers", where the data
 * path reads it (bpf/lb_quic.h), or empties the slot. The context the slot
 * held before is released: the kernel frees it after the packets that may
 * still use it (RCU).
 *
 * The loader hands it the data path's map (bpf_map__reuse_fd()), so this
 * object never pins or creates one of its own.
 */
#define LB_QUIC_CIPHERS_ONLY
#define LB_MAPS_PRIVATE
#include "lb_quic.h"

char LICENSE[] SEC("license") = "GPL";

SEC("syscall")
int quic_cipher_set(struct lb_quic_cipher_set *args)
{
	struct bpf_crypto_params params = { .type = "skcipher", .algo = "ecb(aes)",
					    .key_len = LB_QUIC_LB_KEY_LEN };
	struct bpf_crypto_ctx *c = NULL, *old;
	struct lb_quic_cipher_slot *slot;
	__u32 index = args->slot;
	int err = 0;

	slot = bpf_map_lookup_elem(&quic_ciphers, &index);
	if (!slot) {
		args->err = -22; /* -EINVAL: no such slot */
		return 0;
	}
	if (args->op) {
		__builtin_memcpy(params.key, args->key, LB_QUIC_LB_KEY_LEN);
		c = bpf_crypto_ctx_create(&params, sizeof(params), &err);
		if (!c) {
			args->err = err ? err : -22;
			return 0;
		}
	}
	old = bpf_kptr_xchg(&slot->cipher, c);
	if (old)
		bpf_crypto_ctx_release(old);
	slot->key_digest = args->op ? args->key_digest : 0;
	args->err = 0;
	/* The context goes back to the caller: it takes no copy of the key with it. */
	__builtin_memset(args->key, 0, LB_QUIC_LB_KEY_LEN);
	__builtin_memset(params.key, 0, LB_QUIC_LB_KEY_LEN);
	return 0;
}
