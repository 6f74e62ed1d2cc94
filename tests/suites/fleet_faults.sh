#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The fleet of fleet.sh (three balancers, etcd, bird2, a router with ECMP,
# GUE backends) with its store made to fail: etcd's key rewritten behind the
# hosts' backs, and the fault proxy (tests/tools/faultproxy.py) between the
# hosts and etcd. Every test sends real client traffic across the fault and
# looks at the router's routes. Its tests (`fleet_faults.sh TEST...`):
#
#   deleted     PREFIX/state deleted: every host keeps serving and
#               announcing, says why (log, show), refuses changes; the same
#               value put back: followed again, a change serves everywhere
#   import      (after deleted) deleted again: `ringlb store import` on one
#               host writes its copy back, every host follows
#   insane      a malformed value, a state of version 2, one with a field this
#               ringlb does not know: each fails static, then followed again
#   digest      the fleet's key digest overwritten: no host withdraws; put
#               back, all sane
#   restart     (after routes) the store down (connections refused): a daemon
#               restarted keeps announcing from its copy; show, stats,
#               lookup, verify answer from it (revision and age said);
#               host drain withdraws within a second; the store back: a
#               change serves on the restarted host
#   fork        a command without the fleet's store, or with another, on a
#               fleet host: refused in one line, nothing changed
#   slow        every store request delayed 1.5 s (the timeout is 2 s) for
#               SLOW_S seconds (60): no healthy backend marked down, clients
#               served throughout, at most one daemon judging checks
#   lost_reply  a commit whose reply the proxy drops: the change settles by
#               reading the key back, and says nothing false
#   lead        the daemons' judged-check counters sampled every 0.5 s
#               (every daemon probes; the leader's results alone may
#               commit verdicts): one judges at a time (lb2 and lb3 are both pid 1, in pid
#               namespaces, on one hostname); through a failed keepalive on
#               each, and the leader cut off from etcd alone (a partial
#               partition): never two at once, no backend marked down
#   drift       the followers' ringlb_kernel_repairs_total stayed 0 through
#               every change they followed (ringlb_store_follows_total)
#   next_hops   a change made on lb1: lb2 and lb3, which learn it through the
#               store, send a datagram toward each backend (their next hops
#               resolved, as the host that made it does)
#   alive       the three daemons ran through it all
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/fleet.sh"
. "$ROOT/tests/suites/faultproxy.sh"

require_root fleet_faults

TEST_NAME=fleet_faults
P=rff$$
scratch_dir
PIN=/sys/fs/bpf/ringlb-$P
trap 'kill $(jobs -p) 2>/dev/null; fleet_down "$P" "$W"; rm -rf "$PIN"-* "$W"' EXIT
# The hosts reach etcd through the proxy; the tests rewrite etcd directly.
STORE="http://198.18.20.5:2381/ringlb-faults"
KEY=/ringlb-faults/state
CTL=127.0.0.1:2390
VIP="$FLEET_VIP:80/tcp"
SLOW_S=${SLOW_S:-60}
# A short periodic comparison: a host that would withdraw does so within the wait;
# metrics on each balancer's own loopback (its check counters say who runs checks).
DAEMON_ARGS="--verify-interval 2 --metrics 127.0.0.1:9477"
# lb2's and lb3's daemons in pid namespaces of their own: both are pid 1 on one
# hostname, the two daemons that shared one identity before it named more.
daemon_wrap() { [ "$1" = 1 ] || echo unshare --pid --fork --kill-child; }

. "$ROOT/tests/suites/fleet_lib.sh"

E() { ip netns exec "${P}etcd" etcdctl --endpoints 198.18.20.5:2379 "$@"; }
# served N: how many of N connections through the router a backend answered.
served() {
	local k
	for k in $(seq 1 "$1"); do client curl -s -m 2 "http://$FLEET_VIP/"; done | grep -c '^b'
}
# stays WHAT: after 3 s (more than a periodic comparison) the router still has
# three paths and 20 of 20 connections are served.
stays() {
	local got
	sleep 3
	got=$(served 20)
	[ "$(paths)" = 3 ] && [ "$got" -eq 20 ] && return 0
	fail "$1: $(paths) paths, $got of 20 served; lb1: $(tail -2 "$W/lb1/daemon.log" | tr '\n' ' ')"
	return 1
}
# refuses_change HOST WANT: a change on HOST fails in one line matching WANT.
refuses_change() {
	local out rc
	out=$(on "$1" backend weight "$VIP" b1 3 2>&1)
	rc=$?
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -qE "$2" && return 0
	fail "a change on lb$1: exit $rc, '$out' (want /$2/)"
	return 1
}
# logged_all WHAT: each daemon's log says WHAT (within 5 s).
logged_all() {
	local i t
	for i in 1 2 3; do
		for t in $(seq 1 50); do grep -q "$1" "$W/lb$i/daemon.log" && break; sleep 0.1; done
		grep -q "$1" "$W/lb$i/daemon.log" || { fail "lb$i does not say '$1': $(tail -2 "$W/lb$i/daemon.log")"; return 1; }
	done
}
# converged: the three hosts serve the store's state (verify clean on each, digests equal).
converged() {
	local t want
	for t in $(seq 1 50); do
		want=$(digest 1)
		[ -n "$want" ] && [ "$(digest 2)" = "$want" ] && [ "$(digest 3)" = "$want" ] &&
			on 1 verify >/dev/null 2>&1 && on 2 verify >/dev/null 2>&1 && on 3 verify >/dev/null 2>&1 &&
			return 0
		sleep 0.1
	done
	return 1
}
# sane_all WHAT: each daemon says, since the last mark, that the store is sane again (5 s).
sane_all() {
	local i t
	for i in 1 2 3; do
		for t in $(seq 1 50); do since "$i" | grep -q "sane again" && break; sleep 0.1; done
		since "$i" | grep -q "sane again" || { fail "$1: lb$i does not say the store is sane again: $(since "$i" | tail -2 | tr '\n' ' ')"; return 1; }
	done
}
# mark: the line each daemon log is at now, for since().
mark() { local i; for i in 1 2 3; do wc -l <"$W/lb$i/daemon.log" >"$W/lb$i/mark"; done; }
since() { tail -n +"$(($(cat "$W/lb$1/mark") + 1))" "$W/lb$1/daemon.log"; }

setup() {
	etcd_start() {
		mkdir -p "$W/etcd"
		etcd_up "${P}etcd" 198.18.20.5:2379 2380 "$W/etcd"
		[ -n "${FAULTPROXY_PID:-}" ] ||
			faultproxy_up "${P}etcd" 198.18.20.5:2381 198.18.20.5:2379 "$CTL" "$W/proxy"
	}
	fleet_setup
	wait_paths 3 || die "routes: $(ip -n "${P}r1" route show "$FLEET_VIP")"
}

t_deleted() {
	local value out
	value=$(E get --print-value-only "$KEY")
	mark
	E del "$KEY" >/dev/null
	logged_all "the store has no state" &&
		stays "the key deleted" && refuses_change 1 "absent" &&
		out=$(on 2 show --json 2>/dev/null) && echo "$out" | jq -e '.store_fail_static | test("absent")' >/dev/null &&
		[ "$(echo "$out" | jq '.vips | length')" = 1 ] &&
		pass "$KEY deleted: 3 paths and 20 of 20 served after 3 s, every host says why ('$(grep -m1 -o 'the store has no state.*' "$W/lb1/daemon.log" | cut -c1-110)...'), show answers from the copy, a change refused" ||
		fail "deleted: show $(on 2 show --json 2>&1 | head -c 300)"
	for i in 1 2 3; do
		since "$i" | grep -q "routes withdrawn" && fail "lb$i withdrew its routes: $(since "$i" | grep -m1 'routes withdrawn')"
	done
	# A host that never followed the fleet does not start a new one over the lost state.
	mkdir -p "$W/fresh"
	out=$(nsenter --net="/run/netns/${P}lb1" "$ROOT/build/ringlb" --state "$W/fresh/state.json" \
		--pin-dir "$PIN-fresh" --store "$STORE" vip add 198.18.100.3:80/tcp 2>&1)
	[ $? -ne 0 ] && echo "$out" | grep -q "though its fleet was made" && ! E get "$KEY" | grep -q . &&
		pass "a fresh host's change while the key is gone: refused in one line ('$(echo "$out" | cut -c1-140)...')" ||
		fail "a fresh host over the lost state: '$out'; key: $(E get "$KEY" | head -c 100)"
	# A backup restore: the same value, a new revision.
	E put "$KEY" "$value" >/dev/null
	sane_all "put back" && converged && on 2 backend weight "$VIP" b2 2 >/dev/null && converged && [ "$(served 10)" -eq 10 ] &&
		[ "$(paths)" = 3 ] &&
		pass "the same state put back: the three hosts follow it (verify clean on each), a change on lb2 serves on all three, 10 of 10 served" ||
		fail "put back: digests $(digests 1 2 3 | tr '\n' ' '); lb1 verify: $(on 1 verify 2>&1 | head -3)"
}

t_import() {
	local out
	mark
	E del "$KEY" >/dev/null
	logged_all "the store has no state" >/dev/null
	sleep 3
	out=$(on 3 store import 2>&1) && E get "$KEY" | grep -q '"vips"' && sane_all "imported" && converged &&
		[ "$(served 10)" -eq 10 ] &&
		pass "deleted again: 'ringlb store import' on lb3 wrote its copy back ('$out'); the three hosts follow it, 10 of 10 served" ||
		fail "import: '$out'; lb1 verify: $(on 1 verify 2>&1 | head -2)"
	out=$(on 3 store import 2>&1)
	[ $? -ne 0 ] && echo "$out" | grep -q "holds a state already" &&
		pass "a second import is refused in one line ('$out')" || fail "second import: '$out'"
}

t_insane() {
	local value bad what
	value=$(E get --print-value-only "$KEY")
	for what in malformed version unknown; do
		case $what in
		malformed) bad='{"version": 1, "vips": [' ;;
		version) bad=$(echo "$value" | jq -c '.version = 2') ;;
		unknown) bad=$(echo "$value" | jq -c '.quic = {"lb_id": 1}') ;;
		esac
		mark
		E put "$KEY" "$bad" >/dev/null
		for i in 1 2 3; do
			for t in $(seq 1 30); do since "$i" | grep -q "the store's state $KEY" && break; sleep 0.1; done
		done
		stays "a $what state" && refuses_change 2 "the store's state" &&
			! since 1 | grep -q "routes withdrawn" && ! since 2 | grep -q "routes withdrawn" &&
			! since 3 | grep -q "routes withdrawn" &&
			pass "a $what state in the store: routes stay (3 paths), 20 of 20 served, a change refused ('$(since 1 | grep -m1 -o "the store's state.*" | cut -c1-100)')" ||
			fail "a $what state: lb1 $(since 1 | tail -3 | tr '\n' ' ')"
		E put "$KEY" "$value" >/dev/null
		sane_all "the $what state repaired" && converged ||
			fail "after the $what state was repaired: not converged"
	done
}

t_digest() {
	local value
	value=$(E get --print-value-only /ringlb-faults/secret_digest)
	mark
	E put /ringlb-faults/secret_digest 0123456789abcdef >/dev/null
	logged_all "key digest in the store changed" && stays "the key digest overwritten" &&
		! since 1 | grep -q "routes withdrawn" && ! since 2 | grep -q "routes withdrawn" &&
		! since 3 | grep -q "routes withdrawn" &&
		pass "the fleet's key digest overwritten: no host withdraws (3 paths, 20 of 20 served), each says why" ||
		fail "digest: $(since 2 | tail -3 | tr '\n' ' ')"
	E put /ringlb-faults/secret_digest "$value" >/dev/null
	logged_all "sane again" && converged &&
		pass "the digest put back: every host says its store is sane again, verify clean" ||
		fail "digest back: $(tail -2 "$W/lb2/daemon.log")"
	# Not a digest at all, with a line of its own forged in it.
	mark
	E put /ringlb-faults/secret_digest "$(printf 'zz\nringlb daemon: routes withdrawn: forged')" >/dev/null
	logged_all "is not 16 hex digits" && stays "a garbage key digest" &&
		! since 1 | grep -q "^ringlb daemon: routes withdrawn" && ! since 2 | grep -q "^ringlb daemon: routes withdrawn" &&
		! since 3 | grep -q "^ringlb daemon: routes withdrawn" &&
		pass "a key digest that is not one (a forged log line in it): no host withdraws, none logs the forged line, each says what is wrong" ||
		fail "garbage digest: $(since 2 | tail -3 | tr '\n' ' ')"
	E put /ringlb-faults/secret_digest "$value" >/dev/null
	sane_all "after the garbage digest"
}

t_restart() {
	local t out got before start
	# Silent: the store accepts and never answers (a hung member).
	fault "${P}etcd" "$CTL" '*' blackhole >/dev/null
	daemon_stop 2
	: >"$W/lb2/mark.log"
	before=$(wc -l <"$W/lb2/daemon.log")
	daemon_on 2
	for t in $(seq 1 100); do grep -q "ready: serving" <(tail -n +"$before" "$W/lb2/daemon.log") && break; sleep 0.1; done
	stays "lb2 restarted without the store" &&
		ip -n "${P}r1" route show "$FLEET_VIP" | grep -q "$(fleet_lb 2) " &&
		tail -n +"$before" "$W/lb2/daemon.log" | grep -q "failing static" &&
		pass "the store silent (it accepts, never answers), lb2's daemon restarted: it announces from its copy (3 paths, 20 of 20 served) and says so ('$(tail -n +"$before" "$W/lb2/daemon.log" | grep -m1 -o 'failing static.*' | cut -c1-120)...')" ||
		fail "restart: $(tail -n +"$before" "$W/lb2/daemon.log" | tail -4 | tr '\n' ' ')"
	out=$(on 2 show --json 2>/dev/null | jq -r .store_fail_static)
	on 2 stats >/dev/null 2>&1 && on 2 lookup "$VIP" 198.18.10.2:4242 >/dev/null 2>&1 &&
		on 2 verify >/dev/null 2>&1 && echo "$out" | grep -q "answering from this host's copy of revision [0-9]*, followed [0-9]* s ago" &&
		pass "show, stats, lookup and verify answer without the store ('$(echo "$out" | grep -o "answering.*")')" ||
		fail "questions without the store: show '$out'; verify $(on 2 verify 2>&1 | tail -2)"
	refuses_change 2 "cannot read the state from the store" &&
		pass "a change without the store fails in one line"
	start=$(date +%s%N)
	on 2 host drain >/dev/null 2>&1 && wait_paths 2 &&
		pass "host drain without the store: lb2's route withdrawn after $(( ($(date +%s%N) - start) / 1000000 )) ms" ||
		fail "drain without the store: $(paths) paths; $(tail -2 "$W/lb2/daemon.log")"
	on 2 host undrain >/dev/null 2>&1 && wait_paths 3 || fail "undrain without the store: $(paths) paths"
	fault_clear "${P}etcd" "$CTL" >/dev/null
	on 3 backend weight "$VIP" b3 2 >/dev/null && converged &&
		pass "the store back: a change on lb3 serves on the restarted lb2 (verify clean on all three)" ||
		fail "store back: $(tail -3 "$W/lb2/daemon.log" | tr '\n' ' ')"
}

t_fork() {
	local out rc
	out=$(nsenter --net="/run/netns/${P}lb1" "$ROOT/build/ringlb" --state "$W/lb1/state.json" \
		--pin-dir "$PIN-lb1" vip add 198.18.100.2:80/tcp 2>&1)
	rc=$?
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "belongs to the fleet at" &&
		pass "a command without --store on a fleet host: refused in one line ('$out')" ||
		fail "no --store: exit $rc '$out'"
	out=$(nsenter --net="/run/netns/${P}lb1" "$ROOT/build/ringlb" --state "$W/lb1/state.json" \
		--pin-dir "$PIN-lb1" --store http://198.18.20.5:2379/another vip add 198.18.100.2:80/tcp 2>&1)
	rc=$?
	[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "refusing to fork" &&
		converged &&
		pass "with another store: refused in one line ('$out'); the fleet is as it was (verify clean)" ||
		fail "another store: exit $rc '$out'"
	# host drain works on this host's copy, with no store I/O: still never onto another store.
	out=$(nsenter --net="/run/netns/${P}lb1" "$ROOT/build/ringlb" --state "$W/lb1/state.json" \
		--pin-dir "$PIN-lb1" --store http://198.18.20.5:2379/another host drain 2>&1)
	rc=$?
	[ $rc -ne 0 ] && echo "$out" | grep -q "refusing to fork" &&
		[ "$(jq -r .store.prefix "$W/lb1/state.json")" = /ringlb-faults ] && [ "$(jq -r '.host.drained // false' "$W/lb1/state.json")" = false ] &&
		pass "host drain with another store: refused too, the membership and the routes as they were" ||
		fail "host drain with another store: exit $rc '$out'; file: $(jq -c '{store, host}' "$W/lb1/state.json")"
}

t_slow() {
	local downs client ok sent
	mark
	fault "${P}etcd" "$CTL" '*' delay ms=1500 >/dev/null
	# Clients all along, while the check counters are sampled.
	( n=0 k=0; end=$(($(date +%s) + SLOW_S))
	  while [ "$(date +%s)" -lt "$end" ]; do
		client curl -s -m 2 "http://$FLEET_VIP/" | grep -q '^b' && k=$((k + 1))
		n=$((n + 1)); sleep 0.5
	  done; echo "$k $n" >"$W/slow.clients" ) &
	client=$!
	lead_watch "$SLOW_S"
	wait "$client"
	fault_clear "${P}etcd" "$CTL" >/dev/null
	read -r ok sent <"$W/slow.clients"
	downs=$(for i in 1 2 3; do since "$i"; done | grep -c "down after")
	[ "$downs" -eq 0 ] && [ "$ok" -eq "$sent" ] && [ "$(downs)" = 0 ] && [ "$LEAD_BOTH" -eq 0 ] &&
		pass "every store request delayed 1.5 s for $SLOW_S s: no backend marked down, $ok of $sent connections served, never two daemons judging checks (0.5 s windows with checks: $(echo "$LEAD_WHO" | tr -d . | wc -c) of ${#LEAD_WHO})" ||
		fail "slow store: $downs down verdicts, $ok of $sent served, $LEAD_BOTH windows with two ($LEAD_WHO); $(for i in 1 2 3; do since "$i" | grep -m2 'down after'; done)"
}

# A commit whose reply is lost: the write went out, etcd took it, the host never heard.
t_lost_reply() {
	local out rc before left
	before=$(E get --print-value-only "$KEY" | jq .generation)
	# The change's own txn (on the state key), not a daemon's campaign.
	fault "${P}etcd" "$CTL" /v3/kv/txn lost count=1 body="$(printf %s "$KEY" | base64)" >/dev/null
	out=$(on 1 backend weight "$VIP" b1 4 2>&1)
	rc=$?
	left=$(fault_stats "${P}etcd" "$CTL" | jq '.faults | length')
	fault_clear "${P}etcd" "$CTL" >/dev/null
	[ $rc -eq 0 ] && [ "$left" = 0 ] && [ "$(E get --print-value-only "$KEY" | jq .generation)" = $((before + 1)) ] &&
		[ "$(E get --print-value-only "$KEY" | jq -r '.vips[0].backends[] | select(.name == "b1") | .weight')" = 4 ] &&
		converged && ! grep -q "nothing changed" <<<"$out" &&
		pass "a commit whose reply was lost: settled by reading the key back (exit 0, generation $before to $((before + 1))), served on all three" ||
		fail "lost reply: exit $rc, '$out'; store generation $(E get --print-value-only "$KEY" | jq .generation) (was $before)"
}

# checks I: the health check results balancer I took as the leader so far (its metrics:
# every daemon probes, the leader's results alone may commit verdicts), or "-" when it
# does not answer.
checks() {
	ip netns exec "${P}lb$1" curl -s -m 1 http://127.0.0.1:9477/metrics 2>/dev/null |
		awk '/^ringlb_check_judged_total/ {s += $NF; n++} END {print n ? s : "-"}'
}
# lead_watch SECONDS: sample every daemon's check count every 0.5 s; LEAD_BOTH: the
# windows in which more than one daemon judged checks; LEAD_NONE: those with none;
# LEAD_WHO: who judged them, window by window (1, 2, 3, or . for nobody).
lead_watch() {
	local end i c prev=() now=() who n
	LEAD_BOTH=0 LEAD_NONE=0 LEAD_WHO=""
	for i in 1 2 3; do prev[$i]=$(checks "$i"); done
	end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep 0.5
		who="" n=0
		for i in 1 2 3; do
			c=$(checks "$i")
			if [ "$c" != - ] && [ "${prev[$i]}" != - ] && [ "${c%.*}" -gt "${prev[$i]%.*}" ]; then
				who="$who$i" n=$((n + 1))
			fi
			prev[$i]=$c
		done
		[ "$n" -gt 1 ] && LEAD_BOTH=$((LEAD_BOTH + 1))
		[ "$n" -eq 0 ] && LEAD_NONE=$((LEAD_NONE + 1))
		LEAD_WHO="$LEAD_WHO${who:-.}"
	done
}
# downs: backends the store holds as down.
downs() { E get --print-value-only "$KEY" | jq '[.vips[].backends[] | select(.health == "down")] | length'; }

t_lead() {
	local leader others ids i
	lead_watch 4
	ids=$(for i in 2 3; do grep -m1 -o "its name for the lead: .*" "$W/lb$i/daemon.log" | cut -d' ' -f6; done)
	[ "$LEAD_BOTH" -eq 0 ] && [ "$(echo "$ids" | sort -u | wc -l)" -eq 2 ] &&
		[ "$(echo "$ids" | grep -c '/1\.[0-9]*$')" -eq 2 ] &&
		pass "one daemon judges the checks (every one probes) (windows of 0.5 s, who: $LEAD_WHO); lb2 and lb3 are both pid 1, their names differ: $(echo $ids)" ||
		fail "lead: $LEAD_BOTH windows with two, who $LEAD_WHO, names $(echo $ids)"
	# One failed keepalive for each daemon.
	fault "${P}etcd" "$CTL" /v3/lease/keepalive status status=503 count=3 >/dev/null
	lead_watch 10
	fault_clear "${P}etcd" "$CTL" >/dev/null
	[ "$LEAD_BOTH" -eq 0 ] && [ "$(downs)" = 0 ] &&
		pass "a failed keepalive on each daemon: never two judging checks (who: $LEAD_WHO), no backend down" ||
		fail "failed keepalive: $LEAD_BOTH windows with two ($LEAD_WHO), $(downs) down"
	# A partial partition: the leader cut off from etcd alone.
	leader=$(echo "$LEAD_WHO" | grep -o '[123]' | tail -1)
	[ -n "$leader" ] || { fail "no leader to cut off ($LEAD_WHO)"; return; }
	# Silent: etcd's address routed into a link without carrier, its neighbour pinned.
	ip -n "${P}lb$leader" link add cut0 type veth peer name cut1
	ip -n "${P}lb$leader" link set cut0 up
	ip -n "${P}lb$leader" route add 198.18.20.5/32 dev cut0
	ip -n "${P}lb$leader" neigh add 198.18.20.5 lladdr 02:00:00:00:00:99 dev cut0 nud permanent
	lead_watch 14
	ip -n "${P}lb$leader" link del cut0
	others=$(echo "$LEAD_WHO" | tr -d ".$leader" | grep -o '[123]' | sort -u | tr -d '\n')
	[ "$LEAD_BOTH" -eq 0 ] && [ -n "$others" ] && [ "$(downs)" = 0 ] &&
		pass "lb$leader, the leader, cut off from etcd alone: it stopped judging and lb$others took them, never two at once (who: $LEAD_WHO), no backend down" ||
		fail "partition of lb$leader: $LEAD_BOTH windows with two, who $LEAD_WHO, $(downs) down; $(tail -3 "$W/lb$leader/daemon.log" | tr '\n' ' ')"
	lead_watch 6
	[ "$LEAD_BOTH" -eq 0 ] && pass "lb$leader back: still one at a time (who: $LEAD_WHO)" ||
		fail "after the partition: $LEAD_BOTH windows with two ($LEAD_WHO)"
}

# metric I NAME: balancer I's metric NAME (summed over its labels).
metric() {
	ip netns exec "${P}lb$1" curl -s -m 1 http://127.0.0.1:9477/metrics 2>/dev/null |
		awk -v m="$2" '$1 == m || index($1, m "{") == 1 {s += $NF} END {print s + 0}'
}

# Following the store is not drift: the followers' repairs stay at 0 through every
# change they followed, and the drift alert's expression says nothing.
t_drift() {
	local i repairs follows ok=1 line=""
	for i in 2 3; do
		repairs=$(metric "$i" ringlb_kernel_repairs_total)
		follows=$(metric "$i" ringlb_store_follows_total)
		line="$line lb$i: $follows follows, $repairs repairs;"
		[ "$repairs" = 0 ] && [ "$follows" -ge 1 ] || ok=0
	done
	[ "$ok" = 1 ] && [ "$(metric 2 ringlb_store_fail_static)" = 0 ] &&
		pass "following is not counted as a repair:$line ringlb_store_fail_static 0 after the faults" ||
		fail "drift:$line fail_static $(metric 2 ringlb_store_fail_static); $(grep -h -e 'repaired' -e 'differs' "$W/lb2/daemon.log" "$W/lb3/daemon.log" | head -4 | tr '\n' ' ')"
}

# udp_out I: UDP datagrams balancer I's namespace sent (its ringlb's neighbour provocations:
# nothing else there speaks UDP).
udp_out() {
	ip netns exec "${P}lb$1" awk '/^Udp:/ && $2 ~ /^[0-9]+$/ {print $5}' /proc/net/snmp
}

# Followers resolve the next hops of backends that came through the store: a datagram
# to each (tests/suites/encap.sh shows why: the program's FIB lookup never resolves).
t_next_hops() {
	local before after i ok=1 line=""
	for i in 2 3; do eval "before$i=$(udp_out "$i")"; done
	on 1 backend weight "$VIP" b2 3 >/dev/null || fail "change on lb1"
	converged || fail "not converged after the change on lb1"
	sleep 0.5
	for i in 2 3; do
		eval "before=\$before$i"
		after=$(udp_out "$i")
		line="$line lb$i: $((after - before)) datagrams;"
		[ $((after - before)) -ge 3 ] || ok=0
	done
	[ "$ok" = 1 ] &&
		pass "the followers provoked their next hops toward the 3 backends they learned through the store:$line" ||
		fail "next hops on the followers:$line"
}

t_alive() {
	local i alive=0
	for i in 1 2 3; do kill -0 "$(cat "$W/lb$i/daemon.pid")" 2>/dev/null && alive=$((alive + 1)); done
	[ "$alive" -eq 3 ] && pass "the three daemons ran through it all" ||
		fail "$((3 - alive)) daemons died: $(grep -h -i -e 'free()' -e 'abort' -e 'segmentation' "$W"/lb*/daemon.log | head -3)"
}

suite_test deleted
suite_test import deleted
suite_test insane
suite_test digest
suite_test restart
suite_test fork
suite_test slow
suite_test lost_reply
suite_test lead
suite_test drift
suite_test next_hops
suite_test alive
suite_main "$@"
