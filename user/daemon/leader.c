// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store's one lead (daemon_impl.h): with a shared store, one daemon of
 * the fleet runs the health checks, the one holding the store's lead
 * (store_lead(): etcd's PREFIX/health-leader on a lease of
 * STORE_LEAD_TTL_S seconds). A thread of its own renews the claim every
 * STORE_LEAD_RENEW_MS, so no other store I/O (reads, commits, a slow
 * store) delays a renewal, and when the leader dies another takes over
 * within the TTL.
 *
 * The fence: a renewal that succeeded proves the lease alive for the TTL
 * from the moment it was sent, no longer. The leader may run checks only
 * until then, less LEAD_FENCE_MARGIN_MS (daemon_leads()): one that cannot
 * renew (a partition, a store slower than the TTL) stops before its lease
 * can expire and another daemon can take the key. Without a shared store
 * this daemon leads, always.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/** LEAD_FENCE_MARGIN_MS - a leader stops its checks this long before its lease could expire. */
#define LEAD_FENCE_MARGIN_MS 1000

int daemon_leads(struct daemon *d, __u64 now)
{
	return d->leader && now < d->lead_until_ns;
}

/* One renewal or campaign; say when who runs the checks changes. */
static void lead_once(struct daemon *d)
{
	char holder[STORE_HOLDER_MAX];
	struct fault f = { 0 };
	__u64 sent = daemon_now_ns();
	int was, leader = 0;

	pthread_mutex_lock(&d->lock);
	was = d->leader;
	snprintf(holder, sizeof(holder), "%s", d->holder);
	pthread_mutex_unlock(&d->lock);
	store_lead(d->o->site.store, d->identity, &leader, holder, &f);
	if (!leader && strcmp(holder, d->holder))
		dlog("the fleet's health checks are run by %s", holder);
	else if (leader && !was)
		dlog("this daemon (%s) runs the fleet's health checks", d->identity);
	if (was && !leader)
		dlog("lost the health checks' lease (%s); another daemon takes them",
		     f.err ? f.why : "the key is on another daemon's lease");
	pthread_mutex_lock(&d->lock);
	snprintf(d->holder, sizeof(d->holder), "%s", was && !leader ? "" : holder);
	d->leader = leader;
	if (leader)
		d->lead_until_ns = sent + STORE_LEAD_TTL_S * 1000000000ull -
				   LEAD_FENCE_MARGIN_MS * 1000000ull;
	pthread_mutex_unlock(&d->lock);
	if (was != leader)
		probes_poke(d);
}

static void *lead_main(void *arg)
{
	struct daemon *d = arg;
	__u64 next = daemon_now_ns();

	while (!__atomic_load_n(&d->lead_stopping, __ATOMIC_ACQUIRE)) {
		if (daemon_now_ns() >= next) {
			next = daemon_now_ns() + STORE_LEAD_RENEW_MS * 1000000ull;
			lead_once(d);
		}
		usleep(50000);
	}
	return NULL;
}

int leader_start(struct daemon *d)
{
	if (!store_shared(d->o->site.store)) {
		d->leader = 1;
		d->lead_until_ns = UINT64_MAX;
		return 0;
	}
	if (pthread_create(&d->lead_thread, NULL, lead_main, d))
		return -EAGAIN;
	d->lead_running = 1;
	return 0;
}

void leader_stop(struct daemon *d)
{
	if (!d->lead_running)
		return;
	__atomic_store_n(&d->lead_stopping, 1, __ATOMIC_RELEASE);
	pthread_join(d->lead_thread, NULL);
	d->lead_running = 0;
}
