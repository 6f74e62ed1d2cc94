// SPDX-License-Identifier: GPL-2.0-only
/*
 * QUIC-LB configurations, keys and connection IDs on the controller's side
 * (quic_lb.h): the text operators write, the key file, and
 * bpf/lb_quic_lb.h's codec over OpenSSL's AES-128-ECB (one block at a time,
 * no padding), so lookup reads the server id the kernel reads.
 */
#include "quic_lb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "addr.h"
#include "ring.h"

/* The codec's cipher: @ctx is a struct quic_lb_cipher. */
static int aes_block(void *ctx, const __u8 *in, __u8 *out, int enc)
{
	struct quic_lb_cipher *c = ctx;
	EVP_CIPHER_CTX *e = c ? (enc ? c->enc : c->dec) : NULL;
	int n = 0;

	if (!e || !EVP_CipherUpdate(e, out, &n, in, 16) || n != 16)
		return -1;
	return 0;
}

#define quic_lb_encrypt_block(ctx, in, out) aes_block(ctx, in, out, 1)
#define quic_lb_decrypt_block(ctx, in, out) aes_block(ctx, in, out, 0)
#include "lb_quic_lb.h"

/* A "name=value" field of the configuration: which one, and where its value starts. */
static int field_take(char *field, const char *name, char **value)
{
	size_t n = strlen(name);

	if (strncmp(field, name, n) || field[n] != '=')
		return 0;
	*value = field + n + 1;
	return 1;
}

int quic_lb_config_parse(const char *text, struct lb_quic_lb *cfg, char *key_path,
			 size_t key_path_len, struct fault *f)
{
	char buf[QUIC_LB_TEXT_MAX], *field, *value, *save = NULL;
	int have_rotation = 0, have_sid = 0, have_nonce = 0, have_key = 0;
	const char *why;
	__u32 n;

	memset(cfg, 0, sizeof(*cfg));
	if (key_path_len)
		key_path[0] = 0;
	if (strlen(text) >= sizeof(buf))
		return fault_set(f, FAULT_USAGE, -EINVAL, "QUIC-LB configuration too long");
	/* The refusals quote the text: nothing in it may break their one line. */
	for (value = (char *)text; *value; value++)
		if ((unsigned char)*value < 0x20 || *value == 0x7f)
			return fault_set(f, FAULT_USAGE, -EINVAL,
					 "QUIC-LB configuration: a control character at offset %zu",
					 (size_t)(value - text));
	strcpy(buf, text);
	for (field = strtok_r(buf, ",", &save); field; field = strtok_r(NULL, ",", &save)) {
		if (field_take(field, "rotation", &value)) {
			if (have_rotation++)
				goto twice;
			if (number_parse(value, 0, LB_QUIC_LB_UNROUTABLE - 1, &n, &why))
				return fault_set(f, FAULT_USAGE, -EINVAL,
						 "QUIC-LB rotation '%s': %s (0 .. %d; %d is the draft's "
						 "unroutable one)",
						 value, why, LB_QUIC_LB_UNROUTABLE - 1,
						 LB_QUIC_LB_UNROUTABLE);
			cfg->rotation = (__u8)n;
		} else if (field_take(field, "sid", &value)) {
			if (have_sid++)
				goto twice;
			if (number_parse(value, LB_QUIC_LB_SID_MIN, LB_QUIC_LB_SID_MAX, &n, &why))
				return fault_set(f, FAULT_USAGE, -EINVAL,
						 "QUIC-LB server id length '%s': %s (%d .. %d octets)",
						 value, why, LB_QUIC_LB_SID_MIN, LB_QUIC_LB_SID_MAX);
			cfg->sid_len = (__u8)n;
		} else if (field_take(field, "nonce", &value)) {
			if (have_nonce++)
				goto twice;
			if (number_parse(value, LB_QUIC_LB_NONCE_MIN,
					 LB_QUIC_LB_BLOCK_MAX - LB_QUIC_LB_SID_MIN, &n, &why))
				return fault_set(f, FAULT_USAGE, -EINVAL,
						 "QUIC-LB nonce length '%s': %s (%d .. %d octets)", value,
						 why, LB_QUIC_LB_NONCE_MIN,
						 LB_QUIC_LB_BLOCK_MAX - LB_QUIC_LB_SID_MIN);
			cfg->nonce_len = (__u8)n;
		} else if (field_take(field, "key", &value)) {
			if (have_key++)
				goto twice;
			if (!*value || strlen(value) >= key_path_len)
				return fault_set(f, FAULT_USAGE, -EINVAL,
						 "QUIC-LB key file: %s", *value ? "path too long" :
										  "no path");
			strcpy(key_path, value);
			cfg->flags |= LB_QUIC_LB_ENCRYPTED;
		} else {
			return fault_set(f, FAULT_USAGE, -EINVAL,
					 "QUIC-LB configuration: unknown field '%s' (rotation=R,sid=S,"
					 "nonce=N[,key=FILE])",
					 field);
		}
	}
	if (!have_rotation || !have_sid || !have_nonce)
		return fault_set(f, FAULT_USAGE, -EINVAL,
				 "QUIC-LB configuration '%s': rotation, sid and nonce are all needed "
				 "(rotation=R,sid=S,nonce=N[,key=FILE])",
				 text);
	if (cfg->sid_len + cfg->nonce_len > LB_QUIC_LB_BLOCK_MAX)
		return fault_set(f, FAULT_USAGE, -EINVAL,
				 "QUIC-LB server id and nonce of %u octets together: at most %d "
				 "(connection IDs of 20 octets)",
				 cfg->sid_len + cfg->nonce_len, LB_QUIC_LB_BLOCK_MAX);
	return 0;
twice:
	return fault_set(f, FAULT_USAGE, -EINVAL, "QUIC-LB configuration: '%s' given twice",
			 field);
}

int quic_lb_key_parse(const char *text, size_t len, __u8 key[LB_QUIC_LB_KEY_LEN])
{
	size_t i;

	if (len == 2 * LB_QUIC_LB_KEY_LEN + 1 && text[len - 1] == '\n')
		len--;
	if (len != 2 * LB_QUIC_LB_KEY_LEN)
		return -EINVAL;
	for (i = 0; i < LB_QUIC_LB_KEY_LEN; i++) {
		int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		key[i] = (__u8)(hi << 4 | lo);
	}
	return 0;
}

int quic_lb_key_read(const char *path, __u8 key[LB_QUIC_LB_KEY_LEN], struct fault *f)
{
	char text[2 * LB_QUIC_LB_KEY_LEN + 2];
	struct stat st;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return fault_errno(f, FAULT_STATE, -errno, "QUIC-LB key file %s", path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		return fault_set(f, FAULT_STATE, -EPERM,
				 "QUIC-LB key file %s is not a regular file readable by its owner "
				 "alone; chmod 600 it",
				 path);
	}
	n = read(fd, text, sizeof(text));
	close(fd);
	err = n < 0 || quic_lb_key_parse(text, (size_t)n, key);
	/* The key's only copy past this call is @key. */
	explicit_bzero(text, sizeof(text));
	if (err)
		return fault_set(f, FAULT_STATE, -EINVAL,
				 "QUIC-LB key file %s must hold 32 hex digits (16 octets)", path);
	return 0;
}

int quic_lb_cipher_init(struct quic_lb_cipher *c, const __u8 key[LB_QUIC_LB_KEY_LEN],
			struct fault *f)
{
	EVP_CIPHER_CTX *ctx[2];
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < 2; i++) {
		ctx[i] = EVP_CIPHER_CTX_new();
		if (!ctx[i] || !EVP_CipherInit_ex(ctx[i], EVP_aes_128_ecb(), NULL, key, NULL, !i) ||
		    !EVP_CIPHER_CTX_set_padding(ctx[i], 0)) {
			EVP_CIPHER_CTX_free(ctx[i]);
			if (i)
				EVP_CIPHER_CTX_free(ctx[0]);
			return fault_set(f, FAULT_STATE, -ENOMEM, "AES-128-ECB: OpenSSL refused");
		}
	}
	c->enc = ctx[0];
	c->dec = ctx[1];
	return 0;
}

void quic_lb_cipher_free(struct quic_lb_cipher *c)
{
	EVP_CIPHER_CTX_free(c->enc);
	EVP_CIPHER_CTX_free(c->dec);
	c->enc = c->dec = NULL;
}

int quic_lb_sid_of(const struct lb_quic_lb *cfg, struct quic_lb_cipher *c, const __u8 *cid,
		   size_t len, __u8 *sid)
{
	struct quic_lb_work w;

	return quic_lb_decode(cfg, c, &w, cid, len > QUIC_LB_CID_MAX ? QUIC_LB_CID_MAX : (__u32)len,
			      sid);
}

int quic_lb_cid_make(const struct lb_quic_lb *cfg, struct quic_lb_cipher *c, const __u8 *sid,
		     const __u8 *nonce, __u8 *cid)
{
	struct quic_lb_work w;

	return quic_lb_encode(cfg, c, &w, sid, nonce, (__u8)(cfg->sid_len + cfg->nonce_len), cid);
}

__u64 quic_lb_key_digest(const __u8 key[LB_QUIC_LB_KEY_LEN])
{
	/* Keyed apart from every other digest of ringlb's. */
	return ring_siphash(key, LB_QUIC_LB_KEY_LEN, 0x717569632d6c6231ull,
			    0x6b65792064696765ull) | 1;
}

const char *quic_lb_algorithm(const struct lb_quic_lb *cfg)
{
	if (!(cfg->flags & LB_QUIC_LB_ENCRYPTED))
		return "plaintext";
	return cfg->sid_len + cfg->nonce_len == LB_QUIC_LB_SINGLE_PASS ? "single-pass" :
									 "four-pass";
}

void quic_lb_config_format(const struct lb_quic_lb *cfg, const char *key_path, char *buf,
			   size_t len)
{
	int n = snprintf(buf, len, "rotation=%u,sid=%u,nonce=%u", cfg->rotation, cfg->sid_len,
			 cfg->nonce_len);

	if ((cfg->flags & LB_QUIC_LB_ENCRYPTED) && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",key=%s", key_path);
}

void quic_lb_hex(const __u8 *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = 0;
}

int quic_lb_hex_parse(const char *text, __u8 *out, size_t max, size_t *n)
{
	size_t len = strlen(text), i;

	if (!len || len % 2 || len / 2 > max)
		return -EINVAL;
	for (i = 0; i < len / 2; i++) {
		int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (__u8)(hi << 4 | lo);
	}
	*n = len / 2;
	return 0;
}

const char *quic_lb_error_text(int err)
{
	switch (err) {
	case QUIC_LB_CONFIG:
		return "the QUIC-LB configuration is out of bounds";
	case QUIC_LB_SHORT:
		return "the connection ID is shorter than the configuration's";
	case QUIC_LB_ROTATION:
		return "the connection ID's config rotation is not the configuration's";
	case QUIC_LB_CRYPTO:
		return "the cipher failed";
	default:
		return "no server id";
	}
}
