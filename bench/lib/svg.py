"""
svg.py: small charts written as SVG by hand (no plotting package): a
line chart with a categorical x axis (pool sizes), a linear y axis from
0, one polyline per series with min-max whiskers around each median
point and a legend; and a latency-throughput chart (offered rate
against latency on a log axis, with the latency targets drawn).
"""

import math
from xml.sax.saxutils import escape

W, H = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 80, 200, 40, 60
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
          "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"]
# The latency chart's series (p99, p50): not the targets' red.
LATENCY_COLORS = ["#1f77b4", "#2ca02c"]


def _nice_max(v):
    """A round axis maximum >= v."""
    if v <= 0:
        return 1.0
    mag = 10 ** len(str(int(v))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if step * mag >= v:
            return step * mag
    return 10 * mag


def _fmt(v):
    return "%g" % v if v < 10000 else "{:,.0f}".format(v)


def line_chart(path, title, xlabel, ylabel, xs, series):
    """Writes a chart to path. xs: the x categories in order; series: list
    of (label, {x: (median, min, max)})."""
    ymax = _nice_max(max([p[2] for _, pts in series for p in pts.values()
                          if p[2] is not None] or [1]))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    xpos = {x: LEFT + pw * (i + 0.5) / len(xs) for i, x in enumerate(xs)}

    def ypos(v):
        return TOP + ph - ph * v / ymax

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>'
           % (LEFT + pw / 2, escape(title))]
    for i in range(6):                         # grid and y labels
        v = ymax * i / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, LEFT + pw, ypos(v), ypos(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (LEFT - 6, ypos(v) + 4, _fmt(v)))
    for x in xs:                               # x labels
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (xpos[x], TOP + ph + 18, escape(str(x))))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
               % (LEFT + pw / 2, H - 15, escape(xlabel)))
    out.append('<text transform="translate(18,%d) rotate(-90)" '
               'text-anchor="middle">%s</text>' % (TOP + ph / 2,
                                                   escape(ylabel)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#444"/>' % (LEFT, TOP, pw, ph))
    for i, (label, pts) in enumerate(series):
        out += _series(pts, [x for x in xs if x in pts], xpos, ypos,
                       COLORS[i % len(COLORS)])
        ly = TOP + 10 + 20 * i
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" '
                   'stroke-width="2"/>' % (LEFT + pw + 12, LEFT + pw + 32, ly,
                                           ly, COLORS[i % len(COLORS)]))
        out.append('<text x="%d" y="%d">%s</text>' % (LEFT + pw + 38, ly + 4,
                                                      escape(label)))
    out.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))


def _series(pts, xs, xpos, ypos, color):
    """Polyline through the medians, whiskers from min to max."""
    out = []
    coords = ["%.1f,%.1f" % (xpos[x], ypos(pts[x][0])) for x in xs
              if pts[x][0] is not None]
    if len(coords) > 1:
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" '
                   'points="%s"/>' % (color, " ".join(coords)))
    for x in xs:
        med, lo, hi = pts[x]
        if med is None:
            continue
        out.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" '
                   'stroke="%s"/>' % (xpos[x], xpos[x], ypos(lo), ypos(hi),
                                      color))
        out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>'
                   % (xpos[x], ypos(med), color))
    return out


def _log_ticks(lo, hi):
    """Decades 10^k (ms) covering [lo, hi]."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0 ** k for k in range(k0, k1 + 1)]


def latency_chart(path, title, series, invalid_x, lines_ms):
    """Writes a latency-throughput chart to path: x the offered rate
    (linear, from 0), y milliseconds on a log axis; series {label:
    [(x, ms)]} as lines with dots, invalid_x marked as crosses along the
    top (points that are no result), a dashed line per value of
    lines_ms (the latency targets). Several points at one rate (cost and
    capacity points, repetitions) are all drawn, the line goes through
    their median."""
    pts = [p for v in series.values() for p in v]
    xmax = _nice_max(max([x for x, _ in pts] + list(invalid_x) + [1]))
    ys = [y for _, y in pts if y > 0] + list(lines_ms)
    ticks = _log_ticks(max(min(ys) / 2, 0.01), max(ys) * 2)
    lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def xpos(v):
        return LEFT + pw * v / xmax

    def ypos(v):
        return TOP + ph - ph * (math.log10(max(v, ticks[0])) - lo) / (hi - lo)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>'
           % (LEFT + pw / 2, escape(title))]
    for t in ticks:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, LEFT + pw, ypos(t), ypos(t)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>'
                   % (LEFT - 6, ypos(t) + 4, t))
    for i in range(6):
        v = xmax * i / 5
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (xpos(v), TOP + ph + 18, _fmt(v)))
    out.append('<text x="%d" y="%d" text-anchor="middle">offered req/s'
               '</text>' % (LEFT + pw / 2, H - 15))
    out.append('<text transform="translate(18,%d) rotate(-90)" '
               'text-anchor="middle">latency ms (log)</text>' %
               (TOP + ph / 2))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#444"/>' % (LEFT, TOP, pw, ph))
    for ms in lines_ms:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" '
                   'stroke="#d62728" stroke-dasharray="6,4"/>' %
                   (LEFT, LEFT + pw, ypos(ms), ypos(ms)))
        out.append('<text x="%d" y="%.1f" fill="#d62728">p99 &lt; %g ms'
                   '</text>' % (LEFT + pw + 6, ypos(ms) + 4, ms))
    for i, (label, pts) in enumerate(sorted(series.items(), reverse=True)):
        color = LATENCY_COLORS[i % len(LATENCY_COLORS)]
        by_x = {}
        for x, y in pts:
            by_x.setdefault(x, []).append(y)
        coords = " ".join("%.1f,%.1f" % (xpos(x), ypos(sorted(ys)[
            len(ys) // 2])) for x, ys in sorted(by_x.items()))
        if len(by_x) > 1:                   # through the median per rate
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" '
                       'points="%s"/>' % (color, coords))
        out += ['<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>'
                % (xpos(x), ypos(y), color) for x, y in pts]
        ly = TOP + ph - 60 + 20 * i
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" '
                   'stroke-width="2"/>' % (LEFT + pw + 12, LEFT + pw + 32, ly,
                                           ly, color))
        out.append('<text x="%d" y="%d">%s</text>' % (LEFT + pw + 38, ly + 4,
                                                      escape(label)))
    for x in invalid_x:
        cx, cy = xpos(x), TOP + 8
        out.append('<path d="M%.1f,%.1f l8,8 m0,-8 l-8,8" stroke="#7f7f7f" '
                   'stroke-width="2"/>' % (cx - 4, cy - 4))
    if invalid_x:
        ly = TOP + ph - 60 + 20 * len(series)
        out.append('<text x="%d" y="%d">x: no result</text>' %
                   (LEFT + pw + 12, ly + 4))
    out.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))
