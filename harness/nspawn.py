"""
nspawn.py: a fresh Debian machine with systemd as its PID 1, booted
under systemd-nspawn on a host that runs no systemd and no D-Bus
(test_deploy): the debootstrapped root, kept in a cache; the packages
for it, fetched on the host (the container has no network); the
container, booted from a fresh copy of the cached root; commands and
HTTP clients inside it; and a teardown that leaves nothing behind, on
failure too.

- RootCache: debootstrap --variant=minbase into a directory named by a
  key of everything that shapes the root (suite, variant, packages,
  mirror, architecture, debootstrap's version). The root is made in a
  temporary directory and renamed into place with its stamp, so a
  half-made root is never taken for a cached one; an entry older than
  its maximum age is made again. Callers hold lock() around it.
- fetch_debs: apt-get on the host resolves packages against the
  container's own dpkg status and downloads them into an archive
  directory; the exact files of that resolution are returned, for an
  apt-get install of local files inside.
- Container: systemd-nspawn --boot --register=no --keep-unit
  --private-network (without --register=no --keep-unit nspawn needs the
  host's systemd over D-Bus, NOTES.md) on a copy of the root, in a
  cgroup of its own (under the caller's, in the unified and the
  name=systemd hierarchies) so that every process it starts can be
  found and killed and nspawn's own cgroups removed. Commands enter it
  with nsenter on its PID 1. destroy() powers it off, kills what is left
  after a bound, and removes the cgroups and the copy; it is also
  registered with proc.on_cleanup, so a test stopped by a signal tears
  the container down too.
- NetNS: threads that enter the container's network namespace (setns
  is per thread for network namespaces), so this process's HTTP client
  reaches the container's loopback: nginx as a local client sees it.
"""

import concurrent.futures
import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from harness import proc

CACHE_FORMAT = 1            # bump when what a cached root holds changes
BOOT_TIMEOUT = 120          # seconds from nspawn's start to "running"
POWEROFF_TIMEOUT = 30       # seconds for a clean poweroff
KILL_TIMEOUT = 10           # seconds for killed processes to be gone
CLONE_NEWNET = 0x40000000
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# The environment of a command inside: nothing of this process's.
INSIDE_ENV = ["PATH=" + PATH, "LANG=C.UTF-8", "TERM=dumb",
              "DEBIAN_FRONTEND=noninteractive", "HOME=/root"]


def debian_mirror(srcdir):
    """The mirror this machine's apt takes bookworm from
    (tools/lib/common.sh's debian_mirror), or None."""
    rc, out, _ = proc.run(["sh", "-c", '. "$1/tools/lib/common.sh" && '
                           'debian_mirror', "sh", srcdir])
    return out.strip().splitlines()[0] if rc == 0 and out.strip() else None


@contextlib.contextmanager
def lock(path, timeout):
    """Holds an exclusive flock on path (created if missing) for the
    with block; waits at most timeout seconds, then raises TimeoutError."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError("%s is held by another run" % path)
                time.sleep(1)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# The cached root

class RootCache:
    """A debootstrapped root under base, reused while its key matches and
    it is younger than max_age seconds. path: the root, once ready()."""

    STAMP = "complete"

    def __init__(self, base, suite, variant, include, mirror, max_age):
        self.base = base
        self.suite = suite
        self.variant = variant
        self.include = sorted(include)
        self.mirror = mirror
        self.max_age = max_age
        arch = proc.run(["dpkg", "--print-architecture"],
                        check=True)[1].strip()
        rc, version, _ = proc.run(["dpkg-query", "-W", "-f=${Version}",
                                   "debootstrap"])
        self.key = hashlib.sha256(json.dumps(
            [CACHE_FORMAT, suite, variant, self.include, mirror, arch,
             version if rc == 0 else ""]).encode()).hexdigest()[:16]
        self.name = "%s-%s-%s" % (suite, variant, self.key)
        self.dir = os.path.join(base, self.name)
        self.path = os.path.join(self.dir, "root")

    def state(self):
        """'ready', 'missing', 'half-made' (no stamp) or 'stale' (older
        than max_age)."""
        if not os.path.isdir(self.dir):
            return "missing"
        stamp = os.path.join(self.dir, self.STAMP)
        if not os.path.isfile(stamp) or not os.path.isdir(self.path):
            return "half-made"
        if time.time() - os.stat(stamp).st_mtime > self.max_age:
            return "stale"
        return "ready"

    def build(self, log, timeout):
        """debootstrap into a temporary directory beside the entry, then
        the stamp, then a rename into place; entries of other keys and
        leftovers of interrupted builds are removed. Returns debootstrap's
        exit status (-1 after timeout)."""
        os.makedirs(self.base, exist_ok=True)
        for name in os.listdir(self.base):
            if name.startswith(self.suite + "-") or name.startswith(".tmp-"):
                shutil.rmtree(os.path.join(self.base, name),
                              ignore_errors=True)
        tmp = os.path.join(self.base, ".tmp-%s-%d" % (self.name, os.getpid()))
        os.makedirs(tmp)
        argv = ["debootstrap", "--variant=" + self.variant,
                "--include=" + ",".join(self.include), self.suite,
                os.path.join(tmp, "root"), self.mirror]
        with open(log, "a") as f:
            f.write("$ %s\n" % " ".join(argv))
        p = proc.spawn(argv, log_path=log)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.stop(p, signal.SIGKILL)
            rc = -1
        if rc == 0:
            with open(os.path.join(tmp, self.STAMP), "w") as f:
                f.write("%s\n" % " ".join(argv))
            os.rename(tmp, self.dir)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        return rc


def fetch_debs(root, archives, names, log, timeout=600):
    """Downloads, on the host, what installing names (package names, or
    paths of .deb files whose dependencies count) needs on top of the
    dpkg status of root, into archives. Returns the paths of exactly
    those .deb files (the names' files themselves excluded), or raises
    RuntimeError with apt's words."""
    os.makedirs(os.path.join(archives, "partial"), exist_ok=True)
    cache = os.path.join(os.path.dirname(archives), "apt-cache")
    os.makedirs(cache, exist_ok=True)
    opts = ["-o", "Dir::State::status=" + os.path.join(
        root, "var/lib/dpkg/status"), "-o", "Dir::Cache=" + cache,
        "-o", "Dir::Cache::archives=" + archives,
        "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"]
    base = ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
    rc, out, err = proc.run(base + ["-s"] + opts + list(names),
                            timeout=timeout)
    with open(log, "a") as f:
        f.write(out + err)
    if rc != 0:
        raise RuntimeError("apt-get -s: %s" % (err or out)[-2000:])
    # "Inst libpq5 (15.13-0+deb12u1 Debian:12.11/stable [amd64])"
    wanted = []
    for m in re.finditer(r"^Inst (\S+) (?:\[\S+\] )?\((\S+) .*\[(\S+)\]\)",
                         out, re.M):
        name, version, arch = m.groups()
        if any(n.endswith(".deb") and os.path.basename(n).startswith(
                name + "_") for n in names):
            continue
        wanted.append("%s_%s_%s.deb" % (name, version.replace(":", "%3a"),
                                        arch))
    rc, out, err = proc.run(base + ["--download-only"] + opts + list(names),
                            timeout=timeout)
    with open(log, "a") as f:
        f.write(out + err)
    paths = [os.path.join(archives, w) for w in wanted]
    absent = [p for p in paths if not os.path.isfile(p)]
    if rc != 0 or absent:
        raise RuntimeError("apt-get --download-only: exit %d, missing %s: "
                           "%s" % (rc, absent[:5], (err or out)[-2000:]))
    return paths


# ---------------------------------------------------------------------------
# The cgroup the container runs in

def _cgroup_roots():
    """[(hierarchy mount point, this process's cgroup in it)] for the
    unified (cgroup2) and the name=systemd hierarchies present."""
    mine = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, ctrl, path = line.rstrip("\n").split(":", 2)
            mine["unified" if hid == "0" else ctrl] = path
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            mnt, fstype, opts = fields[4], fields[sep + 1], fields[sep + 3]
            if fstype == "cgroup2" and "unified" in mine:
                out.append((mnt, mine["unified"]))
            elif fstype == "cgroup" and "name=systemd" in opts.split(",") \
                    and "name=systemd" in mine:
                out.append((mnt, mine["name=systemd"]))
    return out


class Cgroup:
    """A cgroup named name below this process's own, in each hierarchy
    _cgroup_roots() finds; spawn(group=...) puts a child in it before
    exec (enter), and everything it starts stays below it."""

    def __init__(self, name):
        self.dirs = [os.path.join(mnt, path.lstrip("/"), name)
                     for mnt, path in _cgroup_roots()]
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)

    def enter(self, pid):
        """Moves pid into the cgroup (between fork and exec)."""
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def add_root(self, pid):
        """spawn()'s hook for cgroups that track their first process:
        nothing to do here."""

    def pids(self):
        """Every process in the cgroup or below it."""
        found = set()
        for d in self.dirs:
            for sub, _, _ in os.walk(d):
                try:
                    with open(os.path.join(sub, "cgroup.procs")) as f:
                        found |= {int(x) for x in f.read().split()}
                except OSError:
                    pass
        return found

    def kill(self, timeout=KILL_TIMEOUT):
        """SIGKILL to every process below the cgroup until none is left
        (at most timeout seconds). Returns the pids still there."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.pids()
            if not left or time.monotonic() >= deadline:
                return left
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)

    def remove(self):
        """Removes the cgroup and those below it (empty ones: the rest
        stays, and is returned)."""
        left = []
        for d in self.dirs:
            for sub, _, _ in sorted(os.walk(d), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(sub)
                except OSError as e:
                    if e.errno != errno.ENOENT:
                        left.append(sub)
        return left


# ---------------------------------------------------------------------------
# The container

class Unbootable(Exception):
    """nspawn could not boot the pristine root at all (the host forbids
    it): the test can only skip."""


class Container:
    """The root at template, copied to workdir/root and booted there.
    binds: [(host path, path inside)] bind-mounted read-only. log: nspawn's
    output (the console). Use boot(), then sh(); destroy() always."""

    def __init__(self, template, workdir, name, log, binds=()):
        self.template = template
        self.workdir = workdir
        self.root = os.path.join(workdir, "root")
        self.name = name
        self.log = log
        self.binds = list(binds)
        self.nspawn = None
        self.pid = None         # the container's PID 1, as the host sees it
        self.cgroup = None
        self.copy_seconds = None
        proc.on_cleanup(self.destroy)

    def copy(self):
        """The fresh copy of the pristine root this run boots."""
        t0 = time.monotonic()
        os.makedirs(self.workdir, exist_ok=True)
        proc.run(["cp", "-a", "--reflink=auto", self.template, self.root],
                 timeout=600, check=True)
        self.copy_seconds = time.monotonic() - t0

    def _init_pid(self):
        """nspawn's child that runs systemd, or None yet."""
        if self.nspawn is None:
            return None
        try:
            with open("/proc/%d/task/%d/children" % (self.nspawn.pid,
                                                    self.nspawn.pid)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            return None
        for k in kids:
            try:
                if os.readlink("/proc/%d/ns/pid" % k) != \
                        os.readlink("/proc/self/ns/pid"):
                    return k
            except OSError:
                pass
        return None

    def boot(self, timeout=BOOT_TIMEOUT):
        """Boots the copy and waits until systemd inside says "running"
        (or "degraded": reported, the caller decides). Returns that
        state. Raises Unbootable when nspawn exits or PID 1 never
        appears, with the end of nspawn's output."""
        self.cgroup = Cgroup("cfpm-nspawn-%d" % os.getpid())
        argv = ["systemd-nspawn", "--boot", "--register=no", "--keep-unit",
                "--private-network", "--link-journal=no", "--quiet",
                "--machine=" + self.name, "-D", self.root]
        for host, inside in self.binds:
            argv.append("--bind-ro=%s:%s" % (host, inside))
        with open(self.log, "a") as f:
            f.write("$ %s\n" % " ".join(argv))
        self.nspawn = proc.spawn(argv, log_path=self.log, group=self.cgroup)
        deadline = time.monotonic() + timeout
        self.pid = proc.wait_for(lambda: self.nspawn.poll() is None and
                                 self._init_pid(), timeout)
        if not self.pid:
            raise Unbootable("systemd-nspawn %s: %s" % (
                "exited %r" % self.nspawn.poll()
                if self.nspawn.poll() is not None else "no PID 1",
                proc.tail(self.log, 8)))
        state = ""
        while time.monotonic() < deadline and self.nspawn.poll() is None:
            rc, out, _ = self.sh("systemctl is-system-running --wait",
                                 timeout=max(1, deadline - time.monotonic()))
            state = out.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.5)
        raise Unbootable("systemd inside did not come up (%r): %s" % (
            state, proc.tail(self.log, 8)))

    def argv(self, script):
        """The host command that runs script with sh inside."""
        return ["nsenter", "-t", str(self.pid), "-a", "--", "env", "-i"] + \
            INSIDE_ENV + ["sh", "-c", script]

    def sh(self, script, timeout=60, input=None):
        """Runs script with sh inside the container (root, a clean
        environment); returns (rc, stdout, stderr); rc -1 after timeout
        (the command is killed)."""
        try:
            return proc.run(self.argv(script), timeout=timeout, input=input)
        except subprocess.TimeoutExpired as e:
            return -1, (e.stdout or b"").decode("utf-8", "replace"), \
                "timed out after %.0f s" % timeout

    def destroy(self):
        """Powers the container off (systemctl poweroff, then SIGTERM to
        nspawn), kills what is left after the bounds, removes its cgroups
        and the copy. Returns a list of what could not be cleaned (empty
        when all is gone). Safe to call twice."""
        left = []
        if self.nspawn is not None and self.nspawn.poll() is None:
            if self.pid:
                self.sh("systemctl poweroff", timeout=10)
            try:
                self.nspawn.wait(timeout=POWEROFF_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.stop(self.nspawn, signal.SIGTERM, POWEROFF_TIMEOUT / 3)
        if self.cgroup is not None:
            left += ["pid %d" % p for p in self.cgroup.kill()]
            if self.nspawn is not None:
                proc.stop(self.nspawn, signal.SIGKILL, 1)
            left += self.cgroup.remove()
        mounts = self.mounts()
        for m in sorted(mounts, key=len, reverse=True):
            proc.run(["umount", "-l", m], timeout=30)
        if os.path.isdir(self.workdir) and not self.mounts():
            proc.run(["rm", "-rf", "--one-file-system", self.workdir],
                     timeout=600)
        if os.path.exists(self.workdir):
            left.append(self.workdir)
        return left

    def mounts(self):
        """Host mount points at or below the copy (none are expected:
        nspawn mounts in its own namespace)."""
        out = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mnt = line.split()[4]
                if mnt == self.workdir or mnt.startswith(self.workdir + "/"):
                    out.append(mnt)
        return out


# ---------------------------------------------------------------------------
# HTTP from inside the container's network

_libc = ctypes.CDLL(None, use_errno=True)


def _enter_netns(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns(%s): %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


class NetNS:
    """Runs functions on threads that live in the network namespace of
    process pid: a socket they open is the container's. call() runs one
    and returns its result; threads() starts n long-running ones."""

    def __init__(self, pid, workers=4):
        self.path = "/proc/%d/ns/net" % pid
        self.pool = concurrent.futures.ThreadPoolExecutor(
            workers, initializer=_enter_netns, initargs=(self.path,))

    def call(self, fn, *args, **kw):
        return self.pool.submit(fn, *args, **kw).result()

    def thread(self, fn, *args):
        """A started daemon thread in the namespace running fn(*args)."""
        def body():
            _enter_netns(self.path)
            fn(*args)
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    def close(self):
        self.pool.shutdown(wait=False)
