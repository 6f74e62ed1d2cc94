#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Reliability and security, with real traffic in the namespace topology:
#
#   swaps      CHANGES membership changes (add, remove, weight, drain) on two
#              VIPs while UDP frames stream through the balancer and TCP
#              downloads stay open: no frame dropped or sent to a removed
#              backend, every download completes from its own backend
#   crashes    CRASHES kill -9 of the CLI at random points of an update: the
#              state file is always the old or the new one, and `restore`
#              makes the maps agree with it whenever `verify` says they do not
#   operators  8 CLIs changing one VIP at once: no update lost
#   secret     the flow-hash secret: 0600, never printed or logged, refused
#              when others can read it; two secrets place flows differently
#   privileges every mutating command without root, or without CAP_NET_ADMIN,
#              fails with one line and changes nothing
#
# `make test` runs it with CHANGES=1000 CRASHES=200; `make soak` with more.
# Needs root; skips without it, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib.sh"
. "$ROOT/scripts/topology.sh"
CHANGES=${CHANGES:-1000}
CRASHES=${CRASHES:-200}

require_root reliability

topo_session reliability rlr
TCP_VIP="$TOPO_VIP4:80/tcp"
UDP_VIP="$TOPO_VIP4:53/udp"


# Packets the balancer counted under a reason, or for a backend slot.
reason_packets() {
	ringlb stats --json | jq -r --arg r "$1" '.reasons[$r].packets'
}
slot_packets() {
	bpftool map lookup pinned "$PIN/backend_stats" key "$(($1 & 255))" "$(($1 >> 8 & 255))" 0 0 -j |
		jq '[.formatted.values[].value.packets] | add'
}
vip_packets() {
	ringlb stats --json | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .packets'
}
backend_id() { jq -r --arg v "$1" --arg n "$2" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .id' "$W/state.json"; }

topo_up "$P" "$W" 5 || die "topology"
ringlb attach eth0 >/dev/null || die "attach"
for vip in "$TCP_VIP" "$UDP_VIP"; do
	ringlb vip add "$vip" --vnodes 512 || die "vip add $vip"
	for i in 1 2 3; do
		ringlb backend add "$vip" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
	done
done

# --- swaps under load -----------------------------------------------------------------

# Downloads that the ring sends to b1, which the changes never remove or drain.
PORTS=()
for p in $(seq 26000 26400); do
	[ "$(ringlb lookup "$TCP_VIP" "$(topo_client_addr4 2):$p")" = b1 ] && PORTS+=("$p")
	[ ${#PORTS[@]} -ge 8 ] && break
done
for p in "${PORTS[@]}"; do
	ip netns exec "${P}c2" curl -s -m 300 --local-port "$p" "http://$TOPO_VIP4/slower" \
		-o "$W/dl-$p" -w '%{http_code} %{size_download}' >"$W/dl-$p.res" &
done
sleep 1

# A steady UDP stream of new flows (one per 50 us) for as long as the changes
# run, in bursts of BURST frames; only whole bursts are counted as sent.
BURST=20000
cat >"$W/udp.trafgen" <<EOF
{ eth(da=$TOPO_LB_MAC, sa=$(topo_client_mac 1), type=0x0800),
  ipv4(sa=$(topo_client_addr4 1), da=$TOPO_VIP4, ttl=64),
  udp(sp=drnd(), dp=53), fill(0x61, 18) }
EOF
UDP_BEFORE=$(vip_packets "$UDP_VIP")
touch "$W/streaming"
(
	bursts=0
	while [ -e "$W/streaming" ]; do
		ip netns exec "${P}c1" trafgen -o eth0 -c "$W/udp.trafgen" --cpus 1 -n $BURST -t 50us \
			-q >/dev/null 2>&1 && bursts=$((bursts + 1))
	done
	echo $bursts >"$W/bursts"
) &
STREAM=$!

declare -A REMOVED_SLOT_PACKETS
applied=0 refused=0
RANDOM=42
for n in $(seq 1 "$CHANGES"); do
	vip=$TCP_VIP
	[ $((n % 2)) -eq 0 ] && vip=$UDP_VIP
	i=$((RANDOM % 5 + 1))
	present=$(jq -r --arg v "$vip" --arg n "b$i" \
		'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .state' \
		"$W/state.json")
	op=$((RANDOM % 4))
	if [ -z "$present" ]; then
		cmd=(backend add "$vip" "b$i" "$(topo_backend_addr4 "$i")" --weight $((RANDOM % 4 + 1)))
	elif [ "$i" = 1 ] || [ $op -le 1 ]; then
		cmd=(backend weight "$vip" "b$i" $((RANDOM % 4 + 1)))
	elif [ $op -eq 2 ] && [ "$present" = active ]; then
		cmd=(backend drain "$vip" "b$i")
	else
		id=$(backend_id "$vip" "b$i")
		cmd=(backend remove "$vip" "b$i")
	fi
	if ringlb "${cmd[@]}" 2>>"$W/refusals"; then
		applied=$((applied + 1))
		if [ "${cmd[1]}" = remove ]; then
			REMOVED_SLOT_PACKETS[$id]=$(slot_packets "$id")
		fi
	else
		refused=$((refused + 1))
	fi
done
rm -f "$W/streaming"
wait $STREAM
sleep 1
FRAMES=$(($(cat "$W/bursts") * BURST))
FORWARDED=$(($(vip_packets "$UDP_VIP") - UDP_BEFORE))
DROPPED=0
for r in drop_no_backend drop_no_ring drop_bad_ring drop_backend_gone; do
	DROPPED=$((DROPPED + $(reason_packets $r)))
done
LEAKED=0
WATCHED=0
for id in "${!REMOVED_SLOT_PACKETS[@]}"; do
	now=$(slot_packets "$id")
	case "$now${REMOVED_SLOT_PACKETS[$id]}" in *[!0-9]*|'') fail "swaps: no counter for slot $id"; continue ;; esac
	WATCHED=$((WATCHED + 1))
	LEAKED=$((LEAKED + now - REMOVED_SLOT_PACKETS[$id]))
done
if [ "$applied" -eq "$CHANGES" ] && [ "$DROPPED" -eq 0 ] && [ "$FRAMES" -gt 0 ] &&
	[ "$FORWARDED" -eq "$FRAMES" ]; then
	pass "swaps: $applied changes applied under a stream of $FRAMES UDP frames: $FORWARDED forwarded, $DROPPED dropped"
else
	fail "swaps: $applied of $CHANGES changes applied ($refused refused: $(head -1 "$W/refusals" 2>/dev/null)), $FRAMES frames sent, $FORWARDED forwarded, $DROPPED dropped"
fi
if [ "$LEAKED" -eq 0 ] && [ "$WATCHED" -gt 0 ]; then
	pass "swaps: 0 frames reached any of the $WATCHED removed backends after their removal"
else
	fail "swaps: $LEAKED frames reached backends after their removal"
fi
wait
good=0
for p in "${PORTS[@]}"; do
	[ "$(cat "$W/dl-$p.res")" = "200 1048576" ] && [ "$(tr -d 1 <"$W/dl-$p" | wc -c)" -eq 0 ] &&
		good=$((good + 1))
done
if [ "$good" -eq "${#PORTS[@]}" ] && [ "$good" -gt 0 ]; then
	pass "swaps: $good of ${#PORTS[@]} TCP downloads (1 MiB each) open through all the changes completed, every byte from b1"
else
	fail "swaps: only $good of ${#PORTS[@]} TCP downloads completed intact"
fi
if ringlb verify >/dev/null; then
	pass "swaps: verify: the kernel serves exactly the final state"
else
	fail "swaps: verify found the kernel and the state apart"
fi

# --- crashes mid-update ------------------------------------------------------------------

old=0 new=0 disagreed=0 repaired=0 broken=0
for n in $(seq 1 "$CRASHES"); do
	cp "$W/state.json" "$W/before.json"
	gen=$(jq .generation "$W/before.json")
	w=$((n % 9 + 1))
	case $((n % 3)) in
	0) cmd=(backend weight "$TCP_VIP" b1 "$w") ;;
	1) cmd=(backend add "$TCP_VIP" "crash$n" 198.18.0.99 --mac 02:00:00:00:09:99) ;;
	2) cmd=(backend remove "$TCP_VIP" "crash$((n - 1))") ;;
	esac
	nsenter --net="/run/netns/${P}lb" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" "${cmd[@]}" >/dev/null 2>&1 &
	victim=$!
	sleep "0.0$((RANDOM % 30))"
	kill -9 $victim 2>/dev/null
	wait $victim 2>/dev/null
	if cmp -s "$W/state.json" "$W/before.json"; then
		old=$((old + 1))
	elif [ "$(jq .generation "$W/state.json" 2>/dev/null)" = $((gen + 1)) ]; then
		new=$((new + 1))
	else
		broken=$((broken + 1))
	fi
	if ! ringlb verify >/dev/null 2>&1; then
		disagreed=$((disagreed + 1))
		ringlb restore "$W/state.json" >/dev/null 2>&1
		ringlb verify >/dev/null 2>&1 && repaired=$((repaired + 1))
	fi
done
if [ $broken -eq 0 ] && [ $repaired -eq $disagreed ]; then
	pass "crashes: $CRASHES kill -9 mid-update: state file old $old times, new $new times, never a mix; maps disagreed $disagreed times, restore made them agree every time"
else
	fail "crashes: $broken state files neither old nor new; $disagreed disagreements, $repaired repaired"
fi
left=$(find "$W" -maxdepth 1 -name 'state.json.tmp.*' | wc -l)
ringlb backend weight "$TCP_VIP" b1 2
if [ "$(find "$W" -maxdepth 1 -name 'state.json.tmp.*' | wc -l)" -eq 0 ]; then
	pass "crashes: no temp file of a killed writer remains after the next change ($left before it)"
else
	fail "crashes: temp files of killed writers remain after a change"
fi

# --- concurrent operators ------------------------------------------------------------------

gen=$(jq .generation "$W/state.json")
for k in $(seq 1 8); do
	ringlb backend add "$UDP_VIP" "op$k" "198.18.0.$((200 + k))" --mac "02:00:00:00:0a:0$k" &
done
wait
for k in $(seq 1 8); do
	ringlb backend weight "$UDP_VIP" op1 "$k" &
done
wait
added=$(jq -r --arg v "$UDP_VIP" '[.vips[] | select(.vip == $v) | .backends[] | select(.name | startswith("op"))] | length' "$W/state.json")
weight=$(jq -r --arg v "$UDP_VIP" '.vips[] | select(.vip == $v) | .backends[] | select(.name == "op1") | .weight' "$W/state.json")
gen2=$(jq .generation "$W/state.json")
if [ "$added" -eq 8 ] && [ $((gen2 - gen)) -eq 16 ] && [ "$weight" -ge 1 ] && [ "$weight" -le 8 ] &&
	ringlb verify >/dev/null; then
	pass "operators: 8 concurrent adds and 8 concurrent weight changes: 16 generations, 8 backends, weight $weight (one of the 8), kernel agrees"
else
	fail "operators: $added of 8 added, $((gen2 - gen)) of 16 changes recorded, weight $weight"
fi

# --- the secret --------------------------------------------------------------------------

SECRET=$(cat "$W/secret")
mode=$(stat -c %a "$W/secret")
ringlb show --json >"$W/out.show"
ringlb stats --json >"$W/out.stats"
ringlb lookup --json "$TCP_VIP" 198.18.0.21:1234 >"$W/out.lookup"
if [ "$mode" = 600 ] && ! grep -qi -- "$SECRET" "$W/audit.log" "$W/state.json" "$W"/out.* &&
	! grep -qi -- "${SECRET:0:16}" "$W/audit.log" "$W/state.json" "$W"/out.*; then
	pass "secret: mode $mode, absent from the state file, the audit log and show/stats/lookup output"
else
	fail "secret: mode $mode, or printed somewhere"
fi
chmod 644 "$W/secret"
if ! ringlb lookup "$TCP_VIP" 198.18.0.21:1234 2>"$W/err" >/dev/null && grep -q "readable by others" "$W/err"; then
	pass "secret: a secret others can read is refused: '$(cat "$W/err")'"
else
	fail "secret: a world-readable secret was used"
fi
chmod 600 "$W/secret"
# Two deployments of the same configuration: same secret, same choices; other secret, other choices.
mkdir -p "$W/twin" "$W/other"
cp "$W/state.json" "$W/twin/state.json"
cp "$W/state.json" "$W/other/state.json"
install -m 600 "$W/secret" "$W/twin/secret"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/other/secret"
echo >>"$W/other/secret"
chmod 600 "$W/other/secret"
same=0 differ=0
for p in $(seq 20000 20299); do
	a=$("$ROOT/build/ringlb" --state "$W/state.json" --pin-dir /nonexistent lookup "$TCP_VIP" "198.18.7.7:$p")
	b=$("$ROOT/build/ringlb" --state "$W/twin/state.json" --pin-dir /nonexistent lookup "$TCP_VIP" "198.18.7.7:$p")
	c=$("$ROOT/build/ringlb" --state "$W/other/state.json" --pin-dir /nonexistent lookup "$TCP_VIP" "198.18.7.7:$p")
	[ "$a" = "$b" ] && same=$((same + 1))
	[ "$a" != "$c" ] && differ=$((differ + 1))
done
if [ $same -eq 300 ] && [ $differ -ge 90 ]; then
	pass "secret: of 300 flows, a host with the same secret places 300 alike; a deployment with another secret places $differ differently"
else
	fail "secret: same secret agrees on $same of 300; another secret differs on $differ"
fi

# --- privileges ------------------------------------------------------------------------------

refusals=0 checked=0
for cmd in "attach eth0" "detach eth0" "vip add 198.18.0.101:80/tcp" "vip del $TCP_VIP" \
	"backend add $TCP_VIP bx 198.18.0.99 --mac 02:00:00:00:00:99" "backend weight $TCP_VIP b1 3" \
	"backend drain $TCP_VIP b1" "backend remove $TCP_VIP b1" "restore $W/state.json"; do
	for how in nobody no-net-admin; do
		before=$(sha256sum <"$W/state.json")
		if [ $how = nobody ]; then
			# shellcheck disable=SC2086
			nsenter --net="/run/netns/${P}lb" setpriv --reuid=65534 --regid=65534 \
				--clear-groups --inh-caps=-all "$ROOT/build/ringlb" --state "$W/state.json" \
				--pin-dir "$PIN" $cmd >/dev/null 2>"$W/err"
		else
			# shellcheck disable=SC2086
			nsenter --net="/run/netns/${P}lb" setpriv --bounding-set=-net_admin,-sys_admin \
				--inh-caps=-net_admin,-sys_admin "$ROOT/build/ringlb" --state "$W/state.json" \
				--pin-dir "$PIN" $cmd >/dev/null 2>"$W/err"
		fi
		rc=$?
		checked=$((checked + 1))
		[ $rc -ne 0 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -q "needs root" "$W/err" &&
			[ "$before" = "$(sha256sum <"$W/state.json")" ] && refusals=$((refusals + 1))
	done
done
if [ $refusals -eq $checked ] && ringlb verify >/dev/null; then
	pass "privileges: $checked mutating commands without root or without CAP_NET_ADMIN: all refused with one line, nothing changed"
else
	fail "privileges: $refusals of $checked refused cleanly"
fi

ringlb detach eth0 >/dev/null
echo "reliability: $FAILS failed"
[ $FAILS -eq 0 ]
