"""
cgroup.py: CPU accounting and CPU sets for groups of processes (the
candidate, PostgreSQL, the probe nginx, the load generators).

Accounting, best first:
  v2    cgroup v2 (/sys/fs/cgroup/unified on hybrid hosts, else
        /sys/fs/cgroup): cpu.stat usage_usec of a leaf group;
  v1    cgroup v1 cpuacct: cpuacct.usage (ns);
  proc  /proc: utime+stime+cutime+cstime summed over the process tree of
        the group's root processes (reaped children included).
CPU sets, best first: the v2 cpuset controller, the v1 cpuset hierarchy,
else affinity only (every process is also pinned with sched_setaffinity,
which its children inherit). On a hybrid host the two hierarchies are
independent, so v2 accounting and a v1 cpuset are used together.

A Backend makes one directory per run (cfpm-bench.<pid>) in each
hierarchy it uses and removes it at cleanup.
"""

import os

from harness import procfs
from harness.proc import on_cleanup


def _cgroup_mounts():
    """{controller or 'cgroup2': mount point} from /proc/mounts."""
    out = {}
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype, opts = line.split()[:4]
            if fstype == "cgroup2":
                out.setdefault("cgroup2", mnt)
            elif fstype == "cgroup":
                for o in opts.split(","):
                    out.setdefault(o, mnt)
    return out


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _mkdir(path):
    """Creates a cgroup directory; returns True on success."""
    try:
        os.mkdir(path)
        return True
    except FileExistsError:
        return True
    except OSError:
        return False


def cpulist(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's list format)."""
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def parse_cpulist(text):
    """'0-2,5' -> [0, 1, 2, 5]."""
    out = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        else:
            out.append(int(part))
    return sorted(set(out))


class Backend:
    """Chooses the accounting and cpuset mechanisms once per run and
    makes groups. kind is 'v2', 'v1' or 'proc'; cpuset is 'v2', 'v1' or
    'affinity'. want forces an accounting kind ('auto' tries all)."""

    def __init__(self, want="auto"):
        self.name = "cfpm-bench.%d" % os.getpid()
        self.mounts = _cgroup_mounts()
        self.acct_root = None    # per-run directory for accounting
        self.cpuset_root = None  # per-run directory for cpusets
        self.kind = self._pick_accounting(want)
        self.cpuset = self._pick_cpuset()
        on_cleanup(self._remove_roots)

    # -- detection ---------------------------------------------------------

    def _v2_mount(self):
        for d in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
            if os.path.exists(os.path.join(d, "cgroup.controllers")):
                return d
        return None

    def _pick_accounting(self, want):
        if want in ("auto", "v2"):
            mnt = self._v2_mount()
            root = mnt and os.path.join(mnt, self.name)
            if root and _mkdir(root) and \
                    os.path.exists(os.path.join(root, "cpu.stat")):
                self.acct_root = root
                return "v2"
            if root and os.path.isdir(root):
                os.rmdir(root)
        if want in ("auto", "v1") and "cpuacct" in self.mounts:
            root = os.path.join(self.mounts["cpuacct"], self.name)
            if _mkdir(root):
                self.acct_root = root
                return "v1"
        if want not in ("auto", "proc"):
            raise RuntimeError("cgroup accounting %r is not available" % want)
        return "proc"

    def _enable_v2_cpuset(self):
        """Turns the cpuset controller on for our v2 directory's children;
        True on success."""
        mnt = self._v2_mount()
        try:
            if "cpuset" not in _read(os.path.join(mnt, "cgroup.controllers")
                                     ).split():
                return False
            for d in (mnt, self.acct_root):
                sub = os.path.join(d, "cgroup.subtree_control")
                if "cpuset" not in _read(sub).split():
                    _write(sub, "+cpuset")
            return True
        except OSError:
            return False

    def _pick_cpuset(self):
        if self.kind == "v2" and self._enable_v2_cpuset():
            self.cpuset_root = self.acct_root
            return "v2"
        if "cpuset" in self.mounts:
            root = os.path.join(self.mounts["cpuset"], self.name)
            if _mkdir(root):
                try:
                    parent = self.mounts["cpuset"]
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        _write(os.path.join(root, f),
                               _read(os.path.join(parent, f)))
                    self.cpuset_root = root
                    return "v1"
                except OSError:
                    os.rmdir(root)
        return "affinity"

    def describe(self):
        """A dict for the results: which mechanisms were used, where."""
        return {"accounting": self.kind, "cpuset": self.cpuset,
                "accounting_dir": self.acct_root,
                "cpuset_dir": self.cpuset_root}

    def group(self, name, cpus):
        """A new (empty) group called name, restricted to cpus."""
        return Group(self, name, cpus)

    def _remove_roots(self):
        for root in {self.acct_root, self.cpuset_root} - {None}:
            try:
                os.rmdir(root)
            except OSError:
                pass


class Group:
    """One group of processes: CPU counter, member pids, CPU set."""

    def __init__(self, backend, name, cpus):
        self.b = backend
        self.name = name
        self.roots = []          # proc accounting: the tree roots
        self.acct = self.cpuset_dir = None
        if backend.kind != "proc":
            self.acct = os.path.join(backend.acct_root, name)
            if not _mkdir(self.acct):
                raise RuntimeError("cannot create cgroup %s" % self.acct)
        if backend.cpuset in ("v1", "v2"):
            self.cpuset_dir = os.path.join(backend.cpuset_root, name)
            _mkdir(self.cpuset_dir)
            if backend.cpuset == "v1":
                _write(os.path.join(self.cpuset_dir, "cpuset.mems"),
                       _read(os.path.join(backend.cpuset_root,
                                          "cpuset.mems")))
        self.set_cpus(cpus)
        on_cleanup(self.remove)

    def set_cpus(self, cpus):
        """Restricts the group (and future members) to cpus."""
        self.cpus = sorted(cpus)
        if self.cpuset_dir:
            _write(os.path.join(self.cpuset_dir, "cpuset.cpus"),
                   cpulist(self.cpus))

    def enter(self, pid):
        """Moves pid into the group. Runs in a freshly forked child."""
        for d in {self.acct, self.cpuset_dir} - {None}:
            _write(os.path.join(d, "cgroup.procs"), pid)

    def add_root(self, pid):
        """Records pid as a tree root (used by proc accounting)."""
        self.roots.append(pid)

    def pids(self):
        """Live member pids."""
        if self.acct is None:
            return procfs.tree(self.roots)
        try:
            text = _read(os.path.join(self.acct, "cgroup.procs"))
        except OSError:
            return []
        return sorted(int(x) for x in text.split())

    def cpu_usec(self):
        """Cumulative CPU time of the group in microseconds."""
        if self.b.kind == "v2":
            for line in _read(os.path.join(self.acct, "cpu.stat")
                              ).splitlines():
                k, v = line.split()
                if k == "usage_usec":
                    return int(v)
            raise RuntimeError("no usage_usec in %s/cpu.stat" % self.acct)
        if self.b.kind == "v1":
            return int(_read(os.path.join(self.acct, "cpuacct.usage"))
                       ) // 1000
        return procfs.tree_cpu_usec(self.roots)

    def reset_roots(self):
        """Forgets the tree roots (before the group is reused)."""
        self.roots = []

    def remove(self):
        """Removes the group's directories (members must be gone)."""
        for d in {self.acct, self.cpuset_dir} - {None}:
            try:
                os.rmdir(d)
            except OSError:
                pass
