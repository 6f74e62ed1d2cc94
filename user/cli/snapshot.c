// SPDX-License-Identifier: GPL-2.0-only
/*
 * save and restore: the desired state to and from a file. save writes a new
 * file only; restore is a change like any other, whose apply function takes
 * the file's VIPs and backends and keeps what are facts of this host (the
 * interfaces, the flow table's size, the slots backends are served from).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct file_args {
	const char *path;
};

static int save_run(struct cli *c, const void *args)
{
	const struct file_args *a = args;
	char note[SITE_NOTE_MAX];
	struct fault f = { 0 };
	struct state s;
	int err;

	err = site_state_answer_shared(&c->site, &s, note, &f);
	if (err)
		return cli_fault(c, &f);
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	err = state_save_new(&s, a->path);
	state_free(&s);
	if (err == -EEXIST)
		return cli_report(c, "%s exists; save writes a new file only (remove it, or choose "
				  "another name)", a->path);
	if (err)
		return cli_report(c, "cannot write %s: %s", a->path, strerror(-err));
	return 0;
}

static int restore_apply(const struct change_ctx *ctx, const void *args, struct state *want,
			 struct fault *f)
{
	const struct file_args *a = args;
	char swhy[STATE_WHY_MAX] = "";
	struct state from;
	int err;

	(void)ctx;
	if (access(a->path, R_OK))
		return fault_errno(f, FAULT_USAGE, -errno, "cannot read %s", a->path);
	err = state_load(&from, a->path, swhy);
	if (err)
		return fault_set(f, FAULT_STATE, err, "%s: %s", a->path, swhy);
	/*
	 * Ids are facts of this kernel, not of the saved state: what the
	 * committed state has keeps its slot, anything else gets one no
	 * backend serves from now (@want is still the committed state here).
	 */
	err = state_restore_ids(want, &from);
	if (err) {
		fault_set(f, FAULT_STATE, err, "%s: %s", a->path,
			  err == -ENOSPC ? "no free VIP or backend slot for it" : strerror(-err));
		state_free(&from);
		return err;
	}
	/* This host's half (attachments, encapsulation, drained) is this host's, not the file's. */
	state_host_free(&from.host);
	from.host = want->host;
	state_host_init(&want->host);
	if (from.fleet.generation < want->fleet.generation)
		from.fleet.generation = want->fleet.generation;
	state_free(want);
	*want = from;
	return 0;
}

const struct cli_command cli_save = {
	.object = "save", .operands = "FILE", .min_operands = 1, .max_operands = 1,
	.args_size = sizeof(struct file_args), .parse = cli_word_arg, .run = save_run,
	.help = "    Write the desired state to FILE, a new file (never over an existing one).",
};

const struct cli_command cli_restore = {
	.object = "restore", .operands = "FILE", .min_operands = 1, .max_operands = 1,
	.args_size = sizeof(struct file_args), .parse = cli_word_arg, .apply = restore_apply,
	.flags = CLI_CHANGES | CLI_DRY_RUN,
	.help = "    Make FILE the desired state. Backends this host serves keep their slots;\n"
		"    the rings are the ones it was saved with.",
};
