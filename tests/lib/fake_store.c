// SPDX-License-Identifier: GPL-2.0-only
/*
 * A store in memory (fake_store.h): the interface of store.h over a state
 * held by the test, with races and failures on demand.
 */
#include "fake_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct fake_store *fake_of(struct store *st)
{
	return (struct fake_store *)st;
}

static int fake_read(struct store *st, struct state *out, __u64 *revision, struct fault *f)
{
	struct fake_store *fs = fake_of(st);

	fs->reads++;
	state_init(out);
	if (fs->read_class != FAULT_NONE)
		return fault_set(f, fs->read_class, fs->read_err, "the fake store fails its read");
	*revision = fs->revision;
	if (state_clone(out, &fs->committed))
		return fault_set(f, FAULT_STORE, -ENOMEM, "out of memory");
	return 0;
}

static int fake_commit(struct store *st, const struct state *want, const struct state *applied,
		       __u64 revision, struct fault *f)
{
	struct fake_store *fs = fake_of(st);
	struct state next;

	(void)applied;
	fs->commits++;
	if (fs->races > 0) {
		fs->races--;
		if (fs->rival)
			fs->rival(&fs->committed, fs->races);
		fs->revision++;
	}
	if (revision != fs->revision)
		return fault_set(f, FAULT_STORE, -ESTALE,
				 "cannot write the state to the store: another writer came first");
	if (state_clone(&next, want))
		return fault_set(f, FAULT_STORE, -ENOMEM, "out of memory");
	state_free(&fs->committed);
	fs->committed = next;
	fs->revision++;
	fs->committed_ok++;
	return 0;
}

static void fake_close(struct store *st)
{
	(void)st;
}

static const struct store_ops fake_ops_alone = {
	.kind = "fake", .shared = 0, .read = fake_read, .commit = fake_commit, .close = fake_close,
};

static const struct store_ops fake_ops_shared = {
	.kind = "fake", .shared = 1, .poll_ms = 500, .read = fake_read, .commit = fake_commit,
	.close = fake_close,
};

void fake_store_init(struct fake_store *fs, const char *state_path, int shared)
{
	memset(fs, 0, sizeof(*fs));
	fs->store.ops = shared ? &fake_ops_shared : &fake_ops_alone;
	fs->store.state_path = state_path;
	state_init(&fs->committed);
}

void fake_store_free(struct fake_store *fs)
{
	state_free(&fs->committed);
}
