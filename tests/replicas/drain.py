#!/usr/bin/env python3
"""A drain under load, with real nginx (or HAProxy) in front of three replicas.

At SIGTERM a gateway that stops accepting and closes its idle kept-alive
connections at once races the balancer: nginx may have just written a
request on one of them, reads "upstream prematurely closed connection",
answers 502 and does not resend the POST (docs/replicas.md, "A drain and
the idle kept-alive connections"). A gateway that first drains (goes on
answering for SHUTDOWN_DRAIN_SECONDS, every HTTP/1 answer with
`Connection: close`, `/health/live` 503) is meant to lose nothing.
This measures it.

Three replicas with default settings behind `nginx.conf.in` (`keepalive
64`; or `haproxy.cfg.in` with `--balancer haproxy`); CLIENTS (64)
coroutines, each on one kept-alive connection to the balancer, POST a
JSON-RPC `ping` to `/mcp` with the static bearer every INTERVAL (0.1 s).
The gateway answers a ping itself: no Gitea (GITEA_URL names a port
nobody listens on) and no database (each replica its own SQLite in its
DATA_DIR), as in keepalive.py. Then TRIALS (12) drains, the replicas in
turn: SIGTERM, the wait for the exit, a restart on the same DATA_DIR and
port, the wait for `/health/live`, and the next SIGTERM PERIOD (7)
seconds after this one, plus up to one INTERVAL at random (QUIET, 1 s,
after the restart at least). A trial has the requests started from just
before its SIGTERM to just before the next one; it counts those that got
no 200 with the ping's result (lost), and the balancer's log lines
meanwhile.

The period is longer than half of nginx's `fail_timeout` (10 s, with
`max_fails=1`, the defaults): nginx has no active check and marks a
replica failed when a connect is refused (the drained replica between
its exit and its restart; nginx sends that request to the next replica),
so three drains within 10 s would leave it no live upstream, a 502 for
every request until the first mark expires, whatever the gateway does.

Usage (root of the repository; needs `nginx`, or `haproxy` for
`--balancer haproxy`, on PATH):

    AEGIS_BIN=target/release/aegis-gitea-mcp python3 tests/replicas/drain.py

Prints one row per trial and the totals; exits 1 if any request was
lost (or a replica did not stop or start). Every process it started is
stopped; the logs stay in the /tmp/aegis-drain.* directory it prints,
with `requests.tsv` (one line per request: start and end in seconds from
the first, client, replica, failure) and `trials.tsv`.
"""

import argparse
import asyncio
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loadkit import (  # noqa: E402
    HAProxy,
    HttpConnection,
    Nginx,
    NoAnswer,
    Processes,
    Replica,
    free_port,
    gateway_binary,
    preflight,
    request_bytes,
    stepper,
)

BEARER = "drain-" + os.urandom(16).hex()
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
REPLICAS = ("r1", "r2", "r3")
# A request counts in the trial whose SIGTERM is the last one at least
# this long after the request started (a ping takes milliseconds).
LEAD = 0.5
# nginx [error] lines of a request that failed on an upstream connection
# once it had been sent (nginx does not send a POST again), or that found
# no replica to send it to.
NGINX_UNDER_REQUEST = re.compile(r"prematurely closed|reset by peer|broken pipe|no live upstreams|upstream timed out|"
                                 r"while (reading response header from|sending request to|reading upstream)", re.IGNORECASE)
# A failed connect (refused, or reset before nginx wrote): nothing was
# sent, nginx tries the next replica.
NGINX_CONNECT = re.compile(r"connect\(\) failed \(\d+", re.IGNORECASE)
# HAProxy's lines about its servers (health checks), not about a request.
HAPROXY_STATE = re.compile(r"Server replicas/\S+ is (DOWN|UP)|backend replicas has no server", re.IGNORECASE)
# A request HAProxy logged (`option dontlog-normal`: only the abnormal
# ones) that was answered 200 all the same: it was retried ("+1" in the
# connection counts: a connect to the stopped replica failed, nothing had
# been sent, and it went to another one).
HAPROXY_ANSWERED = re.compile(r'\] \S+ \S+ [-\d/]+ 200 \d+ \S+ \S+ ---- ')

step = stepper("drain")



def log_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


class Load:
    """CLIENTS coroutines, each a ping every INTERVAL on one kept-alive connection."""

    def __init__(self, port, clients, interval, served_names):
        self.port = port
        self.clients = clients
        self.interval = interval
        self.served_names = served_names  # X-Served-By value -> replica name
        self.raw = request_bytes("POST", "/mcp", "127.0.0.1:%d" % port, {
            "Authorization": "Bearer " + BEARER,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }, PING)
        self.records = []  # (started, ended, failure or None, served by, client)
        self.stop = False
        self.opened = 0

    def served(self, answer):
        value = answer.headers.get("x-served-by")
        if not value:
            return None
        last = value.split(",")[-1].strip()  # nginx: every upstream tried, the last answered
        return self.served_names.get(last, last)

    async def client(self, index):
        connection = HttpConnection("127.0.0.1", self.port)
        # Spread the clients' starts over one interval.
        next_start = time.monotonic() + self.interval * index / self.clients
        while not self.stop:
            await asyncio.sleep(max(0.0, next_start - time.monotonic()))
            started = time.monotonic()
            served = None
            try:
                answer = await connection.request(self.raw, timeout=30)
                served = self.served(answer)
                if answer.status != 200:
                    failure = "HTTP %d" % answer.status
                elif b'"result":{}' not in answer.body.replace(b" ", b""):
                    failure = "answer %r" % answer.body[:80]
                else:
                    failure = None
            except NoAnswer as err:
                failure = "no answer (%s)" % err
            self.records.append((started, time.monotonic(), failure, served, index))
            # The next beat of this client's own phase: after a stall of
            # the loop the missed beats are skipped, so the clients do not
            # fall into step and send in bursts.
            next_start += self.interval
            late = time.monotonic() - next_start
            if late > 0:
                next_start += math.ceil(late / self.interval) * self.interval
        self.opened += connection.opened
        connection.close()

    async def run(self, until):
        """Runs the clients until the thread `until` ends."""
        tasks = [asyncio.create_task(self.client(i)) for i in range(self.clients)]
        while until.is_alive():
            await asyncio.sleep(0.1)
        self.stop = True
        await asyncio.gather(*tasks)


class Trials:
    """The drains, in a thread beside the clients' event loop."""

    def __init__(self, args, replicas, balancer):
        self.args = args
        self.replicas = replicas
        self.balancer = balancer
        self.rows = []  # dicts, one per trial
        self.error = None

    def log_count(self):
        return len(log_lines(self.balancer.error_log if self.balancer.kind == "nginx" else self.balancer.log))

    def run(self):
        try:
            time.sleep(self.args.warmup)
            for number in range(1, self.args.trials + 1):
                replica = self.replicas[(number - 1) % len(self.replicas)]
                lines = self.log_count()
                term = time.monotonic()
                replica.process.send_signal(signal.SIGTERM)
                try:
                    code = replica.process.wait(timeout=self.args.exit_timeout)
                except subprocess.TimeoutExpired:
                    replica.process.kill()
                    replica.process.wait()
                    raise AssertionError("%s did not exit within %d s of SIGTERM" % (replica.name, self.args.exit_timeout))
                exited = time.monotonic()
                time.sleep(self.args.down)
                replica.start()
                up = time.monotonic()
                step("trial %d: %s exited %.2f s after SIGTERM (code %s), answers again %.2f s after" % (
                    number, replica.name, exited - term, code, up - term))
                # The next SIGTERM PERIOD after this one (and up to one
                # client interval more, at random: not always at the same
                # point of the clients' beats), QUIET after the restart
                # at least.
                time.sleep(max(self.args.quiet, term + self.args.period + random.uniform(0, self.args.interval) - time.monotonic()))
                self.rows.append({"trial": number, "replica": replica.name, "term": term, "exit": exited - term,
                                  "code": code, "up": up - term, "lines": (lines, self.log_count())})
        except BaseException as err:  # noqa: BLE001 (reported by main)
            self.error = err


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--balancer", choices=("nginx", "haproxy"), default="nginx")
    parser.add_argument("--clients", type=int, default=64, help="clients, each on its own kept-alive connection (default 64)")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between a client's requests (default 0.1)")
    parser.add_argument("--trials", type=int, default=12, help="drains, the replicas in turn (default 12)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the first drain (default 2)")
    parser.add_argument("--period", type=float, default=7.0,
                        help="seconds from one SIGTERM to the next (default 7: nginx marks a replica that refused a connect "
                             "failed for 10 s, and three drains within 10 s would leave it no live upstream)")
    parser.add_argument("--quiet", type=float, default=1.0, help="seconds of load after a replica is back, at least (default 1)")
    parser.add_argument("--down", type=float, default=0.0, help="seconds between a replica's exit and its restart (default 0)")
    parser.add_argument("--exit-timeout", type=int, default=60, help="seconds a replica gets to exit after SIGTERM (default 60)")
    args = parser.parse_args()
    preflight([args.balancer])
    started = time.monotonic()
    run_dir = tempfile.mkdtemp(prefix="aegis-drain.")
    os.chmod(run_dir, 0o755)
    version = os.popen("nginx -v 2>&1" if args.balancer == "nginx" else "haproxy -v 2>&1 | head -1").read().strip()
    step("run dir %s; binary %s; %s" % (run_dir, gateway_binary(), version))
    processes = Processes()
    ports = {r: free_port() for r in REPLICAS}
    env = {
        "GITEA_URL": "http://127.0.0.1:%d" % free_port(),
        "GITEA_TOKEN": os.urandom(20).hex(),
        "MCP_BEARER_TOKEN": BEARER,
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        # Every request comes from one address, 640 a second.
        "RATE_LIMIT_PER_IP": "0",
        "RATE_LIMIT_PER_TOKEN": "0",
    }
    replicas = [Replica(processes, r, gateway_binary(), os.path.join(run_dir, r), ports[r], env, ready="/health/live") for r in REPLICAS]
    port = free_port()
    if args.balancer == "nginx":
        balancer = Nginx(processes, os.path.join(run_dir, "nginx"), port, ["127.0.0.1:%d" % ports[r] for r in REPLICAS])
        served_names = {"127.0.0.1:%d" % ports[r]: r for r in REPLICAS}
    else:
        balancer = HAProxy(processes, os.path.join(run_dir, "haproxy"), port, [(r, ports[r]) for r in REPLICAS])
        served_names = {r: r for r in REPLICAS}
    load = Load(port, args.clients, args.interval, served_names)
    trials = Trials(args, replicas, balancer)
    try:
        for replica in replicas:
            replica.start()
        balancer.start()
        step("replicas %s, %s on %d; %d clients, a ping every %.2f s each; %d drains" % (
            ", ".join("%s on %d" % (r, ports[r]) for r in REPLICAS), args.balancer, port, args.clients, args.interval, args.trials))
        thread = threading.Thread(target=trials.run, daemon=True)
        thread.start()
        asyncio.run(load.run(thread))
        if trials.error is not None:
            raise trials.error
    except BaseException as err:
        step("FAIL: %s: %s" % (type(err).__name__, err))
        for replica in replicas:
            sys.stdout.write(replica.log_tail())
        sys.stdout.write("--- %s log\n%s\n" % (balancer.name, balancer.tail()))
        processes.stop_all()
        raise SystemExit(1)
    finally:
        balancer.stop()
        for replica in replicas:  # SIGTERM to all first: a drain takes seconds
            if replica.alive():
                replica.process.send_signal(signal.SIGTERM)
        for replica in replicas:
            replica.stop()

    records = sorted(load.records, key=lambda r: r[0])
    t0 = records[0][0] if records else 0.0
    with open(os.path.join(run_dir, "requests.tsv"), "w") as f:
        f.write("started\tended\tclient\tserved_by\tfailure\n")
        for r in records:
            f.write("%.6f\t%.6f\t%d\t%s\t%s\n" % (r[0] - t0, r[1] - t0, r[4], r[3] or "", r[2] or ""))
    with open(os.path.join(run_dir, "trials.tsv"), "w") as f:
        f.write("trial\treplica\tsigterm\texit_s\tanswers_again_s\texit_code\n")
        for row in trials.rows:
            f.write("%d\t%s\t%.6f\t%.3f\t%.3f\t%s\n" % (row["trial"], row["replica"], row["term"] - t0, row["exit"], row["up"], row["code"]))
    lines = log_lines(balancer.error_log if args.balancer == "nginx" else balancer.log)
    bounds = [row["term"] - LEAD for row in trials.rows] + [float("inf")]
    before = [r for r in records if r[0] < bounds[0]]
    print()
    header = ("| trial | replica | exit after SIGTERM (s) | answers again (s) | requests | lost | "
              "its answers from SIGTERM to exit (last at, s) | %s |" % (
                  "nginx: failed under a request | nginx: connect failed (retried) | nginx: lines"
                  if args.balancer == "nginx" else "HAProxy: failed requests | HAProxy: retried, answered 200 | HAProxy: server DOWN/UP"))
    print(header)
    print("|" + " ---: |" * header.count(" | ") + " ---: |")
    lost_detail = []
    totals = {"requests": len(before), "lost": sum(1 for r in before if r[2]), "under": 0, "refused": 0, "lines": 0}
    for index, row in enumerate(trials.rows):
        mine = [r for r in records if bounds[index] <= r[0] < bounds[index + 1]]
        lost = [r for r in mine if r[2]]
        after = [r for r in mine if r[3] == row["replica"] and row["term"] <= r[1] <= row["term"] + row["exit"]]
        new = lines[row["lines"][0]:row["lines"][1]]
        totals["requests"] += len(mine)
        totals["lost"] += len(lost)
        row["lost"] = len(lost)
        for r in lost:
            lost_detail.append("trial %d (%s): started %+.3f s, ended %+.3f s after the SIGTERM: %s (client %d%s)" % (
                row["trial"], row["replica"], r[0] - row["term"], r[1] - row["term"], r[2], r[4],
                ", served by %s" % r[3] if r[3] else ""))
        if args.balancer == "nginx":
            errors = [x for x in new if "[error]" in x]
            refused = [x for x in errors if NGINX_CONNECT.search(x)]
            under = [x for x in errors if NGINX_UNDER_REQUEST.search(x) and not NGINX_CONNECT.search(x)]
        else:
            requests = [x for x in new if '"' in x and not HAPROXY_STATE.search(x)]
            under = [x for x in requests if not HAPROXY_ANSWERED.search(x)]
            refused = [x for x in requests if HAPROXY_ANSWERED.search(x)]
            # Each state change twice: the log line and a [WARNING] on stderr.
            row["states"] = [x for x in new if HAPROXY_STATE.search(x) and not x.startswith("[")]
        totals["under"] += len(under)
        totals["refused"] += len(refused)
        totals["lines"] += len(new)
        row["under"] = under
        cells = [str(row["trial"]), row["replica"], "%.2f" % row["exit"], "%.2f" % row["up"], str(len(mine)), str(len(lost)),
                 "%d (%s)" % (len(after), "%.2f" % (max(r[1] for r in after) - row["term"]) if after else "-"),
                 str(len(under)), str(len(refused))]
        if args.balancer == "nginx":
            cells.append(str(len(new)))
        else:
            cells.append(str(len(row["states"])))
        print("| " + " | ".join(cells) + " |")
    exits = [row["exit"] for row in trials.rows]
    print()
    step("before the first drain: %d requests, %d lost" % (len(before), sum(1 for r in before if r[2])))
    step("totals: %d drains, %d requests, %d lost, %d drains with a loss (%s); exit after SIGTERM %.2f / %.2f / %.2f s (min / median / max); exit codes %s" % (
        len(trials.rows), totals["requests"], totals["lost"], sum(1 for row in trials.rows if row["lost"]),
        ", ".join("%d" % row["lost"] for row in trials.rows if row["lost"]) or "none",
        min(exits), statistics.median(exits), max(exits), sorted(set(row["code"] for row in trials.rows))))
    if args.balancer == "nginx":
        step("nginx error log: %d lines during the drains; [error]: %d requests that failed on a replica or found none, %d failed connects (retried on another replica)" % (
            totals["lines"], totals["under"], totals["refused"]))
    else:
        step("HAProxy log: %d lines during the drains, %d failed requests, %d requests retried on another replica and answered, %d servers DOWN/UP" % (
            totals["lines"], totals["under"], totals["refused"], sum(len(row["states"]) for row in trials.rows)))
    for line in lost_detail[:40]:
        print("    lost: " + line)
    for row in trials.rows:
        for line in row["under"][:5]:
            print("    %s, trial %d: %s" % (args.balancer, row["trial"], line[:300]))
    step("client connections opened: %d (%d clients); wall time %.0f s; logs in %s" % (
        load.opened, args.clients, time.monotonic() - started, run_dir))
    processes.stop_all()
    if totals["lost"] or len(trials.rows) != args.trials:
        step("FAIL: %d requests lost" % totals["lost"])
        sys.exit(1)
    step("PASS: no request lost in %d drains through %s" % (len(trials.rows), args.balancer))


if __name__ == "__main__":
    main()
