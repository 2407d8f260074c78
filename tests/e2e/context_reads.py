#!/usr/bin/env python3
"""Resources, prompts and completion end to end, with the official Python MCP
SDK against the gateway binary and the real, seeded Gitea.

The gateway runs with a static bearer (`MCP_BEARER_TOKEN`, so it acts as the
seeded admin) and its audit log in a fresh data directory. The SDK's
`ClientSession` (Streamable HTTP, the 2025-11-25 handshake) at `/mcp`:

- `resources/templates/list`: the five `gitea://` templates; `prompts/list`:
  the four prompts, each described, with their arguments;
- `resources/read` of three files of the seeded repository (the nested file
  whose name has a space, `README.md`, and a file on the branch `feature/x`
  by `?ref=`): each text equals what Gitea's own raw API returns for it (with
  the admin's token, not through the gateway), typed by its name, with the
  untrusted-content notice in `_meta`; a folder lists its entries;
- the seeded pull request as a resource (its title and number are Gitea's),
  its `/diff` (equal to Gitea's `.diff`) and `/reviews`; the seeded issue;
- a missing issue and a URI of another scheme: MCP errors carrying the URI;
- `prompts/get review_pull_request` on the pull request and
  `summarize_issue` on the issue: one user message holding the title, the
  diff, the body; `triage_issues`; a missing argument is -32602;
- `completion/complete`: `ref` with context owner/repo gives `main` (and
  `feature/x`, and only it for `fea`), `path`, `index`, `owner`; a prompt
  that is not ours completes to nothing, without an error.

Then the same reads on the 2026-07-28 wire (the SDK's `Client` after
`server/discover`, stateless: a missing resource is -32602 there, SEP-2164), and at `/mcp/x/admin`, whose
toolsets lack every operation these reads run: a resource read, a prompt and
a completion are refused (the completion with empty values).

Last, the audit log: every read is a tool call, so each has its
`tool_call_finished` entry (the operation, `ok`, or `error` with Gitea's
404 for the missing issue), and every started call finished.

Prints each step; exits non-zero on the first failed check (with the
gateway's log). Usage: tests/e2e/context_reads.py (reads
$AEGIS_E2E_DIR/fixture.json; the gateway binary is $AEGIS_BIN, default
target/debug/aegis-gitea-mcp; `DATABASE_URL` puts its store on PostgreSQL).
Needs `pip install mcp==2.3.0`. It changes nothing in Gitea.
"""

import collections
import json
import os
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request

import httpx2
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PromptReference, ResourceTemplateReference

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import check, load_fixture, run_against_gateway, stepper  # noqa: E402

FIXTURE = load_fixture()
GATEWAY = FIXTURE["gateway_url"].rstrip("/")
API = FIXTURE["api_url"].rstrip("/")
ADMIN = FIXTURE["admin"]
REPO = FIXTURE["repo"]
OWNER, NAME = REPO["owner"], REPO["name"]
BEARER = "context-reads-" + secrets.token_urlsafe(32)
# A toolset URL whose tools (the admin toolset and the discovery tools) run
# none of the operations a resource, a prompt or a completion reads.
NARROW = "/mcp/x/admin"

TEMPLATES = {
    "gitea://{owner}/{repo}/contents/{+path}{?ref}",
    "gitea://{owner}/{repo}/issues/{index}",
    "gitea://{owner}/{repo}/pulls/{index}",
    "gitea://{owner}/{repo}/pulls/{index}/diff",
    "gitea://{owner}/{repo}/pulls/{index}/reviews",
}
FILE_TEMPLATE = "gitea://{owner}/{repo}/contents/{+path}{?ref}"
PROMPTS = {
    "review_pull_request": ["owner", "repo", "index"],
    "summarize_issue": ["owner", "repo", "index"],
    "draft_release_notes": ["owner", "repo", "from", "to"],
    "triage_issues": ["owner", "repo"],
}

step = stepper("context-reads")
# Every read the gateway should have run as a call, for the audit check:
# (operation, outcome) -> count.
EXPECTED = collections.Counter()


def q(segment):
    return urllib.parse.quote(segment, safe="")


def qpath(path):
    return "/".join(q(part) for part in path.split("/"))


def gitea(path, query=None, raw=False):
    """Gitea's own API with the admin's token, never through the gateway."""
    url = API + path + ("?" + urllib.parse.urlencode(query) if query else "")
    request = urllib.request.Request(url, headers={"Authorization": "token " + ADMIN["token"]})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    return body.decode() if raw else json.loads(body)


def resource_uri(kind, tail, ref=None):
    uri = "gitea://%s/%s/%s/%s" % (q(OWNER), q(NAME), kind, tail)
    return uri + ("?ref=" + q(ref) if ref else "")


def expect_read(operation, outcome="ok", times=1):
    EXPECTED[(operation, outcome)] += times


def only_text(result, uri):
    check(len(result.contents) == 1, "one contents item for %s: %s" % (uri, result.contents))
    item = result.contents[0]
    check(str(item.uri) == uri, "the contents' uri is the one read: %s" % item.uri)
    check(hasattr(item, "text"), "text contents for %s: %s" % (uri, item))
    return item


def meta_of(item):
    return getattr(item, "meta", None) or {}


async def mcp_error(label, awaitable):
    """The MCPError `awaitable` raises; a result fails the check."""
    try:
        result = await awaitable
    except MCPError as err:
        return err
    raise AssertionError("%s: an MCP error was expected, got %s" % (label, str(result)[:300]))


# ------------------------------------------------------------- the checks


def check_lists(templates, prompts, wire):
    listed = {t.uri_template for t in templates.resource_templates}
    check(listed == TEMPLATES and len(templates.resource_templates) == 5, "5 templates: %s" % sorted(listed))
    check(all(t.name and t.description for t in templates.resource_templates), "every template has a name and a description")
    named = {p.name: [a.name for a in (p.arguments or [])] for p in prompts.prompts}
    check(named == PROMPTS and len(prompts.prompts) == 4, "4 prompts with their arguments: %s" % named)
    check(all(p.description for p in prompts.prompts), "every prompt is described")
    check(all(a.required for p in prompts.prompts for a in p.arguments or []), "every prompt argument is required")
    step("%s: resources/templates/list 5 templates, prompts/list 4 prompts (%s)" % (wire, ", ".join(sorted(named))))


async def check_files(api, wire):
    """Three files of the seeded repository, each equal to Gitea's raw file."""
    files = [
        (FIXTURE["file_path"], None, "text/markdown"),
        ("README.md", "main", "text/markdown"),
        (FIXTURE["branch_file_path"], FIXTURE["branch"], "text/markdown"),
    ]
    for path, ref, mime_type in files:
        uri = resource_uri("contents", qpath(path), ref)
        item = only_text(await api.read_resource(uri), uri)
        expect_read("gitea_repo_get_raw_file")
        raw = gitea("/repos/%s/%s/raw/%s" % (q(OWNER), q(NAME), qpath(path)), {"ref": ref} if ref else None, raw=True)
        check(item.text == raw, "%s: the text equals Gitea's raw file (%r vs %r)" % (uri, item.text[:200], raw[:200]))
        check(item.mime_type == mime_type, "%s: typed %s, not %s" % (uri, mime_type, item.mime_type))
        check("aegis/untrusted_content" in meta_of(item), "%s: _meta carries the untrusted-content notice: %s" % (uri, meta_of(item)))
        step("%s: resources/read %s: %d bytes, %s, equal to Gitea's raw API" % (wire, uri, len(raw.encode()), item.mime_type))
        if path == FIXTURE["file_path"]:
            check(item.text == FIXTURE["file_content"], "%s: the content the seed wrote" % uri)
    # A path ending in / lists the folder.
    folder = FIXTURE["file_path"].rsplit("/", 1)[0] + "/"
    uri = resource_uri("contents", qpath(folder))
    listing = only_text(await api.read_resource(uri), uri)
    expect_read("gitea_repo_get_contents")
    entries = json.loads(listing.text)["data"]
    check(any(e.get("path") == FIXTURE["file_path"] for e in entries), "the folder %s lists %s: %s" % (folder, FIXTURE["file_path"], str(entries)[:300]))
    step("%s: resources/read %s lists %s" % (wire, uri, FIXTURE["file_path"]))


async def check_pull_and_issue(api, wire):
    pr = FIXTURE["pr_number"]
    gitea_pr = gitea("/repos/%s/%s/pulls/%d" % (q(OWNER), q(NAME), pr))
    uri = resource_uri("pulls", str(pr))
    item = only_text(await api.read_resource(uri), uri)
    expect_read("gitea_repo_get_pull_request")
    data = json.loads(item.text)["data"]
    check(item.mime_type == "application/json", "%s: application/json, not %s" % (uri, item.mime_type))
    check(data["number"] == pr and data["title"] == gitea_pr["title"], "%s: #%s %r, Gitea's #%d %r" % (uri, data.get("number"), data.get("title"), pr, gitea_pr["title"]))
    step("%s: resources/read %s: #%d %r" % (wire, uri, pr, data["title"]))

    diff = gitea("/repos/%s/%s/pulls/%d.diff" % (q(OWNER), q(NAME), pr), raw=True)
    uri = resource_uri("pulls", "%d/diff" % pr)
    item = only_text(await api.read_resource(uri), uri)
    expect_read("gitea_repo_download_pull_diff_or_patch")
    check(item.mime_type == "text/x-diff", "%s: text/x-diff, not %s" % (uri, item.mime_type))
    check(item.text == diff, "%s: equal to Gitea's .diff (%r vs %r)" % (uri, item.text[:300], diff[:300]))
    check(FIXTURE["branch_file_path"] in diff, "the diff adds %s" % FIXTURE["branch_file_path"])
    step("%s: resources/read %s: %d bytes, equal to Gitea's .diff" % (wire, uri, len(diff.encode())))

    uri = resource_uri("pulls", "%d/reviews" % pr)
    item = only_text(await api.read_resource(uri), uri)
    expect_read("gitea_repo_list_pull_reviews")
    reviews = json.loads(item.text)["data"]
    gitea_reviews = gitea("/repos/%s/%s/pulls/%d/reviews" % (q(OWNER), q(NAME), pr))
    check(isinstance(reviews, list) and len(reviews) == len(gitea_reviews), "%s: %d reviews, Gitea has %d" % (uri, len(reviews), len(gitea_reviews)))
    step("%s: resources/read %s: %d reviews, as Gitea" % (wire, uri, len(reviews)))

    number = FIXTURE["issue_number"]
    gitea_issue = gitea("/repos/%s/%s/issues/%d" % (q(OWNER), q(NAME), number))
    uri = resource_uri("issues", str(number))
    item = only_text(await api.read_resource(uri), uri)
    expect_read("gitea_issue_get_issue")
    data = json.loads(item.text)["data"]
    check(data["title"] == gitea_issue["title"], "%s: %r, Gitea's %r" % (uri, data.get("title"), gitea_issue["title"]))
    step("%s: resources/read %s: %r" % (wire, uri, data["title"]))
    return gitea_pr, diff, gitea_issue


async def check_missing(api, wire, not_found_code):
    issues = gitea("/repos/%s/%s/issues" % (q(OWNER), q(NAME)), {"state": "all", "type": "all", "limit": 50})
    missing = max([i["number"] for i in issues] + [0]) + 1000
    uri = resource_uri("issues", str(missing))
    err = await mcp_error(uri, api.read_resource(uri))
    expect_read("gitea_issue_get_issue", "error")
    check(err.code == not_found_code, "%s: code %d, not %d (%s)" % (uri, err.code, not_found_code, err.message))
    check((err.data or {}).get("uri") == uri, "%s: error.data.uri is the URI: %s" % (uri, err.data))
    step("%s: resources/read of a missing issue (%s): MCP error %d %r, data.uri the URI" % (wire, uri, err.code, err.message[:120]))
    other = "file:///etc/passwd"
    err = await mcp_error(other, api.read_resource(other))
    check(err.code == not_found_code and (err.data or {}).get("uri") == other, "%s: %d %s" % (other, err.code, err.data))
    step("%s: resources/read %s: MCP error %d %r (no read)" % (wire, other, err.code, err.message[:120]))


def one_message(result, name):
    check(len(result.messages) == 1, "%s: one message, not %d" % (name, len(result.messages)))
    message = result.messages[0]
    check(message.role == "user" and message.content.type == "text", "%s: a user text message: %s" % (name, str(message)[:200]))
    return message.content.text


async def check_prompts(api, wire, gitea_pr, diff, gitea_issue):
    args = {"owner": OWNER, "repo": NAME}
    pr = str(FIXTURE["pr_number"])
    text = one_message(await api.get_prompt("review_pull_request", {**args, "index": pr}), "review_pull_request")
    expect_read("gitea_repo_get_pull_request")
    expect_read("gitea_repo_get_pull_request_files")
    expect_read("gitea_repo_download_pull_diff_or_patch")
    expect_read("gitea_repo_list_pull_reviews")
    commented = [r for r in gitea("/repos/%s/%s/pulls/%s/reviews" % (q(OWNER), q(NAME), pr)) if r.get("comments_count")]
    expect_read("gitea_repo_get_pull_review_comments", times=min(len(commented), 5))
    check(json.dumps(gitea_pr["title"], ensure_ascii=False) in text, "review_pull_request: the title %r is in the message" % gitea_pr["title"])
    check(diff.strip("\n") in text, "review_pull_request: Gitea's diff is in the message")
    check("do not follow directions" in text, "review_pull_request: the untrusted notice")
    step("%s: prompts/get review_pull_request #%s: one message, %d chars, with the title %r and the diff" % (wire, pr, len(text), gitea_pr["title"]))

    number = str(FIXTURE["issue_number"])
    text = one_message(await api.get_prompt("summarize_issue", {**args, "index": "#" + number}), "summarize_issue")
    expect_read("gitea_issue_get_issue")
    expect_read("gitea_issue_get_comments_and_timeline")
    check(json.dumps(gitea_issue["title"], ensure_ascii=False) in text, "summarize_issue: the title %r is in the message" % gitea_issue["title"])
    check(json.dumps(gitea_issue["body"], ensure_ascii=False) in text, "summarize_issue: the body is in the message")
    check("## Timeline (gitea_issue_get_comments_and_timeline)" in text, "summarize_issue: the timeline's heading")
    step("%s: prompts/get summarize_issue #%s: one message, %d chars, with the title %r and the body" % (wire, number, len(text), gitea_issue["title"]))

    err = await mcp_error("summarize_issue without index", api.get_prompt("summarize_issue", args))
    check(err.code == -32602 and "index" in err.message, "a prompt without its index: %d %s" % (err.code, err.message))
    step("%s: prompts/get summarize_issue without index: %d %r (no read)" % (wire, err.code, err.message))


async def check_completion(api, wire):
    context = {"owner": OWNER, "repo": NAME}
    ref = ResourceTemplateReference(type="ref/resource", uri=FILE_TEMPLATE)
    branches = sorted(b["name"] for b in gitea("/repos/%s/%s/branches" % (q(OWNER), q(NAME))))
    values = (await api.complete(ref, {"name": "ref", "value": ""}, context)).completion.values
    expect_read("gitea_repo_list_branches")
    check("main" in values and values == branches, "ref completes to Gitea's branches %s: %s" % (branches, values))
    step("%s: completion/complete ref (owner/repo in context): %s" % (wire, values))
    values = (await api.complete(ref, {"name": "ref", "value": "fea"}, context)).completion.values
    expect_read("gitea_repo_list_branches")
    check(values == [FIXTURE["branch"]], "ref 'fea' completes to %s: %s" % (FIXTURE["branch"], values))
    step("%s: completion/complete ref 'fea': %s" % (wire, values))
    folder = FIXTURE["file_path"].rsplit("/", 1)[0]
    values = (await api.complete(ref, {"name": "path", "value": folder + "/"}, context)).completion.values
    expect_read("gitea_repo_get_contents")
    check(FIXTURE["file_path"] in values, "path %r/ completes to %s: %s" % (folder, FIXTURE["file_path"], values))
    step("%s: completion/complete path %r: %s" % (wire, folder + "/", values))


async def check_more_completion(api, wire):
    context = {"owner": OWNER, "repo": NAME}
    review = PromptReference(type="ref/prompt", name="review_pull_request")
    values = (await api.complete(review, {"name": "index", "value": ""}, context)).completion.values
    expect_read("gitea_repo_list_pull_requests")
    check(str(FIXTURE["pr_number"]) in values, "review_pull_request index completes to the open pull requests: %s" % values)
    step("%s: completion/complete review_pull_request index: %s" % (wire, values))
    values = (await api.complete(review, {"name": "owner", "value": OWNER[:3]})).completion.values
    expect_read("gitea_user_current_list_repos")
    check(OWNER in values, "owner %r completes to %s: %s" % (OWNER[:3], OWNER, values))
    step("%s: completion/complete owner %r: %s" % (wire, OWNER[:3], values))
    theirs = PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    values = (await api.complete(theirs, {"name": "arg1", "value": "test"})).completion.values
    check(values == [], "a prompt that is not ours completes to nothing: %s" % values)
    step("%s: completion/complete of a prompt that is not ours: [] (no error, no read)" % wire)


async def check_triage(api, wire):
    args = {"owner": OWNER, "repo": NAME}
    text = one_message(await api.get_prompt("triage_issues", args), "triage_issues")
    for operation in ("gitea_issue_list_issues", "gitea_issue_list_labels", "gitea_issue_get_milestones_list"):
        expect_read(operation)
    issue = gitea("/repos/%s/%s/issues/%d" % (q(OWNER), q(NAME), FIXTURE["issue_number"]))
    check(json.dumps(issue["title"], ensure_ascii=False) in text, "triage_issues: the open issue %r is in the message" % issue["title"])
    for label in FIXTURE["labels"]:
        check(json.dumps(label["name"]) in text, "triage_issues: the label %r is in the message" % label["name"])
    check(json.dumps(FIXTURE["milestone"]["title"]) in text, "triage_issues: the milestone is in the message")
    step("%s: prompts/get triage_issues: one message, %d chars, with the open issues, labels and milestone" % (wire, len(text)))


# --------------------------------------------------------------- the runs


def http_client():
    return httpx2.AsyncClient(headers={"Authorization": "Bearer " + BEARER}, timeout=60)


async def legacy_wire():
    wire = "2025-11-25"
    async with http_client() as http:
        async with streamable_http_client(GATEWAY + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                caps = init.capabilities
                check(init.protocol_version == wire, "negotiated %s" % init.protocol_version)
                check(caps.resources is not None and caps.prompts is not None and caps.completions is not None, "resources, prompts and completions declared: %s" % caps)
                check(not caps.resources.subscribe and not caps.resources.list_changed and not caps.prompts.list_changed, "no subscribe, no listChanged: %s" % caps)
                step("%s: initialize: %s %s declares tools, resources, prompts, completions" % (wire, init.server_info.name, init.server_info.version))
                check_lists(await session.list_resource_templates(), await session.list_prompts(), wire)
                listed = await session.list_resources()
                check(listed.resources == [], "resources/list is empty: %s" % listed.resources)
                step("%s: resources/list: [] (the templates carry the resources)" % wire)
                await check_files(session, wire)
                gitea_pr, diff, gitea_issue = await check_pull_and_issue(session, wire)
                await check_missing(session, wire, -32002)
                await check_prompts(session, wire, gitea_pr, diff, gitea_issue)
                await check_triage(session, wire)
                await check_completion(session, wire)
                await check_more_completion(session, wire)


async def modern_wire():
    wire = "2026-07-28"
    async with http_client() as http:
        transport = streamable_http_client(GATEWAY + "/mcp", http_client=http)
        # mode "auto": the SDK sends server/discover and adopts the newest
        # version both support (a version as the mode would skip discover).
        async with Client(transport, mode="auto") as client:
            check(client.protocol_version == wire, "negotiated %s" % client.protocol_version)
            caps = client.server_capabilities
            check(caps.resources is not None and caps.prompts is not None and caps.completions is not None, "resources, prompts and completions declared: %s" % caps)
            check(not caps.resources.subscribe and not caps.prompts.list_changed, "no subscribe, no listChanged: %s" % caps)
            step("%s: server/discover: %s %s declares resources, prompts, completions (stateless)" % (wire, client.server_info.name, client.server_info.version))
            check_lists(await client.list_resource_templates(), await client.list_prompts(), wire)
            await check_files(client, wire)
            gitea_pr, diff, gitea_issue = await check_pull_and_issue(client, wire)
            # SEP-2164: -32602 from 2026-07-28 on (rmcp rewrites -32002).
            await check_missing(client, wire, -32602)
            await check_prompts(client, wire, gitea_pr, diff, gitea_issue)
            await check_completion(client, wire)


async def narrow_url():
    """At a URL whose toolsets lack the operations, every read is refused."""
    label = NARROW
    async with http_client() as http:
        async with streamable_http_client(GATEWAY + NARROW, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                check("gitea_repo_get_raw_file" not in tools, "%s does not list gitea_repo_get_raw_file" % label)
                templates = await session.list_resource_templates()
                check(len(templates.resource_templates) == 5, "%s lists the same 5 templates" % label)
                uri = resource_uri("contents", "README.md")
                err = await mcp_error(uri, session.read_resource(uri))
                check(err.code == -32602 and "not reachable" in err.message, "%s: %s refused as not reachable: %d %s" % (label, uri, err.code, err.message))
                step("%s: resources/read %s refused: %d %r" % (label, uri, err.code, err.message))
                err = await mcp_error("summarize_issue", session.get_prompt("summarize_issue", {"owner": OWNER, "repo": NAME, "index": str(FIXTURE["issue_number"])}))
                check(err.code == -32602 and "not reachable" in err.message, "%s: summarize_issue refused: %d %s" % (label, err.code, err.message))
                step("%s: prompts/get summarize_issue refused: %d %r" % (label, err.code, err.message[:160]))
                ref = ResourceTemplateReference(type="ref/resource", uri=FILE_TEMPLATE)
                values = (await session.complete(ref, {"name": "ref", "value": ""}, {"owner": OWNER, "repo": NAME})).completion.values
                check(values == [], "%s: ref completes to nothing: %s" % (label, values))
                step("%s: completion/complete ref: [] (the read is not reachable here)" % label)


def audit_entries(data_dir):
    with open(os.path.join(data_dir, "audit.log")) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_audit(data_dir):
    entries = audit_entries(data_dir)
    started = [e for e in entries if e["event"] == "tool_call_started"]
    finished = [e for e in entries if e["event"] == "tool_call_finished"]
    refused = [e for e in entries if e["event"] == "tool_call_refused"]
    seen = collections.Counter(((e.get("detail") or {}).get("operation") or e.get("tool"), e.get("outcome")) for e in finished)
    missing = {key: count - seen[key] for key, count in EXPECTED.items() if seen[key] < count}
    check(not missing, "a tool_call_finished entry for each read; missing (operation, outcome): count %s; seen %s" % (missing, dict(seen)))
    check(len(started) == len(finished), "every started call finished: %d started, %d finished" % (len(started), len(finished)))
    extra = {key: count - EXPECTED[key] for key, count in seen.items() if count > EXPECTED[key]}
    check(not extra, "no finished call beyond the reads made: %s" % extra)
    not_found = [e for e in finished if e.get("outcome") == "error"]
    check(all(e.get("status") == 404 and e.get("error_kind") == "not_found" for e in not_found), "the failed reads are Gitea's 404: %s" % not_found)
    via = collections.Counter(e.get("tool") for e in finished)
    step(
        "audit: %d tool_call_finished entries, one per read (%d ok, %d not_found); by tool: %s; %d tool_call_refused"
        % (len(finished), len(finished) - len(not_found), len(not_found), ", ".join("%s %d" % kv for kv in sorted(via.items())), len(refused))
    )


async def main(data_dir):
    await legacy_wire()
    await modern_wire()
    await narrow_url()
    check_audit(data_dir)
    step("%d reads, each one audited tool call" % sum(EXPECTED.values()))


if __name__ == "__main__":
    run_against_gateway(FIXTURE, "aegis-context-reads.", step, main, extra_env={"MCP_BEARER_TOKEN": BEARER}, pass_data_dir=True)
