#!/usr/bin/env python3
"""The OAuth sign-in end to end, with a client library nobody here wrote.

The official Python MCP SDK's OAuth client (`OAuthClientProvider`: discovery,
dynamic registration, PKCE, `resource`) connects to the gateway binary, which
is configured as a confidential client of the real, seeded Gitea
(`tests/e2e/gitea.sh start`). The person in the middle is played by an HTTP
client with a cookie jar that submits the forms a person would: our consent
page, then Gitea's login and grant pages. (The same pages in headless
Chromium: tests/browser/pages_e2e.py.)

Then, as the non-admin seeded user: `tools/list`, `tools/call` (the identity
is that user; an admin-only operation gets Gitea's 403), a refresh (rotation),
`/revoke`, and 401 for every token of the grant.

Usage: tests/e2e/oauth_signin.py  (reads $AEGIS_E2E_DIR/fixture.json; the
gateway binary is $AEGIS_BIN, default target/debug/aegis-gitea-mcp; the
gateway listens on the fixture's gateway_url, whose /oauth/callback is the
redirect URI of the seeded Gitea application). Needs `pip install mcp`.
"""

import asyncio
import html.parser
import json
import os
import sys
import tempfile
import urllib.parse

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, gateway_log, load_fixture, mcp_tool_call, start_gateway, stepper, stop_gateway  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
GITEA = FIXTURE["gitea_url"].rstrip("/")
USER = FIXTURE["user"]
CLIENT_CALLBACK = "http://127.0.0.1:53682/callback"


step = stepper("oauth-e2e")



class Forms(html.parser.HTMLParser):
    """Every form of a page: its action and its inputs' names and values."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action") or "", "fields": {}})
        elif tag in ("input", "button") and self.forms and attrs.get("name"):
            if attrs.get("type") in ("checkbox",):
                return
            self.forms[-1]["fields"].setdefault(attrs["name"], attrs.get("value") or "")


def forms_of(page):
    parser = Forms()
    parser.feed(page)
    return parser.forms


class Person:
    """A browser's worth of behaviour: follows redirects by hand, keeps
    cookies, approves our consent page, signs in at Gitea and grants."""

    def __init__(self, login, password):
        self.login = login
        self.password = password
        self.http = httpx2.Client(follow_redirects=False, timeout=30)
        self.pages = []

    def sign_in(self, authorization_url):
        """Walks from the client's authorization URL to the redirect back to
        the client; returns that URL."""
        url = authorization_url
        response = self.http.get(url)
        for _ in range(30):
            if response.is_redirect:
                url = urllib.parse.urljoin(url, response.headers["location"])
                if url.startswith(CLIENT_CALLBACK):
                    return url
                response = self.http.get(url)
                continue
            check(response.status_code == 200, "unexpected %s at %s" % (response.status_code, url))
            response, url = self.submit(url, response.text)
        raise AssertionError("too many steps in the sign-in")

    def submit(self, url, page):
        for form in forms_of(page):
            action = urllib.parse.urljoin(url, form["action"])
            fields = dict(form["fields"])
            if action == GATEWAY + "/authorize/consent":
                check("csrf_token" in fields, "our consent form has a CSRF token")
                self.pages.append("gateway consent")
                fields["decision"] = "approve"
            elif urllib.parse.urlparse(action).path == "/user/login":
                self.pages.append("gitea login")
                fields.update({"user_name": self.login, "password": self.password})
            elif urllib.parse.urlparse(action).path == "/login/oauth/grant":
                self.pages.append("gitea grant")
                fields["granted"] = "true"
            else:
                continue
            return self.http.post(action, data=fields, headers={"Origin": "null"} if action.startswith(GATEWAY) else {}), action
        raise AssertionError("no form to submit at %s" % url)


class MemoryStorage:
    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull):
        self.client_info = client_info


def envelope(result):
    check(len(result.content) == 1, "one content item")
    return json.loads(result.content[0].text)


def raw_call(token, name):
    """A stateless JSON-RPC tools/call with `token`: (status, envelope)."""
    return mcp_tool_call(GATEWAY, token, name)


async def main():
    person = Person(USER["login"], USER["password"])
    storage = MemoryStorage()
    captured = {}

    async def redirect_handler(authorization_url):
        step("the SDK opens the authorization URL; the person signs in")
        back = await asyncio.to_thread(person.sign_in, authorization_url)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(back).query))
        check("code" in query, "the client got a code: %s" % back)
        captured.update(query)

    async def callback_handler():
        return AuthorizationCodeResult(code=captured["code"], state=captured.get("state"), iss=captured.get("iss"))

    provider = OAuthClientProvider(
        server_url=GATEWAY + "/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Python MCP SDK (e2e)",
            redirect_uris=[CLIENT_CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                # Gitea shows its grant page only until the user has granted
                # the application once (a re-run against the same Gitea).
                check(person.pages[:2] == ["gateway consent", "gitea login"], "pages: %s" % person.pages)
                step("signed in through: %s" % " → ".join(person.pages))
                check(captured.get("iss") == GATEWAY, "iss is our issuer")
                tools = await session.list_tools()
                step("tools/list: %d tools" % len(tools.tools))
                check(len(tools.tools) > 400, "the whole catalog is listed")
                me = envelope(await session.call_tool("gitea_user_get_current", {}))
                check(me["identity"] == {"login": USER["login"], "mode": "oauth", "sudo": None}, "identity %s" % me["identity"])
                check(me["data"]["login"] == USER["login"], "Gitea answered as the user")
                step("tools/call gitea_user_get_current: identity %s (%s)" % (me["identity"]["login"], me["identity"]["mode"]))
                admin_only = await session.call_tool("gitea_admin_search_users", {})
                denied = envelope(admin_only)
                check(admin_only.is_error and denied["error"]["status"] == 403, "admin-only call: %s" % denied)
                step("tools/call gitea_admin_search_users: Gitea's %d for the user" % denied["error"]["status"])

    client = storage.client_info
    first = storage.tokens
    check(client.client_secret, "client_secret_post registration got a secret")
    check(first.access_token.startswith("agm_") and first.refresh_token.startswith("agm_"), "our tokens")

    refreshed = httpx2.post(
        GATEWAY + "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.refresh_token,
            "client_id": client.client_id,
            "client_secret": client.client_secret,
        },
    )
    check(refreshed.status_code == 200, "refresh: %s %s" % (refreshed.status_code, refreshed.text))
    second = refreshed.json()
    check(second["refresh_token"] != first.refresh_token, "the refresh token rotated")
    status, me = raw_call(second["access_token"], "gitea_user_get_current")
    check(status == 200 and me["identity"]["login"] == USER["login"], "the refreshed token works")
    step("refresh: rotated, the new access token acts as %s" % me["identity"]["login"])

    revoked = httpx2.post(GATEWAY + "/revoke", data={"token": second["access_token"], "client_id": client.client_id, "client_secret": client.client_secret})
    check(revoked.status_code == 200, "revoke answered %s" % revoked.status_code)
    for label, token in (("new access", second["access_token"]), ("first access", first.access_token)):
        status, challenge = raw_call(token, "gitea_user_get_current")
        check(status == 401, "%s token after revoke: %s" % (label, status))
        check(challenge and "resource_metadata=" in challenge, "the 401 names the resource metadata")
    again = httpx2.post(GATEWAY + "/token", data={"grant_type": "refresh_token", "refresh_token": second["refresh_token"], "client_id": client.client_id, "client_secret": client.client_secret})
    check(again.status_code == 400 and again.json()["error"] == "invalid_grant", "the refresh token died with the grant")
    step("revoke: every token of the grant gets 401 / invalid_grant")


if __name__ == "__main__":
    data_dir = tempfile.mkdtemp(prefix="aegis-oauth-e2e.")
    gateway = start_gateway(FIXTURE, data_dir, database_url=os.environ.get("DATABASE_URL"))
    step("gateway up at %s (data in %s)" % (GATEWAY, data_dir))
    try:
        asyncio.run(main())
        step("PASS")
    except BaseException:
        step("FAIL; gateway log follows")
        sys.stdout.write(gateway_log(data_dir))
        raise
    finally:
        stop_gateway(gateway)
