// SPDX-License-Identifier: GPL-2.0-only
/*
 * Operator-facing parsing and printing; see addr.h. Strict on purpose: a
 * trailing character, a leading zero-padded port or an upper-case protocol
 * is an error, so that what is stored is exactly what was meant.
 */
#include "addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lb_contract.h"
#include "ranges.h"

int addr_parse(const char *text, struct addr *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, out->bytes) == 1) {
		out->family = LB_FAMILY_IPV4;
		return 0;
	}
	if (inet_pton(AF_INET6, text, out->bytes) == 1) {
		out->family = LB_FAMILY_IPV6;
		return 0;
	}
	*why = "not an IPv4 or IPv6 address";
	return -EINVAL;
}

void addr_format(const struct addr *a, char *buf)
{
	if (!inet_ntop(a->family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6, a->bytes, buf,
		       ADDR_TEXT_MAX))
		snprintf(buf, ADDR_TEXT_MAX, "?");
}

int addr_equal(const struct addr *a, const struct addr *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof(a->bytes)) == 0;
}

int prefix_parse(const char *text, struct prefix *out, const char **why)
{
	char addr_text[ADDR_TEXT_MAX];
	const char *slash = strchr(text, '/');
	unsigned int max, bit;
	size_t len = slash ? (size_t)(slash - text) : strlen(text);
	__u32 n;

	memset(out, 0, sizeof(*out));
	if (len >= sizeof(addr_text)) {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(addr_text, text, len);
	addr_text[len] = '\0';
	if (addr_parse(addr_text, &out->addr, why))
		return -EINVAL;
	max = out->addr.family == LB_FAMILY_IPV4 ? 32 : 128;
	out->len = max;
	if (slash) {
		int err = number_parse(slash + 1, 0, max, &n, why);

		if (err) {
			*why = err != -ERANGE ? "the length is not a decimal number" :
			       max == 32      ? "the length must be 0..32" :
						"the length must be 0..128";
			return -EINVAL;
		}
		out->len = n;
	}
	for (bit = out->len; bit < max; bit++)
		if (out->addr.bytes[bit / 8] & (0x80u >> (bit % 8))) {
			*why = "host bits set past the length";
			return -EINVAL;
		}
	return 0;
}

void prefix_format(const struct prefix *p, char *buf)
{
	size_t n;

	addr_format(&p->addr, buf);
	n = strlen(buf);
	snprintf(buf + n, ADDR_TEXT_MAX - n, "/%u", p->len);
}

int prefix_equal(const struct prefix *a, const struct prefix *b)
{
	return a->len == b->len && addr_equal(&a->addr, &b->addr);
}

int prefix_compare(const struct prefix *a, const struct prefix *b)
{
	int c;

	if (a->addr.family != b->addr.family)
		return a->addr.family < b->addr.family ? -1 : 1;
	c = memcmp(a->addr.bytes, b->addr.bytes, sizeof(a->addr.bytes));
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

int prefix_holds(const struct prefix *p, const struct addr *a)
{
	unsigned int full = p->len / 8, rest = p->len % 8;

	if (p->addr.family != a->family || memcmp(p->addr.bytes, a->bytes, full))
		return 0;
	return !rest || ((p->addr.bytes[full] ^ a->bytes[full]) & (0xffu << (8 - rest)) & 0xff) == 0;
}

int number_parse(const char *text, unsigned long min, unsigned long max, __u32 *out,
		 const char **why)
{
	unsigned long long v = 0;
	const char *p;

	if (!text || !*text) {
		*why = "empty, not a number";
		return -EINVAL;
	}
	/* Every character first: "9999x" is not a number before it is too large. */
	for (p = text; *p; p++)
		if (*p < '0' || *p > '9') {
			*why = "not a decimal number";
			return -EINVAL;
		}
	if (text[0] == '0' && text[1]) {
		*why = "a number with a leading zero";
		return -EINVAL;
	}
	for (p = text; *p; p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > max)
			break;
	}
	if (v > max || v < min) {
		*why = "out of range";
		return -ERANGE;
	}
	*out = (__u32)v;
	return 0;
}

/*
 * Split "ADDR:PORT" or "[ADDR6]:PORT" at the port: copy the address into
 * @addr_text and return the port text, or NULL.
 */
static const char *split_endpoint(const char *text, char *addr_text, size_t len,
				  const char **why)
{
	const char *colon;
	size_t n;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':') {
			*why = "IPv6 endpoints are written [ADDR]:PORT";
			return NULL;
		}
		n = (size_t)(close - text - 1);
		if (n >= len) {
			*why = "address too long";
			return NULL;
		}
		memcpy(addr_text, text + 1, n);
		addr_text[n] = '\0';
		return close + 2;
	}
	colon = strchr(text, ':');
	if (!colon) {
		*why = "missing :PORT";
		return NULL;
	}
	if (strchr(colon + 1, ':')) {
		*why = "IPv6 endpoints are written [ADDR]:PORT";
		return NULL;
	}
	n = (size_t)(colon - text);
	if (n >= len) {
		*why = "address too long";
		return NULL;
	}
	memcpy(addr_text, text, n);
	addr_text[n] = '\0';
	return colon + 1;
}

int endpoint_parse(const char *text, struct addr *addr, __u16 *port, const char **why)
{
	char addr_text[ADDR_TEXT_MAX];
	const char *port_text = split_endpoint(text, addr_text, sizeof(addr_text), why);
	__u32 p;
	int err;

	if (!port_text)
		return -EINVAL;
	err = addr_parse(addr_text, addr, why);
	if (err)
		return err;
	if (text[0] == '[' && addr->family != LB_FAMILY_IPV6) {
		*why = "brackets are for IPv6 addresses";
		return -EINVAL;
	}
	err = number_parse(port_text, PORT_MIN, PORT_MAX, &p, why);
	if (err) {
		*why = err == -ERANGE ? "port must be " LIMIT_STR(PORT_MIN) ".." LIMIT_STR(PORT_MAX) :
					"port is not a decimal number";
		return -EINVAL;
	}
	*port = (__u16)p;
	return 0;
}

int vip_parse(const char *text, struct vip_spec *out, const char **why)
{
	char endpoint[ADDR_TEXT_MAX + 8];
	const char *slash = strrchr(text, '/');
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!slash) {
		*why = "missing /tcp or /udp";
		return -EINVAL;
	}
	if (strcmp(slash + 1, "tcp") == 0) {
		out->protocol = IPPROTO_TCP;
	} else if (strcmp(slash + 1, "udp") == 0) {
		out->protocol = IPPROTO_UDP;
	} else {
		*why = "protocol must be tcp or udp";
		return -EINVAL;
	}
	n = (size_t)(slash - text);
	if (n >= sizeof(endpoint)) {
		*why = "too long";
		return -EINVAL;
	}
	memcpy(endpoint, text, n);
	endpoint[n] = '\0';
	return endpoint_parse(endpoint, &out->addr, &out->port, why);
}

void vip_format(const struct vip_spec *vip, char *buf)
{
	char addr[ADDR_TEXT_MAX];
	const char *proto = vip->protocol == IPPROTO_TCP ? "tcp" : "udp";

	addr_format(&vip->addr, addr);
	if (vip->addr.family == LB_FAMILY_IPV6)
		snprintf(buf, ADDR_TEXT_MAX, "[%.45s]:%u/%s", addr, vip->port, proto);
	else
		snprintf(buf, ADDR_TEXT_MAX, "%.45s:%u/%s", addr, vip->port, proto);
}

int vip_equal(const struct vip_spec *a, const struct vip_spec *b)
{
	return addr_equal(&a->addr, &b->addr) && a->port == b->port && a->protocol == b->protocol;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mac_parse(const char *text, __u8 mac[6], const char **why)
{
	int i;

	if (strlen(text) != 17) {
		*why = "a MAC is written xx:xx:xx:xx:xx:xx";
		return -EINVAL;
	}
	for (i = 0; i < 6; i++) {
		int hi = hex_digit(text[3 * i]), lo = hex_digit(text[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && text[3 * i + 2] != ':')) {
			*why = "a MAC is written xx:xx:xx:xx:xx:xx";
			return -EINVAL;
		}
		mac[i] = (__u8)(hi << 4 | lo);
	}
	if (mac[0] & 1) {
		*why = "a backend MAC must be unicast";
		return -EINVAL;
	}
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5])) {
		*why = "the all-zero MAC is not a backend";
		return -EINVAL;
	}
	return 0;
}

void mac_format(const __u8 mac[6], char *buf)
{
	snprintf(buf, MAC_TEXT_MAX, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		 mac[3], mac[4], mac[5]);
}

int name_check(const char *name, const char **why)
{
	size_t i;

	if (!name || !*name) {
		*why = "empty name";
		return -EINVAL;
	}
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= NAME_MAX_LEN) {
			*why = "names are at most 63 characters";
			return -EINVAL;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-')) {
			*why = "names use only letters, digits, '.', '_' and '-'";
			return -EINVAL;
		}
	}
	return 0;
}
