"""
pgproxy.py: a PostgreSQL wire-protocol fault proxy for the cfpm
integration tests (Python 3, standard library only).

It listens on a unix socket directory (the socket is DIR/.s.PGSQL.PORT,
as libpq names it) or on a loopback TCP port, and forwards every
connection to the real private cluster's unix socket. Both directions are
parsed into messages: the client's startup packet, SSLRequest,
GSSENCRequest and CancelRequest have no type byte (int32 length, int32
code), the server's answer to SSLRequest/GSSENCRequest is one byte, and
everything else is a type byte and an int32 length that counts itself.

Armed, the proxy acts on the *next* exchange of one prepared statement,
on whichever connection sends the client's Bind for it (libpq's
PQsendQueryPrepared sends Bind, Describe, Execute and Sync at once):

  cut      the client's Sync is held back (a Flush goes to the server in
           its place, so the server sends its replies but never commits);
           the server's replies are forwarded up to the cut point, then
           both sides are closed. The server rolls back: no row.
  error    like cut, but after CommandComplete the client gets a
           synthetic ErrorResponse and ReadyForQuery; then both closed.
  synccut  the Sync is forwarded (the server commits), everything but
           ReadyForQuery reaches the client, then both sides are closed:
           committed, but the client cannot know.
  notice   the Sync is forwarded; a synthetic NoticeResponse goes to the
           client after CommandComplete, the rest passes; the connection
           stays open (the row is committed).
  pass     the Sync is forwarded, nothing is changed (a control).

A cut point is (where, message): where is "before" (nothing of the
message is forwarded), "type" (its type byte only), "half" (half of its
bytes), or "after" (all of it); message is one of BindComplete,
RowDescription, DataRow, CommandComplete (CUT_POINTS lists them all).
"""

import os
import selectors
import socket
import struct
import threading

# Server message types in a prepared statement's exchange, in order.
MESSAGES = {
    "BindComplete": b"2",
    "RowDescription": b"T",
    "DataRow": b"D",
    "CommandComplete": b"C",
}
MESSAGE_ORDER = ["BindComplete", "RowDescription", "DataRow",
                 "CommandComplete"]
WHERE = ["before", "type", "half", "after"]
CUT_POINTS = [(w, m) for m in MESSAGE_ORDER for w in WHERE]

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
MAX_MESSAGE = 1 << 30      # the server's own limit on one message

FLUSH = b"H" + struct.pack("!I", 4)
SYNC = b"S" + struct.pack("!I", 4)
NAMES = {v: k for k, v in MESSAGES.items()}


def cut_name(point):
    """'after CommandComplete' for a cut point."""
    return "%s %s" % point


def _cstring(data, pos):
    end = data.index(b"\0", pos)
    return data[pos:end].decode("utf-8", "replace"), end + 1


def error_fields(severity, sqlstate, message):
    """The field list of an ErrorResponse / NoticeResponse body."""
    out = b""
    for code, value in ((b"S", severity), (b"V", severity),
                        (b"C", sqlstate), (b"M", message)):
        out += code + value.encode("utf-8") + b"\0"
    return out + b"\0"


def split_typed(buf, who):
    """(message, rest) for the first typed message in buf, or (None, buf)
    while it is incomplete."""
    if len(buf) < 5:
        return None, buf
    n = struct.unpack("!I", buf[1:5])[0]
    if n < 4 or n > MAX_MESSAGE:
        raise ValueError("bad %s message length %d" % (who, n))
    if len(buf) < n + 1:
        return None, buf
    return buf[:n + 1], buf[n + 1:]


def message(mtype, body):
    """A typed protocol message."""
    return mtype + struct.pack("!I", len(body) + 4) + body


def ready_for_query(status=b"I"):
    return message(b"Z", status)


class Plan:
    """One armed exchange: what to do and, once it ran, what happened."""

    def __init__(self, statement, mode, point=None, sqlstate="XX000",
                 severity="WARNING", text="injected by pgproxy"):
        if mode not in ("cut", "error", "synccut", "notice", "pass"):
            raise ValueError("unknown mode %r" % mode)
        if mode == "cut" and point not in CUT_POINTS:
            raise ValueError("unknown cut point %r" % (point,))
        self.statement = statement
        self.mode = mode
        self.point = point
        self.sqlstate = sqlstate
        self.severity = severity
        self.text = text
        self.fired = threading.Event()   # the exchange was acted on
        self.sync_forwarded = False     # the server got the client's Sync
        self.forwarded = []     # server message names passed on, in full
        self.partial = None     # (name, bytes sent) of a cut message
        self.closed = False     # the proxy closed both sides
        self.failed = False     # the server answered an ErrorResponse
        self.skipped = False    # the cut message was not in the exchange


class _Conn:
    """One proxied connection: parses both directions, applies a Plan."""

    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.connect(proxy.upstream)
        self.cbuf = b""
        self.sbuf = b""
        self.startup = True         # client: no type byte yet
        self.ssl_replies = 0        # one-byte server answers owed
        self.raw = False            # cancel request: bytes only
        self.plan = None
        self.open = True

    # -- parsing -----------------------------------------------------------

    def _client_messages(self):
        """Complete client messages in cbuf, as (type, bytes)."""
        out = []
        while True:
            if self.raw:
                if self.cbuf:
                    out.append((None, self.cbuf))
                    self.cbuf = b""
                return out
            if self.startup:
                if len(self.cbuf) < 8:
                    return out
                n, code = struct.unpack("!II", self.cbuf[:8])
                if n < 8 or n > MAX_MESSAGE:
                    raise ValueError("bad startup length %d" % n)
                if len(self.cbuf) < n:
                    return out
                msg, self.cbuf = self.cbuf[:n], self.cbuf[n:]
                if code in (SSL_REQUEST, GSSENC_REQUEST):
                    self.ssl_replies += 1
                elif code == CANCEL_REQUEST:
                    self.raw = True
                else:
                    self.startup = False
                out.append((None, msg))
                continue
            msg, self.cbuf = split_typed(self.cbuf, "client")
            if msg is None:
                return out
            out.append((msg[:1], msg))

    def _server_messages(self):
        out = []
        while True:
            if self.ssl_replies and self.sbuf:
                self.ssl_replies -= 1
                out.append((None, self.sbuf[:1]))
                self.sbuf = self.sbuf[1:]
                continue
            if self.raw:
                if self.sbuf:
                    out.append((None, self.sbuf))
                    self.sbuf = b""
                return out
            msg, self.sbuf = split_typed(self.sbuf, "server")
            if msg is None:
                return out
            out.append((msg[:1], msg))

    # -- the plan ----------------------------------------------------------

    def _bind_statement(self, msg):
        _, pos = _cstring(msg, 5)           # portal
        name, _ = _cstring(msg, pos)
        return name

    def _from_client(self, mtype, msg):
        """Returns the bytes to send to the server for one client message."""
        if mtype == b"B" and self.plan is None:
            self.plan = self.proxy._take(self._bind_statement(msg))
            if self.plan is not None:
                self.plan.fired.set()
        if mtype == b"S" and self.plan is not None:
            if self.plan.mode in ("cut", "error"):
                return FLUSH        # replies, but no commit
            self.plan.sync_forwarded = True
        return msg

    def _from_server(self, mtype, msg):
        """Returns (bytes for the client, close afterwards)."""
        p = self.plan
        if p is None or mtype is None:
            return msg, False
        name = NAMES.get(mtype)
        if mtype == b"Z":
            if p.mode == "synccut":
                return b"", True
            self._finish()
            return msg, False
        if mtype == b"E":
            # The statement failed on its own: a held Sync goes now (the
            # server skips to it), so the exchange ends as it would have.
            if p.mode in ("cut", "error"):
                self.server.sendall(SYNC)
            p.failed = True
            return msg, False
        if p.mode == "cut" and name is not None and \
                MESSAGE_ORDER.index(name) > MESSAGE_ORDER.index(p.point[1]):
            p.skipped = True        # the cut message never came
            return b"", True
        if p.mode == "cut" and name == p.point[1]:
            where = p.point[0]
            if where == "before":
                return b"", True
            if where in ("type", "half"):
                k = 1 if where == "type" else max(2, len(msg) // 2)
                p.partial = (name, k)
                return msg[:k], True
            p.forwarded.append(name)
            return msg, True
        if name is not None:
            p.forwarded.append(name)
        if mtype == b"C" and p.mode == "error":
            return msg + message(b"E", error_fields(
                "ERROR", p.sqlstate, p.text)) + ready_for_query(), True
        if mtype == b"C" and p.mode == "notice":
            return msg + message(b"N", error_fields(
                p.severity, p.sqlstate, p.text)), False
        return msg, False

    def _finish(self):
        self.plan = None

    # -- the loop ----------------------------------------------------------

    def run(self):
        sel = selectors.DefaultSelector()
        sel.register(self.client, selectors.EVENT_READ, "c")
        sel.register(self.server, selectors.EVENT_READ, "s")
        try:
            while self.open and not self.proxy.stopping:
                for key, _ in sel.select(0.5):
                    if not self._pump(key.data):
                        return
        except (OSError, ValueError):
            pass
        finally:
            sel.close()
            self.close()

    def _pump(self, side):
        src = self.client if side == "c" else self.server
        data = src.recv(65536)
        if not data:
            return False
        if side == "c":
            self.cbuf += data
            out = b"".join(self._from_client(t, m)
                           for t, m in self._client_messages())
            if out:
                self.server.sendall(out)
            return True
        self.sbuf += data
        for t, m in self._server_messages():
            out, cut = self._from_server(t, m)
            if out:
                self.client.sendall(out)
            if cut:
                if self.plan is not None:
                    self.plan.closed = True
                self._finish()
                return False
        return True

    def close(self):
        self.open = False
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self._finish()


class PgProxy:
    """The proxy: start() it, arm() an exchange, stop() it.

    upstream: the real server's unix socket path (DIR/.s.PGSQL.PORT).
    sockdir + port: listen on sockdir/.s.PGSQL.port; or tcp_port: listen
    on 127.0.0.1:tcp_port."""

    def __init__(self, upstream, sockdir=None, port=None, tcp_port=None):
        self.upstream = upstream
        self.sockdir = sockdir
        self.port = port if tcp_port is None else tcp_port
        self.tcp = tcp_port is not None
        self.stopping = False
        self.lock = threading.Lock()
        self.armed = None
        self.connections = 0
        self.conns = []
        if self.tcp:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", tcp_port))
        else:
            path = os.path.join(sockdir, ".s.PGSQL.%d" % port)
            if os.path.exists(path):
                os.unlink(path)
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(path)
            # cfpm's workers run unprivileged (cfpmtest.WORKER_USER).
            os.chmod(sockdir, 0o755)
            os.chmod(path, 0o666)
        self.sock.listen(64)
        self.sock.settimeout(0.5)
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def conninfo(self, dbname="events", user="postgres"):
        host = "127.0.0.1" if self.tcp else self.sockdir
        return "host=%s port=%d dbname=%s user=%s" % (host, self.port,
                                                      dbname, user)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()
        for c in list(self.conns):
            c.close()

    def arm(self, statement, mode, point=None, **kw):
        """Acts on the next exchange of statement (see the module doc);
        returns its Plan. Replaces a plan that has not fired yet."""
        p = Plan(statement, mode, point, **kw)
        with self.lock:
            self.armed = p
        return p

    def disarm(self):
        with self.lock:
            p, self.armed = self.armed, None
        return p

    def _take(self, statement):
        with self.lock:
            p = self.armed
            if p is None or p.statement != statement:
                return None
            self.armed = None
            return p

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                c = _Conn(self, client)
            except OSError:
                client.close()      # the real server is down
                continue
            self.connections += 1
            self.conns = [x for x in self.conns if x.open] + [c]
            threading.Thread(target=c.run, daemon=True).start()
