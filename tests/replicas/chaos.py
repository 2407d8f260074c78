#!/usr/bin/env python3
"""Chaos at team scale: many MCP clients against three gateway replicas on
one PostgreSQL, behind real nginx and real HAProxy, while faults come one
at a time: a replica SIGKILLed and restarted, PostgreSQL fast-restarted, a
replica drained (SIGTERM) and restarted, and Gitea answering 502 for 10 s.

The parts, all real and on loopback: three `aegis-gitea-mcp serve`
processes (the release binary) sharing a throwaway PostgreSQL cluster of
this run (tests/postgres.sh), each with its own DATA_DIR; HAProxy
(haproxy.cfg.in) and nginx (nginx.conf.in) in front of the same three;
the real Gitea of tests/e2e/gitea.sh behind them, reached through a fault
proxy (gitea-fault.conf.in: nginx that answers 502 while a file exists).

1. The replicas start with GITEA_URL = Gitea itself (the ID token of a
   sign-in names Gitea's own URL as its issuer) and PEOPLE people sign in
   GRANTS times each through the real OAuth flow (alice and Gitea users
   chaos-1, chaos-2, ... that this test creates): PEOPLE x GRANTS grants.
2. The replicas restart with GITEA_URL = the fault proxy.
3. CLIENTS clients, half on each balancer, call `tools/call
   gitea_user_get_current` (raw JSON-RPC over HTTP/1.1, one kept-alive
   connection each, a call every INTERVAL seconds) for SECONDS seconds;
   even-numbered clients use the static bearer (the admin), odd ones one
   of the OAuth grants. Meanwhile the faults run in turn, QUIET seconds
   apart, as many rounds as fit.
4. The replicas stop; the checks, each printed PASS or FAIL:
   - errors only in a fault's window, and recovery within 2 s of its end
     (the failed calls of each window ended by then);
   - 0 errors outside the fault windows;
   - 0 foreign identities (the envelope's `identity` is the credential's
     own user and mode, and so is the `login` Gitea answered);
   - the Gitea fault reaches the clients as tool results with status 502
     (no transport error, no 5xx from a balancer or a replica);
   - every replica's audit chain verifies (`audit verify`), the killed
     replica's too;
   - no answered call without its audit entry: per replica, its
     `tool_call_finished` entries >= the answers it gave (the balancers'
     `X-Served-By`);
   - every fault ran and its replica came back; every credential worked.

The fault windows (start, end); a call belongs to a window when it
overlaps [start, end + 2 s]:
- kill: SIGKILL of a replica .. the restarted replica answers /health
  (DOWN seconds later). In-flight calls on it may fail: a balancer does
  not resend a POST it sent (docs/replicas.md, "A replica killed during a
  call").
- postgres: `tests/postgres.sh restart` (pg_ctl restart -m fast) .. it
  returns with the server accepting connections.
- drain: SIGTERM of a replica .. the restarted replica answers /health.
- gitea: the proxy starts answering 502 .. it stops (GITEA_SECONDS). The
  calls get the gateway's tool result with status 502: correct, and
  counted as `gitea_502`, apart from transport errors and 5xx.

Usage (root of the repository; Gitea started by tests/e2e/gitea.sh, whose
GATEWAY_URL port is where the public balancer listens):

    AEGIS_BIN=target/release/aegis-gitea-mcp python3 tests/replicas/chaos.py
    AEGIS_BIN=... python3 tests/replicas/chaos.py --clients 1000 --seconds 600 --interval 10

Needs nginx, haproxy, PostgreSQL's server binaries (tests/postgres.sh) and
`pip install mcp==2.3.0` (httpx2, for the sign-ins). Exits 1 on any FAIL;
every process it started is stopped (the cluster too), and its logs stay in
the /tmp/aegis-chaos.* directory it prints. See tests/replicas/README.md.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from loadkit import (  # noqa: E402
    HAProxy,
    HttpConnection,
    Nginx,
    NoAnswer,
    Processes,
    Replica,
    check,
    cpu_seconds,
    free_port,
    port_open,
    gateway_binary,
    preflight as tools_preflight,
    request_bytes,
    stepper,
    tree_cpu_seconds,
)
from gateway import audit_verify, load_fixture, tool_call_request  # noqa: E402

GRACE = 2.0  # recovery allowed after a fault's end
REPLICAS = ("r1", "r2", "r3")
FAULTS = ("kill", "postgres", "drain", "gitea")
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"
step = stepper("chaos")



def arguments():
    parser = argparse.ArgumentParser(description="Chaos at team scale (tests/replicas/README.md).")
    parser.add_argument("--clients", type=int, default=120, help="MCP clients, split over the balancers (default 120)")
    parser.add_argument("--seconds", type=float, default=75, help="how long the clients call (default 75)")
    parser.add_argument("--interval", type=float, default=1.5,
                        help="seconds from one call's start to the next per client, jittered ±20%%; 0: back to back (default 1.5)")
    parser.add_argument("--balancers", default="nginx,haproxy", help="nginx, haproxy or both (default both, half the clients each)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="the faults of a round, in order (default %s)" % ",".join(FAULTS))
    parser.add_argument("--quiet", type=float, default=8, help="seconds without a fault before, between and after the faults (default 8)")
    parser.add_argument("--down", type=float, default=3, help="seconds a killed or drained replica stays down (default 3)")
    parser.add_argument("--gitea-seconds", type=float, default=10, help="how long Gitea answers 502 (default 10)")
    parser.add_argument("--people", type=int, default=4, help="people signed in (alice, then Gitea users chaos-1...) (default 4)")
    parser.add_argument("--grants", type=int, default=2, help="grants per person, each a sign-in of its own (default 2)")
    parser.add_argument("--nginx-template", default=os.path.join(HERE, "nginx.conf.in"), help="default: the shipped nginx.conf.in")
    parser.add_argument("--haproxy-template", default=os.path.join(HERE, "haproxy.cfg.in"), help="default: the shipped haproxy.cfg.in")
    parser.add_argument("--call-timeout", type=float, default=30, help="a call without an answer by then is an error (default 30)")
    args = parser.parse_args()
    args.balancers = [b.strip() for b in args.balancers.split(",") if b.strip()]
    args.faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    check(args.balancers and set(args.balancers) <= {"nginx", "haproxy"}, "--balancers: nginx and/or haproxy")
    check(set(args.faults) <= set(FAULTS), "--faults: some of %s" % ", ".join(FAULTS))
    check(args.clients >= 2 * len(args.balancers), "--clients: at least 2 per balancer")
    check(args.quiet >= 2 * GRACE, "--quiet: at least %.0f s" % (2 * GRACE))
    check(1 <= args.people <= 20 and args.grants >= 1, "--people 1..20, --grants >= 1")
    return args


# ---------------------------------------------------------------- Gitea and sign-ins

def gitea_api(fixture, method, path, body=None):
    request = urllib.request.Request(
        fixture["api_url"].rstrip("/") + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "token " + fixture["admin"]["token"], "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, err.read()[:300]


def people(fixture, count):
    """alice, then Gitea users chaos-1 ... chaos-(count-1), created (or
    their passwords reset) with the admin token."""
    out = [fixture["user"]]
    for n in range(1, count):
        login, password = "chaos-%d" % n, "Chaos-" + secrets.token_urlsafe(12)
        status, body = gitea_api(fixture, "POST", "/admin/users", {
            "username": login, "email": login + "@example.com", "password": password,
            "must_change_password": False, "send_notify": False, "full_name": "Chaos %d" % n})
        if status == 422:  # there from an earlier run: a new password
            status, body = gitea_api(fixture, "PATCH", "/admin/users/" + login, {
                "login_name": login, "source_id": 0, "password": password, "must_change_password": False})
        check(status in (200, 201), "Gitea user %s: %s %s" % (login, status, body))
        out.append({"login": login, "password": password})
    return out


def sign_in_grants(gateway, persons, grants):
    """Each person signs in `grants` times (a new client each): the credentials."""
    from sdk_common import public_client, signed_in_tokens  # httpx2, from `pip install mcp`

    credentials = []
    for round_ in range(grants):
        for person in persons:
            client = public_client(gateway, CLIENT_CALLBACK, client_name="chaos %s %d" % (person["login"], round_))
            tokens = signed_in_tokens(gateway, client, CLIENT_CALLBACK, person)
            credentials.append({"label": "%s#%d" % (person["login"], round_ + 1), "token": tokens["access_token"],
                                "login": person["login"], "mode": "oauth"})
    return credentials


# ---------------------------------------------------------------- the parts

class Cluster:
    """This run's PostgreSQL (tests/postgres.sh), in RUN_DIR/pg."""

    def __init__(self, run_dir):
        self.dir = os.path.join(run_dir, "pg")
        self.run_dir = run_dir
        self.env = {**os.environ, "AEGIS_PG_DIR": self.dir, "AEGIS_PG_PORT": str(free_port())}
        self.script = os.path.join(ROOT, "tests", "postgres.sh")
        self.url = None

    def _run(self, *args, timeout=120):
        done = subprocess.run(["bash", self.script, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        check(done.returncode == 0, "postgres.sh %s: %s" % (" ".join(args), done.stderr[-2000:]))
        return done.stdout.strip()

    def start(self):
        server = self._run("start")
        psql = subprocess.run(["psql", server, "-XAtq", "-c", "CREATE DATABASE aegis_chaos"], capture_output=True, text=True, timeout=60)
        check(psql.returncode == 0, "CREATE DATABASE: %s" % psql.stderr)
        self.url = server.rsplit("/", 1)[0] + "/aegis_chaos"
        return self.url

    def restart(self):
        self._run("restart")

    def pids(self):
        """The postmaster and its children (backends, workers)."""
        try:
            with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
                master = int(f.readline())
        except (OSError, ValueError):
            return []
        children = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/stat" % pid) as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                            children.append(int(pid))
                except (OSError, ValueError, IndexError):
                    pass
        return [master] + children

    def stop(self):
        # Its log outlives the cluster's directory, which `stop` deletes.
        try:
            shutil.copy(os.path.join(self.dir, "postgres.log"), os.path.join(self.run_dir, "postgres.log"))
        except OSError:
            pass
        subprocess.run(["bash", self.script, "stop"], env=self.env, capture_output=True, timeout=120)


def wait_for_haproxy(port, host, names, timeout=30):
    """Until HAProxy spreads /health over exactly `names`."""
    deadline = time.monotonic() + timeout
    seen = set()
    while time.monotonic() < deadline:
        seen = set()
        for _ in range(3 * len(names)):
            try:
                request = urllib.request.Request("http://127.0.0.1:%d/health" % port, headers={"Host": host})
                with urllib.request.urlopen(request, timeout=2) as response:
                    seen.add(response.headers.get("x-served-by"))
            except (urllib.error.URLError, OSError):
                pass
        if seen == set(names):
            return
        time.sleep(0.2)
    raise AssertionError("HAProxy did not come to serve %s (seen: %s)" % (sorted(names), sorted(map(str, seen))))


# ---------------------------------------------------------------- the load

Call = collections.namedtuple("Call", "t0 t1 balancer cred kind served status")


def classify(answer, credential):
    """(kind, status in the envelope or HTTP status) of one answer."""
    if answer.status != 200:
        body = answer.body.lstrip()[:1]
        if answer.status >= 500:
            # The gateway answers JSON; a balancer its own HTML page.
            return ("gateway_%d" if body in (b"{", b"[") else "balancer_%d") % answer.status, answer.status
        return "http_%d" % answer.status, answer.status
    try:
        text = answer.body.decode()
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
        message = json.loads(text)
        if "error" in message:
            return "jsonrpc_error", 200
        envelope = json.loads(message["result"]["content"][0]["text"])
    except (ValueError, KeyError, IndexError, TypeError):
        return "bad_answer", 200
    identity = envelope.get("identity")
    if identity is not None and (identity.get("login") != credential["login"] or identity.get("mode") != credential["mode"]):
        return "foreign", 200
    error = envelope.get("error")
    if error:
        status = error.get("status")
        return ("gitea_502" if status == 502 else "tool_error_%s" % (error.get("kind") or status)), status or 200
    data = envelope.get("data") or {}
    if identity is None or data.get("login") != credential["login"]:
        return "foreign", 200
    return "ok", 200


class Load:
    """The clients: each one kept-alive connection, one credential, one balancer."""

    def __init__(self, args, balancers, credentials, host, served_names):
        self.args = args
        self.balancers = balancers  # [(kind, port)]
        self.credentials = credentials
        self.served_names = served_names  # X-Served-By value -> replica name
        body, headers = tool_call_request("gitea_user_get_current")
        self.requests = [[request_bytes("POST", "/mcp", host, {"Authorization": "Bearer " + c["token"], **headers}, body)
                          for c in credentials] for _ in balancers]
        self.calls = []
        self.connections = 0
        self.t0 = None

    def served(self, answer):
        value = answer.headers.get("x-served-by")
        if not value:
            return None
        last = value.split(",")[-1].strip()  # nginx: every upstream tried, the last answered
        return self.served_names.get(last, last)

    def assignment(self):
        """(balancer, credential) of each client: the balancers in turn;
        on each, the bearer (credential 0) and the OAuth grants
        alternate, the grants taken in turn across all clients."""
        out, grants, next_grant = [], len(self.credentials) - 1, 0
        for index in range(self.args.clients):
            balancer = index % len(self.balancers)
            if (index // len(self.balancers)) % 2 == 0 or grants == 0:
                out.append((balancer, 0))
            else:
                out.append((balancer, 1 + next_grant % grants))
                next_grant += 1
        return out

    async def client(self, balancer, cred, deadline):
        credential, raw = self.credentials[cred], self.requests[balancer][cred]
        connection = HttpConnection("127.0.0.1", self.balancers[balancer][1])
        interval = self.args.interval
        await asyncio.sleep(random.uniform(0, interval or 0.5))
        next_start = time.monotonic()
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                answer = await connection.request(raw, timeout=self.args.call_timeout)
                kind, status = classify(answer, credential)
                served = self.served(answer)
            except NoAnswer as err:
                kind, status, served = ("timeout" if str(err) == "timeout" else "no_answer"), None, None
            self.calls.append(Call(started - self.t0, time.monotonic() - self.t0, balancer, cred, kind, served, status))
            if interval:
                next_start = max(next_start + interval * random.uniform(0.8, 1.2), time.monotonic())
                await asyncio.sleep(min(next_start, deadline) - time.monotonic())
        self.connections += connection.opened
        connection.close()

    async def run(self, seconds, faults):
        self.t0 = time.monotonic()
        faults.t0 = self.t0
        deadline = self.t0 + seconds
        fault_thread = threading.Thread(target=faults.run, args=(seconds,), daemon=True)
        fault_thread.start()
        await asyncio.gather(*(self.client(b, c, deadline) for b, c in self.assignment()))
        while fault_thread.is_alive():
            await asyncio.sleep(0.2)


# ---------------------------------------------------------------- the faults

class Faults:
    """Runs the faults in turn, QUIET seconds apart; records each window."""

    def __init__(self, args, replicas, cluster, fault_file):
        self.args = args
        self.replicas = replicas
        self.cluster = cluster
        self.fault_file = fault_file
        self.windows = []  # dicts: name, fault, start, end, note
        self.failures = []
        self.t0 = None

    def now(self):
        return time.monotonic() - self.t0

    def expected(self, fault):
        return {"kill": self.args.down + 1.5, "postgres": 2.0, "drain": self.args.down + 2.0, "gitea": self.args.gitea_seconds}[fault]

    def plan(self, seconds):
        """The faults that fit in `seconds` with QUIET around each."""
        t, plan, n = self.args.quiet, [], 0
        while True:
            fault = self.args.faults[n % len(self.args.faults)]
            if t + self.expected(fault) + self.args.quiet > seconds:
                return plan
            plan.append((t, fault, n // len(self.args.faults)))
            t += self.expected(fault) + self.args.quiet
            n += 1

    def run(self, seconds):
        at = self.args.quiet
        plan = self.plan(seconds)
        for n, (_, fault, round_) in enumerate(plan):
            if at + self.expected(fault) + self.args.quiet > seconds:
                # Earlier faults ran long (a drain waiting on slow calls):
                # no fault without quiet time and calls after it.
                step("no time left for the last %d planned faults" % (len(plan) - n))
                break
            time.sleep(max(0.0, at - self.now()))
            try:
                window = getattr(self, fault)(round_)
            except Exception as err:  # noqa: BLE001 (recorded, the run goes on)
                self.failures.append("%s (round %d): %s" % (fault, round_ + 1, err))
                step("fault %s failed: %s" % (fault, err))
                window = None
            if window:
                self.windows.append(window)
                step("fault %s: %.2f .. %.2f s%s" % (window["name"], window["start"], window["end"],
                                                      (" (%s)" % window["note"]) if window.get("note") else ""))
                at = window["end"] + self.args.quiet
            else:
                at = self.now() + self.args.quiet

    def kill(self, round_):
        replica = self.replicas[(1 + round_) % len(self.replicas)]
        start = self.now()
        replica.kill()
        time.sleep(self.args.down)
        restart = self.now()
        replica.start()
        end = self.now()
        return {"name": "kill -9 %s" % replica.name, "fault": "kill", "start": start, "end": end,
                "note": "restarted at %.2f s, /health at %.2f s" % (restart, end)}

    def drain(self, round_):
        replica = self.replicas[(2 + round_) % len(self.replicas)]
        start = self.now()
        code = replica.drain()
        exited = self.now()
        time.sleep(self.args.down)
        replica.start()
        end = self.now()
        return {"name": "drain %s" % replica.name, "fault": "drain", "start": start, "end": end,
                "note": "exit %s %.2f s after SIGTERM" % (code, exited - start)}

    def postgres(self, round_):
        start = self.now()
        self.cluster.restart()
        end = self.now()
        return {"name": "postgres restart", "fault": "postgres", "start": start, "end": end, "note": "pg_ctl restart -m fast"}

    def gitea(self, round_):
        start = self.now()
        with open(self.fault_file, "w"):
            pass
        time.sleep(self.args.gitea_seconds)
        os.unlink(self.fault_file)
        end = self.now()
        return {"name": "gitea 502", "fault": "gitea", "start": start, "end": end, "note": "%.0f s of 502" % self.args.gitea_seconds}


# ---------------------------------------------------------------- the report

def window_of(call, windows):
    for index, w in enumerate(windows):
        if call.t0 <= w["end"] + GRACE and call.t1 >= w["start"]:
            return index
    return None


def percentile(values, q):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def kinds_text(counter):
    return ", ".join("%s %d" % kv for kv in sorted(counter.items())) or "none"


def report(load, windows, balancer_names):
    """The table of windows (per balancer), and the calls grouped by window."""
    by_window = collections.defaultdict(list)
    for call in load.calls:
        by_window[window_of(call, windows)].append(call)
    rows = [("quiet (outside the faults)", None)] + [(w["name"], i) for i, w in enumerate(windows)]
    lines = ["| window | balancer | start → end (s) | calls | ok | errors by kind | errors per second (from the start) | p50 / p99 (ms) |",
             "| --- | --- | --- | ---: | ---: | --- | --- | --- |"]
    for name, index in rows:
        calls = by_window.get(index, [])
        span = "—" if index is None else "%.1f → %.1f" % (windows[index]["start"], windows[index]["end"])
        for b, balancer in enumerate(balancer_names):
            mine = [c for c in calls if c.balancer == b]
            errors = [c for c in mine if c.kind != "ok"]
            per_second = ""
            if index is not None and errors:
                start = windows[index]["start"]
                seconds = collections.Counter(int((c.t1 - start) // 1) for c in errors)
                per_second = " ".join("%+d:%d" % (s, seconds[s]) for s in sorted(seconds))
            latencies = [1000 * (c.t1 - c.t0) for c in mine]
            lines.append("| %s | %s | %s | %d | %d | %s | %s | %.0f / %.0f |" % (
                name, balancer, span, len(mine), len(mine) - len(errors), kinds_text(collections.Counter(c.kind for c in errors)),
                per_second or "—", percentile(latencies, 0.5), percentile(latencies, 0.99)))
    return "\n".join(lines), by_window


def preflight(args):
    """The fixture and what must be there before anything starts: (fixture, gateway URL, its port)."""
    try:
        fixture = load_fixture()
    except OSError as err:
        raise AssertionError("no Gitea fixture (tests/e2e/gitea.sh start; AEGIS_E2E_DIR): %s" % err)
    gateway = fixture["gateway_url"].rstrip("/")
    public_port = urllib.parse.urlparse(gateway).port
    open_files = tools_preflight(["psql"] + args.balancers + ["nginx"])
    check(not port_open(public_port), "something already listens on %s (the public balancer's port): stop it" % gateway)
    try:
        with urllib.request.urlopen(fixture["api_url"].rstrip("/") + "/version", timeout=5) as response:
            check(response.status == 200, "Gitea: %s" % response.status)
    except (urllib.error.URLError, OSError) as err:
        raise AssertionError("Gitea does not answer at %s (tests/e2e/gitea.sh start): %s" % (fixture["gitea_url"], err))
    check(open_files > args.clients + 512, "RLIMIT_NOFILE %d is too low for %d clients" % (open_files, args.clients))
    planned = Faults(args, None, None, None).plan(args.seconds)
    check(set(f for _, f, _ in planned) == set(args.faults),
          "--seconds %.0f is too short for one of each fault with --quiet %.0f (planned: %s)" % (
              args.seconds, args.quiet, ", ".join("%s at %.0f s" % (f, t) for t, f, _ in planned) or "none"))
    return fixture, gateway, public_port


def summary(calls, windows, balancer_names):
    """The windows of each fault together, per balancer: a table."""
    by_window = collections.defaultdict(list)
    for call in calls:
        by_window[window_of(call, windows)].append(call)
    lines = ["| fault | balancer | windows | calls | ok | errors by kind | errors per window (max) | the last error, from the fault's end |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]
    rows = [("quiet", [None])] + [(f, [i for i, w in enumerate(windows) if w["fault"] == f]) for f in FAULTS
                                  if any(w["fault"] == f for w in windows)]
    for fault, indexes in rows:
        for b, balancer in enumerate(balancer_names):
            mine = [c for i in indexes for c in by_window.get(i, []) if c.balancer == b]
            errors = [c for c in mine if c.kind != "ok"]
            per_window = [sum(1 for c in by_window.get(i, []) if c.balancer == b and c.kind != "ok") for i in indexes]
            late = [c.t1 - windows[i]["end"] for i in indexes if i is not None for c in by_window.get(i, [])
                    if c.balancer == b and c.kind != "ok"]
            lines.append("| %s | %s | %s | %d | %d | %s | %s | %s |" % (
                fault, balancer, "—" if fault == "quiet" else len(indexes), len(mine), len(mine) - len(errors),
                kinds_text(collections.Counter(c.kind for c in errors)), "—" if fault == "quiet" else max(per_window),
                "%+.2f s" % max(late) if late else "—"))
    return "\n".join(lines)


def main():
    args = arguments()
    started = time.monotonic()
    try:
        fixture, gateway, public_port = preflight(args)
    except AssertionError as err:
        step("FAIL before starting: %s" % err)
        sys.exit(1)
    host = "127.0.0.1:%d" % public_port
    os.environ["AEGIS_BIN"] = gateway_binary()  # for gateway.audit_verify

    run_dir = tempfile.mkdtemp(prefix="aegis-chaos.")
    os.chmod(run_dir, 0o755)  # nginx workers and the cluster's owner read in it
    step("run dir %s; binary %s; %d clients for %.0f s (a call every %s s each) behind %s; faults %s, %.0f s apart" % (
        run_dir, gateway_binary(), args.clients, args.seconds, args.interval or "0 (back to back)", " and ".join(args.balancers),
        ", ".join(args.faults), args.quiet))
    processes = Processes()
    results = []
    try:
        results = run(args, fixture, gateway, public_port, host, run_dir, processes)
    except BaseException as err:  # noqa: BLE001 (the report says what broke, then everything stops)
        if isinstance(err, SystemExit) and not err.code:
            raise
        step("FAIL: the run stopped: %s: %s" % (type(err).__name__, err))
        results = [("the run completed", False)]
    finally:
        processes.stop_all()
    failed = [text for text, passed in results if not passed]
    step("wall time %.0f s; logs in %s" % (time.monotonic() - started, run_dir))
    if failed:
        step("FAILED: %d check(s)" % len(failed))
        sys.exit(1)
    step("PASS: chaos at team scale")


def run(args, fixture, gateway, public_port, host, run_dir, processes):
    cluster = Cluster(run_dir)
    processes.on_exit(cluster.stop)
    database_url = cluster.start()
    step("PostgreSQL (this run's cluster): %s" % database_url)

    proxy_port = free_port()
    gitea = urllib.parse.urlparse(fixture["gitea_url"])
    proxy = Nginx(processes, os.path.join(run_dir, "gitea-proxy"), proxy_port, ["%s:%d" % (gitea.hostname, gitea.port)],
                  template=os.path.join(HERE, "gitea-fault.conf.in"), name="gitea-proxy").start()
    fault_file = os.path.join(proxy.run_dir, "gitea-502")

    bearer = "chaos-" + secrets.token_hex(24)
    audit_key = secrets.token_hex(24)
    env = {
        "GITEA_URL": fixture["gitea_url"].rstrip("/"),
        "GITEA_TOKEN": fixture["admin"]["token"],
        "MCP_BEARER_TOKEN": bearer,
        "PUBLIC_BASE_URL": gateway,
        "DATABASE_URL": database_url,
        "GITEA_OAUTH_CLIENT_ID": fixture["oauth"]["client_id"],
        "GITEA_OAUTH_CLIENT_SECRET": fixture["oauth"]["client_secret"],
        "GITEA_OAUTH_READ_CLIENT_ID": fixture["oauth_read"]["client_id"],
        "GITEA_OAUTH_READ_CLIENT_SECRET": fixture["oauth_read"]["client_secret"],
        "TOKEN_ENCRYPTION_KEY": secrets.token_hex(24),
        "AUDIT_HMAC_KEY": audit_key,
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "RATE_LIMIT_SIGN_INS_PER_IP": "600",
        # Every client is 127.0.0.1 and half share the bearer: limits on
        # (the shared windows in PostgreSQL on every call) but far away.
        "RATE_LIMIT_PER_IP": "1000000",
        "RATE_LIMIT_PER_TOKEN": "1000000",
    }
    ports = {name: free_port() for name in REPLICAS}
    replicas = [Replica(processes, name, gateway_binary(), os.path.join(run_dir, name), ports[name], env) for name in REPLICAS]
    for replica in replicas:
        replica.start()

    # The public balancer (the sign-ins' redirect base) on the fixture's port.
    public_kind = "haproxy" if "haproxy" in args.balancers else "nginx"
    balancer_ports = {kind: public_port if kind == public_kind else free_port() for kind in args.balancers}
    balancers = {}
    for kind in args.balancers:
        directory = os.path.join(run_dir, kind)
        if kind == "nginx":
            balancers[kind] = Nginx(processes, directory, balancer_ports[kind], ["127.0.0.1:%d" % ports[n] for n in REPLICAS],
                                    template=args.nginx_template).start()
        else:
            balancers[kind] = HAProxy(processes, directory, balancer_ports[kind], [(n, ports[n]) for n in REPLICAS],
                                      template=args.haproxy_template).start()
    if "haproxy" in balancers:
        wait_for_haproxy(balancer_ports["haproxy"], host, REPLICAS)
    step("replicas %s on one store; %s; Gitea %s through the fault proxy on %d" % (
        " ".join("%s:%d" % (n, ports[n]) for n in REPLICAS),
        ", ".join("%s on %d" % (k, balancer_ports[k]) for k in args.balancers), fixture["gitea_url"], proxy_port))

    # 1. The sign-ins, with the replicas on Gitea itself.
    persons = people(fixture, args.people)
    credentials = [{"label": "bearer", "token": bearer, "login": fixture["admin"]["login"], "mode": "bearer"}]
    t = time.monotonic()
    credentials += sign_in_grants(gateway, persons, args.grants)
    step("%d grants signed in through %s in %.1f s: %s" % (
        len(credentials) - 1, public_kind, time.monotonic() - t, ", ".join(c["label"] for c in credentials[1:])))

    # 2. The replicas on the fault proxy.
    for replica in replicas:
        replica.drain()
    for replica in replicas:
        replica.start(env={"GITEA_URL": "http://127.0.0.1:%d" % proxy_port})
    if "haproxy" in balancers:
        wait_for_haproxy(balancer_ports["haproxy"], host, REPLICAS)
    served_names = {"127.0.0.1:%d" % ports[n]: n for n in REPLICAS}
    kinds = list(args.balancers)
    load = Load(args, [(k, balancer_ports[k]) for k in kinds], credentials, host, served_names)

    async def first_calls():
        """Each credential once through each balancer, before the load: all must work."""
        load.t0 = time.monotonic()
        out = []
        for b, (_, port) in enumerate(load.balancers):
            connection = HttpConnection("127.0.0.1", port)
            for c, credential in enumerate(credentials):
                t0 = time.monotonic() - load.t0
                try:
                    answer = await connection.request(load.requests[b][c], timeout=30)
                    kind, status = classify(answer, credential)
                    served = load.served(answer)
                except NoAnswer as err:
                    kind, status, served = "no_answer (%s)" % err, None, None
                out.append(Call(t0, time.monotonic() - load.t0, b, c, kind, served, status))
            connection.close()
        return out

    first = asyncio.run(first_calls())
    bad = [(kinds[c.balancer], credentials[c.cred]["label"], c.kind) for c in first if c.kind != "ok"]
    check(not bad, "every credential works through every balancer before the load: %s" % bad)
    step("every credential answered as its own user through %s (GITEA_URL: the fault proxy)" % " and ".join(kinds))

    # 3. The load and the faults.
    faults = Faults(args, replicas, cluster, fault_file)
    planned = faults.plan(args.seconds)
    step("load: %d clients for %.0f s; faults planned at %s" % (
        args.clients, args.seconds, ", ".join("%s ~%.0f s" % (f, t) for t, f, _ in planned)))
    cpu_before = {k: tree_cpu_seconds(b.process.pid) for k, b in balancers.items()}
    cpu_before["gitea-proxy"] = tree_cpu_seconds(proxy.process.pid)
    gitea_pid = gitea_process(fixture)
    cpu_before["gitea"] = cpu_seconds(gitea_pid)
    pg_before = sum(cpu_seconds(p) for p in cluster.pids())  # the postmaster and its backends
    replica_cpu = {r.name: 0.0 for r in replicas}
    client_before = resource.getrusage(resource.RUSAGE_SELF)
    load_started = time.monotonic()
    sampler_stop = threading.Event()

    def sample_replicas():
        """Replica CPU, summed over their restarts (a killed process's time is read before it dies: every 0.5 s)."""
        last = {}
        while not sampler_stop.is_set():
            for r in replicas:
                process = r.process
                if process is not None and process.poll() is None:
                    value = cpu_seconds(process.pid)
                    key = (r.name, process.pid)
                    replica_cpu[r.name] += max(0.0, value - last.get(key, cpu_seconds_at_start.get(key, value)))
                    last[key] = value
            sampler_stop.wait(0.5)

    cpu_seconds_at_start = {(r.name, r.process.pid): cpu_seconds(r.process.pid) for r in replicas}
    sampler = threading.Thread(target=sample_replicas, daemon=True)
    sampler.start()
    asyncio.run(load.run(args.seconds, faults))
    sampler_stop.set()
    sampler.join()
    wall = time.monotonic() - load_started
    client_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = {k: tree_cpu_seconds(b.process.pid) - cpu_before[k] for k, b in balancers.items()}
    cpu["gitea-proxy"] = tree_cpu_seconds(proxy.process.pid) - cpu_before["gitea-proxy"]
    cpu["gitea"] = cpu_seconds(gitea_pid) - cpu_before["gitea"]
    cpu["postgres"] = sum(cpu_seconds(p) for p in cluster.pids()) - pg_before
    cpu["client (this script)"] = (client_after.ru_utime + client_after.ru_stime) - (client_before.ru_utime + client_before.ru_stime)
    calls = load.calls + first

    # 4. The replicas stop; the report and the checks.
    for replica in replicas:
        replica.stop()
    windows = faults.windows
    table, by_window = report(load, windows, kinds)
    total = len(load.calls)
    ok = sum(1 for c in load.calls if c.kind == "ok")
    print("\n%d calls in %.0f s (%.0f calls/s; the last answer %.1f s after the start), %d ok; %d connections opened by the clients; load average %.1f\n" % (
        total, args.seconds, total / args.seconds, wall, ok, load.connections, os.getloadavg()[0]))
    print(table)
    print("\nBy fault:\n\n" + summary(load.calls, windows, kinds) + "\n")
    for label, mine in (("bearer", [c for c in load.calls if c.cred == 0]), ("OAuth", [c for c in load.calls if c.cred != 0])):
        latencies = [1000 * (c.t1 - c.t0) for c in mine]
        print("%s calls: %d, p50 / p99 / max %.0f / %.0f / %.0f ms" % (
            label, len(mine), percentile(latencies, 0.5), percentile(latencies, 0.99), max(latencies, default=0)))
    print("\nCPU seconds during the load (%d cores): replicas %s; %s\n" % (
        os.cpu_count(), " ".join("%s %.1f" % (n, replica_cpu[n]) for n in REPLICAS),
        ", ".join("%s %.1f" % kv for kv in cpu.items())))

    results = []

    def result(text, passed):
        results.append((text, passed))
        step("%s %s" % ("PASS" if passed else "FAIL", text))

    errors = [c for c in load.calls if c.kind != "ok"]
    for index, w in enumerate(windows):
        mine = [c for c in by_window.get(index, []) if c.kind != "ok"]
        last = max((c.t1 for c in mine), default=None)
        recovered = last is None or last <= w["end"] + GRACE
        result("%s (%.1f → %.1f s): %d errors%s; recovered within %.0f s of the end" % (
            w["name"], w["start"], w["end"], len(mine),
            (" (%s), the last ended %+.2f s from the end" % (kinds_text(collections.Counter(c.kind for c in mine)), last - w["end"]))
            if mine else "", GRACE), recovered)
    outside = by_window.get(None, [])
    outside_errors = [c for c in outside if c.kind != "ok"]
    result("0 errors outside the fault windows (%d calls there; errors: %s%s)" % (
        len(outside), kinds_text(collections.Counter(c.kind for c in outside_errors)),
        "".join("; %s via %s at %.2f-%.2f s (%s)" % (c.kind, kinds[c.balancer], c.t0, c.t1, c.served) for c in outside_errors[:10])),
        not outside_errors)
    foreign = [c for c in calls if c.kind == "foreign"]
    result("0 foreign identities in %d calls (%d credentials: the bearer as %s, %d OAuth grants of %d people)" % (
        len(calls), len(credentials), fixture["admin"]["login"], len(credentials) - 1, len(persons)), not foreign)
    gitea_windows = [i for i, w in enumerate(windows) if w["fault"] == "gitea"]
    in_gitea = [c for i in gitea_windows for c in by_window.get(i, []) if c.kind != "ok"]
    not_tool = collections.Counter(c.kind for c in in_gitea if c.kind != "gitea_502")
    result("Gitea's 502 reaches the clients as tool results with status 502 (%d gitea_502; anything else: %s)" % (
        sum(1 for c in in_gitea if c.kind == "gitea_502"), kinds_text(not_tool)), gitea_windows and not not_tool)
    stray_502 = [c for c in errors if c.kind == "gitea_502" and window_of(c, [windows[i] for i in gitea_windows]) is None]
    if stray_502:
        result("no Gitea 502 outside the Gitea window (%d)" % len(stray_502), False)

    try:
        verified = audit_verify(replicas[0].data_dir, audit_key, *[r.data_dir for r in replicas[1:]])
        result("every replica's audit chain verifies, the killed ones' too:\n    %s" % verified.replace("\n", "\n    "), True)
    except AssertionError as err:
        result("every replica's audit chain verifies: %s" % err, False)

    answered = collections.Counter(c.served for c in calls if c.status is not None and c.kind not in ("no_answer", "timeout")
                                   and not c.kind.startswith(("balancer_", "gateway_", "http_")))
    unattributed = answered.pop(None, 0)
    finished = {r.name: len(r.audit_entries("tool_call_finished")) for r in replicas}
    rows = ", ".join("%s answered %d, logged %d" % (n, answered.get(n, 0), finished[n]) for n in REPLICAS)
    result("no answered call without its audit entry (tool_call_finished >= answers per replica: %s%s)" % (
        rows, "; %d answers without X-Served-By" % unattributed if unattributed else ""),
        all(finished[n] >= answered.get(n, 0) for n in REPLICAS) and not unattributed and set(answered) <= set(REPLICAS))

    result("every fault ran and its replica came back (%d windows: %s)%s" % (
        len(windows), ", ".join(w["name"] for w in windows), "".join("; " + f for f in faults.failures)),
        not faults.failures and set(w["fault"] for w in windows) == set(args.faults))
    per_credential = collections.Counter(c.cred for c in load.calls if c.kind == "ok")
    idle = [credentials[i]["label"] for i in range(len(credentials)) if not per_credential[i]]
    per_balancer = collections.Counter(c.balancer for c in load.calls if c.kind == "ok")
    result("every credential and every balancer had answered calls (ok per balancer: %s)%s" % (
        ", ".join("%s %d" % (k, per_balancer[i]) for i, k in enumerate(kinds)), "; none for %s" % idle if idle else ""),
        not idle and all(per_balancer[i] for i in range(len(kinds))))
    with open(os.path.join(run_dir, "calls.jsonl"), "w") as f:
        for c in calls:
            f.write(json.dumps(c._asdict()) + "\n")
    with open(os.path.join(run_dir, "windows.json"), "w") as f:
        json.dump(windows, f, indent=1)
    with open(os.path.join(run_dir, "report.md"), "w") as f:
        f.write(table + "\n\n" + summary(load.calls, windows, kinds) + "\n")
    if not all(p for _, p in results):
        for replica in replicas:
            sys.stdout.write(replica.log_tail())
        for kind, balancer in balancers.items():
            sys.stdout.write("--- %s log (%s), its end\n%s\n" % (kind, balancer.log if kind == "haproxy" else balancer.error_log,
                                                                 balancer.tail() if kind == "haproxy" else "\n".join(balancer.error_lines()[-20:])))
    return results


def gitea_process(fixture):
    try:
        with open(os.path.join(fixture["state_dir"], "gitea.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


if __name__ == "__main__":
    main()
