#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# udpsend.py ADDR PORT RATE FILE: datagrams to ADDR:PORT from 16 sockets
# (16 flows), RATE a second in all, until SIGTERM; then the number sent goes
# to FILE.
import signal
import socket
import sys
import time

addr, port, rate, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(16)]
sent = 0
running = True


def stop(signum, frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
start = time.monotonic()
while running:
    socks[sent % 16].sendto(b"ringlb %d" % sent, (addr, port))
    sent += 1
    delay = start + sent / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
with open(path, "w") as f:
    f.write("%d\n" % sent)
