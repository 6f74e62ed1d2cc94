// SPDX-License-Identifier: GPL-2.0-only
/*
 * Typed options (cli.h): an option's declaration says what its value is and
 * where it goes; this parses it, in one place, with one wording of every
 * refusal ("--X must be MIN..MAX, not N" and its other half in
 * cli_number_arg(), "--X is a, b or c, not 'y'").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The option's field in @args. */
static void *field_of(const struct cli_option *o, void *args)
{
	return (char *)args + o->offset;
}

/* Store @v in the option's field, of its width. */
static void store(const struct cli_option *o, void *args, unsigned long v)
{
	void *p = field_of(o, args);

	switch (o->size) {
	case 1: *(__u8 *)p = (__u8)v; break;
	case 2: *(__u16 *)p = (__u16)v; break;
	default: *(__u32 *)p = (__u32)v; break;
	}
}

/* "a, b or c", the words an enum option takes. */
static void words_format(const struct cli_word *w, char *out, size_t len)
{
	size_t n = 0, i, count;

	for (count = 0; w[count].word; count++)
		;
	out[0] = '\0';
	for (i = 0; i < count && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i == 0 ? "" :
				      i + 1 == count ? " or " : ", ", w[i].word);
}

int cli_option_set(struct cli *c, const struct cli_option *o, void *args, const char *value)
{
	const struct cli_word *w;
	char words[128];
	__u32 v = 0;
	int err = 0;

	switch (o->type) {
	case CLI_OPT_FLAG:
		*(int *)field_of(o, args) = 1;
		break;
	case CLI_OPT_STRING:
		*(const char **)field_of(o, args) = value;
		break;
	case CLI_OPT_U32:
		snprintf(words, sizeof(words), "--%s", o->name);
		err = cli_number_arg(c, words, value, o->min, o->max, o->unit, &v);
		if (err)
			return err;
		store(o, args, v);
		break;
	case CLI_OPT_ENUM:
		for (w = o->words; w->word && strcmp(w->word, value); w++)
			;
		if (!w->word) {
			words_format(o->words, words, sizeof(words));
			return cli_usage(c, "--%s is %s, not '%s'", o->name, words, value);
		}
		*(int *)field_of(o, args) = w->value;
		break;
	case CLI_OPT_CUSTOM:
		err = o->set(c, args, value);
		break;
	}
	if (!err && o->given)
		*(unsigned int *)((char *)args + o->given - 1) |= o->given_bit;
	return err;
}
