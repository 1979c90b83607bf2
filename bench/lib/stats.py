"""
stats.py: the estimator. Groups the raw point records into cells
(role, candidate, cores, pool), reports median, min and max over the
valid repetitions beside best-of-N, picks the best pool per core count by
median throughput, and derives the planning view (cores needed for a
target rate from CPU µs per request).
"""

import math
import statistics

from .measure import other_share

PLAN_RATES = (10000, 20000, 30000, 50000, 100000)
PLAN_ASSUMPTION = (
    "cores = ceil(rate x CPU us/request / 1e6), with CPU us/request the "
    "median of the best pool at that core count; assumes linear scaling, "
    "a CPU-bound server (no DB or network limit) and includes the "
    "candidate's nginx (Go: as measured, see 'front').")


def _spread(values):
    """median/min/max of a list (None when empty)."""
    if not values:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values)}


def _values(points, key):
    return [v for v in (key(p) for p in points) if v is not None]


def _count(items):
    """{item: how many times}, in first-seen order."""
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _latency(points, mode, pct):
    return _spread(_values(points, lambda p: p["latency_ms"].get(
        mode, {}).get(pct)))


def cell_row(key, points, failure=None):
    """One summary row for a cell from its point records."""
    role, cand, cores, pool = key
    valid = [p for p in points if p["valid"]]
    tput = _spread([p["throughput_rps"] for p in valid])
    cpu = _spread(_values(valid, lambda p: p["cpu_us_per_req"]))
    mem = _values(valid, lambda p: (p.get("memory") or {}).get(
        "rss_sum_kib"))
    pss = _values(valid, lambda p: (p.get("memory") or {}).get(
        "pss_sum_kib"))
    return {
        "role": role, "candidate": cand, "cores": cores, "pool": pool,
        "front": points[0]["front"] if points else None,
        "status": "failed" if failure else ("ok" if valid else "invalid"),
        "failure": failure,
        "reps": len(points), "valid_reps": len(valid),
        "throughput_rps": dict(tput, best=max(
            [p["throughput_rps"] for p in valid], default=None)),
        "per_core_rps": tput["median"] / cores if tput["median"] else None,
        "cpu_us_per_req": cpu,
        # What one core would serve if the server were CPU-bound.
        "cpu_bound_rps_per_core": 1e6 / cpu["median"] if cpu["median"]
        else None,
        "other_share": _spread(_values(
            valid, other_share)),
        "db_cpu_us_per_req": _spread(_values(
            valid, lambda p: p["db_cpu_us_per_req"])),
        "irq_us_per_req": _spread(_values(
            valid, lambda p: p.get("irq_us_per_req"))),
        "latency_ms": {m: {pct: _latency(valid, m, pct)
                           for pct in ("p50", "p99")}
                       for m in ("get", "post")},
        "peak_rss_kib": max(mem, default=None),
        # The per-process picture of the repetition with the highest peak.
        "peak_per_process_kib": _peak_processes(valid),
        "peak_pss_kib": max(pss, default=None),
        "gate_ratio_min": min(_values(valid, lambda p: p["gate"].get(
            "ratio")), default=None),
        "invalid_reasons": _count([r for p in points
                                   for r in p["invalid_reasons"]]),
    }


def _peak_processes(points):
    mems = [p["memory"] for p in points if (p.get("memory") or {}).get(
        "rss_sum_kib")]
    if not mems:
        return None
    return max(mems, key=lambda m: m["rss_sum_kib"]).get("per_process_kib")


def cell_rows(points, failures):
    """Rows for every cell seen in points or failures, in run order.
    failures maps a cell key to its failure text."""
    groups = {}
    for p in points:
        key = (p["role"], p["candidate"], p["cores"], p["pool"])
        groups.setdefault(key, []).append(p)
    for key in failures:
        groups.setdefault(key, [])
    return [cell_row(k, v, failures.get(k)) for k, v in groups.items()]


def best_pools(rows):
    """Per (candidate, cores): the row with the highest median
    throughput among cells with valid repetitions."""
    best = {}
    for r in rows:
        m = r["throughput_rps"]["median"]
        if m is None:
            continue
        k = (r["candidate"], r["cores"])
        if k not in best or m > best[k]["throughput_rps"]["median"]:
            best[k] = r
    return [best[k] for k in best]


def cores_needed(rate, us_per_req):
    return math.ceil(rate * us_per_req / 1e6)


def planning(best):
    """Cores needed for PLAN_RATES per candidate and measured core
    count, from the best pool's median CPU µs/request."""
    out = []
    for r in best:
        us = r["cpu_us_per_req"]["median"]
        if r["role"] != "candidate" or us is None:
            continue
        out.append({"candidate": r["candidate"], "measured_cores": r["cores"],
                    "pool": r["pool"], "cpu_us_per_req": us,
                    "cores_for": {str(rate): cores_needed(rate, us)
                                  for rate in PLAN_RATES}})
    return out
