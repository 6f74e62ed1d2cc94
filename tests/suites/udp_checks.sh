#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The daemon's UDP health checks (--check dns:NAME and udp:PAYLOAD:EXPECT) on
# the l2 topology, against real servers on the backends: dnsmasq for DNS,
# tests/tools/udpanswer.py for plain UDP and for answers that must not
# count. Each check goes through the VIP (the clients' path); a backend is
# up when its server answers as the check wants. Its tests
# (tests/suites/lib.sh runs them; `udp_checks.sh TEST...` runs some):
#
#   dns_up       dnsmasq answering who.test on both backends: every check of
#                every backend of the IPv4 and the IPv6 DNS VIP passes (each
#                backend starts up: /metrics counts the results)
#   dns_stopped  (after dns_up) dnsmasq on b2 stopped: down at the port
#                unreachable (connection refused); started again: up
#   nxdomain     (after dns_up) b2's dnsmasq told (a SIGHUP) that its name
#                is other.test: who.test is NXDOMAIN, down, and the log
#                says so; told who.test again: up
#   wrong_id     (after dns_up) on b2 a server whose answers bring d2 up,
#                then the same with another ID: down, the log says how many
#                were ignored
#   wrong_source (after dns_up) on b2 a server whose answers bring d2 up,
#                then the same answers sent from the backend's own address
#                (not the VIP it was asked on): down, nothing read
#   udp          the plain check: up while the server replies "pong ...",
#                down when it replies something else, up again
#   refused      bad --check values: one line each, exit 2, the state
#                file unchanged
#
# Needs root. Without it the script skips, except under CI=true. DEBUG=1
# prints the daemon's log at the end.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/topology.sh"

require_root udp_checks

topo_session udp_checks rud
trap '[ "${DEBUG:-}" = 1 ] && cat "$W/daemon.log" >&2
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null
	for f in "$W"/dnsmasq-*.pid "$W"/answer-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
	topo_down "$P" "$W"; rm -rf "$PIN" "$W"' EXIT
TOOLS=$ROOT/tests/tools

METRICS=127.0.0.1:9477
DNS4="$TOPO_VIP4:53/udp"
DNS6="[$TOPO_VIP6]:53/udp"
PLAIN="$TOPO_VIP4:7000/udp"
# Checked every 100 ms, 80 ms to answer, up after 1 good, down after 2 bad, no hold.
FAST=(--check-interval 100 --check-timeout 80 --rise 1 --fall 2 --hold 0)

in_b() { local i=$1; shift; ip netns exec "${P}b$i" "$@"; }

# health VIP NAME: "up" or "down", as show --json says.
health() {
	ringlb show --json | jq -r --arg v "$1" --arg n "$2" \
		'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .health'
}
# wait_health VIP NAME WANT SECONDS: until NAME's health is WANT; prints the seconds it took.
wait_health() {
	local start now
	start=$(date +%s%N)
	while [ "$(health "$1" "$2")" != "$3" ]; do
		now=$(date +%s%N)
		if [ $(( (now - start) / 1000000 )) -gt $(($4 * 1000)) ]; then
			echo never
			return 1
		fi
		sleep 0.05
	done
	echo "$(( ($(date +%s%N) - start) / 1000000 )) ms"
}
# results VIP NAME: "OK FAIL", NAME's check results so far, as /metrics counts them.
results() {
	local page
	page=$(nsenter --net="/run/netns/$RINGLB_NS" curl -s -m 2 "http://$METRICS/metrics")
	awk -v v="vip=\"$1\"" -v b="backend=\"$2\"" '$1 ~ /^ringlb_check_results_total/ &&
		index($1, v) && index($1, b) { if (index($1, "\"ok\"")) ok = $2; else bad = $2 }
		END { print ok + 0, bad + 0 }' <<<"$page"
}
# passes VIP NAME: NAME has had 3 good results and no bad one.
passes() { local r; r=$(results "$1" "$2"); [ "${r% *}" -ge 3 ] && [ "${r#* }" -eq 0 ]; }

# why_down VIP NAME: the cause the daemon's log gave for NAME's last fall (its own
# line, not the rings.log line that quotes it).
why_down() {
	grep -F "health: backend $2 of VIP $1 down after" "$W/daemon.log" | grep -vF '"cause"' |
		tail -1 | sed 's/.*checks (//; s/)$//'
}

# dnsmasq_on I: backend I's dnsmasq on both VIPs (and nothing else), authoritative
# for test. (--local: another name of it is NXDOMAIN), its names in $W/hosts-bI
# (who.test 198.18.99.I), read again on SIGHUP. Its pid in $W/dnsmasq-bI.pid.
dnsmasq_on() {
	[ -e "$W/hosts-b$1" ] || echo "198.18.99.$1 who.test" >"$W/hosts-b$1"
	# As root: it reads the names again after it would have dropped to nobody, in the 0700 $W.
	in_b "$1" dnsmasq --conf-file=/dev/null --user=root --pid-file="$W/dnsmasq-b$1.pid" --bind-interfaces \
		--listen-address="$TOPO_VIP4" --listen-address="$TOPO_VIP6" \
		--port=53 --no-resolv --no-hosts --addn-hosts="$W/hosts-b$1" --local=/test/ ||
		die "dnsmasq on b$1"
}
# dnsmasq_name I NAME: backend I's dnsmasq answers NAME instead (no moment without a server).
dnsmasq_name() {
	echo "198.18.99.$1 $2" >"$W/hosts-b$1"
	kill -HUP "$(cat "$W/dnsmasq-b$1.pid")"
}
# dnsmasq_off I: backend I's dnsmasq stopped, its port free again.
dnsmasq_off() {
	local pid t
	pid=$(cat "$W/dnsmasq-b$1.pid")
	kill "$pid"
	for t in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
	rm -f "$W/dnsmasq-b$1.pid"
}
# answer_on I ADDR PORT MODE [--from ADDR:PORT]: tests/tools/udpanswer.py on backend I;
# its pid in $W/answer-bI-PORT.pid (ip netns exec execs python: $! is the server).
answer_on() {
	local i=$1 port=$3 t
	shift
	ip netns exec "${P}b$i" python3 "$TOOLS/udpanswer.py" "$@" &
	echo $! >"$W/answer-b$i-$port.pid"
	for t in $(seq 1 50); do [ -n "$(in_b "$i" ss -Huln "sport = :$port")" ] && return 0; sleep 0.02; done
	die "udpanswer.py on b$i port $port"
}
answer_off() {
	local pid=$W/answer-b$1-$2.pid
	kill "$(cat "$pid")" && wait "$(cat "$pid")" 2>/dev/null
	rm -f "$pid"
}
# answer_next I PORT: that server answers as its next mode says.
answer_next() { kill -USR1 "$(cat "$W/answer-b$1-$2.pid")"; }

setup() {
	topo_up "$P" "$W" 2 >/dev/null 2>&1 || die "topology"
	ringlb attach eth0 >/dev/null || die "attach"
	ringlb vip add "$DNS4" --check dns:who.test "${FAST[@]}" &&
		ringlb vip add "$DNS6" --check dns:who.test "${FAST[@]}" &&
		ringlb vip add "$PLAIN" --check udp:ping%0a:pong "${FAST[@]}" || die "vip add"
	for i in 1 2; do
		dnsmasq_on "$i"
		answer_on "$i" "$TOPO_VIP4" 7000 "reply:pong $i,reply:pang,reply:pong again"
		ringlb backend add "$DNS4" "d$i" "$(topo_backend_addr4 "$i")" >/dev/null &&
			ringlb backend add "$DNS6" "d$i" "$(topo_backend_addr6 "$i")" >/dev/null &&
			ringlb backend add "$PLAIN" "u$i" "$(topo_backend_addr4 "$i")" >/dev/null ||
			die "backend add $i"
	done
	# nsenter execs ringlb: $! is the daemon itself.
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics "$METRICS" --verify-interval 3600 >>"$W/daemon.log" 2>&1 &
	DPID=$!
	for t in $(seq 1 250); do grep -q 'ready: serving' "$W/daemon.log" && return 0; sleep 0.02; done
	die "the daemon did not start: $(tail -3 "$W/daemon.log")"
}

# --- DNS ---------------------------------------------------------------------------------------
t_dns_up() {
	local got="" v i t answer
	for v in "$DNS4" "$DNS6"; do
		for i in 1 2; do
			for t in $(seq 1 100); do passes "$v" "d$i" && break; sleep 0.05; done
			passes "$v" "d$i" || got+="never "
			got+="$v d$i $(health "$v" "d$i"), results ok and failed $(results "$v" "d$i"); "
		done
	done
	# The servers answer the query the checks send: dig, from the client through the VIP.
	answer=$(on_client 1 dig +short +time=1 +tries=2 @"$TOPO_VIP4" who.test A)
	[ "$(echo "$got" | grep -c never)" -eq 0 ] && [[ $answer == 198.18.99.[12] ]] &&
		pass "dnsmasq answering who.test on both backends: ${got%; }; dig through the VIP gets $answer" ||
		fail "DNS checks: ${got%; }; dig through the VIP: '$answer'"
}

t_dns_stopped() {
	local took why
	dnsmasq_off 2
	took=$(wait_health "$DNS4" d2 down 5)
	why=$(why_down "$DNS4" d2)
	[ "$took" != never ] && [ "$why" = "Connection refused" ] && [ "$(health "$DNS4" d1)" = up ] &&
		pass "dnsmasq on b2 stopped: d2 down after $took ('$why': the port unreachable), d1 stays up" ||
		fail "dnsmasq on b2 stopped: d2 down after $took ('$why'), d1 $(health "$DNS4" d1)"
	dnsmasq_on 2
	took=$(wait_health "$DNS4" d2 up 5)
	[ "$took" != never ] && pass "dnsmasq on b2 started again: up after $took" ||
		fail "d2 never came back up"
}

t_nxdomain() {
	local took why status
	dnsmasq_name 2 other.test
	took=$(wait_health "$DNS4" d2 down 5)
	why=$(why_down "$DNS4" d2)
	status=$(in_b 2 dig +time=1 @"$TOPO_VIP4" who.test A | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
	[ "$took" != never ] && [ "$why" = "DNS NXDOMAIN" ] && [ "$status" = NXDOMAIN ] &&
		[ "$(in_b 2 dig +short +time=1 @"$TOPO_VIP4" other.test A)" = 198.18.99.2 ] &&
		pass "b2's dnsmasq answers other.test (dig: 198.18.99.2), who.test $status: d2 down after $took ('$why')" ||
		fail "NXDOMAIN: d2 down after $took, why '$why', dig status '$status'"
	dnsmasq_name 2 who.test
	took=$(wait_health "$DNS4" d2 up 5)
	[ "$took" != never ] && pass "who.test again: up after $took" || fail "d2 never came back up"
}

# dns_server_turns I MODES WANT: dnsmasq on backend I gives way to tests/tools/udpanswer.py
# answering as MODES say (after --); once its first mode's answers bring dI up, its
# second's must bring it down, for the reason WANT (a pattern). dnsmasq is back after.
dns_server_turns() {
	local i=$1 modes=$2 want=$3 took why
	shift 3
	dnsmasq_off "$i"
	answer_on "$i" "$TOPO_VIP4" 53 "$modes" "$@"
	# dI went down when dnsmasq stopped (the port unreachable): up again is a transition.
	took=$(wait_health "$DNS4" "d$i" up 5)
	if [ "$took" = never ]; then
		fail "d$i not up on udpanswer.py's ${modes%%,*} answers"
	else
		answer_next "$i" 53
		took=$(wait_health "$DNS4" "d$i" down 5)
		why=$(why_down "$DNS4" "d$i")
		# shellcheck disable=SC2053
		[ "$took" != never ] && [[ $why == $want ]] &&
			pass "answers that bring d$i up (${modes%%,*}), then ${modes#*,}: d$i down after $took ('$why')" ||
			fail "${modes#*,}: d$i down after $took, why '$why', want '$want'"
	fi
	answer_off "$i" 53
	dnsmasq_on "$i"
	[ "$(wait_health "$DNS4" "d$i" up 5)" != never ] || fail "d$i never came back up"
}

t_wrong_id() {
	dns_server_turns 2 dns,dns-wrong-id "no answer in 80 ms ([1-9]* ignored: DNS ID [0-9]*, want [0-9]*)"
}

# The same answers from the backend's own address, not the VIP asked: the connected
# socket never reads them (nothing ignored: nothing came to it).
t_wrong_source() {
	dns_server_turns 2 dns,dns-other-source "no answer in 80 ms" --from "$(topo_backend_addr4 2):53"
}

# --- plain UDP -----------------------------------------------------------------------------------
t_udp() {
	local took got="" why i t
	for i in 1 2; do
		for t in $(seq 1 100); do passes "$PLAIN" "u$i" && break; sleep 0.05; done
		passes "$PLAIN" "u$i" || got+="never "
		got+="u$i $(health "$PLAIN" "u$i"), results ok and failed $(results "$PLAIN" "u$i"); "
	done
	[[ $got != *never* ]] && pass "udp:ping%0a:pong, servers replying 'pong 1' and 'pong 2': ${got%; }" ||
		fail "plain UDP: ${got%; }"
	answer_next 2 7000
	took=$(wait_health "$PLAIN" u2 down 5)
	why=$(why_down "$PLAIN" u2)
	[ "$took" != never ] && [ "$why" = "a reply of 4 bytes that does not start as expected" ] &&
		[ "$(health "$PLAIN" u1)" = up ] &&
		pass "b2 replying 'pang': u2 down after $took ('$why'), u1 stays up" ||
		fail "a wrong reply: u2 down after $took, why '$why'"
	answer_next 2 7000
	took=$(wait_health "$PLAIN" u2 up 5)
	[ "$took" != never ] && pass "replying 'pong again': u2 up after $took" || fail "u2 never came back up"
}

# --- refusals --------------------------------------------------------------------------------------
check_of_dns4() { ringlb vip check "$DNS4" --check "$1"; }
t_refused() {
	local long
	long=$(printf 'a%.0s' $(seq 1 64)).test
	refusals "bad --check values" check_of_dns4 dns: dns:who..test "dns:$long" "dns:who test" \
		udp: udp:ping udp::pong "udp:pi ng:pong" udp:ping:po:ng udp:%zz:pong udp:%4:pong \
		dnss:who.test
}

suite_test dns_up
suite_test dns_stopped dns_up
suite_test nxdomain dns_up
suite_test wrong_id dns_up
suite_test wrong_source dns_up
suite_test udp
suite_test refused
suite_main "$@"
