#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# End to end, with real traffic: the namespace topology of
# scripts/topology.sh, ringlb attached in native mode on the balancer, nginx
# on three backends holding the VIPs on loopback, curl as the client. Each
# check prints its figures; the script exits non-zero when any check fails.
#
#   spread       connections split across backends in proportion to weight
#   lookup       `ringlb lookup` names the backend of every connection
#   drain        an open connection survives the drain of its backend and
#                completes; no new connection reaches it; live flows drop to 0
#   add/remove   only the planned share of new flows moves, only to or from
#                the changed backend
#   ipv6         the same for an IPv6 VIP
#   in place     a weight change is written into each VIP's two ring maps
#                (serving and spare): no new map, and verify agrees
#   re-attach    rings rebuilt after a detach and loss of the pins, and after
#                a restore, are the same rings (digest of what the search reads)
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root e2e

topo_session e2e rlb
VIP4="$TOPO_VIP4:80/tcp"
VIP6="[$TOPO_VIP6]:80/tcp"

# connections CLIENT ADDR N: N new connections (Connection: close), printing
# "backend local_port" per connection.
connections() {
	on_client "$1" curl -s -m 30 -H 'Connection: close' -w '%{local_port}\n' \
		"$(url "$2")/[1-$3]" | paste -d" " - -
}

# share VIP NAME: a backend's share of the ring, from `ringlb show --json`.
share() { ringlb show --json | jq -r --arg v "$1" --arg n "$2" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .share'; }

# within OBSERVED EXPECTED N: |observed/N - expected| <= 4 sigma of a binomial.
within() { awk -v o="$1" -v e="$2" -v n="$3" 'BEGIN {
	s = 4 * sqrt(e * (1 - e) / n); d = o / n - e; if (d < 0) d = -d; exit !(d <= s + 0.005) }'; }

# --- set-up ----------------------------------------------------------------------

topo_up "$P" "$W" 3 || die "topology"
ringlb attach eth0 >/dev/null || die "attach"
if ip -n "${P}lb" link show eth0 | grep -q 'xdp '; then
	pass "attached in native mode ($(ip -n "${P}lb" link show eth0 | grep -o 'prog/xdp id [0-9]*'))"
else
	fail "the program is not attached in native (driver) mode"
fi
for vip in "$VIP4" "$VIP6"; do
	ringlb vip add "$vip" >/dev/null || die "vip add $vip"
done
for i in 1 2 3; do
	ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" --weight "$i" || die "backend b$i"
	ringlb backend add "$VIP6" "b$i" "$(topo_backend_addr6 "$i")" --weight "$i" || die "backend b$i v6"
done

# --- spread and lookup --------------------------------------------------------------

# spread ADDR VIP CLIENT N: counts per backend against their ring shares.
spread() {
	local addr=$1 vip=$2 client=$3 n=$4 i got want ok=1 line=""
	connections "$client" "$addr" "$n" >"$W/spread"
	for i in 1 2 3; do
		got=$(grep -c "^b$i " "$W/spread")
		want=$(share "$vip" "b$i")
		line="$line b$i=$got (ring share $(awk -v s="$want" 'BEGIN{printf "%.1f%%", 100*s}'))"
		within "$got" "$want" "$n" || ok=0
	done
	if [ "$(wc -l <"$W/spread")" -ne "$n" ]; then
		fail "spread $vip: $(wc -l <"$W/spread") of $n connections answered"
	elif [ $ok = 1 ]; then
		pass "spread $vip, weights 1:2:3, $n connections:$line"
	else
		fail "spread $vip off its ring shares by more than 4 sigma:$line"
	fi
}

# lookup_all VIP CLIENT_ADDR: every connection of the last spread was named by lookup.
lookup_all() {
	local vip=$1 caddr=$2 backend port agree=0 total=0 ep
	while read -r backend port; do
		case $caddr in *:*) ep="[$caddr]:$port" ;; *) ep="$caddr:$port" ;; esac
		total=$((total + 1))
		[ "$(ringlb lookup "$vip" "$ep")" = "$backend" ] && agree=$((agree + 1))
	done <"$W/spread"
	if [ $agree -eq $total ] && [ $total -gt 0 ]; then
		pass "lookup $vip names the backend of $agree of $total connections"
	else
		fail "lookup $vip agrees on only $agree of $total connections"
	fi
}

# predict VIP CLIENT FIRST_PORT N: lookup before connecting, then connect from each port.
# Chosen ports stay below the ephemeral range (32768 and up): a port an earlier
# connection of the same client still holds cannot be bound again.
predict() {
	local vip=$1 client=$2 first=$3 n=$4 addr caddr p want got agree=0 missed=
	addr=$TOPO_VIP4 caddr=$(topo_client_addr4 "$client")
	case $vip in \[*) addr=$TOPO_VIP6 caddr=$(topo_client_addr6 "$client") ;; esac
	for p in $(seq "$first" $((first + n - 1))); do
		case $caddr in *:*) want=$(ringlb lookup "$vip" "[$caddr]:$p") ;;
		*) want=$(ringlb lookup "$vip" "$caddr:$p") ;; esac
		got=$(on_client "$client" curl -s -m 5 --local-port "$p" "$(url "$addr")/")
		if [ "$want" = "$got" ]; then
			agree=$((agree + 1))
		else
			missed="$missed port $p: lookup $want, connection '$got';"
		fi
	done
	if [ $agree -eq "$n" ]; then
		pass "lookup $vip predicted the backend of $agree of $n connections before they opened"
	else
		fail "lookup $vip predicted only $agree of $n connections:$missed"
	fi
}

spread "$TOPO_VIP4" "$VIP4" 1 600
lookup_all "$VIP4" "$(topo_client_addr4 1)"
predict "$VIP4" 2 30000 100

# --- drain ---------------------------------------------------------------------------

# A port whose flow the ring gives to some backend; hold a slow download there.
SLOW_PORT=28000
DRAINED=$(ringlb lookup "$VIP4" "$(topo_client_addr4 1):$SLOW_PORT")
on_client 1 curl -s -m 60 --local-port $SLOW_PORT "$(url "$TOPO_VIP4")/slow" -o "$W/slow.out" \
	-w '%{http_code} %{size_download}' >"$W/slow.res" &
SLOW_PID=$!
sleep 2
# Live flows: a packet in the last 2 s (a closed connection counts until then).
live_of() { ringlb stats --json --idle 2 | jq -r --arg v "$VIP4" --arg n "$1" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .live_flows'; }
LIVE_BEFORE=$(live_of "$DRAINED")
ringlb backend drain "$VIP4" "$DRAINED" || fail "backend drain $DRAINED"
connections 2 "$TOPO_VIP4" 300 >"$W/after-drain"
LEAKED=$(grep -c "^$DRAINED " "$W/after-drain")
LIVE_DURING=$(live_of "$DRAINED")
wait $SLOW_PID
SLOW_RES=$(cat "$W/slow.res")
SLOW_FOREIGN=$(tr -d "${DRAINED#b}" <"$W/slow.out" | wc -c)
sleep 4
LIVE_AFTER=$(live_of "$DRAINED")
if [ "$SLOW_RES" = "200 262144" ] && [ "$SLOW_FOREIGN" -eq 0 ]; then
	pass "drain: the open connection to $DRAINED completed (HTTP 200, 262144 bytes, all from $DRAINED)"
else
	fail "drain: the open connection to $DRAINED ended with '$SLOW_RES', $SLOW_FOREIGN foreign bytes"
fi
if [ "$LEAKED" -eq 0 ] && [ "$(wc -l <"$W/after-drain")" -eq 300 ]; then
	pass "drain: 0 of 300 new connections reached $DRAINED"
else
	fail "drain: $LEAKED of 300 new connections reached $DRAINED"
fi
if [ "$LIVE_BEFORE" -ge 1 ] && [ "$LIVE_DURING" -ge 1 ] && [ "$LIVE_AFTER" -eq 0 ]; then
	pass "drain: live flows of $DRAINED (a packet in the last 2 s): $LIVE_BEFORE before, $LIVE_DURING during, $LIVE_AFTER once its connections were idle"
else
	fail "drain: live flows of $DRAINED: $LIVE_BEFORE before, $LIVE_DURING during, $LIVE_AFTER after"
fi
ringlb backend remove "$VIP4" "$DRAINED" || fail "backend remove $DRAINED"

# --- add and remove move only the planned share ---------------------------------------

# change_moves CLIENT FIRST_PORT N CHANGED PLAN_ARGS -- CHANGE_ARGS
change_moves() {
	local client=$1 first=$2 n=$3 changed=$4 caddr p planned moved=0 wrong=0 before after
	shift 4
	local -a plan=() change=()
	while [ "$1" != -- ]; do plan+=("$1"); shift; done
	shift
	change=("$@")
	caddr=$(topo_client_addr4 "$client")
	planned=$(ringlb plan --json "$VIP4" "${plan[@]}" | jq -r .moved)
	for p in $(seq "$first" $((first + n - 1))); do
		echo "$(ringlb lookup "$VIP4" "$caddr:$p")"
	done >"$W/before"
	ringlb "${change[@]}" || { fail "${change[*]}"; return; }
	for p in $(seq "$first" $((first + n - 1))); do
		on_client "$client" curl -s -m 5 --local-port "$p" "$(url "$TOPO_VIP4")/"
	done >"$W/after"
	while read -r before <&3 && read -r after <&4; do
		[ "$before" = "$after" ] && continue
		moved=$((moved + 1))
		[ "$before" = "$changed" ] || [ "$after" = "$changed" ] || wrong=$((wrong + 1))
	done 3<"$W/before" 4<"$W/after"
	if [ $wrong -eq 0 ] && within "$moved" "$planned" "$n"; then
		pass "${change[*]}: $moved of $n new flows moved (plan: $(awk -v m="$planned" 'BEGIN{printf "%.1f%%", 100*m}')), all to or from $changed"
	else
		fail "${change[*]}: $moved of $n new flows moved (plan $planned), $wrong between unchanged backends"
	fi
}

ADDED=$DRAINED
change_moves 2 31000 400 "$ADDED" add "$ADDED" "$(topo_backend_addr4 "${ADDED#b}")" --weight 3 -- \
	backend add "$VIP4" "$ADDED" "$(topo_backend_addr4 "${ADDED#b}")" --weight 3
REMOVED=b1
[ "$ADDED" = b1 ] && REMOVED=b2
change_moves 2 32000 400 "$REMOVED" remove "$REMOVED" -- backend remove "$VIP4" "$REMOVED"
ringlb backend add "$VIP4" "$REMOVED" "$(topo_backend_addr4 "${REMOVED#b}")" --weight "${REMOVED#b}" ||
	fail "re-adding $REMOVED"

# --- IPv6 ------------------------------------------------------------------------------

spread "$TOPO_VIP6" "$VIP6" 1 600
lookup_all "$VIP6" "$(topo_client_addr6 1)"
predict "$VIP6" 2 29000 50

# --- a change is written in place ----------------------------------------------------

# ring_digest: a digest of the ring the kernel serves for the IPv4 VIP.
ring_digest() {
	ringlb show --json | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) | .kernel_ring_digest'
}
# ring_maps: the id of every ring map the kernel holds, serving and spare, one a line.
ring_maps() {
	for c in 0 1 2 3; do
		bpftool map dump pinned "$PIN/rings_$c" -j | jq -r '.[] | .value | join("")'
	done | sort
}
# index_bits POINTS: the ring map's bucket bits for that many points (two
# buckets a point, 13 .. 21: ringmap_bits()).
index_bits() {
	local b=13
	while [ $b -lt 21 ] && [ $((1 << b)) -lt $((2 * $1)) ]; do b=$((b + 1)); done
	echo $b
}
# A new weight for one active backend that keeps the ring's index size: only
# then is a change written in place (another size is built whole, as a fresh
# build would lay it out).
read -r WB WW WK WP < <(ringlb show --json | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) |
	first(.backends[] | select(.state == "active")) as $b |
	"\($b.name) \($b.weight) \(.vnodes) \(.points)"')
NEW_WEIGHT=
for w in 1 2 3 4 5 6 7 8 9; do
	np=$((WP + (w - WW) * WK))
	if [ "$w" -ne "$WW" ] && [ "$(index_bits "$np")" = "$(index_bits "$WP")" ]; then
		NEW_WEIGHT=$w
		break
	fi
done
[ -n "$NEW_WEIGHT" ] || die "no weight of $WB keeps the index size of $WP points"
MAPS_BEFORE=$(ring_maps)
DIGEST_BEFORE=$(ring_digest)
ringlb backend weight "$VIP4" "$WB" "$NEW_WEIGHT" || fail "backend weight"
MAPS_AFTER=$(ring_maps)
DIGEST_AFTER=$(ring_digest)
if [ "$(printf '%s\n' "$MAPS_BEFORE" | wc -l)" -eq 4 ] && [ "$MAPS_BEFORE" = "$MAPS_AFTER" ] &&
	[ "$DIGEST_BEFORE" != "$DIGEST_AFTER" ] && ringlb verify >/dev/null; then
	pass "backend weight $WB $WW -> $NEW_WEIGHT was written into the VIPs' 4 ring maps (2 serving, 2 spare), no new map; verify agrees"
else
	fail "backend weight $WB $WW -> $NEW_WEIGHT: ring maps $(echo $MAPS_BEFORE) then $(echo $MAPS_AFTER), digest $DIGEST_BEFORE then $DIGEST_AFTER"
fi

# --- re-attach and restore rebuild the same rings ---------------------------------------

BEFORE=$(ring_digest)
ringlb save "$W/saved.json" || fail "save"
ringlb detach eth0 || fail "detach"
rm -rf "$PIN"   # what a reboot does to the pins
ringlb attach eth0 >/dev/null || fail "re-attach"
AFTER=$(ring_digest)
if [ -n "$BEFORE" ] && [ "$BEFORE" != null ] && [ "$BEFORE" = "$AFTER" ]; then
	pass "re-attach after losing the pins rebuilt the same ring (digest $AFTER)"
else
	fail "re-attach rebuilt a different ring: $BEFORE then $AFTER"
fi
ringlb backend weight "$VIP4" b2 7 || fail "backend weight"
CHANGED=$(ring_digest)
ringlb restore "$W/saved.json" || fail "restore"
RESTORED=$(ring_digest)
if [ "$CHANGED" != "$BEFORE" ] && [ "$RESTORED" = "$BEFORE" ]; then
	pass "restore rebuilt the saved ring (digest $RESTORED)"
else
	fail "restore: saved $BEFORE, changed $CHANGED, restored $RESTORED"
fi
spread "$TOPO_VIP4" "$VIP4" 1 300

echo "e2e: $FAILS failed"
[ $FAILS -eq 0 ]
