#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# udpanswer.py ADDR PORT MODE[,MODE...] [--from ADDR:PORT]: a UDP server on
# ADDR:PORT that answers every datagram, for the health checks' tests, as
# its first MODE says; SIGUSR1 moves it to the next (so a test changes the
# answers without a moment of port unreachable):
#
#   reply:TEXT        answers TEXT (a plain UDP check's server)
#   dns               answers a DNS query as a server would: its ID, its
#                     question, NOERROR and one A record 198.18.99.9
#   dns-wrong-id      the same with the query's ID plus one
#   dns-other-source  the right answer, sent from the socket --from binds
#                     (another source than the one the query went to)
#
# Runs until killed.
import signal
import socket
import struct
import sys


def dns_answer(query, shift):
    (qid,) = struct.unpack("!H", query[:2])
    answer = struct.pack("!HHHHHH", (qid + shift) & 0xFFFF, 0x8180, 1, 1, 0, 0)
    rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + bytes([198, 18, 99, 9])
    return answer + query[12:] + rr


def main():
    addr, port, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, port))
    other = None
    if len(sys.argv) > 5 and sys.argv[4] == "--from":
        faddr, fport = sys.argv[5].rsplit(":", 1)
        other = socket.socket(family, socket.SOCK_DGRAM)
        other.bind((faddr.strip("[]"), int(fport)))
    at = [0]
    signal.signal(signal.SIGUSR1, lambda *_: at.__setitem__(0, min(at[0] + 1, len(modes) - 1)))
    while True:
        try:
            data, peer = s.recvfrom(4096)
        except InterruptedError:
            continue
        mode = modes[at[0]]
        if mode.startswith("reply:"):
            s.sendto(mode[6:].encode(), peer)
        elif mode == "dns" and len(data) > 12:
            s.sendto(dns_answer(data, 0), peer)
        elif mode == "dns-wrong-id" and len(data) > 12:
            s.sendto(dns_answer(data, 1), peer)
        elif mode == "dns-other-source" and other and len(data) > 12:
            other.sendto(dns_answer(data, 0), peer)


if __name__ == "__main__":
    main()
