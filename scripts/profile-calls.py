#!/usr/bin/env python3
"""What one tools/call costs a server, counted rather than timed.

The machines here have no perf events, so this counts with tools that do
not need them (docs/benchmarks.md, "Where a call's work goes"):

  callgrind   instructions per call, in total and per function (inclusive);
              with --callers F, the calls to F by caller
  dhat        heap allocations and bytes allocated per call
  strace      system calls per call, by name

Each count is taken twice, after SMALL and after LARGE sequential calls of
`gitea_user_get_current` over one keep-alive connection, and the difference
is divided by LARGE - SMALL: start-up, warm-up and shutdown cancel out.
The upstream is a small Python server answering `GET /api/v1/user` (its
own work is not counted: it is another process).

    scripts/profile-calls.py callgrind target/release/aegis-gitea-mcp
    scripts/profile-calls.py dhat target/perf-floor/release/floor-rmcp
    scripts/profile-calls.py strace target/release/aegis-gitea-mcp --settings AUDIT_SYNC=off

A binary whose name starts with `floor-` gets the floor servers' settings
(`../shared/perf/floor/`); any other is run as `serve` with the gateway's.
"""

import argparse
import http.client
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BEARER = "profile-bearer-0123456789abcdef-0123456789"
GITEA_TOKEN = "profile-gitea-token-0123456789abcdef"
USER = {"id": 1, "login": "root", "full_name": "", "email": "root@example.com",
        "is_admin": True, "username": "root"}


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path.startswith("/api/v1/user"):
            body = json.dumps(USER).encode()
        elif self.path.startswith("/api/v1/version"):
            body = b'{"version":"1.27.1"}'
        else:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(binary, port, upstream, data_dir, extra):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GITEA_URL": upstream,
        "GITEA_TOKEN": GITEA_TOKEN,
        "MCP_BEARER_TOKEN": BEARER,
        "PORT": str(port),
        "MCP_PORT": str(port),
        "MCP_HOST": "127.0.0.1",
        "DATA_DIR": data_dir,
        "AUDIT_HMAC_KEY": "profile-audit-key-0123456789abcdef0123",
        "RUST_LOG": "warn",
        "RATE_LIMIT_PER_IP": "1000000",
        "RATE_LIMIT_PER_TOKEN": "1000000",
    }
    env.update(extra)
    args = [binary] if os.path.basename(binary).startswith("floor-") else [binary, "serve"]
    return args, env


def wait_listening(port, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"the server did not listen on {port}")


def calls(port, count):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "gitea_user_get_current", "arguments": {}}})
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25",
               "authorization": f"Bearer {BEARER}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(count):
        conn.request("POST", "/mcp", body, headers)
        response = conn.getresponse()
        text = response.read().decode()
        if response.status != 200 or "root" not in text:
            sys.exit(f"a call failed: {response.status} {text[:300]}")
    conn.close()


def run_once(mode, binary, count, extra, workdir):
    upstream_port = free_port()
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", upstream_port), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    data_dir = tempfile.mkdtemp(dir=workdir)
    args, env = server_command(binary, port, f"http://127.0.0.1:{upstream_port}", data_dir, extra)
    out = os.path.join(workdir, f"{mode}-{count}.out")
    if mode == "callgrind":
        wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    elif mode == "dhat":
        wrap = ["valgrind", "--tool=dhat", f"--dhat-out-file={out}.json", f"--log-file={out}"]
    else:
        wrap = ["strace", "-f", "-c", "-o", out]
    proc = subprocess.Popen(wrap + args, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_listening(port)
        calls(port, count)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=300)
        upstream.shutdown()
    return out


# callgrind_annotate prefixes a function with its file (`???:` when unknown);
# the function's own name has `::` in it, so the prefix ends at the file's.
FILE_PREFIX = r"(?:(?:\?\?\?|\S+\.(?:S|c|h|rs)):)?"


def callgrind_counts(path):
    """Inclusive instructions per function, and the total."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
    per_fn = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+" + FILE_PREFIX + r"(.+?)(?: \[.*\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = m.group(2).strip()
            per_fn[name] = per_fn.get(name, 0) + int(m.group(1).replace(",", ""))
    return total, per_fn


def callgrind_callers(path, function):
    """Instructions of the calls to `function`, by the caller that made them."""
    text = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    target = re.compile(r"\*\s+" + FILE_PREFIX + re.escape(function) + r"(?:'\d+)?(?: \[|$)")
    callers, block = {}, []
    for line in text.splitlines():
        if not line.strip():
            block = []
            continue
        block.append(line)
        if target.search(line):
            for caller in block[:-1]:
                m = re.match(r"\s*([\d,]+) \(.*?\)\s+<\s+" + FILE_PREFIX + r"(.+?) \(\d[\d,]*x\)", caller)
                if m:
                    callers[m.group(2)] = callers.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return callers


def dhat_counts(path):
    text = open(path).read()
    m = re.search(r"Total:\s+([\d,]+) bytes in ([\d,]+) blocks", text)
    return int(m.group(2).replace(",", "")), int(m.group(1).replace(",", ""))


def strace_counts(path):
    counts = {}
    for line in open(path):
        parts = line.split()
        if len(parts) >= 5 and parts[-1] not in ("syscall", "total") and parts[0][0].isdigit():
            calls_field = parts[3] if len(parts) >= 6 else parts[3]
            try:
                counts[parts[-1]] = int(calls_field)
            except ValueError:
                pass
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["callgrind", "dhat", "strace"])
    parser.add_argument("binary")
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=250)
    parser.add_argument("--top", type=int, default=40, help="functions shown (callgrind)")
    parser.add_argument("--settings", nargs="*", default=[], help="NAME=value for the server")
    parser.add_argument("--callers", metavar="FUNCTION",
                        help="callgrind: also the instructions of the calls to FUNCTION, by caller")
    opts = parser.parse_args()
    extra = dict(pair.split("=", 1) for pair in opts.settings)
    workdir = tempfile.mkdtemp(prefix="profile-calls-")
    small = run_once(opts.mode, opts.binary, opts.small, extra, workdir)
    large = run_once(opts.mode, opts.binary, opts.large, extra, workdir)
    n = opts.large - opts.small
    name = os.path.basename(opts.binary)
    print(f"{name}, {opts.mode}, per call ((run of {opts.large}) - (run of {opts.small})) / {n}")
    if opts.mode == "callgrind":
        total_small, fns_small = callgrind_counts(small)
        total_large, fns_large = callgrind_counts(large)
        print(f"instructions per call: {(total_large - total_small) / n:,.0f}")
        rows = sorted(((fns_large.get(f, 0) - fns_small.get(f, 0)) / n, f) for f in fns_large)
        for per_call, fn in reversed(rows[-opts.top:]):
            print(f"{per_call:>12,.0f}  {fn[:160]}")
        if opts.callers:
            small_callers = callgrind_callers(small, opts.callers)
            large_callers = callgrind_callers(large, opts.callers)
            rows = sorted(((large_callers[c] - small_callers.get(c, 0)) / n, c) for c in large_callers)
            print(f"in {opts.callers}, by caller:")
            for per_call, caller in reversed(rows[-opts.top:]):
                if per_call >= 1:
                    print(f"{per_call:>12,.0f}  {caller[:160]}")
    elif opts.mode == "dhat":
        blocks_small, bytes_small = dhat_counts(small)
        blocks_large, bytes_large = dhat_counts(large)
        print(f"allocations per call: {(blocks_large - blocks_small) / n:,.1f}")
        print(f"bytes allocated per call: {(bytes_large - bytes_small) / n:,.0f}")
    else:
        counts_small = strace_counts(small)
        counts_large = strace_counts(large)
        rows = sorted(((counts_large.get(k, 0) - counts_small.get(k, 0)) / n, k) for k in counts_large)
        print(f"system calls per call: {sum(r for r, _ in rows):.2f}")
        for per_call, syscall in reversed(rows):
            if per_call >= 0.01:
                print(f"{per_call:>8.2f}  {syscall}")
    print(f"(raw outputs in {workdir})")


if __name__ == "__main__":
    main()
