#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The flow table seen and pruned, with real connections: the topology of
# scripts/topology.sh (client 1, the balancer, b1 and b2 answering on the VIP
# by direct server return), an l2 IPv4 VIP over b1 and b2. Its tests
# (tests/suites/lib.sh runs them; `flows.sh TEST...` runs some):
#
#   list     12 downloads held open: `ringlb flows` lists 12 flows of the
#            client, each port once, and its count per backend is the number
#            of connections each backend holds (ss); --backend and
#            --client ADDR:PORT narrow it to the same counts
#   delete   the table emptied (--all); 12 downloads; b1 drains (its pinned
#            connections stay), then
#            `flows delete VIP --backend b1` deletes exactly b1's flows: their
#            next packets are placed by the ring, on b2, which resets them, so
#            exactly b1's downloads break and every one of b2's completes
#   sweep    the daemon with --flow-closed-timeout 1 --flow-timeout 4: 10
#            connections that closed and 1 held open idle are 11 flows; the
#            closed ones leave the table within 5 s (LIVE FLOWS falls to 1),
#            the idle one within 8 s more (the table is empty)
#   refused  flows delete without a selection, --backend without a VIP, a
#            malformed --client, and a sweep timeout longer than the flow
#            timeout: one line each, exit 2, the table untouched
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root flows

topo_session flows rlbfl
VIP="$TOPO_VIP4:80/tcp"
IN4=$(topo_client_addr4 1)
# Downloads held open by the tests: 48 KiB at 16 KiB/s, about 3 s each.
DOWNLOADS=12

setup() {
	local i
	topo_up "$P" "$W" 2 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	ringlb vip add "$VIP" >/dev/null || die "vip add"
	for i in 1 2; do
		ringlb backend add "$VIP" "b$i" "$(topo_backend_addr4 "$i")" >/dev/null ||
			die "backend b$i"
	done
}

# hold DIR BASE: DOWNLOADS downloads from client 1, from ports BASE + 1 .., each
# writing "http_code curl_exit" to DIR/K.code; HOLD has their pids. Waits until each
# is pinned. (Each test its own ports: the last test's are in TIME_WAIT.)
hold() {
	local dir=$1 base=$2 k t
	mkdir -p "$dir"
	HOLD=()
	for k in $(seq 1 "$DOWNLOADS"); do
		(on_client 1 curl -s -m 20 --local-port $((base + k)) -r 0-49151 -o "$dir/$k" \
			-w '%{http_code}' "$(url "$TOPO_VIP4")/slow" >"$dir/$k.code"
		 echo " $?" >>"$dir/$k.code") &
		HOLD+=($!)
	done
	for t in $(seq 1 100); do
		[ "$(ringlb flows "$VIP" --json | jq .count)" -ge "$DOWNLOADS" ] && return 0
		sleep 0.05
	done
	return 1
}

# held I: connections backend I holds to port 80.
held() { ip netns exec "${P}b$1" ss -Htn state established '( sport = :80 )' | wc -l; }

# per NAME: `ringlb flows VIP` count of backend NAME.
per() { ringlb flows "$VIP" --json | jq --arg k "$VIP $1" '.per_backend[$k] // 0'; }

t_list() {
	local model n i port got
	hold "$W/list" 41000 || fail "the downloads were not all pinned"
	model=$(ringlb flows "$VIP" --json)
	n=$(jq .count <<<"$model")
	[ "$n" = "$DOWNLOADS" ] && pass "flows lists $n flows for $DOWNLOADS connections" ||
		fail "flows lists $n flows for $DOWNLOADS connections"
	got=$(jq -r '.flows[].client' <<<"$model" | sort -u | wc -l)
	[ "$got" = "$DOWNLOADS" ] && pass "each client port once" || fail "$got distinct clients"
	for i in 1 2; do
		[ "$(per "b$i")" = "$(held "$i")" ] &&
			pass "b$i: $(per "b$i") flows, as many connections as it holds" ||
			fail "b$i: $(per "b$i") flows, $(held "$i") connections held"
		got=$(ringlb flows "$VIP" --backend "b$i" --json | jq .count)
		[ "$got" = "$(per "b$i")" ] && pass "--backend b$i: $got" ||
			fail "--backend b$i: $got, not $(per "b$i")"
	done
	port=41003
	got=$(ringlb flows "$VIP" --client "$IN4:$port" --json | jq -r '[.count, .flows[0].client] | @tsv')
	[ "$got" = "1	$IN4:$port" ] && pass "--client $IN4:$port: that flow alone" ||
		fail "--client $IN4:$port: $got"
	got=$(ringlb flows --client "$IN4" --json | jq .count)
	[ "$got" = "$DOWNLOADS" ] && pass "--client $IN4: $got flows" || fail "--client $IN4: $got"
	ringlb flows "$VIP" | grep -q "^$IN4:$port .* b[12] " && pass "the table names the flow" ||
		fail "the table: $(ringlb flows "$VIP" | head -3)"
	wait "${HOLD[@]}"
}

t_delete() {
	local n1 deleted broken=0 whole=0 k b1_ports
	# The last test's closed connections out of the way: only these downloads' flows.
	ringlb flows delete --all >/dev/null || fail "flows delete --all"
	hold "$W/del" 42000 || fail "the downloads were not all pinned"
	ringlb backend drain "$VIP" b1 || fail "drain b1"
	n1=$(per b1)
	b1_ports=$(ringlb flows "$VIP" --backend b1 --json | jq -r '.flows[].client | sub(".*:"; "")')
	deleted=$(ringlb flows delete "$VIP" --backend b1 --json | jq .deleted)
	[ "$deleted" = "$n1" ] && [ "$n1" -gt 0 ] && pass "deleted b1's $n1 flows" ||
		fail "deleted $deleted flows, b1 had $n1"
	wait "${HOLD[@]}"
	for k in $(seq 1 "$DOWNLOADS"); do
		if [ "$(cat "$W/del/$k.code")" = "206 0" ] && [ "$(stat -c %s "$W/del/$k")" = 49152 ]; then
			whole=$((whole + 1))
		elif grep -qx $((42000 + k)) <<<"$b1_ports"; then
			broken=$((broken + 1))
		else
			fail "download $k (b2's) broke: $(cat "$W/del/$k.code")"
		fi
	done
	[ "$broken" = "$n1" ] && [ $((whole + broken)) = "$DOWNLOADS" ] &&
		pass "the ring took b1's $n1 connections to b2, which reset them; b2's $whole completed" ||
		fail "$broken broken (b1 had $n1), $whole whole of $DOWNLOADS"
	ringlb backend undrain "$VIP" b1 || fail "undrain b1"
}

# live: LIVE FLOWS of the VIP's backends together.
live() { ringlb stats --json | jq '[.vips[].backends[].live_flows] | add'; }

t_sweep() {
	local dpid k t n
	ringlb flows delete --all >/dev/null || fail "flows delete --all"
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics none --flow-closed-timeout 1 --flow-timeout 4 \
		>>"$W/daemon.log" 2>&1 &
	dpid=$!
	# One connection held open and idle: its client sends nothing after the handshake.
	on_client 1 python3 -c "
import socket, time
s = socket.create_connection(('$TOPO_VIP4', 80))
time.sleep(30)" &
	local idle=$!
	for k in $(seq 1 10); do
		on_client 1 curl -s -m 5 -o /dev/null "$(url "$TOPO_VIP4")/" || fail "connection $k"
	done
	# The idle connection's handshake may come after the ten (it starts in the background).
	for t in $(seq 1 40); do
		n=$(ringlb flows "$VIP" --json | jq .count)
		[ "$n" = 11 ] && break
		sleep 0.05
	done
	[ "$n" = 11 ] && pass "10 closed connections and 1 idle: 11 flows" || fail "$n flows, not 11"
	for t in $(seq 1 50); do
		[ "$(live)" = 1 ] && break
		sleep 0.1
	done
	[ "$(live)" = 1 ] && pass "LIVE FLOWS 1 within $((t / 10)).$((t % 10)) s: the closed ones swept" ||
		fail "LIVE FLOWS $(live) 5 s after the connections closed"
	for t in $(seq 1 80); do
		[ "$(ringlb flows --json | jq .count)" = 0 ] && break
		sleep 0.1
	done
	n=$(ringlb flows --json | jq .count)
	[ "$n" = 0 ] && pass "the idle flow swept too: the table is empty" ||
		fail "$n flows left 8 s later ($(tail -2 "$W/daemon.log"))"
	kill "$idle" "$dpid" 2>/dev/null
	wait "$idle" "$dpid" 2>/dev/null
}

t_refused() {
	local args out rc before
	before=$(ringlb flows --json | jq .table_entries)
	for args in "flows delete" "flows --backend b1" "flows $VIP --client 198.18.0.300" \
		"flows delete --all $VIP" "daemon --flow-timeout 10 --flow-closed-timeout 20"; do
		# shellcheck disable=SC2086
		out=$(ringlb $args 2>&1)
		rc=$?
		[ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && pass "$args: $out" ||
			fail "$args: exit $rc: $out"
	done
	[ "$(ringlb flows --json | jq .table_entries)" = "$before" ] &&
		pass "the table untouched" || fail "the table changed"
}

suite_test list
suite_test delete
suite_test sweep
suite_test refused
suite_main "$@"
