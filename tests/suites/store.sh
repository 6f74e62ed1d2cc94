#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The desired state in etcd (--store), with a real etcd (Debian's
# etcd-server) on the loopback of a private namespace. Its tests
# (tests/suites/lib.sh runs them; `store.sh TEST...` runs some):
#
#   etcd_client  the etcd client's specification (build/test_etcd):
#                revisions, a write that holds only on the revision read,
#                fail-over between endpoints
#   commits      the CLI committing to the store: vip and backend changes go
#                to the store's key, attach stays in this host's file
#                (interfaces, sources and the flow table are the host's
#                own), the kernel serves both (verify)
#   view         (after commits) another host's view (another local state
#                directory) reads the same
#   daemon       (after commits) the daemon serves the store's generation
#   host2        (after daemon) a second host, attached, serves the store's
#                rings
#   converge     (after host2) it converges to a change of the first
#   undrain      (after converge) a drain on host 1 and its undrain on host 2
#                go through the store: each host serves both, and the rings
#                are back to those of before the drain
#   concurrent   (after host2) 16 concurrent changes from both are all kept
#   leader       (after host2) one daemon runs the health checks, another
#                takes them when it dies
#   other_key    (after commits) a host on another flow hash key refuses and
#                says why (the store holds the key's digest)
#   etcd_down    (after daemon) etcd stopped: a change fails in one line and
#                changes nothing, the kernel keeps serving; the daemon says
#                so once and keeps running
#   etcd_back    (after etcd_down) etcd back: changes commit again, the
#                daemon says the store answers
#   stop         (after daemon) the daemon stops cleanly
#   empty        (after commits; last) the last VIP removed: an empty fleet on
#                purpose is a state like any other (not a missing key):
#                show answers it from the store, a VIP can be added again
#   unconfirmed  (after commits) a host whose store is behind the fault proxy:
#                its commit's reply lost and the read back reset: the change
#                says the store did not confirm it (not "nothing changed");
#                the store took it; the next change settles the kernel
#   big_reply    a store that answers 64 MiB: refused past ETCD_REPLY_MAX in one
#                line, the command's heap held under 48 MiB (RLIMIT_DATA)
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/tests/suites/faultproxy.sh"

require_root store

TEST_NAME=store
STORE="etcd://127.0.0.1:23790/ringlb-test"
VIP=198.18.0.100:80/tcp

etcd_start() { mkdir -p "$W/etcd"; etcd_up "$NS" 127.0.0.1:23790 23800 "$W/etcd"; }
sringlb() { ringlb --store "$STORE" "$@"; }
stored() {
	ip netns exec "$NS" etcdctl --endpoints 127.0.0.1:23790 get --print-value-only \
		/ringlb-test/state
}
# daemon1: host 1's daemon on the store, its log appended to $W/daemon.log; DPID.
daemon1() {
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/state.json" --pin-dir "$PIN" \
		--store "$STORE" daemon --metrics none >>"$W/daemon.log" 2>&1 &
	DPID=$!
}
# Host 2 shares the namespace (and so the etcd) but has its own state directory, pins and
# interface (eth1): the fleet's half comes from the store, its own facts from its file.
h2() {
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/h2/state.json" \
		--pin-dir "$PIN-h2" --store "$STORE" "$@"
}
h3() {
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/h3/state.json" \
		--pin-dir "$PIN-h3" "$@"
}
digest() { "$@" show --json | jq -r '[.vips[].kernel_ring_digest] | join(" ")'; }

setup() {
	veth_session rst
	# Host 2's and host 3's pins too, however the script ends.
	trap 'kill $(jobs -p) 2>/dev/null; ip netns del "$NS" 2>/dev/null; rm -rf "$PIN" "$PIN-h2" "$PIN-h3" "$PIN-h5" "$W"' EXIT
	etcd_start
	: >"$W/daemon.log"
}

t_etcd_client() {
	if ip netns exec "$NS" "$ROOT/build/test_etcd" 127.0.0.1:23790 >"$W/test_etcd.log" 2>&1; then
		pass "test_etcd: $(grep -c '\[       OK \]' "$W/test_etcd.log") tests against a real etcd (revisions, compare-and-put, fail-over)"
	else
		fail "test_etcd: $(grep -E 'ERROR|FAILED' "$W/test_etcd.log" | head -5)"
	fi
}

# --- the CLI commits to the store -----------------------------------------------------------
# GEN: the store's generation after these changes.
t_commits() {
	sringlb attach eth0 >/dev/null && sringlb vip add "$VIP" --check none &&
		sringlb backend add "$VIP" b1 198.18.0.11 --mac 02:00:00:00:00:11 >/dev/null &&
		sringlb backend add "$VIP" b2 198.18.0.12 --mac 02:00:00:00:00:12 >/dev/null &&
		sringlb backend weight "$VIP" b2 3 || die "changes through the store"
	GEN=$(stored | jq .generation)
	[ "$GEN" = 4 ] && [ "$GEN" -eq "$(sringlb show --json | jq .generation)" ] &&
		[ "$(stored | jq -r '.vips[0].backends[1].weight')" = 3 ] &&
		[ "$(stored | jq '.interfaces | length')" = 0 ] &&
		[ "$(jq -r '.interfaces[0].name' "$W/state.json")" = eth0 ] && sringlb verify >/dev/null &&
		pass "4 fleet changes committed to etcd (generation $GEN in /ringlb-test/state); the attach stayed in this host's file (its interfaces are not the fleet's); the kernel serves both: verify clean" ||
		fail "store commits: stored generation '$GEN', verify: $(sringlb verify 2>&1)"
}

t_view() {
	local other
	mkdir -p "$W/h2"
	other=$(ringlb --state "$W/h2/state.json" --pin-dir "$PIN-h2" --store "$STORE" show --json 2>"$W/view.err" |
		jq -r '[.vips[].backends[].name] | join(" ")')
	[ "$other" = "b1 b2" ] && pass "another host's view of the store: the same VIP and backends ($other)" ||
		fail "another view: '$other' $(cat "$W/view.err")"
	# The store's revision is said by a host on the store; without --store this host
	# (a member of the fleet now) refuses: it would fork off the fleet silently.
	local out rc
	out=$(ringlb show --json 2>&1 >/dev/null)
	rc=$?
	[ "$(sringlb show --json | jq 'has("store_revision")')" = true ] && [ $rc -ne 0 ] &&
		[ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "belongs to the fleet at http://127.0.0.1:23790 (prefix /ringlb-test)" &&
		pass "show --json gives a store revision with --store; without it this fleet host refuses in one line ('$out')" ||
		fail "show --json's store_revision: with --store $(sringlb show --json | jq -c .store_revision); without: exit $rc, '$out'"
}

# --- the daemon on the store ------------------------------------------------------------------
t_daemon() {
	local t
	daemon1
	for t in $(seq 1 50); do grep -q "ready: serving generation $GEN" "$W/daemon.log" && break; sleep 0.1; done
	grep -q "ready: serving generation $GEN" "$W/daemon.log" &&
		pass "the daemon serves the store's generation $GEN" || fail "daemon: $(cat "$W/daemon.log")"
}

# --- a second host on the same store ----------------------------------------------------------
# H2D: host 2's daemon.
t_host2() {
	local t
	mkdir -p "$W/h2"
	h2 secret set "$W/secret" && h2 attach eth1 >/dev/null || die "host 2 attach"
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/h2/state.json" --pin-dir "$PIN-h2" \
		--store "$STORE" daemon --metrics none >"$W/h2/daemon.log" 2>&1 &
	H2D=$!
	for t in $(seq 1 50); do grep -q "ready: serving" "$W/h2/daemon.log" && break; sleep 0.1; done
	[ "$(digest h2)" = "$(digest sringlb)" ] && h2 verify >/dev/null &&
		pass "host 2 attached: it serves the store's rings, digests equal to host 1's ($(digest h2))" ||
		fail "host 2 after attach: $(digest h2) vs $(digest sringlb); $(h2 verify 2>&1)"
}

# A change on host 1: host 2's daemon converges its kernel.
t_converge() {
	local t start took
	sringlb backend weight "$VIP" b1 4 || fail "weight on host 1"
	start=$(date +%s.%N)
	for t in $(seq 1 100); do [ "$(digest h2)" = "$(digest sringlb)" ] && h2 verify >/dev/null && break; sleep 0.05; done
	took=$(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.2f')
	[ "$(digest h2)" = "$(digest sringlb)" ] && h2 verify >/dev/null &&
		pass "a change made on host 1 serves on host 2 after $took s (its daemon watches the store)" ||
		fail "host 2 never converged: $(tail -3 "$W/h2/daemon.log")"
}

# A drain on host 1, undone on host 2: both through the store, both served by both hosts.
t_undrain() {
	local before drained t state1 state2
	before=$(digest sringlb)
	sringlb backend drain "$VIP" b1 || fail "drain on host 1"
	for t in $(seq 1 100); do [ "$(digest h2)" = "$(digest sringlb)" ] && break; sleep 0.05; done
	drained=$(digest h2)
	state1=$(stored | jq -r '.vips[0].backends[] | select(.name == "b1") | .state')
	h2 backend undrain "$VIP" b1 || fail "undrain on host 2"
	for t in $(seq 1 100); do [ "$(digest sringlb)" = "$(digest h2)" ] && break; sleep 0.05; done
	state2=$(stored | jq -r '.vips[0].backends[] | select(.name == "b1") | .state')
	[ "$state1 $state2" = "draining active" ] && [ "$drained" != "$before" ] &&
		[ "$(digest sringlb)" = "$before" ] && [ "$(digest h2)" = "$before" ] &&
		sringlb verify >/dev/null && h2 verify >/dev/null &&
		pass "drain on host 1, undrain on host 2: the store says $state1 then $state2, both hosts served the drained rings ($drained) and then the rings of before ($before)" ||
		fail "fleet undrain: store $state1 then $state2; rings before $before, drained $drained, after $(digest sringlb) / $(digest h2)"
}

# Concurrent changes from both hosts: none lost.
t_concurrent() {
	local i t names
	for i in 1 2 3 4 5 6 7 8; do
		sringlb backend add "$VIP" "x$i" "198.18.0.$((40 + i))" --mac "02:00:00:00:01:$((10 + i))" >/dev/null ||
			echo "x$i" >>"$W/lost" &
		h2 backend add "$VIP" "y$i" "198.18.0.$((50 + i))" --mac "02:00:00:00:02:$((10 + i))" >/dev/null ||
			echo "y$i" >>"$W/lost" &
	done
	wait $(jobs -p | grep -v -e "^$DPID\$" -e "^$H2D\$" -e "^$ETCD\$") 2>/dev/null
	names=$(stored | jq -r '[.vips[0].backends[].name | select(test("^[xy]"))] | length')
	# Each host's daemon brings its kernel to the last of them.
	for t in $(seq 1 100); do
		[ "$(digest h2)" = "$(digest sringlb)" ] && sringlb verify >/dev/null && h2 verify >/dev/null &&
			break
		sleep 0.1
	done
	[ "$names" = 16 ] && [ ! -e "$W/lost" ] && sringlb verify >/dev/null && h2 verify >/dev/null &&
		[ "$(digest h2)" = "$(digest sringlb)" ] &&
		pass "16 concurrent changes from two hosts (8 each): all 16 in the store, both kernels serve it, digests equal" ||
		fail "concurrent changes: $names of 16 in the store, lost: $(cat "$W/lost" 2>/dev/null | tr '\n' ' '); digests $(digest sringlb) / $(digest h2); verify 1: $(sringlb verify 2>&1 | head -2); verify 2: $(h2 verify 2>&1 | head -2); daemons alive: $(kill -0 "$DPID" && echo 1) $(kill -0 "$H2D" && echo 2); $(grep -v 'ring transition' "$W/h2/daemon.log" | tail -3)"
}

# One daemon runs the fleet's health checks; kill it and another takes them within the lease.
t_leader() {
	local t leader other lname leaders start took ready
	for t in $(seq 1 50); do
		[ "$(cat "$W/daemon.log" "$W/h2/daemon.log" | grep -c "runs the fleet's health checks")" -ge 1 ] && break
		sleep 0.1
	done
	if grep -q "runs the fleet's health checks" "$W/daemon.log"; then
		leader=$DPID other="$W/h2/daemon.log" lname="host 1"
	else
		leader=$H2D other="$W/daemon.log" lname="host 2"
	fi
	leaders=$(cat "$W/daemon.log" "$W/h2/daemon.log" | grep -c "runs the fleet's health checks")
	grep -q "the fleet's health checks are run by" "$other" && [ "$leaders" -eq 1 ] &&
		pass "one daemon of two runs the fleet's health checks ($lname); the other says who" ||
		fail "health leadership: $leaders leaders"
	kill -9 "$leader"
	wait "$leader" 2>/dev/null
	start=$(date +%s.%N)
	for t in $(seq 1 100); do grep -q "runs the fleet's health checks" "$other" && break; sleep 0.1; done
	took=$(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.1f')
	grep -q "runs the fleet's health checks" "$other" &&
		pass "the leader killed: the other daemon runs the checks after $took s (lease 5 s)" ||
		fail "nobody took the checks over: $(tail -3 "$other")"
	if [ "$leader" = "$DPID" ]; then
		# Host 1's daemon again, for the tests after this one: until it serves (5 s at most).
		ready=$(grep -c "ready: serving" "$W/daemon.log")
		daemon1
		for t in $(seq 1 100); do
			[ "$(grep -c "ready: serving" "$W/daemon.log")" -gt "$ready" ] && break
			sleep 0.05
		done
	else
		H2D=
	fi
	[ -n "$H2D" ] && kill "$H2D" && wait "$H2D" 2>/dev/null
}

# --- a host on another flow hash key ----------------------------------------------------------
# Host 3 was attached on its own (another key); with the store it refuses to change anything
# and says why, and it cannot take a key that is not the fleet's; the fleet's key it takes.
t_other_key() {
	local out rc out2 rc2
	mkdir -p "$W/h3"
	ip -n "$NS" link add eth2 type veth peer name eth3
	ip -n "$NS" link set eth2 up
	ip -n "$NS" link set eth3 up
	h3 attach eth2 >/dev/null || die "host 3 attach"
	out=$(h3 --store "$STORE" vip add 198.18.0.101:80/tcp 2>&1)
	rc=$?
	secret_file "$W/h3/other.key"
	out2=$(h3 --store "$STORE" secret set "$W/h3/other.key" 2>&1)
	rc2=$?
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "not the fleet's" &&
		[ $rc2 -ne 0 ] && echo "$out2" | grep -q "not the fleet's" &&
		[ "$(stored | jq '.vips | length')" = 1 ] && h3 --store "$STORE" secret set "$W/secret" &&
		pass "a host on another key refuses in one line ('$out'), cannot take a key that is not the fleet's, takes the fleet's" ||
		fail "host on another key: exit $rc '$out'; secret set: exit $rc2 '$out2'"
}

# --- etcd stopped, and back ---------------------------------------------------------------------
t_etcd_down() {
	local before out rc after
	kill "$ETCD"
	wait "$ETCD" 2>/dev/null
	before=$(bpftool -j map dump pinned "$PIN/vips" | jq length)
	out=$(sringlb backend weight "$VIP" b1 2 2>&1)
	rc=$?
	# The daemon's next look at the store (every 0.5 s) finds it gone; a window in
	# which it says so only once and the kernel keeps its VIP.
	sleep 0.5
	after=$(bpftool -j map dump pinned "$PIN/vips" | jq length)
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "store" &&
		[ "$before" -eq 1 ] && [ "$after" -eq 1 ] && kill -0 "$DPID" &&
		[ "$(grep -c 'cannot read the state from the store' "$W/daemon.log")" -eq 1 ] &&
		pass "etcd stopped: a change fails in one line ('$out'), the kernel keeps its VIP, the daemon says so once and keeps running" ||
		fail "etcd stopped: exit $rc, '$out', VIPs in the kernel $before/$after, daemon: $(tail -2 "$W/daemon.log")"
}

t_etcd_back() {
	local t
	etcd_start
	sringlb backend weight "$VIP" b1 2 && sringlb verify >/dev/null &&
		[ "$(stored | jq -r '.vips[0].backends[0].weight')" = 2 ] &&
		for t in $(seq 1 30); do grep -q "the store answers again" "$W/daemon.log" && break; sleep 0.1; done &&
		grep -q "the store answers again" "$W/daemon.log" &&
		pass "etcd back: the change commits (verify clean), the daemon says the store answers again" ||
		fail "etcd back: $(sringlb verify 2>&1); $(tail -2 "$W/daemon.log")"
}

t_stop() {
	kill "$DPID"
	wait "$DPID" || fail "the daemon did not stop cleanly"
}

# --- a store that answers without end ------------------------------------------------------------
t_big_reply() {
	local out rc
	cat >"$W/big.py" <<-'EOF'
		import http.server
		SIZE = 64 << 20
		class H(http.server.BaseHTTPRequestHandler):
		    def do_POST(self):
		        self.rfile.read(int(self.headers.get("Content-Length", 0)))
		        self.send_response(200)
		        self.send_header("Content-Type", "application/json")
		        self.send_header("Content-Length", str(SIZE))
		        self.end_headers()
		        try:
		            for _ in range(SIZE >> 16):
		                self.wfile.write(b" " * 65536)
		        except OSError:
		            pass
		    def log_message(self, *args):
		        pass
		http.server.HTTPServer(("127.0.0.1", 23799), H).serve_forever()
	EOF
	mkdir -p "$W/big"
	ip netns exec "$NS" python3 "$W/big.py" &
	local server=$! t
	for t in $(seq 1 50); do ip netns exec "$NS" curl -s -o /dev/null -m 1 -X POST http://127.0.0.1:23799/ -d x && break; sleep 0.1; done
	out=$(prlimit --data=$((48 << 20)) nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" \
		--state "$W/big/state.json" --pin-dir "$PIN-big" --store http://127.0.0.1:23799/big show 2>&1)
	rc=$?
	kill "$server"
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "a reply larger than [0-9]* bytes, refused" &&
		pass "a store answering 64 MiB: refused in one line under a 48 MiB heap limit ('$out')" ||
		fail "big reply: exit $rc, '$out'"
}

# --- an empty fleet on purpose --------------------------------------------------------------------
t_empty() {
	local got
	sringlb vip del "$VIP" >/dev/null 2>&1 || fail "vip del"
	got=$(sringlb show --json 2>"$W/empty.err")
	[ "$(stored | jq '.vips | length')" = 0 ] && [ "$(echo "$got" | jq '.vips | length')" = 0 ] &&
		[ "$(echo "$got" | jq 'has("store_fail_static")')" = false ] && [ ! -s "$W/empty.err" ] &&
		sringlb vip add "$VIP" --check none && sringlb verify >/dev/null &&
		pass "the last VIP removed: the store holds an empty fleet (vips []), show answers it with no fail-static note, a VIP is added again (verify clean)" ||
		fail "empty fleet: '$(cat "$W/empty.err")', show $(echo "$got" | head -c 200)"
}

# --- a commit nobody can confirm -------------------------------------------------------------------
h5() {
	nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/h5/state.json" \
		--pin-dir "$PIN-h5" --store http://127.0.0.1:23793/ringlb-test "$@"
}
t_unconfirmed() {
	local out rc key
	mkdir -p "$W/h5"
	faultproxy_up "$NS" 127.0.0.1:23793 127.0.0.1:23790 127.0.0.1:23794 "$W/proxy"
	ip -n "$NS" link add eth5 type veth peer name eth6
	ip -n "$NS" link set eth5 up
	ip -n "$NS" link set eth6 up
	h5 secret set "$W/secret" >/dev/null || fail "h5 secret set: $(h5 secret set "$W/secret" 2>&1)"
	h5 attach eth5 >/dev/null 2>&1 || fail "h5 attach: $(h5 attach eth5 2>&1)"
	key=$(printf %s /ringlb-test/state | base64)
	# The change's write lands, its reply is lost; the read that would settle it is reset.
	fault "$NS" 127.0.0.1:23794 /v3/kv/txn lost count=1 body="$key" >/dev/null
	fault "$NS" 127.0.0.1:23794 /v3/kv/range reset skip=1 count=1 body="$key" >/dev/null
	out=$(h5 backend weight "$VIP" b1 5 2>&1)
	rc=$?
	fault_clear "$NS" 127.0.0.1:23794 >/dev/null
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "did not confirm" &&
		! echo "$out" | grep -q "nothing changed" &&
		[ "$(stored | jq -r '.vips[0].backends[] | select(.name == "b1") | .weight')" = 5 ] &&
		pass "a commit whose reply was lost and whose read back failed: '$out'; the store holds it (b1 weight 5)" ||
		fail "unconfirmed: exit $rc, '$out'; b1's weight in the store $(stored | jq -c '.vips[0].backends[] | select(.name == "b1") | .weight')"
	out=$(h5 backend weight "$VIP" b2 1 2>&1)
	h5 verify >/dev/null 2>&1 && [ "$(stored | jq -r '.vips[0].backends[] | select(.name == "b2") | .weight')" = 1 ] &&
		pass "the next change settles this host: its kernel follows the store first ('$out'), verify clean" ||
		fail "after the unconfirmed change: '$out'; verify $(h5 verify 2>&1 | head -2)"
	kill "$FAULTPROXY_PID"
}

suite_test etcd_client
suite_test commits
suite_test view commits
suite_test daemon commits
suite_test host2 daemon
suite_test converge host2
suite_test undrain converge
suite_test concurrent host2
suite_test leader host2
suite_test other_key commits
suite_test etcd_down daemon
suite_test etcd_back etcd_down
suite_test stop daemon
suite_test big_reply
suite_test unconfirmed commits
suite_test empty commits
suite_main "$@"
