"""
clientload.py: client load through nginx, and what the clients saw, for
the integration tests (a library, not a test): test_faults.py,
test_commit.py, test_cluster.py and test_frozen_db.py drive cfpm with
these while they break something, then count the outcomes.

- Writers: n clients POSTing numbered markers until a deadline.
- Mixed: readers, writers and token-only requests until stopped.
- Load: writers that read back the id they were given and readers of
  ids others were given, against any host:port (a balancer too).
- held_requests: requests held in the database at once, one per worker.
- DROPPED, tally, longest_write_gap: counting what the clients saw.

Each load records every request's outcome (harness.http.outcome: the
status, "timeout" or "connection error"); none of them asserts
anything: the tests do, on the records. Stack-driven ones (Writers,
Mixed, held_requests) take a cfpmtest.Stack; Load needs only an address.
"""

import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")))

from harness.contract import BENCH_BODY  # noqa: E402
from harness.http import http_request, outcome  # noqa: E402
from harness.proc import wait_for  # noqa: E402

# Statuses that mean "the request was dropped on the way" (the outcome of a
# write is unknown): nginx's 502/504 while cfpm is down or a worker died
# mid-request, and client-side connection errors/timeouts (status 0).
DROPPED = (0, 502, 504)

WRITERS_TIMEOUT_S = 5       # a Writers request's timeout
WRITERS_PAUSE_S = 0.02      # after a failed one (no busy loop while cfpm
                            # is down)
WRITERS_JOIN_S = 10         # join(): each Writers client ends within this
                            # past the deadline (beyond its last timeout)
MIXED_TIMEOUT_S = 10        # a Mixed request's timeout
MIXED_PAUSE_S = 0.01        # between a Mixed client's requests
MIXED_SECONDS = 60          # a Mixed load stops by itself after this
MIXED_BODY_KEPT = 200       # bytes of each answer a Mixed log keeps
MIXED_JOIN_S = 20           # stop(): each Mixed client ends within this
LOAD_TIMEOUT_S = 40         # a Load request's timeout (test_cluster: past
                            # nginx's 20 s + 15 s, a client hangs)
LOAD_PAUSE_S = 0.01         # between a Load client's requests
LOAD_FAIL_PAUSE_S = 0.05    # after a failed one (no busy loop)
HOLD_WAIT_S = 10            # held_requests: every request waiting on the lock
HOLD_JOIN_S = 30            # held_requests: each request's thread ends
HOLD_POLL_S = 0.1


def tally(values):
    """{value: how many times it came}, in the order of str(value): a
    diagnostic's summary of outcomes (or of anything countable)."""
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def held_requests(st, reqs):
    """Takes the table lock, starts every request of reqs (callables) in a
    thread, waits until all of them wait on the lock (so each sits in a
    different worker, inside the database), releases; returns
    (all_waiting, [Response])."""
    holder = st.pg.lock_table()
    results = [None] * len(reqs)

    def run(i):
        results[i] = reqs[i]()
    ts = [threading.Thread(target=run, args=(i,), daemon=True)
          for i in range(len(reqs))]
    try:
        for t in ts:
            t.start()
        waiting = wait_for(lambda: st.pg.waiting_locks() >= len(reqs),
                           HOLD_WAIT_S, HOLD_POLL_S)
    finally:
        st.pg.release_lock(holder)
    for t in ts:
        t.join(HOLD_JOIN_S)
    return bool(waiting), results


class Writers:
    """n client threads posting {"kind":kind,"payload":{"c":client,"n":seq}}
    through st's nginx until the deadline (seconds from now); every
    request's outcome is recorded: outcomes[(c, n)] = (outcome, id),
    acked_at the monotonic time of each 201."""

    def __init__(self, st, token, n, seconds, kind):
        self.st = st
        self.token = token
        self.kind = kind
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.outcomes = {}      # (c, n) -> (status or kind of failure, id)
        self.acked_at = []      # monotonic time of each 201
        self.threads = [threading.Thread(target=self._run, args=(c,),
                                         daemon=True) for c in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, c):
        n = 0
        while time.monotonic() < self.deadline:
            n += 1
            body = json.dumps({"kind": self.kind,
                               "payload": {"c": c, "n": n}})
            r = self.st.post("/events", body, self.token,
                             timeout=WRITERS_TIMEOUT_S)
            out = outcome(r)
            rid = None
            if r.status == 201:
                rid = (r.json() or {}).get("id")
            with self.lock:
                self.outcomes[(c, n)] = (out, rid)
                if r.status == 201:
                    self.acked_at.append(time.monotonic())
            if r.status != 201:
                time.sleep(WRITERS_PAUSE_S)

    def join(self):
        """Waits for every client (up to WRITERS_JOIN_S past the
        deadline)."""
        for t in self.threads:
            t.join(max(1, self.deadline - time.monotonic() + WRITERS_JOIN_S))


class Mixed:
    """Readers (GET /events/N), writers (POST) and token-only requests
    (GET /auth) through st's nginx until stop() (or seconds); every
    request's (what, status, elapsed, start, end, body) is kept."""

    def __init__(self, st, token, seconds=MIXED_SECONDS):
        self.st = st
        self.token = token
        self.lock = threading.Lock()
        self.log = []
        self.halt = threading.Event()
        self.deadline = time.monotonic() + seconds
        plan = ["read", "read", "write", "write", "auth"]
        self.threads = [threading.Thread(target=self._run, args=(w, i),
                                         daemon=True)
                        for i, w in enumerate(plan)]
        for t in self.threads:
            t.start()

    def _run(self, what, k):
        i = 0
        while not self.halt.is_set() and time.monotonic() < self.deadline:
            i += 1
            t0 = time.monotonic()
            if what == "read":
                r = self.st.get("/events/%d" % (1 + (i * 7 + k) % 1000),
                                self.token, timeout=MIXED_TIMEOUT_S)
            elif what == "write":
                r = self.st.post("/events", BENCH_BODY, self.token,
                                 timeout=MIXED_TIMEOUT_S)
            else:
                r = self.st.get("/auth", self.token, timeout=MIXED_TIMEOUT_S)
            t1 = time.monotonic()
            with self.lock:
                self.log.append((what, r.status, t1 - t0, t0, t1,
                                 r.body[:MIXED_BODY_KEPT]))
            time.sleep(MIXED_PAUSE_S)

    def stop(self):
        """Stops the clients; returns the log."""
        self.halt.set()
        for t in self.threads:
            t.join(MIXED_JOIN_S)
        return list(self.log)


class Load:
    """Writers (POST a marker, then GET the id given) and readers (GET ids
    others were given; with seeded, ids 1..seeded, which every database
    holds) against host:port until stop(). Every request is recorded:
    (op, start, end, outcome, id, marker)."""

    def __init__(self, host, port, token, kind, writers, readers, seeded=0,
                 timeout=LOAD_TIMEOUT_S):
        self.host, self.port = host, port
        self.auth = [("Authorization", "Bearer " + token)]
        self.kind = kind
        self.seeded = seeded
        self.timeout = timeout
        self.lock = threading.Lock()
        self.records = []
        self.acked = []         # ids answered 201
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(c,),
                                         daemon=True)
                        for c in range(writers)]
        self.threads += [threading.Thread(target=self._reader, daemon=True)
                         for _ in range(readers)]
        for t in self.threads:
            t.start()

    def _call(self, op, method, path, body=None, marker=None):
        headers = list(self.auth)
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        t = time.monotonic()
        r = http_request(self.port, method, path, headers, body,
                         self.timeout, self.host)
        rid = (r.json() or {}).get("id") if r.status in (200, 201) else None
        with self.lock:
            self.records.append((op, t, time.monotonic(), outcome(r), rid,
                                 marker))
        return r, rid

    def _writer(self, c):
        n = 0
        while not self.stopping.is_set():
            n += 1
            marker = "%s.%d.%d" % (self.kind, c, n)
            body = json.dumps({"kind": self.kind,
                               "payload": {"m": marker}})
            r, rid = self._call("post", "POST", "/events", body, marker)
            if r.status != 201 or type(rid) is not int:
                time.sleep(LOAD_FAIL_PAUSE_S)
                continue
            with self.lock:
                self.acked.append(rid)
            self._call("own", "GET", "/events/%d" % rid, marker=marker)
            time.sleep(LOAD_PAUSE_S)

    def _reader(self):
        while not self.stopping.is_set():
            with self.lock:
                rid = random.randint(1, self.seeded) if self.seeded else \
                    random.choice(self.acked) if self.acked else None
            if rid is None:
                time.sleep(LOAD_FAIL_PAUSE_S)
                continue
            r, _ = self._call("read", "GET", "/events/%d" % rid)
            time.sleep(LOAD_PAUSE_S if r.status == 200 else
                       LOAD_FAIL_PAUSE_S)

    def acks_since(self, t0):
        """201s for POSTs sent after t0."""
        with self.lock:
            return sum(1 for op, t, _, out, _, _ in self.records
                       if op == "post" and out == 201 and t > t0)

    def stop(self):
        """Stops the clients; True if every one ended in time."""
        self.stopping.set()
        for t in self.threads:
            t.join(self.timeout + 5)
        return all(not t.is_alive() for t in self.threads)


def longest_write_gap(records, t0, t1):
    """The longest stretch in [t0, t1] without a 201 arriving, starting
    at the fault: the write outage the clients saw (records: a Load's)."""
    ends = sorted(end for op, _, end, out, _, _ in records
                  if op == "post" and out == 201 and t0 <= end <= t1)
    gap, last = 0.0, t0
    for end in ends + [t1]:
        gap = max(gap, end - last)
        last = end
    return gap
