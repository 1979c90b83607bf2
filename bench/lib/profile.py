"""
profile.py: where a candidate's CPU goes, per request and per stage.

While the load runs, `perf record -e cpu-clock -g` samples the candidate's
CPUs; every sample of a process in the candidate's cgroup (its nginx and
its server processes) is put in one stage:

  user code     by the library the sample's instruction is in: OpenSSL,
                jansson, libpq, libfcgi, libc, the server's own code, ...
  kernel        context switches (a __schedule frame anywhere in the
                chain), else the system call it is in (by the handler
                under do_syscall_64, e.g. sendto), else interrupts and
                other kernel work

A stage's share of the candidate's samples times the candidate's CPU per
request (its cgroup counter over the same window) is its µs per request.
perf's own sampling costs a few per cent; the stages are compared with
each other and with the hello-world reference under the same sampler.
"""

import collections
import os
import re
import shutil
import subprocess

from harness import proc

PERF = os.environ.get("CFPM_PERF") or shutil.which("perf") or "/usr/bin/perf"
FREQ = 1999                     # samples per second per CPU

# Library file name (prefix) -> stage label for user-mode samples.
LIBS = (("libcrypto", "OpenSSL (libcrypto)"), ("libssl", "OpenSSL (libssl)"),
        ("libjansson", "jansson"), ("libpq", "libpq"),
        ("libfcgi", "libfcgi"), ("libc.so", "libc"),
        ("ld-linux", "ld.so"), ("[vdso]", "vDSO"))
SYSCALL_FRAME = re.compile(r"^(?:__x64_sys|__ia32_sys|__do_sys|__se_sys)_"
                           r"(\w+)$")


def available():
    """None if perf can sample here, else the reason it cannot."""
    if not os.access(PERF, os.X_OK):
        return "perf is not installed (Debian package linux-perf)"
    try:
        r = subprocess.run([PERF, "stat", "-e", "cpu-clock", "--", "true"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "perf does not run: %s" % e
    if r.returncode != 0:
        return "perf does not run: %s" % r.stderr.decode("utf-8",
                                                         "replace")[-300:]
    return None


def start(cpus, seconds, path):
    """Starts perf sampling cpus for seconds into path; returns the
    process (wait for it with finish())."""
    argv = [PERF, "record", "-q", "-e", "cpu-clock", "-F", str(FREQ), "-g",
            "-C", ",".join(str(c) for c in cpus), "-o", path, "--",
            "sleep", str(seconds)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def finish(p, timeout):
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.stop(p)
        raise RuntimeError("perf record did not finish")
    if p.returncode != 0:
        raise RuntimeError("perf record: %s" %
                           err.decode("utf-8", "replace")[-300:])


def samples(path):
    """Yields (comm, pid, frames) per sample; frames leaf first, each
    (symbol, dso)."""
    p = subprocess.Popen([PERF, "script", "-i", path, "-F",
                          "comm,pid,ip,sym,dso"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True,
                         errors="replace")
    head, frames = None, []
    for line in p.stdout:
        if not line.strip():
            if head:
                yield head[0], head[1], frames
            head, frames = None, []
        elif line[0] in " \t":
            parts = line.split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            sym, _, dso = rest.rpartition(" (")
            frames.append((sym.strip(), dso.rstrip().rstrip(")")))
        else:
            fields = line.rsplit(None, 1)
            if len(fields) == 2 and fields[1].isdigit():
                head = (fields[0], int(fields[1]))
    if head:
        yield head[0], head[1], frames
    p.wait()


def role(comm):
    return "nginx" if comm.startswith("nginx") else "server"


def syscall_name(frame):
    """The system call a handler frame belongs to (write for
    __x64_sys_write, or for ksys_write when the wrapper was inlined)."""
    m = SYSCALL_FRAME.match(frame)
    if m:
        return m.group(1)
    for prefix in ("__sys_", "ksys_", "do_sys_", "do_"):
        if frame.startswith(prefix):
            return frame[len(prefix):]
    return frame


def kernel_stage(frames):
    """A kernel sample's stage: context switch, system call or other."""
    names = [s for s, _ in frames]
    if any(n == "__schedule" for n in names):
        return "kernel: context switches"
    for i, n in enumerate(names):
        if n == "do_syscall_64" and i > 0:
            return "kernel: %s()" % syscall_name(names[i - 1])
    if any("irq" in n or n.startswith("asm_sysvec") for n in names):
        return "kernel: interrupts"
    return "kernel: other"


def user_stage(dso, comm):
    base = os.path.basename(dso)
    for prefix, label in LIBS:
        if base.startswith(prefix):
            return label
    if base == comm or base.startswith(comm):
        return "own code"
    return "other: " + (base or "unknown")


def stage(comm, frames):
    if not frames:
        return "unknown"
    dso = frames[0][1]
    if dso == "[kernel.kallsyms]":
        return kernel_stage(frames)
    return user_stage(dso, comm)


def attribute(path, pids):
    """Counts the samples of pids by (role, stage); returns the counter
    and the number of samples of other processes."""
    counts = collections.Counter()
    other = 0
    for comm, pid, frames in samples(path):
        if pid in pids:
            counts[(role(comm), stage(comm, frames))] += 1
        elif pid != 0:
            other += 1
    return counts, other


def breakdown(counts, cpu_us_per_req):
    """[{role, stage, samples, share, us_per_req}] largest first."""
    total = sum(counts.values())
    rows = []
    for (r, s), n in counts.most_common():
        share = n / total if total else 0.0
        rows.append({"role": r, "stage": s, "samples": n, "share": share,
                     "us_per_req": share * cpu_us_per_req
                     if cpu_us_per_req else None})
    return rows
