# SPDX-License-Identifier: GPL-2.0-only
#
# The three-balancer fleet of fleet.sh and fleet_faults.sh (scripts/fleet.sh's
# network): etcd, the backends, three balancers on one store, their daemons
# and bird, and what the tests ask of them. Source it after lib.sh and
# scripts/fleet.sh with P, W, PIN, STORE and VIP set; DAEMON_ARGS (optional)
# are more options for every daemon.
# shellcheck shell=bash

# on I ARGS: ringlb on balancer I, with its own state directory and pins, on the store.
on() {
	local i=$1
	shift
	nsenter --net="/run/netns/${P}lb$i" "$ROOT/build/ringlb" --state "$W/lb$i/state.json" \
		--pin-dir "$PIN-lb$i" --store "$STORE" "$@"
}
# be I ARGS and client ARGS come from tests/lib.sh (the same names and paths).
# daemon_on I: balancer I's daemon; a suite's daemon_wrap I (when defined) says what
# command it runs under (unshare, for one).
daemon_on() {
	# shellcheck disable=SC2046
	nsenter --net="/run/netns/${P}lb$1" $(type -t daemon_wrap >/dev/null && daemon_wrap "$1") \
		"$ROOT/build/ringlb" --state "$W/lb$1/state.json" \
		--pin-dir "$PIN-lb$1" --store "$STORE" daemon --metrics none \
		--bgp-routes "$W/lb$1/ringlb-routes.conf" --birdc-socket "$W/lb$1/bird.ctl" ${DAEMON_ARGS:-} \
		>>"$W/lb$1/daemon.log" 2>&1 &
	local pid=$! t
	# Under a wrapper that forks (unshare), the daemon is its child: the pid to signal.
	if type -t daemon_wrap >/dev/null && [ -n "$(daemon_wrap "$1")" ]; then
		for t in $(seq 1 50); do [ -n "$(pgrep -P "$pid")" ] && break; sleep 0.02; done
		pid=$(pgrep -P "$pid" | head -1)
	fi
	echo "$pid" >"$W/lb$1/daemon.pid"
}
# daemon_stop I: balancer I's daemon stopped (SIGTERM), waited for (it may be no child).
daemon_stop() {
	local pid t
	pid=$(cat "$W/lb$1/daemon.pid")
	kill "$pid" 2>/dev/null
	for t in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	wait "$pid" 2>/dev/null
}
etcd_start() { mkdir -p "$W/etcd"; etcd_up "${P}etcd" 198.18.20.5:2379 2380 "$W/etcd"; }
digest() { on "$1" show --json | jq -r '[.vips[].kernel_ring_digest] | join(" ")'; }
# digests I...: the digests of hosts I..., a line each in that order, read at once.
digests() {
	local i
	local -a pids=()
	for i in "$@"; do
		digest "$i" >"$W/digest-$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in "$@"; do cat "$W/digest-$i"; done
}
# paths: how many next hops r1's route to the VIP has.
paths() {
	ip -n "${P}r1" -j route show "$FLEET_VIP" | jq '[.[0].nexthops // (if .[0].gateway then [1] else [] end)] | .[0] | length'
}
wait_paths() {
	local t
	for t in $(seq 1 150); do [ "$(paths)" = "$1" ] && return 0; sleep 0.1; done
	return 1
}

# fleet_setup: etcd, the backends, three balancers on one store, bird.
fleet_setup() {
	local i t
	fleet_up "$P" "$W" || die "fleet network"
	etcd_start
	for i in 1 2 3; do
		mkdir -p "$W/b$i"
		be "$i" decap attach eth0 --from 198.18.20.0/24 --from 198.18.30.0/24 \
			--vip "$FLEET_VIP" >/dev/null ||
			die "decap on b$i"
	done
	on 1 attach eth0 --source "$(fleet_lb 1)" >/dev/null || die "attach lb1"
	for i in 2 3; do
		on "$i" secret set "$W/lb1/secret" && on "$i" attach eth0 --source "$(fleet_lb "$i")" \
			>/dev/null || die "attach lb$i"
	done
	on 1 vip add "$VIP" --forward gue --check-interval 500 --check-timeout 300 || die "vip add"
	for i in 1 2 3; do
		on 1 backend add "$VIP" "b$i" "$(fleet_backend "$i")" >/dev/null || die "backend add b$i"
	done
	fleet_router_bird
	# The three daemons start together; each host's bird once its daemon wrote the routes.
	for i in 1 2 3; do daemon_on "$i"; done
	for i in 1 2 3; do
		for t in $(seq 1 50); do [ -s "$W/lb$i/ringlb-routes.conf" ] && break; sleep 0.1; done
		fleet_balancer_bird "$i"
	done
}

