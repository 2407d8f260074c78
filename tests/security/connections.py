"""Sockets for the replay's attacks on connection slots and request heads
(issue 53, `R53-F2`, `R53-F5`): a client that holds kept-alive connections
and opens each again as the gateway closes it, a client that only wants
one answer, and what the kernel says of the gateway's end of a loopback
connection. Standard library and `tests/e2e/gateway.py` only.
"""

import json
import re
import selectors
import socket
import threading
import time

from gateway import check

TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT",
              "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def connect(port, source=None, timeout=2, rcvbuf=None):
    """A connection to the gateway on loopback `port`, from `source` (an
    address of 127.0.0.0/8), with SO_RCVBUF set before connecting."""
    conn = socket.socket()
    try:
        if rcvbuf:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source:
            conn.bind((source, 0))
        conn.settimeout(timeout)
        conn.connect(("127.0.0.1", port))
    except OSError:
        conn.close()
        raise
    return conn


def read_answer(conn):
    """One HTTP/1.1 answer with a Content-Length off `conn`: its status, or
    None when the connection ends (or is reset) first."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        remaining = int(length.group(1)) - len(body) if length else 0
        while remaining > 0:
            chunk = conn.recv(min(remaining, 65536))
            if not chunk:
                return None
            remaining -= len(chunk)
    except OSError:
        return None
    status = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return int(status.group(1)) if status else None


def live_request(port, close=False):
    return ("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (port, "Connection: close\r\n" if close else "")).encode()


def ask(port, source, close=False):
    """A new connection from `source` that asks `/health/live` once: the
    connection (kept alive) and the status, or (None, None)."""
    try:
        conn = connect(port, source)
    except OSError:
        return None, None
    try:
        conn.sendall(live_request(port, close))
    except OSError:
        conn.close()
        return None, None
    status = read_answer(conn)
    if status is None:
        conn.close()
        return None, None
    return conn, status


def served_within(port, source, seconds):
    """A new client at `source` asks `/health/live` until answered 200 or
    `seconds` pass: the seconds it took, or None (with the last failure)."""
    began = time.monotonic()
    tries = 0
    while True:
        tries += 1
        conn, status = ask(port, source, close=True)
        if conn:
            conn.close()
        if status == 200:
            return time.monotonic() - began, tries
        if time.monotonic() - began >= seconds:
            return None, tries
        time.sleep(0.05)


class Holder(threading.Thread):
    """`count` kept-alive connections from `source`, each of which asked
    `/health/live` once and read the answer, then sits idle; each the
    gateway closes is opened again at once, and a refused one is tried
    again 20 ms later, until `stop()`."""

    def __init__(self, port, source, count):
        super().__init__(daemon=True)
        self.port, self.source, self.count = port, source, count
        self.held = self.opened = self.closed_by_gateway = self.refused = 0
        self.stopping = threading.Event()

    def run(self):
        selector = selectors.DefaultSelector()  # epoll: descriptors past 1023
        held = set()
        while not self.stopping.is_set():
            while len(held) < self.count and not self.stopping.is_set():
                conn, status = ask(self.port, self.source)
                if status != 200:
                    if conn:
                        conn.close()
                    self.refused += 1
                    break
                selector.register(conn, selectors.EVENT_READ)
                held.add(conn)
                self.opened += 1
            self.held = len(held)
            for key, _ in selector.select(timeout=0.02 if len(held) < self.count else 0.2):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if not data:  # the gateway closed it (an idle connection sends nothing else)
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    held.discard(key.fileobj)
                    self.closed_by_gateway += 1
            self.held = len(held)
        for conn in held:
            conn.close()
        selector.close()

    def stop(self):
        self.stopping.set()
        self.join(10)


def hold(port, sources, count):
    """A started `Holder` for each of `sources`."""
    holders = [Holder(port, source, count) for source in sources]
    for holder in holders:
        holder.start()
    return holders


def settle(holders, seconds):
    """Waits until every holder holds its count, or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(h.held < h.count for h in holders):
        time.sleep(0.1)


def tally(holders):
    return "held %d, opened %d, closed by the gateway %d, refused %d" % (
        sum(h.held for h in holders), sum(h.opened for h in holders),
        sum(h.closed_by_gateway for h in holders), sum(h.refused for h in holders))


def gateway_ends(port, client_ports):
    """The gateway's end of each loopback connection whose client port is in
    `client_ports`, from /proc/net/tcp: {client port: (state, bytes the
    gateway has queued to send)}; a connection the gateway has closed and
    forgotten is absent."""
    found = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            tx_queue = int(fields[4].split(":")[0], 16)
            if int(local.split(":")[1], 16) == port and int(remote.split(":")[1], 16) in client_ports:
                found[int(remote.split(":")[1], 16)] = (TCP_STATES.get(state, state), tx_queue)
    return found


def wait_closed(conn, seconds):
    """Reads (and drops) whatever `conn` receives until the gateway closes
    it or `seconds` pass: the seconds until it closed, or None."""
    began = time.monotonic()
    conn.settimeout(0.2)
    while time.monotonic() - began < seconds:
        try:
            if not conn.recv(65536):
                return time.monotonic() - began
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - began
    return None


def newcomer_served_while_held(port, sources, newcomer, step):
    """64 kept-alive idle connections from each of `sources` (a `Holder`
    each); a client from `newcomer` must be served within 2 s, and again
    15 s later."""
    holders = hold(port, sources, 64)
    try:
        settle(holders, 5)
        time.sleep(1)  # the reconnecting has begun where something was closed
        step("64 connections from each: %s" % tally(holders))
        for attempt in ("a new client", "15 s later, a new client"):
            began = time.monotonic()
            took, tries = served_within(port, newcomer, 2)
            check(took is not None, "%s from %s was not served within 2 s (%d tries; %s)" % (attempt, newcomer, tries, tally(holders)))
            step("%s from %s served in %.2f s (%d tries); %s" % (attempt, newcomer, took, tries, tally(holders)))
            if attempt == "a new client":
                time.sleep(max(0, 15 - (time.monotonic() - began)))
    finally:
        for holder in holders:
            holder.stop()


def unread_answers_closed(port, bearer, seconds, step):
    """Six clients with SO_RCVBUF 2048 that read nothing: four ask
    tools/list at /mcp/all once, two pipeline 24 asks. The gateway must
    close each within `seconds`."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    headers = {"Authorization": "Bearer " + bearer, "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    request = ("POST /mcp/all HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %d\r\n\r\n%s" % (
        port, "".join("%s: %s\r\n" % h for h in headers.items()), len(body), body)).encode()
    reader = connect(port)
    reader.sendall(request.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
    size = 0
    while True:
        chunk = reader.recv(65536)
        if not chunk:
            break
        size += len(chunk)
    reader.close()
    stalled = {}
    for asks in (1, 1, 1, 1, 24, 24):
        conn = connect(port, "127.0.0.20", rcvbuf=2048)
        conn.sendall(request * asks)
        stalled[conn.getsockname()[1]] = (conn, asks)
    began = time.monotonic()
    time.sleep(2)
    step("the answer to tools/list at /mcp/all is %d KiB; bytes queued at the gateway's ends: %s" % (
        size // 1024, sorted(queued for _, queued in gateway_ends(port, set(stalled)).values())))
    while time.monotonic() - began < seconds:
        ends = gateway_ends(port, set(stalled))
        still = ["asked %d, %d bytes queued" % (stalled[p][1], queued) for p, (state, queued) in ends.items() if state == "ESTABLISHED"]
        if not still:
            break
        time.sleep(0.5)
    step("after %.0f s, %d of 6 still open at the gateway %s" % (time.monotonic() - began, len(still), still))
    for conn, _ in stalled.values():
        conn.close()
    check(not still, "%d of 6 were still open after %d s: %s" % (len(still), seconds, still))
