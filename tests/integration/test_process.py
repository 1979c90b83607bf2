#!/usr/bin/env python3
"""
test_process.py: the process model of SPEC.md section 3, from outside.

Pool size and -n, a second instance refused on a live socket, SIGKILL of a
worker (idle and under write load), PostgreSQL stopped and restarted under
a running pool (503, then recovery without restart), graceful stop with a
request in flight (SIGTERM), fast stop (SIGINT), a stale socket file, and
pm.max_requests recycling.
"""

import os
import signal
import stat
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from cfpmtest import BENCH_BODY, Checker, seeded_row  # noqa: E402

POOL = 3


def stopped_cleanly(tap, st, c, rc, workers, what, want_rc=0):
    """After a stop: exit status, no worker left, socket removed."""
    if want_rc is not None:
        tap.is_(rc, want_rc, "%s: master exits with %s" % (what, want_rc))
    else:
        tap.ok(rc is not None, "%s: master exits in time" % what,
               "rc %r" % rc)
    left = [p for p in workers if ct.pid_alive(p)]
    empty = ct.wait_for(lambda: not ct.group_members(c.pid), 3)
    tap.ok(not left and empty,
           "%s: no worker and no process of the group remains" % what,
           "workers alive: %r" % left, "group members: %r" %
           ct.group_members(c.pid))
    left = [p for p in (c.sock, st.status_sock) if os.path.exists(p)]
    tap.ok(not left, "%s: the socket files cfpm created are removed" % what,
           "still there: %r" % left)


def check_pool(st, c):
    tap = st.tap
    ws = ct.wait_for(lambda: len(c.workers()) == POOL and c.workers(), 5) \
        or c.workers()
    tap.is_(len(ws), POOL, "-n %d overrides pm.max_children = 5: %d "
            "workers" % (POOL, POOL))
    tap.ok(all((ct.proc_stat(p) or (0, 0, -1))[2] == c.pid for p in ws),
           "workers are in the master's process group",
           "pgids: %r" % [(p, ct.proc_stat(p)) for p in ws])
    try:
        mode = stat.S_IMODE(os.stat(c.sock).st_mode)
    except OSError:
        mode = None
    tap.ok(ct.is_socket(c.sock) and mode == 0o666,
           "cfpm bound its unix socket with listen.mode 0666",
           "mode %r" % (oct(mode) if mode is not None else None))
    return ws


def check_second_instance(st, c):
    """A second cfpm on the same live socket must refuse and leave it."""
    tap = st.tap
    c2 = st.spawn_cfpm(c.conf, n=1)
    try:
        rc = c2.popen.wait(timeout=10)
    except Exception:
        rc = None
        st.stop_cfpm(c2, signal.SIGKILL)
    tap.ok(rc not in (0, None),
           "a second cfpm on a live socket refuses to start (exit != 0)",
           "rc %r" % rc, ct.tail(c2.log, 10))
    tap.ok(ct.is_socket(c.sock) and ct.unix_socket_live(c.sock),
           "the running instance's socket is still there and accepting")
    tap.is_(st.get("/health").status, 200,
            "the running instance still serves after the refused start")


def check_kill_worker(st, c):
    tap = st.tap
    before = c.workers()
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    after = ct.wait_for(lambda: (lambda w: len(w) == POOL and victim not in w
                                 and w)(c.workers()), 5) or c.workers()
    dt = time.monotonic() - t0
    tap.ok(len(after) == POOL and victim not in after,
           "SIGKILLed worker replaced: %d workers again (%.2fs)" %
           (POOL, dt), "before %r, victim %d, after %r" %
           (before, victim, after))
    new = set(after) - set(before)
    tap.is_(len(new), 1, "exactly one new worker pid")
    tap.ok(not ct.pid_alive(victim) and not ct.zombies(c.pid),
           "the dead worker was reaped (no zombie)",
           "zombies: %r" % ct.zombies(c.pid))
    codes = [st.get("/events/1", st.tokens["valid"]).status
             for _ in range(12)]
    tap.ok(all(s == 200 for s in codes), "requests succeed after respawn",
           "statuses %r" % codes)
    tap.ok(c.alive(), "master still running")


def check_kill_under_load(st, c):
    """Writers keep posting while workers are SIGKILLed: afterwards every
    id answered 201 exists (201 only after commit), the pool is whole."""
    tap = st.tap
    tok = st.tokens["valid"]
    ids, statuses = [], []
    stop = threading.Event()
    lock = threading.Lock()

    def writer():
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            r = st.post("/events", BENCH_BODY, tok, timeout=5)
            with lock:
                statuses.append(r.status)
                if r.status == 201:
                    ids.append((r.json() or {}).get("id"))
    threads = [threading.Thread(target=writer, daemon=True)
               for _ in range(4)]
    for t in threads:
        t.start()
    killed = 0
    try:
        for _ in range(4):
            time.sleep(0.4)
            ws = c.workers()
            if ws:
                try:
                    os.kill(ws[killed % len(ws)], signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
        time.sleep(0.6)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    ok201 = statuses.count(201)
    other = sorted(set(s for s in statuses if s != 201))
    tap.diag("under load: %d workers killed, %d requests, %d x 201, "
             "others %r" % (killed, len(statuses), ok201, other))
    tap.ok(ok201 > 0 and all(s in (201, 502, 503) for s in statuses),
           "writes under worker kills: only 201, 502 (killed mid-request) "
           "or 503", "statuses other than 201: %r" % other)
    good = [i for i in ids if type(i) is int]
    missing = []
    if good:
        rows = st.pg.psql("SELECT id FROM events WHERE id IN (%s)" %
                          ",".join(str(i) for i in good))
        found = set(int(r[0]) for r in rows)
        missing = [i for i in good if i not in found]
    tap.ok(len(good) == len(ids) and not missing,
           "every id answered 201 is in the table (%d)" % len(good),
           "missing %r" % missing[:20])
    ws = ct.wait_for(lambda: len(c.workers()) == POOL and c.workers(), 5) \
        or c.workers()
    tap.is_(len(ws), POOL, "pool back to %d workers after the kills" % POOL)


class Load:
    """Background clients: readers (GET /auth and /events/1) and writers
    (POST /events) until stop(); records every status and written id."""

    def __init__(self, st, token, readers=2, writers=2, limit=30):
        self.st = st
        self.token = token
        self.statuses = []
        self.ids = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.deadline = time.monotonic() + limit
        self.threads = [threading.Thread(target=self._read, daemon=True)
                        for _ in range(readers)] + \
            [threading.Thread(target=self._write, daemon=True) for _ in range(writers)]
        for t in self.threads:
            t.start()

    def _go(self):
        return not self.done.is_set() and time.monotonic() < self.deadline

    def _read(self):
        i = 0
        while self._go():
            i += 1
            p = "/auth" if i % 2 else "/events/%d" % (1 + i % ct.SEED_ROWS)
            r = self.st.get(p, self.token, timeout=10)
            with self.lock:
                self.statuses.append(r.status)

    def _write(self):
        while self._go():
            r = self.st.post("/events", BENCH_BODY, self.token, timeout=10)
            with self.lock:
                self.statuses.append(r.status)
                if r.status == 201:
                    self.ids.append((r.json() or {}).get("id"))

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join(20)
        return self.statuses

    def missing_ids(self):
        """Ids answered 201 that are not in the table."""
        good = [i for i in self.ids if type(i) is int]
        if len(good) != len(self.ids):
            return ["non-integer id"]
        if not good:
            return []
        found = set()
        for k in range(0, len(good), 5000):
            rows = self.st.pg.psql("SELECT id FROM events WHERE id IN (%s)"
                                   % ",".join(str(i) for i in
                                              good[k:k + 5000]))
            found |= set(int(r[0]) for r in rows)
        return [i for i in good if i not in found]


def mixed_clients(st, clients, each, timeout):
    """clients threads, each sending `each` requests alternating POST
    /events and GET /events/{id}; returns (responses, seconds)."""
    tok = st.tokens["valid"]
    res = []
    lock = threading.Lock()

    def client(k):
        for i in range(each):
            if (k + i) % 2:
                r = st.get("/events/%d" % (1 + (k * each + i) %
                                           ct.SEED_ROWS), tok,
                           timeout=timeout)
            else:
                r = st.post("/events", BENCH_BODY, tok, timeout=timeout)
            with lock:
                res.append(r)
    threads = [threading.Thread(target=client, args=(k,), daemon=True)
               for k in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return res, time.monotonic() - t0


def not_2xx(res):
    return sorted(set(r.status for r in res if r.status not in (200, 201)))


def check_concurrency(st, c):
    """Far more concurrent clients than workers: everything is served."""
    res, dt = mixed_clients(st, 32, 8, 20)
    bad = not_2xx(res)
    st.tap.ok(len(res) == 256 and not bad,
              "32 concurrent clients on %d workers: 256 requests all 2xx "
              "(%.1fs)" % (POOL, dt),
              "%d answers, other statuses %r" % (len(res), bad))


def check_reload(st, c, errlog):
    """SIGHUP: new config and keys (a second JWKS key), same master, new
    workers, pool size from -n kept, no request dropped under load."""
    tap = st.tap
    k2 = ct.Keys(os.path.join(st.dir, "keys2"), kid="bench-2")
    both = ct.write_jwks(os.path.join(st.dir, "jwks-both.json"), st.keys,
                         k2)
    tok2 = k2.mint(kid="bench-2")
    tap.is_(st.get("/auth", tok2).status, 401,
            "before reload: a token of the second key is refused")
    text = st.config_text({"pm.max_children": 5, "auth.key_file": both,
                           "auth.key_id": None, "error_log": errlog})
    tmp = c.conf + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, c.conf)
    old = set(c.workers())
    load = Load(st, st.tokens["valid"])
    time.sleep(0.5)
    os.kill(c.pid, signal.SIGHUP)
    t0 = time.monotonic()
    ok2 = ct.wait_for(lambda: st.get("/auth", tok2, timeout=3).status == 200
                      and not (set(c.workers()) & old), 10, 0.1)
    dt = time.monotonic() - t0
    time.sleep(0.5)
    statuses = load.stop()
    tap.ok(ok2, "SIGHUP: the new key is accepted and every old worker "
           "retired within 10 s (%.1fs)" % dt,
           "old %r, now %r" % (sorted(old), c.workers()))
    bad = sorted(set(x for x in statuses if x not in (200, 201)))
    tap.ok(statuses and not bad,
           "SIGHUP under load: no request dropped (%d requests, all 2xx)" %
           len(statuses), "other statuses %r (%d of %d)" % (
               bad, sum(1 for x in statuses if x not in (200, 201)),
               len(statuses)))
    tap.ok(not load.missing_ids(), "SIGHUP under load: every 201 id is in "
           "the table", "missing %r" % load.missing_ids()[:10])
    tap.ok(c.alive(), "SIGHUP: same master pid %d" % c.pid)
    ws = ct.wait_for(lambda: len(c.workers()) == POOL and c.workers(), 5) \
        or c.workers()
    tap.is_(len(ws), POOL, "SIGHUP: pool size from -n %d kept after reload "
            "(config says 5)" % POOL)
    tap.is_(st.get("/auth", st.tokens["valid"]).status, 200,
            "SIGHUP: tokens of the first key still accepted")


def check_reopen_logs(st, c, errlog):
    """SIGUSR1 reopens error_log: after a rename a new file appears."""
    tap = st.tap
    tap.ok(os.path.exists(errlog), "error_log file %s written" %
           os.path.basename(errlog))
    os.rename(errlog, errlog + ".1")
    os.kill(c.pid, signal.SIGUSR1)
    made = ct.wait_for(lambda: os.path.exists(errlog), 5)
    tap.ok(made, "SIGUSR1: error_log reopened (new file after rename)")
    time.sleep(0.3)
    old_size = os.path.getsize(errlog + ".1")
    # Worker-side log lines (invalid tokens are logged at info) must go
    # to the new file, not the renamed one.
    for _ in range(12):
        st.get("/auth", "not-a-token")
    ws = c.workers()
    if ws:
        os.kill(ws[0], signal.SIGKILL)      # and a master-side line
    ct.wait_for(lambda: len(c.workers()) == POOL, 5)
    time.sleep(0.3)
    grown = os.path.getsize(errlog + ".1") - old_size
    tap.ok(grown == 0 and os.path.exists(errlog) and
           os.path.getsize(errlog) > 0,
           "SIGUSR1: master and workers all write to the new file",
           "renamed file grew by %d bytes after the reopen" % grown,
           "new file: %r" % ct.tail(errlog, 5))
    tap.ok(c.alive() and st.get("/health").status == 200,
           "SIGUSR1: master alive and serving")


def check_status(st, c):
    """pm.status_path in PHP-FPM's vocabulary (text, ?json, ?full,
    ?openmetrics), served by the master: it answers while every worker is
    busy and shows the listen queue."""
    tap = st.tap
    import json
    r = st.get("/status?json")
    j = r.json() if r.status == 200 else None
    keys = ["pool", "process manager", "start time", "accepted conn",
            "listen queue", "idle processes", "active processes",
            "total processes", "max children reached", "slow requests"]
    tap.ok(isinstance(j, dict) and all(k in j for k in keys),
           "GET /status?json: 200 with PHP-FPM's fields",
           "got %r" % r, "missing %r" % [k for k in keys
                                         if not isinstance(j, dict) or
                                         k not in j])
    if isinstance(j, dict):
        tap.ok(j.get("total processes") == POOL and
               j.get("process manager") == "static",
               "status: static pool of %d" % POOL, "got %r" % j)
    r = st.get("/status")
    tap.ok(r.status == 200 and b"active processes:" in r.body and
           b"pool:" in r.body, "GET /status: text page", "got %r" % r)
    r = st.get("/status?full&json")
    j = r.json() if r.status == 200 else None
    procs = j.get("processes") if isinstance(j, dict) else None
    tap.ok(isinstance(procs, list) and len(procs) == POOL and
           sorted(p.get("pid") for p in procs) == c.workers(),
           "GET /status?full&json: one entry per worker, by pid",
           "got %r" % (r.body[:400],), "workers %r" % c.workers())
    r = st.get("/status?openmetrics")
    tap.ok(r.status == 200 and b"# TYPE " in r.body and
           r.body.rstrip().endswith(b"# EOF"),
           "GET /status?openmetrics: OpenMetrics text with the EOF marker",
           "got %r" % (r.body[-200:],))

    # Every worker busy (held on a table lock), one more request queued.
    holder = st.pg.lock_table()
    got = []
    threads = [threading.Thread(target=lambda: got.append(
        st.get("/events/1", st.tokens["valid"], timeout=20)), daemon=True)
        for _ in range(POOL + 1)]
    try:
        for t in threads:
            t.start()
        busy = ct.wait_for(lambda: st.pg.waiting_locks() >= POOL, 5, 0.1)
        tap.ok(busy, "all %d workers busy on a lock" % POOL)
        r = st.get("/status?json", timeout=3)
        j = r.json() if r.status == 200 else {}
        tap.ok(r.status == 200 and r.elapsed < 2,
               "status answers while every worker is busy (%.2fs)" %
               r.elapsed, "got %r" % r)
        tap.ok(isinstance(j, dict) and j.get("active processes") == POOL
               and j.get("idle processes") == 0,
               "status: %d active, 0 idle" % POOL, "got %r" % j)
        q = ct.wait_for(lambda: (st.get("/status?json", timeout=3).json()
                                 or {}).get("listen queue", 0) >= 1, 3, 0.1)
        tap.ok(q, "status: the queued request shows in listen queue "
               "(unix socket)")
    finally:
        st.pg.release_lock(holder)
        for t in threads:
            t.join(20)
    tap.ok(len(got) == POOL + 1 and all(x.status == 200 for x in got),
           "the held and queued requests all complete with 200",
           "got %r" % [x.status for x in got])


def check_db_outage(st, c):
    tap = st.tap
    ch = Checker(st)
    tok = st.tokens["valid"]
    master = c.pid
    st.pg.stop("fast")
    slow = []
    for i in range(6):
        r = st.get("/events/1", tok, timeout=10)
        if r.elapsed >= 3:
            slow.append(round(r.elapsed, 2))
        ch.expect(r, "DB down: GET /events/1 is 503 (%d)" % (i + 1), 503,
                  error="unavailable")
    tap.ok(not slow, "DB down: every 503 came in under 3 s",
           "slow: %r" % slow)
    n = 0
    for i in range(6):
        r = st.get("/health", timeout=10)
        if r.elapsed >= 3:
            slow.append(round(r.elapsed, 2))
        n += r.status == 503 and r.json() == {"status": "unavailable"}
    tap.is_(n, 6, "DB down: /health is 503 {\"status\":\"unavailable\"} "
            "(6 of 6)")
    r = st.post("/events", BENCH_BODY, tok, timeout=10)
    ch.expect(r, "DB down: POST /events is 503", 503, error="unavailable")
    tap.ok(r.elapsed < 3, "DB down: the POST 503 came in under 3 s",
           "%.2fs" % r.elapsed)
    ch.expect(st.get("/auth", tok), "DB down: GET /auth (no DB) still 200",
              200)
    ch.expect(st.get("/auth"), "DB down: auth still runs first (401)", 401,
              error="unauthorized", www=ct.WWW_NONE)
    time.sleep(1)
    tap.ok(c.alive() and len(c.workers()) == POOL,
           "DB down: master alive, pool of %d kept (no fork loop)" % POOL,
           "workers %r" % c.workers())

    st.pg.start()
    t0 = time.monotonic()

    def healthy():
        return all(st.get("/health", timeout=3).status == 200
                   for _ in range(8))
    up = ct.wait_for(healthy, 10, 0.2)
    tap.ok(up, "DB back: 8 /health probes in a row are 200 within 10 s "
           "(%.1fs)" % (time.monotonic() - t0))
    codes = [st.get("/events/1", tok).status for _ in range(8)]
    tap.ok(all(s == 200 for s in codes), "DB back: reads succeed",
           "statuses %r" % codes)
    r = st.get("/events/1", tok)
    ch.expect(r, "DB back: read returns the seeded row", 200,
              body=seeded_row(1))
    ch.expect(st.post("/events", BENCH_BODY, tok), "DB back: write is 201",
              201)
    tap.ok(c.alive() and c.pid == master,
           "DB back: the same master (pid %d), no restart" % master)


def check_graceful_stop(st, c):
    """SIGTERM with a request held in flight by a table lock: the request
    completes with 200, then the master exits 0."""
    tap = st.tap
    workers = c.workers()
    holder = st.pg.lock_table()
    got = {}

    def inflight():
        got["r"] = st.get("/events/1", st.tokens["valid"], timeout=20)
    t = threading.Thread(target=inflight, daemon=True)
    t.start()
    waiting = ct.wait_for(lambda: st.pg.waiting_locks() > 0, 5, 0.1)
    tap.ok(waiting, "a request is in flight (waiting on a table lock)")
    os.kill(c.pid, signal.SIGTERM)
    time.sleep(1.0)
    tap.ok(c.alive(), "SIGTERM: master waits for the in-flight request")
    st.pg.release_lock(holder)
    t0 = time.monotonic()
    t.join(20)
    r = got.get("r")
    tap.ok(r is not None and r.status == 200 and
           r.json() == seeded_row(1),
           "SIGTERM: the in-flight request completes with 200",
           "got %r" % (r,))
    try:
        rc = c.popen.wait(timeout=10)
    except Exception:
        rc = None
    tap.ok(rc is not None and time.monotonic() - t0 < 5,
           "SIGTERM: master exits within 5 s of the last request",
           "rc %r after %.1fs" % (rc, time.monotonic() - t0))
    st.stop_cfpm(c)     # reaps / kills if it did not exit
    stopped_cleanly(tap, st, c, rc, workers, "SIGTERM")


def check_idle_stop(st, sig, bound, desc, what, want_rc=0):
    """An idle pool stopped by sig exits within bound seconds, cleanly."""
    c = st.start_cfpm(n=POOL)
    workers = c.workers()
    t0 = time.monotonic()
    rc = st.stop_cfpm(c, sig, timeout=10)
    dt = time.monotonic() - t0
    st.tap.ok(dt < bound, "%s (%.2fs)" % (desc, dt))
    stopped_cleanly(st.tap, st, c, rc, workers, what, want_rc=want_rc)


def check_sigterm_idle(st):
    check_idle_stop(st, signal.SIGTERM, 5, "SIGTERM on an idle pool: exit "
                    "within 5 s", "SIGTERM idle")


def check_sigint(st):
    check_idle_stop(st, signal.SIGINT, 3, "SIGINT: fast stop within 3 s",
                    "SIGINT", want_rc=None)


def check_stale_socket(st):
    """A socket file nobody listens on (a crashed instance's) is replaced."""
    tap = st.tap
    import socket as so
    s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    s.bind(st.sock)
    s.close()
    tap.ok(ct.is_socket(st.sock) and not ct.unix_socket_live(st.sock),
           "a stale socket file is left at the listen path")
    try:
        c = st.start_cfpm(n=1)
    except RuntimeError as e:
        tap.ok(False, "cfpm starts over a stale socket file", str(e))
        c = st.cfpm
        if c:
            st.stop_cfpm(c, signal.SIGKILL)
        if os.path.exists(st.sock):
            os.unlink(st.sock)
        return
    tap.ok(True, "cfpm starts over a stale socket file")
    tap.is_(st.stop_cfpm(c), 0, "and stops with exit 0")


def _fcgi_get_health(stdin=True):
    """A raw FastCGI GET /health; without stdin, the FCGI_STDIN records
    (the request's end) are left out."""
    params = ct.fcgi_params({"REQUEST_METHOD": "GET", "REQUEST_URI":
                              "/health", "DOCUMENT_URI": "/health",
                              "SCRIPT_NAME": "/health", "QUERY_STRING": ""})
    msg = ct.fcgi_record(ct.FCGI_BEGIN_REQUEST, struct.pack("!HB5x", 1, 0))
    msg += ct.fcgi_record(ct.FCGI_PARAMS, params)
    msg += ct.fcgi_record(ct.FCGI_PARAMS, b"")
    if stdin:
        msg += ct.fcgi_record(ct.FCGI_STDIN, b"")
    return msg


def _read_until_eof(s, timeout):
    """Bytes read until the server closes (None if it does not within
    timeout seconds)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except OSError:
        return None


def check_connection_end(st):
    """A worker ends each connection itself: a client that keeps its end
    open after the response does not hold the worker (libfcgi's lingering
    close waited up to 2 s). A request whose FCGI_STDIN never ends is
    incomplete: it is closed unanswered at request_read_timeout (1 s
    here), and the only worker then serves the next client at once."""
    tap = st.tap
    c = st.start_cfpm({"request_read_timeout": "1"}, n=1)
    import socket as so
    for stdin, what in ((True, "complete request"),
                        (False, "request without the end of FCGI_STDIN")):
        a = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        a.connect(st.sock)
        a.sendall(_fcgi_get_health(stdin))
        t0 = time.monotonic()
        data = _read_until_eof(a, 5)
        dt = time.monotonic() - t0
        if stdin:
            tap.ok(data is not None and b"Status: 200" in data and
                   dt < 0.5, "%s, client keeps its end open: full "
                   "response, then the worker closes (%.2fs)" % (what, dt))
        else:
            # Closed with the request unread: EOF or a reset (None),
            # told from the 5 s timeout by the time it took.
            tap.ok(data in (b"", None) and 0.8 < dt < 2.5,
                   "%s, client keeps its end open: closed unanswered at "
                   "request_read_timeout (%.2fs, %r)" % (what, dt, data))
        t0 = time.monotonic()
        r = ct.fcgi_request(st.sock, "GET", "/health", timeout=5)
        dt = time.monotonic() - t0
        tap.ok(r.status == 200 and dt < 0.5,
               "%s: the only worker serves the next client within 0.5 s "
               "(%.2fs)" % (what, dt))
        a.close()
    body = b'{"kind":"x","payload":{"pad":"' + b"y" * 30000 + b'"}}'
    r = ct.fcgi_request(st.sock, "POST", "/events", body=body,
                        headers={"Content-Type": "application/json"})
    r2 = ct.fcgi_request(st.sock, "GET", "/health")
    tap.ok(r.status == 401 and r2.status == 200,
           "POST refused before its 30 kB body is read: 401 complete, next "
           "request served (%s, %s)" % (r.status, r2.status))
    tap.is_(st.stop_cfpm(c), 0, "connection-end checks: clean stop")


def check_keep_conn_requested(st, c):
    """nginx with fastcgi_keep_conn on and 8 cached connections in front
    of 3 workers: nothing may pin a worker to an idle connection (with
    libfcgi's own handling, 13 of 40 such requests timed out). Workers
    keep at most one connection each and end the others so that nginx
    closes them (test_keepconn.py has the details)."""
    tap = st.tap
    before = sorted(c.workers())
    st.stop_nginx()
    log = os.path.join(st.dir, "nginx-error.log")
    start = os.path.getsize(log) if os.path.exists(log) else 0
    st.start_nginx(keep_conn=8)
    for rnd in (1, 2):
        res, dt = mixed_clients(st, 40, 6, 10)
        bad = not_2xx(res)
        slow = [round(r.elapsed, 2) for r in res if r.elapsed > 2]
        tap.ok(len(res) == 240 and not bad and not slow,
               "keep-conn on, round %d: 40 clients on %d workers, 240 "
               "requests all 2xx, none slower than 2 s (%.1fs)" % (
                   rnd, POOL, dt),
               "%d answers, other statuses %r, slow %r" % (len(res), bad,
                                                          slow[:10]))
    time.sleep(0.5)
    r = st.get("/health", timeout=5)
    tap.ok(r.status == 200 and r.elapsed < 2 and sorted(c.workers()) ==
           before, "keep-conn on: after an idle moment a lone request is "
           "served at once, by the same workers (%.2fs)" % r.elapsed)
    noise = st.nginx.log_lines(start, ("warn", "error", "crit", "alert"))
    tap.ok(not noise, "keep-conn on: nginx logged no warning or error about "
           "the connections", noise[:5])
    st.stop_nginx()
    st.start_nginx()


def check_terminate_timeout(st):
    """request_terminate_timeout = 2: a request stuck on a lock ends with a
    5xx in time, the pool recovers."""
    tap = st.tap
    c = st.start_cfpm({"request_terminate_timeout": 2}, n=2)
    holder = st.pg.lock_table()
    try:
        r = st.get("/events/1", st.tokens["valid"], timeout=10)
    finally:
        st.pg.release_lock(holder)
    tap.ok(500 <= r.status <= 504 and r.elapsed < 6,
           "request_terminate_timeout 2: stuck request ends with a 5xx "
           "within 6 s (%d after %.1fs)" % (r.status, r.elapsed),
           "got %r" % r)
    ws = ct.wait_for(lambda: len(c.workers()) == 2 and c.workers(), 5) \
        or c.workers()
    codes = [st.get("/events/1", st.tokens["valid"]).status
             for _ in range(6)]
    tap.ok(len(ws) == 2 and all(x == 200 for x in codes),
           "after the terminated request the pool serves again",
           "workers %r, statuses %r" % (ws, codes))
    tap.is_(st.stop_cfpm(c), 0, "and stops with exit 0")


def check_cold_start_db_down(st):
    """cfpm started while PostgreSQL is down: no fork loop; it comes up by
    itself once the DB is back."""
    tap = st.tap
    st.pg.stop("fast")
    c = st.spawn_cfpm(st.write_config(), n=POOL)
    st.cfpm = c
    seen = ct.workers_seen(c, 3)
    tap.ok(c.alive() and len(seen) <= 2 * POOL,
           "DB down at start: master alive, no fork loop (%d worker pids "
           "in 3 s)" % len(seen), "alive %s, pids %r" % (c.alive(),
                                                       sorted(seen)))
    r = st.get("/health", timeout=5)
    tap.ok(r.status != 200, "DB down at start: /health is not 200 (%d)" %
           r.status)
    st.pg.start()
    t0 = time.monotonic()
    up = ct.wait_for(lambda: c.alive() and all(
        st.get("/health", timeout=3).status == 200 for _ in range(8)),
        10, 0.2)
    tap.ok(up, "DB up again: 8 /health probes in a row are 200 within "
           "10 s (%.1fs), same master" % (time.monotonic() - t0))
    codes = [st.get("/events/1", st.tokens["valid"]).status
             for _ in range(8)]
    tap.ok(all(x == 200 for x in codes), "DB up again: reads succeed",
           "statuses %r" % codes)
    tap.is_(st.stop_cfpm(c), 0, "and stops with exit 0")


def check_kill_everything(st):
    """kill -9 of the whole process group under write load, then a
    restart over the stale socket: every 201 id is in the table."""
    tap = st.tap
    c = st.start_cfpm(n=POOL)
    load = Load(st, st.tokens["valid"], readers=1, writers=3)
    time.sleep(1.0)
    os.killpg(c.pid, signal.SIGKILL)
    time.sleep(0.3)
    load.stop()
    c.popen.wait(5)
    st.cfpm = None
    n201 = len(load.ids)
    missing = load.missing_ids()
    tap.ok(n201 > 0 and not missing,
           "kill -9 of the whole server under writes: all %d ids answered "
           "201 are in the table" % n201, "missing %r" % missing[:10])
    try:
        c2 = st.start_cfpm(n=POOL)
        tap.ok(True, "cfpm restarts after kill -9 (stale socket left)")
        tap.is_(st.post("/events", BENCH_BODY, st.tokens["valid"]).status,
                201, "and accepts writes")
        tap.is_(st.stop_cfpm(c2), 0, "and stops with exit 0")
    except RuntimeError as e:
        tap.ok(False, "cfpm restarts after kill -9 (stale socket left)",
               str(e))


def check_max_requests(st):
    tap = st.tap
    c = st.start_cfpm({"pm.max_requests": 10}, n=2)
    before = set(c.workers())
    codes = [st.get("/events/1", st.tokens["valid"]).status
             for _ in range(60)]
    tap.ok(all(s == 200 for s in codes),
           "pm.max_requests = 10: 60 requests all 200 while recycling",
           "statuses %r" % sorted(set(codes)))
    after = ct.wait_for(lambda: (lambda w: len(w) == 2 and
                                 not (set(w) & before) and w)(c.workers()),
                        5) or c.workers()
    tap.ok(len(after) == 2 and not (set(after) & before),
           "pm.max_requests: workers were recycled, pool size kept",
           "before %r, after %r" % (sorted(before), after))
    tap.is_(st.stop_cfpm(c), 0, "pm.max_requests pool stops with exit 0")


def main(tap):
    with ct.Stack(tap) as st:
        st.setup()
        errlog = os.path.join(st.dir, "cfpm-error.log")
        st.logs.append(errlog)
        conf = st.write_config({"pm.max_children": 5, "error_log": errlog})
        c = st.start_cfpm(conf=conf, n=POOL)
        check_pool(st, c)
        check_second_instance(st, c)
        check_kill_worker(st, c)
        check_kill_under_load(st, c)
        check_concurrency(st, c)
        check_keep_conn_requested(st, c)
        check_status(st, c)
        check_db_outage(st, c)
        check_reload(st, c, errlog)
        check_reopen_logs(st, c, errlog)
        check_graceful_stop(st, c)
        check_sigterm_idle(st)
        check_sigint(st)
        check_stale_socket(st)
        check_connection_end(st)
        check_max_requests(st)
        check_terminate_timeout(st)
        check_cold_start_db_down(st)
        check_kill_everything(st)


if __name__ == "__main__":
    ct.main(main)
