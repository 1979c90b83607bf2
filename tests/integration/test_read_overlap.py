#!/usr/bin/env python3
"""
test_read_overlap.py: GET /events/{id} sends its SELECT before the
token's signature is checked, and collects it after (issue 23, item 4).
What must hold, against a real PostgreSQL (pg_stat_statements counts the
statements each server ran) and a real nginx, one worker:

1. Forged signatures (another key under our kid; a valid token's
   signature swapped for another's; one cut short), the claims otherwise
   good, for a row of the token's subject and for another subject's row:
   the reply is the 401 of any invalid token, byte for byte (FastCGI, no
   web server in between), never a row; each costs exactly one SELECT
   (what the docs promise, no more); the worker's connection is the same
   backend throughout (the result was read and discarded, the link kept),
   and the next valid GET and POST are right. The same with
   auth.errors = compat, where a scope failure is a 401 too.
2. Tokens that fail a cheaper check (expired, not yet valid, no read
   scope, wrong issuer, wrong audience, unknown kid, alg none, bad
   structure), forged or not, and a bad id with a good token: their
   replies as before, and not one statement reaches the server.
3. A frozen server during the overlapped read: a forged and a valid GET
   are each answered (401, 503) within db.timeout + 1 s; after the thaw
   the worker serves again.
4. With db.read_conninfo on a standby whose replay is paused: a valid GET
   of a row only the primary has still falls back to the primary (200
   with the row); a forged GET of it runs once on the standby and never
   on the primary (a discarded miss is not retried).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from harness.pg import Cluster  # noqa: E402

SEED = 50
DB_TIMEOUT_S = 2
REQUEST_LIMIT_S = DB_TIMEOUT_S + 1.0
HEALTH_WAIT_S = 20
REPLAY_WAIT_S = 15.0
RECONNECT_WAIT_S = 15.0
OTHER_SUBJECT = "someone-else"
READ_SQL = "SELECT id, subject, kind, payload, created_at FROM events%"
PRELOAD = {"shared_preload_libraries": "pg_stat_statements"}


def reads_run(pg):
    """How many times pg ran the read statement (pg_stat_statements)."""
    rows = pg.psql("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                   "WHERE query LIKE '%s'" % READ_SQL)
    return int(rows[0][0])


def backends(pg):
    """The pids of cfpm's connections to pg."""
    return sorted(r[0] for r in pg.psql(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'cfpm'",
        dbname="postgres"))


def swap_signature(tok, other):
    """tok with other's signature: structure and claims intact."""
    return tok.rsplit(".", 1)[0] + "." + other.rsplit(".", 1)[1]


def unsigned(header, claims):
    """A token with the given header and claims and an empty-looking
    but well-formed signature segment."""
    return "%s.%s.%s" % (ct.b64url(json.dumps(header).encode()),
                         ct.b64url(json.dumps(claims).encode()),
                         ct.b64url(b"\x00" * 256))


def fcgi_get(st, path, tok):
    """GET path straight to cfpm: (status, headers, body), the reply as
    cfpm wrote it."""
    r = st.fcgi("GET", path, headers={"Authorization": "Bearer " + tok})
    return r.status, r.header_list, r.body


def forged_tokens(st, other_keys):
    """name -> a token whose every check but the signature passes."""
    valid = st.tokens["valid"]
    return {
        "another key, same kid": st.tokens["foreign"],
        "another key, another subject": other_keys.mint(sub=OTHER_SUBJECT),
        "a valid token's signature swapped for another's":
            swap_signature(valid, st.tokens["readonly"]),
        # 340 of its 342 characters: 255 bytes, still strict base64url.
        "the signature cut short": valid[:-2],
        "read scope only, another key": other_keys.mint(scope="events:read"),
    }


def cheap_failures(st, other_keys):
    """name -> a token that fails a check before the signature."""
    now = int(time.time())
    good = json.loads(ct.claims_json(now))
    return {
        "expired": st.tokens["expired"],
        "not yet valid": st.tokens["notyet"],
        "no read scope": st.tokens["writeonly"],
        "expired, another key": other_keys.mint(exp=-3600, nbf=-7200),
        "no read scope, another key": other_keys.mint(scope="events:write"),
        "wrong issuer": st.keys.mint(iss="https://elsewhere"),
        "wrong audience": st.keys.mint(aud="another-api"),
        "unknown kid": other_keys.mint(kid="no-such-kid"),
        "alg none": unsigned({"alg": "none", "kid": ct.KID}, good),
        "alg HS256": unsigned({"alg": "HS256", "kid": ct.KID}, good),
        "two segments": st.tokens["valid"].rsplit(".", 1)[0],
        "not base64url": st.tokens["valid"].replace(".", ".*", 1),
    }


def check_forged(st, pg, other_keys, own_id, other_id):
    """Case 1."""
    tap = st.tap
    reference = fcgi_get(st, "/events/%d" % own_id, "not.a.token")
    tap.is_(reference[0], 401, "an invalid token's reply: 401")
    links = backends(pg)
    for name, tok in forged_tokens(st, other_keys).items():
        for row in (own_id, other_id):
            before = reads_run(pg)
            got = fcgi_get(st, "/events/%d" % row, tok)
            tap.ok(got == reference, "forged (%s), row %d: the invalid "
                   "token's reply, byte for byte" % (name, row),
                   "got %r" % (got,))
            tap.is_(reads_run(pg) - before, 1, "forged (%s), row %d: one "
                    "SELECT, no more" % (name, row))
            r = st.get("/events/%d" % row, tok)
            tap.ok(r.status == 401 and b"subject" not in r.body,
                   "forged (%s), row %d, through nginx: 401, no row" %
                   (name, row), "got %d %r" % (r.status, r.body))
    tap.is_(backends(pg), links, "the worker kept its connection (same "
            "backend) through every forged read")
    valid = st.tokens["valid"]
    r = st.get("/events/%d" % own_id, valid)
    j = r.json() or {}
    tap.ok(r.status == 200 and j.get("id") == own_id and
           j.get("subject") == ct.SUBJECT, "then a valid GET: 200 with the "
           "row", "got %d %r" % (r.status, r.body))
    tap.is_(st.get("/events/%d" % other_id, valid).status, 404,
            "then a valid GET of another subject's row: 404")
    r = st.post("/events", ct.BENCH_BODY, valid)
    new = (r.json() or {}).get("id") if r.status == 201 else None
    tap.ok(new is not None, "then a POST: 201", "got %d" % r.status)
    r = st.get("/events/%d" % (new or 0), valid)
    tap.ok(r.status == 200 and (r.json() or {}).get("id") == new,
           "and its row reads back", "got %d %r" % (r.status, r.body))


def check_compat(st, pg, other_keys, own_id):
    """Case 1 under auth.errors = compat: every forged token, and a
    genuine one without the read scope, gets the one compat 401."""
    tap = st.tap
    c = st.start_cfpm({"pm.max_children": 1, "auth.errors": "compat"})
    path = "/events/%d" % own_id
    reference = fcgi_get(st, path, "not.a.token")
    tap.ok(reference[0] == 401 and b"invalid_token" in reference[2],
           "compat: an invalid token's reply: 401 invalid_token")
    tokens = dict(forged_tokens(st, other_keys),
                  **{"no read scope (genuine)": st.tokens["writeonly"]})
    for name, tok in tokens.items():
        before = reads_run(pg)
        got = fcgi_get(st, path, tok)
        tap.ok(got == reference, "compat, %s: the same reply, byte for "
               "byte" % name, "got %r" % (got,))
        sent = 0 if "genuine" in name else 1
        tap.is_(reads_run(pg) - before, sent, "compat, %s: %d SELECT" %
                (name, sent))
    tap.is_(st.get(path, st.tokens["valid"]).status, 200,
            "compat: then a valid GET 200")
    st.stop_cfpm(c)


def check_cheap(st, pg, other_keys, own_id):
    """Case 2."""
    tap = st.tap
    valid = st.tokens["valid"]
    for name, tok in cheap_failures(st, other_keys).items():
        before = reads_run(pg)
        r = st.get("/events/%d" % own_id, tok)
        want = 403 if name == "no read scope" else 401
        tap.ok(r.status == want and b"subject" not in r.body,
               "%s: %d as before" % (name, want),
               "got %d %r" % (r.status, r.body))
        tap.is_(reads_run(pg) - before, 0, "%s: nothing sent to the "
                "database" % name)
    for path in ("/events/abc", "/events/", "/events/99999999999999999999"):
        before = reads_run(pg)
        tap.is_(st.get(path, valid).status, 404, "%s, valid token: 404" %
                path)
        tap.is_(reads_run(pg) - before, 0, "%s: nothing sent" % path)
        r = st.get(path, st.tokens["foreign"])
        tap.is_(r.status, 401, "%s, forged token: 401 (auth first)" % path)
        tap.is_(reads_run(pg) - before, 0, "%s, forged: nothing sent" %
                path)
    before = reads_run(pg)
    tap.is_(st.get("/events/%d" % own_id, valid).status, 200,
            "a valid GET: 200")
    tap.is_(reads_run(pg) - before, 1, "a valid GET: one SELECT (the "
            "counter counts)")


def wait_health(st):
    return ct.wait_for(lambda: st.get("/health").status == 200,
                       HEALTH_WAIT_S, 0.1)


def timed_get(st, path, tok):
    t = time.monotonic()
    r = st.get(path, tok, timeout=30)
    return r, time.monotonic() - t


def check_frozen(st, own_id):
    """Case 3."""
    tap = st.tap
    path = "/events/%d" % own_id
    for name, tok, want in (("forged", st.tokens["foreign"], 401),
                            ("valid", st.tokens["valid"], 503)):
        tap.ok(wait_health(st), "%s GET, frozen: the worker is connected "
               "first" % name)
        st.pg.freeze()
        try:
            r, took = timed_get(st, path, tok)
        finally:
            st.pg.thaw()
        tap.ok(r.status == want and took <= REQUEST_LIMIT_S,
               "%s GET while the server is frozen: %d within %.1f s" %
               (name, want, REQUEST_LIMIT_S),
               "got %d after %.2f s" % (r.status, took))
        tap.ok(b"subject" not in r.body, "%s GET while frozen: no row" %
               name)
    tap.ok(wait_health(st), "thawed: /health 200 again")
    tap.is_(st.get(path, st.tokens["valid"]).status, 200,
            "thawed: a valid GET 200")


def has_row(pg, event_id):
    return pg.psql("SELECT count(*) FROM events WHERE id = %d" %
                   event_id)[0][0] == "1"


def check_standby(st, forger):
    """Case 4: cfpm again, with a standby for reads."""
    tap = st.tap
    sb = Cluster(os.path.join(st.dir, "standby"), settings=PRELOAD)
    sb.init_standby(st.pg)
    sb.start()
    st.logs.append(sb.log)
    c = st.start_cfpm({"pm.max_children": 1,
                       "db.read_conninfo": sb.conninfo()})
    tap.ok(ct.wait_for(lambda: len(backends(sb)) >= 1, RECONNECT_WAIT_S),
           "standby: the worker holds a read connection there")
    valid = st.tokens["valid"]
    r = st.post("/events", ct.BENCH_BODY, valid)
    new = (r.json() or {}).get("id") if r.status == 201 else None
    tap.ok(new is not None, "standby: a POST before the pause: 201")
    tap.ok(new is not None and ct.wait_for(lambda: has_row(sb, new),
                                           REPLAY_WAIT_S),
           "standby: the row replayed")
    sb.psql("SELECT pg_wal_replay_pause()")
    r = st.post("/events", ct.BENCH_BODY, valid)
    fresh = (r.json() or {}).get("id") if r.status == 201 else None
    tap.ok(fresh is not None and not has_row(sb, fresh),
           "standby paused: a new row the standby lacks")
    for name, tok in (("forged", st.tokens["foreign"]),
                      ("forged, another subject",
                       forger.mint(sub=OTHER_SUBJECT))):
        on_sb, on_pri = reads_run(sb), reads_run(st.pg)
        r = st.get("/events/%d" % (fresh or 0), tok)
        tap.ok(r.status == 401 and b"subject" not in r.body,
               "standby: %s GET of the row only the primary has: 401" %
               name, "got %d %r" % (r.status, r.body))
        tap.is_((reads_run(sb) - on_sb, reads_run(st.pg) - on_pri), (1, 0),
                "standby: %s GET ran once on the standby, never on the "
                "primary" % name)
    on_sb, on_pri = reads_run(sb), reads_run(st.pg)
    r = st.get("/events/%d" % (fresh or 0), valid)
    tap.ok(r.status == 200 and (r.json() or {}).get("id") == fresh,
           "standby: a valid GET of it falls back to the primary: 200",
           "got %d %r" % (r.status, r.body))
    tap.is_((reads_run(sb) - on_sb, reads_run(st.pg) - on_pri), (1, 1),
            "standby: the valid GET ran on the standby, then the primary")
    on_sb, on_pri = reads_run(sb), reads_run(st.pg)
    tap.is_(st.get("/events/%d" % new, valid).status, 200,
            "standby: a row it has: 200")
    tap.is_((reads_run(sb) - on_sb, reads_run(st.pg) - on_pri), (1, 0),
            "standby: answered there alone")
    sb.psql("SELECT pg_wal_replay_resume()")
    st.stop_cfpm(c)


def body(tap):
    with ct.Stack(tap) as st:
        st.pg.settings.update(PRELOAD)
        st.setup(rows=SEED)
        st.pg.psql("CREATE EXTENSION pg_stat_statements")
        other = st.pg.psql(
            "INSERT INTO events (subject, kind, payload) VALUES "
            "('%s', 'secret', '{\"x\":1}') RETURNING id" %
            OTHER_SUBJECT)[0][0]
        c = st.start_cfpm({"pm.max_children": 1,
                           "db.timeout": DB_TIMEOUT_S})
        # A second key pair under our kid: what a forger signs with.
        forger = ct.Keys(os.path.join(st.dir, "forger"))
        check_forged(st, st.pg, forger, 1, int(other))
        check_cheap(st, st.pg, forger, 1)
        check_frozen(st, 1)
        st.stop_cfpm(c)
        check_compat(st, st.pg, forger, 1)
        check_standby(st, forger)


if __name__ == "__main__":
    ct.main(body)
