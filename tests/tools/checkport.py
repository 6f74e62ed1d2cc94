#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# checkport.py PORT [UP DOWN]: a TCP port health checks connect to, on every
# address (IPv4 and IPv6). With UP and DOWN (seconds), it flaps: listening
# for UP seconds, closed (connections refused) for DOWN, over and over.
# Runs until killed.
import socket
import sys
import threading
import time

port = int(sys.argv[1])
up = float(sys.argv[2]) if len(sys.argv) > 2 else None
down = float(sys.argv[3]) if len(sys.argv) > 3 else None


def listener():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(128)
    return s


def accept_all(s, stop):
    s.settimeout(0.05)
    while not stop.is_set():
        try:
            conn, _ = s.accept()
            conn.close()
        except (socket.timeout, OSError):
            pass


while True:
    s = listener()
    stop = threading.Event()
    t = threading.Thread(target=accept_all, args=(s, stop))
    t.start()
    if up is None:
        t.join()
    time.sleep(up)
    stop.set()
    t.join()
    s.close()
    time.sleep(down)
