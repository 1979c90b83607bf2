"""
fcgi.py: a FastCGI responder client that talks to cfpm's socket directly,
without nginx: for requests nginx would never send (odd CONTENT_LENGTH,
huge params, a body past nginx's limit) and for checking cfpm's own
answers. Record and parameter encoders are exported for tests that build
their own byte streams. KeptConnection plays nginx's part with
fastcgi_keep_conn: several requests on one connection, every record seen.
"""

import socket
import struct
import time

from .http import NoResponse, Response

FCGI_VERSION = 1
FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, \
    FCGI_STDOUT, FCGI_STDERR = 1, 3, 4, 5, 6, 7
FCGI_RESPONDER = 1
FCGI_KEEP_CONN = 1              # FCGI_BEGIN_REQUEST's flags
FCGI_HEADER_LEN = 8
FCGI_MAX_CONTENT = 65535        # a record's content length is 16 bits
FCGI_SHORT_LEN = 128            # name/value lengths below: one byte
FCGI_RECV = 65536


def fcgi_record(rtype, content, req_id=1):
    """One record: header, content, padding to a multiple of 8."""
    pad = (8 - len(content) % 8) % 8
    return struct.pack("!BBHHBB", FCGI_VERSION, rtype, req_id, len(content),
                       pad, 0) + content + b"\0" * pad


def _fcgi_len(n):
    return bytes([n]) if n < FCGI_SHORT_LEN else \
        struct.pack("!I", n | 0x80000000)


def fcgi_params(params):
    """The name-value pair stream of a dict (str as latin-1, or bytes)."""
    out = b""
    for k, v in params.items():
        k = k.encode("latin-1") if isinstance(k, str) else k
        v = v.encode("latin-1") if isinstance(v, str) else v
        out += _fcgi_len(len(k)) + _fcgi_len(len(v)) + k + v
    return out


def _stream(rtype, data):
    """data as records of rtype, then the empty record that ends it."""
    out = b""
    for i in range(0, len(data), FCGI_MAX_CONTENT):
        out += fcgi_record(rtype, data[i:i + FCGI_MAX_CONTENT])
    return out + fcgi_record(rtype, b"")


def cgi_params(method, uri, headers=None, body=b"", content_length=None,
               extra=None):
    """CGI params built like Debian's fastcgi_params: headers (dict of
    HTTP header name -> value) become HTTP_*, Content-Type and
    Content-Length CONTENT_*; extra is set last."""
    path, _, query = uri.partition("?")
    params = {
        "QUERY_STRING": query, "REQUEST_METHOD": method,
        "CONTENT_TYPE": "", "CONTENT_LENGTH": "",
        "SCRIPT_NAME": path, "REQUEST_URI": uri, "DOCUMENT_URI": path,
        "DOCUMENT_ROOT": "/usr/share/nginx/html",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_SCHEME": "http",
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "cfpmtest",
        "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "40000",
        "SERVER_ADDR": "127.0.0.1", "SERVER_PORT": "80",
        "SERVER_NAME": "_", "REDIRECT_STATUS": "200",
    }
    for k, v in (headers or {}).items():
        name = k.upper().replace("-", "_")
        if name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            params[name] = v
        else:
            params["HTTP_" + name] = v
    if body and not params["CONTENT_LENGTH"]:
        params["CONTENT_LENGTH"] = str(len(body))
    if content_length is not None:
        params["CONTENT_LENGTH"] = str(content_length)
    params.update(extra or {})
    return params


def _parse(stdout, elapsed):
    """A Response from a responder's stdout (CGI headers, Status:)."""
    head, sep, rbody = stdout.partition(b"\r\n\r\n")
    if not sep:
        head, sep, rbody = stdout.partition(b"\n\n")
    hl = []
    status, reason = 200, "OK"
    for line in head.decode("latin-1").splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k.lower() == "status":
            code, _, reason = v.partition(" ")
            status = int(code) if code.isdigit() else 0
        elif k:
            hl.append((k, v))
    return Response(status, reason, hl, rbody, elapsed)


def _request_bytes(params, body, flags=0):
    """A whole request's records: params (a dict), body as stdin."""
    msg = fcgi_record(FCGI_BEGIN_REQUEST, struct.pack("!HB5x",
                                                      FCGI_RESPONDER, flags))
    msg += _stream(FCGI_PARAMS, fcgi_params(params))
    return msg + _stream(FCGI_STDIN, body)


def _split_records(buf):
    """(records, rest): the whole records at the start of buf as
    (type, content) pairs, and the bytes after them."""
    out = []
    while len(buf) >= FCGI_HEADER_LEN:
        _, rtype, _, clen, plen, _ = struct.unpack(
            "!BBHHBB", buf[:FCGI_HEADER_LEN])
        if len(buf) < FCGI_HEADER_LEN + clen + plen:
            break
        out.append((rtype, buf[FCGI_HEADER_LEN:FCGI_HEADER_LEN + clen]))
        buf = buf[FCGI_HEADER_LEN + clen + plen:]
    return out, buf


def _connect(address, timeout, source=None):
    """A connection to address (a unix path or (host, port)); source: the
    local IPv4 address to connect from."""
    if isinstance(address, str):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source is not None:
        s.bind((source, 0))
    s.connect(address)
    return s


def fcgi_request(address, method, uri, headers=None, body=b"",
                 content_length=None, timeout=10, extra=None, source=None):
    """One FastCGI responder request to address (unix path or (host,
    port)) with cgi_params(); strings go out as latin-1 ("\\xff" is the
    byte 0xff). Reads stdout until END_REQUEST or EOF. Returns a
    Response; a NoResponse (status 0) if nothing came back. source: see
    _connect()."""
    return fcgi_exact(address, cgi_params(method, uri, headers, body,
                                          content_length, extra),
                      body, timeout, source)


def fcgi_exact(address, params, body=b"", timeout=10, source=None):
    """One FastCGI responder request carrying exactly params (a dict),
    nothing added — no REQUEST_URI unless given, as a monitoring client
    talking to a status socket sends it — and body as stdin. Returns as
    fcgi_request (status 200 when the reply has no Status line, as a web
    server reads a CGI reply)."""
    t0 = time.monotonic()
    msg = _request_bytes(params, body)
    stdout = b""
    s = None
    try:
        s = _connect(address, timeout, source)
        try:
            s.sendall(msg)
        except OSError:
            pass    # the app may answer before reading all of stdin
        buf = b""
        ended = False
        while not ended:
            chunk = s.recv(FCGI_RECV)
            if not chunk:
                break
            records, buf = _split_records(buf + chunk)
            for rtype, content in records:
                if rtype == FCGI_STDOUT:
                    stdout += content
                elif rtype == FCGI_END_REQUEST:
                    ended = True
                    break
    except OSError as e:
        if not stdout:
            return NoResponse(repr(e), time.monotonic() - t0)
    finally:
        if s is not None:
            s.close()
    if not stdout and not ended:
        return NoResponse("closed without a reply", time.monotonic() - t0)
    return _parse(stdout, time.monotonic() - t0)


class KeptConnection:
    """One connection used the way nginx's keepalive cache uses it:
    requests sent one at a time with FCGI_KEEP_CONN (or without), every
    record that comes back recorded, the close observed."""

    def __init__(self, address, timeout=10):
        self.sock = _connect(address, timeout)
        self.buf = b""
        self.eof = False

    def send(self, method, uri, headers=None, body=b"", keep=True,
             extra=None):
        """Writes one request; False if the write failed (closed)."""
        try:
            self.sock.sendall(_request_bytes(
                cgi_params(method, uri, headers, body, None, extra), body,
                FCGI_KEEP_CONN if keep else 0))
            return True
        except OSError:
            return False

    def records(self, timeout, until_end=False):
        """The records that arrive within timeout seconds (stops early at
        the peer's close, and with until_end after FCGI_END_REQUEST), as
        (type, content) pairs; sets self.eof at the close."""
        out = []
        deadline = time.monotonic() + timeout
        while not self.eof:
            records, self.buf = _split_records(self.buf)
            out += records
            if until_end and any(r[0] == FCGI_END_REQUEST for r in out):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(FCGI_RECV)
            except socket.timeout:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
            self.buf += chunk
        return out

    def request(self, method, uri, timeout=10, **kw):
        """send() then the reply: (Response, the records after
        FCGI_END_REQUEST that came with it: cfpm writes a reply whole)."""
        t0 = time.monotonic()
        if not self.send(method, uri, **kw):
            return NoResponse("write failed", 0), []
        return self.reply(timeout, t0)

    def reply(self, timeout=10, t0=None):
        """The reply to the request sent last: as request() returns it;
        t0: when it was sent (for elapsed)."""
        t0 = time.monotonic() if t0 is None else t0
        recs = self.records(timeout, until_end=True)
        ends = [i for i, r in enumerate(recs) if r[0] == FCGI_END_REQUEST]
        if not ends:
            return NoResponse("no FCGI_END_REQUEST", 0), recs
        stdout = b"".join(c for t, c in recs[:ends[0]] if t == FCGI_STDOUT)
        resp = _parse(stdout, time.monotonic() - t0)
        return resp, recs[ends[0] + 1:] + self.records(0)

    def closed_by_peer(self, timeout):
        """True once the peer has closed (within timeout seconds)."""
        self.records(timeout)
        return self.eof

    def close(self):
        self.sock.close()
