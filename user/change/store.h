/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The store: where a deployment's committed state lives, behind one
 * interface. The state file (store_file.c) is one store: the whole state,
 * one host. etcd (store_etcd.c) is another: the fleet's half of the state
 * (struct state_fleet) is its key PREFIX/state, shared by every host, and
 * this host's half (struct state_host) stays in its state file. The change
 * pipeline (change.h) and the daemon read and commit through the interface
 * alone, whichever store it is; `--store` is parsed once, into a store.
 *
 * A store's operations fail with faults of the store class, except for
 * this host's state file (the state class).
 */
#ifndef RINGLB_STORE_H
#define RINGLB_STORE_H

#include <stddef.h>
#include <linux/types.h>

#include "fault.h"
#include "state.h"

/** STORE_HOLDER_MAX - room for who holds a store's lead. */
#define STORE_HOLDER_MAX 128

struct store;

/**
 * struct store_ops - what a store does.
 * @kind: "file", "etcd", ...
 * @shared: 1 when other hosts serve what it holds: a change committed
 *          there stands even when this host's kernel cannot follow
 * @poll_ms: with no watch, how often the daemon asks it for news; 0: when
 *           this host's state file changes (it is the store)
 * @read: the committed state (both halves) and the store's revision of it
 *        (0 for a store without revisions, or before the first commit)
 * @commit: make @want the committed state if the store is still at
 *          @revision (the one read with @applied); -ESTALE when another
 *          writer came first (the change is applied again to a new read)
 * @key_check: is @digest (lb_secret_digest()) the fleet's key digest? The
 *             first host to ask gives the fleet its own. -EKEYREJECTED when
 *             it is another. NULL: a store of one host, always yes
 * @watch: start following the store: a descriptor that becomes readable
 *         (drain it with read()) when the store may have changed, or -1
 *         when only polling follows it
 * @lead: called every STORE_LEAD_RENEW_MS: keep this daemon's claim to the
 *        store's one lead (the fleet's health checks) alive, or campaign
 *        for it; @leader 1 when it holds it, @holder who does
 * @import: make @local's fleet half the store's state where it holds none
 *          (-EEXIST when it holds one), and @local (both halves, with its
 *          membership named) this host's copy at the revision it made
 * @owns: does membership record @m name this store (a shared store)
 * @join: record in @local's file that this host follows the store (its
 *        next session follows the store's state, whatever it served)
 * @close: release everything (a watch stops)
 */
struct store_ops {
	const char *kind;
	int shared;
	unsigned int poll_ms;
	int (*read)(struct store *st, struct state *out, __u64 *revision, struct fault *f);
	int (*commit)(struct store *st, const struct state *want, const struct state *applied,
		      __u64 revision, struct fault *f);
	int (*key_check)(struct store *st, __u64 digest, struct fault *f);
	int (*watch)(struct store *st, struct fault *f);
	int (*lead)(struct store *st, const char *identity, int *leader,
		    char holder[STORE_HOLDER_MAX], struct fault *f);
	int (*import)(struct store *st, struct state *local, struct fault *f);
	int (*join)(struct store *st, struct state *local, struct fault *f);
	int (*owns)(struct store *st, const struct state_member *m);
	void (*close)(struct store *st);
};

/**
 * struct store - a store; implementations embed it first in their own.
 * @ops: its operations
 * @state_path: this host's state file
 * @spec: how it was named (--store), or NULL for the state file
 */
struct store {
	const struct store_ops *ops;
	const char *state_path;
	const char *spec;
};

/** STORE_LEAD_TTL_S - a lead not renewed for this long passes to another daemon. */
#define STORE_LEAD_TTL_S 5
/** STORE_LEAD_RENEW_MS - how often a daemon renews its claim (store_lead()). */
#define STORE_LEAD_RENEW_MS 1000

/**
 * struct store_opts - how this host proves itself to a shared store and
 * whom it trusts (each NULL when not configured; --store-* options, or the
 * configuration file's keys of the same names).
 * @cacert: CA certificates the store's server certificate must chain to
 * @cert: this host's client certificate
 * @key: its private key
 * @user: the store's user to authenticate as
 * @password_file: that user's password (refused when others can read it)
 * @proxy: a proxy to reach the store through; none when NULL
 */
struct store_opts {
	const char *cacert;
	const char *cert;
	const char *key;
	const char *user;
	const char *password_file;
	const char *proxy;
};

/**
 * store_open() - the store @spec names: NULL for the state file at
 * @state_path alone, "https://HOST:PORT[,https://HOST:PORT...]/PREFIX" (or
 * http://, or etcd://HOST:PORT[,...]/PREFIX) for etcd, with @opts (NULL:
 * none), and this host's half in @state_path. The strings must outlive it;
 * @state_path may be given later (st->state_path), before the first read.
 * Return: 0, or -EINVAL and why (class FAULT_USAGE) for a malformed @spec
 * or options that do not go with it.
 */
int store_open(const char *spec, const struct store_opts *opts, const char *state_path,
	       struct store **out, struct fault *f);

/** store_close() - close a store (NULL: nothing). */
void store_close(struct store *st);

/** store_read() - @st's read (@out is initialised whatever it returns). */
int store_read(struct store *st, struct state *out, __u64 *revision, struct fault *f);

/** store_commit() - @st's commit. */
int store_commit(struct store *st, const struct state *want, const struct state *applied,
		 __u64 revision, struct fault *f);

/**
 * store_key_check() - is @secret the fleet's key (its digest against the
 * store's)? 0 for a store of one host.
 */
int store_key_check(struct store *st, const __u64 secret[2], struct fault *f);

/** store_watch() - @st's watch: a descriptor, or -1 when it is only polled. */
int store_watch(struct store *st, struct fault *f);

/** store_lead() - @st's lead; a store of one host: always this daemon. */
int store_lead(struct store *st, const char *identity, int *leader,
	       char holder[STORE_HOLDER_MAX], struct fault *f);

/**
 * store_member_check() - is @m (a membership record, this host's) one of
 * @st's? 0 when it is, or when @m records no fleet; -EXDEV (class
 * FAULT_USAGE) and why when it records another: no command forks a fleet
 * host onto another store.
 */
int store_member_check(struct store *st, const struct state_member *m, struct fault *f);

/**
 * store_copy_read() - this host's copy of the last state it followed from
 * the shared store @st (its state file, both halves), for when the store
 * cannot answer. Return: 0; -ENOENT (class FAULT_STORE) when @st is not
 * shared or this host never followed it; a fault of the state file.
 */
int store_copy_read(struct store *st, struct state *out, struct fault *f);

/**
 * store_import() - this host's state becomes the fleet's, in a store that
 * holds none (a standalone host moving into a fleet, or the state written
 * back after the store lost it); nothing changes in the kernel. @local is
 * this host's file, as read, and is written back as its copy.
 */
int store_import(struct store *st, struct state *local, struct fault *f);

/**
 * store_join() - this host follows @st from now on, whatever it served
 * (its VIPs give way to the fleet's at its next session). @local is its
 * file, as read.
 */
int store_join(struct store *st, struct state *local, struct fault *f);

/** store_shared() - do other hosts serve what @st holds? */
static inline int store_shared(const struct store *st)
{
	return st->ops->shared;
}

/**
 * store_file_open() - the state file as the store (store_open(NULL, ...)).
 * store_etcd_open() - etcd as the store.
 */
int store_file_open(const char *state_path, struct store **out, struct fault *f);
int store_etcd_open(const char *spec, const struct store_opts *opts, const char *state_path,
		    struct store **out, struct fault *f);

/**
 * store_host_read() - this host's state file, as the state class reads it:
 * a missing file is an empty state, anything else unreadable or invalid a
 * fault of the state class naming the file.
 */
int store_host_read(const char *state_path, struct state *out, struct fault *f);

/** store_host_write() - replace this host's state file with @s (state_save()). */
int store_host_write(const char *state_path, const struct state *s, struct fault *f);

#endif /* RINGLB_STORE_H */
