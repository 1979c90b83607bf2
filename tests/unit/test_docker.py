#!/usr/bin/env python3
"""
test_docker.py: docker/ stays honest without a Docker engine (TAP).

There is no Docker here, so the files are read and cross-checked:
- compose.yaml parses (python3-yaml) and uses only keys of the Compose
  specification's subset listed below, with well-formed durations;
- every service has a restart policy and a healthcheck; a healthcheck
  may be disabled only on a one-shot service (restart "no") that others
  wait for with service_completed_successfully;
- depends_on names existing services, service_healthy only services with
  a healthcheck; nginx waits for a healthy cfpm;
- every relative path (build context, Dockerfile, bind mounts) exists,
  every named volume is declared and every declared volume used;
- keys: the service running "cfpm-token keygen --dir DIR" keeps DIR in a
  volume no other service mounts; cfpm mounts the public volume read-only
  and docker/cfpm.conf's auth.key_file lies in it; no service bind-mounts
  host key files, and no file under docker/ holds a private key;
- cfpm's healthcheck asks docker/cfpm.conf's ping.path on its listen
  socket with cgi-fcgi, which the runtime image installs;
- the Dockerfile's COPY sources exist in the build context and are not
  excluded by its .dockerignore; its build stage installs every -dev
  package configure.ac asks for (debian/control's Build-Depends too), its
  runtime stage the library each of them depends on (dpkg's view, when
  the -dev packages are installed here).
Negative controls run some checks on altered copies and must fail.
Environment: CFPM_SRCDIR.
"""

import copy
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from cfpmtest import TAP, run  # noqa: E402

SRCDIR = os.environ.get("CFPM_SRCDIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
DOCKER = os.path.join(SRCDIR, "docker")
COMPOSE = os.path.join(DOCKER, "compose.yaml")

# The subset of the Compose specification this project may use.
TOP_KEYS = {"services", "volumes", "networks", "configs", "secrets", "name"}
SERVICE_KEYS = {"image", "build", "restart", "healthcheck", "depends_on",
                "volumes", "ports", "environment", "entrypoint", "command",
                "user", "stop_signal", "stop_grace_period", "networks"}
BUILD_KEYS = {"context", "dockerfile", "args", "target"}
HEALTH_KEYS = {"test", "interval", "timeout", "retries", "start_period",
               "start_interval", "disable"}
DEPENDS_KEYS = {"condition", "restart", "required"}
CONDITIONS = {"service_started", "service_healthy",
              "service_completed_successfully"}
RESTARTS = {"no", "always", "on-failure", "unless-stopped"}
DURATION = re.compile(r'^(\d+(\.\d+)?(us|ms|s|m|h))+$')
ONE_SHOT = "service_completed_successfully"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def conf_value(text, key):
    m = re.search(r'^%s\s*=\s*"?([^"\n]*)"?\s*$' % re.escape(key), text,
                  re.M)
    return m.group(1).strip() if m else None


def depends(svc):
    """depends_on as {service: condition}."""
    d = svc.get("depends_on") or {}
    if isinstance(d, list):
        return {name: "service_started" for name in d}
    return {name: (v or {}).get("condition", "service_started")
            for name, v in d.items()}


def mounts(svc):
    """volumes as [(source, target, read_only)]."""
    out = []
    for v in svc.get("volumes") or []:
        if isinstance(v, dict):
            out.append((v.get("source"), v.get("target"),
                        bool(v.get("read_only"))))
        else:
            parts = v.split(":")
            out.append((parts[0], parts[1] if len(parts) > 1 else parts[0],
                        len(parts) > 2 and "ro" in parts[2].split(",")))
    return out


def is_bind(source):
    return source.startswith((".", "/", "~"))


def health_enabled(svc):
    h = svc.get("healthcheck") or {}
    return bool(h.get("test")) and not h.get("disable")


def schema_problems(doc):
    probs = []
    for k in doc:
        if k not in TOP_KEYS and not k.startswith("x-"):
            probs.append("top-level key %r" % k)
    for name, svc in (doc.get("services") or {}).items():
        for k in svc:
            if k not in SERVICE_KEYS:
                probs.append("%s: key %r" % (name, k))
        for k in (svc.get("build") or {}):
            if k not in BUILD_KEYS:
                probs.append("%s: build key %r" % (name, k))
        for k, v in (svc.get("healthcheck") or {}).items():
            if k not in HEALTH_KEYS:
                probs.append("%s: healthcheck key %r" % (name, k))
            elif k in ("interval", "timeout", "start_period",
                       "start_interval") and not DURATION.match(str(v)):
                probs.append("%s: healthcheck %s %r" % (name, k, v))
        d = svc.get("depends_on") or {}
        for dep, v in (d.items() if isinstance(d, dict) else []):
            for k in (v or {}):
                if k not in DEPENDS_KEYS:
                    probs.append("%s: depends_on %s key %r" % (name, dep, k))
    return probs


def policy_problems(doc):
    """Restart policies, healthchecks and depends_on, as strings."""
    probs = []
    services = doc.get("services") or {}
    waited = {}     # service -> conditions others wait for it with
    for name, svc in services.items():
        for dep, cond in depends(svc).items():
            waited.setdefault(dep, set()).add(cond)
            if dep not in services:
                probs.append("%s depends on unknown %s" % (name, dep))
            elif cond not in CONDITIONS:
                probs.append("%s: unknown condition %r" % (name, cond))
            elif cond == "service_healthy" and \
                    not health_enabled(services[dep]):
                probs.append("%s waits for %s to be healthy: it has no "
                             "healthcheck" % (name, dep))
            elif cond == ONE_SHOT and services[dep].get("restart") != "no":
                probs.append("%s waits for %s to end: it restarts" %
                             (name, dep))
    for name, svc in services.items():
        restart = svc.get("restart")
        if not isinstance(restart, str) or \
                restart.split(":")[0] not in RESTARTS:
            probs.append("%s: restart policy %r" % (name, restart))
        h = svc.get("healthcheck")
        if h is None:
            probs.append("%s: no healthcheck" % name)
        elif h.get("disable"):
            if restart != "no" or waited.get(name) != {ONE_SHOT}:
                probs.append("%s: healthcheck disabled on a service that "
                             "is not a one-shot others wait for" % name)
        else:
            test = h.get("test")
            if not (isinstance(test, str) and test) and not (
                    isinstance(test, list) and len(test) > 1 and
                    test[0] in ("CMD", "CMD-SHELL")):
                probs.append("%s: healthcheck test %r" % (name, test))
    return probs


def path_problems(doc):
    probs = []
    declared = set((doc.get("volumes") or {}).keys())
    used = set()
    for name, svc in (doc.get("services") or {}).items():
        b = svc.get("build")
        if b is not None:
            ctx = os.path.normpath(os.path.join(DOCKER, b.get("context",
                                                              ".")))
            if not os.path.isdir(ctx):
                probs.append("%s: build context %s" % (name, ctx))
            df = os.path.join(ctx, b.get("dockerfile", "Dockerfile"))
            if not os.path.isfile(df):
                probs.append("%s: Dockerfile %s" % (name, df))
        for source, _, _ in mounts(svc):
            if is_bind(source):
                if not os.path.exists(os.path.join(DOCKER, source)):
                    probs.append("%s: bind mount %s" % (name, source))
            else:
                used.add(source)
                if source not in declared:
                    probs.append("%s: volume %s not declared" %
                                 (name, source))
    for v in sorted(declared - used):
        probs.append("volume %s declared, never used" % v)
    return probs


def command_text(svc):
    c = svc.get("command") or ""
    return " ".join(c) if isinstance(c, list) else c


def key_problems(doc, conf):
    """The private key stays in keygen's volume; cfpm reads the public
    key set from a read-only volume keygen fills."""
    services = doc.get("services") or {}
    makers = [(n, s) for n, s in services.items()
              if re.search(r'cfpm-token keygen --dir (\S+)',
                           command_text(s))]
    if len(makers) != 1:
        return ["%d services make keys (want one)" % len(makers)]
    maker, svc = makers[0]
    keydir = re.search(r'cfpm-token keygen --dir (\S+)',
                       command_text(svc)).group(1).rstrip(";")
    private = [src for src, dst, _ in mounts(svc)
               if keydir == dst or keydir.startswith(dst.rstrip("/") + "/")]
    if len(private) != 1 or is_bind(private[0]):
        return ["%s keeps %s in no named volume" % (maker, keydir)]
    probs = []
    written = {src for src, _, ro in mounts(svc) if not ro} - set(private)
    for name, s in services.items():
        for src, dst, ro in mounts(s):
            if name != maker and src == private[0]:
                probs.append("%s mounts the private key volume %s" %
                             (name, src))
            if is_bind(src) and re.search(r'key', src):
                probs.append("%s bind-mounts host keys %s" % (name, src))
    cfpm = services.get("cfpm") or {}
    key_file = conf_value(conf, "auth.key_file") or ""
    public = [(src, dst, ro) for src, dst, ro in mounts(cfpm)
              if src in written and key_file.startswith(dst.rstrip("/") +
                                                        "/")]
    if not public:
        probs.append("cfpm's auth.key_file %s is in no volume %s fills" %
                     (key_file, maker))
    elif not all(ro for _, _, ro in public):
        probs.append("cfpm mounts the public key volume writable")
    if depends(cfpm).get(maker) != ONE_SHOT:
        probs.append("cfpm does not wait for %s to end" % maker)
    return probs


def dockerignore_patterns(context):
    path = os.path.join(context, ".dockerignore")
    if not os.path.exists(path):
        return None
    pats = []
    for line in read(path).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pats.append(line)
    return pats


def ignored(rel, pats):
    """Whether .dockerignore excludes rel (a path in the context): the
    last pattern matching it or one of its parents decides."""
    def rx(p):
        out, i = "", 0
        while i < len(p):
            if p.startswith("**/", i):
                out, i = out + "(.*/)?", i + 3
            elif p.startswith("**", i):
                out, i = out + ".*", i + 2
            elif p[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif p[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(p[i]), i + 1
        return re.compile(out + "$")
    parts = rel.strip("/").split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for p in pats:
        neg = p.startswith("!")
        body = p[1:] if neg else p
        r = rx(body.strip("/"))
        if any(r.match(x) for x in prefixes):
            result = not neg
    return result


def dockerfile_stages(text):
    """[(from, [(instruction, args)])] with continuations joined."""
    text = re.sub(r'\\\n', ' ', text)
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        ins, _, args = line.partition(" ")
        if ins.upper() == "FROM":
            stages.append((args.strip(), []))
        elif stages:
            stages[-1][1].append((ins.upper(), args.strip()))
    return stages


def copy_sources(stages):
    out = []
    for _, body in stages:
        for ins, args in body:
            if ins not in ("COPY", "ADD"):
                continue
            words = args.split()
            if any(w.startswith("--from=") for w in words):
                continue
            words = [w for w in words if not w.startswith("--")]
            out.extend(words[:-1])
    return out


def installed_packages(body):
    pkgs = set()
    for ins, args in body:
        if ins == "RUN":
            for m in re.finditer(r'apt-get install ([^&;]*)', args):
                pkgs |= {w for w in m.group(1).split()
                         if not w.startswith("-")}
    return pkgs


# ---------------------------------------------------------------------------

def main():
    t = TAP()
    try:
        import yaml
    except ImportError:
        print("1..0 # SKIP python3-yaml not installed (tools/install-deps)")
        return 0
    with open(COMPOSE, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    t.ok(isinstance(doc, dict) and doc.get("services"),
         "compose.yaml parses and has services")
    services = doc.get("services") or {}
    probs = schema_problems(doc)
    t.ok(not probs, "compose.yaml keys and durations are the Compose "
         "specification's (the subset in use)", *probs)
    probs = policy_problems(doc)
    t.ok(not probs, "every service: restart policy, healthcheck (disabled "
         "only on a one-shot), depends_on on known, checked services",
         *probs)
    t.is_(depends(services.get("nginx", {})).get("cfpm"), "service_healthy",
          "nginx waits for a healthy cfpm")
    probs = path_problems(doc)
    t.ok(not probs, "build contexts, Dockerfiles and bind mounts exist; "
         "named volumes declared and used", *probs)
    conf = read(os.path.join(DOCKER, "cfpm.conf"))
    probs = key_problems(doc, conf)
    t.ok(not probs, "the private key stays in keygen's volume; cfpm reads "
         "auth.key_file from the public volume, read-only", *probs)
    secrets = [n for n in sorted(os.listdir(DOCKER))
               if os.path.isfile(os.path.join(DOCKER, n)) and
               "PRIVATE KEY" in read(os.path.join(DOCKER, n))]
    t.ok(not secrets, "no private key under docker/", secrets)
    health = " ".join((services.get("cfpm", {}).get("healthcheck") or {})
                      .get("test") or [])
    listen, ping = conf_value(conf, "listen"), conf_value(conf, "ping.path")
    t.ok("cgi-fcgi" in health and ping and listen and
         ("SCRIPT_NAME=%s " % ping) in health and
         ("-connect %s " % listen) in health,
         "cfpm's healthcheck asks ping.path (%s) on the listen socket (%s) "
         "with cgi-fcgi" % (ping, listen), health)

    # Negative controls: altered copies must be refused.
    bad = copy.deepcopy(doc)
    del bad["services"]["cfpm"]["healthcheck"]
    t.ok(policy_problems(bad), "control: a service without a healthcheck "
         "is reported")
    bad = copy.deepcopy(doc)
    bad["services"]["cfpm"]["restart"] = False      # YAML's bare "no"
    t.ok(policy_problems(bad), "control: restart given as a boolean is "
         "reported")
    bad = copy.deepcopy(doc)
    bad["services"]["nginx"]["healthcheck"] = {"disable": True}
    t.ok(policy_problems(bad), "control: a healthcheck disabled on a "
         "long-running service is reported")
    bad = copy.deepcopy(doc)
    bad["services"]["cfpm"]["volumes"].append("cfpm-keys:/keys:ro")
    t.ok(key_problems(bad, conf), "control: the private key volume "
         "mounted into cfpm is reported")
    bad = copy.deepcopy(doc)
    bad["services"]["nginx"]["volumes"].append("./missing.conf:/x:ro")
    t.ok(path_problems(bad), "control: a missing bind-mount source is "
         "reported")

    # The image.
    cfpm_build = services.get("cfpm", {}).get("build") or {}
    context = os.path.normpath(os.path.join(DOCKER,
                                            cfpm_build.get("context", ".")))
    dockerfile = os.path.join(context, cfpm_build.get("dockerfile",
                                                      "Dockerfile"))
    stages = dockerfile_stages(read(dockerfile))
    t.cmp_ok(len(stages), ">=", 2, "Dockerfile: a build and a runtime "
             "stage")
    pats = dockerignore_patterns(context)
    t.ok(pats is not None and ignored(".git", pats) and
         ignored("build/src/main.o", pats) and
         ignored("build-san/cfpm", pats),
         ".dockerignore in the build context leaves out .git and local "
         "builds")
    srcs = copy_sources(stages)
    missing = [s for s in srcs if not os.path.exists(
        os.path.join(context, s))]
    excluded = [s for s in srcs if s != "." and ignored(s, pats or [])]
    t.ok(srcs and not missing and not excluded, "Dockerfile: COPY sources "
         "exist in the context and are not excluded (%s)" % " ".join(srcs),
         "missing: %s" % missing, "excluded: %s" % excluded)
    t.ok(not ignored("src/main.c", pats or []) and
         not ignored("configure.ac", pats or []),
         ".dockerignore keeps the sources")
    t.ok(ignored("docker/keys/jwt.key.pem", pats or []) and
         not ignored("docker/cfpm.conf", pats or []),
         "control: the pattern matcher excludes and keeps as written")
    build_pkgs = installed_packages(stages[0][1]) if stages else set()
    run_pkgs = installed_packages(stages[-1][1]) if stages else set()
    devs = sorted(set(re.findall(r'install the Debian package (\S+-dev)',
                                 read(os.path.join(SRCDIR,
                                                   "configure.ac")))))
    t.ok(len(devs) >= 5 and set(devs) <= build_pkgs,
         "Dockerfile build stage installs configure.ac's -dev packages",
         "missing: %s" % sorted(set(devs) - build_pkgs))
    control = os.path.join(SRCDIR, "debian", "control")
    if os.path.exists(control):
        bdeps = read(control).split("Build-Depends:")[1].split("\n\n")[0]
        t.ok(all(re.search(r'\b%s\b' % re.escape(d), bdeps) for d in devs),
             "debian/control Build-Depends has them too")
    else:
        t.skip("debian/control Build-Depends", "no debian/")
    t.ok("libfcgi-bin" in run_pkgs, "the runtime stage installs "
         "libfcgi-bin (cgi-fcgi, the healthcheck's client)")
    for dev in devs:
        rc, out, _ = run(["dpkg-query", "-W", "-f=${Depends}", dev])
        if rc != 0:
            t.skip("runtime stage installs %s's library" % dev,
                   "%s not installed here" % dev)
            continue
        libs = {d.split()[0].split(":")[0]
                for d in re.split(r'[,|]', out) if d.strip()}
        t.ok(libs & run_pkgs, "the runtime stage installs %s's library "
             "(%s)" % (dev, ", ".join(sorted(libs & run_pkgs)) or
                       "none of " + ", ".join(sorted(libs))))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
