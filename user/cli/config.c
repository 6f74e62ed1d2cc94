// SPDX-License-Identifier: GPL-2.0-only
/*
 * The configuration file (cli.h): the global options every ringlb command
 * and the daemon run with unless the command line gives them, so no command
 * on a fleet host has to repeat --store and its TLS files. An INI file
 * read with libinih, keys named as the options without "--", no sections:
 *
 *   state = /var/lib/ringlb/state.json
 *   store = https://198.18.20.5:2379/ringlb
 *   store-cacert = /etc/ringlb/etcd-ca.pem
 *
 * An unknown key, a key given twice, a section or a line that does not
 * parse is refused with its line number: a typo never silently leaves a
 * host on another store.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "cli.h"

/* The keys, each the global option of its name, and where its value goes. */
static const struct {
	const char *key;
	size_t offset;
} config_keys[] = {
	{ "state", offsetof(struct cli_globals, state) },
	{ "pin-dir", offsetof(struct cli_globals, pin_dir) },
	{ "store", offsetof(struct cli_globals, store) },
	{ "store-cacert", offsetof(struct cli_globals, store_opts.cacert) },
	{ "store-cert", offsetof(struct cli_globals, store_opts.cert) },
	{ "store-key", offsetof(struct cli_globals, store_opts.key) },
	{ "store-user", offsetof(struct cli_globals, store_opts.user) },
	{ "store-password-file", offsetof(struct cli_globals, store_opts.password_file) },
	{ "store-proxy", offsetof(struct cli_globals, store_opts.proxy) },
};

#define CONFIG_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

struct config_read {
	struct cli_globals *g;
	char *why;
	size_t why_len;
	FILE *f;
	int line;
	int too_long;
};

/*
 * inih's reader, counting lines (Debian builds inih without
 * INI_HANDLER_LINENO) and marking a line longer than inih's buffer, which
 * inih would otherwise read as two lines.
 */
static char *config_reader(char *buf, int size, void *arg)
{
	struct config_read *r = arg;
	size_t n;

	if (!fgets(buf, size, r->f))
		return NULL;
	r->line++;
	n = strlen(buf);
	if (n == (size_t)size - 1 && buf[n - 1] != '\n' && !feof(r->f))
		r->too_long = 1;
	return buf;
}

static int config_line(void *arg, const char *section, const char *key, const char *value)
{
	struct config_read *r = arg;
	const char **field;
	int line = r->line;
	size_t i;

	if (r->why[0])
		return 0;
	if (r->too_long) {
		snprintf(r->why, r->why_len, "line %d: longer than %d bytes", line, INI_MAX_LINE - 2);
		return 0;
	}
	if (section[0]) {
		snprintf(r->why, r->why_len, "line %d: no sections ([%.40s]): keys only", line,
			 section);
		return 0;
	}
	for (i = 0; i < CONFIG_KEYS && strcmp(config_keys[i].key, key); i++)
		;
	if (i == CONFIG_KEYS) {
		snprintf(r->why, r->why_len, "line %d: unknown key '%.40s'", line, key);
		return 0;
	}
	field = (const char **)((char *)r->g + config_keys[i].offset);
	if (*field) {
		snprintf(r->why, r->why_len, "line %d: '%s' given twice", line, key);
		return 0;
	}
	if (!value[0]) {
		snprintf(r->why, r->why_len, "line %d: '%s' has no value", line, key);
		return 0;
	}
	*field = strdup(value);
	if (!*field) {
		snprintf(r->why, r->why_len, "out of memory");
		return 0;
	}
	return 1;
}

int cli_config_read(const char *path, int must_exist, struct cli_globals *g, char *why,
		    size_t len)
{
	struct config_read r = { .g = g, .why = why, .why_len = len };
	int rc;

	memset(g, 0, sizeof(*g));
	why[0] = '\0';
	r.f = fopen(path, "re");
	if (!r.f) {
		if (errno == ENOENT && !must_exist)
			return 0;
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	rc = ini_parse_stream(config_reader, &r, config_line, &r);
	fclose(r.f);
	if (!why[0] && r.too_long)
		snprintf(why, len, "line %d: longer than %d bytes", r.line, INI_MAX_LINE - 2);
	else if (!why[0] && rc > 0)
		snprintf(why, len, "line %d: not KEY = VALUE", rc);
	else if (!why[0] && rc < 0)
		snprintf(why, len, "cannot read it");
	if (why[0]) {
		char line[FAULT_WHY_MAX];

		snprintf(line, sizeof(line), "%s: %s", path, why);
		snprintf(why, len, "%s", line);
		cli_config_free(g);
		return -EINVAL;
	}
	return 0;
}

void cli_config_free(struct cli_globals *g)
{
	size_t i;

	for (i = 0; i < CONFIG_KEYS; i++) {
		const char **field = (const char **)((char *)g + config_keys[i].offset);

		free((char *)*field);
		*field = NULL;
	}
}
