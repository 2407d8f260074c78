"""What the scripts driving the official Python MCP SDK (`pip install
mcp==2.3.0`) share: `tests/e2e/oauth_signin.py` (an HTTP "person") and
`tests/browser/sdk_signin_e2e.py` (headless Chromium).

- `MemoryStorage`: the SDK's token storage, in memory (the script reads the
  tokens the SDK holds from it).
- `envelope(result)`: the gateway's JSON envelope of a `tools/call` result.
- `check_session_as(session, user, step, surface="core")`: with a signed-in
  SDK session, `tools/list` lists the URL's tools (`core`: the default
  `/mcp`, at most 40; `many`: a toolset URL or `/mcp/all`), `tools/call`
  runs as `user` (`identity` and Gitea's answer) and an admin-only
  operation gets Gitea's 403 (through the read call tool where it is not
  listed).
- `Person(gateway, client_callback, login, password)`: an HTTP client with a
  cookie jar that walks from an authorization URL to the redirect back to
  the client, submitting our consent form and Gitea's login and grant forms.
- `sdk_oauth_provider(mcp_url, client_callback, person, storage, captured,
  step)`: the SDK's `OAuthClientProvider` for `mcp_url` (a confidential
  `client_secret_post` client), with `person` as the browser.
- `token_endpoint(gateway, path, client, **form)`: a form POST to `/token` or
  `/revoke` with the client's credentials (`client_secret` only if it has one).
- `assert_refresh_dead(gateway, refresh_token, client)`: `invalid_grant`.

A scripted sign-in without the SDK (`tests/security/replay.py`,
`tests/replicas/replicas.py`), clients as the JSON `/register` answers:

- `register_client(gateway, metadata, forwarded_for=None)`: `(status, body)`.
- `public_client(gateway, redirect_uri, **extra)`: a registered public client.
- `authorization_url(gateway, client, redirect_uri, **overrides)`: a PKCE
  authorization URL for `gateway/mcp` and its code verifier.
- `token_request(gateway, client, **form)`: a `/token` post as a public client.
- `exchange(gateway, client, back, verifier, redirect_uri)`: the code of the
  redirect `back` for tokens.
- `signed_in_tokens(gateway, client, redirect_uri, user, access=None)`:
  `user` signs in at the real Gitea and approves; the tokens.
- `page_session(gateway, user)`: `user` signed in to `/account`; the
  `Person` whose cookies hold the page session.
"""

import asyncio
import base64
import hashlib
import html.parser
import json
import secrets
import urllib.parse

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from gateway import check

# The default URL lists the core tools and the discovery tools: at most 40.
MAX_CORE_TOOLS = 40


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
    check(len(result.content) == 1, "one content item: %s" % result.content)
    return json.loads(result.content[0].text)


def check_identity(me, user):
    """The envelope of `gitea_user_get_current` says the call ran as `user`."""
    check(me["identity"] == {"login": user["login"], "mode": "oauth"}, "identity %s" % me["identity"])
    check(me["data"]["login"] == user["login"], "Gitea answered as the user: %s" % me["data"].get("login"))


async def check_session_as(session, user, step, surface="core"):
    """tools/list, tools/call as `user`, and Gitea's 403 for an admin-only operation."""
    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    step("tools/list: %d tools" % len(names))
    if surface == "core":
        check(len(names) <= MAX_CORE_TOOLS, "the core fits a 40-tool client (%d tools)" % len(names))
        check("gitea_call_read_operation" in names, "the discovery tools are listed")
    else:
        check(40 < len(names) <= 128 or len(names) > 400, "a toolset URL or the whole catalog (%d tools)" % len(names))
    me = envelope(await session.call_tool("gitea_user_get_current", {}))
    check_identity(me, user)
    step("tools/call gitea_user_get_current: identity %s (%s)" % (me["identity"]["login"], me["identity"]["mode"]))
    if "gitea_admin_search_users" in names:
        admin_only = await session.call_tool("gitea_admin_search_users", {})
    else:
        admin_only = await session.call_tool("gitea_call_read_operation", {"name": "gitea_admin_search_users"})
    denied = envelope(admin_only)
    check(admin_only.is_error and (denied.get("error") or {}).get("status") == 403, "admin-only call as %s: %s" % (user["login"], str(denied)[:500]))
    step("tools/call gitea_admin_search_users: Gitea's %d for the user" % denied["error"]["status"])


def token_endpoint(gateway, path, client, **form):
    """POST `form` to the gateway's `path` (/token, /revoke) as `client`."""
    form["client_id"] = client.client_id
    if client.client_secret:
        form["client_secret"] = client.client_secret
    return httpx2.post(gateway.rstrip("/") + path, data=form, timeout=30)


def assert_refresh_dead(gateway, refresh_token, client):
    again = token_endpoint(gateway, "/token", client, grant_type="refresh_token", refresh_token=refresh_token)
    check(again.status_code == 400 and again.json().get("error") == "invalid_grant", "a dead refresh token got %s %s" % (again.status_code, again.text[:300]))


def register_client(gateway, metadata, forwarded_for=None):
    """POST `metadata` to `/register`: (status, body)."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    response = httpx2.post(gateway.rstrip("/") + "/register", json=metadata, headers=headers, timeout=30)
    return response.status_code, response.json()


def public_client(gateway, redirect_uri, **extra):
    metadata = {"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none", "client_name": "scripted", **extra}
    status, body = register_client(gateway, metadata)
    check(status == 201, "registration: %s %s" % (status, body))
    return body


def authorization_url(gateway, client, redirect_uri, **overrides):
    """A PKCE (S256) authorization URL for the resource `gateway/mcp`, and its verifier."""
    gateway = gateway.rstrip("/")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": secrets.token_urlsafe(12),
        "resource": gateway + "/mcp",
        "scope": "gitea:read",
        **overrides,
    }
    return gateway + "/authorize?" + urllib.parse.urlencode(params), verifier


def token_request(gateway, client, **form):
    """A /token post as the public client `client`."""
    return httpx2.post(gateway.rstrip("/") + "/token", data={"client_id": client["client_id"], **form}, timeout=30)


def exchange(gateway, client, back, verifier, redirect_uri):
    """The code in the redirect `back` exchanged for tokens."""
    code = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(back).query)).get("code")
    check(code, "the client got a code: %s" % back)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier}
    response = token_request(gateway, client, **form)
    check(response.status_code == 200, "code exchange: %s %s" % (response.status_code, response.text[:300]))
    return response.json()


def signed_in_tokens(gateway, client, redirect_uri, user, access=None):
    """`user` signs in at the real Gitea (ID token verified) and approves
    (`access`: "read" or "write" on the consent page; None keeps its
    default)."""
    url, verifier = authorization_url(gateway, client, redirect_uri)
    back = Person(gateway, redirect_uri, user["login"], user["password"], access=access).sign_in(url)
    return exchange(gateway, client, back, verifier, redirect_uri)


def page_session(gateway, user):
    """`user` signed in to the gateway's pages (`/account`) through the real
    Gitea: the `Person`, whose cookie jar holds the page session."""
    person = Person(gateway, gateway.rstrip("/") + "/account", user["login"], user["password"])
    person.sign_in(gateway.rstrip("/") + "/account/sign-in?next=account")
    return person


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
            if attrs.get("type") == "radio":
                # A browser sends the checked one only.
                if "checked" in attrs:
                    self.forms[-1]["fields"][attrs["name"]] = attrs.get("value") or ""
                    self.forms[-1].setdefault("preselected", {})[attrs["name"]] = attrs.get("value") or ""
                return
            self.forms[-1]["fields"].setdefault(attrs["name"], attrs.get("value") or "")


def forms_of(page):
    parser = Forms()
    parser.feed(page)
    return parser.forms


class Person:
    """A browser's worth of behaviour: follows redirects by hand, keeps
    cookies, approves our consent page, signs in at Gitea and grants.
    `access` is the choice on our consent page ("read", "write"); None
    keeps what the page preselects. Each consent page's preselection is
    kept in `preselected`."""

    def __init__(self, gateway, client_callback, login, password, access=None):
        self.gateway = gateway.rstrip("/")
        self.client_callback = client_callback
        self.login = login
        self.password = password
        self.access = access
        self.http = httpx2.Client(follow_redirects=False, timeout=30)
        self.pages = []
        self.preselected = []

    def sign_in(self, authorization_url):
        """Walks from the client's authorization URL to the redirect back to
        the client; returns that URL."""
        url = authorization_url
        response = self.http.get(url)
        for _ in range(30):
            if response.is_redirect:
                url = urllib.parse.urljoin(url, response.headers["location"])
                if url.startswith(self.client_callback):
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
            if action == self.gateway + "/authorize/consent":
                check("csrf_token" in fields, "our consent form has a CSRF token")
                self.pages.append("gateway consent")
                self.preselected.append(form.get("preselected", {}).get("access"))
                fields["decision"] = "approve"
                if self.access and "access" in fields:
                    fields["access"] = self.access
            elif urllib.parse.urlparse(action).path == "/user/login":
                self.pages.append("gitea login")
                fields.update({"user_name": self.login, "password": self.password})
            elif urllib.parse.urlparse(action).path == "/login/oauth/grant":
                self.pages.append("gitea grant")
                fields["granted"] = "true"
            else:
                continue
            headers = {"Origin": "null"} if action.startswith(self.gateway) else {}
            return self.http.post(action, data=fields, headers=headers), action
        raise AssertionError("no form to submit at %s" % url)


def sdk_oauth_provider(mcp_url, client_callback, person, storage, captured, step):
    """The SDK's OAuth client for `mcp_url`; `person` plays the browser and
    the redirect's query lands in `captured`."""

    async def redirect_handler(authorization_url):
        step("the SDK opens the authorization URL; the person signs in")
        back = await asyncio.to_thread(person.sign_in, authorization_url)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(back).query))
        check("code" in query, "the client got a code: %s" % back)
        captured.update(query)

    async def callback_handler():
        return AuthorizationCodeResult(code=captured["code"], state=captured.get("state"), iss=captured.get("iss"))

    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="Python MCP SDK (e2e)",
            redirect_uris=[client_callback],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
