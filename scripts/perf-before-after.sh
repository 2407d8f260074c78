#!/usr/bin/env bash
# Two builds of the gateway side by side in one run of ../shared/perf, with
# the floors: what a change did to the hot path, each ratio within its run
# (docs/benchmarks.md, "Issue 47").
#
#   scripts/perf-before-after.sh BEFORE_BIN AFTER_BIN OUTDIR
#
# Needs the floors built as ../shared/perf/README.md says, in
# target/perf-floor/release (or AEGIS_PERF_FLOOR_DIR), and wrk and nginx
# (../shared/perf/install.sh).
set -euo pipefail
if (($# != 3)); then
  echo "usage: $0 BEFORE_BIN AFTER_BIN OUTDIR" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PERF="${AEGIS_SHARED_PERF:-$HERE/../shared/perf}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The gateway's entry, twice, named for each build.
python3 - "$PERF/servers.toml" "$work/servers.toml" <<'PY'
import sys
text = open(sys.argv[1]).read()
start = text.index('[[server]]\nname = "aegis-gitea-mcp"\n')
end = text.index("[[server]]", start + 1)
entry = text[start:end]
copies = [
    entry.replace('name = "aegis-gitea-mcp"', f'name = "gateway-{side}"').replace(
        "{env:AEGIS_GITEA_MCP_BIN}", f"{{env:AEGIS_{side.upper()}_BIN}}"
    )
    for side in ("before", "after")
]
open(sys.argv[2], "w").write(text + "\n" + "\n".join(copies))
PY
export AEGIS_BEFORE_BIN="$(realpath "$1")" AEGIS_AFTER_BIN="$(realpath "$2")"
export AEGIS_PERF_FLOOR_DIR="${AEGIS_PERF_FLOOR_DIR:-$HERE/target/perf-floor/release}"
export AEGIS_PERF_DIR="$work"
"$PERF/run.sh" "$3" --config "$work/servers.toml" \
  --servers floor-axum,floor-rmcp,gateway-before,gateway-after --upstreams nginx
