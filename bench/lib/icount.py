"""
icount.py: bench/icount's measurement: instructions (callgrind) and
system calls (strace) per request of one cfpm worker for a fixed request
mix, for cfpm (app = events) and its floor cfpm-hello (app = hello).
Figures that do not move with the machine: a count, not a time.

Shared by every run of an invocation (setup): a private PostgreSQL
seeded with --rows rows, one key pair, one GET token and one POST token,
the ids of the GETs (uniform over 1..rows from a fixed seed), the POST
body of the benchmark. So two runs send the same bytes, but for what
nginx adds (its request id and the client's port: same lengths).

One run of one build, in this order; each step starts a fresh cfpm with
pm.max_children = 1 behind the shipped nginx site of the build's own
source tree (etc/nginx/cfpm.conf; keep-conn as shipped, or off), and
stops it:
  events, callgrind  cfpm under valgrind --tool=callgrind with the
                     instrumentation off; warm-up GETs and POSTs; then
                     the worker's instrumentation on and its counters
                     zeroed (callgrind_control), N GETs, a dump, N
                     POSTs, a dump: one window each
  hello, callgrind   app = hello: the same warm-up and N GETs, one dump
  events, strace     cfpm natively, its seccomp filter on as shipped:
                     strace -c attached to the worker for the N GETs,
                     again for the N POSTs
  hello, strace      the same for the hello GETs

Why so:
- valgrind only instruments what it starts, and a worker is a fork of
  the master (it inherits the scoreboard's anonymous shared mapping, the
  keys the master parsed, its eventfds): starting a worker any other way
  would measure a path production never runs. So the master runs under
  valgrind too, but never instrumented (--instr-atstart=no): it executes
  on valgrind's core and nothing of it is counted, and it is not on the
  request path. Only the worker's windows are counted, from the zero to
  the dump, while no request is in flight.
- valgrind does not emulate seccomp(2): the callgrind steps run with
  worker.seccomp = off (the output says so); the strace steps keep it.
- vgdb (behind callgrind_control) can only reach a forked child with
  --trace-children=yes, and only as the user the process runs as: the
  workers' FIFOs are made at fork, so a worker that gave up root could
  not open them. So the master itself runs as RUN_USER (workers then
  keep its user, as cfpm does when not started as root), and so does
  callgrind_control.
- System calls from strace on the native worker, not from valgrind:
  under valgrind calls the vDSO answers natively (clock_gettime)
  become real system calls, and valgrind adds its own.
- Fixed environment (env -i), address randomisation off (setarch -R):
  neither changes the count by more than noise (bench/README.md), but
  nothing is left to chance.
The kernel's instructions are not seen (callgrind counts user space).
"""

import grp
import os
import platform
import pwd
import random
import re
import shutil
import signal
import time
import types

from harness import http, nginx, pg, proc
from harness.contract import BENCH_BODY, JSON
from harness.keys import Keys
from harness.procfs import children

from . import callgrind, candidates

VALGRIND = os.environ.get("CFPM_VALGRIND") or "valgrind"
CALLGRIND_CONTROL = os.environ.get("CFPM_CALLGRIND_CONTROL") or \
    "callgrind_control"
STRACE = os.environ.get("CFPM_STRACE") or "strace"
TOOLS = (VALGRIND, CALLGRIND_CONTROL, STRACE, "setpriv", "setarch")
RUN_USER, RUN_GROUP = "nobody", "nogroup"
# The whole environment of cfpm and valgrind (env -i).
RUN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
READY_TIMEOUT = 180         # s: a worker under valgrind, a loaded machine
REQUEST_TIMEOUT = 60        # s per request (instrumented: ~50x slower)
CONTROL_TIMEOUT = 60        # s per callgrind_control command
ATTACH_TIMEOUT = 10         # s for strace to attach
STOP_TIMEOUT = 30           # s for cfpm to stop (valgrind writes files)
TOP = 15                    # functions listed per window and kind
SEED = 23                   # of the GETs' ids
APPS = ("events", "hello")
# The windows of each application, in order: (name, method).
WINDOWS = {"events": (("get", "GET"), ("post", "POST")),
           "hello": (("get", "GET"),)}
# The figures compared between runs and builds: (key, app, window).
FIGURES = (("ir_per_get", "events", "get"), ("ir_per_post", "events",
                                               "post"),
           ("ir_per_hello_get", "hello", "get"))
SYSCALL_FIGURES = (("syscalls_per_get", "events", "get"),
                   ("syscalls_per_post", "events", "post"),
                   ("syscalls_per_hello_get", "hello", "get"))
ASAN_MARK = b"__asan_init"


def as_user():
    """The command prefix that runs a program as RUN_USER:RUN_GROUP."""
    return ["setpriv", "--reuid=" + RUN_USER, "--regid=" + RUN_GROUP,
            "--clear-groups", "--"]


def fixed_env():
    """The command prefix of a fixed environment and address layout."""
    return ["env", "-i", "PATH=" + RUN_PATH, "setarch", platform.machine(),
            "-R"]


def missing_tools():
    """The programs of TOOLS not on PATH."""
    return [t for t in TOOLS if shutil.which(t) is None]


def is_asan(binary):
    """True if binary was built with AddressSanitizer (valgrind cannot
    run it)."""
    with open(binary, "rb") as f:
        return ASAN_MARK in f.read()


def build_srcdir(builddir, default):
    """The source tree a build directory was configured from (its
    Makefile's abs_top_srcdir), else default."""
    try:
        with open(os.path.join(builddir, "Makefile")) as f:
            for line in f:
                m = re.match(r"abs_top_srcdir\s*=\s*(\S+)", line)
                if m:
                    return os.path.normpath(m.group(1))
    except OSError:
        pass
    return default


# ---------------------------------------------------------------------------
# strace -c

def parse_strace(text):
    """strace -c -U name,calls,errors output -> {"calls": {name: n},
    "errors": {name: n}, "total": n, "total_errors": n}."""
    calls, errors = {}, {}
    total = total_errors = None
    for line in text.splitlines():
        f = line.split()
        if len(f) < 2 or not f[1].isdigit():
            continue
        err = int(f[2]) if len(f) > 2 and f[2].isdigit() else 0
        if f[0] == "total":
            total, total_errors = int(f[1]), err
            continue
        calls[f[0]] = int(f[1])
        if err:
            errors[f[0]] = err
    if total is None:
        total, total_errors = sum(calls.values()), sum(errors.values())
    return {"calls": calls, "errors": errors, "total": total,
            "total_errors": total_errors}


def syscall_window(summary, n):
    """A strace window's figures per request."""
    return {"requests": n, "per_request": summary["total"] / n,
            "errors_per_request": summary["total_errors"] / n,
            "calls": {k: v / n for k, v in sorted(
                summary["calls"].items(), key=lambda kv: (-kv[1], kv[0]))},
            "errors": {k: v / n for k, v in sorted(summary["errors"].items())}}


# ---------------------------------------------------------------------------
# callgrind windows

def _fn_row(key, cost, n, total, prof, own):
    obj, name = key
    return {"function": callgrind.display_name(obj, name),
            "object": os.path.basename(obj),
            "library": callgrind.group_of(obj, own),
            "ir_per_request": cost / n,
            "pct": 100.0 * cost / total if total else 0.0,
            "calls_per_request": prof.calls.get(key, 0) / n}


def ir_window(prof, n, own, top=TOP):
    """A callgrind window's figures per request: total, per library (self
    cost), the top functions by self and by inclusive cost."""
    total = prof.total()
    libs = prof.by_group(own)
    return {
        "requests": n, "ir": total, "ir_per_request": total / n,
        "by_library": {g: libs[g] / n for g in sorted(
            libs, key=lambda g: (-libs[g], g))},
        "top_self": [_fn_row(k, c, n, total, prof, own)
                     for k, c in prof.top("self", top)],
        "top_inclusive": [_fn_row(k, c, n, total, prof, own)
                          for k, c in prof.top("inclusive", top)],
    }


# ---------------------------------------------------------------------------
# The shared state

class Bench:
    """What every run of an invocation shares: work directory,
    PostgreSQL, keys, tokens and the requests. opts: bench/icount's
    options (rows, n, warmup, keep_conn, top)."""

    def __init__(self, opts, workdir, tool):
        self.opts = opts
        self.workdir = workdir
        self.tool = tool                # cfpm-token
        self.pg = None
        self.keys = {}
        self.nruns = 0

    def setup(self):
        """PostgreSQL started and seeded, keys, the two tokens, the ids
        of the GETs and of the warm-up. Raises RuntimeError."""
        o = self.opts
        self.pg = pg.Cluster(self.workdir)
        proc.log("PostgreSQL: initdb, start, seed %d rows" % o.rows)
        self.pg.init()
        self.pg.start()
        self.pg.seed(o.rows)
        k = Keys(os.path.join(self.workdir, "keys"), tool=self.tool)
        self.keys = {"jwks": k.jwks, "pub": k.pub}
        self.token_get, self.token_post = k.mint(), k.mint()
        rng = random.Random(SEED)
        self.get_ids = [rng.randint(1, o.rows) for _ in range(o.n)]
        warm = random.Random(SEED + 1)
        self.warm_ids = [warm.randint(1, o.rows) for _ in range(o.warmup)]

    def requests(self, app, method, ids):
        """Requests (method, path, body, token, status wanted) to app:
        GETs of ids, or one POST per member of ids (hello answers 200 to
        all)."""
        want = 201 if app == "events" and method == "POST" else 200
        if method == "GET":
            return [("GET", "/events/%d" % i, None, self.token_get, want)
                    for i in ids]
        return [("POST", "/events", BENCH_BODY, self.token_post, want)
                for _ in ids]

    def window(self, app, method):
        """The measured requests of app's method window."""
        return self.requests(app, method, self.get_ids if method == "GET"
                             else range(self.opts.n))

    def warmup(self, app):
        """The warm-up: opts.warmup requests of each of app's windows."""
        out = []
        for _, method in WINDOWS[app]:
            out += self.requests(app, method, self.warm_ids)
        return out


def send(port, reqs):
    """Sends reqs one after the other through nginx; raises RuntimeError
    on a status other than the one wanted."""
    for method, path, body, token, want in reqs:
        r = http.api_request(port, method, path, token=token, body=body,
                             ctype=JSON if body else None,
                             timeout=REQUEST_TIMEOUT)
        if r.status != want:
            raise RuntimeError("%s %s: %d %s, want %d: %r" % (
                method, path, r.status, r.reason, want, r.body[:300]))


# ---------------------------------------------------------------------------
# One cfpm

class Server:
    """One cfpm (pm.max_children = 1, master and worker as RUN_USER),
    natively or under callgrind, behind its own nginx, in directory d."""

    def __init__(self, bench, build, app, d, under_callgrind):
        self.bench = bench
        self.build = build
        self.app = app
        self.dir = d
        self.callgrind = under_callgrind
        self.p = self.nginx = None
        self.worker = None
        self.parts = 0
        self.sock = os.path.join(d, "cfpm.sock")
        self.out = os.path.join(d, "callgrind")     # .PID.PART dumps
        self.vgdb = os.path.join(d, "vgdb")         # vgdb's FIFOs
        self.log = os.path.join(d, "cfpm.out")      # stderr, valgrind's
        os.makedirs(d)
        os.chown(d, *_run_ids())

    def _config(self):
        """The bench's cfpm configuration (candidates.Cfpm), one worker;
        without the seccomp filter under valgrind."""
        cls = candidates.CfpmHello if self.app == "hello" else \
            candidates.Cfpm
        cell = types.SimpleNamespace(dir=self.dir, pool=1)
        text = cls(self.bench)._config(cell, self.sock)
        if self.callgrind:
            text += ("; valgrind does not emulate seccomp(2)\n"
                     "worker.seccomp = off\n")
        path = os.path.join(self.dir, "cfpm.conf")
        with open(path, "w") as f:
            f.write(text)
        return path

    def argv(self, conf):
        cfpm = [os.path.join(self.build["dir"], "cfpm"), "-c", conf]
        if self.callgrind:
            cfpm = [VALGRIND, "--tool=callgrind", "--trace-children=yes",
                    "--instr-atstart=no", "--vgdb=yes",
                    "--vgdb-prefix=" + self.vgdb,
                    "--callgrind-out-file=" + self.out + ".%p"] + cfpm
        return as_user() + fixed_env() + cfpm

    def start(self):
        """Starts cfpm and its nginx, waits until a request through both
        is answered; sets worker. Raises RuntimeError."""
        conf = self._config()
        self.p = proc.spawn(self.argv(conf), log_path=self.log)
        ok = proc.wait_for(lambda: self.p.poll() is not None or
                           os.path.exists(self.sock), READY_TIMEOUT)
        if not ok or self.p.poll() is not None:
            raise RuntimeError("cfpm did not start:\n%s\n%s" % (
                proc.tail(self.log), proc.tail(os.path.join(
                    self.dir, "cfpm-error.log"))))
        port = proc.free_port()
        site = nginx.cfpm_site("unix:" + self.sock, port,
                               keep_conn=0 if self.bench.opts.keep_conn ==
                               "off" else None, srcdir=self.build["srcdir"])
        self.nginx = nginx.Nginx(os.path.join(self.dir, "nginx"), port, site,
                                 level="warn")
        self.nginx.start()
        self.port = port
        path = "/health" if self.app == "events" else "/"
        if not proc.wait_for(lambda: http.http_request(
                port, "GET", path, timeout=REQUEST_TIMEOUT).status == 200,
                READY_TIMEOUT, 0.5):
            raise RuntimeError("cfpm not ready within %d s:\n%s" % (
                READY_TIMEOUT, proc.tail(os.path.join(self.dir,
                                                      "cfpm-error.log"))))
        kids = children(self.p.pid)
        if len(kids) != 1:
            raise RuntimeError("expected one worker, found %r" % kids)
        self.worker = kids[0]

    def control(self, *args):
        """callgrind_control args on the worker (as RUN_USER, the FIFOs'
        owner). Raises RuntimeError unless it answers OK."""
        rc, out, err = proc.run(as_user() + [
            CALLGRIND_CONTROL, "--vgdb-prefix=" + self.vgdb] + list(args) +
            [str(self.worker)], timeout=CONTROL_TIMEOUT)
        if rc != 0 or "OK" not in out:
            raise RuntimeError("callgrind_control %s: rc %d\n%s%s" % (
                " ".join(args), rc, out[-1000:], err[-1000:]))

    def dump(self, name):
        """Dumps the worker's counters (which zeroes them); returns the
        dump's path."""
        self.control("--dump=" + name)
        self.parts += 1
        path = "%s.%d.%d" % (self.out, self.worker, self.parts)
        if not os.path.exists(path):
            raise RuntimeError("callgrind wrote no %s" % path)
        return path

    def stop(self):
        if self.nginx:
            self.nginx.stop()
            self.nginx = None
        if self.p:
            proc.stop(self.p, signal.SIGTERM, STOP_TIMEOUT)
            self.p = None


def _run_ids():
    """RUN_USER's uid and RUN_GROUP's gid."""
    return pwd.getpwnam(RUN_USER).pw_uid, grp.getgrnam(RUN_GROUP).gr_gid


def _tracer(pid):
    """TracerPid of pid (0: none)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def strace_window(server, reqs, path):
    """strace -c attached to the worker while reqs are sent; its summary
    (parse_strace) also left at path."""
    p = proc.spawn([STRACE, "-c", "-f", "-U", "name,calls,errors", "-o",
                    path, "-p", str(server.worker)], log_path=path + ".log")
    try:
        if not proc.wait_for(lambda: _tracer(server.worker) == p.pid,
                             ATTACH_TIMEOUT):
            raise RuntimeError("strace did not attach:\n" +
                               proc.tail(path + ".log"))
        send(server.port, reqs)
    finally:
        proc.stop(p, signal.SIGINT)
    with open(path) as f:
        return parse_strace(f.read())


# ---------------------------------------------------------------------------
# A run

class Run:
    """One run of one build (a dict: label, dir, srcdir): the callgrind
    and strace steps of both applications; record() is its result. Files
    worth keeping go to results/<label>-<rep>-..."""

    def __init__(self, bench, build, rep, results):
        self.bench = bench
        self.build = build
        self.rep = rep
        self.results = results
        self.tag = "%s%d" % (build["label"], rep)
        self.ir = {}
        self.sys = {}

    def _server(self, app, under_callgrind):
        self.bench.nruns += 1
        d = os.path.join(self.bench.workdir, "run%d-%s-%s-%s" % (
            self.bench.nruns, self.tag, app,
            "callgrind" if under_callgrind else "strace"))
        return Server(self.bench, self.build, app, d, under_callgrind)

    def _keep(self, src, kind, name):
        dest = os.path.join(self.results, kind, "%s-%s" % (self.tag, name))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(src, dest)
        return os.path.relpath(dest, self.results)

    def _logs(self, s, step):
        for f in ("cfpm.out", "cfpm-error.log"):
            src = os.path.join(s.dir, f)
            if os.path.exists(src) and os.path.getsize(src):
                self._keep(src, "logs", "%s-%s" % (step, f))

    def _step(self, app, under_callgrind, fn):
        s = self._server(app, under_callgrind)
        step = "%s-%s" % (app, "callgrind" if under_callgrind else "strace")
        proc.log("%s: %s" % (self.tag, step))
        try:
            if app == "events":
                self.bench.pg.reset(self.bench.opts.rows)
            s.start()
            send(s.port, self.bench.warmup(app))
            fn(s, app)
        finally:
            s.stop()
            self._logs(s, step)

    def _callgrind(self, s, app):
        s.control("--instr=on")
        s.control("--zero")
        for name, method in WINDOWS[app]:
            reqs = self.bench.window(app, method)
            send(s.port, reqs)
            path = s.dump("%s-%s" % (app, name))
            w = ir_window(callgrind.load(path), len(reqs), callgrind.OWN,
                          self.bench.opts.top)
            w["callgrind_file"] = self._keep(path, "callgrind",
                                             "%s-%s.out" % (app, name))
            self.ir.setdefault(app, {})[name] = w

    def _strace(self, s, app):
        for name, method in WINDOWS[app]:
            reqs = self.bench.window(app, method)
            path = os.path.join(s.dir, "strace-%s.txt" % name)
            w = syscall_window(strace_window(s, reqs, path), len(reqs))
            w["strace_file"] = self._keep(path, "strace", "%s-%s.txt" %
                                          (app, name))
            self.sys.setdefault(app, {})[name] = w

    def run(self):
        for app in APPS:
            self._step(app, True, self._callgrind)
        for app in APPS:
            self._step(app, False, self._strace)
        return self.record()

    def record(self):
        summary = {}
        for key, app, win in FIGURES:
            summary[key] = self.ir[app][win]["ir_per_request"]
        for key, app, win in SYSCALL_FIGURES:
            summary[key] = self.sys[app][win]["per_request"]
        summary["ir_per_request"] = (summary["ir_per_get"] +
                                     summary["ir_per_post"]) / 2
        summary["ir_get_above_hello"] = summary["ir_per_get"] - \
            summary["ir_per_hello_get"]
        return {"build": self.build["label"], "builddir": self.build["dir"],
                "srcdir": self.build["srcdir"], "rep": self.rep,
                "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "summary": summary, "callgrind": self.ir,
                "syscalls": self.sys}


# ---------------------------------------------------------------------------
# Comparisons

def spread_pct(values):
    """(max - min) / min in per cent (0 for fewer than two values)."""
    if len(values) < 2 or min(values) <= 0:
        return 0.0
    return 100.0 * (max(values) - min(values)) / min(values)


def repeatability(runs, tolerance):
    """Per build, the spread of each figure over its runs; ok if every
    instruction figure's spread is within tolerance per cent (the system
    call figures are shown, not judged: see bench/README.md)."""
    out = {}
    for label in sorted({r["build"] for r in runs}):
        mine = [r["summary"] for r in runs if r["build"] == label]
        figs = {k: spread_pct([s[k] for s in mine])
                for k, _, _ in FIGURES + SYSCALL_FIGURES}
        judged = [figs[k] for k, _, _ in FIGURES]
        out[label] = {"runs": len(mine), "spread_pct": figs,
                      "ok": len(mine) >= 2 and max(judged) <= tolerance}
    return out


def ab_ratios(runs, a, b):
    """Mean figure of build b over that of build a, per figure."""
    def mean(label, k):
        v = [r["summary"][k] for r in runs if r["build"] == label]
        return sum(v) / len(v)
    keys = [k for k, _, _ in FIGURES + SYSCALL_FIGURES] + [
        "ir_per_request", "ir_get_above_hello"]
    return {k: mean(b, k) / mean(a, k) if mean(a, k) else None
            for k in keys}


# ---------------------------------------------------------------------------
# The invocation

NOTES = (
    "callgrind windows: worker.seccomp = off (valgrind does not emulate "
    "seccomp(2)); the strace windows keep the filter on, as shipped",
    "the master runs under valgrind but never instrumented (a worker is "
    "its fork); only the worker's windows are counted, no request in "
    "flight at their edges",
    "the kernel is not seen: callgrind counts user-space instructions; "
    "system calls come from strace -c on a native worker",
    "inclusive cost as callgrind_annotate --inclusive=yes counts it: a "
    "recursive function counts its inner calls again",
)


def _version(argv):
    rc, out, err = proc.run(argv, timeout=30)
    lines = (out + err).strip().splitlines()
    return lines[0] if lines else None


def describe_build(build):
    """A build's identity: its source tree's git revision (and whether
    the tree had changes), cfpm -v."""
    rc, rev, _ = proc.run(["git", "-C", build["srcdir"], "rev-parse",
                           "HEAD"], timeout=30)
    rc2, dirty, _ = proc.run(["git", "-C", build["srcdir"], "status",
                              "--porcelain", "--untracked-files=no"],
                             timeout=30)
    return dict(build, git_rev=rev.strip() if rc == 0 else None,
                git_dirty=bool(dirty.strip()) if rc2 == 0 else None,
                cfpm=_version([os.path.join(build["dir"], "cfpm"), "-v"]))


def measure(opts, builds, results, workdir, command):
    """Every run: opts.runs per build, the builds interleaved (A1 B1 A2
    B2 ...). Returns the JSON document (see bench/README.md)."""
    doc = {"tool": "bench/icount", "command": command,
           "utc_start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "options": {k: getattr(opts, k) for k in (
               "n", "warmup", "rows", "keep_conn", "runs", "top",
               "tolerance", "check")},
           "seed": SEED, "valgrind": _version([VALGRIND, "--version"]),
           "strace": _version([STRACE, "-V"]), "notes": list(NOTES),
           "builds": [describe_build(b) for b in builds], "runs": []}
    bench = Bench(opts, workdir, os.path.join(builds[0]["dir"],
                                              "cfpm-token"))
    bench.setup()
    for rep in range(1, opts.runs + 1):
        for b in builds:
            doc["runs"].append(Run(bench, b, rep, results).run())
    doc["repeatability"] = repeatability(doc["runs"], opts.tolerance) \
        if opts.runs >= 2 else None
    doc["ab"] = None
    if len(builds) == 2:
        a, b = builds[0]["label"], builds[1]["label"]
        doc["ab"] = {"a": a, "b": b, "ratios": ab_ratios(doc["runs"], a, b)}
    doc["utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return doc


# ---------------------------------------------------------------------------
# The text table

SUMMARY_ROWS = (
    ("ir_per_get", "Ir per GET", "{:,.0f}"),
    ("ir_per_post", "Ir per POST", "{:,.0f}"),
    ("ir_per_request", "Ir per request (mix)", "{:,.0f}"),
    ("ir_per_hello_get", "Ir per hello GET", "{:,.0f}"),
    ("ir_get_above_hello", "Ir GET above hello", "{:,.0f}"),
    ("syscalls_per_get", "syscalls per GET", "{:.3f}"),
    ("syscalls_per_post", "syscalls per POST", "{:.3f}"),
    ("syscalls_per_hello_get", "syscalls per hello GET", "{:.3f}"),
)
WINDOW_NAMES = (("events", "get", "events GET"), ("events", "post",
                                                  "events POST"),
                ("hello", "get", "hello GET"))


def _table(head, rows, align=None):
    """Rows of cells as aligned text; align: "l" or "r" per column
    (default: the first left, the others right)."""
    align = align or "l" + "r" * (len(head) - 1)
    rows = [head] + rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                      for c, w, a in zip(r, widths, align)).rstrip()
            for r in rows]


def _summary_lines(doc):
    runs = doc["runs"]
    head = [""] + ["%s%d" % (r["build"], r["rep"]) for r in runs]
    rep = doc.get("repeatability") or {}
    if rep:
        head += ["spread %s" % k for k in sorted(rep)]
    if doc.get("ab"):
        head.append("%s/%s" % (doc["ab"]["b"], doc["ab"]["a"]))
    rows = []
    for key, name, fmt in SUMMARY_ROWS:
        row = [name] + [fmt.format(r["summary"][key]) for r in runs]
        row += ["%.3f%%" % rep[k]["spread_pct"][key] if key in
                rep[k]["spread_pct"] else "" for k in sorted(rep)]
        if doc.get("ab"):
            ratio = doc["ab"]["ratios"].get(key)
            row.append("%.4f" % ratio if ratio is not None else "-")
        rows.append(row)
    return _table(head, rows)


def _keys_in_order(run, part, field):
    """The keys of run[part][app][win][field] over the windows, each once,
    in the order first seen."""
    out = []
    for app, win, _ in WINDOW_NAMES:
        for k in run[part][app][win][field]:
            if k not in out:
                out.append(k)
    return out


def _library_lines(run):
    libs = _keys_in_order(run, "callgrind", "by_library")
    rows = [[g] + ["{:,.0f}".format(run["callgrind"][app][win][
        "by_library"].get(g, 0)) for app, win, _ in WINDOW_NAMES]
        for g in libs]
    return _table(["Ir per request (self)"] + [n for _, _, n in
                                                WINDOW_NAMES], rows)


def _syscall_lines(run):
    names = _keys_in_order(run, "syscalls", "calls")
    rows = []
    for k in names:
        cells = []
        for app, win, _ in WINDOW_NAMES:
            w = run["syscalls"][app][win]
            c = "%.3f" % w["calls"].get(k, 0)
            if w["errors"].get(k):
                c += " (%.3f err)" % w["errors"][k]
            cells.append(c)
        rows.append([k] + cells)
    rows.append(["total"] + ["%.3f" % run["syscalls"][a][w]["per_request"]
                             for a, w, _ in WINDOW_NAMES])
    return _table(["system calls per request"] + [n for _, _, n in
                                                   WINDOW_NAMES], rows)


def _top_lines(w, kind):
    rows = [["{:,.0f}".format(f["ir_per_request"]), "%.1f" % f["pct"],
             "%.1f" % f["calls_per_request"], f["library"], f["function"]]
            for f in w[kind]]
    return _table(["Ir/req", "%", "calls/req", "library", "function"], rows,
                  "rrrll")


def render_text(doc):
    """The short text report of doc: the figures per run, the spread and
    A/B ratio, then per build (its first run) the libraries, the system
    calls and the top functions of each window."""
    o = doc["options"]
    out = ["cfpm instructions per request (bench/icount): one worker, "
           "%d GETs, %d POSTs, %d hello GETs through nginx (keep-conn %s), "
           "%d warm-up each, ids uniform over 1..%d (seed %d)" % (
               o["n"], o["n"], o["n"], o["keep_conn"], o["warmup"], o["rows"],
               doc["seed"])]
    out += ["note: " + n for n in doc["notes"]]
    for b in doc["builds"]:
        out.append("build %s: %s (source %s, git %s%s)" % (
            b["label"], b["dir"], b["srcdir"], (b.get("git_rev") or "?")[:12],
            ", with changes" if b.get("git_dirty") else ""))
    out += [""] + _summary_lines(doc)
    for k, r in sorted((doc.get("repeatability") or {}).items()):
        out.append("repeatability %s: %d runs, instruction figures within "
                   "%.3f%% (tolerance %.1f%%): %s" % (
                       k, r["runs"], max(r["spread_pct"][f] for f, _, _ in
                                         FIGURES), o["tolerance"],
                       "ok" if r["ok"] else "FAILED"))
    for label in [b["label"] for b in doc["builds"]]:
        run = next(r for r in doc["runs"] if r["build"] == label)
        tag = "%s%d" % (label, run["rep"])
        out += ["", "%s:" % tag] + _library_lines(run)
        out += [""] + _syscall_lines(run)
        for app, win, name in WINDOW_NAMES:
            w = run["callgrind"][app][win]
            for kind, what in (("top_self", "self"),
                               ("top_inclusive", "inclusive")):
                out += ["", "%s, %s: top %d functions by %s cost (%s)" % (
                    tag, name, len(w[kind]), what, w["callgrind_file"])]
                out += _top_lines(w, kind)
    return "\n".join(out) + "\n"
