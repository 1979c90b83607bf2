#!/usr/bin/env python3
"""
test_hostile.py: hostile input end to end through nginx (issue 5, items 6
and 7); tests/unit/test_jwt.c covers the same token cases one level down.

Tokens: alg none/None/NONE/missing/rs256, HS256 keyed with the server's
public key PEM, real RS384 and PS256 signatures, embedded jwk/jku/x5u
(a local listener proves no outbound request is made), hostile kids (with
a PEM key and with a JWKS), crit in any form, non-strict base64url
(padding, + and /, non-canonical trailing bits, whitespace), 1/2/4/5
segments, odd signature lengths, duplicate claims, invalid UTF-8 and NUL
in claims, non-object payloads, exp/nbf of every wrong type and range,
16 KiB tokens, two Authorization lines, two tokens. Each gets its
documented status, never a 500, and no trace of any token reaches any log
(cfpm at log_level debug with an access log, nginx, PostgreSQL).

Bodies and requests: oversized bodies, wrong media types, every truncation
of a valid body, nesting 10,000+ deep, hostile kind/payload values, invalid
UTF-8 and NUL, SQL metacharacters stored verbatim, hostile ids, very long
paths, unknown methods. Rejected writes add no row; no worker dies.
"""

import base64
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402

POOL = 3
BENCH_BODY = ct.BENCH_BODY
OK_BODY = {"sub": ct.SUBJECT, "scope": ct.SCOPE}
H = '{"alg":"RS256","typ":"JWT","kid":"bench-1"}'

ERRORS = {400: "invalid_request", 401: "invalid_token",
          403: "insufficient_scope", 404: "not_found",
          405: "method_not_allowed", 413: "payload_too_large",
          415: "unsupported_media_type"}


# ---------------------------------------------------------------------------
# Token building (signatures over the exact bytes given)

def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_padded(data):
    return base64.urlsafe_b64encode(data).decode("ascii")


def b64std(data):
    return base64.b64encode(data).rstrip(b"=").decode("ascii")


def noncanonical(seg):
    """seg with the unused low bits of its last character set (decodes to
    the same bytes with a lenient decoder); None if it has none."""
    if len(seg) % 4 not in (2, 3):
        return None
    alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    v = alpha.index(seg[-1])
    return seg[:-1] + alpha[v ^ 1]


def to_bytes(x):
    return x if isinstance(x, bytes) else x.encode("utf-8")


def openssl_sign(keyfile, data, alg="RS256"):
    argv = ["openssl", "dgst", "-sha384" if alg == "RS384" else "-sha256"]
    if alg == "PS256":
        argv += ["-sigopt", "rsa_padding_mode:pss",
                 "-sigopt", "rsa_pss_saltlen:32"]
    argv += ["-sign", keyfile]
    p = subprocess.run(argv, input=data, capture_output=True, timeout=30)
    if p.returncode != 0:
        raise RuntimeError("openssl dgst failed: %r" % p.stderr[-300:])
    return p.stdout


def jws(keys, header, payload, alg="RS256", enc=b64u):
    """header.payload.signature with the header and payload bytes encoded
    by enc and signed (alg) over exactly the encoded text."""
    si = enc(to_bytes(header)) + "." + enc(to_bytes(payload))
    return si + "." + b64u(openssl_sign(keys.priv, si.encode("ascii"),
                                        alg))


def sign_text(keys, signing_input, alg="RS256"):
    """A token over a given signing input text (already encoded)."""
    return signing_input + "." + b64u(openssl_sign(
        keys.priv, signing_input.encode("ascii"), alg))


class Listener:
    """A TCP listener on 127.0.0.1 that counts every connection made to it
    (stands in for jku/x5u targets: cfpm must never connect)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = []
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.halt.is_set():
            try:
                c, addr = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            try:
                c.settimeout(1)
                data = c.recv(4096)
            except OSError:
                data = b""
            self.connections.append((addr, data[:200]))
            try:
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: "
                          b"application/json\r\n\r\n{\"keys\":[]}")
            except OSError:
                pass
            c.close()

    def close(self):
        self.halt.set()
        self.thread.join(2)
        self.sock.close()


# ---------------------------------------------------------------------------
# Checking answers

class Check:
    """Records every answer; one TAP line per case."""

    def __init__(self, st):
        self.st = st
        self.tap = st.tap
        self.answers = []       # (desc, status)

    def expect(self, r, desc, want, nginx=(), www=False, scope=None,
               body=None):
        """want: statuses cfpm may answer (each with its JSON error code,
        or 200/201; "401u" is 401 unauthorized, the answer to credentials
        of another scheme); nginx: statuses nginx itself may answer
        (non-JSON). www: check the RFC 6750 challenge of 400/401/403."""
        unauth = "401u" in want
        want = {401 if w == "401u" else w for w in want}
        self.answers.append((desc, r.status))
        probs = []
        ctype = r.header("content-type") or ""
        from_cfpm = ctype == "application/json"
        if r.status >= 500 or r.status == 0:
            probs.append("status %d %s (never a 5xx, never a dropped "
                         "connection)" % (r.status, r.reason))
        elif from_cfpm and r.status not in want:
            probs.append("cfpm answered %d, want %r" % (r.status,
                                                        sorted(want)))
        elif not from_cfpm and r.status not in nginx:
            probs.append("%d with Content-Type %r: want cfpm's %r or "
                         "nginx's %r" % (r.status, ctype, sorted(want),
                                         sorted(nginx)))
        if from_cfpm and r.status in ERRORS and not probs:
            j = r.json()
            code = ERRORS[r.status]
            if unauth and r.status == 401 and isinstance(j, dict) and \
                    j.get("error") == "unauthorized":
                code = "unauthorized"
            if not isinstance(j, dict) or j.get("error") != code:
                probs.append("body %r, want error %s" % (r.body[:200],
                                                         code))
            if www:
                w = {400: ct.WWW_INVALID_REQUEST,
                     401: ct.WWW_INVALID_TOKEN}.get(r.status)
                if code == "unauthorized":
                    w = ct.WWW_NONE
                if r.status == 403:
                    w = ct.www_scope(scope)
                if w and r.header("www-authenticate") != w:
                    probs.append("WWW-Authenticate %r, want %r" %
                                 (r.header("www-authenticate"), w))
        if body is not None and from_cfpm and r.status in (200, 201) and \
                r.json() != body:
            probs.append("body %r, want %r" % (r.body[:200], body))
        if not probs and (len(want) > 1 or not from_cfpm):
            self.tap.diag("%s: answered %d%s" % (
                desc, r.status, "" if from_cfpm else " (by nginx)"))
        return self.tap.ok(not probs, desc, *probs)

    def server_errors(self):
        return [(d, s) for d, s in self.answers if s >= 500 or s == 0]


# ---------------------------------------------------------------------------
# Token cases: tables of named cases, in the order they run. Each builds
# its token from a TokenKit (the keys, the time, the good token and its
# parts); a build that returns None does not apply to today's token (a
# signature without + or /, a segment without spare bits) and is left out.
# The statuses are the documented ones for GET /auth; POST /events gets the
# same (201 in place of 200).

OK200 = ({200}, ())         # (cfpm's statuses, nginx's own statuses)
I401 = ({401}, ())


class TokenCase:
    """desc: the TAP description ("{len}" stands for the token's length);
    build(kit) -> the token (or the whole Authorization value if bare),
    or None; want: (cfpm's statuses, nginx's statuses)."""

    def __init__(self, desc, build, want=I401, bare=False):
        self.desc, self.build, self.want, self.bare = desc, build, want, bare


class TokenKit:
    """What the token cases are made of: the server's keys (k) and the
    attacker's, the jku/x5u listener's URL, now, the bench claims C (as
    JSON text), and a good token signed here over them: its segments gh,
    gp, gs and its signature's bytes gsig; vs is the signature of the
    harness's valid token (other claims)."""

    def __init__(self, st, listener, attacker):
        self.k = st.keys
        self.attacker = attacker
        self.now = int(time.time())
        self.vs = st.tokens["valid"].split(".")[2]
        self.C = self.claims()
        self.good = sign_text(self.k, b64u(H.encode()) + "." +
                              b64u(self.C.encode()))
        self.gh, self.gp, self.gs = self.good.split(".")
        self.gsig = base64.urlsafe_b64decode(self.gs +
                                             "=" * (-len(self.gs) % 4))
        with open(self.k.pub, "rb") as f:
            self.pem = f.read()
        with open(attacker.jwks) as f:
            self.ajwk = json.load(f)["keys"][0]
        self.port = listener.port
        self.url = "http://127.0.0.1:%d" % listener.port

    def claims(self, **kw):
        """The bench claims at now, kw added or replacing (None drops)."""
        return ct.claims_json(self.now, **kw)

    def raw_claims(self, **kw):
        """claims() with members given as raw JSON text."""
        text = self.claims(**{n: None for n in kw})[:-1]
        for n, v in kw.items():
            text += ',"%s":%s' % (n, v)
        return text + "}"

    def jws(self, header, payload, alg="RS256"):
        """header.payload signed with the server's key (see jws())."""
        return jws(self.k, header, payload, alg)

    def signed(self, signing_input):
        """A token over a given signing input, with the server's key."""
        return sign_text(self.k, signing_input)

    def with_sig(self, sig):
        """The good header and payload with signature bytes sig."""
        return self.gh + "." + self.gp + "." + b64u(sig)

    def signed_segments(self, header_seg, payload_seg):
        """A token over the two segments as given; None if one is None."""
        si = dotted(header_seg, payload_seg)
        return None if si is None else self.signed(si)

    def unsigned(self, header):
        """header.C. with an empty signature."""
        return b64u(header.encode()) + "." + b64u(self.C.encode()) + "."


def hdr(alg_json, rest=',"typ":"JWT","kid":"bench-1"'):
    """A JOSE header whose alg member is the JSON text alg_json."""
    return '{"alg":%s%s}' % (alg_json, rest)


def hs256(kit, key):
    """An HS256 token over C keyed with key (the confusion attack)."""
    si = b64u(hdr('"HS256"').encode()) + "." + b64u(kit.C.encode())
    return si + "." + b64u(hmac.new(key, si.encode(),
                                    hashlib.sha256).digest())


def padded_json(text):
    """text with spaces before its closing brace until its length is not a
    multiple of 3 (so its base64url needs padding)."""
    while len(text) % 3 == 0:
        text = text[:-1] + " }"
    return text


def standard_only(text):
    """text grown until its standard base64 differs from its base64url
    (holds + or /)."""
    while b64std(text.encode()) == b64u(text.encode()):
        text = text[:-1] + ',"x":"%s"}' % ("?>~" * 3)
    return text


def if_changed(a, b):
    """b, or None when it is a (the case does not apply)."""
    return None if b == a else b


def dotted(*segs):
    """The segments joined by dots; None if one of them is None (the case
    does not apply)."""
    return None if None in segs else ".".join(segs)


CONTROL_CASES = (
    TokenCase("control: a token signed here over the bench claims",
              lambda t: t.good, OK200),
    TokenCase("control: nbf negative (-1: 1969, a valid past date)",
              lambda t: t.jws(H, t.raw_claims(nbf="-1")), OK200),
)

PEM_KEYS = (
    ("the PEM file bytes", lambda pem: pem),
    ("the PEM without its final newline", lambda pem: pem.rstrip()),
    ("the PEM body (base64 only)", lambda pem: b"".join(
        l for l in pem.splitlines() if not l.startswith(b"-----"))),
)

ALG_CASES = tuple(
    TokenCase("alg %s, empty signature" % alg,
              lambda t, alg=alg: t.unsigned(hdr('"%s"' % alg)))
    for alg in ("none", "None", "NONE", "nOnE")) + (
    TokenCase("alg none with a valid RS256 signature",
              lambda t: t.jws(hdr('"none"'), t.C)),
    TokenCase("alg missing",
              lambda t: t.jws('{"typ":"JWT","kid":"bench-1"}', t.C)),
    TokenCase("alg rs256 (lower case)", lambda t: t.jws(hdr('"rs256"'), t.C)),
    TokenCase("alg \"RS256 \" (trailing space)",
              lambda t: t.jws(hdr('"RS256 "'), t.C)),
    TokenCase("alg empty", lambda t: t.jws(hdr('""'), t.C)),
    TokenCase("alg null", lambda t: t.jws(hdr("null"), t.C)),
    TokenCase("alg [\"RS256\"]", lambda t: t.jws(hdr('["RS256"]'), t.C)),
    TokenCase("alg RS256\\u0000",
              lambda t: t.jws(hdr('"RS256\\u0000"'), t.C)),
) + tuple(
    TokenCase("HS256 keyed with %s" % desc,
              lambda t, key=key: hs256(t, key(t.pem)))
    for desc, key in PEM_KEYS) + (
    TokenCase("RS384 (a real RS384 signature)",
              lambda t: t.jws(hdr('"RS384"'), t.C, alg="RS384")),
    TokenCase("PS256 (a real PSS signature)",
              lambda t: t.jws(hdr('"PS256"'), t.C, alg="PS256")),
    TokenCase("alg RS256 but a PSS signature",
              lambda t: t.jws(H, t.C, alg="PS256")),
    TokenCase("alg PS256 with a PKCS#1 v1.5 signature",
              lambda t: t.jws(hdr('"PS256"'), t.C)),
)

# Headers carrying keys or key URLs, each signed by the attacker's key.
ATTACKER_HEADERS = (
    ("embedded jwk (attacker's key, kid bench-1)",
     lambda t: {"alg": "RS256", "kid": "bench-1", "jwk": t.ajwk}),
    ("embedded jwk, no kid", lambda t: {"alg": "RS256", "jwk": t.ajwk}),
    ("jku to a local listener",
     lambda t: {"alg": "RS256", "kid": "bench-1",
                "jku": t.url + "/jwks.json"}),
    ("jku (https) with an unknown kid",
     lambda t: {"alg": "RS256", "kid": "attacker-1",
                "jku": "https://127.0.0.1:%d/jwks.json" % t.port}),
    ("x5u to a local listener",
     lambda t: {"alg": "RS256", "kid": "bench-1", "x5u": t.url + "/cert.pem"}),
    ("jku and x5u, no kid",
     lambda t: {"alg": "RS256", "jku": t.url + "/a", "x5u": t.url + "/b"}),
    ("x5c (self-made chain)",
     lambda t: {"alg": "RS256", "kid": "bench-1", "x5c": [t.ajwk["n"]]}),
)

EMBEDDED_KEY_CASES = tuple(
    TokenCase("%s, signed by the attacker" % desc,
              lambda t, h=h: jws(t.attacker, json.dumps(h(t)), t.C))
    for desc, h in ATTACKER_HEADERS) + (
    TokenCase("jku to a local listener, signed by the real key (unknown "
              "header parameters may be ignored: 200 or 401, but no fetch)",
              lambda t: t.jws(json.dumps({"alg": "RS256", "kid": "bench-1",
                                          "jku": t.url + "/real"}), t.C),
              ({200, 401}, ())),
)

KID_CASES = tuple(
    TokenCase("kid %s" % desc,
              lambda t, kid=kid: t.jws(
                  '{"alg":"RS256","typ":"JWT","kid":%s}' % kid, t.C))
    for desc, kid in (("unknown", '"nope"'),
                      ("../../etc/passwd", '"../../etc/passwd"'),
                      ("/dev/zero", '"/dev/zero"'),
                      ("4 KiB long", '"%s"' % ("k" * 4096)),
                      ("numeric", "1"), ("null", "null"), ("empty", '""'),
                      ("an object", '{"kid":"bench-1"}'),
                      ("bench-1 with a NUL", '"bench-1\\u0000"'),
                      ("bench-1 with a trailing space", '"bench-1 "')))

CRIT_CASES = tuple(
    TokenCase("crit %s" % desc,
              lambda t, crit=crit: t.jws(
                  '{"alg":"RS256","typ":"JWT","kid":"bench-1",%s}' % crit,
                  t.C))
    for desc, crit in (('["exp"]', '"crit":["exp"]'),
                       ("[] (empty)", '"crit":[]'),
                       ('"exp" (a string)', '"crit":"exp"'),
                       ("null", '"crit":null'), ("{}", '"crit":{}'),
                       ('["b64"] with b64 false',
                        '"crit":["b64"],"b64":false'),
                       ('["x-ext"] with x-ext present',
                        '"crit":["x-ext"],"x-ext":1'),
                       ("false", '"crit":false')))

# base64url strictness: where the token is signed, over the text as sent.
BASE64URL_CASES = (
    TokenCase("= padding on the header (signed as sent)",
              lambda t: t.signed(b64u_padded(padded_json(H).encode()) +
                                 "." + b64u(t.C.encode()))),
    TokenCase("= padding on the payload (signed as sent)",
              lambda t: t.signed(b64u(H.encode()) + "." +
                                 b64u_padded(padded_json(t.C).encode()))),
    TokenCase("= padding on the signature",
              lambda t: t.good + "=" * (-len(t.gs) % 4 or 4)),
    TokenCase("== padding on a signature that needs none",
              lambda t: t.good + "=="),
    TokenCase("payload in standard base64 (+ and /, signed as sent)",
              lambda t: t.signed(b64u(H.encode()) + "." +
                                 b64std(standard_only(t.C).encode()))),
    TokenCase("signature in standard base64 (+ /)",
              lambda t: dotted(t.gh, t.gp, if_changed(
                  t.gs, t.gs.replace("-", "+").replace("_", "/")))),
    TokenCase("signature with non-canonical trailing bits",
              lambda t: dotted(t.gh, t.gp, noncanonical(t.gs))),
    TokenCase("header with non-canonical trailing bits (signed as sent)",
              lambda t: t.signed_segments(noncanonical(b64u(H.encode())),
                                          b64u(t.C.encode()))),
    TokenCase("payload with non-canonical trailing bits (signed as sent)",
              lambda t: t.signed_segments(b64u(H.encode()),
                                          noncanonical(b64u(t.C.encode())))),
    TokenCase("a character outside base64url (!) in the payload",
              lambda t: t.gh + "." + t.gp[:10] + "!" + t.gp[11:] + "." +
              t.gs),
    TokenCase("a space inside the token (two tokens)",
              lambda t: t.gh + "." + t.gp[:20] + " " + t.gp[20:] + "." +
              t.gs, ({400, 401}, ())),
    TokenCase("a tab inside the signature",
              lambda t: t.gh + "." + t.gp + "." + t.gs[:30] + "\t" +
              t.gs[30:], ({400, 401}, (400,))),
    TokenCase("a token of one length-1-mod-4 segment",
              lambda t: t.gh + "." + t.gp + "." + t.gs + "A"),
)

SEGMENT_CASES = (
    TokenCase("1 segment", lambda t: t.gh),
    TokenCase("1 segment (the whole token without dots)",
              lambda t: t.gh + t.gp + t.gs),
    TokenCase("2 segments", lambda t: t.gh + "." + t.gp),
    TokenCase("2 segments with a trailing dot",
              lambda t: t.gh + "." + t.gp + "."),
    TokenCase("4 segments", lambda t: t.good + "." + t.gs),
    TokenCase("4 segments (empty last)", lambda t: t.good + "."),
    TokenCase("5 segments", lambda t: t.good + "." + t.gh + "." + t.gp),
    TokenCase("only dots", lambda t: "..."),
    TokenCase("two dots", lambda t: ".."),
)

SIGNATURE_CASES = (
    TokenCase("empty signature", lambda t: t.gh + "." + t.gp + "."),
    TokenCase("255-byte signature (first byte dropped)",
              lambda t: t.with_sig(t.gsig[1:])),
    TokenCase("255-byte signature (last byte dropped)",
              lambda t: t.with_sig(t.gsig[:-1])),
    TokenCase("257-byte signature (leading zero byte)",
              lambda t: t.with_sig(b"\0" + t.gsig)),
    TokenCase("257-byte signature (trailing byte)",
              lambda t: t.with_sig(t.gsig + b"\0")),
    TokenCase("256 zero bytes", lambda t: t.with_sig(b"\0" * 256)),
    TokenCase("256 0xff bytes", lambda t: t.with_sig(b"\xff" * 256)),
    TokenCase("256-byte signature 01 00 .. 00 (a small integer)",
              lambda t: t.with_sig(b"\x01" + b"\0" * 255)),
    TokenCase("1-byte signature", lambda t: t.with_sig(b"\x01")),
    TokenCase("512-byte signature", lambda t: t.with_sig(t.gsig + t.gsig)),
    TokenCase("the bench token's signature on other claims",
              lambda t: t.gh + "." + t.gp + "." + t.vs),
)

# (claim, what, first value, second value): JSON text made from a kit.
DUPLICATE_CLAIMS = (
    ("exp", "expired, then valid",
     lambda t: str(t.now - 10), lambda t: str(t.now + 3600)),
    ("exp", "valid, then expired",
     lambda t: str(t.now + 3600), lambda t: str(t.now - 10)),
    ("iss", "foreign, then ours",
     lambda t: '"https://evil.example"', lambda t: json.dumps(ct.ISSUER)),
    ("aud", "other, then ours",
     lambda t: '"other"', lambda t: json.dumps(ct.AUDIENCE)),
    ("sub", "admin, then ours",
     lambda t: '"admin"', lambda t: json.dumps(ct.SUBJECT)),
    ("scope", "read, then read+write",
     lambda t: '"events:read"', lambda t: '"events:read events:write"'),
    ("nbf", "future, then past",
     lambda t: str(t.now + 3600), lambda t: str(t.now - 60)),
)


def duplicated(t, n, first, second):
    """C with claim n twice: first, then second."""
    return t.claims(**{n: None})[:-1] + ',"%s":%s,"%s":%s}' % (
        n, first, n, second)


DUPLICATE_CLAIM_CASES = tuple(
    TokenCase("duplicate %s (%s)" % (n, what),
              lambda t, n=n, a=a, b=b: t.jws(H, duplicated(t, n, a(t),
                                                           b(t))))
    for n, what, a, b in DUPLICATE_CLAIMS) + (
    TokenCase("duplicate kid in the header",
              lambda t: t.jws('{"alg":"RS256","kid":"nope","kid":"bench-1"}',
                              t.C)),
)

# Claim values that are not UTF-8 (claim name, raw JSON bytes).
INVALID_UTF8_CLAIMS = (
    ("sub", b'"client-bench\xff"'),
    ("iss", b'"https://auth.bench.local\xc0\xaf"'),
    ("scope", b'"events:read \xed\xa0\x80"'),
    ("custom claim", b'"\xf8\x88\x80\x80\x80"'),
)
# What each claim holds before the \u0000 appended to it.
NUL_CLAIM_VALUES = (("sub", ct.SUBJECT), ("iss", ct.ISSUER),
                    ("aud", ct.AUDIENCE), ("scope", ct.SCOPE), ("x", "y"))


def with_raw_claim(t, n, raw):
    """C (as bytes) with claim n replaced by the raw JSON bytes raw."""
    return t.claims(**{n: None}).encode()[:-1] + b',"' + n.encode() + \
        b'":' + raw + b"}"


UTF8_NUL_CASES = tuple(
    TokenCase("invalid UTF-8 in %s" % desc,
              lambda t, desc=desc, raw=raw: t.jws(H, with_raw_claim(
                  t, "x" if desc == "custom claim" else desc, raw)))
    for desc, raw in INVALID_UTF8_CLAIMS) + (
    TokenCase("invalid UTF-8 in a claim name",
              lambda t: t.jws(H, t.C.encode()[:-1] + b',"\xff":1}')),
) + tuple(
    TokenCase("\\u0000 in %s" % (n if n != "x" else "a custom claim"),
              lambda t, n=n, v=v: t.jws(
                  H, t.claims(**{n: None})[:-1] +
                  ',"%s":"%s\\u0000z"}' % (n, v)))
    for n, v in NUL_CLAIM_VALUES) + (
    TokenCase("\\u0000 in a claim name",
              lambda t: t.jws(H, t.C[:-1] + ',"a\\u0000b":1}')),
    TokenCase("raw NUL byte in the payload JSON",
              lambda t: t.jws(H, t.C.encode()[:-1] + b',"x":"a\x00b"}')),
)

PAYLOAD_CASES = tuple(
    TokenCase("payload %s" % desc, lambda t, p=p: t.jws(H, p(t)))
    for desc, p in (("an array", lambda t: "[%s]" % t.C),
                    ("a number", lambda t: "12345"),
                    ("a string", lambda t: json.dumps(t.C)),
                    ("null", lambda t: "null"), ("true", lambda t: "true"),
                    ("empty", lambda t: ""),
                    ("an empty object", lambda t: "{}"),
                    ("an object and trailing data", lambda t: t.C + "x")))

# Wrong types and ranges of a NumericDate (JSON text made from a kit).
BAD_DATES = (
    ("a string", lambda t: '"%d"' % (t.now + 3600)),
    ("true", lambda t: "true"), ("false", lambda t: "false"),
    ("null", lambda t: "null"), ("1e400", lambda t: "1e400"),
    ("-1e400", lambda t: "-1e400"), ("2^63", lambda t: str(2 ** 63)),
    ("2^64", lambda t: str(2 ** 64)),
    ("-2^63-1", lambda t: str(-2 ** 63 - 1)),
    ("an array", lambda t: "[%d]" % (t.now + 3600)),
    ("an object", lambda t: "{}"), ("NaN", lambda t: "NaN"),
    ("Infinity", lambda t: "Infinity"),
)

EXP_NBF_CASES = tuple(
    TokenCase("%s %s" % (n, desc),
              lambda t, n=n, v=v: t.jws(H, t.raw_claims(**{n: v(t)})))
    for n in ("exp", "nbf") for desc, v in BAD_DATES) + (
    TokenCase("exp negative (-1)", lambda t: t.jws(H, t.raw_claims(exp="-1"))),
    TokenCase("exp 0", lambda t: t.jws(H, t.raw_claims(exp="0"))),
    TokenCase("nbf 2^63-1 (far future)",
              lambda t: t.jws(H, t.raw_claims(nbf=str(2**63 - 1)))),
)

# Valid tokens whose scope lacks the word (403).
SCOPE_CASES = tuple(
    TokenCase("scope %s" % desc,
              lambda t, sc=sc: t.jws(H, t.claims(scope=sc)), ({403}, ()))
    for desc, sc in (("words separated by a tab",
                      "events:read\tevents:write"),
                     ("words separated by a comma",
                      "events:read,events:write"),
                     ("Cyrillic look-alike letters",
                      "events:re\u0430d events:writ\u0435"),
                     ("upper case", "EVENTS:READ EVENTS:WRITE"),
                     ("a prefix of each word", "events:rea events:writ")))

BIG_PAD = 12000             # claim bytes that make a 16 KiB token
FITS_PAD = 5000             # ... and one under cfpm's 8 KiB
SIZE_CASES = (
    TokenCase("16 KiB validly signed token ({len} bytes)",
              lambda t: t.jws(H, t.claims(pad="p" * BIG_PAD)),
              ({401}, (400,))),
    TokenCase("16 KiB of base64url", lambda t: "A" * 16384, ({401}, (400,))),
    TokenCase("a {len}-byte validly signed token (under 8 KiB) is accepted",
              lambda t: t.jws(H, t.claims(pad="p" * FITS_PAD)), OK200),
)

# Authorization values given whole (bare): the header's shape.
AUTHORIZATION_CASES = (
    TokenCase("Bearer with two tokens",
              lambda t: "Bearer " + t.good + " " + t.good, ({400}, ()),
              bare=True),
    TokenCase("Bearer with two tokens, garbage first",
              lambda t: "Bearer x " + t.good, ({400}, ()), bare=True),
    TokenCase("Bearer with two comma-separated tokens",
              lambda t: "Bearer " + t.good + "," + t.good, ({400, 401}, ()),
              bare=True),
    TokenCase("Bearer followed by a tab and the token (not 1*SP: malformed "
              "or another scheme)", lambda t: "Bearer\t" + t.good,
              ({400, "401u"}, (400,)), bare=True),
    TokenCase("a vertical tab inside the token",
              lambda t: "Bearer " + t.gh + "\x0b" + t.gp + "." + t.gs,
              ({400, 401}, (400,)), bare=True),
)

TOKEN_CASES = (CONTROL_CASES + ALG_CASES + EMBEDDED_KEY_CASES + KID_CASES +
               CRIT_CASES + BASE64URL_CASES + SEGMENT_CASES +
               SIGNATURE_CASES + DUPLICATE_CLAIM_CASES + UTF8_NUL_CASES +
               PAYLOAD_CASES + EXP_NBF_CASES + SCOPE_CASES + SIZE_CASES +
               AUTHORIZATION_CASES)


def token_cases(st, listener, attacker):
    """(desc, Authorization value, GET /auth statuses, nginx statuses) of
    every case of TOKEN_CASES that applies, in order, built now."""
    kit = TokenKit(st, listener, attacker)
    out = []
    for case in TOKEN_CASES:
        tok = case.build(kit)
        if tok is None:
            continue
        out.append((case.desc.replace("{len}", str(len(tok))),
                    tok if case.bare else "Bearer " + tok,
                    case.want[0], case.want[1]))
    return out


def run_token_cases(st, chk, cases):
    for desc, auth, want, nginx in cases:
        r = st.get("/auth", auth=auth)
        chk.expect(r, "GET /auth, token: %s" % desc, want, nginx, www=True,
                   scope="events:read",
                   body=OK_BODY if want == {200} else None)
        pw = {201 if s == 200 else s for s in want}
        r = st.post("/events", '{"kind":"hostile-token","payload":{}}',
                    auth=auth)
        chk.expect(r, "POST /events, token: %s" % desc, pw, nginx,
                   www=True, scope="events:write")
    # Forms http.client cannot send.
    good = cases[0][1][len("Bearer "):]
    for desc, lines in (
            ("two Authorization lines, both valid",
             [("Authorization", "Bearer " + good)] * 2),
            ("two Authorization lines, garbage then valid",
             [("Authorization", "Bearer x.y.z"),
              ("Authorization", "Bearer " + good)]),
            ("two Authorization lines, valid then garbage",
             [("Authorization", "Bearer " + good),
              ("Authorization", "Bearer x.y.z")])):
        r = st.raw("GET", "/auth", lines)
        chk.expect(r, "GET /auth: %s is 400" % desc, {400}, (400,),
                   www=True)
    r = ct.http_raw(st.http_port, ct.build_raw("GET", "/auth", [])[:-2] +
                    b"Authorization: Bearer " + good[:100].encode() +
                    b"\r\n " + good[100:].encode() + b"\r\n\r\n")
    chk.expect(r, "GET /auth: token folded over two header lines "
               "(obs-fold)", {400, 401}, (400,), www=True)
    # Past nginx, straight to cfpm over FastCGI: the 8 KiB limit is cfpm's.
    big = [a for d, a, _, _ in cases if d.startswith("16 KiB validly")][0]
    r = st.fcgi("GET", "/auth", {"Authorization": big})
    chk.expect(r, "FastCGI (no nginx): 16 KiB validly signed token is 401",
               {401}, (), www=True)
    r = st.fcgi("GET", "/auth", {"Authorization": "Bearer " + "A" * 65536})
    chk.expect(r, "FastCGI (no nginx): 64 KiB token is 401", {401}, (),
               www=True)


def kid_cases_jwks(st, chk, listener):
    """The kid cases again with a JWKS of two keys (bench-1, bench-2)."""
    k1 = st.keys
    k2 = ct.Keys(os.path.join(st.dir, "keys-b2"), kid="bench-2")
    both = ct.write_jwks(os.path.join(st.dir, "jwks-hostile.json"), k1, k2)
    st.start_cfpm(hostile_settings(st, {"auth.key_file": both,
                                        "auth.key_id": None}))
    now = int(time.time())
    C = json.dumps({"iss": ct.ISSUER, "aud": ct.AUDIENCE, "sub": ct.SUBJECT,
                    "scope": ct.SCOPE, "nbf": now - 60, "exp": now + 3600})
    url = "http://127.0.0.1:%d/jwks.json" % listener.port
    cases = [
        ("kid bench-1 (control)", k1, '"bench-1"', None, {200}),
        ("kid bench-2 (control)", k2, '"bench-2"', None, {200}),
        ("kid bench-2 signed by key 1", k1, '"bench-2"', None, {401}),
        ("no kid with two keys", k1, None, None, {401}),
        ("kid unknown", k1, '"nope"', None, {401}),
        ("kid ../../etc/passwd", k1, '"../../etc/passwd"', None, {401}),
        ("kid ../keys/jwt.pub.pem", k1, '"../keys/jwt.pub.pem"', None,
         {401}),
        ("kid 4 KiB long", k1, '"%s"' % ("b" * 4096), None, {401}),
        ("kid numeric", k1, "1", None, {401}),
        ("kid null", k1, "null", None, {401}),
        ("kid empty", k1, '""', None, {401}),
        ("kid bench-1 with a NUL", k1, '"bench-1\\u0000"', None, {401}),
        ("kid bench-1 prefix", k1, '"bench-"', None, {401}),
        ("kid an array of both", k1, '["bench-1","bench-2"]', None, {401}),
        ("jku with an unknown kid", k1, '"attacker"', url, {401}),
    ]
    secrets = []
    for desc, key, kid, jku, want in cases:
        h = '{"alg":"RS256","typ":"JWT"'
        if kid is not None:
            h += ',"kid":%s' % kid
        if jku:
            h += ',"jku":"%s"' % jku
        tok = jws(key, h + "}", C)
        secrets.append(tok)
        r = st.get("/auth", tok)
        chk.expect(r, "JWKS: GET /auth, %s" % desc, want, (), www=True,
                   body=OK_BODY if want == {200} else None)
    st.stop_cfpm()
    return secrets


# ---------------------------------------------------------------------------
# Body and request cases: tables of named cases, in the order they run;
# each case is a callable given the BodyRun they share.

JSON_TYPE = "application/json"
BODY_TIMEOUT_S = 30         # a POST of a body case (MiB bodies, loaded CI)
CHUNK = 8192                # the chunked body's chunk size
CHUNKED_BODY = ('{"kind":"a","payload":{"p":"%s"}}' % ("x" * 100000)).encode()


def nested(depth, array=False, closed=True):
    if array:
        inner = "[" * (depth - 2) + ("]" * (depth - 2) if closed else "")
        return '{"kind":"deep","payload":{"a":%s}}' % inner
    inner = '{"a":' * (depth - 2) + "{}" + ("}" * (depth - 2)
                                             if closed else "")
    return '{"kind":"deep","payload":%s}' % inner


def chunked(data, size):
    """data in HTTP/1.1 chunks of size bytes, with the last chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + size]),
                                       data[i:i + size])
                    for i in range(0, len(data), size)) + b"0\r\n\r\n"


class BodyRun:
    """The state the body cases share: the stack, the checker, the token,
    and the ids of the rows the 201s wrote."""

    def __init__(self, st, chk):
        self.st, self.chk, self.tap = st, chk, st.tap
        self.tok = st.tokens["valid"]
        self.auth = ("Authorization", "Bearer " + self.tok)
        self.written = []

    def wrote(self, r):
        """Keeps the id of a 201."""
        if r.status == 201:
            self.written.append((r.json() or {}).get("id"))

    def post(self, desc, body, want, nginx=(), ctype=JSON_TYPE):
        """POST /events through nginx, checked (desc after "POST /events:
        "); returns the Response."""
        r = self.st.post("/events", body, self.tok, ctype=ctype,
                         timeout=BODY_TIMEOUT_S)
        self.chk.expect(r, "POST /events: %s" % desc, want, nginx)
        self.wrote(r)
        return r

    def read_back(self, r):
        """GET of the row r's 201 wrote (r itself if it wrote none)."""
        i = (r.json() or {}).get("id")
        return self.st.get("/events/%s" % i, self.tok) if type(i) is int \
            else r


class Post:
    """One POST /events of body: cfpm answers one of want (nginx may
    answer one of nginx), with Content-Type ctype."""

    def __init__(self, desc, body, want, nginx=(), ctype=JSON_TYPE):
        self.desc, self.body, self.want = desc, body, want
        self.nginx, self.ctype = nginx, ctype

    def __call__(self, run):
        run.post(self.desc, self.body, self.want, self.nginx, self.ctype)


class StoredAs:
    """A POST that must be 201, then a GET of its row: 200 with members
    (a dict: each member's value as stored). back: the TAP description
    of the read ("{reply}" stands for the reply's length)."""

    def __init__(self, desc, body, back, members):
        self.desc, self.body, self.back, self.members = \
            desc, body, back, members

    def __call__(self, run):
        g = run.read_back(run.post(self.desc, self.body, {201}))
        gj = g.json() or {}
        run.tap.ok(g.status == 200 and
                   all(gj.get(k) == v for k, v in self.members.items()),
                   self.back.replace("{reply}", str(len(g.body))),
                   "got %r" % g)


class RawPost:
    """A POST /events written byte by byte (headers beside Authorization,
    then tail: a body in chunks, or none): 413 from cfpm or nginx. desc:
    "{elapsed}" stands for the seconds it took."""

    def __init__(self, desc, headers, tail, timeout):
        self.desc, self.headers, self.tail, self.timeout = \
            desc, headers, tail, timeout

    def __call__(self, run):
        r = ct.http_raw(run.st.http_port, ct.build_raw(
            "POST", "/events", [run.auth] + list(self.headers)) +
            self.tail, method="POST", timeout=self.timeout)
        run.chk.expect(r, self.desc.replace("{elapsed}", "%.2f" % r.elapsed),
                       {413}, (413,))


class RepeatedHeaders:
    """A POST whose headers (beside Authorization) http.client cannot
    send, such as a repeated Content-Type."""

    def __init__(self, desc, headers, body, want, nginx):
        self.desc, self.headers, self.body = desc, headers, body
        self.want, self.nginx = want, nginx

    def __call__(self, run):
        r = run.st.raw("POST", "/events", [run.auth] + list(self.headers),
                       self.body)
        run.chk.expect(r, "POST /events: %s" % self.desc, self.want,
                       self.nginx)
        run.wrote(r)


class Truncations:
    """Every proper prefix of body POSTed: each must be 400
    invalid_request; one TAP line for them all."""

    def __init__(self, body):
        self.body = body

    def __call__(self, run):
        bad = []
        for n in range(len(self.body)):
            r = run.st.post("/events", self.body[:n], run.tok)
            run.chk.answers.append(("prefix %d" % n, r.status))
            if r.status != 400 or (r.json() or {}).get("error") != \
                    "invalid_request":
                bad.append((n, r.status, r.body[:80]))
            run.wrote(r)
        run.tap.ok(not bad, "POST /events: each of the %d truncations of "
                   "the bench body is 400 invalid_request" % len(self.body),
                   "wrong: %r" % bad[:10])


class StoredVerbatim:
    """A POST of kind with SQL_PAYLOAD: 201, and the row reads back
    byte-exact through the API and in SQL (md5 of kind and payload.q)."""

    def __init__(self, kind):
        self.kind = kind

    def __call__(self, run):
        kd = self.kind
        body = json.dumps({"kind": kd, "payload": SQL_PAYLOAD})
        r = run.post("SQL metacharacters in kind %r stored" % kd[:20], body,
                     {201})
        i = (r.json() or {}).get("id")
        if type(i) is not int:
            return
        g = run.st.get("/events/%d" % i, run.tok)
        gj = g.json() or {}
        rows = run.st.pg.psql("SELECT md5(kind), md5(payload->>'q') FROM "
                              "events WHERE id = %d" % i)
        want = [hashlib.md5(kd.encode()).hexdigest(),
                hashlib.md5(SQL_PAYLOAD["q"].encode()).hexdigest()]
        run.tap.ok(g.status == 200 and gj.get("kind") == kd and
                   gj.get("payload") == SQL_PAYLOAD and rows == [want],
                   "kind %r and the quoted payload read back byte-exact (API "
                   "and SQL)" % kd[:20], "got %r" % g, "md5 %r want %r" %
                   (rows, want))


def table_intact(run):
    """After the SQL cases: the events table still exists."""
    run.tap.ok(run.st.pg.psql("SELECT to_regclass('events') IS NOT NULL") ==
               [["t"]], "the events table is still there")



SIZE_BODY_CASES = (
    Post("kind of 1 MiB (body over 64 KiB) is 413",
         '{"kind":"%s","payload":{}}' % ("k" * (1 << 20)), {413}, (413,)),
    Post("4 MiB body is 413", '{"kind":"a","payload":{"p":"%s"}}' %
         ("x" * (4 << 20)), {413}, (413,)),
    RawPost("POST /events: chunked body of 100 KB is 413",
            [("Content-Type", JSON_TYPE), ("Transfer-Encoding", "chunked")],
            chunked(CHUNKED_BODY, CHUNK), timeout=30),
    RawPost("POST /events: Content-Length 10^12 without a body is 413 at "
            "once ({elapsed}s)",
            [("Content-Type", JSON_TYPE), ("Content-Length", str(10 ** 12))],
            b"", timeout=10),
    StoredAs("kind of 60,000 characters (body under 64 KiB) is 201",
             '{"kind":"%s","payload":{"n":1}}' % ("K" * 60000),
             "the 60,000-character kind reads back whole",
             {"kind": "K" * 60000}),
    # Every DEL escapes to 6 bytes on output if the server escapes it:
    # the reply may be ~6x the body; it must still come back whole.
    StoredAs("kind of 60,000 DEL characters (escaping grows the reply)",
             '{"kind":"%s","payload":{"s":"%s"}}' % ("\x7f" * 30000,
                                                      "\x7f" * 30000),
             "the DEL-filled row reads back whole ({reply}-byte reply)",
             {"kind": "\x7f" * 30000, "payload": {"s": "\x7f" * 30000}}),
    StoredAs("payload of 20,000 \\u0001 escapes",
             '{"kind":"esc","payload":{"s":"%s"}}' % ("\\u0001" * 10000),
             "the control characters read back",
             {"payload": {"s": "\x01" * 10000}}),
)

MEDIA_TYPE_CASES = tuple(
    Post("Content-Type %r is 415" % ctype, BENCH_BODY, {415}, ctype=ctype)
    for ctype in ("application/xml", "", "application/json-seq",
                  "application/jsonp", "application/json/x",
                  "text/plain; x=application/json",
                  "application/x-json")) + (
    RepeatedHeaders("two Content-Type lines (text/plain first)",
                    [("Content-Type", "text/plain"),
                     ("Content-Type", JSON_TYPE)],
                    BENCH_BODY.encode(), {201, 400, 415}, (400,)),
)

TRUNCATED_CASES = (Truncations(BENCH_BODY),) + tuple(
    Post("truncated JSON, %s, is 400" % desc, body, {400})
    for desc, body in (
        ("cut inside a \\u escape", b'{"kind":"a\\u00'),
        ("cut inside a UTF-8 sequence", b'{"kind":"\xe2\x82'),
        ("cut after a backslash", b'{"kind":"a\\'),
        ("only an opening brace", b"{"),
        ("unterminated string to the end", b'{"kind":"' + b"a" * 60000)))

NESTING_CASES = tuple(
    Post("%s is 400" % desc, body, {400})
    for desc, body in (
        ("objects nested 10,000 deep", nested(10000)),
        ("arrays nested 10,000 deep", nested(10000, array=True)),
        ("arrays nested 32,000 deep (~64 KB)", nested(32000, array=True)),
        ("10,000 unclosed objects", nested(10000, closed=False)),
        ("60,000 unclosed arrays",
         '{"kind":"deep","payload":{"a":' + "[" * 60000),
        ("depth 10,000 in kind (an array)",
         '{"kind":%s,"payload":{}}' % ("[" * 10000 + "]" * 10000)),
        ("brackets inside strings do not count, but 65 real levels do",
         '{"kind":"[[[[","payload":%s}' %
         ('{"a":' * 64 + '"{{{{"' + "}" * 64)))) + (
    Post("64 real levels with 10,000 brackets inside strings is 201",
         '{"kind":"%s","payload":%s}' % ("[{" * 5000,
                                          '{"a":' * 62 + "{}" + "}" * 62),
         {201}),
)

VALUE_CASES = tuple(
    Post("%s is 400" % desc, body, {400})
    for desc, body in (
        ("kind empty", '{"kind":"","payload":{}}'),
        ("kind a number", '{"kind":7,"payload":{}}'),
        ("kind 1e400", '{"kind":1e400,"payload":{}}'),
        ("kind true", '{"kind":true,"payload":{}}'),
        ("kind an object", '{"kind":{},"payload":{}}'),
        ("kind duplicated", '{"kind":"a","kind":"b","payload":{}}'),
        ("payload duplicated", '{"kind":"a","payload":{},"payload":{}}'),
        ("payload an array of an object", '{"kind":"a","payload":[{}]}'),
        ("payload a string holding an object",
         '{"kind":"a","payload":"{\\"a\\":1}"}'),
        ("payload null", '{"kind":"a","payload":null}'),
        ("payload true", '{"kind":"a","payload":true}'),
        ("payload 1e400", '{"kind":"a","payload":1e400}'),
        ("payload key spelled with a non-ASCII escape",
         '{"kind":"a","p\\u00e1yload":{}}'),
        ("body a JSON array of 700 events",
         "[" + ",".join([BENCH_BODY] * 700) + "]"))) + (
    StoredAs("payload key spelled with \\u escapes is 201",
             '{"kind":"esc-key","pay\\u006c\\u006Fad":{"a":1}}',
             "the escaped payload key stores the right member",
             {"payload": {"a": 1}}),
    StoredAs("a decoy payload nested inside another member is 201",
             '{"x":{"payload":{"evil":1},"s":"\\"payload\\":{}"},'
             '"payload":{"good":"}\\"{["},"kind":"decoy"}',
             "the top-level payload is the one stored, not the decoy",
             {"payload": {"good": '}"{['}}),
)

UTF8_NUL_BODY_CASES = tuple(
    Post("%s is 400" % desc, body, {400})
    for desc, body in (
        ("invalid UTF-8 in a key", b'{"kind":"a","payload":{"\xff":1}}'),
        ("invalid UTF-8 deep in the payload",
         b'{"kind":"a","payload":{"a":[[{"b":"\xc3\x28"}]]}}'),
        ("a 5-byte UTF-8 sequence", b'{"kind":"\xf8\x88\x80\x80\x80",'
         b'"payload":{}}'),
        ("a code point past U+10FFFF",
         b'{"kind":"\xf4\x90\x80\x80","payload":{}}'),
        ("a truncated sequence before the quote",
         b'{"kind":"a\xe2\x82","payload":{}}'),
        ("invalid UTF-8 between tokens", b'{"kind":"a",\xff"payload":{}}'),
        ("latin-1 text", b'{"kind":"caf\xe9","payload":{}}'),
        ("a NUL in a key", b'{"kind":"a","payload":{"a\x00b":1}}'),
        ("\\u0000 in a key", b'{"kind":"a","payload":{"a\\u0000":1}}'),
        ("a NUL before the body", b'\x00{"kind":"a","payload":{}}'),
        ("64 KiB of NUL bytes", b"\x00" * 65536),
        ("a NUL between members", b'{"kind":"a",\x00"payload":{}}')))

# SQL metacharacters, stored verbatim: kinds, and the payload each carries.
SQL_KINDS = ("'); DROP TABLE events; --", "' OR '1'='1", "\\'; --",
             "$1 $$ $tag$ %s %d \\x00 \\\\", "a\"b\\c\n\t\r\u2028z",
             "ROLLBACK; DELETE FROM events")
SQL_PAYLOAD = {"q": "it's \"quoted\" \\ back\\slash; --",
               "'; DELETE FROM events; --": "$$",
               "nested": {"s": "%' AND 1=1 --", "u": "\u00e9\u0000"[:1],
                          "arr": ["\\", "'", '"', "\b\f\n\r\t"]}}
SQL_CASES = tuple(StoredVerbatim(kd) for kd in SQL_KINDS) + (table_intact,)

BODY_CASES = (SIZE_BODY_CASES + MEDIA_TYPE_CASES + TRUNCATED_CASES +
              NESTING_CASES + VALUE_CASES + UTF8_NUL_BODY_CASES + SQL_CASES)


def body_cases(st, chk):
    """POST /events bodies and odd requests: every case of BODY_CASES, in
    order. Returns the ids written."""
    run = BodyRun(st, chk)
    for case in BODY_CASES:
        case(run)
    return run.written


def request_cases(st, chk):
    tok = st.tokens["valid"]
    auth = [("Authorization", "Bearer " + tok)]
    tap = st.tap

    # -- ids ---------------------------------------------------------------
    for i in ("-1", "0", "1e3", "9223372036854775808", "18446744073709551615",
              "0x1", "1;2", "1,2", "1.", "+0", "2/../1", "1/", "%2D1",
              "\xef\xbc\x91"):   # last: fullwidth digit one (raw UTF-8)
        r = st.raw("GET", "/events/" + i, auth)
        chk.expect(r, "GET /events/%r is 404" % i, {404}, (400,))
    for i in ("%00", "1%00", "%00%31"):
        r = st.raw("GET", "/events/" + i, auth)
        chk.expect(r, "GET /events/%s is 404 or nginx's 400" % i, {404},
                   (400,))
    r = st.raw("GET", "/events/" + "0" * 7000 + "1", auth)
    chk.expect(r, "GET /events/{7,000 zeros}1 is row 1 (leading zeros "
               "allowed)", {200}, ())
    r = st.raw("GET", "/events/9223372036854775807", auth)
    chk.expect(r, "GET /events/2^63-1 is 404 (no such row)", {404}, ())

    # -- long paths --------------------------------------------------------
    for n in (8 * 1024, 100 * 1024):
        r = st.raw("GET", "/events/" + "1" * n, auth, timeout=20)
        chk.expect(r, "GET /events/{%d digits} is 404 or nginx's 414/400" %
                   n, {404}, (400, 414))
        r = st.raw("GET", "/" + "a/" * (n // 2), auth, timeout=20)
        chk.expect(r, "GET a %d-byte unknown path is 404 or nginx's "
                   "414/400" % n, {404}, (400, 414))
    r = st.raw("GET", "/" + "x" * 7000, auth)
    chk.expect(r, "GET a 7,000-byte unknown path is 404", {404}, ())
    r = st.raw("GET", "/auth?" + "q=1&" * 1500, auth)
    chk.expect(r, "GET /auth with a 6,000-byte query string is 200", {200},
               ())

    # -- methods -----------------------------------------------------------
    for m, p, allow in (("PROPFIND", "/events", "POST"),
                        ("BREW", "/events", "POST"),
                        ("MKCOL", "/events", "POST"),
                        ("PATCH", "/events/1", "GET"),
                        ("FOO_BAR", "/auth", "GET"),
                        ("M" * 100, "/events", "POST"),
                        ("PROPFIND", "/auth", "GET")):
        body = b"{}" if m != "M" * 100 else None
        r = st.raw(m, p, auth + [("Content-Type", "application/json")],
                   body)
        ok = chk.expect(r, "%s %s is 405 with Allow: %s" % (m[:12], p,
                                                            allow),
                        {405}, (400, 405))
        if ok and r.status == 405 and \
                r.header("content-type") == "application/json":
            tap.is_(r.header("allow"), allow, "%s %s: Allow: %s" %
                    (m[:12], p, allow))
    for m in ("get", "TRACE", "CONNECT", "G\x01T", "GET\x7f"):
        r = st.raw(m, "/events/1", auth)
        chk.expect(r, "method %r: 405 or nginx's own 400/405" % m,
                   {405}, (400, 405))
    r = st.raw("BREW", "/nope", auth, b"{}")
    chk.expect(r, "BREW /nope is 404 (unknown path)", {404}, (400, 405))
    r = ct.http_raw(st.http_port, b"GET /events/1 HTTP/1.1\r\nHost: x\r\n"
                    b"Authorization: Bearer " + tok.encode() +
                    b"\r\nTransfer-Encoding: chunked\r\nContent-Length: 5"
                    b"\r\nConnection: close\r\n\r\n0\r\n\r\n")
    chk.expect(r, "GET with both Transfer-Encoding and Content-Length",
               {200}, (400,))


# ---------------------------------------------------------------------------
# Logs

def log_files(st):
    out = set(st.logs)
    for name in ("access.log", "nginx-error.log", "nginx.out", "pg_ctl.out"):
        out.add(os.path.join(st.dir, name))
    out.add(st.pg.log)
    for n in os.listdir(st.dir):
        if n.startswith("cfpm") and n.endswith(".log"):
            out.add(os.path.join(st.dir, n))
    return sorted(p for p in out if os.path.isfile(p))


def secret_pieces(tokens):
    """Substrings that would show a token was logged: the first and last
    16 characters of each segment of 16 characters or more."""
    out = set()
    for t in tokens:
        for seg in t.replace(" ", ".").replace("\t", ".").split("."):
            seg = seg.strip()
            if len(seg) >= 16:
                out.add(seg[:16])
                out.add(seg[-16:])
    return out


def hostile_settings(st, extra=None):
    s = {"pm.max_children": POOL, "log_level": "debug",
         "access.log": os.path.join(st.dir, "access.log")}
    s.update(extra or {})
    return s


def main(tap):
    with ct.Stack(tap) as st:
        st.setup()
        listener = Listener()
        attacker = ct.Keys(os.path.join(st.dir, "attacker"), kid="bench-1")
        c = st.start_cfpm(hostile_settings(st))
        workers = c.workers()
        chk = Check(st)
        n0 = st.pg.row_count()

        tap.diag("-- tokens (issue 5 item 6)")
        cases = token_cases(st, listener, attacker)
        run_token_cases(st, chk, cases)
        n1 = st.pg.row_count()
        accepted = sum(1 for d, s in chk.answers
                       if d.startswith("POST") and s == 201)
        tap.is_(n1 - n0, accepted, "hostile tokens: only the POSTs answered "
                "201 (the controls) added rows (%d)" % accepted)

        tap.diag("-- bodies and requests (issue 5 item 7)")
        written = body_cases(st, chk)
        request_cases(st, chk)
        n2 = st.pg.row_count()
        tap.is_(n2 - n1, len(written), "bodies: rows added = writes answered "
                "201 (%d); every rejected write added none" % len(written))

        errs = chk.server_errors()
        tap.ok(not errs, "no 5xx and no dropped connection in %d hostile "
               "requests" % len(chk.answers), "got %r" % errs[:20])
        tap.is_(c.workers(), workers, "the same workers served every "
                "hostile request (no crash, no respawn)")
        tap.ok(c.alive(), "master alive")
        tap.is_(st.stop_cfpm(c), 0, "cfpm stops with exit 0")

        tap.diag("-- kid cases with a JWKS")
        secrets = [a for _, a, _, _ in cases]
        secrets += kid_cases_jwks(st, chk, listener)

        # Give a fetcher every chance to show up, then look.
        time.sleep(0.5)
        listener.close()
        tap.is_(listener.connections, [], "no outbound request: the jku/x5u "
                "listener was never contacted")
        crashes = []
        for p in log_files(st):
            if os.path.basename(p).startswith("cfpm"):
                with open(p, "rb") as f:
                    crashes += [l for l in f.read().decode(
                        "utf-8", "replace").splitlines()
                        if "killed by signal" in l or
                        "exited with status" in l]
        tap.is_(crashes, [], "no worker crash in any cfpm log")

        secrets += [st.tokens[n] for n in ("valid", "readonly", "writeonly",
                                           "expired", "notyet", "foreign")]
        pieces = secret_pieces(secrets)
        files = log_files(st)
        leaks = []
        sizes = []
        for p in files:
            with open(p, "rb") as f:
                text = f.read().decode("latin-1")
            sizes.append("%s %d B" % (os.path.relpath(p, st.dir), len(text)))
            for s in pieces:
                if s in text:
                    leaks.append("%s: %s..." % (os.path.relpath(p, st.dir),
                                                s[:12]))
        tap.diag("logs searched: %s" % ", ".join(sizes))
        access = os.path.join(st.dir, "access.log")
        tap.ok(os.path.isfile(access) and os.path.getsize(access) > 0,
               "the access log was written (the leak check covers it)")
        tap.cmp_ok(len(pieces), ">", 100, "searching for %d token pieces" %
                   len(pieces))
        # The search itself works: it finds the bench token in the file the
        # harness wrote it to.
        with open(os.path.join(st.dir, "tokens", "valid.jwt")) as f:
            control = f.read()
        tap.ok(any(s in control for s in pieces),
               "the leak search finds a token where one is stored (control)")
        tap.ok(not leaks, "no token (nor any 16-character piece of one) in "
               "%d log files" % len(files), *leaks[:20])


if __name__ == "__main__":
    ct.main(main)
