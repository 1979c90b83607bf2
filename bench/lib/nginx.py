"""
nginx.py: the nginx instances of a run. Every instance runs in the
foreground (daemon off) with one worker per candidate core, inside the
cgroup and CPU set it is given, on 127.0.0.1:<port>.

Server blocks:
  cfpm_site()     the shipped etc/nginx/cfpm.conf, with the socket path
                  and port replaced (what users deploy is what is measured);
  fastcgi_site()  the same FastCGI settings for another responder
                  (php-fpm, the libfcgi hello-world);
  proxy_site()    HTTP reverse proxy with upstream keepalive (Go, if asked);
  static_site()   the code-free probe: return 200 '{"ok":true}'.
"""

import os
import re
import signal

from . import proc

NGINX = os.environ.get("CFPM_NGINX") or "/usr/sbin/nginx"
FASTCGI_PARAMS = "/etc/nginx/fastcgi_params"

# Shared by every instance, candidates and probe alike.
MAIN_CONF = """\
worker_processes {workers};
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
user root;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/body;
    fastcgi_temp_path {prefix}/fastcgi;
    proxy_temp_path {prefix}/proxy;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
{site}
}}
"""

FASTCGI_SITE = """\
upstream {name} {{
    server unix:{sock};
}}
server {{
    listen 127.0.0.1:{port};
    server_name _;
    client_max_body_size 64k;
    client_body_buffer_size 64k;
    location / {{
        include {params};
        fastcgi_param HTTP_PROXY "";
        fastcgi_param SCRIPT_FILENAME {script};
        fastcgi_param SCRIPT_NAME /index.php;
        fastcgi_keep_conn off;
        fastcgi_pass {name};
    }}
}}
"""

PROXY_SITE = """\
upstream {name} {{
    server 127.0.0.1:{backend};
    keepalive {keepalive};
}}
server {{
    listen 127.0.0.1:{port};
    server_name _;
    client_max_body_size 64k;
    client_body_buffer_size 64k;
    location / {{
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_pass http://{name};
    }}
}}
"""

STATIC_SITE = """\
server {{
    listen 127.0.0.1:{port};
    server_name _;
    client_max_body_size 64k;
    client_body_buffer_size 64k;
    location / {{
        default_type application/json;
        return 200 '{{"ok":true}}';
    }}
}}
"""


def cfpm_site(srcdir, sock, port):
    """etc/nginx/cfpm.conf for this run: our socket, our port, no IPv6
    listener, Debian's fastcgi_params by absolute path."""
    with open(os.path.join(srcdir, "etc", "nginx", "cfpm.conf")) as f:
        text = f.read()
    text = text.replace("unix:/run/cfpm/cfpm.sock", "unix:" + sock)
    text = text.replace("127.0.0.1:8080", "127.0.0.1:%d" % port)
    text = re.sub(r"(?m)^\s*listen \[::1\]:8080;\n", "", text)
    return text.replace("include fastcgi_params",
                        "include " + FASTCGI_PARAMS)


def fastcgi_site(name, sock, port, script="/dev/null"):
    return FASTCGI_SITE.format(name=name, sock=sock, port=port,
                               params=FASTCGI_PARAMS, script=script)


def proxy_site(name, backend, port, keepalive):
    return PROXY_SITE.format(name=name, backend=backend, port=port,
                             keepalive=keepalive)


def static_site(port):
    return STATIC_SITE.format(port=port)


class Nginx:
    """One nginx instance under prefix (a directory of its own)."""

    def __init__(self, prefix, port, site, workers):
        self.prefix = prefix
        self.port = port
        self.conf = os.path.join(prefix, "nginx.conf")
        self.log = os.path.join(prefix, "error.log")
        self.p = None
        os.makedirs(prefix, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(MAIN_CONF.format(workers=workers, prefix=prefix,
                                     site=site))

    def start(self, group, cpus, timeout=10):
        """Starts nginx in group on cpus and waits for its port."""
        self.p = proc.spawn([NGINX, "-e", self.log, "-p", self.prefix, "-c",
                             self.conf], log_path=self.log, group=group,
                            cpus=cpus)
        if not proc.wait_for(lambda: self.p.poll() is not None or
                             proc.port_open(self.port), timeout) or \
                self.p.poll() is not None:
            raise RuntimeError("nginx did not start:\n" + proc.tail(self.log))

    def stop(self):
        """Graceful stop (SIGQUIT), then the group is killed."""
        if self.p is not None:
            proc.stop(self.p, signal.SIGQUIT, timeout=5)
            self.p = None
