"""
contract.py: the events API's contract as the tests and the benchmark
check it (SPEC.md section 1): the benchmark's token claims and body, the
seed's rows, the WWW-Authenticate challenges, and one comparison of a
response with what it must be -- problems() -- used both by the tests'
Checker (one TAP line per request) and by check(), the gate every
benchmark candidate must pass before it is measured.
"""

import hashlib

from .http import api_request

# The benchmark's token (cfpm-token's defaults, SPEC "Benchmark tokens").
ISSUER = "https://auth.bench.local"
AUDIENCE = "events-api"
SUBJECT = "client-bench"
SCOPE = "events:read events:write"
KID = "bench-1"

MAX_BODY = 64 * 1024        # the API's body limit
MAX_ID = 2 ** 63 - 1        # the largest id (bigint)
SEED_KINDS = ["page_view", "click", "signup", "purchase"]
BENCH_BODY = ('{"kind":"page_view","payload":{"path":"/pricing","ms":182,'
              '"ref":"newsletter"}}')
BENCH_PAYLOAD = {"path": "/pricing", "ms": 182, "ref": "newsletter"}
EVENT_KEYS = {"id", "subject", "kind", "payload", "created_at"}
JSON = "application/json"

WWW_NONE = 'Bearer realm="events"'
WWW_INVALID_REQUEST = WWW_NONE + ', error="invalid_request"'
WWW_INVALID_TOKEN = WWW_NONE + ', error="invalid_token"'
WWW_COMPAT = 'Bearer error="invalid_token"'


def www_scope(scope):
    """The challenge of a 403 for a token without scope."""
    return WWW_NONE + ', error="insufficient_scope", scope="%s"' % scope


def seeded_row(g):
    """Row g of sql/seed.sql as GET /events/g returns it."""
    return {
        "id": g, "subject": SUBJECT, "kind": SEED_KINDS[g % 4],
        "payload": {"path": "/p/%d" % (g % 1000), "ms": g % 500,
                    "ref": hashlib.md5(str(g).encode()).hexdigest()},
        "created_at": "2026-09-01T%02d:%02d:%02d.000000Z" % (
            g // 3600, g // 60 % 60, g % 60),
    }


def problems(r, status, error=None, www=None, allow=None, body=None,
             exact=None, pred=None, json_ct=True, status_alt=()):
    """What is wrong with Response r, as a list of lines (empty: nothing).
    status: the status wanted (status_alt: others tolerated, then nothing
    else is checked). Checked only when the status is the one wanted:
    json_ct, Content-Type exactly application/json; error, a JSON body
    {"error": error} (an error_description string allowed); www, the one
    WWW-Authenticate; allow, the Allow header; body, the parsed JSON
    body; exact, the body bytes; pred, a predicate on the parsed body."""
    probs = []
    if r.status != status and r.status not in status_alt:
        probs.append("status: got %d %s, want %d" %
                     (r.status, r.reason, status))
    if r.status != status:
        return probs
    ctype = r.header("content-type")
    if json_ct and ctype != JSON:
        probs.append("content-type: got %r, want %s" % (ctype, JSON))
    if error is not None:
        j = r.json()
        if not isinstance(j, dict) or j.get("error") != error:
            probs.append('body: got %r, want {"error":"%s"}' %
                         (r.body[:300], error))
        elif set(j) - {"error", "error_description"}:
            probs.append("body: unexpected members %r" % sorted(j))
        elif not isinstance(j.get("error_description", ""), str):
            probs.append("body: error_description not a string")
    if www is not None:
        if r.header("www-authenticate") != www:
            probs.append("www-authenticate: got %r, want %r" %
                         (r.header("www-authenticate"), www))
        if r.header_count("www-authenticate") > 1:
            probs.append("www-authenticate sent %d times" %
                         r.header_count("www-authenticate"))
    if allow is not None and r.header("allow") != allow:
        probs.append("allow: got %r, want %r" % (r.header("allow"), allow))
    if body is not None and r.json() != body:
        probs.append("json body: got %r, want %r" % (r.body[:500], body))
    if exact is not None and r.body != exact:
        probs.append("body bytes: got %r, want %r" % (r.body[:300], exact))
    if pred is not None and not pred(r.json()):
        probs.append("body: got %r" % (r.body[:500],))
    return probs


class Checker:
    """One TAP line per response: every problem listed when it fails."""

    def __init__(self, st):
        self.st = st
        self.tap = st.tap

    def expect(self, r, desc, status, **want):
        """tap.ok on problems(r, status, **want) being empty."""
        probs = problems(r, status, **want)
        return self.tap.ok(not probs, desc, *probs)


# ---------------------------------------------------------------------------
# The benchmark's gate

class _Gate:
    """Collects named results: [{'name', 'ok', 'detail'}]."""

    def __init__(self, port, tokens):
        self.port = port
        self.tokens = tokens
        self.results = []

    def request(self, method, path, token=None, body=None, ctype=None):
        """token: a name in the token set, or a raw token."""
        return api_request(self.port, method, path,
                           self.tokens.get(token, token), body=body,
                           ctype=ctype)

    def expect(self, name, r, status, **want):
        """Records whether r is as wanted; returns its JSON body if so."""
        probs = problems(r, status, **want)
        self.results.append({"name": name, "ok": not probs,
                             "detail": "; ".join(probs)})
        return None if probs else r.json()


def check(port, tokens, rows):
    """The contract the benchmark checks on a candidate at
    127.0.0.1:port, with the token set (valid, readonly, expired,
    foreign) and rows seed rows, before it is measured. Returns (ok,
    results): ok if every result passed."""
    g = _Gate(port, tokens)

    g.expect("GET /auth: 200 sub and scope", g.request("GET", "/auth",
                                                       "valid"),
             200, body={"sub": SUBJECT, "scope": SCOPE})
    g.expect("GET /events/1: 200 seeded row",
             g.request("GET", "/events/1", "valid"), 200, body=seeded_row(1))
    doc = g.expect("POST /events: 201 {id}",
                   g.request("POST", "/events", "valid", BENCH_BODY, JSON),
                   201, pred=lambda d: isinstance(d, dict) and
                   set(d) == {"id"} and type(d["id"]) is int and
                   d["id"] > rows)
    if doc:
        g.expect("GET /events/{new id}: reads the row back",
                 g.request("GET", "/events/%d" % doc["id"], "valid"), 200,
                 pred=lambda d: isinstance(d, dict) and set(d) == EVENT_KEYS
                 and d["id"] == doc["id"] and d["subject"] == SUBJECT and
                 d["kind"] == "page_view" and d["payload"] == BENCH_PAYLOAD)
    g.expect("GET /events/1 without a token: 401",
             g.request("GET", "/events/1"), 401, error="unauthorized",
             www=WWW_NONE)
    g.expect("POST /events with a read-only token: 403",
             g.request("POST", "/events", "readonly", BENCH_BODY, JSON), 403,
             error="insufficient_scope", www=www_scope("events:write"))
    for name in ("expired", "foreign"):
        g.expect("GET /auth with a %s token: 401" % name,
                 g.request("GET", "/auth", name), 401, error="invalid_token",
                 www=WWW_INVALID_TOKEN)
    g.expect("GET /auth with a garbage token: 401",
             g.request("GET", "/auth", "abc.def.ghi"), 401,
             error="invalid_token")
    g.expect("GET /events/{missing id}: 404",
             g.request("GET", "/events/%d" % (rows * 1000 + 7), "valid"),
             404, error="not_found")
    g.expect("GET /events/abc: 404", g.request("GET", "/events/abc",
                                               "valid"),
             404, error="not_found")
    g.expect("POST /events, body not JSON: 400",
             g.request("POST", "/events", "valid", "{", JSON), 400,
             error="invalid_request")
    g.expect("POST /events, text/plain: 415",
             g.request("POST", "/events", "valid", BENCH_BODY, "text/plain"),
             415, error="unsupported_media_type")
    g.expect("GET /nope: 404", g.request("GET", "/nope", "valid"), 404,
             error="not_found")
    return all(r["ok"] for r in g.results), g.results
