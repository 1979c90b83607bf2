"""
openloop.py: what the open-loop parts of a study measure, as plans of
points (pure: study.py runs them through measure.run_open).

  cost    the 50/50 mix at the same offered rates for every candidate:
          absolute ones ("2000") and shares of the lowest closed-loop
          ceiling of the run ("50%"), so every candidate is measured at
          the loads an operator runs, not only at saturation;
  apart   read-only and write-only points at the same rates (CPU per
          GET and per POST, the DB's per SELECT and per INSERT);
  slo     capacity at a latency target: a fixed grid of rates, shares of
          the candidate's own closed-loop ceiling (its knee lies below
          it), swept upwards once per repetition; a repetition's sweep
          stops after the first point that misses the loosest target
          (the cells above count as misses of that repetition: a server
          that misses at a rate misses above it). stats.slo_capacity
          votes per cell.
"""

import math

PARTS = ("closed", "cost", "apart", "slo", "users")
OPEN_PARTS = ("cost", "apart", "slo")
# Latency targets (p99, ms) of the capacity search, tightest first.
SLO_MS = (10, 50)
# p99.9 needs enough samples to mean anything: a full run lengthens a
# point's window to reach this many (10 above the p99.9), up to
# MAX_WINDOW_S; fewer are reported as too few.
P999_MIN_SAMPLES = 10000
P99_MIN_SAMPLES = 1000
MAX_WINDOW_S = 30


def parse_rates(text):
    """"500,2000,25%" -> [(500.0, None), (2000.0, None), (None, 0.25)]:
    absolute req/s, or a share of the run's lowest ceiling. "none" or ""
    -> []. Raises ValueError on anything else."""
    out = []
    if text.strip() in ("", "none"):
        return out
    for part in text.split(","):
        part = part.strip()
        if part.endswith("%"):
            share = float(part[:-1]) / 100
            if share <= 0:
                raise ValueError("rate %r: a share must be positive" % part)
            out.append((None, share))
        else:
            rate = float(part)
            if rate <= 0:
                raise ValueError("rate %r: must be positive" % part)
            out.append((rate, None))
    return out


def spec_text(rate, share):
    return "%g%%" % (100 * share) if share is not None else "%g" % rate


def resolve(rates, lowest):
    """[(req/s, spec text)] of parsed rates; shares of lowest (None: no
    ceiling measured, shares left out)."""
    out = []
    for rate, share in rates:
        if share is not None:
            if lowest:
                out.append((round(share * lowest), spec_text(rate, share)))
        else:
            out.append((rate, spec_text(rate, share)))
    return out


def window_s(rate, duration, quick):
    """A point's measured seconds: duration, lengthened in a full run so
    that the point has P999_MIN_SAMPLES (at most MAX_WINDOW_S)."""
    if quick or rate <= 0:
        return duration
    return max(duration, min(MAX_WINDOW_S,
                             math.ceil(P999_MIN_SAMPLES / rate)))


def cost_plan(rates, apart_rates, parts):
    """The points of one candidate's cost/apart cell, in order."""
    out = []
    if "cost" in parts:
        out += [{"part": "cost", "mix": "mix", "rate": r, "rate_spec": t}
                for r, t in rates]
    if "apart" in parts:
        out += [{"part": "apart", "mix": mix, "rate": r, "rate_spec": t}
                for r, t in apart_rates for mix in ("read", "write")]
    return out


def slo_grid(ceiling, shares):
    """The grid of a candidate: [(req/s, share)] ascending."""
    return sorted((round(s * ceiling), s) for s in shares)


def slo_point(rate, share, rep):
    return {"part": "slo", "mix": "mix", "rate": rate,
            "rate_spec": "%g%% of ceiling" % (100 * share), "share": share,
            "rep": rep}


def misses(rec, slo_ms):
    """True if an open-loop record misses the p99 target slo_ms, False if
    it meets it, None if it has no vote (the generator or its calibration
    failed: nothing is known of the server). A point the server could not
    sustain, or that had error responses, misses."""
    v = rec["verdict"]
    if v == "generator":
        return None
    if v in ("server", "errors"):
        return True
    p99 = (rec.get("latency_ms") or {}).get("p99")
    return p99 is None or p99 >= slo_ms
