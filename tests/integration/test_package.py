#!/usr/bin/env python3
"""
test_package.py: cfpm installs and packages as the README says (TAP).

1. make install. A fresh out-of-tree build configured with
   --prefix=/opt/cfpm --sysconfdir=/etc/opt is installed with DESTDIR.
   The tree holds exactly what an operator needs: cfpm in sbin,
   cfpm-token in bin, the three man pages, the systemd units, the
   sysusers.d, tmpfiles.d and logrotate entries, the examples, and no
   configuration. The installed cfpm's default configuration is
   /etc/opt/cfpm/cfpm.conf; the units name the installed program and
   configuration and agree with the sysusers.d and tmpfiles.d entries;
   systemd-analyze verify accepts them (as root: the tree is bind-mounted
   at its real paths in a private mount namespace); systemd-sysusers,
   systemd-tmpfiles and logrotate accept their entries; make uninstall
   removes everything.
2. The Debian package. The release tree (make distdir) with debian/ added,
   as a Debian maintainer would combine them, is built with
   dpkg-buildpackage -b -us -uc; the .deb holds the files, conffiles and
   maintainer scripts debian/ promises, and lintian reports no error and
   no warning. Skipped in the sanitizer build (a package is built with
   Debian's flags), without debian/ (a release tarball has none) and when
   the build dependencies, debhelper or lintian are missing
   (tools/install-deps installs them).

Builds run without the calling make's MAKEFLAGS (a "make check
TESTS=..." must not reach the package build's own make check) and with
CFPM_PACKAGE_BUILD set: this test skips itself under it, so no build can
start another.

Environment: CFPM_SRCDIR, CFPM_BUILDDIR, CFPM_SANITIZERS (from make
check); CFPM_KEEP_TMP=1 keeps the temp dir.
"""

import glob
import os
import pwd
import re
import shutil
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cfpmtest import TAP, run, tail  # noqa: E402
from harness import deb as debs  # noqa: E402
from harness.deb import GUARD, build  # noqa: E402
from harness.paths import SANITIZERS  # noqa: E402

SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
PREFIX = "/opt/cfpm"
SYSCONFDIR = "/etc/opt"
CONF = SYSCONFDIR + "/cfpm/cfpm.conf"
UNITDIR = PREFIX + "/lib/systemd/system"

# What make install must put in place, and nothing else.
INSTALLED = {
    PREFIX + "/sbin/cfpm",
    PREFIX + "/bin/cfpm-token",
    PREFIX + "/share/man/man8/cfpm.8",
    PREFIX + "/share/man/man5/cfpm.conf.5",
    PREFIX + "/share/man/man1/cfpm-token.1",
    UNITDIR + "/cfpm.service",
    UNITDIR + "/cfpm.socket",
    UNITDIR + "/cfpm-status.socket",
    PREFIX + "/lib/sysusers.d/cfpm.conf",
    PREFIX + "/lib/tmpfiles.d/cfpm.conf",
    SYSCONFDIR + "/logrotate.d/cfpm",
    PREFIX + "/share/doc/cfpm/README.md",
    PREFIX + "/share/doc/cfpm/examples/cfpm.conf",
    PREFIX + "/share/doc/cfpm/examples/nginx/cfpm.conf",
    PREFIX + "/share/doc/cfpm/examples/nginx/nginx.conf",
    PREFIX + "/share/cfpm/sql/schema.sql",
    PREFIX + "/share/cfpm/sql/role.sql",
}

# What the .deb must hold (besides directories and the dbgsym package).
PACKAGED = {
    "/usr/sbin/cfpm", "/usr/bin/cfpm-token",
    "/usr/share/man/man8/cfpm.8.gz", "/usr/share/man/man5/cfpm.conf.5.gz",
    "/usr/share/man/man1/cfpm-token.1.gz",
    "/lib/systemd/system/cfpm.service", "/lib/systemd/system/cfpm.socket",
    "/lib/systemd/system/cfpm-status.socket",
    "/usr/lib/sysusers.d/cfpm.conf", "/usr/lib/tmpfiles.d/cfpm.conf",
    "/etc/logrotate.d/cfpm", "/etc/cfpm/cfpm.conf",
    "/usr/share/doc/cfpm/examples/cfpm.conf",
    "/usr/share/doc/cfpm/examples/nginx/cfpm.conf",
    "/usr/share/doc/cfpm/examples/nginx/nginx.conf",
    "/usr/share/doc/cfpm/copyright",
    "/usr/share/cfpm/sql/schema.sql", "/usr/share/cfpm/sql/role.sql",
    "/etc/nginx/sites-available/cfpm",
}
CONFFILES = {"/etc/cfpm/cfpm.conf", "/etc/logrotate.d/cfpm",
             "/etc/nginx/sites-available/cfpm"}
# No libfcgi: cfpm speaks FastCGI itself (libfcgi-dev only builds it, for
# the protocol's constants in fastcgi.h).
SHLIBS = ("libpq5", "libssl3", "libjansson4", "libseccomp2")
# What the units run besides cfpm: /bin/kill (ExecReload).
RUNS = ("procps",)


def files_under(root):
    """Paths of the files and links under root, as absolute paths."""
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add("/" + os.path.relpath(os.path.join(d, n), root))
    return out


def unit(path):
    """A unit file as {key: [values]} (sections merged, order kept)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and line[0] not in "#;[" and "=" in line:
                k, v = line.split("=", 1)
                out.setdefault(k.strip(), []).append(v.strip())
    return out


def one(u, key):
    v = u.get(key, [])
    return v[0] if len(v) == 1 else v


# ---------------------------------------------------------------------------
# 1. make install

def check_units(t, dest):
    svc = unit(dest + UNITDIR + "/cfpm.service")
    sock = unit(dest + UNITDIR + "/cfpm.socket")
    cfpm = PREFIX + "/sbin/cfpm"
    t.is_(one(svc, "ExecStart"), "%s -c %s" % (cfpm, CONF),
          "cfpm.service: ExecStart names the installed cfpm and config")
    t.is_(one(svc, "ExecStartPre"), "%s -t -c %s" % (cfpm, CONF),
          "cfpm.service: ExecStartPre checks that config first")
    t.is_(svc.get("ExecReload"), ["%s -t -c %s" % (cfpm, CONF),
                                  "/bin/kill -HUP $MAINPID"],
          "cfpm.service: ExecReload checks the config, then SIGHUP")
    t.is_(one(svc, "ReadOnlyPaths"), SYSCONFDIR + "/cfpm",
          "cfpm.service: the configuration directory is read-only")
    with open(dest + UNITDIR + "/cfpm.service", encoding="utf-8") as f:
        text = f.read()
    t.ok(not re.search(r'@[a-z_]+@', text), "cfpm.service: no "
         "placeholder left", re.findall(r'@[a-z_]+@', text))
    for key, want in (("Type", "notify"), ("User", "cfpm"),
                      ("LogsDirectory", "cfpm"), ("RuntimeDirectory", "cfpm"),
                      ("RuntimeDirectoryPreserve", "yes")):
        t.is_(one(svc, key), want, "cfpm.service: %s=%s" % (key, want))
    t.like(one(svc, "TimeoutStartSec"), r'^[1-9][0-9]*s?$',
           "cfpm.service: TimeoutStartSec bounds the start")
    docs = " ".join(svc.get("Documentation", []) +
                    sock.get("Documentation", []))
    pages = re.findall(r'man:([\w.-]+)\((\d)\)', docs)
    t.ok(pages and all(os.path.exists("%s%s/share/man/man%s/%s.%s" %
                                      (dest, PREFIX, sec, name, sec))
                       for name, sec in pages),
         "the units' Documentation= pages are installed (%s)" % docs)
    t.is_(one(sock, "ListenStream"), "/run/cfpm/cfpm.sock",
          "cfpm.socket: the pool socket in /run/cfpm")
    t.is_(one(sock, "RemoveOnStop"), "yes", "cfpm.socket: no socket file "
          "left once stopped")
    return svc, sock


def check_entries(t, dest, svc, sock):
    """sysusers.d and tmpfiles.d agree with the units and are accepted
    by systemd-sysusers and systemd-tmpfiles in a scratch root."""
    with open(dest + PREFIX + "/lib/sysusers.d/cfpm.conf") as f:
        users = [ln.split() for ln in f if ln.strip() and ln[0] != "#"]
    with open(dest + PREFIX + "/lib/tmpfiles.d/cfpm.conf") as f:
        dirs = [ln.split() for ln in f if ln.strip() and ln[0] != "#"]
    t.ok(any(u[:2] == ["u", one(svc, "User")] for u in users) and
         one(sock, "SocketUser") == one(svc, "User"),
         "sysusers.d creates the user cfpm.service and cfpm.socket name")
    t.ok(["d", "/run/cfpm", "0755", "cfpm", "cfpm", "-"] in dirs and
         os.path.dirname(one(sock, "ListenStream")) == "/run/" +
         one(svc, "RuntimeDirectory"),
         "tmpfiles.d creates /run/cfpm owned by cfpm:cfpm, the socket's "
         "directory and the RuntimeDirectory", dirs)
    scratch = tempfile.mkdtemp(prefix="root-", dir=os.path.dirname(dest))
    for sub in ("etc", "run", "usr/lib/sysusers.d", "usr/lib/tmpfiles.d"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)
    shutil.copy(dest + PREFIX + "/lib/sysusers.d/cfpm.conf",
                scratch + "/usr/lib/sysusers.d/")
    shutil.copy(dest + PREFIX + "/lib/tmpfiles.d/cfpm.conf",
                scratch + "/usr/lib/tmpfiles.d/")
    for tool, argv in (("systemd-sysusers", ["cfpm.conf"]),
                       ("systemd-tmpfiles", ["--create", "cfpm.conf"])):
        if shutil.which(tool) is None:
            t.skip("%s accepts the entry" % tool, tool + " not installed")
            continue
        rc, out, err = run([tool, "--root=" + scratch] + argv)
        t.ok(rc == 0, "%s --root accepts the installed entry" % tool,
             out, err)
    passwd = os.path.join(scratch, "etc/passwd")
    entry = []
    if os.path.exists(passwd):
        with open(passwd) as f:
            entry = [ln.strip().split(":") for ln in f
                     if ln.startswith("cfpm:")]
    t.ok(entry and entry[0][6] in ("/usr/sbin/nologin", "/sbin/nologin"),
         "the cfpm user is created, without a login shell", entry)
    st = None
    if os.path.isdir(os.path.join(scratch, "run/cfpm")):
        st = os.stat(os.path.join(scratch, "run/cfpm"))
    t.ok(st is not None and entry and st.st_uid == int(entry[0][2]) and
         stat.S_IMODE(st.st_mode) == 0o755,
         "/run/cfpm is created owned by that user, mode 0755")


def check_verify(t, dest, tmp):
    """systemd-analyze verify on the installed units, with the installed
    tree bind-mounted at its real paths in a private mount namespace."""
    analyze, unshare = shutil.which("systemd-analyze"), shutil.which("unshare")
    why = None
    if analyze is None or unshare is None:
        why = "systemd-analyze or unshare not installed"
    elif os.geteuid() != 0:
        why = "needs root (bind mounts in a private mount namespace)"
    elif not (os.path.isdir("/opt") and os.path.isdir(SYSCONFDIR)):
        why = "/opt or %s missing on this machine" % SYSCONFDIR
    if why:
        t.skip("systemd-analyze verify accepts the units", why)
        t.skip("control: verify refuses a unit naming a missing program",
               why)
        return
    man = "" if shutil.which("man") else "--man=no "
    bad = os.path.join(tmp, "cfpm.service")
    with open(dest + UNITDIR + "/cfpm.service") as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace("ExecStart=" + PREFIX + "/sbin/cfpm ",
                             "ExecStart=" + PREFIX + "/sbin/nonexistent "))
    script = ("mount --bind %(d)s/opt /opt && "
              "mount --bind %(d)s%(etc)s %(etc)s && "
              "MANPATH=%(p)s/share/man systemd-analyze verify %(man)s%%s" %
              {"d": dest, "etc": SYSCONFDIR, "p": PREFIX, "man": man})
    units = "%s/cfpm.service %s/cfpm.socket %s/cfpm-status.socket" % (
        UNITDIR, UNITDIR, UNITDIR)
    rc, out, err = run([unshare, "-m", "--propagation", "private", "sh",
                        "-c", script % units], timeout=120)
    t.ok(rc == 0 and err.strip() == "",
         "systemd-analyze verify accepts the installed units", out, err)
    rc, out, err = run([unshare, "-m", "--propagation", "private", "sh",
                        "-c", script % bad], timeout=120)
    t.ok(rc != 0 and "nonexistent" in err,
         "control: verify refuses a unit naming a missing program", err)


def check_logrotate(t, dest, tmp, svc):
    path = dest + SYSCONFDIR + "/logrotate.d/cfpm"
    with open(path) as f:
        text = f.read()
    t.ok(("/var/log/%s/*.log" % one(svc, "LogsDirectory")) in text,
         "logrotate: the files of cfpm.service's LogsDirectory")
    t.like(text, r'systemctl kill --kill-whom=main --signal=SIGUSR1 '
           r'cfpm\.service', "logrotate: SIGUSR1 to the master only")
    t.like(text, r'\n\s*su cfpm cfpm\n',
           "logrotate: rotates as cfpm, the directory's owner")
    logrotate = shutil.which("logrotate") or (
        "/usr/sbin/logrotate" if os.path.exists("/usr/sbin/logrotate")
        else None)
    try:
        pwd.getpwnam("cfpm")
        user = True
    except KeyError:
        user = False
    if logrotate is None or not user:
        why = "logrotate not installed" if logrotate is None else \
            "no user cfpm on this machine (its su line needs one)"
        t.skip("logrotate -d accepts the file", why)
        t.skip("control: logrotate -d refuses an unknown directive", why)
        return
    state = os.path.join(tmp, "logrotate.state")
    rc, out, err = run([logrotate, "-d", "-s", state, path])
    t.ok(rc == 0 and "error:" not in err + out,
         "logrotate -d accepts the installed file", err)
    bad = os.path.join(tmp, "logrotate.bad")
    with open(bad, "w") as f:
        f.write(text.replace("\tweekly\n", "\tweeklyy\n"))
    rc, out, err = run([logrotate, "-d", "-s", state, bad])
    t.ok(rc != 0 or "error:" in err + out,
         "control: logrotate -d refuses an unknown directive")


def test_install(t, tmp):
    if os.path.exists(os.path.join(SRCDIR, "config.status")):
        t.skip("make install with --prefix and --sysconfdir",
               "the source tree is configured in place: no out-of-tree "
               "build possible")
        return
    build_dir, dest = os.path.join(tmp, "build"), os.path.join(tmp, "root")
    os.makedirs(build_dir)
    log = os.path.join(tmp, "install.log")
    steps = (
        [os.path.join(SRCDIR, "configure"), "-q", "--prefix=" + PREFIX,
         "--sysconfdir=" + SYSCONFDIR],
        ["make", "-s", "-j2"],
        ["make", "-s", "install", "DESTDIR=" + dest],
    )
    for argv in steps:
        rc = build(argv, log, build_dir)
        if rc != 0:
            break
    t.ok(rc == 0, "configure --prefix=%s --sysconfdir=%s, make, make "
         "install DESTDIR" % (PREFIX, SYSCONFDIR), tail(log))
    if rc != 0:
        return
    got = files_under(dest)
    t.ok(got == INSTALLED, "make install puts exactly the operator files "
         "in place", "missing: %s" % sorted(INSTALLED - got),
         "unexpected: %s" % sorted(got - INSTALLED))
    t.ok(not os.path.exists(dest + CONF), "make install writes no "
         "configuration")
    t.ok(all(os.access(dest + PREFIX + p, os.X_OK)
             for p in ("/sbin/cfpm", "/bin/cfpm-token")),
         "cfpm in sbin and cfpm-token in bin are executable")
    rc, out, _ = run([dest + PREFIX + "/sbin/cfpm", "--help"])
    t.ok(rc == 0 and "(default %s)" % CONF in out,
         "the installed cfpm's default configuration is %s" % CONF, out)
    rc, out, _ = run([dest + PREFIX + "/bin/cfpm-token", "--help"])
    t.ok(rc == 0 and "usage: cfpm-token keygen" in out,
         "the installed cfpm-token runs")
    svc, sock = check_units(t, dest)
    check_entries(t, dest, svc, sock)
    check_verify(t, dest, tmp)
    check_logrotate(t, dest, tmp, svc)
    rc = build(["make", "-s", "uninstall", "DESTDIR=" + dest], log,
               build_dir)
    left = files_under(dest)
    t.ok(rc == 0 and not left, "make uninstall removes every file",
         tail(log), sorted(left))


# ---------------------------------------------------------------------------
# 2. The Debian package

def deb_missing():
    """Why the package cannot be built here, or None."""
    if SANITIZERS:
        return "sanitizer build: the package is built with Debian's flags " \
            "(the plain build's make check builds it)"
    return debs.missing(SRCDIR, ("lintian",))


def test_deb(t, tmp):
    why = deb_missing()
    if why:
        t.skip("dpkg-buildpackage -b -us -uc, lintian", why)
        return
    top = os.path.join(tmp, "deb")
    log = os.path.join(tmp, "deb.log")
    os.makedirs(top)
    tree = debs.release_tree(SRCDIR, BUILDDIR, top, log)
    t.ok(tree is not None, "make distdir: the release tree", tail(log))
    if tree is None:
        return
    rc, deb = debs.build_deb(tree, log)
    t.ok(rc == 0, "dpkg-buildpackage -b -us -uc builds the package",
         tail(log))
    with open(log, encoding="utf-8", errors="replace") as f:
        out, err = f.read(), ""
    debs_built = [p for p in glob.glob(os.path.join(top, "cfpm_*.deb"))]
    changes = glob.glob(os.path.join(top, "cfpm_*.changes"))
    if rc != 0 or debs_built != [deb] or len(changes) != 1:
        t.ok(False, "one .deb and one .changes", debs_built, changes)
        return
    t.like(out + err, r'# PASS: +[1-9]', "the package build ran the "
           "offline tests (dh_auto_test)")
    t.ok(not re.search(r'# (FAIL|ERROR): +[1-9]', out + err),
         "none of them failed")
    fs = os.path.join(tmp, "deb-fs")
    ctl = os.path.join(tmp, "deb-control")
    rc1, _, e1 = run(["dpkg-deb", "-x", deb, fs])
    rc2, _, e2 = run(["dpkg-deb", "-e", deb, ctl])
    t.ok(rc1 == 0 and rc2 == 0, "dpkg-deb extracts the package", e1, e2)
    got = files_under(fs)
    t.ok(PACKAGED <= got, "the package holds the programs, man pages, "
         "units, entries, conffiles and examples",
         "missing: %s" % sorted(PACKAGED - got))
    t.ok(not (got & {"/usr/sbin/cfpm-token"}), "cfpm-token is not in sbin")
    svc = unit(fs + "/lib/systemd/system/cfpm.service")
    t.is_(one(svc, "ExecStart"), "/usr/sbin/cfpm -c /etc/cfpm/cfpm.conf",
          "packaged cfpm.service: /usr/sbin/cfpm and /etc/cfpm/cfpm.conf")
    with open(os.path.join(SRCDIR, "etc/cfpm.conf"), "rb") as a, \
            open(fs + "/etc/cfpm/cfpm.conf", "rb") as b:
        t.ok(a.read() == b.read(), "/etc/cfpm/cfpm.conf is etc/cfpm.conf")
    for src, dst in (("etc/nginx/cfpm.conf", "/etc/nginx/sites-available/cfpm"),
                     ("sql/schema.sql", "/usr/share/cfpm/sql/schema.sql"),
                     ("sql/role.sql", "/usr/share/cfpm/sql/role.sql")):
        with open(os.path.join(SRCDIR, src), "rb") as a, \
                open(fs + dst, "rb") as b:
            t.ok(a.read() == b.read(), "%s is %s" % (dst, src))
    with open(os.path.join(ctl, "conffiles")) as f:
        conffiles = {ln.strip() for ln in f if ln.strip()}
    t.is_(conffiles, CONFFILES, "conffiles: cfpm.conf, logrotate and the "
          "nginx site")
    scripts = {}
    for name in ("postinst", "prerm", "postrm"):
        with open(os.path.join(ctl, name)) as f:
            scripts[name] = f.read()
    t.ok("systemd-sysusers" in scripts["postinst"] and
         "systemd-tmpfiles" in scripts["postinst"],
         "postinst creates the cfpm user and /run/cfpm")
    # debhelper's enable snippet enables on first installation; the one
    # of --no-enable only keeps an enabled unit enabled, guarded by
    # "debian-installed" (the unit was installed by the package before).
    post = scripts["postinst"]
    t.ok("deb-systemd-invoke start" not in post and
         "_dh_action=start" not in post and
         post.count("deb-systemd-helper enable") ==
         post.count("deb-systemd-helper debian-installed") > 0,
         "postinst neither starts nor newly enables a unit")
    t.like(scripts["postinst"], r"try-restart 'cfpm\.service' >",
           "an upgrade restarts a running service, not its socket")
    t.like(scripts["prerm"], r'"\$1" = remove .*\n\s*deb-systemd-invoke '
           r'stop cfpm\.service cfpm\.socket',
           "prerm stops the pool on removal")
    t.like(scripts["postrm"], r'remove\)\n(.*\n)*?\s*rmdir "\$\{DPKG_ROOT:-\}'
           r'/run/cfpm"', "postrm removes /run/cfpm on removal")
    t.like(scripts["postrm"], r'rm -f "\$\{DPKG_ROOT:-\}\$site"\n(.*\n)*?\s*'
           r'deb-systemd-invoke try-reload-or-restart nginx\.service',
           "postrm disables the nginx site it enabled and reloads nginx")
    rc, version, _ = run(["dpkg-deb", "-f", deb, "Version"])
    rc2, out, _ = run([os.path.join(BUILDDIR, "cfpm"), "--version"])
    t.ok(rc == 0 and rc2 == 0 and out.split()[-1] == version.strip(),
         "the package's version is cfpm's (debian/changelog, configure.ac)",
         version, out)
    rc, fields, _ = run(["dpkg-deb", "-f", deb, "Depends"])
    t.ok(rc == 0 and all(lib in fields for lib in SHLIBS) and
         "systemd-sysusers" in fields and
         all(pkg in re.split(r"[ ,|]+", fields) for pkg in RUNS),
         "Depends: the shared libraries, sysusers and procps (/bin/kill "
         "for ExecReload)", fields)
    lint = os.path.join(tmp, "lintian.log")
    rc = build(["lintian", "-I", "--pedantic", changes[0]], lint, top)
    with open(lint, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    bad = [ln for ln in lines if ln[:2] in ("E:", "W:")]
    t.ok(rc in (0, 1) and not bad, "lintian on the .changes: no error, "
         "no warning", "lintian exit %d" % rc, *bad)
    for ln in lines:
        if ln[:2] in ("I:", "P:"):
            t.diag("lintian: " + ln)


def main():
    if os.environ.get(GUARD):
        print("1..0 # SKIP inside a build test_package started")
        return 0
    t = TAP()
    tmp = tempfile.mkdtemp(prefix="cfpm-pkg-")
    try:
        test_install(t, tmp)
        test_deb(t, tmp)
    finally:
        if os.environ.get("CFPM_KEEP_TMP") == "1":
            print("# kept temp dir %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
