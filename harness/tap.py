"""
tap.py: the TAP producer of the integration tests: numbered ok / not ok
lines, diagnostics after a failure, the plan at the end. Output goes to
stdout, flushed line by line (automake's tap-driver reads it).
"""

import re
import sys


class TAP:
    """count: tests so far; failed: how many of them failed. diag_lines:
    show only the last that many lines of each diagnostic (None: all)."""

    def __init__(self, diag_lines=None):
        self.count = 0
        self.failed = 0
        self.diag_lines = diag_lines

    @staticmethod
    def _clean(desc):
        # '#' starts a directive in TAP; keep descriptions on one line.
        return str(desc).replace("#", "No.").replace("\n", " ")

    def diag(self, msg):
        """Prints msg (any object, as text) as '# ' comment lines."""
        lines = str(msg).splitlines()
        if self.diag_lines is not None:
            lines = lines[-self.diag_lines:]
        for line in lines or [""]:
            print("# " + line)
        sys.stdout.flush()

    def ok(self, cond, desc, *diags):
        """One test: passes if cond is true; on failure each of diags is
        printed as a diagnostic. Returns bool(cond)."""
        self.count += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.count,
                              self._clean(desc)))
        if not cond:
            for d in diags:
                self.diag(d)
        sys.stdout.flush()
        return bool(cond)

    def is_(self, got, want, desc):
        """Passes if got == want; shows both otherwise."""
        return self.ok(got == want, desc,
                       "   got: %r" % (got,), "  want: %r" % (want,))

    def like(self, got, regex, desc):
        """Passes if got is text or bytes in which regex is found."""
        cond = isinstance(got, (str, bytes)) and \
            re.search(regex, got) is not None
        return self.ok(cond, desc, "   got: %r" % (got,),
                       "  want match: %r" % (regex,))

    def cmp_ok(self, got, op, want, desc):
        """Passes if got op want (op one of < <= > >= != ==); a TypeError
        in the comparison fails."""
        ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
               ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
               "!=": lambda a, b: a != b, "==": lambda a, b: a == b}
        try:
            cond = ops[op](got, want)
        except TypeError:
            cond = False
        return self.ok(cond, desc, "   got: %r" % (got,),
                       "  want: %s %r" % (op, want))

    def skip(self, desc, reason):
        """One skipped test (counts as passed)."""
        self.count += 1
        print("ok %d - %s # SKIP %s" % (self.count, self._clean(desc),
                                       self._clean(reason)))
        sys.stdout.flush()

    def done(self):
        """Prints the plan; returns the exit status: 0 when at least one
        test ran and none failed, else 1."""
        print("1..%d" % self.count)
        sys.stdout.flush()
        return 0 if self.failed == 0 and self.count > 0 else 1

    @staticmethod
    def skip_all(reason):
        """The plan of a file that runs nothing; returns exit status 0."""
        print("1..0 # SKIP %s" % TAP._clean(reason))
        sys.stdout.flush()
        return 0
