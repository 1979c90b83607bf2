"""
load.py: the two load generators (wrk + bench/lua/mix.lua).

One wrk process sends GET /events/{uniform random id}, the other POST
/events with the benchmark body; equal connection counts, each with its
own half of the token pool, both pinned to the load CPUs and placed in the
load cgroup. Closed loop: every connection sends its next request when the
previous answer arrives, so the rate measured is the saturation ceiling.

Why wrk: packaged in Debian, Lua hooks give per-request tokens and random
ids plus a done() hook to count status classes; h2load has neither.
Fixed-rate (open-loop) points need wrk2, which Debian does not package:
not measured.
"""

import json
import os

from harness import proc

WRK = os.environ.get("CFPM_WRK") or "/usr/bin/wrk"
LUA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "lua", "mix.lua")
MODES = ("get", "post")


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
                "fixed_rate": "not measured (wrk2 is not packaged)"}

    def _argv(self, mode, port, seconds):
        argv = [WRK, "-t", str(self.threads), "-c", str(self.connections),
                "-d", "%ds" % seconds, "--timeout", "%ds" % self.timeout_s,
                "-s", LUA, "http://127.0.0.1:%d" % port, "--", mode,
                self.token_files[mode]]
        if mode == "get":
            argv.append(str(self.rows))
        return argv

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


def parse(stdout, stderr, rc):
    """done()'s BENCHJSON line as a dict, or {'failed': reason}."""
    for line in stdout.splitlines():
        if line.startswith("BENCHJSON "):
            r = json.loads(line[len("BENCHJSON "):])
            r["rate"] = r["status"]["2xx"] / (r["duration_us"] / 1e6) \
                if r["duration_us"] > 0 else 0.0
            return r
    return {"failed": "wrk exit %s: %s" % (rc, (stderr or stdout)[-500:])}


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
