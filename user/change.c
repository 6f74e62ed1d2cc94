// SPDX-License-Identifier: GPL-2.0-only
/*
 * The change pipeline: see change.h. Every step that can fail says why in
 * one line and returns -errno; the order of the steps is what keeps the
 * kernel serving a committed state whatever happens between them.
 */
#define _GNU_SOURCE
#include "change.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "etcd.h"
#include "host.h"
#include "ring.h"

/* --- where a deployment lives -------------------------------------------------------- */

void ctl_site_path(const struct ctl_site *site, const char *file, char *out, size_t len)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	snprintf(out, len, "%s/%s", dirname(copy), file);
}

static int state_dir_ensure(const struct ctl_site *site, char why[CTL_WHY_MAX])
{
	char copy[PATH_MAX], *dir;

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	dir = dirname(copy);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(why, CTL_WHY_MAX, "cannot create the state directory %s: %s", dir,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* The lock serialises every operator of this state file. */
int ctl_lock(const struct ctl_site *site, int exclusive, char why[CTL_WHY_MAX])
{
	char path[PATH_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s.lock", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, CTL_WHY_MAX, "cannot open the lock %s: %s", path, strerror(errno));
		return err;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH)) {
		if (errno != EINTR) {
			err = -errno;
			snprintf(why, CTL_WHY_MAX, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return err;
		}
	}
	return fd;
}

int ctl_daemon_lock(const struct ctl_site *site, char why[CTL_WHY_MAX])
{
	char path[PATH_MAX], pid[32] = "";
	int fd, err = state_dir_ensure(site, why);
	ssize_t n;

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s.daemon", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, CTL_WHY_MAX, "cannot open %s: %s", path, strerror(errno));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (err == -EBUSY)
			snprintf(why, CTL_WHY_MAX, "another ringlb daemon serves %s (pid %s)",
				 site->state_path, pid[0] ? pid : "?");
		else
			snprintf(why, CTL_WHY_MAX, "cannot lock %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* The pid is a courtesy for the message above; the lock is what counts. */
	}
	return fd;
}

/*
 * With a store, the state is two halves: the fleet's (VIPs, backends, ids,
 * generation, kept rings: PREFIX/state in etcd, the same for every host)
 * and this host's own facts, which the state file beside the lock keeps:
 * its interfaces, its encapsulation settings (sources, GUE port, new-flow
 * rate) and its flow table's size. What restore keeps is what stays local.
 */

/*
 * @s without this host's facts: the half the store holds, as text
 * (malloc()ed); with its generation 0 unless @generation.
 */
static char *fleet_text(const struct state *s, int generation)
{
	struct state fleet;
	char *text;

	fleet = *s;
	if (!generation)
		fleet.generation = 0;
	fleet.ifaces = NULL;
	fleet.iface_count = 0;
	fleet.host_drained = 0;
	fleet.flow_entries = LB_FLOWS_DEFAULT;
	memset(&fleet.encap, 0, sizeof(fleet.encap));
	fleet.encap.gue_port = LB_GUE_PORT_DEFAULT;
	fleet.encap.new_flows_max = LB_NEW_FLOWS_MAX_DEFAULT;
	text = state_to_text(&fleet);
	return text;
}

/* The fleet's half from the store, this host's from its state file, as one state. */
static int store_read(const struct ctl_site *site, struct state *s, __u64 *revision,
		      char why[CTL_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", swhy[STATE_WHY_MAX] = "", *text = NULL;
	struct etcd_spec spec;
	struct state local;
	const char *problem = NULL;
	int err;

	state_init(s);
	if (etcd_spec_parse(site->store, &spec, &problem)) {
		snprintf(why, CTL_WHY_MAX, "--store %s: %s", site->store, problem);
		return -EINVAL;
	}
	err = state_load(&local, site->state_path, swhy);
	if (err) {
		snprintf(why, CTL_WHY_MAX, "state file %s: %s", site->state_path, swhy);
		return err;
	}
	err = etcd_get(&spec, "state", &text, revision, ewhy);
	if (err) {
		snprintf(why, CTL_WHY_MAX, "cannot read the state from the store: %s", ewhy);
		state_free(&local);
		return err;
	}
	if (text) {
		err = state_from_text(s, text, swhy);
		free(text);
		if (err) {
			snprintf(why, CTL_WHY_MAX, "the store's state %s/state: %s", spec.prefix,
				 swhy);
			state_free(&local);
			return err;
		}
	}
	/* This host's facts, moved over. */
	free(s->ifaces);
	s->ifaces = local.ifaces;
	s->iface_count = local.iface_count;
	local.ifaces = NULL;
	local.iface_count = 0;
	s->encap = local.encap;
	s->flow_entries = local.flow_entries;
	s->host_drained = local.host_drained;
	state_free(&local);
	return 0;
}

/*
 * The commit: the state file replaced; with a store, first the fleet's half
 * written if the change touched it and nobody wrote it since @revision
 * (-ESTALE otherwise), then this host's file.
 */
static int state_commit(const struct ctl_site *site, const struct state *want,
			const struct state *applied, __u64 revision, char why[CTL_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", *text = NULL, *before = NULL;
	struct etcd_spec spec;
	const char *problem = NULL;
	int err = 0;

	if (site->store) {
		if (etcd_spec_parse(site->store, &spec, &problem)) {
			snprintf(why, CTL_WHY_MAX, "--store %s: %s", site->store, problem);
			return -EINVAL;
		}
		/* A change of this host's facts alone (attach, detach) leaves the store alone. */
		text = fleet_text(want, 0);
		before = fleet_text(applied, 0);
		if (!text || !before) {
			err = -ENOMEM;
		} else if (strcmp(before, text)) {
			free(text);
			text = fleet_text(want, 1);
			err = text ? etcd_put_if(&spec, "state", text, revision, NULL, ewhy) : -ENOMEM;
			if (err)
				snprintf(why, CTL_WHY_MAX, "cannot write the state to the store: %s",
					 ewhy);
		}
		free(text);
		free(before);
		if (err)
			return err;
	}
	err = state_save(want, site->state_path);
	if (err)
		snprintf(why, CTL_WHY_MAX, "cannot write %s: %s%s", site->state_path, strerror(-err),
			 site->store ? " (the store holds the change)" : "");
	return err;
}

int ctl_store_secret_check(const struct ctl_site *site, const __u64 secret[2],
			   char why[CTL_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", mine[24], *fleet = NULL;
	struct etcd_spec spec;
	const char *problem = NULL;
	__u64 revision = 0;
	int err;

	if (!site->store)
		return 0;
	if (etcd_spec_parse(site->store, &spec, &problem)) {
		snprintf(why, CTL_WHY_MAX, "--store %s: %s", site->store, problem);
		return -EINVAL;
	}
	snprintf(mine, sizeof(mine), "%016llx", (unsigned long long)lb_secret_digest(secret));
	err = etcd_get(&spec, "secret_digest", &fleet, &revision, ewhy);
	/* The first host with a key gives the fleet its digest (never the key). */
	if (!err && !fleet) {
		err = etcd_put_if(&spec, "secret_digest", mine, 0, NULL, ewhy);
		if (err == -ESTALE) /* another host's came first */
			err = etcd_get(&spec, "secret_digest", &fleet, &revision, ewhy);
	}
	if (err) {
		snprintf(why, CTL_WHY_MAX, "cannot check the flow hash key against the store: %s",
			 ewhy);
		return err;
	}
	if (fleet && strcmp(fleet, mine)) {
		snprintf(why, CTL_WHY_MAX, "this host's flow hash key (digest %s) is not the "
			 "fleet's (digest %s in the store): its hosts would send a flow to different "
			 "backends; give it the fleet's key with `ringlb secret set FILE`", mine,
			 fleet);
		err = -EKEYREJECTED;
	}
	free(fleet);
	return err;
}

int ctl_state_read_rev(const struct ctl_site *site, struct state *s, __u64 *revision,
		       char why[CTL_WHY_MAX])
{
	char swhy[STATE_WHY_MAX] = "";
	int err;

	*revision = 0;
	if (site->store)
		return store_read(site, s, revision, why);
	err = state_load(s, site->state_path, swhy);
	if (err)
		snprintf(why, CTL_WHY_MAX, "state file %s: %s", site->state_path, swhy);
	return err;
}

int ctl_state_read(const struct ctl_site *site, struct state *s, char why[CTL_WHY_MAX])
{
	__u64 revision;

	return ctl_state_read_rev(site, s, &revision, why);
}

int ctl_state_read_shared(const struct ctl_site *site, struct state *s, char why[CTL_WHY_MAX])
{
	int lock = ctl_lock(site, 0, why), err;

	if (lock < 0)
		return lock;
	err = ctl_state_read(site, s, why);
	close(lock);
	return err;
}

int ctl_privileged(char why[CTL_WHY_MAX])
{
	if (host_privileged())
		return 0;
	snprintf(why, CTL_WHY_MAX, "needs root, or CAP_BPF and CAP_NET_ADMIN");
	return -EPERM;
}

int ctl_maps_pinned(const struct ctl_site *site)
{
	char path[PATH_MAX], copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", site->pin_dir);
	if (!host_bpffs(dirname(copy)) && !host_bpffs(site->pin_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/vips", site->pin_dir);
	return access(path, F_OK) == 0;
}

int ctl_maps_open(const struct ctl_site *site, struct lb_maps *maps, char why[CTL_WHY_MAX])
{
	int pinned = ctl_maps_pinned(site), err;

	if (pinned < 0) {
		snprintf(why, CTL_WHY_MAX, "no BPF filesystem at %s; mount one with: mount -t bpf "
			 "bpf " CTL_BPFFS_ROOT " (or run ringlb attach, which mounts it)",
			 site->pin_dir);
		return -ENOENT;
	}
	if (!pinned) {
		snprintf(why, CTL_WHY_MAX, "not attached (no maps under %s); run 'ringlb attach "
			 "IFACE' first", site->pin_dir);
		return -ENOENT;
	}
	err = lb_maps_open_pinned(maps, site->pin_dir);
	if (err)
		snprintf(why, CTL_WHY_MAX, "cannot open the maps under %s: %s", site->pin_dir,
			 strerror(-err));
	return err;
}

static int dir_ensure(const char *dir, char why[CTL_WHY_MAX])
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(why, CTL_WHY_MAX, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

int ctl_bpffs_ensure(const struct ctl_site *site, int *mounted, char why[CTL_WHY_MAX])
{
	char copy[PATH_MAX], *parent;
	int err;

	*mounted = 0;
	snprintf(copy, sizeof(copy), "%s", site->pin_dir);
	parent = dirname(copy);
	if (!host_bpffs(parent) && !host_bpffs(site->pin_dir)) {
		if (strcmp(parent, CTL_BPFFS_ROOT)) {
			snprintf(why, CTL_WHY_MAX, "%s is not on a BPF filesystem; mount one with: "
				 "mount -t bpf bpf %s", site->pin_dir, parent);
			return -ENOENT;
		}
		if ((mkdir(CTL_BPFFS_ROOT, 0700) && errno != EEXIST) ||
		    mount("bpf", CTL_BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			err = -errno;
			snprintf(why, CTL_WHY_MAX, "cannot mount the BPF filesystem at "
				 CTL_BPFFS_ROOT ": %s", strerror(errno));
			return err;
		}
		*mounted = 1;
	}
	snprintf(copy, sizeof(copy), "%s/links", site->pin_dir);
	return dir_ensure(site->pin_dir, why) ?: dir_ensure(copy, why);
}

/* --- the deployment secret and the programs on it ------------------------------------ */

int ctl_file_secret(const struct ctl_site *site, int create, __u64 secret[2],
		    char why[CTL_WHY_MAX])
{
	char path[PATH_MAX], hwhy[HOST_WHY_MAX] = "";
	int err;

	ctl_site_path(site, "secret", path, sizeof(path));
	err = host_secret(path, create, secret, hwhy);
	if (err)
		snprintf(why, CTL_WHY_MAX, "deployment secret: %s%s", hwhy,
			 err == -ENOENT ? " (it is made by the first attach)" : "");
	return err;
}

int ctl_served_secret(const struct ctl_site *site, int attached, __u64 secret[2],
		      char why[CTL_WHY_MAX])
{
	if (attached && ctl_kernel_secret(site->pin_dir, secret) == 0)
		return 0;
	return ctl_file_secret(site, 0, secret, why);
}

int ctl_links_converge(const struct ctl_site *site, const struct state *want, int *fixed,
		       char why[CTL_WHY_MAX])
{
	__u64 secret[2];
	int err;

	*fixed = 0;
	err = ctl_file_secret(site, 0, secret, why);
	if (err == -ENOENT && ctl_kernel_secret(site->pin_dir, secret) == -ENOENT)
		return 0;
	if (!err)
		err = ctl_links_sync(site->pin_dir, want, secret, fixed, why);
	memset(secret, 0, sizeof(secret));
	return err;
}

/* Make the kernel hold @want: maps (from @applied, or compared whole when NULL), then programs. */
static int converge(const struct ctl_site *site, const struct lb_maps *maps,
		    const struct state *applied, const struct state *want, char why[CTL_WHY_MAX])
{
	int fixed;

	return ctl_sync(maps, applied, want, why) ?: ctl_links_converge(site, want, &fixed, why);
}

void ctl_load_failure(int err, char why[CTL_WHY_MAX])
{
	snprintf(why, CTL_WHY_MAX, "cannot load the XDP program: %s%s", strerror(-err),
		 (err == -EPERM || err == -EACCES) && !host_may_verify() ?
			 "; the verifier needs CAP_PERFMON too, or root" : "");
}

/*
 * The next hops toward encapsulated VIPs' backends get a datagram each, so
 * the kernel resolves (or refreshes) their neighbour entries: the program's
 * FIB lookup uses them but never refreshes them, and drops a packet that
 * finds none. Best effort, no wait: done after every change.
 */
static void next_hops_refresh(const struct state *s)
{
	size_t i, j;

	for (i = 0; i < s->vip_count; i++)
		if (s->vips[i].forward != LB_FORWARD_L2)
			for (j = 0; j < s->vips[i].backend_count; j++)
				host_neigh_provoke(&s->vips[i].backends[j].addr);
}

/* --- sessions -------------------------------------------------------------------------- */

int ctl_prog_load(const struct ctl_site *site, struct lb_load_opts *opts, struct lb_prog **prog,
		  char why[CTL_WHY_MAX])
{
	int err = ctl_file_secret(site, 1, opts->secret, why);

	if (err)
		return err;
	opts->pin_dir = site->pin_dir;
	err = lb_prog_load(prog, opts);
	memset(opts->secret, 0, sizeof(opts->secret));
	if (err)
		ctl_load_failure(err, why);
	return err;
}

/* Create and pin the maps when there are none (attach after a reboot, a first attach). */
static int maps_create(const struct ctl_session *ss, char why[CTL_WHY_MAX])
{
	struct lb_load_opts opts = {
		.flow_entries = ss->flow_entries ? ss->flow_entries : ss->applied.flow_entries,
	};
	struct lb_prog *prog;
	int err = ctl_prog_load(ss->site, &opts, &prog, why);

	if (!err)
		lb_prog_close(prog);
	return err;
}

int ctl_session_begin(const struct ctl_site *site, struct ctl_session *ss,
		      char why[CTL_WHY_MAX])
{
	char secret_path[PATH_MAX];
	int pinned, err, repaired = 0, fixed = 0, created = 0;
	__u64 secret[2];

	ss->site = site;
	ss->lock = -1;
	ss->have_maps = 0;
	ss->note[0] = '\0';
	lb_maps_init(&ss->maps);
	state_init(&ss->applied);
	err = ctl_privileged(why) ?: state_dir_ensure(site, why);
	if (err)
		return err;
	ss->lock = ctl_lock(site, 1, why);
	if (ss->lock < 0)
		return ss->lock;
	state_tmp_sweep(site->state_path);
	ctl_site_path(site, "secret", secret_path, sizeof(secret_path));
	state_tmp_sweep(secret_path);
	err = ctl_state_read_rev(site, &ss->applied, &ss->revision, why);
	if (err)
		return err;
	pinned = ctl_maps_pinned(site);
	if (pinned == 0 && (ss->flags & CTL_CREATE_MAPS)) {
		err = maps_create(ss, why);
		if (err)
			return err;
		pinned = 1;
		created = 1;
	}
	if (!(ss->flags & CTL_NEEDS_MAPS) && pinned != 1)
		return 0;
	/* A secret file that is there but unusable stops everything, said as it is. */
	err = ctl_file_secret(site, 0, secret, why);
	/* With a store, a key that is not the fleet's stops everything but setting it. */
	if (!err && !(ss->flags & CTL_SECRET_CHANGE))
		err = ctl_store_secret_check(site, secret, why);
	memset(secret, 0, sizeof(secret));
	if (err && err != -ENOENT)
		return err;
	err = ctl_maps_open(site, &ss->maps, why);
	if (err)
		return err;
	ss->have_maps = 1;
	err = ctl_repair(&ss->maps, &ss->applied, &repaired, why) ?:
	      ctl_links_converge(site, &ss->applied, &fixed, why);
	if (err) {
		char cause[CTL_WHY_MAX];

		snprintf(cause, sizeof(cause), "%s", why);
		snprintf(why, CTL_WHY_MAX, "the kernel does not hold the committed state and "
			 "repairing it failed: %s; nothing changed (ringlb verify shows what "
			 "differs)", cause);
		return err;
	}
	/* Maps just created are filled from the state: no repair to speak of. */
	if ((repaired && !created) || fixed)
		snprintf(ss->note, sizeof(ss->note),
			 "first repaired the kernel to the committed state (generation %llu)%s",
			 (unsigned long long)ss->applied.generation,
			 fixed ? ", the programs on the interfaces included" : "");
	return 0;
}

void ctl_session_end(struct ctl_session *ss)
{
	state_free(&ss->applied);
	lb_maps_close(&ss->maps);
	if (ss->lock >= 0)
		close(ss->lock);
	ss->lock = -1;
}

/* --- the change ------------------------------------------------------------------------ */

/* @why with "; nothing changed" after it. */
static void nothing_changed(char why[CTL_WHY_MAX])
{
	char cause[CTL_WHY_MAX];

	snprintf(cause, sizeof(cause), "%s", why);
	snprintf(why, CTL_WHY_MAX, "%s; nothing changed", cause);
}

/* --- the ring transition log ---------------------------------------------------------- */

/* A VIP's ring, or an empty one when it has none (added, removed, no backend). */
static struct ring *transition_ring(const struct state_vip *v)
{
	struct ring *r = NULL;
	__u32 *ids = NULL;

	if (v && state_vip_ring(v, &r, &ids) == 0) {
		free(ids);
		return r;
	}
	return ring_new(&r, RING_VNODES_MIN) ? NULL : r;
}

/*
 * Rings of up to this many points (before and after together) get the exact
 * share moved in the log: both are built and diffed (about 15 ms here at the
 * limit). Building larger ones would cost a command more than the change
 * itself (255 backends x 4,096 points: 2 x 300 ms on a command of 100 ms),
 * so theirs is the ideal share, from the weights (the ring moves within a
 * few per cent of it: test_ring).
 */
#define TRANSITION_EXACT_POINTS 65536

/* The members of @v's ring and their weights (0 for a VIP that is not there). */
static double ring_weight_of(const struct state_vip *v, const char *name, double *total)
{
	double w = 0;
	size_t i;

	*total = 0;
	for (i = 0; v && i < v->backend_count; i++)
		if (state_backend_in_ring(&v->backends[i])) {
			*total += v->backends[i].weight;
			if (strcmp(v->backends[i].name, name) == 0)
				w = v->backends[i].weight;
		}
	return w;
}

/* The ideal diff of two rings, from the weights of their members. */
static int ideal_diff(const struct state_vip *was, const struct state_vip *now,
		      struct ring_diff *out)
{
	const struct state_vip *sides[2] = { was, now };
	size_t k, i, n = 0;

	out->moved = 0;
	out->count = 0;
	out->members = calloc((was ? was->backend_count : 0) + (now ? now->backend_count : 0) + 1,
			      sizeof(*out->members));
	if (!out->members)
		return -ENOMEM;
	for (k = 0; k < 2; k++)
		for (i = 0; sides[k] && i < sides[k]->backend_count; i++) {
			const char *name = sides[k]->backends[i].name;
			struct ring_diff_member *m = &out->members[n];
			double tb, ta, wb = ring_weight_of(was, name, &tb),
				       wa = ring_weight_of(now, name, &ta);

			/* Each name once: the second side adds only names the first lacked. */
			if (k == 1 && was && state_backend_find(was, name))
				continue;
			snprintf(m->name, sizeof(m->name), "%s", name);
			m->share_before = tb ? wb / tb : 0;
			m->share_after = ta ? wa / ta : 0;
			if (m->share_after > m->share_before)
				out->moved += m->share_after - m->share_before;
			n++;
		}
	out->count = n;
	return 0;
}

/* One line for the VIP whose ring differs between @was and @now (either may be NULL). */
static json_t *transition_line(const struct state_vip *was, const struct state_vip *now,
			       const struct state *after, const char *cause, const char *outcome,
			       double seconds)
{
	size_t p_was = 0, p_now = 0, i;
	uint64_t f;
	int exact;
	struct ring *a = NULL, *b = NULL;
	struct ring_diff diff = { 0 };
	char spec[ADDR_TEXT_MAX], when[40];
	struct passwd *pw = getpwuid(getuid());
	json_t *line = NULL, *members;
	struct timespec ts;
	struct tm tm;

	if (was && state_vip_summary(was, &p_was, &f))
		p_was = 0;
	if (now && state_vip_summary(now, &p_now, &f))
		p_now = 0;
	exact = p_was + p_now <= TRANSITION_EXACT_POINTS;
	if (exact) {
		a = transition_ring(was);
		b = transition_ring(now);
		if (!a || !b || ring_diff(a, b, &diff))
			goto out;
	} else if (ideal_diff(was, now, &diff)) {
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	vip_format(now ? &now->spec : &was->spec, spec);
	members = json_array();
	for (i = 0; members && i < diff.count; i++) {
		const struct ring_diff_member *m = &diff.members[i];

		if (m->share_before != m->share_after)
			json_array_append_new(members,
					      json_pack("{s:s, s:f, s:f}", "backend", m->name,
							"share_before", m->share_before,
							"share_after", m->share_after));
	}
	line = json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:f, s:b, s:o, s:b, s:s}", "time",
			 when, "vip", spec, "generation", (json_int_t)after->generation, "cause",
			 cause, "user", pw ? pw->pw_name : "?", "points_before", (json_int_t)p_was,
			 "points_after", (json_int_t)p_now, "moved", diff.moved, "exact", exact,
			 "backends", members, "fail_open", now && state_vip_fails_open(now),
			 "outcome", outcome);
	if (line)
		json_object_set_new(line, "duration_seconds", json_real(seconds));
	if (line && getenv("SUDO_USER"))
		json_object_set_new(line, "sudo_user", json_string(getenv("SUDO_USER")));
out:
	ring_diff_free(&diff);
	ring_free(a);
	ring_free(b);
	return line;
}

/* Does VIP @was's ring differ from @now's (either may be NULL)? */
static int ring_moves(const struct state_vip *was, const struct state_vip *now)
{
	size_t p1 = 0, p2 = 0;
	uint64_t f1 = 0, f2 = 0;

	if (!was || !now)
		return (was && state_vip_summary(was, &p1, &f1) == 0 && p1) ||
		       (now && state_vip_summary(now, &p2, &f2) == 0 && p2);
	if (state_vip_summary(was, &p1, &f1) || state_vip_summary(now, &p2, &f2))
		return 1;
	return p1 != p2 || f1 != f2;
}

/*
 * Append one JSON line to rings.log beside the state file for every VIP
 * whose ring the change from @before to @after moves: when, which VIP, the
 * cause, who, points before and after, the share of the hash space that
 * changed owner and each backend's share before and after, whether the VIP
 * fails open, and the outcome ("ok", or "failed: why": the old ring serves).
 */
static void transitions_log(const struct ctl_site *site, const struct state *before,
			    const struct state *after, const char *cause, const char *outcome,
			    double seconds)
{
	char path[PATH_MAX];
	size_t i;
	int fd;

	ctl_site_path(site, "rings.log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	for (i = 0; i < before->vip_count + after->vip_count; i++) {
		const struct state_vip *was, *now;
		json_t *line;
		char *text;

		if (i < after->vip_count) {
			now = &after->vips[i];
			was = state_vip_find(before, &now->spec);
		} else {
			was = &before->vips[i - after->vip_count];
			now = NULL;
			if (state_vip_find(after, &was->spec))
				continue;
		}
		if (!ring_moves(was, now))
			continue;
		line = transition_line(was, now, after, cause ? cause : "?", outcome, seconds);
		text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6))
			    : NULL;
		json_decref(line);
		if (text) {
			size_t len = strlen(text);

			text[len] = '\n';
			if (write(fd, text, len + 1) < 0) {
				/* Best effort, as the audit log: the change stands or fell already. */
			}
		}
		free(text);
	}
	close(fd);
}

/* One try of ctl_change(): -ESTALE when the store changed between the read and the commit. */
static int change_once(const struct ctl_site *site, unsigned int flags, __u32 flow_entries,
		       ctl_apply_fn apply, const void *args, const char *cause,
		       struct ctl_outcome *out)
{
	struct ctl_session ss = { .flags = flags, .flow_entries = flow_entries };
	struct ctl_apply ctx = { .site = site };
	struct state want;
	char *why = out->why, *undo = out->undo;
	int err, fixed, logged = 0;
	struct timespec start, end;

	clock_gettime(CLOCK_MONOTONIC, &start);
	memset(out, 0, sizeof(*out));
	state_init(&want);
	err = ctl_session_begin(site, &ss, why);
	if (err)
		goto out;
	if (state_clone(&want, &ss.applied)) {
		snprintf(why, CTL_WHY_MAX, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	err = apply(&ctx, args, &want, why);
	if (err)
		goto undo_links; /* attach may have made its link already */
	logged = 1;
	/*
	 * Every change keeps its VIPs' last healthy sets (fail open) and the
	 * rings it replaces, whatever command or verdict made it.
	 */
	state_health_settle(&ss.applied, &want);
	state_history_advance(&ss.applied, &want);
	want.generation = ss.applied.generation + 1;
	if (ss.have_maps) {
		err = ctl_record(&ss.maps, &ss.applied, 1);
		if (err) {
			snprintf(why, CTL_WHY_MAX, "cannot write the kernel's record: %s; nothing "
				 "changed", strerror(-err));
			goto undo_links;
		}
	}
	/* The commit. */
	err = state_commit(site, &want, &ss.applied, ss.revision, why);
	if (err) {
		/* Another host's change came first: the caller applies this one to it. */
		if (err == -ESTALE)
			logged = 0;
		nothing_changed(why);
		goto undo_record;
	}
	if (!ss.have_maps)
		goto out;
	err = converge(site, &ss.maps, &ss.applied, &want, why) ?:
	      ctl_record(&ss.maps, &want, 0);
	if (!err)
		goto out;
	if (!why[0])
		snprintf(why, CTL_WHY_MAX, "%s", strerror(-err));
	/*
	 * The store's state stands: other hosts may serve it already. This
	 * host's kernel is brought to it by the next session.
	 */
	if (site->store) {
		char cause_[CTL_WHY_MAX];

		snprintf(cause_, sizeof(cause_), "%s", why);
		snprintf(why, CTL_WHY_MAX, "committed to the store, but this host's kernel could "
			 "not follow: %s; the next change or the daemon repairs it", cause_);
		goto out;
	}
	nothing_changed(why);
	/* If the old state cannot be written back, the new one stays: the next command repairs. */
	if (state_save(&ss.applied, site->state_path))
		goto out;
	if (converge(site, &ss.maps, NULL, &ss.applied, undo) ||
	    ctl_record(&ss.maps, &ss.applied, 0))
		goto undo_failed;
	goto out;
undo_record:
	if (ss.have_maps && ctl_record(&ss.maps, &ss.applied, 0)) {
		snprintf(undo, CTL_WHY_MAX, "cannot write the kernel's record");
		goto undo_failed;
	}
undo_links:
	if (ss.have_maps && ctl_links_converge(site, &ss.applied, &fixed, undo))
		goto undo_failed;
	goto out;
undo_failed:
	if (!undo[0])
		snprintf(undo, CTL_WHY_MAX, "cannot write the kernel's record");
out:
	if (!err) {
		snprintf(out->note, sizeof(out->note), "%s", ss.note);
		next_hops_refresh(&want);
	}
	if (logged) {
		char outcome[CTL_WHY_MAX + 16];

		snprintf(outcome, sizeof(outcome), err ? "failed: %s" : "ok", why);
		clock_gettime(CLOCK_MONOTONIC, &end);
		transitions_log(site, &ss.applied, &want, cause, outcome,
				(double)(end.tv_sec - start.tv_sec) +
					(double)(end.tv_nsec - start.tv_nsec) / 1e9);
	}
	state_free(&want);
	ctl_session_end(&ss);
	return err;
}

int ctl_change(const struct ctl_site *site, unsigned int flags, __u32 flow_entries,
	       ctl_apply_fn apply, const void *args, const char *cause,
	       struct ctl_outcome *out)
{
	int tries, err;

	for (tries = 1;; tries++) {
		err = change_once(site, flags, flow_entries, apply, args, cause, out);
		if (err != -ESTALE || tries == CTL_STORE_TRIES)
			return err;
		/* Another host is writing: a moment that differs per try and per process. */
		usleep((useconds_t)(1000 * (5 + (getpid() + tries * 7) % 20)));
	}
}

/* --- the audit log --------------------------------------------------------------------- */

/* The login uid the kernel keeps for this session (set at login, kept by sudo), or -1. */
static long login_uid(void)
{
	char text[32] = "";
	long uid = -1;
	FILE *f = fopen("/proc/self/loginuid", "re");

	if (f) {
		if (fgets(text, sizeof(text), f))
			uid = strtol(text, NULL, 10);
		fclose(f);
	}
	return uid == 4294967295L ? -1 : uid;
}

/*
 * A word of the command line as a JSON string: printable ASCII as it is,
 * every other byte as the four characters \xNN, so what is logged is valid
 * JSON whatever bytes the caller passed.
 */
static json_t *audit_word(const char *word)
{
	size_t len = strlen(word), i, n = 0;
	char *text = malloc(4 * len + 1);
	json_t *j;

	if (!text)
		return json_string("?");
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)word[i];

		if (ch >= 0x20 && ch < 0x7f)
			text[n++] = (char)ch;
		else
			n += (size_t)sprintf(text + n, "\\x%02x", ch);
	}
	text[n] = '\0';
	j = json_string(text);
	free(text);
	return j;
}

void ctl_audit(const struct ctl_site *site, char *const *words, int count, int ok,
	       const char *error)
{
	char path[PATH_MAX], when[32];
	struct passwd *pw = getpwuid(getuid());
	const char *sudo_user = getenv("SUDO_USER");
	time_t now = time(NULL);
	json_t *line, *jwords;
	long luid = login_uid();
	struct tm tm;
	char *text;
	int fd, i;

	jwords = json_array();
	for (i = 0; i < count; i++)
		json_array_append_new(jwords, audit_word(words[i]));
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	line = json_pack("{s:s, s:I, s:s, s:o, s:s}", "time", when, "uid", (json_int_t)getuid(),
			 "user", pw ? pw->pw_name : "?", "command", jwords, "result",
			 ok ? "ok" : "error");
	if (!line)
		return;
	if (sudo_user)
		json_object_set_new(line, "sudo_user", audit_word(sudo_user));
	if (luid >= 0)
		json_object_set_new(line, "login_uid", json_integer(luid));
	if (!ok && error && error[0])
		json_object_set_new(line, "error", audit_word(error));
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (!text)
		return;
	ctl_site_path(site, "audit.log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		size_t len = strlen(text);

		text[len] = '\n';
		if (write(fd, text, len + 1) < 0) {
			/* Nothing to do: the change itself stands or fell already. */
		}
		close(fd);
	}
	free(text);
}
