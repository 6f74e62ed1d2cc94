// SPDX-License-Identifier: GPL-2.0-only
/*
 * QUIC-LB connection IDs read in the kernel (tests/prog/bpf/quic_lb_codec.bpf.c:
 * bpf/lb_quic_lb.h over the BPF crypto kfuncs, AES-128-ECB): the draft's
 * test vectors give the draft's server ids, and on random configurations,
 * keys and connection IDs (made by a server, or any octets at all) the
 * kernel answers as the controller's decoder (user/model/quic_lb.c, over
 * OpenSSL) does, error for error and octet for octet.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "prog.h"
#include "lb_quic_lb.h"
#include "quic_lb.h"
#include "quic_lb_vectors.h"
#include "testutil.h"
#include "quic_lb_codec.skel.h"

#define QUIC_SEED 0x6b65726e656c7162ULL
/* Random cases against the controller's decoder. */
#define RANDOM_CASES 3000

/* The kernel's cipher made from @key (the syscall program). */
static void kernel_key(struct quic_lb_codec_bpf *skel, const __u8 *key)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);

	memcpy(skel->bss->key, key, LB_QUIC_LB_KEY_LEN);
	check(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.quic_lb_setup), &o) == 0,
	      "run quic_lb_setup: %s", strerror(errno));
	check(skel->bss->setup_err == 0, "bpf_crypto_ctx_create: %d", skel->bss->setup_err);
}

/* The kernel's answer for @cid (@len octets) under @cfg: its error, its server id into @sid. */
static int kernel_read(struct quic_lb_codec_bpf *skel, const struct lb_quic_lb *cfg,
		       const __u8 *cid, size_t len, __u8 *sid, __u32 repeat, __u32 *ns)
{
	unsigned char frame[64] = { 0 };

	skel->bss->config = *cfg;
	memset(skel->bss->cid, 0, sizeof(skel->bss->cid));
	memcpy(skel->bss->cid, cid, len);
	skel->bss->cid_len = (__u32)len;
	check_eq(harness_run(bpf_program__fd(skel->progs.quic_lb_read), frame, sizeof(frame), NULL,
			     NULL, repeat, ns),
		 XDP_PASS);
	memcpy(sid, skel->bss->sid, LB_QUIC_LB_SID_MAX);
	return skel->bss->read_err;
}

static void test_the_kernel_reads_the_drafts_vectors(void **state)
{
	struct quic_lb_codec_bpf *skel;
	size_t k;

	(void)state;
	NEEDS_ROOT();
	skel = quic_lb_codec_bpf__open_and_load();
	check(skel != NULL, "load quic_lb_codec: %s", strerror(errno));
	for (k = 0; k < QUIC_LB_VECTORS; k++) {
		const struct vector *v = &vectors[k];
		__u8 sid[32], nonce[32], cid[QUIC_LB_CID_MAX + 1], got[LB_QUIC_LB_SID_MAX];
		__u8 key[LB_QUIC_LB_KEY_LEN];
		char text[2 * QUIC_LB_CID_MAX + 1];
		struct lb_quic_lb cfg = { .rotation = v->rotation };
		size_t len;
		__u32 ns;

		cfg.sid_len = (__u8)unhex(v->sid, sid);
		cfg.nonce_len = (__u8)unhex(v->nonce, nonce);
		cfg.flags = v->key ? LB_QUIC_LB_ENCRYPTED : 0;
		if (v->key) {
			unhex(v->key, key);
			kernel_key(skel, key);
		}
		len = unhex(v->cid, cid);
		check_eq(kernel_read(skel, &cfg, cid, len, got, 1000, &ns), 0);
		hex_of(got, cfg.sid_len, text);
		check(!strcmp(text, v->sid), "vector %zu: the kernel read %s, want %s", k, text, v->sid);
		printf("quic-lb vector %zu (%s, %u + %u octets): server id %s, %u ns a read\n", k,
		       !v->key ? "plaintext" :
		       cfg.sid_len + cfg.nonce_len == LB_QUIC_LB_SINGLE_PASS ? "single pass" :
									       "four passes",
		       cfg.sid_len, cfg.nonce_len, text, ns);
	}
	quic_lb_codec_bpf__destroy(skel);
}

static void test_the_kernel_reads_as_the_controller_does(void **state)
{
	struct test_rng rng = { QUIC_SEED };
	struct quic_lb_codec_bpf *skel;
	unsigned int made = 0, decoded = 0, refused = 0;
	int k;

	(void)state;
	NEEDS_ROOT();
	skel = quic_lb_codec_bpf__open_and_load();
	check(skel != NULL, "load quic_lb_codec: %s", strerror(errno));
	for (k = 0; k < RANDOM_CASES; k++) {
		struct lb_quic_lb cfg = { (__u8)test_rng_below(&rng, 8),
					  (__u8)(1 + test_rng_below(&rng, LB_QUIC_LB_SID_MAX)), 0,
					  (__u8)test_rng_below(&rng, 2) };
		__u8 key[LB_QUIC_LB_KEY_LEN], sid[16], nonce[32], cid[QUIC_LB_CID_MAX];
		__u8 want[LB_QUIC_LB_SID_MAX], got[LB_QUIC_LB_SID_MAX];
		struct quic_lb_cipher c;
		struct fault f = { 0 };
		int want_err, got_err, i;
		size_t len;

		cfg.nonce_len = (__u8)(LB_QUIC_LB_NONCE_MIN +
				       test_rng_below(&rng, LB_QUIC_LB_BLOCK_MAX - cfg.sid_len -
								    LB_QUIC_LB_NONCE_MIN + 1));
		/* One case in ten outside the draft's bounds: both must refuse it. */
		if (test_rng_below(&rng, 10) == 0)
			cfg.nonce_len = (__u8)test_rng_below(&rng, 24);
		quic_lb_random_material(&rng, key, sid, nonce);
		check(quic_lb_cipher_init(&c, key, &f) == 0, "cipher: %s", f.why);
		if (cfg.flags)
			kernel_key(skel, key);
		/* Half made by a server of this configuration, half any octets at all. */
		if (k & 1 && quic_lb_config_ok(&cfg)) {
			check_eq(quic_lb_cid_make(&cfg, &c, sid, nonce, cid), 0);
			len = 1u + cfg.sid_len + cfg.nonce_len;
			made++;
		} else {
			for (i = 0; i < QUIC_LB_CID_MAX; i++)
				cid[i] = (__u8)test_rng_next(&rng);
			len = test_rng_below(&rng, QUIC_LB_CID_MAX + 1);
		}
		memset(want, 0, sizeof(want));
		want_err = quic_lb_sid_of(&cfg, &c, cid, len, want);
		got_err = kernel_read(skel, &cfg, cid, len, got, 1, NULL);
		check(got_err == want_err,
		      "case %d (rotation %u, %u + %u octets, %s, %zu octets): the kernel says %d, "
		      "the controller %d",
		      k, cfg.rotation, cfg.sid_len, cfg.nonce_len, cfg.flags ? "encrypted" : "plaintext",
		      len, got_err, want_err);
		if (!want_err) {
			check(!memcmp(got, want, cfg.sid_len), "case %d: another server id", k);
			if (k & 1 && quic_lb_config_ok(&cfg))
				check(!memcmp(got, sid, cfg.sid_len), "case %d: not the server's id", k);
			decoded++;
		} else {
			refused++;
		}
		quic_lb_cipher_free(&c);
	}
	printf("quic-lb: %d cases, kernel = controller on all (%u server-made, %u read, %u "
	       "refused alike)\n",
	       RANDOM_CASES, made, decoded, refused);
	quic_lb_codec_bpf__destroy(skel);
}

HARNESS_GROUP(quic_lb,
	cmocka_unit_test(test_the_kernel_reads_the_drafts_vectors),
	cmocka_unit_test(test_the_kernel_reads_as_the_controller_does));
