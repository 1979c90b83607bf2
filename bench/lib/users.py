"""
users.py: the virtual-users mode (bench/run --users, or the "users"
part of a study): how many users a candidate holds.

Each user holds one keep-alive connection and loops: GET /events/{id},
think 3-7 s, GET, think 3-8 s, a POST with 15 % probability, another
with 2 %, rest 5-15 s (about 20.5 s and 2.17 requests a cycle: 1,000
users make ~106 req/s, ~8 % writes). The generator is tsung (Debian
1.7): one Erlang process per user, think times uniform in their
ranges, one persistent HTTP/1.1 connection per user, every request
logged (dumptraffic="protocol") so the percentiles are exact. Users come
from source addresses 127.0.0.2.. (USERS_PER_SOURCE each: loopback has
~28k ephemeral ports per source and destination), each with its own
token of the run's pool.

A level is one tsung run: users ramped in at --user-ramp users/s but
over one cycle at least (so their cycles are spread evenly and the rate
is steady), SETTLE_S to settle, then a plateau of --user-plateau
seconds, all bounded
(tsung's own duration limit, and a timeout here). The level passes (the
public challenge's rule) when over the plateau p95 < 500 ms and
p99 < 1 s, errors (non-2xx, refused or failed connections, timeouts) are
under 1 % of the requests over the whole run, and every user was held: none had its connection dropped and re-made
(tsung's connect and reconnect counts) and the server still holds a
connection per user at the plateau's end. Levels double from the first
(--user-levels auto) up to the first failure, then REFINE_STEPS
bisections between the last pass and the first failure; a list of
levels is run as given, stopping at the first failure.

The generator shares the load CPUs (with PostgreSQL on small machines)
and, in one Erlang VM, holds at most the descriptors RLIMIT_NOFILE
allows: a level whose generator did not start every user, or was
saturated (its CPUs busier than
measure.LOAD_BUSY_MAX while tsung used BUSY_SHARE_MIN of them or more,
tsung's own share over measure.GEN_CPU_MAX, or
the request rate short of the scenario's by more than RATE_SLACK, or
three standard deviations of its count, while latencies were fine) or
that needs more connections than the generator can open is not a
result: the score is then "at least" the last level
that passed.
"""

import math
import os
import resource
import time

from harness import proc

from . import measure

# The scenario (seconds): think times, write probabilities (percent).
THINK_1 = (3, 7)
THINK_2 = (3, 8)
REST = (5, 15)
WRITE_PCT = 15
WRITE2_PCT = 2
CYCLE_S = sum(sum(t) / 2 for t in (THINK_1, THINK_2, REST))
REQUESTS_PER_CYCLE = 2 + (WRITE_PCT + WRITE2_PCT) / 100
# The score's rule.
P95_MAX_MS = 500
P99_MAX_MS = 1000
ERRORS_MAX = 0.01
# Levels: the first of "auto", bisections after the first failure,
# and the generator's limits.
FIRST_LEVEL = 1000
REFINE_STEPS = 2
USERS_PER_SOURCE = 20000
RATE_SLACK = 0.10
# Busy generator CPUs starve tsung only once it needs a real share of
# them: a task that sleeps most of the time is woken at once on a busy
# CPU (the scheduler favours it), one that needs a quarter of the CPU
# waits behind the others.
BUSY_SHARE_MIN = 0.25
# Users arrive over at least one cycle, so that their cycles are spread
# evenly and the request rate is steady once all are in; the plateau
# starts SETTLE_S after the last arrival.
SETTLE_S = 5
# tsung's arrivals are a Poisson process: the phase runs at the ramp's
# rate for up to ARRIVAL_SPAN times the ramp and stops at the level; the
# plateau starts ARRIVAL_MARGIN later than the ramp (the last arrival is
# later than ramp_s by a few standard deviations at most).
ARRIVAL_SPAN = 2
ARRIVAL_MARGIN = (0.1, 2)           # share of the ramp, plus seconds
FD_RESERVE = 200            # descriptors the generator's VM keeps for itself
TSUNG = os.environ.get("CFPM_TSUNG") or "/usr/bin/tsung"
DTD = "/usr/share/tsung/tsung-1.0.dtd"
BODY = ('{"kind":"page_view","payload":{"path":"/pricing","ms":182,'
        '"ref":"newsletter"}}')
# tsung starts its VM and a warm-up before the first user (a bound, in
# seconds); its duration limit ends it TAIL_S after the plateau, less
# that start (a level whose plateau it cut short is no result).
START_SLACK_S = 15
TAIL_S = 6


def arrival_bound(ramp_s):
    """Seconds after the first request by which every user has come."""
    share, secs = ARRIVAL_MARGIN
    return ramp_s * (1 + share) + secs


def generator_cap():
    """Users one tsung VM can hold: its descriptors (RLIMIT_NOFILE hard
    limit, which it inherits) less a reserve."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1] - FD_RESERVE


def expected_rps(users):
    """The scenario's request rate for a number of users."""
    return users * REQUESTS_PER_CYCLE / CYCLE_S


def _think(lo_hi):
    return '<thinktime min="%d" max="%d" random="true"/>' % lo_hi


def _request(method, token_var="token"):
    auth = ('<http_header name="Authorization" value="Bearer %%%%_%s%%%%"/>'
            % token_var)
    if method == "GET":
        return ('<request subst="true"><http url="/events/%%_id%%" '
                'method="GET" version="1.1">' + auth + '</http></request>')
    return ('<request subst="true"><http url="/events" method="POST" '
            'version="1.1" content_type="application/json" contents=\'' +
            BODY + '\'>' + auth + '</http></request>')


def _maybe(var, pct):
    return ('<setdynvars sourcetype="random_number" start="1" end="100">'
            '<var name="%s"/></setdynvars><if var="%s" lte="%d">%s</if>' %
            (var, var, pct, _request("POST")))


def scenario_xml(users, port, ramp_s, duration_s, tokens, rows):
    """tsung.xml for one level: users arriving over ramp_s seconds, the
    whole run bounded by duration_s, against 127.0.0.1:port."""
    sources = max(1, math.ceil(users / USERS_PER_SOURCE))
    ips = "".join('<ip value="127.0.0.%d"/>' % (2 + i) for i in
                  range(sources))
    rate = users / ramp_s
    phase = math.ceil(ARRIVAL_SPAN * ramp_s)
    cycle = "".join([
        '<setdynvars sourcetype="random_number" start="1" end="%d">'
        '<var name="id"/></setdynvars>' % rows, _request("GET"),
        _think(THINK_1),
        '<setdynvars sourcetype="random_number" start="1" end="%d">'
        '<var name="id"/></setdynvars>' % rows, _request("GET"),
        _think(THINK_2), _maybe("w1", WRITE_PCT), _maybe("w2", WRITE2_PCT),
        _think(REST)])
    return """<?xml version="1.0"?>
<!DOCTYPE tsung SYSTEM "%(dtd)s">
<tsung loglevel="error" dumptraffic="protocol">
 <clients><client host="localhost" use_controller_vm="true"
   maxusers="%(maxusers)d">%(ips)s</client></clients>
 <servers><server host="127.0.0.1" port="%(port)d" type="tcp"/></servers>
 <load duration="%(duration)d" unit="second">
  <arrivalphase phase="1" duration="%(ramp)d" unit="second">
   <users maxnumber="%(users)d" arrivalrate="%(rate).6f" unit="second"/>
  </arrivalphase>
 </load>
 <options>
  <option name="file_server" id="tokens" value="%(tokens)s"/>
  <option name="hibernate" value="infinity"/>
 </options>
 <sessions>
  <session name="user" probability="100" type="ts_http">
   <setdynvars sourcetype="file" fileid="tokens" delimiter=";"
     order="iter"><var name="token"/></setdynvars>
   <for from="1" to="1000000" var="cycle">%(cycle)s</for>
  </session>
 </sessions>
</tsung>
""" % {"dtd": DTD, "maxusers": users + 1, "ips": ips, "port": port,
       "duration": duration_s, "ramp": phase, "users": users,
       "rate": rate, "tokens": tokens, "cycle": cycle}


# -- tsung's output -----------------------------------------------------------

def parse_stats(path):
    """Totals of tsung.log's last dump: {name: total}. A counter line is
    "stats: NAME interval total"; a sample line "stats: NAME count mean
    stddev max min global_mean global_count", whose total is count +
    global_count (the intervals before)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 4 or parts[0] != "stats:":
                    continue
                name, nums = parts[1], parts[2:]
                try:
                    if len(nums) == 2:
                        out[name] = float(nums[1])
                    elif len(nums) == 7:
                        out[name] = float(nums[0]) + float(nums[6])
                except ValueError:
                    continue
    except OSError:
        pass
    return out


def parse_dump(path):
    """tsung.dump's requests: [(end time, status, duration ms)]."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                f_ = line.rstrip("\n").split(";")
                if len(f_) < 9:
                    continue
                try:
                    out.append((float(f_[0]), f_[6], float(f_[8])))
                except ValueError:
                    continue
    except OSError:
        pass
    return out


def _first_request_time(path):
    """The end time of the dump's first request, or None."""
    try:
        with open(path) as f:
            for line in f:
                if not line.startswith("#") and ";" in line:
                    return float(line.split(";", 1)[0])
    except (OSError, ValueError):
        pass
    return None


def _pct(sorted_ms, q):
    if not sorted_ms:
        return None
    return sorted_ms[min(len(sorted_ms) - 1, max(0, math.ceil(
        q * len(sorted_ms)) - 1))]


def established(port):
    """TCP connections in state ESTABLISHED whose local port is port."""
    n = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "01" and \
                            int(parts[1].rsplit(":", 1)[1], 16) == port:
                        n += 1
        except (OSError, StopIteration):
            continue
    return n


def fd_limits(pids):
    """{comm: soft RLIMIT_NOFILE} of the candidate's processes."""
    out = {}
    for pid in pids:
        try:
            with open("/proc/%d/limits" % pid) as f:
                for line in f:
                    if line.startswith("Max open files"):
                        with open("/proc/%d/comm" % pid) as c:
                            out[c.read().strip()] = int(line.split()[3])
        except (OSError, ValueError, IndexError):
            continue
    return out


# -- one level ----------------------------------------------------------------

TSUNG_ERRORS_IGNORED = ("error_abort",)    # sessions ended by the duration


def _verdict(rec, load_cpus):
    """Fills rec's reasons (the rule) and invalid_reasons (the
    generator)."""
    why, gen = [], []
    if rec["started"] < rec["users"]:       # tsung starts the users
        gen.append("generator started %d of %d users" % (rec["started"],
                                                          rec["users"]))
    if rec["p95_ms"] is None or rec["p95_ms"] >= P95_MAX_MS:
        why.append("p95 %s ms >= %d" % (_n(rec["p95_ms"]), P95_MAX_MS))
    if rec["p99_ms"] is None or rec["p99_ms"] >= P99_MAX_MS:
        why.append("p99 %s ms >= %d" % (_n(rec["p99_ms"]), P99_MAX_MS))
    if rec["errors_share"] >= ERRORS_MAX:
        why.append("errors %.2f %% >= %.0f %%" % (100 * rec["errors_share"],
                                                 100 * ERRORS_MAX))
    if rec["not_held"]:
        why.append("%d users not held (connections re-made: %d, server "
                   "holds %d of %d)" % (rec["not_held"], rec["reconnects"],
                                        rec["server_connections"],
                                        rec["users"]))
    busy = rec["load_busy"]
    share = rec["gen_cores_used"] / max(1, len(load_cpus))
    if busy is not None and busy > measure.LOAD_BUSY_MAX and \
            share >= BUSY_SHARE_MIN:
        gen.append("generator CPUs saturated: %.0f %% busy, tsung %.0f %%" %
                   (100 * busy, 100 * share))
    if share > measure.GEN_CPU_MAX:
        gen.append("tsung uses %.0f %% of its CPUs" % (100 * share))
    latency_ok = rec["p95_ms"] is not None and rec["p95_ms"] < P95_MAX_MS
    # The plateau's request count is random (think times): allow three
    # standard deviations of a Poisson count beside RATE_SLACK.
    want = rec["expected_rps"] * rec["plateau_s"]
    slack = max(RATE_SLACK, 3 / math.sqrt(want)) if want > 0 else 1
    if latency_ok and rec["rps"] < (1 - slack) * rec["expected_rps"]:
        gen.append("generator behind the scenario: %.0f of %.0f req/s" %
                   (rec["rps"], rec["expected_rps"]))
    rec["reasons"], rec["invalid_reasons"] = why, gen
    rec["valid"] = not gen
    rec["passed"] = not why


def _n(v):
    return "-" if v is None else "%.0f" % v


def run_level(ctx, cell, n, tokens):
    """One level of n users against the cell's candidate; returns its
    record (recorded by the caller)."""
    o = ctx.opts
    ramp_s = max(CYCLE_S, n / o.user_ramp)
    settle = min(SETTLE_S, o.user_plateau)
    offset = arrival_bound(ramp_s) + settle     # plateau from 1st request
    duration = math.ceil(offset + o.user_plateau + TAIL_S)
    d = os.path.join(cell.dir, "tsung-%d" % n)
    os.makedirs(d)
    xml = os.path.join(d, "tsung.xml")
    with open(xml, "w") as f:
        f.write(scenario_xml(n, cell.cand.port, ramp_s, duration, tokens,
                             o.rows))
    logdir = os.path.join(d, "log")
    # -i: the controller's Erlang node name is unique per level, so two
    # tsung runs on one machine do not clash.
    p = proc.spawn([TSUNG, "-n", "-i", "cfpm%d-%d" % (os.getpid(), n), "-f",
                    xml, "-l", logdir, "start"],
                   log_path=os.path.join(d, "tsung.out"),
                   env=dict(os.environ, HOME=d), group=ctx.load_group,
                   cpus=ctx.layout.load)

    def run_dir():
        subs = [x for x in os.listdir(logdir)] if os.path.isdir(logdir) \
            else []
        return os.path.join(logdir, subs[0]) if subs else None
    dump = lambda: os.path.join(run_dir() or logdir, "tsung.dump")  # noqa
    t_first = proc.wait_for(lambda: _first_request_time(dump()),
                            START_SLACK_S, 0.2)
    rec = {"kind": "users", "role": cell.cand.role,
           "candidate": cell.cand.name, "front": cell.cand.front,
           "cores": cell.cores, "pool": cell.pool, "users": n,
           "sources": max(1, math.ceil(n / USERS_PER_SOURCE)),
           "ramp_s": ramp_s, "settle_s": settle,
           "plateau_s": o.user_plateau, "expected_rps": expected_rps(n),
           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if t_first is None:
        proc.stop(p)
        rec.update(valid=False, passed=False, reasons=[],
                   invalid_reasons=["tsung sent nothing within %d s: %s" % (
                       START_SLACK_S, proc.tail(os.path.join(d,
                                                             "tsung.out")))])
        return rec
    # The plateau on the wall clock tsung's dump uses, mapped to ours.
    lag = time.time() - t_first
    start = time.monotonic() - lag + offset
    measure.sleep_until(start)
    groups = {"cand": cell.group, "db": ctx.db_group, "load": ctx.load_group}
    before = measure.snapshot(groups, ctx.layout.load)
    wall0 = time.time()
    rss = measure.RssTracker(cell.group)
    while time.monotonic() < start + o.user_plateau:
        rss.sample()
        time.sleep(min(measure.RSS_EVERY_S, max(0.0, start + o.user_plateau -
                                                  time.monotonic())))
    after = measure.snapshot(groups, ctx.layout.load)
    wall1 = time.time()
    rec["server_connections"] = established(cell.cand.port)
    rec["fd_limits"] = fd_limits(cell.group.pids())
    if p.poll() is None:
        try:
            p.wait(timeout=2 * START_SLACK_S)
        except Exception:
            pass
    ended = p.poll() is not None
    proc.stop(p)
    rd = run_dir() or logdir
    reqs = parse_dump(os.path.join(rd, "tsung.dump"))
    st = parse_stats(os.path.join(rd, "tsung.log"))
    rec = _figures(rec, reqs, st, before, after, wall0, wall1, rss,
                   ctx.layout.load)
    last = max((t for t, _, _ in reqs), default=0)
    if not ended or last < wall1 - TAIL_S:
        rec["valid"] = False
        rec["invalid_reasons"].append(
            "tsung did not end within %d s of the plateau" %
            (2 * START_SLACK_S) if not ended else
            "tsung ended before the plateau did")
    return rec


def _figures(rec, reqs, st, before, after, wall0, wall1, rss, load_cpus):
    """Fills rec from the requests, tsung's totals and the plateau's
    counters."""
    plateau = sorted(ms for t, _, ms in reqs if wall0 <= t <= wall1)
    secs = after["t"] - before["t"]
    cpu = {k: after["groups"][k] - before["groups"][k]
           for k in before["groups"]}
    non2xx = sum(1 for _, s, _ in reqs if not s.startswith("2"))
    terr = {k: int(v) for k, v in st.items() if k.startswith("error_") and
            k not in TSUNG_ERRORS_IGNORED}
    started = int(st.get("users_count", 0))
    connects = int(st.get("connect", 0))
    reconnects = max(int(st.get("reconnect", 0)), connects - started)
    n = len(reqs)
    rec.update({
        "started": started, "requests": n, "plateau_requests": len(plateau),
        "rps": len(plateau) / secs if secs > 0 else 0.0,
        "p50_ms": _pct(plateau, 0.50), "p95_ms": _pct(plateau, 0.95),
        "p99_ms": _pct(plateau, 0.99), "max_ms": plateau[-1] if plateau
        else None,
        "non_2xx": non2xx, "tsung_errors": terr,
        "errors_share": (non2xx + sum(terr.values())) / n if n else 1.0,
        "connects": connects, "reconnects": reconnects,
        "not_held": max(reconnects, rec["users"] - rec["server_connections"],
                        0),
        "cpu_us_per_req": cpu["cand"] / len(plateau) if plateau else None,
        "db_cpu_us_per_req": cpu["db"] / len(plateau) if plateau else None,
        "cand_cores_used": cpu["cand"] / 1e6 / secs if secs > 0 else None,
        "gen_cores_used": cpu["load"] / 1e6 / secs if secs > 0 else 0.0,
        "load_busy": measure.busy_share(before["cpus"], after["cpus"],
                                         list(load_cpus), secs),
        "memory": rss.result()})
    _verdict(rec, load_cpus)
    return rec


# -- the search ---------------------------------------------------------------

def parse_levels(text):
    """"auto" -> None; "100,200" -> [100, 200]."""
    if text.strip() == "auto":
        return None
    return [int(x) for x in text.split(",") if x.strip()]


def _log(rec):
    proc.log("  users %d: p95 %s ms, p99 %s ms, %.0f req/s, errors %.2f %%, "
             "not held %s, tsung %.2f cores, %s%s" % (
                 rec["users"], _n(rec.get("p95_ms")), _n(rec.get("p99_ms")),
                 rec.get("rps", 0), 100 * rec.get("errors_share", 1),
                 rec.get("not_held", "-"), rec.get("gen_cores_used", 0),
                 "passed" if rec["passed"] else "FAILED: " +
                 "; ".join(rec["reasons"]),
                 "" if rec["valid"] else " (INVALID: %s)" %
                 "; ".join(rec["invalid_reasons"])))


def run(ctx, cell):
    """The levels of one candidate (see the module's doc); each level's
    record goes to records.jsonl."""
    o = ctx.opts
    cap = generator_cap()
    tokens = ctx.token_files["users"]
    given = parse_levels(o.user_levels)

    def level(n):
        rec = run_level(ctx, cell, n, tokens)
        rec["generator_cap"] = cap
        ctx.record(rec)
        _log(rec)
        return rec["valid"] and rec["passed"], rec["valid"]

    def capped(n):
        ctx.record({"kind": "users-capped", "candidate": cell.cand.name,
                    "users": n, "generator_cap": cap})
        proc.log("  users %d: more than the generator holds (%d)" % (n, cap))

    if given is not None:
        for n in given:
            if n > cap:
                capped(n)
                break
            if not level(n)[0]:
                break
        return
    lo, hi, n = None, None, FIRST_LEVEL
    while True:
        ok, valid = level(min(n, cap))
        if not ok:
            hi = min(n, cap) if valid else None
            break
        lo = min(n, cap)
        if n >= cap:
            capped(2 * n)
            break
        n *= 2
    for _ in range(REFINE_STEPS if lo and hi else 0):
        mid = int(round((lo + hi) / 2, -2))
        if mid <= lo or mid >= hi:
            break
        ok, valid = level(mid)
        if not valid:
            break
        lo, hi = (mid, hi) if ok else (lo, mid)
