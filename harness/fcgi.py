"""
fcgi.py: a FastCGI responder client that talks to cfpm's socket directly,
without nginx: for requests nginx would never send (odd CONTENT_LENGTH,
huge params, a body past nginx's limit) and for checking cfpm's own
answers. Record and parameter encoders are exported for tests that build
their own byte streams.
"""

import socket
import struct
import time

from .http import NoResponse, Response

FCGI_VERSION = 1
FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, \
    FCGI_STDOUT, FCGI_STDERR = 1, 3, 4, 5, 6, 7
FCGI_RESPONDER = 1
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


def fcgi_request(address, method, uri, headers=None, body=b"",
                 content_length=None, timeout=10, extra=None):
    """One FastCGI responder request to address (unix path or (host,
    port)) with cgi_params(); strings go out as latin-1 ("\\xff" is the
    byte 0xff). Reads stdout until END_REQUEST or EOF. Returns a
    Response; a NoResponse (status 0) if nothing came back."""
    return fcgi_exact(address, cgi_params(method, uri, headers, body,
                                          content_length, extra),
                      body, timeout)


def fcgi_exact(address, params, body=b"", timeout=10):
    """One FastCGI responder request carrying exactly params (a dict),
    nothing added — no REQUEST_URI unless given, as a monitoring client
    talking to a status socket sends it — and body as stdin. Returns as
    fcgi_request (status 200 when the reply has no Status line, as a web
    server reads a CGI reply)."""
    t0 = time.monotonic()
    msg = fcgi_record(FCGI_BEGIN_REQUEST, struct.pack("!HB5x",
                                                      FCGI_RESPONDER, 0))
    msg += _stream(FCGI_PARAMS, fcgi_params(params))
    msg += _stream(FCGI_STDIN, body)
    if isinstance(address, str):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    stdout = b""
    try:
        s.connect(address)
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
            buf += chunk
            while len(buf) >= FCGI_HEADER_LEN:
                _, rtype, _, clen, plen, _ = struct.unpack(
                    "!BBHHBB", buf[:FCGI_HEADER_LEN])
                if len(buf) < FCGI_HEADER_LEN + clen + plen:
                    break
                content = buf[FCGI_HEADER_LEN:FCGI_HEADER_LEN + clen]
                buf = buf[FCGI_HEADER_LEN + clen + plen:]
                if rtype == FCGI_STDOUT:
                    stdout += content
                elif rtype == FCGI_END_REQUEST:
                    ended = True
                    break
    except OSError as e:
        if not stdout:
            return NoResponse(repr(e), time.monotonic() - t0)
    finally:
        s.close()
    return _parse(stdout, time.monotonic() - t0)
