#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The backend-side decap program's doors, shut, on the routed network of
# scripts/routed.sh: three backends run `ringlb decap attach` trusting the
# balancer and the backend subnets, with the VIPs as --vip. Spoofed GUE
# frames, their outer source the balancer's, are sent with scapy from the
# router r2 onto the backends' bridge, to b1. Its tests (tests/suites/lib.sh
# runs them; `doors.sh TEST...` runs some):
#
#   usage        decap attach without --vip, with a malformed one or with
#                one more than LB_DECAP_VIPS_MAX: a one-line error, exit
#                status non-zero, nothing loaded
#   hops30       100 frames with 30 hops alternating b2 and b1 (what hlen
#                allows): none forwarded, all dropped as too many hops
#   hops3        100 frames with 3 hops (b2, b1, b2): exactly 3 forwards
#                each (b1 2, b2 1), then taken by b2 as a second chance
#   stranger     100 frames whose next hop is outside every --from prefix,
#                and 100 whose next hop is b1 itself: none forwarded, all
#                dropped under their reasons
#   not_vip      100 inner ICMP echoes and 100 inner TCP SYNs to b2's own
#                address (not a VIP) through b1: dropped at b1; b2's ICMP
#                and TCP counters do not move and no answer reaches r2 (a
#                raw socket listening there); a SYN to the VIP is taken
#
# Each count is the decap program's per-reason counters' change, equal to
# the frames sent.
#
# Needs root and python3-scapy. Without root the script skips, except
# under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root doors

routed_session doors rdo

N=100

setup() {
	local i
	for i in 1 2 3; do
		mkdir -p "$W/b$i"
		be "$i" decap attach eth0 --from "$ROUTED_LB4/32" --from "$ROUTED_LB6/128" \
			--from 198.18.13.0/24 --from 198.18.14.0/24 \
			--vip "$ROUTED_VIP4" --vip "$ROUTED_VIP4B" --vip "$ROUTED_VIP6" \
			--vip "$ROUTED_VIP6B" >/dev/null || die "decap attach on b$i"
	done
}

# counts I: backend I's decap counters, packets by reason, as one JSON object.
counts() { be "$1" decap stats --json | jq -c 'map_values(.packets)'; }

# delta BEFORE AFTER REASON: how many packets REASON gained.
delta() { echo $(( $(echo "$2" | jq ".$3") - $(echo "$1" | jq ".$3") )); }

# snmp I PROTO FIELD: a counter of /proc/net/snmp in backend I (Icmp InMsgs, Tcp InSegs).
snmp() {
	ip netns exec "${P}b$1" awk -v p="$2:" -v f="$3" \
		'$1 == p && !n { for (i = 2; i <= NF; i++) h[i] = $i; n = 1; next }
		 $1 == p && n { for (i = 2; i <= NF; i++) if (h[i] == f) print $i }' /proc/net/snmp
}

# spoof KIND COUNT [ARGS]: COUNT GUE frames from the balancer's address to b1,
# sent from r2 onto the bridge; KIND names the hop list and the inner packet.
# Prints how many answers from b2 reached r2 meanwhile (a raw socket on br0).
spoof() {
	ip netns exec "${P}r2" /usr/bin/python3 - "$1" "$2" "$(routed_backend4 1)" \
		"$(routed_backend4 2)" "$ROUTED_LB4" "$ROUTED_VIP4" \
		"$(ip -n "${P}b1" -j link show eth0 | jq -r '.[0].address')" <<'PY'
import socket, sys, time
from scapy.all import Ether, IP, UDP, TCP, ICMP, Raw, AsyncSniffer, sendp, conf
conf.verb = 0
kind, count, b1, b2, lb, vip, mac = sys.argv[1:]
count = int(count)

def gue(hops, proto=4):
    """GUE version 0 with GLB's hop list: hlen words, next hop 0, the hops."""
    words = 1 + len(hops)
    return bytes([words, proto, 0, 0, 0, 0, 0, len(hops)]) + b"".join(
        socket.inet_aton(h) for h in hops)

ack = lambda k: IP(src="198.18.10.2", dst=vip) / TCP(sport=30000 + k, dport=80, flags="A")
frames = []
for k in range(count):
    if kind == "hops30":
        hops, inner = [b2 if i % 2 == 0 else b1 for i in range(30)], ack(k)
    elif kind == "hops3":
        hops, inner = [b2, b1, b2], ack(k)
    elif kind == "stranger":
        hops, inner = ["198.18.40.9"], ack(k)
    elif kind == "self":
        hops, inner = [b1], ack(k)
    elif kind == "echo":
        # An echo "from" r2 to b2's own address: a relay with a forged source.
        hops, inner = [b2], IP(src="198.18.13.1", dst=b2) / ICMP(type=8, id=k)
    elif kind == "syn":
        hops, inner = [b2], IP(src="198.18.13.1", dst=b2) / TCP(sport=31000 + k, dport=80,
                                                                 flags="S")
    elif kind == "vip_syn":
        hops, inner = [b2], IP(src="198.18.10.2", dst=vip) / TCP(sport=32000 + k, dport=80,
                                                                  flags="S")
    frames.append(Ether(dst=mac) / IP(src=lb, dst=b1) / UDP(sport=40000 + k, dport=19523) /
                  Raw(gue(hops)) / inner)
# Anything from b2 to r2 (its answers would come here): counted, no tcpdump.
sniffer = AsyncSniffer(iface="br0", store=False, count=0,
                       lfilter=lambda p: p.haslayer(IP) and p[IP].src == b2 and
                       p[IP].dst == "198.18.13.1")
answers = []
sniffer.prn = lambda p: answers.append(p)
sniffer.start()
time.sleep(0.3)
sendp(frames, iface="br0")
time.sleep(1)
sniffer.stop()
print(len(answers))
PY
}

t_usage() {
	local out rc many i
	out=$(be 1 decap attach eth1 --from "$ROUTED_LB4/32" 2>&1)
	rc=$?
	[ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q -- "--vip ADDR is required" &&
		pass "usage: without --vip: '$out' (exit $rc)" || fail "usage: without --vip: exit $rc, '$out'"
	out=$(be 1 decap attach eth0 --from "$ROUTED_LB4/32" --vip 198.18.20.300 2>&1)
	rc=$?
	[ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "malformed VIP address" &&
		pass "usage: a malformed --vip: '$out' (exit $rc)" || fail "usage: a malformed --vip: exit $rc, '$out'"
	many=()
	for i in $(seq 0 256); do many+=(--vip "198.18.$((22 + i / 200)).$((i % 200 + 1))"); done
	out=$(be 1 decap attach eth0 --from "$ROUTED_LB4/32" "${many[@]}" 2>&1)
	rc=$?
	[ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "at most 256 --vip" &&
		pass "usage: 257 --vip (LB_DECAP_VIPS_MAX + 1): '$out' (exit $rc)" ||
		fail "usage: 257 --vip: exit $rc, '$out'"
	# Nothing changed: b1 still takes the VIPs it had, and no link appeared on eth1.
	[ ! -e "$PIN-b1/decap/links/eth1" ] && pass "usage: nothing attached by the refusals" ||
		fail "usage: a link on eth1 after a refusal"
}

t_hops30() {
	local b1 b2 a1 a2
	b1=$(counts 1) b2=$(counts 2)
	spoof hops30 "$N" >/dev/null
	a1=$(counts 1) a2=$(counts 2)
	[ "$(delta "$b1" "$a1" drop_hops_max)" -eq "$N" ] && [ "$(delta "$b1" "$a1" forward_next_hop)" -eq 0 ] &&
		[ "$(delta "$b2" "$a2" forward_next_hop)" -eq 0 ] && [ "$(delta "$b2" "$a2" decap_second_chance)" -eq 0 ] &&
		pass "hops30: $N frames with 30 hops: 0 forwarded, $N dropped as drop_hops_max (b1 $(delta "$b1" "$a1" drop_hops_max))" ||
		fail "hops30: b1 $b1 -> $a1; b2 $b2 -> $a2"
}

t_hops3() {
	local b1 b2 a1 a2 f1 f2
	b1=$(counts 1) b2=$(counts 2)
	spoof hops3 "$N" >/dev/null
	a1=$(counts 1) a2=$(counts 2)
	f1=$(delta "$b1" "$a1" forward_next_hop) f2=$(delta "$b2" "$a2" forward_next_hop)
	[ "$f1" -eq $((2 * N)) ] && [ "$f2" -eq "$N" ] && [ "$(delta "$b2" "$a2" decap_second_chance)" -eq "$N" ] &&
		pass "hops3: $N frames with 3 hops: $((f1 + f2)) forwards ($((f1 + f2)) / $N = 3 each: b1 $f1, b2 $f2), then $N taken by b2" ||
		fail "hops3: forwards b1 $f1, b2 $f2 (want $((2 * N)), $N); b1 $b1 -> $a1; b2 $b2 -> $a2"
}

t_stranger() {
	local b1 b2 a1 a2
	b1=$(counts 1) b2=$(counts 2)
	spoof stranger "$N" >/dev/null
	spoof self "$N" >/dev/null
	a1=$(counts 1) a2=$(counts 2)
	[ "$(delta "$b1" "$a1" drop_hop_not_peer)" -eq "$N" ] && [ "$(delta "$b1" "$a1" drop_hop_self)" -eq "$N" ] &&
		[ "$(delta "$b1" "$a1" forward_next_hop)" -eq 0 ] &&
		pass "stranger: $N frames with a hop outside the peers and $N with b1 as its own hop: 0 forwarded, dropped as drop_hop_not_peer and drop_hop_self" ||
		fail "stranger: b1 $b1 -> $a1"
}

t_not_vip() {
	local b1 a1 icmp0 tcp0 icmp1 tcp1 ans_echo ans_syn ans_vip
	b1=$(counts 1)
	icmp0=$(snmp 2 Icmp InMsgs) tcp0=$(snmp 2 Tcp InSegs)
	ans_echo=$(spoof echo "$N")
	ans_syn=$(spoof syn "$N")
	icmp1=$(snmp 2 Icmp InMsgs) tcp1=$(snmp 2 Tcp InSegs)
	a1=$(counts 1)
	[ "$(delta "$b1" "$a1" drop_not_vip)" -eq $((2 * N)) ] && [ "$(delta "$b1" "$a1" forward_next_hop)" -eq 0 ] &&
		[ $((icmp1 - icmp0)) -eq 0 ] && [ $((tcp1 - tcp0)) -eq 0 ] && [ "$ans_echo" -eq 0 ] && [ "$ans_syn" -eq 0 ] &&
		pass "not_vip: $N inner echoes and $N inner SYNs to b2's address: $((2 * N)) dropped at b1 (drop_not_vip), b2 got 0 ICMP and 0 TCP segments, 0 answers" ||
		fail "not_vip: b1 $b1 -> $a1; b2 ICMP in +$((icmp1 - icmp0)), TCP in +$((tcp1 - tcp0)); answers $ans_echo, $ans_syn"
	# The same path to the VIP is open: what the door lets in still comes in.
	b1=$(counts 1)
	ans_vip=$(spoof vip_syn 10)
	a1=$(counts 1)
	[ "$(delta "$b1" "$a1" decap_gue)" -eq 10 ] &&
		pass "not_vip: 10 inner SYNs to the VIP decapsulated at b1 (decap_gue)" ||
		fail "not_vip: SYNs to the VIP: b1 $b1 -> $a1"
}

suite_test usage
suite_test hops30
suite_test hops3
suite_test stranger
suite_test not_vip
suite_main "$@"
