"""
syscount.py: what a request costs in system calls and connections, and
whose CPU it is (nginx's or the server's).

Two figures per repetition or open-loop point:

- The CPU split (measured window): nanoseconds on CPU of each of the
  candidate's processes (/proc/PID/schedstat, exact, no sampling, no
  cost) at the window's start and end, summed by role (nginx or the
  server, profile.role) and divided by the window's requests. The
  cgroup's figure stays the reference (it also holds processes that
  came or went); the split is of the processes alive at the start.
- System calls and connections (the warm-up before the window, at the
  same load): `perf stat` counting the tracepoints raw_syscalls:sys_enter,
  accept4 returning a connection and connect, per process, summed by
  role. Enabling syscall tracepoints puts every system call of the
  traced processes on the kernel's slow path (measured here: +0.1 to
  +0.3 µs per call), which would show in the CPU figures, so they are
  counted in the warm-up and never in the measured window. The server's
  accepts per request say how many requests came on a new connection:
  1 - that is the kept share (the requests that came on a connection
  already open: nginx's kept FastCGI or upstream connection, or for a
  server measured directly the client's own).
"""

import os
import signal
import subprocess

from harness import proc, procfs

from . import profile

EVENTS = (("syscalls", "raw_syscalls:sys_enter", None),
          ("accepts", "syscalls:sys_exit_accept4", "ret >= 0"),
          ("connects", "syscalls:sys_enter_connect", None))
STOP_TIMEOUT = 30           # s for perf stat to print after SIGINT
ATTACH_S = 0.3              # s for perf stat to attach before the load


def available():
    """None if perf can count the tracepoints here, else why not."""
    why = profile.available()
    if why:
        return why
    try:
        r = subprocess.run([profile.PERF, "stat", "-e", EVENTS[1][1],
                            "--filter", EVENTS[1][2], "--", "true"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "perf stat does not run: %s" % e
    if r.returncode != 0:
        return "perf stat cannot count syscall tracepoints: %s" % (
            r.stderr.decode("utf-8", "replace")[-300:])
    return None


# -- the CPU split -------------------------------------------------------------

def _oncpu_ns(pid):
    """Nanoseconds pid has run (schedstat's first field), 0 if gone."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def cpu_snapshot(pids):
    """{pid: (role, ns on CPU)} of pids, now."""
    return {p: (profile.role(procfs.comm(p)), _oncpu_ns(p)) for p in pids}


def cpu_split(before, after):
    """{role: CPU µs} between two cpu_snapshot()s of the same pids."""
    out = {}
    for pid, (role, ns) in before.items():
        end = after.get(pid, (role, ns))[1]
        out[role] = out.get(role, 0.0) + max(0, end - ns) / 1000.0
    return out


# -- system calls and connections ----------------------------------------------

def start(pids, path):
    """Starts perf stat counting EVENTS on pids (per process) into path;
    returns the process, or None without pids. Stop it with finish()."""
    if not pids:
        return None
    argv = [profile.PERF, "stat", "-x", ",", "--per-thread", "-o", path]
    for _, ev, flt in EVENTS:
        argv += ["-e", ev] + (["--filter", flt] if flt else [])
    argv += ["-p", ",".join(str(p) for p in sorted(pids))]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    proc.wait_for(lambda: p.poll() is not None, ATTACH_S, 0.05)
    return p


def finish(p, path):
    """Stops perf stat; returns {role: {figure: count}} from path (roles
    by the counted process's name), or raises RuntimeError."""
    if p is None:
        return {}
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.stop(p)
        raise RuntimeError("perf stat did not stop")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        raise RuntimeError("perf stat: %s" % err.decode(
            "utf-8", "replace")[-300:])
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return parse(text)


def parse(text):
    """perf stat -x , --per-thread output -> {role: {figure: count}}.
    A line is "comm-pid,count,unit,event,..."; "<not counted>" (a
    process that made no system call) counts 0."""
    names = {ev: name for name, ev, _ in EVENTS}
    out = {}
    for line in text.splitlines():
        f = line.split(",")
        if len(f) < 4 or f[3] not in names:
            continue
        comm = f[0].rsplit("-", 1)[0].strip()
        try:
            n = int(f[1])
        except ValueError:
            n = 0
        role = out.setdefault(profile.role(comm), {})
        role[names[f[3]]] = role.get(names[f[3]], 0) + n
    return out


def per_request(counts, requests):
    """The record's figures from finish()'s counts over requests: system
    calls per request (by role and in all), the server's accepts and
    nginx's connects per request, and the kept share (1 - accepts per
    request, at least 0), or None without requests."""
    if not requests or not counts:
        return None
    server = counts.get("server", {})
    nginx = counts.get("nginx", {})
    accepts = server.get("accepts", 0) / requests
    return {
        "window": "warm-up", "requests": requests, "counts": counts,
        "syscalls_per_req": {
            "server": server.get("syscalls", 0) / requests,
            "nginx": nginx.get("syscalls", 0) / requests,
            "all": sum(c.get("syscalls", 0) for c in counts.values()) /
            requests},
        "accepts_per_req": accepts,
        "connects_per_req": nginx.get("connects", 0) / requests,
        "kept_share": max(0.0, 1.0 - accepts),
    }
