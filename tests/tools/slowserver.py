#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# slowserver.py PORT CHAR BYTES SECONDS: an HTTP/1.0 server that answers
# every request with BYTES bytes of CHAR spread over SECONDS, whether or not
# the client has shut its sending side (a FIN after the request), as a server
# streaming to a half-closed client does. Serves until killed.
import socket
import sys
import threading
import time

port, char, total, seconds = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), float(sys.argv[4])


def serve(conn):
    with conn:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
        steps = 20
        for i in range(steps):
            conn.sendall(char * (total // steps + (total % steps if i == steps - 1 else 0)))
            time.sleep(seconds / steps)


for family, address in ((socket.AF_INET6, "::"),):
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, port))
    listener.listen(64)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
