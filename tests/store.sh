#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The desired state in etcd (--store), with a real etcd (Debian's
# etcd-server) on the loopback of a private namespace:
#   - the etcd client's specification (build/test_etcd): revisions, a write
#     that holds only on the revision read, fail-over between endpoints
#   - the CLI committing to the store: attach, vip and backend changes;
#     the store's key holds the state, the kernel serves it (verify), and
#     another host's view (another local state directory) reads the same
#   - etcd stopped: a change fails in one line and changes nothing, the
#     kernel keeps serving; the daemon says so once and keeps running;
#     etcd back: changes commit again, the daemon says the store answers
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib.sh"

require_root store

TEST_NAME=store
veth_session rst
trap 'kill $(jobs -p) 2>/dev/null; ip netns del "$NS" 2>/dev/null; rm -rf "$PIN" "$W"' EXIT
STORE="etcd://127.0.0.1:23790/ringlb-test"
VIP=198.18.0.100:80/tcp

etcd_start() {
	ip netns exec "$NS" etcd --name t --data-dir "$W/etcd" \
		--listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
		--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster t=http://127.0.0.1:23800 >>"$W/etcd.log" 2>&1 &
	ETCD=$!
	for t in $(seq 1 100); do
		ip netns exec "$NS" etcdctl --endpoints 127.0.0.1:23790 endpoint health >/dev/null 2>&1 &&
			return 0
		sleep 0.1
	done
	die "etcd did not start: $(tail -3 "$W/etcd.log")"
}
sringlb() { ringlb --store "$STORE" "$@"; }
stored() {
	ip netns exec "$NS" etcdctl --endpoints 127.0.0.1:23790 get --print-value-only \
		/ringlb-test/state
}

etcd_start
if ip netns exec "$NS" "$ROOT/build/test_etcd" 127.0.0.1:23790 >"$W/test_etcd.log" 2>&1; then
	pass "test_etcd: $(grep -c '\[       OK \]' "$W/test_etcd.log") tests against a real etcd (revisions, compare-and-put, fail-over)"
else
	fail "test_etcd: $(grep -E 'ERROR|FAILED' "$W/test_etcd.log" | head -5)"
fi

# --- the CLI commits to the store -----------------------------------------------------------
sringlb attach eth0 >/dev/null && sringlb vip add "$VIP" --check none &&
	sringlb backend add "$VIP" b1 198.18.0.11 --mac 02:00:00:00:00:11 >/dev/null &&
	sringlb backend add "$VIP" b2 198.18.0.12 --mac 02:00:00:00:00:12 >/dev/null &&
	sringlb backend weight "$VIP" b2 3 || die "changes through the store"
gen=$(stored | jq .generation)
[ -n "$gen" ] && [ "$gen" -eq "$(sringlb show --json | jq .generation)" ] &&
	[ "$(stored | jq -r '.vips[0].backends[1].weight')" = 3 ] &&
	[ ! -e "$W/state.json" ] && sringlb verify >/dev/null &&
	pass "5 changes committed to etcd (generation $gen in /ringlb-test/state, no state file written); the kernel serves it: verify clean" ||
	fail "store commits: stored generation '$gen', verify: $(sringlb verify 2>&1)"
mkdir -p "$W/h2"
other=$(ringlb --state "$W/h2/state.json" --store "$STORE" show --json 2>/dev/null |
	jq -r '[.vips[].backends[].name] | join(" ")')
[ "$other" = "b1 b2" ] && pass "another host's view of the store: the same VIP and backends ($other)" ||
	fail "another view: '$other'"

# --- the daemon on the store ------------------------------------------------------------------
nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/state.json" --pin-dir "$PIN" \
	--store "$STORE" daemon --metrics none >"$W/daemon.log" 2>&1 &
DPID=$!
for t in $(seq 1 50); do grep -q "ready: serving generation $gen" "$W/daemon.log" && break; sleep 0.1; done
grep -q "ready: serving generation $gen" "$W/daemon.log" &&
	pass "the daemon serves the store's generation $gen" || fail "daemon: $(cat "$W/daemon.log")"

# --- etcd stopped, and back ---------------------------------------------------------------------
kill "$ETCD"
wait "$ETCD" 2>/dev/null
before=$(bpftool -j map dump pinned "$PIN/vips" | jq length)
out=$(sringlb backend weight "$VIP" b1 2 2>&1)
rc=$?
sleep 0.5
after=$(bpftool -j map dump pinned "$PIN/vips" | jq length)
[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "store" &&
	[ "$before" -eq 1 ] && [ "$after" -eq 1 ] && kill -0 "$DPID" &&
	[ "$(grep -c 'cannot read the state from the store' "$W/daemon.log")" -eq 1 ] &&
	pass "etcd stopped: a change fails in one line ('$out'), the kernel keeps its VIP, the daemon says so once and keeps running" ||
	fail "etcd stopped: exit $rc, '$out', VIPs in the kernel $before/$after, daemon: $(tail -2 "$W/daemon.log")"
etcd_start
sringlb backend weight "$VIP" b1 2 && sringlb verify >/dev/null &&
	[ "$(stored | jq -r '.vips[0].backends[0].weight')" = 2 ] &&
	for t in $(seq 1 30); do grep -q "the store answers again" "$W/daemon.log" && break; sleep 0.1; done &&
	grep -q "the store answers again" "$W/daemon.log" &&
	pass "etcd back: the change commits (verify clean), the daemon says the store answers again" ||
	fail "etcd back: $(sringlb verify 2>&1); $(tail -2 "$W/daemon.log")"
kill "$DPID"
wait "$DPID" || fail "the daemon did not stop cleanly"

echo "store: $FAILS failed"
[ "$FAILS" -eq 0 ]
