"""
procfs.py: readers for /proc. Process state, parent and group (the tests'
checks of the pool and of orphans), process trees, CPU time (own and
reaped children's) and resident memory (the benchmark's accounting), and
per-CPU busy/steal time from /proc/stat. Reads only, but for
kill_mentioning(), a test's last resort against orphans; a process that
is gone reads as None, 0 or empty, never as an error.
"""

import os
import signal

TICK = os.sysconf("SC_CLK_TCK")
STAT_STATE, STAT_PPID, STAT_PGRP = 0, 1, 2      # fields 3..5 of stat
STAT_CPU = slice(11, 15)        # fields 14..17: utime stime cutime cstime
STAT_STARTTIME = 19             # field 22


def stat_fields(pid):
    """Fields 3.. of /proc/pid/stat (after the command name), or None if
    pid is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return data.rpartition(")")[2].split()


def proc_stat(pid):
    """(state, ppid, pgid, starttime) of pid, or None if it is gone."""
    f = stat_fields(pid)
    if f is None:
        return None
    return (f[STAT_STATE], int(f[STAT_PPID]), int(f[STAT_PGRP]),
            int(f[STAT_STARTTIME]))


def all_pids():
    """Every pid in /proc."""
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[0] != "Z"


def children(ppid, include_zombies=False):
    """Pids whose parent is ppid, sorted (zombies left out unless asked)."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1] == ppid and (include_zombies or st[0] != "Z"):
            out.append(pid)
    return sorted(out)


def zombies(ppid):
    """Zombie children of ppid."""
    return [p for p in children(ppid, True)
            if (proc_stat(p) or ("?",))[0] == "Z"]


def group_members(pgid):
    """Live (non-zombie) pids in process group pgid, sorted."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[2] == pgid and st[0] != "Z":
            out.append(pid)
    return sorted(out)


def cmdline_pids(needle):
    """Pids (not ours) whose command line contains the text needle."""
    out = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if needle.encode() in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def kill_mentioning(needle):
    """SIGKILLs every process (not ours) whose command line contains
    needle: the orphans a cleanup could not reach (workers of a master
    that died, a stray postmaster), found by the unique directory they
    were started with."""
    for pid in cmdline_pids(needle):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def comm(pid):
    """The command name of pid ("" if gone)."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------
# Trees and CPU time

def cpu_usec(pid):
    """utime + stime + cutime + cstime of pid in microseconds (0 if gone):
    cutime/cstime hold the CPU of children pid has reaped."""
    f = stat_fields(pid)
    if f is None:
        return 0
    return sum(int(x) for x in f[STAT_CPU]) * 1000000 // TICK


def _parents():
    """{pid: ppid} for every live process."""
    out = {}
    for pid in all_pids():
        st = proc_stat(pid)
        if st is not None and st[0] != "Z":
            out[pid] = st[1]
    return out


def tree(roots):
    """The live pids of roots and all their descendants, sorted."""
    parents = _parents()
    kids = {}
    for pid, ppid in parents.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [r for r in roots if r in parents]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return sorted(out)


def tree_cpu_usec(roots):
    """CPU microseconds of a process tree, reaped children included."""
    return sum(cpu_usec(p) for p in tree(roots))


def cpu_times(cpus):
    """{cpu: (task_usec, irq_usec, steal_usec)} from /proc/stat for the
    given CPUs: task = user + nice + system (what processes ran),
    irq = irq + softirq (charged to no cgroup; on loopback this includes
    the network stack's work for the traffic), steal (hypervisor)."""
    want = {"cpu%d" % c: c for c in cpus}
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in want:
                v = [int(x) * 1000000 // TICK for x in parts[1:9]]
                out[want[parts[0]]] = (v[0] + v[1] + v[2], v[5] + v[6], v[7])
    return out


# ---------------------------------------------------------------------------
# Memory

def _kib(path, key):
    """The number after key (e.g. "VmRSS:") on its line of path, in kB, or
    None if the file or the line is missing."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def vmrss_kb(pid):
    """VmRSS of pid in kB, or None if it is gone."""
    return _kib("/proc/%d/status" % pid, "VmRSS:")


def rss_kib(pid):
    """(VmRSS, Pss) of pid in KiB; 0 for what cannot be read (pid gone).
    Pss shares pages between the processes that map them, so it sums
    without double counting."""
    return (vmrss_kb(pid) or 0,
            _kib("/proc/%d/smaps_rollup" % pid, "Pss:") or 0)
