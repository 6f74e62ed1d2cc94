// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store interface (store.h): --store parsed once into a store, and the
 * calls every store answers, with the defaults of a store of one host.
 * This host's state file, which every store keeps this host's half in, is
 * read and written here.
 */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lb.h"

int store_open(const char *spec, const struct store_opts *opts, const char *state_path,
	       struct store **out, struct fault *f)
{
	static const struct store_opts none;

	*out = NULL;
	if (!spec)
		return store_file_open(state_path, out, f);
	return store_etcd_open(spec, opts ? opts : &none, state_path, out, f);
}

void store_close(struct store *st)
{
	if (st)
		st->ops->close(st);
}

int store_read(struct store *st, struct state *out, __u64 *revision, struct fault *f)
{
	*revision = 0;
	return st->ops->read(st, out, revision, f);
}

int store_commit(struct store *st, const struct state *want, const struct state *applied,
		 __u64 revision, struct fault *f)
{
	return st->ops->commit(st, want, applied, revision, f);
}

int store_key_check(struct store *st, const __u64 secret[2], struct fault *f)
{
	return st->ops->key_check ? st->ops->key_check(st, lb_secret_digest(secret), f) : 0;
}

int store_watch(struct store *st, struct fault *f)
{
	return st->ops->watch ? st->ops->watch(st, f) : -1;
}

int store_lead(struct store *st, const char *identity, int *leader,
	       char holder[STORE_HOLDER_MAX], struct fault *f)
{
	if (!st->ops->lead) {
		*leader = 1;
		snprintf(holder, STORE_HOLDER_MAX, "%s", identity);
		return 0;
	}
	return st->ops->lead(st, identity, leader, holder, f);
}

int store_import(struct store *st, struct state *local, struct fault *f)
{
	if (!st->ops->import)
		return fault_set(f, FAULT_USAGE, -EINVAL,
				 "import writes to a shared store: give --store");
	return st->ops->import(st, local, f);
}

int store_join(struct store *st, struct state *local, struct fault *f)
{
	if (!st->ops->join)
		return fault_set(f, FAULT_USAGE, -EINVAL, "join follows a shared store: give --store");
	return st->ops->join(st, local, f);
}

int store_member_check(struct store *st, const struct state_member *m, struct fault *f)
{
	if (!m->store[0] || !st->ops->owns || st->ops->owns(st, m))
		return 0;
	return fault_set(f, FAULT_USAGE, -EXDEV,
			 "this host follows the fleet at %s (prefix %s), not %s: refusing to fork "
			 "it onto another store (`ringlb store leave` first)", m->store, m->prefix,
			 st->spec);
}

int store_copy_read(struct store *st, struct state *out, struct fault *f)
{
	int err;

	state_init(out);
	if (!st->ops->shared)
		return fault_set(f, FAULT_STORE, -ENOENT, "a store of one host has no copy");
	err = store_host_read(st->state_path, out, f);
	/* A copy of another fleet's state is not this store's: no fork through the copy. */
	if (!err && (err = store_member_check(st, &out->host.member, f))) {
		state_free(out);
		return err;
	}
	if (!err && !out->host.member.revision) {
		state_free(out);
		return fault_set(f, FAULT_STORE, -ENOENT,
				 "this host has no copy of a state it followed");
	}
	return err;
}

int store_host_read(const char *state_path, struct state *out, struct fault *f)
{
	char why[STATE_WHY_MAX] = "";
	int err = state_load(out, state_path, why);

	if (err)
		fault_set(f, FAULT_STATE, err, "state file %s: %s", state_path, why);
	return err;
}

int store_host_write(const char *state_path, const struct state *s, struct fault *f)
{
	int err = state_save(s, state_path);

	if (err)
		fault_errno(f, FAULT_STATE, err, "cannot write %s", state_path);
	return err;
}
