#!/usr/bin/env python3
"""Context benchmark: how many bytes each everyday question costs a model.

A model pays for every byte a tool result puts in its context. This script
asks the gateway the questions of an ordinary working session (what tools are
there, which issues are open, what does this issue say, what does this pull
request change, read the README, the last commits, ...), one tool call each,
through the official Python MCP SDK client (Streamable HTTP, `Authorization:
Bearer <MCP bearer>`), and prints per question: the tool, the bytes of the
result's text (the UTF-8 length of its text content items; for `tools/list`
the compact JSON of the tools array as the client received it), and about how
many tokens that is (bytes / 4).

It also checks that each answer still answers the question: a list of facts
per question (every listed issue's number and title, label names, the
README's first sentence as plain text, the pull request's title and changed
file names, commit SHAs, branch and tag names, repository names, the user's
login, ...) must be findable in the answer. The facts come from Gitea's own
answer to the same route (called directly with the admin's token), never from
this file, and are looked for as substrings of the answer's JSON text (the
envelope parsed and dumped again with `ensure_ascii=False`), not at fixed
paths, so the shape of the answer may change freely. A number only has to
stand alone somewhere (a weak check: small numbers appear elsewhere too); text
is looked for as it appears inside a JSON string, as is or with its Unicode
format characters shown as `[U+XXXX]` (as the gateway shows them). `tools/list`
must name every tool the other questions use. Bodies are not checked beyond
their first line, as the gateway may cut long ones.

One question checks more than substrings: "Does an issue hide text?" reads
the issue that hides text the way an attacker would (a visible sentence
followed by an instruction spelled in Unicode tag characters, a title with a
right-to-left override and a zero-width space). Its checks
(`checks_hidden_text`): the title and the visible sentence, `[U+E0069]` (the
tag 'i') and `[U+202E]` appear; the envelope's `hidden_characters` note
starts with the number of format characters in Gitea's answer; and no raw
U+E0000-E007F, U+202A-202E, U+2066-2069 or U+200B-200F is left anywhere in
the answer. For every server the table's notes give how many such characters
its answer to that question passed through raw (as sent, and once JSON
escapes are decoded): a comparison, never a failure.

The long tail: 14 more everyday questions that no tool listed at /mcp
answers (the repository's tags, topics, webhooks, collaborators, the
organisation's members and teams, the combined CI status of main, one
commit in detail, the languages, the root directory, the user's SSH keys, a
comparison of two branches, the branch protections, a pull request's
commits). For each, a model calls `gitea_search_operations` with a short
query written the way a model words it (`long_tail()`: written before the
ranking was measured, not tuned to it) and the tool's defaults, then
`gitea_call_read_operation` with the operation it should have found and its
arguments. Both answers are counted (search bytes, answer bytes, and their
sum in the totals); the table gives where the search put the expected
operation (first, top 3, its rank, or missing); the answer's facts come
from Gitea's own answer to the operation's route, as above. A question
fails when the expected operation is not in the default search results,
when the search names another tool than the call tool to run it
(`call_with`: the operation got listed, so the question is no longer long
tail), when a call fails, or when a fact is missing. The totals line gives
the searches, the answers and both, and the average bytes of a default
search answer.

Review a pull request, by the prompt or by tools: on the seeded pull
request, `prompts/get review_pull_request` (owner, repo, index as a
string), whose one user message the gateway assembles, against the tool
calls a model makes for the same facts: `gitea_repo_get_pull_request`,
`gitea_repo_get_pull_request_files`, then through
`gitea_call_read_operation` (not listed at /mcp)
`gitea_repo_download_pull_diff_or_patch` with diffType "diff",
`gitea_repo_list_pull_reviews` and, for each review its answer shows with
comments, `gitea_repo_get_pull_review_comments`. The prompt's figure is the
UTF-8 length of its message's text, the tools' the sum of their results'
texts; a third table gives each part both ways (the message split at its
`## Heading (operation)` lines). The facts a reviewer needs (`facts_review`:
the title, the description's first line, the changed files' names, per
file its first added line of 8 characters or more and the diff's last such
line, each review's author and first line, its comments' files and first
lines) come from Gitea's own answers (its `.diff` included) and must be
found in both; a missing fact, a failed prompt or a failed call fails the
run. Left out on both sides: `tools/list`, `prompts/list`, and the searches
that find the two operations not listed. With --replay it is skipped (no
diff or reviews are captured).

The seeded repository (`context_bench_data.py`): 4 labels, a milestone, 25
open issues (alice assigned to several, comments by the admin and by alice,
an @mention of the admin, one issue hiding text), 11 commits on main, 2 more
branches, one open pull request changing 3 files, 2 releases, and 3 small
repositories more, so the search finds 4. For the long tail: an annotated
tag, 4 topics, a webhook (to a closed loopback port), alice as a
collaborator and in a team of the organisation that has this repository
only, two commit statuses on main's head (one failing), a protection of
main (pushes allowed), and an SSH public key of the admin's. Other e2e
tests do not look at any of it.

When the peers installed by /work/shared/perf/install.sh are in
$PERF_PEERS_DIR (default ~/.cache/aegis-perf-peers): PyPI `gitea-mcp` 0.5.1 and
npm `gitea-mcp` 0.0.10, they get the same questions through their own closest
tools (or "no tool"), and their bytes are printed in extra columns.

Three ways to run it (from the repository root; needs `pip install mcp==2.3.0`):

    # 1. Against the real e2e Gitea (tests/e2e/gitea.sh start). Seeds its own
    #    repository aegis-org/context-bench (idempotent, so re-runs are fine).
    AEGIS_BIN=target/debug/aegis-gitea-mcp tests/e2e/context_bench.py --json /tmp/context.json

    # 2. The same, and save Gitea's raw answer of each question's route (and a
    #    few more routes) as fixtures, DIR/<name>.json = {"route", "status",
    #    "headers" (content type and pagination), "body"}, format characters
    #    written as JSON escapes:
    tests/e2e/context_bench.py --capture tests/fixtures/gitea-1.27.1

    # 3. Without Gitea, in seconds: a small local server replays the fixtures
    #    of DIR to the gateway (facts are read from the same fixtures).
    tests/e2e/context_bench.py --replay tests/fixtures/gitea-1.27.1

With `--replay`, every long-tail search runs (the catalog needs no Gitea),
and each call only when its route was captured (`lt_*.json`).

Options: `--json PATH` writes every figure as JSON (the long tail under
`long_tail` and `long_tail_totals`, the review under `review_pull_request`); `--no-fail` only reports missing facts
and long-tail failures; `--no-peers` skips the peers (they never run with
--replay: their routes are not all captured); `--save-answers DIR` writes the gateway's
answer texts as DIR/<name>.txt (the review's as review_prompt.txt and
review_tools.txt). Environment: `AEGIS_BIN` (the
gateway binary, default target/debug/aegis-gitea-mcp), `AEGIS_E2E_DIR`
(where fixture.json is, default /tmp/aegis-e2e), `PERF_PEERS_DIR`.

The Markdown table goes to stdout, progress to stderr.

Exit code: 0 when every fact of every question was found in the gateway's
answers and every long-tail search found its operation (or with --no-fail);
1 when a fact is missing, a gateway call or the review prompt failed or a
long-tail search missed;
2 when the run itself could not be done (no Gitea, no binary, ...).
The peers' answers never change the exit code.
"""

import argparse
import asyncio
import base64
import http.server
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unicodedata
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import context_bench_data as DATA  # noqa: E402
from gateway import gateway_binary, load_fixture, stop_gateway  # noqa: E402

STARTED = time.monotonic()
REPO_PATH = "/repos/%s/%s" % (DATA.OWNER, DATA.REPO)


def step(message):
    print("[context-bench %6.2f s] %s" % (time.monotonic() - STARTED, message), file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def stop_process(process):
    """SIGTERM, then SIGKILL after 10 s: only the process this script started."""
    stop_gateway(process)


# ---------------------------------------------------------------------------
# Gitea's REST API, called directly
# ---------------------------------------------------------------------------


class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


class Gitea:
    """Gitea's API with one user's token: JSON in, JSON out."""

    def __init__(self, api_url, token):
        self.api_url = api_url.rstrip("/")
        self.token = token

    def request(self, method, path, query=None, body=None, expect=(200, 201, 204)):
        url = self.api_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Authorization": "token " + self.token, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw, answer_headers = response.status, response.read(), response.headers
        except urllib.error.HTTPError as err:
            status, raw, answer_headers = err.code, err.read(), err.headers
        if status not in expect:
            raise RuntimeError("Gitea %s %s answered %s: %s" % (method, path, status, raw[:300]))
        parsed = json.loads(raw) if raw.strip() else None
        return Answer(status, answer_headers, parsed)

    def get(self, path, query=None, expect=(200,)):
        return self.request("GET", path, query, expect=expect)

    def text(self, path):
        """The body of a route that answers text, not JSON (a `.diff`)."""
        request = urllib.request.Request(self.api_url + path, headers={"Authorization": "token " + self.token})
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read().decode()

    def exists(self, path, query=None):
        return self.get(path, query, expect=(200, 404)).status == 200

    def post(self, path, body):
        return self.request("POST", path, body=body).body

    def put(self, path, body):
        return self.request("PUT", path, body=body).body

    def all_pages(self, path, query):
        """Every item of a paginated list, 50 a page."""
        items, page = [], 1
        while True:
            batch = self.get(path, dict(query, limit=50, page=page)).body
            items += batch
            if len(batch) < 50:
                return items
            page += 1


def q(segment):
    return urllib.parse.quote(segment, safe="")


def b64(text):
    return base64.b64encode(text.encode()).decode()


# ---------------------------------------------------------------------------
# Seeding the bench repository (idempotent)
# ---------------------------------------------------------------------------


def ensure_repo(gitea, owner, name, description, org):
    if gitea.exists("/repos/%s/%s" % (q(owner), q(name))):
        return False
    options = {"name": name, "description": description, "auto_init": True, "default_branch": "main", "readme": "Default"}
    gitea.post("/orgs/%s/repos" % q(owner) if org else "/user/repos", options)
    return True


def ensure_labels(gitea):
    have = {label["name"]: label["id"] for label in gitea.all_pages(REPO_PATH + "/labels", {})}
    for label in DATA.LABELS:
        if label["name"] not in have:
            have[label["name"]] = gitea.post(REPO_PATH + "/labels", label)["id"]
    return have


def ensure_milestone(gitea):
    for milestone in gitea.all_pages(REPO_PATH + "/milestones", {"state": "all"}):
        if milestone["title"] == DATA.MILESTONE["title"]:
            return milestone["id"]
    return gitea.post(REPO_PATH + "/milestones", DATA.MILESTONE)["id"]


def ensure_file(gitea, path, content, message, branch):
    """Creates or updates `path` on `branch` so it holds `content`; True if it committed."""
    url = REPO_PATH + "/contents/" + "/".join(q(p) for p in path.split("/"))
    current = gitea.get(url, {"ref": branch}, expect=(200, 404))
    change = {"content": b64(content), "message": message, "branch": branch}
    if current.status == 404:
        gitea.post(url, change)
        return True
    if base64.b64decode(current.body["content"]).decode() == content:
        return False
    gitea.put(url, dict(change, sha=current.body["sha"]))
    return True


def ensure_release(gitea, release):
    if gitea.exists(REPO_PATH + "/releases/tags/" + q(release["tag_name"])):
        return False
    body = {k: release[k] for k in ("tag_name", "name", "body")}
    gitea.post(REPO_PATH + "/releases", dict(body, target_commitish="main"))
    return True


def ensure_main_history(gitea):
    """The commits on main, with a release tagged after the commits it names."""
    made = 0
    for number, (path, content, message) in enumerate(DATA.MAIN_COMMITS, start=1):
        made += ensure_file(gitea, path, content, message, "main")
        for release in DATA.RELEASES:
            if release["after_commit"] == number:
                made += ensure_release(gitea, release)
    return made


def ensure_branches(gitea):
    made = 0
    for branch, commits in DATA.BRANCHES:
        if not gitea.exists(REPO_PATH + "/branches/" + q(branch)):
            gitea.post(REPO_PATH + "/branches", {"new_branch_name": branch, "old_ref_name": "main"})
            made += 1
        for path, content, message in commits:
            made += ensure_file(gitea, path, content, message, branch)
    return made


def ensure_issues(gitea, label_ids, milestone_id, alice_login):
    """The issues by title (created where missing): {title: number}."""
    have = {i["title"]: i["number"] for i in gitea.all_pages(REPO_PATH + "/issues", {"state": "all", "type": "issues"})}
    for issue in DATA.ISSUES:
        if issue["title"] in have:
            continue
        body = {"title": issue["title"], "body": issue["body"], "labels": [label_ids[n] for n in issue["labels"]]}
        if issue["alice"]:
            body["assignees"] = [alice_login]
        if issue["milestone"]:
            body["milestone"] = milestone_id
        have[issue["title"]] = gitea.post(REPO_PATH + "/issues", body)["number"]
    return have


def ensure_hidden_issue(gitea, label_ids):
    """The issue that hides text (DATA.HIDDEN_ISSUE), found by the start of
    its title or created: its number."""
    for issue in gitea.all_pages(REPO_PATH + "/issues", {"state": "all", "type": "issues"}):
        if issue["title"].startswith(DATA.HIDDEN_TITLE_START):
            return issue["number"]
    spec = DATA.HIDDEN_ISSUE
    body = {"title": spec["title"], "body": spec["body"], "labels": [label_ids[n] for n in spec["labels"]]}
    return gitea.post(REPO_PATH + "/issues", body)["number"]


def hidden_issue_as_stored(gitea, number):
    """Whether Gitea returns the planted title and body unchanged (a sentence)."""
    issue = gitea.get("%s/issues/%d" % (REPO_PATH, number)).body
    same = [part for part in ("title", "body") if issue[part] == DATA.HIDDEN_ISSUE[part]]
    if len(same) == 2:
        return "returned unchanged, %d format characters" % count_format_chars(issue)
    return "CHANGED by Gitea (unchanged: %s): title %r, body %r" % (same or "nothing", issue["title"], issue["body"])


def ensure_comments(admin, alice, numbers, admin_login):
    made = 0
    for title, author, text in DATA.COMMENTS:
        text = text.replace("{admin}", admin_login)
        path = "%s/issues/%d/comments" % (REPO_PATH, numbers[title])
        if any(c["body"] == text for c in admin.get(path).body):
            continue
        (alice if author == "alice" else admin).post(path, {"body": text})
        made += 1
    return made


def ensure_pull_request(gitea, label_ids):
    spec = DATA.PULL_REQUEST
    for pull in gitea.all_pages(REPO_PATH + "/pulls", {"state": "all"}):
        if pull["head"]["ref"] == spec["head"]:
            return pull["number"]
    body = {k: spec[k] for k in ("head", "base", "title", "body")}
    body["labels"] = [label_ids[n] for n in spec["labels"]]
    return gitea.post(REPO_PATH + "/pulls", body)["number"]


def unread_notifications(admin):
    return admin.get(REPO_PATH + "/notifications", {"status-types": "unread"}).body


def ensure_notification(admin, alice, numbers, admin_login):
    """At least one unread notification for the admin in the bench repository.
    Gitea creates them from a queue, so wait a little; if there are none
    (someone read them), alice mentions the admin once more."""
    for attempt in range(2):
        for _ in range(60):
            if unread_notifications(admin):
                return
            time.sleep(0.5)
        if attempt == 0:
            title = next(i["title"] for i in DATA.ISSUES if i["title"] != DATA.FOCUS_ISSUE)
            path = "%s/issues/%d/comments" % (REPO_PATH, numbers[title])
            alice.post(path, {"body": "@%s ping: is this still planned for %s?" % (admin_login, DATA.MILESTONE["title"])})
    raise RuntimeError("Gitea made no notification for the admin")


def ensure_tag(gitea):
    if gitea.exists(REPO_PATH + "/tags/" + q(DATA.TAG["tag_name"])):
        return 0
    gitea.post(REPO_PATH + "/tags", dict(DATA.TAG, target="main"))
    return 1


def ensure_topics(gitea):
    if sorted(gitea.get(REPO_PATH + "/topics").body["topics"]) == sorted(DATA.TOPICS):
        return 0
    gitea.put(REPO_PATH + "/topics", {"topics": DATA.TOPICS})
    return 1


def ensure_team(gitea, alice_login):
    """The org's team with alice in it and the bench repository only."""
    made = 0
    teams = {t["name"]: t["id"] for t in gitea.all_pages("/orgs/%s/teams" % q(DATA.OWNER), {})}
    team_id = teams.get(DATA.TEAM["name"])
    if team_id is None:
        team_id = gitea.post("/orgs/%s/teams" % q(DATA.OWNER), DATA.TEAM)["id"]
        made += 1
    if not gitea.exists("/teams/%d/members/%s" % (team_id, q(alice_login))):
        gitea.request("PUT", "/teams/%d/members/%s" % (team_id, q(alice_login)))
        made += 1
    if not gitea.exists("/teams/%d/repos/%s/%s" % (team_id, q(DATA.OWNER), q(DATA.REPO))):
        gitea.request("PUT", "/teams/%d/repos/%s/%s" % (team_id, q(DATA.OWNER), q(DATA.REPO)))
        made += 1
    return made


def ensure_statuses(gitea, sha):
    path = "%s/statuses/%s" % (REPO_PATH, sha)
    have = {s["context"] for s in gitea.all_pages("%s/commits/%s/statuses" % (REPO_PATH, sha), {})}
    made = 0
    for status in DATA.STATUSES:
        if status["context"] not in have:
            gitea.post(path, status)
            made += 1
    return made


def ensure_branch_protection(gitea):
    rules = gitea.get(REPO_PATH + "/branch_protections").body
    if any(rule["rule_name"] == DATA.BRANCH_PROTECTION["rule_name"] for rule in rules):
        return 0
    gitea.post(REPO_PATH + "/branch_protections", DATA.BRANCH_PROTECTION)
    return 1


def ensure_ssh_key(gitea):
    if any(key["title"] == DATA.SSH_KEY["title"] for key in gitea.all_pages("/user/keys", {})):
        return 0
    gitea.post("/user/keys", DATA.SSH_KEY)
    return 1


def ensure_webhook(gitea):
    url = DATA.WEBHOOK["config"]["url"]
    if any(hook["config"].get("url") == url for hook in gitea.all_pages(REPO_PATH + "/hooks", {})):
        return 0
    gitea.post(REPO_PATH + "/hooks", DATA.WEBHOOK)
    return 1


def wait_for_languages(gitea):
    """Gitea counts a repository's languages from a queue after a push."""
    for _ in range(60):
        if gitea.get(REPO_PATH + "/languages").body:
            return
        time.sleep(0.5)
    raise RuntimeError("Gitea counted no language in %s/%s" % (DATA.OWNER, DATA.REPO))


def wait_for_mergeable(gitea, pull):
    """Wait until Gitea says the pull request is `mergeable`: right after
    the long tail's seeding (statuses and a protection on its base) it was
    sometimes still checking it, and the pull request answers were 17 bytes
    shorter. Not an error if it never comes."""
    for _ in range(40):
        if gitea.get("%s/pulls/%d" % (REPO_PATH, pull)).body.get("mergeable"):
            return
        time.sleep(0.25)
    step("pull request #%d is still not mergeable: its answers may differ from other runs" % pull)


def commit_with_message(gitea, message):
    """The SHA of the commit on main whose first line is `message`."""
    query = {"sha": "main", "stat": "false", "files": "false", "verification": "false"}
    for commit in gitea.all_pages(REPO_PATH + "/commits", query):
        if commit["commit"]["message"].split("\n", 1)[0] == message:
            return commit["sha"]
    raise RuntimeError("no commit %r on main" % message)


def seed_long_tail(admin, alice_login, head):
    """What the long-tail questions ask about; the webhook last, so no
    seeded event goes to it. Returns how many things it made."""
    made = ensure_tag(admin) + ensure_topics(admin) + ensure_team(admin, alice_login)
    made += ensure_statuses(admin, head) + ensure_branch_protection(admin) + ensure_ssh_key(admin)
    wait_for_languages(admin)
    return made + ensure_webhook(admin)


def seed(fixture):
    """Seeds the bench data; returns the numbers the questions ask about."""
    admin = Gitea(fixture["api_url"], fixture["admin"]["token"])
    alice = Gitea(fixture["api_url"], fixture["user"]["token"])
    admin_login, alice_login = fixture["admin"]["login"], fixture["user"]["login"]
    created = ensure_repo(admin, DATA.OWNER, DATA.REPO, DATA.DESCRIPTION, org=True)
    for owner, name, description, by in DATA.EXTRA_REPOS:
        ensure_repo(alice if by == "alice" else admin, owner, name, description, org=(by == "admin"))
    admin.put("%s/collaborators/%s" % (REPO_PATH, q(alice_login)), {"permission": "write"})
    label_ids = ensure_labels(admin)
    milestone_id = ensure_milestone(admin)
    commits = ensure_main_history(admin) + ensure_branches(admin)
    numbers = ensure_issues(admin, label_ids, milestone_id, alice_login)
    hidden = ensure_hidden_issue(admin, label_ids)
    comments = ensure_comments(admin, alice, numbers, admin_login)
    pull = ensure_pull_request(admin, label_ids)
    ensure_notification(admin, alice, numbers, admin_login)
    step(
        "seeded %s/%s (%s; %d commits, branches, releases made; %d comments made)"
        % (DATA.OWNER, DATA.REPO, "new" if created else "already there", commits, comments)
    )
    step("issue #%d hides text: %s" % (hidden, hidden_issue_as_stored(admin, hidden)))
    head = admin.get(REPO_PATH + "/branches/main").body["commit"]["id"]
    made = seed_long_tail(admin, alice_login, head)
    wait_for_mergeable(admin, pull)
    step("seeded for the long tail (%d things made: tag, topics, team, statuses, protection, key, webhook)" % made)
    return {
        "issue": numbers[DATA.FOCUS_ISSUE],
        "pull": pull,
        "head": head,
        "hidden_issue": hidden,
        "single_commit": commit_with_message(admin, DATA.SINGLE_COMMIT_MESSAGE),
    }


# ---------------------------------------------------------------------------
# Facts: what an answer must contain, from Gitea's own answer to the route
# ---------------------------------------------------------------------------


def first_line(text, limit=60):
    """The first non-empty line of `text`, cut at a word boundary near `limit`."""
    line = next((l.strip() for l in text.splitlines() if l.strip()), "")
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0]


def first_sentence(markdown):
    """The first sentence of the first paragraph that is not a heading."""
    paragraphs = [p.strip() for p in markdown.split("\n\n")]
    text = next(p for p in paragraphs if p and not p.startswith("#"))
    return re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0]


def facts_issue_list(issues):
    facts = []
    for issue in issues:
        facts += [("issue number", issue["number"]), ("issue title", issue["title"])]
        facts += [("label", label["name"]) for label in issue["labels"]]
    return dedupe(facts)


def facts_issue(issue):
    facts = [("number", issue["number"]), ("title", issue["title"]), ("author", issue["user"]["login"])]
    facts += [("body start", first_line(issue["body"]))]
    facts += [("label", label["name"]) for label in issue["labels"]]
    facts += [("assignee", user["login"]) for user in issue["assignees"] or []]
    if issue["milestone"]:
        facts.append(("milestone", issue["milestone"]["title"]))
    return facts


def facts_comments(comments):
    facts = []
    for comment in comments:
        facts += [("comment author", comment["user"]["login"]), ("comment start", first_line(comment["body"]))]
    return dedupe(facts)


def facts_pull_list(pulls):
    facts = []
    for pull in pulls:
        facts += [("pull number", pull["number"]), ("pull title", pull["title"])]
        facts += [("head branch", pull["head"]["ref"]), ("base branch", pull["base"]["ref"])]
    return dedupe(facts)


def facts_pull(pull):
    return [
        ("number", pull["number"]),
        ("title", pull["title"]),
        ("author", pull["user"]["login"]),
        ("head branch", pull["head"]["ref"]),
        ("base branch", pull["base"]["ref"]),
    ]


def facts_pull_files(files):
    return [("file", f["filename"]) for f in files]


def facts_repo_search(result):
    return [("repository", repo["full_name"]) for repo in result["data"]]


def facts_readme(contents):
    text = base64.b64decode(contents["content"]).decode()
    return [("path", contents["path"]), ("first sentence", first_sentence(text))]


def facts_commits(commits):
    return [("sha", commit["sha"][:10]) for commit in commits]


def facts_branches(branches):
    return [("branch", branch["name"]) for branch in branches]


def facts_releases(releases):
    facts = []
    for release in releases:
        facts += [("tag", release["tag_name"]), ("release name", release["name"])]
    return facts


def facts_notifications(threads):
    facts = []
    for thread in threads:
        facts += [("subject", thread["subject"]["title"]), ("repository", thread["repository"]["full_name"])]
    return dedupe(facts)


def facts_user(user):
    return [("login", user["login"])]


def facts_orgs(orgs):
    return [("organization", org["username"]) for org in orgs]


# Hidden text: characters that display as nothing or reorder what follows.
# The gateway shows every format character (Unicode category Cf) as
# [U+XXXX]; these, the ones planted, must never reach a model raw.
RAW_HIDDEN = re.compile("[\U000E0000-\U000E007F\u202A-\u202E\u2066-\u2069\u200B-\u200F]")


def is_format_char(c):
    return unicodedata.category(c) == "Cf"


def shown_visibly(text):
    """`text` as the gateway shows it: each format character as [U+XXXX]."""
    return "".join("[U+%04X]" % ord(c) if is_format_char(c) else c for c in text)


def count_format_chars(value):
    """Format characters in every string of a JSON value."""
    if isinstance(value, dict):
        return sum(count_format_chars(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_format_chars(v) for v in value)
    if isinstance(value, str):
        return sum(1 for c in value if is_format_char(c))
    return 0


class Check:
    """A fact that is not a substring of Gitea's answer: `test(text)` says
    whether the answer text (see answer_text) has it."""

    def __init__(self, description, test):
        self.description = description
        self.test = test

    def __repr__(self):
        return self.description


def envelope_note_starts_with(field, start):
    """The envelope (the first text item, JSON) has `field`, a string
    starting with `start`."""

    def test(text):
        try:
            envelope = json.loads(text.split("\n", 1)[0])
        except ValueError:
            return False
        note = envelope.get(field) if isinstance(envelope, dict) else None
        return isinstance(note, str) and note.startswith(start)

    return Check("envelope field %s starting %r" % (field, start), test)


def no_raw_hidden_characters():
    return Check(
        "no raw U+E0000-E007F, U+202A-202E, U+2066-2069, U+200B-200F",
        lambda text: RAW_HIDDEN.search(text) is None,
    )


def checks_hidden_text(issue):
    """The issue that hides text: its visible sentence, the first tag
    character ('i') and the right-to-left override shown as [U+XXXX], the
    envelope's `hidden_characters` note counting every format character of
    Gitea's answer, and none of them raw."""
    visible = "".join(c for c in issue["body"] if not is_format_char(c))
    return [
        ("title", issue["title"]),
        ("visible sentence", first_line(visible)),
        ("tag 'i' shown", "[U+E0069]"),
        ("right-to-left override shown", "[U+202E]"),
        ("hidden characters counted", envelope_note_starts_with("hidden_characters", "%d " % count_format_chars(issue))),
        ("nothing hidden", no_raw_hidden_characters()),
    ]


def dedupe(facts):
    return list(dict.fromkeys(facts))


def fact_found(text, value):
    """A number must stand alone (`12`, not `123`); text is looked for as it
    appears inside a JSON string (escaped), or as is, each also with its
    format characters shown as [U+XXXX]; a Check runs its test."""
    if isinstance(value, Check):
        return value.test(text)
    if isinstance(value, int):
        return re.search(r"(?<![\w.])%d(?![\w.])" % value, text) is not None
    forms = {value, shown_visibly(value)}
    return any(json.dumps(form, ensure_ascii=False)[1:-1] in text or form in text for form in forms)


def answer_text(texts):
    """The text facts are looked for in: each text item, as JSON dumped again
    (escapes decoded) when it parses, else as it is."""
    parts = []
    for text in texts:
        try:
            parts.append(json.dumps(json.loads(text), ensure_ascii=False))
        except ValueError:
            parts.append(text)
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# The questions
# ---------------------------------------------------------------------------


class Question:
    def __init__(self, name, ask, tool, arguments, path=None, query=None, facts=None):
        self.name = name
        self.ask = ask
        self.tool = tool
        self.arguments = arguments
        self.path = path  # Gitea's route for this question (under /api/v1)
        self.query = query or {}
        self.facts = facts  # Gitea's body of the route -> [(what, value)]


def questions(subject):
    """The questions, with the arguments a model would pass. `subject`: the
    issue and pull request numbers asked about."""
    repo = {"owner": DATA.OWNER, "repo": DATA.REPO}
    issue, pull, hidden = subject["issue"], subject["pull"], subject["hidden_issue"]
    return [
        Question("tools_list", "Which tools are there?", "tools/list", None),
        Question(
            "issue_list", "Which issues are open? (20)", "gitea_issue_list_issues",
            dict(repo, state="open", type="issues", limit=20),
            REPO_PATH + "/issues", {"state": "open", "type": "issues", "limit": 20}, facts_issue_list,
        ),
        Question(
            "issue", "What does issue #%d say?" % issue, "gitea_issue_get_issue", dict(repo, index=issue),
            "%s/issues/%d" % (REPO_PATH, issue), None, facts_issue,
        ),
        Question(
            "issue_comments", "What was said on it?", "gitea_issue_get_comments", dict(repo, index=issue),
            "%s/issues/%d/comments" % (REPO_PATH, issue), None, facts_comments,
        ),
        Question(
            "issue_hidden_text", "Does an issue hide text?", "gitea_issue_get_issue", dict(repo, index=hidden),
            "%s/issues/%d" % (REPO_PATH, hidden), None, checks_hidden_text,
        ),
        Question(
            "pull_request_list", "Which pull requests are open?", "gitea_repo_list_pull_requests",
            dict(repo, state="open"), REPO_PATH + "/pulls", {"state": "open"}, facts_pull_list,
        ),
        Question(
            "pull_request", "What is pull request #%d?" % pull, "gitea_repo_get_pull_request", dict(repo, index=pull),
            "%s/pulls/%d" % (REPO_PATH, pull), None, facts_pull,
        ),
        Question(
            "pull_request_files", "Which files does it change?", "gitea_repo_get_pull_request_files",
            dict(repo, index=pull), "%s/pulls/%d/files" % (REPO_PATH, pull), None, facts_pull_files,
        ),
        Question(
            "repo_search", "Which repositories match %r?" % DATA.SEARCH_QUERY, "gitea_repo_search",
            {"q": DATA.SEARCH_QUERY}, "/repos/search", {"q": DATA.SEARCH_QUERY}, facts_repo_search,
        ),
        Question(
            "readme", "What does the README say?", "gitea_repo_get_contents", dict(repo, filepath="README.md"),
            REPO_PATH + "/contents/README.md", None, facts_readme,
        ),
        Question(
            "commits_2", "What are the last 2 commits?", "gitea_repo_get_all_commits", dict(repo, limit=2),
            REPO_PATH + "/commits", {"limit": 2}, facts_commits,
        ),
        Question(
            "commits_10", "What are the last 10 commits?", "gitea_repo_get_all_commits", dict(repo, limit=10),
            REPO_PATH + "/commits", {"limit": 10}, facts_commits,
        ),
        Question(
            "branches", "Which branches are there?", "gitea_repo_list_branches", dict(repo),
            REPO_PATH + "/branches", None, facts_branches,
        ),
        Question(
            "releases", "What has been released?", "gitea_repo_list_releases", dict(repo),
            REPO_PATH + "/releases", None, facts_releases,
        ),
        Question(
            "notifications", "What needs my attention?", "gitea_notify_get_list", {},
            "/notifications", None, facts_notifications,
        ),
        Question("current_user", "Who am I?", "gitea_user_get_current", {}, "/user", None, facts_user),
        Question(
            "orgs", "Which organisations am I in?", "gitea_org_list_current_user_orgs", {},
            "/user/orgs", None, facts_orgs,
        ),
    ]


# ---------------------------------------------------------------------------
# The long tail: questions no listed tool answers at /mcp
# ---------------------------------------------------------------------------

SEARCH_TOOL = "gitea_search_operations"
CALL_READ_TOOL = "gitea_call_read_operation"


class LongTail:
    """A question a model answers in two calls: `gitea_search_operations`
    with `search` (a short query, the way a model words it, written before
    the ranking was measured; the tool's defaults), then `tool` (a call
    tool) with `operation`, the one it should find, and its `arguments`.
    `path`, `query` and `facts` are as in Question: Gitea's own route for
    the facts, looked for in the call's answer."""

    def __init__(self, name, ask, search, operation, arguments, path, query=None, facts=None, tool=CALL_READ_TOOL):
        self.name = name
        self.ask = ask
        self.search = search
        self.operation = operation
        self.arguments = arguments
        self.path = path
        self.query = query or {}
        self.facts = facts
        self.tool = tool

    @property
    def search_name(self):
        return self.name + ".search"

    def calls(self):
        """{answer name: (tool, its arguments)}: the search, then the call."""
        return {
            self.search_name: (SEARCH_TOOL, {"query": self.search}),
            self.name: (self.tool, {"name": self.operation, "arguments": self.arguments}),
        }


def facts_tags(tags):
    facts = []
    for tag in tags:
        facts += [("tag", tag["name"]), ("tag commit", tag["commit"]["sha"][:10])]
    return facts


def facts_topics(body):
    return [("topic", topic) for topic in body["topics"]]


def facts_hooks(hooks):
    facts = []
    for hook in hooks:
        facts += [("hook id", hook["id"]), ("hook type", hook["type"]), ("hook url", hook["config"]["url"])]
        facts += [("event", event) for event in hook["events"]]
    return dedupe(facts)


def facts_logins(users):
    return [("login", user["login"]) for user in users]


def facts_teams(teams):
    facts = []
    for team in teams:
        facts += [("team", team["name"]), ("permission", team["permission"])]
        if team.get("description"):
            facts.append(("description", first_line(team["description"])))
    return dedupe(facts)


def facts_combined_status(combined):
    facts = [("combined state", combined["state"])]
    for status in combined["statuses"]:
        facts += [("context", status["context"]), ("state", status["status"]), ("description", status["description"])]
    return dedupe(facts)


def facts_single_commit(commit):
    facts = [("sha", commit["sha"][:10]), ("message", first_line(commit["commit"]["message"]))]
    facts.append(("author", commit["commit"]["author"]["name"]))
    return facts + [("file", f["filename"]) for f in commit.get("files") or []]


def facts_languages(languages):
    facts = []
    for name, size in languages.items():
        facts += [("language", name), ("bytes of %s" % name, size)]
    return facts


def facts_entries(entries):
    return [("entry", entry["name"]) for entry in entries]


def facts_keys(keys):
    facts = []
    for key in keys:
        facts += [("key title", key["title"]), ("fingerprint", key["fingerprint"])]
    return facts


def facts_compare(comparison):
    facts = [("commits", comparison["total_commits"])]
    for commit in comparison["commits"]:
        facts += [("sha", commit["sha"][:10]), ("message", first_line(commit["commit"]["message"]))]
    return facts + [("file", f["filename"]) for f in comparison.get("files") or []]


def facts_protections(rules):
    facts = []
    for rule in rules:
        facts += [("rule", rule["rule_name"]), ("required approvals", rule["required_approvals"])]
        facts += [("required check", c) for c in rule.get("status_check_contexts") or []]
    return facts


def facts_commit_list(commits):
    facts = []
    for commit in commits:
        facts += [("sha", commit["sha"][:10]), ("message", first_line(commit["commit"]["message"]))]
    return facts


def long_tail(subject):
    """The long-tail questions. `subject`: what they ask about (None where
    a replay has no fixture for it)."""
    repo = {"owner": DATA.OWNER, "repo": DATA.REPO}
    org = {"org": DATA.OWNER}
    pull, single = subject["pull"], subject.get("single_commit")
    basehead = "main..." + DATA.COMPARE_HEAD
    return [
        LongTail(
            "lt_tags", "Which tags are there?", "list tags", "gitea_repo_list_tags", dict(repo),
            REPO_PATH + "/tags", None, facts_tags,
        ),
        LongTail(
            "lt_topics", "What are the repository's topics?", "repository topics", "gitea_repo_list_topics",
            dict(repo), REPO_PATH + "/topics", None, facts_topics,
        ),
        LongTail(
            "lt_hooks", "Which webhooks does it have?", "webhooks of a repository", "gitea_repo_list_hooks",
            dict(repo), REPO_PATH + "/hooks", None, facts_hooks,
        ),
        LongTail(
            "lt_collaborators", "Who are its collaborators?", "repository collaborators",
            "gitea_repo_list_collaborators", dict(repo), REPO_PATH + "/collaborators", None, facts_logins,
        ),
        LongTail(
            "lt_org_members", "Who is in the organisation?", "members of an organization", "gitea_org_list_members",
            dict(org), "/orgs/%s/members" % DATA.OWNER, None, facts_logins,
        ),
        LongTail(
            "lt_org_teams", "Which teams does the organisation have?", "teams in an organization",
            "gitea_org_list_teams", dict(org), "/orgs/%s/teams" % DATA.OWNER, None, facts_teams,
        ),
        LongTail(
            "lt_ci_status", "Is CI green on main?", "CI status of a commit", "gitea_repo_get_combined_status_by_ref",
            dict(repo, ref="main"), REPO_PATH + "/commits/main/status", None, facts_combined_status,
        ),
        LongTail(
            "lt_commit", "What did commit %s change?" % (single[:10] if single else "<sha>"), "show a commit",
            "gitea_repo_get_single_commit", dict(repo, sha=single), "%s/git/commits/%s" % (REPO_PATH, single),
            None, facts_single_commit,
        ),
        LongTail(
            "lt_languages", "Which languages is it written in?", "programming languages of a repository",
            "gitea_repo_get_languages", dict(repo), REPO_PATH + "/languages", None, facts_languages,
        ),
        LongTail(
            "lt_root", "What is in the repository's root?", "list files in the repository root",
            "gitea_repo_get_contents_list", dict(repo), REPO_PATH + "/contents", None, facts_entries,
        ),
        LongTail(
            "lt_ssh_keys", "Which SSH keys do I have?", "my ssh keys", "gitea_user_current_list_keys", {},
            "/user/keys", None, facts_keys,
        ),
        LongTail(
            "lt_compare", "What does %s have that main lacks?" % DATA.COMPARE_HEAD, "compare two branches",
            "gitea_repo_compare_diff", dict(repo, basehead=basehead), "%s/compare/%s" % (REPO_PATH, basehead),
            None, facts_compare,
        ),
        LongTail(
            "lt_protection", "How is main protected?", "branch protection rules", "gitea_repo_list_branch_protection",
            dict(repo), REPO_PATH + "/branch_protections", None, facts_protections,
        ),
        LongTail(
            "lt_pull_commits", "Which commits are in pull request #%d?" % pull, "commits in a pull request",
            "gitea_repo_get_pull_request_commits", dict(repo, index=pull), "%s/pulls/%d/commits" % (REPO_PATH, pull),
            None, facts_commit_list,
        ),
    ]


def extra_routes(subject):
    """Routes captured as fixtures besides the questions' own: (name, path, query)."""
    return [
        ("repository", REPO_PATH, None),
        ("commit", "%s/git/commits/%s" % (REPO_PATH, subject["head"]), None),
        ("contents_root", REPO_PATH + "/contents", None),
        ("label_list", REPO_PATH + "/labels", None),
        ("milestone_list", REPO_PATH + "/milestones", None),
    ]


def tools_list_facts(all_questions, tail=()):
    """tools/list must name every tool the other questions use (for the
    long tail: the search tool and the call tool)."""
    tools = [question.tool for question in all_questions if question.tool != "tools/list"]
    for question in tail:
        tools += [SEARCH_TOOL, question.tool]
    return [("tool", tool) for tool in dict.fromkeys(tools)]


def search_rank(answer, operation):
    """Where `operation` is in a search answer ({"operations": [{name,
    call_with, ...}]}): (1-based rank or None, its call_with or None, the
    names found)."""
    try:
        found = json.loads(answer["texts"][0])["operations"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, None, []
    names = [op.get("name") for op in found]
    if operation not in names:
        return None, None, names
    rank = names.index(operation)
    return rank + 1, found[rank].get("call_with"), names


def rank_cell(rank):
    if rank is None:
        return "missing"
    return "first" if rank == 1 else ("%d (top 3)" % rank if rank <= 3 else "%d" % rank)


# ---------------------------------------------------------------------------
# Review a pull request: the prompt against the tools
# ---------------------------------------------------------------------------

REVIEW_PROMPT = "review_pull_request"


def review_tool_calls(pull):
    """The calls a model makes for the facts the review prompt holds, in
    the prompt's order: [(label, tool, arguments, operation)]. The diff and
    the reviews are not listed at /mcp: `gitea_call_read_operation` runs
    them. The comments of each review that has any follow, once the
    reviews are known (review_comment_call)."""
    repo = {"owner": DATA.OWNER, "repo": DATA.REPO, "index": pull}
    return [
        ("the pull request", "gitea_repo_get_pull_request", dict(repo), "gitea_repo_get_pull_request"),
        ("its files", "gitea_repo_get_pull_request_files", dict(repo), "gitea_repo_get_pull_request_files"),
        (
            "its diff", CALL_READ_TOOL,
            {"name": "gitea_repo_download_pull_diff_or_patch", "arguments": dict(repo, diffType="diff")},
            "gitea_repo_download_pull_diff_or_patch",
        ),
        (
            "its reviews", CALL_READ_TOOL, {"name": "gitea_repo_list_pull_reviews", "arguments": dict(repo)},
            "gitea_repo_list_pull_reviews",
        ),
    ]


def review_comment_call(pull, review_id):
    arguments = {"owner": DATA.OWNER, "repo": DATA.REPO, "index": pull, "id": review_id}
    return (
        "comments of review %d" % review_id, CALL_READ_TOOL,
        {"name": "gitea_repo_get_pull_review_comments", "arguments": arguments},
        "gitea_repo_get_pull_review_comments",
    )


def reviews_with_comments(texts):
    """The ids of the reviews, in a list-reviews answer (the gateway's
    envelope), that a model would read the comments of: those whose
    `comments_count` is not 0 (or not shown)."""
    try:
        reviews = json.loads(texts[0])["data"]
    except (ValueError, KeyError, IndexError, TypeError):
        return []
    if not isinstance(reviews, list):
        return []
    return [r["id"] for r in reviews if isinstance(r, dict) and "id" in r and r.get("comments_count", 1) != 0]


def review_upstream(gitea, pull):
    """Gitea's own answers for the review's facts: the pull request, its
    files, its `.diff`, its reviews and each one's comments."""
    path = "%s/pulls/%d" % (REPO_PATH, pull)
    reviews = gitea.all_pages(path + "/reviews", {})
    comments = {}
    for review in reviews:
        if review.get("comments_count"):
            comments[review["id"]] = gitea.get("%s/reviews/%d/comments" % (path, review["id"])).body
    return {
        "pull": gitea.get(path).body,
        "files": gitea.all_pages(path + "/files", {}),
        "diff": gitea.text(path + ".diff"),
        "reviews": reviews,
        "review_comments": comments,
    }


def diff_line_facts(diff):
    """A line of the diff per file (its first added line with 8 characters
    or more) and the diff's last such line (a cut diff misses it)."""
    per_file, last, current, in_header = {}, None, None, False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            current, in_header = line.rsplit(" b/", 1)[-1], True
        elif line.startswith("@@"):
            in_header = False
        elif not in_header and line.startswith("+") and len(line[1:].strip()) >= 8:
            per_file.setdefault(current, line)
            last = line
    facts = [("diff line of %s" % name, line) for name, line in per_file.items()]
    if last is not None and last not in per_file.values():
        facts.append(("last diff line", last))
    return facts


def facts_review(upstream):
    """What a reviewer needs, from Gitea's answers: the title, the
    description's first line, the changed files' names, lines of the diff,
    and who reviewed with what (each review's first line and its comments'
    files and first lines)."""
    pull = upstream["pull"]
    facts = [("title", pull["title"])]
    if (pull.get("body") or "").strip():
        facts.append(("description start", first_line(pull["body"])))
    facts += [("file", f["filename"]) for f in upstream["files"]]
    facts += diff_line_facts(upstream["diff"])
    for review in upstream["reviews"]:
        facts.append(("reviewer", review["user"]["login"]))
        if (review.get("body") or "").strip():
            facts.append(("review start", first_line(review["body"])))
        for comment in upstream["review_comments"].get(review["id"], []):
            facts += [("review comment file", comment["path"]), ("review comment start", first_line(comment["body"]))]
    return dedupe(facts)


def prompt_sections(text):
    """The message's parts: [(heading, operation, bytes)], the task and
    the notice first (heading None), then each read's part from its
    `## Heading (operation)` line to the next."""
    marks = list(re.finditer(r"^## (.+) \((gitea_[a-z0-9_]+)\)$", text, re.M))
    cuts = [0] + [m.start() for m in marks] + [len(text)]
    names = [(None, None)] + [(m.group(1), m.group(2)) for m in marks]
    return [
        (heading, operation, len(text[cuts[i]:cuts[i + 1]].encode()))
        for i, (heading, operation) in enumerate(names)
    ]


# ---------------------------------------------------------------------------
# The peers: their closest tool for each question (None: no such tool)
# ---------------------------------------------------------------------------


def peer_calls(peer, subject):
    repo = {"owner": DATA.OWNER, "repo": DATA.REPO}
    issue, pull = subject["issue"], subject["pull"]
    if peer == "gitea-mcp-py":
        return {
            "issue_list": ("list_issues", dict(repo, state="open", limit=20)),
            "issue": ("get_issue", dict(repo, issue_number=issue)),
            "issue_hidden_text": ("get_issue", dict(repo, issue_number=subject["hidden_issue"])),
            # Its get_issue returns the issue with all of its comments.
            "issue_comments": ("get_issue", dict(repo, issue_number=issue)),
            "pull_request_list": ("list_pull_requests", dict(repo, state="open")),
            "pull_request": ("get_pull_request", dict(repo, pull_number=pull)),
            "readme": ("read_file", dict(repo, path="README.md")),
            "branches": ("list_branches", dict(repo)),
            "releases": ("list_releases", dict(repo)),
            # No tool for GET /user alone: this one calls /user and /version.
            "current_user": ("get_server_info", {}),
        }
    return {
        "issue_list": ("issue__list", dict(repo, state="open", limit=20)),
        "issue": ("issue__get_by_index", dict(repo, index=issue)),
        "issue_hidden_text": ("issue__get_by_index", dict(repo, index=subject["hidden_issue"])),
        "issue_comments": ("issue__comment_list", dict(repo, index=issue)),
        "pull_request_list": ("pull_request__list", dict(repo, state="open")),
        "pull_request": ("pull_request__get", dict(repo, index=pull)),
        "current_user": ("user__get_my_userinfo", {}),
    }


def peers_dir():
    return os.path.expanduser(os.environ.get("PERF_PEERS_DIR", "~/.cache/aegis-perf-peers"))


def peer_command(peer, port, gitea_url, token):
    """(argv, env) to start `peer` on `port`, or None when it is not installed."""
    base_env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    if peer == "gitea-mcp-py":
        binary = os.path.join(peers_dir(), "gitea-mcp-py", "bin", "gitea-mcp")
        if not os.path.exists(binary):
            return None
        argv = [binary, "serve", "--transport", "http", "--host", "127.0.0.1", "--port", str(port), "--path", "/mcp"]
        return argv, dict(base_env, GITEA_URL=gitea_url, GITEA_TOKEN=token)
    script = os.path.join(peers_dir(), "gitea-mcp-npm", "node_modules", "gitea-mcp", "dist", "streamableHttp.js")
    if not os.path.exists(script) or not shutil.which("node"):
        return None
    # It listens on all interfaces (PORT only); the e2e machine is not shared.
    return ["node", script], dict(base_env, PORT=str(port), GITEA_HOST=gitea_url, GITEA_ACCESS_TOKEN=token)


PEERS = ["gitea-mcp-py", "gitea-mcp-npm"]


# ---------------------------------------------------------------------------
# Asking a server through the MCP SDK
# ---------------------------------------------------------------------------


def tools_json(tools):
    """The tools array as compact JSON, as the client received it."""
    return json.dumps(
        [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def result_texts(result):
    return [item.text for item in result.content if getattr(item, "type", None) == "text"]


async def ask(url, bearer, calls):
    """One MCP session at `url`: tools/list, then each call of `calls`
    ({name: (tool, arguments)}). Returns {name: figures}, with "tools_list"."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    answers = {}
    async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + bearer}, timeout=120) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                listed = tools_json(tools)
                answers["tools_list"] = {
                    "tool": "tools/list",
                    "tools": len(tools),
                    "names": [tool.name for tool in tools],
                    "texts": [listed],
                    "is_error": False,
                }
                for name, (tool, arguments) in calls.items():
                    try:
                        result = await session.call_tool(tool, arguments)
                        texts, is_error = result_texts(result), bool(result.is_error)
                    except Exception as err:  # a peer's crash is a figure, not the bench's failure
                        texts, is_error = ["%s: %s" % (type(err).__name__, err)], True
                    answers[name] = {"tool": tool, "arguments": arguments, "texts": texts, "is_error": is_error}
    return answers


async def ask_review(url, bearer, pull):
    """One MCP session at `url`: `prompts/get review_pull_request` for
    pull request `pull`, then the tool calls a model makes for the same
    facts (review_tool_calls, then the comments of each review the
    reviews' answer shows with comments). Returns {"prompt": {text,
    is_error, messages}, "calls": [{label, tool, operation, arguments,
    texts, is_error}]}."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + bearer}, timeout=120) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                arguments = {"owner": DATA.OWNER, "repo": DATA.REPO, "index": str(pull)}
                try:
                    result = await session.get_prompt(REVIEW_PROMPT, arguments)
                    messages = result.messages
                    texts = [m.content.text for m in messages if getattr(m.content, "type", None) == "text"]
                    one = len(messages) == 1 and messages[0].role == "user" and len(texts) == 1
                    prompt = {"arguments": arguments, "text": "\n".join(texts), "messages": len(messages), "is_error": not one}
                except Exception as err:
                    prompt = {"arguments": arguments, "text": "%s: %s" % (type(err).__name__, err), "messages": 0, "is_error": True}
                calls, planned = [], review_tool_calls(pull)
                while planned:
                    label, tool, tool_arguments, operation = planned.pop(0)
                    try:
                        result = await session.call_tool(tool, tool_arguments)
                        texts, is_error = result_texts(result), bool(result.is_error)
                    except Exception as err:
                        texts, is_error = ["%s: %s" % (type(err).__name__, err)], True
                    calls.append({"label": label, "tool": tool, "operation": operation, "arguments": tool_arguments,
                                  "texts": texts, "is_error": is_error})
                    if operation == "gitea_repo_list_pull_reviews" and not is_error:
                        planned += [review_comment_call(pull, rid) for rid in reviews_with_comments(texts)]
    return {"prompt": prompt, "calls": calls}


def figures(answer):
    size = sum(len(text.encode()) for text in answer["texts"])
    return {"bytes": size, "approx_tokens": round(size / 4)}


# ---------------------------------------------------------------------------
# The gateway and the peers as processes
# ---------------------------------------------------------------------------


def start_gateway(gitea_url, token, bearer, work_dir):
    port = free_port()
    data_dir = os.path.join(work_dir, "gateway-data")
    os.makedirs(data_dir)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RUST_LOG": os.environ.get("RUST_LOG", "warn"),
        "GITEA_URL": gitea_url,
        "GITEA_TOKEN": token,
        "MCP_BEARER_TOKEN": bearer,
        "MCP_HOST": "127.0.0.1",
        "MCP_PORT": str(port),
        "PUBLIC_BASE_URL": "http://127.0.0.1:%d" % port,
        "DATA_DIR": data_dir,
    }
    binary = gateway_binary()
    if not os.path.exists(binary):
        raise RuntimeError("no gateway binary at %s (set AEGIS_BIN)" % binary)
    log = open(os.path.join(work_dir, "gateway.log"), "w")
    process = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data_dir)
    log.close()
    if not wait_for_health(port, process):
        stop_process(process)
        raise RuntimeError("the gateway did not start; log: %s" % os.path.join(work_dir, "gateway.log"))
    return process, "http://127.0.0.1:%d/mcp" % port


def wait_for_health(port, process):
    for _ in range(300):
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return False


def ask_peer(peer, subject, gitea_url, token, work_dir):
    """The peer's answers, or a reason it was skipped (a string)."""
    port = free_port()
    command = peer_command(peer, port, gitea_url, token)
    if command is None:
        return "not installed in %s" % peers_dir()
    argv, env = command
    log = open(os.path.join(work_dir, peer + ".log"), "w")
    process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work_dir, start_new_session=True)
    log.close()
    try:
        if not wait_for_port(port, process):
            return "did not start (log: %s)" % os.path.join(work_dir, peer + ".log")
        return asyncio.run(ask("http://127.0.0.1:%d/mcp" % port, secrets.token_hex(24), peer_calls(peer, subject)))
    finally:
        stop_process(process)


# ---------------------------------------------------------------------------
# Fixtures: capture Gitea's answers, and replay them
# ---------------------------------------------------------------------------


def route_string(path, query):
    route = "GET /api/v1" + path
    if query:
        route += "?" + urllib.parse.urlencode(query)
    return route


def capture_record(path, query, answer, secrets_to_hide):
    """The route, status, body, and the headers a client reads (Content-Type
    and the pagination ones: X-Total-Count, Link, and X-Total, X-HasMore,
    X-Page, X-PageCount, X-PerPage where Gitea sends them)."""
    headers = {name: answer.headers.get(name) for name in ("content-type", "x-total-count", "link")}
    for name in ("x-total", "x-hasmore", "x-page", "x-pagecount", "x-perpage"):
        if answer.headers.get(name) is not None:
            headers[name] = answer.headers.get(name)
    record = {"route": route_string(path, query), "status": answer.status, "headers": headers, "body": answer.body}
    return hide_secrets(record, secrets_to_hide)


def hide_secrets(value, secrets_to_hide):
    """Every known secret in a string replaced with an obviously fake value."""
    if isinstance(value, dict):
        return {k: hide_secrets(v, secrets_to_hide) for k, v in value.items()}
    if isinstance(value, list):
        return [hide_secrets(v, secrets_to_hide) for v in value]
    if isinstance(value, str):
        for secret in secrets_to_hide:
            value = value.replace(secret, "FAKE-SECRET-0000")
    return value


def fixture_secrets(fixture):
    values = [fixture["admin"]["token"], fixture["user"]["token"], fixture["admin"]["password"], fixture["user"]["password"]]
    values += [fixture["oauth"]["client_secret"], fixture["oauth_read"]["client_secret"], fixture["planted_secret"], fixture["actions_secret"]["value"]]
    values.append(fixture["hook"]["authorization_header"])
    return [v for v in values if v and len(v) >= 4]


def write_capture(directory, name, record):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name + ".json"), "w") as f:
        f.write(escape_format_chars(json.dumps(record, indent=2, ensure_ascii=False)) + "\n")


def escape_format_chars(json_text):
    """Format characters as JSON escapes (`\\u202e`, a surrogate pair for a
    tag character): the fixture files hide nothing from a person reading
    them, and load the same."""
    return "".join(json.dumps(c)[1:-1] if is_format_char(c) else c for c in json_text)


def load_captures(directory):
    """{name: record} of every fixture file in `directory`."""
    records = {}
    for file_name in sorted(os.listdir(directory)):
        if file_name.endswith(".json"):
            with open(os.path.join(directory, file_name)) as f:
                record = json.load(f)
            if "route" in record:
                records[file_name[: -len(".json")]] = record
    return records


def split_route(route):
    """"GET /api/v1/x?a=1" -> ("/api/v1/x", {"a": "1"})."""
    target = route.split(" ", 1)[1]
    parsed = urllib.parse.urlsplit(target)
    return urllib.parse.unquote(parsed.path), dict(urllib.parse.parse_qsl(parsed.query))


class ReplayHandler(http.server.BaseHTTPRequestHandler):
    """Serves captured Gitea answers: the fixture with the same path whose
    query shares the most parameters with the request's."""

    records = []  # [(path, query, record)]
    token = ""
    version = {"version": "1.27.1"}

    def do_GET(self):
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        path = urllib.parse.unquote(parsed.path)
        if path == "/api/v1/version":  # public, as in Gitea
            return self.reply(200, self.version)
        if not self.authorized(query):
            return self.reply(401, {"message": "token is required"})
        record = self.best_match(path, query)
        if record is None:
            return self.reply(404, {"message": "not captured: " + path})
        self.reply(record["status"], record["body"], record["headers"])

    def do_POST(self):
        self.reply(405, {"message": "the replay serves GET only"})

    do_PUT = do_PATCH = do_DELETE = do_POST

    def authorized(self, query):
        header = self.headers.get("Authorization", "")
        given = [header[len(p):] for p in ("token ", "Bearer ", "bearer ") if header.startswith(p)]
        given += [query.pop(name) for name in ("access_token", "token") if name in query]
        return self.token in given

    def best_match(self, path, query):
        best, best_score = None, None
        for record_path, record_query, record in self.records:
            if record_path != path:
                continue
            same = sum(1 for k, v in record_query.items() if query.get(k) == v)
            score = (same, -len(record_query))
            if best_score is None or score > best_score:
                best, best_score = record, score
        return best

    def reply(self, status, body, headers=None):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", (headers or {}).get("content-type") or "application/json;charset=utf-8")
        for name, value in (headers or {}).items():
            if value is not None and name != "content-type":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


def start_replay(records, token):
    ReplayHandler.records = [split_route(r["route"]) + (r,) for r in records.values()]
    ReplayHandler.token = token
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), ReplayHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]


def replay_subject(records):
    single = records.get("lt_commit")
    return {
        "issue": records["issue"]["body"]["number"],
        "pull": records["pull_request"]["body"]["number"],
        "hidden_issue": records["issue_hidden_text"]["body"]["number"],
        "head": None,
        "single_commit": single["body"]["sha"] if single else None,
    }


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def upstream_bodies(all_questions, subject, gitea, capture_dir, secrets_to_hide):
    """Gitea's body of each question's route (for its facts), saved as a
    fixture with `capture_dir`, with a few more routes."""
    bodies = {}
    for question in all_questions:
        if question.path is None:
            continue
        answer = gitea.get(question.path, question.query)
        bodies[question.name] = answer.body
        if capture_dir:
            write_capture(capture_dir, question.name, capture_record(question.path, question.query, answer, secrets_to_hide))
    if capture_dir:
        for name, path, query in extra_routes(subject):
            answer = gitea.get(path, query)
            write_capture(capture_dir, name, capture_record(path, query, answer, secrets_to_hide))
        step("captured %d routes in %s" % (len(bodies) + len(extra_routes(subject)), capture_dir))
    return bodies


def check_facts(all_questions, bodies, answers, is_gateway=True, tail=()):
    """{question name: (number of facts, [missing facts])}, None when the
    facts are unknown (no route body; a peer's tools/list)."""
    results = {}
    for question in all_questions:
        if question.name == "tools_list" and is_gateway:
            facts = tools_list_facts(all_questions, tail)
        elif question.name in bodies:
            facts = question.facts(bodies[question.name])
        else:
            results[question.name] = None
            continue
        results[question.name] = missing_facts(facts, answers.get(question.name))
    return results


def missing_facts(facts, answer):
    if answer is None:
        return len(facts), facts
    text = answer_text(answer["texts"])
    return len(facts), [fact for fact in facts if not fact_found(text, fact[1])]


def prepare_replay(directory):
    """A replay server for the fixtures of `directory`: (server, its URL, its
    token, the subject, Gitea's body of each route)."""
    records = load_captures(directory)
    token = "replay-" + secrets.token_hex(20)
    server, gitea_url = start_replay(records, token)
    bodies = {name: record["body"] for name, record in records.items()}
    step("replaying %d fixtures of %s at %s" % (len(records), directory, gitea_url))
    return server, gitea_url, token, replay_subject(records), bodies


def prepare_gitea(capture_dir):
    """The real Gitea, seeded: (its URL, the admin's token, the subject,
    Gitea's body of each route, captured into `capture_dir` if given, and
    its answers for the review's facts)."""
    fixture = load_fixture()
    gitea_url, token = fixture["gitea_url"].rstrip("/"), fixture["admin"]["token"]
    subject = seed(fixture)
    gitea = Gitea(fixture["api_url"], token)
    routes = questions(subject) + long_tail(subject)
    bodies = upstream_bodies(routes, subject, gitea, capture_dir, fixture_secrets(fixture))
    return gitea_url, token, subject, bodies, review_upstream(gitea, subject["pull"])


def run(args, work_dir):
    bearer = secrets.token_urlsafe(36)  # 48 characters
    replay_server = None
    if args.replay:
        replay_server, gitea_url, token, subject, bodies = prepare_replay(args.replay)
        # The diff (text, not JSON) and the reviews are not captured.
        review = "replay: the diff and the reviews are not captured; runs against the real Gitea only"
    else:
        gitea_url, token, subject, bodies, review_source = prepare_gitea(args.capture)
    all_questions = questions(subject)
    tail = long_tail(subject)
    # A replay runs every search (the catalog needs no Gitea) but only the
    # calls whose route was captured.
    uncaptured = [t.name for t in tail if t.name not in bodies]
    if uncaptured:
        step("long tail: %d routes not captured, searches only: %s" % (len(uncaptured), ", ".join(uncaptured)))
    try:
        gateway, url = start_gateway(gitea_url, token, bearer, work_dir)
        try:
            calls = {qn.name: (qn.tool, qn.arguments) for qn in all_questions if qn.tool != "tools/list"}
            for question in tail:
                asked = question.calls()
                if question.name not in bodies:
                    del asked[question.name]
                calls.update(asked)
            gateway_answers = asyncio.run(ask(url, bearer, calls))
            if not args.replay:
                review = {"upstream": review_source, "answers": asyncio.run(ask_review(url, bearer, subject["pull"]))}
        finally:
            stop_process(gateway)
        step("gateway %s: %d questions asked, %d of the long tail" % (gateway_binary(), len(all_questions) + len(tail), len(tail)))
        if not isinstance(review, str):
            step("review of pull request #%d: prompts/get %s, then %d tool calls" % (
                subject["pull"], REVIEW_PROMPT, len(review["answers"]["calls"])))
        peers = {}
        for peer in [] if args.no_peers else PEERS:
            if args.replay:
                # Their routes differ from the gateway's and are not all captured.
                peers[peer] = "replay: runs against the real Gitea only"
            else:
                peers[peer] = ask_peer(peer, subject, gitea_url, token, work_dir)
            step("%s: %s" % (peer, peers[peer] if isinstance(peers[peer], str) else "asked"))
    finally:
        if replay_server:
            replay_server.shutdown()
    checked = check_facts(all_questions, bodies, gateway_answers, tail=tail)
    checked.update(check_facts([t for t in tail if t.name in bodies], bodies, gateway_answers))
    peer_checked = {
        peer: check_facts(all_questions, bodies, answers, is_gateway=False)
        for peer, answers in peers.items()
        if not isinstance(answers, str)
    }
    return all_questions, tail, gateway_answers, checked, peers, peer_checked, review


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------


def n(value):
    return "{:,}".format(value)


def peer_cell(peers, peer, name):
    answers = peers[peer]
    if isinstance(answers, str):
        return "skipped"
    if name not in answers:
        return "no tool"
    cell = n(figures(answers[name])["bytes"])
    if name == "tools_list":
        cell += " (%d tools)" % answers[name]["tools"]
    return cell + (" (error)" if answers[name]["is_error"] else "")


def facts_cell(result):
    if result is None:
        return "n/a"
    total, missing = result
    return "%d/%d" % (total - len(missing), total)


def markdown(mode, all_questions, gateway_answers, checked, peers, peer_checked):
    peer_names = list(peers)
    lines = ["## Context per question (%s, gateway %s)" % (mode, gateway_binary()), ""]
    header = ["question", "tool", "bytes", "~tokens", "facts"] + ["%s bytes" % p for p in peer_names]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---"] + ["---:"] * (len(header) - 2)) + "|"]
    total = 0
    for question in all_questions:
        answer = gateway_answers[question.name]
        size = figures(answer)
        bytes_cell = n(size["bytes"])
        if question.name == "tools_list":
            bytes_cell += " (%d tools)" % answer["tools"]
        else:
            total += size["bytes"]
        if answer["is_error"]:
            bytes_cell += " (error)"
        row = [question.ask, "`%s`" % question.tool, bytes_cell, n(size["approx_tokens"]), facts_cell(checked[question.name])]
        row += [peer_cell(peers, p, question.name) for p in peer_names]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| all %d tool calls | | %s | %s | | %s |" % (
        len(all_questions) - 1, n(total), n(round(total / 4)), " | ".join("" for _ in peer_names)))
    lines += ["", *missing_lines("gateway", {q.name: checked[q.name] for q in all_questions})]
    lines.append(hidden_text_line(gateway_answers, peers))
    for peer in peer_names:
        if isinstance(peers[peer], str):
            lines.append("- %s: skipped (%s)" % (peer, peers[peer]))
        else:
            lines += peer_lines(peer, peers[peer], peer_checked[peer])
    return "\n".join(lines) + "\n"


def long_tail_results(tail, gateway_answers, checked):
    """Per long-tail question: its search and its call, their bytes, where
    the search put the expected operation, the facts, and what failed."""
    results = []
    for question in tail:
        search, answer = gateway_answers[question.search_name], gateway_answers.get(question.name)
        rank, call_with, names = search_rank(search, question.operation)
        search_bytes = figures(search)["bytes"]
        # None: a replay without this route (the search only).
        answer_bytes = figures(answer)["bytes"] if answer else None
        entry = {
            "name": question.name,
            "question": question.ask,
            "search_query": question.search,
            "operation": question.operation,
            "tool": question.tool,
            "arguments": question.arguments,
            "route": route_string(question.path, question.query),
            "search_bytes": search_bytes,
            "answer_bytes": answer_bytes,
            "bytes": search_bytes + (answer_bytes or 0),
            "approx_tokens": round((search_bytes + (answer_bytes or 0)) / 4),
            "rank": rank,
            "first": rank == 1,
            "top_3": rank is not None and rank <= 3,
            "search_found": names,
            "call_with": call_with,
            "search_is_error": search["is_error"],
            "is_error": bool(answer and answer["is_error"]),
            "raw_hidden_characters": raw_hidden(answer) if answer else None,
        }
        entry.update(fact_figures(checked.get(question.name)))
        failures = []
        if search["is_error"] or not names:
            failures.append("the search failed or found nothing")
        if rank is None:
            failures.append("%s not in the default search results" % question.operation)
        elif call_with != question.tool:
            failures.append("the search says call_with %s, not %s" % (call_with, question.tool))
        if answer and answer["is_error"]:
            failures.append("the call failed")
        if entry["facts_missing"]:
            failures.append("%d facts missing" % len(entry["facts_missing"]))
        entry["failures"] = failures
        results.append(entry)
    return results


def long_tail_totals(results):
    count = len(results)
    searches = [r["search_bytes"] for r in results]
    totals = {
        "questions": count,
        "search_bytes": sum(searches),
        "answer_bytes": sum(r["answer_bytes"] or 0 for r in results),
        "answers": sum(1 for r in results if r["answer_bytes"] is not None),
        "first": sum(1 for r in results if r["first"]),
        "top_3": sum(1 for r in results if r["top_3"]),
        "missing": sum(1 for r in results if r["rank"] is None),
        "average_search_bytes": round(sum(searches) / count) if count else None,
        "min_search_bytes": min(searches) if count else None,
        "max_search_bytes": max(searches) if count else None,
        "failed": sum(1 for r in results if r["failures"]),
    }
    totals["bytes"] = totals["search_bytes"] + totals["answer_bytes"]
    totals["approx_tokens"] = round(totals["bytes"] / 4)
    return totals


def long_tail_markdown(mode, results, totals):
    lines = ["", "## The long tail: a search, then a call tool (%s)" % mode, ""]
    lines += [
        "| question | search query | operation | rank | search bytes | answer bytes | bytes | ~tokens | facts |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r["answer_bytes"] is None:
            answer = "not captured"
        else:
            answer = n(r["answer_bytes"]) + (" (error)" if r["is_error"] else "")
        row = [r["question"], '"%s"' % r["search_query"], "`%s`" % r["operation"], rank_cell(r["rank"])]
        row += [n(r["search_bytes"]), answer, n(r["bytes"]), n(r["approx_tokens"])]
        row.append("n/a" if r["facts"] is None else "%d/%d" % (r["facts"] - len(r["facts_missing"]), r["facts"]))
        lines.append("| " + " | ".join(row) + " |")
    answered = "answers" if totals["answers"] == totals["questions"] else "%d answers captured" % totals["answers"]
    lines.append(
        "| all %d long-tail questions (searches + %s) | | | first %d, top 3 %d | %s | %s | %s | %s | |"
        % (totals["questions"], answered, totals["first"], totals["top_3"], n(totals["search_bytes"]),
           n(totals["answer_bytes"]), n(totals["bytes"]), n(totals["approx_tokens"]))
    )
    lines.append("")
    lines.append(
        "- long tail: a default search answer is %s bytes on average (%s to %s); the expected operation is first "
        "for %d of %d, in the top 3 for %d, missing from %d"
        % (n(totals["average_search_bytes"]), n(totals["min_search_bytes"]), n(totals["max_search_bytes"]),
           totals["first"], totals["questions"], totals["top_3"], totals["missing"])
    )
    for r in results:
        if r["failures"]:
            detail = "; ".join(r["failures"])
            if r["facts_missing"]:
                shown = ", ".join("%s %r" % (what, value) for what, value in r["facts_missing"][:6])
                detail += " (%s)" % shown
            if r["rank"] is None:
                detail += " (found: %s)" % ", ".join(r["search_found"])
            lines.append("- long tail, %s: %s" % (r["name"], detail))
    if not totals["failed"]:
        facts = "every fact found" if totals["answers"] else "no answer captured, no fact checked"
        lines.append("- long tail: every expected operation found, %s" % facts)
    return "\n".join(lines) + "\n"


def review_part_key(operation, heading=None, arguments=None):
    """Which read a prompt part or a tool call is: the operation, and the
    review for a review's comments."""
    review = None
    if heading:
        match = re.search(r"review (\d+)$", heading)
        review = int(match.group(1)) if match else None
    elif arguments:
        review = (arguments.get("arguments") or {}).get("id")
    return operation, review


def review_results(review, average_search_bytes=None):
    """The review figures: the prompt's one message against the tool calls'
    results, part by part, and the facts found in each (None: skipped)."""
    if isinstance(review, str):
        return {"skipped": review}
    answers, upstream = review["answers"], review["upstream"]
    prompt, calls = answers["prompt"], answers["calls"]
    facts = facts_review(upstream)
    prompt_check = missing_facts(facts, {"texts": [prompt["text"]]})
    tools_check = missing_facts(facts, {"texts": [t for call in calls for t in call["texts"]]})
    prompt_bytes = len(prompt["text"].encode())
    tool_calls = []
    for call in calls:
        entry = {k: call[k] for k in ("label", "tool", "operation", "arguments", "is_error")}
        entry.update(figures(call))
        tool_calls.append(entry)
    tools_bytes = sum(c["bytes"] for c in tool_calls)
    sections = [{"heading": h, "operation": o, "bytes": b} for h, o, b in prompt_sections(prompt["text"])]
    result = {
        "prompt": REVIEW_PROMPT,
        "pull": upstream["pull"]["number"],
        "arguments": prompt["arguments"],
        "prompt_bytes": prompt_bytes,
        "prompt_approx_tokens": round(prompt_bytes / 4),
        "prompt_messages": prompt["messages"],
        "prompt_is_error": prompt["is_error"],
        "prompt_cut": "(cut at the gateway's bounds)" in prompt["text"],
        "prompt_sections": sections,
        "tool_calls": tool_calls,
        "calls": len(tool_calls),
        "operations_not_listed": len({c["operation"] for c in tool_calls if c["tool"] == CALL_READ_TOOL}),
        "tools_bytes": tools_bytes,
        "tools_approx_tokens": round(tools_bytes / 4),
        "tools_cut": any(envelope_truncated(c["texts"]) for c in calls),
        "saved_bytes": tools_bytes - prompt_bytes,
        "prompt_share": round(prompt_bytes / tools_bytes, 3) if tools_bytes else None,
        "average_search_bytes": average_search_bytes,
        "facts": len(facts),
        "prompt_facts_missing": [list(f) for f in prompt_check[1]],
        "tools_facts_missing": [list(f) for f in tools_check[1]],
    }
    failures = []
    if prompt["is_error"]:
        failures.append("the prompt failed: %s" % prompt["text"][:200])
    failures += ["the call %s (%s) failed" % (c["label"], c["operation"]) for c in tool_calls if c["is_error"]]
    for who, missing in (("the prompt", prompt_check[1]), ("the tools", tools_check[1])):
        if missing:
            shown = ", ".join("%s %r" % (what, value) for what, value in missing[:6])
            failures.append("%d facts missing from %s (%s)" % (len(missing), who, shown))
    result["failures"] = failures
    return result


def envelope_truncated(texts):
    """Whether a call's envelope (its first text item) says it was cut."""
    try:
        return json.loads(texts[0]).get("truncated") is True
    except (ValueError, IndexError, AttributeError):
        return False


def review_markdown(mode, r):
    lines = ["", "## Review a pull request: the prompt or the tools (%s)" % mode, ""]
    if "skipped" in r:
        return "\n".join(lines + ["- review: skipped (%s)" % r["skipped"]]) + "\n"
    lines += [
        "| part | operation | by tools: bytes | by the prompt: bytes |",
        "|---|---|---:|---:|",
    ]
    sections = {review_part_key(s["operation"], s["heading"]): s for s in r["prompt_sections"] if s["operation"]}
    preamble = sum(s["bytes"] for s in r["prompt_sections"] if not s["operation"])
    lines.append("| the task and the untrusted notice | | | %s |" % n(preamble))
    seen = set()
    for call in r["tool_calls"]:
        key = review_part_key(call["operation"], arguments=call["arguments"])
        seen.add(key)
        operation = "`%s`" % call["operation"]
        if call["tool"] != call["operation"]:
            operation += " (by `%s`)" % call["tool"]
        section = sections.get(key)
        cell = n(call["bytes"]) + (" (error)" if call["is_error"] else "")
        lines.append("| %s | %s | %s | %s |" % (call["label"], operation, cell, n(section["bytes"]) if section else "not read"))
    for key, section in sections.items():
        if key not in seen:
            lines.append("| %s | `%s` | not called | %s |" % (section["heading"], section["operation"], n(section["bytes"])))
    prompt_cell = n(r["prompt_bytes"]) + (" (error)" if r["prompt_is_error"] else "")
    lines.append("| review pull request #%d | %d tool calls, or `prompts/get %s` | %s | %s |" % (
        r["pull"], r["calls"], r["prompt"], n(r["tools_bytes"]), prompt_cell))
    lines.append("| ~tokens | | %s | %s |" % (n(r["tools_approx_tokens"]), n(r["prompt_approx_tokens"])))
    facts = r["facts"]
    lines.append("| facts (title, description, files, diff lines, reviews) | | %d/%d | %d/%d |" % (
        facts - len(r["tools_facts_missing"]), facts, facts - len(r["prompt_facts_missing"]), facts))
    lines.append("")
    share = "%.0f %%" % (100 * r["prompt_share"]) if r["prompt_share"] is not None else "n/a"
    lines.append(
        "- review: the prompt's one message is %s bytes, %s of the %s bytes the %d tool calls return (%s bytes fewer)"
        % (n(r["prompt_bytes"]), share, n(r["tools_bytes"]), r["calls"], n(r["saved_bytes"]))
    )
    searches = ""
    if r["average_search_bytes"]:
        searches = " (a default search answer: %s bytes on average, in the long tail above)" % n(r["average_search_bytes"])
    lines.append(
        "- review: the tools' figure leaves out `tools/list` and the searches that find the %d operations not listed "
        "at /mcp%s; the prompt's leaves out `prompts/list`" % (r["operations_not_listed"], searches)
    )
    if r["prompt_cut"] or r["tools_cut"]:
        lines.append("- review: cut at the gateway's bounds: the prompt %s, the tools %s" % (r["prompt_cut"], r["tools_cut"]))
    for failure in r["failures"]:
        lines.append("- review: %s" % failure)
    if not r["failures"]:
        lines.append("- review: every fact found in both (%d)" % facts)
    return "\n".join(lines) + "\n"


def raw_hidden(answer):
    """Raw hidden characters (RAW_HIDDEN) in an answer: in its text as
    sent, and once its JSON escapes (`\\u202e`) are decoded."""
    sent = sum(len(RAW_HIDDEN.findall(text)) for text in answer["texts"])
    return {"as_sent": sent, "decoded": len(RAW_HIDDEN.findall(answer_text(answer["texts"])))}


def hidden_text_line(gateway_answers, peers):
    """How many hidden characters each server passed through raw in its
    answer to "Does an issue hide text?" (a comparison, not a fact)."""
    cells = ["gateway %s" % raw_hidden_cell(gateway_answers["issue_hidden_text"])]
    for peer, answers in peers.items():
        if not isinstance(answers, str) and "issue_hidden_text" in answers:
            cells.append("%s %s" % (peer, raw_hidden_cell(answers["issue_hidden_text"])))
    return "- hidden text (%d format characters planted), raw in the answer: %s" % (DATA.HIDDEN_COUNT, "; ".join(cells))


def raw_hidden_cell(answer):
    counts = raw_hidden(answer)
    if counts["as_sent"] == counts["decoded"]:
        return str(counts["as_sent"])
    return "%d as sent, %d once its JSON escapes are decoded" % (counts["as_sent"], counts["decoded"])


def missing_lines(who, checked, quiet=False):
    lines = []
    for name, result in checked.items():
        if result and result[1]:
            shown = ", ".join("%s %r" % (what, value) for what, value in result[1][:6])
            more = " and %d more" % (len(result[1]) - 6) if len(result[1]) > 6 else ""
            lines.append("- %s, %s: missing %s%s" % (who, name, shown, more))
    if not lines and not quiet:
        lines.append("- %s: every fact found" % who)
    return lines


def peer_lines(peer, answers, checked):
    tools = ", ".join("%s=`%s`" % (name, a["tool"]) for name, a in answers.items() if name != "tools_list")
    asked = [name for name in answers if name != "tools_list"]
    found = sum(1 for name in asked if checked[name] and not checked[name][1])
    lines = ["- %s tools: %s; %d of %d answers have every fact" % (peer, tools, found, len(asked))]
    return lines + missing_lines(peer, {name: checked[name] for name in asked}, quiet=True)


def json_report(mode, all_questions, gateway_answers, checked, peers, peer_checked, tail_results, review_result):
    report = {"mode": mode, "gateway": gateway_binary(), "repository": "%s/%s" % (DATA.OWNER, DATA.REPO), "questions": []}
    for question in all_questions:
        answer = gateway_answers[question.name]
        entry = {"name": question.name, "question": question.ask, "tool": question.tool, "arguments": question.arguments}
        entry.update(figures(answer))
        entry["is_error"] = answer["is_error"]
        entry["raw_hidden_characters"] = raw_hidden(answer)
        if question.name == "tools_list":
            entry["tools"] = answer["tools"]
        entry.update(fact_figures(checked[question.name]))
        entry["peers"] = {p: peer_entry(peers[p], peer_checked.get(p), question.name) for p in peers}
        report["questions"].append(entry)
    calls = [e for e in report["questions"] if e["name"] != "tools_list"]
    report["total_call_bytes"] = sum(e["bytes"] for e in calls)
    report["long_tail"] = tail_results
    report["long_tail_totals"] = long_tail_totals(tail_results)
    report["total_bytes_with_long_tail"] = report["total_call_bytes"] + report["long_tail_totals"]["bytes"]
    report["review_pull_request"] = review_result
    # Every fact of every question, the long tail's and the review's included.
    report["missing_facts"] = sum(len(e["facts_missing"]) for e in report["questions"] + tail_results)
    report["missing_facts"] += len(review_result.get("prompt_facts_missing", []))
    report["missing_facts"] += len(review_result.get("tools_facts_missing", []))
    report["peers_skipped"] = {p: a for p, a in peers.items() if isinstance(a, str)}
    return report


def fact_figures(result):
    if result is None:
        return {"facts": None, "facts_missing": []}
    missing = [[what, repr(value) if isinstance(value, Check) else value] for what, value in result[1]]
    return {"facts": result[0], "facts_missing": missing}


def peer_entry(answers, checked, name):
    if isinstance(answers, str) or name not in answers:
        return None
    answer = answers[name]
    entry = {"tool": answer["tool"], "is_error": answer["is_error"]}
    entry.update(figures(answer))
    entry["raw_hidden_characters"] = raw_hidden(answer)
    if name == "tools_list":
        entry["tools"] = answer["tools"]
    entry.update(fact_figures(checked.get(name)))
    return entry


def save_answers(directory, answers, review):
    os.makedirs(directory, exist_ok=True)
    for name, answer in answers.items():
        with open(os.path.join(directory, name + ".txt"), "w") as f:
            f.write("\n".join(answer["texts"]) + "\n")
    if not isinstance(review, str):
        with open(os.path.join(directory, "review_prompt.txt"), "w") as f:
            f.write(review["answers"]["prompt"]["text"] + "\n")
        with open(os.path.join(directory, "review_tools.txt"), "w") as f:
            f.write("\n".join(t for call in review["answers"]["calls"] for t in call["texts"]) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="write every figure as JSON to PATH")
    parser.add_argument("--no-fail", action="store_true", help="report missing facts, exit 0")
    parser.add_argument("--capture", metavar="DIR", help="save Gitea's answer of each route as DIR/<name>.json")
    parser.add_argument("--replay", metavar="DIR", help="no Gitea: replay the fixtures of DIR")
    parser.add_argument("--no-peers", action="store_true", help="do not ask the peer servers")
    parser.add_argument("--save-answers", metavar="DIR", help="write the gateway's answer texts as DIR/<name>.txt")
    args = parser.parse_args()
    if args.capture and args.replay:
        parser.error("--capture needs the real Gitea: not with --replay")
    mode = "replay of %s" % args.replay if args.replay else "real Gitea"
    work_dir = tempfile.mkdtemp(prefix="context-bench-")
    try:
        all_questions, tail, answers, checked, peers, peer_checked, review = run(args, work_dir)
    except Exception as err:
        traceback.print_exc()
        step("could not run: %s (logs in %s)" % (err, work_dir))
        return 2
    tail_results = long_tail_results(tail, answers, checked)
    tail_totals = long_tail_totals(tail_results)
    review_result = review_results(review, tail_totals["average_search_bytes"])
    sys.stdout.write(markdown(mode, all_questions, answers, checked, peers, peer_checked))
    sys.stdout.write(long_tail_markdown(mode, tail_results, tail_totals))
    sys.stdout.write(review_markdown(mode, review_result))
    report = json_report(mode, all_questions, answers, checked, peers, peer_checked, tail_results, review_result)
    if args.save_answers:
        save_answers(args.save_answers, answers, review)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, ensure_ascii=False)
            f.write("\n")
    failed = report["missing_facts"] or any(e["is_error"] for e in report["questions"])
    failed = failed or any(r["failures"] for r in tail_results)
    failed = failed or bool(review_result.get("failures"))
    shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
