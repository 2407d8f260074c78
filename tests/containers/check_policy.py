#!/usr/bin/env python3
"""The container files' rules, checked without a Docker engine.

Reads what tests/containers/checker computed with Docker's own libraries
(BuildKit for the Dockerfile, compose-go for docker-compose.yml) and checks
the project's rules on it: pinned digests, no secrets in build arguments or in
the compose file, a non-root numeric user, the data volume, the health check,
the build context that .dockerignore leaves, the settings the gateway really
reads. Then, when a gateway binary is at hand (never built here), it runs the
image's health check, `aegis-gitea-mcp health`, against stub servers and a
real running gateway, and the gateway's refusal of an unauthenticated
non-loopback bind.

Ends with the line `containers: N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DIGEST_REF = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9./_-]*):(?P<tag>[A-Za-z0-9][A-Za-z0-9._-]*)@sha256:[0-9a-f]{64}$"
)
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|PRIVATE|CREDENTIAL|(^|_)KEY($|_)|DATABASE_URL|DSN", re.I)

passed = 0
failed = 0


def check(ok: bool, what: str, detail: str = "") -> bool:
    global passed, failed
    if ok:
        passed += 1
        print(f"ok      {what}")
    else:
        failed += 1
        print(f"FAIL    {what}" + (f": {detail}" if detail else ""))
    return ok


def skip(what: str, why: str) -> None:
    print(f"skipped {what}: {why}")


# ---- the build context, as the docker CLI computes it ------------------------

CHECKER: Path | None = None


def build_context(repo: Path, probes: list[str]) -> dict:
    """`checker context`: the files .dockerignore lets in (the docker CLI's own
    ignore-file reader and pattern matcher) and, per probe path, whether it
    would stay out."""
    res = subprocess.run([str(CHECKER), "context", str(repo), *probes], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"checker context failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


# ---- helpers -------------------------------------------------------------------


def gateway_settings(repo: Path) -> set[str]:
    """Settings documented in docs/configuration.md that src/ also names."""
    doc = (repo / "docs/configuration.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", doc, re.M))
    source = "\n".join(p.read_text() for p in (repo / "src").rglob("*.rs"))
    return {name for name in documented if f'"{name}"' in source}


def go_duration(text: object) -> int | None:
    """A Go duration as compose-go writes it ("1m30s") in nanoseconds."""
    unit = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
    parts = re.findall(r"(\d+)(h|ms|us|ns|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        return None
    return sum(int(n) * unit[u] for n, u in parts)


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubServer:
    """An HTTP server on loopback answering every GET with a fixed status."""

    def __init__(self, routes: dict[str, int]) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.requests.append((self.path, dict(self.headers)))
                status = routes.get(self.path, 404)
                body = b'{"version":"1.27.1"}' if self.path == "/api/v1/version" else b'{"status":"x"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "StubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


HEALTH_ARGS = ["health"]


def run_health(binary: Path, port: int | str | None, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """`aegis-gitea-mcp health` as the HEALTHCHECK runs it: no arguments, the
    port from MCP_PORT (left unset when port is None)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **extra_env}
    if port is not None:
        env["MCP_PORT"] = str(port)
    return subprocess.run([str(binary), *HEALTH_ARGS], env=env, capture_output=True, text=True, timeout=20, cwd=cwd)


# ---- the checks ----------------------------------------------------------------


def check_dockerfile(repo: Path, df: dict, settings: set[str]) -> dict:
    """Returns facts later checks use."""
    facts: dict = {}
    check(bool(DIGEST_REF.match(df["syntax"] or "")), "Dockerfile: the # syntax= frontend is pinned by digest", df["syntax"])
    check(not df["lint_warnings"], "Dockerfile: BuildKit's linter (docker build --check rules) has no warning",
          "; ".join(f'line {w["line"]} {w["rule"]}: {w["detail"]}' for w in df["lint_warnings"] or []))
    check(not df["lint_error"], "Dockerfile: BuildKit parses and converts it", df["lint_error"])
    check(df["llb_ops"] > 0, "Dockerfile: converts to a BuildKit build graph", f'{df["llb_ops"]} ops')

    stages = df["stages"]
    names: set[str] = set()
    bases = []
    for st in stages:
        base = st["base"]
        if base in names:
            continue
        bases.append(base)
        check(bool(DIGEST_REF.match(base)), f"Dockerfile: base image of stage {st['name'] or '?'} is pinned by digest", base)
        names.add(st["name"])
    facts["bases"] = bases

    build = next((s for s in stages if s["name"] == "build"), None)
    final = stages[-1]
    if not check(build is not None, "Dockerfile: has a build stage named build"):
        return facts

    # Toolchain at least Cargo.toml's rust-version; Debian release shared with the runtime.
    cargo = (repo / "Cargo.toml").read_text()
    m = re.search(r'^rust-version\s*=\s*"([^"]+)"', cargo, re.M)
    rust_tag = DIGEST_REF.match(build["base"])
    if m and rust_tag and "rust" in rust_tag["name"]:
        need, have = version_tuple(m[1]), version_tuple(rust_tag["tag"])
        check(have >= need, "Dockerfile: the Rust image is at least Cargo.toml's rust-version",
              f"image {rust_tag['tag']}, rust-version {m[1]}")
        debian = {"bookworm": "debian12", "trixie": "debian13"}
        codename = next((c for c in debian if c in rust_tag["tag"]), None)
        runtime = DIGEST_REF.match(final["base"])
        check(codename is not None and runtime is not None and debian[codename] in runtime["name"],
              "Dockerfile: build and runtime images are the same Debian release (same glibc)",
              f"{build['base']} vs {final['base']}")
    else:
        check(False, "Dockerfile: the build stage is an official rust image and Cargo.toml has rust-version")

    cargo_runs = [r for r in build["runs"] if "cargo build" in r["command"]]
    run = cargo_runs[0] if cargo_runs else None
    check(run is not None and "cargo build --release --locked --bin aegis-gitea-mcp" in run["command"],
          "Dockerfile: builds with cargo build --release --locked --bin aegis-gitea-mcp")
    if run:
        caches = {mt["target"] for mt in run["mounts"] or [] if mt["type"] == "cache"}
        check("/usr/local/cargo/registry" in caches and any(t.endswith("/target") for t in caches),
              "Dockerfile: the cargo registry and the target directory are cache mounts", str(sorted(caches)))

    # No secrets through ARG or ENV, in any stage.
    for st in [{"name": "(global)", "args": df["global_args"] or [], "envs": []}] + stages:
        for a in st.get("args") or []:
            check(not SECRET_NAME.search(a["key"]), f"Dockerfile: ARG {a['key']} (stage {st['name']}) is not a secret")
        for e in st.get("envs") or []:
            check(not SECRET_NAME.search(e["key"]), f"Dockerfile: ENV {e['key']} (stage {st['name']}) is not a secret")

    image = df["image"]
    env = dict(item.split("=", 1) for item in image["env"] or [])
    facts["env"] = env
    extra = sorted(set(env) - {"PATH"} - settings)
    check(not extra, "Dockerfile: every ENV of the image is a setting the gateway reads", ", ".join(extra))

    user = image["user"] or ""
    um = re.fullmatch(r"(\d+):(\d+)", user)
    check(bool(um) and um[1] != "0" and um[2] != "0", "Dockerfile: runs as a numeric non-root user and group", user or "(root)")
    facts["uid"] = um[1] if um else None

    check(env.get("DATA_DIR") == "/data" and list((image["volumes"] or {}).keys()) == ["/data"],
          "Dockerfile: DATA_DIR=/data and /data is the one volume")
    # /data arrives as the entry `data` of a build-stage directory copied into
    # / (its mode is the one the build stage gives it: see the Dockerfile).
    data_copy = [c for c in final["copies"] if c["dest"] == "/" and c["from"] == "build"
                 and len(c["sources"] or []) == 1 and c["sources"][0].endswith("/")]
    check(bool(data_copy) and um is not None and data_copy[0]["chown"] == user and not data_copy[0]["chmod"],
          "Dockerfile: /data is owned by the runtime user (COPY --chown of the build stage's data directory into /)", str(data_copy))

    check(list((image["exposed_ports"] or {}).keys()) == ["8080/tcp"] and env.get("MCP_PORT") == "8080",
          "Dockerfile: EXPOSE 8080 and MCP_PORT=8080")

    if env.get("MCP_HOST") not in (None, "127.0.0.1", "localhost", "::1"):
        doc = (repo / "docs/containers.md")
        text = doc.read_text() if doc.exists() else ""
        check("MCP_BEARER_TOKEN" in text and "GITEA_OAUTH_CLIENT_ID" in text and "exits with code 2" in text,
              "Dockerfile: MCP_HOST is not loopback, and docs/containers.md says the env must bring a bearer or OAuth")

    check(image["entrypoint"] == ["/usr/local/bin/aegis-gitea-mcp"] and image["cmd"] == ["serve"],
          "Dockerfile: ENTRYPOINT is the binary, CMD is serve", f'{image["entrypoint"]} {image["cmd"]}')
    final_dests = {c["dest"]: c for c in final["copies"]}
    binary_copy = final_dests.get("/usr/local/bin/aegis-gitea-mcp")
    check(binary_copy is not None and binary_copy["from"] == "build",
          "Dockerfile: the binary is copied into the runtime image from the build stage")
    check(set(final_dests) == {"/usr/local/bin/aegis-gitea-mcp", "/"},
          "Dockerfile: the runtime image gets the binary and /data, nothing else", str(sorted(final_dests)))
    data_src = [s + "data" for s in data_copy[0]["sources"]] if data_copy else []
    made = [r for r in build["runs"] if any(re.search(rf"install -d -m 0?700 {re.escape(s)}(\s|$)", r["command"]) for s in data_src)]
    # Whatever else the build stage put in that directory would land in / too.
    rootfs = data_copy[0]["sources"][0].rstrip("/") if data_copy else None
    named = [m for r in build["runs"] for m in re.findall(rf"{re.escape(rootfs)}[^\s;&|]*", r["command"])] if rootfs else []
    check(bool(data_src) and bool(made) and set(named) == set(data_src),
          "Dockerfile: the build stage creates data, mode 0700, in the directory copied into /, and nothing else there",
          f"{data_src}, named: {sorted(set(named))}")

    # The health check is the gateway's own `health` subcommand (the image has
    # no shell, curl or wget): exec form, the entrypoint binary, no arguments,
    # so the URL comes from MCP_PORT. Its timeout covers the probe's 5 s.
    hc = image["healthcheck"] or {}
    test = hc.get("Test") or []
    facts["healthcheck"] = hc
    check(test == ["CMD", "/usr/local/bin/aegis-gitea-mcp", *HEALTH_ARGS],
          "Dockerfile: HEALTHCHECK runs `aegis-gitea-mcp health` in exec form", str(test))
    check((hc.get("Timeout") or 0) > 5 * 10**9 and (hc.get("Interval") or 0) >= (hc.get("Timeout") or 0) and (hc.get("Retries") or 0) >= 1,
          "Dockerfile: HEALTHCHECK timeout is longer than the probe's own 5 s, interval at least the timeout",
          str({k: hc.get(k) for k in ("Interval", "Timeout", "StartPeriod", "Retries")}))
    facts["context_sources"] = sorted({s for c in build["copies"] if not c["from"] for s in c["sources"] or []})
    return facts


HYPOTHETICAL = [".env", "aegis.env", "postgres.env", ".env.local", "src/.env", "docs/example.env",
                "data/aegis.db", "data/audit.log", "target/release/aegis-gitea-mcp", ".git/config",
                "tests/conformance/node_modules/x/index.js", "tests/e2e/seed.py", "README.md"]


def check_context(repo: Path, facts: dict) -> list[str]:
    report = build_context(repo, HYPOTHETICAL)
    files = report["files"]
    check(len(files) > 0, ".dockerignore: the build context is not empty", f"{len(files)} files")

    bad = [f for f in files if re.search(r"(^|/)(\.env($|\.)|[^/]*\.env$)|(^|/)(target|data|node_modules|\.git)/|\.db(-wal|-shm)?$", f)]
    check(not bad, ".dockerignore: no env file, database, target/, data/, .git or node_modules in the context", ", ".join(bad[:5]))
    for hypothetical in HYPOTHETICAL:
        check(report["ignored"].get(hypothetical) is True, f".dockerignore: {hypothetical} would stay out")

    for src in facts.get("context_sources", []):
        present = src in files or any(f.startswith(src.rstrip("/") + "/") for f in files)
        check(present, f".dockerignore: COPY source {src} is in the context")
    top = sorted({f.split("/")[0] for f in files})
    check(set(top) <= set(facts.get("context_sources", [])),
          ".dockerignore: the context holds only what the Dockerfile copies", ", ".join(top))
    return files


def check_cargo_in_context(repo: Path, files: list[str], sources: list[str]) -> None:
    """`cargo fetch --locked` on what the build stage copies from the context:
    the manifest, every declared target, the lock file and the dependencies
    resolve with only that."""
    if not shutil.which("cargo"):
        skip("cargo in the context", "no cargo on PATH")
        return
    copied = [f for f in files if any(f == s or f.startswith(s.rstrip("/") + "/") for s in sources)]
    with tempfile.TemporaryDirectory() as tmp:
        for f in copied:
            dest = Path(tmp) / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / f, dest)
        res = subprocess.run(["cargo", "fetch", "--locked", "--quiet"], cwd=tmp, capture_output=True, text=True, timeout=600)
        check(res.returncode == 0, "context: cargo fetch --locked succeeds on what the build stage copies", res.stderr.strip()[-400:])


def check_compose(repo: Path, base: dict, pg: dict, facts: dict, settings: set[str]) -> None:
    services = base["services"]
    check(set(services) == {"gitea-init", "gitea", "gateway"} and set(base["x-disabled-services"]) == {"postgres"},
          "compose: without a profile: gitea-init, gitea, gateway; postgres disabled",
          f'{sorted(services)} disabled {base["x-disabled-services"]}')
    check("postgres" in pg["services"], "compose: --profile postgres enables postgres")
    everything = dict(services)
    everything.update(pg["services"])

    bundled = json.loads((repo / "src/catalog/bundled/swagger.v1.json").read_text())["info"]["version"]
    for name, svc in sorted(everything.items()):
        if "build" in svc:
            check(svc.get("image", "").endswith(":local"), f"compose: {name} is built here and tagged :local", svc.get("image", ""))
            continue
        check(bool(DIGEST_REF.match(svc.get("image", ""))), f"compose: {name} image is pinned by digest", svc.get("image", ""))
        for key in (svc.get("environment") or {}):
            # A *_URI or *__FILE setting names where a secret is, not the secret.
            is_pointer = key.endswith("_URI") or key.endswith("__FILE")
            check(is_pointer or not SECRET_NAME.search(key), f"compose: {name} environment sets no secret ({key})")
        for p in svc.get("ports") or []:
            check(p.get("host_ip") == "127.0.0.1", f"compose: {name} publishes {p.get('published')} on 127.0.0.1 only", str(p))
        if svc.get("restart") != "no":
            check(bool((svc.get("healthcheck") or {}).get("test")), f"compose: {name} has a healthcheck")
    for name in ("gitea", "gitea-init"):
        tag = DIGEST_REF.match(everything[name]["image"])
        minor = ".".join(bundled.split(".")[:2])
        check(tag is not None and ".".join(tag["tag"].split("-")[0].split(".")[:2]) == minor,
              f"compose: {name} runs Gitea {minor}.x, the release of the bundled catalog ({bundled})", everything[name]["image"])
    check("rootless" in everything["gitea"]["image"], "compose: gitea is the rootless image")

    gw = everything["gateway"]
    env = gw.get("environment") or {}
    unknown = sorted(set(env) - settings)
    check(not unknown, "compose: every gateway environment variable is a setting the gateway reads", ", ".join(unknown))
    for key, value in env.items():
        check(facts.get("env", {}).get(key) == value, f"compose: gateway {key}={value} agrees with the image")
        check(not SECRET_NAME.search(key), f"compose: gateway environment sets no secret ({key})")
    env_files = [Path(e["path"]).name for e in gw.get("env_file") or []]
    check(env_files == ["aegis.env"], "compose: the gateway's settings come from aegis.env", str(env_files))
    gitignore = (repo / ".gitignore").read_text()
    env_names = sorted({Path(e["path"]).name for svc in everything.values() for e in svc.get("env_file") or []})
    ignored = build_context(repo, env_names)["ignored"]
    for name in env_names:
        check(name.endswith(".env") and re.search(r"^\*\.env$", gitignore, re.M) is not None and ignored.get(name) is True,
              f"compose: env file {name} is git-ignored and docker-ignored")
    ports = gw.get("ports") or []
    check(len(ports) == 1 and str(ports[0].get("target")) == env.get("MCP_PORT") and ports[0].get("host_ip") == "127.0.0.1",
          "compose: the gateway's MCP_PORT is published on 127.0.0.1", str(ports))
    vols = {v.get("target"): v for v in gw.get("volumes") or []}
    check("/data" in vols and vols["/data"].get("type") == "volume", "compose: /data is a named volume")
    check("user" not in gw, "compose: the gateway keeps the image's non-root user", str(gw.get("user")))
    ghc = gw.get("healthcheck") or {}
    image_hc = facts.get("healthcheck") or {}
    check(ghc.get("test") == image_hc.get("Test") == ["CMD", "/usr/local/bin/aegis-gitea-mcp", *HEALTH_ARGS],
          "compose: the gateway's healthcheck is the image's, `aegis-gitea-mcp health`", str(ghc.get("test")))
    check(all(go_duration(ghc.get(c)) == image_hc.get(i) for c, i in
              (("interval", "Interval"), ("timeout", "Timeout"), ("start_period", "StartPeriod")))
          and ghc.get("retries") == image_hc.get("Retries"),
          "compose: the gateway's healthcheck timings agree with the image's HEALTHCHECK",
          f"{ghc} vs {image_hc}")
    deps = gw.get("depends_on") or {}
    check(deps.get("gitea", {}).get("condition") == "service_healthy", "compose: the gateway waits for a healthy gitea")
    check(deps.get("postgres", {}).get("condition") == "service_healthy" and deps.get("postgres", {}).get("required") is False,
          "compose: the gateway waits for postgres when its profile is on, and only then")
    check(gw.get("read_only") is True and "ALL" in (gw.get("cap_drop") or []),
          "compose: the gateway runs read-only with every capability dropped")

    gitea = everything["gitea"]
    genv = gitea.get("environment") or {}
    check(genv.get("GITEA__security__INSTALL_LOCK") == "true" and str(genv.get("GITEA__security__SECRET_KEY_URI", "")).startswith("file:"),
          "compose: Gitea is install-locked with a generated SECRET_KEY (not its built-in default)")
    check(gitea.get("depends_on", {}).get("gitea-init", {}).get("condition") == "service_completed_successfully",
          "compose: gitea starts after gitea-init wrote the key")
    check("gitea.localhost" in ((gitea.get("networks") or {}).get("default") or {}).get("aliases", []) and
          genv.get("GITEA__server__ROOT_URL") == "http://gitea.localhost:3000/",
          "compose: Gitea answers as gitea.localhost inside the network, as its ROOT_URL says")

    postgres = pg["services"]["postgres"]
    check(postgres.get("profiles") == ["postgres"], "compose: postgres only in the postgres profile")
    ptest = (postgres.get("healthcheck") or {}).get("test") or []
    check("pg_isready" in ptest, "compose: postgres healthcheck is pg_isready", str(ptest))
    check("POSTGRES_PASSWORD" not in (postgres.get("environment") or {}), "compose: postgres's password is not in the file")


def check_digests_agree(repo: Path, facts: dict, base: dict, pg: dict) -> None:
    res = subprocess.run(["bash", str(repo / "scripts/pin-images.sh"), "--list"], capture_output=True, text=True, timeout=30)
    listed = set(res.stdout.split())
    found = set(facts.get("bases", []))
    syntax = facts.get("syntax")
    if syntax:
        found.add(syntax)
    for svc in list(base["services"].values()) + list(pg["services"].values()):
        if DIGEST_REF.match(svc.get("image", "")):
            found.add(svc["image"])
    check(res.returncode == 0 and listed == found, "scripts/pin-images.sh --list names exactly the pinned images",
          f"missing {sorted(found - listed)}, extra {sorted(listed - found)}")
    by_name: dict[str, set[str]] = {}
    for ref in found:
        by_name.setdefault(ref.split("@")[0], set()).add(ref.split("@")[1])
    check(all(len(v) == 1 for v in by_name.values()), "every image:tag is pinned to one digest everywhere",
          str({k: v for k, v in by_name.items() if len(v) > 1}))


class FakeRegistry:
    """A registry on loopback that wants an anonymous bearer token, then
    answers HEAD manifests with the digests it was given (by request path)."""

    def __init__(self, digests: dict[str, str]) -> None:
        self.seen: list[tuple[str, str, str]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.seen.append(("GET", self.path, ""))
                if self.path.startswith("/token?") and "scope=repository" in self.path:
                    body = b'{"token":"fake-pull-token","expires_in":300}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def do_HEAD(self) -> None:  # noqa: N802
                auth = self.headers.get("Authorization", "")
                outer.seen.append(("HEAD", self.path, auth))
                if auth != "Bearer fake-pull-token":
                    repo = self.path.split("/manifests/")[0].removeprefix("/v2/")
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", f'Bearer realm="http://127.0.0.1:{outer.port}/token",'
                                     f'service="fake.registry",scope="repository:{repo}:pull"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                digest = digests.get(self.path)
                if digest is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.oci.image.index.v1+json")
                self.send_header("Docker-Content-Digest", digest)
                self.send_header("Content-Length", "1234")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeRegistry":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def manifest_path(ref: str) -> str:
    """/v2/<repository>/manifests/<tag> as a registry sees `name:tag@digest`."""
    name, _, _ = ref.partition("@")
    name, _, tag = name.rpartition(":")
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        repo = rest
    else:
        repo = name
        if "/" not in repo:
            repo = "library/" + repo
    return f"/v2/{repo}/manifests/{tag}"


def check_pin_script(repo: Path, workdir: Path) -> None:
    copy = workdir / "pin"
    for rel in ("Dockerfile", "docker-compose.yml", "docs/containers.md", "scripts/pin-images.sh"):
        if (repo / rel).exists():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, copy / rel)
    script = ["bash", str(copy / "scripts/pin-images.sh")]
    refs = subprocess.run(script + ["--list"], capture_output=True, text=True, timeout=30).stdout.split()
    if not check(len(refs) >= 4, "pin-images.sh: lists the pinned images", str(refs)):
        return
    # The first keeps its digest; every other one has moved on.
    new = {ref: "sha256:" + hashlib.sha256(ref.encode()).hexdigest() for ref in refs[1:]}
    digests = {manifest_path(refs[0]): refs[0].split("@")[1]}
    digests.update({manifest_path(ref): d for ref, d in new.items()})
    with FakeRegistry(digests) as reg:
        env = dict(os.environ, PIN_IMAGES_ENDPOINT=f"http://127.0.0.1:{reg.port}")
        r = subprocess.run(script + ["--check"], env=env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 1 and r.stdout.count("NEW") == len(new) and r.stdout.startswith("ok"),
              "pin-images.sh --check: reports the moved tags and exits 1", (r.stdout + r.stderr)[-600:])
        check(any(m == "HEAD" and not a for m, _, a in reg.seen) and any(a == "Bearer fake-pull-token" for _, _, a in reg.seen),
              "pin-images.sh: follows the registry's bearer-token challenge")
        check("multi-platform index" in r.stdout, "pin-images.sh: says when a tag is a multi-platform index")
        r = subprocess.run(script + ["--write"], env=env, capture_output=True, text=True, timeout=120)
        text = "".join((copy / f).read_text() for f in ("Dockerfile", "docker-compose.yml"))
        check(r.returncode == 0 and all(d.removeprefix("sha256:") in text for d in new.values())
              and not any(ref.split("@")[1].removeprefix("sha256:") in text for ref in new),
              "pin-images.sh --write: replaces every moved digest (labels included)", (r.stdout + r.stderr)[-600:])
        r = subprocess.run(script + ["--check"], env=env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "pin-images.sh --check: clean after --write", (r.stdout + r.stderr)[-600:])


class Redirector(StubServer):
    """Answers /health with a 302 to a path that would answer 200."""

    def __init__(self) -> None:
        super().__init__({"/ok": 200})
        handler = self.httpd.RequestHandlerClass
        original = handler.do_GET

        def do_get(h: http.server.BaseHTTPRequestHandler) -> None:
            if h.path == "/health":
                self.requests.append((h.path, dict(h.headers)))
                h.send_response(302)
                h.send_header("Location", "/ok")
                h.send_header("Content-Length", "0")
                h.end_headers()
            else:
                original(h)

        handler.do_GET = do_get


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check_health_command(binary: Path, workdir: Path) -> None:
    """`aegis-gitea-mcp health` on its own, against stub servers."""
    cwd = workdir / "health-cwd"
    cwd.mkdir()
    with StubServer({"/health": 200}) as ok:
        r = run_health(binary, ok.port, cwd)
        check(r.returncode == 0, "health: exit 0 when /health answers 200", r.stderr.strip())
        path, headers = ok.requests[-1] if ok.requests else ("", {})
        host = {k.lower(): v for k, v in headers.items()}.get("host")
        check(path == "/health" and host == f"127.0.0.1:{ok.port}",
              "health: asks GET /health on 127.0.0.1:$MCP_PORT with a loopback Host", f"{path} {host}")
        # No proxy, even when the environment names one (the stub would
        # answer 404 to a proxied absolute-form request).
        with StubServer({}) as proxy:
            url = f"http://127.0.0.1:{proxy.port}"
            r = run_health(binary, ok.port, cwd, http_proxy=url, HTTP_PROXY=url, all_proxy=url, ALL_PROXY=url)
            check(r.returncode == 0 and not proxy.requests, "health: goes direct with HTTP_PROXY/ALL_PROXY set",
                  f"exit {r.returncode}, proxy saw {len(proxy.requests)}: {r.stderr.strip()}")
        # Reads no env file: MCP_PORT only in ./.env and AEGIS_ENV_FILE is not
        # taken up, so the default port is asked, not the stub.
        (cwd / ".env").write_text(f"MCP_PORT={ok.port}\n")
        (cwd / "aegis.env").write_text(f"MCP_PORT={ok.port}\n")
        before = len(ok.requests)
        r = run_health(binary, None, cwd, AEGIS_ENV_FILE=str(cwd / "aegis.env"))
        # (exit 0 only if something on this machine answers 200 on 8080)
        check(len(ok.requests) == before and (r.returncode == 0 or "127.0.0.1:8080/health" in r.stderr),
              "health: reads no env file (./.env, AEGIS_ENV_FILE); without MCP_PORT it asks port 8080",
              f"exit {r.returncode}: {r.stderr.strip()}")
        (cwd / ".env").unlink()
        (cwd / "aegis.env").unlink()
    with StubServer({"/health": 503}) as degraded:
        r = run_health(binary, degraded.port, cwd)
        check(r.returncode == 1 and "answered 503" in r.stderr, "health: exit 1 when /health answers 503", r.stderr.strip())
    with Redirector() as redirect:
        r = run_health(binary, redirect.port, cwd)
        check(r.returncode == 1 and [p for p, _ in redirect.requests] == ["/health"] and "302" in r.stderr,
              "health: does not follow a redirect (302 is exit 1)", f"exit {r.returncode}: {r.stderr.strip()}")
    r = run_health(binary, free_port(), cwd)
    check(r.returncode == 1 and "no answer from" in r.stderr, "health: exit 1 when nothing listens", r.stderr.strip())
    r = run_health(binary, "not-a-port", cwd)
    check(r.returncode == 2 and "MCP_PORT" in r.stderr, "health: exit 2 when MCP_PORT is not a port", r.stderr.strip())


def check_gateway(binary: Path | None, workdir: Path) -> None:
    if binary is None or not binary.exists():
        skip("the gateway binary and `aegis-gitea-mcp health`",
             "none built (set AEGIS_BIN, or build target/debug/aegis-gitea-mcp first)")
        return
    check_health_command(binary, workdir)
    base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LOG_FORMAT": "text", "RUST_LOG": "warn"}
    # The image's environment without authentication: refused before it binds.
    env = dict(base_env, DATA_DIR=str(workdir / "data-refused"), MCP_HOST="0.0.0.0", MCP_PORT=str(free_port()),
               GITEA_URL="http://127.0.0.1:9", GITEA_TOKEN="x" * 40)
    r = subprocess.run([str(binary), "serve"], env=env, capture_output=True, text=True, timeout=60, cwd=workdir)
    check(r.returncode == 2 and "configuration error: MCP_HOST" in r.stderr,
          "gateway: MCP_HOST=0.0.0.0 without a bearer or OAuth exits 2 and names MCP_HOST",
          f"exit {r.returncode}: {r.stderr.strip()[-300:]}")

    # The real /health through `aegis-gitea-mcp health`: 200 with Gitea up,
    # 503 with it down, nothing once the gateway has stopped.
    with StubServer({"/api/v1/version": 200}) as gitea:
        port = free_port()
        env = dict(base_env, DATA_DIR=str(workdir / "data"), MCP_HOST="127.0.0.1", MCP_PORT=str(port),
                   GITEA_URL=f"http://127.0.0.1:{gitea.port}", GITEA_TOKEN="x" * 40, MCP_BEARER_TOKEN="b" * 43)
        with open(workdir / "gateway.log", "w") as log:
            proc = subprocess.Popen([str(binary), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
            try:
                deadline = time.monotonic() + 60
                r = run_health(binary, port, workdir)
                while r.returncode != 0 and time.monotonic() < deadline and proc.poll() is None:
                    time.sleep(0.2)
                    r = run_health(binary, port, workdir)
                check(r.returncode == 0, "gateway: `aegis-gitea-mcp health` passes against the real /health (Gitea up)",
                      r.stderr.strip())
            finally:
                stop(proc)
        check(proc.returncode == 0, "gateway: stops cleanly on SIGTERM (the image's STOPSIGNAL)", f"exit {proc.returncode}")
        r = run_health(binary, port, workdir)
        check(r.returncode == 1 and "no answer from" in r.stderr,
              "gateway: `aegis-gitea-mcp health` fails once the gateway has stopped (closed port)", r.stderr.strip())
    port = free_port()
    env = dict(base_env, DATA_DIR=str(workdir / "data"), MCP_HOST="127.0.0.1", MCP_PORT=str(port),
               GITEA_URL=f"http://127.0.0.1:{free_port()}", GITEA_TOKEN="x" * 40, MCP_BEARER_TOKEN="b" * 43)
    proc = subprocess.Popen([str(binary), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=workdir)
    try:
        deadline = time.monotonic() + 60
        r = run_health(binary, port, workdir)
        while "answered" not in r.stderr and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            r = run_health(binary, port, workdir)
        check(r.returncode == 1 and "answered 503" in r.stderr,
              "gateway: `aegis-gitea-mcp health` fails when Gitea is down (/health 503)", r.stderr.strip())
    finally:
        stop(proc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--dockerfile-json", type=Path, required=True)
    ap.add_argument("--compose-json", type=Path, required=True)
    ap.add_argument("--compose-postgres-json", type=Path, required=True)
    ap.add_argument("--checker", type=Path, required=True, help="the built tests/containers/checker")
    ap.add_argument("--gateway-bin", type=Path)
    ap.add_argument("--counts-out", type=Path, help="write 'passed failed' here instead of printing the closing line")
    args = ap.parse_args()
    repo = args.repo.resolve()
    global CHECKER
    CHECKER = args.checker.resolve()

    settings = gateway_settings(repo)
    check(len(settings) > 20, "docs/configuration.md and src/ agree on the gateway's settings", f"{len(settings)} settings")
    df = json.loads(args.dockerfile_json.read_text())
    facts = check_dockerfile(repo, df, settings)
    facts["syntax"] = df["syntax"]
    files = check_context(repo, facts)
    check_cargo_in_context(repo, files, facts.get("context_sources", []))
    base = json.loads(args.compose_json.read_text())
    pg = json.loads(args.compose_postgres_json.read_text())
    check_compose(repo, base, pg, facts, settings)
    check_digests_agree(repo, facts, base, pg)
    with tempfile.TemporaryDirectory() as tmp:
        check_pin_script(repo, Path(tmp))
        check_gateway(args.gateway_bin, Path(tmp))

    if args.counts_out:
        args.counts_out.write_text(f"{passed} {failed}\n")
        print(f"policy checks: {passed} ok, {failed} failing")
    else:
        print(f"containers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
