// SPDX-License-Identifier: GPL-2.0-only
/*
 * secret set: the deployment's flow hash key. The new key is committed by
 * writing the secret file (temp file, fsync, rename), then every attached
 * program is replaced by one on it. A crash in between leaves programs on
 * the old key, which the next command's session re-keys: the file is what
 * counts.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "cli.h"
#include "host.h"

struct secret_args {
	const char *path;
};

static int secret_run(struct cli *c, const void *args)
{
	const struct secret_args *a = args;
	char path[PATH_MAX], why[FAULT_WHY_MAX] = "", hwhy[FAULT_WHY_MAX] = "";
	struct session ss = { 0 };
	__u64 next[2], old[2];
	int err, had_old, fixed;

	err = site_privileged(why);
	if (err)
		return cli_report(c, "%s", why);
	err = secret_file_read(a->path, 0, next, hwhy);
	if (err)
		return cli_report(c, "%s", hwhy);
	/* With a store, the new key must be the fleet's (the old one may not be: this fixes it). */
	ss.flags = SESSION_SECRET_CHANGE;
	err = store_secret_check(&c->site, next, why) ?: session_begin(&c->site, &ss, why);
	if (err) {
		cli_report(c, "%s", why);
		goto out;
	}
	site_path(&c->site, "secret", path, sizeof(path));
	had_old = secret_file_read(path, 0, old, hwhy) == 0;
	err = secret_file_write(path, next, hwhy);
	if (err) {
		cli_report(c, "%s; nothing changed", hwhy);
		goto out;
	}
	if (ss.have_maps) {
		err = site_links_converge(&c->site, &ss.applied, &fixed, why);
		if (err) {
			cli_report(c, "%s; nothing changed", why);
			/* The old key back, and every program on it again. */
			if (had_old && secret_file_write(path, old, hwhy) == 0)
				site_links_converge(&c->site, &ss.applied, &fixed, why);
		}
	}
out:
	if (!err && ss.note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, ss.note);
	memset(next, 0, sizeof(next));
	memset(old, 0, sizeof(old));
	session_end(&ss);
	return err;
}

const struct cli_command cli_secret_set = {
	.object = "secret", .verb = "set", .operands = "FILE", .min_operands = 1,
	.max_operands = 1, .args_size = sizeof(struct secret_args), .parse = cli_word_arg,
	.run = secret_run, .flags = CLI_CHANGES,
	.help = "    Make FILE (32 hex digits, not readable by others) the deployment's flow\n"
		"    hash key: copied to the secret file, and every attached program is\n"
		"    replaced, atomically, by one on the new key. Use it to give every host\n"
		"    of a deployment the same key.",
};
