#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# halfclose.py SRC SPORT DST DPORT: an HTTP/1.0 GET from SRC:SPORT to
# DST:DPORT that shuts its sending side right after the request (a FIN while
# the response is still to come), then reads the whole response. Prints the
# status code and the body's length and distinct bytes.
import socket
import sys

src, sport, dst, dport = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
family = socket.AF_INET6 if ":" in dst else socket.AF_INET
s = socket.socket(family, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((src, sport))
s.settimeout(120)
s.connect((dst, dport))
s.sendall(("GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % dst).encode())
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
head, _, body = data.partition(b"\r\n\r\n")
status = head.split(b" ")[1].decode() if head else "none"
print(status, len(body), "".join(sorted(set(body.decode(errors="replace")))))
