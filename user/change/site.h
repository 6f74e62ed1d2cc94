/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where one deployment lives on this host: its state file (the secret, the
 * locks and the logs beside it), its pin directory on a BPF filesystem,
 * and its store. Every front end (the CLI, the daemon) names a deployment
 * by a struct site.
 */
#ifndef RINGLB_SITE_H
#define RINGLB_SITE_H

#include <stddef.h>
#include <linux/types.h>

#include "fault.h"
#include "lb.h"
#include "state.h"

struct store;

/** SITE_STATE_PATH_DEFAULT - the desired-state file of the default deployment. */
#define SITE_STATE_PATH_DEFAULT "/var/lib/ringlb/state.json"
/** SITE_BPFFS_ROOT - where the BPF filesystem is mounted when it is missing. */
#define SITE_BPFFS_ROOT "/sys/fs/bpf"

/**
 * struct site - where one deployment lives on this host.
 * @state_path: the desired-state file; the secret, the lock and the audit
 *              log live beside it
 * @pin_dir: the bpffs directory of the maps and of links/
 * @store: where the committed state lives (store.h): the file at
 *         @state_path, or a store shared by every host of the deployment
 *         with this host's facts in @state_path (the lock, secret and logs
 *         stay in @state_path's directory either way)
 */
struct site {
	const char *state_path;
	const char *pin_dir;
	struct store *store;
};

/** site_path() - the path of @file beside the state file. */
void site_path(const struct site *site, const char *file, char *out, size_t len);

/** site_dir_ensure() - the state file's directory exists (made 0700 when not). */
int site_dir_ensure(const struct site *site, struct fault *f);

/** site_lock() - the deployment's lock, shared or exclusive. Return: a descriptor or -errno. */
int site_lock(const struct site *site, int exclusive, struct fault *f);

/**
 * site_daemon_lock() - one daemon per deployment: an exclusive lock on
 * "STATE.daemon" (with the holder's pid in it), held for the daemon's life
 * and released by the kernel when it dies. Return: the descriptor, or
 * -EBUSY and which pid holds it, or another -errno.
 */
int site_daemon_lock(const struct site *site, struct fault *f);

/**
 * site_daemon_pid() - the pid of the daemon holding @site's daemon lock (as
 * /proc/locks tells it, so a look never contends with a daemon starting),
 * or 0 when none runs.
 */
int site_daemon_pid(const struct site *site);

/**
 * SITE_PATHS_FILE - beside the state file: the daemon's report of this
 * host's own path to every checked backend (JSON, written whole when it
 * changes: {"pid", "host", "fleet", "vips": [{"vip", "lost", "withdrawn",
 * "held", "why", "backends": [{"name", "path", "last"}]}]}).
 */
#define SITE_PATHS_FILE "paths.json"

/**
 * site_state_read() - the committed state (store_read() of the site's store),
 * read under a lock the caller holds; @revision (NULL: not wanted) is the
 * store's revision of it.
 */
int site_state_read(const struct site *site, struct state *s, __u64 *revision, struct fault *f);

/** site_state_read_shared() - the committed state, read under the shared lock. */
int site_state_read_shared(const struct site *site, struct state *s, struct fault *f);

/** SITE_NOTE_MAX - room for what an answer from this host's copy says of it. */
#define SITE_NOTE_MAX (FAULT_WHY_MAX + 160)

/**
 * site_state_answer() - the committed state for a question (show, stats,
 * lookup, verify, plan, save), read as site_state_read() reads it; when a
 * shared store cannot be read or holds no sane state, this host's copy of
 * the last state it followed, with @note saying so (its revision, its age
 * and why; "" when the store answered). Under a lock the caller holds.
 */
int site_state_answer(const struct site *site, struct state *s, __u64 *revision,
		      char note[SITE_NOTE_MAX], struct fault *f);

/** site_state_answer_shared() - site_state_answer() under the shared lock. */
int site_state_answer_shared(const struct site *site, struct state *s,
			     char note[SITE_NOTE_MAX], struct fault *f);

/** site_privileged() - 0 when this process may change the kernel, else -EPERM and why. */
int site_privileged(struct fault *f);

/** site_maps_pinned() - 1 when the maps are pinned, 0 when not yet, -1 without a bpffs. */
int site_maps_pinned(const struct site *site);

/** site_maps_open() - open the pinned maps, or say why they are not there. */
int site_maps_open(const struct site *site, struct lb_maps *maps, struct fault *f);

/**
 * site_bpffs_ensure() - the pin directory and its links/ exist on a BPF
 * filesystem, which is mounted at SITE_BPFFS_ROOT when the pin directory is
 * meant to be there and none is. @mounted is set to 1 when it was mounted.
 */
int site_bpffs_ensure(const struct site *site, int *mounted, struct fault *f);

/**
 * site_links_converge() - the programs on the interfaces: only those @want
 * lists, each on the secret file's key. Nothing to do before the first
 * attach (no secret file and no program). @fixed counts what was changed.
 */
int site_links_converge(const struct site *site, const struct state *want, int *fixed,
			struct fault *f);

/**
 * site_prog_load() - an instance of the program on the deployment's key (the
 * secret file's, made when missing), its maps those pinned under the site's
 * pin directory; @opts gives the rest (the interface's MAC, the flow table's
 * size). The key is wiped from @opts afterwards. On failure, why.
 */
int site_prog_load(const struct site *site, struct lb_load_opts *opts, struct lb_prog **prog,
		   struct fault *f);

#endif /* RINGLB_SITE_H */
