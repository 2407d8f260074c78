#!/usr/bin/env python3
"""The outside security review's attacks (issue 15), and the red team's of
issue 45 (ids `R45-F1` … `R45-F9`) and issue 53 (`R53-F1` … `R53-F5`,
`R53-B`), replayed over loopback HTTP against the release binary, with the
real seeded Gitea behind it.

Each attack is a function named for what the gateway must do, tagged with
the finding's id (docs/security.md, "The outside review" and "The red team
on confirmations, policy, traces and forwarding"). It sends what the
attacker sent and checks what a caller can see: the status, the error, the
pages, the audit log on disk, whether other callers are still served, what
reached a receiver the gateway ships to (an audit sink, a trace collector,
run in this process), what Gitea logged or still holds, what the kernel
says of the gateway's end of a connection. The in-process suites (`cargo
test`) test the same rules one by one against the fake Gitea; this replay
is the built binary as an operator runs it.

The store is SQLite in a fresh data dir, or PostgreSQL when `DATABASE_URL`
is set (CI runs both). F10 (the SQLite file itself) runs on SQLite only,
and so do the attacks on what never touches the store, unless named.
`connections.py` and `big_bodies.py` beside this script hold the sockets,
the pushed repository and the proxy of the issue-53 attacks.

Usage: AEGIS_BIN=target/release/aegis-gitea-mcp tests/security/replay.py [ID…]
(reads $AEGIS_E2E_DIR/fixture.json from `tests/e2e/gitea.sh start`; needs
`pip install mcp` for httpx2; with IDs, only those findings run).
"""

import base64
import concurrent.futures
import contextlib
import http.server
import json
import os
import re
import resource
import secrets
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import httpx2

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from gateway import audit_verify, check, gateway_log, load_fixture, mcp_tool_call, start_gateway, stepper, stop_gateway  # noqa: E402
from sdk_common import Person, authorization_url, exchange, forms_of, page_session, public_client, register_client, signed_in_tokens, token_request  # noqa: E402

import big_bodies  # noqa: E402 (tests/security/, beside this script)
import connections  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
PORT = urllib.parse.urlparse(GATEWAY).port
GITEA_API = FIXTURE["api_url"].rstrip("/")
ADMIN, USER = FIXTURE["admin"], FIXTURE["user"]
REPO = FIXTURE["repos"]["org"]
DATABASE_URL = os.environ.get("DATABASE_URL")
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"
# `+`, `/` and `!` make the percent-encoded form differ from the plain one.
BEARER = "replay+" + secrets.token_urlsafe(32) + "/!"
AUDIT_KEY = secrets.token_urlsafe(32)
BASE_ENV = {
    "MCP_BEARER_TOKEN": BEARER,
    "AUDIT_HMAC_KEY": AUDIT_KEY,
    # One key for every gateway of the run: on PostgreSQL they share a store.
    "TOKEN_ENCRYPTION_KEY": secrets.token_urlsafe(32),
    # The registration quota (F4) is per client network: let loopback be a
    # proxy so each request can name its own client address.
    "FORWARDED_ALLOW_IPS": "127.0.0.1",
    # No balancer to drain for: each attack's gateway stops at once (2 s each otherwise).
    "SHUTDOWN_DRAIN_SECONDS": "0",
}
if DATABASE_URL:
    # One store for the run: every attack that signs the user in with a
    # client of its own adds one to the login's new clients of the hour,
    # which would reach OAUTH_MAX_NEW_CLIENTS_PER_LOGIN (10) long before
    # the run ends. Only R53-F1 is about that limit, and it sets its own.
    BASE_ENV["OAUTH_MAX_NEW_CLIENTS_PER_LOGIN"] = "100000"

# The gateway's log is printed when an attack fails: warnings and errors are what tells.
os.environ.setdefault("RUST_LOG", "warn")
step = stepper("security-replay")
ATTACKS = []


def attack(finding, store_free=None):
    """Registers an attack. `store_free`: what it attacks (the audit
    forwarder, the listener), when that never touches the store: it then
    runs in the SQLite run only."""

    def register(function):
        ATTACKS.append((finding, function, store_free))
        return function

    return register


@contextlib.contextmanager
def gateway(extra_env=None, data_dir=None, max_open_files=None, on_start=None, survive_file_limit=False, port=None):
    """A gateway on the fixture's URL (or on loopback `port`, its public
    URL still the fixture's); yields its data dir. `on_start` gets the
    process once it answers."""
    data_dir = data_dir or tempfile.mkdtemp(prefix="aegis-replay-")
    process = start_gateway(
        FIXTURE,
        data_dir,
        database_url=DATABASE_URL,
        extra_env={**BASE_ENV, **(extra_env or {})},
        max_open_files=max_open_files,
        survive_file_limit=survive_file_limit,
        port=port,
    )
    if on_start:
        on_start(process)
    try:
        yield data_dir
    except BaseException:
        sys.stdout.write(gateway_log(data_dir))
        raise
    finally:
        stop_gateway(process)


def bearer_call(name, arguments):
    return mcp_tool_call(GATEWAY, BEARER, name, arguments)


def audit_bytes(data_dir):
    return sum(os.path.getsize(os.path.join(data_dir, f)) for f in os.listdir(data_dir) if f.startswith("audit.log"))


def works(access_token):
    status, envelope = mcp_tool_call(GATEWAY, access_token, "gitea_user_get_current")
    return status == 200 and envelope.get("identity", {}).get("login") == USER["login"]


def raw_http(request, timeout=10):
    """Sends `request` as bytes on a fresh connection; the status code of the answer, or None."""
    with socket.create_connection(("127.0.0.1", PORT), timeout=timeout) as conn:
        conn.sendall(request.encode())
        answer = conn.recv(4096).decode(errors="replace")
    match = re.match(r"HTTP/1\.[01] (\d{3})", answer)
    return int(match.group(1)) if match else None


def many_names(count, length=250):
    names = {"owner": REPO["owner"], "repo": REPO["name"]}
    names.update({("%0" + str(length) + "d") % i: 1 for i in range(count)})
    return names


@attack("F1")
def argument_name_floods_neither_grow_the_log_nor_rotate_history_away():
    with gateway({"AUDIT_MAX_BYTES": "4096"}) as data_dir:
        status, first = bearer_call("gitea_user_get_current", {})
        check(status == 200 and first["data"]["login"] == ADMIN["login"], "the admin's call: %s" % first)
        before = audit_bytes(data_dir)
        flood = many_names(60_000)  # a 15 MB body, under the 16 MiB limit
        status, refused = bearer_call("gitea_issue_list_issues", flood)
        check(status == 200 and refused["error"]["kind"] == "invalid_arguments", "the flood: %s" % str(refused)[:300])
        for _ in range(27):
            bearer_call("gitea_issue_list_issues", many_names(1_200))
        grown = audit_bytes(data_dir) - before
        step("28 flooding calls (one of 15 MB) wrote %d bytes of audit log" % grown)
        check(grown < 28 * 4096, "the floods wrote %d bytes" % grown)
        logs = "".join(open(os.path.join(data_dir, f)).read() for f in os.listdir(data_dir) if f.startswith("audit.log"))
        check("0" * 240 not in logs, "names the schema does not know are not recorded")
        check('"seq":1,' in logs, "the first entry is still on disk after rotation")
    step(audit_verify(data_dir, AUDIT_KEY))


@attack("F2")
def a_call_with_long_argument_names_never_stops_the_next_start():
    with gateway() as data_dir:
        status, refused = bearer_call("gitea_issue_list_issues", many_names(1_200))
        check(status == 200 and refused["error"]["kind"] == "invalid_arguments", "refused: %s" % str(refused)[:300])
    biggest = max(len(line) for line in open(os.path.join(data_dir, "audit.log")))
    step("longest audit line %d bytes" % biggest)
    with gateway(data_dir=data_dir):
        status, me = bearer_call("gitea_user_get_current", {})
        check(status == 200 and "data" in me, "served after the restart: %s" % me)
    step(audit_verify(data_dir, AUDIT_KEY))


def half_open(source):
    conn = socket.socket()
    conn.bind((source, 0))
    conn.settimeout(2)
    try:
        conn.connect(("127.0.0.1", PORT))
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    except OSError:
        conn.close()
        return None
    return conn


def closed(conn):
    """True when the gateway has closed `conn` (EOF, an answer, or a reset)."""
    poller = select.poll()  # select() cannot take descriptors above 1023
    poller.register(conn, select.POLLIN)
    if not poller.poll(500):
        return False
    with contextlib.suppress(OSError):
        conn.recv(64)
    return True


@attack("F3")
def half_open_connections_leave_everyone_else_served():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    with gateway(max_open_files=1024):
        attackers, refused = [], 0
        while len(attackers) + refused < 2_000 and refused < 5:
            conn = half_open("127.0.0.2")
            if conn:
                attackers.append(conn)
            else:
                refused += 1  # the kernel's backlog is full: nobody is accepting
        check(refused < 5, "the gateway stopped accepting after %d connections" % len(attackers))
        step("%d half-open connections from 127.0.0.2 against RLIMIT_NOFILE 1024" % len(attackers))
        latencies = []
        for _ in range(200):
            started = time.monotonic()
            check(raw_http("GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % PORT, timeout=5) == 200, "/health answered")
            latencies.append(time.monotonic() - started)
        latencies.sort()
        step("/health for another client: p50 %.1f ms, p99 %.1f ms" % (1000 * latencies[100], 1000 * latencies[197]))
        status, me = bearer_call("gitea_user_get_current", {})
        check(status == 200 and "data" in me, "a tool call is served: %s" % me)
        time.sleep(11)  # past the 10 s header-read timeout
        still_open = sum(1 for c in attackers if not closed(c))
        step("after 11 s, %d of them still open" % still_open)
        check(still_open == 0, "%d half-open connections outlived the header timeout" % still_open)
        for c in attackers:
            c.close()


@attack("F4")
def one_network_cannot_lock_out_new_clients():
    network = "10.%d.%d" % (secrets.randbelow(256), secrets.randbelow(256))
    metadata = {"redirect_uris": [CLIENT_CALLBACK], "token_endpoint_auth_method": "none"}
    with gateway():
        # 32 unused registrations per /24 more than it put to use (issue 43).
        answers = [register_client(GATEWAY, metadata, "%s.%d" % (network, host)) for host in range(1, 39)]
        created = [a for a in answers if a[0] == 201]
        refused = [a for a in answers if a[0] != 201]
        step("38 registrations from %s.0/24: %d created, %d refused" % (network, len(created), len(refused)))
        check(len(created) == 32, "32 unused registrations per /24")
        for status, body in refused:
            check(status == 503 and body["error"] == "temporarily_unavailable", "at the quota: %s %s" % (status, body))
            check("within an hour" in body["error_description"], "the wait is named: %s" % body)
        status, body = register_client(GATEWAY, metadata, "192.0.2.%d" % (1 + secrets.randbelow(254)))
        check(status == 201, "another network registers: %s %s" % (status, body))
        status, body = register_client(GATEWAY, metadata, "2001:db8:%x::1" % secrets.randbelow(65536))
        check(status == 201, "an IPv6 client registers: %s %s" % (status, body))


@attack("F5")
def handler_schemes_are_refused_and_private_use_errors_wait_for_a_click():
    with gateway():
        for uri in ["ms-msdt:id", "search-ms:query=x", "smb://attacker.example/share", "view-source:https://example.com",
                    "intent://scan/#Intent;scheme=zxing;end", "jar:https://example.com/x.jar!/", "chrome://settings"]:
            status, body = register_client(GATEWAY, {"redirect_uris": [uri], "token_endpoint_auth_method": "none"})
            check(status == 400 and body["error"] == "invalid_redirect_uri", "%s: %s %s" % (uri, status, body))
        cursor = "cursor://anysphere.cursor-mcp/oauth/callback"
        status, client = register_client(GATEWAY, {"redirect_uris": [cursor], "token_endpoint_auth_method": "none"})
        check(status == 201, "a private-use scheme of an MCP client: %s %s" % (status, client))
        url, _ = authorization_url(GATEWAY, client, cursor, response_type="token")
        response = httpx2.get(url, timeout=30)
        check(response.status_code == 400 and "location" not in response.headers, "no redirect: %s" % response.status_code)
        check(cursor + "?" in response.text.replace("&amp;", "&"), "the page links back to the client")


@attack("F6")
def concurrent_refreshes_leave_one_live_pair_and_the_grace_ends():
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        first = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER)
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: token_request(GATEWAY, client, grant_type="refresh_token", refresh_token=first["refresh_token"]), range(20)))
        issued = [a.json() for a in answers if a.status_code == 200]
        live = [t for t in issued if works(t["access_token"])]
        step("20 concurrent refreshes: %d answered, %d live access token(s)" % (len(issued), len(live)))
        check(len(live) == 1, "exactly one live pair, not %d" % len(live))
        time.sleep(11)  # past the 10 s grace of the rotated-out token
        late = token_request(GATEWAY, client, grant_type="refresh_token", refresh_token=first["refresh_token"])
        check(late.status_code == 400 and late.json()["error"] == "invalid_grant", "late reuse: %s" % late.text)
        check(not works(live[0]["access_token"]), "reuse after the grace revokes the grant")


@attack("F7")
def a_cookieless_callback_does_not_cancel_someone_elses_sign_in():
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        url, verifier = authorization_url(GATEWAY, client, CLIENT_CALLBACK)
        person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
        consent = person.http.get(url)
        form = next(f for f in forms_of(consent.text) if f["action"].endswith("/authorize/consent"))
        to_gitea = person.http.post(GATEWAY + "/authorize/consent", data={**form["fields"], "decision": "approve"}, headers={"Origin": "null"})
        check(to_gitea.status_code == 303, "consent: %s" % to_gitea.status_code)
        gitea_url = to_gitea.headers["location"]
        state = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(gitea_url).query))["state"]
        stranger = httpx2.get(GATEWAY + "/oauth/callback", params={"code": "stolen", "state": state}, timeout=30)
        check(stranger.status_code in (400, 403), "the cookie-less callback is refused: %s" % stranger.status_code)
        back = person.sign_in(gitea_url)
        tokens = exchange(GATEWAY, client, back, verifier, CLIENT_CALLBACK)
        check(works(tokens["access_token"]), "the person's sign-in still completes")


@attack("F9")
def encoded_forms_of_secrets_planted_in_gitea_come_back_redacted():
    secrets_planted = [BEARER, ADMIN["token"]]
    if DATABASE_URL and urllib.parse.urlparse(DATABASE_URL).password:
        secrets_planted.append(urllib.parse.unquote(urllib.parse.urlparse(DATABASE_URL).password))
    forms = []
    for value in secrets_planted:
        raw = value.encode()
        forms += [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("="), raw.hex(),
                  urllib.parse.quote(value, safe=""), base64.b64encode(b"user:" + raw).decode()]
    body = "planted:\n" + "\n".join("- `%s`" % f for f in forms)
    admin = {"Authorization": "token " + ADMIN["token"]}
    issues = "%s/repos/%s/%s/issues" % (GITEA_API, REPO["owner"], REPO["name"])
    created = httpx2.post(issues, json={"title": "replay F9", "body": body}, headers=admin, timeout=30)
    check(created.status_code == 201, "planting the issue: %s" % created.text[:300])
    index = created.json()["number"]
    try:
        with gateway():
            status, got = bearer_call("gitea_issue_get_issue", {"owner": REPO["owner"], "repo": REPO["name"], "index": index})
            check(status == 200 and "data" in got, "the issue: %s" % str(got)[:300])
            text = json.dumps(got)
            leaked = [f for f in forms if f in text]
            check(not leaked, "encoded secrets came back: %s" % leaked)
            check(got["data"]["body"].count("[REDACTED]") >= len(forms), "each form redacted: %s" % got["data"]["body"][:400])
            step("%d encoded forms of %d secrets planted, all redacted" % (len(forms), len(secrets_planted)))
    finally:
        httpx2.delete("%s/%d" % (issues, index), headers=admin, timeout=30)


@attack("F10")
def an_empty_store_file_stops_startup():
    if DATABASE_URL:
        step("skipped: the store is PostgreSQL")
        return
    data_dir = tempfile.mkdtemp(prefix="aegis-replay-")
    open(os.path.join(data_dir, "aegis.db"), "w").close()
    try:
        with gateway(data_dir=data_dir):
            raise AssertionError("the gateway started on an empty store file")
    except AssertionError as err:
        if "did not start" not in str(err):
            raise
    log = gateway_log(data_dir)
    check("aegis.db" in log and "empty" in log, "the reason names the file: %s" % log[-500:])
    check(os.path.getsize(os.path.join(data_dir, "aegis.db")) == 0, "the file is left as it was")


@attack("F11")
def dot_segments_inside_a_full_url_are_refused_by_the_raw_tool():
    with gateway():
        for path in ["https://x/api/v1/repos/o/r/%2e%2e/%2e%2e/admin/users", "https://x/api/v1/repos/o/r/.%2E/admin/users",
                     "https://x/api/v1/repos\\..\\admin\\users", "/repos/o/r/..\\..\\admin/users"]:
            status, got = bearer_call("gitea_api_request", {"method": "GET", "path": path})
            check(status == 200 and got["error"]["kind"] == "invalid_arguments", "%s: %s" % (path, str(got)[:300]))


@attack("F12")
def a_client_registered_without_refresh_gets_no_refresh_token():
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay", grant_types=["authorization_code"])
        check(client["grant_types"] == ["authorization_code"], "registered as named: %s" % client)
        tokens = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER)
        check("refresh_token" not in tokens, "no refresh token issued: %s" % list(tokens))
        check(works(tokens["access_token"]), "the access token works")
        plain = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        check(set(plain["grant_types"]) == {"authorization_code", "refresh_token"}, "omitted means both: %s" % plain)


@attack("F13")
def hosts_that_are_not_one_valid_authority_are_refused():
    with gateway():
        check(raw_http("GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % PORT) == 200, "a valid Host")
        for head in ["Host: 127.0.0.1:evil", "Host: 127.0.0.1:%d x" % PORT, "Host: 127.0.0.1@evil.example",
                     "Host: 127.0.0.1\r\nHost: evil.example", "Host: 127.0.0.1\r\nHost: 127.0.0.1"]:
            status = raw_http("GET /health HTTP/1.1\r\n%s\r\n\r\n" % head)
            check(status in (400, 421), "%r: %s" % (head, status))
        status = raw_http("GET http://evil.example/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % PORT)
        check(status in (400, 421), "an absolute-form target for another host: %s" % status)


@attack("F15")
def metadata_documents_on_embedded_or_private_addresses_are_not_fetched():
    with gateway():
        for client_id in ["https://[::127.0.0.1]/client.json", "https://[::ffff:127.0.0.1]/client.json",
                          "https://[64:ff9b::a00:1]/client.json", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/c.json",
                          "https://[fec0::1]/client.json", "https://169.254.169.254/latest/meta-data"]:
            url, _ = authorization_url(GATEWAY, {"client_id": client_id}, "https://app.example/cb")
            response = httpx2.get(url, timeout=30)
            check(response.status_code == 400 and "location" not in response.headers, "%s: %s" % (client_id, response.status_code))


@attack("F16")
def client_names_with_bidi_or_zero_width_characters_are_refused():
    with gateway():
        for name in ["Claude\u202eedualC", "Cla\u200bude", "\u2066Cursor\u2069", "VS\ufeffCode"]:
            status, body = register_client(GATEWAY, {"client_name": name, "redirect_uris": [CLIENT_CALLBACK], "token_endpoint_auth_method": "none"})
            check(status == 400 and body["error"] == "invalid_client_metadata", "%r: %s %s" % (name, status, body))


@attack("consent")
def the_consent_page_names_the_gitea_instance_and_the_redirect_host():
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        url, _ = authorization_url(GATEWAY, client, CLIENT_CALLBACK)
        page = httpx2.get(url, timeout=30).text
        check(FIXTURE["gitea_url"].rstrip("/") in page, "the consent page names the Gitea instance")
        check("127.0.0.1:53682" in page, "and the redirect host")


def health_body():
    """/health's status and its whole answer."""
    try:
        with urllib.request.urlopen(GATEWAY + "/health", timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def health():
    """/health's status and checks."""
    code, body = health_body()
    return code, body["checks"]


def gitea_branch(method, name):
    """Creates (POST) or looks up (GET) branch `name` of the user's
    repository as the admin: the HTTP status."""
    repo = FIXTURE["repos"]["user"]
    base = "%s/repos/%s/%s/branches" % (GITEA_API, repo["owner"], repo["name"])
    headers = {"Authorization": "token " + ADMIN["token"]}
    if method == "POST":
        body = {"new_branch_name": name, "old_branch_name": repo["default_branch"]}
        return httpx2.post(base, json=body, headers=headers, timeout=30).status_code
    return httpx2.get(base + "/" + name, headers=headers, timeout=30).status_code


def delete_branch(access_token, name):
    repo = FIXTURE["repos"]["user"]
    arguments = {"owner": repo["owner"], "repo": repo["name"], "branch": name}
    return mcp_tool_call(GATEWAY, access_token, "gitea_call_write_operation", {"name": "gitea_repo_delete_branch", "arguments": arguments})


def confirmation_form(person, url):
    """The page's CSRF token, as `person` sees the page: (status, token)."""
    page = person.http.get(url)
    forms = [f for f in forms_of(page.text) if f["action"].startswith("/confirm/")]
    return page.status_code, (forms[0]["fields"]["csrf_token"] if forms else None)


@attack("I28")
def confirmations_resist_strangers_forgery_replay_altered_arguments_and_floods():
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        tokens = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")
        name = "replay-" + secrets.token_hex(3)
        check(gitea_branch("POST", name) == 201, "branch created")
        status, result = delete_branch(tokens["access_token"], name)
        check(status == 200 and result["error"]["kind"] == "confirmation_required", "the delete waits: %s" % (result,))
        url = result["error"]["confirm_url"]
        # Another person, signed in to the pages, sees nothing and decides nothing.
        stranger = page_session(GATEWAY, ADMIN)
        seen, _ = confirmation_form(stranger, url)
        # The stranger's own, valid form token (from their sign-out form).
        own = next(f["fields"]["csrf_token"] for f in forms_of(stranger.http.get(GATEWAY + "/account").text) if "csrf_token" in f["fields"])
        stolen = stranger.http.post(url, data={"csrf_token": own, "decision": "approve"}, headers={"Origin": "null"})
        check(seen == 404 and stolen.status_code == 404, "a stranger's view and approval: %s, %s" % (seen, stolen.status_code))
        # The person's own session, without its token or from another site.
        person = page_session(GATEWAY, USER)
        _, token = confirmation_form(person, url)
        forged = person.http.post(url, data={"csrf_token": "forged", "decision": "approve"}, headers={"Origin": "null"})
        cross = person.http.post(url, data={"csrf_token": token, "decision": "approve"}, headers={"Origin": "https://evil.example"})
        check(forged.status_code == 403 and cross.status_code == 403, "forged: %s, cross-site: %s" % (forged.status_code, cross.status_code))
        check(delete_branch(tokens["access_token"], name)[1]["error"]["kind"] == "confirmation_pending", "still waiting")
        check(gitea_branch("GET", name) == 200, "nothing reached Gitea")
        step("a stranger's approval, a forged token and a cross-site form: refused; the branch stays")
        approved = person.http.post(url, data={"csrf_token": token, "decision": "approve"}, headers={"Origin": "null"})
        check(approved.status_code == 303, "the person approves: %s" % approved.status_code)
        # Altered arguments are a new request; the approved call runs once.
        other = name + "-other"
        check(gitea_branch("POST", other) == 201, "second branch created")
        check(delete_branch(tokens["access_token"], other)[1]["error"]["kind"] == "confirmation_required", "other arguments: a new request")
        check(gitea_branch("GET", other) == 200, "the other branch stays")
        status, ran = delete_branch(tokens["access_token"], name)
        check(status == 200 and "error" not in ran, "the approved call runs: %s" % (ran,))
        check(gitea_branch("GET", name) == 404, "the branch is gone")
        replayed = delete_branch(tokens["access_token"], name)[1]
        check(replayed["error"]["kind"] == "confirmation_required", "a replay is a new request: %s" % (replayed,))
        step("altered arguments: a new request; the approved call ran once; its replay is a new request")
        # A flood of requests is bounded per connection: 20 pending at most
        # (two are already: the replay and the other branch).
        kinds = [delete_branch(tokens["access_token"], "flood-%d" % n)[1]["error"]["kind"] for n in range(25)]
        check(kinds == ["confirmation_required"] * 18 + ["confirmation_pending"] * 7, "the flood is bounded: %s" % kinds)
        step("25 requests from one connection: %d stored, the rest refused" % kinds.count("confirmation_required"))


def modern_delete_branch(access_token, name, retry=None):
    """Branch `name` deleted on the 2026-07-28 wire by a client that offers
    form elicitation, with `retry` (`requestState`, `inputResponses`)
    merged into the params: the JSON-RPC result."""
    repo = FIXTURE["repos"]["user"]
    params = {
        "name": "gitea_call_write_operation",
        "arguments": {"name": "gitea_repo_delete_branch", "arguments": {"owner": repo["owner"], "repo": repo["name"], "branch": name}},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "replay", "version": "1"},
        },
        **(retry or {}),
    }
    response = httpx2.post(
        GATEWAY + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers={
            "Authorization": "Bearer " + access_token,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "gitea_call_write_operation",
        },
        timeout=30,
    )
    check(response.status_code == 200, "tools/call: %s %s" % (response.status_code, response.text[:300]))
    return response.json()["result"]


def refusal_kind(result):
    check(result.get("isError") is True, "an error result: %s" % (result,))
    return json.loads(result["content"][0]["text"])["error"]["kind"]


@attack("I28-state")
def a_forged_altered_moved_or_replayed_request_state_runs_nothing():
    # Issue 28, the 2026-07-28 wire: the client echoes `requestState`, so
    # it is attacker-controlled. Each forgery must reach nothing.
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay-state")
        tokens = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")
        token = tokens["access_token"]
        name = "replay-state-" + secrets.token_hex(3)
        decoy = name + "-decoy"
        for branch in (name, decoy):
            check(gitea_branch("POST", branch) == 201, "branch %s created" % branch)
        asked = modern_delete_branch(token, name)
        check(asked.get("resultType") == "input_required", "input-required: %s" % (asked,))
        state = asked["requestState"]
        approve = {"confirm": {"action": "accept", "content": {"approve": True}}}
        payload = state.split(".")
        # The sealed body carries the confirmation id; a forger rewrites it.
        rewritten = ".".join(payload[:-2] + [base64.urlsafe_b64encode(b"\0" * 8 + b'{"c":"x","m":"form"}').decode().rstrip("="), payload[-1]])
        attempts = {
            "forged": (name, "rs2.a2lk.Zm9yZ2Vk.dGFn"),
            "rewritten body": (name, rewritten),
            "truncated": (name, state[:-4]),
            "moved to another branch": (decoy, state),
        }
        for what, (branch, sealed) in attempts.items():
            kind = refusal_kind(modern_delete_branch(token, branch, {"requestState": sealed, "inputResponses": approve}))
            check(kind == "confirmation_invalid", "%s: %s" % (what, kind))
        check(gitea_branch("GET", name) == 200 and gitea_branch("GET", decoy) == 200, "nothing reached Gitea")
        step("a forged, a rewritten, a truncated and a moved requestState: refused; both branches stay")
        ran = modern_delete_branch(token, name, {"requestState": state, "inputResponses": approve})
        check(ran.get("isError") is not True, "the genuine answer runs: %s" % (ran,))
        check(gitea_branch("GET", name) == 404, "the branch is gone")
        check(gitea_branch("POST", name) == 201, "the branch made again")
        again = refusal_kind(modern_delete_branch(token, name, {"requestState": state, "inputResponses": approve}))
        check(again == "confirmation_invalid" and gitea_branch("GET", name) == 200, "a replayed answer: %s" % again)
        step("the genuine answer ran once; replaying it (the branch made again) is refused and the branch stays")


@attack("I29")
def a_full_disk_refuses_calls_promptly_health_says_so_and_service_resumes():
    # Issue 29: with the log file of stderr on the same full disk, calls
    # were answered until stderr filled; then every one hung or died.
    started = {}
    with gateway(extra_env={"RUST_LOG": "info"}, survive_file_limit=True, on_start=lambda p: started.update(process=p)) as data_dir:
        pid = started["process"].pid
        files = [os.path.join(data_dir, name) for name in ("audit.log", "gateway.log")]
        full = max(os.path.getsize(f) for f in files) + 4096
        _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (full, hard))
        refused = 0
        for i in range(60):
            began = time.monotonic()
            try:
                status, envelope = bearer_call("gitea_user_get_current", {})
            except OSError as err:
                raise AssertionError("call %d was not answered: %s" % (i, err)) from err
            elapsed = time.monotonic() - began
            check(status == 200, "call %d: HTTP %s" % (i, status))
            check(elapsed < 5, "call %d took %.1f s" % (i, elapsed))
            if envelope.get("error", {}).get("kind") == "audit_unavailable":
                refused += 1
                code, checks = health()
                check(code == 503 and checks.get("audit") == "unwritable", "/health while full: %s %s" % (code, checks))
            else:
                check(refused == 0, "call %d ran after a refusal: %s" % (i, envelope))
            if refused == 8:
                break
        check(refused == 8, "the full disk never refused a call")
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
        code, checks = health()
        check(code == 200 and checks.get("audit") == "ok", "/health once there is room: %s %s" % (code, checks))
        status, envelope = bearer_call("gitea_user_get_current", {})
        check(status == 200 and "error" not in envelope, "a call once there is room: %s" % envelope)
    audit_verify(data_dir, AUDIT_KEY)


# The red team of issue 45 (docs/security.md, "The red team on
# confirmations, policy, traces and forwarding"): what each finding showed,
# replayed against the built binary and the real Gitea.


class Sink(http.server.ThreadingHTTPServer):
    """A receiver on loopback, in this process, for what the gateway ships:
    the audit forwarder's JSON lines, the trace exporter's OTLP protobuf.
    It keeps each body it takes; while `down` it answers 503, and it answers
    after `delay` seconds."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), SinkHandler)
        self.bodies, self.down, self.delay = [], False, 0.0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def lines(self):
        return [line for body in list(self.bodies) for line in body.decode().splitlines()]


class SinkHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(self.server.delay)
        down = self.server.down
        if not down:
            self.server.bodies.append(body)
        self.send_response(503 if down else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def sink():
    receiver = Sink()
    try:
        yield receiver
    finally:
        receiver.shutdown()
        receiver.server_close()


def rpc(token, method, params=None, path="/mcp"):
    """A stateless JSON-RPC request at the MCP URL `path`: the answer's message."""
    response = httpx2.post(
        GATEWAY + path,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
        headers={"Authorization": "Bearer " + token, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"},
        timeout=30,
    )
    check(response.status_code == 200, "%s: %s %s" % (method, response.status_code, response.text[:300]))
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def listed(token, path="/mcp"):
    """tools/list at `path`: each tool by name."""
    return {tool["name"]: tool for tool in rpc(token, "tools/list", path=path)["result"]["tools"]}


def policy_file(text):
    fd, path = tempfile.mkstemp(prefix="aegis-replay-policy-", suffix=".toml")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


WRITE = "gitea_issue_create_issue"


def writes(access_token):
    """Whether the connection may write: its write tool is listed at /mcp;
    where it is not, a call to it is unknown there (-32602), as is the
    write call tool."""
    names = listed(access_token)
    if WRITE in names:
        return True
    check("gitea_call_write_operation" not in names, "the write call tool is not listed either")
    repo = FIXTURE["repos"]["user"]
    arguments = {"owner": repo["owner"], "repo": repo["name"], "body": {"title": "replay: must not be created"}}
    refused = rpc(access_token, "tools/call", {"name": WRITE, "arguments": arguments})
    check(refused.get("error", {}).get("code") == -32602, "an unlisted write is unknown: %s" % str(refused)[:300])
    return False


def audit_lines(data_dir):
    """Every line of the audit log, oldest file first."""
    rotated = sorted((int(f.rsplit(".", 1)[1]) for f in os.listdir(data_dir) if re.fullmatch(r"audit\.log\.\d+", f)), reverse=True)
    names = ["audit.log.%d" % n for n in rotated] + ["audit.log"]
    return [line for name in names for line in open(os.path.join(data_dir, name)).read().splitlines()]


def forwarded_all(receiver, data_dir, timeout=45):
    """Waits until /health says the sink has every entry and it has as many
    as the log (the forwarder may be waiting out its retry backoff, up to
    30 s): the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        code, body = health_body()
        if body["checks"]["audit_forward"] == "ok" and body["audit_forward"]["lag_entries"] == 0 and len(receiver.lines()) >= len(audit_lines(data_dir)):
            check(code == 200 and body["audit_forward"]["missing_entries"] == 0, "/health: %s %s" % (code, body))
            return time.monotonic() - began
        time.sleep(0.1)
    raise AssertionError("the sink never caught up: %d of %d entries; %s" % (len(receiver.lines()), len(audit_lines(data_dir)), health_body()))


@attack("R45-F1", store_free="the audit forwarder")
def a_sink_down_across_rotations_and_a_restart_gets_every_entry_once():
    # With the sink down across two or more rotations, the forwarder jumped
    # from the file it was in to the live one: whole rotated files never
    # reached the sink, and /health said ok. The restart reads the cursor
    # back; the copy must be the log, line for line.
    with sink() as receiver:
        env = {"AUDIT_FORWARD_URL": receiver.url + "/ingest", "AUDIT_MAX_BYTES": "4096"}
        with gateway(env) as data_dir:
            bearer_call("gitea_user_get_current", {})
            forwarded_all(receiver, data_dir)  # the cursor is on disk, in the first file
            receiver.down = True

            def rotated():
                return sum(1 for f in os.listdir(data_dir) if f.startswith("audit.log."))

            before, calls = rotated(), 0
            while rotated() < before + 3 and calls < 300:
                bearer_call("gitea_user_get_current", {})
                calls += 1
            rotations = rotated() - before
            check(rotations >= 3, "three rotations")
            code, body = health_body()
            check(body["checks"]["audit_forward"] in ("down", "behind") and body["audit_forward"]["lag_entries"] > 0, "/health while the sink is down: %s" % body)
            step("%d calls, %d rotations with the sink at 503; /health: %s, %d entries behind" % (calls, rotations, body["checks"]["audit_forward"], body["audit_forward"]["lag_entries"]))
        with gateway(env, data_dir=data_dir):
            bearer_call("gitea_user_get_current", {})  # after the restart, the sink still down
            receiver.down = False
            waited = forwarded_all(receiver, data_dir)
            log, copy = audit_lines(data_dir), receiver.lines()
            seqs = [json.loads(line)["seq"] for line in copy]
            missing = sorted(set(range(1, len(log) + 1)) - set(seqs))
            twice = sorted({s for s in seqs if seqs.count(s) > 1})
            check(seqs == list(range(1, len(log) + 1)), "the sink got %d entries of %d; missing %s, twice %s" % (len(seqs), len(log), missing[:20], twice[:20]))
            check(copy == log, "the copy is the log, line for line")
            step("sink up: /health ok and lag 0 after %.1f s; seq 1..%d each once, as in the log" % (waited, len(log)))
    step(audit_verify(data_dir, AUDIT_KEY))
    copy_dir = tempfile.mkdtemp(prefix="aegis-replay-copy-")
    with open(os.path.join(copy_dir, "audit.log"), "w") as f:
        f.write("\n".join(copy) + "\n")
    step("the copy: " + audit_verify(copy_dir, AUDIT_KEY))


@attack("R45-F2", store_free="the audit forwarder")
def a_slow_sink_under_steady_calls_never_trips_the_lag_bound():
    # The lag was counted from when the backlog was last empty: steady calls
    # to a sink that takes each batch in 1.5 s never let it empty, so a
    # 1-minute bound refused every call after a minute. The bound's least
    # value is a minute: the calls go on for 70 s.
    with sink() as receiver:
        receiver.delay = 1.5
        with gateway({"AUDIT_FORWARD_URL": receiver.url + "/ingest", "AUDIT_FORWARD_MAX_LAG_MINUTES": "1"}):
            began, calls, seen = time.monotonic(), 0, set()
            while time.monotonic() - began < 70:
                status, envelope = bearer_call("gitea_user_get_current", {})
                check(status == 200 and "error" not in envelope, "call %d at %.0f s: %s" % (calls, time.monotonic() - began, envelope))
                code, checks = health()
                check(code == 200 and checks["audit_forward"] != "blocked", "/health at %.0f s: %s %s" % (time.monotonic() - began, code, checks))
                seen.add(checks["audit_forward"])
                calls += 1
                time.sleep(0.2)
            check("behind" in seen, "the backlog was never waiting: %s" % seen)
            step("%d calls in 70 s, none refused; /health said %s; the sink took %d entries" % (calls, "/".join(sorted(seen)), len(receiver.lines())))


TRUSTED_CALLBACK = "https://trusted.example/cb"


@attack("R45-F3")
def a_client_listing_the_trusted_uri_but_signing_in_at_its_own_only_reads():
    # `unless = { redirect_hosts }` held for any URI the client registered:
    # a client listing the trusted connector's URI beside its own took its
    # code at its own and wrote. The grant's own redirect URI decides.
    rule = '[[rule]]\nid = "writes-only-through-the-trusted-connector"\nunless = { redirect_hosts = ["trusted.example"] }\nread_only = true\n'
    with gateway({"POLICY_FILE": policy_file(rule)}):
        metadata = {"client_name": "look-alike", "redirect_uris": [TRUSTED_CALLBACK, CLIENT_CALLBACK], "token_endpoint_auth_method": "none"}
        status, client = register_client(GATEWAY, metadata)
        check(status == 201, "registration: %s %s" % (status, client))
        own = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")
        check(not writes(own["access_token"]), "signed in at its own URI, the client writes")
        trusted = signed_in_tokens(GATEWAY, client, TRUSTED_CALLBACK, USER, access="write")
        check(writes(trusted["access_token"]), "signed in at the trusted URI, it writes")
        step("signed in at its own URI: reads only (%s unknown); at the trusted URI: writes" % WRITE)


def gitea_requests(offset, sentinel):
    """The requests (`METHOD /api/v1/…`, without the query) Gitea's log
    names after byte `offset`, once `sentinel` is among them (Gitea writes
    its log a little behind)."""
    for _ in range(100):
        with open(os.path.join(FIXTURE["state_dir"], "log", "gitea.log"), errors="replace") as f:
            f.seek(offset)
            seen = [r.split("?")[0] for r in re.findall(r"router: completed (\S+ \S+)", f.read())]
        if sentinel in seen:
            return seen
        time.sleep(0.1)
    raise AssertionError("Gitea's log never named %s" % sentinel)


@attack("R45-F4")
def the_raw_tool_does_not_reach_a_route_denied_confirmed_or_disabled_by_name():
    # deny_tools, confirm_tools and DISABLED_TOOLS name operations; the raw
    # tool on the same route ran all the same. The route decides.
    rules = ('[[rule]]\nid = "no-single-issue"\ndeny_tools = ["gitea_issue_get_issue"]\n\n'
             '[[rule]]\nid = "ask-before-labels"\nconfirm_tools = ["gitea_issue_list_labels"]\n')
    with gateway({"POLICY_FILE": policy_file(rules), "DISABLED_TOOLS": "gitea_repo_get"}):
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        token = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER)["access_token"]
        log = os.path.join(FIXTURE["state_dir"], "log", "gitea.log")
        offset = os.path.getsize(log)
        base = "/repos/%s/%s" % (REPO["owner"], REPO["name"])
        cases = [(token, "GET", base + "/issues/1", "tool_disabled"), (token, "HEAD", base + "/issues/1", "tool_disabled"),
                 (token, "GET", "/api/v1" + base + "/ISSUES/1", "tool_disabled"), (token, "GET", base + "/labels", "confirmation_required"),
                 (BEARER, "GET", base, "tool_disabled")]
        for who, method, path, kind in cases:
            status, got = mcp_tool_call(GATEWAY, who, "gitea_api_request", {"method": method, "path": path})
            check(status == 200 and got.get("error", {}).get("kind") == kind, "%s %s: %s" % (method, path, str(got)[:300]))
        # A route no rule names still runs, and Gitea logs it after the others.
        status, got = mcp_tool_call(GATEWAY, token, "gitea_api_request", {"method": "GET", "path": base + "/milestones"})
        check(status == 200 and "data" in got, "a route no rule names: %s" % str(got)[:300])
        seen = gitea_requests(offset, "GET /api/v1%s/milestones" % base)
        reached = [r for r in seen if r.split(" ")[1].lower() in {("/api/v1" + base + p).lower() for p in ("/issues/1", "/labels", "")}]
        check(not reached, "reached Gitea: %s" % reached)
        step("raw GET and HEAD of a denied operation: tool_disabled; of a confirmed one: confirmation_required; of a disabled one: tool_disabled; Gitea saw none")


def ssh_public_key():
    """An ed25519 public key in OpenSSH form (random, and well formed)."""
    def field(data):
        return len(data).to_bytes(4, "big") + data

    return "ssh-ed25519 " + base64.b64encode(field(b"ssh-ed25519") + field(secrets.token_bytes(32))).decode()


@attack("R45-F5")
def writes_that_add_a_key_or_a_hook_wait_for_confirmation():
    # Under CONFIRM=destructive (the default), writes that add a credential
    # or a trigger ran at once: a deploy key is a way in, a hook a copy of
    # every push out.
    repo = FIXTURE["repos"]["user"]
    mark = "replay-r45-f5-" + secrets.token_hex(3)
    bodies = {
        "gitea_repo_create_key": {"title": mark, "key": ssh_public_key(), "read_only": False},
        "gitea_repo_create_hook": {"type": "gitea", "config": {"url": "http://127.0.0.1:9/" + mark, "content_type": "json"}, "events": ["push"], "active": False},
    }
    with gateway():
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        token = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")["access_token"]
        for name, body in bodies.items():
            arguments = {"name": name, "arguments": {"owner": repo["owner"], "repo": repo["name"], "body": body}}
            status, got = mcp_tool_call(GATEWAY, token, "gitea_call_write_operation", arguments)
            check(status == 200 and got.get("error", {}).get("kind") == "confirmation_required", "%s: %s" % (name, str(got)[:300]))
        admin = {"Authorization": "token " + ADMIN["token"]}
        for what in ("keys", "hooks"):
            found = httpx2.get("%s/repos/%s/%s/%s" % (GITEA_API, repo["owner"], repo["name"], what), headers=admin, timeout=30)
            check(found.status_code == 200 and mark not in found.text, "%s: %s %s" % (what, found.status_code, found.text[:300]))
        tools = listed(BEARER, "/mcp/all")
        for name in bodies:
            check(tools[name]["annotations"].get("destructiveHint") is True, "%s: %s" % (name, tools[name]["annotations"]))
        step("a deploy key and a hook: confirmation_required, neither in Gitea; both destructiveHint at /mcp/all")


@attack("R45-F6")
def a_team_past_the_first_page_of_memberships_still_applies():
    # The policy read one page of the person's teams (50 at most): a rule
    # about a team further down silently did not apply. The person joins
    # 55 teams of a fresh organisation; the rule names one Gitea lists
    # past the first 50.
    org = "replay-r45-" + secrets.token_hex(3)
    admin = httpx2.Client(headers={"Authorization": "token " + ADMIN["token"]}, timeout=30)
    created = admin.post(GITEA_API + "/orgs", json={"username": org})
    check(created.status_code == 201, "the organisation: %s" % created.text[:300])
    try:
        for n in range(55):
            team = admin.post("%s/orgs/%s/teams" % (GITEA_API, org), json={"name": "team-%02d" % n, "permission": "read", "units": ["repo.code"]})
            check(team.status_code == 201, "team %d: %s" % (n, team.text[:300]))
            joined = admin.put("%s/teams/%d/members/%s" % (GITEA_API, team.json()["id"], USER["login"]))
            check(joined.status_code == 204, "membership %d: %s" % (n, joined.text[:300]))
        first = httpx2.get(GITEA_API + "/user/teams", params={"limit": 50}, headers={"Authorization": "token " + USER["token"]}, timeout=30)
        on_first = {"%s/%s" % (t["organization"]["username"], t["name"]) for t in first.json()}
        later = sorted({"%s/team-%02d" % (org, n) for n in range(55)} - on_first)
        check(first.headers.get("x-total-count") and int(first.headers["x-total-count"]) >= 55 and later, "Gitea's first page: %s" % sorted(on_first)[-3:])
        rule = '[[rule]]\nid = "deep-team-read-only"\nwhen = { teams = ["%s"] }\nread_only = true\n' % later[-1]
        with gateway({"POLICY_FILE": policy_file(rule)}):
            client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
            tokens = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")
            check(not writes(tokens["access_token"]), "the rule about %s did not apply" % later[-1])
            step("%s of %s teams, not on Gitea's first page of 50: the rule applies (reads only)" % (later[-1], first.headers["x-total-count"]))
    finally:
        admin.delete("%s/orgs/%s" % (GITEA_API, org))
        admin.close()


@attack("R45-F7")
def a_rule_about_127_0_0_1_holds_for_localhost_and_ipv6_loopback():
    # redirect_hosts = ["127.0.0.1"] did not match localhost or [::1]: the
    # same machine by another name escaped the rule. Loopback is one host.
    rule = '[[rule]]\nid = "local-clients-read-only"\nwhen = { redirect_hosts = ["127.0.0.1"] }\nread_only = true\n'
    with gateway({"POLICY_FILE": policy_file(rule)}):
        for callback in ("http://localhost:53682/callback", "http://[::1]:53682/callback"):
            client = public_client(GATEWAY, callback, client_name="replay")
            tokens = signed_in_tokens(GATEWAY, client, callback, USER, access="write")
            check(not writes(tokens["access_token"]), "%s writes" % callback)
        step("clients at localhost and [::1]: read only under a rule about 127.0.0.1")


@attack("R45-F8")
def the_raw_tools_path_is_in_no_span_and_no_audit_entry():
    # The raw tool's first path segment, an argument value, was a span's
    # name and url.template (and the audit entry's route). Spans carry the
    # template the path reaches, else /{path}. The exporter speaks OTLP
    # protobuf, where strings are plain bytes: the receiver searches them.
    planted = "planted-segment-" + secrets.token_hex(3)
    cases = [("/%s/abc" % planted, "/{path}"), ("/repos/%s/%s/issues" % (REPO["owner"], planted), "/repos/{owner}/{repo}/issues")]
    with sink() as collector:
        with gateway({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}) as data_dir:
            for path, _ in cases:
                status, got = bearer_call("gitea_api_request", {"method": "GET", "path": path})
                check(status == 200 and got.get("error", {}).get("kind") not in ("invalid_arguments", "unknown_tool"), "%s: %s" % (path, str(got)[:300]))
            names = [("GET " + template).encode() for _, template in cases]
            for _ in range(100):
                spans = b"".join(collector.bodies)
                if planted.encode() in spans or all(name in spans for name in names):
                    break
                time.sleep(0.1)
            check(planted.encode() not in spans, "the planted segment is in a span: %s" % re.findall(rb"[ -~]{0,40}" + planted.encode() + rb"[ -~]{0,20}", spans)[:4])
            check(all(name in spans for name in names), "the spans name the templates: %s" % [n for n in names if n not in spans])
            log = "\n".join(audit_lines(data_dir))
            check(planted not in log, "the planted segment is in the audit log")
            routes = [e.get("route") for e in map(json.loads, log.splitlines()) if e["event"] == "tool_call_started"]
            check(routes == [template for _, template in cases], "the audit routes: %s" % routes)
            step("%d bytes of spans and the audit log: the templates %s, never %s" % (len(spans), " and ".join(t for _, t in cases), planted))


@attack("R45-F9")
def the_activity_figures_survive_a_normal_stop():
    # The figures of the last 2 s (written in batches every 2 s) were lost
    # on SIGTERM. The drain is 0 s (as BASE_ENV has it: within a 2 s drain
    # the next batch would be written anyway), so the stop comes first.
    name = "replay-r45-f9-" + secrets.token_hex(3)
    with gateway({"SHUTDOWN_DRAIN_SECONDS": "0"}) as data_dir:
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name=name)
        tokens = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER)
        for n in range(10):
            check(works(tokens["access_token"]), "call %d" % n)
    with gateway(data_dir=data_dir):
        page = page_session(GATEWAY, USER).http.get(GATEWAY + "/account").text
        shown = re.search(re.escape(name) + r" <code>.*?</code></h3>.*?(\d+) call\(s\) in 7 days", page, re.S)
        check(shown and shown.group(1) == "10", "/account after the restart: %s" % (shown.group(0)[-200:] if shown else "no activity for " + name))
        step("10 calls, SIGTERM, a restart: /account says %s call(s) for the connection" % shown.group(1))


# The red team of issue 53 (docs/security.md): what each finding showed,
# replayed against the built binary and the real Gitea. Written before
# their fixes, each failing for the reason the finding gives.

CLAUDE_CALLBACK = "https://claude.ai/api/mcp/auth_callback"


def signed_in_from(person, client, redirect_uri, address):
    """`person` signs in for `client` as from `address` (X-Forwarded-For on
    every request to the gateway): (the redirect back with its code, the
    verifier), or (None, why it was refused)."""
    url, verifier = authorization_url(GATEWAY, client, redirect_uri)
    person.http.headers["X-Forwarded-For"] = address
    person.client_callback = redirect_uri
    try:
        back = person.sign_in(url)
    except AssertionError as err:
        return None, str(err)
    if "code=" not in back:
        return None, back
    return back, verifier


@attack("R53-F1")
def one_account_cannot_fill_the_client_table():
    # One Gitea account, from one /24, registered a client and finished
    # its sign-in at Gitea 60 times: each used registration raised the
    # network's allowance by one, and the table (OAUTH_MAX_CLIENTS=60;
    # on PostgreSQL, whose one store the run shares, 60 more than it holds)
    # was full for every other network, revoked connections or not.
    network = "10.%d.%d" % (secrets.randbelow(256), secrets.randbelow(256))
    metadata = {"client_name": "replay-r53-f1", "redirect_uris": [CLIENT_CALLBACK], "token_endpoint_auth_method": "none"}
    held = clients_in_store()  # a table with room for 60 more
    # The login may connect 10 new clients (the default), beyond those it
    # connected within the hour before (PostgreSQL: the run's shared store).
    allowed = new_clients_within_the_hour(USER["login"]) + 10
    with gateway({"OAUTH_MAX_CLIENTS": str(held + 60), "OAUTH_MAX_NEW_CLIENTS_PER_LOGIN": str(allowed)}) as data_dir:
        attacker = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
        signed, refusals = 0, []
        for n in range(1, 61):
            address = "%s.%d" % (network, n)
            status, client = register_client(GATEWAY, metadata, address)
            if status != 201:
                refusals.append((n, "registration: %s %s" % (status, client)))
                continue
            back, why = signed_in_from(attacker, client, CLIENT_CALLBACK, address)
            if back:
                signed += 1
            else:
                refusals.append((n, "sign-in: " + why[:300]))
        step("OAUTH_MAX_CLIENTS=%d; 60 rounds of register and sign in as %s from %s.0/24: %d signed in, %d refused%s" % (
            held + 60, USER["login"], network, signed, len(refusals), "; the first at round %d, %s" % refusals[0] if refusals else ""))
        wrong = [] if refusals and refusals[0][0] < 60 else ["the attacker was never stopped: %d signed in, %d refused" % (signed, len(refusals))]
        others = {"192.0.2.%d": CLIENT_CALLBACK, "198.51.100.%d": CLIENT_CALLBACK, "160.79.104.%d": CLAUDE_CALLBACK}
        for pattern, callback in others.items():
            address = pattern % (1 + secrets.randbelow(254))
            status, body = register_client(GATEWAY, {"redirect_uris": [callback], "token_endpoint_auth_method": "none"}, address)
            if status != 201:
                wrong.append("/register from %s: %s %s" % (address, status, body.get("error_description", body)))
        wrong += claude_connects(ADMIN, "160.79.106.%d" % (1 + secrets.randbelow(254)))
        limited = [line for line in audit_lines(data_dir) if json.loads(line)["event"] == "registration_limited"]
        if not any(USER["login"] in line for line in limited):
            wrong.append("no registration_limited entry names %s (%d such entries)" % (USER["login"], len(limited)))
        step("after it: %s" % ("; ".join(wrong) or "3 other networks register, Claude connects, the audit log names %s" % USER["login"]))
        check(not wrong, "; ".join(wrong))


def clients_in_store():
    """The clients the store holds: none in a fresh SQLite data dir; on
    PostgreSQL (one store for the whole run) what /admin counts."""
    if not DATABASE_URL:
        return 0
    with gateway():
        page = page_session(GATEWAY, ADMIN).http.get(GATEWAY + "/admin").text
    counted = re.search(r"<p>(\d+) client\(s\)\.</p>", page)
    check(counted, "/admin counts the clients: %s" % page[-500:])
    return int(counted.group(1))


def new_clients_within_the_hour(login):
    """The clients `login` connected for the first time within the hour:
    none in a fresh SQLite data dir; on PostgreSQL (one store for the whole
    run) counted as the store counts them for OAUTH_MAX_NEW_CLIENTS_PER_LOGIN."""
    if not DATABASE_URL:
        return 0
    since = int(time.time()) - 3600
    query = ("SELECT COUNT(DISTINCT g.client_id) FROM grants g WHERE g.login = '%s' AND g.created_at >= %d "
             "AND NOT EXISTS (SELECT 1 FROM grants o WHERE o.login = g.login AND o.client_id = g.client_id AND o.created_at < %d)"
             % (login.replace("'", "''"), since, since))
    counted = subprocess.run(["psql", DATABASE_URL, "-At", "-c", query], capture_output=True, text=True, timeout=30)
    check(counted.returncode == 0, "psql counts the login's new clients: %s" % counted.stderr.strip())
    return int(counted.stdout.strip())


def claude_connects(user, address):
    """A claude.ai-style connect from `address` by `user`: registration,
    sign-in at Gitea, code for tokens, a tool call. What went wrong, if
    anything, as a list."""
    status, client = register_client(GATEWAY, {"client_name": "Claude", "redirect_uris": [CLAUDE_CALLBACK], "token_endpoint_auth_method": "none"}, address)
    if status != 201:
        return ["Claude's registration from %s: %s %s" % (address, status, client.get("error_description", client))]
    back, verifier = signed_in_from(Person(GATEWAY, CLAUDE_CALLBACK, user["login"], user["password"]), client, CLAUDE_CALLBACK, address)
    if not back:
        return ["%s's sign-in for Claude from %s: %s" % (user["login"], address, verifier)]
    code = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(back).query))["code"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CLAUDE_CALLBACK, "code_verifier": verifier, "client_id": client["client_id"]}
    tokens = httpx2.post(GATEWAY + "/token", data=form, headers={"X-Forwarded-For": address}, timeout=30)
    if tokens.status_code != 200:
        return ["Claude's token: %s %s" % (tokens.status_code, tokens.text[:300])]
    status, me = mcp_tool_call(GATEWAY, tokens.json()["access_token"], "gitea_user_get_current")
    if status != 200 or me.get("identity", {}).get("login") != user["login"]:
        return ["Claude's call: %s" % str(me)[:300]]
    return []


def more_descriptors():
    """This process's own descriptor limit raised for the attacks that hold
    hundreds of connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def a_newcomer_is_served_while_addresses_hold_every_slot(what, sources, newcomer, **gateway_args):
    """64 kept-alive idle connections from each of `sources`, each opened
    again as soon as the gateway closes it; a client from `newcomer` must
    be served within 2 s, and again 15 s later."""
    port = free_port()
    with gateway(port=port, **gateway_args):
        connections.newcomer_served_while_held(port, sources, newcomer, lambda message: step("%s: %s" % (what, message)))


def clients_that_never_read_their_answers_lose_their_connections(what):
    """Six clients with SO_RCVBUF 2048 read nothing: four ask tools/list
    at /mcp/all once (the whole answer fits the gateway's send queue in
    the kernel), two pipeline 24 asks (about 2 MiB then waits in the
    kernel, the next answer in the gateway's own buffer). Today each sits
    out the 620 s idle timer; each must be closed within 40 s."""
    port = free_port()
    with gateway(port=port):
        connections.unread_answers_closed(port, BEARER, 40, lambda message: step("%s: %s" % (what, message)))


@attack("R53-F2", store_free="the listener")
def connections_that_hold_a_slot_without_using_it_lose_it_to_one_that_would():
    # Connection slots were cheap to hold: MAX_CONNECTIONS (256, or 768
    # under RLIMIT_NOFILE 1024) is four (twelve) addresses' 64, each of
    # which asked once and then sat out the 620 s idle timer, and every
    # new client was reset; a client that reads nothing held its slot as
    # long. Three gateways on ports of their own, side by side (CI time).
    more_descriptors()
    parts = {
        "4 addresses, MAX_CONNECTIONS=256": lambda what: a_newcomer_is_served_while_addresses_hold_every_slot(
            what, ["127.0.0.%d" % n for n in range(2, 6)], "127.0.0.6", extra_env={"MAX_CONNECTIONS": "256"}),
        "12 addresses, RLIMIT_NOFILE 1024": lambda what: a_newcomer_is_served_while_addresses_hold_every_slot(
            what, ["127.0.0.%d" % n for n in range(2, 14)], "127.0.0.14", max_open_files=1024),
        "6 clients that read nothing": clients_that_never_read_their_answers_lose_their_connections,
    }
    with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
        running = {what: pool.submit(part, what) for what, part in parts.items()}
    wrong = []
    for what, future in running.items():
        try:
            future.result()
        except AssertionError as err:
            wrong.append("%s: %s" % (what, err))
    check(not wrong, "; ".join(wrong))


def tool_outcome(token, name, arguments, path="/mcp"):
    """A tools/call at `path`: `ran`, the envelope's error kind, or
    `JSON-RPC <code>` for a tool the URL does not have."""
    message = rpc(token, "tools/call", {"name": name, "arguments": arguments}, path=path)
    if "error" in message:
        return "JSON-RPC %s" % message["error"].get("code")
    envelope = json.loads(message["result"]["content"][0]["text"])
    return envelope["error"]["kind"] if "error" in envelope else "ran"


GITEA_ADMIN = {"Authorization": "token " + ADMIN["token"]}
REFUSED = ("tool_disabled", "unknown_tool", "invalid_arguments", "JSON-RPC -32602")


def comment_routes(repo, index, direct=True):
    """Each way to reach the deprecated routes of a comment on issue
    `index` (`DELETE`/`PATCH /repos/{o}/{r}/issues/{index}/comments/{id}`):
    (what, tool, arguments of the comment id, MCP URL). With `direct`, the
    raw tool on the route the rules name first, as the control."""
    owner, name = repo["owner"], repo["name"]
    base = "/repos/%s/%s" % (owner, name)
    typed = lambda cid: {"owner": owner, "repo": name, "index": index, "id": cid}  # noqa: E731
    edit = {"body": "edited through a deprecated route"}
    routes = [("raw DELETE issues/comments/{id}", "gitea_api_request", lambda cid: {"method": "DELETE", "path": "%s/issues/comments/%d" % (base, cid)}, "/mcp")] if direct else []
    return routes + [
        ("raw DELETE issues/{index}/comments/{id}", "gitea_api_request", lambda cid: {"method": "DELETE", "path": "%s/issues/%d/comments/%d" % (base, index, cid)}, "/mcp"),
        ("raw PATCH issues/{index}/comments/{id}", "gitea_api_request", lambda cid: {"method": "PATCH", "path": "%s/issues/%d/comments/%d" % (base, index, cid), "body": edit}, "/mcp"),
        ("gitea_issue_delete_comment_deprecated at /mcp/all", "gitea_issue_delete_comment_deprecated", typed, "/mcp/all"),
        ("gitea_issue_edit_comment_deprecated at /mcp/all", "gitea_issue_edit_comment_deprecated", lambda cid: {**typed(cid), "body": edit}, "/mcp/all"),
        ("gitea_call_write_operation gitea_issue_delete_comment_deprecated", "gitea_call_write_operation",
         lambda cid: {"name": "gitea_issue_delete_comment_deprecated", "arguments": typed(cid)}, "/mcp"),
        ("gitea_call_write_operation gitea_issue_edit_comment_deprecated", "gitea_call_write_operation",
         lambda cid: {"name": "gitea_issue_edit_comment_deprecated", "arguments": {**typed(cid), "body": edit}}, "/mcp"),
    ]


def writing_tokens():
    """The fixture's user signed in with write access at /mcp and at
    /mcp/all (a token works at the URL it was issued for): URL to token."""
    tokens = {}
    for path in ("/mcp", "/mcp/all"):
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        url, verifier = authorization_url(GATEWAY, client, CLIENT_CALLBACK, resource=GATEWAY + path)
        back = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"], access="write").sign_in(url)
        tokens[path] = exchange(GATEWAY, client, back, verifier, CLIENT_CALLBACK)["access_token"]
    return tokens


def attempts_on_comments(tokens, data_dir, repo, index, routes, expected):
    """Each route on a fresh comment of issue `index`, with the token of
    its MCP URL (`tokens`: URL to token): the lines of those
    that did not answer a kind in `expected`, left the comment changed, or
    (for refusals) wrote no tool_call_refused entry."""
    wrong = []
    for what, tool, arguments, path in routes:
        text = "replay R53-F3 " + secrets.token_hex(4)
        made = httpx2.post("%s/repos/%s/%s/issues/%d/comments" % (GITEA_API, repo["owner"], repo["name"], index), json={"body": text}, headers=GITEA_ADMIN, timeout=30)
        check(made.status_code == 201, "a comment: %s" % made.text[:300])
        comment = made.json()["id"]
        before = len(audit_lines(data_dir))
        outcome = tool_outcome(tokens[path], tool, arguments(comment), path)
        entries = [json.loads(line) for line in audit_lines(data_dir)[before:]]
        refusal = [e.get("error_kind") for e in entries if e["event"] == "tool_call_refused"]
        after = httpx2.get("%s/repos/%s/%s/issues/comments/%d" % (GITEA_API, repo["owner"], repo["name"], comment), headers=GITEA_ADMIN, timeout=30)
        kept = "kept" if after.status_code == 200 and after.json()["body"] == text else ("deleted" if after.status_code == 404 else "edited")
        fine = outcome in expected and kept == "kept" and (refusal or "confirmation_required" in expected)
        line = "%s: %s, comment %s, tool_call_refused %s" % (what, outcome, kept, refusal or "none")
        step(("  " if fine else "  WRONG ") + line)
        if not fine:
            wrong.append(line)
    return wrong


@attack("R53-F3")
def deprecated_alias_routes_follow_the_rules_that_name_their_operation():
    # deny_tools, DISABLED_TOOLS and CONFIRM_TOOLS naming
    # gitea_issue_delete_comment (and _edit_) did not cover Gitea's
    # deprecated routes for the same comment, /issues/{index}/comments/{id},
    # which are operations of their own. CONFIRM=off, so a route that
    # escapes the rule runs.
    repo = FIXTURE["repos"]["user"]
    issue = httpx2.post("%s/repos/%s/%s/issues" % (GITEA_API, repo["owner"], repo["name"]), json={"title": "replay R53-F3"}, headers=GITEA_ADMIN, timeout=30)
    check(issue.status_code == 201, "the issue: %s" % issue.text[:300])
    index = issue.json()["number"]
    wrong = []
    try:
        rule = '[[rule]]\nid = "comments-stay"\ndeny_tools = ["gitea_issue_delete_comment", "gitea_issue_edit_comment"]\n'
        with gateway({"POLICY_FILE": policy_file(rule), "CONFIRM": "off"}) as data_dir:
            step("deny_tools = [gitea_issue_delete_comment, gitea_issue_edit_comment], %s's connections (write):" % USER["login"])
            wrong += ["deny_tools: " + w for w in attempts_on_comments(writing_tokens(), data_dir, repo, index, comment_routes(repo, index), REFUSED)]
        with gateway({"DISABLED_TOOLS": "gitea_issue_delete_comment"}) as data_dir:
            step("DISABLED_TOOLS=gitea_issue_delete_comment, the admin bearer:")
            deletes = [r for r in comment_routes(repo, index) if "edit" not in r[0] and "PATCH" not in r[0]]
            wrong += ["DISABLED_TOOLS: " + w for w in attempts_on_comments({"/mcp": BEARER, "/mcp/all": BEARER}, data_dir, repo, index, deletes, REFUSED)]
        with gateway({"CONFIRM": "off", "CONFIRM_TOOLS": "gitea_issue_delete_comment"}) as data_dir:
            step("CONFIRM=off, CONFIRM_TOOLS=gitea_issue_delete_comment, %s's connections (write):" % USER["login"])
            deletes = [r for r in comment_routes(repo, index) if "edit" not in r[0] and "PATCH" not in r[0]]
            wrong += ["CONFIRM_TOOLS: " + w for w in attempts_on_comments(writing_tokens(), data_dir, repo, index, deletes, ("confirmation_required",))]
    finally:
        httpx2.delete("%s/repos/%s/%s/issues/%d" % (GITEA_API, repo["owner"], repo["name"], index), headers=GITEA_ADMIN, timeout=30)
    check(not wrong, "%d route(s) escaped the rule naming their operation: %s" % (len(wrong), "; ".join(wrong)))


def refusals_since(data_dir, before):
    """The tool_call_refused entries written after line `before` of the log."""
    return [e for e in (json.loads(line) for line in audit_lines(data_dir)[before:]) if e["event"] == "tool_call_refused"]


@attack("R53-F4")
def a_denied_retry_and_a_call_past_the_pending_bound_are_audited():
    # Two refusals of the confirmation gate reached no audit entry: the
    # retry of a call its person denied (confirmation_denied), and a call
    # past a connection's 20 waiting ones (confirmation_pending).
    with gateway() as data_dir:
        client = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        token = signed_in_tokens(GATEWAY, client, CLIENT_CALLBACK, USER, access="write")["access_token"]
        name = "replay-r53-f4-" + secrets.token_hex(3)
        status, asked = delete_branch(token, name)
        check(status == 200 and asked.get("error", {}).get("kind") == "confirmation_required" and asked["error"].get("confirm_url"), "the delete waits: %s" % (asked,))
        person = page_session(GATEWAY, USER)
        _, csrf = confirmation_form(person, asked["error"]["confirm_url"])
        denied = person.http.post(asked["error"]["confirm_url"], data={"csrf_token": csrf, "decision": "deny"}, headers={"Origin": "null"})
        check(denied.status_code == 303, "the person denies: %s" % denied.status_code)
        before = len(audit_lines(data_dir))
        status, retry = delete_branch(token, name)
        check(retry.get("error", {}).get("kind") == "confirmation_denied", "the retry: %s" % (retry,))
        refused = refusals_since(data_dir, before)
        step("the retry of a denied call: confirmation_denied; tool_call_refused entries: %s" % [e.get("error_kind") for e in refused])
        wrong = [] if [e.get("error_kind") for e in refused] == ["confirmation_denied"] else ["the denied retry left no tool_call_refused entry (confirmation_denied): %s" % refused]
        other = public_client(GATEWAY, CLIENT_CALLBACK, client_name="replay")
        flooding = signed_in_tokens(GATEWAY, other, CLIENT_CALLBACK, USER, access="write")["access_token"]
        kinds = [delete_branch(flooding, "%s-%d" % (name, n))[1]["error"]["kind"] for n in range(20)]
        check(kinds == ["confirmation_required"] * 20, "20 calls wait: %s" % kinds)
        before = len(audit_lines(data_dir))
        status, past = delete_branch(flooding, name + "-21")
        check(past.get("error", {}).get("kind") == "confirmation_pending", "the 21st: %s" % (past,))
        refused = refusals_since(data_dir, before)
        step("the 21st waiting call of a connection: confirmation_pending; tool_call_refused entries: %s" % [e.get("error_kind") for e in refused])
        if len(refused) != 1:
            wrong.append("the 21st call left %d tool_call_refused entries" % len(refused))
        check(not wrong, "; ".join(wrong))


@attack("R53-F5", store_free="the listener")
def a_partial_head_pipelined_behind_a_request_has_the_header_timeout():
    # The bytes of a pipelined head arrived with the request before it, so
    # the watch never saw them arrive: after the answer the connection had
    # the idle timer (620 s), not the 10 s header-read timeout. The client
    # is 127.0.0.2: 127.0.0.1 is this run's trusted proxy
    # (FORWARDED_ALLOW_IPS), whose heads have no header timer by design.
    with gateway():
        conn = connections.connect(PORT, "127.0.0.2")
        sent = time.monotonic()
        conn.sendall(connections.live_request(PORT) + b"GET /hea")
        check(connections.read_answer(conn) == 200, "the first request is answered")
        connections.wait_closed(conn, 14 - (time.monotonic() - sent))
        closed_at = time.monotonic() - sent
        conn.close()
        check(closed_at < 14, "the connection with a partial head was still open 14 s after its first byte")
        step("the partial head pipelined behind an answered request: closed %.1f s after its first byte" % closed_at)


@attack("R53-B", store_free="reading Gitea's answers with the static bearer")
def big_bodies_from_the_real_gitea_give_bounded_answers():
    # The seed row of the ADR: 16 MiB of text, 64 KiB of an error. A
    # 20 MiB text file and a commit of 10,000 files (its unpaginated list
    # of files) in a repository of the real Gitea; 1 MiB error bodies from
    # a proxy in front of it (the real Gitea sends none that big).
    limit = 200_000  # MAX_TOOL_RESPONSE_CHARS, the default
    files = {"big.txt": big_bodies.text_of(20 * big_bodies.MIB)}
    files.update({"many/f%05d.txt" % n: b"%d\n" % n for n in range(10_000)})
    began = time.monotonic()
    owner, name, sha = big_bodies.pushed_repository(FIXTURE, "replay-r53-b-" + secrets.token_hex(3), files)
    step("pushed %s/%s (a 20 MiB text file, 10,000 more files) in %.1f s" % (owner, name, time.monotonic() - began))
    proxy = big_bodies.ErrorProxy(FIXTURE["gitea_url"])

    def bounded(what, pid, tool, arguments):
        return big_bodies.bounded_answer(GATEWAY + "/mcp/all", BEARER, pid, tool, arguments, limit, what, step)

    try:
        started = {}
        with gateway(on_start=lambda p: started.update(process=p)):
            pid = started["process"].pid
            where = {"owner": owner, "repo": name}
            raw = bounded("the 20 MiB file (gitea_repo_get_raw_file)", pid, "gitea_repo_get_raw_file", {**where, "filepath": "big.txt"})
            check(raw.get("truncated") is True and raw["truncation"].get("data_format") == "text", "the raw file is marked as cut: %s" % raw.get("truncation"))
            contents = bounded("the 20 MiB file (gitea_repo_get_contents)", pid, "gitea_repo_get_contents", {**where, "filepath": "big.txt"})
            check("data" in contents, "the file's contents: %s" % str(contents)[:300])
            commit = bounded("a commit's 10,000 files (gitea_repo_get_single_commit)", pid, "gitea_repo_get_single_commit", {**where, "sha": sha})
            check(commit.get("truncated") is True and commit["truncation"].get("data_chars_omitted", 0) > 0, "the commit is marked as cut: %s" % commit.get("truncation"))
        started.clear()
        with gateway({"GITEA_URL": proxy.url}, on_start=lambda p: started.update(process=p)):
            pid = started["process"].pid
            for kind in big_bodies.BIG_ERRORS:
                failed = bounded("an error body (%s)" % kind, pid, "gitea_repo_get", {"owner": big_bodies.BIG_ERROR_OWNER, "repo": kind})
                check("error" in failed and len(failed["error"].get("message", "")) <= 501, "%s: %s" % (kind, str(failed)[:600]))
            check(sorted(set(proxy.served)) == sorted(big_bodies.BIG_ERRORS), "the proxy answered %s" % proxy.served)
    finally:
        proxy.shutdown()
        proxy.server_close()
        big_bodies.delete_repository(FIXTURE, owner, name)

def main():
    only = set(sys.argv[1:])
    store = "PostgreSQL" if DATABASE_URL else "SQLite"
    failed = []
    for finding, function, store_free in ATTACKS:
        if only and finding not in only:
            continue
        if store_free and DATABASE_URL and finding not in only:
            step("%s runs with the SQLite store only: %s never touches the store" % (finding, store_free))
            continue
        step("%s %s (%s store)" % (finding, function.__name__.replace("_", " "), store))
        try:
            function()
        except Exception as err:  # noqa: BLE001 (every attack runs; the summary names each failure)
            step("FAIL %s: %s" % (finding, err))
            failed.append(finding)
    if failed:
        step("FAILED: %s" % ", ".join(failed))
        sys.exit(1)
    step("PASS: every replayed attack was refused (%s store)" % store)


if __name__ == "__main__":
    main()
