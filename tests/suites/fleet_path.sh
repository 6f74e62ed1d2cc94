#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Each balancer's own path to the backends (user/daemon/paths.c), on two hosts
# of scripts/fleet.sh's network: a real etcd, bird2 on each balancer and the
# router, GUE to nginx backends behind ringlb's decap, curl through the
# router's ECMP route. lb1's daemon starts first and leads the checks. Its
# tests (`fleet_path.sh TEST...` runs some):
#
#   missing   lb2 is missing from both backends' decap --from (the issue's
#             new balancer): lb2 withdraws the VIP (the router has lb1 alone,
#             lb2's routes file and bird say so), its show and metrics say
#             why, no backend is marked down, 30 of 30 requests answered
#   restored  (after missing) lb2 added to the --from: it announces again
#             (two next hops), show says ok, requests go through it too
#   leader    lb1, the leader, cut from both backends' --from: it withdraws
#             and holds its down verdicts (the store keeps both up), lb2
#             serves 30 of 30; then the path back, two next hops
#   partial   lb2 missing from b1's --from alone: not withdrawn (b2 is
#             reachable), but show and ringlb_backend_path_up name b1
#   typo      a check on a port nothing listens on: the backends answer
#             (refuse), so no host withdraws; both marked down, the fleet
#             serves them failing open, 30 of 30 answered
#   alive     both daemons ran through it all
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/fleet.sh"

require_root fleet_path

TEST_NAME=fleet_path
P=rfp$$
scratch_dir
PIN=/sys/fs/bpf/ringlb-$P
trap 'kill $(jobs -p) 2>/dev/null; fleet_down "$P" "$W"; rm -rf "$PIN"-* "$W"' EXIT
STORE="etcd://198.18.20.5:2379/ringlb-path"
VIP="$FLEET_VIP:80/tcp"

. "$ROOT/tests/suites/fleet_lib.sh"

# daemon_on I: balancer I's daemon as fleet_lib.sh starts it, its metrics on 127.0.0.1:9477
# of its namespace.
daemon_on() {
	nsenter --net="/run/netns/${P}lb$1" "$ROOT/build/ringlb" --state "$W/lb$1/state.json" \
		--pin-dir "$PIN-lb$1" --store "$STORE" daemon --metrics 127.0.0.1:9477 \
		--bgp-routes "$W/lb$1/ringlb-routes.conf" --birdc-socket "$W/lb$1/bird.ctl" \
		>>"$W/lb$1/daemon.log" 2>&1 &
	echo $! >"$W/lb$1/daemon.pid"
}
# from I...: the backends' decap accepts encapsulation from balancers I... (and the
# backends' segment, for second chance), set on all of them at once.
from() {
	local b i args=() pids=()
	for i in "$@"; do args+=(--from "$(fleet_lb "$i")/32"); done
	for b in "${BACKENDS[@]}"; do
		be "$b" decap attach eth0 "${args[@]}" --from 198.18.30.0/24 --vip "$FLEET_VIP" \
			>/dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "decap on the backends from $*"; done
}
BACKENDS=(1 2)
# metric I SAMPLE: balancer I's sample (its name and labels as a prefix), summed.
metric() {
	ip netns exec "${P}lb$1" curl -s -m 1 http://127.0.0.1:9477/metrics 2>/dev/null |
		awk -v m="$2" 'index($1, m) == 1 {s += $NF; n++} END {print n ? s : "-"}'
}
# wait_log I TEXT: balancer I's daemon said TEXT (10 s at most).
wait_log() {
	local t
	for t in $(seq 1 100); do grep -qF "$2" "$W/lb$1/daemon.log" && return 0; sleep 0.1; done
	return 1
}
# leads: what each daemon said of the health checks' lease, in one line (a failure's context).
leads() {
	local i
	for i in 1 2; do
		echo "lb$i: $(grep -E "health checks|lease" "$W/lb$i/daemon.log" | tail -3 | tr '\n' ' ')"
	done | tr '\n' ' '
}
# within SECONDS CMD...: CMD succeeds within SECONDS (asked every 0.1 s).
within() {
	local end=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@"; do
		[ "$(date +%s%N)" -lt "$end" ] || return 1
		sleep 0.1
	done
}
# alone I: the router reaches the VIP through balancer I alone, and I's bird alone exports it.
alone() {
	local o=$((3 - $1))
	[ "$(via)" = "$(fleet_lb "$1")" ] && [ "$(announced "$1")" = 1 ] && [ "$(announced "$o")" = 0 ]
}
both() { [ "$(via)" = "$(fleet_lb 1) $(fleet_lb 2)" ] && [ "$(announced 1)" = 1 ] && [ "$(announced 2)" = 1 ]; }
# oks I N: balancer I's show says "path from this host: ok" for N backends.
oks() { [ "$(on "$1" show | grep -c "path from this host: ok")" = "$2" ]; }
# via: the router's next hops for the VIP, their addresses in a line.
via() {
	ip -n "${P}r1" -j route show "$FLEET_VIP" |
		jq -r '[.[0].nexthops[]?.gateway, .[0].gateway // empty] | sort | join(" ")'
}
# served N: of N requests through the router, how many a backend answered.
served() {

	for _ in $(seq 1 "$1"); do client curl -s -m 2 "http://$FLEET_VIP/"; done | grep -c '^b'
}
# downs: backends the store holds as down (lb1's view of the committed state).
downs() { on 1 show --json | jq '[.vips[].backends[] | select(.health == "down")] | length'; }
# announced I: the VIP routes balancer I's bird exports.
announced() {
	ip netns exec "${P}lb$1" birdc -s "$W/lb$1/bird.ctl" show route protocol ringlb_vips4 2>/dev/null |
		grep -c "$FLEET_VIP/32"
}

setup() {
	local i t
	fleet_up "$P" "$W" || die "fleet network"
	etcd_start
	for i in "${BACKENDS[@]}"; do mkdir -p "$W/b$i"; done
	# The issue's fleet: the backends know lb1 only.
	from 1
	on 1 attach eth0 --source "$(fleet_lb 1)" >/dev/null || die "attach lb1"
	on 2 secret set "$W/lb1/secret" && on 2 attach eth0 --source "$(fleet_lb 2)" >/dev/null ||
		die "attach lb2"
	on 1 vip add "$VIP" --forward gue --check-interval 300 --check-timeout 200 >/dev/null ||
		die "vip add"
	for i in "${BACKENDS[@]}"; do
		on 1 backend add "$VIP" "b$i" "$(fleet_backend "$i")" >/dev/null || die "backend add b$i"
	done
	fleet_router_bird
	# lb1 first: it leads the checks.
	daemon_on 1
	wait_log 1 "runs the fleet's health checks" || die "lb1 does not lead: $(tail -3 "$W/lb1/daemon.log")"
	daemon_on 2
	for i in 1 2; do
		for t in $(seq 1 50); do [ -s "$W/lb$i/ringlb-routes.conf" ] && break; sleep 0.1; done
		fleet_balancer_bird "$i"
	done
}

t_missing() {
	local show why got
	wait_log 2 "VIP $VIP: no backend answers this host's checks" &&
		within 10 alone 1 &&
		grep -q "withdrawn: no backend reachable from this host" "$W/lb2/ringlb-routes.conf" &&
		pass "lb2, missing from the backends' --from, withdrew $FLEET_VIP: the router has lb1 alone ($(via)), lb2's bird exports none ('$(grep -m1 withdrawn "$W/lb2/ringlb-routes.conf" | tr -d '\t')')" ||
		fail "missing: router via '$(via)', lb2 bird $(announced 2), lb1 bird $(announced 1); $(tail -3 "$W/lb2/daemon.log")"
	show=$(on 2 show)
	why=$(grep -m1 "no backend answers" "$W/lb2/daemon.log" | sed 's/.*: no backend/no backend/')
	grep -q "WITHDRAWN from this host: no backend reachable from this host" <<<"$show" &&
		[ "$(grep -c "path from this host: lost (" <<<"$show")" = 2 ] &&
		[ "$(on 2 show --json | jq -r '.vips[0].backends[0].path')" = lost ] &&
		pass "lb2's show says why: '$(grep -m1 WITHDRAWN <<<"$show" | sed 's/^ *//')', b1 '$(grep -m1 -o "path from this host: lost.*" <<<"$show")'; its log: '${why:0:110}'" ||
		fail "lb2's show: $show"
	[ "$(metric 2 "ringlb_vip_path_withdrawn{vip=\"$VIP\"}")" = 1 ] &&
		[ "$(metric 2 "ringlb_backend_path_up{vip=\"$VIP\"")" = 0 ] &&
		[ "$(metric 1 "ringlb_vip_path_withdrawn{vip=\"$VIP\"}")" = 0 ] &&
		[ "$(metric 1 "ringlb_backend_path_up{vip=\"$VIP\"")" = 2 ] &&
		pass "metrics: lb2 ringlb_vip_path_withdrawn 1, ringlb_backend_path_up 0 for both; lb1 0 and 2" ||
		fail "metrics: lb2 withdrawn $(metric 2 ringlb_vip_path_withdrawn) path_up $(metric 2 ringlb_backend_path_up); lb1 $(metric 1 ringlb_vip_path_withdrawn) $(metric 1 ringlb_backend_path_up)"
	got=$(served 30)
	[ "$got" = 30 ] && [ "$(downs)" = 0 ] && ! grep -q "down after" "$W/lb1/daemon.log" "$W/lb2/daemon.log" &&
		pass "30 of 30 requests answered through lb1; no backend marked down by lb2's path" ||
		fail "missing: $got of 30 served, $(downs) down"
}

t_restored() {
	local before after got show
	from 1 2
	wait_log 2 "VIP $VIP: this host's checks reach a backend again" && within 10 both &&
		pass "lb2 in the --from: it announces again, the router has both ($(via))" ||
		fail "restored: router via '$(via)', lb2 bird $(announced 2); $(tail -3 "$W/lb2/daemon.log")"
	within 5 oks 2 2
	show=$(on 2 show)
	before=$(metric 2 "ringlb_vip_packets_total{vip=\"$VIP\"}")
	got=$(served 30)
	after=$(metric 2 "ringlb_vip_packets_total{vip=\"$VIP\"}")
	! grep -q WITHDRAWN <<<"$show" && [ "$(grep -c "path from this host: ok" <<<"$show")" = 2 ] &&
		[ "$(metric 2 "ringlb_vip_path_withdrawn{vip=\"$VIP\"}")" = 0 ] && [ "$got" = 30 ] &&
		[ "${after%.*}" -gt "${before%.*}" ] &&
		pass "lb2's show: 'path from this host: ok' for both; 30 of 30 answered, lb2 forwarded $((${after%.*} - ${before%.*})) packets of them" ||
		fail "restored: $got of 30, lb2 packets $before to $after; show: $show"
}

t_leader() {
	local got show
	from 2
	wait_log 1 "its down verdicts are held" && wait_log 1 "VIP $VIP: no backend answers" &&
		within 10 alone 2 &&
		pass "lb1, the leader, cut from the backends: it withdrew, the router has lb2 alone ($(via))" ||
		fail "leader cut: router via '$(via)'; $(tail -4 "$W/lb1/daemon.log"); who led: $(leads)"
	# Past the fall (3 x 300 ms) and a hold: what a leader would have committed by now.
	sleep 2
	show=$(on 1 show)
	got=$(served 30)
	[ "$(downs)" = 0 ] && ! grep -q "down after" "$W/lb1/daemon.log" && [ "$got" = 30 ] &&
		grep -q "its down verdicts are held" <<<"$show" &&
		pass "its own path cut, the leader held its down verdicts (the store keeps both up, show: '$(grep -m1 held <<<"$show" | sed 's/^ *//')'); 30 of 30 answered through lb2" ||
		fail "leader cut: $(downs) down, $got of 30; $(grep "down after" "$W/lb1/daemon.log" | head -2); who led: $(leads); show: $show"
	from 1 2
	within 10 both && wait_log 1 "VIP $VIP: this host's checks reach a backend again" && sleep 1 &&
		[ "$(downs)" = 0 ] && [ "$(served 10)" = 10 ] &&
		pass "the leader's path back: two next hops again, no backend down, 10 of 10 answered" ||
		fail "leader back: via '$(via)', $(downs) down; $(tail -3 "$W/lb1/daemon.log")"
}

t_partial() {
	local show
	BACKENDS=(1)
	from 1
	BACKENDS=(1 2)
	within 10 oks 2 1
	show=$(on 2 show)
	[ "$(metric 2 "ringlb_backend_path_up{vip=\"$VIP\",backend=\"b1\"")" = 0 ] &&
		[ "$(metric 2 "ringlb_backend_path_up{vip=\"$VIP\",backend=\"b2\"")" = 1 ] &&
		[ "$(metric 2 "ringlb_vip_path_withdrawn{vip=\"$VIP\"}")" = 0 ] && [ "$(paths)" = 2 ] &&
		grep "^  b1 " <<<"$show" | grep -q "path from this host: lost" &&
		grep "^  b2 " <<<"$show" | grep -q "path from this host: ok" && ! grep -q WITHDRAWN <<<"$show" &&
		pass "lb2 missing from b1's --from alone: still announced (b2 reachable), show and ringlb_backend_path_up name b1 ('$(grep "^  b1 " <<<"$show" | grep -o "path from.*")')" ||
		fail "partial: b1 $(metric 2 "ringlb_backend_path_up{vip=\"$VIP\",backend=\"b1\""), withdrawn $(metric 2 ringlb_vip_path_withdrawn), paths $(paths); show: $show"
	from 1 2
	within 10 oks 2 2 || fail "partial: b1's path from lb2 did not come back"
}

# A mistyped check (a port nothing listens on): every backend refuses every host's probes.
# An answer is no lost path: nobody withdraws, the leader marks both down, the fleet serves
# them failing open (issue 27's "no single typo may empty a host").
t_typo() {
	local show
	on 1 vip check "$VIP" --check-port 1 --check-interval 300 --check-timeout 200 >/dev/null ||
		fail "vip check --check-port 1"
	within 15 eval '[ "$(downs)" = 2 ]' || fail "typo: the leader did not mark both down: $(downs)"
	sleep 2
	show=$(on 2 show)
	both && [ "$(metric 1 ringlb_vip_path_withdrawn)" = 0 ] &&
		[ "$(metric 2 ringlb_vip_path_withdrawn)" = 0 ] && ! grep -q WITHDRAWN <<<"$show" &&
		[ "$(served 30)" = 30 ] &&
		pass "a check on port 1: both backends down, neither host withdraws, 30 of 30 answered (failing open)" ||
		fail "typo: via '$(via)', withdrawn $(metric 1 ringlb_vip_path_withdrawn) $(metric 2 ringlb_vip_path_withdrawn); show: $show"
	on 1 vip check "$VIP" --check-port 80 --check-interval 300 --check-timeout 200 >/dev/null ||
		fail "vip check --check-port 80"
	within 20 eval '[ "$(downs)" = 0 ]' || fail "typo: the backends did not come back up: $(downs)"
}

t_alive() {
	local i alive=0
	for i in 1 2; do kill -0 "$(cat "$W/lb$i/daemon.pid")" 2>/dev/null && alive=$((alive + 1)); done
	[ "$alive" -eq 2 ] && pass "both daemons ran through it all" ||
		fail "$((2 - alive)) daemons died: $(grep -h -i -e 'free()' -e 'abort' -e 'segmentation' "$W"/lb*/daemon.log | head -3)"
}

suite_test missing
suite_test restored missing
suite_test leader
suite_test partial
suite_test typo
suite_test alive
suite_main "$@"
