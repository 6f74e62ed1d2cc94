#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Encapsulation end to end, with real traffic, on the routed network of
# scripts/routed.sh: client - router - balancer (one arm) - router -
# backends in two subnets, MTU 1500 everywhere. The balancer encapsulates
# (IPIP or GUE), the backends run `ringlb decap attach` (this kernel has no
# tunnel modules at all), nginx and dnsmasq hold the VIPs on loopback.
# Its tests (tests/suites/lib.sh runs them; `encap.sh TEST...` runs some):
#
#   mac          backend add --mac on an ipip VIP is refused
#   tcp          IPv4 and IPv6 VIPs over ipip and gue, each with backends of
#                both families, spread by weight; `lookup` names the backend
#                that answered every connection
#   udp          DNS queries (dig to dnsmasq) over gue, each answered by the
#                backend `lookup` names
#   upload       2 MiB PUT to each VIP completes, the file whole on the
#                backend, because the balancer's ICMP told the client the MTU
#   drain        a download from a draining backend completes; no new
#                connection reaches it; remove moves nothing else
#   not_ours     encapsulated frames from outside --from, or to an address
#                the backend does not own, are not decapsulated
#   flood        (after drain and tcp) 100 downloads complete through a drain
#                and an add while spoofed SYNs flood the VIP: past the rate of
#                new flows the balancer stops pinning, so the flood evicts no pin
#   health       the daemon's health checks through the tunnels: a backend
#                whose nginx stops is down, and up again when it starts
#   two_arms     with a second interface toward the backends, the balancer
#                forwards by redirect
#   next_hop     (after two_arms) under a stream of datagrams, the next hop's
#                MAC changes, then the route moves back to the first arm:
#                within 100 ms of each, no frame goes the old way; every
#                datagram is sent on
#   verify       the kernel serves the state, after all of the above
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root encap

routed_session encap rle

V4I="$ROUTED_VIP4:80/tcp"       # IPv4 VIP over IPIP
V4G="$ROUTED_VIP4B:80/tcp"      # IPv4 VIP over GUE
V6I="[$ROUTED_VIP6]:80/tcp"     # IPv6 VIP over IPIP
V6G="[$ROUTED_VIP6B]:80/tcp"    # IPv6 VIP over GUE
DNS="$ROUTED_VIP4B:53/udp"      # a UDP service over GUE

# vip_url SPEC: the URL base of a VIP spec.
vip_url() {
	local a=${1%:*}
	echo "http://$a"
}

# check_lookup SPEC OUT: OUT holds "backend port" lines; count those lookup agrees with.
check_lookup() {
	local spec=$1 out=$2 agree=0 n=0 name port want caddr
	local -a eps=()
	case $spec in \[*) caddr="[$ROUTED_CLIENT6]" ;; *) caddr=$ROUTED_CLIENT4 ;; esac
	while read -r name port; do eps+=("$caddr:$port"); done <"$out"
	if [ ${#eps[@]} -gt 0 ]; then
		# Each connection is new: where lookup says a new connection on its tuple goes.
		lookups_json "$spec" "${eps[@]}" | jq -r '.new_connection // .backend' >"$out.lookup"
	else
		: >"$out.lookup"
	fi
	while read -r name port <&3; do
		n=$((n + 1))
		read -r want <&4 || want=
		[ "$want" = "$name" ] && agree=$((agree + 1))
	done 3<"$out" 4<"$out.lookup"
	echo "$agree $n"
}

# --- set-up: balancer and backends ------------------------------------------------
# A small flow table and a low rate of new flows a CPU pins per second, for the flood
# below: what the rate lets the flood pin (250 a second on each of 2 CPUs for the 6 s
# flood and the second it starts in: 3,500 entries) and what the earlier tests pinned
# (about 350) fit in the table's 8,192, so no pin of a download is evicted while the
# flood's flows go unpinned. With 1,024 entries and a rate of 1,000 a second the flood
# could pin 14,000: the kernel's LRU then left as few as 42 of the 100 downloads' pins
# 1.4 s into the flood, and a drained backend's downloads broke (43 to 100 of 100 whole
# in seven runs).
setup() {
	local i spec
	ringlb attach eth0 --source "$ROUTED_LB4" --source "$ROUTED_LB6" --flows 8192 \
		--new-flow-rate "${NEW_FLOW_RATE:-250}" \
		>/dev/null || die "attach"
	for i in 1 2 3; do
		mkdir -p "$W/b$i"
		be "$i" decap attach eth0 --from "$ROUTED_LB4/32" --from "$ROUTED_LB6/128" \
			--vip "$ROUTED_VIP4" --vip "$ROUTED_VIP4B" --vip "$ROUTED_VIP6" \
			--vip "$ROUTED_VIP6B" >/dev/null ||
			die "decap attach on b$i"
	done
	ringlb vip add "$V4I" --forward ipip && ringlb vip add "$V4G" --forward gue &&
		ringlb vip add "$V6I" --forward ipip && ringlb vip add "$V6G" --forward gue &&
		ringlb vip add "$DNS" --forward gue || die "vip add"
	# Weights 1:2:3; backend 2 of each VIP is of the other family than the VIP.
	for spec in "$V4I" "$V4G" "$DNS"; do
		ringlb backend add "$spec" b1 "$(routed_backend4 1)" --weight 1 &&
			ringlb backend add "$spec" b2 "$(routed_backend6 2)" --weight 2 &&
			ringlb backend add "$spec" b3 "$(routed_backend4 3)" --weight 3 || die "backend add $spec"
	done
	for spec in "$V6I" "$V6G"; do
		ringlb backend add "$spec" b1 "$(routed_backend6 1)" --weight 1 &&
			ringlb backend add "$spec" b2 "$(routed_backend4 2)" --weight 2 &&
			ringlb backend add "$spec" b3 "$(routed_backend6 3)" --weight 3 || die "backend add $spec"
	done
}

t_mac() {
	local refused
	refused=$(ringlb backend add "$V4I" b9 "$(routed_backend4 1)" --mac 02:00:00:00:00:09 2>&1)
	[ $? -ne 0 ] && echo "$refused" | grep -q "l2 VIPs only" &&
		pass "backend add --mac on an ipip VIP: refused, '$refused'" ||
		fail "backend add --mac on an ipip VIP: '$refused'"
}

# --- tcp ------------------------------------------------------------------------------------
t_tcp() {
	local total_agree=0 total=0 spec agree n b
	local -A got=()
	for spec in "$V4I" "$V4G" "$V6I" "$V6G"; do
		client curl -s -m 10 -H 'Connection: close' -w '%{local_port}\n' "$(vip_url "$spec")/[1-50]" |
			paste -d" " - - >"$W/conns"
		read -r agree n < <(check_lookup "$spec" "$W/conns")
		total_agree=$((total_agree + agree))
		total=$((total + n))
		for b in b1 b2 b3; do
			got[$b]=$(( ${got[$b]:-0} + $(grep -c "^$b " "$W/conns") ))
		done
		echo "     $spec: $n connections, $agree as lookup said, by backend:" \
			"$(cut -d' ' -f1 "$W/conns" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
	done
	if [ "$total" -eq 200 ] && [ "$total_agree" -eq 200 ]; then
		pass "tcp: 200 of 200 connections to 4 VIPs (IPv4 and IPv6, ipip and gue, backends of both families) reached the backend lookup names"
	else
		fail "tcp: $total_agree of $total connections reached the backend lookup names (200 expected)"
	fi
	# The ring's shares follow the weights (1:2:3, each within 0.8 - 1.2 of its weight's
	# share), and the 200 connections follow the shares: each backend's count within 4.5
	# standard deviations of what the four VIPs' shares predict. (Bounds on the weights
	# alone failed by chance: b1=51 against at most 50, its shares above a sixth.)
	local want_b spread=1 shares=""
	for b in b1 b2 b3; do
		want_b=$(ringlb show --json | jq --arg b "$b" \
			'[.vips[] | select(.vip | test(":80/tcp$")) | .backends[] | select(.name == $b) | .share] | add * 50')
		shares+="$b $(printf %.1f "$want_b") "
		awk -v got="${got[$b]}" -v want="$want_b" -v w="${b#b}" 'BEGIN {
			sd = sqrt(want * (1 - want / 200)); share = want / 200
			exit !(share >= 0.8 * w / 6 && share <= 1.2 * w / 6 &&
				got >= want - 4.5 * sd - 1 && got <= want + 4.5 * sd + 1) }' || spread=0
	done
	if [ $spread -eq 1 ]; then
		pass "tcp: spread by weight 1:2:3 over the 200: b1=${got[b1]} b2=${got[b2]} b3=${got[b3]}, the rings' shares predicting $shares"
	else
		fail "tcp: not spread by weight 1:2:3: b1=${got[b1]} b2=${got[b2]} b3=${got[b3]}, the rings' shares predicting $shares (each share within 0.8 - 1.2 of its weight's, each count within 4.5 sd)"
	fi
}

# --- udp ---------------------------------------------------------------------------------
t_udp() {
	local agree=0 port want k=0
	local -a eps=() answers=() wants=()
	for port in $(seq 40001 40020); do
		answers+=("$(client dig +short +tries=1 +time=2 -b "$ROUTED_CLIENT4#$port" @"$ROUTED_VIP4B" who.test A)")
		eps+=("$ROUTED_CLIENT4:$port")
	done
	# Where lookup puts each query's flow, asked once for the 20 after them.
	mapfile -t wants < <(lookups_json "$DNS" "${eps[@]}" | jq -r .backend)
	for port in $(seq 40001 40020); do
		want=${wants[$k]:-}
		[ "${answers[$k]}" = "198.18.99.${want#b}" ] && agree=$((agree + 1))
		k=$((k + 1))
	done
	[ $agree -eq 20 ] && pass "udp: 20 of 20 DNS queries over gue answered by the backend lookup names" ||
		fail "udp: $agree of 20 DNS queries answered by the backend lookup names"
}

# --- upload: path MTU through the balancer's ICMP ------------------------------------------
t_upload() {
	local sum too_big0 too_big ok=0 spec name port caddr b
	head -c 2097152 /dev/urandom >"$W/upload"
	sum=$(sha256sum <"$W/upload" | cut -d' ' -f1)
	too_big0=$(ringlb stats --json | jq '.reasons.forwarded_too_big.packets')
	for spec in "$V4I" "$V4G" "$V6I" "$V6G"; do
		name="f$(echo "$spec" | tr -c '0-9a-z' _)"
		port=$(client curl -s -m 30 -T "$W/upload" -w '%{local_port} %{http_code}\n' -o /dev/null \
			"$(vip_url "$spec")/up/$name")
		case $spec in \[*) caddr="[$ROUTED_CLIENT6]" ;; *) caddr=$ROUTED_CLIENT4 ;; esac
		b=$(ringlb lookup "$spec" "$caddr:${port% *}")
		if [ "${port#* }" = 201 ] && [ -f "$W/${b}/up/$name" ] &&
			[ "$(sha256sum <"$W/${b}/up/$name" | cut -d' ' -f1)" = "$sum" ]; then
			ok=$((ok + 1))
		else
			echo "     upload to $spec: '$port', on $b: $(ls -l "$W/${b}/up/" 2>&1 | tail -1)"
		fi
	done
	too_big=$(( $(ringlb stats --json | jq '.reasons.forwarded_too_big.packets') - too_big0 ))
	if [ $ok -eq 4 ] && [ "$too_big" -gt 0 ]; then
		pass "upload: 4 of 4 uploads of 2 MiB (IPv4, IPv6, ipip, gue) arrived whole; the balancer sent $too_big ICMP errors with the MTU that fits"
	else
		fail "upload: $ok of 4 uploads arrived whole; $too_big ICMP errors sent"
	fi
}

# --- drain and remove -----------------------------------------------------------------------
# A slow download (256 KiB at 64 KiB/s) from backend b3 of the IPv4 IPIP VIP, then b3 drains.
t_drain() {
	local port dl agree n
	local -a eps=()
	for port in $(seq 41001 41100); do eps+=("$ROUTED_CLIENT4:$port"); done
	# The first of those ports whose flow the ring gives b3 (the last one if none).
	port=$(lookups_json "$V4I" "${eps[@]}" | jq -rs 'first(.[] | select(.backend == "b3")) // .[-1] |
		.client | sub(".*:"; "")')
	client curl -s -m 30 --local-port "$port" -o "$W/slow" -w '%{http_code}' \
		"http://$ROUTED_VIP4/slow" >"$W/slow.code" &
	dl=$!
	# The drain comes 1 s into the 4 s download (the wait is within the download's time).
	sleep 1
	ringlb backend drain "$V4I" b3 || fail "drain"
	client curl -s -m 10 -H 'Connection: close' "http://$ROUTED_VIP4/[1-30]" >"$W/after"
	wait $dl
	if [ "$(cat "$W/slow.code")" = 200 ] && [ "$(stat -c %s "$W/slow")" -eq 262144 ] &&
		! tr -d 3 <"$W/slow" | grep -q . && ! grep -q b3 "$W/after"; then
		pass "drain: a download from draining b3 completed (262144 bytes, all from b3); 0 of 30 new connections reached b3"
	else
		fail "drain: download $(cat "$W/slow.code") $(stat -c %s "$W/slow") bytes; new connections: $(sort "$W/after" | uniq -c | tr '\n' ' ')"
	fi
	ringlb backend remove "$V4I" b3 || fail "remove"
	client curl -s -m 10 -H 'Connection: close' -w '%{local_port}\n' "http://$ROUTED_VIP4/[1-30]" |
		paste -d" " - - >"$W/conns"
	read -r agree n < <(check_lookup "$V4I" "$W/conns")
	[ "$agree" -eq 30 ] && ! grep -q b3 "$W/conns" &&
		pass "remove: 30 of 30 new connections where lookup says, none to b3" ||
		fail "remove: $agree of $n where lookup says: $(cut -d' ' -f1 "$W/conns" | sort | uniq -c | tr '\n' ' ')"
}

# --- not ours: frames the decap program must leave alone ------------------------------------
t_not_ours() {
	local before after from local_ decapped
	before=$(be 1 decap stats --json)
	ip netns exec "${P}r2" /usr/bin/python3 - "$(routed_backend4 1)" "$ROUTED_LB4" "$ROUTED_VIP4" \
		"$(ip -n "${P}b1" -j link show eth0 | jq -r '.[0].address')" <<'PY'
import sys
from scapy.all import Ether, IP, UDP, TCP, sendp, conf
conf.verb = 0
backend, lb, vip, mac = sys.argv[1:]
inner = IP(src="198.18.10.2", dst=vip) / TCP(sport=40000, dport=80, flags="S")
# A well-formed IPIP frame from outside --from (the client's address) ...
sendp(Ether(dst=mac) / IP(src="198.18.10.2", dst=backend) / inner, iface="br0", count=5)
# ... and one from the balancer to an address the backend does not own.
sendp(Ether(dst=mac) / IP(src=lb, dst="198.18.13.99") / inner, iface="br0", count=5)
PY
	after=$(be 1 decap stats --json)
	from=$(( $(echo "$after" | jq .pass_not_from.packets) - $(echo "$before" | jq .pass_not_from.packets) ))
	local_=$(( $(echo "$after" | jq .pass_not_local.packets) - $(echo "$before" | jq .pass_not_local.packets) ))
	decapped=$(( $(echo "$after" | jq .decap_ipip.packets) - $(echo "$before" | jq .decap_ipip.packets) ))
	[ "$from" -eq 5 ] && [ "$local_" -eq 5 ] && [ "$decapped" -eq 0 ] &&
		pass "not ours: 5 IPIP frames from outside --from and 5 to an address b1 does not own passed untouched (0 decapsulated)" ||
		fail "not ours: not_from $from, not_local $local_, decapsulated $decapped (5, 5, 0 expected)"
}

# --- flood: spoofed SYNs cannot evict the pins of real connections --------------------------
# 100 slow downloads (256 KiB at 64 KiB/s) from the IPv4 IPIP VIP (b1 and b2 now); then
# spoofed SYNs from random sources, as fast as trafgen sends them, while b2 drains and b3
# is added back. Past 250 new flows per CPU per second the balancer stops pinning new flows, so
# the flood takes no more of the flow table than that (set-up) and the downloads keep their pins.

t_flood() {
	local k unpinned0 unpinned flood whole=0
	local -a pids=()
	mkdir -p "$W/flood"
	for k in $(seq 1 100); do
		client curl -s -m 60 -o "$W/flood/$k" -w '%{http_code}' "http://$ROUTED_VIP4/slow" \
			>"$W/flood/$k.code" &
		pids+=($!)
	done
	# Until every download is under way, its flow pinned before the flood (was a fixed 1 s,
	# after which some could still be opening: their SYNs then came in the flood, past the
	# rate, and went unpinned).
	downloads_started "$W/flood" 100 || echo "     (not every download had started)"
	unpinned0=$(ringlb stats --json | jq .new_flows_unpinned)
	syn_flood "$ROUTED_VIP4" 6 &
	flood=$!
	sleep 1
	ringlb backend drain "$V4I" b2 >/dev/null || fail "drain under the flood"
	sleep 1
	ringlb backend add "$V4I" b3 "$(routed_backend4 3)" --weight 3 >/dev/null ||
		fail "add under the flood"
	wait $flood "${pids[@]}"
	unpinned=$(( $(ringlb stats --json | jq .new_flows_unpinned) - unpinned0 ))
	for k in $(seq 1 100); do
		[ "$(cat "$W/flood/$k.code")" = 200 ] && [ "$(stat -c %s "$W/flood/$k")" -eq 262144 ] &&
			whole=$((whole + 1))
	done
	if [ $whole -eq 100 ] && [ "$unpinned" -gt 0 ]; then
		pass "flood: 100 of 100 downloads completed whole through a drain and an add under a flood of spoofed SYNs ($unpinned new flows not pinned)"
	else
		fail "flood: $whole of 100 downloads completed whole; $unpinned new flows not pinned"
	fi
}

# --- health checks through the tunnels ------------------------------------------------------
# The daemon's probes to a gue and an ipip VIP go encapsulated, as clients' packets do:
# a backend whose nginx stops is down on both, and up again when it starts. A hold of
# 1 s: the default (10 s) is the least time between two verdicts of one backend, which
# the daemon's own tests measure; here it was idle time between down and up.
health_of() {
	ringlb show --json | jq -r --arg v "$1" --arg n "$2" \
		'.vips[] | select(.vip == $v) | .backends[] | select(.name == $n) | .health'
}
until_health() {
	local t
	for t in $(seq 1 100); do
		[ "$(health_of "$V4G" b2)" = "$1" ] && [ "$(health_of "$V6I" b2)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

t_health() {
	local dpid
	ringlb vip check "$V4G" --check-interval 300 --check-timeout 200 --rise 1 --fall 2 \
		--hold 1000 &&
		ringlb vip check "$V6I" --check http:/ --check-interval 300 --check-timeout 200 --rise 1 \
			--fall 2 --hold 1000 || fail "vip check"
	nsenter --net="/run/netns/$RINGLB_NS" "$ROOT/build/ringlb" --state "$W/state.json" \
		--pin-dir "$PIN" daemon --metrics none >"$W/daemon.log" 2>&1 &
	dpid=$!
	kill "$(cat "$W/b2/nginx.pid")"
	if until_health down; then
		routed_backend_servers 2 >/dev/null 2>&1
		until_health up && pass "health through the tunnels: b2's nginx stopped, down on the gue and the ipip VIP (TCP and HTTP checks); started, up again" ||
			fail "b2 never came back: $(grep -v transition "$W/daemon.log")"
	else
		fail "b2 never went down: gue $(health_of "$V4G" b2), ipip $(health_of "$V6I" b2); $(grep -v transition "$W/daemon.log")"
	fi
	kill "$dpid"
	wait "$dpid" || fail "the daemon did not stop cleanly"
}

# --- two arms: out of the other interface by redirect ---------------------------------------

# resolved NS DEV ADDR...: NS has a neighbour entry with a link-layer address for each ADDR on DEV.
resolved() {
	local ns=$1 dev=$2 a
	shift 2
	for a in "$@"; do
		ip -n "$ns" -j neigh show dev "$dev" to "$a" | jq -e 'any(.[]; has("lladdr") and
			(.state | index("FAILED") | not) and (.state | index("INCOMPLETE") | not))' \
			>/dev/null || return 1
	done
}

t_two_arms() {
	local t rx0 rx spec agree n
	routed_two_armed
	# Attaching (any change) has the kernel resolve the next hops toward the backends anew:
	# until the second arm's next hop answers in both families (was a fixed 1 s; 3 s at most).
	ringlb attach eth1 >/dev/null || fail "attach eth1"
	for t in $(seq 1 30); do
		resolved "${P}lb" eth1 198.18.15.1 2001:db8:15::1 && break
		sleep 0.1
	done
	rx0=$(ip -n "${P}r2" -j -s link show eth4 | jq '.[0].stats64.rx.packets')
	for spec in "$V4I" "$V6G"; do
		client curl -s -m 3 -H 'Connection: close' -w '%{local_port}\n' "$(vip_url "$spec")/[1-20]" |
			paste -d" " - - >"$W/conns"
		read -r agree n < <(check_lookup "$spec" "$W/conns")
		echo "$agree" >>"$W/two-armed"
	done
	rx=$(( $(ip -n "${P}r2" -j -s link show eth4 | jq '.[0].stats64.rx.packets') - rx0 ))
	agree=$(paste -sd+ "$W/two-armed" | bc)
	[ "$agree" -eq 40 ] && [ "$rx" -ge 40 ] &&
		pass "two arms: 40 of 40 connections where lookup says, $rx frames redirected out of the second arm" ||
		fail "two arms: $agree of 40 where lookup says, $rx frames on the second arm"
}

# --- next hops: a neighbour's new MAC and a route's new way, under traffic ------------------

# The bound the program keeps a CPU's next hop for (LB_NEXT_HOP_TTL_NS), and what a test
# allows past it: the coarse clock moves by ticks of 4 ms, and the logs' times are read
# in userspace after the frame arrived.
NEXT_HOP_TTL=0.100
NEXT_HOP_SLACK=0.030

# sniff NS DEV OUT: the balancer's encapsulated frames of the stream (below) that DEV in NS
# receives, logged to OUT (tests/suites/encap_sniff.py) in the background until the suite
# ends or it is killed. Only the stream's flow counts: the daemon's probes through the
# tunnels and late frames of earlier tests' connections leave the balancer too (a run
# counted 1586 frames of 1584 datagrams).
sniff() {
	ip netns exec "$1" python3 "$ROOT/tests/suites/encap_sniff.py" "$2" "$ROUTED_LB4" \
		"$ROUTED_LB6" "$3" "$ROUTED_CLIENT4" "$ROUTED_VIP4B" 40053 53 &
	SNIFFERS+=" $!"
}

# after LOG T [MAC]: frames of LOG read after time T (to MAC only, when given).
after() { awk -v t="$2" -v mac="${3:-}" '$1 > t && (mac == "" || $2 == mac)' "$1" | wc -l; }
# since LOG MAC T: seconds from T to the last frame of LOG to MAC (negative: none after T).
since() { awk -v mac="$2" -v t0="$3" '$2 == mac { t = $1 } END { printf "%.3f", t - t0 }' "$1"; }

# stream SECONDS OUT: one UDP flow from the client to the DNS VIP (GUE), a datagram every
# 2 ms for SECONDS, in the background; OUT gets the number sent.
stream() {
	client python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("'"$ROUTED_CLIENT4"'", 40053))
end, n = time.time() + float(sys.argv[1]), 0
while time.time() < end:
    s.sendto(b"\0" * 32, ("'"$ROUTED_VIP4B"'", 53))
    n += 1
    time.sleep(0.002)
print(n)' "$1" >"$2" &
}

# A stream of datagrams to a GUE VIP, sent on the second arm (two_arms). After 1 s the
# next hop on that arm takes a new MAC and the balancer's kernel learns it (as from a
# gratuitous ARP: ip neigh replace); 1.5 s later the backends' subnets are routed back
# through the first arm. Within NEXT_HOP_TTL (+ NEXT_HOP_SLACK) of each change's last
# command the program must send by the new answer: no frame to the old MAC, then none on
# the second arm at all, past that; and every datagram leaves the balancer one way or
# the other (the ones to the old MAC within the bound are lost at the next hop).
t_next_hop() {
	local old new t sent seen a0 a1 late_mac late_arm before_mac before_arm nh0 nh
	SNIFFERS=
	old=$(ip -n "${P}r2" -j link show eth4 | jq -r '.[0].address')
	new=02:00:5e:00:15:01
	sniff "${P}r2" eth4 "$W/nh_arm2"
	sniff "${P}r1" eth1 "$W/nh_arm1"
	for t in $(seq 1 50); do
		[ -e "$W/nh_arm2" ] && [ -e "$W/nh_arm1" ] && break
		sleep 0.1
	done
	nh0=$(ringlb stats --json | jq '.next_hops.looked_up')
	stream 4 "$W/nh_sent"
	local sender=$!
	sleep 1
	ip -n "${P}r2" link set dev eth4 address "$new"
	ip -n "${P}lb" neigh replace 198.18.15.1 lladdr "$new" dev eth1 nud reachable
	ip -n "${P}lb" neigh replace 2001:db8:15::1 lladdr "$new" dev eth1 nud reachable
	a0=$(date +%s.%N)
	sleep 1.5
	for net in 198.18.13.0/24 198.18.14.0/24; do
		ip -n "${P}lb" route replace "$net" via 198.18.11.1 dev eth0
	done
	for net in 2001:db8:13::/64 2001:db8:14::/64; do
		ip -n "${P}lb" -6 route replace "$net" via 2001:db8:11::1 dev eth0
	done
	a1=$(date +%s.%N)
	wait "$sender"
	sleep 0.3
	# shellcheck disable=SC2086
	kill $SNIFFERS 2>/dev/null
	# shellcheck disable=SC2086
	wait $SNIFFERS 2>/dev/null
	sent=$(cat "$W/nh_sent")
	seen=$(( $(wc -l <"$W/nh_arm2") + $(wc -l <"$W/nh_arm1") ))
	nh=$(( $(ringlb stats --json | jq '.next_hops.looked_up') - nh0 ))
	late_mac=$(after "$W/nh_arm2" "$(echo "$a0 + $NEXT_HOP_TTL + $NEXT_HOP_SLACK" | bc)" "$old")
	late_arm=$(after "$W/nh_arm2" "$(echo "$a1 + $NEXT_HOP_TTL + $NEXT_HOP_SLACK" | bc)")
	before_mac=$(since "$W/nh_arm2" "$old" "$a0")
	before_arm=$(since "$W/nh_arm2" "$new" "$a1")
	if [ "$late_mac" -eq 0 ] && [ "$late_arm" -eq 0 ] && [ "$seen" -eq "$sent" ] &&
		[ "$(after "$W/nh_arm2" "$a0" "$new")" -gt 0 ] && [ "$(after "$W/nh_arm1" "$a1")" -gt 0 ]; then
		pass "next hop: $sent datagrams, all $seen sent on; the last to the old MAC $before_mac s after the neighbour changed, the last on the second arm $before_arm s after the route did (bound $NEXT_HOP_TTL s); $nh FIB lookups"
	else
		fail "next hop: $seen of $sent datagrams sent on; past the bound $late_mac to the old MAC ($before_mac s), $late_arm on the second arm ($before_arm s)"
	fi
}

t_verify() {
	local verify
	verify=$(ringlb verify 2>&1) && pass "verify: $verify" || fail "verify: $verify"
}

suite_test mac
suite_test tcp
suite_test udp
suite_test upload
suite_test drain
suite_test not_ours
# flood needs drain (b3 removed, it adds b3 back) and tcp, whose 200 closed connections
# leave the flow table (1,024 entries) the idle entries a full run gives the kernel's LRU
# to evict first when the flood's pinned SYNs (up to the rate: 1,000 a CPU a second) come.
# Measured: run after drain alone, 43 to 75 of 100 downloads whole, 42 of 99 pins left
# 1.4 s into the flood; after tcp too, pins still go in some runs (64 of 100 left, 75
# whole): the kernel's LRU evicts pins of live connections, a fault of the product.
suite_test flood drain tcp
suite_test health
suite_test two_arms
# next_hop needs two_arms (the second arm it changes) and leaves the first arm routed.
suite_test next_hop two_arms
suite_test verify
suite_main "$@"
