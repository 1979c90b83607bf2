"""
load.py: the two load generators (wrk + bench/lua/mix.lua).

One wrk process sends GET /events/{uniform random id}, the other POST
/events with the benchmark body; equal connection counts, each with its
own half of the token pool, both pinned to the load CPUs and placed in the
load cgroup. Closed loop: every connection sends its next request when the
previous answer arrives, so the rate measured is the saturation ceiling.

Open loop (paced): the same two generators, each at a fixed rate, wrk2's
method in the wrk already used (bench/lua/mix.lua reads a monotonic clock
through LuaJIT's FFI and paces with delay()): every request has an
intended send time from a constant-rate schedule, its latency runs from
that time, and the script reports merged latency and lag histograms. One
connection per wrk thread (the script says why), enough connections for
PACED_INFLIGHT_S of the generator's requests in flight.

Why wrk: packaged in Debian, Lua hooks give per-request tokens and random
ids plus a done() hook to count status classes; h2load has neither, and
its --rps measures from the actual send (coordinated omission). wrk2 is
not packaged.
"""

import json
import math
import os
import time

from harness import proc

from . import hist

WRK = os.environ.get("CFPM_WRK") or "/usr/bin/wrk"
LUA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "lua", "mix.lua")
MODES = ("get", "post")
# Paced generators: connections (= wrk threads) for this many seconds of
# the generator's requests in flight, within bounds: a connection whose
# answer is later than its interval sends late (counted as the server's
# delay), so more connections only matter past the slowest SLO.
PACED_INFLIGHT_S = 0.03
PACED_MIN_CONNECTIONS = 8
PACED_MAX_CONNECTIONS = 128
# wrk's threads start and connect before the schedule begins; answers to
# the window's last requests may arrive up to PACED_GRACE_S after it.
PACED_LEAD_S = 0.5
PACED_GRACE_S = 1.0
# The mixes an open-loop point can send: req/s share per generator.
SHARES = {"mix": {"get": 0.5, "post": 0.5}, "read": {"get": 1.0},
          "write": {"post": 1.0}}


def paced_connections(rate):
    """Connections (and wrk threads) of a paced generator at rate req/s."""
    return max(PACED_MIN_CONNECTIONS, min(PACED_MAX_CONNECTIONS,
                                          math.ceil(rate * PACED_INFLIGHT_S)))


def split(rate, mix):
    """{mode: req/s} of each generator for a total rate and a mix."""
    return {m: rate * share for m, share in SHARES[mix].items()}


class Generators:
    """The pair of wrk generators with fixed settings for a run."""

    def __init__(self, group, cpus, connections, threads, token_files,
                 rows, timeout_s=5):
        self.group = group
        self.cpus = cpus
        self.connections = connections
        self.threads = min(threads, connections)
        self.token_files = token_files     # {"get": path, "post": path}
        self.rows = rows
        self.timeout_s = timeout_s

    def describe(self):
        return {"tool": "wrk", "script": "bench/lua/mix.lua",
                "connections_per_generator": self.connections,
                "threads_per_generator": self.threads,
                "timeout_s": self.timeout_s, "mix": "50/50 closed loop",
                "fixed_rate": "paced by bench/lua/mix.lua (one connection "
                "per thread, %d-%d per generator, %g s of requests in "
                "flight)" % (PACED_MIN_CONNECTIONS, PACED_MAX_CONNECTIONS,
                             PACED_INFLIGHT_S)}

    def _argv(self, mode, port, seconds, paced=None):
        """wrk's command line; paced: (rate, start, window_s) for a paced
        generator (start on time.monotonic()'s clock)."""
        threads, conns = self.threads, self.connections
        if paced:
            threads = conns = paced_connections(paced[0])
        argv = [WRK, "-t", str(threads), "-c", str(conns),
                "-d", "%ds" % seconds, "--timeout", "%ds" % self.timeout_s,
                "-s", LUA, "http://127.0.0.1:%d" % port, "--", mode,
                self.token_files[mode]]
        if mode == "get":
            argv.append(str(self.rows))
        if paced:
            rate, start, window_s = paced
            argv += ["%.3f" % rate, str(conns), "%d" % (start * 1e6),
                     "%d" % (window_s * 1e6)]
        return argv

    def start_paced(self, port, rates, window_s):
        """Starts one paced generator per mode of rates ({mode: req/s})
        against port; returns (processes, start): the schedules run from
        start (time.monotonic()) for window_s seconds."""
        start = time.monotonic() + PACED_LEAD_S
        seconds = math.ceil(PACED_LEAD_S + window_s + PACED_GRACE_S)
        return {m: proc.spawn(self._argv(m, port, seconds,
                                         (r, start, window_s)),
                              capture=True, group=self.group, cpus=self.cpus)
                for m, r in rates.items()}, start

    def start(self, port, seconds):
        """Starts both generators against port for seconds; returns the
        running processes (pass them to finish())."""
        return {m: proc.spawn(self._argv(m, port, seconds), capture=True,
                              group=self.group, cpus=self.cpus)
                for m in MODES}

    @staticmethod
    def running(procs):
        return any(p.poll() is None for p in procs.values())

    @staticmethod
    def finish(procs, timeout):
        """Waits for both generators; returns {mode: result dict} where a
        result is done()'s JSON, or {'failed': reason}."""
        out = {}
        for mode, p in procs.items():
            try:
                stdout, stderr = p.communicate(timeout=timeout)
            except Exception:
                proc.stop(p)
                out[mode] = {"failed": "wrk did not finish"}
                continue
            proc.stop(p)
            out[mode] = parse(stdout.decode("utf-8", "replace"),
                              stderr.decode("utf-8", "replace"), p.returncode)
        return out

    @staticmethod
    def finish_paced(procs, timeout, window_s):
        """finish() for paced generators: each result gains "paced"
        figures over its schedule (paced_figures)."""
        out = Generators.finish(procs, timeout)
        for r in out.values():
            if "failed" not in r:
                if "paced" not in r:
                    r["failed"] = "wrk printed no paced figures"
                else:
                    r["paced"] = paced_figures(r["paced"], window_s)
        return out


def parse(stdout, stderr, rc):
    """done()'s BENCHJSON line as a dict, or {'failed': reason}."""
    for line in stdout.splitlines():
        if line.startswith("BENCHJSON "):
            r = json.loads(line[len("BENCHJSON "):])
            r["rate"] = r["status"]["2xx"] / (r["duration_us"] / 1e6) \
                if r["duration_us"] > 0 else 0.0
            return r
    return {"failed": "wrk exit %s: %s" % (rc, (stderr or stdout)[-500:])}


def paced_figures(p, window_s):
    """A paced generator's figures: scheduled (rate x window), completed,
    achieved req/s, shortfall (1 - completed / scheduled), the histograms
    (decoded) and the generator's own lag percentiles."""
    scheduled = p["rate"] * window_s
    lat, lag = hist.from_json(p["latency_hist"]), hist.from_json(
        p["lag_hist"])
    step = p["hist_step"]
    return dict(p, latency_hist=lat, lag_hist=lag, scheduled=scheduled,
                achieved_rps=p["completed"] / window_s,
                shortfall=1 - p["completed"] / scheduled if scheduled
                else 0.0,
                lag_ms={"p50": hist.percentile(lag, 0.5, step),
                        "p99": hist.percentile(lag, 0.99, step),
                        "max": hist.percentile(lag, 1.0, step)})


def totals(results):
    """Sums over both generators: 2xx, non-2xx, socket errors, rate."""
    ok = [r for r in results.values() if "failed" not in r]
    t = {"ok_2xx": sum(r["status"]["2xx"] for r in ok),
         "non_2xx": sum(sum(v for k, v in r["status"].items() if k != "2xx")
                        for r in ok),
         "socket_errors": sum(r["errors"]["connect"] + r["errors"]["read"] +
                              r["errors"]["write"] + r["errors"]["timeout"]
                              for r in ok),
         "rate": sum(r["rate"] for r in ok),
         "failed": [m + ": " + r["failed"] for m, r in results.items()
                    if "failed" in r]}
    return t
