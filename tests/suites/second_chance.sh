#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Second chance end to end, with real connections, on the routed network of
# scripts/routed.sh (client - router - balancer - router - three backends
# running `ringlb decap attach`, nginx on the VIPs). Its tests
# (tests/suites/lib.sh runs them; `second_chance.sh TEST...` runs some), on a
# pinned and a stateless gue VIP with backends b1 and b2 set up first:
#
#   refused      vip add --flows stateless on an ipip VIP is refused in one line
#   lost         200 slow downloads from a pinned gue VIP; a backend is
#                added, then the balancer starts over with new maps (an
#                empty flow table): every download completes whole, the
#                ones whose owner changed held by their old backend through
#                the hop list the balancer now puts on their packets
#   stateless    300 slow downloads from a stateless gue VIP (no flow-table
#                entry at all) through an add, a drain, a remove and a
#                weight change a few seconds apart: every download whole;
#                then new connections go where lookup says, and the drained
#                backend says, from its socket table, when it has no
#                connection left (`ringlb decap drained`)
#   flood        (after lost) 100 slow downloads from the pinned VIP through
#                a drain and an add while spoofed SYNs flood it: past the rate of new
#                flows nothing is pinned, so no pin is evicted, and what is
#                not pinned carries its hop list
#   pmtu         30 slow downloads from a stateless gue IPv6 VIP, each from a
#                client address of its own (a backend learns a path MTU per
#                address: no other connection can teach it for a moved one);
#                a backend is added (some connections move: their packets
#                carry hop lists), then the client's router lowers its link's
#                MTU to 1280: the packet-too-big it sends the VIP about a
#                moved connection gets the hop list, b3 sends it on, the old
#                owner takes it, lowers its segments, and every download
#                completes whole
#   verify       the kernel serves the state, after all of the above
#
# The hop lists themselves, and `lookup`'s agreement with them on 2,000
# random flows, are tests/prog/hops.c's.
#
# A download is "whole" when curl says 200 and the 256 KiB body is all the
# digit of the one backend that served it: a reset, or a move to another
# backend, fails it.
#
# DEBUG=1 also prints, for stateless downloads that were not whole, where
# `lookup` puts their flows now, and every backend's decap counters.
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root second_chance

routed_session second_chance rsc

VP="$ROUTED_VIP4:80/tcp"    # pinned (the default)
VS="$ROUTED_VIP4B:80/tcp"   # stateless
# A low rate of new flows a CPU pins per second, so the flood below goes unpinned.
attach() {
	ringlb attach eth0 --source "$ROUTED_LB4" --source "$ROUTED_LB6" --new-flow-rate 1000 \
		>/dev/null
}

# downloads DIR N VIP_ADDR RATE: N slow downloads in the background, each
# recording "http_code local_port curl_exit_status" in DIR/K.code and its
# body in DIR/K; DOWNLOADS holds their pids.
downloads() {
	local dir=$1 n=$2 addr=$3 rate=$4 k
	mkdir -p "$dir"
	DOWNLOADS=()
	for k in $(seq 1 "$n"); do
		client curl -s -m 90 --limit-rate "$rate" -o "$dir/$k" \
			-w '%{http_code} %{local_port} %{exitcode}' "http://$addr/slow" >"$dir/$k.code" &
		DOWNLOADS+=($!)
	done
}

# whole DIR N: how many of N downloads completed, 256 KiB of one backend's digit.
whole() {
	local dir=$1 n=$2 k ok=0
	for k in $(seq 1 "$n"); do
		[ "$(cut -d' ' -f1 "$dir/$k.code")" = 200 ] &&
			[ "$(stat -c %s "$dir/$k")" -eq 262144 ] &&
			[ "$(head -c 1 "$dir/$k" | tr -d 1-3 | wc -c)" -eq 0 ] &&
			[ "$(tr -d "$(head -c 1 "$dir/$k")" <"$dir/$k" | wc -c)" -eq 0 ] &&
			ok=$((ok + 1))
	done
	echo $ok
}

# not_whole DIR N VIP: the downloads of DIR that are not whole (5 at most): HTTP
# code, client port, curl's exit status, bytes and whose they are, and where the
# balancer sends the flow now; then every backend's decap counters and the
# balancer's counters by reason.
not_whole() {
	local dir=$1 n=$2 vip=$3 k code port rc size first i
	for k in $(seq 1 "$n"); do
		read -r code port rc <"$dir/$k.code"
		size=$(stat -c %s "$dir/$k" 2>/dev/null || echo 0)
		first=$(head -c 1 "$dir/$k" 2>/dev/null)
		[ "$code" = 200 ] && [ "$size" -eq 262144 ] &&
			[ "$(tr -d "$first" <"$dir/$k" | wc -c)" -eq 0 ] && continue
		echo "     not whole: HTTP $code, port $port, curl exit $rc, $size bytes from b$first; now $(ringlb lookup --json "$vip" "$ROUTED_CLIENT4:$port" 2>&1 | jq -c '{backend, via, hops}' 2>/dev/null)"
	done | head -5
	for i in 1 2 3; do
		echo "     b$i decap: $(be "$i" decap stats --json | jq -c 'with_entries(select(.value.packets > 0)) | map_values(.packets)')"
	done
	echo "     balancer: $(ringlb stats --json | jq -c '.reasons | with_entries(select(.value.packets > 0)) | map_values(.packets)')"
}

decap_count() { be "$1" decap stats --json | jq ".$2.packets"; }

# client_ports DIR N: the client endpoint of each of N downloads, a line each.
client_ports() {
	local dir=$1 n=$2 k code port
	for k in $(seq 1 "$n"); do
		read -r code port _ <"$dir/$k.code"
		echo "$ROUTED_CLIENT4:${port:-0}"
	done
}

setup() {
	local i spec
	attach || die "attach"
	for i in 1 2 3; do
		mkdir -p "$W/b$i"
		# The balancer, and the other backends: they send hop-list packets on.
		be "$i" decap attach eth0 --from "$ROUTED_LB4/32" --from "$ROUTED_LB6/128" \
			--from 198.18.13.0/24 --from 198.18.14.0/24 \
			--vip "$ROUTED_VIP4" --vip "$ROUTED_VIP4B" --vip "$ROUTED_VIP6B" >/dev/null ||
			die "decap attach on b$i"
	done
	ringlb vip add "$VP" --forward gue && ringlb vip add "$VS" --forward gue --flows stateless ||
		die "vip add"
	for spec in "$VP" "$VS"; do
		ringlb backend add "$spec" b1 "$(routed_backend4 1)" &&
			ringlb backend add "$spec" b2 "$(routed_backend4 2)" || die "backend add $spec"
	done
}

t_refused() {
	local refused
	refused=$(ringlb vip add "$ROUTED_VIP4:81/tcp" --forward ipip --flows stateless 2>&1)
	[ $? -ne 0 ] && [ "$(echo "$refused" | wc -l)" -eq 1 ] && ! ringlb show | grep -q ":81/" &&
		pass "vip add --flows stateless on an ipip VIP: refused in one line, '$refused'" ||
		fail "vip add --flows stateless on an ipip VIP: '$refused'"
}

# --- table lost -----------------------------------------------------------------------------
t_lost() {
	local saved0 saved moved=0 ok k want
	local -a eps=() owners=()
	saved0=$(( $(decap_count 1 decap_second_chance) + $(decap_count 2 decap_second_chance) ))
	downloads "$W/lost" 200 "$ROUTED_VIP4" 24k
	downloads_started "$W/lost" 200 || echo "     (not every download had started)"
	ringlb backend add "$VP" b3 "$(routed_backend4 3)" >/dev/null || fail "add b3"
	sleep 1
	ringlb detach eth0 >/dev/null || fail "detach"
	rm -rf "$PIN"
	attach || fail "attach with new maps"
	wait "${DOWNLOADS[@]}" 2>/dev/null
	# Where lookup puts each download's flow now, asked once for the 200.
	mapfile -t eps < <(client_ports "$W/lost" 200)
	mapfile -t owners < <(lookups_json "$VP" "${eps[@]}" | jq -r .backend)
	for k in $(seq 1 200); do
		want=${owners[$((k - 1))]:-}
		[ "$want" != "b$(head -c 1 "$W/lost/$k")" ] && moved=$((moved + 1))
	done
	saved=$(( $(decap_count 1 decap_second_chance) + $(decap_count 2 decap_second_chance) - saved0 ))
	ok=$(whole "$W/lost" 200)
	if [ "$ok" -eq 200 ] && [ "$moved" -gt 0 ] && [ "$saved" -gt 0 ]; then
		pass "table lost: 200 of 200 downloads whole after an add and a fresh attach with new maps; $moved of them now owned by another backend, held by their old one ($saved packets taken by second chance)"
	else
		fail "table lost: $ok of 200 downloads whole; $moved moved; $saved packets taken by second chance"
		not_whole "$W/lost" 200 "$VP"
	fi
	ringlb verify >/dev/null 2>&1 && pass "table lost: verify clean after the fresh attach" ||
		fail "table lost: verify: $(ringlb verify 2>&1)"
}

# --- stateless --------------------------------------------------------------------------------
t_stateless() {
	local saved0=0 saved=0 i k t ok on_b1=0 code port drained_early drained_early_rc retired
	local before again rc1 weigh rc2 drained drained_rc agree=0 name want
	local -a eps=()
	for i in 1 2 3; do saved0=$((saved0 + $(decap_count "$i" decap_second_chance))); done
	downloads "$W/sl" 300 "$ROUTED_VIP4B" 16k
	downloads_started "$W/sl" 300 || echo "     (not every download had started)"
	ringlb backend add "$VS" b3 "$(routed_backend4 3)" >/dev/null || fail "stateless: add b3"
	sleep 3
	ringlb backend drain "$VS" b1 >/dev/null || fail "stateless: drain b1"
	sleep 3
	drained_early=$(be 1 decap drained "$VS" 2>&1)
	drained_early_rc=$?
	ringlb backend remove "$VS" b1 >/dev/null || fail "stateless: remove b1"
	sleep 3
	ringlb backend weight "$VS" b2 3 >/dev/null || fail "stateless: weight b2"
	retired=$(ringlb show --json | jq -r --arg v "$VS" '.vips[] | select(.vip == $v) | .backends[] | select(.name == "b1") | .state')
	wait "${DOWNLOADS[@]}" 2>/dev/null
	for i in 1 2 3; do saved=$((saved + $(decap_count "$i" decap_second_chance))); done
	saved=$((saved - saved0))
	ok=$(whole "$W/sl" 300)
	for k in $(seq 1 300); do
		[ "$(head -c 1 "$W/sl/$k")" = 1 ] && on_b1=$((on_b1 + 1))
	done
	if [ "$ok" -eq 300 ] && [ "$saved" -gt 0 ]; then
		pass "stateless: 300 of 300 downloads whole through add b3, drain b1, remove b1, weight b2 3, 3 s apart ($on_b1 of them from b1; $saved packets taken by second chance)"
	else
		fail "stateless: $ok of 300 downloads whole ($on_b1 from b1); $saved packets taken by second chance"
		not_whole "$W/sl" 300 "$VS"
		if [ -n "${DEBUG:-}" ]; then
			for k in $(seq 1 300); do
				read -r code port _ <"$W/sl/$k.code"
				[ "$(stat -c %s "$W/sl/$k")" -ne 262144 ] &&
					echo "     $port: $(ringlb lookup "$VS" "$ROUTED_CLIENT4:$port" | tr '\n' ' ')"
			done | head -5
			for k in $(seq 1 300); do
				read -r code port _ <"$W/sl/$k.code"
				[ "$(stat -c %s "$W/sl/$k")" -eq 262144 ] && [ "$(head -c 1 "$W/sl/$k")" = 1 ] &&
					echo "     ok $port: $(ringlb lookup "$VS" "$ROUTED_CLIENT4:$port" | tr '\n' ' ')"
			done | head -5
			for i in 1 2 3; do be "$i" decap stats --json | jq -c 'with_entries(select(.value.packets>0))'; done
			ringlb show --json | jq -c '.vips[1]'
		fi
	fi
	[ "$retired" = retired ] && pass "stateless: removed b1 stays retired (a hop only) while previous rings name it" ||
		fail "stateless: removed b1 is '$retired', not retired"
	before=$(ringlb show --json)
	# At its own address it would come back as itself (undrain.sh); at another, it is refused.
	again=$(ringlb backend add "$VS" b1 "$(routed_backend4 2)" 2>&1)
	rc1=$?
	weigh=$(ringlb backend weight "$VS" b1 2 2>&1)
	rc2=$?
	if [ $rc1 -ne 0 ] && [ $rc2 -ne 0 ] && [ "$(printf '%s\n%s\n' "$again" "$weigh" | wc -l)" -eq 2 ] &&
		[[ $again == *"add it again at $(routed_backend4 1)"* ]] &&
		[ "$(ringlb show --json)" = "$before" ]; then
		pass "stateless: retired b1 cannot be added again at another address or weighed, one line each: '$again'; '$weigh'"
	else
		fail "stateless: retired b1: add at another address ($rc1) '$again', weight ($rc2) '$weigh'"
	fi
	# As an operator would: ask until it says drained (the last FINs may still be on the way).
	for t in $(seq 1 20); do
		drained=$(be 1 decap drained "$VS" 2>&1)
		drained_rc=$?
		[ $drained_rc -eq 0 ] && break
		sleep 0.5
	done
	if [ $drained_early_rc -ne 0 ] && [ $drained_rc -eq 0 ]; then
		pass "stateless: b1's socket table told when its drain finished: during, '$drained_early'; after the downloads (asked $t times, 0.5 s apart), '$drained'"
	else
		fail "stateless: decap drained on b1: during ($drained_early_rc) '$drained_early', after ($drained_rc) '$drained'"
	fi
	client curl -s -m 10 -H 'Connection: close' -w '%{local_port}\n' "http://$ROUTED_VIP4B/[1-30]" |
		paste -d" " - - >"$W/new"
	# Where lookup says a new connection on each tuple goes, asked once for the 30.
	while read -r name port; do eps+=("$ROUTED_CLIENT4:$port"); done <"$W/new"
	lookups_json "$VS" "${eps[@]}" | jq -r '.new_connection' >"$W/new.lookup"
	while read -r name port <&3 && read -r want <&4; do
		[ "$want" = "$name" ] && agree=$((agree + 1))
	done 3<"$W/new" 4<"$W/new.lookup"
	[ "$agree" -eq 30 ] && ! grep -q "^b1 " "$W/new" &&
		pass "stateless: 30 of 30 new connections where lookup says (none to b1), $(ringlb stats --json | jq --arg v "$VS" '[.vips[] | select(.vip == $v) | .backends[].live_flows] | add') flow-table entries" ||
		fail "stateless: $agree of 30 new connections where lookup says: $(cut -d' ' -f1 "$W/new" | sort | uniq -c | tr '\n' ' ')"
}

# --- flood -----------------------------------------------------------------------------------
# 100 slow downloads from the pinned VIP; spoofed SYNs from random sources as fast as trafgen
# sends them; meanwhile b2 drains and a backend is added (b3's host under another name: b3
# itself stays retired while previous rings name it). Past the rate the balancer pins nothing,
# so the flood evicts no pin, and what is not pinned carries its hop list.
t_flood() {
	local unpinned0 unpinned flood ok k
	ringlb backend remove "$VP" b3 >/dev/null || fail "flood: remove b3"
	sleep 1
	downloads "$W/flood" 100 "$ROUTED_VIP4" 32k
	downloads_started "$W/flood" 100 || echo "     (not every download had started)"
	unpinned0=$(ringlb stats --json | jq .new_flows_unpinned)
	syn_flood "$ROUTED_VIP4" 6 &
	flood=$!
	sleep 1
	ringlb backend drain "$VP" b2 >/dev/null || fail "flood: drain b2"
	sleep 1
	ringlb backend add "$VP" b3b "$(routed_backend4 3)" >/dev/null || fail "flood: add b3b"
	wait $flood
	wait "${DOWNLOADS[@]}" 2>/dev/null
	unpinned=$(( $(ringlb stats --json | jq .new_flows_unpinned) - unpinned0 ))
	ok=$(whole "$W/flood" 100)
	[ "$ok" -eq 100 ] && [ "$unpinned" -gt 0 ] &&
		pass "flood: 100 of 100 downloads whole through a drain and an add under a flood of spoofed SYNs ($unpinned new flows not pinned)" ||
		{
		fail "flood: $ok of 100 downloads whole; $unpinned new flows not pinned"
		not_whole "$W/flood" 100 "$VP"
		}
}

# --- path MTU ---------------------------------------------------------------------------------
# snmp6 I FIELD: a counter of backend I's /proc/net/snmp6.
snmp6() { ip netns exec "${P}b$1" awk -v f="$2" '$1 == f { print $2 }' /proc/net/snmp6; }

t_pmtu() {
	local v6="[$ROUTED_VIP6B]:80/tcp" i k ok ptb0=0 ptb=0 fwd0 fwd
	ringlb vip add "$v6" --forward gue --flows stateless >/dev/null &&
		ringlb backend add "$v6" b1 "$(routed_backend4 1)" >/dev/null &&
		ringlb backend add "$v6" b2 "$(routed_backend4 2)" >/dev/null || { fail "pmtu: set-up"; return; }
	for i in 1 2; do ptb0=$((ptb0 + $(snmp6 "$i" Icmp6InPktTooBigs))); done
	fwd0=$(decap_count 3 forward_next_hop)
	mkdir -p "$W/pmtu"
	DOWNLOADS=()
	for k in $(seq 1 30); do
		ip -n "${P}c1" -6 addr add "2001:db8:10::1:$k/64" dev eth0 nodad
		client curl -s -m 60 --interface "2001:db8:10::1:$k" -o "$W/pmtu/$k" \
			-w '%{http_code} %{local_port} %{exitcode}' "http://[$ROUTED_VIP6B]/slow" \
			>"$W/pmtu/$k.code" &
		DOWNLOADS+=($!)
	done
	downloads_started "$W/pmtu" 30 || echo "     (not every download had started)"
	ringlb backend add "$v6" b3 "$(routed_backend4 3)" >/dev/null || fail "pmtu: add b3"
	sleep 0.5
	# The path back to the client narrows: r1 answers the backends' full-size packets with a
	# packet-too-big to the VIP, which the balancer sends to the flow's owner under the new ring.
	ip -n "${P}r1" link set eth0 mtu 1280
	wait "${DOWNLOADS[@]}" 2>/dev/null
	ip -n "${P}r1" link set eth0 mtu 1500
	for i in 1 2; do ptb=$((ptb + $(snmp6 "$i" Icmp6InPktTooBigs))); done
	ptb=$((ptb - ptb0))
	fwd=$(( $(decap_count 3 forward_next_hop) - fwd0 ))
	ok=$(whole "$W/pmtu" 30)
	if [ "$ok" -eq 30 ] && [ "$ptb" -gt 0 ] && [ "$fwd" -gt 0 ]; then
		pass "pmtu: 30 of 30 downloads whole through add b3 and the client link's MTU down to 1280; b3 sent $fwd frames on (the moved connections' packet-too-bigs among them), b1 and b2 took $ptb packet-too-bigs"
	else
		fail "pmtu: $ok of 30 downloads whole; b3 sent $fwd frames on; b1 and b2 took $ptb packet-too-bigs"
		not_whole "$W/pmtu" 30 "$v6"
	fi
}

t_verify() {
	local verify
	verify=$(ringlb verify 2>&1) && pass "verify: $verify" || fail "verify: $verify"
}

suite_test refused
suite_test lost
suite_test stateless
suite_test flood lost
suite_test pmtu
suite_test verify
suite_main "$@"
