"""
apichecks.py: the HTTP contract of SPEC.md section 1 as checks against a
running stack (a library, not a test): every row of the status table, one
named function per behaviour, run in order by run_api_checks(). Both
test_api.py (cfpm on its own socket) and test_socket_activation.py (cfpm
under systemd-socket-activate) run the whole set, so a listener's origin
cannot change what the API answers.

Each check is f(stack, checker): the stack has cfpm up behind nginx
(st.cfpm, st.http_port) with the harness's tokens (st.tokens) and rows;
the checker (harness.contract.Checker) prints one TAP line per request.
"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from cfpmtest import (BENCH_BODY, BENCH_PAYLOAD, MAX_ID,  # noqa: E402
                      Checker, seeded_row)

TS_RE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"
# The header of a token signed for a claim case.
JWT_HEADER = '{"alg":"RS256","typ":"JWT","kid":"bench-1"}'

def nested_body(depth, kind="deep", array=False):
    """A POST body whose JSON nesting (objects and arrays, the outer object
    counting as 1) is exactly depth."""
    inner = "[]" if array else "{}"
    for _ in range(depth - 3 if array else depth - 2):
        inner = ("[%s]" if array else '{"a":%s}') % inner
    if array:
        inner = '{"a":%s}' % inner
    return '{"kind":"%s","payload":%s}' % (kind, inner)


def padded_body(size):
    """A valid POST body of exactly size bytes."""
    head, tail = '{"kind":"pad","payload":{"p":"', '"}}'
    return (head + "x" * (size - len(head) - len(tail)) + tail).encode()


# ---------------------------------------------------------------------------
# The driver and the tables (at the end of the file)

def run_api_checks(st):
    """Every row of the SPEC.md section 1 status table against a running
    stack (st.cfpm up, st.http_port nginx, st.tokens): the ACCEPTED
    checks, then the REJECTED ones (which must add no row), then
    AFTERWARDS. Each check is f(stack, checker)."""
    c = Checker(st)
    for check in ACCEPTED:
        check(st, c)
    n_before = st.pg.row_count()
    for check in REJECTED:
        check(st, c)
    st.tap.is_(st.pg.row_count(), n_before,
               "rejected writes (400, 401, 403, 404, 405, 413, 415) added "
               "no row")
    for check in AFTERWARDS:
        check(st, c)


def check_operational(st, c):
    """/health and ping.path answer without a token."""
    tap = st.tap
    c.expect(st.get("/health"), "GET /health is 200 ok", 200,
             body={"status": "ok"})
    c.expect(st.get("/health", auth="Bearer garbage"),
             "GET /health needs no token", 200, body={"status": "ok"})
    r = st.get("/ping")
    tap.ok(r.status == 200 and r.body.strip() == b"pong",
           "GET /ping (ping.path) answers pong", "got %r" % r)


def check_auth_ok(st, c):
    """200 GET /auth: sub and scope echoed, pool tokens accepted."""
    tap = st.tap
    tok = st.tokens
    valid = tok["valid"]
    c.expect(st.get("/auth", valid), "GET /auth with the bench token", 200,
             body={"sub": ct.SUBJECT, "scope": ct.SCOPE})
    c.expect(st.get("/auth", tok["readonly"]),
             "GET /auth with a read-only token: scope verbatim", 200,
             body={"sub": ct.SUBJECT, "scope": "events:read"})
    c.expect(st.get("/auth", st.keys.mint(scope="openid events:read x:y",
                                          sub="svc-7")),
             "GET /auth: scope among other words, sub echoed", 200,
             body={"sub": "svc-7", "scope": "openid events:read x:y"})
    for i, t in enumerate(tok.get("pool", [])[:3]):
        r = st.get("/auth", t)
        tap.is_(r.status, 200, "pool token %d accepted" % (i + 1))


def check_read_ok(st, c):
    """200 GET /events/{id}: seeded rows, id forms, read-only
    token, the auth scheme in any case."""
    tap = st.tap
    tok = st.tokens
    valid = tok["valid"]
    c.expect(st.get("/events/1", valid), "GET /events/1: seeded row", 200,
             body=seeded_row(1))
    r = st.get("/events/1", valid)
    j = r.json() or {}
    tap.ok(type(j.get("id")) is int and
           isinstance(j.get("payload"), dict) and
           j.get("created_at") == "2026-09-01T00:00:01.000000Z",
           "GET /events/1: id is a JSON integer, payload an object, "
           "created_at RFC 3339 UTC with microseconds", "got %r" % r.body)
    c.expect(st.get("/events/1000", valid), "GET /events/1000: seeded row",
             200, body=seeded_row(1000))
    c.expect(st.get("/events/0001", valid),
             "GET /events/0001: leading zeros allowed", 200,
             body=seeded_row(1))
    c.expect(st.get("/events/" + "0" * 40 + "1000", valid),
             "GET /events/{40 zeros}1000: the value counts, not the length",
             200, body=seeded_row(1000))
    c.expect(st.get("/events/1", tok["readonly"]),
             "GET /events/1 with a read-only token", 200, body=seeded_row(1))
    for auth in ("bearer " + valid, "BEARER " + valid, "BeArEr " + valid):
        c.expect(st.get("/auth", auth=auth),
                 "auth scheme is case-insensitive: %s" % auth.split()[0],
                 200, body={"sub": ct.SUBJECT, "scope": ct.SCOPE})


def check_post_created(st, c):
    """201 POST /events: {"id":N}, the row committed with the token's
    subject, read back."""
    tap = st.tap
    valid = st.tokens["valid"]
    n0 = st.pg.row_count()
    r = st.post("/events", BENCH_BODY, valid)
    j = r.json() or {}
    c.expect(r, "POST /events (benchmark body) is 201 {id}", 201)
    new_id = j.get("id")
    tap.ok(type(new_id) is int and new_id > ct.SEED_ROWS and
           set(j) == {"id"}, "POST /events: body is exactly {\"id\":N}, "
           "N past the seed", "got %r" % r.body)
    tap.is_(st.pg.row_count(), n0 + 1, "POST /events: one row added")
    if type(new_id) is int:
        rows = st.pg.psql(
            "SELECT subject, kind, payload::text, to_char(created_at AT "
            "TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM "
            "events WHERE id = %d" % new_id)
        tap.ok(len(rows) == 1 and rows[0][0] == ct.SUBJECT and
               rows[0][1] == "page_view" and
               json.loads(rows[0][2]) == BENCH_PAYLOAD,
               "POST /events: row committed with subject = token sub "
               "before 201", "rows: %r" % rows)
        r = st.get("/events/%d" % new_id, valid)
        want = {"id": new_id, "subject": ct.SUBJECT, "kind": "page_view",
                "payload": BENCH_PAYLOAD,
                "created_at": rows[0][3] if rows else None}
        c.expect(r, "GET /events/{new id} reads the written row back", 200,
                 body=want)
        tap.like((r.json() or {}).get("created_at", ""), TS_RE,
                 "written row: created_at format")
    else:
        tap.ok(False, "POST /events: no id to read back")


def check_post_accepted(st, c):
    """201 for the bodies and requests the API accepts: Content-Type
    parameters, a write-only token, chunked, deep nesting, 64 KiB,
    whitespace."""
    tok = st.tokens
    valid = tok["valid"]
    for ctype in ("application/json; charset=utf-8",
                  "application/json;charset=UTF-8"):
        c.expect(st.post("/events", BENCH_BODY, valid, ctype=ctype),
                 "POST /events with Content-Type %s" % ctype, 201)
    c.expect(st.post("/events", BENCH_BODY, tok["writeonly"]),
             "POST /events with a write-only token", 201)
    chunk = BENCH_BODY.encode()
    r = ct.http_raw(st.http_port, ct.build_raw(
        "POST", "/events", [("Authorization", "Bearer " + valid),
                            ("Content-Type", "application/json"),
                            ("Transfer-Encoding", "chunked")]) +
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk), method="POST")
    c.expect(r, "POST /events with a chunked body", 201)
    c.expect(st.post("/events", nested_body(64), valid),
             "POST /events: JSON nested 64 levels accepted", 201)
    c.expect(st.post("/events", nested_body(64, array=True), valid),
             "POST /events: arrays nested to 64 levels accepted", 201)
    c.expect(st.post("/events", padded_body(ct.MAX_BODY), valid),
             "POST /events: body of exactly 64 KiB accepted", 201)
    c.expect(st.post("/events", '{"kind":"k","payload":{}}', valid),
             "POST /events: empty payload object accepted", 201)
    c.expect(st.post("/events", ' \n{ "payload" : {"a":[1,2,{"b":null}]} ,'
                     ' "kind" : "spaced" }\n ', valid),
             "POST /events: whitespace and member order do not matter", 201)


def check_post_utf8(st, c):
    """Non-ASCII text round-trips, raw UTF-8 and \\u escapes."""
    tap = st.tap
    valid = st.tokens["valid"]
    uni = {"kind": "vue \u00e9\u20ac", "payload": {"t": "\u65e5\u672c",
                                                   "e": "\U0001F600"}}
    for desc, body in (("raw UTF-8",
                        json.dumps(uni, ensure_ascii=False).encode()),
                       ("\\u escapes", json.dumps(uni).encode())):
        r = st.post("/events", body, valid)
        i = (r.json() or {}).get("id")
        g = st.get("/events/%s" % i, valid) if type(i) is int else r
        gj = g.json() or {}
        tap.ok(r.status == 201 and g.status == 200 and
               gj.get("kind") == uni["kind"] and
               gj.get("payload") == uni["payload"],
               "POST /events with %s: non-ASCII text round-trips" % desc,
               "post: %r" % r, "get: %r" % g)


def check_post_numbers(st, c):
    """The payload is stored as sent: numbers keep their decimal value
    (jsonb numeric is exact), nothing goes through a binary double."""
    tap = st.tap
    valid = st.tokens["valid"]
    r = st.post("/events", '{"kind":"num","payload":{"a":0.1,"b":1.5e-7,'
                '"c":123456789012345678,"d":2.50,"e":1E2}}', valid)
    i = (r.json() or {}).get("id")
    rows = st.pg.psql(
        "SELECT (payload->'a')::numeric = 0.1, (payload->'b')::numeric = "
        "1.5e-7, (payload->'c')::numeric = 123456789012345678, "
        "(payload->'d')::numeric = 2.5, (payload->'e')::numeric = 100, "
        "payload::text FROM events WHERE id = %d" % i) \
        if type(i) is int else []
    tap.ok(r.status == 201 and len(rows) == 1 and
           rows[0][:5] == ["t"] * 5,
           "POST /events: payload numbers stored with their exact decimal "
           "value (0.1 stays 0.1)", "post: %r" % r, "stored: %r" % rows)
    r = st.post("/events", '{"kind":"num","payload":{"big":'
                '12345678901234567890123}}', valid)
    i = (r.json() or {}).get("id")
    rows = st.pg.psql("SELECT (payload->'big')::numeric = "
                      "12345678901234567890123 FROM events WHERE id = %d" %
                      i) if type(i) is int else []
    tap.ok(r.status == 201 and rows == [["t"]],
           "POST /events: an integer past 2^64 in the payload is valid JSON, "
           "stored exactly", "post: %r" % r, "stored: %r" % rows)


def check_subject_isolation(st, c):
    """Subjects are isolated both ways."""
    tap = st.tap
    valid = st.tokens["valid"]
    other = st.keys.mint(sub="other-client")
    c.expect(st.get("/events/1", other),
             "GET /events/1 with another subject's token is 404", 404,
             error="not_found")
    r = st.post("/events", '{"kind":"mine","payload":{"o":1}}', other)
    oid = (r.json() or {}).get("id")
    c.expect(r, "POST /events as another subject", 201)
    if type(oid) is int:
        c.expect(st.get("/events/%d" % oid, other),
                 "the other subject reads its own row", 200,
                 body=None)
        tap.is_((st.get("/events/%d" % oid, other).json() or {})
                .get("subject"), "other-client",
                "the other subject's row has its subject")
        c.expect(st.get("/events/%d" % oid, valid),
                 "client-bench cannot read the other subject's row", 404,
                 error="not_found")


def check_auth_malformed(st, c):
    """400: a malformed Authorization header."""
    tap = st.tap
    valid = st.tokens["valid"]
    for desc, auth in (("bare Bearer", "Bearer"),
                       ("Bearer and a space", "Bearer "),
                       ("two tokens", "Bearer a b"),
                       ("two tokens, valid first", "Bearer %s x" % valid)):
        c.expect(st.get("/auth", auth=auth),
                 "malformed Authorization (%s) is 400" % desc, 400,
                 error="invalid_request", www=ct.WWW_INVALID_REQUEST)
    c.expect(st.post("/events", BENCH_BODY, auth="Bearer"),
             "malformed Authorization on POST /events is 400", 400,
             error="invalid_request", www=ct.WWW_INVALID_REQUEST)
    r = st.raw("GET", "/auth", [("Authorization", "Bearer " + valid),
                                ("Authorization", "Bearer " + valid)])
    tap.is_(r.status, 400, "two Authorization header lines: 400 "
            "(nginx or cfpm)")


def check_auth_missing(st, c):
    """401 without credentials or with another scheme: no error=."""
    valid = st.tokens["valid"]
    for m, p, b in (("GET", "/auth", None), ("GET", "/events/1", None),
                    ("POST", "/events", BENCH_BODY)):
        c.expect(st.request(m, p, body=b, ctype="application/json" if b
                            else None),
                 "%s %s without credentials is 401" % (m, p), 401,
                 error="unauthorized", www=ct.WWW_NONE)
    for auth in ("Basic eHl6OnBhc3M=", "Digest username=\"x\"",
                 "Bearerxyz", "Token " + valid):
        c.expect(st.get("/auth", auth=auth),
                 "other scheme (%s) is 401 without error=" % auth[:10], 401,
                 error="unauthorized", www=ct.WWW_NONE)


def check_token_invalid(st, c):
    """401 invalid_token: malformed, tampered, expired, foreign,
    misaddressed tokens; the token is never echoed."""
    tap = st.tap
    tok = st.tokens
    valid = tok["valid"]
    flip = valid[:-2] + ("A" if valid[-2] != "A" else "B") + valid[-1]
    parts = valid.split(".")
    bad = [
        ("garbage", "abc"),
        ("three garbage parts", "a.b.c"),
        ("tampered signature", flip),
        ("tampered payload", parts[0] + "." + ct.b64url(
            b'{"iss":"' + ct.ISSUER.encode() + b'","aud":"events-api",'
            b'"sub":"admin","scope":"events:read","exp":9999999999}') +
         "." + parts[2]),
        ("padded base64url", valid + "=="),
        ("four parts", valid + ".e30"),
        ("two parts", parts[0] + "." + parts[1]),
        ("standard base64 characters", valid.replace("-", "+", 1)
         if "-" in valid else valid.replace("_", "/", 1)
         if "_" in valid else valid + "+"),
        ("expired", tok["expired"]),
        ("not yet valid", tok["notyet"]),
        ("signed by a foreign key", tok["foreign"]),
        ("wrong issuer", st.keys.mint(iss="https://evil.example")),
        ("wrong audience", st.keys.mint(aud="other-api")),
        ("unknown kid", st.keys.mint(kid="bench-2")),
        ("expired a second ago", st.keys.mint(exp=-1, nbf=-120)),
    ]
    for desc, t in bad:
        c.expect(st.get("/auth", t), "invalid token (%s) is 401" % desc, 401,
                 error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    c.expect(st.get("/events/1", tok["expired"]),
             "expired token on GET /events/1 is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    c.expect(st.post("/events", BENCH_BODY, tok["foreign"]),
             "foreign token on POST /events is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    r = st.get("/auth", auth="Bearer canaryCANARY.canary.canary")
    tap.ok(r.status == 401 and b"canary" not in r.body.lower() and
           "canary" not in (r.header("www-authenticate") or "").lower(),
           "the error response never echoes the token", "got %r" % r)


# ---------------------------------------------------------------------------
# Tokens signed with the right key for header and claim cases

claims = ct.claims_json     # the name the tables below use


def claims_raw(now, name, text):
    """claims(now) with the number of exp or nbf replaced by raw JSON
    text (values Python would not print: 1e400, -1e300, null)."""
    value = now + ct.CLAIMS_EXP_IN if name == "exp" else \
        now - ct.CLAIMS_NBF_AGO
    return claims(now).replace('"%s":%d' % (name, value),
                               '"%s":%s' % (name, text))


def signed_rejected(now):
    """(description, header, claims) that must be rejected; header None:
    the bench token without its signature."""
    H = JWT_HEADER
    return [
        ("alg none", '{"alg":"none","typ":"JWT","kid":"bench-1"}',
         claims(now)),
        ("alg HS256", '{"alg":"HS256","typ":"JWT","kid":"bench-1"}',
         claims(now)),
        ("alg PS256", '{"alg":"PS256","typ":"JWT","kid":"bench-1"}',
         claims(now)),
        ("alg missing", '{"typ":"JWT","kid":"bench-1"}', claims(now)),
        ("crit header", '{"alg":"RS256","typ":"JWT","kid":"bench-1",'
         '"crit":["exp"]}', claims(now)),
        ("typ foo", '{"alg":"RS256","typ":"foo","kid":"bench-1"}',
         claims(now)),
        ("duplicate alg", '{"alg":"RS256","alg":"RS256","kid":"bench-1"}',
         claims(now)),
        ("exp missing", H, claims(now, exp=None)),
        ("exp as a string", H,
         claims(now, exp=str(now + ct.CLAIMS_EXP_IN))),
        ("exp 1e400", H, claims_raw(now, "exp", "1e400")),
        ("exp null", H, claims_raw(now, "exp", "null")),
        ("nbf as a string", H,
         claims(now, nbf=str(now - ct.CLAIMS_NBF_AGO))),
        ("nbf true", H, claims(now, nbf=True)),
        ("sub missing", H, claims(now, sub=None)),
        ("sub empty", H, claims(now, sub="")),
        ("sub a number", H, claims(now, sub=7)),
        ("iss missing", H, claims(now, iss=None)),
        ("aud missing", H, claims(now, aud=None)),
        ("aud array without ours", H, claims(now, aud=["a", "b"])),
        ("scope an array", H, claims(now, scope=["events:read"])),
        ("duplicate sub", H, claims(now)[:-1] + ',"sub":"admin"}'),
        ("payload not an object", H, "[1,2]"),
        ("empty signature", None, None),
        ("iss with a trailing slash", H, claims(now, iss=ct.ISSUER + "/")),
        ("sub with a NUL", H, claims(now, sub="client-bench\u0000x")),
        ("kid a number", '{"alg":"RS256","typ":"JWT","kid":1}', claims(now)),
        ("exp -2^63", H, claims(now, exp=-2 ** 63)),
        ("exp -1e300", H, claims_raw(now, "exp", "-1e300")),
        ("nbf 1e300", H, claims_raw(now, "nbf", "1e300")),
        ("nbf 2^63-1", H, claims(now, nbf=MAX_ID)),
    ]


def signed_accepted(now):
    """(description, header, claims) that must be accepted."""
    H = JWT_HEADER
    return [
        ("aud array with ours", H, claims(now, aud=["x", ct.AUDIENCE])),
        ("typ at+jwt", '{"alg":"RS256","typ":"at+jwt","kid":"bench-1"}',
         claims(now)),
        ("typ absent", '{"alg":"RS256","kid":"bench-1"}', claims(now)),
        ("nbf absent", H, claims(now, nbf=None)),
        ("fractional exp", H,
         claims(now, exp=now + ct.CLAIMS_EXP_IN + 0.5)),
        ("exp 2^63-1", H, claims(now, exp=MAX_ID)),
        ("exp 1e300 (finite, far future)", H,
         claims_raw(now, "exp", "1e300")),
        ("nbf -1e300", H, claims_raw(now, "nbf", "-1e300")),
        ("nbf -2^63", H, claims(now, nbf=-2 ** 63)),
    ]


def sign(st, desc, header, payload):
    """header.payload signed with the stack's key, or None after a failed
    TAP line naming desc."""
    try:
        return st.keys.sign(header, payload)
    except RuntimeError as e:
        st.tap.ok(False, "sign a token with %s" % desc, str(e))
        return None


def check_claims_rejected(st, c):
    """401 for tokens signed with the right key whose header or claims
    are wrong."""
    valid = st.tokens["valid"]
    for desc, h, p in signed_rejected(int(time.time())):
        if h is None:
            t = valid.rsplit(".", 1)[0] + "."
        else:
            t = sign(st, desc, h, p)
        if t is not None:
            c.expect(st.get("/auth", t), "token with %s is 401" % desc, 401,
                     error="invalid_token", www=ct.WWW_INVALID_TOKEN)


def check_claims_accepted(st, c):
    """200 for odd but valid headers and claims."""
    for desc, h, p in signed_accepted(int(time.time())):
        t = sign(st, desc, h, p)
        if t is not None:
            c.expect(st.get("/auth", t), "token with %s is accepted" % desc,
                     200)


def check_token_too_long(st, c):
    """Over 8 KiB: nginx may refuse the header line itself (400);
    straight over FastCGI cfpm must say invalid_token."""
    valid = st.tokens["valid"]
    long_tok = valid + "A" * (8200 - len(valid))
    r = st.fcgi("GET", "/auth", {"Authorization": "Bearer " + long_tok})
    c.expect(r, "token over 8 KiB (FastCGI, no nginx) is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)


def check_scope_forbidden(st, c):
    """403 insufficient_scope, checked before the body."""
    tok = st.tokens
    c.expect(st.post("/events", BENCH_BODY, tok["readonly"]),
             "read-only token on POST /events is 403", 403,
             error="insufficient_scope", www=ct.www_scope("events:write"))
    c.expect(st.post("/events", "not json", tok["readonly"]),
             "scope is checked before the body (read-only, bad body: 403)",
             403, error="insufficient_scope",
             www=ct.www_scope("events:write"))
    c.expect(st.get("/auth", tok["writeonly"]),
             "write-only token on GET /auth is 403", 403,
             error="insufficient_scope", www=ct.www_scope("events:read"))
    c.expect(st.get("/events/1", tok["writeonly"]),
             "write-only token on GET /events/1 is 403", 403,
             error="insufficient_scope", www=ct.www_scope("events:read"))
    c.expect(st.get("/auth", st.keys.mint(scope=None)),
             "token without a scope claim is 403, not 401", 403,
             error="insufficient_scope", www=ct.www_scope("events:read"))
    c.expect(st.get("/auth", st.keys.mint(scope="")),
             "token with an empty scope is 403", 403,
             error="insufficient_scope", www=ct.www_scope("events:read"))
    c.expect(st.get("/auth", st.keys.mint(scope="events:readx "
                                                "xevents:read events")),
             "scope words match whole (events:readx is not events:read)",
             403, error="insufficient_scope",
             www=ct.www_scope("events:read"))


def check_not_found(st, c):
    """404: unknown paths and ids that are not ids or have no row;
    auth runs before the id check."""
    tap = st.tap
    tok = st.tokens
    valid = tok["valid"]
    for p in ("/nope", "/", "/authx", "/auth/", "/event/1", "/eventsx"):
        c.expect(st.get(p), "unknown path %s is 404 without a token" % p, 404,
                 error="not_found")
    c.expect(st.post("/nope", BENCH_BODY),
             "POST to an unknown path is 404", 404, error="not_found")
    ids = ["0", "00", str(MAX_ID + 1), "99999999999999999999999999",
           "18446744073709551616", "-1", "+1", "1a", "abc", "1.0", "0x10",
           "%201", "1%20"]
    for i in ids:
        c.expect(st.raw("GET", "/events/" + i,
                        [("Authorization", "Bearer " + valid)]),
                 "GET /events/%s is 404" % i, 404, error="not_found")
    c.expect(st.raw("GET", "/events/%31", [("Authorization",
                                            "Bearer " + valid)]),
             "GET /events/%31 is 404 (raw path, not decoded)", 404,
             error="not_found")
    c.expect(st.get("/events/%d" % MAX_ID, valid),
             "GET /events/2^63-1 (valid id, no row) is 404", 404,
             error="not_found")
    c.expect(st.get("/events/%d" % (ct.SEED_ROWS * 1000), valid),
             "GET /events/{id past the end} is 404", 404, error="not_found")
    r = st.raw("GET", "/events/1%00", [("Authorization", "Bearer " + valid)])
    tap.ok(r.status in (400, 404),
           "GET /events/1%00 is 400 (nginx) or 404", "got %r" % r)
    c.expect(st.get("/events/", valid), "GET /events/ (empty id) is 404",
             404, error="not_found")
    c.expect(st.get("/events/1/2", valid), "GET /events/1/2 is 404", 404,
             error="not_found")
    c.expect(st.get("/events/abc"),
             "auth runs before the id check (no token, bad id: 401)", 401,
             error="unauthorized", www=ct.WWW_NONE)
    c.expect(st.get("/events/0", tok["expired"]),
             "auth runs before the id check (expired token, id 0: 401)", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)


def check_method_not_allowed(st, c):
    """405 with Allow, before auth."""
    tok = st.tokens
    valid = tok["valid"]
    for m, p, allow in (("POST", "/auth", "GET"), ("PUT", "/auth", "GET"),
                        ("OPTIONS", "/auth", "GET"),
                        ("PATCH", "/events", "POST"),
                        ("DELETE", "/auth", "GET"),
                        ("DELETE", "/events/1", "GET"),
                        ("POST", "/events/1", "GET"),
                        ("PUT", "/events/1", "GET"),
                        ("GET", "/events", "POST"),
                        ("PUT", "/events", "POST"),
                        ("DELETE", "/events", "POST"),
                        ("POST", "/health", "GET")):
        c.expect(st.request(m, p, body=b"{}" if m in ("POST", "PUT")
                            else None),
                 "%s %s is 405 with Allow: %s" % (m, p, allow), 405,
                 error="method_not_allowed", allow=allow)
    c.expect(st.get("/events", valid), "GET /events with a token is 405",
             405, error="method_not_allowed", allow="POST")
    c.expect(st.request("POST", "/auth", token=tok["expired"], body=b"{}"),
             "405 comes before auth (expired token)", 405,
             error="method_not_allowed", allow="GET")


def check_body_too_large(st, c):
    """413 past 64 KiB (from nginx or cfpm), without waiting for a
    huge CONTENT_LENGTH; auth first."""
    tap = st.tap
    valid = st.tokens["valid"]
    for size in (ct.MAX_BODY + 1, 65 * 1024 + 1, 256 * 1024):
        r = st.post("/events", padded_body(size), valid)
        if (r.header("content-type") or "").startswith("application/json"):
            c.expect(r, "POST /events with a %d-byte body is 413" % size,
                     413, error="payload_too_large")
        else:
            tap.is_(r.status, 413, "POST /events with a %d-byte body is 413 "
                    "(nginx)" % size)
    r = st.fcgi("POST", "/events", {"Authorization": "Bearer " + valid,
                                    "Content-Type": "application/json"},
                padded_body(ct.MAX_BODY + 1))
    c.expect(r, "cfpm itself answers 413 past 64 KiB (FastCGI, no nginx)",
             413, error="payload_too_large")
    r = st.fcgi("POST", "/events", {"Authorization": "Bearer " + valid,
                                    "Content-Type": "application/json"},
                b"{}", content_length=10 ** 12)
    c.expect(r, "cfpm answers 413 to CONTENT_LENGTH 10^12 without waiting "
             "for it", 413, error="payload_too_large")
    r = st.fcgi("POST", "/events", {"Content-Type": "application/json"},
                padded_body(ct.MAX_BODY + 1))
    c.expect(r, "auth before the size check (no token, big body: 401)",
             401, error="unauthorized", www=ct.WWW_NONE)


def check_media_type(st, c):
    """415 for any Content-Type but application/json; auth first."""
    valid = st.tokens["valid"]
    for ctype in ("text/plain", None, "application/jsonx",
                  "application/x-www-form-urlencoded", "text/json",
                  "application/json-patch+json", "multipart/form-data"):
        c.expect(st.post("/events", BENCH_BODY, valid, ctype=ctype),
                 "POST /events with Content-Type %s is 415" %
                 (ctype or "(none)"), 415, error="unsupported_media_type")
    c.expect(st.post("/events", BENCH_BODY, ctype="text/plain"),
             "auth before the media type (no token, text/plain: 401)", 401,
             error="unauthorized", www=ct.WWW_NONE)


def check_body_invalid(st, c):
    """400 for bodies that are not one events object jsonb can store."""
    valid = st.tokens["valid"]
    bad_bodies = [
        ("empty body", b""),
        ("truncated JSON", b'{"kind":"a","payload":{}'),
        ("not JSON", b"kind=a"),
        ("an array", b'[{"kind":"a","payload":{}}]'),
        ("a string", b'"kind"'),
        ("null", b"null"),
        ("an empty object", b"{}"),
        ("kind missing", b'{"payload":{}}'),
        ("kind empty", b'{"kind":"","payload":{}}'),
        ("kind a number", b'{"kind":1,"payload":{}}'),
        ("kind null", b'{"kind":null,"payload":{}}'),
        ("kind an array", b'{"kind":["a"],"payload":{}}'),
        ("payload missing", b'{"kind":"a"}'),
        ("payload an array", b'{"kind":"a","payload":[]}'),
        ("payload a string", b'{"kind":"a","payload":"{}"}'),
        ("payload null", b'{"kind":"a","payload":null}'),
        ("payload a number", b'{"kind":"a","payload":1}'),
        ("trailing garbage", b'{"kind":"a","payload":{}} x'),
        ("two objects", b'{"kind":"a","payload":{}}{}'),
        ("nested 65 levels (objects)", nested_body(65).encode()),
        ("nested 65 levels (arrays)", nested_body(65, array=True).encode()),
        ("nested 5000 levels", nested_body(5000).encode()),
        ("invalid UTF-8 in kind", b'{"kind":"a\xff","payload":{}}'),
        ("invalid UTF-8 in payload", b'{"kind":"a","payload":{"x":"\xc3('
         b'"}}'),
        ("overlong UTF-8", b'{"kind":"\xc0\xaf","payload":{}}'),
        ("UTF-8 encoded surrogate", b'{"kind":"\xed\xa0\x80","payload":{}}'),
        ("lone surrogate escape", b'{"kind":"a","payload":{"x":"\\ud800"}}'),
        ("escaped NUL in kind", b'{"kind":"a\\u0000b","payload":{}}'),
        ("escaped NUL in payload", b'{"kind":"a","payload":{"x":'
         b'"\\u0000"}}'),
        ("raw NUL in a string", b'{"kind":"a\x00b","payload":{}}'),
        ("raw NUL after the object", b'{"kind":"a","payload":{}}\x00'),
    ]
    for desc, body in bad_bodies:
        c.expect(st.post("/events", body, valid),
                 "POST /events body with %s is 400" % desc, 400,
                 error="invalid_request")


def check_query_strings(st, c):
    """Query strings do not change the route."""
    valid = st.tokens["valid"]
    c.expect(st.get("/auth?x=1", valid), "GET /auth?x=1 is /auth", 200,
             body={"sub": ct.SUBJECT, "scope": ct.SCOPE})
    c.expect(st.get("/events/1?x=1", valid), "GET /events/1?x=1 is id 1",
             200, body=seeded_row(1))


def check_robustness(st, c):
    """Odd FastCGI requests that nginx would never send: each gets a 4xx
    and no worker dies."""
    tap = st.tap
    valid = st.tokens["valid"]
    before = st.cfpm.workers()
    auth = {"Authorization": "Bearer " + valid,
            "Content-Type": "application/json"}
    cases = [
        ("CONTENT_LENGTH -1", "POST", "/events", auth, BENCH_BODY.encode(),
         "-1"),
        ("CONTENT_LENGTH abc", "POST", "/events", auth, BENCH_BODY.encode(),
         "abc"),
        ("CONTENT_LENGTH 2^64", "POST", "/events", auth, BENCH_BODY.encode(),
         str(2 ** 64)),
        ("body shorter than CONTENT_LENGTH", "POST", "/events", auth,
         BENCH_BODY.encode(), str(len(BENCH_BODY) + 50)),
        ("Authorization of 1 MiB", "GET", "/auth",
         {"Authorization": "Bearer " + "A" * (1 << 20)}, b"", None),
        ("a request URI of 64 KiB", "GET", "/events/" + "1" * 65536,
         {"Authorization": "Bearer " + valid}, b"", None),
    ]
    for desc, m, uri, h, body, clen in cases:
        r = ct.fcgi_request(st.cfpm.sock, m, uri, h, body,
                            content_length=clen)
        # A CONTENT_LENGTH that is not a number may be treated as absent
        # (the FastCGI stdin stream delimits the body): 201 is fine there.
        lax = clen is not None and not clen.isdigit() or \
            clen == str(2 ** 64)
        tap.ok(400 <= r.status < 500 or (lax and r.status == 201),
               "FastCGI with %s: %s" % (desc, "201 or a 4xx" if lax
                                        else "a 4xx answer"),
               "got %r" % r)
    # Not FastCGI at all, and a client that hangs up mid-request.
    for junk in (b"GET / HTTP/1.0\r\n\r\n", b"\x01\x01" + b"\xff" * 64,
                 b"\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x00"):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(st.cfpm.sock)
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(4096)
            except OSError:
                pass
            s.close()
        except OSError as e:
            tap.diag("junk connection: %r" % e)
    codes = [st.get("/events/1", valid).status for _ in range(6)]
    after = ct.wait_for(lambda: len(st.cfpm.workers()) == len(before) and
                        st.cfpm.workers(), 3) or st.cfpm.workers()
    tap.ok(all(c == 200 for c in codes) and after == before,
           "after odd FastCGI input the same workers still serve",
           "before %r, after %r, statuses %r" % (before, after, codes))


# 200 and 201: what the API serves and accepts.
ACCEPTED = (
    check_operational,          # /health, ping.path
    check_auth_ok,              # 200 GET /auth
    check_read_ok,              # 200 GET /events/{id}
    check_post_created,         # 201, the row committed, read back
    check_post_accepted,        # 201 for every accepted request form
    check_post_utf8,            # non-ASCII round trip
    check_post_numbers,         # payload numbers stored exactly
    check_subject_isolation,    # 404 across subjects
)
# 4xx: every write among them must be rejected.
REJECTED = (
    check_auth_malformed,       # 400 invalid_request
    check_auth_missing,         # 401 without error=
    check_token_invalid,        # 401 invalid_token
    check_claims_rejected,      # 401 signed, wrong header or claims
    check_claims_accepted,      # 200 signed, odd but valid
    check_token_too_long,       # 401 over FastCGI
    check_scope_forbidden,      # 403
    check_not_found,            # 404
    check_method_not_allowed,   # 405
    check_body_too_large,       # 413
    check_media_type,           # 415
    check_body_invalid,         # 400 bodies
)
AFTERWARDS = (
    check_robustness,           # odd FastCGI input, workers survive
    check_query_strings,        # query strings do not change the route
)
