"""
http.py: the HTTP client of the tests and of the benchmark's contract
check and readiness probe. One request per new connection; a network
error or timeout never raises: it comes back as a Response with status 0
(NoResponse).
"""

import http.client
import json
import socket
import time


class Response:
    """status, reason, headers (dict, lower-case names; repeated headers
    joined with ", "), header_list, body (bytes), elapsed (s)."""

    def __init__(self, status, reason, header_list, body, elapsed):
        self.status = status
        self.reason = reason
        self.header_list = [(k.lower(), v) for k, v in header_list]
        self.headers = {}
        for k, v in self.header_list:
            if k in self.headers:
                self.headers[k] += ", " + v
            else:
                self.headers[k] = v
        self.body = body
        self.elapsed = elapsed

    def header(self, name):
        """The value of header name (any case), or None."""
        return self.headers.get(name.lower())

    def header_count(self, name):
        """How many times header name was sent."""
        return sum(1 for k, _ in self.header_list if k == name.lower())

    def json(self):
        """The body parsed as UTF-8 JSON, or None."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None

    def __repr__(self):
        return "<%d %r %r>" % (self.status, self.headers, self.body[:300])


class NoResponse(Response):
    """Stands in for a response when the request failed (status 0);
    error holds the reason."""

    def __init__(self, err, elapsed):
        Response.__init__(self, 0, "error: %s" % err, [], b"", elapsed)
        self.error = err


def outcome(r):
    """What a client saw of Response r, for counting outcomes: its status,
    or for a NoResponse "timeout" or "connection error"."""
    if r.status:
        return r.status
    err = getattr(r, "error", "") or ""
    return "timeout" if "timed out" in err or "Timeout" in err \
        else "connection error"


def _exchange(t0, send, close):
    """send() returns an http.client response, read here into a Response;
    a network or protocol error becomes a NoResponse. close() runs last.
    t0: when the request started (for elapsed)."""
    try:
        r = send()
        data = r.read()
        return Response(r.status, r.reason, r.getheaders(), data,
                        time.monotonic() - t0)
    except (OSError, http.client.HTTPException) as e:
        return NoResponse(repr(e), time.monotonic() - t0)
    finally:
        close()


def http_request(port, method, path, headers=None, body=None, timeout=10,
                 host="127.0.0.1"):
    """One request with http.client on a new connection; headers: a list
    of (name, value). Never raises: a network error or timeout returns a
    NoResponse."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)

    def send():
        data = body.encode("utf-8") if isinstance(body, str) else body
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or []):
            conn.putheader(k, v)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        return conn.getresponse()
    return _exchange(t0, send, conn.close)


def api_request(port, method, path, token=None, auth=None, headers=None,
                body=None, ctype=None, timeout=10):
    """One API request: token -> 'Authorization: Bearer T'; auth -> the
    raw Authorization value; ctype -> Content-Type; headers: more
    (name, value) pairs. Returns a Response (status 0 on failure)."""
    h = []
    if token is not None:
        h.append(("Authorization", "Bearer " + token))
    if auth is not None:
        h.append(("Authorization", auth))
    if ctype is not None:
        h.append(("Content-Type", ctype))
    h += list(headers or [])
    return http_request(port, method, path, h, body, timeout)


def http_raw(port, data, timeout=10, method="GET", host="127.0.0.1"):
    """Sends raw request bytes (for requests http.client will not build:
    repeated headers, undecoded paths) and parses the answer. A refused
    connection raises OSError; a failure after connecting returns a
    NoResponse."""
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=timeout)

    def send():
        s.sendall(data)
        r = http.client.HTTPResponse(s, method=method)
        r.begin()
        return r
    return _exchange(t0, send, s.close)


def build_raw(method, path, headers=(), body=None):
    """Request bytes: HTTP/1.1, Host, Connection: close, the headers given
    (a list of (name, value), repeats allowed), Content-Length for a body."""
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1",
             "Connection: close"]
    for k, v in headers:
        lines.append("%s: %s" % (k, v))
    if body is not None:
        lines.append("Content-Length: %d" % len(body))
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return data + (body or b"")
