#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The daemon's routes (--bgp-routes, --birdc-socket) against a birdc that
# hangs or answers, the routes file's temp file, and the audit log's copy in
# the system journal. A birdc first in the daemon's PATH (a script this
# suite writes: it records each call, then hangs with a child of its own or
# exits 0, as $W/birdc.mode says) stands in for bird's: what is under test
# is the daemon's handling of its child; tests/suites/fleet.sh runs a real
# bird2.
# Its tests (tests/suites/lib.sh runs them; `routes.sh TEST...` runs some):
#
#   hung       a birdc that never answers (started with no signal blocked):
#              the daemon keeps serving (a change made meanwhile reaches
#              /metrics), starts no second birdc, kills the first and its
#              child after 5 s, says so once, and asks again 2 s later
#   announce   (after hung) a birdc that answers: the routes are announced,
#              and birdc runs once for each change of what is announced,
#              never for a change that leaves it as it is
#   symlink    (after announce) a symlink planted at the old temp name
#              (FILE.tmp -> a victim) was not followed: the victim is as it
#              was, the routes file a regular file with the routes
#   sigterm    (after announce) SIGTERM while a birdc hangs stops the daemon
#              within 2 s, and the birdc with it
#   no_temp    a routes file that cannot be renamed into place (a directory
#              holds its name) leaves no temp file behind
#   journal    under a journald of the suite's own (in a private mount
#              namespace, whether or not the host runs one), a change's audit
#              line, accepted or refused, is also a journal entry with its
#              fields; with no journald a change is made all the same
#   bird       a real bird2 on scripts/bird/balancer.conf, started before the
#              daemon has written its routes file, runs and announces
#              nothing; the daemon started after writes the file, and an
#              IPv4 and an IPv6 VIP reach a peer bird over BGP and its
#              kernel's table (next hops on the link); a host drain
#              withdraws both, an undrain brings them back
#
# Runs in a private network namespace with one veth pair (and, for bird, a
# peer namespace beside it). Needs root; skips
# without it, except under CI=true. DEBUG=1 prints the daemon's log at the end.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"

require_root routes

VIP=198.18.0.100:80/tcp
METRICS=127.0.0.1:9479
ROUTES_DIR=
JPID=
MADE_DIRS=

# Whatever the script ends in: the daemon, every birdc stand-in and its child
# (by the pids they recorded), the suite's journald, the namespace.
cleanup() {
	local pid
	[ "${DEBUG:-}" = 1 ] && [ -f "$W/daemon.log" ] && cat "$W/daemon.log" >&2
	[ -n "${DPID:-}" ] && kill -9 "$DPID" 2>/dev/null
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null
	for pid in $(cat "$W/birdc.pids" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
	for pid in "$W"/bird/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	ip netns del "${NS}p" 2>/dev/null
	rm -rf "$PIN" "$W"
	# shellcheck disable=SC2086
	[ -z "$MADE_DIRS" ] || rmdir $MADE_DIRS
}

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

# alive PID: PID runs (a zombie does not count: whoever reaps it, it is gone).
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }

# calls: how many times birdc was run so far.
calls() { wc -l <"$W/birdc.calls"; }
# call_field N FIELD: field FIELD of call N (1: the birdc's pid, 2: its child's, 3: when).
call_field() { sed -n "${1}p" "$W/birdc.calls" | cut -d' ' -f"$2"; }

# wait_for SECONDS COMMAND...: until COMMAND succeeds (polled every 20 ms); 1 on time out.
wait_for() {
	local end
	end=$(($(date +%s%N) + $1 * 1000000000))
	until "${@:2}"; do
		[ "$(date +%s%N)" -lt "$end" ] || return 1
		sleep 0.02
	done
}
calls_at_least() { [ "$(calls)" -ge "$1" ]; }
logged() { [ "$(grep -c -- "$1" "$W/daemon.log")" -ge "${2:-1}" ]; }

# daemon_start ROUTES_FILE [BIRD_SOCKET PATH]: the daemon in the namespace; by default
# with the stand-in first in its PATH.
daemon_start() {
	# nsenter execs env, which execs ringlb: $! is the daemon itself.
	nsenter --net="/run/netns/$NS" env PATH="${3:-$W/bin:$PATH}" "$ROOT/build/ringlb" \
		--state "$W/state.json" --pin-dir "$PIN" daemon --metrics "$METRICS" \
		--verify-interval 3600 --bgp-routes "$1" --birdc-socket "${2:-$W/bird.ctl}" \
		>>"$W/daemon.log" 2>&1 &
	DPID=$!
}

# daemon_kill: the daemon gone, however it was (a test that failed may leave it running).
daemon_kill() {
	[ -n "${DPID:-}" ] || return 0
	kill -9 "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
}

# generation: the committed state's; served: the one the daemon's /metrics says it serves.
generation() { jq .generation "$W/state.json"; }
served() {
	local page
	page=$(in_ns curl -s -m 1 "http://$METRICS/metrics")
	awk '$1 == "ringlb_state_generation" { print $2 }' <<<"$page"
}
serves() { [ "$(served)" = "$1" ]; }

# follow: until the daemon serves the committed state (5 s at most).
follow() { wait_for 5 serves "$(generation)"; }

# now: seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }
since() { echo "$1 $2" | awk '{ printf "%.3f", $2 - $1 }'; }

setup() {
	TEST_NAME=routes
	veth_session rrt
	trap cleanup EXIT
	ringlb attach eth0 >/dev/null || die "attach"
	mkdir -p "$W/bin" "$W/routes"
	ROUTES_DIR=$W/routes
	: >"$W/birdc.calls"
	echo hang >"$W/birdc.mode"
	cat >"$W/bin/birdc" <<EOF
#!/bin/sh
# A stand-in for birdc (tests/suites/routes.sh): it records the call (its pid,
# its child's, when, its arguments), then hangs with a child or exits 0.
if [ "\$(cat "$W/birdc.mode")" = hang ]; then
	sleep 1000 &
	echo "\$\$ \$! \$(date +%s.%N) \$*" >>"$W/birdc.calls"
	echo "\$\$ \$!" >>"$W/birdc.pids"
	wait
fi
echo "\$\$ - \$(date +%s.%N) \$*" >>"$W/birdc.calls"
exit 0
EOF
	chmod 755 "$W/bin/birdc"
	# The symlink test's trap, planted before the daemon writes anything.
	echo "not for the daemon to write" >"$W/victim"
	sha256sum <"$W/victim" >"$W/victim.sha"
	ln -s "$W/victim" "$ROUTES_DIR/routes.conf.tmp"
}

# --- a birdc that hangs -------------------------------------------------------------------------
t_hung() {
	local t0 blocked gen t_change t_killed t2 kills
	daemon_start "$ROUTES_DIR/routes.conf"
	if ! wait_for 5 calls_at_least 1; then
		fail "no birdc run within 5 s of the daemon's start: $(tail -3 "$W/daemon.log")"
		return
	fi
	t0=$(call_field 1 3)
	# It runs as a new process would: no signal blocked (the daemon blocks its own for its loop).
	blocked=$(awk '$1 == "SigBlk:" { print $2 }' "/proc/$(call_field 1 2)/status")
	[ "$blocked" = 0000000000000000 ] && pass "birdc's child runs with no signal blocked (SigBlk $blocked)" ||
		fail "birdc's child runs with signals blocked: SigBlk $blocked"
	# A change while the first birdc hangs: the daemon's loop must follow it.
	ringlb vip add "$VIP" --vnodes 64 || fail "vip add"
	gen=$(generation)
	t_change=$(now)
	if wait_for 3 serves "$gen" && alive "$(call_field 1 1)" && [ "$(calls)" -eq 1 ]; then
		pass "birdc hangs (pid $(call_field 1 1)): generation $gen, committed $(since "$t0" "$t_change") s into the hang, served on /metrics $(since "$t_change" "$(now)") s later; no second birdc"
	else
		fail "while birdc hangs: /metrics says generation '$(served)', committed $gen; $(calls) birdc runs"
	fi
	if wait_for 8 logged "birdc configure did not answer in 5 s; killed"; then
		t_killed=$(now)
		# Killed: the birdc and its child are gone within a moment.
		wait_for 1 eval '! alive "$(call_field 1 1)" && ! alive "$(call_field 1 2)"'
		if ! alive "$(call_field 1 1)" && ! alive "$(call_field 1 2)" && [ "$(calls)" -eq 1 ] &&
			awk -v d="$(since "$t0" "$t_killed")" 'BEGIN { exit !(d >= 4.9 && d <= 6.5) }'; then
			pass "after $(since "$t0" "$t_killed") s: '$(grep -m1 'did not answer' "$W/daemon.log" | cut -c16-)'; birdc and its child gone, no other started"
		else
			fail "the kill: after $(since "$t0" "$t_killed") s, birdc $(alive "$(call_field 1 1)" && echo alive || echo gone), its child $(alive "$(call_field 1 2)" && echo alive || echo gone), $(calls) runs"
		fi
	else
		fail "no kill within 8 s of birdc's start: $(tail -3 "$W/daemon.log")"
		return
	fi
	# The next one answers: the announcement is recorded only now.
	echo ok >"$W/birdc.mode"
	logged "routes announced" && fail "routes announced while birdc hung"
	if wait_for 5 calls_at_least 2; then
		t2=$(call_field 2 3)
		awk -v d="$(since "$t_killed" "$t2")" 'BEGIN { exit !(d >= 1.5 && d <= 3.5) }' &&
			pass "asked again $(since "$t_killed" "$t2") s after the kill (BIRD_RETRY_NS: 2 s)" ||
			fail "asked again $(since "$t_killed" "$t2") s after the kill"
	else
		fail "birdc not asked again within 5 s of the kill"
	fi
	kills=$(grep -c "did not answer" "$W/daemon.log")
	[ "$kills" -eq 1 ] && pass "the kill logged once" || fail "the kill logged $kills times"
}

# --- a birdc that answers -----------------------------------------------------------------------
# change_calls WHAT WANT COMMAND...: COMMAND ran birdc WANT times (0 or 1) once the daemon follows it.
change_calls() {
	local what=$1 want=$2 before after
	shift 2
	before=$(calls)
	"$@" >/dev/null || fail "$what: the change failed"
	follow || fail "$what: the daemon does not serve generation $(generation)"
	# What announces runs in the daemon's next tick (100 ms): give it three.
	if [ "$want" -eq 0 ]; then
		sleep 0.3
	else
		wait_for 2 calls_at_least $((before + want))
	fi
	sleep 0.2
	after=$(calls)
	CHANGES_SEEN+="$what: $((after - before)); "
	[ $((after - before)) -eq "$want" ] || CHANGES_BAD+="$what: $((after - before)) runs, not $want; "
}

t_announce() {
	local want
	CHANGES_SEEN='' CHANGES_BAD=''
	wait_for 3 logged "routes announced: 1 VIP addresses" && grep -q "route 198.18.0.100/32 blackhole;" \
		"$ROUTES_DIR/routes.conf" && pass "birdc answered: 'routes announced: 1 VIP addresses', the file has the route" ||
		fail "no announcement: $(tail -3 "$W/daemon.log")"
	change_calls "same address, another port" 0 ringlb vip add 198.18.0.100:443/tcp --vnodes 64
	change_calls "backend add" 0 ringlb backend add "$VIP" b1 198.18.0.11 --mac 02:00:00:00:00:11
	change_calls "IPv6 VIP add" 1 ringlb vip add "[2001:db8::100]:80/tcp" --vnodes 64
	change_calls "another IPv4 address" 1 ringlb vip add 198.18.0.101:80/tcp --vnodes 64
	change_calls "its VIP deleted" 1 ringlb vip del 198.18.0.101:80/tcp
	want="route 198.18.0.100/32 blackhole;route 2001:db8::100/128 blackhole;"
	if [ -z "$CHANGES_BAD" ] && [ "$(calls)" -eq 5 ] &&
		[ "$(grep -o 'route [^ ]* blackhole;' "$ROUTES_DIR/routes.conf" | tr -d '\n')" = "$want" ] &&
		[ "$(grep -c 'routes announced' "$W/daemon.log")" -eq 4 ]; then
		pass "birdc runs per change: ${CHANGES_SEEN%; }; 5 in all, 4 announcements, the file has both routes"
	else
		fail "birdc runs per change: ${CHANGES_BAD:-$CHANGES_SEEN} $(calls) in all; file: $(grep route "$ROUTES_DIR/routes.conf" | tr '\n' ' ')"
	fi
}

# --- the temp file ---------------------------------------------------------------------------
t_symlink() {
	local left
	left=$(find "$ROUTES_DIR" -name 'routes.conf.tmp?*' | wc -l)
	if sha256sum -c --status "$W/victim.sha" <"$W/victim" 2>/dev/null && [ -f "$ROUTES_DIR/routes.conf" ] &&
		[ ! -L "$ROUTES_DIR/routes.conf" ] && [ -L "$ROUTES_DIR/routes.conf.tmp" ] &&
		grep -q "route 198.18.0.100/32 blackhole;" "$ROUTES_DIR/routes.conf" && [ "$left" -eq 0 ] &&
		[ "$(stat -c %a "$ROUTES_DIR/routes.conf")" = 644 ]; then
		pass "routes.conf.tmp -> victim planted: the victim unchanged, routes.conf a regular file (mode 644) with the routes, no temp file left"
	else
		fail "symlink: victim '$(head -c 80 "$W/victim" | tr '\n' ' ')', routes.conf $(stat -c '%F %a' "$ROUTES_DIR/routes.conf"), $left temp files"
	fi
}

t_sigterm() {
	local n t_term took rc
	echo hang >"$W/birdc.mode"
	n=$(($(calls) + 1))
	ringlb vip add 198.18.0.102:80/tcp --vnodes 64 >/dev/null || fail "vip add"
	if ! wait_for 3 calls_at_least "$n"; then
		fail "no birdc for the change: $(tail -3 "$W/daemon.log")"
		return
	fi
	sleep 0.3
	t_term=$(now)
	kill -TERM "$DPID"
	wait_for 10 eval '! alive "$DPID"'
	took=$(since "$t_term" "$(now)")
	if alive "$DPID"; then
		fail "SIGTERM while birdc hangs: the daemon still runs after $took s"
		daemon_kill
		return
	fi
	wait "$DPID"
	rc=$?
	DPID=
	if awk -v d="$took" 'BEGIN { exit !(d <= 2) }' && [ "$rc" -eq 0 ] &&
		! alive "$(call_field "$n" 1)" && ! alive "$(call_field "$n" 2)" &&
		tail -1 "$W/daemon.log" | grep -q stopped; then
		pass "SIGTERM while birdc hangs: stopped in $took s, exit 0, birdc and its child gone"
	else
		fail "SIGTERM: $took s, exit $rc, birdc $(alive "$(call_field "$n" 1)" && echo alive || echo gone), child $(alive "$(call_field "$n" 2)" && echo alive || echo gone); $(tail -1 "$W/daemon.log")"
	fi
}

t_no_temp() {
	local left rc
	daemon_kill
	echo ok >"$W/birdc.mode"
	mkdir -p "$W/isdir"
	daemon_start "$W/isdir"
	wait_for 5 logged "cannot write $W/isdir" || fail "no 'cannot write': $(tail -3 "$W/daemon.log")"
	kill -TERM "$DPID"
	wait "$DPID"
	rc=$?
	DPID=
	left=$(find "$W" -maxdepth 1 -name 'isdir.tmp*' | wc -l)
	[ "$left" -eq 0 ] && [ "$rc" -eq 0 ] &&
		pass "'$(grep -m1 "cannot write $W/isdir" "$W/daemon.log" | cut -c16- | sed "s|$W/||")': no temp file left" ||
		fail "a routes file that cannot be renamed into place left $left temp files (exit $rc)"
}

# --- the audit line in the journal -----------------------------------------------------------------
# A journald of the suite's own: /run/systemd, /run/log and (when there)
# /var/log/journal are tmpfs in a mount namespace of its own, so the host's
# journal, if it has one, is neither read nor written. JPID is the journald
# (unshare and sh exec it); its namespace is /proc/$JPID/ns/mnt. A host
# without /run/systemd or /run/log gets them, empty, for the mounts, and they
# go again after (MADE_DIRS).
journal_up() {
	local jd t
	for jd in /usr/lib/systemd/systemd-journald /lib/systemd/systemd-journald; do
		[ -x "$jd" ] && break
	done
	[ -x "$jd" ] || die "no systemd-journald (Debian's systemd package)"
	for t in /run/systemd /run/log; do
		[ -d "$t" ] || { mkdir "$t" && MADE_DIRS+=" $t"; } || die "cannot make $t"
	done
	unshare --mount --propagation private sh -c '
		mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/journal &&
		mount -t tmpfs tmpfs /run/log &&
		{ [ ! -d /var/log/journal ] || mount -t tmpfs tmpfs /var/log/journal; } &&
		exec "$0"' "$jd" >"$W/journald.log" 2>&1 &
	JPID=$!
	wait_for 5 test -S "/proc/$JPID/root/run/systemd/journal/socket" ||
		die "the suite's journald did not start: $(cat "$W/journald.log")"
}
in_journal() { nsenter --mount="/proc/$JPID/ns/mnt" "$@"; }
ringlb_journal() {
	in_journal nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" "$@"
}

t_journal() {
	local t entries ok err audit_ok audit_err lines rc rc2
	journal_up
	SUDO_USER=alice ringlb_journal vip add 198.18.0.110:80/tcp --vnodes 64 >/dev/null || fail "vip add"
	ringlb_journal vip add 198.18.0.110:80/tcp --vnodes 64 2>/dev/null && fail "a duplicate VIP accepted"
	audit_ok=$(tail -2 "$W/audit.log" | head -1)
	audit_err=$(tail -1 "$W/audit.log")
	for t in $(seq 1 50); do
		entries=$(in_journal journalctl --no-pager SYSLOG_IDENTIFIER=ringlb -o json 2>/dev/null)
		[ "$(jq -s length <<<"$entries")" -ge 2 ] && break
		sleep 0.1
	done
	ok=$(jq -c 'select(.RINGLB_RESULT == "ok")' <<<"$entries" | tail -1)
	err=$(jq -c 'select(.RINGLB_RESULT == "error")' <<<"$entries" | tail -1)
	# Each entry carries the audit line's fields, word for word.
	if [ -n "$ok" ] && jq -e --argjson a "$audit_ok" '.PRIORITY == "5" and
		.RINGLB_USER == $a.user and .RINGLB_UID == ($a.uid | tostring) and
		.RINGLB_SUDO_USER == "alice" and $a.sudo_user == "alice" and
		.RINGLB_TIME == $a.time and (.RINGLB_COMMAND | fromjson) == $a.command and
		$a.result == "ok" and (.MESSAGE | contains($a.command | join(" "))) and
		(has("RINGLB_ERROR") | not)' <<<"$ok" >/dev/null; then
		pass "journal, accepted: '$(jq -r .MESSAGE <<<"$ok" | sed "s|$W/||; s|$PIN|PIN|")', PRIORITY 5, $(jq -r '[keys[] | select(startswith("RINGLB_"))] | join(" ")' <<<"$ok"), each as audit.log says"
	else
		fail "journal, accepted: '$ok' for audit line $audit_ok"
	fi
	if [ -n "$err" ] && jq -e --argjson a "$audit_err" '.PRIORITY == "4" and
		.RINGLB_RESULT == $a.result and .RINGLB_ERROR == $a.error and
		.RINGLB_ERROR_CLASS == $a.error_class and .RINGLB_TIME == $a.time and
		(.RINGLB_COMMAND | fromjson) == $a.command and (.MESSAGE | contains($a.error))' \
		<<<"$err" >/dev/null; then
		pass "journal, refused: '$(jq -r .MESSAGE <<<"$err" | sed "s|$W/||; s|$PIN|PIN|")', PRIORITY 4, RINGLB_ERROR_CLASS $(jq -r .RINGLB_ERROR_CLASS <<<"$err"), each field as audit.log says"
	else
		fail "journal, refused: '$err' for audit line $audit_err"
	fi
	# No journald: an empty /run/systemd/journal of its own, no socket in it.
	kill "$JPID"
	wait "$JPID" 2>/dev/null
	JPID=
	lines=$(wc -l <"$W/audit.log")
	unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /run/systemd &&
		mkdir /run/systemd/journal && exec "$@"' sh nsenter --net="/run/netns/$NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" vip add 198.18.0.111:80/tcp --vnodes 64 >/dev/null 2>"$W/nojournal.err"
	rc=$?
	ringlb show --json | jq -e '.vips | map(.vip) | index("198.18.0.111:80/tcp")' >/dev/null
	rc2=$?
	[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && [ ! -s "$W/nojournal.err" ] &&
		[ "$(wc -l <"$W/audit.log")" -eq $((lines + 1)) ] &&
		pass "with no journald socket the change is made (exit 0, nothing on stderr) and audit.log has its line" ||
		fail "without a journald: exit $rc, VIP there: $rc2, stderr '$(cat "$W/nojournal.err")'"
}

# --- a real bird2, started first ---------------------------------------------------------------
# bird_up: bgp0 from the namespace (198.18.1.1/24, 2001:db8:1::1/64) to a peer
# namespace ${NS}p (.2, ::2), whose bird takes every route of the session, both
# families, into its kernel's table; then this host's bird from
# scripts/bird/balancer.conf, its routes file not written yet.
BIRD_VIP4=198.18.0.120
BIRD_VIP6=2001:db8::120
bird_up() {
	local b=$W/bird ns
	mkdir -p "$b"
	ip netns add "${NS}p"
	ip -n "$NS" link add bgp0 type veth peer name bgp0 netns "${NS}p"
	ip -n "${NS}p" link set lo up
	for ns in "$NS" "${NS}p"; do
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
		ip -n "$ns" link set bgp0 up
	done
	ip -n "$NS" addr add 198.18.1.1/24 dev bgp0
	ip -n "$NS" -6 addr add 2001:db8:1::1/64 dev bgp0 nodad
	ip -n "${NS}p" addr add 198.18.1.2/24 dev bgp0
	ip -n "${NS}p" -6 addr add 2001:db8:1::2/64 dev bgp0 nodad
	cat >"$b/peer.conf" <<EOF
router id 198.18.1.2;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; }
protocol kernel { ipv6 { import none; export all; }; }
protocol bgp lb {
	local 198.18.1.2 as 65000;
	neighbor 198.18.1.1 as 65011;
	hold time 3;
	keepalive time 1;
	connect retry time 1;
	error wait time 1, 2;
	ipv4 { import all; export none; };
	ipv6 { import all; export none; };
}
EOF
	sed -e 's|@ROUTER_ID@|198.18.1.1|' -e 's|@LOCAL_AS@|65011|' -e 's|@PEER@|198.18.1.2|' \
		-e 's|@PEER_AS@|65000|' -e "s|@ROUTES_DIR@|$b|" "$ROOT/scripts/bird/balancer.conf" >"$b/lb.conf"
	ip netns exec "${NS}p" bird -c "$b/peer.conf" -s "$b/peer.ctl" -P "$b/peer.pid" ||
		die "the peer's bird: $(bird -p -c "$b/peer.conf" 2>&1)"
	ip netns exec "$NS" bird -c "$b/lb.conf" -s "$b/lb.ctl" -P "$b/lb.pid" 2>"$b/lb.err"
}
# peer_routes: the peer kernel's routes to the two VIPs, one "ADDR via HOP" a line.
peer_routes() {
	{
		ip -n "${NS}p" -j route show "$BIRD_VIP4/32"
		ip -n "${NS}p" -j -6 route show "$BIRD_VIP6/128"
	} | jq -r '.[] | "\(.dst) via \(.gateway)"'
}
peer_has() { [ "$(peer_routes | tr '\n' ';')" = "$1" ]; }
session_up() { birdc -s "$W/bird/lb.ctl" show protocols upstream | grep -q Established; }

t_bird() {
	local b=$W/bird t0 took protos want="$BIRD_VIP4 via 198.18.1.1;$BIRD_VIP6 via 2001:db8:1::1;"
	daemon_kill
	ringlb vip add "$BIRD_VIP4:53/udp" --vnodes 64 && ringlb vip add "[$BIRD_VIP6]:53/udp" --vnodes 64 ||
		fail "vip add"
	bird_up
	# bird first: no routes file yet, and it runs all the same, with its BGP session.
	if [ ! -e "$b/ringlb-routes.conf" ] && wait_for 15 session_up; then
		protos=$(birdc -s "$b/lb.ctl" show protocols | awk 'NR > 2 { print $1 }' | tr '\n' ' ')
		sleep 1
		[ -z "$(peer_routes)" ] && ! grep -q ringlb_vips <<<"$protos" &&
			pass "bird started before the daemon, no routes file: it runs, its session is up, its protocols are '${protos% }', the peer has no route to the VIPs" ||
			fail "bird without the routes file: protocols '$protos', the peer has '$(peer_routes | tr '\n' ';')'"
	else
		fail "bird did not start without the routes file: $(cat "$b/lb.err") $(birdc -s "$b/lb.ctl" show protocols 2>&1 | tail -2)"
		return
	fi
	t0=$(now)
	daemon_start "$b/ringlb-routes.conf" "$b/lb.ctl" "$PATH"
	if wait_for 20 peer_has "$want"; then
		took=$(since "$t0" "$(now)")
		pass "the daemon started after: it wrote the routes file ('$(grep -m1 'routes announced' "$W/daemon.log" | cut -c16-)'); the peer's kernel routes $(peer_routes | tr '\n' ';' | sed 's/;$//; s/;/ and /') $took s after the daemon's start"
	else
		fail "after the daemon's start: the peer has '$(peer_routes | tr '\n' ';')', want '$want'; bird: $(birdc -s "$b/lb.ctl" show route 2>&1 | tail -4 | tr '\n' ' '); daemon: $(tail -3 "$W/daemon.log")"
		return
	fi
	ringlb host drain >/dev/null || fail "host drain"
	wait_for 10 peer_has "" && pass "host drain: the peer's routes to both VIPs withdrawn" ||
		fail "host drain: the peer still has '$(peer_routes | tr '\n' ';')'"
	ringlb host undrain >/dev/null || fail "host undrain"
	wait_for 10 peer_has "$want" && pass "host undrain: both routes back at the peer" ||
		fail "host undrain: the peer has '$(peer_routes | tr '\n' ';')'"
	daemon_kill
}

suite_test hung
suite_test announce hung
suite_test symlink announce
suite_test sigterm announce
suite_test no_temp
suite_test journal
suite_test bird
suite_main "$@"
