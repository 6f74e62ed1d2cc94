#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# udpcount.py PORT FILE: count the UDP datagrams that reach PORT (any
# address); on SIGTERM write the count to FILE and exit.
import signal
import socket
import sys

port, path = int(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", port))
count = 0


def done(signum, frame):
    with open(path, "w") as f:
        f.write("%d\n" % count)
    sys.exit(0)


signal.signal(signal.SIGTERM, done)
while True:
    s.recv(2048)
    count += 1
