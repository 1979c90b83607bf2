"""
contract.py: the API contract every candidate must pass before it is
measured (the main cases of SPEC.md section 1 and of
tests/integration/test_api.py): statuses, JSON bodies and the
WWW-Authenticate challenge. A candidate that fails is reported as failed,
not measured.
"""

import hashlib
import http.client
import json

SUBJECT = "client-bench"
SCOPE = "events:read events:write"
BENCH_BODY = ('{"kind":"page_view","payload":{"path":"/pricing","ms":182,'
              '"ref":"newsletter"}}')
BENCH_PAYLOAD = {"path": "/pricing", "ms": 182, "ref": "newsletter"}
REALM = 'Bearer realm="events"'
EVENT_KEYS = {"id", "subject", "kind", "payload", "created_at"}


def request(port, method, path, token=None, body=None, ctype=None,
            timeout=10):
    """One HTTP/1.1 request on a new connection to 127.0.0.1:port.
    Returns (status, {lower-case header: value}, parsed JSON or None);
    status 0 on a network error."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        if ctype is not None:
            headers["Content-Type"] = ctype
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
    except (OSError, http.client.HTTPException):
        return 0, {}, None
    finally:
        conn.close()
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        doc = None
    return r.status, hdrs, doc


def seeded_row(g):
    """Row g of sql/seed.sql as GET /events/g returns it."""
    kinds = ["page_view", "click", "signup", "purchase"]
    return {"id": g, "subject": SUBJECT, "kind": kinds[g % 4],
            "payload": {"path": "/p/%d" % (g % 1000), "ms": g % 500,
                        "ref": hashlib.md5(str(g).encode()).hexdigest()},
            "created_at": "2026-09-01T%02d:%02d:%02d.000000Z" % (
                g // 3600, g // 60 % 60, g % 60)}


class _Checks:
    """Collects named results: [{'name', 'ok', 'detail'}]."""

    def __init__(self, port):
        self.port = port
        self.results = []

    def expect(self, name, got, status, body=None, error=None, www=None,
               pred=None):
        """Compares a request() result with the expectation."""
        st, hdrs, doc = got
        probs = []
        if st != status:
            probs.append("status %d, want %d" % (st, status))
        elif not hdrs.get("content-type", "").startswith(
                "application/json"):
            probs.append("content-type %r" % hdrs.get("content-type"))
        if not probs and body is not None and doc != body:
            probs.append("body %r, want %r" % (doc, body))
        if not probs and error is not None and \
                (not isinstance(doc, dict) or doc.get("error") != error):
            probs.append("body %r, want error %r" % (doc, error))
        if not probs and www is not None and \
                hdrs.get("www-authenticate") != www:
            probs.append("WWW-Authenticate %r, want %r" %
                         (hdrs.get("www-authenticate"), www))
        if not probs and pred is not None and not pred(doc):
            probs.append("body %r" % (doc,))
        self.results.append({"name": name, "ok": not probs,
                             "detail": "; ".join(probs)})
        return doc if not probs else None


def check(port, tokens, rows):
    """Runs the contract against 127.0.0.1:port with the token set
    (valid, readonly, expired, foreign). Returns (ok, results)."""
    c = _Checks(port)
    tok = tokens
    get = lambda path, t=None: request(port, "GET", path, t)  # noqa: E731

    c.expect("GET /auth: 200 sub and scope", get("/auth", tok["valid"]),
             200, body={"sub": SUBJECT, "scope": SCOPE})
    c.expect("GET /events/1: 200 seeded row", get("/events/1", tok["valid"]),
             200, body=seeded_row(1))
    doc = c.expect("POST /events: 201 {id}",
                   request(port, "POST", "/events", tok["valid"],
                           BENCH_BODY, "application/json"), 201,
                   pred=lambda d: isinstance(d, dict) and set(d) == {"id"}
                   and type(d["id"]) is int and d["id"] > rows)
    if doc:
        c.expect("GET /events/{new id}: reads the row back",
                 get("/events/%d" % doc["id"], tok["valid"]), 200,
                 pred=lambda d: isinstance(d, dict) and set(d) == EVENT_KEYS
                 and d["id"] == doc["id"] and d["subject"] == SUBJECT and
                 d["kind"] == "page_view" and d["payload"] == BENCH_PAYLOAD)
    c.expect("GET /events/1 without a token: 401", get("/events/1"), 401,
             error="unauthorized", www=REALM)
    c.expect("POST /events with a read-only token: 403",
             request(port, "POST", "/events", tok["readonly"], BENCH_BODY,
                     "application/json"), 403, error="insufficient_scope",
             www=REALM + ', error="insufficient_scope", scope="events:write"')
    for name in ("expired", "foreign"):
        c.expect("GET /auth with a %s token: 401" % name,
                 get("/auth", tok[name]), 401, error="invalid_token",
                 www=REALM + ', error="invalid_token"')
    c.expect("GET /auth with a garbage token: 401",
             get("/auth", "abc.def.ghi"), 401, error="invalid_token")
    c.expect("GET /events/{missing id}: 404",
             get("/events/%d" % (rows * 1000 + 7), tok["valid"]), 404,
             error="not_found")
    c.expect("GET /events/abc: 404", get("/events/abc", tok["valid"]), 404,
             error="not_found")
    c.expect("POST /events, body not JSON: 400",
             request(port, "POST", "/events", tok["valid"], "{",
                     "application/json"), 400, error="invalid_request")
    c.expect("POST /events, text/plain: 415",
             request(port, "POST", "/events", tok["valid"], BENCH_BODY,
                     "text/plain"), 415, error="unsupported_media_type")
    c.expect("GET /nope: 404", get("/nope", tok["valid"]), 404,
             error="not_found")
    return all(r["ok"] for r in c.results), c.results
