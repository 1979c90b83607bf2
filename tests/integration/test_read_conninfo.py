#!/usr/bin/env python3
"""
test_read_conninfo.py: db.read_conninfo sends reads to a standby, and a
client never sees its own acknowledged write as 404.

A real streaming standby (pg_basebackup -R of the test cluster) serves
cfpm's reads; db.conninfo stays on the primary.
1. Reads go to the standby: every worker holds a connection there, and a
   row the primary no longer has (deleted while the standby's replay is
   paused) is still answered 200 from the standby.
2. Read-your-writes: with replay paused, a POST's new id is missing on
   the standby (checked there directly), yet GET answers 200 with the
   row: the primary decides what the standby cannot find. An id nobody
   wrote is 404 (both agree).
3. The standby stops: GETs keep answering 200 from the primary, no 503.
4. It comes back: workers reconnect their read connection to it.
The INSERT is never prepared on the standby (no prepare error logged).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from harness.pg import Cluster  # noqa: E402

POOL = 2
SEED = 50
ABSENT_ID = 999999999
REPLAY_WAIT_S = 15.0     # a commit shows on the standby within this
RECONNECT_WAIT_S = 15.0  # workers reconnect to a restarted standby
GETS_WHILE_DOWN = 20


def has_row(pg, event_id):
    return pg.psql("SELECT count(*) FROM events WHERE id = %d" %
                   event_id)[0][0] == "1"


def cfpm_links(pg):
    """cfpm's connections to pg (application_name cfpm)."""
    return int(pg.psql("SELECT count(*) FROM pg_stat_activity WHERE "
                       "application_name = 'cfpm'", dbname="postgres")[0][0])


def post_id(st, tok):
    r = st.post("/events", ct.BENCH_BODY, tok)
    j = r.json() or {}
    return r.status, j.get("id")


def check_reads_on_standby(st, sb, tok):
    tap = st.tap
    tap.ok(ct.wait_for(lambda: cfpm_links(sb) >= POOL, RECONNECT_WAIT_S),
           "every worker holds a read connection on the standby",
           "standby sees %d" % cfpm_links(sb))
    status, gone = post_id(st, tok)
    tap.is_(status, 201, "POST before the replay pause: 201")
    if gone is None:
        return
    tap.ok(ct.wait_for(lambda: has_row(sb, gone), REPLAY_WAIT_S),
           "the new row reached the standby")
    sb.psql("SELECT pg_wal_replay_pause()")
    st.pg.psql("DELETE FROM events WHERE id = %d" % gone)
    r = st.get("/events/%d" % gone, tok)
    tap.is_(r.status, 200, "a row deleted on the primary but not yet on "
            "the paused standby is answered from the standby (200)")


def check_read_your_writes(st, sb, tok):
    tap = st.tap
    status, new = post_id(st, tok)
    tap.is_(status, 201, "POST with the standby's replay paused: 201")
    if new is None:
        return
    tap.ok(not has_row(sb, new), "the standby does not have the new row")
    r = st.get("/events/%d" % new, tok)
    j = r.json() or {}
    tap.ok(r.status == 200 and j.get("id") == new,
           "GET of one's own acknowledged write: 200 with the row, though "
           "the standby lacks it", "got %d %r" % (r.status, r.body))
    r = st.get("/events/%d" % ABSENT_ID, tok)
    tap.is_(r.status, 404, "an id nobody wrote: 404")
    sb.psql("SELECT pg_wal_replay_resume()")
    tap.ok(ct.wait_for(lambda: has_row(sb, new), REPLAY_WAIT_S),
           "replay resumed: the standby catches up")
    return new


def check_standby_down(st, sb, tok, known):
    tap = st.tap
    sb.stop()
    codes = [st.get("/events/%d" % known, tok).status
             for _ in range(GETS_WHILE_DOWN)]
    tap.ok(all(c == 200 for c in codes), "standby stopped: %d GETs all "
           "200 from the primary" % GETS_WHILE_DOWN, "codes %r" % codes)
    status, _ = post_id(st, tok)
    tap.is_(status, 201, "standby stopped: POST still 201")
    sb.start()

    def back():
        st.get("/events/%d" % known, tok)
        return cfpm_links(sb) >= 1
    tap.ok(ct.wait_for(back, RECONNECT_WAIT_S, 0.3),
           "standby back: read connections return to it")


def body(tap):
    with ct.Stack(tap).setup(rows=SEED) as st:
        sb = Cluster(os.path.join(st.dir, "standby"))
        sb.init_standby(st.pg)
        sb.start()
        st.logs.append(sb.log)
        st.start_cfpm({"pm.max_children": POOL,
                       "db.read_conninfo": sb.conninfo()})
        tok = st.tokens["valid"]
        check_reads_on_standby(st, sb, tok)
        known = check_read_your_writes(st, sb, tok)
        if known is not None:
            check_standby_down(st, sb, tok, known)
        with open(st.cfpm.log) as f:
            log = f.read()
        tap.ok("prepare:" not in log, "no statement failed to prepare on "
               "the standby", log[-2000:])


if __name__ == "__main__":
    ct.main(body)
