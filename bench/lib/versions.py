"""
versions.py: versions.json — every component that shapes the numbers.
A tool that is missing is recorded as null, not an error.
"""

import json
import os
import platform
import re
import subprocess

from harness import paths

from . import candidates


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
        "nginx": _cmd([paths.NGINX, "-v"], r"nginx/(\S+)"),
        "postgresql": _cmd([os.path.join(paths.PG_BINDIR, "postgres"),
                            "--version"], r"(\d+\.\d+\S*)"),
        "php": _cmd([candidates.PHP_FPM, "-v"], r"PHP (\S+)"),
        "go": _cmd([candidates.GO, "version"], r"go version go(\S+)"),
        "go_toolchain": candidates.GO,
        "go_1_19": _cmd([candidates.GO_1_19, "version"],
                        r"go version go(\S+)"),
        "go_build": dict(candidates.GO_BUILD_ENV, command="go build -o "
                         "events-go main.go", gopath_packages="Debian "
                         "golang-github-jackc-pgx-v4-dev, "
                         "golang-github-golang-jwt-jwt-dev"),
        "node": _cmd([candidates.NODE, "-v"], r"v(\S+)"),
        "node_runtime": _node_runtime(),
        "node_modules": candidates.node_modules(),
        "php_ini": {"php-fpm": candidates.PHP_OPCACHE,
                    "php-fpm-tuned": candidates.PHP_OPCACHE +
                    candidates.PHP_TUNED},
        "cfpm_build": _cfpm_build(builddir),
        "openssl": _cmd(["openssl", "version"], r"OpenSSL (\S+)"),
        "wrk": _cmd(["wrk", "-v"], r"wrk (\S+)"),
        "gcc": _cmd(["gcc", "-dumpfullversion"]),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "debian_packages": _deb([
            "nginx-core", "nginx", "postgresql-15", "php8.2-fpm",
            "php8.2-pgsql", "php8.2-opcache", "golang-go", "golang-1.19-go",
            "golang-1.21-go", "golang-1.22-go", "golang-1.23-go", "nodejs",
            "golang-github-jackc-pgx-v4-dev",
            "golang-github-golang-jwt-jwt-dev", "libfcgi-dev", "libssl3",
            "wrk", "postgresql-contrib"]),
    }


def _node_runtime():
    """Node's bundled components and the flags its binary was built with."""
    text = _cmd([candidates.NODE, "-p", "JSON.stringify({versions: "
                 "process.versions, config: process.config.variables})"])
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        return None
    if doc:
        keep = ("v8", "uv", "openssl", "llhttp")
        cfg = doc["config"]
        return {"versions": {k: doc["versions"].get(k) for k in keep},
                "build": {k: cfg.get(k) for k in (
                    "node_shared_openssl", "openssl_is_fips", "is_debug",
                    "llvm_version", "gas_version", "host_arch",
                    "node_use_v8_platform", "v8_enable_pointer_compression",
                    "node_shared_libuv", "node_use_openssl")}}
    return None


def _cfpm_build(builddir):
    """cfpm's configure line and CFLAGS, from the build's config.log."""
    try:
        with open(os.path.join(builddir, "config.log")) as f:
            text = f.read(200000)
    except OSError:
        return None
    cmd = re.search(r"(?m)^  \$ (.*configure.*)$", text)
    cflags = re.search(r"(?m)^CFLAGS='(.*)'$", text)
    return {"configure": cmd.group(1) if cmd else None,
            "cflags": cflags.group(1) if cflags else None}


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
