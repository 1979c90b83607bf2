"""
candidates.py: what is measured. Each class builds (prepare), starts one
cell's configuration (start: cores, pool, cgroup, CPUs) and stops it.
Everything a candidate runs — its nginx included — goes into the cell's
cgroup and CPU set, so its CPU accounting covers the whole server side.

Candidates (same contract, same run):
  cfpm          nginx (etc/nginx/cfpm.conf) + cfpm, pm.max_children = pool
  cfpm-nokeep   the same with nginx's FastCGI keep-conn off: a connection
                per request (what kept connections save, at each load)
  php-fpm       nginx + php-fpm8.2, pm = static, max_children = pool,
                SPKI PEM key string per request (the public method)
  php-fpm-tuned the same with what a careful PHP team does: the key's
                numbers in APCu and the RS256 check on GMP instead of
                OpenSSL 3.0's per-call key decode, opcache preload, JIT
                (peers/php-fpm/README.md)
  go            net/http + pgxpool(pool), GOMAXPROCS = cores, built with
                the newest Debian Go installed; measured directly (as
                publicly) or behind nginx (--go-front nginx)
  go-nginx      the same, always behind nginx (both fronts in one run)
  go-1.19       "go" built with bookworm's Go 1.19 (the previous runs')
  node          node:cluster, one worker per core, pg.Pool sized so the
                workers hold pool connections in all, fast-jwt; measured
                directly like Go (--go-front nginx puts it behind nginx)
References (no DB, no contract):
  cfpm-hello    F_keep: nginx (cfpm's shipped site, keep-conn on) + cfpm
                with app = hello, pm.max_children = pool: cfpm's own
                process model and front with an empty handler
  hello         F: nginx (cfpm's shipped site with keep-conn off: libfcgi
                blocks on a kept connection) + bench/ref/hello.c, libfcgi,
                pool children
  nginx-static  nginx alone, return 200 (the code-free ceiling)
"""

import glob
import json
import math
import os
import re
import resource
import shutil

from harness import http, nginx, proc
from harness.contract import AUDIENCE, ISSUER, KID

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHP_FPM = os.environ.get("CFPM_PHP_FPM") or "/usr/sbin/php-fpm8.2"
GO_GLOB = "/usr/lib/go-1.*/bin/go"
GO_1_19 = os.environ.get("CFPM_GO_1_19") or "/usr/lib/go-1.19/bin/go"
GOPATH = "/usr/share/gocode"
GO_BUILD_ENV = {"GO111MODULE": "off", "GOPATH": GOPATH, "GOFLAGS": ""}
# Go's build cache (keyed by toolchain and sources): kept between runs so
# only the first run pays for compiling pgx and golang-jwt (about a minute
# per toolchain on one core).
GOCACHE = os.environ.get("CFPM_GOCACHE") or "/var/cache/cfpm-bench/go-build"
NODE = os.environ.get("CFPM_NODE") or shutil.which("node") or "/usr/bin/node"
NODE_DIR = os.path.join(HERE, "peers", "node")
PHP_DIR = os.path.join(HERE, "peers", "php-fpm")
PHP_OPCACHE = ["-d", "opcache.enable=1", "-d", "opcache.validate_timestamps=0",
               "-d", "opcache.memory_consumption=128"]
# php-fpm-tuned: the functions preloaded once per pool, the tracing JIT.
PHP_TUNED = ["-d", "opcache.preload=" + os.path.join(PHP_DIR, "preload.php"),
             "-d", "opcache.preload_user=root", "-d", "opcache.jit=tracing",
             "-d", "opcache.jit_buffer_size=64M"]
# Every nginx of a run (the candidates' fronts and the probe): one worker
# per candidate core, sized for the load generators' connections.
NGINX_CONNECTIONS = 8192
NGINX_KEEPALIVE_REQUESTS = 1000000
READY_TIMEOUT = 30          # seconds for a started candidate to answer 200


def _version_key(path):
    return tuple(int(x) for x in re.findall(r"\d+", path))


# Descriptors an nginx worker keeps for itself (logs, listening and
# upstream sockets) beside its clients.
NGINX_FD_RESERVE = 100


def cell_nginx(prefix, port, site, cores, main=None):
    """An nginx for a cell under prefix: site on port, one worker per
    core (main: users_nginx()'s settings instead); start() it in the
    cell's cgroup and CPUs."""
    main = main or {"workers": cores, "worker_connections": NGINX_CONNECTIONS,
                    "worker_rlimit_nofile": None}
    return nginx.Nginx(prefix, port, site, workers=main["workers"],
                       connections=main["worker_connections"], level="warn",
                       keepalive_requests=NGINX_KEEPALIVE_REQUESTS,
                       rlimit_nofile=main["worker_rlimit_nofile"])


def users_nginx(srcdir, cores, users):
    """The nginx main settings of a virtual-users cell: the shipped
    etc/nginx/nginx.conf's worker_connections and worker_rlimit_nofile,
    and workers = one per core (worker_processes auto), or more where one
    worker's descriptors cannot hold users clients: a worker gets
    worker_rlimit_nofile only where root may raise its hard limit, else
    it keeps this machine's (recorded, with the reason)."""
    main = nginx.main_settings(srcdir)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = main["worker_rlimit_nofile"]
    if hard != resource.RLIM_INFINITY and hard < nofile:
        nofile = hard               # setrlimit fails; the worker keeps it
    per_worker = min(main["worker_connections"], nofile - NGINX_FD_RESERVE)
    workers = max(cores, math.ceil(users / per_worker))
    return dict(main, workers=workers, per_worker=per_worker,
                descriptors=nofile, why="one per core" if workers == cores
                else "%d clients per worker (descriptors %d): %d workers for "
                "%d users" % (per_worker, nofile, workers, users))


def newest_go():
    """$CFPM_GO, else the newest /usr/lib/go-1.N toolchain (Debian's
    golang-1.N-go, backports included), else go on PATH."""
    found = sorted(glob.glob(GO_GLOB), key=_version_key)
    return os.environ.get("CFPM_GO") or (found[-1] if found else None) or \
        shutil.which("go") or "/usr/bin/go"


GO = newest_go()


class Candidate:
    """Base: one nginx in front (or none), server processes, readiness."""

    name = "?"
    role = "candidate"
    needs_db = True
    front = "nginx"

    def __init__(self, run):
        self.run = run
        self.procs = []
        self.nginx = None
        self.port = None

    def prepare(self):
        """Builds or checks what the candidate needs; raises RuntimeError."""

    def describe(self):
        return {"name": self.name, "role": self.role, "front": self.front}

    def start(self, cell):
        """Starts the candidate for cell; sets self.port."""
        raise NotImplementedError

    def _spawn(self, cell, argv, logname, env=None):
        p = proc.spawn(argv, log_path=os.path.join(cell.dir, logname),
                       env=env, group=cell.group, cpus=cell.cpus)
        self.procs.append(p)
        return p

    def _front(self, cell, site, port):
        """Starts the candidate's nginx (site on port) in the cell."""
        self.nginx = cell_nginx(os.path.join(cell.dir, "nginx"), port, site,
                                cell.cores, cell.nginx_main)
        self.nginx.start(cell.group, cell.cpus)
        self.port = port

    def _wait_socket(self, path, p, *logs, timeout=20):
        """Waits for the server's socket; on failure raises with the tails
        of its logs (a configuration error goes to stderr, before the
        server's own log is open)."""
        ok = proc.wait_for(lambda: p.poll() is not None or
                           os.path.exists(path), timeout)
        if not ok or p.poll() is not None:
            raise RuntimeError("%s did not start:\n%s" % (self.name, "\n".join(
                proc.tail(log) for log in logs)))

    def wait_ready(self, timeout=READY_TIMEOUT):
        """True once /health (or / for references) answers 200."""
        path = "/health" if self.needs_db else "/"
        return bool(proc.wait_for(
            lambda: http.http_request(self.port, "GET", path,
                                      timeout=3).status == 200,
            timeout, 0.1))

    def stop(self):
        if self.nginx:
            self.nginx.stop()
            self.nginx = None
        for p in self.procs:
            proc.stop(p)
        self.procs = []


class Cfpm(Candidate):
    name = "cfpm"
    keep_conn = None            # nginx's FastCGI keep-conn as shipped (on)

    def prepare(self):
        for b in ("cfpm", "cfpm-token"):
            if not os.access(os.path.join(self.run.builddir, b), os.X_OK):
                raise RuntimeError("%s not built in %s" %
                                   (b, self.run.builddir))

    def _config(self, cell, sock):
        return "\n".join([
            "; cfpm configuration written by bench/run",
            "listen = " + sock, "listen.mode = 0666",
            "pm = static", "pm.max_children = %d" % cell.pool,
            'db.conninfo = "%s"' % self.run.pg.conninfo(),
            "auth.issuer = " + ISSUER, "auth.audience = " + AUDIENCE,
            "auth.key_file = " + self.run.keys["jwks"],
            "error_log = " + os.path.join(cell.dir, "cfpm-error.log"),
            "log_level = warning",
            # As shipped: workers unprivileged (a root master refuses to
            # run them as root) and under their system-call filter.
            "user = nobody", "group = nogroup", ""])

    def start(self, cell):
        sock = os.path.join(cell.dir, "cfpm.sock")
        conf = os.path.join(cell.dir, "cfpm.conf")
        with open(conf, "w") as f:
            f.write(self._config(cell, sock))
        cfpm = os.path.join(self.run.builddir, "cfpm")
        proc.run([cfpm, "-t", "-c", conf], timeout=30, check=True)
        p = self._spawn(cell, [cfpm, "-c", conf], "cfpm.log")
        self._wait_socket(sock, p, os.path.join(cell.dir, "cfpm-error.log"))
        port = proc.free_port()
        self._front(cell, nginx.cfpm_site("unix:" + sock, port,
                                          keep_conn=self.keep_conn,
                                          srcdir=self.run.srcdir,
                                          listen_options=True), port)


class CfpmNoKeep(Cfpm):
    """cfpm with nginx's FastCGI keep-conn off (and no upstream
    keepalive): a connection per request at every load, so the difference
    to cfpm at the same rate is what kept connections save there."""
    name = "cfpm-nokeep"
    keep_conn = 0

    def describe(self):
        return dict(Candidate.describe(self), what="cfpm behind its shipped "
                    "nginx site with fastcgi_keep_conn off and no upstream "
                    "keepalive (a connection per request)")


class PhpFpm(Candidate):
    name = "php-fpm"
    verify = "openssl"      # BENCH_VERIFY: openssl_verify, PEM per request
    script = os.path.join(HERE, "peers", "php-fpm", "index.php")
    template = os.path.join(HERE, "peers", "php-fpm", "pool.conf.in")

    def prepare(self):
        if not os.access(PHP_FPM, os.X_OK):
            raise RuntimeError("%s missing (apt-get install php8.2-fpm "
                               "php8.2-pgsql)" % PHP_FPM)
        rc, out, err = proc.run([PHP_FPM, "-m"], check=False)
        if "pdo_pgsql" not in out or "Zend OPcache" not in out:
            raise RuntimeError("php-fpm8.2 lacks pdo_pgsql or opcache")

    def _config(self, cell, sock):
        pg = self.run.pg
        values = {"DIR": cell.dir, "SOCK": sock, "POOL": str(cell.pool),
                  "DSN": "pgsql:host=%s;port=%d;dbname=events" %
                  (pg.sockdir, pg.port), "DBUSER": "postgres",
                  "PUBKEY": self.run.keys["pub"], "ISSUER": ISSUER,
                  "VERIFY": self.verify,
                  "AUDIENCE": AUDIENCE, "KID": KID}
        with open(self.template) as f:
            text = f.read()
        for k, v in values.items():
            text = text.replace("@%s@" % k, v)
        return text

    def _ini(self):
        return PHP_OPCACHE

    def start(self, cell):
        sock = os.path.join(cell.dir, "php-fpm.sock")
        conf = os.path.join(cell.dir, "php-fpm.conf")
        with open(conf, "w") as f:
            f.write(self._config(cell, sock))
        p = self._spawn(cell, [PHP_FPM, "-F", "-R", "-y", conf] + self._ini(),
                        "php-fpm.out")
        self._wait_socket(sock, p, os.path.join(cell.dir, "php-fpm.log"),
                          os.path.join(cell.dir, "php-fpm.out"))
        port = proc.free_port()
        self._front(cell, nginx.fastcgi_site(
            "php", sock, port, self.script,
            reuseport=cell.nginx_main is not None), port)

    def describe(self):
        return dict(Candidate.describe(self), opcache="on (validate off)",
                    pm="static", db="persistent PDO, PQexecParams",
                    key="SPKI PEM string per request", ini=self._ini())


class PhpFpmTuned(PhpFpm):
    """The same script as a careful PHP team runs it: the key's modulus and
    exponent parsed once per pool into APCu and RSASSA-PKCS1-v1_5 checked
    on GMP (OpenSSL 3.0 decodes a PEM key on every openssl_verify call),
    the functions preloaded by opcache, the tracing JIT. Each choice and
    its measured effect: peers/php-fpm/README.md."""
    name = "php-fpm-tuned"
    verify = "gmp"

    def prepare(self):
        PhpFpm.prepare(self)
        rc, out, err = proc.run([PHP_FPM, "-m"], check=False)
        missing = [m for m in ("gmp", "apcu") if m not in out.split()]
        if missing:
            raise RuntimeError("php-fpm-tuned needs php8.2-gmp and "
                               "php8.2-apcu (tools/install-deps --bench); "
                               "missing: %s" % ", ".join(missing))

    def _ini(self):
        return PHP_OPCACHE + PHP_TUNED

    def describe(self):
        return dict(PhpFpm.describe(self), key="n, e in APCu; "
                    "RSASSA-PKCS1-v1_5 on GMP")


class HttpPeer(Candidate):
    """A peer that serves HTTP itself (Go, Node): measured directly, as
    publicly, or behind nginx on the same CPUs (HTTP keepalive to it)."""

    log = "server.log"

    def __init__(self, run):
        Candidate.__init__(self, run)
        self.front = run.opts.go_front

    def argv(self, cell, port):
        """The server's command line for cell, listening on port."""
        raise NotImplementedError

    def env(self, cell):
        return None

    def start(self, cell):
        port = proc.free_port()
        self._spawn(cell, self.argv(cell, port), self.log, env=self.env(cell))
        if not proc.wait_for(lambda: proc.port_open(port), 20):
            raise RuntimeError("%s did not start:\n%s" % (self.name, proc.tail(
                os.path.join(cell.dir, self.log))))
        if self.front == "direct":
            self.port = port
            return
        front = proc.free_port()
        self._front(cell, nginx.proxy_site(
            self.name, port, front, cell.pool,
            reuseport=cell.nginx_main is not None), front)


class Go(HttpPeer):
    name = "go"
    log = "go.log"
    toolchain = GO
    build = None            # toolchain, command and go version -m, once built

    @property
    def binary(self):
        """The server built by this candidate's toolchain (own directory)."""
        return os.path.join(self.run.workdir, self.name, "events-go")

    def prepare(self):
        if not os.access(self.toolchain, os.X_OK):
            raise RuntimeError("%s missing (tools/install-deps --bench: "
                               "golang-go, golang-1.23-go from bookworm-"
                               "backports, golang-github-jackc-pgx-v4-dev, "
                               "golang-github-golang-jwt-jwt-dev)" %
                               self.toolchain)
        os.makedirs(os.path.dirname(self.binary), exist_ok=True)
        os.makedirs(GOCACHE, exist_ok=True)
        env = dict(os.environ, GOCACHE=GOCACHE, **GO_BUILD_ENV)
        argv = [self.toolchain, "build", "-o", self.binary, "main.go"]
        proc.run(argv, timeout=600, env=env,
                 cwd=os.path.join(HERE, "peers", "go"), check=True)
        rc, out, _ = proc.run([self.toolchain, "version", "-m", self.binary],
                              check=False)
        self.build = {"toolchain": self.toolchain,
                      "command": " ".join(["go"] + argv[1:]),
                      "env": GO_BUILD_ENV, "info": out.strip().splitlines()}

    def argv(self, cell, port):
        return [self.binary, "-listen", "127.0.0.1:%d" % port,
                "-dsn", self.run.pg.conninfo(), "-pool", str(cell.pool),
                "-pubkey", self.run.keys["pub"], "-kid", KID, "-issuer",
                ISSUER, "-audience", AUDIENCE]

    def env(self, cell):
        return dict(os.environ, GOMAXPROCS=str(cell.cores))

    def describe(self):
        return dict(Candidate.describe(self), gomaxprocs="= cores",
                    db="pgxpool, MaxConns = MinConns = pool",
                    build=self.build)


class Go119(Go):
    """The Go peer built with bookworm's Go 1.19, the toolchain of the
    previous runs, beside the newest one in the same run."""
    name = "go-1.19"
    toolchain = GO_1_19


class GoNginx(Go):
    """The same Go server behind nginx (HTTP keepalive to it), so it is
    measured in the same run on the architecture cfpm has: a front on the
    same CPUs. --go-front only chooses the front of the "go" candidate."""
    name = "go-nginx"

    def __init__(self, run):
        Go.__init__(self, run)
        self.front = "nginx"


class Node(HttpPeer):
    """peers/node/server.js: node:cluster with one worker per core, each
    worker a pg.Pool of pool / cores connections and a fast-jwt verifier
    (key parsed once per worker); libraries from peers/node/node_modules."""
    name = "node"
    log = "node.log"

    def prepare(self):
        if not os.access(NODE, os.X_OK):
            raise RuntimeError("node missing (tools/install-deps --bench: "
                               "nodejs, npm ci in bench/peers/node)")
        for mod in ("pg", "fast-jwt"):
            if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", mod)):
                raise RuntimeError("bench/peers/node/node_modules/%s missing "
                                   "(tools/install-deps --bench runs npm ci)"
                                   % mod)

    def argv(self, cell, port):
        pg = self.run.pg
        return [NODE, os.path.join(NODE_DIR, "server.js"), "--listen",
                "127.0.0.1:%d" % port, "--workers", str(cell.cores), "--pool",
                str(cell.pool), "--pg-host", pg.sockdir, "--pg-port",
                str(pg.port), "--pg-user", "postgres", "--pg-db", "events",
                "--pubkey", self.run.keys["pub"], "--kid", KID, "--issuer",
                ISSUER, "--audience", AUDIENCE]

    def describe(self):
        return dict(Candidate.describe(self), workers="node:cluster, one "
                    "per core", db="pg.Pool per worker, pool / cores "
                    "connections each", jwt="fast-jwt, no token cache",
                    modules=node_modules())


def node_modules():
    """{package: version} of the Node peer's locked npm packages."""
    try:
        with open(os.path.join(NODE_DIR, "package-lock.json")) as f:
            lock = json.load(f)
    except (OSError, ValueError):
        return None
    return {k.split("node_modules/")[-1]: v.get("version")
            for k, v in lock.get("packages", {}).items() if k}


class Hello(Candidate):
    name = "hello"
    role = "reference"
    needs_db = False

    def __init__(self, run):
        Candidate.__init__(self, run)
        self.binary = os.path.join(run.workdir, "hello")

    def prepare(self):
        proc.run(["gcc", "-O2", "-o", self.binary,
                  os.path.join(HERE, "ref", "hello.c"), "-lfcgi"], timeout=120,
                 check=True)

    def start(self, cell):
        sock = os.path.join(cell.dir, "hello.sock")
        p = self._spawn(cell, [self.binary, sock, str(cell.pool)],
                        "hello.log")
        self._wait_socket(sock, p, os.path.join(cell.dir, "hello.log"))
        port = proc.free_port()
        # The nginx settings cfpm ships with, but keep-conn off: libfcgi
        # blocks on a kept connection (a child per idle cached one).
        self._front(cell, nginx.cfpm_site("unix:" + sock, port, keep_conn=0,
                                          srcdir=self.run.srcdir), port)

    def describe(self):
        return dict(Candidate.describe(self), what="nginx + libfcgi "
                    "hello-world behind cfpm's shipped nginx site "
                    "(etc/nginx/cfpm.conf) with keep-conn off, pool "
                    "children")


class CfpmHello(Cfpm):
    """F_keep: cfpm itself (master, workers, accept, kept connections,
    the shipped nginx site) with the empty application."""
    name = "cfpm-hello"
    role = "reference"
    needs_db = False

    def _config(self, cell, sock):
        return Cfpm._config(self, cell, sock) + "app = hello\n"

    def describe(self):
        return dict(Candidate.describe(self), what="nginx (shipped site, "
                    "keep-conn on) + cfpm with app = hello, "
                    "pm.max_children = pool")


class NginxStatic(Candidate):
    name = "nginx-static"
    role = "reference"
    needs_db = False

    def start(self, cell):
        port = proc.free_port()
        self._front(cell, nginx.static_site(port), port)

    def describe(self):
        return dict(Candidate.describe(self), what="code-free nginx, "
                    "return 200 {\"ok\":true}")


CANDIDATES = {c.name: c for c in (Cfpm, CfpmNoKeep, PhpFpm, PhpFpmTuned,
                                  Go, GoNginx, Go119, Node)}
REFERENCES = {c.name: c for c in (CfpmHello, Hello, NginxStatic)}
