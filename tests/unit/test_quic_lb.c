// SPDX-License-Identifier: GPL-2.0-only
/*
 * QUIC-LB connection IDs (bpf/lb_quic_lb.h through user/model/quic_lb.c):
 * the draft's own test vectors (draft-ietf-quic-load-balancers, appendix
 * "Load Balancer Test Vectors", and the worked four-pass example) made and
 * read; every length a configuration may have, plaintext and encrypted,
 * read back to the server id it was made with; the errors; the
 * configuration's text and the key file.
 * The vectors, and the two the draft misprints, are in
 * tests/lib/quic_lb_vectors.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "check.h"
#include "lb_quic_lb.h"
#include "quic_lb.h"
#include "quic_lb_vectors.h"
#include "testutil.h"

#define SEED 0x7175696320616c62ULL

/* The configuration and cipher of vector @v. */
static void vector_setup(const struct vector *v, struct lb_quic_lb *cfg, struct quic_lb_cipher *c)
{
	__u8 sid[32], nonce[32], key[LB_QUIC_LB_KEY_LEN];
	struct fault f = { 0 };

	memset(c, 0, sizeof(*c));
	cfg->rotation = v->rotation;
	cfg->sid_len = (__u8)unhex(v->sid, sid);
	cfg->nonce_len = (__u8)unhex(v->nonce, nonce);
	cfg->flags = v->key ? LB_QUIC_LB_ENCRYPTED : 0;
	if (v->key) {
		check_eq(quic_lb_key_parse(v->key, strlen(v->key), key), 0);
		check(quic_lb_cipher_init(c, key, &f) == 0, "cipher: %s", f.why);
	}
}

static void test_the_drafts_vectors_are_made_and_read(void **state)
{
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(vectors) / sizeof(vectors[0]); k++) {
		const struct vector *v = &vectors[k];
		__u8 sid[32], nonce[32], want[QUIC_LB_CID_MAX + 1], cid[QUIC_LB_CID_MAX];
		__u8 got[LB_QUIC_LB_SID_MAX];
		char text[2 * QUIC_LB_CID_MAX + 1];
		struct quic_lb_cipher c;
		struct lb_quic_lb cfg;
		size_t want_len;

		vector_setup(v, &cfg, &c);
		unhex(v->sid, sid);
		unhex(v->nonce, nonce);
		want_len = unhex(v->cid, want);
		check_eq(want_len, 1u + cfg.sid_len + cfg.nonce_len);
		check_eq(quic_lb_cid_make(&cfg, v->key ? &c : NULL, sid, nonce, cid), 0);
		hex_of(cid, want_len, text);
		check(!strcmp(text, v->cid), "vector %zu made %s, want %s", k, text, v->cid);
		check_eq(quic_lb_sid_of(&cfg, v->key ? &c : NULL, want, want_len, got), 0);
		hex_of(got, cfg.sid_len, text);
		check(!strcmp(text, v->sid), "vector %zu read server id %s, want %s", k, text,
		      v->sid);
		quic_lb_cipher_free(&c);
	}
}

static void test_the_drafts_misprinted_first_octet_is_another_rotation(void **state)
{
	const struct vector *v = &vectors[5];
	__u8 cid[QUIC_LB_CID_MAX + 1], sid[LB_QUIC_LB_SID_MAX];
	struct quic_lb_cipher c;
	struct lb_quic_lb cfg;
	size_t n;

	(void)state;
	vector_setup(v, &cfg, &c);
	n = unhex("125779c9cc86beb3a3a4a3ca96fce4bfe0cdbc", cid);
	check_eq(quic_lb_sid_of(&cfg, &c, cid, n, sid), QUIC_LB_ROTATION);
	quic_lb_cipher_free(&c);
}

/*
 * Every server id and nonce length a configuration may have, plaintext and
 * encrypted, under random keys: the server id read back is the one made; an
 * encrypted block is not the plaintext one; a connection ID one octet short,
 * or of another rotation, has no server id; octets after the block change
 * nothing.
 */
static void test_every_length_reads_back_its_server_id(void **state)
{
	struct test_rng rng = { SEED };
	unsigned int cases = 0;
	int sid_len, nonce_len, enc, round;

	(void)state;
	for (sid_len = LB_QUIC_LB_SID_MIN; sid_len <= LB_QUIC_LB_SID_MAX; sid_len++)
		for (nonce_len = LB_QUIC_LB_NONCE_MIN; sid_len + nonce_len <= LB_QUIC_LB_BLOCK_MAX;
		     nonce_len++)
			for (enc = 0; enc < 2; enc++)
				for (round = 0; round < 40; round++) {
					struct lb_quic_lb cfg = { (__u8)test_rng_below(&rng, 7),
								  (__u8)sid_len, (__u8)nonce_len,
								  enc ? LB_QUIC_LB_ENCRYPTED : 0 };
					__u8 key[16], sid[16], nonce[32], cid[QUIC_LB_CID_MAX + 4];
					__u8 got[LB_QUIC_LB_SID_MAX];
					struct quic_lb_cipher c = { 0 };
					struct fault f = { 0 };
					size_t len = 1 + (size_t)sid_len + (size_t)nonce_len;

					quic_lb_random_material(&rng, key, sid, nonce);
					check(quic_lb_cipher_init(&c, key, &f) == 0, "cipher: %s", f.why);
					memset(cid, 0xee, sizeof(cid));
					check_eq(quic_lb_cid_make(&cfg, &c, sid, nonce, cid), 0);
					check_eq(cid[0] >> 5, cfg.rotation);
					check_eq(cid[0] & 0x1f, sid_len + nonce_len);
					check_eq(cid[len], 0xee);
					if (enc)
						check(memcmp(cid + 1, sid, (size_t)sid_len) ||
						      memcmp(cid + 1 + sid_len, nonce, (size_t)nonce_len),
						      "sid %d nonce %d: the block left in the clear",
						      sid_len, nonce_len);
					else
						check(!memcmp(cid + 1, sid, (size_t)sid_len),
						      "plaintext: the server id not where it goes");
					check_eq(quic_lb_sid_of(&cfg, &c, cid, len + 3, got), 0);
					check(!memcmp(got, sid, (size_t)sid_len),
					      "sid %d nonce %d %s: the server id read back differs",
					      sid_len, nonce_len, enc ? "encrypted" : "plaintext");
					check_eq(quic_lb_sid_of(&cfg, &c, cid, len - 1, got),
						 QUIC_LB_SHORT);
					cid[0] ^= 0x20;
					check_eq(quic_lb_sid_of(&cfg, &c, cid, len, got),
						 QUIC_LB_ROTATION);
					quic_lb_cipher_free(&c);
					cases++;
				}
	check(cases > 5000, "only %u cases", cases);
}

struct config_case {
	const char *text;
	int ok;
	struct lb_quic_lb want;
	const char *key_path, *why; /* why: a word the refusal must say */
};

static const struct config_case config_cases[] = {
	{ "rotation=0,sid=3,nonce=4", 1, { 0, 3, 4, 0 }, "", NULL },
	{ "nonce=8,sid=8,rotation=6,key=/etc/k", 1, { 6, 8, 8, LB_QUIC_LB_ENCRYPTED }, "/etc/k",
	  NULL },
	{ "rotation=2,sid=15,nonce=4", 1, { 2, 15, 4, 0 }, "", NULL },
	{ "rotation=7,sid=3,nonce=4", 0, { 0 }, "", "unroutable" },
	{ "rotation=0,sid=0,nonce=4", 0, { 0 }, "", "server id length" },
	{ "rotation=0,sid=3,nonce=3", 0, { 0 }, "", "nonce length" },
	{ "rotation=0,sid=10,nonce=10", 0, { 0 }, "", "at most 19" },
	{ "rotation=0,sid=3", 0, { 0 }, "", "all needed" },
	{ "rotation=0,sid=3,nonce=4,sid=4", 0, { 0 }, "", "twice" },
	{ "rotation=0,sid=3,nonce=4,key=", 0, { 0 }, "", "no path" },
	{ "rotation=0,sid=3,nonce=4,mode=x", 0, { 0 }, "", "unknown field" },
	{ "rotation=-1,sid=3,nonce=4", 0, { 0 }, "", "rotation" },
	{ "", 0, { 0 }, "", "all needed" },
	{ "rotation=0,sid=3,nonce=4,x\n=1", 0, { 0 }, "", "control character" },
};

static void test_configurations_are_read_or_refused_in_one_line(void **state)
{
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(config_cases) / sizeof(config_cases[0]); k++) {
		const struct config_case *t = &config_cases[k];
		struct lb_quic_lb cfg;
		struct fault f = { 0 };
		char path[64];
		int err = quic_lb_config_parse(t->text, &cfg, path, sizeof(path), &f);

		if (t->ok) {
			check(err == 0, "'%s' refused: %s", t->text, f.why);
			check(!memcmp(&cfg, &t->want, sizeof(cfg)), "'%s': another configuration",
			      t->text);
			check(!strcmp(path, t->key_path), "'%s': key '%s'", t->text, path);
		} else {
			check(err == -EINVAL && f.class == FAULT_USAGE, "'%s' taken", t->text);
			check(strstr(f.why, t->why) && !strchr(f.why, '\n'),
			      "'%s': '%s' does not say '%s' in one line", t->text, f.why, t->why);
		}
	}
}

static void test_a_key_file_is_its_owners_alone(void **state)
{
	char dir[] = "/tmp/ringlb-quic-lb-XXXXXX", path[64];
	__u8 key[LB_QUIC_LB_KEY_LEN];
	struct fault f = { 0 };
	FILE *fp;

	(void)state;
	check(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/key", dir);
	fp = fopen(path, "w");
	check(fp != NULL, "create %s", path);
	fputs("8f95f09245765f80256934e50c66207f\n", fp);
	fclose(fp);
	chmod(path, 0644);
	check_eq(quic_lb_key_read(path, key, &f), -EPERM);
	check(strstr(f.why, "chmod 600") != NULL, "'%s'", f.why);
	chmod(path, 0600);
	fault_clear(&f);
	check(quic_lb_key_read(path, key, &f) == 0, "key: %s", f.why);
	check_eq(key[0], 0x8f);
	check_eq(key[15], 0x7f);
	fp = fopen(path, "w");
	fputs("8f95f09245765f80256934e50c66207", fp);
	fclose(fp);
	check_eq(quic_lb_key_read(path, key, &f), -EINVAL);
	fp = fopen(path, "w");
	fputs("8f95f09245765f80256934e50c66207g", fp);
	fclose(fp);
	check_eq(quic_lb_key_read(path, key, &f), -EINVAL);
	unlink(path);
	check_eq(quic_lb_key_read(path, key, &f), -ENOENT);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_drafts_vectors_are_made_and_read),
		cmocka_unit_test(test_the_drafts_misprinted_first_octet_is_another_rotation),
		cmocka_unit_test(test_every_length_reads_back_its_server_id),
		cmocka_unit_test(test_configurations_are_read_or_refused_in_one_line),
		cmocka_unit_test(test_a_key_file_is_its_owners_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
