"""
report.py: the results folder's summary.json, summary.md and plots,
built from the raw records (records.jsonl) by stats.py.
"""

import json
import os

from . import openloop, stats, svg

NOT_MEASURED = []


def build(meta, records):
    """The summary.json document from the run's metadata and records."""
    points = [r for r in records if r["kind"] == "point"]
    failures = {(r["role"], r["candidate"], r["cores"], r["pool"]):
                "%s: %s" % (r["stage"], r["error"])
                for r in records if r["kind"] == "failure" and
                not r.get("part")}
    rows = stats.cell_rows(points, failures)
    best = stats.best_pools([r for r in rows if r["role"] == "candidate"])
    refs = [r for r in records if r["kind"] == "ref"]
    gates = [p["gate"]["rps"] for p in points if p["gate"].get("rps")]
    contracts = {}
    for r in records:
        if r["kind"] == "contract":
            c = contracts.setdefault(r["candidate"], {"ok": True,
                                                      "failed": []})
            c["ok"] = c["ok"] and r["ok"]
            c["failed"] += [x for x in r["results"] if not x["ok"]]
    cost = stats.open_rows(records, ("cost",))
    apart = stats.open_rows(records, ("apart",))
    return {"run": meta, "cells": rows, "best": best,
            "planning": {"assumption": stats.PLAN_ASSUMPTION,
                         "rates": list(stats.PLAN_RATES),
                         "rows": stats.planning(best),
                         "at_load": cost},
            "apart": {"points": apart, "rows": stats.apart(apart + cost)},
            "slo": stats.slo_capacity(records),
            "slo_points": stats.open_rows(records, ("slo",)),
            "users": stats.users_scores(records),
            "open_skipped": [r for r in records
                             if r["kind"] == "open-skipped"],
            "references": {"probe_gate_max_rps": max(gates, default=None),
                           "other": refs},
            "contract": contracts, "not_measured": NOT_MEASURED,
            "profile": {"records": [r for r in records
                                    if r["kind"] == "profile"],
                        "skipped": [r["reason"] for r in records
                                    if r["kind"] == "profile-skipped"]},
            "targets": targets(rows, refs)}


def _cell(rows, name, cores, pool):
    for r in rows:
        if r["candidate"] == name and r["cores"] == cores and \
                r["pool"] == pool and r["throughput_rps"]["median"]:
            return r
    return None


def _median(row, key):
    return row[key]["median"] if row else None


def _ratio(a, b):
    return a / b if a is not None and b else None


# Capacity targets: cfpm behind nginx against each peer at its best pool.
CAPACITY_TARGETS = (("go", 1.25), ("go-nginx", 1.5), ("php-fpm", 5.0))
CPU_MARGIN_US = 15      # cfpm CPU µs/req ≤ F_keep + V + this


def targets(rows, refs):
    """The performance targets of cfpm at 1 core (or the fewest cores
    measured), each with its figures and whether it holds."""
    cand = [r for r in rows if r["role"] == "candidate"]
    if not any(r["candidate"] == "cfpm" for r in cand):
        return []
    cores = min(r["cores"] for r in cand if r["candidate"] == "cfpm")
    best = {b["candidate"]: b for b in stats.best_pools(cand)
            if b["cores"] == cores}
    c = best.get("cfpm")
    if c is None:
        return []
    v = next((r["us_per_verify"] for r in refs
              if r["name"] == "openssl-rsa2048-verify" and
              "failed" not in r), None)
    f_keep = _median(_cell(rows, "cfpm-hello", cores, c["pool"]),
                     "cpu_us_per_req")
    f = _median(_cell(rows, "hello", cores, c["pool"]), "cpu_us_per_req")
    out = []
    if f_keep is not None and v is not None:
        limit = f_keep + v + CPU_MARGIN_US
        got = _median(c, "cpu_us_per_req")
        out.append({"target": "CPU µs/req ≤ F_keep + V + %d" %
                    CPU_MARGIN_US, "unit": "µs", "value": got,
                    "limit": limit, "met": got is not None and
                    got <= limit, "detail": "F_keep (cfpm-hello, pool %d) "
                    "%.1f + V %.1f + %d = %.1f; F (libfcgi hello, "
                    "keep-conn off) %s" % (c["pool"], f_keep, v,
                                           CPU_MARGIN_US, limit,
                                           _n(f, "{:.1f}"))})
    for peer, want in CAPACITY_TARGETS:
        p = best.get(peer)
        r = _ratio(_median(c, "throughput_rps"), _median(p, "throughput_rps"))
        out.append({"target": "capacity ≥ %.2f× %s" % (want, peer),
                    "unit": "×",
                    "value": r, "limit": want, "met": r is not None and
                    r >= want, "detail": "best pools: cfpm %d, %s %s" % (
                        c["pool"], peer, p["pool"] if p else "-")})
    # Every other peer at its best pool: capacity and CPU per request
    # side by side, no target.
    for peer in sorted(set(best) - {"cfpm"} -
                       set(p for p, _ in CAPACITY_TARGETS)):
        p = best[peer]
        r = _ratio(_median(c, "throughput_rps"), _median(p, "throughput_rps"))
        out.append({"target": "capacity vs %s (no target)" % peer,
                    "unit": "×", "value": r, "limit": None, "met": None,
                    "detail": "best pools: cfpm %d, %s %d; CPU µs/req "
                    "%s vs %s" % (c["pool"], peer, p["pool"],
                                  _n(_median(c, "cpu_us_per_req"), "{:.1f}"),
                                  _n(_median(p, "cpu_us_per_req"),
                                     "{:.1f}"))})
    pools = [r for r in cand if r["candidate"] == "cfpm" and
             r["cores"] == cores and r["throughput_rps"]["median"]]
    if len(pools) > 1:
        lo = min(pools, key=lambda r: r["throughput_rps"]["median"])
        loss = 1 - lo["throughput_rps"]["median"] / \
            _median(c, "throughput_rps")
        out.append({"target": "worst pool within 15 % of the best",
                    "unit": "%",
                    "value": loss, "limit": 0.15, "met": loss <= 0.15,
                    "detail": "worst pool %d" % lo["pool"]})
    big = max((r["pool"] for r in pools), default=None)
    mine, php = _cell(rows, "cfpm", cores, big), \
        _cell(rows, "php-fpm", cores, big)
    a, b = server_rss_kib(mine), server_rss_kib(php)
    r = _ratio(a, b)
    if r is not None:
        out.append({"target": "RSS at pool %d ≤ 1/3 of PHP-FPM's" % big,
                    "unit": "×",
                    "value": r, "limit": 1 / 3, "met": r <= 1 / 3,
                    "detail": "server processes %.0f vs %.0f MiB; with "
                    "their nginx %.0f vs %.0f MiB (%.2f)" % (
                        a / 1024, b / 1024, mine["peak_rss_kib"] / 1024,
                        php["peak_rss_kib"] / 1024,
                        mine["peak_rss_kib"] / php["peak_rss_kib"])})
    return out


def server_rss_kib(row):
    """RSS of a cell's server processes at the peak (its nginx left out:
    the same nginx fronts both). From the per-name sums, or, in records
    without them, from n x median, exact for nginx's two processes."""
    if not row or not row.get("peak_rss_kib"):
        return None
    per = row.get("peak_per_process_kib") or {}
    ng = per.get("nginx")
    if ng is None:
        return row["peak_rss_kib"]
    ng_sum = ng.get("sum", ng["n"] * ng["median"] if ng["n"] <= 2 else None)
    return row["peak_rss_kib"] - ng_sum if ng_sum is not None else None


def rerender(outdir):
    """Rebuilds summary.json, summary.md and the plots of an existing
    results folder from its raw records.jsonl and the run metadata kept
    in its summary.json (the raw records are not touched)."""
    with open(os.path.join(outdir, "summary.json")) as f:
        meta = json.load(f)["run"]
    with open(os.path.join(outdir, "records.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    write(outdir, build(meta, records))


def write(outdir, summary):
    """Writes summary.json, summary.md, throughput.svg and
    cpu_per_request.svg into outdir."""
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=False)
        f.write("\n")
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(markdown(summary))
    plots(outdir, summary["cells"])
    latency_plots(outdir, summary)


# -- markdown ----------------------------------------------------------------

def _n(v, fmt="{:,.0f}"):
    return "-" if v is None else fmt.format(v)


def _spread(s, fmt="{:,.0f}"):
    if s["median"] is None:
        return "-"
    return "%s [%s–%s]" % (_n(s["median"], fmt), _n(s["min"], fmt),
                           _n(s["max"], fmt))


def _lat(row, mode):
    lat = row["latency_ms"][mode]
    return "%s / %s" % (_n(lat["p50"]["median"], "{:.1f}"),
                        _n(lat["p99"]["median"], "{:.1f}"))


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _cells_table(rows):
    head = ["candidate", "front", "cores", "pool", "valid/reps",
            "req/s median [min–max]", "best-of-N", "req/s per core",
            "CPU µs/req", "CPU-bound req/s per core", "DB CPU µs/req",
            "GET p50/p99 ms", "POST p50/p99 ms", "peak RSS MiB (PSS)",
            "gate ×", "other load %"]
    body = []
    for r in rows:
        t = r["throughput_rps"]
        body.append([
            r["candidate"] + ("" if r["status"] == "ok" else
                              " (%s)" % r["status"]),
            r["front"] or "-", r["cores"], _n(r["pool"], "{}"),
            "%d/%d" % (r["valid_reps"], r["reps"]), _spread(t),
            _n(t["best"]), _n(r["per_core_rps"]),
            _spread(r["cpu_us_per_req"], "{:.1f}"),
            _n(r["cpu_bound_rps_per_core"]),
            _n(r["db_cpu_us_per_req"]["median"], "{:.1f}"),
            _lat(r, "get"), _lat(r, "post"),
            "%s (%s)" % (_n(r["peak_rss_kib"] and r["peak_rss_kib"] / 1024,
                            "{:.0f}"),
                         _n(r["peak_pss_kib"] and r["peak_pss_kib"] / 1024,
                            "{:.0f}")),
            _n(r["gate_ratio_min"], "{:.2f}"),
            _n(r["other_share"]["median"] and
               100 * r["other_share"]["median"], "{:.0f}")])
    return _table(head, body)


def _best_table(best):
    return _table(
        ["candidate", "cores", "best pool", "req/s (median)", "req/s per core",
         "CPU µs/req", "CPU-bound req/s per core", "DB CPU µs/req"],
        [[r["candidate"], r["cores"], r["pool"],
          _n(r["throughput_rps"]["median"]), _n(r["per_core_rps"]),
          _n(r["cpu_us_per_req"]["median"], "{:.1f}"),
          _n(r["cpu_bound_rps_per_core"]),
          _n(r["db_cpu_us_per_req"]["median"], "{:.1f}")] for r in best])


def _planning_table(plan):
    rates = [str(x) for x in plan["rates"]]
    return _table(
        ["candidate", "basis (cores, pool)", "CPU µs/req"] +
        ["%dk req/s" % (int(x) // 1000) for x in rates],
        [[p["candidate"], "%d, %d" % (p["measured_cores"], p["pool"]),
          "%.1f" % p["cpu_us_per_req"]] + [p["cores_for"][x] for x in rates]
         for p in plan["rows"]])


def _refs_md(summary):
    out = []
    refs = summary["references"]
    if refs["probe_gate_max_rps"]:
        out.append("- Code-free nginx through the probe gate (max over "
                   "gates): %s req/s" % _n(refs["probe_gate_max_rps"]))
    for r in refs["other"]:
        if "failed" in r:
            out.append("- %s: FAILED: %s" % (r["name"],
                                              r["failed"].splitlines()[-1]))
        elif r["name"] == "openssl-rsa2048-verify":
            out.append("- OpenSSL RSA-2048 verify (RS256) on CPU %d: "
                       "%s/s = %.1f µs each (sign: %s/s)" % (
                           r["cpu"], _n(r["verify_per_s"]),
                           r["us_per_verify"], _n(r["sign_per_s"])))
        elif r["name"] == "pgbench-insert":
            out.append("- pgbench INSERT ceiling (one events row per "
                       "transaction, %d clients, %d s, fsync and "
                       "synchronous_commit on): %s tps, DB CPU %s µs/insert"
                       % (r["clients"], r["seconds"], _n(r["tps"]),
                          _n(r["db_cpu_us_per_insert"], "{:.1f}")))
    return "\n".join(out) + "\n" if out else "(none: --no-refs)\n"


def _target_value(v, unit):
    if v is None:
        return "-"
    return {"µs": "%.1f" % v, "%": "%.0f %%" % (100 * v)}.get(unit,
                                                             "%.2f" % v)


def _targets_md(ts):
    if not ts:
        return "(not enough cells measured)\n"
    return _table(["target", "measured", "limit", "met", "how"],
                  [[t["target"], _target_value(t["value"], t["unit"]),
                    _target_value(t["limit"], t["unit"]),
                    "-" if t["met"] is None else "yes" if t["met"] else "no",
                    t["detail"]] for t in ts])


def _stage_rows(recs):
    """{(role, stage): {candidate: µs/req}} over profile records."""
    table = {}
    for rec in recs:
        for s in rec["stages"]:
            table.setdefault((s["role"], s["stage"]), {})[
                rec["candidate"]] = s["us_per_req"]
    return table


def _profile_md(prof):
    recs = prof["records"]
    if not recs:
        return "Not measured%s.\n" % (
            ": " + "; ".join(prof["skipped"]) if prof["skipped"] else "")
    names = [r["candidate"] for r in recs]
    out = ["- %s, %d core(s), pool %s: %s req/s, %s CPU µs/req, %d "
           "samples (%s)\n" % (r["candidate"], r["cores"], r["pool"],
                               _n(r["throughput_rps"]),
                               _n(r["cpu_us_per_req"], "{:.1f}"),
                               r["samples"], r["sampler"]) for r in recs]
    table = _stage_rows(recs)
    first = names[0]
    order = sorted(table, key=lambda k: -(table[k].get(first) or 0))
    body, totals = [], {}
    for key in order:
        vals = [table[key].get(n) for n in names]
        if max(v or 0 for v in vals) < 0.5:
            continue
        for n, v in zip(names, vals):
            totals[(key[0], n)] = totals.get((key[0], n), 0) + (v or 0)
        body.append([key[0], key[1]] + [_n(v, "{:.1f}") for v in vals] +
                    ([_n((vals[0] or 0) - (vals[1] or 0), "{:+.1f}")]
                     if len(vals) > 1 else []))
    for role in ("server", "nginx"):
        vals = [totals.get((role, n)) for n in names]
        body.append(["**%s total**" % role, "(rows ≥ 0.5 µs)"] +
                    [_n(v, "{:.1f}") for v in vals] +
                    ([_n((vals[0] or 0) - (vals[1] or 0), "{:+.1f}")]
                     if len(vals) > 1 else []))
    head = ["process", "stage"] + ["%s µs/req" % n for n in names] + \
        (["Δ %s − %s" % (names[0], names[1])] if len(names) > 1 else [])
    return "".join(out) + "\n" + _table(head, body)


def _why(row):
    return "INVALID (%s): %s" % (row["verdict"], "; ".join(row["reasons"]))


def _lat3(r):
    return "%s / %s / %s" % (_n(r["p50_ms"], "{:.1f}"),
                             _n(r["p99_ms"], "{:.1f}"),
                             _n(r["p999_ms"], "{:.1f}"))


MIXES = {"mix": "50/50", "read": "GET only", "write": "POST only"}


def _at_load_table(rows):
    head = ["candidate", "pool", "mix", "offered req/s", "achieved",
            "CPU µs/req",
            "DB CPU µs/req", "p50 / p99 / p99.9 ms", "cores used",
            "DB cores", "samples", "gen lag p99 ms", "nginx-static p99 ms"]
    body = []
    for r in rows:
        cells = [r["candidate"], _n(r["pool"], "{}"), MIXES[r["mix"]],
                 "%s (%s)" % (_n(r["offered_rps"]), r["rate_spec"]),
                 _n(r["achieved_rps"])]
        if r["valid"]:
            cells += [_n(r["cpu_us_per_req"], "{:.1f}"),
                      _n(r["db_cpu_us_per_req"], "{:.1f}"), _lat3(r),
                      _n(r["cand_cores_used"], "{:.2f}"),
                      _n(r["db_cores_used"], "{:.2f}")]
        else:
            cells += [_why(r), "", "", "", ""]
        cells += [_n(r["samples"]), _n(r["lag_p99_ms"], "{:.1f}"),
                  _n(r["calibration_p99_ms"], "{:.1f}")]
        body.append(cells)
    return _table(head, body)


def _conn_cells(r, sc, by_role):
    by_role = by_role or {}
    sc = sc or {}
    return [_n(by_role.get("server"), "{:.1f}"),
            _n(by_role.get("nginx"), "{:.1f}"),
            _n(sc.get("syscalls_server"), "{:.1f}"),
            _n(sc.get("syscalls_nginx"), "{:.1f}"),
            _n(sc.get("accepts_per_req"), "{:.3f}"),
            _n(sc.get("connects_per_req"), "{:.3f}"),
            _n(sc.get("kept_share"), "{:.1%}")]


def _conn_table(cells, at_load):
    """Closed-loop cells (saturation) and open-loop cost points: CPU by
    role, system calls, accepts and connects per request, kept share."""
    head = ["candidate", "pool", "load", "CPU µs/req", "server µs",
            "nginx µs", "server syscalls", "nginx syscalls", "accepts",
            "connects", "kept share"]
    body = []
    for r in cells:
        if r["status"] != "ok":
            continue
        body.append([r["candidate"], r["pool"], "saturation (%s req/s)" %
                     _n(r["throughput_rps"]["median"]),
                     _n(r["cpu_us_per_req"]["median"], "{:.1f}")] +
                    _conn_cells(r, r.get("syscount"),
                                r.get("cpu_us_per_req_by_role")))
    for r in at_load:
        if not r["valid"]:
            continue
        body.append([r["candidate"], r["pool"], "%s (%s)" % (
            _n(r["offered_rps"]), r["rate_spec"]),
            _n(r["cpu_us_per_req"], "{:.1f}")] +
            _conn_cells(r, r.get("syscount"), r.get("cpu_us_per_req_by_role")))
    return _table(head, body)


def _apart_table(rows):
    return _table(
        ["candidate", "pool", "rate", "CPU µs/GET", "CPU µs/POST",
         "CPU µs/req (mix)", "DB µs/SELECT", "DB µs/INSERT", "invalid"],
        [[r["candidate"], r["pool"], "%s (%s)" % (_n(r["offered_rps"]),
                                                  r["rate_spec"]),
          _n(r["us_per_get"], "{:.1f}"), _n(r["us_per_post"], "{:.1f}"),
          _n(r["us_per_mix"], "{:.1f}"), _n(r["db_us_per_select"], "{:.1f}"),
          _n(r["db_us_per_insert"], "{:.1f}"),
          ", ".join(r["invalid"]) or "-"] for r in rows])


def _bracket(b):
    lo, hi = b
    if lo is None and hi is not None:
        return "< %s" % _n(hi)
    if hi is None:
        return "≥ %s" % _n(lo) if lo is not None else "-"
    return "%s – %s" % (_n(lo), _n(hi))


def _slo_md(slo):
    if not slo:
        return "Not measured.\n"
    body, grid = [], []
    for c in slo:
        for t in c["targets"]:
            reps = ", ".join("%s%s" % (_n(v), "*" if
                                       t["per_rep_bounded_by_invalid"][k]
                                       else "")
                             for k, v in sorted(t["per_rep_rps"].items()))
            if t["capacity_rps"] is not None:
                verdict = _n(t["capacity_rps"])
            elif t.get("unmeasured_above") and t["voted_rps"] is None:
                verdict = "no result: no valid point at the lowest cell"
            elif t.get("unmeasured_above"):
                verdict = "at least %s: no valid point above" % _n(
                    t["voted_rps"])
            elif t["voted_rps"] is None and t["agree"] is False and \
                    not any(v is not None for v in t["per_rep_rps"].values()):
                verdict = "below the grid"
            else:
                verdict = "repetitions disagree (spread %s)" % _n(
                    t["spread"] and 100 * t["spread"], "{:.0f} %")
            body.append([c["candidate"], "p99 < %d ms" % t["slo_ms"],
                         verdict, _bracket(t["bracket"]), reps,
                         _n(t["spread"] and 100 * t["spread"], "{:.0f} %")])
        for cell in c["cells"]:
            grid.append([c["candidate"], "%s (%.0f %%)" % (
                _n(cell["rate"]), 100 * cell["share"])] +
                ["%d/%d" % cell["met"][s] for s in openloop.SLO_MS] +
                [", ".join("%s: %s" % (rep, _n(cell["p99_ms"].get(rep),
                                               "{:.1f}")
                                       if cell["verdicts"][rep] == "ok"
                                       else cell["verdicts"][rep])
                           for rep in cell["measured"])])
    return (_table(["candidate", "target", "capacity req/s",
                    "bracketing cells", "per repetition", "spread"], body) +
            "\nGrid cells (met / votes per target; p99 ms per measured "
            "repetition, or why it is no result):\n\n" +
            _table(["candidate", "offered req/s (of ceiling)"] +
                   ["p99 < %d ms" % s for s in openloop.SLO_MS] +
                   ["p99 per repetition"], grid))


def _users_md(users):
    if not users:
        return "Not measured.\n"
    body, levels = [], []
    for u in users:
        score = "-" if u["score"] is None else (
            ("at least " if u["at_least"] else "") + _n(u["score"]))
        fds = (u["levels"][0].get("fd_limits") or {}) if u["levels"] else {}
        body.append([u["candidate"], u["front"], score,
                     _bracket(u["bracket"]), "; ".join(u["limit"]) or "-",
                     ", ".join("%s %d" % kv for kv in sorted(fds.items()))
                     or "-", _n(u.get("generator_cap"))])
        for lv in u["levels"]:
            levels.append([
                u["candidate"], _n(lv["users"]),
                "%s / %s / %s" % (_n(lv["p50_ms"]), _n(lv["p95_ms"]),
                                  _n(lv["p99_ms"])),
                "%s of %s" % (_n(lv["rps"]), _n(lv["expected_rps"])),
                _n(lv["errors_share"] and 100 * lv["errors_share"],
                   "{:.2f}"), _n(lv["not_held"], "{}"),
                _n(lv["cpu_us_per_req"], "{:.0f}"),
                _n(lv["db_cpu_us_per_req"], "{:.0f}"),
                _n(lv["gen_cores_used"], "{:.2f}"),
                _n(lv["load_busy"] and 100 * lv["load_busy"], "{:.0f}"),
                "passed" if lv["passed"] and lv["valid"] else
                "; ".join((lv["reasons"] or []) +
                          ["INVALID: " + x for x in
                           lv["invalid_reasons"] or []])])
    return (_table(["candidate", "front", "users held", "bracket",
                    "what limits it", "descriptors per process",
                    "generator's limit (users)"], body) + "\n" +
            _table(["candidate", "users", "p50 / p95 / p99 ms",
                    "req/s (scenario)", "errors %", "not held",
                    "CPU µs/req", "DB µs/req", "tsung cores",
                    "load CPUs busy %", "verdict"], levels))


def _meta_md(m):
    lay, ld = m["layout"], m["load"]
    lines = [
        "- Command: `%s`" % m["command"],
        "- Started %s, finished %s (UTC)" % (m["utc_start"], m.get("utc_end")),
        "- Machine: %s, kernel %s; CPUs: candidate %s, PostgreSQL %s, load "
        "%s%s" % (m["cpu_model"], m["kernel"], lay["candidate"], lay["db"],
                  lay["load"], (" (" + "; ".join(lay["shared"]) + ")")
                  if lay["shared"] else ""),
        "- CPU accounting: %(accounting)s (v2/v1: cgroup counters; proc: "
        "/proc process trees); CPU sets: %(cpuset)s (affinity is always "
        "set too)" % m["cgroups"],
        "- Load: 2 × wrk (GET /events/{uniform 1..%d} and POST /events), "
        "%d connections and %d thread(s) each, closed loop, tokens "
        "round-robin from a pool of %d distinct tokens" % (
            m["rows"], ld["connections_per_generator"],
            ld["threads_per_generator"], m["token_pool"]),
        "- Each repetition: probe gate %d s, warm-up %d s, measured %d s; "
        "%d repetition(s) per cell; DB reset + %d s settle per cell" % (
            m["options"]["gate"], m["options"]["warmup"],
            m["options"]["duration"], m["options"]["reps"],
            m["options"]["settle"]),
        "- Fronts: " + ", ".join("%s %s" % (c["name"], c["front"])
                                 for c in m["candidates"]),
    ]
    ol = m.get("open_loop")
    if ol:
        lines.append(
            "- Open loop: paced wrk (%d–%d connections per generator, one "
            "per thread); a point is valid when the achieved rate is within "
            "%.0f %% of the offered one, the generator's send lag p99 ≤ %g "
            "ms, its CPUs ≤ %.0f %% busy (its own share ≤ %.0f %%), every "
            "answer 2xx and its calibration on the code-free nginx valid; "
            "parts: %s" % (ol["connections"][0], ol["connections"][1],
                           100 * ol["shortfall_max"],
                           ol["gen_lag_p99_max_ms"],
                           100 * ol["load_busy_max"], 100 * ol["gen_cpu_max"],
                           ", ".join(m["options"].get("parts") or [])))
    return "\n".join(lines) + "\n"


def markdown(s):
    """summary.md."""
    cand = [r for r in s["cells"] if r["role"] == "candidate"]
    ref = [r for r in s["cells"] if r["role"] == "reference"]
    parts = ["# Benchmark %s\n" % s["run"]["id"], _meta_md(s["run"]),
             "\n## Candidates: every cell\n",
             "Throughput: median over valid repetitions [min–max], and "
             "best-of-N. CPU: candidate cgroup (nginx included) per 2xx "
             "response; CPU-bound req/s per core = 1e6 / CPU µs/req (what "
             "a core would serve if the server were CPU-bound); gate ×: "
             "lowest probe-gate rate over the required rate (≥ 1 passes); "
             "other load %: median share of the candidate CPUs used by "
             "processes outside the candidate's cgroup (other tenants) — "
             "high values mean a noisy machine and depressed throughput "
             "(runs before irq time was split out count irq/softirq here "
             "too).\n\n", _cells_table(cand),
             "\n## Best pool per core count (by median throughput)\n\n",
             _best_table(s["best"]),
             "\n## Planning: cores needed\n\n",
             _planning_table(s["planning"]),
             "\nAssumption: %s\n" % s["planning"]["assumption"],
             "\n### At real load (open loop, 50/50 mix)\n\n",
             "The same offered rates for every candidate (absolute, and "
             "shares of the run's lowest closed-loop ceiling: %s req/s), "
             "each candidate at its best pool: what a request costs at the "
             "load an operator runs. Latency from each request's intended "
             "send time; p99.9 only with ≥ %d samples. An invalid point "
             "gives no figures, only why.\n\n" % (
                 _n(s["run"].get("lowest_ceiling_rps")),
                 openloop.P999_MIN_SAMPLES),
             _at_load_table(s["planning"].get("at_load") or []),
             "\n### Connections and system calls per request\n\n",
             "Closed-loop cells (saturation, medians) and the open-loop "
             "points above. server / nginx µs: the measured window's CPU "
             "of each process alive at its start (/proc/PID/schedstat), "
             "by role. System calls (per process role), the server's "
             "accepts and nginx's connects per request are counted with "
             "perf stat's syscall tracepoints in the warm-up at the same "
             "load (tracing slows every system call, so never in the "
             "window); kept share = 1 − accepts per request: the requests "
             "that came on a connection already open (nginx's kept "
             "FastCGI or upstream connection; for a server measured "
             "directly, the client's).\n\n",
             _conn_table(cand, s["planning"].get("at_load") or []),
             "\n## Reads and writes apart (open loop)\n\n",
             _apart_table((s.get("apart") or {}).get("rows") or []),
             "\n", _at_load_table((s.get("apart") or {}).get("points")
                                  or []),
             "\n## Capacity at a latency target\n\n",
             "The highest offered rate (50/50 mix, open loop) of a fixed "
             "grid around each candidate's closed-loop ceiling whose p99 "
             "(from the intended send times) stays under the target: each "
             "repetition sweeps the grid upwards, each cell is voted by "
             "majority of its valid repetitions (a repetition that missed "
             "the loosest target below a cell counts as a miss there; "
             "no vote where the generator or its calibration failed), the "
             "capacity is the highest cell met with every cell below it. "
             "Repetitions whose own capacities differ by more than %.0f %% "
             "of their median disagree: no number. Where the first cell "
             "not met has no valid point at all (the generator could not "
             "keep its schedule there), the cells met are a lower bound: "
             "\"at least\". * = that repetition's sweep met an invalid "
             "cell first. Plots: latency_*.svg.\n\n"
             % (100 * stats.SLO_SPREAD_MAX),
             _slo_md(s.get("slo")),
             "\n## Virtual users\n\n",
             "Each user holds one keep-alive connection and loops GET, "
             "think 3–7 s, GET, think 3–8 s, 15 % a POST, 2 % another, "
             "rest 5–15 s (tsung). A level passes with p95 < 500 ms, "
             "p99 < 1 s over its plateau, errors < 1 % and every user held "
             "(no connection dropped and re-made); a level whose generator "
             "was saturated is no result, so the score is then \"at least\" "
             "the last level passed.\n\n",
             _users_md(s.get("users")),
             "\n## Targets (cfpm at its best pool, fewest cores)\n\n",
             _targets_md(s.get("targets")),
             "\n## Where the CPU goes (perf, µs per request)\n\n",
             "Samples of the candidate's processes on its CPUs, by stage: "
             "user code by library, kernel by system call (context "
             "switches apart); each stage's share times the cgroup CPU per "
             "request of the same window. cfpm-hello is the floor F_keep "
             "(cfpm's process model and front, empty handler: no token, no "
             "database); hello is F, nginx + libfcgi with keep-conn off. "
             "The last column is cfpm minus F_keep.\n\n",
             _profile_md(s.get("profile") or {"records": [],
                                               "skipped": []}),
             "\n## Reference points\n\n", _refs_md(s)]
    if ref:
        parts += ["\n", _cells_table(ref)]
    parts.append("\n## Contract checks\n\n")
    for name, c in s["contract"].items():
        parts.append("- %s: %s\n" % (name, "passed" if c["ok"] else
                                     "FAILED: " + "; ".join(
                                         "%s (%s)" % (x["name"], x["detail"])
                                         for x in c["failed"][:5])))
    bad = [r for r in s["cells"] if r["status"] != "ok" or
           r["valid_reps"] < r["reps"]]
    if bad:
        parts.append("\n## Invalid repetitions and failed cells\n\n")
        for r in bad:
            parts.append("- %s, %d core(s), pool %s: %d/%d valid; %s\n" % (
                r["candidate"], r["cores"], r["pool"], r["valid_reps"],
                r["reps"], r["failure"] or "; ".join(
                    "%s (%d×)" % kv for kv in r["invalid_reasons"].items())))
    skipped = ["open loop of %s: %s" % (r["candidate"], r["reason"])
               for r in s.get("open_skipped") or []]
    if s["not_measured"] or skipped:
        parts.append("\n## Not measured\n\n")
        parts += ["- %s\n" % x for x in s["not_measured"] + skipped]
    return "".join(parts)


# -- plots -------------------------------------------------------------------

def latency_plots(outdir, summary):
    """latency_<candidate>.svg: p99 (and p50) against the offered rate of
    every valid open-loop mix point of the candidate, the SLO lines, and
    the invalid points marked at the top."""
    rows = (summary["planning"].get("at_load") or []) + \
        (summary.get("slo_points") or [])
    for name in dict.fromkeys(r["candidate"] for r in rows):
        mine = [r for r in rows if r["candidate"] == name and
                r["mix"] == "mix"]
        ok = [r for r in mine if r["valid"]]
        svg.latency_chart(
            os.path.join(outdir, "latency_%s.svg" % name),
            "%s: latency vs offered rate (open loop, 50/50)" % name,
            {"p99": sorted((r["offered_rps"], r["p99_ms"]) for r in ok
                           if r["p99_ms"]),
             "p50": sorted((r["offered_rps"], r["p50_ms"]) for r in ok
                           if r["p50_ms"])},
            sorted(r["offered_rps"] for r in mine if not r["valid"]),
            openloop.SLO_MS)


def plots(outdir, rows):
    """throughput.svg and cpu_per_request.svg: one line per candidate and
    core count over the pool sizes (median, min-max whiskers)."""
    rows = [r for r in rows if r["pool"] is not None]
    pools = sorted({r["pool"] for r in rows})
    for fname, key, title, ylabel in (
            ("throughput.svg", "throughput_rps",
             "Throughput vs pool size (closed loop, 50/50 GET/POST)",
             "2xx responses per second"),
            ("cpu_per_request.svg", "cpu_us_per_req",
             "Candidate CPU per request (nginx included)",
             "CPU µs per 2xx response")):
        series = {}
        for r in rows:
            s = r[key]
            label = "%s, %d core%s%s" % (
                r["candidate"], r["cores"], "s" if r["cores"] > 1 else "",
                " (ref)" if r["role"] == "reference" else "")
            series.setdefault(label, {})[r["pool"]] = (
                s["median"], s["min"], s["max"])
        svg.line_chart(os.path.join(outdir, fname), title, "pool size",
                       ylabel, pools, sorted(series.items()))
