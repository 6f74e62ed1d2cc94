// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the UDP health checks send and how they judge a datagram that comes
 * back (health.h), apart from the sockets so that the rules are tested on
 * their own: a DNS check's query (RFC 1035: one question, the check's name,
 * type A, class IN, recursion desired) and whether a reply is the answer to
 * it (a response with the query's ID and the same question) and a good one
 * (NOERROR with at least one answer); a plain UDP check's reply and the
 * bytes it must start with.
 */
#include "health.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DNS_HEADER_LEN 12
#define DNS_TYPE_A 1
#define DNS_CLASS_IN 1
#define DNS_FLAG_QR 0x8000
#define DNS_FLAG_TC 0x0200
#define DNS_FLAG_RD 0x0100
#define DNS_RCODE_MASK 0x000f

static const char *const rcode_names[] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
};

static __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

/* @name as DNS labels (length, bytes, ..., 0) into @out; the length written, or -EINVAL. */
static int name_encode(const char *name, __u8 *out, size_t room)
{
	size_t n = 0, label;

	while (*name) {
		const char *dot = strchr(name, '.');

		label = dot ? (size_t)(dot - name) : strlen(name);
		if (!label || label > 63 || n + 1 + label + 1 > room)
			return -EINVAL;
		out[n++] = (__u8)label;
		memcpy(out + n, name, label);
		n += label;
		name += label + (dot ? 1 : 0);
	}
	if (!n)
		return -EINVAL;
	out[n++] = 0;
	return (int)n;
}

int health_dns_query(const char *name, __u16 id, __u8 out[HEALTH_DNS_QUERY_MAX])
{
	int n;

	memset(out, 0, DNS_HEADER_LEN);
	put16(out, id);
	put16(out + 2, DNS_FLAG_RD);
	put16(out + 4, 1); /* one question, no other records */
	n = name_encode(name, out + DNS_HEADER_LEN, HEALTH_DNS_QUERY_MAX - DNS_HEADER_LEN - 4);
	if (n < 0)
		return n;
	put16(out + DNS_HEADER_LEN + n, DNS_TYPE_A);
	put16(out + DNS_HEADER_LEN + n + 2, DNS_CLASS_IN);
	return DNS_HEADER_LEN + n + 4;
}

/* Are @a and @b the same name, in DNS's case-insensitive ASCII? */
static int names_equal(const __u8 *a, const __u8 *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		__u8 x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x = (__u8)(x | 0x20);
		if (y >= 'A' && y <= 'Z')
			y = (__u8)(y | 0x20);
		if (x != y)
			return 0;
	}
	return 1;
}

int health_dns_judge(const __u8 *reply, size_t len, const char *name, __u16 id,
		     char why[HEALTH_WHY_MAX])
{
	__u8 want[HEALTH_DNS_QUERY_MAX];
	int qlen = health_dns_query(name, id, want);
	__u16 flags, rcode, answers;

	if (qlen < 0) {
		snprintf(why, HEALTH_WHY_MAX, "the check's name cannot be queried");
		return HEALTH_REPLY_DOWN;
	}
	if (len < DNS_HEADER_LEN) {
		snprintf(why, HEALTH_WHY_MAX, "not a DNS message (%zu bytes)", len);
		return HEALTH_REPLY_STRAY;
	}
	flags = get16(reply + 2);
	if (get16(reply) != id || !(flags & DNS_FLAG_QR)) {
		if (!(flags & DNS_FLAG_QR))
			snprintf(why, HEALTH_WHY_MAX, "not a DNS response");
		else
			snprintf(why, HEALTH_WHY_MAX, "DNS ID %u, want %u", get16(reply), id);
		return HEALTH_REPLY_STRAY;
	}
	/* The question as asked: one, the same name (any case), type and class. */
	if (get16(reply + 4) != 1 || len < (size_t)qlen ||
	    !names_equal(reply + DNS_HEADER_LEN, want + DNS_HEADER_LEN,
			 (size_t)qlen - DNS_HEADER_LEN)) {
		snprintf(why, HEALTH_WHY_MAX, "DNS answer to another question");
		return HEALTH_REPLY_STRAY;
	}
	rcode = flags & DNS_RCODE_MASK;
	answers = get16(reply + 6);
	if (rcode) {
		if (rcode < sizeof(rcode_names) / sizeof(rcode_names[0]))
			snprintf(why, HEALTH_WHY_MAX, "DNS %s", rcode_names[rcode]);
		else
			snprintf(why, HEALTH_WHY_MAX, "DNS rcode %u", rcode);
		return HEALTH_REPLY_DOWN;
	}
	if (!answers) {
		snprintf(why, HEALTH_WHY_MAX, "DNS NOERROR with no answer%s",
			 flags & DNS_FLAG_TC ? " (truncated)" : "");
		return HEALTH_REPLY_DOWN;
	}
	snprintf(why, HEALTH_WHY_MAX, "DNS NOERROR, %u answers", answers);
	return HEALTH_REPLY_UP;
}

int health_udp_judge(const __u8 *reply, size_t len, const __u8 *expect, size_t expect_len,
		     char why[HEALTH_WHY_MAX])
{
	if (len >= expect_len && memcmp(reply, expect, expect_len) == 0) {
		snprintf(why, HEALTH_WHY_MAX, "a reply of %zu bytes as expected", len);
		return HEALTH_REPLY_UP;
	}
	snprintf(why, HEALTH_WHY_MAX, "a reply of %zu bytes that does not start as expected", len);
	return HEALTH_REPLY_DOWN;
}
