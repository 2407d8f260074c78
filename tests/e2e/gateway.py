"""What the end-to-end scripts share: the fixture, starting the gateway binary
as a confidential OAuth client of the seeded Gitea, and a raw `/mcp` call.

Standard library only, so any script can import it (`tests/e2e/oauth_signin.py`
next to it; `tests/browser/pages_e2e.py` adds this directory to `sys.path`).

- `load_fixture()` reads `$AEGIS_E2E_DIR/fixture.json` (default
  `/tmp/aegis-e2e`), written by `tests/e2e/gitea.sh start`.
- `start_gateway(fixture, data_dir, database_url=None, extra_env=None,
  max_open_files=None)` runs
  `$AEGIS_BIN serve` (default `target/debug/aegis-gitea-mcp`) on the
  fixture's `gateway_url` with a fresh `TOKEN_ENCRYPTION_KEY`, its store in
  `data_dir` (SQLite) or at `database_url` (PostgreSQL), its log in
  `data_dir/gateway.log`, and waits for `/health`.
- `stop_gateway(process)`, `gateway_log(data_dir)`.
- `run_against_gateway(fixture, prefix, step, main, extra_env=None)`: a
  script's whole run: a gateway in a fresh data dir (`DATABASE_URL` from the
  environment), `asyncio.run(main())`, `PASS`, or `FAIL` with the gateway's
  log; the gateway is stopped either way.
- `mcp_tool_call(gateway_url, token, name, arguments=None, path="/mcp")`: a
  stateless JSON-RPC `tools/call` at the MCP URL `path` with
  `Authorization: Bearer token`; returns `(status, envelope)` on 200 or
  `(status, WWW-Authenticate)` otherwise.
"""

import asyncio
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def e2e_dir():
    return os.environ.get("AEGIS_E2E_DIR", "/tmp/aegis-e2e")


def load_fixture():
    with open(os.path.join(e2e_dir(), "fixture.json")) as f:
        return json.load(f)


def gateway_binary():
    return os.environ.get("AEGIS_BIN", os.path.join(ROOT, "target", "debug", "aegis-gitea-mcp"))


def gateway_log(data_dir, limit=20000):
    try:
        with open(os.path.join(data_dir, "gateway.log"), errors="replace") as f:
            return f.read()[-limit:]
    except OSError:
        return ""


def _healthy(url):
    try:
        with urllib.request.urlopen(url + "/health", timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_gateway(fixture, data_dir, database_url=None, extra_env=None, max_open_files=None):
    """Starts the gateway on the fixture's gateway_url (the seeded Gitea
    application's redirect base) and returns the process once /health
    answers. Raises AssertionError (with the log printed) otherwise.
    `max_open_files` sets the process's RLIMIT_NOFILE (soft and hard)."""
    gateway = fixture["gateway_url"].rstrip("/")
    port = urllib.parse.urlparse(gateway).port
    if _healthy(gateway):
        raise AssertionError("something already answers at %s: stop it first" % gateway)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RUST_LOG": os.environ.get("RUST_LOG", "info"),
        "GITEA_URL": fixture["gitea_url"].rstrip("/"),
        "GITEA_TOKEN": fixture["admin"]["token"],
        "MCP_PORT": str(port),
        "PUBLIC_BASE_URL": gateway,
        "DATA_DIR": data_dir,
        "GITEA_OAUTH_CLIENT_ID": fixture["oauth"]["client_id"],
        "GITEA_OAUTH_CLIENT_SECRET": fixture["oauth"]["client_secret"],
        "TOKEN_ENCRYPTION_KEY": secrets.token_urlsafe(32),
        # A scripted person signs in far faster than a real one: the
        # default (20 a minute per IP) is not what these tests are about.
        "RATE_LIMIT_SIGN_INS_PER_IP": "600",
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    env.update(extra_env or {})
    log = open(os.path.join(data_dir, "gateway.log"), "w")
    limit = None
    if max_open_files:
        import resource

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))

    process = subprocess.Popen(
        [gateway_binary(), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data_dir, preexec_fn=limit
    )
    log.close()
    for _ in range(200):
        if _healthy(gateway):
            return process
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    process.wait()
    print(gateway_log(data_dir))
    raise AssertionError("the gateway did not start")


def run_against_gateway(fixture, prefix, step, main, extra_env=None):
    """Runs the coroutine function `main` against a fresh gateway."""
    data_dir = tempfile.mkdtemp(prefix=prefix)
    gateway = start_gateway(fixture, data_dir, database_url=os.environ.get("DATABASE_URL"), extra_env=extra_env)
    step("gateway up at %s (data in %s)" % (fixture["gateway_url"].rstrip("/"), data_dir))
    try:
        asyncio.run(main())
        step("PASS")
    except BaseException:
        step("FAIL; gateway log follows")
        sys.stdout.write(gateway_log(data_dir))
        raise
    finally:
        stop_gateway(gateway)


def stop_gateway(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def mcp_tool_call(gateway_url, token, name, arguments=None, path="/mcp"):
    """A stateless JSON-RPC tools/call at `path`: (200, envelope) or (status, WWW-Authenticate)."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments or {}}}
    ).encode()
    request = urllib.request.Request(
        gateway_url.rstrip("/") + path,
        data=body,
        method="POST",
        headers={
            "Authorization": "Bearer " + token,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            content_type = response.headers.get("content-type", "")
            text = response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("www-authenticate")
    if content_type.startswith("text/event-stream"):
        # One JSON-RPC message in the data lines of the stream.
        text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    return 200, json.loads(message["result"]["content"][0]["text"])


def check(condition, message):
    """An assertion that survives `python -O` and names what failed."""
    if not condition:
        raise AssertionError(message)


def stepper(tag):
    """A progress printer: `[tag  12.34 s] message`, timed from now."""
    started = time.monotonic()

    def step(message):
        print("[%s %6.2f s] %s" % (tag, time.monotonic() - started, message), flush=True)

    return step

