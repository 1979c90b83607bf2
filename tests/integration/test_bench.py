#!/usr/bin/env python3
"""
test_bench.py: the benchmark harness (bench/run) in its quick mode on a
tiny configuration — cfpm and the peers added for issue 12 (php-fpm-tuned,
go built with the newest Go, go-1.19, node), 1 core, pool 8, 3 s, one
repetition each, no reference points, all in one run — then checks the
results folder: every expected file, summary.json with a row per cell,
each peer contract-checked and measured, positive throughput and CPU per
request, versions.json naming every runtime. No speed is asserted. Also
checks that the run left no process, cgroup or work directory behind, that
a candidate whose runtime is missing makes bench/run fail, and a few pure
helpers of bench/lib.

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

DIAG_LINES = 40            # a failure shows the end of its output
sys.path[:0] = [os.path.join(SRCDIR, "bench"), SRCDIR]     # lib, harness

from harness.proc import run_session  # noqa: E402
from harness.procfs import cmdline_pids, kill_mentioning  # noqa: E402
from harness.tap import TAP  # noqa: E402


def run_bench(out, work, candidates=("cfpm",) + PEERS, extra=(), env=None,
              timeout=RUN_TIMEOUT):
    """bench/run --quick on the tiny configuration; returns (rc, output).
    On timeout the run's process group gets SIGTERM (the harness cleans
    up), then SIGKILL."""
    argv = [sys.executable, os.path.join(SRCDIR, "bench", "run"), "--quick",
            "--candidates", ",".join(candidates), "--cores", "1", "--pools",
            "8", "--duration", "3", "--reps", "1", "--no-refs", "--out", out,
            "--workdir", work] + list(extra)
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
    finally:
        kill_mentioning(work)
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
