"""
deb.py: cfpm's Debian package built from the tree the way a Debian
maintainer combines a release with its packaging: the release tree
(make distdir) with debian/ copied in, then dpkg-buildpackage -b -us -uc.
Shared by test_package (which looks inside the package and lints it) and
test_deploy (which installs it, and a later version of it, on a booted
Debian).

Every step runs in its own process group (registered with proc, so it is
killed if the test is stopped) with a deadline, its output appended to a
log, without the calling make's MAKEFLAGS (a "make check TESTS=..." must
not reach the package build's own make check) and with GUARD set: a
test that finds GUARD in its environment is running inside a build it
started and skips itself, so no build can start another.
"""

import email.utils
import os
import shutil
import signal
import subprocess

from harness import proc

GUARD = "CFPM_PACKAGE_BUILD"    # set in the builds started here
BUILD_TIMEOUT = 900             # seconds for a build on a busy 2-core machine
# What a make passes to the makes below it: none of it may reach a build
# started here.
MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKELEVEL",
            "MAKEOVERRIDES")
TOOLS = ("dpkg-buildpackage", "dpkg-checkbuilddeps", "dh")


def build_env(**extra):
    """This process's environment without MAKE_ENV, with GUARD set and
    extra added."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_ENV}
    env[GUARD] = "1"
    env.update(extra)
    return env


def build(argv, log, cwd, env=None, timeout=BUILD_TIMEOUT):
    """Runs one build step in its own process group, output appended to
    log after a "$ argv" line; a step that outlives timeout has its whole
    group killed. Returns the exit status (-1 after a timeout)."""
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(argv))
    p = proc.spawn(argv, log_path=log, env=env or build_env(), cwd=cwd)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return -1


def missing(srcdir, tools=()):
    """Why the package cannot be built from srcdir here (no debian/, a
    tool of TOOLS or tools not installed, build dependencies missing),
    or None."""
    if not os.path.isdir(os.path.join(srcdir, "debian")):
        return "no debian/ in the source tree (a release tarball)"
    for tool in TOOLS + tuple(tools):
        if shutil.which(tool) is None:
            return "%s not installed (tools/install-deps)" % tool
    rc, out, err = proc.run(["dpkg-checkbuilddeps"], cwd=srcdir)
    if rc != 0:
        return "build dependencies missing: %s" % (err or out).strip()
    return None


def release_tree(srcdir, builddir, top, log):
    """make distdir from builddir into top/cfpm, with srcdir's debian/
    copied in. Returns the tree's path, or None (the log says why)."""
    tree = os.path.join(top, "cfpm")
    if build(["make", "-s", "distdir", "distdir=" + tree,
              "top_distdir=" + tree], log, builddir) != 0:
        return None
    shutil.copytree(os.path.join(srcdir, "debian"),
                    os.path.join(tree, "debian"))
    return tree


def new_version(tree, version, change):
    """Puts a debian/changelog entry for version (change its one line,
    the maintainer of the entry below) on top of tree's changelog: the
    next dpkg-buildpackage builds that version."""
    path = os.path.join(tree, "debian", "changelog")
    with open(path, encoding="utf-8") as f:
        old = f.read()
    sign = next(ln for ln in old.splitlines() if ln.startswith(" -- "))
    who = sign[4:].split("  ")[0]
    entry = "cfpm (%s) unstable; urgency=medium\n\n  * %s\n\n -- %s  %s\n\n" % (
        version, change, who, email.utils.formatdate())
    with open(path, "w", encoding="utf-8") as f:
        f.write(entry + old)


def build_deb(tree, log, options="parallel=2", again=False):
    """dpkg-buildpackage -b -us -uc in tree with DEB_BUILD_OPTIONS
    options (the caller's own DEB_BUILD_OPTIONS win); again: -nc, on a
    tree built before (a new version from the same build). Returns (exit
    status, the path of the cfpm .deb of the version built, or None)."""
    env = build_env(DEB_BUILD_OPTIONS=os.environ.get("DEB_BUILD_OPTIONS",
                                                     options))
    argv = ["dpkg-buildpackage", "-b", "-us", "-uc"] + (["-nc"] if again
                                                        else [])
    rc = build(argv, log, tree, env)
    rc2, version, _ = proc.run(["dpkg-parsechangelog", "-S", "Version"],
                               cwd=tree)
    deb = os.path.join(os.path.dirname(tree), "cfpm_%s_%s.deb" % (
        version.strip(), deb_arch()))
    return rc, deb if rc == 0 and rc2 == 0 and os.path.exists(deb) else None


def deb_arch():
    """This machine's Debian architecture (amd64, arm64, ...)."""
    return proc.run(["dpkg", "--print-architecture"],
                    check=True)[1].strip()
