"""
hist.py: the latency histograms of the paced generators (pure).

bench/lua/mix.lua counts each value v (microseconds) in bucket 0 if
v < 1, else in bucket i = floor(log(v) / log(1 + step)) + 1, which holds
[(1 + step)^(i - 1), (1 + step)^i); step (0.01: 1 % resolution at every
scale) comes with the histogram, so only the script fixes it. Here:
merging, counts and percentiles (a bucket's geometric middle, in ms).
"""

import math


def from_json(obj):
    """{"12": 3, ...} as written by mix.lua -> {12: 3, ...}."""
    return {int(k): int(v) for k, v in obj.items()}


def merge(hists):
    """The sum of several {bucket: count} histograms."""
    out = {}
    for h in hists:
        for i, n in h.items():
            out[i] = out.get(i, 0) + n
    return out


def count(h):
    return sum(h.values())


def value_ms(i, step):
    """The representative value of bucket i in milliseconds."""
    if i <= 0:
        return 0.0
    return math.exp((i - 0.5) * math.log(1 + step)) / 1000.0


def percentile(h, q, step):
    """The q-quantile (0 < q <= 1) of h in ms, or None when h is empty:
    the bucket where the cumulative count first reaches q x total."""
    n = count(h)
    if not n:
        return None
    need = q * n
    seen = 0
    for i in sorted(h):
        seen += h[i]
        if seen >= need:
            return value_ms(i, step)
    return value_ms(max(h), step)


def above(h, limit_ms, step):
    """How many values of h lie above limit_ms (bucket middles)."""
    return sum(n for i, n in h.items() if value_ms(i, step) > limit_ms)
