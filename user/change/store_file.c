// SPDX-License-Identifier: GPL-2.0-only
/*
 * The state file as the store (store.h): a deployment of one host. Both
 * halves of the state live in the file; reading it is the read, replacing
 * it whole (temp file, fsync, rename) is the commit. It has no revisions,
 * no key to share and no lead to contend for.
 */
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>

/*
 * The state file, whole. A file that records a fleet is that fleet's
 * host: read as a store of its own, a change would fork it off the fleet
 * silently, so every command without the fleet's store is refused.
 */
static int file_read(struct store *st, struct state *out, __u64 *revision, struct fault *f)
{
	int err;

	*revision = 0;
	err = store_host_read(st->state_path, out, f);
	if (!err && out->host.member.store[0]) {
		err = fault_set(f, FAULT_USAGE, -EXDEV,
				"this host belongs to the fleet at %s (prefix %s): give --store (or "
				"set store in the configuration file), or leave the fleet with "
				"`ringlb store leave`", out->host.member.store, out->host.member.prefix);
		state_free(out);
	}
	return err;
}

static int file_commit(struct store *st, const struct state *want, const struct state *applied,
		       __u64 revision, struct fault *f)
{
	(void)applied;
	(void)revision;
	return store_host_write(st->state_path, want, f);
}

static void file_close(struct store *st)
{
	free(st);
}

static const struct store_ops file_ops = {
	.kind = "file",
	.shared = 0,
	.poll_ms = 0,
	.read = file_read,
	.commit = file_commit,
	.close = file_close,
};

int store_file_open(const char *state_path, struct store **out, struct fault *f)
{
	struct store *st = calloc(1, sizeof(*st));

	if (!st)
		return fault_set(f, FAULT_STATE, -ENOMEM, "out of memory");
	st->ops = &file_ops;
	st->state_path = state_path;
	*out = st;
	return 0;
}
