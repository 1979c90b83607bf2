"""
measure.py: one measured repetition of a cell, and the window accounting.

A repetition is: probe gate (the code-free nginx on the candidate's CPUs,
same generators), warm-up of the candidate, then the measured window.
CPU counters (candidate group, DB group, load group, /proc/stat of the
candidate CPUs) are read immediately before the generators start and
immediately after both have exited, so the window covers exactly the
measured requests. Resident memory of the candidate's processes is
sampled about once a second during the window.

A repetition is valid only if: both generators ran, every response was
2xx, no socket error, at least one 2xx, the gate delivered at least
GATE_FACTOR x max(expected rate, this repetition's rate), and (with
--max-other) the candidate CPUs were not busier than that with work not
charged to the candidate (other tenants of a shared machine).
"""

import os
import statistics
import time

from harness import procfs

from . import load, profile

GATE_FACTOR = 1.15
POLL_S = 0.05
RSS_EVERY_S = 1.0


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


def _snapshot(groups, cpus):
    return {"t": time.monotonic(),
            "groups": {n: g.cpu_usec() for n, g in groups.items()},
            "cpus": procfs.cpu_times(cpus)}


def drive(gens, port, seconds, groups=None, rss_group=None, cpus=()):
    """Runs both generators against port for seconds. Returns the
    generator results plus, over exactly that window, the CPU microseconds
    of each group ({label: group}), busy/steal time of cpus and the RSS
    peak of rss_group."""
    groups = groups or {}
    rss = RssTracker(rss_group) if rss_group else None
    before = _snapshot(groups, cpus)
    procs = gens.start(port, seconds)
    next_rss = time.monotonic() + RSS_EVERY_S / 2
    while gens.running(procs):
        if rss and time.monotonic() >= next_rss:
            rss.sample()
            next_rss += RSS_EVERY_S
        time.sleep(POLL_S)
    after = _snapshot(groups, cpus)
    results = gens.finish(procs, timeout=seconds + 30)
    task, irq, steal = (sum(after["cpus"][c][i] - before["cpus"][c][i]
                            for c in cpus) for i in range(3))
    return {"gens": results, "totals": load.totals(results),
            "window_s": after["t"] - before["t"],
            "cpu_us": {n: after["groups"][n] - before["groups"][n]
                       for n in before["groups"]},
            "cpus_task_us": task, "cpus_irq_us": irq, "cpus_steal_us": steal,
            "rss": rss.result() if rss else None}


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
    warm = drive(ctx.gens, cell.cand.port, o.warmup)
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
