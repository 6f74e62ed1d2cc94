/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A store in memory (store.h) for the change pipeline's and the daemon's
 * unit tests: it holds a committed state and a revision, and can be told to
 * lose races (another writer commits first), to fail reads or commits with
 * a fault of a given class, and to count what it was asked.
 */
#ifndef RINGLB_TESTS_FAKE_STORE_H
#define RINGLB_TESTS_FAKE_STORE_H

#include "store.h"

/**
 * struct fake_store - the store and its script.
 * @committed: what it holds
 * @revision: its revision (bumped by every commit)
 * @races: commits still to lose: before refusing one (-ESTALE), "another
 *         host" commits @rival to the state it holds
 * @rival: that host's change, or NULL for none
 * @read_class: when not FAULT_NONE, every read fails with a fault of it
 * @read_err: and this errno
 * @reads: reads asked
 * @commits: commits asked
 * @committed_ok: commits taken
 */
struct fake_store {
	struct store store;
	struct state committed;
	__u64 revision;
	int races;
	void (*rival)(struct state *s, int k);
	enum fault_class read_class;
	int read_err;
	int reads;
	int commits;
	int committed_ok;
};

/** fake_store_init() - an empty store (@shared as a store of several hosts is). */
void fake_store_init(struct fake_store *fs, const char *state_path, int shared);

/** fake_store_free() - release what it holds. */
void fake_store_free(struct fake_store *fs);

#endif /* RINGLB_TESTS_FAKE_STORE_H */
