// SPDX-License-Identifier: GPL-2.0-only
/*
 * What several commands parse the same way (VIPs, backend names, weights)
 * and what several changes look up the same way (a VIP, a backend, whether
 * a ring still fits), each with its one-line explanation.
 */
#include <errno.h>
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

int cli_mode_arg(struct cli *c, const char *text, enum lb_attach_mode *mode)
{
	if (strcmp(text, "native") == 0)
		*mode = LB_ATTACH_NATIVE;
	else if (strcmp(text, "generic") == 0)
		*mode = LB_ATTACH_GENERIC;
	else
		return cli_usage(c, "--mode is native or generic, not '%s'", text);
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

int cli_weight_arg(struct cli *c, const char *text, __u32 *weight)
{
	const char *why = NULL;

	if (number_parse(text, 0, RING_WEIGHT_MAX, weight, &why))
		return cli_usage(c, "weight '%s' out of range 0..%u", text, RING_WEIGHT_MAX);
	return 0;
}

struct state_vip *cli_vip_find(const struct state *s, const struct vip_spec *spec,
			       char why[CTL_WHY_MAX])
{
	struct state_vip *v = state_vip_find(s, spec);
	char text[ADDR_TEXT_MAX];

	if (!v) {
		vip_format(spec, text);
		snprintf(why, CTL_WHY_MAX, "no such VIP %s", text);
	}
	return v;
}

struct state_backend *cli_backend_find(const struct state_vip *v, const char *name,
				       char why[CTL_WHY_MAX])
{
	struct state_backend *b = state_backend_find(v, name);
	char text[ADDR_TEXT_MAX];

	vip_format(&v->spec, text);
	if (!b) {
		snprintf(why, CTL_WHY_MAX, "no backend '%s' on VIP %s", name, text);
	} else if (b->retired) {
		snprintf(why, CTL_WHY_MAX, "backend '%s' of VIP %s was removed (it stays a hop "
			 "while a previous ring names it)", name, text);
		b = NULL;
	}
	return b;
}

int cli_ring_fits(const struct state_vip *v, char why[CTL_WHY_MAX])
{
	uint64_t fingerprint;
	size_t points;
	int err = state_vip_summary(v, &points, &fingerprint);

	if (err) {
		char text[ADDR_TEXT_MAX];

		vip_format(&v->spec, text);
		snprintf(why, CTL_WHY_MAX, "VIP %s: %s (lower the weights or --vnodes)", text,
			 ring_strerror(err));
	}
	return err;
}

int cli_word_arg(struct cli *c, void *args, char **operands, int count)
{
	(void)c;
	(void)count;
	*(const char **)args = operands[0];
	return 0;
}
