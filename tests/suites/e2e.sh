#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# End to end, with real traffic: the namespace topology of
# scripts/topology.sh, ringlb attached in native mode on the balancer, nginx
# on three backends holding the VIPs on loopback, curl as the client. Each
# check prints its figures; the script exits non-zero when any check fails.
# Its tests (tests/suites/lib.sh runs them; `e2e.sh TEST...` runs some):
#
#   native       the program is attached in native (driver) mode
#   spread4      connections split across backends in proportion to weight,
#                `ringlb lookup` names the backend of every connection, and
#                predicts it before the connection opens
#   drain        an open connection survives the drain of its backend and
#                completes; no new connection reaches it; live flows drop to 0
#   moves        (after drain) add and remove move only the planned share of
#                new flows, only to or from the changed backend
#   spread6      spread and lookup for an IPv6 VIP
#   in_place     a weight change is written into each VIP's two ring maps
#                (serving and spare): no new map, and verify agrees
#   reattach     rings rebuilt after a detach and loss of the pins, and after
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

setup() {
	topo_up "$P" "$W" 3 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	for vip in "$VIP4" "$VIP6"; do
		ringlb vip add "$vip" >/dev/null || die "vip add $vip"
	done
	for i in 1 2 3; do
		ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" --weight "$i" ||
			die "backend b$i"
		ringlb backend add "$VIP6" "b$i" "$(topo_backend_addr6 "$i")" --weight "$i" ||
			die "backend b$i v6"
	done
}

t_native() {
	if ip -n "${P}lb" link show eth0 | grep -q 'xdp '; then
		pass "attached in native mode ($(ip -n "${P}lb" link show eth0 | grep -o 'prog/xdp id [0-9]*'))"
	else
		fail "the program is not attached in native (driver) mode"
	fi
}

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
	local vip=$1 caddr=$2 backend want agree=0 total=0
	local -a eps=()
	while read -r backend port; do eps+=("$(endpoint "$caddr" "$port")"); done <"$W/spread"
	while read -r backend want; do
		total=$((total + 1))
		[ "$want" = "$backend" ] && agree=$((agree + 1))
	done < <(paste -d" " <(cut -d" " -f1 "$W/spread") <(lookups "$vip" "${eps[@]}"))
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
	local -a eps=()
	addr=$TOPO_VIP4 caddr=$(topo_client_addr4 "$client")
	case $vip in \[*) addr=$TOPO_VIP6 caddr=$(topo_client_addr6 "$client") ;; esac
	for p in $(seq "$first" $((first + n - 1))); do eps+=("$(endpoint "$caddr" "$p")"); done
	lookups "$vip" "${eps[@]}" >"$W/predicted"
	for p in $(seq "$first" $((first + n - 1))); do
		want=$(sed -n "$((p - first + 1))p" "$W/predicted")
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

t_spread4() {
	spread "$TOPO_VIP4" "$VIP4" 1 600
	lookup_all "$VIP4" "$(topo_client_addr4 1)"
	predict "$VIP4" 2 30000 100
}

# --- drain ---------------------------------------------------------------------------

# Live flows: a packet in the last 2 s (a closed connection counts until then).
live_of() { ringlb stats --json --idle 2 | jq -r --arg v "$VIP4" --arg n "$1" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .live_flows'; }

# DRAINED: the backend drained (and removed), for the tests after it.
t_drain() {
	local slow_port=28000 slow_pid leaked live_before live_during live_after slow_res slow_foreign
	# A port whose flow the ring gives to some backend; hold a slow download there.
	DRAINED=$(ringlb lookup "$VIP4" "$(topo_client_addr4 1):$slow_port")
	on_client 1 curl -s -m 60 --local-port $slow_port "$(url "$TOPO_VIP4")/slow" \
		-o "$W/slow.out" -w '%{http_code} %{size_download}' >"$W/slow.res" &
	slow_pid=$!
	sleep 2
	live_before=$(live_of "$DRAINED")
	ringlb backend drain "$VIP4" "$DRAINED" || fail "backend drain $DRAINED"
	connections 2 "$TOPO_VIP4" 300 >"$W/after-drain"
	leaked=$(grep -c "^$DRAINED " "$W/after-drain")
	live_during=$(live_of "$DRAINED")
	wait $slow_pid
	slow_res=$(cat "$W/slow.res")
	slow_foreign=$(tr -d "${DRAINED#b}" <"$W/slow.out" | wc -c)
	sleep 4
	live_after=$(live_of "$DRAINED")
	if [ "$slow_res" = "200 262144" ] && [ "$slow_foreign" -eq 0 ]; then
		pass "drain: the open connection to $DRAINED completed (HTTP 200, 262144 bytes, all from $DRAINED)"
	else
		fail "drain: the open connection to $DRAINED ended with '$slow_res', $slow_foreign foreign bytes"
	fi
	if [ "$leaked" -eq 0 ] && [ "$(wc -l <"$W/after-drain")" -eq 300 ]; then
		pass "drain: 0 of 300 new connections reached $DRAINED"
	else
		fail "drain: $leaked of 300 new connections reached $DRAINED"
	fi
	if [ "$live_before" -ge 1 ] && [ "$live_during" -ge 1 ] && [ "$live_after" -eq 0 ]; then
		pass "drain: live flows of $DRAINED (a packet in the last 2 s): $live_before before, $live_during during, $live_after once its connections were idle"
	else
		fail "drain: live flows of $DRAINED: $live_before before, $live_during during, $live_after after"
	fi
	ringlb backend remove "$VIP4" "$DRAINED" || fail "backend remove $DRAINED"
}

# --- add and remove move only the planned share ---------------------------------------

# change_moves CLIENT FIRST_PORT N CHANGED PLAN_ARGS -- CHANGE_ARGS
change_moves() {
	local client=$1 first=$2 n=$3 changed=$4 caddr p planned moved=0 wrong=0 before after
	shift 4
	local -a plan=() change=() eps=()
	while [ "$1" != -- ]; do plan+=("$1"); shift; done
	shift
	change=("$@")
	caddr=$(topo_client_addr4 "$client")
	planned=$(ringlb plan --json "$VIP4" "${plan[@]}" | jq -r .moved)
	for p in $(seq "$first" $((first + n - 1))); do eps+=("$caddr:$p"); done
	lookups "$VIP4" "${eps[@]}" >"$W/before"
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

t_moves() {
	local added=$DRAINED removed=b1
	change_moves 2 31000 400 "$added" add "$added" "$(topo_backend_addr4 "${added#b}")" \
		--weight 3 -- backend add "$VIP4" "$added" "$(topo_backend_addr4 "${added#b}")" --weight 3
	[ "$added" = b1 ] && removed=b2
	change_moves 2 32000 400 "$removed" remove "$removed" -- backend remove "$VIP4" "$removed"
	ringlb backend add "$VIP4" "$removed" "$(topo_backend_addr4 "${removed#b}")" \
		--weight "${removed#b}" || fail "re-adding $removed"
}

# --- IPv6 ------------------------------------------------------------------------------

t_spread6() {
	spread "$TOPO_VIP6" "$VIP6" 1 600
	lookup_all "$VIP6" "$(topo_client_addr6 1)"
	predict "$VIP6" 2 29000 50
}

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
t_in_place() {
	local wb ww wk wp np w new_weight maps_before maps_after digest_before digest_after
	read -r wb ww wk wp < <(ringlb show --json | jq -r --arg v "$VIP4" '.vips[] | select(.vip == $v) |
		first(.backends[] | select(.state == "active")) as $b |
		"\($b.name) \($b.weight) \(.vnodes) \(.points)"')
	new_weight=
	for w in 1 2 3 4 5 6 7 8 9; do
		np=$((wp + (w - ww) * wk))
		if [ "$w" -ne "$ww" ] && [ "$(index_bits "$np")" = "$(index_bits "$wp")" ]; then
			new_weight=$w
			break
		fi
	done
	[ -n "$new_weight" ] || die "no weight of $wb keeps the index size of $wp points"
	maps_before=$(ring_maps)
	digest_before=$(ring_digest)
	ringlb backend weight "$VIP4" "$wb" "$new_weight" || fail "backend weight"
	maps_after=$(ring_maps)
	digest_after=$(ring_digest)
	if [ "$(printf '%s\n' "$maps_before" | wc -l)" -eq 4 ] && [ "$maps_before" = "$maps_after" ] &&
		[ "$digest_before" != "$digest_after" ] && ringlb verify >/dev/null; then
		pass "backend weight $wb $ww -> $new_weight was written into the VIPs' 4 ring maps (2 serving, 2 spare), no new map; verify agrees"
	else
		fail "backend weight $wb $ww -> $new_weight: ring maps $(echo $maps_before) then $(echo $maps_after), digest $digest_before then $digest_after"
	fi
}

# --- re-attach and restore rebuild the same rings ---------------------------------------

t_reattach() {
	local before after changed restored
	before=$(ring_digest)
	ringlb save "$W/saved.json" || fail "save"
	ringlb detach eth0 || fail "detach"
	rm -rf "$PIN"   # what a reboot does to the pins
	ringlb attach eth0 >/dev/null || fail "re-attach"
	after=$(ring_digest)
	if [ -n "$before" ] && [ "$before" != null ] && [ "$before" = "$after" ]; then
		pass "re-attach after losing the pins rebuilt the same ring (digest $after)"
	else
		fail "re-attach rebuilt a different ring: $before then $after"
	fi
	ringlb backend weight "$VIP4" b2 7 || fail "backend weight"
	changed=$(ring_digest)
	ringlb restore "$W/saved.json" || fail "restore"
	restored=$(ring_digest)
	if [ "$changed" != "$before" ] && [ "$restored" = "$before" ]; then
		pass "restore rebuilt the saved ring (digest $restored)"
	else
		fail "restore: saved $before, changed $changed, restored $restored"
	fi
	spread "$TOPO_VIP4" "$VIP4" 1 300
}

suite_test native
suite_test spread4
suite_test drain
suite_test moves drain
suite_test spread6
suite_test in_place
suite_test reattach
suite_main "$@"
