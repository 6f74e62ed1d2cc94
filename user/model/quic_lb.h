/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * QUIC-LB configurations as operators write them, their keys, and the
 * controller's side of bpf/lb_quic_lb.h: the server id in a connection ID
 * (for lookup) and the connection IDs a server makes (for the servers'
 * configuration and the tests), with OpenSSL's AES-128-ECB as the cipher.
 */
#ifndef RINGLB_QUIC_LB_H
#define RINGLB_QUIC_LB_H

#include <stddef.h>
#include <linux/types.h>

#include "fault.h"
#include "lb_contract.h"

/** QUIC_LB_TEXT_MAX - room for a configuration in text, its key file's path included. */
#define QUIC_LB_TEXT_MAX 4200
/** QUIC_LB_CID_MAX - the longest connection ID of any configuration: first octet and block. */
#define QUIC_LB_CID_MAX (1 + LB_QUIC_LB_BLOCK_MAX)

/**
 * struct quic_lb_cipher - AES-128-ECB under one key, both ways.
 * @enc: OpenSSL's encrypting context (EVP_CIPHER_CTX *)
 * @dec: its decrypting one
 */
struct quic_lb_cipher {
	void *enc;
	void *dec;
};

/**
 * quic_lb_config_parse() - a configuration as `--quic-lb` takes it:
 * "rotation=R,sid=S,nonce=N" (plaintext) with ",key=PATH" for an encrypted
 * one, the fields in any order, each once.
 * @text: the text
 * @cfg: the configuration
 * @key_path: the key file's path ("" for plaintext), @key_path_len bytes
 * @f: why not, a FAULT_USAGE
 *
 * Return: 0 or -EINVAL.
 */
int quic_lb_config_parse(const char *text, struct lb_quic_lb *cfg, char *key_path,
			 size_t key_path_len, struct fault *f);

/**
 * quic_lb_key_read() - a key file: 32 hex digits (a newline after them
 * allowed), readable by its owner alone, as the deployment secret.
 * Return: 0, or -errno with @f set (FAULT_STATE).
 */
int quic_lb_key_read(const char *path, __u8 key[LB_QUIC_LB_KEY_LEN], struct fault *f);

/** quic_lb_key_parse() - 32 hex digits of @text into @key. Return: 0 or -EINVAL. */
int quic_lb_key_parse(const char *text, size_t len, __u8 key[LB_QUIC_LB_KEY_LEN]);

/** quic_lb_cipher_init() - @c set up for @key. Return: 0, or -ENOMEM with @f set. */
int quic_lb_cipher_init(struct quic_lb_cipher *c, const __u8 key[LB_QUIC_LB_KEY_LEN],
			struct fault *f);

/** quic_lb_cipher_free() - @c's contexts released (a zeroed @c is fine). */
void quic_lb_cipher_free(struct quic_lb_cipher *c);

/**
 * quic_lb_sid_of() - the server id in connection ID @cid of @len octets
 * (bpf/lb_quic_lb.h's quic_lb_decode()); @c may be NULL for plaintext.
 * @sid: LB_QUIC_LB_SID_MAX octets; the first @cfg->sid_len are the answer
 * Return: 0, or a negative enum quic_lb_error.
 */
int quic_lb_sid_of(const struct lb_quic_lb *cfg, struct quic_lb_cipher *c, const __u8 *cid,
		   size_t len, __u8 *sid);

/**
 * quic_lb_cid_make() - the connection ID a server makes of @sid and @nonce,
 * its length described in the first octet; @c may be NULL for plaintext.
 * @cid: QUIC_LB_CID_MAX octets; 1 + sid_len + nonce_len are written
 * Return: 0, or a negative enum quic_lb_error.
 */
int quic_lb_cid_make(const struct lb_quic_lb *cfg, struct quic_lb_cipher *c, const __u8 *sid,
		     const __u8 *nonce, __u8 *cid);

/**
 * quic_lb_key_digest() - 64 bits that tell keys apart (never 0), recorded in
 * the state and beside the kernel's cipher, so that a host whose key file
 * holds another key refuses to serve it: the key itself is never written
 * anywhere but its file.
 */
__u64 quic_lb_key_digest(const __u8 key[LB_QUIC_LB_KEY_LEN]);

/** quic_lb_algorithm() - "plaintext", "single-pass" or "four-pass": what @cfg's blocks are. */
const char *quic_lb_algorithm(const struct lb_quic_lb *cfg);

/**
 * quic_lb_config_format() - @cfg as quic_lb_config_parse() reads it, with
 * ",key=@key_path" when it is encrypted, into @buf of @len octets.
 */
void quic_lb_config_format(const struct lb_quic_lb *cfg, const char *key_path, char *buf,
			   size_t len);

/** quic_lb_hex() - @n octets of @in as lower-case hex into @out (2 @n + 1 octets). */
void quic_lb_hex(const __u8 *in, size_t n, char *out);

/**
 * quic_lb_hex_parse() - hex digits (an even number, at most @max octets) of
 * @text into @out; @n gets their octets. Return: 0 or -EINVAL.
 */
int quic_lb_hex_parse(const char *text, __u8 *out, size_t max, size_t *n);

/** quic_lb_error_text() - what a negative enum quic_lb_error means, in words. */
const char *quic_lb_error_text(int err);

#endif /* RINGLB_QUIC_LB_H */
