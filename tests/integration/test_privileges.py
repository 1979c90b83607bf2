#!/usr/bin/env python3
"""
test_privileges.py: nothing runs as root that need not.

- Workers run as the configured user (the harness's nobody:nogroup), with
  no supplementary groups, under the system-call filter (Seccomp: 2,
  NoNewPrivs: 1), while the master stays root; requests, the status page
  and ping work. worker.seccomp = off turns the filter off (and only it).
- Sockets: the pool socket and the status socket each get their own
  owner, group and mode (pm.status_listen.* no longer follow listen.*).
- Logs: files the root master or a worker creates belong to the workers'
  user; after a rotation and SIGUSR1 master and workers write to the new
  files; a symbolic link or a FIFO planted at a log path is refused
  without following it and without hanging anyone.
- A PostgreSQL restart with a host name in db.conninfo (over TCP, through
  a small loopback proxy): the filtered workers resolve, reconnect and
  serve again, none of them dies.
- A SIGKILLed master takes its workers with it (the parent-death signal
  is set after the drop, which would clear it).
- Refusals: no user while root, user or group root, unknown user or
  group, unknown socket owners: exit 1 and a message naming the file and
  the key; the same on a reload, which is refused while the pool serves
  (a reload to another user moves the new generation to it); with -R /
  --allow-to-run-as-root workers run as root (still filtered). Not root:
  user and group naming another identity are ignored with a warning;
  naming its own (cfpm.service's User=cfpm and the shipped user = cfpm)
  they hold without a word.
Output: TAP.
"""

import os
import pwd
import grp
import select
import signal
import socket
import stat
import subprocess
import threading
import time

import cfpmtest as ct

POOL = 3
EVENT = '{"kind":"page_view","payload":{"path":"/pricing","ms":182}}'
ROOT_REFUSAL = "please specify user and group other than root"


def proc_status(pid):
    """The fields of /proc/PID/status as a dict of strings (None if gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            out = {}
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
            return out
    except OSError:
        return None


def ids_of(status, field):
    return [int(x) for x in status.get(field, "").split()]



def sock_info(path):
    st = os.stat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def owner(path):
    st = os.stat(path)
    return st.st_uid, st.st_gid


def serves(st, tok):
    """GET /auth, GET /events/1, POST and read back, /health: all fine."""
    if st.get("/auth", tok).status != 200 or \
            st.get("/events/1", tok).status != 200 or \
            st.get("/health").status != 200:
        return False
    r = st.post("/events", EVENT, tok)
    j = r.json() if r.status == 201 else None
    return bool(j) and st.get("/events/%d" % j["id"], tok).status == 200


class PgProxy:
    """127.0.0.1:port -> the cluster's unix socket, so db.conninfo can use
    a host name (TCP) while the test cluster listens on a socket only.
    When PostgreSQL closes a connection the proxy closes the client's."""

    def __init__(self, pg):
        self.target = os.path.join(pg.sockdir, ".s.PGSQL.%d" % pg.port)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.halt = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        self.lsock.settimeout(0.2)
        while not self.halt.is_set():
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._pump, args=(c,),
                             daemon=True).start()

    def _pump(self, c):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.connect(self.target)
        except OSError:
            c.close()
            u.close()
            return
        pair = {c: u, u: c}
        try:
            while not self.halt.is_set():
                r, _, _ = select.select(list(pair), [], [], 0.2)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    pair[s].sendall(data)
        except OSError:
            pass
        finally:
            c.close()
            u.close()

    def close(self):
        self.halt.set()
        self.lsock.close()


def check_workers(st, c, uid, gid, seccomp, what):
    """Every worker's identity and filter, once the pool is whole: /health
    answered by one worker says nothing of the others, which may still be
    starting (the filter comes last in a worker's start)."""
    tap = st.tap
    want = ([uid] * 4, [gid] * 4, "", seccomp, "1" if seccomp == "2"
            else "0")

    def mismatches():
        bad = {}
        for pid in c.workers():
            s = proc_status(pid) or {}
            got = (ids_of(s, "Uid"), ids_of(s, "Gid"), s.get("Groups"),
                   s.get("Seccomp"), s.get("NoNewPrivs"))
            if got != want:
                bad[pid] = (got, want)
        return bad

    ct.wait_for(lambda: len(c.workers()) == POOL and not mismatches(), 15)
    ws = c.workers()
    tap.is_(len(ws), POOL, "%s: %d workers" % (what, POOL))
    bad = mismatches()
    tap.ok(ws and not bad, "%s: every worker has Uid %d, Gid %d, no "
           "Groups, Seccomp %s" % (what, uid, gid, seccomp),
           "(got, want) per pid: %r" % bad)


def check_unprivileged(st, nobody, nogroup):
    """Workers as nobody:nogroup under the filter, master root; sockets
    and log files with their own owners."""
    tap = st.tap
    tok = st.tokens["valid"]
    errlog = os.path.join(st.dir, "error.log")
    access = os.path.join(st.dir, "access.log")
    c = st.start_cfpm({"pm.max_children": POOL, "error_log": errlog,
                       "access.log": access, "listen.mode": "0660",
                       "listen.owner": ct.WORKER_USER,
                       "listen.group": ct.WORKER_GROUP})
    check_workers(st, c, nobody, nogroup, "2", "default")
    m = proc_status(c.pid)
    tap.ok(ids_of(m, "Uid") == [0] * 4 and m.get("Seccomp") == "0",
           "the master is still root and unfiltered",
           "Uid %r Seccomp %r" % (m.get("Uid"), m.get("Seccomp")))
    tap.ok(serves(st, tok), "GET /auth, GET and POST /events, /health "
           "under the filter")
    tap.is_(st.get("/ping").body, b"pong", "ping under the filter")
    r = st.get("/status?json", timeout=5)
    tap.is_(r.status, 200, "the master serves /status")

    tap.is_(sock_info(st.sock), (0o660, nobody, nogroup),
            "pool socket: listen.mode 0660, listen.owner/group")
    tap.is_(sock_info(st.status_sock), (0o660, 0, 0),
            "status socket: default mode 0660, owner root: it does not "
            "take listen.mode/owner/group")
    tap.is_(owner(errlog), (nobody, nogroup),
            "error_log created by the root master belongs to %s" %
            ct.WORKER_USER)
    tap.is_(owner(access), (nobody, nogroup),
            "access.log created by a worker belongs to %s" % ct.WORKER_USER)
    tap.is_(ct.crash_lines(c), [], "no worker crash")
    tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")

    c = st.start_cfpm({"pm.max_children": POOL,
                       "pm.status_listen.owner": ct.WORKER_USER,
                       "pm.status_listen.group": ct.WORKER_GROUP,
                       "pm.status_listen.mode": "0620"})
    tap.is_(sock_info(st.status_sock), (0o620, nobody, nogroup),
            "status socket: pm.status_listen.owner/group/mode")
    tap.is_(sock_info(st.sock)[0], 0o666,
            "pool socket keeps its own listen.mode (0666 here)")
    tap.is_(st.get("/status", timeout=5).status, 200,
            "status page through the re-owned socket")
    tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")


def check_seccomp_off(st, nobody, nogroup):
    c = st.start_cfpm({"pm.max_children": POOL, "worker.seccomp": "off"})
    check_workers(st, c, nobody, nogroup, "0", "worker.seccomp = off")
    st.tap.ok(serves(st, st.tokens["valid"]),
              "worker.seccomp = off: requests served")
    st.tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")


def check_logs(st, nobody, nogroup):
    """Rotation with unprivileged workers, and what a log path must not
    be: a symbolic link, a FIFO."""
    tap = st.tap
    d = os.path.join(st.dir, "logs")
    os.mkdir(d, 0o750)
    os.chown(d, nobody, nogroup)    # the workers' log directory
    errlog = os.path.join(d, "error.log")
    access = os.path.join(d, "access.log")
    c = st.start_cfpm({"pm.max_children": POOL, "error_log": errlog,
                       "access.log": access, "log_level": "info"})
    tok = st.tokens["valid"]
    workers = c.workers()
    st.get("/events/1", tok)
    os.rename(errlog, errlog + ".1")
    os.rename(access, access + ".1")
    os.kill(c.pid, signal.SIGUSR1)
    tap.ok(ct.wait_for(lambda: os.path.exists(errlog), 5),
           "rotation: SIGUSR1, the master makes a new error_log")
    time.sleep(0.3)
    sizes = (os.path.getsize(errlog + ".1"), os.path.getsize(access + ".1"))
    for _ in range(4 * POOL):
        st.get("/events/2", tok)
        st.get("/auth", "not-a-token")     # a worker-side info line
    tap.ok(ct.wait_for(lambda: os.path.exists(access) and
                       os.path.getsize(access) > 0, 5),
           "rotation: the unprivileged workers made a new access.log")
    time.sleep(0.3)
    grown = (os.path.getsize(errlog + ".1") - sizes[0],
             os.path.getsize(access + ".1") - sizes[1])
    tap.is_(grown, (0, 0), "rotation: nothing more written to the "
            "renamed files (error_log, access.log grew by)")
    tap.ok(os.path.exists(errlog) and "invalid token" in
           open(errlog, errors="replace").read().lower() or
           os.path.getsize(errlog) > 0,
           "rotation: the new error_log is written")
    tap.is_((owner(errlog), owner(access)), ((nobody, nogroup),
            (nobody, nogroup)), "rotation: both new files belong to %s" %
            ct.WORKER_USER)
    tap.is_(c.workers(), workers, "rotation: the same workers (none died)")

    # A symbolic link at the error_log path: never followed by the root
    # master (it would append to any file the link names).
    target = os.path.join(st.dir, "not-a-log")
    with open(target, "w") as f:
        f.write("precious\n")
    os.rename(errlog, errlog + ".2")
    os.symlink(target, errlog)
    os.kill(c.pid, signal.SIGUSR1)
    time.sleep(0.5)
    for _ in range(2 * POOL):
        st.get("/auth", "not-a-token")
    ws = c.workers()
    os.kill(ws[0], signal.SIGKILL)      # the master logs a line
    ct.wait_for(lambda: len(c.workers()) == POOL and ws[0] not in
                c.workers(), 5)
    time.sleep(0.3)
    tap.is_(open(target).read(), "precious\n",
            "symlink at error_log: the file it names is untouched")
    tap.ok("killed by signal 9" in open(errlog + ".2").read(),
           "symlink at error_log: the master kept its old file")
    os.unlink(errlog)
    os.rename(errlog + ".2", errlog)

    # A FIFO at a log path, as the workers' user could make one there:
    # opening it must not block a worker or the master (no reader).
    os.rename(access, access + ".2")
    os.mkfifo(access, 0o660)
    os.chown(access, nobody, nogroup)
    os.kill(c.pid, signal.SIGUSR1)
    time.sleep(0.5)
    ok_all = all(st.get("/events/1", tok, timeout=5).status == 200
                 for _ in range(3 * POOL))
    tap.ok(ok_all, "FIFO at access.log: the workers still serve")
    os.unlink(access)
    os.rename(errlog, errlog + ".3")
    os.mkfifo(errlog, 0o660)
    os.chown(errlog, nobody, nogroup)
    os.kill(c.pid, signal.SIGUSR1)
    time.sleep(0.5)
    tap.is_(st.get("/status", timeout=5).status, 200,
            "FIFO at error_log: the master still serves /status")
    tap.ok(c.alive() and not [l for l in ct.crash_lines(c)
                              if "signal 9" not in l],
           "FIFO: no crash, master alive")
    os.unlink(errlog)
    tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")


def check_hostname_reconnect(st):
    """db.conninfo with a host name, over TCP: after a PostgreSQL restart
    the filtered workers resolve and connect again."""
    tap = st.tap
    tok = st.tokens["valid"]
    proxy = PgProxy(st.pg)
    try:
        c = st.start_cfpm({"pm.max_children": POOL, "db.conninfo":
                           "host=localhost port=%d dbname=events "
                           "user=postgres connect_timeout=5" % proxy.port})
        workers = c.workers()
        tap.ok(serves(st, tok), "host name in db.conninfo: requests "
               "served (%d proxied connections)" % proxy.connections)
        first = proxy.connections
        st.pg.stop("fast")
        tap.is_(st.get("/events/1", tok, timeout=10).status, 503,
                "PostgreSQL down: 503")
        st.pg.start()

        def recovered():
            return all(st.get("/events/%d" % i, tok, timeout=5).status ==
                       200 for i in range(1, 2 * POOL + 1))
        tap.ok(ct.wait_for(recovered, 20, 0.2), "PostgreSQL back: reads "
               "served again within 20 s")
        tap.ok(serves(st, tok), "and writes")
        tap.cmp_ok(proxy.connections, ">", first, "the workers connected "
                   "again through the host name")
        tap.is_(c.workers(), workers, "no worker died (a call outside the "
                "filter would kill it)")
        tap.is_(ct.crash_lines(c), [], "no crash in the log")
        tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")
    finally:
        proxy.close()


def check_master_death(st):
    """SIGKILL of the master: the workers follow (PR_SET_PDEATHSIG is set
    after the drop, which clears it)."""
    tap = st.tap
    c = st.start_cfpm({"pm.max_children": POOL})
    workers = c.workers()
    os.kill(c.pid, signal.SIGKILL)
    c.popen.wait(timeout=10)
    gone = ct.wait_for(lambda: not any(ct.pid_alive(p) for p in workers),
                       10, 0.1)
    tap.ok(gone, "master SIGKILLed: its %d unprivileged workers exit" %
           len(workers), "still alive: %r" %
           [p for p in workers if ct.pid_alive(p)])
    for p in workers:
        if ct.pid_alive(p):
            os.kill(p, signal.SIGKILL)
    st.cfpm = None


def check_refusals(st):
    tap = st.tap
    cases = [
        ({"user": None, "group": None}, ROOT_REFUSAL, "no user while root"),
        ({"user": "root", "group": None}, ROOT_REFUSAL, "user root"),
        ({"user": "0", "group": None}, ROOT_REFUSAL, "user 0"),
        ({"group": "root"}, ROOT_REFUSAL, "group root"),
        ({"user": "no-such-user-cfpm"}, ": user: no such user "
         "\"no-such-user-cfpm\"", "unknown user"),
        ({"group": "no-such-group-cfpm"}, ": group: no such group "
         "\"no-such-group-cfpm\"", "unknown group"),
        ({"listen.owner": "no-such-user-cfpm"}, ": listen.owner: no such "
         "user", "unknown listen.owner"),
        ({"listen.group": "no-such-group-cfpm"}, ": listen.group: no such "
         "group", "unknown listen.group"),
        ({"pm.status_listen.owner": "no-such-user-cfpm"},
         ": pm.status_listen.owner: no such user",
         "unknown pm.status_listen.owner"),
        ({"pm.status_listen.group": "no-such-group-cfpm"},
         ": pm.status_listen.group: no such group",
         "unknown pm.status_listen.group"),
    ]
    for settings, want, what in cases:
        conf = st.write_config(settings)
        rc, out = st.cfpm_test_config(conf)
        tap.ok(rc == 1 and (conf + want in out or
                            (want == ROOT_REFUSAL and want in out and
                             conf in out)),
               "cfpm -t, %s: exit 1, names the file and says so" % what,
               "rc %r, output %r" % (rc, out))
    # Started for real (no -t): refuses before binding anything.
    conf = st.write_config({"user": None, "group": None})
    c = st.spawn_cfpm(conf)
    try:
        rc = c.popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    text = open(c.log, errors="replace").read()
    tap.ok(rc == 1 and ROOT_REFUSAL in text,
           "cfpm as root without user: exit 1, \"%s\"" % ROOT_REFUSAL,
           "rc %r, log %r" % (rc, text[-500:]))
    tap.ok(not os.path.exists(st.sock) and not c.workers(),
           "refused: no socket, no worker")
    if rc is None:
        st.stop_cfpm(c)


def check_reload(st, nobody, nogroup):
    """A reload to an unknown or root user is refused while the pool
    serves; a reload to another user moves the new generation to it."""
    tap = st.tap
    tok = st.tokens["valid"]
    c = st.start_cfpm({"pm.max_children": POOL})
    workers = c.workers()

    def reload_to(settings):
        tmp = c.conf + ".new"
        with open(tmp, "w") as f:
            f.write(st.config_text(dict({"pm.max_children": POOL},
                                        **settings)))
        os.rename(tmp, c.conf)
        mark = len(open(c.log, errors="replace").read())
        os.kill(c.pid, signal.SIGHUP)
        return mark
    for settings, want, what in (
            ({"user": "no-such-user-cfpm"}, "user: no such user",
             "an unknown user"),
            ({"user": "root"}, ROOT_REFUSAL, "user root"),
            ({"user": None, "group": None}, ROOT_REFUSAL, "no user")):
        mark = reload_to(settings)
        said = ct.wait_for(lambda: (lambda t: "reload refused" in t and
                                    want in t)(
            open(c.log, errors="replace").read()[mark:]), 5)
        time.sleep(0.5)
        tap.ok(said and c.workers() == workers and serves(st, tok),
               "reload to %s: refused, the pool keeps serving" % what,
               "log: %r, workers %r -> %r" % (
                   open(c.log, errors="replace").read()[mark:][-400:],
                   workers, c.workers()))
    daemon = pwd.getpwnam("daemon")
    reload_to({"user": "daemon", "group": "daemon"})
    moved = ct.wait_for(lambda: (lambda w: len(w) == POOL and
                                 not set(w) & set(workers) and w)(
        c.workers()), 15)
    tap.ok(moved and all(ids_of(proc_status(p) or {}, "Uid") ==
                         [daemon.pw_uid] * 4 for p in moved),
           "reload to user daemon: the new generation runs as daemon",
           "workers %r" % c.workers())
    tap.ok(serves(st, tok), "and serves")
    tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")


def check_run_as_root(st):
    """-R: workers may run as root (no user); still filtered."""
    tap = st.tap
    conf = st.write_config({"pm.max_children": POOL, "user": None,
                            "group": None})
    rc, out, err = ct.run([ct.CFPM, "--allow-to-run-as-root", "-t", "-c",
                           conf])
    tap.ok(rc == 0 and "configuration OK" in out,
           "cfpm --allow-to-run-as-root -t: OK without user",
           "rc %r, %r %r" % (rc, out, err))
    c = st.spawn_cfpm(conf, extra=["-R"])
    st.cfpm = c
    tap.ok(st.wait_ready(c, 15), "cfpm -R without user starts")
    check_workers(st, c, 0, 0, "2", "-R")
    tap.ok(serves(st, st.tokens["valid"]), "-R: requests served")
    tap.ok("workers run as root" in open(c.log, errors="replace").read(),
           "-R: the log says the workers run as root")
    tap.is_(st.stop_cfpm(c), 0, "stops with exit 0")


def check_not_root(st, nobody, nogroup):
    """A master that is not root ignores user and group, with a notice."""
    tap = st.tap
    pub = os.path.join(st.dir, "pub-for-nobody.pem")
    with open(st.keys.pub) as src, open(pub, "w") as dst:
        dst.write(src.read())
    os.chmod(pub, 0o644)
    conf = st.write_config({"auth.key_file": pub, "user": "daemon",
                            "group": "daemon"})
    os.chmod(conf, 0o644)
    rc, out, err = ct.run(["runuser", "-u", ct.WORKER_USER, "--", ct.CFPM,
                           "-t", "-c", conf])
    tap.ok(rc == 0 and "user and group are ignored" in out + err and
           "WARNING" in err and "configuration OK" in out, "not root: "
           "user and group of another user are ignored with a warning",
           "rc %r, %r %r" % (rc, out, err))
    # cfpm.service's case: User=cfpm with the shipped user = cfpm. The
    # workers are what the file says: nothing to warn of, on every start
    # and reload. The group defaults to the user's own.
    for user, group in ((ct.WORKER_USER, ct.WORKER_GROUP),
                        (ct.WORKER_USER, None),
                        (str(nobody), str(nogroup))):
        conf = st.write_config({"auth.key_file": pub, "user": user,
                                "group": group})
        os.chmod(conf, 0o644)
        rc, out, err = ct.run(["runuser", "-u", ct.WORKER_USER, "--",
                               ct.CFPM, "-t", "-c", conf])
        tap.ok(rc == 0 and "ignored" not in out + err and
               "configuration OK" in out, "not root: user %s, group %s "
               "(its own): no notice" % (user, group),
               "rc %r, %r %r" % (rc, out, err))
    conf = st.write_config({"auth.key_file": pub, "user": ct.WORKER_USER,
                            "group": "daemon"})
    os.chmod(conf, 0o644)
    rc, out, err = ct.run(["runuser", "-u", ct.WORKER_USER, "--", ct.CFPM,
                           "-t", "-c", conf])
    tap.ok(rc == 0 and "user and group are ignored" in err,
           "not root: its own user with another group: a warning",
           "rc %r, %r %r" % (rc, out, err))


def check_cli(st):
    tap = st.tap
    rc, out, err = ct.run([ct.CFPM, "--help"])
    tap.ok(rc == 0 and "--allow-to-run-as-root" in out and "-R" in out,
           "--help lists -R, --allow-to-run-as-root", "rc %r %r" % (rc, out))
    rc, out, err = ct.run([ct.CFPM, "--version"])
    rc2, out2, err2 = ct.run([ct.CFPM, "-v"])
    tap.ok(rc == 0 and out.startswith("cfpm ") and out == out2,
           "--version is -v", "%r %r" % (out, out2))
    rc, out, err = ct.run([ct.CFPM, "--no-such-option"])
    tap.is_(rc, 2, "an unknown long option: exit 2")
    # cfpm never daemonizes: PHP-FPM's -F has nothing to switch off here.
    for opt in ("-F", "--nodaemonize"):
        rc, out, err = ct.run([ct.CFPM, opt, "-t"])
        tap.ok(rc == 2 and "usage: cfpm [-tRhv]" in err,
               "%s is not an option: usage, exit 2" % opt,
               "rc %r %r" % (rc, err))


def body(tap):
    with ct.Stack(tap) as st:
        st.setup()
        check_cli(st)
        ids = ct.worker_ids()
        if ids is None:
            tap.skip("privilege checks", "not root")
            return
        nobody, nogroup = ids
        check_unprivileged(st, nobody, nogroup)
        check_seccomp_off(st, nobody, nogroup)
        check_logs(st, nobody, nogroup)
        check_hostname_reconnect(st)
        check_refusals(st)
        check_reload(st, nobody, nogroup)
        check_run_as_root(st)
        check_not_root(st, nobody, nogroup)
        check_master_death(st)


if __name__ == "__main__":
    ct.main(body)
