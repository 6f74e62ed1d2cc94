/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Parsing and printing what operators type: addresses, VIPs
 * (ADDR:PORT/PROTO, [ADDR6]:PORT/PROTO), client endpoints, MACs, backend
 * names, numbers. Parsers return 0 or -EINVAL and, on failure, point @why at
 * a short static explanation for the one-line error the CLI prints.
 */
#ifndef RINGLB_ADDR_H
#define RINGLB_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

/** ADDR_TEXT_MAX - room for any address, VIP or endpoint in text. */
#define ADDR_TEXT_MAX 64
/** MAC_TEXT_MAX - "xx:xx:xx:xx:xx:xx" and its NUL. */
#define MAC_TEXT_MAX 18
/** NAME_MAX_LEN - longest backend name (the ring library's limit). */
#define NAME_MAX_LEN 63

/**
 * struct addr - an IPv4 or IPv6 address.
 * @family: LB_FAMILY_IPV4 or LB_FAMILY_IPV6
 * @bytes: network order, IPv4 in the first 4 bytes, the rest zero
 */
struct addr {
	int family;
	__u8 bytes[16];
};

/**
 * struct vip_spec - a service as operators write it.
 * @addr: its address
 * @port: its port, host order, 1 .. 65535
 * @protocol: IPPROTO_TCP or IPPROTO_UDP
 */
struct vip_spec {
	struct addr addr;
	__u16 port;
	__u8 protocol;
};

/** addr_parse() - a bare IPv4 or IPv6 address (no brackets, no port). */
int addr_parse(const char *text, struct addr *out, const char **why);

/** addr_format() - an address as text, into @buf of ADDR_TEXT_MAX bytes. */
void addr_format(const struct addr *a, char *buf);

/** addr_equal() - same family and bytes. */
int addr_equal(const struct addr *a, const struct addr *b);

/** vip_parse() - ADDR:PORT/PROTO or [ADDR6]:PORT/PROTO, PROTO tcp or udp. */
int vip_parse(const char *text, struct vip_spec *out, const char **why);

/** vip_format() - a VIP in the form vip_parse() reads, into ADDR_TEXT_MAX bytes. */
void vip_format(const struct vip_spec *vip, char *buf);

/** vip_equal() - same address, port and protocol. */
int vip_equal(const struct vip_spec *a, const struct vip_spec *b);

/** endpoint_parse() - ADDR:PORT or [ADDR6]:PORT, port 1 .. 65535. */
int endpoint_parse(const char *text, struct addr *addr, __u16 *port, const char **why);

/**
 * struct prefix - an IPv4 or IPv6 prefix.
 * @addr: its address, host bits zero
 * @len: its length, 0 .. 32 or 0 .. 128
 */
struct prefix {
	struct addr addr;
	unsigned int len;
};

/**
 * prefix_parse() - ADDR/LEN, or a bare ADDR (its whole length); host bits
 * set (198.18.0.1/24) are refused, not cleared: that is not what was meant.
 */
int prefix_parse(const char *text, struct prefix *out, const char **why);

/** prefix_format() - a prefix as ADDR/LEN, into @buf of ADDR_TEXT_MAX bytes. */
void prefix_format(const struct prefix *p, char *buf);

/** prefix_equal() - same family, address and length. */
int prefix_equal(const struct prefix *a, const struct prefix *b);

/** prefix_compare() - an order of prefixes: family, then address bytes, then length. */
int prefix_compare(const struct prefix *a, const struct prefix *b);

/** prefix_holds() - is @a inside @p (same family, first @p->len bits equal)? */
int prefix_holds(const struct prefix *p, const struct addr *a);

/** mac_parse() - xx:xx:xx:xx:xx:xx, a unicast, non-zero MAC. */
int mac_parse(const char *text, __u8 mac[6], const char **why);

/** mac_format() - a MAC as xx:xx:xx:xx:xx:xx into MAC_TEXT_MAX bytes. */
void mac_format(const __u8 mac[6], char *buf);

/** name_check() - a backend name: 1 .. 63 of [A-Za-z0-9._-]. */
int name_check(const char *name, const char **why);

/** hex_digit() - the value of hex digit @c (either case), or -1. */
int hex_digit(char c);

/**
 * number_parse() - a decimal number within [@min, @max].
 * @text: the text, digits only
 * @min: smallest accepted
 * @max: largest accepted
 * @out: the number
 * @why: explanation on failure
 */
int number_parse(const char *text, unsigned long min, unsigned long max, __u32 *out,
		 const char **why);

#endif /* RINGLB_ADDR_H */
