#!/usr/bin/env python3
"""Seed a freshly booted e2e Gitea through its REST API and write fixture.json.

Run by `gitea.sh start` on a fresh state dir (it is not idempotent: a second run on the same
state fails on the first "already exists"). Standard library only.

Inputs (env): GITEA_URL, AEGIS_E2E_DIR, AEGIS_E2E_ADMIN_USER, AEGIS_E2E_ADMIN_EMAIL,
AEGIS_E2E_ADMIN_PASSWORD, AEGIS_E2E_ADMIN_TOKEN, GATEWAY_URL (default http://127.0.0.1:8080),
AEGIS_E2E_BOOT_SECONDS (informational).
Output: $AEGIS_E2E_DIR/fixture.json (mode 0600); see tests/e2e/README.md for its keys.
"""

import base64
import json
import os
import secrets
import string
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

GITEA_URL = os.environ["GITEA_URL"].rstrip("/")
API = GITEA_URL + "/api/v1"
STATE = os.environ.get("AEGIS_E2E_DIR", "/tmp/aegis-e2e")
GATEWAY_URL = os.environ.get("GATEWAY_URL", "http://127.0.0.1:8080").rstrip("/")

ADMIN = {
    "login": os.environ["AEGIS_E2E_ADMIN_USER"],
    "email": os.environ.get("AEGIS_E2E_ADMIN_EMAIL", ""),
    "password": os.environ["AEGIS_E2E_ADMIN_PASSWORD"],
    "token": os.environ["AEGIS_E2E_ADMIN_TOKEN"],
}

USER_LOGIN = "alice"
ORG = "aegis-org"
ORG_REPO = "demo"
PRIVATE_REPO = "private-demo"
USER_REPO = "alice-repo"
BRANCH = "feature/x"
TAG = "rel/1.0"
FILE_PATH = "docs/guide/a b.md"
FILE_CONTENT = "# Guide\n\nA file in a nested folder whose name has a space.\n"
BRANCH_FILE_PATH = "feature/notes.md"
SECRET_NAME = "AEGIS_E2E_SECRET"


def q(segment):
    """Percent-encode one path segment (also '/', so 'rel/1.0' -> 'rel%2F1.0')."""
    return urllib.parse.quote(segment, safe="")


def qpath(path):
    """Percent-encode a multi-segment path, keeping the '/' separators."""
    return "/".join(q(p) for p in path.split("/"))


class ApiError(Exception):
    pass


def call(method, path, body=None, token=None, basic=None, expect=(200, 201, 204)):
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "token " + token
    elif basic:
        headers["Authorization"] = "Basic " + base64.b64encode(
            ("%s:%s" % basic).encode()
        ).decode()
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    if status not in expect:
        raise ApiError(
            "%s %s -> HTTP %d: %s" % (method, path, status, raw.decode(errors="replace")[:500])
        )
    return json.loads(raw) if raw.strip() else None


def admin(method, path, body=None, **kw):
    return call(method, path, body, token=ADMIN["token"], **kw)


def step(msg):
    print("[seed] " + msg, file=sys.stderr, flush=True)


def fake_github_token():
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def main():
    t0 = time.monotonic()
    version = call("GET", "/version")["version"]
    step("Gitea %s at %s" % (version, GITEA_URL))

    # --- users -----------------------------------------------------------------------
    user = {
        "login": USER_LOGIN,
        "email": USER_LOGIN + "@example.com",
        "password": "Alice-" + secrets.token_urlsafe(12),
    }
    u = admin(
        "POST",
        "/admin/users",
        {
            "username": user["login"],
            "email": user["email"],
            "password": user["password"],
            "full_name": "Alice E2E",
            "must_change_password": False,
            "send_notify": False,
        },
    )
    user["id"] = u["id"]
    # Token creation needs the user's own password (basic auth), not a token.
    tok = call(
        "POST",
        "/users/%s/tokens" % q(user["login"]),
        {"name": "aegis-e2e-alice", "scopes": ["all"]},
        basic=(user["login"], user["password"]),
    )
    user["token"] = tok["sha1"]
    me = admin("GET", "/user")
    ADMIN["id"] = me["id"]
    step("users: %s (admin), %s" % (ADMIN["login"], user["login"]))

    # --- organization and repositories -------------------------------------------------
    admin("POST", "/orgs", {"username": ORG, "full_name": "Aegis E2E Org", "visibility": "public"})
    repo_opts = {"auto_init": True, "default_branch": "main", "readme": "Default"}
    org_repo = admin(
        "POST",
        "/orgs/%s/repos" % q(ORG),
        dict(repo_opts, name=ORG_REPO, description="Public e2e repository of the org"),
    )
    private_repo = admin(
        "POST",
        "/orgs/%s/repos" % q(ORG),
        dict(repo_opts, name=PRIVATE_REPO, private=True, description="Private; alice has no access"),
    )
    user_repo = call(
        "POST",
        "/user/repos",
        dict(repo_opts, name=USER_REPO, description="alice's own repository"),
        token=user["token"],
    )
    step("repos: %s, %s, %s" % (org_repo["full_name"], private_repo["full_name"], user_repo["full_name"]))

    R = "/repos/%s/%s" % (q(ORG), q(ORG_REPO))

    # --- labels and milestone -------------------------------------------------------------
    labels = [
        admin("POST", R + "/labels", {"name": "bug", "color": "#ee0701", "description": "Something is broken"}),
        admin("POST", R + "/labels", {"name": "enhancement", "color": "#84b6eb"}),
    ]
    milestone = admin("POST", R + "/milestones", {"title": "v1.0", "description": "First milestone"})

    # --- files and branch -----------------------------------------------------------------
    f = admin(
        "POST",
        R + "/contents/" + qpath(FILE_PATH),
        {
            "content": base64.b64encode(FILE_CONTENT.encode()).decode(),
            "message": "Add %s" % FILE_PATH,
            "branch": "main",
        },
    )
    file_sha = f["content"]["sha"]
    admin("POST", R + "/branches", {"new_branch_name": BRANCH, "old_ref_name": "main"})
    admin(
        "POST",
        R + "/contents/" + qpath(BRANCH_FILE_PATH),
        {
            "content": base64.b64encode(b"Work on the feature branch.\n").decode(),
            "message": "Add %s on %s" % (BRANCH_FILE_PATH, BRANCH),
            "branch": BRANCH,
        },
    )
    step("file %r on main, branch %r" % (FILE_PATH, BRANCH))

    # --- issues (one with a planted fake secret), comment, pull request -------------------
    planted = fake_github_token()
    issue = admin(
        "POST",
        R + "/issues",
        {
            "title": "First issue",
            "body": "Something is broken.",
            "labels": [labels[0]["id"]],
            "milestone": milestone["id"],
        },
    )
    secret_issue = admin(
        "POST",
        R + "/issues",
        {
            "title": "Issue that leaks a token",
            "body": "Oops, I pasted my token: %s\nPlease rotate it." % planted,
        },
    )
    comment = admin(
        "POST",
        R + "/issues/%d/comments" % secret_issue["number"],
        {"body": "The same token again in a comment: %s" % planted},
    )
    user_issue = call(
        "POST",
        "/repos/%s/%s/issues" % (q(user["login"]), q(USER_REPO)),
        {"title": "alice's issue", "body": "Filed by alice in her own repo."},
        token=user["token"],
    )
    pr = admin(
        "POST",
        R + "/pulls",
        {
            "title": "Add feature notes",
            "body": "Pull request from `%s`." % BRANCH,
            "head": BRANCH,
            "base": "main",
            "labels": [labels[1]["id"]],
        },
    )
    step("issues #%d #%d, pull #%d" % (issue["number"], secret_issue["number"], pr["number"]))

    # --- release with a '/' in its tag ---------------------------------------------------
    release = admin(
        "POST",
        R + "/releases",
        {
            "tag_name": TAG,
            "target_commitish": "main",
            "name": "Release 1.0",
            "body": "First release.",
        },
    )

    # --- webhook with an authorization header ------------------------------------------
    hook_auth = "Bearer e2e-hook-" + secrets.token_hex(16)
    hook_url = "http://127.0.0.1:9/aegis-e2e-hook"  # discard port: deliveries just fail
    hook = admin(
        "POST",
        R + "/hooks",
        {
            "type": "gitea",
            "config": {"url": hook_url, "content_type": "json", "secret": "hook-" + secrets.token_hex(8)},
            "events": ["push", "issues", "pull_request"],
            "active": True,
            "authorization_header": hook_auth,
        },
    )

    # --- Actions secret ------------------------------------------------------------------
    secret_value = "s3cr3t-" + secrets.token_hex(12)
    admin("PUT", R + "/actions/secrets/" + q(SECRET_NAME), {"data": secret_value, "description": "e2e"})

    # --- OAuth2 applications (confidential, owned by the admin), as `setup` makes them:
    # one for reading and writing sessions, one for reading ones (docs/oauth.md) ---------
    redirect_uri = GATEWAY_URL + "/oauth/callback"

    def oauth_app(name):
        return admin(
            "POST",
            "/user/applications/oauth2",
            {
                "name": name,
                "redirect_uris": [redirect_uri],
                "confidential_client": True,
                "skip_secondary_authorization": False,
            },
        )

    app = oauth_app("aegis-gateway-e2e")
    read_app = oauth_app("aegis-gateway-e2e (read only)")
    step("release %r, hook %d, secret %s, oauth apps %s and %s" % (TAG, hook["id"], SECRET_NAME, app["client_id"], read_app["client_id"]))

    def repo_entry(r):
        return {
            "owner": r["owner"]["login"],
            "name": r["name"],
            "full_name": r["full_name"],
            "id": r["id"],
            "private": r["private"],
            "default_branch": r["default_branch"],
        }

    fixture = {
        "fixture_version": 1,
        "gitea_url": GITEA_URL,
        "api_url": API,
        "version": version,
        "state_dir": STATE,
        "gateway_url": GATEWAY_URL,
        "admin": ADMIN,
        "user": user,
        "org": ORG,
        "repos": {
            "org": repo_entry(org_repo),
            "org_private": repo_entry(private_repo),
            "user": repo_entry(user_repo),
        },
        "repo": repo_entry(org_repo),  # the repository everything below lives in
        "branch": BRANCH,
        "branch_file_path": BRANCH_FILE_PATH,
        "tag": TAG,
        "release_id": release["id"],
        "file_path": FILE_PATH,
        "file_content": FILE_CONTENT,
        "file_sha": file_sha,
        "labels": [{"id": x["id"], "name": x["name"]} for x in labels],
        "milestone": {"id": milestone["id"], "title": milestone["title"]},
        "issue_number": issue["number"],
        "secret_issue_number": secret_issue["number"],
        "secret_comment_id": comment["id"],
        "user_issue_number": user_issue["number"],
        "pr_number": pr["number"],
        "planted_secret": planted,
        "hook": {"id": hook["id"], "url": hook_url, "authorization_header": hook_auth},
        "actions_secret": {"name": SECRET_NAME, "value": secret_value},
        "oauth": {
            "app_id": app["id"],
            "name": app["name"],
            "client_id": app["client_id"],
            "client_secret": app["client_secret"],
            "redirect_uri": redirect_uri,
            "owner": ADMIN["login"],
            "authorize_url": GITEA_URL + "/login/oauth/authorize",
            "token_url": GITEA_URL + "/login/oauth/access_token",
        },
        "oauth_read": {
            "app_id": read_app["id"],
            "name": read_app["name"],
            "client_id": read_app["client_id"],
            "client_secret": read_app["client_secret"],
        },
        "seed_seconds": round(time.monotonic() - t0, 3),
        "boot_seconds": float(os.environ.get("AEGIS_E2E_BOOT_SECONDS") or 0) or None,
    }

    path = os.path.join(STATE, "fixture.json")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(fixture, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    step("wrote %s in %.2f s" % (path, fixture["seed_seconds"]))


if __name__ == "__main__":
    try:
        main()
    except ApiError as e:
        print("[seed] ERROR: %s" % e, file=sys.stderr)
        sys.exit(1)
