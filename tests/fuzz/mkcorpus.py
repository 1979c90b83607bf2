#!/usr/bin/env python3
"""mkcorpus.py: writes the hand-made seed files of tests/fuzz/corpus/.

Seeds are named seed-*; inputs the fuzzer found and we kept (run.sh,
then a -merge=1 by hand) carry libFuzzer's SHA-1 names and are left
alone. Rerun after changing a seed below or the golden tokens:
    python3 tests/fuzz/mkcorpus.py
The jwt seeds start with the control byte described in fuzz_jwt.c.
"""
import base64
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
JWT = os.path.join(TOP, "tests", "data", "jwt")


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def golden(name):
    with open(os.path.join(JWT, name), "rb") as f:
        return f.read()


def unb64url(s):
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


# jwt control byte (fuzz_jwt.c): mode | strict<<2 | leeway<<3 | now<<5 | kid<<7
VERIFY, KEYS, JSON, SIGNIN = 0, 1, 2, 3
STRICT = 4
LEEWAY_60, LEEWAY_3600, LEEWAY_MAX = 1 << 3, 2 << 3, 3 << 3
NOW_LATE, NOW_MIN, NOW_MAX = 1 << 5, 2 << 5, 3 << 5
KID = 0x80


def jwt_seeds():
    raw = """valid valid_kid1 valid_kid2 valid_at_jwt valid_app_at_jwt
    valid_no_typ valid_extra valid_no_scope valid_scope_empty
    valid_scope_utf8 valid_sub_255 alg_none alg_None alg_hs256 alg_rs384
    alg_ps256 alg_es256 alg_array alg_missing crit_string crit_empty
    kid_unknown kid_path kid_number kid_empty kid_257 jwk_foreign
    jku_foreign foreign kid1_signed_by_key2 exp_1e400 exp_string exp_null
    exp_int64_max exp_int64_min exp_now exp_now_plus_half nbf_now_plus_1
    nbf_1e400 iat_string aud_array_with aud_array_mixed aud_array_empty
    iss_array claims_dup_exp header_dup_alg claims_bad_utf8
    claims_overlong_utf8 claims_nul_other claims_deep_16 claims_deep_17
    header_deep_17 header_nul header_trailing sub_nul sub_256 scope_1025
    scope_array payload_array payload_number typ_foo typ_lower_jwt
    segments_1 segments_2 segments_4 segments_5 pad_sig pad_signed
    plus_sig plus_slash_signed noncanon_signed sig_255 sig_257_lead0
    sig_zero empty_sig empty_header len_1mod4 bad_char tampered
    trailing_dot len_8192""".split()
    for name in raw:
        write("jwt", "verify-" + name, bytes([VERIFY]) + golden(name + ".jwt"))
    # The same valid token under other policies, times and leeways.
    tok = golden("valid_kid1.jwt")
    for tag, ctl in (("strict", STRICT), ("late", NOW_LATE),
                     ("late-leeway3600", NOW_LATE | LEEWAY_3600),
                     ("nowmin", NOW_MIN | LEEWAY_MAX),
                     ("nowmax", NOW_MAX | LEEWAY_MAX),
                     ("leeway60", LEEWAY_60)):
        write("jwt", "verify-valid_kid1-" + tag, bytes([ctl]) + tok)

    # Key material, with and without a default kid.
    for name in ("pub.pem", "pub2.pem", "jwks.json", "foreign_jwks.json",
                 "foreign_pub.pem", "small_pub.pem", "small_jwks.json",
                 "ec_pub.pem", "two_pub.pem"):
        write("jwt", "keys-" + name, bytes([KEYS]) + golden(name))
    write("jwt", "keys-pub.pem-kid", bytes([KEYS | KID]) + golden("pub.pem"))
    jwks = golden("jwks.json").decode()
    variants = {
        "use-enc": jwks.replace('"use":"sig"', '"use":"enc"', 1),
        "alg-rs384": jwks.replace('"alg":"RS256"', '"alg":"RS384"', 1),
        "kty-ec": jwks.replace('"kty":"RSA"', '"kty":"EC"', 1),
        "kty-number": jwks.replace('"kty":"RSA"', '"kty":1', 1),
        "no-kid": jwks.replace('"kid":"test-1",', "", 1),
        "dup-kid": jwks.replace('"kid":"test-2"', '"kid":"test-1"'),
        "kid-number": jwks.replace('"kid":"test-1"', '"kid":1'),
        "private-d": jwks.replace('"e":"AQAB"', '"e":"AQAB","d":"AQAB"', 1),
        "e-one": jwks.replace('"e":"AQAB"', '"e":"AQ"', 1),
        "e-even": jwks.replace('"e":"AQAB"', '"e":"AQAC"', 1),
        "e-empty": jwks.replace('"e":"AQAB"', '"e":""', 1),
        "e-padded": jwks.replace('"e":"AQAB"', '"e":"AQAB="', 1),
        "n-number": jwks.replace('"n":"x8', '"n":1,"x":"x8', 1),
        "keys-object": '{"keys":{}}',
        "keys-empty": '{"keys":[]}',
        "keys-string": '{"keys":[""]}',
        "dup-keys": '{"keys":[],"keys":[]}',
        "not-json": '{"keys":[',
        "whitespace": "\n \t" + jwks,
    }
    for tag, text in variants.items():
        write("jwt", "keys-jwks-" + tag, bytes([KEYS]) + text.encode())
    pem = golden("pub.pem").decode()
    write("jwt", "keys-pem-trailing-junk", bytes([KEYS]) + (pem + "x").encode())
    write("jwt", "keys-pem-truncated", bytes([KEYS]) + pem[:200].encode())
    write("jwt", "keys-pem-begin-only",
          bytes([KEYS]) + b"-----BEGIN PUBLIC KEY-----\n")

    # Header and claims as JSON, signed by the target with key.pem.
    for name in ("valid", "valid_kid1", "valid_kid2", "valid_at_jwt",
                 "valid_extra", "valid_scope_utf8", "exp_1e400",
                 "exp_exponent", "exp_2p63", "exp_minus_1e300",
                 "exp_now_minus_half", "nbf_now_plus_half", "nbf_int64_min",
                 "iat_future", "aud_array_with", "aud_array_without",
                 "aud_prefix", "iss_slash", "iss_case", "sub_empty",
                 "sub_number", "scope_null", "scope_number", "typ_null",
                 "crit_array", "jwk_jku_x5u_ours", "claims_deep_16",
                 "payload_empty_obj", "payload_string", "header_array"):
        h, p = golden(name + ".jwt").split(b".")[:2]
        h, p = unb64url(h), unb64url(p)
        if len(h) > 255:
            continue
        write("jwt", "json-" + name, bytes([JSON, len(h)]) + h + p)
    hdr = b'{"alg":"RS256","typ":"at+jwt","kid":"test-1"}'
    claims = (b'{"iss":"https://issuer.test","sub":"u","aud":["x","cfpm-test"],'
              b'"exp":1800000060.5,"nbf":1799999999.5,"iat":1e9,'
              b'"scope":"events:read"}')
    write("jwt", "json-reals", bytes([JSON, len(hdr)]) + hdr + claims)
    write("jwt", "json-reals-strict-leeway60",
          bytes([JSON | STRICT | LEEWAY_60]) + bytes([len(hdr)]) + hdr + claims)
    write("jwt", "json-reals-late", bytes([JSON | NOW_LATE, len(hdr)]) + hdr + claims)
    write("jwt", "json-nowmax", bytes([JSON | NOW_MAX | LEEWAY_MAX, len(hdr)])
          + hdr + claims)
    write("jwt", "json-nowmin", bytes([JSON | NOW_MIN | LEEWAY_MAX, len(hdr)])
          + hdr + claims)
    write("jwt", "json-unicode-escape", bytes([JSON, len(hdr)]) + hdr +
          b'{"iss":"https://issuer.test","sub":"\\u00e9\\ud83d\\ude00",'
          b'"aud":"cfpm-test","exp":1800003600,"scope":"a\\u0000b"}')

    # Signing inputs as text, signed by the target.
    for name in ("valid", "valid_kid1", "valid_kid2", "pad_signed",
                 "plus_slash_signed", "noncanon_signed", "claims_dup_sub",
                 "header_bad_utf8", "exp_false", "nbf_true"):
        t = golden(name + ".jwt")
        write("jwt", "signin-" + name, bytes([SIGNIN]) + t[:t.rindex(b".")])


def base64url_seeds():
    seeds = {
        "empty": b"", "A": b"A", "AA": b"AA", "AAA": b"AAA", "AAAA": b"AAAA",
        "QQ": b"QQ", "QR-noncanon": b"QR", "QUI": b"QUI", "QUJ-noncanon": b"QUJ",
        "QUJD": b"QUJD", "dash-underscore": b"-_-_", "plus-slash": b"+/+/",
        "padding": b"QQ==", "pad-one": b"QUI=", "space": b"QU I",
        "newline": b"QUJD\n", "nul": b"QU\x00J", "high-bit": b"\xff\xfe\xfd",
        "all-alphabet": b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        "len5": b"AAAAA", "len9": b"AAAAAAAAA",
        "bytes-0-255": bytes(range(256)),
    }
    tok = golden("valid_kid1.jwt").split(b".")
    seeds["jwt-header"], seeds["jwt-payload"], seeds["jwt-sig"] = tok
    seeds["jwt-whole"] = golden("valid_kid1.jwt")
    for k, v in seeds.items():
        write("base64url", k, v)


def body_seeds():
    seeds = {
        "valid": '{"kind":"click","payload":{"x":1}}',
        "valid-nested": '{"kind":"k","payload":{"a":[1,2,{"b":null}],"c":"d"}}',
        "valid-ws": ' \n{ "payload" : { } , "kind" : "k" }\t\r\n',
        "valid-extra": '{"kind":"k","payload":{},"other":[true,false]}',
        "valid-unicode": '{"kind":"caf\u00e9 \U0001f600","payload":{"\u00fc":"\u4e2d"}}',
        "valid-escapes": '{"kind":"\\u00e9\\ud83d\\ude00\\n\\"","payload":{"s":"\\/\\b"}}',
        "valid-numbers": '{"kind":"n","payload":{"a":-0,"b":1.5e300,"c":-9223372036854775808,"d":0.1}}',
        "sql": '{"kind":"x\'); DROP TABLE events;--","payload":{"q":"\' OR 1=1 --"}}',
        "kind-empty": '{"kind":"","payload":{}}',
        "kind-number": '{"kind":1,"payload":{}}',
        "kind-null": '{"kind":null,"payload":{}}',
        "kind-missing": '{"payload":{}}',
        "payload-array": '{"kind":"k","payload":[]}',
        "payload-string": '{"kind":"k","payload":"x"}',
        "payload-null": '{"kind":"k","payload":null}',
        "payload-missing": '{"kind":"k"}',
        "dup-kind": '{"kind":"a","kind":"b","payload":{}}',
        "dup-nested": '{"kind":"a","payload":{"x":1,"x":2}}',
        "top-array": '[{"kind":"k","payload":{}}]',
        "top-string": '"kind"',
        "top-number": "1e400",
        "empty": "",
        "truncated": '{"kind":"k","payload":{"x":',
        "trailing": '{"kind":"k","payload":{}} x',
        "two-objects": '{"kind":"k","payload":{}}{}',
        "bad-utf8": b'{"kind":"\xff\xfe","payload":{}}',
        "overlong-utf8": b'{"kind":"\xc0\xaf","payload":{}}',
        "lone-surrogate": '{"kind":"\\ud800","payload":{}}',
        "nul-raw": b'{"kind":"k\x00","payload":{}}',
        "nul-escape": '{"kind":"k\\u0000","payload":{}}',
        "nul-in-payload": '{"kind":"k","payload":{"a":"\\u0000"}}',
        "bom": b'\xef\xbb\xbf{"kind":"k","payload":{}}',
        "big-int": '{"kind":"k","payload":{"n":9223372036854775808}}',
        "big-real": '{"kind":"k","payload":{"n":1e400}}',
        "depth-64": '{"kind":"k","payload":' + '[' * 62 + ']' * 62 + '}',
        "depth-65": '{"kind":"k","payload":' + '[' * 63 + ']' * 63 + '}',
        "depth-10000": '[' * 10000,
        "depth-in-string": '{"kind":"' + '[' * 100 + '","payload":{}}',
        "depth-escaped-quote": '{"kind":"\\"[[[[","payload":{}}',
        "depth-negative": ']' * 100 + '[' * 120,
        "backslash-end": '"\\',
        "kind-long": '{"kind":"' + 'k' * 4000 + '","payload":{}}',
        # What jsonb makes of it: numeric's range, printed length, limit.
        "numeric-tiny": '{"kind":"n","payload":{"a":1e-16383}}',
        "numeric-too-tiny": '{"kind":"n","payload":{"a":1e-16384}}',
        "numeric-too-tiny-zero": '{"kind":"n","payload":{"a":0e-16384}}',
        "numeric-scale-over": '{"kind":"n","payload":{"a":9.99e-16383}}',
        "numeric-big": '{"kind":"n","payload":{"a":-1e131071}}',
        "numeric-too-big": '{"kind":"n","payload":{"a":1e131072}}',
        "numeric-zero-huge-exp": '{"kind":"n","payload":{"a":0e1073741822}}',
        "numeric-exp-over": '{"kind":"n","payload":{"a":0e1073741823}}',
        "numeric-written-out": '{"kind":"n","payload":{"a":0.%s1}}' %
                               ("0" * 16382),
        "numeric-written-out-over": '{"kind":"n","payload":{"a":0.%s1}}' %
                                    ("0" * 16383),
        "numeric-31-tiny": '{"kind":"n","payload":{"n":[%s]}}' %
                           ",".join(["1e-16383"] * 31),
        "numeric-70-tiny": '{"kind":"n","payload":{"n":[%s]}}' %
                           ",".join(["1e-16383"] * 70),
        "numeric-nested": '{"kind":"n","payload":{"a":[[[-9.99e-16381]],'
                          '{"b":[1E+2,0.001e3,-0.0]}]}}',
        "limit-at": '{"kind":"k","payload":{"a":[%s],"s":"%s"}}' %
                    (",".join(["1e-16000"] * 32), "x" * 12144),
        "limit-past": '{"kind":"k","payload":{"a":[%s],"s":"%s"}}' %
                      (",".join(["1e-16000"] * 32), "x" * 12145),
        "many-small-numbers": '{"kind":"k","payload":{"n":[%s]}}' %
                              ",".join(["7"] * 32000),
        "string-escapes": '{"kind":"k","payload":{"s":"\\u0001\\u000b\\/'
                          '\\b\\u0022\\u005c\\ud83d\\ude00\\uffff"}}',
        "lone-high-surrogate-pair": '{"kind":"k","payload":'
                                    '{"s":"\\ud800\\u0041"}}',
        "token-tiny": "1e-16383", "token-tiny-over": "1e-16384",
        "token-exp-zeros": "0e+000000000000000000000000005",
        "token-neg-zero": "-0.0", "token-1e400": "1e400",
        # Also ids and Content-Type values (the same bytes go to all four).
        "id-1": "1", "id-0": "0", "id-minus": "-1", "id-exp": "1e3",
        "id-max": "9223372036854775807", "id-max-plus-1": "9223372036854775808",
        "id-zeros": "0000000000000000000000009223372036854775807",
        "id-20-digits": "10000000000000000000", "id-pct00": "%00",
        "ct": "application/json", "ct-charset": "application/json; charset=utf-8",
        "ct-case-ws": " \tApplication/JSON \t;x=y", "ct-suffix": "application/jsonx",
        "ct-text": "text/plain", "ct-nul": b"application/json\x00junk",
    }
    for k, v in seeds.items():
        write("body", k, v)


def jscan_seeds():
    # fuzz_jscan.c: one byte, the name's length, then the name, then text.
    def named(name, text):
        if isinstance(text, str):
            text = text.encode()
        name = name.encode()
        return bytes([len(name)]) + name + text
    seeds = {
        "member": named("payload", '{"kind":"k","payload":{"x":1}}'),
        "member-ws": named("payload", ' \n{ "payload" : [ 1 , 2 ] }\t'),
        "member-first-of-dup": named("p", '{"p":1,"p":2}'),
        "member-nested-only": named("payload", '{"a":{"payload":1}}'),
        "member-in-string": named("payload", '{"a":"\\"payload\\":1"}'),
        "member-utf8": named("caf\u00e9", '{"caf\\u00e9":[true,null]}'),
        "member-pair": named("\U0001f600", '{"\\ud83d\\ude00":-1.5e3}'),
        "member-nul-escape": named("p", '{"p\\u0000":1}'),
        "member-empty-name": named("", '{"":0}'),
        "values": named("", '[true,false,null,0,-1.5e-300,"s\\"",{},[]]'),
        "deep": named("a", '{"a":' + "[" * 64 + "]" * 64 + "}"),
        # As a whole text a string value; as the inside of a name, the key.
        "escapes": named("\"\\/\b\f\n\r\t", '"\\"\\\\\\/\\b\\f\\n\\r\\t"'),
        "escapes-key": named("\"\\/\b\f\n\r\t", '\\"\\\\\\/\\b\\f\\n\\r\\t'),
        "unicode-key": named("A\u00e9\u4e2d\U0001f600",
                             '\\u0041\\u00E9\\u4e2d\\ud83d\\ude00'),
        "lone-high": named("x", '{"\\ud800":1}'),
        "lone-low": named("x", '"\\udc00"'),
        "truncated-string": named("p", '{"p":"abc'),
        "truncated-escape": named("p", '{"p":"\\u00'),
        "truncated-object": named("p", '{"a":[1,{"b":'),
        "empty": named("p", ""),
        "ws-only": named("p", " \t\r\n"),
        "closers": named("p", "]}],:"),
    }
    for k, v in seeds.items():
        write("jscan", k, v)


def jcheck_seeds():
    # fuzz_jcheck.c: a control byte (bit 0 ints as reals, bits 1-6 the
    # depth limit - 1), then the text.
    TOKEN = (16 - 1) << 1          # jwt.c: depth 16, integers as integers
    BODY = (64 - 1) << 1 | 1       # jsonbody.c: depth 64, ints as reals
    def seed(name, ctl, text):
        if isinstance(text, str):
            text = text.encode()
        write("jcheck", name, bytes([ctl]) + text)
    for name in ("valid", "valid_kid1", "valid_extra", "valid_scope_utf8",
                 "header_dup_alg", "header_bad_utf8", "header_nul",
                 "header_trailing", "header_deep_16", "header_deep_17",
                 "claims_dup_exp", "claims_bad_utf8", "claims_overlong_utf8",
                 "claims_nul_other", "claims_deep_16", "exp_1e400",
                 "exp_2p63", "exp_int64_min", "exp_exponent", "sub_nul"):
        h, p = golden(name + ".jwt").split(b".")[:2]
        seed("token-header-" + name, TOKEN, unb64url(h))
        seed("token-claims-" + name, TOKEN, unb64url(p))
    many = ",".join('"k%d":%d' % (i, i) for i in range(40))
    seeds = {
        "body": (BODY, '{"kind":"page_view","payload":{"path":"/pricing",'
                 '"ms":182,"ref":"newsletter"}}'),
        "dup-escaped": (TOKEN, '{"alg":1,"\\u0061lg":2}'),
        "dup-nested": (TOKEN, '{"a":[{"x":1,"y":{"z":1,"z":2}}]}'),
        "many-names": (BODY, "{" + many + "}"),
        "many-names-dup": (BODY, "{" + many + ',"k7":0}'),
        "int64-edges": (TOKEN, '{"a":9223372036854775807,'
                        '"b":-9223372036854775808,"c":-0}'),
        "int64-over": (TOKEN, '{"a":9223372036854775808}'),
        "int64-under": (TOKEN, '{"a":-9223372036854775809}'),
        "ints-as-reals": (BODY, '{"a":123456789012345678901234567890}'),
        "real-max": (TOKEN, '{"a":1.7976931348623157e308}'),
        "real-over": (TOKEN, '{"a":1.7976931348623159e308}'),
        "real-tiny": (TOKEN, '{"a":1e-400,"b":-0.0,"c":4.9e-324}'),
        "real-exp-zeros": (TOKEN, '{"a":1e0000000000000000000400}'),
        "numbers-bad": (TOKEN, '{"a":01}'),
        "number-dot": (TOKEN, '{"a":1.}'),
        "number-exp": (TOKEN, '{"a":1e+}'),
        "number-plus": (TOKEN, '{"a":+1}'),
        "literals": (TOKEN, '{"a":true,"b":false,"c":null,"d":[]}'),
        "literal-bad": (TOKEN, '{"a":tru}'),
        "literal-long": (TOKEN, '{"a":truex}'),
        "nul-after-number": (TOKEN, b'{"a":1\x00}'),
        "nul-after-literal": (TOKEN, b'{"a":true\x00}'),
        "escape-pair": (TOKEN, '{"s":"\\ud83d\\ude00\\u00e9\\n"}'),
        "escape-lone-low": (TOKEN, '{"s":"\\udc00"}'),
        "escape-nul": (TOKEN, '{"s\\u0000":1}'),
        "utf8-max": (TOKEN, '{"s":"\U0010ffff"}'),
        "utf8-surrogate": (TOKEN, b'{"s":"\xed\xa0\x80"}'),
        "utf8-cut": (TOKEN, b'{"s":"\xe2\x82"}'),
        "control": (TOKEN, b'{"s":"\x1f"}'),
        "del": (TOKEN, b'{"s":"\x7f"}'),
        "top-array": (TOKEN, '[1]'),
        "trailing-comma": (TOKEN, '{"a":1,}'),
        "array-comma": (TOKEN, '{"a":[1,]}'),
        "two-objects": (TOKEN, '{}{}'),
        "ws": (TOKEN, ' \t\r\n{ "a" : [ 1 , { } ] }\n'),
        "depth-1": (0, '{"a":{}}'),
        "depth-64": (BODY, '{"a":' + "[" * 63 + "]" * 63 + "}"),
        "depth-65": (BODY, '{"a":' + "[" * 64 + "]" * 64 + "}"),
    }
    for k, (ctl, text) in seeds.items():
        seed(k, ctl, text)


def config_seeds():
    with open(os.path.join(TOP, "etc", "cfpm.conf"), "rb") as f:
        conf = f.read()
    write("config", "etc-cfpm.conf", conf)
    write("config", "etc-cfpm.conf-crlf", conf.replace(b"\n", b"\r\n"))
    full = (
        "; comment\n# another\n[global]\nerror_log = /var/log/cfpm.log\n"
        "log_level = debug\n[www]\n  listen = [::1]:9000  \r\n"
        "listen.backlog = 4096\nlisten.mode = 0666\npm = static\n"
        "pm.max_children = 64\npm.max_requests = 500\n"
        "request_terminate_timeout = 2m\nrequest_slowlog_timeout = 5s\n"
        "process_control_timeout = 1h\n"
        "db.conninfo = \"host=/run/postgresql dbname=events\"\n"
        "auth.issuer = https://auth.bench.local\nauth.audience = events-api\n"
        "auth.key_file = /etc/cfpm/jwks.json\nauth.key_id = k1\n"
        "auth.leeway = 30\nauth.errors = compat\nauth.typ = strict\n"
        "ping.path = /ping\nping.response = \"\"\npm.status_path = /status\n"
        "pm.status_listen = 127.0.0.1:9001\nlisten.owner = www-data\n"
        "listen.group = www-data\naccess.log = /var/log/cfpm/access.log\n"
        "access.format = \"%m \\\"%r\\\" \\\\ %s\"")
    write("config", "full", full)
    minimal = ("listen = 127.0.0.1:9000\nauth.issuer = i\nauth.audience = a\n"
               "auth.key_file = k\n")
    write("config", "minimal-valid", minimal)
    write("config", "validate-no-issuer", "listen = 9000\nauth.audience = a\nauth.key_file = k\n")
    write("config", "validate-empty-listen", "listen =\n" + minimal[24:])
    write("config", "validate-ping-relative", minimal + "ping.path = ping\n")
    write("config", "validate-status-relative", minimal + "pm.status_path = status\n")
    errors = {
        "max-children-0": "pm.max_children = 0\n",
        "max-children-1025": "\n\npm.max_children = 1025\n",
        "int-garbage": "pm.max_children = 8x\n",
        "int-empty": "pm.max_children =\n",
        "int-huge": "pm.max_children = 99999999999999999999\n",
        "int-plus-ws": "listen.backlog = + 12\n",
        "long-max": "pm.max_requests = 9223372036854775807\n",
        "unknown-key": "no_such_key = 1\n",
        "no-equals": "listen\n",
        "empty-key": "= value\n",
        "pm-dynamic": "pm = dynamic\n",
        "mode-bad": "listen.mode = 0999\n",
        "mode-big": "listen.mode = 017777\n",
        "mode-negative": "listen.mode = -1\n",
        "auth-errors-bad": "auth.errors = loud\n",
        "auth-typ-bad": "auth.typ = maybe\n",
        "log-level-bad": "log_level = chatty\n",
        "lone-quote": "listen = \"/x\n",
        "trailing-quote": "listen = /x\"\n",
        "just-quote": "listen = \"\n",
        "escaped-end-quote": "listen = \"abc\\\"\n",
        "double-backslash-end": "listen = \"abc\\\\\"\n",
        "inner-quote": "listen = \"a\"b\"\n",
        "section-open": "[www\n",
        "section-empty": "[]\n",
        "section-global": "[global]\n",
        "section-long": "[" + "p" * 2000 + "]\n",
        "duration-day": "request_terminate_timeout = 2d\n",
        "duration-25h": "request_terminate_timeout = 25h\n",
        "duration-24h": "request_slowlog_timeout = 24h\n",
        "duration-m-only": "request_terminate_timeout = m\n",
        "duration-31-chars": "request_terminate_timeout = " + "0" * 30 + "1s\n",
        "duration-negative": "process_control_timeout = -1m\n",
        "leeway-negative": "auth.leeway = -1\n",
        "leeway-3601": "auth.leeway = 3601\n",
        "app-after-keys": "auth.leeway = 5\nauth.isuer = x\napp = hello\n",
        "app-unknown": "app = nosuch\nauth.leeway = 1\n",
        "app-twice": "app = hello\nauth.typ = strict\napp = events\n",
        "nul": b"listen = a\x00b\n",
        "no-newline": "listen = /tmp/x.sock",
        "only-comments": "; a\n# b\n\n   \n\t\n",
        "value-1023": "listen = " + "v" * 1023 + "\n",
        "value-1024": "listen = " + "v" * 1024 + "\n",
        "quoted-1024": "listen = \"" + "v" * 1023 + "\\\\\"\n",
        "line-4095": "listen = " + "v" * 1000 + " " * (4095 - 1009) + "\n",
        "line-4096": "; " + "c" * 4094 + "\n",
        "key-long": "k" * 100 + " = 1\n",
        "equals-in-value": "db.conninfo = host=x dbname=y\n",
        "empty": "",
        "newlines": "\n\n\n",
        "cr-only": "listen = a\rlisten.backlog = 1\r",
    }
    for k, v in errors.items():
        write("config", k, v)


def fcgi_record(rtype, content=b"", req_id=1, pad=0):
    return (bytes([1, rtype, req_id >> 8, req_id & 255, len(content) >> 8,
                   len(content) & 255, pad, 0]) + content + b"\0" * pad)


def fcgi_pair(name, value):
    out = b""
    for n in (len(name), len(value)):
        out += bytes([n]) if n < 128 else (0x80000000 | n).to_bytes(4, "big")
    return out + name + value


def fcgi_request(params, body=b"", req_id=1, flags=0, chunk=65535):
    p = b"".join(fcgi_pair(k.encode(), v.encode()) for k, v in params)
    out = fcgi_record(1, bytes([0, 1, flags, 0, 0, 0, 0, 0]), req_id)
    for i in range(0, len(p), chunk):
        out += fcgi_record(4, p[i:i + chunk], req_id, i % 8)
    out += fcgi_record(4, b"", req_id)
    for i in range(0, len(body), 65535):
        out += fcgi_record(5, body[i:i + 65535], req_id)
    return out + fcgi_record(5, b"", req_id)


def fcgi_seeds():
    """Record streams as nginx sends them, and the attacks on libfcgi."""
    get = [("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/events/42"),
           ("SCRIPT_NAME", "/events/42"), ("QUERY_STRING", ""),
           ("HTTP_AUTHORIZATION", "Bearer x.y.z")]
    post = [("REQUEST_METHOD", "POST"), ("REQUEST_URI", "/events"),
            ("CONTENT_TYPE", "application/json"), ("CONTENT_LENGTH", "25")]
    body = b'{"kind":"a","payload":{}}'
    overflow = fcgi_pair(b"FCGI_MAX_CONNS", b"") * 40
    seeds = {
        "get": fcgi_request(get),
        "get-keepconn": fcgi_request(get, flags=1),
        "get-split-params": fcgi_request(get, chunk=7),
        "post": fcgi_request(post, body),
        "status-json-full": fcgi_request(
            [("REQUEST_METHOD", "GET"), ("SCRIPT_NAME", "/status"),
             ("REQUEST_URI", "/status?json&full"),
             ("QUERY_STRING", "json&full")]),
        "get-values-overflow": fcgi_record(9, overflow, 0),
        "get-values-then-get": (fcgi_record(9, fcgi_pair(
            b"FCGI_MPXS_CONNS", b"") + fcgi_pair(b"FCGI_MAX_REQS", b""), 0)
            + fcgi_request(get)),
        "unknown-management": fcgi_record(42, b"abc", 0, 5),
        "management-inside": (fcgi_request(get)[:16]
                              + fcgi_record(9, overflow, 0)),
        "two-ids": fcgi_request(get, req_id=1)[:-16] + fcgi_request(
            get, req_id=2),
        "long-value": fcgi_request([("REQUEST_URI", "/" + "u" * 300)]),
        "no-stdin-end": fcgi_request(get)[:-8],
        "authorizer": fcgi_record(1, bytes([0, 2, 0, 0, 0, 0, 0, 0])),
    }
    for k, v in seeds.items():
        write("fcgi", k, v)


def main():
    fcgi_seeds()
    jwt_seeds()
    base64url_seeds()
    body_seeds()
    jscan_seeds()
    jcheck_seeds()
    config_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
