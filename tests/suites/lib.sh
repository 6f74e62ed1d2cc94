# SPDX-License-Identifier: GPL-2.0-only
#
# Helpers the shell suites share: suites of named tests (suite_test,
# suite_main), the root rule, the TAP-like report lines, the kinds of test
# network (topo_session, routed_session, veth_session) and what tests on
# them ask of clients, counters and secrets. Source it.

FAILS=0
# No test reads this machine's /etc/ringlb/ringlb.conf: a test that wants one names it.
export RINGLB_CONFIG=/dev/null

# jq's language through gojq, started in 2.2 ms of CPU where jq 1.6 takes 23
# compiling its builtins (the suites start it some 2,000 times in make test).
# Exported for child scripts. Where the two differ: gojq prints an object's keys
# sorted, integers exactly, and `-e` on no input at all exits 4 where jq 1.6
# exits 0, so a check of an empty answer fails, as it should.
if ! command -v gojq >/dev/null; then
	echo "tests: gojq is missing (scripts/deps.sh installs it)" >&2
	exit 1
fi
jq() { gojq "$@"; }
export -f jq

pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }

# --- suites ------------------------------------------------------------------------
#
# A suite is a script of named tests over one shared set-up:
#
#   setup() { ... }                 # optional: the network, the attach, the VIPs
#   t_spread() { ... }              # a test: pass/fail lines, never exits
#   t_drain() { ... }
#   suite_test spread               # the tests, in the order they run
#   suite_test drain
#   suite_test moves drain          # moves needs drain: it runs after it, and
#                                   # asking for moves alone runs drain first
#   suite_main "$@"
#
# `tests/suites/NAME.sh` runs every test; `NAME.sh TEST...` the set-up and
# those (with what they need), in the suite's order; `NAME.sh --list` names
# them. Each test is announced ("-- NAME") and timed; the last line says how
# many checks failed, and the exit status is 0 only when none did.

SUITE_TESTS=()
declare -A SUITE_NEEDS=()

# suite_test NAME [NEEDS...]: test NAME (the function t_NAME) runs here, after NEEDS.
suite_test() {
	local name=$1
	shift
	declare -F "t_$name" >/dev/null || { echo "suite: no function t_$name" >&2; exit 2; }
	SUITE_TESTS+=("$name")
	SUITE_NEEDS[$name]="$*"
}

# suite_select NAME: NAME and, first, everything it needs (SELECTED[NAME]=1).
suite_select() {
	local need
	[ -n "${SELECTED[$1]:-}" ] && return
	SELECTED[$1]=1
	for need in ${SUITE_NEEDS[$1]}; do suite_select "$need"; done
}

# suite_main [--list | TEST...]: run the set-up and the tests asked (all by default).
suite_main() {
	local suite t start
	declare -gA SELECTED=()
	suite=$(basename "$0" .sh)
	if [ "${1:-}" = --list ]; then
		printf '%s\n' "${SUITE_TESTS[@]}"
		exit 0
	fi
	for t in "$@"; do
		if [ -z "${SUITE_NEEDS[$t]+x}" ]; then
			echo "$suite: no test '$t' (its tests: ${SUITE_TESTS[*]})" >&2
			exit 2
		fi
		suite_select "$t"
	done
	if [ $# -eq 0 ]; then
		for t in "${SUITE_TESTS[@]}"; do SELECTED[$t]=1; done
	fi
	if declare -F setup >/dev/null; then
		setup
	fi
	for t in "${SUITE_TESTS[@]}"; do
		[ -n "${SELECTED[$t]:-}" ] || continue
		echo "-- $t"
		start=$(date +%s%N)
		"t_$t"
		echo "-- $t: $(( ($(date +%s%N) - start) / 1000000 )) ms"
	done
	echo "$suite: $FAILS failed"
	[ $FAILS -eq 0 ]
}

# require_root NAME: these tests need root. Without it they skip, except under
# CI=true, where skipping would hide them, so they fail.
require_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "$1: CI=true but not root: these tests must run" >&2
		exit 1
	fi
	echo "$1: skipped: needs root"
	exit 0
}

# topo_session NAME PREFIX: the working set of a test on scripts/topology.sh:
# P (namespace prefix), W (scratch directory), PIN (bpffs directory), a trap
# that removes all three however the test ends, ringlb() run in the
# balancer's namespace against them, and die() for set-up failures.
# Needs ROOT and topology.sh sourced.
topo_session() {
	session_names "$1" "$2"
	trap 'topo_down "$P" "$W"; rm -rf "$PIN" "$W"' EXIT
}

# scratch_dir: W, a new scratch directory, made the working directory: a tool that
# writes beside itself (trafgen's .tmp_mmap.*, a core file) writes there, never in
# the tree, which upgrade.sh copies while other suites run.
scratch_dir() {
	W=$(mktemp -d) && cd "$W" || {
		echo "${TEST_NAME:-$(basename "$0" .sh)}: no scratch directory" >&2
		exit 1
	}
}

# session_names NAME PREFIX: TEST_NAME, P, W, PIN and RINGLB_NS of a session.
session_names() {
	TEST_NAME=$1
	P=$2$$
	scratch_dir
	PIN=/sys/fs/bpf/ringlb-$P
	RINGLB_NS=${P}lb
}

# routed_session NAME PREFIX: the same on scripts/routed.sh (sourced first),
# the network brought up, its jobs killed on exit, be I ARGS (ringlb on
# backend I, on its own state and pins) and client ARGS (in the client).
routed_session() {
	session_names "$1" "$2"
	trap 'kill $(jobs -p) 2>/dev/null; routed_down "$P" "$W"; rm -rf "$PIN" "$PIN"-b* "$W"' EXIT
	routed_up "$P" "$W" || die "routed network"
}
be() {
	local i=$1
	shift
	nsenter --net="/run/netns/${P}b$i" "$ROOT/build/ringlb" --state "$W/b$i/state.json" \
		--pin-dir "$PIN-b$i" "$@"
}
client() { ip netns exec "${P}c1" "$@"; }

# syn_flood ADDR SECONDS: spoofed SYNs from random sources and ports to ADDR:80,
# as fast as trafgen sends them from the routed network's client, for SECONDS:
# trafgen stops early now and then ("Flushing TX_RING failed", exit 1), and is
# started again until the time is up (a pause after each early stop, and their
# count said). It makes a scratch file (.tmp_mmap.*) in its working directory:
# every suite runs it in $W, never in the tree (upgrade.sh copies the tree while
# other suites run).
syn_flood() {
	local r1mac c1mac left end=$((SECONDS + $2)) early=0
	r1mac=$(ip -n "${P}r1" -j link show eth0 | jq -r '.[0].address')
	c1mac=$(ip -n "${P}c1" -j link show eth0 | jq -r '.[0].address')
	printf '{ eth(da=%s, sa=%s, type=0x0800),\n  ipv4(sa=drnd(), da=%s, ttl=64),\n  tcp(sp=drnd(), dp=80, syn) }\n' \
		"$r1mac" "$c1mac" "$1" >"$W/syn.trafgen"
	# timeout 0 would be no timeout at all: the seconds left are counted first.
	while left=$((end - SECONDS)) && [ "$left" -gt 0 ]; do
		client timeout "$left" env -C "$W" trafgen -o eth0 -c "$W/syn.trafgen" --cpus 1 -q \
			>/dev/null 2>&1 && continue
		[ $? -eq 124 ] && continue
		early=$((early + 1))
		sleep 0.2
	done
	[ "$early" -eq 0 ] || echo "     (the flood's trafgen stopped early $early times and was started again)"
}

# veth_session PREFIX: a private network namespace NS with one veth pair
# (eth0 at 198.18.0.2/24, eth1), W (scratch directory), PIN (bpffs
# directory), a trap that removes all three however the script ends, and
# ringlb() run in NS against them. Needs ROOT.
veth_session() {
	NS=$1$$
	scratch_dir
	PIN=/sys/fs/bpf/ringlb-$NS
	RINGLB_NS=$NS
	trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$PIN" "$W"' EXIT
	ip netns add "$NS"
	ip -n "$NS" link add eth0 type veth peer name eth1
	ip -n "$NS" link set lo up
	ip -n "$NS" link set eth0 up
	ip -n "$NS" link set eth1 up
	ip -n "$NS" addr add 198.18.0.2/24 dev eth0
}

# ringlb ARGS: the CLI in the session's namespace, on its state file and pins.
ringlb() {
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" "$@"
}

# on_client N COMMAND...: COMMAND in the topology's client namespace N.
on_client() { local c=$1; shift; ip netns exec "${P}c$c" "$@"; }

# endpoint ADDR PORT: a client endpoint as lookup takes it (brackets for IPv6).
endpoint() { case $1 in *:*) echo "[$1]:$2" ;; *) echo "$1:$2" ;; esac; }

# lookup_each JQ_OPTION FILTER VIP ENDPOINT...: jq FILTER over each flow's answer of
# one `ringlb lookup` (one flow answers an object, several an array), in one jq.
lookup_each() {
	local opt=$1 filter=$2 vip=$3
	shift 3
	ringlb lookup --json "$vip" "$@" | jq "$opt" "if type == \"array\" then .[] else . end | $filter"
}

# lookups_json VIP ENDPOINT...: each flow's answer, one JSON object a line.
lookups_json() { lookup_each -c . "$@"; }

# backend_field VIP NAME FIELD: a field of backend NAME of VIP in `ringlb show --json`.
backend_field() {
	ringlb show --json | jq -r --arg v "$1" --arg b "$2" \
		".vips[] | select(.vip == \$v) | .backends[] | select(.name == \$b) | .$3"
}

# vip_digest VIP: the digest of the ring the kernel serves for VIP.
vip_digest() {
	ringlb show --json | jq -r --arg v "$1" '.vips[] | select(.vip == $v) | .kernel_ring_digest'
}

# lookups VIP ENDPOINT...: the backend of each flow, a line each, from one lookup.
lookups() { lookup_each -r .backend "$@"; }

# downloads_started DIR N: every one of the N downloads writing DIR/1 .. DIR/N has its
# first KiB (20 s at most).
downloads_started() {
	local dir=$1 n=$2 _
	for _ in $(seq 1 200); do
		[ "$(find "$dir" -maxdepth 1 -regex '.*/[0-9]+' -size +1023c | wc -l)" -ge "$n" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

# url ADDR: the base URL of an address (brackets for IPv6).
url() { case $1 in *:*) echo "http://[$1]" ;; *) echo "http://$1" ;; esac; }

# drops: frames the balancer has dropped so far, every reason.
drops() {
	ringlb stats --json | jq '[.reasons | to_entries[] | select(.key | startswith("drop_")) |
		.value.packets] | add'
}

# secret_file PATH: a new random deployment secret there (32 hex digits, mode 0600).
secret_file() {
	head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"
	echo >>"$1"
	chmod 600 "$1"
}

# etcd_up NS CLIENT_ADDR:PORT PEER_PORT DIR: a one-member etcd (Debian's etcd-server) in
# namespace NS, serving clients on CLIENT_ADDR:PORT, its data and log in DIR (kept across
# restarts); ETCD is its pid. Returns once it answers.
etcd_up() {
	local ns=$1 client=$2 peer=$3 dir=$4
	ip netns exec "$ns" etcd --name e --data-dir "$dir/data" \
		--listen-client-urls "http://$client" --advertise-client-urls "http://$client" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "e=http://127.0.0.1:$peer" >>"$dir/etcd.log" 2>&1 &
	ETCD=$!
	etcd_wait "$ns" "$dir" --endpoints "$client"
}

# etcd_up_tls NS HOST:PORT PEER_PORT DIR CERTS: etcd as etcd_up, its clients
# over mutual TLS (https://HOST:PORT, --client-cert-auth) with the
# certificates test_pki made in CERTS.
etcd_up_tls() {
	local ns=$1 client=$2 peer=$3 dir=$4 c=$5
	ip netns exec "$ns" etcd --name e --data-dir "$dir/data" \
		--listen-client-urls "https://$client" --advertise-client-urls "https://$client" \
		--cert-file "$c/server.pem" --key-file "$c/server-key.pem" \
		--client-cert-auth --trusted-ca-file "$c/ca.pem" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "e=http://127.0.0.1:$peer" >>"$dir/etcd.log" 2>&1 &
	ETCD=$!
	etcd_wait "$ns" "$dir" --endpoints "https://$client" --cacert "$c/ca.pem" \
		--cert "$c/admin.pem" --key "$c/admin-key.pem"
}

# etcd_wait NS DIR ETCDCTL_ARGS...: until etcd answers (or die).
etcd_wait() {
	local ns=$1 dir=$2 t
	shift 2
	for t in $(seq 1 100); do
		ip netns exec "$ns" etcdctl "$@" endpoint health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "etcd did not start: $(tail -3 "$dir/etcd.log")"
}

# test_pki DIR: a test CA (ca.pem) and, signed by it, etcd's server
# certificate for 127.0.0.1 and 198.18.20.5 (server.pem), a host's client
# certificate (host.pem) and an administrator's (admin.pem); a second CA
# (other-ca.pem) with a client certificate of its own (other-host.pem).
# Each KEY in NAME-key.pem. No certificate has a common name: etcd 3.4's
# JSON gateway refuses a client's that has one, and its server certificate
# must also be good for clients (docs/traps.md).
test_pki() {
	local d=$1
	mkdir -p "$d"
	pki_ca "$d" ca && pki_ca "$d" other-ca &&
		pki_cert "$d" server ca "IP:127.0.0.1,IP:198.18.20.5" serverAuth,clientAuth &&
		pki_cert "$d" host ca DNS:lb.test clientAuth &&
		pki_cert "$d" admin ca DNS:admin.test clientAuth &&
		pki_cert "$d" other-host other-ca DNS:lb.test clientAuth || die "test certificates"
}
pki_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$1/$2-key.pem" -out "$1/$2.pem" -subj "/O=ringlb test/OU=$2" 2>>"$1/openssl.log"
}
# pki_cert DIR NAME CA SAN EKU [SUBJECT]
pki_cert() {
	local d=$1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$d/$2-key.pem" -out "$d/$2.csr" -subj "${6:-/O=ringlb test/OU=$2}" 2>>"$d/openssl.log" &&
		printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$4" "$5" >"$d/$2.ext" &&
		openssl x509 -req -in "$d/$2.csr" -CA "$d/$3.pem" -CAkey "$d/$3-key.pem" -CAcreateserial \
			-days 2 -extfile "$d/$2.ext" -out "$d/$2.pem" 2>>"$d/openssl.log"
}

# refusals WHAT FN VALUE...: `FN VALUE` (a function of the suite that runs the command
# with that bad value) is refused for each VALUE: one line, exit 2, $W/state.json
# unchanged; one pass or fail line for WHAT, each value that was not refused said.
refusals() {
	local what=$1 fn=$2 before v out rc ok=0 n=0
	shift 2
	before=$(sha256sum <"$W/state.json")
	for v in "$@"; do
		n=$((n + 1))
		out=$("$fn" "$v" 2>&1)
		rc=$?
		if [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
			[ "$(sha256sum <"$W/state.json")" = "$before" ]; then
			ok=$((ok + 1))
		else
			echo "     $what '$v': exit $rc, '$out'"
		fi
	done
	[ $ok -eq $n ] && pass "refused: $ok of $n $what got one line and exit 2, the state unchanged ('$out')" ||
		fail "refused: $ok of $n $what refused cleanly"
}

# die WHAT: stop the script (TEST_NAME says which) on a failure that is not a check.
die() { echo "$TEST_NAME: setup failed: $*" >&2; exit 1; }
