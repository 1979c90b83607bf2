#!/usr/bin/env python3
"""
test_docs.py: the manual pages keep up with the code (TAP).

- Every key of the directive tables -- the server's in src/util/config.c
  and each application's own (a struct config_app in src/*/) -- has an
  entry in cfpm.conf(5) naming its type and the default its defaults
  function gives it (app's: the first application of main.c's table);
  an integer or a duration names its range, a keyword setting every word
  it accepts.
- Every key in the example configurations (etc/cfpm.conf, commented keys
  included, and docker/cfpm.conf) is a key of those tables.
- Every option `cfpm --help` lists is in cfpm(8)'s OPTIONS and the other
  way round; every option of each `cfpm-token COMMAND -h` is in that
  command's entry of cfpm-token(1), and the page names no other.
- Each page names the version cfpm --version prints and renders without
  a warning (groff -ww, man --warnings) where groff and man are
  installed.
- CI runs what the README tells a new user to run: .ci/run's one command
  is an exec of tools/run-tests without arguments, the second of the
  README's two commands (tools/stack-up, tools/run-tests), and run-tests
  installs what is missing itself, the benchmark's peers included
  (tools/install-deps --bench --missing). The README's install steps
  (the block test_deploy runs) name only SQL files the package installs.
Negative controls run the same checks on a table with an invented key, on
a page without one key and on a .ci/run that does more: each must be
reported.

The C sources are read as text (no compiler): the directive macros are
expanded from their #define lines (config.h's and the file's), constants
come from config.h and the application's header.
Environment: CFPM_SRCDIR (sources), CFPM_BUILDDIR (cfpm, cfpm-token).
"""

import glob
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from cfpmtest import TAP, run  # noqa: E402

SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("CFPM_BUILDDIR") or SRCDIR
PAGES = ("man/cfpm.8", "man/cfpm.conf.5", "man/cfpm-token.1")
# Constants of <stdint.h> a range may use.
STDINT = {"INT64_MAX": 2 ** 63 - 1, "INT_MAX": 2 ** 31 - 1}
# What cfpm.conf(5) calls each setter's values ("Types").
SETTER_TYPES = {
    "config_set_string": "string", "config_set_integer": "integer",
    "cfg_set_seconds": "duration", "cfg_set_mode": "mode",
    "config_set_choice": "keyword", "cfg_check_choice": "keyword",
    "cfg_set_app": "string",
}


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------------------
# C, read as text

def split_top(text, sep=","):
    """Splits text on sep outside (), {} and string literals."""
    parts, depth, cur, quoted, i = [], 0, [], False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            cur.append(ch)
        elif ch in "({":
            depth += 1
            cur.append(ch)
        elif ch in ")}":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def c_string(lit):
    """The value of a C string literal ("..." with simple escapes)."""
    body = lit.strip()[1:-1]
    return re.sub(r'\\(.)', r'\1', body)


def constants(header):
    """#define NAME number|"string" and enum constants of a header."""
    out = dict(STDINT)
    for m in re.finditer(r'^#define\s+(\w+)\s+("(?:[^"\\]|\\.)*"|\d+)',
                         header, re.M):
        v = m.group(2)
        out[m.group(1)] = c_string(v) if v.startswith('"') else int(v)
    for body in re.findall(r'enum\s+\w+\s*\{(.*?)\}', header, re.S):
        nxt = 0
        for item in split_top(re.sub(r'/\*.*?\*/', '', body, flags=re.S)):
            name, _, val = item.partition("=")
            nxt = int(val.strip(), 0) if val.strip() else nxt
            out[name.strip()] = nxt
            nxt += 1
    return out


def value_of(expr, consts):
    expr = expr.strip()
    if expr in consts:
        return consts[expr]
    if expr.startswith('"'):
        return c_string(expr)
    if re.match(r'0[0-7]+$', expr):     # C octal
        return int(expr, 8)
    if re.match(r'[A-Z_][A-Z0-9_]*$', expr):   # a libc constant (LOG_*)
        return expr
    return int(expr, 0)


def macros(c_text):
    """#define NAME(params) body of the directive rows (CFG_, SET_ and
    config.h's CONFIG_, not CONFIG_FIELD), as {name: (params, body)}."""
    out = {}
    text = c_text.replace("\\\n", " ")
    for m in re.finditer(r'^#define\s+((?:CFG|SET|CONFIG)_\w+)\(([^)]*)\)'
                         r'\s+(.*)$', text, re.M):
        if m.group(1) != "CONFIG_FIELD":
            out[m.group(1)] = ([p.strip() for p in m.group(2).split(",")],
                               m.group(3).strip())
    return out


def expand(entry, defs):
    """A table entry with its macros expanded down to the brace form."""
    for _ in range(4):
        m = re.match(r'(\w+)\((.*)\)$', entry.strip(), re.S)
        if not m or m.group(1) not in defs:
            break
        params, body = defs[m.group(1)]
        args = split_top(m.group(2))
        for p, a in zip(params, args):
            body = re.sub(r'\b%s\b' % re.escape(p), lambda _m, a=a: a,
                          body)
        entry = body
    return entry


def choices(c_text, consts):
    """static const struct config_choice NAME[] = {...}: {NAME: [(w, v)]}."""
    out = {}
    for m in re.finditer(r'config_choice\s+(\w+)\[\]\s*=\s*\{(.*?)\};',
                         c_text, re.S):
        words = []
        for item in split_top(m.group(2)):
            inner = split_top(item.strip()[1:-1])
            if inner[0] != "NULL":
                words.append((c_string(inner[0]), value_of(inner[1],
                                                           consts)))
        out[m.group(1)] = words
    return out


def directive_table(c_text, consts, name, defs):
    """The keys of the table name[]: [{key, setter, field, min, max,
    words}] (field None for a key that is only checked); defs: the
    macros it may use."""
    m = re.search(r'\b%s\[\]\s*=\s*\{(.*?)\n\};' % re.escape(name), c_text,
                  re.S)
    if m is None:
        return []
    words = choices(c_text, consts)
    table = []
    for entry in split_top(m.group(1)):
        brace = expand(entry, defs).strip()
        if not brace.startswith("{"):
            continue
        f = split_top(brace[1:-1])
        d = {"key": c_string(f[0]), "setter": f[1], "field": None,
             "min": None, "max": None, "words": None}
        fm = re.match(r'(?:CFG_FIELD\(|CONFIG_FIELD\([^,]+,)\s*(\w+)\)$',
                      f[2])
        rest = f[3:] if fm else f[4:]   # a FIELD is offset and size
        if fm:
            d["field"] = fm.group(1)
        if len(rest) >= 3:
            d["min"], d["max"] = (value_of(rest[0], consts),
                                  value_of(rest[1], consts))
            if rest[2] in words:
                d["words"] = words[rest[2]]
        table.append(d)
    return table


def defaults(c_text, consts, name):
    """The function name(): {field: value} for what it sets (the rest is
    0), through whatever pointer it names (cfg->, s->)."""
    m = re.search(r'^%s\(.*?\)\n\{(.*?)\n\}' % re.escape(name), c_text,
                  re.S | re.M)
    out = {}
    for stmt in split_top(m.group(1) if m else "", ";"):
        sm = re.match(r'snprintf\(\w+->(\w+),\s*(.*)\)$', stmt, re.S)
        am = re.match(r'\w+->(\w+)\s*=\s*(.+)$', stmt, re.S)
        if sm:
            args = split_top(sm.group(2))
            fmt = c_string(args[1])
            vals = [value_of(a, consts) for a in args[2:]]
            out[sm.group(1)] = fmt % tuple(vals) if vals else fmt
        elif am:
            out[am.group(1)] = am.group(2).strip()
    return out


def expected_default(d, defs, consts):
    """How cfpm.conf(5) must write d's default ("none" for an unset
    string), or None if it cannot be derived from the source."""
    raw = defs.get(d["field"]) if d["field"] else None
    kind = SETTER_TYPES.get(d["setter"])
    try:
        if kind == "string":
            return raw if raw else "none"
        if kind in ("integer", "duration"):
            return str(value_of(raw, consts) if raw is not None else 0)
        if kind == "mode":
            return "0%o" % (value_of(raw, consts) if raw is not None else 0)
        if kind == "keyword" and d["words"]:
            if d["field"] is None and len(d["words"]) == 1:
                return d["words"][0][0]
            v = value_of(raw, consts) if raw is not None else 0
            for word, value in d["words"]:
                if value == v:
                    return word
    except (ValueError, KeyError, TypeError):
        return None
    return None


# ---------------------------------------------------------------------------
# roff, read as text

FONT_MACROS = {"B", "I", "SM", "SB"}
ALT_MACROS = {"BR", "RB", "IR", "RI", "BI", "IB"}


def roff_args(s):
    """Macro arguments: blank-separated, "quoted" ones may hold blanks."""
    args, cur, quoted, i, started = [], [], False, 0, False
    while i < len(s):
        ch = s[i]
        if quoted:
            if ch == '"' and s[i + 1:i + 2] == '"':
                cur.append('"')
                i += 1
            elif ch == '"':
                quoted = False
            else:
                cur.append(ch)
        elif ch == '"':
            quoted, started = True, True
        elif ch in " \t":
            if started:
                args.append("".join(cur))
                cur, started = [], False
        else:
            cur.append(ch)
            started = True
        i += 1
    if started:
        args.append("".join(cur))
    return args


def unescape(s):
    s = re.sub(r'\\f[BIRP]', '', s)
    for esc, ch in ((r'\(dq', '"'), (r'\(pc', '%'), (r'\(em', '-'),
                    (r'\(en', '-'), (r'\-', '-'), (r'\e', '\\'),
                    (r'\%', ''), (r'\c', ''), (r'\&', '')):
        s = s.replace(esc, ch)
    return s


def roff_text(lines):
    """Plain text of roff lines: font macros kept as their words, other
    requests dropped."""
    out = []
    for line in lines:
        if line.startswith("."):
            name, _, rest = line[1:].partition(" ")
            if name in FONT_MACROS:
                out.append(" ".join(roff_args(rest)))
            elif name in ALT_MACROS:
                out.append("".join(roff_args(rest)))
        else:
            out.append(line)
    return unescape(" ".join(out))


def sections(page):
    """{".SH name": [lines]}."""
    out, cur = {}, None
    for line in page.splitlines():
        if line.startswith(".SH "):
            cur = " ".join(roff_args(line[4:]))
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def conf_entries(page):
    """cfpm.conf(5): {key: text of its entry}. An entry starts at a ".B
    key" line right after .TP or .TQ and runs to the next of those (a
    description shared by .TQ keys belongs to the last one)."""
    lines = page.splitlines()
    out, key, body = {}, None, []
    for i, line in enumerate(lines):
        tag = i > 0 and lines[i - 1] in (".TP", ".TQ")
        if line in (".TP", ".TQ") or line.startswith(".SH"):
            if key is not None:
                out[key] = roff_text(body)
            key, body = None, []
        elif tag and line.startswith(".B "):
            key = unescape(line[3:].strip())
        elif key is not None:
            body.append(line)
    if key is not None:
        out[key] = roff_text(body)
    return out


def entry_default(text):
    m = re.search(r'Default: (.*?)\.(?:\s|$)', text)
    if m is None:
        return None
    v = m.group(1).strip()
    return "none" if v.startswith("none") else v


def check_entry(d, text, want_default):
    """Problems of one key's entry, as a list of strings."""
    probs = []
    kind = SETTER_TYPES.get(d["setter"])
    if kind and not re.search(r'\b%s\b' % kind, text):
        probs.append("type %r not named" % kind)
    if kind in ("integer", "duration") and d["max"]:
        rng = "%d to %d" % (d["min"], d["max"])
        if rng not in text:
            probs.append("range %r not named" % rng)
    for word, _ in d["words"] or ():
        if not re.search(r'(?<![\w.])%s(?![\w])' % re.escape(word), text):
            probs.append("keyword %r not named" % word)
    got = entry_default(text)
    if want_default is not None and got != want_default:
        probs.append("default %r, the source's defaults give %r" %
                     (got, want_default))
    return probs


def options_of(text):
    return set(re.findall(r'(?<![\w-])(--[a-z](?:[a-z-]*[a-z])?|-[A-Za-z])'
                          r'(?![\w-])', text))


# ---------------------------------------------------------------------------

def test_config_keys(t, table, entries, defs, consts, minimum=30):
    t.cmp_ok(len(table), ">=", minimum, "the directive table is read "
             "(%d keys: %s...)" % (len(table), table[0]["key"] if table
                                   else "none"))
    missing = [d["key"] for d in table if d["key"] not in entries]
    t.ok(not missing, "cfpm.conf(5) has an entry for every key of "
         "config.c's table", "missing: %s" % ", ".join(missing))
    unknown = []
    for d in table:
        if d["key"] not in entries:
            continue
        want = expected_default(d, defs, consts)
        if want is None:
            unknown.append(d["key"])
        probs = check_entry(d, entries[d["key"]], want)
        t.ok(not probs, "cfpm.conf(5) %s: type, range, keywords, default"
             % d["key"], *probs)
    if unknown:
        t.diag("defaults not derivable from the source, not "
               "compared: %s" % ", ".join(unknown))
    # Negative controls: the same checks must see a key that is missing
    # and a default that differs.
    fake = dict(table[0], key="no.such_key")
    t.ok(fake["key"] not in entries, "control: an invented key is reported "
         "missing")
    some = next(d for d in table if SETTER_TYPES.get(d["setter"]) ==
                "integer" and d["key"] in entries)
    t.ok(check_entry(some, entries[some["key"]], "123456789"),
         "control: a wrong default is reported (%s)" % some["key"])
    page = read("man/cfpm.conf.5").replace(".B %s\n" % some["key"],
                                           ".B renamed\n")
    t.ok(some["key"] not in conf_entries(page), "control: an entry removed "
         "from the page is reported missing")


# Read by the configuration file's loader (configfile.c), not the table.
LOADER_KEYS = {"include"}


def test_example_keys(t, keys):
    t.ok(LOADER_KEYS <= set(conf_entries(read("man/cfpm.conf.5"))),
         "cfpm.conf(5) has an entry for every loader directive (%s)" %
         ", ".join(sorted(LOADER_KEYS)))
    for rel in ("etc/cfpm.conf", "docker/cfpm.conf"):
        found = re.findall(r'^;?([a-z][a-z0-9_.]*) = ', read(rel), re.M)
        bad = sorted(set(found) - keys - LOADER_KEYS)
        t.ok(found and not bad, "%s: its %d keys are config.c's" %
             (rel, len(found)), "unknown: %s" % ", ".join(bad))


def test_cfpm_options(t):
    rc, out, _ = run([os.path.join(BUILDDIR, "cfpm"), "--help"])
    t.is_(rc, 0, "cfpm --help: exit 0")
    helped = options_of(out)
    page = sections(read("man/cfpm.8"))
    documented = options_of(roff_text(page.get("OPTIONS", [])))
    t.cmp_ok(len(helped), ">=", 10, "cfpm --help lists its options")
    t.ok(helped and helped == documented,
         "cfpm(8) OPTIONS documents exactly the options of cfpm --help",
         "only in --help: %s" % sorted(helped - documented),
         "only in cfpm(8): %s" % sorted(documented - helped))
    synopsis = roff_text(page.get("SYNOPSIS", []))
    short = set(re.findall(r'-([A-Za-z])\b', out.splitlines()[0]))
    t.ok(short and all(re.search(r'-\w*%s' % s, synopsis) for s in short),
         "cfpm(8) SYNOPSIS names every short option of the usage line")


def test_token_options(t):
    tool = os.path.join(BUILDDIR, "cfpm-token")
    rc, out, _ = run([tool, "--help"])
    t.is_(rc, 0, "cfpm-token --help: exit 0")
    commands = re.findall(r'^usage: cfpm-token (\w+)', out, re.M)
    t.ok(len(commands) >= 4, "cfpm-token --help lists its commands (%s)" %
         " ".join(commands))
    page = read("man/cfpm-token.1")
    lines = sections(page).get("COMMANDS", [])
    starts = [i for i, line in enumerate(lines) if i > 0 and
              lines[i - 1] == ".TP" and line in
              [".B " + c for c in commands]]
    bodies = {}
    for n, i in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        bodies[lines[i][3:]] = roff_text(lines[i:end])
    every = set()
    for cmd in commands:
        rc, usage, _ = run([tool, cmd, "-h"])
        opts = options_of(usage) - {"-h"}
        every |= opts
        doc = options_of(bodies.get(cmd, ""))
        t.ok(rc == 0 and opts and opts == doc,
             "cfpm-token(1) %s: exactly the options of its -h" % cmd,
             "only in -h: %s" % sorted(opts - doc),
             "only in the page: %s" % sorted(doc - opts))
    named = options_of(roff_text(page.splitlines())) - {"-h", "--help"}
    t.ok(named <= every, "cfpm-token(1) names no option the tool lacks",
         "unknown: %s" % sorted(named - every))


def test_rendering(t):
    groff, man = shutil.which("groff"), shutil.which("man")
    rc, out, _ = run([os.path.join(BUILDDIR, "cfpm"), "--version"])
    version = out.split()[-1] if rc == 0 and out.split() else "?"
    for rel in PAGES:
        th = re.search(r'^\.TH (.*)$', read(rel), re.M)
        t.ok(th and ('"cfpm %s"' % version) in th.group(1),
             "%s: .TH names cfpm %s (cfpm --version)" % (rel, version),
             th.group(0) if th else "no .TH")
        path = os.path.join(SRCDIR, rel)
        if groff is None:
            t.skip("%s: groff -ww -man" % rel, "groff not installed")
        else:
            rc, _, err = run([groff, "-ww", "-man", "-z", path])
            t.ok(rc == 0 and err == "", "%s: groff -ww -man: no warning" %
                 rel, err)
        if man is None:
            t.skip("%s: man --warnings -l" % rel, "man not installed")
        else:
            rc, out, err = run([man, "--warnings", "-l", path])
            name = os.path.basename(rel).rsplit(".", 1)[0].upper()
            t.ok(rc == 0 and err == "" and "NAME" in out and
                 name.replace("-", "") in out.replace("-", "").upper(),
                 "%s: man --warnings -l renders it, no warning" % rel, err)


def commands(block):
    """The commands of a shell block: continuation lines joined, comment
    lines and trailing comments dropped."""
    out, cur = [], ""
    for line in block.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        line = re.sub(r"\s+#.*$", "", cur + line).strip()
        cur = ""
        if line and not line.startswith("#"):
            out.append(" ".join(line.split()))
    return out


def readme_blocks():
    """The README's fenced sh blocks, in order."""
    return re.findall(r"^```sh\n(.*?)^```", read("README.md"), re.M | re.S)


def ci_problems(ci, readme_cmds):
    """What is wrong with .ci/run's text ci against the README's quick
    start commands (a list; empty when all is right)."""
    cmds = commands(ci)
    bad = []
    if readme_cmds != ["tools/stack-up", "tools/run-tests"]:
        bad.append("README's first block is not tools/stack-up, "
                   "tools/run-tests: %r" % readme_cmds)
    if len(cmds) != 1 or not re.fullmatch(
            r'exec "?(\$\(dirname "\$0"\)/\.\./)?tools/run-tests"?',
            cmds[0]):
        bad.append(".ci/run is not one exec of tools/run-tests: %r" % cmds)
    return bad


def test_ci(t):
    if not os.path.exists(os.path.join(SRCDIR, ".ci", "run")):
        t.skip(".ci/run is the README's test command", "no .ci/ in this "
               "tree (a release tarball: make dist leaves CI out)")
        return
    readme_cmds = commands(readme_blocks()[0])
    ci = read(".ci/run")
    t.is_(ci_problems(ci, readme_cmds), [], ".ci/run is the README's test "
          "command, tools/run-tests, and nothing more")
    t.ok(ci_problems(ci.replace("exec ", "tools/install-deps --bench\nexec "),
                     readme_cmds),
         "control: a .ci/run that installs packages first is reported")
    t.ok(ci_problems(ci.replace("run-tests", "run-tests --no-sanitizers"),
                     readme_cmds),
         "control: a .ci/run that passes arguments is reported")
    t.ok("tools/install-deps\" --bench --missing" in
         "\n".join(commands(read("tools/run-tests"))),
         "tools/run-tests installs what is missing, the benchmark's peers "
         "included")


def test_install_steps(t):
    steps = re.search(r"<!-- install steps: [^\n]*-->\n```sh\n(.*?)^```",
                      read("README.md"), re.M | re.S)
    t.ok(steps, "README: the install steps test_deploy runs are marked")
    shipped = re.search(r"^dist_sql_DATA = (.*)$", read("Makefile.am"),
                        re.M)
    named = re.findall(r"/usr/share/cfpm/(sql/[\w.-]+)",
                       steps.group(1) if steps else "")
    t.ok(named and shipped and set(named) <= set(shipped.group(1).split()),
         "README: the install steps' SQL files are installed (%s)" %
         ", ".join(named), shipped.group(0) if shipped else "no dist_sql_DATA")


def uncommented(rel):
    return re.sub(r'/\*.*?\*/', '', read(rel), flags=re.S)


def default_app():
    """The name of the first application of main.c's table (the default
    "app"), read from that application's struct app, or None."""
    m = re.search(r'main_apps\[\]\s*=\s*\{\s*&(\w+)', read("src/main.c"))
    for path in sorted(glob.glob(os.path.join(SRCDIR, "src", "*", "*.c"))):
        with open(path, encoding="utf-8") as f:
            t = f.read()
        a = m and re.search(r'struct app %s = \{.*?\.name = ("[^"]*")' %
                            m.group(1), t, re.S)
        if a:
            return c_string(a.group(1))
    return None


def app_tables(config_h):
    """Each application's own keys: for every struct config_app in
    src/*/*.c, (table, defaults, constants) as directive_table() and
    defaults() read them."""
    out = []
    for path in sorted(glob.glob(os.path.join(SRCDIR, "src", "*", "*.c"))):
        rel = os.path.relpath(path, SRCDIR)
        c_text = uncommented(rel)
        for body in re.findall(r'struct config_app\s+\w+\s*=\s*\{(.*?)\};',
                               c_text, re.S):
            dm = re.search(r'\.directives\s*=\s*(\w+)', body)
            fm = re.search(r'\.defaults\s*=\s*(\w+)', body)
            header = rel[:-2] + ".h"
            consts = constants(config_h + (read(header) if os.path.exists(
                os.path.join(SRCDIR, header)) else ""))
            defs = dict(macros(config_h), **macros(c_text))
            table = directive_table(c_text, consts, dm.group(1), defs) \
                if dm else []
            out.append((table, defaults(c_text, consts, fm.group(1))
                        if fm else {}, consts))
    return out


def main():
    t = TAP()
    config_h = read("src/util/config.h")
    consts = constants(config_h)
    c_text = uncommented("src/util/config.c")
    table = directive_table(c_text, consts, "config_directives",
                            dict(macros(config_h), **macros(c_text)))
    defs = defaults(c_text, consts, "config_defaults")
    if "app" not in defs and default_app() is not None:
        defs["app"] = default_app()
    apps = app_tables(config_h)
    t.ok(apps and all(a[0] for a in apps), "the applications' own "
         "directive tables are read (%d)" % len(apps))
    entries = conf_entries(read("man/cfpm.conf.5"))
    test_config_keys(t, table, entries, defs, consts)
    for app_table, app_defs, app_consts in apps:
        test_config_keys(t, app_table, entries, app_defs, app_consts,
                         minimum=1)
        table = table + app_table
    test_example_keys(t, {d["key"] for d in table})
    test_cfpm_options(t)
    test_token_options(t)
    test_rendering(t)
    test_ci(t)
    test_install_steps(t)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
