#!/usr/bin/env python3
"""
test_icount.py: bench/icount, the instruction count per request (issue
23, item 1). First its pure parts on made-up input: the callgrind reader
(name compression, inlined pieces, calls into other objects, recursion,
the libraries), the strace -c reader, the repeatability judgement. Then,
in the plain build, one small invocation that measures this build twice
as an A/B pair with --check (two runs each): exit 0, every figure
positive, per-GET and per-POST windows of the number of requests sent,
the hello floor below the events figures, cfpm's own functions among the
top ones, repeatability within 1 %, the A/B ratio of a build to itself
within 1 % of 1, totals equal to callgrind_annotate's, nothing left
behind. In the sanitizer build valgrind cannot run the binaries: there
bench/icount must refuse the build and say why.

Needs root, valgrind, strace, nginx and PostgreSQL 15 (skipped without
root or valgrind). Environment (exported by make check): CFPM_SRCDIR,
CFPM_BUILDDIR, CFPM_SANITIZERS. Output: TAP.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
RUN_TIMEOUT = 600           # four small runs on a loaded 2-core machine
REFUSE_TIMEOUT = 60
N = 20                      # requests per window: small, the test is quick
TOLERANCE = 1.0             # per cent, the bound
DIAG_LINES = 40
sys.path[:0] = [os.path.join(SRCDIR, "bench"), SRCDIR]     # lib, harness

from harness.paths import SANITIZERS  # noqa: E402
from harness.proc import run_session  # noqa: E402
from harness.procfs import cmdline_pids, kill_mentioning  # noqa: E402
from harness.tap import TAP  # noqa: E402
from lib import callgrind, icount  # noqa: E402

# A callgrind file as callgrind writes one, made small: compressed names,
# an inlined piece (fi/fe) of main, a call into libc (cob), a recursive
# function, a function without a symbol.
CALLGRIND_TEXT = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
cmd:  /b/cfpm -c x.conf
part: 1

positions: line
events: Ir
summary: 1000

ob=(1) /b/cfpm
fl=(1) src/main.c
fn=(1) main
10 100
fi=(2) src/inline.h
+2 50
fe=(1)
+1 10
cob=(2) /usr/lib/x86_64-linux-gnu/libc.so.6
cfi=(3) memcpy.S
cfn=(2) memcpy
calls=4 5
11 200
cfn=(3) walk
calls=1 20
12 600

fn=(3)
20 300
cfn=(3)
calls=2 20
21 250
cob=(3) /usr/lib/x86_64-linux-gnu/libcrypto.so.3
cfn=(4) 0x000000000012f820
calls=1 0
22 50

ob=(2)
fl=(3)
fn=(2)
5 200

ob=(3)
fl=(4) ???
fn=(4)
0 50
"""

STRACE_TEXT = """\
syscall              calls    errors
---------------- --------- ---------
recvfrom               400          
sendto                 400          
epoll_pwait            200          
accept4                  1         1
---------------- --------- ---------
total                 1001         1
"""


def check_callgrind_reader(tap):
    p = callgrind.parse(CALLGRIND_TEXT)
    main, walk = ("/b/cfpm", "main"), ("/b/cfpm", "walk")
    memcpy = ("/usr/lib/x86_64-linux-gnu/libc.so.6", "memcpy")
    anon = ("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "0x000000000012f820")
    tap.is_({k: v[0] for k, v in p.self.items()},
            {main: 160, walk: 300, memcpy: 200, anon: 50},
            "callgrind: self cost per function, inlined pieces in the "
            "function they are in, names resolved")
    tap.is_(p.total(), 1000, "callgrind: the total is the summary line")
    tap.is_({k: v[0] for k, v in p.inclusive.items()},
            {main: 960, walk: 850, memcpy: 200, anon: 50},
            "callgrind: inclusive cost as callgrind_annotate counts it "
            "(the calls into a function; the root: self + its calls)")
    tap.is_(p.calls, {memcpy: 4, walk: 3, anon: 1},
            "callgrind: calls per callee")
    tap.is_(p.by_group(), {"cfpm": 460, "libc": 200, "openssl": 50},
            "callgrind: self cost per library")
    tap.is_([k for k, _ in p.top("self", 2)], [walk, memcpy],
            "callgrind: top functions by self cost")
    tap.is_(callgrind.display_name(*anon), "libcrypto.so.3+0x12f820",
            "callgrind: a function without a symbol is named by object and "
            "offset")


def check_pure(tap):
    s = icount.parse_strace(STRACE_TEXT)
    tap.is_((s["total"], s["total_errors"], s["calls"]["recvfrom"],
             s["errors"]), (1001, 1, 400, {"accept4": 1}),
            "strace -c summary: totals, calls and errors per system call")
    w = icount.syscall_window(s, 200)
    tap.ok(w["per_request"] == 1001 / 200 and w["calls"]["sendto"] == 2,
           "system calls per request", w)
    runs = [{"build": "A", "summary": dict(base, ir_per_get=g)}
            for base in [{k: 100.0 for k, _, _ in icount.FIGURES +
                          icount.SYSCALL_FIGURES}] for g in (100.0, 102.0)]
    tap.ok(not icount.repeatability(runs, TOLERANCE)["A"]["ok"],
           "repeatability: runs 2 % apart fail a 1 % tolerance")
    runs[1]["summary"]["ir_per_get"] = 100.5
    tap.ok(icount.repeatability(runs, TOLERANCE)["A"]["ok"],
           "repeatability: runs 0.5 % apart pass")
    runs[1]["summary"]["syscalls_per_get"] = 150.0
    tap.ok(icount.repeatability(runs, TOLERANCE)["A"]["ok"],
           "repeatability: system call figures are shown, not judged")


def run_icount(argv, env=None, timeout=RUN_TIMEOUT):
    """bench/icount argv; returns (rc, stdout, stderr), rc None after a
    timeout."""
    return run_session([sys.executable, os.path.join(SRCDIR, "bench",
                                                      "icount")] + argv,
                       timeout, dict(os.environ, CFPM_SRCDIR=SRCDIR,
                                     **(env or {})))


def annotate_total(path):
    """callgrind_annotate's PROGRAM TOTALS of a dump, or None."""
    p = subprocess.run(["callgrind_annotate", path], capture_output=True,
                       timeout=120)
    m = re.search(r"^\s*([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS",
                  p.stdout.decode("utf-8", "replace"), re.M)
    return int(m.group(1).replace(",", "")) if m else None


def check_run(tap, res, doc):
    runs = doc.get("runs", [])
    tap.is_(sorted((r["build"], r["rep"]) for r in runs),
            [("A", 1), ("A", 2), ("B", 1), ("B", 2)],
            "two runs of each build")
    for r in runs:
        tag = "%s%d" % (r["build"], r["rep"])
        s = r["summary"]
        tap.ok(all(s[k] > 0 for k, _, _ in icount.FIGURES +
                   icount.SYSCALL_FIGURES),
               "%s: instructions and system calls per GET, per POST and "
               "per hello GET are positive" % tag, s)
        wins = [(a, w, r["callgrind"][a][w]["requests"],
                 r["syscalls"][a][w]["requests"])
                for a, w in (("events", "get"), ("events", "post"),
                             ("hello", "get"))]
        tap.ok(all(n1 == N and n2 == N for _, _, n1, n2 in wins),
               "%s: per-GET, per-POST and hello windows of %d requests in "
               "both tools" % (tag, N), wins)
        tap.ok(s["ir_per_hello_get"] < s["ir_per_get"] and
               s["ir_per_hello_get"] < s["ir_per_post"] and
               s["syscalls_per_hello_get"] < s["syscalls_per_get"],
               "%s: the hello floor is below the events figures" % tag, s)
        get = r["callgrind"]["events"]["get"]
        own = [f["function"] for f in get["top_self"]
               if f["library"] == "cfpm"]
        incl = [f["function"] for f in get["top_inclusive"]]
        tap.ok(own and any(f.startswith("jwt_verify") for f in incl) and
               "serve_request" in incl,
               "%s: the top functions name cfpm's own (self: %s)" % (
                   tag, ", ".join(own[:5])), get["top_self"], incl)
        libs = get["by_library"]
        # No jansson: tokens and bodies are read by util/jcheck.c.
        tap.ok(libs.get("openssl", 0) > libs.get("cfpm", 0) > 0 and
               libs.get("libc", 0) > 0 and libs.get("libpq", 0) > 0 and
               libs.get("jansson", 0) == 0,
               "%s: GET cost by library: OpenSSL (the verify) above "
               "cfpm's own, libc and libpq seen, no jansson" % tag, libs)
        path = os.path.join(res, get["callgrind_file"])
        tap.is_(annotate_total(path), get["ir"],
                "%s: the GET window's total is callgrind_annotate's" % tag)
    rep = doc.get("repeatability") or {}
    for b in ("A", "B"):
        sp = (rep.get(b) or {}).get("spread_pct", {})
        tap.ok(rep.get(b, {}).get("ok") and all(
            sp[k] <= TOLERANCE for k, _, _ in icount.FIGURES),
               "build %s: the two runs agree within %.0f %%" % (b, TOLERANCE),
               sp)
    ratios = (doc.get("ab") or {}).get("ratios", {})
    tap.ok(ratios and all(abs(ratios[k] - 1) <= TOLERANCE / 100
                          for k, _, _ in icount.FIGURES),
           "A/B of a build against itself: every instruction ratio within "
           "1 % of 1", ratios)
    with open(os.path.join(res, "icount.txt")) as f:
        text = f.read()
    tap.ok("Ir per GET" in text and "Ir per hello GET" in text and
           "worker.seccomp = off" in text and "kernel is not seen" in text
           and "B/A" in text,
           "icount.txt: the figures, the A/B ratio, the seccomp and kernel "
           "notes", text[:3000])


def check_measure(tap, tmp):
    out, work = os.path.join(tmp, "results"), os.path.join(tmp, "work")
    os.makedirs(work)
    rc, stdout, stderr = run_icount([
        "--check", "-n", str(N), "--warmup", "3", "--rows", "2000", "--ab",
        BUILDDIR, BUILDDIR, "--out", out, "--workdir", work])
    tap.ok(rc == 0, "bench/icount --check --ab exits 0 (rc %s)" % rc,
           stdout[-2000:], stderr[-3000:])
    folders = glob.glob(os.path.join(out, "icount-*"))
    tap.ok(len(folders) == 1 and stdout.strip().endswith(folders[0]),
           "one new results folder, printed last", stdout[-300:])
    if folders:
        try:
            with open(os.path.join(folders[0], "icount.json")) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            tap.ok(False, "icount.json parses", e)
        else:
            tap.ok(True, "icount.json parses")
            check_run(tap, folders[0], doc)
    tap.ok(not cmdline_pids(work), "no process of the run is left",
           cmdline_pids(work))
    tap.ok(os.listdir(work) == [], "the run's work directory is gone",
           os.listdir(work))


def check_refuses_sanitizers(tap, tmp):
    rc, stdout, stderr = run_icount(["--out", os.path.join(tmp, "r"),
                                     "--workdir", tmp],
                                    env={"CFPM_BUILDDIR": BUILDDIR},
                                    timeout=REFUSE_TIMEOUT)
    tap.ok(rc not in (0, None) and "sanitizer build" in stderr and
           not glob.glob(os.path.join(tmp, "r", "*")),
           "bench/icount refuses a sanitizer build and says why (rc %s)" % rc,
           stderr[-1000:])


def main():
    tap = TAP(diag_lines=DIAG_LINES)
    check_callgrind_reader(tap)
    check_pure(tap)
    if os.geteuid() != 0 or not shutil.which("valgrind"):
        tap.skip("bench/icount measures", "needs root and valgrind "
                 "(tools/install-deps)")
        return tap.done()
    tmp = tempfile.mkdtemp(prefix="cfpm-test-icount.")
    os.chmod(tmp, 0o755)        # postgres and nobody must pass through
    try:
        if SANITIZERS:
            check_refuses_sanitizers(tap, tmp)
            tap.skip("bench/icount measures", "valgrind cannot run a "
                     "sanitizer build: measured in the plain build")
        else:
            check_measure(tap, tmp)
    finally:
        kill_mentioning(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
