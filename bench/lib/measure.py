"""
measure.py: one measured repetition of a cell, and the window accounting.

A repetition is: probe gate (the code-free nginx on the candidate's CPUs,
same generators), warm-up of the candidate, then the measured window.
CPU counters (candidate group, DB group, load group, /proc/stat of the
candidate CPUs) are read immediately before the generators start and
immediately after both have exited, so the window covers exactly the
measured requests. Resident memory of the candidate's processes is
sampled about once a second during the window. The window's CPU is also
split between nginx and the server (syscount.py: each process's own
time), and the warm-up before it, at the same load, counts system calls,
accepts and connects per request (syscount.py: counting them slows every
system call, so never in the window).

A repetition is valid only if: both generators ran, every response was
2xx, no socket error, at least one 2xx, the gate delivered at least
GATE_FACTOR x max(expected rate, this repetition's rate), and (with
--max-other) the candidate CPUs were not busier than that with work not
charged to the candidate (other tenants of a shared machine).

An open-loop point (run_open) is: calibration (the code-free nginx on
the candidate's CPUs driven by the same paced generators at the same
rate and mix), warm-up, the measured schedule. Counters are read at the
schedule's start and end. It is valid only if every response was 2xx,
no socket error, the achieved rate is within SHORTFALL_MAX of the
offered one, the generators kept their own schedule (send lag p99 within
GEN_LAG_P99_MAX_MS, their CPUs not saturated) and the calibration was
valid. Its verdict says whose fault an invalid point is: "server" when
only the rate fell short while the generator and the calibration were
fine (the server could not sustain the rate), "generator" when the
generator or its calibration could not keep the schedule, "errors"
otherwise.
"""

import functools
import os
import statistics
import time

from harness import procfs

from . import hist, load, profile, syscount

GATE_FACTOR = 1.15
POLL_S = 0.05
RSS_EVERY_S = 1.0
# Open loop: a schedule is kept when the achieved rate is within 1 % of
# the offered one, and the generator's own send lag (past the later of
# the intended time and the moment its connection was free) stays within
# half the tightest latency target at p99, so it cannot decide a verdict.
SHORTFALL_MAX = 0.01
GEN_LAG_P99_MAX_MS = 5.0
# The generator's CPUs are saturated when all work on them (PostgreSQL
# shares them on small machines) leaves less than 3 % idle, or when the
# generators alone use 90 % of them.
LOAD_BUSY_MAX = 0.97
GEN_CPU_MAX = 0.90


class RssTracker:
    """Peak of the summed RSS/PSS of a group's processes, with the
    per-process picture at the peak."""

    def __init__(self, group):
        self.group = group
        self.peak = None
        self.samples = 0

    def sample(self):
        procs = []
        for pid in self.group.pids():
            rss, pss = procfs.rss_kib(pid)
            if rss:
                procs.append((procfs.comm(pid), rss, pss))
        self.samples += 1
        total = sum(p[1] for p in procs)
        if self.peak is None or total > self.peak[0]:
            self.peak = (total, sum(p[2] for p in procs), procs)

    def result(self):
        if not self.peak:
            return {"samples": self.samples}
        total, pss, procs = self.peak
        by = {}
        for name, rss, _ in procs:
            by.setdefault(name, []).append(rss)
        return {"samples": self.samples, "rss_sum_kib": total,
                "pss_sum_kib": pss, "processes": len(procs),
                "per_process_kib": {
                    n: {"n": len(v), "max": max(v), "sum": sum(v),
                        "median": statistics.median(v)}
                    for n, v in sorted(by.items())}}


def snapshot(groups, cpus):
    """Now (monotonic), the CPU microseconds of each group ({label:
    group}) and /proc/stat's times of cpus."""
    return {"t": time.monotonic(),
            "groups": {n: g.cpu_usec() for n, g in groups.items()},
            "cpus": procfs.cpu_times(cpus)}


def _count_start(group, workdir):
    """syscount on group's processes, or (None, why not)."""
    why = counting()
    if group is None or why:
        return None, why
    path = os.path.join(workdir, "perf-stat-%d.txt" % os.getpid())
    return (syscount.start(group.pids(), path), path), None


def _count_finish(counter, why, totals):
    """The per-request record of a _count_start()ed count."""
    if counter is None:
        return {"skipped": why} if why else None
    try:
        counts = syscount.finish(*counter)
    except RuntimeError as e:
        return {"skipped": str(e)}
    return syscount.per_request(counts, totals["ok_2xx"])


@functools.lru_cache(maxsize=1)
def counting():
    """None if system calls can be counted here (asked once), else why."""
    return syscount.available()


def drive(gens, port, seconds, groups=None, rss_group=None, cpus=(),
          count_group=None, workdir="/tmp"):
    """Runs both generators against port for seconds. Returns the
    generator results plus, over exactly that window, the CPU microseconds
    of each group ({label: group}), busy/steal time of cpus and the RSS
    peak of rss_group, split by role (nginx, server) over rss_group's
    processes; with count_group, its system calls, accepts and connects
    per request ("syscount"; they slow the window down)."""
    groups = groups or {}
    rss = RssTracker(rss_group) if rss_group else None
    counter, why = _count_start(count_group, workdir)
    split = syscount.cpu_snapshot(rss_group.pids()) if rss_group else None
    before = snapshot(groups, cpus)
    procs = gens.start(port, seconds)
    next_rss = time.monotonic() + RSS_EVERY_S / 2
    while gens.running(procs):
        if rss and time.monotonic() >= next_rss:
            rss.sample()
            next_rss += RSS_EVERY_S
        time.sleep(POLL_S)
    after = snapshot(groups, cpus)
    split = split and syscount.cpu_split(split, syscount.cpu_snapshot(
        list(split)))
    results = gens.finish(procs, timeout=seconds + 30)
    task, irq, steal = (sum(after["cpus"][c][i] - before["cpus"][c][i]
                            for c in cpus) for i in range(3))
    totals = load.totals(results)
    return {"gens": results, "totals": totals,
            "window_s": after["t"] - before["t"],
            "cpu_us": {n: after["groups"][n] - before["groups"][n]
                       for n in before["groups"]},
            "cpu_split_us": split,
            "cpus_task_us": task, "cpus_irq_us": irq, "cpus_steal_us": steal,
            "rss": rss.result() if rss else None,
            "syscount": _count_finish(counter, why, totals)}


def sleep_until(t):
    """Sleeps until time.monotonic() reaches t."""
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, POLL_S))


def busy_share(before, after, cpus, seconds):
    """Share of cpus' capacity that was busy (task + irq + steal) between
    two snapshots' "cpus" taken seconds apart."""
    if not cpus or seconds <= 0:
        return None
    used = sum(sum(after[c]) - sum(before[c]) for c in cpus)
    return used / (seconds * 1e6 * len(cpus))


def drive_paced(gens, port, rates, window_s, groups=None, rss_group=None,
                cpus=(), load_cpus=(), count_group=None, workdir="/tmp"):
    """Runs paced generators ({mode: req/s}) against port for a schedule
    of window_s seconds. Returns their results plus, over exactly the
    schedule, the CPU microseconds of each group, busy/steal time of cpus,
    the busy share of load_cpus and the RSS peak of rss_group, split by
    role over rss_group's processes; "syscount" as drive()'s."""
    groups = groups or {}
    rss = RssTracker(rss_group) if rss_group else None
    counter, why = _count_start(count_group, workdir)
    procs, start = gens.start_paced(port, rates, window_s)
    watched = sorted(set(cpus) | set(load_cpus))
    sleep_until(start)
    split = syscount.cpu_snapshot(rss_group.pids()) if rss_group else None
    before = snapshot(groups, watched)
    next_rss = start + RSS_EVERY_S / 2
    while time.monotonic() < start + window_s:
        if rss and time.monotonic() >= next_rss:
            rss.sample()
            next_rss += RSS_EVERY_S
        time.sleep(min(POLL_S, max(0.0, start + window_s -
                                   time.monotonic())))
    after = snapshot(groups, watched)
    split = split and syscount.cpu_split(split, syscount.cpu_snapshot(
        list(split)))
    results = gens.finish_paced(procs, window_s + 60, window_s)
    seconds = after["t"] - before["t"]
    task, irq, steal = (sum(after["cpus"][c][i] - before["cpus"][c][i]
                            for c in cpus) for i in range(3))
    totals = load.totals(results)
    return {"gens": results, "totals": totals,
            "window_s": seconds, "rates": rates,
            "syscount": _count_finish(counter, why, totals),
            "cpu_split_us": split,
            "cpu_us": {n: after["groups"][n] - before["groups"][n]
                       for n in before["groups"]},
            "cpus_task_us": task, "cpus_irq_us": irq, "cpus_steal_us": steal,
            "load_busy": busy_share(before["cpus"], after["cpus"],
                                     list(load_cpus), seconds),
            "rss": rss.result() if rss else None}


def paced_summary(gens):
    """Over all paced generators of a window: offered and achieved rate,
    shortfall, samples, the merged latency histogram with its p50, p99
    and p99.9 (ms, from the intended send times), the same per mode, and
    the worst generator lag p99."""
    ps = {m: r["paced"] for m, r in gens.items() if "failed" not in r}
    if not ps:
        return None
    step = next(iter(ps.values()))["hist_step"]
    merged = hist.merge(p["latency_hist"] for p in ps.values())
    scheduled = sum(p["scheduled"] for p in ps.values())
    completed = sum(p["completed"] for p in ps.values())

    def pcts(h):
        return {"p50": hist.percentile(h, 0.5, step),
                "p99": hist.percentile(h, 0.99, step),
                "p999": hist.percentile(h, 0.999, step)}
    return {"offered_rps": sum(p["rate"] for p in ps.values()),
            "achieved_rps": sum(p["achieved_rps"] for p in ps.values()),
            "scheduled": scheduled, "completed": completed,
            "shortfall": 1 - completed / scheduled if scheduled else 0.0,
            "samples": hist.count(merged), "hist_step": step,
            "latency_hist": merged, "latency_ms": pcts(merged),
            "by_mode": {m: dict(pcts(p["latency_hist"]),
                                samples=p["completed"],
                                connections=p["connections"],
                                busy_late=p["busy_late"], lost=p["lost"])
                        for m, p in ps.items()},
            "lag_p99_ms": max(p["lag_ms"]["p99"] or 0 for p in ps.values()),
            "busy_late": sum(p["busy_late"] for p in ps.values())}


def paced_problems(window, load_cpus):
    """(errors, generator, shortfall): why a paced window is not a clean
    measurement, sorted by whose fault it is."""
    t = window["totals"]
    errors = _problems(t)
    s = paced_summary(window["gens"])
    gen, short = [], []
    if s is None:
        return errors, gen, short
    if s["lag_p99_ms"] > GEN_LAG_P99_MAX_MS:
        gen.append("generator behind its schedule: send lag p99 %.1f ms "
                   "> %.0f ms" % (s["lag_p99_ms"], GEN_LAG_P99_MAX_MS))
    busy = window["load_busy"]
    if busy is not None and busy > LOAD_BUSY_MAX:
        gen.append("generator CPUs saturated: %.0f %% busy > %.0f %%" %
                   (100 * busy, 100 * LOAD_BUSY_MAX))
    own = window["cpu_us"].get("load")
    if own is not None and load_cpus:
        share = own / (window["window_s"] * 1e6 * len(load_cpus))
        if share > GEN_CPU_MAX:
            gen.append("generators use %.0f %% of their CPUs > %.0f %%" %
                       (100 * share, 100 * GEN_CPU_MAX))
    if abs(s["shortfall"]) > SHORTFALL_MAX:
        short.append("schedule not kept: %.0f of %.0f req/s (%+.1f %%)" % (
            s["achieved_rps"], s["offered_rps"], -100 * s["shortfall"]))
    return errors, gen, short


def calibration_record(window, load_cpus):
    """The calibration's record: valid, reasons, achieved rate, p99."""
    errors, gen, short = paced_problems(window, load_cpus)
    s = paced_summary(window["gens"]) or {}
    return {"valid": not (errors or gen or short),
            "reasons": errors + gen + short,
            "achieved_rps": s.get("achieved_rps"),
            "p99_ms": (s.get("latency_ms") or {}).get("p99"),
            "lag_p99_ms": s.get("lag_p99_ms"),
            "load_busy": window["load_busy"]}


def verdict(errors, gen, short, calib):
    """Whose fault an open-loop point's invalidity is (see the module's
    doc): "ok", "errors", "generator" or "server"."""
    if errors:
        return "errors"
    if gen or (calib is not None and not calib["valid"]):
        return "generator"
    return "server" if short else "ok"


def _split_per_req(window, n):
    """The window's CPU µs per request by role (nginx, server)."""
    split = window.get("cpu_split_us")
    if not split or not n:
        return None
    return {role: us / n for role, us in split.items()}


def open_record(cell, spec, window, calib, load_cpus, warm=None):
    """The raw record of one open-loop point. spec: part, mix, rate,
    rate_spec (as given: "2000" or "50%"), rep, index; warm: its warm-up
    (drive_paced's result), whose system calls it reports."""
    errors, gen, short = paced_problems(window, load_cpus)
    if calib is not None and not calib["valid"]:
        gen.append("calibration failed: " + "; ".join(calib["reasons"]))
    s = paced_summary(window["gens"]) or {}
    cpu = window["cpu_us"]
    n = s.get("completed") or 0
    secs = window["window_s"]
    v = verdict(errors, gen, short, calib)
    rec = dict(spec, **{
        "kind": "open", "role": cell.cand.role,
        "candidate": cell.cand.name, "front": cell.cand.front,
        "cores": cell.cores, "cpus": cell.cpus, "pool": cell.pool,
        "valid": v == "ok", "verdict": v,
        "invalid_reasons": errors + gen + short,
        "offered_rps": s.get("offered_rps"),
        "achieved_rps": s.get("achieved_rps"),
        "shortfall": s.get("shortfall"), "samples": s.get("samples"),
        "latency_ms": s.get("latency_ms"), "by_mode": s.get("by_mode"),
        "hist_step": s.get("hist_step"),
        "latency_hist": {str(k): c for k, c in
                         (s.get("latency_hist") or {}).items()},
        "lag_p99_ms": s.get("lag_p99_ms"), "busy_late": s.get("busy_late"),
        "non_2xx": window["totals"]["non_2xx"],
        "socket_errors": window["totals"]["socket_errors"],
        "window_s": secs, "cpu_us": cpu,
        "cpu_us_per_req": _per_req(cpu.get("cand"), n),
        "db_cpu_us_per_req": _per_req(cpu.get("db"), n),
        "cpu_us_per_req_by_role": _split_per_req(window, n),
        "syscount": (warm or {}).get("syscount"),
        "irq_us_per_req": _per_req(window["cpus_irq_us"], n),
        "cand_cores_used": cpu.get("cand", 0) / 1e6 / secs,
        "db_cores_used": cpu.get("db", 0) / 1e6 / secs,
        "load_cores_used": cpu.get("load", 0) / 1e6 / secs,
        "load_busy": window["load_busy"],
        "cand_cpus_other_us": window["cpus_task_us"] - (cpu.get("cand") or
                                                        0),
        "memory": window["rss"], "calibration": calib,
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    return rec


def run_open(ctx, cell, spec, window_s):
    """Calibration, warm-up and the measured schedule of one open-loop
    point (spec: part, mix, rate, rate_spec, rep, index); returns its
    record."""
    o = ctx.opts
    rates = load.split(spec["rate"], spec["mix"])
    loads = ctx.layout.load
    calib = None
    if cell.probe is not None:
        calib = calibration_record(drive_paced(
            ctx.gens, cell.probe.port, rates, o.gate,
            groups={"load": ctx.load_group}, load_cpus=loads), loads)
    warm = drive_paced(ctx.gens, cell.cand.port, rates, o.warmup,
                       count_group=cell.group, workdir=cell.dir)
    window = drive_paced(ctx.gens, cell.cand.port, rates, window_s,
                         groups={"cand": cell.group, "db": ctx.db_group,
                                 "load": ctx.load_group},
                         rss_group=cell.group, cpus=cell.cpus,
                         load_cpus=loads)
    return open_record(cell, spec, window, calib, loads, warm)


def _latency(gens):
    return {m: {k: r["latency_us"][k] / 1000.0
                for k in ("p50", "p90", "p99", "max")}
            for m, r in gens.items() if "failed" not in r}


def _per_req(us, n):
    return us / n if n else None


def _problems(t):
    """Why a window's load result is not a clean measurement."""
    out = list(t["failed"])
    if t["non_2xx"]:
        out.append("%d non-2xx responses" % t["non_2xx"])
    if t["socket_errors"]:
        out.append("%d socket errors" % t["socket_errors"])
    if not t["ok_2xx"]:
        out.append("no 2xx responses")
    return out


def gate_verdict(gate, measured_rps, expected_rps):
    """The gate's record: rate, required rate, ratio, ok."""
    if gate is None:
        return {"ok": True, "note": "not applicable (this is the probe)"}
    need = GATE_FACTOR * max(measured_rps, expected_rps or 0.0)
    t = gate["totals"]
    rps = t["rate"]
    ok = not _problems(t) and rps >= need
    cpu = gate["cpu_us"].get("probe")
    return {"ok": ok, "rps": rps, "required_rps": need,
            "expected_rps": expected_rps, "ratio": rps / need if need else
            None, "factor": GATE_FACTOR, "problems": _problems(t),
            "probe_cpu_us_per_req": _per_req(cpu, t["ok_2xx"])
            if cpu is not None else None}


def other_share(rec):
    """Share of the candidate CPUs' capacity that went, during a point's
    window, to processes outside the candidate's group (other tenants of
    the machine; irq/softirq time is recorded apart)."""
    return rec["cand_cpus_other_us"] / (rec["window_s"] * 1e6 *
                                        rec["cores"])


def point_record(cell, rep, window, warm, gate, expected_rps,
                 max_other=None):
    """The raw record of one repetition (written to records.jsonl).
    max_other (a fraction) makes a noisier repetition invalid."""
    t = window["totals"]
    cpu = window["cpu_us"]
    cand_us = cpu.get("cand")
    verdict = gate_verdict(gate, t["rate"], expected_rps)
    reasons = _problems(t) + ([] if verdict["ok"] else ["probe gate failed"])
    rec = {
        "kind": "point", "role": cell.cand.role,
        "candidate": cell.cand.name, "front": cell.cand.front,
        "cores": cell.cores, "cpus": cell.cpus, "pool": cell.pool,
        "rep": rep, "valid": not reasons, "invalid_reasons": reasons,
        "throughput_rps": t["rate"],
        "rps": {m: r.get("rate") for m, r in window["gens"].items()},
        "ok_2xx": t["ok_2xx"], "non_2xx": t["non_2xx"],
        "socket_errors": t["socket_errors"],
        "status": {m: r.get("status") for m, r in window["gens"].items()},
        "wrk_errors": {m: r.get("errors") for m, r in window["gens"].items()},
        "latency_ms": _latency(window["gens"]),
        "window_s": window["window_s"],
        "cpu_us": cpu,
        "cpu_us_per_req": _per_req(cand_us, t["ok_2xx"]),
        "db_cpu_us_per_req": _per_req(cpu.get("db"), t["ok_2xx"]),
        "cpu_us_per_req_by_role": _split_per_req(window, t["ok_2xx"]),
        # System calls and connections, counted in the warm-up.
        "syscount": warm.get("syscount"),
        # irq + softirq on the candidate CPUs (not in any cgroup).
        "irq_us_per_req": _per_req(window["cpus_irq_us"], t["ok_2xx"]),
        "cand_cores_used": cand_us / 1e6 / window["window_s"]
        if cand_us is not None else None,
        "load_cores_used": cpu.get("load", 0) / 1e6 / window["window_s"],
        "cand_cpus_task_us": window["cpus_task_us"],
        "cand_cpus_irq_us": window["cpus_irq_us"],
        "cand_cpus_steal_us": window["cpus_steal_us"],
        # Process time on the candidate's CPUs not charged to its group:
        # other tenants of the machine.
        "cand_cpus_other_us": window["cpus_task_us"] - (cand_us or 0),
        "memory": window["rss"],
        "warmup": {"rps": warm["totals"]["rate"],
                   "problems": _problems(warm["totals"])},
        "gate": verdict,
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rec["cand_cpus_other_share"] = other = other_share(rec)
    if max_other is not None and other > max_other:
        reasons.append("other load on the candidate CPUs > %.0f%%" %
                       (100 * max_other))
        rec["valid"] = False
    return rec


def run_rep(ctx, cell, rep, expected_rps):
    """Gate, warm-up, measured window; returns the point record."""
    o = ctx.opts
    gate = None
    if cell.probe is not None:
        gate = drive(ctx.gens, cell.probe.port, o.gate,
                     groups={"probe": cell.probe_group})
    warm = drive(ctx.gens, cell.cand.port, o.warmup, count_group=cell.group,
                 workdir=cell.dir)
    window = drive(ctx.gens, cell.cand.port, o.duration,
                   groups={"cand": cell.group, "db": ctx.db_group,
                           "load": ctx.load_group},
                   rss_group=cell.group, cpus=cell.cpus)
    return point_record(cell, rep, window, warm, gate, expected_rps,
                        o.max_other / 100.0 if o.max_other else None)


def run_profile(ctx, cell, seconds, workdir):
    """Warm-up, then one window of seconds with perf sampling the cell's
    CPUs; returns the profile record (stages in µs per request)."""
    o = ctx.opts
    drive(ctx.gens, cell.cand.port, o.warmup)
    pids = set(cell.group.pids())
    data = os.path.join(workdir, "perf-%s.data" % cell.name)
    p = profile.start(cell.cpus, seconds, data)
    window = drive(ctx.gens, cell.cand.port, seconds,
                   groups={"cand": cell.group})
    profile.finish(p, timeout=60)
    counts, other = profile.attribute(data, pids)
    os.unlink(data)
    t = window["totals"]
    per_req = _per_req(window["cpu_us"]["cand"], t["ok_2xx"])
    return {"kind": "profile", "role": cell.cand.role,
            "candidate": cell.cand.name, "cores": cell.cores,
            "pool": cell.pool, "throughput_rps": t["rate"],
            "ok_2xx": t["ok_2xx"], "problems": _problems(t),
            "window_s": window["window_s"], "cpu_us_per_req": per_req,
            "samples": sum(counts.values()), "other_samples": other,
            "sampler": "perf record -e cpu-clock -F %d -g" % profile.FREQ,
            "stages": profile.breakdown(counts, per_req)}
