"""
svg.py: a small line chart written as SVG by hand (no plotting package):
categorical x axis (pool sizes), linear y axis from 0, one polyline per
series with min-max whiskers around each median point, and a legend.
"""

from xml.sax.saxutils import escape

W, H = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 80, 200, 40, 60
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
          "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"]


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
