#!/usr/bin/env python3
"""Three gateway replicas on one PostgreSQL database behind a real HAProxy
(round robin over loopback), with the real Gitea behind them, behave as one
gateway.

What it proves, phase by phase (each replica set is three `$AEGIS_BIN serve`
processes, r1 r2 r3, sharing DATABASE_URL, TOKEN_ENCRYPTION_KEY,
AUDIT_HMAC_KEY and PUBLIC_BASE_URL = the balancer; each with its own DATA_DIR,
port and REPLICA_ID):

A. sharing (steps 1-4)
   1. the replicas and HAProxy start; /health answers through the balancer;
   2. the official Python MCP SDK signs in as alice at `/mcp` through the
      balancer, its requests spread over the replicas (X-Served-By), then
      tools/list and tools/call run as alice;
   3. with alice's Gitea session expired in the store, 20 concurrent calls
      all succeed as alice after exactly one upstream refresh (counted in
      the three audit logs); the grant stays live;
   4. `/revoke` on r1 directly: the access token gets 401 on r1 at once,
      and on r2 and r3 within a second (each replica keeps a token it
      resolved for a second: docs/replicas.md).
B. rate limit (step 5): RATE_LIMIT_PER_TOKEN=30 on every replica; 60 calls
   with one token over the three replicas: 30 (or 31 across a minute's edge)
   accepted.
C. load (steps 6-7): 8 threads of calls; r2 SIGKILLed after 2 s: the
   balancer keeps answering, every call r2 acknowledged is in its audit log,
   and its log verifies; r2 restarted, calls per second at concurrency 64
   with no errors; every replica's audit log verifies.

Usage (root of the repository):

    tests/e2e/gitea.sh start            # the real Gitea; GATEWAY_URL's port is the balancer's
    psql postgres://aegis@127.0.0.1:5433/postgres -c "CREATE DATABASE aegis_replicas_dev"
    DATABASE_URL=postgres://aegis@127.0.0.1:5433/aegis_replicas_dev \\
      AEGIS_BIN=/path/to/aegis-gitea-mcp python3 tests/replicas/replicas.py

Needs `haproxy` and `psql` on PATH, `pip install mcp==2.3.0` (the SDK and
httpx2) and a fresh database (the store of earlier runs would be counted).
Exits 1 naming each failed step, with the tails of the replicas' logs.
See tests/replicas/README.md.
"""

import asyncio
import collections
import concurrent.futures
import json
import os
import resource
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from gateway import (  # noqa: E402
    audit_verify,
    check,
    gateway_binary,
    gateway_log,
    load_fixture,
    start_gateway,
    stepper,
    stop_gateway,
    tool_call_envelope,
    tool_call_request,
)
from sdk_common import (  # noqa: E402
    MemoryStorage,
    Person,
    assert_refresh_dead,
    check_session_as,
    public_client,
    sdk_oauth_provider,
    signed_in_tokens,
    token_endpoint,
)

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")  # the balancer: PUBLIC_BASE_URL of every replica
BALANCER_PORT = urllib.parse.urlparse(GATEWAY).port
USER = FIXTURE["user"]
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"
DATABASE_URL = os.environ.get("DATABASE_URL")
REPLICAS = ("r1", "r2", "r3")
AUDIT_KEY = os.urandom(24).hex()
SHARED_ENV = {
    "TOKEN_ENCRYPTION_KEY": os.urandom(24).hex(),
    "AUDIT_HMAC_KEY": AUDIT_KEY,
    # HAProxy is the proxy (`option forwardfor`).
    "FORWARDED_ALLOW_IPS": "127.0.0.1",
    "RATE_LIMIT_SIGN_INS_PER_IP": "600",
}
# Every request reaches the replicas from 127.0.0.1 (X-Forwarded-For from
# HAProxy): the per-IP default (600 a minute) would refuse the load phase.
NO_RATE_LIMITS = {"RATE_LIMIT_PER_IP": "0", "RATE_LIMIT_PER_TOKEN": "0"}

TOKEN_LIMIT = 30  # RATE_LIMIT_PER_TOKEN of phase B: a minute's sliding window
LIMIT_CALLS = 60
# How many calls past the limit the replicas together may accept. The
# shared count is exact (each check's upsert returns its own total), so
# only the sliding window's minute edge lets one more through; replicas on
# one host share one clock (docs/replicas.md: the tolerance with skew).
LIMIT_TOLERANCE = 1

BURST = 20  # concurrent calls on the expired Gitea session (step 3)
# How long a replica uses an access token it resolved without asking the
# store again (FRESH_FOR in src/store/sql/resolved.rs), with a margin.
RESOLVED_FOR = 1.1
KILL_THREADS, KILL_SECONDS, KILL_AT = 8, 6.0, 2.0
# The calls cut by the kill (in flight on r2, or sent on a pooled connection
# to it) fail within this long of it; every call after must succeed.
KILL_WINDOW = 2.0
SIZING_THREADS, SIZING_SECONDS = 64, 10.0

os.environ.setdefault("RUST_LOG", "info")
RUN_DIR = None  # /tmp/aegis-replicas.*, made once the preflight checks pass
step = stepper("replicas")
Call = collections.namedtuple("Call", "started ended status served_by envelope detail")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORTS = {name: free_port() for name in REPLICAS}


def replica_url(name):
    return "http://127.0.0.1:%d" % PORTS[name]


def psql(query, **variables):
    """Runs `query` on DATABASE_URL (`:'name'` for the variables): its rows, `|`-separated."""
    args = ["psql", DATABASE_URL, "-XAtq", "-v", "ON_ERROR_STOP=1"]
    for name, value in variables.items():
        args += ["-v", "%s=%s" % (name, value)]
    done = subprocess.run(args + ["-f", "-"], input=query, capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, "psql: %s %s" % (query, done.stderr))
    return [line for line in done.stdout.splitlines() if line]


def preflight():
    missing = [tool for tool in ("haproxy", "psql") if not shutil.which(tool)]
    check(not missing, "not on PATH: %s (apt-get install -y %s)" % (
        ", ".join(missing), " ".join("haproxy" if t == "haproxy" else "postgresql-client" for t in missing)))
    check(DATABASE_URL and DATABASE_URL.startswith(("postgres://", "postgresql://")),
          "DATABASE_URL must name the PostgreSQL database the three replicas share "
          "(e.g. postgres://aegis@127.0.0.1:5433/aegis_replicas_dev, created beforehand)")
    check(os.access(gateway_binary(), os.X_OK), "no gateway binary at %s (set AEGIS_BIN)" % gateway_binary())
    app_ini = os.path.join(FIXTURE["state_dir"], "custom", "conf", "app.ini")
    with open(app_ini) as f:
        ini = f.read().replace(" ", "")
    check("INVALIDATE_REFRESH_TOKENS=true" in ini,
          "Gitea must invalidate used refresh tokens: restart it with tests/e2e/gitea.sh start (%s)" % app_ini)
    with socket.socket() as s:
        check(s.connect_ex(("127.0.0.1", BALANCER_PORT)) != 0, "something already listens on %s: stop it" % GATEWAY)


class Balancer:
    """HAProxy in the foreground, from haproxy.cfg.in."""

    def __init__(self):
        with open(os.path.join(HERE, "haproxy.cfg.in")) as f:
            template = string.Template(f.read())
        servers = "\n".join("    server %s 127.0.0.1:%d" % (name, PORTS[name]) for name in REPLICAS)
        self.config = os.path.join(RUN_DIR, "haproxy.cfg")
        with open(self.config, "w") as f:
            f.write(template.substitute(port=BALANCER_PORT, servers=servers))
        self.log = os.path.join(RUN_DIR, "haproxy.log")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(["haproxy", "-f", self.config, "-db"], stdout=log, stderr=subprocess.STDOUT)

    def wait_for(self, names, timeout=20):
        """Until HAProxy spreads /health over exactly `names` (round robin over the servers it sees up)."""
        deadline = time.monotonic() + timeout
        seen = set()
        with httpx2.Client(timeout=5) as http:
            while time.monotonic() < deadline:
                check(self.process.poll() is None, "HAProxy exited: %s" % self.tail())
                try:
                    seen = {http.get(GATEWAY + "/health").headers.get("x-served-by") for _ in range(2 * len(REPLICAS))}
                except httpx2.HTTPError:
                    seen = set()
                if seen == set(names):
                    return
                time.sleep(0.2)
        raise AssertionError("HAProxy did not come to serve %s (last seen: %s)" % (sorted(names), sorted(map(str, seen))))

    def tail(self, limit=3000):
        with open(self.log, errors="replace") as f:
            return f.read()[-limit:]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class ReplicaSet:
    """r1 r2 r3 on one store, each in RUN_DIR/<phase>/<name>."""

    def __init__(self, phase, extra_env=None):
        self.phase = phase
        self.env = {**SHARED_ENV, **(extra_env or {})}
        self.dirs = {name: os.path.join(RUN_DIR, phase, name) for name in REPLICAS}
        self.processes = {}

    def start(self, names=REPLICAS):
        """Starts `names` at once (each waits for its /health)."""
        for name in names:
            os.makedirs(self.dirs[name], exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            futures = {
                name: pool.submit(start_gateway, FIXTURE, self.dirs[name], database_url=DATABASE_URL,
                                  extra_env={**self.env, "REPLICA_ID": name}, port=PORTS[name])
                for name in names
            }
        failed = []
        for name, future in futures.items():
            try:
                self.processes[name] = future.result()
            except AssertionError as err:
                failed.append("%s: %s" % (name, err))
        check(not failed, "; ".join(failed))

    def kill(self, name):
        self.processes[name].kill()  # SIGKILL: no shutdown, no flush
        self.processes[name].wait()

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                stop_gateway(process)

    def audit(self, name, event=None):
        """The audit entries of `name` (every audit.log file), of `event` if given."""
        entries = []
        for file in sorted(os.listdir(self.dirs[name])):
            if file.startswith("audit.log"):
                with open(os.path.join(self.dirs[name], file)) as f:
                    entries += [json.loads(line) for line in f if line.strip()]
        return [e for e in entries if event is None or e.get("event") == event]

    def log_tails(self, warnings=20, last=3):
        """Per replica: its last `warnings` log lines above INFO, then its last `last` lines."""
        out = []
        for name in REPLICAS:
            lines = gateway_log(self.dirs[name], limit=2_000_000).splitlines()
            loud = [line for line in lines if '"level":"INFO"' not in line and '"level":"DEBUG"' not in line]
            out.append("--- %s %s (%s/gateway.log): %d lines, %d above INFO; those, then the last %d\n%s\n" % (
                self.phase, name, self.dirs[name], len(lines), len(loud), last, "\n".join(loud[-warnings:] + ["…"] + lines[-last:])))
        return "".join(out)


def served_call(http, token, base=GATEWAY, name="gitea_user_get_current"):
    """One raw tools/call with a persistent httpx2 client: a Call (times are filled in by the caller)."""
    body, headers = tool_call_request(name)
    try:
        response = http.post(base + "/mcp", content=body, headers={"Authorization": "Bearer " + token, **headers})
    except httpx2.HTTPError as err:
        return Call(0, 0, None, None, None, type(err).__name__)
    envelope = None
    if response.status_code == 200:
        envelope = tool_call_envelope(response.headers.get("content-type", ""), response.text)
    return Call(0, 0, response.status_code, response.headers.get("x-served-by"), envelope, response.text[:200])


def described(call):
    """What went wrong with a call, for the output."""
    if call.status is None:
        return "%s (no answer) at %.2f s" % (call.detail, call.ended)
    return "HTTP %s from %s at %.2f s" % (call.status, call.served_by or "HAProxy", call.ended)


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far, or 0 if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def acknowledged(call):
    """HTTP 200, Gitea's 200 in the envelope, and the call ran as the user."""
    envelope = call.envelope or {}
    return call.status == 200 and envelope.get("status") == 200 and (envelope.get("identity") or {}).get("login") == USER["login"]


def spread(calls):
    """`r1 ×7, r2 ×7, r3 ×6`: who answered the calls (`-`: HAProxy itself, or nobody)."""
    counts = collections.Counter(c.served_by or "-" for c in calls)
    return ", ".join("%s ×%d" % (name, counts[name]) for name in sorted(counts)) or "none"


def load(token, threads, seconds, event=None):
    """`threads` loop calls through the balancer for `seconds`; `event` =
    (delay, action) runs once meanwhile. The calls, and when the action ran."""
    calls, t0 = [], time.monotonic()
    deadline = t0 + seconds

    def worker():
        with httpx2.Client(timeout=30) as http:
            while time.monotonic() < deadline:
                started = time.monotonic() - t0
                call = served_call(http, token)
                calls.append(call._replace(started=started, ended=time.monotonic() - t0))

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for w in workers:
        w.start()
    happened = None
    if event:
        time.sleep(event[0])
        happened = time.monotonic() - t0
        event[1]()
    for w in workers:
        w.join()
    return calls, happened


def gitea_pid():
    try:
        with open(os.path.join(FIXTURE["state_dir"], "gitea.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


def scripted_sign_in():
    """alice signs in through the balancer with a new public client: her tokens."""
    client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replicas")
    return signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER)


# ---------------------------------------------------------------- phase A

async def sdk_sign_in(storage, served):
    """Step 2: the SDK signs in at /mcp through the balancer; `served` gets (method, path, replica)."""

    def record(response):
        if "x-served-by" in response.headers:
            served.append((response.request.method, response.request.url.path, response.headers["x-served-by"]))

    async def record_async(response):
        record(response)

    person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
    person.http.event_hooks = {"response": [record]}
    captured = {}
    provider = sdk_oauth_provider(GATEWAY + "/mcp", CLIENT_CALLBACK, person, storage, captured, step)
    async with httpx2.AsyncClient(auth=provider, timeout=60, event_hooks={"response": [record_async]}) as http:
        async with streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                step("signed in through: %s" % " → ".join(person.pages))
                await check_session_as(session, USER, step)


def phase_sharing(balancer, replicas):
    """Steps 1-4 on one replica set with the default limits."""
    step("1. r1 r2 r3 on ports %s, one store; HAProxy on %s spreads /health over all three" % (
        " ".join(str(PORTS[n]) for n in REPLICAS), GATEWAY))
    token, client = step2_sign_in()
    step3_one_refresh(replicas, token, client)
    step4_revoke_anywhere(token, client)


def step2_sign_in():
    """The SDK's sign-in through the balancer: its tokens and client."""
    storage, served = MemoryStorage(), []
    asyncio.run(sdk_sign_in(storage, served))
    pages = [(m, p, r) for m, p, r in served if p in ("/authorize", "/authorize/consent", "/oauth/callback", "/token", "/register")]
    step("2. the sign-in's steps: %s" % ", ".join("%s %s→%s" % row for row in pages))
    counts = collections.Counter(r for *_, r in served)
    step("2. all %d gateway requests of the sign-in and the session: %s" % (
        len(served), ", ".join("%s ×%d" % kv for kv in sorted(counts.items()))))
    check(len({r for *_, r in pages}) > 1, "the sign-in's steps were served by one replica only: %s" % pages)
    return storage.tokens, storage.client_info


def step3_one_refresh(replicas, token, client):
    """The Gitea session expired: a burst of calls, one upstream refresh."""
    before = sum(len(replicas.audit(n, "upstream_refreshed")) for n in REPLICAS)
    updated = psql("UPDATE grants SET gitea_expires_at = 0 WHERE revoked_at IS NULL RETURNING id")
    # Written behind the replicas' backs: each keeps a token it resolved
    # for a second (RESOLVED_FOR), with the grant's expiry as it was. A
    # real expiry is a time that passes for every replica alike.
    time.sleep(RESOLVED_FOR)
    barrier = threading.Barrier(BURST)

    def burst_call(_):
        with httpx2.Client(timeout=60) as http:
            barrier.wait()
            return served_call(http, token.access_token)

    with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
        calls = list(pool.map(burst_call, range(BURST)))
    ok = [c for c in calls if acknowledged(c)]
    refreshes = {n: replicas.audit(n, "upstream_refreshed") for n in REPLICAS}
    total = sum(map(len, refreshes.values())) - before
    where = ["%s (%s)" % (n, ", ".join("%s=%s" % kv for kv in sorted((e.get("detail") or {}).items())))
             for n, entries in refreshes.items() for e in entries]
    step("3. %d grant(s) expired in the store; %d concurrent calls: %d ok as %s (%s); upstream refreshes: %d in %s" % (
        len(updated), BURST, len(ok), USER["login"], spread(calls), total, ", ".join(where) or "no log"))
    check(len(ok) == BURST, "every call of the burst succeeds as %s: %s" % (
        USER["login"], [(c.status, c.served_by, c.detail) for c in calls if not acknowledged(c)]))
    check(total == 1, "exactly one upstream refresh across the replicas, not %d" % total)
    with httpx2.Client(timeout=30) as http:
        again = served_call(http, token.access_token)
    check(acknowledged(again), "a call after the refresh: %s %s" % (again.status, again.detail))
    rows = psql("SELECT revoked_at IS NULL, gitea_expires_at > extract(epoch FROM now()) FROM grants WHERE client_id = :'client'",
                client=client.client_id)
    check(rows == ["t|t"], "the grant is live with a Gitea expiry ahead: %s" % rows)
    step("3. afterwards a call works (%s), the grant is unrevoked, its Gitea session expires in the future" % again.served_by)


def step4_revoke_anywhere(token, client):
    """Revoked on r1: refused there at once, on r2 and r3 within a second."""
    with httpx2.Client(timeout=30) as http:
        direct = {n: served_call(http, token.access_token, base=replica_url(n)) for n in REPLICAS}
        check(all(acknowledged(c) for c in direct.values()), "direct calls before the revoke: %s" % direct)
        revoked = token_endpoint(replica_url("r1"), "/revoke", client, token=token.refresh_token, token_type_hint="refresh_token")
        check(revoked.status_code == 200, "revoke on r1: %s %s" % (revoked.status_code, revoked.text[:300]))
        at_once = served_call(http, token.access_token, base=replica_url("r1"))
        check(at_once.status == 401, "on r1 right after its revoke: %s %s" % (at_once.status, at_once.detail))
        time.sleep(RESOLVED_FOR)
        after = {n: served_call(http, token.access_token, base=replica_url(n)) for n in ("r2", "r3")}
    check(all(c.status == 401 for c in after.values()), "the access token a second after the revoke on r1: %s" % (
        {n: (c.status, c.detail) for n, c in after.items()}))
    assert_refresh_dead(replica_url("r3"), token.refresh_token, client)
    step("4. /revoke on r1 (200): the access token gets 401 on r1 at once, %s on r2 and %s on r3 a second later, the refresh token invalid_grant on r3" % (
        after["r2"].status, after["r3"].status))


# ---------------------------------------------------------------- phase B

def phase_rate_limit(balancer, replicas):
    """Step 5: one per-token limit across the replicas."""
    tokens = scripted_sign_in()  # the code exchange sends no bearer: the token's count starts at 0
    with httpx2.Client(timeout=30) as http:
        calls = [served_call(http, tokens["access_token"]) for _ in range(LIMIT_CALLS)]
    accepted = [c for c in calls if c.status != 429]
    step("5. RATE_LIMIT_PER_TOKEN=%d on each replica; %d calls with one token: accepted %s, refused %s" % (
        TOKEN_LIMIT, LIMIT_CALLS, spread(accepted), spread([c for c in calls if c.status == 429])))
    step("5. accepted %d of %d (limit %d per minute across %d replicas)" % (len(accepted), LIMIT_CALLS, TOKEN_LIMIT, len(REPLICAS)))
    check(all(acknowledged(c) for c in accepted), "every accepted call succeeds: %s" % [
        (c.status, c.detail) for c in accepted if not acknowledged(c)])
    check(TOKEN_LIMIT <= len(accepted) <= TOKEN_LIMIT + LIMIT_TOLERANCE,
          "the replicas share the per-token limit: %d accepted, not %d to %d" % (
              len(accepted), TOKEN_LIMIT, TOKEN_LIMIT + LIMIT_TOLERANCE))


# ---------------------------------------------------------------- phase C

def phase_load(balancer, replicas):
    """Steps 6-7, with the rate limits off; then every audit log verifies."""
    step6_kill_under_load(replicas)
    replicas.start(["r2"])  # on its data dir: the log after a SIGKILL
    balancer.wait_for(REPLICAS)
    step7_sizing(balancer, replicas)
    replicas.stop()
    dirs = [replicas.dirs[name] for name in REPLICAS]
    for line in audit_verify(dirs[0], AUDIT_KEY, *dirs[1:]).splitlines():
        step("7. every replica's log, one chain each (stopped): %s" % line)


def step6_kill_under_load(replicas):
    """r2 SIGKILLed under load: the balancer keeps answering; r2's acknowledged calls are in its log."""
    tokens = scripted_sign_in()
    calls, killed_at = load(tokens["access_token"], KILL_THREADS, KILL_SECONDS, (KILL_AT, lambda: replicas.kill("r2")))
    failed = [c for c in calls if not acknowledged(c)]
    late = [c for c in calls if c.started >= KILL_SECONDS - 2]
    after = [c for c in calls if c.started > killed_at]
    step("6. %d threads for %.0f s, r2 SIGKILLed at %.2f s: %d calls (%s); after the kill %s" % (
        KILL_THREADS, KILL_SECONDS, killed_at, len(calls), spread(calls), spread(after)))
    step("6. errors: %d (%s)" % (len(failed), ", ".join(map(described, failed)) or "none"))
    check(late and all(acknowledged(c) for c in late), "the calls of the last 2 s succeed (%d of %d)" % (
        sum(map(acknowledged, late)), len(late)))
    outside = [c for c in failed if not killed_at - 0.5 <= c.ended <= killed_at + KILL_WINDOW]
    check(not outside, "errors away from the kill: %s" % ", ".join(map(described, outside)))
    acked = sum(1 for c in calls if acknowledged(c) and c.served_by == "r2")
    logged = sum(1 for e in replicas.audit("r2", "tool_call_finished") if e.get("outcome") == "ok")
    step("6. r2 acknowledged %d calls; its audit log holds %d finished ok" % (acked, logged))
    check(acked > 0 and acked <= logged, "every call r2 acknowledged is in its audit log (%d acknowledged, %d logged)" % (acked, logged))
    step("6. r2 (killed): %s" % audit_verify(replicas.dirs["r2"], AUDIT_KEY))


def step7_sizing(balancer, replicas):
    """Calls per second through HAProxy at concurrency 64, with a fresh token."""
    tokens = scripted_sign_in()
    pids = {**{n: p.pid for n, p in replicas.processes.items()}, "HAProxy": balancer.process.pid, "Gitea": gitea_pid()}
    cpu_before, client_before = {n: cpu_seconds(p) for n, p in pids.items()}, client_cpu_seconds()
    calls, _ = load(tokens["access_token"], SIZING_THREADS, SIZING_SECONDS)
    cpu = {n: cpu_seconds(p) - cpu_before[n] for n, p in pids.items()}
    errors = [c for c in calls if not acknowledged(c)]
    elapsed = max(c.ended for c in calls)
    step("7. c=%d through HAProxy: %.0f calls/s, errors %d (%d calls in %.1f s: %s)" % (
        SIZING_THREADS, (len(calls) - len(errors)) / elapsed, len(errors), len(calls), elapsed, spread(calls)))
    step("7. CPU seconds meanwhile (%d cores, load average %.1f): this Python client %.1f, replicas %.1f (%s), HAProxy %.1f, Gitea %.1f" % (
        os.cpu_count(), os.getloadavg()[0], client_cpu_seconds() - client_before, sum(cpu[n] for n in REPLICAS),
        " ".join("%.1f" % cpu[n] for n in REPLICAS), cpu["HAProxy"], cpu["Gitea"]))
    check(not errors, "no errors at c=%d: %s" % (SIZING_THREADS, ", ".join(map(described, errors[:10]))))


# Each phase on a replica set of its own: (name, the set's data-dir name, its settings, the phase).
PHASES = [
    ("A: sharing (steps 1-4)", "sharing", {}, phase_sharing),
    ("B: rate limit across replicas (step 5)", "rate-limit", {"RATE_LIMIT_PER_TOKEN": str(TOKEN_LIMIT)}, phase_rate_limit),
    ("C: kill -9 under load, sizing (steps 6-7)", "load", NO_RATE_LIMITS, phase_load),
]


def run_phase(balancer, name, directory, settings, phase):
    """Starts the phase's replica set, runs the phase, stops the set; on a
    failure prints the replicas' and HAProxy's log tails. Whether it passed."""
    replicas = ReplicaSet(directory, settings)
    try:
        replicas.start()
        balancer.wait_for(REPLICAS)
        phase(balancer, replicas)
        return True
    except Exception as err:  # noqa: BLE001 (every phase runs; the summary names each failure)
        step("FAIL %s: %s" % (name, err))
        sys.stdout.write(replicas.log_tails())
        sys.stdout.write("--- HAProxy log (%s), its end\n%s\n" % (balancer.log, balancer.tail()))
        return False
    finally:
        replicas.stop()


def main():
    global RUN_DIR
    try:
        preflight()
    except AssertionError as err:
        step("FAIL before starting: %s" % err)
        sys.exit(1)
    RUN_DIR = tempfile.mkdtemp(prefix="aegis-replicas.")
    store = urllib.parse.urlparse(DATABASE_URL)
    haproxy = subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    step("run dir %s; store %s:%s%s; binary %s; %s" % (RUN_DIR, store.hostname, store.port, store.path, gateway_binary(), haproxy))
    balancer = Balancer()
    failed = []
    try:
        for name, *phase in PHASES:
            step("phase %s" % name)
            if not run_phase(balancer, name, *phase):
                failed.append(name)
    finally:
        balancer.stop()
    if failed:
        step("FAILED: %s" % "; ".join(failed))
        sys.exit(1)
    step("PASS: three replicas on one store behind HAProxy behave as one gateway")


if __name__ == "__main__":
    main()
