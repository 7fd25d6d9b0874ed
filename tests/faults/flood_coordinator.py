#!/usr/bin/env python3
"""Hostile traffic for the chief's gRPC coordinator port (standard library only).

What it injects, for DURATION seconds or until SIGTERM/SIGINT, every mode at
once unless --modes picks some:

  garbage       connect, send random bytes (1 B .. 64 KiB, one payload in 8
                of 1 or 3 MiB; never an HTTP/2 preface), close; over and over
                from two threads.
  hoard         open and hold up to --hoard idle TCP connections (half raw,
                half after a valid HTTP/2 preface + SETTINGS); a connection the
                server drops is counted and opened again.
  h2_bad_frame  the valid client preface, then one malformed frame: a DATA or
                HEADERS frame header declaring 16 MiB followed by junk, a
                SETTINGS frame whose length is not a multiple of 6, a frame of
                unknown type declaring 16 MiB, a WINDOW_UPDATE of 0, or plain
                random bytes; then reads what the server answers (GOAWAY).
  h2_bad_token  a well-formed gRPC call to a real Coordinator method (Stop,
                Store, Join, Heartbeat, Finish, Status) carrying a wrong
                "authorization: Bearer" token (or none), with a small valid
                request message; records the grpc-status of the answer.
  h2_huge_msg   a wrong-token Store call whose DATA frames start a gRPC
                message declaring 100 MiB, then keep sending bytes as far as
                the server's flow-control windows let us (at most --huge-cap
                MiB per stream); records how many bytes the server took before
                it ended the stream, and how (grpc-status, RST_STREAM, GOAWAY,
                closed, or "stalled": no more window granted for 3 s).
  h2_streams    one connection opening --streams (2000) wrong-token calls
                (HEADERS, no END_STREAM, a 5-byte prefix declaring 100 MiB) and
                holding them open for --hold (5) s; counts the streams the
                server refused (RST_STREAM) and the most it kept open on one
                connection, and its SETTINGS_MAX_CONCURRENT_STREAMS if sent.

At the end it prints one line per mode:
  flood mode=NAME connections=N bytes_sent=N errors=N resets=N refused=N ...
(errors: every failed socket operation or error answer, resets included;
resets: ECONNRESET/EPIPE; refused: connect() refused) plus mode-specific
counts, and a final "flood total ..." line. The counts a test checks:
h2_bad_token's answers=grpc-status_16:N (refused as UNAUTHENTICATED) and
accepted_wrong_token (present only if a wrong token was answered OK, in
h2_huge_msg too), h2_huge_msg's max_bytes_accepted_on_a_stream, and
h2_streams' max_streams_held_on_a_connection. It never dies on a reset or a
refused connection: those are counted. Exit status 0 unless the arguments
are wrong (2).

Usage: flood_coordinator.py HOST:PORT [--duration SECS] [--modes a,b,...]
           [--hoard N] [--streams N] [--hold SECS] [--huge-cap MIB] [--seed N]
"""

import argparse
import errno
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = 0, 1, 3, 4, 5, 6, 7
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
METHODS = ["Stop", "Store", "Join", "Heartbeat", "Finish", "Status"]
SERVICE = "/fastnn.dist.proto.Coordinator/"
ALL_MODES = ["garbage", "hoard", "h2_bad_frame", "h2_bad_token", "h2_huge_msg", "h2_streams"]
RESET_ERRNOS = {errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED}

STOP = threading.Event()
RANDOM_POOL = b""  # filled in main(): 4 MiB of random bytes, sliced for payloads


class Stats:
    """Counters of one mode; thread-safe."""

    def __init__(self, name):
        self.name = name
        self.lock = threading.Lock()
        self.c = {"connections": 0, "bytes_sent": 0, "errors": 0, "resets": 0, "refused": 0}
        self.maps = {}

    def add(self, key, n=1):
        with self.lock:
            self.c[key] = self.c.get(key, 0) + n

    def max(self, key, v):
        with self.lock:
            self.c[key] = max(self.c.get(key, 0), v)

    def tally(self, key, label):
        with self.lock:
            m = self.maps.setdefault(key, {})
            m[str(label)] = m.get(str(label), 0) + 1

    def line(self):
        with self.lock:
            parts = ["flood", "mode=" + self.name]
            for k in ["connections", "bytes_sent", "errors", "resets", "refused"]:
                parts.append("%s=%d" % (k, self.c[k]))
            for k in sorted(self.c):
                if k not in ("connections", "bytes_sent", "errors", "resets", "refused"):
                    parts.append("%s=%d" % (k, self.c[k]))
            for k in sorted(self.maps):
                items = sorted(self.maps[k].items())
                parts.append("%s=%s" % (k, ",".join("%s:%d" % kv for kv in items)))
            return " ".join(parts)


def count_error(stats, exc):
    """Classifies a socket failure; never raises."""
    stats.add("errors")
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)) or (
        isinstance(exc, OSError) and exc.errno in RESET_ERRNOS
    ):
        stats.add("resets")
    elif isinstance(exc, socket.timeout):
        stats.add("timeouts")
    else:
        stats.tally("other_errors", type(exc).__name__)


def connect(addr, stats, timeout=5.0):
    """A connected socket, or None (refused/failed, counted; backs off a little)."""
    try:
        s = socket.create_connection(addr, timeout=timeout)
    except ConnectionRefusedError:
        stats.add("refused")
        stats.add("errors")
        STOP.wait(0.05)
        return None
    except OSError as e:
        count_error(stats, e)
        STOP.wait(0.05)
        return None
    s.settimeout(timeout)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    stats.add("connections")
    return s


def send(sock, data, stats):
    """sendall(), counting what went out; False when the connection failed."""
    try:
        sock.sendall(data)
        stats.add("bytes_sent", len(data))
        return True
    except (OSError, ValueError) as e:
        count_error(stats, e)
        return False


def close(sock):
    try:
        sock.close()
    except OSError:
        pass


def rand_bytes(n):
    if n <= len(RANDOM_POOL):
        start = random.randrange(0, len(RANDOM_POOL) - n + 1)
        return RANDOM_POOL[start : start + n]
    return os.urandom(n)


# ---------------------------------------------------------------- HTTP/2 / HPACK


def frame(ftype, flags, stream, payload, declared=None):
    """One HTTP/2 frame; `declared` overrides the 24-bit length field."""
    n = len(payload) if declared is None else declared
    return struct.pack(">I", n)[1:] + struct.pack(">BBI", ftype, flags, stream & 0x7FFFFFFF) + payload


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """Literal header field without indexing, new name, no Huffman."""
    n, v = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def grpc_headers(authority, method, token):
    block = b"".join(
        hpack_literal(k, v)
        for k, v in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", SERVICE + method),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("user-agent", "flood_coordinator.py"),
        ]
    )
    if token is not None:
        block += hpack_literal("authorization", "Bearer " + token)
    return block


def pb_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def small_request(method):
    """A small valid protobuf request for `method` (fields per coordinator.proto)."""
    if method == "Stop":
        reason = b"flooded"
        return b"\x0a" + pb_varint(len(reason)) + reason  # reason = 1
    if method == "Store":
        key = b"flood/key"
        return b"\x12" + pb_varint(len(key)) + key + b"\x1a\x03abc"  # op SET, keys, value
    if method == "Join":
        return b"\x08\x01\x10\x02\x28" + pb_varint(1000)  # rank 1, world 2, wait_ms
    if method == "Heartbeat":
        return b"\x08\x01\x18\x01"  # rank 1, request_stop = true
    if method == "Finish":
        return b"\x08\x00\x10\x07\x18\x05"  # rank 0, exit_code 7, step 5
    return b""  # Status


def grpc_message(payload, declared=None):
    n = len(payload) if declared is None else declared
    return b"\x00" + struct.pack(">I", n) + payload


STATIC_TABLE = [
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"),
    (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"), (":status", "200"),
    (":status", "204"), (":status", "206"), (":status", "304"), (":status", "400"),
    (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""),
    ("accept", ""), ("access-control-allow-origin", ""), ("age", ""), ("allow", ""),
    ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
    ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
    ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""),
    ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""),
    ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""),
    ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""),
    ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
    ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
]


class HpackDecoder:
    """Enough HPACK to read a gRPC server's answers. Huffman-coded strings
    (gRPC core uses them only for -bin values) decode to "<huffman>"."""

    def __init__(self):
        self.dyn = []
        self.size = 0
        self.max_size = 4096

    def _int(self, data, i, prefix_bits):
        limit = (1 << prefix_bits) - 1
        v = data[i] & limit
        i += 1
        if v < limit:
            return v, i
        shift = 0
        while True:
            b = data[i]
            i += 1
            v += (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v, i

    def _str(self, data, i):
        huff = data[i] & 0x80
        n, i = self._int(data, i, 7)
        raw = data[i : i + n]
        return ("<huffman>" if huff else raw.decode("latin-1")), i + n, n

    def _lookup(self, idx):
        if 1 <= idx <= len(STATIC_TABLE):
            return STATIC_TABLE[idx - 1]
        j = idx - len(STATIC_TABLE) - 1
        if 0 <= j < len(self.dyn):
            return self.dyn[j]
        raise ValueError("hpack index %d out of range" % idx)

    def _insert(self, name, value, wire_len):
        size = len(name) + wire_len + 32
        self.dyn.insert(0, (name, value, size))
        self.size += size
        self._evict()

    def _evict(self):
        while self.size > self.max_size and self.dyn:
            self.size -= self.dyn.pop()[2]

    def decode(self, data):
        out, i = [], 0
        while i < len(data):
            b = data[i]
            if b & 0x80:  # indexed
                idx, i = self._int(data, i, 7)
                e = self._lookup(idx)
                out.append((e[0], e[1]))
            elif b & 0x40:  # literal, incremental indexing
                name, value, vlen, i = self._literal(data, i, 6)
                self._insert(name, value, vlen)
                out.append((name, value))
            elif b & 0x20:  # dynamic table size update
                self.max_size, i = self._int(data, i, 5)
                self._evict()
            else:  # literal without indexing / never indexed
                name, value, _, i = self._literal(data, i, 4)
                out.append((name, value))
        return out

    def _literal(self, data, i, prefix_bits):
        """A literal header field at data[i]: its name (indexed, or a
        literal when the index is 0), its value, the value's length on the
        wire and the offset after it."""
        idx, i = self._int(data, i, prefix_bits)
        if idx:
            name = self._lookup(idx)[0]
        else:
            name, i, _ = self._str(data, i)
        value, i, vlen = self._str(data, i)
        return name, value, vlen, i


class H2Conn:
    """A client-side HTTP/2 connection that reads and answers the server's
    frames (SETTINGS ack, PING ack) and tracks flow-control windows and how
    each stream ended."""

    def __init__(self, sock, stats):
        self.sock = sock
        self.stats = stats
        self.buf = b""
        self.hpack = HpackDecoder()
        self.peer_settings = {}
        self.conn_window = 65535
        self.initial_stream_window = 65535
        self.stream_window = {}
        self.ended = {}  # stream id -> "grpc-status N" / "rst N" / ...
        self.header_block = {}
        self.goaway = None
        self.closed = False
        self.max_frame = 16384

    def send(self, data):
        if self.closed:
            return False
        ok = send(self.sock, data, self.stats)
        if not ok:
            self.closed = True
        return ok

    def start(self):
        return self.send(PREFACE + frame(SETTINGS, 0, 0, b""))

    def pump(self, timeout):
        """Waits up to `timeout` s for the server's bytes and handles the
        frames of what one read returns."""
        if self.closed:
            return
        try:
            self.sock.settimeout(max(0.001, timeout))
            chunk = self.sock.recv(262144)
        except socket.timeout:
            return
        except OSError as e:
            count_error(self.stats, e)
            self.closed = True
            return
        if not chunk:
            self.closed = True
            self.stats.add("server_closed")
            return
        self.buf += chunk
        self._parse()

    def _parse(self):
        while len(self.buf) >= 9:
            n = int.from_bytes(self.buf[0:3], "big")
            if len(self.buf) < 9 + n:
                return
            ftype, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload = self.buf[9 : 9 + n]
            self.buf = self.buf[9 + n :]
            try:
                self._handle(ftype, flags, sid, payload)
            except (ValueError, IndexError, struct.error) as e:
                self.stats.tally("decode_errors", type(e).__name__)

    def _handle(self, ftype, flags, sid, payload):
        if ftype == SETTINGS and not flags & ACK:
            for j in range(0, len(payload) - 5, 6):
                k, v = struct.unpack(">HI", payload[j : j + 6])
                self.peer_settings[k] = v
                if k == 4:
                    delta = v - self.initial_stream_window
                    self.initial_stream_window = v
                    for s in self.stream_window:
                        self.stream_window[s] += delta
                elif k == 5:
                    self.max_frame = v
            self.send(frame(SETTINGS, ACK, 0, b""))
        elif ftype == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload[:8]))
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
            if sid == 0:
                self.conn_window += inc
            elif sid in self.stream_window:
                self.stream_window[sid] += inc
        elif ftype in (HEADERS, CONTINUATION):
            block = payload
            if ftype == HEADERS:
                pad = payload[0] if flags & 0x8 else 0
                start = (1 if flags & 0x8 else 0) + (5 if flags & 0x20 else 0)
                block = payload[start : len(payload) - pad]
            self.header_block[sid] = self.header_block.get(sid, b"") + block
            if flags & END_HEADERS:
                headers = self.hpack.decode(self.header_block.pop(sid))
                status = [v for k, v in headers if k == "grpc-status"]
                if status:
                    self.ended.setdefault(sid, "grpc-status " + status[0])
                    msg = [v for k, v in headers if k == "grpc-message"]
                    if msg:
                        self.stats.tally("grpc_messages", msg[0].replace(" ", "%20")[:40])
        elif ftype == DATA:
            self.stats.add("data_bytes_received", len(payload))
        elif ftype == RST_STREAM:
            code = struct.unpack(">I", payload[:4])[0]
            self.ended.setdefault(sid, "rst %d" % code)
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = (last & 0x7FFFFFFF, code, payload[8:80].decode("latin-1", "replace"))

    def open_stream(self, sid, block, end_stream=False):
        self.stream_window[sid] = self.initial_stream_window
        flags = END_HEADERS | (END_STREAM if end_stream else 0)
        return self.send(frame(HEADERS, flags, sid, block))

    def send_data(self, sid, data, end_stream=False):
        """Sends as much of `data` as the windows allow now; returns bytes sent."""
        allowed = min(len(data), self.conn_window, self.stream_window.get(sid, 0), self.max_frame)
        if allowed <= 0 and data:
            return 0
        last = end_stream and allowed == len(data)
        if not self.send(frame(DATA, END_STREAM if last else 0, sid, data[:allowed])):
            return -1
        self.conn_window -= allowed
        self.stream_window[sid] -= allowed
        return allowed


def outcome(conn, sid):
    if sid in conn.ended:
        return conn.ended[sid]
    if conn.goaway is not None:
        return "goaway %d" % conn.goaway[1]
    if conn.closed:
        return "closed"
    return None


# ---------------------------------------------------------------- modes


def mode_garbage(addr, stats, _opts):
    # Mostly small payloads (the server's cost is per connection); one in 8 is
    # 1 or 3 MiB, enough to fill the socket buffers without spending the
    # flooder's whole CPU share on copying bytes through loopback.
    sizes = [1, 24, 100, 1000, 4096, 16384, 65536] * 2 + [1 << 20, 3 << 20]
    while not STOP.is_set():
        s = connect(addr, stats)
        if s is None:
            continue
        n = random.choice(sizes)
        payload = rand_bytes(n)
        if payload.startswith(b"PRI"):
            payload = b"X" + payload[1:]
        if send(s, payload, stats):
            stats.add("payloads_sent")
        close(s)


def mode_hoard(addr, stats, opts):
    held = []
    while not STOP.is_set():
        # Drop what the server closed (a readable socket with EOF or an error).
        alive = []
        for s, h2 in held:
            try:
                s.settimeout(0)
                data = s.recv(65536)
                if not data:
                    stats.add("server_closed")
                    close(s)
                    continue
                if h2:
                    stats.add("bytes_received", len(data))
                alive.append((s, h2))
            except (BlockingIOError, InterruptedError):
                alive.append((s, h2))
            except OSError as e:
                count_error(stats, e)
                close(s)
        held = alive
        while len(held) < opts.hoard and not STOP.is_set():
            s = connect(addr, stats, timeout=2.0)
            if s is None:
                break
            h2 = len(held) % 2 == 1
            if h2 and not send(s, PREFACE + frame(SETTINGS, 0, 0, b""), stats):
                close(s)
                continue
            held.append((s, h2))
        stats.max("peak_held", len(held))
        STOP.wait(0.5)
    stats.add("held_at_end", len(held))
    for s, _ in held:
        close(s)


def mode_h2_bad_frame(addr, stats, _opts):
    variants = ["data_16mib", "headers_16mib", "settings_len5", "unknown_16mib", "window_update_0", "random"]
    k = 0
    while not STOP.is_set():
        s = connect(addr, stats)
        if s is None:
            continue
        conn = H2Conn(s, stats)
        v = variants[k % len(variants)]
        k += 1
        junk = rand_bytes(random.choice([100, 16384, 262144]))
        if v == "data_16mib":
            bad = frame(DATA, 0, 1, b"", declared=(1 << 24) - 1) + junk
        elif v == "headers_16mib":
            bad = frame(HEADERS, END_HEADERS, 1, b"", declared=(1 << 24) - 1) + junk
        elif v == "settings_len5":
            bad = frame(SETTINGS, 0, 0, b"\x00\x04\x00\x00\x01")
        elif v == "unknown_16mib":
            bad = frame(0xEE, 0, 3, b"", declared=(1 << 24) - 1) + junk
        elif v == "window_update_0":
            bad = frame(WINDOW_UPDATE, 0, 0, b"\x00\x00\x00\x00")
        else:
            bad = junk
        if conn.start() and conn.send(bad):
            stats.tally("sent", v)
            t0 = time.monotonic()
            while not conn.closed and conn.goaway is None and time.monotonic() - t0 < 1.0:
                conn.pump(0.2)
            if conn.goaway is not None:
                stats.tally("goaway", conn.goaway[1])
            elif conn.closed:
                stats.tally("closed_without_goaway", v)
            else:
                stats.tally("still_open_after_1s", v)
        close(s)


def started_h2(addr, stats):
    """An HTTP/2 connection whose preface and settings are exchanged, or
    None when connecting or the exchange failed (connect counts it)."""
    s = connect(addr, stats)
    if s is None:
        return None
    conn = H2Conn(s, stats)
    if not conn.start():
        close(s)
        return None
    return conn


def mode_h2_bad_token(addr, stats, _opts):
    authority = "%s:%d" % addr
    k = 0
    while not STOP.is_set():
        conn = started_h2(addr, stats)
        if conn is None:
            continue
        # A few calls per connection, on streams 1, 3, 5, ...
        for sid in range(1, 17, 2):
            if STOP.is_set() or conn.closed:
                break
            method = METHODS[k % len(METHODS)]
            token = None if k % 7 == 3 else "wrong-token-%d" % k
            k += 1
            msg = grpc_message(small_request(method))
            if not conn.open_stream(sid, grpc_headers(authority, method, token)):
                break
            if conn.send_data(sid, msg, end_stream=True) < 0:
                break
            stats.add("calls")
            t0 = time.monotonic()
            while outcome(conn, sid) is None and time.monotonic() - t0 < 5:
                conn.pump(0.2)
            res = outcome(conn, sid) or "no_answer_in_5s"
            stats.tally("answers", res.replace(" ", "_"))
            if res.startswith("grpc-status 0"):
                stats.tally("accepted_wrong_token", method)
        close(conn.sock)


def mode_h2_huge_msg(addr, stats, opts):
    authority = "%s:%d" % addr
    cap = int(opts.huge_cap * (1 << 20))
    chunk = rand_bytes(16384)
    while not STOP.is_set():
        s = connect(addr, stats)
        if s is None:
            continue
        conn = H2Conn(s, stats)
        if not conn.start() or not conn.open_stream(1, grpc_headers(authority, "Store", "wrong-token")):
            close(s)
            continue
        stats.add("calls")
        pending = grpc_message(b"", declared=100 << 20) + chunk  # declares 100 MiB
        sent, last_progress, res = 0, time.monotonic(), None
        t0 = time.monotonic()
        while not STOP.is_set():
            conn.pump(0.0)
            res = outcome(conn, 1)
            if res is not None:
                break
            if sent >= cap:
                res = "cap_reached"
                break
            n = conn.send_data(1, pending)
            if n < 0:
                res = outcome(conn, 1) or "closed"
                break
            if n > 0:
                sent += n
                pending = pending[n:] or chunk
                last_progress = time.monotonic()
            else:
                conn.pump(0.2)
                if time.monotonic() - last_progress > 3.0:
                    res = outcome(conn, 1) or "stalled"
                    break
        if res is None:
            res = "stopped"
        stats.tally("ended", res.replace(" ", "_"))
        stats.max("max_bytes_accepted_on_a_stream", sent)
        stats.add("stream_ms_total", int((time.monotonic() - t0) * 1000))
        if res.startswith("grpc-status 0"):
            stats.tally("accepted_wrong_token", "Store")
        close(s)


def mode_h2_streams(addr, stats, opts):
    authority = "%s:%d" % addr
    while not STOP.is_set():
        conn = started_h2(addr, stats)
        if conn is None:
            continue
        conn.pump(0.2)
        # The window sizes change with every connection; only the stream limit is tallied.
        stats.tally("server_max_streams_setting", str(conn.peer_settings.get(3, "none")))
        if 3 in conn.peer_settings:
            stats.max("server_max_concurrent_streams", conn.peer_settings[3])
        opened = 0
        for j in range(opts.streams):
            if STOP.is_set() or conn.closed:
                break
            sid = 1 + 2 * j
            block = grpc_headers(authority, METHODS[j % len(METHODS)], "wrong-token")
            if not conn.open_stream(sid, block):
                break
            conn.send_data(sid, grpc_message(b"", declared=100 << 20))
            opened += 1
            if j % 50 == 49:
                conn.pump(0.0)
        stats.add("streams_opened", opened)
        t0 = time.monotonic()
        while not STOP.is_set() and not conn.closed and time.monotonic() - t0 < opts.hold:
            conn.pump(0.5)
        for res in conn.ended.values():
            stats.tally("ended", res.replace(" ", "_"))
        held = max(0, opened - len(conn.ended)) if conn.goaway is None and not conn.closed else 0
        stats.add("streams_still_open", held)
        stats.max("max_streams_held_on_a_connection", held)
        if conn.goaway is not None:
            stats.tally("goaway", conn.goaway[1])
        close(conn.sock)


MODES = {
    "garbage": (mode_garbage, 2),
    "hoard": (mode_hoard, 1),
    "h2_bad_frame": (mode_h2_bad_frame, 1),
    "h2_bad_token": (mode_h2_bad_token, 2),
    "h2_huge_msg": (mode_h2_huge_msg, 2),
    "h2_streams": (mode_h2_streams, 1),
}


def guarded(fn, addr, stats, opts):
    """Runs a mode until STOP; anything unexpected is counted, then retried."""
    while not STOP.is_set():
        try:
            fn(addr, stats, opts)
        except Exception as e:  # noqa: BLE001 - the flooder must not die
            stats.add("errors")
            stats.tally("unexpected", type(e).__name__)
            STOP.wait(0.1)


def main():
    global RANDOM_POOL
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("target", help="HOST:PORT of the coordinator")
    p.add_argument("--duration", type=float, default=30.0, help="seconds (SIGTERM ends it earlier)")
    p.add_argument("--modes", default=",".join(ALL_MODES))
    p.add_argument("--hoard", type=int, default=200, help="idle connections to hold")
    p.add_argument("--streams", type=int, default=2000, help="streams h2_streams opens per connection")
    p.add_argument("--hold", type=float, default=5.0, help="seconds h2_streams holds its streams")
    p.add_argument("--huge-cap", type=float, default=8.0, help="MiB h2_huge_msg sends per stream at most")
    p.add_argument("--seed", type=int, default=None)
    opts = p.parse_args()
    host, _, port = opts.target.rpartition(":")
    modes = [m for m in opts.modes.split(",") if m]
    if not host or not port.isdigit() or any(m not in MODES for m in modes):
        p.error("want HOST:PORT and modes from %s" % ",".join(ALL_MODES))
    addr = (host.strip("[]"), int(port))
    random.seed(opts.seed)
    RANDOM_POOL = os.urandom(4 << 20)

    def on_signal(_sig, _frame):
        STOP.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    stats = {m: Stats(m) for m in modes}
    threads = []
    for m in modes:
        fn, n = MODES[m]
        for _ in range(n):
            t = threading.Thread(target=guarded, args=(fn, addr, stats[m], opts), daemon=True)
            t.start()
            threads.append(t)
    t0 = time.monotonic()
    STOP.wait(opts.duration)
    STOP.set()
    join_deadline = time.monotonic() + 10
    for t in threads:
        t.join(timeout=max(0.1, join_deadline - time.monotonic()))
    total = {"connections": 0, "bytes_sent": 0, "errors": 0, "resets": 0, "refused": 0}
    for m in modes:
        print(stats[m].line(), flush=True)
        for k in total:
            total[k] += stats[m].c[k]
    print(
        "flood total secs=%.1f %s" % (time.monotonic() - t0, " ".join("%s=%d" % kv for kv in total.items())),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
