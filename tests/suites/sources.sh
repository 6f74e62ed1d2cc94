#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Per-VIP source ranges with real traffic: the topology of scripts/topology.sh,
# client 1 with a second address (198.18.0.121, 2001:db8::121) so one client
# speaks from two prefixes, nginx behind an IPv4 and an IPv6 VIP, curl.
# Its tests (tests/suites/lib.sh runs them; `sources.sh TEST...` runs some):
#
#   allow4     --allow 198.18.0.16/28: connections from .21 complete, none from
#              .121; SYNs sent from .121 are counted under drop_source_not_allowed
#              exactly; lookup says so
#   deny6      --deny 2001:db8::120/124: the same for IPv6 and drop_source_denied
#   metrics    (after both) the daemon's /metrics gives each VIP's prefixes by
#              list (ringlb_vip_source_prefixes) and the two reasons' counters
#   in_place   (after both) vip sources turns the IPv4 lists around: .21 is
#              refused, .121 served, while a download through the IPv6 VIP
#              completes untouched; verify agrees with the kernel
#   clear      (after in_place) vip sources --clear: everyone served; the state
#              file is then byte for byte a state without ranges
#   drift      (after clear) a prefix deleted from the kernel, a stray set and
#              a stray head with no set added behind ringlb's back: verify
#              names them, the daemon's start repairs them, and the refused
#              client is refused again
#   refused    bad lists (mixed family, host bits, both lists, 1,025 prefixes,
#              --clear with a list) get one line, non-zero, and no change;
#              1,024 are taken and verify agrees
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root sources

topo_session sources rlbsrc
VIP4="$TOPO_VIP4:80/tcp"
VIP6="[$TOPO_VIP6]:80/tcp"
IN4=$(topo_client_addr4 1)
OUT4=198.18.0.121
IN6=$(topo_client_addr6 1)
OUT6=2001:db8::121
# SYNs sent by hand from a refused address: exactly this many are counted.
SYNS=40

setup() {
	topo_up "$P" "$W" 2 || die "topology"
	ip -n "${P}c1" addr add "$OUT4/24" dev eth0 || die "second IPv4 address"
	ip -n "${P}c1" -6 addr add "$OUT6/64" dev eth0 nodad || die "second IPv6 address"
	ringlb attach eth0 >/dev/null || die "attach"
	ringlb vip add "$VIP4" --allow 198.18.0.16/28 >/dev/null || die "vip add $VIP4"
	ringlb vip add "$VIP6" --deny 2001:db8::120/124 >/dev/null || die "vip add $VIP6"
	for i in 1 2; do
		ringlb backend add "$VIP4" "b$i" "$(topo_backend_addr4 "$i")" || die "backend b$i"
		ringlb backend add "$VIP6" "b$i" "$(topo_backend_addr6 "$i")" || die "backend b$i v6"
	done
}

# served FROM ADDR N [SECONDS]: how many of N connections from source FROM to ADDR
# complete, each given SECONDS (5: CI runs three suites at once on two CPUs) at
# most. Each failure's curl exit code and the drop counters it moved are kept
# in $W/unserved, for the message of a check that expected service.
served() {
	local i ok=0 code before
	: >"$W/unserved"
	for i in $(seq 1 "$3"); do
		before=$(ringlb stats --json | jq -c '[.reasons | to_entries[] | select(.key | startswith("drop")) | {(.key): .value.packets}] | add')
		code=$(on_client 1 curl -s -m "${4:-5}" --interface "$1" -o /dev/null -w '%{http_code}' \
			"$(url "$2")/"; echo " exit $?")
		case $code in
		"200 exit 0") ok=$((ok + 1)) ;;
		*) echo "#$i: curl $code; drops before $before, after $(ringlb stats --json | jq -c '[.reasons | to_entries[] | select(.key | startswith("drop")) | {(.key): .value.packets}] | add')" >>"$W/unserved" ;;
		esac
	done
	echo "$ok"
}

# reason NAME: packets counted under reason NAME so far.
reason() { ringlb stats --json | jq --arg r "$1" '.reasons[$r].packets'; }

# vip_refused VIP: packets VIP's source ranges refused so far.
vip_refused() { ringlb stats --json | jq --arg v "$1" '.vips[] | select(.vip == $v) | .refused.packets'; }

# syns FROM TO N: N TCP SYNs from FROM to TO:80, sent by trafgen from client 1 to the balancer.
syns() {
	local c1mac head
	c1mac=$(ip -n "${P}c1" -j link show eth0 | jq -r '.[0].address')
	case $1 in
	*:*) head="eth(da=$TOPO_LB_MAC, sa=$c1mac, type=0x86dd),
  ipv6(sa=$1, da=$2, hl=64)" ;;
	*) head="eth(da=$TOPO_LB_MAC, sa=$c1mac, type=0x0800),
  ipv4(sa=$1, da=$2, ttl=64)" ;;
	esac
	printf '{ %s,\n  tcp(sp=drnd(), dp=80, syn) }\n' "$head" >"$W/syn.trafgen"
	on_client 1 env -C "$W" trafgen -o eth0 -c "$W/syn.trafgen" -n "$3" --cpus 1 -q >/dev/null 2>&1
}

# range_check VIP ADDR IN OUT REASON: IN served, OUT refused (curl, lookup, counted SYNs).
range_check() {
	local vip=$1 addr=$2 in=$3 out=$4 why=$5 ok before after said vip_before vip_after
	ok=$(served "$in" "$addr" 10)
	[ "$ok" = 10 ] && pass "$vip: 10 of 10 connections from $in served" ||
		fail "$vip: $ok of 10 connections from $in served: $(head -2 "$W/unserved")"
	ok=$(served "$out" "$addr" 2 1)
	[ "$ok" = 0 ] && pass "$vip: no connection from $out served" ||
		fail "$vip: $ok of 2 connections from $out served"
	said=$(ringlb lookup "$vip" "$(endpoint "$out" 4000)")
	case $said in
	"refused ($why"*) pass "lookup: $said" ;;
	*) fail "lookup of $out says '$said', not refused ($why)" ;;
	esac
	before=$(reason "$why")
	vip_before=$(vip_refused "$vip")
	syns "$out" "$addr" "$SYNS"
	after=$(reason "$why")
	vip_after=$(vip_refused "$vip")
	[ $((after - before)) = "$SYNS" ] && pass "$SYNS SYNs from $out: $why counted $((after - before))" ||
		fail "$SYNS SYNs from $out: $why counted $((after - before))"
	[ $((vip_after - vip_before)) = "$SYNS" ] &&
		pass "$SYNS SYNs from $out: the VIP's refused count rose $((vip_after - vip_before))" ||
		fail "$SYNS SYNs from $out: the VIP's refused count rose $((vip_after - vip_before))"
}

t_allow4() { range_check "$VIP4" "$TOPO_VIP4" "$IN4" "$OUT4" drop_source_not_allowed; }

t_deny6() { range_check "$VIP6" "$TOPO_VIP6" "$IN6" "$OUT6" drop_source_denied; }

t_metrics() {
	local dpid page t
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics 127.0.0.1:9477 --verify-interval 3600 \
		>>"$W/daemon.log" 2>&1 &
	dpid=$!
	for t in $(seq 1 250); do
		grep -q 'ready: serving' "$W/daemon.log" && break
		sleep 0.04
	done
	page=$(nsenter --net="/run/netns/$RINGLB_NS" curl -s -m 5 http://127.0.0.1:9477/metrics)
	kill "$dpid"
	wait "$dpid" 2>/dev/null
	for want in "ringlb_vip_source_prefixes{vip=\"$VIP4\",list=\"allow\"} 1" \
		"ringlb_vip_source_prefixes{vip=\"$VIP4\",list=\"deny\"} 0" \
		"ringlb_vip_source_prefixes{vip=\"$VIP6\",list=\"deny\"} 1" \
		"ringlb_vip_refused_packets_total{vip=\"$VIP4\"} $(vip_refused "$VIP4")"; do
		grep -qxF "$want" <<<"$page" && pass "/metrics: $want" ||
			fail "/metrics has no '$want' ($(grep -c . <<<"$page") lines; $(tail -1 "$W/daemon.log"))"
	done
	for r in drop_source_denied drop_source_not_allowed; do
		grep -q "reason=\"$r\"" <<<"$page" && pass "/metrics counts $r" ||
			fail "/metrics has no counter of $r"
	done
}

t_in_place() {
	local got
	# A download through the IPv6 VIP held open across the change (48 KiB at 16 KiB/s).
	on_client 1 curl -s -m 30 --interface "$IN6" -r 0-49151 -o "$W/slow" \
		"$(url "$TOPO_VIP6")/slow" &
	local dl=$!
	sleep 1
	ringlb vip sources "$VIP4" --deny "$IN4/32" --allow 198.18.0.0/24 ||
		fail "vip sources $VIP4"
	got=$(served "$OUT4" "$TOPO_VIP4" 5)
	[ "$got" = 5 ] && pass "after the change: 5 of 5 from $OUT4 served" ||
		fail "after the change: $got of 5 from $OUT4 served: $(head -2 "$W/unserved")"
	got=$(served "$IN4" "$TOPO_VIP4" 2 1)
	[ "$got" = 0 ] && pass "after the change: none from $IN4 served" ||
		fail "after the change: $got of 2 from $IN4 served"
	ringlb verify >"$W/verify" 2>&1 && pass "verify agrees with the kernel" ||
		fail "verify: $(head -3 "$W/verify")"
	wait "$dl"
	got=$(stat -c %s "$W/slow" 2>/dev/null || echo 0)
	[ "$got" = 49152 ] && pass "the IPv6 VIP's download completed across the change ($got bytes)" ||
		fail "the IPv6 VIP's download got $got bytes of 49152"
	ringlb show | grep -q "deny 1: $IN4/32" && pass "show lists the new deny prefix" ||
		fail "show: $(ringlb show | grep -E 'allow|deny')"
}

t_clear() {
	local got
	ringlb vip sources "$VIP4" --clear || fail "vip sources --clear"
	ringlb vip sources "$VIP6" --clear || fail "vip sources --clear v6"
	got=$(( $(served "$IN4" "$TOPO_VIP4" 3) + $(served "$OUT4" "$TOPO_VIP4" 3) +
		$(served "$OUT6" "$TOPO_VIP6" 3) ))
	[ "$got" = 9 ] && pass "cleared: 9 of 9 connections served" ||
		fail "cleared: $got of 9 connections served"
	grep -qE '"(allow|deny)"' "$W/state.json" && fail "the state file still names a list" ||
		pass "the state file names no list"
	ringlb verify >"$W/verify" 2>&1 && pass "verify agrees with the kernel" ||
		fail "verify: $(head -3 "$W/verify")"
}

# le32 N: N as the 4 bytes of a map key, as bpftool takes them.
le32() { printf '%d %d %d %d' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24)); }

# Offsets in struct lb_source_set (bpf/lb_contract.h): its head (runs at 0,
# the verdicts below and above the block at 6 and 7, 2^LB_SOURCE_INDEX_BITS / 4
# bytes of bucket classes at LB_SOURCE_HEAD_BUCKET_AT), the 2,049 starts of 16
# bytes, the 2^LB_SOURCE_INDEX_BITS + 1 index entries of 2, and the verdicts
# after them.
contract_number() {
	sed -n "s/^#define $1 \([0-9]*\)\$/\1/p" "$ROOT/bpf/lb_contract.h"
}
SET_INDEX_BITS=$(contract_number LB_SOURCE_INDEX_BITS)
[ -n "$SET_INDEX_BITS" ] || die "no LB_SOURCE_INDEX_BITS in bpf/lb_contract.h"
SET_BUCKET_AT=$(contract_number LB_SOURCE_HEAD_BUCKET_AT)
[ -n "$SET_BUCKET_AT" ] || die "no LB_SOURCE_HEAD_BUCKET_AT in bpf/lb_contract.h"
SET_HEAD_LEN=$((SET_BUCKET_AT + (1 << SET_INDEX_BITS) / 4))
SET_INDEX_AT=$((SET_HEAD_LEN + 2049 * 16))
SET_VERDICT_AT=$((SET_INDEX_AT + ((1 << SET_INDEX_BITS) + 1) * 2))

# refuse_all_in_set INNER_ID SLOT: every run of the source set in inner map
# INNER_ID made LB_SOURCE_NOT_ALLOWED behind ringlb's back, and so the verdicts
# below and above its block and every whole bucket's class, in the set and in
# its head in map source_heads at SLOT.
refuse_all_in_set() {
	bpftool -j map lookup id "$1" key 0 0 0 0 | python3 -c '
import json, sys
v = [int(b, 16) for b in json.load(sys.stdin)["value"]]
runs = int.from_bytes(bytes(v[0:4]), "little")
head, at, classes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[5])
v[at:at + runs] = [2] * runs
v[6] = v[7] = 2
for j in range(classes, head):
    b = 0
    for k in range(4):
        c = v[j] >> 2 * k & 3
        b |= (c if c == 3 else 2) << 2 * k
    v[j] = b
open(sys.argv[3], "wb").write(bytes(v))
open(sys.argv[4], "wb").write(bytes(v[:head]))' "$SET_HEAD_LEN" "$SET_VERDICT_AT" \
		"$W/set.bin" "$W/head.bin" "$SET_BUCKET_AT" &&
		# Not bpftool: its one argument per byte came near the limit of a command's arguments.
		"$ROOT/tests/tools/mapwrite.py" "id:$1" 0 "$W/set.bin" &&
		"$ROOT/tests/tools/mapwrite.py" "$PIN/source_heads" "$2" "$W/head.bin"
}

t_drift() {
	local dpid t id parity seen inner=
	ringlb vip sources "$VIP4" --allow 198.18.0.16/28 || fail "vip sources"
	id=$(ringlb show --json | jq --arg v "$VIP4" '.vips[] | select(.vip == $v) | .id')
	# The slot that serves: after a change the VIP's other slot is empty.
	for parity in 0 1; do
		# shellcheck disable=SC2046
		inner=$(bpftool -j map lookup pinned "$PIN/source_sets" \
			key $(le32 $((2 * id + parity))) 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)["value"]
print(v if isinstance(v, int) else int.from_bytes(bytes(int(b, 16) for b in v), "little"))' \
			2>/dev/null) &&
			[ -n "$inner" ] &&
			break
	done
	refuse_all_in_set "$inner" $((2 * id + parity)) || fail "bpftool: rewriting the set"
	# A stray: a set in the slot of VIP id 200, which no VIP has.
	bpftool map create "$PIN/stray" type array key 4 value $((SET_VERDICT_AT + 2049 + 5)) \
		entries 1 name stray &&
		# shellcheck disable=SC2046
		bpftool map update pinned "$PIN/source_sets" key $(le32 400) value pinned "$PIN/stray" ||
		fail "bpftool: a stray set"
	rm -f "$PIN/stray"
	# And a head with no set, in the slot of VIP id 201: what an older build cut short left.
	"$ROOT/tests/tools/mapwrite.py" "$PIN/source_heads" 402 "$W/head.bin" ||
		fail "a stray head"
	[ "$(served "$IN4" "$TOPO_VIP4" 1 1)" = 0 ] && pass "the rewritten set: $IN4 refused" ||
		fail "the rewritten set: $IN4 still served"
	ringlb verify >"$W/verify" 2>&1
	grep -q "$VIP4: its source ranges in the kernel differ" "$W/verify" &&
		grep -q "2 source sets in the kernel belong to no VIP" "$W/verify" &&
		pass "verify names the rewritten set and the two strays (a set, a head alone)" ||
		fail "verify: $(cat "$W/verify")"
	seen=$(grep -c 'ready: serving' "$W/daemon.log" 2>/dev/null)
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics none --verify-interval 3600 >>"$W/daemon.log" 2>&1 &
	dpid=$!
	for t in $(seq 1 250); do
		[ "$(grep -c 'ready: serving' "$W/daemon.log")" -gt "${seen:-0}" ] && break
		sleep 0.04
	done
	kill "$dpid"
	wait "$dpid" 2>/dev/null
	ringlb verify >"$W/verify" 2>&1 && pass "the daemon repaired the source ranges" ||
		fail "after the daemon: $(cat "$W/verify"; tail -3 "$W/daemon.log")"
	[ "$(served "$IN4" "$TOPO_VIP4" 2)" = 2 ] && pass "$IN4 served again" ||
		fail "$IN4 not served after the repair"
	ringlb vip sources "$VIP4" --clear || fail "vip sources --clear"
}

t_refused() {
	local before after i list="" err
	before=$(sha256sum <"$W/state.json")
	for args in "$VIP4 --allow 2001:db8::/32" "$VIP6 --deny 198.18.0.0/15" \
		"$VIP4 --allow 198.18.0.1/24" "$VIP4 --allow 198.18.0.0/24 --deny 198.18.0.0/24" \
		"$VIP4 --allow 198.18.0.0/24 --clear" "$VIP4" "$VIP4 --allow 198.18.0.0/33"; do
		# shellcheck disable=SC2086
		err=$(ringlb vip sources $args 2>&1 >/dev/null)
		if [ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && [ -n "$err" ]; then
			pass "vip sources $args: $err"
		else
			fail "vip sources $args: not one line and non-zero: $err"
		fi
	done
	err=$(ringlb vip add 198.18.0.105:80/tcp --allow 2001:db8::/32 2>&1 >/dev/null)
	[ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] &&
		pass "vip add with a list of the other family: $err" ||
		fail "vip add with a list of the other family: $err"
	for i in $(seq 0 1024); do list="$list${list:+,}10.$((i / 256)).$((i % 256)).0/24"; done
	err=$(ringlb vip sources "$VIP4" --allow "$list" 2>&1 >/dev/null)
	[ $? -ne 0 ] && [ -n "$err" ] && pass "1,025 prefixes refused: $err" ||
		fail "1,025 prefixes: $err"
	after=$(sha256sum <"$W/state.json")
	[ "$before" = "$after" ] && pass "the state file is unchanged" ||
		fail "the state file changed"
	# The limit itself is taken, and the kernel holds it.
	if ringlb vip sources "$VIP4" --allow "${list%,*}" && ringlb verify >"$W/verify" 2>&1; then
		pass "1,024 prefixes taken, and verify agrees"
	else
		fail "1,024 prefixes: $(head -3 "$W/verify")"
	fi
	ringlb vip sources "$VIP4" --clear || fail "clear after 1,024"
}

suite_test allow4
suite_test deny6
suite_test metrics allow4 deny6
suite_test in_place allow4 deny6
suite_test clear in_place
suite_test drift clear
suite_test refused
suite_main "$@"
