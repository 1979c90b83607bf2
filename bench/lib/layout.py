"""
layout.py: which CPUs the candidate, PostgreSQL and the load generators
get.

Defaults from the CPUs this process may use (n of them):
  n >= 12   the public layout: candidate 0-3, PostgreSQL 4-7, load 8-11;
  n == 2    candidate on the first, PostgreSQL and load on the second;
  n == 1    everything on the one CPU (the results say so);
  else      thirds: candidate, PostgreSQL, load (load gets the rest).
A candidate measured with N cores gets the first N CPUs of its set.
"""

import os

from .cgroup import parse_cpulist, cpulist


def available_cpus():
    """The CPUs this process may run on, sorted."""
    return sorted(os.sched_getaffinity(0))


def default_layout(cpus):
    """(candidate, db, load) CPU lists for the available cpus."""
    n = len(cpus)
    if n >= 12:
        return cpus[0:4], cpus[4:8], cpus[8:12]
    if n == 1:
        return cpus, cpus, cpus
    if n == 2:
        return cpus[:1], cpus[1:], cpus[1:]
    k = n // 3
    return cpus[:k], cpus[k:2 * k], cpus[2 * k:]


class Layout:
    """The three CPU sets, from defaults and the --*-cpus overrides."""

    def __init__(self, cand=None, db=None, load=None):
        avail = available_cpus()
        dc, dd, dl = default_layout(avail)
        self.cand = parse_cpulist(cand) if cand else dc
        self.db = parse_cpulist(db) if db else dd
        self.load = parse_cpulist(load) if load else dl
        for name, s in (("candidate", self.cand), ("db", self.db),
                        ("load", self.load)):
            if not s or not set(s) <= set(avail):
                raise ValueError("%s cpus %s not within the available %s" %
                                 (name, cpulist(s), cpulist(avail)))

    def cand_cpus(self, cores):
        """The first cores CPUs of the candidate set."""
        if cores > len(self.cand):
            raise ValueError("%d cores asked, candidate set %s has %d" %
                             (cores, cpulist(self.cand), len(self.cand)))
        return self.cand[:cores]

    def overlaps(self):
        """Human-readable warnings about shared CPUs."""
        out = []
        if set(self.cand) & set(self.db):
            out.append("candidate and PostgreSQL share CPUs")
        if set(self.cand) & set(self.load):
            out.append("candidate and load generators share CPUs")
        if set(self.db) & set(self.load):
            out.append("PostgreSQL and load generators share CPUs")
        return out

    def describe(self):
        return {"candidate": cpulist(self.cand), "db": cpulist(self.db),
                "load": cpulist(self.load), "shared": self.overlaps()}
