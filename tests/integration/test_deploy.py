#!/usr/bin/env python3
"""
test_deploy.py: the Debian package deployed the way an operator deploys
it, on a fresh Debian 12 with systemd 252 as PID 1 (issue 20) (TAP).

Setup, each step timed:
- the .deb built from the tree (harness/deb.py, as test_package builds
  it, without its offline tests: make check runs those), and a second one
  with a higher version from the same build, for the upgrade;
- a debootstrapped bookworm (--variant=minbase, with systemd,
  systemd-sysv and dbus, the base any Debian install has), cached in
  CFPM_DEPLOY_CACHE (default /var/cache/cfpm-test/deploy) under a key of
  everything that shapes it, made again when half-made or older than
  CACHE_MAX_AGE; every run boots a fresh copy of it, never the cache;
- postgresql-15, nginx and the package's dependencies downloaded on the
  host (apt-get against the container's own dpkg status) and installed
  inside from a local directory: the container has no network;
- systemd-nspawn --boot --register=no --keep-unit --private-network on
  the copy (harness/nspawn.py); commands enter it with nsenter on its
  PID 1; HTTP comes from this process's threads inside its network
  namespace, to the container's nginx on its loopback.

Then, inside: postgresql-15 and nginx installed, the .deb installed
(nothing enabled or started; every program cfpm.service runs on the
machine, ExecReload's included), and the README's install steps, taken from
its marked block and run as written, each a TAP line: the test fails
when the README's steps do not work. The test's own setup beyond them is
only a token, minted with the key pair the steps make.

Checks, each a TAP line with its time and a row of the deployment table
printed at the end (step, expected, seen, time):
- socket activation of both sockets: cfpm.service inactive until the
  first request through nginx to the pool, active after it; stopped, then
  started by a request for /status (the status socket);
- POST 201, GET 200 of that row, /auth 200, through the shipped site;
- systemctl status shows cfpm's STATUS=;
- the workers run as cfpm with Seccomp: 2, NoNewPrivs: 1 and a filter of
  their own on top of the unit's (Seccomp_filters);
- systemctl reload 3 times under a request loop: 0 errors, a new
  generation each time, the same master;
- a configuration cfpm refuses: systemctl reload fails, the reason is in
  journalctl -p warning, the same workers go on serving;
- PostgreSQL stopped: /health 503, STATUS= says the database is
  unavailable; systemctl restart with the database down returns within
  RESTART_BOUND; the database back: /health 200;
- the unit's system call filter as it was before seccomp was allowed
  (a runtime drop-in): STATUS= names the crash loop and SIGSYS;
- systemctl stop: success, exit 0, cfpm's "stopped";
- the upgrade to the second .deb under a request loop: 0 errors, the
  service restarted, its sockets not;
- systemd-analyze security: exposure at most EXPOSURE_MAX;
- no "user and group are ignored" in the whole journal, no worker
  killed outside the crash-loop step;
- apt-get remove: no cfpm unit active, no /run/cfpm, the nginx site
  disabled and nginx reloaded: 127.0.0.1:8080 refuses connections (no
  502), nginx's default site still answers;
- teardown: the container powered off, its cgroups and the copy gone.

Runs in the plain build only (it tests the package, not the sanitizers).
Skipped only where nspawn cannot boot the pristine root at all (not
root, or the host forbids it), and in a release tree (no debian/: no
package): said in the skip. Tools missing
(tools/install-deps installs them) are a failure.
Environment: CFPM_SRCDIR, CFPM_BUILDDIR, CFPM_SANITIZERS (make check);
CFPM_DEPLOY_CACHE; CFPM_KEEP_TMP=1 keeps the temp dir (not the
container's copy).
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from harness import deb as debs  # noqa: E402
from harness import nspawn  # noqa: E402
from harness.contract import BENCH_BODY, BENCH_PAYLOAD  # noqa: E402
from harness.http import api_request  # noqa: E402
from harness.paths import SANITIZERS  # noqa: E402

SRCDIR = ct.SRCDIR
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
CACHE = os.environ.get("CFPM_DEPLOY_CACHE", "/var/cache/cfpm-test/deploy")
SUITE, VARIANT = "bookworm", "minbase"
BASE = ("systemd", "systemd-sysv", "dbus")   # debootstrap --include
PACKAGES = ("postgresql-15", "nginx")        # installed inside, each run
CACHE_MAX_AGE = 30 * 86400      # seconds before the root is made again
LOCK_TIMEOUT = 1800             # s to wait for another run's container
DEBOOTSTRAP_TIMEOUT = 900
INSTALL_TIMEOUT = 600           # apt-get inside, on a loaded machine
TEST_TIMEOUT = 1800             # the whole test, a backstop
STEP_TIMEOUT = 120              # one command inside
REQUEST_TIMEOUT = 15            # one HTTP request
STATE_BOUND = 15                # s for a state change to show
RESTART_BOUND = 10              # "returns within seconds", database down
EXPOSURE_MAX = 2.0              # systemd-analyze security, at most
RELOADS = 3
LOAD_READERS = 2
LOAD_WRITERS = 2
SITE = 8080                     # the shipped nginx site's port
DEFAULT_SITE = 80               # Debian nginx's own default site
INSIDE = "/var/cache/cfpm-deploy"   # where the host's .debs are bound
MARKER = "<!-- install steps: tests/integration/test_deploy.py runs this " \
    "block as written -->"
IGNORED = "user and group are ignored"
# What the unit filtered before seccomp was allowed (a10d06d).
OLD_FILTER = "[Service]\nSystemCallFilter=\nSystemCallFilter=@system-service\n"
DROPIN = "/run/systemd/system/cfpm.service.d/50-old-filter.conf"


class Steps:
    """Each check a TAP line with its time, and a row of the deployment
    table (step, expected, seen, seconds)."""

    def __init__(self, tap):
        self.tap = tap
        self.rows = []

    def check(self, t0, cond, step, expected, seen, *diags):
        took = time.monotonic() - t0
        self.tap.ok(cond, "%s (%.1f s)" % (step, took), "seen: %s" % seen,
                    *diags)
        self.rows.append((step, expected, seen if cond else
                          "NOT OK: %s" % seen, took))
        return bool(cond)

    def table(self):
        self.tap.diag("deployment table:")
        self.tap.diag("| step | expected | seen | time |")
        self.tap.diag("| --- | --- | --- | --- |")
        for step, want, seen, took in self.rows:
            self.tap.diag("| %s | %s | %s | %.1f s |" % (
                step, want, str(seen).replace("|", "/")[:160], took))


def readme_steps():
    """The commands of the README's marked install block (continuation
    lines joined), as written."""
    with open(os.path.join(SRCDIR, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)^```", text,
                  re.M | re.S)
    if not m:
        return []
    cmds, cur = [], ""
    for line in m.group(1).splitlines():
        if line.endswith("\\"):
            cur += line + "\n"
            continue
        cmd = cur + line
        cur = ""
        if cmd.strip() and not cmd.lstrip().startswith("#"):
            cmds.append(cmd)
    return cmds


class Box:
    """The booted container and the helpers the checks use."""

    def __init__(self, container):
        self.c = container
        self.net = nspawn.NetNS(container.pid)

    def sh(self, script, timeout=STEP_TIMEOUT):
        return self.c.sh(script, timeout)

    def out(self, script, timeout=STEP_TIMEOUT):
        """stdout of script (stripped), "" if it failed."""
        rc, out, _ = self.sh(script, timeout)
        return out.strip() if rc == 0 else ""

    def show(self, unit, *props):
        """systemctl show's properties of unit, as a dict."""
        out = self.out("systemctl show -p %s %s" % (",".join(props), unit))
        return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)

    def active(self, unit):
        return self.out("systemctl is-active %s || true" % unit)

    def request(self, method, path, token=None, body=None, port=SITE):
        return self.net.call(api_request, port, method, path, token=token,
                             body=body, ctype="application/json" if body
                             else None, timeout=REQUEST_TIMEOUT)

    def workers(self):
        """The master's children (pids inside the container)."""
        main = self.show("cfpm.service", "MainPID").get("MainPID", "0")
        if main in ("", "0"):
            return []
        return sorted(int(p) for p in self.out(
            "cat /proc/%s/task/%s/children" % (main, main)).split())

    def journal(self, since, prio=None):
        """cfpm.service's journal since epoch second since, messages
        only (at prio or above if given)."""
        return self.out("journalctl -q --no-pager -o cat -u cfpm.service "
                        "--since @%d %s" % (since, "-p " + prio if prio
                                            else ""))


class Traffic:
    """Readers (GET /events/{id} of rows known to exist, /auth) and
    writers (POST /events) on threads inside the container's network
    until stop(); every status is kept, so a check can demand 0 errors."""

    def __init__(self, box, token, ids):
        self.box, self.token, self.ids = box, token, ids
        self.statuses = []
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.threads = [box.net.thread(self._run, False)
                        for _ in range(LOAD_READERS)] + \
            [box.net.thread(self._run, True) for _ in range(LOAD_WRITERS)]

    def _run(self, write):
        i = 0
        while not self.halt.is_set():
            i += 1
            if write:
                r = api_request(SITE, "POST", "/events", self.token,
                                body=BENCH_BODY, ctype="application/json",
                                timeout=REQUEST_TIMEOUT)
            else:
                path = "/auth" if i % 2 else "/events/%d" % \
                    self.ids[i % len(self.ids)]
                r = api_request(SITE, "GET", path, self.token,
                                timeout=REQUEST_TIMEOUT)
            with self.lock:
                self.statuses.append(r.status)

    def count(self):
        with self.lock:
            return len(self.statuses)

    def stop(self):
        """Stops the clients; returns (requests, the statuses not 2xx)."""
        self.halt.set()
        for t in self.threads:
            t.join(REQUEST_TIMEOUT + 5)
        with self.lock:
            return len(self.statuses), [s for s in self.statuses
                                        if s not in (200, 201)]


# ---------------------------------------------------------------------------
# Setup

def build_packages(st, tmp):
    """The .deb of the tree and a later version from the same build:
    (first, second) paths, or None."""
    t0 = time.monotonic()
    why = debs.missing(SRCDIR)
    if why:
        st.check(t0, False, "build the .deb", "built", why)
        return None
    log = os.path.join(tmp, "deb.log")
    top = os.path.join(tmp, "deb")
    os.makedirs(top)
    tree = debs.release_tree(SRCDIR, BUILDDIR, top, log)
    rc, first = debs.build_deb(tree, log, "nocheck parallel=2") \
        if tree else (1, None)
    if not st.check(t0, first is not None, "build the .deb from the tree",
                    "built", first and os.path.basename(first),
                    ct.tail(log, 20)):
        return None
    t0 = time.monotonic()
    version = ct.run(["dpkg-deb", "-f", first, "Version"])[1].strip()
    debs.new_version(tree, version + "+deploy1", "The upgrade "
                     "test_deploy installs over %s." % version)
    rc, second = debs.build_deb(tree, log, "nocheck parallel=2", again=True)
    newer = second is not None and ct.run(
        ["dpkg", "--compare-versions", version + "+deploy1", "gt",
         version])[0] == 0
    if not st.check(t0, newer, "build a higher version from the same "
                    "build", "built, version higher", second and
                    os.path.basename(second), ct.tail(log, 20)):
        return None
    return first, second


def cached_root(st, tmp):
    """The pristine root (made or reused), or None."""
    t0 = time.monotonic()
    mirror = nspawn.debian_mirror(SRCDIR)
    if not mirror:
        st.check(t0, False, "debootstrap root", "a mirror", "no bookworm "
                 "source in /etc/apt")
        return None
    cache = nspawn.RootCache(CACHE, SUITE, VARIANT, BASE, mirror,
                             CACHE_MAX_AGE)
    state = cache.state()
    if state != "ready":
        log = os.path.join(tmp, "debootstrap.log")
        rc = cache.build(log, DEBOOTSTRAP_TIMEOUT)
        ok = rc == 0 and cache.state() == "ready"
        st.check(t0, ok, "debootstrap %s --variant=%s (cache %s)" % (
            SUITE, VARIANT, state), "made, into %s" % CACHE,
            "made (%s)" % cache.name if ok else "exit %d" % rc,
            ct.tail(log, 15))
        return cache.path if ok else None
    st.check(t0, True, "debootstrap %s --variant=%s (cached)" % (
        SUITE, VARIANT), "reused", cache.name)
    return cache.path


def fetch(st, root, first):
    """The .debs for inside: host paths, or None."""
    t0 = time.monotonic()
    try:
        paths = nspawn.fetch_debs(root, os.path.join(CACHE, "archives"),
                                  list(PACKAGES) + [first],
                                  os.path.join(CACHE, "apt.log"))
    except RuntimeError as e:
        st.check(t0, False, "download the packages on the host", "done",
                 str(e)[:300])
        return None
    st.check(t0, True, "download %s and the package's dependencies on the "
             "host" % ", ".join(PACKAGES), "downloaded or cached",
             "%d files" % len(paths))
    return paths


def boot(st, tap, tmp, root, binds):
    """The container booted from a fresh copy: a Box, or None (skipped
    with the reason when nspawn cannot boot at all)."""
    t0 = time.monotonic()
    box = nspawn.Container(root, os.path.join(tmp, "machine"),
                           "cfpm-deploy-%d" % os.getpid(),
                           os.path.join(tmp, "nspawn.log"), binds)
    box.copy()
    st.check(t0, True, "a fresh copy of the pristine root", "copied",
             "cp -a, %.1f s" % box.copy_seconds)
    t0 = time.monotonic()
    try:
        state = box.boot()
    except nspawn.Unbootable as e:
        tap.skip("boot with systemd-nspawn --boot", "nspawn cannot boot "
                 "a pristine Debian root here: %s" % e)
        box.destroy()
        return None
    st.check(t0, True, "boot: systemd-nspawn --boot --register=no "
             "--keep-unit --private-network", "running", state)
    return Box(box)


def install(st, box, files, cfpm_deb):
    """postgresql-15, nginx and the package, inside. True if all went."""
    t0 = time.monotonic()
    inside = " ".join("%s/debs/%s" % (INSIDE, os.path.basename(p))
                      for p in files)
    rc, out, err = box.sh("apt-get install -y -q --no-install-recommends "
                          "-o Dpkg::Options::=--force-unsafe-io " + inside,
                          INSTALL_TIMEOUT)
    up = box.active("postgresql") + " " + box.active("nginx")
    if not st.check(t0, rc == 0 and up == "active active", "install %s "
                    "from a local directory" % ", ".join(PACKAGES),
                    "installed, both active", "exit %d, %s" % (rc, up),
                    (out + err)[-1500:]):
        return False
    t0 = time.monotonic()
    rc, out, err = box.sh("apt-get install -y -q %s/cfpm/%s" % (
        INSIDE, os.path.basename(cfpm_deb)), INSTALL_TIMEOUT)
    states = [box.active(u) for u in ("cfpm.service", "cfpm.socket",
                                      "cfpm-status.socket")]
    if not st.check(t0, rc == 0 and states == ["inactive"] * 3,
                    "install the .deb", "installed, nothing started",
                    "exit %d, units %s" % (rc, "/".join(states)),
                    (out + err)[-1500:]):
        return False
    # systemd-analyze verify looks at ExecStart only: ExecReload's
    # /bin/kill is not in a minimal Debian unless a package brings it.
    t0 = time.monotonic()
    paths = sorted(set(re.findall(r"path=(\S+)", box.out(
        "systemctl show -p ExecStartPre,ExecStart,ExecReload,ExecStop,"
        "ExecStopPost cfpm.service"))))
    absent = [p for p in paths if box.sh("test -x " + p)[0] != 0]
    return st.check(t0, paths and not absent, "the programs cfpm.service "
                    "runs", "all on the machine (the package depends on "
                    "them)", "missing %r of %r" % (absent, paths)
                    if absent else " ".join(paths))


def follow_readme(st, box):
    """The README's install steps, as written. True if all succeeded."""
    t0 = time.monotonic()
    cmds = readme_steps()
    if not st.check(t0, cmds, "README: the marked install steps",
                    "found", "%d commands" % len(cmds)):
        return False
    good = True
    for cmd in cmds:
        t0 = time.monotonic()
        rc, out, err = box.sh(cmd)
        good &= st.check(t0, rc == 0, "README step: %s" % " ".join(
            cmd.split("#")[0].replace("\\\n", " ").split()), "exit 0",
            "exit %d" % rc, (out + err)[-1000:])
    return good


# ---------------------------------------------------------------------------
# Checks

def active_soon(box):
    """cfpm.service's state once it is "active", or the last one seen
    within STATE_BOUND."""
    seen = []
    ct.wait_for(lambda: seen.append(box.active("cfpm.service")) or
                seen[-1] == "active", STATE_BOUND, 0.1)
    return seen[-1]


def check_activation(st, box):
    """Both sockets start the service. Returns a token, or None when the
    first request was not served."""
    t0 = time.monotonic()
    states = [box.active(u) for u in ("cfpm.service", "cfpm.socket",
                                      "cfpm-status.socket")]
    st.check(t0, states == ["inactive", "active", "active"], "before the "
             "first request", "cfpm.service inactive, both sockets "
             "listening", "/".join(states))
    t0 = time.monotonic()
    r = box.request("GET", "/ping")
    # A worker may answer before the master's READY=1 (activating).
    state = active_soon(box)
    served = st.check(t0, r.status == 200 and r.body == b"pong" and
                      state == "active", "first request, through nginx to "
                      "the pool socket: GET /ping", "200 pong, cfpm.service "
                      "active", "%d %r, %s" % (r.status, r.body[:40], state),
                      box.journal(0)[-1500:])
    t0 = time.monotonic()
    box.sh("systemctl stop cfpm.service")
    before = box.active("cfpm.service")
    r = box.request("GET", "/status")
    state = active_soon(box)
    st.check(t0, before == "inactive" and r.status == 200 and
             b"pool:" in r.body and state == "active", "stopped, then GET "
             "/status through nginx to the status socket", "200 status "
             "page, cfpm.service active again", "%s, then %d, %s" % (
                 before, r.status, state))
    token = box.out("cfpm-token mint --key /etc/cfpm/jwt.key.pem")
    return token if token and served else None


def check_api(st, box, token):
    """POST, GET back, /auth. Returns the ids written."""
    t0 = time.monotonic()
    ids = []
    for _ in range(3):
        r = box.request("POST", "/events", token, BENCH_BODY)
        if r.status == 201 and isinstance((r.json() or {}).get("id"), int):
            ids.append(r.json()["id"])
    st.check(t0, len(ids) == 3, "POST /events through the shipped site",
             "201 {\"id\":N}", "ids %r" % ids)
    t0 = time.monotonic()
    r = box.request("GET", "/events/%d" % ids[0] if ids else "/events/1",
                    token)
    row = r.json() or {}
    st.check(t0, r.status == 200 and row.get("payload") == BENCH_PAYLOAD and
             row.get("id") == (ids[0] if ids else None),
             "GET /events/{id} of that row", "200, the row",
             "%d %r" % (r.status, r.body[:120]))
    t0 = time.monotonic()
    r = box.request("GET", "/auth", token)
    st.check(t0, r.status == 200, "GET /auth", "200", r.status)
    return ids


def check_status_and_workers(st, box):
    t0 = time.monotonic()
    out = box.out("systemctl status cfpm.service --no-pager -n 0")
    m = re.search(r'Status: "([^"]*)"', out)
    st.check(t0, m and m.group(1).startswith("Processes active:"),
             "systemctl status cfpm: cfpm's STATUS=", "Status: \"Processes "
             "active: ...\"", m.group(1) if m else out[-300:])
    t0 = time.monotonic()
    main = box.show("cfpm.service", "MainPID")["MainPID"]
    uid = box.out("id -u cfpm")
    fields = {}
    for pid in [main] + [str(p) for p in box.workers()]:
        text = box.out("cat /proc/%s/status" % pid)
        fields[pid] = dict(re.findall(r"^(Uid|Seccomp|Seccomp_filters|"
                                      r"NoNewPrivs):\s+(\S+)", text, re.M))
    master = fields.pop(main, {})
    good = fields and all(
        f.get("Uid") == uid and f.get("Seccomp") == "2" and
        f.get("NoNewPrivs") == "1" and
        int(f.get("Seccomp_filters", 0)) >
        int(master.get("Seccomp_filters", 0)) for f in fields.values())
    st.check(t0, good, "workers' identity and filters", "uid cfpm, "
             "Seccomp: 2, NoNewPrivs: 1, a filter of their own",
             "%d workers: %r (master %r)" % (
                 len(fields), sorted({tuple(sorted(f.items()))
                                      for f in fields.values()}),
                 master.get("Seccomp_filters")))


def check_reloads(st, box, token, ids):
    t0 = time.monotonic()
    main = box.show("cfpm.service", "MainPID")["MainPID"]
    load = Traffic(box, token, ids)
    ct.wait_for(lambda: load.count() > 20, 10)
    generations, failed = [], []
    for i in range(RELOADS):
        old = set(box.workers())
        rc, out, err = box.sh("systemctl reload cfpm.service")
        new = ct.wait_for(lambda: (lambda w: w if w and not (set(w) & old)
                                   else None)(box.workers()), STATE_BOUND)
        generations.append(bool(new))
        if rc != 0:
            failed.append("reload %d: exit %d %s" % (i + 1, rc, err[-200:]))
        time.sleep(1)
    n, errors = load.stop()
    same = box.show("cfpm.service", "MainPID")["MainPID"] == main
    st.check(t0, not failed and all(generations) and same and n > 0 and
             not errors, "systemctl reload x%d under a request loop" %
             RELOADS, "each exit 0 and a new generation, 0 errors",
             "%d requests, %d errors %r, generations %r, same master %s %s"
             % (n, len(errors), sorted(set(errors)), generations, same,
                failed))


def check_refused(st, box, token):
    t0 = time.monotonic()
    before = box.workers()
    main = box.show("cfpm.service", "MainPID")["MainPID"]
    since = int(time.time()) - 1
    box.sh("cp /etc/cfpm/cfpm.conf /root/cfpm.conf.good && "
           "echo 'listen.owner = no-such-user-cfpm' >> /etc/cfpm/cfpm.conf")
    rc, _, _ = box.sh("systemctl reload cfpm.service")
    why = box.journal(since, "warning")
    r = box.request("GET", "/auth", token)
    kept = box.workers() == before and \
        box.show("cfpm.service", "MainPID")["MainPID"] == main
    st.check(t0, rc != 0 and 'no such user "no-such-user-cfpm"' in why and
             r.status == 200 and kept, "a bad config: systemctl reload",
             "fails, the reason in journalctl -p warning, the pool serves",
             "exit %d, journal -p warning: %r, GET %d, same workers %s" % (
                 rc, why[-160:], r.status, kept))
    box.sh("cp /root/cfpm.conf.good /etc/cfpm/cfpm.conf")


def check_database_down(st, box, token):
    t0 = time.monotonic()
    box.sh("systemctl stop postgresql")
    h = ct.wait_for(lambda: box.request("GET", "/health").status == 503,
                    STATE_BOUND, 0.3)
    text = ct.wait_for(lambda: (lambda s: s if "Database unavailable" in s
                                else None)(box.show(
                                    "cfpm.service", "StatusText")
                                    .get("StatusText", "")), STATE_BOUND,
                       0.3)
    st.check(t0, h and text, "PostgreSQL stopped", "/health 503, STATUS= "
             "says so", text or "health 503: %s" % h)
    t0 = time.monotonic()
    rc, _, err = box.sh("systemctl restart cfpm.service",
                        timeout=RESTART_BOUND * 4)
    took = time.monotonic() - t0
    r = box.request("GET", "/health")
    st.check(t0, rc == 0 and took <= RESTART_BOUND and r.status == 503 and
             box.active("cfpm.service") == "active", "systemctl restart "
             "cfpm with the database down", "returns within %d s, active, "
             "/health 503" % RESTART_BOUND, "exit %d after %.1f s, %s, "
             "/health %d" % (rc, took, box.active("cfpm.service"), r.status),
             err[-300:])
    t0 = time.monotonic()
    box.sh("systemctl start postgresql")
    up = ct.wait_for(lambda: box.request("GET", "/health").status == 200,
                     STATE_BOUND, 0.3)
    st.check(t0, up, "PostgreSQL started again", "/health 200 (workers "
             "reconnect by themselves)", "200" if up else "not 200")


def crashes(box):
    """How many "killed by signal" lines cfpm's journal has."""
    return box.journal(0).count("killed by signal")


def check_crash_loop(st, box):
    """The unit's filter as it was before seccomp was allowed: workers
    die of SIGSYS; STATUS= must name the crash loop and the cause."""
    t0 = time.monotonic()
    box.sh("mkdir -p %s && printf '%s' > %s && systemctl daemon-reload && "
           "systemctl restart --no-block cfpm.service" % (
               os.path.dirname(DROPIN), OLD_FILTER.replace("\n", "\\n"),
               DROPIN))
    text = ct.wait_for(lambda: (lambda s: s if "Workers failing" in s and
                                "signal 31" in s else None)(
        box.show("cfpm.service", "StatusText").get("StatusText", "")),
        STATE_BOUND, 0.3)
    seen = text or box.show("cfpm.service", "StatusText").get("StatusText")
    box.sh("rm -f %s && systemctl daemon-reload && systemctl restart "
           "cfpm.service" % DROPIN)
    st.check(t0, text, "SystemCallFilter=@system-service (no seccomp): "
             "STATUS=", "names the crash loop and SIGSYS", seen)
    return crashes(box)


def check_stop(st, box):
    t0 = time.monotonic()
    since = int(time.time()) - 1
    rc, _, _ = box.sh("systemctl stop cfpm.service")
    props = box.show("cfpm.service", "Result", "ExecMainStatus",
                     "ActiveState")
    text = box.journal(since)
    clean = rc == 0 and props.get("Result") == "success" and \
        props.get("ExecMainStatus") == "0" and \
        props.get("ActiveState") == "inactive" and "stopped" in text and \
        "stop timeout" not in text
    st.check(t0, clean, "systemctl stop cfpm", "success, exit 0, cfpm's "
             "\"stopped\"", "exit %d, %r" % (rc, props), text[-400:])


def check_upgrade(st, box, token, ids, second):
    t0 = time.monotonic()
    box.request("GET", "/ping")         # socket activation: running
    main = box.show("cfpm.service", "MainPID")["MainPID"]
    sock = box.show("cfpm.socket", "ActiveEnterTimestampMonotonic")
    load = Traffic(box, token, ids)
    ct.wait_for(lambda: load.count() > 20, 10)
    rc, out, err = box.sh("apt-get install -y -q %s/cfpm/%s" % (
        INSIDE, os.path.basename(second)), INSTALL_TIMEOUT)
    time.sleep(2)
    n, errors = load.stop()
    version = box.out("dpkg-query -W -f='${Version}' cfpm")
    now = box.show("cfpm.service", "MainPID")["MainPID"]
    sock_kept = box.show("cfpm.socket",
                         "ActiveEnterTimestampMonotonic") == sock
    st.check(t0, rc == 0 and version.endswith("+deploy1") and
             now not in ("0", main) and sock_kept and n > 0 and not errors,
             "package upgrade under a request loop", "0 errors, the service "
             "restarted, its sockets kept", "%s, %d requests, %d errors %r, "
             "master %s -> %s, sockets kept %s" % (
                 version, n, len(errors), sorted(set(errors)), main, now,
                 sock_kept), (out + err)[-800:])


def check_security(st, box):
    t0 = time.monotonic()
    out = box.out("systemd-analyze security cfpm.service --no-pager")
    m = re.search(r"Overall exposure level for cfpm\.service: ([\d.]+)", out)
    level = float(m.group(1)) if m else None
    st.check(t0, level is not None and level <= EXPOSURE_MAX,
             "systemd-analyze security cfpm.service", "exposure <= %.1f" %
             EXPOSURE_MAX, level if level is not None else out[-200:])


def check_journal(st, box, before, loop):
    """before: workers killed before the crash-loop step; loop: the
    count after it."""
    t0 = time.monotonic()
    text = box.journal(0)
    n = text.count("killed by signal")
    st.check(t0, IGNORED not in text and before == 0 and n == loop,
             "the journal of the whole run", "no \"%s\", no worker killed "
             "outside the crash-loop step" % IGNORED, "%d \"%s\", %d killed "
             "before the step, %d in it, %d after it" % (
                 text.count(IGNORED), IGNORED, before, loop - before,
                 n - loop))


def check_remove(st, box):
    t0 = time.monotonic()
    rc, out, err = box.sh("apt-get remove -y -q cfpm", INSTALL_TIMEOUT)
    units = box.out("systemctl list-units --all --plain --no-legend "
                    "'cfpm*'")
    active = [ln for ln in units.splitlines() if " active " in ln]
    left = box.out("ls -d /run/cfpm /run/cfpm/* /etc/nginx/sites-enabled/cfpm"
                   " 2>/dev/null; true")
    nginx_ok = box.sh("nginx -t")[0] == 0 and box.active("nginx") == "active"
    r = box.request("GET", "/health")
    default = box.request("GET", "/", port=DEFAULT_SITE)
    refused = r.status == 0 and "Connection refused" in r.reason
    st.check(t0, rc == 0 and not active and not left and nginx_ok and
             refused and default.status == 200, "apt-get remove cfpm",
             "every unit stopped, nothing left in /run, the site disabled: "
             "127.0.0.1:%d refused, not 502" % SITE, "exit %d, active units "
             "%r, left %r, nginx ok %s, :%d answers %s, :%d answers %d" % (
                 rc, active, left, nginx_ok, SITE, r.status or r.reason,
                 DEFAULT_SITE, default.status), (out + err)[-600:])


def run_checks(st, box, second):
    token = check_activation(st, box)
    if not token:
        # Each would wait out its own timeouts against a pool that never
        # served: say so once instead.
        st.check(time.monotonic(), False, "the checks that need a serving "
                 "pool", "run", "not run: no request served (see above)")
        check_security(st, box)
        check_remove(st, box)
        return
    ids = check_api(st, box, token) or [1]
    check_status_and_workers(st, box)
    check_reloads(st, box, token, ids)
    check_refused(st, box, token)
    check_database_down(st, box, token)
    before = crashes(box)
    loop = check_crash_loop(st, box)
    check_stop(st, box)
    check_upgrade(st, box, token, ids, second)
    check_security(st, box)
    check_journal(st, box, before, loop)
    check_remove(st, box)


def deploy(tap, st, tmp):
    built = build_packages(st, tmp)
    root = cached_root(st, tmp) if built else None
    files = fetch(st, root, built[0]) if root else None
    if not files:
        return
    binds = [(os.path.join(CACHE, "archives"), INSIDE + "/debs"),
             (os.path.dirname(built[0]), INSIDE + "/cfpm")]
    box = boot(st, tap, tmp, root, binds)
    if box is None:
        return
    try:
        if install(st, box, files, built[0]) and follow_readme(st, box):
            run_checks(st, box, built[1])
    finally:
        t0 = time.monotonic()
        box.net.close()
        left = box.c.destroy()
        st.check(t0, not left, "teardown", "powered off, cgroups and the "
                 "copy removed", left or "nothing left")


def why_not():
    """Why this test cannot run here at all (skip), or None."""
    if os.environ.get(debs.GUARD):
        return "inside a build test_package or test_deploy started"
    if SANITIZERS:
        return "sanitizer build: the deployment test runs in the plain " \
            "build (it tests the package, not the sanitizers)"
    if not os.path.isdir(os.path.join(SRCDIR, "debian")):
        return "no debian/ in the source tree (a release tarball): no " \
            "package to deploy"
    if os.geteuid() != 0:
        return "needs root: systemd-nspawn cannot boot a machine otherwise"
    return None


def on_alarm(signum, frame):
    raise SystemExit("test_deploy: over %d s" % TEST_TIMEOUT)


def body(tap):
    tools = [t for t in ("debootstrap", "systemd-nspawn", "nsenter",
                         "apt-get", "dpkg-buildpackage")
             if shutil.which(t) is None]
    if not tap.ok(not tools, "debootstrap, systemd-nspawn, nsenter, "
                  "apt-get, dpkg-buildpackage are installed", "missing: %s "
                  "(tools/install-deps)" % " ".join(tools)):
        return
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT)
    st = Steps(tap)
    tmp = tempfile.mkdtemp(prefix="cfpm-deploy-", dir="/var/tmp")
    t0 = time.monotonic()
    try:
        os.makedirs(CACHE, exist_ok=True)
        with nspawn.lock(os.path.join(CACHE, "lock"), LOCK_TIMEOUT):
            deploy(tap, st, tmp)
    finally:
        signal.alarm(0)
        st.table()
        tap.diag("test_deploy: %.1f s in all" % (time.monotonic() - t0))
        if os.environ.get("CFPM_KEEP_TMP") == "1":
            tap.diag("kept temp dir %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    reason = why_not()
    if reason:
        sys.exit(ct.TAP.skip_all(reason))
    ct.main(body)
