// SPDX-License-Identifier: GPL-2.0-only
/*
 * etcd as the store (store.h), for a fleet of hosts. The fleet's half of
 * the state (struct state_fleet) is the key PREFIX/state, the same for
 * every host; this host's half (struct state_host) stays in its state file.
 * A commit writes the fleet's half only when the change touched it, in a
 * transaction that holds only if nobody wrote the key since it was read,
 * then this host's file. PREFIX/secret_digest holds the fleet's flow hash
 * key digest (never the key); PREFIX/health-leader, on a lease, the daemon
 * that runs the fleet's health checks. A watch thread follows PREFIX/state
 * and wakes an eventfd.
 */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "curl_lib.h"
#include "etcd.h"

/**
 * struct etcd_store - the store and what following it keeps.
 * @client: the etcd client (etcd.h)
 * @lease: this daemon's lease (0: none yet)
 * @leader: 1 while it holds PREFIX/health-leader
 * @watch_fd: the eventfd the watch thread wakes, -1 before store_watch()
 * @watcher: that thread
 * @stopping: set when the store closes: the thread ends within a second
 */
struct etcd_store {
	struct store store;
	struct etcd *client;
	__u64 lease;
	int leader;
	int watch_fd;
	pthread_t watcher;
	volatile int stopping;
};

static struct etcd_store *etcd_of(struct store *st)
{
	return (struct etcd_store *)st;
}

/* @url without its scheme: "HOST:PORT". */
static const char *host_port(const char *url)
{
	const char *sep = strstr(url, "://");

	return sep ? sep + 3 : url;
}

/*
 * Does @m name this store: its prefix, and at least one member in common
 * (HOST:PORT, whatever the scheme: a fleet moving to TLS stays itself)?
 */
static int member_is(const struct etcd_store *e, const struct state_member *m)
{
	const struct etcd_spec *spec = etcd_spec_of(e->client);
	char list[STATE_MEMBER_STORE_MAX + 2], one[ETCD_URL_MAX + 2], *at, *next;
	size_t i;

	if (strcmp(m->prefix, spec->prefix))
		return 0;
	snprintf(list, sizeof(list), "%s", m->store);
	for (at = list; at; at = next) {
		next = strchr(at, ',');
		if (next)
			*next++ = '\0';
		for (i = 0; i < spec->count; i++) {
			snprintf(one, sizeof(one), "%s", host_port(spec->endpoints[i]));
			if (strcmp(host_port(at), one) == 0)
				return 1;
		}
	}
	return 0;
}

/* This store as a membership record names it (revision and the rest left as they are). */
static void member_name(const struct etcd_store *e, struct state_member *m)
{
	const struct etcd_spec *spec = etcd_spec_of(e->client);
	size_t i, n = 0;

	m->store[0] = '\0';
	for (i = 0; i < spec->count && n < sizeof(m->store); i++)
		n += (size_t)snprintf(m->store + n, sizeof(m->store) - n, "%s%s", i ? "," : "",
				      spec->endpoints[i]);
	/* store_etcd_open() refused a longer prefix. */
	snprintf(m->prefix, sizeof(m->prefix), "%.*s", (int)sizeof(m->prefix) - 1, spec->prefix);
}

/*
 * A host that records no fleet yet follows this store's state only when
 * that drops nothing it serves: it serves no VIP, or only VIPs the store's
 * state has (a fleet host's file from before membership was recorded). A
 * standalone host with VIPs of its own is never emptied by a --store typed
 * once: `ringlb store join` follows the store on purpose.
 */
static int join_check(struct store *st, const struct state *local, const struct state *fleet,
		      __u64 revision, struct fault *f)
{
	char spec[ADDR_TEXT_MAX];
	size_t i;

	for (i = 0; i < local->fleet.vip_count; i++)
		if (!state_vip_find(fleet, &local->fleet.vips[i].spec))
			break;
	if (i == local->fleet.vip_count)
		return 0;
	vip_format(&local->fleet.vips[i].spec, spec);
	return fault_set(f, FAULT_USAGE, -EXDEV,
			 "this host serves %zu VIPs of its own and the store at %s holds another "
			 "state (revision %llu) without VIP %s: following it would drop that; "
			 "`ringlb store join` follows it on purpose", local->fleet.vip_count,
			 st->spec, (unsigned long long)revision, spec);
}

/* PREFIX/created there while PREFIX/state is not: the fleet's state was lost. */
static int created_check(struct etcd_store *e, struct fault *f)
{
	const char *prefix = etcd_spec_of(e->client)->prefix;
	char ewhy[ETCD_WHY_MAX] = "", *when = NULL;
	__u64 revision = 0;
	int err = etcd_get(e->client, "created", &when, &revision, ewhy);

	if (err)
		return fault_set(f, FAULT_STORE, err, "cannot read the state from the store: %s",
				 ewhy);
	if (when)
		err = fault_set(f, FAULT_STORE, -ENODATA,
				"the store has no state (%s/state is absent) though its fleet was "
				"made (%s/created is there): not starting a new one over it; `ringlb "
				"store import` on a host whose copy is right writes it back", prefix,
				prefix);
	free(when);
	return err;
}

/* The fleet's first state written: mark that it was made (best effort). */
static void created_mark(struct etcd_store *e)
{
	char ewhy[ETCD_WHY_MAX] = "", when[32];

	snprintf(when, sizeof(when), "%llu", (unsigned long long)time(NULL));
	etcd_put_if(e->client, "created", when, 0, NULL, ewhy);
}

/*
 * The fleet's half from PREFIX/state, this host's from its file. A host
 * that follows another store is refused (no silent fork). A key that is
 * not there is an empty new fleet only for a host that never followed
 * this store and serves nothing of its own: for one that followed it, the
 * key went (a deleterange, a data loss, an empty restore) and the host
 * fails static; one that serves VIPs of its own moves in with `ringlb
 * store import`, never by being emptied.
 */
static int etcd_read(struct store *st, struct state *out, __u64 *revision, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	const char *prefix = etcd_spec_of(e->client)->prefix;
	char ewhy[ETCD_WHY_MAX] = "", swhy[STATE_WHY_MAX] = "", *text = NULL;
	struct state local;
	int err;

	state_init(out);
	err = store_host_read(st->state_path, &local, f);
	if (err)
		return err;
	if ((err = store_member_check(st, &local.host.member, f)))
		goto out;
	err = etcd_get(e->client, "state", &text, revision, ewhy);
	if (err) {
		fault_set(f, FAULT_STORE, err, "cannot read the state from the store: %s", ewhy);
		goto out;
	}
	if (!text && local.host.member.revision) {
		err = fault_set(f, FAULT_STORE, -ENODATA,
				"the store has no state (%s/state is absent), but this host "
				"followed its revision %llu: keeping that; `ringlb store import` "
				"writes it back", prefix,
				(unsigned long long)local.host.member.revision);
		goto out;
	}
	/*
	 * Absent, but the fleet was made here (PREFIX/created, written with its
	 * first state and never removed by ringlb): the state was lost, and a
	 * host that never followed it must not start a new fleet over it.
	 */
	if (!text && (err = created_check(e, f)))
		goto out;
	if (!text && !local.host.member.store[0] && local.fleet.vip_count) {
		err = fault_set(f, FAULT_USAGE, -ENODATA,
				"the store at %s holds no state and this host serves %zu VIPs of "
				"its own: `ringlb store import` makes them the fleet's (a change "
				"here would start an empty fleet)", st->spec, local.fleet.vip_count);
		goto out;
	}
	if (text) {
		err = state_from_text(out, text, swhy);
		free(text);
		if (err) {
			fault_set(f, FAULT_STORE, err, "the store's state %s/state: %s", prefix, swhy);
			goto out;
		}
	}
	if (!local.host.member.store[0] && (err = join_check(st, &local, out, *revision, f)))
		goto out;
	/* This host's half is its own file's, whatever the store's value says of it. */
	state_host_free(&out->host);
	out->host = local.host;
	state_host_init(&local.host);
	member_name(e, &out->host.member);
out:
	state_free(&local);
	return err;
}

/*
 * After a write whose reply was lost: did it land? Read the key back: our
 * text there means yes (@revision the one it made).
 */
static int commit_settle(struct etcd_store *e, const char *text, __u64 *revision,
			 char ewhy[ETCD_WHY_MAX])
{
	char *now = NULL;
	int err = etcd_get(e->client, "state", &now, revision, ewhy);

	if (!err)
		err = now && strcmp(now, text) == 0 ? 0 : -ESTALE;
	free(now);
	return err;
}

static int etcd_commit(struct store *st, const struct state *want, const struct state *applied,
		       __u64 revision, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	char ewhy[ETCD_WHY_MAX] = "", *text;
	int same = state_fleet_same(want, applied), err = 0;
	__u64 now_revision = revision;
	struct state copy;

	/* A change of this host's facts alone (attach, detach) leaves the store alone. */
	if (same < 0)
		return fault_set(f, FAULT_STORE, same, "out of memory");
	if (!same) {
		text = state_fleet_text(want, 1);
		err = text ? etcd_put_if(e->client, "state", text, revision, &now_revision, ewhy)
			   : -ENOMEM;
		/* The write went out and no answer came: settle it before saying anything. */
		if (err == -EINPROGRESS) {
			char swhy[ETCD_WHY_MAX] = "";

			err = commit_settle(e, text, &now_revision, swhy);
			if (err && err != -ESTALE) {
				fault_set(f, FAULT_STORE, -EINPROGRESS,
					  "the store did not confirm the change (%s) and cannot be "
					  "asked whether it took it (%s): it may have; `ringlb show` "
					  "tells, and the next command or the daemon settles this host",
					  ewhy, swhy);
				free(text);
				return -EINPROGRESS;
			}
			/* -ESTALE: not written (or another host's write came first): try again. */
		}
		if (err)
			fault_set(f, FAULT_STORE, err, "cannot write the state to the store: %s",
				  text ? ewhy : "out of memory");
		free(text);
		if (!err && !revision)
			created_mark(e);
	}
	if (err)
		return err;
	/* This host's copy: the state it follows now, at the revision the write made. */
	if (state_clone(&copy, want))
		return same ? fault_set(f, FAULT_STATE, -ENOMEM, "out of memory") :
			      fault_set(f, FAULT_STATE, -EREMOTEIO, "committed to the store, but out "
					"of memory for this host's copy");
	member_name(e, &copy.host.member);
	copy.host.member.revision = now_revision;
	/* A change of this host alone follows nothing new: when it followed stays. */
	if (!same)
		copy.host.member.followed = (__u64)time(NULL);
	err = store_host_write(st->state_path, &copy, f);
	state_free(&copy);
	if (err && !same) {
		fault_prefix(f, "committed to the store (revision %llu), but this host's copy failed",
			     (unsigned long long)now_revision);
		return -EREMOTEIO;
	}
	return err;
}

static int etcd_key_check(struct store *st, __u64 digest, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	char ewhy[ETCD_WHY_MAX] = "", mine[24], *fleet = NULL;
	__u64 revision = 0;
	int err;

	snprintf(mine, sizeof(mine), "%016llx", (unsigned long long)digest);
	err = etcd_get(e->client, "secret_digest", &fleet, &revision, ewhy);
	/* The first host with a key gives the fleet its digest (never the key). */
	if (!err && !fleet) {
		err = etcd_put_if(e->client, "secret_digest", mine, 0, NULL, ewhy);
		if (err == -ESTALE) /* another host's came first */
			err = etcd_get(e->client, "secret_digest", &fleet, &revision, ewhy);
	}
	if (err)
		return fault_set(f, FAULT_STORE, err,
				 "cannot check the flow hash key against the store: %s", ewhy);
	/* A digest that is not one (any bytes can be put there): the store's fault, not this host's. */
	if (fleet && (strlen(fleet) != 16 || strspn(fleet, "0123456789abcdef") != 16))
		err = fault_set(f, FAULT_STORE, -EPROTO,
				"the store's key digest (%s/secret_digest) is not 16 hex digits",
				etcd_spec_of(e->client)->prefix);
	else if (fleet && strcmp(fleet, mine))
		err = fault_set(f, FAULT_STATE, -EKEYREJECTED,
				"this host's flow hash key (digest %s) is not the fleet's (digest %s "
				"in the store): its hosts would send a flow to different backends; "
				"give it the fleet's key with `ringlb secret set FILE`", mine, fleet);
	free(fleet);
	return err;
}

static void watch_event(void *arg)
{
	struct etcd_store *e = arg;
	__u64 one = 1;

	if (write(e->watch_fd, &one, sizeof(one)) < 0) {
		/* The counter is full: the reader has a wake-up pending anyway. */
	}
}

static int watch_stop(void *arg)
{
	return ((struct etcd_store *)arg)->stopping;
}

/* The watch thread: an etcd watch on PREFIX/state, opened again a second after it ends. */
static void *watch_main(void *arg)
{
	struct etcd_store *e = arg;
	char why[ETCD_WHY_MAX] = "";
	int i;

	while (!e->stopping) {
		etcd_watch(e->client, "state", watch_event, watch_stop, e, why);
		for (i = 0; i < 10 && !e->stopping; i++)
			usleep(100000);
	}
	return NULL;
}

static int etcd_watch_start(struct store *st, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);

	if (e->watch_fd >= 0)
		return e->watch_fd;
	e->watch_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->watch_fd < 0)
		return fault_errno(f, FAULT_STORE, -errno, "cannot watch the store");
	if (pthread_create(&e->watcher, NULL, watch_main, e)) {
		close(e->watch_fd);
		e->watch_fd = -1;
		return fault_set(f, FAULT_STORE, -EAGAIN, "cannot start the store's watch");
	}
	return e->watch_fd;
}

static int etcd_lead(struct store *st, const char *identity, int *leader,
		     char holder[STORE_HOLDER_MAX], struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	char ewhy[ETCD_WHY_MAX] = "", *who = NULL;
	int err = 0;

	/* Every daemon keeps a lease alive: a follower's is ready when the leader's goes. */
	if (e->lease && (err = etcd_lease_keepalive(e->client, e->lease, ewhy))) {
		e->leader = 0;
		e->lease = 0;
	}
	if (!e->lease && (err = etcd_lease_grant(e->client, STORE_LEAD_TTL_S, &e->lease, ewhy)))
		e->lease = 0;
	/*
	 * The campaign every time, leader or not: the key's lease (not the name
	 * in it) says who leads, so a leader whose key went (deleted, its lease
	 * lost and another's put there) learns it at its next renewal.
	 */
	if (e->lease) {
		int won = 0;

		err = etcd_campaign(e->client, "health-leader", identity, e->lease, &won, &who, ewhy);
		e->leader = !err && won;
		if (!err)
			snprintf(holder, STORE_HOLDER_MAX, "%s", who);
		free(who);
	}
	*leader = e->leader;
	/* The why says what the store last refused, for a daemon that lost the lead. */
	fault_set(f, FAULT_STORE, err, "%s", ewhy[0] ? ewhy : "expired");
	return err;
}

static int etcd_import(struct store *st, struct state *local, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	char ewhy[ETCD_WHY_MAX] = "", *text;
	__u64 revision = 0;
	int err;

	if ((err = store_member_check(st, &local->host.member, f)))
		return err;
	text = state_fleet_text(local, 1);
	if (!text)
		return fault_set(f, FAULT_STORE, -ENOMEM, "out of memory");
	/* Only where there is no state: never over another host's. */
	err = etcd_put_if(e->client, "state", text, 0, &revision, ewhy);
	free(text);
	if (err == -ESTALE)
		return fault_set(f, FAULT_USAGE, -EEXIST,
				 "the store holds a state already (%s/state): import writes only "
				 "where there is none", etcd_spec_of(e->client)->prefix);
	if (err)
		return fault_set(f, FAULT_STORE, err, "cannot write the state to the store: %s",
				 ewhy);
	created_mark(e);
	member_name(e, &local->host.member);
	local->host.member.revision = revision;
	local->host.member.followed = (__u64)time(NULL);
	err = store_host_write(st->state_path, local, f);
	if (err)
		fault_prefix(f, "imported (revision %llu), but this host's copy failed",
			     (unsigned long long)revision);
	return err;
}

static int etcd_join(struct store *st, struct state *local, struct fault *f)
{
	struct etcd_store *e = etcd_of(st);
	int err = store_member_check(st, &local->host.member, f);

	if (err)
		return err;
	if (local->host.member.store[0])
		return fault_set(f, FAULT_STATE, -EALREADY, "this host follows %s already",
				 st->spec);
	member_name(e, &local->host.member);
	local->host.member.revision = 0;
	return store_host_write(st->state_path, local, f);
}

static int etcd_owns(struct store *st, const struct state_member *m)
{
	return member_is(etcd_of(st), m);
}

static void etcd_store_close(struct store *st)
{
	struct etcd_store *e = etcd_of(st);

	e->stopping = 1;
	if (e->watch_fd >= 0) {
		pthread_join(e->watcher, NULL);
		close(e->watch_fd);
	}
	etcd_close(e->client);
	free(e);
	curl_global_cleanup();
}

static const struct store_ops etcd_ops = {
	.kind = "etcd",
	.shared = 1,
	/* The watch makes the daemon ask at once; the poll is what remains when it is down. */
	.poll_ms = 500,
	.read = etcd_read,
	.commit = etcd_commit,
	.key_check = etcd_key_check,
	.watch = etcd_watch_start,
	.lead = etcd_lead,
	.import = etcd_import,
	.join = etcd_join,
	.owns = etcd_owns,
	.close = etcd_store_close,
};

int store_etcd_open(const char *spec, const struct store_opts *opts, const char *state_path,
		    struct store **out, struct fault *f)
{
	const struct etcd_opts eopts = {
		.cacert = opts->cacert, .cert = opts->cert, .key = opts->key, .user = opts->user,
		.password_file = opts->password_file, .proxy = opts->proxy,
	};
	struct etcd_store *e = calloc(1, sizeof(*e));
	char why[ETCD_WHY_MAX] = "";
	const char *problem = NULL;
	struct etcd_spec parsed;
	int err;

	if (!e)
		return fault_set(f, FAULT_STORE, -ENOMEM, "out of memory");
	if (etcd_spec_parse(spec, &parsed, &problem)) {
		free(e);
		return fault_set(f, FAULT_USAGE, -EINVAL, "--store '%s': %s", spec, problem);
	}
	if (strlen(parsed.prefix) >= STATE_MEMBER_PREFIX_MAX) {
		free(e);
		return fault_set(f, FAULT_USAGE, -EINVAL, "--store '%s': a prefix of at most %d bytes",
				 spec, STATE_MEMBER_PREFIX_MAX - 1);
	}
	err = curl_lib_load(why, sizeof(why));
	if (err) {
		free(e);
		return fault_set(f, FAULT_STORE, err, "--store '%s': cannot load libcurl (libcurl4): %s",
				 spec, why);
	}
	err = etcd_open(&parsed, &eopts, &e->client, why);
	if (err) {
		free(e);
		return fault_set(f, FAULT_USAGE, err, "--store '%s': %s", spec, why);
	}
	e->store.ops = &etcd_ops;
	e->store.state_path = state_path;
	e->store.spec = spec;
	e->watch_fd = -1;
	/* libcurl's global state, before any thread (a watch, libmicrohttpd's) exists. */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	*out = &e->store;
	return 0;
}
