#!/usr/bin/env python3
"""
test_frozen_db.py: every wait for the database is bounded (issue 21, item
1). A frozen PostgreSQL -- every process of the cluster SIGSTOPped: the
kernel still completes its handshakes and takes the data sent to it,
nothing ever answers, so no TCP timeout fires -- under a write+read load
through nginx, with db.timeout = DB_TIMEOUT_S and fewer load clients than
workers:

1. Frozen while connected, over the unix socket, then over TCP: every
   request answered within db.timeout + 1 s (200, 201 or 503: never 500,
   502, 504 or no answer), every request sent while frozen 503; /health
   within 1 s, 503 while frozen; the outage logged (a line naming the
   missing answer) in a bounded number of lines; nothing acknowledged
   lost (every 201's id reads back with its marker after the thaw, no
   marker stored twice); every request served again within
   RECOVERY_LIMIT_S of SIGCONT (the figure is reported); the same
   workers throughout.
2. Frozen while disconnected: cfpm started against the frozen server, so
   that its workers' connection attempts meet it: the pool answers
   (/health 503) within a bounded time, then the same bounds.
3. The first host of a multi-host conninfo frozen, a second live cluster
   behind it: the workers move on to the second host (each host is given
   its connect_timeout), so writes come back within RESUME_LIMIT_S of
   the freeze while /auth and /health answer within 1 s throughout.
4. A host back from an outage is not trusted with a miss: two
   independent clusters A and B on one conninfo, one worker. A stopped,
   the worker moves to B, a write is acknowledged there; A started and B
   stopped, the worker is back on A, which lacks the row, as a replaced
   primary not yet demoted would: the acknowledged id reads 503, never
   404, while a seeded id reads 200; once a write has committed on A the
   miss is trusted (404).

Figures (diagnostics): the longest request, the longest /health, log
lines, the time to full service after SIGCONT, the write gap.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from clientload import Load, longest_write_gap, tally  # noqa: E402

POOL = 4
WRITERS = 2             # with READERS and the probes: fewer clients than
READERS = 1             # workers, so a worker is free for /health

DB_TIMEOUT_S = 2        # db.timeout under test
REQUEST_LIMIT_S = DB_TIMEOUT_S + 1.0
HEALTH_LIMIT_S = 1.0    # /health's promise, through nginx
PROBE_EVERY_S = 0.2     # /health and /auth probes
CLIENT_TIMEOUT_S = 30   # a request the old code held: measured, not hung
WARMUP_S = 2.0
FREEZE_S = 8.0          # how long the server stays frozen
MULTI_FREEZE_S = 10.0   # the multi-host case: past RESUME_LIMIT_S
AFTER_THAW_S = 6.0      # load goes on after SIGCONT
RECOVERY_LIMIT_S = 5.0  # SIGCONT -> every request served again
# Multi-host: the stuck statement (db.timeout), one connect_timeout on the
# frozen host (2 s), a backoff step and scheduling slack.
RESUME_LIMIT_S = DB_TIMEOUT_S + 2 + 2 + 2.0
START_LIMIT_S = 10      # cfpm started against a frozen server: answers
STATUS_WAIT_S = 5       # every worker's database "ok" on the status page
LOG_LINES_MAX = 5 * POOL + 5    # per worker: lost, unavailable (flood
                                # limited), back; the master's two


def start_load(st, kind, seeded=0):
    """Writers and readers through the stack's nginx (clientload.Load)."""
    return Load("127.0.0.1", st.http_port, st.tokens["valid"], kind,
                writers=WRITERS, readers=READERS, seeded=seeded)


class Probes:
    """GET /health (and /auth with auth) every PROBE_EVERY_S through
    nginx until stop(); each is recorded as (path, start, end, outcome)."""

    def __init__(self, st, auth=False):
        self.st = st
        self.paths = ["/health"] + (["/auth"] if auth else [])
        self.records = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            for path in self.paths:
                t = time.monotonic()
                r = self.st.get(path, self.st.tokens["valid"],
                                timeout=CLIENT_TIMEOUT_S)
                self.records.append((path, t, time.monotonic(),
                                     ct.outcome(r)))
            self.stopping.wait(PROBE_EVERY_S)

    def stop(self):
        self.stopping.set()
        self.thread.join(CLIENT_TIMEOUT_S + 5)
        return not self.thread.is_alive()


def stop_all(tap, name, load, probes):
    tap.ok(load.stop() and probes.stop(), "%s: every client finished" %
           name)


def pool_of(c):
    """The workers, once all POOL of them are there (under load the first
    may answer before the master has forked the last)."""
    ct.wait_for(lambda: len(c.workers()) == POOL, 10, 0.05)
    return c.workers()


def workers_db_ok(st):
    """True when every worker on the status page says database ok."""
    r = st.get("/status?json&full", timeout=5)
    procs = (r.json() or {}).get("processes", []) if r.status == 200 \
        else []
    return bool(procs) and all(p.get("database") == "ok" for p in procs)


def full_service_after(load, probes, t_thaw):
    """Seconds from SIGCONT to the end of the last request or probe sent
    after it that was not served (0: none), and how many were served
    after that."""
    bad = [end for op, t, end, out, _, _ in load.records
           if t >= t_thaw and out not in (200, 201)]
    bad += [end for path, t, end, out in probes.records
            if t >= t_thaw and out != 200]
    t_ok = max(bad) if bad else t_thaw
    served = sum(1 for op, t, _, out, _, _ in load.records
                 if t > t_ok and out in (200, 201))
    return t_ok - t_thaw, served


def check_answers(tap, name, load, probes, t_frozen, t_thaw):
    """The bounds on every request and probe, before, during and after."""
    recs = load.records
    slowest = max([end - t for _, t, end, _, _, _ in recs] or [0])
    bad = [r for r in recs if r[3] not in (200, 201, 503)]
    tap.ok(recs and slowest <= REQUEST_LIMIT_S, "%s: every request answered "
           "within db.timeout + 1 s (%d requests, slowest %.2f s)" %
           (name, len(recs), slowest))
    tap.ok(not bad, "%s: every answer 200, 201 or 503 (no 500, 502, 504 "
           "or dropped request)" % name,
           "statuses %r" % tally(str(r[3]) for r in recs))
    during = [r for r in recs if r[1] > t_frozen and r[2] < t_thaw]
    tap.ok(during and all(r[3] == 503 for r in during), "%s: every request "
           "sent while frozen is 503 (%d)" % (name, len(during)),
           "statuses %r" % tally(str(r[3]) for r in during))
    check_probes(tap, name, probes)
    frozen = [p for p in probes.records if p[0] == "/health" and
              p[1] > t_frozen and p[2] < t_thaw]
    tap.ok(frozen and all(p[3] == 503 for p in frozen), "%s: /health is 503 "
           "while the database is frozen (%d probes)" % (name, len(frozen)),
           "statuses %r" % tally(str(p[3]) for p in frozen))
    tap.diag("%s: requests %r, slowest %.2f s" % (
        name, tally(str(r[3]) for r in recs), slowest))


def check_probes(tap, name, probes):
    """Every probe within HEALTH_LIMIT_S; /auth (no database) always 200."""
    for path in probes.paths:
        recs = [p for p in probes.records if p[0] == path]
        worst = max([p[2] - p[1] for p in recs] or [0])
        tap.ok(recs and worst <= HEALTH_LIMIT_S, "%s: every %s probe "
               "answered within %.0f s (%d probes, slowest %.2f s)" % (
                   name, path, HEALTH_LIMIT_S, len(recs), worst))
    auth = [p for p in probes.records if p[0] == "/auth"]
    if auth:
        tap.ok(all(p[3] == 200 for p in auth), "%s: /auth (no database) is "
               "200 throughout" % name,
               "statuses %r" % tally(str(p[3]) for p in auth))


def check_recovery(tap, name, st, load, probes, t_thaw):
    took, served = full_service_after(load, probes, t_thaw)
    tap.ok(took <= RECOVERY_LIMIT_S and served >= 10, "%s: every request "
           "served again %.1f s after SIGCONT (within %.0f s; %d served "
           "after)" % (name, took, RECOVERY_LIMIT_S, served))
    tap.ok(ct.wait_for(lambda: workers_db_ok(st), STATUS_WAIT_S, 0.2),
           "%s: every worker's database is ok on the status page" % name)
    return took


def check_data(tap, name, load, stored):
    """stored: marker -> [(host, id)]. Every 201 stored once, as told."""
    acked = {m: rid for op, _, _, out, rid, m in load.records
             if op == "post" and out == 201}
    missing = [m for m, rid in acked.items()
               if [i for _, i in stored.get(m, [])] != [rid]]
    dups = [m for m, ids in stored.items() if len(ids) > 1]
    unknown = [m for op, _, _, out, _, m in load.records
               if op == "post" and out == 503 and m in stored]
    tap.ok(acked and not missing, "%s: all %d acknowledged ids read back "
           "with their markers" % (name, len(acked)),
           "missing or wrong: %r" % missing[:10])
    tap.ok(not dups, "%s: no POST stored twice" % name,
           "duplicated markers: %r" % dups[:10])
    tap.diag("%s: %d writes answered 503 are stored (outcome unknown, "
             "allowed)" % (name, len(unknown)))


def stored_rows(pg, kind, host="a"):
    out = {}
    for rid, marker in pg.psql("SELECT id, payload->>'m' FROM events WHERE "
                               "kind = '%s'" % kind):
        out.setdefault(marker, []).append((host, int(rid)))
    return out


def check_logs(tap, name, c, mark):
    lines = ct.log_text(c.log)[mark:].splitlines()
    said = [l for l in lines if "no answer within" in l]
    tap.ok(said and len(lines) <= LOG_LINES_MAX, "%s: the outage is logged "
           "in %d lines (at most %d), naming the missing answer" % (
               name, len(lines), LOG_LINES_MAX), *lines[-40:])
    return len(lines)


def thaw_and_check(st, name, kind, t_frozen, load, probes):
    """Holds the freeze FREEZE_S, thaws, lets the load run on, then checks
    the answers, the recovery and the data. Returns the recovery time."""
    tap = st.tap
    time.sleep(FREEZE_S)
    st.pg.thaw()
    t_thaw = time.monotonic()
    time.sleep(AFTER_THAW_S)
    stop_all(tap, name, load, probes)
    check_answers(tap, name, load, probes, t_frozen, t_thaw)
    took = check_recovery(tap, name, st, load, probes, t_thaw)
    check_data(tap, name, load, stored_rows(st.pg, kind))
    return took


def run_frozen(st, name, conninfo, kind):
    """Case 1: a connected pool, its server frozen under load, thawed."""
    tap = st.tap
    tap.diag("-- %s" % name)
    c = st.start_cfpm({"db.conninfo": conninfo, "db.timeout": DB_TIMEOUT_S},
                      n=POOL)
    before = pool_of(c)
    traffic = (start_load(st, kind), Probes(st))
    time.sleep(WARMUP_S)
    mark = len(ct.log_text(c.log))
    st.pg.freeze()
    took = thaw_and_check(st, name, kind, time.monotonic(), *traffic)
    nlines = check_logs(tap, name, c, mark)
    tap.ok(c.alive() and c.workers() == before, "%s: same master, same "
           "workers" % name, *ct.crash_lines(c))
    tap.diag("%s: figures: %s" % (name, json.dumps({
        "slowest_request_s": round(max(r[2] - r[1] for r in
                                       traffic[0].records), 2),
        "slowest_health_s": round(max(p[2] - p[1] for p in
                                      traffic[1].records), 2),
        "log_lines": nlines, "full_service_after_thaw_s": round(took, 1)})))
    st.stop_cfpm(c)


def run_frozen_at_start(st, kind):
    """Case 2: the workers' connection attempts meet the frozen server."""
    tap = st.tap
    name = "frozen at start"
    tap.diag("-- %s" % name)
    conf = st.write_config({"db.timeout": DB_TIMEOUT_S,
                            "pm.max_children": POOL})
    st.pg.freeze()
    t_frozen = time.monotonic()
    c = st.spawn_cfpm(conf)
    st.cfpm = c
    answered = ct.wait_for(lambda: st.get("/health", timeout=2).status
                           == 503, START_LIMIT_S, 0.1)
    tap.ok(answered, "%s: the pool answers /health 503 within %d s of its "
           "start (%.1f s)" % (name, START_LIMIT_S,
                               time.monotonic() - t_frozen))
    mark = len(ct.log_text(c.log))
    thaw_and_check(st, name, kind, t_frozen, start_load(st, kind),
                   Probes(st))
    lines = ct.log_text(c.log)[mark:].splitlines()
    tap.ok(len(lines) <= LOG_LINES_MAX, "%s: %d log lines while frozen (at "
           "most %d)" % (name, len(lines), LOG_LINES_MAX), *lines[-40:])
    tap.ok(c.alive(), "%s: the master lives" % name)
    st.stop_cfpm(c)


def second_host(st, sub):
    """A second seeded cluster B beside the stack's A, and the two-host
    conninfo that lists A first: (A, B, conninfo)."""
    b = ct.Cluster(os.path.join(st.dir, sub))
    b.init()
    b.start()
    b.seed(ct.SEED_ROWS)
    a = st.pg
    return a, b, "host=%s,%s port=%d,%d dbname=events user=postgres" % (
        a.sockdir, b.sockdir, a.port, b.port)


def run_multi_host(st, kind):
    """Case 3: host A (the stack's cluster) frozen, host B live."""
    tap = st.tap
    name = "multi-host, first host frozen"
    tap.diag("-- %s" % name)
    a, b, conninfo = second_host(st, "b")
    c = st.start_cfpm({"db.conninfo": conninfo, "db.timeout": DB_TIMEOUT_S},
                      n=POOL)
    before = pool_of(c)
    traffic = start_load(st, kind, seeded=ct.SEED_ROWS)
    probes = Probes(st, auth=True)
    time.sleep(WARMUP_S)
    a.freeze()
    t_frozen = time.monotonic()
    time.sleep(MULTI_FREEZE_S)
    t_thaw = time.monotonic()
    gap = longest_write_gap(traffic.records, t_frozen, t_thaw)
    a.thaw()
    time.sleep(AFTER_THAW_S)
    stop_all(tap, name, traffic, probes)
    tap.ok(gap <= RESUME_LIMIT_S, "%s: writes back on the second host within "
           "%.0f s of the freeze (longest gap %.1f s)" % (
               name, RESUME_LIMIT_S, gap))
    recs = traffic.records
    slowest = max([end - t for _, t, end, _, _, _ in recs] or [0])
    tap.ok(recs and slowest <= REQUEST_LIMIT_S, "%s: every request answered "
           "within db.timeout + 1 s (slowest %.2f s)" % (name, slowest))
    tap.ok(all(r[3] in (200, 201, 503) for r in recs), "%s: every answer "
           "200, 201 or 503" % name,
           "statuses %r" % tally(str(r[3]) for r in recs))
    check_probes(tap, name, probes)
    stored = stored_rows(a, kind, "a")
    for m, ids in stored_rows(b, kind, "b").items():
        stored.setdefault(m, []).extend(ids)
    check_data(tap, name, traffic, stored)
    tap.ok(c.alive() and c.workers() == before, "%s: same master, same "
           "workers" % name, *ct.crash_lines(c))
    tap.diag("%s: write gap %.1f s" % (name, gap))
    st.stop_cfpm(c)


def wait_health(st, timeout=20):
    """/health 200 through nginx (the one worker connected again)."""
    return ct.wait_for(lambda: st.get("/health").status == 200, timeout, 0.1)


def run_unproven_host(st):
    """Case 4: a miss on a connection made after an outage, not proven."""
    tap = st.tap
    name = "a host back from an outage"
    tap.diag("-- %s" % name)
    a, b, conninfo = second_host(st, "b4")
    # B's ids far past any of A's: an id acknowledged there is not on A.
    b.psql("ALTER TABLE events ALTER COLUMN id RESTART WITH 1000000000")
    # db.timeout is also how long a miss stays untrusted: room for the steps.
    c = st.start_cfpm({"db.conninfo": conninfo, "db.timeout": 30}, n=1)
    token = st.tokens["valid"]
    a.stop()
    tap.ok(wait_health(st), "%s: A stopped, the worker serves from B" % name)
    r = st.post("/events", ct.BENCH_BODY, token=token)
    acked = r.json().get("id") if r.status == 201 else None
    tap.ok(acked is not None and b.psql("SELECT count(*) FROM events WHERE "
                                        "id = %d" % acked) == [["1"]],
           "%s: a write acknowledged on B (id %s)" % (name, acked),
           "status %d" % r.status)
    a.start()
    b.stop()
    tap.ok(wait_health(st), "%s: B stopped, the worker is back on A" % name)
    got = st.get("/events/%d" % (acked or 0), token=token).status
    tap.is_(got, 503, "%s: the id acknowledged on B, missing on A, reads "
            "503 (not a stale 404): no write has proven A yet" % name)
    tap.is_(st.get("/events/1", token=token).status, 200, "%s: a row A has "
            "reads 200" % name)
    r = st.post("/events", ct.BENCH_BODY, token=token)
    tap.is_(r.status, 201, "%s: a write commits on A" % name)
    tap.is_(st.get("/events/%d" % (acked or 0), token=token).status, 404,
            "%s: then A is trusted with the miss (404)" % name)
    st.stop_cfpm(c)


def main(tap):
    with ct.Stack(tap) as st:
        # TCP beside the unix socket (initdb -A trust covers 127.0.0.1).
        st.pg.settings["listen_addresses"] = "'127.0.0.1'"
        st.setup()
        run_frozen(st, "frozen, unix socket", st.pg.conninfo(),
                   "frozen-unix-%d" % os.getpid())
        run_frozen(st, "frozen, TCP", st.pg.conninfo(tcp=True),
                   "frozen-tcp-%d" % os.getpid())
        run_frozen_at_start(st, "frozen-start-%d" % os.getpid())
        run_multi_host(st, "frozen-multi-%d" % os.getpid())
        run_unproven_host(st)


if __name__ == "__main__":
    ct.main(main)
