#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# QUIC connections through ringlb on the routed network (scripts/routed.sh):
# Debian's real client (gtlsclient, ngtcp2) against our HTTP/3 server on
# each backend (build/quic_server), which issues the QUIC-LB connection IDs
# of `ringlb quic-lb config`. The client uploads 4 MiB while it downloads
# 4 MiB (its rebinding sends nothing from the new port in a pure download,
# so the upload keeps it sending), both ways at 20 Mbit/s (tbf at the client
# and at its router) so the transfer is under way when the client moves.
#
#   rebinding   a plaintext QUIC VIP of 3 backends: the client's NAT rebinds
#               (a new port) mid-download; the download completes whole on the
#               backend that began it, which saw the new port; lookup --cid
#               names that backend for its connection ID; tried until the new
#               port is one the VIP's ring, by 5-tuple, would send elsewhere
#   migration   an AES (single-pass) QUIC VIP, stateless: the client moves
#               to its second address mid-download; the same
#   changes     (after migration) the AES VIP's ring changes under a
#               rebinding download: a backend added, then the serving backend
#               drained; the download completes whole on it, and new
#               connections go elsewhere
#   control     the same client through a plain UDP VIP of the same backends
#               breaks when its rebinding lands on another backend: tried
#               until it does (each try's outcome as lookup predicts for its
#               new port), so the test can tell
#   counters    the kernel counted forwarded_quic and forwarded_quic_new
#   verify      the kernel serves the state
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root quic

routed_session quic rqu

Q1="$ROUTED_VIP4B:443/udp"      # plaintext QUIC-LB, flows pinned (QUIC makes none)
Q2="$ROUTED_VIP4B:8443/udp"     # AES single pass, stateless
PLAIN="$ROUTED_VIP4B:4433/udp"  # a plain UDP VIP: the control
CLIENT2=198.18.10.3             # the client's second address (migration)
SIZE=4194304
# Tries of the control before it must have broken once: each lands elsewhere with
# probability 2/3 (3 backends), so 10 tries all on the same backend is (1/3)^10.
CONTROL_TRIES=10

# server I PORT [VIP]: quic_server on backend I at the VIP's PORT, with VIP's QUIC-LB
# configuration for backend bI when VIP is given; its log $W/bI.PORT.log.
server() {
	local i=$1 port=$2 vip=${3:-} cfg=""
	if [ -n "$vip" ]; then
		ringlb quic-lb config "$vip" "b$i" --json >"$W/b$i.$port.json" || return 1
		cfg="--quic-lb $W/b$i.$port.json"
	fi
	# shellcheck disable=SC2086
	ip netns exec "${P}b$i" "$ROOT/build/quic_server" --listen "$ROUTED_VIP4B:$port" \
		--cert "$W/cert.pem" --key "$W/key.pem" --name "b$i" $cfg --log "$W/b$i.$port.log" &
	for _ in $(seq 1 50); do
		grep -q ' ready ' "$W/b$i.$port.log" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# whole FILE: the backend whose body FILE holds whole ("bI\n" repeated, SIZE octets), or nothing.
whole() {
	python3 - "$1" "$SIZE" <<'EOF'
import sys
try:
    got = open(sys.argv[1], "rb").read()
except OSError:
    sys.exit(0)
n = int(sys.argv[2])
name = got[:got.find(b"\n")] if b"\n" in got else b""
unit = name + b"\n"
if name and got == (unit * (n // len(unit) + 1))[:n]:
    print(name.decode())
EOF
}

# fetch VIP PORT TAG [ARGS...]: the client's upload-while-download to VIP's PORT, its
# file under $W/TAG; gtlsclient's exit code. Idle connections end after 5 s.
fetch() {
	local port=$1 tag=$2
	shift 2
	rm -rf "$W/$tag"
	mkdir -p "$W/$tag"
	client timeout 60 gtlsclient -q --exit-on-all-streams-close --timeout=5s \
		--download "$W/$tag" -m POST -d "$W/body" "$@" "$ROUTED_VIP4B" "$port" \
		"https://$ROUTED_VIP4B:$port/$SIZE" >"$W/$tag.client" 2>&1
}

# conn LOG: the scid of the connection LOG accepted last.
conn() { grep ' accept ' "$1" | tail -1 | sed 's/.* scid=\([0-9a-f]*\).*/\1/'; }

# paths LOG SCID: the peers LOG saw that connection on after its first, one a line.
paths() { grep " path scid=$2 " "$1" | sed 's/.* peer=//'; }

# accepts LOG: the connections LOG accepted (0 when there is no LOG yet).
accepts() { local n; n=$(grep -c ' accept ' "$1" 2>/dev/null); echo "${n:-0}"; }

# served_by PORT: the backend whose log accepted a connection since the last mark.
served_by() {
	local i
	for i in 1 2 3; do
		[ -s "$W/b$i.$1.log" ] || continue
		[ "$(accepts "$W/b$i.$1.log")" -gt "${MARK[$i.$1]:-0}" ] && echo "b$i"
	done
}
declare -A MARK=()
mark() {
	local i
	for i in 1 2 3; do
		MARK[$i.$1]=$(accepts "$W/b$i.$1.log")
	done
}

setup() {
	local i
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$W/key.pem" -out "$W/cert.pem" -days 2 -subj /CN=quic.test \
		>/dev/null 2>&1 || die "test certificate"
	head -c "$SIZE" /dev/zero >"$W/body"
	(umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/quic.key")
	ringlb attach eth0 --source "$ROUTED_LB4" --source "$ROUTED_LB6" >/dev/null ||
		die "attach"
	for i in 1 2 3; do
		mkdir -p "$W/b$i"
		be "$i" decap attach eth0 --from "$ROUTED_LB4/32" --vip "$ROUTED_VIP4B" \
			>/dev/null || die "decap attach on b$i"
	done
	ringlb vip add "$Q1" --forward gue --quic-lb rotation=0,sid=1,nonce=8 &&
		ringlb vip add "$Q2" --forward gue --flows stateless \
			--quic-lb "rotation=1,sid=4,nonce=12,key=$W/quic.key" &&
		ringlb vip add "$PLAIN" --forward gue || die "vip add"
	for i in 1 2; do
		ringlb backend add "$Q2" "b$i" "$(routed_backend4 "$i")" || die "backend add b$i"
		server "$i" 8443 "$Q2" || die "quic_server on b$i"
	done
	for i in 1 2 3; do
		ringlb backend add "$Q1" "b$i" "$(routed_backend4 "$i")" &&
			ringlb backend add "$PLAIN" "b$i" "$(routed_backend4 "$i")" || die "backend add b$i"
		server "$i" 443 "$Q1" && server "$i" 4433 || die "quic_server on b$i"
	done
	# 20 Mbit/s each way: 4 MiB takes about 1.7 s, so the client moves mid-transfer.
	ip netns exec "${P}c1" tc qdisc add dev eth0 root tbf rate 20mbit burst 16kb latency 200ms &&
		ip netns exec "${P}r1" tc qdisc add dev eth0 root tbf rate 20mbit burst 16kb \
			latency 200ms || die "tbf"
	ip -n "${P}c1" addr add "$CLIENT2/24" dev eth0
	ringlb stats --json >"$W/stats0.json"
}

# moved_ok NAME PORT VIP TAG SCID_BACKEND_LOG: the common verdict of a connection that
# moved: the file whole from the backend that accepted it, which saw it on a new path,
# and lookup --cid agreeing for its connection ID. Prints the words for pass or fail.
moved() {
	local port=$1 vip=$2 tag=$3 got by scid peers look
	got=$(whole "$W/$tag/$SIZE")
	by=$(served_by "$port")
	scid=$( [ -n "$by" ] && conn "$W/$by.$port.log")
	peers=$( [ -n "$scid" ] && paths "$W/$by.$port.log" "$scid" | tr '\n' ' ')
	look=$( [ -n "$scid" ] && ringlb lookup "$vip" --cid "$scid" --json | jq -r .backend)
	if [ -n "$got" ] && [ "$got" = "$by" ] && [ -n "$peers" ] && [ "$look" = "$by" ] &&
		[ "$(echo "$by" | wc -w)" -eq 1 ]; then
		echo "ok $SIZE octets whole from $by, which began it (connection $scid) and saw it from $peers; lookup --cid: $look"
	else
		echo "bad file from '${got:-nobody}', accepted by '$by', new paths '$peers', lookup --cid '$look'"
	fi
}

# Until a try's new port is one a 5-tuple balancer would have sent to another backend
# (lookup of the new tuple on the VIP's ring), at most CONTROL_TRIES: every try whole on
# the backend that began it.
t_rebinding() {
	local r try by scid port tuple bad=0
	for try in $(seq 1 "$CONTROL_TRIES"); do
		mark 443
		fetch 443 "rebind$try" --change-local-addr=500ms --nat-rebinding
		r=$(moved 443 "$Q1" "rebind$try")
		case $r in ok*) ;; *) bad=1; break ;; esac
		by=$(served_by 443)
		scid=$(conn "$W/$by.443.log")
		port=$(paths "$W/$by.443.log" "$scid" | head -1 | sed 's/.*://')
		tuple=$(ringlb lookup "$Q1" "$ROUTED_CLIENT4:$port" --json | jq -r .backend)
		[ "$tuple" != "$by" ] && break
	done
	if [ "$bad" -eq 0 ] && [ "$tuple" != "$by" ]; then
		pass "rebinding (plaintext QUIC-LB), try $try (each whole): ${r#ok }; the new port's 5-tuple would have gone to $tuple"
	else
		fail "rebinding (plaintext QUIC-LB), try $try: $r; the new port's 5-tuple goes to ${tuple:-?}"
	fi
}

t_migration() {
	local r mover
	mark 8443
	# The client's new local address is the route's source: moved to the second one at 1 s.
	(sleep 1; ip -n "${P}c1" route replace "$ROUTED_VIP4B/32" via 198.18.10.1 src "$CLIENT2") &
	mover=$!
	fetch 8443 migrate --change-local-addr=1500ms
	wait "$mover"
	ip -n "${P}c1" route del "$ROUTED_VIP4B/32" 2>/dev/null
	r=$(moved 8443 "$Q2" migrate)
	case $r in
	ok*) [[ $r == *"$CLIENT2:"* ]] && pass "migration (AES, stateless): ${r#ok }" ||
		fail "migration: never seen from $CLIENT2: ${r#ok }" ;;
	*) fail "migration (AES, stateless): $r" ;;
	esac
}

# A rebinding download to the stateless AES VIP; meanwhile b3 is added (a new ring) and
# then the backend serving the download is drained (another ring, it gets no new
# connection): the download completes whole on it, and 6 new connections avoid it.
t_changes() {
	local r by fetcher i n=0 to_drained=0 late
	mark 8443
	fetch 8443 changes --change-local-addr=500ms --nat-rebinding &
	fetcher=$!
	for _ in $(seq 1 30); do
		by=$(served_by 8443)
		[ -n "$by" ] && break
		sleep 0.05
	done
	sleep 0.3
	ringlb backend add "$Q2" b3 "$(routed_backend4 3)" >/dev/null &&
		server 3 8443 "$Q2" || { fail "changes: adding b3"; wait "$fetcher"; return; }
	ringlb backend drain "$Q2" "${by:-b1}" >/dev/null || fail "changes: drain $by"
	wait "$fetcher"
	r=$(moved 8443 "$Q2" changes)
	# New connections after the drain: none to the drained backend.
	for i in 1 2 3 4 5 6; do
		mark 8443
		client timeout 20 gtlsclient -q --exit-on-all-streams-close --timeout=5s \
			--download "$W/late$i" "$ROUTED_VIP4B" 8443 "https://$ROUTED_VIP4B:8443/1024" \
			>/dev/null 2>&1
		late=$(served_by 8443)
		[ -n "$late" ] && n=$((n + 1))
		[ "$late" = "$by" ] && to_drained=$((to_drained + 1))
	done
	case $r in
	ok*) [ "$n" -eq 6 ] && [ "$to_drained" -eq 0 ] &&
		pass "ring changes (b3 added, then $by drained) under a rebinding download: ${r#ok }; 6 of 6 new connections served, none by $by" ||
		fail "ring changes: the download survived, but $n of 6 new connections served, $to_drained by drained $by" ;;
	*) fail "ring changes (b3 added, $by drained): $r" ;;
	esac
	ringlb backend undrain "$Q2" "$by" >/dev/null
}

# The same client through the plain UDP VIP: its rebinding moves it wherever the ring
# puts the new tuple. Tried until one try breaks; every try as lookup predicts: whole
# when the new port's flow goes to the backend that began it, broken when not.
t_control() {
	local try by got scid port look broke=0 agree=0 tries=0 log
	for try in $(seq 1 "$CONTROL_TRIES"); do
		tries=$try
		mark 4433
		fetch 4433 "control$try" --change-local-addr=500ms --nat-rebinding
		by=$(served_by 4433)
		got=$(whole "$W/control$try/$SIZE")
		[ -n "$by" ] || continue
		log="$W/$by.4433.log"
		scid=$(conn "$log")
		port=$(paths "$log" "$scid" | head -1 | sed 's/.*://')
		# Broken: the new port's packets reached another backend, which knew no connection.
		[ -z "$port" ] && port=$(grep -h ' unknown ' "$W"/b[123].4433.log | tail -1 |
			sed 's/.*peer=[0-9.]*:\([0-9]*\).*/\1/')
		look=$( [ -n "$port" ] && ringlb lookup "$PLAIN" "$ROUTED_CLIENT4:$port" --json |
			jq -r .backend)
		if [ -n "$got" ]; then
			[ "$look" = "$by" ] && agree=$((agree + 1))
		else
			broke=$((broke + 1))
			[ -n "$look" ] && [ "$look" != "$by" ] && agree=$((agree + 1))
			break
		fi
	done
	[ "$broke" -eq 1 ] && [ "$agree" -eq "$tries" ] &&
		pass "control (a plain UDP VIP): broke on try $tries of $CONTROL_TRIES when the rebinding's new port went elsewhere; all $tries tries as lookup predicted for their new ports" ||
		fail "control: $broke broke in $tries tries, $agree as lookup predicted"
}

t_counters() {
	local now
	now=$(ringlb stats --json)
	local q n
	q=$(( $(jq '.reasons.forwarded_quic.packets // 0' <<<"$now") -
		$(jq '.reasons.forwarded_quic.packets // 0' "$W/stats0.json") ))
	n=$(( $(jq '.reasons.forwarded_quic_new.packets // 0' <<<"$now") -
		$(jq '.reasons.forwarded_quic_new.packets // 0' "$W/stats0.json") ))
	[ "$q" -gt 1000 ] && [ "$n" -gt 0 ] &&
		pass "counters: $q packets forwarded_quic (by their server id), $n forwarded_quic_new (Initials by the ring)" ||
		fail "counters: forwarded_quic $q, forwarded_quic_new $n"
}

t_verify() {
	local verify
	verify=$(ringlb verify 2>&1) && pass "verify: $verify" || fail "verify: $verify"
}

suite_test rebinding
suite_test migration
suite_test changes migration
suite_test control
suite_test counters
suite_test verify
suite_main "$@"
