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
import os
import sys
import tempfile
import urllib.parse

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, gateway_log, load_fixture, mcp_tool_call, start_gateway, stepper, stop_gateway  # noqa: E402
from sdk_common import MemoryStorage, assert_refresh_dead, check_session_as, token_endpoint  # noqa: E402

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
                await check_session_as(session, USER, step)

    client = storage.client_info
    first = storage.tokens
    check(client.client_secret, "client_secret_post registration got a secret")
    check(first.access_token.startswith("agm_") and first.refresh_token.startswith("agm_"), "our tokens")

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
