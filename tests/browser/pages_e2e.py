#!/usr/bin/env python3
"""The browser pages in a real browser: headless Chromium (Debian's
`/usr/bin/chromium`, driven by Playwright for Python) against the gateway
binary and the real Gitea seeded by `tests/e2e/gitea.sh start`.

The gateway is started by the shared helper in `tests/e2e/gateway.py` on the
fixture's `gateway_url`, with its own SQLite store in a temporary DATA_DIR.
MCP clients are played over plain HTTP (registration, `/token`, `/mcp`); the
person is the browser. Every page a test visits is saved as a full-page
screenshot `NN-what.png` in `$AEGIS_ARTIFACTS_DIR` (default
`target/browser-artifacts/`).

The tests run in order (later ones use what earlier ones made) and each gets
fresh browser contexts (no cookies, no storage). A summary lists PASS/FAIL per
test; the exit status is 1 when any failed. See tests/browser/README.md.

Usage: python3 tests/browser/pages_e2e.py [test name ...]
Needs: `pip install playwright` (never `playwright install`: the browser is
`$AEGIS_CHROMIUM`, default /usr/bin/chromium), a running seeded Gitea
(`$AEGIS_E2E_DIR/fixture.json`) and a built gateway (`$AEGIS_BIN`).
"""

import base64
import glob
import hashlib
import html
import http.server
import json
import os
import secrets
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from gateway import check, gateway_log, load_fixture, mcp_tool_call, start_gateway, stepper, stop_gateway  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
GITEA = FIXTURE["gitea_url"].rstrip("/")
ALICE = FIXTURE["user"]
ADMIN = FIXTURE["admin"]
ARTIFACTS = os.environ.get("AEGIS_ARTIFACTS_DIR") or os.path.join(ROOT, "target", "browser-artifacts")
CHROMIUM = os.environ.get("AEGIS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Client names are unique per run, so a page is checked for this run's rows.
RUN = secrets.token_hex(3)
XSS_NAME = "<script>alert(1)</script>"
PHONE = {"width": 390, "height": 844}


step = stepper("browser-e2e")



# ---------------------------------------------------------------- HTTP side


def gateway_request(method, path, form=None, body=None):
    """(status, headers, parsed JSON or text) of a request to the gateway."""
    headers = {}
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(GATEWAY + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, response_headers, text = response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as err:
        status, response_headers, text = err.code, err.headers, err.read().decode()
    try:
        return status, response_headers, json.loads(text)
    except ValueError:
        return status, response_headers, text


class ClientListener:
    """The client's loopback redirect listener (RFC 8252, what native MCP
    clients run): a one-route HTTP server on a port of its own that records
    the query of the browser's visit and answers with a small page.

    (Playwright's `route()` cannot stand in for it: it never sees the
    target of a redirect, and the browser reaches the client only through
    303s from the gateway.)"""

    def __init__(self):
        captured = self.captured = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parsed = urllib.parse.urlparse(self.path)
                if parsed.path != "/callback":
                    self.send_error(404)
                    return
                query = dict(urllib.parse.parse_qsl(parsed.query))
                captured.update(query)
                captured["url"] = self.path
                shown = {k: (v[:12] + "…" if k == "code" else v) for k, v in query.items()}
                body = (
                    "<!doctype html><meta charset=utf-8><title>Client callback</title>"
                    "<h1>The client received its redirect</h1><pre>%s</pre>" % html.escape(json.dumps(shown, indent=2, ensure_ascii=False))
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = "http://127.0.0.1:%d/callback" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        LISTENERS.append(self)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


LISTENERS = []


class Client:
    """An MCP client registered over HTTP (public, PKCE) whose redirect URI
    is its own loopback listener."""

    def __init__(self, name):
        self.name = name
        self.listener = ClientListener()
        self.captured = self.listener.captured
        self.redirect_uri = self.listener.redirect_uri
        status, _, answer = gateway_request(
            "POST",
            "/register",
            body={
                "client_name": name,
                "redirect_uris": [self.redirect_uri],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        check(status == 201, "registration answered %s: %s" % (status, answer))
        check("client_secret" not in answer, "a public client gets no secret")
        self.client_id = answer["client_id"]
        self.verifier = secrets.token_urlsafe(48)
        self.state = secrets.token_urlsafe(16)

    def authorize_url(self):
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": GATEWAY + "/mcp",
            "scope": "gitea",
            "state": self.state,
        }
        return GATEWAY + "/authorize?" + urllib.parse.urlencode(query)

    def redeem(self, code):
        status, headers, answer = gateway_request(
            "POST",
            "/token",
            form={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "client_id": self.client_id,
                "code_verifier": self.verifier,
                "resource": GATEWAY + "/mcp",
            },
        )
        check(status == 200, "/token answered %s: %s" % (status, answer))
        check(headers.get("cache-control") == "no-store", "the token response is not cached")
        check(answer["token_type"] == "Bearer" and answer["access_token"].startswith("agm_"), "our token: %s" % answer.get("token_type"))
        return answer["access_token"]


def assert_acts_as(token, login):
    status, envelope = mcp_tool_call(GATEWAY, token, "gitea_user_get_current")
    check(status == 200, "/mcp answered %s (%s)" % (status, envelope))
    check(envelope["identity"]["login"] == login, "identity %s" % envelope["identity"])
    check(envelope["identity"]["mode"] == "oauth", "identity %s" % envelope["identity"])
    check(envelope["data"]["login"] == login, "Gitea answered as %s" % envelope["data"].get("login"))


def assert_dead(token):
    status, challenge = mcp_tool_call(GATEWAY, token, "gitea_user_get_current")
    check(status == 401, "a revoked token got %s at /mcp" % status)
    check(challenge and "resource_metadata=" in challenge, "the 401 names the resource metadata: %s" % challenge)


# ------------------------------------------------------------- browser side


class Browser:
    """The one Chromium of the run, fresh contexts for every test, the
    screenshot counter, and what every page reported (dialogs, console
    errors on our pages)."""

    def __init__(self, playwright):
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        self.shots = []
        self.dialogs = []
        self.console_errors = []
        self.current = None  # the last page used, for a screenshot on failure

    def context(self, **options):
        context = self.browser.new_context(**options)
        context.set_default_timeout(30_000)
        context.set_default_navigation_timeout(30_000)
        context.on("page", self._watch)
        return context

    def page(self, context):
        page = context.new_page()
        self._watch(page)
        self.current = page
        return page

    def _watch(self, page):
        if getattr(page, "_aegis_watched", False):
            return
        page._aegis_watched = True

        def on_dialog(dialog):
            self.dialogs.append((page.url, dialog.type, dialog.message))
            dialog.dismiss()

        def on_console(message):
            # "Failed to load resource" repeats a response seen below (and
            # a page's own 403/404 status is intended).
            if message.type == "error" and page.url.startswith(GATEWAY) and "Failed to load resource" not in message.text:
                self.console_errors.append((page.url, message.text))

        def on_response(response):
            request = response.request
            if (
                response.status >= 400
                and request.resource_type != "document"
                and response.url.startswith(GATEWAY)
                and urllib.parse.urlparse(response.url).path != "/favicon.ico"
            ):
                self.console_errors.append((page.url, "%s %s" % (response.status, response.url)))

        def on_page_error(error):
            if page.url.startswith(GATEWAY):
                self.console_errors.append((page.url, str(error)))

        page.on("dialog", on_dialog)
        page.on("console", on_console)
        page.on("pageerror", on_page_error)
        page.on("response", on_response)

    def shot(self, page, what):
        name = "%02d-%s.png" % (len(self.shots) + 1, what)
        page.screenshot(path=os.path.join(ARTIFACTS, name), full_page=True)
        self.shots.append((name, page.url))
        step("  screenshot %s  (%s)" % (name, page.url.split("?")[0]))
        return name

    def close(self):
        self.browser.close()


def visible_text(page):
    return page.inner_text("body")


def is_gateway_path(page, path):
    parsed = urllib.parse.urlparse(page.url)
    return page.url.startswith(GATEWAY) and parsed.path == path


def through_gitea(browser, page, person, label, done):
    """From wherever the last click led: Gitea's login page (filled as
    `person`), Gitea's grant page (shown only until the person has granted
    the application once), until `done()`. Returns the Gitea pages seen."""
    seen = []
    for _ in range(6):
        page.wait_for_load_state("load")
        if done():
            return seen
        on_gitea = page.url.startswith(GITEA)
        if on_gitea and page.locator("#user_name").count():
            check("login" not in seen, "Gitea showed its login page again: %s" % visible_text(page)[:300])
            page.fill("#user_name", person["login"])
            page.fill("#password", person["password"])
            browser.shot(page, "%s-gitea-login" % label)
            with page.expect_navigation():
                page.locator("form:has(#user_name) button.primary").click()
            seen.append("login")
        elif on_gitea and page.locator("#authorize-app").count():
            check("grant" not in seen, "Gitea showed its grant page again")
            browser.shot(page, "%s-gitea-grant" % label)
            with page.expect_navigation():
                page.click("#authorize-app")
            seen.append("grant")
        else:
            browser.shot(page, "%s-unexpected" % label)
            raise AssertionError("unexpected page %s: %s" % (page.url, visible_text(page)[:500]))
    raise AssertionError("too many steps through Gitea: %s" % seen)


def approve(browser, context, person, label, client_name, on_consent=None):
    """The whole consent flow in `context`: a new client, our consent page
    (approve; `on_consent(page)` checks it first), Gitea, the client's
    redirect; the code redeemed (only a redeemed code makes a grant that
    the pages list). Returns (client, access token, Gitea pages seen)."""
    client = Client(client_name)
    captured = client.captured
    page = browser.page(context)
    response = page.goto(client.authorize_url())
    check(response.status == 200, "consent page answered %s" % response.status)
    check(client_name in page.inner_text("h1"), "the consent page names the client: %s" % page.inner_text("h1"))
    if on_consent:
        on_consent(page)
    browser.shot(page, "%s-consent" % label)
    with page.expect_navigation():
        page.get_by_role("button", name="Approve and sign in with Gitea").click()
    seen = through_gitea(browser, page, person, label, lambda: "url" in captured)
    step("  Gitea pages: %s" % (" → ".join(seen) or "none (already signed in and granted)"))
    browser.shot(page, "%s-client-callback" % label)
    check(captured.get("state") == client.state, "state came back: %s" % captured)
    check(captured.get("iss") == GATEWAY, "iss is our issuer: %s" % captured.get("iss"))
    check(captured.get("code", "").startswith("agm_"), "a code: %s" % captured)
    check("error" not in captured, "no error: %s" % captured)
    token = client.redeem(captured["code"])
    page.close()
    return client, token, seen


def sign_in_to_pages(browser, context, person, label, path):
    """Opens `path` (/account or /admin) signed out, clicks "Sign in with
    Gitea", goes through Gitea, lands on `path`. Returns the page."""
    page = browser.page(context)
    response = page.goto(GATEWAY + path)
    check(response.status == 200, "%s signed out answered %s" % (path, response.status))
    button = page.get_by_role("button", name="Sign in with Gitea")
    check(button.count() == 1, "a sign-in button on %s" % path)
    browser.shot(page, "%s-sign-in" % label)
    with page.expect_navigation():
        button.click()
    seen = through_gitea(browser, page, person, label, lambda: is_gateway_path(page, path))
    step("  Gitea pages: %s" % (" → ".join(seen) or "none (already signed in and granted)"))
    check("Signed in as %s" % person["login"] in visible_text(page), "signed in as %s" % person["login"])
    return page


def check_page_headers(response, what):
    headers = response.headers  # lower-case names
    check(headers.get("cache-control") == "no-store", "%s: cache-control %r" % (what, headers.get("cache-control")))
    check(headers.get("x-frame-options") == "DENY", "%s: x-frame-options %r" % (what, headers.get("x-frame-options")))
    csp = headers.get("content-security-policy", "")
    check("frame-ancestors 'none'" in csp, "%s: CSP %r" % (what, csp))
    check("unsafe-inline" not in csp and "script-src" not in csp, "%s: CSP allows no script: %r" % (what, csp))
    check(headers.get("x-content-type-options") == "nosniff", "%s: nosniff" % what)
    check(headers.get("referrer-policy") == "no-referrer", "%s: referrer-policy" % what)


def page_width(page):
    return page.evaluate("() => document.documentElement.scrollWidth")


# ------------------------------------------------------------------- tests

STATE = {}


def need(key, test):
    check(key in STATE, "needs what %s makes (it failed or did not run)" % test)
    return STATE[key]


def test_consent_approve(browser):
    """1. Consent page → approve → Gitea login (→ grant) → client redirect; the code redeemed; the token acts as alice."""
    context = browser.context()
    name = "Browser E2E approve %s" % RUN
    client, token, seen = approve(browser, context, ALICE, "approve", name)
    check(seen[:1] == ["login"], "a fresh browser signs in at Gitea: %s" % seen)
    assert_acts_as(token, ALICE["login"])
    step("  the access token acts as %s at /mcp" % ALICE["login"])
    STATE["approve_client"] = client
    STATE["approve_token"] = token
    context.close()


def test_consent_deny(browser):
    """2. Consent page → Deny → the client gets access_denied with its state."""
    context = browser.context()
    client = Client("Browser E2E deny %s" % RUN)
    captured = client.captured
    page = browser.page(context)
    check(page.goto(client.authorize_url()).status == 200, "consent page")
    browser.shot(page, "deny-consent")
    with page.expect_navigation():
        page.get_by_role("button", name="Deny").click()
    page.wait_for_load_state("load")
    check("url" in captured, "the browser went back to the client: %s" % page.url)
    browser.shot(page, "deny-client-callback")
    check(captured.get("error") == "access_denied", "error: %s" % captured)
    check(captured.get("state") == client.state, "state came back: %s" % captured)
    check(captured.get("iss") == GATEWAY, "iss: %s" % captured)
    check("code" not in captured, "no code on deny")
    context.close()


def test_hostile_client_name(browser):
    """3. A client named <script>alert(1)</script>: the consent page shows the name as text; nothing runs."""
    context = browser.context()
    client = Client(XSS_NAME)
    page = browser.page(context)
    before = len(browser.dialogs)
    check(page.goto(client.authorize_url()).status == 200, "consent page")
    page.wait_for_load_state("load")
    browser.shot(page, "hostile-name-consent")
    text = visible_text(page)
    check(text.count(XSS_NAME) >= 2, "the name appears literally (heading and facts): %r" % text[:400])
    check(XSS_NAME in page.title(), "the title names it literally: %r" % page.title())
    check(page.locator("script").count() == 0, "no script element in the page")
    check(len(browser.dialogs) == before, "a dialog fired: %s" % browser.dialogs[before:])
    STATE["xss_client"] = client
    context.close()


def test_account_revoke(browser):
    """4. /account signed out → Sign in with Gitea as alice → the client of test 1 listed → Revoke → its token gets 401."""
    client = need("approve_client", "test_consent_approve")
    token = need("approve_token", "test_consent_approve")
    context = browser.context()
    page = sign_in_to_pages(browser, context, ALICE, "account", "/account")
    row = page.locator("tbody tr", has=page.locator("td.client-name", has_text=client.name))
    check(row.count() == 1, "the approved client is listed on /account (%d rows)" % row.count())
    check("127.0.0.1" in row.inner_text(), "its redirect host is shown: %s" % row.inner_text())
    browser.shot(page, "account")
    with page.expect_navigation():
        row.get_by_role("button", name="Revoke").click()
    check(is_gateway_path(page, "/account") and "done=revoked" in page.url, "back on /account: %s" % page.url)
    check("The client was revoked. Its tokens no longer work." in visible_text(page), "the notice is shown")
    check(page.locator("td.client-name", has_text=client.name).count() == 0, "the row is gone")
    browser.shot(page, "account-revoked")
    assert_dead(token)
    step("  the revoked client's access token gets 401 at /mcp")
    STATE["alice_session"] = context.storage_state()
    context.close()


def test_non_admin_forbidden(browser):
    """5. alice's page session at /admin and /admin/confirm → 403; a posted admin action → 403."""
    session = need("alice_session", "test_account_revoke")
    context = browser.context(storage_state=session)
    page = browser.page(context)
    response = page.goto(GATEWAY + "/admin")
    check(response.status == 403, "/admin for alice answered %s" % response.status)
    check("Administrators only" in visible_text(page), "the 403 page says why: %s" % visible_text(page)[:300])
    check_page_headers(response, "/admin 403")
    browser.shot(page, "admin-forbidden")
    response = page.goto(GATEWAY + "/admin/confirm?action=revoke-user&target=" + ADMIN["login"])
    check(response.status == 403, "/admin/confirm for alice answered %s" % response.status)
    # With alice's own valid form token, the action itself is refused too.
    page.goto(GATEWAY + "/account")
    csrf = page.locator('input[name="csrf_token"]').first.get_attribute("value")
    posted = context.request.post(
        GATEWAY + "/admin/actions",
        form={"csrf_token": csrf, "action": "revoke-user", "target": ADMIN["login"]},
        headers={"Origin": GATEWAY},
        max_redirects=0,
    )
    check(posted.status == 403, "POST /admin/actions for alice answered %s" % posted.status)
    context.close()


def test_admin_revoke_all(browser):
    """6. A fresh grant of alice; the admin signs in at /admin, follows "Revoke all of alice", confirms; alice's token gets 401."""
    alice = browser.context()
    client, token, _ = approve(browser, alice, ALICE, "admin-alice", "Browser E2E admin-revoke %s" % RUN)
    assert_acts_as(token, ALICE["login"])
    alice.close()
    step("  alice's fresh grant works")

    context = browser.context()
    page = sign_in_to_pages(browser, context, ADMIN, "admin", "/admin")
    text = visible_text(page)
    check("(administrator)" in text, "signed in as an administrator")
    grants_table = page.locator("section.card").nth(0)
    row = grants_table.locator("tbody tr", has=page.locator("td.client-name", has_text=client.name))
    check(row.count() == 1, "alice's grant is listed (%d rows)" % row.count())
    check(ALICE["login"] in row.inner_text(), "the grant row names alice: %s" % row.inner_text())
    check(XSS_NAME in text or "xss_client" not in STATE, "the hostile client name is listed as text")
    check(page.locator("script").count() == 0, "no script element on /admin")
    browser.shot(page, "admin")
    link = page.get_by_role("link", name="Revoke all of %s" % ALICE["login"], exact=True).first
    with page.expect_navigation():
        link.click()
    check(is_gateway_path(page, "/admin/confirm"), "the confirm page: %s" % page.url)
    check("Revoke every grant of this user?" in visible_text(page), "it asks: %s" % visible_text(page)[:300])
    check(ALICE["login"] in visible_text(page), "it names alice")
    browser.shot(page, "admin-confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke all", exact=True).click()
    check(is_gateway_path(page, "/admin") and "done=revoke-user" in page.url, "back on /admin: %s" % page.url)
    check("Every grant of that user was revoked." in visible_text(page), "the notice is shown")
    check(grants_table.locator("td.client-name", has_text=client.name).count() == 0, "alice's grant is no longer listed")
    check(grants_table.get_by_role("link", name="Revoke all of %s" % ALICE["login"]).count() == 0, "no grant of alice is left")
    browser.shot(page, "admin-revoked")
    assert_dead(token)
    step("  alice's access token gets 401 at /mcp")
    STATE["admin_session"] = context.storage_state()
    context.close()


def test_security_headers(browser):
    """7. The consent page, /account (signed out and in), /admin send no-store, DENY, frame-ancestors 'none', nosniff, no-referrer."""
    context = browser.context()
    client = Client("Browser E2E headers %s" % RUN)
    page = browser.page(context)
    check_page_headers(page.goto(client.authorize_url()), "consent page")
    check_page_headers(page.goto(GATEWAY + "/account"), "/account signed out")
    browser.shot(page, "headers-account-signed-out")
    context.close()
    if "admin_session" in STATE:
        context = browser.context(storage_state=STATE["admin_session"])
        page = browser.page(context)
        check_page_headers(page.goto(GATEWAY + "/account"), "/account signed in")
        check_page_headers(page.goto(GATEWAY + "/admin"), "/admin")
        context.close()


def test_phone_account(browser):
    """8. At 390x844 (touch): the consent page and /account (with a connected client) fit the phone's width; Revoke works by tap."""
    context = browser.context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)

    def fits(page):
        check(page_width(page) <= PHONE["width"], "the consent page is %d px wide on a %d px phone" % (page_width(page), PHONE["width"]))

    client, token, _ = approve(browser, context, ALICE, "phone", "Browser E2E phone %s" % RUN, on_consent=fits)
    assert_acts_as(token, ALICE["login"])
    page = sign_in_to_pages(browser, context, ALICE, "phone-account", "/account")
    row = page.locator("tbody tr", has=page.locator("td.client-name", has_text=client.name))
    check(row.count() == 1, "the phone's client is listed")
    check(page_width(page) <= PHONE["width"], "/account is %d px wide on a %d px phone" % (page_width(page), PHONE["width"]))
    browser.shot(page, "phone-account")
    # The table scrolls sideways inside its box; the row's Revoke button is
    # reached by scrolling it (Playwright scrolls it into view, as a thumb would).
    revoke = row.get_by_role("button", name="Revoke")
    box = revoke.bounding_box()
    step("  the row's Revoke button starts at x=%d px on a %d px screen" % (box["x"], PHONE["width"]))
    with page.expect_navigation():
        revoke.tap()
    check("The client was revoked. Its tokens no longer work." in visible_text(page), "the notice is shown")
    check(page_width(page) <= PHONE["width"], "/account after revoking is %d px wide" % page_width(page))
    browser.shot(page, "phone-account-revoked")
    assert_dead(token)
    context.close()


def test_no_console_errors(browser):
    """9. No page of ours logged a console error (a CSP violation would) or failed to load a subresource, in any test."""
    check(not browser.console_errors, "console errors or failed subresources on our pages: %s" % browser.console_errors)


TESTS = [
    test_consent_approve,
    test_consent_deny,
    test_hostile_client_name,
    test_account_revoke,
    test_non_admin_forbidden,
    test_admin_revoke_all,
    test_security_headers,
    test_phone_account,
    test_no_console_errors,
]


def main(selected):
    os.makedirs(ARTIFACTS, exist_ok=True)
    for old in glob.glob(os.path.join(ARTIFACTS, "[0-9][0-9]-*.png")):
        os.remove(old)
    tests = [t for t in TESTS if not selected or t.__name__ in selected]
    check(tests, "no test named %s" % selected)
    data_dir = tempfile.mkdtemp(prefix="aegis-browser-e2e.")
    gateway = start_gateway(FIXTURE, data_dir)  # SQLite in data_dir, whatever DATABASE_URL says
    step("gateway up at %s (data in %s); Gitea %s; screenshots in %s" % (GATEWAY, data_dir, GITEA, ARTIFACTS))
    results = []
    try:
        with sync_playwright() as playwright:
            browser = Browser(playwright)
            step("Chromium %s (%s)" % (browser.browser.version, CHROMIUM))
            for test in tests:
                step("%s: %s" % (test.__name__, test.__doc__.strip()))
                began = time.monotonic()
                try:
                    test(browser)
                    results.append((test.__name__, "PASS", time.monotonic() - began, ""))
                except Exception as err:  # noqa: BLE001 - every failure is reported
                    traceback.print_exc()
                    try:
                        if browser.current and not browser.current.is_closed():
                            browser.shot(browser.current, "FAILED-%s" % test.__name__)
                    except Exception:  # noqa: BLE001
                        pass
                    results.append((test.__name__, "FAIL", time.monotonic() - began, "%s: %s" % (type(err).__name__, err)))
            browser.close()
    finally:
        stop_gateway(gateway)
        for listener in LISTENERS:
            listener.close()
    print()
    print("Summary (screenshots in %s):" % ARTIFACTS)
    for name, verdict, seconds, why in results:
        print("  %s  %-28s %6.1f s  %s" % (verdict, name, seconds, why[:300]))
    failed = [r for r in results if r[1] == "FAIL"]
    print("%d passed, %d failed" % (len(results) - len(failed), len(failed)))
    if failed:
        print("--- gateway log (tail) ---")
        print(gateway_log(data_dir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
