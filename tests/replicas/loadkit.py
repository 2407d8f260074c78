"""What the chaos and keep-alive tests (`chaos.py`, `keepalive.py`) share:
gateway replicas started and stopped as processes, real nginx and HAProxy
in the foreground from this directory's templates, a small asyncio HTTP/1.1
client that keeps one connection per simulated client, and a registry that
stops every process a test started, on failure too.

Standard library only (the tests import `gateway.py` from tests/e2e for
the audit helpers). Nothing here knows about Gitea's fixture: the callers
build the replicas' environment.

- `Processes`: every child process a test started; `stop_all()` ends them
  in reverse order (SIGTERM, SIGKILL after a grace), and runs on exit and
  on SIGTERM / SIGINT of the test itself.
- `Replica(name, binary, data_dir, port, env)`: one `serve` process whose
  log is appended to `data_dir/gateway.log` (a restart keeps what the
  killed process wrote); `start()` waits for `/health`, `kill()` is
  SIGKILL, `drain()` SIGTERM and the wait for the exit.
- `Nginx(run_dir, port, servers, template)`, `HAProxy(run_dir, port,
  servers)`: the balancers of `nginx.conf.in` / `haproxy.cfg.in` (or
  another template), run in the foreground with their logs in `run_dir`.
- `HttpConnection`: HTTP/1.1 over asyncio streams with keep-alive, as an
  MCP client's connection pool of one: a connection idle for longer than
  `KEEPALIVE_EXPIRY` (5 s, httpx's default) is dropped and a new one
  opened, so the client never races a balancer's client-side idle close
  (HAProxy's `timeout http-keep-alive` is 10 s).

For the upgrade scenarios (`rolling.py` here, `tests/upgrade/restore_drill.py`):

- `CallLoad`: clients calling `tools/call` continuously (each its own
  kept-alive connection and a credential) in a thread of their own, while
  the test does its steps; every call is recorded (times, `X-Served-By`,
  the outcome the `classify` function given says: chaos.py's, in both).
- `oauth_credentials(gateway, persons, grants, callback, name)`: grants
  signed in through the real flow, kept with their refresh tokens and
  clients; `refresh_grant(base, host, credential)` renews one where told
  (the balancer or one replica) and the credential holds the new pair.
- `run_binary(binary, args, env)`: a CLI command of the gateway with the
  settings given; `binary_version(binary)`; `health_json(port)`.
- `in_window(call, windows, grace)`: which window a call overlaps.
"""

import asyncio
import atexit
import collections
import json
import os
import random
import resource
import shutil
import signal
import socket
import string
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
KEEPALIVE_EXPIRY = 5.0


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Debian packages of the tools a scenario needs, where the name differs.
PACKAGES = {"psql": "postgresql-client"}


def gateway_binary():
    """The release binary the scenarios run: $AEGIS_BIN, else the build's."""
    return os.path.abspath(os.environ.get("AEGIS_BIN", os.path.join(ROOT, "target", "release", "aegis-gitea-mcp")))


def preflight(tools):
    """What every scenario needs before anything starts: each of `tools` on
    PATH, the gateway binary, and room for many open files (the limit)."""
    for tool in tools:
        check(shutil.which(tool), "%s is not on PATH (apt-get install -y %s)" % (tool, PACKAGES.get(tool, tool)))
    check(os.access(gateway_binary(), os.X_OK), "no gateway binary at %s (set AEGIS_BIN)" % gateway_binary())
    return raise_open_files()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def raise_open_files():
    """The soft RLIMIT_NOFILE up to the hard one: many client connections
    here, and the balancers started from here inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (0 if it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid):
    """CPU seconds of `pid` and its children (nginx's workers, PostgreSQL's
    backends): the children that exited are in the parent's own count only
    once it reaps them."""
    total = cpu_seconds(pid)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        total += cpu_seconds(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return total


class Processes:
    """The child processes a test started, stopped in reverse order on
    exit (normal, exception, SIGTERM or SIGINT of the test)."""

    def __init__(self):
        self.entries = []  # (name, Popen)
        self.cleanups = []  # callables run after the processes stop (e.g. a cluster's stop)
        self.closed = False
        atexit.register(self.stop_all)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._signalled)

    def _signalled(self, signum, _frame):
        # SystemExit unwinds the test's finally blocks, then atexit runs.
        raise SystemExit(128 + signum)

    def add(self, name, process):
        if self.closed:  # started by a thread after the stop: end it at once
            terminate(process)
        self.entries.append((name, process))
        return process

    def on_exit(self, cleanup):
        self.cleanups.append(cleanup)

    def stop_all(self):
        self.closed = True
        while self.entries:
            name, process = self.entries.pop()
            terminate(process)
        while self.cleanups:
            cleanup = self.cleanups.pop()
            try:
                cleanup()
            except Exception as err:  # noqa: BLE001 (cleanup goes on)
                print("cleanup %s: %s" % (cleanup, err), file=sys.stderr)


def terminate(process, grace=10, sig=signal.SIGTERM):
    if process.poll() is None:
        try:
            process.send_signal(sig)
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        except ProcessLookupError:
            pass


def healthy(port, path="/health"):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Replica:
    """One `aegis-gitea-mcp serve` on 127.0.0.1:port with its own DATA_DIR."""

    def __init__(self, processes, name, binary, data_dir, port, env, ready="/health"):
        """`ready`: the path that answers 200 once it serves (`/health`
        also needs Gitea and the store; `/health/live` only the process)."""
        self.processes = processes
        self.ready = ready
        self.name = name
        self.binary = binary
        self.data_dir = data_dir
        self.port = port
        self.env = dict(env)
        self.process = None
        self.starts = 0
        os.makedirs(data_dir, exist_ok=True)

    @property
    def log_path(self):
        return os.path.join(self.data_dir, "gateway.log")

    def start(self, env=None, timeout=30):
        """Starts the process (with `env` merged over the replica's) and
        waits for its /health. The log is appended to, across restarts."""
        if env:
            self.env.update(env)
        check(not port_open(self.port), "%s: port %d is taken" % (self.name, self.port))
        environment = {
            "PATH": os.environ.get("PATH", ""),
            "RUST_LOG": os.environ.get("RUST_LOG", "info"),
            "MCP_PORT": str(self.port),
            "DATA_DIR": self.data_dir,
            "REPLICA_ID": self.name,
            **self.env,
        }
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [self.binary, "serve"], env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=self.data_dir
            )
        self.processes.add(self.name, self.process)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if healthy(self.port, self.ready):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        status = self.process.poll()
        terminate(self.process)
        raise AssertionError("%s did not start (exit %s): %s" % (self.name, status, self.log_tail()))

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        """SIGKILL: no shutdown, no flush."""
        self.process.kill()
        self.process.wait()

    def drain(self, timeout=60):
        """SIGTERM: stops accepting, finishes its calls, exits. Its exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("%s did not exit within %d s of SIGTERM" % (self.name, timeout))

    def stop(self):
        if self.alive():
            terminate(self.process, grace=30)

    def log_tail(self, warnings=15, last=3, skip=()):
        """Its last `warnings` log lines above INFO, then its last `last`
        lines; lines holding one of `skip` are left out of both."""
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [line for line in f.read().splitlines() if not any(text in line for text in skip)]
        except OSError:
            return "(no log)"
        loud = [line for line in lines if '"level":"INFO"' not in line and '"level":"DEBUG"' not in line]
        return "--- %s (%s): %d lines, %d above INFO; those, then the last %d\n%s\n" % (
            self.name, self.log_path, len(lines), len(loud), last, "\n".join(loud[-warnings:] + ["…"] + lines[-last:]))

    def audit_entries(self, event=None):
        """Its audit entries (every audit.log* file), of `event` if given."""
        entries = []
        marker = '"%s"' % event if event else None
        for file in sorted(os.listdir(self.data_dir)):
            if file.startswith("audit.log"):
                with open(os.path.join(self.data_dir, file), errors="replace") as f:
                    for line in f:
                        if not line.strip() or (marker and marker not in line):
                            continue
                        try:
                            entry = json.loads(line)
                        except ValueError:
                            continue  # a torn last line after a SIGKILL; `audit verify` judges the file
                        if event is None or entry.get("event") == event:
                            entries.append(entry)
        return entries


class Balancer:
    """A balancer process in the foreground from a string.Template config."""

    kind = "balancer"

    def __init__(self, processes, run_dir, port, name):
        self.processes = processes
        self.run_dir = run_dir
        self.port = port
        self.name = name
        self.process = None
        os.makedirs(run_dir, exist_ok=True)
        os.chmod(run_dir, 0o755)  # nginx's worker runs as nobody

    def _render(self, template, target, **values):
        """The template filled in, line by line: a comment line is kept as
        it is (nginx.conf.in's header names `${servers}`, whose several
        lines would break out of the comment)."""
        with open(template) as f:
            lines = f.read().splitlines(keepends=True)
        text = "".join(line if line.lstrip().startswith("#") else string.Template(line).substitute(**values) for line in lines)
        with open(target, "w") as f:
            f.write(text)
        return target

    def _run(self, args, log_name):
        check(not port_open(self.port), "%s: port %d is taken" % (self.name, self.port))
        self.log = os.path.join(self.run_dir, log_name)
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.processes.add(self.name, self.process)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            check(self.process.poll() is None, "%s exited: %s" % (self.name, self.tail()))
            if port_open(self.port):
                return self
            time.sleep(0.05)
        raise AssertionError("%s does not listen on %d: %s" % (self.name, self.port, self.tail()))

    def tail(self, limit=3000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-limit:]
        except OSError:
            return ""

    def stop(self):
        if self.process is not None:
            terminate(self.process)


class Nginx(Balancer):
    kind = "nginx"

    def __init__(self, processes, run_dir, port, servers, template=os.path.join(HERE, "nginx.conf.in"), name="nginx", **values):
        super().__init__(processes, run_dir, port, name)
        self.config = self._render(template, os.path.join(run_dir, "nginx.conf"), prefix=run_dir, port=port,
                                   servers="\n".join("        server %s;" % s for s in servers), **values)

    def start(self):
        # -e: the error log before the config is read (nginx >= 1.19.5).
        return self._run(["nginx", "-p", self.run_dir + "/", "-e", os.path.join(self.run_dir, "error.log"), "-c", self.config],
                         "nginx.stdout")

    @property
    def error_log(self):
        return os.path.join(self.run_dir, "error.log")

    def error_lines(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []


class HAProxy(Balancer):
    kind = "haproxy"

    def __init__(self, processes, run_dir, port, servers, template=os.path.join(HERE, "haproxy.cfg.in"), name="haproxy"):
        """`servers`: (name, port) pairs."""
        super().__init__(processes, run_dir, port, name)
        lines = "\n".join("    server %s 127.0.0.1:%d" % (n, p) for n, p in servers)
        self.config = self._render(template, os.path.join(run_dir, "haproxy.cfg"), port=port, servers=lines)

    def start(self):
        return self._run(["haproxy", "-f", self.config, "-db"], "haproxy.log")


def check(condition, message):
    """An assertion that survives `python -O` and names what failed."""
    if not condition:
        raise AssertionError(message)


# ---------------------------------------------------------------- HTTP client

class NoAnswer(Exception):
    """The connection ended (or timed out) before a whole answer came."""


class Answer:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


def request_bytes(method, path, host, headers=None, body=b""):
    head = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host]
    for name, value in (headers or {}).items():
        head.append("%s: %s" % (name, value))
    if body or method in ("POST", "PUT", "PATCH"):
        head.append("Content-Length: %d" % len(body))
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class HttpConnection:
    """One kept-alive HTTP/1.1 connection to host:port, reopened as needed."""

    def __init__(self, host, port, expiry=KEEPALIVE_EXPIRY):
        self.host = host
        self.port = port
        self.expiry = expiry
        self.reader = None
        self.writer = None
        self.idle_since = 0.0
        self.opened = 0  # connections opened, for the output

    def usable(self):
        return (self.writer is not None and not self.writer.is_closing() and not self.reader.at_eof()
                and time.monotonic() - self.idle_since < self.expiry)

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, raw, timeout=30.0):
        """Sends the request bytes `raw`; the Answer, or NoAnswer."""
        try:
            return await asyncio.wait_for(self._request(raw), timeout)
        except asyncio.TimeoutError:
            self.close()
            raise NoAnswer("timeout") from None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as err:
            self.close()
            raise NoAnswer(type(err).__name__) from None

    async def _request(self, raw):
        if not self.usable():
            self.close()
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
            self.opened += 1
        self.writer.write(raw)
        line = await self.reader.readline()
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        status = int(line.split(b" ", 2)[1])
        headers = {}
        while True:
            line = await self.reader.readline()
            if not line:
                raise asyncio.IncompleteReadError(b"", None)
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            body = b"".join(parts)
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            body = await self.reader.read()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        self.idle_since = time.monotonic()
        return Answer(status, headers, body)


def stepper(tag):
    """A progress printer: `[tag  12.34 s] message`, timed from now."""
    started = time.monotonic()

    def step(message):
        print("[%s %7.2f s] %s" % (tag, time.monotonic() - started, message), flush=True)

    return step


# ---------------------------------------------------------------- the upgrade scenarios' parts

# One call of a CallLoad: started and ended (seconds from the load's start),
# the client's index, its credential's index, the outcome (`classify`'s
# kind), who answered (X-Served-By, or the load's `served_default`), and
# the status (the envelope's, or HTTP's; None without an answer).
LoadCall = collections.namedtuple("LoadCall", "t0 t1 client cred kind served status")


class CallLoad:
    """`clients` MCP clients calling `tools/call TOOL` at 127.0.0.1:port (a
    balancer or one gateway) with `Host: host`, in a thread of their own
    (one asyncio loop), until `stop()`: each keeps one kept-alive
    connection (`HttpConnection`) and one credential, and starts a call
    every `interval` seconds (±20 %, the first at random within one
    interval). Credentials are chaos.py's dicts (`label`, `token`, `login`,
    `mode`); a credential whose `token` changes (a refresh) is used with the
    new token from its next call on. By default the even clients use
    credential 0 (the static bearer) and the odd ones the others in turn.
    `classify(answer, credential)` -> (kind, status), chaos.py's `classify`."""

    def __init__(self, port, host, credentials, clients, interval, classify, call_timeout=30.0,
                 tool="gitea_user_get_current", assignment=None, served_default=None):
        from gateway import tool_call_request  # tests/e2e, on the caller's sys.path

        self.port = port
        self.host = host
        self.credentials = credentials
        self.interval = interval
        self.classify = classify
        self.call_timeout = call_timeout
        self.served_default = served_default
        self.body, self.headers = tool_call_request(tool)
        self.assignment = assignment or self.alternate(clients, len(credentials))
        self.calls = []
        self.connections = 0
        self.t0 = None
        self.thread = None
        self.error = None
        self._stop_at = float("inf")
        self._raw = {}

    @staticmethod
    def alternate(clients, credentials):
        """Credential 0 for the even clients, the others in turn for the odd ones."""
        out, others, turn = [], credentials - 1, 0
        for index in range(clients):
            if index % 2 == 0 or others == 0:
                out.append(0)
            else:
                out.append(1 + turn % others)
                turn += 1
        return out

    def request(self, cred):
        """The request bytes for credential `cred` with its current token."""
        token = self.credentials[cred]["token"]
        key = (cred, token)
        if key not in self._raw:
            self._raw[key] = request_bytes("POST", "/mcp", self.host, {"Authorization": "Bearer " + token, **self.headers}, self.body)
        return self._raw[key]

    def served(self, answer):
        return answer.headers.get("x-served-by") or self.served_default

    def now(self):
        return time.monotonic() - self.t0

    async def one_call(self, connection, client, cred):
        credential = self.credentials[cred]
        started = time.monotonic()
        try:
            answer = await connection.request(self.request(cred), timeout=self.call_timeout)
            kind, status = self.classify(answer, credential)
            served = self.served(answer)
        except NoAnswer as err:
            kind, status, served = ("timeout" if str(err) == "timeout" else "no_answer"), None, None
        call = LoadCall(started - self.t0, time.monotonic() - self.t0, client, cred, kind, served, status)
        self.calls.append(call)
        return call

    async def _client(self, client, cred):
        connection = HttpConnection("127.0.0.1", self.port)
        await asyncio.sleep(random.uniform(0, self.interval))
        next_start = time.monotonic()
        while time.monotonic() < self._stop_at:
            await self.one_call(connection, client, cred)
            next_start = max(next_start + self.interval * random.uniform(0.8, 1.2), time.monotonic())
            await asyncio.sleep(max(0.0, next_start - time.monotonic()))
        self.connections += connection.opened
        connection.close()

    def probe(self):
        """One call per credential, one after another, before the load
        starts (in the caller's thread): the calls."""
        async def calls():
            connection = HttpConnection("127.0.0.1", self.port)
            out = [await self.one_call(connection, -1, cred) for cred in range(len(self.credentials))]
            connection.close()
            return out

        self.t0 = time.monotonic()
        out = asyncio.run(calls())
        self.calls = []
        return out

    def start(self):
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True, name="load")
        self.thread.start()
        return self

    def _run(self):
        async def everyone():
            await asyncio.gather(*(self._client(client, cred) for client, cred in enumerate(self.assignment)))

        try:
            asyncio.run(everyone())
        except BaseException as err:  # noqa: BLE001 (reported by stop())
            self.error = err

    def stop(self):
        """No call starts from now on; waits for the calls in flight. The calls."""
        self._stop_at = time.monotonic()
        if self.thread is not None:
            self.thread.join(self.interval * 1.2 + self.call_timeout + 10)
            check(not self.thread.is_alive(), "the load's clients did not stop")
            check(self.error is None, "the load's thread failed: %r" % self.error)
        return self.calls


def in_window(call, windows, grace):
    """The index of the first window [start, end + grace] that `call`
    (t0, t1) overlaps, or None."""
    for index, window in enumerate(windows):
        if call.t0 <= window["end"] + grace and call.t1 >= window["start"]:
            return index
    return None


def oauth_credentials(gateway, persons, grants, callback, name):
    """Each person (`login`, `password`) signs in `grants` times through the
    real flow at `gateway` (a new public client each): chaos.py's
    credentials, each with its `refresh_token`, `client_id` and
    `refreshes` (0) too."""
    from sdk_common import public_client, signed_in_tokens  # httpx2, from `pip install mcp`

    credentials = []
    for round_ in range(grants):
        for person in persons:
            client = public_client(gateway, callback, client_name="%s %s %d" % (name, person["login"], round_))
            tokens = signed_in_tokens(gateway, client, callback, person)
            check(tokens.get("refresh_token"), "a refresh token for %s: %s" % (person["login"], sorted(tokens)))
            credentials.append({"label": "%s#%d" % (person["login"], round_ + 1), "token": tokens["access_token"],
                                "refresh_token": tokens["refresh_token"], "client_id": client["client_id"],
                                "login": person["login"], "mode": "oauth", "refreshes": 0})
    return credentials


def refresh_grant(base, host, credential, timeout=30):
    """The refresh-token grant of `credential` (a public client) at `base`
    (`http://127.0.0.1:PORT`: the balancer, or one replica) with `Host:
    host`. On 200 the credential holds the new pair (its clients use the
    new access token from their next call). (HTTP status, X-Served-By,
    the error or '')."""
    form = urllib.parse.urlencode({"grant_type": "refresh_token", "refresh_token": credential["refresh_token"],
                                   "client_id": credential["client_id"]}).encode()
    request = urllib.request.Request(base.rstrip("/") + "/token", data=form, method="POST", headers={
        "Host": host, "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, served, body = response.status, response.headers.get("x-served-by"), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("x-served-by"), err.read()[:300].decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:
        return None, None, "%s: %s" % (type(err).__name__, err)
    tokens = json.loads(body)
    if not tokens.get("access_token") or not tokens.get("refresh_token"):
        return status, served, "no new pair in the answer: %s" % sorted(tokens)
    credential["refresh_token"] = tokens["refresh_token"]
    credential["token"] = tokens["access_token"]
    credential["refreshes"] = credential.get("refreshes", 0) + 1
    return status, served, ""


def run_binary(binary, args, env, timeout=120):
    """`binary args…` with `env` (and PATH, RUST_LOG=warn unless given) and
    nothing else of this process's environment: (exit code, stdout,
    stderr, seconds)."""
    environment = {"PATH": os.environ.get("PATH", ""), "RUST_LOG": "warn", **env}
    started = time.monotonic()
    done = subprocess.run([binary, *args], env=environment, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def binary_version(binary):
    """What `binary --version` says after the program's name (`0.1.0 (…)`)."""
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    check(done.returncode == 0, "%s --version: exit %s %s" % (binary, done.returncode, done.stderr))
    words = done.stdout.strip().split(" ", 1)
    return words[1] if len(words) == 2 else done.stdout.strip()


def health_json(port, path="/health", host=None, timeout=5):
    """(HTTP status, the JSON body or None) of 127.0.0.1:port's `path`;
    (None, None) without an answer."""
    headers = {"Host": host} if host else {}
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, body = err.code, err.read()
    except (urllib.error.URLError, OSError):
        return None, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None
