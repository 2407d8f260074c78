"""What the replay's big-body attack (issue 53, `R53-B`) stands up besides
the gateway: a repository of the real Gitea holding a big text file and a
directory of many entries (pushed with git over HTTP), a proxy in front of
the real Gitea that answers some paths with a big error body, and the
gateway's peak resident memory.
"""

import http.client
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

import httpx2

from gateway import check, tool_call_request

MIB = 1024 * 1024


def text_of(size):
    """`size` bytes of plain text lines that no secret pattern matches."""
    line = b"line %08d: the quick brown fox jumps over the lazy dog, again and again\n"
    parts, total, n = [], 0, 0
    while total < size:
        piece = line % n
        parts.append(piece)
        total += len(piece)
        n += 1
    return b"".join(parts)[:size]


def pushed_repository(fixture, name, files):
    """Creates the admin's repository `name` and pushes one commit on
    `main` holding `files` ({path: bytes}), with git over HTTP and the
    admin's token; waits until Gitea serves the branch. Returns the owner,
    the name and the commit's sha."""
    admin = fixture["admin"]
    created = httpx2.post(fixture["api_url"].rstrip("/") + "/user/repos", headers={"Authorization": "token " + admin["token"]},
                          json={"name": name, "auto_init": False, "default_branch": "main"}, timeout=60)
    if created.status_code != 201:
        raise AssertionError("the repository %s: %s %s" % (name, created.status_code, created.text[:300]))
    work = tempfile.mkdtemp(prefix="aegis-replay-push-")
    for path, content in files.items():
        full = os.path.join(work, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(content)
    gitea = urllib.parse.urlparse(fixture["gitea_url"])
    remote = "%s://%s:%s@%s/%s/%s.git" % (gitea.scheme, urllib.parse.quote(admin["login"]), admin["token"], gitea.netloc, admin["login"], name)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "replay", "GIT_AUTHOR_EMAIL": "replay@example.com",
           "GIT_COMMITTER_NAME": "replay", "GIT_COMMITTER_EMAIL": "replay@example.com"}
    # No background gc to race the removal; little compression (the file is text).
    config = ["-c", "core.autocrlf=false", "-c", "gc.auto=0", "-c", "core.compression=1"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "replay R53-B"], ["push", "-q", remote, "main"]):
        done = subprocess.run(["git", *config, *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError("git %s: %s" % (args[0], (done.stderr or done.stdout).replace(admin["token"], "…")[-500:]))
    shutil.rmtree(work, ignore_errors=True)
    # Gitea takes the pushed branch in after the push returns.
    branch = "%s/repos/%s/%s/branches/main" % (fixture["api_url"].rstrip("/"), admin["login"], name)
    for _ in range(300):
        found = httpx2.get(branch, headers={"Authorization": "token " + admin["token"]}, timeout=30)
        if found.status_code == 200:
            return admin["login"], name, found.json()["commit"]["id"]
        time.sleep(0.1)
    raise AssertionError("Gitea never served the pushed branch of %s" % name)


def delete_repository(fixture, owner, name):
    httpx2.delete("%s/repos/%s/%s" % (fixture["api_url"].rstrip("/"), owner, name),
                  headers={"Authorization": "token " + fixture["admin"]["token"]}, timeout=60)


def peak_rss_kib(pid):
    """VmHWM of process `pid`, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


# What the proxy answers for the owner `BIG_ERROR_OWNER`: by repository name,
# the status, the content type, the body and whether it says its length
# (1 MiB each, but the last).
BIG_ERROR_OWNER = "replay-r53-big-error"
BIG_ERRORS = {
    "json": (500, "application/json", b'{"message":"' + b"m" * MIB + b'","url":"http://gitea/api/swagger"}', True),
    "text": (502, "text/plain; charset=utf-8", text_of(MIB), True),
    "unsized": (500, "application/json", b'{"message":"' + b"u" * MIB + b'"}', False),
    # Under the 64 KiB read: the message is read, and cut to 500 characters.
    "long-message": (422, "application/json", b'{"message":"' + b"l" * 60_000 + b'"}', True),
}


class ErrorProxy(http.server.ThreadingHTTPServer):
    """A proxy on loopback in front of the real Gitea: it forwards every
    request, but answers `/api/v1/repos/replay-r53-big-error/{kind}` (and
    anything under it) with the error body of `BIG_ERRORS[kind]`.
    The real Gitea never sends such a body; this one stands in for a
    misbehaving Gitea or a proxy's error page."""

    daemon_threads = True

    def __init__(self, gitea_url):
        super().__init__(("127.0.0.1", 0), ErrorProxyHandler)
        self.upstream = urllib.parse.urlparse(gitea_url)
        self.served = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class ErrorProxyHandler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        path = urllib.parse.urlparse(self.path).path
        prefix = "/api/v1/repos/%s/" % BIG_ERROR_OWNER
        if path.startswith(prefix):
            kind = path[len(prefix):].split("/")[0]
            status, content_type, body, sized = BIG_ERRORS[kind]
            self.server.served.append(kind)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if sized:
                self.send_header("Content-Length", str(len(body)))
            else:
                self.close_connection = True
            self.end_headers()
            try:
                for start in range(0, len(body), 65536):
                    self.wfile.write(body[start:start + 65536])
            except OSError:
                pass  # the gateway stopped reading: what the bound is for
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(self.server.upstream.hostname, self.server.upstream.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive", "transfer-encoding")}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = answer  # noqa: N815 (the standard library's names)

    def log_message(self, *args):
        pass


def bounded_answer(mcp_url, bearer, pid, tool, arguments, limit, what, step):
    """A tools/call at `mcp_url`: its one text item must be a JSON envelope
    of at most `limit` characters; prints the gateway's (`pid`) peak RSS
    before and after. The envelope."""
    before = peak_rss_kib(pid)
    began = time.monotonic()
    body, headers = tool_call_request(tool, arguments)
    answer = httpx2.post(mcp_url, content=body, headers={"Authorization": "Bearer " + bearer, **headers}, timeout=120)
    check(answer.status_code == 200, "%s: HTTP %s" % (what, answer.status_code))
    text = answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    item = json.loads(text)["result"]["content"][0]["text"]
    envelope = json.loads(item)  # well-formed, or this raises
    if "error" in envelope:
        shown = "error %s %s, its message %d characters" % (envelope["error"].get("status"), envelope["error"].get("kind"), len(envelope["error"].get("message", "")))
    else:
        shown = "cut %s" % envelope["truncation"] if envelope.get("truncated") else "whole"
    step("%s: %d characters in %.1f s, %s; peak RSS %d -> %d KiB" % (what, len(item), time.monotonic() - began, shown, before, peak_rss_kib(pid)))
    check(len(item) <= limit, "%s: %d characters, over MAX_TOOL_RESPONSE_CHARS" % (what, len(item)))
    return envelope
