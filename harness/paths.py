"""
paths.py: where the source tree, the build and the external tools are.
Read once at import from the environment that make check exports
(Makefile.am, AM_TESTS_ENVIRONMENT), with defaults for a run from the
tree:

  CFPM_SRCDIR     source tree (sql/, etc/nginx/cfpm.conf); default: the
                  directory above this package
  CFPM_BUILDDIR   build tree (cfpm, cfpm-token); default: the source tree
                  if cfpm is built there, else its build/
  CFPM_NGINX      nginx binary
  CFPM_PG_BINDIR  PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
  CFPM_SANITIZERS "yes" when the build has ASan and UBSan (SANITIZERS)
"""

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.dirname(HERE)


def _builddir():
    """$CFPM_BUILDDIR, else the first of the source tree and its build/
    that holds an executable cfpm, else the source tree."""
    d = os.environ.get("CFPM_BUILDDIR")
    if d:
        return d
    for d in (SRCDIR, os.path.join(SRCDIR, "build")):
        if os.access(os.path.join(d, "cfpm"), os.X_OK):
            return d
    return SRCDIR


BUILDDIR = _builddir()
CFPM = os.path.join(BUILDDIR, "cfpm")
CFPM_TOKEN = os.path.join(BUILDDIR, "cfpm-token")
NGINX = os.environ.get("CFPM_NGINX") or shutil.which("nginx") or \
    "/usr/sbin/nginx"
PG_BINDIR = os.environ.get("CFPM_PG_BINDIR") or "/usr/lib/postgresql/15/bin"
SANITIZERS = os.environ.get("CFPM_SANITIZERS") == "yes"
