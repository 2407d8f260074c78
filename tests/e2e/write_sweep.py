#!/usr/bin/env python3
"""The write half of the tool surface, proven against the real Gitea.

Each step writes through the gateway binary, then reads Gitea's state
directly through Gitea's own API (with the admin's token, never through the
gateway) and checks that the write landed exactly: issues (create, comment,
label, edit, close), files (create, update, delete, on a path with spaces and
slashes), a branch, a pull request (open, review, merge), a release (create,
upload a binary asset as multipart, download it byte-exact, delete), and a
webhook (create with an `authorization_header` that never comes back in the
result, delete).

It runs twice:
- as the admin, with the static bearer, at the default URL `/mcp`: the core
  tools run as themselves, every other write through
  `gitea_call_write_operation` (the discovery path of a 40-tool client);
- as alice, signed in with the official Python MCP SDK's OAuth client at
  `/mcp/all`, in her own repository; and then alice's writes to a repository
  she cannot write to get Gitea's 403 and change nothing.

Prints one line per verified step and the totals. Usage: tests/e2e/write_sweep.py
(reads $AEGIS_E2E_DIR/fixture.json; the gateway binary is $AEGIS_BIN). Needs
`pip install mcp`.
"""

import asyncio
import base64
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, load_fixture, run_against_gateway, stepper  # noqa: E402
from sdk_common import MemoryStorage, Person, sdk_oauth_provider  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
API = FIXTURE["api_url"].rstrip("/")
ADMIN = FIXTURE["admin"]
USER = FIXTURE["user"]
BEARER = "write-sweep-" + secrets.token_urlsafe(32)
CLIENT_CALLBACK = "http://127.0.0.1:53683/callback"

step = stepper("write-sweep")
TOTALS = {"calls": 0, "verified": 0, "refused_as_expected": 0}


def q(segment):
    return urllib.parse.quote(segment, safe="")


def qpath(path):
    return "/".join(q(p) for p in path.split("/"))


def gitea(method, path, expect=(200,), raw=False, url=None):
    """Gitea's own answer, with the admin's token: (status, JSON or bytes)."""
    request = urllib.request.Request(url or API + path, method=method, headers={"Authorization": "token " + ADMIN["token"]})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, body = err.code, err.read()
    check(status in expect, "Gitea %s %s answered %s: %s" % (method, path, status, body[:300]))
    if raw:
        return status, body
    return status, (json.loads(body) if body.strip() else None)


def jsonrpc(path, token, method, params):
    """One stateless JSON-RPC request at the gateway's MCP URL `path`."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    headers = {
        "Authorization": "Bearer " + token,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    request = urllib.request.Request(GATEWAY + path, data=body, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        message = json.loads(response.read())
    check("result" in message, "%s at %s: %s" % (method, path, str(message)[:300]))
    return message["result"]


class Caller:
    """Runs tools at one MCP URL. A tool the URL does not list runs through
    the call tool for its kind (`read_only`: the tools annotated
    `readOnlyHint`), as a client of that URL would."""

    def __init__(self, label, call, listed, read_only):
        self.label = label
        self._call = call
        self.listed = set(listed)
        self.read_only = set(read_only)

    async def __call__(self, name, arguments, expect_error=False):
        TOTALS["calls"] += 1
        if name in self.listed:
            is_error, result = await self._call(name, arguments)
            via = name
        else:
            via = "gitea_call_read_operation" if name in self.read_only else "gitea_call_write_operation"
            is_error, result = await self._call(via, {"name": name, "arguments": arguments})
        if expect_error:
            check(is_error, "%s via %s should have failed: %s" % (name, via, str(result)[:300]))
        else:
            check(not is_error, "%s via %s: %s" % (name, via, str(result)[:500]))
        return result


def verified(caller, what):
    TOTALS["verified"] += 1
    step("[%s] %s" % (caller.label, what))


async def issue_steps(call, owner, repo, label_id):
    r = "/repos/%s/%s" % (q(owner), q(repo))
    title = "Write sweep issue " + secrets.token_hex(4)
    created = await call("gitea_issue_create_issue", {"owner": owner, "repo": repo, "body": {"title": title, "body": "Filed by the write sweep."}})
    number = created["data"]["number"]
    _, issue = gitea("GET", r + "/issues/%d" % number)
    check(issue["title"] == title and issue["state"] == "open", "Gitea has the issue: %s" % issue)
    verified(call, "issue #%d created" % number)

    text = "A comment " + secrets.token_hex(4)
    await call("gitea_issue_create_comment", {"owner": owner, "repo": repo, "index": number, "body": {"body": text}})
    _, comments = gitea("GET", r + "/issues/%d/comments" % number)
    check([c["body"] for c in comments] == [text], "Gitea has the comment: %s" % comments)
    verified(call, "comment on #%d" % number)

    await call("gitea_issue_add_label", {"owner": owner, "repo": repo, "index": number, "body": {"labels": [label_id]}})
    _, labels = gitea("GET", r + "/issues/%d/labels" % number)
    check([lab["id"] for lab in labels] == [label_id], "Gitea has the label: %s" % labels)
    verified(call, "label %d on #%d" % (label_id, number))

    await call("gitea_issue_edit_issue", {"owner": owner, "repo": repo, "index": number, "body": {"title": title + " (edited)"}})
    _, issue = gitea("GET", r + "/issues/%d" % number)
    check(issue["title"] == title + " (edited)", "Gitea has the new title: %s" % issue["title"])
    verified(call, "#%d edited" % number)

    await call("gitea_issue_edit_issue", {"owner": owner, "repo": repo, "index": number, "body": {"state": "closed"}})
    _, issue = gitea("GET", r + "/issues/%d" % number)
    check(issue["state"] == "closed", "Gitea closed the issue: %s" % issue["state"])
    verified(call, "#%d closed" % number)


async def file_steps(call, owner, repo):
    r = "/repos/%s/%s" % (q(owner), q(repo))
    path = "write sweep/%s/notes and more.md" % secrets.token_hex(3)
    first = "First version.\n"
    created = await call("gitea_repo_create_file", {"owner": owner, "repo": repo, "filepath": path, "body": {"content": base64.b64encode(first.encode()).decode(), "message": "Add a file"}})
    check(created["data"]["content"]["path"] == path, "the result names the path: %s" % created["data"]["content"]["path"])
    _, raw = gitea("GET", r + "/raw/" + qpath(path), raw=True)
    check(raw == first.encode(), "Gitea has the file: %r" % raw)
    verified(call, "file %r created" % path)

    sha = created["data"]["content"]["sha"]
    second = "Second version, with a ü.\n"
    await call("gitea_repo_update_file", {"owner": owner, "repo": repo, "filepath": path, "body": {"content": base64.b64encode(second.encode()).decode(), "sha": sha, "message": "Update the file"}})
    _, raw = gitea("GET", r + "/raw/" + qpath(path), raw=True)
    check(raw == second.encode(), "Gitea has the new content: %r" % raw)
    verified(call, "file %r updated" % path)

    _, meta = gitea("GET", r + "/contents/" + qpath(path))
    await call("gitea_repo_delete_file", {"owner": owner, "repo": repo, "filepath": path, "body": {"sha": meta["sha"], "message": "Delete the file"}})
    gitea("GET", r + "/contents/" + qpath(path), expect=(404,))
    verified(call, "file %r deleted" % path)


async def branch_and_pull_steps(call, owner, repo):
    r = "/repos/%s/%s" % (q(owner), q(repo))
    branch = "sweep/%s" % secrets.token_hex(3)
    await call("gitea_repo_create_branch", {"owner": owner, "repo": repo, "body": {"new_branch_name": branch, "old_ref_name": "main"}})
    _, found = gitea("GET", r + "/branches/" + qpath(branch))
    check(found["name"] == branch, "Gitea has the branch: %s" % found["name"])
    verified(call, "branch %r created" % branch)

    path = "pull/%s.md" % secrets.token_hex(3)
    await call("gitea_repo_create_file", {"owner": owner, "repo": repo, "filepath": path, "body": {"content": base64.b64encode(b"A change to review.\n").decode(), "message": "A change", "branch": branch}})
    opened = await call("gitea_repo_create_pull_request", {"owner": owner, "repo": repo, "body": {"title": "Sweep pull request", "head": branch, "base": "main", "body": "Opened by the write sweep."}})
    number = opened["data"]["number"]
    _, pull = gitea("GET", r + "/pulls/%d" % number)
    check(pull["state"] == "open" and pull["head"]["ref"] == branch, "Gitea has the pull request: %s" % pull["state"])
    verified(call, "pull request #%d opened" % number)

    await call("gitea_repo_create_pull_review", {"owner": owner, "repo": repo, "index": number, "body": {"event": "COMMENT", "body": "Looks fine."}})
    _, reviews = gitea("GET", r + "/pulls/%d/reviews" % number)
    check(any(rv["body"] == "Looks fine." for rv in reviews), "Gitea has the review: %s" % reviews)
    verified(call, "pull request #%d reviewed" % number)

    # Gitea computes mergeability in the background: wait for it.
    for _ in range(50):
        _, pull = gitea("GET", r + "/pulls/%d" % number)
        if pull["mergeable"]:
            break
        time.sleep(0.2)
    # ... and it may start checking again (after the review): a merge then
    # answers 405 "Please try again later", which is Gitea's, not ours.
    for attempt in range(50):
        try:
            await call("gitea_repo_merge_pull_request", {"owner": owner, "repo": repo, "index": number, "body": {"do": "merge"}})
            break
        except AssertionError as err:
            if "Please try again later" not in str(err) or attempt == 49:
                raise
            time.sleep(0.2)
    _, pull = gitea("GET", r + "/pulls/%d" % number)
    check(pull["merged"] is True, "Gitea merged the pull request: %s" % pull.get("merged"))
    _, raw = gitea("GET", r + "/raw/" + qpath(path) + "?ref=main", raw=True)
    check(raw == b"A change to review.\n", "the change is on main")
    verified(call, "pull request #%d merged" % number)


async def release_steps(call, owner, repo):
    r = "/repos/%s/%s" % (q(owner), q(repo))
    tag = "sweep-%s" % secrets.token_hex(3)
    created = await call("gitea_repo_create_release", {"owner": owner, "repo": repo, "body": {"tag_name": tag, "target_commitish": "main", "name": "Sweep release", "body": "Notes."}})
    release_id = created["data"]["id"]
    _, release = gitea("GET", r + "/releases/%d" % release_id)
    check(release["tag_name"] == tag, "Gitea has the release: %s" % release["tag_name"])
    verified(call, "release %r created" % tag)

    # Every byte value, so text handling anywhere would show.
    blob = bytes(range(256)) * 8 + secrets.token_bytes(512)
    uploaded = await call("gitea_repo_create_release_attachment", {"owner": owner, "repo": repo, "id": release_id, "name": "blob.bin", "attachment": {"content_base64": base64.b64encode(blob).decode(), "filename": "blob.bin", "content_type": "application/octet-stream"}})
    asset = uploaded["data"]
    check(asset["size"] == len(blob), "the asset's size: %s" % asset["size"])
    _, assets = gitea("GET", r + "/releases/%d/assets" % release_id)
    check([a["name"] for a in assets] == ["blob.bin"], "Gitea lists the asset: %s" % assets)
    _, downloaded = gitea("GET", "", raw=True, url=asset["browser_download_url"])
    check(downloaded == blob, "the asset downloads byte-exact (%d bytes, got %d)" % (len(blob), len(downloaded)))
    verified(call, "asset of %d bytes uploaded (multipart) and downloaded byte-exact" % len(blob))

    await call("gitea_repo_delete_release", {"owner": owner, "repo": repo, "id": release_id})
    gitea("GET", r + "/releases/%d" % release_id, expect=(404,))
    await call("gitea_repo_delete_tag", {"owner": owner, "repo": repo, "tag": tag})
    gitea("GET", r + "/tags/" + qpath(tag), expect=(404,))
    verified(call, "release %r and its tag deleted" % tag)


async def webhook_steps(call, owner, repo):
    r = "/repos/%s/%s" % (q(owner), q(repo))
    header = "Bearer sweep-hook-" + secrets.token_hex(16)
    created = await call("gitea_repo_create_hook", {"owner": owner, "repo": repo, "body": {"type": "gitea", "config": {"url": "http://127.0.0.1:9/sweep", "content_type": "json"}, "events": ["push"], "active": False, "authorization_header": header}})
    check(header not in json.dumps(created), "the authorization header is redacted from the result")
    hook_id = created["data"]["id"]
    _, hook = gitea("GET", r + "/hooks/%d" % hook_id)
    check(hook["config"]["url"] == "http://127.0.0.1:9/sweep", "Gitea has the hook: %s" % hook["config"])
    verified(call, "webhook %d created; its authorization_header is not in the result" % hook_id)

    await call("gitea_repo_delete_hook", {"owner": owner, "repo": repo, "id": hook_id})
    gitea("GET", r + "/hooks/%d" % hook_id, expect=(404,))
    verified(call, "webhook %d deleted" % hook_id)


async def sweep(call, owner, repo, label_id):
    await issue_steps(call, owner, repo, label_id)
    await file_steps(call, owner, repo)
    await branch_and_pull_steps(call, owner, repo)
    await release_steps(call, owner, repo)
    await webhook_steps(call, owner, repo)


async def refused_steps(call, owner, repo):
    """Writes to a repository the caller cannot write to: Gitea's 403, and nothing changes."""
    r = "/repos/%s/%s" % (q(owner), q(repo))
    path = "not-yours/%s.md" % secrets.token_hex(3)
    result = await call("gitea_repo_create_file", {"owner": owner, "repo": repo, "filepath": path, "body": {"content": base64.b64encode(b"no").decode()}}, expect_error=True)
    check(result["error"]["status"] == 403, "Gitea's 403: %s" % result)
    gitea("GET", r + "/contents/" + qpath(path), expect=(404,))
    _, before = gitea("GET", r + "/labels")
    result = await call("gitea_issue_create_label", {"owner": owner, "repo": repo, "body": {"name": "not-yours", "color": "#000000"}}, expect_error=True)
    check(result["error"]["status"] == 403, "Gitea's 403: %s" % result)
    _, after = gitea("GET", r + "/labels")
    check(before == after, "the labels did not change")
    TOTALS["refused_as_expected"] += 2
    verified(call, "writes to %s/%s: Gitea's 403 twice, nothing changed" % (owner, repo))


def read_only_tools(tools):
    return [t["name"] for t in tools if (t.get("annotations") or {}).get("readOnlyHint")]


async def as_admin():
    async def call(name, arguments):
        result = await asyncio.to_thread(jsonrpc, "/mcp", BEARER, "tools/call", {"name": name, "arguments": arguments})
        return bool(result.get("isError")), json.loads(result["content"][0]["text"])

    listed = [t["name"] for t in jsonrpc("/mcp", BEARER, "tools/list", {})["tools"]]
    check(len(listed) <= 40, "the default URL lists %d tools" % len(listed))
    everything = jsonrpc("/mcp/all", BEARER, "tools/list", {})["tools"]
    caller = Caller("admin, bearer, /mcp", call, listed, read_only_tools(everything))
    repo = FIXTURE["repo"]
    await sweep(caller, repo["owner"], repo["name"], FIXTURE["labels"][0]["id"])


async def as_alice():
    person = Person(GATEWAY, CLIENT_CALLBACK, USER["login"], USER["password"], access="write")
    storage = MemoryStorage()
    provider = sdk_oauth_provider(GATEWAY + "/mcp/all", CLIENT_CALLBACK, person, storage, {}, step)
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(GATEWAY + "/mcp/all", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                listed = [t.name for t in tools]
                read_only = [t.name for t in tools if t.annotations and t.annotations.read_only_hint]

                async def call(name, arguments):
                    result = await session.call_tool(name, arguments)
                    check(len(result.content) == 1, "one content item")
                    return bool(result.is_error), json.loads(result.content[0].text)

                caller = Caller("alice, oauth, /mcp/all", call, listed, read_only)
                me = await caller("gitea_user_get_current", {})
                check(me["identity"] == {"login": USER["login"], "mode": "oauth"}, "identity %s" % me["identity"])
                own = FIXTURE["repos"]["user"]
                label = await caller("gitea_issue_create_label", {"owner": own["owner"], "repo": own["name"], "body": {"name": "sweep", "color": "#00aa00"}})
                _, labels = gitea("GET", "/repos/%s/%s/labels" % (q(own["owner"]), q(own["name"])))
                check(any(lab["id"] == label["data"]["id"] for lab in labels), "Gitea has alice's label")
                verified(caller, "label created in %s" % own["full_name"])
                await sweep(caller, own["owner"], own["name"], label["data"]["id"])
                other = FIXTURE["repo"]
                await refused_steps(caller, other["owner"], other["name"])


async def main():
    started = time.monotonic()
    await as_admin()
    await as_alice()
    step(
        "write sweep: %d calls, %d writes verified in Gitea, %d refused by Gitea as expected, in %.1f s"
        % (TOTALS["calls"], TOTALS["verified"], TOTALS["refused_as_expected"], time.monotonic() - started)
    )


if __name__ == "__main__":
    # CONFIRM=off: this sweep is about the writes themselves, dozens of
    # destructive ones; a person's confirmation of each is tests/browser/confirm_e2e.py's.
    run_against_gateway(FIXTURE, "aegis-write-sweep.", step, main, extra_env={"MCP_BEARER_TOKEN": BEARER, "CONFIRM": "off"})
