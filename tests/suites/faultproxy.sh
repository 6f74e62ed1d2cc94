# SPDX-License-Identifier: GPL-2.0-only
#
# The fault-injecting proxy in front of etcd (tests/tools/faultproxy.py) for
# the suites: start it in a namespace, set and clear its faults, read its
# counters. Source it after tests/suites/lib.sh (ROOT set; die() for a proxy
# that does not start). The control API is described at the top of
# faultproxy.py; faultproxy_selftest.sh shows each fault at work.
#
#   faultproxy_up "$NS" 127.0.0.1:23791 127.0.0.1:23790 127.0.0.1:23792 "$W"
#   fault "$NS" 127.0.0.1:23792 /v3/kv/range delay ms=800 count=1
#   fault "$NS" 127.0.0.1:23792 '*' down
#   fault_clear "$NS" 127.0.0.1:23792 [PATH]
#   fault_stats "$NS" 127.0.0.1:23792 | jq '.paths["/v3/kv/txn"].forwarded'
#   fault_cut_watches "$NS" 127.0.0.1:23792
# shellcheck shell=bash

FAULTPROXY_PY=/usr/bin/python3

# faultproxy_up NS LISTEN UPSTREAM CONTROL LOGDIR: the proxy in namespace NS,
# clients on LISTEN (HOST:PORT; port 0 for any), forwarding to UPSTREAM, its
# control endpoint on CONTROL. Its per-request log is FAULTPROXY_LOG
# (LOGDIR/faultproxy-PORT.log), its output beside it (.out). Returns once it
# listens: FAULTPROXY_PID is its pid, FAULTPROXY_LISTEN the HOST:PORT it
# listens on. Several may run (different ports): each faultproxy_up sets the
# three variables anew, so save those of the others.
faultproxy_up() {
	local ns=$1 listen=$2 upstream=$3 control=$4 dir=$5 out _
	mkdir -p "$dir"
	FAULTPROXY_LOG="$dir/faultproxy-${listen##*:}.log"
	out="${FAULTPROXY_LOG%.log}.out"
	ip netns exec "$ns" "$FAULTPROXY_PY" "$ROOT/tests/tools/faultproxy.py" --listen "$listen" \
		--upstream "$upstream" --control "$control" --log "$FAULTPROXY_LOG" >"$out" 2>&1 &
	FAULTPROXY_PID=$!
	for _ in $(seq 1 100); do
		FAULTPROXY_LISTEN=$(sed -n 's/^faultproxy: listening on //p' "$out")
		[ -n "$FAULTPROXY_LISTEN" ] && return 0
		kill -0 "$FAULTPROXY_PID" 2>/dev/null || break
		sleep 0.05
	done
	die "faultproxy on $listen did not start: $(tail -3 "$out")"
}

# faultproxy_call NS CONTROL METHOD ROUTE [JSON]: one control call; its JSON
# answer on standard output. Fails unless 200, saying why in one line on
# standard error ("faultproxy /fault: HTTP 400: {"error":...}").
faultproxy_call() {
	local ns=$1 control=$2 method=$3 route=$4 body=${5:-} answer code
	answer=$(ip netns exec "$ns" curl -sS --max-time 5 -w '\n%{http_code}' -X "$method" \
		${body:+--data-binary "$body"} "http://$control$route" 2>&1)
	code=${answer##*$'\n'}
	answer=${answer%$'\n'*}
	if [ "$code" != 200 ]; then
		echo "faultproxy $route: HTTP $code: $(tr '\n' ' ' <<<"$answer" | sed 's/ *$//')" >&2
		return 1
	fi
	echo "$answer"
}

# fault NS CONTROL PATH FAULT [NAME=VALUE...]: set FAULT (delay, reset,
# status, lost, blackhole, down) on requests to PATH ("*": every path), with
# its fields: ms=800, count=1, status=500, code=13, message=TEXT (a VALUE of
# digits is a number, anything else a string). The answer on standard output.
fault() {
	local ns=$1 control=$2 json kv
	json=$(jq -cn --arg path "$3" --arg fault "$4" '{path: $path, fault: $fault}') || return 1
	shift 4
	for kv in "$@"; do
		case $kv in
		*=*) ;;
		*) echo "fault: not NAME=VALUE: $kv" >&2; return 1 ;;
		esac
		if [[ ${kv#*=} =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then
			json=$(jq -c --arg k "${kv%%=*}" --argjson v "${kv#*=}" '.[$k] = $v' <<<"$json")
		else
			json=$(jq -c --arg k "${kv%%=*}" --arg v "${kv#*=}" '.[$k] = $v' <<<"$json")
		fi
	done
	faultproxy_call "$ns" "$control" POST /fault "$json"
}

# fault_clear NS CONTROL [PATH]: every fault (and down), or PATH's only.
fault_clear() {
	faultproxy_call "$1" "$2" POST /clear "${3:+$(jq -cn --arg p "$3" '{path: $p}')}"
}

# fault_stats NS CONTROL: the proxy's counters (JSON, one line).
fault_stats() { faultproxy_call "$1" "$2" GET /stats; }

# fault_cut_watches NS CONTROL: reset every open watch stream; {"ok":true,"cut":N}.
fault_cut_watches() { faultproxy_call "$1" "$2" POST /cut-watches; }
