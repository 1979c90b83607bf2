"""
cfpmtest.py: shared harness for the cfpm integration tests (Python 3,
standard library only).

Each test file builds one Stack: a private PostgreSQL 15 cluster (run as the
postgres user), an RSA key pair and tokens from cfpm-token, a generated nginx
server on a free loopback port built from the shipped etc/nginx/cfpm.conf,
and cfpm itself (bound to a unix socket in the temp dir, or started through
systemd-socket-activate). Tests drive the stack over HTTP and print TAP.

Everything the harness starts runs in its own process group and is killed
on exit (normal end, exception, SIGTERM/SIGINT/SIGHUP from make), so a
failing test leaves no postgres, nginx or cfpm behind. Every wait has a
deadline and every request a timeout.

Environment (exported by Makefile.am; defaults for a run from the tree):
  CFPM_SRCDIR    source tree (sql/, etc/nginx/cfpm.conf)
  CFPM_BUILDDIR  build tree (cfpm, cfpm-token)
  CFPM_NGINX     nginx binary
  CFPM_PG_BINDIR PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
  CFPM_KEEP_TMP  set to 1 to keep the temp dir (its path is printed)

Run as root, the harness configures cfpm's workers to run unprivileged,
as WORKER_USER:WORKER_GROUP (nobody:nogroup), and checks that what the
workers must reach is reachable for that user: the temp dir (access
logs), the PostgreSQL socket directory, and the sanitizers' report
directory (log_path in ASAN_OPTIONS / UBSAN_OPTIONS), whose reports would
otherwise be lost without a word.
"""

import atexit
import base64
import grp
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
NGINX = os.environ.get("CFPM_NGINX") or shutil.which("nginx") or \
    "/usr/sbin/nginx"
PG_BINDIR = os.environ.get("CFPM_PG_BINDIR") or "/usr/lib/postgresql/15/bin"
SOCKET_ACTIVATE = shutil.which("systemd-socket-activate") or \
    "/usr/bin/systemd-socket-activate"
PG_USER = "postgres"
WORKER_USER = "nobody"      # what the workers run as when the tests are root
WORKER_GROUP = "nogroup"

CFPM = os.path.join(BUILDDIR, "cfpm")
CFPM_TOKEN = os.path.join(BUILDDIR, "cfpm-token")

ISSUER = "https://auth.bench.local"
AUDIENCE = "events-api"
SUBJECT = "client-bench"
SCOPE = "events:read events:write"
KID = "bench-1"
SEED_ROWS = 1000
MAX_BODY = 64 * 1024

WWW_NONE = 'Bearer realm="events"'
WWW_INVALID_REQUEST = 'Bearer realm="events", error="invalid_request"'
WWW_INVALID_TOKEN = 'Bearer realm="events", error="invalid_token"'
WWW_COMPAT = 'Bearer error="invalid_token"'


def www_scope(scope):
    return ('Bearer realm="events", error="insufficient_scope", '
            'scope="%s"' % scope)


# ---------------------------------------------------------------------------
# TAP

class TAP:
    """A TAP producer: numbered ok/not ok lines, diagnostics, plan at end."""

    def __init__(self):
        self.count = 0
        self.failed = 0

    @staticmethod
    def _clean(desc):
        # '#' starts a directive in TAP; keep descriptions on one line.
        return str(desc).replace("#", "No.").replace("\n", " ")

    def diag(self, msg):
        for line in str(msg).splitlines() or [""]:
            print("# " + line)
        sys.stdout.flush()

    def ok(self, cond, desc, *diags):
        self.count += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.count,
                              self._clean(desc)))
        if not cond:
            for d in diags:
                self.diag(d)
        sys.stdout.flush()
        return bool(cond)

    def is_(self, got, want, desc):
        return self.ok(got == want, desc,
                       "   got: %r" % (got,), "  want: %r" % (want,))

    def like(self, got, regex, desc):
        cond = isinstance(got, (str, bytes)) and \
            re.search(regex, got) is not None
        return self.ok(cond, desc, "   got: %r" % (got,),
                       "  want match: %r" % (regex,))

    def cmp_ok(self, got, op, want, desc):
        ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
               ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
               "!=": lambda a, b: a != b, "==": lambda a, b: a == b}
        try:
            cond = ops[op](got, want)
        except TypeError:
            cond = False
        return self.ok(cond, desc, "   got: %r" % (got,),
                       "  want: %s %r" % (op, want))

    def skip(self, desc, reason):
        self.count += 1
        print("ok %d - %s # SKIP %s" % (self.count, self._clean(desc),
                                       self._clean(reason)))
        sys.stdout.flush()

    def done(self):
        print("1..%d" % self.count)
        sys.stdout.flush()
        return 0 if self.failed == 0 and self.count > 0 else 1


# ---------------------------------------------------------------------------
# Process bookkeeping and cleanup

_procs = []       # Popen objects started in their own session
_clusters = []    # Postgres objects to stop
_tmpdirs = []     # temp dirs to remove
_cleaned = False


def _kill_group(pgid, sig=signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def cleanup():
    """Kills every process group the harness started, stops every cluster,
    removes temp dirs (unless CFPM_KEEP_TMP). Safe to call twice."""
    global _cleaned
    if _cleaned:
        return
    _cleaned = True
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)    # finish cleaning up first
    for p in _procs:
        # A group whose leader we already reaped may have a reused pid:
        # only signal groups whose leader is still ours.
        if p.poll() is None:
            _kill_group(p.pid)
            try:
                p.wait(timeout=5)
            except Exception:
                pass
    for pg in _clusters:
        try:
            pg.kill()
        except Exception:
            pass
    # Orphans (workers of a master that died, a stray postmaster) carry
    # our unique temp dir in their command line.
    for path in _tmpdirs:
        for pid in cmdline_pids(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for path in _tmpdirs:
        if os.environ.get("CFPM_KEEP_TMP") == "1":
            print("# kept temp dir %s" % path)
            continue
        shutil.rmtree(path, ignore_errors=True)


atexit.register(cleanup)


def _on_signal(signum, frame):
    # Turn make's SIGTERM (or ^C) into SystemExit so finally/atexit run.
    raise SystemExit(128 + signum)


for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_s, _on_signal)


def spawn(argv, log_path=None, env=None, cwd=None, stdin=None):
    """Starts argv in a new session (its own process group), output to
    log_path (appended), and registers it for cleanup. Returns the Popen."""
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        p = subprocess.Popen(argv, stdin=stdin or subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, env=env,
                             cwd=cwd, start_new_session=True)
    finally:
        if log_path:
            out.close()
    _procs.append(p)
    return p


def run(argv, timeout=60, input=None, env=None, cwd=None):
    """Runs argv to completion; returns (rc, stdout text, stderr text)."""
    p = subprocess.run(argv, input=input, capture_output=True,
                       timeout=timeout, env=env, cwd=cwd,
                       start_new_session=True)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def have_ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            s.bind(("::1", 0))
            return True
        finally:
            s.close()
    except OSError:
        return False


def wait_for(pred, timeout, interval=0.05):
    """Polls pred() until it returns a true value or timeout seconds pass.
    Returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(%s: %s)" % (path, e.strerror)
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


# ---------------------------------------------------------------------------
# The workers' user

def worker_ids():
    """(uid, gid) the workers run as, or None when the tests are not root
    (then cfpm cannot change user and the workers run as we do)."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam(WORKER_USER).pw_uid, grp.getgrnam(WORKER_GROUP).gr_gid


def reachable(path, bits, ids=None):
    """True if the workers' user can use path with the access bits (os.R_OK,
    W_OK, X_OK) and search every directory above it (mode bits, no ACLs)."""
    ids = ids or worker_ids()
    if ids is None:
        return os.access(path, bits)
    uid, gid = ids

    def allowed(p, want):
        st = os.stat(p)
        if st.st_uid == uid:
            shift = 6
        elif st.st_gid == gid:
            shift = 3
        else:
            shift = 0
        return (st.st_mode >> shift) & want == want
    p = os.path.abspath(path)
    parts = []
    while True:
        parts.append(p)
        if p == "/":
            break
        p = os.path.dirname(p)
    return all(allowed(d, os.X_OK) for d in parts[1:]) and \
        allowed(parts[0], bits)


def check_sanitizer_dirs():
    """Raises if a sanitizer log_path directory is not writable by the
    workers' user: their reports would be lost silently."""
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        for opt in os.environ.get(var, "").split(":"):
            if opt.startswith("log_path="):
                d = os.path.dirname(opt[len("log_path="):]) or "."
                if os.path.isdir(d) and \
                        not reachable(d, os.W_OK | os.X_OK):
                    raise RuntimeError(
                        "%s log_path directory %s is not writable by %s:%s "
                        "(the workers): their reports would be lost" %
                        (var, d, WORKER_USER, WORKER_GROUP))


# ---------------------------------------------------------------------------
# /proc helpers

def proc_stat(pid):
    """(state, ppid, pgid, starttime) of pid, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data.rpartition(")")[2].split()
    # rest[0] = state (field 3), rest[1] = ppid, rest[2] = pgrp,
    # rest[19] = starttime (field 22)
    return rest[0], int(rest[1]), int(rest[2]), int(rest[19])


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def children(ppid, include_zombies=False):
    """Pids whose parent is ppid (zombies left out unless asked)."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1] == ppid and (include_zombies or st[0] != "Z"):
            out.append(pid)
    return sorted(out)


def zombies(ppid):
    return [p for p in children(ppid, True)
            if (proc_stat(p) or ("?",))[0] == "Z"]


def group_members(pgid):
    """Live (non-zombie) pids in process group pgid."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[2] == pgid and st[0] != "Z":
            out.append(pid)
    return sorted(out)


def cmdline_pids(needle):
    """Pids (not ours) whose command line contains needle."""
    out = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if needle.encode() in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def pid_alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] != "Z"


def is_socket(path):
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def unix_socket_live(path):
    """True if something accepts connections on the unix socket path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class NotifySocket:
    """A unix datagram socket standing in for systemd's NOTIFY_SOCKET:
    pass .path in the environment, then read the messages."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []   # every line received, in order

    def poll(self, timeout=0.0):
        """Reads what arrived within timeout; returns all lines so far."""
        self.sock.settimeout(timeout if timeout > 0 else 0.001)
        try:
            while True:
                data = self.sock.recv(4096)
                self.messages += data.decode("utf-8", "replace").split("\n")
                self.sock.settimeout(0.001)
        except (socket.timeout, BlockingIOError):
            pass
        return self.messages

    def wait(self, line, timeout):
        """True once a message line equal to line arrived."""
        return bool(wait_for(lambda: line in self.poll(0.05), timeout))

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# HTTP

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
        return self.headers.get(name.lower())

    def header_count(self, name):
        return sum(1 for k, _ in self.header_list if k == name.lower())

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None

    def __repr__(self):
        return "<%d %r %r>" % (self.status, self.headers, self.body[:300])


class Timeout(Response):
    """Stands in for a response when the request failed (status 0)."""

    def __init__(self, err, elapsed):
        Response.__init__(self, 0, "error: %s" % err, [], b"", elapsed)
        self.error = err


def http_request(port, method, path, headers=None, body=None, timeout=10,
                 host="127.0.0.1"):
    """One request with http.client (new connection). Never raises: a
    network error or timeout returns a Response with status 0."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        if isinstance(body, str):
            body = body.encode("utf-8")
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or []):
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        return Response(r.status, r.reason, r.getheaders(), data,
                        time.monotonic() - t0)
    except (OSError, http.client.HTTPException) as e:
        return Timeout(repr(e), time.monotonic() - t0)
    finally:
        conn.close()


def http_raw(port, data, timeout=10, method="GET", host="127.0.0.1"):
    """Sends raw request bytes (for requests http.client will not build:
    repeated headers, undecoded paths) and parses the answer."""
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(data)
        r = http.client.HTTPResponse(s, method=method)
        r.begin()
        body = r.read()
        return Response(r.status, r.reason, r.getheaders(), body,
                        time.monotonic() - t0)
    except (OSError, http.client.HTTPException) as e:
        return Timeout(repr(e), time.monotonic() - t0)
    finally:
        s.close()


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


# ---------------------------------------------------------------------------
# FastCGI client (talks to cfpm's socket directly, without nginx)

FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, \
    FCGI_STDOUT, FCGI_STDERR = 1, 3, 4, 5, 6, 7


def _fcgi_record(rtype, content, req_id=1):
    pad = (8 - len(content) % 8) % 8
    return struct.pack("!BBHHBB", 1, rtype, req_id, len(content), pad, 0) + \
        content + b"\0" * pad


def _fcgi_len(n):
    return bytes([n]) if n < 128 else struct.pack("!I", n | 0x80000000)


def _fcgi_params(params):
    out = b""
    for k, v in params.items():
        k = k.encode("latin-1") if isinstance(k, str) else k
        v = v.encode("latin-1") if isinstance(v, str) else v
        out += _fcgi_len(len(k)) + _fcgi_len(len(v)) + k + v
    return out


def fcgi_request(address, method, uri, headers=None, body=b"",
                 content_length=None, timeout=10, extra=None):
    """One FastCGI responder request to address (unix path or (host, port)),
    with CGI params built like Debian's fastcgi_params. headers: dict of
    HTTP header name -> value (becomes HTTP_*; Content-Type and
    Content-Length become CONTENT_*); extra: more CGI params, set last
    (e.g. REQUEST_ID). Strings go out as latin-1: "\xff" is the byte
    0xff. Returns a Response."""
    t0 = time.monotonic()
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
    msg = _fcgi_record(FCGI_BEGIN_REQUEST, struct.pack("!HB5x", 1, 0))
    p = _fcgi_params(params)
    for i in range(0, len(p), 65535):
        msg += _fcgi_record(FCGI_PARAMS, p[i:i + 65535])
    msg += _fcgi_record(FCGI_PARAMS, b"")
    for i in range(0, len(body), 65535):
        msg += _fcgi_record(FCGI_STDIN, body[i:i + 65535])
    msg += _fcgi_record(FCGI_STDIN, b"")
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
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            while len(buf) >= 8:
                _, rtype, _, clen, plen, _ = struct.unpack("!BBHHBB", buf[:8])
                if len(buf) < 8 + clen + plen:
                    break
                content = buf[8:8 + clen]
                buf = buf[8 + clen + plen:]
                if rtype == FCGI_STDOUT:
                    stdout += content
                elif rtype == FCGI_END_REQUEST:
                    ended = True
                    break
    except OSError as e:
        if not stdout:
            return Timeout(repr(e), time.monotonic() - t0)
    finally:
        s.close()
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
    return Response(status, reason, hl, rbody, time.monotonic() - t0)


# ---------------------------------------------------------------------------
# PostgreSQL: a private cluster owned by the postgres user

class Postgres:
    def __init__(self, base):
        self.dir = os.path.join(base, "pg")
        self.data = os.path.join(self.dir, "data")
        self.sockdir = os.path.join(self.dir, "sock")
        self.log = os.path.join(self.dir, "postgres.log")
        self.ctl_log = os.path.join(base, "pg_ctl.out")
        self.port = free_port()
        self.running = False

    def conninfo(self, dbname="events"):
        return "host=%s port=%d dbname=%s user=postgres" % (
            self.sockdir, self.port, dbname)

    def _as_postgres(self, argv, timeout):
        # PostgreSQL refuses to run as root: go through runuser then.
        if os.geteuid() == 0:
            argv = ["runuser", "-u", PG_USER, "--"] + argv
        with open(self.ctl_log, "ab") as out:
            p = subprocess.run(argv,
                               stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, cwd=self.dir,
                               timeout=timeout, start_new_session=True)
        return p.returncode

    def init(self, rows=SEED_ROWS):
        """initdb, start, create database events, schema and seed."""
        os.makedirs(self.sockdir)
        os.makedirs(self.data)
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam(PG_USER)
            for d in (self.dir, self.sockdir, self.data):
                os.chown(d, pw.pw_uid, pw.pw_gid)
        os.chmod(self.data, 0o700)
        _clusters.append(self)
        rc = self._as_postgres([os.path.join(PG_BINDIR, "initdb"), "-D",
                                self.data, "-A", "trust", "-U", PG_USER,
                                "--no-sync", "-E", "UTF8",
                                "--locale=C"], 120)
        if rc != 0:
            raise RuntimeError("initdb failed (rc %d):\n%s" %
                               (rc, tail(self.ctl_log)))
        self.start()
        self.psql("CREATE DATABASE events", dbname="postgres")
        for f, extra in (("schema.sql", []),
                         ("seed.sql", ["-v", "rows=%d" % rows])):
            rc, out, err = run([os.path.join(PG_BINDIR, "psql"), "-X", "-q",
                                "-h", self.sockdir, "-p", str(self.port),
                                "-U", PG_USER, "-d", "events",
                                "-v", "ON_ERROR_STOP=1"] + extra +
                               ["-f", os.path.join(SRCDIR, "sql", f)],
                               timeout=120)
            if rc != 0:
                raise RuntimeError("psql -f %s failed: %s" % (f, err))

    def start(self):
        opts = ("-k %s -c listen_addresses='' -p %d -c fsync=on "
                "-c synchronous_commit=on -c max_connections=100" %
                (self.sockdir, self.port))
        rc = self._as_postgres([os.path.join(PG_BINDIR, "pg_ctl"), "-D",
                                self.data, "-o", opts, "-w", "-t", "60",
                                "-l", self.log, "start"], 90)
        if rc != 0:
            raise RuntimeError("pg_ctl start failed (rc %d):\n%s\n%s" %
                               (rc, tail(self.ctl_log), tail(self.log)))
        self.running = True

    def stop(self, mode="fast"):
        rc = self._as_postgres([os.path.join(PG_BINDIR, "pg_ctl"), "-D",
                                self.data, "-m", mode, "-w", "-t", "60",
                                "stop"], 90)
        if rc != 0:
            raise RuntimeError("pg_ctl stop failed (rc %d):\n%s" %
                               (rc, tail(self.ctl_log)))
        self.running = False

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def kill(self):
        """Cleanup: immediate stop, then SIGKILL whatever is left."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        try:
            self._as_postgres([os.path.join(PG_BINDIR, "pg_ctl"), "-D",
                               self.data, "-m", "immediate", "-w", "-t",
                               "10", "stop"], 20)
        except Exception:
            pass
        if pid_alive(pid):
            st = proc_stat(pid)
            if st and st[2] == pid:     # pg_ctl puts it in its own group
                _kill_group(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def psql(self, sql, dbname="events", timeout=30):
        """Runs sql; returns a list of rows, each a list of text fields."""
        rc, out, err = run([os.path.join(PG_BINDIR, "psql"), "-X", "-A",
                            "-t", "-q", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", self.sockdir, "-p", str(self.port),
                            "-U", PG_USER, "-d", dbname, "-c", sql],
                           timeout=timeout)
        if rc != 0:
            raise RuntimeError("psql failed: %s: %s" % (sql, err.strip()))
        return [line.split("\t") for line in out.splitlines() if line]

    def row_count(self):
        return int(self.psql("SELECT count(*) FROM events")[0][0])

    def lock_table(self):
        """Holds an ACCESS EXCLUSIVE lock on events in an open transaction
        (to keep a request in flight). Returns the psql Popen: write
        'COMMIT;\\n\\q\\n' to its stdin (or release_lock) to let go."""
        p = subprocess.Popen([os.path.join(PG_BINDIR, "psql"), "-X", "-q",
                              "-h", self.sockdir, "-p", str(self.port),
                              "-U", PG_USER, "-d", "events"],
                             stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
        _procs.append(p)
        p.stdin.write(b"BEGIN;\nLOCK TABLE events IN ACCESS EXCLUSIVE "
                      b"MODE;\n")
        p.stdin.flush()
        if not wait_for(self.lock_held, 10, 0.1):
            self.release_lock(p)
            raise RuntimeError("could not take the lock on events")
        return p

    def lock_held(self):
        return int(self.psql(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c "
            "ON c.oid = l.relation WHERE c.relname = 'events' "
            "AND l.mode = 'AccessExclusiveLock' AND l.granted")[0][0]) > 0

    @staticmethod
    def release_lock(p, timeout=10):
        try:
            p.stdin.write(b"COMMIT;\n\\q\n")
            p.stdin.flush()
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p.pid)

    def waiting_locks(self):
        """Number of backends waiting for a lock on events."""
        return int(self.psql(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c "
            "ON c.oid = l.relation WHERE c.relname = 'events' "
            "AND NOT l.granted")[0][0])


# ---------------------------------------------------------------------------
# Keys and tokens

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")



CRASH_RE = re.compile(r"killed by signal|exited with status|stack smashing|"
                      r"AddressSanitizer|runtime error")


def crash_lines(c, since=0):
    """Lines of cfpm c's log, from byte offset since, that tell of a
    crash: a worker killed by a signal or exiting with an error, a stack
    smash, a sanitizer report."""
    with open(c.log, errors="replace") as f:
        f.seek(since)
        return [l for l in f.read().splitlines() if CRASH_RE.search(l)]


def vmrss_kb(pid):
    """VmRSS of pid in kB, or None if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def workers_seen(c, seconds, interval=0.02):
    """Every worker pid of cfpm c seen during the next seconds (a fork
    loop shows as many more pids than the pool)."""
    seen = set()
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        seen |= set(c.workers())
        time.sleep(interval)
    return seen


def write_jwks(path, *keys):
    """Writes one JWKS at path holding the keys of every Keys in keys (in
    order), through a temporary file and a rename (a reload never reads a
    half-written file). Returns path."""
    merged = []
    for k in keys:
        with open(k.jwks) as f:
            merged += json.load(f)["keys"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"keys": merged}, f)
    os.rename(tmp, path)
    return path

class Keys:
    """An RSA key pair made by cfpm-token keygen (or openssl while the tool
    is not built): priv, pub (SPKI PEM), jwks paths."""

    def __init__(self, directory, kid=KID):
        self.dir = directory
        self.kid = kid
        os.makedirs(directory, exist_ok=True)
        self.priv = os.path.join(directory, "jwt.key.pem")
        self.pub = os.path.join(directory, "jwt.pub.pem")
        self.jwks = os.path.join(directory, "jwks.json")
        self.tool = os.access(CFPM_TOKEN, os.X_OK)
        if self.tool:
            rc, out, err = run([CFPM_TOKEN, "keygen", "--dir", directory,
                                "--kid", kid])
            if rc != 0:
                raise RuntimeError("cfpm-token keygen failed: %s" % err)
        else:
            rc, _, err = run(["openssl", "genpkey", "-algorithm", "RSA",
                              "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                              self.priv])
            if rc == 0:
                rc, _, err = run(["openssl", "pkey", "-in", self.priv,
                                  "-pubout", "-out", self.pub])
            if rc != 0:
                raise RuntimeError("openssl keygen failed: %s" % err)
        for p in (self.priv, self.pub):
            if not os.path.exists(p):
                raise RuntimeError("keygen did not write %s" % p)

    def sign(self, header, payload):
        """Signs raw header and payload text (str) with RS256; returns the
        compact token."""
        if self.tool:
            rc, out, err = run([CFPM_TOKEN, "sign", "--key", self.priv,
                                "--header", header, "--payload", payload])
            if rc != 0:
                raise RuntimeError("cfpm-token sign failed: %s" % err)
            return out.strip()
        signing_input = (b64url(header.encode()) + "." +
                         b64url(payload.encode())).encode()
        p = subprocess.run(["openssl", "dgst", "-sha256", "-sign",
                            self.priv], input=signing_input,
                           capture_output=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("openssl dgst failed: %s" % p.stderr)
        return signing_input.decode() + "." + b64url(p.stdout)

    def mint(self, kid=KID, iss=ISSUER, aud=AUDIENCE, sub=SUBJECT,
             scope=SCOPE, exp=7 * 86400, nbf=-60, typ="JWT", now=None):
        """A token like the benchmark's; pass None to leave a member out
        (kid, scope, typ). exp/nbf are seconds from now."""
        if self.tool:
            argv = [CFPM_TOKEN, "mint", "--key", self.priv, "--iss", iss,
                    "--aud", aud, "--sub", sub, "--exp", str(exp),
                    "--nbf", str(nbf)]
            argv += ["--no-kid"] if kid is None else ["--kid", kid]
            argv += ["--no-scope"] if scope is None else ["--scope", scope]
            argv += ["--no-typ"] if typ is None else ["--typ", typ]
            if now is not None:
                argv += ["--now", str(now)]
            rc, out, err = run(argv)
            if rc != 0:
                raise RuntimeError("cfpm-token mint failed: %s" % err)
            return out.strip()
        t = int(time.time()) if now is None else now
        header = {"alg": "RS256"}
        if typ is not None:
            header["typ"] = typ
        if kid is not None:
            header["kid"] = kid
        claims = {"iss": iss, "aud": aud, "sub": sub, "client_id": sub,
                  "iat": t, "nbf": t + nbf, "exp": t + exp,
                  "jti": b64url(os.urandom(12))}
        if scope is not None:
            claims["scope"] = scope
        return self.sign(json.dumps(header, separators=(",", ":")),
                         json.dumps(claims, separators=(",", ":")))

    def bench(self, outdir):
        """The benchmark token set: dict name -> token for valid, readonly,
        writeonly, expired, notyet, foreign (and pool: list)."""
        os.makedirs(outdir, exist_ok=True)
        names = ["valid", "readonly", "writeonly", "expired", "notyet",
                 "foreign"]
        toks = {}
        if self.tool:
            rc, out, err = run([CFPM_TOKEN, "bench", "--key", self.priv,
                                "--dir", outdir, "--pool", "8"])
            if rc != 0:
                raise RuntimeError("cfpm-token bench failed: %s" % err)
            for n in names:
                with open(os.path.join(outdir, n + ".jwt")) as f:
                    toks[n] = f.read().strip()
            with open(os.path.join(outdir, "pool.txt")) as f:
                toks["pool"] = [l.strip() for l in f if l.strip()]
            return toks
        toks["valid"] = self.mint()
        toks["readonly"] = self.mint(scope="events:read")
        toks["writeonly"] = self.mint(scope="events:write")
        toks["expired"] = self.mint(exp=-3600, nbf=-7200)
        toks["notyet"] = self.mint(nbf=3600)
        other = Keys(os.path.join(outdir, "foreign-key"))
        toks["foreign"] = other.mint()
        toks["pool"] = [self.mint() for _ in range(8)]
        return toks


# ---------------------------------------------------------------------------
# The stack

class Cfpm:
    """A running cfpm (Popen, pid, log path, config path, socket path)."""

    def __init__(self, popen, log, conf, sock, activated):
        self.popen = popen
        self.pid = popen.pid
        self.log = log
        self.conf = conf
        self.sock = sock
        self.activated = activated

    def alive(self):
        return self.popen.poll() is None

    def workers(self):
        return children(self.pid)


class Stack:
    """Temp dir + PostgreSQL + keys/tokens + nginx + cfpm for one test
    file. Use as a context manager or call close()."""

    def __init__(self, tap, name="cfpm"):
        self.tap = tap
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="cfpm-it-")
        _tmpdirs.append(self.dir)
        os.chmod(self.dir, 0o755)   # the postgres user must traverse it
        ids = worker_ids()
        if ids is not None:
            # Unprivileged workers create and reopen their access logs
            # here: the directory is writable for their group.
            os.chown(self.dir, 0, ids[1])
            os.chmod(self.dir, 0o775)
            check_sanitizer_dirs()
        self.pg = Postgres(self.dir)
        self.keys = None
        self.tokens = {}
        self.nginx = None
        self.http_port = None
        self.cfpm = None
        self.sock = os.path.join(self.dir, "cfpm.sock")
        self.status_sock = os.path.join(self.dir, "status.sock")
        self._nconf = 0
        self._nlog = 0
        self.logs = []

    # -- setup ------------------------------------------------------------

    def setup(self, rows=SEED_ROWS, nginx=True):
        """PostgreSQL cluster with seed rows, keys, bench tokens, nginx."""
        self.pg.init(rows)
        self.logs.append(self.pg.log)
        sock = os.path.join(self.pg.sockdir, ".s.PGSQL.%d" % self.pg.port)
        if not reachable(sock, os.W_OK):
            raise RuntimeError("the PostgreSQL socket %s is out of reach "
                               "for %s" % (sock, WORKER_USER))
        self.keys = Keys(os.path.join(self.dir, "keys"))
        if not self.keys.tool:
            self.tap.diag("cfpm-token not built: signing with openssl")
        self.tokens = self.keys.bench(os.path.join(self.dir, "tokens"))
        if nginx:
            self.start_nginx()
        return self

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            if issubclass(exc_type, Exception):
                self.tap.ok(False, "harness: unexpected exception",
                            "".join(traceback.format_exception(
                                exc_type, exc, tb)))
            else:
                self.tap.ok(False, "interrupted (%s)" % exc_type.__name__)
        self.close()
        # Exceptions are reported as a failed test; exits propagate.
        return exc_type is not None and issubclass(exc_type, Exception)

    def close(self):
        if self.tap.failed:
            for path in self.logs:
                if os.path.exists(path):
                    self.tap.diag("---- tail of %s" % path)
                    self.tap.diag(tail(path, 30))
        cleanup()

    # -- shorthands ---------------------------------------------------------

    def stop_postgres(self):
        self.pg.stop()

    def start_postgres(self):
        self.pg.start()

    def psql_query(self, sql):
        return self.pg.psql(sql)

    def row_count(self):
        return self.pg.row_count()

    def worker_pids(self):
        return self.cfpm.workers() if self.cfpm else []

    # -- nginx ------------------------------------------------------------

    def nginx_conf(self, upstream, keep_conn=0):
        """nginx.conf text: the shipped server block with our upstream
        and listen port, inside a self-contained main config. keep_conn
        > 0 turns fastcgi_keep_conn on with that many cached upstream
        connections (what a user copying a PHP-FPM setup would do)."""
        with open(os.path.join(SRCDIR, "etc", "nginx", "cfpm.conf")) as f:
            block = f.read()
        if keep_conn:
            block, n = re.subn(r"fastcgi_keep_conn off;",
                               "fastcgi_keep_conn on;", block)
            block = re.sub(r"(upstream\s+cfpm\s*\{)", r"\1\n    keepalive %d;"
                           % keep_conn, block, count=1)
            if n != 1:
                raise RuntimeError("etc/nginx/cfpm.conf: no "
                                   "fastcgi_keep_conn line to turn on")
        servers = {"cfpm": upstream,
                   "cfpm_status": "unix:" + self.status_sock}
        unknown = []

        def sub_upstream(m):
            name = m.group(1)
            if name not in servers:
                unknown.append(name)
                return m.group(0)
            return re.sub(r"server\s+[^;]+;", "server %s;" % servers[name],
                          m.group(0), count=1)
        block, n1 = re.subn(r"upstream\s+(\S+)\s*\{[^}]*\}", sub_upstream,
                            block)
        if unknown:
            raise RuntimeError("etc/nginx/cfpm.conf: unknown upstream %r" %
                               unknown)
        lines = []
        n2 = 0
        for line in block.splitlines():
            if re.match(r"\s*listen\s", line):
                if n2 == 0:
                    lines.append("    listen 127.0.0.1:%d;" %
                                 self.http_port)
                n2 += 1
                continue
            lines.append(line)
        block = "\n".join(lines)
        block, n3 = re.subn(r"include\s+fastcgi_params\s*;",
                            "include /etc/nginx/fastcgi_params;", block)
        if not (n1 >= 1 and n2 >= 1 and n3 >= 1):
            raise RuntimeError("etc/nginx/cfpm.conf changed shape: "
                               "upstream %d, listen %d, include %d" %
                               (n1, n2, n3))
        d = self.dir
        tmp = os.path.join(d, "nginx-tmp")
        os.makedirs(tmp, exist_ok=True)
        return """# generated by cfpmtest.py from etc/nginx/cfpm.conf
daemon off;
master_process on;
worker_processes 1;
%(user)s
pid %(d)s/nginx.pid;
error_log %(d)s/nginx-error.log notice;
events { worker_connections 512; }
http {
    access_log off;
    default_type application/octet-stream;
    client_body_temp_path %(t)s/body;
    fastcgi_temp_path %(t)s/fastcgi;
    proxy_temp_path %(t)s/proxy;
    uwsgi_temp_path %(t)s/uwsgi;
    scgi_temp_path %(t)s/scgi;
%(block)s
}
""" % {"d": d, "t": tmp, "block": block,
       "user": "user root;" if os.geteuid() == 0 else ""}

    def start_nginx(self, upstream=None, keep_conn=0):
        """Starts nginx on a free port with upstream (default: our unix
        socket); waits until it accepts connections. keep_conn: see
        nginx_conf()."""
        if upstream is None:
            upstream = "unix:" + self.sock
        if self.http_port is None:
            self.http_port = free_port()
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.nginx_conf(upstream, keep_conn))
        log = os.path.join(self.dir, "nginx-error.log")
        if log not in self.logs:
            self.logs.append(log)
        self.nginx = spawn([NGINX, "-e", log, "-p", self.dir, "-c", conf],
                           log_path=os.path.join(self.dir, "nginx.out"))

        def up():
            if self.nginx.poll() is not None:
                return "dead"
            try:
                socket.create_connection(("127.0.0.1", self.http_port),
                                         timeout=1).close()
                return "up"
            except OSError:
                return None
        st = wait_for(up, 15)
        if st != "up":
            raise RuntimeError("nginx did not start (%s):\n%s\n%s" % (
                st, tail(os.path.join(self.dir, "nginx.out")), tail(log)))

    def stop_nginx(self, timeout=10):
        if self.nginx is None:
            return
        _kill_group(self.nginx.pid, signal.SIGTERM)
        try:
            self.nginx.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self.nginx.pid)
            self.nginx.wait(timeout=5)
        self.nginx = None

    # -- cfpm ---------------------------------------------------------------

    def config_text(self, settings=None, listen=None):
        s = {
            "listen": listen or self.sock,
            "listen.backlog": "128",
            "listen.mode": "0666",
            "pm.max_children": "3",
            "pm.max_requests": "0",
            "process_control_timeout": "10",
            "db.conninfo": self.pg.conninfo(),
            "auth.issuer": ISSUER,
            "auth.audience": AUDIENCE,
            "auth.key_file": self.keys.pub if self.keys else "/nonexistent",
            "auth.key_id": KID,
            "auth.leeway": "0",
            "auth.errors": "rfc6750",
            "auth.typ": "lenient",
            "error_log": "stderr",
            "log_level": "info",
            "ping.path": "/ping",
            "ping.response": "pong",
            "pm.status_listen": self.status_sock,
            "pm.status_path": "/status",
        }
        if worker_ids() is not None:
            s["user"] = WORKER_USER
            s["group"] = WORKER_GROUP
        for k, v in (settings or {}).items():
            if v is None:
                s.pop(k, None)
            else:
                s[k] = str(v)
        out = ["; cfpm config generated by cfpmtest.py", "[www]"]
        out += ["%s = %s" % (k, v) for k, v in s.items()]
        return "\n".join(out) + "\n"

    def write_config(self, settings=None, listen=None, text=None,
                     name=None):
        """Writes a config file into the temp dir; returns its path."""
        self._nconf += 1
        path = os.path.join(self.dir, name or "cfpm-%d.conf" % self._nconf)
        with open(path, "w") as f:
            f.write(text if text is not None else
                    self.config_text(settings, listen))
        return path

    def spawn_cfpm(self, conf, n=None, activate=None, extra=(), env=None):
        """Starts cfpm -c conf [-n N] (through systemd-socket-activate -l
        ADDR when activate is given) with env added to the environment;
        does not wait. Returns a Cfpm."""
        self._nlog += 1
        log = os.path.join(self.dir, "cfpm-%d.log" % self._nlog)
        self.logs.append(log)
        argv = [CFPM, "-c", conf]
        if n is not None:
            argv += ["-n", str(n)]
        argv += list(extra)
        if activate:
            # systemd-socket-activate hands the child only PATH, TERM,
            # USER, HOME and what -E names: pass env on explicitly.
            pre = [SOCKET_ACTIVATE, "-l", activate]
            for k, v in (env or {}).items():
                pre += ["-E", "%s=%s" % (k, v)]
            argv = pre + argv
        e = None
        if env:
            e = dict(os.environ)
            e.update(env)
        p = spawn(argv, log_path=log, env=e)
        return Cfpm(p, log, conf, activate or self.sock, bool(activate))

    def start_cfpm(self, settings=None, n=None, activate=None, conf=None,
                   timeout=15, env=None):
        """Writes a config (unless conf is given), starts cfpm and waits
        until /health through nginx is 200. Sets self.cfpm."""
        if not os.access(CFPM, os.X_OK):
            raise RuntimeError("%s is not built" % CFPM)
        if conf is None:
            conf = self.write_config(settings)
        c = self.spawn_cfpm(conf, n=n, activate=activate, env=env)
        self.cfpm = c
        if not self.wait_ready(c, timeout):
            raise RuntimeError("cfpm not ready within %ds (alive: %s):\n%s"
                               % (timeout, c.alive(), tail(c.log)))
        return c

    def wait_ready(self, c, timeout=15):
        """True once /health through nginx answers 200."""
        def ready():
            if not c.alive():
                return "dead"
            r = self.get("/health", timeout=3)
            return "up" if r.status == 200 else None
        return wait_for(ready, timeout, 0.1) == "up"

    def stop_cfpm(self, c=None, sig=signal.SIGTERM, timeout=10):
        """Sends sig to the master and waits; returns the exit status
        (None if it did not exit in time; then the group is killed)."""
        c = c or self.cfpm
        if c is None:
            return None
        if c.alive():
            try:
                os.kill(c.pid, sig)
            except OSError:
                pass
        try:
            rc = c.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            _kill_group(c.pid)
            c.popen.wait(timeout=5)
        if c is self.cfpm:
            self.cfpm = None
        return rc

    def cfpm_test_config(self, conf):
        """cfpm -t -c conf: returns (rc, stdout + stderr)."""
        rc, out, err = run([CFPM, "-t", "-c", conf], timeout=20)
        return rc, out + err

    # -- HTTP ------------------------------------------------------------------

    def request(self, method, path, token=None, auth=None, headers=None,
                body=None, ctype=None, timeout=10):
        """One request through nginx. token -> 'Authorization: Bearer T';
        auth -> the raw Authorization value; ctype -> Content-Type."""
        h = []
        if token is not None:
            h.append(("Authorization", "Bearer " + token))
        if auth is not None:
            h.append(("Authorization", auth))
        if ctype is not None:
            h.append(("Content-Type", ctype))
        h += list(headers or [])
        return http_request(self.http_port, method, path, h, body, timeout)

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token=token, **kw)

    def post(self, path, body, token=None, ctype="application/json", **kw):
        return self.request("POST", path, token=token, body=body,
                            ctype=ctype, **kw)

    def raw(self, method, path, headers=(), body=None, timeout=10):
        return http_raw(self.http_port, build_raw(method, path, headers,
                                                  body), timeout, method)

    def fcgi(self, method, uri, headers=None, body=b"", **kw):
        """A FastCGI request straight to cfpm's unix socket."""
        return fcgi_request(self.cfpm.sock if self.cfpm else self.sock,
                            method, uri, headers, body, **kw)


def main(body):
    """Runs body(tap) with cleanup and prints the plan; exits with the TAP
    status. An exception is reported as a failed test."""
    tap = TAP()
    try:
        body(tap)
    except SystemExit as e:
        if tap.failed == 0:
            tap.ok(False, "interrupted (exit %s)" % e.code)
    except Exception:
        tap.ok(False, "harness: unexpected exception",
               traceback.format_exc())
    finally:
        try:
            cleanup()
        except Exception:
            tap.diag(traceback.format_exc())
    sys.exit(tap.done())


def fcgi_exact(address, params, timeout=10):
    """One FastCGI responder request to the unix socket address carrying
    exactly params (a dict of str), nothing added: no REQUEST_URI unless
    given, as a monitoring client talking to a status socket sends it.
    Returns a Response (status 200 when the reply has no Status line, as
    a web server reads a CGI reply)."""
    import io
    t0 = time.monotonic()
    msg = b"".join([_fcgi_record(FCGI_BEGIN_REQUEST,
                                 struct.pack("!HB5x", 1, 0)),
                    _fcgi_record(FCGI_PARAMS, _fcgi_params(params)),
                    _fcgi_record(FCGI_PARAMS, b""),
                    _fcgi_record(FCGI_STDIN, b"")])
    out = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(address)
            s.sendall(msg)
            f = s.makefile("rb")
            while True:
                head = f.read(8)
                if len(head) < 8:
                    break
                _, rtype, _, clen, plen, _ = struct.unpack("!BBHHBB", head)
                content = f.read(clen + plen)[:clen]
                if rtype == FCGI_END_REQUEST:
                    break
                if rtype == FCGI_STDOUT:
                    out.append(content)
    except OSError as e:
        return Timeout(repr(e), time.monotonic() - t0)
    fp = io.BytesIO(b"".join(out))
    fields = http.client.parse_headers(fp)
    code, _, reason = (fields.get("Status") or "200 OK").partition(" ")
    return Response(int(code) if code.isdigit() else 0, reason,
                    [(k, v) for k, v in fields.items()
                     if k.lower() != "status"], fp.read(),
                    time.monotonic() - t0)
