#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Undoing a drain and a removal, with real connections, on the routed network
# of scripts/routed.sh (client - router - balancer - router - three backends
# running `ringlb decap attach`, nginx on the VIP), a pinned gue VIP over b1,
# b2 and b3. Its tests (tests/suites/lib.sh runs them; `undrain.sh TEST...`
# runs some):
#
#   undrain   30 slow downloads; b1 drains: no new connection reaches it;
#             b1 undrains: new connections reach it again, each where
#             `lookup` says, and every download completes whole, b1's among
#             them (the connections it kept while draining)
#   readd     30 slow downloads; b1 is removed (retired: a kept ring names
#             it), then added again under its name at its address: it comes
#             back as itself (the same slot and cookie in the state, the
#             same ring as before the removal in the kernel), new
#             connections reach it where `lookup` says, and every download
#             completes whole, b1's among them (held by second chance while
#             it was retired, by their pins again once it is back)
#   verify    the kernel serves the state, after both
#
# A download is "whole" when curl says 200 and the 256 KiB body is all the
# digit of the one backend that served it: a reset, or a move to another
# backend, fails it.
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root undrain

routed_session undrain rlu

VP="$ROUTED_VIP4:80/tcp"

setup() {
	local i
	ringlb attach eth0 --source "$ROUTED_LB4" >/dev/null || die "attach"
	for i in 1 2 3; do
		# The balancer and the other backends (which send hop-list packets on), as one list.
		be "$i" decap attach eth0 --from "$ROUTED_LB4/32,198.18.13.0/24,198.18.14.0/24" \
			--vip "$ROUTED_VIP4" >/dev/null || die "decap attach on b$i"
	done
	ringlb vip add "$VP" --forward gue || die "vip add"
	for i in 1 2 3; do
		ringlb backend add "$VP" "b$i" "$(routed_backend4 "$i")" || die "backend add b$i"
	done
}

# slow DIR: 30 downloads of /slow (256 KiB at 64 KiB/s) in the background, each writing
# "http_code local_port curl_exit" to DIR/K.code and its body to DIR/K; SLOW holds their pids.
slow() {
	local dir=$1 k
	mkdir -p "$dir"
	SLOW=()
	for k in $(seq 1 30); do
		client curl -s -m 30 -o "$dir/$k" -w '%{http_code} %{local_port} %{exitcode}' \
			"http://$ROUTED_VIP4/slow" >"$dir/$k.code" &
		SLOW+=($!)
	done
	downloads_started "$dir" 30 || echo "     (not every download had started)"
}

# whole DIR: "W B": how many of the 30 downloads are whole, and how many of those b1 served.
whole() {
	local dir=$1 k ok=0 on_b1=0 first
	for k in $(seq 1 30); do
		first=$(head -c 1 "$dir/$k" 2>/dev/null)
		[ "$(cut -d' ' -f1 "$dir/$k.code")" = 200 ] && [ "$(stat -c %s "$dir/$k")" -eq 262144 ] &&
			[ -n "$first" ] && [ "$(tr -d "$first" <"$dir/$k" | wc -c)" -eq 0 ] || continue
		ok=$((ok + 1))
		[ "$first" = 1 ] && on_b1=$((on_b1 + 1))
	done
	echo "$ok $on_b1"
}

# fresh WHAT N B1: N new connections; each must reach the backend `lookup` says a new
# connection on its tuple goes to, and b1 none of them (B1=none) or some (B1=some).
fresh() {
	local what=$1 n=$2 b1=$3 out=$W/fresh name port want agree=0 to_b1
	local -a eps=()
	client curl -s -m 5 -H 'Connection: close' -w '%{local_port}\n' "http://$ROUTED_VIP4/[1-$n]" |
		paste -d' ' - - >"$out"
	while read -r name port; do eps+=("$ROUTED_CLIENT4:$port"); done <"$out"
	lookups_json "$VP" "${eps[@]}" | jq -r '.new_connection // .backend' >"$out.lookup"
	while read -r name port <&3; do
		read -r want <&4 || want=
		[ "$want" = "$name" ] && agree=$((agree + 1))
	done 3<"$out" 4<"$out.lookup"
	to_b1=$(grep -c '^b1 ' "$out")
	if [ "$agree" -eq "$n" ] && { { [ "$b1" = none ] && [ "$to_b1" -eq 0 ]; } ||
		{ [ "$b1" = some ] && [ "$to_b1" -gt 0 ]; }; }; then
		pass "$what: $to_b1 of $n new connections reached b1, $n where lookup says"
	else
		fail "$what: $to_b1 of $n new connections reached b1 (want $b1), $agree where lookup says"
	fi
}

# identity NAME: the backend's slot and cookie in the state file.
identity() {
	jq -r --arg b "$1" '.vips[0].backends[] | select(.name == $b) | "\(.id) \(.cookie)"' \
		"$W/state.json"
}

t_undrain() {
	local ok on_b1
	slow "$W/u"
	ringlb backend drain "$VP" b1 || fail "drain b1"
	fresh "undrain: b1 draining" 30 none
	ringlb backend undrain "$VP" b1 || fail "undrain b1"
	fresh "undrain: b1 $(backend_field "$VP" b1 state) again" 60 some
	wait "${SLOW[@]}" 2>/dev/null
	read -r ok on_b1 < <(whole "$W/u")
	[ "$ok" -eq 30 ] && [ "$on_b1" -gt 0 ] &&
		pass "undrain: 30 of 30 downloads whole through the drain and the undrain, $on_b1 of them from b1" ||
		fail "undrain: $ok of 30 downloads whole ($on_b1 from b1)"
}

t_readd() {
	local before_id before_ring ok on_b1 second0 second
	before_id=$(identity b1)
	before_ring=$(vip_digest "$VP")
	second0=$(( $(be 1 decap stats --json | jq .decap_second_chance.packets) ))
	slow "$W/r"
	ringlb backend remove "$VP" b1 || fail "remove b1"
	[ "$(backend_field "$VP" b1 state)" = retired ] && pass "readd: b1 removed, retired" ||
		fail "readd: b1 removed, $(backend_field "$VP" b1 state), not retired"
	fresh "readd: b1 retired" 30 none
	# Long enough for each of b1's downloads to send packets while it is retired.
	sleep 1
	ringlb backend add "$VP" b1 "$(routed_backend4 1)" 2>"$W/err" || fail "add b1 again: $(cat "$W/err")"
	[ "$(identity b1)" = "$before_id" ] && [ "$(vip_digest "$VP")" = "$before_ring" ] &&
		[ "$(backend_field "$VP" b1 state)" = active ] &&
		pass "readd: b1 added again at its address came back as itself: slot and cookie '$before_id', the kernel's ring $before_ring as before the removal" ||
		fail "readd: b1 added again: slot and cookie '$(identity b1)' (was '$before_id'), ring $(vip_digest "$VP") (was $before_ring), $(backend_field "$VP" b1 state)"
	fresh "readd: b1 back" 60 some
	wait "${SLOW[@]}" 2>/dev/null
	second=$(( $(be 1 decap stats --json | jq .decap_second_chance.packets) - second0 ))
	read -r ok on_b1 < <(whole "$W/r")
	[ "$ok" -eq 30 ] && [ "$on_b1" -gt 0 ] && [ "$second" -gt 0 ] &&
		pass "readd: 30 of 30 downloads whole through the removal and the add, $on_b1 of them from b1 ($second packets b1 took by second chance while retired)" ||
		fail "readd: $ok of 30 downloads whole ($on_b1 from b1; $second packets b1 took by second chance)"
}

t_verify() {
	ringlb verify >"$W/verify" 2>&1 && pass "verify: $(head -1 "$W/verify")" ||
		fail "verify: $(cat "$W/verify")"
}

suite_test undrain
suite_test readd
suite_test verify
suite_main "$@"
