#!/usr/bin/env python3
"""
test_bench.py: the benchmark harness (bench/run) in its quick mode on a
tiny configuration — cfpm, cfpm-nokeep (keep-conn off) and the peers
added for issue 12 (php-fpm-tuned, go built with the newest Go, go-1.19,
node), 1 core, pool 8, 3 s, one
repetition each, no reference points, all in one run — then checks the
results folder: every expected file, summary.json with a row per cell,
each peer contract-checked and measured, positive throughput and CPU per
request, versions.json naming every runtime, system calls, accepts and
connects per request and the CPU split between nginx and the server
(cfpm-nokeep: an accept per request, none kept; cfpm at a low open-loop
rate: most requests on a kept connection). No speed is asserted. Also
checks that the run left no process, cgroup or work directory behind, that
a candidate whose runtime is missing makes bench/run fail, and a few pure
helpers of bench/lib.

The parts of issue 24, once each in quick form: the paced generator's own
recording against a server with a fixed delay (latency from the intended
send times, coordinated omission corrected, histograms merged over the
threads), then a second run of cfpm alone with every new part: cost
points (one at a rate the generator cannot send, which must come out
invalid and without figures), read-only and write-only points, a
capacity sweep, a virtual-users level; and the capacity vote and the
users score on made-up records.

Needs root, wrk, nginx and PostgreSQL 15 (skipped without wrk or root),
and the peers' runtimes (tools/install-deps --bench): a missing one fails.
Environment (exported by make check): CFPM_SRCDIR, CFPM_BUILDDIR.
Output: TAP.
"""

import glob
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
# The run stays under 5 minutes; most of it is the first build of the Go
# peer by each toolchain (later runs reuse Go's build cache).
RUN_TIMEOUT = 290
PEERS = ("php-fpm-tuned", "go", "go-1.19", "node")
MISSING_TIMEOUT = 60       # setup only: the candidate fails to prepare
EXIT_UNPREPARED = 3        # bench/run's status for a candidate not built
FILES = ("records.jsonl", "summary.json", "summary.md", "throughput.svg",
         "cpu_per_request.svg", "versions.json")
# The run of the new parts (cfpm alone): a rate no generator here sends
# (the point must be invalid: its schedule cannot be kept), a low one.
OPEN_RATES = "300,200000"
FORCED_RATE = 200000
OPEN_TIMEOUT = 400
# The paced generator's check: a server answering after DELAY_S, paced
# at PACED_RATE (8 connections): first slower than a connection's
# interval allows (no queue), then much slower (each connection falls
# behind: latency from the intended times must grow past the delay).
PACED_RATE = 40
FAST_DELAY_S = 0.1
SLOW_DELAY_S = 0.5
PACED_WINDOW_S = 3

DIAG_LINES = 40            # a failure shows the end of its output
sys.path[:0] = [os.path.join(SRCDIR, "bench"), SRCDIR]     # lib, harness

from harness.proc import run_session  # noqa: E402
from harness.procfs import cmdline_pids, kill_mentioning  # noqa: E402
from harness.tap import TAP  # noqa: E402


def run_bench(out, work, candidates=("cfpm", "cfpm-nokeep") + PEERS,
              extra=(), env=None,
              timeout=RUN_TIMEOUT):
    """bench/run --quick on the tiny configuration; returns (rc, output).
    On timeout the run's process group gets SIGTERM (the harness cleans
    up), then SIGKILL."""
    argv = [sys.executable, os.path.join(SRCDIR, "bench", "run"), "--quick",
            "--candidates", ",".join(candidates), "--cores", "1", "--pools",
            "8", "--duration", "3", "--reps", "1", "--no-refs", "--out", out,
            "--workdir", work] + list(extra)
    if "--parts" not in extra:          # the run of issue 12's peers
        argv += ["--parts", "closed"]
    env = dict(os.environ, CFPM_BUILDDIR=BUILDDIR, CFPM_SRCDIR=SRCDIR,
               **(env or {}))
    rc, output, _ = run_session(argv, timeout, env, merge=True)
    return -1 if rc is None else rc, output


def leftovers(work):
    """Pids of processes whose command line mentions the work dir."""
    return cmdline_pids(work)


def check_results(tap, res):
    for f in FILES:
        path = os.path.join(res, f)
        tap.ok(os.path.isfile(path) and os.path.getsize(path) > 0,
               "results folder has %s" % f)
    try:
        with open(os.path.join(res, "summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        tap.ok(False, "summary.json parses", e)
        return
    tap.ok(True, "summary.json parses")
    rows = [r for r in summary.get("cells", []) if r.get("candidate") ==
            "cfpm" and r.get("cores") == 1 and r.get("pool") == 8]
    tap.ok(len(rows) == 1, "summary has one row for cfpm, 1 core, pool 8",
           json.dumps(summary.get("cells"))[:2000])
    row = rows[0] if rows else {}
    tap.ok(row.get("status") == "ok" and row.get("valid_reps") == 1,
           "the cell has a valid repetition", json.dumps(row)[:2000])
    tput = (row.get("throughput_rps") or {}).get("median")
    cpu = (row.get("cpu_us_per_req") or {}).get("median")
    tap.ok(isinstance(tput, (int, float)) and tput > 0,
           "throughput is a positive number (%r)" % tput)
    tap.ok(isinstance(cpu, (int, float)) and cpu > 0,
           "CPU µs/request is a positive number (%r)" % cpu)
    with open(os.path.join(res, "records.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    pts = [r for r in recs if r.get("kind") == "point" and
           r.get("candidate") == "cfpm"]
    tap.ok(len(pts) == 1 and isinstance(pts[0].get("valid"), bool) and
           pts[0].get("ok_2xx", 0) > 0, "records.jsonl: one raw point of cfpm")
    tap.ok(any(r.get("kind") == "contract" and r.get("ok") for r in recs),
           "records.jsonl: cfpm passed the contract check")
    with open(os.path.join(res, "versions.json")) as f:
        v = json.load(f)
    tap.ok(all(v.get(k) for k in ("nginx", "postgresql", "openssl", "wrk",
                                  "kernel", "cfpm_git_rev")),
           "versions.json names nginx, PostgreSQL, OpenSSL, wrk, kernel, "
           "cfpm revision", json.dumps(v))
    go = [int(x) for x in (v.get("go") or "0.0").split(".")[:2]]
    tap.ok(go > [1, 19] and (v.get("go_1_19") or "").startswith("1.19") and
           v.get("node") and v.get("php") and
           (v.get("node_modules") or {}).get("fast-jwt") and
           v.get("php_ini", {}).get("php-fpm-tuned"),
           "versions.json: newest Go (%s) beside 1.19, Node, PHP, the Node "
           "packages, each PHP variant's settings" % v.get("go"),
           json.dumps(v)[:3000])
    check_peers(tap, summary, recs)
    with open(os.path.join(res, "summary.md")) as f:
        md = f.read()
    tap.ok("| cfpm |" in md and "Planning" in md,
           "summary.md has the cell table and the planning view")
    for f in ("throughput.svg", "cpu_per_request.svg"):
        with open(os.path.join(res, f)) as fh:
            tap.ok(fh.read(200).startswith("<svg"), "%s is SVG" % f)
    check_profile(tap, recs, md)
    check_connections(tap, recs, md)


def _syscount_ok(rec):
    """A record's system-call and CPU-split figures are there and sane:
    both roles made calls and used CPU, the split is no more than the
    cgroup's CPU (it leaves out processes that came or went)."""
    sc = rec.get("syscount") or {}
    role = rec.get("cpu_us_per_req_by_role") or {}
    calls = sc.get("syscalls_per_req") or {}
    return (calls.get("server", 0) > 0 and calls.get("nginx", 0) > 0 and
            0 <= sc.get("kept_share", -1) <= 1 and
            role.get("server", 0) > 0 and role.get("nginx", 0) > 0 and
            sum(role.values()) <= 1.05 * (rec.get("cpu_us_per_req") or 0))


def check_connections(tap, recs, md):
    """Connections and system calls per request (lib/syscount.py): counted
    for every point; cfpm-nokeep (keep-conn off) accepts a connection per
    request, so none is kept."""
    from lib import syscount
    why = syscount.available()
    if why:
        tap.skip("connections and system calls per request", why)
        return
    pts = {r["candidate"]: r for r in recs if r.get("kind") == "point"}
    for name in ("cfpm", "cfpm-nokeep"):
        tap.ok(name in pts and _syscount_ok(pts[name]),
               "%s: system calls per request by role, the kept share and "
               "the window's CPU by role" % name,
               {k: pts.get(name, {}).get(k) for k in (
                   "syscount", "cpu_us_per_req_by_role", "cpu_us_per_req")})
    nk = (pts.get("cfpm-nokeep") or {}).get("syscount") or {}
    tap.ok(nk.get("accepts_per_req", 0) >= 0.95 and
           nk.get("connects_per_req", 0) >= 0.95 and
           nk.get("kept_share", 1) <= 0.05,
           "cfpm-nokeep: an accept and a connect per request, none kept",
           nk)
    tap.ok("Connections and system calls per request" in md and
           "| cfpm-nokeep |" in md, "summary.md: the connections table")


def check_peers(tap, summary, recs):
    """Every peer of the run passed the contract and was measured. The
    probe gate may reject a repetition on a busy machine, so a peer's
    point only has to exist and count 2xx replies."""
    contracts = {r["candidate"]: r.get("ok") for r in recs
                 if r.get("kind") == "contract"}
    for name in PEERS:
        pts = [r for r in recs if r.get("kind") == "point" and
               r.get("candidate") == name]
        fails = [r.get("error", "")[:300] for r in recs
                 if r.get("kind") == "failure" and r.get("candidate") == name]
        tap.ok(contracts.get(name) is True and len(pts) == 1 and
               pts[0].get("ok_2xx", 0) > 0 and
               (pts[0].get("cpu_us_per_req") or 0) > 0,
               "%s: contract passed, one measured repetition with 2xx "
               "replies and CPU per request" % name, fails or pts)
    described = {c["name"]: c for c in
                 summary.get("run", {}).get("candidates", [])}
    build = (described.get("go") or {}).get("build") or {}
    tap.ok(build.get("toolchain") != (described.get("go-1.19") or {}).get(
        "build", {}).get("toolchain") and build.get("info"),
           "go and go-1.19 are built by different toolchains, build info "
           "recorded", json.dumps(described)[:2000])


def check_missing_runtime(tap, tmp):
    """A candidate whose runtime is missing fails bench/run (no silent
    skip): its own exit status, the reason in the output."""
    out, work = os.path.join(tmp, "results-m"), os.path.join(tmp, "work-m")
    os.makedirs(work)
    rc, output = run_bench(out, work, candidates=("node",),
                           extra=("--rows", "1000"),
                           env={"CFPM_NODE": "/nonexistent/node"},
                           timeout=MISSING_TIMEOUT)
    tap.ok(rc == EXIT_UNPREPARED and "node missing" in output and
           "not measured" in output,
           "a missing runtime (node) makes bench/run exit %d and say why "
           "(got %d)" % (EXIT_UNPREPARED, rc), output[-1500:])


def check_profile(tap, recs, md):
    """The perf breakdown of cfpm and of its floors: F_keep (cfpm with the
    hello application) and F (the libfcgi hello-world)."""
    from lib import profile
    why = profile.available()
    if why:
        tap.skip("CPU breakdown per stage", why)
        return
    prof = {r["candidate"]: r for r in recs if r.get("kind") == "profile"}
    tap.ok(set(prof) == {"cfpm", "cfpm-hello", "hello"}, "records.jsonl: "
           "a profile of cfpm, cfpm-hello and hello at the same pool",
           sorted(prof))
    for name, rec in prof.items():
        shares = sum(s["share"] for s in rec["stages"])
        us = sum(s["us_per_req"] or 0 for s in rec["stages"])
        tap.ok(rec["samples"] > 100 and abs(shares - 1) < 1e-6 and
               abs(us - rec["cpu_us_per_req"]) < 0.01 * rec["cpu_us_per_req"],
               "%s profile: %d samples; stage shares sum to 1 and stage "
               "µs to its CPU µs/req (%.1f)" % (name, rec["samples"],
                                                rec["cpu_us_per_req"] or 0))
    stages = {(s["role"], s["stage"]): s["us_per_req"]
              for s in prof.get("cfpm", {}).get("stages", [])}
    tap.ok((stages.get(("server", "OpenSSL (libcrypto)")) or 0) > 1 and
           any(r == "nginx" for r, _ in stages),
           "cfpm's workers spend time in OpenSSL (the RS256 verify), its "
           "nginx is seen too", sorted(stages)[:12])
    tap.ok("Where the CPU goes" in md and "| server | OpenSSL (libcrypto) |"
           in md and "## Targets" in md,
           "summary.md has the targets and the breakdown table")


class _DelayHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, 200 after the server's delay."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        time.sleep(self.server.delay)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _DelayServer(ThreadingHTTPServer):
    """The delaying server; wrk closing with requests in flight is not
    an error here."""
    daemon_threads = True
    delay = 0.0

    def handle_error(self, request, client_address):
        pass


def _paced(gens, port, server, delay):
    """One paced window of the GET generator against server at delay."""
    from lib import load
    server.delay = delay
    procs, _ = gens.start_paced(port, {"get": PACED_RATE}, PACED_WINDOW_S)
    return load.Generators.finish_paced(procs, PACED_WINDOW_S + 30,
                                        PACED_WINDOW_S)["get"]


def check_paced_recording(tap, tmp):
    """The paced generator's recording itself, against a server whose
    delay is known: every answer is counted once in the merged histogram
    of its threads; its latency runs from the intended send time, so when
    each connection falls behind its schedule the latency grows past the
    server's delay (wrk's own figure, from the actual send, stays at the
    delay: coordinated omission) and the schedule is reported not kept."""
    from lib import hist, load
    toks = os.path.join(tmp, "paced-tokens.txt")
    with open(toks, "w") as f:
        f.write("t1\nt2\n")
    server = _DelayServer(("127.0.0.1", 0), _DelayHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    gens = load.Generators(None, None, 8, 1, {"get": toks}, 1000)
    try:
        fast = _paced(gens, port, server, FAST_DELAY_S)
        slow = _paced(gens, port, server, SLOW_DELAY_S)
    finally:
        server.shutdown()
    for name, r in (("fast", fast), ("slow", slow)):
        tap.ok("paced" in r and r["paced"]["connections"] ==
               load.paced_connections(PACED_RATE) and
               hist.count(r["paced"]["latency_hist"]) ==
               r["paced"]["completed"] > 0,
               "paced %s: one wrk thread per connection, the threads' "
               "histograms merged: one count per answer" % name,
               json.dumps({k: v for k, v in r.get("paced", r).items()
                           if "hist" not in k})[:1500])
    if "paced" not in fast or "paced" not in slow:
        return
    f, sl = fast["paced"], slow["paced"]
    step = f["hist_step"]
    p50 = hist.percentile(f["latency_hist"], 0.5, step)
    tap.ok(abs(f["shortfall"]) <= 0.01 and p50 >= 1000 * FAST_DELAY_S,
           "paced, server faster than a connection's interval: the "
           "schedule is kept (%d of %.0f) and no latency is shorter than "
           "the server's %.0f ms (p50 %.1f ms)" % (
               f["completed"], f["scheduled"], 1000 * FAST_DELAY_S, p50))
    p50s = hist.percentile(sl["latency_hist"], 0.5, step)
    own = slow["latency_us"]["p50"] / 1000.0
    tap.ok(p50s >= 2 * 1000 * SLOW_DELAY_S and own < 2 * 1000 *
           SLOW_DELAY_S and sl["shortfall"] > 0.01 and sl["busy_late"] > 0,
           "paced, server slower than the schedule: latency from the "
           "intended times grows (p50 %.0f ms) past the server's %.0f ms "
           "that wrk measures from the send (%.0f ms); the schedule is "
           "not kept (%d of %.0f), the delay counted as the server's "
           "(%d late sends)" % (p50s, 1000 * SLOW_DELAY_S, own,
                                sl["completed"], sl["scheduled"],
                                sl["busy_late"]))


def sanitizer_build():
    """True if BUILDDIR was configured with --enable-sanitizers."""
    try:
        with open(os.path.join(BUILDDIR, "config.status")) as f:
            return 'S["enable_sanitizers"]="yes"' in f.read()
    except OSError:
        return False


def check_open_run(tap, tmp):
    """bench/run with every part of issue 24, cfpm alone, in quick form:
    cost points (one that cannot be sent), reads and writes apart, one
    capacity cell, one users level. In the plain build only: these parts
    test bench/ (the paced generator, tsung, the verdicts and tables), not
    cfpm, whose code the closed-loop run above already drives in both
    builds; they take about three minutes, and under ASan cfpm's CPU per
    request would make every figure meaningless anyway."""
    if sanitizer_build():
        tap.skip("bench/run's open-loop and users parts",
                 "plain build only (see check_open_run)")
        return
    out, work = os.path.join(tmp, "results-o"), os.path.join(tmp, "work-o")
    os.makedirs(work)
    rc, output = run_bench(out, work, candidates=("cfpm",), extra=(
        "--parts", "closed,cost,apart,slo,users", "--rows", "20000",
        "--rates", OPEN_RATES, "--apart-rates", "300", "--slo-grid", "80",
        "--gate", "1", "--warmup", "1", "--settle", "0", "--retries", "2",
        "--user-levels", "200", "--user-plateau", "8"),
        timeout=OPEN_TIMEOUT)
    tap.ok(rc == 0, "bench/run with the open-loop and users parts exits 0",
           output)
    folders = glob.glob(os.path.join(out, "*"))
    if not folders:
        tap.ok(False, "the open-loop run wrote a results folder", output)
        return
    res = folders[0]
    with open(os.path.join(res, "records.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(res, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(res, "summary.md")) as f:
        md = f.read()
    from lib import stats
    opens = stats.last_attempts(recs, ("cost", "apart", "slo"))
    for r in opens:
        tap.ok((r["valid"] and r["samples"] > 0 and r["latency_ms"]["p99"]
                and r["cpu_us_per_req"] and r["calibration"]["valid"]) or
               (not r["valid"] and r["invalid_reasons"]),
               "open %s %s at %.0f req/s: valid with latency, CPU and a "
               "valid calibration, or invalid with its reasons (%s)" % (
                   r["part"], r["mix"], r["rate"], r["verdict"]),
               json.dumps({k: v for k, v in r.items()
                           if k != "latency_hist"})[:2000])
    forced = [r for r in opens if r["rate"] == FORCED_RATE]
    row = [x for x in summary["planning"]["at_load"]
           if x["offered_rps"] == FORCED_RATE]
    tap.ok(len(forced) == 1 and not forced[0]["valid"] and any(
        "schedule not kept" in x for x in forced[0]["invalid_reasons"]) and
        len(row) == 1 and row[0]["p99_ms"] is None and
        row[0]["cpu_us_per_req"] is None and "INVALID" in md,
        "a rate the generator cannot send is invalid (schedule not kept), "
        "and its row carries no figures", [
            {k: v for k, v in r.items() if k != "latency_hist"}
            for r in forced] + row)
    low = [r for r in opens if r["part"] == "cost" and r["rate"] == 300]
    tap.ok(len(low) == 1 and (not low[0]["valid"] or (_syscount_ok(
        low[0]) and low[0]["syscount"]["kept_share"] >= 0.5)),
        "at 300 req/s (far below the ceiling) most requests come on a "
        "connection nginx kept", [{k: r.get(k) for k in (
            "valid", "syscount", "cpu_us_per_req_by_role")} for r in low])
    valid = [r for r in opens if r["valid"]]
    tap.ok(valid, "at least one open-loop point is a result",
           [(r["part"], r["mix"], r["invalid_reasons"]) for r in opens])
    parts = {(r["part"], r["mix"]) for r in opens}
    tap.ok({("cost", "mix"), ("apart", "read"), ("apart", "write"),
            ("slo", "mix")} <= parts,
           "cost, read-only, write-only and capacity points measured",
           sorted(parts))
    ap = (summary.get("apart") or {}).get("rows") or []
    tap.ok(len(ap) == 1 and ap[0]["candidate"] == "cfpm" and
           "Reads and writes apart" in md and "CPU µs/GET" in md,
           "summary: reads and writes apart (CPU per GET and per POST, the "
           "DB's per SELECT and per INSERT)", ap)
    slo = summary.get("slo") or []
    tap.ok(len(slo) == 1 and [t["slo_ms"] for t in slo[0]["targets"]] ==
           [10, 50] and all("bracket" in t and "per_rep_rps" in t
                            for t in slo[0]["targets"]) and
           "Capacity at a latency target" in md,
           "summary: capacity at p99 < 10 ms and < 50 ms with brackets "
           "and the repetitions' capacities", slo)
    check_users_run(tap, recs, summary, md)
    svgfile = os.path.join(res, "latency_cfpm.svg")
    text = open(svgfile).read() if os.path.exists(svgfile) else ""
    tap.ok(text.startswith("<svg") and "p99 &lt; 10 ms" in text and
           "p99 &lt; 50 ms" in text and ("<circle" in text or not valid),
           "latency_cfpm.svg: p99 against the offered rate with both "
           "targets drawn")
    tap.ok(not leftovers(work) and os.listdir(work) == [],
           "the open-loop run left no process and no work directory",
           leftovers(work))


def check_users_run(tap, recs, summary, md):
    """The virtual-users level of the open-loop run."""
    lv = [r for r in recs if r.get("kind") == "users"]
    r = lv[0] if lv else {}
    tap.ok(len(lv) == 1 and r["users"] == 200 and
           r.get("requests", 0) > 0 and r.get("p95_ms") is not None and
           r.get("started") == 200 and r.get("server_connections", 0) >= 1
           and (r["passed"] or r["reasons"]) and
           (r["valid"] or r["invalid_reasons"]),
           "users: one level of 200 tsung users measured, with its "
           "percentiles, users held and verdict",
           json.dumps(r)[:2000])
    scores = summary.get("users") or []
    tap.ok(len(scores) == 1 and scores[0]["candidate"] == "cfpm" and
           "Virtual users" in md and (scores[0]["score"] == 200) ==
           bool(r.get("passed") and r.get("valid")),
           "summary: the users score follows the level's verdict", scores)


def _open(rate, share, rep, p99, verdict="ok"):
    return {"kind": "open", "part": "slo", "mix": "mix", "candidate": "x",
            "pool": 8, "cores": 1, "rate": rate, "share": share, "rep": rep,
            "rate_spec": "%g%% of ceiling" % (100 * share),
            "valid": verdict == "ok", "verdict": verdict,
            "latency_ms": {"p99": p99}}


def check_vote_helpers(tap):
    """The capacity vote and the users score on made-up records."""
    from lib import stats
    grid = ((1000, 0.5), (1200, 0.6), (1400, 0.7))
    # Three repetitions: 10 ms met up to 1200 by two of three.
    p99 = {1: (4, 8, 30), 2: (5, 12, 40), 3: (4, 9, 60)}
    recs = [_open(r, s, rep, p99[rep][i]) for rep in (1, 2, 3)
            for i, (r, s) in enumerate(grid)]
    recs = [r for r in recs if not (r["rep"] == 3 and r["rate"] == 1400)]
    recs.append(_open(1400, 0.7, 3, None, "server"))
    c = stats.slo_capacity(recs)[0]["targets"]
    t10, t50 = c
    tap.ok(t10["voted_rps"] == 1200 and t10["bracket"] == (1200, 1400) and
           t10["per_rep_rps"] == {"1": 1200, "2": 1000, "3": 1200} and
           not t10["agree"] and t10["capacity_rps"] is None and
           t50["capacity_rps"] == 1400 and t50["bracket"] == (1400, None)
           and t50["per_rep_rps"]["3"] == 1200,
           "capacity vote: majority per cell, bracketing cells; "
           "repetitions 17 % apart disagree (no number), 14 % apart agree",
           c)
    same = [_open(r, s, rep, p) for rep in (1, 2)
            for (r, s), p in zip(grid, (4, 8, 30))]
    t = stats.slo_capacity(same)[0]["targets"][0]
    tap.ok(t["capacity_rps"] == 1200 and t["agree"] and t["spread"] == 0,
           "capacity vote: agreeing repetitions give a number", t)
    gen = [_open(1000, 0.5, 1, 4), _open(1200, 0.6, 1, None, "generator")]
    t = stats.slo_capacity(gen)[0]["targets"][0]
    tap.ok(t["voted_rps"] == 1000 and t["bracket"] == (1000, 1200) and
           t["per_rep_bounded_by_invalid"]["1"] and
           t["unmeasured_above"],
           "capacity vote: a cell whose generator failed has no vote and "
           "bounds the capacity: at least the cells met below it", t)
    low = [_open(1000, 0.5, rep, None, "generator") for rep in (1, 2)]
    t = stats.slo_capacity(low)[0]["targets"][0]
    missed = stats.slo_capacity([_open(1000, 0.5, 1, 30)])[0]["targets"][0]
    tap.ok(t["unmeasured_above"] and t["voted_rps"] is None and
           t["capacity_rps"] is None and not missed["unmeasured_above"] and
           missed["voted_rps"] is None,
           "capacity vote: no valid point at the lowest cell is no result, "
           "a valid miss there is below the grid", [t, missed])

    def level(n, passed, valid=True):
        return {"kind": "users", "candidate": "x", "front": "nginx",
                "pool": 8, "users": n, "passed": passed, "valid": valid,
                "reasons": [] if passed else ["p95 900 ms >= 500"],
                "invalid_reasons": [] if valid else ["generator CPUs "
                                                     "saturated"]}
    s1 = stats.users_scores([level(1000, True), level(2000, True),
                             level(4000, False), level(3000, True)])[0]
    s2 = stats.users_scores([level(1000, True), level(2000, True, False)])[0]
    tap.ok(s1["score"] == 3000 and not s1["at_least"] and
           s1["bracket"] == (3000, 4000) and s2["score"] == 1000 and
           s2["at_least"] and "saturated" in s2["limit"][0],
           "users score: the most users of a passing level; 'at least' "
           "when the level above was no result", [s1, s2])


def check_helpers(tap):
    """Pure helpers of bench/lib."""
    from lib import cgroup, stats
    tap.ok(cgroup.cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8" and
           cgroup.parse_cpulist("0-2,5,7-8") == [0, 1, 2, 5, 7, 8],
           "cpulist and parse_cpulist round-trip")
    tap.ok(stats.cores_needed(10000, 100.0) == 1 and
           stats.cores_needed(30000, 150.0) == 5,
           "planning: cores = ceil(rate x µs / 1e6)")
    from lib import profile
    k = "[kernel.kallsyms]"
    send = [("_raw_spin_unlock_irqrestore", k), ("sock_def_readable", k),
            ("__sys_sendto", k), ("__x64_sys_sendto", k),
            ("do_syscall_64", k), ("__send", "/lib/libc.so.6")]
    wait = [("finish_task_switch", k), ("__schedule", k), ("schedule", k),
            ("do_sys_poll", k), ("__x64_sys_poll", k), ("do_syscall_64", k)]
    inlined = [("vfs_write", k), ("ksys_write", k), ("do_syscall_64", k)]
    from lib import syscount
    counted = syscount.parse(
        "# started on ...\n\n"
        "nginx-10,300,,raw_syscalls:sys_enter,1,100.00,,\n"
        "nginx-10,10,,syscalls:sys_enter_connect,1,100.00,,\n"
        "nginx-10,<not counted>,,syscalls:sys_exit_accept4,1,100.00,,\n"
        "cfpm: pool www-11,200,,raw_syscalls:sys_enter,1,100.00,,\n"
        "cfpm: pool www-11,4,,syscalls:sys_exit_accept4,1,100.00,,\n"
        "cfpm-12,100,,raw_syscalls:sys_enter,1,100.00,,\n")
    f = syscount.per_request(counted, 20)
    tap.ok(counted == {"nginx": {"syscalls": 300, "connects": 10,
                                 "accepts": 0},
                       "server": {"syscalls": 300, "accepts": 4}} and
           f["syscalls_per_req"] == {"server": 15.0, "nginx": 15.0,
                                     "all": 30.0} and
           f["accepts_per_req"] == 0.2 and f["connects_per_req"] == 0.5 and
           abs(f["kept_share"] - 0.8) < 1e-9 and
           syscount.per_request(counted, 0) is None,
           "syscount: perf stat's per-process lines by role, per request, "
           "kept share = 1 - accepts per request", f)
    tap.ok(syscount.cpu_split({1: ("nginx", 1000), 2: ("server", 5000)},
                              {1: ("nginx", 4000), 2: ("server", 9000)}) ==
           {"nginx": 3.0, "server": 4.0},
           "syscount: the CPU split by role from two snapshots (ns -> µs)")
    tap.ok(profile.stage("cfpm", send) == "kernel: sendto()" and
           profile.stage("cfpm", wait) == "kernel: context switches" and
           profile.stage("cfpm", inlined) == "kernel: write()" and
           profile.stage("cfpm", [("x", "/usr/lib/libcrypto.so.3")]) ==
           "OpenSSL (libcrypto)" and
           profile.stage("cfpm", [("api_handle", "/build/cfpm")]) ==
           "own code" and profile.role("nginx") == "nginx",
           "profile stages: system call, context switch, library, own code")


def main():
    tap = TAP(diag_lines=DIAG_LINES)
    if os.geteuid() != 0 or not shutil.which("wrk"):
        return TAP.skip_all("needs root and wrk (tools/install-deps --bench)")
    check_helpers(tap)
    check_vote_helpers(tap)
    tmp = tempfile.mkdtemp(prefix="cfpm-test-bench.")
    os.chmod(tmp, 0o755)        # the postgres user must reach the cluster
    out, work = os.path.join(tmp, "results"), os.path.join(tmp, "work")
    os.makedirs(work)
    try:
        rc, output = run_bench(out, work)
        tap.ok(rc == 0, "bench/run --quick exits 0", output)
        folders = glob.glob(os.path.join(out, "*"))
        tap.ok(len(folders) == 1 and output.strip().endswith(folders[0]),
               "one new results folder, printed last", output[-500:])
        if folders:
            check_results(tap, folders[0])
        tap.ok(not leftovers(work), "no process of the run is left",
               leftovers(work))
        tap.ok(os.listdir(work) == [], "the run's work directory is gone",
               os.listdir(work))
        check_missing_runtime(tap, tmp)
        check_paced_recording(tap, tmp)
        check_open_run(tap, tmp)
    finally:
        kill_mentioning(work)
        kill_mentioning(os.path.join(tmp, "work-o"))
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
