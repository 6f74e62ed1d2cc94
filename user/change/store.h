/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The committed state of a deployment, wherever it lives: the state file,
 * or with --store the fleet's half in etcd (PREFIX/state, the same for
 * every host) and this host's facts in its state file.
 */
#ifndef RINGLB_STORE_H
#define RINGLB_STORE_H

#include <linux/types.h>

#include "fault.h"
#include "state.h"

struct site;

/** site_state_read() - the committed state, read under a lock the caller holds. */
int site_state_read(const struct site *site, struct state *s, char why[FAULT_WHY_MAX]);

/**
 * site_state_read_rev() - site_state_read(), and the store's revision of it
 * (0 for a state file, or a store without one yet).
 */
int site_state_read_rev(const struct site *site, struct state *s, __u64 *revision,
			char why[FAULT_WHY_MAX]);

/** site_state_read_shared() - the committed state, read under the shared lock. */
int site_state_read_shared(const struct site *site, struct state *s, char why[FAULT_WHY_MAX]);

/**
 * store_commit() - the commit: the state file replaced; with a store, first
 * the fleet's half written if the change touched it and nobody wrote it
 * since @revision (-ESTALE otherwise), then this host's file.
 */
int store_commit(const struct site *site, const struct state *want, const struct state *applied,
		 __u64 revision, char why[FAULT_WHY_MAX]);

/**
 * store_secret_check() - with a store, is @secret the fleet's key? The
 * store holds its digest (lb_secret_digest(), never the key): the first host
 * to ask writes its own. Return: 0, -EKEYREJECTED and why when it differs
 * (a host on another key would send flows elsewhere), another -errno when
 * the store cannot be asked. Without a store: 0.
 */
int store_secret_check(const struct site *site, const __u64 secret[2], char why[FAULT_WHY_MAX]);

#endif /* RINGLB_STORE_H */
