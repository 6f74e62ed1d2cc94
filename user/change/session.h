/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A session: a change's (or a repair's) hold on a deployment. It takes the
 * lock, reads the committed state and, when the maps are there, makes the
 * kernel hold that state before anything else happens.
 */
#ifndef RINGLB_SESSION_H
#define RINGLB_SESSION_H

#include <linux/types.h>

#include "fault.h"
#include "lb.h"
#include "site.h"
#include "state.h"

/** SESSION_NOTE_MAX - room for what a session had to repair. */
#define SESSION_NOTE_MAX 640

/** enum session_flags - how a session treats the kernel. */
enum session_flags {
	SESSION_NEEDS_MAPS = 1 << 0,    /* refuse when not attached */
	SESSION_CREATE_MAPS = 1 << 1,   /* create and pin the maps when missing (attach) */
	SESSION_SECRET_CHANGE = 1 << 2, /* secret set: the key is not checked against the store's */
	/*
	 * When the store cannot be read or holds no sane state, go on with this
	 * host's copy of the last state it followed (the daemon, host drain and
	 * undrain): the kernel keeps serving it. Changes of the fleet never ask.
	 */
	SESSION_FAIL_STATIC = 1 << 3,
	/*
	 * A change of this host's half alone (host drain, undrain): on this
	 * host's copy of the fleet's state, which is what its kernel serves, with
	 * no store I/O at all, so it acts at once however the store is.
	 */
	SESSION_LOCAL = 1 << 4,
};

/**
 * struct session - a change's hold on the deployment: the lock, the
 * committed state, and the maps, which session_begin() has made hold
 * that state.
 * @flow_entries: with SESSION_CREATE_MAPS, the size of a flow table created
 *                now (0: the state's)
 * @note: on success, what the start had to repair (empty when nothing)
 * @stale: with SESSION_FAIL_STATIC, 1 when @applied is this host's copy
 *         because the store failed; @stale_why says how
 * @local: with SESSION_LOCAL, 1 when @applied is this host's copy (no store
 *         I/O was needed)
 * @moved: the store's revision is not the one this host's copy was of: the
 *         kernel made to hold it (a @note) followed the store
 * @copy_why: why this host's copy of the followed state could not be
 *            written ("" when it was, or did not need to be)
 */
struct session {
	const struct site *site;
	unsigned int flags;
	__u32 flow_entries;
	int lock;
	struct state applied;
	__u64 revision;
	struct lb_maps maps;
	int have_maps;
	char note[SESSION_NOTE_MAX];
	int stale;
	int local;
	int moved;
	char stale_why[FAULT_WHY_MAX];
	char copy_why[FAULT_WHY_MAX];
};

/**
 * session_begin() - take the lock, read the committed state and, when
 * the maps are there, make the kernel hold that state if its record says it
 * may not (a change was cut short, the file was replaced) and remove or
 * re-key any program the state does not account for. Nothing else happens
 * before that. Set @ss's flags and flow_entries first; end with
 * session_end() whatever this returns.
 */
int session_begin(const struct site *site, struct session *ss, struct fault *f);

/** session_end() - release the session's maps, state and lock. */
void session_end(struct session *ss);

#endif /* RINGLB_SESSION_H */
