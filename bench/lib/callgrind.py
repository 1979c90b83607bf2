"""
callgrind.py: reads one callgrind output file (valgrind's callgrind
format, "callgrind_annotate" reads the same) into costs per function and
per library, for bench/icount. Pure: text in, numbers out.

A function is its object (the ELF file: the cfpm binary, libc.so.6, ...)
and its name; the pieces callgrind files under other source files (code
inlined from a header: fi=/fe= lines) belong to the function they are in.
  self       the instructions executed in the function itself
  inclusive  those of its calls too: what callgrind recorded for the
             calls into it (its callers' calls= lines), as
             callgrind_annotate --inclusive=yes counts it; a function
             nothing called inside the window (the worker's main loop)
             gets its self cost plus its own calls. A recursive function
             counts its inner calls again, as there.
The libraries are grouped by object file name (GROUPS); the kernel is
never seen (callgrind counts user-space instructions only).
"""

import os
import re

# Object file name (basename) patterns -> group, first match wins. cfpm's
# own code is the binary itself (OWN: its basename is given by the caller).
GROUPS = (
    (r"^libc\.so|^ld-linux|^libm\.so|^libpthread", "libc"),
    (r"^libpq\.so", "libpq"),
    (r"^libcrypto\.so|^libssl\.so", "openssl"),
    (r"^libjansson\.so", "jansson"),
    (r"^libseccomp\.so", "libseccomp"),
    (r"^libfcgi\.so", "libfcgi"),
    (r"^vgpreload_|^valgrind", "valgrind"),
)
OWN = "cfpm"
OTHER = "other"
UNKNOWN = "???"
# Name compression: "(id) name" defines id, "(id)" alone refers to it.
_NAME = re.compile(r"^\((\d+)\)(?:\s(.*))?$")
# Which name space each key's names live in (callgrind format manual).
_SPACE = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl",
          "cfi": "fl", "cfl": "fl", "fn": "fn", "cfn": "fn"}


def group_of(obj, own=OWN):
    """The group of object path obj: own (cfpm's binary, by basename),
    one of GROUPS, else OTHER."""
    base = os.path.basename(obj or "")
    if base == own:
        return OWN
    for pat, name in GROUPS:
        if re.search(pat, base):
            return name
    return OTHER


def display_name(obj, fn):
    """fn, or for code without a symbol (Debian strips the static
    functions of its libraries: callgrind names them by address)
    "object+0xOFFSET"."""
    if re.match(r"^0x[0-9a-fA-F]+$", fn):
        return "%s+0x%x" % (os.path.basename(obj or UNKNOWN), int(fn, 16))
    return fn


class Profile:
    """One dump: events (names), summary (totals per event, from the
    summary: line), self and inclusive ({(object, function): [costs]}),
    calls ({(object, function): times called}), and the header fields
    (pid, cmd, part, desc lines)."""

    def __init__(self):
        self.events = []
        self.summary = None
        self.self = {}
        self.inclusive = {}
        self.calls = {}
        self.header = {}
        self.desc = []

    def total(self, event=0):
        """The dump's total of event (index): its summary line, else the
        sum of the self costs."""
        if self.summary is not None:
            return self.summary[event]
        return sum(c[event] for c in self.self.values())

    def top(self, kind="self", n=15, event=0):
        """The n costliest functions by self or inclusive cost: a list of
        ((object, function), cost), costliest first (ties by name)."""
        table = self.self if kind == "self" else self.inclusive
        rows = sorted(table.items(), key=lambda kv: (-kv[1][event], kv[0]))
        return [(k, v[event]) for k, v in rows[:n]]

    def by_group(self, own=OWN, event=0):
        """Self cost summed per group (group_of each object)."""
        out = {}
        for (obj, _), c in self.self.items():
            g = group_of(obj, own)
            out[g] = out.get(g, 0) + c[event]
        return out


def _add(table, key, costs):
    cur = table.get(key)
    if cur is None:
        table[key] = list(costs)
    else:
        for i, c in enumerate(costs):
            cur[i] += c


class _Reader:
    """The state while reading: current object, file, function, the
    pending call (calls= seen, its cost line next)."""

    def __init__(self):
        self.p = Profile()
        self.names = {"ob": {}, "fl": {}, "fn": {}}
        self.npos = 1
        self.ob = UNKNOWN
        self.fn = None
        self.cob = self.cfn = None
        self.pending = 0        # calls of the pending call, 0: none
        self.called = {}        # callee -> cost of the calls into it
        self.outgoing = {}      # caller -> cost of its calls

    def name(self, key, text):
        """A name after key=, compression resolved."""
        space = self.names[_SPACE[key]]
        m = _NAME.match(text.strip())
        if not m:
            return text.strip()
        if m.group(2) is not None:
            space[m.group(1)] = m.group(2)
        return space.get(m.group(1), UNKNOWN)

    def spec(self, key, value):
        v = self.name(key, value)
        if key == "ob":
            self.ob = v
        elif key == "fn":
            self.fn = (self.ob, v)
            self.cob = None
        elif key == "cob":
            self.cob = v
        elif key == "cfn":
            self.cfn = (self.cob or self.ob, v)
            self.cob = None
        # fl, fi, fe, cfi, cfl: source files, not part of a function's
        # identity here.

    def cost(self, fields):
        costs = [int(x) for x in fields[self.npos:]]
        costs += [0] * (len(self.p.events) - len(costs))
        if self.pending:
            _add(self.called, self.cfn, costs)
            _add(self.outgoing, self.fn, costs)
            self.p.calls[self.cfn] = self.p.calls.get(self.cfn, 0) + \
                self.pending
            self.pending = 0
        elif self.fn is not None:
            _add(self.p.self, self.fn, costs)

    def header(self, key, value):
        if key == "events":
            self.p.events = value.split()
        elif key == "positions":
            self.npos = len(value.split())
        elif key == "summary":
            self.p.summary = [int(x) for x in value.split()]
        elif key == "desc":
            self.p.desc.append(value.strip())
        else:
            self.p.header[key] = value.strip()

    def finish(self):
        p = self.p
        n = len(p.events)
        for fn, costs in p.self.items():
            if fn not in self.called:
                out = self.outgoing.get(fn, [0] * n)
                p.inclusive[fn] = [a + b for a, b in zip(costs, out)]
        for fn, costs in self.called.items():
            p.inclusive[fn] = list(costs)
        return p


_SPEC = re.compile(r"^(c?ob|c?fl|fi|fe|c?fn|cfi)=(.*)$")
_HEADER = re.compile(r"^(\w+):\s?(.*)$")


def parse(text):
    """The Profile of callgrind output text (one part)."""
    r = _Reader()
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        c = line[0]
        if c.isdigit() or c in "+-*" or line.startswith("0x"):
            r.cost(line.split())
            continue
        m = _SPEC.match(line)
        if m:
            r.spec(m.group(1), m.group(2))
        elif line.startswith("calls="):
            r.pending = int(line[6:].split()[0]) or 1
        elif line.startswith(("jfi=", "jfn=")):     # names only
            r.name("fl" if line[1] == "f" else "fn", line[4:])
        elif line.startswith(("jump=", "jcnd=")):
            continue
        else:
            m = _HEADER.match(line)
            if m:
                r.header(m.group(1), m.group(2))
    return r.finish()


def load(path):
    """parse() of the file at path."""
    with open(path, errors="replace") as f:
        return parse(f.read())
