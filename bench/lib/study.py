"""
study.py: the whole study, in order.

  setup       results folder (never reused), work directory, cgroups,
              CPU layout (the harness pins itself to the load CPUs),
              keys and the token pool, PostgreSQL started and seeded once
  refs        OpenSSL RS256 verify rate, pgbench INSERT ceiling
  cells       for each candidate (then the HTTP references), core count
              and pool size: probe nginx + candidate started in fresh
              cgroups, contract check, DB reset + settle, then the
              repetitions (measure.run_rep); every record is appended to
              records.jsonl as soon as it exists
  open loop   at the fewest cores and each candidate's best pool: the
              cost and apart points (lib/openloop.py), then the capacity
              sweeps, one repetition of every candidate after another;
              DB reset + settle before each point (measure.run_open)
  users       the virtual-users levels of every candidate (lib/users.py)
  report      summary.json, summary.md, plots, logs of each cell
"""

import json
import os
import shutil
import tempfile
import time
import traceback

from harness import contract, keys, nginx, pg, proc

from . import (candidates, cgroup, layout, load, measure, openloop, profile,
               refs, report, stats, users, versions)

TOKEN_POOL = 200
# PostgreSQL settings of a run beside the harness's own (fsync and
# synchronous_commit on): max_connections is the largest pool plus room.
PG_SETTINGS = {"shared_buffers": "512MB"}
PG_SPARE_CONNECTIONS = 40
LOG_TAIL_LINES = 200


class ContractFailed(Exception):
    pass


class Cell:
    """One (candidate, cores, pool) configuration while it runs."""

    def __init__(self, cand, cores, cpus, pool, workdir, index, tag=""):
        self.cand, self.cores, self.cpus, self.pool = cand, cores, cpus, pool
        self.name = "%s-c%d-p%s%s" % (cand.name, cores, pool or "na", tag)
        self.part = tag.lstrip("-")      # "" for a closed-loop cell
        self.dir = os.path.join(workdir, "cells", self.name)
        self.index = index
        self.group = self.probe = self.probe_group = None
        self.nginx_main = None          # candidates.cell_nginx's default
        os.makedirs(self.dir)

    def key(self):
        return (self.cand.role, self.cand.name, self.cores, self.pool)


class Study:
    def __init__(self, opts, srcdir, builddir, command):
        self.opts = opts
        self.srcdir = srcdir
        self.builddir = builddir
        self.command = command
        self.records = []
        self.failed_candidates = set()
        self.unprepared = []        # candidates whose build or runtime failed
        self.prepared = {}          # name: candidate built and checked
        self.ncells = 0

    # -- setup -------------------------------------------------------------

    def _results_dir(self):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        base = os.path.join(self.opts.out, stamp)
        path, n = base, 0
        while True:
            try:
                os.makedirs(path)          # fails if it exists: never reuse
                return path
            except FileExistsError:
                n += 1
                path = "%s-%d" % (base, n)

    def _workdir(self):
        """A fresh 0755 directory under --workdir, removed at the end
        unless --keep-work. Its parents must let postgres through."""
        path = os.path.abspath(self.opts.workdir)
        while path != "/":
            if not os.stat(path).st_mode & 0o001:
                raise RuntimeError("%s is not searchable by other users: "
                                   "the postgres user cannot reach the "
                                   "cluster; choose another --workdir" % path)
            path = os.path.dirname(path)
        d = tempfile.mkdtemp(prefix="cfpm-bench.", dir=self.opts.workdir)
        os.chmod(d, 0o755)                 # postgres must traverse it
        if not self.opts.keep_work:
            proc.on_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
        return d

    def _tokens(self):
        """Key pair, JWKS, the token set and the pool split in halves."""
        tool = os.path.join(self.builddir, "cfpm-token")
        if not os.access(tool, os.X_OK):
            raise RuntimeError("%s is not built" % tool)
        tdir = os.path.join(self.workdir, "tokens")
        k = keys.Keys(os.path.join(self.workdir, "keys"), tool=tool)
        toks = k.bench(tdir, pool=TOKEN_POOL)
        self.keys = {"jwks": k.jwks, "pub": k.pub}
        self.tokens = {name: toks[name] for name in
                       ("valid", "readonly", "expired", "foreign")}
        pool = toks["pool"]
        files = {}
        for mode, part in zip(load.MODES, (pool[:len(pool) // 2],
                                           pool[len(pool) // 2:])):
            files[mode] = os.path.join(tdir, mode + ".txt")
            with open(files[mode], "w") as f:
                f.write("\n".join(part) + "\n")
        # Virtual users: one token each, round-robin over the whole pool.
        files["users"] = os.path.join(tdir, "users.txt")
        with open(files["users"], "w") as f:
            f.write("\n".join(pool) + "\n")
        return files

    def setup(self):
        o = self.opts
        self.outdir = self._results_dir()
        self.records_path = os.path.join(self.outdir, "records.jsonl")
        self.workdir = self._workdir()
        self.layout = layout.Layout(o.cand_cpus, o.db_cpus, o.load_cpus)
        os.sched_setaffinity(0, self.layout.load)
        self.backend = cgroup.Backend(o.cgroup)
        self.db_group = self.backend.group("db", self.layout.db)
        self.load_group = self.backend.group("load", self.layout.load)
        token_files = self.token_files = self._tokens()
        threads = o.threads or max(1, len(self.layout.load) // 2)
        self.gens = load.Generators(self.load_group, self.layout.load,
                                    o.connections, threads, token_files,
                                    o.rows)
        self.pg = None
        if any(candidates.CANDIDATES[c].needs_db for c in o.candidates) or \
                not o.no_refs:
            self._start_db()
        proc.log("results: %s" % self.outdir)

    def _start_db(self):
        most = max(self.opts.pools + [self.opts.pgbench_clients])
        self.pg = pg.Cluster(self.workdir, dict(
            PG_SETTINGS, max_connections=most + PG_SPARE_CONNECTIONS),
            group=self.db_group, cpus=self.layout.db)
        proc.log("PostgreSQL: initdb and start on CPUs %s" %
                 cgroup.cpulist(self.layout.db))
        self.pg.init()
        self.pg.start()
        proc.log("PostgreSQL: seeding %d rows" % self.opts.rows)
        self.pg.seed(self.opts.rows, self.srcdir)

    # -- records -----------------------------------------------------------

    def record(self, rec):
        """Appends rec to records.jsonl (flushed) and to memory."""
        self.records.append(rec)
        with open(self.records_path, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")

    def _failure(self, key, stage, err, trace=None, part=""):
        """Records a failure of cell key at stage; part names the cell's
        part when it is not a closed-loop cell (those rows stay apart)."""
        role, cand, cores, pool = key
        proc.log("FAILED %s cores=%s pool=%s at %s: %s" %
                 (cand, cores, pool, stage, str(err).splitlines()[0]
                  if str(err) else repr(err)))
        self.record({"kind": "failure", "role": role, "candidate": cand,
                     "cores": cores, "pool": pool, "stage": stage,
                     "error": str(err)[-2000:], "traceback": trace,
                     "part": part})

    def _expected(self, cell):
        """The rate the gate must beat (before the factor): best valid
        rate of this cell so far, else of this candidate and core count."""
        pts = [r for r in self.records if r["kind"] == "point" and
               r["valid"] and r["candidate"] == cell.cand.name and
               r["cores"] == cell.cores]
        same = [r["throughput_rps"] for r in pts if r["pool"] == cell.pool]
        return max(same or [r["throughput_rps"] for r in pts] or [0.0]) \
            or None

    # -- references --------------------------------------------------------

    def _ref(self, name, fn):
        """Records reference fn()'s result, or its failure."""
        try:
            self.record(fn())
        except Exception as e:
            proc.log("FAILED reference %s: %s" % (name, str(e).splitlines()[0]
                                                  if str(e) else repr(e)))
            self.record({"kind": "ref", "name": name,
                         "failed": str(e)[-2000:]})

    def run_refs(self):
        """OpenSSL verify rate on the first candidate CPU, pgbench."""
        o = self.opts
        cpu = self.layout.cand[0]
        proc.log("reference: openssl speed rsa2048 on CPU %d" % cpu)
        self._ref("openssl-rsa2048-verify", lambda: refs.openssl_verify(cpu))
        proc.log("reference: pgbench INSERT, %d clients, %d s" %
                 (o.pgbench_clients, o.pgbench_seconds))
        self._ref("pgbench-insert", lambda: refs.pgbench_insert(
            self.pg, self.workdir, o.pgbench_seconds, o.pgbench_clients,
            self.layout.load, self.db_group))

    # -- cells -------------------------------------------------------------

    def _start_probe(self, cell):
        cell.probe_group = self.backend.group("probe-%d" % cell.index,
                                              cell.cpus)
        port = proc.free_port()
        cell.probe = candidates.cell_nginx(os.path.join(cell.dir, "probe"),
                                           port, nginx.static_site(port),
                                           cell.cores)
        cell.probe.start(cell.probe_group, cell.cpus)

    def _contract(self, cell):
        ok, results = contract.check(cell.cand.port, self.tokens,
                                     self.opts.rows)
        self.record({"kind": "contract", "candidate": cell.cand.name,
                     "cores": cell.cores, "pool": cell.pool, "ok": ok,
                     "results": results})
        if not ok:
            bad = [r["name"] + ": " + r["detail"] for r in results
                   if not r["ok"]]
            raise ContractFailed("; ".join(bad))

    def _reps(self, cell, reps):
        """reps repetitions; up to --retries more replace invalid ones."""
        valid = rep = 0
        while valid < reps and rep < reps + self.opts.retries:
            rep += 1
            rec = measure.run_rep(self, cell, rep, self._expected(cell))
            self.record(rec)
            valid += rec["valid"]
            proc.log("  rep %d: %s req/s, %s µs CPU/req, %s%s" % (
                rep, "{:,.0f}".format(rec["throughput_rps"]),
                "%.1f" % rec["cpu_us_per_req"] if rec["cpu_us_per_req"]
                else "-", "valid" if rec["valid"] else "INVALID: ",
                "; ".join(rec["invalid_reasons"])))

    def _open_point(self, cell, spec):
        """One open-loop point (DB reset and settle first); up to
        --retries more attempts replace one whose generator or
        calibration could not keep the schedule (each attempt recorded,
        the last one counts). Returns the last record."""
        o = self.opts
        for attempt in range(1 + o.retries):
            rec = self._open_attempt(cell, dict(spec, attempt=attempt))
            if rec["verdict"] != "generator":
                break
        return rec

    def _open_attempt(self, cell, spec):
        o = self.opts
        if cell.cand.needs_db:
            self.pg.reset(o.rows, self.srcdir)
            time.sleep(o.settle)
        rec = measure.run_open(self, cell, spec, openloop.window_s(
            spec["rate"], o.open_duration, o.quick))
        self.record(rec)
        lat = rec["latency_ms"] or {}
        proc.log("  %s %s %s req/s (%s): %s req/s, p99 %s ms, %s µs CPU/req"
                 ", %s%s" % (spec["part"], spec["mix"],
                             "{:,.0f}".format(spec["rate"]),
                             spec["rate_spec"],
                             "{:,.0f}".format(rec["achieved_rps"] or 0),
                             "%.1f" % lat["p99"] if lat.get("p99") else "-",
                             "%.1f" % rec["cpu_us_per_req"]
                             if rec["cpu_us_per_req"] else "-",
                             "valid" if rec["valid"] else "INVALID (%s): "
                             % rec["verdict"],
                             "; ".join(rec["invalid_reasons"])))
        return rec

    def _points(self, specs):
        """A cell's work: the open-loop points of specs in order."""
        def work(cell):
            for i, spec in enumerate(specs):
                self._open_point(cell, dict(spec, index=i))
        return work

    def _sweep(self, grid, rep):
        """A cell's work: one repetition of the capacity sweep, upwards
        until a point misses the loosest target."""
        def work(cell):
            for i, (rate, share) in enumerate(grid):
                rec = self._open_point(cell, dict(
                    openloop.slo_point(rate, share, rep), index=i))
                if openloop.misses(rec, max(openloop.SLO_MS)):
                    break
        return work

    def _save_logs(self, cell):
        """Tails of the cell's log files into the results folder."""
        dest = os.path.join(self.outdir, "logs", cell.name)
        for root, _, files in os.walk(cell.dir):
            for f in files:
                path = os.path.join(root, f)
                if not (f.endswith(".log") or f.endswith(".out")) or \
                        os.path.getsize(path) == 0:
                    continue
                os.makedirs(dest, exist_ok=True)
                name = os.path.relpath(path, cell.dir).replace("/", "-")
                with open(os.path.join(dest, name), "w") as out:
                    out.write(proc.tail(path, LOG_TAIL_LINES) + "\n")

    def run_cell(self, cand, cores, pool, work, tag="", nginx_main=None):
        """Starts, checks and resets one cell, then runs work(cell) (the
        repetitions, the profile or open-loop points); always stops it.
        nginx_main: the main settings of the candidate's nginx
        (candidates.cell_nginx), if not the benchmark's own."""
        self.ncells += 1
        cell = Cell(cand, cores, self.layout.cand_cpus(cores), pool,
                    self.workdir, self.ncells, tag)
        cell.nginx_main = nginx_main
        proc.log("cell %s on CPUs %s" % (cell.name,
                                         cgroup.cpulist(cell.cpus)))
        stage = "start"
        try:
            cell.group = self.backend.group("cand-%d" % cell.index, cell.cpus)
            if cand.name != "nginx-static":
                self._start_probe(cell)
            cand.start(cell)
            if not cand.wait_ready():
                raise RuntimeError("not ready within 30 s")
            if cand.role == "candidate":
                stage = "contract"
                self._contract(cell)
            if cand.needs_db:
                stage = "db reset"
                self.pg.reset(self.opts.rows, self.srcdir)
                time.sleep(self.opts.settle)
            stage = "measure"
            work(cell)
        except ContractFailed as e:
            self.failed_candidates.add(cand.name)
            self._failure(cell.key(), stage, e, part=cell.part)
        except Exception as e:
            self._failure(cell.key(), stage, e, traceback.format_exc(),
                          cell.part)
        finally:
            cand.stop()
            if cell.probe:
                cell.probe.stop()
            self._save_logs(cell)
            for g in (cell.group, cell.probe_group):
                if g:
                    g.remove()

    def _profile(self, cell, seconds):
        rec = measure.run_profile(self, cell, seconds, self.workdir)
        self.record(rec)
        proc.log("  profile: %s req/s, %s µs CPU/req, %d samples" % (
            "{:,.0f}".format(rec["throughput_rps"]),
            "%.1f" % rec["cpu_us_per_req"] if rec["cpu_us_per_req"]
            else "-", rec["samples"]))

    def _best_pool(self, name, cores):
        """The pool with the highest median rate of name at cores (the
        summary's own choice), or None."""
        rows = stats.cell_rows([r for r in self.records
                                if r["kind"] == "point"], {})
        return next((b["pool"] for b in stats.best_pools(rows)
                     if b["candidate"] == name and b["cores"] == cores),
                    None)

    def run_profiles(self):
        """CPU per stage of cfpm at its best pool and, at the same pool, of
        its empty-handler floor F_keep (cfpm-hello) and of the libfcgi
        hello-world F."""
        cores = min(self.opts.cores)
        pool = self._best_pool("cfpm", cores)
        why = profile.available()
        if pool is None or why:
            why = why or "no valid cfpm point to profile"
            proc.log("profile: not measured: %s" % why)
            self.record({"kind": "profile-skipped", "reason": why})
            return
        for cls in (candidates.Cfpm, candidates.CfpmHello,
                    candidates.Hello):
            cand = cls(self)
            try:
                cand.prepare()
            except Exception as e:
                self._failure((cand.role, cand.name, cores, pool),
                              "profile", e)
                continue
            self.run_cell(cand, cores, pool, lambda cell: self._profile(
                cell, self.opts.profile), "-profile")

    def prepare(self, cls, pools):
        """The candidate of cls built and checked (kept for the later
        parts), or None after its failure is recorded for every cell."""
        cand = cls(self)
        try:
            cand.prepare()
        except Exception as e:
            if cand.role == "candidate":
                self.unprepared.append(cand.name)
            for cores in self.opts.cores:
                for pool in pools:
                    self._failure((cand.role, cand.name, cores, pool),
                                  "prepare", e)
            return None
        self.prepared[cand.name] = cand
        return cand

    def run_candidate(self, cls, pools, reps):
        """Every cell of one candidate (or HTTP reference)."""
        cand = self.prepare(cls, pools)
        if cand is None:
            return cls(self)
        for cores in self.opts.cores:
            for pool in pools:
                if cand.name in self.failed_candidates:
                    self._failure((cand.role, cand.name, cores, pool),
                                  "contract", "not measured: contract "
                                  "failed earlier")
                    continue
                self.run_cell(cand, cores, pool,
                              lambda cell: self._reps(cell, reps))
        return cand

    # -- open loop ---------------------------------------------------------

    def _ceilings(self, cores):
        """{candidate: best-pool row} at cores, from the closed-loop
        points measured so far (the summary's own choice)."""
        rows = stats.cell_rows([r for r in self.records
                                if r["kind"] == "point"], {})
        return {b["candidate"]: b for b in stats.best_pools(rows)
                if b["cores"] == cores and b["role"] == "candidate"}

    def run_open_parts(self):
        """cost, apart and slo (as --parts asks) for every candidate with
        a closed-loop ceiling, at the fewest cores and its best pool."""
        o = self.opts
        cores = min(o.cores)
        best = {n: b for n, b in self._ceilings(cores).items()
                if n in self.prepared and n not in self.failed_candidates}
        for name in o.candidates:
            if name not in best:
                proc.log("open loop: %s has no closed-loop ceiling at %d "
                         "core(s): not measured" % (name, cores))
                self.record({"kind": "open-skipped", "candidate": name,
                             "reason": "no valid closed-loop ceiling"})
        if not best:
            return
        lowest = min(b["throughput_rps"]["median"] for b in best.values())
        self.lowest_ceiling = lowest
        specs = openloop.cost_plan(openloop.resolve(o.rates, lowest),
                                   openloop.resolve(o.apart_rates, lowest),
                                   o.parts)
        for name in best:
            if specs:
                self.run_cell(self.prepared[name], cores, best[name]["pool"],
                              self._points(specs), "-cost")
        if "slo" not in o.parts:
            return
        for rep in range(1, o.slo_reps + 1):
            for name, b in best.items():
                grid = openloop.slo_grid(b["throughput_rps"]["median"],
                                         o.slo_grid)
                self.run_cell(self.prepared[name], cores, b["pool"],
                              self._sweep(grid, rep), "-slo%d" % rep)

    def run_users(self):
        """The virtual-users levels of every prepared candidate."""
        o = self.opts
        cores = min(o.cores)
        for name in o.candidates:
            cand = self.prepared.get(name)
            if cand is None or name in self.failed_candidates:
                continue
            pool = self._ceilings(cores).get(name, {}).get("pool") or \
                max(o.pools)
            self.run_cell(cand, cores, pool, lambda cell: users.run(
                self, cell), "-users", candidates.users_nginx(
                    self.srcdir, cores, users.generator_cap()))

    # -- the study ---------------------------------------------------------

    def meta(self, cands):
        o = self.opts
        v = self.versions
        return {
            "id": os.path.basename(self.outdir), "command": self.command,
            "utc_start": self.utc_start, "utc_end": None,
            "options": {k: getattr(o, k) for k in (
                "candidates", "cores", "pools", "duration", "warmup", "gate",
                "settle", "reps", "ref_reps", "retries", "max_other",
                "profile",
                "connections", "quick", "no_refs", "go_front", "rows",
                "parts", "open_duration", "slo_reps", "slo_grid",
                "user_levels", "user_plateau", "user_ramp")},
            "rates": [openloop.spec_text(*r) for r in o.rates],
            "apart_rates": [openloop.spec_text(*r) for r in o.apart_rates],
            "lowest_ceiling_rps": self.lowest_ceiling,
            "slo_ms": list(openloop.SLO_MS),
            "open_loop": {"shortfall_max": measure.SHORTFALL_MAX,
                          "gen_lag_p99_max_ms": measure.GEN_LAG_P99_MAX_MS,
                          "load_busy_max": measure.LOAD_BUSY_MAX,
                          "gen_cpu_max": measure.GEN_CPU_MAX,
                          "inflight_s": load.PACED_INFLIGHT_S,
                          "connections": [load.PACED_MIN_CONNECTIONS,
                                          load.PACED_MAX_CONNECTIONS],
                          "p999_min_samples": openloop.P999_MIN_SAMPLES},
            "layout": self.layout.describe(), "cgroups":
            self.backend.describe(), "load": self.gens.describe(),
            "rows": o.rows, "token_pool": TOKEN_POOL,
            "postgresql_settings": self.pg.settings if self.pg else None,
            "candidates": [c.describe() for c in cands],
            "cpu_model": v.get("cpu_model"), "kernel": v.get("kernel"),
            "gate_factor": measure.GATE_FACTOR,
        }

    def run(self):
        """Runs everything; returns the results folder."""
        self.utc_start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.setup()
        self.versions = versions.collect(self.srcdir, self.builddir)
        with open(os.path.join(self.outdir, "versions.json"), "w") as f:
            json.dump(self.versions, f, indent=1)
            f.write("\n")
        o = self.opts
        self.lowest_ceiling = None
        closed = "closed" in o.parts
        if not o.no_refs and closed:
            self.run_refs()
        cands = [self.run_candidate(candidates.CANDIDATES[name], o.pools,
                                    o.reps) if closed else
                 (self.prepare(candidates.CANDIDATES[name], o.pools) or
                  candidates.CANDIDATES[name](self))
                 for name in o.candidates]
        if any(p in o.parts for p in openloop.OPEN_PARTS):
            self.run_open_parts()
        if "users" in o.parts:
            self.run_users()
        if not o.no_refs and closed:
            for ref in (candidates.CfpmHello, candidates.Hello):
                cands.append(self.run_candidate(ref, o.pools, o.ref_reps))
            cands.append(self.run_candidate(candidates.NginxStatic, [None],
                                            o.ref_reps))
        if o.profile and "cfpm" in o.candidates and closed:
            self.run_profiles()
        meta = self.meta(cands)
        meta["utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        report.write(self.outdir, report.build(meta, self.records))
        return self.outdir
