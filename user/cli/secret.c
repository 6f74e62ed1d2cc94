// SPDX-License-Identifier: GPL-2.0-only
/*
 * secret set: the deployment's flow hash key, a change like any other
 * (change_run()). Its apply function writes the new key into the secret
 * file (temp file, fsync, rename) and leaves the old one to be put back if
 * the change fails; the pipeline's follow step then replaces every attached
 * program by one on the new key (site_links_converge()). A crash in between
 * leaves programs on the old key, which the next session re-keys: the file
 * is what counts. With a store, the new key must be the fleet's (the old
 * one may not be: this is how a host is given it).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct secret_args {
	const char *path;
};

/* The key file as it was, for the undo. */
struct secret_undo {
	char path[PATH_MAX];
	__u64 old[2];
	int had_old;
};

static void secret_undo(void *arg, int failed)
{
	struct secret_undo *u = arg;
	struct fault ignored;

	/* The old key back; the pipeline then puts every program on it again. */
	if (failed && u->had_old)
		secret_file_write(u->path, u->old, &ignored);
	memset(u, 0, sizeof(*u));
	free(u);
}

static int secret_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			struct fault *f)
{
	const struct secret_args *a = args;
	struct secret_undo *undo = NULL;
	struct fault ignored;
	__u64 next[2];
	int err;

	(void)want;
	/* It writes the key file: never in a dry run (it is no CLI_DRY_RUN command). */
	if (ctx->dry_run || !ctx->undo)
		return fault_set(f, FAULT_USAGE, -EINVAL, "secret set cannot be measured");
	err = secret_file_read(a->path, 0, next, f) ?: store_key_check(ctx->site->store, next, f);
	if (!err && !(undo = calloc(1, sizeof(*undo))))
		err = fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
	if (err)
		goto out;
	site_path(ctx->site, "secret", undo->path, sizeof(undo->path));
	undo->had_old = secret_file_read(undo->path, 0, undo->old, &ignored) == 0;
	err = secret_file_write(undo->path, next, f);
	if (err) {
		fault_append(f, "; nothing changed");
		secret_undo(undo, 0);
		goto out;
	}
	ctx->undo->fn = secret_undo;
	ctx->undo->arg = undo;
out:
	memset(next, 0, sizeof(next));
	return err;
}

const struct cli_command cli_secret_set = {
	.object = "secret", .verb = "set", .operands = "FILE", .min_operands = 1,
	.max_operands = 1, .args_size = sizeof(struct secret_args), .parse = cli_word_arg,
	.apply = secret_apply, .flags = CLI_CHANGES | CLI_SECRET_CHANGE,
	.help = "    Make FILE (32 hex digits, not readable by others) the deployment's flow\n"
		"    hash key: copied to the secret file, and every attached program is\n"
		"    replaced, atomically, by one on the new key. Use it to give every host\n"
		"    of a deployment the same key.",
};
