#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# tcp_rst.py SRC SPORT DST DPORT: send one TCP RST of the connection
# SRC:SPORT -> DST:DPORT with a random sequence number, as an attacker who
# guesses the 4-tuple but not the sequence would. The receiver must ignore it
# (RFC 5961: not exactly the next expected sequence number). Uses scapy.
import random
import sys

from scapy.all import IP, IPv6, TCP, conf, send

conf.verb = 0
src, sport, dst, dport = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ip = IPv6(src=src, dst=dst) if ":" in dst else IP(src=src, dst=dst)
send(ip / TCP(sport=sport, dport=dport, flags="R", seq=random.getrandbits(32)))
