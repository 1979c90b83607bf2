"""
procfs.py: readers for /proc used by the accounting: a process's CPU time
(own and reaped children's), process trees, resident memory, and per-CPU
busy/steal time from /proc/stat.
"""

import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """Fields 3.. of /proc/pid/stat (after the command name), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return data.rpartition(")")[2].split()


def cpu_usec(pid):
    """utime + stime + cutime + cstime of pid in microseconds (0 if gone):
    cutime/cstime hold the CPU of children pid has reaped."""
    f = _stat_fields(pid)
    if f is None:
        return 0
    # fields 14..17 of stat are rest[11..14]
    ticks = sum(int(x) for x in f[11:15])
    return ticks * 1000000 // TICK


def _parents():
    """{pid: ppid} for every live process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            f = _stat_fields(int(d))
            if f is not None and f[0] != "Z":
                out[int(d)] = int(f[1])
    return out


def tree(roots):
    """The live pids of roots and all their descendants."""
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


def rss_kib(pid):
    """(VmRSS, Pss) of pid in KiB; (0, 0) if it is gone. Pss shares pages
    between the processes that map them, so it sums without double
    counting."""
    rss = pss = 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                    break
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


def comm(pid):
    """The command name of pid ("" if gone)."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


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
