#!/usr/bin/env python3
"""
test_imports.py: test files import libraries, never each other (TAP).

A test file (tests/*/test_*.py) is a program that make check runs; what
several tests share lives in a library: harness/ (shared with bench/) or
a module of tests/integration/ whose name does not start with test_
(cfpmtest, clientload, apichecks, pgproxy, zabbix). So:

- No Python file of the tree (tests/, harness/, bench/, tools/) imports a
  test file: neither `import test_x` nor `from test_x import ...`, nor
  __import__("test_x") / importlib.import_module("test_x"), nor a
  relative import of one.
- Every tests/*/test_*.py is a test make check runs (named in
  Makefile.am), so a library cannot hide under a test's name.

Imports are read from the syntax tree (ast), not grepped. The local
import graph of tests/ is printed as comments ("# import: A -> B, C").
Negative controls run the same checks on made-up files: a test importing
another in each form, and a test file Makefile.am does not name; each
must be reported.
Environment: CFPM_SRCDIR (the source tree; default: from this file).
"""

import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
sys.path.insert(0, SRCDIR)
from harness.tap import TAP  # noqa: E402

SCANNED = ("tests", "harness", "bench", "tools")   # folders read
TEST_NAME = re.compile(r"^test_\w+\.py$")
DYNAMIC = ("__import__", "import_module")   # calls naming a module by text
PY_SHEBANG = re.compile(rb"^#!.*\bpython")
SHEBANG_BYTES = 64          # how much of a file names its interpreter


def python_files(top):
    """Every Python source below top's SCANNED folders, relative to top,
    sorted: *.py and files whose first line runs python."""
    out = []
    for folder in SCANNED:
        for d, dirs, files in os.walk(os.path.join(top, folder)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for name in files:
                path = os.path.join(d, name)
                if name.endswith(".py") or is_python_script(path):
                    out.append(os.path.relpath(path, top))
    return sorted(out)


def is_python_script(path):
    """True if path is a file without .py whose #! line runs python."""
    try:
        with open(path, "rb") as f:
            return PY_SHEBANG.match(f.read(SHEBANG_BYTES)) is not None
    except OSError:
        return False


def test_modules(files):
    """{module name: path} of the test files (tests/*/test_*.py)."""
    return {os.path.basename(f)[:-3]: f for f in files
            if f.startswith("tests" + os.sep) and
            TEST_NAME.match(os.path.basename(f))}


def imported(tree):
    """(module, line) for every module the syntax tree imports: the
    first component of an absolute name, every name of a relative
    import, and the text given to __import__ / import_module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module:     # absolute, or relative: from .test_x
                out.append((node.module.split(".")[0], node.lineno))
            else:               # from . import test_x
                out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else \
                f.id if isinstance(f, ast.Name) else None
            if name in DYNAMIC:
                out.append((node.args[0].value.split(".")[0], node.lineno))
    return out


def parse(top, rel):
    """The syntax tree of top/rel; raises SyntaxError / OSError."""
    with open(os.path.join(top, rel), "rb") as f:
        return ast.parse(f.read(), rel)


def test_imports_of(top, rel, tests):
    """'module (line N)' for each test file that rel imports."""
    return ["%s (line %d)" % (m, line) for m, line in
            imported(parse(top, rel)) if m in tests]


def unlisted_tests(tests, makefile_text):
    """Test files Makefile.am does not name (not run by make check)."""
    return sorted(p for p in tests.values()
                  if p.replace(os.sep, "/") not in makefile_text)


def local_graph(top, files):
    """{tests/ file: sorted local modules it imports}: the modules of
    tests/integration/ and harness (as harness.NAME)."""
    local = {os.path.basename(f)[:-3] for f in files
             if f.startswith(os.path.join("tests", "integration", ""))}
    graph = {}
    for rel in files:
        if not rel.startswith("tests" + os.sep):
            continue
        names = set()
        for node in ast.walk(parse(top, rel)):
            if isinstance(node, ast.ImportFrom) and node.module == \
                    "harness":
                names |= {"harness." + a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module if node.module.startswith(
                    "harness") else node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        graph[rel] = sorted(n for n in names
                            if n in local or n.startswith("harness"))
    return graph


def check_tree(tap, top):
    files = python_files(top)
    tests = test_modules(files)
    tap.ok(len(tests) > 10, "the tree has test files (%d of %d Python "
           "files under %s)" % (len(tests), len(files), "/".join(SCANNED)))
    for rel in files:
        try:
            bad = test_imports_of(top, rel, tests)
        except (SyntaxError, OSError) as e:
            tap.ok(False, "%s: parses" % rel, repr(e))
            continue
        tap.ok(not bad, "%s imports no test file" % rel,
               *["imports test file %s: move what it shares into a "
                 "library (harness/ or tests/integration/NAME.py)" % b
                 for b in bad])
    with open(os.path.join(top, "Makefile.am")) as f:
        makefile = f.read()
    missing = unlisted_tests(tests, makefile)
    tap.ok(not missing, "every tests/*/test_*.py is a test make check runs "
           "(named in Makefile.am), not a library", *missing)
    for rel, names in sorted(local_graph(top, files).items()):
        if names:
            tap.diag("import: %s -> %s" % (rel, ", ".join(names)))


# Negative controls: made-up files, each import form that must be caught.
CONTROL_IMPORTS = (
    ("import", "import test_b\n"),
    ("from-import", "from test_b import helper\n"),
    ("import as", "import os, test_b as b\n"),
    ("__import__", "m = __import__('test_b')\n"),
    ("import_module", "import importlib\n"
     "m = importlib.import_module('test_b')\n"),
    ("relative", "from . import test_b\n"),
    ("inside a function", "def f():\n    from test_b import x\n"),
)


def check_controls(tap):
    tests = {"test_a": "tests/integration/test_a.py",
             "test_b": "tests/integration/test_b.py"}
    for desc, text in CONTROL_IMPORTS:
        found = [m for m, _ in imported(ast.parse(text)) if m in tests]
        tap.ok(found == ["test_b"], "control: a test importing another "
               "(%s) is caught" % desc, "found %r in %r" % (found, text))
    clean = "import cfpmtest as ct\nfrom clientload import Load\n" \
        "from harness.http import outcome\n"
    found = [m for m, _ in imported(ast.parse(clean)) if m in tests]
    tap.ok(not found, "control: imports of libraries are not flagged",
           "found %r" % found)
    tap.is_(unlisted_tests(tests, "tests/integration/test_a.py\n"),
            ["tests/integration/test_b.py"], "control: a test_*.py that "
            "Makefile.am does not name is reported")


def main():
    tap = TAP()
    check_tree(tap, SRCDIR)
    check_controls(tap)
    sys.exit(tap.done())


if __name__ == "__main__":
    main()
