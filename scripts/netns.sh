#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What the namespace test networks (topology.sh, routed.sh, fleet.sh) share:
# taking one down. Sourced by them.

# netns_down PREFIX [PIDFILE...]: stop the daemons the pid files name, then
# every process left in a namespace named PREFIX and a letter (PREFIXlb,
# PREFIXc1: a prefix ends in its script's pid, and rl12 must not take rl123's
# namespaces), then the namespaces. Whatever is already gone is skipped; it
# always succeeds.
netns_down() {
	local p=$1 ns pid
	shift
	for pid in "$@"; do
		[ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
	done
	for ns in $(ip netns list | awk '{print $1}' | grep "^${p}[a-z]" || true); do
		# Kill whatever still runs inside before the namespace goes.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	true
}
