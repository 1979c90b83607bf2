#!/usr/bin/env python3
"""
test_bounds.py: every wait on a client is bounded, reading costs work in
proportion to the bytes, and nothing the starter had open reaches a
worker (issue 21, items 2, 4 and 5; item 3 is test_nofile_limit.py). A
pool of 4 behind nginx, raw FastCGI clients on its sockets.

1. Clients that stop reading. pool + 2 raw clients ask for a 508 KiB
   reply and never read: while the workers send, the status page shows
   them Finishing (never Idle); each reply is cut at
   request_write_timeout (1 s) and counted ("cut replies",
   cfpm_cut_replies_total), the cut logged in a line or two; clients
   through nginx are served within 3 s meanwhile, also while the
   stalled clients come back again and again; a client that reads
   slowly is cut as well.
2. Idle status clients: 40 connections that send nothing or half a
   record (8 past the 32 slots): a status request through nginx is
   answered within 1 s, every time.
3. Work linear in the bytes (worker CPU from /proc/PID/schedstat and
   utime + stime): the issue's 57 KB request as records of up to 64 KiB,
   as 17,000 one-byte records then a 40 KB record, and the same with
   its last record trickled 32 bytes a send over 2 s (a10d06d scanned
   the 17,000 records again at every read: 150 ms): within 2x of each
   other sent at once (3x in the sanitizer build: SPLIT_RATIO_MAX), none
   over 50 ms. A request trickled a byte a
   send is read dozens of bytes per wake-up, not one (its cost is the
   kernel's per send). The master's status socket: 10,000 one-byte
   records then one of 10 KB, trickled, under 50 ms of master CPU.
4. Nothing inherited: cfpm started with descriptors open at odd numbers
   (/etc/shadow, a pipe, a socket, a directory), directly and under
   systemd-socket-activate (one just above LISTEN_FDS' range): every
   descriptor of the master and of each worker is accounted for, by
   what it is, and the pool serves.
Output: TAP.
"""

import json
import os
import re
import socket
import struct
import sys
import threading
import time

import cfpmtest as ct
from harness.fcgi import cgi_params  # noqa: E402
from harness.paths import SANITIZERS  # noqa: E402

POOL = 4
WRITE_TIMEOUT = 1               # request_write_timeout's default
NGINX_BOUND = 3.0               # others are served within this
STATUS_BOUND = 1.0              # a status request is answered within
FCGI_STDOUT, FCGI_END_REQUEST = 6, 3
REPLY_508K = '{"n":[%s]}' % ",".join(["1e-16383"] * 31)   # prints 508 KiB
CONTENT = 17000                 # one-byte records in the item 4 request
CPU_MAX_MS = 50.0
# How far apart the request as large records and as 17,000 one-byte
# records may cost. The one-byte form is 3.4 times the bytes (a header
# a record), and each record's header is decoded by the scan and by the
# gather: 1.6x in the plain build. ASan and UBSan check every one of
# those header bytes, which multiplies the per-record work about five
# times and nothing per byte the kernel copies: 1.7x to 2.3x seen there.
# Either bound is far below what a scan that rereads the records does
# (a10d06d: 150 ms against 0.3 ms).
SPLIT_RATIO_MAX = 3.0 if SANITIZERS else 2.0


def rec(rtype, content=b"", req_id=1):
    """A record without padding (tiny records stay tiny)."""
    return struct.pack("!BBHHBB", 1, rtype, req_id, len(content), 0,
                       0) + content


def records_of(params, body, chunk):
    """A whole request, parameters and body in records of chunk bytes."""
    out = rec(1, struct.pack("!HB5x", 1, 0))
    p = ct.fcgi_params(params)
    for i in range(0, len(p), chunk):
        out += rec(4, p[i:i + chunk])
    out += rec(4)
    for i in range(0, len(body), chunk):
        out += rec(5, body[i:i + chunk])
    return out + rec(5)


def split_records(buf):
    out = []
    while len(buf) >= 8:
        _, t, _, clen, plen, _ = struct.unpack("!BBHHBB", buf[:8])
        if len(buf) < 8 + clen + plen:
            break
        out.append((t, buf[8:8 + clen]))
        buf = buf[8 + clen + plen:]
    return out


def reply_status(buf):
    out = b"".join(c for t, c in split_records(buf) if t == FCGI_STDOUT)
    m = re.match(rb"Status: (\d+)", out)
    return int(m.group(1)) if m else 0


def ended(buf):
    return any(t == FCGI_END_REQUEST for t, _ in split_records(buf))


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def drain(s, timeout):
    """What s still gets until the peer closes (or timeout): (bytes,
    closed)."""
    got = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(1 << 20)
            if not chunk:
                return got, True
            got += chunk
    except socket.timeout:
        return got, False
    except OSError:
        return got, True
    return got, False


def status_json(st, full=True):
    r = ct.fcgi_request(st.status_sock, "GET", "/status?json" +
                        ("&full" if full else ""), timeout=5)
    try:
        return json.loads(r.body) if r.status == 200 else None
    except ValueError:
        return None


def log_lines(c, offset, pattern):
    with open(c.log, errors="replace") as f:
        f.seek(offset)
        return [l for l in f.read().splitlines() if re.search(pattern, l)]


# ---------------------------------------------------------------------------
# 1. Clients that stop reading

class Prober:
    """GET /health through nginx every interval until stopped: every
    status and latency."""

    def __init__(self, st, interval=0.1):
        self.st, self.interval = st, interval
        self.results = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            r = self.st.get("/health", timeout=15)
            self.results.append((r.status, time.monotonic() - t0))
            time.sleep(self.interval)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join(20)

    def worst(self):
        return max((d for _, d in self.results), default=0.0)

    def all_ok(self):
        return bool(self.results) and all(s == 200 for s, _ in
                                          self.results)


def big_reply_request(st):
    """The raw request for a GET whose reply is 508 KiB."""
    tok = st.tokens["valid"]
    r = st.post("/events", '{"kind":"big","payload":%s}' % REPLY_508K, tok)
    ident = (r.json() or {}).get("id")
    g = st.get("/events/%s" % ident, tok, timeout=30)
    raw = records_of(cgi_params("GET", "/events/%s" % ident,
                                {"Authorization": "Bearer " + tok}),
                     b"", 65535)
    return raw, len(g.body) if g.status == 200 else 0


def sample_states(st, seconds, out):
    """Worker states seen in the status page every 50 ms: out gets one
    list of states per sample."""
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        j = status_json(st)
        if j:
            out.append([p.get("state") for p in j.get("processes", [])])
        time.sleep(0.05)


def check_readers(st, c, tap):
    tap.diag("-- 1. clients that never read a 508 KiB reply")
    raw, size = big_reply_request(st)
    tap.ok(size > 2 * 212992, "the reply through nginx: %d bytes, over "
           "twice what a unix socket buffers" % size)
    base = status_json(st, full=False) or {}
    cut0 = base.get("cut replies", 0)
    off = os.path.getsize(c.log)
    states = []
    with Prober(st) as probe:
        stuck = []
        for _ in range(POOL + 2):
            s = connect(c.sock)
            s.sendall(raw)
            stuck.append(s)
        sample_states(st, 1.5, states)
        time.sleep(2.5)
    finishing = max((s.count("Finishing") for s in states), default=0)
    idle_then = min((s.count("Idle") for s in states
                     if s.count("Finishing") == finishing), default=POOL)
    tap.ok(finishing == POOL and idle_then == 0,
           "while they send, the status page shows the %d workers "
           "Finishing (at most %d at once, %d Idle then)" %
           (POOL, finishing, idle_then), repr(states[:6]))
    tap.ok(probe.all_ok() and probe.worst() < NGINX_BOUND,
           "%d requests through nginx meanwhile: all 200, the slowest "
           "in %.2f s (< %.0f s)" % (len(probe.results), probe.worst(),
                                     NGINX_BOUND),
           repr(probe.results[:20]))
    tap.diag("stalled readers: nginx's slowest /health %.2f s" %
             probe.worst())
    got = [drain(s, 3) for s in stuck]
    tap.ok(all(closed and not ended(b) and len(b) < size for b, closed
               in got), "each stalled client's reply was cut and its "
           "connection closed (%s bytes got)" % [len(b) for b, _ in got])
    for s in stuck:
        s.close()
    j = status_json(st, full=False) or {}
    tap.is_(j.get("cut replies", 0) - cut0, POOL + 2, "status page: "
            "\"cut replies\" counts the %d" % (POOL + 2))
    om = ct.fcgi_request(st.status_sock, "GET", "/status?openmetrics")
    m = re.search(rb"\ncfpm_cut_replies_total (\d+)\n", om.body)
    tap.ok(m and int(m.group(1)) == j.get("cut replies"),
           "OpenMetrics: cfpm_cut_replies_total %s" %
           (m.group(1).decode() if m else "missing"))
    lines = log_lines(c, off, r"cut a \d+-byte reply")
    tap.ok(1 <= len(lines) <= POOL, "the cuts are logged, at most a line "
           "per worker (%d lines)" % len(lines), "\n".join(lines[:3]))

    # The same clients, back as soon as they could have been cut, and
    # still never reading.
    stop = threading.Event()

    def attacker():
        while not stop.is_set():
            try:
                s = connect(c.sock, 5)
                s.sendall(raw)
                stop.wait(WRITE_TIMEOUT + 0.1)
                s.close()
            except OSError:
                time.sleep(0.05)
    ts = [threading.Thread(target=attacker) for _ in range(POOL + 2)]
    with Prober(st) as probe:
        for t in ts:
            t.start()
        time.sleep(6)
        stop.set()
    for t in ts:
        t.join(15)
    tap.ok(probe.all_ok() and probe.worst() < NGINX_BOUND,
           "%d clients that never read, coming back for 6 s: %d requests "
           "through nginx all 200, the slowest in %.2f s" %
           (POOL + 2, len(probe.results), probe.worst()),
           repr(probe.results[:20]))
    tap.diag("returning stalled readers: nginx's slowest /health %.2f s" %
             probe.worst())

    # A client that reads, slowly: 4 KiB every 100 ms.
    cut0 = (status_json(st, full=False) or {}).get("cut replies", 0)
    s = connect(c.sock)
    s.sendall(raw)
    t0 = time.monotonic()
    got, cut_after = b"", None
    while time.monotonic() - t0 < WRITE_TIMEOUT + 3 and cut_after is None:
        try:
            got += s.recv(4096)
        except OSError:
            break
        time.sleep(0.1)
        if (status_json(st, full=False) or {}).get("cut replies",
                                                   0) > cut0:
            cut_after = time.monotonic() - t0
    rest, closed = drain(s, 10)
    s.close()
    tap.ok(cut_after is not None and cut_after < WRITE_TIMEOUT + 1 and
           closed and not ended(got + rest) and len(got + rest) < size,
           "a client reading 40 KiB/s is cut too, after %s s: it gets %d "
           "of the %d bytes, then the close" % (
               "%.2f" % cut_after if cut_after else "no cut in 4",
               len(got + rest), size))


# ---------------------------------------------------------------------------
# 2. Idle status clients

def check_status_idle(st, c, tap):
    tap.diag("-- 2. 40 idle status clients")
    idle = [connect(st.status_sock) for _ in range(20)]
    for _ in range(20):
        s = connect(st.status_sock)
        s.sendall(b"\x01\x01\x00")      # half a record header
        idle.append(s)
    time.sleep(0.2)
    times, codes = [], []
    for _ in range(5):
        t0 = time.monotonic()
        r = st.get("/status?json", timeout=10)
        times.append(time.monotonic() - t0)
        codes.append(r.status)
        time.sleep(0.1)
    tap.ok(codes == [200] * 5 and max(times) < STATUS_BOUND,
           "5 status requests through nginx beside them: %s, the slowest "
           "in %.3f s (< %.0f s)" % (codes, max(times), STATUS_BOUND))
    r = ct.fcgi_exact(st.status_sock, {"SCRIPT_NAME": "/status",
                                       "QUERY_STRING": "json",
                                       "REQUEST_METHOD": "GET"}, timeout=5)
    tap.is_(r.status, 200, "an exporter's request straight to the socket "
            "too")
    closed = sum(drain(s, 0.2)[1] for s in idle)
    tap.ok(closed >= len(idle) - 32, "idle clients gave up their slots "
           "(%d of %d closed)" % (closed, len(idle)))
    for s in idle:
        s.close()


# ---------------------------------------------------------------------------
# 3. Work linear in the bytes received

def schedstat_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def ticks_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        x = f.read().rpartition(")")[2].split()
    return (int(x[11]) + int(x[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def send_paced(path, data, per_send, seconds):
    """data on a new connection in sends of per_send bytes spread over
    seconds; then the reply. Returns (status, seconds)."""
    return send_on(connect(path, 30), data, per_send, seconds)


def measure(pid, fn, reps):
    """fn() reps times: per run (schedstat ms, utime+stime ms, wake-ups,
    the statuses)."""
    n0, t0, w0 = schedstat_ns(pid), ticks_s(pid), wakeups(pid)
    codes = [fn()[0] for _ in range(reps)]
    n1, t1, w1 = schedstat_ns(pid), ticks_s(pid), wakeups(pid)
    return ((n1 - n0) / 1e6 / reps, (t1 - t0) * 1000 / reps,
            (w1 - w0) / reps, codes)


def mixed_records(params, body, tiny, tail):
    """The issue's request: the parameters and the first tiny body bytes
    in one-byte records, then the rest of the body (tail bytes) as one
    record. Returns (the bytes before the last record, that record)."""
    head = rec(1, struct.pack("!HB5x", 1, 0))
    for b in ct.fcgi_params(params):
        head += rec(4, bytes([b]))
    head += rec(4)
    for b in body[:tiny]:
        head += rec(5, bytes([b]))
    return head, rec(5, body[tiny:tiny + tail]) + rec(5)


def check_linear(st, tap):
    tap.diag("-- 3. a request's cost however it is split")
    c = st.start_cfpm({"request_read_timeout": "20"}, n=1)
    w = c.workers()[0]
    tok = st.tokens["valid"]
    hdrs = {"Authorization": "Bearer " + tok,
            "Content-Type": "application/json"}
    # 17,000 content bytes in one-byte records (the parameters, then
    # the body's first bytes), then the body's last 40 KB in one record.
    plen = len(ct.fcgi_params(cgi_params("POST", "/events", hdrs,
                                         b"x" * 57000)))
    body = json.dumps({"kind": "k", "payload": {
        "p": "x" * (CONTENT - plen + 40000 - 40)}}).encode()
    params = cgi_params("POST", "/events", hdrs, body)
    tiny = CONTENT - len(ct.fcgi_params(params))
    tail = len(body) - tiny
    one = records_of(params, body, 65535)
    head, last = mixed_records(params, body, tiny, tail)
    tap.diag("the request: %d content bytes: as records of up to 64 KiB "
             "(%d bytes), and as %d one-byte records then one of %d bytes "
             "(%d bytes)" % (len(one) - 40, len(one), CONTENT, tail,
                             len(head) + len(last)))

    def mixed_trickled():
        """The one-byte records at once, the last record 32 bytes a send
        over 2 s: on a10d06d each read scanned the 17,000 records again."""
        s = connect(c.sock, 30)
        s.sendall(head)
        return send_on(s, last, 32, 2.0)

    body17 = json.dumps({"kind": "k", "payload": {
        "p": "x" * (CONTENT - 1300)}}).encode()
    one17 = records_of(cgi_params("POST", "/events", hdrs, body17), body17,
                       65535)
    runs = [
        ("as large records", lambda: send_paced(c.sock, one, len(one), 0),
         10),
        ("as %d one-byte records then one of %d bytes" % (CONTENT, tail),
         lambda: send_paced(c.sock, head + last, len(head + last), 0), 10),
        ("the same, its last record 32 bytes a send over 2 s",
         mixed_trickled, 1),
        ("a %d-byte request as one record, a byte a send over 2 s" %
         len(one17), lambda: send_paced(c.sock, one17, 1, 2.0), 1),
    ]
    got = []
    for desc, fn, reps in runs:
        fn()        # warm: the first request of a kind pays for caches
        m = measure(w, fn, reps)
        got.append(m)
        tap.diag("%s: %.2f ms of worker CPU per request (schedstat), "
                 "%.1f ms (utime+stime), %.0f wake-ups, %s" %
                 ((desc,) + m))
    tap.ok(all(codes == [201] * len(codes) for _, _, _, codes in got),
           "every variant is answered 201")
    a, b = got[0][0], got[1][0]
    tap.ok(max(a, b) <= SPLIT_RATIO_MAX * min(a, b), "as large records "
           "and as %d one-byte records, the request costs the same within "
           "%gx (%.2f and %.2f ms)" % (CONTENT, SPLIT_RATIO_MAX, a, b))
    tap.ok(all(m[1] < CPU_MAX_MS and m[0] < CPU_MAX_MS for m in got[:3]),
           "none costs %.0f ms of worker CPU, its last record trickled "
           "included (%s ms)" % (CPU_MAX_MS, [round(m[0], 2) for m in
                                              got[:3]]))
    per_wake = len(one17) / max(got[3][2], 1)
    tap.ok(per_wake >= 32, "a byte a send: read %.0f bytes per wake-up "
           "(%d wake-ups for %d bytes), not one" %
           (per_wake, got[3][2], len(one17)))
    tap.diag("a byte a send costs the kernel's work per send on the unix "
             "socket: %.1f ms of worker CPU (%.2f us a send)" %
             (got[3][0], got[3][0] * 1000 / len(one17)))
    st.stop_cfpm(c)

    # The master reads the status socket with the same scanner.
    c = st.start_cfpm(n=1)
    sparams = {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/status",
               "QUERY_STRING": "json", "HTTP_X": "h" * 20000}
    shead, slast = mixed_records_params(sparams, 10000)

    def status_trickled():
        s = connect(st.status_sock, 30)
        s.sendall(shead)
        return send_on(s, slast, 32, 2.0)
    m = measure(c.pid, status_trickled, 1)
    tap.ok(m[3] == [200] and m[0] < CPU_MAX_MS,
           "a status request of 10,000 one-byte records then one of %d "
           "bytes trickled 32 bytes a send: %s, %.2f ms of master CPU, "
           "%d wake-ups" % (len(slast), m[3], m[0], m[2]))
    st.stop_cfpm(c)


def mixed_records_params(params, tiny):
    """The first tiny bytes of the parameters in one-byte records, then
    the rest in one record: (those bytes, the rest)."""
    p = ct.fcgi_params(params)
    head = rec(1, struct.pack("!HB5x", 1, 0))
    for b in p[:tiny]:
        head += rec(4, bytes([b]))
    return head, rec(4, p[tiny:]) + rec(4) + rec(5)


def send_on(s, data, per_send, seconds):
    """send_paced() on a connection already made."""
    t0 = time.monotonic()
    buf = b""
    try:
        n = len(data)
        for i in range(0, n, per_send):
            s.send(data[i:i + per_send])
            # Each send on its own schedule: a reader that keeps up
            # wakes once per send, as with the trickle.
            ahead = t0 + seconds * (i + per_send) / n - time.monotonic()
            if seconds and ahead > 0:
                time.sleep(ahead)
        while not ended(buf):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    finally:
        s.close()
    return reply_status(buf), time.monotonic() - t0


# ---------------------------------------------------------------------------
# 4. Nothing inherited

STARTER = r"""
import os, socket, sys
want = [int(x) for x in sys.argv[1].split(",")]
opened = [os.open("/etc/shadow", os.O_RDONLY), os.open("/", os.O_RDONLY)]
r, w = os.pipe()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
opened += [r, w, s.detach()]
for fd, target in zip(opened, want):
    os.dup2(fd, target)
    os.set_inheritable(target, True)
for fd in opened:
    if fd not in want:
        os.close(fd)
os.execv(sys.argv[2], sys.argv[2:])
"""


def unix_sockets():
    """{inode: (path, peer inode)} of every unix socket (ss -xan)."""
    rc, out, _ = ct.run(["ss", "-x", "-a", "-n"], timeout=10)
    table = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) < 8:
            continue
        try:
            table[int(f[5])] = (f[4], int(f[7]))
        except ValueError:
            pass
    return table


def listening_inode(path):
    """The inode of the listening socket bound at path (/proc/net/unix)."""
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            x = line.split()
            if len(x) >= 8 and x[7] == path and x[5] == "01":
                return int(x[6])
    return None


def describe_fds(pid, expect):
    """Each descriptor of pid as what it is: a name from expect (a dict
    of readlink target -> name) or, unaccounted, the target itself."""
    out = []
    for fd in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        out.append(expect.get(target, "UNACCOUNTED %s=%s" % (fd, target)))
    return sorted(out)


def fd_expectations(st, c, sock, status_sock):
    """readlink target -> what it is, for the descriptors cfpm may hold."""
    pg = os.path.join(st.pg.sockdir, ".s.PGSQL.%d" % st.pg.port)
    socks = unix_sockets()
    expect = {"/dev/null": "stdin", os.path.realpath(c.log): "log",
              "anon_inode:[eventfd]": "eventfd",
              "anon_inode:[eventpoll]": "epoll",
              "socket:[%s]" % listening_inode(sock): "pool socket",
              "socket:[%s]" % listening_inode(status_sock): "status socket"}
    for ino, (path, peer) in socks.items():
        if socks.get(peer, ("",))[0] == pg:
            expect["socket:[%d]" % ino] = "database"
    return expect


def check_fds(st, tap, c, how, sock, status_sock):
    """The master's and each worker's descriptors, against what each
    must hold. A connection the readiness probe made may still be
    closing: looked at again for up to 3 s."""
    want_master = sorted(["stdin", "log", "log", "pool socket",
                          "status socket", "eventfd", "eventfd"])
    # A worker's eventfds: the master's kick and the pool's wake, and
    # db.c's interrupt (request_terminate_timeout's signal handler).
    want_worker = sorted(["stdin", "log", "log", "pool socket", "eventfd",
                          "eventfd", "eventfd", "epoll", "database"])
    seen = {}

    def look():
        expect = fd_expectations(st, c, sock, status_sock)
        seen["master"] = describe_fds(c.pid, expect)
        seen["workers"] = {p: describe_fds(p, expect) for p in c.workers()}
        seen["bad"] = {p: d for p, d in seen["workers"].items()
                       if d != want_worker}
        return seen["master"] == want_master and not seen["bad"] and \
            len(seen["workers"]) == POOL
    ct.wait_for(look, 3, 0.2)
    tap.ok(seen["master"] == want_master, "%s: the master holds exactly "
           "stdin, its log, the two listening sockets and the workers' two "
           "eventfds" % how, "got %s" % seen["master"])
    tap.ok(len(seen["workers"]) == POOL and not seen["bad"], "%s: each of "
           "the %d workers holds exactly stdin, the log, the pool socket, "
           "its three eventfds, its epoll and its database connection" %
           (how, len(seen["workers"])), "got %s" % seen["bad"])


def fcgi_ready(path, c, timeout=15):
    return ct.wait_for(lambda: c.alive() and ct.fcgi_request(
        path, "GET", "/health", timeout=2).status == 200, timeout, 0.1)


def check_inherited(st, tap):
    tap.diag("-- 4. descriptors the starter left open")
    conf = st.write_config({"pm.max_children": POOL})
    py = sys.executable
    st._nlog += 1
    log = os.path.join(st.dir, "cfpm-%d.log" % st._nlog)
    st.logs.append(log)
    p = ct.spawn([py, "-c", STARTER, "7,9,13,14,27", ct.CFPM, "-c", conf],
                 log_path=log)
    c = ct.Cfpm(p, log, conf, st.sock, False)
    tap.ok(fcgi_ready(st.sock, c), "cfpm started with /etc/shadow at fd 7, "
           "/ at 9, a pipe at 13 and 14, a socket at 27: serves")
    check_fds(st, tap, c, "started directly", st.sock, st.status_sock)
    st.stop_cfpm(c)

    sock = os.path.join(st.dir, "sa.sock")
    status = os.path.join(st.dir, "sa-status.sock")
    conf = st.write_config({"pm.max_children": POOL, "listen": sock,
                            "pm.status_listen": status})
    st._nlog += 1
    log = os.path.join(st.dir, "cfpm-%d.log" % st._nlog)
    st.logs.append(log)
    # systemd-socket-activate hands on only what -E names.
    env = ["-E%s=%s" % (k, os.environ[k]) for k in
           ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
           if k in os.environ]
    p = ct.spawn([ct.SOCKET_ACTIVATE, "-l", sock, "-l", status,
                  "--fdname=cfpm:status"] + env +
                 [py, "-c", STARTER, "5,7,11", ct.CFPM, "-c", conf],
                 log_path=log)
    c = ct.Cfpm(p, log, conf, sock, True)
    ready = ct.wait_for(lambda: os.path.exists(sock), 10) and \
        fcgi_ready(sock, c)
    tap.ok(ready, "under systemd-socket-activate (LISTEN_FDS=2: fds 3 "
           "and 4) with /etc/shadow at fd 5, / at 7, a pipe end at 11: "
           "serves")
    if ready:
        check_fds(st, tap, c, "socket-activated", sock, status)
    st.stop_cfpm(c)


def main(tap):
    with ct.Stack(tap) as st:
        st.setup(rows=10)
        c = st.start_cfpm(n=POOL)
        check_readers(st, c, tap)
        check_status_idle(st, c, tap)
        st.stop_cfpm(c)
        check_linear(st, tap)
        check_inherited(st, tap)


if __name__ == "__main__":
    ct.main(main)
