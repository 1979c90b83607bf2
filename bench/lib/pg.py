"""
pg.py: the run's private PostgreSQL 15 cluster.

initdb as the postgres user (runuser) into the run's work directory,
started with pg_ctl, pinned to the DB CPUs and placed in the DB cgroup
(the postmaster and every backend inherit both). Unix socket only.
Seeded once per run with sql/schema.sql + sql/seed.sql; each cell starts
from sql/reset.sql (rows above the seed deleted, VACUUM, CHECKPOINT).
fsync and synchronous_commit stay on.
"""

import os
import pwd
import re

from . import proc

PG_BINDIR = os.environ.get("CFPM_PG_BINDIR", "/usr/lib/postgresql/15/bin")
PG_USER = "postgres"
DBNAME = "events"

# Server settings of every run (recorded in summary.json).
SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "shared_buffers": "512MB",
    "listen_addresses": "''",
}

# One events row with the benchmark body, as pgbench's custom script.
PGBENCH_INSERT = (
    "INSERT INTO events (subject, kind, payload) VALUES ('client-bench', "
    "'page_view', '{\"path\":\"/pricing\",\"ms\":182,\"ref\":"
    "\"newsletter\"}'::jsonb);\n")


class Cluster:
    """A private cluster in dir/pg; start() it, seed() it once, reset()
    it before every cell."""

    def __init__(self, workdir, srcdir, group, cpus, max_connections,
                 rows):
        self.dir = os.path.join(workdir, "pg")
        self.data = os.path.join(self.dir, "data")
        self.sock = self.dir
        self.log = os.path.join(self.dir, "postgres.log")
        self.srcdir = srcdir
        self.group = group
        self.cpus = cpus
        self.port = proc.free_port()
        self.rows = rows
        self.settings = dict(SETTINGS, max_connections=str(max_connections))
        self.pid = None

    def conninfo(self):
        """libpq keyword/value connection string."""
        return "host=%s port=%d dbname=%s user=%s" % (
            self.sock, self.port, DBNAME, PG_USER)

    def _as_postgres(self, argv):
        return ["runuser", "-u", PG_USER, "--"] + argv

    def start(self):
        """initdb, start and wait until the server accepts connections."""
        os.makedirs(self.dir, exist_ok=True)
        pw = pwd.getpwnam(PG_USER)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        proc.run(self._as_postgres([
            os.path.join(PG_BINDIR, "initdb"), "-D", self.data, "-A",
            "trust", "-U", PG_USER, "-E", "UTF8", "--no-sync"]),
            timeout=120)
        opts = "-k %s -p %d " % (self.sock, self.port) + " ".join(
            "-c %s=%s" % kv for kv in self.settings.items())
        proc.on_cleanup(self.stop)
        proc.run(self._as_postgres([
            os.path.join(PG_BINDIR, "pg_ctl"), "-D", self.data, "-w",
            "-t", "120", "-l", self.log, "-o", opts, "start"]),
            timeout=150, group=self.group, cpus=self.cpus)
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        self.group.add_root(self.pid)

    def stop(self):
        """Fast shutdown (idempotent)."""
        if self.pid is None:
            return
        proc.run(self._as_postgres([
            os.path.join(PG_BINDIR, "pg_ctl"), "-D", self.data, "-m",
            "fast", "-w", "-t", "60", "stop"]), timeout=90, check=False)
        self.pid = None

    def psql(self, args, db=DBNAME, timeout=1800):
        """Runs psql with args against db; returns its stdout."""
        return proc.run(["psql", "-X", "-q", "-A", "-t", "-v",
                         "ON_ERROR_STOP=1", "-h", self.sock, "-p",
                         str(self.port), "-U", PG_USER, "-d", db] + args,
                        timeout=timeout)[1]

    def seed(self):
        """Creates the events database, its schema and the seed rows."""
        self.psql(["-c", "CREATE DATABASE %s" % DBNAME], db="postgres")
        self.psql(["-f", os.path.join(self.srcdir, "sql", "schema.sql")])
        self.psql(["-v", "rows=%d" % self.rows, "-f",
                   os.path.join(self.srcdir, "sql", "seed.sql")])

    def reset(self):
        """Back to the seeded state: sql/reset.sql (DELETE above the seed,
        VACUUM, CHECKPOINT)."""
        self.psql(["-v", "rows=%d" % self.rows, "-f",
                   os.path.join(self.srcdir, "sql", "reset.sql")])

    def row_count(self):
        return int(self.psql(["-c", "SELECT count(*) FROM events"]).strip())

    def version(self):
        return self.psql(["-c", "SHOW server_version"]).strip()

    def pgbench_insert(self, workdir, seconds, clients, cpus):
        """pgbench's INSERT ceiling: clients sessions each inserting one
        events row per transaction for seconds, pgbench pinned to cpus.
        Returns {'tps': float, 'clients': n, 'seconds': s}."""
        script = os.path.join(workdir, "pgbench-insert.sql")
        with open(script, "w") as f:
            f.write(PGBENCH_INSERT)
        threads = max(1, min(clients, len(cpus)))
        out = proc.run([os.path.join(PG_BINDIR, "pgbench"), "-n", "-M",
                        "prepared", "-f", script, "-c", str(clients), "-j",
                        str(threads), "-T", str(seconds), "-h", self.sock,
                        "-p", str(self.port), "-U", PG_USER, DBNAME],
                       timeout=seconds + 60, cpus=cpus)[1]
        m = re.search(r"tps = ([0-9.]+) \(without initial", out)
        if not m:
            raise RuntimeError("pgbench: no tps in output:\n" + out[-1000:])
        return {"tps": float(m.group(1)), "clients": clients,
                "seconds": seconds}
