#!/usr/bin/env python3
"""The OAuth sign-in end to end with the official Python MCP SDK's OAuth
client and a real browser: headless Chromium (Debian's `/usr/bin/chromium`,
driven by Playwright for Python) clicks through our consent page and the real
seeded Gitea's login and grant pages.

The SDK (`OAuthClientProvider`: discovery, dynamic registration as a public
client, PKCE, `resource`) hands its authorization URL to the browser through
its `redirect_handler`; the browser approves on our consent page and signs in
at Gitea as the seeded non-admin user; the client's loopback listener
(RFC 8252) catches the redirect, and the SDK's `callback_handler` returns its
`code`, `state` and `iss`. Then, with the SDK session: `tools/list`,
`tools/call` as that user, Gitea's 403 for an admin-only operation, a refresh
done by the SDK (rotation), `/revoke` (401 for every token of the grant), and
the SDK's own second sign-in through the browser after that 401 (Gitea
remembers the person). Then the account page: the person signs in at
`/account` in the same browser, finds the client by its name, clicks Revoke;
the SDK's live tokens get 401 / invalid_grant, and the SDK's next call makes
it ask for a sign-in again, which the person denies (`access_denied`).

Every page is saved as `NN-what.png` in `$AEGIS_ARTIFACTS_DIR/sdk-signin/`
(default `target/browser-artifacts/sdk-signin/`). Any deviation fails the run
(exit 1, the reason, a screenshot of the page and the gateway's log).

Usage: python3 tests/browser/sdk_signin_e2e.py
Needs: `pip install mcp==2.3.0 playwright==1.65.2` (never `playwright
install`: the browser is `$AEGIS_CHROMIUM`, default /usr/bin/chromium), a
running seeded Gitea (`$AEGIS_E2E_DIR/fixture.json`, its `gateway_url` is
where the gateway listens) and a built gateway (`$AEGIS_BIN`). See
tests/browser/README.md.
"""

import asyncio
import concurrent.futures
import logging
import os
import secrets
import sys
import tempfile
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, HERE)

import anyio  # noqa: E402
import httpx2  # noqa: E402
from common import (  # noqa: E402
    ARTIFACTS,
    CHROMIUM,
    FIXTURE,
    GATEWAY,
    GITEA,
    Browser,
    ClientListener,
    account_row,
    assert_dead,
    close_listeners,
    consent_and_sign_in,
    consent_deny,
    prepare_artifacts,
    revoke_on_account,
    sign_in_to_pages,
)
from gateway import check, gateway_log, start_gateway, stepper, stop_gateway  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.auth import OAuthClientProvider  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from sdk_common import (  # noqa: E402
    MemoryStorage,
    assert_refresh_dead,
    check_identity,
    check_session_as,
    envelope,
    token_endpoint,
)

USER = FIXTURE["user"]
SHOTS = os.path.join(ARTIFACTS, "sdk-signin")
# Unique per run, so /account is checked for this run's client.
CLIENT_NAME = "Python MCP SDK in Chromium %s" % secrets.token_hex(3)

# The whole scenario takes ~15 s; a hang fails it after this many seconds.
TIMEOUT = 300

step = stepper("sdk-signin")


class SignInDenied(Exception):
    """The person denied on our consent page: what the SDK's callback handler raises."""


class Person:
    """The seeded non-admin user at a headless Chromium: one browser context
    for the whole run, so its cookies (Gitea's session, ours) carry from one
    sign-in to the next, as a person's browser would.

    Playwright's sync API cannot run inside the SDK's asyncio loop, so the
    browser lives in a thread of its own and every browser step runs there
    (`await person.do(fn, ...)`)."""

    def __init__(self):
        self._thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="chromium")
        self._playwright = None
        self.browser = None
        try:
            self._thread.submit(self._start).result()
        except BaseException:
            self.close()
            raise

    def _start(self):
        self._playwright = sync_playwright().start()
        self.browser = Browser(self._playwright, SHOTS, step)
        self.context = self.browser.context()

    async def do(self, fn, *args):
        return await asyncio.wrap_future(self._thread.submit(fn, *args))

    def close(self):
        def stop():
            try:
                if self.browser:
                    self.browser.close()
            finally:
                if self._playwright:
                    self._playwright.stop()

        try:
            self._thread.submit(stop).result(timeout=60)
        finally:
            self._thread.shutdown(wait=True)

    def shot_on_failure(self, what):
        if self.browser:
            self._thread.submit(self.browser.shot_on_failure, what).result(timeout=60)

    # --- run in the browser's thread

    def approve(self, authorization_url, label, listener):
        page = self.browser.page(self.context)
        seen = consent_and_sign_in(self.browser, page, authorization_url, CLIENT_NAME, USER, label, listener)
        page.close()
        return seen

    def deny(self, authorization_url, label, listener):
        page = self.browser.page(self.context)
        consent_deny(self.browser, page, authorization_url, label, listener, client_name=CLIENT_NAME)
        page.close()

    def revoke_at_account(self):
        page, seen = sign_in_to_pages(self.browser, self.context, USER, "account", "/account")
        row = account_row(page, CLIENT_NAME)
        check(row.count() == 1, "the SDK's client %r is listed once on /account (%d rows)" % (CLIENT_NAME, row.count()))
        shown = row.inner_text()
        check("127.0.0.1" in shown, "its redirect host is shown: %s" % shown)
        step("  /account lists %r" % " | ".join(part.strip() for part in shown.split("\t") if part.strip()))
        revoke_on_account(self.browser, page, CLIENT_NAME, "account")
        page.close()
        return seen

    def page_errors(self):
        """Console errors and failed subresources of our pages, and dialogs
        they opened. (Gitea's own pages, served without their frontend
        build, alert "Frontend is not initialized": not ours.)"""
        dialogs = [("dialog",) + d for d in self.browser.dialogs if d[0].startswith(GATEWAY)]
        return list(self.browser.console_errors) + dialogs


class SdkClient:
    """The SDK's OAuth client set up as a native MCP client app would:
    dynamic registration as a public client (PKCE, no secret) with the
    redirect URI of its own loopback listener; the authorization URL goes to
    the person's browser. What the person does at each sign-in the SDK asks
    for is planned with `expect_sign_in`; an unplanned one fails the run."""

    def __init__(self, person):
        self.person = person
        self.listener = ClientListener()
        self.storage = MemoryStorage()
        self.planned = []  # (label, "approve" | "deny") for the next sign-ins
        self.sign_ins = []  # (label, Gitea pages seen or None when denied)
        self._state = None
        self.provider = OAuthClientProvider(
            server_url=GATEWAY + "/mcp",
            client_metadata=OAuthClientMetadata(
                client_name=CLIENT_NAME,
                redirect_uris=[self.listener.redirect_uri],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=self.storage,
            redirect_handler=self._redirect_handler,
            callback_handler=self._callback_handler,
        )

    def expect_sign_in(self, label, decision):
        self.planned.append((label, decision))

    def _check_authorization_url(self, url):
        parsed = urllib.parse.urlparse(url)
        check(url.startswith(GATEWAY + "/authorize?"), "the SDK sends the person to our /authorize: %s" % url.split("?")[0])
        query = urllib.parse.parse_qs(parsed.query)
        check(all(len(v) == 1 for v in query.values()), "no repeated parameter: %s" % sorted(query))
        query = {k: v[0] for k, v in query.items()}
        info = self.storage.client_info
        check(info is not None and query.get("client_id") == info.client_id, "the registered client_id")
        check(query.get("response_type") == "code", "response_type: %s" % query.get("response_type"))
        check(query.get("redirect_uri") == self.listener.redirect_uri, "redirect_uri: %s" % query.get("redirect_uri"))
        check(query.get("code_challenge_method") == "S256" and len(query.get("code_challenge", "")) == 43, "PKCE S256")
        check(query.get("resource") == GATEWAY + "/mcp", "resource: %s" % query.get("resource"))
        check(query.get("state"), "a state")
        self._state = query["state"]
        return query

    async def _redirect_handler(self, authorization_url):
        check(self.planned, "the SDK asked for a sign-in nobody expected: %s" % authorization_url.split("?")[0])
        label, decision = self.planned.pop(0)
        query = self._check_authorization_url(authorization_url)
        step("the SDK hands its authorization URL to the browser (%s: scope %r, resource %s); the person will %s" % (label, query.get("scope"), query["resource"], decision))
        self.listener.reset()
        if decision == "approve":
            seen = await self.person.do(self.person.approve, authorization_url, label, self.listener)
        else:
            await self.person.do(self.person.deny, authorization_url, label, self.listener)
            seen = None
        self.sign_ins.append((label, seen))

    async def _callback_handler(self):
        captured = dict(self.listener.captured)
        check(captured.get("state") == self._state, "the client's state came back: %s" % captured.get("state"))
        check(captured.get("iss") == GATEWAY, "iss is our issuer: %s" % captured.get("iss"))
        if "error" in captured:
            check("code" not in captured, "no code with an error: %s" % sorted(captured))
            raise SignInDenied(captured["error"])
        check(captured.get("code", "").startswith("agm_"), "the client got a code: %s" % sorted(captured))
        return AuthorizationCodeResult(code=captured["code"], state=captured["state"], iss=captured["iss"])


def leaves(error):
    """The exceptions inside (nested) exception groups."""
    if isinstance(getattr(error, "exceptions", None), (list, tuple)):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def sdk_session(client, part):
    """One SDK session at /mcp (Streamable HTTP through the OAuth provider)."""
    # Keep-alive as the SDK does by default: the connection after the 401
    # that starts the sign-in is reused (the gateway sends `Connection: close`
    # when it refused before reading the body).
    http = httpx2.AsyncClient(auth=client.provider, timeout=60)
    async with http, streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await part(session)


async def scenario(person):
    client = SdkClient(person)
    storage = client.storage
    tokens = {}

    async def part_one(session):
        # 1. The SDK signs in through the browser.
        client.expect_sign_in("sign-in", "approve")
        await session.initialize()
        check([label for label, _ in client.sign_ins] == ["sign-in"], "one sign-in: %s" % client.sign_ins)
        seen = client.sign_ins[0][1]
        check(seen in (["login"], ["login", "grant"]), "a fresh browser signs in at Gitea (and grants on a fresh Gitea): %s" % seen)
        info = storage.client_info
        check(info.client_secret is None and info.token_endpoint_auth_method == "none", "registered as a public client")
        first = storage.tokens
        check(first.access_token.startswith("agm_") and first.refresh_token.startswith("agm_"), "our tokens")
        check(first.token_type.lower() == "bearer" and first.expires_in == 3600, "a Bearer token for an hour: %s %s" % (first.token_type, first.expires_in))
        step("signed in: consent → Gitea %s → client; client %s, tokens agm_…" % (" → ".join(seen), info.client_id))
        await check_session_as(session, USER, step)

        # 2. A refresh, by the SDK: its access token is treated as expired
        # (what an hour's wait would do), so its next request refreshes first.
        client.provider.context.token_expiry_time = time.time() - 1
        me = envelope(await session.call_tool("gitea_user_get_current", {}))
        second = storage.tokens
        check(second is not first, "the SDK refreshed its token")
        check(second.refresh_token != first.refresh_token, "the refresh token rotated")
        check(second.access_token != first.access_token, "a new access token")
        check_identity(me, USER)
        check(len(client.sign_ins) == 1, "a refresh needs no sign-in: %s" % client.sign_ins)
        step("refresh by the SDK: new access token, rotated refresh token; the call ran as %s" % me["identity"]["login"])

        # 3. /revoke ends every token of the grant.
        revoked = token_endpoint(GATEWAY, "/revoke", info, token=second.access_token)
        check(revoked.status_code == 200, "/revoke answered %s %s" % (revoked.status_code, revoked.text[:300]))
        assert_dead(first.access_token)
        assert_dead(second.access_token)
        assert_refresh_dead(GATEWAY, second.refresh_token, info)
        step("/revoke: both access tokens get 401 at /mcp, the refresh token invalid_grant")

        # 4. The SDK's next call gets 401; the SDK signs in again through the
        # browser (our consent page; Gitea remembers the person and the grant).
        client.expect_sign_in("sign-in-again", "approve")
        me = envelope(await session.call_tool("gitea_user_get_current", {}))
        check([label for label, _ in client.sign_ins] == ["sign-in", "sign-in-again"], "the SDK signed in again: %s" % client.sign_ins)
        check(client.sign_ins[1][1] == [], "Gitea asks nothing of a signed-in person it already granted: %s" % client.sign_ins[1][1])
        check_identity(me, USER)
        third = storage.tokens
        check(third.access_token not in (first.access_token, second.access_token), "fresh tokens")
        check(storage.client_info.client_id == info.client_id, "the same registered client")
        tokens["third"] = third
        step("the SDK's call after /revoke: 401, it signed in again through the browser (no Gitea page), the call ran as %s" % me["identity"]["login"])

        # 5. The person revokes the client on /account in the same browser.
        seen = await person.do(person.revoke_at_account)
        check(seen == [], "the page sign-in needs no Gitea page in a browser signed in at Gitea: %s" % seen)
        assert_dead(third.access_token)
        assert_refresh_dead(GATEWAY, third.refresh_token, info)
        step("Revoke on /account: the SDK's access token gets 401 at /mcp, its refresh token invalid_grant")

        # 6. The SDK's next call gets 401, so it asks for a sign-in again;
        # this time the person denies.
        client.expect_sign_in("after-account-revoke", "deny")
        # The SDK logs the refused sign-in with a traceback ("OAuth flow
        # error"); here that is the expected outcome, checked below.
        sdk_auth_log.disabled = True
        with anyio.fail_after(120):
            await session.call_tool("gitea_user_get_current", {})

    sdk_auth_log = logging.getLogger("mcp.client.auth.oauth2")
    try:
        await sdk_session(client, part_one)
    except BaseException as error:  # noqa: BLE001 - sorted out below
        # Expected: the refusal alone (inside the transport's task group).
        denied = leaves(error)
        if "third" not in tokens or not all(isinstance(leaf, SignInDenied) for leaf in denied):
            raise
        check(str(denied[0]) == "access_denied", "the client got %s" % denied[0])
    else:
        raise AssertionError("the SDK's call after Revoke on /account succeeded")
    finally:
        sdk_auth_log.disabled = False
    check([label for label, _ in client.sign_ins][-1] == "after-account-revoke", "the SDK asked for a sign-in: %s" % client.sign_ins)
    check(not client.planned, "planned sign-ins never asked for: %s" % client.planned)
    step("the SDK's call after Revoke on /account: 401, it asked for a sign-in, the person denied: access_denied")

    errors = await person.do(person.page_errors)
    check(not errors, "console errors, failed subresources or dialogs on our pages: %s" % errors)


def main():
    began = time.monotonic()
    prepare_artifacts(SHOTS)
    data_dir = tempfile.mkdtemp(prefix="aegis-sdk-signin.")
    gateway = start_gateway(FIXTURE, data_dir)  # SQLite in data_dir, whatever DATABASE_URL says
    step("gateway up at %s (data in %s); Gitea %s as %s" % (GATEWAY, data_dir, GITEA, USER["login"]))
    person = None
    failed = None
    try:
        person = Person()
        step("Chromium %s (%s); screenshots in %s" % (person.browser.browser.version, CHROMIUM, SHOTS))
        asyncio.run(asyncio.wait_for(scenario(person), TIMEOUT))
    except BaseException as error:  # noqa: BLE001 - reported below
        failed = error
        traceback.print_exc()
        if person:
            try:
                person.shot_on_failure("sdk-signin")
            except Exception:  # noqa: BLE001
                pass
    finally:
        if person:
            person.close()
        stop_gateway(gateway)
        close_listeners()
    print()
    shots = sorted(f for f in os.listdir(SHOTS) if f.endswith(".png"))
    print("Screenshots (%d):" % len(shots))
    for name in shots:
        print("  " + os.path.join(SHOTS, name))
    if failed is not None:
        print("--- gateway log (tail) ---")
        print(gateway_log(data_dir))
        why = "; ".join("%s: %s" % (type(e).__name__, e) for e in leaves(failed))
        step("FAIL: %s" % (why or type(failed).__name__))
        return 1
    step("PASS in %.1f s" % (time.monotonic() - began))
    return 0


if __name__ == "__main__":
    sys.exit(main())
