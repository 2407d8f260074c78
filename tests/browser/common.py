"""What the browser tests share: headless Chromium through Playwright, the
client's loopback redirect listener, and the person's walk through our pages
and Gitea's.

Imported by `pages_e2e.py` and `sdk_signin_e2e.py` (both add this directory
and `tests/e2e` to `sys.path`). Needs `pip install playwright` (never
`playwright install`: the browser is `$AEGIS_CHROMIUM`, default
`/usr/bin/chromium`) and a seeded Gitea's `$AEGIS_E2E_DIR/fixture.json`.

- `Browser(playwright, artifacts_dir, step)`: the one Chromium of a run,
  fresh contexts, numbered full-page screenshots (`shot`), and what the pages
  reported (dialogs; console errors and failed subresources on our pages).
- `prepare_artifacts(path)`: creates the screenshot dir, removes old `NN-*.png`.
- `ClientListener()`: a loopback `/callback` server (RFC 8252) recording the
  redirect's query in `.captured`; `close_listeners()` ends them all.
- `consent_and_sign_in(...)`: our consent page (Approve), then Gitea;
  `consent_deny(...)`: our consent page (Deny).
- `through_gitea(...)`: Gitea's login form and grant page, whichever show.
- `sign_in_to_pages(...)`: `/account` or `/admin` signed out → signed in.
- `revoke_on_account(...)`: a client's row on `/account` → Revoke.
- `assert_acts_as(token, login)`, `assert_dead(token)`: at `/mcp`.
"""

import glob
import html
import http.server
import json
import os
import sys
import threading
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
if os.path.join(ROOT, "tests", "e2e") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from gateway import check, load_fixture, mcp_tool_call  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
GITEA = FIXTURE["gitea_url"].rstrip("/")
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
REVOKED_NOTICE = "The client was revoked. Its tokens no longer work."


def prepare_artifacts(path):
    """Creates the screenshot dir and removes the `NN-*.png` of an earlier run."""
    os.makedirs(path, exist_ok=True)
    for old in glob.glob(os.path.join(path, "[0-9][0-9]-*.png")):
        os.remove(old)
    return path


# ------------------------------------------------------------ the client side


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

    def reset(self):
        """Forgets the last redirect, before the next sign-in."""
        self.captured.clear()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


LISTENERS = []


def close_listeners():
    while LISTENERS:
        LISTENERS.pop().close()


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


# ----------------------------------------------------------- the browser side


class Browser:
    """The one Chromium of the run, fresh contexts for every test, the
    screenshot counter, and what every page reported (dialogs, console
    errors on our pages). `step` prints progress (tests/e2e/gateway.py's
    `stepper`); screenshots go to `artifacts` as `NN-what.png`."""

    def __init__(self, playwright, artifacts, step):
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        self.artifacts = artifacts
        self.step = step
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
        page.screenshot(path=os.path.join(self.artifacts, name), full_page=True)
        self.shots.append((name, page.url))
        self.step("  screenshot %s  (%s)" % (name, page.url.split("?")[0]))
        return name

    def shot_on_failure(self, what):
        """A screenshot of the page last used, if it is still open (never raises)."""
        try:
            if self.current and not self.current.is_closed():
                return self.shot(self.current, "FAILED-%s" % what)
        except Exception:  # noqa: BLE001 - the failure being reported matters more
            pass
        return None

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


def consent_and_sign_in(browser, page, authorization_url, client_name, person, label, listener, on_consent=None):
    """A person in `page` opens a client's authorization URL: our consent
    page (it must name `client_name`; `on_consent(page)` checks more) →
    Approve → Gitea (login, grant: whichever it shows) → the client's
    `listener`. Returns the Gitea pages seen; the redirect's query is in
    `listener.captured` (checked for `state` and `iss` by the caller)."""
    response = page.goto(authorization_url)
    check(response.status == 200, "consent page answered %s" % response.status)
    check(is_gateway_path(page, "/authorize"), "the authorization URL shows our consent page: %s" % page.url)
    check(client_name in page.inner_text("h1"), "the consent page names the client: %s" % page.inner_text("h1"))
    if on_consent:
        on_consent(page)
    browser.shot(page, "%s-consent" % label)
    with page.expect_navigation():
        page.get_by_role("button", name="Approve and sign in with Gitea").click()
    seen = through_gitea(browser, page, person, label, lambda: "url" in listener.captured)
    browser.step("  Gitea pages: %s" % (" → ".join(seen) or "none (already signed in and granted)"))
    check(page.url.startswith(listener.redirect_uri), "the browser ended at the client: %s" % page.url)
    browser.shot(page, "%s-client-callback" % label)
    return seen


def consent_deny(browser, page, authorization_url, label, listener, client_name=None):
    """A person in `page` opens a client's authorization URL and clicks Deny
    on our consent page; the browser ends at the client's `listener`
    (whose `captured` the caller checks for `error=access_denied`)."""
    response = page.goto(authorization_url)
    check(response.status == 200, "consent page answered %s" % response.status)
    if client_name is not None:
        check(client_name in page.inner_text("h1"), "the consent page names the client: %s" % page.inner_text("h1"))
    browser.shot(page, "%s-consent" % label)
    with page.expect_navigation():
        page.get_by_role("button", name="Deny").click()
    page.wait_for_load_state("load")
    check("url" in listener.captured, "the browser went back to the client: %s" % page.url)
    browser.shot(page, "%s-client-callback" % label)


def sign_in_to_pages(browser, context, person, label, path):
    """Opens `path` (/account or /admin) signed out, clicks "Sign in with
    Gitea", goes through Gitea, lands on `path`. Returns the page and the
    Gitea pages seen."""
    page = browser.page(context)
    response = page.goto(GATEWAY + path)
    check(response.status == 200, "%s signed out answered %s" % (path, response.status))
    button = page.get_by_role("button", name="Sign in with Gitea")
    check(button.count() == 1, "a sign-in button on %s" % path)
    browser.shot(page, "%s-sign-in" % label)
    with page.expect_navigation():
        button.click()
    seen = through_gitea(browser, page, person, label, lambda: is_gateway_path(page, path))
    browser.step("  Gitea pages: %s" % (" → ".join(seen) or "none (already signed in and granted)"))
    check("Signed in as %s" % person["login"] in visible_text(page), "signed in as %s" % person["login"])
    return page, seen


def account_row(page, client_name):
    """The `/account` table rows of the client named `client_name`."""
    return page.locator("tbody tr", has=page.locator("td.client-name", has_text=client_name))


def revoke_on_account(browser, page, client_name, label):
    """On `/account`: the one row of `client_name` → Revoke (→ its
    confirmation page, should there be one) → back on `/account` with the
    notice and without the row. Screenshots before and after."""
    row = account_row(page, client_name)
    check(row.count() == 1, "the client %r is listed once on /account (%d rows)" % (client_name, row.count()))
    browser.shot(page, label)
    with page.expect_navigation():
        row.get_by_role("button", name="Revoke", exact=True).click()
    if not is_gateway_path(page, "/account"):
        # A confirmation step, should the page ask first.
        browser.shot(page, "%s-confirm" % label)
        confirm = page.get_by_role("button", name="Revoke", exact=True)
        check(confirm.count() == 1, "one Revoke button on the confirmation page %s: %s" % (page.url, visible_text(page)[:300]))
        with page.expect_navigation():
            confirm.click()
    check(is_gateway_path(page, "/account") and "done=revoked" in page.url, "back on /account: %s" % page.url)
    check(REVOKED_NOTICE in visible_text(page), "the notice is shown: %s" % visible_text(page)[:300])
    check(account_row(page, client_name).count() == 0, "the row of %r is gone" % client_name)
    browser.shot(page, "%s-revoked" % label)
