#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# notifysock.py PATH LOG: a systemd notify socket at PATH (a datagram Unix
# socket, as systemd gives a Type=notify service in $NOTIFY_SOCKET); every
# message is appended to LOG with the time it came, one line per field.
import os
import socket
import sys
import time

path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(log, "a", buffering=1) as f:
    while True:
        msg = s.recv(4096).decode(errors="replace")
        for field in msg.split("\n"):
            if field:
                f.write("%.3f %s\n" % (time.monotonic(), field))
