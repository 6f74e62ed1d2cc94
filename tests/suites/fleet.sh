#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Three balancer hosts as one (scripts/fleet.sh): the desired state in a real
# etcd, the VIP announced by bird2 from every host, a router that installs
# the three paths as one ECMP route with a layer-4 hash, backends behind GUE
# with second chance, nginx and curl. Its tests (tests/suites/lib.sh runs
# them; `fleet.sh TEST...` runs some):
#
#   routes       the router learned the VIP from the three balancers by BGP
#                (one route, 3 next hops); 30 connections through the fleet
#   propagation  a change made with the CLI on one host serves on all three:
#                p50 and p99 over 50 changes, the three ring digests equal
#                after each
#   concurrent   16 concurrent changes from two hosts: none lost
#   downloads    (after routes) 300 long downloads spread over the hosts by
#                ECMP; one host drained (BGP withdraws its route), later
#                another cut off its link: every download completes whole,
#                none reset
#   etcd_down    (after routes) etcd stopped: every host keeps serving, a
#                change fails in one line
#   etcd_back    (after etcd_down) etcd back: the hosts converge without a
#                restart
#   other_key    a host restarted on another flow hash key does not announce
#                and says why
#   alive        the three daemons ran through it all
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/fleet.sh"

require_root fleet

TEST_NAME=fleet
P=rfl$$
scratch_dir
PIN=/sys/fs/bpf/ringlb-$P
trap 'kill $(jobs -p) 2>/dev/null; fleet_down "$P" "$W"; rm -rf "$PIN"-* "$W"' EXIT
STORE="etcd://198.18.20.5:2379/ringlb-fleet"
VIP="$FLEET_VIP:80/tcp"

. "$ROOT/tests/suites/fleet_lib.sh"
setup() { fleet_setup; }

t_routes() {
	local got k
	wait_paths 3 && pass "the router learned $FLEET_VIP from the three balancers by BGP: one route, 3 next hops" ||
		fail "router route: $(ip -n "${P}r1" route show "$FLEET_VIP"); lb1: $(tail -3 "$W/lb1/daemon.log")"
	got=$(for k in $(seq 1 30); do client curl -s -m 2 "http://$FLEET_VIP/"; done | sort | uniq -c | tr -s ' ' | tr '\n' ',')
	[ "$(echo "$got" | grep -o '[0-9]* b' | awk '{s += $1} END {print s}')" = 30 ] &&
		pass "30 connections through the fleet: $got" || fail "connections: $got"
}

# --- a change on one host serves on all three ----------------------------------------------------
# The time from the change's commit on lb1 until lb2's and lb3's kernels were
# read serving it: the three hosts read at once (one after another, the reads
# themselves were most of the time measured: up to 0.6 s of a 0.65 s figure,
# on a loaded machine, for a change served at the first look).
t_propagation() {
	local k start want t p50 p99 revs i d2 d3 unconfirmed=0
	: >"$W/lat"
	rm -f "$W/differ"
	for k in $(seq 1 50); do
		# A change the store did not confirm (etcd slower than the CLI's 2 s on a loaded
		# machine) is made again, as its message says; any other failure fails.
		if ! on 1 backend weight "$VIP" b3 $((k % 2 + 1)) 2>"$W/change.err"; then
			grep -q "the store did not confirm the change" "$W/change.err" &&
				on 1 backend weight "$VIP" b3 $((k % 2 + 1)) &&
				unconfirmed=$((unconfirmed + 1)) ||
				fail "change $k: $(cat "$W/change.err")"
		fi
		start=$(date +%s%N)
		{ read -r want; read -r d2; read -r d3; } < <(digests 1 2 3)
		for t in $(seq 1 200); do
			[ "$d2" = "$want" ] && [ "$d3" = "$want" ] && break
			sleep 0.02
			{ read -r d2; read -r d3; } < <(digests 2 3)
		done
		echo $(( ($(date +%s%N) - start) / 1000000 )) >>"$W/lat"
		{ read -r d2; read -r d3; } < <(digests 2 3)
		[ "$d2" = "$want" ] && [ "$d3" = "$want" ] || echo differ >>"$W/differ"
	done
	p50=$(sort -n "$W/lat" | sed -n 25p)
	p99=$(sort -n "$W/lat" | sed -n 50p)
	revs=$(for i in 1 2 3; do on "$i" show --json | jq .store_revision; done | sort -u | wc -l)
	# The figures are reported, not bounded: a timed bound fails on a loaded machine (CI
	# saw one change of 50 take 3.9 s in three lanes). Each change must serve everywhere.
	[ ! -e "$W/differ" ] && [ "$revs" -eq 1 ] &&
		pass "50 changes on lb1: served on lb2 and lb3 after p50 $p50 ms, p99 (the slowest) $p99 ms; the three ring digests equal after each; show --json gives one store revision on all three; $unconfirmed unconfirmed by the store and made again" ||
		fail "propagation: p50 $p50 ms, p99 $p99 ms, $(cat "$W/differ" 2>/dev/null | wc -l) changes never equal, $revs store revisions"
}

# --- concurrent changes from two hosts ------------------------------------------------------------
t_concurrent() {
	local k added
	for k in $(seq 1 8); do
		on 1 backend add "$VIP" "x$k" "198.18.30.$((40 + k))" >/dev/null 2>&1 || echo "x$k" >>"$W/lost" &
		on 3 backend add "$VIP" "y$k" "198.18.30.$((50 + k))" >/dev/null 2>&1 || echo "y$k" >>"$W/lost" &
	done
	wait $(jobs -p | grep -v -e "^$ETCD\$" -e "^$(cat "$W/lb1/daemon.pid")\$" \
		-e "^$(cat "$W/lb2/daemon.pid")\$" -e "^$(cat "$W/lb3/daemon.pid")\$") 2>/dev/null
	added=$(on 2 show --json | jq --arg v "$VIP" '[.vips[] | select(.vip == $v) | .backends[].name |
		select(test("^[xy]"))] | length')
	[ "$added" -eq 16 ] && [ ! -e "$W/lost" ] &&
		pass "16 concurrent changes from lb1 and lb3 (8 each): all 16 in the store, as lb2 reads it" ||
		fail "concurrent changes: $added of 16, lost: $(cat "$W/lost" 2>/dev/null | tr '\n' ' ')"
	for k in $(seq 1 8); do
		on 1 backend remove "$VIP" "x$k" >/dev/null && on 1 backend remove "$VIP" "y$k" >/dev/null ||
			fail "remove x$k/y$k"
	done
}

# --- 300 long downloads through a drain and a host cut off ------------------------------------------
t_downloads() {
	local k spread whole i dls
	mkdir -p "$W/dl"
	# One shell in the client starts the 300 (not 300 of ip netns exec, 4 s of starting).
	client bash -c 'for k in $(seq 1 300); do
		curl -s -m 120 -o "$1/$k" -w "%{http_code} %{exitcode}" "http://$2/long" >"$1/$k.code" 2>/dev/null &
	done; wait' downloads "$W/dl" "$FLEET_VIP" &
	dls=$!
	sleep 3
	# Packets each host forwarded to the VIP so far: ECMP spreads the downloads over all three.
	spread=$(for i in 1 2 3; do on "$i" stats --json | jq --arg v "$VIP" '.vips[] | select(.vip == $v) | .packets'; done | tr '\n' ' ')
	[ "$(echo "$spread" | tr ' ' '\n' | grep -c '^[1-9]')" -eq 3 ] &&
		pass "300 downloads under way, spread by ECMP: packets so far on lb1, lb2, lb3: $spread" ||
		fail "not spread over the three hosts: $spread"
	on 1 host drain || fail "host drain"
	wait_paths 2 && pass "lb1 drained: BGP withdrew its route (2 next hops left)" ||
		fail "drain: $(ip -n "${P}r1" route show "$FLEET_VIP" | tr '\n' ' '); lb1: $(grep -v 'ring transition' "$W/lb1/daemon.log" | tail -4)"
	sleep 3
	ip -n "${P}r1" link set p-lb2 down
	wait_paths 1 && pass "lb2 cut off its link: the router dropped it after the hold time (1 next hop left)" ||
		fail "cut: $(ip -n "${P}r1" route show "$FLEET_VIP")"
	wait "$dls" 2>/dev/null
	whole=0
	for k in $(seq 1 300); do
		[ "$(cat "$W/dl/$k.code")" = "200 0" ] && [ "$(stat -c %s "$W/dl/$k")" -eq 524288 ] &&
			[ "$(tr -d "$(head -c 1 "$W/dl/$k")" <"$W/dl/$k" | wc -c)" -eq 0 ] && whole=$((whole + 1))
	done
	[ "$whole" -eq 300 ] &&
		pass "300 of 300 downloads (512 KiB at 32 KiB/s each) whole and from one backend each, through the drain and the cut" ||
		fail "downloads: $whole of 300 whole; $(cat "$W"/dl/*.code | sort | uniq -c | tr '\n' ' ')"
	ip -n "${P}r1" link set p-lb2 up
	on 1 host undrain || fail "host undrain"
}

# --- etcd stopped, and back ----------------------------------------------------------------------------
t_etcd_down() {
	local out rc got k
	kill "$ETCD"
	wait "$ETCD" 2>/dev/null
	out=$(on 3 backend weight "$VIP" b1 3 2>&1)
	rc=$?
	got=$(for k in $(seq 1 20); do client curl -s -m 2 "http://$FLEET_VIP/"; done | grep -c '^b')
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [ "$got" -eq 20 ] &&
		pass "etcd stopped: 20 of 20 connections served, a change fails in one line ('$out')" ||
		fail "etcd stopped: exit $rc '$out', $got of 20 served"
}

t_etcd_back() {
	local want t
	etcd_start
	on 3 backend weight "$VIP" b1 3 || fail "change after etcd came back"
	want=$(digest 3)
	for t in $(seq 1 100); do
		[ "$(digest 1)" = "$want" ] && [ "$(digest 2)" = "$want" ] && break
		sleep 0.1
	done
	[ "$(digest 1)" = "$want" ] && [ "$(digest 2)" = "$want" ] &&
		pass "etcd back: a change on lb3 serves on lb1 and lb2 too, no daemon restarted" ||
		fail "after etcd came back: digests $(digest 1) $(digest 2) vs $want"
}

# --- a host on another key --------------------------------------------------------------------------
t_other_key() {
	local t
	wait_paths 3 || true
	daemon_stop 2
	secret_file "$W/lb2/secret"
	daemon_on 2
	for t in $(seq 1 100); do grep -q "routes withdrawn: its flow hash key is not the fleet's" "$W/lb2/daemon.log" && break; sleep 0.1; done
	wait_paths 2
	grep -q "not the fleet's" "$W/lb2/daemon.log" && [ "$(paths)" = 2 ] &&
		! ip -n "${P}r1" route show "$FLEET_VIP" | grep -q "$(fleet_lb 2) " &&
		pass "lb2 restarted on another key: it withdraws and says why ('$(grep -m1 -o "this host's flow hash key.*" "$W/lb2/daemon.log" | cut -c1-90)...')" ||
		fail "lb2 on another key: paths $(paths); $(tail -3 "$W/lb2/daemon.log")"
}

t_alive() {
	local i alive=0
	for i in 1 2 3; do kill -0 "$(cat "$W/lb$i/daemon.pid")" 2>/dev/null && alive=$((alive + 1)); done
	[ "$alive" -eq 3 ] && pass "the three daemons ran through it all" ||
		fail "$((3 - alive)) daemons died: $(grep -h -i -e 'free()' -e 'abort' -e 'segmentation' "$W"/lb*/daemon.log | head -3)"
}

suite_test routes
suite_test propagation
suite_test concurrent
suite_test downloads routes
suite_test etcd_down routes
suite_test etcd_back etcd_down
suite_test other_key
suite_test alive
suite_main "$@"
