#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# faultproxy.py --listen HOST:PORT --upstream HOST:PORT --control HOST:PORT [--log FILE]:
# an HTTP/1.1 proxy in front of etcd's JSON gateway that injects faults, so
# that tests can show how hosts behave when the store is slow, resets,
# answers errors or loses replies. Each client request (keep-alive: several
# on one connection, in turn) goes to the upstream on a connection of its
# own; the response is relayed as it comes (Content-Length, chunked, or until
# close). /v3/watch is a stream: relayed both ways until either side closes.
# Python 3 standard library only (asyncio). tests/suites/faultproxy.sh starts
# it in a namespace and drives it.
#
# Faults are set per request path (exact, or "*" for every path; an exact
# path's fault wins), one per path (a new one replaces the old), through a
# tiny HTTP server on --control. Every answer is one line of JSON; 200 when
# done, 400 for bad JSON or a bad fault (with {"error": "..."}), 404/405 for
# an unknown route or method:
#
#   POST /fault {"path": P, "fault": F, ...[, "count": N]}
#       delay      {"ms": MS}: hold the request MS ms, then forward it (a
#                  watch: its start only). It is forwarded even when the
#                  client has given up meanwhile, as a slow store still
#                  applies a write its client timed out on.
#       reset      read the request, then close the client connection with a
#                  TCP RST (SO_LINGER 0); nothing is forwarded.
#       status     [{"status": 503, "code": 14, "message": "..."}]: answer
#                  STATUS (default 503) with {"error": M, "code": C,
#                  "message": M} (M "faultproxy: injected", C 14 by default),
#                  as etcd's gateway shapes errors; nothing is forwarded.
#       lost       forward the request (it takes effect), read etcd's whole
#                  reply (a watch: its response head), drop it and reset the
#                  client: the write happened, the client never hears.
#       blackhole  read the request, never answer; the connection stays open
#                  until the client closes it.
#       down       path "*" only, no count: the listening socket is closed
#                  (new connections refused, ECONNREFUSED) until /clear;
#                  connections already open are left alone.
#     "count": N applies the fault to the next N matching requests only, then
#     clears it. "body": S matches only requests whose body contains the
#     text S (etcd's keys are base64: a txn on one key, not another's).
#     "skip": N lets the first N matching requests through untouched (the
#     fault applies from the N+1th: a read after a write, not the one before). Unknown fields are refused (a typo is not a silent no-op).
#     Answers {"ok": true, "path": P, "fault": {...}}.
#   POST /clear [{"path": P}]: every fault (and down), or P's only ("*"
#       clears down too). Answers {"ok": true, "cleared": [paths]}.
#   GET /stats: {"paths": {P: {"requests", "faulted", "forwarded",
#       "upstream_errors", "by_fault": {F: n}}}, "watches": open watch streams,
#       "watches_cut", "held": blackholed connections open, "connections":
#       client connections open, "accepted", "bad_requests", "down",
#       "faults": {P: the fault set, with "count" left}}.
#   POST /cut-watches: reset every open watch stream (the client's side with
#       a RST, etcd's closed). Answers {"ok": true, "cut": N}.
#
# Robustness: a malformed request is answered 400 and its connection closed;
# an upstream that cannot be reached (or closes before answering) is
# answered 502 with {"error", "code": 14, "message"}; client disconnects end
# their connection only. --log FILE gets a line per request (time, client,
# method, path, fault, answer, ms) and per control call. Once both servers
# listen it prints "faultproxy: control on HOST:PORT", then "faultproxy:
# listening on HOST:PORT" (the actual port when PORT is 0), flushed.
import argparse
import asyncio
import http
import json
import os
import socket
import struct
import sys
import time
import traceback
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
CONNECT_TIMEOUT = 5.0
STREAMS = {"/v3/watch", "/v3beta/watch", "/v3alpha/watch"}
# The fields each fault takes besides path, fault and count.
FIELDS = {
    "delay": {"ms"},
    "reset": set(),
    "status": {"status", "code", "message"},
    "lost": set(),
    "blackhole": set(),
    "down": set(),
}
INJECTED = "faultproxy: injected"
# Hop-by-hop headers: the proxy's own business on each side.
HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te",
       "trailer", "transfer-encoding", "upgrade", "expect", "content-length"}


class BadRequest(Exception):
    def __init__(self, why, status=400):
        super().__init__(why)
        self.status = status


class BadResponse(Exception):
    pass


def parse_addr(text):
    """HOST:PORT (or [V6]:PORT) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def show_addr(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def header(headers, name):
    """The value of header NAME (several joined by commas), or None."""
    values = [v for n, v in headers if n.lower() == name]
    return ", ".join(values) if values else None


def tokens(value):
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


def parse_head(head, request=True):
    """A request's (method, target, version, headers) or a response's (version,
    status, reason, headers) from its head (which ends with CRLF CRLF)."""
    text = head.decode("latin-1")
    lines = text[:-4].split("\r\n")
    for line in lines:
        if "\r" in line or "\n" in line or "\0" in line:
            raise BadRequest("a bare CR, LF or NUL in the head")
    first, headers = lines[0], []
    for line in lines[1:]:
        if line[:1] in (" ", "\t"):
            raise BadRequest("obsolete header folding")
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or any(c in name for c in " \t()<>@,;\\\"/[]?={}"):
            raise BadRequest(f"not a header line: {line[:80]!r}")
        headers.append((name, value.strip(" \t")))
    if request:
        parts = first.split(" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[0].isupper():
            raise BadRequest(f"not a request line: {first[:80]!r}")
        if parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
            raise BadRequest(f"not HTTP/1.x: {parts[2][:20]!r}")
        return parts[0], parts[1], parts[2], headers
    parts = first.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise BadResponse(f"not a status line: {first[:80]!r}")
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "", headers


async def read_head(reader, request=True):
    """The next head (bytes), or None at a clean end of stream before one."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if not e.partial.strip(b"\r\n"):
                return None
            raise (BadRequest("the request ends inside its head") if request
                   else BadResponse("the response ends inside its head"))
        except asyncio.LimitOverrunError:
            raise (BadRequest(f"head longer than {MAX_HEAD} bytes", 431) if request
                   else BadResponse("response head too long"))
        # Empty lines before a request line are allowed (RFC 9112, 2.2).
        head = head.lstrip(b"\r\n")
        if head:
            return head if head.endswith(b"\r\n\r\n") else head + b"\r\n\r\n"


async def read_chunked(reader):
    """A chunked body, decoded."""
    body = b""
    while True:
        try:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";")[0].strip(), 16)
        except (ValueError, asyncio.LimitOverrunError):
            raise BadRequest("bad chunk size")
        if size < 0 or len(body) + size > MAX_BODY:
            raise BadRequest("body too large", 413)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return body
        body += await reader.readexactly(size)
        if await reader.readexactly(2) != b"\r\n":
            raise BadRequest("chunk without its CRLF")


class Request:
    def __init__(self, method, target, version, headers, body):
        self.method, self.version, self.headers, self.body = method, version, headers, body
        if target.startswith("/"):
            self.origin = target
        elif target.lower().startswith(("http://", "https://")):
            # The absolute form a client sends to a proxy it was told of.
            u = urlsplit(target)
            self.origin = (u.path or "/") + (f"?{u.query}" if u.query else "")
        else:
            raise BadRequest(f"not a request target: {target[:80]!r}")
        self.path = self.origin.split("?", 1)[0]
        conn = tokens(header(headers, "connection"))
        self.keep_alive = ("close" not in conn) if version == "HTTP/1.1" else ("keep-alive" in conn)

    def upstream_bytes(self):
        """The request as forwarded: origin form, its hop-by-hop headers
        dropped, a Content-Length body, Connection: close."""
        drop = HOP | tokens(header(self.headers, "connection"))
        lines = [f"{self.method} {self.origin} {self.version}"]
        lines += [f"{n}: {v}" for n, v in self.headers if n.lower() not in drop]
        if self.body or self.method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(self.body)}")
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


async def read_request(reader, writer):
    """The next request on a client connection, or None when it ends."""
    head = await read_head(reader)
    if head is None:
        return None
    method, target, version, headers = parse_head(head)
    te, cl = header(headers, "transfer-encoding"), header(headers, "content-length")
    if te is not None and cl is not None:
        raise BadRequest("both Transfer-Encoding and Content-Length")
    if te is not None and tokens(te) != {"chunked"}:
        raise BadRequest(f"unsupported Transfer-Encoding {te[:40]!r}", 501)
    length = 0
    if cl is not None:
        values = tokens(cl)
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise BadRequest(f"bad Content-Length {cl[:40]!r}")
        length = int(next(iter(values)))
        if length > MAX_BODY:
            raise BadRequest("body too large", 413)
    # The proxy reads the whole body before forwarding: it says continue itself.
    if version == "HTTP/1.1" and (header(headers, "expect") or "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await read_chunked(reader) if te is not None else await reader.readexactly(length)
    return Request(method, target, version, headers, body)


def json_answer(status, obj, version="HTTP/1.1", close=True):
    body = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    head = (f"{version} {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n")
    head += "Connection: close\r\n" if close else ("Connection: keep-alive\r\n" if version == "HTTP/1.0" else "")
    return (head + "\r\n").encode() + body


def etcd_error(message, code=14):
    """An error in the shape of etcd's gateway."""
    return {"error": message, "code": code, "message": message}


def rst(writer):
    """Close a connection with a TCP RST."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def graceful_close(reader, writer):
    """Flush, send FIN, read what is left for a moment (so that a reply is not
    lost to a RST for unread data), close."""
    try:
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        deadline = time.monotonic() + 1.0
        while (left := deadline - time.monotonic()) > 0:
            if not await asyncio.wait_for(reader.read(65536), left):
                break
    except (Exception, asyncio.TimeoutError):
        pass
    writer.transport.abort()


class Stats:
    def __init__(self):
        self.requests = self.faulted = self.forwarded = self.upstream_errors = 0
        self.by_fault = {}

    def json(self):
        return {"requests": self.requests, "faulted": self.faulted, "forwarded": self.forwarded,
                "upstream_errors": self.upstream_errors, "by_fault": dict(self.by_fault)}


class Proxy:
    def __init__(self, listen, upstream, control, log):
        self.listen, self.upstream, self.control = listen, upstream, control
        self.log_file = open(log, "a", buffering=1) if log else None
        self.faults = {}      # path -> {"fault": F, fields..., "count": N or None}
        self.down = False
        self.server = None
        self.stats = {}
        self.watches = set()  # (client writer, upstream writer) of each open watch
        self.cut = set()      # those /cut-watches reset, until their request's log line
        self.watches_cut = self.held = self.connections = self.accepted = self.bad_requests = 0

    # --- the log --------------------------------------------------------------------------
    def log(self, text):
        if self.log_file:
            now = time.time()
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
            try:
                self.log_file.write(f"{stamp} {text}\n")
            except OSError:
                pass

    # --- the listener ---------------------------------------------------------------------
    async def open_listener(self):
        host, port = self.listen
        self.server = await asyncio.start_server(self.client, host, port, limit=MAX_HEAD,
                                                 reuse_address=True)
        if port == 0:
            self.listen = (host, self.server.sockets[0].getsockname()[1])

    def close_listener(self):
        if self.server:
            self.server.close()
            self.server = None

    # --- faults ---------------------------------------------------------------------------
    def take_fault(self, path, body=b""):
        """The fault for a request to PATH, its count spent (cleared at 0)."""
        key = path if path in self.faults else "*" if "*" in self.faults else None
        if key is None:
            return None
        f = self.faults[key]
        if f.get("body") and f["body"].encode() not in (body or b""):
            return None
        if f.get("skip"):
            f["skip"] -= 1
            return None
        if f["count"] is not None:
            f["count"] -= 1
            if f["count"] <= 0:
                del self.faults[key]
        return f

    @staticmethod
    def check_fault(spec):
        """A fault from its JSON, or raises ValueError with why not."""
        if not isinstance(spec, dict):
            raise ValueError("a fault is a JSON object")
        path, kind = spec.get("path"), spec.get("fault")
        if not isinstance(path, str) or not (path == "*" or path.startswith("/")):
            raise ValueError('"path" must be "*" or a path starting with "/"')
        if kind not in FIELDS:
            raise ValueError(f"unknown fault {kind!r} (faults: {', '.join(FIELDS)})")
        extra = set(spec) - {"path", "fault", "count", "body", "skip"} - FIELDS[kind]
        if extra:
            raise ValueError(f"{kind} takes no field {', '.join(sorted(extra))}")
        fault = {"fault": kind, "count": None}
        if "body" in spec:
            if not isinstance(spec["body"], str) or not spec["body"] or kind == "down":
                raise ValueError('"body" must be a non-empty string (not with down)')
            fault["body"] = spec["body"]
        if "skip" in spec:
            skip = spec["skip"]
            if not isinstance(skip, int) or isinstance(skip, bool) or skip < 1 or kind == "down":
                raise ValueError('"skip" must be an integer >= 1 (not with down)')
            fault["skip"] = skip
        count = spec.get("count")
        if count is not None:
            if kind == "down":
                raise ValueError('down takes no count (the listener is closed until /clear; '
                                 'reset on "*" with a count resets the next requests)')
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError('"count" must be an integer >= 1')
            fault["count"] = count
        if kind == "down" and path != "*":
            raise ValueError('down takes path "*" (it refuses connections before any path is read)')
        if kind == "delay":
            ms = spec.get("ms")
            if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
                raise ValueError('delay needs "ms", a number >= 0')
            fault["ms"] = ms
        if kind == "status":
            status = spec.get("status", 503)
            code = spec.get("code", 14)
            message = spec.get("message", INJECTED)
            if not isinstance(status, int) or isinstance(status, bool) or not 200 <= status <= 599:
                raise ValueError('"status" must be an integer from 200 to 599')
            if not isinstance(code, int) or isinstance(code, bool):
                raise ValueError('"code" must be an integer')
            if not isinstance(message, str):
                raise ValueError('"message" must be a string')
            fault.update(status=status, code=code, message=message)
        return path, fault

    # --- client connections ---------------------------------------------------------------
    async def client(self, reader, writer):
        self.connections += 1
        self.accepted += 1
        peer = writer.get_extra_info("peername")
        who = show_addr(*peer[:2]) if peer else "?"
        alive = True
        try:
            while alive:
                try:
                    req = await read_request(reader, writer)
                except BadRequest as e:
                    self.bad_requests += 1
                    self.log(f"{who} - - fault=- answer={e.status} ms=0 bad request: {e}")
                    writer.write(json_answer(e.status, etcd_error(f"faultproxy: bad request: {e}", 3)))
                    await graceful_close(reader, writer)
                    return
                if req is None:
                    break
                alive = await self.serve(req, who, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            alive = False
        except Exception:
            alive = False
            self.log(f"{who} internal error: {traceback.format_exc()!r}")
        finally:
            self.connections -= 1
            if not writer.transport.is_closing():
                try:
                    writer.close()
                except Exception:
                    pass

    async def serve(self, req, who, reader, writer):
        """Serve one request; whether the connection goes on."""
        st = self.stats.setdefault(req.path, Stats())
        st.requests += 1
        fault = self.take_fault(req.path, req.body)
        kind = fault["fault"] if fault else None
        if fault:
            st.faulted += 1
            st.by_fault[kind] = st.by_fault.get(kind, 0) + 1
        start = time.monotonic()
        shown = f"{kind}:{fault['ms']}" if kind == "delay" else f"{kind}:{fault['status']}" \
            if kind == "status" else kind or "-"
        answer = "-"

        try:
            if kind == "reset":
                rst(writer)
                answer = "reset"
                return False
            if kind == "status":
                writer.write(json_answer(fault["status"], etcd_error(fault["message"], fault["code"]),
                                         req.version, close=not req.keep_alive))
                await writer.drain()
                answer = str(fault["status"])
                return req.keep_alive
            if kind == "blackhole":
                self.held += 1
                answer = "held"
                try:
                    while await reader.read(65536):
                        pass
                finally:
                    self.held -= 1
                return False
            if kind == "delay":
                await asyncio.sleep(fault["ms"] / 1000)
            alive, answer = await self.forward(req, st, reader, writer, lost=kind == "lost")
            return alive
        finally:
            self.log(f"{who} {req.method} {req.path} fault={shown} answer={answer} "
                     f"ms={int((time.monotonic() - start) * 1000)}")

    async def forward(self, req, st, reader, writer, lost):
        """Forward REQ on a connection of its own and relay the answer (or
        drop it: LOST). (whether the client connection goes on, the answer)."""
        upstream = show_addr(*self.upstream)
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream, limit=MAX_HEAD), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as e:
            st.upstream_errors += 1
            why = f"faultproxy: upstream {upstream}: " + \
                ("connect timed out" if isinstance(e, asyncio.TimeoutError) else
                 os.strerror(e.errno) if e.errno else str(e))
            writer.write(json_answer(502, etcd_error(why), req.version, close=not req.keep_alive))
            await writer.drain()
            return req.keep_alive, "502"
        stream = req.path in STREAMS
        pair = (writer, up_writer)
        try:
            up_writer.write(req.upstream_bytes())
            await up_writer.drain()
            st.forwarded += 1
            if stream:
                self.watches.add(pair)
            try:
                head = await read_head(up_reader, request=False)
                if head is None:
                    raise BadResponse("closed before answering")
                _, status, _, headers = parse_head(head, request=False)
                while 100 <= status < 200 and status != 101:
                    head = await read_head(up_reader, request=False)
                    if head is None:
                        raise BadResponse("closed before answering")
                    _, status, _, headers = parse_head(head, request=False)
            except (BadResponse, BadRequest, ConnectionError, OSError) as e:
                st.upstream_errors += 1
                if lost:
                    rst(writer)
                    return False, "lost(no reply)"
                writer.write(json_answer(502, etcd_error(f"faultproxy: upstream {upstream}: {e}"),
                                         req.version, close=True))
                await writer.drain()
                return False, "502"

            # The body's framing (RFC 9112, 6.3).
            if req.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                framing, length = "none", 0
            elif "chunked" in tokens(header(headers, "transfer-encoding")):
                framing, length = "chunked", 0
            elif header(headers, "content-length") is not None:
                try:
                    framing, length = "length", int(header(headers, "content-length").split(",")[0])
                except ValueError:
                    framing, length = "close", 0
            else:
                framing, length = "close", 0

            if lost:
                if not stream:
                    try:
                        await relay_body(up_reader, framing, length, None)
                    except (BadResponse, ConnectionError, OSError, asyncio.IncompleteReadError):
                        pass
                rst(writer)
                return False, f"lost({status})"

            close = stream or framing == "close" or not req.keep_alive
            drop = {"connection", "keep-alive", "proxy-connection"} | tokens(header(headers, "connection"))
            lines = head[:-4].decode("latin-1").split("\r\n")
            out = [lines[0]] + [line for line in lines[1:] if line.split(":", 1)[0].lower() not in drop]
            if close:
                out.append("Connection: close")
            elif req.version == "HTTP/1.0":
                out.append("Connection: keep-alive")
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
            await writer.drain()

            if stream:
                await pipe_both(reader, writer, up_reader, up_writer)
                return False, f"{status}(cut)" if pair in self.cut else str(status)
            try:
                await relay_body(up_reader, framing, length, writer)
            except (BadResponse, asyncio.IncompleteReadError):
                # The upstream broke off mid-body: so does the client's answer.
                st.upstream_errors += 1
                writer.transport.abort()
                return False, f"{status}(cut)"
            return not close, str(status)
        finally:
            self.watches.discard(pair)
            self.cut.discard(pair)
            up_writer.transport.abort()

    def cut_watches(self):
        n = 0
        for client_writer, up_writer in list(self.watches):
            rst(client_writer)
            up_writer.transport.abort()
            self.cut.add((client_writer, up_writer))
            n += 1
        self.watches.clear()
        self.watches_cut += n
        return n

    # --- the control endpoint -------------------------------------------------------------
    async def control_client(self, reader, writer):
        try:
            try:
                req = await read_request(reader, writer)
                if req is None:
                    return
                status, obj = await self.control_call(req)
            except BadRequest as e:
                status, obj = e.status, {"error": f"bad request: {e}"}
            writer.write(json_answer(status, obj))
            await graceful_close(reader, writer)
        except Exception:
            writer.transport.abort()

    async def control_call(self, req):
        routes = {"/fault": "POST", "/clear": "POST", "/stats": "GET", "/cut-watches": "POST"}
        if req.path not in routes:
            return 404, {"error": f"no such control call {req.path} ({', '.join(routes)})"}
        if req.method != routes[req.path]:
            return 405, {"error": f"{req.path} takes {routes[req.path]}"}
        body = None
        if req.body.strip():
            try:
                body = json.loads(req.body)
            except (ValueError, UnicodeDecodeError) as e:
                return 400, {"error": f"bad JSON: {e}"}
        if req.path == "/stats":
            return 200, self.stats_json()
        if req.path == "/cut-watches":
            n = self.cut_watches()
            self.log(f"control cut-watches: {n}")
            return 200, {"ok": True, "cut": n}
        if req.path == "/fault":
            try:
                path, fault = self.check_fault(body)
            except ValueError as e:
                return 400, {"error": str(e)}
            self.log(f"control fault {path} {json.dumps(fault, separators=(',', ':'))}")
            if fault["fault"] == "down":
                self.down = True
                self.close_listener()
            else:
                self.faults[path] = fault
            return 200, {"ok": True, "path": path, "fault": fault}
        # /clear
        if body is not None and (not isinstance(body, dict) or set(body) - {"path"} or
                                 ("path" in body and not isinstance(body["path"], str))):
            return 400, {"error": '/clear takes nothing or {"path": P}'}
        if body and "path" in body:
            paths = [body["path"]] if body["path"] in self.faults else []
            self.faults.pop(body["path"], None)
            undown = body["path"] == "*"
        else:
            paths = sorted(self.faults)
            self.faults.clear()
            undown = True
        if undown and self.down:
            paths.append("down")
            try:
                await self.open_listener()
            except OSError as e:
                return 500, {"error": f"listening again on {show_addr(*self.listen)}: {e}"}
            self.down = False
        self.log(f"control clear {' '.join(paths) or '(nothing)'}")
        return 200, {"ok": True, "cleared": paths}

    def stats_json(self):
        return {"paths": {p: s.json() for p, s in sorted(self.stats.items())},
                "watches": len(self.watches), "watches_cut": self.watches_cut, "held": self.held,
                "connections": self.connections, "accepted": self.accepted,
                "bad_requests": self.bad_requests, "down": self.down,
                "faults": {p: dict(f) for p, f in sorted(self.faults.items())}}


async def relay_body(up_reader, framing, length, writer):
    """Copy a response body as it comes (to WRITER, or nowhere when None)."""
    async def out(data):
        if writer is not None:
            writer.write(data)
            await writer.drain()

    async def copy(n):
        while n > 0:
            data = await up_reader.read(min(n, 65536))
            if not data:
                raise BadResponse("the response ends inside its body")
            n -= len(data)
            await out(data)

    if framing == "length":
        await copy(length)
    elif framing == "chunked":
        while True:
            try:
                line = await up_reader.readuntil(b"\r\n")
                size = int(line.split(b";")[0].strip(), 16)
            except (ValueError, asyncio.LimitOverrunError):
                raise BadResponse("bad chunk size")
            await out(line)
            if size == 0:
                while True:
                    trailer = await up_reader.readuntil(b"\r\n")
                    await out(trailer)
                    if trailer == b"\r\n":
                        return
            await copy(size + 2)
    elif framing == "close":
        while data := await up_reader.read(65536):
            await out(data)


async def pipe_both(c_reader, c_writer, u_reader, u_writer):
    """Relay bytes both ways until either side closes (or breaks)."""
    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    tasks = {asyncio.ensure_future(pipe(u_reader, c_writer)), asyncio.ensure_future(pipe(c_reader, u_writer))}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def main():
    ap = argparse.ArgumentParser(description="A fault-injecting HTTP/1.1 proxy for etcd's JSON gateway.")
    ap.add_argument("--listen", required=True, type=parse_addr, help="HOST:PORT clients connect to")
    ap.add_argument("--upstream", required=True, type=parse_addr, help="etcd's HOST:PORT")
    ap.add_argument("--control", required=True, type=parse_addr, help="HOST:PORT of the control endpoint")
    ap.add_argument("--log", help="a line per request appended to FILE")
    args = ap.parse_args()
    proxy = Proxy(args.listen, args.upstream, args.control, args.log)
    try:
        await proxy.open_listener()
    except OSError as e:
        sys.exit(f"faultproxy: listening on {show_addr(*args.listen)}: {e}")
    try:
        control = await asyncio.start_server(proxy.control_client, *args.control, limit=MAX_HEAD,
                                             reuse_address=True)
    except OSError as e:
        sys.exit(f"faultproxy: control on {show_addr(*args.control)}: {e}")
    chost, cport = args.control
    if cport == 0:
        cport = control.sockets[0].getsockname()[1]
    print(f"faultproxy: control on {show_addr(chost, cport)}")
    print(f"faultproxy: listening on {show_addr(*proxy.listen)}", flush=True)
    proxy.log(f"started: listening on {show_addr(*proxy.listen)}, upstream {show_addr(*args.upstream)}, "
              f"control on {show_addr(chost, cport)}")
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
