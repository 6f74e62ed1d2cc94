#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The fault-injecting proxy (tests/tools/faultproxy.py, driven through
# tests/suites/faultproxy.sh) in front of a real etcd (Debian's etcd-server)
# on the loopback of a private namespace, driven by curl against etcd's JSON
# gateway through it: what the suites that use it rely on. Its tests
# (tests/suites/lib.sh runs them; `faultproxy_selftest.sh TEST...` runs some):
#
#   pass       a put and a range go through unchanged (the value reads back,
#              etcd holds it); two requests on one connection (keep-alive)
#   delay      delay 800 ms on the range: it takes >= 0.8 s, a put does not
#   reset      the client's connection reset (curl exit 56)
#   status     HTTP 503 with etcd's error shape, nothing forwarded
#   lost       a put fails for the client, but etcd holds its value
#   blackhole  no answer: curl --max-time 1 times out (exit 28)
#   count      count 1: the fault once, then the fault is gone
#   down       connections refused (curl exit 7), served again after /clear
#   watch      a watch through the proxy gets a put made on etcd directly;
#              /cut-watches ends it
#   robust     a malformed request is answered 400 and the proxy serves on;
#              an upstream that is down is answered 502; the control
#              endpoint refuses an unknown fault and bad JSON in one line
#   stats      /stats counts requests, faults and forwards per path as made,
#              the log has a line for each
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/tests/suites/faultproxy.sh"

require_root faultproxy_selftest

TEST_NAME=faultproxy_selftest
NS=rfp$$
scratch_dir
ETCD_AT=127.0.0.1:23790
PROXY=127.0.0.1:23791
CTL=127.0.0.1:23792
ETCD=
FAULTPROXY_PID=
PROXY2=
WATCH=

cleanup() {
	local p
	for p in $WATCH $PROXY2 $FAULTPROXY_PID $ETCD; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

in_ns() { ip netns exec "$NS" "$@"; }
b64() { printf %s "$1" | base64 -w0; }
# etcd_get KEY: KEY's value, read from etcd directly.
etcd_get() { in_ns etcdctl --endpoints "$ETCD_AT" get --print-value-only "$1"; }
# value_of REPLY: the first value of a range's reply, decoded.
value_of() { jq -r '.kvs[0].value // empty' <<<"$1" | base64 -d; }
put_json() { printf '{"key":"%s","value":"%s"}' "$(b64 "$1")" "$(b64 "$2")"; }
range_json() { printf '{"key":"%s"}' "$(b64 "$1")"; }

# req PATH JSON [CURL_ARGS...]: POST JSON to PATH through the proxy (5 s at
# most). RC: curl's exit status, CODE: the HTTP status (000 for none), BODY,
# ERR: curl's complaint, MS: how long it took.
req() {
	local path=$1 json=$2 start
	shift 2
	rm -f "$W/body"
	start=$(date +%s%N)
	RC=0
	CODE=$(in_ns curl -sS -o "$W/body" -w '%{http_code}' --max-time 5 -X POST \
		--data-binary "$json" "$@" "http://$PROXY$path" 2>"$W/curl.err") || RC=$?
	MS=$((($(date +%s%N) - start) / 1000000))
	BODY=$(cat "$W/body" 2>/dev/null)
	ERR=$(tr '\n' ' ' <"$W/curl.err" | sed 's/ *$//')
}
# set_fault PATH FAULT [NAME=VALUE...]: the fault set, or die.
set_fault() { fault "$NS" "$CTL" "$@" >/dev/null || die "setting $*"; }
clear_faults() { fault_clear "$NS" "$CTL" >/dev/null || die "clearing the faults"; }
stats() { fault_stats "$NS" "$CTL"; }

setup() {
	ip netns add "$NS" && ip -n "$NS" link set lo up || die "namespace $NS"
	mkdir -p "$W/etcd"
	etcd_up "$NS" "$ETCD_AT" 23800 "$W/etcd"
	faultproxy_up "$NS" "$PROXY" "$ETCD_AT" "$CTL" "$W"
}

t_pass() {
	local put_rc put_code got two
	req /v3/kv/put "$(put_json fp/pass v1)"
	put_rc=$RC put_code=$CODE
	req /v3/kv/range "$(range_json fp/pass)"
	got=$(value_of "$BODY")
	[ "$put_rc/$put_code" = 0/200 ] && [ "$RC/$CODE" = 0/200 ] && [ "$got" = v1 ] &&
		[ "$(etcd_get fp/pass)" = v1 ] &&
		pass "a put and a range through the proxy: $put_code and $CODE, the value reads back ($got), etcd holds it" ||
		fail "pass-through: put $put_rc/$put_code, range $RC/$CODE '$BODY' $ERR; etcd holds '$(etcd_get fp/pass)'"
	# One curl, two URLs: the second on the first's connection.
	two=$(in_ns curl -sS --max-time 5 -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' -X POST \
		--data-binary "$(range_json fp/pass)" "http://$PROXY/v3/kv/range" "http://$PROXY/v3/kv/range" 2>&1)
	[ "$two" = "200:1 200:0 " ] && pass "two requests on one connection (keep-alive): $two(status:connects)" ||
		fail "keep-alive: '$two' (want 200:1 200:0)"
}

t_delay() {
	local range_ms range_code
	set_fault /v3/kv/range delay ms=800
	req /v3/kv/range "$(range_json fp/pass)"
	range_ms=$MS range_code=$RC/$CODE
	req /v3/kv/put "$(put_json fp/delay v1)"
	[ "$range_code" = 0/200 ] && [ "$range_ms" -ge 800 ] && [ "$RC/$CODE" = 0/200 ] && [ "$MS" -lt 800 ] &&
		pass "delay 800 ms on /v3/kv/range: the range took $range_ms ms (200), a put $MS ms" ||
		fail "delay: range $range_code in $range_ms ms, put $RC/$CODE in $MS ms $ERR"
	clear_faults
}

t_reset() {
	set_fault /v3/kv/range reset
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$RC" = 56 ] && [[ $ERR == *"reset"* ]] &&
		pass "reset: curl exit $RC ($ERR)" || fail "reset: curl exit $RC, HTTP $CODE ($ERR)"
	clear_faults
}

t_status() {
	set_fault /v3/kv/range status
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$RC/$CODE" = 0/503 ] && [ "$(jq -r '"\(.error)/\(.code)/\(.message)"' <<<"$BODY")" = \
		"faultproxy: injected/14/faultproxy: injected" ] &&
		pass "status: HTTP $CODE, $BODY" || fail "status: curl $RC, HTTP $CODE, '$BODY' $ERR"
	set_fault /v3/kv/range status status=500 code=13 message=boom
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$RC/$CODE" = 0/500 ] && [ "$(jq -r '"\(.error)/\(.code)"' <<<"$BODY")" = boom/13 ] &&
		pass "status 500 code 13 message boom: HTTP $CODE, $BODY" || fail "status 500: curl $RC, HTTP $CODE, '$BODY'"
	clear_faults
}

t_lost() {
	set_fault /v3/kv/put lost
	req /v3/kv/put "$(put_json fp/lost written)"
	[ "$RC" != 0 ] && [ "$(etcd_get fp/lost)" = written ] &&
		pass "lost: the put failed for curl (exit $RC: $ERR), etcd holds its value ($(etcd_get fp/lost))" ||
		fail "lost: curl exit $RC, HTTP $CODE ($ERR), etcd holds '$(etcd_get fp/lost)'"
	clear_faults
}

t_blackhole() {
	set_fault /v3/kv/range blackhole
	req /v3/kv/range "$(range_json fp/pass)" --max-time 1
	[ "$RC" = 28 ] && [ "$MS" -ge 1000 ] &&
		pass "blackhole: curl --max-time 1 timed out (exit $RC) after $MS ms" ||
		fail "blackhole: curl exit $RC, HTTP $CODE after $MS ms ($ERR)"
	clear_faults
}

t_count() {
	local first left
	set_fault /v3/kv/range status count=1
	req /v3/kv/range "$(range_json fp/pass)"
	first=$CODE
	left=$(stats | jq -c .faults)
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$first" = 503 ] && [ "$CODE" = 200 ] && [ "$left" = "{}" ] &&
		pass "count 1: $first, then $CODE; the fault cleared itself (faults left: $left)" ||
		fail "count 1: $first then $CODE, faults left $left"
}

# body: a fault that names a body text applies to requests that carry it only.
t_body() {
	local other mine left
	set_fault /v3/kv/range status count=1 body="$(b64 fp/mine)"
	req /v3/kv/range "$(range_json fp/other)"
	other=$CODE
	req /v3/kv/range "$(range_json fp/mine)"
	mine=$CODE
	left=$(stats | jq -c .faults)
	[ "$other" = 200 ] && [ "$mine" = 503 ] && [ "$left" = "{}" ] &&
		pass "body: a range of another key passes ($other), one of the key named faults ($mine), then the fault is spent" ||
		fail "body: other key $other, named key $mine, faults left $left"
	set_fault /v3/kv/range status count=1 skip=1
	req /v3/kv/range "$(range_json fp/mine)"
	other=$CODE
	req /v3/kv/range "$(range_json fp/mine)"
	mine=$CODE
	[ "$other" = 200 ] && [ "$mine" = 503 ] &&
		pass "skip 1: the first request passes ($other), the second faults ($mine)" ||
		fail "skip 1: $other then $mine"
}

t_down() {
	local down_rc down
	set_fault '*' down
	down=$(stats | jq .down)
	req /v3/kv/range "$(range_json fp/pass)"
	down_rc=$RC
	clear_faults
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$down" = true ] && [ "$down_rc" = 7 ] && [ "$RC/$CODE" = 0/200 ] &&
		pass "down: connections refused (curl exit $down_rc), after /clear served again ($CODE)" ||
		fail "down: stats down $down, curl exit $down_rc; after /clear $RC/$CODE $ERR"
}

# wait_for FILE TEXT: until FILE holds TEXT (5 s at most).
wait_for() {
	local _
	for _ in $(seq 1 100); do
		grep -qF "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

t_watch() {
	local open cut rc start ms after
	in_ns curl -sS -N --max-time 15 -X POST --data-binary \
		"{\"create_request\":{\"key\":\"$(b64 fp/watch)\"}}" "http://$PROXY/v3/watch" \
		>"$W/watch.out" 2>"$W/watch.err" &
	WATCH=$!
	wait_for "$W/watch.out" '"created":true' || fail "watch: not created: $(cat "$W/watch.out" "$W/watch.err")"
	in_ns etcdctl --endpoints "$ETCD_AT" put fp/watch event1 >/dev/null
	if wait_for "$W/watch.out" "\"value\":\"$(b64 event1)\""; then
		pass "a watch through the proxy got the put made on etcd directly (fp/watch = event1)"
	else
		fail "watch: no event: $(cat "$W/watch.out" "$W/watch.err")"
	fi
	open=$(stats | jq .watches)
	start=$(date +%s%N)
	cut=$(fault_cut_watches "$NS" "$CTL" | jq .cut)
	rc=0
	wait "$WATCH" || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	WATCH=
	after=$(stats | jq .watches)
	[ "$open" = 1 ] && [ "$cut" = 1 ] && [ "$rc" != 0 ] && [ "$ms" -lt 2000 ] && [ "$after" = 0 ] &&
		pass "/cut-watches: $open watch open, $cut cut; curl ended in $ms ms (exit $rc: $(tr '\n' ' ' <"$W/watch.err" | sed 's/ *$//')); open after: $after" ||
		fail "/cut-watches: open $open, cut $cut, curl exit $rc after $ms ms, open after $after"
}

t_robust() {
	local answer main main_log refused bad
	# shellcheck disable=SC2016 # expanded by the inner bash: $0 is the proxy's address
	answer=$(in_ns timeout 3 bash -c 'exec 3<>/dev/tcp/${0%:*}/${0#*:}; printf "garbage\r\n\r\n" >&3; head -1 <&3' \
		"$PROXY" | tr -d '\r')
	req /v3/kv/range "$(range_json fp/pass)"
	[ "$answer" = "HTTP/1.1 400 Bad Request" ] && [ "$RC/$CODE" = 0/200 ] &&
		pass "a malformed request: '$answer'; the proxy serves on ($CODE)" ||
		fail "malformed request: '$answer'; then $RC/$CODE $ERR"
	# A second proxy, its upstream a port nobody listens on.
	main=$FAULTPROXY_PID main_log=$FAULTPROXY_LOG
	faultproxy_up "$NS" 127.0.0.1:23793 127.0.0.1:1 127.0.0.1:23794 "$W"
	PROXY2=$FAULTPROXY_PID FAULTPROXY_PID=$main FAULTPROXY_LOG=$main_log
	answer=$(in_ns curl -sS --max-time 5 -w ' %{http_code}' -X POST --data-binary "$(range_json fp/pass)" \
		http://127.0.0.1:23793/v3/kv/range 2>&1 | tr -d '\n')
	kill "$PROXY2" 2>/dev/null
	wait "$PROXY2" 2>/dev/null
	PROXY2=
	[[ $answer == *" 502" ]] && [ "$(jq -r .code <<<"${answer% *}")" = 14 ] &&
		[[ $(jq -r .error <<<"${answer% *}") == "faultproxy: upstream 127.0.0.1:1: "* ]] &&
		pass "upstream down: $answer" || fail "upstream down: '$answer'"
	refused=$(fault "$NS" "$CTL" /v3/kv/range explode 2>&1)
	bad=$(faultproxy_call "$NS" "$CTL" POST /fault '{"path": ' 2>&1)
	[[ $refused == *"HTTP 400: "*"unknown fault 'explode'"* ]] && [ "$(wc -l <<<"$refused")" = 1 ] &&
		[[ $bad == *"HTTP 400: "*'"error":"bad JSON'* ]] && [ "$(wc -l <<<"$bad")" = 1 ] &&
		[ "$(stats | jq -c .faults)" = "{}" ] &&
		pass "the control endpoint refuses an unknown fault and bad JSON (400, one line each): $refused" ||
		fail "control refusals: '$refused' / '$bad'"
}

t_stats() {
	local before after lines0 lines d _
	before=$(stats)
	lines0=$(grep -c ' POST /v3/kv/' "$FAULTPROXY_LOG")
	req /v3/kv/range "$(range_json fp/pass)"
	req /v3/kv/range "$(range_json fp/pass)"
	set_fault /v3/kv/range status count=1
	req /v3/kv/range "$(range_json fp/pass)"
	set_fault /v3/kv/deleterange reset count=1
	req /v3/kv/deleterange "$(range_json fp/nothing)"
	req /v3/kv/deleterange "$(range_json fp/nothing)"
	after=$(stats)
	# Each request's log line comes once it has been answered.
	for _ in $(seq 1 40); do
		lines=$(grep -c ' POST /v3/kv/' "$FAULTPROXY_LOG")
		[ $((lines - lines0)) -ge 5 ] && break
		sleep 0.05
	done
	d=$(jq -rn --argjson b "$before" --argjson a "$after" '
		def delta(p): [ "requests", "faulted", "forwarded" ] |
			map((($a.paths[p][.] // 0) - ($b.paths[p][.] // 0)) | tostring) | join("/");
		"range \(delta("/v3/kv/range")) deleterange \(delta("/v3/kv/deleterange"))"')
	[ "$d" = "range 3/1/2 deleterange 2/1/1" ] && [ $((lines - lines0)) = 5 ] &&
		[ "$(jq .watches <<<"$after")" = 0 ] &&
		pass "/stats: requests/faulted/forwarded made: $d; $((lines - lines0)) log lines" ||
		fail "/stats: $d (want range 3/1/2 deleterange 2/1/1), $((lines - lines0)) log lines (want 5): $after"
}

suite_test pass
suite_test delay
suite_test reset
suite_test status
suite_test lost
suite_test blackhole
suite_test count
suite_test body
suite_test down
suite_test watch
suite_test robust
suite_test stats
suite_main "$@"
