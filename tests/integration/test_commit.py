#!/usr/bin/env python3
"""
test_commit.py: a 201 always means committed, a read answers only from a
complete exchange, and database failures are logged once.

1. Cut points: cfpm's db.conninfo points at pgproxy.py, which cuts the next
   INSERT (then the next read) exchange at each point: before, at the type
   byte of, halfway through and after each of BindComplete,
   RowDescription, DataRow and CommandComplete, with the client's Sync held
   back so the server cannot commit; a synthetic ErrorResponse after
   CommandComplete; the Sync forwarded and the stream cut before
   ReadyForQuery; a WARNING (and, as a control, a NOTICE) before it; plain
   pass-through. Each POST carries a unique marker, looked up directly in
   PostgreSQL: 201 if and only if the row exists, never 500; the worker
   reconnects and the next request succeeds. Reads answer 503, never a 200
   from a partial exchange.
2. Synchronous replication for real: synchronous_standby_names names a
   standby that never comes; an operator cancels the wait
   (pg_cancel_backend): the server commits locally and warns. The answer
   is 503, not 201. Left alone, the wait is given up at db.timeout: 503.
3. Crash loop: 16 writers through nginx while PostgreSQL is restarted with
   pg_ctl -m immediate (CFPM_CRASHLOOP_ROUNDS times, default 4, over
   CFPM_CRASHLOOP_SECONDS, default 40): no acknowledged id missing, no
   marker stored twice, no row for a request answered with an HTTP error
   other than 503 (rows for 503s and dropped requests are reported), no
   500.
4. Logged once: PostgreSQL stopped for several seconds under mixed load.
   The master logs "database unavailable" and "database back after ...";
   each worker a few lines; hundreds of 503s write no line each.

CFPM_COMMIT_ONLY=proxy,cuts,syncrep,crashloop,outagelog runs a subset.
"""

import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
import pgproxy  # noqa: E402
from cfpmtest import seeded_row  # noqa: E402
from clientload import DROPPED, Mixed, Writers, held_requests, \
    tally  # noqa: E402

POOL = 3
CUT_POOL = 2
READ_ID = 5
KIND = "commit-%d" % os.getpid()
ROUNDS = int(os.environ.get("CFPM_CRASHLOOP_ROUNDS") or 4)
SECONDS = float(os.environ.get("CFPM_CRASHLOOP_SECONDS") or 40)
SYNC_DB_TIMEOUT_S = 2    # db.timeout while a commit waits for no standby
OUTAGE_MIN_S = 5.0      # PostgreSQL stays down at least this long ...
OUTAGE_503S = 300       # ... and until this many 503s were answered
OUTAGE_MAX_S = 20.0     # ... or this long
LINES_PER_WORKER = 3    # database lines a worker may write for an outage
SYNC_WARNING = "canceling wait for synchronous replication due to user " \
    "request"


# ---------------------------------------------------------------------------
# Helpers

def rows_for(st, marker):
    """Rows holding marker, counted in PostgreSQL itself (not through the
    proxy)."""
    return int(st.pg.psql("SELECT count(*) FROM events WHERE "
                          "payload->>'marker' = '%s'" % marker)[0][0])


def post_marker(st, marker, timeout=10):
    body = json.dumps({"kind": KIND, "payload": {"marker": marker}})
    return st.post("/events", body, st.tokens["valid"], timeout=timeout)


def log_since(c, mark):
    return ct.log_text(c.log)[mark:].splitlines()


def start_proxy(st, tcp=False):
    upstream = os.path.join(st.pg.sockdir, ".s.PGSQL.%d" % st.pg.port)
    if tcp:
        return pgproxy.PgProxy(upstream, tcp_port=ct.free_port()).start()
    d = os.path.join(st.dir, "proxy")
    os.makedirs(d, exist_ok=True)
    return pgproxy.PgProxy(upstream, sockdir=d, port=ct.free_port()).start()


# ---------------------------------------------------------------------------
# 0. The proxy itself

def check_proxy(st):
    tap = st.tap
    tap.diag("-- 0. pgproxy: TCP listener, SSLRequest, plain forwarding")
    px = start_proxy(st, tcp=True)
    try:
        rc, out, err = ct.run([os.path.join(ct.PG_BINDIR, "psql"), "-X",
                               "-A", "-t", "-d", px.conninfo() +
                               " sslmode=prefer", "-c",
                               "SELECT count(*) FROM events WHERE id <= 7"],
                              timeout=30)
        tap.ok(rc == 0 and out.strip() == "7" and px.connections == 1,
               "pgproxy: psql through the TCP listener (SSLRequest "
               "answered, then the startup packet) reads the table",
               "rc %d, out %r, err %r, connections %d" % (
                   rc, out, err, px.connections))
        plan = px.arm("nothing_by_this_name", "cut",
                      ("after", "CommandComplete"))
        rc, out, _ = ct.run([os.path.join(ct.PG_BINDIR, "psql"), "-X",
                             "-A", "-t", "-d", px.conninfo(), "-c",
                             "SELECT 1"], timeout=30)
        tap.ok(rc == 0 and out.strip() == "1" and not plan.fired.is_set(),
               "pgproxy: a plan for another statement leaves a simple "
               "query alone")
    finally:
        px.stop()


# ---------------------------------------------------------------------------
# 1. Cut points

# (mode, cut point, plan options, expectation). Expectations: "unknown"
# is a 503 whose row may exist (the server committed, the client cannot
# know); "refused" a 503 with no row; "ok" a 2xx with the row.
CASES = [("cut", p, {}, "refused") for p in pgproxy.CUT_POINTS] + [
    ("error", None, {"sqlstate": "XX000"}, "refused"),
    ("error", None, {"sqlstate": "22P02"}, "refused"),
    ("synccut", None, {}, "unknown"),
    ("notice", None, {"severity": "WARNING", "sqlstate": "01000",
                      "text": SYNC_WARNING}, "unknown"),
    ("notice", None, {"severity": "NOTICE", "sqlstate": "00000",
                      "text": "just a notice"}, "ok"),
    ("pass", None, {}, "ok"),
]


def case_name(mode, point, kw):
    if mode == "cut":
        return "cut " + pgproxy.cut_name(point)
    if mode == "error":
        return "ErrorResponse %s after CommandComplete" % kw["sqlstate"]
    if mode == "notice":
        return "%s before ReadyForQuery" % kw["severity"]
    if mode == "synccut":
        return "Sync forwarded, cut before ReadyForQuery"
    return "pass-through"


def run_case(st, px, write, i, mode, point, kw):
    """One armed request; returns (status, body, row present or None,
    plan, next request's status, reconnected)."""
    conns = px.connections
    tok = st.tokens["valid"]
    if write:
        plan = px.arm("insert_event", mode, point, **kw)
        marker = "cut-%d-%d" % (os.getpid(), i)
        r = post_marker(st, marker)
        present = rows_for(st, marker)
        nxt = post_marker(st, marker + "-next")
        nxt_ok = nxt.status == 201 and rows_for(st, marker + "-next") == 1
    else:
        plan = px.arm("read_event", mode, point, **kw)
        r = st.get("/events/%d" % READ_ID, tok)
        present = None
        nxt = st.get("/events/%d" % (READ_ID + 1), tok)
        nxt_ok = nxt.status == 200 and nxt.json() == seeded_row(READ_ID + 1)
    px.disarm()
    dropped = mode not in ("pass", "notice")
    reconnected = not dropped or bool(
        ct.wait_for(lambda: px.connections > conns, 5))
    return r, present, plan, nxt_ok, reconnected


def check_cuts(st):
    tap = st.tap
    tap.diag("-- 1. cut points: cfpm (pool %d) -> pgproxy -> PostgreSQL" %
             CUT_POOL)
    px = start_proxy(st)
    c = st.start_cfpm({"pm.max_children": CUT_POOL,
                       "db.conninfo": px.conninfo()})
    before = c.workers()
    table = []
    try:
        for write in (True, False):
            what = "POST" if write else "GET"
            for i, (mode, point, kw, want) in enumerate(CASES):
                name = case_name(mode, point, kw)
                r, present, plan, nxt_ok, reconn = run_case(
                    st, px, write, i, mode, point, kw)
                ok_status = 201 if write else 200
                if want == "ok":
                    good = r.status == ok_status and (
                        present == 1 if write else
                        r.json() == seeded_row(READ_ID))
                elif want == "refused":
                    good = r.status == 503 and present in (0, None)
                else:
                    good = r.status == 503 and present in (0, 1, None)
                if write and r.status == 201 and present != 1:
                    good = False    # never a 201 without its row
                # The case is the one named: the server got the Sync only
                # where it should, and did not fail the statement itself.
                staged = plan.fired.is_set() and not plan.failed and \
                    not plan.skipped and plan.sync_forwarded == (
                        mode not in ("cut", "error")) and \
                    plan.closed == (mode in ("cut", "error", "synccut"))
                table.append((what, name, r.status, present))
                tap.ok(staged and good and nxt_ok and reconn,
                       "%s, %s: %d%s; the next request succeeds" % (
                           what, name, r.status,
                           "" if present is None else
                           ", row %s" % ("present" if present else
                                         "absent")),
                       "fired %s, forwarded %r, partial %r, skipped %s, "
                       "failed %s, Sync forwarded %s, closed %s" % (
                           plan.fired.is_set(), plan.forwarded,
                           plan.partial, plan.skipped, plan.failed,
                           plan.sync_forwarded, plan.closed),
                       "expected %s, got %r, row count %r" % (
                           want, r, present),
                       "next request ok %s, reconnected %s" % (
                           nxt_ok, reconn))
        tap.diag("%-4s %-46s %-6s %s" % ("", "cut point", "status",
                                         "row present"))
        for what, name, status, present in table:
            tap.diag("%-4s %-46s %-6s %s" % (
                what, name, status, "-" if present is None else
                ("yes (allowed: unknown outcome)" if present and
                 status == 503 else ("yes" if present else "no"))))
        tap.ok(not [x for x in table if x[2] == 500],
               "cut points: no 500 anywhere (%d requests)" % len(table))
        tap.ok(not [x for x in table if x[0] == "POST" and x[2] == 201 and
                    x[3] != 1],
               "cut points: no 201 without its row")
        # Every worker is back, with both statements prepared: hold one
        # read and one write per worker in the database at once.
        waiting, res = held_requests(
            st, [lambda: post_marker(st, "held", 20)
                 for _ in range(CUT_POOL)])
        tap.ok(waiting and all(x is not None and x.status == 201
                               for x in res),
               "cut points: afterwards %d writes held at once (one per "
               "worker) are all 201" % CUT_POOL,
               "waiting %r, got %r" % (waiting, res))
        tap.ok(c.workers() == before and not ct.crash_lines(c),
               "cut points: no worker exited", *ct.crash_lines(c))
    finally:
        st.stop_cfpm(c)
        px.stop()


# ---------------------------------------------------------------------------
# 2. A real cancelled synchronous-replication wait

def syncrep_backend(st):
    """The pid of a cfpm backend waiting for a synchronous standby."""
    rows = st.pg.psql("SELECT pid FROM pg_stat_activity WHERE "
                      "application_name = 'cfpm' AND wait_event = 'SyncRep'")
    return int(rows[0][0]) if rows else None


def check_sync_rep(st):
    tap = st.tap
    tap.diag("-- 2. synchronous replication: the wait cancelled by an "
             "operator, then left to db.timeout; the commit only local")
    c = st.start_cfpm({"pm.max_children": CUT_POOL,
                       "db.timeout": SYNC_DB_TIMEOUT_S})
    before = c.workers()
    mark = len(ct.log_text(c.log))
    st.pg.psql("ALTER SYSTEM SET synchronous_standby_names = "
               "'cfpm_no_such_standby'")
    st.pg.psql("SELECT pg_reload_conf()")
    got = {}
    try:
        time.sleep(0.3)
        marker = "syncrep-%d" % os.getpid()
        t = threading.Thread(target=lambda: got.update(
            r=post_marker(st, marker, timeout=20)))
        t.start()
        pid = ct.wait_for(lambda: syncrep_backend(st), 10, 0.05)
        if pid:
            st.pg.psql("SELECT pg_cancel_backend(%d)" % pid)
        t.join(20)
        r = got.get("r")
        # Left alone, the wait outlasts db.timeout: the link is dropped.
        slow = "syncrep-slow-%d" % os.getpid()
        t0 = time.monotonic()
        r_slow = post_marker(st, slow, timeout=20)
        took = time.monotonic() - t0
    finally:
        st.pg.psql("ALTER SYSTEM RESET synchronous_standby_names")
        st.pg.psql("SELECT pg_reload_conf()")
    present = rows_for(st, marker)
    warned = any(SYNC_WARNING in l for l in log_since(c, mark))
    tap.diag("sync rep: POST -> %s, row %s%s" % (
        r and r.status, "present (committed locally: the allowed unknown "
        "outcome)" if present else "absent",
        "" if warned else ", no WARNING seen in the log"))
    tap.ok(pid and warned, "sync rep: the server warned that the wait was "
           "cancelled (the scenario happened)")
    tap.ok(r is not None and r.status == 503 and
           r.json() == {"error": "unavailable"},
           "sync rep: a commit that may not be replicated is 503, not 201",
           "got %r, row count %d" % (r, present))
    tap.ok(r_slow.status == 503 and took < SYNC_DB_TIMEOUT_S + 1.5,
           "sync rep: a commit waiting for the standby past db.timeout is "
           "503 at the deadline (%.2f s)" % took, "got %r" % r_slow)
    time.sleep(0.3)
    r2 = post_marker(st, marker + "-after")
    tap.ok(r2.status == 201 and rows_for(st, marker + "-after") == 1,
           "sync rep: with the standby requirement gone the next write is "
           "201", "got %r" % r2)
    tap.ok(c.workers() == before and not ct.crash_lines(c),
           "sync rep: no worker was killed", *ct.crash_lines(c))
    st.stop_cfpm(c)


# ---------------------------------------------------------------------------
# 3. Crash loop

def audit(st, w, kind):
    """What the writers were told against what the table holds."""
    outcomes = dict(w.outcomes)
    rows = st.pg.psql("SELECT id, payload->>'c', payload->>'n' FROM events "
                      "WHERE kind = '%s'" % kind, timeout=60)
    by_marker, by_id = {}, {}
    for rid, cc, nn in rows:
        m = (int(cc), int(nn))
        by_marker.setdefault(m, []).append(int(rid))
        by_id[int(rid)] = m
    acked = {m: rid for m, (out, rid) in outcomes.items() if out == 201}
    a = {"requests": len(outcomes), "acknowledged": len(acked)}
    a["missing"] = [(m, rid) for m, rid in acked.items()
                    if by_id.get(rid) != m]
    a["duplicates"] = {m: ids for m, ids in by_marker.items()
                       if len(ids) > 1}
    a["503"] = {m for m, (out, _) in outcomes.items() if out == 503}
    a["dropped"] = {m for m, (out, _) in outcomes.items()
                    if out in DROPPED or out in ("timeout",
                                                 "connection error")}
    a["errors"] = {m: out for m, (out, _) in outcomes.items()
                   if out != 201 and m not in a["503"] and
                   m not in a["dropped"]}
    a["rows_503"] = [m for m in a["503"] if m in by_marker]
    a["rows_dropped"] = [m for m in a["dropped"] if m in by_marker]
    a["ghosts"] = [m for m in a["errors"] if m in by_marker]
    a["strangers"] = [m for m in by_marker if m not in outcomes]
    a["statuses"] = tally(o for o, _ in outcomes.values())
    return a


def check_crash_loop(st):
    tap = st.tap
    tap.diag("-- 3. crash loop: 16 writers, PostgreSQL restarted with "
             "pg_ctl -m immediate %d times in %.0f s" % (ROUNDS, SECONDS))
    c = st.start_cfpm({"pm.max_children": POOL})
    before = c.workers()
    kind = KIND + "-loop"
    t0 = time.monotonic()
    w = Writers(st, st.tokens["valid"], 16, SECONDS, kind)
    restarts = []
    for k in range(ROUNDS):
        time.sleep(max(0, t0 + (k + 1) * SECONDS / (ROUNDS + 1) -
                       time.monotonic()))
        t_stop = time.monotonic()
        st.pg.stop("immediate")
        st.pg.start()
        restarts.append((t_stop - t0, time.monotonic() - t_stop))
    w.join()
    t_last = t0 + restarts[-1][0] + restarts[-1][1] if restarts else t0
    after = [t for t in w.acked_at if t > t_last]
    a = audit(st, w, kind)
    tap.diag("crash loop: restarts at %s" % ", ".join(
        "+%.1fs (down %.1fs)" % r for r in restarts))
    tap.diag("crash loop: %d requests, statuses %r" % (a["requests"],
                                                      a["statuses"]))
    tap.diag("crash loop figures: acknowledged %d, missing %d, stored "
             "twice %d, rows for other HTTP errors %d" % (
                 a["acknowledged"], len(a["missing"]),
                 len(a["duplicates"]), len(a["ghosts"])))
    tap.diag("crash loop figures (allowed, unknown outcome): 503 answers "
             "%d, of which %d rows exist; dropped %d, of which %d rows "
             "exist" % (len(a["503"]), len(a["rows_503"]),
                        len(a["dropped"]), len(a["rows_dropped"])))
    tap.ok(all(not t.is_alive() for t in w.threads),
           "crash loop: every writer finished")
    tap.is_(len(restarts), ROUNDS, "crash loop: PostgreSQL crashed and "
            "came back %d times under the writers" % ROUNDS)
    tap.ok(a["acknowledged"] > 16, "crash loop: writes acknowledged (%d)" %
           a["acknowledged"])
    tap.ok(after, "crash loop: writes acknowledged after the last restart "
           "(%d)" % len(after))
    tap.ok(not a["missing"], "crash loop: every id answered 201 holds its "
           "request's row (missing = 0)", "missing %r" % a["missing"][:10])
    tap.ok(not a["duplicates"], "crash loop: no marker stored twice",
           "duplicates %r" % list(a["duplicates"].items())[:10])
    tap.ok(not a["ghosts"], "crash loop: no row for a request answered "
           "with an HTTP error other than 503",
           "rows for %r" % [(m, a["errors"][m]) for m in a["ghosts"]][:10])
    tap.ok(not a["strangers"], "crash loop: no row the writers never sent",
           "strangers %r" % a["strangers"][:10])
    tap.ok(not a["errors"], "crash loop: every answer is 201, 503 or a "
           "dropped request (no 500, no 4xx)",
           "others %r" % tally(a["errors"].values()))
    tap.ok(c.workers() == before and not ct.crash_lines(c),
           "crash loop: the same workers served throughout (no crash)",
           "before %r, after %r" % (before, c.workers()), *ct.crash_lines(c))
    st.stop_cfpm(c)


# ---------------------------------------------------------------------------
# 4. An outage logged once

MASTER_DOWN = re.compile(r"master \d+: database unavailable: (.*)")
MASTER_BACK = re.compile(r"master \d+: database back after ([0-9.]+) s, "
                         r"(\d+) requests answered 503")
WORKER = re.compile(r"worker (\d+): ")


def check_outage_log(st):
    tap = st.tap
    tap.diag("-- 4. PostgreSQL stopped under mixed load: logged once")
    c = st.start_cfpm({"pm.max_children": POOL})
    before = c.workers()
    tok = st.tokens["valid"]
    mark = len(ct.log_text(c.log))
    load = Mixed(st, tok)
    time.sleep(1.0)

    def n503():
        with load.lock:
            return sum(1 for x in load.log if x[1] == 503)
    t_stop = time.monotonic()
    st.pg.stop("fast")
    ct.wait_for(lambda: time.monotonic() - t_stop >= OUTAGE_MIN_S and
                n503() >= OUTAGE_503S, OUTAGE_MAX_S, 0.1)
    st.pg.start()
    t_up = time.monotonic()
    back = ct.wait_for(lambda: [l for l in log_since(c, mark)
                                if MASTER_BACK.search(l)], 15, 0.2)
    log = load.stop()
    answered = sum(1 for x in log if x[1] == 503)
    tap.diag("outage: down %.1fs, %d requests, statuses %r" % (
        t_up - t_stop, len(log), tally(x[1] for x in log)))
    lines = [l for l in log_since(c, mark) if "database" in l]
    for l in lines:
        tap.diag("  " + l)
    down = [l for l in lines if MASTER_DOWN.search(l)]
    ups = [MASTER_BACK.search(l) for l in lines if MASTER_BACK.search(l)]
    tap.cmp_ok(answered, ">=", 100, "outage: hundreds of requests answered "
               "503 while PostgreSQL was down (%d)" % answered)
    tap.ok(len(down) == 1 and back and len(ups) == 1,
           "outage: the master logs \"database unavailable\" once and "
           "\"database back after ...\" once",
           "unavailable lines %d, back lines %d" % (len(down), len(ups)))
    if ups:
        said = int(ups[0].group(2))
        tap.ok(abs(said - answered) <= max(5, answered // 20),
               "outage: the master's count of 503s (%d) matches what the "
               "clients got (%d)" % (said, answered))
    per_worker = tally(WORKER.search(l).group(1) for l in lines
                           if WORKER.search(l))
    tap.cmp_ok(len(lines), "<=", LINES_PER_WORKER * POOL + 3,
               "outage: %d database lines in the log for %d 503s (at most "
               "%d per worker + 3)" % (len(lines), answered,
                                       LINES_PER_WORKER))
    tap.ok(per_worker and max(per_worker.values()) <= LINES_PER_WORKER,
           "outage: each worker logged its own loss and return, at most "
           "%d lines (%r)" % (LINES_PER_WORKER, per_worker))
    tap.ok(not [x for x in log if x[1] == 500], "outage: no 500")
    ok = ct.wait_for(lambda: all(
        p.get("database") == "ok" for p in
        (st.status_json("full&json") or {}).get("processes", [{}])), 5)
    tap.ok(ok, "outage: every worker's database state is ok again")
    tap.ok(c.workers() == before and not ct.crash_lines(c),
           "outage: the same workers served throughout (no crash)",
           "before %r, after %r" % (before, c.workers()), *ct.crash_lines(c))
    st.stop_cfpm(c)


PARTS = [("proxy", check_proxy), ("cuts", check_cuts),
         ("syncrep", check_sync_rep), ("crashloop", check_crash_loop),
         ("outagelog", check_outage_log)]


def main(tap):
    only = [p for p in os.environ.get("CFPM_COMMIT_ONLY", "").split(",")
            if p]
    with ct.Stack(tap) as st:
        st.setup()
        for name, fn in PARTS:
            if only and name not in only:
                continue
            t0 = time.monotonic()
            fn(st)      # an exception ends the run: the Stack reports it
            tap.diag("%s took %.1fs" % (name, time.monotonic() - t0))


if __name__ == "__main__":
    ct.main(main)
