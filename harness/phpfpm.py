"""
phpfpm.py: Debian's php-fpm8.2 as the reference for cfpm's status and
ping pages: a private static pool with pm.status_path and ping.path on a
unix socket in a directory of the caller's, run in the foreground. The
tests that compare what PHP-FPM answers with what cfpm answers start it
from here (tests/integration/test_status_compat.py, test_monitoring.py).
"""

import os
import shutil
import signal

from . import fcgi, proc

PHP_FPM = shutil.which("php-fpm8.2") or "/usr/sbin/php-fpm8.2"
STATUS_PATH = "/status"
PING_PATH = "/ping"
START_TIMEOUT = 15
STOP_TIMEOUT = 10

# A request for the status page as a FastCGI client sends it to PHP-FPM:
# SCRIPT_FILENAME set (PHP-FPM answers 404 without one), no REQUEST_URI.
STATUS_REQUEST = {
    "SCRIPT_FILENAME": STATUS_PATH,
    "SCRIPT_NAME": STATUS_PATH,
    "REQUEST_METHOD": "GET",
}

CONF = """\
[global]
error_log = {log}
pid = {pid}
daemonize = no
[www]
{user}listen = {sock}
listen.mode = 0666
pm = static
pm.max_children = {pool}
pm.status_path = {status}
ping.path = {ping}
"""


def installed():
    """True if php-fpm8.2 can be run."""
    return os.access(PHP_FPM, os.X_OK)


class PhpFpm:
    """php-fpm8.2 with a private configuration in directory d: pool
    children, run as user:group when given (as root it needs one, or
    -R), status at STATUS_PATH and ping at PING_PATH on self.sock."""

    def __init__(self, d, pool, user=None, group=None):
        self.dir = d
        self.sock = os.path.join(d, "php-fpm.sock")
        self.log = os.path.join(d, "php-fpm.log")
        self.out = os.path.join(d, "php-fpm.out")
        self.conf = os.path.join(d, "php-fpm.conf")
        who = ""
        if user is not None:
            who = "user = %s\ngroup = %s\n" % (user, group or user)
        with open(self.conf, "w") as f:
            f.write(CONF.format(log=self.log, pid=os.path.join(
                d, "php-fpm.pid"), user=who, sock=self.sock, pool=pool,
                status=STATUS_PATH, ping=PING_PATH))
        argv = [PHP_FPM, "-y", self.conf, "-F"]
        if os.geteuid() == 0:
            argv.append("-R")
        self.proc = proc.spawn(argv, log_path=self.out)

    def ask(self, query, timeout=5):
        """The status page for query (QUERY_STRING), asked over
        FastCGI."""
        p = dict(STATUS_REQUEST)
        p["QUERY_STRING"] = query
        return fcgi.fcgi_exact(self.sock, p, timeout=timeout)

    def ready(self, timeout=START_TIMEOUT):
        """True once the status page answers; False if php-fpm died or
        did not answer within timeout seconds."""
        def up():
            if self.proc.poll() is not None:
                return "dead"
            return "up" if self.ask("json").status == 200 else None
        return proc.wait_for(up, timeout, 0.1) == "up"

    def stop(self, timeout=STOP_TIMEOUT):
        """Graceful stop (SIGQUIT), SIGKILL to the group after timeout
        seconds; returns the exit status."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGQUIT)
        try:
            return self.proc.wait(timeout=timeout)
        except Exception:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(timeout=5)
