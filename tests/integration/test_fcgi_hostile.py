#!/usr/bin/env python3
"""
test_fcgi_hostile.py: no FastCGI peer can crash, hang or fool cfpm, on a
live pool (3 workers) and its master, straight on their unix sockets.

1. Management records: the FCGI_GET_VALUES record that overflows libfcgi
   2.4.2's 64-byte stack buffer (FCGI_MAX_CONNS repeated), and its
   neighbours (each known name repeated, all mixed, a full 65535-byte
   record, an unknown type, GET_VALUES before a request, one inside a
   request, more than cfpm answers per connection), on the pool socket
   and on the status socket. Each gets a bounded GET_VALUES_RESULT or
   FCGI_UNKNOWN_TYPE, or its connection is closed; the same master and
   workers serve afterwards and nothing crashed.
2. Stalls: as many connections as workers, each stalled at one point of
   a request (nothing sent, one byte, half a header, after BEGIN_REQUEST,
   mid-PARAMS, after PARAMS, mid-body of a POST, a request trickled one
   byte every 150 ms): a request sent right after them is answered once
   request_read_timeout (1 s here) has passed, never later than 3 s;
   every stalled connection is closed; the log says so in a few lines,
   not one per connection.
3. Status socket: 12 idle clients, then a worker is SIGKILLed: its
   replacement runs within 2 s (libfcgi in the master waited ~1 s per
   idle client), the page answers meanwhile, and the idle clients are
   closed at request_read_timeout.
4. Requests over the transport's limits: a body over FCGI_MAX_STDIN gets
   413, parameters over FCGI_MAX_PARAMS 400, a request whose record
   header is cut by FCGI_MAX_REQUEST 413 (not a silent close), and the
   worker serves on.
5. A raw stream fuzzer: mutated record sequences (record types, request
   ids, lengths, padding, splits, truncations, management records, short
   stalls) against both sockets for CFPM_FUZZ_SECONDS (default 60) with
   4 clients; afterwards the same pids serve, no descriptor was left
   open, memory did not grow, nothing crashed. CFPM_FUZZ_SEED fixes the
   seed (printed).
6. TCP: a request just under the limits (about 190 KiB) is whole in the
   socket's buffer and answered at once (the default window is ~85 KiB).
"""

import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from harness.paths import SANITIZERS  # noqa: E402

POOL = 3
READ_TIMEOUT = 1
FCGI_GET_VALUES, FCGI_GET_VALUES_RESULT, FCGI_UNKNOWN_TYPE = 9, 10, 11
FCGI_STDOUT, FCGI_END_REQUEST = 6, 3
MAX_STDIN = 80 * 1024           # FCGI_MAX_STDIN (src/server/fcgi.h)
MAX_PARAMS = 96 * 1024          # FCGI_MAX_PARAMS
MAX_REQUEST = MAX_PARAMS + MAX_STDIN + 16 * 1024    # FCGI_MAX_REQUEST


def rec(rtype, content=b"", req_id=1, pad=0):
    return (struct.pack("!BBHHBB", 1, rtype, req_id, len(content), pad, 0)
            + content + b"\0" * pad)


def pair(name, value=b""):
    out = b""
    for n in (len(name), len(value)):
        out += bytes([n]) if n < 128 else struct.pack("!I", 0x80000000 | n)
    return out + name + value


def request(method="GET", uri="/health", body=b"", req_id=1, extra=()):
    params = [(b"REQUEST_METHOD", method.encode()),
              (b"REQUEST_URI", uri.encode()),
              (b"SCRIPT_NAME", uri.split("?")[0].encode()),
              (b"CONTENT_TYPE", b"application/json"),
              (b"CONTENT_LENGTH", str(len(body)).encode())] + list(extra)
    p = b"".join(pair(k, v) for k, v in params)
    out = rec(1, struct.pack("!HB5x", 1, 0), req_id)
    for i in range(0, len(p), 65535):
        out += rec(4, p[i:i + 65535], req_id)
    out += rec(4, b"", req_id)
    for i in range(0, len(body), 65535):
        out += rec(5, body[i:i + 65535], req_id)
    return out + rec(5, b"", req_id)


def records(data):
    """(type, id, content) of every whole record in data."""
    out, pos = [], 0
    while len(data) - pos >= 8:
        _, t, rid, clen, plen, _ = struct.unpack("!BBHHBB", data[pos:pos + 8])
        if len(data) - pos < 8 + clen + plen:
            break
        out.append((t, rid, data[pos + 8:pos + 8 + clen]))
        pos += 8 + clen + plen
    return out


def exchange(path, data, timeout=5, shut=True):
    """Sends data on a new connection and reads until the server closes or
    ends a request. Returns (bytes, closed_by_server, seconds)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    got, closed = b"", False
    try:
        s.connect(path)
        try:
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
            if any(t == FCGI_END_REQUEST for t, _, _ in records(got)):
                break
    except socket.timeout:
        pass
    except OSError:
        closed = True           # a reset is a close too
    finally:
        s.close()
    return got, closed, time.monotonic() - t0


def status_of(data):
    out = b"".join(c for t, _, c in records(data) if t == FCGI_STDOUT)
    m = re.match(rb"Status: (\d+)", out)
    return int(m.group(1)) if m else 0



def pids(c):
    return (c.pid, tuple(sorted(c.workers())))


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def fd_links(pid):
    out = []
    for fd in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return out



def serves(st, c):
    r = ct.fcgi_request(c.sock, "GET", "/health", timeout=5)
    s = ct.fcgi_request(st.status_sock, "GET", "/status?json", timeout=5)
    return r.status == 200 and s.status == 200


# ---------------------------------------------------------------------------
# 1. Management records

def management_cases():
    mc = pair(b"FCGI_MAX_CONNS")
    cases = [
        ("FCGI_MAX_CONNS x 8 (libfcgi's overflow)", rec(9, mc * 8, 0)),
        ("FCGI_MAX_CONNS x 4000 (a full record)", rec(9, mc * 4095, 0)),
        ("FCGI_MAX_REQS x 3000", rec(9, pair(b"FCGI_MAX_REQS") * 3000, 0)),
        ("FCGI_MPXS_CONNS x 3000", rec(9, pair(b"FCGI_MPXS_CONNS") * 3000,
                                        0)),
        ("all three names mixed x 1000", rec(9, (mc + pair(
            b"FCGI_MAX_REQS") + pair(b"FCGI_MPXS_CONNS")) * 1000, 0)),
        ("names with values, padding 255", rec(9, pair(
            b"FCGI_MAX_CONNS", b"x" * 200) * 100, 0, 255)),
        ("unknown names of 1..255 bytes", rec(9, b"".join(
            pair(b"N" * n) for n in range(1, 256)), 0)),
        ("an unknown management type", rec(200, b"x" * 1000, 0)),
        ("BEGIN_REQUEST with id 0", rec(1, struct.pack("!HB5x", 1, 0), 0)),
    ]
    return cases


def check_management(st, c, tap):
    tap.diag("-- 1. management records")
    before = pids(c)
    for sock, where in ((c.sock, "pool socket"),
                        (st.status_sock, "status socket")):
        for desc, data in management_cases():
            got, closed, _ = exchange(sock, data, timeout=5)
            recs = records(got)
            okay = (closed and all(t in (FCGI_GET_VALUES_RESULT,
                                         FCGI_UNKNOWN_TYPE)
                                   for t, _, _ in recs)
                    and len(got) <= 128 and len(recs) <= 1)
            tap.ok(okay, "%s, %s: bounded answer (%d bytes) or close, then "
                   "closed" % (where, desc, len(got)), repr(got[:80]))
        got, _, _ = exchange(sock, rec(9, pair(b"FCGI_MAX_CONNS") * 50, 0)
                             + request("GET", "/ping"))
        recs = records(got)
        vals = [c_ for t, _, c_ in recs if t == FCGI_GET_VALUES_RESULT]
        tap.ok(len(vals) == 1 and vals[0].count(b"FCGI_MAX_CONNS") == 1
               and status_of(got) == 200,
               "%s: GET_VALUES (x50) then a request on one connection: one "
               "answer naming FCGI_MAX_CONNS once, then the request's 200"
               % where, repr(got[:120]))
        got, closed, _ = exchange(sock, request("GET", "/ping")[:16] +
                                  rec(9, pair(b"FCGI_MAX_CONNS") * 8, 0) +
                                  request("GET", "/ping")[16:])
        tap.ok(closed and status_of(got) == 0 and not records(got),
               "%s: a management record inside a request: closed "
               "unanswered" % where)
        got, closed, _ = exchange(sock, rec(9, pair(b"FCGI_MAX_REQS"), 0) *
                                  20 + request("GET", "/ping"))
        tap.ok(closed and status_of(got) == 0 and len(records(got)) == 16,
               "%s: 20 management records before a request: 16 answered, "
               "then closed (%d records back)" % (where, len(records(got))))
    tap.ok(serves(st, c), "after the management records both sockets serve")
    tap.is_(pids(c), before, "same master and workers (nothing crashed)")
    tap.is_(ct.crash_lines(c), [], "no crash in the log")


# ---------------------------------------------------------------------------
# 2. Stalls

def stall_points():
    get = request("GET", "/health")
    post = request("POST", "/events", body=b'{"kind":"k","payload":{"p":"'
                   + b"x" * 3000 + b'"}}')
    return [
        ("nothing sent", b""),
        ("one byte", b"\x01"),
        ("half a record header", get[:4]),
        ("after BEGIN_REQUEST", get[:16]),
        ("mid-PARAMS", get[:40]),
        ("after PARAMS, no STDIN", get[:-8]),
        ("mid-body of a POST", post[:-1500]),
        ("the empty STDIN record cut short", get[:-3]),
    ]


def hold(path, data):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    if data:
        s.sendall(data)
    return s


def closed_by_server(s, timeout):
    s.settimeout(timeout)
    try:
        return s.recv(65536) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def trickle(path, data, interval, stop):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    try:
        for i in range(len(data)):
            if stop.is_set():
                break
            s.sendall(data[i:i + 1])
            time.sleep(interval)
    except OSError:
        pass
    finally:
        s.close()


def check_stalls(st, c, tap):
    tap.diag("-- 2. stalled clients (request_read_timeout = %d s)"
             % READ_TIMEOUT)
    log_before = os.path.getsize(c.log)
    for desc, data in stall_points():
        socks = [hold(c.sock, data) for _ in range(POOL)]
        time.sleep(0.05)
        t0 = time.monotonic()
        r = ct.fcgi_request(c.sock, "GET", "/health", timeout=10)
        dt = time.monotonic() - t0
        tap.ok(r.status == 200 and dt < 3.0,
               "%d connections stalled at %s: the next request is answered "
               "after %.2f s (< 3 s)" % (POOL, desc, dt), repr(r))
        closed = sum(closed_by_server(s, 3) for s in socks)
        tap.is_(closed, POOL, "%s: every stalled connection was closed by "
                "the worker" % desc)
        for s in socks:
            s.close()
    stop = threading.Event()
    data = request("GET", "/health")
    ts = [threading.Thread(target=trickle, args=(c.sock, data, 0.15, stop))
          for _ in range(POOL)]
    for t in ts:
        t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    r = ct.fcgi_request(c.sock, "GET", "/health", timeout=10)
    dt = time.monotonic() - t0
    stop.set()
    for t in ts:
        t.join()
    tap.ok(r.status == 200 and dt < 3.0,
           "%d requests trickled a byte every 150 ms (never complete in "
           "time): the deadline is from accept, the next request is "
           "answered after %.2f s" % (POOL, dt))
    with open(c.log, errors="replace") as f:
        f.seek(log_before)
        lines = [l for l in f if "incomplete" in l]
    tap.diag("stalls: %d log lines for %d stalled connections" %
             (len(lines), POOL * (len(stall_points()) + 1)))
    tap.ok(0 < len(lines) <= 2 * POOL,
           "stalls are logged, at most once per worker per 10 s (%d lines)"
           % len(lines))


# ---------------------------------------------------------------------------
# 3. Idle status clients never hold the master

def check_status_idle(st, c, tap):
    tap.diag("-- 3. idle status clients")
    idle = [hold(st.status_sock, b"") for _ in range(12)]
    idle += [hold(st.status_sock, b"\x01") for _ in range(4)]
    time.sleep(0.1)
    victim = c.workers()[0]
    t0 = time.monotonic()
    os.kill(victim, signal.SIGKILL)

    def replaced():
        w = c.workers()
        return victim not in w and len(w) == POOL
    ok = ct.wait_for(replaced, 10, 0.01)
    dt = time.monotonic() - t0
    tap.diag("status: worker respawned %.3f s after SIGKILL with 16 idle "
             "status clients held" % dt)
    tap.ok(ok and dt < 2.0, "a killed worker is replaced within 2 s while "
           "16 idle status clients are held (%.3f s)" % dt)
    t0 = time.monotonic()
    r = ct.fcgi_request(st.status_sock, "GET", "/status?json", timeout=5)
    dt = time.monotonic() - t0
    tap.ok(r.status == 200 and dt < 0.5, "the status page answers beside "
           "them in %.3f s" % dt)
    closed = sum(closed_by_server(s, READ_TIMEOUT + 2) for s in idle)
    tap.is_(closed, len(idle), "the idle status clients are closed at "
            "request_read_timeout")
    for s in idle:
        s.close()
    many = [hold(st.status_sock, b"") for _ in range(40)]
    time.sleep(0.2)
    r = ct.fcgi_request(c.sock, "GET", "/health", timeout=5)
    tap.ok(r.status == 200 and c.alive(), "40 idle status clients (more "
           "than the 32 it keeps): the master lives, the pool serves")
    for s in many:
        s.close()


# ---------------------------------------------------------------------------
# 4. Over the transport's limits

def check_limits(st, c, tap):
    tap.diag("-- 4. requests over the transport's limits")
    big = request("POST", "/events", body=b"x" * (MAX_STDIN + 1))
    got, _, _ = exchange(c.sock, big, shut=False)
    tap.is_(status_of(got), 413, "a body of FCGI_MAX_STDIN + 1 bytes: 413")
    got, _, _ = exchange(c.sock, request("GET", "/health", extra=[
        (b"HTTP_X", b"h" * MAX_PARAMS)]), shut=False)
    tap.is_(status_of(got), 400, "parameters over FCGI_MAX_PARAMS: 400")
    got, _, _ = exchange(st.status_sock, request("GET", "/status", extra=[
        (b"HTTP_X", b"h" * MAX_PARAMS)]), shut=False)
    tap.ok(status_of(got) in (400, 413), "the same on the status socket: "
           "%d" % status_of(got))
    got = [status_of(exchange(c.sock, header_at_limit(cut), shut=False)[0])
           for cut in range(1, 8)]
    tap.ok(got == [413] * 7, "one-byte body records whose header starts "
           "1 to 7 bytes below the size limit, where a worker's buffer "
           "fills: 413 each, not a silent close (%s)" % got)
    tap.ok(serves(st, c), "both sockets serve afterwards")


def header_at_limit(cut):
    """A POST whose body comes as one-byte records padded to 16 bytes,
    placed so that a record's header starts cut bytes below
    MAX_REQUEST, and more after it."""
    out = request("POST", "/events")[:-8]      # without the empty STDIN
    while len(out) + 16 + 24 <= MAX_REQUEST:
        out += rec(5, b"x", pad=7)
    out += rec(5, b"x", pad=MAX_REQUEST - cut - len(out) - 9)
    return out + rec(5, b"x", pad=7) * 64


# ---------------------------------------------------------------------------
# 5. Raw stream fuzzer

def seeds():
    return [request("GET", "/health"), request("GET", "/ping"),
            request("GET", "/status?json&full"),
            request("POST", "/events", body=b'{"kind":"k","payload":{}}'),
            rec(9, pair(b"FCGI_MAX_CONNS") * 8, 0) + request("GET", "/ping"),
            rec(77, b"abc", 0) + request("GET", "/health", req_id=300)]


def split_records(data):
    out, pos = [], 0
    while len(data) - pos >= 8:
        clen, plen = struct.unpack("!HB", data[pos + 4:pos + 7])
        out.append(data[pos:pos + 8 + clen + plen])
        pos += 8 + clen + plen
    if pos < len(data):
        out.append(data[pos:])
    return out


def mutate(rnd, data):
    recs = split_records(data)
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(recs))
        r = bytearray(recs[i])
        op = rnd.randrange(9)
        if op == 0 and len(r) >= 2:
            r[1] = rnd.randrange(256)                   # record type
        elif op == 1 and len(r) >= 4:
            r[2:4] = rnd.choice([b"\0\0", b"\0\2", b"\xff\xff"])  # id
        elif op == 2 and len(r) >= 6:
            r[4:6] = struct.pack("!H", rnd.randrange(65536))      # length
        elif op == 3 and len(r) >= 7:
            r[6] = rnd.randrange(256)                   # padding
        elif op == 4:
            recs.insert(i, rec(rnd.choice([9, 9, 2, 11, 120]), pair(
                b"FCGI_MAX_CONNS") * rnd.randint(0, 300), 0))
        elif op == 5:
            recs.insert(i, bytes(r))                    # duplicate
        elif op == 6 and len(r) > 8:
            j = rnd.randrange(8, len(r))
            r[j] = rnd.randrange(256)                   # content byte
        elif op == 7:
            del recs[i]
            if not recs:
                recs = [b""]
            continue
        elif op == 8 and len(r) >= 1:
            r[0] = rnd.choice([0, 2, 255])              # version
        recs[i] = bytes(r)
    out = b"".join(recs)
    if rnd.random() < 0.2:
        out = out[:rnd.randrange(len(out) + 1)]         # truncated
    return out


def fuzz_one(rnd, path, stats):
    data = mutate(rnd, rnd.choice(seeds()))
    stall = rnd.random() < 0.02
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(READ_TIMEOUT + 3)
    try:
        s.connect(path)
        pos = 0
        while pos < len(data):
            n = rnd.choice([1, 3, 8, 100, len(data)])
            s.sendall(data[pos:pos + n])
            pos += n
            if rnd.random() < 0.1:
                time.sleep(rnd.random() * 0.005)
        if stall:
            time.sleep(READ_TIMEOUT * 1.2)
        elif rnd.random() < 0.9:
            s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except socket.timeout:
        stats["hung"] += 1
    except OSError:
        pass
    finally:
        s.close()
    stats["execs"] += 1


def check_fuzz(st, c, tap):
    seconds = float(os.environ.get("CFPM_FUZZ_SECONDS", "60"))
    seed = int(os.environ.get("CFPM_FUZZ_SEED", str(int(time.time()))))
    tap.diag("-- 5. raw stream fuzzer: %.0f s, seed %d" % (seconds, seed))
    before = pids(c)
    log_at = os.path.getsize(c.log)
    fds = {p: fd_count(p) for p in (c.pid,) + before[1]}
    rss = {p: ct.vmrss_kb(p) for p in (c.pid,) + before[1]}
    stats = {"execs": 0, "hung": 0}
    end = time.monotonic() + seconds

    def client(k):
        rnd = random.Random(seed * 10 + k)
        while time.monotonic() < end:
            path = st.status_sock if rnd.random() < 0.3 else c.sock
            fuzz_one(rnd, path, stats)
    ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    tap.diag("fuzz: %d executions in %.0f s, %d left hanging past the "
             "deadline" % (stats["execs"], seconds, stats["hung"]))
    time.sleep(0.3)
    tap.ok(stats["execs"] > 50, "the fuzzer ran (%d executions)" %
           stats["execs"])
    tap.is_(stats["hung"], 0, "no connection was held past "
            "request_read_timeout")
    tap.ok(serves(st, c), "after the fuzzer both sockets serve")
    tap.is_(pids(c), before, "same master and workers after the fuzzer")
    tap.is_(ct.crash_lines(c, log_at), [], "no crash in the log")
    # A connection the fuzzer just closed may still be on its way out,
    # and the master opens files for a moment to render a status page.
    def no_growth():
        return all(0 <= fd_count(p) <= fds[p] for p in fds)
    ct.wait_for(no_growth, 3, 0.1)
    after = {p: fd_count(p) for p in fds}
    tap.ok(no_growth(), "no descriptor left open (master and workers)",
           "got %r, want %r" % (after, fds),
           *["%d: %r" % (p, fd_links(p)) for p in fds])
    grown = {p: (ct.vmrss_kb(p) or 0) - (rss[p] or 0) for p in rss}
    tap.diag("fuzz: RSS growth kB %r" % grown)
    if SANITIZERS:
        # ASan's quarantine keeps freed blocks: RSS says nothing there.
        tap.skip("RSS grew by less than 4 MiB in every process",
                 "sanitizer build")
    else:
        tap.ok(all(g < 4096 for g in grown.values()),
               "RSS grew by less than 4 MiB in every process")


def exchange_tcp(addr, data, timeout=5):
    got = b""
    try:
        s = socket.create_connection(addr, timeout=timeout)
    except OSError:
        return got
    try:
        s.sendall(data)
        while not any(t == FCGI_END_REQUEST for t, _, _ in records(got)):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    finally:
        s.close()
    return got


def check_tcp(st, tap):
    """On TCP the kernel's default window holds ~85 KiB unread: the
    listen socket's receive buffer must hold a whole request, or a large
    legitimate one would wait on itself until request_read_timeout."""
    tap.diag("-- 6. a large request over TCP")
    port = ct.free_port()
    conf = st.write_config({"request_read_timeout": "3",
                            "listen": "127.0.0.1:%d" % port})
    c = st.spawn_cfpm(conf, n=1)
    up = ct.wait_for(lambda: status_of(exchange_tcp(
        ("127.0.0.1", port), request("GET", "/ping"), 2)) == 200, 15, 0.2)
    tap.ok(up, "cfpm listens on TCP")
    big = request("POST", "/events", body=b"b" * (MAX_STDIN - 10), extra=[
        (b"HTTP_X", b"h" * (MAX_PARAMS - 2000))])
    t0 = time.monotonic()
    got = exchange_tcp(("127.0.0.1", port), big, 10)
    dt = time.monotonic() - t0
    tap.ok(status_of(got) == 401 and dt < 1.5, "a %d-byte request (just "
           "under the limits) over TCP is read whole and answered (%d, "
           "401 without a token) in %.2f s" % (len(big), status_of(got), dt))
    tap.is_(st.stop_cfpm(c), 0, "the TCP pool stops cleanly")


def main(tap):
    with ct.Stack(tap) as st:
        st.setup(rows=100)
        c = st.start_cfpm({"request_read_timeout": str(READ_TIMEOUT)},
                          n=POOL)
        check_management(st, c, tap)
        check_stalls(st, c, tap)
        check_status_idle(st, c, tap)
        check_limits(st, c, tap)
        check_fuzz(st, c, tap)
        tap.is_(st.stop_cfpm(c), 0, "clean stop")
        check_tcp(st, tap)


if __name__ == "__main__":
    ct.main(main)
