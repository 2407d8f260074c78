#!/usr/bin/env python3
"""A restore drill on SQLite: a backup taken while 50 clients call, put
back into a fresh DATA_DIR, and a gateway on it that knows every grant of
the backup (docs/operations.md, "Backups").

1. One `$AEGIS_BIN serve` on SQLite (a fresh DATA_DIR, OAuth against the
   real Gitea of tests/e2e/gitea.sh, a static bearer, AUDIT_HMAC_KEY) on
   the fixture's gateway_url, started by tests/e2e/gateway.py's
   start_gateway(). PEOPLE people sign in GRANTS times each through the real
   flow (alice and Gitea users chaos-1, ...: chaos.py's people() and
   sign_in_grants()).
2. CLIENTS clients call `tools/call gitea_user_get_current` (raw JSON-RPC,
   one kept-alive connection each, a call every INTERVAL s; the even ones
   with the bearer, the odd ones with the grants). After WARMUP seconds,
   `$AEGIS_BIN store backup RUN/backup` with the gateway's settings: it
   must exit 0 and say what it wrote; the folder holds manifest.json,
   aegis.db and the audit log, each file as the manifest says (size,
   SHA-256). No call may fail meanwhile.
3. The calls and the gateway stop. `store restore` into the original
   DATA_DIR without --force refuses (non-zero, naming --force) and changes
   no file there; `store restore` into a fresh DATA_DIR (the same
   TOKEN_ENCRYPTION_KEY) exits 0, and `audit verify` passes on it.
4. A gateway starts on the restored DATA_DIR. `store restore --force`
   meanwhile refuses (the data directory's lock) and moves nothing. Every
   grant signed in before the backup, and the bearer, call as their own
   person. The gateway stops; `audit verify` passes again over more entries:
   its new entries continue the restored chain.

It prints the backup's size, how long it took while the clients called,
and how many calls failed meanwhile (expected: 0).

Usage (root of the repository; Gitea started by tests/e2e/gitea.sh; the
gateway listens on the fixture's gateway_url):

    AEGIS_BIN=target/release/aegis-gitea-mcp python3 tests/upgrade/restore_drill.py

Needs `pip install mcp==2.3.0` (httpx2, for the sign-ins). Exits 1 on any
FAIL, with the gateways' logs; its files stay in the
/tmp/aegis-restore-drill.* directory it prints. See tests/upgrade/README.md.
"""

import argparse
import collections
import hashlib
import json
import os
import re
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
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "replicas"))
sys.path.insert(0, os.path.join(TESTS, "e2e"))
import chaos  # noqa: E402 (people(), sign_in_grants(), classify())
from loadkit import CallLoad, Processes, check, health_json, run_binary, stepper  # noqa: E402
from gateway import audit_verify, gateway_binary, gateway_log, load_fixture, mcp_tool_call, start_gateway, stop_gateway  # noqa: E402

step = stepper("restore-drill")


def arguments():
    parser = argparse.ArgumentParser(description="A restore drill on SQLite (tests/upgrade/README.md).")
    parser.add_argument("--clients", type=int, default=50, help="MCP clients calling during the backup (default 50)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between one client's calls, ±20%% (default 1.0)")
    parser.add_argument("--people", type=int, default=4, help="people signed in (alice, then Gitea users chaos-1...) (default 4)")
    parser.add_argument("--grants", type=int, default=3, help="grants per person (default 3)")
    parser.add_argument("--warmup", type=float, default=3, help="seconds of calls before the backup (default 3)")
    parser.add_argument("--after", type=float, default=2, help="seconds of calls after it (default 2)")
    args = parser.parse_args()
    check(args.clients >= 2 and args.interval > 0, "--clients >= 2, --interval > 0")
    check(1 <= args.people <= 20 and args.grants >= 1, "--people 1..20, --grants >= 1")
    return args


def preflight():
    try:
        fixture = load_fixture()
    except OSError as err:
        raise AssertionError("no Gitea fixture (tests/e2e/gitea.sh start; AEGIS_E2E_DIR): %s" % err)
    binary = gateway_binary()
    check(os.access(binary, os.X_OK), "no gateway binary at %s (set AEGIS_BIN)" % binary)
    done = subprocess.run([binary, "store", "--help"], capture_output=True, text=True, timeout=30)
    check(done.returncode == 0 and "backup" in done.stdout and "restore" in done.stdout,
          "%s has no `store backup` / `store restore`: %s" % (binary, (done.stdout + done.stderr).strip()[-300:]))
    try:
        with urllib.request.urlopen(fixture["api_url"].rstrip("/") + "/version", timeout=5) as response:
            check(response.status == 200, "Gitea: %s" % response.status)
    except (urllib.error.URLError, OSError) as err:
        raise AssertionError("Gitea does not answer at %s (tests/e2e/gitea.sh start): %s" % (fixture["gitea_url"], err))
    return fixture, binary


def snapshot(directory, skip=("gateway.log",)):
    """Every file and folder under `directory`: {relative path: (size, SHA-256) or 'dir'}."""
    out = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), directory)] = "dir"
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, directory)
            if relative in skip:
                continue
            with open(path, "rb") as f:
                out[relative] = (os.path.getsize(path), hashlib.sha256(f.read()).hexdigest())
    return out


def entries_verified(text):
    """The N of `ok: N entries verified`."""
    found = re.search(r"ok: (\d+) entr", text)
    return int(found.group(1)) if found else None


def main():
    args = arguments()
    started = time.monotonic()
    try:
        fixture, binary = preflight()
    except AssertionError as err:
        step("FAIL before starting: %s" % err)
        sys.exit(1)
    os.environ["AEGIS_BIN"] = binary  # gateway.py's start_gateway and audit_verify
    run_dir = tempfile.mkdtemp(prefix="aegis-restore-drill.")
    step("run dir %s; binary %s; %d clients, a call every %.1f s each" % (run_dir, binary, args.clients, args.interval))
    processes = Processes()  # stops the gateways on a failure, SIGTERM or SIGINT
    drill = Drill(args, fixture, binary, run_dir, processes)
    try:
        drill.run()
    except BaseException as err:  # noqa: BLE001 (the report says what broke, then everything stops)
        if isinstance(err, SystemExit) and not err.code:
            raise
        drill.result("the drill ran to its end: %s: %s" % (type(err).__name__, err), False)
    finally:
        processes.stop_all()
    failed = [text for text, passed in drill.results if not passed]
    if failed:
        for name in ("original", "restored"):
            log = gateway_log(os.path.join(run_dir, name), limit=6000)
            if log:
                sys.stdout.write("--- the gateway on the %s DATA_DIR (%s/gateway.log), its end\n%s\n" % (name, os.path.join(run_dir, name), log))
    step("wall time %.0f s; files in %s" % (time.monotonic() - started, run_dir))
    if failed:
        step("FAILED: %d check(s)" % len(failed))
        sys.exit(1)
    step("PASS: a backup taken under load restores, and every grant in it works")


class Drill:
    def __init__(self, args, fixture, binary, run_dir, processes):
        self.args = args
        self.fixture = fixture
        self.binary = binary
        self.run_dir = run_dir
        self.processes = processes
        self.results = []
        self.gateway = fixture["gateway_url"].rstrip("/")
        self.port = urllib.parse.urlparse(self.gateway).port
        self.original = os.path.join(run_dir, "original")
        self.restored = os.path.join(run_dir, "restored")
        self.backup = os.path.join(run_dir, "backup")
        self.bearer = "drill-" + secrets.token_hex(24)
        self.audit_key = secrets.token_hex(24)
        self.extra = {
            "MCP_BEARER_TOKEN": self.bearer,
            "AUDIT_HMAC_KEY": self.audit_key,
            "TOKEN_ENCRYPTION_KEY": secrets.token_urlsafe(32),
            # 50 clients on 127.0.0.1, half of them with the bearer.
            "RATE_LIMIT_PER_IP": "1000000",
            "RATE_LIMIT_PER_TOKEN": "1000000",
        }

    def result(self, text, passed):
        self.results.append((text, passed))
        step("%s %s" % ("PASS" if passed else "FAIL", text))

    def settings(self, data_dir):
        """The gateway's settings (as start_gateway gives them) for a CLI command on `data_dir`."""
        fixture = self.fixture
        return {
            "GITEA_URL": fixture["gitea_url"].rstrip("/"),
            "GITEA_TOKEN": fixture["admin"]["token"],
            "PUBLIC_BASE_URL": self.gateway,
            "DATA_DIR": data_dir,
            "GITEA_OAUTH_CLIENT_ID": fixture["oauth"]["client_id"],
            "GITEA_OAUTH_CLIENT_SECRET": fixture["oauth"]["client_secret"],
            "GITEA_OAUTH_READ_CLIENT_ID": fixture["oauth_read"]["client_id"],
            "GITEA_OAUTH_READ_CLIENT_SECRET": fixture["oauth_read"]["client_secret"],
            **self.extra,
        }

    def store(self, args, data_dir):
        """`$AEGIS_BIN store ARGS` with the gateway's settings on `data_dir`, printed: (exit, output, seconds)."""
        code, out, err, seconds = run_binary(self.binary, ["store", *args], self.settings(data_dir))
        text = (out + err).strip()
        step("`store %s` (DATA_DIR %s): exit %d in %.2f s\n    %s" % (
            " ".join(a.replace(self.run_dir, "RUN") for a in args), data_dir.replace(self.run_dir, "RUN"), code, seconds,
            "\n    ".join(text.splitlines()) or "(no output)"))
        return code, text, seconds

    def start(self, data_dir):
        process = start_gateway(self.fixture, data_dir, extra_env=self.extra)
        self.processes.add("gateway", process)
        return process

    def run(self):
        os.makedirs(self.original)
        gateway = self.start(self.original)
        step("gateway on SQLite at %s (DATA_DIR RUN/original)" % self.gateway)
        persons = chaos.people(self.fixture, self.args.people)
        t = time.monotonic()
        credentials = [{"label": "bearer", "token": self.bearer, "login": self.fixture["admin"]["login"], "mode": "bearer"}]
        credentials += chaos.sign_in_grants(self.gateway, persons, self.args.grants)
        step("%d grants of %d people signed in in %.1f s" % (len(credentials) - 1, len(persons), time.monotonic() - t))

        load = CallLoad(self.port, "127.0.0.1:%d" % self.port, credentials, self.args.clients, self.args.interval,
                        chaos.classify, served_default="gateway")
        bad = [(credentials[c.cred]["label"], c.kind) for c in load.probe() if c.kind != "ok"]
        check(not bad, "every credential answers as its own user before the load: %s" % bad)
        load.start()
        time.sleep(self.args.warmup)
        began = load.now()
        code, output, seconds = self.store(["backup", self.backup], self.original)
        ended = load.now()
        time.sleep(self.args.after)
        calls = load.stop()
        during = [c for c in calls if c.t0 <= ended and c.t1 >= began]
        failed_during = [c for c in during if c.kind != "ok"]
        failed = [c for c in calls if c.kind != "ok"]
        self.result("`store backup` exits 0 and says what it wrote, while %d clients call" % self.args.clients,
                    code == 0 and self.backup in output)
        self.check_backup_folder()
        size = sum(os.path.getsize(os.path.join(self.backup, f)) for f in os.listdir(self.backup))
        print("\nbackup: %d bytes in %d files, %.2f s while %d clients called; %d calls overlapped it, %d failed "
              "(in all %d calls, %d failed: %s)\n" % (
                  size, len(os.listdir(self.backup)), seconds, self.args.clients, len(during), len(failed_during),
                  len(calls), len(failed), chaos.kinds_text(collections.Counter(c.kind for c in failed))))
        self.result("0 failed calls during the backup (%d overlapped it) and 0 in all (%d calls)" % (len(during), len(calls)),
                    not failed_during and not failed)

        stop_gateway(gateway)
        step("the gateway stopped (exit %s)" % gateway.returncode)
        before = snapshot(self.original)
        code, output, _ = self.store(["restore", self.backup], self.original)
        after = snapshot(self.original)
        changed = sorted(set(before) ^ set(after)) + sorted(k for k in before if k in after and before[k] != after[k])
        self.result("`store restore` into the original DATA_DIR without --force refuses, names --force, changes nothing%s" % (
            "" if not changed else " (changed: %s)" % changed), code != 0 and "--force" in output and not changed)

        code, output, _ = self.store(["restore", self.backup], self.restored)
        restored_files = sorted(os.listdir(self.restored)) if os.path.isdir(self.restored) else []
        self.result("`store restore` into a fresh DATA_DIR exits 0 (it holds %s)" % ", ".join(restored_files),
                    code == 0 and "aegis.db" in restored_files and "audit.log" in restored_files)
        verified = self.verify("the restored DATA_DIR's audit log verifies")
        manifest = self.manifest or {}
        if verified is not None and manifest.get("audit_last_seq") is not None:
            self.result("it holds the backup's chain: %d entries, the manifest's last sequence number %s" % (
                verified, manifest.get("audit_last_seq")), verified == manifest.get("audit_last_seq"))

        gateway = self.start(self.restored)
        step("a gateway on the restored DATA_DIR (RUN/restored)")
        before = snapshot(self.restored, skip=("gateway.log", "aegis.db", "aegis.db-wal", "aegis.db-shm"))
        code, output, _ = self.store(["restore", "--force", self.backup], self.restored)
        after = snapshot(self.restored, skip=("gateway.log", "aegis.db", "aegis.db-wal", "aegis.db-shm"))
        moved = sorted(k for k in set(after) - set(before))
        status, _ = health_json(self.port)
        self.result("`store restore --force` while a gateway runs on that DATA_DIR refuses (the lock) and moves nothing%s; /health %s" % (
            " (new: %s)" % moved if moved else "", status),
            code != 0 and not moved and os.path.exists(os.path.join(self.restored, "aegis.db")) and status == 200
            and ("running" in output or "lock" in output))

        wrong = []
        for credential in credentials:
            status, envelope = mcp_tool_call(self.gateway, credential["token"], "gitea_user_get_current")
            identity = (envelope or {}).get("identity") if status == 200 else None
            login = ((envelope or {}).get("data") or {}).get("login") if status == 200 else None
            if identity != {"login": credential["login"], "mode": credential["mode"]} or login != credential["login"]:
                wrong.append("%s: %s %s" % (credential["label"], status, str(envelope)[:200]))
        self.result("on the restored store every grant signed in before the backup (%d) and the bearer call as their own person%s" % (
            len(credentials) - 1, "; " + "; ".join(wrong) if wrong else ""), not wrong)
        stop_gateway(gateway)
        step("the gateway on the restored DATA_DIR stopped (exit %s)" % gateway.returncode)
        again = self.verify("the restored chain verifies with the new gateway's entries")
        if verified is not None and again is not None:
            self.result("the new gateway's entries continue the restored chain (%d → %d entries)" % (verified, again), again > verified)

    def check_backup_folder(self):
        """manifest.json, aegis.db and the audit log, each as the manifest says."""
        self.manifest = None
        names = sorted(os.listdir(self.backup)) if os.path.isdir(self.backup) else []
        problems = []
        try:
            with open(os.path.join(self.backup, "manifest.json")) as f:
                self.manifest = json.load(f)
        except (OSError, ValueError) as err:
            problems.append("manifest.json: %s" % err)
        listed = {}
        for entry in (self.manifest or {}).get("files", []):
            listed[entry.get("name")] = entry
            path = os.path.join(self.backup, str(entry.get("name")))
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            except OSError as err:
                problems.append("%s: %s" % (entry.get("name"), err))
                continue
            if os.path.getsize(path) != entry.get("bytes") or digest != entry.get("sha256"):
                problems.append("%s is not as the manifest says (%d bytes, %s)" % (entry.get("name"), os.path.getsize(path), digest[:12]))
        for needed in ("manifest.json", "aegis.db", "audit.log"):
            if needed not in names:
                problems.append("no %s" % needed)
        unlisted = [n for n in names if n != "manifest.json" and n not in listed]
        if unlisted:
            problems.append("not in the manifest: %s" % unlisted)
        mode = os.stat(self.backup).st_mode & 0o777 if os.path.isdir(self.backup) else 0
        manifest = self.manifest or {}
        self.result("the backup folder (mode %o) holds %s, each file as manifest.json says (schema %s, audit's last seq %s, by %s)%s" % (
            mode, ", ".join(names), manifest.get("schema"), manifest.get("audit_last_seq"), manifest.get("binary_version"),
            "; " + "; ".join(problems) if problems else ""), not problems and mode == 0o700)

    def verify(self, text):
        """`audit verify` of the restored DATA_DIR: the entries verified, or None."""
        try:
            line = audit_verify(self.restored, self.audit_key)
        except AssertionError as err:
            self.result("%s: %s" % (text, err), False)
            return None
        self.result("%s: %s" % (text, line), True)
        return entries_verified(line)


if __name__ == "__main__":
    main()
