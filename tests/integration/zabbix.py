"""
zabbix.py: Zabbix's PHP-FPM templates as a Zabbix server runs them, for
tests/integration/test_monitoring.py (a library, not a test).

The templates are read from the file Debian's zabbix-frontend-php ships
(TEMPLATES), never from a copy: their items, item keys, macros and
preprocessing steps are what the test applies. Master items are fetched
by the real clients: a "Zabbix agent" item (web.page.get[...]) by
zabbix_agentd -t, an "HTTP agent" item by curl (libcurl, as Zabbix's
HTTP agent), with the item's URL, retrieve mode, status codes, redirect
rule and timeout. Dependent items then take their master's value
through their own steps, the master's steps first, as the server does.

The preprocessing steps the two PHP-FPM templates use, implemented as
Zabbix 6.0 documents them:
  REGEX                       pattern searched (PCRE: Python's re agrees
                              on the patterns used here), output with
                              \\N for group N; no match is an error
  JSONPATH                    Zabbix's path syntax ($, .name, ['name'],
                              .['name'], [N]); a scalar's value (a
                              string unquoted), an object or array as
                              JSON text; no match is an error
  CHANGE_PER_SECOND           (value - previous) / seconds between them;
  SIMPLE_CHANGE               value - previous; for both the first value
                              and a decrease are discarded, a value
                              that is not a number an error
  DISCARD_UNCHANGED_HEARTBEAT a value equal to the last one kept is
                              discarded until the heartbeat has passed
and the error handlers: none (the item becomes unsupported),
CUSTOM_VALUE (the value given), DISCARD_VALUE (nothing is stored),
SET_ERROR (unsupported). A step of any other type is refused (Unknown
step), so a changed template cannot pass unread. The value that
results must suit the item's value type (UNSIGNED, the default: a
non-negative integer; FLOAT: a number; CHAR, TEXT, LOG: any text).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

try:
    import yaml     # python3-yaml: the templates are YAML
except ImportError:
    yaml = None

TEMPLATES = "/usr/share/doc/zabbix-frontend-php/templates/app"
AGENT_TEMPLATE = os.path.join(TEMPLATES, "php-fpm_agent",
                              "template_app_php-fpm_agent.yaml")
HTTP_TEMPLATE = os.path.join(TEMPLATES, "php-fpm_http",
                             "template_app_php-fpm_http.yaml")
ZABBIX_AGENTD = shutil.which("zabbix_agentd") or "/usr/sbin/zabbix_agentd"
CURL = shutil.which("curl") or "/usr/bin/curl"
AGENT_TIMEOUT = 30          # seconds for one zabbix_agentd -t
HEARTBEAT_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

# zabbix_agentd -t prints "KEY<spaces>[t|VALUE]" or "[m|ZBX_NOTSUPPORTED]
# [reason]"; VALUE may span lines.
AGENT_LINE = re.compile(r"^\S.*?\s+\[(\w)\|(.*)\]\s*\Z", re.S)
MACRO = re.compile(r"\{\$[A-Z0-9_.]+\}")


class Unsupported(Exception):
    """The item gets no value: its master failed, or a step failed with
    no error handler that gives one."""


class Discard(Exception):
    """A step discarded the value: nothing is stored, and no error."""


# -- the template -------------------------------------------------------------

class Item:
    """One item of a template, its macros expanded."""

    def __init__(self, raw, expand):
        self.raw = raw
        self.name = raw.get("name", "")
        self.key = expand(raw["key"])
        self.type = raw.get("type", "ZABBIX_PASSIVE")
        self.value_type = raw.get("value_type", "UNSIGNED")
        master = raw.get("master_item")
        self.master = expand(master["key"]) if master else None
        self.steps = [(p["type"], [expand(str(x)) for x in
                                   p.get("parameters", [])],
                       p.get("error_handler", "ORIGINAL_ERROR"),
                       expand(str(p.get("error_handler_params", ""))))
                      for p in raw.get("preprocessing", [])]
        self.url = expand(raw.get("url", ""))
        self.retrieve_mode = raw.get("retrieve_mode", "BODY")
        self.status_codes = str(raw.get("status_codes", "200"))
        self.follow_redirects = raw.get("follow_redirects", "YES") == "YES"
        self.timeout = raw.get("timeout", "3s")


class Template:
    """A Zabbix export file's first template: items with the template's
    macros, overridden by macros (a dict {"{$NAME}": value}), expanded."""

    def __init__(self, path, macros):
        with open(path) as f:
            doc = yaml.safe_load(f)
        t = doc["zabbix_export"]["templates"][0]
        self.name = t["template"]
        self.macros = {m["macro"]: str(m.get("value", ""))
                       for m in t.get("macros", [])}
        self.macros.update(macros)
        self.items = [Item(i, self.expand) for i in t.get("items", [])]

    def expand(self, text):
        return MACRO.sub(lambda m: self.macros.get(m.group(0), m.group(0)),
                         text)

    def item(self, key):
        for i in self.items:
            if i.key == key:
                return i
        return None

    def dependents(self):
        """The dependent items, in the template's order."""
        return [i for i in self.items if i.type == "DEPENDENT"]


# -- fetching master items --------------------------------------------------------

def agent_get(key, conf):
    """The value zabbix_agentd -t gives for key, with the agent
    configuration conf; raises Unsupported with its reason."""
    try:
        r = subprocess.run([ZABBIX_AGENTD, "-c", conf, "-t", key],
                           capture_output=True, timeout=AGENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unsupported("zabbix_agentd -t timed out")
    out = r.stdout.decode("utf-8", "replace")
    m = AGENT_LINE.match(out)
    if r.returncode != 0 or not m or m.group(1) == "m":
        raise Unsupported("zabbix_agentd -t: %s %s" % (
            out.strip()[-300:], r.stderr.decode("utf-8", "replace")[-300:]))
    return m.group(2)


def agent_conf(d):
    """A private zabbix_agentd configuration in d (the test mode reads
    one; the package's own daemon and its config stay out of it)."""
    path = os.path.join(d, "zabbix_agentd.conf")
    with open(path, "w") as f:
        f.write("LogType=console\nAllowRoot=1\nTimeout=%d\n" %
                min(AGENT_TIMEOUT - 1, 30))
    return path


def seconds(text):
    """A Zabbix time suffix value ("3s", "3h", "10") in seconds."""
    text = text.strip()
    if text and text[-1] in HEARTBEAT_UNITS:
        return int(text[:-1]) * HEARTBEAT_UNITS[text[-1]]
    return int(text)


def http_get(item):
    """An HTTP agent item's value fetched with curl: the body, the
    headers or both (headers, blank line, body, as Zabbix joins them);
    raises Unsupported on a status not in the item's status codes."""
    with tempfile.TemporaryDirectory() as d:
        head, body = os.path.join(d, "head"), os.path.join(d, "body")
        argv = [CURL, "-s", "-D", head, "-o", body, "-w", "%{http_code}",
                "--max-time", str(seconds(item.timeout))]
        if item.follow_redirects:
            argv.append("-L")
        try:
            r = subprocess.run(argv + [item.url], capture_output=True,
                               timeout=seconds(item.timeout) + 5)
        except subprocess.TimeoutExpired:
            raise Unsupported("curl timed out")
        code = r.stdout.decode("ascii", "replace")
        if r.returncode != 0 or not status_allowed(code, item.status_codes):
            raise Unsupported("HTTP %s from %s (curl exit %d)" % (
                code, item.url, r.returncode))
        with open(head, "rb") as f:
            h = f.read().decode("utf-8", "replace")
        with open(body, "rb") as f:
            b = f.read().decode("utf-8", "replace")
    if item.retrieve_mode == "HEADERS":
        return h
    if item.retrieve_mode == "BOTH":
        return h + b
    return b


def status_allowed(code, codes):
    """True if HTTP status code (text) is in codes ("200,201-204")."""
    if not code.isdigit():
        return False
    n = int(code)
    for part in codes.split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit() and int(lo) <= n <= int(hi if hi else lo):
            return True
    return False


# -- preprocessing ----------------------------------------------------------------

def regex_output(m, template):
    """Zabbix's output template: \\N is group N (empty if it did not
    take part), anything else as it is."""
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c == "\\" and i + 1 < len(template) and \
                template[i + 1].isdigit():
            n = int(template[i + 1])
            if n <= (m.re.groups or 0):
                out.append(m.group(n) or "")
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def step_regex(value, params):
    m = re.search(params[0], value)
    if m is None:
        raise ValueError("cannot perform regular expression \"%s\" match"
                         % params[0])
    return regex_output(m, params[1] if len(params) > 1 else "")


JSONPATH_TOKEN = re.compile(r"""\.([A-Za-z0-9_]+)|\.?\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(\d+))\s*\]""")


def jsonpath_parts(path):
    """The member names and indexes of a Zabbix JSONPath; ValueError for
    what this subset does not read (filters, wildcards, functions)."""
    if not path.startswith("$"):
        raise ValueError("JSONPath must start with $: %r" % path)
    parts, i = [], 1
    while i < len(path):
        m = JSONPATH_TOKEN.match(path, i)
        if m is None:
            raise ValueError("JSONPath not read here: %r at %d" % (path, i))
        name = m.group(1)
        if name is None:
            q = m.group(2) if m.group(2) is not None else m.group(3)
            name = re.sub(r"\\(.)", r"\1", q) if q is not None else \
                int(m.group(4))
        parts.append(name)
        i = m.end()
    return parts


def step_jsonpath(value, params):
    try:
        # Numbers keep their text, as Zabbix returns a value's JSON text.
        doc = json.loads(value, parse_int=str, parse_float=str)
    except ValueError as e:
        raise ValueError("cannot parse as a valid JSON object: %s" % e)
    for p in jsonpath_parts(params[0]):
        if isinstance(p, int) and isinstance(doc, list) and p < len(doc):
            doc = doc[p]
        elif isinstance(p, str) and isinstance(doc, dict) and p in doc:
            doc = doc[p]
        else:
            raise ValueError("no data matches the specified path")
    if isinstance(doc, str):
        return doc
    if isinstance(doc, bool):
        return "true" if doc else "false"
    if doc is None:
        return "null"
    return json.dumps(doc, separators=(",", ":"))


def number(value):
    """A value as Zabbix's numeric conversion takes it, or ValueError."""
    v = value.strip()
    if re.fullmatch(r"[0-9]+", v):
        return int(v)
    f = float(v)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError("cannot convert value to numeric type")
    return f


class Preprocessor:
    """Runs items' steps; keeps what the change and heartbeat steps
    remember between values (per item and step)."""

    def __init__(self):
        self.history = {}

    def _delta(self, slot, value, now, per_second):
        try:
            v = number(value)
        except ValueError:
            raise ValueError("cannot convert value \"%s\" to numeric type"
                             % value[:40])
        prev = self.history.get(slot)
        self.history[slot] = (v, now)
        if prev is None or v < prev[0]:
            raise Discard()
        if not per_second:
            return str(v - prev[0])
        if now <= prev[1]:
            raise Discard()
        return repr(float(v - prev[0]) / (now - prev[1]))

    def _heartbeat(self, slot, value, now, period):
        prev = self.history.get(slot)
        if prev is not None and prev[0] == value and \
                now - prev[1] < seconds(period):
            raise Discard()
        self.history[slot] = (value, now)
        return value

    def step(self, item, n, step, value, now):
        """Step n (type, params, handler, handler params) of item on
        value at time now: the new value; raises Discard or
        Unsupported."""
        kind, params, handler, hparams = step
        slot = (item.key, n)
        try:
            if kind == "REGEX":
                return step_regex(value, params)
            if kind == "JSONPATH":
                return step_jsonpath(value, params)
            if kind == "CHANGE_PER_SECOND":
                return self._delta(slot, value, now, True)
            if kind == "SIMPLE_CHANGE":
                return self._delta(slot, value, now, False)
            if kind == "DISCARD_UNCHANGED_HEARTBEAT":
                return self._heartbeat(slot, value, now, params[0])
        except ValueError as e:
            if handler == "CUSTOM_VALUE":
                return hparams
            if handler == "DISCARD_VALUE":
                raise Discard()
            raise Unsupported("%s: %s" % (kind, e))
        raise Unsupported("Unknown step %s: not implemented here" % kind)

    def run(self, item, value, now):
        """All of item's steps on value; as step()."""
        for n, step in enumerate(item.steps):
            value = self.step(item, n, step, value, now)
        return value


def suits(value, value_type):
    """True if value can be stored in an item of value_type."""
    if value_type == "UNSIGNED":
        return re.fullmatch(r"\s*[0-9]+\s*", value) is not None
    if value_type == "FLOAT":
        try:
            number(value)
        except ValueError:
            return False
        return True
    return value_type in ("CHAR", "TEXT", "LOG")


# -- a poll -------------------------------------------------------------------------

class Poller:
    """A template's items against one server, polled as the Zabbix
    server would: fetch() runs every master item, then its dependents.
    seen holds each dependent item's last value, "" for none, and why."""

    def __init__(self, template, fetch_master):
        self.t = template
        self.fetch_master = fetch_master
        self.pre = Preprocessor()
        self.values = {}    # dependent key -> last value stored
        self.why = {}       # dependent key -> why it has none (last poll)

    def poll(self):
        now = time.time()
        masters = {}
        for item in self.t.items:
            if item.type in ("DEPENDENT", "CALCULATED") or \
                    item.key not in {d.master for d in self.t.dependents()}:
                continue
            try:
                masters[item.key] = self.pre.run(item, self.fetch_master(
                    item), now)
            except (Unsupported, Discard) as e:
                masters[item.key] = e
        for item in self.t.dependents():
            v = masters.get(item.master)
            if v is None or isinstance(v, Exception):
                self.why[item.key] = "master %s: %r" % (item.master, v)
                continue
            try:
                out = self.pre.run(item, v, now)
            except Discard:
                self.why.setdefault(item.key, "discarded")
                continue
            except Unsupported as e:
                self.why[item.key] = str(e)
                continue
            if not suits(out, item.value_type):
                self.why[item.key] = "%r does not suit %s" % (
                    out, item.value_type)
                continue
            self.values[item.key] = out
            self.why.pop(item.key, None)
