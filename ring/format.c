// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The ring's fingerprint and its serialized form: writing a ring out and
 * restoring one, every byte checked, from untrusted input.
 */
#include "ring_impl.h"

#include <errno.h>


/* Serialized layout, little-endian:
 *   0  magic "ringlbR\0"     8
 *   8  format version        u32 (RING_FORMAT_VERSION)
 *  12  total length          u32, checksum included
 *  16  vnodes (K)            u32
 *  20  member count          u32
 *  24  point count           u32
 *  28  reserved, zero        u32
 *  32  points digest         u64: SipHash-2-4 of the points, 16 bytes each
 *  40  members, in name order: u8 name length, name bytes, u32 weight
 *  end-8 checksum            u64: SipHash-2-4 of every byte before it
 */
#define RING_FORMAT_MAGIC "ringlbR"
#define RING_FORMAT_MAGIC_LEN 8
#define RING_FORMAT_VERSION 1u
#define RING_FORMAT_HEADER_LEN 40u
#define RING_FORMAT_CHECKSUM_LEN 8u
#define RING_FORMAT_MEMBER_FIXED_LEN 5u /* length byte + u32 weight */

static uint64_t points_digest(const struct ring_point *points, size_t count)
{
	struct byte_hasher h;
	unsigned char rec[16];
	size_t i;

	hasher_init(&h, FORMAT_KEY0, FORMAT_KEY1);
	for (i = 0; i < count; i++) {
		store_le64(rec, points[i].position);
		store_le32(rec + 8, points[i].member);
		store_le32(rec + 12, points[i].replica);
		hasher_update(&h, rec, sizeof(rec));
	}
	return hasher_final(&h);
}

static uint64_t bytes_checksum(const unsigned char *buf, size_t len)
{
	struct byte_hasher h;

	hasher_init(&h, FORMAT_KEY0, FORMAT_KEY1);
	hasher_update(&h, buf, len);
	return hasher_final(&h);
}

uint64_t ring__fingerprint_of(uint32_t vnodes, const struct member_rec *members, size_t count)
{
	struct byte_hasher h;
	unsigned char le[4];
	size_t i;

	/* The points follow from K and the members: hashing those is enough. */
	hasher_init(&h, FORMAT_KEY1, FORMAT_KEY0);
	store_le32(le, RING_FORMAT_VERSION);
	hasher_update(&h, le, 4);
	store_le32(le, vnodes);
	hasher_update(&h, le, 4);
	for (i = 0; i < count; i++) {
		unsigned char len = (unsigned char)strlen(members[i].name);

		hasher_update(&h, &len, 1);
		hasher_update(&h, members[i].name, len);
		store_le32(le, members[i].weight);
		hasher_update(&h, le, 4);
	}
	return hasher_final(&h);
}

uint64_t ring_fingerprint(const struct ring *r)
{
	return ring__fingerprint_of(r->vnodes, r->members, r->member_count);
}

int ring_serialize(const struct ring *r, void **out, size_t *out_len)
{
	size_t len = RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN, i;
	unsigned char *buf, *p;

	*out = NULL;
	*out_len = 0;
	for (i = 0; i < r->member_count; i++)
		len += RING_FORMAT_MEMBER_FIXED_LEN + strlen(r->members[i].name);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, RING_FORMAT_MAGIC, RING_FORMAT_MAGIC_LEN);
	store_le32(buf + 8, RING_FORMAT_VERSION);
	store_le32(buf + 12, (uint32_t)len);
	store_le32(buf + 16, r->vnodes);
	store_le32(buf + 20, (uint32_t)r->member_count);
	store_le32(buf + 24, (uint32_t)r->point_count);
	store_le64(buf + 32, points_digest(r->points, r->point_count));
	p = buf + RING_FORMAT_HEADER_LEN;
	for (i = 0; i < r->member_count; i++) {
		size_t name_len = strlen(r->members[i].name);

		*p++ = (unsigned char)name_len;
		memcpy(p, r->members[i].name, name_len);
		p += name_len;
		store_le32(p, r->members[i].weight);
		p += 4;
	}
	store_le64(p, bytes_checksum(buf, len - RING_FORMAT_CHECKSUM_LEN));
	*out = buf;
	*out_len = len;
	return 0;
}

int ring_restore(struct ring **out, const void *data, size_t len)
{
	const unsigned char *buf = data, *p, *end;
	struct member_rec *members = NULL;
	struct ring *r = NULL;
	uint32_t total, member_count, point_count, vnodes, i;
	uint64_t points = 0;
	int err;

	*out = NULL;
	if (len >= RING_FORMAT_MAGIC_LEN && memcmp(buf, RING_FORMAT_MAGIC, RING_FORMAT_MAGIC_LEN))
		return -EILSEQ;
	if (len < RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN)
		return -ENODATA;
	if (load_le32(buf + 8) != RING_FORMAT_VERSION)
		return -EPROTONOSUPPORT;
	total = load_le32(buf + 12);
	if (len < total)
		return -ENODATA;
	if (len > total || total < RING_FORMAT_HEADER_LEN + RING_FORMAT_CHECKSUM_LEN)
		return -EBADMSG;
	if (bytes_checksum(buf, len - RING_FORMAT_CHECKSUM_LEN) !=
	    load_le64(buf + len - RING_FORMAT_CHECKSUM_LEN))
		return -EBADMSG;
	vnodes = load_le32(buf + 16);
	member_count = load_le32(buf + 20);
	point_count = load_le32(buf + 24);
	if (load_le32(buf + 28) != 0 || member_count > RING_MEMBERS_MAX)
		return -EBADMSG;
	err = ring_new(&r, vnodes);
	if (err)
		return err;
	members = calloc(member_count ? member_count : 1, sizeof(*members));
	if (!members) {
		err = -ENOMEM;
		goto fail;
	}
	p = buf + RING_FORMAT_HEADER_LEN;
	end = buf + len - RING_FORMAT_CHECKSUM_LEN;
	for (i = 0; i < member_count; i++) {
		size_t name_len;

		if (end - p < 1) {
			err = -EBADMSG;
			goto fail;
		}
		name_len = *p++;
		if ((size_t)(end - p) < name_len + 4) {
			err = -EBADMSG;
			goto fail;
		}
		if (name_len == 0 || memchr(p, '\0', name_len)) {
			err = -EINVAL;
			goto fail;
		}
		if (name_len > RING_NAME_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(members[i].name, p, name_len);
		p += name_len;
		members[i].weight = load_le32(p);
		p += 4;
		if (members[i].weight > RING_WEIGHT_MAX) {
			err = -ERANGE;
			goto fail;
		}
		/* Canonical order doubles as the duplicate check. */
		if (i > 0 && strcmp(members[i - 1].name, members[i].name) >= 0) {
			err = strcmp(members[i - 1].name, members[i].name) ? -EBADMSG : -EEXIST;
			goto fail;
		}
		points += (uint64_t)members[i].weight * vnodes;
	}
	if (p != end || points != point_count) {
		err = -EBADMSG;
		goto fail;
	}
	if (points > RING_POINTS_MAX) {
		err = -E2BIG;
		goto fail;
	}
	err = ring__fill(r, members, member_count, points);
	if (err)
		goto fail;
	members = NULL;
	/* The points must be the ones the writer had: same algorithm, same ring. */
	if (points_digest(r->points, r->point_count) != load_le64(buf + 32)) {
		err = -EBADMSG;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	free(members);
	ring_free(r);
	return err;
}
