#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# A slow HTTP client, for the tests of a server's doors (tests/suites/daemon.sh):
# from each --from ADDR[=N] it opens N connections (default --each) to --to and sends a
# request's headers a byte every --trickle seconds, never finishing them. It
# notes how long the server let each connection live, and prints a JSON summary
# on stdout when --for seconds have passed or, without --reconnect, when every
# connection is closed:
#
#   {"connected": N, "quick": N, "cut": N, "lifetimes": [S, ...], "open": N}
#
# quick: closed within --quick seconds of the connect (refused at the door);
# cut: closed later (lifetimes: those, in seconds, sorted); open: still open
# at the end. With --reconnect a closed connection is opened again after
# --pause seconds, so the server faces the same number of slow clients all the
# time. --ready FILE is written once the first connections are all open.
# With --answered each connection first sends a whole request and reads its
# answer, then trickles the next request's headers as if kept alive: its
# lifetime counts from the end of the answer. SIGTERM ends it as --for would, with its
# summary.
#
#   slowclient.py --to 127.0.0.1:9477 --from 127.0.0.2=12 --from 127.0.0.3 --for 6
import argparse
import json
import selectors
import signal
import socket
import sys
import time

HEAD = b"GET /metrics HTTP/1.1\r\nHost: ringlb\r\nX-Slow: "


def answer(s):
    """One whole request on blocking socket @s, and its answer read to its end."""
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: ringlb\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed before its answer")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed within its answer")
        body += chunk


def main():
    ap = argparse.ArgumentParser(description="hold slow HTTP connections open")
    ap.add_argument("--to", required=True, help="ADDR:PORT (IPv4)")
    ap.add_argument("--from", dest="sources", action="append", required=True,
                    help="ADDR[=N]: N connections from ADDR; repeat for several")
    ap.add_argument("--each", type=int, default=1,
                    help="connections from a source without =N (default 1)")
    ap.add_argument("--for", dest="duration", type=float, default=30.0,
                    help="seconds at most (default 30)")
    ap.add_argument("--trickle", type=float, default=1.0,
                    help="seconds between header bytes (default 1)")
    ap.add_argument("--quick", type=float, default=0.5,
                    help="a close sooner than this is a refusal (default 0.5 s)")
    ap.add_argument("--reconnect", action="store_true", help="open every closed one again")
    ap.add_argument("--pause", type=float, default=0.1,
                    help="seconds before opening one again (default 0.1)")
    ap.add_argument("--answered", action="store_true",
                    help="a whole request answered first, then the slow one")
    ap.add_argument("--ready", help="a file written once the first connections are open")
    a = ap.parse_args()
    host, port = a.to.rsplit(":", 1)
    dest = (host, int(port))

    sel = selectors.DefaultSelector()
    conns = {}  # socket -> [source, opened at, bytes of the header sent]
    later = []  # [when, source]: connections to open again
    summary = {"connected": 0, "quick": 0, "cut": 0, "lifetimes": [], "open": 0}

    def open_one(src):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((src, 0))
        s.settimeout(5)
        # Before the connect: the server may take it before connect() returns.
        opened = time.monotonic()
        s.connect(dest)
        if a.answered:
            answer(s)
            opened = time.monotonic()
        s.setblocking(False)
        conns[s] = [src, opened, 0]
        sel.register(s, selectors.EVENT_READ)
        summary["connected"] += 1
        return s

    def closed(s, now):
        src, opened, _ = conns.pop(s)
        sel.unregister(s)
        s.close()
        life = now - opened
        if life < a.quick:
            summary["quick"] += 1
        else:
            summary["cut"] += 1
            summary["lifetimes"].append(round(life, 3))
        if a.reconnect:
            later.append([now + a.pause, src])

    def send_byte(s, now):
        rec = conns[s]
        # The request line and the first header's name at once, then one byte at a time.
        n = len(HEAD) if rec[2] == 0 else 1
        data = HEAD[:n] if rec[2] == 0 else b"x"
        try:
            s.send(data)
            rec[2] += n
        except OSError:
            closed(s, now)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    start = time.monotonic()
    for spec in a.sources:
        src, _, n = spec.partition("=")
        for _ in range(int(n) if n else a.each):
            open_one(src)
    for s in list(conns):
        send_byte(s, time.monotonic())
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("%d\n" % len(conns))
    next_byte = time.monotonic() + a.trickle
    while True:
        now = time.monotonic()
        if stop or now - start >= a.duration or (not a.reconnect and not conns):
            break
        wake = min([next_byte, start + a.duration] + [w for w, _ in later])
        for key, _ in sel.select(timeout=max(0.0, wake - now)):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            # Any answer (a 408, say) is the server's; only the close counts.
            if not data:
                closed(s, time.monotonic())
        now = time.monotonic()
        if now >= next_byte:
            for s in list(conns):
                send_byte(s, now)
            next_byte = now + a.trickle
        due = [item for item in later if item[0] <= now]
        for item in due:
            later.remove(item)
            try:
                send_byte(open_one(item[1]), time.monotonic())
            except OSError:
                later.append([now + a.pause, item[1]])
    summary["open"] = len(conns)
    summary["lifetimes"].sort()
    for s in list(conns):
        s.close()
    json.dump(summary, sys.stdout)
    print()


if __name__ == "__main__":
    main()
