// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store's one lead (daemon_impl.h): with a shared store, one daemon of
 * the fleet runs the health checks, the one holding the store's lead
 * (store_lead(): etcd's PREFIX/health-leader on a lease of
 * STORE_LEAD_TTL_S seconds); every daemon renews its claim every
 * STORE_LEAD_RENEW_MS, so when the leader dies another takes over within
 * the TTL. Without a shared store this daemon leads, always.
 */
#include "daemon_impl.h"

#include <string.h>

/* Renew the claim, or campaign; say when who runs the checks changes. */
static int on_lead(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	char holder[STORE_HOLDER_MAX];
	struct fault f = { 0 };
	int was = d->leader, leader = 0;

	(void)s;
	(void)usec;
	snprintf(holder, sizeof(holder), "%s", d->holder);
	store_lead(d->o->site.store, d->identity, &leader, holder, &f);
	if (!leader && strcmp(holder, d->holder))
		dlog("the fleet's health checks are run by %s", holder);
	else if (leader && !was)
		dlog("this daemon (%s) runs the fleet's health checks", d->identity);
	snprintf(d->holder, sizeof(d->holder), "%s", holder);
	if (was && !leader) {
		dlog("lost the health checks' lease (%s); another daemon takes them", f.why);
		d->holder[0] = '\0';
	}
	if (was != leader) {
		pthread_mutex_lock(&d->lock);
		d->leader = leader;
		pthread_mutex_unlock(&d->lock);
		probes_poke(d);
	}
	return 0;
}

int leader_start(struct daemon *d)
{
	if (!store_shared(d->o->site.store)) {
		d->leader = 1;
		return 0;
	}
	return daemon_every(d->loop, 0, STORE_LEAD_RENEW_MS * 1000ull, on_lead, d);
}
