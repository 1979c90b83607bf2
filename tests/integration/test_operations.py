#!/usr/bin/env python3
"""
test_operations.py: cfpm operated the way PHP-FPM operators expect, under
load: reloads that lose nothing, graceful stop with requests in flight, a
status page answered by the master while every worker is busy (listen
queue included), pm.max_requests recycling, request_terminate_timeout and
the slow log, sd_notify messages in order, and log reopening.
"""

import json
import os
import random
import signal
import threading
import time

import cfpmtest as ct

POOL = 3
EVENT = json.dumps({"kind": "page_view", "payload": {
    "path": "/pricing", "ms": 182, "ref": "newsletter"}})


class Load:
    """Two client threads (reads and writes) until stop(); every response
    status is kept, so the test can demand zero failures."""

    def __init__(self, stack, token, limit=4000, seconds=60):
        self.stack = stack
        self.token = token
        self.limit = limit
        self.deadline = time.monotonic() + seconds
        self.statuses = []
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(w,))
                        for w in (False, True)]

    def _one(self, write):
        if write:
            return self.stack.post("/events", EVENT, token=self.token,
                                   timeout=15)
        return self.stack.get("/events/%d" % random.randint(1, 1000),
                              token=self.token, timeout=15)

    def _run(self, write):
        while not self.halt.is_set() and time.monotonic() < self.deadline:
            r = self._one(write)
            with self.lock:
                self.statuses.append(r.status)
                if len(self.statuses) >= self.limit:
                    return

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(30)
        return self.statuses

    def count(self):
        with self.lock:
            return len(self.statuses)


def failures(statuses):
    return [s for s in statuses if s not in (200, 201)]


def status_json(stack, query="json"):
    r = stack.get("/status?" + query, timeout=5)
    return r, r.json() if r.status == 200 else None


def wait_pool(stack, n, old=(), timeout=20):
    """Waits until the master has exactly n children, none of them in old."""
    def done():
        kids = stack.cfpm.workers()
        return kids if len(kids) == n and not set(kids) & set(old) else None
    return ct.wait_for(done, timeout, 0.1)


def test_reload_under_load(tap, stack):
    """SIGHUP three times and SIGUSR2 once under a steady mixed stream,
    one of them with a new pool size, then a broken config."""
    stack.start_cfpm(stack_settings(stack, {}))
    conf = stack.cfpm.conf
    load = Load(stack, stack.tokens["valid"]).start()
    ct.wait_for(lambda: load.count() > 20, 10)
    before = stack.cfpm.workers()
    for i, sig in enumerate((signal.SIGHUP, signal.SIGHUP, signal.SIGUSR2,
                             signal.SIGHUP)):
        if i == 2:
            with open(conf, "w") as f:
                f.write(stack.config_text(stack_settings(
                    stack, {"pm.max_children": 5})))
        seen = stack.cfpm.workers()
        os.kill(stack.cfpm.pid, sig)
        want = 5 if i >= 2 else POOL
        tap.ok(wait_pool(stack, want, seen), "reload %d (%s): %d new workers"
               % (i + 1, signal.Signals(sig).name, want),
               "children: %r, before: %r" % (stack.cfpm.workers(), seen))
        ct.wait_for(lambda: False, 0.5)
    statuses = load.stop()
    tap.cmp_ok(len(statuses), ">", 50, "the load kept flowing (%d requests)"
               % len(statuses))
    tap.is_(failures(statuses), [], "no request failed during 4 reloads")
    tap.ok(not set(before) & set(stack.cfpm.workers()),
           "every worker was replaced")
    r, st = status_json(stack)
    tap.ok(st is not None and st.get("reloads") == 4 and
           st.get("total processes") == 5,
           "status counts 4 reloads and the new pool of 5", repr(st))
    # A broken config on reload leaves the running pool serving.
    with open(conf, "a") as f:
        f.write("pm.max_children = many\n")
    kept = stack.cfpm.workers()
    os.kill(stack.cfpm.pid, signal.SIGHUP)
    refused = ct.wait_for(lambda: "reload refused" in ct.tail(
        stack.cfpm.log, 20), 10)
    tap.ok(refused, "invalid config on reload: refused and logged")
    tap.like(ct.tail(stack.cfpm.log, 20), r"cfpm-\d+\.conf:\d+: "
             r"pm\.max_children", "the log names file:line")
    load = Load(stack, stack.tokens["valid"], limit=100, seconds=10).start()
    statuses = load.stop() if ct.wait_for(lambda: load.count() >= 100, 15) \
        else load.stop()
    tap.is_(failures(statuses), [], "the old pool keeps serving")
    tap.is_(stack.cfpm.workers(), kept, "the old workers are untouched")
    stack.stop_cfpm()


def stack_settings(stack, extra):
    """The pool's settings: status socket and path, POOL workers, extra."""
    s = {"pm.status_listen": stack.status_sock,
         "pm.status_path": "/status",
         "pm.max_children": POOL}
    s.update(extra)
    return s


def blocked_posts(stack, n, token, results):
    """n POSTs in threads; each result lands in results."""
    def one():
        results.append(stack.post("/events", EVENT, token=token,
                                  timeout=30))
    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    return ts


def test_status_busy(tap, stack):
    """Every worker stuck in the database, more requests queued: the
    master still answers /status, and its figures match."""
    stack.start_cfpm(stack_settings(stack, {}))
    r, st0 = status_json(stack)
    tap.is_(r.status, 200, "status answers (json)")
    tap.is_(r.header("content-type"), "application/json",
            "status json content type")
    lock = stack.pg.lock_table()
    results = []
    threads = blocked_posts(stack, POOL + 4, stack.tokens["valid"], results)
    busy = ct.wait_for(lambda: (status_json(stack)[1] or {}).get(
        "active processes") == POOL, 10, 0.1)
    tap.ok(busy, "status answers while all %d workers are busy" % POOL)
    queued = ct.wait_for(lambda: (status_json(stack)[1] or {}).get(
        "listen queue", 0) >= 1, 10, 0.1)
    r, st = status_json(stack, "json&full")
    tap.ok(queued and st is not None, "listen queue is non-zero with "
           "requests waiting on the unix socket", repr(st))
    procs = (st or {}).get("processes", [])
    tap.is_(sorted(p["state"] for p in procs), ["Running"] * POOL,
            "?full shows every worker Running (PHP-FPM's state)")
    tap.is_(sorted(p["phase"] for p in procs), ["Database"] * POOL,
            "?full shows every worker in the Database phase (cfpm's)")
    tap.ok(all(p["request uri"] == "/events" and
               p["request method"] == "POST" for p in procs),
           "?full shows the request of each worker")
    tap.ok(st and st["listen queue len"] >= 1, "listen queue len reported")
    text = stack.get("/status", timeout=5)
    tap.like(text.body.decode(), r"active processes:\s+%d" % POOL,
             "text status while busy")
    om = stack.get("/status?openmetrics", timeout=5)
    tap.like(om.body.decode(), r"\nphpfpm_active_processes %d\n(.|\n)*"
             r"# EOF\n$" % POOL, "openmetrics while busy, ending in # EOF")
    ct.Cluster.release_lock(lock)
    for t in threads:
        t.join(30)
    tap.is_(sorted(r.status for r in results), [201] * (POOL + 4),
            "every blocked and queued request completed with 201")
    r, st1 = status_json(stack)
    tap.is_(st1["accepted conn"] - st0["accepted conn"], POOL + 4,
            "accepted conn grew by exactly the requests sent")
    tap.is_(st1["responses 2xx"] - st0["responses 2xx"], POOL + 4,
            "2xx counter matches")
    tap.cmp_ok(st1["max listen queue"], ">=", 1, "max listen queue kept")
    stack.stop_cfpm()


def test_graceful_stop(tap, stack):
    """Requests in flight at SIGTERM finish with their normal status."""
    c = stack.start_cfpm(stack_settings(stack, {}))
    lock = stack.pg.lock_table()
    results = []
    threads = blocked_posts(stack, POOL, stack.tokens["valid"], results)
    ct.wait_for(lambda: stack.pg.waiting_locks() >= POOL, 10, 0.1)
    workers = c.workers()
    os.kill(c.pid, signal.SIGTERM)
    time.sleep(1.0)
    tap.ok(c.alive(), "master waits for in-flight requests")
    ct.Cluster.release_lock(lock)
    for t in threads:
        t.join(30)
    tap.is_(sorted(r.status for r in results), [201] * POOL,
            "in-flight requests completed with 201 after SIGTERM")
    try:
        rc = c.popen.wait(timeout=15)
    except Exception:
        rc = None
    tap.is_(rc, 0, "master exits 0 after the graceful stop")
    tap.ok(not [p for p in workers if ct.pid_alive(p)],
           "no worker left behind")
    tap.ok(not os.path.exists(stack.sock) and
           not os.path.exists(stack.status_sock),
           "sockets cfpm created are removed")
    stack.cfpm = None


def test_max_requests(tap, stack):
    c = stack.start_cfpm(stack_settings(stack, {"pm.max_requests": 50}))
    first = set(c.workers())
    token = stack.tokens["valid"]
    bad = 0
    for i in range(1000):
        r = stack.get("/events/%d" % (1 + i % 1000), token=token)
        bad += r.status != 200
    tap.is_(bad, 0, "1,000 requests with pm.max_requests=50: none failed")
    recycled = ct.wait_for(lambda: not first & set(c.workers()), 15, 0.1)
    tap.ok(recycled, "every original worker was recycled",
           "first %r now %r" % (sorted(first), c.workers()))
    # A recycle may still be under way (replacement up, old one leaving).
    ct.wait_for(lambda: len(c.workers()) == POOL, 10, 0.1)
    tap.is_(len(c.workers()), POOL, "pool size unchanged")
    r, st = status_json(stack)
    tap.cmp_ok((st or {}).get("respawns recycle", 0), ">=", POOL,
               "status counts the recycles")
    stack.stop_cfpm(c)


def backend_pid(stack):
    rows = stack.pg.psql("SELECT pid FROM pg_stat_activity WHERE "
                         "application_name = 'cfpm' AND state = 'active' "
                         "AND wait_event_type = 'Lock'")
    return int(rows[0][0]) if rows else None


def busy_worker(stack):
    """The pid of the worker serving a POST /events, or None."""
    r, st = status_json(stack, "json&full")
    for p in (st or {}).get("processes", []):
        if p.get("request uri") == "/events" and p.get("state") != "Idle":
            return p.get("pid")
    return None


def workers_db_ok(stack):
    r, st = status_json(stack, "json&full")
    procs = (st or {}).get("processes", [])
    return bool(procs) and all(p.get("database") == "ok" for p in procs)


def stuck_post(stack, find):
    """Locks events and sends one POST that waits for the lock; returns
    (the lock, the thread list, its results, find()'s pid or None)."""
    lock = stack.pg.lock_table()
    results = []
    threads = blocked_posts(stack, 1, stack.tokens["valid"], results)
    return lock, threads, results, ct.wait_for(find, 10, 0.1)


def unlock_connected(tap, stack, lock, desc):
    """Releases the lock; every worker's database is ok again soon."""
    ct.Cluster.release_lock(lock)
    tap.ok(ct.wait_for(lambda: workers_db_ok(stack), 10, 0.2), desc)


def test_terminate(tap, stack):
    """A request stuck in PostgreSQL is cut at request_terminate_timeout
    (its connection dropped, no PQcancel: the worker survives), also when
    the backend itself is frozen; the slow log names it; a worker that
    does not come back (frozen itself) is killed and replaced."""
    c = stack.start_cfpm(stack_settings(stack, {
        "request_terminate_timeout": 2, "request_slowlog_timeout": 1}))
    workers = c.workers()
    lock = stack.pg.lock_table()
    t0 = time.monotonic()
    r = stack.post("/events", EVENT, token=stack.tokens["valid"],
                   timeout=20)
    took = time.monotonic() - t0
    tap.is_(r.status, 503, "stuck request answered 503")
    tap.is_(r.json(), {"error": "unavailable"}, "503 body")
    tap.ok(1.5 < took < 5, "cut near the 2 s timeout (%.2f s)" % took)
    log = ct.tail(c.log, 50)
    tap.like(log, r"slow request: worker \d+, POST /events, phase Database",
             "slow log names worker, URI and phase")
    tap.is_(c.workers(), workers, "the worker survived")
    unlock_connected(tap, stack, lock, "the worker connected again once "
                     "the lock was gone")
    # A backend that could not even answer a cancel: SIGSTOP it.
    lock, threads, results, pid = stuck_post(stack,
                                             lambda: backend_pid(stack))
    tap.ok(pid, "found the stuck backend")
    if pid:
        os.kill(pid, signal.SIGSTOP)
    for t in threads:
        t.join(30)
    if pid:
        os.kill(pid, signal.SIGCONT)
    tap.ok(len(results) == 1 and results[0].status == 503 and
           results[0].elapsed < 5, "a request whose backend is frozen is "
           "503 at the timeout all the same",
           "got %r" % [(x.status, round(x.elapsed, 2)) for x in results])
    tap.is_(c.workers(), workers, "its worker survived")
    unlock_connected(tap, stack, lock, "every worker is connected again")
    # A worker that does not come back: SIGSTOP the worker itself.
    lock, threads, results, wpid = stuck_post(stack,
                                              lambda: busy_worker(stack))
    tap.ok(wpid in workers, "found the worker holding the POST (%r)" % wpid)
    if wpid in workers:
        os.kill(wpid, signal.SIGSTOP)
    replaced = ct.wait_for(lambda: len(set(c.workers()) - set(workers)) == 1,
                           15, 0.2)
    tap.ok(replaced, "a worker that does not come back is killed and "
           "replaced")
    ct.Cluster.release_lock(lock)
    for t in threads:
        t.join(30)
    tap.like(ct.tail(c.log, 50), r"request_terminate_timeout: killing "
             r"worker \d+", "the kill is logged")
    r, st = status_json(stack)
    tap.ok(st and st["respawns terminate"] == 1 and
           st["terminated requests"] == 1 and st["slow requests"] >= 3,
           "status counts the terminate and the slow requests", repr(st))
    r = stack.get("/events/1", token=stack.tokens["valid"])
    tap.is_(r.status, 200, "the pool serves again")
    stack.stop_cfpm(c)


def test_notify(tap, stack):
    """READY=1 once the workers serve (with PostgreSQL up: connected and
    prepared), RELOADING=1/READY=1 around a reload, STATUS= lines,
    WATCHDOG=1, STOPPING=1 at stop."""
    ns = ct.NotifySocket(os.path.join(stack.dir, "notify.sock"))
    conf = stack.write_config(stack_settings(stack, {}))
    c = stack.spawn_cfpm(conf, env={"NOTIFY_SOCKET": ns.path,
                                    "WATCHDOG_USEC": "1000000"})
    stack.cfpm = c
    tap.ok(ns.wait("READY=1", 15), "READY=1 received")
    r, st = status_json(stack)
    tap.ok(st and st["idle processes"] == POOL,
           "READY=1 only once every worker is idle and prepared", repr(st))
    tap.ok(ns.wait("WATCHDOG=1", 5), "WATCHDOG=1 with WATCHDOG_USEC set")
    n = len(ns.poll())
    os.kill(c.pid, signal.SIGHUP)
    tap.ok(ns.wait("RELOADING=1", 10), "RELOADING=1 on SIGHUP")
    def ready_after_reload():
        later = ns.poll(0.05)[n:]
        return "RELOADING=1" in later and \
            "READY=1" in later[later.index("RELOADING=1"):]
    tap.ok(ct.wait_for(ready_after_reload, 15),
           "READY=1 again after the reload")
    tap.ok(ct.wait_for(lambda: any(m.startswith("STATUS=Processes active")
                                   for m in ns.poll(0.1)), 8),
           "STATUS= line with the pool figures")
    rc = stack.stop_cfpm(c)
    tap.is_(rc, 0, "stopped")
    tap.ok("STOPPING=1" in ns.poll(0.2), "STOPPING=1 on SIGTERM")
    order = [m for m in ns.messages if m in ("READY=1", "RELOADING=1",
                                             "STOPPING=1")]
    tap.is_(order, ["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"],
            "messages in order")
    ns.close()


def test_reopen(tap, stack):
    log = os.path.join(stack.dir, "error.log")
    access = os.path.join(stack.dir, "access.log")
    c = stack.start_cfpm(stack_settings(stack, {
        "error_log": log, "access.log": access}))
    stack.get("/events/1", token=stack.tokens["valid"])
    tap.like(open(access).read(), r'"GET /events/1" 200 ',
             "access log line written")
    tap.ok(stack.tokens["valid"] not in open(access).read() and
           stack.tokens["valid"] not in open(log).read(),
           "no token in the logs")
    os.rename(log, log + ".1")
    os.rename(access, access + ".1")
    os.kill(c.pid, signal.SIGUSR1)
    tap.ok(ct.wait_for(lambda: os.path.exists(log), 5),
           "SIGUSR1 reopens the error log")
    workers = c.workers()
    ct.wait_for(lambda: False, 0.3)
    for i in range(2 * POOL):
        stack.get("/events/2", token=stack.tokens["valid"])
    tap.ok(ct.wait_for(lambda: os.path.exists(access), 5),
           "workers reopen the access log")
    tap.is_(c.workers(), workers, "without recycling the pool")
    stack.stop_cfpm(c)


def body(tap):
    with ct.Stack(tap) as stack:
        stack.setup()
        test_reload_under_load(tap, stack)
        test_status_busy(tap, stack)
        test_graceful_stop(tap, stack)
        test_max_requests(tap, stack)
        test_terminate(tap, stack)
        test_notify(tap, stack)
        test_reopen(tap, stack)


if __name__ == "__main__":
    ct.main(body)
