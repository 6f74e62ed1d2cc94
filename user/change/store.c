// SPDX-License-Identifier: GPL-2.0-only
/*
 * The committed state with a store (store.h): the fleet's half in etcd,
 * this host's facts in its state file, and the fleet's key digest.
 */
#define _GNU_SOURCE
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etcd.h"
#include "site.h"


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
static int store_read(const struct site *site, struct state *s, __u64 *revision,
		      char why[FAULT_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", swhy[STATE_WHY_MAX] = "", *text = NULL;
	struct etcd_spec spec;
	struct state local;
	const char *problem = NULL;
	int err;

	state_init(s);
	if (etcd_spec_parse(site->store, &spec, &problem)) {
		snprintf(why, FAULT_WHY_MAX, "--store %s: %s", site->store, problem);
		return -EINVAL;
	}
	err = state_load(&local, site->state_path, swhy);
	if (err) {
		snprintf(why, FAULT_WHY_MAX, "state file %s: %s", site->state_path, swhy);
		return err;
	}
	err = etcd_get(&spec, "state", &text, revision, ewhy);
	if (err) {
		snprintf(why, FAULT_WHY_MAX, "cannot read the state from the store: %s", ewhy);
		state_free(&local);
		return err;
	}
	if (text) {
		err = state_from_text(s, text, swhy);
		free(text);
		if (err) {
			snprintf(why, FAULT_WHY_MAX, "the store's state %s/state: %s", spec.prefix,
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
int store_commit(const struct site *site, const struct state *want,
			const struct state *applied, __u64 revision, char why[FAULT_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", *text = NULL, *before = NULL;
	struct etcd_spec spec;
	const char *problem = NULL;
	int err = 0;

	if (site->store) {
		if (etcd_spec_parse(site->store, &spec, &problem)) {
			snprintf(why, FAULT_WHY_MAX, "--store %s: %s", site->store, problem);
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
				snprintf(why, FAULT_WHY_MAX, "cannot write the state to the store: %s",
					 ewhy);
		}
		free(text);
		free(before);
		if (err)
			return err;
	}
	err = state_save(want, site->state_path);
	if (err)
		snprintf(why, FAULT_WHY_MAX, "cannot write %s: %s%s", site->state_path, strerror(-err),
			 site->store ? " (the store holds the change)" : "");
	return err;
}

int store_secret_check(const struct site *site, const __u64 secret[2],
			   char why[FAULT_WHY_MAX])
{
	char ewhy[ETCD_WHY_MAX] = "", mine[24], *fleet = NULL;
	struct etcd_spec spec;
	const char *problem = NULL;
	__u64 revision = 0;
	int err;

	if (!site->store)
		return 0;
	if (etcd_spec_parse(site->store, &spec, &problem)) {
		snprintf(why, FAULT_WHY_MAX, "--store %s: %s", site->store, problem);
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
		snprintf(why, FAULT_WHY_MAX, "cannot check the flow hash key against the store: %s",
			 ewhy);
		return err;
	}
	if (fleet && strcmp(fleet, mine)) {
		snprintf(why, FAULT_WHY_MAX, "this host's flow hash key (digest %s) is not the "
			 "fleet's (digest %s in the store): its hosts would send a flow to different "
			 "backends; give it the fleet's key with `ringlb secret set FILE`", mine,
			 fleet);
		err = -EKEYREJECTED;
	}
	free(fleet);
	return err;
}

int site_state_read_rev(const struct site *site, struct state *s, __u64 *revision,
		       char why[FAULT_WHY_MAX])
{
	char swhy[STATE_WHY_MAX] = "";
	int err;

	*revision = 0;
	if (site->store)
		return store_read(site, s, revision, why);
	err = state_load(s, site->state_path, swhy);
	if (err)
		snprintf(why, FAULT_WHY_MAX, "state file %s: %s", site->state_path, swhy);
	return err;
}

int site_state_read(const struct site *site, struct state *s, char why[FAULT_WHY_MAX])
{
	__u64 revision;

	return site_state_read_rev(site, s, &revision, why);
}

int site_state_read_shared(const struct site *site, struct state *s, char why[FAULT_WHY_MAX])
{
	int lock = site_lock(site, 0, why), err;

	if (lock < 0)
		return lock;
	err = site_state_read(site, s, why);
	close(lock);
	return err;
}
