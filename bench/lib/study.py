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
  report      summary.json, summary.md, plots, logs of each cell
"""

import json
import os
import shutil
import tempfile
import time
import traceback

from harness import contract, keys, nginx, pg, proc

from . import (candidates, cgroup, layout, load, measure, profile, refs,
               report, stats, versions)

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
        self.dir = os.path.join(workdir, "cells", self.name)
        self.index = index
        self.group = self.probe = self.probe_group = None
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
        token_files = self._tokens()
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

    def _failure(self, key, stage, err, trace=None):
        role, cand, cores, pool = key
        proc.log("FAILED %s cores=%s pool=%s at %s: %s" %
                 (cand, cores, pool, stage, str(err).splitlines()[0]
                  if str(err) else repr(err)))
        self.record({"kind": "failure", "role": role, "candidate": cand,
                     "cores": cores, "pool": pool, "stage": stage,
                     "error": str(err)[-2000:], "traceback": trace})

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

    def run_cell(self, cand, cores, pool, reps, profile=0):
        """Starts, checks and measures one cell (or, with profile > 0,
        takes its CPU breakdown over that many seconds); always stops
        it."""
        self.ncells += 1
        cell = Cell(cand, cores, self.layout.cand_cpus(cores), pool,
                    self.workdir, self.ncells, "-profile" if profile else "")
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
            if profile:
                stage = "profile"
                self._profile(cell, profile)
            else:
                stage = "measure"
                self._reps(cell, reps)
        except ContractFailed as e:
            self.failed_candidates.add(cand.name)
            self._failure(cell.key(), stage, e)
        except Exception as e:
            self._failure(cell.key(), stage, e, traceback.format_exc())
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
            self.run_cell(cand, cores, pool, 1, profile=self.opts.profile)

    def run_candidate(self, cls, pools, reps):
        """Every cell of one candidate (or HTTP reference)."""
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
            return cand
        for cores in self.opts.cores:
            for pool in pools:
                if cand.name in self.failed_candidates:
                    self._failure((cand.role, cand.name, cores, pool),
                                  "contract", "not measured: contract "
                                  "failed earlier")
                    continue
                self.run_cell(cand, cores, pool, reps)
        return cand

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
                "connections", "quick", "no_refs", "go_front", "rows")},
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
        if not o.no_refs:
            self.run_refs()
        cands = [self.run_candidate(candidates.CANDIDATES[name], o.pools,
                                    o.reps) for name in o.candidates]
        if not o.no_refs:
            for ref in (candidates.CfpmHello, candidates.Hello):
                cands.append(self.run_candidate(ref, o.pools, o.ref_reps))
            cands.append(self.run_candidate(candidates.NginxStatic, [None],
                                            o.ref_reps))
        if o.profile and "cfpm" in o.candidates:
            self.run_profiles()
        meta = self.meta(cands)
        meta["utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        report.write(self.outdir, report.build(meta, self.records))
        return self.outdir
