#!/usr/bin/env python3
"""
test_socket_activation.py: cfpm under systemd-socket-activate (the socket
comes in as fd 3 with LISTEN_FDS/LISTEN_PID) passes the whole API check
set (apichecks.py, as test_api.py does), and on SIGTERM leaves the socket
it did not create. Then the other listen forms cfpm binds itself:
127.0.0.1:PORT and [::1]:PORT, and a socket-activated TCP listener.
"""

import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfpmtest as ct  # noqa: E402
from apichecks import run_api_checks  # noqa: E402
from cfpmtest import Checker, seeded_row  # noqa: E402


def check_activated_unix(st):
    tap = st.tap
    sock = st.sock
    notify = ct.NotifySocket(os.path.join(st.dir, "notify.sock"))
    c = st.spawn_cfpm(st.write_config(), activate=sock,
                      env={"NOTIFY_SOCKET": notify.path})
    st.cfpm = c
    # Without --accept, systemd-socket-activate binds, waits for the first
    # connection, then execs cfpm: send that first request from a thread.
    ct.wait_for(lambda: ct.is_socket(sock), 5)
    ino = os.stat(sock).st_ino if ct.is_socket(sock) else None
    first = {}
    t = threading.Thread(target=lambda: first.update(
        r=st.get("/health", timeout=20)), daemon=True)
    t.start()
    ready = notify.wait("READY=1", 15)
    tap.ok(ready, "sd_notify: READY=1 sent on NOTIFY_SOCKET",
           "messages: %r" % notify.messages, ct.tail(c.log, 10))
    if ready:
        codes = [st.get("/health", timeout=5).status for _ in range(6)]
        tap.ok(all(x == 200 for x in codes),
               "READY=1 comes once the pool serves (/health 200 at once)",
               "statuses %r" % codes)
    t.join(20)
    tap.ok(first.get("r") is not None and first["r"].status == 200,
           "the connection that triggered activation is served (200)",
           "got %r" % first.get("r"))
    if not st.wait_ready(c, 15):
        raise RuntimeError("socket-activated cfpm not ready:\n" +
                           ct.tail(c.log))
    tap.ok(ct.is_socket(sock), "systemd-socket-activate bound %s" %
           os.path.basename(sock))
    env = b""
    try:
        with open("/proc/%d/environ" % c.pid, "rb") as f:
            env = f.read()
    except OSError:
        pass
    tap.ok(b"LISTEN_FDS=1\0" in env + b"\0" and
           (b"LISTEN_PID=%d\0" % c.pid) in env + b"\0",
           "cfpm runs as the activated process (LISTEN_FDS=1, "
           "LISTEN_PID = its pid)")
    ws = ct.wait_for(lambda: len(c.workers()) == 3 and c.workers(), 5) or \
        c.workers()
    tap.is_(len(ws), 3, "socket-activated pool has 3 workers")

    run_api_checks(st)

    workers = c.workers()
    rc = st.stop_cfpm(c, signal.SIGTERM, timeout=15)
    tap.is_(rc, 0, "socket-activated cfpm exits 0 on SIGTERM")
    tap.ok(notify.wait("STOPPING=1", 2), "sd_notify: STOPPING=1 sent on "
           "SIGTERM", "messages: %r" % notify.messages)
    notify.close()
    tap.ok(not [p for p in workers if ct.pid_alive(p)] and
           ct.wait_for(lambda: not ct.group_members(c.pid), 3),
           "no worker remains after SIGTERM",
           "group members: %r" % ct.group_members(c.pid))
    tap.ok(ct.is_socket(sock) and os.stat(sock).st_ino == ino,
           "the socket made by systemd-socket-activate was NOT unlinked "
           "(same inode)")
    if os.path.exists(sock):
        os.unlink(sock)


def check_tcp(st, host, bracket):
    """cfpm binds host:port itself; nginx reaches it over TCP."""
    tap = st.tap
    ch = Checker(st)
    port = ct.free_port()
    addr = "[%s]:%d" % (host, port) if bracket else "%s:%d" % (host, port)
    st.stop_nginx()
    st.start_nginx(upstream=addr)
    try:
        c = st.start_cfpm({"listen": addr})
    except RuntimeError as e:
        tap.ok(False, "cfpm listens on %s" % addr, str(e))
        if st.cfpm:
            st.stop_cfpm(st.cfpm, signal.SIGKILL)
        return
    ch.expect(st.get("/health"), "listen = %s: /health 200" % addr, 200,
              body={"status": "ok"})
    ch.expect(st.get("/events/1", st.tokens["valid"]),
              "listen = %s: read 200" % addr, 200, body=seeded_row(1))
    tap.is_(st.stop_cfpm(c), 0, "listen = %s: exit 0 on SIGTERM" % addr)


def check_activated_tcp(st):
    tap = st.tap
    ch = Checker(st)
    port = ct.free_port()
    addr = "127.0.0.1:%d" % port
    st.stop_nginx()
    st.start_nginx(upstream=addr)
    try:
        c = st.start_cfpm({"listen": addr}, activate=addr)
    except RuntimeError as e:
        tap.ok(False, "socket-activated cfpm on %s" % addr, str(e))
        if st.cfpm:
            st.stop_cfpm(st.cfpm, signal.SIGKILL)
        return
    ch.expect(st.get("/auth", st.tokens["valid"]),
              "socket-activated TCP %s: /auth 200" % addr, 200,
              body={"sub": ct.SUBJECT, "scope": ct.SCOPE})
    tap.is_(st.stop_cfpm(c), 0, "socket-activated TCP: exit 0 on SIGTERM")


def main(tap):
    with ct.Stack(tap) as st:
        st.setup()
        if not os.access(ct.SOCKET_ACTIVATE, os.X_OK):
            tap.ok(False, "%s is installed (Debian package systemd)" %
                   ct.SOCKET_ACTIVATE)
            return
        check_activated_unix(st)
        check_tcp(st, "127.0.0.1", False)
        if ct.have_ipv6_loopback():
            check_tcp(st, "::1", True)
        else:
            tap.skip("listen = [::1]:PORT", "no IPv6 loopback here")
        check_activated_tcp(st)


if __name__ == "__main__":
    ct.main(main)
