"""What the end-to-end scripts share: the fixture, starting the gateway binary
as a confidential OAuth client of the seeded Gitea, and a raw `/mcp` call.

Standard library only, so any script can import it (`tests/e2e/oauth_signin.py`
next to it; `tests/browser/pages_e2e.py` adds this directory to `sys.path`).

- `load_fixture()` reads `$AEGIS_E2E_DIR/fixture.json` (default
  `/tmp/aegis-e2e`), written by `tests/e2e/gitea.sh start`.
- `start_gateway(fixture, data_dir, database_url=None, extra_env=None,
  max_open_files=None, port=None)` runs
  `$AEGIS_BIN serve` (default `target/debug/aegis-gitea-mcp`) on the
  fixture's `gateway_url` (or on loopback `port`, behind a proxy at that
  URL: `PUBLIC_BASE_URL` stays the fixture's) with a fresh
  `TOKEN_ENCRYPTION_KEY`, its store in
  `data_dir` (SQLite) or at `database_url` (PostgreSQL), its log in
  `data_dir/gateway.log`, and waits for `/health`.
- `stop_gateway(process)`, `gateway_log(data_dir)`.
- `audit_verify(data_dir, audit_key)`: `$AEGIS_BIN audit verify` of
  `data_dir`'s audit log; its `ok:` line.
- `run_against_gateway(fixture, prefix, step, main, extra_env=None)`: a
  script's whole run: a gateway in a fresh data dir (`DATABASE_URL` from the
  environment), `asyncio.run(main())`, `PASS`, or `FAIL` with the gateway's
  log; the gateway is stopped either way.
- `mcp_tool_call(gateway_url, token, name, arguments=None, path="/mcp")`: a
  stateless JSON-RPC `tools/call` at the MCP URL `path` with
  `Authorization: Bearer token`; returns `(status, envelope)` on 200 or
  `(status, WWW-Authenticate)` otherwise. Its parts, for other HTTP
  clients: `tool_call_request(name, arguments)` (body and headers) and
  `tool_call_envelope(content_type, text)`.
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
    # Absolute: the gateway runs with its data dir as working directory.
    return os.path.abspath(os.environ.get("AEGIS_BIN", os.path.join(ROOT, "target", "debug", "aegis-gitea-mcp")))


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


def start_gateway(fixture, data_dir, database_url=None, extra_env=None, max_open_files=None, port=None, survive_file_limit=False):
    """Starts the gateway on the fixture's gateway_url (the seeded Gitea
    application's redirect base) and returns the process once /health
    answers. Raises AssertionError (with the log printed) otherwise.
    `max_open_files` sets the process's RLIMIT_NOFILE (soft and hard).
    `port`: listen on 127.0.0.1:port instead, behind a proxy that serves
    the fixture's gateway_url (which stays `PUBLIC_BASE_URL`).
    `survive_file_limit`: SIGXFSZ ignored, so a file-size limit set later
    (`resource.prlimit`, a full disk's stand-in) fails writes with EFBIG
    instead of killing the process."""
    public = fixture["gateway_url"].rstrip("/")
    port = port or urllib.parse.urlparse(public).port
    gateway = "http://127.0.0.1:%d" % port
    if _healthy(gateway):
        raise AssertionError("something already answers at %s: stop it first" % gateway)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RUST_LOG": os.environ.get("RUST_LOG", "info"),
        "GITEA_URL": fixture["gitea_url"].rstrip("/"),
        "GITEA_TOKEN": fixture["admin"]["token"],
        "MCP_PORT": str(port),
        "PUBLIC_BASE_URL": public,
        "DATA_DIR": data_dir,
        "GITEA_OAUTH_CLIENT_ID": fixture["oauth"]["client_id"],
        "GITEA_OAUTH_CLIENT_SECRET": fixture["oauth"]["client_secret"],
        "GITEA_OAUTH_READ_CLIENT_ID": fixture["oauth_read"]["client_id"],
        "GITEA_OAUTH_READ_CLIENT_SECRET": fixture["oauth_read"]["client_secret"],
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
    if max_open_files or survive_file_limit:
        import resource
        import signal

        def limit():
            if max_open_files:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))
            if survive_file_limit:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

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


def run_against_gateway(fixture, prefix, step, main, extra_env=None, pass_data_dir=False):
    """Runs `main` (a coroutine function, or a plain one) against a fresh
    gateway (with `pass_data_dir`, `main(data_dir)`)."""
    data_dir = tempfile.mkdtemp(prefix=prefix)
    gateway = start_gateway(fixture, data_dir, database_url=os.environ.get("DATABASE_URL"), extra_env=extra_env)
    step("gateway up at %s (data in %s)" % (fixture["gateway_url"].rstrip("/"), data_dir))
    try:
        done = main(data_dir) if pass_data_dir else main()
        if asyncio.iscoroutine(done):
            asyncio.run(done)
        step("PASS")
    except BaseException:
        step("FAIL; gateway log follows")
        sys.stdout.write(gateway_log(data_dir))
        raise
    finally:
        stop_gateway(gateway)


def audit_verify(data_dir, audit_key, *more_dirs):
    """`audit verify` of `data_dir`'s audit log with the HMAC key: its `ok:`
    line. With `more_dirs` (a replica set's logs), `audit verify DIR…`: one
    chain per directory, one `DIR: ok: …` line each."""
    env = {"PATH": os.environ.get("PATH", ""), "DATA_DIR": data_dir, "AUDIT_HMAC_KEY": audit_key}
    args = [data_dir, *more_dirs] if more_dirs else []
    done = subprocess.run([gateway_binary(), "audit", "verify", *args], env=env, capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    good = len(lines) == len(args or [data_dir]) and all(
        line.startswith("ok:") if not args else line.startswith("%s: ok:" % d) for line, d in zip(lines, args or [data_dir])
    )
    check(done.returncode == 0 and good, "audit verify %s: %s %s" % (args or data_dir, done.stdout, done.stderr))
    return done.stdout.strip()


def stop_gateway(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def tool_call_request(name, arguments=None):
    """The body and headers (all but `Authorization`) of a stateless JSON-RPC tools/call."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments or {}}}
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return body, headers


def tool_call_envelope(content_type, text):
    """The gateway's envelope in a 200 answer to a tools/call."""
    if content_type.startswith("text/event-stream"):
        # One JSON-RPC message in the data lines of the stream.
        text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    return json.loads(message["result"]["content"][0]["text"])


def mcp_tool_call(gateway_url, token, name, arguments=None, path="/mcp"):
    """A stateless JSON-RPC tools/call at `path`: (200, envelope) or (status, WWW-Authenticate)."""
    body, headers = tool_call_request(name, arguments)
    request = urllib.request.Request(
        gateway_url.rstrip("/") + path,
        data=body,
        method="POST",
        headers={"Authorization": "Bearer " + token, **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            content_type = response.headers.get("content-type", "")
            text = response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("www-authenticate")
    return 200, tool_call_envelope(content_type, text)


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

