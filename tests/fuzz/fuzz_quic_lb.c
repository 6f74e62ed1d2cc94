// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: QUIC-LB configurations and connection IDs
 * (user/model/quic_lb.c over bpf/lb_quic_lb.h). An input whose first byte
 * is even is a configuration's text and a key's: each is read or refused in
 * one line, and one read is within the draft's bounds. An odd first byte
 * makes the rest a configuration (any lengths and flags, in bounds or not),
 * a key and a connection ID: reading its server id never reads past the
 * connection ID nor fails but in a known way, and a connection ID made of
 * that server id and the input's nonce reads back to it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quic_lb.h"
#include "lb_quic_lb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void text_case(const uint8_t *data, size_t size)
{
	char text[QUIC_LB_TEXT_MAX + 16], path[256];
	__u8 key[LB_QUIC_LB_KEY_LEN];
	struct lb_quic_lb cfg;
	struct fault f = { 0 };
	int err;

	if (size > QUIC_LB_TEXT_MAX + 8)
		size = QUIC_LB_TEXT_MAX + 8;
	memcpy(text, data, size);
	text[size] = 0;
	err = quic_lb_config_parse(text, &cfg, path, sizeof(path), &f);
	if (err == 0 && !quic_lb_config_ok(&cfg))
		abort();
	if (err && (err != -EINVAL || !f.why[0] || strchr(f.why, '\n')))
		abort();
	if (quic_lb_key_parse(text, size, key) != 0 && quic_lb_key_parse(text, size, key) != -EINVAL)
		abort();
}

static void codec_case(const uint8_t *data, size_t size)
{
	struct lb_quic_lb cfg = { data[0] % 8, data[1] % 20, data[2] % 24, (__u8)(data[3] & 3) };
	__u8 sid[LB_QUIC_LB_SID_MAX], back[LB_QUIC_LB_SID_MAX], cid[QUIC_LB_CID_MAX];
	__u8 nonce[LB_QUIC_LB_BLOCK_MAX] = { 0 };
	struct quic_lb_cipher c;
	struct fault f = { 0 };
	__u8 *copy;
	size_t len;
	int err;

	data += 4;
	size -= 4;
	if (size < LB_QUIC_LB_KEY_LEN || quic_lb_cipher_init(&c, data, &f))
		return;
	data += LB_QUIC_LB_KEY_LEN;
	size -= LB_QUIC_LB_KEY_LEN;
	/* A copy of exactly its length: ASan sees any read past the connection ID. */
	len = size > QUIC_LB_CID_MAX ? QUIC_LB_CID_MAX : size;
	copy = malloc(len ? len : 1);
	memcpy(copy, data, len);
	err = quic_lb_sid_of(&cfg, &c, copy, len, sid);
	if (err != 0 && err != QUIC_LB_CONFIG && err != QUIC_LB_SHORT && err != QUIC_LB_ROTATION)
		abort();
	if (err == 0) {
		memcpy(nonce, copy + 1 + cfg.sid_len,
		       len - 1 - cfg.sid_len < sizeof(nonce) ? len - 1 - cfg.sid_len : sizeof(nonce));
		if (quic_lb_cid_make(&cfg, &c, sid, nonce, cid) ||
		    quic_lb_sid_of(&cfg, &c, cid, 1u + cfg.sid_len + cfg.nonce_len, back) ||
		    memcmp(sid, back, cfg.sid_len))
			abort();
	}
	free(copy);
	quic_lb_cipher_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!(data[0] & 1))
		text_case(data + 1, size - 1);
	else if (size >= 5)
		codec_case(data + 1, size - 1);
	return 0;
}
