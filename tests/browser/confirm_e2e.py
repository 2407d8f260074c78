#!/usr/bin/env python3
"""A person in the loop against the real Gitea (issue 28): the official
Python MCP SDK deletes a branch as an OAuth user; headless Chromium, signed
in as the same user, approves it on the confirmation page.

1. The SDK (signed in at `/mcp`, "read and write" chosen) deletes a branch
   through `gitea_call_write_operation`: the result is `confirmation_required` with the
   page's URL, and the branch is still in Gitea.
2. Chromium signs in to `/account` as the same user (Gitea's login form),
   finds the call listed, opens the page, and approves it (screenshots).
3. The SDK's retry of the same call deletes the branch, once: Gitea's API
   answers 404 for it. A second retry is a new request. A call for another
   branch is a new request too, and that branch stays.
4. Over stdio with `CONFIRM_ADMIN=destructive`, the SDK's elicitation
   callback is asked; declining leaves the other branch in place, and
   accepting deletes it.
5. On the 2026-07-28 wire, the SDK (with an elicitation callback) deletes a
   repository: the gateway answers input-required with a form asking for
   the repository's name. A wrong name is refused and the repository stays;
   a forged or altered `requestState` is refused; the SDK's own
   multi-round-trip driver with the right name deletes it, once (the same
   answer again is refused as a replay).

Usage: tests/browser/confirm_e2e.py (reads $AEGIS_E2E_DIR/fixture.json; the
gateway binary is $AEGIS_BIN, default target/debug/aegis-gitea-mcp). Needs
`pip install mcp playwright` and /usr/bin/chromium.
"""

import asyncio
import json
import os
import secrets
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, HERE)

from common import ARTIFACTS, CHROMIUM, FIXTURE, GATEWAY, GITEA, Browser, prepare_artifacts, sign_in_to_pages, visible_text  # noqa: E402
from gateway import check, gateway_binary, run_against_gateway, stepper  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from sdk_common import MemoryStorage, Person, envelope, sdk_oauth_provider  # noqa: E402

USER = FIXTURE["user"]
REPO = FIXTURE["repos"]["user"]
CLIENT_CALLBACK = "http://127.0.0.1:53684/callback"
SHOTS = os.path.join(ARTIFACTS, "confirm")

step = stepper("confirm-e2e")


def gitea(method, path, body=None):
    """Gitea's API as the admin: (status, JSON or None)."""
    request = urllib.request.Request(
        GITEA + "/api/v1" + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": "token " + FIXTURE["admin"]["token"], "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        return err.code, None


def branch_exists(name):
    status, _ = gitea("GET", "/repos/%s/%s/branches/%s" % (REPO["owner"], REPO["name"], name))
    return status == 200


def new_branch(name):
    status, _ = gitea(
        "POST",
        "/repos/%s/%s/branches" % (REPO["owner"], REPO["name"]),
        {"new_branch_name": name, "old_branch_name": REPO["default_branch"]},
    )
    check(status == 201, "branch %s created: %s" % (name, status))


class Sdk:
    """The Python SDK as one OAuth client of the person: its tokens are
    kept between sessions, so only the first session signs in."""

    def __init__(self):
        self.storage = MemoryStorage()
        self.person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"], access="write")

    async def _call(self, name, args):
        provider = sdk_oauth_provider(GATEWAY + "/mcp", CLIENT_CALLBACK, self.person, self.storage, {}, step)
        async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
            async with streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.call_tool(name, args)

    def delete(self, branch):
        # `/mcp` lists the core tools: the write call tool runs the rest.
        args = {"name": "gitea_repo_delete_branch", "arguments": {"owner": REPO["owner"], "repo": REPO["name"], "branch": branch}}
        result = asyncio.run(self._call("gitea_call_write_operation", args))
        return result.is_error, envelope(result)


async def stdio_delete(branch, answer):
    """The gateway over stdio (the admin token, `CONFIRM_ADMIN=destructive`)
    deletes `branch`; the SDK's elicitation callback answers `answer`
    ("decline", or "accept" with approve). Returns (was asked, result)."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import ElicitResult

    asked = []

    async def on_elicitation(context, params):
        asked.append(params.message)
        if answer == "accept":
            return ElicitResult(action="accept", content={"approve": True})
        return ElicitResult(action="decline")

    server = StdioServerParameters(
        command=gateway_binary(),
        args=["stdio"],
        env={
            "PATH": os.environ.get("PATH", ""),
            "GITEA_URL": GITEA,
            "GITEA_TOKEN": FIXTURE["admin"]["token"],
            "CONFIRM_ADMIN": "destructive",
            "DATA_DIR": tempfile.mkdtemp(prefix="aegis-confirm-stdio."),
        },
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicitation) as session:
            await session.initialize()
            args = {"name": "gitea_repo_delete_branch", "arguments": {"owner": REPO["owner"], "repo": REPO["name"], "branch": branch}}
            result = await session.call_tool("gitea_call_write_operation", args)
    return asked, result


class ModernSdk:
    """The Python SDK on the 2026-07-28 wire, as the same person (a new
    OAuth client): `typed` is what its elicitation callback types."""

    def __init__(self):
        self.storage = MemoryStorage()
        self.person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"], access="write")
        self.asked = []

    async def run(self, steps):
        from mcp import Client
        from mcp.types import ElicitResult

        async def on_elicitation(context, params):
            self.asked.append(params.message)
            return ElicitResult(action="accept", content={"name": self.typed})

        provider = sdk_oauth_provider(GATEWAY + "/mcp", CLIENT_CALLBACK, self.person, self.storage, {}, step)
        async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
            transport = streamable_http_client(GATEWAY + "/mcp", http_client=http)
            async with Client(transport, mode="2026-07-28", elicitation_callback=on_elicitation) as client:
                return await steps(client)


def repo_delete_args(name):
    return {"name": "gitea_repo_delete", "arguments": {"owner": REPO["owner"], "repo": name}}


def repo_exists(name):
    status, _ = gitea("GET", "/repos/%s/%s" % (REPO["owner"], name))
    return status == 200


async def delete_repository_in_the_call(sdk, name):
    """Step 5; returns what each attempt answered."""
    from mcp.types import ElicitResult, InputRequiredResult

    session_call = "gitea_call_write_operation"
    full_name = "%s/%s" % (REPO["owner"], name)

    async def steps(client):
        session = client.session
        first = await session.call_tool(session_call, repo_delete_args(name), allow_input_required=True)
        check(isinstance(first, InputRequiredResult), "input-required: %s" % (first,))
        request = first.input_requests["confirm"]
        params = request.params
        check(params.mode == "form" and ("type %s" % full_name) in params.message, "a form naming what to type: %s" % params)
        state = first.request_state

        def answer(text):
            return {"confirm": ElicitResult(action="accept", content={"name": text})}

        wrong = await session.call_tool(
            session_call, repo_delete_args(name), input_responses=answer(full_name + "-x"), request_state=state
        )
        check(wrong.is_error and envelope(wrong)["error"]["kind"] == "confirmation_denied", "a wrong name is refused: %s" % wrong.content)
        check(repo_exists(name), "the repository stays")
        second = await session.call_tool(session_call, repo_delete_args(name), allow_input_required=True)
        fresh = second.request_state
        altered = fresh[:-2] + ("AA" if not fresh.endswith("AA") else "BB")
        for forged in (altered, "rs2.forged.state.value", state):
            refused = await session.call_tool(
                session_call, repo_delete_args(name), input_responses=answer(full_name), request_state=forged
            )
            check(refused.is_error and envelope(refused)["error"]["kind"] == "confirmation_invalid", "a forged, altered or spent state is refused: %s" % refused.content)
        check(repo_exists(name), "the repository still stays")
        # The SDK's own driver: its callback types the right name.
        sdk.typed = full_name
        ran = await client.call_tool(session_call, repo_delete_args(name))
        check(not ran.is_error, "the right name ran it: %s" % ran.content)
        check(not repo_exists(name), "Gitea no longer has the repository")
        # The driver answered the same waiting confirmation (re-sealed):
        # its first state is spent with it.
        replay = await session.call_tool(
            session_call, repo_delete_args(name), input_responses=answer(full_name), request_state=fresh
        )
        check(replay.is_error and envelope(replay)["error"]["kind"] == "confirmation_invalid", "the same answer again is a replay: %s" % replay.content)

    return await sdk.run(steps)


def confirmation_of(answer):
    is_error, body = answer
    check(is_error and body["error"]["kind"] == "confirmation_required", "confirmation_required: %s" % (body,))
    return body["error"]["confirm_url"]


def approve_in_chromium(confirm_url):
    with sync_playwright() as playwright:
        browser = Browser(playwright, SHOTS, step)
        try:
            context = browser.context()
            page, _ = sign_in_to_pages(browser, context, USER, "confirm-account", "/account")
            link = page.locator("a[href='%s']" % confirm_url.replace(GATEWAY, ""))
            check(link.count() == 1, "/account lists the waiting call")
            browser.shot(page, "account-waiting")
            with page.expect_navigation():
                link.click()
            text = visible_text(page)
            check("Approve this call?" in text, "the confirmation page: %s" % text[:300])
            check("branch: %s" % PENDING_BRANCH in text, "it names the branch")
            check("DELETE /repos/{owner}/{repo}/branches/{branch}" in text, "it names the route")
            browser.shot(page, "confirm-page")
            with page.expect_navigation():
                page.get_by_role("button", name="Approve").click()
            check("Approved" in visible_text(page), "approved: %s" % visible_text(page)[:300])
            browser.shot(page, "confirm-approved")
            # Gitea's own pages (built without their frontend here) may alert; ours never.
            ours = [d for d in browser.dialogs if d[0].startswith(GATEWAY)]
            check(not browser.console_errors and not ours, "page errors on our pages: %s %s" % (browser.console_errors, ours))
        except BaseException:
            browser.shot_on_failure("confirm")
            raise
        finally:
            browser.close()


PENDING_BRANCH = "confirm-" + secrets.token_hex(3)
OTHER_BRANCH = PENDING_BRANCH + "-other"


def scenario():
    new_branch(PENDING_BRANCH)
    new_branch(OTHER_BRANCH)
    sdk = Sdk()
    url = confirmation_of(sdk.delete(PENDING_BRANCH))
    check(url.startswith(GATEWAY + "/confirm/"), "the page is ours: %s" % url)
    check(branch_exists(PENDING_BRANCH), "Gitea still has the branch")
    step("the SDK's delete of %s: confirmation_required (%s); Gitea still has the branch" % (PENDING_BRANCH, url))
    approve_in_chromium(url)
    step("Chromium, signed in as %s: approved on the page" % USER["login"])
    is_error, body = sdk.delete(PENDING_BRANCH)
    check(not is_error, "the retry ran: %s" % (body,))
    check(not branch_exists(PENDING_BRANCH), "Gitea no longer has the branch")
    step("the SDK's retry deleted it; Gitea's API answers 404 for it")
    again = confirmation_of(sdk.delete(PENDING_BRANCH))
    check(again != url, "a second retry is a new request")
    other = confirmation_of(sdk.delete(OTHER_BRANCH))
    check(other not in (url, again), "another branch is a new request")
    check(branch_exists(OTHER_BRANCH), "the other branch stays")
    step("a second retry and another branch: each a new request; %s stays" % OTHER_BRANCH)
    asked, result = asyncio.run(stdio_delete(OTHER_BRANCH, "decline"))
    check(len(asked) == 1 and "branch: %s" % OTHER_BRANCH in asked[0], "stdio: the person was asked: %s" % asked)
    check(result.is_error and envelope(result)["error"]["kind"] == "confirmation_denied", "declined: %s" % result.content)
    check(branch_exists(OTHER_BRANCH), "declining leaves the branch")
    asked, result = asyncio.run(stdio_delete(OTHER_BRANCH, "accept"))
    check(not result.is_error and not branch_exists(OTHER_BRANCH), "accepted: the branch is gone")
    step("stdio with CONFIRM_ADMIN: the SDK's elicitation callback is asked; declining keeps the branch, accepting deletes it")
    doomed = "confirm-repo-" + secrets.token_hex(3)
    status, _ = gitea("POST", "/admin/users/%s/repos" % REPO["owner"], {"name": doomed})
    check(status == 201, "repository %s created: %s" % (doomed, status))
    modern = ModernSdk()
    modern.typed = "not-the-name"
    asyncio.run(delete_repository_in_the_call(modern, doomed))
    check(len(modern.asked) == 1, "the SDK's callback was asked once: %s" % modern.asked)
    step("2026-07-28: input-required with a form for %s; a wrong name, a forged, an altered and a spent state refused; the SDK's driver with the right name deleted it" % doomed)


if __name__ == "__main__":
    prepare_artifacts(SHOTS)
    step("Chromium %s; screenshots in %s" % (CHROMIUM, SHOTS))
    # SQLite in the gateway's data dir, whatever DATABASE_URL says.
    os.environ.pop("DATABASE_URL", None)
    run_against_gateway(FIXTURE, "aegis-confirm-e2e.", step, scenario)
