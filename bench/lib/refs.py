"""
refs.py: the reference points that are not HTTP cells: OpenSSL RS256
verifications per second on one candidate CPU, and pgbench's INSERT
ceiling on the DB CPUs (pgbench itself on the load CPUs). The HTTP
references (code-free nginx, nginx + libfcgi hello-world) are measured
as cells (candidates.Hello, candidates.NginxStatic).
"""

import os
import re

from harness import paths, proc
from harness.pg import DBNAME, PG_USER

# One events row with the benchmark body, as pgbench's custom script.
PGBENCH_INSERT = (
    "INSERT INTO events (subject, kind, payload) VALUES ('client-bench', "
    "'page_view', '{\"path\":\"/pricing\",\"ms\":182,\"ref\":"
    "\"newsletter\"}'::jsonb);\n")


def openssl_verify(cpu, seconds=3):
    """`openssl speed -mr -seconds N rsa2048` pinned to cpu: RSA-2048
    verifications (the RS256 primitive) and signatures per second."""
    out = proc.run(["openssl", "speed", "-mr", "-seconds", str(seconds),
                    "rsa2048"], timeout=seconds * 4 + 60, cpus=[cpu],
                   check=True)[1]
    m = re.search(r"^\+F2:\d+:2048:([0-9.]+):([0-9.]+)", out, re.M)
    if not m:
        raise RuntimeError("openssl speed: unexpected output:\n" + out[-500:])
    verify = float(m.group(2))
    return {"kind": "ref", "name": "openssl-rsa2048-verify", "cpu": cpu,
            "seconds": seconds, "verify_per_s": verify,
            "sign_per_s": float(m.group(1)),
            "us_per_verify": 1e6 / verify if verify else None}


def pgbench_insert(pg, workdir, seconds, clients, load_cpus, db_group):
    """pgbench's INSERT ceiling with the DB's CPU per insert."""
    before = db_group.cpu_usec()
    r = _pgbench(pg, workdir, seconds, clients, load_cpus)
    used = db_group.cpu_usec() - before
    inserts = r["tps"] * seconds
    return dict(r, kind="ref", name="pgbench-insert",
                db_cpu_us_per_insert=used / inserts if inserts else None)


def _pgbench(pg, workdir, seconds, clients, cpus):
    """pgbench's INSERT ceiling against cluster pg: clients sessions each
    inserting one events row per transaction for seconds, pgbench pinned
    to cpus. Returns {'tps': float, 'clients': n, 'seconds': s}."""
    script = os.path.join(workdir, "pgbench-insert.sql")
    with open(script, "w") as f:
        f.write(PGBENCH_INSERT)
    threads = max(1, min(clients, len(cpus)))
    out = proc.run([os.path.join(paths.PG_BINDIR, "pgbench"), "-n", "-M",
                    "prepared", "-f", script, "-c", str(clients), "-j",
                    str(threads), "-T", str(seconds), "-h", pg.sockdir,
                    "-p", str(pg.port), "-U", PG_USER, DBNAME],
                   timeout=seconds + 60, cpus=cpus, check=True)[1]
    m = re.search(r"tps = ([0-9.]+) \(without initial", out)
    if not m:
        raise RuntimeError("pgbench: no tps in output:\n" + out[-1000:])
    return {"tps": float(m.group(1)), "clients": clients,
            "seconds": seconds}
