#!/usr/bin/env python3
"""Least privilege against the real Gitea (issue 27), with the official
Python MCP SDK as the client.

1. The SDK connects to `/mcp/all/readonly`. The Gitea session the gateway then
   holds has only `read:` scopes: asked of Gitea's own introspection
   endpoint (`/login/oauth/introspect`, the read application's
   credentials), with the token taken from the store (decrypted with the
   key this script gave the gateway). Used directly at Gitea, as a leaked
   store would allow, that session cannot write.
2. A page sign-in (`/account/sign-in`) asks Gitea, at the read
   application, for no write scope.
3. The SDK connects to `/mcp`. The person keeps the consent page's default
   (read only). A write (`gitea_issue_create_issue`) gets the 403
   `insufficient_scope` challenge; the SDK asks again with the wider scope,
   the consent page now preselects "read and write", the person keeps it,
   and the SDK's retry of the same call creates the issue as the same user.
4. Throughout, an operator policy (`POLICY_FILE`) whose rule asks about
   the person's organisations and site-admin status, looked up at the real
   Gitea with the person's own reading session, hides the admin toolset
   from everyone outside the seeded organisation.

Usage: tests/e2e/step_up.py (reads $AEGIS_E2E_DIR/fixture.json; the gateway
binary is $AEGIS_BIN, default target/debug/aegis-gitea-mcp). Needs
`pip install mcp`.
"""

import base64
import os
import secrets
import sqlite3
import sys
import tempfile
import urllib.parse

import httpx2
# `cryptography` comes with the SDK (its `pyjwt[crypto]` dependency).
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, load_fixture, run_against_gateway, stepper  # noqa: E402
from sdk_common import MemoryStorage, Person, envelope, sdk_oauth_provider  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
GITEA = FIXTURE["gitea_url"].rstrip("/")
USER = FIXTURE["user"]
READ_APP = FIXTURE["oauth_read"]
CLIENT_CALLBACK = "http://127.0.0.1:53683/callback"
KEY = secrets.token_urlsafe(32)
POLICY = """
[[rule]]
id = "outsiders-no-admin"
when = { site_admin = false }
unless = { orgs = ["%s"] }
deny_toolsets = ["admin"]
""" % FIXTURE["org"]

step = stepper("step-up")


def store_cipher():
    """The gateway's at-rest cipher (src/store/cipher.rs): HKDF-SHA256 of
    the key material into a Fernet key."""
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"aegis-gitea-mcp/token-encryption", info=b"fernet v1"
    ).derive(KEY.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def stored_gitea_tokens(data_dir):
    """(resource, scope, Gitea access token) of every live grant in the store."""
    db = sqlite3.connect(os.path.join(data_dir, "aegis.db"))
    try:
        rows = db.execute(
            "SELECT resource, scope, gitea_access_token_enc FROM grants WHERE revoked_at IS NULL"
        ).fetchall()
    finally:
        db.close()
    cipher = store_cipher()
    return [(resource, scope, cipher.decrypt(sealed.encode()).decode()) for resource, scope, sealed in rows]


def introspect(token, app):
    """Gitea's RFC 7662 introspection of `token`, as the application `app`."""
    response = httpx2.post(
        GITEA + "/login/oauth/introspect",
        data={"token": token},
        auth=(app["client_id"], app["client_secret"]),
        timeout=30,
    )
    check(response.status_code == 200, "introspection: %s %s" % (response.status_code, response.text[:200]))
    return response.json()


def granular(scope):
    return [s for s in scope.replace(",", " ").split() if s not in ("openid", "profile")]


async def connect(url, person, storage, captured):
    """An SDK session at `url` whose first call is `tools/list`; returns the
    tool names."""
    provider = sdk_oauth_provider(url, CLIENT_CALLBACK, person, storage, captured, step)
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]


async def readonly_url_holds_a_read_only_gitea_session(data_dir):
    person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
    names = await connect(GATEWAY + "/mcp/all/readonly", person, MemoryStorage(), {})
    check("gitea_issue_create_issue" not in names, "/mcp/all/readonly lists no write")
    check(names and not any(n.startswith("gitea_admin_") for n in names), "the policy hides the admin toolset: %d tools" % len(names))
    step("/mcp/all/readonly: %d tools, no write, no admin tool (the policy, from Gitea's memberships)" % len(names))
    grants = [g for g in stored_gitea_tokens(data_dir) if g[0].endswith("/mcp/all/readonly")]
    check(len(grants) == 1, "one grant at /mcp/all/readonly: %s" % [g[:2] for g in grants])
    resource, scope, token = grants[0]
    check(scope == "gitea:read", "our scope: %s" % scope)
    answer = introspect(token, READ_APP)
    check(answer.get("active") is True, "Gitea knows the token as the read application's: %s" % answer)
    held = granular(answer.get("scope", ""))
    check(held and all(s.startswith("read:") for s in held), "Gitea's scopes of the session: %s" % held)
    step("/mcp/all/readonly: Gitea says the stored session holds only %s" % " ".join(held))
    # Defence in depth: were the store and its key to leak, this session
    # still could not write.
    repo = FIXTURE["repos"]["user"]
    leaked = httpx2.post(
        "%s/api/v1/repos/%s/%s/issues" % (GITEA, repo["owner"], repo["name"]),
        json={"title": "written with a leaked read session"},
        headers={"Authorization": "token " + token},
        timeout=30,
    )
    check(leaked.status_code == 403, "Gitea refuses a write with the read session: %s" % leaked.status_code)
    step("the stored read session, used directly at Gitea, cannot write (403)")


def page_sign_in_asks_no_write_scope():
    http = httpx2.Client(follow_redirects=False, timeout=30)
    start = http.get(GATEWAY + "/account/sign-in?next=account")
    check(start.status_code in (302, 303), "the page sign-in goes to Gitea: %s" % start.status_code)
    to_gitea = urllib.parse.urlparse(start.headers["location"])
    query = dict(urllib.parse.parse_qsl(to_gitea.query))
    check(query.get("client_id") == READ_APP["client_id"], "the read application: %s" % query.get("client_id"))
    check("write:" not in query.get("scope", ""), "no write scope: %s" % query.get("scope"))
    step("page sign-in: Gitea is asked %r at the read application" % query["scope"])


async def a_write_steps_up_and_then_runs_as_the_same_user():
    person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
    storage = MemoryStorage()
    provider = sdk_oauth_provider(GATEWAY + "/mcp", CLIENT_CALLBACK, person, storage, {}, step)
    repo = FIXTURE["repos"]["user"]
    title = "step-up " + secrets.token_hex(4)
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                check(person.preselected == ["read"], "first consent: read only preselected: %s" % person.preselected)
                check(storage.tokens.scope == "gitea:read", "a reading token: %s" % storage.tokens.scope)
                me = envelope(await session.call_tool("gitea_user_get_current", {}))
                check(me["identity"]["login"] == USER["login"], "reads as %s" % me["identity"])
                step("signed in reading; the write comes next")
                result = await session.call_tool(
                    "gitea_issue_create_issue",
                    {"owner": repo["owner"], "repo": repo["name"], "body": {"title": title}},
                )
                hidden = envelope(await session.call_tool("gitea_call_read_operation", {"name": "gitea_admin_search_users"}))
    check(not result.is_error, "the write ran after the step-up: %s" % result.content)
    created = envelope(result)
    check(created["data"]["title"] == title, "the issue: %s" % created["data"].get("title"))
    check(created["data"]["user"] == USER["login"], "created by %s" % created["data"].get("user"))
    check(created["identity"]["login"] == USER["login"], "as the same user: %s" % created["identity"])
    check(hidden["error"]["kind"] == "invalid_arguments", "the policy hides admin operations from the call tool: %s" % hidden)
    check(person.pages.count("gateway consent") == 2, "the person was asked twice: %s" % person.pages)
    check(person.preselected == ["read", "write"], "the step-up preselected read and write: %s" % person.preselected)
    check(set(storage.tokens.scope.split()) == {"gitea:read", "gitea:write"}, "the new token: %s" % storage.tokens.scope)
    step("step-up: 403 insufficient_scope, consent again (write preselected), the same call created #%s as %s" % (created["data"]["number"], USER["login"]))


async def main(data_dir):
    await readonly_url_holds_a_read_only_gitea_session(data_dir)
    page_sign_in_asks_no_write_scope()
    await a_write_steps_up_and_then_runs_as_the_same_user()


if __name__ == "__main__":
    with tempfile.NamedTemporaryFile("w", suffix=".toml", prefix="aegis-policy.") as policy:
        policy.write(POLICY)
        policy.flush()
        env = {"TOKEN_ENCRYPTION_KEY": KEY, "POLICY_FILE": policy.name}
        run_against_gateway(FIXTURE, "aegis-step-up.", step, main, extra_env=env, pass_data_dir=True)
