#!/usr/bin/env python3
"""
test_monitoring.py: PHP-FPM's monitoring clients from Debian read cfpm
as they read a real php8.2-fpm. Both servers run side by side (cfpm
behind its shipped nginx site; php8.2-fpm, a static pool with
pm.status_path and ping.path, behind nginx as PHP-FPM's users serve
those pages) and every client asks both the same requests in the same
run:

- Zabbix, "PHP-FPM by Zabbix agent" and "PHP-FPM by HTTP": the template
  files Debian's zabbix-frontend-php ships, read here (tests/integration/
  zabbix.py: their items, keys, macros and preprocessing; the step types
  they use are REGEX, JSONPATH, CHANGE_PER_SECOND, SIMPLE_CHANGE and
  DISCARD_UNCHANGED_HEARTBEAT, with the CUSTOM_VALUE and DISCARD_VALUE
  error handlers, implemented as Zabbix 6.0 documents them; any other
  step fails the item). The agent's master items are fetched by a real
  zabbix_agentd -t 'web.page.get[...]', the HTTP template's by curl. Two
  polls a second apart (the change steps need a previous value): every
  item that gets a value for PHP-FPM gets one for cfpm, of the item's
  value type.
- Prometheus: `promtool check metrics` on both ?openmetrics pages: no
  warning for cfpm that PHP-FPM's own page does not get too (same metric,
  same message); then a real Prometheus server scrapes both pages: both
  targets up without a scrape error, every PHP-FPM metric among cfpm's
  with its type, and every sample of either page found in Prometheus's
  metadata with a type and a help text.
- collectd: curl_json with collectd's own PHP-FPM recipe
  (contrib/curl_json/php-fpm.conf in collectd's source: five keys of
  ?json; Debian's packages do not ship it, so it is written here with
  the test's URLs) and the csv writer, Interval 1: the same values
  arrive for both, each a number.
- cgi-fcgi (libfcgi-bin): the ping and status probes PHP-FPM users
  write, SCRIPT_NAME with and without SCRIPT_FILENAME and REQUEST_URI
  (the status with QUERY_STRING), on cfpm's pool and status sockets and
  on PHP-FPM's: wherever PHP-FPM answers 200, cfpm answers 200 with the
  same body (the ping) or the same page (the status: Content-Type, every
  PHP-FPM key with its JSON type); where PHP-FPM answers 404 because no
  SCRIPT_FILENAME came (it looks for a script; nginx's fastcgi_params,
  which cfpm's site uses, sends none), cfpm answers as to the same probe
  with one: it has no script to look for.

Each client is skipped (that part only, with the reason) when its
package is missing: tools/install-deps installs them all.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import cfpmtest as ct
import zabbix

POOL = 3
FPM_POOL = 2
POLL_GAP = 1.2          # seconds between two Zabbix polls
CLIENT_TIMEOUT = 20     # seconds for one client command
PROM_TIMEOUT = 60       # seconds for Prometheus to scrape both targets
COLLECTD_TIMEOUT = 30   # seconds for collectd's values to arrive
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
COLLECTD = shutil.which("collectd") or "/usr/sbin/collectd"
COLLECTD_PLUGINS = "/usr/lib/collectd"
COLLECTD_TYPES = "/usr/share/collectd/types.db"
CGI_FCGI = shutil.which("cgi-fcgi") or "/usr/bin/cgi-fcgi"

# collectd's recipe (contrib/curl_json/php-fpm.conf, collectd 5.10 on):
# the keys of ?json it reads, with its types and instances.
COLLECTD_RECIPE = [
    ("accepted conn", "total_requests", "accepted"),
    ("slow requests", "total_requests", "slow"),
    ("listen queue", "queue_length", "listen"),
    ("active processes", "vs_processes", "active"),
    ("total processes", "vs_processes", "total"),
]


def have(path, what, tap, name):
    """True if the executable path exists; else a skip with the reason."""
    if os.access(path, os.X_OK):
        return True
    tap.skip(name, "%s is not installed (tools/install-deps)" % what)
    return False


class Servers:
    """The two servers under the clients: cfpm (the Stack) and php-fpm,
    each behind nginx; .http[name] its port, .fcgi[name] its sockets."""

    def __init__(self, st):
        self.st = st
        ids = ct.worker_ids()
        d = os.path.join(st.dir, "php-fpm")
        os.makedirs(d)
        os.chmod(d, 0o755)
        self.fpm = ct.PhpFpm(d, FPM_POOL, *((ct.WORKER_USER,
                                             ct.WORKER_GROUP)
                                            if ids is not None else ()))
        st.logs += [self.fpm.log, self.fpm.out]
        self.fpm_port = ct.free_port()
        ng = os.path.join(st.dir, "fpm-nginx")
        os.makedirs(ng)
        self.fpm_nginx = ct.Nginx(ng, self.fpm_port,
                                  ct.fpm_status_site(self.fpm.sock,
                                                     self.fpm_port))
        st.logs.append(self.fpm_nginx.log)
        self.http = {"php-fpm": self.fpm_port, "cfpm": st.http_port}
        self.fcgi = {"php-fpm": [("its socket", self.fpm.sock)],
                     "cfpm": [("pool socket", st.sock),
                              ("status socket", st.status_sock)]}

    def start(self):
        up = self.fpm.ready()
        if up:
            self.fpm_nginx.start()
        return up

    def get(self, name, path):
        return ct.http_request(self.http[name], "GET", path, timeout=10)

    def stop(self):
        self.fpm_nginx.stop()
        return self.fpm.stop()


# -- cgi-fcgi -------------------------------------------------------------------

PING_FORMS = [
    ("SCRIPT_NAME, SCRIPT_FILENAME", {"SCRIPT_NAME": "/ping",
                                      "SCRIPT_FILENAME": "/ping"}),
    ("SCRIPT_NAME, SCRIPT_FILENAME, REQUEST_URI",
     {"SCRIPT_NAME": "/ping", "SCRIPT_FILENAME": "/ping",
      "REQUEST_URI": "/ping"}),
    ("SCRIPT_NAME alone", {"SCRIPT_NAME": "/ping"}),
    ("SCRIPT_NAME, REQUEST_URI", {"SCRIPT_NAME": "/ping",
                                  "REQUEST_URI": "/ping"}),
]


def status_forms():
    """The ping's forms for the status page, with QUERY_STRING."""
    out = []
    for what, env in PING_FORMS:
        e = {k: v.replace("/ping", "/status") for k, v in env.items()}
        for query in ("json", "json&full"):
            f = dict(e, QUERY_STRING=query)
            if "REQUEST_URI" in f:
                f["REQUEST_URI"] += "?" + query
            out.append(("%s, QUERY_STRING=%s" % (what, query), f))
    return out


def cgi_fcgi(sock, env):
    """cgi-fcgi -bind -connect sock with exactly env (and REQUEST_METHOD
    GET): (status, Content-Type, body) as a web server reads the reply."""
    e = dict(env, REQUEST_METHOD="GET")
    try:
        r = subprocess.run([CGI_FCGI, "-bind", "-connect", sock], env=e,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        return 0, None, b"(timed out)"
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    status, ctype = 200, None
    for line in head.decode("latin-1").split("\r\n"):
        k, _, v = line.partition(":")
        if k.strip().lower() == "status":
            status = int(v.split()[0]) if v.split() and \
                v.split()[0].isdigit() else 0
        elif k.strip().lower() == "content-type":
            ctype = v.strip()
    if not r.stdout:
        status = 0
    return status, ctype, body


def json_types(body):
    """{key: type name} of a JSON object's members (processes: the
    first process's keys, as "processes.KEY"), or None."""
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    out = {k: type(v).__name__ for k, v in obj.items()}
    for k, v in ((obj.get("processes") or [{}])[0]).items():
        out["processes." + k] = type(v).__name__
    return out


def same_page(ref, got, is_status):
    """'' if got (status, type, body) answers as ref does, else why."""
    if got[0] != 200 or got[1] != ref[1]:
        return "status %s, Content-Type %r (PHP-FPM: %s, %r)" % (
            got[0], got[1], ref[0], ref[1])
    if not is_status:
        return "" if got[2] == ref[2] else "body %r, PHP-FPM's %r" % (
            got[2][:60], ref[2][:60])
    want, have_ = json_types(ref[2]), json_types(got[2])
    if want is None or have_ is None:
        return "not JSON: %r" % got[2][:80]
    wrong = {k: (t, have_.get(k)) for k, t in want.items()
             if have_.get(k) != t}
    return "" if not wrong else "keys or types differ: %r" % wrong


def test_probes(tap, srv):
    """Each form on PHP-FPM's socket, then on both of cfpm's."""
    if not have(CGI_FCGI, "cgi-fcgi (libfcgi-bin)", tap, "cgi-fcgi probes"):
        return
    forms = [(w, e, False) for w, e in PING_FORMS] + \
        [(w, e, True) for w, e in status_forms()]
    with_file = {}
    for what, env, is_status in forms:
        ref = cgi_fcgi(srv.fpm.sock, env)
        tap.diag("php-fpm, %s: %s %s %r" % (what, ref[0], ref[1],
                                            ref[2][:40]))
        key = (is_status, env.get("QUERY_STRING"), "REQUEST_URI" in env)
        if ref[0] == 200:
            with_file[key] = ref
        else:
            # PHP-FPM wants a script file; cfpm has none: it answers
            # the probe as PHP-FPM answers the one with SCRIPT_FILENAME.
            tap.ok(ref[0] == 404 and "SCRIPT_FILENAME" not in env,
                   "php-fpm, %s: 404 only for want of SCRIPT_FILENAME"
                   % what, repr(ref))
            ref = with_file.get(key)
            if ref is None:
                tap.ok(False, "php-fpm answered the form with "
                       "SCRIPT_FILENAME first", what)
                continue
        for where, sock in srv.fcgi["cfpm"]:
            got = cgi_fcgi(sock, env)
            why = same_page(ref, got, is_status)
            tap.ok(why == "", "cgi-fcgi on cfpm's %s, %s: %s, as "
                   "php-fpm's" % (where, what, got[0]), why)


# -- Zabbix -------------------------------------------------------------------------

def zabbix_run(tap, srv, path, fetch_for):
    """Both servers through the template at path, two polls; returns
    {server: Poller}."""
    pollers = {}
    for name in ("php-fpm", "cfpm"):
        t = zabbix.Template(path, {"{$PHP_FPM.HOST}": "127.0.0.1",
                                   "{$PHP_FPM.PORT}": str(srv.http[name])})
        pollers[name] = zabbix.Poller(t, fetch_for)
    for n in range(2):
        for p in pollers.values():
            p.poll()
        if n == 0:
            time.sleep(POLL_GAP)
    return pollers


def zabbix_compare(tap, pollers, what):
    fpm, cfpm = pollers["php-fpm"], pollers["cfpm"]
    items = fpm.t.dependents()
    tap.ok(len(items) > 0, "%s: %d dependent items read from %s" % (
        what, len(items), fpm.t.name))
    tap.diag("%s: item, php-fpm's value, cfpm's (and why none)" % what)
    for i in items:
        tap.diag("  %-30s %-14r %-14r %s" % (
            i.key, fpm.values.get(i.key), cfpm.values.get(i.key),
            cfpm.why.get(i.key, "") if i.key not in cfpm.values else ""))
    json_items = [i.key for i in items
                  if i.steps and i.steps[0][0] == "JSONPATH"]
    tap.is_([k for k in json_items if k not in fpm.values], [],
            "%s: php-fpm gives every JSONPath item a value (the steps "
            "read as Zabbix reads them)" % what)
    missing = [i.key for i in items
               if i.key in fpm.values and i.key not in cfpm.values]
    tap.is_(missing, [], "%s: every item with a value for php-fpm has one "
            "for cfpm (php-fpm %d of %d, cfpm %d), of the item's type"
            % (what, len(fpm.values), len(items), len(cfpm.values)))


def test_zabbix(tap, srv):
    if not os.path.exists(zabbix.AGENT_TEMPLATE) or zabbix.yaml is None:
        tap.skip("Zabbix templates", "zabbix-frontend-php or python3-yaml "
                 "is not installed (tools/install-deps)")
        return
    if have(zabbix.ZABBIX_AGENTD, "zabbix_agentd (zabbix-agent)", tap,
            "PHP-FPM by Zabbix agent"):
        conf = zabbix.agent_conf(srv.st.dir)
        pollers = zabbix_run(tap, srv, zabbix.AGENT_TEMPLATE,
                             lambda item: zabbix.agent_get(item.key, conf))
        zabbix_compare(tap, pollers, "Zabbix agent template")
    pollers = zabbix_run(tap, srv, zabbix.HTTP_TEMPLATE, zabbix.http_get)
    zabbix_compare(tap, pollers, "Zabbix HTTP template")


# -- Prometheus ---------------------------------------------------------------------

def promtool_warnings(body):
    """promtool check metrics' findings on body: {(metric, message)}."""
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                       capture_output=True, timeout=CLIENT_TIMEOUT)
    out = set()
    for line in (r.stdout + r.stderr).decode("utf-8",
                                             "replace").splitlines():
        name, _, msg = line.strip().partition(" ")
        if name:
            out.add((name, msg))
    return out


def test_promtool(tap, srv):
    if not have(PROMTOOL, "promtool (prometheus)", tap, "promtool"):
        return
    pages = {n: srv.get(n, "/status?openmetrics") for n in srv.http}
    tap.ok(all(r.status == 200 for r in pages.values()), "?openmetrics: "
           "both 200", repr(pages))
    found = {n: promtool_warnings(r.body) for n, r in pages.items()}
    for n, w in sorted(found.items()):
        tap.diag("promtool on %s: %s" % (n, sorted(w)))
    tap.is_(sorted(found["cfpm"] - found["php-fpm"]), [], "promtool: no "
            "warning for cfpm that php-fpm's page does not get")


def prom_api(port, path):
    r = ct.http_request(port, "GET", path, timeout=5)
    try:
        return json.loads(r.body)["data"]
    except (ValueError, KeyError, TypeError):
        return None


def prom_series(port, job):
    """{metric name} of job's series in Prometheus."""
    d = prom_api(port, "/api/v1/series?match[]=%7Bjob%3D%22" + job +
                 "%22%7D")
    return {s["__name__"] for s in d or []}


def prom_metadata(port, job):
    """{metric: (type, help)} of job's target metadata."""
    d = prom_api(port, "/api/v1/targets/metadata?match_target=%7Bjob%3D%22"
                 + job + "%22%7D")
    return {m["metric"]: (m["type"], m["help"]) for m in d or []}


PROM_CONF = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
"""
PROM_JOB = """\
  - job_name: {job}
    metrics_path: /status
    params: {{openmetrics: ['']}}
    static_configs: [{{targets: ['127.0.0.1:{port}']}}]
"""


def test_prometheus(tap, srv):
    if not have(PROMETHEUS, "prometheus", tap, "a Prometheus scrape"):
        return
    d = os.path.join(srv.st.dir, "prometheus")
    os.makedirs(d)
    conf = os.path.join(d, "prometheus.yml")
    with open(conf, "w") as f:
        f.write(PROM_CONF + "".join(PROM_JOB.format(job=n, port=p)
                                    for n, p in srv.http.items()))
    port = ct.free_port()
    log = os.path.join(d, "prometheus.log")
    srv.st.logs.append(log)
    p = ct.spawn([PROMETHEUS, "--config.file=" + conf,
                  "--storage.tsdb.path=" + os.path.join(d, "data"),
                  "--web.listen-address=127.0.0.1:%d" % port],
                 log_path=log)

    last = []

    def scraped():
        # One slow scrape on a loaded machine is retried at the next
        # interval: wait until both are up, or report the last errors.
        if p.poll() is not None:
            return "dead"
        last[:] = (prom_api(port, "/api/v1/targets") or {}).get(
            "activeTargets", [])
        up = [x for x in last if x.get("health") == "up" and
              x.get("lastError") == ""]
        return len(up) == len(srv.http) and \
            all(prom_series(port, n) for n in srv.http)
    if not tap.ok(ct.wait_for(scraped, PROM_TIMEOUT, 0.5) is True,
                  "Prometheus: both targets up, scraped without an error",
                  repr([(x.get("labels", {}).get("job"), x.get("health"),
                         x.get("lastError")) for x in last]),
                  ct.tail(log, 20)):
        ct.stop(p, signal.SIGTERM, 10)
        return
    meta = {n: prom_metadata(port, n) for n in srv.http}
    series = {n: prom_series(port, n) for n in srv.http}
    tap.is_({m: (t, meta["cfpm"].get(m, ("none",))[0])
             for m, (t, _) in meta["php-fpm"].items()
             if meta["cfpm"].get(m, ("none",))[0] != t}, {},
            "Prometheus: every php-fpm metric is cfpm's, with its type")
    for n in srv.http:
        bare = sorted(s for s in series[n] if s.startswith(("phpfpm_",
                                                             "cfpm_")) and
                      (s not in meta[n] or meta[n][s][0] == "unknown" or
                       not meta[n][s][1]))
        tap.is_(bare, [], "Prometheus: every %s sample has metadata under "
                "its name, a type and a help text (%d series)"
                % (n, len(series[n])))
    ct.stop(p, signal.SIGTERM, 10)


# -- collectd -------------------------------------------------------------------

COLLECTD_CONF = """\
Hostname "cfpmtest"
FQDNLookup false
Interval 1
BaseDir "{d}"
PIDFile "{d}/collectd.pid"
PluginDir "{plugins}"
TypesDB "{types}"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "{d}/collectd.log"
</Plugin>
LoadPlugin curl_json
LoadPlugin csv
<Plugin csv>
  DataDir "{d}/csv"
</Plugin>
<Plugin curl_json>
{urls}</Plugin>
"""


def collectd_url(name, port):
    """collectd's recipe for one server: its URL, Plugin and Instance."""
    keys = "".join('    <Key "%s">\n      Type "%s"\n      Instance "%s"\n'
                   '    </Key>\n' % k for k in COLLECTD_RECIPE)
    return ('  <URL "http://127.0.0.1:%d/status?json">\n    Plugin '
            '"phpfpm"\n    Instance "%s"\n%s  </URL>\n' % (port, name,
                                                          keys))


def collectd_values(d, name):
    """{type-instance: last value} collectd's csv writer holds for name."""
    base = os.path.join(d, "csv", "cfpmtest", "phpfpm-" + name)
    out = {}
    for f in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        with open(os.path.join(base, f)) as fh:
            rows = [l.strip() for l in fh if l.strip()]
        if len(rows) > 1:
            out[re.sub(r"-\d{4}-\d\d-\d\d$", "", f)] = \
                rows[-1].split(",", 1)[1]
    return out


def test_collectd(tap, srv):
    if not have(COLLECTD, "collectd (collectd-core)", tap, "collectd") or \
            not os.path.exists(os.path.join(COLLECTD_PLUGINS,
                                            "curl_json.so")):
        return
    d = os.path.join(srv.st.dir, "collectd")
    os.makedirs(d)
    conf = os.path.join(d, "collectd.conf")
    with open(conf, "w") as f:
        f.write(COLLECTD_CONF.format(d=d, plugins=COLLECTD_PLUGINS,
                                     types=COLLECTD_TYPES,
                                     urls="".join(collectd_url(n, p) for
                                                  n, p in
                                                  srv.http.items())))
    log = os.path.join(d, "collectd.log")
    srv.st.logs.append(log)
    p = ct.spawn([COLLECTD, "-C", conf, "-f"],
                 log_path=os.path.join(d, "collectd.out"))
    want = len(COLLECTD_RECIPE)
    ct.wait_for(lambda: p.poll() is not None or all(
        len(collectd_values(d, n)) == want for n in srv.http),
        COLLECTD_TIMEOUT, 0.5)
    ct.stop(p, signal.SIGTERM, 10)
    got = {n: collectd_values(d, n) for n in srv.http}
    tap.diag("collectd: %r" % got)
    tap.is_(len(got["php-fpm"]), want, "collectd: php-fpm's %d values "
            "arrive (the recipe as collectd ships it)" % want)
    tap.is_(sorted(got["cfpm"]), sorted(got["php-fpm"]), "collectd: the "
            "same values arrive for cfpm")
    bad = [k for n in got for k, v in got[n].items()
           if not re.fullmatch(r"[0-9.e+-]+", v)]
    tap.is_(bad, [], "collectd: each a number")
    url = "127.0.0.1:%d/" % srv.http["cfpm"]
    errors = [l for l in open(log, errors="replace")
              if "curl_json" in l and (url in l or "yajl" in l)] \
        if os.path.exists(log) else []
    tap.is_(errors, [], "collectd: no curl_json complaint about cfpm's "
            "page")


def body(tap):
    with ct.Stack(tap).setup() as st:
        st.start_cfpm({"pm.max_children": POOL})
        if not ct.php_fpm_installed():
            tap.skip("monitoring clients on cfpm and PHP-FPM",
                     "php-fpm8.2 is not installed (tools/install-deps)")
            return
        srv = Servers(st)
        up = srv.start()
        tap.ok(up, "php-fpm8.2 serves its status page",
               ct.tail(srv.fpm.log, 20), ct.tail(srv.fpm.out, 20))
        if not up:
            return
        tok = st.tokens["valid"]
        tap.is_([st.get("/events/%d" % (i + 1), tok).status
                 for i in range(4)], [200] * 4, "cfpm serves requests")
        tap.is_([srv.get(n, "/ping").status for n in srv.http], [200, 200],
                "GET /ping through nginx: 200 from both")
        test_probes(tap, srv)
        test_zabbix(tap, srv)
        test_promtool(tap, srv)
        test_prometheus(tap, srv)
        test_collectd(tap, srv)
        tap.is_(srv.stop(), 0, "php-fpm8.2 stops on SIGQUIT")
        st.stop_cfpm()


if __name__ == "__main__":
    ct.main(body)
