"""
proc.py: starting, tracking and stopping the processes of a bench run,
plus small helpers (logging, waiting, free ports, running commands).

Every long-lived process the harness starts goes through spawn(): it runs
in its own session (process group), optionally placed into a cgroup and
pinned to CPUs before exec, and is registered so cleanup() can stop it on
any exit (normal end, exception, SIGINT/SIGTERM/SIGHUP). Extra cleanup
actions (stopping PostgreSQL, removing cgroups) are registered with
on_cleanup() and run in reverse order.
"""

import atexit
import os
import signal
import socket
import subprocess
import sys
import time

_procs = []          # Popen objects, each the leader of its own group
_actions = []        # callables run by cleanup(), last registered first
_cleaned = False
_t0 = time.monotonic()


def log(msg):
    """One progress line on stderr, prefixed with seconds since start."""
    sys.stderr.write("[%7.1fs] %s\n" % (time.monotonic() - _t0, msg))
    sys.stderr.flush()


def on_cleanup(fn):
    """Registers fn() to run at cleanup (LIFO)."""
    _actions.append(fn)


def _kill_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


def stop(p, sig=signal.SIGTERM, timeout=10):
    """Sends sig to p's process group and waits for p; kills the group
    with SIGKILL if it is still there after timeout seconds."""
    if p.poll() is None:
        _kill_group(p.pid, sig)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left of the group (children that ignored sig) goes too.
    _kill_group(p.pid, signal.SIGKILL)
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if p in _procs:
        _procs.remove(p)


def cleanup():
    """Stops every registered process group and runs the cleanup actions.
    Safe to call twice."""
    global _cleaned
    if _cleaned:
        return
    _cleaned = True
    for p in list(_procs):
        stop(p, signal.SIGTERM, timeout=3)
    while _actions:
        fn = _actions.pop()
        try:
            fn()
        except Exception as e:  # cleanup must go on
            log("cleanup: %r" % e)


def _on_signal(signum, frame):
    # Turn ^C / make's SIGTERM into SystemExit so finally blocks and
    # atexit run.
    raise SystemExit(128 + signum)


def install_handlers():
    """Makes cleanup() run on exit and on SIGINT/SIGTERM/SIGHUP."""
    atexit.register(cleanup)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_signal)


def _preexec(group, cpus):
    """Builds the function run in the child between fork and exec: join
    the cgroup (if any), then pin to cpus (if given). The harness has no
    threads, so preexec_fn is safe here."""
    def fn():
        if group is not None:
            group.enter(os.getpid())
        if cpus:
            os.sched_setaffinity(0, cpus)
    return fn


def spawn(argv, log_path=None, env=None, cwd=None, group=None, cpus=None,
          capture=False):
    """Starts argv in a new session, in cgroup group and pinned to cpus,
    output appended to log_path (or to a pipe if capture). Registers it
    for cleanup; returns the Popen."""
    out = subprocess.DEVNULL
    if capture:
        out = subprocess.PIPE
    elif log_path:
        out = open(log_path, "ab")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT if not capture
                             else subprocess.PIPE, env=env, cwd=cwd,
                             start_new_session=True,
                             preexec_fn=_preexec(group, cpus))
    finally:
        if log_path and not capture:
            out.close()
    _procs.append(p)
    if group is not None:
        group.add_root(p.pid)
    return p


def run(argv, timeout=120, env=None, cwd=None, group=None, cpus=None,
        check=True, input=None):
    """Runs argv to completion (in cgroup group, pinned to cpus); returns
    (rc, stdout, stderr) as text. Raises RuntimeError on a non-zero exit
    when check is set, with the command's stderr."""
    p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env,
                       cwd=cwd, start_new_session=True, input=input,
                       preexec_fn=_preexec(group, cpus))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(argv[:3]),
                                                  p.returncode, out[-2000:],
                                                  err[-2000:]))
    return p.returncode, out, err


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


def tail(path, lines=30):
    """The last lines of a text file (for error messages)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(%s: %s)" % (path, e.strerror)
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])
