#!/usr/bin/env python3
"""The Python parts of tests/containers/run.sh, against the compose stack it
brought up (the gateway container on 127.0.0.1:8080, Gitea's container on
gitea.localhost:3000).

`signin`: the official Python MCP SDK's OAuth client (`mcp==2.3.0`) signs in
to the gateway: discovery, dynamic registration as a public client with a
loopback redirect listener, PKCE. Its authorization URL goes to headless
Chromium (Debian's `/usr/bin/chromium`, driven by Playwright), where the
person approves on the gateway's consent page and signs in at the real Gitea
(login, then grant). With the session: `tools/list`, `tools/call
gitea_user_get_current` answered by Gitea as that person, and Gitea's 403 for
an admin-only operation. The browser walk and the session checks are the
ones tests/browser/ and tests/e2e/ use (`common.py`, `sdk_common.py`), given a
fixture.json that describes this stack. Screenshots go to
`$AEGIS_ARTIFACTS_DIR/containers-<label>/`.

    ALICE_PASSWORD=... stack.py signin --gateway URL --gitea URL --login alice --label sqlite

`drain`: a request in flight when the container gets SIGTERM is answered. A
POST /mcp (initialize, with `$MCP_BEARER_TOKEN`) sends its headers and part
of its body; then SIGTERM; a new connection is told `503 draining` (or
refused, once the 2 s drain is over) while the old one is still served; the
rest of the body goes out; the answer is a 200 with the initialize result;
the container exits with code 0 (not SIGKILLed), and logged "shutting down".
The signal comes from `podman stop`, as `docker compose stop` sends it.

    MCP_BEARER_TOKEN=... stack.py drain --gateway URL --container NAME

Exit 0 on success, 1 with the reason otherwise.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree


def signin(args):
    password = os.environ["ALICE_PASSWORD"]
    # tests/browser/common.py reads $AEGIS_E2E_DIR/fixture.json when imported:
    # one that describes this stack.
    fixture_dir = tempfile.mkdtemp(prefix="aegis-containers-fixture.")
    with open(os.path.join(fixture_dir, "fixture.json"), "w") as f:
        json.dump({"gateway_url": args.gateway, "gitea_url": args.gitea, "user": {"login": args.login, "password": password}}, f)
    os.environ["AEGIS_E2E_DIR"] = fixture_dir
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))

    import httpx2
    from common import ARTIFACTS, CHROMIUM, GATEWAY, Browser, ClientListener, close_listeners, consent_and_sign_in, prepare_artifacts
    from gateway import check, stepper
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
    from playwright.sync_api import sync_playwright
    from sdk_common import MemoryStorage, check_session_as

    step = stepper("containers-%s" % args.label)
    user = {"login": args.login, "password": password}
    client_name = "Python MCP SDK in Chromium (containers, %s) %s" % (args.label, secrets.token_hex(3))
    shots = prepare_artifacts(os.path.join(ARTIFACTS, "containers-%s" % args.label))

    # Playwright's sync API cannot run inside the SDK's asyncio loop: the
    # browser lives in a thread of its own.
    browser_thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="chromium")
    state = {}

    def start_browser():
        state["playwright"] = sync_playwright().start()
        state["browser"] = Browser(state["playwright"], shots, step)
        state["context"] = state["browser"].context()

    def stop_browser():
        try:
            if "browser" in state:
                state["browser"].close()
        finally:
            if "playwright" in state:
                state["playwright"].stop()

    def approve(url, listener):
        page = state["browser"].page(state["context"])
        seen = consent_and_sign_in(state["browser"], page, url, client_name, user, "sign-in", listener)
        page.close()
        return seen

    listener = ClientListener()
    storage = MemoryStorage()
    sign_ins = []

    async def redirect_handler(url):
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
        check(url.startswith(GATEWAY + "/authorize?"), "the SDK sends the person to the gateway's /authorize: %s" % url.split("?")[0])
        check(query.get("resource") == GATEWAY + "/mcp", "resource: %s" % query.get("resource"))
        check(query.get("code_challenge_method") == "S256", "PKCE S256")
        step("the SDK hands its authorization URL to Chromium (scope %r)" % query.get("scope"))
        listener.reset()
        seen = await asyncio.wrap_future(browser_thread.submit(approve, url, listener))
        sign_ins.append(seen)
        state["state"] = query.get("state")

    async def callback_handler():
        captured = dict(listener.captured)
        check(captured.get("state") == state.get("state"), "the client's state came back")
        check(captured.get("iss") == GATEWAY, "iss is the gateway: %s" % captured.get("iss"))
        check(captured.get("code", "").startswith("agm_"), "the client got a code: %s" % sorted(captured))
        return AuthorizationCodeResult(code=captured["code"], state=captured["state"], iss=captured["iss"])

    provider = OAuthClientProvider(
        server_url=GATEWAY + "/mcp",
        client_metadata=OAuthClientMetadata(
            client_name=client_name,
            redirect_uris=[listener.redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def scenario():
        http = httpx2.AsyncClient(auth=provider, timeout=60)
        async with http, streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                check(len(sign_ins) == 1, "one sign-in: %s" % sign_ins)
                check(sign_ins[0] in (["login"], ["login", "grant"]), "Chromium signed in at Gitea: %s" % sign_ins[0])
                tokens = storage.tokens
                check(tokens is not None and tokens.access_token.startswith("agm_"), "the SDK holds the gateway's tokens")
                step("signed in: consent -> Gitea %s -> the client's listener; client %s" % (" -> ".join(sign_ins[0]), storage.client_info.client_id))
                await check_session_as(session, user, step)

    began = time.monotonic()
    failed = None
    try:
        browser_thread.submit(start_browser).result()
        step("Chromium %s (%s); screenshots in %s" % (state["browser"].browser.version, CHROMIUM, shots))
        asyncio.run(asyncio.wait_for(scenario(), 240))
    except BaseException as error:  # noqa: BLE001 - reported below
        failed = error
        traceback.print_exc()
        if "browser" in state:
            try:
                browser_thread.submit(state["browser"].shot_on_failure, "signin").result(timeout=60)
            except Exception:  # noqa: BLE001
                pass
    finally:
        try:
            browser_thread.submit(stop_browser).result(timeout=60)
        finally:
            browser_thread.shutdown(wait=True)
            close_listeners()
            shutil.rmtree(fixture_dir, ignore_errors=True)
    if failed is not None:
        step("FAIL: %s: %s" % (type(failed).__name__, failed))
        return 1
    step("PASS in %.1f s" % (time.monotonic() - began))
    return 0


def podman(*args, check=True):
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=60, check=check)


def drain(args):
    started = time.monotonic()

    def say(message):
        print("[drain %6.2f s] %s" % (time.monotonic() - started, message), flush=True)

    def fail(message):
        raise SystemExit("drain: FAIL: " + message)

    url = urllib.parse.urlsplit(args.gateway)
    address = (url.hostname, url.port)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "drain", "version": "0"}},
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\n"
        "Host: %s:%d\r\n"
        "Authorization: Bearer %s\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        "Content-Length: %d\r\n"
        "\r\n" % (url.hostname, url.port, os.environ["MCP_BEARER_TOKEN"], len(body))
    ).encode()
    conn = socket.create_connection(address, timeout=30)
    conn.sendall(head + body[:20])
    time.sleep(0.5)
    say("a POST /mcp is in flight (headers and 20 of %d body bytes sent)" % len(body))

    # `podman stop` sends the container's stop signal (SIGTERM) and, as an
    # operator's stop, keeps `restart: unless-stopped` from starting it again;
    # it sends SIGKILL only after 15 s.
    pid = int(podman("inspect", "--format", "{{.State.Pid}}", args.container).stdout.strip())
    stopper = subprocess.Popen(["podman", "stop", "-t", "15", args.container], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    signalled = time.monotonic()
    say("podman stop: SIGTERM to %s" % args.container)
    time.sleep(1.0)
    # (podman reports a container it is stopping as not running: the
    # gateway's process, seen from the host, tells.)
    if not os.path.exists("/proc/%d" % pid):
        fail("the gateway exited with a request in flight")
    state = podman("inspect", "--format", "{{.State.Status}}", args.container).stdout.strip()
    say("the gateway (pid %d on the host) still runs, draining; podman says %r" % (pid, state))
    try:
        probe = socket.create_connection(address, timeout=5)
    except OSError as err:
        say("a new connection is refused: the drain is over (%s)" % type(err).__name__)
    else:
        # During SHUTDOWN_DRAIN_SECONDS (2) a new connection is answered,
        # and told the gateway is draining; after it, through the port
        # forward, it is closed without an answer. Never a 200.
        probe.settimeout(5)
        try:
            # The gateway's own Host: another is a 421 whatever the state.
            probe.sendall(("GET /health/live HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % address).encode())
            answer = probe.recv(200)
        except OSError:
            answer = b""
        probe.close()
        if answer.startswith(b"HTTP/1.1 503") and b'"draining"' in answer:
            say("a new connection is told 503 draining")
        elif answer.startswith(b"HTTP/"):
            fail("a new connection was served as usual after SIGTERM: %r" % answer[:60])
        else:
            say("a new connection is not served: the drain is over (closed without an answer)")

    conn.sendall(body[20:])
    chunks = []
    while True:
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            fail("no complete answer to the request in flight")
        if not chunk:
            break
        chunks.append(chunk)
        if b"\r\n\r\n" in b"".join(chunks):
            raw = b"".join(chunks)
            headers, _, rest = raw.partition(b"\r\n\r\n")
            length = [int(line.split(b":", 1)[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if length and len(rest) >= length[0]:
                break
    conn.close()
    raw = b"".join(chunks)
    status_line = raw.split(b"\r\n", 1)[0].decode(errors="replace")
    if not status_line.startswith("HTTP/1.1 200"):
        fail("the request in flight got %r" % status_line)
    text = raw.partition(b"\r\n\r\n")[2].decode(errors="replace")
    if '"protocolVersion"' not in text or '"result"' not in text:
        fail("the answer is not an initialize result: %s" % text[:300])
    say("the request in flight was answered: %s, an initialize result" % status_line)

    try:
        out, err = stopper.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        stopper.kill()
        fail("podman stop did not return")
    took = time.monotonic() - signalled
    if stopper.returncode != 0:
        fail("podman stop: %s" % err.strip())
    state = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", args.container).stdout.split()
    if state != ["exited", "0"]:
        fail("the container's state and exit code are %s (137 would be SIGKILL after the stop timeout)" % state)
    if took > 12:
        fail("the container took %.1f s to stop: a 2 s drain and one short answer should take less" % took)
    logs = podman("logs", "--tail", "20", args.container).stderr + podman("logs", "--tail", "20", args.container).stdout
    if "shutting down" not in logs:
        fail("the log has no 'shutting down' line: %s" % logs[-1000:])
    say("exited with code 0, %.1f s after SIGTERM; the log says 'shutting down'" % took)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("signin")
    s.add_argument("--gateway", required=True)
    s.add_argument("--gitea", required=True)
    s.add_argument("--login", required=True)
    s.add_argument("--label", required=True)
    d = sub.add_parser("drain")
    d.add_argument("--gateway", required=True)
    d.add_argument("--container", required=True)
    args = ap.parse_args()
    return signin(args) if args.command == "signin" else drain(args)


if __name__ == "__main__":
    sys.exit(main())
