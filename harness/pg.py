"""
pg.py: a private PostgreSQL 15 cluster for one test file or one
benchmark run. initdb and pg_ctl run as the postgres user (runuser when
we are root: the server refuses to run as root) in a directory of our
own; unix socket only, no TCP listener. fsync and synchronous_commit stay
on. The database "events" gets sql/schema.sql and sql/seed.sql;
sql/reset.sql returns it to the seeded state. Optionally the postmaster
and every backend run in a cgroup and on given CPUs (the benchmark).

freeze() SIGSTOPs every process of the cluster and thaw() lets them go
on: a server that is there (the kernel still completes handshakes and
takes data for its sockets) but never answers.

Layout under base: pg/data, pg/sock (the socket directory),
pg/postgres.log (the server's log), pg_ctl.out (initdb's and pg_ctl's
output).
"""

import os
import pwd
import signal
import subprocess

from . import paths, proc
from .procfs import pid_alive, proc_stat, tree

PG_USER = "postgres"
DBNAME = "events"
# Server settings of every cluster; Cluster(settings=) adds or overrides.
SETTINGS = {
    "listen_addresses": "''",
    "fsync": "on",
    "synchronous_commit": "on",
    "max_connections": "100",
}
CTL_TIMEOUT = 120           # pg_ctl -t: seconds to wait for start/stop
INITDB_TIMEOUT = 120
PSQL_TIMEOUT = 30
SQL_FILE_TIMEOUT = 1800     # seeding 1,000,000 rows included
KILL_TIMEOUT = 10
LOCK_TIMEOUT = 10
FREEZE_TIMEOUT = 5          # s for every process to show as stopped


class Cluster:
    """A private cluster under base: init(), start(), seed() once; then
    psql(), reset(), stop()/start() as the caller needs. group/cpus: a
    cgroup (enter(pid), add_root(pid)) and CPUs for the server."""

    def __init__(self, base, settings=None, group=None, cpus=None):
        self.dir = os.path.join(base, "pg")
        self.data = os.path.join(self.dir, "data")
        self.sockdir = os.path.join(self.dir, "sock")
        self.log = os.path.join(self.dir, "postgres.log")
        self.ctl_log = os.path.join(base, "pg_ctl.out")
        self.port = proc.free_port()
        self.settings = dict(SETTINGS, **{k: str(v) for k, v in
                                          (settings or {}).items()})
        self.group = group
        self.cpus = cpus
        self.running = False
        self.frozen = []    # pids freeze() stopped

    def conninfo(self, dbname=DBNAME, tcp=False):
        """libpq keyword/value connection string: the unix socket, or
        127.0.0.1 when tcp (start() with listen_addresses including it)."""
        return "host=%s port=%d dbname=%s user=%s" % (
            "127.0.0.1" if tcp else self.sockdir, self.port, dbname,
            PG_USER)

    def _bin(self, name):
        return os.path.join(paths.PG_BINDIR, name)

    def _ctl(self, argv, timeout, placed=False):
        """Runs a PostgreSQL tool as the postgres user (when we are root),
        its output appended to ctl_log; placed: in the cluster's cgroup and
        on its CPUs. Returns the exit status."""
        if os.geteuid() == 0:
            argv = ["runuser", "-u", PG_USER, "--"] + argv
        rc, out, err = proc.run(argv, timeout=timeout, cwd=self.dir,
                                group=self.group if placed else None,
                                cpus=self.cpus if placed else None)
        with open(self.ctl_log, "a") as f:
            f.write(out + err)
        return rc

    def _make_dirs(self):
        """The cluster's directories, the postgres user's; registers
        kill() for cleanup."""
        os.makedirs(self.sockdir)
        os.makedirs(self.data)
        if os.geteuid() == 0:
            pw = pwd.getpwnam(PG_USER)
            for d in (self.dir, self.sockdir, self.data):
                os.chown(d, pw.pw_uid, pw.pw_gid)
        os.chmod(self.data, 0o700)
        proc.on_cleanup(self.kill)

    def init(self):
        """initdb into a fresh directory owned by the postgres user;
        registers kill() for cleanup. Raises RuntimeError on failure."""
        self._make_dirs()
        rc = self._ctl([self._bin("initdb"), "-D", self.data, "-A", "trust",
                        "-U", PG_USER, "--no-sync", "-E", "UTF8",
                        "--locale=C"], INITDB_TIMEOUT)
        if rc != 0:
            raise RuntimeError("initdb failed (rc %d):\n%s" %
                               (rc, proc.tail(self.ctl_log)))

    def init_standby(self, primary):
        """A streaming standby of primary (running, on this machine):
        pg_basebackup -R into a fresh directory (initdb's trust lets the
        local replication connection in); start() then runs it in hot
        standby. Raises RuntimeError on failure."""
        self._make_dirs()
        rc = self._ctl([self._bin("pg_basebackup"), "-D", self.data, "-R",
                        "-X", "stream", "-c", "fast", "--no-sync",
                        "-h", primary.sockdir, "-p", str(primary.port),
                        "-U", PG_USER], INITDB_TIMEOUT)
        if rc != 0:
            raise RuntimeError("pg_basebackup failed (rc %d):\n%s" %
                               (rc, proc.tail(self.ctl_log)))

    def start(self):
        """Starts the server and waits until it accepts connections; in
        the cgroup (the postmaster is added as a root) and on the CPUs if
        given. Raises RuntimeError on failure."""
        opts = "-k %s -p %d " % (self.sockdir, self.port) + " ".join(
            "-c %s=%s" % kv for kv in self.settings.items())
        rc = self._ctl([self._bin("pg_ctl"), "-D", self.data, "-o", opts,
                        "-w", "-t", str(CTL_TIMEOUT), "-l", self.log,
                        "start"], CTL_TIMEOUT + 30, placed=True)
        if rc != 0:
            raise RuntimeError("pg_ctl start failed (rc %d):\n%s\n%s" %
                               (rc, proc.tail(self.ctl_log),
                                proc.tail(self.log)))
        self.running = True
        pid = self.postmaster_pid()
        if self.group is not None and pid is not None:
            self.group.add_root(pid)

    def stop(self, mode="fast"):
        """pg_ctl stop -m mode, waiting. Raises RuntimeError on failure."""
        rc = self._ctl([self._bin("pg_ctl"), "-D", self.data, "-m", mode,
                        "-w", "-t", str(CTL_TIMEOUT), "stop"],
                       CTL_TIMEOUT + 30)
        if rc != 0:
            raise RuntimeError("pg_ctl stop failed (rc %d):\n%s" %
                               (rc, proc.tail(self.ctl_log)))
        self.running = False

    def postmaster_pid(self):
        """The running postmaster's pid from postmaster.pid, or None."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def freeze(self):
        """SIGSTOPs the postmaster (so that it starts no other process),
        then every process it started, until none is left running; waits
        until each shows as stopped. Returns the pids. Raises
        RuntimeError if the cluster is not running."""
        pm = self.postmaster_pid()
        if pm is None or not pid_alive(pm):
            raise RuntimeError("freeze: no postmaster running")
        while True:
            more = [p for p in tree([pm]) if p not in self.frozen]
            if not more:
                break
            for p in more:
                try:
                    os.kill(p, signal.SIGSTOP)
                    self.frozen.append(p)
                except OSError:
                    pass
        # Stopped, or exited meanwhile (a zombie its stopped parent does
        # not reap, or gone).
        if not proc.wait_for(lambda: all((proc_stat(p) or ("X",))[0] in
                                         "TtZX" for p in self.frozen),
                             FREEZE_TIMEOUT, 0.01):
            raise RuntimeError("freeze: not every process stopped")
        return list(self.frozen)

    def thaw(self):
        """SIGCONTs every process freeze() stopped (none: nothing)."""
        for p in self.frozen:
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass
        self.frozen = []

    def kill(self):
        """Cleanup: immediate stop, then SIGKILL whatever is left of the
        postmaster (its group only if it still leads it). A frozen
        cluster is thawed first, so that it can stop."""
        self.thaw()
        pid = self.postmaster_pid()
        if pid is None:
            return
        try:
            self._ctl([self._bin("pg_ctl"), "-D", self.data, "-m",
                       "immediate", "-w", "-t", str(KILL_TIMEOUT), "stop"],
                      KILL_TIMEOUT * 2)
        except Exception:
            pass
        if pid_alive(pid):
            st = proc_stat(pid)
            try:
                if st and st[2] == pid:     # pg_ctl puts it in its own group
                    os.killpg(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.running = False

    # -- SQL ------------------------------------------------------------------

    def _psql(self, dbname):
        return [self._bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                "-h", self.sockdir, "-p", str(self.port), "-U", PG_USER,
                "-d", dbname]

    def psql(self, sql, dbname=DBNAME, timeout=PSQL_TIMEOUT):
        """Runs sql; returns a list of rows, each a list of text fields.
        Raises RuntimeError on failure."""
        rc, out, err = proc.run(self._psql(dbname) + ["-A", "-t", "-F", "\t",
                                                      "-c", sql],
                                timeout=timeout)
        if rc != 0:
            raise RuntimeError("psql failed: %s: %s" % (sql, err.strip()))
        return [line.split("\t") for line in out.splitlines() if line]

    def psql_file(self, path, variables=None, dbname=DBNAME,
                  timeout=SQL_FILE_TIMEOUT):
        """Runs the SQL file path with psql -v NAME=VALUE for each of
        variables. Raises RuntimeError on failure."""
        argv = self._psql(dbname)
        for k, v in (variables or {}).items():
            argv += ["-v", "%s=%s" % (k, v)]
        rc, out, err = proc.run(argv + ["-f", path], timeout=timeout)
        if rc != 0:
            raise RuntimeError("psql -f %s failed: %s" %
                               (os.path.basename(path), err))

    def seed(self, rows, srcdir=None):
        """Creates the events database, sql/schema.sql and rows seed rows
        (sql/seed.sql) from srcdir (default: the source tree)."""
        sql = os.path.join(srcdir or paths.SRCDIR, "sql")
        self.psql("CREATE DATABASE %s" % DBNAME, dbname="postgres")
        self.psql_file(os.path.join(sql, "schema.sql"))
        self.psql_file(os.path.join(sql, "seed.sql"), {"rows": rows})

    def reset(self, rows, srcdir=None):
        """Back to the seeded state: sql/reset.sql (rows above the seed
        deleted, VACUUM, CHECKPOINT)."""
        self.psql_file(os.path.join(srcdir or paths.SRCDIR, "sql",
                                    "reset.sql"), {"rows": rows})

    def row_count(self):
        """Rows in events."""
        return int(self.psql("SELECT count(*) FROM events")[0][0])

    # -- locks (to keep requests in flight) ---------------------------------

    def lock_table(self):
        """Holds an ACCESS EXCLUSIVE lock on events in an open transaction
        (to keep a request in flight). Returns the psql Popen: write
        'COMMIT;\\n\\q\\n' to its stdin (or release_lock) to let go."""
        p = proc.spawn(self._psql(DBNAME), stdin=subprocess.PIPE)
        p.stdin.write(b"BEGIN;\nLOCK TABLE events IN ACCESS EXCLUSIVE "
                      b"MODE;\n")
        p.stdin.flush()
        if not proc.wait_for(self.lock_held, LOCK_TIMEOUT, 0.1):
            self.release_lock(p)
            raise RuntimeError("could not take the lock on events")
        return p

    def lock_held(self):
        """True while some session holds ACCESS EXCLUSIVE on events."""
        return int(self.psql(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c "
            "ON c.oid = l.relation WHERE c.relname = 'events' "
            "AND l.mode = 'AccessExclusiveLock' AND l.granted")[0][0]) > 0

    @staticmethod
    def release_lock(p, timeout=LOCK_TIMEOUT):
        """Commits lock_table()'s transaction and ends its psql (killed if
        it does not exit within timeout)."""
        try:
            p.stdin.write(b"COMMIT;\n\\q\n")
            p.stdin.flush()
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.stop(p, signal.SIGKILL)

    def waiting_locks(self):
        """Number of backends waiting for a lock on events."""
        return int(self.psql(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c "
            "ON c.oid = l.relation WHERE c.relname = 'events' "
            "AND NOT l.granted")[0][0])
