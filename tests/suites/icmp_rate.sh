#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The balancer's ICMP errors are budgeted, on the routed network of
# scripts/routed.sh: a packet too big once encapsulated gets "fragmentation
# needed" (IPv4) or "packet too big" (IPv6) from the VIP only within its
# CPU's budget (attach --icmp-rate, --icmp-burst); past it the packet is
# dropped and counted (drop_icmp_rate). The senders are spoofed: the errors
# go to a victim address on the client, which counts what it received.
# Its tests (tests/suites/lib.sh runs them; `icmp_rate.sh TEST...` runs some):
#
#   ipv4   3,000 spoofed oversize DF packets to a gue VIP: the victim gets at
#          most the budget of errors for the time they took, the rest are
#          counted refused, every packet under one of the two reasons
#   ipv6   the same with 1,000 packets to an IPv6 gue VIP
#   burst  after a quiet time the budget is whole again: a burst answered
#   refused  --icmp-rate 0, --icmp-burst 100001 and a word: one line, exit 2,
#          the state file unchanged
#
# Needs root. Without it the script skips, except under CI=true.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/suites/lib.sh"
. "$ROOT/scripts/routed.sh"

require_root icmp_rate

routed_session icmp_rate rli

RATE=50  # errors a CPU sends per second at most
BURST=5  # and at once
VICTIM4=198.18.10.77
VICTIM6=2001:db8:10::77
V4G="$ROUTED_VIP4B:80/tcp"
V6G="[$ROUTED_VIP6B]:80/tcp"

setup() {
	ringlb attach eth0 --source "$ROUTED_LB4" --source "$ROUTED_LB6" \
		--icmp-rate "$RATE" --icmp-burst "$BURST" >/dev/null || die "attach"
	ringlb vip add "$V4G" --forward gue && ringlb vip add "$V6G" --forward gue &&
		ringlb backend add "$V4G" b1 "$(routed_backend4 1)" &&
		ringlb backend add "$V6G" b1 "$(routed_backend6 1)" || die "vip and backends"
	# The victim: addresses of the client that no packet of it ever came from.
	ip -n "${P}c1" addr add "$VICTIM4/32" dev eth0 &&
		ip -n "${P}c1" addr add "$VICTIM6/128" dev eth0 nodad || die "victim addresses"
}

reason() { ringlb stats --json | jq ".reasons.$1.packets"; }
# received NAME: the client's count of one ICMP counter (nstat, absolute).
received() { ip netns exec "${P}c1" nstat -az "$1" | awk -v n="$1" '$1 == n { print $2 }'; }

# spoof FAMILY VIP VICTIM COUNT: COUNT oversize DF TCP segments from VICTIM to VIP:80,
# sent at once; prints the seconds the sending took.
spoof() {
	local r1mac
	r1mac=$(ip -n "${P}r1" -j link show eth0 | jq -r '.[0].address')
	ip netns exec "${P}c1" /usr/bin/python3 - "$@" "$r1mac" <<'PY'
import sys, time
from scapy.all import Ether, IP, IPv6, TCP, Raw, conf, sendp
conf.verb = 0
family, vip, victim, count, mac = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
frames = []
for i in range(count):
    seg = TCP(sport=20000 + i % 40000, dport=80, flags="A", seq=i)
    if family == "4":
        frames.append(Ether(dst=mac) / IP(src=victim, dst=vip, flags="DF") / seg / Raw(b"x" * 1460))
    else:
        frames.append(Ether(dst=mac) / IPv6(src=victim, dst=vip) / seg / Raw(b"x" * 1440))
frames = [bytes(f) for f in frames]
start = time.monotonic()
sendp(frames, iface="eth0")
print("%.3f" % (time.monotonic() - start))
PY
}

# flood NAME FAMILY VIP VICTIM COUNT COUNTER: the check of one family.
flood() {
	local name=$1 family=$2 vip=$3 victim=$4 count=$5 counter=$6
	local sent0 refused0 got0 secs sent refused got cpus bound
	sent0=$(reason forwarded_too_big)
	refused0=$(reason drop_icmp_rate)
	got0=$(received "$counter")
	secs=$(spoof "$family" "$vip" "$victim" "$count") || { fail "$name: scapy"; return; }
	sleep 0.5
	sent=$(( $(reason forwarded_too_big) - sent0 ))
	refused=$(( $(reason drop_icmp_rate) - refused0 ))
	got=$(( $(received "$counter") - got0 ))
	# Per CPU: the burst, one per interval of the sending time, one for the coarse clock.
	cpus=$(nproc)
	bound=$(echo "$cpus * ($BURST + $RATE * ($secs + 0.5) + 1)" | bc | cut -d. -f1)
	if [ $((sent + refused)) -eq "$count" ] && [ "$got" -eq "$sent" ] && [ "$sent" -ge 1 ] &&
		[ "$sent" -le "$bound" ]; then
		pass "$name: $count spoofed oversize packets in $secs s: $got ICMP errors reached the victim (budget $bound: $cpus CPUs x ($BURST + $RATE/s)), $refused refused as drop_icmp_rate"
	else
		fail "$name: $count packets in $secs s: $sent errors sent, $got received, $refused refused (want sent + refused = $count, received = sent, 1 <= sent <= $bound)"
	fi
}

t_ipv4() { flood ipv4 4 "$ROUTED_VIP4B" "$VICTIM4" 3000 IcmpInDestUnreachs; }
t_ipv6() { flood ipv6 6 "$ROUTED_VIP6B" "$VICTIM6" 1000 Icmp6InPktTooBigs; }

# After the floods, a second of quiet refills every CPU's bucket: a burst is answered whole.
t_burst() {
	local sent0 sent
	sleep 1
	sent0=$(reason forwarded_too_big)
	spoof 4 "$ROUTED_VIP4B" "$VICTIM4" "$BURST" >/dev/null || { fail "burst: scapy"; return; }
	sleep 0.2
	sent=$(( $(reason forwarded_too_big) - sent0 ))
	[ "$sent" -eq "$BURST" ] &&
		pass "burst: after a quiet second, $sent of $BURST oversize packets got their ICMP error" ||
		fail "burst: after a quiet second, $sent of $BURST oversize packets got their ICMP error"
}

# attach_with "OPTION VALUE": attach again with that budget (two words).
# shellcheck disable=SC2086
attach_with() { ringlb attach eth0 $1; }
t_refused() {
	refusals "bad budgets" attach_with "--icmp-rate 0" "--icmp-rate 1000001" "--icmp-burst 0" \
		"--icmp-burst 100001" "--icmp-rate many"
}

suite_test ipv4
suite_test ipv6
suite_test burst ipv4
suite_test refused
suite_main "$@"
