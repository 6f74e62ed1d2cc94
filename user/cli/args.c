// SPDX-License-Identifier: GPL-2.0-only
/*
 * What several commands parse the same way (VIPs, backend names, weights)
 * and what several changes look up the same way (a VIP, a backend, whether
 * a ring still fits), each with its one-line explanation.
 */
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ring.h"

int cli_vip_arg(struct cli *c, const char *text, struct vip_spec *vip)
{
	const char *why = NULL;

	if (vip_parse(text, vip, &why))
		return cli_report(c, "malformed VIP '%s': %s", text, why);
	return 0;
}

int cli_name_arg(struct cli *c, const char *text, const char **name)
{
	const char *why = NULL;

	if (name_check(text, &why))
		return cli_report(c, "bad backend name '%s': %s", text, why);
	*name = text;
	return 0;
}

int cli_number_arg(struct cli *c, const char *what, const char *text, unsigned long min,
		   unsigned long max, const char *unit, __u32 *out)
{
	const char *why = NULL;
	int err = number_parse(text, min, max, out, &why);

	if (err == -ERANGE)
		return cli_usage(c, "%s must be %lu..%lu%s, not %s", what, min, max,
				 unit ? unit : "", text);
	if (err)
		return cli_usage(c, "%s must be a number, %lu..%lu%s; '%s' is %s", what, min, max,
				 unit ? unit : "", text, why);
	return 0;
}

int cli_weight_arg(struct cli *c, const char *text, __u32 *weight)
{
	return cli_number_arg(c, "the weight", text, 0, RING_WEIGHT_MAX, NULL, weight);
}

int cli_list_each(struct cli *c, const char *option, const char *value, void *args,
		  int (*one)(struct cli *c, void *args, const char *item))
{
	const char *p = value;
	char item[ADDR_TEXT_MAX + 8];
	int err;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (!len)
			return cli_usage(c, "--%s '%s': an empty item in the comma-separated list",
					 option, value);
		if (len >= sizeof(item))
			return cli_usage(c, "--%s '%.*s': too long for one item", option,
					 (int)sizeof(item), p);
		memcpy(item, p, len);
		item[len] = '\0';
		err = one(c, args, item);
		if (err || !comma)
			return err;
		p = comma + 1;
	}
}

struct state_vip *cli_vip_find(const struct state *s, const struct vip_spec *spec,
			       struct fault *f)
{
	struct state_vip *v = state_vip_find(s, spec);
	const struct state_vip *near;
	char text[ADDR_TEXT_MAX], other[ADDR_TEXT_MAX];

	if (!v) {
		vip_format(spec, text);
		near = state_vip_nearest(s, spec);
		if (near)
			vip_format(&near->spec, other);
		fault_set(f, FAULT_STATE, -ENOENT, near ? "no such VIP %s (did you mean %s?)" :
			  "no such VIP %s", text, other);
	}
	return v;
}

struct state_backend *cli_backend_find(const struct state_vip *v, const char *name,
				       struct fault *f)
{
	struct state_backend *b = state_backend_find(v, name);
	char text[ADDR_TEXT_MAX];

	vip_format(&v->spec, text);
	if (!b) {
		fault_set(f, FAULT_STATE, -ENOENT, "no backend '%s' on VIP %s", name, text);
	} else if (b->retired) {
		fault_set(f, FAULT_STATE, -ENOENT, "backend '%s' of VIP %s was removed (it stays a "
			  "hop while a previous ring names it)", name, text);
		b = NULL;
	}
	return b;
}

int cli_ring_fits(const struct state_vip *v, struct fault *f)
{
	uint64_t fingerprint;
	size_t points;
	int err = state_vip_summary(v, &points, &fingerprint);

	if (err) {
		char text[ADDR_TEXT_MAX];

		vip_format(&v->spec, text);
		fault_set(f, FAULT_STATE, err, "VIP %s: %s (lower the weights or --vnodes)", text,
			  ring_strerror(err));
	}
	return err;
}

/* The kernel's rule for an interface name (dev_valid_name()): no path in a link's pin. */
static int iface_name_valid(const char *name)
{
	size_t len = strlen(name), i;

	if (!len || len >= IF_NAMESIZE || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (i = 0; i < len; i++)
		if (name[i] == '/' || name[i] == ':' || isspace((unsigned char)name[i]))
			return 0;
	return 1;
}

int cli_ifaces_take(struct cli *c, char **operands, int count, const char **into)
{
	int i, j;

	for (i = 0; i < count; i++) {
		if (!iface_name_valid(operands[i]))
			return cli_usage(c, "'%s' is not an interface name", operands[i]);
		for (j = 0; j < i; j++)
			if (strcmp(operands[i], operands[j]) == 0)
				return cli_usage(c, "interface '%s' named twice", operands[i]);
		into[i] = operands[i];
	}
	return 0;
}

int cli_word_arg(struct cli *c, void *args, char **operands, int count)
{
	(void)c;
	(void)count;
	*(const char **)args = operands[0];
	return 0;
}

/* --- check options (vip add, backend add) ------------------------------------------ */

const struct cli_word cli_check_targets[] = {
	{ "vip", 0 },
	{ "backend", 1 },
	{ NULL, 0 },
};

const struct cli_word cli_modes[] = {
	{ "native", LB_ATTACH_NATIVE },
	{ "generic", LB_ATTACH_GENERIC },
	{ NULL, 0 },
};

int cli_check_kind_set(struct cli *c, void *args, const char *value)
{
	struct cli_check_args *k = args;
	const char *why = NULL;

	if (state_check_parse(value, &k->check, &why))
		return cli_usage(c, "--check %s: %s", value, why);
	k->given |= CHECK_GIVEN_KIND;
	return 0;
}

int cli_check_apply(const struct cli_check_args *k, struct state_check *into,
		    struct fault *f)
{
	struct state_check c = *into;
	const char *problem = NULL;

	if (k->given & CHECK_GIVEN_KIND) {
		c.kind = k->check.kind;
		memcpy(c.path, k->check.path, sizeof(c.path));
	}
	if (k->given & CHECK_GIVEN_PORT)
		c.port = k->check.port;
	if (k->given & CHECK_GIVEN_TARGET)
		c.direct = k->check.direct;
	if (k->given & CHECK_GIVEN_INTERVAL)
		c.interval_ms = k->check.interval_ms;
	if (k->given & CHECK_GIVEN_TIMEOUT)
		c.timeout_ms = k->check.timeout_ms;
	if (k->given & CHECK_GIVEN_RISE)
		c.rise = k->check.rise;
	if (k->given & CHECK_GIVEN_FALL)
		c.fall = k->check.fall;
	if (k->given & CHECK_GIVEN_HOLD)
		c.hold_ms = k->check.hold_ms;
	if (state_check_valid(&c, &problem))
		return fault_set(f, FAULT_STATE, -EINVAL, "%s", problem);
	*into = c;
	return 0;
}
