#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Reliability and security, with real traffic in the namespace topology. Its
# tests (tests/suites/lib.sh runs them; `reliability.sh TEST...` runs some), on
# a TCP and a UDP VIP with backends b1 to b3 set up first:
#
#   swaps      CHANGES membership changes (add, remove, weight, drain) on two
#              VIPs while UDP frames stream through the balancer and TCP
#              downloads stay open: no frame dropped or sent to a removed
#              backend, every download completes from its own backend
#   crashes    CRASHES kill -9 of the CLI at random points of every kind of
#              change (weight, add, remove, drain, vip add/del/sources, restore,
#              secret set, attach, detach), each followed by an ordinary
#              change on another VIP, verify and real connections: the state
#              file is always the old or the new one, the ordinary change
#              repairs the kernel, verify is clean, every connection goes
#              where lookup says and nothing is dropped
#   snapshots  (after crashes, on its VIP and snapshots) 50 random saves into
#              3 slots, restores, adds and removes: verify clean and
#              connections where lookup says after each
#   operators  8 CLIs changing one VIP at once: no update lost
#   secret     the flow-hash secret: 0600, never printed or logged, refused
#              when others can read it; two secrets place flows differently
#   privileges every mutating command without root, or without CAP_NET_ADMIN,
#              fails with one line and changes nothing
#
# `make test` runs it with CHANGES=500 CRASHES=100; `make soak` with 10,000 and 2,000.
# Needs root; skips without it, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"
CHANGES=${CHANGES:-500}
CRASHES=${CRASHES:-100}

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

setup() {
	local vip i
	topo_up "$P" "$W" 5 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	for vip in "$TCP_VIP" "$UDP_VIP"; do
		ringlb vip add "$vip" --vnodes 512 || die "vip add $vip"
		for i in 1 2 3; do
			ringlb backend add "$vip" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
		done
	done
}

# --- swaps under load -----------------------------------------------------------------

t_swaps() {
	local p n i op vip present id cmd applied refused bursts now good held backend
	local FRAMES FORWARDED DROPPED LEAKED WATCHED UDP_BEFORE STREAM BURST
	local -a PORTS=() eps=() downloads=()
	local -A REMOVED_SLOT_PACKETS=()
	# Downloads that the ring sends to b1, which the changes never remove or drain:
	# the first 8 of these ports whose flow it gives b1 (one lookup for all of them).
	for p in $(seq 26000 26400); do eps+=("$(topo_client_addr4 2):$p"); done
	p=26000
	while read -r backend; do
		[ "$backend" = b1 ] && PORTS+=("$p")
		[ ${#PORTS[@]} -ge 8 ] && break
		p=$((p + 1))
	done < <(lookups "$TCP_VIP" "${eps[@]}")
	# Held open while $W/streaming exists (the changes run), then read whole.
	touch "$W/streaming"
	for p in "${PORTS[@]}"; do
		ip netns exec "${P}c2" python3 "$ROOT/tests/tools/heldget.py" --local-port "$p" \
			"http://$TOPO_VIP4/held" "$W/dl-$p" "$W/streaming" >"$W/dl-$p.res" &
		downloads+=($!)
	done
	# Until every download has its first bytes, its flow pinned (was a fixed 1 s; 10 s at most).
	for _ in $(seq 1 100); do
		n=0
		for p in "${PORTS[@]}"; do [ -s "$W/dl-$p" ] && n=$((n + 1)); done
		[ $n -eq ${#PORTS[@]} ] && break
		sleep 0.1
	done

	# A steady UDP stream of new flows (one per 50 us) for as long as the changes
	# run, in bursts of BURST frames; only whole bursts are counted as sent.
	BURST=20000
	cat >"$W/udp.trafgen" <<EOF
{ eth(da=$TOPO_LB_MAC, sa=$(topo_client_mac 1), type=0x0800),
  ipv4(sa=$(topo_client_addr4 1), da=$TOPO_VIP4, ttl=64),
  udp(sp=drnd(), dp=53), fill(0x61, 18) }
EOF
	UDP_BEFORE=$(vip_packets "$UDP_VIP")
	(
		bursts=0
		while [ -e "$W/streaming" ]; do
			ip netns exec "${P}c1" env -C "$W" trafgen -o eth0 -c "$W/udp.trafgen" --cpus 1 -n $BURST -t 50us \
				-q >/dev/null 2>&1 && bursts=$((bursts + 1))
		done
		echo $bursts >"$W/bursts"
	) &
	STREAM=$!

	applied=0 refused=0
	RANDOM=42
	# Each backend's state, kept here as the changes go (a jq a change cost more
	# than the change); compared with the state file after the last one.
	local -A MEMBER=()
	members_of_state() {
		jq -r '.vips[] | .vip as $v | .backends[] | "\($v)|\(.name) \(.state)"' "$W/state.json" | sort
	}
	while read -r n present; do MEMBER[$n]=$present; done < <(members_of_state)
	for n in $(seq 1 "$CHANGES"); do
		vip=$TCP_VIP
		[ $((n % 2)) -eq 0 ] && vip=$UDP_VIP
		i=$((RANDOM % 5 + 1))
		present=${MEMBER["$vip|b$i"]:-}
		op=$((RANDOM % 4))
		if [ -z "$present" ]; then
			cmd=(backend add "$vip" "b$i" "$(topo_backend_addr4 "$i")" --weight $((RANDOM % 4 + 1)))
		elif [ "$i" = 1 ] || [ $op -le 1 ]; then
			# A draining backend's weight is refused unless it is undrained too.
			cmd=(backend weight "$vip" "b$i" $((RANDOM % 4 + 1)))
			[ "$present" = draining ] && cmd+=(--undrain)
		elif [ $op -eq 2 ] && [ "$present" = active ]; then
			cmd=(backend drain "$vip" "b$i")
		else
			id=$(backend_id "$vip" "b$i")
			cmd=(backend remove "$vip" "b$i")
		fi
		if ringlb "${cmd[@]}" 2>>"$W/refusals"; then
			applied=$((applied + 1))
			case ${cmd[1]} in
			remove) REMOVED_SLOT_PACKETS[$id]=$(slot_packets "$id")
				unset "MEMBER[$vip|b$i]" ;;
			drain) MEMBER["$vip|b$i"]=draining ;;
			*) MEMBER["$vip|b$i"]=active ;;
			esac
		else
			refused=$((refused + 1))
		fi
	done
	if [ "$(for n in "${!MEMBER[@]}"; do echo "$n ${MEMBER[$n]}"; done | sort)" != "$(members_of_state)" ]; then
		fail "swaps: the backends this test kept track of are not the state's"
	fi
	# The downloads still under way as the last change is made: open through them all.
	held=0
	for p in "${PORTS[@]}"; do
		[ "$(stat -c %s "$W/dl-$p" 2>/dev/null || echo 0)" -lt 1048576 ] && held=$((held + 1))
	done
	rm -f "$W/streaming"
	wait $STREAM
	FRAMES=$(($(cat "$W/bursts") * BURST))
	# Until the frames still on their way are counted (was a fixed 1 s; 3 s at most).
	for _ in $(seq 1 30); do
		FORWARDED=$(($(vip_packets "$UDP_VIP") - UDP_BEFORE))
		[ "$FORWARDED" -ge "$FRAMES" ] && break
		sleep 0.1
	done
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
	wait "${downloads[@]}"
	good=0
	for p in "${PORTS[@]}"; do
		[ "$(cat "$W/dl-$p.res")" = "200 1048576" ] && [ "$(tr -d 1 <"$W/dl-$p" | wc -c)" -eq 0 ] &&
			good=$((good + 1))
	done
	if [ "$good" -eq "${#PORTS[@]}" ] && [ "$good" -gt 0 ] && [ "$held" -eq "$good" ]; then
		pass "swaps: $good of ${#PORTS[@]} TCP downloads (1 MiB each) open through all the changes completed, every byte from b1"
	else
		fail "swaps: $good of ${#PORTS[@]} TCP downloads completed intact, $held of them still open after the last change"
	fi
	if ringlb verify >/dev/null; then
		pass "swaps: verify: the kernel serves exactly the final state"
	else
		fail "swaps: verify found the kernel and the state apart"
	fi
}

# --- crashes mid-change ------------------------------------------------------------------

# The crashes work on a VIP of their own with real backends, so that real
# connections can check, after every crash, where its flows go.
CRASH_VIP="$TOPO_VIP4:8080/tcp"
OTHER_VIP="[$TOPO_VIP6]:80/tcp"
SPARE_VIP="$TOPO_VIP4:9090/udp"

crash_member() { jq -r --arg v "$CRASH_VIP" --arg n "$1" \
	'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .state' "$W/state.json"; }

# crash_facts FILE: what crash_command decides by, read from state FILE in one jq:
# GEN, SPARE (1 when the spare VIP exists), ETH9 (1 when eth9 is attached) and
# CRASH_MEMBERS ("bN STATE" for each backend of the crash VIP).
crash_facts() {
	local facts
	facts=$(jq -r --arg v "$CRASH_VIP" --arg s "$SPARE_VIP" \
		'"\(.generation) \([.vips[] | select(.vip == $s)] | length) \([.interfaces[] | select(.name == "eth9")] | length)",
		 (.vips[] | select(.vip == $v) | .backends[] | "\(.name) \(.state)")' "$1")
	read -r GEN SPARE ETH9 <<<"${facts%%$'\n'*}"
	CRASH_MEMBERS=$(tail -n +2 <<<"$facts")
}

# One mutating command of each kind in turn, with a kill point spread over
# its run time (an attach or a key change loads a program: longer), on the
# facts crash_facts read.
crash_command() {
	local n=$1 i=$(($1 % 5 + 2)) present
	present=$(awk -v b="b$i" '$1 == b { print $2 }' <<<"$CRASH_MEMBERS")
	MAXMS=40
	case $(($1 % 9)) in
	1|7) if [ -z "$present" ]; then
		CMD=(backend add "$CRASH_VIP" "b$i" "$(topo_backend_addr4 "$i")" --weight 2)
	   else
		CMD=(backend remove "$CRASH_VIP" "b$i")
	   fi ;;
	2) if [ "$present" = active ]; then CMD=(backend drain "$CRASH_VIP" "b$i")
	   else CMD=(backend weight "$CRASH_VIP" b1 $((n % 4 + 1))); fi ;;
	3|8) if [ "$SPARE" = 0 ]; then
		CMD=(vip add "$SPARE_VIP")
	   elif [ $(($1 % 9)) = 8 ] || [ $(($1 / 9 % 2)) = 0 ]; then
		# Its source ranges replaced: a new set under the other parity, then the swap.
		CMD=(vip sources "$SPARE_VIP" --allow 198.18.0.0/16 --deny "198.18.$((n % 250)).0/24")
	   else
		CMD=(vip del "$SPARE_VIP")
	   fi ;;
	4) CMD=(restore "$W/snap$((n % 3)).json"); MAXMS=60 ;;
	5) CMD=(secret set "$W/key$((n % 2))"); MAXMS=700 ;;
	6) if [ "$ETH9" = 0 ]; then
		CMD=(attach eth9 --mode generic); MAXMS=700
	   else
		CMD=(detach eth9); MAXMS=100
	   fi ;;
	*) CMD=(backend weight "$CRASH_VIP" b1 $((n % 4 + 1))) ;;
	esac
	KIND="${CMD[0]}"
	case ${CMD[0]} in backend|vip|secret) KIND="${CMD[0]} ${CMD[1]}" ;; esac
}

# listening NS PORT: a TCP socket listens on PORT in namespace NS.
listening() { [ -n "$(ip netns exec "$1" ss -Htln "sport = :$2")" ]; }

t_crashes() {
	local i k n gen victim old new broken repaired ordinary_failed unclean conns misrouted
	local want got left DROPS_BEFORE DROPPED
	local -a wants=()
	local -A KINDS=()
	ringlb vip add "$CRASH_VIP" --vnodes 256 || die "vip add $CRASH_VIP"
	ringlb vip add "$OTHER_VIP" --vnodes 256 || die "vip add $OTHER_VIP"
	for i in 1 2 3; do
		ringlb backend add "$CRASH_VIP" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
		ringlb backend add "$OTHER_VIP" "b$i" "$(topo_backend_addr6 "$i")" || die "backend b$i v6"
	done
	# The backends serve the crash VIP's port too.
	for i in 1 2 3 4 5; do
		sed -i 's/listen 80 backlog=4096;/listen 80 backlog=4096; listen 8080;/' "$W/nginx-b$i.conf"
		ip netns exec "${P}b$i" nginx -c "$W/nginx-b$i.conf" -s reload 2>/dev/null
	done
	# Until the five listen there (was a fixed 1 s; 5 s at most).
	for _ in $(seq 1 50); do
		n=0
		for i in 1 2 3 4 5; do listening "${P}b$i" 8080 && n=$((n + 1)); done
		[ $n -eq 5 ] && break
		sleep 0.1
	done
	# Three snapshots to restore, two keys to set, a spare interface to attach.
	for k in 0 1 2; do
		ringlb backend weight "$CRASH_VIP" b1 $((k + 1))
		ringlb save "$W/snap$k.json" || die "save snap$k"
	done
	for k in 0 1; do
		secret_file "$W/key$k"
	done
	ip -n "${P}lb" link add eth9 type veth peer name eth10
	ip -n "${P}lb" link set eth9 up
	ip -n "${P}lb" link set eth10 up

	old=0 new=0 broken=0 repaired=0 ordinary_failed=0 unclean=0 conns=0 misrouted=0
	DROPS_BEFORE=$(drops)
	PORT=24000
	for n in $(seq 1 "$CRASHES"); do
		cp "$W/state.json" "$W/before.json"
		crash_facts "$W/before.json"
		gen=$GEN
		crash_command "$n"
		KINDS[$KIND]=1
		nsenter --net="/run/netns/${P}lb" "$ROOT/build/ringlb" --state "$W/state.json" \
			--pin-dir "$PIN" "${CMD[@]}" >/dev/null 2>&1 &
		victim=$!
		sleep "$(awk -v r="$RANDOM" -v m="$MAXMS" 'BEGIN { printf "%.4f", r / 32768 * m / 1000 }')"
		kill -9 $victim 2>/dev/null
		wait $victim 2>/dev/null
		if cmp -s "$W/state.json" "$W/before.json"; then
			old=$((old + 1))
		elif [ "$(jq .generation "$W/state.json" 2>/dev/null)" = $((gen + 1)) ]; then
			new=$((new + 1))
		elif [ "${CMD[0]}" = secret ] && jq -e . "$W/state.json" >/dev/null 2>&1; then
			old=$((old + 1)) # a key change leaves the state file as it is
		else
			broken=$((broken + 1))
		fi
		# An ordinary change on another VIP: it must repair whatever the kill left.
		if ! ringlb backend weight "$OTHER_VIP" b1 $((n % 3 + 1)) >/dev/null 2>"$W/ordinary.err"; then
			ordinary_failed=$((ordinary_failed + 1))
			echo "after '${CMD[*]}': $(cat "$W/ordinary.err")" >>"$W/crash.log"
		fi
		grep -q "first repaired" "$W/ordinary.err" && repaired=$((repaired + 1))
		if ! ringlb verify >"$W/verify.out" 2>&1; then
			unclean=$((unclean + 1))
			echo "after '${CMD[*]}': verify: $(tr '\n' ' ' <"$W/verify.out")" >>"$W/crash.log"
		fi
		# Real connections: each reaches the backend lookup names (one of the state's),
		# asked once for the three before they open.
		mapfile -t wants < <(lookups "$CRASH_VIP" "$(topo_client_addr4 1):$PORT" \
			"$(topo_client_addr4 1):$((PORT + 1))" "$(topo_client_addr4 1):$((PORT + 2))")
		for k in 1 2 3; do
			want=${wants[$((k - 1))]:-}
			got=$(on_client 1 curl -s -m 3 --local-port "$PORT" "http://$TOPO_VIP4:8080/")
			conns=$((conns + 1))
			if [ "$want" != "$got" ]; then
				misrouted=$((misrouted + 1))
				echo "after '${CMD[*]}': port $PORT: lookup '$want', answered by '$got'" >>"$W/crash.log"
			fi
			PORT=$((PORT + 1))
		done
	done
	DROPPED=$(($(drops) - DROPS_BEFORE))
	if [ $broken -eq 0 ] && [ $ordinary_failed -eq 0 ] && [ $unclean -eq 0 ] && [ $misrouted -eq 0 ] &&
		[ "$DROPPED" -eq 0 ]; then
		pass "crashes: $CRASHES kill -9 at random points of ${#KINDS[@]} kinds of change ($(printf '%s\n' "${!KINDS[@]}" | sort | paste -sd, - | sed 's/,/, /g')): state file old $old times, new $new times, never anything else; the next ordinary change on another VIP repaired the kernel $repaired times and verify was clean after every one; $conns real connections each reached the backend lookup named, 0 frames dropped"
	else
		fail "crashes: $broken broken state files, $ordinary_failed ordinary changes failed, verify unclean $unclean times, $misrouted of $conns connections misrouted, $DROPPED frames dropped: $(head -3 "$W/crash.log" 2>/dev/null | tr '\n' ' ')"
	fi
	left=$(find "$W" -maxdepth 1 -name '*.tmp.*' | wc -l)
	ringlb backend weight "$CRASH_VIP" b1 2
	if [ "$(find "$W" -maxdepth 1 -name '*.tmp.*' | wc -l)" -eq 0 ]; then
		pass "crashes: no temp file of a killed writer remains after the next change ($left before it)"
	else
		fail "crashes: temp files of killed writers remain after a change"
	fi
	ringlb detach eth9 >/dev/null 2>&1
}

# --- snapshots restored in any order -------------------------------------------------------

t_snapshots() {
	local n i k present steps clean agreed tried saves restores adds removes want got
	local DROPS_BEFORE DROPPED
	local -a wants=()
	# 50 random steps over three snapshot slots: save into a slot, restore a slot,
	# add or remove a real backend. After each: verify clean, real connections
	# where lookup says, nothing dropped.
	declare -a SLOT=("$W/snap0.json" "$W/snap1.json" "$W/snap2.json")
	RANDOM=7
	steps=0 clean=0 agreed=0 tried=0 saves=0 restores=0 adds=0 removes=0
	DROPS_BEFORE=$(drops)
	for n in $(seq 1 50); do
		i=$((RANDOM % 4 + 2))
		present=$(crash_member "b$i")
		case $((RANDOM % 4)) in
		0) k=$((RANDOM % 3)); SLOT[$k]="$W/shuffle-$n.json"
		   ringlb save "${SLOT[$k]}" && saves=$((saves + 1)) ;;
		1) ringlb restore "${SLOT[$((RANDOM % 3))]}" && restores=$((restores + 1)) ;;
		*) if [ -z "$present" ]; then
			ringlb backend add "$CRASH_VIP" "b$i" "$(topo_backend_addr4 "$i")" && adds=$((adds + 1))
		   else
			ringlb backend remove "$CRASH_VIP" "b$i" && removes=$((removes + 1))
		   fi ;;
		esac
		steps=$((steps + 1))
		ringlb verify >"$W/verify.out" 2>&1 && clean=$((clean + 1)) ||
			echo "shuffle step $n: $(tr '\n' ' ' <"$W/verify.out")" >>"$W/shuffle.log"
		mapfile -t wants < <(lookups "$CRASH_VIP" "$(topo_client_addr4 2):$PORT" \
			"$(topo_client_addr4 2):$((PORT + 1))")
		for k in 1 2; do
			want=${wants[$((k - 1))]:-}
			got=$(on_client 2 curl -s -m 3 --local-port "$PORT" "http://$TOPO_VIP4:8080/")
			tried=$((tried + 1))
			[ "$want" = "$got" ] && agreed=$((agreed + 1)) ||
				echo "shuffle step $n: port $PORT: lookup '$want', answered by '$got'" >>"$W/shuffle.log"
			PORT=$((PORT + 1))
		done
	done
	DROPPED=$(($(drops) - DROPS_BEFORE))
	if [ $clean -eq $steps ] && [ $agreed -eq $tried ] && [ "$DROPPED" -eq 0 ]; then
		pass "snapshots: $steps random steps ($saves saves into 3 slots, $restores restores, $adds adds, $removes removes): verify clean after every one, $agreed of $tried real connections where lookup said, 0 frames dropped"
	else
		fail "snapshots: verify clean after $clean of $steps steps, $agreed of $tried connections where lookup said, $DROPPED dropped: $(head -3 "$W/shuffle.log" | tr '\n' ' ')"
	fi
}

# --- concurrent operators ------------------------------------------------------------------

t_operators() {
	local gen gen2 k added weight
	local -a ops=()
	gen=$(jq .generation "$W/state.json")
	for k in $(seq 1 8); do
		ringlb backend add "$UDP_VIP" "op$k" "198.18.0.$((200 + k))" --mac "02:00:00:00:0a:0$k" &
		ops+=($!)
	done
	wait "${ops[@]}"
	ops=()
	for k in $(seq 1 8); do
		ringlb backend weight "$UDP_VIP" op1 "$k" &
		ops+=($!)
	done
	wait "${ops[@]}"
	added=$(jq -r --arg v "$UDP_VIP" '[.vips[] | select(.vip == $v) | .backends[] | select(.name | startswith("op"))] | length' "$W/state.json")
	weight=$(jq -r --arg v "$UDP_VIP" '.vips[] | select(.vip == $v) | .backends[] | select(.name == "op1") | .weight' "$W/state.json")
	gen2=$(jq .generation "$W/state.json")
	if [ "$added" -eq 8 ] && [ $((gen2 - gen)) -eq 16 ] && [ "$weight" -ge 1 ] && [ "$weight" -le 8 ] &&
		ringlb verify >/dev/null; then
		pass "operators: 8 concurrent adds and 8 concurrent weight changes: 16 generations, 8 backends, weight $weight (one of the 8), kernel agrees"
	else
		fail "operators: $added of 8 added, $((gen2 - gen)) of 16 changes recorded, weight $weight"
	fi
}

# --- the secret --------------------------------------------------------------------------

t_secret() {
	local SECRET mode before same differ p k
	local -a eps=() a=() b=() c=()
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
	before=$(sha256sum <"$W/state.json")
	if ! ringlb backend weight "$TCP_VIP" b1 3 2>"$W/err" >/dev/null && grep -q "readable by others" "$W/err" &&
		[ "$(wc -l <"$W/err")" -eq 1 ] && [ "$before" = "$(sha256sum <"$W/state.json")" ]; then
		pass "secret: a secret others can read is refused, nothing changed: '$(cat "$W/err")'"
	else
		fail "secret: a world-readable secret was used: $(cat "$W/err")"
	fi
	chmod 600 "$W/secret"
	# Two deployments of the same configuration: same secret, same choices; other secret, other choices.
	mkdir -p "$W/twin" "$W/other"
	cp "$W/state.json" "$W/twin/state.json"
	cp "$W/state.json" "$W/other/state.json"
	install -m 600 "$W/secret" "$W/twin/secret"
	secret_file "$W/other/secret"
	same=0 differ=0
	for p in $(seq 20000 20299); do eps+=("198.18.7.7:$p"); done
	# Each deployment's answer for the 300 flows, from one lookup each.
	offline() { "$ROOT/build/ringlb" --state "$1" --pin-dir /nonexistent lookup --json "$TCP_VIP" \
		"${eps[@]}" | jq -r '.[].backend'; }
	mapfile -t a < <(offline "$W/state.json")
	mapfile -t b < <(offline "$W/twin/state.json")
	mapfile -t c < <(offline "$W/other/state.json")
	for k in $(seq 0 299); do
		[ "${a[$k]:-}" = "${b[$k]:-}" ] && same=$((same + 1))
		[ "${a[$k]:-}" != "${c[$k]:-}" ] && differ=$((differ + 1))
	done
	if [ $same -eq 300 ] && [ $differ -ge 90 ]; then
		pass "secret: of 300 flows, a host with the same secret places 300 alike; a deployment with another secret places $differ differently"
	else
		fail "secret: same secret agrees on $same of 300; another secret differs on $differ"
	fi
}

# --- privileges ------------------------------------------------------------------------------

t_privileges() {
	local refusals checked cmd how before rc
	refusals=0 checked=0
	for cmd in "attach eth0" "detach eth0" "vip add 198.18.0.101:80/tcp" "vip del $TCP_VIP" \
		"backend add $TCP_VIP bx 198.18.0.99 --mac 02:00:00:00:00:99" "backend weight $TCP_VIP b1 3" \
		"backend drain $TCP_VIP b1" "backend remove $TCP_VIP b1" "restore $W/state.json" \
		"secret set $W/secret"; do
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
}

suite_test swaps
suite_test crashes
suite_test snapshots crashes
suite_test operators
suite_test secret
suite_test privileges
suite_main "$@"
