#!/usr/bin/env python3
"""
test_apps.py: the server runs the application its configuration names
(app =), and knows nothing of it beyond the table of server/app.h.

- app = hello: every path and method is answered 200 {"ok":true} by the
  pool behind nginx; nothing is written to PostgreSQL; the ping path and
  the status page are the server's and work as with the events API; the
  pool becomes ready and serves with PostgreSQL stopped (hello opens no
  connection) and its workers hold no database backend.
- The ping path is the server's for every application: GET and HEAD 200,
  other methods 405 with Allow: GET, HEAD, on the pool socket and the
  status socket alike (one reply path).
- What an application needs of the configuration is its own to require:
  hello starts without any auth.* key; the events API refuses a
  configuration without auth.issuer, auth.audience or auth.key_file
  (-t, exit 1, "FILE: KEY is not set").
- An application's keys are its own and known wherever they stand: a
  misspelt auth.* key or a bad auth.* value is refused at its file:line
  by -t whichever application is selected, and so is an unknown app =
  value; auth.* keys in an included file, with app = after them, reach
  the events API (a start serves GET /auth with them).
- app = a name cfpm does not have: -t and a start fail (exit 1) with a
  message naming the file, the key and the value; a reload to another
  application is refused (it needs a restart) and the pool keeps
  serving the first one.
Output: TAP.
"""

import os
import signal

import cfpmtest as ct

HELLO = b'{"ok":true}'


def backends(st):
    """Client backends of the events database (not our psql)."""
    rows = st.pg.psql("SELECT count(*) FROM pg_stat_activity WHERE "
                      "datname = 'events' AND backend_type = "
                      "'client backend' AND pid <> pg_backend_pid()")
    return int(rows[0][0])


def check_ping(st, who):
    tap = st.tap
    for m in ("GET", "HEAD"):
        r = st.request(m, "/ping")
        tap.is_(r.status, 200, "%s: %s /ping through nginx is 200" % (who, m))
    r = st.get("/ping")
    tap.is_(r.body, b"pong", "%s: GET /ping answers ping.response" % who)
    for m in ("POST", "PUT", "DELETE"):
        r = st.request(m, "/ping", body=b"{}")
        tap.ok(r.status == 405 and r.header("allow") == "GET, HEAD",
               "%s: %s /ping is 405 with Allow: GET, HEAD" % (who, m),
               "got %r" % r)
    for m, want in (("GET", 200), ("HEAD", 200), ("POST", 405)):
        r = ct.fcgi_request(st.status_sock, m, "/ping")
        tap.is_(r.status, want, "%s: %s /ping on the status socket is %d"
                % (who, m, want))


def check_hello(st):
    tap = st.tap
    rows = st.pg.row_count()
    c = st.start_cfpm({"app": "hello"})
    for m, p in (("GET", "/"), ("GET", "/events/1"), ("POST", "/events"),
                 ("GET", "/health"), ("PUT", "/anything?x=1"),
                 ("DELETE", "/auth")):
        r = st.request(m, p, body=b'{"kind":"x","payload":{}}'
                       if m in ("POST", "PUT") else None)
        tap.ok(r.status == 200 and r.body == HELLO and
               r.header("content-type") == "application/json",
               "hello: %s %s is 200 %s" % (m, p, HELLO.decode()),
               "got %r" % r)
    tap.is_(st.pg.row_count(), rows, "hello: nothing was written to "
            "PostgreSQL")
    tap.is_(backends(st), 0, "hello: its workers hold no database "
            "connection")
    check_ping(st, "hello")
    r = ct.fcgi_request(st.status_sock, "GET", "/status?json")
    j = r.json() if r.status == 200 else {}
    tap.ok(r.status == 200 and j.get("accepted conn", 0) >= 6,
           "hello: the status page counts its requests",
           "got %r" % r)
    st.stop_cfpm(c)
    st.pg.stop()
    try:
        c = st.start_cfpm({"app": "hello"})
        r = st.get("/events/1")
        tap.ok(r.status == 200 and r.body == HELLO, "hello: ready and "
               "serving with PostgreSQL stopped", "got %r" % r)
        st.stop_cfpm(c)
    finally:
        st.pg.start()


def check_unknown(st):
    tap = st.tap
    conf = st.write_config({"app": "nosuch"})
    rc, out = st.cfpm_test_config(conf)
    tap.ok(rc == 1 and conf in out and 'app: no application named '
           '"nosuch"' in out, "-t: an unknown app is refused with the "
           "file, key and value", "rc %r, %r" % (rc, out))
    c = st.spawn_cfpm(conf)
    rc = c.popen.wait(timeout=20)
    tap.is_(rc, 1, "start: an unknown app exits 1")
    tap.like(ct.tail(c.log, 5), r'no application named "nosuch"',
             "start: and says why")


def check_app_settings(st):
    tap = st.tap
    bare = {"auth.issuer": None, "auth.audience": None,
            "auth.key_file": None, "auth.key_id": None}
    conf = st.write_config(dict(bare, app="hello"))
    rc, out = st.cfpm_test_config(conf)
    tap.ok(rc == 0, "-t: hello needs no auth.* key", "rc %r, %r" % (rc, out))
    c = st.start_cfpm(conf=conf)
    r = st.get("/x")
    tap.ok(r.status == 200 and r.body == HELLO, "hello without auth.* "
           "serves", "got %r" % r)
    st.stop_cfpm(c)
    for key in ("auth.issuer", "auth.audience", "auth.key_file"):
        conf = st.write_config({key: None})
        rc, out = st.cfpm_test_config(conf)
        tap.ok(rc == 1 and ("%s: %s is not set" % (conf, key)) in out,
               "-t: the events API without %s is refused" % key,
               "rc %r, %r" % (rc, out))


def line_of(conf, text):
    """The 1-based line of conf that is text."""
    with open(conf) as f:
        return f.read().splitlines().index(text) + 1


def check_app_keys(st):
    tap = st.tap
    for app, key, value, why in (
            ("events", "auth.isuer", "x", 'unknown key "auth.isuer"'),
            ("hello", "auth.isuer", "x", 'unknown key "auth.isuer"'),
            ("events", "auth.leeway", "soon",
             'auth.leeway: "soon" is not an integer'),
            ("hello", "auth.leeway", "soon",
             'auth.leeway: "soon" is not an integer')):
        conf = st.write_config({"app": app, key: value})
        want = "%s:%d: %s" % (conf, line_of(conf, "%s = %s" % (key, value)),
                              why)
        rc, out = st.cfpm_test_config(conf)
        tap.ok(rc == 1 and want in out, "-t, app = %s, %s = %s: refused at "
               "its file:line" % (app, key, value),
               "rc %r, %r, want %r" % (rc, out, want))
    conf = st.write_config({"app": "nosuch"})
    want = "%s:%d: app: no application named" % (conf, line_of(
        conf, "app = nosuch"))
    rc, out = st.cfpm_test_config(conf)
    tap.ok(rc == 1 and want in out, "-t: an unknown app is refused at its "
           "file:line", "rc %r, %r, want %r" % (rc, out, want))
    auth = ("auth.issuer", "auth.audience", "auth.key_file", "auth.key_id")
    text = st.config_text(dict({k: None for k in auth}, app="hello"))
    inc = os.path.join(st.dir, "auth-keys.conf")
    with open(inc, "w") as f:
        f.write("".join("%s = %s\n" % (k, v) for k, v in zip(auth, (
            ct.ISSUER, ct.AUDIENCE, st.keys.pub, ct.KID))))
    conf = st.write_config(text=text + "include = %s\napp = events\n" % inc)
    rc, out = st.cfpm_test_config(conf)
    tap.ok(rc == 0, "-t: auth.* in an included file, app = events after "
           "it", "rc %r, %r" % (rc, out))
    c = st.start_cfpm(conf=conf)
    r = st.get("/auth", token=st.tokens["valid"])
    tap.ok(r.status == 200 and r.json().get("sub") == "client-bench",
           "the events API checks tokens with the included keys",
           "got %r" % r)
    st.stop_cfpm(c)


def check_reload_app(st):
    tap = st.tap
    c = st.start_cfpm()
    with open(c.conf, "a") as f:
        f.write("app = hello\n")
    since = os.path.getsize(c.log)
    os.kill(c.pid, signal.SIGHUP)
    said = ct.wait_for(lambda: "needs a restart" in
                       open(c.log).read()[since:], 10)
    tap.ok(said, "reload to another app: refused, needs a restart",
           ct.tail(c.log, 5))
    r = st.get("/health")
    tap.ok(r.status == 200 and r.json() == {"status": "ok"},
           "reload refused: the events API still serves", "got %r" % r)
    check_ping(st, "events")
    st.stop_cfpm(c)


def body(tap):
    with ct.Stack(tap).setup() as st:
        check_hello(st)
        check_unknown(st)
        check_app_settings(st)
        check_app_keys(st)
        check_reload_app(st)


if __name__ == "__main__":
    ct.main(body)
