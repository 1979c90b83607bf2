"""
versions.py: versions.json — every component that shapes the numbers.
A tool that is missing is recorded as null, not an error.
"""

import os
import platform
import re
import subprocess

from . import candidates, nginx, pg


def _cmd(argv, pattern=None, cwd=None):
    """First line of argv's output (stdout+stderr), or the first match of
    pattern in it; None if the command is missing or fails."""
    try:
        p = subprocess.run(argv, capture_output=True, timeout=30, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout + p.stderr).decode("utf-8", "replace").strip()
    if pattern:
        m = re.search(pattern, text)
        return m.group(1) if m else None
    return text.splitlines()[0] if text else None


def _deb(pkgs):
    """{package: version} of installed Debian packages."""
    out = {}
    for name in pkgs:
        v = _cmd(["dpkg-query", "-W", "-f=${Version}", name])
        out[name] = v if v and "no packages" not in v else None
    return out


def collect(srcdir, builddir):
    """The versions.json document."""
    rev = _cmd(["git", "rev-parse", "HEAD"], cwd=srcdir)
    dirty = _cmd(["git", "status", "--porcelain", "--untracked-files=no"],
                 cwd=srcdir)
    return {
        "cfpm_git_rev": rev, "cfpm_git_dirty": bool(dirty),
        "cfpm": _cmd([os.path.join(builddir, "cfpm"), "-v"]),
        "nginx": _cmd([nginx.NGINX, "-v"], r"nginx/(\S+)"),
        "postgresql": _cmd([os.path.join(pg.PG_BINDIR, "postgres"),
                            "--version"], r"(\d+\.\d+\S*)"),
        "php": _cmd([candidates.PHP_FPM, "-v"], r"PHP (\S+)"),
        "go": _cmd([candidates.GO, "version"], r"go version go(\S+)"),
        "openssl": _cmd(["openssl", "version"], r"OpenSSL (\S+)"),
        "wrk": _cmd(["wrk", "-v"], r"wrk (\S+)"),
        "gcc": _cmd(["gcc", "-dumpfullversion"]),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "debian_packages": _deb([
            "nginx-core", "nginx", "postgresql-15", "php8.2-fpm",
            "php8.2-pgsql", "golang-go", "golang-github-jackc-pgx-v4-dev",
            "golang-github-golang-jwt-jwt-dev", "libfcgi-dev", "libssl3",
            "wrk", "postgresql-contrib"]),
    }


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
