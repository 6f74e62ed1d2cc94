#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The kernel serves exactly the committed state, always: end to end, with
# real traffic, in the namespace topology of scripts/topology.sh. Its tests
# (tests/suites/lib.sh runs them; `integrity.sh TEST...` runs some), on an
# IPv4 and an IPv6 VIP with backends b1 and b2 set up first:
#
#   ahead        a kernel that holds a change its state file does not (what
#                a kill between the two used to leave; here the file is put
#                back by hand): the next ordinary change, on another VIP,
#                repairs it first; verify is clean, every connection goes
#                where lookup says and none is dropped
#   identity     save, add y, save, restore, add x (y's old slot), restore:
#                y's flows reach y's machine and verify is clean
#   secret       a secret file replaced behind ringlb's back: verify says the
#                kernel's key differs and lookup answers with the kernel's
#                key; the next change re-keys the kernel; `secret set` does
#                it in one step
#   half_closed  a client that sent its FIN while the response still streams
#                counts as a live flow of its draining backend until it ends
#   reset        a download from a draining backend survives a RST with a
#                wrong sequence number
#   counters     a VIP deleted and added again, and a backend in a reused
#                slot, start from zero: packets, and live flows
#
# Needs root; skips without it, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"
PY=/usr/bin/python3

require_root integrity

topo_session integrity rli
VIP4="$TOPO_VIP4:80/tcp"
VIP6="[$TOPO_VIP6]:80/tcp"

# Client ports, each used once (below the ephemeral range; see docs/traps.md).
NEXT_PORT=20000

# agree WHAT VIP CLIENT N: N new connections from fresh ports each reach the
# backend `ringlb lookup` names beforehand, and the balancer drops nothing.
agree() {
	local what=$1 vip=$2 client=$3 n=$4 addr caddr p want got ok=0 missed= d0 d1 k=0
	local -a eps=() wants=()
	addr=$TOPO_VIP4 caddr=$(topo_client_addr4 "$client")
	case $vip in \[*) addr=$TOPO_VIP6 caddr=$(topo_client_addr6 "$client") ;; esac
	d0=$(drops)
	for p in $(seq "$NEXT_PORT" $((NEXT_PORT + n - 1))); do
		case $caddr in *:*) eps+=("[$caddr]:$p") ;; *) eps+=("$caddr:$p") ;; esac
	done
	mapfile -t wants < <(lookups "$vip" "${eps[@]}")
	for p in $(seq "$NEXT_PORT" $((NEXT_PORT + n - 1))); do
		want=${wants[$k]:-}
		k=$((k + 1))
		got=$(on_client "$client" curl -s -m 3 --local-port "$p" "$(url "$addr")/")
		if [ "$want" = "$got" ]; then
			ok=$((ok + 1))
		else
			missed="$missed port $p: lookup '$want', answered by '$got';"
		fi
	done
	NEXT_PORT=$((NEXT_PORT + n))
	d1=$(drops)
	if [ $ok -eq "$n" ] && [ "$d1" = "$d0" ]; then
		pass "$what: $n of $n connections reached the backend lookup names, 0 dropped"
	else
		fail "$what: $ok of $n connections reached the backend lookup names, $((d1 - d0)) frames dropped:$missed"
	fi
}

verified() {
	local what=$1
	if ringlb verify >"$W/verify" 2>&1; then
		pass "$what: verify: $(cat "$W/verify")"
	else
		fail "$what: verify: $(tr '\n' ' ' <"$W/verify")"
	fi
}

setup() {
	local i
	topo_up "$P" "$W" 3 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	ringlb vip add "$VIP4" --vnodes 256 || die "vip add"
	ringlb vip add "$VIP6" --vnodes 256 || die "vip add"
	for i in 1 2; do
		ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
		ringlb backend add "$VIP6" "b$i" "$(topo_backend_addr6 "$i")" || die "backend b$i v6"
	done
}

# --- a kernel ahead of its state file ------------------------------------------------

t_ahead() {
	cp "$W/state.json" "$W/before.json"
	ringlb backend add "$VIP4" b3 "$(topo_backend_addr4 3)" || die "backend b3"
	cp "$W/before.json" "$W/state.json"
	if ringlb backend weight "$VIP6" b1 2 2>"$W/err"; then
		pass "ahead: an ordinary change on another VIP succeeded ($(tr '\n' ' ' <"$W/err"))"
	else
		fail "ahead: the change on another VIP failed: $(cat "$W/err")"
	fi
	verified "ahead"
	agree "ahead" "$VIP4" 1 40
}

# --- backend identity across restores --------------------------------------------------

t_identity() {
	local mac
	ringlb vip del "$VIP4" || die "vip del"
	ringlb vip add "$VIP4" --vnodes 256 || die "vip add"
	ringlb backend add "$VIP4" b1 "$(topo_backend_addr4 1)" || die "backend b1"
	ringlb save "$W/s0.json" || fail "identity: save s0"
	ringlb backend add "$VIP4" b2 "$(topo_backend_addr4 2)" --mac "$(topo_backend_mac 2)" ||
		fail "identity: add b2"
	ringlb save "$W/sy.json" || fail "identity: save sy"
	ringlb restore "$W/s0.json" || fail "identity: restore s0"
	ringlb backend add "$VIP4" b3 "$(topo_backend_addr4 3)" --mac "$(topo_backend_mac 3)" ||
		fail "identity: add b3"
	ringlb restore "$W/sy.json" || fail "identity: restore sy"
	mac=$(ringlb show --json | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) | .backends[] |
		select(.name == "b2") | .mac')
	[ "$mac" = "$(topo_backend_mac 2)" ] && pass "identity: show says b2 has MAC $mac" ||
		fail "identity: show says b2 has MAC $mac"
	verified "identity"
	agree "identity" "$VIP4" 1 40
}

# --- the secret ----------------------------------------------------------------------

secret_digest() { ringlb show --json | jq -r .secret_digest; }

t_secret() {
	local d0 d1 d2
	d0=$(secret_digest)
	secret_file "$W/replaced"
	cp "$W/replaced" "$W/secret"   # what the README once told operators to do
	if ringlb verify >"$W/verify" 2>&1; then
		fail "secret: verify found nothing wrong with a kernel on another key than the secret file"
	elif grep -q "key" "$W/verify"; then
		pass "secret: verify on a replaced secret file: $(grep key "$W/verify" | head -1)"
	else
		fail "secret: verify failed, but not about the key: $(tr '\n' ' ' <"$W/verify")"
	fi
	agree "secret, kernel on the old key: lookup answers with the kernel's key" "$VIP4" 2 30
	ringlb backend weight "$VIP6" b1 1 2>"$W/err" ||
		fail "secret: a change after the replacement: $(cat "$W/err")"
	verified "secret, after the next change"
	d1=$(secret_digest)
	[ "$d1" != "$d0" ] && [ "$d1" != null ] && pass "secret: the kernel took the file's key (digest $d0 -> $d1)" ||
		fail "secret: digest $d0 -> $d1"
	agree "secret, re-keyed by the next change" "$VIP4" 2 30
	secret_file "$W/deployment"
	ringlb secret set "$W/deployment" || fail "secret set"
	d2=$(secret_digest)
	if cmp -s "$W/deployment" "$W/secret" && [ "$d2" != "$d1" ] && [ "$d2" != null ]; then
		pass "secret set: the secret file and the kernel's key changed (digest $d1 -> $d2)"
	else
		fail "secret set: digest $d1 -> $d2, file $(cmp -s "$W/deployment" "$W/secret" && echo copied || echo unchanged)"
	fi
	verified "secret set"
	agree "secret set" "$VIP4" 2 30
}

# --- drain: half-closed connections are live, a spoofed RST moves nothing ---------------

# The half-closed download comes from a server that keeps sending after the
# client's FIN (some servers, nginx among them, may stop), on a VIP of its own.
HC_VIP="$TOPO_VIP4:8081/tcp"

live_of() { ringlb stats --json --idle "$2" | jq -r --arg v "$HC_VIP" --arg n "$1" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | "\(.live_flows) \(.closing_flows)"'; }

# listening NS PORT: a TCP socket listens on PORT in namespace NS.
listening() { [ -n "$(ip netns exec "$1" ss -Htln "sport = :$2")" ]; }

t_half_closed() {
	local i t hc_port hc hc_pid hc_live hc_closing
	ringlb vip add "$HC_VIP" --vnodes 64 || die "vip add $HC_VIP"
	for i in 1 2 3; do
		ip netns exec "${P}b$i" $PY "$ROOT/tests/tools/slowserver.py" 8081 "$i" 262144 8 \
			>/dev/null 2>&1 &
		ringlb backend add "$HC_VIP" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
	done
	# Until the three servers listen (was a fixed 1 s; 5 s at most).
	for t in $(seq 1 50); do
		listening "${P}b1" 8081 && listening "${P}b2" 8081 && listening "${P}b3" 8081 && break
		sleep 0.1
	done
	hc_port=$NEXT_PORT
	NEXT_PORT=$((NEXT_PORT + 1))
	hc=$(ringlb lookup "$HC_VIP" "$(topo_client_addr4 1):$hc_port")
	on_client 1 $PY "$ROOT/tests/tools/halfclose.py" "$(topo_client_addr4 1)" "$hc_port" \
		"$TOPO_VIP4" 8081 >"$W/hc.res" 2>&1 &
	hc_pid=$!
	# The drain comes 2 s into the 8 s download (the wait is within the download's time).
	sleep 2
	ringlb backend drain "$HC_VIP" "$hc" || fail "backend drain $hc"
	read -r hc_live hc_closing < <(live_of "$hc" 2)
	wait $hc_pid
	if [ "${hc_live:-0}" = 1 ] && [ "${hc_closing:-0}" = 1 ] && [ "$(cat "$W/hc.res")" = "200 262144 ${hc#b}" ]; then
		pass "half-closed: a download whose client had sent its FIN was the $hc_live live flow ($hc_closing closing) of draining $hc, and completed: $(cat "$W/hc.res")"
	else
		fail "half-closed: live $hc_live, closing $hc_closing on draining $hc; download: $(cat "$W/hc.res")"
	fi
	# Live means a packet in the last 2 s: until the count drops to 0 (was a
	# fixed 4 s, the bound now).
	for t in $(seq 1 20); do
		sleep 0.2
		read -r hc_live hc_closing < <(live_of "$hc" 2)
		[ "$hc_live" = 0 ] && break
	done
	[ "$hc_live" = 0 ] && pass "half-closed: 0 live flows on $hc once its last connection was idle for 2 s" ||
		fail "half-closed: $hc_live live flows on $hc after its connection ended"
	ringlb vip del "$HC_VIP" || fail "vip del $HC_VIP"
}

t_reset() {
	local i k rst_port rb rst_pid
	for i in 2 3; do
		ringlb backend remove "$VIP4" "b$i" 2>/dev/null
		ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
	done
	rst_port=$NEXT_PORT
	NEXT_PORT=$((NEXT_PORT + 1))
	rb=$(ringlb lookup "$VIP4" "$(topo_client_addr4 1):$rst_port")
	on_client 1 curl -s -m 60 --local-port "$rst_port" "$(url "$TOPO_VIP4")/slow" -o "$W/rst.out" \
		-w '%{http_code} %{size_download}' >"$W/rst.res" &
	rst_pid=$!
	# The drain and the RSTs come within the 16 s download.
	sleep 2
	ringlb backend drain "$VIP4" "$rb" || fail "backend drain $rb"
	if ringlb lookup --json "$VIP4" "$(topo_client_addr4 1):$rst_port" | jq -e --arg b "$rb" \
		'.backend == $b and .via == "flow table" and .new_connection != $b' >/dev/null; then
		pass "reset: lookup names $rb for the pinned download, and another backend for a new connection on its tuple"
	else
		fail "reset: lookup of the pinned download: $(ringlb lookup --json "$VIP4" "$(topo_client_addr4 1):$rst_port" | tr -d '\n ')"
	fi
	for k in 1 2 3; do
		on_client 1 $PY "$ROOT/tests/tools/tcp_rst.py" "$(topo_client_addr4 1)" "$rst_port" \
			"$TOPO_VIP4" 80 || fail "reset: injecting a RST"
		sleep 0.5
	done
	wait $rst_pid
	if [ "$(cat "$W/rst.res")" = "200 262144" ] && [ "$(tr -d "${rb#b}" <"$W/rst.out" | wc -c)" -eq 0 ]; then
		pass "reset: a download from draining $rb survived 3 RSTs with wrong sequence numbers (HTTP 200, 262144 bytes, all from $rb)"
	else
		fail "reset: the download from draining $rb after 3 spoofed RSTs ended with '$(cat "$W/rst.res")', $(tr -d "${rb#b}" <"$W/rst.out" | wc -c) foreign bytes"
	fi
}

# --- counters and flows of a reused VIP id or backend slot -------------------------------

vip_packets() { ringlb stats --json | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .packets'; }

t_counters() {
	local ru ru_slot ru_packets ru_live new_slot new_packets new_live before after
	# A backend slot given to a new backend: the old one's pinned flows and
	# counters are not the new one's. Slots are handed out round-robin, so the
	# state file's allocation hint is pointed back at the freed slot by hand.
	agree "slot reuse" "$VIP4" 1 30
	# The backend with the most live flows now: its slot is the one reused.
	read -r ru ru_slot ru_packets ru_live < <(ringlb stats --json --idle 60 | jq -r --arg v "$VIP4" \
		'[.vips[] | select(.vip == $v) | .backends[] | select(.state == "active")] |
		max_by(.live_flows) | "\(.name) 0 \(.packets) \(.live_flows)"')
	ru_slot=$(jq -r --arg v "$VIP4" --arg n "$ru" '.vips[] | select(.vip == $v) | .backends[] |
		select(.name == $n) | .id' "$W/state.json")
	ringlb backend remove "$VIP4" "$ru" || fail "backend remove $ru"
	jq --argjson id "$ru_slot" '.next_backend_id = $id' "$W/state.json" >"$W/hint.json" &&
		cp "$W/hint.json" "$W/state.json"
	ringlb backend add "$VIP4" reused "$(topo_backend_addr4 "${ru#b}")" || fail "backend add reused"
	read -r new_slot new_packets new_live < <(
		jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) | .backends[] | select(.name == "reused") |
			.id' "$W/state.json" | tr '\n' ' '
		ringlb stats --json --idle 60 | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) |
			.backends[] | select(.name == "reused") | "\(.packets) \(.live_flows)"')
	if [ "$ru_packets" -gt 0 ] && [ "$ru_live" -gt 0 ] && [ "$new_slot" = "$ru_slot" ] &&
		[ "$new_packets" = 0 ] && [ "$new_live" = 0 ]; then
		pass "slot reuse: a new backend in $ru's old slot $ru_slot starts at 0 packets and 0 live flows ($ru had $ru_packets packets and $ru_live live flows)"
	else
		fail "slot reuse: $ru (slot $ru_slot) had $ru_packets packets, $ru_live live flows; the backend in slot $new_slot starts at $new_packets packets, $new_live live flows"
	fi
	agree "counters" "$VIP6" 1 5
	before=$(vip_packets "$VIP6")
	ringlb vip del "$VIP6" && ringlb vip add "$VIP6" || fail "counters: vip del and add"
	after=$(vip_packets "$VIP6")
	[ "$before" -gt 0 ] && [ "$after" = 0 ] &&
		pass "counters: a VIP deleted and added again starts at 0 packets (the old one had $before)" ||
		fail "counters: the new VIP starts at $after packets (the old one had $before)"
}

suite_test ahead
suite_test identity
suite_test secret
suite_test half_closed
suite_test reset
suite_test counters
suite_main "$@"
