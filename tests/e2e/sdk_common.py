"""What the scripts driving the official Python MCP SDK (`pip install
mcp==2.3.0`) share: `tests/e2e/oauth_signin.py` (an HTTP "person") and
`tests/browser/sdk_signin_e2e.py` (headless Chromium).

- `MemoryStorage`: the SDK's token storage, in memory (the script reads the
  tokens the SDK holds from it).
- `envelope(result)`: the gateway's JSON envelope of a `tools/call` result.
- `check_session_as(session, user, step)`: with a signed-in SDK session,
  `tools/list` lists the catalog, `tools/call` runs as `user` (`identity`
  and Gitea's answer) and an admin-only operation gets Gitea's 403.
- `token_endpoint(gateway, path, client, **form)`: a form POST to `/token` or
  `/revoke` with the client's credentials (`client_secret` only if it has one).
- `assert_refresh_dead(gateway, refresh_token, client)`: `invalid_grant`.
"""

import json

import httpx2
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from gateway import check

# The gateway lists the whole Gitea API (hundreds of operations).
MIN_TOOLS = 400


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
    check(me["identity"] == {"login": user["login"], "mode": "oauth", "sudo": None}, "identity %s" % me["identity"])
    check(me["data"]["login"] == user["login"], "Gitea answered as the user: %s" % me["data"].get("login"))


async def check_session_as(session, user, step):
    """tools/list, tools/call as `user`, and Gitea's 403 for an admin-only operation."""
    tools = await session.list_tools()
    step("tools/list: %d tools" % len(tools.tools))
    check(len(tools.tools) > MIN_TOOLS, "the whole catalog is listed (%d tools)" % len(tools.tools))
    me = envelope(await session.call_tool("gitea_user_get_current", {}))
    check_identity(me, user)
    step("tools/call gitea_user_get_current: identity %s (%s)" % (me["identity"]["login"], me["identity"]["mode"]))
    admin_only = await session.call_tool("gitea_admin_search_users", {})
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
