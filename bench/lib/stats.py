"""
stats.py: the estimator. Groups the raw point records into cells
(role, candidate, cores, pool), reports median, min and max over the
valid repetitions beside best-of-N, picks the best pool per core count by
median throughput, and derives the planning view (cores needed for a
target rate from CPU µs per request). For the open-loop parts: a row per
point (its figures only if it is valid), reads and writes apart, the
capacity at each latency target voted per grid cell; for the users
mode, each candidate's score.
"""

import math
import statistics

from . import openloop
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
        "cpu_us_per_req_by_role": _role_cpu(valid),
        "syscount": _syscounts(valid),
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


def _role_cpu(points):
    """Medians of the points' CPU µs per request by role."""
    roles = sorted({r for p in points for r in
                    (p.get("cpu_us_per_req_by_role") or {})})
    return {r: _spread(_values(points, lambda p: (p.get(
        "cpu_us_per_req_by_role") or {}).get(r)))["median"] for r in roles}


SYSCOUNT_FIGURES = ("accepts_per_req", "connects_per_req", "kept_share")


def syscount_figures(sc):
    """The flat figures of one syscount record (None: not counted)."""
    if not sc or "skipped" in sc:
        return None
    out = {k: sc[k] for k in SYSCOUNT_FIGURES}
    out.update({"syscalls_" + r: v for r, v in
                sc["syscalls_per_req"].items()})
    return out


def _syscounts(points):
    """Medians of the points' syscount figures, or None."""
    figs = [f for f in (syscount_figures(p.get("syscount"))
                        for p in points) if f]
    if not figs:
        return None
    return {k: statistics.median([f[k] for f in figs]) for k in figs[0]}


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


# -- open loop ----------------------------------------------------------------

def _p999(rec):
    """p99.9 of a point, or None when it has too few samples for one."""
    if (rec.get("samples") or 0) < openloop.P999_MIN_SAMPLES:
        return None
    return (rec.get("latency_ms") or {}).get("p999")


def open_row(rec):
    """One summary row of an open-loop point (figures only if valid: an
    invalid point is never a result)."""
    ok = rec["valid"]
    lat = rec.get("latency_ms") or {}
    fig = (lambda v: v if ok else None)
    return {
        "candidate": rec["candidate"], "front": rec["front"],
        "cores": rec["cores"], "pool": rec["pool"], "part": rec["part"],
        "mix": rec["mix"], "rate_spec": rec["rate_spec"],
        "offered_rps": rec["offered_rps"] or rec.get("rate"),
        "achieved_rps": rec["achieved_rps"], "rep": rec.get("rep"),
        "valid": ok, "verdict": rec["verdict"],
        "reasons": rec["invalid_reasons"], "samples": rec.get("samples"),
        "cpu_us_per_req": fig(rec["cpu_us_per_req"]),
        "db_cpu_us_per_req": fig(rec["db_cpu_us_per_req"]),
        "cpu_us_per_req_by_role": fig(rec.get("cpu_us_per_req_by_role")),
        "syscount": fig(syscount_figures(rec.get("syscount"))),
        "cand_cores_used": fig(rec["cand_cores_used"]),
        "db_cores_used": fig(rec["db_cores_used"]),
        "p50_ms": fig(lat.get("p50")), "p99_ms": fig(lat.get("p99")),
        "p999_ms": fig(_p999(rec)),
        "lag_p99_ms": rec.get("lag_p99_ms"),
        "load_busy": rec.get("load_busy"),
        "calibration_p99_ms": (rec.get("calibration") or {}).get("p99_ms"),
    }


def last_attempts(records, parts):
    """The open-loop records of the given parts that count: of the
    attempts at one point (--retries), the last."""
    last = {}
    for r in records:
        if r["kind"] == "open" and r["part"] in parts:
            last[(r["candidate"], r["part"], r["mix"], r["rate_spec"],
                  r.get("rep"))] = r
    return list(last.values())


def open_rows(records, parts):
    """Rows of the open-loop points of the given parts, in run order (the
    last attempt of each)."""
    return [open_row(r) for r in last_attempts(records, parts)]


def apart(rows):
    """Per candidate and rate: CPU µs per GET (read-only point), per POST
    (write-only), the DB's per SELECT and per INSERT, beside the mix at
    the same rate if measured."""
    by = {}
    for r in rows:
        key = (r["candidate"], r["rate_spec"])
        by.setdefault(key, {"candidate": r["candidate"],
                            "rate_spec": r["rate_spec"],
                            "offered_rps": r["offered_rps"],
                            "pool": r["pool"], "cores": r["cores"]})[
            r["mix"]] = r
    out = []
    for key, d in by.items():
        if "read" not in d and "write" not in d:
            continue
        get, post, mix = d.get("read"), d.get("write"), d.get("mix")
        out.append(dict(
            {k: d[k] for k in ("candidate", "rate_spec", "offered_rps",
                               "pool", "cores")},
            us_per_get=get and get["cpu_us_per_req"],
            us_per_post=post and post["cpu_us_per_req"],
            db_us_per_select=get and get["db_cpu_us_per_req"],
            db_us_per_insert=post and post["db_cpu_us_per_req"],
            us_per_mix=mix and mix["cpu_us_per_req"],
            invalid=[m for m in ("read", "write") if d.get(m) and
                     not d[m]["valid"]]))
    return out


def _rep_capacity(cells, rep, slo):
    """A repetition's capacity for a target: the highest grid rate such
    that it and every lower cell met it in that repetition; (rate or None,
    bounded_by_invalid)."""
    best = None
    for c in cells:
        m = c["votes"].get(rep, {}).get(slo)
        if m is None:
            return best, True
        if m:
            return best, False
        best = c["rate"]
    return best, False


def slo_capacity(records, slo_list=None, reps=None):
    """Per candidate: the grid, per cell the repetitions' votes (a miss
    implied above a repetition's stop), and per target the voted
    capacity (highest cell such that it and every lower one has a strict
    majority of "met" among its votes), the bracketing cells, each
    repetition's capacity and their spread; repetitions whose capacities
    differ by more than SLO_SPREAD_MAX of their median disagree and give
    no number."""
    slo_list = slo_list or openloop.SLO_MS
    pts = last_attempts(records, ("slo",))
    out = []
    for name in dict.fromkeys(r["candidate"] for r in pts):
        mine = [r for r in pts if r["candidate"] == name]
        nreps = sorted({r["rep"] for r in mine})
        grid = sorted({(r["rate"], r["share"]) for r in mine})
        cells = []
        for rate, share in grid:
            here = {r["rep"]: r for r in mine if r["rate"] == rate}
            votes = {}
            for rep in nreps:
                if rep in here:
                    votes[rep] = {s: openloop.misses(here[rep], s)
                                  for s in slo_list}
                else:               # above the rep's stop: a miss
                    stopped = any(r["rep"] == rep and r["rate"] < rate
                                  for r in mine)
                    votes[rep] = {s: True if stopped else None
                                  for s in slo_list}
            cells.append({"rate": rate, "share": share, "votes": votes,
                          "p99_ms": {rep: here[rep]["latency_ms"]["p99"]
                                     if here[rep]["valid"] and
                                     here[rep].get("latency_ms") else None
                                     for rep in here},
                          "verdicts": {rep: here[rep]["verdict"]
                                       for rep in here},
                          "measured": sorted(here)})
        out.append({"candidate": name, "pool": mine[0]["pool"],
                    "cores": mine[0]["cores"], "reps": nreps,
                    "cells": cells,
                    "targets": [_slo_target(cells, nreps, s)
                                for s in slo_list]})
    return out


SLO_SPREAD_MAX = 0.15


def _slo_target(cells, reps, slo):
    """The capacity of one candidate for one target (see slo_capacity)."""
    voted, first_bad = None, None
    for c in cells:
        v = [c["votes"][r][slo] for r in reps if c["votes"][r][slo]
             is not None]
        c.setdefault("met", {})[slo] = (sum(1 for x in v if not x),
                                        len(v))
        ok = v and sum(1 for x in v if not x) * 2 > len(v)
        if first_bad is None:
            if ok:
                voted = c["rate"]
            else:
                first_bad = c
    per_rep = {r: _rep_capacity(cells, r, slo) for r in reps}
    caps = [v[0] for v in per_rep.values()]
    nums = [x for x in caps if x is not None]
    spread = None
    agree = bool(nums) and len(nums) == len(caps)
    if nums:
        med = statistics.median(nums)
        spread = (max(nums) - min(nums)) / med if med else None
        agree = agree and spread is not None and spread <= SLO_SPREAD_MAX
    if first_bad is None:
        bracket = (voted, None)
    else:
        bracket = (voted, first_bad["rate"])
    # The first cell not met has no vote at all: none of its points was
    # valid (the generator's or calibration's fault), so nothing above
    # the cells met was measured: voted_rps is a lower bound.
    unmeasured = first_bad is not None and first_bad["met"][slo][1] == 0
    return {"slo_ms": slo, "voted_rps": voted, "bracket": bracket,
            "per_rep_rps": {str(r): v[0] for r, v in per_rep.items()},
            "per_rep_bounded_by_invalid": {str(r): v[1]
                                           for r, v in per_rep.items()},
            "spread": spread, "agree": agree,
            "capacity_rps": voted if agree else None,
            "unmeasured_above": unmeasured}


# -- virtual users ------------------------------------------------------------

def users_scores(records):
    """Per candidate: its levels in order, the score (most users of a
    valid passing level), whether it is only a lower bound ("at least":
    no valid failure above it, the generator saturated or at its
    descriptor limit), the bracket and the first failure's reasons."""
    levels = [r for r in records if r["kind"] == "users"]
    capped = {r["candidate"] for r in records
              if r["kind"] == "users-capped"}
    out = []
    for name in dict.fromkeys(r["candidate"] for r in levels):
        mine = [r for r in levels if r["candidate"] == name]
        passed = [r["users"] for r in mine if r["valid"] and r["passed"]]
        score = max(passed, default=None)
        above = [r for r in mine if (score is None or r["users"] > score)]
        fails = [r for r in above if r["valid"] and not r["passed"]]
        first_fail = min(fails, key=lambda r: r["users"]) if fails else None
        invalid = [r for r in above if not r["valid"]]
        out.append({
            "candidate": name, "front": mine[0]["front"],
            "pool": mine[0]["pool"], "score": score,
            "generator_cap": mine[0].get("generator_cap"),
            "at_least": first_fail is None,
            "bracket": (score, first_fail["users"] if first_fail else None),
            "limit": first_fail["reasons"] if first_fail else
            (invalid[0]["invalid_reasons"] if invalid else
             (["generator's descriptor limit (%d users)" %
               mine[0].get("generator_cap", 0)] if name in capped else [])),
            "levels": [{k: r.get(k) for k in (
                "users", "valid", "passed", "p50_ms", "p95_ms", "p99_ms",
                "rps", "expected_rps", "errors_share", "not_held",
                "reconnects", "server_connections", "cpu_us_per_req",
                "db_cpu_us_per_req", "cand_cores_used", "gen_cores_used",
                "load_busy", "reasons", "invalid_reasons", "fd_limits")}
                for r in sorted(mine, key=lambda r: r["users"])]})
    return out
