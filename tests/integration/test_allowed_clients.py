#!/usr/bin/env python3
"""
test_allowed_clients.py: listen.allowed_clients, as PHP-FPM's. On TCP, a
FastCGI client whose address is not in the list is dropped at accept (no
reply) with PHP-FPM's log line, once per flood interval however many
come; one in the list is served, by every worker, before and after; the
status socket obeys the same list; a CIDR block admits its range; a bad
entry fails cfpm -t with the key, the entry and its file:line.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from harness.fcgi import fcgi_request  # noqa: E402

POOL = 2
ALLOWED = "127.0.0.2"
REFUSED = "127.0.0.1"
REFUSED_TRIES = 10      # more than the pool: no worker is left wedged
DROPPED_LINE = "Connection disallowed: IP address '%s' has been dropped"


def ask(addr, source, uri="/ping"):
    return fcgi_request(addr, "GET", uri, timeout=5, source=source).status


def start(st, allowed):
    port, sport = ct.free_port(), ct.free_port()
    conf = st.write_config({"listen": "127.0.0.1:%d" % port,
                            "pm.status_listen": "127.0.0.1:%d" % sport,
                            "listen.allowed_clients": allowed})
    c = st.spawn_cfpm(conf, n=POOL)
    pool, status = ("127.0.0.1", port), ("127.0.0.1", sport)
    up = ct.wait_for(lambda: ask(pool, ALLOWED) == 200, 15, 0.2)
    return c, pool, status, up


def check_list(st, tap):
    c, pool, status, up = start(st, "%s, ::1" % ALLOWED)
    tap.ok(up, "a listed client (%s) is served over TCP" % ALLOWED)
    codes = [ask(pool, REFUSED) for _ in range(REFUSED_TRIES)]
    tap.ok(codes == [0] * REFUSED_TRIES, "%d requests from an unlisted "
           "client (%s) get no reply" % (REFUSED_TRIES, REFUSED),
           "statuses %r" % codes)
    codes = [ask(pool, ALLOWED) for _ in range(3 * POOL)]
    tap.ok(codes == [200] * (3 * POOL), "the listed client is still "
           "served by every worker", "statuses %r" % codes)
    tap.is_(ask(status, ALLOWED, "/status"), 200,
            "the status socket serves the listed client")
    tap.is_(ask(status, REFUSED, "/status"), 0,
            "the status socket drops the unlisted one")
    log = ct.log_text(c.log)
    line = DROPPED_LINE % REFUSED
    tap.ok(line in log, "PHP-FPM's line is logged: %s" % line, log[-1500:])
    # Each process logs the first drop, then one line per flood interval.
    tap.ok(log.count(line) <= POOL + 1, "drops are not logged one line "
           "each (%d lines for %d)" % (log.count(line), REFUSED_TRIES + 1))
    tap.is_(st.stop_cfpm(c), 0, "clean stop")


def check_cidr(st, tap):
    c, pool, _, up = start(st, "127.0.0.0/8")
    tap.ok(up and ask(pool, REFUSED) == 200, "127.0.0.0/8 admits both "
           "%s and %s" % (ALLOWED, REFUSED))
    tap.is_(st.stop_cfpm(c), 0, "clean stop")


def check_bad(st, tap):
    for bad, what in (("127.0.0.1, localhost", "localhost"),
                      ("10.0.0.1/24", "host bits"),
                      ("127.0.0.1,", "empty entry")):
        conf = st.write_config({"listen": "127.0.0.1:%d" % ct.free_port(),
                                "listen.allowed_clients": bad})
        rc, out = st.cfpm_test_config(conf)
        tap.ok(rc != 0 and re.search(r":\d+: listen\.allowed_clients: ",
                                     out) and what in out, "cfpm -t refuses "
               "listen.allowed_clients = %s (%s)" % (bad, out.strip()[:160]),
               out)


def main(tap):
    with ct.Stack(tap) as st:
        st.setup(rows=10, nginx=False)
        check_list(st, tap)
        check_cidr(st, tap)
        check_bad(st, tap)


if __name__ == "__main__":
    ct.main(main)
