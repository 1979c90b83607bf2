"""
candidates.py: what is measured. Each class builds (prepare), starts one
cell's configuration (start: cores, pool, cgroup, CPUs) and stops it.
Everything a candidate runs — its nginx included — goes into the cell's
cgroup and CPU set, so its CPU accounting covers the whole server side.

Candidates (same contract, same run):
  cfpm          nginx (etc/nginx/cfpm.conf) + cfpm, pm.max_children = pool
  php-fpm       nginx + php-fpm8.2, pm = static, max_children = pool
  go            net/http + pgxpool(pool), GOMAXPROCS = cores; measured
                directly (as publicly) or behind nginx (--go-front nginx)
  go-nginx      the same, always behind nginx (both fronts in one run)
References (no DB, no contract):
  hello         nginx (cfpm's shipped site) + bench/ref/hello.c, libfcgi,
                pool children
  nginx-static  nginx alone, return 200 (the code-free ceiling)
"""

import os
import shutil

from . import contract, nginx, proc

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHP_FPM = os.environ.get("CFPM_PHP_FPM") or "/usr/sbin/php-fpm8.2"
GO = os.environ.get("CFPM_GO") or shutil.which("go") or "/usr/bin/go"
GOPATH = "/usr/share/gocode"
ISSUER = "https://auth.bench.local"
AUDIENCE = "events-api"
KID = "bench-1"
PHP_OPCACHE = ["-d", "opcache.enable=1", "-d", "opcache.validate_timestamps=0",
               "-d", "opcache.memory_consumption=128"]


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
        self.nginx = nginx.Nginx(os.path.join(cell.dir, "nginx"), port, site,
                                 workers=cell.cores)
        self.nginx.start(cell.group, cell.cpus)
        self.port = port

    def _wait_socket(self, path, p, log, timeout=20):
        ok = proc.wait_for(lambda: p.poll() is not None or
                           os.path.exists(path), timeout)
        if not ok or p.poll() is not None:
            raise RuntimeError("%s did not start:\n%s" %
                               (self.name, proc.tail(log)))

    def wait_ready(self, timeout=30):
        """True once /health (or / for references) answers 200."""
        path = "/health" if self.needs_db else "/"
        return bool(proc.wait_for(
            lambda: contract.request(self.port, "GET", path, timeout=3)[0]
            == 200, timeout, 0.1))

    def stop(self):
        if self.nginx:
            self.nginx.stop()
            self.nginx = None
        for p in self.procs:
            proc.stop(p)
        self.procs = []


class Cfpm(Candidate):
    name = "cfpm"

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
        proc.run([cfpm, "-t", "-c", conf], timeout=30)
        p = self._spawn(cell, [cfpm, "-c", conf], "cfpm.log")
        self._wait_socket(sock, p, os.path.join(cell.dir, "cfpm-error.log"))
        port = proc.free_port()
        self._front(cell, nginx.cfpm_site(self.run.srcdir, sock, port), port)


class PhpFpm(Candidate):
    name = "php-fpm"
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
                  (pg.sock, pg.port), "DBUSER": "postgres",
                  "PUBKEY": self.run.keys["pub"], "ISSUER": ISSUER,
                  "AUDIENCE": AUDIENCE, "KID": KID}
        with open(self.template) as f:
            text = f.read()
        for k, v in values.items():
            text = text.replace("@%s@" % k, v)
        return text

    def start(self, cell):
        sock = os.path.join(cell.dir, "php-fpm.sock")
        conf = os.path.join(cell.dir, "php-fpm.conf")
        with open(conf, "w") as f:
            f.write(self._config(cell, sock))
        p = self._spawn(cell, [PHP_FPM, "-F", "-R", "-y", conf] + PHP_OPCACHE,
                        "php-fpm.out")
        self._wait_socket(sock, p, os.path.join(cell.dir, "php-fpm.log"))
        port = proc.free_port()
        self._front(cell, nginx.fastcgi_site("php", sock, port, self.script),
                    port)

    def describe(self):
        return dict(Candidate.describe(self), opcache="on (validate off)",
                    pm="static", db="persistent PDO, PQexecParams")


class Go(Candidate):
    name = "go"

    def __init__(self, run):
        Candidate.__init__(self, run)
        self.front = run.opts.go_front
        self.binary = os.path.join(run.workdir, "go", "events-go")

    def prepare(self):
        if not os.access(GO, os.X_OK):
            raise RuntimeError("go missing (apt-get install golang-go "
                               "golang-github-jackc-pgx-v4-dev "
                               "golang-github-golang-jwt-jwt-dev)")
        os.makedirs(os.path.dirname(self.binary), exist_ok=True)
        env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH,
                   GOCACHE=os.path.join(self.run.workdir, "go", "cache"),
                   GOFLAGS="")
        proc.run([GO, "build", "-o", self.binary, "main.go"], timeout=600,
                 env=env, cwd=os.path.join(HERE, "peers", "go"))

    def start(self, cell):
        port = proc.free_port()
        env = dict(os.environ, GOMAXPROCS=str(cell.cores))
        self._spawn(cell, [self.binary, "-listen", "127.0.0.1:%d" % port,
                           "-dsn", self.run.pg.conninfo(), "-pool",
                           str(cell.pool), "-pubkey", self.run.keys["pub"],
                           "-kid", KID, "-issuer", ISSUER, "-audience",
                           AUDIENCE], "go.log", env=env)
        if not proc.wait_for(lambda: proc.port_open(port), 20):
            raise RuntimeError("go did not start:\n" + proc.tail(
                os.path.join(cell.dir, "go.log")))
        if self.front == "direct":
            self.port = port
            return
        front = proc.free_port()
        self._front(cell, nginx.proxy_site("go", port, front, cell.pool),
                    front)

    def describe(self):
        return dict(Candidate.describe(self), gomaxprocs="= cores",
                    db="pgxpool, MaxConns = MinConns = pool")


class GoNginx(Go):
    """The same Go server behind nginx (HTTP keepalive to it), so it is
    measured in the same run on the architecture cfpm has: a front on the
    same CPUs. --go-front only chooses the front of the "go" candidate."""
    name = "go-nginx"

    def __init__(self, run):
        Go.__init__(self, run)
        self.front = "nginx"


class Hello(Candidate):
    name = "hello"
    role = "reference"
    needs_db = False

    def __init__(self, run):
        Candidate.__init__(self, run)
        self.binary = os.path.join(run.workdir, "hello")

    def prepare(self):
        proc.run(["gcc", "-O2", "-o", self.binary,
                  os.path.join(HERE, "ref", "hello.c"), "-lfcgi"])

    def start(self, cell):
        sock = os.path.join(cell.dir, "hello.sock")
        p = self._spawn(cell, [self.binary, sock, str(cell.pool)],
                        "hello.log")
        self._wait_socket(sock, p, os.path.join(cell.dir, "hello.log"))
        port = proc.free_port()
        # The floor F is defined under the nginx settings cfpm ships with.
        self._front(cell, nginx.cfpm_site(self.run.srcdir, sock, port), port)

    def describe(self):
        return dict(Candidate.describe(self), what="nginx + libfcgi "
                    "hello-world behind cfpm's shipped nginx site "
                    "(etc/nginx/cfpm.conf), pool children")


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


CANDIDATES = {c.name: c for c in (Cfpm, PhpFpm, Go, GoNginx)}
REFERENCES = {c.name: c for c in (Hello, NginxStatic)}
