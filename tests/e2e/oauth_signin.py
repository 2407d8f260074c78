#!/usr/bin/env python3
"""The OAuth sign-in end to end, with a client library nobody here wrote.

The official Python MCP SDK's OAuth client (`OAuthClientProvider`: discovery,
dynamic registration, PKCE, `resource`) connects to the gateway binary, which
is configured as a confidential client of the real, seeded Gitea
(`tests/e2e/gitea.sh start`). The person in the middle is played by an HTTP
client with a cookie jar that submits the forms a person would: our consent
page, then Gitea's login and grant pages. (The same pages in headless
Chromium: tests/browser/pages_e2e.py.)

The SDK connects to a toolset URL (`/mcp/x/admin,user`), not `/mcp`: it
discovers that URL's own protected-resource document and asks for a token
whose audience is that URL. Then, as the non-admin seeded user: `tools/list`,
`tools/call` (the identity is that user; an admin-only operation gets Gitea's
403), the token refused at `/mcp` (another resource), a refresh (rotation),
`/revoke`, and 401 for every token of the grant.

Usage: tests/e2e/oauth_signin.py  (reads $AEGIS_E2E_DIR/fixture.json; the
gateway binary is $AEGIS_BIN, default target/debug/aegis-gitea-mcp; the
gateway listens on the fixture's gateway_url, whose /oauth/callback is the
redirect URI of the seeded Gitea application). Needs `pip install mcp`.
"""

import os
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, load_fixture, mcp_tool_call, run_against_gateway, stepper  # noqa: E402
from sdk_common import MemoryStorage, Person, assert_refresh_dead, check_session_as, sdk_oauth_provider, token_endpoint  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
GITEA = FIXTURE["gitea_url"].rstrip("/")
USER = FIXTURE["user"]
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"
# A toolset URL: 111 operations (the user and admin toolsets) plus discovery.
SURFACE = "/mcp/x/admin,user"


step = stepper("oauth-e2e")



def raw_call(token, name, path=SURFACE):
    """A stateless JSON-RPC tools/call at `path` with `token`: (status, envelope)."""
    return mcp_tool_call(GATEWAY, token, name, path=path)


async def main():
    person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"])
    storage = MemoryStorage()
    captured = {}
    provider = sdk_oauth_provider(GATEWAY + SURFACE, CLIENT_CALLBACK, person, storage, captured, step)

    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(GATEWAY + SURFACE, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                # Gitea shows its grant page only until the user has granted
                # the application once (a re-run against the same Gitea).
                check(person.pages[:2] == ["gateway consent", "gitea login"], "pages: %s" % person.pages)
                step("signed in through: %s" % " → ".join(person.pages))
                check(captured.get("iss") == GATEWAY, "iss is our issuer")
                await check_session_as(session, USER, step, surface="toolsets")

    client = storage.client_info
    first = storage.tokens
    check(client.client_secret, "client_secret_post registration got a secret")
    check(first.access_token.startswith("agm_") and first.refresh_token.startswith("agm_"), "our tokens")
    status, _ = raw_call(first.access_token, "gitea_user_get_current", path="/mcp")
    check(status == 401, "the %s token at /mcp (another resource): %s" % (SURFACE, status))
    step("the token works at %s only: /mcp answers 401" % SURFACE)

    refreshed = token_endpoint(GATEWAY, "/token", client, grant_type="refresh_token", refresh_token=first.refresh_token)
    check(refreshed.status_code == 200, "refresh: %s %s" % (refreshed.status_code, refreshed.text))
    second = refreshed.json()
    check(second["refresh_token"] != first.refresh_token, "the refresh token rotated")
    status, me = raw_call(second["access_token"], "gitea_user_get_current")
    check(status == 200 and me["identity"]["login"] == USER["login"], "the refreshed token works")
    step("refresh: rotated, the new access token acts as %s" % me["identity"]["login"])

    revoked = token_endpoint(GATEWAY, "/revoke", client, token=second["access_token"])
    check(revoked.status_code == 200, "revoke answered %s" % revoked.status_code)
    for label, token in (("new access", second["access_token"]), ("first access", first.access_token)):
        status, challenge = raw_call(token, "gitea_user_get_current")
        check(status == 401, "%s token after revoke: %s" % (label, status))
        check(challenge and "resource_metadata=" in challenge, "the 401 names the resource metadata")
    assert_refresh_dead(GATEWAY, second["refresh_token"], client)
    step("revoke: every token of the grant gets 401 / invalid_grant")


if __name__ == "__main__":
    run_against_gateway(FIXTURE, "aegis-oauth-e2e.", step, main)
