#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Log the encapsulated frames an interface receives from the balancer.

usage: encap_sniff.py IFACE SOURCE4 SOURCE6 OUT [CLIENT4 VIP4 SPORT DPORT]

Every frame IFACE receives (not the ones it sends) whose outer IPv4 or IPv6
source is SOURCE4 or SOURCE6 (and, when the flow is given, that carries an
inner IPv4 UDP datagram of that flow: the balancer's own health probes and
stray frames of earlier tests are not counted) becomes one line of OUT: the
time it was read
(seconds since the epoch, the clock of `date +%s.%N`) and its destination
MAC. OUT is created empty once the socket is bound, so a caller can wait for
it before sending; SIGTERM or SIGINT ends the log. A raw packet socket, not
scapy: the log must start within the test's patience and keep up with a few
hundred frames a second.
"""
import ipaddress
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def main():
    iface, src4, src6, out = sys.argv[1:5]
    flow = b""
    if len(sys.argv) > 5:
        client, vip, sport, dport = sys.argv[5:9]
        # An inner IPv4 header without options: its source and destination, then the
        # UDP ports right after them.
        flow = (ipaddress.IPv4Address(client).packed + ipaddress.IPv4Address(vip).packed +
                int(sport).to_bytes(2, "big") + int(dport).to_bytes(2, "big"))
    want4 = ipaddress.IPv4Address(src4).packed
    want6 = ipaddress.IPv6Address(src6).packed
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((iface, 0))
    sock.settimeout(0.2)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    with open(out, "w", buffering=1) as log:
        while not stop:
            try:
                frame, addr = sock.recvfrom(128)
            except socket.timeout:
                continue
            except InterruptedError:
                continue
            if addr[2] == PACKET_OUTGOING or len(frame) < 54:
                continue
            kind = frame[12:14]
            if kind == b"\x08\x00":
                ours = frame[26:30] == want4
            elif kind == b"\x86\xdd":
                ours = frame[22:38] == want6
            else:
                ours = False
            if ours and (not flow or frame.find(flow, 34) >= 0):
                log.write("%.6f %s\n" % (time.time(), frame[0:6].hex(":")))


if __name__ == "__main__":
    main()
