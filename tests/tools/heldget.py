#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# heldget.py URL OUT FLAG [--local-port PORT] [--timeout S]: an HTTP GET whose
# connection stays open as long as a test needs it. It reads the body a KiB
# every 200 ms while the file FLAG exists (the server's sending held back by
# TCP's window, so the connection carries packets all that time: 1 MiB lasts
# 205 s so), then the rest as fast as it comes. The body goes to OUT; on
# stdout, as curl -w '%{http_code} %{size_download}' would print it: "CODE
# SIZE" ("000 0" when no answer came). Exits 0 when an answer came, else 1;
# --timeout (300 s) bounds the whole of it.
#
#   heldget.py http://198.18.0.100/held /tmp/dl /tmp/streaming --local-port 26001
import argparse
import http.client
import os
import sys
import time
import urllib.parse

CHUNK_HELD = 1024
PAUSE_S = 0.2


def main():
    ap = argparse.ArgumentParser(description="An HTTP GET held open while FLAG exists.")
    ap.add_argument("url")
    ap.add_argument("out")
    ap.add_argument("flag")
    ap.add_argument("--local-port", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    u = urllib.parse.urlsplit(a.url)
    code, size = 0, 0
    deadline = time.monotonic() + a.timeout
    with open(a.out, "wb") as out:
        try:
            conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=a.timeout,
                                              source_address=("", a.local_port))
            conn.request("GET", u.path or "/")
            resp = conn.getresponse()
            code = resp.status
            while time.monotonic() < deadline:
                held = os.path.exists(a.flag)
                data = resp.read(CHUNK_HELD) if held else resp.read(1 << 16)
                if not data:
                    break
                out.write(data)
                out.flush()
                size += len(data)
                if held:
                    time.sleep(PAUSE_S)
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            print(f"heldget.py: {a.url}: {e}", file=sys.stderr)
    print(f"{code:03d} {size}")
    return 0 if code else 1


if __name__ == "__main__":
    sys.exit(main())
