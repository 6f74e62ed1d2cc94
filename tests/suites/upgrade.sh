#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Upgrade in place, with real connections: the topology of scripts/topology.sh
# (client 1, the balancer, b1 and b2 answering on the VIP by direct server
# return), an l2 IPv4 VIP over b1 and b2, served first by an older build of
# ringlb (this tree built again as version 0.0.1-old with one constant more
# in the contract's decap section: another program object and contract, the
# same maps' layout). Its tests (`upgrade.sh TEST...` runs some):
#
#   before   the old build attached: verify exits 1 naming both builds and
#            `ringlb upgrade`, show's host line says the build is not this
#            binary's, attach refuses in one line naming `ringlb upgrade`
#   swap     12 downloads held open and new connections every 50 ms while
#            `ringlb upgrade` swaps the program: every download completes
#            whole, every new connection is answered, no frame dropped, the
#            flow table keeps every pinned flow (same count, same backends),
#            verify exits 0 and show names this build
#   again    upgrade on this build: says so, exit 0, nothing swapped
#   earlier  (after layout) a build of the other layout whose bpf/layouts names
#            this layout as the same maps upgrades over it; this binary,
#            whose list does not name the other, refuses to come back
#   layout   a build of this tree with another contract (one constant more in
#            bpf/lb_contract.h, before the decap program's section: another
#            layout of the maps) refuses to
#            upgrade, in one line naming the safe procedure; the kernel
#            keeps running this build
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root upgrade

topo_session upgrade rlbup
VIP="$TOPO_VIP4:80/tcp"
DOWNLOADS=12
OLD=0.0.1-old

# with BINARY ARGS: ringlb ARGS as BINARY, on this session's state and pins.
with() {
	local bin=$1
	shift
	nsenter --net="/run/netns/$RINGLB_NS" "$bin" --state "$W/state.json" --pin-dir "$PIN" "$@"
}

# copy DIR: this tree, without its builds, in DIR. Other suites run beside this one:
# a file made or removed in the tree meanwhile (a tool's scratch file) makes tar say
# "file changed as we read it" or "File removed before we read it" and exit 1, which
# is not a failed copy (its line stays in the log, naming the file); 2 is.
copy() {
	local made took
	mkdir -p "$1"
	tar -c -C "$ROOT" --exclude=./build --exclude=./.git . |
		tar -x -C "$1"
	made=${PIPESTATUS[0]} took=${PIPESTATUS[1]}
	[ "$made" -le 1 ] && [ "$took" -eq 0 ] && [ -f "$1/bpf/lb_contract.h" ] ||
		die "copying the tree (tar exited $made, then $took)"
}

# builds: the old build (a copy of this tree as another version, with one constant more
# in the contract's decap section, which no balancer map is made of: the same layout)
# and the other layout's (a copy with one constant more before that section), both
# made by this Makefile.
builds() {
	local log=$W/builds.log
	local now other
	copy "$W/old-src"
	copy "$W/src"
	sed -i 's|^#endif /\* RINGLB_LB_CONTRACT_H \*/|#define LB_UPGRADE_TEST_DECAP 1\n&|' \
		"$W/old-src/bpf/lb_contract.h"
	sed -i 's|^/\* --- the backend-side decap program|/* upgrade.sh: another layout. */\n#define LB_UPGRADE_TEST_LAYOUT 1\n\n&|' \
		"$W/src/bpf/lb_contract.h"
	grep -q LB_UPGRADE_TEST_DECAP "$W/old-src/bpf/lb_contract.h" || die "the old build's contract"
	grep -q LB_UPGRADE_TEST_LAYOUT "$W/src/bpf/lb_contract.h" || die "the other layout's contract"
	# Their own makes, not the one running this suite (its jobs, -k, variables).
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$W/old-src" --no-print-directory \
		OUTPUT="$W/old" BUILD_VERSION="$OLD" "$W/old/ringlb" >"$log" 2>&1 &
	local old=$!
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$W/src" --no-print-directory \
		OUTPUT="$W/src/build" BUILD_VERSION=0.0.2-layout "$W/src/build/ringlb" >>"$log" 2>&1 ||
		die "the other layout's build: $(tail -5 "$log")"
	# The other layout again, its bpf/layouts naming this one as the same maps.
	now=$(sed -n 's/^#define LB_LAYOUT_DIGEST 0x\([0-9a-f]\{16\}\)ull$/\1/p' "$ROOT/build/layout.h")
	other=$(sed -n 's/^#define LB_LAYOUT_DIGEST 0x\([0-9a-f]\{16\}\)ull$/\1/p' "$W/src/build/layout.h")
	[ -n "$now" ] && [ -n "$other" ] && [ "$now" != "$other" ] ||
		die "the layouts: this one '$now', the other '$other'"
	copy "$W/earlier-src"
	cp "$W/src/bpf/lb_contract.h" "$W/earlier-src/bpf/lb_contract.h"
	echo "$now $other" >>"$W/earlier-src/bpf/layouts"
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$W/earlier-src" --no-print-directory \
		OUTPUT="$W/earlier" BUILD_VERSION=0.0.3-earlier "$W/earlier/ringlb" >>"$log" 2>&1 ||
		die "the build that names this layout as an earlier one: $(tail -5 "$log")"
	wait "$old" || die "the old build: $(tail -5 "$log")"
	cmp -s "$W/old/layout.h" "$ROOT/build/layout.h" || die "the old build has another layout"
	grep -q "0x${now}ull" "$W/earlier/layout.h" || die "the earlier layout not listed: $(cat "$W/earlier/layout.h")"
}

setup() {
	local i
	builds
	topo_up "$P" "$W" 2 || die "topology"
	with "$W/old/ringlb" attach eth0 >/dev/null || die "attach, old build"
	with "$W/old/ringlb" vip add "$VIP" >/dev/null || die "vip add"
	for i in 1 2; do
		with "$W/old/ringlb" backend add "$VIP" "b$i" "$(topo_backend_addr4 "$i")" >/dev/null ||
			die "backend b$i"
	done
}

t_before() {
	local out rc
	out=$(ringlb verify 2>&1)
	rc=$?
	[ $rc = 1 ] && grep -q "interface eth0: the kernel runs build $OLD, program [0-9a-f]\{16\}, this binary's is $(cat "$ROOT/VERSION"), program [0-9a-f]\{16\} (ringlb upgrade eth0)" <<<"$out" &&
		pass "verify, old build: exit 1, '$out'" || fail "verify, old build: exit $rc, '$out'"
	out=$(ringlb show | head -1)
	[[ $out == *"eth0 (native, build $OLD, program "*", not this binary's: ringlb upgrade)"* ]] &&
		pass "show: '$out'" || fail "show: '$out'"
	out=$(ringlb attach eth0 2>&1)
	rc=$?
	[ $rc != 0 ] && [ "$(wc -l <<<"$out")" = 1 ] && [[ $out == *"running build $OLD"*"ringlb upgrade eth0 swaps it in place"* ]] &&
		pass "attach, old build attached: exit $rc, '$out'" || fail "attach: exit $rc, '$out'"
}

# syn_retransmits: how many SYNs client 1 has sent again (its TCP's counter).
syn_retransmits() { on_client 1 nstat -asz TcpExtTCPSynRetrans | awk '$1 == "TcpExtTCPSynRetrans" { print $2 }'; }

# flows_by_backend: the pinned flows as "client backend" lines, sorted.
flows_by_backend() { ringlb flows "$VIP" --json | jq -r '.flows[] | "\(.client) \(.backend)"' | sort; }

t_swap() {
	local k t before after drops0 drops1 syn0 syn1 out rc whole=0 asked=0 answered=0 pids=()
	mkdir -p "$W/swap"
	for k in $(seq 1 "$DOWNLOADS"); do
		(on_client 1 curl -s -m 20 --local-port $((43000 + k)) -r 0-49151 -o "$W/swap/$k" \
			-w '%{http_code}' "$(url "$TOPO_VIP4")/slow" >"$W/swap/$k.code"
		 echo " $?" >>"$W/swap/$k.code") &
		pids+=($!)
	done
	for t in $(seq 1 100); do
		[ "$(ringlb flows "$VIP" --json | jq .count)" -ge "$DOWNLOADS" ] && break
		sleep 0.05
	done
	[ "$(ringlb flows "$VIP" --json | jq .count)" -ge "$DOWNLOADS" ] ||
		fail "the $DOWNLOADS downloads were not all pinned before the upgrade"
	# New connections all along: one every 50 ms for 2 s, each answered or not
	# (a line each: status, seconds to connect, in all, curl's exit). A frame
	# the swap lost would show as a SYN sent again; curl's generous limit is
	# for a machine so busy that curl itself waits its turn for seconds.
	syn0=$(syn_retransmits)
	[[ $syn0 =~ ^[0-9]+$ ]] || fail "client 1's count of SYNs sent again unread: '$syn0'"
	(for k in $(seq 1 40); do
		on_client 1 curl -s -m 10 -o /dev/null -w '%{http_code} %{time_connect} %{time_total}' "$(url "$TOPO_VIP4")/"
		echo " $?"
		sleep 0.05
	 done) >"$W/swap/new" &
	local steady=$!
	sleep 0.5
	before=$(flows_by_backend)
	drops0=$(drops)
	out=$(ringlb upgrade 2>&1)
	rc=$?
	after=$(flows_by_backend)
	[ $rc = 0 ] && [[ $out == "eth0: upgraded from build $OLD, program "*" to $(cat "$ROOT/VERSION"), program "* ]] &&
		pass "upgrade: '$out'" || fail "upgrade: exit $rc, '$out'"
	# Each pinned flow still there, on its backend (new ones may have joined).
	[ -n "$before" ] && [ "$(comm -23 <(echo "$before") <(echo "$after") | wc -l)" = 0 ] &&
		pass "the $(wc -l <<<"$before") pinned flows kept, each on its backend" ||
		fail "flows lost: $(comm -23 <(echo "$before") <(echo "$after") | head -3)"
	wait "${pids[@]}" "$steady"
	for k in $(seq 1 "$DOWNLOADS"); do
		[ "$(cat "$W/swap/$k.code")" = "206 0" ] && [ "$(stat -c %s "$W/swap/$k")" = 49152 ] &&
			whole=$((whole + 1))
	done
	asked=$(wc -l <"$W/swap/new")
	answered=$(grep -c '^200 .* 0$' "$W/swap/new")
	drops1=$(drops)
	syn1=$(syn_retransmits)
	[[ $syn1 =~ ^[0-9]+$ ]] || syn1="unread ('$syn1')"
	[ "$whole" = "$DOWNLOADS" ] && [ "$asked" = 40 ] && [ "$answered" = 40 ] &&
		[ "$drops1" = "$drops0" ] && [ "$syn1" = "$syn0" ] &&
		pass "under load: $whole of $DOWNLOADS downloads whole, $answered of 40 new connections answered (the slowest in $(sort -k3 -n "$W/swap/new" | tail -1 | cut -d' ' -f3) s, no SYN sent again), $((drops1 - drops0)) frames dropped" ||
		fail "under load: $whole of $DOWNLOADS whole, $answered of $asked answered, drops $drops0 -> $drops1;" \
			"SYNs sent again: $syn0 -> $syn1; not answered (status, connect s, total s, curl's exit):" \
			"$(grep -v '^200 .* 0$' "$W/swap/new" | head -3 | paste -sd ';')"
	out=$(ringlb verify 2>&1)
	rc=$?
	[ $rc = 0 ] && pass "verify: '$out'" || fail "verify after the upgrade: exit $rc, '$out'"
	out=$(ringlb show | head -1)
	[[ $out == *"eth0 (native, build $(cat "$ROOT/VERSION"), program "*")"* && $out != *"not this"* ]] &&
		pass "show: '$out'" || fail "show: '$out'"
}

t_again() {
	local out rc
	out=$(ringlb upgrade eth0 2>&1)
	rc=$?
	[ $rc = 0 ] && [[ $out == "eth0: runs this binary's build already, $(cat "$ROOT/VERSION"), program "* ]] &&
		pass "upgrade again: '$out'" || fail "upgrade again: exit $rc, '$out'"
}

t_layout() {
	local out rc show0 show1
	show0=$(ringlb show --json | jq -r '.host.interfaces[0].build_digest')
	out=$(with "$W/src/build/ringlb" upgrade eth0 2>&1)
	rc=$?
	show1=$(ringlb show --json | jq -r '.host.interfaces[0].build_digest')
	[ $rc != 0 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
		[[ $out == *"made for another layout of the maps"*"ringlb detach"*"ringlb attach again" ]] &&
		[ "$show0" = "$show1" ] && ringlb verify >/dev/null &&
		pass "another layout refused: exit $rc, '$out'; the kernel still runs $show1" ||
		fail "another layout: exit $rc, '$out', program $show0 -> $show1"
}

# earlier: a build of another layout whose bpf/layouts names this one as the same maps
# (an "EARLIER NOW" line) upgrades over it; this binary, whose list does not name
# that layout, then refuses to come back.
t_earlier() {
	local out rc
	out=$(with "$W/earlier/ringlb" upgrade eth0 2>&1)
	rc=$?
	[ $rc = 0 ] && [[ $out == "eth0: upgraded from build $(cat "$ROOT/VERSION"), program "*" to 0.0.3-earlier, program "* ]] &&
		pass "upgrade to a layout that names this one as earlier: '$out'" ||
		fail "upgrade to a layout naming this one: exit $rc, '$out'"
	out=$(ringlb upgrade eth0 2>&1)
	rc=$?
	[ $rc != 0 ] && [[ $out == *"made for another layout of the maps"* ]] &&
		pass "and back, to a binary whose list does not name it: refused, exit $rc" ||
		fail "back to this binary: exit $rc, '$out'"
}

suite_test before
suite_test swap before
suite_test again swap
suite_test layout swap
suite_test earlier layout
suite_main "$@"
