"""
cfpmtest.py: the integration tests' stack, built on the shared Python
harness (harness/ at the top of the source tree; Python 3, standard
library only).

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

The test files use this module as `ct`: besides the Stack it hands on the
harness names they use (processes, /proc, HTTP, FastCGI, keys, the API
contract, TAP), so a test needs one import.
"""

import grp
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")))

from harness import proc  # noqa: E402
from harness.contract import (  # noqa: E402
    AUDIENCE, BENCH_BODY, BENCH_PAYLOAD, ISSUER, KID, MAX_BODY, MAX_ID, SCOPE,
    SUBJECT, WWW_COMPAT, WWW_INVALID_REQUEST, WWW_INVALID_TOKEN, WWW_NONE,
    Checker, seeded_row, www_scope)
from harness.fcgi import (  # noqa: E402
    FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDERR,
    FCGI_STDIN, KeptConnection, fcgi_exact, fcgi_params, fcgi_record,
    fcgi_request)
from harness.http import (  # noqa: E402
    api_request, build_raw, http_raw, http_request, outcome)
from harness.keys import (  # noqa: E402
    CLAIMS_EXP_IN, CLAIMS_NBF_AGO, Keys, b64url, claims_json, write_jwks)
from harness.nginx import Nginx, cfpm_site, fpm_status_site  # noqa: E402
from harness.paths import CFPM, PG_BINDIR, SRCDIR  # noqa: E402
from harness.pg import Cluster  # noqa: E402
from harness.phpfpm import PhpFpm  # noqa: E402
from harness.phpfpm import installed as php_fpm_installed  # noqa: E402
from harness.proc import (  # noqa: E402
    cleanup, free_port, have_ipv6_loopback, is_socket, log_text, run, spawn,
    stop, tail, unix_socket_live, wait_for)
from harness.procfs import (  # noqa: E402
    children, cmdline_pids, group_members, kill_mentioning, pid_alive,
    proc_stat, vmrss_kb, zombies)
from harness.tap import TAP  # noqa: E402

# What the tests use as ct.NAME: the Stack and its helpers, and the harness
# names handed on.
__all__ = [
    # this module
    "CRASH_RE", "Cfpm", "NotifySocket", "SEED_ROWS", "SOCKET_ACTIVATE",
    "Stack", "WORKER_GROUP", "WORKER_USER", "check_sanitizer_dirs",
    "crash_lines", "main", "reachable", "worker_ids", "workers_seen",
    # harness.contract
    "AUDIENCE", "BENCH_BODY", "BENCH_PAYLOAD", "ISSUER", "KID", "MAX_BODY",
    "MAX_ID", "SCOPE", "SUBJECT", "WWW_COMPAT", "WWW_INVALID_REQUEST",
    "WWW_INVALID_TOKEN", "WWW_NONE", "Checker", "seeded_row", "www_scope",
    # harness.fcgi, harness.http, harness.keys
    "FCGI_BEGIN_REQUEST", "FCGI_END_REQUEST", "FCGI_PARAMS", "FCGI_STDERR",
    "FCGI_STDIN", "KeptConnection", "fcgi_exact", "fcgi_params",
    "fcgi_record", "fcgi_request", "api_request", "build_raw", "http_raw",
    "http_request", "outcome", "CLAIMS_EXP_IN", "CLAIMS_NBF_AGO", "Keys",
    "b64url", "claims_json", "write_jwks",
    # harness.nginx
    "Nginx", "fpm_status_site",
    # harness.paths, harness.pg, harness.phpfpm, harness.tap
    "CFPM", "PG_BINDIR", "SRCDIR", "Cluster", "PhpFpm", "php_fpm_installed",
    "TAP",
    # harness.proc, harness.procfs
    "cleanup", "free_port", "have_ipv6_loopback", "is_socket", "log_text",
    "run", "spawn", "stop", "tail", "unix_socket_live", "wait_for",
    "children", "cmdline_pids", "group_members", "pid_alive", "proc_stat",
    "vmrss_kb", "zombies",
]

SOCKET_ACTIVATE = shutil.which("systemd-socket-activate") or \
    "/usr/bin/systemd-socket-activate"
WORKER_USER = "nobody"      # what the workers run as when the tests are root
WORKER_GROUP = "nogroup"
SEED_ROWS = 1000
CLEANUP_GRACE = 5           # seconds after SIGKILL to reap at exit

# At exit everything is killed at once: nothing of a test run is worth a
# graceful stop, and a stuck process must not hold up the suite.
proc.install_handlers(signal.SIGKILL, CLEANUP_GRACE)


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
# systemd's notify socket, crash reports, worker churn

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
        """Closes and removes the socket."""
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


CRASH_RE = re.compile(r"killed by signal|exited with status|stack smashing|"
                      r"AddressSanitizer|runtime error")


def crash_lines(c, since=0):
    """Lines of cfpm c's log, from byte offset since, that tell of a
    crash: a worker killed by a signal or exiting with an error, a stack
    smash, a sanitizer report."""
    with open(c.log, errors="replace") as f:
        f.seek(since)
        return [l for l in f.read().splitlines() if CRASH_RE.search(l)]


def workers_seen(c, seconds, interval=0.02):
    """Every worker pid of cfpm c seen during the next seconds (a fork
    loop shows as many more pids than the pool)."""
    seen = set()
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        seen |= set(c.workers())
        time.sleep(interval)
    return seen


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
        """True while the master runs."""
        return self.popen.poll() is None

    def workers(self):
        """The master's live children, sorted."""
        return children(self.pid)


class Stack:
    """Temp dir + PostgreSQL + keys/tokens + nginx + cfpm for one test
    file. Use as a context manager or call close()."""

    nginx_connections = 512     # worker_connections of the stack's nginx

    def __init__(self, tap, name="cfpm"):
        self.tap = tap
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="cfpm-it-")
        proc.on_cleanup(self._remove_dir)
        os.chmod(self.dir, 0o755)   # the postgres user must traverse it
        ids = worker_ids()
        if ids is not None:
            # Unprivileged workers create and reopen their access logs
            # here: the directory is writable for their group.
            os.chown(self.dir, 0, ids[1])
            os.chmod(self.dir, 0o775)
            check_sanitizer_dirs()
        self.pg = Cluster(self.dir)
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

    def _remove_dir(self):
        """Cleanup, after every process and the cluster are stopped:
        orphans (workers of a master that died, a stray postmaster) carry
        the unique temp dir in their command line; then the dir goes
        (unless CFPM_KEEP_TMP=1)."""
        kill_mentioning(self.dir)
        if os.environ.get("CFPM_KEEP_TMP") == "1":
            print("# kept temp dir %s" % self.dir)
            return
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- setup ------------------------------------------------------------

    def setup(self, rows=SEED_ROWS, nginx=True):
        """PostgreSQL cluster with seed rows, keys, bench tokens, nginx."""
        self.pg.init()
        self.pg.start()
        self.pg.seed(rows)
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
        """After a failure, the tails of the logs as diagnostics; then
        everything is stopped and removed (cleanup())."""
        if self.tap.failed:
            for path in self.logs:
                if os.path.exists(path):
                    self.tap.diag("---- tail of %s" % path)
                    self.tap.diag(tail(path, 30))
        cleanup()

    # -- nginx ------------------------------------------------------------

    def start_nginx(self, upstream=None, keep_conn=None):
        """Starts nginx on a free port (the same one again after a stop)
        with the shipped server block in front of upstream (default: our
        unix socket) and of our status socket; waits until it accepts
        connections. keep_conn: see harness.nginx.cfpm_site()."""
        if upstream is None:
            upstream = "unix:" + self.sock
        if self.http_port is None:
            self.http_port = free_port()
        site = cfpm_site(upstream, self.http_port,
                         status_upstream="unix:" + self.status_sock,
                         keep_conn=keep_conn)
        self.nginx = Nginx(self.dir, self.http_port, site,
                           connections=self.nginx_connections,
                           log=os.path.join(self.dir, "nginx-error.log"),
                           out=os.path.join(self.dir, "nginx.out"))
        if self.nginx.log not in self.logs:
            self.logs.append(self.nginx.log)
        self.nginx.start()

    def stop_nginx(self, timeout=10):
        """Fast stop (SIGTERM) of nginx, SIGKILL after timeout seconds."""
        if self.nginx is None:
            return
        self.nginx.stop(signal.SIGTERM, timeout)
        self.nginx = None

    # -- cfpm ---------------------------------------------------------------

    def config_text(self, settings=None, listen=None):
        """The text of a cfpm config for this stack: the defaults below,
        settings added or overriding (None removes a key), listen in place
        of our unix socket."""
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
            stop(c.popen, signal.SIGKILL)
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
        return api_request(self.http_port, method, path, token, auth,
                           headers, body, ctype, timeout)

    def get(self, path, token=None, **kw):
        """GET through nginx; see request()."""
        return self.request("GET", path, token=token, **kw)

    def post(self, path, body, token=None, ctype="application/json", **kw):
        """POST body through nginx, JSON by default; see request()."""
        return self.request("POST", path, token=token, body=body,
                            ctype=ctype, **kw)

    def status_json(self, query="json"):
        """The status page through nginx (/status?query) parsed, or None
        unless it answered 200."""
        r = self.get("/status?" + query, timeout=5)
        return r.json() if r.status == 200 else None

    def raw(self, method, path, headers=(), body=None, timeout=10):
        """A request written byte by byte (see harness.http.build_raw)."""
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

