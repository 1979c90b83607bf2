"""
proc.py: starting, tracking and stopping the processes of a test or
benchmark run, and the small helpers around them (progress log, waiting,
ports and sockets, log files' tails and text).

Every long-lived process goes through spawn(): it runs in its own session
(so it leads its own process group), optionally placed into a cgroup and
pinned to CPUs before exec, and is registered so that cleanup() stops it
on any exit (normal end, exception, SIGINT/SIGTERM/SIGHUP once
install_handlers() ran). Other cleanup actions (stopping PostgreSQL,
removing cgroups and temp dirs) are registered with on_cleanup() and run
after the processes, last registered first.

Stopping is pid-reuse safe: a process group is signalled only while its
leader is unreaped. stop() waits for the leader's exit without reaping it
(waitid WNOWAIT), so the zombie keeps its pid -- and the group id -- ours
while what is left of the group gets SIGKILL; then it reaps.
"""

import atexit
import os
import signal
import socket
import stat
import subprocess
import sys
import time

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
CLEANUP_SIGNAL = signal.SIGTERM     # install_handlers() defaults
CLEANUP_GRACE = 3                   # seconds before SIGKILL at cleanup
REAP_TIMEOUT = 5                    # seconds to reap after SIGKILL
POLL_INTERVAL = 0.02                # seconds between exit checks

_procs = []         # Popen objects, each the leader of its own group
_actions = []       # callables run by cleanup(), last registered first
_cleanup_how = [CLEANUP_SIGNAL, CLEANUP_GRACE]
_cleaned = False
_t0 = time.monotonic()


def log(msg):
    """One progress line on stderr, prefixed with seconds since start."""
    sys.stderr.write("[%7.1fs] %s\n" % (time.monotonic() - _t0, msg))
    sys.stderr.flush()


def on_cleanup(fn):
    """Registers fn() to run at cleanup, after the processes are stopped
    (last registered, first run)."""
    _actions.append(fn)


# ---------------------------------------------------------------------------
# Stopping

def _state(p):
    """'running', 'exited' (a zombie: its pid is still ours) or 'reaped'
    (the pid may belong to someone else now)."""
    if p.returncode is not None:
        return "reaped"
    try:
        r = os.waitid(os.P_PID, p.pid,
                      os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return "reaped"
    return "running" if r is None else "exited"


def _send(p, sig, group):
    """sig to p's process group (group true) or to p alone."""
    try:
        if group:
            os.killpg(p.pid, sig)
        else:
            os.kill(p.pid, sig)
    except OSError:
        pass


def _leads_group(p):
    """True if unreaped p leads its own process group (spawn()'s are;
    a plain Popen child shares ours and is signalled alone)."""
    try:
        return os.getpgid(p.pid) == p.pid
    except OSError:
        return False


def stop(p, sig=signal.SIGTERM, timeout=10):
    """Sends sig to p's process group (to p alone if it leads none), waits
    up to timeout seconds for p to exit, then SIGKILLs what is left of
    the group -- children that ignored sig included -- and reaps p. A p
    already reaped is not signalled at all (its pid may have been
    reused). Forgets p for cleanup. Returns p's exit status, or None if
    it could not be reaped."""
    st = _state(p)
    if st != "reaped":
        group = _leads_group(p)
        if st == "running":
            _send(p, sig, group)
            deadline = time.monotonic() + timeout
            while st == "running" and time.monotonic() < deadline:
                time.sleep(POLL_INTERVAL)
                st = _state(p)
        if st != "reaped":          # p unreaped: the group id is ours
            _send(p, signal.SIGKILL, group)
        try:
            p.wait(timeout=REAP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
    if p in _procs:
        _procs.remove(p)
    return p.returncode


def cleanup():
    """Stops every registered process group (the signal and grace time
    set by install_handlers()), then runs the cleanup actions. Signals
    are ignored meanwhile so that cleanup finishes. Safe to call twice."""
    global _cleaned
    if _cleaned:
        return
    _cleaned = True
    for s in HANDLED_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    sig, grace = _cleanup_how
    for p in list(_procs):
        stop(p, sig, grace)
    while _actions:
        fn = _actions.pop()
        try:
            fn()
        except Exception as e:      # cleanup must go on
            log("cleanup: %r" % e)


def _on_signal(signum, frame):
    # Turn ^C / make's SIGTERM into SystemExit so finally blocks and
    # atexit run.
    raise SystemExit(128 + signum)


def install_handlers(sig=CLEANUP_SIGNAL, grace=CLEANUP_GRACE):
    """Makes cleanup() run at exit and on SIGINT/SIGTERM/SIGHUP; at
    cleanup each process group gets sig, then SIGKILL after grace
    seconds."""
    _cleanup_how[:] = [sig, grace]
    atexit.register(cleanup)
    for s in HANDLED_SIGNALS:
        signal.signal(s, _on_signal)


# ---------------------------------------------------------------------------
# Starting

def _preexec(group, cpus):
    """The function run in the child between fork and exec: join the
    cgroup (an object with enter(pid)), then pin to cpus; None when
    neither is asked for (a threaded caller gets no preexec_fn)."""
    if group is None and not cpus:
        return None

    def fn():
        if group is not None:
            group.enter(os.getpid())
        if cpus:
            os.sched_setaffinity(0, cpus)
    return fn


def spawn(argv, log_path=None, env=None, cwd=None, stdin=None, group=None,
          cpus=None, capture=False):
    """Starts argv in a new session, stdout and stderr appended to
    log_path (or both to pipes if capture, else discarded), stdin from
    stdin (default /dev/null). group: a cgroup object with enter(pid) and
    add_root(pid) to run it in; cpus: CPUs to pin it to. Registers it for
    cleanup; returns the Popen."""
    out = subprocess.DEVNULL
    if capture:
        out = subprocess.PIPE
    elif log_path:
        out = open(log_path, "ab")
    try:
        p = subprocess.Popen(argv, stdin=stdin or subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.PIPE if capture
                             else subprocess.STDOUT, env=env, cwd=cwd,
                             start_new_session=True,
                             preexec_fn=_preexec(group, cpus))
    finally:
        if log_path and not capture:
            out.close()
    _procs.append(p)
    if group is not None:
        group.add_root(p.pid)
    return p


def run_session(argv, timeout, env=None, merge=False, grace=20):
    """Runs argv to completion in a new session, its output captured
    (stderr into stdout if merge); on timeout its process group gets
    SIGTERM (a harness run then cleans up after itself), SIGKILL after
    grace more seconds. Returns (rc, stdout, stderr) as text; rc is None
    after a timeout, and stdout ends with "(timed out)"."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT if merge else
                         subprocess.PIPE, env=env, start_new_session=True)
    rc = None
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        out += b"\n(timed out)"
    return rc, out.decode("utf-8", "replace"), \
        (err or b"").decode("utf-8", "replace")


def run(argv, timeout=60, input=None, env=None, cwd=None, group=None,
        cpus=None, check=False):
    """Runs argv to completion in a new session (in cgroup group, pinned
    to cpus); returns (rc, stdout, stderr) as text. With check, a
    non-zero exit raises RuntimeError with the command's output."""
    p = subprocess.run(argv, input=input, capture_output=True,
                       timeout=timeout, env=env, cwd=cwd,
                       start_new_session=True,
                       preexec_fn=_preexec(group, cpus))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(argv[:3]),
                                                  p.returncode, out[-2000:],
                                                  err[-2000:]))
    return p.returncode, out, err


# ---------------------------------------------------------------------------
# Waiting, ports, sockets, logs

def wait_for(pred, timeout, interval=0.05):
    """Polls pred() until it returns a true value or timeout seconds pass;
    returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def port_open(port, host="127.0.0.1"):
    """True if something accepts TCP connections on host:port."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def have_ipv6_loopback():
    """True if a socket can bind ::1."""
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            s.bind(("::1", 0))
            return True
        finally:
            s.close()
    except OSError:
        return False


def is_socket(path):
    """True if path is a socket file (not followed if a link)."""
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


def tail(path, lines=40):
    """The last lines of a text file (for error messages); a note in
    parentheses if it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(%s: %s)" % (path, e.strerror)
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def log_text(path):
    """The whole text of a log file so far (invalid UTF-8 replaced); ""
    if it cannot be read (not written yet)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
