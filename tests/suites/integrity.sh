#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The kernel serves exactly the committed state, always: end to end, with
# real traffic, in the namespace topology of scripts/topology.sh.
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
#   half-closed  a client that sent its FIN while the response still streams
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
	local what=$1 vip=$2 client=$3 n=$4 addr caddr ep p want got ok=0 missed= d0 d1
	addr=$TOPO_VIP4 caddr=$(topo_client_addr4 "$client")
	case $vip in \[*) addr=$TOPO_VIP6 caddr=$(topo_client_addr6 "$client") ;; esac
	d0=$(drops)
	for p in $(seq "$NEXT_PORT" $((NEXT_PORT + n - 1))); do
		case $caddr in *:*) ep="[$caddr]:$p" ;; *) ep="$caddr:$p" ;; esac
		want=$(ringlb lookup "$vip" "$ep")
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

topo_up "$P" "$W" 3 || die "topology"
ringlb attach eth0 >/dev/null || die "attach"

# --- a kernel ahead of its state file ------------------------------------------------

ringlb vip add "$VIP4" --vnodes 256 || die "vip add"
ringlb vip add "$VIP6" --vnodes 256 || die "vip add"
for i in 1 2; do
	ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
	ringlb backend add "$VIP6" "b$i" "$(topo_backend_addr6 "$i")" || die "backend b$i v6"
done
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

# --- backend identity across restores --------------------------------------------------

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

# --- the secret ----------------------------------------------------------------------

secret_digest() { ringlb show --json | jq -r .secret_digest; }
D0=$(secret_digest)
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
ringlb backend weight "$VIP6" b1 1 2>"$W/err" || fail "secret: a change after the replacement: $(cat "$W/err")"
verified "secret, after the next change"
D1=$(secret_digest)
[ "$D1" != "$D0" ] && [ "$D1" != null ] && pass "secret: the kernel took the file's key (digest $D0 -> $D1)" ||
	fail "secret: digest $D0 -> $D1"
agree "secret, re-keyed by the next change" "$VIP4" 2 30
secret_file "$W/deployment"
ringlb secret set "$W/deployment" || fail "secret set"
D2=$(secret_digest)
if cmp -s "$W/deployment" "$W/secret" && [ "$D2" != "$D1" ] && [ "$D2" != null ]; then
	pass "secret set: the secret file and the kernel's key changed (digest $D1 -> $D2)"
else
	fail "secret set: digest $D1 -> $D2, file $(cmp -s "$W/deployment" "$W/secret" && echo copied || echo unchanged)"
fi
verified "secret set"
agree "secret set" "$VIP4" 2 30

# --- drain: half-closed connections are live, a spoofed RST moves nothing ---------------

for i in 2 3; do
	ringlb backend remove "$VIP4" "b$i" 2>/dev/null
	ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
done
# The half-closed download comes from a server that keeps sending after the
# client's FIN (some servers, nginx among them, may stop), on a VIP of its own.
HC_VIP="$TOPO_VIP4:8081/tcp"
ringlb vip add "$HC_VIP" --vnodes 64 || die "vip add $HC_VIP"
for i in 1 2 3; do
	ip netns exec "${P}b$i" $PY "$ROOT/tests/tools/slowserver.py" 8081 "$i" 262144 8 \
		>/dev/null 2>&1 &
	ringlb backend add "$HC_VIP" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
done
sleep 1
live_of() { ringlb stats --json --idle "$2" | jq -r --arg v "$HC_VIP" --arg n "$1" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | "\(.live_flows) \(.closing_flows)"'; }
HC_PORT=$NEXT_PORT
NEXT_PORT=$((NEXT_PORT + 1))
HC=$(ringlb lookup "$HC_VIP" "$(topo_client_addr4 1):$HC_PORT")
on_client 1 $PY "$ROOT/tests/tools/halfclose.py" "$(topo_client_addr4 1)" "$HC_PORT" "$TOPO_VIP4" \
	8081 >"$W/hc.res" 2>&1 &
HC_PID=$!
sleep 2
ringlb backend drain "$HC_VIP" "$HC" || fail "backend drain $HC"
read -r HC_LIVE HC_CLOSING < <(live_of "$HC" 2)
wait $HC_PID
if [ "${HC_LIVE:-0}" = 1 ] && [ "${HC_CLOSING:-0}" = 1 ] && [ "$(cat "$W/hc.res")" = "200 262144 ${HC#b}" ]; then
	pass "half-closed: a download whose client had sent its FIN was the $HC_LIVE live flow ($HC_CLOSING closing) of draining $HC, and completed: $(cat "$W/hc.res")"
else
	fail "half-closed: live $HC_LIVE, closing $HC_CLOSING on draining $HC; download: $(cat "$W/hc.res")"
fi
sleep 4
read -r HC_LIVE HC_CLOSING < <(live_of "$HC" 2)
[ "$HC_LIVE" = 0 ] && pass "half-closed: 0 live flows on $HC once its last connection was idle for 2 s" ||
	fail "half-closed: $HC_LIVE live flows on $HC after its connection ended"
ringlb vip del "$HC_VIP" || fail "vip del $HC_VIP"

RST_PORT=$NEXT_PORT
NEXT_PORT=$((NEXT_PORT + 1))
RB=$(ringlb lookup "$VIP4" "$(topo_client_addr4 1):$RST_PORT")
on_client 1 curl -s -m 60 --local-port "$RST_PORT" "$(url "$TOPO_VIP4")/slow" -o "$W/rst.out" \
	-w '%{http_code} %{size_download}' >"$W/rst.res" &
RST_PID=$!
sleep 2
ringlb backend drain "$VIP4" "$RB" || fail "backend drain $RB"
if ringlb lookup --json "$VIP4" "$(topo_client_addr4 1):$RST_PORT" | jq -e --arg b "$RB" \
	'.backend == $b and .via == "flow table" and .new_connection != $b' >/dev/null; then
	pass "reset: lookup names $RB for the pinned download, and another backend for a new connection on its tuple"
else
	fail "reset: lookup of the pinned download: $(ringlb lookup --json "$VIP4" "$(topo_client_addr4 1):$RST_PORT" | tr -d '\n ')"
fi
for k in 1 2 3; do
	on_client 1 $PY "$ROOT/tests/tools/tcp_rst.py" "$(topo_client_addr4 1)" "$RST_PORT" \
		"$TOPO_VIP4" 80 || fail "reset: injecting a RST"
	sleep 0.5
done
wait $RST_PID
if [ "$(cat "$W/rst.res")" = "200 262144" ] && [ "$(tr -d "${RB#b}" <"$W/rst.out" | wc -c)" -eq 0 ]; then
	pass "reset: a download from draining $RB survived 3 RSTs with wrong sequence numbers (HTTP 200, 262144 bytes, all from $RB)"
else
	fail "reset: the download from draining $RB after 3 spoofed RSTs ended with '$(cat "$W/rst.res")', $(tr -d "${RB#b}" <"$W/rst.out" | wc -c) foreign bytes"
fi

# --- counters and flows of a reused VIP id or backend slot -------------------------------

# A backend slot given to a new backend: the old one's pinned flows and
# counters are not the new one's. Slots are handed out round-robin, so the
# state file's allocation hint is pointed back at the freed slot by hand.
agree "slot reuse" "$VIP4" 1 30
# The backend with the most live flows now: its slot is the one reused.
read -r RU RU_SLOT RU_PACKETS RU_LIVE < <(ringlb stats --json --idle 60 | jq -r --arg v "$VIP4" \
	'[.vips[] | select(.vip == $v) | .backends[] | select(.state == "active")] |
	max_by(.live_flows) | "\(.name) 0 \(.packets) \(.live_flows)"')
RU_SLOT=$(jq -r --arg v "$VIP4" --arg n "$RU" '.vips[] | select(.vip == $v) | .backends[] |
	select(.name == $n) | .id' "$W/state.json")
ringlb backend remove "$VIP4" "$RU" || fail "backend remove $RU"
jq --argjson id "$RU_SLOT" '.next_backend_id = $id' "$W/state.json" >"$W/hint.json" &&
	cp "$W/hint.json" "$W/state.json"
ringlb backend add "$VIP4" reused "$(topo_backend_addr4 "${RU#b}")" || fail "backend add reused"
read -r NEW_SLOT NEW_PACKETS NEW_LIVE < <(
	jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) | .backends[] | select(.name == "reused") |
		.id' "$W/state.json" | tr '\n' ' '
	ringlb stats --json --idle 60 | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) |
		.backends[] | select(.name == "reused") | "\(.packets) \(.live_flows)"')
if [ "$RU_PACKETS" -gt 0 ] && [ "$RU_LIVE" -gt 0 ] && [ "$NEW_SLOT" = "$RU_SLOT" ] &&
	[ "$NEW_PACKETS" = 0 ] && [ "$NEW_LIVE" = 0 ]; then
	pass "slot reuse: a new backend in $RU's old slot $RU_SLOT starts at 0 packets and 0 live flows ($RU had $RU_PACKETS packets and $RU_LIVE live flows)"
else
	fail "slot reuse: $RU (slot $RU_SLOT) had $RU_PACKETS packets, $RU_LIVE live flows; the backend in slot $NEW_SLOT starts at $NEW_PACKETS packets, $NEW_LIVE live flows"
fi
agree "counters" "$VIP6" 1 5
vip_packets() { ringlb stats --json | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .packets'; }
BEFORE=$(vip_packets "$VIP6")
ringlb vip del "$VIP6" && ringlb vip add "$VIP6" || fail "counters: vip del and add"
AFTER=$(vip_packets "$VIP6")
[ "$BEFORE" -gt 0 ] && [ "$AFTER" = 0 ] &&
	pass "counters: a VIP deleted and added again starts at 0 packets (the old one had $BEFORE)" ||
	fail "counters: the new VIP starts at $AFTER packets (the old one had $BEFORE)"

ringlb detach eth0 >/dev/null
echo "integrity: $FAILS failed"
[ $FAILS -eq 0 ]
