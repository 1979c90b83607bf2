#!/usr/bin/env python3
"""
test_cluster.py: scale-out (README, "Scaling out"). tools/cluster-up
brings up, in network namespaces, an nginx balancer (lb), two cfpm hosts
(app1, app2), a pg_auto_failover monitor and a PostgreSQL primary with a
synchronous standby (db1, db2). Writers and readers go through the
balancer while, one after the other:
  c. an app host is killed (SIGKILL of all its processes), then healed;
  d. an app host is partitioned (link down: packets dropped), then healed;
  a. the primary's host is killed, then healed (it rejoins as standby);
  b. the primary is partitioned, then healed;
  h. the primary is frozen (every process of its host SIGSTOPped,
     pg_autoctl included: connections to it are accepted and never
     answered), then healed (SIGCONT: it rejoins as standby);
  e. the standby is partitioned, then healed;
  f. the standby's host is killed, then healed (pg_auto_failover stops
     waiting for it: writes go on, on the primary alone, until it is
     back in sync);
  g. the monitor is killed, then healed: clients see nothing.
Each writer POSTs a unique marker, then GETs the id it was given; readers
GET ids others were given. After each fault, on the primary of the day:
every acknowledged id is stored exactly once with its marker, no marker
is stored twice (nginx never sent a POST twice), no read of an
acknowledged id answered 404, no 500, no request outlived nginx's own
timeouts, and writes resumed within RESUME_LIMIT_S of the fault (the
longest stretch without a 201 after it, reported). At the end both
database hosts hold every acknowledged row. Figures: $CLUSTER_DIR/
results.json and the diagnostics below.

Needs root and network namespaces. CFPM_CLUSTER_FAULTS=c,d,a,b,h,e,f,g
(the default) picks faults and their order.
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from clientload import Load, longest_write_gap, tally  # noqa: E402
from harness import paths, proc  # noqa: E402
from harness.tap import TAP  # noqa: E402

CLUSTER_UP = os.path.join(paths.SRCDIR, "tools", "cluster-up")
CLUSTER_DIR = os.environ.get("CFPM_CLUSTER_DIR") or "/var/tmp/cfpm-cluster"
UP_TIMEOUT = 600        # s: first bring-up may install packages and build
TOOL_TIMEOUT = 60       # s: --kill, --partition, --heal, --state
HEALTHY_WAIT = 180      # s: --wait-healthy after a heal (pg_rewind, catch-up)
WRITERS = 4
READERS = 2
# nginx answers within fastcgi_next_upstream_timeout (20 s) plus one
# try's read timeout (15 s); a client still waiting past this hangs.
CLIENT_TIMEOUT = 40
RESUME_LIMIT_S = 30.0   # the bound on a write outage
WARMUP_S = 3.0          # load before the fault
APP_KILL_HOLD_S = 8.0   # an app host stays dead this long
APP_PART_HOLD_S = 20.0  # past nginx's 15 s read timeout for stranded ones
MONITOR_HOLD_S = 8.0    # the monitor stays dead this long
DB_HOLD_MAX_S = 45.0    # a database fault is held until writes resume ...
DB_STABLE_ACKS = 20     # ... this many 201s from requests sent after it
AFTER_HEAL_S = 3.0      # load goes on across the heal

FAULTS = {
    "c": ("app host killed", "kill", "app1", APP_KILL_HOLD_S),
    "d": ("app host partitioned", "partition", "app2", APP_PART_HOLD_S),
    "a": ("primary's host killed", "kill", "primary", None),
    "b": ("primary partitioned", "partition", "primary", None),
    "h": ("primary frozen", "freeze", "primary", None),
    "e": ("standby partitioned", "partition", "standby", None),
    "f": ("standby's host killed", "kill", "standby", None),
    "g": ("monitor killed", "kill", "monitor", MONITOR_HOLD_S),
}


def read_env(path):
    """The env file's NAME=value lines, as the shell would see them."""
    rc, out, err = proc.run(["sh", "-c", 'set -a && . "$1" && env', "sh", path],
                            timeout=10)
    if rc != 0:
        raise RuntimeError("cannot read %s: %s" % (path, err))
    return dict(line.split("=", 1) for line in out.splitlines()
                if "=" in line)


class Cluster:
    """tools/cluster-up and what its env file says."""

    def __init__(self, tap):
        self.tap = tap
        self.env = {}

    def tool(self, *args, timeout=TOOL_TIMEOUT):
        """Runs tools/cluster-up args; (rc, stdout)."""
        env = dict(os.environ, CFPM_BUILDDIR=paths.BUILDDIR,
                   CFPM_CLUSTER_DIR=CLUSTER_DIR)
        try:
            rc, out, err = proc.run([CLUSTER_UP] + list(args), env=env,
                                    timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1, "timed out after %d s" % timeout
        if rc != 0:
            self.tap.diag("cluster-up %s: rc %d\n%s%s" %
                          (" ".join(args), rc, out[-1500:], err[-1500:]))
        return rc, out

    def up(self):
        proc.on_cleanup(lambda: self.tool("--stop"))
        rc, _ = self.tool(timeout=UP_TIMEOUT)
        if rc == 0:
            self.env = read_env(os.path.join(CLUSTER_DIR, "env"))
            with open(self.env["TOKEN_FILE"]) as f:
                self.token = f.read().strip()
        return rc == 0

    def balancer(self):
        """(host, port) of the balancer's URL."""
        lb, _, port = self.env["URL"].split("://", 1)[1].rstrip("/") \
            .partition(":")
        return lb, int(port or 80)

    def resolve(self, host):
        """primary, standby: the db host that is one now; others as
        named."""
        if host not in ("primary", "standby"):
            return host
        rc, out = self.tool("--state")
        if rc != 0 or out.strip() not in ("db1", "db2"):
            return host
        if host == "primary":
            return out.strip()
        return "db2" if out.strip() == "db1" else "db1"

    def sql(self, query):
        """Rows (lists of fields) of query on the primary of the moment."""
        rc, out, err = proc.run(
            ["sh", "-c", '. "$1" && $PSQL -F "$(printf \'\\t\')" -c "$2"',
             "sh", os.path.join(CLUSTER_DIR, "env"), query], timeout=60)
        if rc != 0:
            raise RuntimeError("PSQL failed: %s: %s" % (query, err))
        return [line.split("\t") for line in out.splitlines() if line]

    def sql_on(self, host, query):
        """Rows of query on one database host, whatever its role."""
        uri = "postgresql://postgres@%s:5432/events?connect_timeout=5" % \
            self.env["ADDR_" + host]
        rc, out, err = proc.run(["psql", uri, "-X", "-q", "-A", "-t", "-F",
                                 "\t", "-c", query], timeout=60)
        if rc != 0:
            raise RuntimeError("psql on %s failed: %s" % (host, err))
        return [line.split("\t") for line in out.splitlines() if line]


def hold_fault(load, t0, hold):
    """App faults: a fixed time. Database faults: until DB_STABLE_ACKS
    writes sent after the fault were acknowledged, or DB_HOLD_MAX_S."""
    if hold is not None:
        time.sleep(hold)
        return
    ct.wait_for(lambda: load.acks_since(t0) >= DB_STABLE_ACKS,
                DB_HOLD_MAX_S, 0.2)
    time.sleep(1.0)


def stored_rows(cl, kind):
    """marker -> [ids] of the rows of this kind on the primary now."""
    rows = cl.sql("SELECT id, payload->>'m' FROM events WHERE kind = '%s'"
                  % kind)
    out = {}
    for rid, marker in rows:
        out.setdefault(marker, []).append(int(rid))
    return out


def check_data(tap, name, load, stored):
    """Acknowledged = stored once, with its marker; no marker twice."""
    acked = {m: rid for op, _, _, out, rid, m in load.records
             if op == "post" and out == 201}
    missing = [m for m, rid in acked.items() if stored.get(m) != [rid]]
    dups = [m for m, ids in stored.items() if len(ids) > 1]
    unacked = [m for m in stored if m not in acked]
    tap.ok(acked and not missing, "%s: all %d acknowledged ids stored "
           "exactly once on the primary" % (name, len(acked)),
           "missing or wrong: %r" % missing[:10])
    tap.ok(not dups, "%s: no POST stored twice" % name,
           "duplicated markers: %r" % dups[:10])
    return {"acknowledged": len(acked),
            "stored": sum(len(v) for v in stored.values()),
            "duplicates": len(dups),
            "stored_unacknowledged": len(unacked)}


def check_answers(tap, name, load):
    """No stale 404, no 500, nothing past nginx's timeouts."""
    recs = load.records
    stale = [r for r in recs if r[0] in ("own", "read") and r[3] == 404]
    hung = [r for r in recs if r[3] == "timeout"]
    errors = [r for r in recs if r[3] == 500]
    tap.ok(not stale, "%s: no read of an acknowledged id answered 404" %
           name, "%d stale reads" % len(stale))
    tap.ok(not hung, "%s: no request outlived nginx's timeouts (%d s)" %
           (name, CLIENT_TIMEOUT), "%d hung" % len(hung))
    tap.ok(not errors, "%s: no 500" % name)
    return {"stale_reads": len(stale), "hung": len(hung),
            "writes": tally(str(r[3]) for r in recs if r[0] == "post"),
            "reads": tally(str(r[3]) for r in recs if r[0] != "post"),
            "slowest_s": round(max([r[2] - r[1] for r in recs] or [0]), 1)}


def run_fault(tap, cl, key):
    name, action, host, hold = FAULTS[key]
    kind = "cluster-%s-%d" % (key, os.getpid())
    tap.diag("-- %s. %s" % (key, name))
    target = cl.resolve(host)
    load = Load(*cl.balancer(), cl.token, kind, writers=WRITERS,
                readers=READERS, timeout=CLIENT_TIMEOUT)
    time.sleep(WARMUP_S)
    rc, _ = cl.tool("--" + action, target)
    t0 = time.monotonic()
    tap.is_(rc, 0, "%s: cluster-up --%s %s (%s)" % (name, action, host,
                                                   target))
    hold_fault(load, t0, hold)
    t_heal = time.monotonic()
    rc, _ = cl.tool("--heal", target)
    tap.is_(rc, 0, "%s: cluster-up --heal %s" % (name, target))
    time.sleep(AFTER_HEAL_S)
    tap.ok(load.stop(), "%s: every client finished" % name)
    rc, _ = cl.tool("--wait-healthy", str(HEALTHY_WAIT),
                    timeout=HEALTHY_WAIT + 30)
    tap.is_(rc, 0, "%s: the cluster is whole again after the heal" % name)
    window = longest_write_gap(load.records, t0, t_heal)
    tap.ok(window <= RESUME_LIMIT_S, "%s: writes resumed within %.0f s "
           "(longest gap after the fault: %.1f s)" % (name, RESUME_LIMIT_S,
                                                      window))
    res = {"fault": name, "host": target, "write_gap_s": round(window, 1)}
    res.update(check_data(tap, name, load, stored_rows(cl, kind)))
    res.update(check_answers(tap, name, load))
    if action == "kill" and host == "monitor":
        tap.ok(set(res["writes"]) == {"201"} and set(res["reads"]) ==
               {"200"}, "%s: every write 201, every read 200" % name,
               "writes %r, reads %r" % (res["writes"], res["reads"]))
    tap.diag("%s: %s" % (name, json.dumps(res, sort_keys=True)))
    return res, kind, load


def check_replicas(tap, cl, runs):
    """Both database hosts hold every acknowledged row of every run."""
    for host in ("db1", "db2"):
        ok, why = True, ""
        for _, kind, load in runs:
            have = {int(r[0]) for r in cl.sql_on(
                host, "SELECT id FROM events WHERE kind = '%s'" % kind)}
            lost = [r[4] for r in load.records
                    if r[0] == "post" and r[3] == 201 and r[4] not in have]
            if lost:
                ok, why = False, "%s: %d acknowledged ids missing" % (
                    kind, len(lost))
        tap.ok(ok, "%s holds every acknowledged row" % host, why)


def body(tap):
    keys = (os.environ.get("CFPM_CLUSTER_FAULTS") or
            "c,d,a,b,h,e,f,g").split(",")
    cl = Cluster(tap)
    if not tap.ok(cl.up(), "tools/cluster-up brought the cluster up"):
        return
    rc, out = cl.tool("--state")
    tap.ok(rc == 0 and out.strip() in ("db1", "db2"),
           "the monitor names a primary (%s)" % out.strip())
    sync = cl.sql("SHOW synchronous_standby_names")
    tap.ok(sync and sync[0][0] not in ("", "''"), "the primary replicates "
           "synchronously (synchronous_standby_names %r)" % sync)
    runs = [run_fault(tap, cl, k) for k in keys if k in FAULTS]
    check_replicas(tap, cl, runs)
    with open(os.path.join(CLUSTER_DIR, "results.json"), "w") as f:
        json.dump([r for r, _, _ in runs], f, indent=1, sort_keys=True)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit(TAP.skip_all("needs root (network namespaces)"))
    ct.main(body)
