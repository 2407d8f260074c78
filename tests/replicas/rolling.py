#!/usr/bin/env python3
"""A rolling upgrade with no downtime: three replicas of the previous
release on one PostgreSQL behind HAProxy, replaced one by one by the new
build while clients call, with an old replica killed and restarted while
the set is mixed (docs/operations.md, "Upgrading replicas").

The parts, all real and on loopback: three `$AEGIS_PREVIOUS_BIN serve`
processes r1 r2 r3 sharing DATABASE_URL (a fresh database), each with its
own DATA_DIR, port and REPLICA_ID, and the settings replicas share
(TOKEN_ENCRYPTION_KEY, AUDIT_HMAC_KEY, PUBLIC_BASE_URL = the balancer, the
seeded Gitea OAuth applications, FORWARDED_ALLOW_IPS=127.0.0.1);
HAProxy from haproxy.cfg.in on the fixture's gateway_url port (checking
/health/live); the real Gitea of tests/e2e/gitea.sh behind them.

1. The previous replicas start; PEOPLE people sign in GRANTS times each
   through the real OAuth flow (alice and Gitea users chaos-1, ...: chaos.py's
   people()); every credential answers once as its own user.
2. CLIENTS clients call `tools/call gitea_user_get_current` through HAProxy
   (raw JSON-RPC, one kept-alive connection each, a call every INTERVAL s):
   the even ones with the static bearer, the odd ones with the OAuth grants
   in turn. Every call is recorded: when, which replica answered
   (X-Served-By), the outcome (chaos.py's classify()).
3. Meanwhile, the roll, QUIET seconds between steps:
   - `$AEGIS_BIN store migrate --check`, then `store migrate`, with the
     replicas' settings (when the new binary has them);
   - r1: SIGTERM (it drains), its exit, `$AEGIS_BIN serve` in its place
     (same port, DATA_DIR, REPLICA_ID), until HAProxy serves it again;
     every OAuth grant refreshes at r1 (a refresh token the previous
     binary minted, redeemed by the new one);
   - the set mixed: r2 (previous) SIGKILLed, `$AEGIS_PREVIOUS_BIN serve`
     again in its place DOWN seconds later: it must start on the store the
     new binary has opened, and serve; every grant refreshes at r2 (minted by the new
     binary, redeemed by the previous one);
   - r2, then r3, replaced as r1 was; every grant refreshes through the
     balancer.
   Each replaced or restarted replica's window: from its SIGTERM or SIGKILL
   to HAProxy serving it again, plus 1 s.
4. The load stops; the checks, each printed PASS or FAIL:
   - 0 failed calls outside the windows (those in them are counted);
   - no foreign identity (an answer as another person);
   - the OAuth clients never had to sign in again: no 401, every refresh
     answered (across versions, both ways);
   - every replica's /health says the new binary's version and, when it
     reports one, a schema with store == binary;
   - every replica's audit chain verifies with the new binary's `audit
     verify`, a chain both binaries wrote for each replaced one, and holds a
     `tool_call_finished` entry for every call it answered;
   - each drained replica exited 0; the restarted old one served calls.

Usage (root of the repository; Gitea started by tests/e2e/gitea.sh, whose
GATEWAY_URL port is where HAProxy listens; a fresh database):

    psql postgres://aegis@127.0.0.1:5433/postgres -c "CREATE DATABASE aegis_rolling"
    DATABASE_URL=postgres://aegis@127.0.0.1:5433/aegis_rolling \\
      AEGIS_PREVIOUS_BIN=/path/to/previous/aegis-gitea-mcp AEGIS_BIN=target/release/aegis-gitea-mcp \\
      python3 tests/replicas/rolling.py

Needs haproxy and psql on PATH, `pip install mcp==2.3.0` (httpx2, for the
sign-ins). Exits 1 on any FAIL, with the replicas' and HAProxy's log
tails; every process it started is stopped, and its logs stay in the
/tmp/aegis-rolling.* directory it prints. See tests/replicas/README.md.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import chaos  # noqa: E402 (people(), classify(), wait_for_haproxy(), the report's helpers)
from loadkit import (  # noqa: E402
    CallLoad,
    HAProxy,
    Processes,
    Replica,
    binary_version,
    check,
    free_port,
    gateway_binary,
    health_json,
    in_window,
    oauth_credentials,
    port_open,
    preflight as tools_preflight,
    refresh_grant,
    run_binary,
    stepper,
)
from gateway import audit_verify, load_fixture  # noqa: E402

GRACE = 1.0  # a window ends this long after HAProxy serves the replica again
REPLICAS = ("r1", "r2", "r3")
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"
step = stepper("rolling")


def arguments():
    parser = argparse.ArgumentParser(description="A rolling upgrade under load (tests/replicas/README.md).")
    parser.add_argument("--clients", type=int, default=48, help="MCP clients through HAProxy (default 48)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds from one call's start to the next per client, ±20%% (default 1.0)")
    parser.add_argument("--quiet", type=float, default=4, help="seconds between the roll's steps, and before and after (default 4)")
    parser.add_argument("--down", type=float, default=1.5,
                        help="seconds the killed replica stays down before it is started again, long enough for HAProxy "
                             "to take it out (default 1.5)")
    parser.add_argument("--people", type=int, default=3, help="people signed in (alice, then Gitea users chaos-1...) (default 3)")
    parser.add_argument("--grants", type=int, default=2, help="grants per person (default 2)")
    parser.add_argument("--call-timeout", type=float, default=30, help="a call without an answer by then fails (default 30)")
    args = parser.parse_args()
    check(args.clients >= 2 and args.interval > 0, "--clients >= 2, --interval > 0")
    check(args.quiet >= 2 * GRACE, "--quiet: at least %.0f s" % (2 * GRACE))
    check(1 <= args.people <= 20 and args.grants >= 1, "--people 1..20, --grants >= 1")
    return args


def previous_binary():
    path = os.environ.get("AEGIS_PREVIOUS_BIN")
    check(path, "AEGIS_PREVIOUS_BIN must name the previous release's binary (the replicas the roll replaces)")
    return os.path.abspath(path)


def has_store_commands(binary):
    """Whether `binary store --help` lists migrate (and backup, restore)."""
    done = subprocess.run([binary, "store", "--help"], capture_output=True, text=True, timeout=30)
    return done.returncode == 0 and "migrate" in done.stdout


def preflight():
    """The fixture, the binaries, the tools, the ports: (fixture, gateway URL, its port)."""
    try:
        fixture = load_fixture()
    except OSError as err:
        raise AssertionError("no Gitea fixture (tests/e2e/gitea.sh start; AEGIS_E2E_DIR): %s" % err)
    gateway = fixture["gateway_url"].rstrip("/")
    public_port = urllib.parse.urlparse(gateway).port
    tools_preflight(["haproxy", "psql"])
    check(os.access(previous_binary(), os.X_OK), "no previous binary at %s (AEGIS_PREVIOUS_BIN)" % previous_binary())
    database_url = os.environ.get("DATABASE_URL", "")
    check(database_url.startswith(("postgres://", "postgresql://")),
          "DATABASE_URL must name a fresh PostgreSQL database the three replicas share")
    check(not port_open(public_port), "something already listens on %s (HAProxy's port): stop it" % gateway)
    try:
        with urllib.request.urlopen(fixture["api_url"].rstrip("/") + "/version", timeout=5) as response:
            check(response.status == 200, "Gitea: %s" % response.status)
    except (urllib.error.URLError, OSError) as err:
        raise AssertionError("Gitea does not answer at %s (tests/e2e/gitea.sh start): %s" % (fixture["gitea_url"], err))
    return fixture, gateway, public_port, database_url


def main():
    args = arguments()
    started = time.monotonic()
    try:
        fixture, gateway, public_port, database_url = preflight()
    except AssertionError as err:
        step("FAIL before starting: %s" % err)
        sys.exit(1)
    os.environ["AEGIS_BIN"] = gateway_binary()  # gateway.audit_verify runs the new binary
    run_dir = tempfile.mkdtemp(prefix="aegis-rolling.")
    os.chmod(run_dir, 0o755)
    store = urllib.parse.urlparse(database_url)
    step("run dir %s; store %s:%s%s; %d clients, a call every %.1f s each, through HAProxy on %d" % (
        run_dir, store.hostname, store.port, store.path, args.clients, args.interval, public_port))
    processes = Processes()
    results = []
    try:
        results = Rolling(args, fixture, gateway, public_port, database_url, run_dir, processes).run()
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
    step("PASS: a rolling upgrade with no downtime")


class Rolling:
    def __init__(self, args, fixture, gateway, public_port, database_url, run_dir, processes):
        self.args = args
        self.fixture = fixture
        self.gateway = gateway
        self.public_port = public_port
        self.host = "127.0.0.1:%d" % public_port
        self.run_dir = run_dir
        self.processes = processes
        self.new_bin = gateway_binary()
        self.old_bin = previous_binary()
        self.results = []
        self.windows = []  # name, kind, replica, start, exited, up, end, note
        self.refreshes = []  # (round, credential label, status, served, detail)
        self.swapped = {}  # replica -> when the new binary answered in its place (load time)
        self.audit_at_swap = {}  # replica -> its audit entries when the previous binary had stopped
        self.drain_codes = {}
        self.restarted_up = None  # when the restarted previous r2 answered again
        self.audit_key = secrets.token_hex(24)
        self.bearer = "rolling-" + secrets.token_hex(24)
        self.env = {
            "GITEA_URL": fixture["gitea_url"].rstrip("/"),
            "GITEA_TOKEN": fixture["admin"]["token"],
            "MCP_BEARER_TOKEN": self.bearer,
            "PUBLIC_BASE_URL": gateway,
            "DATABASE_URL": database_url,
            "GITEA_OAUTH_CLIENT_ID": fixture["oauth"]["client_id"],
            "GITEA_OAUTH_CLIENT_SECRET": fixture["oauth"]["client_secret"],
            "GITEA_OAUTH_READ_CLIENT_ID": fixture["oauth_read"]["client_id"],
            "GITEA_OAUTH_READ_CLIENT_SECRET": fixture["oauth_read"]["client_secret"],
            "TOKEN_ENCRYPTION_KEY": secrets.token_hex(24),
            "AUDIT_HMAC_KEY": self.audit_key,
            "FORWARDED_ALLOW_IPS": "127.0.0.1",
            "RATE_LIMIT_SIGN_INS_PER_IP": "600",
            # Every client is 127.0.0.1 and half share the bearer (as in chaos.py).
            "RATE_LIMIT_PER_IP": "1000000",
            "RATE_LIMIT_PER_TOKEN": "1000000",
        }
        self.ports = {name: free_port() for name in REPLICAS}
        self.replicas = {name: Replica(processes, name, self.old_bin, os.path.join(run_dir, name), self.ports[name], self.env)
                         for name in REPLICAS}
        self.load = None

    def result(self, text, passed):
        self.results.append((text, passed))
        step("%s %s" % ("PASS" if passed else "FAIL", text))

    # ------------------------------------------------------------ the run

    def run(self):
        self.versions = {"previous": binary_version(self.old_bin), "new": binary_version(self.new_bin)}
        self.store_commands = has_store_commands(self.new_bin)
        step("previous: %s (%s); new: %s (%s)%s" % (
            self.old_bin, self.versions["previous"], self.new_bin, self.versions["new"],
            "" if self.store_commands else "; the new binary has no `store migrate`: that step is skipped"))
        with concurrent.futures.ThreadPoolExecutor(len(REPLICAS)) as pool:
            for future in [pool.submit(r.start) for r in self.replicas.values()]:
                future.result()
        self.haproxy = HAProxy(self.processes, os.path.join(self.run_dir, "haproxy"), self.public_port,
                               [(n, self.ports[n]) for n in REPLICAS]).start()
        chaos.wait_for_haproxy(self.public_port, self.host, REPLICAS)
        before = {n: health_json(self.ports[n])[1] or {} for n in REPLICAS}
        step("the previous binary on r1 r2 r3 (ports %s), one store; HAProxy serves all three" % (
            " ".join(str(self.ports[n]) for n in REPLICAS)))
        self.result("before the roll every replica's /health names the previous binary's version %r (%s)" % (
            self.versions["previous"], ", ".join("%s %r" % (n, before[n].get("version")) for n in REPLICAS)),
            all(before[n].get("version") == self.versions["previous"] for n in REPLICAS))

        persons = chaos.people(self.fixture, self.args.people)
        t = time.monotonic()
        self.credentials = [{"label": "bearer", "token": self.bearer, "login": self.fixture["admin"]["login"], "mode": "bearer"}]
        self.credentials += oauth_credentials(self.gateway, persons, self.args.grants, CLIENT_CALLBACK, "rolling")
        step("%d grants signed in through HAProxy in %.1f s: %s" % (
            len(self.credentials) - 1, time.monotonic() - t, ", ".join(c["label"] for c in self.credentials[1:])))
        self.load = CallLoad(self.public_port, self.host, self.credentials, self.args.clients, self.args.interval,
                             chaos.classify, call_timeout=self.args.call_timeout)
        first = self.load.probe()
        bad = [(self.credentials[c.cred]["label"], c.kind) for c in first if c.kind != "ok"]
        check(not bad, "every credential answers as its own user before the load: %s" % bad)
        step("every credential answered as its own user (%s)" % ", ".join(sorted({str(c.served) for c in first})))

        self.load.start()
        step("load: %d clients started" % self.args.clients)
        try:
            self.roll()
        except Exception as err:  # noqa: BLE001 (the load stops and the report runs)
            self.result("the roll completed: %s" % err, False)
        time.sleep(self.args.quiet)
        calls = self.load.stop()
        step("load stopped: %d calls" % len(calls))
        self.check_health()
        self.haproxy.stop()
        for replica in self.replicas.values():
            replica.stop()
        self.report(calls)
        self.check_audit(calls)
        if not all(passed for _, passed in self.results):
            for replica in self.replicas.values():
                # A draining replica answers the balancer's checks 503, each logged as an error.
                sys.stdout.write(replica.log_tail(warnings=25, last=5, skip=('"path":"/health/live"',)))
            sys.stdout.write("--- HAProxy log (%s), its end\n%s\n" % (self.haproxy.log, self.haproxy.tail()))
        with open(os.path.join(self.run_dir, "calls.jsonl"), "w") as f:
            for c in calls:
                f.write(json.dumps(c._asdict()) + "\n")
        with open(os.path.join(self.run_dir, "windows.json"), "w") as f:
            json.dump(self.windows, f, indent=1)
        return self.results

    def roll(self):
        quiet = self.args.quiet
        time.sleep(quiet)
        if self.store_commands:
            self.migrate()
            time.sleep(quiet)
        else:
            step("SKIP store migrate --check / store migrate: %s has no `store` commands" % self.new_bin)
        self.replace("r1", "drain", "new")
        self.refresh_round("previous → new, at r1", self.ports["r1"])
        time.sleep(quiet)
        self.replace("r2", "kill", "previous")
        self.refresh_round("new → previous, at r2 (restarted)", self.ports["r2"])
        time.sleep(quiet)
        self.replace("r2", "drain", "new")
        time.sleep(quiet)
        self.replace("r3", "drain", "new")
        self.refresh_round("new → new, through HAProxy", self.public_port)

    def migrate(self):
        """`store migrate --check`, then `store migrate`, with the replicas' settings."""
        env = {**self.env, "DATA_DIR": os.path.join(self.run_dir, "operator")}
        for args in (["store", "migrate", "--check"], ["store", "migrate"]):
            start = self.load.now()
            code, out, err, seconds = run_binary(self.new_bin, args, env)
            step("`%s` (%.2f .. %.2f s): exit %d\n    %s" % (
                " ".join(args), start, start + seconds, code, "\n    ".join((out + err).strip().splitlines()) or "(no output)"))
            refused = "cannot serve" in out
            self.result("`aegis-gitea-mcp %s` with the replicas' settings exits 0%s" % (
                " ".join(args), " and allows a rolling upgrade" if args[-1] == "--check" else ""), code == 0 and not refused)

    def replace(self, name, how, label):
        """SIGTERM (`drain`) or SIGKILL (`kill`) of `name`, then the
        `label` binary ("previous" or "new") in its place, until HAProxy
        serves it: the window."""
        replica = self.replicas[name]
        binary = self.new_bin if label == "new" else self.old_bin
        start = self.load.now()
        if how == "kill":
            replica.kill()
            code, exited = "killed", self.load.now()
            time.sleep(self.args.down)  # a supervisor's restart delay: HAProxy takes it out meanwhile
        else:
            code = replica.drain()
            exited = self.load.now()
            self.drain_codes.setdefault(name, []).append(code)
        if label == "new":
            self.audit_at_swap[name] = len(replica.audit_entries())
        replica.binary = binary
        window = {"name": "%s %s → %s" % ("kill -9" if how == "kill" else "replace", name, label), "kind": how,
                  "replica": name, "start": start, "exited": exited, "up": None, "end": None, "binary": label}
        self.windows.append(window)
        try:
            replica.start()
            window["up"] = self.load.now()
            chaos.wait_for_haproxy(self.public_port, self.host, REPLICAS)
        finally:
            window["end"] = self.load.now()
        if label == "new":
            self.swapped[name] = window["up"]
        else:
            self.restarted_up = window["up"]
        status, body = health_json(self.ports[name])
        window["note"] = "exit %s at %.2f s, /health %s at %.2f s (%s), HAProxy serves it at %.2f s" % (
            code, exited, status, window["up"], (body or {}).get("version"), window["end"])
        step("%s: %.2f .. %.2f s (%s)" % (window["name"], start, window["end"], window["note"]))

    def refresh_round(self, label, port):
        """Every OAuth grant's refresh at 127.0.0.1:port (one replica, or HAProxy)."""
        out = []
        for credential in self.credentials[1:]:
            status, served, detail = refresh_grant("http://127.0.0.1:%d" % port, self.host, credential)
            self.refreshes.append((label, credential["label"], status, served, detail))
            out.append("%s %s%s" % (credential["label"], status, " (%s)" % detail if detail else ""))
        step("refresh, %s: %s" % (label, ", ".join(out)))

    # ------------------------------------------------------------ the checks

    def check_health(self):
        """After the roll: every replica's /health names the new binary (and its schema)."""
        rows, good = [], True
        for name in REPLICAS:
            status, body = health_json(self.ports[name])
            body = body or {}
            schema = body.get("schema")
            fine = status == 200 and body.get("version") == self.versions["new"]
            if "schema" in body:
                fine = fine and isinstance(schema, dict) and schema.get("store") is not None and schema.get("store") == schema.get("binary")
            good = good and fine
            rows.append("%s %s version %r schema %s" % (name, status, body.get("version"), json.dumps(schema) if "schema" in body else "(not reported)"))
        self.result("after the roll every replica's /health is 200 with the new binary's version %r (`AEGIS_BIN --version`)%s: %s" % (
            self.versions["new"], " and schema store == binary" if self.store_commands else "", "; ".join(rows)), good)

    def report(self, calls):
        windows = [w for w in self.windows if w["end"] is not None]
        by_window = collections.defaultdict(list)
        for call in calls:
            by_window[in_window(call, windows, GRACE)].append(call)
        failed = [c for c in calls if c.kind != "ok"]
        outside = [c for c in by_window.get(None, []) if c.kind != "ok"]
        inside = [c for index, mine in by_window.items() if index is not None for c in mine if c.kind != "ok"]
        lines = ["", "| window | start → end (s) | calls | ok | failed (kinds) | note |", "| --- | --- | ---: | ---: | --- | --- |"]
        for index, w in enumerate(windows):
            mine = by_window.get(index, [])
            bad = [c for c in mine if c.kind != "ok"]
            lines.append("| %s | %.2f → %.2f | %d | %d | %s | %s |" % (
                w["name"], w["start"], w["end"], len(mine), len(mine) - len(bad),
                chaos.kinds_text(collections.Counter(c.kind for c in bad)), w.get("note", "")))
        quiet = by_window.get(None, [])
        lines.append("| outside the windows | — | %d | %d | %s | |" % (
            len(quiet), len(quiet) - len(outside), chaos.kinds_text(collections.Counter(c.kind for c in outside))))
        lines += ["", "| replica | answered by the previous binary | by the new binary | drained: exit codes |",
                  "| --- | ---: | ---: | --- |"]
        for name in REPLICAS:
            mine = [c for c in calls if c.served == name and c.kind == "ok"]
            swapped = self.swapped.get(name)
            new = sum(1 for c in mine if swapped is not None and c.t0 >= swapped)
            lines.append("| %s | %d | %d | %s |" % (name, len(mine) - new, new, ", ".join(map(str, self.drain_codes.get(name, []))) or "—"))
        latencies = [1000 * (c.t1 - c.t0) for c in calls]
        print("\n%d calls, %d failed: %d in the windows, %d outside; p50 / p99 %.0f / %.0f ms; %d connections opened%s\n" % (
            len(calls), len(failed), len(inside), len(outside), chaos.percentile(latencies, 0.5), chaos.percentile(latencies, 0.99),
            self.load.connections, "\n".join(lines)))

        if inside:
            print("failed in the windows: %s\n" % "; ".join("%s at %.2f-%.2f s (%s, %s)" % (
                c.kind, c.t0, c.t1, self.credentials[c.cred]["label"], c.served) for c in inside[:20]))
        self.result("0 failed calls outside the windows (%d calls there%s)" % (
            len(quiet), "".join("; %s at %.2f-%.2f s (%s, %s)" % (c.kind, c.t0, c.t1, self.credentials[c.cred]["label"], c.served)
                                for c in outside[:10])), not outside)
        foreign = [c for c in calls if c.kind == "foreign"]
        self.result("no foreign identity in %d calls (%d credentials: the bearer, %d OAuth grants)" % (
            len(calls), len(self.credentials), len(self.credentials) - 1), not foreign)
        oauth_401 = [c for c in calls if c.cred > 0 and c.kind == "http_401"]
        refused = [r for r in self.refreshes if r[2] != 200]
        rounds = len({r[0] for r in self.refreshes})
        self.result("the OAuth clients never signed in again: no 401 in %d OAuth calls, %d refreshes in %d rounds all answered%s" % (
            sum(1 for c in calls if c.cred > 0), len(self.refreshes), rounds,
            "".join("; %s: %s %s %s" % (r[0], r[1], r[2], r[4]) for r in refused[:10]) +
            ("; 401 for %s" % sorted({self.credentials[c.cred]["label"] for c in oauth_401}) if oauth_401 else "")),
            not oauth_401 and not refused and rounds == 3)
        last_end = max((w["end"] for w in windows), default=0.0)
        after = collections.Counter(c.cred for c in calls if c.kind == "ok" and c.t0 > last_end + GRACE)
        idle = [c["label"] for i, c in enumerate(self.credentials) if not after[i]]
        self.result("every credential answered as its own user after the roll%s" % ("; none for %s" % idle if idle else ""), not idle)
        codes = [code for name in REPLICAS for code in self.drain_codes.get(name, [])]
        self.result("every drained replica exited 0 (%s)" % ", ".join(
            "%s %s" % (n, self.drain_codes.get(n)) for n in REPLICAS), codes and all(code == 0 for code in codes))
        if self.restarted_up is not None:
            upgrade = self.swapped.get("r2", float("inf"))
            served = sum(1 for c in calls if c.served == "r2" and c.kind == "ok" and self.restarted_up <= c.t0 and c.t1 <= upgrade)
            self.result("the previous binary, restarted on r2 while the set was mixed, came back and served %d calls" % served, served > 0)
        else:
            self.result("the previous binary, restarted on r2 while the set was mixed, came back", False)
        self.result("every replica runs the new binary (%s)" % ", ".join(
            "%s at %.2f s" % (n, self.swapped[n]) for n in REPLICAS if n in self.swapped), set(self.swapped) == set(REPLICAS))

    def check_audit(self, calls):
        dirs = [self.replicas[n].data_dir for n in REPLICAS]
        try:
            verified = audit_verify(dirs[0], self.audit_key, *dirs[1:])
            self.result("every replica's audit chain verifies (the new binary's `audit verify`):\n    %s" % verified.replace("\n", "\n    "), True)
        except AssertionError as err:
            self.result("every replica's audit chain verifies: %s" % err, False)
        entries = {n: len(self.replicas[n].audit_entries()) for n in REPLICAS}
        both = {n: (self.audit_at_swap.get(n, 0), entries[n]) for n in REPLICAS}
        self.result("each replaced replica's chain was written by both binaries (entries by the previous → in all: %s)" % (
            ", ".join("%s %d → %d" % (n, *both[n]) for n in REPLICAS)),
            all(0 < before < after for before, after in both.values()))
        answered = collections.Counter(c.served for c in calls if c.kind == "ok")
        finished = {n: len(self.replicas[n].audit_entries("tool_call_finished")) for n in REPLICAS}
        self.result("no answered call without its audit entry (tool_call_finished >= answers: %s)" % ", ".join(
            "%s %d >= %d" % (n, finished[n], answered.get(n, 0)) for n in REPLICAS),
            all(finished[n] >= answered.get(n, 0) for n in REPLICAS) and set(answered) <= set(REPLICAS))


if __name__ == "__main__":
    main()
