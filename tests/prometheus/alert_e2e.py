#!/usr/bin/env python3
"""A real Prometheus scrapes a real gateway, and AegisAuditLogUnwritable of
deploy/prometheus/alerts.yml fires when the audit log's disk fills, then
resolves once it has room again. Run by tests/prometheus/run.sh.

1. The gateway binary (`$AEGIS_BIN`, default target/image/aegis-gitea-mcp,
   the image's binary CI copies out) serves on a free loopback port with a
   static bearer, its metrics on another (`METRICS_BIND`), and no Gitea
   behind it (`GITEA_URL` is a closed port: a tool call still writes its
   audit entries, then fails; /health says Gitea is unavailable, which this
   alert does not look at).
2. Debian's Prometheus (2.42) scrapes it every second and evaluates the
   rules file every second, unchanged (its `for: 30s` included).
3. The full disk: a file-size limit (RLIMIT_FSIZE, `prlimit` on the running
   process) just above the audit log's size, as tests/security/replay.py
   does; SIGXFSZ is ignored, so writes fail with EFBIG as on a full disk.
   Bearer tool calls until one is refused with `audit_unavailable`.
4. Prometheus's own API (`/api/v1/alerts`): the alert pending, then firing
   with the gateway's job and instance, not before its 30 s.
5. The limit lifted; /health asked (the readiness probe a kubelet sends:
   it reopens the log); the alert resolves; `aegis_audit_writable` is 1
   again; `audit verify` passes.
6. Every query of deploy/grafana/aegis-gitea-mcp.json (its variables
   substituted) runs in that Prometheus: it parses, and those whose metrics
   the gateway feeds return data. Every metric name the rules and the
   dashboard use is exported by the gateway or listed in docs/metrics.md
   (a family with no series yet is not shown by /metrics).

Prints `PASS`/`FAIL` lines; exits 1 on the first failure, after stopping
what it started. About 45 s.
"""

import json
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.dont_write_bytecode = True

from gateway import audit_verify, mcp_tool_call  # noqa: E402

RULES = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "aegis-gitea-mcp.json")
ALERT = "AegisAuditLogUnwritable"
ALERT_FOR = 30  # the rule's `for:`, read back from the rules file below
JOB = "aegis-gitea-mcp"
STARTED = time.monotonic()
passed = 0


def say(message):
    print("[alert-e2e %6.2f s] %s" % (time.monotonic() - STARTED, message), flush=True)


def ok(message):
    global passed
    passed += 1
    print("PASS  " + message, flush=True)


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)
    ok(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(urllib.request.Request(url), timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, "{}"


def wait_for(what, predicate, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failed("%s: not within %d s" % (what, timeout))
        time.sleep(interval)


def gateway_binary():
    for candidate in (
        os.environ.get("AEGIS_BIN"),
        os.path.join(ROOT, "target", "image", "aegis-gitea-mcp"),
        os.path.join(ROOT, "target", "release", "aegis-gitea-mcp"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise Failed("no gateway binary: set AEGIS_BIN (CI: target/image/aegis-gitea-mcp)")


def rule_for_seconds():
    text = open(RULES).read()
    match = re.search(r"- alert: %s\n(?:.*\n)*?\s+for: (\d+)s\n" % ALERT, text)
    if not match:
        raise Failed("%s in %s has no `for:` in seconds" % (ALERT, RULES))
    return int(match.group(1))


def metric_names(expr):
    """The aegis_* and up metric names an expression reads."""
    names = set(re.findall(r"\b(aegis_[a-z_]+)\b", expr))
    # A histogram's series: the family is the name without _bucket/_sum/_count.
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


def exported_families(metrics_text):
    """The families /metrics shows (a family with no series yet is not shown)."""
    families = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            families.add(name + "_total" if kind == "counter" and not name.endswith("_total") else name)
    return families


def documented_metrics():
    """The metric names of docs/metrics.md's table."""
    text = open(os.path.join(ROOT, "docs", "metrics.md")).read()
    return set(re.findall(r"^\| `(aegis_[a-z_]+)`", text, re.M))


def main():
    global ALERT_FOR
    processes = []
    work = tempfile.mkdtemp(prefix="aegis-alert-e2e.")
    data_dir = os.path.join(work, "data")
    os.mkdir(data_dir, 0o700)
    failed = None
    try:
        ALERT_FOR = rule_for_seconds()
        binary = gateway_binary()
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        say("gateway: %s (%s)" % (binary, version))
        port, metrics_port, prom_port, closed = free_port(), free_port(), free_port(), free_port()
        bearer = secrets.token_hex(24)
        audit_key = secrets.token_hex(24)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "RUST_LOG": "info",
            "GITEA_URL": "http://127.0.0.1:%d" % closed,
            "GITEA_TOKEN": "stand-in-token-" + secrets.token_hex(8),
            "MCP_BEARER_TOKEN": bearer,
            "MCP_PORT": str(port),
            "DATA_DIR": data_dir,
            "METRICS_BIND": "127.0.0.1:%d" % metrics_port,
            "AUDIT_HMAC_KEY": audit_key,
            "REPLICA_ID": "alert-e2e",
        }
        gateway_url = "http://127.0.0.1:%d" % port
        log = open(os.path.join(work, "gateway.log"), "w")

        def ignore_sigxfsz():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        gateway = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data_dir, preexec_fn=ignore_sigxfsz)
        log.close()
        processes.append(gateway)
        wait_for("the gateway's /health/live", lambda: get(gateway_url + "/health/live", 1)[0] == 200 if gateway.poll() is None else _dead(gateway), 20)
        status, metrics_text = get("http://127.0.0.1:%d/metrics" % metrics_port)
        check(status == 200 and "aegis_audit_writable 1" in metrics_text, "the gateway serves /metrics on METRICS_BIND, aegis_audit_writable 1")

        # ---- Prometheus, the rules file as it is ---------------------------------
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                % (json.dumps(RULES), JOB, metrics_port)
            )
        done = subprocess.run(["promtool", "check", "config", config], capture_output=True, text=True, timeout=30)
        check(done.returncode == 0, "promtool check config (scrape every 1 s, rules every 1 s, %s)" % os.path.relpath(RULES, ROOT))
        prom_log = open(os.path.join(work, "prometheus.log"), "w")
        prometheus = subprocess.Popen(
            [
                "prometheus",
                "--config.file=" + config,
                "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
                "--web.listen-address=127.0.0.1:%d" % prom_port,
                "--log.level=warn",
            ],
            stdout=prom_log,
            stderr=subprocess.STDOUT,
        )
        prom_log.close()
        processes.append(prometheus)
        prom = "http://127.0.0.1:%d" % prom_port

        def api(path, **params):
            status, body = get(prom + path + ("?" + urllib.parse.urlencode(params) if params else ""))
            if status != 200:
                raise Failed("Prometheus %s: %s %s" % (path, status, body[:300]))
            return json.loads(body)["data"]

        def query(expr):
            return api("/api/v1/query", query=expr)["result"]

        def alert_state():
            for alert in api("/api/v1/alerts")["alerts"]:
                if alert["labels"].get("alertname") == ALERT:
                    return alert
            return None

        wait_for("Prometheus ready", lambda: prometheus.poll() is None and get(prom + "/-/ready", 1)[0] == 200 or _dead(prometheus), 30)
        wait_for("the first scrape", lambda: query('up{job="%s"} == 1' % JOB), 20)
        groups = api("/api/v1/rules")["groups"]
        names = sorted(rule["name"] for group in groups for rule in group["rules"])
        check(ALERT in names, "Prometheus loaded %d rules from alerts.yml, %s among them" % (len(names), ALERT))
        check(alert_state() is None, "%s is inactive while the audit log takes entries" % ALERT)
        status, envelope = mcp_tool_call(gateway_url, bearer, "gitea_user_get_current")
        check(status == 200 and "error" in envelope and envelope["error"].get("kind") != "audit_unavailable",
              "a bearer tool call is recorded, then fails on the absent Gitea (%s)" % envelope.get("error", {}).get("kind"))

        # ---- the full disk ------------------------------------------------------------
        files = [os.path.join(data_dir, "audit.log"), os.path.join(work, "gateway.log")]
        full = max(os.path.getsize(f) for f in files) + 4096
        _, hard = resource.prlimit(gateway.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(gateway.pid, resource.RLIMIT_FSIZE, (full, hard))
        say("RLIMIT_FSIZE of the gateway (pid %d) set to %d bytes: the audit log's disk is full" % (gateway.pid, full))
        refused_at = None
        for i in range(100):
            status, envelope = mcp_tool_call(gateway_url, bearer, "gitea_user_get_current")
            if status == 200 and envelope.get("error", {}).get("kind") == "audit_unavailable":
                refused_at = time.monotonic()
                break
        check(refused_at is not None, "tool calls are refused with audit_unavailable once the log cannot be written (after %d calls)" % (i + 1))
        status, body = get(gateway_url + "/health")
        audit_check = json.loads(body).get("checks", {}).get("audit")
        check(status == 503 and audit_check == "unwritable", "/health (the readiness probe): 503, checks.audit %s" % audit_check)

        pending = wait_for("%s pending" % ALERT, lambda: (alert_state() or {}).get("state") in ("pending", "firing") and alert_state(), 10)
        check(pending["state"] == "pending", "%s pending %.1f s after the first refusal" % (ALERT, time.monotonic() - refused_at))
        firing = wait_for("%s firing" % ALERT, lambda: (alert_state() or {}).get("state") == "firing" and alert_state(), ALERT_FOR + 20)
        took = time.monotonic() - refused_at
        labels = firing["labels"]
        check(took >= ALERT_FOR and labels.get("job") == JOB and labels.get("instance") == "127.0.0.1:%d" % metrics_port
              and labels.get("severity") == "critical",
              "%s firing %.1f s after the first refusal (for: %ds), job %s, instance %s, severity %s"
              % (ALERT, took, ALERT_FOR, labels.get("job"), labels.get("instance"), labels.get("severity")))
        say("summary: %s" % firing["annotations"].get("summary"))

        # ---- room again -----------------------------------------------------------------
        resource.prlimit(gateway.pid, resource.RLIMIT_FSIZE, (hard, hard))
        lifted = time.monotonic()
        say("the limit lifted: the disk has room")
        # /health reopens the log (every probe tries); a kubelet's readiness probe does this.
        reopened = wait_for("/health: checks.audit ok", lambda: json.loads(get(gateway_url + "/health")[1]).get("checks", {}).get("audit") == "ok", 10)
        check(reopened, "/health reopened the audit log: checks.audit ok")
        wait_for("%s resolved" % ALERT, lambda: alert_state() is None, 15)
        check(True, "%s resolved %.1f s after the disk had room" % (ALERT, time.monotonic() - lifted))
        writable = query("aegis_audit_writable")
        check(writable and writable[0]["value"][1] == "1", "Prometheus reads aegis_audit_writable 1 again")
        status, envelope = mcp_tool_call(gateway_url, bearer, "gitea_user_get_current")
        check(status == 200 and envelope.get("error", {}).get("kind") != "audit_unavailable",
              "tool calls are recorded again (%s: the absent Gitea)" % envelope.get("error", {}).get("kind"))

        # ---- the dashboard's queries, and the metric names -------------------------------
        status, metrics_text = get("http://127.0.0.1:%d/metrics" % metrics_port)
        exported = exported_families(metrics_text)
        known = documented_metrics() | exported
        dashboard = json.load(open(DASHBOARD))
        exprs = []
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                exprs.append((panel["title"], target["expr"]))
        check(len(exprs) >= 15, "the dashboard has %d panels with %d queries" % (len(dashboard["panels"]), len(exprs)))
        rule_names = set()
        for group in groups:
            for rule in group["rules"]:
                rule_names |= metric_names(rule["query"])
        used = rule_names | {n for _, e in exprs for n in metric_names(e)}
        unknown = sorted(used - known)
        check(not unknown, "every metric the rules and the dashboard read is exported or in docs/metrics.md (%d names; unknown: %s)" % (len(used), unknown))
        with_data = 0
        for title, expr in exprs:
            concrete = expr.replace("$__rate_interval", "1m").replace("$job", JOB).replace("$instance", ".+")
            result = query(concrete)  # a query that does not parse fails here (400)
            # Every family the query reads has series on this gateway now: it must return data.
            fed = all(re.search(r"^%s(_bucket)?[{ ]" % re.escape(n), metrics_text, re.M) for n in metric_names(expr))
            if fed and "/register" not in expr:
                check(result, "dashboard %r returns data" % title)
                with_data += 1
        ok("all %d dashboard queries parse and run in Prometheus; the %d whose metrics this gateway feeds return data" % (len(exprs), with_data))

        # ---- the log's chain ------------------------------------------------------------
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait(timeout=15)
        os.environ["AEGIS_BIN"] = binary
        check(audit_verify(data_dir, audit_key).startswith("ok:"), "audit verify: the chain across the full disk verifies")
    except (Failed, AssertionError, OSError, subprocess.SubprocessError, json.JSONDecodeError) as error:
        failed = error
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()
        if failed is not None:
            print("FAIL  %s" % failed, flush=True)
            for name in ("gateway.log", "prometheus.log"):
                path = os.path.join(work, name)
                if os.path.exists(path):
                    print("--- %s (tail)" % name)
                    print(open(path, errors="replace").read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print("alert-e2e: %d passed, %d failed (%.1f s)" % (passed, 1 if failed else 0, time.monotonic() - STARTED))
    return 1 if failed else 0


def _dead(process):
    if process.poll() is not None:
        raise Failed("%s exited with %s" % (process.args[0], process.returncode))
    return False


if __name__ == "__main__":
    sys.exit(main())
