#!/usr/bin/env python3
"""
test_api.py: the HTTP contract of SPEC.md section 1, end to end through
nginx (generated from etc/nginx/cfpm.conf), cfpm and a private PostgreSQL.

Every row of the status table: apichecks.run_api_checks(), one named
function per behaviour (test_socket_activation.py runs the same set).
This file adds: compatibility mode (auth.errors = compat, byte-exact
bodies and headers), keys and token policy, `cfpm -t` and clean logs.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from apichecks import run_api_checks  # noqa: E402
from cfpmtest import BENCH_BODY, MAX_ID, Checker, seeded_row  # noqa: E402


def check_logs_clean(st):
    """No token or signature ever reaches cfpm's logs."""
    tap = st.tap
    secrets = ["canary"]
    for name in ("valid", "readonly", "writeonly", "expired", "notyet",
                 "foreign"):
        secrets.append(st.tokens[name].split(".")[2][:40])
    leaks = []
    for path in st.logs:
        if os.path.basename(path).startswith("cfpm"):
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            leaks += ["%s: %s" % (os.path.basename(path), x[:20])
                      for x in secrets if x in text]
    tap.ok(not leaks, "cfpm logs (log_level debug) contain no token",
           *leaks)


def check_keys_and_policy(st):
    """JWKS with two keys selected by kid; strict typ; leeway."""
    tap = st.tap
    c = Checker(st)
    k1 = st.keys
    k2 = ct.Keys(os.path.join(st.dir, "keys2"), kid="bench-2")
    if not (os.path.exists(k1.jwks) and os.path.exists(k2.jwks)):
        tap.ok(False, "cfpm-token keygen writes jwks.json")
        return
    both = ct.write_jwks(os.path.join(st.dir, "jwks-both.json"), k1, k2)
    st.start_cfpm({"auth.key_file": both, "auth.key_id": None})
    ok_body = {"sub": ct.SUBJECT, "scope": ct.SCOPE}
    c.expect(st.get("/auth", k1.mint(kid="bench-1")),
             "JWKS of two keys: kid bench-1, key 1 accepted", 200,
             body=ok_body)
    c.expect(st.get("/auth", k2.mint(kid="bench-2")),
             "JWKS of two keys: kid bench-2, key 2 accepted", 200,
             body=ok_body)
    c.expect(st.get("/auth", k1.mint(kid="bench-2")),
             "JWKS: kid bench-2 signed by key 1 is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    c.expect(st.get("/auth", k1.mint(kid="bench-3")),
             "JWKS: unknown kid is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    c.expect(st.get("/auth", st.tokens["foreign"]),
             "JWKS: foreign token is 401", 401,
             error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    st.stop_cfpm()

    st.start_cfpm({"auth.typ": "strict", "auth.leeway": 60})
    c.expect(st.get("/auth", k1.mint(typ="at+jwt")),
             "auth.typ strict: typ at+jwt accepted", 200, body=ok_body)
    for typ in ("JWT", None):
        c.expect(st.get("/auth", k1.mint(typ=typ)),
                 "auth.typ strict: typ %s is 401" % (typ or "absent"), 401,
                 error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    for desc, kw, status in (
            ("expired 30 s ago", {"exp": -30, "nbf": -600}, 200),
            ("expired 120 s ago", {"exp": -120, "nbf": -600}, 401),
            ("nbf 30 s ahead", {"nbf": 30}, 200),
            ("nbf 120 s ahead", {"nbf": 120}, 401)):
        r = st.get("/auth", k1.mint(typ="at+jwt", **kw))
        if status == 200:
            c.expect(r, "auth.leeway 60: token %s accepted" % desc, 200,
                     body=ok_body)
        else:
            c.expect(r, "auth.leeway 60: token %s is 401" % desc, 401,
                     error="invalid_token", www=ct.WWW_INVALID_TOKEN)
    now = int(time.time())
    t = k1.sign('{"alg":"RS256","typ":"at+jwt","kid":"bench-1"}',
                json.dumps({"iss": ct.ISSUER, "aud": ct.AUDIENCE,
                            "sub": ct.SUBJECT, "scope": ct.SCOPE,
                            "nbf": now - 60, "exp": MAX_ID}))
    c.expect(st.get("/auth", t), "auth.leeway 60: exp 2^63-1 accepted "
             "(no overflow)", 200, body=ok_body)
    t = k1.sign('{"alg":"RS256","typ":"at+jwt","kid":"bench-1"}',
                json.dumps({"iss": ct.ISSUER, "aud": ct.AUDIENCE,
                            "sub": ct.SUBJECT, "scope": ct.SCOPE,
                            "nbf": MAX_ID, "exp": MAX_ID}))
    c.expect(st.get("/auth", t), "auth.leeway 60: nbf 2^63-1 is 401 "
             "(no overflow)", 401, error="invalid_token",
             www=ct.WWW_INVALID_TOKEN)
    st.stop_cfpm()


# ---------------------------------------------------------------------------

def check_compat(st):
    """auth.errors = compat: every auth failure is byte-exact Go/PHP."""
    c = Checker(st)
    tok = st.tokens
    exact = b'{"error":"invalid_token"}'

    def compat(r, desc):
        return c.expect(r, "compat: %s" % desc, 401, exact=exact,
                        www=ct.WWW_COMPAT)
    compat(st.get("/auth"), "no credentials")
    compat(st.get("/events/1"), "no credentials on GET /events/1")
    compat(st.post("/events", BENCH_BODY), "no credentials on POST")
    compat(st.get("/auth", auth="Basic eHl6"), "other scheme")
    compat(st.get("/auth", auth="Bearer"), "bare Bearer")
    compat(st.get("/auth", auth="Bearer a b"), "two tokens")
    compat(st.get("/auth", "abc.def.ghi"), "bad token")
    compat(st.get("/auth", tok["expired"]), "expired token")
    compat(st.get("/auth", tok["foreign"]), "foreign token")
    compat(st.post("/events", BENCH_BODY, tok["readonly"]),
           "insufficient scope on POST")
    compat(st.get("/auth", tok["writeonly"]), "insufficient scope on GET")
    c.expect(st.get("/auth", tok["valid"]), "compat: valid token is 200",
             200, body={"sub": ct.SUBJECT, "scope": ct.SCOPE})
    c.expect(st.get("/nope"), "compat: unknown path still 404", 404,
             error="not_found")
    c.expect(st.request("POST", "/auth", body=b"{}"),
             "compat: wrong method still 405", 405,
             error="method_not_allowed", allow="GET")
    c.expect(st.post("/events", BENCH_BODY, tok["valid"], ctype="text/plain"),
             "compat: 415 unchanged", 415, error="unsupported_media_type")
    c.expect(st.get("/events/1", tok["valid"]), "compat: read is 200", 200,
             body=seeded_row(1))


def check_config_test(st):
    """cfpm -t on a good and on bad configs."""
    tap = st.tap
    sock = os.path.join(st.dir, "cfpm-t.sock")
    good = st.write_config(listen=sock, name="good.conf")
    rc, out = st.cfpm_test_config(good)
    tap.ok(rc == 0 and "configuration OK" in out,
           "cfpm -t on a good config: exit 0, configuration OK",
           "rc %r, output %r" % (rc, out))
    tap.ok(not os.path.exists(sock), "cfpm -t binds no socket")

    lines = st.config_text(listen=sock).splitlines()
    # Line 3 of the generated file is a real directive; break it.
    lines[2] = "pm.max_children = lots"
    bad = st.write_config(text="\n".join(lines) + "\n", name="bad.conf")
    rc, out = st.cfpm_test_config(bad)
    tap.ok(rc not in (0, None) and (bad + ":3:") in out,
           "cfpm -t on a bad value: exit != 0, names %s:3:" %
           os.path.basename(bad), "rc %r, output %r" % (rc, out))

    lines = st.config_text(listen=sock).splitlines()
    lines.insert(4, "no.such.key = 1")
    bad2 = st.write_config(text="\n".join(lines) + "\n", name="bad2.conf")
    rc, out = st.cfpm_test_config(bad2)
    tap.ok(rc not in (0, None) and (bad2 + ":5:") in out,
           "cfpm -t on an unknown key: exit != 0, names %s:5:" %
           os.path.basename(bad2), "rc %r, output %r" % (rc, out))

    incomplete = st.write_config({"auth.issuer": None}, listen=sock,
                                 name="noissuer.conf")
    rc, out = st.cfpm_test_config(incomplete)
    tap.ok(rc not in (0, None) and "auth.issuer" in out,
           "cfpm -t without auth.issuer: exit != 0, names the key",
           "rc %r, output %r" % (rc, out))
    rc, out = st.cfpm_test_config(os.path.join(st.dir, "missing.conf"))
    tap.ok(rc not in (0, None), "cfpm -t on a missing file: exit != 0",
           "rc %r, output %r" % (rc, out))


def main(tap):
    with ct.Stack(tap) as st:
        st.setup()
        st.start_cfpm({"log_level": "debug"})
        run_api_checks(st)
        tap.skip("500 server_error", "no reliable way to trigger it "
                 "from outside")
        tap.skip("503 unavailable", "covered by test_process.py")

        rc = st.stop_cfpm()
        tap.is_(rc, 0, "cfpm (rfc6750) stops with exit 0 on SIGTERM")
        st.start_cfpm({"auth.errors": "compat", "log_level": "debug"})
        check_compat(st)
        st.stop_cfpm()

        check_keys_and_policy(st)
        check_config_test(st)
        check_logs_clean(st)


if __name__ == "__main__":
    ct.main(main)
