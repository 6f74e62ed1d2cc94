/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The change pipeline, for every front end of the controller (the ringlb
 * command today, a daemon next): where a deployment lives on this host, a
 * session that holds its lock and makes the kernel hold the committed state
 * before anything else, and ctl_change(), the one way a change is made.
 *
 * A change is an apply function that edits a copy of the committed state.
 * ctl_change() marks the kernel's record "changing", writes the new state
 * file (the commit), makes the kernel follow and records the new state; a
 * failure after the commit writes the old file back and converges to it, and
 * a crash anywhere is repaired by the next session. The same apply function
 * run on a copy, with no session, is the change's dry run.
 *
 * Functions return 0 or a negative errno and say why in one line (@why,
 * CTL_WHY_MAX bytes, no prefix); they print nothing. The caller reports.
 */
#ifndef RINGLB_CHANGE_H
#define RINGLB_CHANGE_H

#include <stddef.h>
#include <linux/types.h>

#include "ctl.h"
#include "lb.h"
#include "state.h"

/** CTL_STATE_PATH_DEFAULT - the desired-state file of the default deployment. */
#define CTL_STATE_PATH_DEFAULT "/var/lib/ringlb/state.json"
/** CTL_BPFFS_ROOT - where the BPF filesystem is mounted when it is missing. */
#define CTL_BPFFS_ROOT "/sys/fs/bpf"
/** CTL_STORE_TRIES - commits a change tries when others keep writing the store. */
#define CTL_STORE_TRIES 16
/** CTL_NOTE_MAX - room for what a session had to repair. */
#define CTL_NOTE_MAX 192

/**
 * struct ctl_site - where one deployment lives on this host.
 * @state_path: the desired-state file; the secret, the lock and the audit
 *              log live beside it
 * @pin_dir: the bpffs directory of the maps and of links/
 * @store: NULL: the desired state is the file at @state_path; else
 *         "etcd://HOST:PORT[,...]/PREFIX": it is the key PREFIX/state of
 *         that etcd, shared by every host of the deployment, and a change
 *         commits only when nobody wrote it since it was read (the lock,
 *         secret and logs stay in @state_path's directory)
 */
struct ctl_site {
	const char *state_path;
	const char *pin_dir;
	const char *store;
};

/** ctl_site_path() - the path of @file beside the state file. */
void ctl_site_path(const struct ctl_site *site, const char *file, char *out, size_t len);

/** ctl_lock() - the deployment's lock, shared or exclusive. Return: a descriptor or -errno. */
int ctl_lock(const struct ctl_site *site, int exclusive, char why[CTL_WHY_MAX]);

/**
 * ctl_daemon_lock() - one daemon per deployment: an exclusive lock on
 * "STATE.daemon" (with the holder's pid in it), held for the daemon's life
 * and released by the kernel when it dies. Return: the descriptor, or
 * -EBUSY and which pid holds it, or another -errno.
 */
int ctl_daemon_lock(const struct ctl_site *site, char why[CTL_WHY_MAX]);

/** ctl_state_read() - the committed state, read under a lock the caller holds. */
int ctl_state_read(const struct ctl_site *site, struct state *s, char why[CTL_WHY_MAX]);

/**
 * ctl_store_secret_check() - with a store, is @secret the fleet's key? The
 * store holds its digest (lb_secret_digest(), never the key): the first host
 * to ask writes its own. Return: 0, -EKEYREJECTED and why when it differs
 * (a host on another key would send flows elsewhere), another -errno when
 * the store cannot be asked. Without a store: 0.
 */
int ctl_store_secret_check(const struct ctl_site *site, const __u64 secret[2],
			   char why[CTL_WHY_MAX]);

/**
 * ctl_state_read_rev() - ctl_state_read(), and the store's revision of it
 * (0 for a state file, or a store without one yet).
 */
int ctl_state_read_rev(const struct ctl_site *site, struct state *s, __u64 *revision,
		       char why[CTL_WHY_MAX]);

/** ctl_state_read_shared() - the committed state, read under the shared lock. */
int ctl_state_read_shared(const struct ctl_site *site, struct state *s, char why[CTL_WHY_MAX]);

/** ctl_privileged() - 0 when this process may change the kernel, else -EPERM and why. */
int ctl_privileged(char why[CTL_WHY_MAX]);

/** ctl_maps_pinned() - 1 when the maps are pinned, 0 when not yet, -1 without a bpffs. */
int ctl_maps_pinned(const struct ctl_site *site);

/** ctl_maps_open() - open the pinned maps, or say why they are not there. */
int ctl_maps_open(const struct ctl_site *site, struct lb_maps *maps, char why[CTL_WHY_MAX]);

/**
 * ctl_bpffs_ensure() - the pin directory and its links/ exist on a BPF
 * filesystem, which is mounted at CTL_BPFFS_ROOT when the pin directory is
 * meant to be there and none is. @mounted is set to 1 when it was mounted.
 */
int ctl_bpffs_ensure(const struct ctl_site *site, int *mounted, char why[CTL_WHY_MAX]);

/** ctl_file_secret() - the secret file's key; @create makes one when missing. */
int ctl_file_secret(const struct ctl_site *site, int create, __u64 secret[2],
		    char why[CTL_WHY_MAX]);

/**
 * ctl_served_secret() - the key the kernel hashes flows with: the attached
 * programs' when @attached, else (and when none runs) the secret file's.
 */
int ctl_served_secret(const struct ctl_site *site, int attached, __u64 secret[2],
		      char why[CTL_WHY_MAX]);

/**
 * ctl_links_converge() - the programs on the interfaces: only those @want
 * lists, each on the secret file's key. Nothing to do before the first
 * attach (no secret file and no program). @fixed counts what was changed.
 */
int ctl_links_converge(const struct ctl_site *site, const struct state *want, int *fixed,
		       char why[CTL_WHY_MAX]);

/** ctl_load_failure() - say why lb_prog_load() failed with @err. */
void ctl_load_failure(int err, char why[CTL_WHY_MAX]);

/**
 * ctl_prog_load() - an instance of the program on the deployment's key (the
 * secret file's, made when missing), its maps those pinned under the site's
 * pin directory; @opts gives the rest (the interface's MAC, the flow table's
 * size). The key is wiped from @opts afterwards. On failure, why.
 */
int ctl_prog_load(const struct ctl_site *site, struct lb_load_opts *opts, struct lb_prog **prog,
		  char why[CTL_WHY_MAX]);

/** enum ctl_session_flags - how a session treats the kernel. */
enum ctl_session_flags {
	CTL_NEEDS_MAPS = 1 << 0,   /* refuse when not attached */
	CTL_CREATE_MAPS = 1 << 1,  /* create and pin the maps when missing (attach) */
	CTL_SECRET_CHANGE = 1 << 2, /* secret set: the key is not checked against the store's */
};

/**
 * struct ctl_session - a change's hold on the deployment: the lock, the
 * committed state, and the maps, which ctl_session_begin() has made hold
 * that state.
 * @flow_entries: with CTL_CREATE_MAPS, the size of a flow table created
 *                now (0: the state's)
 * @note: on success, what the start had to repair (empty when nothing)
 */
struct ctl_session {
	const struct ctl_site *site;
	unsigned int flags;
	__u32 flow_entries;
	int lock;
	struct state applied;
	__u64 revision;
	struct lb_maps maps;
	int have_maps;
	char note[CTL_NOTE_MAX];
};

/**
 * ctl_session_begin() - take the lock, read the committed state and, when
 * the maps are there, make the kernel hold that state if its record says it
 * may not (a change was cut short, the file was replaced) and remove or
 * re-key any program the state does not account for. Nothing else happens
 * before that. Set @ss's flags and flow_entries first; end with
 * ctl_session_end() whatever this returns.
 */
int ctl_session_begin(const struct ctl_site *site, struct ctl_session *ss,
		      char why[CTL_WHY_MAX]);

/** ctl_session_end() - release the session's maps, state and lock. */
void ctl_session_end(struct ctl_session *ss);

/**
 * struct ctl_apply - what an apply function is given besides the state.
 * @site: the deployment
 * @dry_run: 1 when the change is only being measured: nothing on the host
 *           is asked or touched (no neighbour resolution, no load)
 */
struct ctl_apply {
	const struct ctl_site *site;
	int dry_run;
};

/**
 * ctl_apply_fn - edit @want (a copy of the committed state) as @args asks,
 * or say why not. Whatever it does outside @want (attach pins a link) must
 * be undone by ctl_links_converge() to the committed state.
 */
typedef int (*ctl_apply_fn)(const struct ctl_apply *ctx, const void *args, struct state *want,
			    char why[CTL_WHY_MAX]);

/**
 * struct ctl_outcome - what a change said.
 * @why: on failure, what failed (the change did not happen)
 * @undo: when undoing a partial change failed too, what failed; the next
 *        session repairs it
 * @note: on success, what the session had to repair first
 */
struct ctl_outcome {
	char why[CTL_WHY_MAX];
	char undo[CTL_WHY_MAX];
	char note[CTL_NOTE_MAX];
};

/**
 * ctl_change() - make one change, all or nothing.
 * @site: the deployment
 * @flags: enum ctl_session_flags
 * @flow_entries: with CTL_CREATE_MAPS, the size of a flow table created now
 * @apply: the change
 * @args: its arguments
 * @cause: what made it, in words ("command: backend add ...", "health: ..."),
 *         for the ring transition log
 * @out: what happened, in words
 *
 * With a store, a commit that finds the state changed since it was read
 * (another host's change) reads it again and applies the change to it, up
 * to CTL_STORE_TRIES times; a failure after the commit leaves the store as
 * it is (the other hosts serve it) and this host's kernel is repaired by
 * the next session. Every VIP whose ring the change moves gets one line in rings.log beside
 * the state file (JSON): time, VIP, @cause, user, points before and after,
 * the share moved, each backend's shares, fail-open, and the outcome.
 */
int ctl_change(const struct ctl_site *site, unsigned int flags, __u32 flow_entries,
	       ctl_apply_fn apply, const void *args, const char *cause,
	       struct ctl_outcome *out);

/**
 * ctl_audit() - append one line for an attempted change to audit.log beside
 * the state file: a JSON object (time, uid and user, the user behind sudo,
 * the login uid, the command's words, the result and the error), so no
 * argument can forge a line or a field. Best effort: a caller who may not
 * write there leaves no line.
 * @site: the deployment
 * @words: the command, word by word
 * @count: how many words
 * @ok: 1 when the change was made
 * @error: when not, the one line the caller saw (NULL or empty: none)
 */
void ctl_audit(const struct ctl_site *site, char *const *words, int count, int ok,
	       const char *error);

#endif /* RINGLB_CHANGE_H */
