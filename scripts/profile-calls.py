#!/usr/bin/env python3
"""What one tools/call costs a server: counted, and timed by sampling.

The machines here have no hardware perf events (no instruction or cycle
counters), but the kernel's software clock samples (`cpu-clock`) work, so
(docs/benchmarks.md, "Where a call's work goes"):

  callgrind   instructions per call, in total and per function (inclusive);
              with --callers F, the calls to F by caller
  dhat        heap allocations and bytes allocated per call
  strace      system calls per call, by name
  perf        CPU time per call, user and kernel, by function (self time):
              `perf record -e cpu-clock` on the server, pinned to one core,
              while wrk keeps --concurrency calls in flight for --seconds
              against nginx as Gitea (on the other core), as ../shared/perf

The counts are taken twice, after SMALL and after LARGE sequential calls of
`gitea_user_get_current` over one keep-alive connection, and the difference
is divided by LARGE - SMALL: start-up, warm-up and shutdown cancel out.
The upstream is a small Python server answering `GET /api/v1/user` (its
own work is not counted: it is another process).

    scripts/profile-calls.py callgrind target/release/aegis-gitea-mcp
    scripts/profile-calls.py dhat target/perf-floor/release/floor-rmcp
    scripts/profile-calls.py strace target/release/aegis-gitea-mcp --settings AUDIT_SYNC=off
    scripts/profile-calls.py perf target/release/aegis-gitea-mcp --concurrency 8 --seconds 10

A binary whose name starts with `floor-` gets the floor servers' settings
(`../shared/perf/floor/`); any other is run as `serve` with the gateway's.
"""

import argparse
import http.client
import http.server
import json
import os
import re
import shutil
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
    # The head and the body in one write, sent at once: unbuffered, the
    # body waited for the head's ACK (Nagle against delayed ACK, 40 ms).
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True

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


def clock_ticks(pid):
    """User and system CPU of a process so far, in clock ticks."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


NGINX_CONF = """
daemon off; worker_processes 1; pid {dir}/nginx.pid; error_log {dir}/nginx.err;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  server {{
    listen 127.0.0.1:{port};
    location /api/v1/user {{ default_type application/json; return 200 '{user}'; }}
    location /api/v1/version {{ default_type application/json; return 200 '{{"version":"1.27.1"}}'; }}
  }}
}}
"""

WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = [[{body}]]
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2025-11-25"
wrk.headers["authorization"] = "Bearer {bearer}"
"""


def run_perf(binary, opts, extra, workdir):
    """CPU time per call by function, under the side-by-side harness's load:
    nginx as Gitea and wrk as the clients on one core, the server pinned to
    another and sampled by the kernel's clock (`perf record -e cpu-clock`)."""
    for tool in ("nginx", "wrk", "perf", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"perf mode needs {tool} (../shared/perf/install.sh installs nginx and wrk)")
    load_cpu = str(1 - opts.cpu)
    upstream_port = free_port()
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=workdir, port=upstream_port, user=json.dumps(USER)))
    nginx = subprocess.Popen(["taskset", "-c", load_cpu, "nginx", "-c", conf, "-p", workdir],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    script = os.path.join(workdir, "call.lua")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "gitea_user_get_current", "arguments": {}}})
    with open(script, "w") as f:
        f.write(WRK_SCRIPT.format(body=body, bearer=BEARER))
    port = free_port()
    data_dir = tempfile.mkdtemp(dir=workdir)
    args, env = server_command(binary, port, f"http://127.0.0.1:{upstream_port}", data_dir, extra)
    out = os.path.join(workdir, "perf.data")
    proc = subprocess.Popen(["taskset", "-c", str(opts.cpu)] + args, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/mcp"

    def wrk(seconds):
        result = subprocess.run(["taskset", "-c", load_cpu, "wrk", "-t", "2",
                                 "-c", str(opts.concurrency), "-d", f"{seconds}s",
                                 "-s", script, url], capture_output=True, text=True, check=True)
        requests = int(re.search(r"(\d+) requests in", result.stdout).group(1))
        if "Non-2xx" in result.stdout or "Socket errors" in result.stdout:
            sys.exit(f"the load had errors:\n{result.stdout}")
        return requests

    try:
        wait_listening(port)
        wrk(2)
        record = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(opts.frequency),
                  "-p", str(proc.pid), "-o", out]
        if opts.call_graph:
            record[2:2] = ["--call-graph", opts.call_graph]
        perf = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        user0, sys0 = clock_ticks(proc.pid)
        made = wrk(opts.seconds)
        user1, sys1 = clock_ticks(proc.pid)
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=120)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=300)
        os.killpg(nginx.pid, signal.SIGTERM)
        nginx.wait(timeout=30)
    tick = os.sysconf("SC_CLK_TCK")
    user_us = (user1 - user0) / tick / made * 1e6
    sys_us = (sys1 - sys0) / tick / made * 1e6
    print(f"{os.path.basename(binary)}, perf, {made} calls from {opts.concurrency} connections "
          f"in {opts.seconds} s ({made / opts.seconds:,.0f}/s), server on CPU {opts.cpu}")
    print(f"CPU per call: {user_us + sys_us:.1f} us (user {user_us:.1f}, kernel {sys_us:.1f})")
    report = subprocess.run(["perf", "report", "-i", out, "--stdio", "--no-children",
                             "--sort", opts.sort, "--percent-limit", "0.3"],
                            capture_output=True, text=True, check=True).stdout
    print(f"by {opts.sort} (self time; us per call = share x CPU per call):")
    shown = 0
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.*)$", line)
        if m and shown < opts.top:
            share = float(m.group(1))
            print(f"{share:6.2f}%  {share / 100 * (user_us + sys_us):7.2f} us  {m.group(2)[:150]}")
            shown += 1
    return out


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
    parser.add_argument("mode", choices=["callgrind", "dhat", "strace", "perf"])
    parser.add_argument("binary")
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=250)
    parser.add_argument("--top", type=int, default=40, help="functions shown (callgrind)")
    parser.add_argument("--settings", nargs="*", default=[], help="NAME=value for the server")
    parser.add_argument("--callers", metavar="FUNCTION",
                        help="callgrind: also the instructions of the calls to FUNCTION, by caller")
    parser.add_argument("--concurrency", type=int, default=8, help="perf: connections at once")
    parser.add_argument("--seconds", type=int, default=10, help="perf: how long the load runs")
    parser.add_argument("--cpu", type=int, default=0, help="perf: the core the server runs on")
    parser.add_argument("--frequency", type=int, default=10000, help="perf: samples per second")
    parser.add_argument("--sort", default="dso,sym", help="perf: perf report's --sort")
    parser.add_argument("--call-graph", help="perf: perf record's --call-graph (e.g. dwarf)")
    opts = parser.parse_args()
    extra = dict(pair.split("=", 1) for pair in opts.settings)
    workdir = tempfile.mkdtemp(prefix="profile-calls-")
    if opts.mode == "perf":
        out = run_perf(opts.binary, opts, extra, workdir)
        print(f"(perf report -i {out})")
        return
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
