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
import hashlib
import json
import os
import secrets
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, HERE)

from common import (  # noqa: E402
    ARTIFACTS,
    CHROMIUM,
    FIXTURE,
    GATEWAY,
    GITEA,
    REVOKED_NOTICE,
    Browser,
    ClientListener,
    account_row,
    assert_acts_as,
    assert_dead,
    close_listeners,
    consent_and_sign_in,
    consent_deny,
    is_gateway_path,
    prepare_artifacts,
    revoke_on_account,
    sign_in_to_pages,
    visible_text,
)
from gateway import check, gateway_log, mcp_tool_call, start_gateway, stepper, stop_gateway  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

ALICE = FIXTURE["user"]
ADMIN = FIXTURE["admin"]
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

    def authorize_url(self, path="/mcp"):
        """A new authorization request (fresh state and verifier) for the MCP URL `path`."""
        self.verifier = secrets.token_urlsafe(48)
        self.state = secrets.token_urlsafe(16)
        self.captured.clear()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": GATEWAY + path,
            "scope": "gitea:read",
            "state": self.state,
        }
        return GATEWAY + "/authorize?" + urllib.parse.urlencode(query)

    def redeem(self, code, path="/mcp"):
        status, headers, answer = gateway_request(
            "POST",
            "/token",
            form={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "client_id": self.client_id,
                "code_verifier": self.verifier,
                "resource": GATEWAY + path,
            },
        )
        check(status == 200, "/token answered %s: %s" % (status, answer))
        check(headers.get("cache-control") == "no-store", "the token response is not cached")
        check(answer["token_type"] == "Bearer" and answer["access_token"].startswith("agm_"), "our token: %s" % answer.get("token_type"))
        return answer["access_token"]


def approve(browser, context, person, label, client_name, on_consent=None):
    """The whole consent flow in `context`: a new client, our consent page
    (approve; `on_consent(page)` checks it first), Gitea, the client's
    redirect; the code redeemed (only a redeemed code makes a grant that
    the pages list). Returns (client, access token, Gitea pages seen)."""
    client = Client(client_name)
    captured = client.captured
    page = browser.page(context)
    seen = consent_and_sign_in(browser, page, client.authorize_url(), client_name, person, label, client.listener, on_consent)
    check(captured.get("state") == client.state, "state came back: %s" % captured)
    check(captured.get("iss") == GATEWAY, "iss is our issuer: %s" % captured.get("iss"))
    check(captured.get("code", "").startswith("agm_"), "a code: %s" % captured)
    check("error" not in captured, "no error: %s" % captured)
    token = client.redeem(captured["code"])
    page.close()
    return client, token, seen


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
    consent_deny(browser, browser.page(context), client.authorize_url(), "deny", client.listener)
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
    page, _ = sign_in_to_pages(browser, context, ALICE, "account", "/account")
    row = account_row(page, client.name)
    check(row.count() == 1, "the approved client is listed on /account (%d rows)" % row.count())
    check("127.0.0.1" in row.inner_text(), "its redirect host is shown: %s" % row.inner_text())
    revoke_on_account(browser, page, client.name, "account")
    assert_dead(token)
    step("  the revoked client's access token gets 401 at /mcp")
    STATE["alice_session"] = context.storage_state()
    context.close()


def choose_read_and_write(page):
    """On our consent page: "read only" is preselected; the person picks "read and write"."""
    check(page.is_checked("input[name=access][value=read]"), "read only is the default")
    page.check("input[name=access][value=write]")
    check(page.is_checked("input[name=access][value=write]"), "read and write chosen")


def no_choice_on_a_readonly_url(page):
    check(page.locator("input[name=access]").count() == 0, "a /readonly URL offers no write")


def test_account_tells_connections_apart(browser):
    """4b. One client connected at /mcp (read and write chosen), /mcp/x/issue (read only, the default) and /mcp/readonly: three /account rows that differ in their URL, what they may do and their Gitea session."""
    name = "Three URLs %s" % RUN
    client = Client(name)
    context = browser.context()
    page = browser.page(context)
    for path, label, on_consent in (
        ("/mcp", "three-default", choose_read_and_write),
        ("/mcp/x/issue", "three-issue", None),
        ("/mcp/readonly", "three-readonly", no_choice_on_a_readonly_url),
    ):
        consent_and_sign_in(browser, page, client.authorize_url(path), name, ALICE, label, client.listener, on_consent)
        check(client.captured.get("state") == client.state, "state came back: %s" % client.captured)
        client.redeem(client.captured["code"], path)
    page.close()
    page, _ = sign_in_to_pages(browser, context, ALICE, "three-account", "/account")
    rows = account_row(page, name)
    check(rows.count() == 3, "three rows for one client at three URLs (%d)" % rows.count())
    cell = lambda i, label: rows.nth(i).locator("td[data-label='%s']" % label).inner_text()  # noqa: E731
    shown = sorted((cell(i, "Tools at"), cell(i, "May"), cell(i, "Gitea session")) for i in range(3))
    check(
        shown
        == [
            ("/mcp", "read and write", "read and write scopes"),
            ("/mcp/readonly", "read only", "read scopes"),
            ("/mcp/x/issue", "read only", "read scopes"),
        ],
        "each row names its URL, what it may do and its Gitea session: %s" % shown,
    )
    browser.shot(page, "account-three-connections")
    step("  /account tells the three connections apart: %s" % shown)
    context.close()


def test_activity_at_a_glance(browser):
    """4c. Three connections of two people call tools (through, failed at Gitea, refused); a few seconds later /account shows alice's two busy connections (chart and last calls) and /admin every user, client and the top tools. Screenshots: activity-account, activity-admin."""
    repo = FIXTURE["repos"]["user"]
    context = browser.context()
    connections = [
        (ALICE, "Activity one %s" % RUN),
        (ALICE, "Activity two %s" % RUN),
        (ADMIN, "Activity admin %s" % RUN),
    ]
    tokens = []
    for person, name in connections:
        # Gitea's session is per browser context: one per person.
        if person is ADMIN:
            context.close()
            context = browser.context()
        _, token, _ = approve(browser, context, person, "activity-%d" % len(tokens), name)
        tokens.append(token)
    context.close()
    for _ in range(3):
        assert_acts_as(tokens[0], ALICE["login"])
    # Gitea answers 404: an error. Arguments that do not fit: refused.
    status, _ = mcp_tool_call(GATEWAY, tokens[1], "gitea_call_read_operation", {"name": "gitea_repo_get", "arguments": {"owner": repo["owner"], "repo": "no-such-repo-%s" % RUN}})
    check(status == 200, "the failing call answered %s" % status)
    status, _ = mcp_tool_call(GATEWAY, tokens[1], "gitea_call_read_operation", {"arguments": {}})
    check(status == 200, "the refused call answered %s" % status)
    assert_acts_as(tokens[2], ADMIN["login"])
    time.sleep(2.6)  # the figures are written every 2 s
    context = browser.context()
    page, _ = sign_in_to_pages(browser, context, ALICE, "activity-account", "/account")
    text = visible_text(page)
    check("What your clients did, last 7 days" in text, "the activity section: %s" % text[:500])
    account_charts = page.locator("svg.activity-chart").count()
    check(account_charts >= 2, "a chart per busy connection (%d)" % account_charts)
    check("gitea_call_read_operation refused" in text and "gitea_call_read_operation error" in text, "the last calls say how they ended")
    page.locator("h2", has_text="What your clients did").scroll_into_view_if_needed()
    browser.shot(page, "activity-account")
    context.close()
    context = browser.context()
    page, _ = sign_in_to_pages(browser, context, ADMIN, "activity-admin", "/admin")
    text = visible_text(page)
    check("Activity, last 7 days" in text and "Top tools" in text, "the admin's activity section: %s" % text[:500])
    admin_charts = page.locator("svg.activity-chart").count()
    check(admin_charts >= 4, "charts by user and by client (%d)" % admin_charts)
    page.locator("h2", has_text="Activity, last 7 days").scroll_into_view_if_needed()
    browser.shot(page, "activity-admin")
    step("  /account: %d charts for alice; /admin: %d charts by user and client" % (account_charts, admin_charts))
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
    page, _ = sign_in_to_pages(browser, context, ADMIN, "admin", "/admin")
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
    page, _ = sign_in_to_pages(browser, context, ALICE, "phone-account", "/account")
    row = account_row(page, client.name)
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
    check(REVOKED_NOTICE in visible_text(page), "the notice is shown")
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
    test_account_tells_connections_apart,
    test_activity_at_a_glance,
    test_non_admin_forbidden,
    test_admin_revoke_all,
    test_security_headers,
    test_phone_account,
    test_no_console_errors,
]


def main(selected):
    prepare_artifacts(ARTIFACTS)
    tests = [t for t in TESTS if not selected or t.__name__ in selected]
    check(tests, "no test named %s" % selected)
    data_dir = tempfile.mkdtemp(prefix="aegis-browser-e2e.")
    gateway = start_gateway(FIXTURE, data_dir)  # SQLite in data_dir, whatever DATABASE_URL says
    step("gateway up at %s (data in %s); Gitea %s; screenshots in %s" % (GATEWAY, data_dir, GITEA, ARTIFACTS))
    results = []
    try:
        with sync_playwright() as playwright:
            browser = Browser(playwright, ARTIFACTS, step)
            step("Chromium %s (%s)" % (browser.browser.version, CHROMIUM))
            for test in tests:
                step("%s: %s" % (test.__name__, test.__doc__.strip()))
                began = time.monotonic()
                try:
                    test(browser)
                    results.append((test.__name__, "PASS", time.monotonic() - began, ""))
                except Exception as err:  # noqa: BLE001 - every failure is reported
                    traceback.print_exc()
                    browser.shot_on_failure(test.__name__)
                    results.append((test.__name__, "FAIL", time.monotonic() - began, "%s: %s" % (type(err).__name__, err)))
            browser.close()
    finally:
        stop_gateway(gateway)
        close_listeners()
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
