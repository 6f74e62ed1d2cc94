// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flow sweep: every few seconds the daemon deletes the flow table's
 * entries idle past their timeout (--flow-timeout for an open flow,
 * --flow-closed-timeout once its client sent a FIN or a RST), so the table
 * holds the flows that are live: its occupancy means what the
 * RinglbFlowTableFull alert says, and a drain's LIVE FLOWS falls soon after
 * its connections close. The table's own eviction only makes room in a set
 * that is full. A sweep is a walk of the table's mapped sets (a few
 * milliseconds for 65,536 entries) and never waits on the store.
 */
#include <errno.h>
#include <string.h>

#include "daemon_impl.h"

/* FLOW_SWEEP_S_MAX - the longest time between sweeps. */
#define FLOW_SWEEP_S_MAX 5

static int on_flow_sweep(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct kernel_expiry x;
	struct lb_maps maps;
	int attached, err;

	(void)s;
	(void)usec;
	pthread_mutex_lock(&d->lock);
	attached = d->attached;
	pthread_mutex_unlock(&d->lock);
	lb_maps_init(&maps);
	if (!attached || lb_maps_open_pinned(&maps, d->o->site.pin_dir))
		return 0;
	err = kernel_flows_expire(&maps, (__u64)d->o->flow_timeout_s * LB_NS_PER_S,
				  (__u64)d->o->flow_closed_timeout_s * LB_NS_PER_S, &x);
	lb_maps_close(&maps);
	pthread_mutex_lock(&d->lock);
	d->counts.flows_expired += x.removed;
	pthread_mutex_unlock(&d->lock);
	if (err && !d->flow_sweep_failing)
		dlog("flow sweep: %s (idle flows stay until the table needs their room)",
		     strerror(-err));
	else if (!err && d->flow_sweep_failing)
		dlog("flow sweep: working again");
	d->flow_sweep_failing = err != 0;
	return 0;
}

int flow_sweep_start(struct daemon *d)
{
	__u32 every = d->o->flow_closed_timeout_s / 2;

	if (every < 1)
		every = 1;
	if (every > FLOW_SWEEP_S_MAX)
		every = FLOW_SWEEP_S_MAX;
	return daemon_every(d->loop, (__u64)every * 1000000, (__u64)every * 1000000, on_flow_sweep,
			    d);
}
