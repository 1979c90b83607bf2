#!/usr/bin/env python3
"""
test_status_compat.py: cfpm's status socket answers what PHP-FPM's status
page answers, to the clients written for PHP-FPM (nginx + cfpm +
PostgreSQL, and Debian's php8.2-fpm beside them).

The real thing. Debian's php-fpm8.2 runs a private static pool of 2 with
pm.status_path and ping.path on a unix socket in the test's directory.
Both servers are asked the same raw FastCGI requests, byte for byte, and
for every format cfpm's answer must be a superset of PHP-FPM's: the JSON
keys at the top level and per process, each PHP-FPM key with the same
JSON type (int, float, string); the XML elements; the text and HTML keys;
the OpenMetrics metric names with their types; the Content-Type, Expires
and Cache-Control headers. Skipped (and only that part) when php-fpm8.2
is not installed.

An exporter's request. hipages/php-fpm_exporter talks FastCGI straight to
the status socket with SCRIPT_FILENAME, SCRIPT_NAME, SERVER_SOFTWARE,
REMOTE_ADDR and QUERY_STRING=json&full (its FastCGI client adds
REQUEST_METHOD=GET and CONTENT_LENGTH=0) and no REQUEST_URI: cfpm answers
200 with the JSON it parses, and counts the requests served. A client
that sends REQUEST_URI=/status and QUERY_STRING=json gets JSON too. On
the pool socket, where PHP-FPM users point it (PHP-FPM has one socket),
a worker answers the same page: the status socket's figures.

Peaks. Requests held on a table lock: max active processes is exactly
the number held at once, max children reached counts each time every
worker was busy, and both are counted by the workers as it happens, not
sampled by the master.
"""
import re
import threading
import xml.etree.ElementTree as ElementTree

import cfpmtest as ct

POOL = 3
FPM_POOL = 2
HELD_URI = "/events/1"
XHTML = "{http://www.w3.org/1999/xhtml}"

# What hipages/php-fpm_exporter (phpfpm/phpfpm.go) sends, and what its
# FastCGI client (tomasen/fcgi_client, Get) adds.
EXPORTER = {
    "SCRIPT_FILENAME": "/status",
    "SCRIPT_NAME": "/status",
    "SERVER_SOFTWARE": "go / php-fpm_exporter",
    "REMOTE_ADDR": "127.0.0.1",
    "QUERY_STRING": "json&full",
    "REQUEST_METHOD": "GET",
    "CONTENT_LENGTH": "0",
}

# PHP-FPM 8.2's states (fpm_request.c) and cfpm's own before its first
# wait for a connection.
STATES = {"Idle", "Reading headers", "Getting request information",
          "Running", "Ending", "Finishing", "Starting"}


def status_params(query, path="/status"):
    """The exporter's request for another query (or path)."""
    p = dict(EXPORTER)
    p.update({"QUERY_STRING": query, "SCRIPT_NAME": path,
              "SCRIPT_FILENAME": path})
    return p


def ask(sock, query):
    return ct.fcgi_exact(sock, status_params(query), timeout=5)


# -- what a page holds ------------------------------------------------------

def json_types(obj):
    """{key: JSON type name} of an object's members."""
    names = {int: "int", float: "float", str: "str", list: "array",
             dict: "object", bool: "bool", type(None): "null"}
    return {k: names[type(v)] for k, v in obj.items()}


def text_keys(body):
    """(summary keys, first worker block's keys) of a ?full text page."""
    blocks = body.decode("utf-8", "replace").split(
        "\n************************\n")

    def keys(block):
        return [l.split(":", 1)[0] for l in block.split("\n") if ":" in l]
    return keys(blocks[0]), keys(blocks[1]) if len(blocks) > 1 else []


def xml_names(body):
    """(summary element names, first process's element names)."""
    root = ElementTree.fromstring(body)
    proc = root.find("processes/process")
    return ([e.tag for e in root if e.tag != "processes"],
            [e.tag for e in proc] if proc is not None else [])


def html_names(body):
    """(summary row names, worker table column names) of ?html&full."""
    root = ElementTree.fromstring(body)
    tables = root.findall("%sbody/%stable" % (XHTML, XHTML))
    rows = [tr.findtext(XHTML + "th") for tr in tables[0]]
    cols = [th.text for th in tables[1].find(XHTML + "tr")] \
        if len(tables) > 1 else []
    return rows, cols


def om_types(body):
    """{metric name: type} from an OpenMetrics page's TYPE lines."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$",
                           body.decode("utf-8", "replace"), re.M))


def missing(fpm, cfpm):
    """PHP-FPM's names cfpm lacks, in PHP-FPM's order."""
    have = set(cfpm)
    return [k for k in fpm if k not in have]


# -- the tests ----------------------------------------------------------------

def warm_up(st, n=6):
    """n requests to the pool, one after another; returns their statuses."""
    tok = st.tokens["valid"]
    return [st.get("/events/%d" % (i + 1), tok).status for i in range(n)]


def test_exporter(st):
    """The exporter's exact request, and REQUEST_URI-only clients."""
    tap = st.tap
    tap.is_(warm_up(st), [200] * 6, "six requests served first")
    r = ct.fcgi_exact(st.status_sock, EXPORTER, timeout=5)
    j = r.json() if r.status == 200 else None
    tap.ok(r.status == 200 and r.header("content-type") ==
           "application/json" and isinstance(j, dict),
           "the exporter's request (SCRIPT_NAME=/status, QUERY_STRING="
           "json&full, no REQUEST_URI) answers 200 JSON", repr(r))
    j = j or {}
    tap.diag("exporter's answer: %s" % r.body[:600].decode("utf-8",
                                                             "replace"))
    tap.cmp_ok(j.get("accepted conn", 0), ">=", 6, "accepted conn counts "
               "the requests served")
    pids = sorted(p.get("pid") for p in j.get("processes", []))
    tap.is_(pids, sorted(st.cfpm.workers()), "one process per worker, "
            "by pid")
    tap.ok(all(p.get("state") in STATES for p in j.get("processes", [])),
           "every state is one of PHP-FPM's",
           repr([p.get("state") for p in j.get("processes", [])]))
    tap.ok(r.header("expires") == "Thu, 01 Jan 1970 00:00:00 GMT" and
           r.header("cache-control") == "no-cache, no-store, "
           "must-revalidate, max-age=0", "PHP-FPM's Expires and "
           "Cache-Control", repr(r.headers))
    r = ct.fcgi_exact(st.status_sock, {"REQUEST_URI": "/status",
                                       "QUERY_STRING": "json",
                                       "REQUEST_METHOD": "GET"}, timeout=5)
    j = r.json() if r.status == 200 else None
    tap.ok(isinstance(j, dict) and "accepted conn" in j and
           "processes" not in j, "REQUEST_URI=/status, QUERY_STRING=json, "
           "no SCRIPT_NAME: JSON, not text", repr(r))
    r = ct.fcgi_exact(st.status_sock, {"REQUEST_URI": "/status?json&full",
                                       "REQUEST_METHOD": "GET"}, timeout=5)
    j = r.json() if r.status == 200 else None
    tap.ok(isinstance(j, dict) and len(j.get("processes", [])) == POOL,
           "REQUEST_URI=/status?json&full, no QUERY_STRING: the query "
           "from the URI", repr(r))
    p = status_params("json")
    p["REQUEST_URI"] = "/elsewhere?x"
    r = ct.fcgi_exact(st.status_sock, p, timeout=5)
    tap.ok(r.status == 200 and r.json() is not None, "SCRIPT_NAME "
           "decides, not REQUEST_URI (as PHP-FPM)", repr(r))
    p = status_params("json", "/elsewhere")
    p["REQUEST_URI"] = "/status"
    r = ct.fcgi_exact(st.status_sock, p, timeout=5)
    tap.is_(r.status, 404, "SCRIPT_NAME=/elsewhere is not the status page "
            "whatever REQUEST_URI says")
    for query, ctype in (("xml&json&html", "text/html;charset=UTF-8"),
                         ("openmetrics&json", "application/json"),
                         ("%6Ason=0&full[]=1", "application/json"),
                         ("JSON", "text/plain;charset=UTF-8")):
        r = ask(st.status_sock, query)
        tap.is_(r.header("content-type"), ctype, "?%s: %s, as PHP-FPM "
                "reads the query" % (query, ctype))
    test_pool_socket(st)
    r = ct.fcgi_exact(st.status_sock, {"SCRIPT_NAME": "/ping",
                                       "REQUEST_METHOD": "GET"}, timeout=5)
    tap.ok(r.status == 200 and r.body == b"pong" and
           r.header("cache-control") == "no-cache, no-store, "
           "must-revalidate, max-age=0", "ping by SCRIPT_NAME alone: 200 "
           "pong, never cached", repr(r))


# What the pool socket's page (a worker's) and the status socket's (the
# master's) must agree on: nothing here moves between two requests.
SAME_FIGURES = ("pool", "process manager", "start time", "total processes",
                "listen queue len", "generation", "reloads")


def test_pool_socket(st):
    """The exporter's request on the pool socket, as PHP-FPM answers it
    on its pool: the status socket's page, served by a worker."""
    tap = st.tap
    before = ct.fcgi_exact(st.status_sock, EXPORTER, timeout=5).json() or {}
    pool = ct.fcgi_exact(st.sock, EXPORTER, timeout=5)
    master = ct.fcgi_exact(st.status_sock, EXPORTER, timeout=5)
    pj, mj = pool.json() or {}, master.json() or {}
    tap.ok(pool.status == 200 and pool.header("content-type") ==
           "application/json" and pool.header("cache-control") ==
           master.header("cache-control") and "accepted conn" in pj,
           "the exporter's request on the pool socket: 200 JSON, as on "
           "the status socket", repr(pool))
    tap.is_({k: pj.get(k) for k in SAME_FIGURES},
            {k: mj.get(k) for k in SAME_FIGURES}, "the pool socket's page "
            "has the status socket's figures (the listen queue as the "
            "master last sampled it)")
    tap.is_(sorted(p.get("pid") for p in pj.get("processes", [])),
            sorted(st.cfpm.workers()), "the pool socket's page lists every "
            "worker by pid")
    accepted = [j.get("accepted conn") for j in (before, pj, mj)]
    tap.ok(pj.get("active processes", 0) >= 1 and None not in accepted and
           accepted[0] + 1 == accepted[1] == accepted[2],
           "the worker serving it is active, and the page is a request "
           "the pool accepted (as PHP-FPM's)", "accepted conn before, on "
           "the pool socket, after: %r" % accepted)
    p = status_params("json")
    p["REQUEST_METHOD"] = "POST"
    r = ct.fcgi_exact(st.sock, p, timeout=5)
    tap.ok(r.status == 405 and r.header("allow") == "GET, HEAD",
           "POST to the status path on the pool socket: 405, as on the "
           "status socket", repr(r))
    r = ct.fcgi_exact(st.sock, status_params("openmetrics"), timeout=5)
    tap.ok(r.status == 200 and r.body.endswith(b"# EOF\n") and
           b"\nphpfpm_up 1\n" in r.body, "?openmetrics on the pool "
           "socket", repr(r))


def compare_json(tap, fpm, cfpm):
    fj, cj = fpm.json(), cfpm.json()
    if not tap.ok(isinstance(fj, dict) and isinstance(cj, dict),
                  "?json&full: both answer JSON", repr(fpm), repr(cfpm)):
        return
    tap.diag("PHP-FPM's keys: %s" % ", ".join(k for k in fj
                                                 if k != "processes"))
    tap.diag("cfpm's extra keys: %s" % ", ".join(k for k in cj
                                                    if k not in fj))
    tap.is_(missing(fj, cj), [], "JSON: every PHP-FPM key is cfpm's")
    tap.is_({k: t for k, t in json_types(cj).items()
             if k not in fj and t not in ("int", "float", "str")}, {},
            "JSON: each of cfpm's extra keys a scalar, as PHP-FPM's (no "
            "object nests but the processes array)")
    for k in ("responses 2xx", "respawns crash"):
        tap.is_(json_types(cj).get(k), "int", "JSON: %r, an integer" % k)
    ft, ctypes = json_types(fj), json_types(cj)
    tap.is_({k: (t, ctypes.get(k)) for k, t in ft.items()
             if ctypes.get(k) != t}, {}, "JSON: each with PHP-FPM's type")
    fp, cp = fj.get("processes") or [{}], cj.get("processes") or [{}]
    tap.diag("PHP-FPM's process keys: %s" % ", ".join(fp[0]))
    tap.diag("cfpm's extra process keys: %s" % ", ".join(
        k for k in cp[0] if k not in fp[0]))
    tap.is_(sorted({k for p in cp for k in missing(fp[0], p)}), [],
            "JSON: every process has every PHP-FPM process key")
    want = json_types(fp[0])
    wrong = {}
    for p in cp:
        got = json_types(p)
        wrong.update({k: (t, got.get(k)) for k, t in want.items()
                      if got.get(k) != t})
    tap.is_(wrong, {}, "JSON: each process key with PHP-FPM's type "
            "(last request cpu a float, the counts integers)")


def compare_pages(tap, fsock, csock):
    """Every format of both servers, the same requests."""
    for query in ("json&full", "xml&full", "full", "html&full",
                  "openmetrics&full"):
        fpm, cfpm = ask(fsock, query), ask(csock, query)
        tap.ok(fpm.status == 200 and cfpm.status == 200, "?%s: both 200"
               % query, repr(fpm), repr(cfpm))
        tap.is_([cfpm.header(h) for h in ("content-type", "expires",
                                          "cache-control")],
                [fpm.header(h) for h in ("content-type", "expires",
                                         "cache-control")],
                "?%s: PHP-FPM's Content-Type, Expires, Cache-Control"
                % query)
        if query == "json&full":
            compare_json(tap, fpm, cfpm)
            continue
        try:
            if query == "xml&full":
                names, what = xml_names, "XML elements"
            elif query == "html&full":
                names, what = html_names, "HTML rows and columns"
            elif query == "full":
                names, what = text_keys, "text keys"
            else:
                names, what = None, "OpenMetrics metrics"
            if names is None:
                ft, ct_ = om_types(fpm.body), om_types(cfpm.body)
                tap.diag("PHP-FPM's metrics: %s" % ", ".join(ft))
                tap.is_({k: (t, ct_.get(k)) for k, t in ft.items()
                         if ct_.get(k) != t}, {}, "OpenMetrics: every "
                        "PHP-FPM metric is cfpm's, with its type")
                continue
            (fs, fw), (cs, cw) = names(fpm.body), names(cfpm.body)
        except (ElementTree.ParseError, IndexError) as e:
            tap.ok(False, "?%s: parses" % query, repr(e), repr(cfpm))
            continue
        tap.ok(fs and fw, "?%s: PHP-FPM's page read (%d, %d names)"
               % (query, len(fs), len(fw)))
        tap.is_(missing(fs, cs), [], "%s: the pool's, all of PHP-FPM's"
                % what)
        tap.is_(missing(fw, cw), [], "%s: a process's, all of PHP-FPM's"
                % what)
        tap.is_(cs[:len(fs)], fs, "%s: PHP-FPM's first, in its order"
                % what)


def test_compat(st):
    tap = st.tap
    if not ct.php_fpm_installed():
        tap.skip("the status pages of cfpm and PHP-FPM 8.2 compared",
                 "php-fpm8.2 is not installed (tools/install-deps)")
        return
    ids = ct.worker_ids()
    fpm = ct.PhpFpm(st.dir, FPM_POOL, *((ct.WORKER_USER, ct.WORKER_GROUP)
                                        if ids is not None else ()))
    try:
        up = fpm.ready()
        tap.ok(up, "php-fpm8.2 serves its status page",
               ct.tail(fpm.log, 20), ct.tail(fpm.out, 20))
        if not up:
            return
        for _ in range(3):
            ct.fcgi_exact(fpm.sock, {"SCRIPT_NAME": "/ping",
                                     "SCRIPT_FILENAME": "/ping",
                                     "REQUEST_METHOD": "GET"}, timeout=5)
        compare_pages(tap, fpm.sock, st.status_sock)
    finally:
        rc = fpm.stop()
    tap.is_(rc, 0, "php-fpm8.2 stops on SIGQUIT")


def held_requests(st, n):
    """n requests held on a table lock through the pool socket; returns
    (lock, threads, results) once all n wait in PostgreSQL."""
    tok = st.tokens["valid"]
    results = []
    lock = st.pg.lock_table()
    threads = [threading.Thread(target=lambda: results.append(
        ct.fcgi_request(st.sock, "GET", HELD_URI,
                        {"Authorization": "Bearer " + tok},
                        timeout=30).status)) for _ in range(n)]
    for t in threads:
        t.start()
    ct.wait_for(lambda: st.pg.waiting_locks() >= n, 10, 0.02)
    return lock, threads, results


def peaks(st):
    j = ask(st.status_sock, "json").json() or {}
    return (j.get("active processes"), j.get("max active processes"),
            j.get("max children reached"))


def test_peaks(st):
    """Rounds of requests held at once: 2, 3, then 3 again."""
    tap = st.tap
    tap.is_(peaks(st), (0, 1, 0), "after one request at a time: "
            "max active 1, max children never reached")
    for n, reached in ((2, 0), (POOL, 1), (POOL, 2)):
        lock, threads, results = held_requests(st, n)
        tap.is_(peaks(st)[0], n, "%d requests held: %d active" % (n, n))
        # Let go at once: the round lasts about as long as a master tick.
        ct.Cluster.release_lock(lock)
        for t in threads:
            t.join(30)
        tap.is_(results, [200] * n, "the %d held requests answer 200" % n)
        tap.ok(ct.wait_for(lambda: peaks(st)[0] == 0, 5, 0.05),
               "then none active")
        tap.is_(peaks(st), (0, max(n, 2), reached), "max active %d, max "
                "children reached %d: counted as it happened"
                % (max(n, 2), reached))


def body(tap):
    with ct.Stack(tap).setup() as st:
        st.start_cfpm({"pm.max_children": POOL})
        test_exporter(st)
        test_compat(st)
        st.stop_cfpm()
        st.start_cfpm({"pm.max_children": POOL})
        st.get("/health")
        test_peaks(st)
        st.stop_cfpm()


if __name__ == "__main__":
    ct.main(body)
