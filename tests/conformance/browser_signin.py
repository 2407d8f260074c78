"""The person in the middle of an OAuth sign-in, in a real browser, for the
clients under test here (the conformance suite's `authorization` command,
the TypeScript SDK client). Each prints its authorization URL and listens on
its own loopback `/callback`; `Person.sign_in(url, callback, label)` opens
the URL in a fresh browser context and clicks through what a person would:
our consent page (Approve), then Gitea's login and grant pages (whichever
Gitea shows), until the browser arrives at the client's callback. Returns
the pages seen.

The browser, screenshots and the walk through Gitea are those of the browser
tests (`tests/browser/common.py`): headless Debian Chromium through
Playwright, which never downloads a browser here.
"""

import os
import sys

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "browser"))
from common import GATEWAY, Browser, check, is_gateway_path, prepare_artifacts, through_gitea  # noqa: E402

CONSENT_BUTTON = "Approve and sign in with Gitea"


class Person:
    """One Chromium for the run; a fresh context (no cookies) per sign-in."""

    def __init__(self, login, password, artifacts, step):
        self.person = {"login": login, "password": password}
        prepare_artifacts(artifacts)
        self._playwright = sync_playwright().start()
        self.browser = Browser(self._playwright, artifacts, step)

    @property
    def version(self):
        return self.browser.browser.version

    def close(self):
        try:
            self.browser.close()
        finally:
            self._playwright.stop()

    def sign_in(self, authorization_url, callback, label):
        """Walks from `authorization_url` to the client's `callback`
        (`http://127.0.0.1:<port>/callback`); returns the pages seen."""
        check(
            authorization_url.startswith(GATEWAY + "/authorize?"),
            "not our authorization endpoint: %s" % authorization_url,
        )
        context = self.browser.context()
        page = self.browser.page(context)
        try:
            response = page.goto(authorization_url)
            check(response.status == 200, "our consent page answered %s" % response.status)
            check(is_gateway_path(page, "/authorize"), "no consent page at %s" % page.url)
            self.browser.shot(page, "%s-consent" % label)
            with page.expect_navigation():
                page.get_by_role("button", name=CONSENT_BUTTON).click()
            seen = ["consent"] + [
                "gitea-" + p for p in through_gitea(self.browser, page, self.person, label, lambda: page.url.startswith(callback))
            ]
            self.browser.shot(page, "%s-client-callback" % label)
            return seen
        except Exception:
            self.browser.shot_on_failure(label)
            raise
        finally:
            context.close()
