"""
report.py: the results folder's summary.json, summary.md and plots,
built from the raw records (records.jsonl) by stats.py.
"""

import json
import os

from . import stats, svg

NOT_MEASURED = [
    "fixed-rate (open-loop) points: they need wrk2, which Debian does not "
    "package; only the closed-loop saturation ceiling is measured.",
]


def build(meta, records):
    """The summary.json document from the run's metadata and records."""
    points = [r for r in records if r["kind"] == "point"]
    failures = {(r["role"], r["candidate"], r["cores"], r["pool"]):
                "%s: %s" % (r["stage"], r["error"])
                for r in records if r["kind"] == "failure"}
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
    return {"run": meta, "cells": rows, "best": best,
            "planning": {"assumption": stats.PLAN_ASSUMPTION,
                         "rates": list(stats.PLAN_RATES),
                         "rows": stats.planning(best)},
            "references": {"probe_gate_max_rps": max(gates, default=None),
                           "other": refs},
            "contract": contracts, "not_measured": NOT_MEASURED}


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
    parts.append("\n## Not measured\n\n")
    parts += ["- %s\n" % x for x in s["not_measured"]]
    return "".join(parts)


# -- plots -------------------------------------------------------------------

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
