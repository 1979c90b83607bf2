#!/usr/bin/env python3
"""
test_nginx_site.py: what the shipped nginx site (etc/nginx/cfpm.conf)
hands the pool and the status socket, as a FastCGI responder sees it.

A real nginx runs the site in front of two recording responders (unix
sockets standing in for cfpm's pool and status sockets) that keep each
request's parameters and body and answer 200. The pool must get exactly
the parameters cfpm reads (http.c: REQUEST_METHOD, REQUEST_URI,
HTTP_AUTHORIZATION, CONTENT_TYPE, CONTENT_LENGTH, REQUEST_ID; the routing
of ping.path and pm.status_path: SCRIPT_NAME, QUERY_STRING) with the
values cfpm expects, the token only when a client sent one, and no other
client header (no "Proxy:" as HTTP_PROXY: httpoxy); the /status location
keeps Debian's fastcgi_params, with no client value for HTTP_PROXY.
"""

import os
import shutil
import socket
import struct
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", ".."))
from harness import proc  # noqa: E402
from harness.fcgi import (FCGI_END_REQUEST, FCGI_HEADER_LEN,  # noqa: E402
                          FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT, fcgi_record)
from harness.http import http_request  # noqa: E402
from harness.nginx import Nginx, cfpm_site  # noqa: E402
from harness.tap import TAP  # noqa: E402

POOL_PARAMS = {"REQUEST_METHOD", "REQUEST_URI", "SCRIPT_NAME", "QUERY_STRING",
               "CONTENT_TYPE", "CONTENT_LENGTH", "HTTP_AUTHORIZATION",
               "REQUEST_ID"}
# What the status page and PHP-FPM's exporters need, among Debian's.
STATUS_PARAMS = {"REQUEST_METHOD", "REQUEST_URI", "SCRIPT_NAME",
                 "QUERY_STRING"}
TIMEOUT = 10
JUNK = [("Proxy", "http://attacker.example:3128"), ("X-Junk", "1"),
        ("User-Agent", "test_nginx_site"), ("Cookie", "a=b")]


def pairs(data):
    """A FastCGI name-value stream as a dict (latin-1 text)."""
    out, i = {}, 0
    while i < len(data):
        lens = []
        for _ in range(2):
            if data[i] < 128:
                lens.append(data[i])
                i += 1
            else:
                lens.append(struct.unpack("!I", data[i:i + 4])[0] &
                            0x7fffffff)
                i += 4
        name = data[i:i + lens[0]].decode("latin-1")
        out[name] = data[i + lens[0]:i + lens[0] + lens[1]].decode(
            "latin-1")
        i += lens[0] + lens[1]
    return out


class Recorder:
    """A responder on a unix socket: one request per connection, its
    parameters and body kept in .seen, answered 200 "ok"."""

    def __init__(self, path):
        self.seen = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.done = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                self.serve(c)
            except (OSError, ValueError, IndexError, struct.error):
                pass
            finally:
                c.close()

    def serve(self, c):
        c.settimeout(TIMEOUT)
        buf, params, body, req_id = b"", b"", b"", 1
        while True:
            chunk = c.recv(65536)
            if not chunk:
                return
            buf += chunk
            while len(buf) >= FCGI_HEADER_LEN:
                _, rtype, req_id, clen, plen, _ = struct.unpack(
                    "!BBHHBB", buf[:FCGI_HEADER_LEN])
                if len(buf) < FCGI_HEADER_LEN + clen + plen:
                    break
                content = buf[FCGI_HEADER_LEN:FCGI_HEADER_LEN + clen]
                buf = buf[FCGI_HEADER_LEN + clen + plen:]
                if rtype == FCGI_PARAMS:
                    params += content
                elif rtype == FCGI_STDIN and content:
                    body += content
                elif rtype == FCGI_STDIN:
                    with self.lock:
                        self.seen.append((pairs(params), body))
                    out = b"Status: 200 OK\r\nContent-Type: text/plain" \
                        b"\r\n\r\nok"
                    c.sendall(fcgi_record(FCGI_STDOUT, out, req_id) +
                              fcgi_record(FCGI_STDOUT, b"", req_id) +
                              fcgi_record(FCGI_END_REQUEST, bytes(8),
                                          req_id))
                    return

    def last(self):
        with self.lock:
            return self.seen[-1] if self.seen else ({}, b"")

    def close(self):
        self.done = True
        self.sock.close()
        self.thread.join(TIMEOUT)


def ask(tap, nginx, rec, method, path, headers, body=None):
    """One request through nginx; the parameters and body rec saw."""
    before = len(rec.seen)
    r = http_request(nginx.port, method, path, headers, body,
                     timeout=TIMEOUT)
    tap.ok(r.status == 200 and len(rec.seen) == before + 1,
           "%s %s: answered by the responder" % (method, path),
           "status %s" % r.status)
    return rec.last()


def check_pool(tap, nginx, pool):
    p, _ = ask(tap, nginx, pool, "GET", "/events/7?a=b&c",
               [("Authorization", "Bearer t0k.en_-")] + JUNK)
    tap.is_(set(p), POOL_PARAMS, "GET with a token and other headers: "
            "exactly the parameters cfpm reads")
    tap.is_((p.get("REQUEST_METHOD"), p.get("REQUEST_URI"),
             p.get("SCRIPT_NAME"), p.get("QUERY_STRING")),
            ("GET", "/events/7?a=b&c", "/events/7", "a=b&c"),
            "method, raw URI, path and query as cfpm routes them")
    tap.is_(p.get("HTTP_AUTHORIZATION"), "Bearer t0k.en_-",
            "the Authorization header is passed as it came")
    rid = p.get("REQUEST_ID", "")
    tap.ok(len(rid) == 32 and all(ch in "0123456789abcdef" for ch in rid),
           "REQUEST_ID is nginx's $request_id (access.format's %i)", rid)
    tap.is_((p.get("CONTENT_TYPE"), p.get("CONTENT_LENGTH")), ("", ""),
            "no body: CONTENT_TYPE and CONTENT_LENGTH empty, as before")

    p, _ = ask(tap, nginx, pool, "GET", "/auth", JUNK)
    tap.is_(set(p), POOL_PARAMS - {"HTTP_AUTHORIZATION"},
            "no Authorization header: no HTTP_AUTHORIZATION (no "
            "credentials, as an absent header always was)")
    p, _ = ask(tap, nginx, pool, "GET", "/auth", [("Authorization", "")])
    tap.ok("HTTP_AUTHORIZATION" not in p, "an empty Authorization header "
           "is not passed either (cfpm read \"\" as none)")

    data = b'{"kind":"k","payload":{}}'
    p, body = ask(tap, nginx, pool, "POST", "/events",
                  [("Authorization", "Bearer x"),
                   ("Content-Type", "application/json; charset=utf-8")] +
                  JUNK, data)
    tap.is_(set(p), POOL_PARAMS, "POST: the same parameters")
    tap.is_((p.get("CONTENT_TYPE"), p.get("CONTENT_LENGTH"), body),
            ("application/json; charset=utf-8", str(len(data)), data),
            "POST: the body with its type and length")

    p, _ = ask(tap, nginx, pool, "GET", "/ping", [])
    tap.is_((p.get("SCRIPT_NAME"), p.get("REQUEST_URI")), ("/ping", "/ping"),
            "ping.path on the pool: SCRIPT_NAME")


def check_status(tap, nginx, status):
    p, _ = ask(tap, nginx, status, "GET", "/status?json&full", JUNK)
    tap.ok(STATUS_PARAMS <= set(p) and p["SCRIPT_NAME"] == "/status" and
           p["QUERY_STRING"] == "json&full", "/status: the route and the "
           "query, among Debian's fastcgi_params", sorted(p))
    tap.is_(p.get("HTTP_PROXY", ""), "", "/status: a client's Proxy "
            "header does not become HTTP_PROXY (httpoxy)")


def main():
    tap = TAP()
    tmp = tempfile.mkdtemp(prefix="cfpm-site-")
    os.chmod(tmp, 0o755)
    pool = Recorder(os.path.join(tmp, "pool.sock"))
    status = Recorder(os.path.join(tmp, "status.sock"))
    port = proc.free_port()
    site = cfpm_site("unix:" + os.path.join(tmp, "pool.sock"), port,
                     status_upstream="unix:" + os.path.join(tmp,
                                                           "status.sock"))
    nginx = Nginx(tmp, port, site)
    try:
        nginx.start()
        check_pool(tap, nginx, pool)
        check_status(tap, nginx, status)
    except Exception as e:  # reported, then cleaned up
        tap.ok(False, "harness: unexpected exception: %r" % e,
               proc.tail(nginx.log))
    finally:
        nginx.stop()
        pool.close()
        status.close()
        proc.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tap.done())


if __name__ == "__main__":
    main()
